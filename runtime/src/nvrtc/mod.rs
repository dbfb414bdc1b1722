//! CUDA C -> CUBIN with NVRTC, behind a cache of the exact source, the options, the target
//! architecture and the NVRTC version: in memory for the process, and on disk across processes.
//! CUBIN rather than PTX: with `--gpu-architecture=sm_XY` NVRTC runs ptxas anyway, and a PTX
//! module would be compiled a second time by the driver when loaded.
//!
//! NVRTC 12.x or 13.x, whichever the machine has, is found at run time ([`library`]). It runs
//! without a GPU, so the ordinary test run compiles every generated kernel.

use crate::error::{Error, Result};
use crate::store::{fnv1a_128, hash128, write_atomically};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

#[cfg(feature = "cuda")]
mod library;
#[cfg(not(feature = "cuda"))]
use crate::nocuda::nvrtc_library as library;

pub use library::Nvrtc;

/// The oldest NVRTC accepted. `--device-int128` needs 11.5 and sm_90 11.8, but 12.0 is the oldest
/// release of the two CUDA majors bigfuse is tested with.
pub const MIN_VERSION: (i32, i32) = (12, 0);

/// The NVRTC library this process compiles with, found on first use: NVRTC 13 or 12, preferring
/// what the driver can load; `BIGFUSE_NVRTC` names a file (see `nvrtc/library.rs`).
pub fn library() -> Result<&'static Nvrtc> {
    #[cfg(feature = "cuda")]
    {
        static LIB: OnceLock<std::result::Result<Nvrtc, String>> = OnceLock::new();
        LIB.get_or_init(|| library::choose(&library::candidates(), crate::gpu::driver_version()))
            .as_ref()
            .map_err(|why| Error::NoNvrtc(why.clone()))
    }
    #[cfg(not(feature = "cuda"))]
    Err(Error::NoCuda)
}

/// Whether a usable NVRTC library can be loaded on this machine.
pub fn available() -> bool {
    library().is_ok()
}

/// NVRTC's version, e.g. (13, 0).
pub fn version() -> Result<(i32, i32)> {
    library().map(Nvrtc::version)
}

/// The options every kernel is compiled with.
pub fn options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "--device-int128".into(),
        "--std=c++17".into(),
    ]
}

type Binary = std::sync::Arc<Vec<u8>>;

/// A compiled kernel with its full key: the compilation context and the exact source.
struct Entry {
    context: String,
    source: String,
    binary: Binary,
}

/// Compiled binaries by key. The key only finds the list; an entry is taken only when its context
/// and source are exactly those asked for.
type MemoryCache = Mutex<HashMap<u128, Vec<Entry>>>;

fn memory_cache() -> &'static MemoryCache {
    static CACHE: OnceLock<MemoryCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Where compiled kernels are kept between runs: `$BIGFUSE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/bigfuse`, else `~/.cache/bigfuse`. `BIGFUSE_NO_DISK_CACHE=1` turns the disk
/// cache off.
pub fn cache_dir() -> Option<PathBuf> {
    if std::env::var_os("BIGFUSE_NO_DISK_CACHE").is_some_and(|v| v != "0") {
        return None;
    }
    if let Some(d) = std::env::var_os("BIGFUSE_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("bigfuse"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("bigfuse"))
}

/// What a compilation depends on besides the source: the options (the architecture among them)
/// and NVRTC's version.
fn compilation_context(arch: &str) -> Result<String> {
    let (major, minor) = version()?;
    Ok(format!(
        "nvrtc {major}.{minor}; {}",
        options(arch).join(" ")
    ))
}

fn key_of(context: &str, source: &str) -> u128 {
    hash128(&[context.as_bytes(), source.as_bytes()])
}

/// The cache key of a compilation: a 128-bit hash of the context and the source. It names the
/// file; the entry itself is checked against the full context and source.
pub fn cache_key(source: &str, arch: &str) -> Result<u128> {
    Ok(key_of(&compilation_context(arch)?, source))
}

const MAGIC: &[u8] = b"bigfuse cubin v2\n";

/// A cache file: the magic line; the compilation context, the source and the binary, each
/// preceded by its length (8 bytes, little-endian); and a 128-bit hash of all the bytes before
/// it. The whole source is stored so that a file is accepted only for exactly the source and
/// context it was compiled from, and the hash so that a corrupted binary is never loaded: a
/// colliding, foreign, truncated or corrupt file is recompiled instead.
fn encode_entry(context: &str, source: &str, binary: &[u8]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(MAGIC.len() + 40 + context.len() + source.len() + binary.len());
    out.extend_from_slice(MAGIC);
    for part in [context.as_bytes(), source.as_bytes(), binary] {
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(part);
    }
    let check = fnv1a_128(&out);
    out.extend_from_slice(&check.to_le_bytes());
    out
}

/// The binary of a cache file, if it is intact and was made from exactly `context` and `source`.
fn decode_entry(file: &[u8], context: &str, source: &str) -> Option<Vec<u8>> {
    let (body, check) = file.split_at_checked(file.len().checked_sub(16)?)?;
    if fnv1a_128(body).to_le_bytes() != check {
        return None;
    }
    let mut rest = body.strip_prefix(MAGIC)?;
    let mut next = || -> Option<&[u8]> {
        let len = usize::try_from(u64::from_le_bytes(rest.get(..8)?.try_into().ok()?)).ok()?;
        let part = rest.get(8..8usize.checked_add(len)?)?;
        rest = &rest[8 + len..];
        Some(part)
    };
    let (c, s, b) = (next()?, next()?, next()?);
    (c == context.as_bytes() && s == source.as_bytes() && !b.is_empty() && rest.is_empty())
        .then(|| b.to_vec())
}

/// The file of `key` in the disk cache `dir`.
fn cache_file(dir: &Path, key: u128) -> PathBuf {
    dir.join(format!("{key:032x}.cubin"))
}

/// The binary in the disk cache `dir` for exactly `context` and `source`, if there is one.
fn disk_lookup(dir: &Path, context: &str, source: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(cache_file(dir, key_of(context, source))).ok()?;
    decode_entry(&bytes, context, source)
}

/// Stores a binary in the disk cache `dir`, atomically: a concurrent reader finds the old file
/// (or none) or this one, whole.
fn disk_store(dir: &Path, context: &str, source: &str, binary: &[u8]) -> std::io::Result<()> {
    write_atomically(
        &cache_file(dir, key_of(context, source)),
        &encode_entry(context, source, binary),
    )
}

/// Drops a compiled kernel from both caches (used when the driver refuses to load it).
pub fn forget(source: &str, arch: &str) {
    let Ok(context) = compilation_context(arch) else {
        return;
    };
    let key = key_of(&context, source);
    if let Some(list) = memory_cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_mut(&key)
    {
        list.retain(|e| e.context != context || e.source != source);
    }
    if let Some(dir) = cache_dir() {
        let _ = std::fs::remove_file(cache_file(&dir, key));
    }
}

/// Whether `source` is already compiled for `arch` in the memory or disk cache (so that loading
/// it costs no NVRTC time).
pub fn is_cached(source: &str, arch: &str) -> bool {
    let Ok(context) = compilation_context(arch) else {
        return false;
    };
    lookup_memory(&context, source).is_some()
        || cache_dir().is_some_and(|dir| disk_lookup(&dir, &context, source).is_some())
}

fn lookup_memory(context: &str, source: &str) -> Option<Binary> {
    memory_cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key_of(context, source))?
        .iter()
        .find(|e| e.context == context && e.source == source)
        .map(|e| e.binary.clone())
}

fn remember(context: &str, source: &str, binary: Binary) {
    let mut cache = memory_cache().lock().unwrap_or_else(|p| p.into_inner());
    let list = cache.entry(key_of(context, source)).or_default();
    if !list
        .iter()
        .any(|e| e.context == context && e.source == source)
    {
        list.push(Entry {
            context: context.to_string(),
            source: source.to_string(),
            binary,
        });
    }
}

/// Compiles `source` (which defines `kernel`) for `arch` (e.g. `sm_90`) to a loadable binary
/// (CUBIN: no further JIT compilation when the module is loaded), or returns the cached one.
pub fn compile(source: &str, kernel: &str, arch: &str) -> Result<Binary> {
    let context = compilation_context(arch)?;
    if let Some(b) = lookup_memory(&context, source) {
        return Ok(b);
    }
    let dir = cache_dir();
    if let Some(b) = dir
        .as_deref()
        .and_then(|d| disk_lookup(d, &context, source))
    {
        let b = std::sync::Arc::new(b);
        remember(&context, source, b.clone());
        return Ok(b);
    }
    let binary = std::sync::Arc::new(compile_uncached(source, kernel, arch)?);
    if let Some(d) = &dir {
        // The cache is an optimisation: failing to write it is not an error.
        let _ = disk_store(d, &context, source, &binary);
    }
    remember(&context, source, binary.clone());
    Ok(binary)
}

/// The stack of the thread NVRTC runs on.
const NVRTC_STACK_BYTES: usize = 256 << 20;

/// Compiles without looking at any cache: the CUBIN for `arch`.
pub fn compile_uncached(source: &str, kernel: &str, arch: &str) -> Result<Vec<u8>> {
    let lib = library()?;
    if !lib.supports(arch) {
        let known = lib.architectures();
        return Err(Error::NoNvrtc(format!(
            "{} cannot compile for {arch} (it knows sm_{} to sm_{}); a newer NVRTC can",
            lib.describe(),
            known.first().copied().unwrap_or(0),
            known.last().copied().unwrap_or(0)
        )));
    }
    let compile_error = |log: String| Error::Compile {
        kernel: kernel.into(),
        path: PathBuf::new(),
        log,
    };
    let src = std::ffi::CString::new(source)
        .map_err(|_| compile_error("the source contains a NUL byte".into()))?;
    let name = std::ffi::CString::new(format!("{kernel}.cu"))
        .map_err(|_| compile_error("the kernel name contains a NUL byte".into()))?;
    // NVRTC runs on the calling thread's stack, and its use grows with the kernel: on an H100
    // host a 2048-bit division's kernel overflowed a 2 MiB test thread (2026-11-25). A thread of
    // its own with a large stack (reserved, not committed) makes the call independent of the
    // caller's stack.
    let options = options(arch);
    let compiled = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("bigfuse-nvrtc".into())
            .stack_size(NVRTC_STACK_BYTES)
            .spawn_scoped(scope, || lib.compile(&src, &name, &options))
            .map(|t| t.join())
    });
    // NVRTC registers some of its exit handlers during its first compilation: the handler that
    // waits for background compilations at exit must come after them, so that it runs first.
    crate::tiers::wait_for_background_at_exit();
    let compiled = match compiled {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(library::Failure::Call("NVRTC's thread panicked".into())),
        Err(e) => Err(library::Failure::Call(format!(
            "no thread for NVRTC could be started: {e}"
        ))),
    };
    match compiled {
        Ok(cubin) if !cubin.is_empty() => Ok(cubin),
        Ok(_) => Err(compile_error(format!(
            "{} produced no CUBIN for {arch}",
            lib.describe()
        ))),
        Err(library::Failure::Call(message)) => Err(Error::Driver {
            during: "running NVRTC".into(),
            message,
        }),
        Err(library::Failure::Rejected(log)) => {
            let path = std::env::temp_dir().join(format!(
                "bigfuse-{kernel}-{:032x}.cu",
                fnv1a_128(source.as_bytes())
            ));
            let _ = std::fs::write(&path, source);
            Err(Error::Compile {
                kernel: kernel.into(),
                path,
                log,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(what: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bigfuse-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn cache_entries_are_exact() {
        let e = encode_entry("ctx", "source", &[1, 2, 3]);
        assert_eq!(decode_entry(&e, "ctx", "source"), Some(vec![1, 2, 3]));
        assert_eq!(decode_entry(&e, "ctx", "sourcE"), None);
        assert_eq!(decode_entry(&e, "other", "source"), None);
        let mut longer = e.clone();
        longer.push(0);
        assert_eq!(decode_entry(&longer, "ctx", "source"), None);
        assert_eq!(decode_entry(b"garbage", "ctx", "source"), None);
        assert_eq!(
            decode_entry(&encode_entry("ctx", "source", &[]), "ctx", "source"),
            None
        );
        // Every truncation, and every flipped byte (the binary's among them), is refused.
        for len in 0..e.len() {
            assert_eq!(decode_entry(&e[..len], "ctx", "source"), None, "{len}");
        }
        for i in 0..e.len() {
            let mut bad = e.clone();
            bad[i] ^= 0x20;
            assert_eq!(decode_entry(&bad, "ctx", "source"), None, "{i}");
        }
    }

    #[test]
    fn a_forged_colliding_entry_is_never_loaded() {
        let dir = temp_dir("forged");
        let ctx = "nvrtc 13.0; --gpu-architecture=sm_90";
        disk_store(&dir, ctx, "source A", b"binary of A").unwrap();
        assert_eq!(
            disk_lookup(&dir, ctx, "source A").as_deref(),
            Some(&b"binary of A"[..])
        );
        // Under A's name: a well-formed entry of another source, as a hash collision (or anyone
        // who can write the directory) would leave there; then one of another architecture.
        let file = cache_file(&dir, key_of(ctx, "source A"));
        for (c, src) in [
            (ctx, "source B"),
            ("nvrtc 13.0; --gpu-architecture=sm_80", "source A"),
        ] {
            std::fs::write(&file, encode_entry(c, src, b"other binary")).unwrap();
            assert_eq!(disk_lookup(&dir, ctx, "source A"), None, "{c} {src}");
        }
        // A truncated file is a miss too.
        let whole = encode_entry(ctx, "source A", b"binary of A");
        std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();
        assert_eq!(disk_lookup(&dir, ctx, "source A"), None);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn concurrent_writers_and_readers_see_whole_entries() {
        // Threads stand in for processes: the cache shares nothing between writers but the
        // directory, and each write is the same system calls in a thread as in a process (a
        // create-new file of a unique name, then a rename); the names' process part is tested in
        // store.rs.
        let dir = temp_dir("concurrent");
        let ctx = "ctx";
        let sources: Vec<String> = (0..4).map(|i| format!("kernel {i}")).collect();
        let binary = |s: &str, round: usize| -> Vec<u8> {
            // Large enough that a torn write would show; every round writes the same bytes for a
            // source, as recompiling does.
            let _ = round;
            s.bytes().cycle().take(256 << 10).collect()
        };
        std::thread::scope(|scope| {
            for w in 0..4 {
                let (dir, sources) = (&dir, &sources);
                scope.spawn(move || {
                    for round in 0..40 {
                        let s = &sources[(w + round) % sources.len()];
                        disk_store(dir, ctx, s, &binary(s, round)).unwrap();
                    }
                });
            }
            for _ in 0..4 {
                let (dir, sources) = (&dir, &sources);
                scope.spawn(move || {
                    for round in 0..200 {
                        let s = &sources[round % sources.len()];
                        if let Some(b) = disk_lookup(dir, ctx, s) {
                            assert_eq!(b, binary(s, 0), "a wrong or torn entry for {s}");
                        }
                    }
                });
            }
        });
        for s in &sources {
            assert_eq!(disk_lookup(&dir, ctx, s), Some(binary(s, 0)));
        }
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names.len(),
            sources.len(),
            "temporary files left: {names:?}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

//! CUDA C -> CUBIN with NVRTC, behind a cache of the exact source, the options, the target
//! architecture and the NVRTC version: in memory for the process, and on disk across processes.
//! CUBIN rather than PTX: with `--gpu-architecture=sm_XY` NVRTC runs ptxas anyway, and a PTX
//! module would be compiled a second time by the driver when loaded.
//!
//! NVRTC 12.x or 13.x, whichever the machine has, is found at run time ([`library`]). It runs
//! without a GPU, so the ordinary test run compiles every generated kernel.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::path::PathBuf;
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

/// FNV-1a, 64 bits: stable across Rust versions and platforms, which a disk cache key needs.
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for p in parts {
        for b in *p {
            h ^= *b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

type Binary = std::sync::Arc<Vec<u8>>;

/// Compiled binaries by key, each with the exact source it was compiled from.
type MemoryCache = Mutex<HashMap<u64, Vec<(String, Binary)>>>;

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

/// The cache key of a compilation (a file name; the entry itself is checked exactly).
pub fn cache_key(source: &str, arch: &str) -> Result<u64> {
    let context = compilation_context(arch)?;
    Ok(fnv1a(&[source.as_bytes(), context.as_bytes()]))
}

const MAGIC: &[u8] = b"bigfuse cubin v1\n";

/// A cache file: the magic line, then the compilation context, the source and the binary, each
/// preceded by its length (8 bytes, little-endian). The whole source is stored so that a file is
/// accepted only for exactly the source and context it was compiled from: a hash collision or a
/// foreign, truncated or corrupt file is recompiled, never loaded.
fn encode_entry(context: &str, source: &str, binary: &[u8]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(MAGIC.len() + 24 + context.len() + source.len() + binary.len());
    out.extend_from_slice(MAGIC);
    for part in [context.as_bytes(), source.as_bytes(), binary] {
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(part);
    }
    out
}

/// The binary of a cache file, if it was made from exactly `context` and `source`.
fn decode_entry(file: &[u8], context: &str, source: &str) -> Option<Vec<u8>> {
    let mut rest = file.strip_prefix(MAGIC)?;
    let mut next = || -> Option<&[u8]> {
        let len = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?) as usize;
        let part = rest.get(8..8usize.checked_add(len)?)?;
        rest = &rest[8 + len..];
        Some(part)
    };
    let (c, s, b) = (next()?, next()?, next()?);
    (c == context.as_bytes() && s == source.as_bytes() && !b.is_empty() && rest.is_empty())
        .then(|| b.to_vec())
}

fn cache_file(key: u64) -> Option<PathBuf> {
    cache_dir().map(|d| d.join(format!("{key:016x}.cubin")))
}

/// Drops a compiled kernel from both caches (used when the driver refuses to load it).
pub fn forget(source: &str, arch: &str) {
    if let Ok(key) = cache_key(source, arch) {
        if let Some(list) = memory_cache()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(&key)
        {
            list.retain(|(s, _)| s != source);
        }
        if let Some(f) = cache_file(key) {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Whether `source` is already compiled for `arch` in the memory or disk cache (so that loading
/// it costs no NVRTC time).
pub fn is_cached(source: &str, arch: &str) -> bool {
    let (Ok(key), Ok(context)) = (cache_key(source, arch), compilation_context(arch)) else {
        return false;
    };
    if lookup_memory(key, source).is_some() {
        return true;
    }
    cache_file(key)
        .and_then(|f| std::fs::read(f).ok())
        .and_then(|bytes| decode_entry(&bytes, &context, source))
        .is_some()
}

fn lookup_memory(key: u64, source: &str) -> Option<Binary> {
    memory_cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
        .and_then(|list| {
            list.iter()
                .find(|(s, _)| s == source)
                .map(|(_, b)| b.clone())
        })
}

fn remember(key: u64, source: &str, binary: Binary) {
    let mut cache = memory_cache().lock().unwrap_or_else(|p| p.into_inner());
    let list = cache.entry(key).or_default();
    if !list.iter().any(|(s, _)| s == source) {
        list.push((source.to_string(), binary));
    }
}

/// Compiles `source` (which defines `kernel`) for `arch` (e.g. `sm_90`) to a loadable binary
/// (CUBIN: no further JIT compilation when the module is loaded), or returns the cached one.
pub fn compile(source: &str, kernel: &str, arch: &str) -> Result<Binary> {
    let key = cache_key(source, arch)?;
    if let Some(b) = lookup_memory(key, source) {
        return Ok(b);
    }
    let context = compilation_context(arch)?;
    let file = cache_file(key);
    if let Some(f) = &file {
        if let Some(b) = std::fs::read(f)
            .ok()
            .and_then(|bytes| decode_entry(&bytes, &context, source))
        {
            let b = std::sync::Arc::new(b);
            remember(key, source, b.clone());
            return Ok(b);
        }
    }
    let binary = std::sync::Arc::new(compile_uncached(source, kernel, arch)?);
    if let Some(f) = &file {
        // The cache is an optimisation: failing to write it is not an error.
        let _ = write_atomically(f, &encode_entry(&context, source, &binary));
    }
    remember(key, source, binary.clone());
    Ok(binary)
}

fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp{}-{seq}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

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
    match lib.compile(&src, &name, &options(arch)) {
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
                "bigfuse-{kernel}-{:016x}.cu",
                fnv1a(&[source.as_bytes()])
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

    #[test]
    fn hash_is_stable() {
        // Pinned: a changed hash would silently orphan every cached PTX file.
        assert_eq!(fnv1a(&[b"abc"]), fnv1a(&[b"abc"]));
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(fnv1a(&[]), 0xcbf29ce484222325);
    }

    #[test]
    fn cache_entries_are_exact() {
        let e = encode_entry("ctx", "source", &[1, 2, 3]);
        assert_eq!(decode_entry(&e, "ctx", "source"), Some(vec![1, 2, 3]));
        assert_eq!(decode_entry(&e, "ctx", "sourcE"), None);
        assert_eq!(decode_entry(&e, "other", "source"), None);
        assert_eq!(decode_entry(&e[..e.len() - 1], "ctx", "source"), None);
        let mut longer = e.clone();
        longer.push(0);
        assert_eq!(decode_entry(&longer, "ctx", "source"), None);
        assert_eq!(decode_entry(b"garbage", "ctx", "source"), None);
        assert_eq!(
            decode_entry(&encode_entry("ctx", "source", &[]), "ctx", "source"),
            None
        );
    }
}

//! CUDA C -> PTX with NVRTC, behind a cache keyed by a hash of the source, the options, the target
//! architecture and the NVRTC version: in memory for the process, and on disk across processes.
//!
//! NVRTC runs without a GPU, so the ordinary test run compiles every generated kernel.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// Whether the NVRTC library can be loaded on this machine.
pub fn available() -> bool {
    // SAFETY: only tries to dlopen the library; no symbol is called.
    std::panic::catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

/// NVRTC's version, e.g. (13, 0).
pub fn version() -> Result<(i32, i32)> {
    if !available() {
        return Err(Error::NoNvrtc);
    }
    static VERSION: OnceLock<Option<(i32, i32)>> = OnceLock::new();
    let v = VERSION.get_or_init(|| {
        std::panic::catch_unwind(|| {
            let (mut major, mut minor) = (0, 0);
            // SAFETY: the library is present (checked above); the call writes two ints.
            let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
            (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
        })
        .ok()
        .flatten()
    });
    v.ok_or(Error::NoNvrtc)
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

fn memory_cache() -> &'static Mutex<HashMap<u64, String>> {
    static CACHE: OnceLock<Mutex<HashMap<u64, String>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Where compiled PTX is kept between runs: `$BIGFUSE_CACHE_DIR`, else `$XDG_CACHE_HOME/bigfuse`,
/// else `~/.cache/bigfuse`. `BIGFUSE_NO_DISK_CACHE=1` turns the disk cache off.
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

/// The cache key of a compilation.
pub fn cache_key(source: &str, arch: &str) -> Result<u64> {
    let (major, minor) = version()?;
    let opts = options(arch).join(" ");
    let ver = format!("{major}.{minor}");
    Ok(fnv1a(&[
        source.as_bytes(),
        opts.as_bytes(),
        arch.as_bytes(),
        ver.as_bytes(),
    ]))
}

/// A cached PTX text is accepted only if it looks like PTX for this kernel (a truncated or foreign
/// file is ignored and recompiled, never trusted).
fn plausible_ptx(ptx: &str, kernel: &str) -> bool {
    ptx.contains(".version")
        && ptx.contains(".target")
        && ptx.contains(kernel)
        && ptx.trim_end().ends_with('}')
}

/// Drops a PTX text from both caches (used when the driver refuses to load it).
pub fn forget(source: &str, arch: &str) {
    if let Ok(key) = cache_key(source, arch) {
        memory_cache()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        if let Some(dir) = cache_dir() {
            let _ = std::fs::remove_file(dir.join(format!("{key:016x}.ptx")));
        }
    }
}

/// Compiles `source` (which defines `kernel`) for `arch` (e.g. `sm_90`), or returns the cached PTX.
pub fn compile(source: &str, kernel: &str, arch: &str) -> Result<String> {
    let key = cache_key(source, arch)?;
    if let Some(ptx) = memory_cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
    {
        return Ok(ptx.clone());
    }
    let file = cache_dir().map(|d| d.join(format!("{key:016x}.ptx")));
    if let Some(f) = &file {
        if let Ok(ptx) = std::fs::read_to_string(f) {
            if plausible_ptx(&ptx, kernel) {
                memory_cache()
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key, ptx.clone());
                return Ok(ptx);
            }
        }
    }
    let ptx = compile_uncached(source, kernel, arch)?;
    if let Some(f) = &file {
        // The cache is an optimisation: failing to write it is not an error.
        let _ = write_atomically(f, &ptx);
    }
    memory_cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, ptx.clone());
    Ok(ptx)
}

fn write_atomically(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Compiles without looking at any cache.
pub fn compile_uncached(source: &str, kernel: &str, arch: &str) -> Result<String> {
    if !available() {
        return Err(Error::NoNvrtc);
    }
    let opts = cudarc::nvrtc::CompileOptions {
        options: options(arch),
        name: Some(format!("{kernel}.cu")),
        ..Default::default()
    };
    let src = source.to_string();
    let result = std::panic::catch_unwind(move || cudarc::nvrtc::compile_ptx_with_opts(src, opts))
        .map_err(|_| Error::NoNvrtc)?;
    match result {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(cudarc::nvrtc::CompileError::CompileError { log, .. }) => {
            let path = std::env::temp_dir().join(format!(
                "bigfuse-{kernel}-{:016x}.cu",
                fnv1a(&[source.as_bytes()])
            ));
            let _ = std::fs::write(&path, source);
            Err(Error::Compile {
                kernel: kernel.into(),
                path,
                log: log.to_string_lossy().into_owned(),
            })
        }
        Err(e) => Err(Error::driver("running NVRTC", e)),
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
    fn ptx_plausibility() {
        assert!(plausible_ptx(
            ".version 8.0\n.target sm_90\n.entry bf_k() {\n}\n",
            "bf_k"
        ));
        assert!(!plausible_ptx(
            ".version 8.0\n.target sm_90\n.entry bf_k() {",
            "bf_k"
        ));
        assert!(!plausible_ptx("garbage", "bf_k"));
    }
}

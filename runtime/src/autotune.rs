//! Autotuning: time a few candidate schedules of a kernel on the GPU and keep the fastest, cached
//! on disk so that the next process starts with it.
//!
//! The cache is a text file (`autotune.txt` in the PTX cache directory), one line per tuned
//! (program, sizes, device): `key<TAB>hints`. The key hashes the program's IR text, the sizes,
//! the device's name and architecture and the compiler's version, so an entry made by another
//! version or for another program never matches (stale entries are simply never read). Lines that
//! do not parse are ignored, and cached hints that no longer compile are re-tuned, not trusted.

use crate::error::Result;
use crate::gpu::GpuDevice;
use crate::kernel::Kernel;
use crate::nvrtc::{cache_dir, fnv1a};
use bigfuse_codegen::Hints;
use std::path::PathBuf;
use std::time::Instant;

/// Bumped whenever code generation changes what a hint means.
pub const TUNING_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "-t1");

/// The outcome of tuning one kernel at one size on one GPU.
#[derive(Clone, Debug)]
pub struct Tuned {
    pub hints: Hints,
    /// True when the hints came from the on-disk cache (no measurement this time).
    pub from_cache: bool,
    /// Each candidate and its median time in milliseconds (empty when cached).
    pub timings: Vec<(String, f64)>,
}

/// The hints as the cache (and `explain`) writes them: `q=2,block=256,width=-,minb=-,ntt=-,chunk=-`.
pub fn format_hints(h: &Hints) -> String {
    fn f<T: std::fmt::Display>(v: &Option<T>) -> String {
        v.as_ref().map_or("-".to_string(), |x| x.to_string())
    }
    format!(
        "q={},block={},width={},minb={},ntt={},chunk={}",
        f(&h.q),
        f(&h.block_threads),
        f(&h.mul_width),
        f(&h.min_blocks),
        f(&h.ntt_from_bits),
        f(&h.chunk_len)
    )
}

/// Parses what [`format_hints`] writes (entries written before `chunk` existed too); `None` for
/// anything else.
pub fn parse_hints(text: &str) -> Option<Hints> {
    let mut h = Hints::default();
    let mut seen = 0;
    for part in text.trim().split(',') {
        let (k, v) = part.split_once('=')?;
        let num = |v: &str| -> Option<Option<u64>> {
            if v == "-" {
                Some(None)
            } else {
                v.parse::<u64>().ok().map(Some)
            }
        };
        let small = |v: &str| -> Option<Option<u32>> {
            num(v)?
                .map(|x| u32::try_from(x).ok())
                .map_or(Some(None), |x| x.map(Some))
        };
        match k {
            "q" => h.q = small(v)?,
            "block" => h.block_threads = small(v)?,
            "width" => h.mul_width = small(v)?,
            "minb" => h.min_blocks = small(v)?,
            "ntt" => h.ntt_from_bits = num(v)?,
            "chunk" => h.chunk_len = num(v)?,
            _ => return None,
        }
        seen += 1;
    }
    (seen == 5 || seen == 6).then_some(h)
}

fn cache_file() -> Option<PathBuf> {
    cache_dir().map(|d| d.join("autotune.txt"))
}

/// The cache key of a kernel at some sizes on some GPU.
pub fn key(kernel: &Kernel, sizes: &[u64], gpu: &GpuDevice) -> String {
    let program = bigfuse_core::print(kernel.func());
    let sizes = format!("{sizes:?}");
    let t = gpu.target();
    let device = format!("{} {}", t.name, t.sm());
    format!(
        "{:016x}",
        fnv1a(&[
            program.as_bytes(),
            sizes.as_bytes(),
            device.as_bytes(),
            TUNING_VERSION.as_bytes()
        ])
    )
}

/// The cached hints for `key`, if a well-formed line holds them.
pub fn lookup(key: &str) -> Option<Hints> {
    let text = std::fs::read_to_string(cache_file()?).ok()?;
    text.lines()
        .rev()
        .filter_map(|l| l.split_once('\t'))
        .filter(|(k, _)| *k == key)
        .find_map(|(_, h)| parse_hints(h))
}

/// Records `hints` for `key` (replacing an older line for it). Failing to write is not an error:
/// the cache only saves time.
pub fn store(key: &str, hints: &Hints) {
    let Some(file) = cache_file() else { return };
    let old = std::fs::read_to_string(&file).unwrap_or_default();
    let mut lines: Vec<String> = old
        .lines()
        .filter(|l| l.split_once('\t').is_some_and(|(k, _)| k != key))
        .map(str::to_string)
        .collect();
    lines.push(format!("{key}\t{}", format_hints(hints)));
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, lines.join("\n") + "\n").is_ok() {
        let _ = std::fs::rename(&tmp, &file);
    }
}

/// Candidate schedules for a kernel: the default and the variations that measurements have shown
/// to matter (limbs per thread; the register cap; the product algorithm near its crossover).
pub fn candidates(kernel: &Kernel) -> Vec<Hints> {
    let has_products = kernel.func().nodes.iter().any(|n| {
        matches!(
            n.op,
            bigfuse_core::Op::BigMul(..) | bigfuse_core::Op::BigMulWide(..)
        )
    });
    let mut c = vec![Hints::default()];
    if has_products {
        c.push(Hints {
            min_blocks: Some(1),
            ..Default::default()
        });
        c.push(Hints {
            ntt_from_bits: Some(u64::MAX),
            ..Default::default()
        });
        c.push(Hints {
            ntt_from_bits: Some(0),
            ..Default::default()
        });
    } else {
        for q in [2, 4, 8] {
            c.push(Hints {
                q: Some(q),
                ..Default::default()
            });
        }
    }
    c
}

impl Kernel {
    /// Tunes this kernel at `sizes` on `gpu` (or returns the cached choice): every candidate is
    /// compiled, run on the same random batch, checked to agree with the default schedule, and
    /// timed (median of 5 after warm-up); the fastest is cached.
    pub fn autotune(&self, gpu: &GpuDevice, sizes: &[u64]) -> Result<Tuned> {
        let key = key(self, sizes, gpu);
        if let Some(hints) = lookup(&key) {
            if self.prepare_with(gpu, sizes, &hints).is_ok() {
                return Ok(Tuned {
                    hints,
                    from_cache: true,
                    timings: vec![],
                });
            }
        }
        let concrete = bigfuse_core::specialize(self.func(), sizes)?;
        // A batch of about 64 MiB per argument: long enough to time, short enough to tune quickly.
        let layouts: Vec<bigfuse_codegen::BufferLayout> = concrete
            .params
            .iter()
            .map(|p| bigfuse_codegen::layout_of(&p.name, &p.ty))
            .collect::<std::result::Result<_, _>>()?;
        let widest = layouts.iter().map(|l| l.units.max(1)).max().unwrap_or(1);
        let n = ((8u64 << 20) / widest).max(1024);
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut inputs = Vec::new();
        for (p, l) in concrete.params.iter().zip(&layouts) {
            let units = (n * l.units) as usize;
            // Big integers take any limbs; other values stay 0 or 1 (valid bools and residues).
            let mut value = || {
                if matches!(p.ty, bigfuse_core::Type::Big(_)) {
                    next()
                } else {
                    next() & 1
                }
            };
            let buf = match l.unit {
                bigfuse_codegen::Unit::U64 => {
                    gpu.upload(&(0..units).map(|_| value()).collect::<Vec<u64>>(), &p.name)?
                }
                bigfuse_codegen::Unit::U32 => gpu.upload(
                    &(0..units).map(|_| value() as u32).collect::<Vec<u32>>(),
                    &p.name,
                )?,
                bigfuse_codegen::Unit::Bool => gpu.upload(
                    &(0..units).map(|_| value() as u8).collect::<Vec<u8>>(),
                    &p.name,
                )?,
            };
            inputs.push(buf);
        }
        let refs: Vec<_> = inputs.iter().collect();
        let mut best: Option<(f64, Hints)> = None;
        let mut timings = Vec::new();
        let mut reference: Option<Vec<Vec<u64>>> = None;
        for hints in candidates(self) {
            let Ok(program) = self.prepare_with(gpu, sizes, &hints) else {
                continue;
            };
            let mut outs = Vec::new();
            for w in program.result_words() {
                outs.push(gpu.alloc((n * w) as usize, "tuning result")?);
            }
            program.launch(gpu, n, &refs, &mut outs)?;
            let got = outs
                .iter()
                .map(|o| gpu.download(o, "tuning result"))
                .collect::<Result<Vec<_>>>()?;
            match &reference {
                None => reference = Some(got),
                Some(r) if *r != got => continue, // a schedule that disagrees is never chosen
                Some(_) => {}
            }
            program.launch(gpu, n, &refs, &mut outs)?; // warm-up
            let mut times = Vec::new();
            for _ in 0..5 {
                gpu.synchronize()?;
                let start = Instant::now();
                program.launch(gpu, n, &refs, &mut outs)?;
                gpu.synchronize()?;
                times.push(start.elapsed().as_secs_f64() * 1e3);
            }
            times.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let median = times[2];
            timings.push((format_hints(&hints), median));
            if best.as_ref().is_none_or(|(t, _)| median < *t) {
                best = Some((median, hints));
            }
        }
        let (_, hints) = best.ok_or_else(|| crate::error::Error::Argument {
            kernel: self.name().into(),
            message: "no candidate schedule could be compiled for tuning".into(),
        })?;
        store(&key, &hints);
        Ok(Tuned {
            hints,
            from_cache: false,
            timings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_round_trip_and_garbage_is_refused() {
        let h = Hints {
            q: Some(4),
            block_threads: None,
            mul_width: Some(8),
            min_blocks: Some(1),
            ntt_from_bits: Some(32768),
            chunk_len: Some(2048),
        };
        assert_eq!(parse_hints(&format_hints(&h)), Some(h));
        // Entries written before the chunk length existed still parse.
        assert_eq!(
            parse_hints("q=2,block=-,width=-,minb=-,ntt=-"),
            Some(Hints {
                q: Some(2),
                ..Default::default()
            })
        );
        assert_eq!(
            parse_hints(&format_hints(&Hints::default())),
            Some(Hints::default())
        );
        for bad in [
            "",
            "q=2",
            "q=x,block=-,width=-,minb=-,ntt=-",
            "z=1,block=-,width=-,minb=-,ntt=-",
            "q=99999999999,block=-,width=-,minb=-,ntt=-",
        ] {
            assert_eq!(parse_hints(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_cache_survives_and_ignores_corrupt_lines() {
        let dir =
            std::env::temp_dir().join(format!("bigfuse-autotune-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // SAFETY: this test is the only one in this binary that touches the variable.
        unsafe { std::env::set_var("BIGFUSE_CACHE_DIR", &dir) };
        std::fs::write(dir.join("autotune.txt"), "garbage line\nabc\tq=zz\n\n").unwrap();
        assert_eq!(lookup("abc"), None);
        let h = Hints {
            q: Some(8),
            ..Default::default()
        };
        store("abc", &h);
        store("def", &Hints::default());
        assert_eq!(lookup("abc"), Some(h.clone()));
        assert_eq!(lookup("def"), Some(Hints::default()));
        let h2 = Hints {
            q: Some(2),
            ..Default::default()
        };
        store("abc", &h2);
        assert_eq!(lookup("abc"), Some(h2));
        let text = std::fs::read_to_string(dir.join("autotune.txt")).unwrap();
        assert_eq!(text.lines().filter(|l| l.starts_with("abc\t")).count(), 1);
        let _ = std::fs::remove_dir_all(dir);
    }
}

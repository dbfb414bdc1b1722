//! Autotuning: time a few candidate schedules of a kernel on the GPU and keep the fastest, cached
//! on disk so that the next process starts with it.
//!
//! The cache is a text file (`autotune.txt` in the cache directory), one line per tuned
//! (program, sizes, device): `hash<TAB>hints<TAB>key`. The key is the full text of what tuning
//! depends on (the compiler's tuning version, the device's name and architecture, the sizes and
//! the program's IR), escaped onto one line; the hash is its 128-bit hash. A line counts only when
//! its key is exactly the one looked up, so a colliding or forged line is never used, and since
//! the key comes last a truncated line never matches. Lines that do not parse are ignored, and
//! cached hints that no longer compile are re-tuned, not trusted. Processes that tune at once
//! each add their line under a lock (`store::update_locked`): none is lost, none is torn.

use crate::error::Result;
use crate::gpu::GpuDevice;
use crate::kernel::Kernel;
use crate::nvrtc::cache_dir;
use crate::store::{hash128, update_locked};
use bigfuse_codegen::Hints;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Bumped whenever code generation changes what a hint means.
pub const TUNING_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "-t1");

/// The outcome of tuning one kernel at one size on one GPU.
#[derive(Clone, Debug)]
pub struct Tuned {
    /// The fastest candidate's schedule, which later calls at these sizes use.
    pub hints: Hints,
    /// True when the hints came from the on-disk cache (no measurement this time).
    pub from_cache: bool,
    /// Each candidate and its median time in milliseconds (empty when cached).
    pub timings: Vec<(String, f64)>,
}

/// The hints as the cache (and `explain`) writes them: `q=2,block=256,width=-,minb=-,ntt=-,chunk=-,thread=-,group=-,divw=-`
/// (the text form of [`Hints`], defined with it).
pub fn format_hints(h: &Hints) -> String {
    h.to_string()
}

/// Parses what [`format_hints`] writes (entries written before `chunk` or `thread` existed too);
/// `None` for anything else.
pub fn parse_hints(text: &str) -> Option<Hints> {
    let (h, keys) = Hints::default().with(text).ok()?;
    (5..=Hints::KEYS.len()).contains(&keys).then_some(h)
}

fn cache_file() -> Option<PathBuf> {
    cache_dir().map(|d| d.join("autotune.txt"))
}

/// The cache key of a kernel at some sizes on some GPU: the full text of what tuning depends on.
pub fn key(kernel: &Kernel, sizes: &[u64], gpu: &GpuDevice) -> String {
    let t = gpu.target();
    format!(
        "bigfuse tuning {TUNING_VERSION}\ndevice {} {}\nsizes {sizes:?}\n{}",
        t.name,
        t.sm(),
        bigfuse_core::print(kernel.func())
    )
}

/// `key` on one line: backslash, tab, newline and carriage return escaped.
fn escape(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 16);
    for c in key.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

/// The inverse of [`escape`]; `None` for a text [`escape`] cannot have written.
fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(match chars.next()? {
                '\\' => '\\',
                't' => '\t',
                'n' => '\n',
                'r' => '\r',
                _ => return None,
            }),
            '\t' | '\n' | '\r' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

fn hash_field(key: &str) -> String {
    format!("{:032x}", hash128(&[key.as_bytes()]))
}

/// A line's hints, when the line is well formed and made for exactly `key` (hashed `hash`).
fn hints_of_line(line: &str, key: &str, hash: &str) -> Option<Hints> {
    let mut fields = line.splitn(3, '\t');
    let (h, hints, k) = (fields.next()?, fields.next()?, fields.next()?);
    if h != hash || unescape(k)? != key {
        return None;
    }
    parse_hints(hints)
}

/// Whether a line is a well-formed entry for exactly `key`.
fn is_entry_of(line: &str, key: &str, hash: &str) -> bool {
    hints_of_line(line, key, hash).is_some()
}

/// Whether a line is a well-formed entry (of any key).
fn is_entry(line: &str) -> bool {
    let mut fields = line.splitn(3, '\t');
    match (fields.next(), fields.next(), fields.next()) {
        (Some(h), Some(hints), Some(k)) => {
            h.len() == 32
                && h.bytes().all(|b| b.is_ascii_hexdigit())
                && parse_hints(hints).is_some()
                && unescape(k).is_some_and(|k| hash_field(&k) == h)
        }
        _ => false,
    }
}

/// The cached hints for `key` (from [`key`]), if a well-formed line holds them.
pub fn lookup(key: &str) -> Option<Hints> {
    lookup_in(&cache_file()?, key)
}

/// Records `hints` for `key` (replacing an older line for it). Failing to write is not an error:
/// the cache only saves time.
pub fn store(key: &str, hints: &Hints) {
    if let Some(file) = cache_file() {
        let _ = store_in(&file, key, hints);
    }
}

/// [`lookup`] in the cache file `file`.
pub(crate) fn lookup_in(file: &Path, key: &str) -> Option<Hints> {
    let bytes = std::fs::read(file).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let hash = hash_field(key);
    text.lines()
        .rev()
        .find_map(|l| hints_of_line(l, key, &hash))
}

/// [`store`] in the cache file `file`: under the file's lock, the lines of other keys are kept
/// (malformed ones dropped) and this key's line replaced.
pub(crate) fn store_in(file: &Path, key: &str, hints: &Hints) -> std::io::Result<()> {
    let hash = hash_field(key);
    let line = format!("{hash}\t{}\t{}", format_hints(hints), escape(key));
    update_locked(file, |old| {
        let mut lines: Vec<&str> = old
            .lines()
            .filter(|l| is_entry(l) && !is_entry_of(l, key, &hash))
            .collect();
        lines.push(&line);
        lines.join("\n") + "\n"
    })
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
            per_thread: Some(false),
            pow_mod_group: Some(8),
            divide_whole_bits: Some(4096),
            span: Some(1),
            global_ntt_from_bits: Some(1 << 16),
            read_coordinates: Some(true),
            park_values: Some(false),
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

    fn temp_dir(what: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bigfuse-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn hints(q: u32, block: u32) -> Hints {
        Hints {
            q: Some(q),
            block_threads: Some(block),
            ..Default::default()
        }
    }

    #[test]
    fn keys_survive_escaping() {
        for key in ["", "plain", "a\tb\nc\\d\re", "\\n", "tail\\"] {
            assert_eq!(unescape(&escape(key)).as_deref(), Some(key));
            assert!(!escape(key).contains(['\t', '\n', '\r']));
        }
        for bad in ["\\", "\\x", "a\tb"] {
            assert_eq!(unescape(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_cache_survives_and_ignores_corrupt_lines() {
        let dir = temp_dir("autotune-corrupt");
        let file = dir.join("autotune.txt");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&file, "garbage line\nabc\tq=zz\n\n\u{0}\u{1}\n").unwrap();
        assert_eq!(lookup_in(&file, "abc"), None);
        let h = hints(8, 256);
        store_in(&file, "abc", &h).unwrap();
        store_in(&file, "def\nwith lines", &Hints::default()).unwrap();
        assert_eq!(lookup_in(&file, "abc"), Some(h.clone()));
        assert_eq!(lookup_in(&file, "def\nwith lines"), Some(Hints::default()));
        assert_eq!(lookup_in(&file, "def"), None);
        let h2 = hints(2, 128);
        store_in(&file, "abc", &h2).unwrap();
        assert_eq!(lookup_in(&file, "abc"), Some(h2));
        let text = std::fs::read_to_string(&file).unwrap();
        // One line per key; the garbage is gone.
        assert_eq!(text.lines().count(), 2, "{text}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_forged_colliding_line_is_never_used() {
        let dir = temp_dir("autotune-forged");
        let file = dir.join("autotune.txt");
        store_in(&file, "the real key", &hints(4, 64)).unwrap();
        // A line with the real key's hash but another key (as a collision, or a hand edit,
        // would make), placed after the real one so that it would be found first.
        let forged = format!(
            "{}\t{}\t{}\n",
            hash_field("the real key"),
            format_hints(&hints(1, 1024)),
            escape("another key")
        );
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str(&forged);
        std::fs::write(&file, &text).unwrap();
        assert_eq!(lookup_in(&file, "the real key"), Some(hints(4, 64)));
        assert_eq!(lookup_in(&file, "another key"), None);
        // Storing again keeps neither the forged line (its hash is not its key's) nor the old one.
        store_in(&file, "the real key", &hints(8, 32)).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert_eq!(lookup_in(&file, "the real key"), Some(hints(8, 32)));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_truncated_file_never_gives_other_hints() {
        let dir = temp_dir("autotune-truncated");
        let file = dir.join("autotune.txt");
        let keys: Vec<String> = (0..4).map(|k| format!("key {k}\nof kernel {k}")).collect();
        for (k, key) in keys.iter().enumerate() {
            store_in(&file, key, &hints(k as u32 + 1, 32 << k)).unwrap();
        }
        let whole = std::fs::read(&file).unwrap();
        for len in 0..=whole.len() {
            std::fs::write(&file, &whole[..len]).unwrap();
            for (k, key) in keys.iter().enumerate() {
                if let Some(h) = lookup_in(&file, key) {
                    assert_eq!(h, hints(k as u32 + 1, 32 << k), "cut at {len}");
                }
            }
        }
        // The whole file still gives every entry.
        assert!(keys.iter().all(|k| lookup_in(&file, k).is_some()));
        let _ = std::fs::remove_dir_all(dir);
    }

    const WRITER: &str = "BIGFUSE_TEST_AUTOTUNE_WRITER";
    const ENTRIES: u32 = 150;

    /// What writer `id` stores: ENTRIES keys, each with its own hints.
    fn write_entries(file: &Path, id: u32) {
        for k in 0..ENTRIES {
            store_in(
                file,
                &format!("writer {id}\nkey {k}"),
                &hints(id + 1, k + 1),
            )
            .unwrap();
        }
    }

    #[test]
    fn processes_and_threads_storing_at_once_lose_nothing() {
        // In a child: be one of the writers.
        if let Ok(spec) = std::env::var(WRITER) {
            let (file, id) = spec.rsplit_once('|').unwrap();
            write_entries(Path::new(file), id.parse().unwrap());
            return;
        }
        let dir = temp_dir("autotune-concurrent");
        let file = dir.join("autotune.txt");
        std::fs::create_dir_all(&dir).unwrap();
        let exe = std::env::current_exe().unwrap();
        // Two processes, and two threads of this one, write at once.
        let children: Vec<std::process::Child> = (0..2)
            .map(|id| {
                std::process::Command::new(&exe)
                    .args([
                        "--exact",
                        "autotune::tests::processes_and_threads_storing_at_once_lose_nothing",
                        "--test-threads=1",
                    ])
                    .env(WRITER, format!("{}|{id}", file.display()))
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::thread::scope(|s| {
            for id in 2..4 {
                let file = &file;
                s.spawn(move || write_entries(file, id));
            }
        });
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().count(), 4 * ENTRIES as usize);
        for id in 0..4 {
            for k in 0..ENTRIES {
                assert_eq!(
                    lookup_in(&file, &format!("writer {id}\nkey {k}")),
                    Some(hints(id + 1, k + 1)),
                    "writer {id}, key {k}"
                );
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

//! The array programs of `bigfuse::programs`, written in the DSL as a user would: `user_add` next
//! to the built-in addition it spells out (same operands, same run), and `dot` modulo a prime in
//! modular multiplications per second; each figure next to a same-run device-to-device copy.

use crate::json::{self, fixed};
use crate::kernels::{add1, ref_add1};
use crate::measure::{copy_gbs, results, time_program, Bench, Measured};
use crate::tables::{add_gbs, cell, detail};
use bigfuse::programs::{dot, user_add};
use bigfuse::runtime::GpuDevice;
use bigfuse::{BigUint, Hints};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;

/// NumBits of the addition table: 2^9 .. 2^18, as the paper's (and `bench add`'s).
pub const ADD_LOGS: std::ops::RangeInclusive<u32> = 9..=18;

/// The Done-when target: the user-written addition at least this fraction of the built-in's GB/s.
pub const TARGET_RATIO: f64 = 0.9;

/// log2 of the elements of each input over the whole batch (N x batch): 2^26 u64 words, 512 MiB per
/// input as the addition's operands. Both inputs and the copy target are 1.5 GiB on the device, the
/// host copies 1 GiB: an H200 has room to spare. Where that is too much, 25 halves it and still
/// leaves the longest vectors a batch of 2.
pub const DOT_TOTAL_LOG: u32 = 26;

/// log2 of the elements per vector.
pub const DOT_LOGS: [u32; 8] = [10, 12, 14, 16, 18, 20, 22, 24];

/// The largest prime below 2^64 (its residues use every bit) and 29 * 2^57 + 1, a 62-bit
/// NTT-friendly prime: a modulus with spare bits next to one with none.
pub const DOT_PRIMES: [u64; 2] = [18446744073709551557, 4179340454199820289];

/// One NumBits: the copy, then the built-in `a + b` and `user_add` (Err: why there is no figure).
pub struct AddRow {
    pub log: u32,
    pub copy_gbs: f64,
    pub builtin: Result<Measured, String>,
    pub user: Result<Measured, String>,
}

impl AddRow {
    fn gbs(&self, m: &Result<Measured, String>) -> f64 {
        m.as_ref().map_or(f64::NAN, |m| add_gbs(self.log, m.ms))
    }

    pub fn builtin_gbs(&self) -> f64 {
        self.gbs(&self.builtin)
    }

    pub fn user_gbs(&self) -> f64 {
        self.gbs(&self.user)
    }

    /// user / built-in (NaN where either failed).
    pub fn ratio(&self) -> f64 {
        self.user_gbs() / self.builtin_gbs()
    }
}

/// `user_add` at N = NumBits / 64 limbs and the built-in 1-Add at NumBits, over the operands of
/// `bench` (NumInsts = 2^32 / NumBits), both checked against num-bigint modulo 2^NumBits first.
pub fn useradd(bench: &mut Bench, hints: &Hints) -> bigfuse::Result<Vec<AddRow>> {
    let (builtin, user) = (add1::kernel()?, user_add::kernel()?);
    let mut rows = Vec::new();
    for log in ADD_LOGS {
        if crate::stopped() {
            break;
        }
        let bits = 1u64 << log;
        let copy_gbs = bench.copy_gbs()?;
        eprintln!(
            "  useradd 2^{log} bits: built-in, then user_add at {} limbs",
            bits / 64
        );
        let builtin = bench
            .measure(builtin, bits, hints, ref_add1)
            .map_err(|e| e.to_string());
        let user = bench
            .measure_sized(user, &[bits / 64], bits, hints, ref_add1)
            .map_err(|e| e.to_string());
        for (label, r) in [("built-in", &builtin), ("user_add", &user)] {
            if let Err(e) = r {
                eprintln!("    {label}: {e}");
            }
        }
        rows.push(AddRow {
            log,
            copy_gbs,
            builtin,
            user,
        });
    }
    Ok(rows)
}

fn ratio_cell(r: f64) -> String {
    if r.is_nan() {
        "-".into()
    } else {
        format!("{r:.3}x")
    }
}

/// Markdown table of the user-written against the built-in addition, with the verdict on the target.
pub fn useradd_table(gpu: &str, runs: usize, rows: &[AddRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GPU: {gpu}. GB/s = 3*NumInsts*NumBits/8 / time (median of {runs}), NumBits x NumInsts = 2^32; \
         user_add = bigfuse::programs::user_add over N = NumBits/64 limbs (map ; exclusive scan with a \
         user carry operator ; map), built-in = `a + b` on U<NumBits> (1-Add), same operands; \
         copy = same-run device-to-device copy, read + written. Target: user / built-in >= {TARGET_RATIO:.2}.\n"
    );
    let _ = writeln!(s, "| NumBits | N | copy GB/s | built-in GB/s (% copy) | user_add GB/s (% copy) | user / built-in | within 10% | built-in kernel | user_add kernel |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let ratio = r.ratio();
        let ok = if ratio.is_nan() {
            "-"
        } else if ratio >= TARGET_RATIO {
            "yes"
        } else {
            "NO"
        };
        let _ = writeln!(
            s,
            "| 2^{} | {} | {:.0} | {} | {} | {} | {ok} | {} | {} |",
            r.log,
            (1u64 << r.log) / 64,
            r.copy_gbs,
            cell(r.builtin_gbs(), Some(r.copy_gbs), true),
            cell(r.user_gbs(), Some(r.copy_gbs), true),
            ratio_cell(ratio),
            detail(r.builtin.as_ref().ok()),
            detail(r.user.as_ref().ok())
        );
    }
    s.push('\n');
    s.push_str(&useradd_verdict(rows));
    s
}

/// One line: the worst ratio, the geometric mean, and whether every size meets the target.
fn useradd_verdict(rows: &[AddRow]) -> String {
    let ratios: Vec<(u32, f64)> = rows
        .iter()
        .map(|r| (r.log, r.ratio()))
        .filter(|(_, x)| !x.is_nan())
        .collect();
    let Some(&(worst_log, worst)) = ratios.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
        return "user_add / built-in: no figures\n".into();
    };
    let geomean = (ratios.iter().map(|(_, x)| x.ln()).sum::<f64>() / ratios.len() as f64).exp();
    let short: Vec<String> = rows
        .iter()
        // A missing figure (NaN) counts as short of the target.
        .filter(|r| r.ratio().is_nan() || r.ratio() < TARGET_RATIO)
        .map(|r| format!("2^{}", r.log))
        .collect();
    let met = ratios.iter().filter(|(_, x)| *x >= TARGET_RATIO).count();
    format!(
        "user_add / built-in: worst {worst:.3}x (2^{worst_log} bits), geometric mean {geomean:.3}x; \
         within 10% at {met} of {} sizes: {}\n",
        rows.len(),
        if short.is_empty() {
            "TARGET MET".to_string()
        } else {
            format!("TARGET NOT MET (at {})", short.join(", "))
        }
    )
}

fn regs(m: &Result<Measured, String>) -> Option<u32> {
    m.as_ref().ok().map(|m| m.registers)
}

/// The JSON of `bench useradd`.
#[derive(Serialize)]
struct UseraddJson<'a> {
    bench: &'static str,
    gpu: &'a str,
    runs: usize,
    target_ratio: f64,
    /// The schedule hints both kernels ran with (their text form).
    hints: &'a Hints,
    rows: Vec<UseraddRowJson>,
}

#[derive(Serialize)]
struct UseraddRowJson {
    num_bits: u64,
    limbs: u64,
    copy_gbs: Option<f64>,
    builtin_gbs: Option<f64>,
    user_gbs: Option<f64>,
    ratio: Option<f64>,
    /// Built-in, user's.
    regs: [Option<u32>; 2],
}

pub fn useradd_json(gpu: &str, runs: usize, hints: &Hints, rows: &[AddRow]) -> String {
    json::pretty(&UseraddJson {
        bench: "useradd",
        gpu,
        runs,
        target_ratio: TARGET_RATIO,
        hints,
        rows: rows
            .iter()
            .map(|r| UseraddRowJson {
                num_bits: 1u64 << r.log,
                limbs: (1u64 << r.log) / 64,
                copy_gbs: fixed(r.copy_gbs, 1),
                builtin_gbs: fixed(r.builtin_gbs(), 1),
                user_gbs: fixed(r.user_gbs(), 1),
                ratio: fixed(r.ratio(), 4),
                regs: [regs(&r.builtin), regs(&r.user)],
            })
            .collect(),
    })
}

/// The failures among rows (a wrong result included) as one error, after the table is out.
pub fn failures<'a>(
    what: &str,
    figures: impl Iterator<Item = (String, &'a Result<Measured, String>)>,
) -> Result<(), String> {
    let bad: Vec<String> = figures
        .filter_map(|(at, m)| m.as_ref().err().map(|e| format!("{at}: {e}")))
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{what}: {} figure(s) missing: {}",
            bad.len(),
            bad.join("; ")
        ))
    }
}

/// One (prime, N): the copy and `dot` over batch = 2^DOT_TOTAL_LOG / N vectors.
pub struct DotRow {
    pub prime: u64,
    pub log: u32,
    pub copy_gbs: f64,
    pub dot: Result<Measured, String>,
}

impl DotRow {
    /// Elements over the batch: N x batch.
    fn elements() -> f64 {
        (1u64 << DOT_TOTAL_LOG) as f64
    }

    pub fn batch(&self) -> u64 {
        1u64 << (DOT_TOTAL_LOG - self.log)
    }

    /// Modular multiplications per second, in G.
    pub fn gmodmul(&self) -> f64 {
        self.dot
            .as_ref()
            .map_or(f64::NAN, |m| Self::elements() / (m.ms * 1e-3) / 1e9)
    }

    /// Both inputs read once: 2 * 8 * N * batch bytes.
    pub fn gbs(&self) -> f64 {
        self.dot
            .as_ref()
            .map_or(f64::NAN, |m| 16.0 * Self::elements() / (m.ms * 1e-3) / 1e9)
    }
}

/// Residues below `p`, 2^DOT_TOTAL_LOG of them; the first 2^max(DOT_LOGS) are p - 1, so that the
/// first vector at every N is the worst case for the delayed reduction (the largest products, as
/// many as the vector holds).
fn residues(p: u64, seed: u64) -> Vec<u64> {
    let mut v = vec![0u64; 1 << DOT_TOTAL_LOG];
    let worst = 1usize << DOT_LOGS[DOT_LOGS.len() - 1];
    v.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ ((c as u64) << 20));
            for (j, x) in chunk.iter_mut().enumerate() {
                *x = if c * (1 << 16) + j < worst {
                    p - 1
                } else {
                    rng.gen_range(0..p)
                };
            }
        });
    v
}

/// sum(x_i * y_i) mod p with num-bigint: each 128-bit product is exact, the sum is never reduced.
fn dot_reference(xs: &[u64], ys: &[u64], p: u64) -> u64 {
    let mut s = BigUint::default();
    for (x, y) in xs.iter().zip(ys) {
        s += *x as u128 * *y as u128;
    }
    (s % p).iter_u64_digits().next().unwrap_or(0)
}

/// Checks the first and last vectors and six random ones against [`dot_reference`].
fn check_dot(xs: &[u64], ys: &[u64], p: u64, log: u32, got: &[u64]) -> bigfuse::Result<()> {
    let n = 1usize << log;
    let batch = 1usize << (DOT_TOTAL_LOG - log);
    let mut rng = rand::rngs::StdRng::seed_from_u64(p ^ log as u64);
    let mut idx: Vec<usize> = (0..6).map(|_| rng.gen_range(0..batch)).collect();
    idx.extend([0, batch - 1]);
    idx.sort_unstable();
    idx.dedup();
    let bad = idx.par_iter().find_map_any(|&i| {
        let s = i * n..(i + 1) * n;
        let want = dot_reference(&xs[s.clone()], &ys[s], p);
        (got[i] != want).then_some((i, want))
    });
    match bad {
        None => Ok(()),
        Some((i, want)) => Err(bigfuse::Error::Argument {
            kernel: "dot".into(),
            message: format!(
                "vector {i} of 2^{log} elements mod {p}: {} from the GPU, {want} from num-bigint",
                got[i]
            ),
        }),
    }
}

/// `dot` at every N of [`DOT_LOGS`] for each prime, on inputs uploaded once per prime.
pub fn dot(
    gpu: &GpuDevice,
    runs: usize,
    primes: &[u64],
    hints: &Hints,
) -> bigfuse::Result<Vec<DotRow>> {
    let kernel = dot::kernel()?;
    let mut rows = Vec::new();
    for (k, &p) in primes.iter().enumerate() {
        if crate::stopped() {
            break;
        }
        // A modulus the compiler rejects (not prime) is refused before 1 GiB of residues is made;
        // below 2 there would be no residues to draw at all.
        if p < 2 {
            return Err(bigfuse::Error::Argument {
                kernel: "dot".into(),
                message: format!("the modulus {p} is not a prime"),
            });
        }
        kernel.plan(&[p, 1 << DOT_LOGS[0]], gpu.target(), hints)?;
        eprintln!("  dot mod {p}: generating and uploading 2 x 2^{DOT_TOTAL_LOG} residues");
        let xs_host = residues(p, 2 * k as u64 + 1);
        let ys_host = residues(p, 2 * k as u64 + 2);
        let xs = gpu.upload(&xs_host, "xs")?;
        let ys = gpu.upload(&ys_host, "ys")?;
        let mut scratch = gpu.alloc(xs_host.len(), "copy target")?;
        for log in DOT_LOGS {
            if crate::stopped() {
                break;
            }
            let copy_gbs = copy_gbs(gpu, runs, &xs, &mut scratch)?;
            eprintln!(
                "  dot mod {p}: N = 2^{log}, batch = 2^{}",
                DOT_TOTAL_LOG - log
            );
            let batch = 1u64 << (DOT_TOTAL_LOG - log);
            let measured = (|| {
                let program = kernel.prepare_with(gpu, &[p, 1u64 << log], hints)?;
                if program.parts.len() > 1 {
                    eprintln!(
                        "    (dot at 2^{log} elements runs as {} kernels)",
                        program.parts.len()
                    );
                }
                let mut outputs = program
                    .result_words()
                    .iter()
                    .map(|w| gpu.alloc((batch * w) as usize, "dot products"))
                    .collect::<bigfuse::Result<Vec<_>>>()?;
                let got = results(gpu, &program, batch, &[&xs, &ys], &mut outputs)?;
                check_dot(&xs_host, &ys_host, p, log, &got[0])?;
                time_program(gpu, runs, &program, batch, &[&xs, &ys], &mut outputs)
            })()
            .map_err(|e| e.to_string());
            if let Err(e) = &measured {
                eprintln!("    dot: {e}");
            }
            rows.push(DotRow {
                prime: p,
                log,
                copy_gbs,
                dot: measured,
            });
        }
    }
    Ok(rows)
}

/// Markdown tables of the dot products, one per prime.
pub fn dot_table(gpu: &str, runs: usize, rows: &[DotRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GPU: {gpu}. dot(xs, ys) mod P over N residues per vector (bigfuse::programs::dot), batch = \
         2^{DOT_TOTAL_LOG} / N vectors ({} MiB per input); Gmodmul/s = batch*N / time, GB/s = \
         2*8*N*batch / time (both inputs read once), median of {runs}; copy = same-run \
         device-to-device copy of one input, read + written.\n",
        (8u64 << DOT_TOTAL_LOG) >> 20
    );
    let mut primes: Vec<u64> = rows.iter().map(|r| r.prime).collect();
    primes.dedup();
    for p in primes {
        let _ = writeln!(s, "P = {p} ({} bits):\n", 64 - p.leading_zeros());
        let _ = writeln!(
            s,
            "| N | batch | copy GB/s | Gmodmul/s | GB/s (% copy) | kernel |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|---|");
        for r in rows.iter().filter(|r| r.prime == p) {
            let gm = r.gmodmul();
            let _ = writeln!(
                s,
                "| 2^{} | 2^{} | {:.0} | {} | {} | {} |",
                r.log,
                DOT_TOTAL_LOG - r.log,
                r.copy_gbs,
                if gm.is_nan() {
                    "-".into()
                } else {
                    format!("{gm:.1}")
                },
                cell(r.gbs(), Some(r.copy_gbs), true),
                detail(r.dot.as_ref().ok())
            );
        }
        s.push('\n');
    }
    s
}

/// The JSON of `bench dot`.
#[derive(Serialize)]
struct DotJson<'a> {
    bench: &'static str,
    gpu: &'a str,
    runs: usize,
    /// N x batch of every row.
    elements: u64,
    /// The schedule hints of every row (their text form).
    hints: &'a Hints,
    rows: Vec<DotRowJson>,
}

#[derive(Serialize)]
struct DotRowJson {
    prime: u64,
    n: u64,
    batch: u64,
    copy_gbs: Option<f64>,
    gmodmul_s: Option<f64>,
    gbs: Option<f64>,
    /// Kernels in the plan.
    parts: Option<usize>,
    regs: Option<u32>,
}

pub fn dot_json(gpu: &str, runs: usize, hints: &Hints, rows: &[DotRow]) -> String {
    json::pretty(&DotJson {
        bench: "dot",
        gpu,
        runs,
        elements: 1u64 << DOT_TOTAL_LOG,
        hints,
        rows: rows
            .iter()
            .map(|r| DotRowJson {
                prime: r.prime,
                n: 1u64 << r.log,
                batch: r.batch(),
                copy_gbs: fixed(r.copy_gbs, 1),
                gmodmul_s: fixed(r.gmodmul(), 2),
                gbs: fixed(r.gbs(), 1),
                parts: r.dot.as_ref().ok().map(|m| m.parts),
                regs: regs(&r.dot),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::tests::{gpu_reads_back, same_shape, AWKWARD_GPU};
    use bigfuse::Target;

    /// What the GPU runs is planned without one: every benchmarked size plans, with the layouts
    /// the uploads assume (N words per instance in, a chunk kernel reading them in place as C
    /// virtual instances of N / C words; N words or one residue out).
    #[test]
    fn every_benchmarked_size_plans_with_the_assumed_layouts() {
        let (target, hints) = (Target::h100(), Hints::default());
        let words_of = |plan: &bigfuse::codegen::Plan| {
            let first = &plan.parts[0];
            first
                .compiled
                .inputs
                .iter()
                .map(|l| l.units * first.instances)
                .collect::<Vec<_>>()
        };
        for log in ADD_LOGS {
            let n = (1u64 << log) / 64;
            let plan = user_add::kernel()
                .unwrap()
                .plan(&[n], &target, &hints)
                .unwrap();
            assert_eq!(words_of(&plan), [n, n], "2^{log} bits");
            let last = &plan.parts[plan.parts.len() - 1].compiled;
            assert_eq!(last.outputs[0].units, n, "2^{log} bits");
        }
        for p in DOT_PRIMES {
            for log in DOT_LOGS {
                let plan = dot::kernel()
                    .unwrap()
                    .plan(&[p, 1 << log], &target, &hints)
                    .unwrap();
                assert_eq!(words_of(&plan), [1 << log, 1 << log], "mod {p} at 2^{log}");
                let last = &plan.parts[plan.parts.len() - 1].compiled;
                assert_eq!(last.outputs[0].units, 1, "mod {p} at 2^{log}");
            }
        }
    }

    #[test]
    fn the_dot_reference_is_the_sum_of_products_mod_p() {
        let p = DOT_PRIMES[0];
        let xs = [p - 1, p - 1, 3, 0];
        let ys = [p - 1, p - 1, 5, 7];
        // (p-1)^2 = 1 mod p, twice, plus 15.
        assert_eq!(dot_reference(&xs, &ys, p), 17);
        let slow = xs.iter().zip(&ys).fold(0u128, |s, (x, y)| {
            (s + (*x as u128 * *y as u128) % p as u128) % p as u128
        });
        assert_eq!(dot_reference(&xs, &ys, p) as u128, slow);
    }

    #[test]
    fn the_verdict_counts_a_missing_figure_as_short() {
        let m = |ms| Measured {
            ms,
            registers: 32,
            local_bytes: 0,
            q: 1,
            threads_per_instance: 1,
            shared_bytes: 0,
            algo: "-".into(),
            parts: 1,
        };
        let rows = vec![
            AddRow {
                log: 9,
                copy_gbs: 4000.0,
                builtin: Ok(m(1.0)),
                user: Ok(m(1.05)),
            },
            AddRow {
                log: 10,
                copy_gbs: 4000.0,
                builtin: Ok(m(1.0)),
                user: Err("wrong".into()),
            },
        ];
        let v = useradd_verdict(&rows);
        assert!(v.contains("within 10% at 1 of 2 sizes"), "{v}");
        assert!(v.contains("TARGET NOT MET (at 2^10)"), "{v}");
        let table = useradd_table("test", 3, &rows);
        assert!(table.contains("| 0.952x | yes |"), "{table}");
        let json = useradd_json("test", 3, &Hints::default(), &rows);
        assert!(json.contains("\"user_gbs\": null"), "{json}");
        assert!(failures("useradd", rows.iter().map(|r| (r.log.to_string(), &r.user))).is_err());
    }

    fn measured(ms: f64, registers: u32, parts: usize) -> Measured {
        Measured {
            ms,
            registers,
            local_bytes: 0,
            q: 1,
            threads_per_instance: 1,
            shared_bytes: 0,
            algo: "-".into(),
            parts,
        }
    }

    #[test]
    fn useradd_json_is_escaped_and_shaped_as_before() {
        let rows = vec![
            AddRow {
                log: 9,
                copy_gbs: 4117.06,
                builtin: Ok(measured(1.0, 20, 1)),
                user: Ok(measured(1.0 / 0.99704, 21, 1)),
            },
            AddRow {
                log: 10,
                copy_gbs: 4097.5,
                builtin: Ok(measured(1.0, 20, 1)),
                user: Err("wrong \"result\"".into()),
            },
        ];
        let hints = Hints {
            block_threads: Some(128),
            ..Hints::default()
        };
        let v = gpu_reads_back(&useradd_json(AWKWARD_GPU, 20, &hints, &rows), "/gpu");
        assert_eq!(v["bench"], "useradd");
        assert_eq!(v["target_ratio"], TARGET_RATIO);
        assert_eq!(
            v["hints"],
            "q=-,block=128,width=-,minb=-,ntt=-,chunk=-,thread=-,group=-,divw=-,span=-,gntt=-,coords=-,park=-"
        );
        assert_eq!(
            serde_json::from_value::<Hints>(v["hints"].clone()).unwrap(),
            hints
        );
        assert_eq!(v["rows"][0]["limbs"], 8);
        assert_eq!(v["rows"][0]["copy_gbs"], 4117.1);
        assert_eq!(v["rows"][0]["ratio"], 0.997);
        assert_eq!(v["rows"][0]["regs"], serde_json::json!([20, 21]));
        assert!(v["rows"][1]["user_gbs"].is_null());
        assert!(v["rows"][1]["ratio"].is_null());
        assert_eq!(v["rows"][1]["regs"], serde_json::json!([20, null]));
        same_shape(
            &v,
            include_str!("../results/useradd-h200-2026-11-22.json"),
            &[("", &["hints"]), ("/rows/0", &[])],
        );
    }

    #[test]
    fn dot_json_is_escaped_and_shaped_as_before() {
        let p = DOT_PRIMES[0];
        let rows = vec![
            DotRow {
                prime: p,
                log: 10,
                copy_gbs: 4120.6,
                dot: Ok(measured(0.3, 56, 2)),
            },
            DotRow {
                prime: p,
                log: 12,
                copy_gbs: 4129.3,
                dot: Err("failed".into()),
            },
        ];
        let v = gpu_reads_back(&dot_json(AWKWARD_GPU, 20, &Hints::default(), &rows), "/gpu");
        assert_eq!(v["elements"], 1u64 << DOT_TOTAL_LOG);
        assert_eq!(v["hints"], Hints::default().to_string());
        // The largest prime below 2^64 stays exact.
        assert_eq!(v["rows"][0]["prime"].as_u64(), Some(p));
        assert_eq!(v["rows"][0]["batch"], 1 << (DOT_TOTAL_LOG - 10));
        assert_eq!(v["rows"][0]["gmodmul_s"], 223.7);
        assert_eq!(v["rows"][0]["parts"], 2);
        assert_eq!(v["rows"][0]["regs"], 56);
        for missing in ["gmodmul_s", "gbs", "parts", "regs"] {
            assert!(v["rows"][1][missing].is_null(), "{missing}");
        }
        same_shape(
            &v,
            include_str!("../results/dot-h200-2026-11-22.json"),
            &[("", &["hints"]), ("/rows/0", &[])],
        );
    }
}

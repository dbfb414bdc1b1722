//! `bench huge`: integers and arrays longer than one block's threads, whose instances span several
//! blocks. 1-Add and 6-Add at 2^19..2^26 bits (NumBits x NumInsts = 2^32, the paper's setup), one
//! instance at 2^24 and 2^26 bits, and prefix sums over `[Zp<P>; N]` at N = 2^20..2^26
//! (N x batch = 2^26 residues); every figure checked first and next to the same-run copy.

use crate::kernels::{add1, add6, mul1, ref_add1, ref_add6, ref_mul1};
use crate::measure::{copy_gbs, results, time_program, Bench, Measured, Reference, TOTAL_LOG};
use bigfuse::programs::prefix_sums;
use bigfuse::runtime::GpuDevice;
use bigfuse::{Hints, Kernel};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::fmt::Write as _;

/// Sizes of the batch-1 rows (log2 NumBits).
pub const SINGLE_LOGS: [u32; 2] = [24, 26];

/// log2 of the residues of a scan row over the whole batch (512 MiB in, 512 MiB out).
pub const SCAN_TOTAL_LOG: u32 = 26;

/// log2 N of the scan rows: one block per instance at 2^12, several from 2^13.
pub const SCAN_LOGS: [u32; 8] = [8, 10, 12, 16, 20, 22, 24, 26];

/// The scans' modulus, the Mersenne prime 2^61 - 1.
pub const SCAN_PRIME: u64 = (1 << 61) - 1;

/// One instance of an addition, timed alone.
pub struct SingleRow {
    pub what: &'static str,
    pub log: u32,
    pub copy_gbs: f64,
    pub measured: Result<Measured, String>,
}

/// Batch-1 additions and products at [`SINGLE_LOGS`]: what one huge sum or product costs (the
/// kernels alone).
pub fn single(bench: &mut Bench, hints: &Hints) -> bigfuse::Result<Vec<SingleRow>> {
    let kernels: [(&'static str, &Kernel, Reference); 3] = [
        ("1-Add", add1::kernel()?, ref_add1),
        ("6-Add", add6::kernel()?, ref_add6),
        ("1-Mul", mul1::kernel()?, ref_mul1),
    ];
    let mut rows = Vec::new();
    for log in SINGLE_LOGS {
        let copy_gbs = bench.copy_gbs()?;
        for (what, kernel, reference) in &kernels {
            eprintln!("  {what} 2^{log}, one instance");
            let bits = 1u64 << log;
            let measured = bench
                .measure_batch(kernel, &[bits], bits, 1, hints, reference)
                .map_err(|e| e.to_string());
            rows.push(SingleRow {
                what,
                log,
                copy_gbs,
                measured,
            });
        }
    }
    Ok(rows)
}

/// One size of products: the GPU's 1-Mul and GMP's, Gu32ops/s (or why there is no GMP figure).
pub struct GmpRow {
    pub log: u32,
    pub gpu: f64,
    pub gmp: Result<f64, String>,
}

/// GMP's products on every host core at 2^log bits (the bench's operands, NumBits x NumInsts =
/// 2^32), next to the GPU's 1-Mul of `rows`.
pub fn gmp_products(bench: &Bench, rows: &[crate::tables::Row]) -> bigfuse::Result<Vec<GmpRow>> {
    let mut out = Vec::new();
    for r in rows {
        if crate::stopped() {
            break;
        }
        let bits = 1u64 << r.log;
        let words = (1usize << (TOTAL_LOG - r.log)) * (bits / 64) as usize;
        eprintln!("  GMP mul 2^{}", r.log);
        let sets = crate::gmp::prepare(bits, &[(&bench.a_host[..words], &bench.b_host[..words])]);
        let gmp = match crate::gmp::time(crate::ops::Op::Mul, bits, &sets, bench.runs.min(3)) {
            Ok(Some(ms)) => Ok(crate::tables::gu32ops(r.log, 1.0, ms)),
            Ok(None) => Err(crate::gmp::describe()),
            Err(e) => Err(e.to_string()),
        };
        let gpu = r.figures.first().map_or(f64::NAN, |f| f.0);
        out.push(GmpRow {
            log: r.log,
            gpu,
            gmp,
        });
    }
    Ok(out)
}

/// The products next to GMP in markdown.
pub fn gmp_table(gpu: &str, rows: &[GmpRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "1-Mul on {gpu} (the default schedule above) and GMP on all host cores ({}), same operands, Gu32ops/s:\n",
        crate::gmp::describe()
    );
    let _ = writeln!(s, "| NumBits | GPU 1-Mul | GMP | GPU / GMP |");
    let _ = writeln!(s, "|---|---|---|---|");
    for GmpRow { log, gpu: g, gmp } in rows {
        match gmp {
            Ok(m) => {
                let _ = writeln!(s, "| 2^{log} | {g:.0} | {m:.0} | {:.1}x |", g / m);
            }
            Err(e) => {
                let _ = writeln!(s, "| 2^{log} | {g:.0} | - | {e} |");
            }
        }
    }
    s
}

/// One N of the scans.
pub struct ScanRow {
    pub log: u32,
    pub copy_gbs: f64,
    pub measured: Result<Measured, String>,
}

/// Residues modulo [`SCAN_PRIME`], 2^26 of them, with a stretch of P - 1 (every sum wraps).
fn residues(seed: u64) -> Vec<u64> {
    let mut v = vec![0u64; 1 << SCAN_TOTAL_LOG];
    v.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ ((c as u64) << 20));
            for x in chunk.iter_mut() {
                *x = if c == 1 {
                    SCAN_PRIME - 1
                } else {
                    rng.gen_range(0..SCAN_PRIME)
                };
            }
        });
    v
}

/// The prefix sums of every instance (N residues each) against a sequential sum on the host.
fn check_scan(xs: &[u64], got: &[u64], n: usize) -> Result<(), String> {
    let bad = xs
        .par_chunks(n)
        .zip(got.par_chunks(n))
        .enumerate()
        .find_map_any(|(k, (x, g))| {
            let mut s = 0u64;
            for (i, (v, w)) in x.iter().zip(g).enumerate() {
                s = ((s as u128 + *v as u128) % SCAN_PRIME as u128) as u64;
                if *w != s {
                    return Some(format!("instance {k}, element {i}: {w} != {s}"));
                }
            }
            None
        });
    bad.map_or(Ok(()), |b| {
        Err(format!("prefix sums differ from the host's: {b}"))
    })
}

/// Prefix sums over `[Zp<P>; 2^log]` for each of [`SCAN_LOGS`].
pub fn scans(gpu: &GpuDevice, runs: usize, hints: &Hints) -> bigfuse::Result<Vec<ScanRow>> {
    let kernel = prefix_sums::kernel()?;
    eprintln!("  scans: generating and uploading 2^{SCAN_TOTAL_LOG} residues");
    let xs_host = residues(7);
    let xs = gpu.upload(&xs_host, "xs")?;
    let mut scratch = gpu.alloc(xs_host.len(), "copy target")?;
    let mut rows = Vec::new();
    for log in SCAN_LOGS {
        if crate::stopped() {
            break;
        }
        let copy_gbs = copy_gbs(gpu, runs, &xs, &mut scratch)?;
        let batch = 1u64 << (SCAN_TOTAL_LOG - log);
        eprintln!("  prefix sums: N = 2^{log}, batch = {batch}");
        let measured = (|| {
            let program = kernel.prepare_with(gpu, &[SCAN_PRIME, 1u64 << log], hints)?;
            let mut outputs = vec![gpu.alloc(xs_host.len(), "prefix sums")?];
            let got = results(gpu, &program, batch, &[&xs], &mut outputs)?;
            check_scan(&xs_host, &got[0], 1 << log).map_err(|message| {
                bigfuse::Error::Argument {
                    kernel: "prefix_sums".into(),
                    message,
                }
            })?;
            time_program(gpu, runs, &program, batch, &[&xs], &mut outputs)
        })()
        .map_err(|e| e.to_string());
        if let Err(e) = &measured {
            eprintln!("    prefix sums: {e}");
        }
        rows.push(ScanRow {
            log,
            copy_gbs,
            measured,
        });
    }
    Ok(rows)
}

/// GB/s of a prefix sum over 2^26 residues (8 bytes read and 8 written each) in `ms`.
pub fn scan_gbs(ms: f64) -> f64 {
    16.0 * (1u64 << SCAN_TOTAL_LOG) as f64 / (ms * 1e-3) / 1e9
}

/// GB/s of one addition of 2^log-bit integers (two read, one written) in `ms`.
pub fn single_gbs(log: u32, ms: f64) -> f64 {
    3.0 * (1u64 << log) as f64 / 8.0 / (ms * 1e-3) / 1e9
}

fn kernel_cell(m: &Measured) -> String {
    format!(
        "T={} Q={} {} regs{}",
        m.threads_per_instance,
        m.q,
        m.registers,
        if m.local_bytes > 0 {
            format!(", {} B local", m.local_bytes)
        } else {
            String::new()
        }
    )
}

/// The cells after a row's own: the time, the rate (`rate` of the time), and the kernel; or why
/// there is no figure.
fn figure_cells(
    measured: &Result<Measured, String>,
    copy_gbs: f64,
    rate: impl Fn(f64) -> String,
) -> String {
    match measured {
        Ok(m) => format!(
            "{copy_gbs:.0} | {:.3} ms | {} | {} |",
            m.ms,
            rate(m.ms),
            kernel_cell(m)
        ),
        Err(e) => format!("{copy_gbs:.0} | - | - | {e} |"),
    }
}

/// A rate in GB/s next to the copy's.
fn share(gbs: f64, copy_gbs: f64) -> String {
    format!("{gbs:.0} ({:.1}%)", 100.0 * gbs / copy_gbs)
}

/// The batch-1 and scan tables in markdown.
pub fn tables(gpu: &str, runs: usize, single: &[SingleRow], scans: &[ScanRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "One instance (kernel alone), {gpu}, median of {runs}; GB/s = 3 NumBits/8 / time:\n"
    );
    let _ = writeln!(
        s,
        "| kernel | NumBits | copy GB/s | time | GB/s (% copy) | kernel |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for r in single {
        let cells = if r.what == "1-Mul" {
            // A product moves as much as a sum but computes far more: its rate in Gu32ops/s.
            figure_cells(&r.measured, r.copy_gbs, |ms| {
                format!(
                    "{:.0} Gu32ops/s",
                    crate::ops::gu32ops(1 << r.log, 1, 1.0, ms)
                )
            })
        } else {
            figure_cells(&r.measured, r.copy_gbs, |ms| {
                share(single_gbs(r.log, ms), r.copy_gbs)
            })
        };
        let _ = writeln!(s, "| {} | 2^{} | {cells}", r.what, r.log);
    }
    let _ = writeln!(
        s,
        "\nPrefix sums over [Zp<P>; N], P = 2^61 - 1, N x batch = 2^{SCAN_TOTAL_LOG}, {gpu}, median of {runs}; GB/s = 16 N batch / time:\n"
    );
    let _ = writeln!(
        s,
        "| N | batch | copy GB/s | time | GB/s (% copy) | kernel |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for r in scans {
        let batch = 1u64 << (SCAN_TOTAL_LOG - r.log);
        let cells = figure_cells(&r.measured, r.copy_gbs, |ms| {
            share(scan_gbs(ms), r.copy_gbs)
        });
        let _ = writeln!(s, "| 2^{} | {batch} | {cells}", r.log);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gmp_table_shows_the_ratio_or_why_there_is_none() {
        let rows = [
            GmpRow {
                log: 20,
                gpu: 33461.0,
                gmp: Ok(378.0),
            },
            GmpRow {
                log: 26,
                gpu: 30282.0,
                gmp: Err("not built".into()),
            },
        ];
        let t = gmp_table("GPU", &rows);
        assert!(t.contains("| 2^20 | 33461 | 378 | 88.5x |"), "{t}");
        assert!(t.contains("| 2^26 | 30282 | - | not built |"), "{t}");
    }

    #[test]
    fn tables_show_rates_next_to_the_copy_and_why_a_figure_is_missing() {
        let m = Measured {
            ms: 0.5,
            registers: 32,
            local_bytes: 0,
            q: 4,
            threads_per_instance: 2048,
            shared_bytes: 0,
            algo: "-".into(),
            parts: 1,
        };
        let single = [SingleRow {
            what: "1-Add",
            log: 24,
            copy_gbs: 4000.0,
            measured: Ok(m),
        }];
        let scans = [ScanRow {
            log: 20,
            copy_gbs: 4000.0,
            measured: Err("kernel too big".into()),
        }];
        let t = tables("H200", 5, &single, &scans);
        // 3 * 2^24 / 8 bytes in 0.5 ms: 12.6 GB/s.
        assert!(
            t.contains("| 1-Add | 2^24 | 4000 | 0.500 ms | 13 (0.3%) | T=2048 Q=4 32 regs |"),
            "{t}"
        );
        assert!(
            t.contains("| 2^20 | 64 | 4000 | - | - | kernel too big |"),
            "{t}"
        );
    }
}

//! `bench e2e` without the GPU: which configurations are measured, the floors, ratios and metrics
//! derived from the timings, the tables, the JSON and the Done-when bars.

use crate::bars::{number, Bar};
use crate::ops::{Op, ALL};
use bigfuse::Hints;
use serde::Serialize;
use std::fmt::Write as _;

/// Random input sets the timed calls rotate through (so that no cache holds the last call's data).
pub const SETS: usize = 2;

/// The issue's sizes for Mul and Poly: (NumBits, instances).
pub const BAR_SIZES: [(u64, u64); 2] = [(4096, 1 << 16), (32768, 1 << 12)];
/// (b) run_into on limbs, at most this times the floor.
pub const LIMIT_LIMBS: f64 = 1.5;
/// (a) run on BigUint, at most this times the floor.
pub const LIMIT_BIG: f64 = 2.5;
/// (a) for Mul at 4096 bits, at least this times faster than GMP on all host cores.
pub const LIMIT_GMP: f64 = 3.0;
/// The chain on device batches, at most this times the same kernels launched directly.
pub const LIMIT_CHAIN: f64 = 1.03;

/// One measured size: its operations, and whether the chain is measured there.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub bits: u64,
    pub n: u64,
    pub ops: Vec<Op>,
    /// The chain mul -> poly -> add (measured only when all three operations are selected).
    pub chain: bool,
    /// Part of the sweep (NumBits x n = 2^total_log).
    pub sweep: bool,
    /// One of [`BAR_SIZES`].
    pub bar: bool,
}

/// The sweep 2^min_log .. 2^max_log bits with n = 2^(total_log - log) instances, then the
/// Done-when sizes of Mul and Poly that the sweep does not already hold (unless `bars` is false).
pub fn configs(
    min_log: u32,
    max_log: u32,
    total_log: u32,
    ops: &[Op],
    bars: bool,
) -> Result<Vec<Config>, String> {
    if min_log < 6 {
        return Err(format!(
            "--min-log {min_log}: NumBits must be a multiple of 64 (--min-log 6 or more)"
        ));
    }
    if min_log > max_log {
        return Err(format!("--min-log {min_log} is above --max-log {max_log}"));
    }
    if max_log > 30 {
        return Err(format!(
            "--max-log {max_log}: 2^30 bits is the most this bench tries"
        ));
    }
    if total_log < max_log || total_log > 34 {
        return Err(format!(
            "--total-log {total_log}: NumBits x n = 2^total-log needs --max-log ({max_log}) <= total-log <= 34"
        ));
    }
    let chain = ALL.iter().all(|o| ops.contains(o));
    let mut list: Vec<Config> = (min_log..=max_log)
        .map(|log| {
            let (bits, n) = (1u64 << log, 1u64 << (total_log - log));
            Config {
                bits,
                n,
                ops: ops.to_vec(),
                chain,
                sweep: true,
                bar: bars && BAR_SIZES.contains(&(bits, n)),
            }
        })
        .collect();
    if bars {
        let bar_ops: Vec<Op> = ops
            .iter()
            .copied()
            .filter(|o| matches!(o, Op::Mul | Op::Poly))
            .collect();
        if !bar_ops.is_empty() {
            for (bits, n) in BAR_SIZES {
                if !list.iter().any(|c| c.bits == bits && c.n == n) {
                    list.push(Config {
                        bits,
                        n,
                        ops: bar_ops.clone(),
                        chain,
                        sweep: false,
                        bar: true,
                    });
                }
            }
        }
    }
    Ok(list)
}

/// Milliseconds to move `in_bytes` to the device and `out_bytes` back at the given GB/s.
pub fn transfer_ms(in_bytes: f64, out_bytes: f64, h2d_gbs: f64, d2h_gbs: f64) -> f64 {
    (in_bytes / (h2d_gbs * 1e9) + out_bytes / (d2h_gbs * 1e9)) * 1e3
}

/// x / y where both are there (and the quotient is finite).
fn ratio(x: Option<f64>, y: Option<f64>) -> Option<f64> {
    match (x, y) {
        (Some(x), Some(y)) if y > 0.0 => Some(x / y).filter(|r| r.is_finite()),
        _ => None,
    }
}

/// One operation at one size. Times in milliseconds, medians; `None` where there is no figure.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    pub op: &'static str,
    pub bits: u64,
    pub n: u64,
    pub sweep: bool,
    /// (a) `run`, `Vec<BigUint>` in, a fresh `Vec<BigUint>` out, wall clock.
    pub a_ms: Option<f64>,
    /// (b) `run_into`, u64 limbs in, a reused `Vec<u64>` of limbs out, wall clock.
    pub b_ms: Option<f64>,
    /// (c) `launch` on batches already on the device, then `wait`, wall clock.
    pub c_ms: Option<f64>,
    /// (d) the kernel alone on preallocated device buffers: CUDA events, GPU time only
    /// ([`crate::measure::median_gpu_ms`]).
    pub d_ms: Option<f64>,
    /// Pinned host <-> device bandwidth measured at this size, GB/s.
    pub h2d_gbs: Option<f64>,
    pub d2h_gbs: Option<f64>,
    /// Input bytes / H2D + output bytes / D2H.
    pub transfer_ms: Option<f64>,
    /// (e) max(transfer, (d)).
    pub floor_ms: Option<f64>,
    /// (f) GMP on all host cores (None: not built, or failed).
    pub gmp_ms: Option<f64>,
    pub a_over_floor: Option<f64>,
    pub b_over_floor: Option<f64>,
    pub c_over_d: Option<f64>,
    /// GMP time / (a): how many times faster the user's call is than GMP.
    pub gmp_over_a: Option<f64>,
    /// The paper's metric of (a), (b), (d), (f) in `unit`.
    pub unit: &'static str,
    pub a_metric: Option<f64>,
    pub b_metric: Option<f64>,
    pub d_metric: Option<f64>,
    pub gmp_metric: Option<f64>,
    /// The kernel's schedule and resources.
    pub kernel: String,
    /// The schedule hints of the calls (tuned with `BIGFUSE_AUTOTUNE=1`, else the environment's),
    /// in their text form; `null` where the kernel did not compile.
    pub hints: Option<Hints>,
    pub error: Option<String>,
}

impl Row {
    pub fn new(op: Op, bits: u64, n: u64, sweep: bool) -> Row {
        Row {
            op: op.name(),
            bits,
            n,
            sweep,
            unit: op.unit(),
            ..Row::default()
        }
    }

    /// Bytes a call moves: two operands in, one result out.
    pub fn bytes(&self) -> (f64, f64) {
        let value = self.n as f64 * self.bits as f64 / 8.0;
        (2.0 * value, value)
    }

    /// Fills the floor, ratios and metrics from the timings.
    pub fn finish(&mut self, op: Op) {
        let (in_bytes, out_bytes) = self.bytes();
        self.transfer_ms = match (self.h2d_gbs, self.d2h_gbs) {
            (Some(h), Some(d)) if h > 0.0 && d > 0.0 => {
                Some(transfer_ms(in_bytes, out_bytes, h, d))
            }
            _ => None,
        };
        self.floor_ms = match (self.transfer_ms, self.d_ms) {
            (Some(t), Some(d)) => Some(t.max(d)),
            _ => None,
        };
        self.a_over_floor = ratio(self.a_ms, self.floor_ms);
        self.b_over_floor = ratio(self.b_ms, self.floor_ms);
        self.c_over_d = ratio(self.c_ms, self.d_ms);
        self.gmp_over_a = ratio(self.gmp_ms, self.a_ms);
        let metric = |ms: Option<f64>| {
            ms.filter(|t| *t > 0.0)
                .map(|t| op.metric(self.bits, self.n, t))
        };
        self.a_metric = metric(self.a_ms);
        self.b_metric = metric(self.b_ms);
        self.d_metric = metric(self.d_ms);
        self.gmp_metric = metric(self.gmp_ms);
    }
}

/// The chain x = mul(a, b); y = poly(x, a); z = add(y, b) at one size.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ChainRow {
    pub bits: u64,
    pub n: u64,
    /// Three `launch`es on device batches and one `wait`, wall clock.
    pub wall_ms: Option<f64>,
    /// The same three `launch`es between CUDA events on the main stream (idle before: the host's
    /// time between the launches counts where the GPU waits for it).
    pub events_ms: Option<f64>,
    /// The three kernels launched directly (`GpuProgram::launch`) on preallocated buffers: CUDA
    /// events, GPU time only.
    pub kernels_ms: Option<f64>,
    pub wall_ratio: Option<f64>,
    pub events_ratio: Option<f64>,
    pub error: Option<String>,
}

impl ChainRow {
    pub fn finish(&mut self) {
        self.wall_ratio = ratio(self.wall_ms, self.kernels_ms);
        self.events_ratio = ratio(self.events_ms, self.kernels_ms);
    }
}

/// Everything `bench e2e` measured (the JSON is this, serialized).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub bench: &'static str,
    pub gpu: String,
    pub host_threads: usize,
    pub runs: usize,
    pub total_log: u32,
    pub input_sets: usize,
    pub pcie_copy_bytes: usize,
    pub gmp: String,
    pub rows: Vec<Row>,
    pub chains: Vec<ChainRow>,
    pub bars: Vec<Bar>,
}

impl Report {
    pub fn json(&self) -> String {
        crate::json::pretty(self)
    }

    /// Every missing figure, as `what: why`.
    pub fn failures(&self) -> Vec<String> {
        let rows = self.rows.iter().filter_map(|r| {
            r.error
                .as_ref()
                .map(|e| format!("{} at {} bits x {}: {e}", r.op, r.bits, r.n))
        });
        let chains = self.chains.iter().filter_map(|c| {
            c.error
                .as_ref()
                .map(|e| format!("chain at {} bits x {}: {e}", c.bits, c.n))
        });
        rows.chain(chains).collect()
    }
}

/// `2^k` for a power of two, else the number.
pub fn pow2(x: u64) -> String {
    if x.is_power_of_two() {
        format!("2^{}", x.trailing_zeros())
    } else {
        x.to_string()
    }
}

fn ms(x: Option<f64>) -> String {
    x.map_or("-".into(), number)
}

fn times(x: Option<f64>) -> String {
    x.map_or("-".into(), |r| format!("{r:.2}x"))
}

fn size(bits: u64, n: u64) -> String {
    format!("{} bits x {}", pow2(bits), pow2(n))
}

/// A bar's note where its figure is missing.
pub fn failed_or_not_measured(error: &Option<String>) -> String {
    match error {
        Some(_) => "failed (see the errors above)".into(),
        None => "not measured".into(),
    }
}

/// The Done-when bars at [`BAR_SIZES`]: (b) <= 1.5x floor and (a) <= 2.5x floor for Mul and Poly,
/// (a) >= 3x GMP for Mul at 4096 bits, the chain within 3% of its kernels.
pub fn bars(rows: &[Row], chains: &[ChainRow], gmp_built: bool) -> Vec<Bar> {
    let mut out = Vec::new();
    for (bits, n) in BAR_SIZES {
        for op in [Op::Mul, Op::Poly] {
            let Some(r) = rows
                .iter()
                .find(|r| r.op == op.name() && r.bits == bits && r.n == n)
            else {
                continue;
            };
            let why = failed_or_not_measured(&r.error);
            let at = format!("{} {}", op.name(), size(bits, n));
            out.push(
                Bar::at_most(
                    format!("{at}: (b) run_into / floor"),
                    r.b_over_floor,
                    LIMIT_LIMBS,
                    "x",
                )
                .because(why.clone()),
            );
            out.push(
                Bar::at_most(
                    format!("{at}: (a) run / floor"),
                    r.a_over_floor,
                    LIMIT_BIG,
                    "x",
                )
                .because(why.clone()),
            );
            if op == Op::Mul && bits == 4096 {
                let why = if gmp_built {
                    why
                } else {
                    "GMP not built (--features gmp)".into()
                };
                out.push(
                    Bar::at_least(
                        format!("{at}: (a) speedup over GMP"),
                        r.gmp_over_a,
                        LIMIT_GMP,
                        "x",
                    )
                    .because(why),
                );
            }
        }
        if let Some(c) = chains.iter().find(|c| c.bits == bits && c.n == n) {
            out.push(
                Bar::at_most(
                    format!(
                        "chain {}: launch+wait (wall) / kernels alone",
                        size(bits, n)
                    ),
                    c.wall_ratio,
                    LIMIT_CHAIN,
                    "x",
                )
                .because(failed_or_not_measured(&c.error)),
            );
        }
    }
    out
}

/// The tables: per operation, times, ratios and metrics; then the chain; then the bars.
pub fn tables(report: &Report, ops: &[Op]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GPU: {}; host: {} threads. Medians of {} runs after warm-up, inputs rotating over {} random sets, checked against num-bigint first.\n\
         (a) `run`: Vec<BigUint> in, fresh Vec<BigUint> out; (b) `run_into`: u64 limbs in, reused Vec<u64> of limbs out; \
         (c) `launch` on batches already on the device, then `wait` — (a)-(c) wall clock. \
         (d) the kernel alone (GpuProgram::launch on preallocated device buffers, CUDA events around it, queued behind a device copy so that only GPU time counts). \
         (e) floor = max(PCIe, (d)), PCIe = input bytes / H2D + output bytes / D2H at the pinned bandwidth measured at that size ({} MiB copies, events). \
         (f) GMP: {}.\n",
        report.gpu,
        report.host_threads,
        report.runs,
        report.input_sets,
        report.pcie_copy_bytes >> 20,
        report.gmp
    );
    for &op in ops {
        let mut rows: Vec<&Row> = report.rows.iter().filter(|r| r.op == op.name()).collect();
        if rows.is_empty() {
            continue;
        }
        rows.sort_by_key(|r| (r.bits, r.n));
        let u = op.unit();
        let _ = writeln!(s, "### {} (metric: {u})\n", op.name());
        let _ = writeln!(
            s,
            "| NumBits | n | (a) run ms | (b) run_into ms | (c) launch ms | (d) kernel ms | (e) floor ms | PCIe H2D / D2H GB/s | (f) GMP ms | (a)/(e) | (b)/(e) | (c)/(d) | GMP/(a) | (a) {u} | (b) {u} | (d) {u} | (f) {u} | kernel |"
        );
        let _ = writeln!(s, "|{}", "---|".repeat(18));
        for r in &rows {
            let pcie = match (r.h2d_gbs, r.d2h_gbs) {
                (Some(h), Some(d)) => format!("{h:.1} / {d:.1}"),
                _ => "-".into(),
            };
            let _ = writeln!(
                s,
                "| {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                pow2(r.bits),
                pow2(r.n),
                if r.sweep { "" } else { " (bar)" },
                ms(r.a_ms),
                ms(r.b_ms),
                ms(r.c_ms),
                ms(r.d_ms),
                ms(r.floor_ms),
                pcie,
                ms(r.gmp_ms),
                times(r.a_over_floor),
                times(r.b_over_floor),
                times(r.c_over_d),
                times(r.gmp_over_a),
                ms(r.a_metric),
                ms(r.b_metric),
                ms(r.d_metric),
                ms(r.gmp_metric),
                r.kernel
            );
        }
        for r in rows.iter().filter(|r| r.error.is_some()) {
            let _ = writeln!(
                s,
                "\n- {}: {}",
                size(r.bits, r.n),
                r.error.as_deref().unwrap_or_default()
            );
        }
        s.push('\n');
    }
    if !report.chains.is_empty() {
        let _ = writeln!(
            s,
            "### Chain x = mul(a, b); y = poly(x, a); z = add(y, b)\n\n\
             On device batches: three `launch`es and one `wait` (wall clock; and between CUDA events on an idle stream, the host's gaps included), \
             against the same three kernels launched directly on preallocated buffers (CUDA events, GPU time only, as (d)).\n"
        );
        let _ = writeln!(
            s,
            "| NumBits | n | chain wall ms | chain events ms | kernels alone ms | wall / kernels | events / kernels |"
        );
        let _ = writeln!(s, "|{}", "---|".repeat(7));
        let mut chains: Vec<&ChainRow> = report.chains.iter().collect();
        chains.sort_by_key(|c| (c.bits, c.n));
        for c in &chains {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} |",
                pow2(c.bits),
                pow2(c.n),
                ms(c.wall_ms),
                ms(c.events_ms),
                ms(c.kernels_ms),
                times(c.wall_ratio),
                times(c.events_ratio)
            );
        }
        for c in chains.iter().filter(|c| c.error.is_some()) {
            let _ = writeln!(
                s,
                "\n- {}: {}",
                size(c.bits, c.n),
                c.error.as_deref().unwrap_or_default()
            );
        }
        s.push('\n');
    }
    if !report.bars.is_empty() {
        s.push_str(&crate::bars::block(
            "Done when (issue 10, item 5)",
            &report.bars,
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_sweep_then_bar_sizes() {
        let c = configs(9, 18, 28, &ALL, true).unwrap();
        assert_eq!(c.len(), 11);
        assert_eq!((c[0].bits, c[0].n), (512, 1 << 19));
        assert_eq!((c[9].bits, c[9].n), (1 << 18, 1 << 10));
        // 4096 x 2^16 is in the sweep (2^28 bits); 2^15 x 2^12 is not (the sweep has 2^13).
        assert!(c[3].bar && c[3].sweep && c[3].bits == 4096);
        assert_eq!(
            c[10],
            Config {
                bits: 32768,
                n: 1 << 12,
                ops: vec![Op::Mul, Op::Poly],
                chain: true,
                sweep: false,
                bar: true
            }
        );
        assert!(c.iter().filter(|c| c.bar).count() == 2);
        // Add alone: no chain, no bar sizes.
        let add = configs(9, 10, 28, &[Op::Add], true).unwrap();
        assert_eq!(add.len(), 2);
        assert!(add
            .iter()
            .all(|c| !c.chain && !c.bar && c.ops == vec![Op::Add]));
        // A sweep that misses 4096 gets both bar sizes, with its own operations only.
        let m = configs(9, 9, 28, &[Op::Poly], true).unwrap();
        assert_eq!(m.len(), 3);
        assert!(m[1..].iter().all(|c| c.ops == vec![Op::Poly] && !c.chain));
        assert_eq!(configs(9, 9, 28, &ALL, false).unwrap().len(), 1);
        assert!(configs(5, 9, 28, &ALL, true)
            .unwrap_err()
            .contains("multiple of 64"));
        assert!(configs(10, 9, 28, &ALL, true).is_err());
        assert!(configs(9, 18, 17, &ALL, true)
            .unwrap_err()
            .contains("--total-log"));
    }

    fn row(op: Op, bits: u64, n: u64) -> Row {
        let mut r = Row::new(op, bits, n, true);
        r.a_ms = Some(30.0);
        r.b_ms = Some(12.0);
        r.c_ms = Some(5.5);
        r.d_ms = Some(5.0);
        r.h2d_gbs = Some(50.0);
        r.d2h_gbs = Some(40.0);
        r.gmp_ms = Some(120.0);
        r.finish(op);
        r
    }

    #[test]
    fn floors_ratios_and_metrics() {
        // 2^16 x 4096 bits: 32 MiB per value column; 64 MiB in at 50 GB/s, 32 MiB out at 40 GB/s.
        let r = row(Op::Mul, 4096, 1 << 16);
        let mib = (1u64 << 25) as f64;
        let t = 2.0 * mib / 50e9 * 1e3 + mib / 40e9 * 1e3;
        assert!((r.transfer_ms.unwrap() - t).abs() < 1e-9);
        assert!((t - 2.1811).abs() < 1e-3, "{t}");
        // The kernel (5 ms) is the larger part of the floor here.
        assert_eq!(r.floor_ms, Some(5.0));
        assert_eq!(r.a_over_floor, Some(6.0));
        assert_eq!(r.b_over_floor, Some(2.4));
        assert!((r.c_over_d.unwrap() - 1.1).abs() < 1e-12);
        assert_eq!(r.gmp_over_a, Some(4.0));
        let want = Op::Mul.metric(4096, 1 << 16, 5.0);
        assert_eq!(r.d_metric, Some(want));
        assert_eq!(r.unit, "Gu32ops/s");
        // A transfer-bound size: the floor is the PCIe time.
        let mut a = Row::new(Op::Add, 512, 1 << 19, true);
        a.d_ms = Some(0.03);
        a.h2d_gbs = Some(50.0);
        a.d2h_gbs = Some(50.0);
        a.finish(Op::Add);
        assert!((a.floor_ms.unwrap() - 3.0 * mib / 50e9 * 1e3).abs() < 1e-9);
        // Missing figures stay missing.
        let mut e = Row::new(Op::Poly, 512, 8, true);
        e.finish(Op::Poly);
        assert_eq!((e.floor_ms, e.a_over_floor, e.a_metric), (None, None, None));
    }

    fn report() -> Report {
        let mut failed = Row::new(Op::Poly, 32768, 1 << 12, false);
        failed.error = Some("instance 3 at 32768 bits differs from \"num-bigint\"".into());
        failed.finish(Op::Poly);
        let mut tuned = row(Op::Mul, 4096, 1 << 16);
        tuned.hints = Some(Hints {
            q: Some(4),
            min_blocks: Some(1),
            ..Hints::default()
        });
        let rows = vec![
            tuned,
            row(Op::Poly, 4096, 1 << 16),
            row(Op::Mul, 32768, 1 << 12),
            failed,
            row(Op::Add, 512, 1 << 19),
        ];
        let mut chain = ChainRow {
            bits: 4096,
            n: 1 << 16,
            wall_ms: Some(10.2),
            events_ms: Some(10.06),
            kernels_ms: Some(10.0),
            ..ChainRow::default()
        };
        chain.finish();
        let chains = vec![chain];
        Report {
            bench: "e2e",
            gpu: crate::json::tests::AWKWARD_GPU.into(),
            host_threads: 16,
            runs: 10,
            total_log: 28,
            input_sets: SETS,
            pcie_copy_bytes: 256 << 20,
            gmp: crate::gmp::describe(),
            bars: bars(&rows, &chains, true),
            rows,
            chains,
        }
    }

    #[test]
    fn bars_follow_the_issue() {
        let r = report();
        let lines: Vec<String> = r.bars.iter().map(|b| b.line()).collect();
        // mul 4096: (b) 2.4x > 1.5x fails, (a) 6x > 2.5x fails, GMP 4x >= 3x passes;
        // poly 4096: two; chain 4096: 1.02 passes; mul 2^15: two; poly 2^15: failed, not measured.
        assert_eq!(r.bars.len(), 3 + 2 + 1 + 2 + 2, "{lines:#?}");
        assert_eq!(
            lines[0],
            "FAIL  mul 2^12 bits x 2^16: (b) run_into / floor: 2.40x <= 1.50x"
        );
        assert_eq!(
            lines[2],
            "PASS  mul 2^12 bits x 2^16: (a) speedup over GMP: 4.00x >= 3.00x"
        );
        assert!(
            lines[5].starts_with("PASS  chain 2^12 bits x 2^16"),
            "{}",
            lines[5]
        );
        assert!(
            lines[8].starts_with(
                "n/a   poly 2^15 bits x 2^12: (b) run_into / floor: failed (see the errors above)"
            ),
            "{}",
            lines[8]
        );
        let mut rows = r.rows.clone();
        for row in &mut rows {
            row.gmp_ms = None;
            row.finish(Op::Mul);
        }
        let no_gmp = bars(&rows, &r.chains, false);
        assert!(
            no_gmp[2].line().contains("GMP not built"),
            "{}",
            no_gmp[2].line()
        );
    }

    #[test]
    fn tables_and_json() {
        let r = report();
        let t = tables(&r, &ALL);
        assert!(t.contains("### mul (metric: Gu32ops/s)"), "{t}");
        assert!(t.contains("| 2^12 | 2^16 | 30.0 | 12.0 | 5.50 | 5.00 | 5.00 | 50.0 / 40.0 | 120 | 6.00x | 2.40x | 1.10x | 4.00x |"), "{t}");
        assert!(t.contains("| 2^15 | 2^12 (bar) | - |"), "{t}");
        assert!(t.contains("- 2^15 bits x 2^12: instance 3"), "{t}");
        assert!(
            t.contains("| 2^12 | 2^16 | 10.2 | 10.1 | 10.0 | 1.02x | 1.01x |"),
            "{t}"
        );
        assert!(t.contains("Done when (issue 10, item 5): "), "{t}");
        // Every table row has as many cells as its header.
        for block in t.split("\n\n") {
            let lines: Vec<&str> = block.lines().filter(|l| l.starts_with('|')).collect();
            if let Some(h) = lines.first() {
                let cells = h.matches('|').count();
                for l in &lines {
                    assert_eq!(l.matches('|').count(), cells, "{l}");
                }
            }
        }
        let v = crate::json::tests::gpu_reads_back(&r.json(), "/gpu");
        assert_eq!(v["rows"][0]["op"], "mul");
        // Hints in their serde form (the text form), read back by the one parser.
        assert_eq!(
            v["rows"][0]["hints"],
            "q=4,block=-,width=-,minb=1,ntt=-,chunk=-,thread=-,group=-,divw=-,span=-,gntt=-,coords=-,park=-"
        );
        let hints: Hints = serde_json::from_value(v["rows"][0]["hints"].clone()).unwrap();
        assert_eq!(Some(hints), r.rows[0].hints);
        assert!(v["rows"][3]["hints"].is_null());
        crate::json::tests::same_shape(
            &v,
            include_str!("../results/e2e-h100-2026-11-23-final-bars.json"),
            &[
                ("", &[]),
                ("/rows/0", &["hints"]),
                ("/chains/0", &[]),
                ("/bars/0", &[]),
            ],
        );
        assert_eq!(v["rows"][0]["floor_ms"], 5.0);
        assert!(v["rows"][3]["a_ms"].is_null());
        assert!(v["rows"][3]["error"]
            .as_str()
            .unwrap()
            .contains("\"num-bigint\""));
        assert_eq!(v["chains"][0]["n"], 65536);
        assert_eq!(v["bars"][0]["pass"], false);
        assert_eq!(r.failures().len(), 1);
    }

    #[test]
    fn powers_of_two() {
        assert_eq!(pow2(4096), "2^12");
        assert_eq!(pow2(1), "2^0");
        assert_eq!(pow2(1000), "1000");
    }
}

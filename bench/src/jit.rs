//! `bench jit`: how long a call waits for the compiler, and what a call costs above its kernel.
//!
//! For each case (operation, NumBits), in fresh child processes (this binary's hidden `jit-child`
//! subcommand): (1) cold, with an empty `BIGFUSE_CACHE_DIR`: the time from just after the device is
//! open (its opening timed apart) to the first correct result of a small batch, through `run`
//! (`Vec<BigUint>` in and out), so it holds building the IR, planning, code generation, NVRTC and
//! loading the module; (2) warm, with that cache directory filled by the cold process, the same
//! measurement (median of several processes); (3) in the last warm process, the median wall time of
//! calls at batch 1 (`run_into` limbs to limbs, and `run` BigUint to BigUint) and of the kernel
//! alone at batch 1 (CUDA events around `GpuProgram::launch` on preallocated buffers); the
//! overhead is the difference.

use crate::bars::{number, Bar};
use crate::e2e::random_operands;
use crate::measure::{
    median, median_gpu_warm_ms, median_ms, median_wall_ms, verify, verify_big, Busy,
};
use crate::ops::Op;
use bigfuse::runtime::GpuDevice;
use bigfuse::Device;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

pub const DEFAULT_CASES: &str =
    "add:64,add:4096,mul:4096,mul:32768,poly:4096,poly:32768,poly:262144";

/// Warm first result, at most (ms).
pub const LIMIT_WARM_MS: f64 = 50.0;
/// A call at batch 1 above its kernel, at most (us), for these cases.
pub const LIMIT_OVERHEAD_US: f64 = 20.0;
pub const OVERHEAD_CASES: [(Op, u64); 2] = [(Op::Poly, 32768), (Op::Add, 64)];
/// Cold first result, at most (ms).
pub const COLD_LIMITS: [(Op, u64, f64); 3] = [
    (Op::Poly, 32768, 1000.0),
    (Op::Poly, 262144, 1500.0),
    (Op::Add, 4096, 300.0),
];

/// The line a child prints its figures on (JSON after the tag).
const CHILD_TAG: &str = "BIGFUSE_JIT_CHILD ";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    pub op: Op,
    pub bits: u64,
}

/// `op:bits` items, comma-separated; bits as a number or `2^k`, a positive multiple of 64.
pub fn parse_cases(items: &[String]) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for item in items.iter().flat_map(|s| s.split(',')) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (op, bits) = item
            .split_once(':')
            .ok_or_else(|| format!("case `{item}`: write op:bits, e.g. poly:32768"))?;
        let op = Op::parse(op)?;
        let bits = parse_bits(bits).map_err(|e| format!("case `{item}`: {e}"))?;
        cases.push(Case { op, bits });
    }
    if cases.is_empty() {
        return Err("no case given: e.g. --cases add:64,poly:32768".into());
    }
    Ok(cases)
}

/// NumBits as `32768` or `2^15`: a positive multiple of 64.
pub fn parse_bits(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bits = match t.strip_prefix("2^") {
        Some(e) => {
            let e: u32 = e
                .parse()
                .map_err(|_| format!("`{t}` is not a power of two"))?;
            1u64.checked_shl(e)
                .filter(|_| e < 40)
                .ok_or_else(|| format!("`{t}` is too large"))?
        }
        None => t
            .parse()
            .map_err(|_| format!("`{t}` is not a number of bits"))?,
    };
    if bits == 0 || bits % 64 != 0 {
        return Err(format!(
            "{bits} bits: NumBits must be a positive multiple of 64"
        ));
    }
    Ok(bits)
}

/// What one child process measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildReport {
    pub gpu: String,
    /// Opening the device (driver, context, streams), ms.
    pub open_ms: f64,
    /// From just after the device is open to the first result of `n` instances, ms.
    pub first_ms: f64,
    /// From the same moment until the tuned kernel is loaded (`Kernel::prepare` after the first
    /// result: a first call may be served by the compact tier while the tuned kernel compiles,
    /// `bigfuse::runtime::tiers`), ms.
    #[serde(default)]
    pub tuned_ms: Option<f64>,
    pub n: usize,
    /// At batch 1, medians (only in the process asked for them): the kernel alone, GPU time
    /// (events, queued behind a busy copy), us.
    pub kernel_us: Option<f64>,
    /// The same events on an idle stream: the host's time to queue the launch counts too, us.
    #[serde(default)]
    pub kernel_idle_us: Option<f64>,
    /// `run_into`, limbs in and out, wall clock, us.
    pub run_into_limbs_us: Option<f64>,
    /// `run`, BigUint in and out, wall clock, us.
    pub run_big_us: Option<f64>,
}

/// The hidden `jit-child` subcommand: measures one process's first call (and, with `calls > 0`,
/// the per-call figures at batch 1) and returns the line to print.
pub fn child(op: Op, bits: u64, n: usize, calls: usize) -> Result<String, String> {
    let r = child_measure(op, bits, n, calls).map_err(|e| e.to_string())?;
    let json = serde_json::to_string(&r).map_err(|e| format!("writing the figures: {e}"))?;
    Ok(format!("{CHILD_TAG}{json}"))
}

fn child_measure(op: Op, bits: u64, n: usize, calls: usize) -> bigfuse::Result<ChildReport> {
    if bits == 0 || !bits.is_multiple_of(64) || n == 0 {
        return Err(bigfuse::Error::Argument {
            kernel: op.name().into(),
            message: format!("jit-child: {bits} bits x {n} instances"),
        });
    }
    // The inputs exist before the clock starts.
    let (al, bl) = random_operands(bits, n as u64, 0);
    let (a, b) = (
        crate::measure::bigs(&al, bits),
        crate::measure::bigs(&bl, bits),
    );
    let start = Instant::now();
    let gpu = Arc::new(GpuDevice::new(0)?);
    let open_ms = start.elapsed().as_secs_f64() * 1e3;
    let dev = Device::Gpu(gpu.clone());
    let start = Instant::now();
    let got = op.run_big(&dev, bits, &a, &b)?;
    let first_ms = start.elapsed().as_secs_f64() * 1e3;
    verify_big((&a, &b), op.name(), bits, &got, op.reference())?;
    op.kernel()?.prepare(&gpu, &[bits])?;
    let tuned_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut r = ChildReport {
        gpu: gpu.target().name.clone(),
        open_ms,
        first_ms,
        tuned_ms: Some(tuned_ms),
        n,
        ..ChildReport::default()
    };
    if calls > 0 {
        per_call(&mut r, op, &dev, &gpu, bits, calls)?;
    }
    Ok(r)
}

/// Untimed calls before the per-call figures: enough for the GPU's clocks to leave their idle
/// state (an idle H100 runs its SMs at a fraction of their clock).
const CALL_WARMUP: usize = 1000;

fn per_call(
    r: &mut ChildReport,
    op: Op,
    dev: &Device,
    gpu: &GpuDevice,
    bits: u64,
    calls: usize,
) -> bigfuse::Result<()> {
    let (al, bl) = random_operands(bits, 1, 1);
    let (a, b) = (
        crate::measure::bigs(&al, bits),
        crate::measure::bigs(&bl, bits),
    );
    let reference = op.reference();
    let program = crate::e2e::program(op, gpu, bits)?;
    let (ad, bd) = (gpu.upload(&al, "a")?, gpu.upload(&bl, "b")?);
    let mut outs = vec![gpu.alloc(al.len(), "the result")?];
    let mut limbs = Vec::new();
    op.run_into_limbs(dev, bits, &al, &bl, &mut limbs)?;
    verify(
        (&al, &bl),
        "run_into at batch 1",
        bits,
        1,
        &limbs,
        reference,
    )?;
    verify_big(
        (&a, &b),
        "run at batch 1",
        bits,
        &op.run_big(dev, bits, &a, &b)?,
        reference,
    )?;
    program.launch(gpu, 1, &[&ad, &bd], &mut outs)?;
    let got = gpu.download(&outs[0], "the result")?;
    verify(
        (&al, &bl),
        "the kernel at batch 1",
        bits,
        1,
        &got,
        reference,
    )?;
    // The kernel's own GPU time (queued behind a busy copy, so that the host's launch time is
    // left out, and behind three runs of itself, so that its caches are as a repeated call finds
    // them).
    let mut busy = Busy::new(gpu)?;
    let kernel = median_gpu_warm_ms(gpu, calls, &mut busy, || {
        program.launch(gpu, 1, &[&ad, &bd], &mut outs)
    })?;
    let idle = median_ms(gpu, calls, || {
        program.launch(gpu, 1, &[&ad, &bd], &mut outs)
    })?;
    let into = median_wall_ms(CALL_WARMUP, calls, |_| {
        op.run_into_limbs(dev, bits, &al, &bl, &mut limbs)
    })?;
    let big = median_wall_ms(CALL_WARMUP, calls, |_| op.run_big(dev, bits, &a, &b))?;
    r.kernel_us = Some(kernel * 1e3);
    r.kernel_idle_us = Some(idle * 1e3);
    r.run_into_limbs_us = Some(into * 1e3);
    r.run_big_us = Some(big * 1e3);
    Ok(())
}

/// The child's figures from its standard output (the tagged line).
pub fn parse_child_output(stdout: &str) -> Result<ChildReport, String> {
    let line = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(CHILD_TAG))
        .ok_or("the child process printed no figures")?;
    serde_json::from_str(line)
        .map_err(|e| format!("the child's figures are unreadable ({e}): {line}"))
}

/// The last `lines` lines of a process's error output.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn spawn_child(case: Case, n: usize, calls: usize, cache: &Path) -> Result<ChildReport, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the bench binary: {e}"))?;
    let out = std::process::Command::new(&exe)
        .args(["jit-child", "--op", case.op.name()])
        .args(["--bits", &case.bits.to_string()])
        .args(["--n", &n.to_string()])
        .args(["--calls", &calls.to_string()])
        .env("BIGFUSE_CACHE_DIR", cache)
        .env_remove("BIGFUSE_NO_DISK_CACHE")
        // NVRTC (CUDA 12.9+) and the driver keep caches of their own across processes, which
        // would make a second "cold" start warm: measured on an H100, Poly at 2^14 bits took
        // 1087 ms, then 52 ms in the next process, 590 ms with this set. Only bigfuse's own
        // cache may serve the warm processes.
        .env("CUDA_CACHE_DISABLE", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "the child process failed ({}): {}",
            out.status,
            tail(&String::from_utf8_lossy(&out.stderr), 8)
        ));
    }
    parse_child_output(&stdout)
}

/// Files under `dir`, recursively.
fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        count_files(&p)
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// One case's figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    pub op: &'static str,
    pub bits: u64,
    pub cold_open_ms: Option<f64>,
    pub cold_first_ms: Option<f64>,
    /// The cold process's tuned kernel loaded (after its first result).
    pub cold_tuned_ms: Option<f64>,
    /// Medians over the warm processes.
    pub warm_open_ms: Option<f64>,
    pub warm_first_ms: Option<f64>,
    /// Each warm process's first result.
    pub warm_first_each_ms: Vec<f64>,
    pub kernel_us: Option<f64>,
    /// The kernel between events on an idle stream (host launch time included).
    pub kernel_idle_us: Option<f64>,
    pub run_into_limbs_us: Option<f64>,
    pub run_into_overhead_us: Option<f64>,
    pub run_big_us: Option<f64>,
    pub run_big_overhead_us: Option<f64>,
    /// Files the cold process left in its cache directory.
    pub cache_files: usize,
    pub error: Option<String>,
}

impl Row {
    /// The row from the cold process and the warm ones (the last holds the per-call figures).
    pub fn from_children(case: Case, cold: Option<&ChildReport>, warm: &[ChildReport]) -> Row {
        let med = |f: fn(&ChildReport) -> f64| {
            let mut v: Vec<f64> = warm.iter().map(f).collect();
            Some(median(&mut v)).filter(|x| x.is_finite())
        };
        let last = warm.iter().rev().find(|w| w.kernel_us.is_some());
        let kernel_us = last.and_then(|w| w.kernel_us);
        let over = |x: Option<f64>| Some(x? - kernel_us?);
        let run_into_limbs_us = last.and_then(|w| w.run_into_limbs_us);
        let run_big_us = last.and_then(|w| w.run_big_us);
        Row {
            op: case.op.name(),
            bits: case.bits,
            cold_open_ms: cold.map(|c| c.open_ms),
            cold_first_ms: cold.map(|c| c.first_ms),
            cold_tuned_ms: cold.and_then(|c| c.tuned_ms),
            warm_open_ms: med(|w| w.open_ms),
            warm_first_ms: med(|w| w.first_ms),
            warm_first_each_ms: warm.iter().map(|w| w.first_ms).collect(),
            kernel_us,
            kernel_idle_us: last.and_then(|w| w.kernel_idle_us),
            run_into_limbs_us,
            run_into_overhead_us: over(run_into_limbs_us),
            run_big_us,
            run_big_overhead_us: over(run_big_us),
            cache_files: 0,
            error: None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub bench: &'static str,
    pub gpu: String,
    /// Instances of the first call.
    pub n: usize,
    pub warm_processes: usize,
    /// Calls per per-call figure.
    pub calls: usize,
    pub rows: Vec<Row>,
    pub bars: Vec<Bar>,
}

impl Report {
    pub fn json(&self) -> String {
        crate::json::pretty(self)
    }

    pub fn failures(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|r| {
                r.error
                    .as_ref()
                    .map(|e| format!("{} at {} bits: {e}", r.op, r.bits))
            })
            .collect()
    }
}

pub struct Options {
    pub cases: Vec<Case>,
    pub n: usize,
    pub warm_processes: usize,
    pub calls: usize,
    pub keep_cache: bool,
}

pub fn run(o: &Options) -> Result<Report, String> {
    if o.n == 0 || o.warm_processes == 0 || o.calls == 0 {
        return Err("--n, --warm and --calls must be at least 1".into());
    }
    let mut rows = Vec::new();
    let mut gpu = String::new();
    for &case in &o.cases {
        if crate::stopped() {
            break;
        }
        let dir: PathBuf = std::env::temp_dir().join(format!(
            "bigfuse-jit-{}-{}-{}",
            std::process::id(),
            case.op.name(),
            case.bits
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let row = (|| -> Result<Row, String> {
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("creating {}: {e}", dir.display()))?;
            eprintln!("  {} {} bits: cold process", case.op.name(), case.bits);
            let cold = spawn_child(case, o.n, 0, &dir).map_err(|e| format!("cold: {e}"))?;
            gpu = cold.gpu.clone();
            let files = count_files(&dir);
            if files == 0 {
                return Err(format!(
                    "the cold process left nothing in {}: is the disk cache off?",
                    dir.display()
                ));
            }
            let mut warm = Vec::new();
            for i in 0..o.warm_processes {
                let last = i + 1 == o.warm_processes;
                eprintln!(
                    "  {} {} bits: warm process {}{}",
                    case.op.name(),
                    case.bits,
                    i + 1,
                    if last { " (and calls at batch 1)" } else { "" }
                );
                let calls = if last { o.calls } else { 0 };
                warm.push(spawn_child(case, o.n, calls, &dir).map_err(|e| format!("warm: {e}"))?);
            }
            let mut row = Row::from_children(case, Some(&cold), &warm);
            row.cache_files = files;
            Ok(row)
        })();
        if o.keep_cache {
            eprintln!("    cache kept in {}", dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
        rows.push(row.unwrap_or_else(|e| {
            eprintln!("    failed: {e}");
            Row {
                op: case.op.name(),
                bits: case.bits,
                error: Some(e),
                ..Row::default()
            }
        }));
    }
    Ok(Report {
        bench: "jit",
        gpu,
        n: o.n,
        warm_processes: o.warm_processes,
        calls: o.calls,
        bars: bars(&rows),
        rows,
    })
}

/// The bars for the cases measured: cold first results, warm first results <= 50 ms,
/// per-call overhead <= 20 us for Poly at 2^15 and add at 64 bits.
pub fn bars(rows: &[Row]) -> Vec<Bar> {
    let mut out = Vec::new();
    let find = |op: Op, bits: u64| rows.iter().find(|r| r.op == op.name() && r.bits == bits);
    let why = |r: &Row| crate::e2e_report::failed_or_not_measured(&r.error);
    for (op, bits, limit) in COLD_LIMITS {
        if let Some(r) = find(op, bits) {
            out.push(
                Bar::at_most(
                    format!("{} {bits} bits: cold first result", op.name()),
                    r.cold_first_ms,
                    limit,
                    " ms",
                )
                .because(why(r)),
            );
        }
    }
    for r in rows {
        out.push(
            Bar::at_most(
                format!("{} {} bits: warm first result", r.op, r.bits),
                r.warm_first_ms,
                LIMIT_WARM_MS,
                " ms",
            )
            .because(why(r)),
        );
    }
    for (op, bits) in OVERHEAD_CASES {
        if let Some(r) = find(op, bits) {
            out.push(
                Bar::at_most(
                    format!(
                        "{} {bits} bits: run_into (limbs) at batch 1 over the kernel",
                        op.name()
                    ),
                    r.run_into_overhead_us,
                    LIMIT_OVERHEAD_US,
                    " us",
                )
                .because(why(r)),
            );
            out.push(
                Bar::at_most(
                    format!(
                        "{} {bits} bits: run (BigUint) at batch 1 over the kernel",
                        op.name()
                    ),
                    r.run_big_overhead_us,
                    LIMIT_OVERHEAD_US,
                    " us",
                )
                .because(why(r)),
            );
        }
    }
    out
}

fn cell(x: Option<f64>) -> String {
    x.map_or("-".into(), number)
}

/// `x (+y)`: a call's time and its overhead over the kernel.
fn with_overhead(x: Option<f64>, over: Option<f64>) -> String {
    match (x, over) {
        (Some(x), Some(o)) => format!(
            "{} ({}{})",
            number(x),
            if o >= 0.0 { "+" } else { "" },
            number(o)
        ),
        (x, _) => cell(x),
    }
}

pub fn table(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GPU: {}. First result: from just after the device is open to the first correct result of {} instance(s) through `run` (BigUint in and out), \
         in a fresh process: cold = empty BIGFUSE_CACHE_DIR; warm = the directory the cold process filled (median of {} processes). \
         Cold tuned kernel: from the same moment until the tuned kernel is loaded (a first call of a kernel that is slow to compile runs its compact tier meanwhile). \
         Per call: medians of {} calls at batch 1 in the last warm process, wall clock; kernel = CUDA events around GpuProgram::launch at batch 1, queued behind a device copy so that only GPU time counts; (+x) = above the kernel.\n",
        r.gpu, r.n, r.warm_processes, r.calls
    );
    let _ = writeln!(
        s,
        "| op | NumBits | cold: open ms | cold: first result ms | cold: tuned kernel ms | warm: open ms | warm: first result ms | kernel us (batch 1) | run_into limbs us | run BigUint us | cache files |"
    );
    let _ = writeln!(s, "|{}", "---|".repeat(11));
    for row in &r.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.op,
            row.bits,
            cell(row.cold_open_ms),
            cell(row.cold_first_ms),
            cell(row.cold_tuned_ms),
            cell(row.warm_open_ms),
            cell(row.warm_first_ms),
            cell(row.kernel_us),
            with_overhead(row.run_into_limbs_us, row.run_into_overhead_us),
            with_overhead(row.run_big_us, row.run_big_overhead_us),
            row.cache_files
        );
    }
    for row in r.rows.iter().filter(|x| x.error.is_some()) {
        let _ = writeln!(
            s,
            "\n- {} {} bits: {}",
            row.op,
            row.bits,
            row.error.as_deref().unwrap_or_default()
        );
    }
    s.push('\n');
    s.push_str(&crate::bars::block("Done when (issue 10, item 5)", &r.bars));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cases() {
        let c = parse_cases(&[DEFAULT_CASES.to_string()]).unwrap();
        assert_eq!(c.len(), 7);
        assert_eq!(
            c[0],
            Case {
                op: Op::Add,
                bits: 64
            }
        );
        assert_eq!(
            c[6],
            Case {
                op: Op::Poly,
                bits: 262144
            }
        );
        let c = parse_cases(&["mul:2^15".into(), "poly:4096".into()]).unwrap();
        assert_eq!(
            c,
            vec![
                Case {
                    op: Op::Mul,
                    bits: 32768
                },
                Case {
                    op: Op::Poly,
                    bits: 4096
                }
            ]
        );
        assert!(parse_cases(&["poly".into()])
            .unwrap_err()
            .contains("op:bits"));
        assert!(parse_cases(&["poly:100".into()])
            .unwrap_err()
            .contains("multiple of 64"));
        assert!(parse_cases(&["poly:2^x".into()]).is_err());
        assert!(parse_cases(&["div:64".into()]).is_err());
        assert!(parse_cases(&[String::new()]).is_err());
        assert!(parse_bits("2^99").is_err());
    }

    fn child(first: f64, per_call: bool) -> ChildReport {
        ChildReport {
            // A newline in the name must not break the one-line figures.
            gpu: crate::json::tests::AWKWARD_GPU.into(),
            open_ms: 300.0,
            first_ms: first,
            tuned_ms: Some(first + 900.0),
            n: 4,
            kernel_us: per_call.then_some(5.0),
            kernel_idle_us: per_call.then_some(9.0),
            run_into_limbs_us: per_call.then_some(21.0),
            run_big_us: per_call.then_some(30.5),
        }
    }

    #[test]
    fn child_output_round_trips() {
        let c = child(12.5, true);
        let line = format!(
            "some log line\n{CHILD_TAG}{}\n",
            serde_json::to_string(&c).unwrap()
        );
        assert_eq!(parse_child_output(&line).unwrap(), c);
        assert!(parse_child_output("nothing here")
            .unwrap_err()
            .contains("no figures"));
        assert!(parse_child_output(&format!("{CHILD_TAG}{{"))
            .unwrap_err()
            .contains("unreadable"));
        assert_eq!(tail("a\nb\nc", 2), "b\nc");
    }

    fn report() -> Report {
        let case = |op, bits| Case { op, bits };
        let warm = [child(20.0, false), child(60.0, false), child(30.0, true)];
        let mut rows = vec![
            Row::from_children(case(Op::Poly, 32768), Some(&child(800.0, false)), &warm),
            Row::from_children(case(Op::Add, 64), Some(&child(200.0, false)), &warm[2..]),
            Row {
                op: "poly",
                bits: 262144,
                error: Some("cold: the child process failed".into()),
                ..Row::default()
            },
        ];
        rows[0].cache_files = 3;
        Report {
            bench: "jit",
            gpu: crate::json::tests::AWKWARD_GPU.into(),
            n: 4,
            warm_processes: 3,
            calls: 200,
            bars: bars(&rows),
            rows,
        }
    }

    #[test]
    fn rows_bars_and_table() {
        let r = report();
        let p = &r.rows[0];
        assert_eq!(p.warm_first_ms, Some(30.0));
        assert_eq!(p.warm_first_each_ms, vec![20.0, 60.0, 30.0]);
        assert_eq!(p.run_into_overhead_us, Some(16.0));
        assert_eq!(p.run_big_overhead_us, Some(25.5));
        let lines: Vec<String> = r.bars.iter().map(|b| b.line()).collect();
        // cold: poly 2^15 passes, poly 2^18 not measured; warm: three; overhead: four.
        assert_eq!(lines.len(), 2 + 3 + 4, "{lines:#?}");
        assert_eq!(
            lines[0],
            "PASS  poly 32768 bits: cold first result: 800 ms <= 1000 ms"
        );
        assert!(lines[1].starts_with(
            "n/a   poly 262144 bits: cold first result: failed (see the errors above)"
        ));
        assert_eq!(lines[5], "PASS  poly 32768 bits: run_into (limbs) at batch 1 over the kernel: 16.0 us <= 20.0 us");
        assert!(
            lines[6].starts_with("FAIL  poly 32768 bits: run (BigUint)"),
            "{}",
            lines[6]
        );
        let t = table(&r);
        assert!(t.contains("| poly | 32768 | 300 | 800 | 1700 | 300 | 30.0 | 5.00 | 21.0 (+16.0) | 30.5 (+25.5) | 3 |"), "{t}");
        assert!(
            t.contains("| poly | 262144 | - | - | - | - | - | - | - | - | 0 |"),
            "{t}"
        );
        assert!(
            t.contains("- poly 262144 bits: cold: the child process failed"),
            "{t}"
        );
        let v = crate::json::tests::gpu_reads_back(&r.json(), "/gpu");
        crate::json::tests::same_shape(
            &v,
            include_str!("../results/jit-h100-2026-11-23.json"),
            &[("", &[]), ("/rows/0", &["cold_tuned_ms"]), ("/bars/0", &[])],
        );
        assert_eq!(v["rows"][0]["run_into_overhead_us"], 16.0);
        assert!(v["rows"][2]["cold_first_ms"].is_null());
        assert_eq!(r.failures().len(), 1);
    }
}

//! `bench add`: the reference paper's Table 1 (1-Add and 6-Add, GB/s), with a device-to-device copy
//! of the same bytes measured in the same run. Needs a GPU.

use bigfuse::runtime::{GpuDevice, GpuKernel};
use bigfuse::{BigUint, Hints, Kernel};
use clap::{Parser, Subcommand};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::fmt::Write as _;
use std::sync::Arc;

#[bigfuse::kernel]
fn add1(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a + b
}

/// The anchors' 6-Add, exactly as written (no algebraic rewriting): r = 6a + 10b.
#[bigfuse::kernel]
fn add6(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let t1 = a + b;
    let t2 = t1 + t1;
    let t3 = t2 + b;
    let t4 = t3 + t3;
    let t5 = t4 + t3;
    t5 + b
}

#[bigfuse::kernel]
fn mul1(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a * b
}

/// The reference paper's Poly, counted as four multiplications.
#[bigfuse::kernel]
fn poly(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let a2 = a * a;
    let b2 = b * b;
    (a2 + b) * (b2 + b) + a * b
}

#[derive(Parser)]
#[command(about = "bigfuse benchmarks (paper metrics; GPU required)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// 1-Add and 6-Add in GB/s = 3*NumInsts*NumBits/8 / time, NumBits x NumInsts = 2^32.
    Add {
        /// log2 of the smallest NumBits
        #[arg(long, default_value_t = 9)]
        min_log: u32,
        /// log2 of the largest NumBits
        #[arg(long, default_value_t = 18)]
        max_log: u32,
        /// timed runs per figure (the median is reported)
        #[arg(long, default_value_t = 25)]
        runs: usize,
        /// also time these Q values (elements per thread) and report each
        #[arg(long, value_delimiter = ',')]
        sweep_q: Vec<u32>,
        /// write the figures here as JSON
        #[arg(long)]
        json: Option<std::path::PathBuf>,
    },
    /// Plan, driver resources and one checked launch of the bench kernels at some sizes.
    Probe {
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "64,512,2048,4096,32768,262144"
        )]
        bits: Vec<u64>,
    },
    /// 1-Mul and Poly in Gu32ops/s = 300*NumInsts*m*log2(m) / time (Poly: four products), m = NumBits/32.
    Mul {
        #[arg(long, default_value_t = 9)]
        min_log: u32,
        #[arg(long, default_value_t = 18)]
        max_log: u32,
        #[arg(long, default_value_t = 15)]
        runs: usize,
        /// also time these slice widths (32-bit digits per slice) and report each
        #[arg(long, value_delimiter = ',')]
        sweep_width: Vec<u32>,
        /// skip Poly
        #[arg(long)]
        no_poly: bool,
        #[arg(long)]
        json: Option<std::path::PathBuf>,
    },
}

/// log2 of NumBits x NumInsts.
const TOTAL_LOG: u32 = 32;

struct Timing {
    median_ms: f64,
    min_ms: f64,
}

fn time_it(
    gpu: &GpuDevice,
    runs: usize,
    mut f: impl FnMut() -> bigfuse::Result<()>,
) -> bigfuse::Result<Timing> {
    for _ in 0..3 {
        f()?;
    }
    gpu.synchronize()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = gpu.event()?;
        let end = gpu.event()?;
        start
            .record(gpu.stream())
            .map_err(|e| drv("recording an event", e))?;
        f()?;
        end.record(gpu.stream())
            .map_err(|e| drv("recording an event", e))?;
        end.synchronize()
            .map_err(|e| drv("waiting for an event", e))?;
        times.push(
            start
                .elapsed_ms(&end)
                .map_err(|e| drv("reading an event", e))? as f64,
        );
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Ok(Timing {
        median_ms: times[times.len() / 2],
        min_ms: times[0],
    })
}

fn drv(during: &str, e: impl std::fmt::Debug) -> bigfuse::Error {
    bigfuse::Error::Driver {
        during: during.into(),
        message: format!("{e:?}"),
    }
}

fn limbs_to_big(l: &[u64]) -> BigUint {
    bigfuse::runtime::big_from_limbs(l)
}

/// Checks `samples` instances of a result against num-bigint before anything is timed.
fn verify(
    name: &str,
    bits: u64,
    a: &[u64],
    b: &[u64],
    out: &[u64],
    samples: usize,
    f: impl Fn(&BigUint, &BigUint) -> BigUint + Sync,
) -> Result<(), String> {
    let m = (bits / 64) as usize;
    let n = out.len() / m;
    let modulus = BigUint::from(1u8) << bits;
    let mut rng = rand::rngs::StdRng::seed_from_u64(bits);
    let mut idx: Vec<usize> = (0..samples).map(|_| rng.gen_range(0..n)).collect();
    idx.extend([0, n - 1]);
    idx.par_iter().try_for_each(|&i| {
        let (x, y) = (
            limbs_to_big(&a[i * m..(i + 1) * m]),
            limbs_to_big(&b[i * m..(i + 1) * m]),
        );
        let want = f(&x, &y) % &modulus;
        let got = limbs_to_big(&out[i * m..(i + 1) * m]);
        if got == want {
            Ok(())
        } else {
            Err(format!("{name} at {bits} bits: instance {i} is wrong"))
        }
    })
}

struct Row {
    bits: u64,
    copy_gbs: f64,
    add1: f64,
    add6: f64,
    q1: u32,
    q6: u32,
    sweep: Vec<(u32, f64, f64)>,
}

fn gbs(bits: u64, n: u64, ms: f64) -> f64 {
    3.0 * n as f64 * bits as f64 / 8.0 / (ms * 1e-3) / 1e9
}

fn run_add(
    min_log: u32,
    max_log: u32,
    runs: usize,
    sweep_q: &[u32],
    json: Option<&std::path::Path>,
) -> bigfuse::Result<()> {
    let gpu = Arc::new(GpuDevice::new(0)?);
    let words = 1usize << (TOTAL_LOG - 6);
    eprintln!(
        "bench add on {} ({}), {} MiB per operand",
        gpu.target().name,
        gpu.target().sm(),
        (words * 8) >> 20
    );
    // One pair of random operands serves every size: instance i of an M-limb size is words [iM, (i+1)M).
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let a_host: Vec<u64> = (0..words).map(|_| rng.gen()).collect();
    let mut b_host: Vec<u64> = (0..words).map(|_| rng.gen()).collect();
    // Long carry chains: a stretch where b = !a.
    for i in (0..words).step_by(97) {
        b_host[i] = !a_host[i];
    }
    let a = gpu.upload(&a_host, "a")?;
    let b = gpu.upload(&b_host, "b")?;
    let mut out = vec![gpu.alloc(words, "result")?];
    let mut scratch = gpu.alloc(words, "copy target")?;
    let k1 = add1::kernel()?;
    let k6 = add6::kernel()?;
    let mut rows = Vec::new();
    for log in min_log..=max_log {
        let bits = 1u64 << log;
        let n = 1u64 << (TOTAL_LOG - log);
        // Copy of one operand's bytes, counted read + written: the same-run bandwidth ceiling.
        let copy = time_it(&gpu, runs, || {
            gpu.stream()
                .memcpy_dtod(&a, &mut scratch)
                .map_err(|e| drv("copying", e))
        })?;
        let copy_gbs = 2.0 * (words * 8) as f64 / (copy.median_ms * 1e-3) / 1e9;
        let mut measure = |k: &Kernel,
                           hints: &Hints,
                           f: &(dyn Fn(&BigUint, &BigUint) -> BigUint + Sync)|
         -> bigfuse::Result<(f64, u32)> {
            let gk: Arc<GpuKernel> = k.prepare_with(&gpu, &[bits], hints)?;
            gk.launch(&gpu, n, &[&a, &b], &mut out)?;
            let got = gpu.download(&out[0], "result")?;
            if let Err(e) = verify(k.name(), bits, &a_host, &b_host, &got, 200, f) {
                return Err(bigfuse::Error::Argument {
                    kernel: k.name().into(),
                    message: e,
                });
            }
            let t = time_it(&gpu, runs, || gk.launch(&gpu, n, &[&a, &b], &mut out))?;
            let _ = t.min_ms;
            Ok((gbs(bits, n, t.median_ms), gk.compiled.schedule.q))
        };
        let f1 = |x: &BigUint, y: &BigUint| x + y;
        let f6 = |x: &BigUint, y: &BigUint| BigUint::from(6u8) * x + BigUint::from(10u8) * y;
        let (add1_gbs, q1) = measure(k1, &Hints::default(), &f1)?;
        let (add6_gbs, q6) = measure(k6, &Hints::default(), &f6)?;
        let mut sweep = Vec::new();
        for &q in sweep_q {
            let h = Hints {
                q: Some(q),
                ..Default::default()
            };
            match (measure(k1, &h, &f1), measure(k6, &h, &f6)) {
                (Ok((x, _)), Ok((y, _))) => sweep.push((q, x, y)),
                (Err(e), _) | (_, Err(e)) => eprintln!("  Q={q} at 2^{log}: {e}"),
            }
        }
        eprintln!(
            "2^{log}: copy {copy_gbs:.0} GB/s, 1-Add {add1_gbs:.0} ({:.0}%), 6-Add {add6_gbs:.0} ({:.0}%)",
            100.0 * add1_gbs / copy_gbs,
            100.0 * add6_gbs / copy_gbs
        );
        rows.push(Row {
            bits,
            copy_gbs,
            add1: add1_gbs,
            add6: add6_gbs,
            q1,
            q6,
            sweep,
        });
    }
    let mut table = String::new();
    let _ = writeln!(table, "\nGPU: {}. GB/s = 3*NumInsts*NumBits/8 / time (median of {runs}); copy = device-to-device, read + written", gpu.target().name);
    let _ = writeln!(
        table,
        "| NumBits | copy GB/s | 1-Add GB/s (% copy) [Q] | 6-Add GB/s (% copy) [Q] |"
    );
    let _ = writeln!(
        table,
        "|---------|-----------|-------------------------|-------------------------|"
    );
    for r in &rows {
        let _ = writeln!(
            table,
            "| 2^{:<5} | {:9.0} | {:6.0} ({:4.1}%) [{}]     | {:6.0} ({:4.1}%) [{}]     |",
            r.bits.trailing_zeros(),
            r.copy_gbs,
            r.add1,
            100.0 * r.add1 / r.copy_gbs,
            r.q1,
            r.add6,
            100.0 * r.add6 / r.copy_gbs,
            r.q6
        );
        for (q, x, y) in &r.sweep {
            let _ = writeln!(table, "|   Q={q:<3} |           | {x:6.0} ({:4.1}%)          | {y:6.0} ({:4.1}%)          |", 100.0 * x / r.copy_gbs, 100.0 * y / r.copy_gbs);
        }
    }
    println!("{table}");
    if let Some(path) = json {
        let mut s = format!(
            "{{\"gpu\": \"{}\", \"runs\": {runs}, \"add\": [",
            gpu.target().name
        );
        for (i, r) in rows.iter().enumerate() {
            let sweep: Vec<String> = r
                .sweep
                .iter()
                .map(|(q, x, y)| {
                    format!("{{\"q\": {q}, \"add1_gbs\": {x:.1}, \"add6_gbs\": {y:.1}}}")
                })
                .collect();
            let _ = write!(
                s,
                "{}\n  {{\"num_bits\": {}, \"copy_gbs\": {:.1}, \"add1_gbs\": {:.1}, \"add6_gbs\": {:.1}, \"q1\": {}, \"q6\": {}, \"sweep\": [{}]}}",
                if i > 0 { "," } else { "" },
                r.bits, r.copy_gbs, r.add1, r.add6, r.q1, r.q6, sweep.join(", ")
            );
        }
        s.push_str("\n]}\n");
        std::fs::write(path, s).map_err(|e| bigfuse::Error::Argument {
            kernel: "bench".into(),
            message: format!("writing {}: {e}", path.display()),
        })?;
    }
    Ok(())
}

/// Anchors for 1-Mul / Poly (Gu32ops/s, H200): the best of CGBN and the paper's CUDA per size.
fn mul_anchor(log: u32) -> Option<(f64, f64)> {
    Some(match log {
        8 => (181375.0, 291602.0),
        9 => (310929.0, 376311.0),
        10 => (292201.0, 285468.0),
        11 => (185128.0, 179856.0),
        12 => (116856.0, 118117.0),
        13 => (64425.0, 64110.0),
        14 => (38908.0, 38716.0),
        15 => (23591.0, 22132.0),
        16 => (20670.0, 21237.0),
        17 => (21347.0, 22091.0),
        18 => (20783.0, 19782.0),
        _ => return None,
    })
}

fn gu32ops(bits: u64, n: u64, products: f64, ms: f64) -> f64 {
    let m = (bits / 32) as f64;
    products * 300.0 * n as f64 * m * m.log2() / (ms * 1e-3) / 1e9
}

type MulRow = (u64, f64, f64, f64, u32, Vec<(u32, f64)>);

fn run_mul(
    min_log: u32,
    max_log: u32,
    runs: usize,
    sweep: &[u32],
    no_poly: bool,
    json: Option<&std::path::Path>,
) -> bigfuse::Result<()> {
    let gpu = Arc::new(GpuDevice::new(0)?);
    let words = 1usize << (TOTAL_LOG - 6);
    eprintln!("bench mul on {} ({})", gpu.target().name, gpu.target().sm());
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let a_host: Vec<u64> = (0..words).map(|_| rng.gen()).collect();
    let b_host: Vec<u64> = (0..words).map(|_| rng.gen()).collect();
    let a = gpu.upload(&a_host, "a")?;
    let b = gpu.upload(&b_host, "b")?;
    let mut out = vec![gpu.alloc(words, "result")?];
    let mut scratch = gpu.alloc(words, "copy target")?;
    let mut rows: Vec<MulRow> = Vec::new();
    let mut table = String::new();
    let _ = writeln!(
        table,
        "\nGPU: {}. Gu32ops/s = 300*NumInsts*m*log2(m) / time (median of {runs}), m = NumBits/32; Poly counts 4 products",
        gpu.target().name
    );
    let _ = writeln!(table, "| NumBits | copy GB/s | 1-Mul [width] (x best anchor) | Poly (x best anchor) | regs mul/poly |");
    let _ = writeln!(table, "|---------|-----------|-------------------------------|----------------------|---------------|");
    for log in min_log..=max_log {
        let bits = 1u64 << log;
        let n = 1u64 << (TOTAL_LOG - log);
        let copy = time_it(&gpu, runs, || {
            gpu.stream()
                .memcpy_dtod(&a, &mut scratch)
                .map_err(|e| drv("copying", e))
        })?;
        let copy_gbs = 2.0 * (words * 8) as f64 / (copy.median_ms * 1e-3) / 1e9;
        type Reference<'r> = &'r (dyn Fn(&BigUint, &BigUint) -> BigUint + Sync);
        let mut measure =
            |k: &Kernel, hints: &Hints, f: Reference| -> bigfuse::Result<(f64, u32, u32)> {
                let gk: Arc<GpuKernel> = k.prepare_with(&gpu, &[bits], hints)?;
                gk.launch(&gpu, n, &[&a, &b], &mut out)?;
                let got = gpu.download(&out[0], "result")?;
                if let Err(e) = verify(k.name(), bits, &a_host, &b_host, &got, 64, f) {
                    return Err(bigfuse::Error::Argument {
                        kernel: k.name().into(),
                        message: e,
                    });
                }
                let t = time_it(&gpu, runs, || gk.launch(&gpu, n, &[&a, &b], &mut out))?;
                Ok((
                    t.median_ms,
                    gk.compiled.schedule.mul_width,
                    gk.resources.registers,
                ))
            };
        let fm = |x: &BigUint, y: &BigUint| x * y;
        let fp = |x: &BigUint, y: &BigUint| (x * x + y) * (y * y + y) + x * y;
        let (t1, w1, regs) = measure(mul1::kernel()?, &Hints::default(), &fm)?;
        let m1 = gu32ops(bits, n, 1.0, t1);
        let (poly_ops, poly_regs) = if no_poly {
            (0.0, 0)
        } else {
            let (tp, _, r) = measure(poly::kernel()?, &Hints::default(), &fp)?;
            (gu32ops(bits, n, 4.0, tp), r)
        };
        let anchor = mul_anchor(log);
        let ratio = |x: f64, poly: bool| {
            anchor
                .map(|a| format!("{:.2}x", x / if poly { a.1 } else { a.0 }))
                .unwrap_or_else(|| "-".into())
        };
        eprintln!(
            "2^{log}: 1-Mul {m1:.0} ({}), Poly {poly_ops:.0} ({})",
            ratio(m1, false),
            ratio(poly_ops, true)
        );
        let _ = writeln!(
            table,
            "| 2^{log:<5} | {copy_gbs:9.0} | {m1:9.0} [{w1}] ({}) | {poly_ops:9.0} ({}) | {regs}/{poly_regs} |",
            ratio(m1, false),
            ratio(poly_ops, true)
        );
        let mut sw = Vec::new();
        for &w in sweep {
            let h = Hints {
                mul_width: Some(w),
                ..Default::default()
            };
            match measure(mul1::kernel()?, &h, &fm) {
                Ok((t, _, r)) => {
                    let g = gu32ops(bits, n, 1.0, t);
                    let _ = writeln!(
                        table,
                        "|   w={w:<3} |           | {g:9.0} ({}) regs {r} | | |",
                        ratio(g, false)
                    );
                    sw.push((w, g));
                }
                Err(e) => eprintln!("  width {w} at 2^{log}: {e}"),
            }
        }
        rows.push((bits, copy_gbs, m1, poly_ops, w1, sw));
    }
    println!("{table}");
    if let Some(path) = json {
        let mut s = format!(
            "{{\"gpu\": \"{}\", \"runs\": {runs}, \"mul\": [",
            gpu.target().name
        );
        for (i, (bits, copy, m1, p, w, sw)) in rows.iter().enumerate() {
            let sweep: Vec<String> = sw
                .iter()
                .map(|(w, g)| format!("{{\"width\": {w}, \"mul1_gu32ops\": {g:.0}}}"))
                .collect();
            let _ = write!(
                s,
                "{}\n  {{\"num_bits\": {bits}, \"copy_gbs\": {copy:.1}, \"mul1_gu32ops\": {m1:.0}, \"poly_gu32ops\": {p:.0}, \"width\": {w}, \"sweep\": [{}]}}",
                if i > 0 { "," } else { "" },
                sweep.join(", ")
            );
        }
        s.push_str("\n]}\n");
        std::fs::write(path, s).map_err(|e| bigfuse::Error::Argument {
            kernel: "bench".into(),
            message: format!("writing {}: {e}", path.display()),
        })?;
    }
    Ok(())
}

fn run_probe(sizes: &[u64]) -> bigfuse::Result<()> {
    let gpu = Arc::new(GpuDevice::new(0)?);
    let t = gpu.target();
    println!(
        "{}: {}, {} SMs, {} threads/block, {} B shared/block (opt-in), {} regs/SM",
        t.name,
        t.sm(),
        t.sm_count,
        t.max_threads_per_block,
        t.max_shared_per_block,
        t.regs_per_sm
    );
    type Reference = fn(&BigUint, &BigUint) -> BigUint;
    let kernels: [(&Kernel, Reference); 4] = [
        (add1::kernel()?, |x, y| x + y),
        (add6::kernel()?, |x, y| {
            BigUint::from(6u8) * x + BigUint::from(10u8) * y
        }),
        (mul1::kernel()?, |x, y| x * y),
        (poly::kernel()?, |x, y| (x * x + y) * (y * y + y) + x * y),
    ];
    for &bits in sizes {
        let m = (bits / 64) as usize;
        let n = 1000usize;
        let mut rng = rand::rngs::StdRng::seed_from_u64(bits);
        let a_host: Vec<u64> = (0..n * m).map(|_| rng.gen()).collect();
        let b_host: Vec<u64> = (0..n * m).map(|_| rng.gen()).collect();
        let a = gpu.upload(&a_host, "a")?;
        let b = gpu.upload(&b_host, "b")?;
        let mut out = vec![gpu.alloc(n * m, "out")?];
        for (k, f) in &kernels {
            let line = match k.prepare(&gpu, &[bits]) {
                Err(e) => format!("prepare failed: {e}"),
                Ok(gk) => {
                    let c = &gk.compiled;
                    let plan = format!(
                        "T={} Q={} IPB={} block={} shared={} regs={} local={}",
                        c.schedule.threads_per_instance,
                        c.schedule.q,
                        c.schedule.instances_per_block,
                        c.schedule.block_threads,
                        c.placement.shared_bytes,
                        gk.resources.registers,
                        gk.resources.local_bytes
                    );
                    let run = gk
                        .launch(&gpu, n as u64, &[&a, &b], &mut out)
                        .and_then(|_| gpu.download(&out[0], "out"))
                        .map(|got| verify(k.name(), bits, &a_host, &b_host, &got, 50, f));
                    match run {
                        Ok(Ok(())) => format!("{plan}: ok"),
                        Ok(Err(e)) => format!("{plan}: WRONG: {e}"),
                        Err(e) => format!("{plan}: FAILED: {e}"),
                    }
                }
            };
            println!("{:>6} bits {:<5} {line}", bits, k.name());
        }
    }
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Add {
            min_log,
            max_log,
            runs,
            sweep_q,
            json,
        } => run_add(min_log, max_log, runs, &sweep_q, json.as_deref()),
        Cmd::Probe { bits } => run_probe(&bits),
        Cmd::Mul {
            min_log,
            max_log,
            runs,
            sweep_width,
            no_poly,
            json,
        } => run_mul(
            min_log,
            max_log,
            runs,
            &sweep_width,
            no_poly,
            json.as_deref(),
        ),
    };
    if let Err(e) = r {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

//! bigfuse benchmarks (GPU required):
//!
//!     bench add   [--min-log 9 --max-log 18] [--variant q=2 ...] [--json F]
//!     bench mul   [--min-log 9 --max-log 18] [--variant minb=1 ...] [--no-poly] [--json F]
//!     bench paper [--json F] [--plots DIR]     both tables with the anchors, JSON and PNG plots
//!     bench useradd [--runs R] [--json F]      user-written addition (bigfuse::programs) vs built-in
//!     bench dot   [--runs R] [--json F] [--prime P]   dot products mod P in Gmodmul/s
//!     bench poly  [--runs R] [--json F]        polynomial products over Z, GMul/s
//!     bench bits  [--min-log 8 --max-log 16] [--ops xor,shl,...] [--runs R] [--json F]
//!                 bit operations on U<BITS>: GB/s next to the copy, Gops/s next to GMP
//!     bench e2e   [--min-log 9 --max-log 18 --total-log 28] [--ops add,mul,poly] [--runs R]
//!                 [--json F] [--plots DIR] [--no-bars]
//!                 a user's calls (run, run_into, launch) from host data against the kernel alone,
//!                 the floor max(PCIe, kernel) and GMP on all host cores (`--features gmp`); a
//!                 chain of launches on device batches; the Done-when bars
//!     bench multi [--gpus N] [--runs R]    mul 4096 x 2^20 and Poly 2^15 x 2^17 on 1..N GPUs,
//!                 device-resident, each GPU launching on its part at once; speedup over one GPU
//!     bench pipeline [--chunks 0,1,2,4,8] [--ops mul,poly] [--runs R]
//!                 run_into (limbs) and run (BigUint) at the Done-when sizes with the batch cut
//!                 into k chunks (0: the runtime's choice), next to the PCIe floor
//!     bench jit   [--cases add:64,poly:32768,...] [--n 4] [--warm 3] [--calls 200] [--json F]
//!                 first call cold (empty disk cache) and warm (filled) in fresh processes, and the
//!                 per-call overhead at batch 1 over the kernel
//!     bench modexp [--sizes 1024] [--full] [--variant ..]   x^e mod m, ops/s next to GMP and CGBN
//!     bench modmul [--sizes 256,512,...]   products modulo an odd per-instance m (one, a chain of
//!                 16, Poly mod m) in products/s next to GMP on all host cores
//!     bench fuzz  [--programs N --seed S]      random programs on the GPU vs the reference evaluator
//!     bench probe [--bits 64,512,...]          plan, resources and one checked launch per kernel
//!
//! Kernel figures are medians of `--runs` CUDA-event timings after warm-up, checked against
//! num-bigint first; `add`, `mul` and `paper` set them next to a device-to-device copy measured in
//! the same run. `e2e` and `jit` time whole calls by the wall clock.

mod anchors;
mod arrays;
mod bars;
mod bits;
mod e2e;
mod e2e_report;
mod gmp;
mod huge;
mod jit;
mod json;
mod kernels;
mod measure;
mod modexp;
mod modmul;
mod multi;
mod ops;
mod pcie;
mod pipeline;
mod plot;
mod poly;
mod tables;
mod variant;

use clap::{Parser, Subcommand};
use measure::Bench;
use std::path::PathBuf;
use variant::Variant;

#[derive(Parser)]
#[command(about = "bigfuse benchmarks (paper metrics; GPU required)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Args, Clone)]
struct Common {
    /// log2 of the smallest NumBits
    #[arg(long, default_value_t = 9)]
    min_log: u32,
    /// log2 of the largest NumBits
    #[arg(long, default_value_t = 18)]
    max_log: u32,
    /// timed runs per figure (the median is reported)
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// schedules to time besides the default, e.g. `q=2` or `minb=1,width=8`
    /// (keys: the hints' text form, `bigfuse::Hints`: q, block, width, minb, ntt, chunk, thread,
    /// group, divw, span, gntt, coords, park)
    #[arg(long = "variant")]
    variants: Vec<String>,
    /// write the figures here as JSON
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// 1-Add and 6-Add in GB/s = 3*NumInsts*NumBits/8 / time, NumBits x NumInsts = 2^32
    Add {
        #[command(flatten)]
        common: Common,
    },
    /// 1-Mul and Poly in Gu32ops/s = 300*NumInsts*m*log2(m) / time (Poly: 4 products), m = NumBits/32
    Mul {
        #[command(flatten)]
        common: Common,
        /// skip Poly
        #[arg(long)]
        no_poly: bool,
    },
    /// Both tables of the paper (2^7..2^18 bits; the paper starts at 2^9) with the default
    /// schedules, the anchors, JSON and PNG plots
    Paper {
        #[arg(long, default_value_t = 20)]
        runs: usize,
        #[arg(long)]
        json: Option<PathBuf>,
        /// where to write add.png and mul.png
        #[arg(long, default_value = "bench-plots")]
        plots: PathBuf,
    },
    /// user_add (a DSL program: map ; scan ; map) against the built-in 1-Add, GB/s and ratio (target 0.9)
    Useradd {
        #[arg(long, default_value_t = 20)]
        runs: usize,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Instances that span several blocks: 1-Add, 6-Add, 1-Mul and Poly at 2^19..2^26 bits
    /// (NumBits x NumInsts = 2^32; products over global memory, next to GMP on all host cores
    /// with the `gmp` feature), one instance at 2^24 and 2^26 bits, prefix sums over [Zp<P>; N] at N = 2^8..2^26 (N x batch = 2^26), each next to the
    /// same-run copy
    Huge {
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// schedules to time besides the default (the addition table only)
        #[arg(long = "variant")]
        variants: Vec<String>,
        /// only the prefix sums (for each variant), e.g. to profile them
        #[arg(long)]
        scans_only: bool,
    },
    /// Dot products mod P in Gmodmul/s = batch*N / time and GB/s = 16*N*batch / time, N x batch = 2^26
    Dot {
        #[arg(long, default_value_t = 20)]
        runs: usize,
        #[arg(long)]
        json: Option<PathBuf>,
        /// the prime modulus, below 2^64 [default: both 18446744073709551557 and 4179340454199820289]
        #[arg(long)]
        prime: Option<u64>,
    },
    /// Bit operations on U<BITS> (xor, and-not, shifts, rotation, normalisation, bit fields) and
    /// division in GB/s next to the copy and in Gops/s next to GMP on all host cores, NumBits x
    /// NumInsts = 2^32
    #[command(alias = "ops")]
    Bits {
        /// log2 of the smallest NumBits
        #[arg(long, default_value_t = 8)]
        min_log: u32,
        /// log2 of the largest NumBits
        #[arg(long, default_value_t = 16)]
        max_log: u32,
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// which operations (xor, andnot, shl, shr, rotl, normalize, extract, div, divwide,
        /// sqrtwide, sqrt, gcd, modinv) [default: all but the divisions, the square roots, gcd
        /// and modinv, whose kernels take seconds to compile or run at large sizes]
        #[arg(long, value_delimiter = ',')]
        ops: Vec<String>,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Products modulo an odd per-instance modulus (mul_mod, add_mod: Montgomery form) at
    /// 256..2048 bits: one product, a chain of 16 and Poly mod m, products/s next to GMP
    Modmul {
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// modulus widths in bits
        #[arg(long, value_delimiter = ',', default_values_t = [256u64, 512, 1024, 2048])]
        sizes: Vec<u64>,
    },
    /// Modular exponentiation x^e mod m (pow_mod) at 256..4096-bit moduli with a 512-bit exponent
    /// (and, with --full, a full-length one), ops/s next to GMP's mpz_powm and CGBN
    Modexp {
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// modulus widths in bits
        #[arg(long, value_delimiter = ',', default_values_t = [256u64, 512, 1024, 2048, 4096])]
        sizes: Vec<u64>,
        /// also exponents as wide as the modulus
        #[arg(long)]
        full: bool,
        /// schedules to time besides the default, e.g. `block=256` or `minb=2`
        #[arg(long = "variant")]
        variants: Vec<String>,
    },
    /// Polynomial products over Z (multi-prime NTT + CRT), N = 2^8..2^12, 64..256-bit coefficients, GMul/s
    Poly {
        #[arg(long, default_value_t = 10)]
        runs: usize,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Differential fuzzing on the GPU: random programs against the reference evaluator
    Fuzz {
        /// how many programs
        #[arg(long, default_value_t = 10000)]
        programs: u64,
        /// first seed (programs use seed, seed+1, ...)
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// A user's calls from host data (run on BigUint, run_into on limbs, launch on device batches)
    /// against the kernel alone, the floor max(PCIe time, kernel) and GMP on all host cores; a chain
    /// of three launches on device batches against its kernels; the Done-when bars
    E2e {
        /// log2 of the smallest NumBits
        #[arg(long, default_value_t = 9)]
        min_log: u32,
        /// log2 of the largest NumBits
        #[arg(long, default_value_t = 18)]
        max_log: u32,
        /// log2 of NumBits x instances at every size of the sweep
        #[arg(long, default_value_t = 28)]
        total_log: u32,
        /// timed runs per figure (the median is reported)
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// operations: add (1-Add), mul (1-Mul), poly (the paper's Poly); the chain needs all three
        #[arg(long, value_delimiter = ',', default_value = "add,mul,poly")]
        ops: Vec<String>,
        /// skip the Done-when sizes (mul and poly at 4096 bits x 2^16 and 2^15 bits x 2^12) and bars
        #[arg(long)]
        no_bars: bool,
        #[arg(long)]
        json: Option<PathBuf>,
        /// write e2e-<op>.png (ms per call against NumBits) here
        #[arg(long)]
        plots: Option<PathBuf>,
    },
    /// Kernel-bound work on 1..N GPUs, device-resident (mul 4096 x 2^20, Poly 2^15 x 2^17): each
    /// GPU launches on its part of the batch at once; ms, Gu32ops/s and the speedup over one GPU
    Multi {
        /// at most this many GPUs [default: all]
        #[arg(long)]
        gpus: Option<usize>,
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// launches each GPU queues per timed round (waited for once)
        #[arg(long, default_value_t = 4)]
        launches: usize,
        /// queue each GPU's launches from a thread of its own (default: all from this thread)
        #[arg(long)]
        threads: bool,
    },
    /// How a call's time from host data (run_into on limbs, run on BigUint) depends on the chunks
    /// the pipeline cuts the batch into, at the Done-when sizes of issue 10, next to the PCIe floor
    Pipeline {
        /// chunk counts to try (0: the runtime's own choice)
        #[arg(long, value_delimiter = ',', default_value = "0,1,2,3,4,6,8,12,16")]
        chunks: Vec<usize>,
        #[arg(long, value_delimiter = ',', default_value = "mul,poly")]
        ops: Vec<String>,
        #[arg(long, default_value_t = 7)]
        runs: usize,
    },
    /// Time to the first result, cold (empty kernel cache) and warm (filled), each in a fresh
    /// process, and the per-call overhead at batch 1 above the kernel
    Jit {
        /// op:bits cases (bits a multiple of 64, or 2^k)
        #[arg(long, value_delimiter = ',', default_value = jit::DEFAULT_CASES)]
        cases: Vec<String>,
        /// instances of the first call
        #[arg(long, default_value_t = 4)]
        n: usize,
        /// warm processes per case (the median first result is reported)
        #[arg(long = "warm", default_value_t = 3)]
        warm_processes: usize,
        /// calls per per-call figure at batch 1 (the median is reported)
        #[arg(long, default_value_t = 200)]
        calls: usize,
        /// keep each case's kernel cache directory (printed) instead of removing it
        #[arg(long)]
        keep_cache: bool,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// (internal, spawned by `jit`) one process's first call, and per-call figures with --calls
    #[command(hide = true)]
    JitChild {
        #[arg(long)]
        op: String,
        #[arg(long)]
        bits: u64,
        #[arg(long, default_value_t = 4)]
        n: usize,
        #[arg(long, default_value_t = 0)]
        calls: usize,
    },
    /// Plan, driver resources and one checked launch of each bench kernel at some sizes
    Probe {
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "64,512,2048,4096,32768,262144"
        )]
        bits: Vec<u64>,
    },
}

fn variants(list: &[String]) -> Result<Vec<Variant>, String> {
    let mut v = vec![variant::default()];
    for t in list {
        v.push(variant::parse(t)?);
    }
    Ok(v)
}

fn write(path: &Option<PathBuf>, text: &str) -> Result<(), String> {
    if let Some(p) = path {
        std::fs::write(p, text).map_err(|e| format!("writing {}: {e}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    Ok(())
}

fn run(cli: Cli) -> Result<(), String> {
    let s = |e: bigfuse::Error| e.to_string();
    match cli.cmd {
        Cmd::Add { common: c } => {
            let vs = variants(&c.variants)?;
            let mut bench = Bench::new(c.runs).map_err(s)?;
            let gpu = bench.gpu.target().name.clone();
            eprintln!("bench add on {gpu}");
            let rows = tables::add(&mut bench, c.min_log, c.max_log, &vs).map_err(s)?;
            println!("{}", tables::add_table(&gpu, c.runs, &rows, &vs));
            write(
                &c.json,
                &json::pretty(&tables::json(
                    "add",
                    &gpu,
                    c.runs,
                    &rows,
                    &vs,
                    ("add1_gbs", "add6_gbs"),
                )),
            )
        }
        Cmd::Mul { common: c, no_poly } => {
            let vs = variants(&c.variants)?;
            let mut bench = Bench::new(c.runs).map_err(s)?;
            let gpu = bench.gpu.target().name.clone();
            eprintln!("bench mul on {gpu}");
            let rows = tables::mul(&mut bench, c.min_log, c.max_log, &vs, !no_poly).map_err(s)?;
            println!("{}", tables::mul_table(&gpu, c.runs, &rows, &vs));
            write(
                &c.json,
                &json::pretty(&tables::json(
                    "mul",
                    &gpu,
                    c.runs,
                    &rows,
                    &vs,
                    ("mul1_gu32ops", "poly_gu32ops"),
                )),
            )
        }
        Cmd::Paper { runs, json, plots } => {
            let vs = variants(&[])?;
            let mut bench = Bench::new(runs).map_err(s)?;
            let gpu = bench.gpu.target().name.clone();
            eprintln!("bench paper on {gpu}: table 1 (addition)");
            let add = tables::add(&mut bench, 7, 18, &vs).map_err(s)?;
            eprintln!("table 2 (multiplication)");
            let mul = tables::mul(&mut bench, 7, 18, &vs, true).map_err(s)?;
            println!("{}", tables::add_table(&gpu, runs, &add, &vs));
            println!("{}", tables::mul_table(&gpu, runs, &mul, &vs));
            let text = json::pretty(&tables::PaperJson {
                add: tables::json("add", &gpu, runs, &add, &vs, ("add1_gbs", "add6_gbs")),
                mul: tables::json(
                    "mul",
                    &gpu,
                    runs,
                    &mul,
                    &vs,
                    ("mul1_gu32ops", "poly_gu32ops"),
                ),
            });
            write(&json, &text)?;
            match plot::paper(&plots, &add, &mul, &gpu) {
                Ok(files) => files
                    .iter()
                    .for_each(|f| eprintln!("wrote {}", f.display())),
                Err(e) => eprintln!("plots skipped: {e}"),
            }
            Ok(())
        }
        Cmd::Useradd { runs, json } => {
            let mut bench = Bench::new(runs).map_err(s)?;
            let gpu = bench.gpu.target().name.clone();
            eprintln!("bench useradd on {gpu}");
            let hints = variant::default().hints;
            let rows = arrays::useradd(&mut bench, &hints).map_err(s)?;
            println!("{}", arrays::useradd_table(&gpu, runs, &rows));
            write(&json, &arrays::useradd_json(&gpu, runs, &hints, &rows))?;
            // A wrong or failed figure fails the command, once the table shows the rest.
            arrays::failures(
                "useradd",
                rows.iter().flat_map(|r| {
                    [
                        (format!("built-in at 2^{} bits", r.log), &r.builtin),
                        (format!("user_add at 2^{} bits", r.log), &r.user),
                    ]
                }),
            )
        }
        Cmd::Huge {
            runs,
            variants: v,
            scans_only,
        } => {
            let vs = variants(&v)?;
            if scans_only {
                let gpu = bigfuse::runtime::GpuDevice::new(0).map_err(s)?;
                let name = gpu.target().name.clone();
                eprintln!("bench huge --scans-only on {name}");
                for v in &vs {
                    let scans = huge::scans(&gpu, runs, &v.hints).map_err(s)?;
                    println!("Schedule `{}`:\n", v.name);
                    println!("{}", huge::tables(&name, runs, &[], &scans));
                }
                return Ok(());
            }
            let mut bench = Bench::new(runs).map_err(s)?;
            let gpu = bench.gpu.target().name.clone();
            eprintln!("bench huge on {gpu}");
            let rows = tables::add(&mut bench, 19, 26, &vs).map_err(s)?;
            println!("{}", tables::add_table(&gpu, runs, &rows, &vs));
            let rows = tables::mul(&mut bench, 19, 26, &vs, true).map_err(s)?;
            println!("{}", tables::mul_table(&gpu, runs, &rows, &vs));
            let gmp = huge::gmp_products(&bench, &rows).map_err(s)?;
            println!("{}", huge::gmp_table(&gpu, &gmp));
            for v in &vs {
                eprintln!("schedule `{}`", v.name);
                let single = huge::single(&mut bench, &v.hints).map_err(s)?;
                let scans = huge::scans(&bench.gpu, runs, &v.hints).map_err(s)?;
                println!("Schedule `{}`:\n", v.name);
                println!("{}", huge::tables(&gpu, runs, &single, &scans));
            }
            Ok(())
        }
        Cmd::Dot { runs, json, prime } => {
            let primes = prime.map_or(arrays::DOT_PRIMES.to_vec(), |p| vec![p]);
            let gpu = bigfuse::runtime::GpuDevice::new(0).map_err(s)?;
            let name = gpu.target().name.clone();
            eprintln!("bench dot on {name}");
            let hints = variant::default().hints;
            let rows = arrays::dot(&gpu, runs, &primes, &hints).map_err(s)?;
            println!("{}", arrays::dot_table(&name, runs, &rows));
            write(&json, &arrays::dot_json(&name, runs, &hints, &rows))?;
            arrays::failures(
                "dot",
                rows.iter()
                    .map(|r| (format!("mod {} at 2^{} elements", r.prime, r.log), &r.dot)),
            )
        }
        Cmd::Bits {
            min_log,
            max_log,
            runs,
            ops,
            json,
        } => {
            let ops: Vec<bits::BitOp> = if ops.is_empty() {
                bits::ALL
                    .into_iter()
                    .filter(|o| {
                        !matches!(
                            o,
                            bits::BitOp::Div
                                | bits::BitOp::DivWide
                                | bits::BitOp::SqrtWide
                                | bits::BitOp::Sqrt
                                | bits::BitOp::Gcd
                                | bits::BitOp::ModInv
                        )
                    })
                    .collect()
            } else {
                ops.iter()
                    .map(|o| {
                        bits::ALL
                            .into_iter()
                            .find(|b| b.name() == o.trim())
                            .ok_or_else(|| {
                                format!(
                                    "unknown operation `{o}` (the operations: {})",
                                    bits::ALL.map(|b| b.name()).join(", ")
                                )
                            })
                    })
                    .collect::<Result<_, _>>()?
            };
            let mut bench = Bench::new(runs).map_err(s)?;
            let gpu = bench.gpu.target().name.clone();
            eprintln!("bench bits on {gpu}");
            let hints = variant::default().hints;
            let rows = bits::run(&mut bench, &ops, min_log, max_log, &hints).map_err(s)?;
            println!("{}", bits::table(&gpu, runs, &rows));
            write(&json, &bits::json(&gpu, runs, &rows))?;
            fail_on("bits", bits::failures(&rows))
        }
        Cmd::Modmul { runs, sizes } => {
            let gpu = bigfuse::runtime::GpuDevice::new(0).map_err(s)?;
            let name = gpu.target().name.clone();
            eprintln!("bench modmul on {name}");
            let (copy, rows) = modmul::run(&gpu, runs, &sizes).map_err(s)?;
            println!("{}", modmul::table(&name, runs, copy, &rows));
            fail_on("modmul", modmul::failures(&rows))
        }
        Cmd::Modexp {
            runs,
            sizes,
            full,
            variants: vs,
        } => {
            let vs = variants(&vs)?;
            let gpu = bigfuse::runtime::GpuDevice::new(0).map_err(s)?;
            let name = gpu.target().name.clone();
            eprintln!("bench modexp on {name}");
            let (copy, rows) = modexp::run(&gpu, runs, &sizes, full, &vs).map_err(s)?;
            println!("{}", modexp::table(&name, runs, copy, &rows));
            fail_on("modexp", modexp::failures(&rows))
        }
        Cmd::Poly { runs, json } => {
            let gpu = bigfuse::runtime::GpuDevice::new(0).map_err(s)?;
            let name = gpu.target().name.clone();
            eprintln!("bench poly on {name}");
            let rows = poly::poly(&gpu, runs).map_err(s)?;
            println!("{}", poly::table(&name, runs, &rows));
            write(&json, &poly::json(&name, runs, &rows))?;
            let failed: Vec<String> = rows
                .iter()
                .filter_map(|r| {
                    r.ms.as_ref()
                        .err()
                        .map(|e| format!("2^{} x {} bits: {e}", r.log_n, r.bits))
                })
                .collect();
            if failed.is_empty() {
                Ok(())
            } else {
                Err(format!("poly failed: {}", failed.join("; ")))
            }
        }
        Cmd::E2e {
            min_log,
            max_log,
            total_log,
            runs,
            ops,
            no_bars,
            json,
            plots,
        } => {
            let ops = ops::Op::parse_list(&ops)?;
            let report = e2e::run(&e2e::Options {
                min_log,
                max_log,
                total_log,
                runs,
                ops: ops.clone(),
                bars: !no_bars,
            })?;
            println!("{}", e2e_report::tables(&report, &ops));
            write(&json, &report.json())?;
            if let Some(dir) = plots {
                match plot::e2e(&dir, &report, &ops) {
                    Ok(files) => files
                        .iter()
                        .for_each(|f| eprintln!("wrote {}", f.display())),
                    Err(e) => eprintln!("plots skipped: {e}"),
                }
            }
            fail_on("e2e", report.failures())
        }
        Cmd::Multi {
            gpus,
            runs,
            launches,
            threads,
        } => {
            let table = multi::run(&multi::Options {
                cases: multi::default_cases(),
                max_gpus: gpus,
                runs,
                launches,
                threads,
            })?;
            println!("{table}");
            Ok(())
        }
        Cmd::Pipeline { chunks, ops, runs } => {
            let table = pipeline::run(&pipeline::Options {
                ops: ops::Op::parse_list(&ops)?,
                chunks,
                runs,
            })?;
            println!("{table}");
            Ok(())
        }
        Cmd::Jit {
            cases,
            n,
            warm_processes,
            calls,
            keep_cache,
            json,
        } => {
            let report = jit::run(&jit::Options {
                cases: jit::parse_cases(&cases)?,
                n,
                warm_processes,
                calls,
                keep_cache,
            })?;
            println!("{}", jit::table(&report));
            write(&json, &report.json())?;
            fail_on("jit", report.failures())
        }
        Cmd::JitChild { op, bits, n, calls } => {
            println!("{}", jit::child(ops::Op::parse(&op)?, bits, n, calls)?);
            Ok(())
        }
        Cmd::Probe { bits } => probe(&bits).map_err(s),
        Cmd::Fuzz { programs, seed } => fuzz(programs, seed),
    }
}

/// A command whose figures are printed fails when some are missing (wrong or failed).
fn fail_on(what: &str, failures: Vec<String>) -> Result<(), String> {
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{what}: {} figure(s) missing: {}",
            failures.len(),
            failures.join("; ")
        ))
    }
}

/// Random programs on the GPU against the reference evaluator. PTX is compiled in parallel first
/// (NVRTC is the slow part), then each program runs on a small batch; mismatching seeds are
/// printed (add them to `REGRESSIONS` in tests/fuzz.rs) and fail the command.
fn fuzz(programs: u64, first: u64) -> Result<(), String> {
    use bigfuse::fuzz::{as_columns, inputs, program, reference};
    use rayon::prelude::*;
    let gpu = std::sync::Arc::new(bigfuse::runtime::GpuDevice::new(0).map_err(|e| e.to_string())?);
    let arch = gpu.target().sm();
    let target = gpu.target().clone();
    eprintln!(
        "fuzz: {programs} programs from seed {first} on {}",
        target.name
    );
    let compact = bigfuse::runtime::tiers::mode() == bigfuse::runtime::tiers::Mode::CompactOnly;
    let start = std::time::Instant::now();
    let dev = bigfuse::Device::Gpu(gpu);
    let (mut ran, mut bad, mut failed) = (0u64, Vec::new(), Vec::new());
    // Chunks: compile and compute references in parallel, then run on the GPU in order.
    let mut next = first;
    while next < first + programs && !stopped() {
        let end = (next + 512).min(first + programs);
        let prepared: Vec<_> = (next..end)
            .into_par_iter()
            .map(|seed| {
                let p = program(seed, seed % 2 == 0).map_err(|e| format!("seed {seed}: {e}"))?;
                let kernel = bigfuse::Kernel::new(p.func.clone())
                    .map_err(|e| format!("seed {seed}: {e}"))?;
                // The plan a call will run: with BIGFUSE_TIERS=compact (to fuzz the compact
                // tier), its compact form where one pays.
                let hints = bigfuse::Hints::default();
                let plan = if compact {
                    kernel.compact_plan(&[p.bits], &target, &hints).transpose()
                } else {
                    None
                };
                let plan = plan
                    .unwrap_or_else(|| kernel.plan(&[p.bits], &target, &hints))
                    .map_err(|e| format!("seed {seed}: {e}"))?;
                for part in &plan.parts {
                    let c = &part.compiled;
                    bigfuse::runtime::nvrtc::compile(&c.source, &c.kernel_name, &arch)
                        .map_err(|e| format!("seed {seed}: {e}"))?;
                }
                let n = [1usize, 2, 7, 31, 97][(seed % 5) as usize];
                let cols = inputs(&p, n);
                let want = reference(&p, &cols, n).map_err(|e| format!("seed {seed}: {e}"))?;
                Ok::<_, String>((p, kernel, cols, want))
            })
            .collect();
        for item in prepared {
            match item {
                Err(e) => failed.push(e),
                Ok((p, kernel, cols, want)) => {
                    let args = as_columns(&cols);
                    let args: Vec<_> = args.iter().map(|c| c.arg()).collect();
                    match kernel.run(&dev, &[p.bits], &args) {
                        Ok(got) if got == want => ran += 1,
                        Ok(_) => bad.push(p.seed),
                        Err(e) => failed.push(format!("seed {}: {e}", p.seed)),
                    }
                }
            }
        }
        eprintln!(
            "  {}/{programs} programs, {} mismatch(es), {} error(s), {:.0} s",
            end - first,
            bad.len(),
            failed.len(),
            start.elapsed().as_secs_f64()
        );
        next = end;
    }
    println!(
        "fuzz: {ran} programs equal the reference evaluator on the GPU, {} mismatch(es), {} error(s), {:.0} s",
        bad.len(),
        failed.len(),
        start.elapsed().as_secs_f64()
    );
    for s in &bad {
        println!("MISMATCH seed {s}");
    }
    for e in failed.iter().take(20) {
        println!("ERROR {e}");
    }
    if bad.is_empty() && failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} mismatch(es), {} error(s)",
            bad.len(),
            failed.len()
        ))
    }
}

fn probe(sizes: &[u64]) -> bigfuse::Result<()> {
    use kernels::*;
    let gpu = std::sync::Arc::new(bigfuse::runtime::GpuDevice::new(0)?);
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
    let list: [(&bigfuse::Kernel, measure::Reference); 4] = [
        (add1::kernel()?, ref_add1),
        (add6::kernel()?, ref_add6),
        (mul1::kernel()?, ref_mul1),
        (poly::kernel()?, ref_poly),
    ];
    for &bits in sizes {
        let m = (bits / 64) as usize;
        let n = 1000usize;
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(bits);
        let a_host: Vec<u64> = (0..n * m).map(|_| rng.gen()).collect();
        let b_host: Vec<u64> = (0..n * m).map(|_| rng.gen()).collect();
        let a = gpu.upload(&a_host, "a")?;
        let b = gpu.upload(&b_host, "b")?;
        let mut out = vec![gpu.alloc(n * m, "out")?];
        for (k, f) in &list {
            let line = match k.prepare(&gpu, &[bits]) {
                Err(e) => format!("prepare failed: {e}"),
                Ok(program) => {
                    let gk = &program.parts[0];
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
                    let run = program
                        .launch(&gpu, n as u64, &[&a, &b], &mut out)
                        .and_then(|_| gpu.download(&out[0], "out"));
                    match run {
                        Err(e) => format!("{plan}: FAILED: {e}"),
                        Ok(got) => {
                            let modulus = bigfuse::BigUint::from(1u8) << bits;
                            let limbs = bigfuse::runtime::big_from_limbs;
                            let wrong = (0..n).find(|&i| {
                                let (x, y) = (
                                    limbs(&a_host[i * m..(i + 1) * m]),
                                    limbs(&b_host[i * m..(i + 1) * m]),
                                );
                                limbs(&got[i * m..(i + 1) * m]) != f(&x, &y) % &modulus
                            });
                            match wrong {
                                None => format!("{plan}: ok"),
                                Some(i) => format!("{plan}: WRONG at instance {i}"),
                            }
                        }
                    }
                }
            };
            println!("{:>6} bits {:<5} {line}", bits, k.name());
        }
    }
    Ok(())
}

/// Set by Ctrl-C: long loops finish the item in hand, report what they have, and stop.
pub static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn stopped() -> bool {
    STOP.load(std::sync::atomic::Ordering::Relaxed)
}

fn main() {
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, std::sync::atomic::Ordering::Relaxed) {
            std::process::exit(130); // a second Ctrl-C stops at once
        }
        eprintln!("\nstopping after the current step (Ctrl-C again to quit now)");
    });
    if let Err(e) = run(Cli::parse()) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

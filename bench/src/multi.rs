//! `bench multi`: kernel-bound work on 1..N GPUs of one host, device-resident (issue 16). For each
//! GPU count k, the batch is split over the first k GPUs as `Devices` splits it (in proportion to
//! their SM counts); each GPU holds its part of the operands as batches, and one timed round
//! queues every part's launches (asynchronous: from one host thread, or a thread per GPU with
//! `--threads`) and waits for all. Reported: the median round, the paper's Gu32ops/s, and the
//! speedup over one GPU of the same run. Results are read back once per k and checked against
//! num-bigint on sampled instances.

use crate::e2e::random_operands;
use crate::measure::{median, verify};
use crate::ops::{gu32ops, Op};
use bigfuse::{Batch, Device, Devices};
use std::fmt::Write;
use std::time::Instant;

/// Untimed rounds before the timed ones.
const WARMUP: usize = 2;

pub struct Options {
    /// (operation, NumBits, instances) cases.
    pub cases: Vec<(Op, u64, u64)>,
    /// At most this many GPUs (default: all).
    pub max_gpus: Option<usize>,
    pub runs: usize,
    /// Launches each GPU queues per timed round (on its stream, waited for once): a kernel-bound
    /// workload keeps its GPUs busy, so the round's fixed costs (a thread per GPU, the wait)
    /// are shared by these launches.
    pub launches: usize,
    /// Queue each GPU's launches from a host thread of its own (spawned per round) instead of
    /// from the calling thread: launches are asynchronous, so one thread keeps every GPU busy.
    pub threads: bool,
}

/// The cases: mul at 4096 bits over 2^20 instances, Poly at 2^15 bits over 2^17.
pub fn default_cases() -> Vec<(Op, u64, u64)> {
    vec![(Op::Mul, 4096, 1 << 20), (Op::Poly, 1 << 15, 1 << 17)]
}

struct Part {
    dev: Device,
    range: std::ops::Range<usize>,
    a: Batch,
    b: Batch,
}

pub fn run(o: &Options) -> Result<String, String> {
    let s = |e: bigfuse::Error| e.to_string();
    let all = Devices::gpus().map_err(|e| format!("bench multi needs a GPU: {e}"))?;
    let count = o.max_gpus.unwrap_or(usize::MAX).min(all.devices().len());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "bench multi: {count} GPU(s): {}; medians of {} rounds of {} launches per GPU (ms per launch), queued from {}\n",
        all.devices()[..count]
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("; "),
        o.runs,
        o.launches,
        if o.threads {
            "a host thread per GPU"
        } else {
            "one host thread"
        }
    );
    let _ = writeln!(
        out,
        "| op | NumBits x n | GPUs | ms | Gu32ops/s | x one GPU |\n|---|---|---|---|---|---|"
    );
    for &(op, bits, n) in &o.cases {
        let m = (bits / 64) as usize;
        let (la, lb) = random_operands(bits, n, 0);
        let mut one_gpu = None;
        for k in 1..=count {
            if crate::stopped() {
                return Ok(out);
            }
            let devs = Devices::new(all.devices()[..k].to_vec()).map_err(s)?;
            // The tuned kernels, compiled before the clock starts (a first launch would otherwise
            // run the compact tier while they compile).
            for dev in devs.devices() {
                if let bigfuse::Device::Gpu(g) = dev {
                    op.kernel().map_err(s)?.prepare(g, &[bits]).map_err(s)?;
                }
            }
            let mut parts = Vec::with_capacity(k);
            for (dev, range) in devs.devices().iter().zip(devs.split(n as usize)) {
                let words = range.start * m..range.end * m;
                parts.push(Part {
                    a: Batch::big(dev, bits, &la[words.clone()]).map_err(s)?,
                    b: Batch::big(dev, bits, &lb[words]).map_err(s)?,
                    dev: dev.clone(),
                    range,
                });
            }
            // One round: every GPU's launches queued (from the calling thread, or from a thread
            // per GPU with `--threads`), then all waited for.
            let queue = |p: &Part, queued: usize| -> bigfuse::Result<Option<Batch>> {
                if p.range.is_empty() {
                    return Ok(None);
                }
                let mut last = None;
                for _ in 0..queued {
                    last = Some(op.launch(&p.dev, bits, &p.a, &p.b)?);
                }
                Ok(last)
            };
            let round = |keep: bool| -> bigfuse::Result<Vec<Option<Batch>>> {
                let queued = if keep { 1 } else { o.launches.max(1) };
                let outs: Vec<Option<Batch>> = if o.threads {
                    std::thread::scope(|sc| {
                        let handles: Vec<_> = parts
                            .iter()
                            .map(|p| {
                                sc.spawn(move || {
                                    let r = queue(p, queued)?;
                                    r.as_ref().map(Batch::wait).transpose()?;
                                    Ok(r)
                                })
                            })
                            .collect();
                        handles
                            .into_iter()
                            .map(|h| {
                                h.join().unwrap_or_else(|_| {
                                    Err(bigfuse::Error::Argument {
                                        kernel: op.name().into(),
                                        message: "a GPU's thread panicked".into(),
                                    })
                                })
                            })
                            .collect::<bigfuse::Result<_>>()
                    })?
                } else {
                    parts
                        .iter()
                        .map(|p| queue(p, queued))
                        .collect::<bigfuse::Result<_>>()?
                };
                for r in outs.iter().flatten() {
                    r.wait()?;
                }
                Ok(outs)
            };
            // Check once: each part's results against num-bigint on sampled instances.
            let results = round(true).map_err(s)?;
            for (p, r) in parts.iter().zip(results) {
                if let Some(r) = r {
                    let got = r.to_limbs().map_err(s)?;
                    let words = p.range.start * m..p.range.end * m;
                    verify(
                        (&la[words.clone()], &lb[words]),
                        &format!("{} on {}", op.name(), p.dev),
                        bits,
                        p.range.len(),
                        &got,
                        op.reference(),
                    )
                    .map_err(s)?;
                }
            }
            let mut times = Vec::with_capacity(o.runs);
            for i in 0..WARMUP + o.runs.max(1) {
                let start = Instant::now();
                round(false).map_err(s)?;
                if i >= WARMUP {
                    times.push(start.elapsed().as_secs_f64() * 1e3);
                }
            }
            let ms = median(&mut times) / o.launches.max(1) as f64;
            let base = *one_gpu.get_or_insert(ms);
            let _ = writeln!(
                out,
                "| {} | {bits} x {n} | {k} | {ms:.3} | {:.0} | {:.2}x |",
                op.name(),
                gu32ops(bits, n, op.products(), ms),
                base / ms
            );
            eprint!(".");
        }
    }
    eprintln!();
    Ok(out)
}

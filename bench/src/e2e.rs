//! `bench e2e`: what a user waits for, from the user's own data, against the floor (the larger of
//! the PCIe time for the bytes moved and the kernel's own time) and GMP on all host cores, all in
//! one run. See [`crate::e2e_report`] for what each column is.

use crate::e2e_report::{self as report, ChainRow, Report, Row, SETS};
use crate::measure::{
    bigs, details, median_gpu_ms, median_ms, median_wall_ms, verify, verify_big, Busy,
};
use crate::ops::{chain_launch, chain_reference, Op};
use crate::{gmp, pcie, tables::detail};
use bigfuse::runtime::{DeviceBuffer, GpuDevice, GpuProgram};
use bigfuse::{Batch, BigUint, Device, Hints, Kernel};
use rand::{Rng, SeedableRng};
use std::sync::Arc;

/// Untimed calls before each wall-clock figure (CUDA-event figures warm up three times).
const WARMUP: usize = 2;

pub struct Options {
    pub min_log: u32,
    pub max_log: u32,
    pub total_log: u32,
    pub runs: usize,
    pub ops: Vec<Op>,
    /// Also measure the Done-when sizes of Mul and Poly, and judge the bars.
    pub bars: bool,
}

/// Operands of one input set: random limbs, with a stretch of carries every 97 words (b = !a
/// there, so that a + b propagates).
pub fn random_operands(bits: u64, n: u64, set: usize) -> (Vec<u64>, Vec<u64>) {
    let words = (n * (bits / 64)) as usize;
    let seed = bits
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(n.wrapping_mul(1_000_003))
        .wrapping_add(set as u64);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let a: Vec<u64> = (0..words).map(|_| rng.gen()).collect();
    let mut b: Vec<u64> = (0..words).map(|_| rng.gen()).collect();
    for i in (0..words).step_by(97) {
        b[i] = !a[i];
    }
    (a, b)
}

/// The input sets of one size in every form a call takes.
struct Inputs {
    bits: u64,
    n: u64,
    limbs: Vec<(Vec<u64>, Vec<u64>)>,
    big: Vec<(Vec<BigUint>, Vec<BigUint>)>,
    /// Uploaded with `Batch::big`, for `launch`.
    batches: Vec<(Batch, Batch)>,
    /// Uploaded as plain words (the kernels' layout), for `GpuProgram::launch`.
    bufs: Vec<(DeviceBuffer, DeviceBuffer)>,
}

impl Inputs {
    fn new(dev: &Device, gpu: &GpuDevice, bits: u64, n: u64) -> bigfuse::Result<Inputs> {
        let limbs: Vec<(Vec<u64>, Vec<u64>)> =
            (0..SETS).map(|s| random_operands(bits, n, s)).collect();
        let big = limbs
            .iter()
            .map(|(a, b)| (bigs(a, bits), bigs(b, bits)))
            .collect();
        let mut batches = Vec::new();
        let mut bufs = Vec::new();
        for (a, b) in &limbs {
            batches.push((Batch::big(dev, bits, a)?, Batch::big(dev, bits, b)?));
            bufs.push((gpu.upload(a, "operand a")?, gpu.upload(b, "operand b")?));
        }
        Ok(Inputs {
            bits,
            n,
            limbs,
            big,
            batches,
            bufs,
        })
    }

    fn words(&self) -> usize {
        (self.n * (self.bits / 64)) as usize
    }
}

/// The schedule a call uses (`run`, `launch`): tuned with `BIGFUSE_AUTOTUNE=1`, else the cost
/// model's with any `BIGFUSE_*` overrides. The kernel-alone figures use the same.
fn call_hints(kernel: &Kernel, gpu: &GpuDevice, bits: u64) -> bigfuse::Result<Hints> {
    if bigfuse::runtime::kernel::autotune_enabled() {
        Ok(kernel.autotune(gpu, &[bits])?.hints)
    } else {
        Ok(bigfuse::runtime::env_hints())
    }
}

pub(crate) fn program(op: Op, gpu: &GpuDevice, bits: u64) -> bigfuse::Result<Arc<GpuProgram>> {
    Ok(program_and_hints(op, gpu, bits)?.0)
}

/// [`program`] and the hints it was compiled with.
fn program_and_hints(
    op: Op,
    gpu: &GpuDevice,
    bits: u64,
) -> bigfuse::Result<(Arc<GpuProgram>, Hints)> {
    let kernel = op.kernel()?;
    let hints = call_hints(kernel, gpu, bits)?;
    Ok((kernel.prepare_with(gpu, &[bits], &hints)?, hints))
}

pub fn run(o: &Options) -> Result<Report, String> {
    let configs = report::configs(o.min_log, o.max_log, o.total_log, &o.ops, o.bars)?;
    let gpu = Arc::new(GpuDevice::new(0).map_err(|e| format!("opening the GPU: {e}"))?);
    let dev = Device::Gpu(gpu.clone());
    let name = gpu.target().name.clone();
    let mut busy = Busy::new(&gpu).map_err(|e| e.to_string())?;
    eprintln!(
        "bench e2e on {name}: {} sizes, {} runs each; GMP: {}",
        configs.len(),
        o.runs,
        gmp::describe()
    );
    let mut rows = Vec::new();
    let mut chains = Vec::new();
    for c in &configs {
        if crate::stopped() {
            break;
        }
        eprintln!(
            "  {} bits x {} instances: inputs, PCIe bandwidth",
            c.bits, c.n
        );
        let prepared = Inputs::new(&dev, &gpu, c.bits, c.n).and_then(|inputs| {
            let bw = pcie::measure(&gpu, o.runs, pcie::COPY_BYTES)?;
            Ok((inputs, bw))
        });
        let (inputs, bw) = match prepared {
            Ok(x) => x,
            Err(e) => {
                eprintln!("    failed: {e}");
                for &op in &c.ops {
                    let mut r = Row::new(op, c.bits, c.n, c.sweep);
                    r.error = Some(format!("preparing the inputs: {e}"));
                    rows.push(r);
                }
                if c.chain {
                    chains.push(ChainRow {
                        bits: c.bits,
                        n: c.n,
                        error: Some(format!("preparing the inputs: {e}")),
                        ..ChainRow::default()
                    });
                }
                continue;
            }
        };
        let pairs: Vec<(&[u64], &[u64])> = inputs
            .limbs
            .iter()
            .map(|(a, b)| (a.as_slice(), b.as_slice()))
            .collect();
        let gmp_sets = gmp::prepare(c.bits, &pairs);
        for &op in &c.ops {
            if crate::stopped() {
                break;
            }
            eprintln!("    {}", op.name());
            let mut row = Row::new(op, c.bits, c.n, c.sweep);
            row.h2d_gbs = Some(bw.h2d_gbs);
            row.d2h_gbs = Some(bw.d2h_gbs);
            let measured = measure_op(
                &mut row, op, &dev, &gpu, &inputs, &gmp_sets, &mut busy, o.runs,
            );
            if let Err(e) = measured {
                eprintln!("      failed: {e}");
                row.error = Some(e.to_string());
            }
            row.finish(op);
            rows.push(row);
        }
        if c.chain && !crate::stopped() {
            eprintln!("    chain mul -> poly -> add");
            let mut ch = ChainRow {
                bits: c.bits,
                n: c.n,
                ..ChainRow::default()
            };
            if let Err(e) = measure_chain(&mut ch, &dev, &gpu, &inputs, &mut busy, o.runs) {
                eprintln!("      failed: {e}");
                ch.error = Some(e.to_string());
            }
            ch.finish();
            chains.push(ch);
        }
    }
    let bars = if o.bars {
        report::bars(&rows, &chains, gmp::available())
    } else {
        Vec::new()
    };
    Ok(Report {
        bench: "e2e",
        gpu: name,
        host_threads: rayon::current_num_threads(),
        runs: o.runs,
        total_log: o.total_log,
        input_sets: SETS,
        pcie_copy_bytes: pcie::COPY_BYTES,
        gmp: gmp::describe(),
        rows,
        chains,
        bars,
    })
}

/// Checks every path on every input set, then times (a) .. (d) and GMP into `row` (figures
/// measured before an error stay).
#[allow(clippy::too_many_arguments)]
fn measure_op(
    row: &mut Row,
    op: Op,
    dev: &Device,
    gpu: &GpuDevice,
    inp: &Inputs,
    gmp_sets: &gmp::Sets,
    busy: &mut Busy,
    runs: usize,
) -> bigfuse::Result<()> {
    let (bits, n) = (inp.bits, inp.n);
    let (program, hints) = program_and_hints(op, gpu, bits)?;
    row.hints = Some(hints);
    let reference = op.reference();
    let what = |path: &str| format!("{} {path}", op.name());
    let mut limbs_out: Vec<u64> = Vec::new();
    let mut outs = vec![gpu.alloc(inp.words(), "the result")?];
    for s in 0..SETS {
        let (a, b) = &inp.big[s];
        let got = op.run_big(dev, bits, a, b)?;
        verify_big((a, b), &what("run"), bits, &got, reference)?;
        drop(got);
        let (al, bl) = &inp.limbs[s];
        op.run_into_limbs(dev, bits, al, bl, &mut limbs_out)?;
        verify(
            (al, bl),
            &what("run_into"),
            bits,
            n as usize,
            &limbs_out,
            reference,
        )?;
        let (ab, bb) = &inp.batches[s];
        let got = op.launch(dev, bits, ab, bb)?.to_limbs()?;
        verify((al, bl), &what("launch"), bits, n as usize, &got, reference)?;
        let (ad, bd) = &inp.bufs[s];
        program.launch(gpu, n, &[ad, bd], &mut outs)?;
        let got = gpu.download(&outs[0], "the result")?;
        verify((al, bl), &what("kernel"), bits, n as usize, &got, reference)?;
    }
    row.a_ms = Some(median_wall_ms(WARMUP, runs, |k| {
        let (a, b) = &inp.big[k % SETS];
        op.run_big(dev, bits, a, b)
    })?);
    row.b_ms = Some(median_wall_ms(WARMUP, runs, |k| {
        let (a, b) = &inp.limbs[k % SETS];
        op.run_into_limbs(dev, bits, a, b, &mut limbs_out)
    })?);
    row.c_ms = Some(median_wall_ms(WARMUP, runs, |k| {
        let (a, b) = &inp.batches[k % SETS];
        let r = op.launch(dev, bits, a, b)?;
        r.wait()?;
        Ok(r)
    })?);
    // The kernel's own GPU time: queued behind a busy copy, so the host's launch time is not in it.
    let mut k = 0;
    let d = median_gpu_ms(gpu, runs, busy, || {
        k += 1;
        let (a, b) = &inp.bufs[k % SETS];
        program.launch(gpu, n, &[a, b], &mut outs)
    })?;
    row.d_ms = Some(d);
    row.kernel = detail(Some(&details(&program, d)));
    row.gmp_ms = gmp::time(op, bits, gmp_sets, runs)?;
    Ok(())
}

/// The chain's three kernels launched directly on preallocated buffers: x, y, z.
fn direct(
    gpu: &GpuDevice,
    programs: &[Arc<GpuProgram>; 3],
    n: u64,
    (a, b): &(DeviceBuffer, DeviceBuffer),
    xyz: &mut [Vec<DeviceBuffer>; 3],
) -> bigfuse::Result<()> {
    let [x, y, z] = xyz;
    programs[0].launch(gpu, n, &[a, b], x)?;
    programs[1].launch(gpu, n, &[&x[0], a], y)?;
    programs[2].launch(gpu, n, &[&y[0], b], z)
}

/// The chain on device batches (wall clock and events) and its kernels alone (events), each
/// checked on every input set first.
fn measure_chain(
    row: &mut ChainRow,
    dev: &Device,
    gpu: &GpuDevice,
    inp: &Inputs,
    busy: &mut Busy,
    runs: usize,
) -> bigfuse::Result<()> {
    let (bits, n) = (inp.bits, inp.n);
    let programs = [
        program(Op::Mul, gpu, bits)?,
        program(Op::Poly, gpu, bits)?,
        program(Op::Add, gpu, bits)?,
    ];
    let words = inp.words();
    let mut xyz = [
        vec![gpu.alloc(words, "x")?],
        vec![gpu.alloc(words, "y")?],
        vec![gpu.alloc(words, "z")?],
    ];
    let reference = |x: &BigUint, y: &BigUint| chain_reference(bits, x, y);
    for s in 0..SETS {
        let (al, bl) = &inp.limbs[s];
        let (ab, bb) = &inp.batches[s];
        let (_, _, z) = chain_launch(dev, bits, ab, bb)?;
        verify(
            (al, bl),
            "chain (launch)",
            bits,
            n as usize,
            &z.to_limbs()?,
            reference,
        )?;
        direct(gpu, &programs, n, &inp.bufs[s], &mut xyz)?;
        let got = gpu.download(&xyz[2][0], "z")?;
        verify(
            (al, bl),
            "chain (kernels)",
            bits,
            n as usize,
            &got,
            reference,
        )?;
    }
    row.wall_ms = Some(median_wall_ms(WARMUP, runs, |k| {
        let (a, b) = &inp.batches[k % SETS];
        let chain = chain_launch(dev, bits, a, b)?;
        chain.2.wait()?;
        Ok(chain)
    })?);
    // The same launches between events on an idle stream: the host's gaps between them count.
    let mut k = 0;
    row.events_ms = Some(median_ms(gpu, runs, || {
        k += 1;
        let (a, b) = &inp.batches[k % SETS];
        // The batches go back to the pool when dropped here; reuse is ordered on the main stream.
        chain_launch(dev, bits, a, b).map(|_| ())
    })?);
    // The three kernels' own GPU time, back to back (queued behind a busy copy).
    let mut k = 0;
    row.kernels_ms = Some(median_gpu_ms(gpu, runs, busy, || {
        k += 1;
        direct(gpu, &programs, n, &inp.bufs[k % SETS], &mut xyz)
    })?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_are_seeded_per_size_and_set() {
        let (a, b) = random_operands(128, 100, 0);
        assert_eq!((a.len(), b.len()), (200, 200));
        assert_eq!(random_operands(128, 100, 0), (a.clone(), b.clone()));
        assert_ne!(random_operands(128, 100, 1).0, a);
        assert_ne!(random_operands(64, 200, 0).0, a);
        assert_eq!(b[0], !a[0]);
        assert_eq!(b[97], !a[97]);
        assert_ne!(b[1], !a[1]);
    }
}

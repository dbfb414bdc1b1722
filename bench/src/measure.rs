//! Timing on the GPU: CUDA events around each launch after warm-up, median of the runs; every
//! kernel's result is checked against num-bigint on sampled instances before it is timed.

use bigfuse::runtime::DeviceBuffer as Slice;
use bigfuse::runtime::{GpuDevice, GpuProgram};
use bigfuse::{BigUint, Hints, Kernel};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::sync::Arc;

/// Median of `runs` CUDA-event timings of `f`, after three untimed warm-up calls.
pub fn median_ms(
    gpu: &GpuDevice,
    runs: usize,
    mut f: impl FnMut() -> bigfuse::Result<()>,
) -> bigfuse::Result<f64> {
    for _ in 0..3 {
        f()?;
    }
    gpu.synchronize()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let start = gpu.event()?;
        let end = gpu.event()?;
        start
            .record(gpu.stream())
            .map_err(|e| driver("recording an event", e))?;
        f()?;
        end.record(gpu.stream())
            .map_err(|e| driver("recording an event", e))?;
        end.synchronize()
            .map_err(|e| driver("waiting for an event", e))?;
        times.push(
            start
                .elapsed_ms(&end)
                .map_err(|e| driver("reading an event", e))? as f64,
        );
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Ok(times[times.len() / 2])
}

/// log2 of NumBits x NumInsts (the paper's setup).
pub const TOTAL_LOG: u32 = 32;

pub type Reference = fn(&BigUint, &BigUint) -> BigUint;

pub struct Bench {
    pub gpu: Arc<GpuDevice>,
    pub runs: usize,
    a_host: Vec<u64>,
    b_host: Vec<u64>,
    a: Slice,
    b: Slice,
    out: Vec<Slice>,
    scratch: Slice,
}

/// One timed kernel.
#[derive(Clone, Debug)]
pub struct Measured {
    pub ms: f64,
    pub registers: u32,
    pub local_bytes: u32,
    pub q: u32,
    pub threads_per_instance: u32,
    pub shared_bytes: u32,
    pub algo: String,
    /// Kernels in the plan (a split plan launches several; the details above are the first's).
    pub parts: usize,
}

pub fn driver(during: &str, e: impl std::fmt::Debug) -> bigfuse::Error {
    bigfuse::Error::Driver {
        during: during.into(),
        message: format!("{e:?}"),
    }
}

impl Bench {
    /// Two random operands of 2^26 words each (512 MiB), with stretches of long carry chains; the
    /// same words serve every size (instance i of an M-limb size is words [iM, (i+1)M)).
    pub fn new(runs: usize) -> bigfuse::Result<Bench> {
        let gpu = Arc::new(GpuDevice::new(0)?);
        let words = 1usize << (TOTAL_LOG - 6);
        let mut rng = rand::rngs::StdRng::seed_from_u64(42);
        let a_host: Vec<u64> = (0..words).map(|_| rng.gen()).collect();
        let mut b_host: Vec<u64> = (0..words).map(|_| rng.gen()).collect();
        for i in (0..words).step_by(97) {
            b_host[i] = !a_host[i];
        }
        let a = gpu.upload(&a_host, "a")?;
        let b = gpu.upload(&b_host, "b")?;
        let out = vec![gpu.alloc(words, "result")?];
        let scratch = gpu.alloc(words, "copy target")?;
        Ok(Bench {
            gpu,
            runs,
            a_host,
            b_host,
            a,
            b,
            out,
            scratch,
        })
    }

    /// Device-to-device copy of one operand, GB/s counting bytes read + written.
    pub fn copy_gbs(&mut self) -> bigfuse::Result<f64> {
        copy_gbs(&self.gpu, self.runs, &self.a, &mut self.scratch)
    }

    /// Compiles `kernel` for `bits` with `hints`, checks it, and times it over NumInsts = 2^32 / bits.
    pub fn measure(
        &mut self,
        kernel: &Kernel,
        bits: u64,
        hints: &Hints,
        reference: Reference,
    ) -> bigfuse::Result<Measured> {
        self.measure_sized(kernel, &[bits], bits, hints, reference)
    }

    /// [`Bench::measure`] for a kernel whose sizes are not NumBits (`user_add` takes limbs): its
    /// instances must be `bits` wide, `bits / 64` words each, as the operands are laid out.
    pub fn measure_sized(
        &mut self,
        kernel: &Kernel,
        sizes: &[u64],
        bits: u64,
        hints: &Hints,
        reference: Reference,
    ) -> bigfuse::Result<Measured> {
        let n = 1u64 << (TOTAL_LOG - bits.trailing_zeros());
        let program: Arc<GpuProgram> = kernel.prepare_with(&self.gpu, sizes, hints)?;
        if program.parts.len() > 1 {
            eprintln!(
                "    ({} at {bits} bits runs as {} kernels)",
                kernel.name(),
                program.parts.len()
            );
        }
        let inputs = [&self.a, &self.b];
        let got = results(&self.gpu, &program, n, &inputs, &mut self.out)?;
        verify(
            (&self.a_host, &self.b_host),
            kernel.name(),
            bits,
            &got[0],
            reference,
        )?;
        time_program(&self.gpu, self.runs, &program, n, &inputs, &mut self.out)
    }
}

/// Device-to-device copy of `src` into `scratch`, GB/s counting bytes read + written.
pub fn copy_gbs(
    gpu: &GpuDevice,
    runs: usize,
    src: &Slice,
    scratch: &mut Slice,
) -> bigfuse::Result<f64> {
    if scratch.len() < src.len() {
        return Err(bigfuse::Error::Argument {
            kernel: "copy".into(),
            message: format!(
                "copy target of {} words for {} words",
                scratch.len(),
                src.len()
            ),
        });
    }
    let bytes = src.len() * 8;
    let ms = median_ms(gpu, runs, || gpu.copy(src, scratch, bytes))?;
    Ok(2.0 * bytes as f64 / (ms * 1e-3) / 1e9)
}

/// One untimed launch of `program` over `n` instances and every result as the host sees it:
/// what gets checked before the same buffers are timed.
pub fn results(
    gpu: &GpuDevice,
    program: &GpuProgram,
    n: u64,
    inputs: &[&Slice],
    outputs: &mut [Slice],
) -> bigfuse::Result<Vec<Vec<u64>>> {
    program.launch(gpu, n, inputs, outputs)?;
    outputs.iter().map(|o| gpu.download(o, "result")).collect()
}

/// Times `program` over `n` instances on buffers already on the device (checked first by the
/// caller), with the first kernel's schedule and resources alongside.
pub fn time_program(
    gpu: &GpuDevice,
    runs: usize,
    program: &GpuProgram,
    n: u64,
    inputs: &[&Slice],
    outputs: &mut [Slice],
) -> bigfuse::Result<Measured> {
    let ms = median_ms(gpu, runs, || program.launch(gpu, n, inputs, outputs))?;
    let gk = &program.parts[0];
    let c = &gk.compiled;
    let algo = c
        .stages
        .iter()
        .find(|s| s.pass == "lower")
        .map(|s| {
            if s.ir.contains("limb_mul.ntt") {
                "ntt"
            } else if s.ir.contains("limb_mul.classical") {
                "classical"
            } else {
                "-"
            }
        })
        .unwrap_or("-")
        .to_string();
    Ok(Measured {
        ms,
        registers: gk.resources.registers,
        local_bytes: gk.resources.local_bytes,
        q: c.schedule.q,
        threads_per_instance: c.schedule.threads_per_instance,
        shared_bytes: c.placement.shared_bytes,
        algo,
        parts: program.parts.len(),
    })
}

/// Checks 200 random instances plus the first and last against num-bigint (`hosts`: the operands
/// as uploaded).
fn verify(
    hosts: (&[u64], &[u64]),
    name: &str,
    bits: u64,
    out: &[u64],
    reference: Reference,
) -> bigfuse::Result<()> {
    let m = (bits / 64) as usize;
    let n = (1usize << (TOTAL_LOG - bits.trailing_zeros())).min(out.len() / m);
    let modulus = BigUint::from(1u8) << bits;
    let mut rng = rand::rngs::StdRng::seed_from_u64(bits);
    let mut idx: Vec<usize> = (0..200).map(|_| rng.gen_range(0..n)).collect();
    idx.extend([0, n - 1]);
    let limbs = |v: &[u64]| bigfuse::runtime::big_from_limbs(v);
    let bad = idx.par_iter().find_any(|&&i| {
        let x = limbs(&hosts.0[i * m..(i + 1) * m]);
        let y = limbs(&hosts.1[i * m..(i + 1) * m]);
        limbs(&out[i * m..(i + 1) * m]) != reference(&x, &y) % &modulus
    });
    match bad {
        None => Ok(()),
        Some(i) => Err(bigfuse::Error::Argument {
            kernel: name.into(),
            message: format!("instance {i} at {bits} bits differs from num-bigint"),
        }),
    }
}

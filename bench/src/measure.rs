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
    f: impl FnMut() -> bigfuse::Result<()>,
) -> bigfuse::Result<f64> {
    events_median(gpu, runs, || Ok(()), f)
}

/// Device work that keeps the main stream busy while the host queues a timed launch: a copy of
/// [`Busy::BYTES`] between two device buffers (about 0.1 ms on an H100 or H200).
pub struct Busy {
    src: Slice,
    dst: Slice,
}

impl Busy {
    pub const BYTES: usize = 256 << 20;

    pub fn new(gpu: &GpuDevice) -> bigfuse::Result<Busy> {
        Ok(Busy {
            src: gpu.alloc(Self::BYTES / 8, "the busy copy's source")?,
            dst: gpu.alloc(Self::BYTES / 8, "the busy copy's target")?,
        })
    }
}

/// Median GPU time of the work `f` queues, alone: [`median_ms`], but each timed run is queued
/// behind a device-to-device copy ([`Busy`]), so that the GPU reaches the start event, the work
/// and the end event back to back and the host's time to queue the work (which the events would
/// otherwise count while the GPU idles) is left out. For short kernels (a batch of one, or a
/// small total) this is the kernel's own time; for long ones it equals [`median_ms`].
pub fn median_gpu_ms(
    gpu: &GpuDevice,
    runs: usize,
    busy: &mut Busy,
    f: impl FnMut() -> bigfuse::Result<()>,
) -> bigfuse::Result<f64> {
    events_median(
        gpu,
        runs,
        || gpu.copy(&busy.src, &mut busy.dst, Busy::BYTES),
        f,
    )
}

/// [`median_gpu_ms`] for a short kernel whose caches matter (a batch of one): each timed run is
/// queued behind the busy copy and then three untimed runs of the same work, which bring its
/// tables and operands back into L2 (the copy evicts them) as a repeated call finds them.
pub fn median_gpu_warm_ms(
    gpu: &GpuDevice,
    runs: usize,
    busy: &mut Busy,
    f: impl FnMut() -> bigfuse::Result<()>,
) -> bigfuse::Result<f64> {
    events_median_warm(
        gpu,
        runs,
        || gpu.copy(&busy.src, &mut busy.dst, Busy::BYTES),
        3,
        f,
    )
}

/// Three untimed calls of `f`, then `runs` times: `before`, start event, `f`, end event; the
/// median of the event times.
fn events_median(
    gpu: &GpuDevice,
    runs: usize,
    before: impl FnMut() -> bigfuse::Result<()>,
    f: impl FnMut() -> bigfuse::Result<()>,
) -> bigfuse::Result<f64> {
    events_median_warm(gpu, runs, before, 0, f)
}

/// [`events_median`] with `warm` untimed calls of `f` between `before` and the start event.
fn events_median_warm(
    gpu: &GpuDevice,
    runs: usize,
    mut before: impl FnMut() -> bigfuse::Result<()>,
    warm: usize,
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
        before()?;
        for _ in 0..warm {
            f()?;
        }
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
    Ok(median(&mut times))
}

/// The median (the upper one of an even count); NaN for no values. Sorts `values`.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

/// Median wall-clock milliseconds of `runs` calls of `f` after `warmup` untimed ones. `f` gets the
/// call's index (to rotate inputs); what it returns is dropped after the clock stops, so freeing a
/// result is not timed.
pub fn median_wall_ms<T>(
    warmup: usize,
    runs: usize,
    mut f: impl FnMut(usize) -> bigfuse::Result<T>,
) -> bigfuse::Result<f64> {
    let mut times = Vec::with_capacity(runs.max(1));
    for i in 0..warmup + runs.max(1) {
        let start = std::time::Instant::now();
        let kept = f(i)?;
        let elapsed = start.elapsed().as_secs_f64() * 1e3;
        drop(kept);
        if i >= warmup {
            times.push(elapsed);
        }
    }
    Ok(median(&mut times))
}

/// Big integers from their little-endian limbs, `bits / 64` per value (converted in parallel).
pub fn bigs(limbs: &[u64], bits: u64) -> Vec<BigUint> {
    limbs
        .par_chunks((bits / 64).max(1) as usize)
        .map(bigfuse::runtime::big_from_limbs)
        .collect()
}

/// log2 of NumBits x NumInsts (the paper's setup).
pub const TOTAL_LOG: u32 = 32;

pub type Reference = fn(&BigUint, &BigUint) -> BigUint;

pub struct Bench {
    pub gpu: Arc<GpuDevice>,
    pub runs: usize,
    /// The operands as the host holds them (2^26 words each; NumBits / 64 per instance).
    pub a_host: Vec<u64>,
    pub b_host: Vec<u64>,
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
        reference: impl Fn(&BigUint, &BigUint) -> BigUint + Sync,
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
        reference: impl Fn(&BigUint, &BigUint) -> BigUint + Sync,
    ) -> bigfuse::Result<Measured> {
        let n = 1u64 << (TOTAL_LOG - bits.trailing_zeros());
        self.measure_batch(kernel, sizes, bits, n, hints, reference)
    }

    /// [`Bench::measure_sized`] over the first `n` instances only.
    pub fn measure_batch(
        &mut self,
        kernel: &Kernel,
        sizes: &[u64],
        bits: u64,
        n: u64,
        hints: &Hints,
        reference: impl Fn(&BigUint, &BigUint) -> BigUint + Sync,
    ) -> bigfuse::Result<Measured> {
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
            n as usize,
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

/// The same-run copy bandwidth a bench of arithmetic-bound kernels reports beside its figures:
/// 512 MiB copied on the device, GB/s counting bytes read + written (printed as it is measured).
pub fn same_run_copy(gpu: &GpuDevice, runs: usize) -> bigfuse::Result<f64> {
    let words = 1usize << 26;
    let src = gpu.upload(&vec![0x5a5a_5a5a_5a5a_5a5au64; words], "copy source")?;
    let mut dst = gpu.alloc(words, "copy target")?;
    let copy = copy_gbs(gpu, runs, &src, &mut dst)?;
    eprintln!("  same-run device-to-device copy: {copy:.0} GB/s");
    Ok(copy)
}

/// An operations-per-second figure with its unit (G, M or K), `-` when there is none.
pub fn rate_cell(v: Option<f64>) -> String {
    match v {
        Some(x) if x >= 1e9 => format!("{:.3} G", x / 1e9),
        Some(x) if x >= 1e6 => format!("{:.3} M", x / 1e6),
        Some(x) => format!("{:.1} K", x / 1e3),
        None => "-".into(),
    }
}

/// Limbs of a random odd modulus of exactly `bits` bits (top bit set).
pub fn odd_modulus(rng: &mut impl rand::Rng, bits: u64) -> Vec<u64> {
    let mut m: Vec<u64> = (0..bits / 64).map(|_| rng.gen()).collect();
    m[0] |= 1;
    let top = m.len() - 1;
    m[top] |= 1 << 63;
    m
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

/// One result column of `program` over `n` instances from the limb columns `inputs` (uploaded
/// with their names): launched once, sampled instances checked by `ok(i, result)`, then timed on
/// the same buffers. `what` names the kernel in the error of an instance that differs.
#[allow(clippy::too_many_arguments)]
pub fn check_and_time(
    gpu: &GpuDevice,
    program: &GpuProgram,
    runs: usize,
    n: u64,
    bits: u64,
    inputs: &[(&[u64], &str)],
    what: &str,
    ok: impl Fn(usize, &[u64]) -> bool + Sync,
) -> bigfuse::Result<Measured> {
    let bufs = inputs
        .iter()
        .map(|(v, name)| gpu.upload(v, name))
        .collect::<bigfuse::Result<Vec<_>>>()?;
    let refs: Vec<&Slice> = bufs.iter().collect();
    let mut out = vec![gpu.alloc(inputs[0].0.len(), "results")?];
    let got = results(gpu, program, n, &refs, &mut out)?;
    let bad = sample(bits, n as usize)
        .into_par_iter()
        .find_any(|&i| !ok(i, &got[0]));
    if let Some(i) = bad {
        return Err(bigfuse::Error::Argument {
            kernel: what.into(),
            message: format!("instance {i} at {bits} bits differs from num-bigint"),
        });
    }
    time_program(gpu, runs, program, n, &refs, &mut out)
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
    Ok(details(program, ms))
}

/// A timed program's figure with its first kernel's schedule and resources.
pub fn details(program: &GpuProgram, ms: f64) -> Measured {
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
    Measured {
        ms,
        registers: gk.resources.registers,
        local_bytes: gk.resources.local_bytes,
        q: c.schedule.q,
        threads_per_instance: c.schedule.threads_per_instance,
        shared_bytes: c.placement.shared_bytes,
        algo,
        parts: program.parts.len(),
    }
}

/// x mod 2^bits for `bits` a multiple of 64, by dropping limbs (num-bigint's `%` divides, which
/// costs far more at 2^18 bits).
pub fn low_bits(x: &BigUint, bits: u64) -> BigUint {
    let m = (bits / 64) as usize;
    let limbs = x.to_u64_digits();
    bigfuse::runtime::big_from_limbs(&limbs[..limbs.len().min(m)])
}

/// Instances checked against num-bigint: 200 random ones (seeded by `bits`), the first and the last.
pub fn sample(bits: u64, n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(bits);
    // About 2^28 bits of results in all (200 instances up to 2^20 bits, 4 at 2^26, plus the
    // first and the last): num-bigint takes seconds for one product of 2^26-bit integers.
    let count = (1u64 << 28) / bits.max(1);
    let mut idx: Vec<usize> = (0..count.clamp(2, 200))
        .map(|_| rng.gen_range(0..n))
        .collect();
    idx.extend([0, n - 1]);
    idx.sort_unstable();
    idx.dedup();
    idx
}

fn mismatch(name: &str, bits: u64, what: String) -> bigfuse::Error {
    bigfuse::Error::Argument {
        kernel: name.into(),
        message: format!("{what} at {bits} bits differs from num-bigint"),
    }
}

/// Checks sampled instances of `n` results (limbs, `bits / 64` per value) against `reference`
/// (num-bigint) modulo 2^bits (`hosts`: the operands as limbs).
pub fn verify(
    hosts: (&[u64], &[u64]),
    name: &str,
    bits: u64,
    n: usize,
    out: &[u64],
    reference: impl Fn(&BigUint, &BigUint) -> BigUint + Sync,
) -> bigfuse::Result<()> {
    let m = (bits / 64) as usize;
    if out.len() < n * m {
        return Err(mismatch(
            name,
            bits,
            format!("a result of {} words for {n} instances", out.len()),
        ));
    }
    let limbs = |v: &[u64]| bigfuse::runtime::big_from_limbs(v);
    let checked = sample(bits, n);
    let mut bad: Vec<(usize, BigUint, BigUint)> = checked
        .par_iter()
        .filter_map(|&i| {
            let x = limbs(&hosts.0[i * m..(i + 1) * m]);
            let y = limbs(&hosts.1[i * m..(i + 1) * m]);
            let (got, want) = (
                limbs(&out[i * m..(i + 1) * m]),
                low_bits(&reference(&x, &y), bits),
            );
            (got != want).then_some((i, got, want))
        })
        .collect();
    bad.sort_by_key(|b| b.0);
    match bad.first() {
        None => Ok(()),
        Some((i, got, want)) => Err(mismatch(
            name,
            bits,
            format!(
                "{} of {} sampled instances; the first, instance {i}, is {got:#x} where \
                 {want:#x} was expected",
                bad.len(),
                checked.len()
            ),
        )),
    }
}

/// [`verify`] for operands and results as `BigUint` (all `n` of them must be there).
pub fn verify_big(
    hosts: (&[BigUint], &[BigUint]),
    name: &str,
    bits: u64,
    out: &[BigUint],
    reference: impl Fn(&BigUint, &BigUint) -> BigUint + Sync,
) -> bigfuse::Result<()> {
    let n = hosts.0.len();
    if out.len() != n {
        return Err(mismatch(
            name,
            bits,
            format!("{} results for {n} instances", out.len()),
        ));
    }
    let bad = sample(bits, n)
        .into_par_iter()
        .find_any(|&i| out[i] != low_bits(&reference(&hosts.0[i], &hosts.1[i]), bits));
    match bad {
        None => Ok(()),
        Some(i) => Err(mismatch(name, bits, format!("instance {i}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
        assert!(median(&mut []).is_nan());
        let mut calls = Vec::new();
        let ms = median_wall_ms(2, 3, |i| {
            calls.push(i);
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, vec![0, 1, 2, 3, 4]);
        assert!((0.0..100.0).contains(&ms));
        let err = median_wall_ms(0, 3, |_| -> bigfuse::Result<()> {
            Err(driver("testing", "boom"))
        });
        assert!(err.is_err());
    }

    #[test]
    fn low_bits_is_the_remainder() {
        let x = (BigUint::from(0x1234_5678_9abc_def0u64) << 300) + BigUint::from(u64::MAX);
        for bits in [64, 128, 256, 320, 384, 1024] {
            let modulus = BigUint::from(1u8) << bits;
            assert_eq!(low_bits(&x, bits), &x % &modulus, "{bits}");
        }
        assert_eq!(low_bits(&BigUint::from(0u8), 64), BigUint::from(0u8));
    }

    #[test]
    fn checks_find_wrong_instances() {
        let bits = 128;
        let a: Vec<u64> = (0..2000u64)
            .map(|i| i.wrapping_mul(0x9e3779b97f4a7c15))
            .collect();
        let b: Vec<u64> = a.iter().map(|x| !x).collect();
        let add = |x: &BigUint, y: &BigUint| x + y;
        let limbs = |v: &[u64]| bigfuse::runtime::big_from_limbs(v);
        let modulus = BigUint::from(1u8) << bits;
        let mut out: Vec<u64> = Vec::new();
        for i in 0..1000 {
            let r: BigUint = (limbs(&a[2 * i..2 * i + 2]) + limbs(&b[2 * i..2 * i + 2])) % &modulus;
            let mut d = r.to_u64_digits();
            d.resize(2, 0);
            out.extend(d);
        }
        assert!(verify((&a, &b), "t", bits, 1000, &out, add).is_ok());
        assert!(verify((&a, &b), "t", bits, 1000, &out[..100], add).is_err());
        // The last instance is always checked.
        out[1999] ^= 1;
        let e = verify((&a, &b), "t", bits, 1000, &out, add).unwrap_err();
        assert!(e.to_string().contains("instance 999"), "{e}");
        let (x, y): (Vec<BigUint>, Vec<BigUint>) = (0..50u32)
            .map(|i| (BigUint::from(i), BigUint::from(7 * i)))
            .unzip();
        let mut z: Vec<BigUint> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
        assert!(verify_big((&x, &y), "t", bits, &z, add).is_ok());
        z[0] += 1u8;
        assert!(verify_big((&x, &y), "t", bits, &z, add).is_err());
        assert!(verify_big((&x, &y), "t", bits, &z[1..], add).is_err());
    }
}

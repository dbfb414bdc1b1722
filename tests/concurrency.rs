//! Eight threads calling kernels at once on one shared device (issue 15 item 5), in three ways:
//! all the same kernel at the same size; eight different kernels; one kernel at eight different
//! sizes. Each thread calls in every way there is (`run` from `BigUint`s, `run_into` from limbs into
//! limbs, `launch` on batches and a launch chained on its result) for several iterations, and
//! checks every result against num-bigint. A watchdog fails a round that does not finish in time
//! (a deadlock) with the step each thread is stuck at, instead of hanging the test run.
//!
//! On a GPU the device's memory is checked around the rounds (see [`check_memory`]): after each
//! round no buffer of the threads is left; the pools never hold more than the threads need when
//! each runs alone, however many rounds run (they reuse, not grow); and releasing the pools brings
//! the device back to its starting level, by bigfuse's counts and by the driver's.
//!
//! Without a GPU (CI) the same threads run on the CPU backend, where there is no device memory to
//! check. With BIGFUSE_REQUIRE_GPU=1 a missing GPU fails the tests.

mod common;

use bigfuse::{Arg, Batch, BigUint, Column, Device, Kernel, MemoryUsage, Out};
use common::kernels::{add, add_carry_min, compare, mul, mul_wide, poly, six_add, sub};
use common::{modulus, random_big, rng, wrap_add, wrap_sub};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// Threads calling at once.
const THREADS: usize = 8;
/// Iterations of every way of calling, per thread and round.
const ITERATIONS: usize = 3;
/// Rounds of all threads at once after the first (on a GPU the first one compiles the kernels).
const ROUNDS: u64 = 3;
/// How long a round may take before the test calls it a deadlock: a round takes well under a
/// second on a GPU and on the CPU backend of a debug build.
const DEADLOCK_AFTER: Duration = Duration::from_secs(120);
/// Instances per chunk of the GPU's call pipeline: calls of more instances are pipelines of
/// several chunks (on the transfer streams), calls of fewer run on the main stream alone.
const CHUNK: usize = 50;

/// The tests of this file one at a time: they set the pipeline's chunk through the environment,
/// and compare the device's free memory before and after.
static SERIAL: Mutex<()> = Mutex::new(());

// What the threads share must be shareable: this file does not compile if one of these stops
// being `Send + Sync` (or an error stops being sendable as a boxed error, sources included).
const _: () = {
    const fn shared<T: Send + Sync>() {}
    const fn boxed<T: std::error::Error + Send + Sync + 'static>() {}
    shared::<Device>();
    shared::<Kernel>();
    shared::<Batch>();
    shared::<bigfuse::runtime::GpuDevice>();
    boxed::<bigfuse::Error>();
    boxed::<bigfuse::CudaError>();
};

/// A result value of the reference arithmetic.
#[derive(Clone, Debug, PartialEq)]
enum Want {
    Big(BigUint),
    Bool(bool),
}

/// What one thread computes: `kernel(a, b)` for `n` pairs of `bits`-bit values, `reference` for
/// one pair being its results.
#[derive(Clone, Copy)]
struct Job {
    name: &'static str,
    kernel: fn() -> bigfuse::Result<&'static Kernel>,
    reference: fn(&BigUint, &BigUint, u64) -> Vec<Want>,
    bits: u64,
    n: usize,
}

fn wrap(x: BigUint, bits: u64) -> BigUint {
    x % modulus(bits)
}

fn ref_add(a: &BigUint, b: &BigUint, bits: u64) -> Vec<Want> {
    vec![Want::Big(wrap_add(a, b, bits))]
}

fn ref_sub(a: &BigUint, b: &BigUint, bits: u64) -> Vec<Want> {
    vec![Want::Big(wrap_sub(a, b, bits))]
}

fn ref_mul(a: &BigUint, b: &BigUint, bits: u64) -> Vec<Want> {
    vec![Want::Big(wrap(a * b, bits))]
}

fn ref_mul_wide(a: &BigUint, b: &BigUint, _bits: u64) -> Vec<Want> {
    vec![Want::Big(a * b)]
}

fn ref_poly(a: &BigUint, b: &BigUint, bits: u64) -> Vec<Want> {
    vec![Want::Big(wrap((a * a + b) * (b * b + b) + a * b, bits))]
}

fn ref_six_add(a: &BigUint, b: &BigUint, bits: u64) -> Vec<Want> {
    vec![Want::Big(wrap(a * 6u8 + b * 10u8, bits))]
}

fn ref_compare(a: &BigUint, b: &BigUint, _bits: u64) -> Vec<Want> {
    [a < b, a <= b, a > b, a >= b, a == b, a != b]
        .into_iter()
        .map(Want::Bool)
        .collect()
}

fn ref_add_carry_min(a: &BigUint, b: &BigUint, bits: u64) -> Vec<Want> {
    vec![
        Want::Big(wrap_add(a, b, bits)),
        Want::Bool(a + b >= modulus(bits)),
        Want::Big(a.min(b).clone()),
    ]
}

fn job(name: &'static str, bits: u64, n: usize) -> Job {
    type Reference = fn(&BigUint, &BigUint, u64) -> Vec<Want>;
    let (kernel, reference): (fn() -> bigfuse::Result<&'static Kernel>, Reference) = match name {
        "add" => (add::kernel, ref_add),
        "sub" => (sub::kernel, ref_sub),
        "mul" => (mul::kernel, ref_mul),
        "mul_wide" => (mul_wide::kernel, ref_mul_wide),
        "poly" => (poly::kernel, ref_poly),
        "six_add" => (six_add::kernel, ref_six_add),
        "compare" => (compare::kernel, ref_compare),
        "add_carry_min" => (add_carry_min::kernel, ref_add_carry_min),
        other => panic!("no kernel {other}"),
    };
    Job {
        name,
        kernel,
        reference,
        bits,
        n,
    }
}

/// The devices to run on: the CPU backend, and the GPU when there is one.
fn devices() -> Vec<Device> {
    let mut d = vec![Device::cpu()];
    d.extend(common::gpu());
    d
}

fn limbs(values: &[BigUint], bits: u64) -> Vec<u64> {
    let m = (bits / 64) as usize;
    let mut out = vec![0u64; values.len() * m];
    for (d, v) in out.chunks_mut(m).zip(values) {
        for (d, s) in d.iter_mut().zip(v.iter_u64_digits()) {
            *d = s;
        }
    }
    out
}

/// Each result's expected column: big integers as `BigUint`s (`as_big`) or as their limbs.
fn expected(want: &[Vec<Want>], widths: &[Option<u64>], as_big: bool) -> Vec<Column> {
    widths
        .iter()
        .enumerate()
        .map(|(k, width)| match width {
            Some(w) => {
                let values: Vec<BigUint> = want
                    .iter()
                    .map(|r| match &r[k] {
                        Want::Big(v) => v.clone(),
                        Want::Bool(_) => unreachable!("result {k} is a big integer"),
                    })
                    .collect();
                if as_big {
                    Column::Big(values)
                } else {
                    Column::U64(limbs(&values, *w))
                }
            }
            None => Column::Bool(
                want.iter()
                    .map(|r| match &r[k] {
                        Want::Bool(v) => *v,
                        Want::Big(_) => unreachable!("result {k} is a bool"),
                    })
                    .collect(),
            ),
        })
        .collect()
}

/// Where `got` first differs from `want`, in words.
fn difference(got: &[Column], want: &[Column]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} results, {} expected", got.len(), want.len()));
    }
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        if g == w {
            continue;
        }
        let at = |len: usize| -> String {
            match (g, w) {
                (Column::Big(g), Column::Big(w)) => {
                    let i = (0..len).find(|&i| g[i] != w[i]).unwrap_or(len);
                    format!("value {i}: got {:?}, want {:?}", g.get(i), w.get(i))
                }
                (Column::U64(g), Column::U64(w)) => {
                    let i = (0..len).find(|&i| g[i] != w[i]).unwrap_or(len);
                    format!("limb {i}: got {:?}, want {:?}", g.get(i), w.get(i))
                }
                (Column::Bool(g), Column::Bool(w)) => {
                    let i = (0..len).find(|&i| g[i] != w[i]).unwrap_or(len);
                    format!("value {i}: got {:?}, want {:?}", g.get(i), w.get(i))
                }
                _ => format!("a column of another kind: {g:?}"),
            }
        };
        return Some(format!(
            "result {k} ({} values, {} expected) differs at {}",
            g.len(),
            w.len(),
            at(g.len().min(w.len()))
        ));
    }
    None
}

/// The steps of an iteration, as the watchdog reports where a thread is.
const STEPS: [&str; 4] = ["starting", "run", "run_into", "launch"];
/// A thread's progress once it has finished.
const FINISHED: usize = usize::MAX;

/// One iteration of `job` on `dev`: every way of calling, each result checked. `outs` are the
/// thread's destination vectors, reused from one iteration to the next.
fn iteration(
    dev: &Device,
    job: &Job,
    seed: u64,
    outs: &mut Vec<Column>,
    progress: &AtomicUsize,
    iteration: usize,
) -> Result<(), String> {
    let step = |s: usize| progress.store(iteration * STEPS.len() + s, Ordering::Relaxed);
    let Job { bits, n, .. } = *job;
    let sizes = [bits];
    let context = |what: &str| format!("{} at {bits} bits x {n}, {what}", job.name);
    let fail = |what: &str, e: bigfuse::Error| format!("{}: {e}", context(what));
    let kernel = (job.kernel)().map_err(|e| fail("kernel", e))?;
    let spec = kernel.specialized(&sizes).map_err(|e| fail("sizes", e))?;
    // Each result's width when it is a big integer (None for a bool).
    let widths: Vec<Option<u64>> = spec
        .results
        .iter()
        .map(|r| match &r.ty {
            bigfuse::ir::Type::Big(s) => s.as_const(),
            _ => None,
        })
        .collect();
    let mut r = rng(seed);
    let a: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
    let b: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
    let want: Vec<Vec<Want>> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (job.reference)(x, y, bits))
        .collect();
    let want_big = expected(&want, &widths, true);
    let want_limbs = expected(&want, &widths, false);
    let (al, bl) = (limbs(&a, bits), limbs(&b, bits));

    // `run`: big integers in, owned columns out.
    step(1);
    let got = kernel
        .run(dev, &sizes, &[Arg::Big(&a), Arg::Big(&b)])
        .map_err(|e| fail("run", e))?;
    if let Some(d) = difference(&got, &want_big) {
        return Err(format!("{}: {d}", context("run")));
    }

    // `run_into`: limbs in, limbs out, into the vectors of the previous iteration.
    step(2);
    if outs.is_empty() {
        *outs = want_limbs
            .iter()
            .map(|c| match c {
                Column::Bool(_) => Column::Bool(vec![true; 3]),
                _ => Column::U64(vec![u64::MAX; 3]),
            })
            .collect();
    }
    let mut dest: Vec<Out> = outs.iter_mut().map(Column::as_out).collect();
    kernel
        .run_into(dev, &sizes, &[Arg::U64(&al), Arg::U64(&bl)], &mut dest)
        .map_err(|e| fail("run_into", e))?;
    drop(dest);
    if let Some(d) = difference(outs, &want_limbs) {
        return Err(format!("{}: {d}", context("run_into")));
    }

    // `launch` on batches (one from big integers, one from limbs), and a launch chained on its
    // first result when that is a `U<BITS>`: queued before anything is read back.
    step(3);
    let ab = Batch::big(dev, bits, &a).map_err(|e| fail("a batch", e))?;
    let bb = Batch::big(dev, bits, &bl).map_err(|e| fail("a batch of limbs", e))?;
    let results = kernel
        .launch(dev, &sizes, &[Arg::Batch(&ab), Arg::Batch(&bb)])
        .map_err(|e| fail("launch", e))?;
    let chained = if widths[0] == Some(bits) {
        let sums = add::launch(dev, bits, &results[0], &ab).map_err(|e| fail("chain", e))?;
        let Column::Big(first) = &want_big[0] else {
            unreachable!("result 0 is a big integer")
        };
        let want_sums: Vec<BigUint> = first
            .iter()
            .zip(&a)
            .map(|(r, x)| wrap_add(r, x, bits))
            .collect();
        Some((sums, want_sums))
    } else {
        None
    };
    if let Some((sums, want_sums)) = chained {
        let got = sums.to_limbs().map_err(|e| fail("reading the chain", e))?;
        if got != limbs(&want_sums, bits) {
            return Err(format!(
                "{}: the chained launch's results differ",
                context("launch")
            ));
        }
    }
    let got = results
        .iter()
        .map(Batch::to_column)
        .collect::<bigfuse::Result<Vec<_>>>()
        .map_err(|e| fail("reading a launch", e))?;
    if let Some(d) = difference(&got, &want_big) {
        return Err(format!("{}: {d}", context("launch")));
    }
    Ok(())
}

/// Every iteration of `job` (thread `t` of round `round`: its values depend on both).
fn work(
    dev: &Device,
    job: &Job,
    t: usize,
    round: u64,
    progress: &AtomicUsize,
) -> Result<(), String> {
    let mut outs = Vec::new();
    for i in 0..ITERATIONS {
        let seed = round * 1_000_003 + t as u64 * 1009 + i as u64;
        iteration(dev, job, seed, &mut outs, progress, i)?;
    }
    progress.store(FINISHED, Ordering::Relaxed);
    Ok(())
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// Runs `f` on a thread of its own and waits at most `limit` for it. Past the limit the test
/// fails, saying where each thread (by `progress`) is, and leaves the threads stuck.
fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    progress: &[AtomicUsize],
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let r = f();
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(limit) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Ok(r) => r,
            Err(p) => panic!("{what}: {}", panic_text(&*p)),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let stuck: Vec<String> = progress
                .iter()
                .enumerate()
                .filter_map(|(t, p)| match p.load(Ordering::Relaxed) {
                    FINISHED => None,
                    s => Some(format!(
                        "thread {t} in iteration {}, {}",
                        s / STEPS.len(),
                        STEPS[s % STEPS.len()]
                    )),
                })
                .collect();
            panic!(
                "{what} did not finish within {limit:?}: a deadlock (or a hang). Not finished: {}",
                stuck.join("; ")
            )
        }
    }
}

/// All jobs at once, one thread each, released together; fails with every thread's error.
fn round(dev: &Device, jobs: &[Job], round: u64, what: &str) {
    let progress: Arc<Vec<AtomicUsize>> =
        Arc::new(jobs.iter().map(|_| AtomicUsize::new(0)).collect());
    let (dev2, jobs2, progress2) = (dev.clone(), jobs.to_vec(), progress.clone());
    let started = Instant::now();
    let outcomes = within(
        &format!("{what}, round {round} on the {dev}"),
        DEADLOCK_AFTER,
        &progress,
        move || {
            let start = Barrier::new(jobs2.len());
            std::thread::scope(|s| {
                let handles: Vec<_> = jobs2
                    .iter()
                    .enumerate()
                    .map(|(t, job)| {
                        let (dev, start, progress) = (&dev2, &start, &progress2);
                        s.spawn(move || {
                            start.wait();
                            work(dev, job, t, round, &progress[t])
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .enumerate()
                    .map(|(t, h)| match h.join() {
                        Ok(r) => r.map_err(|e| format!("thread {t}: {e}")),
                        Err(p) => Err(format!("thread {t} panicked: {}", panic_text(&*p))),
                    })
                    .collect::<Vec<_>>()
            })
        },
    );
    let failures: Vec<String> = outcomes.into_iter().filter_map(Result::err).collect();
    assert!(
        failures.is_empty(),
        "{what}, round {round} on the {dev}: {} of {} threads failed:\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n")
    );
    eprintln!(
        "{what}, round {round} on the {dev}: {} threads x {ITERATIONS} iterations in {:.2?}",
        jobs.len(),
        started.elapsed()
    );
}

/// The rounds of one way of calling at once, on every device: a first round (on a GPU, every
/// thread's first call compiles and loads its kernel, all at once), then [`ROUNDS`] more, with
/// the memory checks around them on a GPU.
fn scenario(what: &str, jobs: &[Job]) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("BIGFUSE_PIPELINE_INSTANCES", CHUNK.to_string());
    assert_eq!(jobs.len(), THREADS);
    for dev in devices() {
        round(&dev, jobs, 0, what);
        match dev.as_gpu() {
            Some(gpu) => check_memory(&dev, gpu, jobs, what),
            None => {
                for r in 1..=ROUNDS {
                    round(&dev, jobs, r, what);
                }
                eprintln!("{what}: the CPU backend has no device memory to check");
            }
        }
    }
}

/// How much less free device memory the driver may report at the end than at the start with
/// bigfuse's pools back at their starting level: the driver's own keeping (it hands out small
/// allocations from 2 MiB pages, which it may keep for reuse). Past that, something outside the
/// pools grows with the rounds (kernels loaded again per call, say).
const DRIVER_SLACK: usize = 64 << 20;

/// The memory checks around [`ROUNDS`] rounds on a GPU (its kernels loaded by a first round):
///
/// 1. With the pools released, the starting level: bigfuse's counts (what exists: kernels'
///    constant tables) and the driver's free memory.
/// 2. Each thread's work alone, from empty pools: afterwards nothing of it exists any more, and
///    the pools hold what it needs at its peak (a pool allocates a buffer only when none of its
///    size is free, so it holds, per size, the most buffers in use at once). The sum over the
///    threads bounds what the threads can need at once: each needs at most its own peak.
/// 3. Each round: afterwards exactly the starting level exists (nothing leaked, no call's buffer
///    outlives it), and the pools hold at most the bound (every round, not only the first: a
///    second round of the same work reuses what the first left, never adds to it).
/// 4. The pools released: bigfuse's counts are exactly the starting level's, and the driver's
///    free memory too, within [`DRIVER_SLACK`] (the driver's own keeping).
fn check_memory(dev: &Device, gpu: &bigfuse::runtime::GpuDevice, jobs: &[Job], what: &str) {
    let at = |when: &str| format!("{what} on the {dev}, {when}");
    gpu.synchronize().expect("the GPU works");
    gpu.release_pooled_memory()
        .expect("the driver frees pooled memory");
    let start = gpu.memory_usage();
    assert_eq!(
        (start.device_pooled, start.pinned_pooled),
        (0, 0),
        "{}: the pools hold memory after being released",
        at("at the start")
    );
    let (free_at_start, _) = gpu.memory_info().expect("free memory");

    let mut bound = MemoryUsage::default();
    for (t, job) in jobs.iter().enumerate() {
        gpu.release_pooled_memory()
            .expect("the driver frees pooled memory");
        let progress = Arc::new(vec![AtomicUsize::new(0)]);
        let (dev2, job2, p2) = (dev.clone(), *job, progress.clone());
        within(
            &at("a thread's work alone"),
            DEADLOCK_AFTER,
            &progress,
            move || work(&dev2, &job2, t, 100, &p2[0]),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", at("a thread's work alone")));
        let u = gpu.memory_usage();
        assert_eq!(
            (u.device_in_use, u.pinned_in_use),
            (start.device_in_use, start.pinned_in_use),
            "{}: thread {t}'s work, run alone, left buffers in use",
            at("alone")
        );
        assert!(
            u.device_pooled > 0,
            "{}: thread {t}'s work used no device memory",
            at("alone")
        );
        bound.device_pooled += u.device_pooled;
        bound.pinned_pooled += u.pinned_pooled;
    }
    gpu.release_pooled_memory()
        .expect("the driver frees pooled memory");

    let mut before = gpu.memory_usage();
    for r in 1..=ROUNDS {
        round(dev, jobs, r, what);
        let u = gpu.memory_usage();
        let when = at(&format!("after round {r}"));
        assert_eq!(
            u.device_in_use,
            start.device_in_use,
            "{when}: {} bytes of device buffers exist that did not at the start (a leak)",
            u.device_in_use as i64 - start.device_in_use as i64
        );
        assert_eq!(
            u.pinned_in_use, start.pinned_in_use,
            "{when}: pinned staging still in use (a leak)"
        );
        assert!(
            u.device_pooled <= bound.device_pooled,
            "{when}: the device pool holds {} bytes, more than the {} bytes the threads need \
             when each runs alone: it grows from round to round instead of reusing",
            u.device_pooled,
            bound.device_pooled
        );
        assert!(
            u.pinned_pooled <= bound.pinned_pooled,
            "{when}: the pinned pool holds {} bytes, more than the {} bytes the threads need \
             when each runs alone",
            u.pinned_pooled,
            bound.pinned_pooled
        );
        eprintln!(
            "{when}: pooled {} bytes of device memory (bound {}), {} new since the previous \
             round; pinned {} (bound {})",
            u.device_pooled,
            bound.device_pooled,
            u.device_pooled.saturating_sub(before.device_pooled),
            u.pinned_pooled,
            bound.pinned_pooled
        );
        before = u;
    }

    gpu.release_pooled_memory()
        .expect("the driver frees pooled memory");
    assert_eq!(
        gpu.memory_usage(),
        start,
        "{}: not back to the starting level",
        at("with the pools released")
    );
    let (free_at_end, _) = gpu.memory_info().expect("free memory");
    eprintln!(
        "{}: the driver reports {free_at_start} bytes free at the start, {free_at_end} at the end",
        at("with the pools released")
    );
    assert!(
        free_at_end + DRIVER_SLACK >= free_at_start,
        "{}: the driver reports {} bytes less free device memory than at the start",
        at("with the pools released"),
        free_at_start - free_at_end
    );
}

#[test]
fn eight_threads_calling_the_same_kernel_at_the_same_size() {
    // The same kernel, size and batch length in every thread; each thread its own values.
    let jobs = vec![job("mul", 1024, 300); THREADS];
    scenario("the same kernel and size", &jobs);
}

#[test]
fn eight_threads_calling_different_kernels() {
    let jobs: Vec<Job> = [
        "add",
        "sub",
        "mul",
        "mul_wide",
        "poly",
        "six_add",
        "compare",
        "add_carry_min",
    ]
    .into_iter()
    .map(|k| job(k, 512, 200))
    .collect();
    scenario("different kernels", &jobs);
}

#[test]
fn eight_threads_calling_at_different_sizes() {
    // Different widths and batch lengths: some calls of one chunk (all on the main stream, the
    // results written straight into pinned memory), some pipelines of several chunks.
    let jobs: Vec<Job> = [
        (64, 40),
        (128, 300),
        (192, 45),
        (256, 260),
        (512, 97),
        (1024, 150),
        (2048, 33),
        (4096, 64),
    ]
    .into_iter()
    .map(|(bits, n)| job("poly", bits, n))
    .collect();
    scenario("different sizes", &jobs);
}

/// On a GPU: an allocation that finds the device full makes the pool, shared by every thread,
/// free what it keeps and try again (this used to deadlock: the pool trimmed itself while holding
/// its own lock); one that still does not fit is `OutOfMemory`, told by the driver's result code,
/// which it keeps as its source.
#[test]
fn a_full_device_trims_the_shared_pool_then_reports_out_of_memory_by_the_drivers_code() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(dev) = common::gpu() else {
        return; // no GPU: nothing to fill (`gpu()` says it skipped)
    };
    let gpu = dev.as_gpu().expect("a GPU").clone();
    let progress = Arc::new(vec![AtomicUsize::new(0)]);
    within("filling the device", DEADLOCK_AFTER, &progress, move || {
        fill_and_overflow(&gpu)
    });
}

/// The largest power of two not above `x` (at least 1).
fn power_of_two_below(x: usize) -> usize {
    1 << (usize::BITS - 1 - x.max(1).leading_zeros())
}

fn fill_and_overflow(gpu: &bigfuse::runtime::GpuDevice) {
    gpu.synchronize().expect("the GPU works");
    gpu.release_pooled_memory()
        .expect("the driver frees pooled memory");
    let start = gpu.memory_usage();
    let free = || gpu.memory_info().expect("free memory").0;
    // Sizes are powers of two, which the pool does not round up. On an 80 GB GPU `u` is 2 GiB.
    let u = power_of_two_below(free() / 20);
    // 2u that the pool keeps once dropped (under its cap of a quarter of the device).
    drop(vec![
        gpu.alloc_bytes(u, "pooled").expect("memory"),
        gpu.alloc_bytes(u, "pooled").expect("memory"),
    ]);
    assert_eq!(
        gpu.memory_usage().device_pooled,
        2 * u,
        "the pool keeps them"
    );
    // Hold buffers until between u and 1.125u are free.
    let mut held = Vec::new();
    while free() - u >= u / 8 {
        assert!(
            held.len() < 64,
            "the driver's free memory does not fall as buffers are held"
        );
        // 15/16 of a power of two: a size class of its own, so a filler never takes one of the
        // pooled buffers (of class u) that the test wants the pool to keep.
        let size = power_of_two_below(free() - u) / 16 * 15;
        held.push(
            gpu.alloc_bytes(size, "filler")
                .expect("less than what is free"),
        );
    }
    let left = free();
    assert!(left < 2 * u, "{left} bytes free");
    assert_eq!(
        gpu.memory_usage().device_pooled,
        2 * u,
        "the fillers left the pooled buffers alone"
    );
    // 2u do not fit as the device stands, and do once the pool frees the 2u it keeps.
    let fits_after_trim = gpu
        .alloc_bytes(2 * u, "a batch that needs the pooled memory")
        .unwrap_or_else(|e| {
            panic!(
                "with {left} bytes free and {} pooled: {e}; after the attempt the driver reports {} bytes free and the pool keeps {}",
                2 * u,
                free(),
                gpu.memory_usage().device_pooled
            );
        });
    assert_eq!(
        gpu.memory_usage().device_pooled,
        0,
        "the pool freed what it kept to make room"
    );
    // 4u do not fit at all: an error value with the driver's code, not a panic or a hang.
    match gpu.alloc_bytes(4 * u, "a batch too large") {
        Err(bigfuse::Error::OutOfMemory {
            bytes,
            source: Some(code),
            ..
        }) => {
            assert_eq!(bytes, 4 * u);
            assert!(code.is_out_of_memory(), "{code}");
            assert_eq!(code.name(), "CUDA_ERROR_OUT_OF_MEMORY");
        }
        other => panic!("{} bytes with {} free: {other:?}", 4 * u, free()),
    }
    held.push(fits_after_trim);
    drop(held);
    gpu.release_pooled_memory()
        .expect("the driver frees pooled memory");
    assert_eq!(gpu.memory_usage(), start, "back to the starting level");
}

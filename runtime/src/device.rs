//! Choosing where kernels run: a GPU, or the CPU backend when there is none.

use crate::error::{Error, Result};
use crate::gpu::GpuDevice;
use std::sync::Arc;

/// What the compiled kernel takes from the chip, as the driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resources {
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, in bytes (the dynamic part is the schedule's).
    pub shared_bytes: u32,
    /// Local memory per thread: non-zero means spills (or an array the compiler could not keep in
    /// registers).
    pub local_bytes: u32,
    /// The most threads per block the kernel can be launched with, given its registers.
    pub max_threads: u32,
}

/// What bigfuse holds of a GPU's memory, from its pools' own counts
/// ([`GpuDevice::memory_usage`](crate::GpuDevice::memory_usage)), in bytes of size classes (a
/// buffer counts its rounded-up size). Everything bigfuse took from the driver is the sum of the
/// `in_use` and `pooled` figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Device memory in buffers that exist: batches, kernels' constant tables, and the arenas and
    /// results of calls in progress.
    pub device_in_use: usize,
    /// Device memory kept for reuse by later calls (at most a quarter of the device's), freed by
    /// [`GpuDevice::release_pooled_memory`](crate::GpuDevice::release_pooled_memory).
    pub device_pooled: usize,
    /// Pinned host memory staging the transfers in progress.
    pub pinned_in_use: usize,
    /// Pinned host memory kept for reuse (at most 1 GiB).
    pub pinned_pooled: usize,
}

/// How the CPU backend runs a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuLevel {
    /// The high-level program, with num-bigint arithmetic: the fast path.
    Reference,
    /// The lowered program (array primitives over limbs): exercises the compiler's lowering.
    Lowered,
}

/// The CPU backend: the evaluator, in parallel over instances. What [`Device::auto`] falls back to
/// without a GPU, and what tests run on everywhere.
#[derive(Clone, Debug)]
pub struct CpuDevice {
    /// Which form of the program runs.
    pub level: CpuLevel,
    /// Why the GPU was not used, when [`Device::auto`] fell back to the CPU.
    pub fallback_reason: Option<String>,
}

/// Where kernels run: a GPU, or the CPU backend, which computes the same results without one
/// (the evaluator, in parallel over instances). Every call and every [`Batch`](crate::Batch)
/// takes the device it runs on. Cloning is cheap: a clone of a GPU device is the same GPU, with
/// the same streams and memory pools.
///
/// ```
/// use bigfuse_runtime::{Batch, Device};
/// use num_bigint::BigUint;
///
/// // The GPU if there is one; else the CPU backend, which says why the GPU was not used.
/// let dev = Device::auto()?;
/// println!("kernels run on the {dev}");
///
/// // Tests pin the CPU backend: the same results, no GPU needed.
/// let cpu = Device::cpu();
/// assert!(!cpu.is_gpu());
/// let x = Batch::big(&cpu, 128, &[BigUint::from(7u8), BigUint::from(u128::MAX)])?;
/// assert_eq!(x.to_big()?, [BigUint::from(7u8), BigUint::from(u128::MAX)]);
/// # Ok::<(), bigfuse_runtime::Error>(())
/// ```
///
/// # Concurrency
///
/// `Device`, [`Kernel`](crate::Kernel), [`Batch`](crate::Batch) and [`Error`] are `Send` and
/// `Sync`. Any number of threads may call kernels on one device at once (`run`, `run_into`,
/// `launch`, reading batches): the same kernel or different ones, at the same sizes or not. Each
/// call gets exactly its own results, and no combination of calls deadlocks
/// (`tests/concurrency.rs` runs eight threads at once in each of these ways).
///
/// What the threads share, and so how their calls are ordered:
///
/// - **On a GPU, three streams.** Every kernel of every thread, every batch upload and download,
///   and the whole of a call small enough for one chunk, go to the device's one main stream, in
///   the order the threads queue them: kernels of different calls run one after another, never
///   side by side, and a thread's call may wait behind work queued before it by others. The
///   uploads and downloads of pipelined calls of several chunks go to two transfer streams, so
///   they overlap other calls' kernels; events order each call's chunks, and a call waits for its
///   own events (after an error, for everything queued on the device, before its memory goes
///   back to the pools). Converting values to and from the kernels' layout runs on the calling
///   threads (and rayon's pool), in parallel.
/// - **On a GPU, two memory pools** (device memory, and pinned host memory for staging), so that
///   a buffer one call frees is reused by the next call of any thread. Device memory may go back
///   to the pool while work queued on the main stream still uses it: any later work that can
///   receive it is ordered after that work (the transfer streams wait on the main stream before
///   a pipelined call touches its memory). Staging memory goes back only once its copies are
///   complete, also after a failed call. What the pools hold:
///   [`GpuDevice::memory_usage`]; to give it back: [`GpuDevice::release_pooled_memory`].
/// - **The compiled kernels of a [`Kernel`](crate::Kernel)**, per sizes, schedule hints and GPU.
///   When several threads make the first call of one kernel at the same sizes at once, one of
///   them plans, compiles (NVRTC) and loads it while the others wait, then all use it; different
///   sizes or kernels compile in parallel. (Where a compact form serves first calls, they share
///   it the same way, and one background thread compiles the tuned kernel: [`crate::tiers`].) A
///   compilation that fails is not remembered: each waiting caller tries again and gets its own
///   error. Compiled binaries are also cached per
///   process and on disk (written atomically) for every kernel. With `BIGFUSE_AUTOTUNE=1`,
///   concurrent first calls at one size may each run the tuning (until one has stored its
///   choice), and their timings disturb each other: tune before going parallel.
/// - **On the CPU backend**, rayon's global thread pool, which runs the instances of every call.
///
/// A [`Batch`](crate::Batch) used from two threads: both may read it (reads wait for the kernels
/// that compute it) and pass it to launches at once; kernels never write into their arguments
/// (results are new batches), so nothing races. It is freed when its owner drops it, after the
/// threads that borrow it are done.
///
/// A failed call leaves the device usable for the other threads, except after a failure that
/// CUDA makes permanent for the whole context (an illegal address in a kernel, say): then every
/// later call on the GPU fails with [`Error::Cuda`].
#[derive(Clone, Debug)]
pub enum Device {
    /// A GPU, shared by every clone of the device and every batch on it.
    Gpu(Arc<GpuDevice>),
    /// The CPU backend.
    Cpu(CpuDevice),
}

impl Device {
    /// The first GPU if there is one, else the CPU backend (its description says why).
    /// `BIGFUSE_DEVICE=cpu` forces the CPU backend; `BIGFUSE_DEVICE=gpu` makes a missing GPU an
    /// error, and `BIGFUSE_DEVICE=gpu:N` picks GPU `N` (an error when there is no such GPU).
    pub fn auto() -> Result<Device> {
        if let Some(choice) = std::env::var("BIGFUSE_DEVICE")
            .ok()
            .filter(|v| !v.is_empty())
        {
            return match parse_choice(&choice)? {
                None => Ok(Device::cpu()),
                Some(ordinal) => Device::gpu(ordinal),
            };
        }
        match GpuDevice::new(0) {
            Ok(g) => Ok(Device::Gpu(Arc::new(g))),
            Err(e) => Ok(Device::Cpu(CpuDevice {
                level: CpuLevel::Reference,
                fallback_reason: Some(e.to_string()),
            })),
        }
    }

    /// How many GPUs there are (0 without a driver, a GPU, or the `cuda` feature): their
    /// ordinals for [`Device::gpu`] are `0..count`. [`Devices::gpus`](crate::Devices::gpus) takes
    /// them all.
    pub fn count() -> usize {
        GpuDevice::count()
    }

    /// GPU `ordinal`, or an error saying why it cannot be used.
    pub fn gpu(ordinal: usize) -> Result<Device> {
        Ok(Device::Gpu(Arc::new(GpuDevice::new(ordinal)?)))
    }

    /// The CPU backend (num-bigint reference arithmetic, parallel over instances).
    pub fn cpu() -> Device {
        Device::Cpu(CpuDevice {
            level: CpuLevel::Reference,
            fallback_reason: None,
        })
    }

    /// The CPU backend running lowered programs.
    pub fn cpu_lowered() -> Device {
        Device::Cpu(CpuDevice {
            level: CpuLevel::Lowered,
            fallback_reason: None,
        })
    }

    /// Whether kernels run on a GPU (else on the CPU backend).
    pub fn is_gpu(&self) -> bool {
        matches!(self, Device::Gpu(_))
    }

    /// The GPU, for what only a GPU has (its memory figures, its streams, loading programs).
    pub fn as_gpu(&self) -> Option<&Arc<GpuDevice>> {
        match self {
            Device::Gpu(g) => Some(g),
            Device::Cpu(_) => None,
        }
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Gpu(g) => {
                let t = g.target();
                write!(
                    f,
                    "GPU {}: {} ({}, {} SMs)",
                    g.ordinal(),
                    t.name,
                    t.sm(),
                    t.sm_count
                )
            }
            Device::Cpu(c) => {
                let threads = rayon::current_num_threads();
                let level = match c.level {
                    CpuLevel::Reference => "reference evaluator",
                    CpuLevel::Lowered => "lowered-IR evaluator",
                };
                write!(f, "CPU backend ({level}, {threads} thread(s))")?;
                if let Some(r) = &c.fallback_reason {
                    write!(f, " because no GPU could be used: {r}")?;
                }
                Ok(())
            }
        }
    }
}

/// `BIGFUSE_DEVICE`'s value: `None` for the CPU backend, else the GPU's ordinal.
fn parse_choice(v: &str) -> Result<Option<usize>> {
    match v.trim() {
        "cpu" => Ok(None),
        "gpu" => Ok(Some(0)),
        other => other
            .strip_prefix("gpu:")
            .and_then(|n| n.trim().parse::<usize>().ok())
            .map(Some)
            .ok_or_else(|| {
                Error::NoGpu(format!(
                    "BIGFUSE_DEVICE={other} is not understood: use `cpu`, `gpu`, or `gpu:N` for GPU N (0 for the first), or leave it unset"
                ))
            }),
    }
}

/// For GPU tests: the GPU if there is one; `None` (the test should skip, saying so) if not, unless
/// `BIGFUSE_REQUIRE_GPU=1`, in which case a missing GPU is an error, so a GPU run never passes by
/// skipping.
pub fn gpu_for_tests() -> Result<Option<Arc<GpuDevice>>> {
    let required = std::env::var("BIGFUSE_REQUIRE_GPU").is_ok_and(|v| v == "1");
    match GpuDevice::new(0) {
        Ok(g) => Ok(Some(Arc::new(g))),
        Err(e) if required => Err(e),
        Err(e) => {
            eprintln!("skipping GPU test: {e}");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_choice;

    #[test]
    fn device_choices_parse_or_say_what_is_understood() {
        assert_eq!(parse_choice("cpu").unwrap(), None);
        assert_eq!(parse_choice("gpu").unwrap(), Some(0));
        assert_eq!(parse_choice("gpu:0").unwrap(), Some(0));
        assert_eq!(parse_choice(" gpu:3 ").unwrap(), Some(3));
        for bad in ["tpu", "gpu:", "gpu:-1", "gpu:x", "GPU"] {
            let e = parse_choice(bad).unwrap_err().to_string();
            assert!(e.contains("gpu:N"), "{bad}: {e}");
        }
    }
}

//! Choosing where kernels run.

use crate::error::{Error, Result};
use crate::gpu::GpuDevice;
use std::sync::Arc;

/// What the compiled kernel takes from the chip, as the driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resources {
    pub registers: u32,
    pub shared_bytes: u32,
    /// Local memory per thread: non-zero means spills (or an array the compiler could not keep in
    /// registers).
    pub local_bytes: u32,
    pub max_threads: u32,
}

/// How the CPU backend runs a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuLevel {
    /// The high-level program, with num-bigint arithmetic: the fast path.
    Reference,
    /// The lowered program (array primitives over limbs): exercises the compiler's lowering.
    Lowered,
}

/// The CPU backend: the evaluator, in parallel over instances.
#[derive(Clone, Debug)]
pub struct CpuDevice {
    pub level: CpuLevel,
    /// Why the GPU was not used, when [`Device::auto`] fell back to the CPU.
    pub fallback_reason: Option<String>,
}

/// Where a kernel runs.
#[derive(Clone, Debug)]
pub enum Device {
    Gpu(Arc<GpuDevice>),
    Cpu(CpuDevice),
}

impl Device {
    /// The first GPU if there is one, else the CPU backend (its description says why).
    /// `BIGFUSE_DEVICE=cpu` forces the CPU backend; `BIGFUSE_DEVICE=gpu` makes a missing GPU an error.
    pub fn auto() -> Result<Device> {
        match std::env::var("BIGFUSE_DEVICE").ok().as_deref() {
            Some("cpu") => return Ok(Device::cpu()),
            Some("gpu") => return Device::gpu(0),
            Some(other) if !other.is_empty() => {
                return Err(Error::NoGpu(format!(
                "BIGFUSE_DEVICE={other} is not understood: use `cpu` or `gpu`, or leave it unset"
            )))
            }
            _ => {}
        }
        match GpuDevice::new(0) {
            Ok(g) => Ok(Device::Gpu(Arc::new(g))),
            Err(e) => Ok(Device::Cpu(CpuDevice {
                level: CpuLevel::Reference,
                fallback_reason: Some(e.to_string()),
            })),
        }
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

    pub fn is_gpu(&self) -> bool {
        matches!(self, Device::Gpu(_))
    }

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

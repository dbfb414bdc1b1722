//! bigfuse-runtime: compiles generated kernels with NVRTC (cached by hash of source, options and
//! device), moves batches of big integers to and from the GPU in a coalesced layout, launches; and a
//! CPU backend that runs the same programs through the evaluator, in parallel, when there is no GPU.
//!
//! The GPU backend is the `cuda` feature (on by default). Without it the crate depends on no CUDA
//! crate and runs on the CPU backend; its GPU types remain, uninhabited (see `nocuda.rs`).
//!
//! Users reach this crate through `bigfuse`, which re-exports what a program needs ([`Device`],
//! [`Batch`], [`Kernel`], [`Error`], ..). The modules below are for callers that manage device
//! memory and loaded programs themselves (the benchmarks do).

#![warn(missing_docs)]

pub mod autotune;
pub mod batch;
pub mod column;
pub mod device;
pub mod error;
pub mod kernel;
pub mod multi;
pub mod nvrtc;
mod store;
pub mod tiers;

#[cfg(feature = "cuda")]
mod call;
#[cfg(feature = "cuda")]
pub mod gpu;
#[cfg(feature = "cuda")]
pub mod memory;
#[cfg(feature = "cuda")]
mod resident;

#[cfg(not(feature = "cuda"))]
mod nocuda;
#[cfg(not(feature = "cuda"))]
use nocuda::{call, resident};
#[cfg(not(feature = "cuda"))]
pub use nocuda::{gpu, memory};

pub use autotune::Tuned;
pub use batch::Batch;
pub use column::{big_from_limbs, kind, Arg, Column, IntoArg, IntoOut, Out};
pub use device::{gpu_for_tests, CpuDevice, CpuLevel, Device, MemoryUsage};
pub use error::{CudaError, Error, Result};
pub use gpu::{GpuDevice, GpuKernel, GpuProgram, Resources};

pub use kernel::{env_hints, Kernel, Specialized};
pub use memory::DeviceBuffer;
pub use multi::{Devices, RunOn};
pub use tiers::Tier;

//! bigfuse-runtime: compiles generated kernels with NVRTC (cached by hash of source, options and
//! device), moves batches of big integers to and from the GPU in a coalesced layout, launches; and a
//! CPU backend that runs the same programs through the evaluator, in parallel, when there is no GPU.

pub mod autotune;
pub mod batch;
mod call;
pub mod column;
pub mod device;
pub mod error;
pub mod gpu;
pub mod kernel;
pub mod memory;
pub mod nvrtc;

pub use autotune::Tuned;
pub use batch::Batch;
pub use column::{big_from_limbs, kind, Arg, Column, IntoArg, IntoOut, Out};
pub use device::{gpu_for_tests, CpuDevice, CpuLevel, Device};
pub use error::{Error, Result};
pub use gpu::{GpuDevice, GpuKernel, GpuProgram, Resources};

pub use kernel::{env_hints, Kernel, Specialized};
pub use memory::DeviceBuffer;

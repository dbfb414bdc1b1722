//! bigfuse-runtime: compiles generated kernels with NVRTC (cached by hash of source, options and
//! device), moves batches of big integers to and from the GPU in a coalesced layout, launches; and a
//! CPU backend that runs the same programs through the evaluator, in parallel, when there is no GPU.

pub mod autotune;
pub mod column;
pub mod device;
pub mod error;
pub mod gpu;
pub mod kernel;
pub mod nvrtc;

pub use autotune::Tuned;
pub use column::{big_from_limbs, Arg, Column};
pub use device::{gpu_for_tests, CpuDevice, CpuLevel, Device};
pub use error::{Error, Result};
pub use gpu::{GpuDevice, GpuKernel, GpuProgram, Resources};

/// A buffer of 64-bit words on the GPU (inputs and outputs of [`GpuKernel::launch`]).
pub type DeviceBuffer = cudarc::driver::CudaSlice<u64>;
pub use kernel::{env_hints, Kernel};

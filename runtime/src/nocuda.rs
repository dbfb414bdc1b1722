//! The GPU backend's types in a build without the `cuda` feature: the same names and methods
//! (those that do not expose cudarc's types), but uninhabited, so no value of them exists and every
//! method body is unreachable. Why not leave them out: features must be additive. Code written
//! against a build without `cuda` (a `match` over `Device`, a function taking `&GpuDevice`) must
//! still compile when another crate in the same build turns `cuda` on, and the reverse; so
//! `Device::Gpu` and these types exist in both builds, and only [`gpu::GpuDevice::new`] differs: it
//! returns [`Error::NoCuda`].

use crate::error::{Error, Result};
use std::convert::Infallible;

/// The GPU backend of a build with the `cuda` feature, uninhabited here.
pub mod gpu {
    use super::*;
    use crate::memory::DeviceBuffer;
    use bigfuse_codegen::{BufferLayout, Compiled, Plan, Target};

    pub use crate::device::Resources;

    /// Whether the CUDA driver library can be loaded: never, in this build.
    pub fn driver_available() -> bool {
        false
    }

    /// The CUDA version the driver supports: none, in this build.
    pub fn driver_version() -> Option<(i32, i32)> {
        None
    }

    /// A GPU; none can be opened in a build without the `cuda` feature.
    #[derive(Debug)]
    pub struct GpuDevice {
        never: Infallible,
    }

    impl GpuDevice {
        /// No GPU can be used in this build: 0.
        pub fn count() -> usize {
            0
        }

        /// Always [`Error::NoCuda`] in this build.
        pub fn new(ordinal: usize) -> Result<GpuDevice> {
            let _ = ordinal;
            Err(Error::NoCuda)
        }

        pub(crate) fn unreachable(&self) -> ! {
            match self.never {}
        }

        /// What the compiler schedules kernels for (unreachable: no GPU exists in this build).
        pub fn target(&self) -> &Target {
            self.unreachable()
        }

        /// The CUDA ordinal (unreachable).
        pub fn ordinal(&self) -> usize {
            self.unreachable()
        }

        /// The CUDA version the driver supports (unreachable).
        pub fn driver_version(&self) -> (i32, i32) {
            self.unreachable()
        }

        /// Pooled device memory (unreachable).
        pub fn alloc_bytes(&self, _bytes: usize, _what: &str) -> Result<DeviceBuffer> {
            self.unreachable()
        }

        /// A zeroed device buffer (unreachable).
        pub fn alloc(&self, _len: usize, _what: &str) -> Result<DeviceBuffer> {
            self.unreachable()
        }

        /// Copies values to the device (unreachable).
        pub fn upload<T: Copy>(&self, _values: &[T], _what: &str) -> Result<DeviceBuffer> {
            self.unreachable()
        }

        /// Copies a buffer back (unreachable).
        pub fn download(&self, _buf: &DeviceBuffer, _what: &str) -> Result<Vec<u64>> {
            self.unreachable()
        }

        /// Copies a buffer back into `dst` (unreachable).
        pub fn download_into<T: Copy>(
            &self,
            _buf: &DeviceBuffer,
            _dst: &mut [T],
            _what: &str,
        ) -> Result<()> {
            self.unreachable()
        }

        /// Copies between device buffers (unreachable).
        pub fn copy(
            &self,
            _src: &DeviceBuffer,
            _dst: &mut DeviceBuffer,
            _bytes: usize,
        ) -> Result<()> {
            self.unreachable()
        }

        /// Waits for the device (unreachable).
        pub fn synchronize(&self) -> Result<()> {
            self.unreachable()
        }

        /// Compiles and loads a kernel (unreachable).
        pub fn load(&self, _compiled: Compiled) -> Result<GpuKernel> {
            self.unreachable()
        }

        /// Compiles and loads a plan (unreachable).
        pub fn load_plan(&self, _plan: Plan) -> Result<GpuProgram> {
            self.unreachable()
        }

        /// What bigfuse holds of the GPU's memory (unreachable).
        pub fn memory_usage(&self) -> crate::device::MemoryUsage {
            self.unreachable()
        }

        /// Frees the pools' memory (unreachable).
        pub fn release_pooled_memory(&self) -> Result<()> {
            self.unreachable()
        }

        /// Free and total device memory (unreachable).
        pub fn memory_info(&self) -> Result<(usize, usize)> {
            self.unreachable()
        }
    }

    /// A kernel loaded on a GPU (none in this build).
    pub struct GpuKernel {
        /// The compiler's output.
        pub compiled: Compiled,
        /// What the kernel takes from the chip.
        pub resources: Resources,
        /// Which form was loaded, and why.
        pub form: Option<String>,
        /// Blocks of this kernel one SM runs at once.
        pub blocks_per_sm: u32,
        never: Infallible,
    }

    impl GpuKernel {
        /// Launches over `n` instances (unreachable).
        pub fn launch(
            &self,
            _dev: &GpuDevice,
            _n: u64,
            _inputs: &[&DeviceBuffer],
            _outputs: &mut [DeviceBuffer],
        ) -> Result<()> {
            match self.never {}
        }

        /// Instances one wave covers (unreachable).
        pub fn instances_per_wave(&self, _target: &Target) -> u64 {
            match self.never {}
        }
    }

    /// A plan loaded on a GPU (none in this build).
    pub struct GpuProgram {
        /// The compiler's plan.
        pub plan: Plan,
        /// The plan's kernels, loaded.
        pub parts: Vec<GpuKernel>,
        /// The layouts of the program's arguments.
        pub inputs: Vec<BufferLayout>,
        /// The layouts of the program's results.
        pub outputs: Vec<BufferLayout>,
        never: Infallible,
    }

    impl GpuProgram {
        /// The kernel, when the plan is a single one (unreachable).
        pub fn single(&self) -> Option<&GpuKernel> {
            match self.never {}
        }

        /// 64-bit words per instance of each result (unreachable).
        pub fn result_words(&self) -> Vec<u64> {
            match self.never {}
        }

        /// Bytes of intermediates for `c` instances (unreachable).
        pub fn temp_bytes(&self, _c: u64) -> u64 {
            match self.never {}
        }

        /// Instances one wave covers (unreachable).
        pub fn instances_per_wave(&self, _target: &Target) -> u64 {
            match self.never {}
        }

        /// Launches every kernel (unreachable).
        pub fn launch(
            &self,
            _dev: &GpuDevice,
            _n: u64,
            _inputs: &[&DeviceBuffer],
            _outputs: &mut [DeviceBuffer],
        ) -> Result<()> {
            match self.never {}
        }
    }
}

/// Device memory of a build with the `cuda` feature, uninhabited here.
pub mod memory {
    use super::*;

    /// Device memory (none in this build).
    #[derive(Debug)]
    pub struct DeviceBuffer {
        never: Infallible,
    }

    impl DeviceBuffer {
        /// The device address (unreachable).
        pub fn ptr(&self) -> u64 {
            match self.never {}
        }

        /// Usable bytes (unreachable).
        pub fn bytes(&self) -> usize {
            match self.never {}
        }

        /// Usable 64-bit words (unreachable).
        pub fn len(&self) -> usize {
            match self.never {}
        }

        /// Whether the buffer is empty (unreachable).
        pub fn is_empty(&self) -> bool {
            match self.never {}
        }
    }
}

pub(crate) mod call {
    use super::*;
    use crate::batch::Batch;
    use crate::column::{Arg, Out, Slot};
    use crate::device::Device;
    use crate::gpu::{GpuDevice, GpuProgram};
    use std::sync::Arc;

    /// A call on a GPU (none in this build); see `call.rs`. Its fields are call.rs's, so that
    /// kernel.rs builds it the same way in both builds.
    #[derive(Clone, Copy)]
    #[allow(dead_code)]
    pub(crate) struct Call<'a> {
        pub gpu: &'a Arc<GpuDevice>,
        pub program: &'a GpuProgram,
        pub params: &'a [Slot],
        pub results: &'a [Slot],
        pub args: &'a [Arg<'a>],
        pub n: usize,
    }

    impl Call<'_> {
        pub(crate) fn run(self, _outs: &mut [Out]) -> Result<()> {
            self.gpu.unreachable()
        }

        pub(crate) fn launch(self, _dev: &Device) -> Result<Vec<Batch>> {
            self.gpu.unreachable()
        }
    }
}

pub(crate) mod resident {
    use super::*;
    use crate::column::{Arg, Out, Slot};
    use crate::gpu::GpuDevice;
    use std::sync::Arc;

    /// A batch on a GPU (none in this build); see `resident.rs`.
    pub(crate) struct Resident(Infallible);

    impl Resident {
        pub(crate) fn upload(
            gpu: &Arc<GpuDevice>,
            _slot: &Slot,
            _arg: &Arg,
            _n: usize,
        ) -> Result<Resident> {
            gpu.unreachable()
        }

        pub(crate) fn ordinal(&self) -> usize {
            match self.0 {}
        }

        pub(crate) fn wait(&self) -> Result<()> {
            match self.0 {}
        }

        pub(crate) fn is_ready(&self) -> bool {
            match self.0 {}
        }

        pub(crate) fn read(&self, _slot: &Slot, _n: usize, _out: &mut Out) -> Result<()> {
            match self.0 {}
        }

        pub(crate) fn ptr_on(&self, _gpu: &GpuDevice) -> Option<u64> {
            match self.0 {}
        }
    }
}

pub(crate) mod nvrtc_library {
    use super::*;
    use std::ffi::CStr;

    /// An NVRTC library (none is loaded in this build: `nvrtc::library` says why).
    #[derive(Debug)]
    pub struct Nvrtc(Infallible);

    // Never made here; the variants are those compile_uncached matches on.
    #[allow(dead_code)]
    pub(crate) enum Failure {
        Rejected(String),
        Call(String),
    }

    impl Nvrtc {
        /// NVRTC's version (unreachable: no NVRTC is loaded in this build).
        pub fn version(&self) -> (i32, i32) {
            match self.0 {}
        }

        /// The library file (unreachable).
        pub fn path(&self) -> &std::path::Path {
            match self.0 {}
        }

        /// The architectures it compiles for (unreachable).
        pub fn architectures(&self) -> &[i32] {
            match self.0 {}
        }

        /// The library in words (unreachable).
        pub fn describe(&self) -> String {
            match self.0 {}
        }

        /// Whether it compiles for `arch` (unreachable).
        pub fn supports(&self, _arch: &str) -> bool {
            match self.0 {}
        }

        pub(crate) fn compile(
            &self,
            _source: &CStr,
            _name: &CStr,
            _options: &[String],
        ) -> std::result::Result<Vec<u8>, Failure> {
            match self.0 {}
        }
    }
}

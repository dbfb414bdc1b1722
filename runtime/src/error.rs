use bigfuse_codegen::CodegenError;
use bigfuse_core::IrError;
use std::path::PathBuf;
use thiserror::Error;

/// Everything that can go wrong between a call and its results. No public function panics on bad
/// input; each failure says what happened and what to do.
#[derive(Debug, Error)]
pub enum Error {
    /// The program or the requested sizes are invalid.
    #[error(transparent)]
    Ir(#[from] IrError),
    /// The compiler cannot generate a kernel for this program and size.
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    /// Arguments of one call have different numbers of instances.
    #[error(
        "batch lengths differ: `{first}` has {first_len} value(s) but `{other}` has {other_len}; \
         every argument needs one value per instance"
    )]
    BatchMismatch {
        first: String,
        first_len: usize,
        other: String,
        other_len: usize,
    },
    /// An input does not fit its declared width (values are never silently truncated).
    #[error(
        "value {index} of `{param}` is {bits} bits wide, but `{param}` is U<{max}>; \
         reduce it modulo 2^{max} or call with a larger size"
    )]
    ValueTooWide {
        param: String,
        index: usize,
        bits: u64,
        max: u64,
    },
    /// The arguments do not match the kernel's parameters.
    #[error("bad arguments for `{kernel}`: {message}")]
    Argument { kernel: String, message: String },
    /// No usable GPU.
    #[error("no CUDA GPU available: {0}")]
    NoGpu(String),
    /// This build has no GPU backend (the `cuda` feature is off).
    #[error(
        "this build of bigfuse has no GPU support: its `cuda` feature (on by default) is off, so it \
         runs on the CPU backend only (Device::cpu(), or Device::auto()). Build with the `cuda` \
         feature to use a GPU"
    )]
    NoCuda,
    /// The CUDA driver library is missing.
    #[error(
        "the CUDA driver library (libcuda.so.1) could not be loaded: this machine has no NVIDIA driver. \
         Use Device::cpu() (or Device::auto(), which falls back to it)"
    )]
    NoDriver,
    /// The CUDA driver is older than CUDA 12.0.
    #[error(
        "the NVIDIA driver supports CUDA {major}.{minor}, and bigfuse needs CUDA 12.0 or newer: \
         update the driver (R525 or newer for CUDA 12, R580 or newer for CUDA 13), or use \
         Device::cpu() (Device::auto() falls back to it)"
    )]
    OldDriver { major: i32, minor: i32 },
    /// No usable NVRTC library: none found, too old, or too new for the driver; says which.
    #[error(
        "no usable NVRTC library: {0}. bigfuse compiles kernels with NVRTC 12.0 or newer (CUDA 12 \
         or 13). For a CUDA 13 driver (R580 or newer) install it with `pip install --target DIR \
         nvidia-cuda-nvrtc==13.0.88` and add DIR/nvidia/cu13/lib to LD_LIBRARY_PATH; for a CUDA 12 \
         driver (R525 or newer) with `pip install --target DIR nvidia-cuda-nvrtc-cu12` and add \
         DIR/nvidia/cuda_nvrtc/lib; or set BIGFUSE_NVRTC to the library file"
    )]
    NoNvrtc(String),
    /// NVRTC rejected generated CUDA: a compiler bug, reported with the log and the source.
    #[error("NVRTC could not compile kernel `{kernel}` (the source is in {}):\n{log}", path.display())]
    Compile {
        kernel: String,
        path: PathBuf,
        log: String,
    },
    /// The device has too little free memory for the batch.
    #[error(
        "out of device memory while allocating {bytes} bytes for {what}: split the batch into smaller ones"
    )]
    OutOfMemory { what: String, bytes: usize },
    /// Any other failure reported by the CUDA driver.
    #[error("CUDA driver error while {during}: {message}")]
    Driver { during: String, message: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    #[cfg(feature = "cuda")]
    pub(crate) fn driver(during: impl Into<String>, e: impl std::fmt::Debug) -> Error {
        let message = format!("{e:?}");
        Error::Driver {
            during: during.into(),
            message,
        }
    }
}

//! The one error type of bigfuse: every fallible call returns [`Result`], so that a caller handles
//! bad input, a missing GPU or a driver failure as values, never as panics.

use bigfuse_codegen::CodegenError;
use bigfuse_core::IrError;
use std::path::PathBuf;
use thiserror::Error;

/// Everything that can go wrong between a call and its results. No public function panics on bad
/// input; each failure says what happened and what to do.
///
/// The enum is `#[non_exhaustive]`: later versions may tell new failures apart, so a `match` on it
/// ends with a wildcard arm. It has the same variants with and without the `cuda` feature (a build
/// without it never returns the GPU ones), so code written against either build compiles with the
/// other.
///
/// Failures of the CUDA driver keep the driver's result code: [`Error::Cuda`], and
/// [`Error::OutOfMemory`] when the driver reported it, return it as their
/// [`source`](std::error::Error::source), a [`CudaError`]. Their message names the code too, so
/// printing the error alone loses nothing.
///
/// ```
/// use bigfuse_runtime::{Batch, Device, Error};
/// use num_bigint::BigUint;
///
/// let dev = Device::cpu();
/// // 2^70 does not fit a 64-bit big integer: an error value that says which value, not a panic.
/// let too_wide = vec![BigUint::from(1u8), BigUint::from(1u8) << 70];
/// match Batch::big(&dev, 64, &too_wide) {
///     Err(Error::ValueTooWide { index, bits, .. }) => assert_eq!((index, bits), (1, 71)),
///     Err(Error::OutOfMemory { .. }) => { /* split the batch */ }
///     Err(other) => panic!("unexpected: {other}"),
///     Ok(_) => panic!("2^70 is not a 64-bit value"),
/// }
/// ```
#[derive(Debug, Error)]
#[non_exhaustive]
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
        /// The first argument, by parameter name.
        first: String,
        /// Its number of instances.
        first_len: usize,
        /// The argument whose length differs from the first's.
        other: String,
        /// Its number of instances.
        other_len: usize,
    },
    /// An input does not fit its declared width (values are never silently truncated).
    #[error(
        "value {index} of `{param}` is {bits} bits wide, but `{param}` is U<{max}>; \
         reduce it modulo 2^{max} or call with a larger size"
    )]
    ValueTooWide {
        /// The parameter (or `batch` for [`Batch::new`](crate::Batch::new)).
        param: String,
        /// Which value of the argument, counting from 0.
        index: usize,
        /// The value's width in bits.
        bits: u64,
        /// The declared width.
        max: u64,
    },
    /// The arguments do not match the kernel's parameters.
    #[error("bad arguments for `{kernel}`: {message}")]
    Argument {
        /// The kernel called (empty when the failure is not a call's, e.g. a batch's).
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// No usable GPU: none found, or the one asked for does not exist; says why. With
    /// [`Device::auto`](crate::Device::auto) this is the reason the CPU backend was chosen.
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
    OldDriver {
        /// The CUDA major version the driver supports.
        major: i32,
        /// Its minor version.
        minor: i32,
    },
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
        /// The kernel's name.
        kernel: String,
        /// Where the rejected source was written (empty when it could not be handed to NVRTC).
        path: PathBuf,
        /// NVRTC's log.
        log: String,
    },
    /// The device has too little free memory for the batch: split it into smaller ones. Detected
    /// by the driver's result code (`CUDA_ERROR_OUT_OF_MEMORY`, kept as the source), or before
    /// asking the driver when a request exceeds the device's memory (no source).
    #[error("{}", out_of_memory_message(what, *bytes))]
    OutOfMemory {
        /// What was being allocated, or what bigfuse was doing when the driver ran out of memory.
        what: String,
        /// Bytes asked for; 0 when the driver ran out of memory in a call that is not an
        /// allocation (loading a module, launching a kernel).
        bytes: usize,
        /// The driver's result code, when the driver reported it.
        #[source]
        source: Option<CudaError>,
    },
    /// A call of the CUDA driver failed: what bigfuse was doing, and the driver's result code.
    #[error("CUDA driver error while {during}: {source}")]
    Cuda {
        /// What bigfuse was doing (`launching a kernel`, `waiting for a batch`, ..).
        during: String,
        /// The driver's result code.
        #[source]
        source: CudaError,
    },
    /// A failure known only by its text, with no CUDA result code: a failed NVRTC call (not a
    /// rejected source, which is [`Error::Compile`]), or a failure described by code outside
    /// bigfuse.
    #[error("{during} failed: {message}")]
    Driver {
        /// What was being done (`running NVRTC`, ..).
        during: String,
        /// What the library said.
        message: String,
    },
}

/// The result of every fallible bigfuse call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn out_of_memory_message(what: &str, bytes: usize) -> String {
    if bytes == 0 {
        format!("out of device memory while {what}: free device memory or split the batch into smaller ones")
    } else {
        format!(
            "out of device memory while allocating {bytes} bytes for {what}: split the batch into smaller ones"
        )
    }
}

#[cfg(feature = "cuda")]
type DriverCode = cudarc::driver::DriverError;
/// No driver error exists in a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
type DriverCode = std::convert::Infallible;

/// A failure the CUDA driver reported: its result code (a `CUresult`). The
/// [`source`](std::error::Error::source) of [`Error::Cuda`] and of a driver's
/// [`Error::OutOfMemory`], for callers that act on the exact code (retry after
/// `CUDA_ERROR_OUT_OF_MEMORY`, give up on `CUDA_ERROR_ILLEGAL_ADDRESS`, which leaves the context
/// unusable).
///
/// The type exists in builds without the `cuda` feature too, where no value of it can be made.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CudaError(DriverCode);

impl CudaError {
    /// The numeric result code, as in CUDA's `cuda.h` (2 is `CUDA_ERROR_OUT_OF_MEMORY`).
    pub fn code(&self) -> u32 {
        #[cfg(feature = "cuda")]
        return self.0 .0 as u32;
        #[cfg(not(feature = "cuda"))]
        match self.0 {}
    }

    /// The code's name, e.g. `CUDA_ERROR_LAUNCH_FAILED`.
    pub fn name(&self) -> String {
        #[cfg(feature = "cuda")]
        return format!("{:?}", self.0 .0);
        #[cfg(not(feature = "cuda"))]
        match self.0 {}
    }

    /// Whether the driver ran out of device memory (`CUDA_ERROR_OUT_OF_MEMORY`).
    pub fn is_out_of_memory(&self) -> bool {
        #[cfg(feature = "cuda")]
        return self.0 .0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY;
        #[cfg(not(feature = "cuda"))]
        match self.0 {}
    }

    /// The driver's description of the code, when the driver library can be loaded (the text
    /// comes from the driver itself).
    fn description(&self) -> Option<String> {
        #[cfg(feature = "cuda")]
        {
            if !crate::gpu::driver_available() {
                return None;
            }
            let e = self.0;
            std::panic::catch_unwind(move || {
                e.error_string()
                    .ok()
                    .map(|s| s.to_string_lossy().into_owned())
            })
            .ok()
            .flatten()
        }
        #[cfg(not(feature = "cuda"))]
        match self.0 {}
    }
}

#[cfg(feature = "cuda")]
impl CudaError {
    /// cudarc's value of the same failure (builds with the `cuda` feature).
    pub fn driver_error(&self) -> cudarc::driver::DriverError {
        self.0
    }
}

#[cfg(feature = "cuda")]
impl From<cudarc::driver::DriverError> for CudaError {
    fn from(e: cudarc::driver::DriverError) -> CudaError {
        CudaError(e)
    }
}

impl std::fmt::Debug for CudaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaError({} = {})", self.name(), self.code())
    }
}

impl std::fmt::Display for CudaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())?;
        if let Some(d) = self.description() {
            write!(f, ": {d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CudaError {}

impl Error {
    /// The error of a failed driver call made while `during`: out-of-memory when the result code
    /// says so (never by the text), else [`Error::Cuda`]; the code is kept as the source.
    #[cfg(feature = "cuda")]
    pub(crate) fn cuda(during: impl Into<String>, e: cudarc::driver::DriverError) -> Error {
        Error::cuda_allocating(during, 0, e)
    }

    /// [`Error::cuda`] for an allocation of `bytes` bytes of `what`.
    #[cfg(feature = "cuda")]
    pub(crate) fn cuda_allocating(
        what: impl Into<String>,
        bytes: usize,
        e: cudarc::driver::DriverError,
    ) -> Error {
        let source = CudaError(e);
        if source.is_out_of_memory() {
            Error::OutOfMemory {
                what: what.into(),
                bytes,
                source: Some(source),
            }
        } else {
            Error::Cuda {
                during: what.into(),
                source,
            }
        }
    }
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use super::*;
    use cudarc::driver::sys::CUresult;
    use cudarc::driver::DriverError;
    use std::error::Error as _;

    #[test]
    fn a_driver_failure_keeps_its_result_code_as_the_source() {
        let e = Error::cuda(
            "launching a kernel",
            DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED),
        );
        assert!(matches!(&e, Error::Cuda { during, .. } if during == "launching a kernel"));
        let source = e
            .source()
            .and_then(|s| s.downcast_ref::<CudaError>())
            .expect("the driver's error is the source");
        assert_eq!(source.code(), CUresult::CUDA_ERROR_LAUNCH_FAILED as u32);
        assert_eq!(source.name(), "CUDA_ERROR_LAUNCH_FAILED");
        assert_eq!(
            source.driver_error(),
            DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED)
        );
        assert!(!source.is_out_of_memory());
        // The message names the code, so printing the error alone loses nothing.
        let text = e.to_string();
        assert!(
            text.starts_with(
                "CUDA driver error while launching a kernel: CUDA_ERROR_LAUNCH_FAILED (719)"
            ),
            "{text}"
        );
    }

    #[test]
    fn out_of_memory_is_told_by_the_result_code() {
        let oom = DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY);
        // A failed allocation: the size and the code are kept.
        match Error::cuda_allocating("a batch", 1 << 40, oom) {
            Error::OutOfMemory {
                what,
                bytes,
                source: Some(code),
            } => {
                assert_eq!((what.as_str(), bytes), ("a batch", 1 << 40));
                assert!(code.is_out_of_memory());
                assert_eq!(code.code(), 2);
            }
            other => panic!("not classified as out-of-memory: {other:?}"),
        }
        // Out of memory in a call that is not an allocation (loading a module, launching).
        let e = Error::cuda("loading a compiled module", oom);
        assert!(
            matches!(
                e,
                Error::OutOfMemory {
                    bytes: 0,
                    source: Some(_),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .starts_with("out of device memory while loading a compiled module"),
            "{e}"
        );
        assert!(e.source().is_some());
        // Codes whose meaning is about memory but not its exhaustion are not out-of-memory.
        for code in [
            CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
            CUresult::CUDA_ERROR_INVALID_VALUE,
            CUresult::CUDA_ERROR_ALREADY_MAPPED,
            CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
        ] {
            let e = Error::cuda_allocating("a batch", 256, DriverError(code));
            assert!(matches!(e, Error::Cuda { .. }), "{code:?}: {e:?}");
        }
    }

    #[test]
    fn driver_calls_report_out_of_memory_and_other_failures_as_values() {
        let oom = crate::gpu::guarded("zeroing a batch", || {
            Err::<(), _>(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY))
        });
        assert!(matches!(oom, Err(Error::OutOfMemory { .. })), "{oom:?}");
        let other = crate::gpu::guarded("zeroing a batch", || {
            Err::<(), _>(DriverError(CUresult::CUDA_ERROR_INVALID_CONTEXT))
        });
        match other {
            Err(Error::Cuda { during, source }) => {
                assert_eq!(during, "zeroing a batch");
                assert_eq!(source.name(), "CUDA_ERROR_INVALID_CONTEXT");
            }
            other => panic!("{other:?}"),
        }
    }
}

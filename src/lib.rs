//! # bigfuse
//!
//! Write a Rust function over big unsigned integers; get one fused CUDA kernel, compiled at run time
//! by NVRTC and launched over a batch, with results identical to num-bigint. Without a GPU the same
//! function runs on the CPU backend.
//!
//! ```
//! use bigfuse::prelude::*;
//!
//! #[bigfuse::kernel]
//! fn add3(a: U<BITS>, b: U<BITS>, c: U<BITS>) -> U<BITS> {
//!     a + b + c // wrapping modulo 2^BITS
//! }
//!
//! # fn main() -> bigfuse::Result<()> {
//! let dev = Device::cpu(); // or Device::auto(): the GPU if there is one
//! let a = vec![BigUint::from(5u8), BigUint::from(7u8)];
//! let b = vec![BigUint::from(1u8), BigUint::from(2u8)];
//! let c = vec![BigUint::from(10u8), BigUint::from(20u8)];
//! let r = add3::run(&dev, 256, &a, &b, &c)?;
//! assert_eq!(r, vec![BigUint::from(16u8), BigUint::from(29u8)]);
//!
//! // Little-endian u64 limbs (256 / 64 = 4 per value) in, limbs out into a vector you keep.
//! let limbs: Vec<u64> = vec![5, 0, 0, 0, 7, 0, 0, 1];
//! let mut out: Vec<u64> = Vec::new();
//! add3::run_into(&dev, 256, &limbs, &b, &c, &mut out)?;
//! assert_eq!(out, vec![16, 0, 0, 0, 29, 0, 0, 1]);
//!
//! // Batches stay on the device between kernels; reading one waits for it.
//! let x = Batch::big(&dev, 256, &a)?;
//! let y = add3::launch(&dev, 256, &x, &x, &x)?;
//! let z = add3::launch(&dev, 256, &y, &y, &x)?;
//! assert_eq!(z.to_big()?, vec![BigUint::from(35u8), BigUint::from(49u8)]);
//! # Ok(()) }
//! ```
//!
//! The pipeline: [`macro@kernel`] turns the function into IR ([`ir`]); the compiler
//! ([`codegen`]) lowers big-integer operations to map / scan / reduce over limbs, fuses, schedules
//! (threads per instance, limbs per thread), places arrays in registers and emits CUDA C; the
//! runtime ([`runtime`]) compiles it with NVRTC (cached), uploads the batch and launches.

// The macros name this crate `::bigfuse`; inside it, that is itself.
extern crate self as bigfuse;

pub use bigfuse_codegen as codegen;
pub use bigfuse_core as ir;
pub use bigfuse_macros::{kernel, op};
pub use bigfuse_runtime as runtime;

pub use bigfuse_codegen::{Hints, Target};
pub use bigfuse_runtime::{
    kind, Arg, Batch, Column, Device, Error, IntoArg, IntoOut, Kernel, Out, Result,
};
pub use num_bigint::BigUint;

pub mod fuzz;
pub mod poly;
pub mod programs;

/// What a kernel-writing program needs.
pub mod prelude {
    pub use crate::{Batch, BigUint, Device, Kernel, Target};
}

#[doc(hidden)]
pub mod __private {
    pub use bigfuse_core as ir;
}

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
//! Every failure is an [`Error`] value, which says what to do: bad input, no GPU, out of memory
//! (split the batch), a driver failure (with the driver's result code as its source).
//!
//! ```
//! use bigfuse::prelude::*;
//! use bigfuse::Error;
//!
//! #[bigfuse::kernel]
//! fn add(a: U<BITS>, b: U<BITS>) -> U<BITS> {
//!     a + b
//! }
//!
//! let dev = Device::cpu();
//! let a = vec![BigUint::from(1u8); 3];
//! let b = vec![BigUint::from(2u8); 2];
//! match add::run(&dev, 128, &a, &b) {
//!     Err(Error::BatchMismatch { first_len, other_len, .. }) => assert_eq!((first_len, other_len), (3, 2)),
//!     Err(Error::OutOfMemory { .. }) => { /* split the batch into smaller ones */ }
//!     Err(e) => panic!("{e}"), // `Error` is non-exhaustive: a wildcard arm is needed
//!     Ok(_) => panic!("three values and two cannot be added pairwise"),
//! }
//! ```
//!
//! The pipeline: [`macro@kernel`] turns the function into IR; the compiler lowers big-integer
//! operations to map / scan / reduce over limbs, fuses, schedules (threads per instance, limbs per
//! thread), places arrays in registers and emits CUDA C; the runtime ([`runtime`]) compiles it
//! with NVRTC (cached), uploads the batch and launches. `explain` (generated for every kernel)
//! shows each pass's output and decision. A first call of a kernel that NVRTC takes long on runs
//! a compact form of the same program while the tuned kernel compiles in the background
//! ([`runtime::tiers`]); the generated `prepare` loads the tuned kernel before calls you time.
//!
//! Where to start: [`macro@kernel`] for what a kernel may contain and the functions it generates;
//! [`Device`] for choosing the GPU or the CPU backend, and for what calls from several threads at
//! once guarantee; [`Batch`] for data that stays on the device between kernels; [`Error`] for
//! what can fail.

#![warn(missing_docs)]

// The macros name this crate `::bigfuse`; inside it, that is itself.
extern crate self as bigfuse;

// The compiler's crates and the fuzzer are internals: hidden from the documentation and exempt
// from semver, but public, because the tests and the benchmarks use them by path
// (`bigfuse::codegen::..`, `bigfuse::ir::..`, `bigfuse::fuzz::..`). Hidden rather than behind an
// `unstable` feature: the tests and the bench would compile only with that feature on (a plain
// `cargo test` would fail, or skip the targets that declare it as required, silently).
#[doc(hidden)]
pub use bigfuse_codegen as codegen;
#[doc(hidden)]
pub use bigfuse_core as ir;
pub use bigfuse_macros::{kernel, op};
pub use bigfuse_runtime as runtime;

pub use bigfuse_codegen::{Hints, Target};
pub use bigfuse_runtime::{
    kind, Arg, Batch, Column, CudaError, Device, Devices, Error, IntoArg, IntoOut, Kernel,
    MemoryUsage, Out, Result, RunOn, Tier,
};
pub use num_bigint::BigUint;

#[doc(hidden)]
pub mod fuzz;
pub mod poly;
pub mod programs;

/// What a kernel-writing program needs.
pub mod prelude {
    pub use crate::{Batch, BigUint, Device, Devices, Kernel, Target};
}

#[doc(hidden)]
pub mod __private {
    pub use bigfuse_core as ir;
}

//! bigfuse-core: the IR of bigfuse and its reference evaluator.
//!
//! A kernel program is a [`Func`] over one instance: typed SSA over scalars, big unsigned integers
//! (`U<BITS>`) and arrays, with big-integer operations as high-level nodes and map / zip / scan /
//! reduce as first-class array primitives. Sizes are symbolic until [`specialize()`] substitutes the
//! sizes of a call. [`eval()`] runs any level of the IR on the CPU; it is the oracle of every test.
//!
//! This crate knows nothing of GPUs: code generation and the runtime build on it.

pub mod builder;
pub mod error;
pub mod eval;
pub mod ir;
pub mod laws;
pub mod modular;
pub mod ops;
pub mod parse;
pub mod print;
pub mod rewrite;
pub mod specialize;
pub mod typeck;
pub mod types;
pub mod unroll;
pub mod validate;
pub mod value;

pub use builder::Builder;
pub use error::{IrError, IrResult};
pub use eval::{apply_lambda, eval};
pub use ir::{BinOp, CmpOp, Func, Literal, MulAlgo, Node, Op, Param, ShiftOp, UnOp, ValueId};
pub use parse::{parse, ParseError};
pub use print::{node_text, print};
pub use rewrite::{rewrite, Mapped, Rewritten};
pub use specialize::{check_bits, specialize, MAX_BITS};
pub use types::{Size, Type};
pub use unroll::{unroll, unroll_where};
pub use validate::validate;
pub use value::Value;

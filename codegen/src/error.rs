use bigfuse_core::IrError;
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodegenError {
    #[error(transparent)]
    Ir(#[from] IrError),
    /// The program cannot be scheduled on the target as one kernel (too many threads or registers).
    #[error("kernel too big: {0}")]
    TooBig(String),
    /// The program uses something code generation does not handle.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

pub type CgResult<T> = Result<T, CodegenError>;

use thiserror::Error;

/// Errors of IR construction, validation, specialization and evaluation.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IrError {
    /// An operation was applied to values of the wrong types.
    #[error("type error in `{func}`: {message}")]
    Type { func: String, message: String },
    /// The function is not well formed (a use before its definition, a bad output, ...).
    #[error("malformed IR in `{func}`: {message}")]
    Malformed { func: String, message: String },
    /// A size the program cannot be specialized for.
    #[error("unsupported size: {0}")]
    Size(String),
    /// The evaluator was given inputs that do not match the program.
    #[error("evaluation error: {0}")]
    Eval(String),
    /// An operator declared associative (a scan's or a reduction's) is not, on sampled values.
    #[error("{0}")]
    Law(String),
}

pub type IrResult<T> = Result<T, IrError>;

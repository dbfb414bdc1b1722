//! Well-formedness of a function: every value defined before use, every node's type the one its
//! operation implies, lambdas over scalars only. Passes call it on their output in debug builds.

use crate::error::{IrError, IrResult};
use crate::ir::{Func, Op};
use crate::typeck::{check_cast, infer};

pub fn validate(func: &Func) -> IrResult<()> {
    validate_inner(func, false)
}

fn malformed(func: &Func, message: String) -> IrError {
    IrError::Malformed {
        func: func.name.clone(),
        message,
    }
}

fn validate_inner(func: &Func, is_lambda: bool) -> IrResult<()> {
    for (i, node) in func.nodes.iter().enumerate() {
        for a in node.op.args() {
            if a.index() >= i {
                return Err(malformed(
                    func,
                    format!("%{i} uses {a}, which is not defined before it"),
                ));
            }
        }
        // The arguments are earlier nodes (checked above), so `infer` reads only those: the
        // function as it is stands for its prefix (a copy per node would make this quadratic).
        match &node.op {
            Op::Cast(a) => check_cast(func, func.ty(*a), &node.ty)?,
            op => {
                let t = infer(func, op)?;
                if t != node.ty {
                    return Err(malformed(
                        func,
                        format!(
                            "%{i} is declared {} but its operation gives {}",
                            node.ty.display(&func.size_params),
                            t.display(&func.size_params)
                        ),
                    ));
                }
            }
        }
        if is_lambda {
            let scalar_only = node.op.is_element_op();
            if !scalar_only || !node.ty.is_element() {
                return Err(malformed(
                    func,
                    format!("%{i}: an operator may only compute on scalars and tuples"),
                ));
            }
        }
        for l in node.op.lambdas() {
            validate_inner(l, true)?;
        }
        if let Op::Loop { body, .. } = &node.op {
            // A loop inside an operator computes on what the operator may; elsewhere on anything.
            validate_inner(body, is_lambda)?;
        }
    }
    if func.outputs.is_empty() {
        return Err(malformed(
            func,
            "a function must return at least one value".into(),
        ));
    }
    for o in &func.outputs {
        if o.index() >= func.nodes.len() {
            return Err(malformed(func, format!("output {o} does not exist")));
        }
    }
    Ok(())
}

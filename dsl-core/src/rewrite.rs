//! The one loop of every rewriting pass: a function rebuilt node by node, each node either copied
//! (its arguments renamed), dropped, or replaced by what the pass's rule builds; then its outputs.
//! Passes state only what they change.

use crate::builder::Builder;
use crate::error::IrError;
use crate::ir::{Func, Node, Op, ValueId};
use crate::types::Type;

/// What a rule made of one node.
pub enum Rewritten {
    /// The node as it was, its arguments renamed.
    Copy,
    /// No value: nothing that is kept may read it.
    Drop,
    /// This new value stands for the node.
    Value(ValueId),
}

/// The new values of the old function's nodes and parameters, as far as the rewrite has come.
pub struct Mapped {
    map: Vec<Option<ValueId>>,
    params: Vec<ValueId>,
}

impl Mapped {
    /// The new value of old node `v`, which must come before the node being rewritten and must
    /// not have been dropped.
    pub fn get(&self, v: ValueId) -> ValueId {
        self.map[v.index()].expect("a rewrite keeps every value a kept node reads")
    }

    /// The new function's parameter `k`.
    pub fn param(&self, k: usize) -> ValueId {
        self.params[k]
    }
}

/// Rebuilds `func` into `b` (a [`Builder::like`] for a kernel, a [`Builder::lambda`] for an
/// operator): parameters get `param_type` of their types, `rule` decides each node, and `output`
/// makes each output from the old output and its new value.
pub fn rewrite<E: From<IrError>>(
    func: &Func,
    mut b: Builder,
    param_type: impl Fn(&Type) -> Type,
    mut rule: impl FnMut(&mut Builder, &Mapped, ValueId, &Node) -> Result<Rewritten, E>,
    mut output: impl FnMut(&mut Builder, ValueId, ValueId) -> Result<ValueId, E>,
) -> Result<Func, E> {
    let params = func
        .params
        .iter()
        .map(|p| b.param(&p.name, param_type(&p.ty)))
        .collect();
    let mut m = Mapped {
        map: Vec::with_capacity(func.nodes.len()),
        params,
    };
    for (i, node) in func.nodes.iter().enumerate() {
        let id = ValueId(i as u32);
        let new = match rule(&mut b, &m, id, node)? {
            Rewritten::Value(v) => Some(v),
            Rewritten::Drop => None,
            Rewritten::Copy => Some(match &node.op {
                Op::Param(k) => m.param(*k as usize),
                other => b.copy(other, &node.ty, |v| m.get(v))?,
            }),
        };
        m.map.push(new);
    }
    let mut outputs = Vec::with_capacity(func.outputs.len());
    for o in &func.outputs {
        outputs.push(output(&mut b, *o, m.get(*o))?);
    }
    Ok(b.finish(&outputs)?)
}

/// An output as it is (for [`rewrite`]'s `output`).
pub fn same_output<E>(_: &mut Builder, _: ValueId, new: ValueId) -> Result<ValueId, E> {
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::eval;
    use crate::value::Value;

    /// `x + 1` rewritten into `x - 1`, a dead constant dropped, the output doubled.
    #[test]
    fn rules_copy_drop_and_replace() {
        let mut b = Builder::new("f", &[]);
        let x = b.param("x", Type::U64);
        let one = b.u64(1);
        let _dead = b.u64(7);
        let s = b.add(x, one).unwrap();
        let f = b.finish(&[s]).unwrap();
        let g = rewrite(
            &f,
            Builder::like(&f),
            |t| t.clone(),
            |b, m, id, node| {
                Ok::<_, IrError>(match &node.op {
                    Op::Const(crate::ir::Literal::U64(7)) => Rewritten::Drop,
                    Op::Binary(crate::ir::BinOp::Add, a, c) if id == s => {
                        Rewritten::Value(b.sub(m.get(*a), m.get(*c))?)
                    }
                    _ => Rewritten::Copy,
                })
            },
            |b, _, new| b.add(new, new),
        )
        .unwrap();
        assert_eq!(g.nodes.len(), 4, "param, 1, x - 1, doubled");
        assert_eq!(eval(&g, &[Value::U64(10)]).unwrap(), vec![Value::U64(18)]);
    }
}

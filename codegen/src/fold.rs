//! `fold`: an operation whose operands are all constants, and whose result is a scalar (`bool`,
//! `u32`, `u64`), becomes that constant, computed by the reference evaluator itself (so the
//! folded program means what the program did).
//!
//! Why: a kernel can only name its width through a value, `U::ZERO.leading_zeros()` for `BITS`
//! (a size is not a value in the kernel language), and the passes after this one take constant
//! scalars as such: `scalarize` shifts by a constant amount by renaming limbs, where a run-time
//! amount costs a barrel shifter over every limb. The square root of `(a << BITS) | b` at 16384
//! bits was 517 KB of CUDA, 400 KB of it the clz chain of a zero and the shifter. Big results
//! are left alone: a big constant is written into the kernel limb by limb, where the operation
//! that makes it (a mask, a shift of one) is computed in a few instructions.
//!
//! It folds lambdas (a map's, a scan's or reduce's operator) and loop bodies the same way; the
//! nodes it leaves unread go in `dead_code`.

use crate::error::{CgResult, CodegenError};
use bigfuse_core::rewrite::{rewrite, same_output, Rewritten};
use bigfuse_core::{eval, Builder, Func, Literal, Op, Type, Value, ValueId};

/// `func` (concrete) with every foldable node replaced by its constant, in its lambdas and loop
/// bodies too.
pub fn fold(func: &Func) -> CgResult<Func> {
    rewrite(
        func,
        Builder::like(func),
        Type::clone,
        |b, mapped, _, node| {
            if let Some(op) = crate::fuse::with_bodies(&node.op, fold)? {
                return Ok(Rewritten::Value(b.copy(&op, &node.ty, |v| mapped.get(v))?));
            }
            let constant = |v: ValueId| match &b.func().node(mapped.get(v)).op {
                Op::Const(l) => Some(l.clone()),
                _ => None,
            };
            let args = node.op.args();
            let foldable = matches!(node.ty, Type::Bool | Type::U32 | Type::U64)
                && !matches!(node.op, Op::Param(_) | Op::Const(_))
                && !args.is_empty();
            let literals: Option<Vec<(ValueId, Literal)>> = if foldable {
                args.iter().map(|&a| constant(a).map(|l| (a, l))).collect()
            } else {
                None
            };
            Ok::<_, CodegenError>(
                match literals.and_then(|ls| value_of(&node.op, &node.ty, &ls)) {
                    Some(lit) => Rewritten::Value(b.constant(lit)),
                    None => Rewritten::Copy,
                },
            )
        },
        same_output,
    )
}

/// The value of `op` (result type `ty`, a scalar) on its operands' constants `args` (each
/// operand's node in the original program and its literal), by the evaluator; none where it
/// reports an error (the node then stays, and the run-time computes what it defines).
fn value_of(op: &Op, ty: &Type, args: &[(ValueId, Literal)]) -> Option<Literal> {
    let mut b = Builder::new("fold", &[]);
    let ids: Vec<(ValueId, ValueId)> = args
        .iter()
        .map(|(old, lit)| (*old, b.constant(lit.clone())))
        .collect();
    let remap = |v: ValueId| {
        ids.iter()
            .find(|(old, _)| *old == v)
            .map(|(_, new)| *new)
            .expect("every operand is a constant")
    };
    let v = b.copy(op, ty, remap).ok()?;
    let f = b.finish(&[v]).ok()?;
    match (eval(&f, &[]).ok()?.pop()?, ty) {
        (Value::Bool(x), Type::Bool) => Some(Literal::Bool(x)),
        (Value::U32(x), Type::U32) => Some(Literal::U32(x)),
        (Value::U64(x), Type::U64) => Some(Literal::U64(x)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{BinOp, Size, UnOp};

    fn big(bits: u64) -> Type {
        Type::Big(Size::lit(bits))
    }

    /// The width as a value (`U::ZERO.leading_zeros()`), one less, a shift by it and a bit test
    /// of a constant fold; what reads a parameter stays; the folded program computes what the
    /// original did.
    #[test]
    fn constant_scalars_fold_and_mean_the_same() {
        let mut b = Builder::new("f", &[]);
        let x = b.param("x", big(256));
        let k = b.param("k", Type::U32);
        let zero = b.constant(Literal::Big(vec![], Size::lit(256)));
        let width = b.count(UnOp::LeadingZeros, zero).unwrap();
        let one = b.u32(1);
        let below = b.sub(width, one).unwrap();
        let shifted = b.shl(x, below).unwrap();
        let top = b.bit(shifted, below).unwrap();
        let run_time = b.add(below, k).unwrap();
        let seven = b.constant(Literal::Big(vec![7], Size::lit(256)));
        let bit = b.bit(seven, one).unwrap();
        let div = b.binary(BinOp::Div, width, one).unwrap();
        let f = b.finish(&[shifted, top, run_time, bit, div]).unwrap();
        let g = fold(&f).unwrap();
        let consts = |f: &Func, lit: Literal| {
            f.ids()
                .any(|id| matches!(&f.node(id).op, Op::Const(l) if *l == lit))
        };
        assert!(consts(&g, Literal::U32(256)) && consts(&g, Literal::U32(255)));
        assert!(consts(&g, Literal::Bool(true)));
        // The shift's amount is now the constant itself.
        let shift = g.outputs[0];
        let Op::BigShift(_, _, amount) = g.node(shift).op else {
            panic!("{}", bigfuse_core::print(&g))
        };
        assert_eq!(g.node(amount).op, Op::Const(Literal::U32(255)));
        // A sum with a parameter stays an addition.
        assert!(matches!(
            g.node(g.outputs[2]).op,
            Op::Binary(BinOp::Add, ..)
        ));
        for (v, k) in [(1u64, 0u32), (3, 7), (u64::MAX, u32::MAX)] {
            let args = [Value::Big(v.into()), Value::U32(k)];
            assert_eq!(eval(&f, &args).unwrap(), eval(&g, &args).unwrap());
        }
    }

    /// Inside a map's lambda the same: the shift's amount becomes a constant.
    #[test]
    fn lambdas_fold_too() {
        let mut l = Builder::lambda();
        let x = l.param("x", big(256));
        let zero = l.constant(Literal::Big(vec![], Size::lit(256)));
        let width = l.count(UnOp::LeadingZeros, zero).unwrap();
        let three = l.u32(3);
        let k = l.sub(width, three).unwrap();
        let y = l.shr(x, k).unwrap();
        let f = l.finish(&[y]).unwrap();
        let mut b = Builder::new("f", &[]);
        let xs = b.param("xs", Type::array(big(256), Size::lit(3)));
        let ys = b.map(f, &[xs]).unwrap();
        let prog = b.finish(&[ys]).unwrap();
        let g = fold(&prog).unwrap();
        let Op::Map { f: body, .. } = &g.node(g.outputs[0]).op else {
            panic!("{}", bigfuse_core::print(&g))
        };
        let Op::BigShift(_, _, amount) = body.node(body.outputs[0]).op else {
            panic!("{}", bigfuse_core::print(&g))
        };
        assert_eq!(body.node(amount).op, Op::Const(Literal::U32(253)));
        let top = Value::Big(num_bigint::BigUint::from(7u8) << 253);
        let args = [Value::Array(vec![
            top,
            Value::Big(1u8.into()),
            Value::Big(0u8.into()),
        ])];
        assert_eq!(eval(&prog, &args).unwrap(), eval(&g, &args).unwrap());
        assert_eq!(
            eval(&g, &args).unwrap()[0],
            Value::Array(vec![
                Value::Big(7u8.into()),
                Value::Big(0u8.into()),
                Value::Big(0u8.into())
            ])
        );
    }

    /// Division by a constant zero is what the IR defines; folding keeps the evaluator's value.
    #[test]
    fn folding_keeps_what_the_evaluator_defines() {
        let mut b = Builder::new("f", &[]);
        let x = b.u32(9);
        let zero = b.u32(0);
        let q = b.binary(BinOp::Div, x, zero).unwrap();
        let f = b.finish(&[q]).unwrap();
        let g = fold(&f).unwrap();
        assert_eq!(eval(&f, &[]).unwrap(), eval(&g, &[]).unwrap());
    }
}

//! Canonical terms of lambdas, for deciding that two lambdas compute the same function.
//!
//! Every scalar leaf of a lambda becomes a hash-consed term over named variables. Only rewrites that
//! hold for every input are applied, so equal terms denote equal values:
//! - common subexpressions and equal constants share one term (hash-consing),
//! - operands of commutative operations are ordered (`add`, `mul`, `mulhi`, `and`, `or`, `xor`,
//!   `eq`, `ne`),
//! - tuples and extracts are resolved leaf by leaf, so `extract(tuple(a, b), 0)` is `a`,
//! - casts to the operand's own type vanish; a cast of a cast of a bool is a cast of the bool; a
//!   u32 extended to u64 and truncated back is itself,
//! - `select(c, a, a)` is `a`.
//!
//! Different terms may still denote one function (e.g. `x + y < x` and `x + y < y`): the comparison
//! is sound, not complete.

use bigfuse_core::{BinOp, Func, Literal, Op, Type, UnOp};
use std::collections::HashMap;

/// A term id of one [`Canon`].
pub type TermId = u32;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Term {
    /// A variable chosen by the caller (`key`), of a scalar type.
    Var(u64, Type),
    Const(Literal),
    Un(UnOp, TermId),
    Bin(BinOp, TermId, TermId),
    Cast(Type, TermId),
    Select(TermId, TermId, TermId),
}

/// An interner of terms; ids of one `Canon` are comparable.
#[derive(Default)]
pub struct Canon {
    terms: Vec<(Term, Type)>,
    ids: HashMap<Term, TermId>,
}

fn commutative(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Add
            | BinOp::Mul
            | BinOp::MulHi
            | BinOp::And
            | BinOp::Or
            | BinOp::Xor
            | BinOp::Eq
            | BinOp::Ne
    )
}

impl Canon {
    pub fn new() -> Canon {
        Canon::default()
    }

    fn intern(&mut self, t: Term, ty: Type) -> TermId {
        if let Some(id) = self.ids.get(&t) {
            return *id;
        }
        let id = self.terms.len() as TermId;
        self.terms.push((t.clone(), ty));
        self.ids.insert(t, id);
        id
    }

    pub fn ty(&self, t: TermId) -> &Type {
        &self.terms[t as usize].1
    }

    /// The variable `key` of scalar type `ty`.
    pub fn var(&mut self, key: u64, ty: Type) -> TermId {
        self.intern(Term::Var(key, ty.clone()), ty)
    }

    fn cast(&mut self, to: Type, a: TermId) -> TermId {
        if *self.ty(a) == to {
            return a;
        }
        if let Term::Cast(_, x) = self.terms[a as usize].0 {
            let from = self.ty(x).clone();
            if from == Type::Bool {
                return self.cast(to, x);
            }
            if from == Type::U32 && to == Type::U32 {
                // u32 -> u64 -> u32 (the middle type differs from the operand's: an extension)
                return x;
            }
        }
        self.intern(Term::Cast(to.clone(), a), to)
    }

    /// The terms of `f`'s result leaves, with `params[i]` the leaves of parameter `i`; None when
    /// the parameters do not fit or `f` holds an operation that is not scalar.
    pub fn lambda(&mut self, f: &Func, params: &[Vec<TermId>]) -> Option<Vec<TermId>> {
        if params.len() != f.params.len() {
            return None;
        }
        for (p, leaves) in f.params.iter().zip(params) {
            let tys = p.ty.leaves();
            if tys.len() != leaves.len() || tys.iter().zip(leaves).any(|(t, l)| self.ty(*l) != t) {
                return None;
            }
        }
        let mut vals: Vec<Vec<TermId>> = Vec::with_capacity(f.nodes.len());
        for node in &f.nodes {
            let one = |v: bigfuse_core::ValueId, vals: &Vec<Vec<TermId>>| vals[v.index()][0];
            let new = match &node.op {
                Op::Param(i) => params.get(*i as usize)?.clone(),
                Op::Const(l) => l
                    .leaves()
                    .into_iter()
                    .map(|l| {
                        let ty = l.ty();
                        self.intern(Term::Const(l), ty)
                    })
                    .collect(),
                Op::Unary(u, a) => {
                    vec![self.intern(Term::Un(*u, one(*a, &vals)), node.ty.clone())]
                }
                Op::Binary(op, a, b) => {
                    let (mut x, mut y) = (one(*a, &vals), one(*b, &vals));
                    if commutative(*op) && y < x {
                        std::mem::swap(&mut x, &mut y);
                    }
                    vec![self.intern(Term::Bin(*op, x, y), node.ty.clone())]
                }
                Op::Cast(a) => vec![self.cast(node.ty.clone(), one(*a, &vals))],
                Op::Select(c, a, b) => {
                    let c = one(*c, &vals);
                    let (xs, ys) = (vals[a.index()].clone(), vals[b.index()].clone());
                    xs.iter()
                        .zip(&ys)
                        .map(|(x, y)| {
                            if x == y {
                                *x
                            } else {
                                let ty = self.ty(*x).clone();
                                self.intern(Term::Select(c, *x, *y), ty)
                            }
                        })
                        .collect()
                }
                Op::Tuple(xs) => xs.iter().flat_map(|x| vals[x.index()].clone()).collect(),
                Op::Extract(t, i) => {
                    let Type::Tuple(ts) = f.ty(*t) else {
                        return None;
                    };
                    let start: usize = ts[..*i as usize].iter().map(Type::leaf_count).sum();
                    let n = ts.get(*i as usize)?.leaf_count();
                    vals[t.index()].get(start..start + n)?.to_vec()
                }
                _ => return None,
            };
            vals.push(new);
        }
        Some(vals[f.outputs[0].index()].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::Builder;

    #[test]
    fn equal_up_to_sharing_constants_order_and_tuples() {
        // (x, y) -> ((x + y) < x) as u32 | ((MAX == y + x) as u32) << 1, written with repeated
        // constants and sums, against the canonical flags of a limb sum.
        let mut b = Builder::lambda();
        let t = b.param("t", Type::Tuple(vec![Type::U64, Type::U64]));
        let x = b.extract(t, 0).unwrap();
        let y = b.extract(t, 1).unwrap();
        let s1 = b.add(x, y).unwrap();
        let c = b.lt(s1, x).unwrap();
        let c = b.cast(c, Type::U32).unwrap();
        let s2 = b.add(y, x).unwrap();
        let max = b.u64(u64::MAX);
        let e = b.eq(max, s2).unwrap();
        let e = b.cast(e, Type::U64).unwrap();
        let e = b.cast(e, Type::U32).unwrap();
        let one = b.u32(1);
        let e = b.binary(BinOp::Shl, e, one).unwrap();
        let r = b.or(e, c).unwrap();
        let user = b.finish(&[r]).unwrap();

        let mut k = Canon::new();
        let (vx, vy) = (k.var(0, Type::U64), k.var(1, Type::U64));
        let got = k.lambda(&user, &[vec![vx, vy]]).unwrap();
        let canonical = k
            .lambda(
                bigfuse_core::ops::Intrinsic::LimbPartial { sub: false }.func(),
                &[vec![vx], vec![vy]],
            )
            .unwrap();
        assert_eq!(got, canonical[1..].to_vec());
        // Swapping the variables changes `s < x` into `s < y`: a different term.
        let swapped = k
            .lambda(
                bigfuse_core::ops::Intrinsic::LimbPartial { sub: false }.func(),
                &[vec![vy], vec![vx]],
            )
            .unwrap();
        assert_ne!(got, swapped[1..].to_vec());
        // Subtraction is not commutative.
        let d1 = k
            .lambda(
                bigfuse_core::ops::Intrinsic::LimbPartial { sub: true }.func(),
                &[vec![vx], vec![vy]],
            )
            .unwrap();
        let d2 = k
            .lambda(
                bigfuse_core::ops::Intrinsic::LimbPartial { sub: true }.func(),
                &[vec![vy], vec![vx]],
            )
            .unwrap();
        assert_ne!(d1[0], d2[0]);
        // A truncation is not undone.
        let mut b = Builder::lambda();
        let x = b.param("x", Type::U64);
        let n = b.cast(x, Type::U32).unwrap();
        let w = b.cast(n, Type::U64).unwrap();
        let f = b.finish(&[w]).unwrap();
        assert_ne!(k.lambda(&f, &[vec![vx]]).unwrap(), vec![vx]);
    }
}

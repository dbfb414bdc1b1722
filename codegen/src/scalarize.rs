//! Lowering of big integers that are array elements (`[U<BITS>; N]`) or closure values: each
//! becomes a tuple of its 64-bit limbs, and each operation on it the limb arithmetic one thread
//! performs sequentially (carry chains, column sums for products, comparisons from the top limb).
//! That is the right granularity for arrays of many small numbers: one element per thread, its limbs
//! in registers. Big integers that are whole kernel values keep the parallel lowering of `lower`.
//!
//! A reduction over such an array gives a big integer again (a tuple here); it is turned back into
//! a limb array so that later big-integer operations and results see an ordinary `U<BITS>`.

use crate::error::{CgResult, CodegenError};
use bigfuse_core::rewrite::{same_output, Rewritten};
use bigfuse_core::{rewrite, BinOp, Builder, CmpOp, Func, Literal, Op, Size, Type, ValueId};

fn limbs_of(bits: &Size) -> usize {
    (bits.as_const().unwrap_or(0) / 64) as usize
}

fn limb_tuple(bits: &Size) -> Type {
    Type::Tuple(vec![Type::U64; limbs_of(bits)])
}

/// The type with big integers inside arrays and tuples (and, in a closure, everywhere) as tuples.
fn scalar_type(t: &Type, in_lambda: bool) -> Type {
    match t {
        Type::Big(bits) if in_lambda => limb_tuple(bits),
        Type::Array(e, n) => Type::array(scalar_type(e, true), *n),
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| scalar_type(t, in_lambda)).collect()),
        other => other.clone(),
    }
}

fn scalar_literal(l: &Literal) -> Literal {
    match l {
        Literal::Big(limbs, bits) => Literal::Tuple(
            (0..limbs_of(bits))
                .map(|k| Literal::U64(limbs.get(k).copied().unwrap_or(0)))
                .collect(),
        ),
        Literal::Tuple(ls) => Literal::Tuple(ls.iter().map(scalar_literal).collect()),
        other => other.clone(),
    }
}

fn has_element_big(t: &Type) -> bool {
    match t {
        Type::Array(e, _) => e.leaves().iter().any(|l| matches!(l, Type::Big(_))),
        Type::Tuple(ts) => ts.iter().any(has_element_big),
        _ => false,
    }
}

fn lambda_has_big(f: &Func) -> bool {
    f.params
        .iter()
        .any(|p| !p.ty.leaves().iter().all(Type::is_scalar))
        || f.nodes
            .iter()
            .any(|n| n.ty.leaves().iter().any(|l| matches!(l, Type::Big(_))))
}

/// Lowers big-integer array elements and closure values of a concrete program (a no-op when
/// there are none).
pub fn scalarize(func: &Func) -> CgResult<Func> {
    let needed = func.params.iter().any(|p| has_element_big(&p.ty))
        || func
            .nodes
            .iter()
            .any(|n| has_element_big(&n.ty) || n.op.lambdas().iter().any(|l| lambda_has_big(l)));
    if !needed {
        return Ok(func.clone());
    }
    rewrite(
        func,
        Builder::like(func),
        |t| scalar_type(t, false),
        |b, m, _, node| {
            let m = |v: ValueId| m.get(v);
            Ok::<_, CodegenError>(Rewritten::Value(match &node.op {
                Op::Map { f, args } => {
                    let args: Vec<ValueId> = args.iter().map(|a| m(*a)).collect();
                    b.map(lambda(f)?, &args)?
                }
                Op::Scan {
                    op,
                    init,
                    exclusive,
                    input,
                    flags,
                } => b.scan(
                    lambda(op)?,
                    scalar_literal(init),
                    *exclusive,
                    m(*input),
                    flags.map(m),
                )?,
                Op::Reduce { op, init, input } => {
                    let r = b.reduce(lambda(op)?, scalar_literal(init), m(*input))?;
                    match &node.ty {
                        Type::Big(bits) => tuple_to_big(b, r, limbs_of(bits))?,
                        _ => r,
                    }
                }
                _ => return Ok(Rewritten::Copy),
            }))
        },
        same_output,
    )
}

/// A tuple of limbs (a scalar of the kernel) as the big integer with those limbs.
fn tuple_to_big(b: &mut Builder, t: ValueId, limbs: usize) -> CgResult<ValueId> {
    let pick = {
        let mut l = Builder::lambda();
        let i = l.param("i", Type::U64);
        let t = l.param("t", Type::Tuple(vec![Type::U64; limbs]));
        let mut r = l.extract(t, limbs as u32 - 1)?;
        for k in (0..limbs - 1).rev() {
            let kk = l.u64(k as u64);
            let here = l.eq(i, kk)?;
            let limb = l.extract(t, k as u32)?;
            r = l.select(here, limb, r)?;
        }
        l.finish(&[r])?
    };
    let idx = b.iota(Size::lit(limbs as u64))?;
    let arr = b.map(pick, &[idx, t])?;
    Ok(b.from_limbs(arr)?)
}

/// A closure with its big integers as limb tuples and their operations as limb arithmetic.
fn lambda(f: &Func) -> CgResult<Func> {
    if !lambda_has_big(f) {
        return Ok(f.clone());
    }
    rewrite(
        f,
        Builder::lambda(),
        |t| scalar_type(t, true),
        |b, mapped, id, node| {
            let m = |v: ValueId| mapped.get(v);
            let bits = |v: ValueId| match f.ty(v) {
                Type::Big(s) => limbs_of(s),
                _ => 0,
            };
            Ok::<_, CodegenError>(Rewritten::Value(match &node.op {
                Op::Param(i) => mapped.param(*i as usize),
                Op::Const(l) => b.constant(scalar_literal(l)),
                Op::BigAdd(x, y) => add_sub(b, m(*x), m(*y), bits(*x), false)?,
                Op::BigSub(x, y) => add_sub(b, m(*x), m(*y), bits(*x), true)?,
                Op::BigMul(x, y) => product(b, m(*x), m(*y), bits(*x), bits(*x), &known(f, *y))?,
                Op::BigMulWide(x, y) => {
                    product(b, m(*x), m(*y), bits(*x), 2 * bits(*x), &known(f, *y))?
                }
                Op::BigCmp(c, x, y) => compare(b, *c, m(*x), m(*y), bits(*x))?,
                Op::Cast(a) if matches!(node.ty, Type::Big(_)) => {
                    let x = if *f.ty(*a) == Type::U64 {
                        m(*a)
                    } else {
                        b.cast(m(*a), Type::U64)?
                    };
                    let zero = b.u64(0);
                    let mut limbs = vec![x];
                    limbs.resize(bits(id).max(1), zero);
                    b.tuple(&limbs)?
                }
                Op::Cast(a) => b.cast(m(*a), node.ty.clone())?,
                other if other.is_high_level() => {
                    return Err(CodegenError::Unsupported(format!(
                        "`{}` inside a closure over big integers",
                        bigfuse_core::node_text(f, id)
                    )))
                }
                // Types change here (big integers become tuples): the node's type is inferred
                // again rather than copied.
                other => {
                    let mut op = other.clone();
                    op.map_args(m);
                    b.push(op)?
                }
            }))
        },
        same_output,
    )
}

/// The limbs of a big-integer constant of the closure (those a product may skip when zero), or
/// nothing when the value is computed.
fn known(f: &Func, v: ValueId) -> Vec<Option<u64>> {
    let n = match f.ty(v) {
        Type::Big(s) => limbs_of(s),
        _ => 0,
    };
    match &f.node(v).op {
        Op::Const(Literal::Big(limbs, _)) => (0..n)
            .map(|k| Some(limbs.get(k).copied().unwrap_or(0)))
            .collect(),
        _ => vec![None; n],
    }
}

fn limbs(b: &mut Builder, t: ValueId, n: usize) -> CgResult<Vec<ValueId>> {
    (0..n as u32).map(|k| Ok(b.extract(t, k)?)).collect()
}

/// `x ± y` modulo 2^(64n) with a carry (borrow) chain through the limbs.
fn add_sub(b: &mut Builder, x: ValueId, y: ValueId, n: usize, sub: bool) -> CgResult<ValueId> {
    let (xs, ys) = (limbs(b, x, n)?, limbs(b, y, n)?);
    let mut out = Vec::with_capacity(n);
    let mut carry: Option<ValueId> = None;
    for k in 0..n {
        let (s, c1) = if sub {
            (b.sub(xs[k], ys[k])?, b.lt(xs[k], ys[k])?)
        } else {
            let s = b.add(xs[k], ys[k])?;
            (s, b.lt(s, xs[k])?)
        };
        let (s, c) = match carry {
            None => (s, c1),
            Some(cin) => {
                let cin64 = b.cast(cin, Type::U64)?;
                let (s2, c2) = if sub {
                    (b.sub(s, cin64)?, b.lt(s, cin64)?)
                } else {
                    let s2 = b.add(s, cin64)?;
                    (s2, b.lt(s2, s)?)
                };
                (s2, b.or(c1, c2)?)
            }
        };
        out.push(s);
        carry = Some(c);
    }
    Ok(b.tuple(&out)?)
}

/// The product of two n-limb numbers as `out` limbs (the low half, or the full 2n), by column
/// sums in a 192-bit accumulator: column k adds the low words of x_i*y_(k-i) and the high words of
/// x_i*y_(k-1-i).
/// Limbs of `y` known to be zero (a constant's) contribute nothing and are skipped, so a product by
/// a one-limb constant costs 2n word products.
fn product(
    b: &mut Builder,
    x: ValueId,
    y: ValueId,
    n: usize,
    out: usize,
    y_known: &[Option<u64>],
) -> CgResult<ValueId> {
    let (xs, ys) = (limbs(b, x, n)?, limbs(b, y, n)?);
    let zero = b.u64(0);
    let (mut a0, mut a1, mut a2) = (zero, zero, zero);
    let mut result = Vec::with_capacity(out);
    for k in 0..out {
        for (i, &xi) in xs.iter().enumerate() {
            for (j, hi) in [(k.wrapping_sub(i), false), (k.wrapping_sub(i + 1), true)] {
                if j >= n || i + j + hi as usize != k || y_known.get(j) == Some(&Some(0)) {
                    continue;
                }
                let w = if hi {
                    b.binary(BinOp::MulHi, xi, ys[j])?
                } else {
                    b.mul(xi, ys[j])?
                };
                // (a0, a1, a2) += w
                let s0 = b.add(a0, w)?;
                let c0 = b.lt(s0, a0)?;
                let c0 = b.cast(c0, Type::U64)?;
                let s1 = b.add(a1, c0)?;
                let c1 = b.lt(s1, a1)?;
                let c1 = b.cast(c1, Type::U64)?;
                a2 = b.add(a2, c1)?;
                a0 = s0;
                a1 = s1;
            }
        }
        result.push(a0);
        a0 = a1;
        a1 = a2;
        a2 = zero;
    }
    Ok(b.tuple(&result)?)
}

/// `x < y`, `x <= y` or `x == y`, from the least significant limb up: the more significant limb
/// decides unless it is equal.
fn compare(b: &mut Builder, c: CmpOp, x: ValueId, y: ValueId, n: usize) -> CgResult<ValueId> {
    let (xs, ys) = (limbs(b, x, n)?, limbs(b, y, n)?);
    let mut r = match c {
        CmpOp::Lt => b.lt(xs[0], ys[0])?,
        CmpOp::Le => b.le(xs[0], ys[0])?,
        CmpOp::Eq => b.eq(xs[0], ys[0])?,
    };
    for k in 1..n {
        let eq = b.eq(xs[k], ys[k])?;
        r = match c {
            CmpOp::Eq => b.and(eq, r)?,
            _ => {
                let lt = b.lt(xs[k], ys[k])?;
                let keep = b.and(eq, r)?;
                b.or(lt, keep)?
            }
        };
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{eval, specialize, Value};
    use num_bigint::BigUint;

    /// `(xs, ys) -> (map(x*y + x - y), map(x < y, x <= y, x == y), reduce(+), map(mul_wide))`.
    fn program() -> Func {
        let big = Type::Big(Size::param(0));
        let arr = Type::array(big.clone(), Size::param(1));
        let mut b = Builder::new("bigs", &["BITS", "N"]);
        let xs = b.param("xs", arr.clone());
        let ys = b.param("ys", arr);
        let f = {
            let mut l = Builder::lambda();
            let x = l.param("x", big.clone());
            let y = l.param("y", big.clone());
            let p = l.mul(x, y).unwrap();
            let s = l.add(p, x).unwrap();
            let r = l.sub(s, y).unwrap();
            l.finish(&[r]).unwrap()
        };
        let g = {
            let mut l = Builder::lambda();
            let x = l.param("x", big.clone());
            let y = l.param("y", big.clone());
            let lt = l.lt(x, y).unwrap();
            let le = l.le(x, y).unwrap();
            let eq = l.eq(x, y).unwrap();
            let t = l.tuple(&[lt, le, eq]).unwrap();
            l.finish(&[t]).unwrap()
        };
        let plus = {
            let mut l = Builder::lambda();
            let x = l.param("x", big.clone());
            let y = l.param("y", big.clone());
            let r = l.add(x, y).unwrap();
            l.finish(&[r]).unwrap()
        };
        let wide = {
            let mut l = Builder::lambda();
            let x = l.param("x", big.clone());
            let y = l.param("y", big.clone());
            let r = l.mul_wide(x, y).unwrap();
            l.finish(&[r]).unwrap()
        };
        let r1 = b.map(f, &[xs, ys]).unwrap();
        let r2 = b.map(g, &[xs, ys]).unwrap();
        let r3 = b
            .reduce(plus, Literal::Big(vec![], Size::param(0)), xs)
            .unwrap();
        let r4 = b.map(wide, &[xs, ys]).unwrap();
        b.finish(&[r1, r2, r3, r4]).unwrap()
    }

    #[test]
    fn limb_arithmetic_matches_the_reference() {
        for bits in [64u64, 128, 256] {
            let n = 7u64;
            let f = specialize(&program(), &[bits, n]).unwrap();
            let low = scalarize(&f).unwrap();
            let top = (BigUint::from(1u8) << bits) - 1u8;
            let vals = [
                BigUint::default(),
                BigUint::from(1u8),
                top.clone(),
                top.clone() >> 1u8,
                BigUint::from(u64::MAX),
                (BigUint::from(1u8) << (bits - 1)) + 12345u32,
                top.clone() - 77u8,
            ];
            let xs = Value::Array(vals.iter().cloned().map(Value::Big).collect());
            let ys = Value::Array(vals.iter().rev().cloned().map(Value::Big).collect());
            let want = eval(&f, &[xs.clone(), ys.clone()]).unwrap();
            let low_xs = |v: &Value| match v {
                Value::Array(e) => Value::Array(
                    e.iter()
                        .map(|x| {
                            let mut d = x.as_big().unwrap().to_u64_digits();
                            d.resize((bits / 64) as usize, 0);
                            Value::Tuple(d.into_iter().map(Value::U64).collect())
                        })
                        .collect(),
                ),
                _ => unreachable!(),
            };
            let got = eval(&low, &[low_xs(&xs), low_xs(&ys)]).unwrap();
            // Arrays of big integers come back as arrays of limb tuples.
            assert_eq!(got[0], low_xs(&want[0]), "bits={bits}");
            assert_eq!(got[1], want[1], "bits={bits}");
            assert_eq!(got[2], want[2], "bits={bits}");
            let wide = match &want[3] {
                Value::Array(e) => Value::Array(
                    e.iter()
                        .map(|x| {
                            let mut d = x.as_big().unwrap().to_u64_digits();
                            d.resize((2 * bits / 64) as usize, 0);
                            Value::Tuple(d.into_iter().map(Value::U64).collect())
                        })
                        .collect(),
                ),
                _ => unreachable!(),
            };
            assert_eq!(got[3], wide, "bits={bits}");
        }
    }
}

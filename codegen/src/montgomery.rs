//! Modular exponentiation modulo an odd big integer: `big.pow_mod x, e, m` becomes Montgomery
//! arithmetic (Montgomery, 1985) on 64-bit limbs in one thread, in loops that stay loops.
//!
//! The variant is CIOS (Koç, Acar and Kaliski, 1996): the product and the reduction interleaved
//! limb by limb, one round per limb of the second factor, so only `-m^-1 mod 2^64` is needed and
//! the code of a product is linear in the limbs (a rolled loop of `s` rounds of `2s`
//! multiply-adds) where a product of whole big integers is quadratic: at 4096 bits the kernel
//! stays small enough for NVRTC to compile in seconds. Written here on limbs rather than as
//! big-integer products because those do not expose the interleaving.
//!
//! Per instance, with `n` the modulus' width (`s` limbs) and `k` the exponent's:
//! 1. `-m^-1 mod 2^64` by Newton's iteration from `m` itself (correct to 3 bits for odd `m`, each
//!    of five u64 steps doubling that);
//! 2. `R^2 mod m` (`R = 2^n`) by `2n` modular doublings of 1 (a loop; no division needed);
//! 3. `x R mod m` and `R mod m` by Montgomery products with `R^2`;
//! 4. a loop over the exponent's bits from the top: square, multiply, keep the product where the
//!    bit is set (a select: every instance runs the same steps whatever its exponent, and no
//!    branch or memory access depends on the data; the CUDA compiler may still turn a select into
//!    a branch, so this is not a constant-time guarantee);
//! 5. a Montgomery product with 1 leaves the Montgomery form.
//!
//! An even or zero modulus has no Montgomery form: the result is all ones then (see
//! [`Op::BigPowMod`]), chosen by a select at the end.
//!
//! The loops run in one thread per instance, so `per_thread` always takes a program that
//! exponentiates; this pass runs after it, inside its map, and refuses `pow_mod` anywhere else.

use crate::error::{CgResult, CodegenError};
use bigfuse_core::rewrite::{same_output, Rewritten};
use bigfuse_core::{rewrite, BinOp, Builder, Func, Literal, Op, ShiftOp, Size, Type, ValueId};

/// True when `f` (or a closure or loop inside it) exponentiates modulo a big integer.
pub fn has_pow_mod(f: &Func) -> bool {
    f.any_op(&|op| matches!(op, Op::BigPowMod(..)))
}

/// `func` with every `big.pow_mod` of its closures and loops expanded (a no-op without one). One
/// at the top of a program means the program could not run one thread per instance.
pub fn pow_mod(func: &Func) -> CgResult<Func> {
    if !has_pow_mod(func) {
        return Ok(func.clone());
    }
    if func.nodes.iter().any(|n| matches!(n.op, Op::BigPowMod(..))) {
        return Err(CodegenError::Unsupported(format!(
            "`{}`: `pow_mod` runs one thread per instance, in programs over whole big integers and \
             scalars; this one also computes over arrays. Compute the power in a closure over the \
             array's elements (`xs.map(|x| x.pow_mod(e, m))`) or in a kernel of its own",
            func.name
        )));
    }
    expand(func)
}

fn expand(f: &Func) -> CgResult<Func> {
    if !has_pow_mod(f) {
        return Ok(f.clone());
    }
    rewrite(
        f,
        Builder::like(f),
        Type::clone,
        |b, m, _, node| {
            Ok::<_, CodegenError>(match &node.op {
                Op::BigPowMod(x, e, md) => {
                    Rewritten::Value(power(b, m.get(*x), m.get(*e), m.get(*md))?)
                }
                op if has_pow_mod_here(op) => {
                    let mut op = op.clone();
                    match &mut op {
                        Op::Map { f, .. } | Op::Scan { op: f, .. } | Op::Reduce { op: f, .. } => {
                            **f = expand(f)?
                        }
                        Op::Loop { body, .. } => **body = expand(body)?,
                        _ => unreachable!("only closures and loops hold operations"),
                    }
                    Rewritten::Value(b.copy(&op, &node.ty, |v| m.get(v))?)
                }
                _ => Rewritten::Copy,
            })
        },
        same_output,
    )
}

/// True when a closure or loop body of `op` exponentiates.
fn has_pow_mod_here(op: &Op) -> bool {
    op.lambdas().iter().any(|l| has_pow_mod(l))
        || matches!(op, Op::Loop { body, .. } if has_pow_mod(body))
}

fn bits(b: &Builder, v: ValueId) -> CgResult<u64> {
    match b.ty(v) {
        Type::Big(s) => s
            .as_const()
            .ok_or_else(|| CodegenError::Unsupported("pow_mod before specialization".into())),
        other => Err(CodegenError::Unsupported(format!(
            "pow_mod of a {other}: a U<..> was expected"
        ))),
    }
}

fn big(bits: u64) -> Type {
    Type::Big(Size::lit(bits))
}

fn small(b: &mut Builder, bits: u64, v: u64) -> ValueId {
    b.constant(Literal::Big(vec![v], Size::lit(bits)))
}

/// A big integer as its 64-bit limbs, least significant first (`scalarize` makes these
/// extractions free).
fn to_limbs(b: &mut Builder, v: ValueId, s: usize) -> CgResult<Vec<ValueId>> {
    (0..s)
        .map(|j| {
            let w = if j == 0 {
                v
            } else {
                let k = b.u32(64 * j as u32);
                b.shift(ShiftOp::Shr, v, k)?
            };
            Ok(b.cast(w, Type::U64)?)
        })
        .collect()
}

/// The `U<64 s>` with these limbs.
fn from_limbs(b: &mut Builder, limbs: &[ValueId]) -> CgResult<ValueId> {
    let n = 64 * limbs.len() as u64;
    let mut v = b.cast(limbs[0], big(n))?;
    for (j, l) in limbs.iter().enumerate().skip(1) {
        let w = b.cast(*l, big(n))?;
        let k = b.u32(64 * j as u32);
        let w = b.shift(ShiftOp::Shl, w, k)?;
        v = b.or(v, w)?;
    }
    Ok(v)
}

/// The first values a loop carried out (a loop of one carried value gives it, not a tuple).
fn fields(b: &mut Builder, out: ValueId, carried: usize) -> CgResult<Vec<ValueId>> {
    if carried == 1 {
        return Ok(vec![out]);
    }
    (0..carried)
        .map(|j| Ok(b.extract(out, j as u32)?))
        .collect()
}

/// `(high, low) = x * y + c + d`, which never overflows 128 bits.
fn mul_add(
    b: &mut Builder,
    x: ValueId,
    y: ValueId,
    c: ValueId,
    d: ValueId,
) -> CgResult<(ValueId, ValueId)> {
    let low = b.mul(x, y)?;
    let high = b.binary(BinOp::MulHi, x, y)?;
    let s1 = b.add(low, c)?;
    let c1 = b.lt(s1, low)?;
    let s2 = b.add(s1, d)?;
    let c2 = b.lt(s2, s1)?;
    let c1 = b.cast(c1, Type::U64)?;
    let c2 = b.cast(c2, Type::U64)?;
    let high = b.add(high, c1)?;
    Ok((b.add(high, c2)?, s2))
}

/// `(carry, sum) = x + y` of two u64.
fn add_carry(b: &mut Builder, x: ValueId, y: ValueId) -> CgResult<(ValueId, ValueId)> {
    let s = b.add(x, y)?;
    let c = b.lt(s, x)?;
    Ok((b.cast(c, Type::U64)?, s))
}

/// The modulus as every Montgomery product reads it: its limbs and `-m^-1 mod 2^64`.
#[derive(Clone)]
struct Modulus {
    m: Vec<ValueId>,
    neg_inv: ValueId,
}

/// `a c / R mod m` (limbs) for `a, c < m` (or `a c < m R`): below `m`. CIOS (Koç, Acar and Kaliski,
/// 1996): a loop of one round per limb of `c` that adds `a c_i` and one multiple of `m` that
/// clears the low limb, then shifts by a limb; `c`'s limbs rotate through the round so that each
/// round reads the same register. The code is linear in the limbs, the work quadratic.
fn mont(b: &mut Builder, md: &Modulus, a: &[ValueId], c: &[ValueId]) -> CgResult<Vec<ValueId>> {
    let s = a.len();
    let mut body = Builder::loop_body(b);
    let u64s = |body: &mut Builder, name: &str, k: usize| -> Vec<ValueId> {
        (0..k)
            .map(|j| body.param(&format!("{name}{j}"), Type::U64))
            .collect()
    };
    let t = u64s(&mut body, "t", s + 1);
    let cr = u64s(&mut body, "c", s);
    let ba = u64s(&mut body, "a", s);
    let bm = u64s(&mut body, "m", s);
    let bn = body.param("neg_inv", Type::U64);
    let zero = body.u64(0);
    // t + a c_0, in s + 2 limbs.
    let mut carry = zero;
    let mut u = Vec::with_capacity(s + 2);
    for j in 0..s {
        let (h, l) = mul_add(&mut body, ba[j], cr[0], t[j], carry)?;
        u.push(l);
        carry = h;
    }
    let (top, l) = add_carry(&mut body, t[s], carry)?;
    u.push(l);
    u.push(top);
    // + q m with q chosen so the low limb becomes zero, then one limb down.
    let q = body.mul(u[0], bn)?;
    let (mut carry, _) = mul_add(&mut body, q, bm[0], u[0], zero)?;
    let mut next = Vec::with_capacity(2 * s + 1);
    for j in 1..s {
        let (h, l) = mul_add(&mut body, q, bm[j], u[j], carry)?;
        next.push(l);
        carry = h;
    }
    let (c2, l) = add_carry(&mut body, u[s], carry)?;
    next.push(l);
    next.push(body.add(u[s + 1], c2)?);
    next.extend(cr[1..].iter().copied());
    next.push(cr[0]);
    let body = body.finish(&next)?;
    let zero = b.u64(0);
    let mut carried: Vec<ValueId> = vec![zero; s + 1];
    carried.extend(c);
    let mut captured: Vec<ValueId> = a.to_vec();
    captured.extend(&md.m);
    captured.push(md.neg_inv);
    let out = b.repeat(Size::lit(s as u64), body, &carried, &captured)?;
    let t = fields(b, out, 2 * s + 1)?;
    // t < 2m: subtract m once where t >= m (t's top limb set, or no borrow).
    let mut borrow = b.bool(false);
    let mut diff = Vec::with_capacity(s);
    for (&tj, &mj) in t.iter().zip(&md.m) {
        let d = b.sub(tj, mj)?;
        let b1 = b.lt(tj, mj)?;
        let bw = b.cast(borrow, Type::U64)?;
        let d2 = b.sub(d, bw)?;
        let b2 = b.lt(d, bw)?;
        borrow = b.or(b1, b2)?;
        diff.push(d2);
    }
    let no_borrow = b.not(borrow)?;
    let one = b.u64(1);
    let top = b.eq(t[s], one)?;
    let over = b.or(top, no_borrow)?;
    (0..s).map(|j| Ok(b.select(over, diff[j], t[j])?)).collect()
}

/// `-m^-1 mod 2^64` for odd `m` (anything for even `m`, whose result is discarded): Newton's
/// iteration from `m` itself, correct to 3 bits (m m = 1 mod 8), each step doubling that.
fn neg_inverse(b: &mut Builder, m0: ValueId) -> CgResult<ValueId> {
    let two = b.u64(2);
    let mut inv = m0;
    for _ in 0..5 {
        let p = b.mul(m0, inv)?;
        let d = b.sub(two, p)?;
        inv = b.mul(inv, d)?;
    }
    let zero = b.u64(0);
    Ok(b.sub(zero, inv)?)
}

/// `R^2 mod m = 2^(2n) mod m` by `2n` doublings modulo `m` of `1 mod m`.
fn r_squared(b: &mut Builder, m: ValueId, n: u64) -> CgResult<ValueId> {
    let (zero, one) = (small(b, n, 0), small(b, n, 1));
    let is_one = b.eq(m, one)?;
    let start = b.select(is_one, zero, one)?;
    let mut body = Builder::loop_body(b);
    let r = body.param("r", big(n));
    let md = body.param("m", big(n));
    let top_index = body.u32((n - 1) as u32);
    let top = body.bit(r, top_index)?;
    let by = body.u32(1);
    let d = body.shift(ShiftOp::Shl, r, by)?;
    let ge = body.ge(d, md)?;
    let over = body.or(top, ge)?;
    let less = body.sub(d, md)?;
    let next = body.select(over, less, d)?;
    let body = body.finish(&[next])?;
    Ok(b.repeat(Size::lit(2 * n), body, &[start], &[m])?)
}

/// `x^e mod m` (see the module's steps).
fn power(b: &mut Builder, x: ValueId, e: ValueId, m: ValueId) -> CgResult<ValueId> {
    let (n, k) = (bits(b, x)?, bits(b, e)?);
    let s = n.div_ceil(64) as usize;
    let ml = to_limbs(b, m, s)?;
    let md = Modulus {
        neg_inv: neg_inverse(b, ml[0])?,
        m: ml,
    };
    let r2 = r_squared(b, m, n)?;
    let r2 = to_limbs(b, r2, s)?;
    let xl = to_limbs(b, x, s)?;
    let zero = b.u64(0);
    let one = b.u64(1);
    let mut unit = vec![zero; s];
    unit[0] = one;
    let xm = mont(b, &md, &xl, &r2)?;
    let start = mont(b, &md, &unit, &r2)?;

    // Square-and-multiply from the exponent's top bit: acc (limbs) carried; x R, e, m captured.
    let mut body = Builder::loop_body(b);
    let i = ValueId(0);
    let u64s = |body: &mut Builder, name: &str| -> Vec<ValueId> {
        (0..s)
            .map(|j| body.param(&format!("{name}{j}"), Type::U64))
            .collect()
    };
    let acc = u64s(&mut body, "acc");
    let bx = u64s(&mut body, "xm");
    let bm = u64s(&mut body, "m");
    let bn = body.param("neg_inv", Type::U64);
    let be = body.param("e", big(k));
    let inner = Modulus { m: bm, neg_inv: bn };
    let square = mont(&mut body, &inner, &acc, &acc)?;
    let times = mont(&mut body, &inner, &square, &bx)?;
    let top = body.u32((k - 1) as u32);
    let index = body.sub(top, i)?;
    let set = body.bit(be, index)?;
    let next: Vec<ValueId> = (0..s)
        .map(|j| Ok(body.select(set, times[j], square[j])?))
        .collect::<CgResult<_>>()?;
    let body = body.finish(&next)?;
    let mut captured = xm.clone();
    captured.extend(&md.m);
    captured.push(md.neg_inv);
    captured.push(e);
    let acc = b.repeat(Size::lit(k), body, &start, &captured)?;
    let acc = fields(b, acc, s)?;

    let result = mont(b, &md, &acc, &unit)?;
    let result = from_limbs(b, &result)?;
    let zero = b.u32(0);
    let odd = b.bit(m, zero)?;
    let flag = b.constant(Literal::Big(vec![u64::MAX; s], Size::lit(n)));
    Ok(b.select(odd, result, flag)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{eval, Value};
    use num_bigint::BigUint;

    /// A lambda `(x, e, m) -> x^e mod m` at these widths, expanded, against the evaluator's
    /// `modpow`.
    fn check(n: u64, k: u64, cases: &[(BigUint, BigUint, BigUint)]) {
        let mut l = Builder::lambda();
        let x = l.param("x", big(n));
        let e = l.param("e", big(k));
        let m = l.param("m", big(n));
        let p = l.pow_mod(x, e, m).unwrap();
        let f = l.finish(&[p]).unwrap();
        let g = expand(&f).unwrap();
        assert!(!has_pow_mod(&g));
        bigfuse_core::validate(&g).unwrap();
        for (x, e, m) in cases {
            let args = [
                Value::Big(x.clone()),
                Value::Big(e.clone()),
                Value::Big(m.clone()),
            ];
            let want = eval(&f, &args).unwrap();
            assert_eq!(
                eval(&g, &args).unwrap(),
                want,
                "{x}^{e} mod {m} at {n} bits"
            );
        }
    }

    #[test]
    fn powers_equal_modpow() {
        let b = |v: u64| BigUint::from(v);
        let all = |n: u64| (BigUint::from(1u8) << n) - 1u8;
        for n in [64u64, 128, 192] {
            let big_m = all(n) - b(4); // odd, near the top
            let cases = vec![
                (b(3), b(5), b(7)),
                (b(0), b(0), b(7)),
                (b(0), b(9), b(7)),
                (b(5), b(0), b(3)),
                (b(12345), b(1), b(1)),
                (all(n), all(n), big_m.clone()),
                (all(n), b(65537), all(n)),
                (b(2), all(n), big_m.clone()),
                (b(6), b(10), b(10)),
                (b(6), b(10), b(0)),
                (b(123456789), b(987654321), b(1_000_000_007)),
            ];
            check(n, n, &cases);
        }
        // A narrower exponent.
        check(
            128,
            64,
            &[(b(3), b(u64::MAX), (BigUint::from(1u8) << 127) + 1u8)],
        );
    }
}

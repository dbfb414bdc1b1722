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
use bigfuse_core::{
    rewrite, BinOp, Builder, CmpOp, Func, IrResult, Literal, Op, ShiftOp, Size, Type, UnOp, ValueId,
};

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
        || f.nodes.iter().any(|n| {
            n.ty.leaves().iter().any(|l| matches!(l, Type::Big(_)))
                || matches!(&n.op, Op::Loop { body, .. } if lambda_has_big(body))
        })
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
    let sums = sums_of_products(f);
    rewrite(
        f,
        Builder::like(f),
        |t| scalar_type(t, true),
        |b, mapped, id, node| {
            let m = |v: ValueId| mapped.get(v);
            let bits = |v: ValueId| match f.ty(v) {
                Type::Big(s) => limbs_of(s),
                _ => 0,
            };
            // The product is computed by the sum that is its only use.
            if sums.iter().any(|s| s.product == id) {
                return Ok(Rewritten::Drop);
            }
            if let Some(s) = sums.iter().find(|s| s.sum == id) {
                let (x, y, out) = s.factors;
                let op = Op::LimbMulAddWords(m(x), m(y), m(s.addend), out);
                return Ok(Rewritten::Value(b.push(op)?));
            }
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
                Op::BigUnary(UnOp::Not, x) => {
                    let xs = limbs(b, m(*x), bits(*x))?;
                    let out = xs.iter().map(|w| b.not(*w)).collect::<IrResult<Vec<_>>>()?;
                    b.tuple(&out)?
                }
                Op::BigUnary(u, x) => count(b, *u, m(*x), bits(*x))?,
                Op::BigBitwise(op, x, y) => {
                    let (xs, ys) = (limbs(b, m(*x), bits(*x))?, limbs(b, m(*y), bits(*y))?);
                    let out = xs
                        .iter()
                        .zip(&ys)
                        .map(|(p, q)| bitwise_word(b, *op, *p, *q))
                        .collect::<IrResult<Vec<_>>>()?;
                    b.tuple(&out)?
                }
                Op::BigShift(op, x, k) => shift(b, *op, m(*x), m(*k), bits(*x))?,
                Op::BigBit(x, i) => bit(b, m(*x), m(*i), bits(*x))?,
                // A big integer to another width (its low limbs, zeros above) or to u32/u64 (its
                // low limb, truncated).
                Op::Cast(a) if matches!(f.ty(*a), Type::Big(_)) => {
                    let xs = limbs(b, m(*a), bits(*a))?;
                    match &node.ty {
                        Type::Big(_) => {
                            let zero = b.u64(0);
                            let out: Vec<ValueId> =
                                (0..bits(id)).map(|k| *xs.get(k).unwrap_or(&zero)).collect();
                            b.tuple(&out)?
                        }
                        Type::U64 => xs[0],
                        to => b.cast(xs[0], to.clone())?,
                    }
                }
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
                // One device function per widths (crate::montgomery), on the operands' limbs.
                Op::BigPowMod(x, e, md) => b.push(Op::LimbPowMod(m(*x), m(*e), m(*md)))?,
                Op::BigMontMul(x, y, md) => b.push(Op::LimbMontMul(m(*x), m(*y), m(*md)))?,
                Op::BigGcd(x, y) => b.push(Op::LimbGcd(m(*x), m(*y)))?,
                Op::BigDivRem(x, y) => b.push(Op::LimbDivRem(m(*x), m(*y)))?,
                Op::BigIsqrtWhole(x) => b.push(Op::LimbIsqrt(m(*x)))?,
                Op::BigInvMod(x, md) => b.push(Op::LimbInvMod(m(*x), m(*md)))?,
                // A loop that stayed a loop (one thread per instance): its body computes on limbs too.
                Op::Loop { count, body, args } => b.push(Op::Loop {
                    count: *count,
                    body: Box::new(lambda(body)?),
                    args: args.iter().map(|a| m(*a)).collect(),
                })?,
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

/// One word of a bitwise operation of big integers. A word that is a constant zero (the limbs
/// a cast or a constant shift puts below or above a number) decides it without an operation:
/// `(a << BITS) | b` is then the words of `b` and `a` themselves, which a device function's
/// operand can read where they lie (`crate::place::read_in_place`).
fn bitwise_word(b: &mut Builder, op: BinOp, x: ValueId, y: ValueId) -> IrResult<ValueId> {
    let zero = |v: ValueId| b.func().node(v).op == Op::Const(Literal::U64(0));
    match (op, zero(x), zero(y)) {
        (BinOp::Or | BinOp::Xor, true, _) => Ok(y),
        (BinOp::Or | BinOp::Xor, _, true) => Ok(x),
        (BinOp::And, true, _) => Ok(x),
        (BinOp::And, _, true) => Ok(y),
        _ => b.binary(op, x, y),
    }
}

/// A sum whose one operand is a product that one thread computes whole as `limb.mul_words` (not
/// a square: the square's doubling would count an addend twice), and that sum is the product's
/// only use: it becomes one `limb.mul_add_words`.
struct SumOfProduct {
    sum: ValueId,
    product: ValueId,
    /// The product's factors and limbs kept.
    factors: (ValueId, ValueId, usize),
    addend: ValueId,
}

fn sums_of_products(f: &Func) -> Vec<SumOfProduct> {
    let uses = f.use_counts();
    let limbs = |v: ValueId| match f.ty(v) {
        Type::Big(s) => limbs_of(s),
        _ => 0,
    };
    let word_product = |p: ValueId| match f.node(p).op {
        Op::BigMul(x, y) | Op::BigMulWide(x, y)
            if x != y && uses[p.index()] == 1 && whole_words(limbs(x), &known(f, y)) =>
        {
            Some((x, y, limbs(p)))
        }
        _ => None,
    };
    f.ids()
        .filter_map(|id| match f.node(id).op {
            // Of two products, the later one takes the sum: the earlier one is done by then.
            Op::BigAdd(a, c) if a != c => [(a, c), (c, a)]
                .into_iter()
                .filter_map(|(p, addend)| {
                    word_product(p).map(|factors| SumOfProduct {
                        sum: id,
                        product: p,
                        factors,
                        addend,
                    })
                })
                .max_by_key(|s| s.product),
            _ => None,
        })
        .collect()
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

/// The `n` limbs of `t`: a tuple's own fields where scalarize built it (a cast's or a constant
/// shift's limbs, zeros among them, which [`bitwise_word`] then sees), extracts otherwise.
fn limbs(b: &mut Builder, t: ValueId, n: usize) -> CgResult<Vec<ValueId>> {
    if let Op::Tuple(fields) = &b.func().node(t).op {
        if fields.len() == n {
            return Ok(fields.clone());
        }
    }
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
/// sums in a 128-bit accumulator: column k adds the low words of x_i*y_(k-i) and the high words of
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
    let unknown = y_known.iter().all(Option::is_none);
    if whole_words(n, y_known) {
        return Ok(b.push(Op::LimbMulWords(x, y, out))?);
    }
    if x == y && n > 1 && unknown {
        return square(b, x, n, out);
    }
    let (xs, ys) = (limbs(b, x, n)?, limbs(b, y, n)?);
    column_sums(b, &xs, &ys, out, &|_, j| y_known.get(j) == Some(&Some(0)))
}

/// Whether a product of `n`-limb numbers, of which `y_known` are the second's known limbs, is
/// one `limb.mul_words` ([`MUL_WORDS_FROM_LIMBS`]).
fn whole_words(n: usize, y_known: &[Option<u64>]) -> bool {
    n >= MUL_WORDS_FROM_LIMBS && y_known.iter().all(Option::is_none)
}

/// Products of numbers of at least this many limbs (and no limb known, as a constant's are) go
/// whole to one device function of carry chains (`limb.mul_words`, emit/mul_words.rs): whole
/// 64-bit word products that the CUDA compiler fuses into wide multiply-adds, about one
/// instruction per 32-bit word product against four or more for column sums of 64-bit limbs.
/// Measured on an H200 (bench mul, same session, bench/RESULTS.md 2026-11-26 sixth session): Poly
/// at 2^8 / 2^9 bits 1.028 M / 678 K -> 1.277 M / 1.021 M Gu32ops/s, 1-Mul within 1.4% (bound by
/// memory); at 2^7 (two limbs) Poly 868 K -> 858 K, so narrower products keep column sums.
pub const MUL_WORDS_FROM_LIMBS: usize = 4;

/// Column sums of the word products `x_i * y_j` of two limb lists as `out` limbs, in a 128-bit
/// accumulator: column k adds the low words of x_i*y_(k-i) and the high words of x_i*y_(k-1-i),
/// except the pairs `skip` names.
fn column_sums(
    b: &mut Builder,
    xs: &[ValueId],
    ys: &[ValueId],
    out: usize,
    skip: &dyn Fn(usize, usize) -> bool,
) -> CgResult<ValueId> {
    let n = ys.len();
    let zero = b.u64(0);
    // Column k's sum is below 2n * 2^64 plus the carry in, itself at most 2n (by induction), so
    // two words hold it and the high word never overflows.
    let (mut a0, mut a1) = (zero, zero);
    let mut result = Vec::with_capacity(out);
    for k in 0..out {
        for (i, &xi) in xs.iter().enumerate() {
            for (j, hi) in [(k.wrapping_sub(i), false), (k.wrapping_sub(i + 1), true)] {
                if j >= n || i + j + hi as usize != k || skip(i, j) {
                    continue;
                }
                let w = if hi {
                    b.binary(BinOp::MulHi, xi, ys[j])?
                } else {
                    b.mul(xi, ys[j])?
                };
                // (a0, a1) += w
                let s0 = b.add(a0, w)?;
                let c0 = b.lt(s0, a0)?;
                let c0 = b.cast(c0, Type::U64)?;
                a1 = b.add(a1, c0)?;
                a0 = s0;
            }
        }
        result.push(a0);
        a0 = a1;
        a1 = zero;
    }
    Ok(b.tuple(&result)?)
}

/// `x^2` as `out` limbs, each cross product once: the column sums of `x_i * x_j` for i < j,
/// doubled by a one-bit shift, plus the squares `x_i^2` (which do not overlap: limbs 2i and
/// 2i + 1). About half the word products of [`product`]: less code in one-thread programs,
/// whose straight-line code can outgrow the instruction cache (the square root's `q^2`).
fn square(b: &mut Builder, x: ValueId, n: usize, out: usize) -> CgResult<ValueId> {
    let xs = limbs(b, x, n)?;
    let cross = column_sums(b, &xs, &xs, out, &|i, j| i >= j)?;
    let cs = limbs(b, cross, out)?;
    let (one, top) = (b.u64(1), b.u64(63));
    let mut doubled = Vec::with_capacity(out);
    for k in 0..out {
        let up = b.binary(BinOp::Shl, cs[k], one)?;
        doubled.push(if k == 0 {
            up
        } else {
            let carry = b.binary(BinOp::Shr, cs[k - 1], top)?;
            b.or(up, carry)?
        });
    }
    let mut diagonal = Vec::with_capacity(out);
    for k in 0..out {
        let xi = xs.get(k / 2).copied();
        diagonal.push(match xi {
            Some(xi) if k % 2 == 0 => b.mul(xi, xi)?,
            Some(xi) => b.binary(BinOp::MulHi, xi, xi)?,
            None => b.u64(0),
        });
    }
    let (d, g) = (b.tuple(&doubled)?, b.tuple(&diagonal)?);
    add_sub(b, d, g, out, false)
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

/// A bit count of an n-limb number, as u32 (`64 n` for the zeros of 0): one count per limb, then
/// ones summed, or the limb that decides (the highest nonzero one for leading zeros, the lowest for
/// trailing zeros) picked by selects in order.
fn count(b: &mut Builder, op: UnOp, x: ValueId, n: usize) -> CgResult<ValueId> {
    let xs = limbs(b, x, n)?;
    let zero = b.u64(0);
    // Leading zeros: from the bottom limb up, so the highest nonzero limb is chosen last; trailing
    // zeros: from the top down.
    let order: Vec<usize> = match op {
        UnOp::TrailingZeros => (0..n).rev().collect(),
        _ => (0..n).collect(),
    };
    let mut acc: Option<ValueId> = None;
    for k in order {
        let c = b.count(op, xs[k])?;
        acc = Some(match (op, acc) {
            (UnOp::CountOnes, None) => c,
            (UnOp::CountOnes, Some(a)) => b.add(a, c)?,
            (_, acc) => {
                let acc = match acc {
                    Some(a) => a,
                    None => b.u32(64 * n as u32), // every limb zero
                };
                let above = b.u32(match op {
                    UnOp::LeadingZeros => 64 * (n - 1 - k) as u32,
                    _ => 64 * k as u32,
                });
                let here = b.add(above, c)?;
                let nonzero = b.ne(xs[k], zero)?;
                b.select(nonzero, here, acc)?
            }
        });
    }
    Ok(acc.expect("a big integer has at least one limb"))
}

/// A shift or rotation of an n-limb number by `k` (a u32) bits, as a barrel shifter: the whole
/// limbs of the amount (`k >> 6`, taken modulo n for rotations) move the limbs by 1, 2, 4, ..
/// positions in ceil(log2 n) stages of one select per limb (a stage moves them when its bit of the
/// amount is set), so no limb is ever picked by a run-time index; then the amount's bits within a
/// limb (`k & 63`) join each limb with its neighbour. Shifts by `64 n` bits or more give 0.
fn shift(b: &mut Builder, op: ShiftOp, x: ValueId, k: ValueId, n: usize) -> CgResult<ValueId> {
    if let Op::Const(Literal::U32(k)) = b.func().node(k).op {
        return shift_by(b, op, x, k as u64, n);
    }
    let xs = limbs(b, x, n)?;
    let bits = b.u32(64 * n as u32);
    let zero = b.u64(0);
    let rotate = matches!(op, ShiftOp::Rotl | ShiftOp::Rotr);
    let left = matches!(op, ShiftOp::Shl | ShiftOp::Rotl);
    let k = if rotate {
        b.binary(BinOp::Rem, k, bits)?
    } else {
        k
    };
    // The limb that moves to position i from `d` positions away (below for left shifts), or 0.
    let from = |cur: &[ValueId], i: usize, d: usize| -> ValueId {
        let src = if left {
            i as isize - d as isize
        } else {
            (i + d) as isize
        };
        if rotate {
            cur[src.rem_euclid(n as isize) as usize]
        } else if (0..n as isize).contains(&src) {
            cur[src as usize]
        } else {
            zero
        }
    };
    let six = b.u32(6);
    let whole = b.binary(BinOp::Shr, k, six)?;
    let one = b.u32(1);
    let none = b.u32(0);
    let mut cur = xs;
    let (mut stage, mut d) = (0u32, 1usize);
    while d < n {
        let s = b.u32(stage);
        let bit = b.binary(BinOp::Shr, whole, s)?;
        let bit = b.binary(BinOp::And, bit, one)?;
        let moves = b.ne(bit, none)?;
        cur = (0..n)
            .map(|i| b.select(moves, from(&cur, i, d), cur[i]))
            .collect::<IrResult<_>>()?;
        stage += 1;
        d *= 2;
    }
    // Within a limb: r = k & 63. The neighbour's part is shifted by 64 - r in two steps (1, then
    // 63 - r), so that r = 0 brings nothing in without a select (the IR takes shift amounts
    // modulo 64).
    let m63 = b.u32(63);
    let r = b.binary(BinOp::And, k, m63)?;
    let r = b.cast(r, Type::U64)?;
    let m63 = b.u64(63);
    let back = b.sub(m63, r)?;
    let one = b.u64(1);
    let (main, spill) = if left {
        (BinOp::Shl, BinOp::Shr)
    } else {
        (BinOp::Shr, BinOp::Shl)
    };
    let inside = if rotate { None } else { Some(b.lt(k, bits)?) };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let near = b.binary(main, cur[i], r)?;
        let far = from(&cur, i, 1);
        let v = if far == zero {
            near // the end of a shift: nothing comes in
        } else {
            let far = b.binary(spill, far, one)?;
            let far = b.binary(spill, far, back)?;
            b.or(near, far)?
        };
        out.push(match inside {
            Some(inside) => b.select(inside, v, zero)?,
            None => v,
        });
    }
    Ok(b.tuple(&out)?)
}

/// A shift or rotation by a constant: each limb is one or two limbs of `x` moved, no selects.
fn shift_by(b: &mut Builder, op: ShiftOp, x: ValueId, k: u64, n: usize) -> CgResult<ValueId> {
    let xs = limbs(b, x, n)?;
    let bits = 64 * n as u64;
    let rotate = matches!(op, ShiftOp::Rotl | ShiftOp::Rotr);
    let zero = b.u64(0);
    if !rotate && k >= bits {
        return Ok(b.tuple(&vec![zero; n])?);
    }
    // As a left rotation or shift by `k` (a right one by k is a left one by bits - k).
    let left = matches!(op, ShiftOp::Shl | ShiftOp::Rotl);
    let k = if rotate { k % bits } else { k };
    let (whole, r) = ((k / 64) as isize, (k % 64) as u32);
    // Limb i of the result takes bits from source limbs i -/+ whole and the next one beyond.
    let source = |j: isize| -> Option<ValueId> {
        if rotate {
            Some(xs[j.rem_euclid(n as isize) as usize])
        } else if (0..n as isize).contains(&j) {
            Some(xs[j as usize])
        } else {
            None
        }
    };
    let mut out = Vec::with_capacity(n);
    for i in 0..n as isize {
        let (main, beyond) = if left {
            (source(i - whole), source(i - whole - 1))
        } else {
            (source(i + whole), source(i + whole + 1))
        };
        let (there, spill) = if left {
            (BinOp::Shl, BinOp::Shr)
        } else {
            (BinOp::Shr, BinOp::Shl)
        };
        let mut v = match main {
            Some(m) if r == 0 => m,
            Some(m) => {
                let r = b.u64(r as u64);
                b.binary(there, m, r)?
            }
            None => zero,
        };
        if let (Some(nb), true) = (beyond, r != 0) {
            let back = b.u64(64 - r as u64);
            let part = b.binary(spill, nb, back)?;
            v = if v == zero { part } else { b.or(v, part)? };
        }
        out.push(v);
    }
    Ok(b.tuple(&out)?)
}

/// Bit `i` (a u32) of an n-limb number: its limb chosen by a tree of selects on the bits of
/// `i >> 6` (n - 1 selects), then the bit within it; false past the end.
fn bit(b: &mut Builder, x: ValueId, i: ValueId, n: usize) -> CgResult<ValueId> {
    let mut level = limbs(b, x, n)?;
    let zero = b.u64(0);
    level.resize(n.next_power_of_two(), zero);
    let six = b.u32(6);
    let q = b.binary(BinOp::Shr, i, six)?;
    let (one, none) = (b.u32(1), b.u32(0));
    let mut stage = 0u32;
    while level.len() > 1 {
        let s = b.u32(stage);
        let sel = b.binary(BinOp::Shr, q, s)?;
        let sel = b.binary(BinOp::And, sel, one)?;
        let high = b.ne(sel, none)?;
        level = level
            .chunks(2)
            .map(|p| b.select(high, p[1], p[0]))
            .collect::<IrResult<_>>()?;
        stage += 1;
    }
    let m63 = b.u32(63);
    let r = b.binary(BinOp::And, i, m63)?;
    let r = b.cast(r, Type::U64)?;
    let down = b.binary(BinOp::Shr, level[0], r)?;
    let one = b.u64(1);
    let low = b.binary(BinOp::And, down, one)?;
    let set = b.ne(low, zero)?;
    let bits = b.u32(64 * n as u32);
    let inside = b.lt(i, bits)?;
    Ok(b.and(inside, set)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{eval, print, specialize, Value};
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

    /// Programs mapping one bit-level operation over `xs: [U<BITS>; N]`, `ys: [U<BITS>; N]` with
    /// the amounts `k: u32`, `j: u32` broadcast.
    /// Shifts and rotations by constants (`shift_by`, no selects) equal the evaluator's, at
    /// amounts around limb edges and past the width.
    #[test]
    fn shifts_by_constants() {
        let bits = 192u64;
        let x = (BigUint::from(0x0123_4567_89ab_cdefu64) << 130u32)
            | (BigUint::from(u64::MAX) << 40u32)
            | BigUint::from(0xf00du32);
        for op in [ShiftOp::Shl, ShiftOp::Shr, ShiftOp::Rotl, ShiftOp::Rotr] {
            for k in [0u32, 1, 5, 63, 64, 65, 128, 130, 191, 192, 200, 400] {
                let mut l = Builder::lambda();
                let xv = l.param("x", Type::Big(Size::lit(bits)));
                let kv = l.u32(k);
                let r = l.shift(op, xv, kv).unwrap();
                let f = l.finish(&[r]).unwrap();
                let g = lambda(&f).unwrap();
                assert!(!g.nodes.iter().any(|n| matches!(n.op, Op::Select(..))));
                let want = eval(&f, &[Value::Big(x.clone())]).unwrap().remove(0);
                let limbs: Vec<Value> = (0..3)
                    .map(|i: u32| {
                        Value::U64((&x >> (64 * i)).iter_u64_digits().next().unwrap_or(0))
                    })
                    .collect();
                let got = eval(&g, &[Value::Tuple(limbs)]).unwrap().remove(0);
                let Value::Big(w) = want else { panic!() };
                let Value::Tuple(ls) = got else { panic!() };
                let got = ls.iter().rev().fold(BigUint::from(0u8), |acc, l| match l {
                    Value::U64(v) => (acc << 64u32) | BigUint::from(*v),
                    _ => panic!(),
                });
                assert_eq!(got, w, "{op:?} by {k}");
            }
        }
    }

    fn bit_programs() -> Vec<(&'static str, Func)> {
        let ops = [
            "not", "and", "or", "xor", "shl", "shr", "rotl", "rotr", "clz", "ctz", "popc", "bit",
            "widen", "narrow", "same", "low64", "low32", "extract", "insert", "mask", "mixed",
        ];
        ops.into_iter()
            .map(|op| {
                let big = Type::Big(Size::param(0));
                let arr = Type::array(big.clone(), Size::param(1));
                let mut b = Builder::new(op, &["BITS", "N"]);
                let xs = b.param("xs", arr.clone());
                let ys = b.param("ys", arr);
                let k = b.param("k", Type::U32);
                let j = b.param("j", Type::U32);
                let f = {
                    let mut l = Builder::lambda();
                    let x = l.param("x", big.clone());
                    let y = l.param("y", big.clone());
                    let k = l.param("k", Type::U32);
                    let j = l.param("j", Type::U32);
                    let r = match op {
                        "not" => l.not(x),
                        "and" => l.and(x, y),
                        "or" => l.or(x, y),
                        "xor" => l.xor(x, y),
                        "shl" => l.shift(ShiftOp::Shl, x, k),
                        "shr" => l.shift(ShiftOp::Shr, x, k),
                        "rotl" => l.shift(ShiftOp::Rotl, x, k),
                        "rotr" => l.shift(ShiftOp::Rotr, x, k),
                        "clz" => l.count(UnOp::LeadingZeros, x),
                        "ctz" => l.count(UnOp::TrailingZeros, x),
                        "popc" => l.count(UnOp::CountOnes, x),
                        "bit" => l.bit(x, k),
                        "widen" => l.cast(x, Type::Big(Size::scaled(2, 0))),
                        "narrow" => l.cast(x, Type::Big(Size::lit(128))),
                        "same" => l.cast(x, big.clone()),
                        "low64" => l.cast(x, Type::U64),
                        "low32" => l.cast(x, Type::U32),
                        "extract" => l.extract_bits(x, k, j),
                        "insert" => l.insert_bits(x, y, k, j),
                        "mask" => l.mask(&big, k),
                        // Shifts, bit operations and arithmetic in one expression:
                        // ((x << k) ^ y) + (x >> j) * y.
                        "mixed" => (|| {
                            let a = l.shift(ShiftOp::Shl, x, k)?;
                            let a = l.xor(a, y)?;
                            let c = l.shift(ShiftOp::Shr, x, j)?;
                            let c = l.mul(c, y)?;
                            l.add(a, c)
                        })(),
                        _ => unreachable!(),
                    }
                    .unwrap();
                    l.finish(&[r]).unwrap()
                };
                let r = b.map(f, &[xs, ys, k, j]).unwrap();
                (op, b.finish(&[r]).unwrap())
            })
            .collect()
    }

    /// Edge values of `bits` bits: 0, 1, all ones, powers of two at limb edges, runs of ones,
    /// and a value with every limb different.
    fn edge_values(bits: u64) -> Vec<BigUint> {
        let one = BigUint::from(1u8);
        let max = (&one << bits) - 1u8;
        let mut v = vec![
            BigUint::from(0u8),
            one.clone(),
            max.clone(),
            &one << (bits - 1),
            BigUint::from(u64::MAX),
            &max >> 1u32,
            &max ^ (&one << (bits / 2)),
        ];
        if bits > 64 {
            v.push(&one << 64u32);
            v.push(&max >> 65u32);
            v.push(&max - (&one << 70u32));
        }
        let mut x = 0x9e3779b97f4a7c15u64;
        let limbs: Vec<u64> = (0..bits / 64)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        v.push(eval::limbs_to_big(&limbs));
        v
    }

    /// `v` (of type `t`, from the reference) with its big integers as limb tuples of their width.
    fn in_limbs(v: &Value, t: &Type) -> Value {
        match (v, t) {
            (Value::Array(e), Type::Array(et, _)) => {
                Value::Array(e.iter().map(|x| in_limbs(x, et)).collect())
            }
            (Value::Big(x), Type::Big(s)) => {
                let mut d = x.to_u64_digits();
                d.resize(limbs_of(s), 0);
                Value::Tuple(d.into_iter().map(Value::U64).collect())
            }
            _ => v.clone(),
        }
    }

    #[test]
    fn scalarized_bit_operations_agree_with_the_reference() {
        for bits in [64u64, 128, 192, 320, 512] {
            let w = bits as u32;
            let amounts = [
                0u32,
                1,
                5,
                63,
                64,
                65,
                127,
                w - 1,
                w,
                w + 1,
                w + 64,
                u32::MAX,
            ];
            let xs = edge_values(bits);
            let n = xs.len() as u64;
            let mut ys = xs.clone();
            ys.rotate_left(3);
            let big_t = Type::Big(Size::lit(bits));
            let arr = |v: &[BigUint]| Value::Array(v.iter().cloned().map(Value::Big).collect());
            for (op, f) in bit_programs() {
                let f = specialize(&f, &[bits, n]).unwrap();
                let low = scalarize(&f).unwrap();
                // Nothing big is left inside the closure: only limb arithmetic.
                for node in &low.nodes {
                    for l in node.op.lambdas() {
                        assert!(!lambda_has_big(l), "{op} at {bits}: {}", print(l));
                        assert!(
                            l.nodes.iter().all(|n| !n.op.is_high_level()),
                            "{op} at {bits}: {}",
                            print(l)
                        );
                    }
                }
                let out_t = f.output_types()[0].clone();
                for &k in &amounts {
                    for j in [0u32, 1, 7, 64, 100, w - 1, w, u32::MAX] {
                        let inputs = [arr(&xs), arr(&ys), Value::U32(k), Value::U32(j)];
                        let want = eval(&f, &inputs).unwrap().remove(0);
                        let low_inputs = [
                            in_limbs(&inputs[0], &Type::array(big_t.clone(), Size::lit(n))),
                            in_limbs(&inputs[1], &Type::array(big_t.clone(), Size::lit(n))),
                            inputs[2].clone(),
                            inputs[3].clone(),
                        ];
                        let got = eval(&low, &low_inputs).unwrap().remove(0);
                        assert_eq!(
                            got,
                            in_limbs(&want, &out_t),
                            "{op} at {bits} bits, k = {k}, j = {j}"
                        );
                    }
                }
            }
        }
    }

    /// The reference itself, on a few values computed by hand with num-bigint: what the scalarized
    /// code is compared with means what the IR's documentation says.
    #[test]
    fn the_reference_of_element_bit_operations() {
        let bits = 320u64;
        let xs = edge_values(bits);
        let n = xs.len() as u64;
        let m = BigUint::from(1u8) << bits;
        let run = |op: &str, k: u32, j: u32| -> Vec<Value> {
            let (_, f) = bit_programs().into_iter().find(|(o, _)| *o == op).unwrap();
            let f = specialize(&f, &[bits, n]).unwrap();
            let a = Value::Array(xs.iter().cloned().map(Value::Big).collect());
            match eval(&f, &[a.clone(), a, Value::U32(k), Value::U32(j)])
                .unwrap()
                .remove(0)
            {
                Value::Array(v) => v,
                _ => unreachable!(),
            }
        };
        let r = xs.last().unwrap();
        let at = |v: &[Value]| v.last().unwrap().clone();
        assert_eq!(at(&run("shl", 70, 0)), Value::Big((r << 70u32) % &m));
        assert_eq!(at(&run("shr", 70, 0)), Value::Big(r >> 70u32));
        assert_eq!(
            at(&run("rotl", 70, 0)),
            Value::Big(((r << 70u32) | (r >> 250u32)) % &m)
        );
        assert_eq!(at(&run("popc", 0, 0)), Value::U32(r.count_ones() as u32));
        assert_eq!(run("clz", 0, 0)[0], Value::U32(320));
        assert_eq!(run("ctz", 0, 0)[3], Value::U32(319));
        assert_eq!(
            at(&run("extract", 100, 9)),
            Value::Big((r >> 100u32) % 512u32)
        );
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

    /// Squares (`x * x`, `x.mul_wide(x)`: each cross product once) equal the reference at one
    /// to seventeen limbs, on edge values and random ones, and use fewer word products than a
    /// product of two operands.
    /// A product whose only use is a sum becomes one `limb.mul_add_words` (the later of two
    /// products takes the sum); a square, a product used twice and a narrow one stay products;
    /// every form equals the reference.
    #[test]
    fn products_take_the_sums_that_are_their_only_use() {
        let poly = || {
            let big = Type::Big(Size::param(0));
            let arr = Type::array(big.clone(), Size::param(1));
            let mut b = Builder::new("poly", &["BITS", "N"]);
            let xs = b.param("xs", arr.clone());
            let ys = b.param("ys", arr);
            let f = {
                let mut l = Builder::lambda();
                let x = l.param("x", big.clone());
                let y = l.param("y", big.clone());
                let r = crate::per_thread::poly(&mut l, x, y);
                // Used twice: stays a product.
                let twice = l.mul(r, y).unwrap();
                let s = l.add(twice, x).unwrap();
                let t = l.sub(s, twice).unwrap();
                l.finish(&[t]).unwrap()
            };
            let r = b.map(f, &[xs, ys]).unwrap();
            b.finish(&[r]).unwrap()
        };
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for limbs in [2u64, 4, 5] {
            let bits = 64 * limbs;
            let keep = BigUint::from(1u8) << bits;
            let mut big = || {
                let d: Vec<u32> = (0..limbs)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed
                    })
                    .flat_map(|w| [w as u32, (w >> 32) as u32])
                    .collect();
                BigUint::from_slice(&d)
            };
            let mut pairs = vec![
                (BigUint::default(), &keep - 1u8),
                (&keep - 1u8, &keep - 1u8),
                (BigUint::from(1u8), BigUint::from(3u8)),
            ];
            for _ in 0..6 {
                pairs.push((big(), big()));
            }
            let n = pairs.len() as u64;
            let f = specialize(&poly(), &[bits, n]).unwrap();
            let low = scalarize(&f).unwrap();
            let text = print(&low);
            let fused = text.matches("limb.mul_add_words").count();
            let products = text.matches("limb.mul_words").count();
            if limbs >= MUL_WORDS_FROM_LIMBS as u64 {
                // x*y takes the sum with (x^2 + y)(y^2 + y); the squares, that product and
                // the one used twice stay products.
                assert_eq!((fused, products), (1, 4), "{text}");
            } else {
                assert_eq!((fused, products), (0, 0), "{text}");
            }
            let as_limbs = |x: &BigUint| {
                let mut d = x.to_u64_digits();
                d.resize(limbs as usize, 0);
                Value::Tuple(d.into_iter().map(Value::U64).collect())
            };
            let xs = Value::Array(pairs.iter().map(|p| as_limbs(&p.0)).collect());
            let ys = Value::Array(pairs.iter().map(|p| as_limbs(&p.1)).collect());
            let got = eval(&low, &[xs, ys]).unwrap();
            let want: Vec<Value> = pairs
                .iter()
                .map(|(x, y)| {
                    let r = ((x * x + y) * (y * y + y) + x * y) % &keep;
                    let twice = (&r * y) % &keep;
                    as_limbs(&((&twice + x + &keep - &twice) % &keep))
                })
                .collect();
            assert_eq!(got[0], Value::Array(want), "{bits} bits");
        }
    }

    #[test]
    fn squares_match_the_reference() {
        let squares = || {
            let big = Type::Big(Size::param(0));
            let arr = Type::array(big.clone(), Size::param(1));
            let mut b = Builder::new("squares", &["BITS", "N"]);
            let xs = b.param("xs", arr);
            let f = {
                let mut l = Builder::lambda();
                let x = l.param("x", big.clone());
                let lo = l.mul(x, x).unwrap();
                let wide = l.mul_wide(x, x).unwrap();
                let t = l.tuple(&[lo, wide]).unwrap();
                l.finish(&[t]).unwrap()
            };
            let r = b.map(f, &[xs]).unwrap();
            b.finish(&[r]).unwrap()
        };
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for limbs in [1u64, 2, 3, 5, 8, 17] {
            let bits = 64 * limbs;
            let top = (BigUint::from(1u8) << bits) - 1u8;
            let mut vals = vec![
                BigUint::default(),
                BigUint::from(1u8),
                top.clone(),
                top.clone() >> 1u8,
                BigUint::from(u64::MAX),
                BigUint::from(1u8) << (bits - 1),
                top.clone() - (BigUint::from(1u8) << (bits / 2)),
            ];
            for _ in 0..9 {
                let words: Vec<u64> = (0..limbs).map(|_| next()).collect();
                vals.push(BigUint::from_slice(
                    &words
                        .iter()
                        .flat_map(|w| [*w as u32, (*w >> 32) as u32])
                        .collect::<Vec<_>>(),
                ));
            }
            let n = vals.len() as u64;
            let f = specialize(&squares(), &[bits, n]).unwrap();
            let low = scalarize(&f).unwrap();
            let as_limbs = |x: &BigUint, w: u64| {
                let mut d = x.to_u64_digits();
                d.resize(w as usize, 0);
                Value::Tuple(d.into_iter().map(Value::U64).collect())
            };
            let xs = Value::Array(vals.iter().cloned().map(Value::Big).collect());
            let low_xs = Value::Array(vals.iter().map(|x| as_limbs(x, limbs)).collect());
            let got = eval(&low, &[low_xs]).unwrap();
            let want: Vec<Value> = vals
                .iter()
                .map(|x| {
                    let sq = x * x;
                    let lo = &sq % (BigUint::from(1u8) << bits);
                    Value::Tuple(vec![as_limbs(&lo, limbs), as_limbs(&sq, 2 * limbs)])
                })
                .collect();
            assert_eq!(got[0], Value::Array(want), "{bits} bits");
            // The reference evaluator agrees on the unlowered program too.
            assert!(eval(&f, &[xs]).is_ok());
            if limbs >= 8 {
                let muls = print(&low).matches("mul").count();
                assert!(
                    (muls as u64) < limbs * limbs * 2,
                    "{limbs} limbs: {muls} products"
                );
            }
        }
    }
}

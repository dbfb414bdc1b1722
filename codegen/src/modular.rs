//! Lowering of `Zp<P>`: every residue becomes a u64 holding its Montgomery form x·2^64 mod P, and
//! every modular operation the 64-bit integer operations that compute it, with P and its
//! Montgomery constants as literals (the program is specialized to one prime).
//!
//! - `a * b` = one Montgomery product (two 64x64 products for a·b, two for the reduction)
//! - `a + b`, `a - b` = one add or subtract and a conditional correction
//! - `x.pow(e)` = square and multiply over the exponent's bits; `x.inv()` = `x.pow(P - 2)`
//! - conversions: an integer n becomes `redc(n · R^2)`, a residue leaves as `redc(x)`
//! - delayed reduction: a sum over an array of residues (`reduce` with `+`) accumulates exactly in
//!   192 bits and reduces once at the end; when the summed values are products computed by the
//!   map that feeds the sum, the map yields the exact 128-bit products of the forms instead, so a
//!   dot product costs one 64x64 product per element and a single reduction per instance.
//!
//! Parameters and results keep their integer meaning: values enter as residues and are converted
//! to the form on load, and converted back on store.

use crate::error::{CgResult, CodegenError};
use bigfuse_core::modular::Montgomery;
use bigfuse_core::ops::Intrinsic;
use bigfuse_core::rewrite::Rewritten;
use bigfuse_core::{rewrite, BinOp, Builder, Func, Literal, Op, Type, ValueId};

/// The type with every `Zp<P>` replaced by the u64 that holds its form.
pub fn lowered_type(t: &Type) -> Type {
    match t {
        Type::Zp(_) => Type::U64,
        Type::Array(e, n) => Type::array(lowered_type(e), *n),
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(lowered_type).collect()),
        other => other.clone(),
    }
}

fn modulus(t: &Type) -> CgResult<Montgomery> {
    match t {
        Type::Zp(p) => match p.as_const() {
            Some(p) if p % 2 == 1 && p > 2 => Ok(Montgomery::new(p)),
            _ => Err(CodegenError::Unsupported(format!(
                "{t}: the modulus must be a specialized odd prime"
            ))),
        },
        other => Err(CodegenError::Unsupported(format!(
            "expected a Zp<P> value, found {other}"
        ))),
    }
}

fn lowered_literal(l: &Literal, plain: bool) -> Literal {
    match l {
        Literal::Zp(v, p) => {
            let p = p.as_const().unwrap_or(0);
            if p % 2 == 1 && p > 2 && !plain {
                Literal::U64(Montgomery::new(p).to_form(*v))
            } else {
                Literal::U64(*v)
            }
        }
        Literal::Tuple(ls) => {
            Literal::Tuple(ls.iter().map(|l| lowered_literal(l, plain)).collect())
        }
        other => other.clone(),
    }
}

/// Whether `f` (lambdas included) multiplies residues: only products need the Montgomery form.
/// Sums, differences, comparisons and sums over arrays work on residues as they are, so a
/// program without products keeps them plain and converts nothing (a prefix sum of residues
/// saves two Montgomery reductions per element).
fn multiplies(f: &Func) -> bool {
    f.nodes.iter().any(|n| match &n.op {
        Op::Binary(BinOp::Mul, x, _) => f.ty(*x).is_zp(),
        // Polynomial products multiply Montgomery forms in their transforms.
        Op::ZpPow(..) | Op::ZpInv(..) | Op::PolyMul { .. } => true,
        op => op.lambdas().iter().any(|l| multiplies(l)),
    })
}

/// Montgomery arithmetic emitted as IR into one builder.
struct Arith<'a> {
    b: &'a mut Builder,
    m: Montgomery,
}

impl Arith<'_> {
    fn lit(&mut self, v: u64) -> ValueId {
        self.b.u64(v)
    }

    /// `x - p` where `cond`, else `x`.
    fn sub_p_if(&mut self, cond: ValueId, x: ValueId) -> CgResult<ValueId> {
        let p = self.lit(self.m.p);
        let d = self.b.sub(x, p)?;
        Ok(self.b.select(cond, d, x)?)
    }

    /// `(hi·2^64 + lo) · R^-1 mod p`, for a value below p·2^64.
    fn redc(&mut self, lo: ValueId, hi: ValueId) -> CgResult<ValueId> {
        let neg_inv = self.lit(self.m.neg_inv);
        let p = self.lit(self.m.p);
        let m = self.b.mul(lo, neg_inv)?;
        let mh = self.b.binary(BinOp::MulHi, m, p)?;
        // lo + low(m·p) is 0 modulo 2^64 and carries exactly when lo != 0.
        let zero = self.lit(0);
        let nz = self.b.ne(lo, zero)?;
        let nz = self.b.cast(nz, Type::U64)?;
        let s1 = self.b.add(hi, mh)?;
        let s = self.b.add(s1, nz)?;
        let big = self.b.le(p, s)?;
        // Below p·2^64 the quotient is below 2p; for p < 2^63 that cannot overflow 64 bits.
        let need = if self.m.p < 1 << 63 {
            big
        } else {
            let c1 = self.b.lt(s1, hi)?;
            let c2 = self.b.lt(s, s1)?;
            let over = self.b.or(c1, c2)?;
            self.b.or(over, big)?
        };
        self.sub_p_if(need, s)
    }

    fn mul(&mut self, x: ValueId, y: ValueId) -> CgResult<ValueId> {
        let lo = self.b.mul(x, y)?;
        let hi = self.b.binary(BinOp::MulHi, x, y)?;
        self.redc(lo, hi)
    }

    fn mul_const(&mut self, x: ValueId, c: u64) -> CgResult<ValueId> {
        let c = self.lit(c);
        self.mul(x, c)
    }

    fn add(&mut self, x: ValueId, y: ValueId) -> CgResult<ValueId> {
        let s = self.b.add(x, y)?;
        let p = self.lit(self.m.p);
        let big = self.b.le(p, s)?;
        let need = if self.m.p < 1 << 63 {
            big
        } else {
            let over = self.b.lt(s, x)?;
            self.b.or(over, big)?
        };
        self.sub_p_if(need, s)
    }

    fn sub(&mut self, x: ValueId, y: ValueId) -> CgResult<ValueId> {
        let d = self.b.sub(x, y)?;
        let p = self.lit(self.m.p);
        let dp = self.b.add(d, p)?;
        let borrow = self.b.lt(x, y)?;
        Ok(self.b.select(borrow, dp, d)?)
    }

    /// The residue of the integer `n` (any u64), kept plain: n mod p without a division. With
    /// m = floor((2^64 - 1) / p), q = floor(n m / 2^64) is the quotient or one less, so
    /// n - q p is below 2p (and fits: for p > 2^63, m = 1 and q = 0); one subtraction finishes.
    fn reduced(&mut self, n: ValueId) -> CgResult<ValueId> {
        let m = self.lit(u64::MAX / self.m.p);
        let q = self.b.binary(BinOp::MulHi, n, m)?;
        let p = self.lit(self.m.p);
        let qp = self.b.mul(q, p)?;
        let r = self.b.sub(n, qp)?;
        let big = self.b.le(p, r)?;
        self.sub_p_if(big, r)
    }

    /// The form of the integer `n` (any u64).
    fn form_of(&mut self, n: ValueId) -> CgResult<ValueId> {
        self.mul_const(n, self.m.r2)
    }

    /// The integer (below p) of a form.
    fn integer_of(&mut self, x: ValueId) -> CgResult<ValueId> {
        let zero = self.lit(0);
        self.redc(x, zero)
    }

    /// `x^e` for an exponent known here: square and multiply over its bits.
    fn pow_const(&mut self, x: ValueId, e: u64) -> CgResult<ValueId> {
        let mut acc = self.lit(self.m.r);
        for bit in (0..64 - e.leading_zeros()).rev() {
            acc = self.mul(acc, acc)?;
            if e >> bit & 1 == 1 {
                acc = self.mul(acc, x)?;
            }
        }
        Ok(acc)
    }

    /// `x^e` for an exponent computed by the kernel: every one of its 64 bits, most significant first.
    fn pow(&mut self, x: ValueId, e: ValueId) -> CgResult<ValueId> {
        let mut acc = self.lit(self.m.r);
        let one = self.lit(1);
        let zero = self.lit(0);
        for bit in (0..64u64).rev() {
            acc = self.mul(acc, acc)?;
            let times = self.mul(acc, x)?;
            let k = self.lit(bit);
            let shifted = self.b.binary(BinOp::Shr, e, k)?;
            let set = self.b.and(shifted, one)?;
            let set = self.b.ne(set, zero)?;
            acc = self.b.select(set, times, acc)?;
        }
        Ok(acc)
    }
}

/// Lowers every `Zp<P>` of a concrete program (a no-op for programs without any).
pub fn lower_zp(func: &Func) -> CgResult<Func> {
    if !uses_zp(func) {
        return Ok(func.clone());
    }
    rebuild(func, false, !multiplies(func))
}

fn uses_zp(f: &Func) -> bool {
    f.params.iter().any(|p| p.ty.mentions_zp())
        || f.nodes
            .iter()
            .any(|n| n.ty.mentions_zp() || n.op.lambdas().iter().any(|l| uses_zp(l)))
}

/// `plain`: residues stay as they are (a program without products, [`multiplies`]); else each is
/// its Montgomery form.
fn rebuild(func: &Func, is_lambda: bool, plain: bool) -> CgResult<Func> {
    let b = if is_lambda {
        Builder::lambda()
    } else {
        Builder::like(func)
    };
    let uses = func.use_counts();
    rewrite(
        func,
        b,
        lowered_type,
        |b, mapped, _, node| {
            let m = |v: ValueId| mapped.get(v);
            Ok::<_, CodegenError>(Rewritten::Value(match &node.op {
                // A lambda's parameters already hold forms; a kernel's hold integers.
                Op::Param(k) if !is_lambda && node.ty.mentions_zp() => {
                    convert(&mut *b, mapped.param(*k as usize), &node.ty, true, plain)?
                }
                Op::Param(k) => mapped.param(*k as usize),
                Op::Const(l) => b.constant(lowered_literal(l, plain)),
                Op::Binary(op, x, y) if func.ty(*x).is_zp() => {
                    let mut a = Arith {
                        m: modulus(func.ty(*x))?,
                        b: &mut *b,
                    };
                    match op {
                        BinOp::Add => a.add(m(*x), m(*y))?,
                        BinOp::Sub => a.sub(m(*x), m(*y))?,
                        BinOp::Mul => a.mul(m(*x), m(*y))?,
                        // Forms are unique, so equality of forms is equality of residues.
                        BinOp::Eq => a.b.eq(m(*x), m(*y))?,
                        BinOp::Ne => a.b.ne(m(*x), m(*y))?,
                        other => {
                            return Err(CodegenError::Unsupported(format!(
                                "`{}` on Zp<P>",
                                other.mnemonic()
                            )))
                        }
                    }
                }
                Op::ZpPow(x, e) => {
                    let mont = modulus(&node.ty)?;
                    let mut a = Arith {
                        m: mont,
                        b: &mut *b,
                    };
                    match &func.node(*e).op {
                        Op::Const(Literal::U64(k)) => a.pow_const(m(*x), *k)?,
                        _ => a.pow(m(*x), m(*e))?,
                    }
                }
                Op::ZpInv(x) => {
                    let mont = modulus(&node.ty)?;
                    let mut a = Arith {
                        m: mont,
                        b: &mut *b,
                    };
                    a.pow_const(m(*x), mont.p - 2)?
                }
                Op::Cast(x) if node.ty.is_zp() => {
                    let mont = modulus(&node.ty)?;
                    let v = if lowered_type(func.ty(*x)) == Type::U64 {
                        m(*x)
                    } else {
                        b.cast(m(*x), Type::U64)?
                    };
                    let mut a = Arith {
                        m: mont,
                        b: &mut *b,
                    };
                    if plain {
                        a.reduced(v)?
                    } else {
                        a.form_of(v)?
                    }
                }
                Op::Cast(x) if func.ty(*x).is_zp() && plain => m(*x),
                Op::Cast(x) if func.ty(*x).is_zp() => {
                    let mont = modulus(func.ty(*x))?;
                    Arith {
                        m: mont,
                        b: &mut *b,
                    }
                    .integer_of(m(*x))?
                }
                Op::Reduce { op, init, input } if is_zp_sum(op, init) => {
                    let mont = modulus(&node.ty)?;
                    let producer = &func.node(*input).op;
                    let product_map = match producer {
                        Op::Map { f, .. } if uses[input.index()] == 1 && ends_in_zp_product(f) => {
                            Some(f)
                        }
                        _ => None,
                    };
                    // Factors read straight from the kernel's parameters are multiplied as the
                    // integers they arrive as: no conversion to forms at all (their product carries
                    // R^0, so the sum is scaled by R once at the end).
                    let raw = match (producer, product_map) {
                        (Op::Map { args, .. }, Some(f)) if !is_lambda => raw_factors(func, f, args)
                            .map(|(x, y)| (mapped.param(x as usize), mapped.param(y as usize))),
                        _ => None,
                    };
                    if let Some((x, y)) = raw {
                        let words = b.map(wide_mul_lambda(), &[x, y])?;
                        let acc = b.reduce(
                            Intrinsic::Add192.func().clone(),
                            Literal::Tuple(vec![Literal::U64(0); 3]),
                            words,
                        )?;
                        return Ok(Rewritten::Value(finish_sum(&mut *b, mont, acc, 1)?));
                    }
                    let words = match product_map {
                        Some(f) => {
                            let Op::Map { args, .. } = producer else {
                                unreachable!("matched above")
                            };
                            let wide = wide_product_lambda(f)?;
                            let args: Vec<ValueId> = args.iter().map(|a| m(*a)).collect();
                            b.map(wide, &args)?
                        }
                        None => b.map(widen_lambda(), &[m(*input)])?,
                    };
                    let acc = b.reduce(
                        Intrinsic::Add192.func().clone(),
                        Literal::Tuple(vec![Literal::U64(0); 3]),
                        words,
                    )?;
                    // Products of forms carry R^2: the sum is S·R^-1; a plain sum of forms is S.
                    let shift = if product_map.is_some() { -1 } else { 0 };
                    finish_sum(&mut *b, mont, acc, shift)?
                }
                Op::Map { f, args } => {
                    let f = rebuild(f, true, plain)?;
                    let args: Vec<ValueId> = args.iter().map(|a| m(*a)).collect();
                    b.map(f, &args)?
                }
                Op::Scan {
                    op,
                    init,
                    exclusive,
                    input,
                    flags,
                } => {
                    let op = rebuild(op, true, plain)?;
                    b.scan(
                        op,
                        lowered_literal(init, plain),
                        *exclusive,
                        m(*input),
                        flags.map(m),
                    )?
                }
                Op::Reduce { op, init, input } => {
                    let op = rebuild(op, true, plain)?;
                    b.reduce(op, lowered_literal(init, plain), m(*input))?
                }
                _ => return Ok(Rewritten::Copy),
            }))
        },
        |b, o, v| {
            if !is_lambda && func.ty(o).mentions_zp() {
                convert(b, v, func.ty(o), false, plain)
            } else {
                Ok(v)
            }
        },
    )
    // A product map consumed by a delayed reduction stays behind unused in its original form;
    // dead-code elimination (fuse) removes it.
}

/// Residues (or arrays of them) to forms (`into`) or back; `plain` (residues kept as they are):
/// reduced on the way in, as they are on the way out.
fn convert(b: &mut Builder, v: ValueId, ty: &Type, into: bool, plain: bool) -> CgResult<ValueId> {
    if plain && !into {
        return Ok(v);
    }
    match ty {
        Type::Zp(_) => {
            let mut a = Arith { m: modulus(ty)?, b };
            if plain {
                a.reduced(v)
            } else if into {
                a.form_of(v)
            } else {
                a.integer_of(v)
            }
        }
        Type::Array(e, _) if e.is_zp() => {
            let f = {
                let mut l = Builder::lambda();
                let x = l.param("x", Type::U64);
                let mut a = Arith {
                    m: modulus(e)?,
                    b: &mut l,
                };
                let r = if plain {
                    a.reduced(x)?
                } else if into {
                    a.form_of(x)?
                } else {
                    a.integer_of(x)?
                };
                l.finish(&[r])?
            };
            Ok(b.map(f, &[v])?)
        }
        other => Err(CodegenError::Unsupported(format!(
            "kernel parameters and results of type {other}: use Zp<P>, [Zp<P>; N] or integers"
        ))),
    }
}

/// `(s, t) -> s + t` over `Zp<P>` with identity 0.
fn is_zp_sum(op: &Func, init: &Literal) -> bool {
    let [p0, p1] = &op.params[..] else {
        return false;
    };
    if !p0.ty.is_zp() || p1.ty != p0.ty || !matches!(init, Literal::Zp(0, _)) {
        return false;
    }
    let out = op.node(op.outputs[0]);
    matches!(out.op, Op::Binary(BinOp::Add, a, b)
        if matches!((&op.node(a).op, &op.node(b).op), (Op::Param(0), Op::Param(1)) | (Op::Param(1), Op::Param(0))))
}

/// A map lambda whose result is a product of residues used nowhere else in it.
fn ends_in_zp_product(f: &Func) -> bool {
    let out = f.outputs[0];
    matches!(f.node(out).op, Op::Binary(BinOp::Mul, x, _) if f.ty(x).is_zp())
        && f.use_counts()[out.index()] == 1
}

/// The map lambda `f` (ending in a product of residues) with its final product left exact:
/// `(lo, hi, 0)`, the 128-bit product of the two forms.
fn wide_product_lambda(f: &Func) -> CgResult<Func> {
    let lowered = rebuild(&without_final_product(f)?, true, false)?;
    let mut b = Builder::lambda();
    let params: Vec<ValueId> = lowered
        .params
        .iter()
        .map(|p| b.param(&p.name, p.ty.clone()))
        .collect();
    let pair = b.inline(&lowered, &params)?;
    let x = b.extract(pair, 0)?;
    let y = b.extract(pair, 1)?;
    let lo = b.mul(x, y)?;
    let hi = b.binary(BinOp::MulHi, x, y)?;
    let zero = b.u64(0);
    let t = b.tuple(&[lo, hi, zero])?;
    Ok(b.finish(&[t])?)
}

/// `f` returning the two factors of its final product as a tuple instead of the product.
fn without_final_product(f: &Func) -> CgResult<Func> {
    let out = f.outputs[0];
    let Op::Binary(BinOp::Mul, x, y) = f.node(out).op else {
        unreachable!("checked by ends_in_zp_product")
    };
    let mut g = f.clone();
    let ty = Type::Tuple(vec![f.ty(x).clone(), f.ty(y).clone()]);
    g.nodes[out.index()] = bigfuse_core::Node {
        op: Op::Tuple(vec![x, y]),
        ty,
    };
    bigfuse_core::validate(&g)?;
    Ok(g)
}

/// When the map lambda `f` is exactly `|x, y| x * y` (in some argument order) over two kernel
/// parameters, the indices of those parameters.
fn raw_factors(func: &Func, f: &Func, args: &[ValueId]) -> Option<(u32, u32)> {
    let Op::Binary(BinOp::Mul, x, y) = f.node(f.outputs[0]).op else {
        return None;
    };
    let kernel_param = |v: ValueId| match func.node(v).op {
        Op::Param(k) => Some(k),
        _ => None,
    };
    // A factor is a lambda parameter, or a field of one whose argument is a zip of arrays.
    let param_of = |v: ValueId| match f.node(v).op {
        Op::Param(i) => kernel_param(*args.get(i as usize)?),
        Op::Extract(t, j) => match (&f.node(t).op, &func.node(*args.first()?).op) {
            (Op::Param(0), Op::Zip(xs)) if args.len() == 1 => kernel_param(*xs.get(j as usize)?),
            _ => None,
        },
        _ => None,
    };
    Some((param_of(x)?, param_of(y)?))
}

/// `(x, y) -> (lo, hi, 0)`: the exact 128-bit product as a 192-bit addend.
fn wide_mul_lambda() -> Func {
    let mut b = Builder::lambda();
    let x = b.param("x", Type::U64);
    let y = b.param("y", Type::U64);
    let lo = b.mul(x, y).expect("well typed");
    let hi = b.binary(BinOp::MulHi, x, y).expect("well typed");
    let zero = b.u64(0);
    let t = b.tuple(&[lo, hi, zero]).expect("well typed");
    b.finish(&[t]).expect("well typed")
}

/// `x -> (x, 0, 0)`: a form as a 192-bit addend.
fn widen_lambda() -> Func {
    let mut b = Builder::lambda();
    let x = b.param("x", Type::U64);
    let zero = b.u64(0);
    let t = b.tuple(&[x, zero, zero]).expect("well typed");
    b.finish(&[t]).expect("well typed")
}

/// The form of `(t0 + t1·2^64 + t2·2^128) · R^shift mod p` for the 192-bit sum `acc`.
fn finish_sum(b: &mut Builder, m: Montgomery, acc: ValueId, shift: i32) -> CgResult<ValueId> {
    let mut a = Arith { m, b };
    let mut total: Option<ValueId> = None;
    for k in 0..3u32 {
        let t = a.b.extract(acc, k)?;
        // t mod p, then scaled to t·R^(k + shift): mul by R^(k + shift + 1) mod p does both.
        let reduced = {
            let tr = a.mul_const(t, m.r2)?;
            a.integer_of(tr)?
        };
        let scale = r_power(&m, k as i32 + shift + 1);
        let term = a.mul_const(reduced, scale)?;
        total = Some(match total {
            None => term,
            Some(s) => a.add(s, term)?,
        });
    }
    Ok(total.expect("three words"))
}

/// R^k mod p for k >= 0.
fn r_power(m: &Montgomery, k: i32) -> u64 {
    let mut v = 1 % m.p;
    for _ in 0..k {
        v = bigfuse_core::modular::mul_mod(v, m.r, m.p);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::modular::{inv_mod, mul_mod, pow_mod};
    use bigfuse_core::{eval, specialize, Size, Value};

    const PRIMES: [u64; 4] = [97, 3221225473, 4179340454199820289, 18446744073709551557];

    /// Plain residues enter as n mod p for every u64 n, without a division.
    #[test]
    fn plain_residues_are_reduced_without_division() {
        for p in PRIMES.into_iter().chain([3, (1 << 61) - 1, (1 << 63) + 29]) {
            let mut b = Builder::new("r", &[]);
            let x = b.param("x", Type::U64);
            let r = Arith {
                m: Montgomery::new(p),
                b: &mut b,
            }
            .reduced(x)
            .unwrap();
            let f = b.finish(&[r]).unwrap();
            let edges = [0, 1, p - 1, p, p + 1, 2 * (p / 2), u64::MAX, u64::MAX - 1];
            let mut state = p;
            let randoms = (0..2000).map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                state
            });
            for n in edges.into_iter().chain(randoms) {
                let got = eval::eval(&f, &[Value::U64(n)]).unwrap();
                assert_eq!(got, vec![Value::U64(n % p)], "{n} mod {p}");
            }
        }
    }

    fn zp() -> Type {
        Type::Zp(Size::param(0))
    }

    fn scalar_program() -> Func {
        let mut b = Builder::new("ops", &["P"]);
        let x = b.param("x", zp());
        let y = b.param("y", zp());
        let e = b.param("e", Type::U64);
        let s = b.add(x, y).unwrap();
        let d = b.sub(x, y).unwrap();
        let p = b.mul(x, y).unwrap();
        let w = b.zp_pow(x, e).unwrap();
        let i = b.zp_inv(y).unwrap();
        let v = b.cast(p, Type::U64).unwrap();
        let back = b.cast(v, zp()).unwrap();
        let eq = b.eq(back, p).unwrap();
        let three = b.u64(3);
        let cube = b.zp_pow(d, three).unwrap();
        b.finish(&[s, d, p, w, i, eq, cube]).unwrap()
    }

    #[test]
    fn lowered_arithmetic_matches_the_reference() {
        for p in PRIMES {
            let f = specialize(&scalar_program(), &[p]).unwrap();
            let low = lower_zp(&f).unwrap();
            assert!(low.is_lowered(), "no Zp left");
            let values = [0u64, 1, 2, p - 1, p / 2, p / 3 + 7, 0xdead_beef % p];
            for &x in &values {
                for &y in &values {
                    let e = x.wrapping_mul(0x9e37_79b9) ^ y;
                    let ins = [Value::U64(x), Value::U64(y), Value::U64(e)];
                    let want = eval(&f, &ins).unwrap();
                    assert_eq!(eval(&low, &ins).unwrap(), want, "p={p} x={x} y={y}");
                    assert_eq!(want[2], Value::U64(mul_mod(x, y, p)));
                    assert_eq!(want[3], Value::U64(pow_mod(x, e, p)));
                    assert_eq!(want[4], Value::U64(inv_mod(y, p)));
                }
            }
        }
    }

    fn dot_program(n: u64, with_product: bool) -> Func {
        let mut b = Builder::new("dot", &["N", "P"]);
        let arr = Type::array(Type::Zp(Size::param(1)), Size::param(0));
        let xs = b.param("xs", arr.clone());
        let ys = b.param("ys", arr);
        let _ = n;
        let f = {
            let mut l = Builder::lambda();
            let x = l.param("x", Type::Zp(Size::param(1)));
            let y = l.param("y", Type::Zp(Size::param(1)));
            let r = if with_product {
                l.mul(x, y).unwrap()
            } else {
                l.add(x, y).unwrap()
            };
            l.finish(&[r]).unwrap()
        };
        let prods = b.map(f, &[xs, ys]).unwrap();
        let plus = {
            let mut l = Builder::lambda();
            let s = l.param("s", Type::Zp(Size::param(1)));
            let t = l.param("t", Type::Zp(Size::param(1)));
            let r = l.add(s, t).unwrap();
            l.finish(&[r]).unwrap()
        };
        let r = b
            .reduce(plus, Literal::Zp(0, Size::param(1)), prods)
            .unwrap();
        b.finish(&[r]).unwrap()
    }

    #[test]
    fn sums_and_dot_products_reduce_once_and_agree() {
        for with_product in [true, false] {
            for p in PRIMES {
                let n = 300u64;
                let f = specialize(&dot_program(n, with_product), &[n, p]).unwrap();
                let low = lower_zp(&f).unwrap();
                let reduces: Vec<&Op> = low
                    .nodes
                    .iter()
                    .map(|n| &n.op)
                    .filter(|op| matches!(op, Op::Reduce { .. }))
                    .collect();
                assert_eq!(reduces.len(), 1);
                let Op::Reduce { init, .. } = reduces[0] else {
                    unreachable!()
                };
                assert_eq!(
                    init.ty(),
                    Type::Tuple(vec![Type::U64; 3]),
                    "192-bit accumulator"
                );
                for fill in [0u64, 1, p - 1, 12345] {
                    let xs: Vec<Value> = (0..n)
                        .map(|i| Value::U64(if fill == 12345 { (i * fill) % p } else { fill }))
                        .collect();
                    let ys: Vec<Value> = (0..n)
                        .map(|i| Value::U64((p - 1 - i * 977 % p) % p))
                        .collect();
                    let ins = [Value::Array(xs), Value::Array(ys)];
                    assert_eq!(
                        eval(&low, &ins).unwrap(),
                        eval(&f, &ins).unwrap(),
                        "p={p} fill={fill} product={with_product}"
                    );
                }
            }
        }
    }
}

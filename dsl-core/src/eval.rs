//! The evaluator: the oracle every backend is tested against.
//!
//! It runs high-level programs (big-integer nodes, through num-bigint) and lowered programs (array
//! primitives over limbs) alike, so a test can show that a pass preserves meaning without a GPU.

use crate::error::{IrError, IrResult};
use crate::ir::{BinOp, CmpOp, Func, Op, ShiftOp, UnOp};
use crate::modular;
use crate::types::Type;
use crate::value::Value;
use num_bigint::BigUint;
use num_integer::Integer;
use num_traits::{One, Zero};

fn fail<T>(message: impl Into<String>) -> IrResult<T> {
    Err(IrError::Eval(message.into()))
}

/// Runs `func` (concrete: specialize it first) on one instance.
pub fn eval(func: &Func, inputs: &[Value]) -> IrResult<Vec<Value>> {
    let vals = eval_nodes(func, inputs)?;
    Ok(func
        .outputs
        .iter()
        .map(|o| vals[o.index()].clone())
        .collect())
}

/// The value of every node of `func` on these inputs (for checks that look inside a program).
pub fn eval_nodes(func: &Func, inputs: &[Value]) -> IrResult<Vec<Value>> {
    if !func.is_concrete() {
        return fail(format!(
            "`{}` has symbolic sizes ({}): specialize it before evaluating",
            func.name,
            func.size_params.join(", ")
        ));
    }
    if inputs.len() != func.params.len() {
        return fail(format!(
            "`{}` takes {} inputs, {} were given",
            func.name,
            func.params.len(),
            inputs.len()
        ));
    }
    for (p, v) in func.params.iter().zip(inputs) {
        if !v.has_type(&p.ty) {
            return fail(format!("input `{}` is not a valid {}", p.name, p.ty));
        }
    }
    run(func, inputs)
}

/// Applies a one-output lambda to its arguments.
pub fn apply_lambda(f: &Func, args: &[Value]) -> IrResult<Value> {
    let vals = run(f, args)?;
    Ok(vals[f.outputs[0].index()].clone())
}

fn run(func: &Func, inputs: &[Value]) -> IrResult<Vec<Value>> {
    let mut vals: Vec<Value> = Vec::with_capacity(func.nodes.len());
    for node in &func.nodes {
        let v = eval_node(func, &node.op, &node.ty, &vals, inputs)?;
        vals.push(v);
    }
    Ok(vals)
}

/// The big integer with these little-endian 64-bit limbs.
pub fn limbs_to_big(limbs: &[u64]) -> BigUint {
    let mut halves = Vec::with_capacity(limbs.len() * 2);
    for d in limbs {
        halves.push(*d as u32);
        halves.push((*d >> 32) as u32);
    }
    BigUint::new(halves)
}

fn bits_of(ty: &Type) -> IrResult<u64> {
    match ty {
        Type::Big(s) => s.as_const().map_or_else(|| fail("symbolic width"), Ok),
        _ => fail("not a big integer"),
    }
}

/// `(a / b, a % b)` for a quotient of `qbits` and a remainder of `rbits` bits, with division by
/// zero as [`Op::BigDiv`] and [`Op::BigRem`] define it.
fn div_rem(a: &BigUint, b: &BigUint, qbits: u64, rbits: u64) -> (BigUint, BigUint) {
    if b.is_zero() {
        (
            (BigUint::one() << qbits) - 1u8,
            a % (BigUint::one() << rbits),
        )
    } else {
        (a / b, a % b)
    }
}

fn big(v: &Value) -> IrResult<&BigUint> {
    v.as_big()
        .map_or_else(|| fail("expected a big integer"), Ok)
}

/// A tuple of little-endian u64 limbs as the number they make, and how many there are.
fn limb_tuple(x: &Value) -> IrResult<(BigUint, usize)> {
    let Value::Tuple(ls) = x else {
        return fail("expected a tuple of limbs");
    };
    let words = ls.iter().map(scalar_int).collect::<IrResult<Vec<u64>>>()?;
    let digits: Vec<u32> = words
        .iter()
        .flat_map(|w| [*w as u32, (*w >> 32) as u32])
        .collect();
    Ok((BigUint::from_slice(&digits), ls.len()))
}

/// [`Op::BigMod`]: `(a op b) mod m` of the whole integers for an odd `m`, all ones of `bits`
/// otherwise.
fn mod_arith(op: BinOp, a: &BigUint, b: &BigUint, m: &BigUint, bits: u64) -> BigUint {
    if !m.bit(0) {
        return (BigUint::one() << bits) - 1u8;
    }
    match op {
        BinOp::Add => (a + b) % m,
        BinOp::Sub => ((a % m) + m - (b % m)) % m,
        _ => (a * b) % m,
    }
}

/// [`Op::BigMontMul`] as the device computes it (CIOS): `t = (a b + q m) / 2^w` with
/// `q = -a b m^-1 mod 2^w`, less `m` once where `t >= m`, modulo `2^w`; all ones of `w` bits for an
/// even or zero `m`. `a b 2^-w mod m` whenever `a b < m 2^w`; an operand out of that range gives
/// what the device gives, so that the evaluator catches it.
fn mont_mul(a: &BigUint, b: &BigUint, m: &BigUint, w: u64) -> BigUint {
    let r = BigUint::one() << w;
    if !m.bit(0) {
        return r - 1u8;
    }
    let ab = a * b;
    let m_inv = m.modinv(&r).unwrap_or_else(BigUint::zero);
    let q = ((&r - (&ab % &r)) % &r) * m_inv % &r;
    let t = (ab + q * m) >> w;
    if &t >= m {
        (t - m) % r
    } else {
        t
    }
}

fn scalar_int(v: &Value) -> IrResult<u64> {
    v.as_u64().map_or_else(|| fail("expected a scalar"), Ok)
}

fn array(v: &Value) -> IrResult<&[Value]> {
    match v {
        Value::Array(xs) => Ok(xs),
        _ => fail("expected an array"),
    }
}

fn modulus(p: &crate::types::Size) -> IrResult<u64> {
    match p.as_const() {
        Some(p) if p >= 2 => Ok(p),
        _ => fail("Zp<P> with an unspecialized or invalid modulus"),
    }
}

fn modulus_of(ty: &Type) -> IrResult<u64> {
    match ty {
        Type::Zp(p) => modulus(p),
        _ => fail("expected a Zp<P> result"),
    }
}

fn zp_binary(op: BinOp, x: u64, y: u64, p: u64) -> IrResult<Value> {
    Ok(match op {
        BinOp::Add => Value::U64(modular::add_mod(x, y, p)),
        BinOp::Sub => Value::U64(modular::sub_mod(x, y, p)),
        BinOp::Mul => Value::U64(modular::mul_mod(x, y, p)),
        BinOp::Eq => Value::Bool(x == y),
        BinOp::Ne => Value::Bool(x != y),
        other => return fail(format!("{} on Zp<P>", other.mnemonic())),
    })
}

fn eval_binary(op: BinOp, a: &Value, b: &Value) -> IrResult<Value> {
    Ok(match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => Value::Bool(match op {
            BinOp::And => *x & *y,
            BinOp::Or => *x | *y,
            BinOp::Xor => *x ^ *y,
            BinOp::Eq => x == y,
            BinOp::Ne => x != y,
            _ => return fail(format!("{} on bools", op.mnemonic())),
        }),
        (Value::U32(x), Value::U32(y)) => {
            int_op(op, *x as u64, *y as u64, 32, |v| Value::U32(v as u32))
        }
        (Value::U64(x), Value::U64(y)) => int_op(op, *x, *y, 64, Value::U64),
        _ => return fail(format!("{} on mismatched operands", op.mnemonic())),
    })
}

fn int_op(op: BinOp, x: u64, y: u64, width: u32, wrap: impl Fn(u64) -> Value) -> Value {
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let shift = (y % width as u64) as u32;
    match op {
        BinOp::Add => wrap(x.wrapping_add(y) & mask),
        BinOp::Sub => wrap(x.wrapping_sub(y) & mask),
        BinOp::Mul => wrap(x.wrapping_mul(y) & mask),
        BinOp::MulHi => wrap((((x as u128) * (y as u128)) >> width) as u64 & mask),
        BinOp::Div => wrap(x.checked_div(y).unwrap_or(mask)),
        BinOp::Rem => wrap(x.checked_rem(y).unwrap_or(x)),
        BinOp::And => wrap(x & y),
        BinOp::Or => wrap(x | y),
        BinOp::Xor => wrap(x ^ y),
        BinOp::Shl => wrap((x << shift) & mask),
        BinOp::Shr => wrap(x >> shift),
        BinOp::Lt => Value::Bool(x < y),
        BinOp::Le => Value::Bool(x <= y),
        BinOp::Eq => Value::Bool(x == y),
        BinOp::Ne => Value::Bool(x != y),
    }
}

fn eval_node(func: &Func, op: &Op, ty: &Type, vals: &[Value], inputs: &[Value]) -> IrResult<Value> {
    let v = |id: crate::ir::ValueId| &vals[id.index()];
    Ok(match op {
        Op::Param(i) => inputs
            .get(*i as usize)
            .cloned()
            .map_or_else(|| fail(format!("missing input {i}")), Ok)?,
        Op::Const(l) => Value::from_literal(l),
        Op::Unary(UnOp::Not, a) => match v(*a) {
            Value::Bool(b) => Value::Bool(!b),
            Value::U32(x) => Value::U32(!x),
            Value::U64(x) => Value::U64(!x),
            _ => return fail("! on a non-scalar"),
        },
        Op::Unary(u, a) => Value::U32(match (u, v(*a)) {
            (UnOp::LeadingZeros, Value::U32(x)) => x.leading_zeros(),
            (UnOp::LeadingZeros, Value::U64(x)) => x.leading_zeros(),
            (UnOp::TrailingZeros, Value::U32(x)) => x.trailing_zeros(),
            (UnOp::TrailingZeros, Value::U64(x)) => x.trailing_zeros(),
            (UnOp::CountOnes, Value::U32(x)) => x.count_ones(),
            (UnOp::CountOnes, Value::U64(x)) => x.count_ones(),
            _ => return fail(format!("{} on a non-integer", u.mnemonic())),
        }),
        Op::BigUnary(u, a) => {
            let bits = bits_of(func.ty(*a))?;
            let x = big(v(*a))?;
            match u {
                UnOp::Not => Value::Big(x ^ ((BigUint::one() << bits) - 1u8)),
                UnOp::LeadingZeros => Value::U32((bits - x.bits()) as u32),
                UnOp::TrailingZeros => Value::U32(x.trailing_zeros().unwrap_or(bits) as u32),
                UnOp::CountOnes => Value::U32(x.count_ones() as u32),
            }
        }
        Op::BigBitwise(b, x, y) => {
            let (x, y) = (big(v(*x))?, big(v(*y))?);
            Value::Big(match b {
                BinOp::And => x & y,
                BinOp::Or => x | y,
                BinOp::Xor => x ^ y,
                _ => return fail(format!("big.{} is not bitwise", b.mnemonic())),
            })
        }
        Op::BigShift(s, x, amount) => {
            let bits = bits_of(ty)?;
            let x = big(v(*x))?;
            let k = scalar_int(v(*amount))?;
            let m = BigUint::one() << bits;
            Value::Big(match s {
                ShiftOp::Shl if k >= bits => BigUint::ZERO,
                ShiftOp::Shl => (x << k) % m,
                ShiftOp::Shr => x >> k,
                ShiftOp::Rotl | ShiftOp::Rotr => {
                    let k = k % bits;
                    let k = if *s == ShiftOp::Rotl {
                        k
                    } else {
                        (bits - k) % bits
                    };
                    ((x << k) | (x >> (bits - k))) % m
                }
            })
        }
        Op::BigBit(x, i) => {
            let bits = bits_of(func.ty(*x))?;
            let i = scalar_int(v(*i))?;
            Value::Bool(i < bits && big(v(*x))?.bit(i))
        }
        Op::Loop { count, body, args } => {
            let n = count.as_const().unwrap_or(0);
            let carried = body.outputs.len();
            let mut state: Vec<Value> = args.iter().map(|a| v(*a).clone()).collect();
            for i in 0..n {
                let mut inputs = vec![Value::U32(i as u32)];
                inputs.extend(state.iter().cloned());
                let out = eval(body, &inputs)?;
                state[..carried].clone_from_slice(&out);
            }
            state.truncate(carried);
            if carried == 1 {
                state.remove(0)
            } else {
                Value::Tuple(state)
            }
        }
        Op::Gather { src, idx } => {
            let src = array(v(*src))?;
            let picked = array(v(*idx))?
                .iter()
                .map(|i| {
                    let i = scalar_int(i)?;
                    Ok(usize::try_from(i)
                        .ok()
                        .and_then(|i| src.get(i))
                        .cloned()
                        .unwrap_or(Value::U64(0)))
                })
                .collect::<IrResult<Vec<Value>>>()?;
            Value::Array(picked)
        }
        Op::Binary(b, x, y) => match func.ty(*x) {
            Type::Zp(p) => zp_binary(*b, scalar_int(v(*x))?, scalar_int(v(*y))?, modulus(p)?)?,
            _ => eval_binary(*b, v(*x), v(*y))?,
        },
        Op::ZpPow(x, e) => Value::U64(modular::pow_mod(
            scalar_int(v(*x))?,
            scalar_int(v(*e))?,
            modulus_of(ty)?,
        )),
        Op::ZpInv(x) => Value::U64(modular::inv_mod(scalar_int(v(*x))?, modulus_of(ty)?)),
        Op::PolyMul { a, b, modulus: m } => {
            let p = modulus(m)?;
            let xs = array(v(*a))?
                .iter()
                .map(scalar_int)
                .collect::<IrResult<Vec<u64>>>()?;
            let ys = array(v(*b))?
                .iter()
                .map(scalar_int)
                .collect::<IrResult<Vec<u64>>>()?;
            let mut out = vec![0u64; 2 * xs.len()];
            for (i, x) in xs.iter().enumerate() {
                for (j, y) in ys.iter().enumerate() {
                    out[i + j] = modular::add_mod(out[i + j], modular::mul_mod(*x, *y, p), p);
                }
            }
            // Lowered programs hold Montgomery forms xR: the product of forms carries R twice.
            if matches!(ty, Type::Array(e, _) if **e == Type::U64) {
                let mont = modular::Montgomery::new(p);
                out.iter_mut().for_each(|c| *c = mont.redc(*c as u128));
            }
            Value::Array(out.into_iter().map(Value::U64).collect())
        }
        Op::Cast(a) if matches!(v(*a), Value::Big(_)) => {
            let x = big(v(*a))?;
            let low = x.iter_u64_digits().next().unwrap_or(0);
            match ty {
                Type::U32 => Value::U32(low as u32),
                Type::U64 => Value::U64(low),
                Type::Big(_) => Value::Big(x % (BigUint::one() << bits_of(ty)?)),
                _ => return fail("cast of a big integer to a non-integer"),
            }
        }
        Op::Cast(a) => {
            let x = scalar_int(v(*a))?;
            match ty {
                Type::U32 => Value::U32(x as u32),
                Type::U64 => Value::U64(x),
                Type::Zp(p) => Value::U64(x % modulus(p)?),
                Type::Big(_) => Value::Big(BigUint::from(x)),
                _ => return fail("cast to a non-integer"),
            }
        }
        Op::Select(c, a, b) => match v(*c) {
            Value::Bool(true) => v(*a).clone(),
            Value::Bool(false) => v(*b).clone(),
            _ => return fail("select on a non-bool"),
        },
        Op::Tuple(xs) => Value::Tuple(xs.iter().map(|x| v(*x).clone()).collect()),
        Op::Extract(t, i) => match v(*t) {
            Value::Tuple(xs) => xs[*i as usize].clone(),
            _ => return fail("extract from a non-tuple"),
        },
        Op::BigAdd(a, b) => {
            let bits = bits_of(ty)?;
            let m = BigUint::one() << bits;
            Value::Big((big(v(*a))? + big(v(*b))?) % m)
        }
        Op::BigSub(a, b) => {
            let bits = bits_of(ty)?;
            let m = BigUint::one() << bits;
            Value::Big((big(v(*a))? + &m - big(v(*b))?) % m)
        }
        Op::BigMul(a, b) => {
            let bits = bits_of(ty)?;
            let m = BigUint::one() << bits;
            Value::Big((big(v(*a))? * big(v(*b))?) % m)
        }
        Op::BigMulWide(a, b) => Value::Big(big(v(*a))? * big(v(*b))?),
        Op::BigDiv(a, b) => Value::Big(div_rem(big(v(*a))?, big(v(*b))?, bits_of(ty)?, 0).0),
        Op::BigIsqrt(a) | Op::BigIsqrtWhole(a) => Value::Big(big(v(*a))?.sqrt()),
        Op::LimbIsqrt(a) => {
            let (a, n) = limb_tuple(v(*a))?;
            let mut w = a.sqrt().to_u64_digits();
            w.resize(n, 0);
            Value::Tuple(w.into_iter().map(Value::U64).collect())
        }
        Op::BigPowMod(x, e, m) => {
            let m = big(v(*m))?;
            Value::Big(if !m.bit(0) {
                (BigUint::one() << bits_of(ty)?) - 1u8
            } else {
                big(v(*x))?.modpow(big(v(*e))?, m)
            })
        }
        Op::BigMod(o, a, b, m) => {
            let bits = bits_of(ty)?;
            Value::Big(mod_arith(*o, big(v(*a))?, big(v(*b))?, big(v(*m))?, bits))
        }
        Op::BigMontMul(a, b, m) => Value::Big(mont_mul(
            big(v(*a))?,
            big(v(*b))?,
            big(v(*m))?,
            bits_of(ty)?,
        )),
        Op::LimbMontMul(a, b, m) => {
            let (m, n) = limb_tuple(v(*m))?;
            let r = mont_mul(
                &limb_tuple(v(*a))?.0,
                &limb_tuple(v(*b))?.0,
                &m,
                64 * n as u64,
            );
            let mut words = r.to_u64_digits();
            words.resize(n, 0);
            Value::Tuple(words.into_iter().map(Value::U64).collect())
        }
        Op::BigGcd(a, b) => Value::Big(big(v(*a))?.gcd(big(v(*b))?)),
        Op::BigInvMod(a, m) => {
            let m = big(v(*m))?;
            let inv = if m.is_zero() {
                None
            } else {
                big(v(*a))?.modinv(m)
            };
            let exists = inv.is_some();
            Value::Tuple(vec![
                Value::Big(inv.unwrap_or_default()),
                Value::Bool(exists),
            ])
        }
        Op::BigDivRem(a, b) => {
            let Type::Tuple(ts) = ty else {
                return fail("big.div_rem makes a tuple");
            };
            let (qbits, rbits) = (bits_of(&ts[0])?, bits_of(&ts[1])?);
            let (q, r) = div_rem(big(v(*a))?, big(v(*b))?, qbits, rbits);
            Value::Tuple(vec![Value::Big(q), Value::Big(r)])
        }
        Op::LimbDivRem(a, b) => {
            let (a, na) = limb_tuple(v(*a))?;
            let (b, nb) = limb_tuple(v(*b))?;
            let (q, r) = div_rem(&a, &b, 64 * na as u64, 64 * nb as u64);
            let words = |x: &BigUint, n: usize| {
                let mut w = x.to_u64_digits();
                w.resize(n, 0);
                Value::Tuple(w.into_iter().map(Value::U64).collect())
            };
            Value::Tuple(vec![words(&q, na), words(&r, nb)])
        }
        Op::LimbMulWords(a, b, n) => {
            let (a, _) = limb_tuple(v(*a))?;
            let (b, _) = limb_tuple(v(*b))?;
            let mut w = (a * b).to_u64_digits();
            w.resize(*n, 0);
            Value::Tuple(w.into_iter().map(Value::U64).collect())
        }
        Op::LimbMulAddWords(a, b, c, n) => {
            let (a, _) = limb_tuple(v(*a))?;
            let (b, _) = limb_tuple(v(*b))?;
            let (c, _) = limb_tuple(v(*c))?;
            let mut w = (a * b + c).to_u64_digits();
            w.resize(*n, 0);
            Value::Tuple(w.into_iter().map(Value::U64).collect())
        }
        Op::LimbGcd(a, b) | Op::LimbInvMod(a, b) => {
            let (a, n) = limb_tuple(v(*a))?;
            let (b, _) = limb_tuple(v(*b))?;
            let words = |r: &BigUint| {
                let mut w = r.to_u64_digits();
                w.resize(n, 0);
                Value::Tuple(w.into_iter().map(Value::U64).collect())
            };
            match op {
                Op::LimbGcd(..) => words(&a.gcd(&b)),
                _ => {
                    let inv = if b.is_zero() { None } else { a.modinv(&b) };
                    let exists = inv.is_some();
                    Value::Tuple(vec![words(&inv.unwrap_or_default()), Value::Bool(exists)])
                }
            }
        }
        Op::LimbPowMod(x, e, m) => {
            let (m, n) = limb_tuple(v(*m))?;
            let r = if !m.bit(0) {
                (BigUint::one() << (64 * n)) - 1u8
            } else {
                limb_tuple(v(*x))?.0.modpow(&limb_tuple(v(*e))?.0, &m)
            };
            let mut words = r.to_u64_digits();
            words.resize(n, 0);
            Value::Tuple(words.into_iter().map(Value::U64).collect())
        }
        Op::BigRem(a, b) => Value::Big(div_rem(big(v(*a))?, big(v(*b))?, 0, bits_of(ty)?).1),
        Op::LimbMul { a, b, out_len, .. } => {
            let n = out_len.as_const().unwrap_or(0) as usize;
            let to_big = |x: &Value| -> IrResult<BigUint> {
                let limbs = array(x)?
                    .iter()
                    .map(scalar_int)
                    .collect::<IrResult<Vec<u64>>>()?;
                Ok(limbs_to_big(&limbs))
            };
            let p = to_big(v(*a))? * to_big(v(*b))?;
            let mut digits: Vec<u64> = p.iter_u64_digits().take(n).collect();
            digits.resize(n, 0);
            Value::Array(digits.into_iter().map(Value::U64).collect())
        }
        Op::BigCmp(c, a, b) => {
            let (x, y) = (big(v(*a))?, big(v(*b))?);
            Value::Bool(match c {
                CmpOp::Lt => x < y,
                CmpOp::Le => x <= y,
                CmpOp::Eq => x == y,
            })
        }
        Op::Limbs(a) => {
            let Type::Array(_, n) = ty else {
                return fail("limbs type");
            };
            let n = n.as_const().unwrap_or(0) as usize;
            let mut digits = big(v(*a))?.to_u64_digits();
            if digits.len() > n {
                return fail("value wider than its type");
            }
            digits.resize(n, 0);
            Value::Array(digits.into_iter().map(Value::U64).collect())
        }
        Op::FromLimbs(a) => {
            let digits = array(v(*a))?
                .iter()
                .map(scalar_int)
                .collect::<IrResult<Vec<u64>>>()?;
            Value::Big(limbs_to_big(&digits))
        }
        Op::Iota(n) => {
            let n = n.as_const().unwrap_or(0);
            Value::Array((0..n).map(Value::U64).collect())
        }
        Op::Map { f, args } => {
            let len = args
                .iter()
                .find_map(|a| array(v(*a)).ok().map(|xs| xs.len()))
                .unwrap_or(0);
            let mut out = Vec::with_capacity(len);
            let mut call_args = Vec::with_capacity(args.len());
            for i in 0..len {
                call_args.clear();
                for a in args {
                    call_args.push(match v(*a) {
                        Value::Array(xs) => xs[i].clone(),
                        scalar => scalar.clone(),
                    });
                }
                out.push(apply_lambda(f, &call_args)?);
            }
            Value::Array(out)
        }
        Op::Zip(xs) => {
            let arrays = xs
                .iter()
                .map(|x| array(v(*x)))
                .collect::<IrResult<Vec<_>>>()?;
            let len = arrays[0].len();
            Value::Array(
                (0..len)
                    .map(|i| Value::Tuple(arrays.iter().map(|a| a[i].clone()).collect()))
                    .collect(),
            )
        }
        Op::Scan {
            op,
            init,
            exclusive,
            input,
            flags,
        } => {
            let xs = array(v(*input))?;
            let flags = match flags {
                Some(f) => Some(
                    array(v(*f))?
                        .iter()
                        .map(|b| b.as_bool().map_or_else(|| fail("flag"), Ok))
                        .collect::<IrResult<Vec<bool>>>()?,
                ),
                None => None,
            };
            let identity = Value::from_literal(init);
            let mut acc = identity.clone();
            let mut out = Vec::with_capacity(xs.len());
            for (i, x) in xs.iter().enumerate() {
                if flags.as_ref().is_some_and(|f| f[i]) {
                    acc = identity.clone();
                }
                if *exclusive {
                    out.push(acc.clone());
                    acc = apply_lambda(op, &[acc, x.clone()])?;
                } else {
                    acc = apply_lambda(op, &[acc, x.clone()])?;
                    out.push(acc.clone());
                }
            }
            Value::Array(out)
        }
        Op::Reduce { op, init, input } => {
            let mut acc = Value::from_literal(init);
            for x in array(v(*input))? {
                acc = apply_lambda(op, &[acc, x.clone()])?;
            }
            acc
        }
    })
    .and_then(|val| {
        if !val.has_type(ty) {
            return fail(format!(
                "`{}`: a node of type {} produced a value of another type",
                func.name, ty
            ));
        }
        Ok(val)
    })
}

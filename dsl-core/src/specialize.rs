//! Specialization: substitutes the run-time sizes of a call into a program, so that every later
//! stage sees constant lengths.

use crate::error::{IrError, IrResult};
use crate::ir::{Func, Literal, Op};
use crate::validate::validate;

/// The widest big integer the IR accepts: 2^26 bits, where sums and differences run with each
/// instance over many blocks (the evaluator has no limit of its own; the GPU schedule has tighter
/// ones for products and says so). A product `mul_wide` of two such values is twice as wide.
pub const MAX_BITS: u64 = 1 << 27;

/// Checks that `bits` is a width `U<bits>` can have.
pub fn check_bits(bits: u64) -> IrResult<()> {
    if bits > MAX_BITS {
        return Err(IrError::Size(format!(
            "{bits} bits is wider than the largest supported width, {MAX_BITS}"
        )));
    }
    if bits == 0 || !bits.is_multiple_of(64) {
        return Err(IrError::Size(format!(
            "{bits} bits is not a positive multiple of 64 (U<BITS> is made of 64-bit limbs): round up to {}",
            bits.div_ceil(64).max(1) * 64
        )));
    }
    Ok(())
}

/// `func` with its size parameters replaced by `sizes` (one per size parameter, in order).
pub fn specialize(func: &Func, sizes: &[u64]) -> IrResult<Func> {
    if sizes.len() != func.size_params.len() {
        return Err(IrError::Size(format!(
            "`{}` has {} size parameter(s) ({}), but {} size(s) were given",
            func.name,
            func.size_params.len(),
            func.size_params.join(", "),
            sizes.len()
        )));
    }
    let out = subst(func, sizes)?;
    check_func_sizes(&out)?;
    validate(&out)?;
    Ok(out)
}

fn check_func_sizes(f: &Func) -> IrResult<()> {
    for p in &f.params {
        check_type_sizes(&p.ty)?;
    }
    for n in &f.nodes {
        check_type_sizes(&n.ty)?;
        for l in n.op.lambdas() {
            check_func_sizes(l)?;
        }
        if let Op::Loop { count, body, .. } = &n.op {
            let rounds = count.as_const().unwrap_or(0);
            if rounds > u32::MAX as u64 {
                return Err(IrError::Size(format!(
                    "a loop of {rounds} rounds: its index is a u32, so at most {} rounds",
                    u32::MAX
                )));
            }
            check_func_sizes(body)?;
        }
    }
    Ok(())
}

fn check_type_sizes(t: &crate::types::Type) -> IrResult<()> {
    use crate::types::Type;
    match t {
        Type::Big(s) => check_bits(s.as_const().unwrap_or(0)),
        Type::Zp(p) => {
            crate::modular::check_modulus(p.as_const().unwrap_or(0)).map_err(IrError::Size)
        }
        Type::Array(e, _) => check_type_sizes(e),
        Type::Tuple(ts) => ts.iter().try_for_each(check_type_sizes),
        _ => Ok(()),
    }
}

/// A literal with its moduli substituted (and its residues reduced by them).
fn subst_literal(l: &Literal, sizes: &[u64]) -> Option<Literal> {
    Some(match l {
        Literal::Zp(v, m) => {
            let p = m.eval(sizes)?;
            Literal::Zp(if p == 0 { *v } else { v % p }, crate::types::Size::lit(p))
        }
        Literal::Big(limbs, bits) => {
            Literal::Big(limbs.clone(), crate::types::Size::lit(bits.eval(sizes)?))
        }
        Literal::Tuple(ls) => Literal::Tuple(
            ls.iter()
                .map(|x| subst_literal(x, sizes))
                .collect::<Option<Vec<_>>>()?,
        ),
        other => other.clone(),
    })
}

fn subst(func: &Func, sizes: &[u64]) -> IrResult<Func> {
    let overflow = || {
        IrError::Size(format!(
            "a size of `{}` overflows for sizes {sizes:?}",
            func.name
        ))
    };
    let mut out = func.clone();
    for p in &mut out.params {
        p.ty = p.ty.specialize(sizes).ok_or_else(overflow)?;
    }
    for n in &mut out.nodes {
        n.ty = n.ty.specialize(sizes).ok_or_else(overflow)?;
        match &mut n.op {
            Op::Iota(s) => *s = crate::types::Size::lit(s.eval(sizes).ok_or_else(overflow)?),
            Op::Map { f, .. } => **f = subst(f, sizes)?,
            Op::Scan { op, init, .. } | Op::Reduce { op, init, .. } => {
                **op = subst(op, sizes)?;
                *init = subst_literal(init, sizes).ok_or_else(overflow)?;
            }
            Op::Const(l) => *l = subst_literal(l, sizes).ok_or_else(overflow)?,
            Op::PolyMul { modulus, .. } => {
                *modulus = crate::types::Size::lit(modulus.eval(sizes).ok_or_else(overflow)?)
            }
            Op::Loop { count, body, .. } => {
                *count = crate::types::Size::lit(count.eval(sizes).ok_or_else(overflow)?);
                **body = subst(body, sizes)?;
            }
            _ => {}
        }
    }
    Ok(out)
}

//! Type rules of every operation, shared by the builder (which infers) and the validator (which checks).

use crate::error::{IrError, IrResult};
use crate::ir::{BinOp, Func, Op, UnOp};
use crate::types::{Size, Type};

fn err(func: &Func, message: String) -> IrError {
    IrError::Type {
        func: func.name.clone(),
        message,
    }
}

/// The type of `op` inside `func`, or why it is ill-typed. Arguments must already exist in `func`.
pub fn infer(func: &Func, op: &Op) -> IrResult<Type> {
    for a in op.args() {
        if a.index() >= func.nodes.len() {
            return Err(IrError::Malformed {
                func: func.name.clone(),
                message: format!("{a} is used before it is defined"),
            });
        }
    }
    let names = &func.size_params;
    let show = |t: &Type| t.display(names).to_string();
    let ty = |v| func.ty(v);
    Ok(match op {
        Op::Param(i) => func
            .params
            .get(*i as usize)
            .ok_or_else(|| err(func, format!("there is no parameter {i}")))?
            .ty
            .clone(),
        Op::Const(l) => l.ty(),
        Op::Unary(UnOp::Not, a) => {
            let t = ty(*a);
            if !t.is_scalar() || t.is_zp() {
                return Err(err(
                    func,
                    format!("`!` needs a bool or an integer, not {}", show(t)),
                ));
            }
            t.clone()
        }
        Op::Unary(u, a) => {
            let t = ty(*a);
            if !t.is_integer() {
                return Err(err(
                    func,
                    format!("`{}` needs a u32 or u64, not {}", u.mnemonic(), show(t)),
                ));
            }
            Type::U32
        }
        Op::BigUnary(u, a) => match ty(*a) {
            t @ Type::Big(_) if *u == UnOp::Not => t.clone(),
            Type::Big(_) => Type::U32,
            other => {
                return Err(err(
                    func,
                    format!("big.{} needs a U<..>, not {}", u.mnemonic(), show(other)),
                ))
            }
        },
        Op::BigBitwise(b, x, y) => {
            if !matches!(b, BinOp::And | BinOp::Or | BinOp::Xor) {
                return Err(err(
                    func,
                    format!(
                        "`{}` is not a bitwise operation (big.and, big.or, big.xor)",
                        b.mnemonic()
                    ),
                ));
            }
            match (ty(*x), ty(*y)) {
                (t @ Type::Big(sa), Type::Big(sb)) if sa == sb => t.clone(),
                (tx, ty_) => {
                    return Err(err(
                        func,
                        format!(
                            "big.{} needs two U<..> of one size, not {} and {}",
                            b.mnemonic(),
                            show(tx),
                            show(ty_)
                        ),
                    ))
                }
            }
        }
        Op::BigPowMod(x, e, m) => match (ty(*x), ty(*e), ty(*m)) {
            (tx @ Type::Big(sx), Type::Big(_), Type::Big(sm)) if sx == sm => tx.clone(),
            (tx, te, tm) => {
                return Err(err(
                    func,
                    format!(
                        "big.pow_mod needs a base and a modulus U<..> of one size and an exponent U<..>, not {}, {} and {}",
                        show(tx),
                        show(te),
                        show(tm)
                    ),
                ))
            }
        },
        Op::BigMod(o, a, b, m) => {
            let what = format!("big.{}_mod", o.mnemonic());
            if !matches!(o, BinOp::Add | BinOp::Sub | BinOp::Mul) {
                return Err(err(
                    func,
                    format!("{what} is not an operation: add_mod, sub_mod and mul_mod are"),
                ));
            }
            match (ty(*a), ty(*b), ty(*m)) {
                (t @ Type::Big(sa), Type::Big(sb), Type::Big(sm)) if sa == sb && sa == sm => {
                    t.clone()
                }
                (ta, tb, tm) => {
                    return Err(err(
                        func,
                        format!(
                            "{what} needs three U<..> of one size, not {}, {} and {}",
                            show(ta),
                            show(tb),
                            show(tm)
                        ),
                    ))
                }
            }
        }
        Op::BigMontMul(a, b, m) => match (ty(*a), ty(*b), ty(*m)) {
            (t @ Type::Big(sa), Type::Big(sb), Type::Big(sm))
                if sa == sb && sa == sm && sa.as_const().is_none_or(|w| w % 64 == 0) =>
            {
                t.clone()
            }
            (ta, tb, tm) => {
                return Err(err(
                    func,
                    format!(
                        "big.mont_mul needs three U<..> of one size, a multiple of 64 bits, not {}, {} and {}",
                        show(ta),
                        show(tb),
                        show(tm)
                    ),
                ))
            }
        },
        Op::LimbMontMul(a, b, m) => {
            match (limb_count(ty(*a)), limb_count(ty(*b)), limb_count(ty(*m))) {
                (Some(na), Some(nb), Some(nm)) if na == nb && na == nm => ty(*a).clone(),
                _ => {
                    return Err(err(
                        func,
                        format!(
                            "limb.mont_mul needs three tuples of one number of u64 limbs, not {}, {} and {}",
                            show(ty(*a)),
                            show(ty(*b)),
                            show(ty(*m))
                        ),
                    ))
                }
            }
        }
        Op::BigGcd(a, b) | Op::BigInvMod(a, b) => match (ty(*a), ty(*b)) {
            (t @ Type::Big(sa), Type::Big(sb)) if sa == sb => match op {
                Op::BigGcd(..) => t.clone(),
                _ => Type::Tuple(vec![t.clone(), Type::Bool]),
            },
            (ta, tb) => {
                let what = if matches!(op, Op::BigGcd(..)) {
                    "big.gcd"
                } else {
                    "big.inv_mod"
                };
                return Err(err(
                    func,
                    format!(
                        "{what} needs two U<..> of one size, not {} and {}",
                        show(ta),
                        show(tb)
                    ),
                ));
            }
        },
        Op::LimbMulWords(a, b, n) => {
            match (limb_count(ty(*a)), limb_count(ty(*b))) {
                (Some(_), Some(_)) if *n > 0 => Type::Tuple(vec![Type::U64; *n]),
                _ => {
                    return Err(err(
                        func,
                        format!(
                            "limb.mul_words needs two tuples of u64 limbs and a limb count above 0, not {}, {} and {n}",
                            show(ty(*a)),
                            show(ty(*b))
                        ),
                    ))
                }
            }
        }
        Op::LimbMulAddWords(a, b, c, n) => {
            match (limb_count(ty(*a)), limb_count(ty(*b)), limb_count(ty(*c))) {
                (Some(_), Some(_), Some(nc)) if *n > 0 && nc == *n => {
                    Type::Tuple(vec![Type::U64; *n])
                }
                _ => {
                    return Err(err(
                        func,
                        format!(
                            "limb.mul_add_words needs two tuples of u64 limbs, an addend of {n} limbs and a limb count above 0, not {}, {}, {} and {n}",
                            show(ty(*a)),
                            show(ty(*b)),
                            show(ty(*c))
                        ),
                    ))
                }
            }
        }
        Op::LimbGcd(a, b) | Op::LimbInvMod(a, b) => {
            match (limb_count(ty(*a)), limb_count(ty(*b))) {
                (Some(na), Some(nb)) if na == nb => match op {
                    Op::LimbGcd(..) => ty(*a).clone(),
                    _ => Type::Tuple(vec![ty(*a).clone(), Type::Bool]),
                },
                _ => {
                    return Err(err(
                        func,
                        format!(
                            "limb.gcd and limb.inv_mod need two tuples of one number of u64 limbs, not {} and {}",
                            show(ty(*a)),
                            show(ty(*b))
                        ),
                    ))
                }
            }
        }
        Op::LimbDivRem(a, b) => {
            if limb_count(ty(*a)).is_none() || limb_count(ty(*b)).is_none() {
                return Err(err(
                    func,
                    format!(
                        "limb.div_rem needs two tuples of u64 limbs, not {} and {}",
                        show(ty(*a)),
                        show(ty(*b))
                    ),
                ));
            }
            Type::Tuple(vec![ty(*a).clone(), ty(*b).clone()])
        }
        Op::LimbPowMod(x, e, m) => {
            match (limb_count(ty(*x)), limb_count(ty(*e)), limb_count(ty(*m))) {
                (Some(nx), Some(_), Some(nm)) if nx == nm => ty(*x).clone(),
                _ => {
                    return Err(err(
                        func,
                        format!(
                            "limb.pow_mod needs a base and a modulus of one number of u64 limbs and an exponent of u64 limbs, not {}, {} and {}",
                            show(ty(*x)),
                            show(ty(*e)),
                            show(ty(*m))
                        ),
                    ))
                }
            }
        }
        Op::BigIsqrt(a) | Op::BigIsqrtWhole(a) => match ty(*a) {
            t @ Type::Big(_) => t.clone(),
            other => {
                return Err(err(
                    func,
                    format!("big.isqrt needs a U<..>, not {}", show(other)),
                ))
            }
        },
        Op::LimbIsqrt(a) => match limb_count(ty(*a)) {
            Some(_) => ty(*a).clone(),
            None => {
                return Err(err(
                    func,
                    format!("limb.isqrt needs a tuple of u64 limbs, not {}", show(ty(*a))),
                ))
            }
        },
        Op::BigDiv(a, b) | Op::BigRem(a, b) | Op::BigDivRem(a, b) => match (ty(*a), ty(*b)) {
            (Type::Big(_), Type::Big(_)) => match op {
                Op::BigDiv(..) => ty(*a).clone(),
                Op::BigRem(..) => ty(*b).clone(),
                _ => Type::Tuple(vec![ty(*a).clone(), ty(*b).clone()]),
            },
            (ta, tb) => {
                return Err(err(
                    func,
                    format!(
                        "big-integer division needs two U<..>, not {} and {}",
                        show(ta),
                        show(tb)
                    ),
                ))
            }
        },
        Op::BigShift(s, x, amount) => {
            big_and_u32(func, ty(*x), ty(*amount), s.mnemonic())?;
            ty(*x).clone()
        }
        Op::BigBit(x, i) => {
            big_and_u32(func, ty(*x), ty(*i), "bit")?;
            Type::Bool
        }
        Op::Gather { src, idx } => match (ty(*src), ty(*idx)) {
            (Type::Array(e, _), Type::Array(i, m)) if **e == Type::U64 && **i == Type::U64 => {
                Type::array(Type::U64, *m)
            }
            (ts, ti) => {
                return Err(err(
                    func,
                    format!(
                        "gather needs a [u64; n] and indices [u64; m], not {} and {}",
                        show(ts),
                        show(ti)
                    ),
                ))
            }
        },
        Op::Binary(b, x, y) => {
            let (tx, ty_) = (ty(*x), ty(*y));
            if tx != ty_ {
                return Err(err(
                    func,
                    format!(
                        "`{}` needs operands of one type, not {} and {}",
                        b.mnemonic(),
                        show(tx),
                        show(ty_)
                    ),
                ));
            }
            match b {
                BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Eq | BinOp::Ne
                    if *tx == Type::Bool =>
                {
                    Type::Bool
                }
                BinOp::Eq | BinOp::Ne if tx.is_zp() => Type::Bool,
                BinOp::Add | BinOp::Sub | BinOp::Mul if tx.is_zp() => tx.clone(),
                _ if tx.is_zp() => {
                    return Err(err(
                        func,
                        format!(
                            "`{}` does not apply to {}: Zp<P> has +, -, *, ==, !=, pow and inv",
                            b.mnemonic(),
                            show(tx)
                        ),
                    ))
                }
                _ if !tx.is_integer() => {
                    return Err(err(
                        func,
                        format!("`{}` needs integers, not {}", b.mnemonic(), show(tx)),
                    ))
                }
                b if b.is_comparison() => Type::Bool,
                _ => tx.clone(),
            }
        }
        Op::Cast(a) => {
            // The target type is the node's own; `infer` cannot know it, so casts check in `check_cast`.
            return Err(err(
                func,
                format!("cast of {} needs its target type", show(ty(*a))),
            ));
        }
        Op::ZpPow(x, e) => match (ty(*x), ty(*e)) {
            (t @ Type::Zp(_), Type::U64) => t.clone(),
            (tx, te) => {
                return Err(err(
                    func,
                    format!(
                        "pow needs a Zp<P> base and a u64 exponent, not {} and {}",
                        show(tx),
                        show(te)
                    ),
                ))
            }
        },
        Op::PolyMul { a, b, modulus } => {
            let (ta, tb) = (ty(*a), ty(*b));
            let ok = ta == tb
                && match ta {
                    Type::Array(e, _) => match &**e {
                        Type::Zp(m) => m == modulus,
                        // Lowered: Montgomery forms.
                        Type::U64 => true,
                        _ => false,
                    },
                    _ => false,
                };
            let Type::Array(e, n) = ta else {
                return Err(err(
                    func,
                    format!("poly_mul needs two arrays of Zp<P>, not {}", show(ta)),
                ));
            };
            if !ok {
                return Err(err(
                    func,
                    format!(
                        "poly_mul needs two arrays of Zp<{}> of one length, not {} and {}",
                        modulus.display(names),
                        show(ta),
                        show(tb)
                    ),
                ));
            }
            let doubled = n
                .factor
                .checked_mul(2)
                .ok_or_else(|| err(func, "the product's length overflows".into()))?;
            Type::array(
                (**e).clone(),
                Size {
                    factor: doubled,
                    param: n.param,
                },
            )
        }
        Op::ZpInv(x) => match ty(*x) {
            t @ Type::Zp(_) => t.clone(),
            other => return Err(err(func, format!("inv needs a Zp<P>, not {}", show(other)))),
        },
        Op::Select(c, a, b) => {
            if *ty(*c) != Type::Bool {
                return Err(err(
                    func,
                    format!("a select condition must be bool, not {}", show(ty(*c))),
                ));
            }
            if ty(*a) != ty(*b) {
                return Err(err(
                    func,
                    format!(
                        "both branches must have one type, not {} and {}",
                        show(ty(*a)),
                        show(ty(*b))
                    ),
                ));
            }
            ty(*a).clone()
        }
        Op::Tuple(xs) => Type::Tuple(xs.iter().map(|x| ty(*x).clone()).collect()),
        Op::Extract(t, i) => match ty(*t) {
            Type::Tuple(ts) if (*i as usize) < ts.len() => ts[*i as usize].clone(),
            other => {
                return Err(err(
                    func,
                    format!("cannot take field {i} of {}", show(other)),
                ))
            }
        },
        Op::BigAdd(a, b)
        | Op::BigSub(a, b)
        | Op::BigCmp(_, a, b)
        | Op::BigMul(a, b)
        | Op::BigMulWide(a, b) => {
            let (ta, tb) = (ty(*a), ty(*b));
            match (ta, tb) {
                (Type::Big(sa), Type::Big(sb)) if sa == sb => {}
                _ => {
                    return Err(err(
                        func,
                        format!(
                            "big-integer operations need two U<..> of one size, not {} and {}",
                            show(ta),
                            show(tb)
                        ),
                    ))
                }
            }
            match (op, ta) {
                (Op::BigCmp(..), _) => Type::Bool,
                (Op::BigMulWide(..), Type::Big(s)) => Type::Big(Size {
                    factor: s
                        .factor
                        .checked_mul(2)
                        .ok_or_else(|| err(func, "the product's width overflows".into()))?,
                    param: s.param,
                }),
                _ => ta.clone(),
            }
        }
        Op::LimbMul { a, b, out_len, .. } => {
            let (ta, tb) = (ty(*a), ty(*b));
            match (ta, tb) {
                (Type::Array(ea, na), Type::Array(eb, nb))
                    if **ea == Type::U64 && **eb == Type::U64 && na == nb => {}
                _ => {
                    return Err(err(
                        func,
                        format!(
                            "limb_mul needs two [u64; n] of one length, not {} and {}",
                            show(ta),
                            show(tb)
                        ),
                    ))
                }
            }
            Type::array(Type::U64, *out_len)
        }
        Op::Limbs(a) => match ty(*a) {
            Type::Big(s) => match s.as_const() {
                Some(bits) if bits % 64 == 0 && bits > 0 => {
                    Type::array(Type::U64, Size::lit(bits / 64))
                }
                Some(bits) => {
                    return Err(err(
                        func,
                        format!("U<{bits}> is not a whole number of 64-bit limbs"),
                    ))
                }
                None => {
                    return Err(err(
                        func,
                        "limbs of a symbolic size: specialize the program first".into(),
                    ))
                }
            },
            other => {
                return Err(err(
                    func,
                    format!("limbs of {}, which is not a big integer", show(other)),
                ))
            }
        },
        Op::FromLimbs(a) => match ty(*a) {
            Type::Array(e, n) if **e == Type::U64 => match n.as_const() {
                // Text read back may declare any length; an overflow is an error, not a panic.
                Some(n) => Type::Big(Size::lit(n.checked_mul(64).ok_or_else(|| {
                    err(
                        func,
                        format!("from_limbs of {n} limbs: the width overflows"),
                    )
                })?)),
                None => return Err(err(func, "from_limbs of a symbolic length".into())),
            },
            other => {
                return Err(err(
                    func,
                    format!("from_limbs needs [u64; n], not {}", show(other)),
                ))
            }
        },
        Op::Iota(n) => Type::array(Type::U64, *n),
        Op::Map { f, args } => {
            check_lambda(func, f)?;
            if f.params.len() != args.len() {
                return Err(err(
                    func,
                    format!(
                        "map: the operator takes {} arguments but is given {}",
                        f.params.len(),
                        args.len()
                    ),
                ));
            }
            let mut len: Option<Size> = None;
            for (p, a) in f.params.iter().zip(args) {
                let ta = ty(*a);
                let elem = match ta {
                    Type::Array(e, n) => {
                        if let Some(l) = len {
                            if l != *n {
                                return Err(err(
                                    func,
                                    format!(
                                        "map over arrays of different lengths {} and {}",
                                        l.display(names),
                                        n.display(names)
                                    ),
                                ));
                            }
                        }
                        len = Some(*n);
                        &**e
                    }
                    other => other,
                };
                if *elem != p.ty {
                    return Err(err(
                        func,
                        format!(
                            "map: argument `{}` is {} but {} is given",
                            p.name,
                            show(&p.ty),
                            show(ta)
                        ),
                    ));
                }
            }
            let len =
                len.ok_or_else(|| err(func, "map needs at least one array argument".into()))?;
            Type::array(f.ty(f.outputs[0]).clone(), len)
        }
        Op::Zip(xs) => {
            if xs.is_empty() {
                return Err(err(func, "zip of nothing".into()));
            }
            let mut elems = Vec::new();
            let mut len = None;
            for x in xs {
                match ty(*x) {
                    Type::Array(e, n) => {
                        if len.is_some_and(|l| l != *n) {
                            return Err(err(func, "zip of arrays of different lengths".into()));
                        }
                        len = Some(*n);
                        elems.push((**e).clone());
                    }
                    other => {
                        return Err(err(
                            func,
                            format!("zip of {}, which is not an array", show(other)),
                        ))
                    }
                }
            }
            Type::array(Type::Tuple(elems), len.unwrap())
        }
        Op::Scan {
            op,
            init,
            input,
            flags,
            ..
        } => {
            let elem = check_operator(func, op, init, ty(*input), "scan")?;
            let Type::Array(_, n) = ty(*input) else {
                unreachable!()
            };
            if let Some(fl) = flags {
                if *ty(*fl) != Type::array(Type::Bool, *n) {
                    return Err(err(
                        func,
                        format!(
                            "segment flags must be [bool; {}], not {}",
                            n.display(names),
                            show(ty(*fl))
                        ),
                    ));
                }
            }
            Type::array(elem, *n)
        }
        Op::Reduce { op, init, input } => check_operator(func, op, init, ty(*input), "reduce")?,
        Op::Loop { body, args, .. } => {
            let arg_types: Vec<Type> = args.iter().map(|a| ty(*a).clone()).collect();
            check_loop_body(func, body, &arg_types)?
        }
    })
}

/// The type of a loop over `body` with arguments of `arg_types` (carried, then captured).
fn check_loop_body(func: &Func, body: &Func, arg_types: &[Type]) -> IrResult<Type> {
    let names = &func.size_params;
    let carried = body.outputs.len();
    // A specialized body names no size, so it may sit in a closure (which has none).
    if body.size_params != func.size_params && !body.is_concrete() {
        return Err(err(
            func,
            format!(
                "a loop body's sizes ({}) must be its program's ({})",
                body.size_params.join(", "),
                names.join(", ")
            ),
        ));
    }
    if carried == 0 || carried > arg_types.len() {
        return Err(err(
            func,
            format!(
                "a loop body returns the carried values ({carried}), which must be between 1 and its {} argument(s)",
                arg_types.len()
            ),
        ));
    }
    let params: Vec<&Type> = body.params.iter().map(|p| &p.ty).collect();
    let expected: Vec<&Type> = std::iter::once(&Type::U32).chain(arg_types).collect();
    if params != expected {
        let show = |ts: &[&Type]| {
            ts.iter()
                .map(|t| t.display(names).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(err(
            func,
            format!(
                "a loop body takes ({}) but is given (u32, {})",
                show(&params),
                show(&expected[1..])
            ),
        ));
    }
    let outs = body.output_types();
    if outs.iter().zip(arg_types).any(|(o, a)| o != a) {
        return Err(err(
            func,
            format!(
                "a loop body must return what it carries, in order: {} is returned for {}",
                Type::Tuple(outs.clone()).display(names),
                Type::Tuple(arg_types[..carried].to_vec()).display(names)
            ),
        ));
    }
    Ok(if carried == 1 {
        outs[0].clone()
    } else {
        Type::Tuple(outs)
    })
}

fn big_and_u32(func: &Func, tx: &Type, ta: &Type, what: &str) -> IrResult<()> {
    match (tx, ta) {
        (Type::Big(_), Type::U32) => Ok(()),
        _ => Err(err(
            func,
            format!(
                "big.{what} needs a U<..> and a u32, not {} and {}",
                tx.display(&func.size_params),
                ta.display(&func.size_params)
            ),
        )),
    }
}

/// Checks a cast node: scalar to integer.
pub fn check_cast(func: &Func, from: &Type, to: &Type) -> IrResult<()> {
    let ok = match (from, to) {
        // A residue converts to its integer value, which needs all 64 bits.
        (Type::Zp(_), to) => *to == Type::U64,
        (from, Type::Zp(_)) => from.is_scalar(),
        // Zero extension of an integer into a big integer, or a big integer to another width.
        (from, Type::Big(_)) => from.is_integer() || matches!(from, Type::Big(_)),
        // The low bits of a big integer.
        (Type::Big(_), to) => *to == Type::U32 || *to == Type::U64,
        (from, to) => from.is_scalar() && to.is_integer(),
    };
    if ok {
        Ok(())
    } else {
        Err(err(
            func,
            format!(
                "cannot convert {} to {} (casts go from bool/u32/u64 to u32/u64/Zp<P>/U<..>, from Zp<P> to u64, and from U<..> to u32/u64/U<..>)",
                from.display(&func.size_params),
                to.display(&func.size_params)
            ),
        ))
    }
}

fn check_lambda(func: &Func, f: &Func) -> IrResult<()> {
    if f.outputs.len() != 1 {
        return Err(err(
            func,
            format!("an operator returns one value, not {}", f.outputs.len()),
        ));
    }
    for p in &f.params {
        if !p.ty.is_element() {
            return Err(err(
                func,
                format!(
                    "an operator's argument must be a scalar or a tuple, not {}",
                    p.ty
                ),
            ));
        }
    }
    if !f.ty(f.outputs[0]).is_element() {
        return Err(err(
            func,
            format!(
                "an operator must return a scalar or a tuple, not {}",
                f.ty(f.outputs[0])
            ),
        ));
    }
    Ok(())
}

/// An associative operator `(T, T) -> T` with identity `init` over an array of `T`; returns `T`.
fn check_operator(
    func: &Func,
    op: &Func,
    init: &crate::ir::Literal,
    input: &Type,
    what: &str,
) -> IrResult<Type> {
    check_lambda(func, op)?;
    let Type::Array(elem, _) = input else {
        return Err(err(
            func,
            format!(
                "{what} of {}, which is not an array",
                input.display(&func.size_params)
            ),
        ));
    };
    let elem = (**elem).clone();
    let ok = op.params.len() == 2
        && op.params.iter().all(|p| p.ty == elem)
        && *op.ty(op.outputs[0]) == elem;
    if !ok {
        return Err(err(
            func,
            format!("the {what} operator must have type ({elem}, {elem}) -> {elem}"),
        ));
    }
    if init.ty() != elem {
        return Err(err(
            func,
            format!("the {what} identity {init} is not a {elem}"),
        ));
    }
    Ok(elem)
}

/// The number of limbs of a tuple of u64 limbs (a `limb.*` operation's operand), if `t` is one.
fn limb_count(t: &Type) -> Option<usize> {
    match t {
        Type::Tuple(ls) if !ls.is_empty() && ls.iter().all(|l| *l == Type::U64) => Some(ls.len()),
        _ => None,
    }
}

//! Lowering: big-integer operations become array primitives over 64-bit limbs.
//!
//! - `a + b`  = map (limb sums, packed carry flags) ; exclusive scan with the carry operator ; map (add the carry in)
//! - `a - b`  = the same with borrows
//! - `a < b`, `a <= b` = map (per-limb less/equal flags) ; reduce with the lexicographic operator
//! - `a == b` = map (limb equality) ; reduce with `and`
//! - `select(c, a, b)` on big integers = map with the condition broadcast
//! - `!`, `&`, `|`, `^`, shifts, rotations, bit counts, bit tests and changes of width: see
//!   [`crate::lower_bits`]
//! - `a * b`, `mul_wide(a, b)` = limb_mul (operands staged in shared memory; slices of the product
//!   accumulated in registers; combined with the addition's carry machinery)
//!
//! Segmented scans are rewritten into unsegmented scans over (flag, value) pairs with the lifted
//! operator, so later passes only ever see unsegmented scans.

use crate::error::{CgResult, CodegenError};
use crate::lower_bits as bits;
use bigfuse_core::ops::{self, Intrinsic};
use bigfuse_core::rewrite::Rewritten;
use bigfuse_core::{
    rewrite, BinOp, Builder, CmpOp, Func, Literal, MulAlgo, Op, Type, UnOp, ValueId,
};

/// Products of operands at least this wide (bits) use the NTT; narrower ones the classical method.
/// A full product (twice the operands' width) does twice a truncated one's classical work, so it
/// uses the NTT from half this width ([`choose_mul`]). Measured on an H100 (bench/RESULTS.md, 2026-11-25, classical rows of whole word products in
/// 128-thread blocks): at 2^15 bits classical 1-Mul 37,274 Gu32ops/s and Poly 49,055 against the
/// NTT's 35,019 and 38,308; at 2^16 classical 20,772 against the NTT's 30,787. Since the NTT's
/// five-stage passes (NVIDIA H200, 2026-11-27, `bench mul --variant ntt=32768`): at 2^15 the NTT
/// 1-Mul runs 43,797 against the classical 37,263, but Poly (four products) 43,436 against 49,085;
/// at 2^14 the NTT loses both (49,059 / 53,029 against 64,841 / 84,308). Since then programs of
/// truncated products only take the NTT from 2^15 ([`TRUNCATED_NTT_FROM_BITS`], the rule in
/// [`ntt_crossover`]); 2^16 stays for programs with a full product or products in a map or loop.
pub const NTT_FROM_BITS: u64 = 1 << 16;

/// The crossover for a program whose products are all truncated, outside any loop or map. Nothing
/// but the program's own values is live across their transforms, and parameters that only
/// products read stay in global memory (`emit::memory`'s `only_ntt_operand`). NVIDIA H200, same
/// runs: a lone product at 2^15 bits with the NTT 47,833 / 47,873 Gu32ops/s against the
/// classical 37,259 / 37,199 (2026-11-27, tenth session); Poly (four products, the last two
/// summed as one, `isel::NttSum`) 57,189 against 49,089 (fourteenth session; before the sums,
/// 49,890 against 49,121). A full product at 2^15 bits has the classical work of a truncated one
/// at 2^16 and takes the NTT by [`NTT_FROM_BITS`] anyway.
pub const TRUNCATED_NTT_FROM_BITS: u64 = 1 << 15;

/// The crossover for `func`'s products (the program `lower_limbs` is about to lower) under the
/// hint `ntt` (`hint`), and why, as `explain` says it: [`TRUNCATED_NTT_FROM_BITS`] for a program
/// whose products are all truncated and at top level (none in a map, scan, reduction or loop
/// body), [`NTT_FROM_BITS`] otherwise.
pub fn ntt_crossover(func: &Func, hint: Option<u64>) -> (u64, &'static str) {
    match hint {
        Some(bits) => (bits, "the hint `ntt`"),
        None if truncated_products_only(func) => (
            TRUNCATED_NTT_FROM_BITS,
            "truncated products only, lower::TRUNCATED_NTT_FROM_BITS",
        ),
        None => (NTT_FROM_BITS, "lower::NTT_FROM_BITS"),
    }
}

/// Whether `func` has products, all of them truncated and at top level.
fn truncated_products_only(func: &Func) -> bool {
    // Products in lambdas and loop bodies, at any depth.
    fn nested(f: &Func) -> bool {
        f.nodes.iter().any(|n| {
            let mut bodies = n.op.lambdas();
            if let Op::Loop { body, .. } = &n.op {
                bodies.push(body);
            }
            bodies.iter().any(|b| {
                b.nodes
                    .iter()
                    .any(|m| matches!(m.op, Op::BigMul(..) | Op::BigMulWide(..)))
                    || nested(b)
            })
        })
    }
    let count = |wide: bool| {
        func.nodes
            .iter()
            .filter(|n| match n.op {
                Op::BigMul(..) => !wide,
                Op::BigMulWide(..) => wide,
                _ => false,
            })
            .count()
    };
    count(false) >= 1 && count(true) == 0 && !nested(func)
}

/// The algorithm for a product of two `bits`-bit operands into `out_limbs` limbs, given a
/// crossover for truncated products (a full product's classical work is twice theirs).
pub fn choose_mul(bits: u64, ntt_from_bits: u64, out_limbs: u64) -> MulAlgo {
    let work = if out_limbs > bits / 64 {
        2 * bits
    } else {
        bits
    };
    if work >= ntt_from_bits && crate::isel::ntt_fits(bits / 64, out_limbs) {
        MulAlgo::Ntt
    } else {
        MulAlgo::Classical
    }
}

/// Lowers a concrete (specialized) program with the default crossovers.
pub fn lower(func: &Func) -> CgResult<Func> {
    Ok(lower_passes(func, None, Some(false), None, &mut |_, _| {})?.0)
}

/// Lowers a concrete (specialized) program. The result has the same parameters and outputs, and no
/// high-level node. Products of operands of at least `ntt_from_bits` bits use the NTT. Every
/// instance keeps the parallel lowering (see [`lower_compiled`] for what `compile` does).
pub fn lower_with(func: &Func, ntt_from_bits: u64) -> CgResult<Func> {
    Ok(lower_passes(func, Some(ntt_from_bits), Some(false), None, &mut |_, _| {})?.0)
}

/// What [`crate::compile`] lowers for these hints: [`lower_with`]'s passes, with `per_thread`
/// between `divide` and `scalarize` where its rule (or the hint) picks it, so that parameters and
/// results may be one-element arrays. The CPU backend's lowered level evaluates this.
pub fn lower_compiled(func: &Func, hints: &crate::Hints) -> CgResult<Func> {
    Ok(lower_passes(
        func,
        hints.ntt_from_bits,
        hints.per_thread,
        crate::divide::whole_bits(hints),
        &mut |_, _| {},
    )?
    .0)
}

/// The passes from `unroll` to `lower`, in the order of [`crate::PASSES`], handing each result to
/// `record` under its pass's name ([`crate::compile`] records them for `explain`). Products use
/// the NTT from `ntt_hint` bits, or from the crossover [`ntt_crossover`] picks for the program
/// that `lower` itself sees (after the passes that make products: loops unrolled, divisions and
/// residues lowered); returned with the result, and why.
pub(crate) fn lower_passes(
    func: &Func,
    ntt_hint: Option<u64>,
    per_thread: Option<bool>,
    divide_whole_bits: Option<u64>,
    record: &mut dyn FnMut(&'static str, &Func),
) -> CgResult<(Func, (u64, &'static str))> {
    if !func.is_concrete() {
        return Err(CodegenError::Unsupported(format!(
            "`{}` must be specialized before lowering",
            func.name
        )));
    }
    let unrolled = crate::loops::unroll(func, per_thread)?;
    record("unroll", &unrolled);
    let folded = crate::fold::fold(&unrolled)?;
    record("fold", &folded);
    let montgomery = crate::residue::residues(&folded)?;
    record("residues", &montgomery);
    let divided = crate::divide::divide(&montgomery, per_thread, divide_whole_bits)?;
    record("divide", &divided);
    let threaded = if crate::per_thread::chosen(&montgomery, &divided, per_thread) {
        crate::per_thread::per_thread(&divided)?
    } else {
        divided
    };
    record("per_thread", &threaded);
    crate::montgomery::check(&threaded)?;
    let scalar = crate::scalarize::scalarize(&threaded)?;
    record("scalarize", &scalar);
    let zp_free = crate::modular::lower_zp(&scalar)?;
    record("lower_zp", &zp_free);
    let crossover = ntt_crossover(&zp_free, ntt_hint);
    let lowered = lower_limbs(&zp_free, crossover.0)?;
    record("lower", &lowered);
    Ok((lowered, crossover))
}

/// The lowering of big-integer operations alone, on a program that [`crate::scalarize`] and
/// [`crate::modular::lower_zp`] have already seen ([`lower_with`] runs all three).
pub fn lower_limbs(func: &Func, ntt_from_bits: u64) -> CgResult<Func> {
    rewrite(
        func,
        Builder::like(func),
        Type::clone,
        |b, mapped, _, node| {
            let m = |v: ValueId| mapped.get(v);
            Ok::<_, CodegenError>(Rewritten::Value(match &node.op {
                Op::Param(i) => {
                    let p = mapped.param(*i as usize);
                    if matches!(node.ty, Type::Big(_)) {
                        b.limbs(p)?
                    } else {
                        p
                    }
                }
                // Big values are held as their limbs: these conversions are the identity there.
                Op::FromLimbs(x) | Op::Limbs(x) => m(*x),
                Op::BigAdd(x, y) => add_or_sub(b, m(*x), m(*y), false)?,
                // A big constant: its limbs, each thread picking its own.
                Op::Const(Literal::Big(limbs, bits)) => {
                    let n = bits.as_const().unwrap_or(0) / 64;
                    let idx = b.iota(bigfuse_core::Size::lit(n))?;
                    let f = {
                        let mut l = Builder::lambda();
                        let i = l.param("i", Type::U64);
                        let mut r = l.u64(0);
                        for (k, w) in limbs.iter().enumerate().filter(|(_, w)| **w != 0) {
                            let kk = l.u64(k as u64);
                            let here = l.eq(i, kk)?;
                            let wv = l.u64(*w);
                            r = l.select(here, wv, r)?;
                        }
                        l.finish(&[r])?
                    };
                    b.map(f, &[idx])?
                }
                Op::Cast(x) if matches!(func.ty(*x), Type::Big(_)) => {
                    let from = limbs_of(func.ty(*x));
                    match &node.ty {
                        Type::Big(_) => bits::resize(b, m(*x), from, limbs_of(&node.ty))?,
                        to => bits::low(b, m(*x), from, to)?,
                    }
                }
                Op::BigUnary(UnOp::Not, x) => bits::not(b, m(*x))?,
                Op::BigUnary(u, x) => bits::count(b, *u, m(*x), limbs_of(func.ty(*x)))?,
                Op::BigBitwise(op, x, y) => bits::bitwise(b, *op, m(*x), m(*y))?,
                Op::BigShift(op, x, k) => bits::shift(b, *op, m(*x), m(*k), limbs_of(&node.ty))?,
                Op::BigBit(x, i) => bits::bit(b, m(*x), m(*i), limbs_of(func.ty(*x)))?,
                // An integer zero-extended into a big integer: its limbs.
                Op::Cast(x) if matches!(node.ty, Type::Big(_)) => {
                    let Type::Big(bits) = &node.ty else {
                        unreachable!()
                    };
                    let n = bits.as_const().unwrap_or(0) / 64;
                    let x = match func.ty(*x) {
                        Type::U64 => m(*x),
                        _ => b.cast(m(*x), Type::U64)?,
                    };
                    let idx = b.iota(bigfuse_core::Size::lit(n))?;
                    let f = {
                        let mut l = Builder::lambda();
                        let i = l.param("i", Type::U64);
                        let v = l.param("v", Type::U64);
                        let zero = l.u64(0);
                        let first = l.eq(i, zero)?;
                        let r = l.select(first, v, zero)?;
                        l.finish(&[r])?
                    };
                    b.map(f, &[idx, x])?
                }
                Op::BigSub(x, y) => add_or_sub(b, m(*x), m(*y), true)?,
                Op::BigCmp(CmpOp::Eq, x, y) => {
                    let eqs = b.map(limb_eq(), &[m(*x), m(*y)])?;
                    b.reduce(bool_and(), Literal::Bool(true), eqs)?
                }
                Op::BigCmp(c, x, y) => {
                    let flags = b.map(limb_compare(), &[m(*x), m(*y)])?;
                    let r = b.reduce(ops::lex_compare(), ops::lex_identity(), flags)?;
                    let mask = b.u32(if *c == CmpOp::Lt {
                        ops::CMP_LESS
                    } else {
                        ops::CMP_LESS | ops::CMP_EQUAL
                    });
                    let bits = b.binary(BinOp::And, r, mask)?;
                    let zero = b.u32(0);
                    b.binary(BinOp::Ne, bits, zero)?
                }
                Op::BigMul(x, y) | Op::BigMulWide(x, y) => {
                    let Type::Big(bits) = &node.ty else {
                        unreachable!("products are big integers")
                    };
                    let Type::Big(in_bits) = func.ty(*x) else {
                        unreachable!("factors are big integers")
                    };
                    let out_len = bits.as_const().unwrap_or(0) / 64;
                    let algo = choose_mul(in_bits.as_const().unwrap_or(0), ntt_from_bits, out_len);
                    b.limb_mul(m(*x), m(*y), bigfuse_core::Size::lit(out_len), algo)?
                }
                Op::Select(c, x, y) if matches!(node.ty, Type::Big(_)) => {
                    b.map(select_limb(), &[m(*c), m(*x), m(*y)])?
                }
                Op::Scan {
                    op,
                    init,
                    exclusive,
                    input,
                    flags: Some(flags),
                } => segmented_scan(b, op, init, *exclusive, m(*input), m(*flags))?,
                _ => return Ok(Rewritten::Copy),
            }))
        },
        // Big results leave as big integers again.
        |b, o, v| {
            Ok(if matches!(func.ty(o), Type::Big(_)) {
                b.from_limbs(v)?
            } else {
                v
            })
        },
    )
}

/// Limbs of a big-integer type (of a concrete program).
fn limbs_of(t: &Type) -> u64 {
    match t {
        Type::Big(bits) => bits.as_const().unwrap_or(0) / 64,
        _ => 0,
    }
}

fn add_or_sub(b: &mut Builder, x: ValueId, y: ValueId, sub: bool) -> CgResult<ValueId> {
    let partial = b.map(Intrinsic::LimbPartial { sub }.func().clone(), &[x, y])?;
    let flags = b.map(Intrinsic::CarryFlags.func().clone(), &[partial])?;
    let carries = b.scan(ops::carry(), ops::carry_identity(), true, flags, None)?;
    Ok(b.map(
        Intrinsic::ApplyCarry { sub }.func().clone(),
        &[partial, carries],
    )?)
}

fn extract(ty: Type, i: u32) -> Func {
    let mut b = Builder::lambda();
    let t = b.param("t", ty);
    let r = b.extract(t, i).unwrap();
    b.finish(&[r]).unwrap()
}

/// `(x, y) -> (x < y) | (x == y) << 1` for one limb.
fn limb_compare() -> Func {
    let mut b = Builder::lambda();
    let x = b.param("x", Type::U64);
    let y = b.param("y", Type::U64);
    let lt = b.lt(x, y).unwrap();
    let eq = b.eq(x, y).unwrap();
    let lt = b.cast(lt, Type::U32).unwrap();
    let eq = b.cast(eq, Type::U32).unwrap();
    let one = b.u32(1);
    let eq = b.binary(BinOp::Shl, eq, one).unwrap();
    let r = b.binary(BinOp::Or, lt, eq).unwrap();
    b.finish(&[r]).unwrap()
}

fn limb_eq() -> Func {
    let mut b = Builder::lambda();
    let x = b.param("x", Type::U64);
    let y = b.param("y", Type::U64);
    let r = b.eq(x, y).unwrap();
    b.finish(&[r]).unwrap()
}

fn bool_and() -> Func {
    let mut b = Builder::lambda();
    let x = b.param("x", Type::Bool);
    let y = b.param("y", Type::Bool);
    let r = b.and(x, y).unwrap();
    b.finish(&[r]).unwrap()
}

fn select_limb() -> Func {
    let mut b = Builder::lambda();
    let c = b.param("c", Type::Bool);
    let x = b.param("x", Type::U64);
    let y = b.param("y", Type::U64);
    let r = b.select(c, x, y).unwrap();
    b.finish(&[r]).unwrap()
}

/// A segmented scan as an unsegmented one: scan (flag, value) pairs with the lifted operator
/// `((fa, a), (fb, b)) -> (fa | fb, fb ? b : op(a, b))`, identity `(false, init)`. For an exclusive
/// scan, an element that starts a segment gets `init`.
fn segmented_scan(
    b: &mut Builder,
    op: &Func,
    init: &Literal,
    exclusive: bool,
    input: ValueId,
    flags: ValueId,
) -> CgResult<ValueId> {
    let elem = init.ty();
    let pair = Type::Tuple(vec![Type::Bool, elem.clone()]);
    let lifted = {
        let mut l = Builder::lambda();
        let a = l.param("a", pair.clone());
        let bb = l.param("b", pair.clone());
        let fa = l.extract(a, 0)?;
        let va = l.extract(a, 1)?;
        let fb = l.extract(bb, 0)?;
        let vb = l.extract(bb, 1)?;
        let f = l.or(fa, fb)?;
        let combined = l.inline(op, &[va, vb])?;
        let v = l.select(fb, vb, combined)?;
        let r = l.tuple(&[f, v])?;
        l.finish(&[r])?
    };
    let pairs = b.zip(&[flags, input])?;
    let lifted_init = Literal::Tuple(vec![Literal::Bool(false), init.clone()]);
    let scanned = b.scan(lifted, lifted_init, exclusive, pairs, None)?;
    if exclusive {
        let fix = {
            let mut l = Builder::lambda();
            let p = l.param("p", pair);
            let start = l.param("start", Type::Bool);
            let v = l.extract(p, 1)?;
            let i = l.constant(init.clone());
            let r = l.select(start, i, v)?;
            l.finish(&[r])?
        };
        Ok(b.map(fix, &[scanned, flags])?)
    } else {
        Ok(b.map(extract(pair, 1), &[scanned])?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{eval, specialize, Value};
    use num_bigint::BigUint;

    fn program(op: &str) -> Func {
        let mut b = Builder::new(op, &["BITS"]);
        let ty = Type::Big(bigfuse_core::Size::param(0));
        let x = b.param("a", ty.clone());
        let y = b.param("b", ty);
        let r = match op {
            "add" => b.add(x, y),
            "sub" => b.sub(x, y),
            "lt" => b.lt(x, y),
            "le" => b.le(x, y),
            "eq" => b.eq(x, y),
            _ => unreachable!(),
        }
        .unwrap();
        b.finish(&[r]).unwrap()
    }

    #[test]
    fn truncated_products_take_the_ntt_from_their_own_crossover() {
        let build = |products: &[&str]| {
            let mut b = Builder::new("p", &["BITS"]);
            let ty = Type::Big(bigfuse_core::Size::param(0));
            let x = b.param("a", ty.clone());
            let y = b.param("b", ty);
            let mut outs = Vec::new();
            for p in products {
                outs.push(match *p {
                    "mul" => b.mul(x, y).unwrap(),
                    "wide" => b.mul_wide(x, y).unwrap(),
                    "div" => b.div(x, y).unwrap(),
                    _ => b.add(x, y).unwrap(),
                });
            }
            b.finish(&outs).unwrap()
        };
        // `explain` says which crossover applied and why.
        let why = |products: &[&str]| {
            let c = crate::compile(
                &build(products),
                &[1 << 15],
                &crate::Target::h100(),
                &Default::default(),
            )
            .unwrap();
            c.selection[0].clone()
        };
        assert!(
            why(&["mul", "add"]).contains("from 2^15 bits"),
            "{}",
            why(&["mul", "add"])
        );
        // A division becomes products before `lower` sees the program: no longer alone.
        assert!(
            why(&["mul", "div"]).contains("from 2^16 bits"),
            "{}",
            why(&["mul", "div"])
        );
        assert!(
            why(&["mul", "mul"]).contains("from 2^15 bits"),
            "{}",
            why(&["mul", "mul"])
        );
        assert!(
            why(&["mul", "wide"]).contains("from 2^16 bits"),
            "{}",
            why(&["mul", "wide"])
        );
        let build = |products: &[&str]| specialize(&build(products), &[1 << 15]).unwrap();
        let algos = |f: &Func| -> Vec<MulAlgo> {
            lower(f)
                .unwrap()
                .nodes
                .iter()
                .filter_map(|n| match n.op {
                    Op::LimbMul { algo, .. } => Some(algo),
                    _ => None,
                })
                .collect()
        };
        let lone = build(&["mul", "add"]);
        assert_eq!(ntt_crossover(&lone, None).0, TRUNCATED_NTT_FROM_BITS);
        assert_eq!(algos(&lone), [MulAlgo::Ntt]);
        let two = build(&["mul", "mul"]);
        assert_eq!(ntt_crossover(&two, None).0, TRUNCATED_NTT_FROM_BITS);
        assert_eq!(algos(&two), [MulAlgo::Ntt, MulAlgo::Ntt]);
        // A full product at 2^15 bits takes the NTT by the general rule, and keeps a truncated
        // one beside it on the classical side of 2^16.
        assert_eq!(ntt_crossover(&build(&["wide"]), None).0, NTT_FROM_BITS);
        let mixed = build(&["mul", "wide"]);
        assert_eq!(ntt_crossover(&mixed, None).0, NTT_FROM_BITS);
        assert_eq!(algos(&mixed), [MulAlgo::Classical, MulAlgo::Ntt]);
        assert_eq!(ntt_crossover(&build(&["add"]), None).0, NTT_FROM_BITS);
    }

    #[test]
    fn lowered_programs_agree_with_the_reference() {
        let bits = 192u64;
        let max = (BigUint::from(1u8) << bits) - 1u8;
        let values = [
            BigUint::from(0u8),
            BigUint::from(1u8),
            max.clone(),
            BigUint::from(u64::MAX),
            BigUint::from(1u8) << 64u32,
            max.clone() - 5u8,
        ];
        for op in ["add", "sub", "lt", "le", "eq"] {
            let f = specialize(&program(op), &[bits]).unwrap();
            let l = lower(&f).unwrap();
            assert!(l.is_lowered(), "{op}");
            for a in &values {
                for c in &values {
                    let inputs = [Value::Big(a.clone()), Value::Big(c.clone())];
                    assert_eq!(
                        eval(&f, &inputs).unwrap(),
                        eval(&l, &inputs).unwrap(),
                        "{op} {a} {c}"
                    );
                }
            }
        }
    }

    #[test]
    fn loops_are_unrolled_before_lowering() {
        // x -> 7 rounds of x = (x << 1) ^ (x * x) + i, on U<BITS>.
        let mut b = Builder::new("rounds", &["BITS"]);
        let ty = Type::Big(bigfuse_core::Size::param(0));
        let x = b.param("x", ty.clone());
        let mut body = Builder::loop_body(&b);
        let i = ValueId(0);
        let v = body.param("v", ty.clone());
        let one = body.u32(1);
        let up = body.shl(v, one).unwrap();
        let sq = body.mul(v, v).unwrap();
        let mixed = body.xor(up, sq).unwrap();
        let i = body.cast(i, ty).unwrap();
        let next = body.add(mixed, i).unwrap();
        let body = body.finish(&[next]).unwrap();
        let r = b
            .repeat(bigfuse_core::Size::lit(7), body, &[x], &[])
            .unwrap();
        let f = b.finish(&[r]).unwrap();
        for bits in [128u64, 320] {
            let f = specialize(&f, &[bits]).unwrap();
            let l = lower(&f).unwrap();
            assert!(l.is_lowered());
            let m = BigUint::from(1u8) << bits;
            for x0 in [0u64, 3, u64::MAX] {
                let mut want = BigUint::from(x0);
                for i in 0..7u32 {
                    want = (((&want << 1u32) % &m) ^ ((&want * &want) % &m)) + i;
                    want %= &m;
                }
                let inputs = [Value::Big(BigUint::from(x0))];
                assert_eq!(eval(&f, &inputs).unwrap(), vec![Value::Big(want.clone())]);
                assert_eq!(eval(&l, &inputs).unwrap(), vec![Value::Big(want)]);
            }
        }
    }

    #[test]
    fn segmented_scans_lower_to_unsegmented_ones() {
        let mut b = Builder::new("seg", &[]);
        let xs = b.param("xs", Type::array(Type::U64, bigfuse_core::Size::lit(6)));
        let fl = b.param("fl", Type::array(Type::Bool, bigfuse_core::Size::lit(6)));
        let plus = {
            let mut l = Builder::lambda();
            let x = l.param("x", Type::U64);
            let y = l.param("y", Type::U64);
            let r = l.add(x, y).unwrap();
            l.finish(&[r]).unwrap()
        };
        let inc = b
            .scan(plus.clone(), Literal::U64(0), false, xs, Some(fl))
            .unwrap();
        let exc = b.scan(plus, Literal::U64(0), true, xs, Some(fl)).unwrap();
        let f = b.finish(&[inc, exc]).unwrap();
        let l = lower(&f).unwrap();
        assert!(l
            .nodes
            .iter()
            .all(|n| !matches!(n.op, Op::Scan { flags: Some(_), .. })));
        let arr = |v: &[u64]| Value::Array(v.iter().map(|x| Value::U64(*x)).collect());
        let barr = |v: &[bool]| Value::Array(v.iter().map(|x| Value::Bool(*x)).collect());
        let inputs = [
            arr(&[1, 2, 3, 4, 5, 6]),
            barr(&[true, false, true, false, false, true]),
        ];
        let want = eval(&f, &inputs).unwrap();
        assert_eq!(want[0], arr(&[1, 3, 3, 7, 12, 6]));
        assert_eq!(want[1], arr(&[0, 1, 0, 3, 7, 0]));
        assert_eq!(eval(&l, &inputs).unwrap(), want);
    }
}

//! Lowering of the bit-level operations on big integers, part of [`mod@crate::lower`]:
//!
//! - `!a`, `a & b`, `a | b`, `a ^ b` = a map over limbs;
//! - bit counts = a map (each limb's count, placed by its index) ; a reduction (sum, max or min);
//! - bit `i` = a map (the limb that holds it) ; a reduction with `or`;
//! - shifts and rotations by a run-time amount = two gathers (the limbs that the amount's whole
//!   limbs bring to each position, and their neighbours) ; a map that joins the two by the amount's
//!   bits within a limb;
//! - a change of width = a gather of the first limbs (zeros past the source's end); to u32/u64,
//!   the low limb through a reduction.
//!
//! Gathers are the one step here that moves limbs between threads; placement stages their source.

use crate::error::CgResult;
use bigfuse_core::{BinOp, Builder, Func, IrResult, Literal, ShiftOp, Size, Type, UnOp, ValueId};

/// A lambda over the named parameters whose body `body` builds.
fn lambda(
    params: &[(&str, Type)],
    body: impl FnOnce(&mut Builder, &[ValueId]) -> IrResult<ValueId>,
) -> CgResult<Func> {
    let mut l = Builder::lambda();
    let ps: Vec<ValueId> = params.iter().map(|(n, t)| l.param(n, t.clone())).collect();
    let r = body(&mut l, &ps)?;
    Ok(l.finish(&[r])?)
}

/// `!x` on each limb.
pub(crate) fn not(b: &mut Builder, x: ValueId) -> CgResult<ValueId> {
    let f = lambda(&[("x", Type::U64)], |l, p| l.not(p[0]))?;
    Ok(b.map(f, &[x])?)
}

/// `x op y` on each limb (`and`, `or`, `xor`).
pub(crate) fn bitwise(b: &mut Builder, op: BinOp, x: ValueId, y: ValueId) -> CgResult<ValueId> {
    let f = lambda(&[("x", Type::U64), ("y", Type::U64)], |l, p| {
        l.binary(op, p[0], p[1])
    })?;
    Ok(b.map(f, &[x, y])?)
}

/// A bit count of `n` limbs `x`, as u32: `bits` for zeros of 0.
pub(crate) fn count(b: &mut Builder, op: UnOp, x: ValueId, n: u64) -> CgResult<ValueId> {
    let bits = (n * 64) as u32;
    let idx = b.iota(Size::lit(n))?;
    let two = [("a", Type::U32), ("b", Type::U32)];
    match op {
        UnOp::CountOnes => {
            let f = lambda(&[("x", Type::U64)], |l, p| l.count(UnOp::CountOnes, p[0]))?;
            let ones = b.map(f, &[x])?;
            let sum = lambda(&two, |l, p| l.add(p[0], p[1]))?;
            Ok(b.reduce(sum, Literal::U32(0), ones)?)
        }
        UnOp::LeadingZeros => {
            // The bit length: each nonzero limb's top bit position + 1, the largest of them.
            let f = lambda(&[("i", Type::U64), ("x", Type::U64)], |l, p| {
                let (i, x) = (p[0], p[1]);
                let i = l.cast(i, Type::U32)?;
                let six = l.u32(6);
                let base = l.binary(BinOp::Shl, i, six)?;
                let w = l.u32(64);
                let clz = l.count(UnOp::LeadingZeros, x)?;
                // i*64 + 64 - clz, in wrapping u32 arithmetic.
                let here = l.sub(base, clz)?;
                let len = l.add(here, w)?;
                let zero64 = l.u64(0);
                let nonzero = l.ne(x, zero64)?;
                let zero = l.u32(0);
                l.select(nonzero, len, zero)
            })?;
            let lens = b.map(f, &[idx, x])?;
            let max = lambda(&two, |l, p| {
                let lt = l.lt(p[0], p[1])?;
                l.select(lt, p[1], p[0])
            })?;
            let len = b.reduce(max, Literal::U32(0), lens)?;
            let total = b.u32(bits);
            Ok(b.sub(total, len)?)
        }
        UnOp::TrailingZeros => {
            let f = lambda(&[("i", Type::U64), ("x", Type::U64)], |l, p| {
                let (i, x) = (p[0], p[1]);
                let i = l.cast(i, Type::U32)?;
                let six = l.u32(6);
                let base = l.binary(BinOp::Shl, i, six)?;
                let ctz = l.count(UnOp::TrailingZeros, x)?;
                let at = l.add(base, ctz)?;
                let zero64 = l.u64(0);
                let nonzero = l.ne(x, zero64)?;
                let none = l.u32(bits);
                l.select(nonzero, at, none)
            })?;
            let firsts = b.map(f, &[idx, x])?;
            let min = lambda(&two, |l, p| {
                let lt = l.lt(p[0], p[1])?;
                l.select(lt, p[0], p[1])
            })?;
            Ok(b.reduce(min, Literal::U32(bits), firsts)?)
        }
        UnOp::Not => not(b, x),
    }
}

/// Bit `i` (a u32) of `n` limbs `x`: false past the end.
pub(crate) fn bit(b: &mut Builder, x: ValueId, i: ValueId, n: u64) -> CgResult<ValueId> {
    let idx = b.iota(Size::lit(n))?;
    let f = lambda(
        &[("j", Type::U64), ("x", Type::U64), ("i", Type::U32)],
        |l, p| {
            let (j, x, i) = (p[0], p[1], p[2]);
            let six = l.u32(6);
            let limb = l.binary(BinOp::Shr, i, six)?;
            let limb = l.cast(limb, Type::U64)?;
            let mine = l.eq(j, limb)?;
            let i = l.cast(i, Type::U64)?;
            let down = l.binary(BinOp::Shr, x, i)?;
            let one = l.u64(1);
            let low = l.binary(BinOp::And, down, one)?;
            let set = l.eq(low, one)?;
            l.and(mine, set)
        },
    )?;
    let here = b.map(f, &[idx, x, i])?;
    let or = lambda(&[("a", Type::Bool), ("b", Type::Bool)], |l, p| {
        l.or(p[0], p[1])
    })?;
    Ok(b.reduce(or, Literal::Bool(false), here)?)
}

/// A shift or rotation of `n` limbs `x` by `k` (a u32) bits.
pub(crate) fn shift(
    b: &mut Builder,
    op: ShiftOp,
    x: ValueId,
    k: ValueId,
    n: u64,
) -> CgResult<ValueId> {
    let bits = n * 64;
    // A rotation is a rotation left by an amount below `bits`; its indices wrap around.
    let (k, rotate, left) = match op {
        ShiftOp::Shl => (k, false, true),
        ShiftOp::Shr => (k, false, false),
        ShiftOp::Rotl | ShiftOp::Rotr => {
            let w = b.u32(bits as u32);
            let k = b.binary(BinOp::Rem, k, w)?;
            let k = if op == ShiftOp::Rotl {
                k
            } else {
                // Right by k is left by bits - k, and by 0 when k is 0.
                let back = b.sub(w, k)?;
                b.binary(BinOp::Rem, back, w)?
            };
            (k, true, true)
        }
    };
    let idx = b.iota(Size::lit(n))?;
    // The source limb of each position (`near`) and the one whose top (bottom) bits join it.
    let source = |b: &mut Builder, extra: u64| -> CgResult<ValueId> {
        let f = lambda(&[("i", Type::U64), ("k", Type::U32)], |l, p| {
            let (i, k) = (p[0], p[1]);
            let six = l.u32(6);
            let q = l.binary(BinOp::Shr, k, six)?;
            let q = l.cast(q, Type::U64)?;
            let e = l.u64(extra);
            if rotate {
                // (i - q - extra) mod n, from i + 2n - q - extra < 3n.
                let two_n = l.u64(2 * n);
                let up = l.add(i, two_n)?;
                let at = l.sub(up, q)?;
                let at = l.sub(at, e)?;
                let nn = l.u64(n);
                l.binary(BinOp::Rem, at, nn)
            } else if left {
                // Wraps past the end (so reads 0) when the position is below the amount.
                let at = l.sub(i, q)?;
                l.sub(at, e)
            } else {
                let at = l.add(i, q)?;
                l.add(at, e)
            }
        })?;
        Ok(b.map(f, &[idx, k])?)
    };
    let near_idx = source(b, 0)?;
    let far_idx = source(b, 1)?;
    let near = b.gather(x, near_idx)?;
    let far = b.gather(x, far_idx)?;
    let join = lambda(
        &[("near", Type::U64), ("far", Type::U64), ("k", Type::U32)],
        |l, p| {
            let (near, far, k) = (p[0], p[1], p[2]);
            let mask = l.u32(63);
            let r = l.binary(BinOp::And, k, mask)?;
            let r = l.cast(r, Type::U64)?;
            let w = l.u64(64);
            let back = l.sub(w, r)?;
            let zero = l.u64(0);
            let whole = l.eq(r, zero)?;
            let (main, spill) = if left {
                (
                    l.binary(BinOp::Shl, near, r)?,
                    l.binary(BinOp::Shr, far, back)?,
                )
            } else {
                (
                    l.binary(BinOp::Shr, near, r)?,
                    l.binary(BinOp::Shl, far, back)?,
                )
            };
            // With r = 0 the spill would be a shift by 64, which the IR takes modulo 64.
            let spill = l.select(whole, zero, spill)?;
            l.or(main, spill)
        },
    )?;
    Ok(b.map(join, &[near, far, k])?)
}

/// `n` limbs `x` as `m` limbs: the value modulo 2^(64 m).
pub(crate) fn resize(b: &mut Builder, x: ValueId, n: u64, m: u64) -> CgResult<ValueId> {
    if n == m {
        return Ok(x);
    }
    let idx = b.iota(Size::lit(m))?;
    Ok(b.gather(x, idx)?)
}

/// The low limb of `x` (`n` limbs) as `to` (u32 or u64).
pub(crate) fn low(b: &mut Builder, x: ValueId, n: u64, to: &Type) -> CgResult<ValueId> {
    let idx = b.iota(Size::lit(n))?;
    let f = lambda(&[("i", Type::U64), ("x", Type::U64)], |l, p| {
        let zero = l.u64(0);
        let first = l.eq(p[0], zero)?;
        l.select(first, p[1], zero)
    })?;
    let lows = b.map(f, &[idx, x])?;
    let or = lambda(&[("a", Type::U64), ("b", Type::U64)], |l, p| {
        l.binary(BinOp::Or, p[0], p[1])
    })?;
    let w = b.reduce(or, Literal::U64(0), lows)?;
    Ok(if *to == Type::U64 {
        w
    } else {
        b.cast(w, to.clone())?
    })
}

#[cfg(test)]
mod tests {
    use crate::lower::lower;
    use bigfuse_core::{eval, specialize, Builder, Func, ShiftOp, Size, Type, UnOp, Value};
    use num_bigint::BigUint;

    /// Programs over `a: U<BITS>`, `b: U<BITS>`, `k: u32` with one bit-level operation each.
    fn programs() -> Vec<(&'static str, Func)> {
        let ops: Vec<&'static str> = vec![
            "not", "and", "or", "xor", "shl", "shr", "rotl", "rotr", "clz", "ctz", "popc", "bit",
            "widen", "narrow", "low64", "low32", "extract", "insert", "mask",
        ];
        ops.into_iter()
            .map(|op| {
                let mut b = Builder::new(op, &["BITS"]);
                let ty = Type::Big(Size::param(0));
                let x = b.param("a", ty.clone());
                let y = b.param("b", ty.clone());
                let k = b.param("k", Type::U32);
                let j = b.param("j", Type::U32);
                let r = match op {
                    "not" => b.not(x),
                    "and" => b.and(x, y),
                    "or" => b.or(x, y),
                    "xor" => b.xor(x, y),
                    "shl" => b.shift(ShiftOp::Shl, x, k),
                    "shr" => b.shift(ShiftOp::Shr, x, k),
                    "rotl" => b.shift(ShiftOp::Rotl, x, k),
                    "rotr" => b.shift(ShiftOp::Rotr, x, k),
                    "clz" => b.count(UnOp::LeadingZeros, x),
                    "ctz" => b.count(UnOp::TrailingZeros, x),
                    "popc" => b.count(UnOp::CountOnes, x),
                    "bit" => b.bit(x, k),
                    "widen" => b.cast(
                        x,
                        Type::Big(Size {
                            factor: 2,
                            param: Some(0),
                        }),
                    ),
                    "narrow" => b.cast(x, Type::Big(Size::lit(128))),
                    "low64" => b.cast(x, Type::U64),
                    "low32" => b.cast(x, Type::U32),
                    "extract" => b.extract_bits(x, k, j),
                    "insert" => b.insert_bits(x, y, k, j),
                    "mask" => b.mask(&ty, k),
                    _ => unreachable!(),
                }
                .unwrap();
                (op, b.finish(&[r]).unwrap())
            })
            .collect()
    }

    fn values(bits: u64) -> Vec<BigUint> {
        let one = BigUint::from(1u8);
        let max = (&one << bits) - 1u8;
        let mut v = vec![
            BigUint::from(0u8),
            one.clone(),
            max.clone(),
            &one << (bits - 1),
            &one << 64u32,
            BigUint::from(u64::MAX),
            &max >> 65u32,
            &max - (&one << 70u32),
        ];
        // A pseudo-random value with every limb different.
        let mut x = 0x9e3779b97f4a7c15u64;
        let limbs: Vec<u64> = (0..bits / 64)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        v.push(bigfuse_core::eval::limbs_to_big(&limbs));
        v
    }

    #[test]
    fn lowered_bit_operations_agree_with_the_reference() {
        for bits in [128u64, 192, 320, 512] {
            let amounts = [
                0u32,
                1,
                63,
                64,
                65,
                127,
                bits as u32 - 1,
                bits as u32,
                bits as u32 + 5,
                1000,
                u32::MAX,
            ];
            for (op, f) in programs() {
                let f = specialize(&f, &[bits]).unwrap();
                let l = lower(&f).unwrap();
                assert!(
                    l.is_lowered(),
                    "{op} at {bits}: {}",
                    bigfuse_core::print(&l)
                );
                for a in values(bits) {
                    for c in [values(bits)[2].clone(), values(bits)[8].clone()] {
                        for k in amounts {
                            for j in [0u32, 5, 64, 100] {
                                let inputs = [
                                    Value::Big(a.clone()),
                                    Value::Big(c.clone()),
                                    Value::U32(k),
                                    Value::U32(j),
                                ];
                                assert_eq!(
                                    eval(&f, &inputs).unwrap(),
                                    eval(&l, &inputs).unwrap(),
                                    "{op} at {bits} bits: a = {a:#x}, b = {c:#x}, k = {k}, j = {j}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_reference_means_what_the_docs_say() {
        let bits = 192u64;
        let m = BigUint::from(1u8) << bits;
        let a = values(bits)[8].clone();
        let run = |op: &str, k: u32, j: u32| {
            let (_, f) = programs().into_iter().find(|(o, _)| *o == op).unwrap();
            let f = specialize(&f, &[bits]).unwrap();
            let inputs = [
                Value::Big(a.clone()),
                Value::Big(BigUint::from(0b1011u8)),
                Value::U32(k),
                Value::U32(j),
            ];
            eval(&f, &inputs).unwrap().remove(0)
        };
        assert_eq!(run("shl", 5, 0), Value::Big((&a << 5u32) % &m));
        assert_eq!(run("shl", 192, 0), Value::Big(BigUint::from(0u8)));
        assert_eq!(run("shr", 191, 0), Value::Big(&a >> 191u32));
        assert_eq!(run("rotl", 192 + 3, 0), run("rotl", 3, 0));
        assert_eq!(run("rotr", 3, 0), run("rotl", 189, 0));
        assert_eq!(run("popc", 0, 0), Value::U32(a.count_ones() as u32));
        assert_eq!(run("clz", 0, 0), Value::U32((bits - a.bits()) as u32));
        assert_eq!(run("extract", 4, 8), Value::Big((&a >> 4u32) % 256u32));
        assert_eq!(
            run("insert", 4, 3),
            Value::Big((&a ^ (&a & BigUint::from(0b1110000u32))) | BigUint::from(0b0110000u32))
        );
    }
}

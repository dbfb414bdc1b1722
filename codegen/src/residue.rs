//! Arithmetic modulo a big odd integer: `big.add_mod`, `big.sub_mod` and `big.mul_mod`
//! ([`Op::BigMod`]) become Montgomery products ([`Op::BigMontMul`], one device function per
//! width, `emit/montgomery.rs`) and additions, with every chain of them kept in Montgomery form.
//!
//! A residue `x` modulo `m` (odd, `w` bits, `R = 2^w`) is held as `x R mod m`:
//! - into the form: `x~ = mont(x, R^2 mod m)` for any `x < R` (`x R^2 < R m`, so one
//!   conditional subtraction leaves it below `m`);
//! - a product: `mont(x~, y~) = x y R mod m`; a sum or difference: `x~ + y~` or `x~ - y~` with
//!   one conditional correction by `m`, as for any residues;
//! - out of it: `mont(x~, 1) = x mod m`.
//!
//! Every operation is first written whole (its operands into the form, the operation, its result
//! out), each value's form remembered: an operand that is the result of an earlier operation
//! modulo the same `m` takes that result's form instead (`into(out(x~)) = x~`, because `x~ < m`),
//! so a chain converts each input once and each result that leaves the chain once; results that
//! only feed the chain are dead code afterwards. `R^2 mod m` is computed once per modulus, as
//! `((2^2w - 1) mod m + 1) mod m`: one division of a constant, which `divide` computes whole.
//!
//! The user-visible contract is [`Op::BigMod`]'s: an even or zero modulus gives all ones, as
//! `pow_mod` does; here every Montgomery product does (the device function checks `m`'s low bit),
//! and every result leaves the form through one. Not constant-time only where the division of
//! `R^2` is not (its quotient's top rows); the products are.
//!
//! Chains inside a loop that stays a loop convert at each round (a round's body sees its
//! arguments as plain values) and compute `R^2 mod m` per round unless `m` is the same value; an
//! unrolled loop's rounds share one chain.

use crate::error::{CgResult, CodegenError};
use bigfuse_core::rewrite::{same_output, Mapped, Rewritten};
use bigfuse_core::{rewrite, BinOp, Builder, Func, Literal, Node, Op, Size, Type, ValueId};
use std::collections::HashMap;

/// The widest modulus (bits) whose products one thread computes alone
/// ([`crate::montgomery::MAX_WORDS_ALONE`] 32-bit words).
pub const MAX_BITS: u64 = 32 * crate::montgomery::MAX_WORDS_ALONE as u64;

/// True when `f` (or a closure or loop inside it) computes modulo a big integer.
pub fn has_residues(f: &Func) -> bool {
    f.any_op(&|op| matches!(op, Op::BigMod(..)))
}

/// `func` with every [`Op::BigMod`] computed in Montgomery form (closures and loops included).
/// A no-op when there is none.
pub fn residues(func: &Func) -> CgResult<Func> {
    if !has_residues(func) {
        return Ok(func.clone());
    }
    rebuild(func, Builder::like(func))
}

/// The rewrite, then the results that only fed a chain dropped: inside a closure no later pass
/// would drop them, and one thread would compute them (a Montgomery product each).
fn rebuild(func: &Func, b: Builder) -> CgResult<Func> {
    let mut forms = Forms::default();
    let rewritten = rewrite(
        func,
        b,
        Type::clone,
        |b, m, _, node| forms.rule(b, m, node),
        same_output,
    )?;
    crate::fuse::dead_code(&rewritten)
}

/// The values one rewrite has built: each modulus' `R^2 mod m`, and the form of each value
/// already converted (or computed in the form) modulo each modulus.
#[derive(Default)]
struct Forms {
    /// The modulus -> `R^2 mod m`.
    r2: HashMap<ValueId, ValueId>,
    /// (value, modulus) -> the value's Montgomery form modulo it.
    form: HashMap<(ValueId, ValueId), ValueId>,
}

impl Forms {
    fn rule(&mut self, b: &mut Builder, m: &Mapped, node: &Node) -> CgResult<Rewritten> {
        Ok(match &node.op {
            Op::BigMod(op, x, y, md) => {
                Rewritten::Value(self.operation(b, *op, m.get(*x), m.get(*y), m.get(*md))?)
            }
            op if op.lambdas().iter().any(|l| has_residues(l)) => {
                let mut op = op.clone();
                match &mut op {
                    Op::Map { f, .. } => **f = rebuild(f, Builder::lambda())?,
                    Op::Scan { op: f, .. } | Op::Reduce { op: f, .. } => {
                        **f = rebuild(f, Builder::lambda())?
                    }
                    _ => unreachable!("only maps, scans and reductions carry lambdas"),
                }
                Rewritten::Value(b.copy(&op, &node.ty, |v| m.get(v))?)
            }
            Op::Loop { count, body, args } if has_residues(body) => {
                let op = Op::Loop {
                    count: *count,
                    body: Box::new(rebuild(body, Builder::lambda())?),
                    args: args.clone(),
                };
                Rewritten::Value(b.copy(&op, &node.ty, |v| m.get(v))?)
            }
            _ => Rewritten::Copy,
        })
    }

    /// `(x op y) mod md`, leaving the form; its form is remembered for later operations.
    fn operation(
        &mut self,
        b: &mut Builder,
        op: BinOp,
        x: ValueId,
        y: ValueId,
        md: ValueId,
    ) -> CgResult<ValueId> {
        let bits = width(b, md)?;
        let fx = self.form_of(b, x, md)?;
        let fy = self.form_of(b, y, md)?;
        let f = match op {
            BinOp::Mul => b.push(Op::BigMontMul(fx, fy, md))?,
            BinOp::Add => {
                // x~ + y~ < 2m: subtract m when the sum carried out or is at least m.
                let s = b.add(fx, fy)?;
                let carried = b.lt(s, fx)?;
                let below = b.lt(s, md)?;
                let under = b.not(below)?;
                let over = b.or(carried, under)?;
                let d = b.sub(s, md)?;
                b.select(over, d, s)?
            }
            BinOp::Sub => {
                let d = b.sub(fx, fy)?;
                let borrowed = b.lt(fx, fy)?;
                let up = b.add(d, md)?;
                b.select(borrowed, up, d)?
            }
            other => {
                return Err(CodegenError::Unsupported(format!(
                    "`{}` modulo a big integer: add_mod, sub_mod and mul_mod are",
                    other.mnemonic()
                )))
            }
        };
        let one = b.constant(Literal::Big(vec![1], Size::lit(bits)));
        let out = b.push(Op::BigMontMul(f, one, md))?;
        self.form.insert((out, md), f);
        Ok(out)
    }

    /// The Montgomery form of `x` modulo `md`.
    fn form_of(&mut self, b: &mut Builder, x: ValueId, md: ValueId) -> CgResult<ValueId> {
        if let Some(f) = self.form.get(&(x, md)) {
            return Ok(*f);
        }
        let r2 = self.r2(b, md)?;
        let f = b.push(Op::BigMontMul(x, r2, md))?;
        self.form.insert((x, md), f);
        Ok(f)
    }

    /// `R^2 mod m`, built once per modulus.
    fn r2(&mut self, b: &mut Builder, md: ValueId) -> CgResult<ValueId> {
        if let Some(known) = self.r2.get(&md) {
            return Ok(*known);
        }
        let w = width(b, md)?;
        // R^2 - 1 = 2^2w - 1: its remainder plus one, then m itself maps to zero.
        let all_ones = b.constant(Literal::Big(
            vec![u64::MAX; (2 * w / 64) as usize],
            Size::lit(2 * w),
        ));
        let t = b.rem(all_ones, md)?;
        let one = b.constant(Literal::Big(vec![1], Size::lit(w)));
        let t1 = b.add(t, one)?;
        let wraps = b.eq(t1, md)?;
        let zero = b.constant(Literal::Big(vec![], Size::lit(w)));
        let r2 = b.select(wraps, zero, t1)?;
        self.r2.insert(md, r2);
        Ok(r2)
    }
}

/// The width of the big integer `v`, refused past [`MAX_BITS`].
fn width(b: &Builder, v: ValueId) -> CgResult<u64> {
    let bits = match b.ty(v) {
        Type::Big(s) => s.as_const(),
        _ => None,
    }
    .filter(|w| w % 64 == 0)
    .ok_or_else(|| {
        CodegenError::Unsupported(
            "arithmetic modulo a big integer needs a concrete U<..> of 64-bit limbs".into(),
        )
    })?;
    if bits > MAX_BITS {
        return Err(CodegenError::Unsupported(format!(
            "add_mod, sub_mod and mul_mod compute Montgomery products in one thread, for moduli \
             of up to {MAX_BITS} bits, not {bits}: compute `a.mul_wide(b) % m` (a division) at \
             this width, or split the modulus (CRT)"
        )));
    }
    Ok(bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{eval, print, Value};
    use num_bigint::BigUint;

    fn big(bits: u64) -> Type {
        Type::Big(Size::lit(bits))
    }

    fn count(f: &Func, pred: &dyn Fn(&Op) -> bool) -> usize {
        f.nodes.iter().filter(|n| pred(&n.op)).count()
    }

    /// Random values below `2^bits` (xorshift: deterministic).
    fn values(seed: u64) -> impl FnMut(u64) -> BigUint {
        let mut x = seed | 1;
        move |bits| {
            let mut v = BigUint::default();
            for _ in 0..bits.div_ceil(64) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v = (v << 64) + x;
            }
            v % (BigUint::from(1u8) << bits)
        }
    }

    /// `((a b + c) - a) b mod m`.
    fn chain(bits: u64) -> Func {
        let mut b = Builder::new("chain", &[]);
        let [x, y, z, m] = ["a", "b", "c", "m"].map(|n| b.param(n, big(bits)));
        let p = b.big_mod(BinOp::Mul, x, y, m).unwrap();
        let s = b.big_mod(BinOp::Add, p, z, m).unwrap();
        let d = b.big_mod(BinOp::Sub, s, x, m).unwrap();
        let r = b.big_mod(BinOp::Mul, d, y, m).unwrap();
        b.finish(&[r]).unwrap()
    }

    /// A chain of four operations converts each input into the form once, computes `R^2` once
    /// and leaves the form once, whatever the width, with the operations' own results: moduli
    /// odd, even, one and zero, operands above the modulus.
    #[test]
    fn a_chain_converts_each_input_once() {
        let mut next = values(0x9e3779b97f4a7c15);
        for bits in [64u64, 256, 320] {
            let f = chain(bits);
            let r = residues(&f).unwrap();
            // into: a, b, c; products: 2; out: 1.
            let monts = count(&r, &|op| matches!(op, Op::BigMontMul(..)));
            assert_eq!(monts, 6, "{bits} bits:\n{}", print(&r));
            assert_eq!(count(&r, &|op| matches!(op, Op::BigRem(..))), 1);
            assert!(!has_residues(&r));
            for k in 0..24u64 {
                let m = match k {
                    0 => BigUint::from(1u8),
                    1 => BigUint::from(0u8),
                    2 => BigUint::from(10u8),
                    3 => BigUint::from(3u8),
                    4 => (BigUint::from(1u8) << bits) - 1u8,
                    _ => next(bits) | BigUint::from(k % 2),
                };
                let args: Vec<Value> = (0..3)
                    .map(|_| Value::Big(next(bits)))
                    .chain([Value::Big(m.clone())])
                    .collect();
                assert_eq!(
                    eval(&r, &args).unwrap(),
                    eval(&f, &args).unwrap(),
                    "{bits} bits, m = {m}"
                );
            }
        }
    }

    /// Sums and differences whose forms are used again: an unreduced form would pass `R` and
    /// lose it, one at or above `m` would stay so. `(2 (a + b) + (a + b)) - c - c mod m` with
    /// moduli in the top half of the width.
    #[test]
    fn sums_stay_reduced() {
        let mut next = values(0x5851f42d4c957f2d);
        for bits in [64u64, 192, 1024] {
            let mut b = Builder::new("sums", &[]);
            let [x, y, z, m] = ["a", "b", "c", "m"].map(|n| b.param(n, big(bits)));
            let s = b.big_mod(BinOp::Add, x, y, m).unwrap();
            let d = b.big_mod(BinOp::Add, s, s, m).unwrap();
            let t = b.big_mod(BinOp::Add, d, s, m).unwrap();
            let u = b.big_mod(BinOp::Sub, t, z, m).unwrap();
            let v = b.big_mod(BinOp::Sub, u, z, m).unwrap();
            let f = b.finish(&[t, v]).unwrap();
            let r = residues(&f).unwrap();
            let top = BigUint::from(1u8) << bits;
            for k in 1..40u64 {
                // Just below 2^bits (sums carry out), or between 2^(bits-1) and that (sums at or
                // above m that do not carry).
                let m = if k % 2 == 0 {
                    &top - BigUint::from(k * k)
                } else {
                    (&top >> 1u8) + next(bits - 1)
                } | BigUint::from(1u8);
                let args: Vec<Value> = (0..3)
                    .map(|_| Value::Big(&top - 1u8 - next(bits / 2)))
                    .chain([Value::Big(m.clone())])
                    .collect();
                assert_eq!(
                    eval(&r, &args).unwrap(),
                    eval(&f, &args).unwrap(),
                    "{bits} bits, m = {m}"
                );
            }
        }
    }

    /// Past one thread's widest product: a clear error naming what to do.
    #[test]
    fn too_wide_a_modulus_is_refused() {
        let mut b = Builder::new("wide", &[]);
        let x = b.param("a", big(4096));
        let m = b.param("m", big(4096));
        let r = b.big_mod(BinOp::Mul, x, x, m).unwrap();
        let f = b.finish(&[r]).unwrap();
        let e = residues(&f).unwrap_err().to_string();
        assert!(
            e.contains("up to 2048 bits") && e.contains("mul_wide"),
            "{e}"
        );
    }

    /// Inside a closure over array elements: `x^2 + x mod m` per element.
    #[test]
    fn closures_compute_in_the_form_too() {
        let mut l = Builder::lambda();
        let x = l.param("x", big(128));
        let m = l.param("m", big(128));
        let sq = l.big_mod(BinOp::Mul, x, x, m).unwrap();
        let r = l.big_mod(BinOp::Add, sq, x, m).unwrap();
        let body = l.finish(&[r]).unwrap();
        let mut b = Builder::new("elems", &[]);
        let xs = b.param("xs", Type::array(big(128), Size::lit(3)));
        let ms = b.param("ms", Type::array(big(128), Size::lit(3)));
        let out = b.map(body, &[xs, ms]).unwrap();
        let f = b.finish(&[out]).unwrap();
        let r = residues(&f).unwrap();
        assert!(!has_residues(&r));
        let arr = |v: [u64; 3]| Value::Array(v.map(|x| Value::Big(BigUint::from(x))).to_vec());
        let args = [arr([5, 1 << 40, 7]), arr([9, 1 << 41 | 1, 8])];
        assert_eq!(eval(&r, &args).unwrap(), eval(&f, &args).unwrap());
    }
}

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
//! An unrolled loop's rounds are one chain. A loop that stays a loop (`loops.rs`) keeps its
//! chains in the form across rounds (`LoopPlan`): `R^2` of a modulus the rounds capture is
//! computed once before the loop, and a carried value used only modulo that modulus (through
//! `if`s too) stays a form from round to round, so square-and-multiply costs its two products a
//! round. Other carried values convert at each round.

use crate::error::{CgResult, CodegenError};
use bigfuse_core::rewrite::{Mapped, Rewritten};
use bigfuse_core::{rewrite, BinOp, Builder, Func, Literal, Node, Op, Size, Type, ValueId};
use std::collections::HashMap;

/// The widest modulus (bits) of a residue: one thread computes each of its products
/// ([`crate::montgomery::one_thread_form`]; from 1056 bits in chains of halves, whose registers
/// run out beyond 2048 bits). Powers split wider moduli over groups of threads; residues do not.
pub const MAX_BITS: u64 = 2048;

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
    rebuild_with(func, b, Inherited::default())
}

/// [`rebuild`] of a loop's body, told by the loop which of its parameters are `R^2` of a
/// modulus or values already in Montgomery form ([`Inherited`]).
fn rebuild_with(func: &Func, b: Builder, inherited: Inherited) -> CgResult<Func> {
    let forms = std::cell::RefCell::new(Forms {
        inherited,
        ..Forms::default()
    });
    let rewritten = rewrite(
        func,
        b,
        Type::clone,
        |b, m, id, node| forms.borrow_mut().rule(b, m, id, node),
        |_, old, new| forms.borrow().output(old, new),
    )?;
    crate::fuse::dead_code(&rewritten)
}

/// What a loop tells the rebuild of its body (parameter indices are the body's).
#[derive(Default)]
struct Inherited {
    /// (parameter of a captured modulus, the extra parameter that holds its `R^2 mod m`).
    r2_params: Vec<(usize, usize)>,
    /// (carried parameter that holds a Montgomery form, the parameter of its modulus).
    form_params: Vec<(usize, usize)>,
    /// Selects between forms that stay forms -> the parameter of their modulus.
    form_selects: HashMap<ValueId, usize>,
    /// Results that leave the body as forms -> the parameter of their modulus.
    form_outputs: HashMap<ValueId, usize>,
}

/// How a loop keeps its chains in Montgomery form across rounds: `R^2 mod m` of a modulus the
/// rounds capture is computed once, before the loop, and passed in; a carried value that the
/// rounds only use as an operand modulo that modulus (directly, or through selects between such
/// values, as an `if` in the loop makes) and that each round computes modulo it stays in the form
/// from one round to the next: converted once before the loop and once after it.
struct LoopPlan {
    inherited: Inherited,
    /// The captured moduli whose `R^2` is passed in, as body parameters, in the extra
    /// parameters' order.
    hoisted: Vec<usize>,
    /// Per carried slot, the body parameter of the modulus it is kept in form modulo.
    slots: Vec<Option<usize>>,
}

fn plan_loop(body: &Func) -> LoopPlan {
    let carried = body.outputs.len();
    let param_node = |k: usize| {
        body.ids()
            .find(|id| matches!(body.node(*id).op, Op::Param(p) if p as usize == k))
    };
    let mut hoisted: Vec<usize> = Vec::new();
    for n in &body.nodes {
        if let Op::BigMod(_, _, _, md) = n.op {
            if let Op::Param(k) = body.node(md).op {
                let k = k as usize;
                if k > carried && !hoisted.contains(&k) {
                    hoisted.push(k);
                }
            }
        }
    }
    let mut inherited = Inherited::default();
    for (i, k) in hoisted.iter().enumerate() {
        inherited.r2_params.push((*k, body.params.len() + i));
    }
    let mut slots = vec![None; carried];
    for (j, slot) in slots.iter_mut().enumerate() {
        let Some(p) = param_node(1 + j) else { continue };
        for &km in &hoisted {
            let Some(md) = param_node(km) else { continue };
            if let Some(selects) = keeps_form(body, p, md, j) {
                inherited.form_params.push((1 + j, km));
                inherited
                    .form_selects
                    .extend(selects.into_iter().map(|s| (s, km)));
                inherited.form_outputs.insert(body.outputs[j], km);
                *slot = Some(km);
                break;
            }
        }
    }
    LoopPlan {
        inherited,
        hoisted,
        slots,
    }
}

/// The selects through which carried parameter `p` (slot `j`) would flow as a Montgomery form
/// modulo `md`, when every use of it (and of them) is an operand of arithmetic modulo `md`, a
/// branch of such a select, or slot `j`'s result, and slot `j`'s result is such a select, `p`
/// itself or a result of arithmetic modulo `md`; `None` otherwise.
fn keeps_form(body: &Func, p: ValueId, md: ValueId, j: usize) -> Option<Vec<ValueId>> {
    let modular = |v: ValueId| matches!(body.node(v).op, Op::BigMod(_, _, _, m) if m == md);
    let mut held = vec![p];
    let mut k = 0;
    while k < held.len() {
        let v = held[k];
        k += 1;
        for (slot, o) in body.outputs.iter().enumerate() {
            if *o == v && slot != j {
                return None;
            }
        }
        for u in body.ids() {
            let op = &body.node(u).op;
            if !op.args().contains(&v) {
                continue;
            }
            match *op {
                Op::BigMod(_, x, y, m) if m == md && m != v && (x == v || y == v) => {}
                Op::Select(c, a, b) if c != v && (a == v || b == v) => {
                    if !held.contains(&u) {
                        held.push(u);
                    }
                }
                _ => return None,
            }
        }
    }
    let selects: Vec<ValueId> = held[1..].to_vec();
    for s in &selects {
        let Op::Select(_, a, b) = body.node(*s).op else {
            return None;
        };
        if ![a, b].iter().all(|x| held.contains(x) || modular(*x)) {
            return None;
        }
    }
    let out = body.outputs[j];
    let once = body.outputs.iter().filter(|o| **o == out).count() == 1;
    (once && (held.contains(&out) || modular(out))).then_some(selects)
}

/// The values one rewrite has built: each modulus' `R^2 mod m`, and the form of each value
/// already converted (or computed in the form) modulo each modulus.
#[derive(Default)]
struct Forms {
    /// The modulus -> `R^2 mod m`.
    r2: HashMap<ValueId, ValueId>,
    /// (value, modulus) -> the value's Montgomery form modulo it.
    form: HashMap<(ValueId, ValueId), ValueId>,
    /// What the loop around tells (a body's rebuild).
    inherited: Inherited,
    /// The new function's parameters, once the rewrite has made them.
    params: Vec<ValueId>,
    /// Loops of several carried values whose slots leave as forms: the old loop -> per slot, the
    /// (new) modulus it is kept in form modulo.
    loop_slots: HashMap<ValueId, Vec<Option<ValueId>>>,
}

impl Forms {
    /// The new value of an output: its form where the body hands it on as one.
    fn output(&self, old: ValueId, new: ValueId) -> CgResult<ValueId> {
        match self.inherited.form_outputs.get(&old) {
            Some(km) => Ok(*self
                .form
                .get(&(new, self.params[*km]))
                .expect("a result kept in form has its form")),
            None => Ok(new),
        }
    }

    fn rule(
        &mut self,
        b: &mut Builder,
        m: &Mapped,
        id: ValueId,
        node: &Node,
    ) -> CgResult<Rewritten> {
        if self.params.is_empty() {
            // The inherited parameters, now that they exist.
            let count = self
                .inherited
                .r2_params
                .iter()
                .map(|(_, e)| e + 1)
                .chain(
                    self.inherited
                        .form_params
                        .iter()
                        .map(|(k, km)| k.max(km) + 1),
                )
                .max()
                .unwrap_or(0);
            self.params = (0..count).map(|k| m.param(k)).collect();
            for (k, e) in &self.inherited.r2_params {
                self.r2.insert(self.params[*k], self.params[*e]);
            }
            for (k, km) in &self.inherited.form_params {
                let p = self.params[*k];
                self.form.insert((p, self.params[*km]), p);
            }
        }
        if let Some(km) = self.inherited.form_selects.get(&id).copied() {
            let Op::Select(c, x, y) = node.op else {
                unreachable!("only selects are planned as forms")
            };
            let md = self.params[km];
            let fx = self.form_of(b, m.get(x), md)?;
            let fy = self.form_of(b, m.get(y), md)?;
            let v = b.select(m.get(c), fx, fy)?;
            self.form.insert((v, md), v);
            return Ok(Rewritten::Value(v));
        }
        Ok(match &node.op {
            Op::BigMod(op, x, y, md) => {
                Rewritten::Value(self.operation(b, *op, m.get(*x), m.get(*y), m.get(*md))?)
            }
            Op::Extract(t, j) if self.loop_slots.contains_key(t) => {
                let e = b.extract(m.get(*t), *j)?;
                match self.loop_slots[t][*j as usize] {
                    Some(md) => Rewritten::Value(self.leave_form(b, e, md)?),
                    None => Rewritten::Value(e),
                }
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
                self.rolled_loop(b, m, id, *count, body, args)?
            }
            _ => Rewritten::Copy,
        })
    }

    /// A loop that stayed a loop, its chains kept in Montgomery form across rounds where
    /// [`plan_loop`] allows: `R^2` of captured moduli computed here and passed in, carried forms
    /// converted here and left after the loop.
    fn rolled_loop(
        &mut self,
        b: &mut Builder,
        m: &Mapped,
        id: ValueId,
        count: Size,
        body: &Func,
        args: &[ValueId],
    ) -> CgResult<Rewritten> {
        let plan = plan_loop(body);
        // Body parameter k is argument k - 1 (parameter 0 is the round's index).
        let outer = |k: usize| m.get(args[k - 1]);
        let mut new_args: Vec<ValueId> = Vec::with_capacity(args.len() + plan.hoisted.len());
        for (a, arg) in args.iter().enumerate() {
            new_args.push(match plan.slots.get(a).copied().flatten() {
                Some(km) => self.form_of(b, m.get(*arg), outer(km))?,
                None => m.get(*arg),
            });
        }
        let mut inner = body.clone();
        for &km in &plan.hoisted {
            new_args.push(self.r2(b, outer(km))?);
            let ty = body.params[km].ty.clone();
            inner.params.push(bigfuse_core::Param {
                name: format!("r2_{}", body.params[km].name),
                ty,
            });
        }
        let new_body = rebuild_with(&inner, Builder::lambda(), plan.inherited)?;
        let lp = b.push(Op::Loop {
            count,
            body: Box::new(new_body),
            args: new_args,
        })?;
        let moduli: Vec<Option<ValueId>> = plan.slots.iter().map(|s| s.map(outer)).collect();
        Ok(Rewritten::Value(match moduli.as_slice() {
            [Some(md)] => self.leave_form(b, lp, *md)?,
            [_] => lp,
            _ => {
                if moduli.iter().any(Option::is_some) {
                    self.loop_slots.insert(id, moduli);
                }
                lp
            }
        }))
    }

    /// The value of form `f` modulo `md` (a product by 1), its form remembered.
    fn leave_form(&mut self, b: &mut Builder, f: ValueId, md: ValueId) -> CgResult<ValueId> {
        let bits = width(b, md)?;
        let one = b.constant(Literal::Big(vec![1], Size::lit(bits)));
        let out = b.push(Op::BigMontMul(f, one, md))?;
        self.form.insert((out, md), f);
        Ok(out)
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
        // Refused past one thread's widest product, before anything is built.
        width(b, md)?;
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
        self.leave_form(b, f, md)
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
            agrees(&f, &r, bits, 3, 24, &mut next);
        }
    }

    /// `g` computes what `f` does (both over `operands` big integers, then the modulus) for
    /// moduli 1, 0, 10, 3, 2^bits - 1 and random odd and even ones.
    fn agrees(
        f: &Func,
        g: &Func,
        bits: u64,
        operands: usize,
        cases: u64,
        next: &mut impl FnMut(u64) -> BigUint,
    ) {
        for k in 0..cases {
            let m = match k {
                0 => BigUint::from(1u8),
                1 => BigUint::from(0u8),
                2 => BigUint::from(10u8),
                3 => BigUint::from(3u8),
                4 => (BigUint::from(1u8) << bits) - 1u8,
                _ => next(bits) | BigUint::from(k % 2),
            };
            let args: Vec<Value> = (0..operands)
                .map(|_| Value::Big(next(bits)))
                .chain([Value::Big(m.clone())])
                .collect();
            assert_eq!(
                eval(g, &args).unwrap(),
                eval(f, &args).unwrap(),
                "{bits} bits, m = {m}"
            );
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

    /// Square-and-multiply as a loop that stays a loop (`acc` and `sq` carried, `x`'s bits and
    /// the modulus captured): `R^2` is computed once before the loop, both carried values stay in
    /// Montgomery form across rounds (the `if` a select between forms), so a round is its two
    /// products; one conversion out after the loop.
    #[test]
    fn rolled_loops_carry_forms() {
        let bits = 128u64;
        let big = big(bits);
        let mut body = Builder::lambda();
        let i = body.param("i", Type::U32);
        let acc = body.param("acc", big.clone());
        let sq = body.param("sq", big.clone());
        let e = body.param("e", big.clone());
        let md = body.param("m", big.clone());
        let times = body.big_mod(BinOp::Mul, acc, sq, md).unwrap();
        let set = body.bit(e, i).unwrap();
        let acc2 = body.select(set, times, acc).unwrap();
        let sq2 = body.big_mod(BinOp::Mul, sq, sq, md).unwrap();
        let body = body.finish(&[acc2, sq2]).unwrap();
        let mut b = Builder::new("ladder", &[]);
        let x = b.param("x", big.clone());
        let e = b.param("e", big.clone());
        let md = b.param("m", big.clone());
        let one = b.constant(Literal::Big(vec![1], Size::lit(bits)));
        let start = b.big_mod(BinOp::Mul, one, one, md).unwrap();
        let lp = b
            .repeat(Size::lit(bits), body, &[start, x], &[e, md])
            .unwrap();
        let r = b.extract(lp, 0).unwrap();
        let f = b.finish(&[r]).unwrap();
        let g = residues(&f).unwrap();
        let body = g
            .nodes
            .iter()
            .find_map(|n| match &n.op {
                Op::Loop { body, .. } => Some(body.clone()),
                _ => None,
            })
            .expect("the loop stays");
        assert_eq!(
            count(&body, &|op| matches!(op, Op::BigRem(..))),
            0,
            "{}",
            print(&g)
        );
        assert_eq!(
            count(&body, &|op| matches!(op, Op::BigMontMul(..))),
            2,
            "{}",
            print(&g)
        );
        assert_eq!(count(&g, &|op| matches!(op, Op::BigRem(..))), 1);
        let mut next = values(0x2545f4914f6cdd1d);
        agrees(&f, &g, bits, 2, 12, &mut next);
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

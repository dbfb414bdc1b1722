//! Instruction selection: which hand-written machinery each node gets, decided once after fusion.
//!
//! The result is a table ([`Selection`]) that schedule, place and emit read, as emit reads the
//! [`crate::Placement`]: no later pass recognises a pattern or plans a product again. A product's
//! plan is made here and nowhere else, so a product that cannot be planned is one error here, not
//! a silent fallback in one pass and a panic in another.
//!
//! This module is also the one home of proofs that user-written code is an intrinsic
//! ([`bigfuse_core::ops::Intrinsic`]): carry operators by evaluation on the flag domain (here),
//! bounded by the possible-bits analysis ([`bits`]); user-written additions by canonical terms
//! ([`canon`], [`recognise`]). The addition proof rewrites the program and runs as a sub-pass of
//! fusion, before maps are merged: merging would fold the user's maps together and lose the
//! pattern the proof reads.
//!
//! What is selected:
//! - a scan that means the carry operator on 2-bit flag words (proved by evaluation on the flag
//!   domain, which a possible-bits analysis bounds, so a user-written operator qualifies too):
//!   warp ballots instead of a generic scan;
//! - an addition (subtraction) as lowered — `map add.partial ; map carry.flags ; scan.exclusive
//!   carry ; map add.apply`, its intermediates used nowhere else — as one PTX carry chain over each
//!   thread's limbs around the same ballot resolution, selected at its partial map;
//! - each product (`limb_mul`, `poly_mul`): its plan — the classical product's sizes, the NTT's
//!   primes and transform length, the polynomial transform's root and Montgomery constants;
//! - additions of NTT products of one plan that nothing else reads ([`NttSum`]): the products'
//!   pointwise steps summed before one inverse transform.

pub mod bits;
pub mod canon;
pub mod recognise;

use crate::error::{CgResult, CodegenError};
use crate::mul;
use crate::ntt::{NttLayout, NttPlan};
use crate::polymul::PolyPlan;
use crate::schedule::Schedule;
use bigfuse_core::ops::{self, Intrinsic};
use bigfuse_core::{Func, MulAlgo, Op, Type, ValueId};

/// A heavy operation, planned: it answers how many threads it wants, how much shared staging it
/// needs, and which constant table the kernel reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Product {
    /// Classical product of `in_len`-limb operands, the low `out_len` limbs.
    Classical { in_len: u64, out_len: u64 },
    /// Three-prime NTT product within one block.
    Ntt(NttPlan),
    /// Product of polynomials modulo a prime, one transform per block.
    Poly(PolyPlan),
}

impl Product {
    /// Threads per instance the product wants (`width`: digits per slice of a classical product).
    pub fn threads(&self, width: u32) -> u32 {
        match self {
            Product::Classical { out_len, .. } => mul::threads_for(*out_len, width),
            Product::Ntt(plan) => plan.threads(),
            Product::Poly(plan) => plan.threads(),
        }
    }

    /// The slices of a classical product among `sched`'s threads (`None` for the transforms).
    pub fn shape(&self, sched: &Schedule) -> Option<mul::MulShape> {
        match self {
            Product::Classical { in_len, out_len } => {
                Some(mul::shape(*in_len, *out_len, sched.threads_per_instance))
            }
            _ => None,
        }
    }

    /// Bytes of shared staging per block under `sched`.
    pub fn staging_bytes(&self, sched: &Schedule) -> u32 {
        let ipb = sched.instances_per_block as u64;
        let warps = sched.warps_per_instance() as u64;
        match self {
            // Operands always go through shared memory: every output digit reads every input digit.
            Product::Classical { .. } => {
                let shape = self.shape(sched).expect("a classical product has a shape");
                (mul::layout(&shape, ipb, warps).total * 4) as u32
            }
            Product::Ntt(plan) => (ntt_layout(plan, sched).total * 4) as u32,
            Product::Poly(plan) => (plan.shared_bytes() * ipb) as u32,
        }
    }

    /// The constant table (32-bit words) the kernel reads: the transforms' twiddles, laid out
    /// for the register passes of `sched`'s threads.
    pub fn table(&self, sched: &Schedule) -> Option<Vec<u32>> {
        match self {
            Product::Classical { .. } => None,
            Product::Ntt(plan) => Some(plan.twiddle_table(sched.threads_per_instance as u64)),
            Product::Poly(plan) => Some(plan.twiddle_table()),
        }
    }
}

/// An NTT product's buffers in its shared staging under `sched` (one home for the product's
/// emission, its staging size and what its slot holds).
pub fn ntt_layout(plan: &NttPlan, sched: &Schedule) -> NttLayout {
    // Leave room for the other steps' staging (a few words per warp).
    plan.layout(
        sched.instances_per_block as u64,
        sched.warps_per_instance() as u64,
        (sched.shared_limit as u64).saturating_sub(4096),
    )
}

/// A sum of NTT products of one plan — an addition whose terms are such products or such sums,
/// each read by nothing else: one product whose pointwise step adds every further pair's
/// transforms' product to the first's (the inverse transform is linear), so one inverse
/// transform, one CRT and one carry pass instead of one of each per product, and no carry
/// chains. `a b + c d` is a sum of two; `a b + c d + e f` of three. Exact: the products are at
/// most the plan's `NttPlan::sum_terms`, whose column sums stay below the CRT modulus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NttSum {
    /// The products, in program order.
    pub products: Vec<ValueId>,
    /// Their plan.
    pub plan: NttPlan,
    /// The last addition's partial map, where the sum is emitted: every product's operands are
    /// computed there.
    pub at: ValueId,
    /// The last addition's nodes (the sum is the value of its `apply`); emitted as a carry chain
    /// where the sum does not run as one product.
    pub chain: CarryChain,
    /// The nodes the sum's code computes besides `at`: its products, the inner additions' nodes
    /// and the last one's flags, scan and result.
    pub covers: Vec<ValueId>,
}

impl NttSum {
    /// Whether the sum runs as one product under `sched`: its third transform buffer takes the
    /// residues' room in shared memory ([`NttLayout::sum_buffer`]), and the residues go to the
    /// block's staging slot, which instances spanning blocks do not have. Where it does not, the
    /// products and the addition run as they would without the sum: each at its node.
    pub fn fuses(&self, sched: &Schedule) -> bool {
        sched.blocks_per_instance == 1
            && ntt_layout(&self.plan, sched)
                .sum_buffer(&self.plan)
                .is_some()
    }
}

/// One addition (subtraction) selected as a carry chain: the nodes of its lowered pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CarryChain {
    pub sub: bool,
    pub x: ValueId,
    pub y: ValueId,
    pub flags: ValueId,
    pub scan: ValueId,
    pub apply: ValueId,
}

/// The choice for one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// A scan with the carry operator on flag words: resolved with warp ballots.
    CarryScan,
    /// The partial map of an addition emitted whole as a carry chain (its other nodes follow it).
    CarryChain(CarryChain),
    Product(Product),
    /// At the partial map of the last addition of a sum of NTT products (which keep their own
    /// choices, as the inner additions keep theirs).
    NttSum(NttSum),
}

/// The choices for every node of one (fused) function, indexed by node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    choices: Vec<Option<Choice>>,
}

impl Selection {
    pub fn of(&self, id: ValueId) -> Option<&Choice> {
        self.choices.get(id.index()).and_then(|c| c.as_ref())
    }

    pub fn is_carry_scan(&self, id: ValueId) -> bool {
        matches!(self.of(id), Some(Choice::CarryScan))
    }

    /// The carry chain selected at this (partial map) node: also a sum of NTT products', which
    /// is emitted as a chain where it does not run as one product.
    pub fn carry_chain(&self, id: ValueId) -> Option<&CarryChain> {
        match self.of(id) {
            Some(Choice::CarryChain(c)) => Some(c),
            Some(Choice::NttSum(s)) => Some(&s.chain),
            _ => None,
        }
    }

    /// The sum of NTT products selected at this (partial map) node.
    pub fn ntt_sum(&self, id: ValueId) -> Option<&NttSum> {
        match self.of(id) {
            Some(Choice::NttSum(s)) => Some(s),
            _ => None,
        }
    }

    /// Every sum of NTT products selected.
    fn ntt_sums_all(&self) -> impl Iterator<Item = &NttSum> {
        self.choices.iter().filter_map(|c| match c {
            Some(Choice::NttSum(s)) => Some(s),
            _ => None,
        })
    }

    /// The sums of NTT products that run as one product under `sched` ([`NttSum::fuses`]), in
    /// program order.
    pub fn fused_ntt_sums<'a>(&'a self, sched: &'a Schedule) -> impl Iterator<Item = &'a NttSum> {
        self.choices.iter().filter_map(move |c| match c {
            Some(Choice::NttSum(s)) if s.fuses(sched) => Some(s),
            _ => None,
        })
    }

    /// The sum of NTT products selected at this node, where it runs as one product under
    /// `sched` ([`NttSum::fuses`]).
    pub fn fused_ntt_sum(&self, id: ValueId, sched: &Schedule) -> Option<&NttSum> {
        self.ntt_sum(id).filter(|s| s.fuses(sched))
    }

    /// Whether node `id` is computed by the code of a sum that runs as one product under `sched`,
    /// which is emitted at the sum's node ([`NttSum::covers`]).
    pub fn computed_by_fused_ntt_sum(&self, id: ValueId, sched: &Schedule) -> bool {
        self.fused_ntt_sums(sched).any(|s| s.covers.contains(&id))
    }

    pub fn product(&self, id: ValueId) -> Option<&Product> {
        match self.of(id) {
            Some(Choice::Product(p)) => Some(p),
            _ => None,
        }
    }

    /// Every product, in program order.
    pub fn products(&self) -> impl Iterator<Item = (ValueId, &Product)> {
        self.choices
            .iter()
            .enumerate()
            .filter_map(|(i, c)| match c {
                Some(Choice::Product(p)) => Some((ValueId(i as u32), p)),
                _ => None,
            })
    }

    /// The nodes whose constant tables the kernel takes as parameters, in parameter order, with
    /// the tables.
    pub fn tables(&self, sched: &Schedule) -> Vec<(ValueId, Vec<u32>)> {
        self.products()
            .filter_map(|(id, p)| p.table(sched).map(|t| (id, t)))
            .collect()
    }

    /// One line per choice, for `explain`.
    pub fn describe(&self, func: &Func) -> Vec<String> {
        func.ids()
            .filter_map(|id| {
                let what = match self.of(id)? {
                    Choice::CarryScan => "carry scan: warp ballots".to_string(),
                    Choice::CarryChain(c) => format!(
                        "{} {} {} .. {}: one carry chain",
                        c.x,
                        if c.sub { "-" } else { "+" },
                        c.y,
                        c.apply
                    ),
                    Choice::NttSum(s) => format!(
                        "{} .. {}: one NTT product, the {} products' transforms summed before one inverse transform",
                        s.products
                            .iter()
                            .map(|p| p.to_string())
                            .collect::<Vec<_>>()
                            .join(" + "),
                        s.chain.apply,
                        s.products.len()
                    ),
                    Choice::Product(Product::Classical { in_len, out_len }) => format!(
                        "classical product of {in_len}-limb operands, {out_len} limbs: slices in registers"
                    ),
                    Choice::Product(Product::Ntt(p)) => format!(
                        "NTT product: 2^{} points, {} primes, {} digits in, {} out",
                        p.log_n,
                        p.primes.len(),
                        p.digits_in,
                        p.digits_out
                    ),
                    Choice::Product(Product::Poly(p)) => format!(
                        "polynomial product: {} coefficients, 2^{} points modulo {}",
                        p.n, p.log_m, p.mont.p
                    ),
                };
                Some(format!("{id}: {what}"))
            })
            .collect()
    }
}

/// Whether a product of `in_limbs`-limb operands into `out_limbs` limbs has an exact NTT plan:
/// lowering asks before it chooses the NTT; the plan itself is made once, by [`select`].
pub fn ntt_fits(in_limbs: u64, out_limbs: u64) -> bool {
    crate::ntt::plan(in_limbs, out_limbs).is_ok()
}

/// Selects for every node of a concrete, fused function.
pub fn select(func: &Func) -> CgResult<Selection> {
    let mut choices = vec![None; func.nodes.len()];
    let mut masks = None;
    for id in func.ids() {
        let choice = match &func.node(id).op {
            Op::LimbMul {
                a, out_len, algo, ..
            } => {
                let in_len = array_len(func, *a, "a product's factor")?;
                let out_len = concrete(out_len.as_const(), "a product's length")?;
                Some(Choice::Product(match algo {
                    MulAlgo::Classical => Product::Classical { in_len, out_len },
                    MulAlgo::Ntt => Product::Ntt(crate::ntt::plan(in_len, out_len)?),
                }))
            }
            Op::PolyMul { a, modulus, .. } => {
                let n = array_len(func, *a, "a polynomial factor")?;
                let p = concrete(modulus.as_const(), "a polynomial product's modulus")?;
                Some(Choice::Product(Product::Poly(crate::polymul::plan(n, p)?)))
            }
            Op::Scan { .. } => {
                let masks = masks.get_or_insert_with(|| bits::analyse(func, None));
                is_carry_scan_with(func, id, masks).then_some(Choice::CarryScan)
            }
            _ => None,
        };
        choices[id.index()] = choice;
    }
    // Chains last: they need the carry scans selected above.
    let mut sel = Selection { choices };
    let uses = func.use_counts();
    for chain in carry_chains(func, &sel) {
        let at = partial_of(func, &chain);
        let choice = match ntt_sum(func, &sel, &uses, at, chain) {
            Some((sum, inner)) => {
                // An inner sum is part of this one now; alone it would be a carry chain.
                for s in inner {
                    sel.choices[s.at.index()] = Some(Choice::CarryChain(s.chain));
                }
                Choice::NttSum(sum)
            }
            None => Choice::CarryChain(chain),
        };
        sel.choices[at.index()] = Some(choice);
    }
    Ok(sel)
}

/// The addition `chain` (at partial map `at`) as a sum of NTT products ([`NttSum`]): each term
/// an NTT product or a sum already selected, read by nothing but the addition, all of one plan,
/// at most the plan's `NttPlan::sum_terms` products in all. Also returns the inner sums it
/// takes in.
fn ntt_sum(
    func: &Func,
    sel: &Selection,
    uses: &[u32],
    at: ValueId,
    chain: CarryChain,
) -> Option<(NttSum, Vec<NttSum>)> {
    if chain.sub || chain.x == chain.y {
        return None;
    }
    let alone = |v: ValueId| uses[v.index()] == 1 && !func.outputs.contains(&v);
    let same_length =
        func.ty(chain.x) == func.ty(chain.y) && func.ty(chain.x) == func.ty(chain.apply);
    if !same_length || !alone(chain.x) || !alone(chain.y) {
        return None;
    }
    let (x, y) = (sum_term(sel, chain.x)?, sum_term(sel, chain.y)?);
    if x.plan != y.plan || x.products.len() + y.products.len() > x.plan.sum_terms() {
        return None;
    }
    let mut products: Vec<ValueId> = x.products.into_iter().chain(y.products).collect();
    products.sort();
    let mut covers: Vec<ValueId> = x.covers.into_iter().chain(y.covers).collect();
    covers.extend([chain.flags, chain.scan, chain.apply]);
    Some((
        NttSum {
            products,
            plan: x.plan,
            at,
            chain,
            covers,
        },
        x.inner.into_iter().chain(y.inner).collect(),
    ))
}

/// A term of a sum of NTT products: a product, or a sum selected before.
struct SumTerm {
    products: Vec<ValueId>,
    plan: NttPlan,
    /// The nodes the sum's code computes for it.
    covers: Vec<ValueId>,
    /// The sum it was.
    inner: Option<NttSum>,
}

/// Value `v` as a term of a sum of NTT products: an NTT product, or the result of a sum.
fn sum_term(sel: &Selection, v: ValueId) -> Option<SumTerm> {
    if let Some(Product::Ntt(plan)) = sel.product(v) {
        return Some(SumTerm {
            products: vec![v],
            plan: plan.clone(),
            covers: vec![v],
            inner: None,
        });
    }
    let inner = sel.ntt_sums_all().find(|s| s.chain.apply == v)?;
    let mut covers = inner.covers.clone();
    covers.push(inner.at);
    Some(SumTerm {
        products: inner.products.clone(),
        plan: inner.plan.clone(),
        covers,
        inner: Some(inner.clone()),
    })
}

/// The partial map of a chain (the first node of its pattern).
fn partial_of(func: &Func, c: &CarryChain) -> ValueId {
    match &func.node(c.apply).op {
        Op::Map { args, .. } => args[0],
        _ => unreachable!("a chain's apply is a map"),
    }
}

/// The additions of `func` in their lowered pattern whose intermediate values have no other use,
/// so nothing else needs the per-limb flags.
fn carry_chains(func: &Func, sel: &Selection) -> Vec<CarryChain> {
    let uses = func.use_counts();
    let outputs = &func.outputs;
    let users = |v: ValueId| -> Vec<ValueId> {
        func.ids()
            .filter(|u| func.node(*u).op.args().contains(&v))
            .collect()
    };
    let intrinsic = |id: ValueId| match &func.node(id).op {
        Op::Map { f, args } => Intrinsic::of(f).map(|i| (i, args.as_slice())),
        _ => None,
    };
    let mut chains = Vec::new();
    for p in func.ids() {
        let Some((Intrinsic::LimbPartial { sub }, args)) = intrinsic(p) else {
            continue;
        };
        if args.len() != 2 || uses[p.index()] != 2 || outputs.contains(&p) {
            continue;
        }
        let (mut flags, mut apply) = (None, None);
        for c in users(p) {
            match intrinsic(c) {
                Some((Intrinsic::CarryFlags, a)) if a == [p] => flags = Some(c),
                Some((Intrinsic::ApplyCarry { sub: s }, a))
                    if s == sub && a.len() == 2 && a[0] == p =>
                {
                    apply = Some((c, a[1]))
                }
                _ => {}
            }
        }
        let (Some(flags), Some((apply, scan))) = (flags, apply) else {
            continue;
        };
        let is_scan = matches!(&func.node(scan).op, Op::Scan { input, exclusive: true, flags: None, .. } if *input == flags)
            && sel.is_carry_scan(scan);
        if !is_scan
            || uses[flags.index()] != 1
            || uses[scan.index()] != 1
            || outputs.contains(&flags)
            || outputs.contains(&scan)
        {
            continue;
        }
        chains.push(CarryChain {
            sub,
            x: args[0],
            y: args[1],
            flags,
            scan,
            apply,
        });
    }
    chains
}

fn concrete(v: Option<u64>, what: &str) -> CgResult<u64> {
    v.ok_or_else(|| {
        CodegenError::Unsupported(format!(
            "{what} is not a constant: specialize before instruction selection"
        ))
    })
}

fn array_len(func: &Func, v: ValueId, what: &str) -> CgResult<u64> {
    match func.ty(v) {
        Type::Array(_, len) => concrete(len.as_const(), what),
        other => Err(CodegenError::Unsupported(format!(
            "{what} is {other}, not an array"
        ))),
    }
}

/// Whether node `id` of `func` is a carry scan, which code generation resolves with warp ballots:
/// an unsegmented scan with identity 2 whose operator is the carry operator on flag words, i.e.
/// - the operator is `(u32, u32) -> u32` and equals [`ops::carry`] on every pair of `{0, 1, 2, 3}`,
/// - the scanned values provably lie in `{0, 1, 2, 3}` (possible bits within `0b11`).
///
/// Then every value the scan computes (inputs, identity, and results of the operator on such
/// values, which [`ops::carry`] keeps in `{0, .., 3}`) lies where the two operators agree, so the
/// scan equals the scan with [`ops::carry`], whatever the operator does elsewhere.
pub fn is_carry_scan(func: &Func, id: ValueId) -> bool {
    is_carry_scan_with(func, id, &bits::analyse(func, None))
}

fn is_carry_scan_with(func: &Func, id: ValueId, masks: &[Vec<u64>]) -> bool {
    let Op::Scan {
        op,
        init,
        input,
        flags: None,
        ..
    } = &func.node(id).op
    else {
        return false;
    };
    if *init != ops::carry_identity() || !is_carry_operator(op) {
        return false;
    }
    masks[input.index()].iter().all(|m| m & !0b11 == 0) && masks[input.index()].len() == 1
}

/// True when `op` is `(u32, u32) -> u32` and agrees with [`ops::carry`] on `{0, 1, 2, 3}`^2
/// (decided by evaluating both on the 16 pairs; remembered per operator).
pub fn is_carry_operator(op: &Func) -> bool {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static KNOWN: OnceLock<Mutex<HashMap<Func, bool>>> = OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    if let Some(v) = known.lock().ok().and_then(|k| k.get(op).copied()) {
        return v;
    }
    let v = agrees_with_carry(op);
    if let Ok(mut k) = known.lock() {
        k.insert(op.clone(), v);
    }
    v
}

fn agrees_with_carry(op: &Func) -> bool {
    use bigfuse_core::{apply_lambda, Value};
    let u32_ty = [Type::U32, Type::U32];
    if op.params.len() != 2
        || op.params.iter().zip(&u32_ty).any(|(p, t)| p.ty != *t)
        || op.output_types() != [Type::U32]
    {
        return false;
    }
    let carry = ops::carry();
    (0..4u32).all(|lo| {
        (0..4u32).all(|hi| {
            let args = [Value::U32(lo), Value::U32(hi)];
            match (apply_lambda(op, &args), apply_lambda(&carry, &args)) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{BinOp, Builder, Literal, Size};

    /// The selection lines of `body(a, b)` over two `bits`-bit values, its outputs `body`'s.
    fn selected(
        bits: u64,
        body: impl Fn(&mut Builder, ValueId, ValueId) -> Vec<ValueId>,
    ) -> Vec<String> {
        let mut b = Builder::new("k", &[]);
        let ty = Type::Big(Size::lit(bits));
        let (x, y) = (b.param("a", ty.clone()), b.param("b", ty));
        let outs = body(&mut b, x, y);
        let f = b.finish(&outs).unwrap();
        crate::compile(&f, &[], &crate::Target::h100(), &Default::default())
            .unwrap()
            .selection
    }

    fn sums(lines: &[String]) -> usize {
        lines
            .iter()
            .filter(|l| l.contains("transforms summed"))
            .count()
    }

    /// An addition of two NTT products read by nothing else is one sum; a subtraction, a
    /// product read elsewhere, a doubled product and classical products are not.
    #[test]
    fn sums_of_ntt_products_are_selected_where_nothing_else_reads_the_terms() {
        assert_eq!(
            sums(&selected(65536, |b, x, y| vec![crate::per_thread::poly(
                b, x, y
            )])),
            1
        );
        let two = |sub: bool, also_out: bool| {
            move |b: &mut Builder, x: ValueId, y: ValueId| {
                let p = b.mul(x, y).unwrap();
                let q = b.mul(x, x).unwrap();
                let r = if sub { b.sub(p, q) } else { b.add(p, q) }.unwrap();
                if also_out {
                    vec![r, p]
                } else {
                    vec![r]
                }
            }
        };
        assert_eq!(sums(&selected(65536, two(false, false))), 1);
        assert_eq!(sums(&selected(65536, two(true, false))), 0);
        assert_eq!(sums(&selected(65536, two(false, true))), 0);
        let doubled = |b: &mut Builder, x: ValueId, y: ValueId| {
            let p = b.mul(x, y).unwrap();
            vec![b.add(p, p).unwrap()]
        };
        assert_eq!(sums(&selected(65536, doubled)), 0);
        assert_eq!(sums(&selected(4096, two(false, false))), 0);
    }

    /// Additions of sums and products of one plan make one sum of all the products: the inner
    /// additions are covered by it (and stay carry chains where it does not fuse).
    #[test]
    fn sums_of_sums_are_one_sum() {
        let four = |b: &mut Builder, x: ValueId, y: ValueId| {
            let p = b.mul(x, y).unwrap();
            let q = b.mul(x, x).unwrap();
            let r = b.mul(y, y).unwrap();
            let d = b.sub(y, x).unwrap();
            let s = b.mul(d, y).unwrap();
            let pq = b.add(p, q).unwrap();
            let rs = b.add(r, s).unwrap();
            vec![b.add(pq, rs).unwrap()]
        };
        let lines = selected(65536, four);
        assert_eq!(sums(&lines), 1, "{lines:#?}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("the 4 products' transforms summed")),
            "{lines:#?}"
        );
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.contains(" + ") && l.contains("one carry chain"))
                .count(),
            2,
            "the inner additions, as chains: {lines:#?}"
        );
    }

    /// `((hi | ((hi >> 1) & lo)) & 1) | (lo & hi & 2)`, with its own constants; `tweak` changes the
    /// result on (lo, hi) = (3, 1) only.
    fn user_carry(tweak: bool) -> Func {
        let mut b = Builder::lambda();
        let lo = b.param("lo", Type::U32);
        let hi = b.param("hi", Type::U32);
        let one = b.u32(1);
        let sh = b.binary(BinOp::Shr, hi, one).unwrap();
        let t = b.and(sh, lo).unwrap();
        let g = b.or(hi, t).unwrap();
        let one = b.u32(1);
        let g = b.and(g, one).unwrap();
        let p = b.and(lo, hi).unwrap();
        let two = b.u32(2);
        let p = b.and(p, two).unwrap();
        let mut r = b.or(g, p).unwrap();
        if tweak {
            // + 4 * (lo == 3 && hi == 1)
            let three = b.u32(3);
            let one = b.u32(1);
            let l3 = b.eq(lo, three).unwrap();
            let h1 = b.eq(hi, one).unwrap();
            let both = b.and(l3, h1).unwrap();
            let four = b.u32(4);
            let zero = b.u32(0);
            let extra = b.select(both, four, zero).unwrap();
            r = b.or(r, extra).unwrap();
        }
        b.finish(&[r]).unwrap()
    }

    /// A scan of `mask & x` over a u32 array parameter with the given operator and identity.
    fn program(op: Func, init: u32, mask: u32) -> (Func, ValueId) {
        let mut b = Builder::new("p", &[]);
        let xs = b.param("xs", Type::array(Type::U32, Size::lit(8)));
        let m = b.u32(mask);
        let masked = b.map(
            {
                let mut l = Builder::lambda();
                let x = l.param("x", Type::U32);
                let m = l.param("m", Type::U32);
                let r = l.and(x, m).unwrap();
                l.finish(&[r]).unwrap()
            },
            &[xs, m],
        );
        let masked = masked.unwrap();
        let s = b.scan(op, Literal::U32(init), true, masked, None).unwrap();
        (b.finish(&[s]).unwrap(), s)
    }

    #[test]
    fn carry_scans_are_recognised_by_meaning() {
        let (f, s) = program(ops::carry(), 2, 3);
        assert!(is_carry_scan(&f, s));
        assert!(select(&f).unwrap().is_carry_scan(s));
        let (f, s) = program(user_carry(false), 2, 3);
        assert_ne!(user_carry(false), ops::carry());
        assert!(is_carry_scan(&f, s), "the user's operator");
        assert!(select(&f).unwrap().is_carry_scan(s));
        // Inclusive scans too.
        let mut g = f.clone();
        if let Op::Scan { exclusive, .. } = &mut g.nodes[s.index()].op {
            *exclusive = false;
        }
        assert!(is_carry_scan(&g, s));
    }

    #[test]
    fn near_misses_are_refused() {
        let (f, s) = program(user_carry(true), 2, 3);
        assert!(!is_carry_operator(&user_carry(true)));
        assert!(!is_carry_scan(&f, s), "differs on one pair");
        assert!(!select(&f).unwrap().is_carry_scan(s));
        let (f, s) = program(user_carry(false), 2, 7);
        assert!(!is_carry_scan(&f, s), "inputs may have bit 2");
        let (f, s) = program(user_carry(false), 0, 3);
        assert!(!is_carry_scan(&f, s), "identity 0");
        let (f, s) = program(ops::carry(), 1, 3);
        assert!(!is_carry_scan(&f, s), "identity 1");
        // Not a scan at all.
        assert!(!is_carry_scan(&f, ValueId(0)));
    }

    /// A product of two `limbs`-limb operands with the given algorithm.
    fn product(limbs: u64, algo: MulAlgo) -> (Func, ValueId) {
        let arr = Type::array(Type::U64, Size::lit(limbs));
        let mut b = Builder::new("p", &[]);
        let x = b.param("x", arr.clone());
        let y = b.param("y", arr);
        let m = b.limb_mul(x, y, Size::lit(limbs), algo).unwrap();
        (b.finish(&[m]).unwrap(), m)
    }

    #[test]
    fn products_are_planned_once_and_refused_with_one_error() {
        let (f, m) = product(64, MulAlgo::Classical);
        let sel = select(&f).unwrap();
        assert_eq!(
            sel.product(m),
            Some(&Product::Classical {
                in_len: 64,
                out_len: 64
            })
        );
        let sched = |f: &Func, sel: &Selection| {
            crate::schedule::schedule(f, sel, &crate::target::Target::h100(), &Default::default())
                .unwrap()
        };
        assert!(sel.tables(&sched(&f, &sel)).is_empty());
        let (f, m) = product(512, MulAlgo::Ntt);
        let sel = select(&f).unwrap();
        let Some(Product::Ntt(plan)) = sel.product(m) else {
            panic!("an NTT plan: {sel:?}");
        };
        assert_eq!(plan, &crate::ntt::plan(512, 512).unwrap());
        let s = sched(&f, &sel);
        assert_eq!(
            sel.tables(&s),
            vec![(m, plan.twiddle_table(s.threads_per_instance as u64))]
        );
        // Beyond what the primes allow: the planner's error, from selection.
        let (f, _) = product(1 << 22, MulAlgo::Ntt);
        let err = select(&f).unwrap_err().to_string();
        assert!(err.contains("NTT of 2^"), "{err}");
    }
}

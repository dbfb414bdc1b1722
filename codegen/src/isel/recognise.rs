//! Recognition of additions and subtractions that users write themselves:
//!
//! ```text
//! flags   = map(F, ..)             F(x, y) = flags of the limb sum (difference) x ± y
//! carries = scan.exclusive(op, 2, flags)      op: a carry scan (place::is_carry_scan)
//! r       = map(R, .., carries, ..)           R = sum (difference) + (carry & 1)
//! ```
//! becomes the lowered built-in pattern `map(limb_partial) ; map(flags) ; scan ; map(apply_carry)`,
//! which code generation selects as PTX carry chains.
//!
//! The rewrite is taken only when it provably keeps every value: `F` and `R`, written as canonical
//! terms (isel::canon: sharing, constants, commutative operands, tuples, casts) over the
//! elements of the arrays they read, equal the built-in lambdas' terms; the scan keeps its
//! operator, identity and direction and reads the same flag values.

use super::canon::{Canon, TermId};
use crate::error::{CgResult, CodegenError};
use bigfuse_core::ops::Intrinsic;
use bigfuse_core::rewrite::{same_output, Rewritten};
use bigfuse_core::{rewrite, Builder, Func, Op, Type, ValueId};

/// One recognised addition (subtraction).
struct Found {
    sub: bool,
    x: ValueId,
    y: ValueId,
    scan: ValueId,
    apply: ValueId,
}

/// Rewrites every recognised user addition; returns the program and one note per rewrite.
pub fn user_additions(func: &Func) -> CgResult<(Func, Vec<String>)> {
    let mut f = func.clone();
    let mut notes = Vec::new();
    // Each rewrite adds nodes after the old ones; bounded by the number of scans.
    for _ in 0..func.nodes.len() {
        let Some(found) = find_one(&f) else {
            break;
        };
        notes.push(format!(
            "{} is the {} {} {} written out: rewritten as the built-in pattern (selected as carry chains)",
            found.apply,
            found.x,
            if found.sub { "-" } else { "+" },
            found.y
        ));
        f = rewrite_found(&f, &found)?;
    }
    Ok((f, notes))
}

/// The leaves of element `i` of `v` (an array) or of `v` itself (a broadcast scalar) as variables.
fn vars(k: &mut Canon, func: &Func, v: ValueId) -> Vec<TermId> {
    let ty = match func.ty(v) {
        Type::Array(e, _) => (**e).clone(),
        t => t.clone(),
    };
    ty.leaves()
        .into_iter()
        .enumerate()
        .map(|(leaf, t)| k.var(((v.0 as u64) << 16) | leaf as u64, t))
        .collect()
}

/// Terms of the elements of `v`: a map's lambda applied to its arguments' variables, or `v`'s own.
fn element_terms(k: &mut Canon, func: &Func, v: ValueId) -> Vec<TermId> {
    if let Op::Map { f, args } = &func.node(v).op {
        let params: Vec<Vec<TermId>> = args.iter().map(|a| vars(k, func, *a)).collect();
        if let Some(t) = k.lambda(f, &params) {
            return t;
        }
    }
    vars(k, func, v)
}

fn find_one(func: &Func) -> Option<Found> {
    let uses = func.use_counts();
    for scan in func.ids() {
        let Op::Scan {
            input,
            exclusive: true,
            flags: None,
            ..
        } = &func.node(scan).op
        else {
            continue;
        };
        if uses[scan.index()] != 1 || func.outputs.contains(&scan) {
            continue;
        }
        let Op::Map { f: ff, args: fargs } = &func.node(*input).op else {
            continue;
        };
        if Intrinsic::of(ff).is_some() || !super::is_carry_scan(func, scan) {
            continue;
        }
        let Some(apply) = func.ids().find(|u| func.node(*u).op.args().contains(&scan)) else {
            continue;
        };
        let Op::Map { f: rf, args: rargs } = &func.node(apply).op else {
            continue;
        };
        let len = func.ty(scan).clone();
        let Type::Array(_, n) = len else { continue };
        let candidates: Vec<ValueId> = fargs
            .iter()
            .copied()
            .filter(|a| *func.ty(*a) == Type::array(Type::U64, n))
            .collect();
        let mut k = Canon::new();
        let fparams: Vec<Vec<TermId>> = fargs.iter().map(|a| vars(&mut k, func, *a)).collect();
        let Some(flag_terms) = k.lambda(ff, &fparams) else {
            continue;
        };
        let rparams: Vec<Vec<TermId>> = rargs
            .iter()
            .map(|a| {
                if *a == scan {
                    vars(&mut k, func, *a)
                } else {
                    element_terms(&mut k, func, *a)
                }
            })
            .collect();
        let Some(r_terms) = k.lambda(rf, &rparams) else {
            continue;
        };
        let carry_var = vars(&mut k, func, scan);
        for &x in &candidates {
            for &y in &candidates {
                for sub in [false, true] {
                    let (vx, vy) = (vars(&mut k, func, x), vars(&mut k, func, y));
                    let Some(partial) = k.lambda(Intrinsic::LimbPartial { sub }.func(), &[vx, vy])
                    else {
                        continue;
                    };
                    if flag_terms != partial[1..] {
                        continue;
                    }
                    let want = k.lambda(
                        Intrinsic::ApplyCarry { sub }.func(),
                        &[partial, carry_var.clone()],
                    );
                    if want.as_ref() == Some(&r_terms) {
                        return Some(Found {
                            sub,
                            x,
                            y,
                            scan,
                            apply,
                        });
                    }
                }
            }
        }
    }
    None
}

/// Replaces the found consumer by the built-in pattern over `x`, `y` (the old flags, scan and sum
/// maps are left for dead-code removal).
fn rewrite_found(func: &Func, g: &Found) -> CgResult<Func> {
    let Op::Scan {
        op,
        init,
        exclusive,
        ..
    } = &func.node(g.scan).op
    else {
        unreachable!("found at a scan")
    };
    rewrite(
        func,
        Builder::like(func),
        Type::clone,
        |b, m, id, _| {
            if id != g.apply {
                return Ok::<_, CodegenError>(Rewritten::Copy);
            }
            let sub = g.sub;
            let partial = b.map(
                Intrinsic::LimbPartial { sub }.func().clone(),
                &[m.get(g.x), m.get(g.y)],
            )?;
            let flags = b.map(Intrinsic::CarryFlags.func().clone(), &[partial])?;
            let carries = b.scan((**op).clone(), init.clone(), *exclusive, flags, None)?;
            Ok(Rewritten::Value(b.map(
                Intrinsic::ApplyCarry { sub }.func().clone(),
                &[partial, carries],
            )?))
        },
        same_output,
    )
}

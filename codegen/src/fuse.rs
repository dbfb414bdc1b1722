//! Fusion: removes dead code, merges chains of element-wise maps into single maps (producer-consumer
//! fusion), and groups the program into kernels.
//!
//! Every value of a program is per-instance and every cross-thread step of a scan or reduction stays
//! inside the block that holds the instance, so a program that fits one block per instance is one
//! kernel: its intermediates never leave registers.

use crate::error::{CgResult, CodegenError};
use crate::passes::Stages;
use bigfuse_core::ops::Intrinsic;
use bigfuse_core::rewrite::{same_output, Rewritten};
use bigfuse_core::{rewrite, validate, Builder, Func, Op, Type, ValueId};

/// A kernel: a contiguous range of the fused function's nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelGroup {
    pub nodes: std::ops::Range<usize>,
    pub reason: String,
}

#[derive(Clone, Debug)]
pub struct Fused {
    pub func: Func,
    pub kernels: Vec<KernelGroup>,
    /// What fusion did, one line each, for `explain`.
    pub notes: Vec<String>,
}

pub fn fuse(func: &Func) -> CgResult<Fused> {
    fuse_recorded(func, &mut Stages::default())
}

/// [`fuse`], recording the IR after each of its sub-passes (dead_code, unzip, recognise,
/// merge_maps) in `stages`.
pub fn fuse_recorded(func: &Func, stages: &mut Stages) -> CgResult<Fused> {
    let mut notes = Vec::new();
    let mut f = dead_code(func)?;
    stages.record("dead_code", &f);
    let (unzipped, n) = unzip_map_args(&f)?;
    if n > 0 {
        notes.push(format!(
            "{n} map(s) read the arrays of a zip directly (the tuple is built in the lambda)"
        ));
        f = dead_code(&unzipped)?;
    }
    stages.record("unzip", &f);
    let (canonical, found) = crate::isel::recognise::user_additions(&f)?;
    if !found.is_empty() {
        notes.extend(found);
        f = dead_code(&canonical)?;
    }
    stages.record("recognise", &f);
    let before = f.nodes.len();
    let mut merged = 0;
    while let Some(next) = fuse_one_map_chain(&f)? {
        f = next;
        merged += 1;
    }
    if merged > 0 {
        notes.push(format!(
            "merged {merged} element-wise map(s) into their consumers ({} -> {} nodes)",
            before,
            f.nodes.len()
        ));
    }
    f = dead_code(&f)?;
    stages.record("merge_maps", &f);
    if cfg!(debug_assertions) {
        validate(&f)?;
    }
    let kernels = vec![KernelGroup {
        nodes: 0..f.nodes.len(),
        reason: "one kernel: every value is per instance and every cross-thread step stays in the instance's block"
            .into(),
    }];
    Ok(Fused {
        func: f,
        kernels,
        notes,
    })
}

/// `op` with `pass` applied to the lambda or loop body it carries, where it carries one.
pub(crate) fn with_bodies(op: &Op, pass: fn(&Func) -> CgResult<Func>) -> CgResult<Option<Op>> {
    let mut op = op.clone();
    let bodies = op.bodies_mut();
    if bodies.is_empty() {
        return Ok(None);
    }
    for body in bodies {
        *body = pass(body)?;
    }
    Ok(Some(op))
}

/// Drops nodes that no output depends on (parameters always stay: they are the signature), in
/// lambdas and loop bodies too: scalarize leaves there the limbs no one reads (a root's above a
/// cast narrower), which would otherwise hide that a value has one reader
/// (`crate::place::written_in_place`).
pub fn dead_code(func: &Func) -> CgResult<Func> {
    let mut live = vec![false; func.nodes.len()];
    for o in &func.outputs {
        live[o.index()] = true;
    }
    for i in (0..func.nodes.len()).rev() {
        if matches!(func.nodes[i].op, Op::Param(_)) {
            live[i] = true;
        }
        if live[i] {
            for a in func.nodes[i].op.args() {
                live[a.index()] = true;
            }
        }
    }
    rewrite(
        func,
        Builder::like(func),
        Type::clone,
        |b, mapped, id, node| {
            if !live[id.index()] {
                return Ok::<_, CodegenError>(Rewritten::Drop);
            }
            // A built-in lambda is known by its exact text (isel selects carry chains by it).
            if node
                .op
                .lambdas()
                .into_iter()
                .any(|l| Intrinsic::of(l).is_some())
            {
                return Ok(Rewritten::Copy);
            }
            Ok(match with_bodies(&node.op, dead_code)? {
                Some(op) => Rewritten::Value(b.copy(&op, &node.ty, |v| mapped.get(v))?),
                None => Rewritten::Copy,
            })
        },
        same_output,
    )
}

/// Rewrites `map(f, .., zip(xs..), ..)` into `map(f', .., xs.., ..)`, where `f'` builds the tuple
/// itself: the same values (a zip costs nothing in registers either way), but the map now reads
/// its arrays directly, so it fuses and matches like any other. Returns the count rewritten.
pub fn unzip_map_args(func: &Func) -> CgResult<(Func, usize)> {
    let mut count = 0;
    let out = rewrite(
        func,
        Builder::like(func),
        Type::clone,
        |b, m, _, node| {
            let lookup = |v: ValueId| m.get(v);
            let Op::Map { f, args } = &node.op else {
                return Ok::<_, CodegenError>(Rewritten::Copy);
            };
            let zip_of = |a: &ValueId| match &func.node(*a).op {
                Op::Zip(xs)
                    if xs
                        .iter()
                        .all(|x| matches!(func.ty(*x), Type::Array(e, _) if e.is_scalar())) =>
                {
                    Some(xs.clone())
                }
                _ => None,
            };
            if !args.iter().any(|a| zip_of(a).is_some()) {
                return Ok(Rewritten::Copy);
            }
            let build = || -> CgResult<(Func, Vec<ValueId>)> {
                let mut l = Builder::lambda();
                let mut new_args = Vec::new();
                let mut inner = Vec::new();
                for (k, a) in args.iter().enumerate() {
                    match zip_of(a) {
                        Some(xs) => {
                            let parts: Vec<ValueId> = xs
                                .iter()
                                .enumerate()
                                .map(|(j, x)| l.param(&format!("a{k}_{j}"), elem_type(func.ty(*x))))
                                .collect();
                            inner.push(l.tuple(&parts)?);
                            new_args.extend(xs.iter().map(|x| lookup(*x)));
                        }
                        None => {
                            inner.push(l.param(&format!("a{k}"), elem_type(func.ty(*a))));
                            new_args.push(lookup(*a));
                        }
                    }
                }
                let r = l.inline(f, &inner)?;
                Ok((l.finish(&[r])?, new_args))
            };
            match build() {
                Ok((f, args)) => {
                    count += 1;
                    Ok(Rewritten::Value(b.push(Op::Map {
                        f: Box::new(f),
                        args,
                    })?))
                }
                Err(_) => Ok(Rewritten::Copy),
            }
        },
        same_output,
    )?;
    Ok((out, count))
}

/// Finds one map whose every use is one consumer map and merges it into that consumer.
fn fuse_one_map_chain(func: &Func) -> CgResult<Option<Func>> {
    let uses = func.use_counts();
    let outputs: Vec<usize> = func.outputs.iter().map(|o| o.index()).collect();
    for (ci, consumer) in func.nodes.iter().enumerate() {
        let Op::Map { args: cargs, f: cf } = &consumer.op else {
            continue;
        };
        // Maps of the addition pattern stay as they are: code generation selects them as a whole.
        if Intrinsic::of(cf).is_some() {
            continue;
        }
        for a in cargs {
            let pi = a.index();
            let Op::Map { f: pf, .. } = &func.nodes[pi].op else {
                continue;
            };
            if Intrinsic::of(pf).is_some() {
                continue;
            }
            let in_consumer = cargs.iter().filter(|x| x.index() == pi).count() as u32;
            if uses[pi] != in_consumer || outputs.contains(&pi) {
                continue;
            }
            return Ok(Some(merge(func, pi, ci)?));
        }
    }
    Ok(None)
}

fn elem_type(t: &Type) -> Type {
    match t {
        Type::Array(e, _) => (**e).clone(),
        other => other.clone(),
    }
}

fn merge(func: &Func, pi: usize, ci: usize) -> CgResult<Func> {
    let Op::Map { f: pf, args: pargs } = &func.nodes[pi].op else {
        unreachable!()
    };
    let Op::Map { f: cf, args: cargs } = &func.nodes[ci].op else {
        unreachable!()
    };
    let mut args: Vec<ValueId> = Vec::new();
    for a in cargs.iter().filter(|a| a.index() != pi).chain(pargs.iter()) {
        if !args.contains(a) {
            args.push(*a);
        }
    }
    let mut l = Builder::lambda();
    let params: Vec<ValueId> = args
        .iter()
        .enumerate()
        .map(|(k, a)| l.param(&format!("a{k}"), elem_type(func.ty(*a))))
        .collect();
    let slot = |v: &ValueId| params[args.iter().position(|a| a == v).unwrap()];
    let pin: Vec<ValueId> = pargs.iter().map(slot).collect();
    let produced = l.inline(pf, &pin)?;
    let cin: Vec<ValueId> = cargs
        .iter()
        .map(|a| if a.index() == pi { produced } else { slot(a) })
        .collect();
    let r = l.inline(cf, &cin)?;
    let merged = l.finish(&[r])?;
    rewrite(
        func,
        Builder::like(func),
        Type::clone,
        |b, m, id, _| {
            Ok::<_, CodegenError>(if id.index() == pi {
                Rewritten::Drop
            } else if id.index() == ci {
                Rewritten::Value(b.push(Op::Map {
                    f: Box::new(merged.clone()),
                    args: args.iter().map(|a| m.get(*a)).collect(),
                })?)
            } else {
                Rewritten::Copy
            })
        },
        same_output,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::lower;
    use bigfuse_core::{eval, specialize, Size, Value};
    use num_bigint::BigUint;

    #[test]
    fn fusion_preserves_meaning_and_merges_maps() {
        // r = select(a < b, select(a == b, a, b + a), a - b): the inner select merges into the
        // outer one; the additions' maps stay (code generation selects them as carry chains).
        let mut b = Builder::new("f", &["BITS"]);
        let t = Type::Big(Size::param(0));
        let x = b.param("a", t.clone());
        let y = b.param("b", t);
        let c = b.lt(x, y).unwrap();
        let e = b.eq(x, y).unwrap();
        let s = b.add(y, x).unwrap();
        let inner = b.select(e, x, s).unwrap();
        let d = b.sub(x, y).unwrap();
        let r = b.select(c, inner, d).unwrap();
        let f = specialize(&b.finish(&[r]).unwrap(), &[128]).unwrap();
        let l = lower(&f).unwrap();
        let fused = fuse(&l).unwrap();
        assert!(fused.func.nodes.len() < l.nodes.len());
        assert!(!fused.notes.is_empty());
        for (a, c) in [(3u64, 5u64), (5, 3), (u64::MAX, 1)] {
            let inputs = [
                Value::Big(BigUint::from(a) << 64u32),
                Value::Big(BigUint::from(c)),
            ];
            assert_eq!(
                eval(&fused.func, &inputs).unwrap(),
                eval(&f, &inputs).unwrap()
            );
        }
    }
}

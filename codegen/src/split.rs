//! Splitting: when a whole program does not fit one kernel (registers, shared memory, threads),
//! cut the specialized program into parts, each compiled as its own kernel; values that cross a
//! cut go through global memory. Cuts are made by halving the node range until every part fits.
//! A strategy of [`crate::plan`].

use crate::error::{CgResult, CodegenError};
use crate::plan::{Part, Plan, Source};
use crate::{compile, Compiled, Hints, Target};
use bigfuse_core::{specialize, Builder, Func, Op, ValueId};

pub(crate) fn split(
    func: &Func,
    sizes: &[u64],
    target: &Target,
    hints: &Hints,
    why: String,
) -> CgResult<Plan> {
    let concrete = specialize(func, sizes)?;
    // The nodes that do work (parameters are arguments; constants are recreated where used).
    let work: Vec<usize> = (0..concrete.nodes.len())
        .filter(|&i| !matches!(concrete.nodes[i].op, Op::Param(_) | Op::Const(_)))
        .collect();
    let mut cuts = Vec::new();
    cut(&concrete, &work, target, hints, &mut cuts)?;
    let size_names: Vec<String> = func
        .size_params
        .iter()
        .zip(sizes)
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    let mut notes = vec![format!(
        "`{}` ({}) does not fit one kernel: {why}",
        func.name,
        size_names.join(", ")
    )];
    // Wire the parts: every value a later part (or the caller) needs gets a buffer.
    let mut buffer_of: std::collections::HashMap<ValueId, usize> = Default::default();
    let mut buffers = Vec::new();
    let mut parts = Vec::new();
    for (part_func, inputs, outputs, compiled) in cuts {
        let inputs = inputs
            .iter()
            .map(|v| match concrete.node(*v).op {
                Op::Param(i) => Source::Arg(i as usize),
                _ => Source::Buffer(buffer_of[v]),
            })
            .collect();
        let outs = outputs
            .iter()
            .map(|v| {
                let b = buffers.len();
                buffers.push(concrete.ty(*v).clone());
                buffer_of.insert(*v, b);
                b
            })
            .collect();
        parts.push(Part {
            compiled,
            inputs,
            outputs: outs,
            func: part_func,
            instances: 1,
        });
    }
    let results = concrete
        .outputs
        .iter()
        .map(|o| buffer_of.get(o).copied())
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            CodegenError::Unsupported("a result of a split program has no buffer".into())
        })?;
    notes.push(format!(
        "split into {} kernels by halving; intermediates cross kernels in global memory",
        parts.len()
    ));
    Ok(Plan {
        parts,
        buffers,
        results,
        notes,
    })
}

/// A part as `cut` finds it: its function, inputs and outputs (values of the whole program), and
/// its compiled kernel.
type Cut = (Func, Vec<ValueId>, Vec<ValueId>, Compiled);

/// Halves `nodes` until each half compiles; appends the parts in order, compiled once.
fn cut(
    concrete: &Func,
    nodes: &[usize],
    target: &Target,
    hints: &Hints,
    out: &mut Vec<Cut>,
) -> CgResult<()> {
    // Whatever comes after this range may read its values: they are its outputs.
    let end = nodes.last().map_or(0, |&i| i + 1);
    let later: Vec<usize> = (end..concrete.nodes.len()).collect();
    let last = end >= concrete.nodes.len()
        || (end..concrete.nodes.len())
            .all(|i| matches!(concrete.nodes[i].op, Op::Param(_) | Op::Const(_)));
    let (f, inputs, outputs) = build_part(concrete, nodes, &later, out.len(), last)?;
    match compile(&f, &[], target, hints) {
        Ok(compiled) => {
            out.push((f, inputs, outputs, compiled));
            Ok(())
        }
        Err(CodegenError::TooBig(why)) if nodes.len() <= 1 => Err(CodegenError::TooBig(format!(
            "even one operation alone does not fit a kernel: {why}"
        ))),
        Err(CodegenError::TooBig(_)) => {
            let mid = nodes.len() / 2;
            cut(concrete, &nodes[..mid], target, hints, out)?;
            cut(concrete, &nodes[mid..], target, hints, out)
        }
        Err(e) => Err(e),
    }
}

/// The part computing `nodes` of `concrete`: its function, its inputs (values defined outside it,
/// in parameter order) and its outputs (values used by `later` nodes or returned by the program;
/// with `last`, also every program result not computed by an earlier part).
fn build_part(
    concrete: &Func,
    nodes: &[usize],
    later: &[usize],
    index: usize,
    last: bool,
) -> CgResult<(Func, Vec<ValueId>, Vec<ValueId>)> {
    let inside: std::collections::HashSet<usize> = nodes.iter().copied().collect();
    let mut b = Builder::new(&format!("{}_part{index}", concrete.name), &[]);
    let mut map: std::collections::HashMap<ValueId, ValueId> = Default::default();
    let mut inputs = Vec::new();
    // Inputs first (parameter order = first use), then the nodes.
    for &i in nodes {
        for a in concrete.nodes[i].op.args() {
            if inside.contains(&a.index()) || map.contains_key(&a) {
                continue;
            }
            if let Op::Const(l) = &concrete.node(a).op {
                let c = b.constant(l.clone());
                map.insert(a, c);
                continue;
            }
            let name = match concrete.node(a).op {
                Op::Param(p) => concrete.params[p as usize].name.clone(),
                _ => format!("v{}", a.0),
            };
            let p = b.param(&name, concrete.ty(a).clone());
            map.insert(a, p);
            inputs.push(a);
        }
    }
    for &i in nodes {
        let node = &concrete.nodes[i];
        let v = b.copy(&node.op, &node.ty, |v| map[&v])?;
        map.insert(ValueId(i as u32), v);
    }
    // Outputs: what later parts read, and the program's results computed here.
    let mut outputs: Vec<ValueId> = Vec::new();
    let add = |v: ValueId, outputs: &mut Vec<ValueId>| {
        if !outputs.contains(&v) {
            outputs.push(v);
        }
    };
    for &i in nodes {
        let v = ValueId(i as u32);
        let read_later = later
            .iter()
            .any(|&j| concrete.nodes[j].op.args().contains(&v));
        if read_later || concrete.outputs.contains(&v) {
            add(v, &mut outputs);
        }
    }
    if last {
        // Results that are arguments or constants pass through the last part.
        for o in &concrete.outputs {
            if !inside.contains(&o.index()) && !map.contains_key(o) {
                let name = match concrete.node(*o).op {
                    Op::Param(p) => concrete.params[p as usize].name.clone(),
                    _ => format!("v{}", o.0),
                };
                let p = match &concrete.node(*o).op {
                    Op::Const(l) => b.constant(l.clone()),
                    _ => {
                        inputs.push(*o);
                        b.param(&name, concrete.ty(*o).clone())
                    }
                };
                map.insert(*o, p);
            }
            if matches!(concrete.node(*o).op, Op::Param(_)) {
                add(*o, &mut outputs);
            }
        }
    }
    if outputs.is_empty() {
        return Err(CodegenError::Unsupported(format!(
            "part {index} of `{}` computes nothing that is used",
            concrete.name
        )));
    }
    let outs: Vec<ValueId> = outputs.iter().map(|v| map[v]).collect();
    Ok((b.finish(&outs)?, inputs, outputs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::compile_plan;
    use crate::plan::testing::run_plan;
    use bigfuse_core::{eval, Size, Type, Value};
    use num_bigint::BigUint;

    /// 40 values of U<BITS> live at once: too many registers for one kernel at large sizes.
    fn crowded() -> Func {
        let mut b = Builder::new("crowded", &["BITS"]);
        let t = Type::Big(Size::param(0));
        let x = b.param("a", t.clone());
        let y = b.param("b", t);
        let mut vals = vec![x, y];
        for i in 0..40 {
            let (p, q) = (vals[i], vals[i + 1]);
            let v = if i % 3 == 0 {
                b.sub(p, q).unwrap()
            } else {
                b.add(p, q).unwrap()
            };
            vals.push(v);
        }
        // Consume them in reverse so that all stay live until the end.
        let mut acc = vals[vals.len() - 1];
        for v in vals.iter().rev().skip(1) {
            acc = b.add(acc, *v).unwrap();
        }
        b.finish(&[acc]).unwrap()
    }

    #[test]
    fn a_crowded_program_is_split_and_keeps_its_meaning() {
        let f = crowded();
        let target = Target::h100();
        let bits = 1 << 18;
        let plan = compile_plan(&f, &[bits], &target, &Hints::default()).unwrap();
        assert!(plan.is_split(), "{}", plan.explain());
        assert!(plan.explain().contains("split into"));
        let concrete = specialize(&f, &[bits]).unwrap();
        let m = BigUint::from(1u8) << bits;
        for (x, y) in [
            (m.clone() - 1u8, BigUint::from(1u8)),
            (BigUint::from(12345u32) << 1000u32, m.clone() - 77u8),
        ] {
            let args = [Value::Big(x), Value::Big(y)];
            assert_eq!(run_plan(&plan, &args), eval(&concrete, &args).unwrap());
        }
    }

    #[test]
    fn a_small_program_stays_one_kernel() {
        let plan = compile_plan(&crowded(), &[256], &Target::h100(), &Hints::default()).unwrap();
        assert!(!plan.is_split());
        assert_eq!(plan.results, vec![0]);
    }
}

//! Splitting: when a whole program does not fit one kernel (registers, shared memory, threads),
//! cut the specialized program into parts, each compiled as its own kernel; values that cross a
//! cut go through global memory. Cuts are made by halving the node range until every part fits.

use crate::error::{CgResult, CodegenError};
use crate::{compile, Compiled, Hints, Target};
use bigfuse_core::{specialize, validate, Builder, Func, Op, Type, ValueId};
use std::fmt::Write;

/// Where a part reads an input from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The caller's argument with this index.
    Arg(usize),
    /// An intermediate buffer written by an earlier part.
    Buffer(usize),
}

/// One kernel of a plan.
#[derive(Clone, Debug)]
pub struct Part {
    pub compiled: Compiled,
    /// The source of each of the kernel's inputs, in parameter order.
    pub inputs: Vec<Source>,
    /// The buffer each of the kernel's outputs is written to, in output order.
    pub outputs: Vec<usize>,
    /// The part as IR (its parameters are the inputs, its outputs the outputs).
    pub func: Func,
    /// Virtual instances this part runs per instance of the call: 1 for ordinary parts, C for the
    /// chunk kernel of a chunked reduction (chunk `c` of instance `i` is instance `i*C + c`).
    pub instances: u64,
}

/// A program compiled for one set of sizes: one kernel when it fits, several otherwise.
#[derive(Clone, Debug)]
pub struct Plan {
    pub parts: Vec<Part>,
    /// Types of the buffers (intermediates and results), indexed by `Source::Buffer`.
    pub buffers: Vec<Type>,
    /// The buffer holding each result of the program.
    pub results: Vec<usize>,
    /// Why the program was split (empty when it is one kernel).
    pub notes: Vec<String>,
}

impl Plan {
    pub fn is_split(&self) -> bool {
        self.parts.len() > 1
    }

    /// `explain` for the whole plan: the split, then each kernel's decisions.
    pub fn explain(&self) -> String {
        let mut s = String::new();
        if self.is_split() {
            let _ = writeln!(s, "== split into {} kernels ==", self.parts.len());
            for n in &self.notes {
                let _ = writeln!(s, "{n}");
            }
            for (i, p) in self.parts.iter().enumerate() {
                let ins: Vec<String> = p
                    .inputs
                    .iter()
                    .map(|x| match x {
                        Source::Arg(a) => format!("argument {a}"),
                        Source::Buffer(b) => format!("buffer {b}"),
                    })
                    .collect();
                let over = if p.instances == 1 {
                    String::new()
                } else {
                    format!(" over n*{} instances", p.instances)
                };
                let _ = writeln!(
                    s,
                    "kernel {i} `{}`{over}: reads {}; writes buffer(s) {:?}",
                    p.compiled.kernel_name,
                    ins.join(", "),
                    p.outputs
                );
            }
            let _ = writeln!(s, "results in buffer(s) {:?}\n", self.results);
        }
        for p in &self.parts {
            s.push_str(&p.compiled.explain());
            s.push('\n');
        }
        s
    }
}

/// Compiles `func` for `sizes`: a chunked reduction when it is a reduction over arrays longer than
/// [`crate::chunk::CHUNK_LEN`] (see [`crate::chunk`]); else one kernel if it fits, else as few
/// parts as halving finds.
pub fn compile_plan(func: &Func, sizes: &[u64], target: &Target, hints: &Hints) -> CgResult<Plan> {
    validate(func)?;
    if let Some(mut plan) = crate::chunk::chunk_plan(&specialize(func, sizes)?, target, hints)? {
        let size_names: Vec<String> = func
            .size_params
            .iter()
            .zip(sizes)
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        plan.notes.insert(
            0,
            format!(
                "`{}` ({}) is a reduction over arrays longer than {}: chunked",
                func.name,
                size_names.join(", "),
                crate::chunk::CHUNK_LEN
            ),
        );
        return Ok(plan);
    }
    match compile(func, sizes, target, hints) {
        Ok(compiled) => {
            let inputs = (0..func.params.len()).map(Source::Arg).collect();
            let results: Vec<usize> = (0..func.outputs.len()).collect();
            let concrete = specialize(func, sizes)?;
            Ok(Plan {
                buffers: concrete.output_types(),
                parts: vec![Part {
                    compiled,
                    inputs,
                    outputs: results.clone(),
                    func: concrete,
                    instances: 1,
                }],
                results,
                notes: vec![],
            })
        }
        Err(CodegenError::TooBig(why)) => split(func, sizes, target, hints, why),
        Err(e) => Err(e),
    }
}

fn split(
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
pub(crate) mod tests {
    use super::*;
    use bigfuse_core::{eval, Size, Value};
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

    /// The words of one instance of a parameter or result, as the GPU layout holds them.
    fn words(v: &Value, t: &Type) -> Vec<u64> {
        match (v, t) {
            (Value::Big(x), Type::Big(bits)) => {
                let mut w = x.to_u64_digits();
                w.resize((bits.as_const().unwrap() / 64) as usize, 0);
                w
            }
            (Value::Array(xs), _) => xs.iter().map(|x| x.as_u64().unwrap()).collect(),
            (x, _) => vec![x.as_u64().unwrap()],
        }
    }

    /// The value of type `t` held in `w` (one instance's words).
    fn value(w: &[u64], t: &Type) -> Value {
        let scalar = |w: u64, t: &Type| match t {
            Type::Bool => Value::Bool(w != 0),
            Type::U32 => Value::U32(w as u32),
            _ => Value::U64(w),
        };
        match t {
            Type::Big(_) => Value::Big(BigUint::from_slice(
                &w.iter()
                    .flat_map(|x| [*x as u32, (*x >> 32) as u32])
                    .collect::<Vec<_>>(),
            )),
            Type::Array(e, _) => Value::Array(w.iter().map(|x| scalar(*x, e)).collect()),
            t => scalar(w[0], t),
        }
    }

    fn width(t: &Type) -> usize {
        crate::layout::layout_of("", t).unwrap().units as usize
    }

    /// Runs a plan's parts through the evaluator over a batch (`args[i]` are instance i's
    /// arguments), wiring flat buffers as the GPU runtime does: a part with `instances` = C runs
    /// over n*C virtual instances, virtual instance j reading words [j*W, (j+1)*W) of each input.
    pub(crate) fn run_batch(plan: &Plan, args: &[Vec<Value>]) -> Vec<Vec<Value>> {
        let n = args.len();
        let flat_arg = |a: usize, t: &Type| -> Vec<u64> {
            args.iter().flat_map(|inst| words(&inst[a], t)).collect()
        };
        let mut bufs: Vec<Option<Vec<u64>>> = vec![None; plan.buffers.len()];
        for p in &plan.parts {
            let ins: Vec<Vec<u64>> = p
                .inputs
                .iter()
                .zip(&p.func.params)
                .map(|(s, param)| match s {
                    Source::Arg(i) => flat_arg(*i, &param.ty),
                    Source::Buffer(b) => bufs[*b].clone().expect("written before read"),
                })
                .collect();
            let vn = n * p.instances as usize;
            let out_types = p.func.output_types();
            let mut outs: Vec<Vec<u64>> = out_types
                .iter()
                .map(|t| Vec::with_capacity(vn * width(t)))
                .collect();
            for j in 0..vn {
                let vals: Vec<Value> = ins
                    .iter()
                    .zip(&p.func.params)
                    .map(|(buf, param)| {
                        let w = width(&param.ty);
                        assert!(buf.len() >= vn * w, "input too short for {vn} instances");
                        value(&buf[j * w..(j + 1) * w], &param.ty)
                    })
                    .collect();
                for ((o, v), t) in outs
                    .iter_mut()
                    .zip(eval(&p.func, &vals).unwrap())
                    .zip(&out_types)
                {
                    o.extend(words(&v, t));
                }
            }
            for (b, o) in p.outputs.iter().zip(outs) {
                assert_eq!(
                    o.len(),
                    n * width(&plan.buffers[*b]),
                    "buffer {b} sized by its type"
                );
                bufs[*b] = Some(o);
            }
        }
        (0..n)
            .map(|i| {
                plan.results
                    .iter()
                    .map(|b| {
                        let t = &plan.buffers[*b];
                        let w = width(t);
                        value(&bufs[*b].as_ref().unwrap()[i * w..(i + 1) * w], t)
                    })
                    .collect()
            })
            .collect()
    }

    /// [`run_batch`] for one instance.
    pub(crate) fn run_plan(plan: &Plan, args: &[Value]) -> Vec<Value> {
        run_batch(plan, &[args.to_vec()]).remove(0)
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

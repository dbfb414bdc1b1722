//! Plans: a program compiled for one set of sizes is one kernel when it fits, else several parts
//! wired through global buffers. This module holds the plan types and picks the strategy:
//! [`crate::chunk`] for reductions over long arrays, one kernel ([`crate::compile`]) when it fits,
//! else [`crate::split`].

use crate::error::{CgResult, CodegenError};
use crate::ntt_global::{GlobalNtt, Step};
use crate::{compile, Compiled, Hints, Target};
use bigfuse_core::{specialize, validate, Func, Type};
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
    /// What the kernel computes.
    pub body: Body,
    /// Virtual instances this part runs per instance of the call: 1 for ordinary parts, C for the
    /// chunk kernel of a chunked reduction (chunk `c` of instance `i` is instance `i*C + c`).
    pub instances: u64,
}

/// What a part computes: the CPU tests of plans run it (`testing::run_batch`).
#[derive(Clone, Debug)]
pub enum Body {
    /// A piece of the program as IR (its parameters are the inputs, its outputs the outputs).
    Ir(Func),
    /// One kernel of a product over global memory, written by its strategy and modelled by it
    /// ([`crate::ntt_global`]).
    Ntt(Box<GlobalNtt>, Step),
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
    let concrete = specialize(func, sizes)?;
    if (0..concrete.nodes.len()).any(|i| crate::split::forced_product(&concrete, i, hints)) {
        let why = format!(
            "products of at least {} bits go over global memory (hint `gntt`)",
            hints.global_ntt_from_bits.unwrap_or(0)
        );
        return crate::split::split(func, sizes, target, hints, why);
    }
    match compile(func, sizes, target, hints) {
        Ok(compiled) => {
            let inputs = (0..func.params.len()).map(Source::Arg).collect();
            let results: Vec<usize> = (0..func.outputs.len()).collect();
            Ok(Plan {
                buffers: concrete.output_types(),
                parts: vec![Part {
                    compiled,
                    inputs,
                    outputs: results.clone(),
                    body: Body::Ir(concrete),
                    instances: 1,
                }],
                results,
                notes: vec![],
            })
        }
        Err(CodegenError::TooBig(why)) => crate::split::split(func, sizes, target, hints, why),
        Err(e) => Err(e),
    }
}

/// Runs plans on the CPU, through the evaluator, wired as the GPU runtime wires them: the tests
/// of every strategy check their plans with it.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use bigfuse_core::{eval, Value};
    use num_bigint::BigUint;

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
            // The types of the part's inputs and outputs as the program sees them (a compiled
            // IR part's own layouts are of its lowered form).
            let (in_types, out_types): (Vec<Type>, Vec<Type>) = match &p.body {
                Body::Ir(f) => (
                    f.params.iter().map(|q| q.ty.clone()).collect(),
                    f.output_types(),
                ),
                Body::Ntt(..) => (
                    p.compiled.inputs.iter().map(|l| l.ty.clone()).collect(),
                    p.compiled.outputs.iter().map(|l| l.ty.clone()).collect(),
                ),
            };
            let ins: Vec<Vec<u64>> = p
                .inputs
                .iter()
                .zip(&in_types)
                .map(|(s, t)| match s {
                    Source::Arg(i) => flat_arg(*i, t),
                    Source::Buffer(b) => bufs[*b].clone().expect("written before read"),
                })
                .collect();
            let vn = n * p.instances as usize;
            let mut outs: Vec<Vec<u64>> = out_types
                .iter()
                .map(|t| Vec::with_capacity(vn * width(t)))
                .collect();
            for j in 0..vn {
                let slices: Vec<&[u64]> = ins
                    .iter()
                    .zip(&in_types)
                    .map(|(buf, t)| {
                        let w = width(t);
                        assert!(buf.len() >= vn * w, "input too short for {vn} instances");
                        &buf[j * w..(j + 1) * w]
                    })
                    .collect();
                let results: Vec<Vec<u64>> = match &p.body {
                    Body::Ir(func) => {
                        let vals: Vec<Value> = slices
                            .iter()
                            .zip(&in_types)
                            .map(|(w, t)| value(w, t))
                            .collect();
                        eval(func, &vals)
                            .unwrap()
                            .iter()
                            .zip(&out_types)
                            .map(|(v, t)| words(v, t))
                            .collect()
                    }
                    Body::Ntt(g, step) => ntt_step(g, *step, &slices),
                };
                for (o, w) in outs.iter_mut().zip(results) {
                    o.extend(w);
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

    /// A kernel of a product over global memory on one instance's words, through the model.
    fn ntt_step(g: &GlobalNtt, step: Step, ins: &[&[u64]]) -> Vec<Vec<u64>> {
        let digits = |w: &[u64]| -> Vec<u32> {
            w.iter()
                .flat_map(|x| [*x as u32, (*x >> 32) as u32])
                .collect()
        };
        let narrow = |w: &[u64]| -> Vec<u32> { w.iter().map(|x| *x as u32).collect() };
        let wide = |w: Vec<u32>| -> Vec<u64> { w.into_iter().map(u64::from).collect() };
        match step {
            Step::Columns => {
                let a = digits(ins[0]);
                let b = ins.get(1).map_or_else(|| a.clone(), |b| digits(b));
                vec![wide(g.columns(&a, &b))]
            }
            Step::Rows => vec![wide(g.rows_step(&narrow(ins[0])))],
            Step::Finish => {
                let (x, y) = g.finish(&narrow(ins[0]));
                vec![x, y]
            }
        }
    }

    /// [`run_batch`] for one instance.
    pub(crate) fn run_plan(plan: &Plan, args: &[Value]) -> Vec<Value> {
        run_batch(plan, &[args.to_vec()]).remove(0)
    }
}

//! Splitting: when a whole program does not fit one kernel (registers, shared memory, threads),
//! cut the specialized program into parts, each compiled as its own kernel; values that cross a
//! cut go through global memory. Cuts are made by halving the node range until every part fits.
//! A strategy of [`crate::plan`].

use crate::error::{CgResult, CodegenError};
use crate::ntt_global::{GlobalNtt, Step};
use crate::plan::{Body, Part, Plan, Source};
use crate::{compile, Compiled, Hints, Target};
use bigfuse_core::{specialize, Builder, Func, Op, Type, ValueId};

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
    let mut cutter = Cutter {
        concrete: &concrete,
        target,
        hints,
        cuts: Vec::new(),
        temps: 0,
        notes: Vec::new(),
    };
    cutter.cut(&work)?;
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
    let (cuts, product_notes) = (cutter.cuts, cutter.notes);
    // Wire the parts: every value a later part (or the caller) needs gets a buffer.
    let mut buffer_of: std::collections::HashMap<Wire, usize> = Default::default();
    let mut buffers = Vec::new();
    let mut parts = Vec::new();
    for cut in cuts {
        let inputs = cut
            .inputs
            .iter()
            .map(|w| match (w, w.value().map(|v| &concrete.node(v).op)) {
                (_, Some(Op::Param(i))) => Source::Arg(*i as usize),
                (w, _) => Source::Buffer(buffer_of[w]),
            })
            .collect();
        let outs = cut
            .outputs
            .iter()
            .zip(cut.out_types)
            .map(|(w, t)| {
                let b = buffers.len();
                buffers.push(t);
                buffer_of.insert(*w, b);
                b
            })
            .collect();
        parts.push(Part {
            compiled: cut.compiled,
            inputs,
            outputs: outs,
            body: cut.body,
            instances: 1,
        });
    }
    let results = concrete
        .outputs
        .iter()
        .map(|o| buffer_of.get(&Wire::Value(*o)).copied())
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            CodegenError::Unsupported("a result of a split program has no buffer".into())
        })?;
    notes.push(format!(
        "split into {} kernels by halving; intermediates cross kernels in global memory",
        parts.len()
    ));
    notes.extend(product_notes);
    Ok(Plan {
        parts,
        buffers,
        results,
        notes,
    })
}

/// What a kernel of a split plan reads or writes: a value of the program, or a buffer private to
/// the kernels of one product over global memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Wire {
    Value(ValueId),
    Temp(usize),
}

impl Wire {
    fn value(self) -> Option<ValueId> {
        match self {
            Wire::Value(v) => Some(v),
            Wire::Temp(_) => None,
        }
    }
}

/// A kernel as `cut` finds it.
struct Cut {
    body: Body,
    inputs: Vec<Wire>,
    outputs: Vec<Wire>,
    out_types: Vec<Type>,
    compiled: Compiled,
}

struct Cutter<'a> {
    concrete: &'a Func,
    target: &'a Target,
    hints: &'a Hints,
    cuts: Vec<Cut>,
    temps: usize,
    notes: Vec<String>,
}

impl Cutter<'_> {
    /// Halves `nodes` until each half compiles; appends the parts in order, compiled once. A
    /// product that does not fit alone becomes a product over global memory.
    fn cut(&mut self, nodes: &[usize]) -> CgResult<()> {
        let concrete = self.concrete;
        // Whatever comes after this range may read its values: they are its outputs.
        let end = nodes.last().map_or(0, |&i| i + 1);
        let later: Vec<usize> = (end..concrete.nodes.len()).collect();
        let last = end >= concrete.nodes.len()
            || (end..concrete.nodes.len())
                .all(|i| matches!(concrete.nodes[i].op, Op::Param(_) | Op::Const(_)));
        let index = self.cuts.len();
        // Products the hints send over global memory are cut out first.
        if nodes.iter().any(|&i| self.forced(i)) {
            if nodes.len() == 1 {
                let why = "the hint `gntt` sends it over global memory";
                if self.product(ValueId(nodes[0] as u32), why)? {
                    return Ok(());
                }
            } else {
                let mid = nodes.len() / 2;
                self.cut(&nodes[..mid])?;
                return self.cut(&nodes[mid..]);
            }
        }
        let (f, inputs, outputs) = build_part(concrete, nodes, &later, index, last)?;
        match compile(&f, &[], self.target, self.hints) {
            Ok(compiled) => {
                self.cuts.push(Cut {
                    out_types: outputs.iter().map(|v| concrete.ty(*v).clone()).collect(),
                    body: Body::Ir(f),
                    inputs: inputs.into_iter().map(Wire::Value).collect(),
                    outputs: outputs.into_iter().map(Wire::Value).collect(),
                    compiled,
                });
                Ok(())
            }
            Err(CodegenError::TooBig(why)) if nodes.len() <= 1 => {
                let reason = format!("it does not fit one kernel ({why})");
                if nodes.len() == 1 && self.product(ValueId(nodes[0] as u32), &reason)? {
                    return Ok(());
                }
                Err(CodegenError::TooBig(format!(
                    "even one operation alone does not fit a kernel: {why}"
                )))
            }
            Err(CodegenError::TooBig(_)) => {
                let mid = nodes.len() / 2;
                self.cut(&nodes[..mid])?;
                self.cut(&nodes[mid..])
            }
            Err(e) => Err(e),
        }
    }

    /// Whether node `i` is a product the hints send over global memory (`gntt`).
    fn forced(&self, i: usize) -> bool {
        forced_product(self.concrete, i, self.hints)
    }

    /// Cuts a product `v` into the kernels of a product over global memory
    /// ([`crate::ntt_global`]) and the addition of its column sums (`why`: for `explain`); false
    /// when `v` is not a product of two values of the program.
    fn product(&mut self, v: ValueId, why: &str) -> CgResult<bool> {
        let concrete = self.concrete;
        let (a, b) = match concrete.node(v).op {
            Op::BigMul(a, b) | Op::BigMulWide(a, b) => (a, b),
            _ => return Ok(false),
        };
        if [a, b]
            .iter()
            .any(|x| matches!(concrete.node(*x).op, Op::Const(_)))
        {
            return Ok(false);
        }
        let limbs = |x: ValueId| match concrete.ty(x) {
            Type::Big(s) => s.as_const().map(|bits| bits / 64),
            _ => None,
        };
        let (Some(in_limbs), Some(out_limbs)) = (limbs(a), limbs(v)) else {
            return Ok(false);
        };
        let plan = GlobalNtt::new(in_limbs, out_limbs, a == b)?;
        let index = self.cuts.len();
        let mut wires = |n: usize| -> Vec<Wire> {
            let w = (self.temps..self.temps + n).map(Wire::Temp).collect();
            self.temps += n;
            w
        };
        let (t, u, xy) = (wires(1), wires(1), wires(2));
        let operands = if a == b {
            vec![Wire::Value(a)]
        } else {
            vec![Wire::Value(a), Wire::Value(b)]
        };
        for (step, inputs, outputs) in [
            (Step::Columns, operands, t.clone()),
            (Step::Rows, t, u.clone()),
            (Step::Finish, u, xy.clone()),
        ] {
            let name = format!(
                "bf_{}_part{index}_ntt_{}",
                crate::c_identifier(&concrete.name),
                step.name()
            );
            self.cuts.push(Cut {
                compiled: plan.kernel(step, &name, self.target)?,
                body: Body::Ntt(Box::new(plan.clone()), step),
                inputs,
                out_types: plan.types(step).1,
                outputs,
            });
        }
        // X + Y: an ordinary addition (its carries across blocks by look-back).
        let ty = concrete.ty(v).clone();
        let mut b = Builder::new(&format!("{}_part{}", concrete.name, index + 3), &[]);
        let x = b.param("x", ty.clone());
        let y = b.param("y", ty.clone());
        let sum = b.add(x, y)?;
        let f = b.finish(&[sum])?;
        self.cuts.push(Cut {
            compiled: compile(&f, &[], self.target, self.hints)?,
            body: Body::Ir(f),
            inputs: xy,
            outputs: vec![Wire::Value(v)],
            out_types: vec![ty],
        });
        self.notes.push(format!(
            "{}: {why}: {}",
            bigfuse_core::node_text(concrete, v),
            plan.describe()
        ));
        Ok(true)
    }
}

/// Whether node `i` of `concrete` is a product of operands of at least `gntt` bits.
pub(crate) fn forced_product(concrete: &Func, i: usize, hints: &Hints) -> bool {
    let Some(from) = hints.global_ntt_from_bits else {
        return false;
    };
    match concrete.nodes[i].op {
        Op::BigMul(a, _) | Op::BigMulWide(a, _) => {
            matches!(concrete.ty(a), Type::Big(s) if s.as_const().is_some_and(|b| b >= from))
        }
        _ => false,
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

    fn product(wide: bool, square: bool) -> Func {
        let mut b = Builder::new("product", &["BITS"]);
        let t = Type::Big(Size::param(0));
        let x = b.param("a", t.clone());
        let y = if square { x } else { b.param("b", t) };
        let p = if wide {
            b.mul_wide(x, y).unwrap()
        } else {
            b.mul(x, y).unwrap()
        };
        b.finish(&[p]).unwrap()
    }

    #[test]
    fn products_too_big_for_a_block_go_over_global_memory() {
        use num_bigint::RandBigInt;
        let mut rng = rand::thread_rng();
        let target = Target::h100();
        // 2^20 bits, and an odd size whose transform is not a power of two of digits.
        for bits in [1u64 << 20, (1 << 19) + 1088] {
            for (wide, square) in [(false, false), (true, false), (false, true)] {
                let f = product(wide, square);
                let plan = compile_plan(&f, &[bits], &target, &Hints::default()).unwrap();
                let text = plan.explain();
                assert_eq!(plan.parts.len(), 4, "{text}");
                assert!(text.contains("a product over global memory"), "{text}");
                let concrete = specialize(&f, &[bits]).unwrap();
                let max = (BigUint::from(1u8) << bits) - 1u8;
                let mut cases = vec![vec![max.clone(), max.clone()]];
                cases.push(vec![rng.gen_biguint(bits), rng.gen_biguint(bits)]);
                cases.push(vec![BigUint::from(0u8), max.clone()]);
                for case in cases {
                    let args: Vec<Value> = case
                        .iter()
                        .take(if square { 1 } else { 2 })
                        .cloned()
                        .map(Value::Big)
                        .collect();
                    assert_eq!(
                        run_plan(&plan, &args),
                        eval(&concrete, &args).unwrap(),
                        "{bits} bits, wide {wide}, square {square}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_hint_sends_smaller_products_over_global_memory() {
        let f = product(false, false);
        let target = Target::h100();
        let bits = 1u64 << 16;
        assert!(!compile_plan(&f, &[bits], &target, &Hints::default())
            .unwrap()
            .is_split());
        let hints: Hints = "gntt=65536".parse().unwrap();
        let plan = compile_plan(&f, &[bits], &target, &hints).unwrap();
        assert_eq!(plan.parts.len(), 4, "{}", plan.explain());
        assert!(plan.explain().contains("hint `gntt`"));
        let concrete = specialize(&f, &[bits]).unwrap();
        let x = (BigUint::from(1u8) << bits) - 1u8;
        let args = [Value::Big(x.clone()), Value::Big(x >> 7u32)];
        assert_eq!(run_plan(&plan, &args), eval(&concrete, &args).unwrap());
        // Below the hint's size the product stays in its kernel.
        let small = compile_plan(&f, &[bits / 2], &target, &hints).unwrap();
        assert!(!small.is_split());
    }

    #[test]
    fn a_program_with_huge_products_is_split_around_them() {
        // Poly: a*b + c*d - a*d, each product over global memory, the sums block-spanning.
        let mut b = Builder::new("poly", &["BITS"]);
        let t = Type::Big(Size::param(0));
        let [x, y, z, w] = ["a", "b", "c", "d"].map(|n| b.param(n, t.clone()));
        let p1 = b.mul(x, y).unwrap();
        let p2 = b.mul(z, w).unwrap();
        let p3 = b.mul(x, w).unwrap();
        let s = b.add(p1, p2).unwrap();
        let r = b.sub(s, p3).unwrap();
        let f = b.finish(&[r]).unwrap();
        let bits = 1u64 << 20;
        let plan = compile_plan(&f, &[bits], &Target::h100(), &Hints::default()).unwrap();
        let text = plan.explain();
        assert!(plan.parts.len() >= 12, "{text}");
        let concrete = specialize(&f, &[bits]).unwrap();
        use num_bigint::RandBigInt;
        let mut rng = rand::thread_rng();
        let args: Vec<Value> = (0..4).map(|_| Value::Big(rng.gen_biguint(bits))).collect();
        assert_eq!(run_plan(&plan, &args), eval(&concrete, &args).unwrap());
    }

    #[test]
    fn a_small_program_stays_one_kernel() {
        let plan = compile_plan(&crowded(), &[256], &Target::h100(), &Hints::default()).unwrap();
        assert!(!plan.is_split());
        assert_eq!(plan.results, vec![0]);
    }
}

//! Chunked reductions: a reduction over an array too long for one block (a dot product over 2^20
//! elements) runs as two kernels. Part 1 does the element-wise work and reduces a chunk of `L`
//! elements; it runs over `n * C` virtual instances (`C = N / L`), and with the contiguous layout
//! (instance `i` of a parameter at words `[i*N, (i+1)*N)`) chunk `c` of instance `i` is exactly
//! virtual instance `i*C + c`, so the arguments are read in place. Its results, one scalar per leaf
//! of each accumulator, are the partials: per real instance an array `[leaf; C]`. Part 2 zips the
//! leaves back into accumulators, reduces them with the same operator and identity, and computes
//! the program's scalar tail. When `C` itself exceeds the limit, part 2 is chunked the same way.

use crate::error::{CgResult, CodegenError};
use crate::plan::{Body, Part, Plan, Source};
use crate::{compile, Compiled, Hints, Target};
use bigfuse_core::{Builder, Func, Op, Type, ValueId};

/// Elements per chunk at most: one block of 128 threads with 8 elements each (the schedule's
/// choice for array reductions, `schedule::reduce_q`). Small blocks finish their cross-thread
/// combination fast and many fit an SM. Measured on an H200 (bench dot, 2026-11-22, 62-bit prime,
/// 2^26 elements): 1024-element chunks 195-201 Gmodmul/s (76-78% of the copy bandwidth), 2048 180,
/// 4096 (256 threads x 16) 177-179, 8192 and more 142-148. Longer vectors take three kernels from
/// 2^21 elements on (partials are chunked again).
pub const CHUNK_LEN: u64 = 1024;

/// Chunks shorter than this do not pay for their kernel: an N with no divisor in
/// `MIN_CHUNK_LEN..=CHUNK_LEN` (a large prime) is not chunked.
pub const MIN_CHUNK_LEN: u64 = 256;

/// What a node of a chunkable reduction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// An array of length N computed element by element from the parameters (part 1).
    Elem,
    /// A scalar or tuple computed from constants only (recreated wherever it is used).
    Konst,
    /// A reduction of an `Elem` array.
    Red,
    /// A scalar or tuple computed from reductions and constants (part 2).
    Tail,
}

/// The array length N and the kind of every node, when `f` is a chunkable reduction: every
/// parameter an array of scalars of length N, every array node element-wise (`Param`, `Map`, `Zip`,
/// `Extract`) of length N, at least one reduction, and every output a scalar computed from
/// reductions and constants.
fn classify(f: &Func) -> Option<(u64, Vec<Kind>)> {
    let n = match f.params.first()?.ty {
        Type::Array(ref e, len) if e.is_scalar() => len.as_const()?,
        _ => return None,
    };
    let len_n = |t: &Type| matches!(t, Type::Array(_, l) if l.as_const() == Some(n));
    if !f
        .params
        .iter()
        .all(|p| len_n(&p.ty) && p.ty.leaves().iter().all(Type::is_scalar))
    {
        return None;
    }
    let mut kinds: Vec<Kind> = Vec::with_capacity(f.nodes.len());
    for node in &f.nodes {
        let args = node.op.args();
        let all = |ok: &[Kind]| args.iter().all(|a| ok.contains(&kinds[a.index()]));
        let kind = match &node.op {
            Op::Param(_) => Kind::Elem,
            Op::Const(_) => Kind::Konst,
            Op::Map { .. } if len_n(&node.ty) && all(&[Kind::Elem, Kind::Konst]) => Kind::Elem,
            Op::Zip(_) | Op::Extract(..) if len_n(&node.ty) && all(&[Kind::Elem]) => Kind::Elem,
            Op::Reduce { .. } if node.ty.is_element() && all(&[Kind::Elem]) => Kind::Red,
            Op::Unary(..)
            | Op::Binary(..)
            | Op::Cast(_)
            | Op::Select(..)
            | Op::Tuple(_)
            | Op::Extract(..)
                if node.ty.is_element() =>
            {
                if all(&[Kind::Konst]) {
                    Kind::Konst
                } else if all(&[Kind::Konst, Kind::Red, Kind::Tail]) {
                    Kind::Tail
                } else {
                    return None;
                }
            }
            _ => return None,
        };
        kinds.push(kind);
    }
    let outputs_ok = f
        .outputs
        .iter()
        .all(|o| f.ty(*o).is_scalar() && kinds[o.index()] != Kind::Elem);
    (outputs_ok && kinds.contains(&Kind::Red)).then_some((n, kinds))
}

/// The array length of `f` when it is a chunkable reduction (see `classify`).
pub fn chunkable_len(f: &Func) -> Option<u64> {
    classify(f).map(|(n, _)| n)
}

/// The largest divisor of `n` in `MIN_CHUNK_LEN..=limit`, if any.
pub fn chunk_len_for(n: u64, limit: u64) -> Option<u64> {
    (MIN_CHUNK_LEN..=limit.min(n))
        .rev()
        .find(|l| n.is_multiple_of(*l))
}

/// Paths of `Extract` indices to every scalar leaf of `t`, left to right (one empty path for a
/// scalar).
fn leaf_paths(t: &Type) -> Vec<Vec<u32>> {
    match t {
        Type::Tuple(ts) => ts
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                leaf_paths(t).into_iter().map(move |mut p| {
                    p.insert(0, i as u32);
                    p
                })
            })
            .collect(),
        _ => vec![vec![]],
    }
}

/// A chunkable reduction cut in two.
#[derive(Clone, Debug)]
pub struct Chunked {
    /// Element-wise work and the reductions over one chunk; one output per accumulator leaf.
    pub part1: Func,
    /// Reductions of the partials (one parameter `[leaf; C]` per leaf) and the scalar tail.
    pub part2: Func,
    /// Elements per chunk (L).
    pub len: u64,
    /// Chunks per instance (C = N / L).
    pub chunks: u64,
}

/// Cuts the chunkable reduction `f` (array length `n`, node kinds `kinds`) into chunks of `len`.
fn cut(f: &Func, n: u64, kinds: &[Kind], len: u64) -> CgResult<Chunked> {
    let chunks = n / len;
    let uses = f.use_counts();
    let reds: Vec<usize> = (0..f.nodes.len())
        .filter(|&i| kinds[i] == Kind::Red && uses[i] > 0)
        .collect();
    let copy = |b: &mut Builder, i: usize, map: &[Option<ValueId>]| -> CgResult<ValueId> {
        let node = &f.nodes[i];
        Ok(match &node.op {
            Op::Const(l) => b.constant(l.clone()),
            op => b.copy(op, &node.ty, |v| {
                map[v.index()].expect("arguments come first")
            })?,
        })
    };

    // Part 1: the parameters cut to one chunk, everything but the tail, the accumulators' leaves.
    let mut b = Builder::new(&format!("{}_chunk{len}", f.name), &[]);
    let params: Vec<ValueId> = f
        .params
        .iter()
        .map(|p| {
            let Type::Array(e, _) = &p.ty else {
                unreachable!("classify checked the parameters")
            };
            b.param(
                &p.name,
                Type::array((**e).clone(), bigfuse_core::Size::lit(len)),
            )
        })
        .collect();
    let mut map: Vec<Option<ValueId>> = vec![None; f.nodes.len()];
    for (i, node) in f.nodes.iter().enumerate() {
        map[i] = match (&node.op, kinds[i]) {
            (Op::Param(k), _) => Some(params[*k as usize]),
            (_, Kind::Tail) => None,
            _ => Some(copy(&mut b, i, &map)?),
        };
    }
    let mut outs = Vec::new();
    let mut leaf_types = Vec::new();
    for &r in &reds {
        let ty = &f.nodes[r].ty;
        for path in leaf_paths(ty) {
            let mut v = map[r].expect("reductions are in part 1");
            let mut t = ty.clone();
            for &k in &path {
                v = b.extract(v, k)?;
                let Type::Tuple(ts) = t else { unreachable!() };
                t = ts[k as usize].clone();
            }
            outs.push(v);
            leaf_types.push(t);
        }
    }
    let part1 = b.finish(&outs)?;

    // Part 2: one parameter per leaf, zipped back into accumulators, reduced, then the tail.
    let mut b = Builder::new(&format!("{}_combine{chunks}", f.name), &[]);
    let mut leaves = leaf_types.iter().enumerate().map(|(k, t)| {
        (
            k,
            t.clone(),
            Type::array(t.clone(), bigfuse_core::Size::lit(chunks)),
        )
    });
    let mut map: Vec<Option<ValueId>> = vec![None; f.nodes.len()];
    for &r in &reds {
        fn assemble(
            b: &mut Builder,
            t: &Type,
            r: usize,
            leaves: &mut dyn Iterator<Item = (usize, Type, Type)>,
        ) -> CgResult<ValueId> {
            match t {
                Type::Tuple(ts) => {
                    let xs = ts
                        .iter()
                        .map(|t| assemble(b, t, r, leaves))
                        .collect::<CgResult<Vec<_>>>()?;
                    Ok(b.zip(&xs)?)
                }
                _ => {
                    let (k, _, arr) = leaves.next().expect("one parameter per leaf");
                    Ok(b.param(&format!("partial{r}_{k}"), arr))
                }
            }
        }
        let input = assemble(&mut b, &f.nodes[r].ty, r, &mut leaves)?;
        let Op::Reduce { op, init, .. } = &f.nodes[r].op else {
            unreachable!("reds are reductions")
        };
        map[r] = Some(b.reduce((**op).clone(), init.clone(), input)?);
    }
    for i in 0..f.nodes.len() {
        if matches!(kinds[i], Kind::Konst | Kind::Tail) {
            map[i] = Some(copy(&mut b, i, &map)?);
        }
    }
    let outs: Vec<ValueId> = f
        .outputs
        .iter()
        .map(|o| map[o.index()].expect("outputs are reductions, constants or the tail"))
        .collect();
    let part2 = b.finish(&outs)?;
    Ok(Chunked {
        part1,
        part2,
        len,
        chunks,
    })
}

/// Cuts `f` into chunks of at most `limit` elements, when it is a chunkable reduction longer than
/// `limit` with a divisor in range.
pub fn chunk(f: &Func, limit: u64) -> CgResult<Option<Chunked>> {
    let Some((n, kinds)) = classify(f) else {
        return Ok(None);
    };
    if n <= limit {
        return Ok(None);
    }
    match chunk_len_for(n, limit) {
        Some(len) => cut(f, n, &kinds, len).map(Some),
        None => Ok(None),
    }
}

/// The plan for a specialized program that is a chunkable reduction longer than [`CHUNK_LEN`]:
/// a chunk kernel over `n * C` instances, then the combining kernel (itself chunked while its
/// partials are still too many). `None` when the program is not one.
pub fn chunk_plan(concrete: &Func, target: &Target, hints: &Hints) -> CgResult<Option<Plan>> {
    let mut parts: Vec<Part> = Vec::new();
    let mut buffers: Vec<Type> = Vec::new();
    let mut notes = Vec::new();
    let mut cur = concrete.clone();
    let mut inputs: Vec<Source> = (0..cur.params.len()).map(Source::Arg).collect();
    loop {
        match chunk_level(&cur, target, hints)? {
            Some((ch, compiled)) => {
                let n = ch.len * ch.chunks;
                notes.push(format!(
                    "`{}`: a reduction over {n} elements is chunked: kernel {} reduces chunks of \
                     L={} elements, C={} per instance: it runs over n*{} virtual instances \
                     (chunk c of instance i is instance i*C+c, so the arguments are read in \
                     place) and writes one partial per chunk and accumulator leaf",
                    cur.name,
                    parts.len(),
                    ch.len,
                    ch.chunks,
                    ch.chunks
                ));
                let outputs: Vec<usize> = ch
                    .part1
                    .output_types()
                    .into_iter()
                    .map(|t| {
                        buffers.push(Type::array(t, bigfuse_core::Size::lit(ch.chunks)));
                        buffers.len() - 1
                    })
                    .collect();
                parts.push(Part {
                    compiled,
                    inputs: std::mem::take(&mut inputs),
                    outputs: outputs.clone(),
                    body: Body::Ir(ch.part1),
                    instances: ch.chunks,
                });
                inputs = outputs.into_iter().map(Source::Buffer).collect();
                cur = ch.part2;
            }
            None if parts.is_empty() => return Ok(None),
            None => {
                let compiled = compile(&cur, &[], target, hints).map_err(|e| match e {
                    CodegenError::TooBig(why) => CodegenError::TooBig(format!(
                        "the combining kernel of a chunked reduction does not fit: {why}"
                    )),
                    e => e,
                })?;
                notes.push(format!(
                    "kernel {} `{}` combines the partials with the same operator and identity and \
                     computes the results",
                    parts.len(),
                    compiled.kernel_name
                ));
                let outputs: Vec<usize> = cur
                    .output_types()
                    .into_iter()
                    .map(|t| {
                        buffers.push(t);
                        buffers.len() - 1
                    })
                    .collect();
                parts.push(Part {
                    compiled,
                    inputs,
                    outputs: outputs.clone(),
                    body: Body::Ir(cur),
                    instances: 1,
                });
                return Ok(Some(Plan {
                    parts,
                    buffers,
                    results: outputs,
                    notes,
                }));
            }
        }
    }
}

/// One level of chunking of `f`, compiled: the largest chunk within [`CHUNK_LEN`] whose kernel
/// fits (smaller chunks are tried while part 1 is too big).
fn chunk_level(f: &Func, target: &Target, hints: &Hints) -> CgResult<Option<(Chunked, Compiled)>> {
    let mut limit = hints.chunk_len.unwrap_or(CHUNK_LEN);
    loop {
        let Some(ch) = chunk(f, limit)? else {
            return Ok(None);
        };
        match compile(&ch.part1, &[], target, hints) {
            Ok(c) => return Ok(Some((ch, c))),
            Err(CodegenError::TooBig(_)) if ch.len / 2 >= MIN_CHUNK_LEN => limit = ch.len / 2,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testing::{run_batch, run_plan};
    use crate::{compile_plan, Hints, Target};
    use bigfuse_core::{eval, specialize, BinOp, Literal, Size, Value};
    use rand::{Rng, SeedableRng};

    fn u64_op(f: impl Fn(&mut Builder, ValueId, ValueId) -> ValueId) -> Func {
        let mut b = Builder::lambda();
        let x = b.param("a", Type::U64);
        let y = b.param("b", Type::U64);
        let r = f(&mut b, x, y);
        b.finish(&[r]).unwrap()
    }

    fn arr() -> Type {
        Type::array(Type::U64, Size::param(0))
    }

    /// `reduce(+, 0, xs)`.
    fn sum() -> Func {
        let mut b = Builder::new("sum", &["N"]);
        let xs = b.param("xs", arr());
        let r = b
            .reduce(u64_op(|b, x, y| b.add(x, y).unwrap()), Literal::U64(0), xs)
            .unwrap();
        b.finish(&[r]).unwrap()
    }

    /// The dot product `reduce(+, 0, map(*, xs, ys))` and the wrapping product of `xs | 1`.
    fn dot_and_product() -> Func {
        let mut b = Builder::new("dot", &["N"]);
        let xs = b.param("xs", arr());
        let ys = b.param("ys", arr());
        let prods = b
            .map(u64_op(|b, x, y| b.mul(x, y).unwrap()), &[xs, ys])
            .unwrap();
        let dot = b
            .reduce(
                u64_op(|b, x, y| b.add(x, y).unwrap()),
                Literal::U64(0),
                prods,
            )
            .unwrap();
        let one = b.u64(1);
        let odd = b
            .map(u64_op(|b, x, o| b.or(x, o).unwrap()), &[xs, one])
            .unwrap();
        let prod = b
            .reduce(u64_op(|b, x, y| b.mul(x, y).unwrap()), Literal::U64(1), odd)
            .unwrap();
        b.finish(&[dot, prod]).unwrap()
    }

    /// The 128-bit dot product: products as (lo, hi), summed with a carry; results lo, hi and
    /// a scalar tail `lo ^ hi ^ 7`.
    fn dot128() -> Func {
        let pair = Type::Tuple(vec![Type::U64, Type::U64]);
        let mut w = Builder::lambda();
        let x = w.param("x", Type::U64);
        let y = w.param("y", Type::U64);
        let lo = w.mul(x, y).unwrap();
        let hi = w.binary(BinOp::MulHi, x, y).unwrap();
        let t = w.tuple(&[lo, hi]).unwrap();
        let wide = w.finish(&[t]).unwrap();
        let mut a = Builder::lambda();
        let p = a.param("p", pair.clone());
        let q = a.param("q", pair);
        let (p0, p1) = (a.extract(p, 0).unwrap(), a.extract(p, 1).unwrap());
        let (q0, q1) = (a.extract(q, 0).unwrap(), a.extract(q, 1).unwrap());
        let lo = a.add(p0, q0).unwrap();
        let c = a.lt(lo, p0).unwrap();
        let c = a.cast(c, Type::U64).unwrap();
        let hi = a.add(p1, q1).unwrap();
        let hi = a.add(hi, c).unwrap();
        let t = a.tuple(&[lo, hi]).unwrap();
        let add128 = a.finish(&[t]).unwrap();

        let mut b = Builder::new("dot128", &["N"]);
        let xs = b.param("xs", arr());
        let ys = b.param("ys", arr());
        let prods = b.map(wide, &[xs, ys]).unwrap();
        let init = Literal::Tuple(vec![Literal::U64(0), Literal::U64(0)]);
        let acc = b.reduce(add128, init, prods).unwrap();
        let lo = b.extract(acc, 0).unwrap();
        let hi = b.extract(acc, 1).unwrap();
        let seven = b.u64(7);
        let x = b.xor(lo, hi).unwrap();
        let x = b.xor(x, seven).unwrap();
        b.finish(&[lo, hi, x]).unwrap()
    }

    /// A prefix sum, then its sum: not element-wise, so never chunked.
    fn scan_sum() -> Func {
        let mut b = Builder::new("scan_sum", &["N"]);
        let xs = b.param("xs", arr());
        let add = u64_op(|b, x, y| b.add(x, y).unwrap());
        let s = b
            .scan(add.clone(), Literal::U64(0), false, xs, None)
            .unwrap();
        let r = b.reduce(add, Literal::U64(0), s).unwrap();
        b.finish(&[r]).unwrap()
    }

    fn random_args(f: &Func, n: u64, seed: u64) -> Vec<Value> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        f.params
            .iter()
            .map(|_| Value::Array((0..n).map(|_| Value::U64(rng.gen())).collect()))
            .collect()
    }

    /// Plans `f` at N = `n`, checks whether it is chunked, and compares the plan (run part by part
    /// on the CPU, virtual instances included) with the program on a batch of two instances.
    fn check(f: &Func, n: u64, chunked: bool) -> Plan {
        let plan = compile_plan(f, &[n], &Target::h100(), &Hints::default()).unwrap();
        assert_eq!(
            plan.parts.iter().any(|p| p.instances > 1),
            chunked,
            "N={n}:\n{}",
            plan.explain()
        );
        let concrete = specialize(f, &[n]).unwrap();
        let batch: Vec<Vec<Value>> = (0..2).map(|s| random_args(f, n, s + n)).collect();
        let want: Vec<Vec<Value>> = batch.iter().map(|a| eval(&concrete, a).unwrap()).collect();
        assert_eq!(run_batch(&plan, &batch), want, "N={n}");
        assert_eq!(run_plan(&plan, &batch[1]), want[1]);
        plan
    }

    #[test]
    fn sums_are_chunked_above_the_limit_and_keep_their_meaning() {
        let f = sum();
        let small = check(&f, 1 << 10, false);
        assert!(!small.is_split());
        for n in [1 << 14, 3 << 12, 1 << 20] {
            let plan = check(&f, n, true);
            assert_eq!(plan.parts.len(), 2);
            assert_eq!(plan.parts[0].instances, n / CHUNK_LEN);
            assert_eq!(plan.parts[1].instances, 1);
            assert_eq!(
                plan.buffers[0],
                Type::array(Type::U64, Size::lit(n / CHUNK_LEN))
            );
            let text = plan.explain();
            assert!(text.contains("chunked"), "{text}");
            assert!(text.contains(&format!("L={CHUNK_LEN}")), "{text}");
            assert!(text.contains(&format!("C={}", n / CHUNK_LEN)), "{text}");
        }
    }

    #[test]
    fn dot_products_and_wrapping_products_are_chunked() {
        let f = dot_and_product();
        check(&f, 1 << 10, false);
        for n in [1 << 14, 3 << 12, 1 << 20] {
            let plan = check(&f, n, true);
            // One partial per reduction, both read by the combining kernel.
            assert_eq!(plan.parts[0].outputs.len(), 2);
            assert_eq!(plan.parts[1].inputs.len(), 2);
        }
    }

    #[test]
    fn tuple_accumulators_are_chunked_leaf_by_leaf() {
        let f = dot128();
        check(&f, 1 << 10, false);
        for n in [1 << 14, 3 << 12, 1 << 20] {
            let plan = check(&f, n, true);
            // (lo, hi): two partial buffers; the tail runs in the combining kernel.
            assert_eq!(plan.parts[0].outputs.len(), 2);
            assert_eq!(
                match &plan.parts[1].body {
                    Body::Ir(f) => f.outputs.len(),
                    _ => 0,
                },
                3
            );
        }
        // The carry matters: all-ones inputs overflow 64 bits at every step.
        let n = 1 << 14;
        let plan = compile_plan(&f, &[n], &Target::h100(), &Hints::default()).unwrap();
        let ones = Value::Array(vec![Value::U64(u64::MAX); n as usize]);
        let args = [ones.clone(), ones];
        let want = eval(&specialize(&f, &[n]).unwrap(), &args).unwrap();
        assert_eq!(run_plan(&plan, &args), want);
    }

    #[test]
    fn a_program_with_a_scan_is_not_chunked() {
        let f = scan_sum();
        assert_eq!(
            chunk(&specialize(&f, &[1 << 14]).unwrap(), CHUNK_LEN)
                .unwrap()
                .map(|c| c.len),
            None
        );
        match compile_plan(&f, &[1 << 14], &Target::h100(), &Hints::default()) {
            Ok(plan) => assert!(plan.parts.iter().all(|p| p.instances == 1)),
            Err(e) => assert!(matches!(e, CodegenError::TooBig(_)), "{e}"),
        }
    }

    #[test]
    fn lengths_without_a_useful_divisor_are_not_chunked() {
        // 65537 is prime: no chunk length in range divides it.
        assert_eq!(chunk_len_for(65537, CHUNK_LEN), None);
        assert_eq!(chunk_len_for(3 << 12, CHUNK_LEN), Some(1024));
        // 5 * 4099: its divisors are 5 and 4099, one too short, one too long.
        assert_eq!(chunk_len_for(5 * 4099, CHUNK_LEN), None);
        assert_eq!(chunk_len_for(7 * 3000, CHUNK_LEN), Some(1000));
        assert_eq!(chunk_len_for(7 * 3000, 4096), Some(3500));
        assert!(chunk(&specialize(&sum(), &[65537]).unwrap(), CHUNK_LEN)
            .unwrap()
            .is_none());
    }

    #[test]
    fn too_many_partials_are_chunked_again() {
        // 2^26 elements: 65536 partials, themselves reduced in chunks of 1024, then 64 combined.
        let plan = compile_plan(&dot128(), &[1 << 26], &Target::h100(), &Hints::default()).unwrap();
        let instances: Vec<u64> = plan.parts.iter().map(|p| p.instances).collect();
        assert_eq!(instances, vec![1 << 16, 64, 1], "{}", plan.explain());
        assert_eq!(plan.buffers[2], Type::array(Type::U64, Size::lit(64)));
        assert_eq!(
            plan.parts[1].inputs,
            vec![Source::Buffer(0), Source::Buffer(1)]
        );
    }

    #[test]
    fn both_kernels_of_a_chunked_dot_product_compile() {
        let plan = compile_plan(&dot128(), &[1 << 20], &Target::h100(), &Hints::default()).unwrap();
        assert_eq!(plan.parts.len(), 2);
        for p in &plan.parts {
            assert!(p.compiled.source.contains(&p.compiled.kernel_name));
        }
        assert_eq!(plan.parts[0].compiled.kernel_name, "bf_dot128_chunk1024");
        assert_eq!(plan.parts[1].compiled.kernel_name, "bf_dot128_combine1024");
    }
}

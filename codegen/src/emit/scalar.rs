//! Scalar operations as C: types, literals and operators, the lambdas of maps and scans applied
//! to registers leaf by leaf, and the per-element loop that maps run in. Whatever a single
//! thread computes without talking to another starts here.

use super::divide::Parts;
use super::{Emitter, Val};
use crate::error::{CgResult, CodegenError};
use bigfuse_core::ops::Intrinsic;
use bigfuse_core::{BinOp, Func, Literal, Op, Type, UnOp, ValueId};

pub(super) fn ctype(t: &Type) -> &'static str {
    match t {
        Type::Bool => "bool",
        Type::U32 => "u32",
        Type::U64 => "u64",
        _ => unreachable!("only scalar leaves have C types"),
    }
}

pub(super) fn literal(l: &Literal) -> Vec<String> {
    l.leaves()
        .iter()
        .map(|x| match x {
            Literal::Bool(b) => b.to_string(),
            Literal::U32(v) => format!("{v}u"),
            Literal::U64(v) if *v > 0xffff => format!("0x{v:x}ull"),
            Literal::U64(v) => format!("{v}ull"),
            Literal::Tuple(_) | Literal::Zp(..) | Literal::Big(..) => {
                unreachable!("tuples are flattened and residues lowered before emission")
            }
        })
        .collect()
}

/// `w` where `leaves` are `w[0]`, `w[1]`, .. in order: words that lie in memory as a device
/// function reads its operands ([`Emitter::instance_words`]).
pub(super) fn words_in_order(leaves: &[String]) -> Option<&str> {
    let (w, _) = word_at(leaves.first()?).filter(|&(_, k)| k == 0)?;
    let in_order = leaves
        .iter()
        .zip(0u64..)
        .all(|(l, k)| word_at(l) == Some((w, k)));
    in_order.then_some(w)
}

/// A word `w[k]` of words that lie in memory ([`Emitter::instance_words`]): `(w, k)`.
fn word_at(leaf: &str) -> Option<(&str, u64)> {
    let (w, k) = leaf.strip_suffix(']')?.split_once('[')?;
    Some((w, k.parse().ok()?)).filter(|_| !w.is_empty())
}

/// Where a device function's operand repeats a pattern over [`COPIED_RUN`] words or more: words
/// that lie in order in memory (a parameter's, read where they lie) or zeros. Such a run is
/// copied into the operand's array by a loop: the wide root's operand `(a << BITS) | b` at 65536
/// bits is 2,048 words of two parameters, which as an array's initializer held them all in
/// registers and took NVRTC 143 s (bench/RESULTS.md, twenty-fifth session).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Run<'a> {
    /// `n` words from `w[k]` on.
    Words { w: &'a str, k: u64, n: usize },
    /// `n` zeros.
    Zeros(usize),
    /// One word as it is.
    Leaf(&'a str),
}

/// The shortest run that a loop copies.
const COPIED_RUN: usize = 8;

/// `leaves` as runs: those of [`COPIED_RUN`] words or more, and single leaves between them.
fn runs(leaves: &[String]) -> Vec<Run<'_>> {
    let mut out: Vec<Run> = Vec::new();
    let mut i = 0;
    while i < leaves.len() {
        let from = &leaves[i..];
        let first = word_at(&from[0]);
        let n = match first {
            Some((w, k)) => from
                .iter()
                .zip(k..)
                .take_while(|(l, j)| word_at(l) == Some((w, *j)))
                .count(),
            None => from.iter().take_while(|l| **l == from[0]).count(),
        };
        let run = match first {
            _ if n < COPIED_RUN => Run::Leaf(&from[0]),
            Some((w, k)) => Run::Words { w, k, n },
            None if from[0] == "0ull" => Run::Zeros(n),
            None => Run::Leaf(&from[0]),
        };
        i += match run {
            Run::Words { n, .. } | Run::Zeros(n) => n,
            Run::Leaf(_) => 1,
        };
        out.push(run);
    }
    out
}

/// `op` on `a`, an operand of type `t`. Counts of zeros give the width for 0, as `__clz` does
/// (trailing zeros count the leading zeros of the bit-reversed word for that reason).
pub(super) fn unary_expr(op: UnOp, t: &Type, a: &str) -> String {
    let ll = if *t == Type::U32 { "" } else { "ll" };
    match (op, t) {
        (UnOp::Not, Type::Bool) => format!("(!{a})"),
        (UnOp::Not, t) => format!("(({})~{a})", ctype(t)),
        (UnOp::LeadingZeros, _) => format!("((u32)__clz{ll}({a}))"),
        (UnOp::TrailingZeros, _) => format!("((u32)__clz{ll}(__brev{ll}({a})))"),
        (UnOp::CountOnes, _) => format!("((u32)__popc{ll}({a}))"),
    }
}

pub(super) fn binary_expr(op: BinOp, t: &Type, a: &str, b: &str) -> String {
    let c = ctype(t);
    let width = if *t == Type::U32 { 32 } else { 64 };
    match (op, t) {
        (BinOp::And, Type::Bool) => format!("({a} && {b})"),
        (BinOp::Or, Type::Bool) => format!("({a} || {b})"),
        (BinOp::Xor, Type::Bool) => format!("({a} != {b})"),
        (BinOp::Add, _) => format!("(({c})({a} + {b}))"),
        (BinOp::Sub, _) => format!("(({c})({a} - {b}))"),
        (BinOp::Mul, _) => format!("(({c})({a} * {b}))"),
        (BinOp::MulHi, Type::U32) => format!("__umulhi({a}, {b})"),
        (BinOp::MulHi, _) => format!("__umul64hi({a}, {b})"),
        // The IR defines division by zero (all ones, remainder x) instead of leaving it to the GPU.
        (BinOp::Div, _) => format!("(({b}) ? (({c})({a} / {b})) : (({c})~({c})0))"),
        (BinOp::Rem, _) => format!("(({b}) ? (({c})({a} % {b})) : ({a}))"),
        (BinOp::And, _) => format!("({a} & {b})"),
        (BinOp::Or, _) => format!("({a} | {b})"),
        (BinOp::Xor, _) => format!("({a} ^ {b})"),
        (BinOp::Shl, _) => format!("(({c})({a} << ({b} & {}u)))", width - 1),
        (BinOp::Shr, _) => format!("({a} >> ({b} & {}u))", width - 1),
        (BinOp::Lt, _) => format!("({a} < {b})"),
        (BinOp::Le, _) => format!("({a} <= {b})"),
        (BinOp::Eq, _) => format!("({a} == {b})"),
        (BinOp::Ne, _) => format!("({a} != {b})"),
    }
}

impl Emitter<'_> {
    /// Emits lambda `f` applied to `args` (leaves per parameter); assigns its result leaves to `dest`.
    pub(super) fn apply(&mut self, f: &Func, args: &[Vec<String>], dest: &[String]) {
        if Intrinsic::of(f) == Some(Intrinsic::Add192) {
            // The 192-bit sum of delayed modular reductions as one carry chain.
            let (a, b) = (&args[0], &args[1]);
            self.open("{");
            self.line(format!("u64 s0 = {}, s1 = {}, s2 = {};", a[0], a[1], a[2]));
            self.line(format!(
                "asm(\"add.cc.u64 %0, %0, %3; addc.cc.u64 %1, %1, %4; addc.u64 %2, %2, %5;\" : \"+l\"(s0), \"+l\"(s1), \"+l\"(s2) : \"l\"({}), \"l\"({}), \"l\"({}));",
                b[0], b[1], b[2]
            ));
            self.line(format!(
                "{} = s0; {} = s1; {} = s2;",
                dest[0], dest[1], dest[2]
            ));
            self.close("}");
            return;
        }
        self.open("{");
        let mut vals: Vec<Vec<String>> = Vec::with_capacity(f.nodes.len());
        // Parameter words read from where the kernel parked them (`crate::place::Parking`): the
        // body's own reads only, not those of the loops inside it.
        let parking = self.parking.take();
        let block_threads = self.sched.block_threads;
        let slot = |p: &crate::place::Park, s: usize| {
            super::memory::park_slot(p, s, "volatile const u64", block_threads)
        };
        for (k, node) in f.nodes.iter().enumerate() {
            let leaves = node.ty.leaves();
            let forwards = matches!(node.op, Op::Tuple(_) | Op::Extract(..));
            let arg = |v: ValueId| -> Vec<String> {
                let held = &vals[v.index()];
                match &parking {
                    Some(p) if !forwards => held
                        .iter()
                        .enumerate()
                        .map(|(leaf, x)| match p.plan.read(k, v.index(), leaf) {
                            // Volatile: read there, not from the register it was stored from.
                            Some(s) => slot(p, s),
                            None => x.clone(),
                        })
                        .collect(),
                    _ => held.clone(),
                }
            };
            let new = match &node.op {
                Op::Param(i) => args[*i as usize].clone(),
                Op::Const(l) => literal(l),
                Op::Unary(u, a) => {
                    let e = unary_expr(*u, f.ty(*a), &arg(*a)[0]);
                    self.bind(&leaves, vec![e])
                }
                Op::Binary(op, a, b) => {
                    let e = binary_expr(*op, f.ty(*a), &arg(*a)[0], &arg(*b)[0]);
                    self.bind(&leaves, vec![e])
                }
                Op::Cast(a) => {
                    let e = format!("(({})({}))", ctype(&node.ty), arg(*a)[0]);
                    self.bind(&leaves, vec![e])
                }
                Op::Select(c, a, b) => {
                    let c = arg(*c)[0].clone();
                    let exprs = arg(*a)
                        .iter()
                        .zip(arg(*b))
                        .map(|(x, y)| format!("({c} ? {x} : {y})"))
                        .collect();
                    self.bind(&leaves, exprs)
                }
                Op::Tuple(xs) => xs.iter().flat_map(|x| arg(*x)).collect(),
                Op::Extract(t, i) => arg(*t)[f.ty(*t).field_leaves(*i)].to_vec(),
                Op::LimbPowMod(x, e, m) => self.pow_mod_call(&arg(*x), &arg(*e), &arg(*m)),
                Op::LimbMontMul(a, b, m) => self.mont_mul_call(&arg(*a), &arg(*b), &arg(*m)),
                Op::LimbGcd(a, b) => {
                    let into = self.written_into.clone().filter(|(d, ..)| *d == k);
                    self.gcd_call(&arg(*a), &arg(*b), into.map(|(_, at, u)| (at, u)))
                }
                Op::LimbMulWords(a, b, n) => {
                    self.mul_words_call(&arg(*a), &arg(*b), None, *n, a == b)
                }
                Op::LimbMulAddWords(a, b, c, n) => {
                    self.mul_words_call(&arg(*a), &arg(*b), Some(&arg(*c)), *n, false)
                }
                Op::LimbDivRem(a, b) => {
                    let parts = Parts::read_in(f, ValueId(k as u32));
                    let into = self.written_into.clone().filter(|(d, ..)| *d == k);
                    self.div_rem_call(&arg(*a), &arg(*b), parts, into.map(|(_, at, u)| (at, u)))
                }
                Op::LimbIsqrt(a) => {
                    let into = self.written_into.clone().filter(|(d, ..)| *d == k);
                    self.isqrt_call(&arg(*a), into.map(|(_, at, u)| (at, u)))
                }
                Op::LimbInvMod(a, m) => {
                    let into = self.written_into.clone().filter(|(d, ..)| *d == k);
                    self.inv_mod_call(&arg(*a), &arg(*m), into.map(|(_, at, u)| (at, u)))
                }
                Op::Loop { count, body, args } => {
                    let args: Vec<Vec<String>> = args.iter().map(|a| arg(*a)).collect();
                    self.rolled_loop(count.as_const().unwrap_or(0), body, &args)
                }
                other => {
                    unreachable!("validated lambdas hold only scalar operations, not {other:?}")
                }
            };
            vals.push(new);
        }
        // A lambda has one result; a loop body one per carried value, written one after another.
        let result: Vec<String> = f
            .outputs
            .iter()
            .flat_map(|o| vals[o.index()].clone())
            .collect();
        for (d, r) in dest.iter().zip(result) {
            if *d != r {
                self.line(format!("{d} = {r};"));
            }
        }
        self.close("}");
    }

    /// A loop that stayed a loop (see `crate::loops`): the carried values live in variables
    /// declared before it, each round computes the next ones from them and the captured values,
    /// then overwrites them. Returns the variables, which hold the result after the last round.
    fn rolled_loop(&mut self, rounds: u64, body: &Func, args: &[Vec<String>]) -> Vec<String> {
        let carried = body.outputs.len();
        let types: Vec<Type> = body.output_types().iter().flat_map(Type::leaves).collect();
        let init: Vec<String> = args[..carried].concat();
        self.line(format!("// a loop of {rounds} rounds"));
        let state = self.vars(&types, &init);
        let index = self.temp();
        // Unrolling is what this loop avoids: the CUDA compiler is held to one round at a time.
        self.line("#pragma unroll 1");
        self.open(format!(
            "for (u32 {index} = 0u; {index} < {rounds}u; ++{index}) {{"
        ));
        let next = self.vars(&types, &vec!["0".to_string(); types.len()]);
        let mut inputs = vec![vec![index.clone()]];
        let mut at = 0;
        for t in body.output_types() {
            let n = t.leaf_count();
            inputs.push(state[at..at + n].to_vec());
            at += n;
        }
        inputs.extend(args[carried..].iter().cloned());
        self.apply(body, &inputs, &next);
        for (s, n) in state.iter().zip(&next) {
            self.line(format!("{s} = {n};"));
        }
        self.close("}");
        state
    }

    /// The words of this thread's instance of parameter `param`, read where they lie (see
    /// [`crate::place::read_in_place`]): `w[k]` of a pointer `w` to them, which
    /// [`Self::device_call`] passes as it is. A thread past the batch's end reads instance 0's
    /// (a launch has at least one instance) and stores nothing.
    fn instance_words(&mut self, param: u32) -> Vec<String> {
        let units = self.inputs[param as usize].units;
        let w = self.temp();
        self.line(format!(
            "const u64* __restrict__ {w} = in{param} + (live ? inst : 0ull) * {units}ull;"
        ));
        self.in_place.push((w.clone(), param));
        (0..units).map(|k| format!("{w}[{k}]")).collect()
    }

    /// The operands of a device function call as arrays: each operand's leaves copied into one,
    /// or, where they lie in order in memory already, passed where they lie.
    pub(super) fn operand_arrays(&mut self, operands: &[&[String]]) -> Vec<String> {
        let mut args = Vec::with_capacity(operands.len());
        for (k, leaves) in operands.iter().enumerate() {
            if let Some(w) = words_in_order(leaves) {
                args.push(w.to_string());
                continue;
            }
            let runs = runs(leaves);
            if runs.iter().any(|r| !matches!(r, Run::Leaf(_))) {
                self.copied_operand(&format!("p{k}"), &runs, leaves.len());
                args.push(format!("p{k}"));
                continue;
            }
            self.line(format!(
                "__align__(16) const u64 p{k}[{}] = {{{}}};",
                leaves.len(),
                leaves.join(", ")
            ));
            args.push(format!("p{k}"));
        }
        args
    }

    /// Array `p` of `len` words filled from `runs`: a loop per run of words or zeros.
    fn copied_operand(&mut self, p: &str, runs: &[Run], len: usize) {
        self.line(format!("__align__(16) u64 {p}[{len}];"));
        let mut at = 0;
        for run in runs {
            let (n, word) = match *run {
                Run::Leaf(x) => {
                    self.line(format!("{p}[{at}] = {x};"));
                    at += 1;
                    continue;
                }
                Run::Words { w, k, n } => (n, format!("{w}[{k} + i]")),
                Run::Zeros(n) => (n, "0ull".to_string()),
            };
            self.line("#pragma unroll 1");
            self.line(format!(
                "for (int i = 0; i < {n}; ++i) {p}[{at} + i] = {word};"
            ));
            at += n;
        }
    }

    /// A call of a device function `name(u64* out, const u64* operand.., scalar..)` (one that
    /// computes a whole big-integer operation in a thread: `montgomery`, `gcd`) on these leaves,
    /// `functions` (its text and its callees', each written once per kernel) ahead of the kernel;
    /// returns the `out` limbs' names, then the bool it returns where `flag`.
    pub(super) fn device_call(
        &mut self,
        functions: Vec<(String, String)>,
        name: &str,
        out: usize,
        operands: &[&[String]],
        scalars: &[&str],
        flag: bool,
    ) -> Vec<String> {
        for (f, text) in functions {
            self.device_function(&f, |em| em.src.out.push_str(&text));
        }
        let r = self.temp();
        // Aligned: a function may read and write its arrays 16 bytes at a time.
        self.line(format!("__align__(16) u64 {r}[{out}];"));
        let f = flag.then(|| self.temp());
        if let Some(f) = &f {
            self.line(format!("bool {f};"));
        }
        self.open("{");
        let mut args = vec![r.clone()];
        args.extend(self.operand_arrays(operands));
        args.extend(scalars.iter().map(|s| s.to_string()));
        let call = format!("{name}({})", args.join(", "));
        match &f {
            Some(f) => self.line(format!("{f} = {call};")),
            None => self.line(format!("{call};")),
        }
        self.close("}");
        let mut types = vec![Type::U64; out];
        let mut exprs: Vec<String> = (0..out).map(|k| format!("{r}[{k}]")).collect();
        if let Some(f) = f {
            types.push(Type::Bool);
            exprs.push(f);
        }
        self.bind(&types, exprs)
    }

    /// A scalar operation: `make` writes the result's leaves from the arguments' leaves.
    pub(super) fn scalar_op(
        &mut self,
        id: ValueId,
        comment: &str,
        make: impl FnOnce(&[Vec<String>]) -> Vec<String>,
        args: &[ValueId],
    ) -> CgResult<Val> {
        let mut leaves = Vec::new();
        for a in args {
            match self.val(*a) {
                Val::Scalar(l) => leaves.push(l.clone()),
                _ => {
                    return Err(CodegenError::Unsupported(format!(
                        "{comment}: this operation applies to scalars only; use map over arrays"
                    )))
                }
            }
        }
        self.line(format!("// {comment}"));
        let exprs = make(&leaves);
        Ok(Val::Scalar(self.declare_scalar(id, exprs)))
    }

    /// An element-wise step: `body` writes element `q` of every result leaf from element `q` of the
    /// arguments (scalars are the same for every element).
    pub(super) fn map_like(
        &mut self,
        id: ValueId,
        comment: &str,
        body: impl Fn(&mut Self, &[Vec<String>], &[String]),
        args: &[ValueId],
    ) -> CgResult<Val> {
        let (q, len) = self.array_shape(&self.func.ty(id).clone());
        self.line(format!("// {comment}"));
        if crate::place::extracted_in_place(self.func, self.sched, id) {
            self.line("// written where its argument's map computes it");
            return Ok(Val::Written);
        }
        let written = crate::place::written_in_place(self.func, self.sched, id);
        // The leaves written where they go: none are declared, and the body's values for them
        // (zeros) go nowhere.
        let skipped = match written {
            Some(w) => match (w.field, self.func.ty(id)) {
                (Some(i), Type::Array(e, _)) => e.field_leaves(i as u32),
                _ => 0..usize::MAX,
            },
            None => 0..0,
        };
        let mut leaves = Vec::new();
        let mut dest = Vec::new();
        for (k, (t, n)) in self.registers(id).into_iter().enumerate() {
            if skipped.contains(&k) {
                leaves.push("bf_written".to_string());
                dest.push("0ull".to_string());
            } else {
                self.line(format!("{} {n}[{q}];", ctype(&t)));
                dest.push(format!("{n}[q]"));
                leaves.push(n);
            }
        }
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
        let mut a: Vec<Vec<String>> = Vec::with_capacity(args.len());
        for &x in args {
            a.push(match *self.val(x) {
                Val::Global(p) => self.instance_words(p),
                _ => self.element(x, "q"),
            });
        }
        self.parking = self.placement.park_of(id).cloned();
        self.written_into = written.map(|w| {
            let units = self.outputs[w.result].units;
            (w.node.index(), format!("out{}", w.result), units)
        });
        body(self, &a, &dest);
        self.parking = None;
        self.written_into = None;
        self.close("}");
        Ok(match written {
            Some(w) if w.field.is_none() => Val::Written,
            _ => Val::Array { leaves, q, len },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{runs, Run, COPIED_RUN};

    fn leaves(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    /// Words in order from one pointer and zeros become runs from [`COPIED_RUN`] on; a run
    /// breaks where the pointer or the next index changes; anything else stays a leaf.
    #[test]
    fn runs_of_words_and_zeros() {
        let n = COPIED_RUN;
        let mut xs: Vec<String> = (0..n + 2).map(|k| format!("x2[{k}]")).collect();
        xs.push("x7".into());
        xs.extend(leaves(&["0ull"; 9]));
        xs.extend((3..3 + n).map(|k| format!("x1[{k}]")));
        xs.extend((0..n - 1).map(|k| format!("x9[{k}]")));
        xs.push("x4[q]".into());
        let got = runs(&xs);
        let mut want = vec![
            Run::Words {
                w: "x2",
                k: 0,
                n: n + 2,
            },
            Run::Leaf("x7"),
            Run::Zeros(9),
            Run::Words { w: "x1", k: 3, n },
        ];
        want.extend(xs[xs.len() - n..].iter().map(|x| Run::Leaf(x)));
        assert_eq!(got, want);
        // Too short to copy: the array's initializer as before.
        let short = leaves(&["x2[0]", "x2[1]", "0ull", "0ull", "x5"]);
        assert!(runs(&short).iter().all(|r| matches!(r, Run::Leaf(_))));
        // Indices that skip one are two runs.
        let mut gap: Vec<String> = (0..n).map(|k| format!("w[{k}]")).collect();
        gap.extend((n + 1..2 * n + 1).map(|k| format!("w[{k}]")));
        assert_eq!(
            runs(&gap),
            vec![
                Run::Words { w: "w", k: 0, n },
                Run::Words {
                    w: "w",
                    k: n as u64 + 1,
                    n
                }
            ]
        );
    }
}

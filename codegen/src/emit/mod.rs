//! Emission: CUDA C text for one scheduled, placed kernel. The only place CUDA is written.
//!
//! Layout in global memory: see [`crate::layout`] (instance after instance; units as wide as
//! their values). Each thread holds Q consecutive elements of every array in registers; names are deterministic (`v<node>` for values, `x<n>` for temporaries) and every
//! block of code says which IR value it computes.

mod add;
mod carry;
mod memory;
mod mul;
mod ntt;
mod polymul;
mod prologue;
mod scan;
mod warp;

use crate::error::{CgResult, CodegenError};
use crate::place::{is_carry_scan, Placement};
use crate::schedule::Schedule;
use bigfuse_core::{BinOp, Func, Literal, Op, Type, UnOp, ValueId};

pub use crate::layout::{layout_of, BufferLayout};
pub use prologue::{ntt_tables, table_words};

fn ctype(t: &Type) -> &'static str {
    match t {
        Type::Bool => "bool",
        Type::U32 => "u32",
        Type::U64 => "u64",
        _ => unreachable!("only scalar leaves have C types"),
    }
}

fn literal(l: &Literal) -> Vec<String> {
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

/// Leaf range of field `i` of a tuple type.
fn field_range(t: &Type, i: u32) -> std::ops::Range<usize> {
    let Type::Tuple(ts) = t else {
        unreachable!("extract from a non-tuple")
    };
    let start: usize = ts[..i as usize].iter().map(Type::leaf_count).sum();
    start..start + ts[i as usize].leaf_count()
}

fn unary_expr(t: &Type, a: &str) -> String {
    match t {
        Type::Bool => format!("(!{a})"),
        t => format!("(({})~{a})", ctype(t)),
    }
}

fn binary_expr(op: BinOp, t: &Type, a: &str, b: &str) -> String {
    let c = if *t == Type::Bool { "bool" } else { ctype(t) };
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

/// A value as the kernel holds it.
#[derive(Clone, Debug)]
enum Val {
    /// Leaves are C expressions (names or literals), one per scalar leaf.
    Scalar(Vec<String>),
    /// Leaves are names of register arrays of `q` elements; `len` elements are real.
    Array {
        leaves: Vec<String>,
        q: u32,
        len: u64,
    },
    /// A big-integer parameter, still in global memory.
    Global(u32),
}

struct Emitter<'a> {
    func: &'a Func,
    sched: &'a Schedule,
    placement: &'a Placement,
    out: String,
    depth: usize,
    vals: Vec<Option<Val>>,
    temps: u32,
    /// Additions selected as carry chains, by their partial map.
    groups: std::collections::HashMap<ValueId, add::CarryGroup>,
    /// Device functions the kernel calls, by name, in order of first use: written before the
    /// kernel, each once however many steps call it.
    functions: Vec<(String, String)>,
}

impl<'a> Emitter<'a> {
    fn line(&mut self, s: impl AsRef<str>) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    fn open(&mut self, s: impl AsRef<str>) {
        self.line(s);
        self.depth += 1;
    }

    fn close(&mut self, s: &str) {
        self.depth -= 1;
        self.line(s);
    }

    /// Emits the device function `name` (its whole text, written by `body` from column 0) once
    /// per kernel, however often it is asked for.
    fn device_function(&mut self, name: &str, body: impl FnOnce(&mut Self)) {
        if self.functions.iter().any(|(n, _)| n == name) {
            return;
        }
        let kernel = std::mem::take(&mut self.out);
        let depth = std::mem::replace(&mut self.depth, 0);
        body(self);
        let text = std::mem::replace(&mut self.out, kernel);
        self.depth = depth;
        self.functions.push((name.to_string(), text));
    }

    fn temp(&mut self) -> String {
        self.temps += 1;
        format!("x{}", self.temps)
    }

    fn val(&self, id: ValueId) -> &Val {
        self.vals[id.index()]
            .as_ref()
            .expect("values are emitted before use")
    }

    fn leaf_types(&self, id: ValueId) -> Vec<Type> {
        self.func.ty(id).leaves()
    }

    /// Declares temporaries for `exprs` (leaves of type `ty`) and returns their names.
    fn bind(&mut self, ty: &[Type], exprs: Vec<String>) -> Vec<String> {
        ty.iter()
            .zip(exprs)
            .map(|(t, e)| {
                let n = self.temp();
                self.line(format!("const {} {n} = {e};", ctype(t)));
                n
            })
            .collect()
    }

    /// Emits lambda `f` applied to `args` (leaves per parameter); assigns its result leaves to `dest`.
    fn apply(&mut self, f: &Func, args: &[Vec<String>], dest: &[String]) {
        if *f == *crate::modular::add192() {
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
        for node in &f.nodes {
            let leaves = node.ty.leaves();
            let arg = |v: ValueId| vals[v.index()].clone();
            let new = match &node.op {
                Op::Param(i) => args[*i as usize].clone(),
                Op::Const(l) => literal(l),
                Op::Unary(UnOp::Not, a) => {
                    let e = unary_expr(&node.ty, &arg(*a)[0]);
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
                Op::Extract(t, i) => arg(*t)[field_range(f.ty(*t), *i)].to_vec(),
                other => {
                    unreachable!("validated lambdas hold only scalar operations, not {other:?}")
                }
            };
            vals.push(new);
        }
        let result = vals[f.outputs[0].index()].clone();
        for (d, r) in dest.iter().zip(result) {
            if *d != r {
                self.line(format!("{d} = {r};"));
            }
        }
        self.close("}");
    }

    fn declare_array(&mut self, id: ValueId, q: u32) -> Vec<String> {
        let leaves = self.leaf_types(id);
        let single = leaves.len() == 1;
        leaves
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let n = if single {
                    format!("v{}", id.0)
                } else {
                    format!("v{}_{k}", id.0)
                };
                self.line(format!("{} {n}[{q}];", ctype(t)));
                n
            })
            .collect()
    }

    fn declare_scalar(&mut self, id: ValueId, init: Option<Vec<String>>) -> Vec<String> {
        let leaves = self.leaf_types(id);
        let single = leaves.len() == 1;
        leaves
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let n = if single {
                    format!("v{}", id.0)
                } else {
                    format!("v{}_{k}", id.0)
                };
                match &init {
                    Some(i) => self.line(format!("{} {n} = {};", ctype(t), i[k])),
                    None => self.line(format!("{} {n};", ctype(t))),
                }
                n
            })
            .collect()
    }

    fn array_parts(&self, id: ValueId) -> (Vec<String>, u32, u64) {
        match self.val(id) {
            Val::Array { leaves, q, len } => (leaves.clone(), *q, *len),
            other => unreachable!("expected an array, found {other:?}"),
        }
    }

    /// Element `q` of every leaf of an argument (arrays) or the argument itself (scalars).
    fn element(&self, id: ValueId, q: &str) -> Vec<String> {
        match self.val(id) {
            Val::Array { leaves, .. } => leaves.iter().map(|l| format!("{l}[{q}]")).collect(),
            Val::Scalar(leaves) => leaves.clone(),
            Val::Global(_) => unreachable!("big parameters are read through limbs"),
        }
    }

    fn emit_node(&mut self, id: ValueId) -> CgResult<()> {
        let node = &self.func.nodes[id.index()];
        let ty = node.ty.clone();
        let comment = node_comment(self.func, id);
        let val = match &node.op {
            Op::Param(i) => self.load_param(id, *i, &comment),
            Op::Const(l) => Val::Scalar(literal(l)),
            Op::Unary(UnOp::Not, a) => {
                self.scalar_op(id, &comment, |s| vec![unary_expr(&ty, &s[0][0])], &[*a])?
            }
            Op::Binary(op, a, b) => {
                let t = self.func.ty(*a).clone();
                self.scalar_op(
                    id,
                    &comment,
                    |s| vec![binary_expr(*op, &t, &s[0][0], &s[1][0])],
                    &[*a, *b],
                )?
            }
            Op::Cast(a) => self.scalar_op(
                id,
                &comment,
                |s| vec![format!("(({})({}))", ctype(&ty), s[0][0])],
                &[*a],
            )?,
            Op::Select(c, a, b) => {
                if let Type::Array(..) = ty {
                    self.map_like(
                        id,
                        &comment,
                        |e, args, dest| {
                            for (k, d) in dest.iter().enumerate() {
                                e.line(format!(
                                    "{d} = {} ? {} : {};",
                                    args[0][0], args[1][k], args[2][k]
                                ));
                            }
                        },
                        &[*c, *a, *b],
                    )?
                } else {
                    self.scalar_op(
                        id,
                        &comment,
                        |s| {
                            s[1].iter()
                                .zip(&s[2])
                                .map(|(x, y)| format!("({} ? {x} : {y})", s[0][0]))
                                .collect()
                        },
                        &[*c, *a, *b],
                    )?
                }
            }
            Op::Tuple(xs) => {
                let mut leaves = Vec::new();
                for x in xs {
                    match self.val(*x) {
                        Val::Scalar(l) => leaves.extend(l.clone()),
                        _ => return Err(unsupported_tuple()),
                    }
                }
                Val::Scalar(leaves)
            }
            Op::Extract(t, i) => match self.val(*t) {
                Val::Scalar(l) => Val::Scalar(l[field_range(self.func.ty(*t), *i)].to_vec()),
                _ => return Err(unsupported_tuple()),
            },
            Op::Limbs(p) => {
                let Val::Global(pi) = *self.val(*p) else {
                    return Err(CodegenError::Unsupported(
                        "limbs of a computed big integer".into(),
                    ));
                };
                self.load(id, pi, &comment)
            }
            Op::FromLimbs(a) => self.val(*a).clone(),
            Op::Iota(_) => {
                let (q, len) = self.array_shape(&ty);
                self.line(format!("// {comment}"));
                let leaves = self.declare_array(id, q);
                self.line("#pragma unroll");
                self.line(format!(
                    "for (int q = 0; q < {q}; ++q) {}[q] = (u64)(t * {q}u + q);",
                    leaves[0]
                ));
                Val::Array { leaves, q, len }
            }
            Op::Map { f, args } => {
                let f = (**f).clone();
                self.map_like(id, &comment, move |e, a, dest| e.apply(&f, a, dest), args)?
            }
            Op::Zip(xs) => {
                let mut leaves = Vec::new();
                let (mut q, mut len) = (0, 0);
                for x in xs {
                    let (l, xq, xlen) = self.array_parts(*x);
                    leaves.extend(l);
                    q = xq;
                    len = xlen;
                }
                Val::Array { leaves, q, len }
            }
            Op::Scan { flags, .. } => {
                if flags.is_some() {
                    return Err(CodegenError::Unsupported(
                        "segmented scans must be lowered first".into(),
                    ));
                }
                let carry = is_carry_scan(self.func, id);
                self.scan(id, &comment, carry)
            }
            Op::Reduce { op, init, input } => self.reduce(id, &comment, op, init, *input),
            Op::LimbMul {
                algo: bigfuse_core::MulAlgo::Ntt,
                ..
            } => self.ntt_mul(id, &comment),
            Op::LimbMul { .. } => self.limb_mul(id, &comment),
            Op::PolyMul { .. } => self.poly_mul(id, &comment),
            Op::BigAdd(..)
            | Op::BigSub(..)
            | Op::BigCmp(..)
            | Op::BigMul(..)
            | Op::BigMulWide(..)
            | Op::ZpPow(..)
            | Op::ZpInv(..) => {
                return Err(CodegenError::Unsupported(
                    "big-integer and modular operations must be lowered first".into(),
                ))
            }
        };
        self.vals[id.index()] = Some(val);
        Ok(())
    }

    fn array_shape(&self, ty: &Type) -> (u32, u64) {
        let Type::Array(_, n) = ty else {
            unreachable!()
        };
        let len = n.as_const().unwrap_or(0);
        (self.sched.q_of(len), len)
    }

    fn scalar_op(
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
        Ok(Val::Scalar(self.declare_scalar(id, Some(exprs))))
    }

    fn map_like(
        &mut self,
        id: ValueId,
        comment: &str,
        body: impl Fn(&mut Self, &[Vec<String>], &[String]),
        args: &[ValueId],
    ) -> CgResult<Val> {
        let (q, len) = self.array_shape(&self.func.ty(id).clone());
        self.line(format!("// {comment}"));
        let leaves = self.declare_array(id, q);
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
        let a: Vec<Vec<String>> = args.iter().map(|x| self.element(*x, "q")).collect();
        let dest: Vec<String> = leaves.iter().map(|l| format!("{l}[q]")).collect();
        body(self, &a, &dest);
        self.close("}");
        Ok(Val::Array { leaves, q, len })
    }

    /// True when a thread's elements `[t*q, t*q+q)` may run past `len`.
    fn padded(&self, q: u32, len: u64) -> bool {
        self.sched.threads_per_instance as u64 * q as u64 > len
    }

    // ---- cross-thread steps -------------------------------------------------------------------

    /// Declares `leaves` temporaries of the given types, initialised with `init`.
    fn vars(&mut self, types: &[Type], init: &[String]) -> Vec<String> {
        types
            .iter()
            .zip(init)
            .map(|(t, i)| {
                let n = self.temp();
                self.line(format!("{} {n} = {i};", ctype(t)));
                n
            })
            .collect()
    }
}

fn unsupported_tuple() -> CodegenError {
    CodegenError::Unsupported("tuples of arrays inside a kernel (zip the arrays instead)".into())
}

fn node_comment(func: &Func, id: ValueId) -> String {
    bigfuse_core::node_text(func, id)
}

/// The CUDA C source of one kernel.
pub fn emit(
    func: &Func,
    sched: &Schedule,
    placement: &Placement,
    kernel_name: &str,
    header: &str,
) -> CgResult<String> {
    let mut e = Emitter {
        func,
        sched,
        placement,
        out: String::new(),
        depth: 0,
        vals: vec![None; func.nodes.len()],
        temps: 0,
        groups: add::find_groups(func),
        functions: Vec::new(),
    };
    e.preamble(header);
    // Device functions the steps ask for are written here, ahead of the kernel, at the end.
    let kernel_at = e.out.len();
    e.signature(kernel_name)?;
    e.indices();
    for id in func.ids() {
        if let Some(g) = e.groups.get(&id).copied() {
            let comment = node_comment(func, id);
            e.carry_group(&g, &comment);
            // The partial map itself is never read outside the group.
            e.vals[id.index()] = Some(Val::Scalar(vec![]));
        } else if e.vals[id.index()].is_none() {
            e.emit_node(id)?;
        }
        for (k, o) in func.outputs.iter().enumerate() {
            if *o == id {
                e.store(k, id);
            }
        }
    }
    e.depth = 0;
    e.line("}");
    let mut out = e.out;
    let functions: String = e.functions.iter().map(|(_, f)| format!("{f}\n")).collect();
    out.insert_str(kernel_at, &functions);
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    Ok(out)
}

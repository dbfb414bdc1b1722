//! Emission: CUDA C text for one scheduled, placed kernel. The only place CUDA is written.
//!
//! Each thread holds Q consecutive elements of every array in registers; names are deterministic
//! (`v<node>` for values, `x<n>` for temporaries) and every block of code says which IR value it
//! computes. This file holds the entry point, the `Emitter` with its text, and the dispatch over
//! nodes; each concern has a file of its own:
//! - `prologue`: the kernel's ABI (signature, order of twiddle tables) and the text before the
//!   first value;
//! - `values`: register names and declarations, arrays as Q elements per thread;
//! - `scalar`: C expressions, lambdas, element-wise maps;
//! - `memory`: global loads and stores (layouts from [`crate::layout`]), staging-buffer slots;
//! - `warp`: shuffles, lane scans and reductions;
//! - `scan`: scans and reductions over an instance: thread, lanes, then warps;
//! - `carry`: carries between threads, resolved with ballots;
//! - `lookback`: scans across the blocks of instances that span several;
//! - `add`: additions and subtractions as PTX carry chains;
//! - `mul`, `ntt`, `polymul`: products;
//! - `montgomery`, `montgomery_group`: modular exponentiation, one device function per widths,
//!   for one thread or a group of threads per instance;
//! - `gcd`: gcd and modular inverse, one device function per width.

mod add;
mod carry;
mod chain;
mod divide;
mod gcd;
mod gcd_group;
#[cfg(test)]
mod host;
mod isqrt;
mod lookback;
mod memory;
mod montgomery;
mod montgomery_group;
mod mul;
mod mul_words;
mod ntt;
pub(crate) mod ntt_global;
mod polymul;
mod prologue;
mod scalar;
mod scan;
mod staging;
mod values;
mod warp;

use crate::error::{CgResult, CodegenError};
use crate::isel::{Product, Selection};
use crate::place::Placement;
use crate::schedule::Schedule;
use bigfuse_core::{Func, Op, Type, ValueId};
use scalar::{binary_expr, ctype, literal, unary_expr};

pub use crate::layout::{layout_of, BufferLayout};

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
    /// Already in the kernel's result buffer: the code that computed it wrote it there.
    Written,
}

/// One kernel being written: its text so far and what each node became.
struct Emitter<'a> {
    func: &'a Func,
    sched: &'a Schedule,
    placement: &'a Placement,
    /// What instruction selection chose for each node.
    sel: &'a Selection,
    /// Layouts of the parameters' and results' buffers: the signature declares them, loads and
    /// stores address them.
    inputs: Vec<BufferLayout>,
    outputs: Vec<BufferLayout>,
    src: Src,
    vals: Vec<Option<Val>>,
    temps: u32,
    /// Device functions the kernel calls, by name, in order of first use: written before the
    /// kernel, each once however many steps call it.
    functions: Vec<(String, String)>,
    /// In kernels with halo lanes (`lookback.rs`): per node, the first limb of the halo lane
    /// from which its elements are exact (those below may lack a carry from before the halo),
    /// and the warp-uniform condition that the halo decided every carry so far.
    exact: Vec<Option<(u32, String)>>,
    /// The scratch the kernel's launches pass ([`scratch_of`]): where instances span blocks and
    /// have scans.
    scratch: Option<crate::layout::Scratch>,
    /// Whether NTT products read their operands from memory and park what is live across them
    /// (`staging::stages`), decided once for the kernel.
    staging: bool,
    /// Arrays of words read into registers, (parameter, words per instance, words per thread):
    /// prefetched for a later block before the first look-back
    /// ([`Emitter::prefetch_later_tiles`]).
    prefetches: Vec<(u32, u64, u32)>,
    /// While a map's body is written: where its parameters' words are parked and which steps
    /// read them there ([`crate::place::Park`]), for [`Emitter::apply`].
    parking: Option<crate::place::Park>,
    /// While a map's body is written: its division or gcd that writes the kernel's result where
    /// it goes (body node, the result's buffer and its words per instance;
    /// [`crate::place::written_in_place`]).
    written_into: Option<(usize, String, u64)>,
    /// Pointers to this thread's instance of a parameter read where it lies, and the parameter
    /// ([`Self::instance_words`]): what a warp may read for its lanes together.
    in_place: Vec<(String, u32)>,
}

/// CUDA text being written, indented by block depth: how every emitter writes its lines.
#[derive(Default)]
pub(crate) struct Src {
    pub(crate) out: String,
    pub(crate) depth: usize,
}

impl Src {
    pub(crate) fn line(&mut self, s: impl AsRef<str>) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    /// A line that opens a block: the lines after it are indented one level more.
    pub(crate) fn open(&mut self, s: impl AsRef<str>) {
        self.line(s);
        self.depth += 1;
    }

    pub(crate) fn close(&mut self, s: &str) {
        self.depth -= 1;
        self.line(s);
    }

    /// A line that closes a block and opens the next, as `} else {`.
    pub(crate) fn close_open(&mut self, s: &str) {
        self.close(s);
        self.depth += 1;
    }
}

impl<'a> Emitter<'a> {
    fn line(&mut self, s: impl AsRef<str>) {
        self.src.line(s);
    }

    fn open(&mut self, s: impl AsRef<str>) {
        self.src.open(s);
    }

    fn close(&mut self, s: &str) {
        self.src.close(s);
    }

    fn close_open(&mut self, s: &str) {
        self.src.close_open(s);
    }

    /// Emits the device function `name` (its whole text, written by `body` from column 0) once
    /// per kernel, however often it is asked for.
    fn device_function(&mut self, name: &str, body: impl FnOnce(&mut Self)) {
        if self.functions.iter().any(|(n, _)| n == name) {
            return;
        }
        let kernel = std::mem::take(&mut self.src.out);
        let depth = std::mem::replace(&mut self.src.depth, 0);
        body(self);
        let text = std::mem::replace(&mut self.src.out, kernel);
        self.src.depth = depth;
        self.functions.push((name.to_string(), text));
    }

    fn emit_node(&mut self, id: ValueId) -> CgResult<()> {
        let node = &self.func.nodes[id.index()];
        let ty = node.ty.clone();
        let comment = node_comment(self.func, id);
        let val = match &node.op {
            Op::Param(i) => self.load_param(id, *i, &comment),
            Op::Const(l) => Val::Scalar(literal(l)),
            Op::Unary(u, a) => {
                let t = self.func.ty(*a).clone();
                self.scalar_op(id, &comment, |s| vec![unary_expr(*u, &t, &s[0][0])], &[*a])?
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
                Val::Scalar(l) => Val::Scalar(l[self.func.ty(*t).field_leaves(*i)].to_vec()),
                _ => return Err(unsupported_tuple()),
            },
            Op::Limbs(p) => {
                let Val::Global(pi) = *self.val(*p) else {
                    return Err(CodegenError::Unsupported(
                        "limbs of a computed big integer".into(),
                    ));
                };
                if self.read_in_place(id) {
                    Val::Global(pi)
                } else {
                    self.load(id, pi, &comment)
                }
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
                let carry = self.sel.is_carry_scan(id);
                self.scan(id, &comment, carry)
            }
            Op::Reduce { op, init, input } => self.reduce(id, &comment, op, init, *input),
            // Products are emitted as instruction selection planned them.
            Op::LimbMul { .. } | Op::PolyMul { .. } => match self.sel.product(id) {
                Some(Product::Classical { .. }) => self.limb_mul(id, &comment),
                Some(Product::Ntt(plan)) => self.ntt_mul(id, plan, &comment),
                Some(Product::Poly(plan)) => self.poly_mul(id, plan, &comment),
                None => unreachable!("instruction selection plans every product"),
            },
            Op::Gather { src, idx } => self.gather(id, &comment, *src, *idx),
            Op::BigAdd(..)
            | Op::BigSub(..)
            | Op::BigCmp(..)
            | Op::BigMul(..)
            | Op::BigMulWide(..)
            | Op::BigDiv(..)
            | Op::BigRem(..)
            | Op::BigIsqrt(..)
            | Op::BigPowMod(..)
            | Op::LimbPowMod(..)
            | Op::BigMod(..)
            | Op::BigMontMul(..)
            | Op::LimbMontMul(..)
            | Op::BigGcd(..)
            | Op::BigInvMod(..)
            | Op::LimbGcd(..)
            | Op::LimbInvMod(..)
            | Op::LimbMulWords(..)
            | Op::LimbMulAddWords(..)
            | Op::BigDivRem(..)
            | Op::LimbDivRem(..)
            | Op::BigIsqrtWhole(..)
            | Op::LimbIsqrt(..)
            | Op::BigUnary(..)
            | Op::BigBitwise(..)
            | Op::BigShift(..)
            | Op::BigBit(..)
            | Op::Loop { .. }
            | Op::ZpPow(..)
            | Op::ZpInv(..) => {
                return Err(CodegenError::Unsupported(
                    "big-integer and modular operations and loops must be lowered first (a power modulo \
                     a big integer is computed inside a closure, one thread per instance)"
                        .into(),
                ))
            }
        };
        self.vals[id.index()] = Some(val);
        Ok(())
    }
}

fn unsupported_tuple() -> CodegenError {
    CodegenError::Unsupported("tuples of arrays inside a kernel (zip the arrays instead)".into())
}

fn node_comment(func: &Func, id: ValueId) -> String {
    bigfuse_core::node_text(func, id)
}

/// The global scratch the kernel's launches pass ([`crate::layout::Scratch`]): look-back records
/// where instances span blocks, and staging slots for NTT operands held in registers (`emit::staging`).
pub fn scratch_of(
    func: &Func,
    sel: &Selection,
    sched: &Schedule,
) -> Option<crate::layout::Scratch> {
    let (scans, leaves) =
        lookback::lookback_records(func, sched.blocks_per_instance).unwrap_or((0, 0));
    let staged_words = staging::staged_words(func, sel, sched);
    (scans > 0 || staged_words > 0).then_some(crate::layout::Scratch {
        scans,
        leaves,
        staged_words,
    })
}

/// The CUDA C source of one kernel.
pub fn emit(
    func: &Func,
    sel: &Selection,
    sched: &Schedule,
    placement: &Placement,
    kernel_name: &str,
    header: &str,
) -> CgResult<String> {
    let (inputs, outputs) = crate::layout::buffer_layouts(func)?;
    let mut e = Emitter {
        func,
        sched,
        placement,
        sel,
        inputs,
        outputs,
        src: Src::default(),
        vals: vec![None; func.nodes.len()],
        temps: 0,
        functions: Vec::new(),
        exact: vec![None; func.nodes.len()],
        scratch: scratch_of(func, sel, sched),
        staging: staging::stages(func, sel, sched),
        prefetches: Vec::new(),
        parking: None,
        written_into: None,
        in_place: Vec::new(),
    };
    e.preamble(header);
    // Device functions the steps ask for are written here, ahead of the kernel, at the end.
    let kernel_at = e.src.out.len();
    e.signature(kernel_name);
    e.indices();
    e.claim_staging_slot();
    for id in func.ids() {
        if let Some(sum) = sel.fused_ntt_sum(id, sched) {
            let terms: Vec<String> = sum.products.iter().map(|p| p.to_string()).collect();
            let comment = format!("{} = {}, one product", sum.chain.apply, terms.join(" + "));
            e.ntt_sum(sum, &comment);
        } else if sel.computed_by_fused_ntt_sum(id, sched) {
            // Part of a sum that runs as one product: the sum's code at its node computes it.
        } else if let Some(g) = sel.carry_chain(id).copied() {
            let comment = node_comment(func, id);
            e.carry_group(&g, &comment);
            // The partial map itself is never read outside the group.
            e.vals[id.index()] = Some(Val::Scalar(vec![]));
        } else if e.vals[id.index()].is_none() {
            e.emit_node(id)?;
        }
        if sched.lane_halo && e.exact[id.index()].is_none() {
            // Element-wise work is exact where all its operands are.
            let args = func.node(id).op.args();
            e.exact[id.index()] = e.halo_exact(&args);
        }
        for (k, o) in func.outputs.iter().enumerate() {
            if *o == id {
                e.store(k, id);
            }
        }
    }
    e.release_staging_slot();
    e.src.depth = 0;
    e.line("}");
    let mut out = e.src.out;
    let functions: String = e.functions.iter().map(|(_, f)| format!("{f}\n")).collect();
    out.insert_str(kernel_at, &functions);
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    Ok(out)
}

//! Scans across the blocks of an instance that spans several ([`crate::schedule::spans_blocks`]):
//! decoupled look-back (Merrill and Garland, "Single-pass Parallel Prefix Scan with Decoupled
//! Look-back", 2016), so that each element is read and written once, in one kernel.
//!
//! Each block first scans its own threads as a one-block instance would, then its last thread
//! publishes the block's aggregate and walks back over the blocks before it in the instance,
//! combining their published values until it meets an inclusive prefix; it publishes its own
//! inclusive prefix and hands the blocks' prefix to its threads through shared memory. The first
//! block of an instance publishes its inclusive prefix at once. Blocks take their places from a
//! ticket counter in the order they start (`prologue.rs`), so a block only ever waits for blocks
//! that already run: the look-back cannot deadlock whatever order the hardware starts blocks in.
//! The scratch's layout is [`crate::layout::Scratch`].

use super::{scalar::ctype, Emitter};
use crate::layout::Scratch;
use bigfuse_core::{Func, Op, Type, ValueId};

/// The scratch a kernel's instances need to span blocks: one status per scan and block.
pub fn scratch_of(func: &Func, blocks_per_instance: u32) -> Option<Scratch> {
    if blocks_per_instance <= 1 {
        return None;
    }
    let leaves = scans(func)
        .map(|id| match &func.node(id).op {
            Op::Scan { init, .. } => init.leaves().len() as u32,
            _ => unreachable!("scans() yields scans"),
        })
        .max()?;
    Some(Scratch {
        scans: scans(func).count() as u32,
        leaves,
    })
}

/// The scans of `func` in node order: scan `k` has status words `k` in the scratch.
fn scans(func: &Func) -> impl Iterator<Item = ValueId> + '_ {
    func.ids()
        .filter(|id| matches!(func.node(*id).op, Op::Scan { .. }))
}

impl Emitter<'_> {
    /// This thread's exclusive prefix over its whole instance, from `pre`, its exclusive prefix
    /// within its block, and `agg`, the combination of its own elements: the blocks before this
    /// one in the instance are combined in front of `pre`. `op` is the scan's operator (`init` its
    /// identity); `scan` the scan node, which names its status words.
    pub(super) fn across_blocks(
        &mut self,
        scan: ValueId,
        op: &Func,
        types: &[Type],
        init: &[String],
        pre: &[String],
        agg: &[String],
    ) -> Vec<String> {
        let scratch = crate::emit::lookback::scratch_of(self.func, self.sched.blocks_per_instance)
            .expect("a kernel whose instances span blocks has scratch");
        let k = scans(self.func)
            .position(|id| id == scan)
            .expect("the node is a scan");
        let l = scratch.leaves as usize;
        let n = types.len();
        let last = self.sched.block_threads - 1;
        let shared = format!("bf_lb{k}");
        self.line(format!(
            "// the blocks before this one in the instance: decoupled look-back (scan {k})"
        ));
        self.line(format!("__shared__ u64 {shared}[{n}];"));
        self.open(format!("if (threadIdx.x == {last}u) {{"));
        let incl = self.vars(types, init);
        self.apply(op, &[pre.to_vec(), agg.to_vec()], &incl);
        self.line(format!(
            "volatile u32* st = bf_scratch + {}u + {k}ull * gridDim.x;",
            Scratch::HEADER / 4
        ));
        self.line(format!(
            "volatile u64* sv = reinterpret_cast<volatile u64*>(reinterpret_cast<unsigned char*>(bf_scratch) + ((({}ull + {}ull * gridDim.x) + 7ull) & ~7ull)) + {k}ull * gridDim.x * {}ull;",
            Scratch::HEADER,
            4 * scratch.scans,
            2 * l
        ));
        // Slot 0 of a block's pair holds its aggregate, slot 1 its inclusive prefix: a reader
        // that saw the aggregate's status never reads a value written after it.
        let publish = |e: &mut Self, values: &[String], which: usize, status: u32| {
            for (i, v) in values.iter().enumerate() {
                e.line(format!(
                    "sv[(u64)vb * {}ull + {}u] = (u64)({v});",
                    2 * l,
                    which * l + i
                ));
            }
            e.line("__threadfence();");
            e.line(format!("st[vb] = {status}u;"));
        };
        self.open("if (part == 0u) {");
        publish(self, &incl, 1, 2);
        for (i, v) in init.iter().enumerate() {
            self.line(format!("{shared}[{i}] = (u64)({v});"));
        }
        self.close("} else {");
        self.depth += 1;
        publish(self, &incl, 0, 1);
        let acc = self.vars(types, init);
        self.line("u32 j = vb - 1u;");
        self.open("while (true) {");
        self.line("u32 f;");
        self.line("do { f = st[j]; } while (f == 0u);");
        self.line("__threadfence();");
        let earlier: Vec<String> = types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let raw = format!("sv[(u64)j * {}ull + (f == 2u ? {l}u : 0u) + {i}u]", 2 * l);
                leaf(t, &raw)
            })
            .collect();
        let earlier = self.bind(types, earlier);
        self.apply(op, &[earlier, acc.clone()], &acc);
        self.line("if (f == 2u) break;");
        self.line("--j;");
        self.close("}");
        let whole = self.vars(types, init);
        self.apply(op, &[acc.clone(), incl.clone()], &whole);
        publish(self, &whole, 1, 2);
        for (i, v) in acc.iter().enumerate() {
            self.line(format!("{shared}[{i}] = (u64)({v});"));
        }
        self.close("}");
        self.close("}");
        self.line("__syncthreads();");
        let before: Vec<String> = types
            .iter()
            .enumerate()
            .map(|(i, t)| leaf(t, &format!("{shared}[{i}]")))
            .collect();
        let before = self.bind(types, before);
        let out = self.vars(types, init);
        self.apply(op, &[before, pre.to_vec()], &out);
        out
    }
}

/// A leaf of type `t` read back from a 64-bit word.
fn leaf(t: &Type, raw: &str) -> String {
    if *t == Type::Bool {
        format!("({raw} != 0ull)")
    } else {
        format!("(({})({raw}))", ctype(t))
    }
}

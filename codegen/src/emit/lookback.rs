//! Scans across the blocks of an instance that spans several ([`crate::schedule::spans_blocks`]):
//! decoupled look-back (Merrill and Garland, "Single-pass Parallel Prefix Scan with Decoupled
//! Look-back", 2016), so that each element is read and written once, in one kernel.
//!
//! Each block first scans its own threads as a one-block instance would. Then its last warp
//! publishes the block's aggregate and looks back over the blocks before it in the instance, 32 at
//! a time (one per lane), combining their published values up to the nearest block that has
//! published its inclusive prefix; it hands the blocks' prefix to its threads through shared
//! memory and publishes its own inclusive prefix. The first block of an instance publishes its
//! inclusive prefix at once. Every value travels with its flag in one 16-byte record, stored and
//! loaded whole (as CUB's look-back does), so no memory fence is needed.
//!
//! A block only waits for blocks of lower index, which the GPU starts first (blocks are dispatched
//! in index order; CUB's single-pass scans rely on the same), so the wait always ends. The
//! scratch's layout is [`crate::layout::Scratch`].

use super::{
    scalar::{ctype, literal},
    warp::FULL,
    Emitter,
};
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
        let scratch = scratch_of(self.func, self.sched.blocks_per_instance)
            .expect("a kernel whose instances span blocks has scratch");
        let k = scans(self.func)
            .position(|id| id == scan)
            .expect("the node is a scan");
        let l = scratch.leaves as usize;
        let records = scratch.records();
        let last_warp = (self.sched.block_threads - 1) / 32;
        let shared = format!("bf_lb{k}");
        self.line(format!(
            "// the blocks before this one in the instance: decoupled look-back (scan {k})"
        ));
        self.line(format!("__shared__ u64 {shared}[{}];", types.len()));
        self.open(format!("if ((threadIdx.x >> 5) == {last_warp}u) {{"));
        // The block's aggregate: its last thread's inclusive prefix, for the whole warp.
        let mine = self.vars(types, init);
        self.apply(op, &[pre.to_vec(), agg.to_vec()], &mine);
        let incl: Vec<String> = types
            .iter()
            .zip(&mine)
            .map(|(t, v)| self.shfl("idx", t, v, "31", 32))
            .collect();
        let incl = self.bind(types, incl);
        self.records_of(k, records);
        // Records 0..l of a block hold its aggregate, l..2l its inclusive prefix.
        let publish = |e: &mut Self, values: &[String], which: usize| {
            for (i, v) in values.iter().enumerate() {
                e.line(format!(
                    "bf_put(rec + (u64)vb * {records}ull + {}u, (u64)({v}));",
                    which * l + i
                ));
            }
        };
        self.open("if (part == 0u) {");
        self.open("if (lane == 31u) {");
        publish(self, &incl, 1);
        for (i, v) in init.iter().enumerate() {
            self.line(format!("{shared}[{i}] = (u64)({v});"));
        }
        self.close("}");
        self.close("} else {");
        self.depth += 1;
        self.open("if (lane == 31u) {");
        publish(self, &incl, 0);
        self.close("}");
        let acc = self.vars(types, init);
        // Lane `lane` reads block `top - 31 + lane`: the nearest block at lane 31. Blocks before
        // the instance's first count as inclusive identities, never read.
        self.line("u32 top = vb - 1u;");
        self.open("while (true) {");
        self.line("const bool inside = top - (vb - part) >= 31u - lane;");
        self.line(format!(
            "const ulonglong2* r = rec + (u64)(top - (31u - lane)) * {records}ull;"
        ));
        self.line("bool whole = true;");
        let x = self.vars(types, init);
        self.open("while (inside) {");
        let (aggs, wholes): (Vec<String>, Vec<String>) = (0..l)
            .map(|i| {
                (
                    format!("bf_get(r + {i}u)"),
                    format!("bf_get(r + {}u)", l + i),
                )
            })
            .unzip();
        let aggs: Vec<String> = aggs
            .into_iter()
            .map(|a| {
                let n = self.temp();
                self.line(format!("const ulonglong2 {n} = {a};"));
                n
            })
            .collect();
        let wholes: Vec<String> = wholes
            .into_iter()
            .map(|a| {
                let n = self.temp();
                self.line(format!("const ulonglong2 {n} = {a};"));
                n
            })
            .collect();
        let all = |rs: &[String]| {
            rs.iter()
                .map(|r| format!("{r}.y != 0ull"))
                .collect::<Vec<_>>()
                .join(" && ")
        };
        self.open(format!("if ({}) {{", all(&wholes)));
        for (i, (t, v)) in types.iter().zip(&x).enumerate() {
            self.line(format!("{v} = {};", leaf(t, &format!("{}.x", wholes[i]))));
        }
        self.line("break;");
        self.close("}");
        self.open(format!("if ({}) {{", all(&aggs)));
        for (i, (t, v)) in types.iter().zip(&x).enumerate() {
            self.line(format!("{v} = {};", leaf(t, &format!("{}.x", aggs[i]))));
        }
        self.line("whole = false;");
        self.line("break;");
        self.close("}");
        self.close("}");
        self.line(format!("const u32 done = __ballot_sync({FULL}, whole);"));
        // Blocks before the nearest inclusive prefix are already in it.
        self.open("if (done != 0u && lane < 31u - __clz(done)) {");
        for (v, i) in x.iter().zip(init) {
            self.line(format!("{v} = {i};"));
        }
        self.close("}");
        self.lane_reduce(op, types, &x, 32, "lane");
        self.apply(op, &[x, acc.clone()], &acc);
        self.line("if (done != 0u) break;");
        self.line("top -= 32u;");
        self.close("}");
        self.open("if (lane == 31u) {");
        for (i, v) in acc.iter().enumerate() {
            self.line(format!("{shared}[{i}] = (u64)({v});"));
        }
        let whole = self.vars(types, init);
        self.apply(op, &[acc.clone(), incl.clone()], &whole);
        publish(self, &whole, 1);
        self.close("}");
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

impl Emitter<'_> {
    /// The first lane of the halo from which all of `args` are exact (halo kernels; `None`
    /// elsewhere): the latest of theirs, a new register when they differ.
    pub(super) fn exact_of(&mut self, args: &[ValueId]) -> Option<String> {
        if self.sched.halo == 0 {
            return None;
        }
        let mut from: Vec<String> = args
            .iter()
            .filter_map(|a| self.exact[a.index()].clone())
            .filter(|e| e != "0u")
            .collect();
        from.sort();
        from.dedup();
        Some(match from.len() {
            0 => "0u".to_string(),
            1 => from.remove(0),
            _ => {
                let e = self.temp();
                let max = from
                    .iter()
                    .skip(1)
                    .fold(from[0].clone(), |m, x| format!("max({m}, {x})"));
                self.line(format!("const u32 {e} = {max};"));
                e
            }
        })
    }

    /// `rec`: the records of scan `k` (`records` per block).
    fn records_of(&mut self, k: usize, records: u64) {
        self.line(format!(
            "ulonglong2* rec = reinterpret_cast<ulonglong2*>(bf_scratch) + {k}ull * gridDim.x * {records}ull;"
        ));
    }

    /// The carry into this thread's limbs from the threads and blocks before it in its instance
    /// (bit 0; bit 1: every limb before it propagates), for carry scan `scan`: `agg` is the
    /// thread's own (generate, propagate) pair, `flags` the block's carry staging, `disjoint` as
    /// for [`Self::carry_prefix`]. In halo kernels, `exact` names the first lane of the halo whose
    /// inputs are exact and a register, declared where the results are visible, that receives
    /// the first lane whose results are.
    ///
    /// With a halo, the carry into the block is the halo's carry out when some lane of the halo
    /// with exact inputs does not propagate (that lane decides, whatever came before it); the
    /// block then publishes its inclusive prefix at once, for blocks that do look back. Otherwise
    /// the block looks back.
    pub(super) fn carry_in_instance(
        &mut self,
        scan: ValueId,
        flags: &str,
        agg: &str,
        disjoint: bool,
        exact: Option<(&str, &str)>,
    ) -> String {
        if self.sched.blocks_per_instance <= 1 {
            return self.carry_prefix(flags, agg, disjoint, None).0;
        }
        let carry = bigfuse_core::ops::carry();
        let init = [literal(&bigfuse_core::ops::carry_identity()).remove(0)];
        let types = [Type::U32];
        let Some((exact, exact_out)) = exact.filter(|_| self.sched.halo > 0) else {
            let (pre, _) = self.carry_prefix(flags, agg, disjoint, None);
            let pre = self.across_blocks(scan, &carry, &types, &init, &[pre], &[agg.to_string()]);
            return pre[0].clone();
        };
        let (pre, known) = self.carry_prefix(flags, agg, disjoint, Some(exact));
        let (known, deciding) =
            known.expect("blocks of instances that span blocks have several warps");
        self.line(format!(
            "{exact_out} = {deciding} != 0u ? (u32)__ffs({deciding}) : 32u;"
        ));
        let scratch = scratch_of(self.func, self.sched.blocks_per_instance)
            .expect("a kernel whose instances span blocks has scratch");
        let k = scans(self.func)
            .position(|id| id == scan)
            .expect("the node is a scan");
        let out = self.temp();
        self.line(format!("u32 {out} = {pre};"));
        self.line("// the halo decided the carry into the block, or the block looks back");
        self.open(format!("if ({known}) {{"));
        self.open(format!(
            "if (threadIdx.x == {}u) {{",
            self.sched.block_threads - 1
        ));
        let whole = self.vars(&types, &init);
        self.apply(&carry, &[vec![pre.clone()], vec![agg.to_string()]], &whole);
        self.records_of(k, scratch.records());
        self.line(format!(
            "bf_put(rec + (u64)vb * {}ull + {}u, (u64)({}));",
            scratch.records(),
            scratch.leaves,
            whole[0]
        ));
        self.close("}");
        self.close("} else {");
        self.depth += 1;
        let looked = self.across_blocks(scan, &carry, &types, &init, &[pre], &[agg.to_string()]);
        self.line(format!("{out} = {};", looked[0]));
        self.close("}");
        out
    }

    /// In halo kernels, declares (here) the register that will say from which lane of the halo
    /// node `id`'s elements are exact, and records it.
    pub(super) fn declare_exact(&mut self, id: ValueId) -> Option<String> {
        if self.sched.halo == 0 {
            return None;
        }
        let e = format!("e{}", id.0);
        self.line(format!("u32 {e} = 32u;"));
        self.exact[id.index()] = Some(e.clone());
        Some(e)
    }
}

/// A record (value, flag) stored and loaded whole, as one 16-byte access.
pub(super) const HELPERS: &str = r#"__device__ __forceinline__ void bf_put(ulonglong2* p, u64 v) {
  asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" :: "l"(p), "l"(v), "l"(1ull) : "memory");
}
__device__ __forceinline__ ulonglong2 bf_get(const ulonglong2* p) {
  ulonglong2 r;
  asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(r.x), "=l"(r.y) : "l"(p) : "memory");
  return r;
}
"#;

/// A leaf of type `t` read back from a 64-bit word.
fn leaf(t: &Type, raw: &str) -> String {
    if *t == Type::Bool {
        format!("({raw} != 0ull)")
    } else {
        format!("(({})({raw}))", ctype(t))
    }
}

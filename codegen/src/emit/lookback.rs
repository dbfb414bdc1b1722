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
//!
//! Carries, the common case, mostly avoid waiting at all: in kernels with halo lanes
//! ([`crate::schedule::lane_halo_pays`]) lane 0 of each warp recomputes the end of the warp before,
//! and decides the carry into the warp unless its deciding limb propagates
//! ([`Emitter::carry_by_halo`]); only then does a warp wait, for the warp before it (shared
//! memory) or the block before (the same scratch records).

use super::{
    scalar::{ctype, literal},
    warp::FULL,
    Emitter,
};
use crate::layout::Scratch;
use bigfuse_core::{Func, Op, Type, ValueId};

/// The records a kernel's instances need to span blocks, (scans, leaves) of [`Scratch`]: records
/// per scan (or reduction) and block; none for element-wise work alone.
pub(super) fn lookback_records(func: &Func, blocks_per_instance: u32) -> Option<(u32, u32)> {
    if blocks_per_instance <= 1 {
        return None;
    }
    let leaves = scans(func)
        .map(|id| match &func.node(id).op {
            Op::Scan { init, .. } | Op::Reduce { init, .. } => init.leaves().len() as u32,
            _ => unreachable!("scans() yields scans and reductions"),
        })
        .max()?;
    Some((scans(func).count() as u32, leaves))
}

/// The scans and reductions of `func` in node order: the `k`-th has records `k` in the scratch.
fn scans(func: &Func) -> impl Iterator<Item = ValueId> + '_ {
    func.ids()
        .filter(|id| matches!(func.node(*id).op, Op::Scan { .. } | Op::Reduce { .. }))
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
        let (k, scratch) = self.scan_slot(scan);
        let l = scratch.leaves as usize;
        let records = scratch.records();
        let last_warp = (self.sched.block_threads - 1) / 32;
        let shared = format!("bf_lb{k}");
        self.line(format!(
            "// the blocks before this one in the instance: decoupled look-back (scan {k})"
        ));
        self.line(format!("__shared__ u64 {shared}[{}];", types.len()));
        self.prefetch_later_tiles();
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
        self.close_open("} else {");
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
        // Records 0..l: the aggregate's leaves; l..2l: the inclusive prefix's.
        let mut records: Vec<String> = (0..2 * l)
            .map(|i| {
                let n = self.temp();
                self.line(format!("const ulonglong2 {n} = bf_get(r + {i}u);"));
                n
            })
            .collect();
        let wholes = records.split_off(l);
        let aggs = records;
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
    /// `rec`: the records of scan `k` (`records` per block).
    fn records_of(&mut self, k: usize, records: u64) {
        self.line(format!(
            "ulonglong2* rec = reinterpret_cast<ulonglong2*>(bf_scratch) + {k}ull * gridDim.x * {records}ull;"
        ));
    }

    /// The index of scan `scan` among the kernel's scans, and the scratch.
    fn scan_slot(&self, scan: ValueId) -> (usize, Scratch) {
        let scratch = self
            .scratch
            .expect("a kernel whose instances span blocks has scratch");
        let k = scans(self.func)
            .position(|id| id == scan)
            .expect("the node is a scan");
        (k, scratch)
    }

    /// The carry into this thread's limbs from the threads and blocks before it in its instance
    /// (bit 0; bit 1: every limb before it propagates), for carry scan `scan` in a kernel
    /// without halo lanes: within the block through [`Self::carry_prefix`], across blocks by
    /// look-back. `agg` is the thread's own (generate, propagate) pair, `flags` the block's carry
    /// staging, `disjoint` as for [`Self::carry_prefix`].
    pub(super) fn carry_in_instance(
        &mut self,
        scan: ValueId,
        flags: &str,
        agg: &str,
        disjoint: bool,
    ) -> String {
        let pre = self.carry_prefix(flags, agg, disjoint);
        if self.sched.blocks_per_instance <= 1 {
            return pre;
        }
        let carry = bigfuse_core::ops::carry();
        let init = [literal(&bigfuse_core::ops::carry_identity()).remove(0)];
        self.across_blocks(
            scan,
            &carry,
            &[Type::U32],
            &init,
            &[pre],
            &[agg.to_string()],
        )
        .remove(0)
    }

    /// Where a halo lane may decide the carry of a scan over `args` (see
    /// [`crate::schedule::lane_halo_pays`]): the first limb of the halo whose inputs are exact, and
    /// whether the halo is exact at all so far (a warp-uniform condition); `None` in kernels
    /// without halo lanes.
    pub(super) fn halo_exact(&mut self, args: &[ValueId]) -> Option<(u32, String)> {
        if !self.sched.lane_halo {
            return None;
        }
        let mut from = 0;
        let mut ok: Vec<String> = Vec::new();
        for a in args {
            if let Some((e, o)) = &self.exact[a.index()] {
                from = from.max(*e);
                if o != "true" && !ok.contains(o) {
                    ok.push(o.clone());
                }
            }
        }
        let ok = match ok.len() {
            0 => "true".to_string(),
            1 => ok.remove(0),
            _ => {
                let v = self.temp();
                self.line(format!("const bool {v} = {};", ok.join(" && ")));
                v
            }
        };
        Some((from, ok))
    }

    /// Whether the halo lane decides scan `k`'s carry into lane 1: `propagates(e)` is the C
    /// condition that limb `e` (of the `q` a thread holds) propagates a carry; the halo decides when its first
    /// exact limb does not (whatever came before that limb), the halo is a real part of the
    /// instance (not the first warp's, before the instance) and exact so far. Warp-uniform: lane
    /// 0's answer for the whole warp. Returns it and the halo's exactness after the scan.
    pub(super) fn halo_decides(
        &mut self,
        exact: (u32, String),
        q: u32,
        propagates: impl Fn(u32) -> String,
    ) -> (String, (u32, String)) {
        let (e, ok) = exact;
        let d = self.temp();
        if e < q {
            self.line(format!(
                "const bool {d} = __shfl_sync({FULL}, (int)(live && {ok} && !({})), 0) != 0;",
                propagates(e)
            ));
        } else {
            // The halo has no exact limb left: the warp always asks the one before.
            self.line(format!("const bool {d} = false;"));
        }
        (d.clone(), (e + 1, d))
    }

    /// The carry into this thread's limbs (as [`Self::carry_in_instance`]) in a kernel with halo
    /// lanes: resolved within the warp by ballots, lane 0 (the halo) at its bottom, where the
    /// halo `decided`; else lane 0 passes on the carry the warp before published (through shared
    /// memory, or the scratch for a block's first warp). Every warp then publishes its own carry
    /// out for the warp after it.
    pub(super) fn carry_by_halo(
        &mut self,
        scan: ValueId,
        agg: &str,
        decided: &str,
        disjoint: bool,
    ) -> String {
        let (k, scratch) = self.scan_slot(scan);
        let warps = self.sched.block_threads / 32;
        let (gm, pm) = (self.temp(), self.temp());
        self.line(format!(
            "const u32 {gm} = __ballot_sync({FULL}, {agg} & 1u), {pm} = __ballot_sync({FULL}, ({agg} >> 1) & 1u);"
        ));
        let pre = self.warp_carry(&gm, &pm, disjoint);
        let out = self.temp();
        self.line(format!("u32 {out} = {pre};"));
        self.open(format!("if (!{decided}) {{"));
        self.line("// the carry into lane 1: the carry out of the warp before");
        let cin = self.temp();
        self.line(format!("u32 {cin} = 0u;"));
        self.open("if ((threadIdx.x >> 5) != 0u) {");
        self.line("u32 w;");
        self.line(format!(
            "do {{ w = reinterpret_cast<volatile u32*>(bf_carry)[{k}u * {warps}u + (threadIdx.x >> 5) - 1u]; }} while (w == 0u);"
        ));
        self.line(format!("{cin} = w & 1u;"));
        self.close("} else if (part != 0u) {");
        self.src.depth += 1;
        self.records_of(k, scratch.records());
        self.line("ulonglong2 r;");
        self.line(format!(
            "do {{ r = bf_get(rec + (u64)(vb - 1u) * {}ull + {}u); }} while (r.y == 0ull);",
            scratch.records(),
            scratch.leaves
        ));
        self.line(format!("{cin} = (u32)r.x & 1u;"));
        self.close("}");
        let (gm2, pm2) = (self.temp(), self.temp());
        self.line(format!(
            "const u32 {gm2} = ({gm} & ~1u) | {cin}, {pm2} = {pm} & ~1u;"
        ));
        let pre2 = self.warp_carry(&gm2, &pm2, disjoint);
        self.line(format!("{out} = {pre2};"));
        self.close("}");
        self.line("// this warp's carry out, for the warp after it");
        self.open("if (lane == 31u) {");
        let carry = bigfuse_core::ops::carry();
        let init = [literal(&bigfuse_core::ops::carry_identity()).remove(0)];
        let whole = self.vars(&[Type::U32], &init);
        self.apply(&carry, &[vec![out.clone()], vec![agg.to_string()]], &whole);
        self.open(format!("if ((threadIdx.x >> 5) != {}u) {{", warps - 1));
        self.line(format!(
            "reinterpret_cast<volatile u32*>(bf_carry)[{k}u * {warps}u + (threadIdx.x >> 5)] = 2u | ({} & 1u);",
            whole[0]
        ));
        self.close_open("} else {");
        self.records_of(k, scratch.records());
        self.line(format!(
            "bf_put(rec + (u64)vb * {}ull + {}u, (u64)({} & 1u));",
            scratch.records(),
            scratch.leaves,
            whole[0]
        ));
        self.close("}");
        self.close("}");
        out
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

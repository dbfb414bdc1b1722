//! Everything a kernel's text has before its first computed value: the header comment, the
//! typedefs and helper device functions it relies on, the signature (the ABI the runtime launches:
//! inputs, outputs, twiddle tables, then the instance count) and the indices every thread derives
//! from its position. The twiddle tables follow instruction selection's order
//! ([`crate::isel::Selection::tables`]), which the runtime's arguments follow too.

use super::{lookback, ntt, polymul, Emitter};
use crate::isel::Product;
use crate::schedule::WARP_OWNERS;

impl Emitter<'_> {
    /// The text before the kernel: `header` as comments, the typedefs, and the helpers of the
    /// transforms the kernel has.
    pub(super) fn preamble(&mut self, header: &str) {
        for line in header.lines() {
            self.line(format!("// {line}"));
        }
        self.line("typedef unsigned int u32;");
        self.line("typedef unsigned long long u64;");
        self.line("");
        let has = |f: fn(&Product) -> bool| self.sel.products().any(|(_, p)| f(p));
        if has(|p| matches!(p, Product::Ntt(_))) {
            self.src.out.push_str(ntt::HELPERS);
            self.line("");
        }
        if has(|p| matches!(p, Product::Poly(_))) {
            self.src.out.push_str(polymul::HELPERS);
            self.line("");
        }
        if self.scratch.is_some_and(|s| s.scans > 0) {
            self.src.out.push_str(lookback::HELPERS);
            self.line("");
        }
    }

    /// The kernel's signature, opening its body.
    pub(super) fn signature(&mut self, kernel_name: &str) {
        let sched = self.sched;
        let mut params: Vec<String> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, l)| {
                format!(
                    "const {}* __restrict__ in{i} /* {} */",
                    l.unit.ctype(),
                    l.name
                )
            })
            .collect();
        params.extend(
            self.outputs
                .iter()
                .enumerate()
                .map(|(k, l)| format!("{}* __restrict__ out{k}", l.unit.ctype())),
        );
        params.extend(self.sel.products().filter_map(|(id, p)| {
            let ty = match p {
                Product::Classical { .. } => return None,
                Product::Poly(_) => "u32",
                Product::Ntt(_) => "uint2",
            };
            Some(format!(
                "const {ty}* __restrict__ tw{} /* twiddles of {id} */",
                id.0
            ))
        }));
        if let Some(s) = self.scratch {
            // Where the blocks of an instance pass their scans on, and NTT products stage
            // operands (crate::layout::Scratch).
            params.push("u32* __restrict__ bf_scratch".into());
            if s.staged_words > 0 {
                params.push("const u64 bf_slots".into());
            }
        }
        params.push("const u64 n".into());
        self.line(format!(
            "extern \"C\" __global__ void __launch_bounds__({}, {}) {kernel_name}(",
            sched.block_threads, sched.min_blocks
        ));
        self.line(format!("    {}) {{", params.join(",\n    ")));
        self.src.depth = 1;
    }

    /// The thread's place: `t` within its instance, the instance's `slot` in the block and `inst`
    /// in the batch, `live` (past the batch's end threads still take part in barriers and
    /// shuffles), `lane` and `warp`; and the block's dynamic shared memory.
    pub(super) fn indices(&mut self) {
        let (sched, placement) = (self.sched, self.placement);
        let t = sched.threads_per_instance;
        let blocks = sched.blocks_per_instance;
        if blocks > 1 {
            let b = sched.block_threads;
            self.line(format!(
                "// {t} threads per instance: each instance spans {blocks} blocks of {b}"
            ));
            self.line("const u32 vb = blockIdx.x;");
            self.line(format!("const u32 part = vb % {blocks}u;"));
            if sched.lane_halo {
                // Lane 0 of each warp is its halo: it recomputes the last elements of the warp
                // before (for the instance's first warp, elements before the instance: not
                // there, so not live).
                self.line(
                    "// lane 0 of each warp recomputes the last elements of the warp before (its halo)",
                );
                self.line(format!(
                    "const u32 t = (part * {}u + (threadIdx.x >> 5)) * {WARP_OWNERS}u + (threadIdx.x & 31u) - 1u;",
                    b / 32
                ));
            } else {
                self.line(format!("const u32 t = part * {b}u + threadIdx.x;"));
            }
            self.line("const u32 slot = 0u;");
            self.line(format!("const u64 inst = (u64)(vb / {blocks}u);"));
        } else {
            self.line(format!(
                "// {t} thread(s) per instance, {} instance(s) per block",
                sched.instances_per_block
            ));
            self.line(format!("const u32 t = threadIdx.x & {}u;", t - 1));
            self.line(format!("const u32 slot = threadIdx.x / {t}u;"));
            self.line(format!(
                "const u64 inst = (u64)blockIdx.x * {}ull + slot;",
                sched.instances_per_block
            ));
        }
        if sched.lane_halo {
            self.line("const bool live = inst < n && (part != 0u || threadIdx.x != 0u);");
        } else {
            self.line("const bool live = inst < n;");
        }
        self.line("const u32 lane = threadIdx.x & 31u;");
        if sched.block_span() > 32 {
            self.line(format!(
                "const u32 warp = (threadIdx.x >> 5) & {}u;",
                sched.warps_per_instance() - 1
            ));
        }
        if placement.shared_bytes > 0 {
            // Dynamic, so that a block can take more than the 48 KiB of static shared memory.
            self.line(format!(
                "extern __shared__ __align__(16) unsigned char bf_smem[]; // {} bytes",
                placement.shared_bytes
            ));
        }
        if placement.transpose.is_some() && sched.blocks_per_instance == 1 {
            // The batch's first thread of this warp: coalesced accesses address the warp's region.
            self.line(format!(
                "const u64 warp0 = (u64)blockIdx.x * {}ull + (threadIdx.x & ~31u);",
                sched.block_threads
            ));
        }
        if sched.lane_halo {
            let scans = self.scratch.map_or(0, |s| s.scans);
            let words = scans * (sched.block_threads / 32);
            // Each warp's carry out per carry scan, for the warp after it (0: not there yet).
            self.line(format!("__shared__ u32 bf_carry[{words}];"));
            self.line(format!(
                "for (u32 i = threadIdx.x; i < {words}u; i += {}u) bf_carry[i] = 0u;",
                sched.block_threads
            ));
            self.line("__syncthreads();");
        }
        self.line("(void)t; (void)slot; (void)live; (void)lane;");
    }
}

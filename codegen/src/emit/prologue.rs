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

    /// The thread coordinate `name = held`: held in a register, or, with
    /// [`Schedule::read_coordinates`], a value that computes `read` (`held` where not given; an
    /// expression of `threadIdx.x`, `blockIdx.x` and the instance count `n` only) from the
    /// special registers again wherever it is used. Held, the coordinates and the addresses the
    /// CUDA compiler derives from them stay live through the whole kernel: across
    /// the NTT's transform calls, which leave the caller 14 of its 128 registers, and beside
    /// classical products' limbs. There they spilled (Poly at 2^13..2^18 bits: 32-72 bytes a
    /// thread); read where used they do not, but each use costs a special-register read, which
    /// slowed kernels that did not spill (6-Add at 2^14..2^16 bits -10%; H200, bench/RESULTS.md,
    /// fifteenth session). So held is the default, and the runtime loads this form only where
    /// the held one spills ([`crate::Compiled::spill_free`]).
    ///
    /// [`Schedule::read_coordinates`]: crate::schedule::Schedule::read_coordinates
    fn coordinate(&mut self, ty: &str, name: &str, held: &str, read: Option<&str>) {
        if !self.sched.read_coordinates {
            self.line(format!("const {ty} {name} = {held};"));
            return;
        }
        let expr = read.unwrap_or(held);
        for (f, reg) in [("bf_tid", "tid"), ("bf_ctaid", "ctaid")] {
            self.device_function(f, |e| {
                e.line(format!(
                    "__device__ __forceinline__ u32 {f}() {{ u32 r; asm volatile(\"mov.u32 %0, %%{reg}.x;\" : \"=r\"(r)); return r; }}"
                ));
            });
        }
        let read = expr
            .replace("threadIdx.x", "bf_tid()")
            .replace("blockIdx.x", "bf_ctaid()");
        // `live` compares with the instance count, a parameter the struct keeps.
        let (member, init) = if expr.ends_with("< n") {
            ("u64 n; ", "{n}")
        } else {
            ("", "{}")
        };
        self.line(format!(
            "const struct {{ {member}__device__ __forceinline__ operator {ty}() const {{ return {read}; }} }} {name}{init};"
        ));
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
            if sched.lane_halo {
                self.line("const bool live = inst < n && (part != 0u || threadIdx.x != 0u);");
            } else {
                self.line("const bool live = inst < n;");
            }
            self.line("const u32 lane = threadIdx.x & 31u;");
        } else {
            self.line(format!(
                "// {t} thread(s) per instance, {} instance(s) per block",
                sched.instances_per_block
            ));
            if sched.read_coordinates {
                self.line("// read from the special registers where used, not held (Schedule::read_coordinates)");
            }
            let first = format!("(u64)blockIdx.x * {}ull", sched.instances_per_block);
            let inst = format!("{first} + threadIdx.x / {t}u");
            self.coordinate("u32", "t", &format!("threadIdx.x & {}u", t - 1), None);
            self.coordinate("u32", "slot", &format!("threadIdx.x / {t}u"), None);
            self.coordinate("u64", "inst", &format!("{first} + slot"), Some(&inst));
            self.coordinate("bool", "live", "inst < n", Some(&format!("{inst} < n")));
            self.coordinate("u32", "lane", "threadIdx.x & 31u", None);
        }
        if sched.block_span() > 32 {
            let warps = sched.warps_per_instance() - 1;
            self.coordinate(
                "u32",
                "warp",
                &format!("(threadIdx.x >> 5) & {warps}u"),
                None,
            );
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

#[cfg(test)]
mod tests {
    use crate::per_thread::poly_or_product as program;
    use crate::{compile, Hints, Target};

    fn hints(text: &str) -> Hints {
        Hints::default().with(text).unwrap().0
    }

    /// The held form is the default; the form that reads coordinates where used comes with it
    /// wherever an instance has several threads of one block, for the runtime to load where the
    /// held one spills, and is the kernel itself under `coords=1`.
    #[test]
    fn kernels_of_several_threads_come_with_a_form_that_reads_coordinates_where_used() {
        let target = Target::h100();
        for bits in [8192, 65536] {
            let c = compile(&program(bits, true), &[], &target, &Hints::default()).unwrap();
            assert!(c.schedule.threads_per_instance > 1);
            assert!(!c.schedule.read_coordinates);
            assert!(c.source.contains("const u32 t = threadIdx.x & "));
            assert!(!c.source.contains("bf_tid"));
            let second = c.spill_free.as_ref().expect("a second form");
            assert!(second.schedule.read_coordinates);
            let read = second.source.as_str();
            assert!(read.contains("asm volatile(\"mov.u32 %0, %%tid.x;\""));
            assert!(read.contains("operator u32() const { return bf_tid() & "));
            assert!(read.contains(" live{n};"));
            assert!(!read.contains("const u32 t = threadIdx.x"));
            // Only the prologue differs: two helpers, a comment and six coordinates.
            let held: std::collections::HashSet<&str> = c.source.lines().collect();
            let new = read.lines().filter(|l| !held.contains(l)).count();
            assert!(new <= 9, "{new} lines");
            // Poly is expected at its register cap: a background compile caches both forms.
            assert_eq!(c.likely_sources().len(), 2, "{bits}");

            let forced = compile(&program(bits, true), &[], &target, &hints("coords=1")).unwrap();
            assert!(forced.schedule.read_coordinates);
            assert_eq!(forced.source, read);
            assert!(forced.spill_free.is_none());
            let held = compile(&program(bits, true), &[], &target, &hints("coords=0")).unwrap();
            assert_eq!(held.source, c.source);
            assert!(held.spill_free.is_none());
        }
        // One thread per instance holds whole values: its second form reads parameters again.
        let one = compile(&program(1024, true), &[], &target, &Hints::default()).unwrap();
        assert_eq!(one.schedule.threads_per_instance, 1);
        let second = one.spill_free.as_ref().expect("a second form");
        assert!(second.schedule.park_values && !second.schedule.read_coordinates);
        // A lone classical product is not expected at its cap: only its own form is precompiled.
        let mul = compile(&program(8192, false), &[], &target, &Hints::default()).unwrap();
        assert!(mul.spill_free.is_some());
        assert_eq!(mul.likely_sources().len(), 1);
    }

    #[test]
    fn the_coordinates_hint_has_a_text_form() {
        assert_eq!(hints("coords=1").read_coordinates, Some(true));
        assert_eq!(hints("coords=0").read_coordinates, Some(false));
        assert_eq!(hints("coords=-").read_coordinates, None);
        assert!(Hints::default().with("coords=2").is_err());
        assert!(hints("coords=1").to_string().ends_with(",coords=1,park=-"));
    }
}

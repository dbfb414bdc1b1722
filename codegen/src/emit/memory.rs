//! Global and shared memory as the kernel sees them: parameters read and results written in the
//! layout that `crate::layout` defines (instance after instance; each thread its Q consecutive
//! elements, 16-byte accesses where alignment allows), and the slots of the shared staging buffers
//! that `crate::place` gives scans, reductions and gathers for crossing threads.

use super::{scalar::ctype, Emitter, Val};
use crate::isel::Product;
use crate::layout::Unit;
use bigfuse_core::{Op, Type, ValueId};

impl Emitter<'_> {
    /// Parameter `param` (node `id`): arrays of scalars and of scalar tuples into registers, scalars
    /// into one register; big integers stay in global memory until their limbs are read.
    pub(super) fn load_param(&mut self, id: ValueId, param: u32, comment: &str) -> Val {
        match self.func.ty(id) {
            // Gathered from only, where instances span blocks: read where they lie.
            Type::Array(..) if self.read_in_place(id) => Val::Global(param),
            // Arrays of scalars are loaded as limbs are: one element per word.
            Type::Array(e, _) if e.is_scalar() => self.load(id, param, comment),
            Type::Array(e, _) if e.leaves().iter().all(Type::is_scalar) => {
                self.load_interleaved(id, param, comment)
            }
            Type::Big(_) | Type::Array(..) => Val::Global(param),
            t => {
                self.line(format!("// {comment}"));
                let e = match t {
                    Type::Bool => format!("(live && in{param}[inst] != 0)"),
                    t => format!("(live ? ({})in{param}[inst] : 0)", ctype(t)),
                };
                Val::Scalar(self.declare_scalar(id, vec![e]))
            }
        }
    }

    /// An array of scalars, or a big integer's limbs, from parameter `param`: this thread's Q
    /// consecutive elements.
    pub(super) fn load(&mut self, id: ValueId, param: u32, comment: &str) -> Val {
        let (q, len) = self.array_shape(&self.func.ty(id).clone());
        self.line(format!("// {comment}: {q} consecutive limbs per thread"));
        let leaves = self.declare_array(id, q);
        let v = &leaves[0];
        let pad = self.padded(q, len);
        let buf = &self.inputs[param as usize];
        let (unit, units) = (buf.unit, buf.units);
        if self.sched.prefetch_ahead > 0 && unit == Unit::U64 {
            self.prefetches.push((param, units, q));
        }
        self.open("{");
        let coalesced = self.coalesced(unit, units, len);
        if coalesced.is_none() {
            self.line(format!(
                "const {}* src = in{param} + inst * {units}ull + t * {q}u;",
                unit.ctype()
            ));
        }
        if let Some(vecs) = coalesced {
            // Coalesced: the warp reads vector `k * 32 + lane` of its contiguous region into its
            // transposition buffer, then each thread its own consecutive limbs.
            let slot = self.word_slot(vecs);
            self.warp_region_in(param, vecs, &|i| slot(i));
            self.line("#pragma unroll");
            self.open(format!("for (int j = 0; j < {vecs}; ++j) {{"));
            let i = self.word_index(vecs);
            self.line(format!("const ulonglong2 w = {};", slot(&i)));
            self.line(format!("{v}[2 * j] = w.x;"));
            self.line(format!("{v}[2 * j + 1] = w.y;"));
            self.close("}");
            // The buffer is free for the warp's next access only once every lane has read.
            self.line("__syncwarp();");
        } else if q % 2 == 0 && units % 2 == 0 && unit == Unit::U64 {
            // 16-byte loads: instance bases and thread offsets are both even, so aligned.
            self.line("#pragma unroll");
            self.open(format!("for (int k = 0; k < {}; ++k) {{", q / 2));
            let guard = if pad {
                format!("live && t * {q}u + 2u * k < {len}u")
            } else {
                "live".into()
            };
            self.line(format!(
                "const ulonglong2 w = ({guard}) ? reinterpret_cast<const ulonglong2*>(src)[k] : make_ulonglong2(0ull, 0ull);"
            ));
            self.line(format!("{v}[2 * k] = w.x;"));
            self.line(format!("{v}[2 * k + 1] = w.y;"));
            self.close("}");
        } else {
            let guard = if pad {
                format!("live && t * {q}u + q < {len}u")
            } else {
                "live".into()
            };
            let (read, zero) = match unit {
                Unit::Bool => ("(src[q] != 0)", "false"),
                Unit::U32 => ("src[q]", "0u"),
                Unit::U64 => ("src[q]", "0ull"),
            };
            self.line("#pragma unroll");
            self.line(format!(
                "for (int q = 0; q < {q}; ++q) {v}[q] = ({guard}) ? {read} : {zero};"
            ));
        }
        self.close("}");
        Val::Array {
            leaves: leaves.clone(),
            q,
            len,
        }
    }

    /// An array of tuples (limb tuples of big integers) from global memory, where each element's
    /// leaves are consecutive words: this thread's Q elements, leaf by leaf.
    fn load_interleaved(&mut self, id: ValueId, param: u32, comment: &str) -> Val {
        let (q, len) = self.array_shape(&self.func.ty(id).clone());
        let leaves = self.declare_array(id, q);
        let w = leaves.len();
        if let Some(vecs) = self.coalesced_tuples(id, len, w) {
            // Coalesced: the warp reads its contiguous region (its 32 instances' words) into its
            // transposition buffer, then each thread its own element's vectors.
            self.line(format!(
                "// {comment}: one element of {w} words per thread, through the warp's buffer"
            ));
            self.open("{");
            let tr = self.transposition();
            self.warp_region_in(param, vecs, &|i| Self::swizzled(&tr, i));
            for j in 0..vecs as usize {
                self.open("{");
                self.line(format!("const u32 i = lane * {vecs}u + {j}u;"));
                self.line(format!(
                    "const ulonglong2 w = {};",
                    Self::swizzled(&tr, "i")
                ));
                self.line(format!("{}[0] = w.x;", leaves[2 * j]));
                self.line(format!("{}[0] = w.y;", leaves[2 * j + 1]));
                self.close("}");
            }
            // The buffer is free for the warp's next access only once every lane has read.
            self.line("__syncwarp();");
            self.close("}");
            self.park(id, &leaves, q);
            return Val::Array { leaves, q, len };
        }
        self.line(format!(
            "// {comment}: {q} consecutive elements of {w} words per thread"
        ));
        let pad = self.padded(q, len);
        self.open("{");
        self.line(format!(
            "const u64* src = in{param} + (inst * {len}ull + t * {q}u) * {w}u;"
        ));
        let guard = if pad {
            format!("live && t * {q}u + q < {len}u")
        } else {
            "live".into()
        };
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
        if crate::place::tuple_vectors(w) {
            self.line(format!(
                "const ulonglong2* s2 = reinterpret_cast<const ulonglong2*>(src + q * {w});"
            ));
            for (j, pair) in leaves.chunks(2).enumerate() {
                self.line(format!(
                    "{{ const ulonglong2 x = ({guard}) ? s2[{j}] : make_ulonglong2(0ull, 0ull); {}[q] = x.x; {}[q] = x.y; }}",
                    pair[0], pair[1]
                ));
            }
        } else {
            for (k, l) in leaves.iter().enumerate() {
                self.line(format!("{l}[q] = ({guard}) ? src[q * {w} + {k}] : 0ull;"));
            }
        }
        self.close("}");
        self.close("}");
        self.park(id, &leaves, q);
        Val::Array { leaves, q, len }
    }

    /// Parameter `id`'s words (`leaves`, `q` elements each) into the slots of the maps that read
    /// them there ([`crate::place::Parking`]), right where they are loaded.
    fn park(&mut self, id: ValueId, leaves: &[String], q: u32) {
        for park in self.placement.parks.clone() {
            let Op::Map { f, args } = &self.func.node(park.node).op else {
                continue;
            };
            for (i, _) in args.iter().enumerate().filter(|(_, a)| **a == id) {
                let stores = park.plan.stores(f, i as u32);
                if stores.is_empty() {
                    continue;
                }
                self.line(format!("// parked for {}, where read again", park.node));
                self.line("#pragma unroll");
                self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
                for (leaf, s) in stores {
                    let slot = park_slot(&park, s, "u64", self.sched.block_threads);
                    self.line(format!("{slot} = {}[q];", leaves[leaf]));
                }
                self.close("}");
                // The stores complete here: ptxas would otherwise interleave them with the next
                // product and hold the words' registers through it (Poly at 2^11 bits: 72 bytes
                // of spills, 32 with the fence).
                self.line("__syncwarp();");
            }
        }
    }

    /// Writes node `id` as result `k`; a scalar is written once per instance, by its first thread.
    pub(super) fn store(&mut self, k: usize, id: ValueId) {
        let comment = format!("result {k} = {}", ValueId(id.0));
        match self.val(id).clone() {
            Val::Array { leaves, q, len } if leaves.len() > 1 => {
                let w = leaves.len();
                if let Some(vecs) = self.coalesced_tuples(id, len, w) {
                    // Coalesced, as loads are: every lane takes part, each vector guarded by its
                    // own instance.
                    self.line(format!(
                        "// {comment}: {w} words per element, through the warp's buffer"
                    ));
                    self.open("{");
                    let tr = self.transposition();
                    for j in 0..vecs as usize {
                        self.open("{");
                        self.line(format!("const u32 i = lane * {vecs}u + {j}u;"));
                        self.line(format!(
                            "{} = make_ulonglong2((u64)({}[0]), (u64)({}[0]));",
                            Self::swizzled(&tr, "i"),
                            leaves[2 * j],
                            leaves[2 * j + 1]
                        ));
                        self.close("}");
                    }
                    self.warp_region_out(k, vecs, &|i| Self::swizzled(&tr, i));
                    self.close("}");
                    return;
                }
                let pad = self.padded(q, len);
                self.line(format!("// {comment}: {w} words per element"));
                self.open(format!("if ({}) {{", self.owns()));
                self.line(format!(
                    "u64* dst = out{k} + (inst * {len}ull + t * {q}u) * {w}u;"
                ));
                self.line("#pragma unroll");
                self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
                if pad {
                    self.line(format!("if (t * {q}u + q >= {len}u) break;"));
                }
                if crate::place::tuple_vectors(w) {
                    self.line(format!(
                        "ulonglong2* d2 = reinterpret_cast<ulonglong2*>(dst + q * {w});"
                    ));
                    for (j, pair) in leaves.chunks(2).enumerate() {
                        self.line(format!(
                            "d2[{j}] = make_ulonglong2((u64)({}[q]), (u64)({}[q]));",
                            pair[0], pair[1]
                        ));
                    }
                } else {
                    for (j, l) in leaves.iter().enumerate() {
                        self.line(format!("dst[q * {w} + {j}] = (u64)({l}[q]);"));
                    }
                }
                self.close("}");
                self.close("}");
            }
            Val::Array { leaves, q, len } => {
                let v = &leaves[0];
                let pad = self.padded(q, len);
                let buf = &self.outputs[k];
                let (unit, units) = (buf.unit, buf.units);
                self.line(format!("// {comment}"));
                if let Some(vecs) = self.coalesced(unit, units, len) {
                    // Coalesced, as loads are: every lane takes part, each vector guarded by its
                    // own instance.
                    self.open("{");
                    let slot = self.word_slot(vecs);
                    self.line("#pragma unroll");
                    let put = |i: &str| {
                        format!("{} = make_ulonglong2({v}[2 * j], {v}[2 * j + 1]);", slot(i))
                    };
                    if crate::place::swizzled_vectors(vecs, false) {
                        self.open(format!("for (int j = 0; j < {vecs}; ++j) {{"));
                        let i = self.word_index(vecs);
                        self.line(put(&i));
                        self.close("}");
                    } else {
                        let i = self.word_index(vecs);
                        self.line(format!("for (int j = 0; j < {vecs}; ++j) {}", put(&i)));
                    }
                    self.warp_region_out(k, vecs, &|i| slot(i));
                    self.close("}");
                    return;
                }
                self.open(format!("if ({}) {{", self.owns()));
                self.line(format!(
                    "{0}* dst = out{k} + inst * {units}ull + t * {q}u;",
                    unit.ctype()
                ));
                if q % 2 == 0 && units % 2 == 0 && unit == Unit::U64 {
                    self.line("#pragma unroll");
                    self.open(format!("for (int k = 0; k < {}; ++k) {{", q / 2));
                    let st = format!(
                        "reinterpret_cast<ulonglong2*>(dst)[k] = make_ulonglong2({v}[2 * k], {v}[2 * k + 1]);"
                    );
                    if pad {
                        self.line(format!("if (t * {q}u + 2u * k < {len}u) {st}"));
                    } else {
                        self.line(st);
                    }
                    self.close("}");
                } else {
                    self.line("#pragma unroll");
                    let guard = if pad {
                        format!("if (t * {q}u + q < {len}u) ")
                    } else {
                        String::new()
                    };
                    self.line(format!(
                        "for (int q = 0; q < {q}; ++q) {guard}dst[q] = ({})({v}[q]);",
                        unit.ctype()
                    ));
                }
                self.close("}");
            }
            Val::Scalar(l) => {
                self.line(format!("// {comment}"));
                let unit = self.outputs[k].unit;
                // One thread writes a scalar: where an instance spans blocks, its last thread, the
                // one that holds every reduction whole.
                let writer = if self.sched.blocks_per_instance > 1 {
                    self.sched.threads_per_instance - 1
                } else {
                    0
                };
                self.line(format!(
                    "if (live && t == {writer}u) out{k}[inst] = ({})({});",
                    unit.ctype(),
                    l[0]
                ));
            }
            Val::Global(_) => unreachable!("outputs are computed values"),
            Val::Written => self.line(format!("// {comment}: written where computed")),
        }
    }

    /// Whether this thread writes its elements of results: a live thread, but for halo lanes
    /// (their elements are another warp's).
    fn owns(&self) -> &'static str {
        if self.sched.lane_halo {
            "live && lane != 0u"
        } else {
            "live"
        }
    }

    /// The shared staging buffer that placement gave node `id`, as an `elem` pointer.
    pub(super) fn staging(&self, id: ValueId, elem: &str) -> String {
        let s = self
            .placement
            .staging_of(id)
            .expect("placement gives every cross-warp step a buffer");
        format!("reinterpret_cast<{elem}*>(bf_smem + {})", s.offset)
    }

    /// Vectors per thread when an array of `len` units of `unit` moves between global memory
    /// and registers through the warp's transposition buffer ([`crate::place::coalesced_vectors`]
    /// decides; the buffer was placed for it).
    fn coalesced(&self, unit: Unit, units: u64, len: u64) -> Option<u32> {
        if unit != Unit::U64 || units != len || self.placement.transpose.is_none() {
            return None;
        }
        crate::place::coalesced_vectors(self.sel, self.sched, len, 1)
    }

    /// Vectors per thread when an array of `w`-word tuples moves through the warp's
    /// transposition buffer ([`crate::place::coalesced_vectors`]).
    fn coalesced_tuples(&self, id: ValueId, len: u64, w: usize) -> Option<u32> {
        if w < 2 {
            // A tuple of one word is a word: the rule for arrays of words is another.
            return None;
        }
        let tr = self.placement.transpose?;
        let words = match self.func.ty(id) {
            Type::Array(e, _) => e.leaves().iter().all(|l| *l == Type::U64),
            _ => false,
        };
        crate::place::coalesced_vectors(self.sel, self.sched, len, w as u64)
            .filter(|v| words && *v <= tr.vectors)
    }

    /// The warp's contiguous region of parameter `param` (`vecs` 16-byte vectors per lane) into
    /// its transposition buffer, `slot(i)` the buffer's element for vector `i`: lane `l` reads
    /// vectors `k * 32 + l` (whole lines per access), zero past the batch; then the warp
    /// synchronises.
    fn warp_region_in(&mut self, param: u32, vecs: u32, slot: &dyn Fn(&str) -> String) {
        let units = self.inputs[param as usize].units;
        let (base, live) = self.warp_region(
            &format!("in{param}"),
            "const ulonglong2*",
            units,
            vecs,
            false,
        );
        self.line(format!("const ulonglong2* src = {base};"));
        self.line("#pragma unroll");
        self.open(format!("for (int k = 0; k < {vecs}; ++k) {{"));
        self.line("const u32 i = k * 32u + lane;");
        self.line(format!(
            "{} = ({live}) ? src[i] : make_ulonglong2(0ull, 0ull);",
            slot("i")
        ));
        self.close("}");
        self.line("__syncwarp();");
    }

    /// The transposition buffer (filled by every lane) to the warp's contiguous region of result
    /// `k`, each vector guarded by its own instance, the way [`Self::warp_region_in`] reads;
    /// the warp synchronises before and after.
    fn warp_region_out(&mut self, k: usize, vecs: u32, slot: &dyn Fn(&str) -> String) {
        self.line("__syncwarp();");
        let units = self.outputs[k].units;
        let (base, live) = self.warp_region(&format!("out{k}"), "ulonglong2*", units, vecs, true);
        self.line(format!("ulonglong2* dst = {base};"));
        self.line("#pragma unroll");
        self.open(format!("for (int k = 0; k < {vecs}; ++k) {{"));
        self.line("const u32 i = k * 32u + lane;");
        self.line(format!("if ({live}) dst[i] = {};", slot("i")));
        self.close("}");
        self.line("__syncwarp();");
    }

    /// Vector `i` of the warp's transposition buffer, swizzled
    /// ([`crate::place::swizzled_vectors`]): the low three bits of `i` flipped by the next three.
    fn swizzled(tr: &str, i: &str) -> String {
        format!("{tr}[{i} ^ (({i} >> 3) & 7u)]")
    }

    /// The buffer index of this thread's vector `j` (of `vecs`), named `i` where it is swizzled.
    fn word_index(&mut self, vecs: u32) -> String {
        let i = format!("lane * {vecs}u + j");
        if crate::place::swizzled_vectors(vecs, false) {
            self.line(format!("const u32 i = {i};"));
            "i".into()
        } else {
            i
        }
    }

    /// Vector `i` of the warp's transposition buffer for arrays of words, `vecs` vectors per
    /// thread.
    fn word_slot(&self, vecs: u32) -> impl Fn(&str) -> String {
        let tr = self.transposition();
        let swizzle = crate::place::swizzled_vectors(vecs, false);
        move |i: &str| {
            if swizzle {
                Self::swizzled(&tr, i)
            } else {
                format!("{tr}[{i}]")
            }
        }
    }

    /// This warp's transposition buffer, as 16-byte vectors (at the placement's stride).
    fn transposition(&self) -> String {
        let tr = self
            .placement
            .transpose
            .expect("a coalesced access has its buffer");
        format!(
            "(reinterpret_cast<ulonglong2*>(bf_smem + {}) + (threadIdx.x >> 5) * {}u)",
            tr.offset,
            32 * tr.vectors
        )
    }

    /// Whether vector `i` of the warp's region belongs to an instance of the batch: it is thread
    /// `warp0 + i / vecs`'s.
    fn vector_live(&self, vecs: u32) -> String {
        format!(
            "(warp0 + i / {vecs}u) / {}ull < n",
            self.sched.threads_per_instance
        )
    }

    /// Where the warp's contiguous region of buffer `buf` (`units` words per instance, `vecs`
    /// 16-byte vectors per lane) starts, as a `ptr` (a 16-byte vector pointer type), and whether
    /// its vector `i` is there to read or write. An instance that spans blocks is the whole of its
    /// blocks' warps, whose regions are in the instance's buffer, padded at its end (an even
    /// number of words, so whole vectors). With halo lanes a warp's region starts with lane 0's
    /// elements, the end of the warp before (before the instance for its first warp: not live),
    /// which the warp reads but does not write (`store`).
    fn warp_region(
        &self,
        buf: &str,
        ptr: &str,
        units: u64,
        vecs: u32,
        store: bool,
    ) -> (String, String) {
        if self.sched.lane_halo {
            let start = format!("(long long)(int)(t - lane) * {}ll", 2 * vecs);
            (
                format!("reinterpret_cast<{ptr}>({buf} + inst * {units}ull + {start})"),
                format!(
                    "inst < n && {start} + 2ll * i >= 0ll && {start} + 2ll * i < {units}ll{}",
                    if store {
                        format!(" && i >= {vecs}u")
                    } else {
                        String::new()
                    }
                ),
            )
        } else if self.sched.blocks_per_instance > 1 {
            (
                format!(
                    "reinterpret_cast<{ptr}>({buf} + inst * {units}ull + (u64)(t & ~31u) * {}ull)",
                    2 * vecs
                ),
                format!(
                    "live && (u64)(t & ~31u) * {}ull + 2ull * i < {units}ull",
                    2 * vecs
                ),
            )
        } else {
            (
                format!("reinterpret_cast<{ptr}>({buf}) + warp0 * {vecs}ull"),
                self.vector_live(vecs),
            )
        }
    }

    /// Lane `lane` of each warp writes its `values` (one u64 per leaf) to the instance's slots of
    /// staging buffer `st`; then the block synchronises.
    pub(super) fn stage_warp_values(&mut self, st: &str, values: &[String], lane: u32) {
        let (w, n) = (self.sched.warps_per_instance(), values.len());
        self.open(format!("if (lane == {lane}u) {{"));
        for (k, v) in values.iter().enumerate() {
            self.line(format!(
                "{st}[(slot * {w}u + warp) * {n}u + {k}u] = (u64)({v});"
            ));
        }
        self.close("}");
        self.line("__syncthreads();");
    }

    /// Leaf `k` (of type `t`, one of `n`) of the value warp `lane` staged in `st`, read by this lane.
    pub(super) fn staged_value(&self, st: &str, t: &Type, k: usize, n: usize) -> String {
        let w = self.sched.warps_per_instance();
        let raw = format!("{st}[(slot * {w}u + lane) * {n}u + {k}u]");
        if *t == Type::Bool {
            format!("({raw} != 0ull)")
        } else {
            format!("({})({raw})", ctype(t))
        }
    }
}

impl Emitter<'_> {
    /// Whether array `id`, a parameter's words, is not loaded but read where it lies in global
    /// memory by the gathers that use it ([`crate::schedule::only_gathered`]), by the NTT
    /// products that use it ([`Self::only_ntt_operand`]) or by the divisions, gcds and inverses that
    /// use it ([`crate::place::read_in_place`]).
    pub(super) fn read_in_place(&self, id: ValueId) -> bool {
        self.sched.blocks_per_instance > 1 && crate::schedule::only_gathered(self.func, id)
            || self.only_ntt_operand(id)
            || crate::place::read_in_place(self.func, self.sched, id)
    }

    /// Whether array `id`, a parameter's 64-bit words, is only ever an operand of NTT products:
    /// they read it from global memory once per prime ([`Self::ntt_mul`]), so that no register
    /// holds it across the transforms' calls, where the calling convention would spill it to
    /// local memory (1-Mul at 2^16 bits: 232 bytes a thread, none without).
    fn only_ntt_operand(&self, id: ValueId) -> bool {
        let Some(param) = crate::schedule::global_words(self.func, id) else {
            return false;
        };
        let mut users = self
            .func
            .ids()
            .filter(|&u| self.func.node(u).op.args().contains(&id))
            .peekable();
        self.inputs[param as usize].unit == Unit::U64
            && !self.func.outputs.contains(&id)
            && users.peek().is_some()
            && users.all(|u| {
                matches!(self.func.node(u).op, Op::LimbMul { .. })
                    && matches!(self.sel.product(u), Some(Product::Ntt(_)))
            })
    }

    /// `src[idx[k]]` (0 past the end): every thread stages its elements of `src` in the instance's
    /// slots of the node's shared buffer, the block synchronises, then each thread reads the
    /// elements its indices name, wherever they came from; where instances span blocks, the
    /// elements are read from the parameter in global memory instead.
    pub(super) fn gather(&mut self, id: ValueId, comment: &str, src: ValueId, idx: ValueId) -> Val {
        let (idx_leaves, qi, len) = self.array_parts(idx);
        let src_len = match self.func.ty(src) {
            Type::Array(_, n) => n.as_const().expect("specialized lengths"),
            t => unreachable!("a gather from {t:?}"),
        };
        let (leaves, read) = if self.sched.blocks_per_instance > 1 {
            // The instance spans blocks: the words come from the parameter in global memory.
            let param = crate::schedule::global_words(self.func, src)
                .expect("instances span blocks only with gathers from parameters");
            let units = self.inputs[param as usize].units;
            self.line(format!(
                "// {comment}: from parameter {param} in global memory"
            ));
            let leaves = self.declare_array(id, qi);
            self.open("{");
            let read =
                format!("(live && j < {src_len}ull) ? in{param}[inst * {units}ull + j] : 0ull");
            (leaves, read)
        } else {
            let (src_leaves, qs, _) = self.array_parts(src);
            let words = self.sched.threads_per_instance * qs;
            let st = self.staging(id, "u64");
            self.line(format!("// {comment}"));
            let leaves = self.declare_array(id, qi);
            self.open("{");
            self.line(format!("u64* st = {st} + slot * {words}u;"));
            self.line("#pragma unroll");
            self.line(format!(
                "for (int q = 0; q < {qs}; ++q) st[t * {qs}u + q] = {}[q];",
                src_leaves[0]
            ));
            self.line("__syncthreads();");
            (leaves, format!("j < {src_len}ull ? st[j] : 0ull"))
        };
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {qi}; ++q) {{"));
        self.line(format!("const u64 j = {}[q];", idx_leaves[0]));
        self.line(format!("{}[q] = {read};", leaves[0]));
        self.close("}");
        self.close("}");
        Val::Array { leaves, q: qi, len }
    }
}

impl Emitter<'_> {
    /// Prefetches into L2, for the block [`crate::schedule::Schedule::prefetch_ahead`] blocks
    /// later, its tiles of the arrays this kernel reads into registers (see
    /// [`crate::schedule::lookback_prefetch`]): each thread a 128-byte line in turn. Once, before
    /// the first look-back.
    pub(super) fn prefetch_later_tiles(&mut self) {
        let tiles = std::mem::take(&mut self.prefetches);
        if tiles.is_empty() {
            return;
        }
        let (ahead, bpi, bt) = (
            self.sched.prefetch_ahead,
            self.sched.blocks_per_instance,
            self.sched.block_threads,
        );
        self.line(format!(
            "// the tiles of the block {ahead} later into L2, to keep memory busy while this block looks back"
        ));
        self.open(format!(
            "if (vb + {ahead}u < gridDim.x && (u64)((vb + {ahead}u) / {bpi}u) < n) {{"
        ));
        self.line(format!(
            "const u64 fi = (u64)((vb + {ahead}u) / {bpi}u); const u32 fp = (vb + {ahead}u) % {bpi}u;"
        ));
        for (param, units, q) in tiles {
            let tile = bt as u64 * q as u64;
            self.open("{");
            self.line(format!(
                "const u64 from = (u64)fp * {tile}ull, words = from < {units}ull ? min({tile}ull, {units}ull - from) : 0ull;"
            ));
            self.line(format!(
                "const unsigned char* f = reinterpret_cast<const unsigned char*>(in{param} + fi * {units}ull + from);"
            ));
            self.line(format!(
                "for (u64 b = (u64)threadIdx.x * 128ull; b < words * 8ull; b += {}ull) asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"(f + b));",
                bt as u64 * 128
            ));
            self.close("}");
        }
        self.close("}");
    }
}

/// Slot `s` of element `q` of this thread's in `park` (blocks of `block_threads`), as a `ty`
/// lvalue.
pub(super) fn park_slot(
    park: &crate::place::Park,
    s: usize,
    ty: &str,
    block_threads: u32,
) -> String {
    format!(
        "reinterpret_cast<{ty}*>(bf_smem + {})[(q * {}u + {s}u) * {block_threads}u + threadIdx.x]",
        park.offset,
        park.slot_count()
    )
}

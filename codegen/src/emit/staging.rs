//! What an NTT product would hold in registers across its transforms' calls, held elsewhere.
//!
//! The transforms are a device function that takes nearly every register; what the caller keeps
//! live across its calls, the calling convention saves to local memory: (a + b) * (b + a) at
//! 2^16 bits took a 192-byte stack frame and Poly 352 bytes, where a * b of two parameters takes
//! none (bench/RESULTS.md, twelfth and thirteenth sessions). So, in a kernel with such a
//! product, each NTT product reads its operands once per prime from memory, as 1-Mul reads its
//! parameters, and the arrays live across it are read back after it:
//! - a parameter's words from the parameter, where they lie;
//! - a computed array from a staging slot of the launch's scratch (`layout::Scratch`), where the
//!   product writes it once before its first prime.
//!
//! Where a value lives is decided here, once ([`homes`]); the emitter reads it from there.

use super::{Emitter, Val};
use crate::isel::{self, Product, Selection};
use crate::schedule::{global_words, Schedule};
use bigfuse_core::{Func, Op, Type, ValueId};

/// Where a staged value is read back from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Home {
    /// Parameter `k`'s words, where they lie in global memory.
    Param(u32),
    /// The instance's part of the block's staging slot, from this 64-bit word on.
    Slot(u64),
}

/// One NTT step of a kernel as it is emitted: a product at its node, or a sum of products
/// that runs as one (`isel::NttSum`) at the addition's node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct NttStep {
    /// The node whose place the step's code takes: what is live across it is held across the
    /// transforms' calls.
    pub at: ValueId,
    /// The operand pairs of its products.
    pub pairs: Vec<(ValueId, ValueId)>,
    /// 32-bit words per prime of the residues that a sum keeps in the slot (its third transform
    /// takes their room in shared memory); 0 for a product.
    pub residue_words: u64,
}

impl NttStep {
    /// Product `id` at its node.
    pub fn product(func: &Func, id: ValueId) -> NttStep {
        NttStep {
            at: id,
            pairs: vec![operands(func, id)],
            residue_words: 0,
        }
    }

    /// A sum that runs as one product under `sched` ([`isel::NttSum::fuses`]), at its node.
    pub fn sum(func: &Func, sum: &isel::NttSum, sched: &Schedule) -> NttStep {
        NttStep {
            at: sum.at,
            pairs: sum.products.iter().map(|&p| operands(func, p)).collect(),
            residue_words: isel::ntt_layout(&sum.plan, sched)
                .residue_words()
                .expect("a fused sum keeps its residues' room"),
        }
    }
}

fn operands(func: &Func, id: ValueId) -> (ValueId, ValueId) {
    match func.node(id).op {
        Op::LimbMul { a, b, .. } => (a, b),
        _ => unreachable!("NTT products are limb products"),
    }
}

/// The NTT steps of `func` under `sched`, in program order.
pub(super) fn ntt_steps(func: &Func, sel: &Selection, sched: &Schedule) -> Vec<NttStep> {
    func.ids()
        .filter_map(|id| {
            if let Some(sum) = sel.fused_ntt_sum(id, sched) {
                Some(NttStep::sum(func, sum, sched))
            } else {
                let ntt = matches!(sel.product(id), Some(Product::Ntt(_)))
                    && matches!(func.node(id).op, Op::LimbMul { .. });
                (ntt && !sel.computed_by_fused_ntt_sum(id, sched))
                    .then(|| NttStep::product(func, id))
            }
        })
        .collect()
}

/// Where an NTT step reads its operands and where the arrays live across it are read back
/// from, and the slot words it takes. A computed array is staged once: an operand that stays
/// live is read back from where it was staged.
pub(super) struct Homes {
    pub operands: Vec<(ValueId, Home)>,
    pub parked: Vec<(ValueId, Home)>,
    /// The 64-bit word of the slot where a sum's residues start (`NttStep::residue_words` per
    /// prime, two primes).
    pub residues: Option<u64>,
    pub words: u64,
}

impl Homes {
    /// Where operand `v` is read from.
    pub fn operand(&self, v: ValueId) -> Home {
        self.operands
            .iter()
            .find(|(o, _)| *o == v)
            .map(|&(_, h)| h)
            .expect("an operand of the step")
    }
}

pub(super) fn homes(func: &Func, step: &NttStep) -> Homes {
    let mut words = 0u64;
    let mut home_of = |v: ValueId| match global_words(func, v) {
        Some(k) => Home::Param(k),
        None => {
            words += array_len(func, v);
            Home::Slot(words - array_len(func, v))
        }
    };
    let mut operands: Vec<(ValueId, Home)> = Vec::new();
    for &(a, b) in &step.pairs {
        for v in [a, b] {
            if !operands.iter().any(|(o, _)| *o == v) {
                operands.push((v, home_of(v)));
            }
        }
    }
    let parked = live_across(func, step.at)
        .into_iter()
        .map(|v| match operands.iter().find(|(o, _)| *o == v) {
            Some(&(_, h)) => (v, h),
            None => (v, home_of(v)),
        })
        .collect();
    // Two primes' residues of 32-bit words, in 64-bit words of the slot.
    let residues = (step.residue_words > 0).then(|| {
        words += step.residue_words;
        words - step.residue_words
    });
    Homes {
        operands,
        parked,
        residues,
        words,
    }
}

/// Whether the kernel's NTT steps read their operands from memory and park what is live across
/// them: where some step has a computed operand, arrays live across it or residues to keep, and
/// an instance's threads are in one block (they share the slot; instances that span blocks read
/// their operands per block otherwise).
pub(super) fn stages(func: &Func, sel: &Selection, sched: &Schedule) -> bool {
    sched.blocks_per_instance == 1
        && ntt_steps(func, sel, sched).iter().any(|step| {
            let h = homes(func, step);
            h.words > 0 || !h.parked.is_empty()
        })
}

/// 64-bit words a staging slot (a block's) holds: the largest step's [`Homes::words`] per
/// instance; 0 where the kernel stages nothing, or only parameters' words.
pub(super) fn staged_words(func: &Func, sel: &Selection, sched: &Schedule) -> u64 {
    if !stages(func, sel, sched) {
        return 0;
    }
    let per_instance = ntt_steps(func, sel, sched)
        .iter()
        .map(|step| homes(func, step).words)
        .max()
        .unwrap_or(0);
    per_instance * sched.instances_per_block as u64
}

fn array_len(func: &Func, id: ValueId) -> u64 {
    match func.ty(id) {
        Type::Array(_, n) => n.as_const().unwrap_or(0),
        _ => 0,
    }
}

/// The arrays of 64-bit words defined before node `u` and read after it (or results of the
/// kernel): what a product at `u` would hold in registers across its calls. One pass over the
/// nodes (the last reader of each value), so that asking for every product stays linear.
fn live_across(func: &Func, u: ValueId) -> Vec<ValueId> {
    let mut last_read = vec![0usize; func.nodes.len()];
    for w in func.ids() {
        for a in func.node(w).op.args() {
            last_read[a.index()] = w.index();
        }
    }
    for o in &func.outputs {
        last_read[o.index()] = usize::MAX;
    }
    func.ids()
        .take_while(|&v| v != u)
        .filter(|&v| matches!(func.ty(v), Type::Array(e, _) if **e == Type::U64))
        .filter(|&v| last_read[v.index()] > u.index())
        .collect()
}

impl Emitter<'_> {
    /// The instance's part of its block's staging slot, as a `u64*` expression.
    pub(super) fn slot_base(&self) -> String {
        let words = self.scratch.map_or(0, |s| s.staged_words);
        let ipb = self.sched.instances_per_block as u64;
        format!("(bf_block_staged + (u64)slot * {}ull)", words / ipb)
    }

    /// Word `l` (a CUDA expression, below the value's length) of a value at `home`, as a `u64`
    /// expression.
    pub(super) fn home_word(&self, home: Home, l: &str) -> String {
        match home {
            Home::Param(k) => {
                let units = self.inputs[k as usize].units;
                format!("(live ? in{k}[inst * {units}ull + {l}] : 0ull)")
            }
            Home::Slot(at) => format!("{}[{at}u + {l}]", self.slot_base()),
        }
    }

    /// Claims, at the kernel's start, a free staging slot of the scratch for the block (the
    /// protocol is [`crate::layout::Scratch`]'s): thread 0 tries the slots from blockIdx.x on.
    pub(super) fn claim_staging_slot(&mut self) {
        let Some(s) = self.scratch.filter(|s| s.staged_words > 0) else {
            return;
        };
        let record_words = 4 * s.records() * s.scans as u64;
        self.line("// a staging slot of the scratch that no running block holds (layout::Scratch)");
        self.line(format!(
            "u32* const bf_flags = bf_scratch + {record_words}ull * gridDim.x;"
        ));
        self.line("__shared__ u32 bf_stage_slot;");
        self.open("if (threadIdx.x == 0u) {");
        self.line("u32 s = blockIdx.x % (u32)bf_slots;");
        self.line("while (atomicCAS(&bf_flags[s], 0u, 1u) != 0u) s = s + 1u == (u32)bf_slots ? 0u : s + 1u;");
        self.line("bf_stage_slot = s;");
        self.close("}");
        self.line("__syncthreads();");
        self.line(format!(
            "u64* const bf_block_staged = reinterpret_cast<u64*>(bf_flags + ((bf_slots + 3ull) & ~3ull)) + (u64)bf_stage_slot * {}ull;",
            s.staged_words
        ));
    }

    /// Frees the block's staging slot at the kernel's end, once all its threads are done with it.
    pub(super) fn release_staging_slot(&mut self) {
        if self.scratch.is_none_or(|s| s.staged_words == 0) {
            return;
        }
        self.line("__syncthreads(); // the block is done with its staging slot");
        self.line(
            "if (threadIdx.x == 0u) { __threadfence(); atomicExch(&bf_flags[bf_stage_slot], 0u); }",
        );
    }

    /// Before NTT step `step`: writes its computed operands and the computed arrays live across
    /// it, held in registers, to their slot words ([`homes`]). The homes of its operands, which
    /// its primes read from; None where the kernel does not stage ([`stages`]), and its operands
    /// are read as they are held.
    pub(super) fn stage_before(&mut self, step: &NttStep) -> Option<Homes> {
        if !self.staging {
            return None;
        }
        let h = homes(self.func, step);
        let mut written = Vec::new();
        for &(v, home) in h.operands.iter().chain(&h.parked) {
            let (Home::Slot(at), Val::Array { leaves, q, len }) = (home, self.val(v).clone())
            else {
                continue;
            };
            if written.contains(&at) {
                continue;
            }
            written.push(at);
            let base = self.slot_base();
            self.line("#pragma unroll");
            self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
            self.line(format!("const u32 l = t * {q}u + (u32)q;"));
            self.line(format!(
                "if (l < {len}u) {base}[{at}u + l] = {}[q]; // {v}",
                leaves[0]
            ));
            self.close("}");
        }
        if !written.is_empty() {
            self.line("__syncthreads(); // the staged words, visible to the instance's threads");
        }
        Some(h)
    }

    /// After the product: the arrays live across it that were held in registers, read back
    /// from their homes into new registers (each thread its own words), which their later
    /// readers use.
    pub(super) fn reload_parked(&mut self, parked: &[(ValueId, Home)]) {
        for &(v, home) in parked {
            let Val::Array { q, len, .. } = self.val(v).clone() else {
                continue;
            };
            let name = self.temp();
            self.line(format!(
                "u64 {name}[{q}]; // {v}, read back after the product"
            ));
            self.line("#pragma unroll");
            self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
            self.line(format!("const u32 l = t * {q}u + (u32)q;"));
            let word = self.home_word(home, "l");
            self.line(format!("{name}[q] = l < {len}u ? {word} : 0ull;"));
            self.close("}");
            self.vals[v.index()] = Some(Val::Array {
                leaves: vec![name],
                q,
                len,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use bigfuse_core::{Builder, Size, Type, ValueId};

    /// Compiles `body(a, b)` over two 2^16-bit values (NTT products, two instances a block).
    fn compile(body: impl Fn(&mut Builder, ValueId, ValueId) -> ValueId) -> crate::Compiled {
        let mut b = Builder::new("k", &[]);
        let ty = Type::Big(Size::lit(65536));
        let (x, y) = (b.param("a", ty.clone()), b.param("b", ty));
        let r = body(&mut b, x, y);
        let f = b.finish(&[r]).unwrap();
        crate::compile(&f, &[], &crate::Target::h100(), &Default::default()).unwrap()
    }

    /// Lines that write a value to the block's slot.
    fn writes(c: &crate::Compiled) -> usize {
        c.source
            .lines()
            .filter(|l| l.contains("u) (bf_block_staged"))
            .count()
    }

    /// Products of parameters hold nothing across their calls: no staging, no scratch.
    #[test]
    fn products_of_parameters_stage_nothing() {
        for c in [
            compile(|b, x, y| b.mul(x, y).unwrap()),
            compile(|b, x, _| b.mul(x, x).unwrap()),
        ] {
            assert!(c.scratch.is_none());
            assert!(!c.source.contains("bf_slots"));
        }
    }

    /// Poly: a slot holds what is computed (x = a^2 + b and y = b^2 + b for the sum x y + a b,
    /// a^2 across b^2) and the sum's residues, and `b`, a parameter, is read where it lies,
    /// never staged.
    #[test]
    fn poly_stages_computed_values_and_reads_parameters_where_they_lie() {
        let c = compile(crate::per_thread::poly);
        assert_eq!(c.schedule.instances_per_block, 2);
        // The sum's: x and y, 1,024 words each, and two primes' residues of 2,116 32-bit words
        // (2,048 digits at i + i / 32, rounded to 4), for each of two instances.
        assert_eq!(c.scratch.unwrap().staged_words, 2 * (2048 + 2116));
        let src = &c.source;
        assert_eq!(src.matches("staged in the block's slot").count(), 2);
        // Read back: b after a^2; b and a^2 after b^2. Nothing is live across the sum.
        assert_eq!(src.matches("read back after the product").count(), 3);
        assert!(src.matches("from in1, read where it lies").count() >= 2);
        // Written: a^2 before b^2, x and y before the sum; never b.
        assert_eq!(writes(&c), 3);
        assert_eq!(src.matches("the residues meanwhile").count(), 1);
    }

    /// An operand that stays live is read back from where it was staged, not staged twice.
    #[test]
    fn a_live_operand_is_staged_once() {
        let c = compile(|b, x, y| {
            let s = b.add(x, y).unwrap();
            let d = b.sub(y, x).unwrap();
            let p = b.mul(s, d).unwrap();
            b.add(p, s).unwrap()
        });
        assert_eq!(c.scratch.unwrap().staged_words, 2 * 2048);
        assert_eq!(writes(&c), 2, "s and b - a, once each");
    }
}

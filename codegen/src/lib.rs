//! bigfuse-codegen: the compiler passes, each a pure function of its input IR and a [`Target`].
//!
//! ```text
//! specialize -> unroll (loops.rs) -> fold -> divide -> per_thread -> scalarize -> lower_zp -> lower -> dead_code
//!            -> unzip -> recognise -> merge_maps -> isel -> schedule -> place -> emit
//! ```
//! [`passes::PASSES`] lists them with their files; [`compile`] runs them in that order and records
//! the IR after each rewriting pass for `explain`. [`plan`] decides between one kernel, a split
//! ([`split`]) and a chunked reduction ([`chunk`]).
//!
//! Nothing here needs a GPU or NVRTC; the runtime compiles and launches what [`compile`] returns.

pub mod analysis;
pub mod chunk;
pub mod divide;
pub mod emit;
pub mod error;
pub mod fold;
pub mod fuse;
pub mod gcd;
pub mod group;
pub mod isel;
pub mod layout;
pub mod loops;
pub mod lower;
pub mod lower_bits;
pub mod modular;
pub mod montgomery;
pub mod mul;
pub mod ntt;
pub mod ntt_global;
pub mod passes;
pub mod per_thread;
pub mod place;
pub mod plan;
pub mod polymul;
pub mod residue;
pub mod scalarize;
pub mod schedule;
pub mod split;
pub mod target;

pub use emit::emit;
pub use error::{CgResult, CodegenError};
pub use fuse::{fuse, Fused, KernelGroup};
pub use layout::{layout_of, BufferLayout, Scratch, Unit};
pub use lower::lower;
pub use passes::{Pass, Stage, Stages, PASSES};
pub use place::{place, Place, Placement};
pub use plan::{compile_plan, Body, Part, Plan, Source};
pub use schedule::{schedule, Hints, Schedule};
pub use target::Target;

use bigfuse_core::{specialize, validate, Func};
use std::fmt::Write;

/// A program compiled for one set of sizes and one target: CUDA source plus everything the runtime
/// needs to launch it.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub kernel_name: String,
    pub source: String,
    pub schedule: Schedule,
    pub placement: Placement,
    pub inputs: Vec<BufferLayout>,
    pub outputs: Vec<BufferLayout>,
    pub kernels: Vec<KernelGroup>,
    pub fusion_notes: Vec<String>,
    /// What instruction selection chose, one line per node, for `explain`.
    pub selection: Vec<String>,
    pub stages: Vec<Stage>,
    /// Constant tables the kernel reads (NTT twiddles), in parameter order after the outputs.
    pub tables: Vec<Vec<u32>>,
    /// The global scratch each launch needs, passed after the tables, when instances span
    /// several blocks.
    pub scratch: Option<layout::Scratch>,
    /// The size parameters' names and values, e.g. `[("BITS", 4096)]`.
    pub sizes: Vec<(String, u64)>,
    pub target: Target,
    /// The same kernel with values read again where used instead of held, which the runtime
    /// loads instead where the CUDA compiler spills this one (spills show only once the compiler
    /// has allocated registers): with several threads of one block per instance, the thread
    /// coordinates ([`Schedule::read_coordinates`]); with one thread per instance, whose spills
    /// are whole values it holds, the parameters' words that live across a product, parked in
    /// shared memory where loaded ([`Schedule::park_values`]; Poly at 2^10 / 2^11 bits: 320 /
    /// 880 -> 0 / 0 bytes). Present where no hint fixes the form and the second form differs
    /// from this one.
    pub spill_free: Option<SecondForm>,
}

/// A kernel's second form ([`Compiled::spill_free`]): its source, and the schedule and placement
/// that wrote it (parked parameters take shared memory of their own).
#[derive(Clone, Debug)]
pub struct SecondForm {
    pub source: String,
    pub schedule: Schedule,
    pub placement: Placement,
}

impl SecondForm {
    /// What this form reads where used, for the runtime's account of the form it loaded.
    pub fn reads(&self) -> &'static str {
        if self.schedule.park_values {
            "parameters parked in shared memory"
        } else {
            "thread coordinates read where used"
        }
    }
}

impl Compiled {
    /// Every decision, pass by pass: what `explain` prints before the driver's resource figures.
    pub fn explain(&self) -> String {
        let mut s = String::new();
        let sizes: Vec<String> = self.sizes.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let _ = writeln!(
            s,
            "kernel {} ({}) for {}",
            self.kernel_name,
            sizes.join(", "),
            self.target.name
        );
        for stage in &self.stages {
            let _ = writeln!(s, "\n== after {} ==\n{}", stage.pass, stage.ir.trim_end());
        }
        let _ = writeln!(s, "\n== fuse ==");
        for k in &self.kernels {
            let _ = writeln!(s, "kernel over nodes {:?}: {}", k.nodes, k.reason);
        }
        for n in &self.fusion_notes {
            let _ = writeln!(s, "{n}");
        }
        let _ = writeln!(s, "\n== isel ==");
        for n in &self.selection {
            let _ = writeln!(s, "{n}");
        }
        let _ = writeln!(s, "\n== schedule ==");
        for d in &self.schedule.decisions {
            let _ = writeln!(s, "{d}");
        }
        let _ = writeln!(s, "\n== place ==");
        for n in &self.placement.notes {
            let _ = writeln!(s, "{n}");
        }
        for st in &self.placement.staging {
            let _ = writeln!(
                s,
                "staging for {}: {} bytes at offset {} (buffer {})",
                st.node, st.bytes, st.offset, st.buffer
            );
        }
        let _ = writeln!(
            s,
            "\n== launch ==\nblock {} threads, {} instance(s) per block, {} bytes static shared memory",
            self.schedule.block_threads, self.schedule.instances_per_block, self.placement.shared_bytes
        );
        s
    }

    /// The sources the runtime may load: this kernel's and, where the cost model expects it at
    /// its register cap (`__launch_bounds__`), the form the runtime takes if the CUDA compiler
    /// spills it ([`Compiled::spill_free`]), so that a background compile can cache both.
    pub fn likely_sources(&self) -> Vec<&str> {
        let mut sources = vec![self.source.as_str()];
        if let Some(second) = &self.spill_free {
            // The estimate misses the values a one-thread kernel holds whole (Poly at 2^10 bits:
            // 120 registers estimated, 168 and 320 bytes of spills).
            if second.schedule.park_values
                || self.schedule.est_registers > self.schedule.register_cap(&self.target)
            {
                sources.push(&second.source);
            }
        }
        sources
    }

    /// Blocks needed for `n` instances.
    pub fn grid_for(&self, n: u64) -> u64 {
        self.schedule.grid_for(n)
    }
}

/// `name` as a C identifier (anything but letters and digits becomes `_`).
pub(crate) fn c_identifier(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn kernel_name(func: &Func, sizes: &[u64]) -> String {
    let mut name = format!("bf_{}", c_identifier(&func.name));
    for s in sizes {
        let _ = write!(name, "_{s}");
    }
    name
}

/// Runs every pass on `func` specialized to `sizes`.
pub fn compile(func: &Func, sizes: &[u64], target: &Target, hints: &Hints) -> CgResult<Compiled> {
    validate(func)?;
    // The passes of `passes::PASSES`, in order.
    let mut stages = Stages::default();
    let concrete = specialize(func, sizes)?;
    stages.record("specialize", &concrete);
    let (lowered, (ntt_from, ntt_why)) = lower::lower_passes(
        &concrete,
        hints.ntt_from_bits,
        hints.per_thread,
        divide::whole_bits(hints),
        &mut |pass, f| stages.record(pass, f),
    )?;
    validate(&lowered)?;
    let fused = fuse::fuse_recorded(&lowered, &mut stages)?;
    let selection = isel::select(&fused.func)?;
    let mut sched = schedule(&fused.func, &selection, target, hints)?;
    let placement = place(&fused.func, &selection, &sched, target)?;
    let name = kernel_name(func, sizes);
    let size_pairs: Vec<(String, u64)> = func
        .size_params
        .iter()
        .cloned()
        .zip(sizes.iter().copied())
        .collect();
    let header = format!(
        "Generated by bigfuse from `{}`{}. Do not edit.\nschedule: {} thread(s) per instance, Q={}, {} instance(s) per block of {} threads",
        func.name,
        if size_pairs.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                size_pairs.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(", ")
            )
        },
        sched.threads_per_instance,
        sched.q,
        sched.instances_per_block,
        sched.block_threads
    );
    let header = if sched.blocks_per_instance > 1 {
        header.replace(
            &format!("{} instance(s) per block of", sched.instances_per_block),
            &format!("each instance over {} blocks of", sched.blocks_per_instance),
        )
    } else {
        header
    };
    let source = emit(&fused.func, &selection, &sched, &placement, &name, &header)?;
    let second = match (sched.blocks_per_instance, sched.threads_per_instance) {
        (1, 1) if hints.park_values.is_none() => Some((
            Schedule {
                park_values: true,
                ..sched.clone()
            },
            "parameters held in registers from their load; where the CUDA compiler spills this \
             kernel, the runtime loads its second form, which parks their words in shared memory \
             where it loads them and reads them there after a product",
        )),
        (1, t) if t > 1 && hints.read_coordinates.is_none() => Some((
            Schedule {
                read_coordinates: true,
                ..sched.clone()
            },
            "thread coordinates held in registers; where the CUDA compiler spills this kernel, \
             the runtime loads its second form, which reads them where used",
        )),
        _ => None,
    };
    let mut spill_free = None;
    // A second form that does not fit a block's shared memory is none.
    if let Some((schedule, why, Ok(placed))) =
        second.map(|(s, why)| (s.clone(), why, place(&fused.func, &selection, &s, target)))
    {
        let text = emit(&fused.func, &selection, &schedule, &placed, &name, &header)?;
        // Where no value lives across a product, the forms are one kernel.
        if text != source {
            sched.decisions.push(why.into());
            spill_free = Some(SecondForm {
                source: text,
                schedule: Schedule {
                    decisions: sched.decisions.clone(),
                    ..schedule
                },
                placement: placed,
            });
        }
    }
    let (inputs, outputs) = layout::buffer_layouts(&fused.func)?;
    let scratch = emit::scratch_of(&fused.func, &selection, &sched);
    let tables = selection
        .tables(&sched)
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    Ok(Compiled {
        scratch,
        kernel_name: name,
        source,
        schedule: sched,
        placement,
        inputs,
        outputs,
        tables,
        selection: {
            let mut notes = selection.describe(&fused.func);
            if selection.products().next().is_some() {
                let bits = if ntt_from.is_power_of_two() {
                    format!("2^{}", ntt_from.trailing_zeros())
                } else {
                    ntt_from.to_string()
                };
                notes.insert(
                    0,
                    format!("products of operands from {bits} bits (truncated; full products from half that) use the NTT: {ntt_why}"),
                );
            }
            notes
        },
        kernels: fused.kernels,
        fusion_notes: fused.notes,
        stages: stages.stages,
        sizes: size_pairs,
        target: target.clone(),
        spill_free,
    })
}

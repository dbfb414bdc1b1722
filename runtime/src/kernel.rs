//! A kernel program with its per-size, per-device compiled forms.

use crate::batch::Batch;
use crate::column::{check_args, check_values, Arg, Column, Out, Slot};
use crate::device::{CpuLevel, Device};
use crate::error::{Error, Result};
use crate::gpu::{GpuDevice, GpuProgram};
use crate::tiers::{Background, Mode, Progress, Tier};
use bigfuse_codegen::{
    compile, compile_plan, lower::lower_compiled, BufferLayout, Compiled, Hints, Plan, Target,
};
use bigfuse_core::{eval, specialize, validate, Func, Type, Value};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// What a loaded kernel is cached by: sizes, schedule hints, GPU ordinal.
type LoadKey = (Vec<u64>, Hints, usize);

/// The loaded programs of one key, once made ([`load_once`]): the tuned one and, while that
/// compiles in the background, the compact one ([`crate::tiers`]).
#[derive(Default)]
struct Loading {
    tuned: Mutex<Option<Arc<GpuProgram>>>,
    compact: Mutex<Option<Arc<GpuProgram>>>,
    background: Progress,
    /// The tuned plan whose CUDA the background compiles, for the call that loads it.
    pending: Mutex<Option<Plan>>,
}

impl Loading {
    /// The tuned program if it is loaded and no one holds its lock (loading it).
    fn tuned_now(&self) -> Option<Arc<GpuProgram>> {
        self.tuned.try_lock().ok()?.clone()
    }
}

/// A kernel program, callable on any [`Device`] over batches of any size. Its specialized forms
/// are cached per sizes, its compiled forms per (sizes, schedule hints, GPU), so that a repeated
/// call neither re-specializes nor re-plans nor recompiles.
///
/// `#[bigfuse::kernel]` makes one per annotated function (its `kernel()`), with typed `run`,
/// `run_into` and `launch` functions around the methods here; a program built otherwise (with the
/// IR builder, or from IR text as below) is called through them directly. Calls from several
/// threads at once are safe: see [`Device`]'s section on concurrency.
///
/// ```
/// use bigfuse_runtime::{Arg, Batch, Column, Device, Kernel, Out};
/// use num_bigint::BigUint;
///
/// // r = a + b modulo 2^BITS, as IR text (what `#[bigfuse::kernel]` would build from Rust).
/// let add = Kernel::new(bigfuse_core::parse(
///     "fn add<BITS>(a: U<BITS>, b: U<BITS>) -> U<BITS> {
///        %a = param a : U<BITS>
///        %b = param b : U<BITS>
///        %s = big.add %a, %b : U<BITS>
///        return %s
///      }",
/// )?)?;
/// let dev = Device::cpu();
/// let a = [BigUint::from(5u8), BigUint::from(u64::MAX)];
/// let b = [BigUint::from(1u8), BigUint::from(1u8)];
///
/// // Host values in, owned results out (sizes: BITS = 128).
/// let r = add.run(&dev, &[128], &[Arg::Big(&a), Arg::Big(&b)])?;
/// let want = vec![BigUint::from(6u8), BigUint::from(1u8) << 64];
/// assert_eq!(r, [Column::Big(want.clone())]);
///
/// // Limbs in, limbs out into a vector the caller keeps (2 limbs per 128-bit value).
/// let mut limbs = Vec::new();
/// add.run_into(&dev, &[128], &[Arg::U64(&[5, 0, u64::MAX, 0]), Arg::Big(&b)], &mut [Out::U64(&mut limbs)])?;
/// assert_eq!(limbs, [6, 0, 0, 1]);
///
/// // Batches stay on the device; chained launches need no round trip through the host.
/// let x = Batch::big(&dev, 128, &a)?;
/// let y = add.launch(&dev, &[128], &[Arg::Batch(&x), Arg::Big(&b)])?;
/// let z = add.launch(&dev, &[128], &[Arg::Batch(&y[0]), Arg::Batch(&x)])?;
/// assert_eq!(z[0].to_big()?, [BigUint::from(11u8), (BigUint::from(1u8) << 65) - 1u8]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Kernel {
    func: Func,
    specialized: Mutex<HashMap<Vec<u64>, Arc<Specialized>>>,
    loaded: Mutex<HashMap<LoadKey, Arc<Loading>>>,
}

/// The program at one set of sizes: its parameters and results with their layouts.
pub struct Specialized {
    /// The program with every size replaced by its value.
    pub concrete: Func,
    /// How each parameter's values are passed.
    pub params: Vec<Slot>,
    /// How each result's values come back.
    pub results: Vec<Slot>,
    /// The lowered program, for the CPU backend's lowered level (made on first use).
    lowered: OnceLock<Func>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({})", self.func.name)
    }
}

/// Whether `BIGFUSE_AUTOTUNE=1` asks [`Kernel::run`] to tune schedules on the GPU.
pub fn autotune_enabled() -> bool {
    std::env::var("BIGFUSE_AUTOTUNE").is_ok_and(|v| v == "1")
}

/// Schedule overrides from the environment: `BIGFUSE_Q` (elements per thread), `BIGFUSE_BLOCK`
/// (threads per block), `BIGFUSE_MUL_WIDTH` (digits per product slice), `BIGFUSE_NTT_FROM` (operand
/// bits from which products use the NTT; full products from half as many), `BIGFUSE_MIN_BLOCKS`
/// (blocks per SM in launch bounds),
/// `BIGFUSE_POW_MOD_GROUP` (threads per power modulo a big integer, gcd and inverse), `BIGFUSE_DIVIDE_WHOLE` (the
/// widest divisor, in bits, that one thread divides by whole), `BIGFUSE_SPAN` (the most blocks one
/// instance spans; 1 keeps every instance in one block), `BIGFUSE_GLOBAL_NTT` (operand bits from
/// which products go over global memory in kernels of their own), `BIGFUSE_COORDS` (1: thread
/// coordinates read where used, 0: held; `Hints::read_coordinates`), `BIGFUSE_PARK` (1: in
/// one-thread kernels, parameters parked in shared memory, 0: held; `Hints::park_values`).
/// Unparsable values are ignored.
pub fn env_hints() -> Hints {
    let read = |k: &str| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|v| *v > 0)
    };
    let flag = |k: &str| match std::env::var(k).ok().as_deref().map(str::trim) {
        Some("1") => Some(true),
        Some("0") => Some(false),
        _ => None,
    };
    Hints {
        q: read("BIGFUSE_Q"),
        block_threads: read("BIGFUSE_BLOCK"),
        mul_width: read("BIGFUSE_MUL_WIDTH"),
        ntt_from_bits: read("BIGFUSE_NTT_FROM").map(u64::from),
        min_blocks: read("BIGFUSE_MIN_BLOCKS"),
        chunk_len: read("BIGFUSE_CHUNK").map(u64::from),
        per_thread: flag("BIGFUSE_PER_THREAD"),
        pow_mod_group: read("BIGFUSE_POW_MOD_GROUP"),
        divide_whole_bits: read("BIGFUSE_DIVIDE_WHOLE").map(u64::from),
        span: read("BIGFUSE_SPAN"),
        global_ntt_from_bits: read("BIGFUSE_GLOBAL_NTT").map(u64::from),
        read_coordinates: flag("BIGFUSE_COORDS"),
        park_values: flag("BIGFUSE_PARK"),
    }
}

impl Kernel {
    /// Wraps a program (validated here, so a malformed one is an error, not a later surprise).
    pub fn new(func: Func) -> Result<Kernel> {
        validate(&func)?;
        Ok(Kernel {
            func,
            specialized: Mutex::new(HashMap::new()),
            loaded: Mutex::new(HashMap::new()),
        })
    }

    /// The program, with symbolic sizes.
    pub fn func(&self) -> &Func {
        &self.func
    }

    /// The program's name (the annotated function's).
    pub fn name(&self) -> &str {
        &self.func.name
    }

    /// The program at `sizes` (cached).
    pub fn specialized(&self, sizes: &[u64]) -> Result<Arc<Specialized>> {
        if let Some(s) = self
            .specialized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(sizes)
        {
            return Ok(s.clone());
        }
        let concrete = specialize(&self.func, sizes)?;
        let params = concrete
            .params
            .iter()
            .map(|p| Slot::new(&p.name, &p.ty))
            .collect::<Result<Vec<_>>>()?;
        let results = concrete
            .output_types()
            .iter()
            .enumerate()
            .map(|(k, t)| Slot::new(&format!("result {k}"), t))
            .collect::<Result<Vec<_>>>()?;
        let s = Arc::new(Specialized {
            concrete,
            params,
            results,
            lowered: OnceLock::new(),
        });
        self.specialized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(sizes.to_vec(), s.clone());
        Ok(s)
    }

    /// The schedule hints of a call: tuned on the GPU with `BIGFUSE_AUTOTUNE=1`, else the cost
    /// model's with any `BIGFUSE_*` overrides.
    fn hints(&self, dev: &Device, sizes: &[u64]) -> Result<Hints> {
        Ok(match dev {
            Device::Gpu(g) if autotune_enabled() => self.autotune(g, sizes)?.hints,
            _ => env_hints(),
        })
    }

    /// Runs over a batch: one column per parameter, one value per instance in each; the results
    /// as owned columns (big integers as `BigUint`). With `BIGFUSE_AUTOTUNE=1` the GPU schedule
    /// is tuned on the first call at each size (and cached on disk); otherwise it comes from the
    /// cost model and any `BIGFUSE_*` overrides.
    pub fn run(&self, dev: &Device, sizes: &[u64], args: &[Arg]) -> Result<Vec<Column>> {
        let hints = self.hints(dev, sizes)?;
        self.run_with(dev, sizes, args, &hints)
    }

    /// [`Kernel::run`] with explicit schedule hints (GPU only; the CPU backend ignores them).
    pub fn run_with(
        &self,
        dev: &Device,
        sizes: &[u64],
        args: &[Arg],
        hints: &Hints,
    ) -> Result<Vec<Column>> {
        let spec = self.specialized(sizes)?;
        let mut cols: Vec<Column> = spec.results.iter().map(|r| Column::empty(&r.ty)).collect();
        let mut outs: Vec<Out> = cols.iter_mut().map(Column::as_out).collect();
        self.run_into_with(dev, sizes, args, &mut outs, hints)?;
        drop(outs);
        Ok(cols)
    }

    /// Runs over a batch, writing each result into `outs` (vectors of `BigUint` or of limbs for
    /// big integers; resized, their allocations reused). On the GPU the call is pipelined:
    /// conversion, transfers and kernels of successive chunks overlap.
    pub fn run_into(
        &self,
        dev: &Device,
        sizes: &[u64],
        args: &[Arg],
        outs: &mut [Out],
    ) -> Result<()> {
        let hints = self.hints(dev, sizes)?;
        self.run_into_with(dev, sizes, args, outs, &hints)
    }

    /// [`Kernel::run_into`] with explicit schedule hints.
    pub fn run_into_with(
        &self,
        dev: &Device,
        sizes: &[u64],
        args: &[Arg],
        outs: &mut [Out],
        hints: &Hints,
    ) -> Result<()> {
        let spec = self.specialized(sizes)?;
        let n = self.check_call(&spec, dev, args)?;
        if outs.len() != spec.results.len() {
            return Err(Error::Argument {
                kernel: self.func.name.clone(),
                message: format!(
                    "it has {} result(s), {} destination(s) were given",
                    spec.results.len(),
                    outs.len()
                ),
            });
        }
        for (r, o) in spec.results.iter().zip(outs.iter()) {
            r.check_out(&self.func.name, o)?;
        }
        let outcome = match dev {
            Device::Cpu(c) => run_cpu(&spec, c.level, args, n).and_then(|cols| {
                for ((col, r), o) in cols.into_iter().zip(&spec.results).zip(outs.iter_mut()) {
                    col.write_to(&r.ty, o)?;
                }
                Ok(())
            }),
            Device::Gpu(g) => self.program_for_call(g, sizes, hints).and_then(|program| {
                check_layouts(&self.func.name, &spec, &program)?;
                crate::call::Call {
                    gpu: g,
                    program: &program,
                    params: &spec.params,
                    results: &spec.results,
                    args,
                    n,
                }
                .run(outs)
            }),
        };
        if outcome.is_err() {
            // No stale or partial results are left behind.
            outs.iter_mut().for_each(Out::clear);
        }
        outcome
    }

    /// Launches over a batch and returns the results as [`Batch`]es on the device, without
    /// waiting for the GPU: arguments may be batches (used in place) or host data (uploaded
    /// first). Chain launches to keep intermediates on the device; reading a batch waits for the
    /// kernels that compute it.
    pub fn launch(&self, dev: &Device, sizes: &[u64], args: &[Arg]) -> Result<Vec<Batch>> {
        let hints = self.hints(dev, sizes)?;
        self.launch_with(dev, sizes, args, &hints)
    }

    /// [`Kernel::launch`] with explicit schedule hints.
    pub fn launch_with(
        &self,
        dev: &Device,
        sizes: &[u64],
        args: &[Arg],
        hints: &Hints,
    ) -> Result<Vec<Batch>> {
        let spec = self.specialized(sizes)?;
        let n = self.check_call(&spec, dev, args)?;
        match dev {
            Device::Cpu(c) => {
                let cols = run_cpu(&spec, c.level, args, n)?;
                Ok(cols
                    .into_iter()
                    .zip(&spec.results)
                    .map(|(col, r)| Batch::on_host(r.clone(), n, col))
                    .collect())
            }
            Device::Gpu(g) => {
                let program = self.program_for_call(g, sizes, hints)?;
                check_layouts(&self.func.name, &spec, &program)?;
                crate::call::Call {
                    gpu: g,
                    program: &program,
                    params: &spec.params,
                    results: &spec.results,
                    args,
                    n,
                }
                .launch(dev)
            }
        }
    }

    /// Checks the arguments of a call against the specialized parameters and the device; returns
    /// the batch size.
    fn check_call(&self, spec: &Specialized, dev: &Device, args: &[Arg]) -> Result<usize> {
        let n = check_args(&self.func.name, &spec.params, args)?;
        for (p, a) in spec.params.iter().zip(args) {
            if let Arg::Batch(b) = a {
                b.check_device(dev).map_err(|e| match e {
                    Error::Argument { message, .. } => Error::Argument {
                        kernel: self.func.name.clone(),
                        message: format!("`{}`: {message}", p.name),
                    },
                    other => other,
                })?;
            }
        }
        check_moduli(&self.func.name, spec, args)?;
        Ok(n)
    }

    /// Compiles (without a GPU) for a target: the CUDA source and every decision.
    pub fn compile(&self, sizes: &[u64], target: &Target, hints: &Hints) -> Result<Compiled> {
        Ok(compile(&self.func, sizes, target, hints)?)
    }

    /// The plan for these sizes: one kernel, or several when the program does not fit one.
    pub fn plan(&self, sizes: &[u64], target: &Target, hints: &Hints) -> Result<Plan> {
        Ok(compile_plan(&self.func, sizes, target, hints)?)
    }

    /// The generated CUDA C for these sizes and target (every kernel of the plan, in order).
    pub fn cuda_source(&self, sizes: &[u64], target: &Target) -> Result<String> {
        let plan = self.plan(sizes, target, &env_hints())?;
        let sources: Vec<&str> = plan
            .parts
            .iter()
            .map(|p| p.compiled.source.as_str())
            .collect();
        Ok(sources.join("\n"))
    }

    /// Compiled and loaded on `gpu` (cached): for callers that keep data on the device.
    pub fn prepare(&self, gpu: &GpuDevice, sizes: &[u64]) -> Result<Arc<GpuProgram>> {
        self.prepare_with(gpu, sizes, &env_hints())
    }

    /// [`Kernel::prepare`] on any device, with the hints a call would use: the tuned kernel
    /// compiled and loaded on a GPU (nothing to do on the CPU backend), so that later calls
    /// neither wait for NVRTC nor run the compact tier ([`crate::tiers`]).
    pub fn prepare_on(&self, dev: &Device, sizes: &[u64]) -> Result<()> {
        if let Device::Gpu(g) = dev {
            let hints = self.hints(dev, sizes)?;
            self.prepare_with(g, sizes, &hints)?;
        }
        Ok(())
    }

    /// [`Kernel::prepare`] with explicit schedule hints. Concurrent first calls with the same
    /// sizes, hints and GPU compile once: the others wait for that compilation and share it (a
    /// background compilation of the tuned kernel too, [`crate::tiers`]).
    pub fn prepare_with(
        &self,
        gpu: &GpuDevice,
        sizes: &[u64],
        hints: &Hints,
    ) -> Result<Arc<GpuProgram>> {
        let slot = self.slot(gpu, sizes, hints);
        self.load_tuned(&slot, gpu, || self.plan(sizes, gpu.target(), hints))
    }

    /// The tuned program of `slot`, loaded from `plan()` on first use.
    fn load_tuned(
        &self,
        slot: &Loading,
        gpu: &GpuDevice,
        plan: impl FnOnce() -> Result<Plan>,
    ) -> Result<Arc<GpuProgram>> {
        slot.background.wait();
        let p = load_once(&slot.tuned, gpu, plan)?;
        // The compact program is no longer needed.
        slot.compact
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        Ok(p)
    }

    /// The tuned program whose CUDA the background compiles (or compiled) into the caches,
    /// loaded with the plan kept for it.
    fn load_background(
        &self,
        slot: &Loading,
        gpu: &GpuDevice,
        sizes: &[u64],
        hints: &Hints,
    ) -> Result<Arc<GpuProgram>> {
        let pending = slot
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        self.load_tuned(slot, gpu, || {
            pending.map_or_else(|| self.plan(sizes, gpu.target(), hints), Ok)
        })
    }

    /// Which form serves the next call with these sizes and hints on `gpu`: `None` before the
    /// first call (or [`Kernel::prepare`]), [`Tier::Compact`] while the tuned kernel compiles in
    /// the background ([`crate::tiers`]).
    pub fn serving(&self, gpu: &GpuDevice, sizes: &[u64], hints: &Hints) -> Option<Tier> {
        let slot = self.slot(gpu, sizes, hints);
        if slot
            .tuned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
            || slot.background.get() == Background::Done
        {
            Some(Tier::Tuned)
        } else if slot
            .compact
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            Some(Tier::Compact)
        } else {
            None
        }
    }

    fn slot(&self, gpu: &GpuDevice, sizes: &[u64], hints: &Hints) -> Arc<Loading> {
        self.loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((sizes.to_vec(), hints.clone(), gpu.ordinal()))
            .or_default()
            .clone()
    }

    /// The program a call runs: the tuned one, or, while that compiles in the background, the
    /// compact one ([`crate::tiers`]).
    fn program_for_call(
        &self,
        gpu: &GpuDevice,
        sizes: &[u64],
        hints: &Hints,
    ) -> Result<Arc<GpuProgram>> {
        let slot = self.slot(gpu, sizes, hints);
        let mode = crate::tiers::mode();
        match mode {
            Mode::TunedOnly => {
                return self.load_tuned(&slot, gpu, || self.plan(sizes, gpu.target(), hints))
            }
            Mode::CompactOnly => {
                let compact = slot.compact.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(p) = &*compact {
                    return Ok(p.clone());
                }
            }
            Mode::Auto => {
                if let Some(p) = slot.tuned_now() {
                    return Ok(p);
                }
                let running = match slot.background.get() {
                    Background::Idle => false,
                    Background::Running => true,
                    // The binaries are cached: loading costs no NVRTC time.
                    Background::Done => return self.load_background(&slot, gpu, sizes, hints),
                };
                let compact = slot.compact.lock().unwrap_or_else(|p| p.into_inner());
                if let (true, Some(p)) = (running, &*compact) {
                    return Ok(p.clone());
                }
            }
        }
        let plan = self.plan(sizes, gpu.target(), hints)?;
        let arch = gpu.target().sm();
        let cached = || {
            plan.parts
                .iter()
                .all(|p| crate::nvrtc::is_cached(&p.compiled.source, &arch))
        };
        let any_length = mode == Mode::CompactOnly;
        let first = if !any_length && cached() {
            // Loading it costs no NVRTC time.
            None
        } else {
            match self.first_calls(sizes, gpu.target(), hints, &plan, any_length) {
                FirstCalls::Compact(_, c) => Some(*c),
                FirstCalls::Short | FirstCalls::NoCompactForm => None,
            }
        };
        let Some(compact_plan) = first else {
            return self.load_tuned(&slot, gpu, || Ok(plan));
        };
        // The tuned CUDA starts compiling before the compact one: NVRTC compiles programs of
        // different threads in parallel, so the tuned kernel is ready sooner and the compact
        // one hardly later (bench/RESULTS.md, twelfth session).
        if mode == Mode::Auto && slot.background.start() {
            let sources: Vec<(String, String)> = plan
                .parts
                .iter()
                .flat_map(|p| {
                    let name = &p.compiled.kernel_name;
                    let sources = p.compiled.likely_sources();
                    sources.into_iter().map(|s| (s.to_string(), name.clone()))
                })
                .collect();
            *slot.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(plan);
            let job_slot = slot.clone();
            let started = crate::tiers::spawn(move || {
                // In parallel: a kernel's second form (`Compiled::likely_sources`) compiles
                // beside its first instead of after it. A failure is reported by the call that
                // loads the tuned kernel.
                std::thread::scope(|s| {
                    for (source, name) in &sources {
                        let arch = &arch;
                        s.spawn(move || crate::nvrtc::compile(source, name, arch).is_ok());
                    }
                });
                job_slot.background.set(Background::Done);
            });
            if !started {
                slot.background.set(Background::Done);
            }
        }
        match load_once(&slot.compact, gpu, || Ok(compact_plan)) {
            Ok(c) => Ok(c),
            Err(e) if mode == Mode::CompactOnly => Err(e),
            // The tuned kernel may still compile (and if not, its error says why).
            Err(_) => self.load_background(&slot, gpu, sizes, hints),
        }
    }

    /// The plan a first call on `target` runs while the tuned one compiles ([`crate::tiers`]):
    /// the first compact form of the program ([`Hints::compact`]) whose CUDA compiles fast enough to be
    /// worth compiling first ([`crate::tiers::pays`]), if there is one.
    pub fn compact_plan(
        &self,
        sizes: &[u64],
        target: &Target,
        hints: &Hints,
    ) -> Result<Option<Plan>> {
        let tuned = self.plan(sizes, target, hints)?;
        Ok(match self.first_calls(sizes, target, hints, &tuned, true) {
            FirstCalls::Compact(_, plan) => Some(*plan),
            _ => None,
        })
    }

    /// What serves a GPU's first calls while `tuned` compiles, and why ([`crate::tiers`]).
    fn explain_tiers(&self, sizes: &[u64], target: &Target, hints: &Hints, tuned: &Plan) -> String {
        let kb = |b: usize| b.div_ceil(1024);
        let bytes = source_bytes(tuned);
        let what = match self.first_calls(sizes, target, hints, tuned, false) {
            FirstCalls::Compact(h, c) => format!(
                "the compact form `{h}` ({} KB of CUDA against the tuned {} KB) while the tuned kernel compiles in the background",
                kb(source_bytes(&c)),
                kb(bytes)
            ),
            FirstCalls::Short => format!(
                "the tuned kernel ({} KB of CUDA, under {} KB: it compiles fast)",
                kb(bytes),
                kb(crate::tiers::TIER_FROM_BYTES)
            ),
            FirstCalls::NoCompactForm => format!(
                "the tuned kernel ({} KB of CUDA; no compact form compiles a tenth faster)",
                kb(bytes)
            ),
        };
        format!("== tiers ==\nfirst calls with empty caches: {what}\n")
    }

    /// What serves the first calls of `tuned` with empty caches ([`crate::tiers`]): the tuned
    /// kernel where its CUDA is short (unless `any_length`), else the first compact form
    /// ([`Hints::compact`]) whose CUDA compiles fast enough to be worth compiling first
    /// ([`crate::tiers::pays`]), if there is one.
    fn first_calls(
        &self,
        sizes: &[u64],
        target: &Target,
        hints: &Hints,
        tuned: &Plan,
        any_length: bool,
    ) -> FirstCalls {
        let tuned_bytes = source_bytes(tuned);
        if !any_length && tuned_bytes < crate::tiers::TIER_FROM_BYTES {
            return FirstCalls::Short;
        }
        let tuned_weight = crate::tiers::plan_weight(tuned);
        hints
            .compact()
            .into_iter()
            .find_map(|h| {
                let plan = self.plan(sizes, target, &h).ok()?;
                crate::tiers::pays(tuned_weight, crate::tiers::plan_weight(&plan))
                    .then(|| FirstCalls::Compact(h, Box::new(plan)))
            })
            .unwrap_or(FirstCalls::NoCompactForm)
    }

    /// Every pass's output and decision for these sizes; on a GPU also the compiled kernel's
    /// registers, shared memory and spills as the driver reports them.
    pub fn explain(&self, dev: &Device, sizes: &[u64]) -> Result<String> {
        match dev {
            Device::Gpu(g) => {
                let program = self.prepare(g, sizes)?;
                let mut s = program.plan.explain();
                s.push_str(&self.explain_tiers(sizes, g.target(), &env_hints(), &program.plan));
                s.push_str("== driver ==\n");
                for k in &program.parts {
                    let r = k.resources;
                    s.push_str(&format!(
                        "{}: {} registers per thread, {} bytes shared memory, {} bytes local memory per thread{}\n",
                        k.compiled.kernel_name,
                        r.registers,
                        r.shared_bytes,
                        r.local_bytes,
                        if r.local_bytes > 0 { " (spills)" } else { " (no spills)" }
                    ));
                    if let Some(why) = &k.form {
                        s.push_str(&format!("  {why}\n"));
                    }
                }
                Ok(s)
            }
            Device::Cpu(_) => {
                let target = Target::h100();
                let plan = self.plan(sizes, &target, &env_hints())?;
                Ok(format!(
                    "(CPU backend: the evaluator runs the program; this is the plan for a {})\n{}{}",
                    target.name,
                    plan.explain(),
                    self.explain_tiers(sizes, &target, &env_hints(), &plan)
                ))
            }
        }
    }
}

/// Instances of a call whose operators are sampled (debug builds), and triples per operator.
const LAW_SAMPLED_INSTANCES: usize = 2;
const LAW_SAMPLES: usize = 64;

fn run_cpu(spec: &Specialized, level: CpuLevel, args: &[Arg], n: usize) -> Result<Vec<Column>> {
    check_values(&spec.params, args)?;
    let concrete = &spec.concrete;
    let program = match level {
        CpuLevel::Reference => concrete,
        CpuLevel::Lowered => {
            if spec.lowered.get().is_none() {
                let _ = spec.lowered.set(lower_compiled(concrete, &env_hints())?);
            }
            spec.lowered.get().unwrap_or(concrete)
        }
    };
    let types = concrete.output_types();
    let results: Vec<Vec<Value>> = (0..n)
        .into_par_iter()
        .map(|i| {
            let inputs: Vec<Value> = args
                .iter()
                .zip(&concrete.params)
                .map(|(a, p)| a.value_of(&p.ty, i))
                .collect();
            // Scans and reductions regroup their operators on a GPU: in debug builds, sample the
            // associativity each one claims on this call's first instances.
            if cfg!(debug_assertions) && i < LAW_SAMPLED_INSTANCES {
                bigfuse_core::laws::check_operators(concrete, &inputs, LAW_SAMPLES)?;
            }
            // The lowered level holds array elements that are big integers as limb tuples.
            let inputs: Vec<Value> = inputs
                .into_iter()
                .zip(&program.params)
                .map(|(v, p)| limb_form(v, &p.ty))
                .collect();
            let outputs = eval(program, &inputs)?;
            Ok(outputs
                .into_iter()
                .zip(&types)
                .map(|(v, t)| big_form(v, t))
                .collect::<Vec<Value>>())
        })
        .collect::<std::result::Result<_, bigfuse_core::IrError>>()?;
    let mut columns: Vec<Vec<Value>> = types.iter().map(|_| Vec::with_capacity(n)).collect();
    for r in results {
        for (c, v) in columns.iter_mut().zip(r) {
            c.push(v);
        }
    }
    types
        .iter()
        .zip(columns)
        .map(|(t, vals)| Column::from_values(t, vals))
        .collect()
}

/// The runtime's layouts (from the reference-level types) must be the compiled program's: a
/// mismatch is a compiler bug, reported instead of moving the wrong bytes.
/// Refuses an even or zero modulus among the host values of the parameters the program uses as
/// the modulus of Montgomery arithmetic ([`Func::modulus_params`]), naming the first instance:
/// such a modulus has no Montgomery form. Values already on the device (batches) are not read
/// back for this: there the operation gives all ones, as for a modulus the kernel computes.
fn check_moduli(kernel: &str, spec: &Specialized, args: &[Arg]) -> Result<()> {
    for (k, op) in spec.concrete.modulus_params() {
        let (Some(p), Some(a)) = (spec.params.get(k), args.get(k)) else {
            continue;
        };
        let limbs = match p.elem {
            crate::column::Elem::Big(m) => m.max(1),
            _ => continue,
        };
        let even = match a {
            Arg::Big(values) => values.par_iter().position_first(|m| !m.bit(0)),
            Arg::U64(words) => words
                .par_chunks(limbs)
                .position_first(|m| m.first().is_none_or(|w| w & 1 == 0)),
            _ => None,
        };
        if let Some(i) = even {
            return Err(Error::Argument {
                kernel: kernel.into(),
                message: format!(
                    "`{}` of instance {i} is even or zero, but `{op}` needs an odd modulus (an \
                     even one has no Montgomery form): leave such instances out, or divide \
                     instead (`a.mul_wide(b) % m`)",
                    p.name
                ),
            });
        }
    }
    Ok(())
}

/// What serves a program's first calls on a GPU ([`Kernel::first_calls`]).
enum FirstCalls {
    /// The tuned kernel: its CUDA is short.
    Short,
    /// The tuned kernel: no compact form compiles clearly faster ([`crate::tiers::pays`]).
    NoCompactForm,
    /// This compact form, while the tuned kernel compiles.
    Compact(Hints, Box<Plan>),
}

/// The program in `cell`, loaded from `plan()` on first use. Only this cell's lock is held while
/// compiling (the map's is released in [`Kernel::slot`]), so that concurrent first calls with one
/// key wait for a single compilation while other keys compile in parallel.
fn load_once(
    cell: &Mutex<Option<Arc<GpuProgram>>>,
    gpu: &GpuDevice,
    plan: impl FnOnce() -> Result<Plan>,
) -> Result<Arc<GpuProgram>> {
    let mut program = cell.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = &*program {
        return Ok(p.clone());
    }
    let p = Arc::new(gpu.load_plan(plan()?)?);
    *program = Some(p.clone());
    Ok(p)
}

/// The length of a plan's CUDA, all its kernels together.
fn source_bytes(plan: &Plan) -> usize {
    plan.parts.iter().map(|p| p.compiled.source.len()).sum()
}

fn check_layouts(kernel: &str, spec: &Specialized, program: &GpuProgram) -> Result<()> {
    let same = |a: &[Slot], b: &[BufferLayout]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(s, l)| s.layout.units == l.units && s.layout.unit == l.unit)
    };
    if same(&spec.params, &program.inputs) && same(&spec.results, &program.outputs) {
        Ok(())
    } else {
        Err(Error::Argument {
            kernel: kernel.into(),
            message: format!(
                "internal: the compiled kernel's buffer layouts ({:?} -> {:?}) differ from the call's ({:?} -> {:?})",
                program.inputs.iter().map(|l| (l.units, l.unit)).collect::<Vec<_>>(),
                program.outputs.iter().map(|l| (l.units, l.unit)).collect::<Vec<_>>(),
                spec.params.iter().map(|s| (s.layout.units, s.layout.unit)).collect::<Vec<_>>(),
                spec.results.iter().map(|s| (s.layout.units, s.layout.unit)).collect::<Vec<_>>(),
            ),
        })
    }
}

/// A value of the reference level as the lowered level holds it (`ty` its lowered type): big
/// integers that are array elements become tuples of their limbs.
fn limb_form(v: Value, ty: &Type) -> Value {
    match (v, ty) {
        // A whole value of a program the `per_thread` pass made one map over one element.
        (v, Type::Array(e, n)) if !matches!(v, Value::Array(_)) && n.as_const() == Some(1) => {
            Value::Array(vec![limb_form(v, e)])
        }
        (Value::Big(x), Type::Tuple(ts)) => {
            let mut d = x.to_u64_digits();
            d.resize(ts.len(), 0);
            Value::Tuple(d.into_iter().map(Value::U64).collect())
        }
        (Value::Array(xs), Type::Array(e, _)) => {
            Value::Array(xs.into_iter().map(|x| limb_form(x, e)).collect())
        }
        (v, _) => v,
    }
}

/// The inverse of [`limb_form`] for a result of (reference-level) type `ty`.
fn big_form(v: Value, ty: &Type) -> Value {
    match (v, ty) {
        // The one element of a `per_thread` program's result.
        (Value::Array(mut xs), t) if !matches!(t, Type::Array(..)) && xs.len() == 1 => {
            match (xs.pop().expect("one element"), t) {
                (Value::Tuple(limbs), Type::Big(_)) => {
                    let words: Vec<u64> = limbs.iter().filter_map(Value::as_u64).collect();
                    Value::Big(bigfuse_core::eval::limbs_to_big(&words))
                }
                (x, _) => x,
            }
        }
        (Value::Array(xs), Type::Array(e, _)) if matches!(**e, Type::Big(_)) => Value::Array(
            xs.into_iter()
                .map(|x| match x {
                    Value::Tuple(limbs) if limbs.iter().all(|l| matches!(l, Value::U64(_))) => {
                        let words: Vec<u64> = limbs.iter().filter_map(Value::as_u64).collect();
                        Value::Big(bigfuse_core::eval::limbs_to_big(&words))
                    }
                    other => other,
                })
                .collect(),
        ),
        (v, _) => v,
    }
}

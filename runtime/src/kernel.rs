//! A kernel program with its per-size, per-device compiled forms.

use crate::column::{check_args, to_words, Arg, Column};
use crate::device::{CpuLevel, Device};
use crate::error::Result;
use crate::gpu::{GpuDevice, GpuProgram};
use bigfuse_codegen::{compile, compile_plan, lower, Compiled, Hints, Plan, Target};
use bigfuse_core::{eval, specialize, validate, Func, Type, Value};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a loaded kernel is cached by: sizes, schedule hints, GPU ordinal.
type LoadKey = (Vec<u64>, Hints, usize);

/// A kernel program. Compiled forms are cached per (sizes, schedule hints, GPU).
pub struct Kernel {
    func: Func,
    loaded: Mutex<HashMap<LoadKey, Arc<GpuProgram>>>,
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
/// bits from which products use the NTT), `BIGFUSE_MIN_BLOCKS` (blocks per SM in launch bounds).
/// Unparsable values are ignored.
pub fn env_hints() -> Hints {
    let read = |k: &str| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|v| *v > 0)
    };
    Hints {
        q: read("BIGFUSE_Q"),
        block_threads: read("BIGFUSE_BLOCK"),
        mul_width: read("BIGFUSE_MUL_WIDTH"),
        ntt_from_bits: read("BIGFUSE_NTT_FROM").map(u64::from),
        min_blocks: read("BIGFUSE_MIN_BLOCKS"),
        chunk_len: read("BIGFUSE_CHUNK").map(u64::from),
    }
}

impl Kernel {
    /// Wraps a program (validated here, so a malformed one is an error, not a later surprise).
    pub fn new(func: Func) -> Result<Kernel> {
        validate(&func)?;
        Ok(Kernel {
            func,
            loaded: Mutex::new(HashMap::new()),
        })
    }

    pub fn func(&self) -> &Func {
        &self.func
    }

    pub fn name(&self) -> &str {
        &self.func.name
    }

    /// Runs over a batch: one column per parameter, one value per instance in each. With
    /// `BIGFUSE_AUTOTUNE=1` the GPU schedule is tuned on the first call at each size (and cached
    /// on disk); otherwise it comes from the cost model and any `BIGFUSE_*` overrides.
    pub fn run(&self, dev: &Device, sizes: &[u64], args: &[Arg]) -> Result<Vec<Column>> {
        let hints = match dev {
            Device::Gpu(g) if autotune_enabled() => self.autotune(g, sizes)?.hints,
            _ => env_hints(),
        };
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
        let concrete = specialize(&self.func, sizes)?;
        let params: Vec<(String, Type)> = concrete
            .params
            .iter()
            .map(|p| (p.name.clone(), p.ty.clone()))
            .collect();
        let n = check_args(&self.func.name, &params, args)?;
        match dev {
            Device::Cpu(c) => run_cpu(&concrete, c.level, args, n),
            Device::Gpu(g) => {
                let program = self.prepare_with(g, sizes, hints)?;
                run_gpu(g, &program, &concrete, args, n)
            }
        }
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

    pub fn prepare_with(
        &self,
        gpu: &GpuDevice,
        sizes: &[u64],
        hints: &Hints,
    ) -> Result<Arc<GpuProgram>> {
        let key = (sizes.to_vec(), hints.clone(), gpu.ordinal());
        if let Some(k) = self
            .loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(k.clone());
        }
        let plan = self.plan(sizes, gpu.target(), hints)?;
        let k = Arc::new(gpu.load_plan(plan)?);
        self.loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, k.clone());
        Ok(k)
    }

    /// Every pass's output and decision for these sizes; on a GPU also the compiled kernel's
    /// registers, shared memory and spills as the driver reports them.
    pub fn explain(&self, dev: &Device, sizes: &[u64]) -> Result<String> {
        match dev {
            Device::Gpu(g) => {
                let program = self.prepare(g, sizes)?;
                let mut s = program.plan.explain();
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
                }
                Ok(s)
            }
            Device::Cpu(_) => {
                let target = Target::h100();
                let plan = self.plan(sizes, &target, &env_hints())?;
                Ok(format!(
                    "(CPU backend: the evaluator runs the program; this is the plan for a {})\n{}",
                    target.name,
                    plan.explain()
                ))
            }
        }
    }
}

/// Instances of a call whose operators are sampled (debug builds), and triples per operator.
const LAW_SAMPLED_INSTANCES: usize = 2;
const LAW_SAMPLES: usize = 64;

fn run_cpu(concrete: &Func, level: CpuLevel, args: &[Arg], n: usize) -> Result<Vec<Column>> {
    let program = match level {
        CpuLevel::Reference => concrete.clone(),
        CpuLevel::Lowered => lower(concrete)?,
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
            let outputs = eval(&program, &inputs)?;
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

/// A value of the reference level as the lowered level holds it (`ty` its lowered type): big
/// integers that are array elements become tuples of their limbs.
fn limb_form(v: Value, ty: &Type) -> Value {
    match (v, ty) {
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

fn run_gpu(
    g: &GpuDevice,
    program: &GpuProgram,
    concrete: &Func,
    args: &[Arg],
    n: usize,
) -> Result<Vec<Column>> {
    let result_types = concrete.output_types();
    if n == 0 {
        return Ok(result_types
            .iter()
            .map(|t| Column::from_words(t, &[], 0))
            .collect());
    }
    let mut inputs = Vec::with_capacity(args.len());
    for (a, p) in args.iter().zip(&concrete.params) {
        bigfuse_codegen::emit::layout_of(&p.name, &p.ty)?;
        let words = crate::column::words_per_value(&p.ty);
        inputs.push(g.upload(&to_words(a, words), &format!("argument `{}`", p.name))?);
    }
    let mut outputs = Vec::with_capacity(result_types.len());
    for (k, w) in program.result_words().iter().enumerate() {
        outputs.push(g.alloc(n * *w as usize, &format!("result {k}"))?);
    }
    let refs: Vec<_> = inputs.iter().collect();
    program.launch(g, n as u64, &refs, &mut outputs)?;
    let mut cols = Vec::with_capacity(outputs.len());
    for (k, (buf, t)) in outputs.iter().zip(&result_types).enumerate() {
        let words = g.download(buf, &format!("result {k}"))?;
        cols.push(Column::from_words(t, &words, n));
    }
    Ok(cols)
}

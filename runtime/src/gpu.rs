//! The GPU backend: a CUDA context and stream, kernel loading, transfers and launches.

use crate::error::{Error, Result};
use bigfuse_codegen::{Compiled, Target};
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;

/// One GPU, with the stream every bigfuse call on it uses.
pub struct GpuDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    target: Target,
    ordinal: usize,
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuDevice({}: {})", self.ordinal, self.target.name)
    }
}

/// Whether the CUDA driver library can be loaded.
pub fn driver_available() -> bool {
    // SAFETY: only tries to dlopen the library.
    std::panic::catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false)
}

fn guarded<T>(
    during: &str,
    f: impl FnOnce() -> std::result::Result<T, cudarc::driver::DriverError>,
) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            let text = format!("{e:?}");
            if text.contains("OUT_OF_MEMORY") {
                Err(Error::OutOfMemory {
                    what: during.into(),
                    bytes: 0,
                })
            } else {
                Err(Error::driver(during, e))
            }
        }
        Err(_) => Err(Error::NoDriver),
    }
}

impl GpuDevice {
    /// Opens GPU `ordinal`. Errors (never panics) when there is no driver or no such GPU.
    pub fn new(ordinal: usize) -> Result<GpuDevice> {
        if !driver_available() {
            return Err(Error::NoDriver);
        }
        let count = guarded("counting GPUs", CudaContext::device_count).map_err(|e| match e {
            Error::Driver { message, .. } => {
                Error::NoGpu(format!("the CUDA driver found no usable GPU ({message})"))
            }
            other => other,
        })?;
        if count <= 0 {
            return Err(Error::NoGpu("the CUDA driver reports no GPU".into()));
        }
        if ordinal >= count as usize {
            return Err(Error::NoGpu(format!(
                "GPU {ordinal} asked for, but there are only {count}"
            )));
        }
        let ctx = guarded("creating a CUDA context", || CudaContext::new(ordinal))?;
        // One stream, ordered: the per-buffer event tracking cudarc does for multi-stream use only
        // adds work to every launch.
        // SAFETY: bigfuse uses a single stream per context, so no cross-stream ordering is needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let attr = |a: Attr| {
            guarded("reading device attributes", || ctx.attribute(a)).map(|v| v.max(0) as u32)
        };
        let (major, minor) = guarded("reading the compute capability", || {
            ctx.compute_capability()
        })?;
        let name = guarded("reading the device name", || ctx.name())?;
        let target = Target {
            name,
            arch: (major as u32, minor as u32),
            sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            // Kernels take dynamic shared memory and opt in to the larger limit when they need it.
            max_shared_per_block: attr(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            shared_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
            regs_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
            max_regs_per_thread: 255,
        };
        Ok(GpuDevice {
            ctx,
            stream,
            target,
            ordinal,
        })
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Copies words to a new device buffer (at least one word, so that empty batches work too).
    pub fn upload(&self, words: &[u64], what: &str) -> Result<CudaSlice<u64>> {
        if words.is_empty() {
            return self.alloc(1, what);
        }
        guarded(&format!("uploading {what}"), || {
            self.stream.clone_htod(words)
        })
        .map_err(|e| oom(e, what, words.len()))
    }

    /// A zeroed device buffer of `len` words (at least one).
    pub fn alloc(&self, len: usize, what: &str) -> Result<CudaSlice<u64>> {
        let len = len.max(1);
        guarded(&format!("allocating {what}"), || {
            self.stream.alloc_zeros::<u64>(len)
        })
        .map_err(|e| oom(e, what, len))
    }

    /// Copies a device buffer back.
    pub fn download(&self, buf: &CudaSlice<u64>, what: &str) -> Result<Vec<u64>> {
        guarded(&format!("downloading {what}"), || {
            self.stream.clone_dtoh(buf)
        })
    }

    pub fn synchronize(&self) -> Result<()> {
        guarded("waiting for the GPU", || self.stream.synchronize())
    }

    /// Compiles (or takes from the cache) and loads a kernel.
    pub fn load(&self, compiled: Compiled) -> Result<GpuKernel> {
        let arch = self.target.sm();
        let ptx = crate::nvrtc::compile(&compiled.source, &compiled.kernel_name, &arch)?;
        let module = match self.load_ptx(&ptx) {
            Ok(m) => m,
            Err(_) => {
                // A cached PTX the driver refuses is stale: compile afresh once.
                crate::nvrtc::forget(&compiled.source, &arch);
                let ptx =
                    crate::nvrtc::compile_uncached(&compiled.source, &compiled.kernel_name, &arch)?;
                self.load_ptx(&ptx)?
            }
        };
        let function = guarded("finding the kernel in its module", || {
            module.load_function(&compiled.kernel_name)
        })?;
        let shared = compiled.placement.shared_bytes;
        if shared > self.target.max_shared_per_block {
            return Err(bigfuse_codegen::CodegenError::TooBig(format!(
                "kernel `{}` needs {shared} bytes of shared memory per block; this GPU allows {}",
                compiled.kernel_name, self.target.max_shared_per_block
            ))
            .into());
        }
        if shared > 48 * 1024 {
            // Above 48 KiB a kernel must opt in to its dynamic shared memory.
            guarded("allowing the kernel its shared memory", || {
                function.set_attribute(
                    cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )
            })?;
        }
        let resources = Resources {
            registers: guarded("reading kernel attributes", || function.num_regs())?.max(0) as u32,
            shared_bytes: guarded("reading kernel attributes", || function.shared_size_bytes())?
                .max(0) as u32,
            local_bytes: guarded("reading kernel attributes", || function.local_size_bytes())?
                .max(0) as u32,
            max_threads: guarded("reading kernel attributes", || {
                function.max_threads_per_block()
            })?
            .max(0) as u32,
        };
        if resources.max_threads < compiled.schedule.block_threads {
            return Err(bigfuse_codegen::CodegenError::TooBig(format!(
                "kernel `{}` compiled to {} registers per thread, which allows at most {} threads per block; \
                 the schedule needs {}",
                compiled.kernel_name, resources.registers, resources.max_threads, compiled.schedule.block_threads
            ))
            .into());
        }
        let mut tables = Vec::with_capacity(compiled.tables.len());
        for t in &compiled.tables {
            let buf = guarded("uploading a constant table", || self.stream.clone_htod(t))
                .map_err(|e| oom(e, "a constant table", t.len() / 2))?;
            tables.push(buf);
        }
        Ok(GpuKernel {
            compiled,
            tables,
            _module: module,
            function,
            resources,
        })
    }

    fn load_ptx(&self, ptx: &str) -> Result<Arc<CudaModule>> {
        let ptx = cudarc::nvrtc::Ptx::from_src(ptx.to_string());
        guarded("loading a compiled module", || self.ctx.load_module(ptx))
    }

    /// A timing event.
    pub fn event(&self) -> Result<cudarc::driver::CudaEvent> {
        guarded("creating an event", || {
            self.ctx
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
        })
    }
}

fn oom(e: Error, what: &str, words: usize) -> Error {
    match e {
        Error::OutOfMemory { .. } => Error::OutOfMemory {
            what: what.into(),
            bytes: words * 8,
        },
        other => other,
    }
}

/// What the compiled kernel takes from the chip, as the driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resources {
    pub registers: u32,
    pub shared_bytes: u32,
    /// Local memory per thread: non-zero means spills (or an array the compiler could not keep in
    /// registers).
    pub local_bytes: u32,
    pub max_threads: u32,
}

/// A kernel loaded on a GPU.
pub struct GpuKernel {
    pub compiled: Compiled,
    /// Constant tables (NTT twiddles) on the device, passed after the outputs.
    tables: Vec<CudaSlice<u32>>,
    _module: Arc<CudaModule>,
    function: CudaFunction,
    pub resources: Resources,
}

impl GpuKernel {
    /// Launches over `n` instances. `inputs` and `outputs` follow the kernel's layouts; the caller
    /// sized them (see [`Compiled::inputs`], [`Compiled::outputs`]).
    pub fn launch(
        &self,
        dev: &GpuDevice,
        n: u64,
        inputs: &[&CudaSlice<u64>],
        outputs: &mut [CudaSlice<u64>],
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let c = &self.compiled;
        if inputs.len() != c.inputs.len() || outputs.len() != c.outputs.len() {
            return Err(Error::Argument {
                kernel: c.kernel_name.clone(),
                message: format!(
                    "the kernel takes {} input and {} output buffer(s), {} and {} were given",
                    c.inputs.len(),
                    c.outputs.len(),
                    inputs.len(),
                    outputs.len()
                ),
            });
        }
        for (buf, l) in inputs.iter().zip(&c.inputs) {
            check_len(c, &l.name, buf.len(), l.words, n)?;
        }
        for (buf, l) in outputs.iter().zip(&c.outputs) {
            check_len(c, &l.name, buf.len(), l.words, n)?;
        }
        let grid = c.grid_for(n);
        if grid > i32::MAX as u64 {
            return Err(Error::Argument {
                kernel: c.kernel_name.clone(),
                message: format!(
                    "{n} instances need {grid} blocks, more than a grid holds: split the batch"
                ),
            });
        }
        let cfg = LaunchConfig {
            grid_dim: (grid as u32, 1, 1),
            block_dim: (c.schedule.block_threads, 1, 1),
            shared_mem_bytes: c.placement.shared_bytes,
        };
        let mut b = dev.stream.launch_builder(&self.function);
        for i in inputs {
            b.arg(*i);
        }
        for o in outputs.iter_mut() {
            b.arg(o);
        }
        for t in &self.tables {
            b.arg(t);
        }
        b.arg(&n);
        // SAFETY: the argument list matches the emitted signature (inputs, outputs, n), and every
        // buffer holds n instances of its layout (checked above).
        guarded("launching a kernel", || {
            unsafe { b.launch(cfg) }.map(|_| ())
        })
    }
}

fn check_len(c: &Compiled, name: &str, len: usize, words: u64, n: u64) -> Result<()> {
    if (len as u64) < n * words {
        return Err(Error::Argument {
            kernel: c.kernel_name.clone(),
            message: format!(
                "buffer `{name}` holds {len} words; {n} instances need {}",
                n * words
            ),
        });
    }
    Ok(())
}

/// A plan loaded on a GPU: one kernel, or several with intermediates between them.
pub struct GpuProgram {
    pub plan: bigfuse_codegen::Plan,
    pub parts: Vec<GpuKernel>,
}

impl GpuDevice {
    /// Compiles (or takes from the cache) and loads every kernel of a plan.
    pub fn load_plan(&self, plan: bigfuse_codegen::Plan) -> Result<GpuProgram> {
        let parts = plan
            .parts
            .iter()
            .map(|p| self.load(p.compiled.clone()))
            .collect::<Result<Vec<_>>>()?;
        Ok(GpuProgram { plan, parts })
    }
}

impl GpuProgram {
    /// The kernel, when the plan is a single one.
    pub fn single(&self) -> Option<&GpuKernel> {
        (self.parts.len() == 1).then(|| &self.parts[0])
    }

    /// Words per instance of each result.
    pub fn result_words(&self) -> Vec<u64> {
        match self.single() {
            Some(k) => k.compiled.outputs.iter().map(|o| o.words).collect(),
            None => self
                .plan
                .results
                .iter()
                .map(|b| words_of(&self.plan.buffers[*b]))
                .collect(),
        }
    }

    /// Launches every kernel over `n` instances (a part with `instances` = C, the chunk kernel of a
    /// chunked reduction, over `n * C`): `inputs` are the program's arguments, `outputs` its results
    /// (sized by [`GpuProgram::result_words`]). Intermediates of a split plan live in temporary
    /// buffers, sized by their types per instance, for the duration of the call.
    pub fn launch(
        &self,
        dev: &GpuDevice,
        n: u64,
        inputs: &[&CudaSlice<u64>],
        outputs: &mut [CudaSlice<u64>],
    ) -> Result<()> {
        if let Some(k) = self.single() {
            return k.launch(dev, n, inputs, outputs);
        }
        if n == 0 {
            return Ok(());
        }
        let mut temps: Vec<Option<CudaSlice<u64>>> = Vec::with_capacity(self.plan.buffers.len());
        for (i, t) in self.plan.buffers.iter().enumerate() {
            let words = words_of(t) as usize * n as usize;
            temps.push(Some(dev.alloc(words, &format!("intermediate {i}"))?));
        }
        for (part, kernel) in self.plan.parts.iter().zip(&self.parts) {
            let mut outs: Vec<CudaSlice<u64>> = part
                .outputs
                .iter()
                .map(|b| {
                    temps[*b]
                        .take()
                        .expect("each buffer is written by one part")
                })
                .collect();
            {
                let ins: Vec<&CudaSlice<u64>> = part
                    .inputs
                    .iter()
                    .map(|s| match s {
                        bigfuse_codegen::Source::Arg(i) => inputs[*i],
                        bigfuse_codegen::Source::Buffer(b) => temps[*b]
                            .as_ref()
                            .expect("inputs are written before they are read"),
                    })
                    .collect();
                let virtual_n = n
                    .checked_mul(part.instances)
                    .ok_or_else(|| Error::Argument {
                        kernel: kernel.compiled.kernel_name.clone(),
                        message: format!(
                            "{n} instances of {} chunks each are too many: split the batch",
                            part.instances
                        ),
                    })?;
                kernel.launch(dev, virtual_n, &ins, &mut outs)?;
            }
            for (b, buf) in part.outputs.iter().zip(outs) {
                temps[*b] = Some(buf);
            }
        }
        for (k, b) in self.plan.results.iter().enumerate() {
            let src = temps[*b].as_ref().expect("every result has a buffer");
            let words = words_of(&self.plan.buffers[*b]) as usize * n as usize;
            guarded("copying a result", || {
                dev.stream
                    .memcpy_dtod(&src.slice(0..words), &mut outputs[k].slice_mut(0..words))
            })?;
        }
        Ok(())
    }
}

fn words_of(t: &bigfuse_core::Type) -> u64 {
    bigfuse_codegen::emit::layout_of("", t).map_or(1, |l| l.words)
}

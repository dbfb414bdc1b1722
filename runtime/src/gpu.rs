//! The GPU backend: a CUDA context with its streams and memory pools, kernel loading, transfers
//! and launches.
//!
//! Streams: `main` carries kernels and the transfers of device-resident batches, in order; `up`
//! and `down` carry the uploads and downloads of pipelined calls (`call.rs`), which order
//! themselves against `main` with events. All three are non-blocking streams, so nothing waits on
//! the legacy default stream.

use crate::device::MemoryUsage;
pub use crate::device::Resources;
use crate::error::{Error, Result};
use crate::memory::{DeviceBuffer, DevicePool, PinnedPool};
use bigfuse_codegen::{BufferLayout, Compiled, Target};
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream};
use std::sync::{Arc, Mutex};

/// One GPU, with its streams and memory pools: what [`Device::Gpu`](crate::Device::Gpu) holds,
/// shared (`Arc`) by every thread and batch that uses it. See [`Device`](crate::Device) for what
/// calls from several threads at once guarantee.
pub struct GpuDevice {
    ctx: Arc<CudaContext>,
    main: Arc<CudaStream>,
    up: Arc<CudaStream>,
    down: Arc<CudaStream>,
    target: Target,
    ordinal: usize,
    driver: (i32, i32),
    pub(crate) memory: Arc<DevicePool>,
    pub(crate) pinned: Arc<PinnedPool>,
    events: Mutex<Vec<CudaEvent>>,
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

/// The CUDA version the driver supports, e.g. (12, 4), when there is a driver.
pub fn driver_version() -> Option<(i32, i32)> {
    if !driver_available() {
        return None;
    }
    let mut v = 0;
    // SAFETY: the library is present (checked above); the call writes one int and needs no
    // cuInit.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
        cudarc::driver::sys::cuDriverGetVersion(&mut v)
    }))
    .ok()?;
    (r == cudarc::driver::sys::CUresult::CUDA_SUCCESS && v > 0).then_some((v / 1000, v % 1000 / 10))
}

/// Runs a driver call, turning a panic of cudarc's dynamic loading into [`Error::NoDriver`] and a
/// failure into [`Error::OutOfMemory`] or [`Error::Cuda`] by its result code (kept as the source).
pub(crate) fn guarded<T>(
    during: &str,
    f: impl FnOnce() -> std::result::Result<T, cudarc::driver::DriverError>,
) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Error::cuda(during, e)),
        Err(_) => Err(Error::NoDriver),
    }
}

impl GpuDevice {
    /// How many GPUs the driver reports: 0 without a driver (or one older than CUDA 12.0, which
    /// bigfuse cannot use) or without a usable GPU.
    pub fn count() -> usize {
        match driver_version() {
            Some(v) if v >= (12, 0) => {
                guarded("counting GPUs", CudaContext::device_count).map_or(0, |c| c.max(0) as usize)
            }
            _ => 0,
        }
    }

    /// Opens GPU `ordinal`. Errors (never panics) when there is no driver or no such GPU.
    pub fn new(ordinal: usize) -> Result<GpuDevice> {
        let Some(driver) = driver_version() else {
            return Err(Error::NoDriver);
        };
        // The bindings are those of the CUDA 12.0 driver API, which every later driver keeps.
        if driver < (12, 0) {
            return Err(Error::OldDriver {
                major: driver.0,
                minor: driver.1,
            });
        }
        let count = guarded("counting GPUs", CudaContext::device_count).map_err(|e| match e {
            // E.g. CUDA_ERROR_NO_DEVICE from cuInit: the driver is there, but no GPU it can use.
            Error::Cuda { source, .. } => {
                Error::NoGpu(format!("the CUDA driver found no usable GPU ({source})"))
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
        // bigfuse orders its streams itself with events (see `call.rs`); cudarc's per-buffer
        // tracking would only add work to every launch.
        // SAFETY: no cudarc-managed buffer is shared between streams without an event.
        unsafe { ctx.disable_event_tracking() };
        let stream = || guarded("creating a stream", || ctx.new_stream());
        let (main, up, down) = (stream()?, stream()?, stream()?);
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
        let total = guarded("reading the memory size", || ctx.total_mem())?;
        // Launches whose instances span blocks take their scratch from the stream-ordered
        // allocator's default pool; by default it hands freed memory back to the driver at every
        // synchronisation, and the next launch maps it again. Keep up to 64 MiB.
        guarded("configuring the stream-ordered allocator", || unsafe {
            use cudarc::driver::sys;
            let mut pool = std::mem::MaybeUninit::uninit();
            sys::cuDeviceGetDefaultMemPool(pool.as_mut_ptr(), ctx.cu_device()).result()?;
            let mut keep: u64 = 64 << 20;
            sys::cuMemPoolSetAttribute(
                pool.assume_init(),
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut keep as *mut u64 as *mut std::ffi::c_void,
            )
            .result()
        })?;
        Ok(GpuDevice {
            memory: DevicePool::new(ctx.clone(), total),
            pinned: PinnedPool::new(ctx.clone()),
            ctx,
            main,
            up,
            down,
            target,
            ordinal,
            driver,
            events: Mutex::new(Vec::new()),
        })
    }

    /// The CUDA version the driver supports, e.g. (13, 0).
    pub fn driver_version(&self) -> (i32, i32) {
        self.driver
    }

    /// What the compiler schedules kernels for: this GPU's name, architecture and limits.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The CUDA ordinal of this GPU (0 for the first).
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The CUDA context (the device's primary context), for callers that use cudarc directly
    /// next to bigfuse.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// What bigfuse holds of memory on this device now, by its pools' own counts (exact, and
    /// blind to other users of the GPU); read it when no call is in progress for a stable figure.
    pub fn memory_usage(&self) -> MemoryUsage {
        let (device_in_use, device_pooled) = self.memory.usage();
        let (pinned_in_use, pinned_pooled) = self.pinned.usage();
        MemoryUsage {
            device_in_use,
            device_pooled,
            pinned_in_use,
            pinned_pooled,
        }
    }

    /// Frees the memory the pools keep for reuse (device memory and pinned host memory), for
    /// other users of the GPU or of the host; buffers in use are untouched. The next calls
    /// allocate afresh what they need. A failure of the driver to free device memory is
    /// returned (after every buffer was tried).
    pub fn release_pooled_memory(&self) -> Result<()> {
        self.pinned.trim();
        self.memory
            .trim()
            .map_err(|e| Error::cuda("freeing pooled device memory", e))
    }

    /// Free and total device memory as the driver reports it (`cuMemGetInfo`): the whole GPU's,
    /// every process and library included.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.bind()?;
        guarded("reading the free memory", result::mem_get_info)
    }

    /// The stream that kernels and batch transfers run on (time them with events on it).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.main
    }

    pub(crate) fn up(&self) -> &Arc<CudaStream> {
        &self.up
    }

    pub(crate) fn down(&self) -> &Arc<CudaStream> {
        &self.down
    }

    pub(crate) fn bind(&self) -> Result<()> {
        guarded("binding the CUDA context", || self.ctx.bind_to_thread())
    }

    /// Device memory for `bytes` bytes from the pool (contents undefined).
    pub fn alloc_bytes(&self, bytes: usize, what: &str) -> Result<DeviceBuffer> {
        self.memory.alloc(bytes, what)
    }

    /// A zeroed device buffer of `len` 64-bit words.
    pub fn alloc(&self, len: usize, what: &str) -> Result<DeviceBuffer> {
        let buf = self.alloc_bytes(len * 8, what)?;
        if len > 0 {
            self.bind()?;
            // SAFETY: the buffer holds `len * 8` bytes; the memset is ordered on `main`.
            guarded(&format!("zeroing {what}"), || unsafe {
                result::memset_d8_async(buf.ptr(), 0, len * 8, self.main.cu_stream())
            })?;
        }
        Ok(buf)
    }

    /// Copies plain values (`u64`, `u32`, `u8`) to a new device buffer; returns when the copy is
    /// done.
    pub fn upload<T: Copy>(&self, values: &[T], what: &str) -> Result<DeviceBuffer> {
        let bytes = std::mem::size_of_val(values);
        let buf = self.alloc_bytes(bytes, what)?;
        if bytes > 0 {
            self.bind()?;
            // SAFETY: the buffer holds `bytes` bytes; the source outlives the synchronous copy.
            guarded(&format!("uploading {what}"), || unsafe {
                result::memcpy_htod_async(buf.ptr(), values, self.main.cu_stream())?;
                result::stream::synchronize(self.main.cu_stream())
            })?;
        }
        Ok(buf)
    }

    /// Copies a device buffer's 64-bit words back (after the work queued before it).
    pub fn download(&self, buf: &DeviceBuffer, what: &str) -> Result<Vec<u64>> {
        let mut out = vec![0u64; buf.len()];
        self.download_into(buf, &mut out, what)?;
        Ok(out)
    }

    /// Copies the first `dst.len()` values of a device buffer into `dst`.
    pub fn download_into<T: Copy>(
        &self,
        buf: &DeviceBuffer,
        dst: &mut [T],
        what: &str,
    ) -> Result<()> {
        let bytes = std::mem::size_of_val(dst);
        if bytes > buf.bytes() {
            return Err(Error::Argument {
                kernel: String::new(),
                message: format!(
                    "{what}: {bytes} bytes asked for from a buffer of {}",
                    buf.bytes()
                ),
            });
        }
        if bytes == 0 {
            return self.synchronize();
        }
        self.bind()?;
        // SAFETY: `dst` holds `bytes` bytes and outlives the synchronous copy.
        guarded(&format!("downloading {what}"), || unsafe {
            result::memcpy_dtoh_async(dst, buf.ptr(), self.main.cu_stream())?;
            result::stream::synchronize(self.main.cu_stream())
        })
    }

    /// Copies `bytes` bytes from `src` to `dst` on the device (ordered on the main stream).
    pub fn copy(&self, src: &DeviceBuffer, dst: &mut DeviceBuffer, bytes: usize) -> Result<()> {
        if bytes > src.bytes() || bytes > dst.bytes() {
            return Err(Error::Argument {
                kernel: String::new(),
                message: format!(
                    "a copy of {bytes} bytes between buffers of {} and {} bytes",
                    src.bytes(),
                    dst.bytes()
                ),
            });
        }
        self.bind()?;
        // SAFETY: both buffers hold at least `bytes` bytes (checked above).
        guarded("copying on the device", || unsafe {
            result::memcpy_dtod_async(dst.ptr(), src.ptr(), bytes, self.main.cu_stream())
        })
    }

    /// Waits for everything queued on the device by bigfuse.
    pub fn synchronize(&self) -> Result<()> {
        guarded("waiting for the GPU", || {
            self.main.synchronize()?;
            self.up.synchronize()?;
            self.down.synchronize()
        })
    }

    /// A timing event.
    pub fn event(&self) -> Result<CudaEvent> {
        guarded("creating an event", || {
            self.ctx
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
        })
    }

    /// An event for ordering (no timing), from a small pool.
    pub(crate) fn sync_event(&self) -> Result<CudaEvent> {
        if let Some(e) = self.events.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(e);
        }
        guarded("creating an event", || self.ctx.new_event(None))
    }

    /// Returns ordering events to the pool (they may still be pending: nothing waits on them
    /// again before they are re-recorded).
    pub(crate) fn recycle_events(&self, events: impl IntoIterator<Item = CudaEvent>) {
        let mut pool = self.events.lock().unwrap_or_else(|p| p.into_inner());
        for e in events {
            if pool.len() < 64 {
                pool.push(e);
            }
        }
    }

    /// Compiles (or takes from the cache) and loads a kernel.
    pub fn load(&self, compiled: Compiled) -> Result<GpuKernel> {
        let nvrtc = crate::nvrtc::library()?;
        if nvrtc.version().0 > self.driver.0 {
            // Minor versions are compatible within a major version; CUBIN of a newer major is not.
            return Err(Error::NoNvrtc(format!(
                "{} makes code for CUDA {} drivers, but this machine's driver supports CUDA {}.{}: \
                 update the driver, or use NVRTC {} (see below)",
                nvrtc.describe(),
                nvrtc.version().0,
                self.driver.0,
                self.driver.1,
                self.driver.0
            )));
        }
        let shared = compiled.placement.shared_bytes;
        if shared > self.target.max_shared_per_block {
            return Err(bigfuse_codegen::CodegenError::TooBig(format!(
                "kernel `{}` needs {shared} bytes of shared memory per block; this GPU allows {}",
                compiled.kernel_name, self.target.max_shared_per_block
            ))
            .into());
        }
        let mut compiled = compiled;
        let mut form_why = None;
        let mut form = self.load_form(&compiled.source, &compiled.kernel_name, shared)?;
        let held_local = form.resources.local_bytes;
        // The other form compiles only where this one spills.
        if let (true, Some(second)) = (held_local > 0, compiled.spill_free.take()) {
            let reads = second.reads();
            let second_shared = second.placement.shared_bytes;
            match self.load_form(&second.source, &compiled.kernel_name, second_shared) {
                Ok(other) if other.resources.local_bytes < held_local => {
                    form_why = Some(format!(
                        "{reads}: held in registers, they spilled ({held_local} bytes of local memory a thread; {} now)",
                        other.resources.local_bytes
                    ));
                    form = other;
                    compiled.source = second.source;
                    compiled.schedule = second.schedule;
                    compiled.placement = second.placement;
                }
                Ok(other) => form_why = Some(format!(
                    "held in registers: the kernel spills {held_local} bytes a thread, and as many or more ({}) with {reads}",
                    other.resources.local_bytes
                )),
                // The held form works: a failure of the other is reported, not raised.
                Err(e) => form_why = Some(format!(
                    "held in registers: the kernel spills {held_local} bytes a thread; the form with {reads} failed: {e}"
                )),
            }
        }
        let Form {
            module,
            function,
            resources,
        } = form;
        if resources.max_threads < compiled.schedule.block_threads {
            return Err(bigfuse_codegen::CodegenError::TooBig(format!(
                "kernel `{}` compiled to {} registers per thread, which allows at most {} threads per block; \
                 the schedule needs {}",
                compiled.kernel_name, resources.registers, resources.max_threads, compiled.schedule.block_threads
            ))
            .into());
        }
        let blocks_per_sm = guarded("reading the kernel's occupancy", || {
            function.occupancy_max_active_blocks_per_multiprocessor(
                compiled.schedule.block_threads,
                compiled.placement.shared_bytes as usize,
                None,
            )
        })?
        .max(1) as u32;
        let mut tables = Vec::with_capacity(compiled.tables.len());
        for t in &compiled.tables {
            tables.push(self.upload(t, "a constant table")?);
        }
        Ok(GpuKernel {
            form: form_why,
            compiled,
            tables,
            _module: module,
            function,
            resources,
            blocks_per_sm,
            resident_blocks: blocks_per_sm as u64 * self.target.sm_count as u64,
        })
    }

    /// Compiles (or takes from the cache) and loads one form of a kernel's CUDA, with the
    /// resources the driver gives its function.
    fn load_form(&self, source: &str, name: &str, shared: u32) -> Result<Form> {
        let arch = self.target.sm();
        let binary = crate::nvrtc::compile(source, name, &arch)?;
        let module = match self.load_binary(&binary) {
            Ok(m) => m,
            Err(_) => {
                // A cached binary the driver refuses is stale: compile afresh once.
                crate::nvrtc::forget(source, &arch);
                let binary = crate::nvrtc::compile_uncached(source, name, &arch)?;
                self.load_binary(&binary)?
            }
        };
        let function = guarded("finding the kernel in its module", || {
            module.load_function(name)
        })?;
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
        Ok(Form {
            module,
            function,
            resources,
        })
    }

    fn load_binary(&self, binary: &[u8]) -> Result<Arc<CudaModule>> {
        let image = cudarc::nvrtc::Ptx::from_binary(binary.to_vec());
        guarded("loading a compiled module", || self.ctx.load_module(image))
    }
}

/// One form of a kernel's CUDA, loaded.
struct Form {
    module: Arc<CudaModule>,
    function: CudaFunction,
    resources: Resources,
}

/// A kernel loaded on a GPU.
pub struct GpuKernel {
    /// The compiler's output: source, schedule, layouts.
    pub compiled: Compiled,
    /// Constant tables (NTT twiddles) on the device, passed after the outputs.
    tables: Vec<DeviceBuffer>,
    _module: Arc<CudaModule>,
    function: CudaFunction,
    /// Registers, shared and local memory of the compiled kernel, as the driver reports them.
    pub resources: Resources,
    /// Where the held form spilled, which form was loaded and why ([`Compiled::spill_free`]).
    pub form: Option<String>,
    /// Blocks of this kernel one SM runs at once.
    pub blocks_per_sm: u32,
    /// Blocks of this kernel the whole GPU runs at once: a launch's staging slots.
    resident_blocks: u64,
}

fn check_len(c: &Compiled, l: &BufferLayout, bytes: usize, n: u64) -> Result<()> {
    let need = n.saturating_mul(l.bytes());
    if (bytes as u64) < need {
        return Err(Error::Argument {
            kernel: c.kernel_name.clone(),
            message: format!(
                "buffer `{}` holds {bytes} bytes; {n} instances need {need}",
                l.name
            ),
        });
    }
    Ok(())
}

impl GpuKernel {
    /// Launches over `n` instances on the main stream. `inputs` and `outputs` follow the kernel's
    /// layouts ([`Compiled::inputs`], [`Compiled::outputs`]) and hold at least `n` instances.
    pub fn launch(
        &self,
        dev: &GpuDevice,
        n: u64,
        inputs: &[&DeviceBuffer],
        outputs: &mut [DeviceBuffer],
    ) -> Result<()> {
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
            check_len(c, l, buf.bytes(), n)?;
        }
        for (buf, l) in outputs.iter().zip(&c.outputs) {
            check_len(c, l, buf.bytes(), n)?;
        }
        let ptrs: Vec<CUdeviceptr> = inputs
            .iter()
            .map(|b| b.ptr())
            .chain(outputs.iter().map(|b| b.ptr()))
            .collect();
        dev.bind()?;
        // SAFETY: every buffer holds `n` instances of its layout (checked above).
        unsafe { self.launch_raw(&dev.main, n, &ptrs) }
    }

    /// Launches over `n` instances on `stream` with the buffers at `ptrs` (inputs, then outputs).
    ///
    /// # Safety
    /// Each pointer addresses at least `n` instances of its layout in this kernel's context, and
    /// the context is bound to the calling thread.
    pub(crate) unsafe fn launch_raw(
        &self,
        stream: &CudaStream,
        n: u64,
        ptrs: &[CUdeviceptr],
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let c = &self.compiled;
        let grid = c.grid_for(n);
        if grid > i32::MAX as u64 {
            return Err(Error::Argument {
                kernel: c.kernel_name.clone(),
                message: format!(
                    "{n} instances need {grid} blocks, more than a grid holds: split the batch"
                ),
            });
        }
        // A launch has a scratch of its own (bigfuse_codegen::Scratch), from the stream-ordered
        // allocator so that launches on other streams never share one, its cleared part zeroed
        // first: look-back records where instances span blocks, and staging slots for NTT
        // operands, one per block that runs at once.
        let slots = c.scratch.map_or(0, |s| s.slots(grid, self.resident_blocks));
        let scratch = match c.scratch {
            Some(s) => Some(guarded("allocating a launch's scratch", || unsafe {
                let ptr = result::malloc_async(stream.cu_stream(), s.bytes(grid, slots) as usize)?;
                let cleared = s.cleared_bytes(grid, slots) as usize;
                if cleared > 0 {
                    result::memset_d8_async(ptr, 0, cleared, stream.cu_stream())?;
                }
                Ok(ptr)
            })?),
            None => None,
        };
        // The kernel's parameters: buffers, tables, the scratch and its slots, then n, each a
        // 64-bit value.
        let mut values: Vec<u64> = Vec::with_capacity(ptrs.len() + self.tables.len() + 3);
        values.extend_from_slice(ptrs);
        values.extend(self.tables.iter().map(|t| t.ptr()));
        values.extend(scratch);
        if slots > 0 {
            values.push(slots);
        }
        values.push(n);
        let mut params: Vec<*mut std::ffi::c_void> = values
            .iter_mut()
            .map(|v| v as *mut u64 as *mut std::ffi::c_void)
            .collect();
        let launched = guarded("launching a kernel", || unsafe {
            result::launch_kernel(
                self.function.cu_function(),
                (grid as u32, 1, 1),
                (c.schedule.block_threads, 1, 1),
                c.placement.shared_bytes,
                stream.cu_stream(),
                &mut params,
            )
        });
        if let Some(ptr) = scratch {
            // Freed in stream order: after the kernel, whatever the host does meanwhile.
            guarded("freeing a launch's scratch", || unsafe {
                result::free_async(ptr, stream.cu_stream())
            })?;
        }
        launched
    }

    /// Instances one wave of this kernel covers on `target` (every SM full).
    pub fn instances_per_wave(&self, target: &Target) -> u64 {
        let s = &self.compiled.schedule;
        (self.blocks_per_sm as u64 * target.sm_count as u64 * s.instances_per_block as u64
            / s.blocks_per_instance as u64)
            .max(1)
    }
}

/// A plan loaded on a GPU: one kernel, or several with intermediates between them.
pub struct GpuProgram {
    /// The compiler's plan: its kernels and the buffers between them.
    pub plan: bigfuse_codegen::Plan,
    /// The plan's kernels, loaded, in launch order.
    pub parts: Vec<GpuKernel>,
    /// The layouts of the program's arguments.
    pub inputs: Vec<BufferLayout>,
    /// The layouts of the program's results.
    pub outputs: Vec<BufferLayout>,
    /// Where each intermediate buffer starts in a temporary arena, per instance of a chunk of
    /// `c` instances: buffer `b` at `c * temp_offsets[b]` (results have no temporary).
    temp_offsets: Vec<Option<u64>>,
    /// Bytes of intermediates per instance (the arena holds `c * temp_bytes` bytes, plus
    /// alignment).
    temp_bytes: u64,
}

/// Offsets inside arenas are multiples of this, so that 16-byte vector accesses stay aligned.
pub(crate) const ALIGN: u64 = 256;

pub(crate) fn align(x: u64) -> u64 {
    x.div_ceil(ALIGN) * ALIGN
}

impl GpuDevice {
    /// Compiles (or takes from the cache) and loads every kernel of a plan.
    pub fn load_plan(&self, plan: bigfuse_codegen::Plan) -> Result<GpuProgram> {
        let parts = plan
            .parts
            .iter()
            .map(|p| self.load(p.compiled.clone()))
            .collect::<Result<Vec<_>>>()?;
        GpuProgram::new(plan, parts)
    }
}

/// The address of an optional buffer (0 for none: nothing reads it).
pub(crate) fn ptr_of(buf: &Option<DeviceBuffer>) -> CUdeviceptr {
    buf.as_ref().map_or(0, DeviceBuffer::ptr)
}

fn layout(name: &str, t: &bigfuse_core::Type) -> Result<BufferLayout> {
    Ok(bigfuse_codegen::layout_of(name, t)?)
}

impl GpuProgram {
    pub(crate) fn new(plan: bigfuse_codegen::Plan, parts: Vec<GpuKernel>) -> Result<GpuProgram> {
        let (inputs, outputs) = if parts.len() == 1 {
            let c = &parts[0].compiled;
            (c.inputs.clone(), c.outputs.clone())
        } else {
            // The arguments' layouts are those of the parts that read them.
            let args = plan
                .parts
                .iter()
                .flat_map(|p| &p.inputs)
                .filter_map(|s| match s {
                    bigfuse_codegen::Source::Arg(a) => Some(*a),
                    _ => None,
                })
                .max()
                .map_or(0, |m| m + 1);
            let mut inputs: Vec<Option<BufferLayout>> = vec![None; args];
            for (part, k) in plan.parts.iter().zip(&parts) {
                for (s, l) in part.inputs.iter().zip(&k.compiled.inputs) {
                    if let bigfuse_codegen::Source::Arg(a) = s {
                        if inputs[*a].is_none() {
                            // A chunk kernel sees one chunk per virtual instance.
                            let mut l = l.clone();
                            l.units *= part.instances;
                            inputs[*a] = Some(l);
                        }
                    }
                }
            }
            let inputs = inputs
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    l.ok_or_else(|| Error::Argument {
                        kernel: plan.parts[0].compiled.kernel_name.clone(),
                        message: format!("internal: argument {i} is read by no kernel"),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let outputs = plan
                .results
                .iter()
                .enumerate()
                .map(|(k, b)| layout(&format!("result {k}"), &plan.buffers[*b]))
                .collect::<Result<Vec<_>>>()?;
            (inputs, outputs)
        };
        let mut temp_offsets = vec![None; plan.buffers.len()];
        let mut temp_bytes = 0;
        if parts.len() > 1 {
            for (b, t) in plan.buffers.iter().enumerate() {
                if !plan.results.contains(&b) {
                    temp_offsets[b] = Some(temp_bytes);
                    temp_bytes += align(layout("", t)?.bytes());
                }
            }
        }
        Ok(GpuProgram {
            plan,
            parts,
            inputs,
            outputs,
            temp_offsets,
            temp_bytes,
        })
    }

    /// The kernel, when the plan is a single one.
    pub fn single(&self) -> Option<&GpuKernel> {
        (self.parts.len() == 1).then(|| &self.parts[0])
    }

    /// 64-bit words per instance of each result (bytes / 8, rounded up).
    pub fn result_words(&self) -> Vec<u64> {
        self.outputs.iter().map(|l| l.bytes().div_ceil(8)).collect()
    }

    /// Bytes of temporary device memory a chunk of `c` instances needs (0 for one kernel).
    pub fn temp_bytes(&self, c: u64) -> u64 {
        self.temp_bytes * c
    }

    /// Instances one wave of the program's main kernel covers (the largest of its parts).
    pub fn instances_per_wave(&self, target: &Target) -> u64 {
        self.parts
            .iter()
            .map(|k| k.instances_per_wave(target))
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// Launches every kernel over `n` instances on the main stream: `inputs` are the program's
    /// arguments, `outputs` its results, each holding at least `n` instances of its layout.
    /// Intermediates of a split plan live in pooled temporary memory.
    pub fn launch(
        &self,
        dev: &GpuDevice,
        n: u64,
        inputs: &[&DeviceBuffer],
        outputs: &mut [DeviceBuffer],
    ) -> Result<()> {
        let name = &self.parts[0].compiled.kernel_name;
        let fits = |bufs: &mut dyn Iterator<Item = usize>, layouts: &[BufferLayout]| {
            let sizes: Vec<usize> = bufs.collect();
            if sizes.len() != layouts.len() {
                return Err(Error::Argument {
                    kernel: name.clone(),
                    message: format!(
                        "the program takes {} buffer(s) here, {} were given",
                        layouts.len(),
                        sizes.len()
                    ),
                });
            }
            for (b, l) in sizes.iter().zip(layouts) {
                check_len(&self.parts[0].compiled, l, *b, n)?;
            }
            Ok(())
        };
        fits(&mut inputs.iter().map(|b| b.bytes()), &self.inputs)?;
        fits(&mut outputs.iter().map(|b| b.bytes()), &self.outputs)?;
        if n == 0 {
            return Ok(());
        }
        let temps = self.alloc_temps(dev, n)?;
        let ins: Vec<CUdeviceptr> = inputs.iter().map(|b| b.ptr()).collect();
        let outs: Vec<CUdeviceptr> = outputs.iter().map(|b| b.ptr()).collect();
        dev.bind()?;
        // SAFETY: the buffers hold `n` instances (checked above); the temporaries `n` instances
        // of every intermediate. The temporary buffer goes back to the pool when this returns,
        // ordered before later work on the main stream.
        unsafe { self.launch_raw(dev, &dev.main, n, &ins, &outs, ptr_of(&temps)) }
    }

    /// Pooled memory for the intermediates of `n` instances (none for a single kernel).
    pub(crate) fn alloc_temps(&self, dev: &GpuDevice, n: u64) -> Result<Option<DeviceBuffer>> {
        match self.temp_bytes(n) {
            0 => Ok(None),
            bytes => dev.alloc_bytes(bytes as usize, "intermediates").map(Some),
        }
    }

    /// Launches every kernel over `n` instances on `stream`, with the arguments at `ins`, the
    /// results at `outs` and the intermediates in an arena at `temps` of at least
    /// [`GpuProgram::temp_bytes`]`(n)` bytes.
    ///
    /// # Safety
    /// Every pointer addresses at least `n` instances of its layout in this program's context,
    /// which is bound to the calling thread.
    pub(crate) unsafe fn launch_raw(
        &self,
        dev: &GpuDevice,
        stream: &CudaStream,
        n: u64,
        ins: &[CUdeviceptr],
        outs: &[CUdeviceptr],
        temps: CUdeviceptr,
    ) -> Result<()> {
        if let Some(k) = self.single() {
            let ptrs: Vec<CUdeviceptr> = ins.iter().chain(outs).copied().collect();
            return k.launch_raw(stream, n, &ptrs);
        }
        let _ = dev;
        let buffer = |b: usize| -> CUdeviceptr {
            match self.plan.results.iter().position(|r| *r == b) {
                Some(k) => outs[k],
                None => temps + self.temp_offsets[b].unwrap_or(0) * n,
            }
        };
        for (part, kernel) in self.plan.parts.iter().zip(&self.parts) {
            let mut ptrs: Vec<CUdeviceptr> = part
                .inputs
                .iter()
                .map(|s| match s {
                    bigfuse_codegen::Source::Arg(i) => ins[*i],
                    bigfuse_codegen::Source::Buffer(b) => buffer(*b),
                })
                .collect();
            ptrs.extend(part.outputs.iter().map(|b| buffer(*b)));
            let virtual_n = n
                .checked_mul(part.instances)
                .ok_or_else(|| Error::Argument {
                    kernel: kernel.compiled.kernel_name.clone(),
                    message: format!(
                        "{n} instances of {} chunks each are too many: split the batch",
                        part.instances
                    ),
                })?;
            kernel.launch_raw(stream, virtual_n, &ptrs)?;
        }
        Ok(())
    }
}

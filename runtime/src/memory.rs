//! Device memory and pinned host memory, each from a pool, so that a warm call allocates nothing.
//!
//! Allocations round up to size classes (powers of two up to 1 MiB, then eighths of a power of
//! two: at most 12.5% unused) and go back to their pool when dropped. A pool keeps at most a
//! quarter of the device's memory (device) or 1 GiB (pinned) of free buffers; beyond that,
//! released buffers are freed. When the driver reports out-of-memory, the pool frees what it holds
//! and tries once more.
//!
//! Each pool counts the bytes (by size class) of its buffers that exist ("in use") and of those
//! it keeps for reuse ("pooled"): [`GpuDevice::memory_usage`](crate::GpuDevice::memory_usage).
//! Both pools are shared by every thread that calls on the device; a mutex guards their free
//! lists (held for a list operation only, never across a driver call that waits).
//!
//! Ordering: a device buffer may go back to the pool while work that uses it is still queued on
//! the device's main stream. Work on the main stream is ordered after it anyway; the transfer
//! streams wait on the main stream before they touch pooled memory (see `call.rs`).

use crate::error::{Error, Result};
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result, CudaContext, DriverError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The size class of an allocation of `bytes`.
pub(crate) fn size_class(bytes: usize) -> usize {
    let bytes = bytes.max(256);
    if bytes <= 1 << 20 {
        return bytes.next_power_of_two();
    }
    let step = (bytes.next_power_of_two() / 16).max(1);
    bytes.div_ceil(step) * step
}

/// Free buffers by size class, with the total they hold.
struct FreeLists<P> {
    lists: BTreeMap<usize, Vec<P>>,
    held: usize,
}

impl<P> FreeLists<P> {
    fn new() -> Self {
        FreeLists {
            lists: BTreeMap::new(),
            held: 0,
        }
    }

    fn take(&mut self, class: usize) -> Option<P> {
        let p = self.lists.get_mut(&class)?.pop()?;
        self.held -= class;
        Some(p)
    }

    /// Keeps `p` unless that would exceed `cap`; returns it otherwise (the caller frees it).
    fn put(&mut self, class: usize, p: P, cap: usize) -> Option<P> {
        if self.held + class > cap {
            return Some(p);
        }
        self.held += class;
        self.lists.entry(class).or_default().push(p);
        None
    }

    fn drain(&mut self) -> Vec<(usize, P)> {
        self.held = 0;
        std::mem::take(&mut self.lists)
            .into_iter()
            .flat_map(|(c, ps)| ps.into_iter().map(move |p| (c, p)))
            .collect()
    }
}

/// Whether a driver call ran out of memory: by its result code.
fn is_oom(e: &DriverError) -> bool {
    crate::error::CudaError::from(*e).is_out_of_memory()
}

/// The pool of device memory of one context.
pub(crate) struct DevicePool {
    ctx: Arc<CudaContext>,
    free: Mutex<FreeLists<CUdeviceptr>>,
    /// Bytes (size classes) of the buffers that exist now.
    in_use: AtomicUsize,
    cap: usize,
    /// The device's memory: a larger request fails at once, without asking the driver.
    total: usize,
}

impl DevicePool {
    pub(crate) fn new(ctx: Arc<CudaContext>, total_memory: usize) -> Arc<DevicePool> {
        Arc::new(DevicePool {
            ctx,
            free: Mutex::new(FreeLists::new()),
            in_use: AtomicUsize::new(0),
            cap: total_memory / 4,
            total: total_memory,
        })
    }

    fn lists(&self) -> std::sync::MutexGuard<'_, FreeLists<CUdeviceptr>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A buffer of at least `bytes` bytes (contents undefined). `what` names it in errors.
    pub(crate) fn alloc(self: &Arc<Self>, bytes: usize, what: &str) -> Result<DeviceBuffer> {
        let class = size_class(bytes);
        // The free lists' lock is released before any driver call: `fresh` may wait for the
        // driver, and trims the pool (taking the lock again) when it runs out of memory.
        let pooled = self.lists().take(class);
        let ptr = match pooled {
            Some(p) => p,
            None => self.fresh(bytes, class, what)?,
        };
        self.in_use.fetch_add(class, Ordering::Relaxed);
        Ok(DeviceBuffer {
            ptr,
            bytes,
            class,
            pool: self.clone(),
        })
    }

    fn fresh(&self, bytes: usize, class: usize, what: &str) -> Result<CUdeviceptr> {
        if class > self.total {
            return Err(Error::OutOfMemory {
                what: what.into(),
                bytes,
                source: None,
            });
        }
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::cuda("binding the CUDA context", e))?;
        // SAFETY: a plain allocation; the pointer is owned by the returned buffer.
        let p = match unsafe { result::malloc_sync(class) } {
            Err(e) if is_oom(&e) => {
                self.trim()
                    .map_err(|e| Error::cuda("freeing pooled device memory to make room", e))?;
                // SAFETY: as above.
                unsafe { result::malloc_sync(class) }
            }
            other => other,
        }
        .map_err(|e| Error::cuda_allocating(what, bytes, e))?;
        Ok(p)
    }

    /// Bytes of the buffers that exist, and bytes the pool keeps for reuse.
    pub(crate) fn usage(&self) -> (usize, usize) {
        let pooled = self.lists().held;
        (self.in_use.load(Ordering::Relaxed), pooled)
    }

    /// Frees every buffer the pool holds; the first failure of the driver, if any, after trying
    /// them all (an allocation that trimmed to make room reports it instead of a puzzling
    /// out-of-memory).
    pub(crate) fn trim(&self) -> std::result::Result<(), DriverError> {
        let freed = self.lists().drain();
        if freed.is_empty() {
            return Ok(());
        }
        let mut first = self.ctx.bind_to_thread().err();
        for (_, p) in freed {
            // SAFETY: pooled pointers are owned by the pool and used by nobody. cuMemFree waits
            // for work still using the memory.
            if let Err(e) = unsafe { result::free_sync(p) } {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    fn release(&self, class: usize, ptr: CUdeviceptr) {
        self.in_use.fetch_sub(class, Ordering::Relaxed);
        // Not `if let Some(p) = self.lists().put(..)`: the lock would be held while freeing.
        let refused = self.lists().put(class, ptr, self.cap);
        if let Some(p) = refused {
            let _ = self.ctx.bind_to_thread();
            // SAFETY: the buffer is being dropped; nobody else holds the pointer.
            let _ = unsafe { result::free_sync(p) };
        }
    }
}

impl Drop for DevicePool {
    fn drop(&mut self) {
        // Nobody is left to tell: the context goes with the pool.
        let _ = self.trim();
    }
}

/// Device memory from a pool: `bytes` usable bytes (the allocation may be larger).
pub struct DeviceBuffer {
    ptr: CUdeviceptr,
    bytes: usize,
    class: usize,
    pool: Arc<DevicePool>,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer({} bytes)", self.bytes)
    }
}

impl DeviceBuffer {
    /// The device address of byte 0.
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// Usable bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Usable 64-bit words.
    pub fn len(&self) -> usize {
        self.bytes / 8
    }

    /// Whether the buffer has no usable byte.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Whether this buffer lives in `ctx`.
    pub(crate) fn belongs_to(&self, ctx: &Arc<CudaContext>) -> bool {
        Arc::ptr_eq(&self.pool.ctx, ctx) || self.pool.ctx.cu_ctx() == ctx.cu_ctx()
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        self.pool.release(self.class, self.ptr);
    }
}

/// A pointer into pinned host memory (owned by the pool or a [`PinnedBuffer`]).
struct HostPtr(*mut u8);
// SAFETY: pinned memory is plain memory; ownership is tracked by the pool and the buffers.
unsafe impl Send for HostPtr {}

/// The pool of pinned (page-locked) host memory of one context: staging for transfers at full
/// PCIe speed.
pub(crate) struct PinnedPool {
    ctx: Arc<CudaContext>,
    free: Mutex<FreeLists<HostPtr>>,
    /// Bytes (size classes) of the buffers that exist now.
    in_use: AtomicUsize,
    cap: usize,
}

impl PinnedPool {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> Arc<PinnedPool> {
        Arc::new(PinnedPool {
            ctx,
            free: Mutex::new(FreeLists::new()),
            in_use: AtomicUsize::new(0),
            cap: 1 << 30,
        })
    }

    fn lists(&self) -> std::sync::MutexGuard<'_, FreeLists<HostPtr>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn alloc(self: &Arc<Self>, bytes: usize) -> Result<PinnedBuffer> {
        let class = size_class(bytes);
        let pooled = self.lists().take(class);
        let ptr = match pooled {
            Some(p) => p.0,
            None => {
                self.ctx
                    .bind_to_thread()
                    .map_err(|e| Error::cuda("binding the CUDA context", e))?;
                // SAFETY: a plain allocation, owned by the returned buffer. Portable: usable by
                // every context; mapped: kernels may write small results into it directly; not
                // write-combined, since results are read back on the host.
                unsafe {
                    result::malloc_host(
                        class,
                        cudarc::driver::sys::CU_MEMHOSTALLOC_PORTABLE
                            | cudarc::driver::sys::CU_MEMHOSTALLOC_DEVICEMAP,
                    )
                }
                .map_err(|e| Error::cuda_allocating("pinned host staging", class, e))?
                    as *mut u8
            }
        };
        self.in_use.fetch_add(class, Ordering::Relaxed);
        Ok(PinnedBuffer {
            ptr,
            bytes,
            class,
            pool: self.clone(),
        })
    }

    /// Bytes of the buffers that exist, and bytes the pool keeps for reuse.
    pub(crate) fn usage(&self) -> (usize, usize) {
        let pooled = self.lists().held;
        (self.in_use.load(Ordering::Relaxed), pooled)
    }

    /// Frees every buffer the pool holds.
    pub(crate) fn trim(&self) {
        let freed = self.lists().drain();
        if freed.is_empty() {
            return;
        }
        let _ = self.ctx.bind_to_thread();
        for (_, p) in freed {
            // SAFETY: pooled pointers are owned by the pool and used by nobody (a staging buffer
            // goes back only after the copies that use it are complete).
            let _ = unsafe { result::free_host(p.0 as _) };
        }
    }

    fn release(&self, class: usize, ptr: *mut u8) {
        self.in_use.fetch_sub(class, Ordering::Relaxed);
        let refused = self.lists().put(class, HostPtr(ptr), self.cap);
        if let Some(p) = refused {
            let _ = self.ctx.bind_to_thread();
            // SAFETY: the buffer is being dropped; nobody else holds the pointer.
            let _ = unsafe { result::free_host(p.0 as _) };
        }
    }
}

impl Drop for PinnedPool {
    fn drop(&mut self) {
        self.trim();
    }
}

/// Pinned host memory from a pool, 8-byte aligned (page aligned in fact).
pub(crate) struct PinnedBuffer {
    ptr: *mut u8,
    bytes: usize,
    class: usize,
    pool: Arc<PinnedPool>,
}

// SAFETY: the buffer owns its memory exclusively.
unsafe impl Send for PinnedBuffer {}
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    /// The address kernels use for this memory (mapped pinned memory), or `None` when the driver
    /// gives none.
    pub(crate) fn device_ptr(&self) -> Option<CUdeviceptr> {
        let mut d: CUdeviceptr = 0;
        // SAFETY: `ptr` was allocated by cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP.
        let r = unsafe {
            cudarc::driver::sys::cuMemHostGetDevicePointer_v2(&mut d, self.ptr as *mut _, 0)
        };
        (r == cudarc::driver::sys::CUresult::CUDA_SUCCESS && d != 0).then_some(d)
    }

    pub(crate) fn as_mut_bytes(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` holds at least `bytes` bytes owned by this buffer.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        self.pool.release(self.class, self.ptr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_bound_the_waste() {
        assert_eq!(size_class(0), 256);
        assert_eq!(size_class(1000), 1024);
        assert_eq!(size_class(1 << 20), 1 << 20);
        for bytes in [(1 << 20) + 1, 3 << 20, 100_000_000, 1 << 33] {
            let c = size_class(bytes);
            assert!(c >= bytes && (c - bytes) * 8 <= bytes, "{bytes} -> {c}");
        }
        // Classes are stable: a size and its class map to the same class.
        assert_eq!(size_class(size_class(5 << 20)), size_class(5 << 20));
    }

    #[test]
    fn free_lists_respect_the_cap() {
        let mut f = FreeLists::new();
        assert!(f.put(1024, 1u64, 2048).is_none());
        assert!(f.put(1024, 2u64, 2048).is_none());
        assert_eq!(f.put(1024, 3u64, 2048), Some(3));
        assert_eq!(f.take(1024), Some(2));
        assert_eq!(f.take(512), None);
        assert_eq!(f.drain().len(), 1);
        assert_eq!(f.held, 0);
    }
}

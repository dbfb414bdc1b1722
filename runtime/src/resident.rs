//! Batches resident on a GPU: their buffer, the event after the work that computes them, and
//! their transfers to and from host data (converted piece by piece through pinned staging).

use crate::column::{Arg, Out, Slot};
use crate::error::Result;
use crate::gpu::{guarded, GpuDevice};
use crate::memory::DeviceBuffer;
use cudarc::driver::{result, CudaEvent};
use std::sync::Arc;

/// Bytes per piece of a transfer between host and device, each staged through pinned memory
/// while the next one is converted.
const PIECE_BYTES: usize = 8 << 20;

/// A batch's values on a GPU, in the kernels' layout.
pub(crate) struct Resident {
    gpu: Arc<GpuDevice>,
    buf: DeviceBuffer,
    /// Recorded after the work that computes the batch (none for uploaded batches).
    ready: Option<Arc<CudaEvent>>,
}

impl Resident {
    /// Converts and uploads `n` instances of `arg`; returns when the upload is done.
    pub(crate) fn upload(
        gpu: &Arc<GpuDevice>,
        slot: &Slot,
        arg: &Arg,
        n: usize,
    ) -> Result<Resident> {
        Ok(Resident {
            gpu: gpu.clone(),
            buf: upload(gpu, slot, arg, n)?,
            ready: None,
        })
    }

    /// Results being computed into `buf` by work that `ready` follows.
    pub(crate) fn computed(
        gpu: Arc<GpuDevice>,
        buf: DeviceBuffer,
        ready: Arc<CudaEvent>,
    ) -> Resident {
        Resident {
            gpu,
            buf,
            ready: Some(ready),
        }
    }

    pub(crate) fn ordinal(&self) -> usize {
        self.gpu.ordinal()
    }

    /// Waits until the kernels computing the batch have finished (and reports their errors).
    pub(crate) fn wait(&self) -> Result<()> {
        match &self.ready {
            Some(e) => guarded("waiting for a batch", || e.synchronize()),
            None => Ok(()),
        }
    }

    pub(crate) fn is_ready(&self) -> bool {
        self.ready.as_ref().is_none_or(|e| e.is_complete())
    }

    /// Reads `n` instances into `out` (sized here), after the work queued before.
    pub(crate) fn read(&self, slot: &Slot, n: usize, out: &mut Out) -> Result<()> {
        download(&self.gpu, slot, &self.buf, n, out)
    }

    /// The device address, when the batch lives on `gpu`.
    pub(crate) fn ptr_on(&self, gpu: &GpuDevice) -> Option<u64> {
        self.buf.belongs_to(gpu.context()).then(|| self.buf.ptr())
    }
}

/// Instances per piece of a transfer of `bytes` bytes per instance.
fn piece(bytes: usize) -> usize {
    (PIECE_BYTES / bytes.max(1)).max(1)
}

/// Converts and uploads `n` instances of `arg` into a new device buffer, piece by piece through
/// two pinned buffers (one filled while the other copies), on the main stream.
fn upload(gpu: &GpuDevice, slot: &Slot, arg: &Arg, n: usize) -> Result<DeviceBuffer> {
    let bytes = slot.bytes();
    let buf = gpu.alloc_bytes(n * bytes, "a batch")?;
    if n == 0 || bytes == 0 {
        return Ok(buf);
    }
    gpu.bind()?;
    let per = piece(bytes);
    let mut staging = [
        gpu.pinned.alloc(per * bytes)?,
        gpu.pinned.alloc(per * bytes)?,
    ];
    let events = [gpu.sync_event()?, gpu.sync_event()?];
    let main = gpu.stream();
    let outcome = (|| {
        for (k, start) in (0..n).step_by(per).enumerate() {
            let count = per.min(n - start);
            let s = k % 2;
            if k >= 2 {
                guarded("waiting for an upload", || events[s].synchronize())?;
            }
            let staged = &mut staging[s].as_mut_bytes()[..count * bytes];
            slot.write(arg, start, count, staged)?;
            let dst = buf.ptr() + (start * bytes) as u64;
            // SAFETY: the staging stays untouched until the event after the copy completes; the
            // buffer holds `n` instances.
            guarded("uploading a batch", || unsafe {
                result::memcpy_htod_async(dst, &*staged, main.cu_stream())?;
                result::event::record(events[s].cu_event(), main.cu_stream())
            })?;
        }
        Ok(())
    })();
    let done = guarded("waiting for an upload", || {
        events[0].synchronize()?;
        events[1].synchronize()
    });
    if outcome.is_err() || done.is_err() {
        // A copy may still read the staging: wait for it before the staging goes back to the
        // pool (another thread may take it at once).
        let _ = gpu.synchronize();
    }
    gpu.recycle_events(events);
    outcome.and(done)?;
    Ok(buf)
}

/// Downloads `n` instances from `buf` into `out`, piece by piece (the next piece copies while
/// this one is converted), after the work queued on the main stream.
fn download(
    gpu: &GpuDevice,
    slot: &Slot,
    buf: &DeviceBuffer,
    n: usize,
    out: &mut Out,
) -> Result<()> {
    slot.size_out(out, n);
    let bytes = slot.bytes();
    if n == 0 || bytes == 0 {
        return Ok(());
    }
    gpu.bind()?;
    let per = piece(bytes);
    let mut staging = [
        gpu.pinned.alloc(per * bytes)?,
        gpu.pinned.alloc(per * bytes)?,
    ];
    let events = [gpu.sync_event()?, gpu.sync_event()?];
    let main = gpu.stream();
    let starts: Vec<usize> = (0..n).step_by(per).collect();
    let enqueue = |k: usize, staged: &mut [u8], event: &CudaEvent| -> Result<()> {
        let start = starts[k];
        let count = per.min(n - start);
        let src = buf.ptr() + (start * bytes) as u64;
        // SAFETY: the staging is read only after the event; the buffer holds `n` instances.
        guarded("downloading a batch", || unsafe {
            result::memcpy_dtoh_async(&mut staged[..count * bytes], src, main.cu_stream())?;
            result::event::record(event.cu_event(), main.cu_stream())
        })
    };
    let outcome = (|| {
        for k in 0..starts.len().min(2) {
            enqueue(k, staging[k].as_mut_bytes(), &events[k])?;
        }
        for k in 0..starts.len() {
            let s = k % 2;
            guarded("waiting for a download", || events[s].synchronize())?;
            let start = starts[k];
            let count = per.min(n - start);
            slot.read(&staging[s].as_bytes()[..count * bytes], start, count, out)?;
            if k + 2 < starts.len() {
                enqueue(k + 2, staging[s].as_mut_bytes(), &events[s])?;
            }
        }
        Ok(())
    })();
    if outcome.is_err() {
        let _ = gpu.synchronize();
    }
    gpu.recycle_events(events);
    outcome
}

//! Host <-> device bandwidth from pinned memory, measured in the run that uses it: one buffer of
//! page-locked host memory (cuMemHostAlloc, through cudarc) copied whole to and from a device
//! buffer with cuMemcpyHtoDAsync / cuMemcpyDtoHAsync on the main stream, timed with CUDA events
//! (median of the runs after warm-up, as every kernel figure).

use crate::measure::{driver, median_ms};
use bigfuse::runtime::GpuDevice;
use cudarc::driver::result;

/// Bytes of each test copy: 256 MiB, long enough that launch latency is noise.
pub const COPY_BYTES: usize = 256 << 20;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pcie {
    /// Host to device, GB/s (10^9 bytes per second).
    pub h2d_gbs: f64,
    /// Device to host, GB/s.
    pub d2h_gbs: f64,
}

/// Runs a driver call, turning a panic of cudarc's dynamic loading into an error.
fn guarded<T>(
    during: &str,
    f: impl FnOnce() -> Result<T, cudarc::driver::DriverError>,
) -> bigfuse::Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| driver(during, e)),
        Err(_) => Err(driver(
            during,
            "the CUDA driver library panicked (missing symbol?)",
        )),
    }
}

/// Page-locked host memory, freed on drop.
struct Pinned {
    ptr: *mut u8,
    bytes: usize,
}

impl Pinned {
    fn new(gpu: &GpuDevice, bytes: usize) -> bigfuse::Result<Pinned> {
        guarded("binding the CUDA context", || {
            gpu.context().bind_to_thread()
        })?;
        // SAFETY: a plain allocation of `bytes` bytes, owned (and freed) by the returned value.
        let ptr = guarded(
            &format!("allocating {bytes} bytes of pinned host memory"),
            || unsafe { result::malloc_host(bytes, 0) },
        )? as *mut u8;
        // Touch every page (and give the copies defined bytes).
        // SAFETY: `ptr` holds `bytes` bytes.
        unsafe { std::ptr::write_bytes(ptr, 0x5a, bytes) };
        Ok(Pinned { ptr, bytes })
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: owned, initialised above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: owned exclusively, initialised above.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemHostAlloc above; no copy is in flight (each timed copy is
        // waited for by its event before `median_ms` returns).
        let _ = std::panic::catch_unwind(|| unsafe { result::free_host(self.ptr as _) });
    }
}

/// GB/s of `bytes` bytes in `ms` milliseconds.
pub fn gbs(bytes: usize, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// Both directions, `runs` timed copies of `bytes` bytes each (median).
pub fn measure(gpu: &GpuDevice, runs: usize, bytes: usize) -> bigfuse::Result<Pcie> {
    let mut host = Pinned::new(gpu, bytes)?;
    let device = gpu.alloc_bytes(bytes, "the PCIe test buffer")?;
    let stream = gpu.stream().cu_stream();
    let mut timed = || -> bigfuse::Result<(f64, f64)> {
        let h2d = median_ms(gpu, runs, || {
            guarded("binding the CUDA context", || {
                gpu.context().bind_to_thread()
            })?;
            // SAFETY: both buffers hold `bytes` bytes; the host buffer outlives the copy (waited
            // for below, whatever happens).
            guarded("copying pinned host memory to the device", || unsafe {
                result::memcpy_htod_async(device.ptr(), host.as_slice(), stream)
            })
        })?;
        let d2h = median_ms(gpu, runs, || {
            guarded("binding the CUDA context", || {
                gpu.context().bind_to_thread()
            })?;
            // SAFETY: as above.
            guarded("copying device memory to pinned host memory", || unsafe {
                result::memcpy_dtoh_async(host.as_mut_slice(), device.ptr(), stream)
            })
        })?;
        Ok((h2d, d2h))
    };
    let timed = timed();
    // Nothing may still be copying when the pinned buffer is freed, even after an error.
    let synced = gpu.synchronize();
    let (h2d, d2h) = timed?;
    synced?;
    Ok(Pcie {
        h2d_gbs: gbs(bytes, h2d),
        d2h_gbs: gbs(bytes, d2h),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn gigabytes_per_second() {
        assert!((super::gbs(256 << 20, 5.0) - 53.687_091_2).abs() < 1e-6);
    }
}

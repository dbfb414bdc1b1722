//! A call from host data to host results on the GPU, pipelined: the batch is cut into chunks;
//! while the GPU computes one chunk, the next one's arguments are converted on the host (in
//! parallel, straight into pinned staging) and uploaded, and the previous one's results are
//! downloaded and converted. Device and pinned memory come from the device's pools, so a warm
//! call allocates nothing.
//!
//! Streams and events: uploads run on `up`, kernels on `main`, downloads on `down`. Chunk `i`'s
//! kernels wait for its upload; its download waits for its kernels. Each chunk takes a slot of a
//! small ring (pinned staging in and out, a device arena), free again once the host has read the
//! results of the chunk before it there. The host stages chunks in order and reads results in
//! order, each as soon as its download is complete; a staging and a reading that are both due run
//! at the same time (one parallel job each, sharing the threads), so the host converts while the
//! GPU copies and computes. Before the
//! first upload, `up` and `down` wait for everything queued on `main` earlier, since pooled
//! memory may still be in use there. When the call returns, all of its work is done.

use crate::batch::Batch;
use crate::column::{Arg, Out, Slot};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::gpu::{align, guarded, GpuDevice, GpuProgram};
use crate::memory::{DeviceBuffer, PinnedBuffer};
use crate::resident::Resident;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result, CudaEvent, CudaStream};
use std::sync::Arc;

/// Chunks a large batch is cut into (plus the smaller ones of the ramps at both ends, see
/// [`chunk_plan`]). Measured on H200 hosts (`bench pipeline`, bench/RESULTS.md, 2026-11-25): at
/// the bar sizes of issue 10, three to six chunks beat one or two (no overlap) and eight or more
/// (the host's conversions then run beside more DMA, and slower).
const CHUNKS: u64 = 4;

/// Bytes of transfers per chunk, at least (smaller batches run as one chunk, the low-latency
/// path) and at most (pinned staging and device arenas stay bounded for huge batches).
/// `BIGFUSE_PIPELINE_BYTES` sets the bytes per chunk outright, `BIGFUSE_PIPELINE_INSTANCES` the
/// instances (for tests and tuning).
const MIN_CHUNK_BYTES: u64 = 4 << 20;
const MAX_CHUNK_BYTES: u64 = 32 << 20;

/// Chunks in flight at once: one being staged on the host, one uploading, one computing, one
/// downloading.
const SLOTS: usize = 4;

/// Results up to this size of a one-chunk call are written by the kernels into mapped pinned
/// memory directly (a few PCIe writes beat a copy's latency; large results copy faster).
const DIRECT_RESULT_BYTES: usize = 256 << 10;

/// Where a call's host time goes, printed to stderr when `BIGFUSE_TRACE=pipeline`: for finding
/// what bounds a call (conversion, waiting for the GPU, or the driver calls).
#[derive(Default)]
struct Trace {
    on: bool,
    stage: std::time::Duration,
    read: std::time::Duration,
    /// Staging and reading side by side.
    both: std::time::Duration,
    wait: std::time::Duration,
    enqueue: std::time::Duration,
}

impl Trace {
    fn new() -> Trace {
        Trace {
            on: std::env::var("BIGFUSE_TRACE").is_ok_and(|v| v.contains("pipeline")),
            ..Default::default()
        }
    }

    /// Runs `f`, adding its time to the phase `which` picks.
    fn time<T>(
        &mut self,
        which: fn(&mut Trace) -> &mut std::time::Duration,
        f: impl FnOnce() -> T,
    ) -> T {
        if !self.on {
            return f();
        }
        let start = std::time::Instant::now();
        let r = f();
        *which(self) += start.elapsed();
        r
    }

    fn report(&self, n: usize, c: usize, chunks: usize, total: std::time::Duration) {
        if self.on {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            eprintln!(
                "bigfuse pipeline: {n} instances in {chunks} chunk(s) of {c}: {:.3} ms = staging {:.3} + reading {:.3} + both at once {:.3} + waiting {:.3} + driver calls {:.3} (+ {:.3} other)",
                ms(total),
                ms(self.stage),
                ms(self.read),
                ms(self.both),
                ms(self.wait),
                ms(self.enqueue),
                ms(total.saturating_sub(self.stage + self.read + self.both + self.wait + self.enqueue))
            );
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|v| *v > 0)
}

/// Where each argument and result of a chunk lies in its arena (and in the pinned staging, which
/// mirrors the arena's input and output regions), for chunks of up to `c` instances.
struct Arena {
    c: u64,
    /// Offset of each host argument's region (`None` for arguments already on the device).
    inputs: Vec<Option<u64>>,
    in_bytes: u64,
    /// Offset of each result's region, from the start of the output region.
    outputs: Vec<u64>,
    out_bytes: u64,
    temp_bytes: u64,
}

impl Arena {
    fn new(program: &GpuProgram, params: &[Slot], results: &[Slot], args: &[Arg], c: u64) -> Arena {
        let mut off = 0;
        let inputs = params
            .iter()
            .zip(args)
            .map(|(p, a)| match a {
                Arg::Batch(_) => None,
                _ => {
                    let o = off;
                    off += align(c * p.bytes() as u64);
                    Some(o)
                }
            })
            .collect();
        let in_bytes = off;
        off = 0;
        let outputs = results
            .iter()
            .map(|r| {
                let o = off;
                off += align(c * r.bytes() as u64);
                o
            })
            .collect();
        Arena {
            c,
            inputs,
            in_bytes,
            outputs,
            out_bytes: off,
            temp_bytes: align(program.temp_bytes(c)),
        }
    }

    fn device_bytes(&self) -> u64 {
        self.in_bytes + self.out_bytes + self.temp_bytes
    }
}

/// One slot of the ring: staging, device memory, and the events of the chunk in it.
struct Ring {
    staged_in: PinnedBuffer,
    staged_out: PinnedBuffer,
    device: DeviceBuffer,
    uploaded: CudaEvent,
    computed: CudaEvent,
    downloaded: CudaEvent,
}

/// One call of `program` over `n` instances of `args`: pipelined from host data to host results
/// ([`Call::run`]), or launched on device batches ([`Call::launch`]).
#[derive(Clone, Copy)]
pub(crate) struct Call<'a> {
    pub gpu: &'a Arc<GpuDevice>,
    pub program: &'a GpuProgram,
    pub params: &'a [Slot],
    pub results: &'a [Slot],
    pub args: &'a [Arg<'a>],
    pub n: usize,
}

impl Call<'_> {
    /// Runs the call, writing the results into `outs` (sized here; on an error the caller
    /// clears them).
    pub(crate) fn run(self, outs: &mut [Out]) -> Result<()> {
        for (r, o) in self.results.iter().zip(outs.iter_mut()) {
            r.size_out(o, self.n);
        }
        if self.n == 0 {
            return Ok(());
        }
        self.gpu.bind()?;
        // On an error `pipeline` waits for the device before the call's memory goes back to the
        // pools.
        self.pipeline(outs)
    }

    /// Launches over device batches and returns the results as batches on the device, without
    /// waiting for the GPU. Host arguments are uploaded first (`dev` is the call's device).
    pub(crate) fn launch(self, dev: &Device) -> Result<Vec<Batch>> {
        let Call {
            gpu,
            program,
            params,
            results,
            args,
            n,
        } = self;
        let uploaded: Vec<Option<Batch>> = params
            .iter()
            .zip(args)
            .map(|(p, a)| match a {
                Arg::Batch(_) => Ok(None),
                a => Batch::new(dev, &p.ty, *a).map(Some),
            })
            .collect::<Result<_>>()?;
        let ins: Vec<u64> = args
            .iter()
            .zip(&uploaded)
            .map(|(a, u)| match (a, u) {
                (Arg::Batch(b), _) => b.device_ptr(gpu),
                (_, Some(b)) => b.device_ptr(gpu),
                (_, None) => Err(Error::Argument {
                    kernel: program.parts[0].compiled.kernel_name.clone(),
                    message: "internal: a host argument was not uploaded".into(),
                }),
            })
            .collect::<Result<_>>()?;
        let outs = results
            .iter()
            .map(|r| gpu.alloc_bytes(n * r.bytes(), "a result batch"))
            .collect::<Result<Vec<_>>>()?;
        let out_ptrs: Vec<u64> = outs.iter().map(|b| b.ptr()).collect();
        let temps = program.alloc_temps(gpu, n as u64)?;
        gpu.bind()?;
        // SAFETY: every buffer holds `n` instances of its layout (sizes above, batches checked by
        // type); temporaries and uploaded arguments go back to the pool after the launch is
        // queued, ordered on the main stream.
        unsafe {
            program.launch_raw(
                gpu,
                gpu.stream(),
                n as u64,
                &ins,
                &out_ptrs,
                crate::gpu::ptr_of(&temps),
            )?
        };
        let ready = Arc::new(guarded("recording a batch's completion", || {
            gpu.stream().record_event(None)
        })?);
        Ok(outs
            .into_iter()
            .zip(results)
            .map(|(buf, r)| {
                let resident = Resident::computed(gpu.clone(), buf, ready.clone());
                Batch::on_gpu(r.clone(), n, resident)
            })
            .collect())
    }
}

/// The chunk size: about a quarter of the batch's transfers, within the bounds above.
fn chunk_instances(per_instance: u64, n: u64) -> u64 {
    if let Some(c) = env_u64("BIGFUSE_PIPELINE_INSTANCES") {
        return c.min(n);
    }
    let total = per_instance.saturating_mul(n);
    let bytes = env_u64("BIGFUSE_PIPELINE_BYTES")
        .unwrap_or_else(|| (total / CHUNKS).clamp(MIN_CHUNK_BYTES, MAX_CHUNK_BYTES));
    (bytes / per_instance.max(1)).max(1).min(n)
}

impl Call<'_> {
    fn pipeline(self, outs: &mut [Out]) -> Result<()> {
        let Call {
            gpu,
            program,
            params,
            results,
            args,
            n,
        } = self;
        let moved: u64 = params
            .iter()
            .zip(args)
            .filter(|(_, a)| !matches!(a, Arg::Batch(_)))
            .map(|(p, _)| p.bytes() as u64)
            .chain(results.iter().map(|r| r.bytes() as u64))
            .sum();
        let c = chunk_instances(moved, n as u64);
        let arena = Arena::new(program, params, results, args, c);
        let slots = chunk_plan(n, c as usize).len().min(SLOTS);
        let mut ring = Vec::with_capacity(slots);
        for _ in 0..slots {
            ring.push(Ring {
                staged_in: gpu.pinned.alloc(arena.in_bytes as usize)?,
                staged_out: gpu.pinned.alloc(arena.out_bytes as usize)?,
                device: gpu.alloc_bytes(arena.device_bytes() as usize, "a chunk of the batch")?,
                uploaded: gpu.sync_event()?,
                computed: gpu.sync_event()?,
                downloaded: gpu.sync_event()?,
            });
        }
        let outcome = self.run_chunks(outs, &arena, &mut ring);
        if outcome.is_err() {
            // Copies of the chunks in flight may still read or write the ring's staging: wait for
            // them before it goes back to the pool, where another thread's call may take it at
            // once (the host writes staging without ordering itself after the streams).
            let _ = gpu.synchronize();
        }
        gpu.recycle_events(
            ring.into_iter()
                .flat_map(|r| [r.uploaded, r.computed, r.downloaded]),
        );
        outcome
    }

    fn run_chunks(self, outs: &mut [Out], arena: &Arena, ring: &mut [Ring]) -> Result<()> {
        let n = self.n;
        let c = arena.c as usize;
        let plan = chunk_plan(n, c);
        let chunks = plan.len();
        let slots = ring.len();
        let started = std::time::Instant::now();
        let mut trace = Trace::new();
        // One chunk: everything in order on the main stream, no events (the low-latency path).
        let single = chunks == 1;
        let gpu = self.gpu;
        let streams = Streams {
            up: if single { gpu.stream() } else { gpu.up() },
            main: gpu.stream(),
            down: if single { gpu.stream() } else { gpu.down() },
            single,
        };
        if !single {
            let before = &ring[0].downloaded;
            guarded("ordering the transfers", || {
                before.record(streams.main)?;
                streams.up.wait(before)?;
                streams.down.wait(before)
            })?;
        }
        // Chunks are staged and queued in order, and their results read in order; chunk `i`
        // takes slot `i % slots`, free once chunk `i - slots` has been read. The host reads a
        // chunk's results as soon as its download is complete, alongside the next staging when
        // there is one: staging ahead while finished results wait would leave them all to be
        // read after the last staging, with nothing to overlap.
        let (mut staged, mut done) = (0, 0);
        while done < chunks {
            let can_stage = staged < chunks && staged - done < slots;
            let ready = done < staged
                && guarded("querying a download", || {
                    ring[done % slots].downloaded.try_is_complete()
                })?;
            if !can_stage {
                let slot = &ring[done % slots];
                trace.time(
                    |t| &mut t.wait,
                    || guarded("waiting for a download", || slot.downloaded.synchronize()),
                )?;
                let (s, k) = plan[done];
                trace.time(
                    |t| &mut t.read,
                    || read_results(self.results, arena, &slot.staged_out, s, k, outs),
                )?;
                done += 1;
                continue;
            }
            let (start, count) = plan[staged];
            if ready {
                // Staging one chunk and reading another share the threads: neither waits for the
                // other's slowest piece (measured on an H100: calls 5-15% faster than one after
                // the other).
                let (stage_slot, read_slot) = two_slots(ring, staged % slots, done % slots);
                let (s, k) = plan[done];
                let staged_in = stage_slot.staged_in.as_mut_bytes();
                let outs = &mut *outs;
                let (a, b) = trace.time(
                    |t| &mut t.both,
                    || {
                        rayon::join(
                            || self.stage(arena, start, count, staged_in),
                            || read_results(self.results, arena, &read_slot.staged_out, s, k, outs),
                        )
                    },
                );
                a?;
                b?;
                done += 1;
            } else {
                let staged_in = ring[staged % slots].staged_in.as_mut_bytes();
                trace.time(
                    |t| &mut t.stage,
                    || self.stage(arena, start, count, staged_in),
                )?;
            }
            let slot = &mut ring[staged % slots];
            trace.time(
                |t| &mut t.enqueue,
                || self.enqueue(arena, slot, &streams, start, count),
            )?;
            staged += 1;
        }
        trace.report(n, c, chunks, started.elapsed());
        Ok(())
    }

    /// Writes the host arguments of instances `[start, start + count)` into pinned staging.
    fn stage(&self, arena: &Arena, start: usize, count: usize, staged: &mut [u8]) -> Result<()> {
        for ((p, a), off) in self.params.iter().zip(self.args).zip(&arena.inputs) {
            if let Some(off) = off {
                let len = count * p.bytes();
                p.write(
                    a,
                    start,
                    count,
                    &mut staged[*off as usize..*off as usize + len],
                )?;
            }
        }
        Ok(())
    }

    /// Queues a staged chunk: its upload, its kernels, its download into the slot's staging.
    fn enqueue(
        &self,
        arena: &Arena,
        slot: &mut Ring,
        streams: &Streams,
        start: usize,
        count: usize,
    ) -> Result<()> {
        let Call {
            gpu,
            program,
            params,
            results,
            args,
            ..
        } = *self;
        let Streams {
            up,
            main,
            down,
            single,
        } = *streams;
        let staged = slot.staged_in.as_mut_bytes();
        let base = slot.device.ptr();
        let in_bytes = staged_extent(params, args, arena, count);
        let ins: Vec<CUdeviceptr> = params
            .iter()
            .zip(args)
            .zip(&arena.inputs)
            .map(|((p, a), off)| match (a, off) {
                (Arg::Batch(b), _) => b
                    .device_ptr(gpu)
                    .map(|ptr| ptr + (start * p.bytes()) as u64),
                (_, Some(off)) => Ok(base + off),
                (_, None) => unreachable!("host arguments have a region"),
            })
            .collect::<Result<_>>()?;
        let out_base = base + arena.in_bytes;
        let temps = out_base + arena.out_bytes;
        let out_bytes = results_extent(results, arena, count);
        // A single small chunk: the kernels write the results straight into the mapped pinned
        // staging, which saves a copy's latency (what a call of a few instances waits for).
        let direct = if single && out_bytes <= DIRECT_RESULT_BYTES {
            slot.staged_out.device_ptr()
        } else {
            None
        };
        let out_ptrs: Vec<CUdeviceptr> = arena
            .outputs
            .iter()
            .map(|o| direct.unwrap_or(out_base) + o)
            .collect();
        // The slot's previous chunk is done (the host read its results after its download, which
        // followed its kernels and its upload): its arena and staging are free.
        if in_bytes > 0 {
            // SAFETY: the staging holds `in_bytes` written bytes and stays untouched until the
            // slot's download (ordered after this upload) is complete; the arena holds them too.
            guarded("uploading arguments", || unsafe {
                result::memcpy_htod_async(base, &staged[..in_bytes], up.cu_stream())
            })?;
        }
        if !single {
            guarded("ordering a chunk", || {
                slot.uploaded.record(up)?;
                main.wait(&slot.uploaded)
            })?;
        }
        // SAFETY: the arena holds `c >= count` instances of every argument, result and
        // intermediate; batch arguments hold `n` instances (checked by the caller).
        unsafe { program.launch_raw(gpu, main, count as u64, &ins, &out_ptrs, temps)? };
        if !single {
            guarded("ordering a chunk", || slot.computed.record(main))?;
        }
        let staged_out = slot.staged_out.as_mut_bytes();
        // SAFETY: as for the upload; the host reads the staging only after `downloaded`.
        guarded("downloading results", || unsafe {
            if !single {
                result::stream::wait_event(
                    down.cu_stream(),
                    slot.computed.cu_event(),
                    cudarc::driver::sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                )?;
            }
            if direct.is_none() {
                result::memcpy_dtoh_async(
                    &mut staged_out[..out_bytes],
                    out_base,
                    down.cu_stream(),
                )?;
            }
            result::event::record(slot.downloaded.cu_event(), down.cu_stream())
        })
    }
}

/// The streams of a pipelined call: uploads, kernels, downloads (all the main stream when the
/// call is one chunk).
#[derive(Clone, Copy)]
struct Streams<'a> {
    up: &'a CudaStream,
    main: &'a CudaStream,
    down: &'a CudaStream,
    single: bool,
}

/// Two different slots of the ring, the first mutably.
fn two_slots(ring: &mut [Ring], i: usize, j: usize) -> (&mut Ring, &Ring) {
    assert_ne!(i, j, "a chunk is staged and read in different slots");
    if i < j {
        let (lo, hi) = ring.split_at_mut(j);
        (&mut lo[i], &hi[0])
    } else {
        let (lo, hi) = ring.split_at_mut(i);
        (&mut hi[0], &lo[j])
    }
}

/// The chunks of a batch of `n` instances, at most `c` each. The first ones are smaller (a
/// quarter, then half a chunk), so that the GPU starts early instead of waiting for a whole chunk
/// to be staged and uploaded, and so are the last ones (half, then a quarter), so that little is
/// left to download and read once the host has staged everything. Chunks in between are of equal
/// size (within one instance).
fn chunk_plan(n: usize, c: usize) -> Vec<(usize, usize)> {
    let c = c.max(1);
    let ramp: Vec<usize> = [c / 4, c / 2].into_iter().filter(|&k| k > 0).collect();
    let ramps: usize = 2 * ramp.iter().sum::<usize>();
    let sizes: Vec<usize> = if n > c && n >= ramps + c {
        let middle = n - ramps;
        ramp.iter()
            .copied()
            .chain(even_split(middle, middle.div_ceil(c)))
            .chain(ramp.iter().rev().copied())
            .collect()
    } else {
        even_split(n, n.div_ceil(c)).collect()
    };
    let mut start = 0;
    sizes
        .into_iter()
        .map(|k| {
            let chunk = (start, k);
            start += k;
            chunk
        })
        .collect()
}

/// `n` split into `parts` sizes that differ by at most one, larger first.
fn even_split(n: usize, parts: usize) -> impl Iterator<Item = usize> {
    let parts = parts.max(1);
    (0..parts).map(move |i| n / parts + usize::from(i < n % parts))
}

/// Bytes of the input region a chunk of `count` instances fills (up to the last host argument's
/// end).
fn staged_extent(params: &[Slot], args: &[Arg], arena: &Arena, count: usize) -> usize {
    params
        .iter()
        .zip(args)
        .zip(&arena.inputs)
        .filter_map(|((p, _), off)| off.map(|o| o as usize + count * p.bytes()))
        .max()
        .unwrap_or(0)
}

fn results_extent(results: &[Slot], arena: &Arena, count: usize) -> usize {
    results
        .iter()
        .zip(&arena.outputs)
        .map(|(r, o)| *o as usize + count * r.bytes())
        .max()
        .unwrap_or(0)
}

fn read_results(
    results: &[Slot],
    arena: &Arena,
    staged: &PinnedBuffer,
    start: usize,
    count: usize,
    outs: &mut [Out],
) -> Result<()> {
    let bytes = staged.as_bytes();
    for ((r, off), o) in results.iter().zip(&arena.outputs).zip(outs.iter_mut()) {
        let off = *off as usize;
        r.read(&bytes[off..off + count * r.bytes()], start, count, o)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::chunk_plan;

    #[test]
    fn chunk_plans_cover_the_batch_in_order() {
        let grid = (1..200).flat_map(|n| (1..40).map(move |c| (n, c)));
        for (n, c) in grid.chain([(4096, 1024), (65536, 12672), (1009, 7)]) {
            let plan = chunk_plan(n, c);
            let mut next = 0;
            for &(s, k) in &plan {
                assert_eq!(s, next, "{n} {c}");
                assert!(k >= 1 && k <= c, "{n} {c}: {plan:?}");
                next = s + k;
            }
            assert_eq!(next, n, "{n} {c}");
        }
        // Ramps at both ends, equal chunks between.
        assert_eq!(
            chunk_plan(4096, 1024),
            [
                (0, 256),
                (256, 512),
                (768, 854),
                (1622, 853),
                (2475, 853),
                (3328, 512),
                (3840, 256)
            ]
        );
        assert_eq!(chunk_plan(800, 1024), [(0, 800)]);
        // Too short for both ramps and a whole chunk: equal chunks.
        assert_eq!(chunk_plan(2000, 1024), [(0, 1000), (1000, 1000)]);
    }
}

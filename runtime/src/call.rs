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
use cudarc::driver::sys::{CUdeviceptr, CUevent};
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
/// what bounds a call (conversion, waiting for the GPU, or the driver calls). With
/// `BIGFUSE_TRACE=timeline` also each chunk's times on the host and on the GPU (timing events
/// around its upload, kernels and download), from the call's start.
#[derive(Default)]
struct Trace {
    on: bool,
    timeline: Option<Timeline>,
    stage: std::time::Duration,
    read: std::time::Duration,
    /// Staging and reading side by side.
    both: std::time::Duration,
    wait: std::time::Duration,
    enqueue: std::time::Duration,
}

impl Trace {
    fn new(gpu: &GpuDevice, main: &CudaStream) -> Result<Trace> {
        let what = std::env::var("BIGFUSE_TRACE").unwrap_or_default();
        let timeline = if what.contains("timeline") {
            let origin = Timeline::event(gpu)?;
            guarded("recording a timing event", || origin.record(main))?;
            Some(Timeline {
                origin,
                started: std::time::Instant::now(),
                chunks: Vec::new(),
            })
        } else {
            None
        };
        Ok(Trace {
            on: timeline.is_some() || what.contains("pipeline"),
            timeline,
            ..Default::default()
        })
    }

    /// The timing events of chunk `i` (created on first use), when the timeline is on.
    fn marks(&mut self, gpu: &GpuDevice, i: usize) -> Result<Option<&ChunkTimes>> {
        let Some(t) = &mut self.timeline else {
            return Ok(None);
        };
        while t.chunks.len() <= i {
            let mut events = Vec::with_capacity(6);
            for _ in 0..6 {
                events.push(Timeline::event(gpu)?);
            }
            t.chunks.push(ChunkTimes {
                events,
                staged_ms: 0.0,
                read_ms: 0.0,
            });
        }
        Ok(Some(&t.chunks[i]))
    }

    /// Notes the host's time now as chunk `i`'s staging end (`read` false) or reading end.
    fn host_mark(&mut self, i: usize, read: bool) {
        if let Some(t) = &mut self.timeline {
            let now = t.started.elapsed().as_secs_f64() * 1e3;
            if let Some(c) = t.chunks.get_mut(i) {
                if read {
                    c.read_ms = now;
                } else {
                    c.staged_ms = now;
                }
            }
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
        if let Some(t) = &self.timeline {
            for (i, c) in t.chunks.iter().enumerate() {
                let at = |e: &CudaEvent| t.origin.elapsed_ms(e).map_or(f32::NAN, |x| x);
                let e = &c.events;
                eprintln!(
                    "  chunk {i}: staged {:.3} | up {:.3}-{:.3} | kernels {:.3}-{:.3} | down {:.3}-{:.3} | read {:.3} (ms)",
                    c.staged_ms,
                    at(&e[0]),
                    at(&e[1]),
                    at(&e[2]),
                    at(&e[3]),
                    at(&e[4]),
                    at(&e[5]),
                    c.read_ms
                );
            }
        }
    }
}

/// Timing events of a traced call (`BIGFUSE_TRACE=timeline`).
struct Timeline {
    /// Recorded on the main stream when the call starts.
    origin: CudaEvent,
    started: std::time::Instant,
    chunks: Vec<ChunkTimes>,
}

impl Timeline {
    fn event(gpu: &GpuDevice) -> Result<CudaEvent> {
        guarded("creating a timing event", || {
            gpu.context()
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
        })
    }
}

/// One chunk's timing events (upload start and end, kernels start and end, download start and
/// end) and host times (staged, read), in ms from the call's start.
struct ChunkTimes {
    events: Vec<CudaEvent>,
    staged_ms: f64,
    read_ms: f64,
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
        let c = chunk_instances(moved, n as u64) as usize;
        let wave = program.instances_per_wave(gpu.target()) as usize;
        let plan = chunk_plan(n, c, wave);
        let largest = plan.iter().map(|&(_, k)| k).max().unwrap_or(1);
        let arena = Arena::new(program, params, results, args, largest as u64);
        let slots = plan.len().min(SLOTS);
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
        let outcome = self.run_chunks(outs, &arena, &plan, &mut ring);
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

    fn run_chunks(
        self,
        outs: &mut [Out],
        arena: &Arena,
        plan: &[(usize, usize)],
        ring: &mut [Ring],
    ) -> Result<()> {
        let n = self.n;
        let c = arena.c as usize;
        let chunks = plan.len();
        let slots = ring.len();
        let started = std::time::Instant::now();
        let gpu = self.gpu;
        let mut trace = Trace::new(gpu, gpu.stream())?;
        // One chunk: everything in order on the main stream, no events (the low-latency path).
        let single = chunks == 1;
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
                trace.host_mark(done, true);
                done += 1;
                continue;
            }
            let (start, count) = plan[staged];
            // Whether the oldest chunk in flight has its results on the host already.
            let ready = done < staged
                && guarded("querying a download", || {
                    ring[done % slots].downloaded.try_is_complete()
                })?;
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
                trace.host_mark(done, true);
                done += 1;
            } else {
                let staged_in = ring[staged % slots].staged_in.as_mut_bytes();
                trace.time(
                    |t| &mut t.stage,
                    || self.stage(arena, start, count, staged_in),
                )?;
            }
            let slot = &mut ring[staged % slots];
            // Raw handles: the events live in the trace until its report.
            let marks: Option<Vec<CUevent>> = trace
                .marks(gpu, staged)?
                .map(|m| m.events.iter().map(|e| e.cu_event()).collect());
            trace.host_mark(staged, false);
            trace.time(
                |t| &mut t.enqueue,
                || self.enqueue(arena, slot, &streams, start, count, marks.as_deref()),
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
        marks: Option<&[CUevent]>,
    ) -> Result<()> {
        // Timing events of a traced call: mark `k` recorded on `stream`.
        let mark = |k: usize, stream: &CudaStream| -> Result<()> {
            match marks {
                // SAFETY: the events are live (owned by the call's trace) and of this context.
                Some(m) => guarded("recording a timing event", || unsafe {
                    result::event::record(m[k], stream.cu_stream())
                }),
                None => Ok(()),
            }
        };
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
        mark(0, up)?;
        if in_bytes > 0 {
            // SAFETY: the staging holds `in_bytes` written bytes and stays untouched until the
            // slot's download (ordered after this upload) is complete; the arena holds them too.
            guarded("uploading arguments", || unsafe {
                result::memcpy_htod_async(base, &staged[..in_bytes], up.cu_stream())
            })?;
        }
        mark(1, up)?;
        if !single {
            guarded("ordering a chunk", || {
                slot.uploaded.record(up)?;
                main.wait(&slot.uploaded)
            })?;
        }
        mark(2, main)?;
        // SAFETY: the arena holds `c >= count` instances of every argument, result and
        // intermediate; batch arguments hold `n` instances (checked by the caller).
        unsafe { program.launch_raw(gpu, main, count as u64, &ins, &out_ptrs, temps)? };
        mark(3, main)?;
        if !single {
            guarded("ordering a chunk", || slot.computed.record(main))?;
        }
        if !single {
            // SAFETY: both handles are live events and streams of this context.
            guarded("ordering a chunk", || unsafe {
                result::stream::wait_event(
                    down.cu_stream(),
                    slot.computed.cu_event(),
                    cudarc::driver::sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                )
            })?;
        }
        mark(4, down)?;
        if direct.is_none() {
            let staged_out = slot.staged_out.as_mut_bytes();
            // SAFETY: as for the upload; the host reads the staging only after `downloaded`.
            guarded("downloading results", || unsafe {
                result::memcpy_dtoh_async(&mut staged_out[..out_bytes], out_base, down.cu_stream())
            })?;
        }
        mark(5, down)?;
        guarded("ordering a chunk", || slot.downloaded.record(down))
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

/// The chunks (first instance, count) of a batch of `n` instances, about `c` each. The first ones
/// are smaller (a quarter, then half a chunk), so that the GPU starts early instead of waiting for
/// a whole chunk to be staged and uploaded, and so are the last ones (half, then a quarter), so
/// that little is left to download and read once the host has staged everything; chunks in
/// between are of equal size. When a chunk holds 1.5 or more of the kernels' waves (`wave`
/// instances fill the GPU once), chunks are whole waves (the batch's last chunk takes the rest):
/// a partly idle last wave takes as long as a full one, which cost a kernel-bound call a fifth of
/// its kernel time with chunks of 1.6 waves (Poly at 2^15 bits on an H200, 2026-11-25). Below
/// that, rounding would drop the ramps (the first chunk would be a whole wave).
fn chunk_plan(n: usize, c: usize, wave: usize) -> Vec<(usize, usize)> {
    let unit = if wave >= 1 && 2 * c >= 3 * wave {
        wave
    } else {
        1
    };
    let per = ((c + unit / 2) / unit).max(1);
    let mut start = 0;
    plan_sizes(n.div_ceil(unit), per)
        .into_iter()
        .map(|k| {
            let chunk = (start, (k * unit).min(n - start));
            start += chunk.1;
            chunk
        })
        .collect()
}

/// Sizes of the chunks of `n` units, about `c` each, with the ramps of [`chunk_plan`].
fn plan_sizes(n: usize, c: usize) -> Vec<usize> {
    let c = c.max(1);
    let ramp: Vec<usize> = [c / 4, c / 2].into_iter().filter(|&k| k > 0).collect();
    let ramps: usize = 2 * ramp.iter().sum::<usize>();
    if n > c && n >= ramps + c {
        let middle = n - ramps;
        ramp.iter()
            .copied()
            .chain(even_split(middle, middle.div_ceil(c)))
            .chain(ramp.iter().rev().copied())
            .collect()
    } else {
        even_split(n, n.div_ceil(c)).collect()
    }
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
        let grid = (1..200).flat_map(|n| (1..40).flat_map(move |c| [1, 3, 8].map(|w| (n, c, w))));
        for (n, c, wave) in grid.chain([(4096, 1024, 264), (65536, 12672, 4224), (1009, 7, 1)]) {
            let plan = chunk_plan(n, c, wave);
            let whole_waves = 2 * c >= 3 * wave;
            let mut next = 0;
            for &(s, k) in &plan {
                assert_eq!(s, next, "{n} {c} {wave}");
                assert!(k >= 1, "{n} {c} {wave}: {plan:?}");
                if whole_waves {
                    assert_eq!(s % wave, 0, "{n} {c} {wave}: {plan:?}");
                    assert!(k <= c + wave / 2, "{n} {c} {wave}: {plan:?}");
                } else {
                    assert!(k <= c, "{n} {c} {wave}: {plan:?}");
                }
                next = s + k;
            }
            assert_eq!(next, n, "{n} {c} {wave}");
        }
        // Ramps at both ends, equal chunks between.
        assert_eq!(
            chunk_plan(4096, 1024, 1),
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
        assert_eq!(chunk_plan(800, 1024, 1), [(0, 800)]);
        // Too short for both ramps and a whole chunk: equal chunks.
        assert_eq!(chunk_plan(2000, 1024, 1), [(0, 1000), (1000, 1000)]);
        // Whole waves of 264 (16 waves, the last one partial): chunks of 4 waves, ramps of 1
        // and 2.
        let waves: Vec<usize> = chunk_plan(4096, 1024, 264)
            .iter()
            .map(|&(_, k)| k.div_ceil(264))
            .collect();
        assert_eq!(waves, [1, 2, 4, 3, 3, 2, 1]);
        // Chunks of 1.94 waves: 2 waves each, a one-wave ramp.
        let waves: Vec<usize> = chunk_plan(4096, 1024, 528)
            .iter()
            .map(|&(_, k)| k.div_ceil(528))
            .collect();
        assert_eq!(waves, [1, 2, 2, 2, 1]);
        // A chunk below 1.5 waves: no rounding.
        assert_eq!(chunk_plan(4096, 1024, 700), chunk_plan(4096, 1024, 1));
    }
}

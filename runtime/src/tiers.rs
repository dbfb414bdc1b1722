//! Tiered compilation. NVRTC's time grows with a kernel's straight-line code, and the tuned
//! kernels are long on purpose (register blocks of unrolled products, unrolled NTT passes): a
//! first call of Poly at 2^15 bits waited 1.0-1.3 s for NVRTC on an H200's host, at 2^11 bits
//! about 10 s. So a call whose tuned kernel is not compiled yet, and would take long, is served
//! by the same program's compact schedule where one compiles clearly faster
//! ([`Hints::compact`](bigfuse_codegen::Hints::compact), [`pays`]: a fraction of the compile
//! time, a slower kernel, the same results), while the tuned kernel's CUDA compiles on a
//! background thread into the caches; the first call after that loads it and every later call
//! uses it.
//!
//! `BIGFUSE_TIERS` chooses ([`Mode`]): unset as above; `0`, `off` or `tuned`: every call waits
//! for the tuned kernel; `compact`: the compact forms wherever one [`pays`] (to test them).
//! [`Kernel::prepare`](crate::Kernel::prepare) always returns the tuned kernel (waiting for a
//! background compilation rather than repeating it), so code that times kernels, or wants the
//! tuned one before its first call, prepares first.

use std::sync::{Condvar, Mutex, Once};
use std::time::Duration;

/// Which compiled form of a program serves a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// The compact schedule ([`Hints::compact`](bigfuse_codegen::Hints::compact)), while the
    /// tuned kernel compiles in the background.
    Compact,
    /// The schedule of the cost model (or of the caller's hints).
    Tuned,
}

/// How calls choose their tier: `BIGFUSE_TIERS`, read once per process ([`mode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The compact form serves first calls while the tuned kernel compiles (the default).
    Auto,
    /// Every call waits for the tuned kernel (`0`, `off` or `tuned`).
    TunedOnly,
    /// Calls use the compact form wherever one [`pays`], whatever the caches hold or the
    /// kernel's size (`compact`: to test the compact forms).
    CompactOnly,
}

/// This process's [`Mode`], read from `BIGFUSE_TIERS` on first use (a call reads it, so it is
/// not read from the environment on every call).
pub fn mode() -> Mode {
    static MODE: std::sync::OnceLock<Mode> = std::sync::OnceLock::new();
    *MODE.get_or_init(
        || match std::env::var("BIGFUSE_TIERS").as_deref().map(str::trim) {
            Ok("0" | "tuned" | "off") => Mode::TunedOnly,
            Ok("compact") => Mode::CompactOnly,
            _ => Mode::Auto,
        },
    )
}

/// Tuned CUDA sources shorter than this (all of a plan's kernels together) compile in well under
/// 0.3 s (an addition at 4096 bits, 2.5 KB: 12-40 ms on an H200's host), so a first call waits
/// for them rather than compile twice. A 4096-bit product's 26 KB took 0.25-0.4 s.
pub const TIER_FROM_BYTES: usize = 16 << 10;

/// How much more NVRTC time a byte of CUDA that runs NTT transforms costs than a byte of classical
/// products: Poly at 2^18 bits is 70 KB of CUDA tuned (NTT), 2.0 s on an H200's host, and 63 KB
/// compact (classical), 0.5 s (eleventh session); weighing by bytes alone, a change of a few
/// hundred bytes in the tuned NTT kernel turned its compact form off (twelfth session).
pub const TRANSFORM_BYTE_WEIGHT: usize = 3;

/// A kernel's CUDA as NVRTC's time sees it: its bytes, weighted by [`TRANSFORM_BYTE_WEIGHT`] where
/// the kernel runs transforms (it reads twiddle tables).
pub fn compile_weight(bytes: usize, transforms: bool) -> usize {
    if transforms {
        bytes * TRANSFORM_BYTE_WEIGHT
    } else {
        bytes
    }
}

/// A plan's CUDA as NVRTC's time sees it: the [`compile_weight`]s of its kernels (a kernel runs
/// transforms where it reads twiddle tables).
pub fn plan_weight(plan: &bigfuse_codegen::Plan) -> usize {
    plan.parts
        .iter()
        .map(|p| compile_weight(p.compiled.source.len(), !p.compiled.tables.is_empty()))
        .sum()
}

/// Whether a compact form of `compact` [`compile_weight`] is worth compiling before the tuned one
/// of `tuned`: at least a tenth cheaper. The weight is only a proxy for NVRTC's time, but it
/// rejects the forms that are longer (one-thread divisions spread over threads grow 2-10x).
pub fn pays(tuned: usize, compact: usize) -> bool {
    compact * 10 <= tuned * 9
}

/// Where a program's background compilation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Background {
    Idle,
    Running,
    /// Finished: the tuned binaries are in the caches (or NVRTC failed, and loading the tuned
    /// kernel reports why).
    Done,
}

/// One program's background compilation, waited on by [`Kernel::prepare`](crate::Kernel::prepare).
pub(crate) struct Progress {
    state: Mutex<Background>,
    changed: Condvar,
}

impl Default for Progress {
    fn default() -> Progress {
        Progress {
            state: Mutex::new(Background::Idle),
            changed: Condvar::new(),
        }
    }
}

impl Progress {
    pub(crate) fn get(&self) -> Background {
        *self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Moves Idle -> Running; false if a compilation was started before.
    pub(crate) fn start(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let idle = *s == Background::Idle;
        if idle {
            *s = Background::Running;
        }
        idle
    }

    pub(crate) fn set(&self, to: Background) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = to;
        self.changed.notify_all();
    }

    /// Returns once no compilation is running.
    pub(crate) fn wait(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while *s == Background::Running {
            s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Background compilations in flight in this process.
static IN_FLIGHT: Mutex<usize> = Mutex::new(0);
static ALL_DONE: Condvar = Condvar::new();

/// The longest a process's exit waits for its background compilations.
const EXIT_WAIT: Duration = Duration::from_secs(120);

extern "C" {
    fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
}

/// Runs at the process's exit: waits for the background compilations in flight. Exiting under a
/// thread that is inside NVRTC would tear the library down beneath it; waiting also leaves the
/// tuned binaries in the disk cache for the next process.
extern "C" fn wait_at_exit() {
    let mut n = IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
    while *n > 0 {
        let (next, timeout) = ALL_DONE
            .wait_timeout(n, EXIT_WAIT)
            .unwrap_or_else(|p| p.into_inner());
        n = next;
        if timeout.timed_out() {
            break;
        }
    }
}

/// Registers [`wait_at_exit`] (once per process). Exit handlers run in the reverse order of their
/// registration, and NVRTC registers some of its own (its teardown) during its first compilation,
/// not when it is loaded: so this is called when a compilation has returned, and a process exits
/// only after some compilation has returned (a first call waits for the compact form's, or for
/// the tuned one's when the compact form fails). Registered at the first `spawn` instead, before
/// the first compilation, it ran after NVRTC's teardown, and a test process that exited during a
/// background compilation crashed (H200, 2026-11-27).
pub(crate) fn wait_for_background_at_exit() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: `wait_at_exit` is a plain function that only takes a lock and waits.
        unsafe {
            atexit(wait_at_exit);
        }
    });
}

/// Runs `job` on a thread of its own; false if no thread could be started (the caller then does
/// the work itself).
pub(crate) fn spawn(job: impl FnOnce() + Send + 'static) -> bool {
    *IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner()) += 1;
    let started = std::thread::Builder::new()
        .name("bigfuse-tuned-compile".into())
        .spawn(move || {
            // A panic in the job still counts it finished, so that exit does not wait for it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            finished();
        });
    if started.is_err() {
        finished();
    }
    started.is_ok()
}

fn finished() {
    let mut n = IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
    *n -= 1;
    ALL_DONE.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn progress_starts_once_and_wait_returns_when_done() {
        let p = Arc::new(Progress::default());
        assert_eq!(p.get(), Background::Idle);
        p.wait(); // nothing running: returns at once
        assert!(p.start());
        assert!(!p.start(), "a second start must not start another compile");
        assert_eq!(p.get(), Background::Running);
        let q = p.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            q.set(Background::Done);
        });
        let t = Instant::now();
        p.wait();
        assert_eq!(p.get(), Background::Done);
        assert!(t.elapsed() >= Duration::from_millis(40));
        setter.join().unwrap();
        assert!(!p.start(), "done is not idle");
    }

    fn in_flight() -> usize {
        *IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn until_none_in_flight() {
        let t = Instant::now();
        while in_flight() > 0 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "a job never finished"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn background_jobs_run_and_are_counted_until_they_end_even_by_a_panic() {
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        assert!(spawn(move || r.store(true, Ordering::SeqCst)));
        until_none_in_flight();
        assert!(ran.load(Ordering::SeqCst));
        // A panicking job still counts as finished, so that a process's exit does not wait for it.
        assert!(spawn(|| panic!("a job that fails")));
        until_none_in_flight();
        // What the exit handler does returns at once with nothing in flight.
        wait_at_exit();
    }

    /// CUDA that NVRTC takes a while over (a long unrolled chain), so that the process exits
    /// while it compiles.
    fn slow_source(tag: u32) -> String {
        let mut s = format!(
            "extern \"C\" __global__ void slow_{tag}(unsigned long long* x) {{\n    unsigned long long a = x[threadIdx.x], b = a ^ {tag}ull;\n"
        );
        for i in 0..1500u64 {
            s += &format!(
                "    a = a * 0x9E3779B97F4A7C15ull + (b >> {});\n    b ^= a + {i}ull;\n",
                i % 61 + 1
            );
        }
        s + "    x[threadIdx.x] = a + b;\n}\n"
    }

    /// Run only by `a_process_exits_cleanly_during_a_background_compile`, in a child process: a
    /// background compilation starts, a short one runs on this thread (the order of a first call:
    /// the tuned kernel starts compiling, then the compact one), and the process exits while the
    /// background one still compiles.
    #[test]
    #[ignore = "the child process of a_process_exits_cleanly_during_a_background_compile"]
    fn exit_during_a_background_compile_child() {
        let Ok(tag) = std::env::var("BIGFUSE_EXIT_CHILD_TAG") else {
            return;
        };
        let tag: u32 = tag.parse().unwrap();
        assert!(spawn(move || {
            let _ = crate::nvrtc::compile(&slow_source(tag), &format!("slow_{tag}"), "sm_90");
        }));
        crate::nvrtc::compile_uncached(
            "extern \"C\" __global__ void k(int* x) { *x = 1; }",
            "k",
            "sm_90",
        )
        .unwrap();
        assert!(
            in_flight() > 0,
            "the background compilation ended too soon to test the exit"
        );
    }

    /// A process that exits while a background compilation runs waits for it (the tuned binary
    /// lands in the disk cache) and exits cleanly. With the exit handler registered before the
    /// first compilation, NVRTC's own teardown ran first and the process crashed (H200, and
    /// here, 2026-11-27).
    #[test]
    fn a_process_exits_cleanly_during_a_background_compile() {
        if !crate::nvrtc::available() {
            eprintln!("skipped: no NVRTC library on this machine");
            return;
        }
        let dir = std::env::temp_dir().join(format!("bigfuse-exit-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let tag = std::process::id() % 100_000;
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "tiers::tests::exit_during_a_background_compile_child",
                "--test-threads",
                "1",
            ])
            .env("BIGFUSE_EXIT_CHILD_TAG", tag.to_string())
            .env("BIGFUSE_CACHE_DIR", &dir)
            .env("CUDA_CACHE_DISABLE", "1")
            .output()
            .unwrap();
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success(),
            "the child failed ({}):\n{log}",
            out.status
        );
        assert!(
            log.contains("1 passed"),
            "the child test did not run:\n{log}"
        );
        let cached = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            cached >= 1,
            "the exit did not wait for the background compilation (nothing in the disk cache)"
        );
    }

    #[test]
    fn a_form_pays_when_a_tenth_cheaper() {
        // Poly at 2^18 bits: the NTT kernel tuned, classical products compact.
        let (tuned, compact) = (compile_weight(69_000, true), compile_weight(63_091, false));
        assert!(pays(tuned, compact));
        assert!(!pays(69_000, 63_091), "by bytes alone it would not");
        assert!(!pays(10_239, 44_829)); // a one-thread division spread over threads
        assert!(!pays(1000, 1000));
    }
}

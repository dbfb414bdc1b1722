//! Bad input gives an error value that says what to do, never a panic or a wrong number.

mod common;

use bigfuse::{BigUint, Device, Error};
use common::kernels::*;

fn devices() -> Vec<Device> {
    let mut d = vec![Device::cpu(), Device::cpu_lowered()];
    if let Some(g) = bigfuse::runtime::gpu_for_tests().expect("BIGFUSE_REQUIRE_GPU=1 but no GPU") {
        d.push(Device::Gpu(g));
    }
    d
}

#[test]
fn values_wider_than_bits_are_refused_not_truncated() {
    for dev in devices() {
        let ok = vec![BigUint::from(1u8); 3];
        let mut wide = ok.clone();
        wide[2] = BigUint::from(1u8) << 256u32;
        let e = add::run(&dev, 256, &ok, &wide).unwrap_err();
        assert!(
            matches!(
                e,
                Error::ValueTooWide {
                    index: 2,
                    bits: 257,
                    max: 256,
                    ..
                }
            ),
            "{e}"
        );
        let msg = e.to_string();
        assert!(msg.contains("`b`") && msg.contains("U<256>"), "{msg}");
    }
}

#[test]
fn batches_of_different_lengths_are_refused() {
    for dev in devices() {
        let none: &[BigUint] = &[];
        let e = sub::run(&dev, 128, &[BigUint::from(1u8)], none).unwrap_err();
        assert!(
            matches!(
                e,
                Error::BatchMismatch {
                    first_len: 1,
                    other_len: 0,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("one value per instance"));
    }
}

#[test]
fn sizes_that_are_not_whole_limbs_are_refused() {
    for dev in devices() {
        for bits in [0u64, 100, 65] {
            let none: &[BigUint] = &[];
            let e = add::run(&dev, bits, none, none).unwrap_err();
            assert!(matches!(e, Error::Ir(_)), "{e}");
            assert!(e.to_string().contains("multiple of 64"), "{e}");
        }
    }
}

#[test]
fn a_size_too_large_for_one_block_is_an_error_on_the_gpu_path() {
    // The compiler refuses (it does not emit a kernel that cannot run); the CPU backend has no
    // limit. Sums of 2^24 bits span blocks; held to one block (`span=1`) they do not fit, and
    // products that large do not fit one kernel (a plan splits them: tests/huge_products.rs).
    let h100 = bigfuse::Target::h100();
    let one_block: bigfuse::Hints = "span=1".parse().unwrap();
    let e = add::kernel()
        .unwrap()
        .compile(&[1 << 24], &h100, &one_block)
        .unwrap_err();
    assert!(e.to_string().contains("kernel too big"), "{e}");
    assert!(add::kernel()
        .unwrap()
        .compile(&[1 << 24], &h100, &Default::default())
        .is_ok());
    let e = mul::kernel()
        .unwrap()
        .compile(&[1 << 22], &h100, &Default::default())
        .unwrap_err();
    assert!(e.to_string().contains("kernel too big"), "{e}");
}

#[test]
fn no_gpu_is_an_error_value_and_auto_falls_back() {
    match Device::gpu(0) {
        Ok(d) => assert!(d.is_gpu()),
        Err(e) => {
            assert!(
                matches!(
                    e,
                    Error::NoDriver | Error::OldDriver { .. } | Error::NoGpu(_) | Error::NoCuda
                ),
                "{e}"
            );
            let auto = Device::auto().unwrap();
            if std::env::var("BIGFUSE_DEVICE").is_err() {
                assert!(!auto.is_gpu());
                assert!(auto.to_string().contains("no GPU"), "{auto}");
            }
        }
    }
}

#[test]
fn a_missing_nvrtc_library_is_an_error_value() {
    // In a child process whose library path has no NVRTC: the compile reports NoNvrtc, no panic.
    if std::env::var("BIGFUSE_TEST_CHILD").as_deref() == Ok("no_nvrtc") {
        let k = add::kernel().unwrap();
        let c = k
            .compile(&[256], &bigfuse::Target::h100(), &Default::default())
            .unwrap();
        match bigfuse::runtime::nvrtc::compile_uncached(&c.source, &c.kernel_name, "sm_90") {
            Err(e @ Error::NoNvrtc(_)) => println!("CHILD: NoNvrtc: {e}"),
            Err(Error::NoCuda) if !cfg!(feature = "cuda") => println!("CHILD: NoCuda"),
            Ok(_) => println!("CHILD: NVRTC found on the system path"),
            Err(e) => println!("CHILD: unexpected {e}"),
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "a_missing_nvrtc_library_is_an_error_value",
            "--nocapture",
        ])
        .env("BIGFUSE_TEST_CHILD", "no_nvrtc")
        .env("LD_LIBRARY_PATH", "")
        .env_remove("BIGFUSE_NVRTC")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the child must not crash: {text}");
    // Machines with a system-wide NVRTC (GPU machines) cannot hide it; others must say NoNvrtc.
    assert!(
        text.contains("CHILD: NoNvrtc")
            || text.contains("CHILD: NVRTC found on the system path")
            || text.contains("CHILD: NoCuda"),
        "{text}"
    );
    if text.contains("CHILD: NoNvrtc") {
        // What was looked for, and how to install either major version.
        for what in [
            "libnvrtc.so.13",
            "libnvrtc.so.12",
            "nvidia-cuda-nvrtc==13",
            "-cu12",
        ] {
            assert!(text.contains(what), "{what}: {text}");
        }
    }
}

#[test]
fn nvrtc_failures_carry_the_log_and_the_source() {
    if !bigfuse::runtime::nvrtc::available() {
        eprintln!("NVRTC not available: nothing to fail");
        return;
    }
    let src = "extern \"C\" __global__ void bf_broken() { this is not CUDA; }";
    match bigfuse::runtime::nvrtc::compile_uncached(src, "bf_broken", "sm_90") {
        Err(Error::Compile { kernel, path, log }) => {
            assert_eq!(kernel, "bf_broken");
            assert!(log.contains("error"), "{log}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), src);
            let msg = Error::Compile {
                kernel,
                path: path.clone(),
                log,
            }
            .to_string();
            assert!(msg.contains(&path.display().to_string()), "{msg}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

/// A division of big integers runs in one block per instance.
#[bigfuse::kernel]
fn quotient(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a / b
}

#[test]
fn a_kernel_too_big_even_after_splitting_is_an_error() {
    // One division of 2^24-bit numbers: no split can help a single operation that does not span
    // blocks. (Products that large go over global memory, tests/huge_products.rs; shifts by a
    // run-time amount read the operand in global memory, tests/spanning.rs.)
    let k = quotient::kernel().unwrap();
    let e = k
        .plan(&[1 << 24], &bigfuse::Target::h100(), &Default::default())
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("kernel too big") && msg.contains("even one operation"),
        "{msg}"
    );
}

#[test]
fn out_of_device_memory_is_an_error_value() {
    let Some(gpu) = bigfuse::runtime::gpu_for_tests().expect("BIGFUSE_REQUIRE_GPU=1 but no GPU")
    else {
        return;
    };
    // 2^45 words = 256 TiB: more than any GPU has.
    match gpu.alloc(1usize << 45, "a huge batch") {
        Err(Error::OutOfMemory { bytes, .. }) => assert_eq!(bytes, 8usize << 45),
        Err(e) => panic!("expected OutOfMemory, got {e}"),
        Ok(_) => panic!("256 TiB were allocated"),
    }
}

#[test]
fn no_panic_crosses_the_api() {
    // Random sequences of calls, valid and not: every one returns Ok or Err, none panics.
    let mut r = bigfuse::fuzz::Rng::new(7);
    let sizes = [0u64, 1, 63, 64, 100, 192, 4096, 1 << 20, u64::MAX];
    let devs = [Device::cpu(), Device::cpu_lowered()];
    for _ in 0..300 {
        let bits = sizes[r.below(sizes.len() as u64) as usize];
        let dev = &devs[r.below(2) as usize];
        let n = r.below(4) as usize;
        let m = if r.chance(20) { n + 1 } else { n };
        let wide = r.chance(20);
        let a: Vec<BigUint> = (0..n)
            .map(|i| {
                if wide {
                    BigUint::from(1u8) << (bits.min(1 << 16) as u32 + 1)
                } else {
                    BigUint::from(i as u64 * 977)
                }
            })
            .collect();
        let b: Vec<BigUint> = (0..m).map(|i| BigUint::from(i as u64 + 5)).collect();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = match r.below(6) {
                0 => add::run(dev, bits, &a, &b).map(|_| ()),
                1 => sub::run(dev, bits, &a, &b).map(|_| ()),
                2 => compare::run(dev, bits, &a, &b).map(|_| ()),
                3 => mul::run(dev, bits.min(1 << 12), &a, &b).map(|_| ()),
                4 => six_add::explain(dev, bits).map(|_| ()),
                _ => add::cuda(&bigfuse::Target::h100(), bits).map(|_| ()),
            };
        }));
        assert!(
            result.is_ok(),
            "a call panicked at {bits} bits, batch {n}/{m}"
        );
    }
}

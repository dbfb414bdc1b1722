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
        let e = sub::run(&dev, 128, &[BigUint::from(1u8)], &[]).unwrap_err();
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
            let e = add::run(&dev, bits, &[], &[]).unwrap_err();
            assert!(matches!(e, Error::Ir(_)), "{e}");
            assert!(e.to_string().contains("multiple of 64"), "{e}");
        }
    }
}

#[test]
fn a_size_too_large_for_one_block_is_an_error_on_the_gpu_path() {
    // The compiler refuses (it does not emit a kernel that cannot run); the CPU backend has no limit.
    let k = add::kernel().unwrap();
    let e = k
        .compile(&[1 << 24], &bigfuse::Target::h100(), &Default::default())
        .unwrap_err();
    assert!(e.to_string().contains("kernel too big"), "{e}");
}

#[test]
fn no_gpu_is_an_error_value_and_auto_falls_back() {
    match Device::gpu(0) {
        Ok(d) => assert!(d.is_gpu()),
        Err(e) => {
            assert!(matches!(e, Error::NoDriver | Error::NoGpu(_)), "{e}");
            let auto = Device::auto().unwrap();
            if std::env::var("BIGFUSE_DEVICE").is_err() {
                assert!(!auto.is_gpu());
                assert!(auto.to_string().contains("no GPU"), "{auto}");
            }
        }
    }
}

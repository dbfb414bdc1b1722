//! Products against num-bigint: truncated (`a * b`), full (`a.mul_wide(b)`), the paper's Poly, a
//! product of computed operands and sums of two products, on the CPU backend (both evaluators)
//! always and on the GPU whenever one is present.

mod common;

use bigfuse::{BigUint, Device};
use common::kernels::*;
use common::*;
use proptest::prelude::*;

fn check_mul(dev: &Device, bits: u64, a: &[BigUint], b: &[BigUint]) {
    let m = modulus(bits);
    let ctx = |what: &str, i: usize| {
        format!(
            "{what} at {bits} bits on {dev}, instance {i}: a={:x} b={:x}",
            a[i], b[i]
        )
    };
    let r = mul::run(dev, bits, a, b).unwrap();
    for i in 0..a.len() {
        assert_eq!(r[i], (&a[i] * &b[i]) % &m, "{}", ctx("a * b", i));
    }
    let r = mul_wide::run(dev, bits, a, b).unwrap();
    for i in 0..a.len() {
        assert_eq!(r[i], &a[i] * &b[i], "{}", ctx("a.mul_wide(b)", i));
    }
    let r = square::run(dev, bits, a).unwrap();
    for i in 0..a.len() {
        assert_eq!(r[i], (&a[i] * &a[i]) % &m, "{}", ctx("a * a", i));
    }
    let r = poly::run(dev, bits, a, b).unwrap();
    for i in 0..a.len() {
        let (x, y) = (&a[i], &b[i]);
        let want = ((x * x + y) * (y * y + y) + x * y) % &m;
        assert_eq!(r[i], want, "{}", ctx("poly", i));
    }
    let r = staged_product::run(dev, bits, a, b).unwrap();
    for i in 0..a.len() {
        let s = (&a[i] + &b[i]) % &m;
        let d = (&b[i] + &m - &a[i]) % &m;
        assert_eq!(r[i], (&s * d + &s) % &m, "{}", ctx("staged_product", i));
    }
    let r = product_sum::run(dev, bits, a, b).unwrap();
    for i in 0..a.len() {
        let s = (&a[i] + &b[i]) % &m;
        let want = (&a[i] * &b[i] + &s * &s) % &m;
        assert_eq!(r[i], want, "{}", ctx("product_sum", i));
    }
    let r = square_sum::run(dev, bits, a, b).unwrap();
    for i in 0..a.len() {
        let d = (&a[i] + &m - &b[i]) % &m;
        let want = (&a[i] * &a[i] + &b[i] * d) % &m;
        assert_eq!(r[i], want, "{}", ctx("square_sum", i));
    }
    let r = product_sum3::run(dev, bits, a, b).unwrap();
    for i in 0..a.len() {
        let d = (&b[i] + &m - &a[i]) % &m;
        let want = (&a[i] * &b[i] + &a[i] * &a[i] + d * &b[i]) % &m;
        assert_eq!(r[i], want, "{}", ctx("product_sum3", i));
    }
}

fn gpu() -> Option<Device> {
    bigfuse::runtime::gpu_for_tests()
        .expect("BIGFUSE_REQUIRE_GPU=1 but no GPU could be used")
        .map(Device::Gpu)
}

#[test]
fn cpu_every_size() {
    for &bits in SIZES {
        let (a, b) = operand_pairs(bits, 0, 5);
        let n = if bits > 16384 { 6 } else { 30.min(a.len()) };
        let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
        check_mul(&Device::cpu(), bits, a, b);
        if bits <= 4096 {
            check_mul(&Device::cpu_lowered(), bits, a, b);
        }
    }
}

#[test]
fn edge_cases_on_every_backend() {
    let mut devs = vec![Device::cpu(), Device::cpu_lowered()];
    devs.extend(gpu());
    for dev in &devs {
        for bits in [64u64, 128, 192, 2048, 3008] {
            let edges = edge_values(bits);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for x in &edges {
                for y in &edges {
                    a.push(x.clone());
                    b.push(y.clone());
                }
            }
            check_mul(dev, bits, &a, &b);
        }
    }
}

#[test]
fn gpu_every_size() {
    let Some(dev) = gpu() else { return };
    for &bits in SIZES {
        let (a, b) = operand_pairs(bits, 301, 6);
        check_mul(&dev, bits, &a, &b);
    }
}

/// Issue 14's spill bar as the driver reports it: 1-Mul and Poly without local memory from 2^9
/// to 2^18 bits.
/// Where Poly's held form spills, the runtime loads its second form and says so: thread
/// coordinates read where used (several threads per instance, 2^12..2^18), or the parameters'
/// words parked in shared memory (one thread, 2^10 / 2^11).
#[test]
fn products_without_local_memory_on_the_gpu() {
    let Some(Device::Gpu(gpu)) = gpu() else {
        return;
    };
    for log in 9..=18 {
        let bits = 1u64 << log;
        let program = mul::kernel().unwrap().prepare(&gpu, &[bits]).unwrap();
        for k in &program.parts {
            assert_eq!(k.resources.local_bytes, 0, "1-Mul at {bits} bits");
        }
        let program = poly::kernel().unwrap().prepare(&gpu, &[bits]).unwrap();
        for k in &program.parts {
            let c = &k.compiled;
            let why = k.form.as_deref().unwrap_or_default();
            if bits == 2048 {
                // Held, its values spill (880 bytes a thread, NVRTC 13.0); parked, none.
                assert!(c.schedule.park_values, "{why}");
            }
            assert_eq!(k.resources.local_bytes, 0, "Poly at {bits} bits: {why}");
            if c.schedule.read_coordinates {
                assert!(
                    why.starts_with("thread coordinates read where used"),
                    "{why}"
                );
                assert!(c.source.contains("bf_tid()"));
            } else if c.schedule.park_values {
                assert!(
                    why.starts_with("parameters parked in shared memory"),
                    "{why}"
                );
                assert_eq!(c.schedule.threads_per_instance, 1);
                assert!(c.placement.parks.len() == 1);
            } else {
                assert!(k.form.is_none(), "{:?}", k.form);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_sizes_cpu(limbs in 1u64..=40, seed in any::<u64>(), n in 1usize..8) {
        let bits = limbs * 64;
        let mut r = rng(seed);
        let a: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
        let b: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
        check_mul(&Device::cpu_lowered(), bits, &a, &b);
    }
}

proptest! {
    // Each case compiles three kernels (Poly has four products): few cases, sizes up to 2^16 bits.
    #![proptest_config(ProptestConfig::with_cases(10))]

    #[test]
    fn random_sizes_gpu(limbs in 1u64..=1024, seed in any::<u64>(), n in 1usize..100) {
        let Some(dev) = gpu() else { return Ok(()) };
        let bits = limbs * 64;
        let mut r = rng(seed);
        let a: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
        let b: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
        check_mul(&dev, bits, &a, &b);
    }
}

//! Products of integers too long for one block: the plan cuts each product into the three kernels
//! of an NTT over global memory and the addition of its column sums (codegen/src/ntt_global.rs),
//! and whole programs (Poly) around them. Every result against num-bigint, with batches of 1 and
//! 3; on the GPU from 2^19 to 2^26 bits and at an odd size, on the CPU backend at the smallest.

mod common;

use bigfuse::prelude::*;
use bigfuse::{BigUint, Hints, Target};
use common::kernels::{mul, mul_wide, poly, square};
use common::{all_ones, modulus, random_big, rng};

/// Operands for `count` instances: all ones times all ones (every column sum at its largest),
/// one times a value, then random values.
fn operands(bits: u64, count: usize, seed: u64) -> (Vec<BigUint>, Vec<BigUint>) {
    let mut r = rng(seed ^ bits);
    (0..count)
        .map(|i| match i {
            0 => (all_ones(bits), all_ones(bits)),
            1 => (BigUint::from(1u8), random_big(&mut r, bits)),
            _ => (random_big(&mut r, bits), random_big(&mut r, bits)),
        })
        .unzip()
}

fn check_products(dev: &Device, bits: u64, count: usize, whole: bool) {
    let (a, b) = operands(bits, count, 11);
    let m = modulus(bits);
    let p = mul::run(dev, bits, &a, &b).unwrap();
    let s = square::run(dev, bits, &a).unwrap();
    for i in 0..count {
        assert!(
            p[i] == (&a[i] * &b[i]) % &m,
            "a * b at {bits} bits, instance {i} of {count}, on {dev}"
        );
        assert!(
            s[i] == (&a[i] * &a[i]) % &m,
            "a * a at {bits} bits, instance {i} of {count}, on {dev}"
        );
    }
    if whole {
        let w = mul_wide::run(dev, bits, &a, &b).unwrap();
        let q = poly::run(dev, bits, &a, &b).unwrap();
        for i in 0..count {
            assert!(
                w[i] == &a[i] * &b[i],
                "a.mul_wide(b) at {bits} bits, instance {i} of {count}, on {dev}"
            );
            let (x, y) = (&a[i], &b[i]);
            let want = ((x * x + y) * (y * y + y) + x * y) % &m;
            assert!(
                q[i] == want,
                "Poly at {bits} bits, instance {i} of {count}, on {dev}"
            );
        }
    }
}

/// The plans the tests rely on, and every kernel of them through NVRTC.
#[test]
fn huge_products_go_over_global_memory() {
    for bits in [1u64 << 19, (1 << 22) + 1088, 1 << 26] {
        let plan = mul::kernel()
            .unwrap()
            .plan(&[bits], &Target::h100(), &Hints::default())
            .unwrap();
        assert_eq!(plan.parts.len(), 4, "{bits} bits");
        let text = plan.explain();
        assert!(text.contains("a product over global memory"), "{text}");
        common::nvrtc_compiles(mul::kernel().unwrap(), &[bits]);
    }
    // Poly: four products over global memory, the sums between them block-spanning kernels.
    let plan = poly::kernel()
        .unwrap()
        .plan(&[1 << 20], &Target::h100(), &Hints::default())
        .unwrap();
    let ntt_parts = plan
        .parts
        .iter()
        .filter(|p| p.compiled.kernel_name.contains("_ntt_"))
        .count();
    assert_eq!(ntt_parts, 4 * 3, "{}", plan.explain());
    common::nvrtc_compiles(poly::kernel().unwrap(), &[1 << 20]);
    common::nvrtc_compiles(mul_wide::kernel().unwrap(), &[(1 << 19) + 1088]);
}

#[test]
fn huge_products_equal_num_bigint() {
    for count in [1, 3] {
        check_products(&Device::cpu(), 1 << 19, count, true);
    }
    if let Some(gpu) = common::gpu() {
        for bits in [1u64 << 19, 1 << 20, (1 << 22) + 1088] {
            for count in [1, 3] {
                check_products(&gpu, bits, count, true);
            }
        }
        for bits in [1u64 << 22, 1 << 24, 1 << 26] {
            for count in [1, 3] {
                check_products(&gpu, bits, count, false);
            }
        }
    }
}

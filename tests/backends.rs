//! Every add/sub/compare/select kernel against num-bigint, on the CPU backend (reference and
//! lowered evaluators) always, and on the GPU whenever one is present (BIGFUSE_REQUIRE_GPU=1 makes
//! a missing GPU a failure).

mod common;

use bigfuse::{BigUint, Device};
use common::kernels::*;
use common::*;
use proptest::prelude::*;

/// Runs every test kernel on `dev` for these operands and compares with num-bigint.
fn check_all(dev: &Device, bits: u64, a: &[BigUint], b: &[BigUint]) {
    let n = a.len();
    let ctx = |what: &str, i: usize| {
        format!(
            "{what} at {bits} bits on {dev}, instance {i}: a={:x} b={:x}",
            a[i], b[i]
        )
    };

    let r = add::run(dev, bits, a, b).unwrap();
    assert_eq!(r.len(), n);
    for i in 0..n {
        assert_eq!(r[i], wrap_add(&a[i], &b[i], bits), "{}", ctx("add", i));
    }
    let r = sub::run(dev, bits, a, b).unwrap();
    for i in 0..n {
        assert_eq!(r[i], wrap_sub(&a[i], &b[i], bits), "{}", ctx("sub", i));
    }
    let (lt, le, gt, ge, eq, ne) = compare::run(dev, bits, a, b).unwrap();
    for i in 0..n {
        let want = (
            a[i] < b[i],
            a[i] <= b[i],
            a[i] > b[i],
            a[i] >= b[i],
            a[i] == b[i],
            a[i] != b[i],
        );
        assert_eq!(
            (lt[i], le[i], gt[i], ge[i], eq[i], ne[i]),
            want,
            "{}",
            ctx("compare", i)
        );
    }
    let (s, carry, min) = add_carry_min::run(dev, bits, a, b).unwrap();
    for i in 0..n {
        let full = &a[i] + &b[i];
        assert_eq!(
            s[i],
            &full % modulus(bits),
            "{}",
            ctx("add_carry_min.sum", i)
        );
        assert_eq!(
            carry[i],
            full >= modulus(bits),
            "{}",
            ctx("add_carry_min.carry", i)
        );
        assert_eq!(
            min[i],
            a[i].clone().min(b[i].clone()),
            "{}",
            ctx("add_carry_min.min", i)
        );
    }
    let r = six_add::run(dev, bits, a, b).unwrap();
    for i in 0..n {
        let want = (BigUint::from(6u8) * &a[i] + BigUint::from(10u8) * &b[i]) % modulus(bits);
        assert_eq!(r[i], want, "{}", ctx("six_add", i));
    }
    let k: Vec<u64> = (0..n as u64)
        .map(|i| i.wrapping_mul(0x9e3779b97f4a7c15))
        .collect();
    let (d, f) = absdiff::run(dev, bits, a, b, &k).unwrap();
    for i in 0..n {
        let want_d = if a[i] >= b[i] {
            &a[i] - &b[i]
        } else {
            &b[i] - &a[i]
        };
        assert_eq!(d[i], want_d, "{}", ctx("absdiff", i));
        let want_f = ((a[i] < b[i]) as u64).wrapping_mul(k[i]).wrapping_add(1);
        assert_eq!(f[i], want_f, "{}", ctx("absdiff.flag", i));
    }
}

fn gpu() -> Option<Device> {
    bigfuse::runtime::gpu_for_tests()
        .expect("BIGFUSE_REQUIRE_GPU=1 but no GPU could be used")
        .map(Device::Gpu)
}

#[test]
fn cpu_reference_every_size() {
    for &bits in SIZES {
        let n = if bits > 16384 { 90 } else { 200 };
        let (a, b) = operand_pairs(bits, n, 1);
        check_all(&Device::cpu(), bits, &a, &b);
    }
}

#[test]
fn cpu_lowered_every_size() {
    for &bits in SIZES {
        // The lowered evaluator interprets every limb: keep big sizes to the edge cases.
        let n = if bits > 4096 { 0 } else { 150 };
        let (a, b) = operand_pairs(bits, n, 2);
        let (a, b) = if bits > 16384 {
            (a[..20].to_vec(), b[..20].to_vec())
        } else {
            (a, b)
        };
        check_all(&Device::cpu_lowered(), bits, &a, &b);
    }
}

#[test]
fn gpu_every_size() {
    let Some(dev) = gpu() else { return };
    for &bits in SIZES {
        // Odd batch lengths: the last block is partly empty.
        let (a, b) = operand_pairs(bits, 1001, 3);
        check_all(&dev, bits, &a, &b);
    }
}

#[test]
fn gpu_batches_of_one_and_odd_lengths() {
    let Some(dev) = gpu() else { return };
    for bits in [64u64, 192, 2048, 3008, 131072] {
        let (a, b) = operand_pairs(bits, 0, 4);
        for n in [1usize, 2, 3, 7, 33] {
            check_all(&dev, bits, &a[a.len() - n..], &b[b.len() - n..]);
        }
    }
}

#[test]
fn empty_batches_give_empty_results() {
    let mut devs = vec![Device::cpu(), Device::cpu_lowered()];
    devs.extend(gpu());
    let none: &[BigUint] = &[];
    for dev in &devs {
        assert!(add::run(dev, 256, none, none).unwrap().is_empty());
        let (lt, ..) = compare::run(dev, 256, none, none).unwrap();
        assert!(lt.is_empty());
    }
}

#[test]
fn carries_and_borrows_through_every_limb() {
    let mut devs = vec![Device::cpu(), Device::cpu_lowered()];
    devs.extend(gpu());
    for dev in &devs {
        for bits in [64u64, 192, 4096, 3008, 65536, 262144] {
            if !dev.is_gpu()
                && bits > 4096
                && matches!(dev, Device::Cpu(c) if c.level == bigfuse::runtime::CpuLevel::Lowered)
            {
                continue;
            }
            let ones = all_ones(bits);
            let one = BigUint::from(1u8);
            let zero = BigUint::from(0u8);
            // all-ones + 1 = 0 (carry through every limb); 0 - 1 = all-ones (borrow through every limb)
            let r = add::run(
                dev,
                bits,
                &[ones.clone(), one.clone()],
                &[one.clone(), ones.clone()],
            )
            .unwrap();
            assert_eq!(r, vec![zero.clone(), zero.clone()], "{bits} on {dev}");
            let r = sub::run(
                dev,
                bits,
                &[zero.clone(), modulus(bits - 1)],
                &[one.clone(), one.clone()],
            )
            .unwrap();
            assert_eq!(
                r,
                vec![ones.clone(), modulus(bits - 1) - 1u8],
                "{bits} on {dev}"
            );
            // Neighbouring instances with different values: nothing leaks between them.
            let a: Vec<BigUint> = (0..64)
                .map(|i| {
                    if i % 2 == 0 {
                        ones.clone()
                    } else {
                        zero.clone()
                    }
                })
                .collect();
            let b: Vec<BigUint> = (0..64)
                .map(|i| {
                    if i % 3 == 0 {
                        one.clone()
                    } else {
                        zero.clone()
                    }
                })
                .collect();
            let r = add::run(dev, bits, &a, &b).unwrap();
            for i in 0..64 {
                assert_eq!(
                    r[i],
                    wrap_add(&a[i], &b[i], bits),
                    "{bits} instance {i} on {dev}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_sizes_and_values_cpu(limbs in 1u64..=64, seed in any::<u64>(), n in 1usize..24) {
        let bits = limbs * 64;
        let mut r = rng(seed);
        let a: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
        let b: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
        check_all(&Device::cpu(), bits, &a, &b);
        check_all(&Device::cpu_lowered(), bits, &a, &b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_sizes_and_values_gpu(limbs in 1u64..=4096, seed in any::<u64>(), n in 1usize..300) {
        let Some(dev) = gpu() else { return Ok(()) };
        let bits = limbs * 64;
        let mut r = rng(seed);
        let a: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
        let b: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
        check_all(&dev, bits, &a, &b);
    }
}

//! Polynomial products over Z (multi-prime NTT + CRT) against a schoolbook num-bigint reference.

mod common;

use bigfuse::poly::{poly_mul_mod, residues, schoolbook, PolyMul};
use bigfuse::{BigUint, Device};

fn polys(n: usize, bits: u64, count: usize, seed: u64) -> Vec<Vec<BigUint>> {
    let mut rng = common::rng(seed);
    (0..count)
        .map(|k| {
            (0..n)
                .map(|j| match (k, j % 5) {
                    // All-ones coefficients give the largest product coefficients.
                    (0, _) => common::all_ones(bits),
                    (_, 0) => BigUint::default(),
                    _ => common::random_big(&mut rng, bits),
                })
                .collect()
        })
        .collect()
}

fn check(dev: &Device, n: usize, bits: u64, count: usize) {
    let pm = PolyMul::new(n as u64, bits).unwrap();
    let a = polys(n, bits, count, 21 + n as u64);
    let b = polys(n, bits, count, 22 + bits);
    let r = pm.run(dev, &a, &b).unwrap();
    assert_eq!(r.len(), count);
    for i in 0..count {
        assert_eq!(
            r[i],
            schoolbook(&a[i], &b[i]),
            "{dev:?} n={n} bits={bits} product {i}"
        );
    }
}

#[test]
fn small_products_on_the_cpu() {
    for (n, bits) in [(1usize, 64u64), (4, 64), (16, 128), (33, 192), (64, 256)] {
        check(&Device::cpu(), n, bits, 3);
    }
    check(&Device::cpu_lowered(), 8, 128, 2);
}

#[test]
fn products_on_the_gpu() {
    let Some(dev) = common::gpu() else {
        return;
    };
    for (n, bits) in [
        (256usize, 64u64),
        (256, 256),
        (1024, 128),
        (4096, 64),
        (4097, 128), // degree 2^12: a 2^14-point transform
        (4096, 256),
        (100, 192),
    ] {
        check(&dev, n, bits, 3);
    }
}

#[test]
fn the_kernels_compile_with_nvrtc() {
    let p = bigfuse::poly::primes(1)[0];
    for n in [256u64, 4096, 4097, 8192] {
        common::nvrtc_compiles(poly_mul_mod::kernel().unwrap(), &[p, n]);
    }
    common::nvrtc_compiles(residues::kernel().unwrap(), &[4, p]);
    let pm = PolyMul::new(4096, 256).unwrap();
    assert_eq!(pm.primes.len(), 9);
    let crt =
        bigfuse::Kernel::new(bigfuse::poly::garner(&pm.primes, pm.out_bits, 1).unwrap()).unwrap();
    common::nvrtc_compiles(&crt, &[]);
}

#[test]
fn unsuitable_sizes_are_errors() {
    assert!(PolyMul::new(16, 100).is_err());
    // Degree 2^13 (8193 coefficients) needs a 2^15-point transform: more than one block holds.
    let p = bigfuse::poly::primes(1)[0];
    let plan = poly_mul_mod::kernel().unwrap().plan(
        &[p, 8193],
        &bigfuse::Target::h100(),
        &bigfuse::Hints::default(),
    );
    let e = plan.expect_err("8193 coefficients exceed one block's transform");
    assert!(e.to_string().contains("at most 2^14"), "{e}");
    let pm = PolyMul::new(4, 64).unwrap();
    let short = vec![vec![BigUint::from(1u8); 3]];
    assert!(pm.run(&Device::cpu(), &short, &short).is_err());
}

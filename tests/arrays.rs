//! Array pipelines written with the macro: map / zip / unzip / scan / reduce / iota, operators as
//! closures and #[bigfuse::op] functions, Zp<P> arithmetic; every result against a plain-Rust or
//! num-bigint reference, on the CPU backend (reference and lowered levels) and on a GPU when there
//! is one.

mod common;

use bigfuse::prelude::*;
use bigfuse::BigUint;
use rand::RngCore;

use bigfuse::programs::{dot, user_add};

#[bigfuse::kernel]
fn pipeline(xs: [u64; N], k: u64) -> ([u64; N], [u64; N], u64, u32) {
    let (lo, hi) = xs.map(|x| (x * k, x >> 3)).unzip();
    let prefix = lo.scan_inclusive(|a, b| a + b, 0);
    let excl = hi.scan_exclusive(|a, b| a ^ b, 0u64);
    let biggest = xs.reduce(|a, b| if a < b { b } else { a }, 0);
    let odd = iota(N)
        .map(|i| ((xs[i] + i) & 1) as u32)
        .reduce(|a, b| a + b, 0u32);
    (prefix, excl, biggest, odd)
}

#[bigfuse::kernel]
fn field(x: Zp<P>, y: Zp<P>, e: u64) -> (Zp<P>, Zp<P>, Zp<P>, Zp<P>, u64, bool) {
    let s = x + y - Zp::ONE;
    let q = x * y.inv();
    (s, q, x.pow(e), Zp::from(e) * 3, (x * x).value(), q * y == x)
}

fn devices() -> Vec<Device> {
    common::devices()
}

fn limbs(words: &[u64]) -> BigUint {
    bigfuse::ir::eval::limbs_to_big(words)
}

#[test]
fn user_addition_equals_the_builtin() {
    let n = 8usize;
    let batch = 5usize;
    let mut rng = common::rng(11);
    let mut a: Vec<u64> = (0..n * batch).map(|_| rng.next_u64()).collect();
    let mut b: Vec<u64> = (0..n * batch).map(|_| rng.next_u64()).collect();
    // A carry running the whole length, all ones, zero.
    a[..n].fill(u64::MAX);
    b[..n].fill(0);
    b[0] = 1;
    a[n..2 * n].fill(u64::MAX);
    b[n..2 * n].fill(u64::MAX);
    a[2 * n..3 * n].fill(0);
    b[2 * n..3 * n].fill(0);
    for dev in devices() {
        let r = user_add::run(&dev, n as u64, &a, &b).unwrap();
        for i in 0..batch {
            let x = limbs(&a[i * n..(i + 1) * n]);
            let y = limbs(&b[i * n..(i + 1) * n]);
            let want = (x + y) % (BigUint::from(1u8) << (64 * n));
            assert_eq!(limbs(&r[i * n..(i + 1) * n]), want, "{dev:?} instance {i}");
        }
    }
}

#[test]
fn user_addition_at_many_lengths() {
    let mut rng = common::rng(12);
    for n in [1usize, 2, 3, 7, 32, 64, 100, 4096] {
        let batch = if n > 1000 { 3 } else { 20 };
        let a: Vec<u64> = (0..n * batch)
            .map(|i| if i % 3 == 0 { u64::MAX } else { rng.next_u64() })
            .collect();
        let b: Vec<u64> = (0..n * batch)
            .map(|i| if i % 5 == 0 { 1 } else { rng.next_u64() })
            .collect();
        for dev in devices() {
            if !dev.is_gpu() && n > 100 {
                continue;
            }
            let r = user_add::run(&dev, n as u64, &a, &b).unwrap();
            for i in 0..batch {
                let s = i * n..(i + 1) * n;
                let want = (limbs(&a[s.clone()]) + limbs(&b[s.clone()]))
                    % (BigUint::from(1u8) << (64 * n));
                assert_eq!(limbs(&r[s]), want, "{dev:?} n={n} instance {i}");
            }
        }
    }
}

fn dot_reference(xs: &[u64], ys: &[u64], p: u64) -> u64 {
    let s: BigUint = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| BigUint::from(*x) * BigUint::from(*y))
        .sum();
    (s % BigUint::from(p)).iter_u64_digits().next().unwrap_or(0)
}

#[test]
fn dot_products_modulo_primes() {
    let mut rng = common::rng(13);
    for p in [97u64, 3221225473, 4179340454199820289, 18446744073709551557] {
        for n in [1usize, 10, 1024] {
            let batch = 6;
            let mut xs: Vec<u64> = (0..n * batch).map(|_| rng.next_u64() % p).collect();
            let ys: Vec<u64> = (0..n * batch).map(|_| rng.next_u64() % p).collect();
            xs[..n].fill(p - 1);
            for dev in devices() {
                let r = dot::run(&dev, p, n as u64, &xs, &ys).unwrap();
                assert_eq!(r.len(), batch);
                for (i, got) in r.iter().enumerate() {
                    let s = i * n..(i + 1) * n;
                    assert_eq!(
                        *got,
                        dot_reference(&xs[s.clone()], &ys[s], p),
                        "{dev:?} p={p} n={n} instance {i}"
                    );
                }
            }
        }
    }
}

#[test]
fn arrays_pipeline() {
    let n = 37usize;
    let batch = 4;
    let mut rng = common::rng(14);
    let xs: Vec<u64> = (0..n * batch).map(|_| rng.next_u64()).collect();
    let k: Vec<u64> = (0..batch as u64)
        .map(|i| i * 0x1234_5678_9abc + 3)
        .collect();
    for dev in devices() {
        let (prefix, excl, biggest, odd) = pipeline::run(&dev, n as u64, &xs, &k).unwrap();
        for i in 0..batch {
            let x = &xs[i * n..(i + 1) * n];
            let mut acc = 0u64;
            let mut acc_x = 0u64;
            for j in 0..n {
                acc = acc.wrapping_add(x[j].wrapping_mul(k[i]));
                assert_eq!(prefix[i * n + j], acc, "{dev:?} prefix");
                assert_eq!(excl[i * n + j], acc_x, "{dev:?} exclusive");
                acc_x ^= x[j] >> 3;
            }
            assert_eq!(biggest[i], *x.iter().max().unwrap());
            let want_odd = x
                .iter()
                .enumerate()
                .filter(|(j, v)| (v.wrapping_add(*j as u64)) & 1 == 1)
                .count() as u32;
            assert_eq!(odd[i], want_odd, "{dev:?} odd");
        }
    }
}

#[test]
fn modular_arithmetic() {
    use bigfuse::ir::modular::{add_mod, inv_mod, mul_mod, pow_mod, sub_mod};
    for p in [97u64, 3221225473, 18446744073709551557] {
        let xs: Vec<u64> = vec![0, 1, 2, p - 1, p / 2, 12345 % p];
        let ys: Vec<u64> = vec![1, p - 1, 3, p - 2, 7, 99 % p];
        let es: Vec<u64> = vec![0, 1, 2, u64::MAX, p - 2, 1 << 40];
        for dev in devices() {
            let (s, q, w, f, sq, ok) = field::run(&dev, p, &xs, &ys, &es).unwrap();
            for i in 0..xs.len() {
                let (x, y, e) = (xs[i], ys[i], es[i]);
                assert_eq!(s[i], sub_mod(add_mod(x, y, p), 1, p));
                assert_eq!(q[i], mul_mod(x, inv_mod(y, p), p));
                assert_eq!(w[i], pow_mod(x, e, p), "{dev:?} pow {x}^{e} mod {p}");
                assert_eq!(f[i], mul_mod(e % p, 3, p));
                assert_eq!(sq[i], mul_mod(x, x, p));
                assert!(ok[i]);
            }
        }
    }
}

#[test]
fn residues_must_be_reduced_and_moduli_prime() {
    let dev = Device::cpu();
    let e = dot::run(&dev, 97, 2, &[1, 97], &[1, 1]).unwrap_err();
    assert!(e.to_string().contains("not below the modulus 97"), "{e}");
    let e = dot::run(&dev, 91, 2, &[1, 2], &[1, 1]).unwrap_err();
    assert!(e.to_string().contains("not prime"), "{e}");
    let e = dot::run(&dev, 97, 2, &[1, 2, 3], &[1, 1, 1]).unwrap_err();
    assert!(e.to_string().contains("2 values per instance"), "{e}");
}

#[bigfuse::kernel]
fn bad_sum(xs: [u64; N]) -> u64 {
    xs.reduce(|a, b| a - b, 0)
}

#[test]
fn a_false_associativity_claim_is_reported_in_debug_builds() {
    let xs: Vec<u64> = (1..=16).collect();
    let r = bad_sum::run(&Device::cpu(), 16, &xs);
    if cfg!(debug_assertions) {
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains("associative") && e.contains("for x = 1u64"),
            "{e}"
        );
    }
}

#[test]
fn array_kernels_compile_with_nvrtc() {
    common::nvrtc_compiles(pipeline::kernel().unwrap(), &[37]);
    common::nvrtc_compiles(pipeline::kernel().unwrap(), &[4096]);
    for p in [97u64, 18446744073709551557] {
        common::nvrtc_compiles(field::kernel().unwrap(), &[p]);
    }
    common::nvrtc_compiles(bad_sum::kernel().unwrap(), &[100]);
}

/// Long vectors: one kernel sums each chunk, a second combines the partial sums (GPU only; the
/// CPU backend evaluates the program directly).
#[test]
fn long_dot_products_on_the_gpu() {
    let Some(dev) = common::gpu() else {
        return;
    };
    let mut rng = common::rng(15);
    for (p, n, batch) in [
        (18446744073709551557u64, 1usize << 14, 3usize),
        (4179340454199820289, 3 << 12, 2),
        (3221225473, 1 << 20, 2),
        (18446744073709551557, 1 << 24, 1),
    ] {
        let xs: Vec<u64> = (0..n * batch).map(|_| rng.next_u64() % p).collect();
        let mut ys: Vec<u64> = (0..n * batch).map(|_| rng.next_u64() % p).collect();
        ys[..n].fill(p - 1);
        let r = dot::run(&dev, p, n as u64, &xs, &ys).unwrap();
        assert_eq!(r.len(), batch);
        for (i, got) in r.iter().enumerate() {
            let s = i * n..(i + 1) * n;
            assert_eq!(
                *got,
                dot_reference(&xs[s.clone()], &ys[s], p),
                "p={p} n={n} instance {i}"
            );
        }
    }
}

//! Arrays of big integers (`[U<BITS>; N]`): each element's arithmetic is done by one thread on its
//! limbs; checked against num-bigint on the CPU backend (both levels) and on a GPU when present.

mod common;

use bigfuse::prelude::*;

#[bigfuse::kernel]
fn elementwise(
    xs: [U<BITS>; N],
    ys: [U<BITS>; N],
    c: U<BITS>,
) -> ([U<BITS>; N], [bool; N], [U<{ 2 * BITS }>; N], U<BITS>) {
    let r = xs
        .zip(ys)
        .map(|(x, y)| if x < y { y - x } else { x * y + x - y + 1 });
    let le = xs.zip(ys).map(|(x, y)| x <= y && !(x == y));
    let wide = xs.zip(ys).map(|(x, y)| x.mul_wide(y));
    let total = xs.reduce(|a, b| a + b, U::ZERO) + c;
    (r, le, wide, total)
}

/// Prefix sums of big integers (an inclusive scan over [U<BITS>; N]).
#[bigfuse::kernel]
fn prefix(xs: [U<BITS>; N]) -> [U<BITS>; N] {
    xs.scan_inclusive(|a, b| a + b, U::ZERO)
}

fn values(bits: u64, count: usize, seed: u64) -> Vec<BigUint> {
    let mut rng = common::rng(seed);
    let edges = common::edge_values(bits);
    (0..count)
        .map(|i| {
            if i % 3 == 0 {
                edges[(i / 3) % edges.len()].clone()
            } else {
                common::random_big(&mut rng, bits)
            }
        })
        .collect()
}

#[test]
fn elementwise_arithmetic_comparisons_products_and_sums() {
    for (bits, n) in [(64u64, 5usize), (128, 33), (256, 100)] {
        let batch = 4;
        let xs = values(bits, n * batch, bits);
        let ys = values(bits, n * batch, bits + 1);
        let cs = values(bits, batch, bits + 2);
        let m = common::modulus(bits);
        for dev in common::devices() {
            let (r, le, wide, total) =
                elementwise::run(&dev, bits, n as u64, &xs, &ys, &cs).unwrap();
            for i in 0..n * batch {
                let (x, y) = (&xs[i], &ys[i]);
                let want = if x < y {
                    y - x
                } else {
                    (x * y + x + (&m - y) + 1u8) % &m
                };
                assert_eq!(r[i], want, "{dev:?} bits={bits} element {i}");
                assert_eq!(le[i], x < y, "{dev:?} bits={bits} element {i}");
                assert_eq!(wide[i], x * y, "{dev:?} bits={bits} element {i}");
            }
            for k in 0..batch {
                let s: BigUint = xs[k * n..(k + 1) * n].iter().sum::<BigUint>() + &cs[k];
                assert_eq!(total[k], s % &m, "{dev:?} bits={bits} instance {k}");
            }
        }
    }
}

#[test]
fn prefix_sums_of_big_integers() {
    let (bits, n, batch) = (192u64, 50usize, 3usize);
    let xs = values(bits, n * batch, 7);
    let m = common::modulus(bits);
    for dev in common::devices() {
        let r = prefix::run(&dev, bits, n as u64, &xs).unwrap();
        for k in 0..batch {
            let mut acc = BigUint::default();
            for j in 0..n {
                acc = (acc + &xs[k * n + j]) % &m;
                assert_eq!(r[k * n + j], acc, "{dev:?} instance {k} element {j}");
            }
        }
    }
}

#[test]
fn values_wider_than_the_elements_are_errors() {
    let too_wide = vec![BigUint::from(1u8) << 64u32; 2];
    let e = prefix::run(&Device::cpu(), 64, 2, &too_wide).unwrap_err();
    assert!(matches!(e, bigfuse::Error::ValueTooWide { .. }), "{e}");
}

#[test]
fn big_array_kernels_compile_with_nvrtc() {
    for (bits, n) in [(64u64, 5u64), (256, 1000)] {
        common::nvrtc_compiles(elementwise::kernel().unwrap(), &[bits, n]);
        common::nvrtc_compiles(prefix::kernel().unwrap(), &[bits, n]);
    }
}

/// Small constants next to whole big integers (lowered to a limb array) and inside closures.
#[bigfuse::kernel]
fn constants(a: U<BITS>, xs: [U<BITS>; N]) -> (U<BITS>, [U<BITS>; N]) {
    (
        a * 3 + 1,
        xs.map(|x| x * 5 + ((x == U::ZERO) as u64 + 6) as U<BITS>),
    )
}

#[test]
fn big_constants() {
    let (bits, n) = (192u64, 4usize);
    let a = values(bits, 3, 11);
    let xs = values(bits, 3 * n, 12);
    let m = common::modulus(bits);
    for dev in common::devices() {
        let (r, ys) = constants::run(&dev, bits, n as u64, &a, &xs).unwrap();
        for i in 0..3 {
            assert_eq!(r[i], (&a[i] * 3u8 + 1u8) % &m, "{dev:?}");
        }
        for i in 0..3 * n {
            let k = 6u8 + (xs[i] == BigUint::default()) as u8;
            assert_eq!(ys[i], (&xs[i] * 5u8 + k) % &m, "{dev:?}");
        }
    }
    common::nvrtc_compiles(constants::kernel().unwrap(), &[bits, n as u64]);
}

//! Arithmetic modulo a big odd integer (`add_mod`, `sub_mod`, `mul_mod`; codegen/src/residue.rs)
//! against num-bigint on the CPU reference, the lowered IR and the GPU when there is one: at
//! powers of two and odd sizes, moduli of every length, operands at and above the modulus, the
//! edge cases of the contract (m = 1, m = 3, m = 2^BITS - 1; an even or zero modulus argument is
//! an error, a computed one gives all ones), fused into a longer expression (the paper's Poly
//! modulo m) and with `pow_mod` and `inv_mod`.

mod common;

use bigfuse::BigUint;
use common::{all_ones, devices, nvrtc_compiles, random_big, rng};
use num_traits::{One, Zero};
use proptest::prelude::*;

#[bigfuse::kernel]
fn ops(a: U<BITS>, b: U<BITS>, m: U<BITS>) -> (U<BITS>, U<BITS>, U<BITS>) {
    (a.add_mod(b, m), a.sub_mod(b, m), a.mul_mod(b, m))
}

/// The paper's Poly, `(a^2 + b)(b^2 + b) + a b`, modulo m: one chain in Montgomery form.
#[bigfuse::kernel]
fn poly_mod(a: U<BITS>, b: U<BITS>, m: U<BITS>) -> U<BITS> {
    let a2 = a.mul_mod(a, m);
    let b2 = b.mul_mod(b, m);
    let ab = a.mul_mod(b, m);
    a2.add_mod(b, m).mul_mod(b2.add_mod(b, m), m).add_mod(ab, m)
}

/// With the rest of the language: a power, an inverse (and its check), a wrapping sum.
#[bigfuse::kernel]
fn mixed(a: U<BITS>, e: U<BITS>, m: U<BITS>) -> (U<BITS>, bool, U<BITS>) {
    let p = a.pow_mod(e, m);
    let (inv, ok) = a.inv_mod(m);
    let back = inv.mul_mod(a, m);
    (p.mul_mod(p, m).sub_mod(a, m), ok, back + p)
}

/// Array elements, each with its own modulus.
#[bigfuse::kernel]
fn element_products(xs: [U<BITS>; N], ys: [U<BITS>; N], ms: [U<BITS>; N]) -> [U<BITS>; N] {
    xs.zip(ys)
        .zip(ms)
        .map(|((x, y), m)| x.mul_mod(y, m).add_mod(x, m))
}

/// A loop that stays a loop at these widths (square-and-multiply over the exponent's bits): its
/// rounds convert at each turn.
#[bigfuse::kernel]
fn ladder(x: U<BITS>, e: U<BITS>, m: U<BITS>) -> U<BITS> {
    let one: U<BITS> = U::ONE;
    let mut acc = one.mul_mod(one, m);
    let mut sq = x;
    for i in 0..BITS {
        if e.bit(i) {
            acc = acc.mul_mod(sq, m);
        }
        sq = sq.mul_mod(sq, m);
    }
    acc
}

/// `(a op b) mod m` as the contract defines it: all ones for an even or zero modulus.
fn want(op: char, a: &BigUint, b: &BigUint, m: &BigUint, bits: u64) -> BigUint {
    if !m.bit(0) {
        return all_ones(bits);
    }
    match op {
        '+' => (a + b) % m,
        '-' => (a % m + m - b % m) % m,
        _ => a * b % m,
    }
}

/// Random odd moduli of every length up to `bits`, random operands (mostly above the modulus),
/// then the edge cases.
fn cases(bits: u64, seed: u64) -> Vec<[BigUint; 3]> {
    let mut r = rng(seed);
    let mut out = Vec::new();
    for i in 0..24u64 {
        let mbits = if i < 8 { bits } else { 1 + (i * 37) % bits };
        let m = (random_big(&mut r, bits) % (BigUint::one() << mbits)) | BigUint::one();
        out.push([random_big(&mut r, bits), random_big(&mut r, bits), m]);
    }
    let b = |v: u64| BigUint::from(v);
    let top = all_ones(bits);
    for c in [
        [b(0), b(0), b(3)],
        [b(2), b(2), b(3)],
        [b(5), b(9), b(1)],
        [top.clone(), top.clone(), top.clone()],
        [top.clone() - 1u8, top.clone(), top.clone()],
        [top.clone(), b(1), top.clone() - 2u8],
        [b(0), top.clone(), top.clone() - 2u8],
        [
            b(1) << (bits - 1),
            b(1) << (bits - 1),
            (b(1) << (bits - 1)) + 1u8,
        ],
    ] {
        out.push(c);
    }
    out
}

fn columns(cases: &[[BigUint; 3]]) -> [Vec<BigUint>; 3] {
    [0, 1, 2].map(|k| cases.iter().map(|c| c[k].clone()).collect())
}

#[test]
fn sums_differences_products_equal_num_bigint() {
    for bits in [64u64, 128, 192, 320, 1024, 1088, 2048] {
        let [a, b, m] = columns(&cases(bits, bits));
        for dev in devices() {
            let (s, d, p) = ops::run(&dev, bits, &a, &b, &m)
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            for i in 0..a.len() {
                let what = format!("{} , {} mod {} at {bits} bits on {dev}", a[i], b[i], m[i]);
                assert_eq!(s[i], want('+', &a[i], &b[i], &m[i], bits), "+ {what}");
                assert_eq!(d[i], want('-', &a[i], &b[i], &m[i], bits), "- {what}");
                assert_eq!(p[i], want('*', &a[i], &b[i], &m[i], bits), "* {what}");
            }
        }
        nvrtc_compiles(ops::kernel().unwrap(), &[bits]);
    }
}

#[test]
fn poly_modulo_m_fused() {
    for bits in [128u64, 256, 320, 1024] {
        let [a, b, m] = columns(&cases(bits, 5 * bits));
        for dev in devices() {
            let got = poly_mod::run(&dev, bits, &a, &b, &m)
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            for i in 0..a.len() {
                let (x, y, md) = (&a[i], &b[i], &m[i]);
                let expect = if !md.bit(0) {
                    all_ones(bits)
                } else {
                    ((x * x + y) * (y * y + y) + x * y) % md
                };
                assert_eq!(got[i], expect, "{x}, {y} mod {md} at {bits} bits on {dev}");
            }
        }
        nvrtc_compiles(poly_mod::kernel().unwrap(), &[bits]);
    }
    // One chain: each input into the form once, R^2 once, one product per product, one out.
    let plan = poly_mod::explain(&bigfuse::Device::cpu(), 256).unwrap();
    assert!(plan.contains("residues"), "{plan}");
}

#[test]
fn with_powers_and_inverses() {
    for bits in [128u64, 256, 512] {
        let [a, e, m] = columns(&cases(bits, 11 * bits));
        for dev in devices() {
            let (p, ok, back) = mixed::run(&dev, bits, &a, &e, &m)
                .unwrap_or_else(|err| panic!("{bits} bits on {dev}: {err}"));
            let wrap = BigUint::one() << bits;
            for i in 0..a.len() {
                let (x, md) = (&a[i], &m[i]);
                let pw = if md.bit(0) {
                    x.modpow(&e[i], md)
                } else {
                    all_ones(bits)
                };
                let inv = if md.is_zero() { None } else { x.modinv(md) };
                let what = format!("{x}^{} mod {md} at {bits} bits on {dev}", e[i]);
                assert_eq!(p[i], want('-', &(&pw * &pw), x, md, bits), "{what}");
                assert_eq!(ok[i], inv.is_some(), "{what}");
                let inv = inv.unwrap_or_default();
                assert_eq!(
                    back[i],
                    (want('*', &inv, x, md, bits) + &pw) % &wrap,
                    "{what}"
                );
            }
        }
        nvrtc_compiles(mixed::kernel().unwrap(), &[bits]);
    }
}

#[test]
fn array_elements_and_loops() {
    for (bits, n) in [(128u64, 5u64), (320, 3)] {
        let all = cases(bits, 3 * bits);
        let used = all.len() / n as usize * n as usize;
        let [xs, ys, ms] = columns(&all[..used]);
        for dev in devices() {
            let got = element_products::run(&dev, bits, n, &xs, &ys, &ms)
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            for k in 0..used {
                let p = want('*', &xs[k], &ys[k], &ms[k], bits);
                let expect = want('+', &p, &xs[k], &ms[k], bits);
                assert_eq!(got[k], expect, "element {k} at {bits} bits on {dev}");
            }
        }
        nvrtc_compiles(element_products::kernel().unwrap(), &[bits, n]);
    }
    for bits in [64u64, 256] {
        let [x, e, m] = columns(&cases(bits, 13 * bits));
        for dev in devices() {
            let got = ladder::run(&dev, bits, &x, &e, &m)
                .unwrap_or_else(|err| panic!("{bits} bits on {dev}: {err}"));
            for i in 0..x.len() {
                let expect = if m[i].bit(0) {
                    x[i].modpow(&e[i], &m[i])
                } else {
                    all_ones(bits)
                };
                assert_eq!(got[i], expect, "{}^{} mod {} on {dev}", x[i], e[i], m[i]);
            }
        }
        nvrtc_compiles(ladder::kernel().unwrap(), &[bits]);
    }
}

/// A modulus the kernel computes (`m + 1`, even for odd m): not among the arguments the runtime
/// checks, so the contract's all ones.
#[bigfuse::kernel]
fn next_modulus(a: U<BITS>, b: U<BITS>, m: U<BITS>) -> U<BITS> {
    let one: U<BITS> = U::ONE;
    a.mul_mod(b, m + one)
}

/// An even or zero modulus given as an argument is an error naming the first such instance; one
/// the kernel computes gives all ones.
#[test]
fn even_or_zero_moduli() {
    let bits = 192u64;
    let x = vec![BigUint::from(5u8); 3];
    for dev in devices() {
        let ms: Vec<BigUint> = [7u64, 0, 9].map(BigUint::from).to_vec();
        let e = ops::run(&dev, bits, &x, &x, &ms).unwrap_err().to_string();
        assert!(
            e.contains("`m` of instance 1 is even or zero"),
            "{dev}: {e}"
        );
        let ms: Vec<BigUint> = [7u64, 8, 0].map(BigUint::from).to_vec();
        let got = next_modulus::run(&dev, bits, &x, &x, &ms).unwrap();
        assert_eq!(
            got,
            [all_ones(bits), BigUint::from(25u8 % 9), BigUint::zero()],
            "{dev}"
        );
    }
}

#[test]
fn too_wide_a_modulus_is_a_clear_error() {
    let e = ops::kernel()
        .unwrap()
        .cuda_source(&[4096], &bigfuse::Target::h100())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("up to 2048 bits") && e.contains("mul_wide"),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Any width up to 512 bits, any operands, odd moduli of any length (and some even ones).
    #[test]
    fn any_width_any_values(
        words in 1u64..=8,
        seed in any::<u64>(),
        even in any::<bool>(),
    ) {
        let bits = 64 * words;
        let mut r = rng(seed);
        let n = 7;
        let a: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
        let b: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
        let m: Vec<BigUint> = (0..n)
            .map(|i| {
                let m = random_big(&mut r, bits) >> (i as u64 * bits / 8);
                if even && i == 0 { m >> 1u8 << 1u8 } else { m | BigUint::one() }
            })
            .collect();
        for dev in devices() {
            let got = ops::run(&dev, bits, &a, &b, &m);
            if even {
                let e = got.unwrap_err().to_string();
                prop_assert!(e.contains("`m` of instance 0 is even or zero"), "{}", e);
                continue;
            }
            let (s, d, p) = got.unwrap();
            for i in 0..n {
                prop_assert_eq!(&s[i], &want('+', &a[i], &b[i], &m[i], bits));
                prop_assert_eq!(&d[i], &want('-', &a[i], &b[i], &m[i], bits));
                prop_assert_eq!(&p[i], &want('*', &a[i], &b[i], &m[i], bits));
            }
        }
    }
}

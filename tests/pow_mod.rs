//! `x.pow_mod(e, m)`: Montgomery exponentiation modulo an odd big integer
//! (codegen/src/montgomery.rs), against num-bigint's `modpow` on both CPU levels and the GPU when
//! there is one, at powers of two and odd sizes, with the edge cases of the documented contract
//! (base 0, exponent 0, m = 1, m = 3, m = 2^BITS - 1, base >= m); an even or zero modulus among
//! the arguments is an error naming the instance, one the kernel computes gives all ones.

mod common;

use bigfuse::BigUint;
use common::{all_ones, devices, nvrtc_compiles, random_big, rng};

/// The devices for a size: the lowered-IR evaluator interprets every limb operation of thousands
/// of Montgomery rounds, so it checks the sizes up to 512 bits and the GPU the larger ones.
fn devices_for(bits: u64) -> Vec<bigfuse::Device> {
    devices()
        .into_iter()
        .filter(|d| bits <= 512 || !d.to_string().contains("lowered"))
        .collect()
}
use num_traits::{One, Zero};

#[bigfuse::kernel]
fn power(x: U<BITS>, e: U<BITS>, m: U<BITS>) -> U<BITS> {
    x.pow_mod(e, m)
}

/// CGBN's benchmark shape: a 512-bit exponent whatever the modulus.
#[bigfuse::kernel]
fn power_short(x: U<BITS>, e: U<512>, m: U<BITS>) -> U<BITS> {
    x.pow_mod(e, m)
}

/// Fused with the rest of a kernel: the Fermat test `a^(m-1) mod m == 1` and the power plus one.
#[bigfuse::kernel]
fn fermat(a: U<BITS>, m: U<BITS>) -> (bool, U<BITS>) {
    let one: U<BITS> = U::ONE;
    let r = a.pow_mod(m - one, m);
    (r == one, r + one)
}

/// A modulus the kernel computes: not among the arguments the runtime checks.
#[bigfuse::kernel]
fn next_modulus(x: U<BITS>, e: U<BITS>, m: U<BITS>) -> U<BITS> {
    let one: U<BITS> = U::ONE;
    x.pow_mod(e, m + one)
}

/// Array elements: one power per element, each with its own exponent and modulus.
#[bigfuse::kernel]
fn element_powers(xs: [U<BITS>; N], es: [U<BITS>; N], ms: [U<BITS>; N]) -> [U<BITS>; N] {
    xs.zip(es).zip(ms).map(|((x, e), m)| x.pow_mod(e, m))
}

fn want(x: &BigUint, e: &BigUint, m: &BigUint, bits: u64) -> BigUint {
    if !m.bit(0) {
        all_ones(bits)
    } else {
        x.modpow(e, m)
    }
}

/// Random odd moduli of every length up to `bits`, random bases (some above the modulus) and
/// exponents, then the edge cases.
fn cases(bits: u64, seed: u64) -> (Vec<BigUint>, Vec<BigUint>, Vec<BigUint>) {
    let mut r = rng(seed);
    let (mut xs, mut es, mut ms) = (vec![], vec![], vec![]);
    for i in 0..24u64 {
        let mbits = if i < 8 { bits } else { 1 + (i * 37) % bits };
        let m = (random_big(&mut r, bits) % (BigUint::one() << mbits)) | BigUint::one();
        xs.push(random_big(&mut r, bits));
        es.push(random_big(&mut r, bits));
        ms.push(m);
    }
    let b = |v: u64| BigUint::from(v);
    let top = all_ones(bits);
    for (x, e, m) in [
        (b(0), b(0), b(3)),
        (b(0), b(5), b(3)),
        (b(7), b(0), b(3)),
        (b(7), b(0), b(1)),
        (b(5), b(9), b(1)),
        (top.clone(), top.clone(), top.clone()),
        (top.clone() - 1u8, b(2), top.clone()),
        (b(2), top.clone(), top.clone() - 2u8),
        (top.clone(), b(3), b(3)),
        (b(1) << (bits - 1), b(1), (b(1) << (bits - 1)) + 1u8),
    ] {
        xs.push(x);
        es.push(e);
        ms.push(m);
    }
    (xs, es, ms)
}

#[test]
fn powers_equal_modpow() {
    for bits in [64u64, 128, 320, 512, 1088, 2048] {
        let (xs, es, ms) = cases(bits, bits);
        let expected: Vec<BigUint> = (0..xs.len())
            .map(|i| want(&xs[i], &es[i], &ms[i], bits))
            .collect();
        for dev in devices_for(bits) {
            let got = power::run(&dev, bits, &xs, &es, &ms)
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            for i in 0..xs.len() {
                assert_eq!(
                    got[i], expected[i],
                    "{}^{} mod {} at {bits} bits on {dev}",
                    xs[i], es[i], ms[i]
                );
            }
        }
        nvrtc_compiles(power::kernel().unwrap(), &[bits]);
    }
}

#[test]
fn a_512_bit_exponent() {
    // One thread per instance at 256 and 1024 bits, groups of 8 threads at 4096 (whose squares
    // compute each cross product once).
    for bits in [256u64, 1024, 4096] {
        let (xs, _, ms) = cases(bits, 7 + bits);
        let mut r = rng(bits);
        let mut es: Vec<BigUint> = (0..xs.len()).map(|_| random_big(&mut r, 512)).collect();
        es[0] = BigUint::zero();
        es[1] = all_ones(512);
        let expected: Vec<BigUint> = (0..xs.len())
            .map(|i| want(&xs[i], &es[i], &ms[i], bits))
            .collect();
        for dev in devices_for(bits) {
            let got = power_short::run(&dev, bits, &xs, &es, &ms)
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            assert_eq!(got, expected, "{bits} bits on {dev}");
        }
        nvrtc_compiles(power_short::kernel().unwrap(), &[bits]);
    }
}

#[test]
fn fermat_test_fused() {
    let bits = 256u64;
    // Primes (2^255 - 19, 2^127 - 1, 65537), composites (a Carmichael number among them), 1 and an
    // even number.
    let p25519 = (BigUint::one() << 255u32) - 19u8;
    let m127 = (BigUint::one() << 127u32) - 1u8;
    let ms: Vec<BigUint> = [
        p25519.clone(),
        m127.clone(),
        BigUint::from(65537u32),
        BigUint::from(561u32),
        &p25519 * 3u8 % (BigUint::one() << 256u32),
        &m127 * &m127,
        BigUint::one(),
    ]
    .to_vec();
    let a: Vec<BigUint> = vec![BigUint::from(2u8); ms.len()];
    for dev in devices() {
        let (prime, plus) =
            fermat::run(&dev, bits, &a, &ms).unwrap_or_else(|e| panic!("{dev}: {e}"));
        let wrap = BigUint::one() << bits;
        for i in 0..ms.len() {
            let m_minus_one = (&ms[i] + all_ones(bits)) % &wrap;
            let r = want(&a[i], &m_minus_one, &ms[i], bits);
            assert_eq!(prime[i], r == BigUint::one(), "{} on {dev}", ms[i]);
            assert_eq!(plus[i], (&r + 1u8) % &wrap, "{} on {dev}", ms[i]);
        }
        assert_eq!(
            &prime[..4],
            &[true, true, true, true],
            "{dev}: 561 is a Carmichael number"
        );
        assert!(!prime[4] && !prime[5], "{dev}");
    }
    nvrtc_compiles(fermat::kernel().unwrap(), &[bits]);
}

/// An even or zero modulus given as an argument (BigUint or limbs) is an error naming the first
/// such instance, on every device; on a device batch, or computed by the kernel, it gives all
/// ones (`U::MAX`), which no residue equals.
#[test]
fn even_or_zero_moduli() {
    let bits = 128u64;
    let xs = vec![BigUint::from(5u8); 4];
    let es = vec![BigUint::from(3u8); 4];
    let ms: Vec<BigUint> = [7u64, 9, 10, 0].map(BigUint::from).to_vec();
    let limbs: Vec<u64> = [7u64, 0, 9, 0, 0, 0, 10, 0].to_vec();
    for dev in devices() {
        let e = power::run(&dev, bits, &xs, &es, &ms)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`m` of instance 2 is even or zero") && e.contains("pow_mod"),
            "{dev}: {e}"
        );
        let x = bigfuse::Arg::Big(&xs);
        let ex = bigfuse::Arg::Big(&es);
        let e = power::kernel()
            .unwrap()
            .run(&dev, &[bits], &[x, ex, bigfuse::Arg::U64(&limbs)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`m` of instance 2 is even or zero"),
            "{dev}: {e}"
        );
        // Already on the device: not read back, all ones.
        let mb = bigfuse::Batch::big(&dev, bits, &ms).unwrap();
        let got = power::kernel()
            .unwrap()
            .launch(&dev, &[bits], &[x, ex, bigfuse::Arg::Batch(&mb)])
            .unwrap()[0]
            .to_big()
            .unwrap();
        assert_eq!(got[0], BigUint::from(125u8 % 7));
        assert_eq!(got[2], all_ones(bits), "{dev}");
        assert_eq!(got[3], all_ones(bits), "{dev}");
        // Computed by the kernel (m + 1): all ones where it is even, no error.
        let got = next_modulus::run(&dev, bits, &xs, &es, &ms).unwrap();
        assert_eq!(got[0], all_ones(bits), "{dev}");
        assert_eq!(got[1], all_ones(bits), "{dev}");
        assert_eq!(got[2], BigUint::from(125u8 % 11), "{dev}");
        assert_eq!(got[3], BigUint::from(0u8), "{dev}: modulo 1");
    }
}

#[test]
fn powers_of_array_elements() {
    for (bits, n) in [(128u64, 5u64), (320, 3)] {
        let (xs, es, ms) = cases(bits, 3 * bits);
        let used = xs.len() / n as usize * n as usize;
        let (xs, es, ms) = (&xs[..used], &es[..used], &ms[..used]);
        for dev in devices_for(bits) {
            let got = element_powers::run(&dev, bits, n, xs, es, ms)
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            assert_eq!(got.len(), used);
            for k in 0..used {
                assert_eq!(
                    got[k],
                    want(&xs[k], &es[k], &ms[k], bits),
                    "element {k} at {bits} bits on {dev}"
                );
            }
        }
        nvrtc_compiles(element_powers::kernel().unwrap(), &[bits, n]);
    }
}

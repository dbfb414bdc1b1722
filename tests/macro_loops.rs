//! Bounded loops written with the macro (`let mut`, assignments, `for i in 0..K`, `if`
//! statements): each kernel against num-bigint or plain Rust, on both CPU levels and the GPU when
//! there is one, and compiled by NVRTC. Loops unroll when a kernel is specialized, so the widths
//! stay small (64..256 bits).

mod common;

use bigfuse::BigUint;
use common::{devices, modulus, nvrtc_compiles, random_big, rng};

/// `x^e mod 2^BITS`: right-to-left square-and-multiply over every bit of `e`.
#[bigfuse::kernel]
fn pow_bits(x: U<BITS>, e: U<BITS>) -> U<BITS> {
    let mut acc: U<BITS> = U::ONE;
    let mut sq = x;
    for i in 0..BITS {
        if e.bit(i) {
            acc = acc * sq;
        }
        sq *= sq;
    }
    acc
}

/// Left-to-right square-and-multiply, with the selection as an `if`/`else` expression and a u32
/// counter carried beside the big integer: the number of set bits seen.
#[bigfuse::kernel]
fn pow_counting(x: U<BITS>, e: U<BITS>) -> (U<BITS>, u32) {
    let all: U<BITS> = U::MAX;
    let top = all.count_ones() - 1;
    let mut acc: U<BITS> = U::ONE;
    let mut ones = 0u32;
    for i in 0..BITS {
        let bit = e.bit(top - i);
        acc = acc * acc;
        acc = if bit { acc * x } else { acc };
        ones += bit as u32;
    }
    (acc, ones)
}

fn inputs(bits: u64, seed: u64) -> (Vec<BigUint>, Vec<BigUint>) {
    let mut r = rng(seed);
    let m = modulus(bits);
    let mut xs: Vec<BigUint> = (0..23).map(|_| random_big(&mut r, bits)).collect();
    let mut es: Vec<BigUint> = (0..23).map(|_| random_big(&mut r, bits)).collect();
    xs.extend([0u8, 1, 3, 0, 2].map(BigUint::from));
    es.extend([5u8, 0, 1, 0].map(BigUint::from));
    es.push(&m - 1u8);
    (xs, es)
}

#[test]
fn square_and_multiply_over_every_bit() {
    for bits in [64u64, 128] {
        let m = modulus(bits);
        let (xs, es) = inputs(bits, 3);
        let want: Vec<BigUint> = xs.iter().zip(&es).map(|(x, e)| x.modpow(e, &m)).collect();
        for dev in devices() {
            let got = pow_bits::run(&dev, bits, &xs, &es)
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            assert_eq!(got, want, "{bits} bits on {dev}");
        }
        nvrtc_compiles(pow_bits::kernel().unwrap(), &[bits]);
    }
}

#[test]
fn a_loop_carrying_a_big_integer_and_a_counter() {
    for bits in [64u64, 128] {
        let m = modulus(bits);
        let (xs, es) = inputs(bits, 4);
        let want: Vec<BigUint> = xs.iter().zip(&es).map(|(x, e)| x.modpow(e, &m)).collect();
        let ones: Vec<u32> = es.iter().map(|e| e.count_ones() as u32).collect();
        for dev in devices() {
            let (got, counted) = pow_counting::run(&dev, bits, &xs, &es)
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            assert_eq!(got, want, "{bits} bits on {dev}");
            assert_eq!(counted, ones, "{bits} bits on {dev}");
        }
        nvrtc_compiles(pow_counting::kernel().unwrap(), &[bits]);
    }
}

/// A loop in a loop: `s` = the sum over i < 4, j < 3 of `x << (i + j)`, and a u64 `k` that the
/// inner body increments and the outer body doubles.
#[bigfuse::kernel]
fn nested(x: U<BITS>, k0: u64) -> (U<BITS>, u64) {
    let mut s: U<BITS> = U::ZERO;
    let mut k = k0;
    for i in 0..4 {
        let mut row: U<BITS> = U::ZERO;
        for j in 0..3 {
            row += x << (i + j);
            k += 1;
        }
        s = s + row;
        k = k * 2;
    }
    (s, k)
}

#[test]
fn nested_loops() {
    let bits = 128u64;
    let m = modulus(bits);
    let mut r = rng(5);
    let xs: Vec<BigUint> = (0..17).map(|_| random_big(&mut r, bits)).collect();
    let ks: Vec<u64> = (0..17u64).map(|i| i * 0x1234_5678_9abc).collect();
    let want_s: Vec<BigUint> = xs
        .iter()
        .map(|x| {
            let mut s = BigUint::from(0u8);
            for i in 0..4 {
                for j in 0..3 {
                    s += (x << (i + j)) % &m;
                }
            }
            s % &m
        })
        .collect();
    let want_k: Vec<u64> = ks
        .iter()
        .map(|&k| (0..4).fold(k, |k, _| k.wrapping_add(3).wrapping_mul(2)))
        .collect();
    for dev in devices() {
        let (s, k) = nested::run(&dev, bits, &xs, &ks).unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(s, want_s, "{dev}");
        assert_eq!(k, want_k, "{dev}");
    }
    nvrtc_compiles(nested::kernel().unwrap(), &[bits]);
}

/// No rounds: the variables keep their values.
#[bigfuse::kernel]
fn no_rounds(x: U<BITS>, n: u32) -> (U<BITS>, u32) {
    let mut y = x;
    let mut m = n;
    for _ in 0..0 {
        y = y * y + x;
        m += 1;
    }
    (y, m)
}

#[test]
fn a_loop_of_no_rounds() {
    let bits = 64u64;
    let mut r = rng(6);
    let xs: Vec<BigUint> = (0..9).map(|_| random_big(&mut r, bits)).collect();
    let ns: Vec<u32> = (0..9u32).map(|i| i * 77).collect();
    for dev in devices() {
        let (y, m) = no_rounds::run(&dev, bits, &xs, &ns).unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(y, xs, "{dev}");
        assert_eq!(m, ns, "{dev}");
    }
    nvrtc_compiles(no_rounds::kernel().unwrap(), &[bits]);
}

/// One round per 64-bit limb (the count is the size `L` of `U<{64 * L}>`; sizes cannot be
/// divided, so `BITS / 64` is written this way): the sum of the limbs of `x`, and the limb-wise
/// xor of `x` and `y` rebuilt with `insert_bits`.
#[bigfuse::kernel]
fn per_limb(x: U<{ 64 * L }>, y: U<{ 64 * L }>) -> (u64, U<{ 64 * L }>) {
    let mut sum = 0u64;
    let mut z = x;
    for i in 0..L {
        let lo = i * 64;
        sum += (x >> lo) as u64;
        z = z.insert_bits((x ^ y) >> lo, lo, 64);
    }
    (sum, z)
}

#[test]
fn one_round_per_limb() {
    let mut r = rng(7);
    for limbs in [1u64, 3] {
        let bits = 64 * limbs;
        let xs: Vec<BigUint> = (0..13).map(|_| random_big(&mut r, bits)).collect();
        let ys: Vec<BigUint> = (0..13).map(|_| random_big(&mut r, bits)).collect();
        let want_sum: Vec<u64> = xs
            .iter()
            .map(|x| x.iter_u64_digits().fold(0u64, |s, d| s.wrapping_add(d)))
            .collect();
        let want_z: Vec<BigUint> = xs.iter().zip(&ys).map(|(x, y)| x ^ y).collect();
        for dev in devices() {
            let (sum, z) = per_limb::run(&dev, limbs, &xs, &ys)
                .unwrap_or_else(|e| panic!("{limbs} limbs on {dev}: {e}"));
            assert_eq!(sum, want_sum, "{limbs} limbs on {dev}");
            assert_eq!(z, want_z, "{limbs} limbs on {dev}");
        }
        nvrtc_compiles(per_limb::kernel().unwrap(), &[limbs]);
    }
}

/// The count `2 * BITS`, `let mut` and assignments outside loops (plain rebindings), and every
/// compound assignment on u32.
#[bigfuse::kernel]
fn scaled_count(x: U<BITS>, a: u32) -> (U<BITS>, u32) {
    let mut y = x;
    y = y + x;
    let mut t = a;
    for i in 0..2 * BITS {
        t ^= i;
        t += 3;
        t -= 1;
        t *= 5;
        t |= i << 1;
        t &= 0xfff_ffff;
        t %= 1_000_003;
        t /= 1;
        t <<= 1;
        t >>= 1;
    }
    (y, t)
}

#[test]
fn a_count_that_is_a_multiple_of_a_size() {
    let bits = 64u64;
    let m = modulus(bits);
    let mut r = rng(8);
    let xs: Vec<BigUint> = (0..7).map(|_| random_big(&mut r, bits)).collect();
    let avs: Vec<u32> = (0..7u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
    let want_y: Vec<BigUint> = xs.iter().map(|x| (x + x) % &m).collect();
    let want_t: Vec<u32> = avs
        .iter()
        .map(|&a| {
            let mut t = a;
            for i in 0..2 * bits as u32 {
                t ^= i;
                t = t.wrapping_add(3).wrapping_sub(1).wrapping_mul(5);
                t |= i << 1;
                t &= 0xfff_ffff;
                t %= 1_000_003;
                t = (t << 1) >> 1;
            }
            t
        })
        .collect();
    for dev in devices() {
        let (y, t) =
            scaled_count::run(&dev, bits, &xs, &avs).unwrap_or_else(|e| panic!("{dev}: {e}"));
        assert_eq!(y, want_y, "{dev}");
        assert_eq!(t, want_t, "{dev}");
    }
    nvrtc_compiles(scaled_count::kernel().unwrap(), &[bits]);
}

/// Long loops of one-thread programs stay loops (codegen/src/loops.rs): square-and-multiply over
/// every bit at 320..1088 bits (tens of thousands of limb operations unrolled), on both CPU
/// levels and the GPU, both directions of the exponent, and the CUDA holds a `for` loop.
#[test]
fn long_loops_stay_loops() {
    for bits in [320u64, 512, 1088] {
        let m = modulus(bits);
        let (xs, es) = inputs(bits, 8);
        let want: Vec<BigUint> = xs.iter().zip(&es).map(|(x, e)| x.modpow(e, &m)).collect();
        let ones: Vec<u32> = es.iter().map(|e| e.count_ones() as u32).collect();
        for dev in devices() {
            let got = pow_bits::run(&dev, bits, &xs, &es)
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            assert_eq!(got, want, "{bits} bits on {dev}");
            let (got, counted) = pow_counting::run(&dev, bits, &xs, &es)
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            assert_eq!(got, want, "{bits} bits on {dev}");
            assert_eq!(counted, ones, "{bits} bits on {dev}");
        }
        let cuda = pow_bits::kernel()
            .unwrap()
            .cuda_source(&[bits], &bigfuse::Target::h100())
            .unwrap();
        assert!(
            cuda.contains("#pragma unroll 1"),
            "{bits} bits: no loop in\n{cuda}"
        );
        nvrtc_compiles(pow_bits::kernel().unwrap(), &[bits]);
        nvrtc_compiles(pow_counting::kernel().unwrap(), &[bits]);
    }
}

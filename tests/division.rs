//! Division of big integers: `/`, `%`, `div_rem` (a divisor of another width) and `isqrt`, on whole
//! `U<BITS>` values (the parallel lowering) and on elements of `[U<BITS>; N]` (one thread per
//! element), fused with products. Every result is compared with num-bigint (computed here) on the
//! CPU backend at both levels and on the GPU when there is one, at the test sizes plus odd ones,
//! on edge values (0, 1, all ones, powers of two, a divisor above the dividend, divisor 1, equal
//! operands) and random ones; division by zero gives its documented values.

mod common;

use bigfuse::prelude::*;
use bigfuse::runtime::CpuLevel;
use common::{all_ones, modulus, random_big, rng};
use proptest::prelude::*;
use rand::Rng;

#[bigfuse::kernel]
fn divrem(a: U<BITS>, b: U<BITS>) -> (U<BITS>, U<BITS>) {
    (a / b, a % b)
}

/// A dividend twice as wide as the divisor (CGBN's `div_rem_wide` shape, without its
/// precondition that the quotient fits BITS bits).
#[bigfuse::kernel]
fn wide_divrem(w: U<{ 2 * BITS }>, b: U<BITS>) -> (U<{ 2 * BITS }>, U<BITS>) {
    w.div_rem(b)
}

/// Products reduced modulo m, and several divisions by one divisor (one reciprocal).
#[bigfuse::kernel]
fn modular(a: U<BITS>, b: U<BITS>, m: U<BITS>) -> (U<BITS>, U<BITS>, U<BITS>) {
    let (_, ab) = a.mul_wide(b).div_rem(m);
    let s = (a % m + b % m) % m;
    (ab, s, (a * b) / m)
}

#[bigfuse::kernel]
fn roots(a: U<BITS>, w: U<{ 2 * BITS }>) -> (U<BITS>, U<{ 2 * BITS }>) {
    (a.isqrt(), w.isqrt())
}

#[bigfuse::kernel]
fn array_roots(xs: [U<BITS>; N]) -> [U<BITS>; N] {
    xs.map(|x| x.isqrt())
}

#[bigfuse::kernel]
fn array_divrem(xs: [U<BITS>; N], ys: [U<BITS>; N]) -> ([U<BITS>; N], [U<BITS>; N]) {
    let zs = xs.zip(ys);
    (zs.map(|(x, y)| x / y), zs.map(|(x, y)| x % y))
}

fn quotient(a: &BigUint, b: &BigUint, bits: u64) -> BigUint {
    if *b == BigUint::from(0u8) {
        all_ones(bits)
    } else {
        a / b
    }
}

fn remainder(a: &BigUint, b: &BigUint, bits: u64) -> BigUint {
    if *b == BigUint::from(0u8) {
        a % modulus(bits)
    } else {
        a % b
    }
}

/// Values of `bits` bits worth dividing: the common edges, powers of two and their neighbours,
/// short values (divisors far below the dividend).
fn values(bits: u64, seed: u64) -> Vec<BigUint> {
    let mut v = common::edge_values(bits);
    for p in [1u64, 31, 32, 63, 64, 65, bits / 2, bits - 1] {
        if p < bits {
            let x = BigUint::from(1u8) << p;
            v.push(&x + 1u8);
            v.push(&x - 1u8);
            v.push(x);
        }
    }
    v.push(BigUint::from(3u8));
    v.push(BigUint::from(7u8));
    let mut r = rng(seed ^ bits);
    for _ in 0..4 {
        v.push(random_big(&mut r, bits));
    }
    v
}

/// Pairs (a, b): every value by a spread of the others, and a by a, a by a + 1, a by 1.
fn pairs(bits: u64, seed: u64) -> (Vec<BigUint>, Vec<BigUint>) {
    let vs = values(bits, seed);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (i, x) in vs.iter().enumerate() {
        for j in [0, 1, 3, 7, 11] {
            a.push(x.clone());
            b.push(vs[(i + j) % vs.len()].clone());
        }
        a.push(x.clone());
        b.push((x + 1u8) % modulus(bits));
        a.push(x.clone());
        b.push(BigUint::from(1u8));
    }
    (a, b)
}

fn is_lowered(dev: &Device) -> bool {
    matches!(dev, Device::Cpu(c) if c.level == CpuLevel::Lowered)
}

/// The test sizes up to 8192 bits and an odd one; the lowered evaluator interprets every limb of
/// the reciprocal's products, so it stops at 2048 bits. (Each size is three kernels of some
/// hundred KB of CUDA: larger sizes are left to the bench, which checks its results too.)
fn sizes(dev: &Device) -> Vec<u64> {
    let mut s: Vec<u64> = common::SIZES
        .iter()
        .copied()
        .filter(|&b| b <= 8192)
        .collect();
    s.push(1088);
    if is_lowered(dev) {
        s.retain(|&b| b <= 2048);
    }
    s
}

/// Limb counts of the random GPU cases: a few, so that their kernels compile once.
const GPU_LIMBS: [u64; 6] = [1, 2, 5, 16, 17, 32];

fn check_whole(dev: &Device, bits: u64, a: &[BigUint], b: &[BigUint]) {
    let ctx = |what: &str, i: usize| {
        format!(
            "{what} at {bits} bits on {dev}, instance {i}: a={:#x} b={:#x}",
            a[i], b[i]
        )
    };
    let (q, r) = divrem::run(dev, bits, a, b).unwrap();
    for i in 0..a.len() {
        assert_eq!(q[i], quotient(&a[i], &b[i], bits), "{}", ctx("a / b", i));
        assert_eq!(r[i], remainder(&a[i], &b[i], bits), "{}", ctx("a % b", i));
    }
    // The wide dividend: a * 2^bits + b's complement, by b.
    let w: Vec<BigUint> = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x << bits) + (all_ones(bits) - y))
        .collect();
    let (wq, wr) = wide_divrem::run(dev, bits, &w, b).unwrap();
    for i in 0..a.len() {
        assert_eq!(
            wq[i],
            quotient(&w[i], &b[i], 2 * bits),
            "{}",
            ctx("wide q", i)
        );
        assert_eq!(wr[i], remainder(&w[i], &b[i], bits), "{}", ctx("wide r", i));
    }
    let m = modulus(bits);
    let c: Vec<BigUint> = b.iter().map(|y| (y * 3u8 + 1u8) % &m).collect();
    let (ab, s, abq) = modular::run(dev, bits, a, b, &c).unwrap();
    for i in 0..a.len() {
        let p = &a[i] * &b[i];
        assert_eq!(ab[i], remainder(&p, &c[i], bits), "{}", ctx("a b mod m", i));
        // The kernel's sum wraps modulo 2^bits like every U<BITS> sum.
        let sum = (remainder(&a[i], &c[i], bits) + remainder(&b[i], &c[i], bits)) % &m;
        assert_eq!(
            s[i],
            remainder(&sum, &c[i], bits),
            "{}",
            ctx("(a + b) mod m", i)
        );
        assert_eq!(
            abq[i],
            quotient(&(p % &m), &c[i], bits),
            "{}",
            ctx("(a b) / m", i)
        );
    }
}

/// Square roots of the values, of their squares and of their squares' neighbours.
fn check_roots(dev: &Device, bits: u64, a: &[BigUint]) {
    let m = modulus(bits);
    let mut xs: Vec<BigUint> = a.to_vec();
    for x in a {
        let h = x % modulus(bits / 2);
        xs.push(&h * &h);
        xs.push((&h * &h + 2u8 * &h) % &m);
    }
    let w: Vec<BigUint> = xs.iter().map(|x| x * x + x).collect();
    let (r, rw) = roots::run(dev, bits, &xs, &w).unwrap();
    for i in 0..xs.len() {
        assert_eq!(
            r[i],
            xs[i].sqrt(),
            "isqrt of {:#x} at {bits} bits on {dev}",
            xs[i]
        );
        assert_eq!(rw[i], w[i].sqrt(), "isqrt of the wide {:#x} on {dev}", w[i]);
    }
}

#[test]
fn square_roots_edge_cases() {
    for dev in common::devices() {
        // Roots of values from 8192 bits are the root's device function (a few KB of CUDA);
        // narrower ones are written out level by level.
        for bits in sizes(&dev) {
            let (a, _) = pairs(bits, 3);
            check_roots(&dev, bits, &a);
        }
        let bits = 320;
        let (a, _) = pairs(bits, 4);
        let len = 4;
        let n = a.len() / len * len;
        let r = array_roots::run(&dev, bits, len as u64, &a[..n]).unwrap();
        for i in 0..n {
            assert_eq!(
                r[i],
                a[i].sqrt(),
                "element {i}: isqrt of {:#x} on {dev}",
                a[i]
            );
        }
    }
}

#[test]
fn whole_values_edge_cases() {
    for dev in common::devices() {
        for bits in sizes(&dev) {
            let (a, b) = pairs(bits, 1);
            check_whole(&dev, bits, &a, &b);
        }
    }
}

fn check_arrays(dev: &Device, bits: u64, len: usize, a: &[BigUint], b: &[BigUint]) {
    let (q, r) = array_divrem::run(dev, bits, len as u64, a, b).unwrap();
    for i in 0..a.len() {
        let ctx = format!(
            "element {i} at {bits} bits x {len} on {dev}: {:#x} by {:#x}",
            a[i], b[i]
        );
        assert_eq!(q[i], quotient(&a[i], &b[i], bits), "quotient of {ctx}");
        assert_eq!(r[i], remainder(&a[i], &b[i], bits), "remainder of {ctx}");
    }
}

#[test]
fn array_elements_edge_cases() {
    for dev in common::devices() {
        for bits in [64u64, 128, 192, 320, 512] {
            let (a, b) = pairs(bits, 2);
            // Whole arrays of 4 elements: pad to a multiple.
            let len = 4;
            let n = a.len().div_ceil(len) * len;
            let pad =
                |v: &[BigUint]| -> Vec<BigUint> { v.iter().cycle().take(n).cloned().collect() };
            check_arrays(&dev, bits, len, &pad(&a), &pad(&b));
        }
    }
}

/// Random operands: the dividend and divisor of independent random lengths.
fn random_pairs(bits: u64, seed: u64, n: usize) -> (Vec<BigUint>, Vec<BigUint>) {
    let mut r = rng(seed);
    let one = |r: &mut rand::rngs::StdRng| {
        let x = random_big(r, bits);
        let keep = r.gen_range(1..=bits);
        x % modulus(keep)
    };
    let a = (0..n).map(|_| one(&mut r)).collect();
    let b = (0..n).map(|_| one(&mut r)).collect();
    (a, b)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn random_values_cpu(limbs in 1u64..=12, seed in any::<u64>(), n in 1usize..12) {
        let bits = limbs * 64;
        let (a, b) = random_pairs(bits, seed, n);
        check_whole(&Device::cpu_lowered(), bits, &a, &b);
    }

    #[test]
    fn random_values_gpu(k in 0usize..GPU_LIMBS.len(), seed in any::<u64>(), n in 1usize..300) {
        let Some(dev) = common::gpu() else { return Ok(()) };
        let bits = GPU_LIMBS[k] * 64;
        let (a, b) = random_pairs(bits, seed, n);
        check_whole(&dev, bits, &a, &b);
    }
}

#[test]
fn nvrtc_compiles_every_division_kernel() {
    for bits in [64u64, 256, 320, 1024, 1088, 4096] {
        common::nvrtc_compiles(divrem::kernel().unwrap(), &[bits]);
        common::nvrtc_compiles(wide_divrem::kernel().unwrap(), &[bits]);
        common::nvrtc_compiles(modular::kernel().unwrap(), &[bits]);
    }
    for bits in [64u64, 320] {
        common::nvrtc_compiles(array_divrem::kernel().unwrap(), &[bits, 4]);
        common::nvrtc_compiles(array_roots::kernel().unwrap(), &[bits, 4]);
    }
    for bits in [64u64, 320, 1024] {
        common::nvrtc_compiles(roots::kernel().unwrap(), &[bits]);
    }
}

/// Divisors wider than a thread's registers hold (4096, 8192 and 4160 bits; 4096 with a dividend
/// of twice the width), divided whole in local memory (by default up to 4096 bits, and up to 16384
/// where the dividend is no wider; the hint `divw` sets the widest divisor instead): the kernel calls the device function, NVRTC compiles it, and on a
/// GPU the quotients and remainders equal num-bigint's (the CPU backend's evaluators compute the
/// same program: `codegen/src/divide.rs` checks that), quotients of one word (the short path) and
/// of many, the edge values included.
#[test]
fn wide_divisors_divided_whole_in_local_memory() {
    for (wide, bits, function, hint) in [
        (false, 4096u64, "bf_div_rem_128_128(", ""),
        (false, 8192, "bf_div_rem_256_256(", ""),
        (true, 4096, "bf_div_rem_256_128(", ""),
        (false, 4160, "bf_div_rem_130_130(", "divw=16384"),
    ] {
        let k = if wide {
            wide_divrem::kernel().unwrap()
        } else {
            divrem::kernel().unwrap()
        };
        let na = if wide { 2 * bits } else { bits };
        let hints: bigfuse::Hints = hint.parse().unwrap();
        let plan = k.plan(&[bits], &bigfuse::Target::h100(), &hints).unwrap();
        assert!(
            plan.parts
                .iter()
                .all(|p| p.compiled.source.contains(function)),
            "{bits} bits: {function}"
        );
        // These divisions want their registers: the room for more blocks that roots get
        // (`schedule::ROOT_FUNCTION_MIN_BLOCKS`) made the wide shape 18% slower at 4096 bits.
        assert!(
            plan.parts
                .iter()
                .all(|p| p.compiled.source.contains("__launch_bounds__(128, 1)")),
            "{bits} bits"
        );
        if bigfuse::runtime::nvrtc::library().is_ok() {
            for part in &plan.parts {
                let c = &part.compiled;
                bigfuse::runtime::nvrtc::compile_uncached(&c.source, &c.kernel_name, "sm_90")
                    .unwrap();
            }
        }
        let Some(dev) = common::gpu() else { continue };
        let (a, b) = wide_cases(bits, na);
        let cols = k
            .run_with(
                &dev,
                &[bits],
                &[a.as_slice().into(), b.as_slice().into()],
                &hints,
            )
            .unwrap();
        let (bigfuse::runtime::Column::Big(q), bigfuse::runtime::Column::Big(rem)) =
            (&cols[0], &cols[1])
        else {
            panic!("two columns of big integers")
        };
        for i in 0..a.len() {
            assert_eq!(
                q[i],
                quotient(&a[i], &b[i], na),
                "{bits}: {:#x} / {:#x}",
                a[i],
                b[i]
            );
            assert_eq!(
                rem[i],
                remainder(&a[i], &b[i], bits),
                "{bits}: {:#x} % {:#x}",
                a[i],
                b[i]
            );
        }
    }
}

/// Operands of a division by a `bits`-bit divisor of an `na`-bit dividend: random ones of every
/// length, divisor zero, one, all ones, above the dividend, and a quotient of a few words.
fn wide_cases(bits: u64, na: u64) -> (Vec<BigUint>, Vec<BigUint>) {
    let mut r = rng(bits);
    let mut a: Vec<BigUint> = (0..37)
        .map(|i| random_big(&mut r, na) >> (i * 31 % 97))
        .collect();
    let mut b: Vec<BigUint> = (0..37)
        .map(|i| random_big(&mut r, bits) >> (i * 97 % bits as usize))
        .collect();
    // Divisors of full width: quotients of one word (the short path), its add-back at b - 1.
    for i in 0..8u32 {
        let d = random_big(&mut r, bits) | (BigUint::from(1u8) << (bits - 1 - u64::from(i)));
        a.push((&d * (i + 1) - (i % 2)) % modulus(na));
        b.push(d);
    }
    let top = BigUint::from(1u8) << (bits - 1);
    a.extend([
        all_ones(na),
        BigUint::from(5u8),
        all_ones(na),
        all_ones(na),
        BigUint::from(0u8),
        (&top * 12345u32 + 17u32) % modulus(na),
    ]);
    b.extend([
        BigUint::from(0u8),
        BigUint::from(7u8),
        BigUint::from(1u8),
        all_ones(bits),
        all_ones(bits),
        &top + 1u32,
    ]);
    (a, b)
}

#[bigfuse::kernel]
fn quotient_alone(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a / b
}

#[bigfuse::kernel]
fn remainder_alone(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a % b
}

/// A quotient alone and a remainder alone: the device function computes and writes only what
/// is read, and above 2048 bits reads the operands where they lie in global memory and writes
/// the result into the kernel's (no copy of either in the kernel); on a GPU both equal
/// num-bigint's.
#[test]
fn quotients_alone_and_remainders_alone() {
    for bits in [1024u64, 2048, 4096, 8192] {
        for (quotients, k) in [
            (true, quotient_alone::kernel().unwrap()),
            (false, remainder_alone::kernel().unwrap()),
        ] {
            let words = 2 * bits / 64;
            // Above 2048 bits the warp writes one-word quotients, each thread a longer one.
            let function = match (quotients, bits > 2048) {
                (true, true) => format!("bf_div_{words}_{words}_w"),
                (true, false) => format!("bf_div_{words}_{words}"),
                (false, _) => format!("bf_rem_{words}_{words}"),
            };
            let source = k.cuda_source(&[bits], &bigfuse::Target::h100()).unwrap();
            assert!(
                source.contains(&format!("{function}(")),
                "{bits} bits: {function}"
            );
            // Up to 2048 bits the division holds its operands in registers: they are loaded, and
            // its result is stored from registers; above, it reads and writes global memory.
            assert_eq!(
                source.contains("const u64 p0["),
                bits <= 2048,
                "{bits} bits: operands copied"
            );
            let written = if quotients {
                format!("const bool bf_one_word = live && {function}(out0 + inst")
            } else {
                format!("if (live) {function}(out0 + inst")
            };
            assert_eq!(
                source.contains(&written),
                bits > 2048,
                "{bits} bits: result written where computed"
            );
            assert_eq!(
                source.contains("__ballot_sync(0xffffffffu, bf_one_word), bf_q)"),
                quotients && bits > 2048,
                "{bits} bits: the warp writes one-word quotients"
            );
            if bigfuse::runtime::nvrtc::library().is_ok() {
                common::nvrtc_compiles(k, &[bits]);
            }
            let Some(dev) = common::gpu() else { continue };
            let (a, b) = wide_cases(bits, bits);
            let cols = k
                .run_with(
                    &dev,
                    &[bits],
                    &[a.as_slice().into(), b.as_slice().into()],
                    &bigfuse::Hints::default(),
                )
                .unwrap();
            let bigfuse::runtime::Column::Big(got) = &cols[0] else {
                panic!("a column of big integers")
            };
            for i in 0..a.len() {
                let want = if quotients {
                    quotient(&a[i], &b[i], bits)
                } else {
                    remainder(&a[i], &b[i], bits)
                };
                assert_eq!(got[i], want, "{bits}: {:#x}, {:#x}", a[i], b[i]);
            }
        }
    }
}

#[bigfuse::kernel]
fn wide_quotient_alone(w: U<{ 2 * BITS }>, b: U<BITS>) -> U<{ 2 * BITS }> {
    w.div_rem(b).0
}

#[bigfuse::kernel]
fn wide_remainder_alone(w: U<{ 2 * BITS }>, b: U<BITS>) -> U<BITS> {
    w.div_rem(b).1
}

/// Pairs at `bits` bits: each value of [`values`] by two others, by itself plus one and by one.
fn fewer_pairs(bits: u64, seed: u64) -> (Vec<BigUint>, Vec<BigUint>) {
    let vs = values(bits, seed);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (i, x) in vs.iter().enumerate() {
        for y in [
            vs[(i + 1) % vs.len()].clone(),
            vs[(i + 7) % vs.len()].clone(),
            (x + 1u8) % modulus(bits),
            BigUint::from(1u8),
        ] {
            a.push(x.clone());
            b.push(y);
        }
    }
    (a, b)
}

/// `a / b` and `a % b`, and the quotient and the remainder of a dividend twice as wide, each a
/// kernel of its own, at the test sizes above 8192 bits (to 262144) on both CPU levels and the
/// GPU, edge values included. One thread divides whole where the dividend is no wider than the
/// divisor, and every division of a dividend wider than 131072 bits
/// (`divide::EXPANDED_MAX_DIVIDEND_BITS`), reading the operands and writing the part where they
/// lie; the wide shape is expanded below (the lowered evaluator, which interprets each limb of
/// the expansion's products, leaves those to the other devices).
#[test]
fn divisions_at_the_widest_test_sizes() {
    let expanded_max = bigfuse::codegen::divide::EXPANDED_MAX_DIVIDEND_BITS;
    for bits in common::SIZES.iter().copied().filter(|&b| b > 8192) {
        let (a, b) = fewer_pairs(bits, bits);
        let w: Vec<BigUint> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x << bits) + (all_ones(bits) - y))
            .collect();
        let by_b = |xs: &[BigUint], f: &dyn Fn(&BigUint, &BigUint) -> BigUint| -> Vec<BigUint> {
            xs.iter().zip(&b).map(|(x, y)| f(x, y)).collect()
        };
        let q = by_b(&a, &|x, y| quotient(x, y, bits));
        let r = by_b(&a, &|x, y| remainder(x, y, bits));
        let wq = by_b(&w, &|x, y| quotient(x, y, 2 * bits));
        let wr = by_b(&w, &|x, y| remainder(x, y, bits));
        let expanded = 2 * bits <= expanded_max;
        for dev in common::devices() {
            let at = |what: &str, i: usize| {
                format!(
                    "{what} at {bits} bits on {dev}, instance {i}: a={:#x} b={:#x}",
                    a[i], b[i]
                )
            };
            let got = quotient_alone::run(&dev, bits, &a, &b).unwrap();
            (0..a.len()).for_each(|i| assert_eq!(got[i], q[i], "{}", at("a / b", i)));
            let got = remainder_alone::run(&dev, bits, &a, &b).unwrap();
            (0..a.len()).for_each(|i| assert_eq!(got[i], r[i], "{}", at("a % b", i)));
            if expanded && is_lowered(&dev) {
                continue;
            }
            let got = wide_quotient_alone::run(&dev, bits, &w, &b).unwrap();
            (0..a.len()).for_each(|i| assert_eq!(got[i], wq[i], "{}", at("wide q", i)));
            let got = wide_remainder_alone::run(&dev, bits, &w, &b).unwrap();
            (0..a.len()).for_each(|i| assert_eq!(got[i], wr[i], "{}", at("wide r", i)));
        }
        for k in [quotient_alone::kernel(), remainder_alone::kernel()] {
            let source = k
                .unwrap()
                .cuda_source(&[bits], &bigfuse::Target::h100())
                .unwrap();
            assert!(
                source.len() < 64 << 10,
                "{bits} bits: {} bytes",
                source.len()
            );
        }
        for k in [
            wide_quotient_alone::kernel(),
            wide_remainder_alone::kernel(),
        ] {
            let source = k
                .unwrap()
                .cuda_source(&[bits], &bigfuse::Target::h100())
                .unwrap();
            // One thread's division is a few KB at every width; the expansion is not.
            assert_eq!(source.len() < 64 << 10, !expanded, "{bits} bits");
        }
        common::nvrtc_compiles(quotient_alone::kernel().unwrap(), &[bits]);
        common::nvrtc_compiles(remainder_alone::kernel().unwrap(), &[bits]);
        common::nvrtc_compiles(wide_quotient_alone::kernel().unwrap(), &[bits]);
        common::nvrtc_compiles(wide_remainder_alone::kernel().unwrap(), &[bits]);
        eprintln!("divisions at {bits} bits agree");
    }
}

#[bigfuse::kernel]
fn root_alone(a: U<BITS>) -> U<BITS> {
    a.isqrt()
}

#[bigfuse::kernel]
fn wide_root_alone(w: U<{ 2 * BITS }>) -> U<{ 2 * BITS }> {
    w.isqrt()
}

/// Square roots of values of the test sizes above 8192 bits (to 262144, and of their halves
/// through the wide shape), which one thread takes through the root's device function
/// (`divide::ROOT_FUNCTION_FROM_BITS`, `emit/isqrt.rs`; written out, the Karatsuba square root
/// was 2.7 MB of CUDA and 74 s of NVRTC at 16384 bits): edge values, squares and their
/// neighbours, on both CPU levels, NVRTC and the GPU, each kernel a few KB of CUDA.
#[test]
fn square_roots_at_the_widest_test_sizes() {
    for bits in common::SIZES.iter().copied().filter(|&b| b > 8192) {
        let (a, _) = fewer_pairs(bits, 5 * bits);
        let mut xs: Vec<BigUint> = a.into_iter().step_by(4).collect();
        let mut r = rng(bits);
        for k in [2u64, 63, 64, 65, bits / 4, bits / 2 - 1] {
            let s = (random_big(&mut r, k.div_ceil(64) * 64) % modulus(k))
                | (BigUint::from(1u8) << (k - 1));
            xs.extend([&s * &s - 1u8, &s * &s, &s * &s + &s + &s]);
        }
        let roots: Vec<BigUint> = xs.iter().map(|x| x.sqrt()).collect();
        let half = bits / 2;
        let halves: Vec<BigUint> = xs.iter().filter(|x| x.bits() <= half).cloned().collect();
        let half_roots: Vec<BigUint> = halves.iter().map(|x| x.sqrt()).collect();
        for dev in common::devices() {
            let got = root_alone::run(&dev, bits, &xs).unwrap();
            for i in 0..xs.len() {
                assert_eq!(
                    got[i], roots[i],
                    "isqrt of {:#x} ({bits} bits) on {dev}",
                    xs[i]
                );
            }
            let got = wide_root_alone::run(&dev, half, &halves).unwrap();
            for i in 0..halves.len() {
                assert_eq!(
                    got[i], half_roots[i],
                    "isqrt of the wide {:#x} ({bits} bits) on {dev}",
                    halves[i]
                );
            }
        }
        for (k, at) in [
            (root_alone::kernel(), bits),
            (wide_root_alone::kernel(), half),
        ] {
            let k = k.unwrap();
            let source = k.cuda_source(&[at], &bigfuse::Target::h100()).unwrap();
            assert!(source.contains("bf_isqrt_"), "{bits} bits");
            // The function waits on local memory: room for more resident threads.
            let bounds = format!(
                "__launch_bounds__(128, {})",
                bigfuse::codegen::schedule::ROOT_FUNCTION_MIN_BLOCKS
            );
            assert!(source.contains(&bounds), "{bits} bits: {bounds}");
            // The function writes the root where it goes: the kernel does not grow with the
            // width but for the comment that lists its tuple's limbs.
            assert!(
                source.len() < 64 << 10,
                "{bits} bits: {} bytes",
                source.len()
            );
            common::nvrtc_compiles(k, &[at]);
        }
        eprintln!("square roots at {bits} bits agree");
    }
}

/// CGBN's `sqrt_wide` shape as a user writes it: the width is not a value in a kernel, so the
/// shift by it is `U::ZERO.leading_zeros()`.
#[bigfuse::kernel]
fn root_of_the_concatenation(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let zero: U<BITS> = U::ZERO;
    let w = ((a as U<{ 2 * BITS }>) << zero.leading_zeros()) | (b as U<{ 2 * BITS }>);
    w.isqrt() as U<BITS>
}

/// The root of the concatenation, then `^ b`: `b` is read twice, so it is loaded, and the root
/// is read, so it is not written where it goes; `a`'s words are still read where they lie.
#[bigfuse::kernel]
fn root_of_the_concatenation_then_xor(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let zero: U<BITS> = U::ZERO;
    let w = ((a as U<{ 2 * BITS }>) << zero.leading_zeros()) | (b as U<{ 2 * BITS }>);
    (w.isqrt() as U<BITS>) ^ b
}

/// The shift by the width as a value is a shift by a constant once `fold` computed the width:
/// limbs renamed, where a shift by a run-time amount made a barrel shifter over every limb
/// (517 KB of CUDA at 16384 bits, most of it that and the leading-zero count of a zero). The
/// words the shift and the cast put at zero decide the `|` (`scalarize`), so the root's
/// operand is `b`'s words then `a`'s, copied by two loops from where they lie, and the root,
/// cast back to `BITS`, is written where it goes: a few KB of CUDA at every width (117 KB at
/// 16384 bits and 143 s of NVRTC at 65536 before). The roots equal num-bigint's on every
/// device, and NVRTC compiles the kernels.
#[test]
fn the_width_as_a_value_shifts_by_a_constant() {
    // The kernel that holds `b` and the root in registers grows with the width.
    const XORED_UP_TO: u64 = 16384;
    for bits in [4096u64, 16384, 65536] {
        let most = 32usize << 10;
        let (a, b) = fewer_pairs(bits, 3 * bits);
        let (a, b): (Vec<BigUint>, Vec<BigUint>) = (
            a.into_iter().step_by(5).collect(),
            b.into_iter().step_by(5).collect(),
        );
        let want: Vec<BigUint> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| ((x << bits) + y).sqrt())
            .collect();
        let xored: Vec<BigUint> = want.iter().zip(&b).map(|(r, y)| r ^ y).collect();
        for dev in common::devices() {
            let got = root_of_the_concatenation::run(&dev, bits, &a, &b).unwrap();
            assert_eq!(got, want, "{bits} bits on {dev}");
            if bits <= XORED_UP_TO {
                let got = root_of_the_concatenation_then_xor::run(&dev, bits, &a, &b).unwrap();
                assert_eq!(got, xored, "{bits} bits on {dev}, then ^ b");
            }
        }
        let limbs = bits / 64;
        let k = root_of_the_concatenation::kernel().unwrap();
        let source = k.cuda_source(&[bits], &bigfuse::Target::h100()).unwrap();
        assert!(!source.contains("__clzll(0ull)"), "{bits} bits");
        assert!(source.len() < most, "{bits} bits: {} bytes", source.len());
        for copy in [
            format!("for (int i = 0; i < {limbs}; ++i) p0[0 + i] = "),
            format!("for (int i = 0; i < {limbs}; ++i) p0[{limbs} + i] = "),
            format!("(out0 + inst * {limbs}ull, p0, {limbs});"),
        ] {
            assert!(source.contains(&copy), "{bits} bits: {copy}");
        }
        common::nvrtc_compiles(k, &[bits]);
        if bits > XORED_UP_TO {
            continue;
        }
        let k = root_of_the_concatenation_then_xor::kernel().unwrap();
        let source = k.cuda_source(&[bits], &bigfuse::Target::h100()).unwrap();
        let copy = format!("for (int i = 0; i < {limbs}; ++i) p0[{limbs} + i] = ");
        assert!(source.contains(&copy), "{bits} bits, then ^ b: {copy}");
        common::nvrtc_compiles(k, &[bits]);
    }
}

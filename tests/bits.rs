//! Bit operations on big integers (`!`, `&`, `|`, `^`, shifts and rotations by a constant or a
//! run-time u32, bit counts and tests, bit fields, masks, changes of width) and on u32/u64 (counts,
//! rotations, bit tests, `/`, `%`): whole-kernel `U<BITS>` values (the parallel lowering) and
//! elements of `[U<BITS>; N]` (one thread per element), fused with `+` and `*`. Every result is
//! compared with num-bigint (computed here, not by the evaluator) on the CPU backend at both
//! levels and on the GPU when there is one, at the test sizes plus odd ones, on edge values and
//! amounts (0, 1, 63, 64, BITS - 1, BITS, BITS + 1, u32::MAX) and on random ones.

mod common;

use bigfuse::prelude::*;
use bigfuse::runtime::CpuLevel;
use common::{all_ones, modulus, random_big, rng};
use proptest::prelude::*;
use rand::Rng;

// ---- kernels over whole U<BITS> values -------------------------------------------------------

#[bigfuse::kernel]
fn logic(a: U<BITS>, b: U<BITS>) -> (U<BITS>, U<BITS>, U<BITS>, U<BITS>) {
    (a & b, a | b, a ^ b, !a)
}

#[bigfuse::kernel]
fn shifts(a: U<BITS>, k: u32) -> (U<BITS>, U<BITS>, U<BITS>, U<BITS>) {
    (a << k, a >> k, a.rotate_left(k), a.rotate_right(k))
}

/// Shifts by literal amounts (limb edges and beyond).
#[bigfuse::kernel]
fn constant_shifts(a: U<BITS>) -> (U<BITS>, U<BITS>, U<BITS>, U<BITS>, U<BITS>) {
    (
        a << 1,
        a >> 63,
        a.rotate_left(64),
        a << 65,
        a.rotate_right(0) >> 0,
    )
}

#[bigfuse::kernel]
fn counts(a: U<BITS>, i: u32) -> (u32, u32, u32, bool) {
    (
        a.leading_zeros(),
        a.trailing_zeros(),
        a.count_ones(),
        a.bit(i),
    )
}

#[bigfuse::kernel]
fn fields(a: U<BITS>, f: U<BITS>, lo: u32, len: u32) -> (U<BITS>, U<BITS>, U<BITS>, U<BITS>) {
    let m: U<BITS> = U::mask(len);
    (
        a.extract_bits(lo, len),
        a.insert_bits(f, lo, len),
        U::<BITS>::mask(lo),
        m ^ U::MAX,
    )
}

#[bigfuse::kernel]
fn widths(a: U<BITS>) -> (U<{ 2 * BITS }>, U<128>, U<BITS>, u64, u32) {
    (
        a as U<{ 2 * BITS }>,
        a as U<128>,
        (a as U<128>) as U<BITS>,
        a as u64,
        a as u32,
    )
}

/// Shifts, bit operations, `+` and `*` in one expression.
#[bigfuse::kernel]
fn fused(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    ((a << 3) ^ b) + (a >> 7) * b
}

/// A shift that reads a product (and a count of a sum, a rotation by a count).
#[bigfuse::kernel]
fn shifted_product(a: U<BITS>, b: U<BITS>, k: u32) -> (U<BITS>, u32, U<BITS>) {
    let p = a * b;
    let c = (a + b).count_ones();
    ((p >> k) | !(p << (k % 64)), c, a.rotate_left(c) & (b - a))
}

/// Scalars: division and remainder (x / 0 is all ones, x % 0 is x), counts, rotations, tests.
#[bigfuse::kernel]
fn scalar_bits(x: u64, y: u64, s: u32, t: u32) -> (u64, u64, u32, u32, u64, u32, u32, bool, u32) {
    (
        x / y,
        x % y,
        s / t,
        s % t,
        x.rotate_left(s) ^ (x << 1),
        s.rotate_right(t),
        x.leading_zeros() + s.trailing_zeros(),
        x.bit(s) && !s.bit(t),
        x.count_ones() * 100 + x.trailing_zeros(),
    )
}

// ---- kernels over arrays of U<BITS> (one thread per element) -------------------------------

#[bigfuse::kernel]
fn array_logic(
    xs: [U<BITS>; N],
    ys: [U<BITS>; N],
) -> ([U<BITS>; N], [U<BITS>; N], [U<BITS>; N], [U<BITS>; N]) {
    (
        xs.zip(ys).map(|(x, y)| x & y),
        xs.zip(ys).map(|(x, y)| x | y),
        xs.zip(ys).map(|(x, y)| x ^ y),
        xs.map(|x| !x),
    )
}

#[bigfuse::kernel]
fn array_shifts(
    xs: [U<BITS>; N],
    k: u32,
) -> ([U<BITS>; N], [U<BITS>; N], [U<BITS>; N], [U<BITS>; N]) {
    (
        xs.map(|x| x << k),
        xs.map(|x| x >> k),
        xs.map(|x| x.rotate_left(k)),
        xs.map(|x| x.rotate_right(k)),
    )
}

#[bigfuse::kernel]
fn array_counts(xs: [U<BITS>; N], i: u32) -> ([u32; N], [u32; N], [u32; N], [bool; N]) {
    (
        xs.map(|x| x.leading_zeros()),
        xs.map(|x| x.trailing_zeros()),
        xs.map(|x| x.count_ones()),
        xs.map(|x| x.bit(i)),
    )
}

#[bigfuse::kernel]
fn array_fields(
    xs: [U<BITS>; N],
    ys: [U<BITS>; N],
    lo: u32,
    len: u32,
) -> ([U<BITS>; N], [U<BITS>; N], [U<BITS>; N]) {
    (
        xs.map(|x| x.extract_bits(lo, len)),
        xs.zip(ys).map(|(x, y)| x.insert_bits(y, lo, len)),
        xs.map(|x| x & U::mask(len)),
    )
}

#[bigfuse::kernel]
fn array_widths(
    xs: [U<BITS>; N],
) -> (
    [U<{ 2 * BITS }>; N],
    [U<128>; N],
    [U<BITS>; N],
    [u64; N],
    [u32; N],
) {
    (
        xs.map(|x| x as U<{ 2 * BITS }>),
        xs.map(|x| x as U<128>),
        xs.map(|x| (x as U<128>) as U<BITS>),
        xs.map(|x| x as u64),
        xs.map(|x| x as u32),
    )
}

/// The fused expressions of `fused` and `shifted_product` on elements, and a reduction of
/// rotations with `^`.
#[bigfuse::kernel]
fn array_fused(
    xs: [U<BITS>; N],
    ys: [U<BITS>; N],
    k: u32,
) -> ([U<BITS>; N], [U<BITS>; N], U<BITS>) {
    (
        xs.zip(ys).map(|(a, b)| ((a << 3) ^ b) + (a >> 7) * b),
        xs.zip(ys).map(|(a, b)| {
            let p = a * b;
            (p >> k) | !(p << (k % 64))
        }),
        xs.map(|x| x.rotate_left(k)).reduce(|a, b| a ^ b, U::ZERO),
    )
}

// ---- the reference, with num-bigint ----------------------------------------------------------

fn shl(a: &BigUint, k: u32, bits: u64) -> BigUint {
    if k as u64 >= bits {
        BigUint::default()
    } else {
        (a << k) % modulus(bits)
    }
}

fn shr(a: &BigUint, k: u32, bits: u64) -> BigUint {
    if k as u64 >= bits {
        BigUint::default()
    } else {
        a >> k
    }
}

fn rotl(a: &BigUint, k: u32, bits: u64) -> BigUint {
    let k = k as u64 % bits;
    ((a << k) | (a >> (bits - k))) % modulus(bits)
}

fn rotr(a: &BigUint, k: u32, bits: u64) -> BigUint {
    let k = k as u64 % bits;
    ((a >> k) | (a << (bits - k))) % modulus(bits)
}

fn not(a: &BigUint, bits: u64) -> BigUint {
    a ^ all_ones(bits)
}

fn clz(a: &BigUint, bits: u64) -> u32 {
    (bits - a.bits()) as u32
}

fn ctz(a: &BigUint, bits: u64) -> u32 {
    a.trailing_zeros().unwrap_or(bits) as u32
}

fn bit(a: &BigUint, i: u32, bits: u64) -> bool {
    (i as u64) < bits && a.bit(i as u64)
}

/// The low `len` bits set (all of them from `bits` on).
fn mask(len: u32, bits: u64) -> BigUint {
    all_ones((len as u64).min(bits))
}

/// Bits lo .. lo + len of `a`, at the bottom.
fn extract(a: &BigUint, lo: u32, len: u32, bits: u64) -> BigUint {
    let lo = (lo as u64).min(bits);
    (a >> lo) & mask(len, bits)
}

/// `a` with its bits lo .. lo + len (those below `bits`) taken from the low bits of `f`.
fn insert(a: &BigUint, f: &BigUint, lo: u32, len: u32, bits: u64) -> BigUint {
    let lo = (lo as u64).min(bits);
    let end = (lo + len as u64).min(bits);
    let hole = all_ones(end) ^ all_ones(lo);
    (a & not(&hole, bits)) | ((f << lo) & hole)
}

/// Values of `bits` bits worth testing: the common edges, and single bits and runs of ones at
/// limb edges and at the top.
fn values(bits: u64) -> Vec<BigUint> {
    let mut v = common::edge_values(bits);
    for p in [1u64, 63, 64, 65, bits / 2, bits - 2] {
        if p < bits {
            v.push(BigUint::from(1u8) << p);
            v.push(all_ones(bits) ^ (BigUint::from(1u8) << p));
        }
    }
    let mut r = rng(bits);
    v.push(random_big(&mut r, bits));
    v
}

/// Amounts and bit positions worth testing at `bits`.
fn amounts(bits: u64) -> Vec<u32> {
    let w = bits as u32;
    vec![
        0,
        1,
        2,
        63,
        64,
        65,
        127,
        w / 2 + 3,
        w - 1,
        w,
        w + 1,
        2 * w + 5,
        u32::MAX,
    ]
}

/// Every value with every amount: (a, b, k) per instance, b another value.
fn instances(bits: u64) -> (Vec<BigUint>, Vec<BigUint>, Vec<u32>) {
    let vs = values(bits);
    let ks = amounts(bits);
    let (mut a, mut b, mut k) = (Vec::new(), Vec::new(), Vec::new());
    for (i, x) in vs.iter().enumerate() {
        for (j, &kk) in ks.iter().enumerate() {
            a.push(x.clone());
            b.push(vs[(i + j + 1) % vs.len()].clone());
            k.push(kk);
        }
    }
    (a, b, k)
}

fn is_lowered(dev: &Device) -> bool {
    matches!(dev, Device::Cpu(c) if c.level == CpuLevel::Lowered)
}

/// Sizes for whole values on `dev`: the test sizes and odd ones (the lowered evaluator
/// interprets every limb: up to 4096 bits there).
fn whole_sizes(dev: &Device) -> Vec<u64> {
    let mut s: Vec<u64> = common::SIZES.to_vec();
    s.push(1088);
    if is_lowered(dev) {
        s.retain(|&b| b <= 4096);
    }
    s
}

/// Checks every whole-value kernel on these instances.
fn check_whole(dev: &Device, bits: u64, a: &[BigUint], b: &[BigUint], k: &[u32]) {
    let n = a.len();
    let m = modulus(bits);
    let ctx = |what: &str, i: usize| {
        format!(
            "{what} at {bits} bits on {dev}, instance {i}: a={:#x} b={:#x} k={}",
            a[i], b[i], k[i]
        )
    };
    let (and, or, xor, na) = logic::run(dev, bits, a, b).unwrap();
    for i in 0..n {
        assert_eq!(and[i], &a[i] & &b[i], "{}", ctx("&", i));
        assert_eq!(or[i], &a[i] | &b[i], "{}", ctx("|", i));
        assert_eq!(xor[i], &a[i] ^ &b[i], "{}", ctx("^", i));
        assert_eq!(na[i], not(&a[i], bits), "{}", ctx("!", i));
    }
    let (l, r, rl, rr) = shifts::run(dev, bits, a, k).unwrap();
    for i in 0..n {
        assert_eq!(l[i], shl(&a[i], k[i], bits), "{}", ctx("<<", i));
        assert_eq!(r[i], shr(&a[i], k[i], bits), "{}", ctx(">>", i));
        assert_eq!(rl[i], rotl(&a[i], k[i], bits), "{}", ctx("rotate_left", i));
        assert_eq!(rr[i], rotr(&a[i], k[i], bits), "{}", ctx("rotate_right", i));
    }
    let (c1, c2, c3, c4, c5) = constant_shifts::run(dev, bits, a).unwrap();
    for i in 0..n {
        assert_eq!(c1[i], shl(&a[i], 1, bits), "{}", ctx("<< 1", i));
        assert_eq!(c2[i], shr(&a[i], 63, bits), "{}", ctx(">> 63", i));
        assert_eq!(
            c3[i],
            rotl(&a[i], 64, bits),
            "{}",
            ctx("rotate_left(64)", i)
        );
        assert_eq!(c4[i], shl(&a[i], 65, bits), "{}", ctx("<< 65", i));
        assert_eq!(c5[i], a[i], "{}", ctx("rotate_right(0) >> 0", i));
    }
    let (lz, tz, ones, t) = counts::run(dev, bits, a, k).unwrap();
    for i in 0..n {
        assert_eq!(lz[i], clz(&a[i], bits), "{}", ctx("leading_zeros", i));
        assert_eq!(tz[i], ctz(&a[i], bits), "{}", ctx("trailing_zeros", i));
        assert_eq!(
            ones[i],
            a[i].count_ones() as u32,
            "{}",
            ctx("count_ones", i)
        );
        assert_eq!(t[i], bit(&a[i], k[i], bits), "{}", ctx("bit", i));
    }
    // Field positions and lengths from the amounts, paired differently.
    let len: Vec<u32> = (0..n).map(|i| k[(i * 7 + 3) % n]).collect();
    let (ex, ins, mk, inv) = fields::run(dev, bits, a, b, k, &len).unwrap();
    for i in 0..n {
        let c = || format!("{} len={}", ctx("fields", i), len[i]);
        assert_eq!(ex[i], extract(&a[i], k[i], len[i], bits), "extract {}", c());
        assert_eq!(
            ins[i],
            insert(&a[i], &b[i], k[i], len[i], bits),
            "insert {}",
            c()
        );
        assert_eq!(mk[i], mask(k[i], bits), "mask {}", c());
        assert_eq!(inv[i], not(&mask(len[i], bits), bits), "!mask {}", c());
    }
    let (wide, w128, back, w64, w32) = widths::run(dev, bits, a).unwrap();
    for i in 0..n {
        assert_eq!(wide[i], a[i], "{}", ctx("as U<2 BITS>", i));
        assert_eq!(w128[i], &a[i] % modulus(128), "{}", ctx("as U<128>", i));
        assert_eq!(back[i], &a[i] % modulus(128), "{}", ctx("as U<128> as", i));
        let low = a[i].iter_u64_digits().next().unwrap_or(0);
        assert_eq!(w64[i], low, "{}", ctx("as u64", i));
        assert_eq!(w32[i], low as u32, "{}", ctx("as u32", i));
    }
    let f = fused::run(dev, bits, a, b).unwrap();
    for i in 0..n {
        let want = ((shl(&a[i], 3, bits) ^ &b[i]) + shr(&a[i], 7, bits) * &b[i]) % &m;
        assert_eq!(f[i], want, "{}", ctx("fused", i));
    }
    let (sp, c, rot) = shifted_product::run(dev, bits, a, b, k).unwrap();
    for i in 0..n {
        let p = (&a[i] * &b[i]) % &m;
        let want = shr(&p, k[i], bits) | not(&shl(&p, k[i] % 64, bits), bits);
        assert_eq!(sp[i], want, "{}", ctx("shifted_product", i));
        let cnt = ((&a[i] + &b[i]) % &m).count_ones() as u32;
        assert_eq!(c[i], cnt, "{}", ctx("count of a sum", i));
        let diff = (&b[i] + &m - &a[i]) % &m;
        assert_eq!(
            rot[i],
            rotl(&a[i], cnt, bits) & diff,
            "{}",
            ctx("rotation by a count", i)
        );
    }
}

#[test]
fn whole_values_edge_cases() {
    for dev in common::devices() {
        for bits in whole_sizes(&dev) {
            let (a, b, k) = instances(bits);
            check_whole(&dev, bits, &a, &b, &k);
        }
    }
}

/// Random values and amounts at sizes 64 .. 64 * `max_limbs`.
fn random_instances(
    limbs: u64,
    seed: u64,
    n: usize,
) -> (u64, Vec<BigUint>, Vec<BigUint>, Vec<u32>) {
    let bits = limbs * 64;
    let mut r = rng(seed);
    let a: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
    let b: Vec<BigUint> = (0..n).map(|_| random_big(&mut r, bits)).collect();
    let special = amounts(bits);
    let k: Vec<u32> = (0..n)
        .map(|_| match r.gen_range(0..3) {
            0 => special[r.gen_range(0..special.len())],
            1 => r.gen_range(0..2 * bits as u32 + 2),
            _ => r.gen_range(0..bits as u32),
        })
        .collect();
    (bits, a, b, k)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_values_cpu(limbs in 1u64..=24, seed in any::<u64>(), n in 1usize..20) {
        let (bits, a, b, k) = random_instances(limbs, seed, n);
        check_whole(&Device::cpu(), bits, &a, &b, &k);
        check_whole(&Device::cpu_lowered(), bits, &a, &b, &k);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn random_values_gpu(limbs in 1u64..=2048, seed in any::<u64>(), n in 1usize..300) {
        let Some(dev) = common::gpu() else { return Ok(()) };
        let (bits, a, b, k) = random_instances(limbs, seed, n);
        check_whole(&dev, bits, &a, &b, &k);
    }
}

/// Checks every array kernel: `a`, `b` hold `len` elements per instance; `k` one amount per
/// instance.
fn check_arrays(dev: &Device, bits: u64, len: usize, a: &[BigUint], b: &[BigUint], k: &[u32]) {
    let n = len as u64;
    let m = modulus(bits);
    let ctx = |what: &str, e: usize| {
        format!(
            "{what} at {bits} bits on {dev}, element {e} (instance {}): x={:#x} y={:#x} k={}",
            e / len,
            a[e],
            b[e],
            k[e / len]
        )
    };
    let (and, or, xor, na) = array_logic::run(dev, bits, n, a, b).unwrap();
    for e in 0..a.len() {
        assert_eq!(and[e], &a[e] & &b[e], "{}", ctx("&", e));
        assert_eq!(or[e], &a[e] | &b[e], "{}", ctx("|", e));
        assert_eq!(xor[e], &a[e] ^ &b[e], "{}", ctx("^", e));
        assert_eq!(na[e], not(&a[e], bits), "{}", ctx("!", e));
    }
    let (l, r, rl, rr) = array_shifts::run(dev, bits, n, a, k).unwrap();
    for e in 0..a.len() {
        let kk = k[e / len];
        assert_eq!(l[e], shl(&a[e], kk, bits), "{}", ctx("<<", e));
        assert_eq!(r[e], shr(&a[e], kk, bits), "{}", ctx(">>", e));
        assert_eq!(rl[e], rotl(&a[e], kk, bits), "{}", ctx("rotate_left", e));
        assert_eq!(rr[e], rotr(&a[e], kk, bits), "{}", ctx("rotate_right", e));
    }
    let (lz, tz, ones, t) = array_counts::run(dev, bits, n, a, k).unwrap();
    for e in 0..a.len() {
        assert_eq!(lz[e], clz(&a[e], bits), "{}", ctx("leading_zeros", e));
        assert_eq!(tz[e], ctz(&a[e], bits), "{}", ctx("trailing_zeros", e));
        assert_eq!(
            ones[e],
            a[e].count_ones() as u32,
            "{}",
            ctx("count_ones", e)
        );
        assert_eq!(t[e], bit(&a[e], k[e / len], bits), "{}", ctx("bit", e));
    }
    let lens: Vec<u32> = (0..k.len()).map(|i| k[(i * 5 + 2) % k.len()]).collect();
    let (ex, ins, mk) = array_fields::run(dev, bits, n, a, b, k, &lens).unwrap();
    for e in 0..a.len() {
        let (lo, ln) = (k[e / len], lens[e / len]);
        let c = || format!("{} len={ln}", ctx("fields", e));
        assert_eq!(ex[e], extract(&a[e], lo, ln, bits), "extract {}", c());
        assert_eq!(ins[e], insert(&a[e], &b[e], lo, ln, bits), "insert {}", c());
        assert_eq!(mk[e], &a[e] & mask(ln, bits), "mask {}", c());
    }
    let (wide, w128, back, w64, w32) = array_widths::run(dev, bits, n, a).unwrap();
    for e in 0..a.len() {
        assert_eq!(wide[e], a[e], "{}", ctx("as U<2 BITS>", e));
        assert_eq!(w128[e], &a[e] % modulus(128), "{}", ctx("as U<128>", e));
        assert_eq!(back[e], &a[e] % modulus(128), "{}", ctx("as U<128> as", e));
        let low = a[e].iter_u64_digits().next().unwrap_or(0);
        assert_eq!(w64[e], low, "{}", ctx("as u64", e));
        assert_eq!(w32[e], low as u32, "{}", ctx("as u32", e));
    }
    let (f, sp, red) = array_fused::run(dev, bits, n, a, b, k).unwrap();
    for e in 0..a.len() {
        let kk = k[e / len];
        let want = ((shl(&a[e], 3, bits) ^ &b[e]) + shr(&a[e], 7, bits) * &b[e]) % &m;
        assert_eq!(f[e], want, "{}", ctx("fused", e));
        let p = (&a[e] * &b[e]) % &m;
        let want = shr(&p, kk, bits) | not(&shl(&p, kk % 64, bits), bits);
        assert_eq!(sp[e], want, "{}", ctx("shifted product", e));
    }
    for (i, got) in red.iter().enumerate() {
        let want = (i * len..(i + 1) * len)
            .fold(BigUint::default(), |acc, e| acc ^ rotl(&a[e], k[i], bits));
        assert_eq!(
            *got, want,
            "reduce(^) of rotations at {bits} bits on {dev}, instance {i}"
        );
    }
}

/// Element widths: the small test sizes and odd ones (one thread computes a whole element).
const ELEMENT_BITS: &[u64] = &[64, 128, 192, 256, 320, 512, 1088];

#[test]
fn array_elements_edge_cases() {
    for dev in common::devices() {
        for &bits in ELEMENT_BITS {
            // One instance per amount, each holding every edge value.
            let vs = values(bits);
            let ks = amounts(bits);
            let len = vs.len();
            let mut a = Vec::new();
            let mut b = Vec::new();
            for j in 0..ks.len() {
                a.extend(vs.iter().cloned());
                b.extend((0..len).map(|e| vs[(e + j + 1) % len].clone()));
            }
            check_arrays(&dev, bits, len, &a, &b, &ks);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn random_elements(limbs in 1u64..=18, seed in any::<u64>(), len in 1usize..40, batch in 1usize..5) {
        let (bits, a, b, _) = random_instances(limbs, seed, len * batch);
        let (_, _, _, k) = random_instances(limbs, seed ^ 1, batch);
        for dev in common::devices() {
            check_arrays(&dev, bits, len, &a, &b, &k);
        }
    }
}

#[test]
fn scalar_bit_operations_division_and_remainder() {
    let xs: Vec<u64> = vec![
        0,
        1,
        2,
        7,
        63,
        64,
        u64::MAX,
        u64::MAX - 1,
        1 << 63,
        0x0123_4567_89ab_cdef,
    ];
    let ss: Vec<u32> = vec![0, 1, 3, 31, 32, 33, 63, 64, 65, u32::MAX];
    let (mut x, mut y, mut s, mut t) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, &a) in xs.iter().enumerate() {
        for (j, &c) in ss.iter().enumerate() {
            x.push(a);
            y.push(xs[(i + j) % xs.len()]);
            s.push(c);
            t.push(ss[(i * 3 + j + 1) % ss.len()]);
        }
    }
    for dev in common::devices() {
        let (q, r, q32, r32, rot, rot32, zeros, tests, ones) =
            scalar_bits::run(&dev, &x, &y, &s, &t).unwrap();
        for i in 0..x.len() {
            let c = format!(
                "on {dev}: x={:#x} y={:#x} s={} t={}",
                x[i], y[i], s[i], t[i]
            );
            assert_eq!(
                q[i],
                x[i].checked_div(y[i]).unwrap_or(u64::MAX),
                "x / y {c}"
            );
            assert_eq!(r[i], x[i].checked_rem(y[i]).unwrap_or(x[i]), "x % y {c}");
            assert_eq!(
                q32[i],
                s[i].checked_div(t[i]).unwrap_or(u32::MAX),
                "s / t {c}"
            );
            assert_eq!(r32[i], s[i].checked_rem(t[i]).unwrap_or(s[i]), "s % t {c}");
            assert_eq!(
                rot[i],
                x[i].rotate_left(s[i]) ^ (x[i] << 1),
                "rotate_left {c}"
            );
            assert_eq!(rot32[i], s[i].rotate_right(t[i]), "rotate_right {c}");
            assert_eq!(
                zeros[i],
                x[i].leading_zeros() + s[i].trailing_zeros(),
                "zeros {c}"
            );
            let bit64 = s[i] < 64 && (x[i] >> s[i]) & 1 == 1;
            let bit32 = t[i] < 32 && (s[i] >> t[i]) & 1 == 1;
            assert_eq!(tests[i], bit64 && !bit32, "bit {c}");
            assert_eq!(
                ones[i],
                x[i].count_ones() * 100 + x[i].trailing_zeros(),
                "count_ones {c}"
            );
        }
    }
}

/// The edge cases the IR documents, spelled out: the meaning tested above is the one users read.
#[test]
fn documented_edge_cases() {
    let bits = 192u64;
    let dev = Device::cpu_lowered();
    let one = BigUint::from(1u8);
    let top = &one << 191u32;
    let (l, r, rl, rr) = shifts::run(
        &dev,
        bits,
        &[one.clone(), top.clone(), one.clone(), one.clone()],
        &[191u32, 191, 192 + 2, u32::MAX],
    )
    .unwrap();
    assert_eq!(l[0], top);
    assert_eq!(r[1], one);
    assert_eq!(rl[2], BigUint::from(4u8)); // rotations take the amount modulo BITS
    assert_eq!(rr[3], &one << (192 - (u32::MAX as u64 % 192)));
    let (_, r, _, _) = shifts::run(&dev, bits, std::slice::from_ref(&top), &[192u32]).unwrap();
    assert_eq!(r[0], BigUint::default()); // shifts by BITS or more give 0
    let (lz, tz, ones, t) = counts::run(&dev, bits, &[BigUint::default()], &[0u32]).unwrap();
    assert_eq!((lz[0], tz[0], ones[0], t[0]), (192, 192, 0, false));
    let (_, _, _, t) = counts::run(&dev, bits, &[all_ones(bits)], &[192u32]).unwrap();
    assert!(!t[0], "bits past the width are false");
}

#[test]
fn bit_kernels_compile_with_nvrtc() {
    let whole = [
        logic::kernel().unwrap(),
        shifts::kernel().unwrap(),
        constant_shifts::kernel().unwrap(),
        counts::kernel().unwrap(),
        fields::kernel().unwrap(),
        widths::kernel().unwrap(),
        fused::kernel().unwrap(),
        shifted_product::kernel().unwrap(),
    ];
    for k in whole {
        for bits in [64u64, 320, 1088, 4096, 65536] {
            common::nvrtc_compiles(k, &[bits]);
        }
    }
    let arrays = [
        array_logic::kernel().unwrap(),
        array_shifts::kernel().unwrap(),
        array_counts::kernel().unwrap(),
        array_fields::kernel().unwrap(),
        array_widths::kernel().unwrap(),
        array_fused::kernel().unwrap(),
    ];
    for k in arrays {
        for (bits, n) in [(64u64, 5u64), (320, 100), (1088, 33)] {
            common::nvrtc_compiles(k, &[bits, n]);
        }
    }
    common::nvrtc_compiles(scalar_bits::kernel().unwrap(), &[]);
}

/// Coalesced accesses of one kernel share one stride through the warps' transposition buffers
/// (one buffer per warp, reused by every access in turn), and each access reads and writes only
/// within its warp's buffer: warps only synchronise within themselves.
#[test]
fn coalesced_accesses_of_one_kernel_share_the_warp_stride() {
    // At 2^17 bits the argument and the `BITS` result have 2 words per thread (direct), the
    // `2 * BITS` result 4 (coalesced); at 2^18 bits 4 and 8.
    for bits in [131072u64, 262144] {
        let src = widths::kernel()
            .unwrap()
            .cuda_source(&[bits], &bigfuse::Target::h100())
            .unwrap();
        let strides: std::collections::BTreeSet<&str> = src
            .split("(threadIdx.x >> 5) * ")
            .skip(1)
            .map(|rest| rest.split('u').next().unwrap())
            .collect();
        assert_eq!(strides.len(), 1, "{bits}: {strides:?}");
        assert!(
            src.contains("[lane * 2u + j]"),
            "{bits}: a coalesced access"
        );
    }
}

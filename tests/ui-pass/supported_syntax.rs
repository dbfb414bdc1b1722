//! Everything the macro accepts, in one kernel.
#[bigfuse::kernel]
/// Doc comments are kept.
pub fn everything(a: U<BITS>, b: U<BITS>, k: u64, s: u32, flag: bool) -> (U<BITS>, bool, u64, u32) {
    let sum = a + b;
    let diff: U<BITS> = a - b;
    let pick = if flag && a != b { sum } else if a >= b { diff } else { { let t = b - a; t } };
    let k2 = (k << 3) ^ (k >> 1) | 7 & k;
    let s2 = !s * 3 + (flag as u32) - (a < b) as u32;
    (pick, a <= b || !(a > b), k2 * 2u64, s2)
}

#[bigfuse::kernel]
fn fixed_width(a: U<256>, b: U<256>) -> U<256> {
    a + b
}

/// Bit operations on U<..> (whole values and array elements) and on u32/u64.
#[bigfuse::kernel]
fn bits(
    a: U<BITS>,
    b: U<BITS>,
    k: u32,
    x: u64,
    xs: [U<BITS>; N],
) -> (U<BITS>, u32, bool, U<{ 2 * BITS }>, u64, [U<BITS>; N], u64) {
    let mixed = ((a << 3) ^ b) + (a >> k) * (!b & U::MAX | a);
    let rot = a.rotate_left(k) | b.rotate_right(65);
    let field = a.extract_bits(k, 8).insert_bits(U::ONE, 0, 1) ^ U::<BITS>::mask(k);
    let m: U<BITS> = U::mask(4);
    let counts = a.leading_zeros() + b.trailing_zeros() + (rot & m).count_ones();
    let ys = xs.map(|e| (e >> 1 | e << k).rotate_left(2) ^ (e as U<128>) as U<BITS>);
    (
        mixed ^ field,
        counts,
        a.bit(k) || b.bit(0),
        a as U<{ 2 * BITS }>,
        (a as u64) / (x % 7 + 1) + (b as u32) as u64 + x.count_ones() as u64,
        ys,
        x.rotate_right(k) / x,
    )
}

/// `let mut`, assignments (`=`, `+=`, ..), `if` statements and `for i in 0..K` loops (K a
/// literal, a size or a multiple of one), nested, with closures over arrays in their bodies.
#[bigfuse::kernel]
fn loops(x: U<BITS>, e: U<BITS>, xs: [u64; N], k: u64) -> (U<BITS>, u32, [u64; N]) {
    let mut acc: U<BITS> = U::ONE;
    let mut sq = x;
    let mut n = 0u32;
    let mut ys = xs;
    for i in 0..BITS {
        if e.bit(i) {
            acc = acc * sq;
            n += 1;
        } else if i == 0 {
            n = 100;
        }
        sq *= sq;
    }
    for i in 0..2 * N {
        for j in 0..2 {
            ys = ys.map(|y| y + (i as u64) * (j as u64) + k);
        }
    }
    (acc, n, ys)
}

/// Division of U<..>: `/`, `%`, `/=`, `%=` and `div_rem` (a divisor of another width), on whole
/// values and array elements.
#[bigfuse::kernel]
fn division(
    a: U<BITS>,
    b: U<BITS>,
    w: U<{ 2 * BITS }>,
    xs: [U<BITS>; N],
) -> (U<BITS>, U<BITS>, U<{ 2 * BITS }>, U<BITS>, [U<BITS>; N]) {
    let mut q = a;
    q /= b;
    let mut r = a;
    r %= b;
    let (wq, wr) = w.div_rem(b);
    (q, a % b + r, wq, wr, xs.map(|x| x / (x >> 3 | U::ONE) + x % (x >> 2 | U::ONE)))
}

fn main() {
    let dev = bigfuse::Device::cpu();
    let n = |v: u64| vec![bigfuse::BigUint::from(v)];
    let (q, r, wq, wr, ys) =
        division::run(&dev, 64, 1, &n(100), &n(7), &n(1000), &[bigfuse::BigUint::from(30u8)])
            .unwrap();
    assert_eq!((q[0].clone(), r[0].clone()), (n(14)[0].clone(), n(4)[0].clone()));
    assert_eq!((wq[0].clone(), wr[0].clone()), (n(142)[0].clone(), n(6)[0].clone()));
    assert_eq!(ys[0], bigfuse::BigUint::from(30u8 / 3 + 30 % 7));
    let big = |v: u64| vec![bigfuse::BigUint::from(v)];
    let (p, n, ys) = loops::run(&dev, 64, 2, &big(3), &big(0b1010), &[1u64, 2], &[5u64]).unwrap();
    assert_eq!(p[0], bigfuse::BigUint::from(3u64.pow(10)));
    assert_eq!(n[0], 102);
    // 4 outer rounds of 2 inner rounds: + i * j + 5 each, j in {0, 1}.
    let added: u64 = (0..4).map(|i| i + 2 * 5).sum();
    assert_eq!(ys, vec![1 + added, 2 + added]);
    let dev = bigfuse::Device::cpu();
    let one = vec![bigfuse::BigUint::from(1u8)];
    let r = fixed_width::run(&dev, &one, &one).unwrap();
    assert_eq!(r, vec![bigfuse::BigUint::from(2u8)]);
    let (p, c, k, s) = everything::run(&dev, 128, &one, &one, &[1], &[2], &[true]).unwrap();
    assert_eq!(p[0], bigfuse::BigUint::from(0u8));
    assert!(c[0]);
    assert_eq!(k[0], ((1u64 << 3) ^ 0 | (7 & 1)) * 2);
    assert_eq!(s[0], (!2u32).wrapping_mul(3).wrapping_add(1));
    let (_, counts, bit, wide, low, ys, q) =
        bits::run(&dev, 128, 1, &one, &one, &[0u32], &[0u64], &one).unwrap();
    assert_eq!(counts[0], 127 + 0 + 1);
    assert!(bit[0]);
    assert_eq!(wide[0], bigfuse::BigUint::from(1u8));
    assert_eq!(low[0], 1 + 1 + 0);
    assert_eq!(ys[0], bigfuse::BigUint::from(4u8 ^ 1));
    assert_eq!(q[0], u64::MAX); // 0 / 0
}

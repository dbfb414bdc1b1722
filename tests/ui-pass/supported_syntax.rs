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

fn main() {
    let dev = bigfuse::Device::cpu();
    let one = vec![bigfuse::BigUint::from(1u8)];
    let r = fixed_width::run(&dev, &one, &one).unwrap();
    assert_eq!(r, vec![bigfuse::BigUint::from(2u8)]);
    let (p, c, k, s) = everything::run(&dev, 128, &one, &one, &[1], &[2], &[true]).unwrap();
    assert_eq!(p[0], bigfuse::BigUint::from(0u8));
    assert!(c[0]);
    assert_eq!(k[0], ((1u64 << 3) ^ 0 | (7 & 1)) * 2);
    assert_eq!(s[0], (!2u32).wrapping_mul(3).wrapping_add(1));
}

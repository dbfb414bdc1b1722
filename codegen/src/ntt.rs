//! NTT multiplication: the plan (primes, transform length, constants, twiddle tables) and a CPU
//! model that follows the GPU algorithm step by step, so the arithmetic is tested without a GPU.
//!
//! Operands are cut into 32-bit digits. For each of three primes p < 2^30 with p = k * 2^s + 1:
//! forward transforms of both operands (decimation in frequency, natural order in, bit-reversed
//! out), pointwise Montgomery products, inverse transform (decimation in time, bit-reversed in,
//! natural out), scaling by N^-1 (which also removes the Montgomery factor). The three residues of
//! each column are combined by Garner's CRT into an exact 96-bit column sum, and the column sums are
//! added into the product with the carry machinery of addition. Multiplications by constants use
//! Shoup's method; no `%` anywhere.
//!
//! The butterflies reduce lazily (Harvey's): the forward transform keeps its values in [0, 2p), the
//! inverse in [0, 4p), and a twiddle product ends in [0, 2p) without its final subtraction. That
//! takes three of a butterfly's eleven instructions away and needs 4p < 2^32, hence p < 2^30; the
//! values are reduced fully only where they leave the transforms (the scaling, Garner's inputs).
//!
//! Exactness: a column sum is at most min(n_a, n_b) * (2^32 - 1)^2, which must stay below
//! p1 * p2 * p3 (about 2^89.4); the transform length N must be at least 2 * digits - 1 so that the
//! cyclic convolution does not wrap into the result. [`plan`] refuses anything else.

use crate::error::{CgResult, CodegenError};

/// 32-bit digits per operand digit word.
pub const DIGIT_BITS: u32 = 32;
/// log2 of the transform elements a thread holds by default (32).
pub const ELEMENTS_LOG: u32 = 5;
/// The most stages one register pass runs (cubes of 32 elements).
pub const MAX_PASS_STAGES: u32 = 5;
/// The fewest points a transform has (2^8): smaller products are classical anyway.
const MIN_LOG_N: u32 = 8;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prime {
    pub p: u32,
    /// 2^s divides p - 1.
    pub two_adicity: u32,
    /// A generator of the multiplicative group.
    pub generator: u32,
    /// -p^-1 mod 2^32 (Montgomery).
    pub neg_inv: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NttPlan {
    /// 32-bit digits of each operand.
    pub digits_in: u64,
    /// 32-bit digits of the result.
    pub digits_out: u64,
    pub log_n: u32,
    pub primes: Vec<Prime>,
}

pub(crate) fn pow_mod(mut b: u64, mut e: u64, m: u64) -> u64 {
    let mut r = 1u64;
    b %= m;
    while e > 0 {
        if e & 1 == 1 {
            r = (r as u128 * b as u128 % m as u128) as u64;
        }
        b = (b as u128 * b as u128 % m as u128) as u64;
        e >>= 1;
    }
    r
}

/// Deterministic Miller-Rabin for 32-bit numbers (bases 2, 3, 5, 7 suffice below 3.2e9).
pub fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    for p in [2u64, 3, 5, 7, 11, 13] {
        if n.is_multiple_of(p) {
            return n == p;
        }
    }
    let (mut d, mut s) = (n - 1, 0);
    while d % 2 == 0 {
        d /= 2;
        s += 1;
    }
    'bases: for a in [2u64, 3, 5, 7, 11] {
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = (x as u128 * x as u128 % n as u128) as u64;
            if x == n - 1 {
                continue 'bases;
            }
        }
        return false;
    }
    true
}

fn prime_factors(mut n: u64) -> Vec<u64> {
    let mut f = Vec::new();
    let mut d = 2;
    while d * d <= n {
        if n.is_multiple_of(d) {
            f.push(d);
            while n.is_multiple_of(d) {
                n /= d;
            }
        }
        d += 1;
    }
    if n > 1 {
        f.push(n);
    }
    f
}

fn generator(p: u64) -> u64 {
    let factors = prime_factors(p - 1);
    (2..p)
        .find(|&g| factors.iter().all(|q| pow_mod(g, (p - 1) / q, p) != 1))
        .expect("a prime has a generator")
}

/// The three largest primes below 2^30 with 2^23 | p - 1 (transforms up to 2^23 points), largest
/// first: 2^30 keeps the lazy butterflies' values (< 4p) inside 32 bits. All three lie within
/// 2^30 / 5 of 2^30, which [`reduce_digit`] relies on.
pub fn primes() -> Vec<Prime> {
    const S: u32 = 23;
    let mut out = Vec::new();
    let mut k = ((1u64 << 30) - 1) >> S;
    while out.len() < 3 && k > 0 {
        let p = (k << S) + 1;
        if p < (1u64 << 30) && is_prime(p) {
            let two_adicity = (p - 1).trailing_zeros();
            let inv = (0..5).fold(1u32, |x, _| {
                x.wrapping_mul(2u32.wrapping_sub((p as u32).wrapping_mul(x)))
            });
            out.push(Prime {
                p: p as u32,
                two_adicity,
                generator: generator(p) as u32,
                neg_inv: inv.wrapping_neg(),
            });
        }
        k -= 1;
    }
    out
}

/// A plan for operands of `in_limbs` 64-bit limbs and a result of `out_limbs`, or why none is exact.
pub fn plan(in_limbs: u64, out_limbs: u64) -> CgResult<NttPlan> {
    let digits_in = in_limbs * 2;
    let digits_out = out_limbs * 2;
    let n = (2 * digits_in - 1).next_power_of_two().max(1 << MIN_LOG_N);
    let log_n = n.trailing_zeros();
    let primes = primes();
    let max_log = primes.iter().map(|p| p.two_adicity).min().unwrap_or(0);
    if log_n > max_log {
        return Err(CodegenError::Unsupported(format!(
            "an NTT of 2^{log_n} points: the primes allow at most 2^{max_log}"
        )));
    }
    // Garner's steps reduce with one conditional subtraction: the primes must be within 2x.
    if primes[0].p >= 2 * primes[2].p {
        return Err(CodegenError::Unsupported(
            "NTT primes too far apart for Garner's CRT".into(),
        ));
    }
    // Exactness: the largest column sum must be below the product of the primes, with room for
    // at least two products' sums (`NttPlan::sum_terms`).
    let modulus = crt_modulus(&primes);
    let column_bound = column_bound(digits_in);
    if column_bound >= modulus / 2 {
        return Err(CodegenError::Unsupported(format!(
            "NTT with {digits_in} digits of {DIGIT_BITS} bits: column sums up to {column_bound} do not fit the CRT modulus {modulus}"
        )));
    }
    Ok(NttPlan {
        digits_in,
        digits_out,
        log_n,
        primes,
    })
}

/// The product of the primes: Garner's CRT recovers column sums below it.
fn crt_modulus(primes: &[Prime]) -> u128 {
    primes.iter().map(|p| p.p as u128).product()
}

/// The largest column sum of a product of operands of `digits_in` digits.
fn column_bound(digits_in: u64) -> u128 {
    let max_digit = (1u128 << DIGIT_BITS) - 1;
    digits_in as u128 * max_digit * max_digit
}

/// `floor(w * 2^32 / p)`: Shoup's companion of the constant `w`.
pub fn shoup(w: u32, p: u32) -> u32 {
    (((w as u64) << 32) / p as u64) as u32
}

/// `a * w mod p` by Shoup's method, for any 32-bit `a` and `w < p < 2^31`.
pub fn mul_shoup(a: u32, w: u32, w_shoup: u32, p: u32) -> u32 {
    let r = mul_shoup_lazy(a, w, w_shoup, p);
    if r >= p {
        r - p
    } else {
        r
    }
}

/// `a * w mod p` by Shoup's method without the final subtraction: a value in [0, 2p) congruent to
/// it, for any 32-bit `a` and `w < p < 2^31` (the butterflies' twiddle products).
pub fn mul_shoup_lazy(a: u32, w: u32, w_shoup: u32, p: u32) -> u32 {
    let q = ((a as u64 * w_shoup as u64) >> 32) as u32;
    a.wrapping_mul(w).wrapping_sub(q.wrapping_mul(p))
}

/// A 32-bit digit brought into [0, 2p), the forward transform's input range, in two instructions:
/// `d - (d >> 30) p` = `(d mod 2^30) + (d >> 30) (2^30 - p)`, below 2^30 + 3 (2^30 - p), which is
/// below 2p for primes within 2^30 / 5 of 2^30 (those of [`primes`]).
pub fn reduce_digit(d: u32, p: u32) -> u32 {
    d.wrapping_sub((d >> 30).wrapping_mul(p))
}

/// A value in [0, 4p) (the inverse transform's output) brought into [0, p).
pub fn reduce_4p(x: u32, p: u32) -> u32 {
    let x = if x >= 2 * p { x - 2 * p } else { x };
    if x >= p {
        x - p
    } else {
        x
    }
}

/// The forward (decimation in frequency) butterfly as the GPU runs it: `(a, b)` in [0, 2p) to
/// `(a + b, (a - b) w)`, both in [0, 2p).
pub fn dif_butterfly(a: u32, b: u32, w: u32, ws: u32, p: u32) -> (u32, u32) {
    debug_assert!(a < 2 * p && b < 2 * p);
    let s = a + b;
    let s = if s >= 2 * p { s - 2 * p } else { s };
    (s, mul_shoup_lazy(a + 2 * p - b, w, ws, p))
}

/// The forward butterfly of the first stage, whose second input is zero (the upper half of a
/// zero-padded operand): `(a, 0)` to `(a, a w)`, in [0, 2p).
pub fn dif_butterfly_zero(a: u32, w: u32, ws: u32, p: u32) -> (u32, u32) {
    debug_assert!(a < 2 * p);
    (a, mul_shoup_lazy(a, w, ws, p))
}

/// The inverse (decimation in time) butterfly as the GPU runs it: `(a, b)` in [0, 4p) to
/// `(a + b w, a - b w)`, both in [0, 4p).
pub fn dit_butterfly(a: u32, b: u32, w: u32, ws: u32, p: u32) -> (u32, u32) {
    debug_assert!(a < 4 * p && b < 4 * p);
    let t = mul_shoup_lazy(b, w, ws, p);
    let a = if a >= 2 * p { a - 2 * p } else { a };
    (a + t, a + 2 * p - t)
}

/// `a * b / 2^32 mod p` (Montgomery), for `a, b < 2p` (the forward transforms' outputs; with
/// 4p < 2^32 the sum before the shift stays below 2p * 2^32).
pub fn mul_mont(a: u32, b: u32, prime: &Prime) -> u32 {
    let ab = a as u64 * b as u64;
    let m = (ab as u32).wrapping_mul(prime.neg_inv);
    let t = ((ab + m as u64 * prime.p as u64) >> 32) as u32;
    if t >= prime.p {
        t - prime.p
    } else {
        t
    }
}

impl NttPlan {
    pub fn n(&self) -> u64 {
        1 << self.log_n
    }

    /// Twiddles of one prime: `n/2` forward pairs (w^e, shoup) then `n/2` inverse pairs.
    pub fn twiddles(&self, prime: &Prime) -> Vec<(u32, u32)> {
        let p = prime.p as u64;
        let omega = pow_mod(prime.generator as u64, (p - 1) >> self.log_n, p);
        let omega_inv = pow_mod(omega, p - 2, p);
        let half = (self.n() / 2) as usize;
        let mut t = Vec::with_capacity(2 * half);
        for w in [omega, omega_inv] {
            let mut x = 1u64;
            for _ in 0..half {
                t.push((x as u32, shoup(x as u32, prime.p)));
                x = x * w % p;
            }
        }
        t
    }

    /// The table the kernel reads when `threads` threads run each transform: every prime's
    /// twiddles, prime after prime, in the order its register passes read them
    /// ([`PassTwiddles`]: the forward section, then the inverse one), as 32-bit words (w, shoup,
    /// w, shoup, ...).
    pub fn twiddle_table(&self, threads: u64) -> Vec<u32> {
        let layout = PassTwiddles::new(self.log_n, pass_stages(self.n(), threads));
        let half = (self.n() / 2) as usize;
        self.primes
            .iter()
            .flat_map(|p| {
                let flat = self.twiddles(p);
                let mut t = layout.section(&flat[..half]);
                t.extend(layout.section(&flat[half..]));
                t
            })
            .flat_map(|(w, s)| [w, s])
            .collect()
    }

    /// N^-1 * 2^32 mod p: the final scaling, which also cancels the Montgomery factor.
    pub fn scale(&self, prime: &Prime) -> u32 {
        let p = prime.p as u64;
        let n_inv = pow_mod(self.n() % p, p - 2, p);
        ((n_inv as u128 * (1u128 << 32) % p as u128) as u64) as u32
    }

    /// The most products of this plan whose column sums one CRT may recover as one sum
    /// (`isel::NttSum`): their sum stays below the primes' product. At least 2 ([`plan`]).
    pub fn sum_terms(&self) -> usize {
        let terms = (crt_modulus(&self.primes) - 1) / column_bound(self.digits_in);
        terms.min(usize::MAX as u128) as usize
    }

    /// Garner constants: p1^-1 mod p2, p1 mod p3, (p1 p2)^-1 mod p3.
    pub fn crt_constants(&self) -> (u32, u32, u32) {
        let (p1, p2, p3) = (
            self.primes[0].p as u64,
            self.primes[1].p as u64,
            self.primes[2].p as u64,
        );
        let inv = |a: u64, m: u64| pow_mod(a % m, m - 2, m) as u32;
        (
            inv(p1, p2),
            (p1 % p3) as u32,
            inv((p1 as u128 * p2 as u128 % p3 as u128) as u64, p3),
        )
    }

    /// The CPU model of the GPU kernel: the exact product digits (the first `digits_out`).
    pub fn multiply(&self, a: &[u32], b: &[u32]) -> Vec<u32> {
        let n = self.n() as usize;
        let mut residues: Vec<Vec<u32>> = Vec::new();
        for prime in &self.primes {
            let p = prime.p;
            let tw = self.twiddles(prime);
            let reduce = |d: u32| reduce_digit(d, p);
            let mut x: Vec<u32> = (0..n).map(|i| a.get(i).map_or(0, |&d| reduce(d))).collect();
            let mut y: Vec<u32> = (0..n).map(|i| b.get(i).map_or(0, |&d| reduce(d))).collect();
            self.forward(&mut x, &tw, p);
            self.forward(&mut y, &tw, p);
            for (u, v) in x.iter_mut().zip(&y) {
                *u = mul_mont(*u, *v, prime);
            }
            self.inverse(&mut x, &tw[n / 2..], p);
            let c = self.scale(prime);
            let cs = shoup(c, p);
            residues.push(x.iter().map(|&v| mul_shoup(v, c, cs, p)).collect());
        }
        // Column sums (exact), then the carries, as the GPU adds them.
        let mut digits = vec![0u32; self.digits_out as usize + 4];
        let mut acc: u128 = 0;
        for (k, d) in digits.iter_mut().enumerate().take(self.digits_out as usize) {
            let column = self.garner(residues[0][k], residues[1][k], residues[2][k]);
            acc += column;
            *d = acc as u32;
            acc >>= 32;
        }
        digits.truncate(self.digits_out as usize);
        digits
    }

    fn forward(&self, x: &mut [u32], tw: &[(u32, u32)], p: u32) {
        dif(x, tw, p)
    }

    fn inverse(&self, x: &mut [u32], tw: &[(u32, u32)], p: u32) {
        dit(x, tw, p)
    }

    /// Garner's CRT of one column as the GPU computes it (`bf_garner`): its residues modulo the
    /// three primes in, the exact column sum out.
    pub fn garner(&self, r1: u32, r2: u32, r3: u32) -> u128 {
        let (c12, p1_mod_p3, c123) = self.crt_constants();
        let (p1, p2, p3) = (self.primes[0].p, self.primes[1].p, self.primes[2].p);
        let v1 = r1;
        let u = if v1 >= p2 { v1 - p2 } else { v1 };
        let v2 = mul_shoup(r2 + p2 - u, c12, shoup(c12, p2), p2);
        let v1_mod_p3 = if v1 >= p3 { v1 - p3 } else { v1 };
        let s = mul_shoup(v2, p1_mod_p3, shoup(p1_mod_p3, p3), p3) + v1_mod_p3;
        let s = if s >= p3 { s - p3 } else { s };
        let v3 = mul_shoup(r3 + p3 - s, c123, shoup(c123, p3), p3);
        v1 as u128 + v2 as u128 * p1 as u128 + v3 as u128 * (p1 as u128 * p2 as u128)
    }
}

/// A forward transform of `x` (decimation in frequency: natural order in, bit-reversed out) with
/// `tw` = (w^e, Shoup's companion) for e < len/2, w a primitive len-th root of unity mod p.
pub(crate) fn dif(x: &mut [u32], tw: &[(u32, u32)], p: u32) {
    let n = x.len();
    let log_n = n.trailing_zeros();
    for s in 0..log_n {
        let h = n >> (s + 1);
        for i in 0..n {
            if i % (2 * h) >= h {
                continue;
            }
            let e = (i % (2 * h)) << s;
            (x[i], x[i + h]) = dif_butterfly(x[i], x[i + h], tw[e].0, tw[e].1, p);
        }
    }
}

/// The inverse of [`dif`] up to the factor len (decimation in time: bit-reversed in, natural
/// out), with `tw` built from the inverse root.
pub(crate) fn dit(x: &mut [u32], tw: &[(u32, u32)], p: u32) {
    let n = x.len();
    let log_n = n.trailing_zeros();
    for s in 0..log_n {
        let h = 1usize << s;
        for i in 0..n {
            if i % (2 * h) >= h {
                continue;
            }
            let e = (i % (2 * h)) << (log_n - 1 - s);
            (x[i], x[i + h]) = dit_butterfly(x[i], x[i + h], tw[e].0, tw[e].1, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigUint;

    fn digits(v: &BigUint, n: usize) -> Vec<u32> {
        let mut d = v.to_u32_digits();
        d.resize(n, 0);
        d
    }

    #[test]
    fn primes_are_ntt_friendly_and_fit_shoup() {
        let ps = primes();
        assert_eq!(ps.len(), 3);
        for p in &ps {
            assert!(is_prime(p.p as u64));
            assert!(p.p < 1 << 30);
            assert!(p.two_adicity >= 23);
            // reduce_digit's bound: within 2^30 / 5 of 2^30.
            assert!(5 * ((1 << 30) - p.p) < 1 << 30);
            assert_eq!(p.p.wrapping_mul(p.neg_inv.wrapping_neg()), 1);
            assert_eq!(
                pow_mod(p.generator as u64, (p.p as u64 - 1) / 2, p.p as u64),
                p.p as u64 - 1
            );
        }
        // Garner needs p1 < 2 p2 for its single conditional subtraction.
        assert!(ps[0].p < 2 * ps[1].p);
    }

    #[test]
    fn modular_products_match_u128_arithmetic() {
        let prime = &primes()[0];
        let p = prime.p;
        for (a, w) in [
            (0u32, 5u32),
            (u32::MAX, p - 1),
            (p - 1, p - 1),
            (123456789, 987654321 % p),
        ] {
            let want = (a as u64 * w as u64 % p as u64) as u32;
            assert_eq!(mul_shoup(a, w, shoup(w, p), p), want);
        }
        let r_inv = pow_mod(1 << 32, p as u64 - 2, p as u64);
        for (a, b) in [(1u32, 1u32), (p - 1, p - 1), (12345, 67890)] {
            let want = (a as u128 * b as u128 * r_inv as u128 % p as u128) as u32;
            assert_eq!(mul_mont(a, b, prime), want);
        }
    }

    #[test]
    fn lazy_reductions_stay_in_range_and_congruent() {
        for prime in primes() {
            let p = prime.p;
            let m = p as u64;
            for d in [
                0u32,
                1,
                p - 1,
                p,
                2 * p - 1,
                1 << 30,
                (1 << 30) - 1,
                3 << 30,
                u32::MAX,
            ] {
                let r = reduce_digit(d, p);
                assert!(r < 2 * p, "digit {d} mod {p}: {r}");
                assert_eq!(r as u64 % m, d as u64 % m);
                if d < 4 * p {
                    assert_eq!(reduce_4p(d, p), (d as u64 % m) as u32);
                }
            }
            let mul = |x: u32, w: u32| (x as u64 * w as u64 % m) as u32;
            for w in [1u32, 2, p - 1, p / 2, 123_456_789 % p] {
                let ws = shoup(w, p);
                for a in [0u32, 1, p - 1, p, 2 * p - 1] {
                    for b in [0u32, 1, p - 1, p, 2 * p - 1] {
                        let (s, d) = dif_butterfly(a, b, w, ws, p);
                        assert!(s < 2 * p && d < 2 * p, "dif({a}, {b}) mod {p}");
                        assert_eq!(s as u64 % m, (a as u64 + b as u64) % m);
                        assert_eq!(
                            d as u64 % m,
                            mul(((a as u64 + 2 * m - b as u64) % m) as u32, w) as u64
                        );
                    }
                }
                for a in [0u32, 1, p - 1, 2 * p, 4 * p - 1] {
                    for b in [0u32, 1, p, 3 * p, 4 * p - 1] {
                        let (s, d) = dit_butterfly(a, b, w, ws, p);
                        assert!(s < 4 * p && d < 4 * p, "dit({a}, {b}) mod {p}");
                        let t = mul((b as u64 % m) as u32, w) as u64;
                        assert_eq!(s as u64 % m, (a as u64 + t) % m);
                        assert_eq!(d as u64 % m, (a as u64 % m + m - t) % m);
                    }
                }
            }
            // Montgomery products take the forward transforms' outputs, below 2p.
            let r_inv = pow_mod(1 << 32, m - 2, m);
            for (a, b) in [(2 * p - 1, 2 * p - 1), (2 * p - 1, 1), (p, p + 1)] {
                let want = (a as u128 * b as u128 * r_inv as u128 % m as u128) as u32;
                assert_eq!(mul_mont(a, b, &prime), want);
            }
        }
    }

    #[test]
    fn the_model_multiplies_exactly() {
        use num_bigint::RandBigInt;
        let mut rng = rand::thread_rng();
        for limbs in [1u64, 2, 5, 32, 128, 513] {
            for wide in [false, true] {
                let out = if wide { 2 * limbs } else { limbs };
                let plan = plan(limbs, out).unwrap();
                let max = (BigUint::from(1u8) << (64 * limbs)) - 1u8;
                for (x, y) in [
                    (max.clone(), max.clone()),
                    (rng.gen_biguint(64 * limbs), rng.gen_biguint(64 * limbs)),
                ] {
                    let got = plan.multiply(
                        &digits(&x, 2 * limbs as usize),
                        &digits(&y, 2 * limbs as usize),
                    );
                    let want = digits(
                        &((&x * &y) % (BigUint::from(1u8) << (64 * out))),
                        2 * out as usize,
                    );
                    assert_eq!(got, want, "{limbs} limbs, wide {wide}");
                }
            }
        }
    }

    /// The register passes as `emit::ntt` runs them ([`pass_ranges`]): in a pass of `r` stages
    /// from bit lb, thread g's cubes of 2^r elements base | k << lb (g numbered through
    /// [`swap_lane_bit`] where it applies), the twiddle of cube bit c read from the direction's
    /// section `tw` of the kernel's table at [`PassTwiddles::entry`]. Forward passes from the top
    /// range down, each's stages from its top bit; inverse ones from the bottom up.
    ///
    /// With `trim`, a forward transform takes the upper half of its input as zero (its first
    /// stage runs `dif_butterfly_zero`) and an inverse one computes the lower half of its output
    /// only (its last stage skips the differences, which stay unwritten).
    fn cube_passes(
        x: &mut [u32],
        log_n: u32,
        stages: u32,
        tw: &[(u32, u32)],
        p: u32,
        fwd: bool,
        trim: bool,
    ) {
        let mut ranges = pass_ranges(log_n, stages);
        if fwd {
            ranges.reverse();
        }
        let top = log_n - 1;
        let layout = PassTwiddles::new(log_n, stages);
        assert_eq!(tw.len() as u64, layout.entries());
        for (lb, radix) in ranges {
            let size = 1usize << radix;
            let cubes = x.len() >> radix;
            for g in 0..cubes {
                let g = if swaps_lane_bit(lb, radix, cubes as u64) {
                    swap_lane_bit(g as u64, lb) as usize
                } else {
                    g
                };
                let low = g & ((1 << lb) - 1);
                let base = ((g >> lb) << (lb + radix)) | low;
                let mut e: Vec<u32> = (0..size).map(|k| x[base | k << lb]).collect();
                let order: Vec<u32> = if fwd {
                    (0..radix).rev().collect()
                } else {
                    (0..radix).collect()
                };
                for c in order {
                    for k in (0..size).filter(|k| k >> c & 1 == 0) {
                        let (w, ws) = tw[layout.entry(lb, c, k as u64, low as u64) as usize];
                        let (u, v) = (e[k], e[k + (1 << c)]);
                        let trimmed = trim && lb + c == top;
                        (e[k], e[k + (1 << c)]) = match (fwd, trimmed) {
                            (true, false) => dif_butterfly(u, v, w, ws, p),
                            (true, true) => dif_butterfly_zero(u, w, ws, p),
                            (false, false) => dit_butterfly(u, v, w, ws, p),
                            (false, true) => (dit_butterfly(u, v, w, ws, p).0, v),
                        };
                    }
                }
                for (k, v) in e.into_iter().enumerate() {
                    x[base | k << lb] = v;
                }
            }
        }
    }

    #[test]
    fn cube_passes_compute_the_reference_transforms() {
        let prime = &primes()[1];
        let p = prime.p;
        for log_n in [8u32, 9, 10, 11, 12, 13, 14] {
            let plan = NttPlan {
                digits_in: 1,
                digits_out: 1,
                log_n,
                primes: primes(),
            };
            let n = plan.n() as usize;
            let tw = plan.twiddles(prime);
            let x: Vec<u32> = (0..n as u64)
                .map(|i| (i * 2654435761 % p as u64) as u32)
                .collect();
            for stages in 1..=MAX_PASS_STAGES {
                // The sections of the kernel's table, as `twiddle_table` lays them out.
                let layout = PassTwiddles::new(log_n, stages);
                let (fwd, inv) = (layout.section(&tw[..n / 2]), layout.section(&tw[n / 2..]));
                let (mut want, mut got) = (x.clone(), x.clone());
                plan.forward(&mut want, &tw, p);
                cube_passes(&mut got, log_n, stages, &fwd, p, true, false);
                assert_eq!(
                    got, want,
                    "forward, 2^{log_n} points, {stages} stages a pass"
                );
                plan.inverse(&mut want, &tw[n / 2..], p);
                cube_passes(&mut got, log_n, stages, &inv, p, false, false);
                assert_eq!(
                    got, want,
                    "inverse, 2^{log_n} points, {stages} stages a pass"
                );
                // Trimmed: a zero upper half in, the lower half out, equal modulo p.
                let mut padded = x.clone();
                padded[n / 2..].fill(0);
                let (mut want, mut got) = (padded.clone(), padded);
                plan.forward(&mut want, &tw, p);
                cube_passes(&mut got, log_n, stages, &fwd, p, true, true);
                let reduced = |v: &[u32]| v.iter().map(|&e| e % p).collect::<Vec<_>>();
                assert_eq!(reduced(&got), reduced(&want), "forward, zero upper half");
                plan.inverse(&mut want, &tw[n / 2..], p);
                cube_passes(&mut got, log_n, stages, &inv, p, false, true);
                assert_eq!(
                    reduced(&got[..n / 2]),
                    reduced(&want[..n / 2]),
                    "inverse, lower half"
                );
            }
        }
    }

    #[test]
    fn pass_twiddles_are_consecutive_across_a_warp() {
        // 2^18-bit products: 2^14 points, 512 threads of 32 elements.
        assert_eq!(pass_stages(1 << 14, 512), 5);
        let layout = PassTwiddles::new(14, 5);
        assert_eq!(layout.entries(), 15 + 31 * 16 + 31 * 512);
        let flat: Vec<u64> = (0..1u64 << 13).collect();
        let section = layout.section(&flat);
        assert_eq!(section.len() as u64, layout.entries());
        for (lb, r) in pass_ranges(14, 5) {
            for c in 0..r {
                for k in 0..1u64 << c {
                    for low in 0..1u64 << lb {
                        let e = layout.entry(lb, c, k, low);
                        assert_eq!(
                            section[e as usize],
                            (low << (13 - lb - c)) + (k << (13 - c))
                        );
                        if low > 0 {
                            // The lanes of a warp (consecutive `low`) read consecutive entries.
                            assert_eq!(layout.entry(lb, c, k, low - 1) + 1, e);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn passes_are_as_few_as_their_size_allows() {
        assert_eq!(pass_ranges(12, 4), [(0, 4), (4, 4), (8, 4)]);
        assert_eq!(pass_ranges(13, 4), [(0, 1), (1, 4), (5, 4), (9, 4)]);
        assert_eq!(pass_ranges(13, 5), [(0, 3), (3, 5), (8, 5)]);
        assert_eq!(pass_ranges(14, 5), [(0, 4), (4, 5), (9, 5)]);
        assert_eq!(pass_ranges(3, 4), [(0, 3)]);
    }

    /// The passes' shared-memory accesses, warp by warp: one wavefront each (no two lanes on
    /// one bank at different addresses), from 2^10 to 2^14 points, with threads of 16 and of 32
    /// elements.
    #[test]
    fn cube_passes_are_free_of_bank_conflicts() {
        for log_n in 10u32..=14 {
            for stages in [4, 5] {
                let threads = 1u64 << (log_n - stages);
                for (lb, radix) in pass_ranges(log_n, stages) {
                    let cubes = 1u64 << (log_n - radix);
                    for warp in 0..threads / 32 {
                        for u in 0..cubes / threads {
                            for k in 0..1u64 << radix {
                                let mut banks = std::collections::HashMap::new();
                                for t in warp * 32..warp * 32 + 32 {
                                    let g = t + u * threads;
                                    let g = if swaps_lane_bit(lb, radix, cubes) {
                                        swap_lane_bit(g, lb)
                                    } else {
                                        g
                                    };
                                    let low = g & ((1 << lb) - 1);
                                    let base = ((g >> lb) << (lb + radix)) | low;
                                    let a = phys(base | k << lb);
                                    let prev = banks.insert(a % 32, a);
                                    assert!(
                                        prev.is_none_or(|b| b == a),
                                        "2^{log_n} points, pass ({lb}, {radix}), warp {warp}, element {k}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// A sum's third transform fits the residues' room (two primes' residues of at least half
    /// the transform's digits each, a truncated product's; a full product's are twice that),
    /// not where the residues live in registers.
    /// Sums of products stay exact: at least two terms for every plan (the largest has the
    /// fewest), thousands at the sizes of one block.
    #[test]
    fn sums_of_products_have_room_in_the_crt_modulus() {
        let largest = plan(1 << 21, 1 << 21).unwrap();
        assert!(largest.sum_terms() >= 2, "{}", largest.sum_terms());
        let p = plan(1024, 1024).unwrap();
        assert!(p.sum_terms() > 1000);
        let modulus: u128 = p.primes.iter().map(|q| q.p as u128).product();
        let column = 2048u128 * ((1u128 << 32) - 1).pow(2);
        assert!(p.sum_terms() as u128 * column < modulus);
        assert!((p.sum_terms() as u128 + 1) * column >= modulus);
    }

    #[test]
    fn a_sums_third_buffer_takes_the_residues_room() {
        let truncated = plan(1024, 1024).unwrap();
        let lay = truncated.layout(2, 4, 1 << 20);
        assert_eq!(lay.sum_buffer(&truncated), Some(2 * 4228));
        assert_eq!(lay.residue_words(), Some(2116));
        assert!(2 * lay.residue_words().unwrap() > phys(truncated.n() - 1));
        let in_registers = truncated.layout(2, 4, 4 * 2 * 2 * 4228);
        assert_eq!(in_registers.residues, None);
        assert_eq!(in_registers.sum_buffer(&truncated), None);
        let full = plan(1024, 2048).unwrap();
        assert_eq!(full.layout(1, 4, 1 << 20).sum_buffer(&full), Some(2 * 4228));
    }

    #[test]
    fn plans_cover_every_supported_size_and_refuse_the_rest() {
        assert!(plan(4096, 4096).is_ok()); // 2^18 bits
        assert!(plan(4096, 8192).is_ok());
        assert!(plan(1 << 22, 1 << 22).is_err());
    }
}

/// Elements of a transform of `n` points that each of `threads` threads holds in a register pass
/// (32 with the n/32 threads the schedule gives an NTT product by default, [`NttPlan::threads`];
/// 64 with half as many under a `q` hint; at least 2).
pub fn elements_per_thread(n: u64, threads: u64) -> u64 {
    (n / threads.max(1)).max(2)
}

/// The most stages a register pass runs when `threads` threads run a transform of `n` points: a
/// thread's elements in one cube, up to 32 of them.
pub fn pass_stages(n: u64, threads: u64) -> u32 {
    elements_per_thread(n, threads)
        .trailing_zeros()
        .min(MAX_PASS_STAGES)
}

/// Where the register passes of one direction ([`pass_ranges`]) find their twiddles. Stage c of
/// the pass from bit lb pairs a cube's elements k and k + 2^c (k mod 2^(c+1) < 2^c) with the
/// twiddle (low << (log_n - 1 - lb - c)) + ((k mod 2^c) << (log_n - 1 - c)) of the direction's
/// `n / 2` (`low` the thread's cube bits below lb). Read from that flat table, a warp's 32 lanes
/// (32 values of `low`) touch 32 sectors per load, and at 2^18 bits those loads filled the
/// global-load queue (bench/RESULTS.md, tenth session). Here each (pass, stage) has its block of
/// 2^c x 2^lb entries, entry (k mod 2^c) 2^lb + low: the lanes read consecutive 8-byte entries, 8
/// sectors. The section is about twice the flat table (n - 1 entries at most instead of n / 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassTwiddles {
    pub log_n: u32,
    /// The most stages a pass runs ([`pass_stages`]).
    pub stages: u32,
}

impl PassTwiddles {
    pub fn new(log_n: u32, stages: u32) -> PassTwiddles {
        PassTwiddles { log_n, stages }
    }

    /// Entries of one direction's section.
    pub fn entries(&self) -> u64 {
        pass_ranges(self.log_n, self.stages)
            .into_iter()
            .map(|(lb, r)| ((1u64 << r) - 1) << lb)
            .sum()
    }

    /// The first entry of stage `c` of the pass from bit `lb`.
    pub fn offset(&self, lb: u32, c: u32) -> u64 {
        let mut before = 0;
        for (l, r) in pass_ranges(self.log_n, self.stages) {
            if l == lb {
                debug_assert!(c < r);
                return before + (((1u64 << c) - 1) << lb);
            }
            before += ((1u64 << r) - 1) << l;
        }
        panic!("no pass starts at bit {lb}")
    }

    /// The entry of stage `c` of the pass from bit `lb` for cube element `k` of the thread whose
    /// cube bits below lb are `low`.
    pub fn entry(&self, lb: u32, c: u32, k: u64, low: u64) -> u64 {
        self.offset(lb, c) + ((k & ((1 << c) - 1)) << lb) + low
    }

    /// One direction's section, from that direction's `n / 2` twiddles in natural order.
    pub fn section<T: Copy>(&self, flat: &[T]) -> Vec<T> {
        let top = self.log_n - 1;
        let mut out = Vec::with_capacity(self.entries() as usize);
        for (lb, r) in pass_ranges(self.log_n, self.stages) {
            for c in 0..r {
                for k in 0..1usize << c {
                    for low in 0..1usize << lb {
                        out.push(flat[(low << (top - lb - c)) + (k << (top - c))]);
                    }
                }
            }
        }
        out
    }
}

/// The register passes of a transform of 2^`log_n` points whose threads hold 2^`max_stages`
/// elements or more: consecutive bit ranges `(lowest bit, stages)`, from the bottom, each of at
/// most `max_stages` stages, as few as possible, the shorter remainder at the bottom (bit 0). A
/// pass loads cubes of 2^stages elements (base | k << lowest bit) into registers, runs its stages
/// there and stores them back: one barrier per pass. With 32 elements a thread, 2^13 and 2^14
/// points take three passes where 16 take four.
pub fn pass_ranges(log_n: u32, max_stages: u32) -> Vec<(u32, u32)> {
    let max_stages = max_stages.clamp(1, MAX_PASS_STAGES);
    let rem = log_n % max_stages;
    let mut out = Vec::new();
    if rem > 0 {
        out.push((0, rem));
    }
    let mut lb = rem;
    while lb < log_n {
        out.push((lb, max_stages));
        lb += max_stages;
    }
    out
}

/// Whether a pass of `stages` stages from bit `lb` numbers its cubes through [`swap_lane_bit`]
/// (`cubes` of them in the transform).
pub fn swaps_lane_bit(lb: u32, stages: u32, cubes: u64) -> bool {
    stages == 4 && (1..=4).contains(&lb) && cubes >= 64
}

/// The cube that thread number `g` takes in a pass of four stages from bit `lb` (1..4), where
/// [`swaps_lane_bit`] holds. With one pad word per 32 ([`phys`]), the index bits that a warp's 32
/// lanes vary must fall on five distinct banks (index bit b moves the bank by 2^(b mod 5) for
/// b < 10). Numbered in order, lane bit lb lands on index bit lb + 4, whose bank step repeats that
/// of lane bit lb - 1 or below: a 2-way conflict on those passes' accesses. Swapping bits lb and 5
/// of the number puts that lane on index bit 9 instead. Passes of five stages, and passes whose
/// lowest bit is 0 or at least 5, need no swap.
pub fn swap_lane_bit(g: u64, lb: u32) -> u64 {
    g ^ ((((g >> lb) ^ (g >> 5)) & 1) * ((1 << lb) | 32))
}

/// Physical index of element `i` in a shared buffer: one padding word per 32, so that threads
/// reading with power-of-two strides hit different banks.
pub fn phys(i: u64) -> u64 {
    i + (i >> 5)
}

/// Word offsets (32-bit) of one instance's buffers in its staging region. The residues of the
/// first two primes for the result's digits live in shared memory when it has room (`r1`, `r2`),
/// else in the registers of the threads that combine them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NttLayout {
    /// First operand's transform, then the product's; at the end the third prime's residues.
    pub x: u64,
    /// Second operand's transform; at the end the high words of the column sums (as u64).
    pub y: u64,
    /// Residues of the first two primes, when they are kept in shared memory.
    pub residues: Option<(u64, u64)>,
    pub stride: u64,
    pub flags: u64,
    pub total: u64,
}

impl NttLayout {
    /// Where a third transform buffer fits, for a sum of products (`isel::NttSum`): the
    /// residues' room, which the transforms leave alone until the last inverse transform, whose
    /// residues then go to the block's staging slot instead. None where the residues live in
    /// registers or their room is smaller than a transform.
    pub fn sum_buffer(&self, plan: &NttPlan) -> Option<u64> {
        let (r1, r2) = self.residues?;
        (2 * (r2 - r1) > phys(plan.n() - 1)).then_some(r1)
    }

    /// 32-bit words of the residues of one prime (`r1`'s room; `r2`'s is the same).
    pub fn residue_words(&self) -> Option<u64> {
        self.residues.map(|(r1, r2)| r2 - r1)
    }
}

impl NttPlan {
    /// The layout for `instances_per_block` instances, keeping the residues in shared memory if
    /// the whole block still fits `shared_limit` bytes.
    pub fn layout(
        &self,
        instances_per_block: u64,
        warps_per_instance: u64,
        shared_limit: u64,
    ) -> NttLayout {
        let round4 = |w: u64| w.div_ceil(4) * 4;
        let xy = round4(phys(self.n()) + 1);
        let r = round4(phys(self.digits_out) + 1);
        let flag_words = if warps_per_instance > 1 {
            instances_per_block * warps_per_instance
        } else {
            0
        };
        let build = |with_residues: bool| {
            let stride = 2 * xy + if with_residues { 2 * r } else { 0 };
            let flags = stride * instances_per_block;
            NttLayout {
                x: 0,
                y: xy,
                residues: with_residues.then_some((2 * xy, 2 * xy + r)),
                stride,
                flags,
                total: round4(flags + flag_words),
            }
        };
        let wide = build(true);
        if wide.total * 4 <= shared_limit {
            wide
        } else {
            build(false)
        }
    }

    /// Threads per instance: 32 elements of each transform per thread, so that passes of five
    /// stages hold a thread's elements in one cube. NVIDIA H200, same run (bench/RESULTS.md,
    /// 2026-11-27): with the other changes of that day, 1-Mul at 2^16 / 2^17 / 2^18 bits ran
    /// 33,529 / 30,281 / 29,603 Gu32ops/s with 16 elements a thread (passes of four stages) and
    /// 44,060 / 41,927 / 31,340 with 32.
    pub fn threads(&self) -> u32 {
        (self.n() >> ELEMENTS_LOG).clamp(1, 1024) as u32
    }
}

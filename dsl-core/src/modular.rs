//! Arithmetic modulo a prime below 2^64: the reference for `Zp<P>` values (the evaluator) and the
//! constants code generation bakes into Montgomery products.

/// `a * b mod p`.
pub fn mul_mod(a: u64, b: u64, p: u64) -> u64 {
    ((a as u128 * b as u128) % p as u128) as u64
}

/// `a + b mod p` for `a, b < p`.
pub fn add_mod(a: u64, b: u64, p: u64) -> u64 {
    ((a as u128 + b as u128) % p as u128) as u64
}

/// `a - b mod p` for `a, b < p`.
pub fn sub_mod(a: u64, b: u64, p: u64) -> u64 {
    if a >= b {
        a - b
    } else {
        p - (b - a)
    }
}

/// `x^e mod p` by square and multiply (`0^0 = 1`).
pub fn pow_mod(x: u64, mut e: u64, p: u64) -> u64 {
    let mut base = x % p;
    let mut acc = 1 % p;
    while e > 0 {
        if e & 1 == 1 {
            acc = mul_mod(acc, base, p);
        }
        base = mul_mod(base, base, p);
        e >>= 1;
    }
    acc
}

/// The inverse of `x` modulo the prime `p` (Fermat: `x^(p-2)`); 0 has none and maps to 0.
pub fn inv_mod(x: u64, p: u64) -> u64 {
    pow_mod(x, p - 2, p)
}

/// Deterministic Miller–Rabin for every 64-bit integer (the first twelve primes as bases suffice).
pub fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    const BASES: [u64; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];
    for b in BASES {
        if n.is_multiple_of(b) {
            return n == b;
        }
    }
    let s = (n - 1).trailing_zeros();
    let d = (n - 1) >> s;
    'bases: for a in BASES {
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul_mod(x, x, n);
            if x == n - 1 {
                continue 'bases;
            }
        }
        return false;
    }
    true
}

/// Why `p` cannot be the modulus of `Zp<P>`, if it cannot.
pub fn check_modulus(p: u64) -> Result<(), String> {
    if p < 3 || p.is_multiple_of(2) {
        return Err(format!(
            "Zp<P> needs an odd prime modulus (Montgomery products need P odd), and {p} is not one"
        ));
    }
    if !is_prime(p) {
        return Err(format!(
            "Zp<P> needs a prime modulus (inverses and the field laws depend on it), and {p} is not prime"
        ));
    }
    Ok(())
}

/// Constants of Montgomery arithmetic modulo `p` with R = 2^64: a value x is held as x·R mod p, and
/// `redc(T) = T·R^-1 mod p` for T < p·R costs two 64-bit products instead of a 128-bit division.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Montgomery {
    pub p: u64,
    /// -p^-1 mod 2^64.
    pub neg_inv: u64,
    /// R mod p (the form of 1).
    pub r: u64,
    /// R^2 mod p: `redc(x · r2)` is the form of x.
    pub r2: u64,
}

impl Montgomery {
    /// For an odd modulus `p`.
    pub fn new(p: u64) -> Montgomery {
        debug_assert!(p % 2 == 1);
        // Newton's iteration doubles the correct low bits of p^-1 mod 2^64 each step.
        let mut inv: u64 = p;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(p.wrapping_mul(inv)));
        }
        let r = ((1u128 << 64) % p as u128) as u64;
        Montgomery {
            p,
            neg_inv: inv.wrapping_neg(),
            r,
            r2: mul_mod(r, r, p),
        }
    }

    /// The Montgomery form of `x` (any u64).
    pub fn to_form(&self, x: u64) -> u64 {
        ((((x % self.p) as u128) << 64) % self.p as u128) as u64
    }

    /// `T · R^-1 mod p` for `T < p · 2^64`, as code generation computes it.
    pub fn redc(&self, t: u128) -> u64 {
        let (lo, hi) = (t as u64, (t >> 64) as u64);
        let m = lo.wrapping_mul(self.neg_inv);
        let mp = m as u128 * self.p as u128;
        // lo + low(m·p) is 0 mod 2^64: it carries exactly when lo != 0.
        let (s, c1) = hi.overflowing_add((mp >> 64) as u64);
        let (s, c2) = s.overflowing_add((lo != 0) as u64);
        if c1 || c2 || s >= self.p {
            s.wrapping_sub(self.p)
        } else {
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primes_are_recognised() {
        for p in [
            3u64,
            5,
            7,
            65537,
            3221225473,
            4179340454199820289,
            18446744073709551557,
        ] {
            assert!(is_prime(p), "{p}");
        }
        for n in [
            0u64,
            1,
            4,
            9,
            561,
            3215031751,
            18446744073709551615,
            4179340454199820291,
        ] {
            assert!(!is_prime(n), "{n}");
        }
        assert!(check_modulus(2).is_err());
        assert!(check_modulus(91).is_err());
        assert!(check_modulus(97).is_ok());
    }

    #[test]
    fn montgomery_round_trips_and_multiplies() {
        for p in [
            3u64,
            97,
            3221225473,
            4179340454199820289,
            18446744073709551557,
        ] {
            let m = Montgomery::new(p);
            assert_eq!(p.wrapping_mul(m.neg_inv), u64::MAX, "p * -p^-1 = -1");
            for x in [0u64, 1, 2, p - 1, p / 2, 0x1234_5678_9abc_def0 % p] {
                let f = m.to_form(x);
                assert_eq!(m.redc(f as u128), x);
                for y in [1u64, p - 1, p / 3 + 1] {
                    let g = m.to_form(y);
                    assert_eq!(m.redc(f as u128 * g as u128), m.to_form(mul_mod(x, y, p)));
                }
            }
            assert_eq!(m.redc(m.r as u128), 1 % p);
            assert_eq!(m.redc(5u128 * m.r2 as u128), m.to_form(5));
        }
    }

    #[test]
    fn powers_and_inverses() {
        let p = 3221225473u64;
        assert_eq!(pow_mod(13, p - 1, p), 1);
        for x in [1u64, 2, 12345, p - 1] {
            assert_eq!(mul_mod(x, inv_mod(x, p), p), 1);
        }
        assert_eq!(inv_mod(0, p), 0);
        assert_eq!(pow_mod(0, 0, p), 1);
    }
}

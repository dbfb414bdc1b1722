//! A batched Miller-Rabin test, one kernel: for an odd n = d 2^s + 1, `x = a^d mod n`
//! (`pow_mod`), then up to s - 1 squarings modulo n, each a full product (`mul_wide`) reduced by a
//! division (`div_rem`), in a loop over the bits of the width (`for i in 0..BITS`, the squaring
//! guarded by `i + 1 < s`). n passes for base a when x starts at 1 or n - 1, or meets n - 1. Every
//! answer is checked against the same test written with num-bigint, and the candidates that pass
//! bases 2, 3, 5 and 7 are counted.
//!
//!     cargo run --release --example miller_rabin [BITS] [INSTANCES]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;

#[bigfuse::kernel]
fn miller_rabin(n: U<BITS>, a: U<BITS>) -> bool {
    let one: U<BITS> = U::ONE;
    let n1 = n - one;
    let s = n1.trailing_zeros();
    let d = n1 >> s;
    let mut x = a.pow_mod(d, n);
    let mut probable = x == one || x == n1;
    for i in 0..BITS {
        if i + 1 < s {
            let (_q, r) = x.mul_wide(x).div_rem(n);
            x = r;
            if x == n1 {
                probable = true;
            }
        }
    }
    probable
}

/// The same test with num-bigint.
fn reference(n: &BigUint, a: &BigUint) -> bool {
    let one = BigUint::from(1u8);
    let n1 = n - &one;
    let s = n1.trailing_zeros().unwrap_or(0);
    let mut x = a.modpow(&(&n1 >> s), n);
    if x == one || x == n1 {
        return true;
    }
    for _ in 1..s {
        x = &x * &x % n;
        if x == n1 {
            return true;
        }
    }
    false
}

fn main() -> bigfuse::Result<()> {
    let mut args = std::env::args().skip(1);
    let bits: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(256);
    let count: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1 << 11);
    let dev = Device::auto()?;
    println!("device: {dev}");

    // Random odd candidates of full width, some with many factors of two in n - 1 (so that the
    // squarings run), and numbers whose answers are known: primes, a Carmichael number, squares.
    let mut rng = rand::thread_rng();
    let top = BigUint::from(1u8) << (bits - 1);
    let mut n: Vec<BigUint> = (0..count)
        .map(|i| {
            let x = rng.gen_biguint(bits - 1) + &top;
            if i % 4 == 0 {
                // n - 1 divisible by 2^(i % 61 + 1).
                let k = (i % 61 + 1) as u32;
                (x >> k << k) + 1u8
            } else {
                x | BigUint::from(1u8)
            }
        })
        .collect();
    let known = [
        (BigUint::from(561u32), false), // Carmichael: fools Fermat, not this
        (BigUint::from(1_000_000_007u32), true), // prime
        (BigUint::from(13u8), true),    // a small prime above the bases
        (BigUint::from(9u8), false),    // a square
        ((BigUint::from(1u8) << 61u32) - 1u8, true), // Mersenne prime 2^61 - 1
        (BigUint::from(3_215_031_751u64), false), // strong pseudoprime to 2, 3, 5 and 7
    ];
    n.extend(known.iter().map(|(v, _)| v.clone()));

    let mut probable = vec![true; n.len()];
    let t = std::time::Instant::now();
    for base in [2u8, 3, 5, 7] {
        let a = vec![BigUint::from(base); n.len()];
        let got = miller_rabin::run(&dev, bits, &n, &a)?;
        for i in 0..n.len() {
            let want = reference(&n[i], &a[i]);
            assert_eq!(got[i], want, "n = {} to base {base}", n[i]);
            probable[i] &= got[i];
        }
    }
    let took = t.elapsed();
    let found = probable[..count].iter().filter(|p| **p).count();
    // 3215031751 passes bases 2, 3, 5 and 7 (a strong pseudoprime to all four); the others
    // answer as their nature says.
    for (k, (v, prime)) in known.iter().enumerate() {
        let passes = probable[count + k];
        let expected = *prime || *v == BigUint::from(3_215_031_751u64);
        assert_eq!(passes, expected, "{v}");
    }
    println!(
        "{found} of {count} random odd {bits}-bit numbers pass Miller-Rabin to bases 2, 3, 5 and 7 \
         (about {:.0} primes expected); 4 calls in {:.1} ms, every answer checked against num-bigint",
        count as f64 * 2.0 / (bits as f64 * std::f64::consts::LN_2),
        took.as_secs_f64() * 1e3
    );
    Ok(())
}

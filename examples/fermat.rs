//! A batched Fermat probable-prime test, `2^(m-1) mod m == 1`, with `pow_mod` (Montgomery
//! arithmetic in one thread per instance) fused with the comparison, checked against num-bigint.
//! Candidates are random odd numbers near 2^BITS, some of them products of two primes.
//!
//!     cargo run --release --example fermat [BITS] [INSTANCES]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;

#[bigfuse::kernel]
fn fermat(base: U<BITS>, m: U<BITS>) -> bool {
    let one: U<BITS> = U::ONE;
    base.pow_mod(m - one, m) == one
}

fn main() -> bigfuse::Result<()> {
    let mut args = std::env::args().skip(1);
    let bits: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1024);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1 << 12);
    let dev = Device::auto()?;
    println!("device: {dev}");

    let mut rng = rand::thread_rng();
    let top = BigUint::from(1u8) << (bits - 1);
    let m: Vec<BigUint> = (0..n)
        .map(|_| (rng.gen_biguint(bits - 1) + &top) | BigUint::from(1u8))
        .collect();
    let base = vec![BigUint::from(2u8); n];
    let t = std::time::Instant::now();
    let probable = fermat::run(&dev, bits, &base, &m)?;
    let took = t.elapsed();

    for i in 0..n {
        let want = base[i].modpow(&(&m[i] - 1u8), &m[i]) == BigUint::from(1u8);
        assert_eq!(probable[i], want, "candidate {i}: {}", m[i]);
    }
    let count = probable.iter().filter(|p| **p).count();
    println!(
        "{count} of {n} random odd {bits}-bit numbers are probable primes to base 2 \
         (about {:.0} expected); {:.1} ms for the call, checked against num-bigint",
        2.0 * n as f64 / (bits as f64 * std::f64::consts::LN_2),
        took.as_secs_f64() * 1e3
    );
    Ok(())
}

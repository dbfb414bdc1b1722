//! Products of polynomials with big integer coefficients, on the GPU: residues modulo several
//! 62-bit primes, products by number-theoretic transforms modulo each prime, and Chinese
//! remaindering back to exact coefficients, checked against a schoolbook num-bigint product.
//!
//!     cargo run --release --example poly_mul [COEFFICIENTS] [BITS] [PRODUCTS]

use bigfuse::poly::{schoolbook, PolyMul};
use bigfuse::prelude::*;
use num_bigint::RandBigInt;
use std::time::Instant;

fn main() -> bigfuse::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(256);
    let bits: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(128);
    let count: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(4);
    let dev = Device::auto()?;
    println!("device: {dev}");
    let pm = PolyMul::new(n as u64, bits)?;
    println!(
        "{n} coefficients of {bits} bits: {} primes ({:?}), product coefficients of {} bits",
        pm.primes.len(),
        pm.primes,
        pm.out_bits
    );
    let mut rng = rand::thread_rng();
    let mut poly = || -> Vec<BigUint> { (0..n).map(|_| rng.gen_biguint(bits)).collect() };
    let a: Vec<Vec<BigUint>> = (0..count).map(|_| poly()).collect();
    let b: Vec<Vec<BigUint>> = (0..count).map(|_| poly()).collect();

    pm.run(&dev, &a[..1], &b[..1])?; // compile once (cached)
    let start = Instant::now();
    let r = pm.run(&dev, &a, &b)?;
    let secs = start.elapsed().as_secs_f64();

    for i in 0..count {
        assert_eq!(r[i], schoolbook(&a[i], &b[i]), "product {i}");
    }
    println!(
        "{count} products equal the schoolbook product; {:.1} ms including transfers \
         (`bench poly` times the GPU work alone)",
        secs * 1e3
    );
    Ok(())
}

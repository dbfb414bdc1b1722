//! The reference paper's Poly, (a*a + b) * (b*b + b) + a*b modulo 2^BITS, fused into one kernel:
//! verified against num-bigint, with its throughput in the paper's metric.
//!
//!     cargo run --release --example poly [BITS] [INSTANCES]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;
use std::time::Instant;

#[bigfuse::kernel]
fn poly(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let a2 = a * a;
    let b2 = b * b;
    (a2 + b) * (b2 + b) + a * b
}

fn main() -> bigfuse::Result<()> {
    let mut args = std::env::args().skip(1);
    let bits: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(4096);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1 << 12);
    let dev = Device::auto()?;
    println!("device: {dev}");

    let mut rng = rand::thread_rng();
    let a: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();
    let b: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();

    poly::prepare(&dev, bits)?; // specialize and compile the tuned kernel once (cached)
    let start = Instant::now();
    let r = poly::run(&dev, bits, &a, &b)?;
    let secs = start.elapsed().as_secs_f64();

    let modulus = BigUint::from(1u8) << bits;
    for i in 0..n {
        let (x, y) = (&a[i], &b[i]);
        let want = ((x * x + y) * (y * y + y) + x * y) % &modulus;
        assert_eq!(r[i], want, "instance {i}");
    }
    let m = (bits / 32) as f64;
    println!(
        "{n} instances of Poly at {bits} bits equal num-bigint; {:.1} ms including transfers, \
         {:.0} Gu32ops/s (4 products, 300*n*m*log2(m)/t; `bench paper` times the kernel alone)",
        secs * 1e3,
        4.0 * 300.0 * n as f64 * m * m.log2() / secs / 1e9
    );
    let explain = poly::explain(&dev, bits)?;
    let kernels: Vec<&str> = explain
        .lines()
        .filter(|l| l.starts_with("kernel "))
        .collect();
    println!("{}", kernels.join("\n"));
    Ok(())
}

//! Dot products modulo a prime, written as `zip ; map ; reduce` over `Zp<P>`. The compiler keeps
//! the exact 128-bit products and sums them in 192 bits, reducing once per vector (delayed
//! reduction); long vectors are split over many blocks. Checked against num-bigint.
//!
//!     cargo run --release --example dot_mod_p [LOG2_N] [VECTORS] [P]

use bigfuse::prelude::*;
use rand::Rng;
use std::time::Instant;

#[bigfuse::kernel]
fn dot(xs: [Zp<P>; N], ys: [Zp<P>; N]) -> Zp<P> {
    xs.zip(ys)
        .map(|(x, y)| x * y)
        .reduce(|s, t| s + t, Zp::ZERO)
}

fn main() -> bigfuse::Result<()> {
    let mut args = std::env::args().skip(1);
    let log_n: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(16);
    let vectors: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(8);
    let p: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(18446744073709551557); // the largest prime below 2^64
    let n = 1usize << log_n;
    let dev = Device::auto()?;
    println!("device: {dev}");
    let mut rng = rand::thread_rng();
    let xs: Vec<u64> = (0..n * vectors).map(|_| rng.gen_range(0..p)).collect();
    let ys: Vec<u64> = (0..n * vectors).map(|_| rng.gen_range(0..p)).collect();

    dot::prepare(&dev, p, n as u64)?; // specialize and compile the tuned kernel once (cached)
    let start = Instant::now();
    let r = dot::run(&dev, p, n as u64, &xs, &ys)?;
    let secs = start.elapsed().as_secs_f64();

    for (i, got) in r.iter().enumerate() {
        let sum: BigUint = (i * n..(i + 1) * n)
            .map(|k| BigUint::from(xs[k]) * BigUint::from(ys[k]))
            .sum();
        assert_eq!(BigUint::from(*got), sum % BigUint::from(p), "vector {i}");
    }
    println!(
        "{vectors} dot products of 2^{log_n} residues modulo {p} equal num-bigint; {:.2} ms including \
         transfers ({:.3} G modular products/s; `bench dot` times the kernels alone)",
        secs * 1e3,
        (n * vectors) as f64 / secs / 1e9
    );
    println!("{}", dot::explain(&dev, p, n as u64)?);
    Ok(())
}

//! Three kernels chained on the device: the operands go up once, the intermediates never leave
//! the GPU, one result comes back. Checked against num-bigint, and timed against the same three
//! kernels called with `run` (each call a round trip through the host).
//!
//!     cargo run --release --example chain [BITS] [INSTANCES]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;
use std::time::Instant;

/// The product modulo 2^BITS.
#[bigfuse::kernel]
fn mul(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a * b
}

/// x + y and whether it wrapped.
#[bigfuse::kernel]
fn add(x: U<BITS>, y: U<BITS>) -> (U<BITS>, bool) {
    let s = x + y;
    (s, s < x)
}

/// The reference paper's Poly.
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
    let c: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();

    // Compile all three (tuned, cached), so that the timings below are the calls alone.
    mul::prepare(&dev, bits)?;
    add::prepare(&dev, bits)?;
    poly::prepare(&dev, bits)?;

    // z = poly(a*b + c, a), with the wrap flags of the addition.
    let start = Instant::now();
    let (ab, bb, cb) = (
        Batch::big(&dev, bits, &a)?,
        Batch::big(&dev, bits, &b)?,
        Batch::big(&dev, bits, &c)?,
    );
    let x = mul::launch(&dev, bits, &ab, &bb)?;
    let (y, wrapped) = add::launch(&dev, bits, &x, &cb)?;
    let z = poly::launch(&dev, bits, &y, &ab)?;
    let (z, wrapped) = (z.to_big()?, wrapped.to_bool()?);
    let chained = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let x2 = mul::run(&dev, bits, &a, &b)?;
    let (y2, _) = add::run(&dev, bits, &x2, &c)?;
    let z2 = poly::run(&dev, bits, &y2, &a)?;
    let round_trips = start.elapsed().as_secs_f64();
    assert_eq!(z, z2);

    let m = BigUint::from(1u8) << bits;
    for i in 0..n {
        let x = (&a[i] * &b[i]) % &m;
        let sum = &x + &c[i];
        let y = &sum % &m;
        let want = ((&y * &y + &a[i]) * (&a[i] * &a[i] + &a[i]) + &y * &a[i]) % &m;
        assert_eq!(z[i], want, "instance {i}");
        assert_eq!(wrapped[i], sum >= m, "instance {i}");
    }
    println!(
        "{n} instances of poly(a*b + c, a) at {bits} bits equal num-bigint; \
         chained on the device {:.2} ms, three round trips through the host {:.2} ms",
        chained * 1e3,
        round_trips * 1e3
    );
    Ok(())
}

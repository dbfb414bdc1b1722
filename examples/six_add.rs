//! Six dependent additions in one kernel (the anchors' 6-Add: r = 6a + 10b, computed as written),
//! verified against num-bigint, with its throughput in GB/s (3 * n * BITS / 8 bytes per call).
//!
//!     cargo run --release --example six_add [BITS] [INSTANCES]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;
use std::time::Instant;

#[bigfuse::kernel]
fn six_add(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let t1 = a + b;
    let t2 = t1 + t1;
    let t3 = t2 + b;
    let t4 = t3 + t3;
    let t5 = t4 + t3;
    t5 + b
}

fn main() -> bigfuse::Result<()> {
    let mut args = std::env::args().skip(1);
    let bits: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(4096);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1 << 14);
    let dev = Device::auto()?;
    println!("device: {dev}");

    let mut rng = rand::thread_rng();
    let a: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();
    let b: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();

    six_add::prepare(&dev, bits)?; // specialize and compile the tuned kernel once (cached)
    let start = Instant::now();
    let r = six_add::run(&dev, bits, &a, &b)?;
    let secs = start.elapsed().as_secs_f64();

    let modulus = BigUint::from(1u8) << bits;
    for i in 0..n {
        let want = (BigUint::from(6u8) * &a[i] + BigUint::from(10u8) * &b[i]) % &modulus;
        assert_eq!(r[i], want, "instance {i}");
    }
    println!(
        "{n} instances of 6-Add at {bits} bits equal num-bigint; {:.1} ms including transfers, \
         {:.1} GB/s (`bench paper` times the kernel alone)",
        secs * 1e3,
        3.0 * n as f64 * bits as f64 / 8.0 / secs / 1e9
    );
    println!("{}", six_add::explain(&dev, bits)?);
    Ok(())
}

//! The main example: big-integer kernels written as Rust functions, run on the GPU if there is
//! one (else on the CPU backend, which says so), verified against num-bigint.
//!
//!     cargo run --release --example quickstart [BITS] [INSTANCES]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;
use std::time::Instant;

/// a + b, a - b and a < b, all in one fused kernel (sums and differences wrap modulo 2^BITS).
#[bigfuse::kernel]
fn add_sub_lt(a: U<BITS>, b: U<BITS>) -> (U<BITS>, U<BITS>, bool) {
    (a + b, a - b, a < b)
}

/// The larger minus the smaller: comparisons and `if` select inside one kernel.
#[bigfuse::kernel]
fn absdiff(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    if a < b {
        b - a
    } else {
        a - b
    }
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
    let modulus = BigUint::from(1u8) << bits;

    // The first call specializes the kernel for BITS and compiles it (cached afterwards).
    let (sum, diff, less) = add_sub_lt::run(&dev, bits, &a, &b)?;
    let start = Instant::now();
    let (sum2, _, _) = add_sub_lt::run(&dev, bits, &a, &b)?;
    let elapsed = start.elapsed();
    let d = absdiff::run(&dev, bits, &a, &b)?;

    for i in 0..n {
        assert_eq!(sum[i], (&a[i] + &b[i]) % &modulus, "a + b, instance {i}");
        assert_eq!(
            diff[i],
            (&a[i] + &modulus - &b[i]) % &modulus,
            "a - b, instance {i}"
        );
        assert_eq!(less[i], a[i] < b[i], "a < b, instance {i}");
        let want = if a[i] < b[i] {
            &b[i] - &a[i]
        } else {
            &a[i] - &b[i]
        };
        assert_eq!(d[i], want, "|a - b|, instance {i}");
    }
    assert_eq!(sum, sum2);
    println!(
        "{n} instances of {bits} bits: a+b, a-b, a<b and |a-b| equal num-bigint; \
         one call took {:.1} ms including transfers",
        elapsed.as_secs_f64() * 1e3
    );
    println!("\nWhat the compiler decided for absdiff at {bits} bits:");
    let explain = absdiff::explain(&dev, bits)?;
    for line in explain.lines().skip_while(|l| !l.starts_with("== fuse")) {
        println!("  {line}");
    }
    Ok(())
}

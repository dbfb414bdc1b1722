//! Products modulo a per-instance modulus, `a * b mod m`, through the full product and a division
//! (`a.mul_wide(b).div_rem(m)`: a `U<{2 * BITS}>` by a `U<BITS>`), and the quotient of a sum by
//! the modulus, fused in one kernel and checked against num-bigint. Up to 512 bits each instance
//! runs in one thread with its limbs in registers; the divisor's reciprocal (Newton's iteration) is
//! computed once for both divisions by `m`.
//!
//!     cargo run --release --example mod_mul [BITS] [INSTANCES]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;

#[bigfuse::kernel]
fn mod_mul(a: U<BITS>, b: U<BITS>, m: U<BITS>) -> (U<BITS>, U<BITS>) {
    let (_, r) = a.mul_wide(b).div_rem(m);
    // Wrapping like every U<BITS> sum; m = 0 gives all ones (documented, never a trap).
    let q = (a + b) / m;
    (r, q)
}

fn main() -> bigfuse::Result<()> {
    let mut args = std::env::args().skip(1);
    let bits: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(256);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1 << 12);
    let dev = Device::auto()?;
    println!("device: {dev}");

    let mut rng = rand::thread_rng();
    let a: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();
    let b: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();
    // Moduli of every length, odd and even, and one zero.
    let mut m: Vec<BigUint> = (0..n)
        .map(|i| rng.gen_biguint(1 + (i as u64 * 7919) % bits))
        .collect();
    m[0] = BigUint::from(0u8);
    let (r, q) = mod_mul::run(&dev, bits, &a, &b, &m)?;

    let top = BigUint::from(1u8) << bits;
    for i in 0..n {
        let (want_r, want_q) = if m[i] == BigUint::from(0u8) {
            ((&a[i] * &b[i]) % &top, &top - 1u8)
        } else {
            ((&a[i] * &b[i]) % &m[i], ((&a[i] + &b[i]) % &top) / &m[i])
        };
        assert_eq!(r[i], want_r, "a * b mod m, instance {i}");
        assert_eq!(q[i], want_q, "(a + b) / m, instance {i}");
    }
    println!("{n} products modulo per-instance {bits}-bit moduli equal num-bigint's");
    // The launch line of `explain`: one thread per instance up to 512 bits.
    let plan = mod_mul::explain(&dev, bits)?;
    if let Some(launch) = plan.lines().find(|l| l.starts_with("block ")) {
        println!("{launch}");
    }
    Ok(())
}

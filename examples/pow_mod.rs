//! x^e mod 2^BITS by square-and-multiply, written as a `for` loop over the bits of the exponent
//! (BITS rounds of two products: unrolled at small BITS, a loop in the CUDA from 320 bits, see
//! codegen/src/loops.rs), checked against num-bigint's `modpow`.
//!
//!     cargo run --release --example pow_mod [BITS] [INSTANCES]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;

#[bigfuse::kernel]
fn pow_mod(x: U<BITS>, e: U<BITS>) -> U<BITS> {
    let mut acc: U<BITS> = U::ONE;
    let mut sq = x;
    for i in 0..BITS {
        if e.bit(i) {
            acc = acc * sq;
        }
        sq *= sq;
    }
    acc
}

fn main() -> bigfuse::Result<()> {
    let mut args = std::env::args().skip(1);
    let bits: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(128);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1 << 10);
    let dev = Device::auto()?;
    println!("device: {dev}");

    let mut rng = rand::thread_rng();
    let x: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();
    let e: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();
    let r = pow_mod::run(&dev, bits, &x, &e)?;

    let modulus = BigUint::from(1u8) << bits;
    for i in 0..n {
        assert_eq!(r[i], x[i].modpow(&e[i], &modulus), "instance {i}");
    }
    println!("{n} powers x^e mod 2^{bits} by a {bits}-round loop equal num-bigint's modpow");
    Ok(())
}

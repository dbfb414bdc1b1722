//! Big-integer addition written as a user program over 64-bit limbs (map ; exclusive scan with a
//! user-written carry operator ; map), checked against num-bigint and against the built-in `+`.
//! The compiler recognises the operator by its meaning and emits the same carry chains as for `+`.
//!
//!     cargo run --release --example user_add [LIMBS] [INSTANCES]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;

/// The carry operator on packed (generate, propagate) flags; associative with identity 2.
#[bigfuse::op(associative)]
fn carry(lo: u32, hi: u32) -> u32 {
    ((hi | ((hi >> 1) & lo)) & 1) | (lo & hi & 2)
}

#[bigfuse::kernel]
fn my_add(a: [u64; N], b: [u64; N]) -> [u64; N] {
    let sums = a.zip(b).map(|(x, y)| x + y);
    let flags = a.zip(b).map(|(x, y)| {
        let s = x + y;
        ((s < x) as u32) | (((s == u64::MAX) as u32) << 1)
    });
    let carries = flags.scan_exclusive(carry, 2u32);
    sums.zip(carries).map(|(s, c)| s + ((c & 1) as u64))
}

#[bigfuse::kernel]
fn builtin_add(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a + b
}

fn main() -> bigfuse::Result<()> {
    let mut args = std::env::args().skip(1);
    let limbs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let dev = Device::auto()?;
    println!("device: {dev}");
    let bits = 64 * limbs as u64;
    let mut rng = rand::thread_rng();
    let a: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();
    let mut b: Vec<BigUint> = (0..n).map(|_| rng.gen_biguint(bits)).collect();
    b[0] = (BigUint::from(1u8) << bits) - 1u8; // a carry through every limb
    let flat = |v: &[BigUint]| -> Vec<u64> {
        v.iter()
            .flat_map(|x| {
                let mut d = x.to_u64_digits();
                d.resize(limbs, 0);
                d
            })
            .collect()
    };
    let r = my_add::run(&dev, limbs as u64, &flat(&a), &flat(&b))?;
    let builtin = builtin_add::run(&dev, bits, &a, &b)?;
    let modulus = BigUint::from(1u8) << bits;
    for i in 0..n {
        let got = bigfuse::runtime::big_from_limbs(&r[i * limbs..(i + 1) * limbs]);
        assert_eq!(got, (&a[i] + &b[i]) % &modulus, "instance {i}");
        assert_eq!(got, builtin[i], "instance {i}");
    }
    println!(
        "{n} user-written additions of {bits}-bit numbers equal num-bigint and the built-in `+`"
    );
    println!("{}", my_add::explain(&dev, limbs as u64)?);
    Ok(())
}

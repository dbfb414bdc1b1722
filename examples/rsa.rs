//! Batched RSA from scratch, every big-number step a kernel, checked against num-bigint:
//! 1. probable primes p, q of BITS bits: a Fermat test `2^(m-1) mod m == 1` (`pow_mod`) over a
//!    batch of random odd candidates;
//! 2. keys: n = p q and φ = (p-1)(q-1) (`mul_wide`), d = e^-1 mod φ (`inv_mod`, an even modulus),
//!    with e = 65537 (pairs where gcd(e, φ) > 1 report it and are dropped);
//! 3. a round trip of random messages: c = msg^e mod n, then c^d mod n (`pow_mod` with a
//!    2·BITS-bit exponent), which must give the message back.
//!
//!     cargo run --release --example rsa [BITS] [PAIRS]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;

#[bigfuse::kernel]
fn probable_prime(m: U<BITS>) -> bool {
    let one: U<BITS> = U::ONE;
    let two = one + one;
    two.pow_mod(m - one, m) == one
}

#[bigfuse::kernel]
fn keys(p: U<BITS>, q: U<BITS>, e: U<{ 2 * BITS }>) -> (U<{ 2 * BITS }>, U<{ 2 * BITS }>, bool) {
    let one: U<BITS> = U::ONE;
    let n = p.mul_wide(q);
    let phi = (p - one).mul_wide(q - one);
    let (d, ok) = e.inv_mod(phi);
    (n, d, ok)
}

#[bigfuse::kernel]
fn round_trip(msg: U<BITS>, e: U<BITS>, d: U<BITS>, n: U<BITS>) -> (U<BITS>, U<BITS>) {
    let c = msg.pow_mod(e, n);
    (c, c.pow_mod(d, n))
}

fn main() -> bigfuse::Result<()> {
    let mut args = std::env::args().skip(1);
    let bits: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(512);
    let pairs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    let dev = Device::auto()?;
    println!("device: {dev}");
    let mut rng = rand::thread_rng();
    let one = BigUint::from(1u8);
    let top = &one << (bits - 1);

    // 1. Primes: batches of random odd candidates with their top bit set.
    let t = std::time::Instant::now();
    let mut primes: Vec<BigUint> = Vec::new();
    let mut tried = 0;
    while primes.len() < 2 * pairs {
        let batch: Vec<BigUint> = (0..(400 * pairs).max(1024))
            .map(|_| (rng.gen_biguint(bits - 1) + &top) | &one)
            .collect();
        let probable = probable_prime::run(&dev, bits, &batch)?;
        for (m, p) in batch.iter().zip(&probable) {
            let want = BigUint::from(2u8).modpow(&(m - &one), m) == one;
            assert_eq!(*p, want, "the Fermat test of {m}");
        }
        tried += batch.len();
        primes.extend(batch.into_iter().zip(probable).filter(|x| x.1).map(|x| x.0));
    }
    primes.truncate(2 * pairs);
    println!(
        "{} probable primes of {bits} bits among {tried} candidates ({:.1} ms)",
        primes.len(),
        t.elapsed().as_secs_f64() * 1e3
    );

    // 2. Keys.
    let (ps, qs) = primes.split_at(pairs);
    let e = vec![BigUint::from(65537u32); pairs];
    let (n, d, ok) = keys::run(&dev, bits, ps, qs, &e)?;
    let mut kept = Vec::new();
    for i in 0..pairs {
        let phi = (&ps[i] - &one) * (&qs[i] - &one);
        assert_eq!(n[i], &ps[i] * &qs[i], "n of pair {i}");
        let want = e[i].modinv(&phi);
        assert_eq!(
            ok[i],
            want.is_some(),
            "whether 65537 is invertible modulo φ of pair {i}"
        );
        if let Some(w) = want {
            assert_eq!(d[i], w, "d of pair {i}");
            assert_eq!((&e[i] * &d[i]) % &phi, one, "e d mod φ of pair {i}");
            kept.push(i);
        }
    }
    println!(
        "{} key pairs of {} bits (d = 65537^-1 mod φ, an even modulus, on the device)",
        kept.len(),
        2 * bits
    );

    // 3. Round trips of random messages below n.
    let wide = 2 * bits;
    let pick = |v: &[BigUint]| -> Vec<BigUint> { kept.iter().map(|&i| v[i].clone()).collect() };
    let (n, d) = (pick(&n), pick(&d));
    let e: Vec<BigUint> = vec![BigUint::from(65537u32); kept.len()];
    let msg: Vec<BigUint> = n.iter().map(|n| rng.gen_biguint_below(n)).collect();
    let t = std::time::Instant::now();
    let (c, back) = round_trip::run(&dev, wide, &msg, &e, &d, &n)?;
    let took = t.elapsed();
    for i in 0..kept.len() {
        assert_eq!(c[i], msg[i].modpow(&e[i], &n[i]), "ciphertext {i}");
        assert_eq!(back[i], msg[i], "message {i} after the round trip");
    }
    println!(
        "{} messages encrypted and decrypted with {wide}-bit keys ({:.1} ms), checked against \
         num-bigint",
        kept.len(),
        took.as_secs_f64() * 1e3
    );
    Ok(())
}

//! Elliptic-curve arithmetic modulo a big prime: each instance doubles a point of secp256k1
//! (y^2 = x^3 + 7 modulo p = 2^256 - 2^32 - 977) K times in Jacobian coordinates, with
//! `add_mod`, `sub_mod` and `mul_mod`. The compiler keeps the whole chain in Montgomery form (one
//! conversion per input, one per result), so each doubling costs its seven modular products. The
//! results are checked against num-bigint's affine doubling (slopes by modular inverses) and
//! against the curve equation.
//!
//!     cargo run --release --example ec_double [INSTANCES]

use bigfuse::prelude::*;
use num_bigint::RandBigInt;
use num_traits::One;

/// Doublings per instance.
const K: u64 = 8;

#[bigfuse::kernel]
fn double_k(x: U<256>, y: U<256>, z: U<256>, p: U<256>) -> (U<256>, U<256>, U<256>) {
    let mut x = x;
    let mut y = y;
    let mut z = z;
    // 2 (X, Y, Z) for a = 0 (dbl-2009-l): A = X^2, B = Y^2, C = B^2, D = 2((X + B)^2 - A - C),
    // E = 3A, X' = E^2 - 2D, Y' = E (D - X') - 8C, Z' = 2 Y Z.
    for _i in 0..8 {
        let a = x.mul_mod(x, p);
        let b = y.mul_mod(y, p);
        let c = b.mul_mod(b, p);
        let xb = x.add_mod(b, p);
        let t = xb.mul_mod(xb, p).sub_mod(a, p).sub_mod(c, p);
        let d = t.add_mod(t, p);
        let e = a.add_mod(a, p).add_mod(a, p);
        let x3 = e.mul_mod(e, p).sub_mod(d, p).sub_mod(d, p);
        let c2 = c.add_mod(c, p);
        let c4 = c2.add_mod(c2, p);
        let c8 = c4.add_mod(c4, p);
        let y3 = e.mul_mod(d.sub_mod(x3, p), p).sub_mod(c8, p);
        let yz = y.mul_mod(z, p);
        z = yz.add_mod(yz, p);
        x = x3;
        y = y3;
    }
    (x, y, z)
}

fn main() -> bigfuse::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 12);
    let dev = Device::auto()?;
    println!("device: {dev}");
    let p = (BigUint::one() << 256u32) - (BigUint::one() << 32u32) - 977u32;
    let seven = BigUint::from(7u8);

    // Random points: x until x^3 + 7 is a square (p = 3 mod 4: its root is a power).
    let mut rng = rand::thread_rng();
    let root_exp = (&p + 1u8) >> 2u8;
    let (mut xs, mut ys) = (Vec::with_capacity(n), Vec::with_capacity(n));
    while xs.len() < n {
        let x = rng.gen_biguint_below(&p);
        let rhs = (x.modpow(&BigUint::from(3u8), &p) + &seven) % &p;
        let y = rhs.modpow(&root_exp, &p);
        if &y * &y % &p == rhs {
            xs.push(x);
            ys.push(y);
        }
    }
    let zs = vec![BigUint::one(); n];
    let ps = vec![p.clone(); n];
    let (gx, gy, gz) = double_k::run(&dev, &xs, &ys, &zs, &ps)?;

    // Affine doubling by num-bigint: slope 3 x^2 / (2 y).
    let inv = |v: &BigUint| v.modpow(&(&p - 2u8), &p);
    for i in 0..n {
        let (mut x, mut y) = (xs[i].clone(), ys[i].clone());
        for _ in 0..K {
            let l = BigUint::from(3u8) * &x * &x % &p * inv(&(BigUint::from(2u8) * &y % &p)) % &p;
            let x2 = (&l * &l + BigUint::from(2u8) * (&p - &x)) % &p;
            y = (&l * ((&x + &p - &x2) % &p) + &p - &y) % &p;
            x = x2;
        }
        let zi = inv(&gz[i]);
        let z2 = &zi * &zi % &p;
        assert_eq!(&gx[i] * &z2 % &p, x, "x of instance {i}");
        assert_eq!(&gy[i] * z2 * zi % &p, y, "y of instance {i}");
        // On the curve: Y^2 = X^3 + 7 Z^6.
        let z6 = gz[i].modpow(&BigUint::from(6u8), &p);
        assert_eq!(
            &gy[i] * &gy[i] % &p,
            (gx[i].modpow(&BigUint::from(3u8), &p) + &seven * z6) % &p,
            "curve equation, instance {i}"
        );
    }
    println!("{n} points of secp256k1 doubled {K} times equal num-bigint's affine doublings");
    Ok(())
}

//! Bounded loops in kernels (built through the IR builder): square-and-multiply over the bits of an
//! exponent, carrying two big integers through BITS or a fixed number of rounds, on both CPU levels
//! and the GPU, against num-bigint. Unrolled before lowering, so each kernel is straight-line code.

mod common;

use bigfuse::ir::{Builder, Func, Literal, Size, Type, ValueId};
use bigfuse::{Arg, BigUint, Column, Kernel};
use common::{devices, modulus, nvrtc_compiles, random_big, rng};

/// `x^e mod 2^BITS`, reading `e`'s low `ROUNDS` bits: right-to-left square-and-multiply.
fn pow_low_bits(rounds: Size) -> Func {
    let mut b = Builder::new("pow_low_bits", &["BITS"]);
    let big = Type::Big(Size::param(0));
    let x = b.param("x", big.clone());
    let e = b.param("e", big.clone());
    let one = b.constant(Literal::Big(vec![1], Size::param(0)));
    let mut body = Builder::loop_body(&b);
    let i = ValueId(0);
    let acc = body.param("acc", big.clone());
    let sq = body.param("sq", big.clone());
    let be = body.param("e", big);
    let times = body.mul(acc, sq).unwrap();
    let set = body.bit(be, i).unwrap();
    let acc = body.select(set, times, acc).unwrap();
    let sq = body.mul(sq, sq).unwrap();
    let body = body.finish(&[acc, sq]).unwrap();
    let r = b.repeat(rounds, body, &[one, x], &[e]).unwrap();
    let r = b.extract(r, 0).unwrap();
    b.finish(&[r]).unwrap()
}

fn column(c: Column) -> Vec<BigUint> {
    match c {
        Column::Big(v) => v,
        other => panic!("expected big integers, got {other:?}"),
    }
}

#[test]
fn square_and_multiply_over_every_bit_of_the_exponent() {
    let kernel = Kernel::new(pow_low_bits(Size::param(0))).unwrap();
    let mut r = rng(17);
    // Every round is two products in the unrolled kernel: small widths keep NVRTC quick.
    for bits in [64u64, 128] {
        let m = modulus(bits);
        let mut xs: Vec<BigUint> = (0..37).map(|_| random_big(&mut r, bits)).collect();
        let mut es: Vec<BigUint> = (0..37).map(|_| random_big(&mut r, bits)).collect();
        // Edge cases: exponent 0 and 1, base 0 and 1, all-ones.
        xs.extend([0u8, 1, 3, 0].map(BigUint::from));
        es.extend([BigUint::from(5u8), BigUint::from(0u8), BigUint::from(1u8)]);
        es.push(&m - 1u8);
        let want: Vec<BigUint> = xs.iter().zip(&es).map(|(x, e)| x.modpow(e, &m)).collect();
        for dev in devices() {
            let got = kernel
                .run(&dev, &[bits], &[Arg::Big(&xs), Arg::Big(&es)])
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            assert_eq!(
                column(got.into_iter().next().unwrap()),
                want,
                "{bits} bits on {dev}"
            );
        }
        nvrtc_compiles(&kernel, &[bits]);
    }
}

#[test]
fn a_fixed_number_of_rounds_at_wide_sizes() {
    // Eight rounds: e's low 8 bits, at widths where products go through shared memory.
    let kernel = Kernel::new(pow_low_bits(Size::lit(8))).unwrap();
    let mut r = rng(5);
    for bits in [512u64, 1024] {
        let m = modulus(bits);
        let low = BigUint::from(1u32 << 8);
        let xs: Vec<BigUint> = (0..9).map(|_| random_big(&mut r, bits)).collect();
        let es: Vec<BigUint> = (0..9).map(|_| random_big(&mut r, bits)).collect();
        let want: Vec<BigUint> = xs
            .iter()
            .zip(&es)
            .map(|(x, e)| x.modpow(&(e % &low), &m))
            .collect();
        for dev in devices() {
            let got = kernel
                .run(&dev, &[bits], &[Arg::Big(&xs), Arg::Big(&es)])
                .unwrap_or_else(|e| panic!("{bits} bits on {dev}: {e}"));
            assert_eq!(
                column(got.into_iter().next().unwrap()),
                want,
                "{bits} bits on {dev}"
            );
        }
        nvrtc_compiles(&kernel, &[bits]);
    }
}

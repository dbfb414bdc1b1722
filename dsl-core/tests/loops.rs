//! Bounded loops: the reference evaluator runs them round by round, unrolling gives the same
//! results, the text form reads them back, and a body of the wrong shape is refused.

use bigfuse_core::{
    eval, parse, print, specialize, unroll, validate, Builder, Func, Op, Size, Type, Value,
};
use num_bigint::BigUint;
use proptest::prelude::*;

/// `U<BITS>`.
fn big(_: u64) -> Type {
    Type::Big(Size::param(0))
}

/// `x^e mod 2^BITS` by square-and-multiply over the bits of `e`, low bit first: one loop of
/// BITS rounds carrying the accumulator and the square, reading `e`.
fn pow_mod_2k() -> Func {
    let mut b = Builder::new("pow", &["BITS"]);
    let x = b.param("x", big(0));
    let e = b.param("e", big(0));
    let one = b.constant(bigfuse_core::Literal::Big(vec![1], Size::param(0)));
    let mut body = Builder::loop_body(&b);
    let i = bigfuse_core::ValueId(0);
    let acc = body.param("acc", big(0));
    let sq = body.param("sq", big(0));
    let be = body.param("e", big(0));
    let times = body.mul(acc, sq).unwrap();
    let set = body.bit(be, i).unwrap();
    let acc = body.select(set, times, acc).unwrap();
    let sq = body.mul(sq, sq).unwrap();
    let body = body.finish(&[acc, sq]).unwrap();
    let r = b.repeat(Size::param(0), body, &[one, x], &[e]).unwrap();
    let r = b.extract(r, 0).unwrap();
    b.finish(&[r]).unwrap()
}

/// Two carried values: (a, b) -> (a + b, a ^ b), `n` rounds of a fixed count.
fn two_carried(rounds: u64) -> Func {
    let mut b = Builder::new("two", &["BITS"]);
    let a = b.param("a", big(0));
    let c = b.param("b", big(0));
    let mut body = Builder::loop_body(&b);
    let x = body.param("x", big(0));
    let y = body.param("y", big(0));
    let s = body.add(x, y).unwrap();
    let t = body.xor(x, y).unwrap();
    let body = body.finish(&[s, t]).unwrap();
    let r = b.repeat(Size::lit(rounds), body, &[a, c], &[]).unwrap();
    let f0 = b.extract(r, 0).unwrap();
    let f1 = b.extract(r, 1).unwrap();
    let d = b.sub(f0, f1).unwrap();
    b.finish(&[d, f1]).unwrap()
}

fn reference_two(a: &BigUint, c: &BigUint, rounds: u64, bits: u64) -> (BigUint, BigUint) {
    let m = BigUint::from(1u8) << bits;
    let (mut x, mut y) = (a.clone(), c.clone());
    for _ in 0..rounds {
        let s = (&x + &y) % &m;
        let t = &x ^ &y;
        x = s;
        y = t;
    }
    ((&x + &m - &y) % &m, y)
}

fn value(limbs: &[u64]) -> BigUint {
    bigfuse_core::eval::limbs_to_big(limbs)
}

#[test]
fn a_loop_runs_its_rounds_and_unrolls_to_the_same_results() {
    for bits in [64u64, 192, 320] {
        let f = specialize(&pow_mod_2k(), &[bits]).unwrap();
        let u = unroll(&f).unwrap();
        assert!(
            u.nodes.iter().all(|n| !matches!(n.op, Op::Loop { .. })),
            "{}",
            print(&u)
        );
        validate(&u).unwrap();
        let m = BigUint::from(1u8) << bits;
        for (x, e) in [
            (3u64, 0u64),
            (3, 1),
            (7, 13),
            (u64::MAX, 65537),
            (0, 5),
            (0, 0),
        ] {
            let (x, e) = (BigUint::from(x), BigUint::from(e));
            let want = Value::Big(x.modpow(&e, &m));
            let inputs = [Value::Big(x.clone()), Value::Big(e.clone())];
            assert_eq!(eval(&f, &inputs).unwrap()[0], want, "{x}^{e} at {bits}");
            assert_eq!(
                eval(&u, &inputs).unwrap()[0],
                want,
                "unrolled {x}^{e} at {bits}"
            );
        }
    }
}

#[test]
fn several_carried_values_come_out_as_fields() {
    for rounds in [0u64, 1, 5] {
        let f = specialize(&two_carried(rounds), &[128]).unwrap();
        let u = unroll(&f).unwrap();
        // The tuple of big integers is gone: its fields are the last round's values.
        assert!(
            u.nodes
                .iter()
                .all(|n| !matches!(n.op, Op::Loop { .. } | Op::Tuple(_) | Op::Extract(..))),
            "{}",
            print(&u)
        );
        let (a, c) = (value(&[u64::MAX, 5]), value(&[12345, 1 << 63]));
        let (d, y) = reference_two(&a, &c, rounds, 128);
        let inputs = [Value::Big(a), Value::Big(c)];
        let want = vec![Value::Big(d), Value::Big(y)];
        assert_eq!(eval(&f, &inputs).unwrap(), want);
        assert_eq!(eval(&u, &inputs).unwrap(), want);
    }
}

#[test]
fn loops_read_back_from_their_text() {
    for f in [pow_mod_2k(), two_carried(3)] {
        let text = print(&f);
        let back = parse(&text).unwrap_or_else(|e| panic!("{e}\nin\n{text}"));
        assert_eq!(back, f, "{text}");
        assert_eq!(print(&back), text);
    }
}

#[test]
fn a_body_of_the_wrong_shape_is_refused() {
    // The body returns a u32 for a carried U<BITS>.
    let mut b = Builder::new("bad", &["BITS"]);
    let a = b.param("a", big(0));
    let mut body = Builder::loop_body(&b);
    let _x = body.param("x", big(0));
    let i = bigfuse_core::ValueId(0);
    let body = body.finish(&[i]).unwrap();
    let e = b.repeat(Size::lit(2), body, &[a], &[]).unwrap_err();
    assert!(e.to_string().contains("must return what it carries"), "{e}");
    // The body takes fewer parameters than it is given.
    let mut b = Builder::new("bad", &["BITS"]);
    let a = b.param("a", big(0));
    let mut body = Builder::loop_body(&b);
    let x = body.param("x", big(0));
    let body = body.finish(&[x]).unwrap();
    let e = b.repeat(Size::lit(2), body, &[a], &[a]).unwrap_err();
    assert!(e.to_string().contains("a loop body takes"), "{e}");
}

#[test]
fn a_loop_that_unrolls_too_far_is_an_error_not_a_hang() {
    let f = specialize(&two_carried(1 << 20), &[64]).unwrap();
    let e = unroll(&f).unwrap_err();
    assert!(e.to_string().contains("unrolls to more than"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn unrolled_loops_equal_the_reference(
        limbs_a in proptest::collection::vec(any::<u64>(), 2),
        limbs_b in proptest::collection::vec(any::<u64>(), 2),
        rounds in 0u64..8,
    ) {
        let f = specialize(&two_carried(rounds), &[128]).unwrap();
        let u = unroll(&f).unwrap();
        let (a, c) = (value(&limbs_a), value(&limbs_b));
        let (d, y) = reference_two(&a, &c, rounds, 128);
        let inputs = [Value::Big(a), Value::Big(c)];
        prop_assert_eq!(eval(&u, &inputs).unwrap(), vec![Value::Big(d), Value::Big(y)]);
    }
}

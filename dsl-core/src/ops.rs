//! Canonical operators. Code generation recognises these by structural equality, so a user program
//! that builds its scan from [`carry`] gets the same fast carry resolution as the built-in `+`.

use crate::builder::Builder;
use crate::ir::{BinOp, Func, Literal};
use crate::types::Type;

/// Bit 0 of a carry flag word: a carry leaves this block (generate; for subtraction, a borrow).
pub const CARRY_GENERATE: u32 = 1;
/// Bit 1 of a carry flag word: the block lets an incoming carry through (propagate).
pub const CARRY_PROPAGATE: u32 = 2;
/// Identity of [`carry`]: no carry, and lets everything through.
pub const CARRY_IDENTITY: u32 = CARRY_PROPAGATE;

/// The carry operator on packed (generate, propagate) flags, seed 002 fig. 2 without the segment bit:
/// `carry(lo, hi)` describes the block `lo` followed by the more significant block `hi`.
/// It is associative with identity [`CARRY_IDENTITY`].
pub fn carry() -> Func {
    let mut b = Builder::lambda();
    let lo = b.param("lo", Type::U32);
    let hi = b.param("hi", Type::U32);
    let one = b.u32(1);
    let two = b.u32(2);
    let hi_p = b.binary(BinOp::Shr, hi, one).unwrap();
    let through = b.binary(BinOp::And, hi_p, lo).unwrap();
    let g = b.binary(BinOp::Or, hi, through).unwrap();
    let g = b.binary(BinOp::And, g, one).unwrap();
    let p = b.binary(BinOp::And, lo, hi).unwrap();
    let p = b.binary(BinOp::And, p, two).unwrap();
    let r = b.binary(BinOp::Or, g, p).unwrap();
    b.finish(&[r]).expect("the carry operator is well typed")
}

/// Bit 0 of a comparison word: less than. Bit 1: equal.
pub const CMP_LESS: u32 = 1;
pub const CMP_EQUAL: u32 = 2;

/// Lexicographic combination of per-limb comparisons: `lex(lo, hi)` is `hi` unless the more
/// significant part `hi` is equal, in which case `lo` decides. Associative, identity [`CMP_EQUAL`].
pub fn lex_compare() -> Func {
    let mut b = Builder::lambda();
    let lo = b.param("lo", Type::U32);
    let hi = b.param("hi", Type::U32);
    let two = b.u32(CMP_EQUAL);
    let zero = b.u32(0);
    let eq_bit = b.binary(BinOp::And, hi, two).unwrap();
    let hi_equal = b.binary(BinOp::Ne, eq_bit, zero).unwrap();
    let r = b.select(hi_equal, lo, hi).unwrap();
    b.finish(&[r])
        .expect("the comparison operator is well typed")
}

/// The identity literal of [`carry`].
pub fn carry_identity() -> Literal {
    Literal::U32(CARRY_IDENTITY)
}

/// The identity literal of [`lex_compare`].
pub fn lex_identity() -> Literal {
    Literal::U32(CMP_EQUAL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::apply_lambda;
    use crate::value::Value;

    fn apply(f: &Func, a: u32, b: u32) -> u32 {
        match apply_lambda(f, &[Value::U32(a), Value::U32(b)]).unwrap() {
            Value::U32(v) => v,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn carry_is_associative_with_identity_two() {
        let f = carry();
        for a in 0..3 {
            assert_eq!(apply(&f, CARRY_IDENTITY, a), a);
            assert_eq!(apply(&f, a, CARRY_IDENTITY), a);
            for b in 0..3 {
                for c in 0..3 {
                    assert_eq!(apply(&f, apply(&f, a, b), c), apply(&f, a, apply(&f, b, c)));
                }
            }
        }
        // A generating low block passes through a propagating high block.
        assert_eq!(apply(&f, CARRY_GENERATE, CARRY_PROPAGATE), CARRY_GENERATE);
        assert_eq!(apply(&f, CARRY_GENERATE, 0), 0);
    }

    #[test]
    fn lex_compare_is_associative() {
        let f = lex_compare();
        for a in 0..3 {
            assert_eq!(apply(&f, CMP_EQUAL, a), a);
            assert_eq!(apply(&f, a, CMP_EQUAL), a);
            for b in 0..3 {
                for c in 0..3 {
                    assert_eq!(apply(&f, apply(&f, a, b), c), apply(&f, a, apply(&f, b, c)));
                }
            }
        }
        assert_eq!(apply(&f, CMP_LESS, CMP_EQUAL), CMP_LESS);
        assert_eq!(apply(&f, CMP_LESS, 0), 0);
    }
}

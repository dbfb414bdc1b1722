//! Canonical operators: the intrinsics. Lowering builds them, each a lambda named after its
//! [`Intrinsic`]; instruction selection (codegen's isel) finds them by [`Intrinsic::of`], the one
//! place that tells an intrinsic from another lambda, and proves user-written operators equal to
//! them by evaluation. A user program that builds its scan from [`carry`] gets the same fast carry
//! resolution as the built-in `+`.

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
    Intrinsic::Carry.func().clone()
}

fn build_carry() -> Func {
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
    Intrinsic::LexCompare.func().clone()
}

fn build_lex_compare() -> Func {
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

/// `(x, y) -> (x ± y, generate | propagate << 1)` for one limb, carry-in 0: the first map of a
/// lowered addition (subtraction).
fn build_limb_partial(sub: bool) -> Func {
    let mut b = Builder::lambda();
    let x = b.param("x", Type::U64);
    let y = b.param("y", Type::U64);
    let (s, generate, propagate) = if sub {
        let d = b.sub(x, y).unwrap();
        let borrow = b.lt(x, y).unwrap();
        let equal = b.eq(x, y).unwrap();
        (d, borrow, equal)
    } else {
        let s = b.add(x, y).unwrap();
        let carry = b.lt(s, x).unwrap();
        let ones = b.u64(u64::MAX);
        let all_ones = b.eq(s, ones).unwrap();
        (s, carry, all_ones)
    };
    let g = b.cast(generate, Type::U32).unwrap();
    let p = b.cast(propagate, Type::U32).unwrap();
    let one = b.u32(1);
    let p = b.binary(BinOp::Shl, p, one).unwrap();
    let flags = b.binary(BinOp::Or, g, p).unwrap();
    let t = b.tuple(&[s, flags]).unwrap();
    b.finish(&[t]).unwrap()
}

/// `(s, flags) -> flags`: the flag words of a lowered addition's partial sums.
fn build_carry_flags() -> Func {
    let mut b = Builder::lambda();
    let t = b.param("t", Type::Tuple(vec![Type::U64, Type::U32]));
    let r = b.extract(t, 1).unwrap();
    b.finish(&[r]).unwrap()
}

/// `((s, _), c) -> s ± (c & 1)`: the carry (borrow) into this limb.
fn build_apply_carry(sub: bool) -> Func {
    let mut b = Builder::lambda();
    let t = b.param("t", Type::Tuple(vec![Type::U64, Type::U32]));
    let c = b.param("c", Type::U32);
    let s = b.extract(t, 0).unwrap();
    let one = b.u32(1);
    let cin = b.binary(BinOp::And, c, one).unwrap();
    let cin = b.cast(cin, Type::U64).unwrap();
    let r = if sub {
        b.sub(s, cin).unwrap()
    } else {
        b.add(s, cin).unwrap()
    };
    b.finish(&[r]).unwrap()
}

/// 192-bit addition on little-endian (u64, u64, u64): exact for any sum of fewer than 2^64 terms
/// below 2^128 (the delayed reduction of modular dot products).
fn build_add192() -> Func {
    let w = Type::Tuple(vec![Type::U64; 3]);
    let mut b = Builder::lambda();
    let x = b.param("a", w.clone());
    let y = b.param("b", w);
    let mut words = Vec::new();
    let mut carry: Option<crate::ir::ValueId> = None;
    for k in 0..3 {
        let a = b.extract(x, k).expect("well typed");
        let c = b.extract(y, k).expect("well typed");
        let s = b.add(a, c).expect("well typed");
        let (s, out) = match carry {
            None => {
                let o = b.lt(s, a).expect("well typed");
                (s, o)
            }
            Some(cin) => {
                let o1 = b.lt(s, a).expect("well typed");
                let cin64 = b.cast(cin, Type::U64).expect("well typed");
                let s2 = b.add(s, cin64).expect("well typed");
                let o2 = b.lt(s2, s).expect("well typed");
                let o = b.or(o1, o2).expect("well typed");
                (s2, o)
            }
        };
        words.push(s);
        carry = Some(out);
    }
    let t = b.tuple(&words).expect("well typed");
    b.finish(&[t]).expect("well typed")
}

/// The operators the compiler builds and selects special code for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    /// [`carry`]: the scan operator of additions.
    Carry,
    /// [`lex_compare`]: the reduction operator of comparisons.
    LexCompare,
    /// The first map of a lowered addition (`sub`: subtraction): limb sums and flag words.
    LimbPartial { sub: bool },
    /// The flag words of the partial sums (the scan's input).
    CarryFlags,
    /// The last map of a lowered addition: the carry (borrow) into each limb.
    ApplyCarry { sub: bool },
    /// 192-bit addition of (u64, u64, u64) words: delayed reductions of modular dot products.
    Add192,
}

impl Intrinsic {
    pub const ALL: [Intrinsic; 8] = [
        Intrinsic::Carry,
        Intrinsic::LexCompare,
        Intrinsic::LimbPartial { sub: false },
        Intrinsic::LimbPartial { sub: true },
        Intrinsic::CarryFlags,
        Intrinsic::ApplyCarry { sub: false },
        Intrinsic::ApplyCarry { sub: true },
        Intrinsic::Add192,
    ];

    /// Its name: the name of its lambda, and how the printed IR refers to it.
    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Carry => "carry",
            Intrinsic::LexCompare => "lex_compare",
            Intrinsic::LimbPartial { sub: false } => "add.partial",
            Intrinsic::LimbPartial { sub: true } => "sub.partial",
            Intrinsic::CarryFlags => "carry.flags",
            Intrinsic::ApplyCarry { sub: false } => "add.apply",
            Intrinsic::ApplyCarry { sub: true } => "sub.apply",
            Intrinsic::Add192 => "add192",
        }
    }

    fn index(self) -> usize {
        Intrinsic::ALL
            .iter()
            .position(|i| *i == self)
            .expect("ALL lists every intrinsic")
    }

    /// Its lambda (built once), named [`Intrinsic::name`].
    pub fn func(self) -> &'static Func {
        static FUNCS: std::sync::OnceLock<Vec<Func>> = std::sync::OnceLock::new();
        &FUNCS.get_or_init(|| {
            Intrinsic::ALL
                .iter()
                .map(|i| {
                    let mut f = match i {
                        Intrinsic::Carry => build_carry(),
                        Intrinsic::LexCompare => build_lex_compare(),
                        Intrinsic::LimbPartial { sub } => build_limb_partial(*sub),
                        Intrinsic::CarryFlags => build_carry_flags(),
                        Intrinsic::ApplyCarry { sub } => build_apply_carry(*sub),
                        Intrinsic::Add192 => build_add192(),
                    };
                    f.name = i.name().to_string();
                    f
                })
                .collect()
        })[self.index()]
    }

    /// The intrinsic of this name.
    pub fn by_name(name: &str) -> Option<Intrinsic> {
        Intrinsic::ALL.into_iter().find(|i| i.name() == name)
    }

    /// The intrinsic `f` is: its name says which, and its body must be the intrinsic's (a lambda
    /// that only borrows the name is not one).
    pub fn of(f: &Func) -> Option<Intrinsic> {
        Intrinsic::by_name(&f.name).filter(|i| i.func() == f)
    }
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
    fn intrinsics_are_known_by_name_and_body() {
        for i in Intrinsic::ALL {
            assert_eq!(Intrinsic::of(i.func()), Some(i));
            assert_eq!(Intrinsic::by_name(i.name()), Some(i));
            // The same body under a user lambda's name is not the intrinsic (isel proves those).
            let mut renamed = i.func().clone();
            renamed.name = "op".into();
            assert_eq!(Intrinsic::of(&renamed), None);
        }
        // A lambda that borrows a name is not the intrinsic either.
        let mut impostor = lex_compare();
        impostor.name = "carry".into();
        assert_eq!(Intrinsic::of(&impostor), None);
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

//! The IR: a function is an arena of SSA nodes addressed by [`ValueId`]s, in definition order.
//!
//! One IR serves two levels. High-level programs use the big-integer nodes (`BigAdd`, `BigSub`,
//! `BigCmp`, `Select` on big values); lowering rewrites those into array primitives (`Map`, `Scan`,
//! `Reduce`, `Zip`) over limb arrays, with `Limbs` / `FromLimbs` at the boundary, so that fusion,
//! scheduling and placement only reason about arrays. Operators of `Map`, `Scan` and `Reduce` are
//! lambdas: nested [`Func`]s over scalars and tuples of scalars.

use crate::types::{Size, Type};

/// A handle to a node of one [`Func`]. Handles of a lambda refer to the lambda's own nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

impl ValueId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for ValueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// A constant scalar or tuple of scalars (initial values of scans and reductions, lambda constants).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Literal {
    Bool(bool),
    U32(u32),
    U64(u64),
    /// A residue (below the modulus once specialized) of `Zp<modulus>`.
    Zp(u64, Size),
    /// A big integer of the given width, as little-endian 64-bit limbs (possibly fewer than the
    /// width holds; the rest are zero).
    Big(Vec<u64>, Size),
    Tuple(Vec<Literal>),
}

impl Literal {
    pub fn ty(&self) -> Type {
        match self {
            Literal::Bool(_) => Type::Bool,
            Literal::U32(_) => Type::U32,
            Literal::U64(_) => Type::U64,
            Literal::Zp(_, m) => Type::Zp(*m),
            Literal::Big(_, bits) => Type::Big(*bits),
            Literal::Tuple(ls) => Type::Tuple(ls.iter().map(Literal::ty).collect()),
        }
    }

    /// The scalars of a (nested) tuple, left to right.
    pub fn leaves(&self) -> Vec<Literal> {
        match self {
            Literal::Tuple(ls) => ls.iter().flat_map(Literal::leaves).collect(),
            other => vec![other.clone()],
        }
    }
}

impl std::fmt::Display for Literal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::U32(v) => write!(f, "{v}u32"),
            Literal::U64(v) => write!(f, "{v}u64"),
            Literal::Zp(v, m) => write!(f, "{v}zp{}", m.display(&[])),
            Literal::Big(limbs, bits) => write!(
                f,
                "0x{:x}u{}",
                crate::eval::limbs_to_big(limbs),
                bits.display(&[])
            ),
            Literal::Tuple(ls) => {
                write!(f, "(")?;
                for (i, l) in ls.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{l}")?;
                }
                write!(f, ")")
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Logical not on bool, bitwise not on integers.
    Not,
    /// The number of zero bits above the highest set bit, as u32 (the width for 0).
    LeadingZeros,
    /// The number of zero bits below the lowest set bit, as u32 (the width for 0).
    TrailingZeros,
    /// The number of set bits, as u32.
    CountOnes,
}

impl UnOp {
    /// Every unary operation: what the text form reads back and what tests cover.
    pub const ALL: [UnOp; 4] = [
        UnOp::Not,
        UnOp::LeadingZeros,
        UnOp::TrailingZeros,
        UnOp::CountOnes,
    ];

    pub fn mnemonic(self) -> &'static str {
        match self {
            UnOp::Not => "not",
            UnOp::LeadingZeros => "clz",
            UnOp::TrailingZeros => "ctz",
            UnOp::CountOnes => "popc",
        }
    }

    /// True for the bit counts, whose result is a u32 whatever the operand's width.
    pub fn is_count(self) -> bool {
        !matches!(self, UnOp::Not)
    }
}

/// How a big integer's bits move by a run-time amount (a u32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShiftOp {
    /// Towards the high end, modulo 2^bits: amounts of `bits` or more give 0.
    Shl,
    /// Towards the low end: amounts of `bits` or more give 0.
    Shr,
    /// Rotation towards the high end by the amount modulo `bits`.
    Rotl,
    /// Rotation towards the low end by the amount modulo `bits`.
    Rotr,
}

impl ShiftOp {
    pub const ALL: [ShiftOp; 4] = [ShiftOp::Shl, ShiftOp::Shr, ShiftOp::Rotl, ShiftOp::Rotr];

    pub fn mnemonic(self) -> &'static str {
        match self {
            ShiftOp::Shl => "shl",
            ShiftOp::Shr => "shr",
            ShiftOp::Rotl => "rotl",
            ShiftOp::Rotr => "rotr",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// Wrapping addition.
    Add,
    /// Wrapping subtraction.
    Sub,
    /// Low word of the product.
    Mul,
    /// High word of the product.
    MulHi,
    /// Quotient, rounded down; `x / 0` is all ones (the width's maximum), never a trap.
    Div,
    /// Remainder; `x % 0` is `x`, so that `(x / y) * y + x % y == x` still holds modulo 2^width.
    Rem,
    And,
    Or,
    Xor,
    /// Shift left; the amount is taken modulo the bit width, as in PTX `shl` with a masked amount.
    Shl,
    /// Logical shift right; amount modulo the bit width.
    Shr,
    Lt,
    Le,
    Eq,
    Ne,
}

impl BinOp {
    /// Every binary operation: what the text form reads back and what tests cover.
    pub const ALL: [BinOp; 15] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::MulHi,
        BinOp::Div,
        BinOp::Rem,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Eq,
        BinOp::Ne,
    ];

    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Lt | BinOp::Le | BinOp::Eq | BinOp::Ne)
    }

    pub fn mnemonic(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::MulHi => "mulhi",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Eq => "eq",
            BinOp::Ne => "ne",
        }
    }
}

/// How a `LimbMul` is computed; the result is the same either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MulAlgo {
    /// Schoolbook products in registers, operands staged in shared memory.
    Classical,
    /// Number-theoretic transforms in three primes and CRT.
    Ntt,
}

/// Comparisons of big integers. `>` and `>=` are built by swapping operands; `!=` as `!(==)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Eq,
}

impl CmpOp {
    pub fn mnemonic(self) -> &'static str {
        match self {
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Eq => "eq",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// The function's parameter with this index.
    Param(u32),
    Const(Literal),
    Unary(UnOp, ValueId),
    Binary(BinOp, ValueId, ValueId),
    /// Integer/bool conversion: bool -> 0/1, zero-extension, truncation; between big integers of
    /// any widths and from a big integer to u32/u64, the value modulo the target's 2^width.
    Cast(ValueId),
    /// `cond ? a : b` for values of any one type; `cond` is a bool.
    Select(ValueId, ValueId, ValueId),
    Tuple(Vec<ValueId>),
    Extract(ValueId, u32),

    /// `x^e` in `Zp<P>`, with `e` a u64.
    ZpPow(ValueId, ValueId),
    /// The inverse in `Zp<P>` (0 maps to 0).
    ZpInv(ValueId),
    /// The product of two polynomials over `Zp<modulus>` given by their N coefficients (lowest
    /// first): 2N coefficients, the last always 0. After lowering the arrays hold Montgomery forms
    /// (u64) and so does the result. Code generation computes it with number-theoretic transforms.
    PolyMul {
        a: ValueId,
        b: ValueId,
        modulus: Size,
    },

    /// Big-integer addition modulo 2^bits.
    BigAdd(ValueId, ValueId),
    /// Big-integer subtraction modulo 2^bits.
    BigSub(ValueId, ValueId),
    BigCmp(CmpOp, ValueId, ValueId),
    /// Big-integer product modulo 2^bits (the low half, as in the reference paper).
    BigMul(ValueId, ValueId),
    /// The full product of two `U<n>`, a `U<2n>`.
    BigMulWide(ValueId, ValueId),
    /// The quotient `a / b`, rounded down, of a `U<n>` by a `U<m>` (any widths): a `U<n>`.
    /// Division by zero gives `2^n - 1` (all ones), never a trap.
    BigDiv(ValueId, ValueId),
    /// The remainder `a % b` of a `U<n>` by a `U<m>`: a `U<m>`. `a % 0` is `a` modulo `2^m` (so
    /// `(a / b) * b + a % b == a` still holds when `m >= n`).
    BigRem(ValueId, ValueId),
    /// The square root of a `U<n>`, rounded down: a `U<n>`.
    BigIsqrt(ValueId),
    /// [`Op::BigIsqrt`] computed whole by one thread (a device function of the width), made by
    /// codegen's `divide` pass like [`Op::BigDivRem`].
    BigIsqrtWhole(ValueId),
    /// [`Op::BigIsqrtWhole`] on a tuple of u64 limbs: the root's limbs, as many (made by
    /// `scalarize`).
    LimbIsqrt(ValueId),
    /// `(a / b, a % b)` of a `U<n>` by a `U<m>`: a tuple `(U<n>, U<m>)`, division by zero as
    /// [`Op::BigDiv`] and [`Op::BigRem`] define it. Made by codegen's `divide` pass where one
    /// thread computes the division whole (a device function of the two widths).
    BigDivRem(ValueId, ValueId),
    /// [`Op::BigDivRem`] on tuples of u64 limbs: a tuple of the quotient's limbs and the
    /// remainder's limbs (made by `scalarize`, like [`Op::LimbPowMod`]).
    LimbDivRem(ValueId, ValueId),
    /// `base^exp mod m` of a base `U<n>`, an exponent `U<k>` (any width) and a modulus `U<n>`:
    /// a `U<n>` below `m`. The modulus must be odd (Montgomery arithmetic); an even or zero
    /// modulus gives `2^n - 1` (all ones), which no residue equals, as a flag per instance (the
    /// runtime refuses such a modulus among a call's host arguments: [`Func::modulus_params`]).
    /// A base at or above `m` is reduced; `x^0` is `1 mod m`.
    BigPowMod(ValueId, ValueId, ValueId),
    /// Arithmetic modulo a `U<n>` `m` of two `U<n>`: `(a + b) mod m`, `(a - b) mod m` (a
    /// residue in `0..m`) or `(a b) mod m` (the [`BinOp`] is `Add`, `Sub` or `Mul`), computed from
    /// the whole integers (no wrapping), a `U<n>` below `m`. Like [`Op::BigPowMod`] the modulus
    /// must be odd; an even or zero modulus gives `2^n - 1` (all ones). Codegen's `residues` pass
    /// computes chains of them in Montgomery form ([`Op::BigMontMul`]).
    BigMod(BinOp, ValueId, ValueId, ValueId),
    /// The Montgomery product of `U<w>` values (`w` a multiple of 64) modulo an odd `m`, as CIOS
    /// computes it: `t = (a b + q m) / 2^w` with `q = -a b m^-1 mod 2^w`, less `m` once where
    /// `t >= m` (modulo `2^w`). That is `a b 2^-w mod m`, below `m`, whenever `a b < m 2^w` (which
    /// codegen's `residues` pass, its only maker, ensures: `b < m`). All ones for an even or zero
    /// `m`. One thread computes it whole.
    BigMontMul(ValueId, ValueId, ValueId),
    /// [`Op::BigMontMul`] on tuples of u64 limbs, all three of one length (made by `scalarize`).
    LimbMontMul(ValueId, ValueId, ValueId),
    /// `gcd(a, b)` of two `U<n>` (`gcd(0, b) = b`, `gcd(0, 0) = 0`): a `U<n>`.
    BigGcd(ValueId, ValueId),
    /// The inverse of a `U<n>` modulo a `U<n>` `m` and whether it exists: `(a^-1 mod m, true)`,
    /// or `(0, false)` when `gcd(a, m) > 1` or `m = 0` (every value's inverse modulo 1 is 0).
    BigInvMod(ValueId, ValueId),
    /// [`Op::BigGcd`] on tuples of u64 limbs (made by `scalarize`, like [`Op::LimbPowMod`]).
    LimbGcd(ValueId, ValueId),
    /// [`Op::BigInvMod`] on tuples of u64 limbs: a tuple of the inverse's limbs and the bool.
    LimbInvMod(ValueId, ValueId),
    /// [`Op::BigPowMod`] once its operands are limbs: base, exponent and modulus are tuples of
    /// little-endian u64 limbs (base and modulus of one length), and so is the result. `scalarize`
    /// makes it from a `big.pow_mod` that one thread computes; emission writes it as one device
    /// function (codegen's `montgomery` plans it).
    LimbPowMod(ValueId, ValueId, ValueId),
    /// The product of two tuples of u64 limbs (any lengths) as `n` limbs: `(a b) mod 2^(64 n)`,
    /// a tuple of `n` u64. `scalarize` makes it from a product one thread computes; emission
    /// writes it as one device function of carry chains (codegen's `emit/mul_words.rs`).
    LimbMulWords(ValueId, ValueId, usize),
    /// `(a b + c) mod 2^(64 n)` on tuples of u64 limbs, `c` of `n` limbs: a
    /// [`Op::LimbMulWords`] whose accumulator starts at the addend. `scalarize` makes it from
    /// `big.add` of a product one thread computes and another value, where the sum is the
    /// product's only use: no addition follows the product, and no register holds the product
    /// and the addend at once.
    LimbMulAddWords(ValueId, ValueId, ValueId, usize),

    /// `!a` on a big integer, or one of its bit counts (a u32; `bits` for 0).
    BigUnary(UnOp, ValueId),
    /// `&`, `|` or `^` of two big integers of one width.
    BigBitwise(BinOp, ValueId, ValueId),
    /// A shift or rotation of a big integer by a u32 amount (see [`ShiftOp`]).
    BigShift(ShiftOp, ValueId, ValueId),
    /// Bit `i` (a u32) of a big integer: false for `i >= bits`.
    BigBit(ValueId, ValueId),

    /// The little-endian 64-bit limbs of a big integer.
    Limbs(ValueId),
    /// The big integer whose little-endian 64-bit limbs these are.
    FromLimbs(ValueId),
    /// `[0, 1, .., len-1]` as u64.
    Iota(Size),
    /// `src[idx[k]]` for each k, 0 where `idx[k]` is past the end: `src` is `[u64; n]`, `idx`
    /// `[u64; m]`, the result `[u64; m]`. Elements move between threads, so `src` is staged in
    /// shared memory.
    Gather {
        src: ValueId,
        idx: ValueId,
    },
    /// The product of two limb arrays of one length, as `out_len` limbs (modulo 2^(64*out_len)).
    /// Every output limb reads every input limb, so its operands are staged in shared memory.
    LimbMul {
        a: ValueId,
        b: ValueId,
        out_len: Size,
        algo: MulAlgo,
    },
    /// Element-wise application; arguments are arrays of one length or scalars (broadcast).
    Map {
        f: Box<Func>,
        args: Vec<ValueId>,
    },
    /// Arrays of one length, zipped into an array of tuples.
    Zip(Vec<ValueId>),
    /// Scan with an associative operator and its identity `init`. With `flags` (an array of bool),
    /// a segmented scan: a set flag starts a new segment at that element.
    Scan {
        op: Box<Func>,
        init: Literal,
        exclusive: bool,
        input: ValueId,
        flags: Option<ValueId>,
    },
    /// Reduction, in index order, with an associative operator and its identity.
    Reduce {
        op: Box<Func>,
        init: Literal,
        input: ValueId,
    },
    /// `count` rounds of `body`, a program over `(i: u32, carried.., captured..)` that returns the
    /// next round's carried values; `args` holds the carried values' starting values, then the
    /// captured ones. The result is what is carried out of the last round: the value itself when
    /// one is carried, a tuple of them when several are. Code generation sees no loop:
    /// [`crate::unroll()`] unrolls them once sizes are known.
    Loop {
        count: Size,
        body: Box<Func>,
        args: Vec<ValueId>,
    },
}

impl Op {
    /// The values this operation reads, in order.
    pub fn args(&self) -> Vec<ValueId> {
        match self {
            Op::Param(_) | Op::Const(_) | Op::Iota(_) => vec![],
            Op::Unary(_, a)
            | Op::Cast(a)
            | Op::Extract(a, _)
            | Op::Limbs(a)
            | Op::FromLimbs(a)
            | Op::BigUnary(_, a)
            | Op::BigIsqrt(a)
            | Op::BigIsqrtWhole(a)
            | Op::LimbIsqrt(a)
            | Op::ZpInv(a) => {
                vec![*a]
            }
            Op::Binary(_, a, b)
            | Op::ZpPow(a, b)
            | Op::BigAdd(a, b)
            | Op::BigSub(a, b)
            | Op::BigCmp(_, a, b)
            | Op::BigMul(a, b)
            | Op::BigMulWide(a, b)
            | Op::BigDiv(a, b)
            | Op::BigRem(a, b)
            | Op::BigBitwise(_, a, b)
            | Op::BigShift(_, a, b)
            | Op::BigBit(a, b)
            | Op::BigGcd(a, b)
            | Op::BigInvMod(a, b)
            | Op::LimbGcd(a, b)
            | Op::LimbMulWords(a, b, _)
            | Op::LimbInvMod(a, b)
            | Op::BigDivRem(a, b)
            | Op::LimbDivRem(a, b)
            | Op::Gather { src: a, idx: b }
            | Op::PolyMul { a, b, .. }
            | Op::LimbMul { a, b, .. } => vec![*a, *b],
            Op::Select(c, a, b)
            | Op::BigPowMod(c, a, b)
            | Op::LimbPowMod(c, a, b)
            | Op::BigMod(_, c, a, b)
            | Op::BigMontMul(c, a, b)
            | Op::LimbMontMul(c, a, b) => {
                vec![*c, *a, *b]
            }
            Op::LimbMulAddWords(a, b, c, _) => vec![*a, *b, *c],
            Op::Tuple(xs) | Op::Zip(xs) => xs.clone(),
            Op::Map { args, .. } | Op::Loop { args, .. } => args.clone(),
            Op::Scan { input, flags, .. } => {
                let mut v = vec![*input];
                v.extend(flags.iter().copied());
                v
            }
            Op::Reduce { input, .. } => vec![*input],
        }
    }

    /// Rewrites every value this operation reads.
    pub fn map_args(&mut self, mut f: impl FnMut(ValueId) -> ValueId) {
        match self {
            Op::Param(_) | Op::Const(_) | Op::Iota(_) => {}
            Op::Unary(_, a)
            | Op::Cast(a)
            | Op::Extract(a, _)
            | Op::Limbs(a)
            | Op::FromLimbs(a)
            | Op::BigUnary(_, a)
            | Op::BigIsqrt(a)
            | Op::BigIsqrtWhole(a)
            | Op::LimbIsqrt(a)
            | Op::ZpInv(a) => *a = f(*a),
            Op::Binary(_, a, b)
            | Op::ZpPow(a, b)
            | Op::BigAdd(a, b)
            | Op::BigSub(a, b)
            | Op::BigCmp(_, a, b)
            | Op::BigMul(a, b)
            | Op::BigMulWide(a, b)
            | Op::BigDiv(a, b)
            | Op::BigRem(a, b)
            | Op::BigBitwise(_, a, b)
            | Op::BigShift(_, a, b)
            | Op::BigBit(a, b)
            | Op::BigGcd(a, b)
            | Op::BigInvMod(a, b)
            | Op::LimbGcd(a, b)
            | Op::LimbMulWords(a, b, _)
            | Op::LimbInvMod(a, b)
            | Op::BigDivRem(a, b)
            | Op::LimbDivRem(a, b)
            | Op::Gather { src: a, idx: b }
            | Op::PolyMul { a, b, .. }
            | Op::LimbMul { a, b, .. } => {
                *a = f(*a);
                *b = f(*b);
            }
            Op::Select(c, a, b)
            | Op::BigPowMod(c, a, b)
            | Op::LimbPowMod(c, a, b)
            | Op::BigMod(_, c, a, b)
            | Op::BigMontMul(c, a, b)
            | Op::LimbMontMul(c, a, b) => {
                *c = f(*c);
                *a = f(*a);
                *b = f(*b);
            }
            Op::LimbMulAddWords(a, b, c, _) => {
                *a = f(*a);
                *b = f(*b);
                *c = f(*c);
            }
            Op::Tuple(xs) | Op::Zip(xs) => xs.iter_mut().for_each(|x| *x = f(*x)),
            Op::Map { args, .. } | Op::Loop { args, .. } => {
                args.iter_mut().for_each(|x| *x = f(*x))
            }
            Op::Scan { input, flags, .. } => {
                *input = f(*input);
                if let Some(fl) = flags {
                    *fl = f(*fl);
                }
            }
            Op::Reduce { input, .. } => *input = f(*input),
        }
    }

    /// True for the big-integer operations that lowering removes. Loops are not among them: a
    /// loop of a one-thread program stays a loop down to the CUDA (its body is lowered).
    pub fn is_high_level(&self) -> bool {
        matches!(
            self,
            Op::BigAdd(..)
                | Op::BigSub(..)
                | Op::BigCmp(..)
                | Op::BigMul(..)
                | Op::BigMulWide(..)
                | Op::BigDiv(..)
                | Op::BigRem(..)
                | Op::BigIsqrt(..)
                | Op::BigIsqrtWhole(..)
                | Op::BigDivRem(..)
                | Op::BigPowMod(..)
                | Op::BigMod(..)
                | Op::BigMontMul(..)
                | Op::BigGcd(..)
                | Op::BigInvMod(..)
                | Op::BigUnary(..)
                | Op::BigBitwise(..)
                | Op::BigShift(..)
                | Op::BigBit(..)
                | Op::ZpPow(..)
                | Op::ZpInv(..)
        )
    }

    /// True for the operations a lambda (an operator over array elements) may compute: on scalars,
    /// tuples and big integers, nothing over arrays, and loops (whose bodies `validate` holds to
    /// the same rule). `validate` holds lambdas to it, and codegen's `per_thread` turns a program
    /// made only of them into one map.
    pub fn is_element_op(&self) -> bool {
        matches!(
            self,
            Op::Param(_)
                | Op::Const(_)
                | Op::Unary(..)
                | Op::Binary(..)
                | Op::Cast(_)
                | Op::Select(..)
                | Op::Tuple(_)
                | Op::Extract(..)
                | Op::BigAdd(..)
                | Op::BigSub(..)
                | Op::BigMul(..)
                | Op::BigMulWide(..)
                | Op::BigDiv(..)
                | Op::BigRem(..)
                | Op::BigIsqrt(..)
                | Op::BigPowMod(..)
                | Op::LimbPowMod(..)
                | Op::BigMod(..)
                | Op::BigMontMul(..)
                | Op::LimbMontMul(..)
                | Op::BigGcd(..)
                | Op::BigInvMod(..)
                | Op::LimbGcd(..)
                | Op::LimbInvMod(..)
                | Op::LimbMulWords(..)
                | Op::LimbMulAddWords(..)
                | Op::BigDivRem(..)
                | Op::LimbDivRem(..)
                | Op::BigIsqrtWhole(..)
                | Op::LimbIsqrt(..)
                | Op::BigCmp(..)
                | Op::BigUnary(..)
                | Op::BigBitwise(..)
                | Op::BigShift(..)
                | Op::BigBit(..)
                | Op::Loop { .. }
        )
    }

    /// True for the operations one thread computes whole, through a device function of their
    /// width (a power modulo a big integer, a gcd, an inverse, a division that `divide` left
    /// whole): a program holding one runs one thread (or a group of threads) per instance, and a
    /// closure may compute one per element.
    pub fn is_one_thread_op(&self) -> bool {
        matches!(
            self,
            Op::BigPowMod(..)
                | Op::BigMod(..)
                | Op::BigMontMul(..)
                | Op::LimbMontMul(..)
                | Op::BigGcd(..)
                | Op::BigInvMod(..)
                | Op::BigDivRem(..)
                | Op::LimbPowMod(..)
                | Op::LimbGcd(..)
                | Op::LimbInvMod(..)
                | Op::LimbDivRem(..)
                | Op::BigIsqrtWhole(..)
                | Op::LimbIsqrt(..)
        )
    }

    /// True for operations that carry a lambda.
    pub fn lambdas(&self) -> Vec<&Func> {
        match self {
            Op::Map { f, .. } => vec![f],
            Op::Scan { op, .. } | Op::Reduce { op, .. } => vec![op],
            _ => vec![],
        }
    }

    /// The programs this operation carries, to rewrite in place: its lambda (a map's, a scan's
    /// or a reduce's operator) or its loop body.
    pub fn bodies_mut(&mut self) -> Vec<&mut Func> {
        match self {
            Op::Map { f: body, .. }
            | Op::Scan { op: body, .. }
            | Op::Reduce { op: body, .. }
            | Op::Loop { body, .. } => vec![&mut **body],
            _ => vec![],
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    pub op: Op,
    pub ty: Type,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    pub name: String,
    pub ty: Type,
}

/// A function: a kernel program (over one instance) or a lambda (over scalars).
///
/// Nodes are in definition order: every argument of a node refers to an earlier node. `Param(i)`
/// nodes introduce the parameters; `outputs` are the returned values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Func {
    pub name: String,
    /// Names of the size parameters (`BITS`), indexed by `Size::param`.
    pub size_params: Vec<String>,
    pub params: Vec<Param>,
    pub nodes: Vec<Node>,
    pub outputs: Vec<ValueId>,
}

impl Func {
    pub fn node(&self, id: ValueId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn ty(&self, id: ValueId) -> &Type {
        &self.nodes[id.index()].ty
    }

    pub fn ids(&self) -> impl Iterator<Item = ValueId> {
        (0..self.nodes.len() as u32).map(ValueId)
    }

    /// The types of the outputs, in order.
    pub fn output_types(&self) -> Vec<Type> {
        self.outputs.iter().map(|o| self.ty(*o).clone()).collect()
    }

    /// True when no size is symbolic any more.
    pub fn is_concrete(&self) -> bool {
        self.params.iter().all(|p| p.ty.is_concrete()) && self.nodes.iter().all(node_is_concrete)
    }

    /// True when some operation of `self`, of its lambdas or of its loops' bodies satisfies `pred`.
    /// The parameters the program uses directly as the modulus of Montgomery arithmetic
    /// (`big.pow_mod`, `big.add_mod`, `big.sub_mod`, `big.mul_mod` among its own steps), each once
    /// with the operation's name: the runtime requires them odd in the arguments it is given.
    pub fn modulus_params(&self) -> Vec<(usize, String)> {
        let mut out: Vec<(usize, String)> = Vec::new();
        for n in &self.nodes {
            let (m, op) = match &n.op {
                Op::BigPowMod(_, _, m) => (*m, "pow_mod".to_string()),
                Op::BigMod(o, _, _, m) => (*m, format!("{}_mod", o.mnemonic())),
                _ => continue,
            };
            if let Op::Param(k) = self.node(m).op {
                if !out.iter().any(|(p, _)| *p == k as usize) {
                    out.push((k as usize, op));
                }
            }
        }
        out
    }

    pub fn any_op(&self, pred: &dyn Fn(&Op) -> bool) -> bool {
        self.nodes.iter().any(|n| {
            pred(&n.op)
                || n.op.lambdas().iter().any(|l| l.any_op(pred))
                || matches!(&n.op, Op::Loop { body, .. } if body.any_op(pred))
        })
    }

    /// True when no high-level big-integer operation is left (lambdas included).
    pub fn is_lowered(&self) -> bool {
        self.nodes.iter().all(|n| {
            !n.op.is_high_level()
                && !n.ty.mentions_zp()
                && !self.is_big_select_or_cast(n)
                && n.op.lambdas().iter().all(|l| l.is_lowered())
                && match &n.op {
                    Op::Loop { body, .. } => body.is_lowered(),
                    _ => true,
                }
        })
    }

    /// A select between big integers, or a cast from or to one: lowering removes them all.
    fn is_big_select_or_cast(&self, n: &Node) -> bool {
        let big = |t: &Type| matches!(t, Type::Big(_));
        match n.op {
            Op::Select(_, a, _) => big(self.ty(a)),
            Op::Cast(a) => big(self.ty(a)) || big(&n.ty),
            _ => false,
        }
    }

    /// Number of uses of each node (outputs count as uses).
    pub fn use_counts(&self) -> Vec<u32> {
        let mut uses = vec![0u32; self.nodes.len()];
        for n in &self.nodes {
            for a in n.op.args() {
                uses[a.index()] += 1;
            }
        }
        for o in &self.outputs {
            uses[o.index()] += 1;
        }
        uses
    }
}

fn node_is_concrete(n: &Node) -> bool {
    n.ty.is_concrete()
        && match &n.op {
            Op::Iota(s) | Op::LimbMul { out_len: s, .. } | Op::PolyMul { modulus: s, .. } => {
                s.param.is_none()
            }
            Op::Loop { count, body, .. } => count.param.is_none() && body.is_concrete(),
            other => other.lambdas().iter().all(|l| l.is_concrete()),
        }
}

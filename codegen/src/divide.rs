//! Division of big integers: `big.div`, `big.rem` and `big.isqrt`, computed one of two ways.
//!
//! **One thread, whole** ([`big.div_rem`](Op::BigDivRem), written by `emit/divide.rs`): Knuth's
//! Algorithm D in one device function per pair of widths, on 32-bit words with the divisor and a
//! window of the dividend in registers (on 64-bit limbs in local memory for divisors wider than
//! [`MAX_REGISTER_DIVISOR_BITS`]), one quotient word (limb) per row of a loop. It needs a program
//! that runs one thread per instance (`per_thread`), or a closure over array elements, and
//! the widths [`divides_whole`] accepts (every width where the dividend is no wider than the
//! divisor, a quotient of one word); then it is the choice: a row costs
//! about four instructions per divisor word, where the parallel lowering below runs some 300
//! big-integer operations per division with a barrier each (measured: bench/RESULTS.md,
//! 2026-11-25).
//!
//! **Products, shifts and selects** that the later passes already compile, in a kernel's parallel
//! lowering and in `scalarize`'s per-thread limbs alike, for everything else (wider divisors, or
//! programs that keep several threads per instance). The method is the one GMP and MCA (Brent &
//! Zimmermann, *Modern Computer Arithmetic*, §3.4) describe for large operands, made of the
//! products this compiler is good at and with no data-dependent control flow:
//!
//! 1. normalize the divisor `b` (width `m`) to `d = b << s` with its top bit set, `s = clz(b)`;
//! 2. its reciprocal `v = floor((2^2m - 1) / d) - 2^m` within one unit (never above), by Newton's
//!    iteration with doubling precision: MCA's Algorithm 3.5 in 32-bit words, its base case of 64
//!    bits the exact 128-by-64-bit reciprocal of Hacker's Delight's `divlu` in u64 arithmetic;
//! 3. the dividend shifted by `s`, cut into `m`-bit digits and divided digit by digit from the top
//!    (one digit for `n <= m`), each step a 2-by-1 division: the quotient estimate
//!    `u1 + high(u1 * v)` is at most 4 below the true digit (proof at `two_by_one`), so
//!    four conditional subtractions of `d` make it exact;
//! 4. the remainder shifted back by `s`.
//!
//! `big.isqrt` is Zimmermann's Karatsuba square root (MCA Algorithm 1.12) over these divisions:
//! per level the root of the top half, one division by twice it, one square, one correction. Its
//! divisions are computed whole by one thread where the rule above allows, like any other. In a
//! program of one thread per instance, roots of values from [`ROOT_FUNCTION_FROM_BITS`] are one
//! device function instead ([`Op::BigIsqrtWhole`], `emit/isqrt.rs`: the same method in loops).
//!
//! A divisor's reciprocal is computed once however many divisions use it, and `a / b` and `a % b`
//! of the same operands share one division. Division by zero is defined, per instance (see
//! [`Op::BigDiv`]): the quotient is all ones and the remainder the dividend modulo `2^m`.

use crate::error::{CgResult, CodegenError};
use bigfuse_core::rewrite::{same_output, Rewritten};
use bigfuse_core::{
    rewrite, BinOp, Builder, Func, Literal, Op, ShiftOp, Size, Type, UnOp, ValueId,
};
use std::collections::HashMap;

/// Corrections after a 2-by-1 quotient estimate (see [`two_by_one`]).
const DIGIT_CORRECTIONS: usize = 4;
/// Corrections of a Newton step's product (MCA Algorithm 3.5, step 6): `a X_h` exceeds
/// `2^(32(n+h))` by less than `2^(32l) X_h < 2^(32n+1) <= 4a` (see [`recip`]).
const NEWTON_CORRECTIONS: usize = 4;

/// The widest divisor one thread divides by whole that these hints ask for (`divw`); `None`:
/// the default rule of [`divides_whole`].
pub fn whole_bits(hints: &crate::Hints) -> Option<u64> {
    hints.divide_whole_bits
}

/// True when one thread divides an `n`-bit dividend by an `m`-bit divisor whole: every divisor up
/// to `whole_bits` where the hint `divw` gives it; by default a dividend no wider than the divisor
/// (the short path) and divisors up to [`ONE_THREAD_MAX_DIVISOR_BITS`] at every width, and every
/// division whose dividend is wider than [`EXPANDED_MAX_DIVIDEND_BITS`].
/// Never where the division's local arrays would pass [`WHOLE_MAX_LOCAL_BYTES`].
pub fn divides_whole(n: u64, m: u64, whole_bits: Option<u64>) -> bool {
    whole_local_bytes(n, m) <= WHOLE_MAX_LOCAL_BYTES
        && match whole_bits {
            Some(w) => m <= w,
            None => n <= m || m <= ONE_THREAD_MAX_DIVISOR_BITS || n > EXPANDED_MAX_DIVIDEND_BITS,
        }
}

/// The most local memory one thread's division may hold: CUDA gives a thread at most 512 KB,
/// and the kernel around it keeps 64 KB. (A 2^24-bit division would hold 8 MB: it stays an
/// error, "kernel too big".)
pub const WHOLE_MAX_LOCAL_BYTES: u64 = 448 << 10;

/// Bytes of local memory one thread's division of an `n`-bit dividend by an `m`-bit divisor
/// holds (`emit/divide.rs`: the normalized divisor, the shifted dividend and the quotient, in
/// 64-bit limbs): 128 KB at 262144 bits of one width, 196 KB for a 524288-bit dividend.
pub fn whole_local_bytes(n: u64, m: u64) -> u64 {
    let (nl, ml) = (width(n) / 64, width(m) / 64);
    8 * (2 * nl + 2 * ml + 1)
}

/// The widest divisor one thread divides by whole by default where the dividend is wider
/// (`big.div_rem`, `emit/divide.rs`; the hint `divw` replaces the rule). Up to 2048 bits the
/// divisor's words and a window of the dividend's stay in registers (measured 2.3-2.8x CGBN); at
/// 4096 bits the division runs in local memory and still beats the Newton expansion on an H100
/// (bench/RESULTS.md, 2026-11-25: the wide shape 0.036 against 0.024 G/s, `a / b` 0.153 against
/// 0.033). At 8192 bits the wide shape is faster expanded (H200, 2026-11-26 eighth session: 0.011
/// against 0.003 G/s whole), up to [`EXPANDED_MAX_DIVIDEND_BITS`].
///
/// A dividend no wider than the divisor divides whole at every width: with a divisor of full
/// width the quotient has one word, which `emit/divide.rs` computes in one row straight from the
/// operands (`short_quotient`). Measured on an H200 (bench/RESULTS.md, 2026-11-26 eighth session,
/// `a / b` of random operands): 0.205 against 0.015 G/s for the expansion at 8192 bits, 0.082
/// against 0.002 at 16384; from 131072 bits the expansion does not fit a kernel.
pub const ONE_THREAD_MAX_DIVISOR_BITS: u64 = 4096;

/// The widest dividend the Newton expansion divides by default (where the dividend is wider than
/// a divisor wider than [`ONE_THREAD_MAX_DIVISOR_BITS`]); wider ones divide whole in one
/// thread's local memory. The expansion's CUDA grows with the divisor: 722 / 848 / 1,057 KB and
/// 7 / 10 / 18.5 s of NVRTC 13 (2 cores) for 16384- / 32768- / 65536-bit divisors of dividends
/// twice as wide; from 131072-bit divisors its products need more shared staging than a block
/// has (297 KB against 227 KB) and it does not compile at all. One thread's division function
/// is a few KB at every width (its loops stay loops).
pub const EXPANDED_MAX_DIVIDEND_BITS: u64 = 131072;

/// The widest divisor whose words and window one thread's division holds in registers (ptxas:
/// 254 registers at 2048 bits and no spills in the row loop; at 4096 bits the loop spills).
/// Wider divisors divide in local memory (`emit/divide.rs`), and a parameter that only such
/// divisions read is read where it lies in global memory (`place::read_in_place`): at 2048
/// bits that made `a / b` 5% slower (H200, bench/RESULTS.md 2026-11-28), at 4096 1.3x faster
/// (2.2x with the result written where computed, `place::written_in_place`).
pub const MAX_REGISTER_DIVISOR_BITS: u64 = 2048;

/// True when every one-thread operation of `func` (a program after `scalarize`, lambdas and loop
/// bodies included) is a square root through the root's device function (`emit/isqrt.rs`), and
/// there is one. That function keeps its numbers in local memory and waits on its latency, not
/// on registers: `schedule` leaves room for more resident threads
/// ([`crate::schedule::ROOT_FUNCTION_MIN_BLOCKS`]). Divisions by divisors wider than
/// [`MAX_REGISTER_DIVISOR_BITS`], in local memory too, are left out: with that room the wide
/// shape's division at 4096 bits ran 0.0569 G/s against 0.0695 (H200, bench/RESULTS.md
/// 2026-11-29, twenty-fourth session), and `a / b` keeps 48 registers either way.
pub fn roots_in_local_memory_only(func: &Func) -> bool {
    let root = |op: &Op| matches!(op, Op::LimbIsqrt(_));
    func.any_op(&root) && !func.any_op(&|op| op.is_one_thread_op() && !root(op))
}

/// The widest division a square root may compute whole (at its top level): the rest of a
/// root's one-thread program (the levels' squares and sums, scalarized over 64-bit limbs) grows
/// with the square of the width: the root of a 4096-bit value (its top division by 1088 bits)
/// already uses 255 registers (bench/RESULTS.md, 2026-11-25); roots of wider values (from a top
/// division by 2112 bits) keep the parallel lowering.
pub const ROOT_MAX_DIVISOR_BITS: u64 = 2048;

/// The width (a power of two) of the values from which one thread takes a square root through
/// the root's device function ([`Op::BigIsqrtWhole`], `emit/isqrt.rs`: the Karatsuba square root
/// bottom-up in loops that stay loops, a few KB of CUDA at every width) where its local arrays
/// fit ([`root_local_bytes`]), in programs that may run one thread per instance. Narrower roots
/// are the Karatsuba square root written out level by level over this pass's divisions (whole
/// where [`ROOT_MAX_DIVISOR_BITS`] allows). Written out, the root of an 8192-bit value was
/// 2.3 MB of CUDA spread over 16 threads an instance (6.9 MB in one thread), of a 16384-bit
/// one 2.7 MB and 74 s of NVRTC 13 (2 cores), and from a 524288-bit value it did not fit a
/// kernel. At 4096-bit values (an H200, bench/RESULTS.md 2026-11-29, twenty-third session) the
/// function (64-bit limbs) ran the wide shape's root 0.277 G roots/s against 0.247 written out,
/// but a root alone 0.215 against 0.274: with 40 registers a thread, three times as many threads
/// share each SM's L1 for their local arrays as with the wide shape's 136, and the function is
/// bound by the latency of its local memory. At 2048-bit values it ran 0.753 against 1.211.
pub const ROOT_FUNCTION_FROM_BITS: u64 = 8192;

/// Bytes of local memory one thread's root of an `n`-bit value holds (`emit/isqrt.rs`: the
/// normalized value, the root, the remainder, the division's window and quotient and the square,
/// in 64-bit limbs of the value's width (a power of two, at least 64)): 104 KB at 262144 bits.
pub fn root_local_bytes(n: u64) -> u64 {
    let l = root_width(n) / 64;
    8 * (l + 3 * (l / 2 + 1) + (l / 2 + 2) + (l / 4 + 2))
}

/// True when one thread takes the square root of an `n`-bit value through the root's device
/// function: from `from` bits ([`ROOT_FUNCTION_FROM_BITS`] by default), where its local arrays
/// fit.
fn root_by_function(n: u64, from: u64) -> bool {
    root_width(n) >= from && root_local_bytes(n) <= WHOLE_MAX_LOCAL_BYTES
}

/// The widest product a program may hold for its divisions to be computed whole by one thread
/// (which runs the whole program): a product of two 4096-bit values as one thread's straight-line
/// code takes NVRTC minutes; 1088-bit ones take seconds.
pub const ONE_THREAD_MAX_PRODUCT_BITS: u64 = 1088;

/// `func` (concrete, loops unrolled) with every big-integer division replaced by its computation,
/// in lambdas too. A no-op when there is none. The program's own divisions are computed whole by
/// one thread where it may run one thread per instance ([`crate::per_thread::eligible`], and
/// `per_thread` not `Some(false)`, the hint) and [`divides_whole`] accepts every division's
/// widths (`whole_bits`: the hint `divw`); a closure's always may.
pub fn divide(func: &Func, per_thread: Option<bool>, whole_bits: Option<u64>) -> CgResult<Func> {
    divide_with(func, per_thread, whole_bits, ROOT_FUNCTION_FROM_BITS)
}

/// [`divide`] with one thread's square roots through the root's device function from values of
/// `root_from` bits (the tests take it down to small widths).
fn divide_with(
    func: &Func,
    per_thread: Option<bool>,
    whole_bits: Option<u64>,
    root_from: u64,
) -> CgResult<Func> {
    if !has_division(func) {
        return Ok(func.clone());
    }
    // A program that runs one thread per instance anyway (a power, gcd or inverse, or a loop
    // that stays a loop) divides whole; another one only if its products are narrow enough to
    // compute in one thread too.
    let forced = crate::montgomery::has_one_thread_op(func) || crate::loops::has_loop(func);
    let whole = per_thread != Some(false)
        && crate::per_thread::eligible(func)
        && func
            .nodes
            .iter()
            .all(|n| fits_one_thread(func, &n.op, whole_bits, root_from))
        && (forced || products_fit_one_thread(func));
    let mut div = Divider {
        whole,
        whole_bits,
        root_from,
        ..Divider::default()
    };
    let divided = rewrite(
        func,
        Builder::like(func),
        Type::clone,
        |b, m, _, node| div.rule(b, m, node),
        same_output,
    )?;
    // `x.div_rem(y).1` leaves its quotient unread: dropped here, before `per_thread` moves the
    // program into a map's body, where a dead read of a part would make the division's device
    // function compute it (`Parts::read_in`) and its words be copied out for nothing.
    crate::fuse::dead_code(&divided)
}

/// True when `f` (or one of its lambdas) divides big integers or takes their square roots.
pub fn has_division(f: &Func) -> bool {
    f.any_op(&|op| matches!(op, Op::BigDiv(..) | Op::BigRem(..) | Op::BigIsqrt(..)))
}

/// True when one thread may compute every division of `op` whole (a square root: the divisions
/// of all its levels, the widest at the top). A program whose divisions do not all fit keeps
/// the parallel lowering for all of them: one wide division expanded in one thread would make
/// megabytes of straight-line CUDA.
fn fits_one_thread(func: &Func, op: &Op, whole_bits: Option<u64>, root_from: u64) -> bool {
    let width_of = |v: ValueId| match func.ty(v) {
        Type::Big(s) => s.as_const().unwrap_or(u64::MAX),
        _ => u64::MAX,
    };
    let fits = |n: u64, m: u64| divides_whole(n, m, whole_bits);
    match op {
        Op::BigDiv(a, b) | Op::BigRem(a, b) => fits(width_of(*a), width_of(*b)),
        Op::BigIsqrt(a) => {
            let padded = root_width(width_of(*a));
            let (num, den) = root_division(padded);
            padded == 64
                || root_by_function(padded, root_from)
                || (den <= ROOT_MAX_DIVISOR_BITS && fits(num, den))
        }
        _ => true,
    }
}

/// The width a square root of an `n`-bit value works at: a power of two, at least 64.
pub(crate) fn root_width(n: u64) -> u64 {
    n.next_power_of_two().max(64)
}

/// The widths of the division at the level of a square root of an `n`-bit value (`n` a power of
/// two above 64, see [`Divider::sqrt_rem`]): a `width(2k + 1)`-bit numerator by a
/// `width(k + 1)`-bit denominator, `k = n / 4`. The widest division of a root is its top level's.
fn root_division(n: u64) -> (u64, u64) {
    let k = n / 4;
    (width(2 * k + 1), width(k + 1))
}

/// True when every product of `func` has operands of at most
/// [`ONE_THREAD_MAX_PRODUCT_BITS`]: one thread computes them as straight-line column products
/// over 64-bit limbs, whose text grows with the square of the width.
fn products_fit_one_thread(func: &Func) -> bool {
    func.nodes.iter().all(|n| match n.op {
        Op::BigMul(a, b) | Op::BigMulWide(a, b) => [a, b].iter().all(|v| match func.ty(*v) {
            Type::Big(s) => s
                .as_const()
                .is_some_and(|w| w <= ONE_THREAD_MAX_PRODUCT_BITS),
            _ => true,
        }),
        _ => true,
    })
}

fn lambda(f: &Func, whole_bits: Option<u64>, root_from: u64) -> CgResult<Func> {
    if !has_division(f) {
        return Ok(f.clone());
    }
    let mut div = Divider {
        whole: true,
        whole_bits,
        root_from,
        ..Divider::default()
    };
    rewrite(
        f,
        Builder::like(f),
        Type::clone,
        |b, m, _, node| div.rule(b, m, node),
        same_output,
    )
}

/// A normalized divisor: the shift `s`, `d = b << s` and the reciprocal `v`.
#[derive(Clone, Copy)]
struct Normalized {
    s: ValueId,
    d: ValueId,
    v: ValueId,
    zero: ValueId,
}

/// The values one rewrite has built, so that a divisor's reciprocal and a pair's division are
/// built once.
#[derive(Default)]
struct Divider {
    /// Divisions may be computed whole by one thread (within the widths that allow it).
    whole: bool,
    /// The widest divisor divided whole where the hint `divw` says (see [`divides_whole`]).
    whole_bits: Option<u64>,
    /// Square roots of values this wide or wider, computed whole, are the root's device
    /// function ([`ROOT_FUNCTION_FROM_BITS`]).
    root_from: u64,
    divisors: HashMap<ValueId, Normalized>,
    divisions: HashMap<(ValueId, ValueId), (ValueId, ValueId)>,
}

fn bits(b: &Builder, v: ValueId) -> u64 {
    match b.ty(v) {
        Type::Big(s) => s.as_const().expect("division runs on specialized programs"),
        other => unreachable!("a big integer was expected, not {other}"),
    }
}

/// The smallest multiple of 64 that holds `bits` bits.
fn width(bits: u64) -> u64 {
    bits.div_ceil(64).max(1) * 64
}

fn big(bits: u64) -> Type {
    Type::Big(Size::lit(bits))
}

impl Divider {
    fn rule(
        &mut self,
        b: &mut Builder,
        m: &bigfuse_core::rewrite::Mapped,
        node: &bigfuse_core::Node,
    ) -> CgResult<Rewritten> {
        Ok(match &node.op {
            Op::BigDiv(x, y) => Rewritten::Value(self.div_rem(b, m.get(*x), m.get(*y))?.0),
            Op::BigRem(x, y) => Rewritten::Value(self.div_rem(b, m.get(*x), m.get(*y))?.1),
            Op::BigIsqrt(x) => Rewritten::Value(self.isqrt(b, m.get(*x))?),
            op if op.lambdas().iter().any(|l| has_division(l)) => {
                let mut op = op.clone();
                match &mut op {
                    Op::Map { f, .. } => **f = lambda(f, self.whole_bits, self.root_from)?,
                    Op::Scan { op: f, .. } | Op::Reduce { op: f, .. } => {
                        **f = lambda(f, self.whole_bits, self.root_from)?
                    }
                    _ => unreachable!("only maps, scans and reductions carry lambdas"),
                }
                Rewritten::Value(b.copy(&op, &node.ty, |v| m.get(v))?)
            }
            // A loop that stayed a loop divides in its body, each round anew.
            Op::Loop { count, body, args } if has_division(body) => {
                let op = Op::Loop {
                    count: *count,
                    body: Box::new(lambda(body, self.whole_bits, self.root_from)?),
                    args: args.clone(),
                };
                Rewritten::Value(b.copy(&op, &node.ty, |v| m.get(v))?)
            }
            _ => Rewritten::Copy,
        })
    }

    /// Quotient and remainder of `a` (n bits) by `b` (m bits).
    fn div_rem(
        &mut self,
        bld: &mut Builder,
        a: ValueId,
        b: ValueId,
    ) -> CgResult<(ValueId, ValueId)> {
        if let Some(qr) = self.divisions.get(&(a, b)) {
            return Ok(*qr);
        }
        let (n, m) = (bits(bld, a), bits(bld, b));
        if self.whole && divides_whole(n, m, self.whole_bits) {
            let qr = bld.push(Op::BigDivRem(a, b))?;
            let q = bld.extract(qr, 0)?;
            let r = bld.extract(qr, 1)?;
            self.divisions.insert((a, b), (q, r));
            return Ok((q, r));
        }
        let nd = self.normalize(bld, b)?;
        // The dividend shifted like the divisor, in k + 1 digits of m bits; its top digit is below d.
        let k = n.div_ceil(m).max(1);
        let wide = bld.cast(a, big((k + 1) * m))?;
        let shifted = bld.shift(ShiftOp::Shl, wide, nd.s)?;
        let digit = |bld: &mut Builder, j: u64| -> CgResult<ValueId> {
            let at = shr_const(bld, shifted, j * m)?;
            Ok(bld.cast(at, big(m))?)
        };
        let mut r = digit(bld, k)?;
        let mut q: Option<ValueId> = None;
        for j in (0..k).rev() {
            let u0 = digit(bld, j)?;
            let (qj, rj) = two_by_one(bld, r, u0, nd)?;
            r = rj;
            let qj = bld.cast(qj, big(k * m))?;
            let qj = shl_const(bld, qj, j * m)?;
            q = Some(match q {
                None => qj,
                Some(q) => bld.or(q, qj)?,
            });
        }
        let q = bld.cast(q.expect("at least one digit"), big(n))?;
        let r = bld.shift(ShiftOp::Shr, r, nd.s)?;
        // Division by zero: all ones, and the dividend modulo 2^m.
        let ones = constant(bld, n, vec![u64::MAX; (n / 64) as usize]);
        let q = bld.select(nd.zero, ones, q)?;
        let a_mod = bld.cast(a, big(m))?;
        let r = bld.select(nd.zero, a_mod, r)?;
        self.divisions.insert((a, b), (q, r));
        Ok((q, r))
    }

    /// `floor(sqrt(a))`: `a` zero-extended to N = 64 * 2^j bits and shifted left by an even
    /// amount until one of its top two bits is set, then Zimmermann's Karatsuba square root
    /// ([`Divider::sqrt_rem`]), the root shifted back by half the amount.
    fn isqrt(&mut self, bld: &mut Builder, a: ValueId) -> CgResult<ValueId> {
        let n = bits(bld, a);
        let padded = root_width(n);
        if self.whole && root_by_function(n, self.root_from) {
            return Ok(bld.push(Op::BigIsqrtWhole(a))?);
        }
        let x = resize(bld, a, padded)?;
        let z = bld.count(UnOp::LeadingZeros, x)?;
        let one = bld.u32(1);
        let t = bld.binary(BinOp::Shr, z, one)?;
        let twice = bld.binary(BinOp::Shl, t, one)?;
        let x = bld.shift(ShiftOp::Shl, x, twice)?;
        let (s, _) = self.sqrt_rem(bld, x)?;
        let s = bld.shift(ShiftOp::Shr, s, t)?;
        // The root of an N-bit value has at most N/2 bits; a zero input gives zero (its shifted
        // value is not normalized, so the root is chosen here).
        let s = resize(bld, s, n)?;
        let zero = constant(bld, n, vec![]);
        let is_zero = bld.eq(a, zero)?;
        Ok(bld.select(is_zero, zero, s)?)
    }

    /// `(s, r)` with `s^2 + r = x`, `s = floor(sqrt(x))`, for `x` of N = 64 * 2^j bits whose
    /// top two bits are not both zero (MCA Algorithm 1.12, SqrtRem, in base 2^(N/4)): the root
    /// of the top half, one division by twice that root for the next quarter, one square and at
    /// most one correction. `s` has N/2 bits, `r` (at most 2s) width(N/2 + 1).
    fn sqrt_rem(&mut self, bld: &mut Builder, x: ValueId) -> CgResult<(ValueId, ValueId)> {
        let big_n = bits(bld, x);
        if big_n == 64 {
            let x64 = bld.cast(x, Type::U64)?;
            let s = isqrt_word(bld, x64)?;
            let sq = bld.mul(s, s)?;
            let r = bld.sub(x64, sq)?;
            let s = bld.cast(s, big(64))?;
            let r = bld.cast(r, big(128))?;
            return Ok((s, r));
        }
        let k = big_n / 4;
        let half = shr_const(bld, x, 2 * k)?;
        let half = bld.cast(half, big(2 * k))?;
        let (s1, r1) = self.sqrt_rem(bld, half)?;
        // a1, a0: the two low digits of x.
        let (wq, wd) = root_division(big_n);
        let a1 = shr_const(bld, x, k)?;
        let a1 = bld.cast(a1, big(width(k)))?;
        let mask = constant(bld, width(k), low_mask(k));
        let a1 = bld.and(a1, mask)?;
        let a0 = bld.cast(x, big(width(k)))?;
        let a0 = bld.and(a0, mask)?;
        // (q, u) = divrem(r1 * 2^k + a1, 2 s1).
        let num = resize(bld, r1, wq)?;
        let num = shl_const(bld, num, k)?;
        let a1w = resize(bld, a1, wq)?;
        let num = bld.or(num, a1w)?;
        let den = resize(bld, s1, wd)?;
        let den = shl_const(bld, den, 1)?;
        let (q, u) = self.div_rem(bld, num, den)?;
        // s = s1 * 2^k + q; r = u * 2^k + a0 - q^2, once corrected when negative.
        let s1w = resize(bld, s1, wq)?;
        let s1w = shl_const(bld, s1w, k)?;
        let s = bld.add(s1w, q)?;
        let uw = resize(bld, u, wq)?;
        let uw = shl_const(bld, uw, k)?;
        let a0w = resize(bld, a0, wq)?;
        let t1 = bld.or(uw, a0w)?;
        // q <= 2^k (r1 <= 2 s1 and s1 >= 2^(k-1)): its square from k + 1 bits, not from wq.
        let qn = bld.cast(q, big(wd))?;
        let q2 = bld.mul_wide(qn, qn)?;
        let q2 = resize(bld, q2, wq)?;
        let negative = bld.lt(t1, q2)?;
        let r_pos = bld.sub(t1, q2)?;
        let twice_s = shl_const(bld, s, 1)?;
        let one = constant(bld, wq, vec![1]);
        let r_neg = bld.add(t1, twice_s)?;
        let r_neg = bld.sub(r_neg, one)?;
        let r_neg = bld.sub(r_neg, q2)?;
        let r = bld.select(negative, r_neg, r_pos)?;
        let s_less = bld.sub(s, one)?;
        let s = bld.select(negative, s_less, s)?;
        let s = resize(bld, s, 2 * k)?;
        let r = resize(bld, r, width(2 * k + 1))?;
        Ok((s, r))
    }

    fn normalize(&mut self, bld: &mut Builder, b: ValueId) -> CgResult<Normalized> {
        if let Some(nd) = self.divisors.get(&b) {
            return Ok(*nd);
        }
        let m = bits(bld, b);
        let s = bld.count(UnOp::LeadingZeros, b)?;
        let d = bld.shift(ShiftOp::Shl, b, s)?;
        let zero_c = constant(bld, m, vec![]);
        let zero = bld.eq(b, zero_c)?;
        // X = 2^m + v, within one unit below floor((2^2m - 1) / d).
        let x = recip(bld, d, m / 32)?;
        let v = bld.cast(x, big(m))?;
        let nd = Normalized { s, d, v, zero };
        self.divisors.insert(b, nd);
        Ok(nd)
    }
}

/// `(q, r)` of `u1 * 2^m + u0` by `d` (all m bits, `u1 < d`, `d`'s top bit set), with
/// `nd.v = X - 2^m` where `d * X < 2^2m <= d * (X + 2)`.
///
/// The estimate `q' = u1 + high(u1 * v) = floor(u1 * X / 2^m)` is never above the quotient `q`
/// (`X <= 2^2m / d`), and `X > 2^2m / d - 2` gives `q' > u1 * 2^m / d - 3`, while
/// `q <= (u1 * 2^m + u0) / d < u1 * 2^m / d + 2` (`u0 < 2^m <= 2d`): so `q - q' <= 4`, and four
/// conditional subtractions of `d` from `u - q' * d` (computed modulo 2^(m+64), where it is below
/// `5d < 2^(m+3)`) finish the digit.
fn two_by_one(
    bld: &mut Builder,
    u1: ValueId,
    u0: ValueId,
    nd: Normalized,
) -> CgResult<(ValueId, ValueId)> {
    let m = bits(bld, u1);
    let p = bld.mul_wide(u1, nd.v)?;
    let high = shr_const(bld, p, m)?;
    let high = bld.cast(high, big(m))?;
    let q = bld.add(u1, high)?;
    let w = m + 64;
    let hi = bld.cast(u1, big(w))?;
    let hi = shl_const(bld, hi, m)?;
    let lo = bld.cast(u0, big(w))?;
    let u = bld.or(hi, lo)?;
    let qw = bld.cast(q, big(w))?;
    let dw = bld.cast(nd.d, big(w))?;
    let qd = bld.mul(qw, dw)?;
    let r = bld.sub(u, qd)?;
    let (r, q) = corrections(bld, DIGIT_CORRECTIONS, r, dw, dw, q, true)?;
    Ok((q, bld.cast(r, big(m))?))
}

/// `rounds` conditional steps of a correction loop without control flow: while `bound <= value`,
/// `value -= step` and `count` moves by one (up or down), each round two selects.
fn corrections(
    bld: &mut Builder,
    rounds: usize,
    mut value: ValueId,
    step: ValueId,
    bound: ValueId,
    mut count: ValueId,
    up: bool,
) -> CgResult<(ValueId, ValueId)> {
    let one = constant(bld, bits(bld, count), vec![1]);
    for _ in 0..rounds {
        let over = bld.le(bound, value)?;
        let less = bld.sub(value, step)?;
        value = bld.select(over, less, value)?;
        let moved = if up {
            bld.add(count, one)?
        } else {
            bld.sub(count, one)?
        };
        count = bld.select(over, moved, count)?;
    }
    Ok((value, count))
}

/// MCA's ApproximateReciprocal in base 2^32: for `a` of `n` words (its value in `[2^(32n-1),
/// 2^(32n))`, held in any width), `X` with `a * X < 2^(64n) <= a * (X + 2)`, so
/// `X` is in `[2^(32n), 2^(32n+1))`; held in a width of at least 32n + 1 bits.
fn recip(bld: &mut Builder, a: ValueId, n: u64) -> CgResult<ValueId> {
    if n <= 2 {
        // A 64-bit a (n = 1 never occurs: divisors have at least 64 bits, and the recursion
        // stops at 2 words).
        assert_eq!(n, 2, "reciprocals are built from 64 bits up");
        let a64 = bld.cast(a, Type::U64)?;
        let v = reciprocal_word(bld, a64)?;
        let v = bld.cast(v, big(128))?;
        let top = constant(bld, 128, power_of_two(64));
        return Ok(bld.or(v, top)?);
    }
    let l = (n - 1) / 2;
    let h = n - l;
    let ah = shr_const(bld, a, 32 * l)?;
    let ah = resize(bld, ah, width(32 * h))?;
    let xh = recip(bld, ah, h)?;
    // T = a * X_h, below 2^(32(n+h)+1); while T >= 2^(32(n+h)): X_h -= 1, T -= a.
    let w = width(32 * n);
    let aw = resize(bld, a, w)?;
    let xw = resize(bld, xh, w)?;
    let t = bld.mul_wide(aw, xw)?;
    let a2 = bld.cast(aw, big(2 * w))?;
    let limit = constant(bld, 2 * w, power_of_two(32 * (n + h)));
    let (t, xh) = corrections(bld, NEWTON_CORRECTIONS, t, a2, limit, xw, false)?;
    // T = 2^(32(n+h)) - a X_h < 3a; U = floor(T / 2^(32l)) X_h; X = X_h 2^(32l) + U / 2^(32(2h-l)).
    let t = bld.sub(limit, t)?;
    let tm = shr_const(bld, t, 32 * l)?;
    let wu = width(32 * h + 2);
    let tm = resize(bld, tm, wu)?;
    let xu = resize(bld, xh, wu)?;
    let u = bld.mul_wide(tm, xu)?;
    let u = shr_const(bld, u, 32 * (2 * h - l))?;
    let wx = width(32 * n + 1);
    let u = resize(bld, u, wx)?;
    let xh = resize(bld, xh, wx)?;
    let xh = shl_const(bld, xh, 32 * l)?;
    Ok(bld.add(xh, u)?)
}

/// `floor((2^128 - 1) / d) - 2^64` for a u64 `d` with its top bit set: the quotient of
/// `(2^64 - 1 - d) * 2^64 + (2^64 - 1)` by `d`, whose high word is below `d`, by Hacker's Delight's
/// `divlu` (two 64-by-32-bit steps, each estimate corrected at most twice) in u64 operations.
fn reciprocal_word(b: &mut Builder, d: ValueId) -> CgResult<ValueId> {
    let c32 = b.u64(32);
    let base = b.u64(1 << 32);
    let low_mask = b.u64(u32::MAX as u64);
    let u1 = b.not(d)?;
    let vn1 = b.binary(BinOp::Shr, d, c32)?;
    let vn0 = b.binary(BinOp::And, d, low_mask)?;
    // Both halves of the low dividend word are all ones.
    let half = low_mask;
    let step = |b: &mut Builder, num: ValueId, un: ValueId| -> CgResult<ValueId> {
        let mut q = b.binary(BinOp::Div, num, vn1)?;
        let qv = b.mul(q, vn1)?;
        let mut rhat = b.sub(num, qv)?;
        let mut live = b.bool(true);
        for _ in 0..2 {
            // q >= 2^32 or q * vn0 > rhat * 2^32 + un; the product only counts when q < 2^32.
            let big_q = b.le(base, q)?;
            let qv0 = b.mul(q, vn0)?;
            let r_hi = b.binary(BinOp::Shl, rhat, c32)?;
            let r_un = b.binary(BinOp::Or, r_hi, un)?;
            let too_big = b.lt(r_un, qv0)?;
            let wrong = b.or(big_q, too_big)?;
            let fix = b.and(live, wrong)?;
            let one = b.u64(1);
            let q_less = b.sub(q, one)?;
            q = b.select(fix, q_less, q)?;
            let r_more = b.add(rhat, vn1)?;
            rhat = b.select(fix, r_more, rhat)?;
            // A second correction only while rhat stays below 2^32.
            let small = b.lt(rhat, base)?;
            live = b.and(fix, small)?;
        }
        Ok(q)
    };
    let q1 = step(b, u1, half)?;
    // un21 = u1 * 2^32 + un1 - q1 * d (mod 2^64).
    let u1s = b.binary(BinOp::Shl, u1, c32)?;
    let u1s = b.binary(BinOp::Or, u1s, half)?;
    let q1d = b.mul(q1, d)?;
    let un21 = b.sub(u1s, q1d)?;
    let q0 = step(b, un21, half)?;
    let q1s = b.binary(BinOp::Shl, q1, c32)?;
    Ok(b.add(q1s, q0)?)
}

/// `floor(sqrt(x))` of a u64 `x >= 2^62` (the base of [`Divider::sqrt_rem`]): Newton's iteration
/// `y = (s + x / s) / 2` from `s = 2^32 - 1`, which is above the root and so decreases to it;
/// from a relative error below 1, eight rounds reach it (the error squares each round: below
/// 2^-32 after five, then the integer steps settle).
fn isqrt_word(b: &mut Builder, x: ValueId) -> CgResult<ValueId> {
    let mut s = b.u64(u32::MAX as u64);
    let one = b.u64(1);
    for _ in 0..8 {
        let q = b.binary(BinOp::Div, x, s)?;
        let sum = b.add(s, q)?;
        let y = b.binary(BinOp::Shr, sum, one)?;
        let lower = b.lt(y, s)?;
        s = b.select(lower, y, s)?;
    }
    Ok(s)
}

/// The limbs of `2^k - 1`.
fn low_mask(k: u64) -> Vec<u64> {
    let mut limbs = vec![u64::MAX; (k / 64) as usize];
    if !k.is_multiple_of(64) {
        limbs.push((1u64 << (k % 64)) - 1);
    }
    limbs
}

/// A `U<bits>` constant from its little-endian limbs.
fn constant(b: &mut Builder, bits: u64, limbs: Vec<u64>) -> ValueId {
    b.constant(Literal::Big(limbs, Size::lit(bits)))
}

fn power_of_two(k: u64) -> Vec<u64> {
    let mut limbs = vec![0; (k / 64) as usize];
    limbs.push(1 << (k % 64));
    limbs
}

fn resize(b: &mut Builder, v: ValueId, to: u64) -> CgResult<ValueId> {
    if bits(b, v) == to {
        Ok(v)
    } else {
        Ok(b.cast(v, big(to))?)
    }
}

fn shr_const(b: &mut Builder, v: ValueId, k: u64) -> CgResult<ValueId> {
    shift_const(b, ShiftOp::Shr, v, k)
}

fn shl_const(b: &mut Builder, v: ValueId, k: u64) -> CgResult<ValueId> {
    shift_const(b, ShiftOp::Shl, v, k)
}

fn shift_const(b: &mut Builder, op: ShiftOp, v: ValueId, k: u64) -> CgResult<ValueId> {
    if k == 0 {
        return Ok(v);
    }
    let k =
        u32::try_from(k).map_err(|_| CodegenError::Unsupported(format!("a shift by {k} bits")))?;
    let k = b.u32(k);
    Ok(b.shift(op, v, k)?)
}

/// Which results of a division its caller reads: a function computes and writes only those
/// (`a / b` needs no remainder, so the one-word quotient of operands of one width is a borrow out
/// of `a - q b`, with no word stored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    pub quotient: bool,
    pub remainder: bool,
}

impl Parts {
    pub const BOTH: Parts = Parts {
        quotient: true,
        remainder: true,
    };

    /// The results of `limb.div_rem` node `id` of `f` that `f` reads (both where it reads the
    /// pair other than through extracts).
    pub fn read_in(f: &Func, id: ValueId) -> Parts {
        let read = |x: ValueId| {
            f.outputs.contains(&x) || f.ids().any(|u| f.node(u).op.args().contains(&x))
        };
        if f.outputs.contains(&id) {
            return Parts::BOTH;
        }
        let mut parts = Parts {
            quotient: false,
            remainder: false,
        };
        for u in f.ids().filter(|&u| f.node(u).op.args().contains(&id)) {
            match f.node(u).op {
                Op::Extract(_, 0) => parts.quotient |= read(u),
                Op::Extract(_, 1) => parts.remainder |= read(u),
                _ => return Parts::BOTH,
            }
        }
        if parts.quotient || parts.remainder {
            parts
        } else {
            Parts::BOTH
        }
    }

    /// Where the remainder's limbs start in the function's output: after the quotient's
    /// `na / 2` where it computes both.
    pub fn remainder_at(self, na: usize) -> usize {
        if self.quotient {
            na / 2
        } else {
            0
        }
    }

    /// The limbs the function writes for an `na`-word dividend by an `mb`-word divisor.
    pub fn limbs(self, na: usize, mb: usize) -> usize {
        self.remainder_at(na) + if self.remainder { mb / 2 } else { 0 }
    }

    /// The function's name: `bf_div_rem`, `bf_div` (the quotient only) or `bf_rem`, then the
    /// widths.
    pub fn name(self, na: usize, mb: usize) -> String {
        let prefix = match (self.quotient, self.remainder) {
            (true, false) => "bf_div",
            (false, true) => "bf_rem",
            _ => "bf_div_rem",
        };
        format!("{prefix}_{na}_{mb}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{eval, Value};
    use num_bigint::{BigUint, RandBigInt};
    use rand::{Rng, SeedableRng};

    /// What a kernel's division computes follows what it reads.
    #[test]
    fn a_division_computes_the_parts_read() {
        let f = bigfuse_core::parse::parse(
            "fn f(a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
               %0 = param a : (u64, u64)
               %1 = param b : (u64, u64)
               %2 = limb.div_rem %0, %1 : ((u64, u64), (u64, u64))
               %3 = extract %2.0 : (u64, u64)
               %4 = extract %2.1 : (u64, u64)
               return %3
             }",
        )
        .unwrap();
        let parts = Parts::read_in(&f, ValueId(2));
        assert_eq!((parts.quotient, parts.remainder), (true, false));
        assert_eq!(parts.name(4, 4), "bf_div_4_4");
        assert_eq!((parts.remainder_at(4), parts.limbs(4, 4)), (2, 2));
        assert_eq!(Parts::BOTH.limbs(4, 2), 3);
    }

    fn values(bits: u64, rng: &mut impl Rng, random: usize) -> Vec<BigUint> {
        let one = BigUint::from(1u8);
        let top = &one << bits;
        let mut v = vec![
            BigUint::from(0u8),
            one.clone(),
            BigUint::from(2u8),
            BigUint::from(3u8),
            &top - 1u8,
            &top - 2u8,
            &one << (bits - 1),
            (&one << (bits - 1)) + 1u8,
            (&one << (bits - 1)) - 1u8,
            (&one << (bits / 2)) - 1u8,
            &one << (bits / 2),
            BigUint::from(u64::MAX),
            (&one << 64) + 1u8,
        ];
        for _ in 0..random {
            let len = rng.gen_range(1..=bits);
            v.push(rng.gen_biguint(len));
        }
        v.retain(|x| *x < top);
        v
    }

    fn divider(n: u64, m: u64) -> (Func, Func) {
        let mut b = Builder::new("divrem", &[]);
        let x = b.param("a", big(n));
        let y = b.param("b", big(m));
        let q = b.div(x, y).unwrap();
        let r = b.rem(x, y).unwrap();
        let f = b.finish(&[q, r]).unwrap();
        let g = divide(&f, Some(false), None).unwrap();
        (f, g)
    }

    fn check(n: u64, m: u64, random: usize, seed: u64) {
        let (f, g) = divider(n, m);
        assert!(!has_division(&g));
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let xs = values(n, &mut rng, random);
        let ys = values(m, &mut rng, random);
        for x in &xs {
            for y in &ys {
                let args = [Value::Big(x.clone()), Value::Big(y.clone())];
                let want = eval(&f, &args).unwrap();
                let got = eval(&g, &args).unwrap();
                assert_eq!(got, want, "{n}-bit {x:#x} by {m}-bit {y:#x}");
            }
        }
    }

    #[test]
    fn word_reciprocals_are_exact() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut b = Builder::lambda();
        let d = b.param("d", Type::U64);
        let v = reciprocal_word(&mut b, d).unwrap();
        let f = b.finish(&[v]).unwrap();
        let mut ds = vec![
            1u64 << 63,
            (1 << 63) + 1,
            u64::MAX,
            u64::MAX - 1,
            0xc000_0000_0000_0000,
        ];
        ds.extend((0..20000).map(|_| rng.gen::<u64>() | 1 << 63));
        ds.extend((0..64).map(|k| (1 << 63) | (1u64 << k)));
        ds.extend((0..32).map(|k| u64::MAX << k));
        for d in ds {
            let want = (u128::MAX / d as u128 - (1u128 << 64)) as u64;
            let got = eval(&f, &[Value::U64(d)]).unwrap();
            assert_eq!(got, vec![Value::U64(want)], "d = {d:#x}");
        }
    }

    #[test]
    fn reciprocals_are_within_one_below() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for n in [2u64, 3, 4, 5, 6, 7, 8, 10, 16, 17, 32, 34, 64] {
            let bits = 32 * n;
            let mut b = Builder::new("recip", &[]);
            let a = b.param("a", big(width(bits)));
            let x = recip(&mut b, a, n).unwrap();
            let f = b.finish(&[x]).unwrap();
            let one = BigUint::from(1u8);
            let low = &one << (bits - 1);
            let mut inputs = vec![
                low.clone(),
                &low + 1u8,
                (&one << bits) - 1u8,
                (&one << bits) - 2u8,
            ];
            inputs.extend((0..300).map(|_| &low + rng.gen_biguint_below(&low)));
            inputs.extend((0..bits - 1).map(|k| &low + (&one << k)));
            inputs.extend((1..bits).map(|k| ((&one << bits) - 1u8) ^ ((&one << k) - 1u8)));
            let limit = &one << (2 * bits);
            for a in inputs {
                let got = eval(&f, &[Value::Big(a.clone())]).unwrap();
                let Value::Big(x) = &got[0] else {
                    panic!("{got:?}")
                };
                assert!(
                    &a * x < limit,
                    "{n} words, a = {a:#x}: X = {x:#x} is too large"
                );
                assert!(
                    &a * (x + 2u8) >= limit,
                    "{n} words, a = {a:#x}: X = {x:#x} is too small"
                );
            }
        }
    }

    #[test]
    fn quotients_and_remainders_equal_num_bigint() {
        for (k, (n, m)) in [
            (64, 64),
            (128, 128),
            (128, 64),
            (64, 128),
            (192, 192),
            (256, 128),
            (320, 320),
            (320, 192),
            (512, 512),
        ]
        .into_iter()
        .enumerate()
        {
            check(n, m, 24, k as u64);
        }
    }

    /// One thread's square root through the root's device function (taken down to small widths
    /// here; `emit/isqrt.rs` checks the function itself against num-bigint): where it is chosen
    /// no division is left, and the evaluator's root is num-bigint's.
    #[test]
    fn roots_by_the_function_where_chosen() {
        let root = |n: u64| {
            let mut b = Builder::new("isqrt", &[]);
            let x = b.param("a", big(n));
            let r = b.isqrt(x).unwrap();
            b.finish(&[r]).unwrap()
        };
        let by_function =
            |g: &Func| g.any_op(&|op| matches!(op, Op::BigIsqrtWhole(..))) && !has_division(g);
        let mut rng = rand::rngs::StdRng::seed_from_u64(29);
        for n in [64u64, 128, 192, 320, 2048] {
            let g = divide_with(&root(n), None, None, 64).unwrap();
            assert!(by_function(&g), "{}", bigfuse_core::print(&g));
            for x in values(n, &mut rng, 10) {
                let args = [Value::Big(x.clone())];
                assert_eq!(eval(&g, &args).unwrap(), vec![Value::Big(x.sqrt())]);
            }
        }
        // By default from ROOT_FUNCTION_FROM_BITS, where the program runs one thread per instance
        // and the function's local arrays fit (2^20 bits: 416 KB; 2^21: 832 KB).
        for (n, function) in [
            (4096u64, false),
            (ROOT_FUNCTION_FROM_BITS, true),
            (1 << 19, true),
            (1 << 20, true),
            (1 << 21, false),
        ] {
            let f = root(n);
            assert_eq!(
                by_function(&divide(&f, None, None).unwrap()),
                function,
                "{n} bits"
            );
            assert!(
                !by_function(&divide(&f, Some(false), None).unwrap()),
                "{n} bits, several threads an instance"
            );
        }
    }

    fn check_isqrt(n: u64, random: usize, seed: u64) {
        let mut b = Builder::new("isqrt", &[]);
        let x = b.param("a", big(n));
        let r = b.isqrt(x).unwrap();
        let f = b.finish(&[r]).unwrap();
        let g = divide(&f, Some(false), None).unwrap();
        assert!(!has_division(&g));
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut xs = values(n, &mut rng, random);
        for v in values(n / 2, &mut rng, random) {
            xs.push(&v * &v);
            xs.push(&v * &v + 2u8 * &v); // (v + 1)^2 - 1
        }
        xs.retain(|x| x.bits() <= n);
        for x in xs {
            let got = eval(&g, &[Value::Big(x.clone())]).unwrap();
            assert_eq!(
                got,
                vec![Value::Big(x.sqrt())],
                "isqrt of the {n}-bit {x:#x}"
            );
        }
    }

    #[test]
    fn square_roots_equal_num_bigint() {
        for (k, n) in [64u64, 128, 192, 256, 320, 512, 1024]
            .into_iter()
            .enumerate()
        {
            check_isqrt(n, 40, k as u64);
        }
    }

    #[test]
    fn large_and_odd_widths() {
        check(1088, 1088, 6, 1);
        check(2048, 1024, 6, 2);
        check(1024, 2048, 4, 3);
    }
}

#[cfg(test)]
mod choice {
    use super::*;
    use bigfuse_core::{eval, Value};
    use num_bigint::BigUint;

    fn program(n: u64, m: u64, root: bool) -> Func {
        let mut b = Builder::new("f", &[]);
        let x = b.param("a", big(n));
        let y = b.param("b", big(m));
        let q = b.div(x, y).unwrap();
        let r = b.rem(x, y).unwrap();
        let mut outs = vec![q, r];
        if root {
            outs.push(b.isqrt(x).unwrap());
        }
        b.finish(&outs).unwrap()
    }

    fn whole_divisions(f: &Func) -> usize {
        f.nodes
            .iter()
            .filter(|n| matches!(n.op, Op::BigDivRem(..)))
            .count()
    }

    /// One thread divides whole up to the widest divisor, once for `a / b` and `a % b`; the
    /// square root's divisions too; wider divisors and the parallel lowering get the expansion.
    #[test]
    fn divisions_are_whole_where_one_thread_may_compute_them() {
        let f = program(2048, 1024, true);
        let g = divide(&f, None, None).unwrap();
        // a / b and a % b share one; the square root of a 2048-bit value divides at 8 levels.
        assert!(whole_divisions(&g) >= 2, "{}", bigfuse_core::print(&g));
        assert!(!g.any_op(&|op| matches!(op, Op::BigDiv(..) | Op::BigRem(..) | Op::BigIsqrt(..))));
        let a = (BigUint::from(3u8) << 2000u32) + 12345u32;
        let d = (BigUint::from(7u8) << 900u32) + 1u8;
        let args = [Value::Big(a), Value::Big(d)];
        assert_eq!(eval(&g, &args).unwrap(), eval(&f, &args).unwrap());
        assert_eq!(whole_divisions(&divide(&f, Some(false), None).unwrap()), 0);
        // Wider divisors: whole where the dividend is no wider (the short path) at every width,
        // expanded up to the widest expanded dividend, whole again above.
        let wide = program(8192, ONE_THREAD_MAX_DIVISOR_BITS + 64, false);
        assert_eq!(whole_divisions(&divide(&wide, None, None).unwrap()), 0);
        let widest_expanded = program(EXPANDED_MAX_DIVIDEND_BITS, 65536, false);
        assert_eq!(
            whole_divisions(&divide(&widest_expanded, None, None).unwrap()),
            0
        );
        let wider = program(EXPANDED_MAX_DIVIDEND_BITS + 64, 65536, false);
        assert_eq!(whole_divisions(&divide(&wider, None, None).unwrap()), 1);
        for bits in [16384, 16448, 262144] {
            let short = program(bits, bits, false);
            assert_eq!(whole_divisions(&divide(&short, None, None).unwrap()), 1);
        }
        let shorter = program(4096, 8192, false);
        assert_eq!(whole_divisions(&divide(&shorter, None, None).unwrap()), 1);
        // Never past a thread's local memory, whatever the hint.
        assert_eq!(whole_local_bytes(262144, 262144), (128 << 10) + 8);
        assert!(divides_whole(1 << 19, 1 << 18, None));
        assert!(!divides_whole(1 << 24, 1 << 24, None));
        assert!(!divides_whole(1 << 24, 64, Some(1 << 30)));
        // The hint `divw` replaces the default rule.
        let short = program(16384, 16384, false);
        assert_eq!(
            whole_divisions(&divide(&short, None, Some(4096)).unwrap()),
            0
        );
        let narrow = program(65536, ONE_THREAD_MAX_DIVISOR_BITS, false);
        assert_eq!(whole_divisions(&divide(&narrow, None, None).unwrap()), 1);
        // A program with a wide product keeps the expansion, also for a narrow division.
        let mut b = Builder::new("f", &[]);
        let x = b.param("a", big(4096));
        let y = b.param("b", big(1024));
        let p = b.mul_wide(x, x).unwrap();
        let r = b.rem(p, y).unwrap();
        let with_product = b.finish(&[r]).unwrap();
        assert_eq!(
            whole_divisions(&divide(&with_product, None, None).unwrap()),
            0
        );
        // A wider limit (the hint) divides wider divisors whole too.
        let wide_whole = divide(&wide, None, Some(8192)).unwrap();
        assert_eq!(whole_divisions(&wide_whole), 1);
        let a = (BigUint::from(5u8) << 4000u32) + 99u32;
        let d = (BigUint::from(3u8) << 2100u32) + 7u32;
        let args = [Value::Big(a), Value::Big(d)];
        assert_eq!(
            eval(&wide_whole, &args).unwrap(),
            eval(&wide, &args).unwrap()
        );
        // Written out, a square root whose top division is too wide keeps every division
        // expanded, also the narrow one of a / b beside it; one that fits divides whole at every
        // level. By default that root is the root's device function, and a / b divides whole.
        let root = program(4 * ROOT_MAX_DIVISOR_BITS, 256, true);
        let written_out = divide_with(&root, None, None, u64::MAX).unwrap();
        assert_eq!(whole_divisions(&written_out), 0);
        let g = divide(&root, None, None).unwrap();
        assert_eq!(whole_divisions(&g), 1);
        assert!(g.any_op(&|op| matches!(op, Op::BigIsqrtWhole(..))));
        let root = program(2 * ROOT_MAX_DIVISOR_BITS, 256, true);
        assert!(whole_divisions(&divide(&root, None, None).unwrap()) > 2);
    }
}

//! Programs written in the DSL itself, shared by the examples' tests and the benchmarks: they are
//! what a user writes, compiled by the same passes as everything else.

/// The carry operator on packed (generate, propagate) flags (bit 0: a carry leaves this block;
/// bit 1: the block lets an incoming carry through): `carry(lo, hi)` describes block `lo` followed
/// by the more significant block `hi`. Associative with identity 2.
#[crate::op(associative)]
pub fn carry(lo: u32, hi: u32) -> u32 {
    ((hi | ((hi >> 1) & lo)) & 1) | (lo & hi & 2)
}

/// Big-integer addition written as a user program over 64-bit limbs (little-endian, N per number):
/// the limb sums; each limb's (generate, propagate) flags; an exclusive scan with [`carry`](mod@carry)
/// gives each limb its carry-in; add it. Same result as `a + b` on `U<{64 * N}>`.
#[crate::kernel]
pub fn user_add(a: [u64; N], b: [u64; N]) -> [u64; N] {
    let sums = a.zip(b).map(|(x, y)| x + y);
    let flags = a.zip(b).map(|(x, y)| {
        let s = x + y;
        ((s < x) as u32) | (((s == u64::MAX) as u32) << 1)
    });
    let carries = flags.scan_exclusive(carry, 2u32);
    sums.zip(carries).map(|(s, c)| s + ((c & 1) as u64))
}

/// The dot product of two vectors of residues modulo the prime P. The compiler accumulates the
/// exact 128-bit products in 192 bits and reduces once per vector (delayed reduction).
#[crate::kernel]
pub fn dot(xs: [Zp<P>; N], ys: [Zp<P>; N]) -> Zp<P> {
    xs.zip(ys)
        .map(|(x, y)| x * y)
        .reduce(|s, t| s + t, Zp::ZERO)
}

/// Prefix sums of residues modulo the prime P (an inclusive scan). Arrays longer than one block's
/// threads span several blocks, which pass the running sum on to each other by look-back: one
/// kernel, each element read and written once.
#[crate::kernel]
pub fn prefix_sums(xs: [Zp<P>; N]) -> [Zp<P>; N] {
    xs.scan_inclusive(|s, t| s + t, Zp::ZERO)
}

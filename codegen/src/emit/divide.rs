//! `limb.div_rem` as C: one device function per pair of widths, computed by one thread (see
//! [`crate::divide`] for when a division is computed so and why).
//!
//! Knuth's Algorithm D (TAOCP vol. 2, 4.3.1) on 32-bit words: the divisor is normalized (shifted
//! up until its top bit is set) and the dividend shifted with it; then, from the top, one quotient
//! word per row: an estimate from the window's top two words by the divisor's top word (Möller
//! and Granlund's division by a precomputed reciprocal, "Improved division by invariant
//! integers", 2011, Algorithm 4), Knuth's test on the third word (after which the estimate is the
//! digit or one above), the window minus the estimate times the divisor, and an addition of the
//! divisor back in the rare case that made it negative. The window (one word more than the
//! divisor) and the divisor stay in registers; the rows are a loop, and the window moves up a
//! word per row. Divisors too wide for registers divide in local memory on 64-bit limbs
//! ([`limb_rows`], shared with the square root; two rows a pass here, blocks of them in the
//! root), in place on the shifted
//! dividend. Rows above the dividend's top word are skipped, so the time depends on the
//! operands' lengths: not constant-time. Where the dividend is no wider than the divisor, a
//! divisor of full width gives a quotient of one word, computed first by a path of its own
//! straight from the operands ([`short_quotient`]); read alone, that quotient reads only the
//! operands' top limbs but for rare operands ([`sign_from_the_top`]).
//!
//! Plain C over `u32`/`u64` and `unsigned __int128` (CUDA's funnel shifts have host equivalents
//! in the tests' prelude), so the tests below compile it for the host and check it against
//! num-bigint without a GPU.

use super::chain::{both_targets, Step};
use super::Emitter;
pub(crate) use crate::divide::Parts;

/// A row's quotient word `qh` from the window's top words `n2 n1 n0`, the divisor's top words
/// `d1 d0` and `v`, the reciprocal of `d1`: C shared by both forms of the function.
const ESTIMATE: &str = r#"    // The estimate of (n2 n1) / d1 and its remainder (n2 <= d1: the window's top is below d).
    u32 qh;
    u64 rh;
    if (n2 >= d1) {
      qh = ~0u;
      rh = (u64)n1 + (u64)d1;
    } else {
      const u64 p = (u64)v * (u64)n2 + (((u64)n2 << 32) | (u64)n1);
      u32 q1 = (u32)(p >> 32) + 1u;
      u32 r = n1 - q1 * d1;
      if (r > (u32)p) { q1 -= 1u; r += d1; }
      if (r >= d1) { q1 += 1u; r -= d1; }
      qh = q1;
      rh = r;
    }
    // Knuth's test with the third word: qh is then the quotient word or one above.
    if ((rh >> 32) == 0ull && (u64)qh * (u64)d0 > ((rh << 32) | (u64)n0)) {
      qh -= 1u;
      rh += d1;
      if ((rh >> 32) == 0ull && (u64)qh * (u64)d0 > ((rh << 32) | (u64)n0)) qh -= 1u;
    }
"#;

/// The rows of Knuth's Algorithm D on 64-bit limbs in local memory, shared by the division in
/// memory and the square root (`emit/isqrt.rs`): the quotient limbs `j0` down to 0 of the
/// window `u[j..=j + m]` by the normalized divisor `d[0..m]` (`m` a C expression, at least 1),
/// each stored to `q[j]` where `q` is given, the remainder left in `u[0..m]`. The caller
/// declares `bf_u128`, `d1`, `d0` (zero where `m` is 1), the divisor's top limbs, and `v`, their
/// reciprocal `floor((2^128 - 1) / d1) - 2^64`, and puts [`LIMB_ESTIMATE`] before its function.
/// `n0` is the window's third limb from the top (zero where `m` is 1). With `block` (at least
/// 2), rows go `block` at once where the divisor has more than `block` limbs
/// ([`LIMB_BLOCK_ROWS`]: a `block`-th of the loads and stores of the window and the divisor a
/// quotient limb); then, where the divisor has three limbs or more, rows `j` and `j - 1` at once
/// ([`LIMB_PAIR`]), else one at a time ([`LIMB_ROW`]). Each line is indented by `indent`.
pub(super) fn limb_rows(
    d: &str,
    m: &str,
    n0: &str,
    j0: &str,
    q: Option<&str>,
    block: Option<usize>,
    indent: &str,
) -> String {
    let store = |text: &str| q.map_or(String::new(), |q| text.replace("{q}", q));
    let block = block.map_or(String::new(), |b| {
        assert!(b >= 2, "a block of rows is two or more");
        LIMB_BLOCK_ROWS
            .replace(
                "{store}",
                &store("      #pragma unroll\n      for (int i = 0; i < {B}; ++i) {q}[b + i] = qb[i];\n"),
            )
            .replace("{B}", &b.to_string())
            .replace("{B1}", &(b - 1).to_string())
            .replace("{B2}", &(2 * b).to_string())
    });
    let pair = LIMB_PAIR.replace(
        "{store}",
        &store("      {q}[j] = qq1;\n      {q}[j - 1] = qq0;\n"),
    );
    let text = format!(
        "#pragma unroll 1\nfor (int j = {j0}; j >= 0;) {{\n{block}{pair}  {{\n{row}{q_j}  }}\n  --j;\n}}\n",
        row = LIMB_ROW
            .lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>(),
        q_j = store("    {q}[j] = qh;\n"),
    );
    text.replace("{m}", m)
        .replace("{d}", d)
        .replace("{n0}", n0)
        .lines()
        .map(|l| format!("{indent}{l}\n"))
        .collect()
}

/// `bf_estimate64`: the quotient limb of a window `(n2 n1 n0 ..)` by a normalized divisor
/// `(d1 d0 ..)` with `n2 <= d1` (the window's top is below the divisor), `v` the reciprocal of
/// `d1`: Möller and Granlund's 2-by-1 division ("Improved division by invariant integers", 2011,
/// Algorithm 4), then Knuth's test on the third limbs, after which it is the limb or one above.
/// Guarded, so that the division and the root may both carry it into one kernel.
pub(super) const LIMB_ESTIMATE: &str = r#"#ifndef BF_ESTIMATE64
#define BF_ESTIMATE64
// The quotient limb of (n2 n1 n0 ..) by a normalized (d1 d0 ..), n2 <= d1, v the reciprocal of d1:
// a 2-by-1 division by the reciprocal, then Knuth's test with the third limbs (the limb or one above).
static __device__ __forceinline__ u64 bf_estimate64(const u64 n2, const u64 n1, const u64 n0, const u64 d1, const u64 d0, const u64 v) {
  // The estimate of (n2 n1) / d1 and its remainder rh (above 2^64 where big).
  u64 qh, rh;
  bool big = false;
  if (n2 >= d1) {
    qh = ~0ull;
    rh = n1 + d1;
    big = rh < n1;
  } else {
    const bf_u128 pr = (bf_u128)v * n2 + (((bf_u128)n2 << 64) | n1);
    u64 q1 = (u64)(pr >> 64) + 1ull;
    u64 rr = n1 - q1 * d1;
    if (rr > (u64)pr) { q1 -= 1ull; rr += d1; }
    if (rr >= d1) { q1 += 1ull; rr -= d1; }
    qh = q1;
    rh = rr;
  }
  if (!big && (bf_u128)qh * d0 > (((bf_u128)rh << 64) | n0)) {
    qh -= 1ull;
    rh += d1;
    big = rh < d1;
    if (!big && (bf_u128)qh * d0 > (((bf_u128)rh << 64) | n0)) qh -= 1ull;
  }
  return qh;
}
#endif
"#;

/// One row: the quotient limb `qh` of the window `u[j..=j + m]`, then the window minus `qh d`,
/// with `d` added back where that went negative.
const LIMB_ROW: &str = r#"const u64 n2 = u[j + {m}], n1 = u[j + {m} - 1], n0 = {n0};
u64 qh = bf_estimate64(n2, n1, n0, d1, d0, v);
// u[j..j + {m}] -= qh {d}; negative when qh was one above.
u64 c = 0ull, bo = 0ull;
#pragma unroll 2
for (int k = 0; k < {m}; ++k) {
  const bf_u128 pr = (bf_u128)qh * {d}[k] + c;
  c = (u64)(pr >> 64);
  const u64 w = u[j + k], lo = (u64)pr;
  const u64 y = w - lo;
  const u64 b1 = w < lo;
  u[j + k] = y - bo;
  bo = b1 | (u64)(y < bo);
}
const u64 w = u[j + {m}];
const u64 y = w - c;
const bool negative = w < c || y < bo;
u[j + {m}] = y - bo;
if (negative) {
  qh -= 1ull;
  u64 cy = 0ull;
  #pragma unroll 2
  for (int k = 0; k < {m}; ++k) {
    const bf_u128 z = (bf_u128)u[j + k] + {d}[k] + cy;
    u[j + k] = (u64)z;
    cy = (u64)(z >> 64);
  }
  u[j + {m}] += cy;
}
"#;

/// Rows `j` down to `j - B + 1` at once (`B` the block given to [`limb_rows`]), inside the
/// rows' loop, where the divisor has more than `B` limbs. The block's quotient `Q = floor(W /
/// d)` of the window `W = u[j - B + 1..=j + m]` (`B` limbs, as `W < d 2^(64 B)`) is first
/// estimated from the top limbs: `W_t`, the window's top `2B + 1` limbs, divided by `d_t`, the
/// divisor's top `B + 1` (`s` limbs cut off; Knuth's rows on registers). `Q <= floor(W_t / d_t)
/// <= Q + 1`: `W_t >= Q d_t` (as `W >= Q d >= Q d_t 2^(64 s)`), and `W_t / d_t - W / d < (W /
/// d) / d_t < 2^-63` (as `d - d_t 2^(64 s) < 2^(64 s)` and `d_t >= 2^(64 B + 63)`). Then the
/// window minus that estimate times `d` in one pass, `B` products a divisor limb chained through
/// their low limbs (each sum fits 128 bits), `d` added back while negative (once at most) and
/// subtracted while not below it (never, by the bound; it keeps the pass exact for any
/// estimate). Where the window's top `B + 1` limbs are not below the divisor's (the estimate
/// would need `B + 1` limbs: all-ones operands reach it), the rows go two or one at a time. A
/// pass loads and stores each window limb, and loads each divisor limb, once for `B` products:
/// with two rows a pass the root function was bound by its local memory's traffic (at 65536
/// bits DRAM 62% busy; 30% with the root's blocks, bench/RESULTS.md 2026-11-29).
const LIMB_BLOCK_ROWS: &str = r#"  if (j >= {B1} && {m} >= {B} + 1) {
    const int b = j - {B1};
    // The window's top {B2} + 1 limbs and the divisor's top {B} + 1, in registers.
    u64 w[{B2} + 1], dt[{B} + 1];
    #pragma unroll
    for (int i = 0; i <= {B2}; ++i) w[i] = u[j + {m} - {B2} + i];
    #pragma unroll
    for (int i = 0; i <= {B}; ++i) dt[i] = {d}[{m} - {B} - 1 + i];
    int cmp = 0;
    #pragma unroll
    for (int i = 0; i <= {B}; ++i) cmp = w[{B} + i] != dt[i] ? (w[{B} + i] < dt[i] ? -1 : 1) : cmp;
    if (cmp < 0) {
      // Q = floor(w / dt): Knuth's rows, each limb the estimate or one above it.
      u64 qb[{B}];
      #pragma unroll
      for (int i = {B1}; i >= 0; --i) {
        u64 qh = bf_estimate64(w[i + {B} + 1], w[i + {B}], w[i + {B} - 1], d1, d0, v);
        u64 c = 0ull, bo = 0ull;
        #pragma unroll
        for (int k = 0; k <= {B}; ++k) {
          const bf_u128 pr = (bf_u128)qh * dt[k] + c;
          c = (u64)(pr >> 64);
          const u64 x = w[i + k], lo = (u64)pr;
          const u64 y = x - lo;
          const u64 b1 = (u64)(x < lo);
          w[i + k] = y - bo;
          bo = b1 | (u64)(y < bo);
        }
        const u64 x = w[i + {B} + 1];
        const u64 y = x - c;
        const bool negative = x < c || y < bo;
        w[i + {B} + 1] = y - bo;
        if (negative) {
          qh -= 1ull;
          u64 cy = 0ull;
          #pragma unroll
          for (int k = 0; k <= {B}; ++k) {
            const bf_u128 z = (bf_u128)w[i + k] + dt[k] + cy;
            w[i + k] = (u64)z;
            cy = (u64)(z >> 64);
          }
          w[i + {B} + 1] += cy;
        }
        qb[i] = qh;
      }
      // u[b..=j + {m}] -= Q {d}: column b + k takes qb[i] {d}[k - i] (dp[i]).
      u64 c[{B}], dp[{B}], bo = 0ull;
      #pragma unroll
      for (int i = 0; i < {B}; ++i) c[i] = dp[i] = 0ull;
      #pragma unroll 2
      for (int k = 0; k < {m} + {B}; ++k) {
        #pragma unroll
        for (int i = {B1}; i > 0; --i) dp[i] = dp[i - 1];
        dp[0] = k < {m} ? {d}[k] : 0ull;
        u64 lo = 0ull;
        #pragma unroll
        for (int i = 0; i < {B}; ++i) {
          const bf_u128 x = (bf_u128)qb[i] * dp[i] + c[i] + lo;
          c[i] = (u64)(x >> 64);
          lo = (u64)x;
        }
        const u64 x = u[b + k];
        const u64 z = x - lo;
        const u64 b1 = (u64)(x < lo);
        u[b + k] = z - bo;
        bo = b1 | (u64)(z < bo);
      }
      #pragma unroll 1
      while (bo != 0ull) {
        // Negative: {d} back in, Q one less, until the carry out of the top limb.
        u64 br = 1ull;
        #pragma unroll
        for (int i = 0; i < {B}; ++i) {
          const u64 was = qb[i];
          qb[i] = was - br;
          br = (u64)(was < br);
        }
        u64 cy = 0ull;
        #pragma unroll 2
        for (int k = 0; k < {m} + {B}; ++k) {
          const bf_u128 z = (bf_u128)u[b + k] + (k < {m} ? {d}[k] : 0ull) + cy;
          u[b + k] = (u64)z;
          cy = (u64)(z >> 64);
        }
        bo = cy ^ 1ull;
      }
      #pragma unroll 1
      for (;;) {
        // At or above {d}: {d} out again, Q one more (compared from the top limb down).
        bool above = false, decided = false;
        #pragma unroll 1
        for (int k = {m} + {B1}; k >= 0 && !decided; --k) {
          const u64 dk = k < {m} ? {d}[k] : 0ull;
          if (u[b + k] != dk) {
            above = u[b + k] > dk;
            decided = true;
          }
        }
        if (decided && !above) break;
        u64 cy = 1ull;
        #pragma unroll
        for (int i = 0; i < {B}; ++i) {
          qb[i] += cy;
          cy = (u64)(qb[i] < cy);
        }
        u64 br = 0ull;
        #pragma unroll 2
        for (int k = 0; k < {m} + {B}; ++k) {
          const u64 x = u[b + k], dk = k < {m} ? {d}[k] : 0ull;
          const u64 z = x - dk;
          const u64 b1 = (u64)(x < dk);
          u[b + k] = z - br;
          br = b1 | (u64)(z < br);
        }
      }
{store}      j -= {B};
      continue;
    }
  }
"#;

/// Rows `j` and `j - 1` at once, inside the rows' loop ([`limb_rows`]): row `j`'s limb `qh1`;
/// the top four limbs of `u - qh1 d 2^(64 j)` from the top limbs alone (what the limbs below
/// take is less than one unit of the lowest of them); where the top one is zero (`qh1` was the
/// limb) and the lowest is not (nothing below reaches the three above), row `j - 1`'s estimate
/// `qh0` from them, else the rows one at a time. Then the window `u[j - 1..=j + m]` minus
/// `(qh1 2^64 + qh0) d` in one pass, two products a divisor limb (`x` one limb down, `y` the
/// other's column; each sum fits 128 bits), and corrections until what is left lies in
/// `[0, d)`: `d` added back while negative (`qh0` is the limb or up to two above it: the
/// estimate grows with the window, and the limbs read are at or above the true ones), and
/// subtracted while not below it, which no estimate here needs but keeps the pass exact.
const LIMB_PAIR: &str = r#"  if (j >= 1 && {m} >= 3) {
    const u64 qh1 = bf_estimate64(u[j + {m}], u[j + {m} - 1], u[j + {m} - 2], d1, d0, v);
    const bf_u128 e0 = (bf_u128)qh1 * {d}[{m} - 3];
    const bf_u128 e1 = (bf_u128)qh1 * d0 + (u64)(e0 >> 64);
    const bf_u128 e2 = (bf_u128)qh1 * d1 + (u64)(e1 >> 64);
    const u64 w0 = u[j + {m} - 3], w1 = u[j + {m} - 2], w2 = u[j + {m} - 1], w3 = u[j + {m}];
    const u64 s0 = (u64)e0, s1 = (u64)e1, s2 = (u64)e2, s3 = (u64)(e2 >> 64);
    const u64 a0 = w0 - s0;
    u64 br = (u64)(w0 < s0);
    const u64 x1 = w1 - s1, a1 = x1 - br;
    br = (u64)(w1 < s1) | (u64)(x1 < br);
    const u64 x2 = w2 - s2, a2 = x2 - br;
    br = (u64)(w2 < s2) | (u64)(x2 < br);
    const u64 x3 = w3 - s3, a3 = x3 - br;
    br = (u64)(w3 < s3) | (u64)(x3 < br);
    if (a3 == 0ull && br == 0ull && a0 != 0ull) {
      const u64 qh0 = bf_estimate64(a2, a1, a0, d1, d0, v);
      // u[j - 1..=j + {m}] -= (qh1 2^64 + qh0) {d}.
      u64 c0 = 0ull, c1 = 0ull, bo = 0ull, dp = 0ull;
      #pragma unroll 2
      for (int k = 0; k < {m}; ++k) {
        const u64 dk = {d}[k];
        const bf_u128 x = (bf_u128)qh0 * dk + c0;
        const bf_u128 y = (bf_u128)qh1 * dp + c1 + (u64)x;
        c0 = (u64)(x >> 64);
        c1 = (u64)(y >> 64);
        dp = dk;
        const u64 w = u[j - 1 + k], lo = (u64)y;
        const u64 z = w - lo;
        const u64 b1 = (u64)(w < lo);
        u[j - 1 + k] = z - bo;
        bo = b1 | (u64)(z < bo);
      }
      {
        const bf_u128 y = (bf_u128)qh1 * dp + c1 + c0;
        const u64 w = u[j - 1 + {m}], lo = (u64)y;
        const u64 z = w - lo;
        const u64 b1 = (u64)(w < lo);
        u[j - 1 + {m}] = z - bo;
        bo = b1 | (u64)(z < bo);
        const u64 wt = u[j + {m}], hi = (u64)(y >> 64);
        const u64 zt = wt - hi;
        const u64 bt = (u64)(wt < hi);
        u[j + {m}] = zt - bo;
        bo = bt | (u64)(zt < bo);
      }
      u64 qq1 = qh1, qq0 = qh0;
      #pragma unroll 1
      while (bo != 0ull) {
        // Negative: {d} back in, the quotient one less, until the carry out of the top limb.
        qq1 -= (u64)(qq0 == 0ull);
        qq0 -= 1ull;
        u64 cy = 0ull;
        #pragma unroll 2
        for (int k = 0; k < {m}; ++k) {
          const bf_u128 z = (bf_u128)u[j - 1 + k] + {d}[k] + cy;
          u[j - 1 + k] = (u64)z;
          cy = (u64)(z >> 64);
        }
        const u64 z1 = u[j - 1 + {m}] + cy;
        cy = (u64)(z1 < cy);
        u[j - 1 + {m}] = z1;
        const u64 z2 = u[j + {m}] + cy;
        cy = (u64)(z2 < cy);
        u[j + {m}] = z2;
        bo = cy ^ 1ull;
      }
      #pragma unroll 1
      for (;;) {
        // At or above {d}: {d} out again, the quotient one more (compared from the top limb down).
        // qh0 is not below the limb (the estimate grows with the window, and the limbs read are
        // at or above the true ones), so this only keeps the pass exact for any estimate.
        bool above = u[j + {m}] != 0ull || u[j - 1 + {m}] != 0ull;
        if (!above) {
          above = true;
          #pragma unroll 1
          for (int k = {m} - 1; k >= 0; --k) {
            if (u[j - 1 + k] != {d}[k]) {
              above = u[j - 1 + k] > {d}[k];
              break;
            }
          }
        }
        if (!above) break;
        qq0 += 1ull;
        qq1 += (u64)(qq0 == 0ull);
        u64 b = 0ull;
        #pragma unroll 2
        for (int k = 0; k < {m}; ++k) {
          const u64 w = u[j - 1 + k], dk = {d}[k];
          const u64 z = w - dk;
          const u64 b1 = (u64)(w < dk);
          u[j - 1 + k] = z - b;
          b = b1 | (u64)(z < b);
        }
        const u64 wm = u[j - 1 + {m}];
        u[j - 1 + {m}] = wm - b;
        u[j + {m}] -= (u64)(wm < b);
      }
{store}      j -= 2;
      continue;
    }
  }
"#;

/// The widest divisor (32-bit words) whose words and window the function holds in registers
/// ([`crate::divide::MAX_REGISTER_DIVISOR_BITS`]). Wider divisors divide in local memory
/// ([`in_memory`]).
const MAX_REGISTER_WORDS: usize = (crate::divide::MAX_REGISTER_DIVISOR_BITS / 32) as usize;

impl Parts {
    /// `text` where the quotient is read, nothing otherwise.
    fn q(self, text: &str) -> &str {
        if self.quotient {
            text
        } else {
            ""
        }
    }

    /// `text` where the remainder is read, nothing otherwise.
    fn r(self, text: &str) -> &str {
        if self.remainder {
            text
        } else {
            ""
        }
    }
}

/// `(a / b, a % b)` of an `na`-word `a` by an `mb`-word `b` (32-bit words, both even) on 64-bit
/// limbs: the function [`Parts::name`]`(u64* out, const u64* a, const u64* b)` computes the
/// `parts` read and writes them one after the other, the quotient's `na / 2` limbs first (the
/// remainder's `mb / 2` at [`Parts::remainder_at`]). Division by zero gives all ones and `a`
/// modulo `2^(32 mb)` ([`bigfuse_core::Op::BigDiv`], [`bigfuse_core::Op::BigRem`]).
pub(crate) fn div_rem_functions(na: usize, mb: usize, parts: Parts) -> Vec<(String, String)> {
    assert!(
        na >= 2 && mb >= 2 && na.is_multiple_of(2) && mb.is_multiple_of(2),
        "whole 64-bit limbs"
    );
    if mb > MAX_REGISTER_WORDS {
        return vec![in_memory(na, mb, parts, false)];
    }
    let name = parts.name(na, mb);
    let row = both_targets(&row_chains(mb), "    ");
    let products: String = (0..mb)
        .map(|k| format!("const u64 p{k} = (u64)qh * (u64)d[{k}]; "))
        .collect();
    // The remainder's words w[1..=mb] shifted down by bs, the word above the top one zero.
    let above = |k: usize| {
        if k <= mb {
            format!("w[{k}]")
        } else {
            "0u".into()
        }
    };
    let in_registers: String = (0..mb / 2)
        .map(|k| {
            format!(
                "    out[{}] = ((u64)__funnelshift_r({}, {}, bs) << 32) | (u64)__funnelshift_r({}, {}, bs);\n",
                parts.remainder_at(na) + k,
                above(2 * k + 2),
                above(2 * k + 3),
                above(2 * k + 1),
                above(2 * k + 2)
            )
        })
        .collect();
    let rat = parts.remainder_at(na);
    let r_out = format!(
        r#"  // The remainder (w[1..{mb}]) shifted back down by 32 ws + bs bits: in registers for a divisor
  // of full width, else through a copy read at run-time offsets.
  if (ws == 0) {{
{in_registers}  }} else {{
    u32 rl[{mb2}];
    #pragma unroll
    for (int k = 0; k < {mb}; ++k) {{ rl[k] = w[k + 1]; rl[{mb} + k] = 0u; }}
    #pragma unroll
    for (int k = 0; k < {mbh}; ++k) {{
      const u32 lo = __funnelshift_r(rl[2 * k + ws], rl[2 * k + ws + 1], bs);
      const u32 hi = __funnelshift_r(rl[2 * k + 1 + ws], rl[2 * k + ws + 2], bs);
      out[{rat} + k] = ((u64)hi << 32) | (u64)lo;
    }}
  }}
"#,
        mb2 = 2 * mb,
        mbh = mb / 2,
    );
    let text = format!(
        r#"// q = a / b, r = a % b of a {n}-bit a by a {m}-bit b, one thread: Knuth's Algorithm D on 32-bit
// words, one quotient word per row from the dividend's top word down. b = 0 gives q = 2^{n} - 1
// and r = a mod 2^{m}.
static __device__ __forceinline__ void {name}(u64* out, const u64* a64, const u64* b64) {{
{short}  u32 d[{mb}];
  #pragma unroll
  for (int j = 0; j < {mbh}; ++j) {{ d[2 * j] = (u32)b64[j]; d[2 * j + 1] = (u32)(b64[j] >> 32); }}
  int top = -1;
  u32 bt = 0u;
  #pragma unroll
  for (int j = 0; j < {mb}; ++j) if (d[j] != 0u) {{ top = j; bt = d[j]; }}
  if (top < 0) {{
{by_zero}    return;
  }}
  // The shift that sets the divisor's top bit: ws words and bs bits.
  const int ws = {mb1} - top;
  const u32 bs = (u32)__clz((int)bt);
  // d = b << (32 ws + bs). A divisor of full width (ws = 0, the common case) shifts in
  // registers; a shorter one is read at run-time offsets from a copy with {mb} zero words below.
  if (ws == 0) {{
    #pragma unroll
    for (int j = {mb1}; j > 0; --j) d[j] = __funnelshift_l(d[j - 1], d[j], bs);
    d[0] <<= bs;
  }} else {{
    u32 bl[{mb2}];
    #pragma unroll
    for (int j = 0; j < {mb}; ++j) {{ bl[j] = 0u; bl[{mb} + j] = d[j]; }}
    #pragma unroll
    for (int j = 0; j < {mb}; ++j) d[j] = __funnelshift_l(bl[{mb} + j - ws - 1], bl[{mb} + j - ws], bs);
  }}
  // The dividend shifted alike, u = a << (32 ws + bs) ({nu} words), word i read as U(i) from a copy
  // of a with {mb} zero words on either side.
  u32 al[{alen}];
  int ta = -1;
  #pragma unroll
  for (int j = 0; j < {mb}; ++j) {{ al[j] = 0u; al[{mb} + {na} + j] = 0u; }}
  #pragma unroll
  for (int j = 0; j < {na}; ++j) {{
    const u32 x = (u32)(a64[j / 2] >> (32 * (j % 2)));
    al[{mb} + j] = x;
    if (x != 0u) ta = j;
  }}
#define U(i) __funnelshift_l(al[{mb} + (i) - ws - 1], al[{mb} + (i) - ws], bs)
  // u's top word is ta + ws + 1 or the one below; the rows below it that reach it start here.
  int t = ta + ws + 1;
  if (U(t) == 0u) t -= 1;
  int j0 = t - {mb1};
  j0 = j0 < 0 ? 0 : (j0 > {na1} ? {na1} : j0);
  u32 w[{mb} + 1];
  #pragma unroll
  for (int k = 0; k <= {mb}; ++k) w[k] = U(j0 + k);
{qa}  const u32 d1 = d[{mb1}], d0 = d[{mb2m}];
  // floor((2^64 - 1) / d1) - 2^32: the reciprocal of the divisor's top word.
  const u32 v = (u32)(~0ull / (u64)d1);
  #pragma unroll 1
  for (int j = j0; j >= 0; --j) {{
    const u32 n2 = w[{mb}], n1 = w[{mb1}], n0 = w[{mb2m}];
{estimate}    // w -= qh d; negative when qh was one above.
    {products}
    u32 ba, bb;
{row}
    if ((ba | bb) != 0u) {{
      qh -= 1u;
      u32 cy = 0u;
      #pragma unroll
      for (int k = 0; k < {mb}; ++k) {{
        const u64 s = (u64)w[k] + (u64)d[k] + (u64)cy;
        w[k] = (u32)s;
        cy = (u32)(s >> 32);
      }}
    }}
{qa_j}    // The window moves up a word: the remainder's {mb} words, the dividend's next word below.
    #pragma unroll
    for (int k = {mb}; k > 0; --k) w[k] = w[k - 1];
    w[0] = j > 0 ? U(j - 1) : 0u;
  }}
#undef U
{q_out}{r_out}}}
"#,
        n = 32 * na,
        estimate = ESTIMATE,
        m = 32 * mb,
        mbh = mb / 2,
        mb1 = mb - 1,
        mb2 = 2 * mb,
        mb2m = mb - 2,
        na1 = na - 1,
        nu = na + mb,
        alen = na + 2 * mb,
        short = short_quotient(na, mb, parts, "#pragma unroll", false, false),
        by_zero = by_zero(na, mb, parts, "#pragma unroll"),
        qa = quotient_words(na, parts, "#pragma unroll"),
        qa_j = parts.q("    qa[j] = qh;\n"),
        q_out = parts.q(&quotient_out(na, "#pragma unroll")),
        r_out = parts.r(&r_out),
    );
    vec![(name, text)]
}

/// The same division for divisors too wide for registers: Knuth's Algorithm D in place on the
/// shifted dividend on 64-bit limbs ([`limb_rows`]: half the rows and columns of 32-bit words, a
/// quarter of the loads and stores, as the square root measured), every array in local memory,
/// the rows' limb loops rolled (a few unrolled steps each), so that the text stays small at any
/// width.
fn in_memory(na: usize, mb: usize, parts: Parts, warp: bool) -> (String, String) {
    in_memory_rows(na, mb, parts, warp, DIVISION_ROWS_A_PASS)
}

/// Rows a pass of the division in local memory ([`limb_rows`]'s `block`): none, so two.
/// Blocks of 4 and 8 rows (the root's) made the whole division of a 2 BITS-bit dividend at 4096
/// bits slower, 0.0594 and 0.0640 G/s against 0.0696 (NVIDIA H200, bench/RESULTS.md
/// 2026-11-29, twenty-sixth session). That kernel holds the dividend in 255 registers; its
/// local memory stayed 5,696 bytes with the blocks, and why they lose there was not profiled.
const DIVISION_ROWS_A_PASS: Option<usize> = None;

/// [`in_memory`] with `block` rows a pass.
fn in_memory_rows(
    na: usize,
    mb: usize,
    parts: Parts,
    warp: bool,
    block: Option<usize>,
) -> (String, String) {
    let name = if warp {
        format!("{}_w", parts.name(na, mb))
    } else {
        parts.name(na, mb)
    };
    let (ret, done) = if warp {
        ("bool", " false")
    } else {
        ("void", "")
    };
    let (nl, ml) = (na / 2, mb / 2);
    let rat = parts.remainder_at(na);
    let r_out = format!(
        r#"  // The remainder u[0..{ml}] shifted back down by 64 ws + bs bits (the limbs above are zero).
  #pragma unroll 1
  for (int k = 0; k < {ml}; ++k) {{
    const int i = k + ws;
    const u64 lo = i < {ml} ? u[i] : 0ull;
    const u64 hi = i + 1 < {ml} ? u[i + 1] : 0ull;
    out[{rat} + k] = bs == 0 ? lo : (lo >> bs) | (hi << (64 - bs));
  }}
"#
    );
    let (q_words, q_out) = if parts.quotient {
        (
            format!("  u64 qa[{nl}];\n  #pragma unroll 1\n  for (int j = 0; j < {nl}; ++j) qa[j] = 0ull;\n"),
            format!("  #pragma unroll 1\n  for (int j = 0; j < {nl}; ++j) out[j] = qa[j];\n"),
        )
    } else {
        (String::new(), String::new())
    };
    let (d0, n0) = if ml >= 2 {
        (format!("d[{}]", ml - 2), format!("u[j + {}]", ml - 2))
    } else {
        ("0ull".to_string(), "0ull".to_string())
    };
    let text = format!(
        r#"typedef unsigned __int128 bf_u128;
{estimate}// q = a / b, r = a % b of a {n}-bit a by a {m}-bit b, one thread: Knuth's Algorithm D on 64-bit
// limbs in place on the shifted dividend, in local memory. b = 0 gives q = 2^{n} - 1 and
// r = a mod 2^{m}.{warp_doc}
static __device__ __forceinline__ {ret} {name}(u64* out, const u64* a64, const u64* b64{qw}) {{
{short}  u64 d[{ml}];
  int top = -1;
  u64 bt = 0ull;
  #pragma unroll 1
  for (int j = 0; j < {ml}; ++j) {{
    d[j] = b64[j];
    if (d[j] != 0ull) {{ top = j; bt = d[j]; }}
  }}
  if (top < 0) {{
{by_zero}    return{done};
  }}
  const int ws = {ml1} - top;
  const int bs = __clzll((long long)bt);
  // d = b << (64 ws + bs), in place from the top (each limb reads limbs at or below it).
  #pragma unroll 1
  for (int j = {ml1}; j >= 0; --j) {{
    const u64 hi = j - ws >= 0 ? d[j - ws] : 0ull;
    const u64 lo = j - ws - 1 >= 0 ? d[j - ws - 1] : 0ull;
    d[j] = bs == 0 ? hi : (hi << bs) | (lo >> (64 - bs));
  }}
  // u = a << (64 ws + bs): {nu} limbs and a zero limb above.
  u64 u[{nu} + 1];
  int t = -1;
  #pragma unroll 1
  for (int i = 0; i <= {nu}; ++i) {{
    const int k = i - ws;
    const u64 hi = k >= 0 && k < {nl} ? a64[k] : 0ull;
    const u64 lo = k - 1 >= 0 && k - 1 < {nl} ? a64[k - 1] : 0ull;
    u[i] = bs == 0 ? hi : (hi << bs) | (lo >> (64 - bs));
    if (u[i] != 0ull) t = i;
  }}
  int j0 = t - {ml1};
  j0 = j0 < 0 ? 0 : (j0 > {nl1} ? {nl1} : j0);
{q_words}  const u64 d1 = d[{ml1}], d0 = {d0};
  // floor((2^128 - 1) / d1) - 2^64: the reciprocal of the divisor's top limb.
  const u64 v = (u64)(~(bf_u128)0 / d1);
{rows}{q_out}{r_out}{end}}}
"#,
        warp_doc = if warp {
            format!("\n// True where the quotient has one word: *qw holds it, and the warp writes it with the zeros\n// above (bf_warp_quotients_{}); otherwise the quotient is in out.", na / 2)
        } else {
            String::new()
        },
        qw = if warp { ", u32* qw" } else { "" },
        end = if warp { "  return false;\n" } else { "" },
        n = 32 * na,
        m = 32 * mb,
        ml1 = ml - 1,
        nl1 = nl - 1,
        nu = nl + ml,
        short = short_quotient(na, mb, parts, "#pragma unroll 4", true, warp),
        by_zero = by_zero(na, mb, parts, "#pragma unroll 1"),
        estimate = LIMB_ESTIMATE,
        rows = limb_rows(
            "d",
            &ml.to_string(),
            &n0,
            "j0",
            parts.quotient.then_some("qa"),
            block,
            "  "
        ),
        r_out = parts.r(&r_out),
    );
    (name, text)
}

/// Whether a division that writes its quotient alone into the kernel's result (one thread an
/// instance, consecutive instances in a warp's lanes) leaves the writing of a one-word quotient
/// (its short path, operands of one width) to the warp: the warp writes its lanes' quotients,
/// word and zeros, side by side ([`warp_quotients_function`]). Each thread's quotient lies a
/// whole quotient from its neighbour's, so the thread's own 16-byte stores of them took a sector
/// of 32 lines each. Whole sectors matter too: where each thread wrote its word and the warp the
/// zeros above it, the first 32-byte sector of each quotient was written in two halves at
/// different times, and `a / b` at 32768 bits ran 0.642 G/s against 0.895 with whole sectors
/// (H200, the generated kernel timed alone; a pure write of the same bytes 3,994 GB/s,
/// bench/RESULTS.md 2026-11-29, twenty-fourth session).
fn warp_quotients(na: usize, mb: usize, parts: Parts) -> bool {
    parts.quotient
        && !parts.remainder
        && mb > MAX_REGISTER_WORDS
        && na <= mb
        && (na / 2).is_multiple_of(2)
        && (mb / 2).is_multiple_of(2)
}

/// The warp's one-word quotients of `nah` limbs (those whose lane's bit `mask` sets, from the
/// warp's first instance's quotient at `out`; each lane's word `q`), 512 contiguous bytes a
/// store: every lane takes part in each shuffle.
fn warp_quotients_function(nah: usize) -> (String, String) {
    let name = format!("bf_warp_quotients_{nah}");
    let h = nah / 2;
    let text = format!(
        r#"// The one-word quotients of the warp's lanes set in mask (lane k's word q at limb 0 of quotient k,
// zeros above): the warp's 16-byte stores side by side, whole sectors.
static __device__ __forceinline__ void {name}(u64* out, const u32 lane, const u32 mask, const u32 q) {{
  ulonglong2* q2 = reinterpret_cast<ulonglong2*>(out);
  #pragma unroll 4
  for (u32 x = lane; x < {total}u; x += 32u) {{
    const u32 k = x / {h}u;
    const u32 qk = __shfl_sync(0xffffffffu, q, k, 32);
    if (((mask >> k) & 1u) != 0u) q2[x] = make_ulonglong2(x % {h}u == 0u ? (u64)qk : 0ull, 0ull);
  }}
}}
"#,
        total = 32 * h
    );
    (name, text)
}

/// The words of division by zero, all ones and `a mod 2^(32 mb)`, where `parts` reads them.
fn by_zero(na: usize, mb: usize, parts: Parts, unroll: &str) -> String {
    let (nah, mbh, rat) = (na / 2, mb / 2, parts.remainder_at(na));
    let q = format!("    {unroll}\n    for (int j = 0; j < {nah}; ++j) out[j] = ~0ull;\n");
    let r = format!(
        "    {unroll}\n    for (int j = 0; j < {mbh}; ++j) out[{rat} + j] = j < {nah} ? a64[j] : 0ull;\n"
    );
    format!("{}{}", parts.q(&q), parts.r(&r))
}

/// The quotient's 32-bit words `qa`, zero until a row sets one, where `parts` reads it.
fn quotient_words(na: usize, parts: Parts, unroll: &str) -> String {
    parts
        .q(&format!(
            "  u32 qa[{na}];\n  {unroll}\n  for (int j = 0; j < {na}; ++j) qa[j] = 0u;\n"
        ))
        .to_string()
}

/// The quotient's limbs from its words `qa`.
fn quotient_out(na: usize, unroll: &str) -> String {
    format!(
        "  {unroll}\n  for (int j = 0; j < {nah}; ++j) out[j] = ((u64)qa[2 * j + 1] << 32) | (u64)qa[2 * j];\n",
        nah = na / 2
    )
}

/// Limbs of each operand the in-memory short path loads at once at most: a 128-byte line (the
/// widest even count that divides the operand's limbs).
const BURST_WORDS: usize = 16;

/// The path of a quotient of one word, first in both forms where the dividend is no wider than
/// the divisor (`a / b` of one width; a dividend twice as wide, a product reduced modulo `m`,
/// rarely has one): a divisor of full width (its top word is not zero) gives
/// `a / b < 2^(32 m) / 2^(32 (m - 1))`. One row: the estimate from the window `u[0..=m]` of the
/// shifted dividend (its top word what the shift lifts out of `a`; `u[1..=m] < d` since the
/// quotient has one word) and the normalized divisor's top words, then `r = a - qh b` on the
/// operands as they are, 64 bits a step, and `b` added back once where that went negative (a
/// quotient read alone needs only the sign of `r`, read from the top limbs down:
/// [`sign_from_the_top`]). No
/// shifted copy of the dividend, no normalized divisor, no window, no shift of the remainder back
/// down: where the general path moves every word through local memory several times, this reads
/// each operand once. Every instance with a divisor of full width takes it, so a warp of such
/// operands does not run both paths. `unroll` is the word loops' pragma; with `vectors` the
/// operands are read in 16-byte loads (their arrays are 16-byte aligned: parameters in global
/// memory, [`Emitter::device_call`]'s copies), half the loads of a division bound by its memory
/// accesses, in bursts of up to [`BURST_WORDS`] limbs of each. With `warp` (the function that
/// leaves the writing of a one-word quotient to the warp, [`warp_quotients`]) it writes nothing,
/// sets `*qw` to the word and returns true.
fn short_quotient(
    na: usize,
    mb: usize,
    parts: Parts,
    unroll: &str,
    vectors: bool,
    warp: bool,
) -> String {
    if na > mb {
        return String::new();
    }
    let (nah, mbh, rat) = (na / 2, mb / 2, parts.remainder_at(na));
    let add_back = format!(
        r#"        u64 cy = 0ull;
        {unroll}
        for (int k = 0; k < {mbh}; ++k) {{
          const u64 x = out[{rat} + k] + b64[k];
          const u64 y = x + cy;
          cy = (u64)(x < b64[k]) | (u64)(y < x);
          out[{rat} + k] = y;
        }}
"#
    );
    // Two limbs at a time in 16-byte accesses where they come so (aligned arrays: parameters in
    // global memory, the kernel's results, [`Emitter::device_call`]'s arrays).
    let vectors = vectors && nah % 2 == 0 && mbh % 2 == 0;
    let q_out = if warp {
        "      *qw = qh;\n".to_string()
    } else if vectors {
        format!(
            r#"      ulonglong2* q2 = reinterpret_cast<ulonglong2*>(out);
      q2[0] = make_ulonglong2((u64)qh, 0ull);
      {unroll}
      for (int j = 1; j < {nah2}; ++j) q2[j] = make_ulonglong2(0ull, 0ull);
"#,
            nah2 = nah / 2
        )
    } else {
        format!(
            "      out[0] = (u64)qh;\n      {unroll}\n      for (int j = 1; j < {nah}; ++j) out[j] = 0ull;\n"
        )
    };
    let step = |indent: &str, r_to: &str| row_step(parts, indent, r_to);
    let row = if !parts.remainder {
        sign_from_the_top(na, mb, unroll)
    } else if vectors {
        // A burst of BURST_WORDS limbs of each operand loaded back to back (a 128-byte line of
        // each), then their steps: a warp's 16-byte loads lie a whole operand apart, and loaded
        // in pieces across the steps, the lines left L1 before the next piece came (issue 17).
        let burst = (1..=BURST_WORDS / 2)
            .rev()
            .map(|h| 2 * h)
            .find(|b| mbh % b == 0)
            .unwrap_or(2);
        let bh = burst / 2;
        format!(
            r#"      // r = a - qh b (a has no words at or above b's length here), 64 bits a step.
      u64 c = 0ull, bo = 0ull;
      #pragma unroll 1
      for (int k0 = 0; k0 < {mbh}; k0 += {burst}) {{
        ulonglong2 b2[{bh}], a2[{bh}];
        #pragma unroll
        for (int e = 0; e < {bh}; ++e) {{
          b2[e] = reinterpret_cast<const ulonglong2*>(b64)[k0 / 2 + e];
          a2[e] = k0 + 2 * e < {nah} ? reinterpret_cast<const ulonglong2*>(a64)[k0 / 2 + e] : make_ulonglong2(0ull, 0ull);
        }}
{r2}        #pragma unroll
        for (int e = 0; e < {burst}; ++e) {{
          const u64 bk = e % 2 == 0 ? b2[e / 2].x : b2[e / 2].y;
          const u64 ak = e % 2 == 0 ? a2[e / 2].x : a2[e / 2].y;
{step}        }}
{r2_out}      }}
"#,
            r2 = parts.r(&format!("        u64 r2[{burst}];\n")),
            step = step("          ", "r2[e]"),
            r2_out = parts.r(&format!(
                "        #pragma unroll\n        for (int e = 0; e < {bh}; ++e) reinterpret_cast<ulonglong2*>(out + {rat})[k0 / 2 + e] = make_ulonglong2(r2[2 * e], r2[2 * e + 1]);\n"
            )),
        )
    } else {
        format!(
            r#"      // r = a - qh b (a has no words at or above b's length here), 64 bits a step.
      u64 c = 0ull, bo = 0ull;
      {unroll}
      for (int k = 0; k < {mbh}; ++k) {{
        const u64 bk = b64[k];
        const u64 ak = k < {nah} ? a64[k] : 0ull;
{step}      }}
"#,
            step = step("        ", &format!("out[{rat} + k]")),
        )
    };
    format!(
        r#"  // A quotient of one word (the common case for operands of one width; see short_quotient).
  if ((u32)(b64[{mbh1}] >> 32) != 0u) {{
    {{
{estimate}{row}      // Negative (qh one above): {back}.
      if ({negative}) {{
        qh -= 1u;
{add_back}      }}
{q_out}      return{ret};
    }}
  }}
"#,
        ret = if warp { " true" } else { "" },
        negative = if parts.remainder {
            "(c | bo) != 0ull"
        } else {
            "negative"
        },
        back = if parts.remainder {
            "b goes back in"
        } else {
            "the quotient is one less"
        },
        add_back = parts.r(&add_back),
        q_out = parts.q(&q_out),
        mbh1 = mb / 2 - 1,
        estimate = one_word_estimate(na, mb),
    )
}

/// Whether `a - qh b` is negative (`negative`), for a quotient read alone: from the top limbs
/// down, stopping where the limbs below cannot change the sign. The limbs below limb `k` add less
/// than `2^(64 k)` and take less than `qh 2^(64 k)` (`qh < 2^32`), so a difference `s` of the
/// limbs from `k` up at or above `qh` leaves the whole positive, and one below zero leaves it
/// negative. Operands of random words decide at the top limb, so a quotient alone reads a few
/// bytes of each operand where the whole row read both (and `a / b` of one width moved three
/// numbers for one); only operands that agree with `qh b` in their top 64 bits and more read on.
/// `s` stays below `2^97` in magnitude: 128-bit words, the sign their top bit.
fn sign_from_the_top(na: usize, mb: usize, unroll: &str) -> String {
    format!(
        r#"      // The sign of r = a - qh b from the top limb down, as far as the limbs below could change it.
      bool negative = false;
      {{
        unsigned __int128 s = 0;
        {unroll}
        for (int k = {mbh1}; k >= 0; --k) {{
          const u64 ak = {ak};
          s = (s << 64) + ak - (unsigned __int128)qh * b64[k];
          negative = (u64)(s >> 64) >> 63 != 0ull;
          if (negative || s >= (unsigned __int128)qh) break;
        }}
      }}
"#,
        mbh1 = mb / 2 - 1,
        ak = if na < mb {
            format!("k < {} ? a64[k] : 0ull", na / 2)
        } else {
            "a64[k]".to_string()
        },
    )
}

/// The one-word quotient's estimate `qh` of `a / b` (`a64` of `na` words no wider than `b64` of
/// `mb`, `b`'s top word not zero): the quotient or one above it.
fn one_word_estimate(na: usize, mb: usize) -> String {
    // Word j of an operand (`a64` of `na` words, `b64` of `mb`) as a C expression, zero outside.
    let word = |array: &str, len: usize, j: isize| {
        if j >= 0 && (j as usize) < len {
            format!("(u32)({array}[{}] >> {})", j / 2, 32 * (j % 2))
        } else {
            "0u".to_string()
        }
    };
    // Word j of the operand shifted up by bs bits.
    let shifted = |array: &str, len: usize, j: isize| {
        format!(
            "__funnelshift_l({}, {}, bs)",
            word(array, len, j - 1),
            word(array, len, j)
        )
    };
    let m = mb as isize;
    format!(
        r#"      // The top words of d = b << bs, b's top word being its top one.
      const u32 bs = (u32)__clz((int)(u32)(b64[{mbh1}] >> 32));
      const u32 d1 = {d1}, d0 = {d0};
      const u32 v = (u32)(~0ull / (u64)d1);
      // The window u[0..{mb}] of u = a << bs: its top word is what the shift lifts out of a.
      const u32 n2 = bs == 0u ? 0u : ({top} >> (32u - bs)), n1 = {n1}, n0 = {n0};
{estimate}"#,
        mbh1 = mb / 2 - 1,
        top = word("a64", na, m - 1),
        n1 = shifted("a64", na, m - 1),
        n0 = shifted("a64", na, m - 2),
        d1 = shifted("b64", mb, m - 1),
        d0 = shifted("b64", mb, m - 2),
        estimate = ESTIMATE
            .replace("\n    ", "\n      ")
            .replacen("    ", "      ", 1),
    )
}

/// One step of `r = a - qh b` on 64-bit limbs: `bk`, `ak` in, the borrow `bo` and the product's
/// carry `c` on, the remainder's limb to `r_to` where `parts` reads it.
fn row_step(parts: Parts, indent: &str, r_to: &str) -> String {
    let mut lines: Vec<String> = [
        "const u64 lo = (u64)qh * (u64)(u32)bk + c;",
        "const u64 hi = (u64)qh * (u64)(u32)(bk >> 32) + (lo >> 32);",
        "c = hi >> 32;",
        "const u64 p = (hi << 32) | (u64)(u32)lo;",
        "const u64 x = ak - p;",
    ]
    .map(String::from)
    .to_vec();
    if parts.remainder {
        lines.push(format!("{r_to} = x - bo;"));
    }
    lines.push("bo = (u64)(ak < p) | (u64)(x < bo);".into());
    lines
        .iter()
        .map(|l| format!("{indent}{l}\n"))
        .collect::<String>()
}

/// The carry chains of a row, `w -= qh d` with each word product `qh d[k]` a 64-bit `pk`
/// (one wide multiply, its halves free): the low halves subtracted from `w[0..]`, the high halves
/// from `w[1..]`, each chain with its own borrow out (`ba`, `bb`: all ones when it borrowed). The
/// difference is above `-d`, so it is negative exactly when either chain borrowed.
fn row_chains(mb: usize) -> [Vec<Step>; 2] {
    let s = |x: &str| x.to_string();
    let zero = s("0");
    let lo = |k: usize| format!("(u32)p{k}");
    let hi = |k: usize| format!("(u32)(p{k} >> 32)");
    let w = |k: usize| format!("w[{k}]");
    let mut low = vec![Step::new("sub.cc", w(0), &[w(0), lo(0)])];
    let mut high = vec![Step::new("sub.cc", w(1), &[w(1), hi(0)])];
    for k in 1..mb {
        low.push(Step::new("subc.cc", w(k), &[w(k), lo(k)]));
        high.push(Step::new("subc.cc", w(k + 1), &[w(k + 1), hi(k)]));
    }
    low.push(Step::new("subc.cc", w(mb), &[w(mb), zero.clone()]));
    low.push(Step::new("subc", "ba", &[zero.clone(), zero.clone()]));
    high.push(Step::new("subc", "bb", &[zero.clone(), zero]));
    [low, high]
}

impl Emitter<'_> {
    /// The limbs of `a / b`, then those of `a % b`, through the device function of their widths
    /// that computes the `parts` read (the others read as zero: nothing reads them). With `into`
    /// (a buffer and its words per instance: the kernel's result), the function writes its one
    /// part there (a live thread only), and nothing reads the limbs returned; a quotient of one
    /// word is written by the warp ([`warp_quotients`]).
    pub(super) fn div_rem_call(
        &mut self,
        a: &[String],
        b: &[String],
        parts: Parts,
        into: Option<(String, u64)>,
    ) -> Vec<String> {
        let (na, mb) = (2 * a.len(), 2 * b.len());
        let limbs = parts.limbs(na, mb);
        let computed = match into {
            Some((buffer, units)) => {
                self.open("{");
                let arrays = self.operand_arrays(&[a, b]);
                let args = arrays.join(", ");
                let at = format!("{buffer} + inst * {units}ull");
                let write = |em: &mut Self, (f, text): (String, String)| {
                    em.device_function(&f, |em| em.src.out.push_str(&text));
                    f
                };
                if warp_quotients(na, mb, parts) {
                    assert_eq!(units as usize, na / 2, "the result is the quotient");
                    let name = write(self, in_memory(na, mb, parts, true));
                    let fill = write(self, warp_quotients_function(na / 2));
                    self.line("u32 bf_q = 0u;");
                    self.line(format!(
                        "const bool bf_one_word = live && {name}({at}, {args}, &bf_q);"
                    ));
                    self.line(format!(
                        "{fill}({buffer} + (inst - lane) * {units}ull, lane, __ballot_sync(0xffffffffu, bf_one_word), bf_q);"
                    ));
                } else {
                    let functions = div_rem_functions(na, mb, parts);
                    let [function] = &functions[..] else {
                        unreachable!("a division written where it lies is one in memory")
                    };
                    let name = write(self, function.clone());
                    self.line(format!("if (live) {name}({at}, {args});"));
                }
                self.close("}");
                vec!["0ull".to_string(); limbs]
            }
            None => self.device_call(
                div_rem_functions(na, mb, parts),
                &parts.name(na, mb),
                limbs,
                &[a, b],
                &[],
                false,
            ),
        };
        let zero = |n: usize| vec!["0ull".to_string(); n];
        let (q, r) = computed.split_at(parts.remainder_at(na));
        let mut leaves = if parts.quotient {
            q.to_vec()
        } else {
            zero(a.len())
        };
        leaves.extend(if parts.remainder {
            r.to_vec()
        } else {
            zero(b.len())
        });
        leaves
    }
}

#[cfg(test)]
mod tests {
    use super::super::host;
    use super::*;
    use num_bigint::BigUint;
    use std::fmt::Write;

    /// Runs the function of `(na, mb)` words on the host over `cases` and checks every quotient
    /// and remainder against num-bigint.
    fn check(na: usize, mb: usize, cases: &[(BigUint, BigUint)]) {
        check_parts(na, mb, Parts::BOTH, cases);
    }

    /// The same for the function that computes `parts`, checking those (zero stands for a part
    /// not computed).
    fn check_parts(na: usize, mb: usize, parts: Parts, cases: &[(BigUint, BigUint)]) {
        check_form(na, mb, parts, false, cases)
    }

    /// With `warp`, the form that leaves the writing of a one-word quotient to the warp
    /// ([`warp_quotients`]): the harness writes it where the function says so. The result's
    /// words start as all ones, so that a word neither writes shows.
    fn check_form(na: usize, mb: usize, parts: Parts, warp: bool, cases: &[(BigUint, BigUint)]) {
        let functions = if warp {
            vec![in_memory(na, mb, parts, true)]
        } else {
            div_rem_functions(na, mb, parts)
        };
        check_functions(na, mb, parts, warp, functions, cases);
    }

    /// The same for the given `functions` (the first the division).
    fn check_functions(
        na: usize,
        mb: usize,
        parts: Parts,
        warp: bool,
        functions: Vec<(String, String)>,
        cases: &[(BigUint, BigUint)],
    ) {
        let mut src = String::from(host::PRELUDE);
        let name = functions[0].0.clone();
        for (_, text) in functions {
            src.push_str(&text);
        }
        let (ha, hb) = (na / 2, mb / 2);
        let call = if warp {
            format!("u32 q = 0u;\n    if ({name}(r, a, b, &q)) for (int j = 0; j < {ha}; ++j) r[j] = j == 0 ? (u64)q : 0ull;")
        } else {
            format!("{name}(r, a, b);")
        };
        let _ = write!(
            src,
            r#"int main() {{
  __align__(16) u64 a[{ha}], b[{hb}], r[{hr}];
  for (;;) {{
    for (int j = 0; j < {ha}; ++j) if (scanf("%llu", &a[j]) != 1) return 0;
    for (int j = 0; j < {hb}; ++j) scanf("%llu", &b[j]);
    for (int j = 0; j < {hr}; ++j) r[j] = ~0ull;
    {call}
    for (int j = 0; j < {hr}; ++j) printf("%llu ", r[j]);
    printf("\n");
  }}
}}
"#,
            hr = ha + hb
        );
        let input = host::pairs(cases, ha, hb);
        let out = host::run(&format!("{name}-{na}-{mb}"), &src, &input);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), cases.len());
        let one = BigUint::from(1u8);
        for ((x, y), line) in cases.iter().zip(lines) {
            let words: Vec<&str> = line.split_whitespace().collect();
            // The parts computed, one after the other.
            let at = parts.remainder_at(na);
            let q = host::number(&words[..at].join(" "));
            let r = host::number(&words[at..parts.limbs(na, mb)].join(" "));
            let (wq, wr) = if *y == BigUint::from(0u8) {
                ((&one << (32 * na)) - 1u8, x % (&one << (32 * mb)))
            } else {
                (x / y, x % y)
            };
            let zero = BigUint::from(0u8);
            let wq = if parts.quotient { wq } else { zero.clone() };
            let wr = if parts.remainder { wr } else { zero };
            assert_eq!((q, r), (wq, wr), "{name}: {x:#x} / {y:#x}");
        }
    }

    /// Numbers whose 32-bit words are drawn from edge words (0, 1, 2^31 - 1, 2^31, all ones) and
    /// random ones, at every length: the shapes that reach the rare corrections.
    fn cases(na: usize, mb: usize, count: usize, seed: u64) -> Vec<(BigUint, BigUint)> {
        let mut word = host::words(seed);
        let mut num = |words: usize| host::edge_number(&mut word, words);
        let mut out: Vec<(BigUint, BigUint)> = (0..count).map(|_| (num(na), num(mb))).collect();
        let b = |v: u64| BigUint::from(v);
        let one = BigUint::from(1u8);
        let all = |w: usize| (&one << (32 * w)) - 1u8;
        for (x, y) in [
            (b(0), b(0)),
            (all(na), b(0)),
            (b(0), b(7)),
            (b(5), b(7)),
            (b(7), b(7)),
            (all(na), b(1)),
            (all(na), all(mb)),
            (all(na), b(3)),
            (&one << (32 * na - 1), &one << (32 * mb - 1)),
            (all(na) - 1u8, all(mb)),
            (&one << (32 * na - 1), b(2)),
        ] {
            out.push((x, y));
        }
        // Divisors of full width (no word shift), every bit shift, with dividends of at most
        // their length: a quotient of one word (the short path), its add-back at b - 1.
        for k in 0..24usize {
            let top = &one << (32 * mb - 1 - (k * 5) % 32);
            let d = (num(mb) % &top) | &top | &one;
            let a = (num(na) | (&one << (32 * na.min(mb) - 1))) % (&one << (32 * na.min(mb)));
            if na >= mb {
                // Quotients 0..=5 at their edges: the estimate one too high at m d - 1.
                for m in 1..=5u32 {
                    let md = &d * m;
                    if md.bits() <= 32 * mb as u64 {
                        out.push((&md - 1u8, d.clone()));
                        out.push((md, d.clone()));
                    }
                }
            }
            out.push((a, d.clone()));
            out.push((all(mb.min(na)), d));
        }
        // Knuth's add-back case in this word size: u = (2^31, 0, 0 ..) by d = (2^31, 0 .., 1).
        if na > mb {
            let d = (&one << (32 * mb - 1)) + 1u8;
            out.push(((&one << (32 * (mb + 1) - 1)) - 1u8, d.clone()));
            out.push((&d * (&one << 32) - 1u8, d));
        }
        out
    }

    #[test]
    fn quotients_and_remainders_equal_num_bigint_on_the_host() {
        for (na, mb) in [
            (2, 2),
            (4, 2),
            (2, 4),
            (8, 8),
            (16, 8),
            (34, 18),
            (64, 32),
            (64, 64),
            // Divisors too wide for registers: the form in local memory.
            (132, 66),
            (256, 128),
            (100, 130),
            // The short path's bursts of operand limbs: 16, 6 and 4 limbs (a shorter dividend).
            (128, 128),
            (132, 132),
            (132, 136),
        ] {
            check(na, mb, &cases(na, mb, 400, (na * 1000 + mb) as u64));
        }
    }

    /// The rows in blocks ([`LIMB_BLOCK_ROWS`], the root's form) in the division in local
    /// memory: blocks of 2 to 16 rows, divisors of one limb more than the block (nothing cut
    /// off) and wider, a quotient of 4 rows (fewer than the wider blocks: pairs alone), the edge
    /// cases and the block's add-backs.
    #[test]
    fn rows_in_blocks_equal_num_bigint_on_the_host() {
        for block in [2usize, 3, 4, 8, 16] {
            for (na, mb) in [
                (4 * block + 4, 2 * block + 2),
                (8 * block + 8, 2 * block + 2),
                (132, 66),
                (256, 128),
                (72, 66),
            ] {
                let mut cases = cases(na, mb, 150, (block * 1000 + na) as u64);
                cases.extend(block_add_backs(na, mb, block, (block + na) as u64));
                let functions = vec![in_memory_rows(na, mb, Parts::BOTH, false, Some(block))];
                let text = &functions[0].1;
                assert!(text.contains(&format!("u64 qb[{block}]")), "{block}");
                check_functions(na, mb, Parts::BOTH, false, functions, &cases);
            }
        }
    }

    /// The functions that compute only the quotient or only the remainder: the register form,
    /// the form in local memory, each with its short path (operands of one width) and without.
    #[test]
    fn quotients_alone_and_remainders_alone_equal_num_bigint_on_the_host() {
        let quotient = Parts {
            quotient: true,
            remainder: false,
        };
        let remainder = Parts {
            quotient: false,
            remainder: true,
        };
        for (na, mb) in [
            (4, 2),
            (16, 16),
            (64, 32),
            (132, 66),
            (130, 130),
            (128, 128),
        ] {
            let mut cases = cases(na, mb, 300, (na * 7 + mb) as u64);
            if na == mb {
                cases.extend(agreeing_at_the_top(na, na as u64));
            }
            check_parts(na, mb, quotient, &cases);
            check_parts(na, mb, remainder, &cases);
        }
        // The quotient written where it lies, a one-word one left to the warp.
        for (na, mb) in [(132, 132), (128, 128), (68, 132)] {
            assert!(warp_quotients(na, mb, quotient));
            check_form(
                na,
                mb,
                quotient,
                true,
                &cases(na, mb, 300, (na * 11 + mb) as u64),
            );
        }
        assert!(!warp_quotients(256, 128, quotient) && !warp_quotients(128, 128, Parts::BOTH));
    }

    /// The quotient alone as the kernel calls it for a warp: each lane's function, which returns
    /// true and its word where the quotient has one word (its sign read from the top limbs down),
    /// then the warp's writing of those (`warp_quotients_function`, its shuffles and the ballot
    /// between host threads): a warp of 32 host threads, every case's quotient against
    /// num-bigint. The cases mix one-word quotients, longer ones, division by zero, operands
    /// equal to `qh b` in their top limbs, and lanes past the batch's end in one warp; results
    /// start as all ones. Widths 68 and 132 words: quotients of 17 and 33 16-byte words, so a
    /// store covers parts of several quotients.
    #[test]
    fn warps_of_one_word_quotients_equal_num_bigint_on_the_host() {
        let quotient = Parts {
            quotient: true,
            remainder: false,
        };
        for n in [68, 128, 132, 256] {
            assert!(warp_quotients(n, n, quotient));
            let h = n / 2;
            let mut src = String::from(host::PRELUDE);
            src.push_str(&host::group_prelude(32));
            for (_, text) in [in_memory(n, n, quotient, true), warp_quotients_function(h)] {
                src.push_str(&text);
            }
            let _ = write!(
                src,
                r#"int main() {{
  __align__(16) static u64 a[32 * {h}], b[32 * {h}], out[32 * {h}];
  std::barrier<> bar(32);
  bf_bar = &bar;
  for (;;) {{
    int live = 0;
    for (; live < 32; ++live) {{
      if (scanf("%llu", &a[live * {h}]) != 1) break;
      for (int j = 1; j < {h}; ++j) scanf("%llu", &a[live * {h} + j]);
      for (int j = 0; j < {h}; ++j) scanf("%llu", &b[live * {h} + j]);
    }}
    if (live == 0) return 0;
    for (int j = 0; j < 32 * {h}; ++j) out[j] = ~0ull;
    std::vector<std::thread> warp;
    for (u32 lane = 0; lane < 32; ++lane)
      warp.emplace_back([&, lane] {{
        bf_lane = (int)lane;
        const bool alive = (int)lane < live;
        const u64 inst = alive ? lane : 0u;
        u32 q = 0u;
        const bool one_word = alive && {name}(out + inst * {h}, a + inst * {h}, b + inst * {h}, &q);
        bf_warp_quotients_{h}(out, lane, __ballot_sync(0xffffffffu, one_word), q);
      }});
    for (auto& t : warp) t.join();
    for (int k = 0; k < live; ++k) {{
      for (int j = 0; j < {h}; ++j) printf("%llu ", out[k * {h} + j]);
      printf("\n");
    }}
  }}
}}
"#,
                name = in_memory(n, n, quotient, true).0,
            );
            // 300 cases and the ones that agree with qh b at the top: the last warp has lanes
            // past the batch's end.
            let mut cases = cases(n, n, 300, n as u64 + 5);
            cases.extend(agreeing_at_the_top(n, n as u64));
            let out = host::run(
                &format!("warp-quotients-{n}"),
                &src,
                &host::pairs(&cases, h, h),
            );
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), cases.len());
            let all = (BigUint::from(1u8) << (32 * n)) - 1u8;
            for ((x, y), line) in cases.iter().zip(lines) {
                let want = if *y == BigUint::from(0u8) {
                    all.clone()
                } else {
                    x / y
                };
                assert_eq!(host::number(line), want, "{n}: {x:#x} / {y:#x}");
            }
        }
    }

    /// Dividends `Q d + d - 1` of `na` words by divisors `d` of `mb` words whose low limbs are all
    /// ones, `Q` random above its lowest `t` limbs and all ones below (every `t`): a block of
    /// `block` rows that ends at limb `t` sees a window `Q_blk d + d - 1`, whose estimate from
    /// the top limbs is one above (its add-back).
    fn block_add_backs(na: usize, mb: usize, block: usize, seed: u64) -> Vec<(BigUint, BigUint)> {
        let one = BigUint::from(1u8);
        let mut word = host::words(seed);
        let mut random = |limbs: usize| -> BigUint {
            (0..limbs).fold(BigUint::from(0u8), |n, _| (n << 64) + word())
        };
        let (ml, limit) = (mb / 2, &one << (32 * na));
        let mut out = Vec::new();
        for k in 0..4usize {
            let top = random(block + 1) | (&one << (64 * (block + 1) - 1));
            let low = ml - block - 1;
            // Shifted by k bits, so that the normalization moves it back.
            let d = ((top << (64 * low)) + (&one << (64 * low)) - 1u8) >> k;
            let ql = (na / 2).saturating_sub(ml);
            for t in 0..ql {
                let q = (random(ql - t) << (64 * t)) + (&one << (64 * t)) - 1u8;
                let a = &q * &d + &d - 1u8;
                if a < limit {
                    out.push((a, d.clone()));
                }
            }
        }
        out
    }

    /// Dividends `m b + e` of `n` words by divisors `b` of full width, `e` small or just below
    /// `b` or a multiple of `b` minus one, and `b` with runs of zero and all-ones limbs: `a - qh b`
    /// then agrees with zero or with `-b` in its top limbs, so the quotient's sign reads far
    /// down (to the last limb where `e` is 0, 1, `b - 1`).
    fn agreeing_at_the_top(n: usize, seed: u64) -> Vec<(BigUint, BigUint)> {
        let one = BigUint::from(1u8);
        let mut word = host::words(seed);
        let mut out = Vec::new();
        for k in 0..40usize {
            let top = &one << (32 * n - 1 - (k * 7) % 32);
            let b = (host::edge_number(&mut word, n) % &top) | &top;
            for m in [1u32, 2, 3, 0xffff, 0xffff_fffe] {
                let mb = &b * m;
                if mb.bits() > 32 * n as u64 {
                    continue;
                }
                for e in [
                    BigUint::from(0u8),
                    one.clone(),
                    BigUint::from(k as u64),
                    &b - 1u8,
                    (&one << (64 * (k % (n / 2)))) - 1u8,
                ] {
                    let x = &mb + &e;
                    if x.bits() <= 32 * n as u64 {
                        out.push((x, b.clone()));
                    }
                    if mb > e {
                        out.push((&mb - &e - 1u8, b.clone()));
                    }
                }
            }
        }
        out
    }

    /// Many more cases at the bench's widths.
    #[test]
    #[ignore = "a stress run: cargo test -p bigfuse-codegen --lib stress -- --ignored"]
    fn stress_divisions_on_the_host() {
        for (na, mb) in [
            (4, 2),
            (6, 4),
            (64, 32),
            (128, 64),
            (36, 34),
            (256, 128),
            (134, 66),
        ] {
            check(na, mb, &cases(na, mb, 100_000, 7 + na as u64));
        }
    }

    /// Many more cases of the root's blocks of rows.
    #[test]
    #[ignore = "a stress run: cargo test -p bigfuse-codegen --lib stress -- --ignored"]
    fn stress_rows_in_blocks_on_the_host() {
        for (na, mb) in [(256, 128), (134, 66), (40, 18)] {
            let mut cases = cases(na, mb, 100_000, 11 + na as u64);
            cases.extend(block_add_backs(na, mb, 8, na as u64));
            let functions = vec![in_memory_rows(na, mb, Parts::BOTH, false, Some(8))];
            check_functions(na, mb, Parts::BOTH, false, functions, &cases);
        }
    }

    /// `divide::whole_local_bytes`, which decides where one thread may divide whole, counts the
    /// local arrays this module declares: the 64-bit limbs of the divisor `d`, the shifted
    /// dividend `u` and the quotient `qa`.
    #[test]
    fn the_local_arrays_are_what_divide_counts() {
        for (na, mb) in [
            (256usize, 256usize),
            (512, 256),
            (8192, 8192),
            (16384, 8192),
        ] {
            let (_, text) = in_memory(na, mb, Parts::BOTH, false);
            let mut limbs = 0u64;
            for array in ["d", "u", "qa"] {
                let decl = format!("u64 {array}[");
                let (_, rest) = text.split_once(&decl).unwrap_or_else(|| panic!("{decl}"));
                let (size, _) = rest.split_once("];").unwrap();
                limbs += size
                    .split('+')
                    .map(|t| t.trim().parse::<u64>().unwrap_or_else(|_| panic!("{size}")))
                    .sum::<u64>();
            }
            assert_eq!(
                8 * limbs,
                crate::divide::whole_local_bytes(32 * na as u64, 32 * mb as u64),
                "{na} by {mb} words"
            );
        }
    }
}

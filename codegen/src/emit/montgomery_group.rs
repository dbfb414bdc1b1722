//! `limb.pow_mod` computed by a group of `T` threads per instance (`T` a power of two up to 32,
//! consecutive lanes of a warp): thread `k` holds words `kL..kL+L-1` of every operand (`L = s / T`),
//! so that each thread needs a `T`-th of the registers and the SM holds `T` times the warps that
//! hide the latency of the carry chains; the single-thread form of `montgomery.rs` runs out of
//! registers from 2048 bits on. The steps are those of the single-thread form (see
//! [`crate::montgomery`]); what changes is the product and its carries:
//!
//! - two CIOS rounds a step: the rounds' words of `b` are broadcast from the thread that holds
//!   them and each round's `q` from thread 0 (the only one whose low word is exact); each thread
//!   runs the single thread's chains of whole word products on paired accumulators over its `L`
//!   words; what they carry out of its top stays in the words above them, which overlap the next
//!   thread's bottom, and the step's shift by two words hands each thread's two bottom words to
//!   the thread below;
//! - carries and borrows between threads are resolved at the end of a product, as an addition
//!   resolves them: each thread's generate and propagate bits are balloted and one 32-bit
//!   addition of the masks (`(G | P) + G`) gives every thread its carry-in.
//!
//! The text calls `__shfl_sync`, `__shfl_up_sync`, `__shfl_down_sync` and `__ballot_sync` only
//! on 32-bit values, so the tests can compile it for the host with those four emulated over `T`
//! host threads.

use super::chain::{both_targets, Step};
use super::montgomery::{
    paired_rounds, paired_sum, square_operands, square_parts, square_products, windows_walk, Joins,
};
use crate::montgomery::{PowModPlan, ProductForm};
use std::fmt::Write;

/// The group's helpers, the product and the power, callees first. `T = plan.threads`.
pub(crate) fn group_functions(plan: &PowModPlan) -> Vec<(String, String)> {
    let s = plan.words();
    let tg = plan.threads as usize;
    let l = s / tg;
    vec![
        helpers(l, tg),
        mont(s, l, tg, plan.product_form()),
        square(s, l, tg),
        power(plan, l, tg),
    ]
}

fn suffix(l: usize, tg: usize) -> String {
    format!("{l}_g{tg}")
}

/// Carry resolution, conditional subtraction and one-bit shifts over the group.
fn helpers(l: usize, tg: usize) -> (String, String) {
    let sx = suffix(l, tg);
    let full = if tg == 32 {
        "0xffffffffu".to_string()
    } else {
        format!("{}u", (1u64 << tg) - 1)
    };
    let top = tg - 1;
    let text = format!(
        r#"// Group of {tg} threads, {l} words each: k is the thread's index in the group, gm the group's lanes,
// base its first lane. G and P are the group's generate and propagate bits (carry out of a
// thread; a thread passes an incoming carry on): (G | P) + G carries exactly as the threads'
// words do, so ((G | P) + G) ^ P holds each thread's carry in and bit {tg} the group's carry out.
static __device__ __forceinline__ u32 bf_group_bits_{sx}(const bool pred, const u32 gm, const u32 base) {{
  return (__ballot_sync(gm, pred) >> base) & {full};
}}

// t += c at this thread's lowest word (c a few bits), carries resolved over the group; returns the
// group's carry out (the same in every thread).
static __device__ __forceinline__ u32 bf_group_add_{sx}(u32* t, const u32 c, const u32 k, const u32 gm, const u32 base) {{
  u32 g = c, p = 1u;
  #pragma unroll
  for (int j = 0; j < {l}; ++j) {{
    const u64 x = (u64)t[j] + (u64)g;
    t[j] = (u32)x;
    g = (u32)(x >> 32);
    p &= (u32)(t[j] == 0xffffffffu);
  }}
  const u32 gs = bf_group_bits_{sx}(g != 0u, gm, base);
  const u32 ps = bf_group_bits_{sx}(p != 0u, gm, base);
  const u32 sum = (gs | ps) + gs;
  u32 cin = ((sum ^ ps) >> k) & 1u;
  #pragma unroll
  for (int j = 0; j < {l}; ++j) {{
    const u64 x = (u64)t[j] + (u64)cin;
    t[j] = (u32)x;
    cin = (u32)(x >> 32);
  }}
  return (sum >> {tg}) & 1u;
}}

// t -= m where hi != 0 (a bit above t, the same in every thread) or t >= m: for t < 2m, t mod m.
static __device__ __forceinline__ void bf_group_reduce_{sx}(u32* t, const u32* m, const u32 hi, const u32 k, const u32 gm, const u32 base) {{
  u32 g = 0u, p = 1u;
  #pragma unroll
  for (int j = 0; j < {l}; ++j) {{
    g = (u32)(((u64)t[j] - (u64)m[j] - (u64)g) >> 63);
    p &= (u32)(t[j] == m[j]);
  }}
  const u32 gs = bf_group_bits_{sx}(g != 0u, gm, base);
  const u32 ps = bf_group_bits_{sx}(p != 0u, gm, base);
  const u32 sum = (gs | ps) + gs;
  const u32 mask = (hi != 0u || ((sum >> {tg}) & 1u) == 0u) ? ~0u : 0u;
  u32 borrow = ((sum ^ ps) >> k) & mask & 1u;
  #pragma unroll
  for (int j = 0; j < {l}; ++j) {{
    const u64 x = (u64)t[j] - (u64)(m[j] & mask) - (u64)borrow;
    t[j] = (u32)x;
    borrow = (u32)(x >> 63);
  }}
}}

// t <<= 1 over the group; returns the bit shifted out of the top (the same in every thread).
static __device__ __forceinline__ u32 bf_group_shl1_{sx}(u32* t, const u32 k, const u32 gm) {{
  const u32 below = __shfl_up_sync(gm, t[{last}] >> 31, 1, {tg});
  const u32 out = __shfl_sync(gm, t[{last}] >> 31, {top}, {tg});
  #pragma unroll
  for (int j = {last}; j > 0; --j) t[j] = (t[j] << 1) | (t[j - 1] >> 31);
  t[0] = (t[0] << 1) | (k == 0u ? 0u : below);
  return out;
}}

// t >>= 1 over the group.
static __device__ __forceinline__ void bf_group_shr1_{sx}(u32* t, const u32 k, const u32 gm) {{
  const u32 above = __shfl_down_sync(gm, t[0] & 1u, 1, {tg});
  #pragma unroll
  for (int j = 0; j < {last}; ++j) t[j] = (t[j] >> 1) | (t[j + 1] << 31);
  t[{last}] = (t[{last}] >> 1) | (k == {top}u ? 0u : above << 31);
}}
"#,
        last = l - 1,
    );
    (format!("bf_group_helpers_{sx}"), text)
}

/// The Montgomery product over the group: `r = a b / 2^(32 s) mod m`, each operand as this
/// thread's `L` words, `b` in local memory. Each thread runs the single thread's two CIOS rounds of
/// whole word products (emit/montgomery.rs `paired_rounds`) over its `L` words, two rounds a
/// step, with `b`'s two words broadcast from the thread that holds them and each round's `q`
/// from thread 0 (the only one whose bottom word is exact).
///
/// A thread's accumulators reach above its `L` words (positions `L`, `L + 1`, `L + 2`: what its
/// chains carry out of its top), overlapping the next thread's bottom: the group's accumulator is
/// the sum of the threads' words at their positions, each thread's a number of its own, so no
/// carry crosses threads inside a step. The step's shift by two words takes each thread's bottom
/// two words (the values at positions 0 and 1 once the rounds are done: zeros in thread 0) down
/// to the thread below, which adds them at its positions `L - 2`, `L - 1` after its own shift.
/// Carries between threads are resolved once, at the end, by the group's ballots.
fn mont(s: usize, l: usize, tg: usize, form: ProductForm) -> (String, String) {
    let ProductForm::Group { pairs_per_turn } = form else {
        unreachable!("a group computes its products as a group")
    };
    let sx = suffix(l, tg);
    let name = format!("bf_group_mont_{sx}");
    let text = format!(
        r#"// r = a b / 2^{bits} mod m over the group (odd m, a b < m 2^{bits}): CIOS, two rounds a step, on
// paired accumulators (l: pairs of words from even positions, h: from odd ones) over this thread's
// {l} words and the few above them, which overlap the next thread's bottom. r may be a.
static __device__ __forceinline__ void {name}(u32* r, const u32* a, const u32* b, const u32* m, const u32 minv, const u32 k, const u32 gm, const u32 base) {{
{start}  #pragma unroll {pairs_per_turn}
  for (int i = 0; i < {s}; i += 2) {{
    const u32 b0 = __shfl_sync(gm, b[i % {l}], i / {l}, {tg});
    const u32 b1 = __shfl_sync(gm, b[(i + 1) % {l}], i / {l}, {tg});
{step}  }}
{end}}}
"#,
        bits = 32 * s,
        start = accumulators(l),
        step = StepChains::product(l).text(l, tg, "    "),
        end = product_end(l, tg),
    );
    (name, text)
}

/// The accumulators of a product over the group, cleared.
fn accumulators(l: usize) -> String {
    format!(
        "  u32 l[{l3}], h[{l4}];\n  #pragma unroll\n  for (int j = 0; j < {l3}; ++j) l[j] = 0u;\n  \
         #pragma unroll\n  for (int j = 0; j < {l4}; ++j) h[j] = 0u;\n",
        l3 = l + 3,
        l4 = l + 4,
    )
}

/// The chains of one step of a product over the group (two CIOS rounds, `b0` and `b1` the
/// step's words of the second factor), of [`paired_rounds`] or a square's: each round's products
/// of the factors, the expression whose product by `minv` is its `q` (the round's bottom word),
/// and its reduction by `q m`, the second round's with the shift by two words.
struct StepChains {
    first: Vec<Vec<Step>>,
    q0: &'static str,
    reduce0: Vec<Vec<Step>>,
    second: Vec<Vec<Step>>,
    q1: &'static str,
    reduce1: Vec<Vec<Step>>,
}

impl StepChains {
    /// A product's: the joins in the chains of the factors' products.
    fn product(l: usize) -> StepChains {
        let [c0, c1, c2, c3, c4, c5, c6, c7] = paired_rounds(l, Joins::Products);
        StepChains {
            first: vec![c0, c1],
            q0: "l[0]",
            reduce0: vec![c2, c3],
            second: vec![c4, c5],
            q1: "h[2]",
            reduce1: vec![c6, c7],
        }
    }

    /// A square's: `first` and `second` its rounds' products; the joins in the reduction.
    fn square(l: usize, first: Vec<Vec<Step>>, second: Vec<Vec<Step>>) -> StepChains {
        let [_, _, c2, c3, _, _, c6, c7] = paired_rounds(l, Joins::Reduction);
        StepChains {
            first,
            q0: "(l[0] + h[1])",
            reduce0: vec![c2, c3],
            second,
            q1: "(h[2] + l[1])",
            reduce1: vec![c7, c6],
        }
    }

    /// The step's text: the chains, each round's `q` from thread 0, the exchange of the bottom
    /// words.
    fn text(&self, l: usize, tg: usize, indent: &str) -> String {
        let w = |j: usize| format!("l[{j}]");
        let receive = both_targets(
            &[vec![
                Step::new("add.cc", w(l - 2), &[w(l - 2), "r0".into()]),
                Step::new("addc.cc", w(l - 1), &[w(l - 1), "r1".into()]),
                Step::new("addc", w(l), &[w(l), "0".into()]),
            ]],
            indent,
        );
        format!(
            r#"{r0}
{i}u32 q = __shfl_sync(gm, {q0} * minv, 0, {tg});
{r1}
{i}// Position 0 is done: it goes to the thread below.
{i}const u32 w0 = l[0];
{r2}
{i}q = __shfl_sync(gm, {q1} * minv, 0, {tg});
{r3}
{i}// Position 1 is done (the shift left it in h[0]); the thread above's two bottom words join
{i}// this thread's positions {lm2} and {lm1}. Every thread takes part in the exchange; the top one,
{i}// with nothing above it, gets thread 0's (the lane numbers wrap around the group), which are
{i}// zeros.
{i}const u32 r0 = __shfl_sync(gm, w0, k + 1u, {tg});
{i}const u32 r1 = __shfl_sync(gm, h[0], k + 1u, {tg});
{receive}
"#,
            i = indent,
            lm2 = l - 2,
            lm1 = l - 1,
            q0 = self.q0,
            q1 = self.q1,
            r0 = both_targets(&self.first, indent),
            r1 = both_targets(&self.reduce0, indent),
            r2 = both_targets(&self.second, indent),
            r3 = both_targets(&self.reduce1, indent),
        )
    }
}

/// The end of a product over the group: the accumulators' sum, carries resolved over the group,
/// one conditional subtraction, the result in `r`.
fn product_end(l: usize, tg: usize) -> String {
    let sx = suffix(l, tg);
    format!(
        r#"  // t = L + H / 2^32 at positions 0..={l}; the top word joins the next thread's bottom, carries
  // are resolved over the group, then t < 2m: subtract m unless t < m.
{sum}
  const u32 below = __shfl_up_sync(gm, l[{l}], 1, {tg});
  const u32 out = bf_group_add_{sx}(l, k == 0u ? 0u : below, k, gm, base);
  const u32 hi = __shfl_sync(gm, l[{l}], {top}, {tg}) + out;
  bf_group_reduce_{sx}(l, m, hi, k, gm, base);
  #pragma unroll
  for (int j = 0; j < {l}; ++j) r[j] = l[j];
"#,
        sum = both_targets(&[paired_sum(l, 0, 1)], "  "),
        top = tg - 1,
    )
}

/// The Montgomery square over the group: `r = a^2 / 2^(32 s) mod m` for `a < m`, each cross
/// product of words at different places of the threads' shares once. The rounds are those of
/// [`mont`] with `b = a`, but round `i` (the word `p = i mod L` of thread `blk`) adds in each
/// thread only `a_i` times the thread's words from `p` up: its word at `p` once, those above
/// doubled. So every thread computes as many products in a round as the others (the rounds run in
/// step), a pair of words at `p < q` of any two shares once (doubled, in the round of the one at
/// `p`), and a pair at the same `p` of two shares twice (in each one's round), the square of a
/// word once. Doubling: see [`square_products`]. About `s^2 / 2 + s^2` word products instead of
/// `2 s^2`, and no more instructions than the product beside them; `p` must be known to the
/// compiler, so a loop turn takes a fixed part of a share's words ([`square_parts`]).
fn square(s: usize, l: usize, tg: usize) -> (String, String) {
    let sx = suffix(l, tg);
    let name = format!("bf_group_msq_{sx}");
    let (cases, parts) = square_parts(l, &|p| {
        let [first, second] = square_products(l, p);
        format!(
            r#"      {{
        // Rounds at words {p} and {p1} of thread blk.
        const u32 b0 = __shfl_sync(gm, a[{p}], blk, {tg});
        const u32 b1 = __shfl_sync(gm, a[{p1}], blk, {tg});
{step}      }}
"#,
            p1 = p + 1,
            step = StepChains::square(l, first, second).text(l, tg, "        "),
        )
    });
    let text = format!(
        r#"// r = a^2 / 2^{bits} mod m over the group (odd m, a < m): the rounds of bf_group_mont_{sx} with
// each cross product once, doubled. r may be a.
static __device__ __forceinline__ void {name}(u32* r, const u32* a, const u32* m, const u32 minv, const u32 k, const u32 gm, const u32 base) {{
{start}{operands}  // A loop turn is a part of a share's words (a branch of its own, which keeps the compiler from
  // interleaving more carry chains than it has carry flags for).
  #pragma unroll 1
  for (u32 turn = 0; turn < {turns}u; ++turn) {{
    const u32 blk = turn / {parts}u;
    switch (turn % {parts}u) {{
{cases}    }}
  }}
{end}}}
"#,
        turns = tg * parts,
        bits = 32 * s,
        start = accumulators(l),
        operands = square_operands(l),
        end = product_end(l, tg),
    );
    (name, text)
}

/// The power over the group: the steps of the single-thread form, each on this thread's words.
fn power(plan: &PowModPlan, l: usize, tg: usize) -> (String, String) {
    let e = plan.exp_words();
    let w = plan.window;
    let n = plan.bits;
    let sx = suffix(l, tg);
    let mont = format!("bf_group_mont_{sx}");
    let name = plan.function_name();
    let full = if tg == 32 {
        "0xffffffffu".to_string()
    } else {
        format!("{}u", (1u64 << tg) - 1)
    };
    let mut t = String::new();
    let _ = write!(
        t,
        r#"// x^e mod m for a {n}-bit m and a {k}-bit e over a group of {tg} threads (lane: the caller's lane in
// its warp); the operands are those of the group's first thread, the result is every thread's.
// The steps of the single-thread form: R mod m, R^2 mod m, a table of x^j R mod m, fixed windows
// of {w} bits, out of the Montgomery form. Not constant-time. Even or zero m: all ones.
static __device__ __forceinline__ void {name}(u64* out, const u64* x64, const u64* e64, const u64* m64, const u32 lane) {{
  const u32 k = lane & {kmask}u;
  const u32 base = lane & ~{kmask}u;
  const u32 gm = {full} << base;
  u32 m[{l}], a[{l}], acc[{l}];
  u32 tab[{entries}][{l}];
  u32 sq[{l}];
  u32 ew[{ew}];
  // The first thread's operands, a thread's share a round: each thread keeps its own words. The
  // rounds stay a loop, so that the whole operands (read at run-time indices) wait in local
  // memory, not in registers that every thread would hold for the whole kernel.
  #pragma unroll 1
  for (int owner = 0; owner < {tg}; ++owner) {{
    #pragma unroll
    for (int j = 0; j < {lhalf}; ++j) {{
      const int w = owner * {lhalf} + j;
      const u32 mlo = __shfl_sync(gm, (u32)m64[w], 0, {tg}), mhi = __shfl_sync(gm, (u32)(m64[w] >> 32), 0, {tg});
      const u32 xlo = __shfl_sync(gm, (u32)x64[w], 0, {tg}), xhi = __shfl_sync(gm, (u32)(x64[w] >> 32), 0, {tg});
      if ((u32)owner == k) {{
        m[2 * j] = mlo;
        m[2 * j + 1] = mhi;
        a[2 * j] = xlo;
        a[2 * j + 1] = xhi;
      }}
    }}
  }}
  #pragma unroll 1
  for (int j = 0; j < {ehalf}; ++j) {{
    ew[2 * j] = __shfl_sync(gm, (u32)e64[j], 0, {tg});
    ew[2 * j + 1] = __shfl_sync(gm, (u32)(e64[j] >> 32), 0, {tg});
  }}
  ew[{e}] = 0u;
  const u32 m0 = __shfl_sync(gm, m[0], 0, {tg});
  u32 inv = m0;
  #pragma unroll
  for (int j = 0; j < 4; ++j) inv *= 2u - m0 * inv;
  const u32 minv = 0u - inv;
  // R mod m: m shifted up until its top bit is set (ms), R - ms < ms, then halved back down.
  u32 ms[{l}];
  #pragma unroll
  for (int j = 0; j < {l}; ++j) ms[j] = m[j];
  int z = 0;
  #pragma unroll 1
  while (z < {n} && __shfl_sync(gm, ms[{last}] >> 31, {top}, {tg}) == 0u) {{
    bf_group_shl1_{sx}(ms, k, gm);
    ++z;
  }}
  #pragma unroll
  for (int j = 0; j < {l}; ++j) acc[j] = ~ms[j];
  bf_group_add_{sx}(acc, k == 0u ? 1u : 0u, k, gm, base);
  #pragma unroll 1
  for (int step = 0; step <= z; ++step) {{
    if (step > 0) bf_group_shr1_{sx}(ms, k, gm);
    bf_group_reduce_{sx}(acc, ms, 0u, k, gm, base);
  }}
  #pragma unroll
  for (int j = 0; j < {l}; ++j) tab[0][j] = acc[j];
  // R^2 mod m: a squaring per bit of {n} from the top, a doubling where the bit is set.
  #pragma unroll 1
  for (int bit = {top_bit}; bit >= 0; --bit) {{
    bf_group_msq_{sx}(acc, acc, m, minv, k, gm, base);
    if (({n}u >> bit) & 1u) {{
      const u32 over = bf_group_shl1_{sx}(acc, k, gm);
      bf_group_reduce_{sx}(acc, m, over, k, gm, base);
    }}
  }}
{walk}
  #pragma unroll
  for (int j = 0; j < {l}; ++j) sq[j] = (k == 0u && j == 0) ? 1u : 0u;
  {mont}(acc, acc, sq, m, minv, k, gm, base);
  // Every thread gets the whole result, a thread's share a round (a loop, as above).
  const bool odd = (m0 & 1u) != 0u;
  #pragma unroll 1
  for (int owner = 0; owner < {tg}; ++owner) {{
    #pragma unroll
    for (int j = 0; j < {lhalf}; ++j) {{
      const u32 lo = __shfl_sync(gm, acc[2 * j], owner, {tg});
      const u32 hi = __shfl_sync(gm, acc[2 * j + 1], owner, {tg});
      out[owner * {lhalf} + j] = odd ? (((u64)hi << 32) | (u64)lo) : ~0ull;
    }}
  }}
}}
"#,
        k = plan.exp_bits,
        kmask = tg - 1,
        top = tg - 1,
        last = l - 1,
        entries = 1u64 << w,
        ew = e + 1,
        lhalf = l / 2,
        ehalf = e / 2,
        top_bit = 63 - n.leading_zeros(),
        walk = windows_walk(
            plan,
            l,
            &|r, a, b| format!("{mont}({r}, {a}, {b}, m, minv, k, gm, base)"),
            &format!("bf_group_msq_{sx}(acc, acc, m, minv, k, gm, base);"),
        ),
    );
    (name, t)
}

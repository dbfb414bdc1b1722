//! `limb.gcd` and `limb.inv_mod` computed by a group of `T` threads per instance (consecutive
//! lanes of a warp, `T` a power of two up to 32; see [`crate::gcd`] for when): thread `k` holds
//! words `kL..kL+L-1` of every number (`L = s / T`). The steps are the single thread's
//! (`gcd.rs`: Pornin's batched binary GCD); what changes is who holds the words:
//!
//! - the approximations of `a` and `b` (their top 33 bits at the longer one's length, their low
//!   31 bits) come from the thread that holds the top word (a ballot finds it) and from thread 0;
//!   every thread then runs the 31 steps on them, so every thread has the factors;
//! - a thread's words of `f a + g b` (and of `f u + g v + k m`) carry a signed word out of its
//!   top into the next thread's bottom; after that carry is added, what is left to pass on is
//!   -1, 0 or 1 a thread, resolved for the whole group by a scan over the threads of what each
//!   passes on for each carry it may receive (`resolve`);
//! - the division by `2^31` takes each thread's top bits from the next thread's bottom word.
//!
//! A single thread's registers hold about 255 words: the inverse's five numbers (`a`, `b`, `u`,
//! `v`, the modulus) and their updates do not fit from 1024 bits, the gcd's from 4096 bits; a
//! group's thread holds its `L` words of each.
//!
//! The text calls `__shfl_sync`, `__shfl_up_sync`, `__shfl_down_sync` and `__ballot_sync` only on
//! 32-bit values, so the tests compile it for the host with those emulated over `T` host threads.

use super::gcd::{rounds, steps_function};
use crate::gcd::GcdPlan;

/// The widest share of a number (32-bit words a thread) whose loops are unrolled: a thread's
/// registers hold the shares of a gcd up to 64 words (`crate::gcd::GCD_WORDS_PER_THREAD`); wider
/// ones (groups of 32 threads above 65536 bits) lie in local memory, where unrolling buys
/// nothing and NVRTC took 130 s on the loops of a 262144-bit inverse (256 words a thread).
const UNROLLED_WORDS: usize = 64;

fn unroll(l: usize) -> &'static str {
    if l <= UNROLLED_WORDS {
        "#pragma unroll"
    } else {
        "#pragma unroll 4"
    }
}

fn suffix(l: usize, tg: usize) -> String {
    format!("{l}_g{tg}")
}

/// The group's exchanges and the carries between its threads.
fn helpers(l: usize, tg: usize) -> (String, String) {
    let sx = suffix(l, tg);
    let full = if tg == 32 {
        "0xffffffffu".to_string()
    } else {
        format!("{}u", (1u64 << tg) - 1)
    };
    let text = format!(
        r#"// Group of {tg} threads, {l} words each: k is the thread's index in the group, gm the group's lanes,
// base its first lane.
static __device__ __forceinline__ u32 bf_gg_bits_{sx}(const bool pred, const u32 gm, const u32 base) {{
  return (__ballot_sync(gm, pred) >> base) & {full};
}}

// True when the group's number is zero.
static __device__ __forceinline__ bool bf_gg_zero_{sx}(const u32* a, const u32 gm, const u32 base) {{
  u32 any = 0u;
  {unroll}
  for (int j = 0; j < {l}; ++j) any |= a[j];
  return bf_gg_bits_{sx}(any != 0u, gm, base) == 0u;
}}

// True when the group's number is one.
static __device__ __forceinline__ bool bf_gg_one_{sx}(const u32* a, const u32 k, const u32 gm, const u32 base) {{
  u32 other = 0u;
  {unroll}
  for (int j = 0; j < {l}; ++j) other |= (k == 0u && j == 0) ? a[j] ^ 1u : a[j];
  return bf_gg_bits_{sx}(other != 0u, gm, base) == 0u;
}}

// w += c (|c| < 2^62) over this thread's words; returns what carries out of its top (-1, 0 or 1
// where |c| < 2^{lbits} - 2^32).
static __device__ __forceinline__ int bf_gg_add_{sx}(u32* w, const i64 c) {{
  i64 x = c;
  {unroll}
  for (int j = 0; j < {l}; ++j) {{
    x += (i64)w[j];
    w[j] = (u32)x;
    x >>= 32;
  }}
  return (int)x;
}}

// g after f, maps of a carry in (-1, 0, 1) to a carry out, two bits an entry (value plus one).
static __device__ __forceinline__ u32 bf_gg_after(const u32 g, const u32 f) {{
  u32 r = 0u;
  {unroll}
  for (int x = 0; x < 3; ++x) r |= ((g >> (2u * ((f >> (2 * x)) & 3u))) & 3u) << (2 * x);
  return r;
}}

// Each thread's words w with e its carry out (-1, 0 or 1) still to pass on: adds to w what the
// threads below pass in and returns the group's carry out (every thread's). A thread passes on
// e plus what w + c carries out for the carry c it receives; the scan of those maps over the
// threads gives each thread its carry. Every use keeps the carry out within -1..1: w is not zero
// where e = -1, nor all ones where e = 1.
static __device__ __forceinline__ int bf_gg_resolve_{sx}(u32* w, const int e, const u32 k, const u32 gm) {{
  u32 any = 0u, all = 0xffffffffu;
  {unroll}
  for (int j = 0; j < {l}; ++j) {{ any |= w[j]; all &= w[j]; }}
  const u32 down = (u32)(e + (any == 0u ? 0 : 1));
  const u32 same = (u32)(e + 1);
  const u32 up = (u32)(e + (all == 0xffffffffu ? 2 : 1));
  u32 f = down | (same << 2) | (up << 4);
  {unroll}
  for (int d = 1; d < {tg}; d *= 2) {{
    const u32 below = __shfl_up_sync(gm, f, d, {tg});
    if (k >= (u32)d) f = bf_gg_after(f, below);
  }}
  const u32 prev = __shfl_up_sync(gm, f, 1, {tg});
  const int c = k == 0u ? 0 : (int)((prev >> 2) & 3u) - 1;
  if (c != 0) bf_gg_add_{sx}(w, (i64)c);
  return (int)((__shfl_sync(gm, f, {top}, {tg}) >> 2) & 3u) - 1;
}}

// x = f a + g b over the group (|f| + |g| <= 2^31); returns the bits above its {bits} bits (every
// thread's).
static __device__ __forceinline__ i64 bf_gg_lin_{sx}(u32* x, const u32* a, const u32* b, const i64 f, const i64 g, const u32 k, const u32 gm) {{
  i64 c = 0;
  {unroll}
  for (int j = 0; j < {l}; ++j) {{
    const i64 t = f * (i64)a[j] + g * (i64)b[j] + c;
    x[j] = (u32)t;
    c = t >> 32;
  }}
  // c fits in 32 bits: |t| < 2^63.
  const int below = (int)__shfl_up_sync(gm, (u32)c, 1, {tg});
  const int e = bf_gg_add_{sx}(x, k == 0u ? 0 : (i64)below);
  const int out = bf_gg_resolve_{sx}(x, e, k, gm);
  return (i64)(int)__shfl_sync(gm, (u32)c, {top}, {tg}) + (i64)out;
}}

// r = (x + hi 2^{bits}) / 2^31 (exact) over the group, its words only.
static __device__ __forceinline__ void bf_gg_half_{sx}(u32* r, const u32* x, const i64 hi, const u32 k, const u32 gm) {{
  const u32 next = __shfl_down_sync(gm, x[0], 1, {tg});
  const u32 above = k == {top}u ? (u32)hi : next;
  {unroll}
  for (int j = 0; j < {last}; ++j) r[j] = (x[j] >> 31) | (x[j + 1] << 1);
  r[{last}] = (x[{last}] >> 31) | (above << 1);
}}

// r = (f a + g b) / 2^31 made nonnegative; returns true when it was negated.
static __device__ __forceinline__ bool bf_gg_apply_{sx}(u32* r, const u32* a, const u32* b, const i64 f, const i64 g, const u32 k, const u32 gm) {{
  u32 x[{l}];
  const i64 hi = bf_gg_lin_{sx}(x, a, b, f, g, k, gm);
  bf_gg_half_{sx}(r, x, hi, k, gm);
  const bool negative = hi < 0;
  if (negative) {{
    // ~r + 1: the one enters at thread 0.
    {unroll}
    for (int j = 0; j < {l}; ++j) r[j] = ~r[j];
    const int e = k == 0u ? bf_gg_add_{sx}(r, 1) : 0;
    bf_gg_resolve_{sx}(r, e, k, gm);
  }}
  return negative;
}}

// The factors of the next 31 steps of the binary GCD on the group's a and b (b odd): the
// approximations from the thread of the top word and from thread 0, the steps in every thread.
static __device__ __forceinline__ void bf_gg_factors_{sx}(const u32* a, const u32* b, i64* f0, i64* g0, i64* f1, i64* g1, const u32 k, const u32 gm, const u32 base) {{
  const u32 abelow = __shfl_up_sync(gm, a[{last}], 1, {tg});
  const u32 bbelow = __shfl_up_sync(gm, b[{last}], 1, {tg});
  int lw = -1;
  u32 lt = 0u, lah = 0u, lam = 0u, lbh = 0u, lbm = 0u;
  {unroll}
  for (int j = 0; j < {l}; ++j) {{
    const u32 x = a[j] | b[j];
    if (x != 0u) {{
      lw = j; lt = x; lah = a[j]; lbh = b[j];
      lam = j > 0 ? a[j > 0 ? j - 1 : 0] : abelow;
      lbm = j > 0 ? b[j > 0 ? j - 1 : 0] : bbelow;
    }}
  }}
  const u32 has = bf_gg_bits_{sx}(lw >= 0, gm, base);
  const int owner = has == 0u ? 0 : 31 - __clz((int)has);
  const int w = owner * {l} + (int)__shfl_sync(gm, (u32)lw, owner, {tg});
  const u32 a0 = __shfl_sync(gm, a[0], 0, {tg}), a1 = __shfl_sync(gm, a[1], 0, {tg});
  const u32 b0 = __shfl_sync(gm, b[0], 0, {tg}), b1 = __shfl_sync(gm, b[1], 0, {tg});
  const u32 top = __shfl_sync(gm, lt, owner, {tg});
  const u32 ah = __shfl_sync(gm, lah, owner, {tg}), am = __shfl_sync(gm, lam, owner, {tg});
  const u32 bh = __shfl_sync(gm, lbh, owner, {tg}), bm = __shfl_sync(gm, lbm, owner, {tg});
  u64 ax, bx;
  if (w < 2) {{
    ax = (u64)a0 | ((u64)a1 << 32);
    bx = (u64)b0 | ((u64)b1 << 32);
  }} else {{
    const int r = 32 - __clz((int)top);
    ax = (((((u64)ah << 32) | (u64)am) >> (r - 1)) << 31) | (u64)(a0 & 0x7fffffffu);
    bx = (((((u64)bh << 32) | (u64)bm) >> (r - 1)) << 31) | (u64)(b0 & 0x7fffffffu);
  }}
  bf_bingcd_steps(ax, bx, f0, g0, f1, g1);
}}

// a >>= n and a <<= n over the group ({bits} bits; n >= {bits} gives zero).
static __device__ __forceinline__ void bf_gg_shr_{sx}(u32* a, int n, const u32 k, const u32 gm) {{
  #pragma unroll 1
  for (; n >= 32; n -= 32) {{
    const u32 next = __shfl_down_sync(gm, a[0], 1, {tg});
    {unroll}
    for (int j = 0; j < {last}; ++j) a[j] = a[j + 1];
    a[{last}] = k == {top}u ? 0u : next;
  }}
  if (n > 0) {{
    const u32 next = __shfl_down_sync(gm, a[0], 1, {tg});
    const u32 above = k == {top}u ? 0u : next;
    {unroll}
    for (int j = 0; j < {last}; ++j) a[j] = (a[j] >> n) | (a[j + 1] << (32 - n));
    a[{last}] = (a[{last}] >> n) | (above << (32 - n));
  }}
}}

static __device__ __forceinline__ void bf_gg_shl_{sx}(u32* a, int n, const u32 k, const u32 gm) {{
  #pragma unroll 1
  for (; n >= 32; n -= 32) {{
    const u32 prev = __shfl_up_sync(gm, a[{last}], 1, {tg});
    {unroll}
    for (int j = {last}; j > 0; --j) a[j] = a[j - 1];
    a[0] = k == 0u ? 0u : prev;
  }}
  if (n > 0) {{
    const u32 prev = __shfl_up_sync(gm, a[{last}], 1, {tg});
    const u32 below = k == 0u ? 0u : prev;
    {unroll}
    for (int j = {last}; j > 0; --j) a[j] = (a[j] << n) | (a[j - 1] >> (32 - n));
    a[0] = (a[0] << n) | (below >> (32 - n));
  }}
}}

// This thread's words of the group's first thread's number x64 ({limbs} limbs), a thread's share
// a round: the rounds stay a loop, so that the whole number (read at run-time indices) waits in
// local memory, not in registers.
static __device__ __forceinline__ void bf_gg_take_{sx}(u32* a, const u64* x64, const u32 lane) {{
  const u32 k = lane & {kmask}u, gm = {full} << (lane & ~{kmask}u);
  #pragma unroll 1
  for (int owner = 0; owner < {tg}; ++owner) {{
    {unroll}
    for (int j = 0; j < {lhalf}; ++j) {{
      const u64 x = x64[owner * {lhalf} + j];
      const u32 lo = __shfl_sync(gm, (u32)x, 0, {tg}), hi = __shfl_sync(gm, (u32)(x >> 32), 0, {tg});
      if ((u32)owner == k) {{ a[2 * j] = lo; a[2 * j + 1] = hi; }}
    }}
  }}
}}

// This thread's words of a number every thread of the group reads where it lies (x64, {limbs}
// limbs in global memory).
static __device__ __forceinline__ void bf_gg_load_{sx}(u32* a, const u64* __restrict__ x64, const u32 lane) {{
  const u64* __restrict__ mine = x64 + (lane & {kmask}u) * {lhalf}u;
  {unroll}
  for (int j = 0; j < {lhalf}; ++j) {{
    const u64 x = mine[j];
    a[2 * j] = (u32)x;
    a[2 * j + 1] = (u32)(x >> 32);
  }}
}}

// The group's number whole in every thread as 64-bit limbs.
static __device__ __forceinline__ void bf_gg_give_{sx}(u64* out, const u32* a, const u32 lane) {{
  const u32 gm = {full} << (lane & ~{kmask}u);
  #pragma unroll 1
  for (int owner = 0; owner < {tg}; ++owner) {{
    {unroll}
    for (int j = 0; j < {lhalf}; ++j) {{
      const u32 lo = __shfl_sync(gm, a[2 * j], owner, {tg});
      const u32 hi = __shfl_sync(gm, a[2 * j + 1], owner, {tg});
      out[owner * {lhalf} + j] = ((u64)hi << 32) | (u64)lo;
    }}
  }}
}}

// This thread's words of the group's number written where it goes (out, {limbs} limbs in global
// memory).
static __device__ __forceinline__ void bf_gg_store_{sx}(u64* __restrict__ out, const u32* a, const u32 lane) {{
  u64* __restrict__ mine = out + (lane & {kmask}u) * {lhalf}u;
  {unroll}
  for (int j = 0; j < {lhalf}; ++j) mine[j] = ((u64)a[2 * j + 1] << 32) | (u64)a[2 * j];
}}
"#,
        bits = 32 * l * tg,
        unroll = unroll(l),
        lbits = 32 * l,
        limbs = l * tg / 2,
        kmask = tg - 1,
        top = tg - 1,
        last = l - 1,
        lhalf = l / 2,
    );
    (format!("bf_gg_helpers_{sx}"), text)
}

/// The end of an inverse modulo an even number over the group: `v = m - (m z - 1) y^-1 mod
/// 2^bits` (see `emit/gcd.rs`'s `bf_inv_even_tail`), with `y^-1 mod 2^bits` by Newton's
/// iteration and the products' low halves split over the threads. Its loops stay loops (their
/// arrays in local memory, a few shares a thread): only inverses modulo even numbers come here.
fn even_tail(l: usize, tg: usize) -> (String, String) {
    let sx = suffix(l, tg);
    let text = format!(
        r#"// r = a b mod 2^{bits} over the group, right in the words of its first n threads (the others' are
// left undefined: Newton's iteration reads low words only). Thread k adds up the whole products
// of the shares p and k - p (p <= k, 2 * {l} words and a count of carries), then adds the upper
// half of the thread below's sum to its lower half. r may be a or b.
static __device__ __forceinline__ void bf_gg_mul_lo_{sx}(u32* r, const u32* a, const u32* b, const u32 n, const u32 k, const u32 gm) {{
  u32 acc[{l2} + 1], bq[{l}];
  #pragma unroll 1
  for (int j = 0; j <= {l2}; ++j) acc[j] = 0u;
  #pragma unroll 1
  for (u32 p = 0u; p < n; ++p) {{
    const bool mine = p <= k && k < n;
    const u32 q = mine ? k - p : 0u;
    #pragma unroll 1
    for (int j = 0; j < {l}; ++j) bq[j] = __shfl_sync(gm, b[j], q, {tg});
    #pragma unroll 1
    for (int i = 0; i < {l}; ++i) {{
      const u32 ai = __shfl_sync(gm, a[i], p, {tg});
      if (mine) {{
        u32 c = 0u;
        #pragma unroll 4
        for (int j = 0; j < {l}; ++j) {{
          const u64 t = (u64)ai * (u64)bq[j] + (u64)acc[i + j] + (u64)c;
          acc[i + j] = (u32)t;
          c = (u32)(t >> 32);
        }}
        // The count in acc[{l2}] stays below n, so the carry stops there.
        #pragma unroll 1
        for (int j = i + {l}; c != 0u; ++j) {{
          const u64 t = (u64)acc[j] + (u64)c;
          acc[j] = (u32)t;
          c = (u32)(t >> 32);
        }}
      }}
    }}
  }}
  u64 c = 0ull;
  #pragma unroll 1
  for (int j = 0; j < {l}; ++j) {{
    const u32 h = __shfl_up_sync(gm, acc[{l} + j], 1, {tg});
    c += (u64)acc[j] + (u64)(k == 0u ? 0u : h);
    r[j] = (u32)c;
    c >>= 32;
  }}
  const u32 count = __shfl_up_sync(gm, acc[{l2}], 1, {tg});
  c += k == 0u ? 0ull : (u64)count;
  // What a thread carries out is below n + 2.
  const u32 below = __shfl_up_sync(gm, (u32)c, 1, {tg});
  const int e = bf_gg_add_{sx}(r, k == 0u ? 0 : (i64)below);
  bf_gg_resolve_{sx}(r, e, k, gm);
}}

// v = m - (m z - 1) y^-1 mod 2^{bits} over the group, for odd y > 1, even m and z = m^-1 mod y
// (the steps of one thread's bf_inv_even_tail). Newton's iteration doubles the bits of
// y^-1 mod 2^32 and multiplies only the threads' shares those bits reach.
static __device__ __forceinline__ void bf_gg_inv_even_tail_{sx}(u32* v, const u32* y, const u32* m, const u32* z, const u32 k, const u32 gm) {{
  const u32 y0 = __shfl_sync(gm, y[0], 0, {tg});
  u32 inv = y0;
  #pragma unroll
  for (int j = 0; j < 4; ++j) inv *= 2u - y0 * inv;
  u32 yi[{l}], t[{l}];
  {unroll}
  for (int j = 0; j < {l}; ++j) yi[j] = (k == 0u && j == 0) ? inv : 0u;
  #pragma unroll 1
  for (u32 known = 32u; known < {bits}u; known *= 2u) {{
    const u32 reach = (2u * known + {lbits}u - 1u) / {lbits}u;
    const u32 n = reach < {tg}u ? reach : {tg}u;
    // yi = yi (2 - y yi); 2 - t = ~t + 3.
    bf_gg_mul_lo_{sx}(t, y, yi, n, k, gm);
    {unroll}
    for (int j = 0; j < {l}; ++j) t[j] = ~t[j];
    bf_gg_resolve_{sx}(t, k == 0u ? bf_gg_add_{sx}(t, 3) : 0, k, gm);
    bf_gg_mul_lo_{sx}(yi, yi, t, n, k, gm);
  }}
  // m z >= m >= 2: the 1 borrows nothing past the top.
  bf_gg_mul_lo_{sx}(t, m, z, {tg}u, k, gm);
  bf_gg_resolve_{sx}(t, k == 0u ? bf_gg_add_{sx}(t, -1) : 0, k, gm);
  bf_gg_mul_lo_{sx}(t, t, yi, {tg}u, k, gm);
  u64 borrow = 0ull;
  {unroll}
  for (int j = 0; j < {l}; ++j) {{
    const u64 x = (u64)m[j] - (u64)t[j] - borrow;
    v[j] = (u32)x;
    borrow = x >> 63;
  }}
  bf_gg_resolve_{sx}(v, -(int)borrow, k, gm);
}}
"#,
        bits = 32 * l * tg,
        lbits = 32 * l,
        l2 = 2 * l,
        unroll = unroll(l),
    );
    (format!("bf_gg_inv_even_tail_{sx}"), text)
}

/// The group's first lines: its thread index, lanes and first lane from the caller's lane.
fn group_start(tg: usize) -> String {
    let full = if tg == 32 {
        "0xffffffffu".to_string()
    } else {
        format!("{}u", (1u64 << tg) - 1)
    };
    format!(
        "  const u32 k = lane & {kmask}u;\n  const u32 base = lane & ~{kmask}u;\n  \
         const u32 gm = {full} << base;\n",
        kmask = tg - 1
    )
}

/// `gcd(a, b)` over a group (the plan's width and threads).
pub(crate) fn gcd_group_functions(plan: &GcdPlan) -> Vec<(String, String)> {
    let (s, tg) = (plan.words(), plan.threads as usize);
    let l = s / tg;
    let sx = suffix(l, tg);
    let name = plan.function_name();
    let text = format!(
        r#"// r = gcd(a, b) of {bits}-bit numbers over a group of {tg} threads (lane: the caller's lane in its
// warp), each thread's {l} words of each (a and b are overwritten). The steps of bf_gcd_{s}: the
// common power of two out, b odd, batches of 31 binary steps until a is zero.
static __device__ __forceinline__ void {name}(u32* r, u32* a, u32* b, const u32 lane) {{
{start}  // The common power of two: trailing zeros of a | b (all bits when both are zero).
  int lz = -1;
  {unroll}
  for (int j = {last}; j >= 0; --j) {{
    const u32 x = a[j] | b[j];
    if (x != 0u) lz = 32 * j + __ffs((int)x) - 1;
  }}
  const u32 has = bf_gg_bits_{sx}(lz >= 0, gm, base);
  const int low = __ffs((int)has) - 1;
  const int twos = has == 0u ? {bits} : low * {lbits} + (int)__shfl_sync(gm, (u32)lz, low < 0 ? 0 : low, {tg});
  bf_gg_shr_{sx}(a, twos, k, gm);
  bf_gg_shr_{sx}(b, twos, k, gm);
  if ((__shfl_sync(gm, b[0], 0, {tg}) & 1u) == 0u) {{
    {unroll}
    for (int j = 0; j < {l}; ++j) {{ const u32 x = a[j]; a[j] = b[j]; b[j] = x; }}
  }}
  #pragma unroll 1
  for (int round = 0; round < {rounds} && (__shfl_sync(gm, b[0], 0, {tg}) & 1u) != 0u && !bf_gg_zero_{sx}(a, gm, base); ++round) {{
    i64 f0, g0, f1, g1;
    bf_gg_factors_{sx}(a, b, &f0, &g0, &f1, &g1, k, gm, base);
    u32 na[{l}];
    bf_gg_apply_{sx}(na, a, b, f0, g0, k, gm);
    bf_gg_apply_{sx}(b, a, b, f1, g1, k, gm);
    {unroll}
    for (int j = 0; j < {l}; ++j) a[j] = na[j];
  }}
  bf_gg_shl_{sx}(b, twos, k, gm);
  {unroll}
  for (int j = 0; j < {l}; ++j) r[j] = b[j];
}}
"#,
        bits = 32 * s,
        unroll = unroll(l),
        lbits = 32 * l,
        last = l - 1,
        start = group_start(tg),
        rounds = rounds(s),
    );
    vec![steps_function(), helpers(l, tg), (name, text)]
}

/// `y^-1 mod m` over a group, and whether it exists.
pub(crate) fn inv_mod_group_functions(plan: &GcdPlan) -> Vec<(String, String)> {
    let (s, tg) = (plan.words(), plan.threads as usize);
    let l = s / tg;
    let sx = suffix(l, tg);
    let name = plan.function_name();
    let text = format!(
        r#"// r = (f u + g v) / 2^31 mod m over the group, for u, v < m, m odd: a multiple k m of m (k < 2^31)
// makes the sum divisible, as bf_inv_update_{s}'s.
static __device__ __forceinline__ void bf_gg_update_{sx}(u32* r, const u32* u, const u32* v, const i64 f, const i64 g, const u32* m, const u32 minv, const u32 k, const u32 gm) {{
  const u32 u0 = __shfl_sync(gm, u[0], 0, {tg}), v0 = __shfl_sync(gm, v[0], 0, {tg});
  const u32 q = ((u32)(f * (i64)u0 + g * (i64)v0) * minv) & 0x7fffffffu;
  u32 x[{l}];
  i64 c = 0;
  u64 d = 0ull;
  {unroll}
  for (int j = 0; j < {l}; ++j) {{
    const i64 t = f * (i64)u[j] + g * (i64)v[j] + c;
    c = t >> 32;
    const u64 y = (u64)q * (u64)m[j] + (u64)(u32)t + d;
    x[j] = (u32)y;
    d = y >> 32;
  }}
  // What a thread carries out, c + d, is in (-2^31, 2^32).
  const int cb = (int)__shfl_up_sync(gm, (u32)c, 1, {tg});
  const u32 db = __shfl_up_sync(gm, (u32)d, 1, {tg});
  const int e = bf_gg_add_{sx}(x, k == 0u ? 0 : (i64)cb + (i64)db);
  const int out = bf_gg_resolve_{sx}(x, e, k, gm);
  const i64 hi = (i64)(int)__shfl_sync(gm, (u32)c, {top}, {tg}) + (i64)__shfl_sync(gm, (u32)d, {top}, {tg}) + (i64)out;
  bf_gg_half_{sx}(r, x, hi, k, gm);
  // r + above 2^{bits} is in (-m, 2m): add m where negative, subtract it where at least m.
  const i64 above = hi >> 31;
  if (above < 0) {{
    u64 carry = 0ull;
    {unroll}
    for (int j = 0; j < {l}; ++j) {{
      const u64 y = (u64)r[j] + (u64)m[j] + carry;
      r[j] = (u32)y;
      carry = y >> 32;
    }}
    bf_gg_resolve_{sx}(r, (int)carry, k, gm);
  }} else {{
    u32 t[{l}];
    u64 borrow = 0ull;
    {unroll}
    for (int j = 0; j < {l}; ++j) {{
      const u64 y = (u64)r[j] - (u64)m[j] - borrow;
      t[j] = (u32)y;
      borrow = y >> 63;
    }}
    const int under = bf_gg_resolve_{sx}(t, -(int)borrow, k, gm);
    if (above > 0 || under == 0) {{
      {unroll}
      for (int j = 0; j < {l}; ++j) r[j] = t[j];
    }}
  }}
}}

// (y^-1 mod m, true) over the group, or false when there is none (gcd(y, m) > 1): odd m. The
// steps of bf_inv_mod_odd_{s}.
static __device__ __forceinline__ bool bf_gg_inv_odd_{sx}(u32* v, const u32* y, const u32* mod, const u32 k, const u32 gm, const u32 base) {{
  u32 a[{l}], b[{l}], u[{l}], m[{l}];
  {unroll}
  for (int j = 0; j < {l}; ++j) {{ a[j] = y[j]; b[j] = mod[j]; m[j] = mod[j]; u[j] = (k == 0u && j == 0) ? 1u : 0u; v[j] = 0u; }}
  // u = 1 mod m (0 when m = 1).
  if (bf_gg_one_{sx}(m, k, gm, base)) u[0] = 0u;
  const u32 m0 = __shfl_sync(gm, m[0], 0, {tg});
  u32 inv = m0;
  {unroll}
  for (int j = 0; j < 4; ++j) inv *= 2u - m0 * inv;
  const u32 minv = 0u - inv;
  #pragma unroll 1
  for (int round = 0; round < {rounds} && !bf_gg_zero_{sx}(a, gm, base); ++round) {{
    i64 f0, g0, f1, g1;
    bf_gg_factors_{sx}(a, b, &f0, &g0, &f1, &g1, k, gm, base);
    u32 na[{l}], nu[{l}];
    if (bf_gg_apply_{sx}(na, a, b, f0, g0, k, gm)) {{ f0 = -f0; g0 = -g0; }}
    if (bf_gg_apply_{sx}(b, a, b, f1, g1, k, gm)) {{ f1 = -f1; g1 = -g1; }}
    bf_gg_update_{sx}(nu, u, v, f0, g0, m, minv, k, gm);
    bf_gg_update_{sx}(v, u, v, f1, g1, m, minv, k, gm);
    {unroll}
    for (int j = 0; j < {l}; ++j) {{ a[j] = na[j]; u[j] = nu[j]; }}
  }}
  // b is gcd(y, m): the inverse is v where b = 1.
  return bf_gg_one_{sx}(b, k, gm, base) && (m0 & 1u) != 0u;
}}

// y^-1 mod an even m > 0 over the group: z = m^-1 mod y by the odd case (y odd), then
// bf_gg_inv_even_tail_{sx}.
static __device__ __forceinline__ bool bf_gg_inv_even_{sx}(u32* v, const u32* y, const u32* m, const u32 k, const u32 gm, const u32 base) {{
  if ((__shfl_sync(gm, y[0], 0, {tg}) & 1u) == 0u) return false;
  if (bf_gg_one_{sx}(y, k, gm, base)) {{
    {unroll}
    for (int j = 0; j < {l}; ++j) v[j] = (k == 0u && j == 0) ? 1u : 0u;
    return true;
  }}
  u32 z[{l}];
  if (!bf_gg_inv_odd_{sx}(z, m, y, k, gm, base)) return false;
  bf_gg_inv_even_tail_{sx}(v, y, m, z, k, gm);
  return true;
}}

// (v = y^-1 mod m, true) of {bits}-bit numbers over a group of {tg} threads (lane: the caller's lane
// in its warp), each thread's {l} words of each, or (v = 0, false) when there is none.
static __device__ __forceinline__ bool {name}(u32* v, const u32* y, const u32* m, const u32 lane) {{
{start}  const bool ok = (__shfl_sync(gm, m[0], 0, {tg}) & 1u) != 0u
      ? bf_gg_inv_odd_{sx}(v, y, m, k, gm, base)
      : !bf_gg_zero_{sx}(m, gm, base) && bf_gg_inv_even_{sx}(v, y, m, k, gm, base);
  if (!ok) {{
    {unroll}
    for (int j = 0; j < {l}; ++j) v[j] = 0u;
  }}
  return ok;
}}
"#,
        bits = 32 * s,
        unroll = unroll(l),
        top = tg - 1,
        start = group_start(tg),
        rounds = rounds(s),
    );
    vec![
        steps_function(),
        helpers(l, tg),
        even_tail(l, tg),
        (name, text),
    ]
}

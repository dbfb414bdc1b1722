//! `limb.gcd` and `limb.inv_mod` as C: one device function per width, computed by one thread
//! (see [`crate::gcd`] for the plan and why).
//!
//! Both are the binary GCD in Pornin's batched form ("Optimized Binary GCD for Modular
//! Inversion", 2020): with `b` odd, 31 steps of the binary GCD run on 64-bit approximations of `a`
//! and `b` (their low 31 bits, exact, and their top 33 bits at the longer one's length; the values
//! themselves once both fit in 64 bits), recording the steps as factors with `2^31 a' = f0 a + g0 b`
//! and `2^31 b' = f1 a + g1 b`; the factors are then applied to the whole numbers (a product by a
//! signed word per limb), and a result that an approximate comparison made negative is negated.
//! Every step keeps `gcd(a, b)` and, for the inverse of `y` modulo an odd `m` (`a = y`, `b = m`
//! at the start), `a = u y` and `b = v y` modulo `m` with `u, v` updated by the same factors
//! divided by `2^31` modulo `m` (Montgomery's trick: a multiple of `m` makes the sum divisible).
//! The loop ends when `a` is zero: `b` is the odd part of the gcd, and `v` the inverse when `b = 1`.
//!
//! Plain C over `u32`/`u64`/`long long`, compiled for the host by the tests below.

use super::Emitter;
use crate::gcd::GcdPlan;
use bigfuse_core::Type;

/// The 31 steps of the binary GCD on 64-bit approximations, as factors: one function for every
/// width, and for one thread as for a group (`gcd_group.rs`).
pub(super) fn steps_function() -> (String, String) {
    let text = r#"typedef long long i64;

// 31 steps of the binary GCD on approximations ax, bx of a and b (bx odd), as factors: afterwards
// 2^31 a' = f0 a + g0 b and 2^31 b' = f1 a + g1 b, with |f0| + |g0| <= 2^31 and |f1| + |g1| <= 2^31.
// The factors are kept in 32 bits, wrapping: every value before the last step is below 2^31 in
// magnitude, and the one that can reach 2^31 after it (a doubled f1 or g1, the other factor then
// zero) reads as -2^31, whose product the callers find negative and negate with the factors.
static __device__ __forceinline__ void bf_bingcd_steps(u64 ax, u64 bx, i64* f0, i64* g0, i64* f1, i64* g1) {
  u32 p0 = 1u, q0 = 0u, p1 = 0u, q1 = 1u;
  #pragma unroll 1
  for (int i = 0; i < 31; ++i) {
    const bool odd = (ax & 1ull) != 0ull;
    const bool swap = odd && ax < bx;
    const u64 ta = swap ? bx : ax, tb = swap ? ax : bx;
    const u32 tp0 = swap ? p1 : p0, tp1 = swap ? p0 : p1;
    const u32 tq0 = swap ? q1 : q0, tq1 = swap ? q0 : q1;
    ax = (odd ? ta - tb : ta) >> 1;
    bx = tb;
    p0 = odd ? tp0 - tp1 : tp0;
    q0 = odd ? tq0 - tq1 : tq0;
    p1 = tp1 << 1;
    q1 = tq1 << 1;
  }
  *f0 = (i64)(int)p0; *g0 = (i64)(int)q0; *f1 = (i64)(int)p1; *g1 = (i64)(int)q1;
}
"#;
    ("bf_bingcd_steps".to_string(), text.to_string())
}

/// Helpers of `s`-word numbers shared by the gcd and the inverse of one thread: the
/// approximations of the 31 steps and the application of their factors.
fn one_thread_functions(s: usize) -> (String, String) {
    let name = format!("bf_bingcd_{s}");
    let last = s - 1;
    let text = format!(
        r#"// True when an s-word number ({s} words) is zero.
static __device__ __forceinline__ bool bf_is_zero_{s}(const u32* a) {{
  u32 any = 0u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) any |= a[j];
  return any == 0u;
}}

// The factors of the next 31 steps of the binary GCD on a and b (b odd), from their low 31 bits
// and their top 33 bits at the longer one's length (bf_bingcd_steps).
static __device__ __forceinline__ void {name}(const u32* a, const u32* b, i64* f0, i64* g0, i64* f1, i64* g1) {{
  // The longer one's top word and its bit length there.
  int w = 0;
  u32 top = 0u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{
    const u32 x = a[j] | b[j];
    if (x != 0u) {{ w = j; top = x; }}
  }}
  u64 ax, bx;
  if (w < 2) {{
    // Both fit in 64 bits: the steps are exact.
    ax = (u64)a[0] | ((u64)a[{one}] << 32);
    bx = (u64)b[0] | ((u64)b[{one}] << 32);
  }} else {{
    // The low 31 bits and the top 33 bits at the longer one's length (r bits used in word w).
    const int r = 32 - __clz((int)top);
    u32 ah = 0u, am = 0u, bh = 0u, bm = 0u;
    #pragma unroll
    for (int j = 1; j < {s}; ++j) {{
      if (j == w) {{ ah = a[j]; am = a[j - 1]; bh = b[j]; bm = b[j - 1]; }}
    }}
    const u64 at = (((u64)ah << 32) | (u64)am) >> (r - 1);
    const u64 bt = (((u64)bh << 32) | (u64)bm) >> (r - 1);
    ax = (at << 31) | (u64)(a[0] & 0x7fffffffu);
    bx = (bt << 31) | (u64)(b[0] & 0x7fffffffu);
  }}
  bf_bingcd_steps(ax, bx, f0, g0, f1, g1);
}}

// r = (f a + g b) / 2^31 (exact) made nonnegative; returns true when it was negated (the caller
// negates f and g for the values that follow a and b).
static __device__ __forceinline__ bool bf_bingcd_apply_{s}(u32* r, const u32* a, const u32* b, const i64 f, const i64 g) {{
  u32 t[{s}];
  i64 c = 0;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{
    const i64 x = f * (i64)a[j] + g * (i64)b[j] + c;
    t[j] = (u32)x;
    c = x >> 32;
  }}
  #pragma unroll
  for (int j = 0; j < {last}; ++j) r[j] = (t[j] >> 31) | (t[j + 1] << 1);
  r[{last}] = (t[{last}] >> 31) | ((u32)c << 1);
  const bool negative = c < 0;
  u32 borrow = negative ? 1u : 0u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{
    // Two's complement where negative: ~r + 1.
    const u64 x = (u64)(negative ? ~r[j] : r[j]) + (u64)borrow;
    r[j] = (u32)x;
    borrow = (u32)(x >> 32);
  }}
  return negative;
}}
"#,
        one = if s > 1 { 1 } else { 0 },
    );
    (name, text)
}

/// `gcd(a, b)` of `s`-word numbers on 64-bit limbs.
pub(crate) fn gcd_functions(s: usize) -> Vec<(String, String)> {
    let name = format!("bf_gcd_{s}");
    let text = format!(
        r#"// gcd(a, b) of {bits}-bit numbers (gcd(0, b) = b, gcd(0, 0) = 0): the common factors of two taken
// out, b made odd, then batches of 31 binary steps until a is zero.
static __device__ __forceinline__ void {name}(u64* out, const u64* a64, const u64* b64) {{
  u32 a[{s}], b[{s}];
  #pragma unroll
  for (int j = 0; j < {half}; ++j) {{
    a[2 * j] = (u32)a64[j]; a[2 * j + 1] = (u32)(a64[j] >> 32);
    b[2 * j] = (u32)b64[j]; b[2 * j + 1] = (u32)(b64[j] >> 32);
  }}
  // The common power of two: trailing zeros of a | b (all bits when both are zero).
  int twos = 0;
  {{
    bool seen = false;
    #pragma unroll
    for (int j = 0; j < {s}; ++j) {{
      const u32 x = a[j] | b[j];
      if (!seen && x != 0u) {{ twos = 32 * j + (__ffs((int)x) - 1); seen = true; }}
    }}
    if (!seen) twos = {bits};
  }}
  bf_shr_{s}(a, twos);
  bf_shr_{s}(b, twos);
  // b odd (one of them is, unless both are zero).
  if ((b[0] & 1u) == 0u) {{
    #pragma unroll
    for (int j = 0; j < {s}; ++j) {{ const u32 x = a[j]; a[j] = b[j]; b[j] = x; }}
  }}
  #pragma unroll 1
  for (int round = 0; round < {rounds} && (b[0] & 1u) != 0u && !bf_is_zero_{s}(a); ++round) {{
    i64 f0, g0, f1, g1;
    bf_bingcd_{s}(a, b, &f0, &g0, &f1, &g1);
    u32 na[{s}];
    bf_bingcd_apply_{s}(na, a, b, f0, g0);
    bf_bingcd_apply_{s}(b, a, b, f1, g1);
    #pragma unroll
    for (int j = 0; j < {s}; ++j) a[j] = na[j];
  }}
  bf_shl_{s}(b, twos);
  #pragma unroll
  for (int j = 0; j < {half}; ++j) out[j] = ((u64)b[2 * j + 1] << 32) | (u64)b[2 * j];
}}
"#,
        bits = 32 * s,
        half = s / 2,
        rounds = rounds(s),
    );
    vec![
        steps_function(),
        one_thread_functions(s),
        shift_functions(s),
        (name, text),
    ]
}

/// Batches a loop may run: each batch of 31 steps shortens `a` and `b` together by at least 31
/// bits but for the last (Pornin, 2020: `2 len - 1` steps suffice), so this bound is never met
/// on the way; it only keeps a thread from looping on data no proof covers.
pub(super) fn rounds(s: usize) -> usize {
    (64 * s).div_ceil(31) + 4
}

/// Shifts of an `s`-word number by a run-time count of bits (`>= 32 s`: zero), a word a round.
fn shift_functions(s: usize) -> (String, String) {
    let name = format!("bf_shifts_{s}");
    let last = s - 1;
    let text = format!(
        r#"// a >>= k and a <<= k ({s} words; k >= {bits} gives zero).
static __device__ __forceinline__ void bf_shr_{s}(u32* a, int k) {{
  #pragma unroll 1
  for (; k >= 32; k -= 32) {{
    #pragma unroll
    for (int j = 0; j < {last}; ++j) a[j] = a[j + 1];
    a[{last}] = 0u;
  }}
  if (k > 0) {{
    #pragma unroll
    for (int j = 0; j < {last}; ++j) a[j] = (a[j] >> k) | (a[j + 1] << (32 - k));
    a[{last}] >>= k;
  }}
}}

static __device__ __forceinline__ void bf_shl_{s}(u32* a, int k) {{
  #pragma unroll 1
  for (; k >= 32; k -= 32) {{
    #pragma unroll
    for (int j = {last}; j > 0; --j) a[j] = a[j - 1];
    a[0] = 0u;
  }}
  if (k > 0) {{
    #pragma unroll
    for (int j = {last}; j > 0; --j) a[j] = (a[j] << k) | (a[j - 1] >> (32 - k));
    a[0] <<= k;
  }}
}}
"#,
        bits = 32 * s,
    );
    (name, text)
}

/// `y^-1 mod m` of `s`-word numbers on 64-bit limbs, and whether it exists.
pub(crate) fn inv_mod_functions(s: usize) -> Vec<(String, String)> {
    let name = format!("bf_inv_mod_{s}");
    let text = format!(
        r#"// r = (f u + g v) / 2^31 mod m for u, v < m, m odd ({s} words): a multiple k m of m (k < 2^31,
// k = -(f u + g v) / m mod 2^31 from minv = -m^-1 mod 2^32) makes the sum divisible.
static __device__ __forceinline__ void bf_inv_update_{s}(u32* r, const u32* u, const u32* v, const i64 f, const i64 g, const u32* m, const u32 minv) {{
  const u32 low = (u32)(f * (i64)u[0] + g * (i64)v[0]);
  const u32 k = (low * minv) & 0x7fffffffu;
  u32 t[{s}];
  i64 c = 0;
  u64 d = 0ull;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{
    const i64 x = f * (i64)u[j] + g * (i64)v[j] + c;
    c = x >> 32;
    const u64 y = (u64)k * (u64)m[j] + (u64)(u32)x + d;
    t[j] = (u32)y;
    d = y >> 32;
  }}
  // The sum is t + (c + d) 2^{bits}, divisible by 2^31, in (-m 2^31, 2m 2^31).
  const i64 hi = c + (i64)d;
  #pragma unroll
  for (int j = 0; j < {last}; ++j) r[j] = (t[j] >> 31) | (t[j + 1] << 1);
  r[{last}] = (t[{last}] >> 31) | ((u32)hi << 1);
  const i64 above = hi >> 31;
  // r + above 2^{bits} in (-m, 2m): add m where negative, subtract it where at least m.
  const bool negative = above < 0;
  u32 g2 = 0u, p2 = 1u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{
    g2 = (u32)(((u64)r[j] - (u64)m[j] - (u64)g2) >> 63);
    p2 &= (u32)(r[j] == m[j]);
  }}
  const bool at_least = above > 0 || g2 == 0u;
  u64 carry = 0ull;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{
    const u64 x = negative ? (u64)r[j] + (u64)m[j] + carry : (u64)r[j] - (u64)(at_least ? m[j] : 0u) - carry;
    r[j] = (u32)x;
    carry = negative ? x >> 32 : x >> 63;
  }}
  (void)p2;
}}

// (y^-1 mod m, true), or false when there is none (gcd(y, m) > 1): {bits}-bit y and odd m.
static __device__ __forceinline__ bool bf_inv_mod_odd_{s}(u32* v, const u32* y, const u32* mod) {{
  // Copies in registers (the caller's may live in local memory).
  u32 a[{s}], b[{s}], u[{s}], m[{s}];
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{ a[j] = y[j]; b[j] = mod[j]; m[j] = mod[j]; u[j] = j == 0 ? 1u : 0u; v[j] = 0u; }}
  // u = 1 mod m (0 when m = 1).
  bool one = m[0] == 1u;
  #pragma unroll
  for (int j = 1; j < {s}; ++j) one = one && m[j] == 0u;
  if (one) u[0] = 0u;
  u32 inv = m[0];
  #pragma unroll
  for (int j = 0; j < 4; ++j) inv *= 2u - m[0] * inv;
  const u32 minv = 0u - inv;
  #pragma unroll 1
  for (int round = 0; round < {rounds} && !bf_is_zero_{s}(a); ++round) {{
    i64 f0, g0, f1, g1;
    bf_bingcd_{s}(a, b, &f0, &g0, &f1, &g1);
    u32 na[{s}], nu[{s}];
    if (bf_bingcd_apply_{s}(na, a, b, f0, g0)) {{ f0 = -f0; g0 = -g0; }}
    if (bf_bingcd_apply_{s}(b, a, b, f1, g1)) {{ f1 = -f1; g1 = -g1; }}
    bf_inv_update_{s}(nu, u, v, f0, g0, m, minv);
    bf_inv_update_{s}(v, u, v, f1, g1, m, minv);
    #pragma unroll
    for (int j = 0; j < {s}; ++j) {{ a[j] = na[j]; u[j] = nu[j]; }}
  }}
  // b is gcd(y, m): the inverse is v where b = 1.
  bool unit = b[0] == 1u;
  #pragma unroll
  for (int j = 1; j < {s}; ++j) unit = unit && b[j] == 0u;
  return unit && (m[0] & 1u) != 0u;
}}

// y^-1 mod an even m (m > 0): y must be odd, and then z = m^-1 mod y (the odd case, roles
// swapped) gives it (bf_inv_even_tail_{s}).
static __device__ __forceinline__ bool bf_inv_mod_even_{s}(u32* v, const u32* y, const u32* m) {{
  if ((y[0] & 1u) == 0u) return false;
  bool one = y[0] == 1u;
  #pragma unroll
  for (int j = 1; j < {s}; ++j) one = one && y[j] == 0u;
  if (one) {{
    // 1^-1 = 1 (m is even, so at least 2).
    #pragma unroll
    for (int j = 0; j < {s}; ++j) v[j] = j == 0 ? 1u : 0u;
    return true;
  }}
  u32 z[{s}];
  if (!bf_inv_mod_odd_{s}(z, m, y)) return false;
  bf_inv_even_tail_{s}(v, y, m, z);
  return true;
}}

static __device__ __forceinline__ bool {name}(u64* out, const u64* y64, const u64* m64) {{
  u32 y[{s}], m[{s}], v[{s}];
  #pragma unroll
  for (int j = 0; j < {half}; ++j) {{
    y[2 * j] = (u32)y64[j]; y[2 * j + 1] = (u32)(y64[j] >> 32);
    m[2 * j] = (u32)m64[j]; m[2 * j + 1] = (u32)(m64[j] >> 32);
  }}
  const bool ok = (m[0] & 1u) != 0u ? bf_inv_mod_odd_{s}(v, y, m)
                                    : !bf_is_zero_{s}(m) && bf_inv_mod_even_{s}(v, y, m);
  #pragma unroll
  for (int j = 0; j < {half}; ++j) out[j] = ok ? (((u64)v[2 * j + 1] << 32) | (u64)v[2 * j]) : 0ull;
  return ok;
}}
"#,
        bits = 32 * s,
        last = s - 1,
        half = s / 2,
        rounds = rounds(s),
    );
    vec![
        steps_function(),
        one_thread_functions(s),
        even_tail_function(s),
        (name, text),
    ]
}

/// The widest numbers whose word loops the end of an inverse modulo an even number unrolls: one
/// thread's inverses (up to [`crate::gcd::INVERSE_WORDS_ALONE`] words) hold them in registers.
/// A group's whole numbers lie in local memory, where unrolling buys nothing and NVRTC took
/// 45 s on the loops of a 65536-bit inverse (2,048 words).
const UNROLLED_TAIL_WORDS: usize = 64;

/// The end of an inverse modulo an even number, on whole `s`-word numbers (one thread's, or every
/// thread's of a group: `gcd_group.rs`). Its products' loops stay loops: only inverses modulo
/// even numbers use them, a few times each.
pub(super) fn even_tail_function(s: usize) -> (String, String) {
    let text = format!(
        r#"// r = a b mod 2^{bits}: the low half of a product (r may be a or b).
static __device__ __forceinline__ void bf_mul_lo_{s}(u32* r, const u32* a, const u32* b) {{
  u32 t[{s}];
  #pragma unroll 1
  for (int j = 0; j < {s}; ++j) t[j] = 0u;
  #pragma unroll 1
  for (int i = 0; i < {s}; ++i) {{
    u32 c = 0u;
    #pragma unroll 1
    for (int j = 0; j + i < {s}; ++j) {{
      const u64 p = (u64)a[i] * (u64)b[j] + (u64)t[i + j] + (u64)c;
      t[i + j] = (u32)p;
      c = (u32)(p >> 32);
    }}
  }}
  #pragma unroll 1
  for (int j = 0; j < {s}; ++j) r[j] = t[j];
}}

// v = m - k with k = (m z - 1) y^-1 mod 2^{bits}, for odd y > 1, even m and z = m^-1 mod y: then
// m z - 1 = k y with 0 < k < m, so y v = 1 mod m (Newton's iteration doubles the bits of y^-1
// mod 2^32).
static __device__ __forceinline__ void bf_inv_even_tail_{s}(u32* v, const u32* y, const u32* m, const u32* z) {{
  u32 yi[{s}], t[{s}], k[{s}];
  u32 inv = y[0];
  #pragma unroll
  for (int j = 0; j < 4; ++j) inv *= 2u - y[0] * inv;
  {unroll}
  for (int j = 0; j < {s}; ++j) yi[j] = j == 0 ? inv : 0u;
  #pragma unroll 1
  for (int bits = 32; bits < {bits}; bits *= 2) {{
    // yi = yi (2 - y yi)
    bf_mul_lo_{s}(t, y, yi);
    u32 borrow = 0u;
    {unroll}
    for (int j = 0; j < {s}; ++j) {{
      const u64 x = (u64)(j == 0 ? 2u : 0u) - (u64)t[j] - (u64)borrow;
      t[j] = (u32)x;
      borrow = (u32)(x >> 63);
    }}
    bf_mul_lo_{s}(yi, yi, t);
  }}
  // k = (m z - 1) y^-1 mod 2^{bits}; m z >= m >= 2, so the 1 borrows nothing past the top.
  bf_mul_lo_{s}(t, m, z);
  u32 borrow = 1u;
  {unroll}
  for (int j = 0; j < {s}; ++j) {{
    const u64 x = (u64)t[j] - (u64)borrow;
    t[j] = (u32)x;
    borrow = (u32)(x >> 63);
  }}
  bf_mul_lo_{s}(k, t, yi);
  borrow = 0u;
  {unroll}
  for (int j = 0; j < {s}; ++j) {{
    const u64 x = (u64)m[j] - (u64)k[j] - (u64)borrow;
    v[j] = (u32)x;
    borrow = (u32)(x >> 63);
  }}
}}

"#,
        bits = 32 * s,
        unroll = if s <= UNROLLED_TAIL_WORDS {
            "#pragma unroll"
        } else {
            "#pragma unroll 1"
        },
    );
    (format!("bf_inv_even_tail_{s}"), text)
}

impl Emitter<'_> {
    /// The limbs of `gcd(a, b)` through the device function of their width; by the instance's
    /// threads together where it has several. With `into` (a buffer and its words per instance:
    /// the kernel's result), the group writes the gcd there, and nothing reads the limbs returned.
    pub(super) fn gcd_call(
        &mut self,
        a: &[String],
        b: &[String],
        into: Option<(String, u64)>,
    ) -> Vec<String> {
        self.gcd_plan_call(GcdPlan::new(64 * a.len() as u64, false), &[a, b], into)
    }

    /// The limbs of `y^-1 mod m` and whether it exists (a bool, last); with `into`, the group
    /// writes the limbs there, as [`Self::gcd_call`] the gcd.
    pub(super) fn inv_mod_call(
        &mut self,
        y: &[String],
        m: &[String],
        into: Option<(String, u64)>,
    ) -> Vec<String> {
        self.gcd_plan_call(GcdPlan::new(64 * y.len() as u64, true), &[y, m], into)
    }

    fn gcd_plan_call(
        &mut self,
        plan: GcdPlan,
        operands: &[&[String]],
        into: Option<(String, u64)>,
    ) -> Vec<String> {
        let threads = self.sched.group_threads;
        // The schedule took its thread count from this plan.
        let plan = plan
            .with_threads(threads)
            .expect("the schedule splits gcds and inverses only as their plans do");
        let s = plan.words();
        if threads > 1 {
            return self.group_call(plan, operands, into);
        }
        assert!(into.is_none(), "only groups write where the result goes");
        let functions = if plan.inverse {
            inv_mod_functions(s)
        } else {
            gcd_functions(s)
        };
        let name = plan.function_name();
        self.device_call(functions, &name, s / 2, operands, &[], plan.inverse)
    }

    /// A gcd or inverse on the instance's group of threads: each thread's words of each operand
    /// read where the operand lies in global memory (a parameter read in place:
    /// [`crate::place::read_in_place`]) or taken from the first thread's (which computed it),
    /// and the result's words written where it goes (`into`) or given whole to every thread.
    fn group_call(
        &mut self,
        plan: GcdPlan,
        operands: &[&[String]],
        into: Option<(String, u64)>,
    ) -> Vec<String> {
        use super::gcd_group::{gcd_group_functions, inv_mod_group_functions};
        let functions = if plan.inverse {
            inv_mod_group_functions(&plan)
        } else {
            gcd_group_functions(&plan)
        };
        for (f, text) in functions {
            self.device_function(&f, |em| em.src.out.push_str(&text));
        }
        let (s, l) = (plan.words(), plan.words() / plan.threads as usize);
        let sx = format!("{l}_g{}", plan.threads);
        let r = self.temp();
        if into.is_none() {
            self.line(format!("__align__(16) u64 {r}[{}];", s / 2));
        }
        let flag = plan.inverse.then(|| self.temp());
        if let Some(f) = &flag {
            self.line(format!("bool {f};"));
        }
        self.open("{");
        let mut args = vec![format!("{r}_w")];
        self.line(format!("u32 {r}_w[{l}];"));
        for (k, leaves) in operands.iter().enumerate() {
            let words = format!("{r}_{k}");
            self.line(format!("u32 {words}[{l}];"));
            let at = super::scalar::words_in_order(leaves)
                .filter(|w| self.in_place.iter().any(|(p, _)| p == w));
            match at {
                Some(w) => self.line(format!("bf_gg_load_{sx}({words}, {w}, lane);")),
                None => {
                    self.line(format!(
                        "__align__(16) const u64 p{k}[{}] = {{{}}};",
                        leaves.len(),
                        leaves.join(", ")
                    ));
                    self.line(format!("bf_gg_take_{sx}({words}, p{k}, lane);"));
                }
            }
            args.push(words);
        }
        args.push("lane".into());
        let call = format!("{}({})", plan.function_name(), args.join(", "));
        match &flag {
            Some(f) => self.line(format!("{f} = {call};")),
            None => self.line(format!("{call};")),
        }
        match &into {
            Some((buffer, units)) => self.line(format!(
                "if (live) bf_gg_store_{sx}({buffer} + inst * {units}ull, {r}_w, lane);"
            )),
            None => self.line(format!("bf_gg_give_{sx}({r}, {r}_w, lane);")),
        }
        self.close("}");
        if into.is_some() {
            // Nothing reads the number; the flag is the function's.
            let mut leaves = vec!["0ull".to_string(); s / 2];
            leaves.extend(flag);
            return leaves;
        }
        let mut types = vec![Type::U64; s / 2];
        let mut exprs: Vec<String> = (0..s / 2).map(|k| format!("{r}[{k}]")).collect();
        if let Some(f) = flag {
            types.push(Type::Bool);
            exprs.push(f);
        }
        self.bind(&types, exprs)
    }
}

#[cfg(test)]
mod tests {
    use super::super::host;
    use super::*;
    use num_bigint::BigUint;
    use std::fmt::Write;

    /// Compiles `functions` with a `main` that reads pairs of `s`-word numbers (64-bit limbs in
    /// decimal) and prints what `call` makes of them.
    fn run_host(
        tag: &str,
        functions: Vec<(String, String)>,
        s: usize,
        call: &str,
        input: &str,
    ) -> String {
        let mut src = String::from(host::PRELUDE);
        for (_, text) in functions {
            src.push_str(&text);
        }
        let h = s / 2;
        let _ = write!(
            src,
            r#"int main() {{
  u64 a[{h}], b[{h}], r[{h}];
  for (;;) {{
    for (int j = 0; j < {h}; ++j) if (scanf("%llu", &a[j]) != 1) return 0;
    for (int j = 0; j < {h}; ++j) scanf("%llu", &b[j]);
    {call}
    for (int j = 0; j < {h}; ++j) printf("%llu ", r[j]);
    printf("\n");
  }}
}}
"#
        );
        host::run(&format!("{tag}-{s}"), &src, input)
    }

    /// Euclid's algorithm, the reference.
    fn euclid(x: &BigUint, y: &BigUint) -> BigUint {
        let (mut a, mut b) = (x.clone(), y.clone());
        while b != BigUint::from(0u8) {
            let r = &a % &b;
            a = b;
            b = r;
        }
        a
    }

    /// Random numbers of every length, with common powers of two and common factors, and edges.
    fn pairs(s: usize, seed: u64) -> Vec<(BigUint, BigUint)> {
        let bits = 32 * s as u64;
        let mut word = host::words(seed);
        let mut num = |b: u64| {
            let digits: Vec<u32> = (0..b.div_ceil(32)).map(|_| word() as u32).collect();
            BigUint::from_slice(&digits) % (BigUint::from(1u8) << b)
        };
        let one = BigUint::from(1u8);
        let all = (&one << bits) - 1u8;
        let mut out = Vec::new();
        for i in 0..24u64 {
            let (la, lb) = (1 + (i * 37) % bits, 1 + (i * 53 + 7) % bits);
            let (mut x, mut y) = (num(la), num(lb));
            if i % 3 == 0 {
                // A common factor and a common power of two.
                let c = num(bits / 3) | &one;
                x = ((x * &c) << (i % 5)) % (&one << bits);
                y = ((y * &c) << (i % 7)) % (&one << bits);
            }
            out.push((x, y));
        }
        for _ in 0..6 {
            out.push((num(bits), num(bits)));
        }
        let b = |v: u64| BigUint::from(v);
        for (x, y) in [
            (b(0), b(0)),
            (b(0), b(12)),
            (b(18), b(0)),
            (b(1), b(1)),
            (all.clone(), all.clone()),
            (all.clone(), b(3)),
            (&one << (bits - 1), &one << (bits - 2)),
            (all.clone() - 1u8, all.clone()),
            (b(2), all.clone()),
            (b(6), b(9)),
            // 31 steps or more on an even approximation: a factor reaches 2^31.
            (&one << (bits - 1), all.clone()),
            ((b(3) << 40u32) % (&one << bits), all.clone() - 2u8),
        ] {
            out.push((x, y));
        }
        out
    }

    fn input(pairs: &[(BigUint, BigUint)], s: usize) -> String {
        let mut text = String::new();
        for (x, y) in pairs {
            text.push_str(&host::limbs(x, s / 2));
            text.push_str(&host::limbs(y, s / 2));
            text.push('\n');
        }
        text
    }

    /// Many random full-width operands (the bench's shape), where rare failures would show.
    #[test]
    #[ignore = "a stress run: cargo test -p bigfuse-codegen --lib stress -- --ignored"]
    fn stress_inverses_and_gcds_on_the_host() {
        for s in [32usize, 64] {
            let bits = 32 * s as u64;
            let mut word = host::words(12345 + s as u64);
            // Random pairs, and pairs whose words agree or are complements in places (their
            // approximations then agree): the bench's operands have such words.
            let cases: Vec<(BigUint, BigUint)> = (0..20000)
                .map(|i| {
                    let a: Vec<u32> = (0..s).map(|_| word() as u32).collect();
                    let mut b: Vec<u32> = (0..s).map(|_| word() as u32).collect();
                    for j in 0..s {
                        match (i % 5, word() % 4) {
                            (1, 0) => b[j] = !a[j],
                            (2, _) if j + 2 >= s => b[j] = a[j],
                            (3, _) if j + 1 == s => b[j] = !a[j],
                            (4, 0) => b[j] = a[j],
                            _ => {}
                        }
                    }
                    (
                        BigUint::from_slice(&a),
                        BigUint::from_slice(&b) | BigUint::from(1u8),
                    )
                })
                .collect();
            let out = run_host(
                "stress",
                inv_mod_functions(s),
                s,
                &format!("const bool ok = bf_inv_mod_{s}(r, a, b); printf(\"%d \", ok ? 1 : 0);"),
                &input(&cases, s),
            );
            let mut bad = 0;
            for ((y, m), line) in cases.iter().zip(out.lines()) {
                let (flag, words) = line.split_once(' ').unwrap();
                let want = y.modinv(m);
                if (flag == "1") != want.is_some()
                    || host::number(words) != want.clone().unwrap_or_default()
                {
                    bad += 1;
                    if bad < 4 {
                        eprintln!(
                            "{bits} bits: {y}^-1 mod {m}: got {flag} {}",
                            host::number(words)
                        );
                    }
                }
            }
            assert_eq!(
                bad,
                0,
                "{bad} of {} inverses differ at {bits} bits",
                cases.len()
            );
        }
    }

    #[test]
    fn gcds_equal_num_bigint_on_the_host() {
        for s in [2usize, 4, 6, 10, 16, 32, 34, 64] {
            let cases = pairs(s, s as u64);
            let out = run_host(
                "gcd",
                gcd_functions(s),
                s,
                &format!("bf_gcd_{s}(r, a, b);"),
                &input(&cases, s),
            );
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), cases.len(), "{out}");
            for ((x, y), line) in cases.iter().zip(lines) {
                assert_eq!(
                    host::number(line),
                    euclid(x, y),
                    "gcd({x}, {y}) at {} bits",
                    32 * s
                );
            }
        }
    }

    #[test]
    fn inverses_equal_num_bigint_on_the_host() {
        for s in [2usize, 4, 6, 10, 16, 32, 34, 64] {
            let mut cases = pairs(s, 3 * s as u64);
            // Odd moduli mostly, even ones with odd bases (which may have inverses), small moduli.
            for (k, (y, m)) in cases.iter_mut().enumerate() {
                if k % 4 != 3 {
                    *m |= BigUint::from(1u8);
                } else if k % 8 == 3 {
                    *y |= BigUint::from(1u8);
                }
            }
            let b = |v: u32| BigUint::from(v);
            for (y, m) in [
                (5, 1),
                (5, 3),
                (6, 3),
                (3, 4),
                (1, 2),
                (1, 8),
                (7, 2),
                (9, 6),
                (0, 7),
            ] {
                cases.push((b(y), b(m)));
            }
            let out = run_host(
                "inv",
                inv_mod_functions(s),
                s,
                &format!("const bool ok = bf_inv_mod_{s}(r, a, b); printf(\"%d \", ok ? 1 : 0);"),
                &input(&cases, s),
            );
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), cases.len(), "{out}");
            for ((y, m), line) in cases.iter().zip(lines) {
                let (flag, words) = line.split_once(' ').unwrap();
                let got = host::number(words);
                let want = if *m == BigUint::from(0u8) {
                    None
                } else {
                    y.modinv(m)
                };
                match want {
                    Some(w) => {
                        assert_eq!(flag, "1", "{y}^-1 mod {m} exists ({} bits)", 32 * s);
                        assert_eq!(got, w, "{y}^-1 mod {m} at {} bits", 32 * s);
                    }
                    None => {
                        assert_eq!(flag, "0", "{y}^-1 mod {m} does not exist ({} bits)", 32 * s);
                        assert_eq!(got, BigUint::from(0u8));
                    }
                }
            }
        }
    }

    /// Compiles the group functions of `plan` with a `main` that runs each pair on `T` host
    /// threads and prints the flag (1 for a gcd) and the result. `in_place`: every thread reads
    /// its words of the operands where they lie and writes its words of the result into one
    /// array (`bf_gg_load`, `bf_gg_store`); else the first thread gets the operands, the others
    /// zeros (`bf_gg_take`), and every thread gets the whole result (`bf_gg_give`), which must
    /// agree.
    fn run_group(plan: &GcdPlan, input: &str, in_place: bool) -> String {
        let g = plan.threads;
        let mut src = String::from(host::PRELUDE);
        src.push_str(&host::group_prelude(g));
        let functions = if plan.inverse {
            super::super::gcd_group::inv_mod_group_functions(plan)
        } else {
            super::super::gcd_group::gcd_group_functions(plan)
        };
        for (_, text) in functions {
            src.push_str(&text);
        }
        let h = plan.words() / 2;
        let l = plan.words() / g as usize;
        let sx = format!("{l}_g{g}");
        let f = plan.function_name();
        let (read, write) = if in_place {
            (
                format!("bf_gg_load_{sx}(ga, a, k); bf_gg_load_{sx}(gb, b, k);"),
                format!("bf_gg_store_{sx}(r[0], gr, k);"),
            )
        } else {
            (
                format!(
                    "bf_gg_take_{sx}(ga, k == 0 ? a : za, k); bf_gg_take_{sx}(gb, k == 0 ? b : zb, k);"
                ),
                format!("bf_gg_give_{sx}(r[k], gr, k);"),
            )
        };
        let call = if plan.inverse {
            format!("ok[k] = {f}(gr, ga, gb, (u32)k)")
        } else {
            format!("{f}(gr, ga, gb, (u32)k); ok[k] = true")
        };
        let agree = if in_place { 0 } else { g };
        let _ = write!(
            src,
            r#"int main() {{
  static u64 a[{h}], b[{h}], r[{g}][{h}], za[{h}], zb[{h}];
  static bool ok[{g}];
  std::barrier<> bar({g});
  bf_bar = &bar;
  for (;;) {{
    for (int j = 0; j < {h}; ++j) if (scanf("%llu", &a[j]) != 1) return 0;
    for (int j = 0; j < {h}; ++j) scanf("%llu", &b[j]);
    std::vector<std::thread> group;
    for (int k = 0; k < {g}; ++k)
      group.emplace_back([&, k] {{
        bf_lane = k;
        u32 ga[{l}], gb[{l}], gr[{l}];
        {read}
        {call};
        {write}
      }});
    for (auto& t : group) t.join();
    for (int k = 1; k < {g}; ++k)
      if (ok[k] != ok[0]) {{ printf("thread %d disagrees\n", k); return 1; }}
    for (int k = 1; k < {agree}; ++k)
      for (int j = 0; j < {h}; ++j)
        if (r[k][j] != r[0][j]) {{ printf("thread %d disagrees\n", k); return 1; }}
    printf("%d ", ok[0] ? 1 : 0);
    for (int j = 0; j < {h}; ++j) printf("%llu ", r[0][j]);
    printf("\n");
  }}
}}
"#
        );
        let tag = format!(
            "{}-{}-g{g}{}",
            if plan.inverse { "ginv" } else { "ggcd" },
            plan.bits,
            if in_place { "-m" } else { "" }
        );
        host::run(&tag, &src, input)
    }

    /// Pairs whose carries between a group's threads run long: words of all ones and zeros
    /// across threads' boundaries, and values just under a power of two.
    fn boundary_pairs(s: usize) -> Vec<(BigUint, BigUint)> {
        let bits = 32 * s as u64;
        let one = BigUint::from(1u8);
        let all = (&one << bits) - 1u8;
        let half = (&one << (bits / 2)) - 1u8;
        vec![
            (half.clone(), all.clone()),
            (all.clone() - &half, half.clone() | &one),
            ((&one << (bits - 1)) + 1u8, (&one << (bits / 2)) + 1u8),
            (all.clone() - 2u8, (&one << (bits - 1)) - 1u8),
            (&half << (bits / 4), all.clone()),
        ]
    }

    #[test]
    fn groups_of_threads_compute_gcds_equal_to_num_bigint_on_the_host() {
        for (s, threads) in [(8usize, 2u32), (8, 4), (16, 8), (64, 4), (128, 2), (256, 2)] {
            let plan = GcdPlan::new(32 * s as u64, false)
                .with_threads(threads)
                .unwrap();
            let mut cases = pairs(s, 7 * s as u64 + threads as u64);
            if s >= 64 {
                // The long ones are slow on host threads: fewer of them.
                cases.truncate(12);
            }
            cases.extend(boundary_pairs(s));
            let out = run_group(&plan, &input(&cases, s), threads != 4);
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), cases.len(), "{out}");
            for ((x, y), line) in cases.iter().zip(lines) {
                let (_, words) = line.split_once(' ').unwrap();
                assert_eq!(
                    host::number(words),
                    euclid(x, y),
                    "gcd({x}, {y}) at {} bits on {threads} threads",
                    32 * s
                );
            }
        }
    }

    /// Even moduli of every kind with odd numbers below them, most of which have inverses: the
    /// end of an even modulus's inverse (`bf_gg_inv_even_tail`) multiplies over the whole group.
    fn even_moduli(s: usize, seed: u64) -> Vec<(BigUint, BigUint)> {
        let bits = 32 * s as u64;
        let one = BigUint::from(1u8);
        let all = (&one << bits) - 1u8;
        let mut word = host::words(seed);
        let mut num = |b: u64| {
            let digits: Vec<u32> = (0..b.div_ceil(32)).map(|_| word() as u32).collect();
            BigUint::from_slice(&digits) % (&one << b)
        };
        let mut out = Vec::new();
        for i in 0..6u64 {
            let m = num(bits - 3 * i) & (&all - 1u8);
            out.push((num(bits) | &one, m.clone()));
            out.push((num(bits / 2 + i) | &one, m | (&one << (bits - 1))));
        }
        out.push((num(bits) | &one, &one << (bits - 1)));
        out.push((all.clone(), all.clone() - 1u8));
        out.push((all.clone() - 2u8, (&one << (bits - 1)) + 2u8));
        out.push((BigUint::from(3u8), all.clone() - 1u8));
        out
    }

    #[test]
    fn groups_of_threads_compute_inverses_equal_to_num_bigint_on_the_host() {
        for (s, threads) in [
            (8usize, 2u32),
            (8, 4),
            (16, 8),
            (64, 2),
            (128, 4),
            (256, 2),
            (64, 32),
            (256, 16),
        ] {
            let plan = GcdPlan::new(32 * s as u64, true)
                .with_threads(threads)
                .unwrap();
            let mut cases = pairs(s, 11 * s as u64 + threads as u64);
            if s >= 64 {
                cases.truncate(12);
            }
            cases.extend(boundary_pairs(s));
            for (k, (y, m)) in cases.iter_mut().enumerate() {
                if k % 4 != 3 {
                    *m |= BigUint::from(1u8);
                } else if k % 8 == 3 {
                    *y |= BigUint::from(1u8);
                }
            }
            cases.extend(even_moduli(s, 5 * s as u64 + threads as u64));
            let b = |v: u32| BigUint::from(v);
            for (y, m) in [(5, 1), (6, 3), (3, 4), (1, 2), (9, 6), (0, 7), (7, 0)] {
                cases.push((b(y), b(m)));
            }
            let out = run_group(&plan, &input(&cases, s), threads != 4);
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), cases.len(), "{out}");
            for ((y, m), line) in cases.iter().zip(lines) {
                let (flag, words) = line.split_once(' ').unwrap();
                let want = if *m == BigUint::from(0u8) {
                    None
                } else {
                    y.modinv(m)
                };
                let at = format!("{y}^-1 mod {m} at {} bits on {threads} threads", 32 * s);
                match want {
                    Some(w) => {
                        assert_eq!(flag, "1", "{at} exists");
                        assert_eq!(host::number(words), w, "{at}");
                    }
                    None => {
                        assert_eq!(flag, "0", "{at} does not exist");
                        assert_eq!(host::number(words), BigUint::from(0u8), "{at}");
                    }
                }
            }
        }
    }
}

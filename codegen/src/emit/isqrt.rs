//! `limb.isqrt` as C: the square root of a big integer by one thread, one device function per
//! width whose loops stay loops, so that its text is a few KB at every width.
//!
//! Zimmermann's Karatsuba square root (Brent & Zimmermann, *Modern Computer Arithmetic*,
//! Algorithm 1.12, SqrtRem) taken bottom-up: the value is zero-extended to `N` bits (a power of
//! two) and shifted up by an even amount until one of its top two bits is set; the root `s` and
//! remainder `r` of its top 64 bits come from a 64-bit Newton iteration; then each level takes
//! the next two `k`-bit digits `a1`, `a0` below the `2k` bits done (`k` = 32, 64, .., N/4):
//!
//! ```text
//! (q, u) = divrem(r 2^k + a1, 2 s);   s = s 2^k + q;   r = u 2^k + a0 - q^2
//! if r < 0: r += 2 s - 1, s -= 1
//! ```
//!
//! The level of `k = 32` runs on scalars; the others on 64-bit limbs, whose rows and columns are
//! half as many as 32-bit words' (the function is bound by the latency of its local memory: a
//! quarter of the loads and stores made it 1.85x / 2.0x faster at 8192- / 16384-bit values on an
//! H200, bench/RESULTS.md 2026-11-29). The root before a level has its top bit set, so the
//! division by `2 s` divides by `s` itself, already normalized (Knuth's Algorithm D with no
//! shifts, each quotient limb estimated from a precomputed reciprocal of the top limb as in
//! `emit/divide.rs`), and halves: `q = q1 / 2`, `u = u1 + (q1 mod 2) s`. `q <= 2^k`, so `q^2` is
//! the square of its low `k` bits (each cross product once) or exactly `2^2k`. The division's
//! rows and the square's go [`ROOT_ROWS_A_PASS`] at a time, so that each limb of the arrays is
//! loaded and stored once for that many products. At the end the root is shifted back by half
//! the normalizing amount. Every array lives in local memory; the time depends on the value's
//! length (rows above the top are skipped by the normalization), so it is not constant-time.
//!
//! Plain C over `u64` and `unsigned __int128`, so the tests below compile it for the host and
//! check it against num-bigint without a GPU.

use super::divide::{limb_rows, LIMB_ESTIMATE};
use super::Emitter;
use crate::divide::root_width;

/// Rows a pass of the levels' divisions ([`limb_rows`]'s `block`) and squares
/// ([`SQUARE_ROWS`]). The function is bound by its local memory's traffic, which rows in blocks
/// divide. The wide root of 2 BITS-bit values at 4096 / 16384 / 65536 bits on an NVIDIA H200
/// (bench/RESULTS.md 2026-11-29, twenty-sixth session), the divisions alone in blocks, against
/// two rows a pass (the twenty-fifth session's figures): 4 rows 1.09x / 1.18x / 1.00x, 8 rows
/// 1.07x / 1.30x / 1.28x, 12 rows - / 1.01x / 1.11x, 16 rows - / 0.79x / 0.99x (64 registers a
/// thread; local memory at 16384 bits 15,536 / 15,712 / 15,984 bytes for 8 / 12 / 16 rows: the
/// wider blocks spill). The squares in blocks of 8 too: 1.25x / 1.40x more at 16384 /
/// 65536 bits.
const ROOT_ROWS_A_PASS: usize = 8;

/// The name of the root function of a value of `limbs` u64 limbs.
fn isqrt_name(limbs: usize) -> String {
    format!("bf_isqrt_{}", 64 * limbs)
}

/// The root function of a value of `limbs` u64 limbs: `bf_isqrt_<bits>(u64* out, const u64* a,
/// int n)` writes the low `n` limbs of `floor(sqrt(a))` (zeros above the root's): `n` is
/// `limbs`, or fewer where the kernel's result is the root cast narrower (the wide root of two
/// `BITS`-bit numbers, written where it goes).
pub(crate) fn isqrt_function(limbs: usize) -> (String, String) {
    let name = isqrt_name(limbs);
    let bits = 64 * limbs as u64;
    let l = (root_width(bits) / 64) as usize;
    let (lh, lq) = (l / 2, l / 4);
    let text = format!(
        r#"typedef unsigned __int128 bf_u128;
{estimate}// s = floor(sqrt(a)) of a {bits}-bit a, one thread: Zimmermann's Karatsuba square root bottom-up
// on 64-bit limbs in local memory (a zero-extended to {nbits} bits and normalized), one level per
// doubling of the root's width, each a division by the root so far and a square.
static __device__ __forceinline__ void {name}(u64* out, const u64* a64, const int n) {{
  u64 x[{l}];
  int top = -1;
  #pragma unroll 1
  for (int j = 0; j < {l}; ++j) {{
    x[j] = j < {limbs} ? a64[j] : 0ull;
    if (x[j] != 0ull) top = j;
  }}
  if (top < 0) {{
    #pragma unroll 1
    for (int j = 0; j < n; ++j) out[j] = 0ull;
    return;
  }}
  // x <<= 2t, the even shift that sets one of its top two bits; the root is shifted back by t.
  const int t = (64 * ({l1} - top) + __clzll((long long)x[top])) / 2;
  const int xs = (2 * t) / 64, xb = (2 * t) % 64;
  #pragma unroll 1
  for (int j = {l1}; j >= 0; --j) {{
    const u64 hi = j - xs >= 0 ? x[j - xs] : 0ull;
    const u64 lo = j - xs - 1 >= 0 ? x[j - xs - 1] : 0ull;
    x[j] = xb == 0 ? hi : (hi << xb) | (lo >> (64 - xb));
  }}
  __align__(16) u64 s[{lh} + 1], r[{lh} + 1], u[{lh} + 2], q[{lq} + 2], p[{lh} + 1];
  {{
    // The top 64 bits' root (32 bits, its top bit set) and remainder: Newton's iteration from
    // above, which decreases to the root.
    const u64 x64 = x[{l1}];
    u64 y = 0xffffffffull;
    #pragma unroll 1
    for (int k = 0; k < 8; ++k) {{
      const u64 z = (y + x64 / y) >> 1;
      if (z < y) y = z;
    }}
    s[0] = y;
    r[0] = x64 - y * y;
{first}  }}
  #pragma unroll 1
  for (int kw = 1; 4 * kw <= {l}; kw *= 2) {{
    // The digits below the 2kw limbs done: a1 = x[{l} - 3kw ..], a0 = x[{l} - 4kw ..].
    const int a1 = {l} - 3 * kw, a0 = {l} - 4 * kw;
    // u = r 2^k + a1 (2kw + 1 limbs), divided by s (kw limbs, its top bit set): q1 (kw + 1
    // limbs) and the remainder in u[0..kw].
    #pragma unroll 1
    for (int i = 0; i < kw; ++i) u[i] = x[a1 + i];
    #pragma unroll 1
    for (int i = 0; i <= kw; ++i) u[kw + i] = r[i];
    const u64 d1 = s[kw - 1], d0 = kw >= 2 ? s[kw - 2] : 0ull;
    // floor((2^128 - 1) / d1) - 2^64: the reciprocal of the root's top limb.
    const u64 v = (u64)(~(bf_u128)0 / d1);
{rows}    // The division by 2 s: q = q1 / 2 (at most 2^k: kw limbs and a top limb of 0 or 1) and
    // u = u1 + (q1 mod 2) s (kw + 1 limbs).
    const bool odd = (q[0] & 1ull) != 0ull;
    #pragma unroll 1
    for (int i = 0; i <= kw; ++i) q[i] = (q[i] >> 1) | (i < kw ? q[i + 1] << 63 : 0ull);
    {{
      u64 cy = 0ull;
      #pragma unroll 1
      for (int i = 0; i < kw; ++i) {{
        const bf_u128 z = (bf_u128)u[i] + (odd ? s[i] : 0ull) + cy;
        u[i] = (u64)z;
        cy = (u64)(z >> 64);
      }}
      u[kw] = cy;
    }}
    // s = s 2^k + q (2kw limbs and a carry limb that the correction below clears).
    #pragma unroll 1
    for (int i = kw - 1; i >= 0; --i) {{ s[kw + i] = s[i]; s[i] = q[i]; }}
    s[2 * kw] = 0ull;
    {{
      u64 cy = q[kw];
      #pragma unroll 1
      for (int i = kw; i <= 2 * kw && cy != 0ull; ++i) {{
        s[i] += cy;
        cy = s[i] < cy;
      }}
    }}
    // p = q^2 (2kw + 1 limbs): the low kw limbs' square, each cross product once, or 2^2k.
    #pragma unroll 1
    for (int i = 0; i <= 2 * kw; ++i) p[i] = 0ull;
    int i = 0;
{square_rows}    // Rows i and i + 1 of the cross products in one pass (half the loads and stores of p a
    // product): into each limb of p, row i's product xa and row i + 1's yb (by the limb of q
    // below), each sum within 128 bits; then a last row alone.
    #pragma unroll 1
    for (; i + 2 < kw; i += 2) {{
      const u64 qa = q[i], qb = q[i + 1];
      bf_u128 x = (bf_u128)qa * qb + p[2 * i + 1];
      p[2 * i + 1] = (u64)x;
      x = (bf_u128)qa * q[i + 2] + p[2 * i + 2] + (u64)(x >> 64);
      p[2 * i + 2] = (u64)x;
      u64 c0 = (u64)(x >> 64), c1 = 0ull, prev = q[i + 2];
      #pragma unroll 2
      for (int k = i + 3; k < kw; ++k) {{
        const u64 qk = q[k];
        const bf_u128 xa = (bf_u128)qa * qk + p[i + k] + c0;
        const bf_u128 yb = (bf_u128)qb * prev + c1 + (u64)xa;
        p[i + k] = (u64)yb;
        c0 = (u64)(xa >> 64);
        c1 = (u64)(yb >> 64);
        prev = qk;
      }}
      const bf_u128 top = (bf_u128)qb * prev + c1 + c0;
      p[i + kw] = (u64)top;
      p[i + kw + 1] = (u64)(top >> 64);
    }}
    #pragma unroll 1
    for (; i + 1 < kw; ++i) {{
      u64 c = 0ull;
      const u64 qi = q[i];
      #pragma unroll 2
      for (int k = i + 1; k < kw; ++k) {{
        const bf_u128 z = (bf_u128)qi * q[k] + p[i + k] + c;
        p[i + k] = (u64)z;
        c = (u64)(z >> 64);
      }}
      p[i + kw] = c;
    }}
    {{
      // Twice the cross products (sh: the top bit of the limb below, before it was doubled)
      // plus the squares of the limbs.
      u64 cy = 0ull, sh = 0ull;
      #pragma unroll 1
      for (int i = 0; i < kw; ++i) {{
        const u64 e0 = p[2 * i], e1 = p[2 * i + 1];
        const bf_u128 sq = (bf_u128)q[i] * q[i];
        const bf_u128 lo = (bf_u128)((e0 << 1) | sh) + (u64)sq + cy;
        const bf_u128 hi = (bf_u128)((e1 << 1) | (e0 >> 63)) + (u64)(sq >> 64) + (u64)(lo >> 64);
        sh = e1 >> 63;
        p[2 * i] = (u64)lo;
        p[2 * i + 1] = (u64)hi;
        cy = (u64)(hi >> 64);
      }}
      p[2 * kw] = q[kw];
    }}
    // r = u 2^k + a0 - q^2 (2kw + 1 limbs, wrapped where negative).
    u64 bo = 0ull;
    #pragma unroll 1
    for (int i = 0; i <= 2 * kw; ++i) {{
      const u64 ti = i < kw ? x[a0 + i] : u[i - kw];
      const u64 y = ti - p[i];
      const u64 b1 = ti < p[i];
      r[i] = y - bo;
      bo = b1 | (u64)(y < bo);
    }}
    if (bo != 0ull) {{
      // Negative: s -= 1, then r += 2 s + 1 (with the new s), whose carry out cancels the wrap.
      #pragma unroll 1
      for (int i = 0; i <= 2 * kw; ++i) {{
        const u64 was = s[i];
        s[i] = was - 1ull;
        if (was != 0ull) break;
      }}
      u64 cy = 1ull;
      #pragma unroll 1
      for (int i = 0; i <= 2 * kw; ++i) {{
        const u64 twice = (s[i] << 1) | (i > 0 ? s[i - 1] >> 63 : 0ull);
        const bf_u128 z = (bf_u128)r[i] + twice + cy;
        r[i] = (u64)z;
        cy = (u64)(z >> 64);
      }}
    }}
  }}
  // The root of x shifted back by t: limbs j + ts of s, t % 64 bits down.
  const int ts = t / 64, tb = t % 64;
  #pragma unroll 1
  for (int j = 0; j < n; ++j) {{
    const int i = j + ts;
    const u64 lo = i < {lh1} ? s[i] : 0ull;
    const u64 hi = i + 1 < {lh1} ? s[i + 1] : 0ull;
    out[j] = tb == 0 ? lo : (lo >> tb) | (hi << (64 - tb));
  }}
}}
"#,
        nbits = 64 * l,
        l1 = l - 1,
        // The root has l/2 limbs, at least one (the 32-bit root of a 64-bit value).
        lh1 = lh.max(1),
        estimate = LIMB_ESTIMATE,
        square_rows = SQUARE_ROWS
            .replace("{B}", &ROOT_ROWS_A_PASS.to_string())
            .replace("{B1}", &(ROOT_ROWS_A_PASS - 1).to_string()),
        rows = limb_rows(
            "s",
            "kw",
            "kw >= 2 ? u[j + kw - 2] : 0ull",
            "kw",
            Some("q"),
            Some(ROOT_ROWS_A_PASS),
            "    "
        ),
        first = if l >= 2 {
            FIRST_LEVEL.replace("{l2}", &(l - 2).to_string())
        } else {
            String::new()
        },
    );
    (name, text)
}

/// Rows `i` to `i + B - 1` of the square's cross products in one pass (`B` =
/// [`ROOT_ROWS_A_PASS`]), while rows above them remain: column `c` of `p` (from `2 i + 1`) takes
/// `q[i + t] q[c - i - t]` of each row `t` whose other limb lies above its own (`c - i - t > i +
/// t`), the limbs of `q` sliding through `dp`, the products chained through their low limbs
/// from `p[c]` (each sum fits 128 bits). Nothing carries out of the last column: the cross
/// products of rows below `i + B` are less than `2^(64 (i + B + kw))`. Each limb of `q` and of
/// `p` is loaded (and `p` stored) once for `B` products, where rows two at a time took one for
/// two.
const SQUARE_ROWS: &str = r#"    #pragma unroll 1
    for (; i + {B} < kw; i += {B}) {
      u64 qa[{B}], c[{B}], dp[{B}];
      #pragma unroll
      for (int t = 0; t < {B}; ++t) {
        qa[t] = q[i + t];
        c[t] = dp[t] = 0ull;
      }
      #pragma unroll 2
      for (int x = 0; x < kw + {B1} - i; ++x) {
        const int col = 2 * i + 1 + x;
        #pragma unroll
        for (int t = {B1}; t > 0; --t) dp[t] = dp[t - 1];
        dp[0] = col - i < kw ? q[col - i] : 0ull;
        u64 lo = p[col];
        #pragma unroll
        for (int t = 0; t < {B}; ++t) {
          const bf_u128 y = (bf_u128)qa[t] * (x >= 2 * t ? dp[t] : 0ull) + c[t] + lo;
          c[t] = (u64)(y >> 64);
          lo = (u64)y;
        }
        p[col] = lo;
      }
    }
"#;

/// The level of `k = 32`, from the top 64 bits' root `s[0]` and remainder `r[0]` to the top
/// 128 bits' (64 bits, two limbs of remainder), on scalars: the limb levels start at `k = 64`.
const FIRST_LEVEL: &str = r#"    // The next 64 bits, two 32-bit digits: (q, u) = divrem(r 2^32 + a1, 2 s).
    const u64 a1 = x[{l2}] >> 32, a0 = x[{l2}] & 0xffffffffull;
    const bf_u128 num = ((bf_u128)r[0] << 32) | a1;
    const u64 den = 2ull * s[0];
    const u64 q = (u64)(num / den);
    const u64 u = (u64)(num - (bf_u128)q * den);
    // s = s 2^32 + q (at most 2^64), r = u 2^32 + a0 - q^2, once corrected where negative.
    bf_u128 sw = ((bf_u128)s[0] << 32) + q;
    const bf_u128 t1 = ((bf_u128)u << 32) | a0, q2 = (bf_u128)q * q;
    bf_u128 rw;
    if (t1 < q2) {
      sw -= 1;
      rw = t1 + 2 * sw + 1 - q2;
    } else {
      rw = t1 - q2;
    }
    s[0] = (u64)sw;
    r[0] = (u64)rw;
    r[1] = (u64)(rw >> 64);
"#;

impl Emitter<'_> {
    /// The limbs of the root of `a`; with `into` (a buffer and its limbs an instance), the
    /// function writes them there (`crate::place::written_in_place`) and the leaves are zeros.
    pub(super) fn isqrt_call(&mut self, a: &[String], into: Option<(String, u64)>) -> Vec<String> {
        let limbs = a.len();
        let (name, text) = isqrt_function(limbs);
        let Some((buffer, units)) = into else {
            let n = limbs.to_string();
            return self.device_call(vec![(name.clone(), text)], &name, limbs, &[a], &[&n], false);
        };
        self.device_function(&name, |em| em.src.out.push_str(&text));
        self.open("{");
        let arrays = self.operand_arrays(&[a]);
        self.line(format!(
            "if (live) {name}({buffer} + inst * {units}ull, {}, {units});",
            arrays[0]
        ));
        self.close("}");
        vec!["0ull".to_string(); limbs]
    }
}

#[cfg(test)]
mod tests {
    use super::super::host;
    use super::*;
    use num_bigint::BigUint;
    use std::fmt::Write;

    /// Runs the root function of `limbs` limbs on the host over `values` and checks every root
    /// against num-bigint: whole, and its low `(limbs + 1) / 2` limbs (a root's whole length)
    /// and low limb alone, as a kernel whose result is the root cast narrower has them written,
    /// with nothing written above them.
    fn check(limbs: usize, values: &[BigUint]) {
        let (name, text) = isqrt_function(limbs);
        let half = limbs.div_ceil(2);
        let mut src = String::from(host::PRELUDE);
        src.push_str(&text);
        let _ = write!(
            src,
            r#"int main() {{
  __align__(16) u64 a[{limbs}], r[{limbs}];
  for (;;) {{
    for (int j = 0; j < {limbs}; ++j) if (scanf("%llu", &a[j]) != 1) return 0;
    for (int n = {limbs}; n > 0; n = n == 1 ? 0 : n == {half} ? 1 : {half}) {{
      for (int j = 0; j < {limbs}; ++j) r[j] = ~0ull;
      {name}(r, a, n);
      for (int j = 0; j < {limbs}; ++j) printf("%llu ", r[j]);
      printf("\n");
    }}
  }}
}}
"#
        );
        let input: String = values
            .iter()
            .map(|v| host::limbs(v, limbs) + "\n")
            .collect();
        let out = host::run(&format!("{name}-{limbs}"), &src, &input);
        let lengths: Vec<usize> = if limbs == 1 {
            vec![1]
        } else if half == limbs || half == 1 {
            vec![limbs, 1]
        } else {
            vec![limbs, half, 1]
        };
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), values.len() * lengths.len());
        for (x, rows) in values.iter().zip(lines.chunks(lengths.len())) {
            for (&n, line) in lengths.iter().zip(rows) {
                let low = x.sqrt() % (BigUint::from(1u8) << (64 * n));
                let untouched = ((BigUint::from(1u8) << (64 * (limbs - n))) - 1u8) << (64 * n);
                assert_eq!(
                    host::number(line),
                    low + untouched,
                    "{name}: isqrt({x:#x}), {n} limbs"
                );
            }
        }
    }

    /// Values of `bits` bits: edges (0, 1, powers of two, all ones, squares and their
    /// neighbours, values whose normalization shifts by an odd amount), random values of every
    /// length and values made of edge words, the shapes that reach the rare corrections.
    fn values(bits: u64, count: usize, seed: u64) -> Vec<BigUint> {
        let one = BigUint::from(1u8);
        let all = (&one << bits) - 1u8;
        let mut word = host::words(seed);
        let mut out = vec![
            BigUint::from(0u8),
            one.clone(),
            BigUint::from(2u8),
            BigUint::from(3u8),
        ];
        out.extend([
            all.clone(),
            &all - 1u8,
            &all >> 1,
            &all >> 2,
            &one << (bits - 1),
        ]);
        for e in [
            1,
            2,
            31,
            32,
            33,
            63,
            64,
            65,
            bits / 2 - 1,
            bits / 2,
            bits - 2,
        ] {
            if e < bits {
                out.push(&one << e);
                out.push((&one << e) - 1u8);
            }
        }
        let words = (bits / 32) as usize;
        for _ in 0..count {
            let v = host::edge_number(&mut word, words);
            // Squares and their neighbours, from a root of half the value's length.
            let root = v.sqrt();
            let sq = &root * &root;
            out.push(v);
            if sq > BigUint::from(0u8) {
                out.push(&sq - 1u8);
            }
            out.push(sq.clone());
            out.push(&sq + &root + &root);
            if &sq + &root + &root < all {
                out.push(&sq + &root + &root + 1u8);
            }
        }
        out.retain(|v| v <= &all);
        out
    }

    #[test]
    fn roots_equal_num_bigint() {
        for (k, limbs) in [1usize, 2, 3, 4, 5, 8, 12, 16, 17, 32, 64]
            .into_iter()
            .enumerate()
        {
            check(limbs, &values(64 * limbs as u64, 60, 11 + k as u64));
        }
    }

    #[test]
    fn wide_roots_equal_num_bigint() {
        for (k, limbs) in [128usize, 256].into_iter().enumerate() {
            check(limbs, &values(64 * limbs as u64, 8, 99 + k as u64));
        }
    }

    /// Many more values, up to the bench's widest root (a 131072-bit value).
    #[test]
    #[ignore = "a stress run: cargo test -p bigfuse-codegen --lib stress -- --ignored"]
    fn stress_roots_on_the_host() {
        for (limbs, count) in [(16usize, 5000), (64, 3000), (136, 1000), (2048, 40)] {
            check(limbs, &values(64 * limbs as u64, count, 7 + limbs as u64));
        }
    }

    #[test]
    fn the_local_arrays_are_what_divide_counts() {
        for limbs in [1usize, 2, 7, 64, 4096] {
            let (_, text) = isqrt_function(limbs);
            let l = (root_width(64 * limbs as u64) / 64) as usize;
            let (lh, lq) = (l / 2, l / 4);
            let declared = l + 3 * (lh + 1) + (lh + 2) + (lq + 2);
            assert!(text.contains(&format!("u64 x[{l}];")));
            assert!(text.contains(&format!(
                "u64 s[{lh} + 1], r[{lh} + 1], u[{lh} + 2], q[{lq} + 2], p[{lh} + 1];"
            )));
            assert_eq!(
                8 * declared as u64,
                crate::divide::root_local_bytes(64 * limbs as u64)
            );
        }
    }
}

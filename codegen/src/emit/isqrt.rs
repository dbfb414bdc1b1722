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
//! The root before a level has its top bit set, so the division by `2 s` divides by `s` itself,
//! already normalized (Knuth's Algorithm D with no shifts, the rows of `emit/divide.rs`), and
//! halves: `q = q1 / 2`, `u = u1 + (q1 mod 2) s`. `q <= 2^k`, so `q^2` is the square of its low
//! `k` bits (each cross product once) or exactly `2^2k`. At the end the root is shifted back by
//! half the normalizing amount. Every array lives in local memory; the time depends on the
//! value's length (rows above the top are skipped by the normalization), so it is not
//! constant-time.
//!
//! Plain C over `u32`/`u64`, so the tests below compile it for the host and check it against
//! num-bigint without a GPU.

use super::divide::ESTIMATE;
use super::Emitter;
use crate::divide::root_width;

/// The name of the root function of a value of `limbs` u64 limbs.
fn isqrt_name(limbs: usize) -> String {
    format!("bf_isqrt_{}", 64 * limbs)
}

/// The root function of a value of `limbs` u64 limbs: `bf_isqrt_<bits>(u64* out, const u64* a)`
/// writes `floor(sqrt(a))` as `limbs` limbs (zeros above the root's).
pub(crate) fn isqrt_function(limbs: usize) -> (String, String) {
    let name = isqrt_name(limbs);
    let bits = 64 * limbs as u64;
    let w = (root_width(bits) / 32) as usize;
    let (wh, wq) = (w / 2, w / 4);
    let text = format!(
        r#"// s = floor(sqrt(a)) of a {bits}-bit a, one thread: Zimmermann's Karatsuba square root bottom-up
// on 32-bit words in local memory (a zero-extended to {nbits} bits and normalized), one level per
// doubling of the root's width, each a division by the root so far and a square.
static __device__ __forceinline__ void {name}(u64* out, const u64* a64) {{
  u32 x[{w}];
  int top = -1;
  #pragma unroll 1
  for (int j = 0; j < {w}; ++j) {{
    x[j] = j < {na} ? (u32)(a64[j / 2] >> (32 * (j % 2))) : 0u;
    if (x[j] != 0u) top = j;
  }}
  if (top < 0) {{
    #pragma unroll 1
    for (int j = 0; j < {limbs}; ++j) out[j] = 0ull;
    return;
  }}
  // x <<= 2t, the even shift that sets one of its top two bits; the root is shifted back by t.
  const int t = (32 * ({w1} - top) + __clz((int)x[top])) / 2;
  const int xs = (2 * t) / 32;
  const u32 xb = (u32)((2 * t) % 32);
  #pragma unroll 1
  for (int j = {w1}; j >= 0; --j) {{
    const u32 hi = j - xs >= 0 ? x[j - xs] : 0u;
    const u32 lo = j - xs - 1 >= 0 ? x[j - xs - 1] : 0u;
    x[j] = __funnelshift_l(lo, hi, xb);
  }}
  // The top 64 bits' root (its top bit set) and remainder (at most twice the root): Newton's
  // iteration from above, which decreases to the root.
  u32 s[{wh} + 1], r[{wh} + 1], u[{wh} + 2], q[{wq} + 2], p[{wh} + 1];
  {{
    const u64 x64 = ((u64)x[{w1}] << 32) | (u64)x[{w2}];
    u64 y = 0xffffffffull;
    #pragma unroll 1
    for (int k = 0; k < 8; ++k) {{
      const u64 z = (y + x64 / y) >> 1;
      if (z < y) y = z;
    }}
    const u64 rem = x64 - y * y;
    s[0] = (u32)y;
    r[0] = (u32)rem;
    r[1] = (u32)(rem >> 32);
  }}
  #pragma unroll 1
  for (int kw = 1; 4 * kw <= {w}; kw *= 2) {{
    // The digits below the 2kw words done: a1 = x[{w} - 3kw ..], a0 = x[{w} - 4kw ..].
    const int a1 = {w} - 3 * kw, a0 = {w} - 4 * kw;
    // u = r 2^k + a1 (2kw + 1 words), divided by s (kw words, its top bit set): q1 (kw + 1
    // words) and the remainder in u[0..kw].
    #pragma unroll 1
    for (int i = 0; i < kw; ++i) u[i] = x[a1 + i];
    #pragma unroll 1
    for (int i = 0; i <= kw; ++i) u[kw + i] = r[i];
    const u32 d1 = s[kw - 1], d0 = kw >= 2 ? s[kw - 2] : 0u;
    // floor((2^64 - 1) / d1) - 2^32: the reciprocal of the root's top word.
    const u32 v = (u32)(~0ull / (u64)d1);
    #pragma unroll 1
    for (int j = kw; j >= 0; --j) {{
      const u32 n2 = u[j + kw], n1 = u[j + kw - 1], n0 = kw >= 2 ? u[j + kw - 2] : 0u;
{estimate}      // u[j..j + kw] -= qh s; negative when qh was one above.
      u64 c = 0ull;
      u32 bo = 0u;
      #pragma unroll 4
      for (int k = 0; k < kw; ++k) {{
        const u64 pr = (u64)qh * (u64)s[k] + c;
        c = pr >> 32;
        const u64 y = (u64)u[j + k] - (u64)(u32)pr - (u64)bo;
        u[j + k] = (u32)y;
        bo = (u32)(y >> 63);
      }}
      const u64 y = (u64)u[j + kw] - c - (u64)bo;
      u[j + kw] = (u32)y;
      if ((y >> 63) != 0ull) {{
        qh -= 1u;
        u32 cy = 0u;
        #pragma unroll 4
        for (int k = 0; k < kw; ++k) {{
          const u64 z = (u64)u[j + k] + (u64)s[k] + (u64)cy;
          u[j + k] = (u32)z;
          cy = (u32)(z >> 32);
        }}
        u[j + kw] += cy;
      }}
      q[j] = qh;
    }}
    // The division by 2 s: q = q1 / 2 (at most 2^k: kw words and a top word of 0 or 1) and
    // u = u1 + (q1 mod 2) s (kw + 1 words).
    const u32 odd = q[0] & 1u;
    #pragma unroll 1
    for (int i = 0; i <= kw; ++i) q[i] = __funnelshift_r(q[i], i < kw ? q[i + 1] : 0u, 1u);
    {{
      u32 cy = 0u;
      #pragma unroll 1
      for (int i = 0; i < kw; ++i) {{
        const u64 z = (u64)u[i] + (u64)(odd ? s[i] : 0u) + (u64)cy;
        u[i] = (u32)z;
        cy = (u32)(z >> 32);
      }}
      u[kw] = cy;
    }}
    // s = s 2^k + q (2kw words and a carry word that the correction below clears).
    #pragma unroll 1
    for (int i = kw - 1; i >= 0; --i) {{ s[kw + i] = s[i]; s[i] = q[i]; }}
    s[2 * kw] = 0u;
    {{
      u32 cy = q[kw];
      #pragma unroll 1
      for (int i = kw; i <= 2 * kw && cy != 0u; ++i) {{
        const u64 z = (u64)s[i] + (u64)cy;
        s[i] = (u32)z;
        cy = (u32)(z >> 32);
      }}
    }}
    // p = q^2 (2kw + 1 words): the low kw words' square, each cross product once, or 2^2k.
    #pragma unroll 1
    for (int i = 0; i <= 2 * kw; ++i) p[i] = 0u;
    #pragma unroll 1
    for (int i = 0; i + 1 < kw; ++i) {{
      u64 c = 0ull;
      #pragma unroll 4
      for (int k = i + 1; k < kw; ++k) {{
        const u64 z = (u64)q[i] * (u64)q[k] + (u64)p[i + k] + c;
        p[i + k] = (u32)z;
        c = z >> 32;
      }}
      p[i + kw] = (u32)c;
    }}
    {{
      // Twice the cross products (sh: the top bit of the word below, before it was doubled)
      // plus the squares of the words.
      u32 cy = 0u, sh = 0u;
      #pragma unroll 1
      for (int i = 0; i < kw; ++i) {{
        const u32 e0 = p[2 * i], e1 = p[2 * i + 1];
        const u64 sq = (u64)q[i] * (u64)q[i];
        const u64 lo = (u64)((e0 << 1) | sh) + (u64)(u32)sq + (u64)cy;
        const u64 hi = (u64)((e1 << 1) | (e0 >> 31)) + (sq >> 32) + (lo >> 32);
        sh = e1 >> 31;
        p[2 * i] = (u32)lo;
        p[2 * i + 1] = (u32)hi;
        cy = (u32)(hi >> 32);
      }}
      p[2 * kw] = q[kw];
    }}
    // r = u 2^k + a0 - q^2 (2kw + 1 words, wrapped where negative).
    u32 bo = 0u;
    #pragma unroll 1
    for (int i = 0; i <= 2 * kw; ++i) {{
      const u32 ti = i < kw ? x[a0 + i] : u[i - kw];
      const u64 z = (u64)ti - (u64)p[i] - (u64)bo;
      r[i] = (u32)z;
      bo = (u32)(z >> 63);
    }}
    if (bo != 0u) {{
      // Negative: s -= 1, then r += 2 s + 1 (with the new s), whose carry out cancels the wrap.
      #pragma unroll 1
      for (int i = 0; i <= 2 * kw; ++i) {{
        const u32 was = s[i];
        s[i] = was - 1u;
        if (was != 0u) break;
      }}
      u32 cy = 1u;
      #pragma unroll 1
      for (int i = 0; i <= 2 * kw; ++i) {{
        const u32 twice = (s[i] << 1) | (i > 0 ? s[i - 1] >> 31 : 0u);
        const u64 z = (u64)r[i] + (u64)twice + (u64)cy;
        r[i] = (u32)z;
        cy = (u32)(z >> 32);
      }}
    }}
  }}
  // The root of x shifted back by t: words i + ts of s, t % 32 bits down.
  const int ts = t / 32;
  const u32 tb = (u32)(t % 32);
  #pragma unroll 1
  for (int j = 0; j < {limbs}; ++j) {{
    u32 o[2];
    #pragma unroll
    for (int e = 0; e < 2; ++e) {{
      const int i = 2 * j + e + ts;
      const u32 lo = i < {wh} ? s[i] : 0u;
      const u32 hi = i + 1 < {wh} ? s[i + 1] : 0u;
      o[e] = __funnelshift_r(lo, hi, tb);
    }}
    out[j] = ((u64)o[1] << 32) | (u64)o[0];
  }}
}}
"#,
        nbits = 32 * w,
        na = 2 * limbs,
        w1 = w - 1,
        w2 = w - 2,
        estimate = ESTIMATE
            .replace("\n    ", "\n      ")
            .replacen("    ", "      ", 1),
    );
    (name, text)
}

impl Emitter<'_> {
    /// The limbs of the root of `a`; with `into` (a buffer and its limbs an instance), the
    /// function writes them there (`crate::place::written_in_place`) and the leaves are zeros.
    pub(super) fn isqrt_call(&mut self, a: &[String], into: Option<(String, u64)>) -> Vec<String> {
        let limbs = a.len();
        let (name, text) = isqrt_function(limbs);
        let Some((buffer, units)) = into else {
            return self.device_call(vec![(name.clone(), text)], &name, limbs, &[a], &[], false);
        };
        self.device_function(&name, |em| em.src.out.push_str(&text));
        self.open("{");
        let arrays = self.operand_arrays(&[a]);
        self.line(format!(
            "if (live) {name}({buffer} + inst * {units}ull, {});",
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
    /// against num-bigint.
    fn check(limbs: usize, values: &[BigUint]) {
        let (name, text) = isqrt_function(limbs);
        let mut src = String::from(host::PRELUDE);
        src.push_str(&text);
        let _ = write!(
            src,
            r#"int main() {{
  __align__(16) u64 a[{limbs}], r[{limbs}];
  for (;;) {{
    for (int j = 0; j < {limbs}; ++j) if (scanf("%llu", &a[j]) != 1) return 0;
    for (int j = 0; j < {limbs}; ++j) r[j] = ~0ull;
    {name}(r, a);
    for (int j = 0; j < {limbs}; ++j) printf("%llu ", r[j]);
    printf("\n");
  }}
}}
"#
        );
        let input: String = values
            .iter()
            .map(|v| host::limbs(v, limbs) + "\n")
            .collect();
        let out = host::run(&format!("{name}-{limbs}"), &src, &input);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), values.len());
        for (x, line) in values.iter().zip(lines) {
            assert_eq!(host::number(line), x.sqrt(), "{name}: isqrt({x:#x})");
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
            let len = 1 + (word() as usize) % words;
            let digits: Vec<u32> = (0..len)
                .map(|_| match word() % 8 {
                    0 => 0,
                    1 => 1,
                    2 => 0x7fff_ffff,
                    3 => 0x8000_0000,
                    4 | 5 => u32::MAX,
                    _ => word() as u32,
                })
                .collect();
            let v = BigUint::from_slice(&digits);
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

    #[test]
    fn the_local_arrays_are_what_divide_counts() {
        for limbs in [1usize, 2, 7, 64, 4096] {
            let (_, text) = isqrt_function(limbs);
            let w = (root_width(64 * limbs as u64) / 32) as usize;
            let (wh, wq) = (w / 2, w / 4);
            let declared = w + 3 * (wh + 1) + (wh + 2) + (wq + 2);
            assert!(text.contains(&format!("u32 x[{w}];")));
            assert!(text.contains(&format!(
                "u32 s[{wh} + 1], r[{wh} + 1], u[{wh} + 2], q[{wq} + 2], p[{wh} + 1];"
            )));
            assert_eq!(
                4 * declared as u64,
                crate::divide::root_local_bytes(64 * limbs as u64)
            );
        }
    }
}

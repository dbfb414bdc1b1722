//! `limb.pow_mod` as C: one device function per widths, planned by [`crate::montgomery`] (whose
//! documentation gives the steps), and the call that one thread makes of it.
//!
//! The text is plain C over `u32`/`u64` (no PTX), so the tests below compile it for the host and
//! check it against num-bigint without a GPU. Word products are 32x32->64 multiply-adds into a
//! `u64`, which the CUDA compiler turns into wide multiply-adds and which cannot overflow:
//! `(2^32-1)^2 + 2 (2^32-1) = 2^64 - 1`.

use super::chain::{chain, Step};
use super::Emitter;
use crate::montgomery::PowModPlan;
use std::fmt::Write;

/// The steps of one CIOS round on `t[0..l]` and the two words above it (`t[l]`, `t[l+1]`, or for
/// a thread of a group the pending words `e0`, `e1` at the next thread's bottom; zero above on
/// entry): `t += a b_i` as a chain of low halves and one of high halves, then `t = (t + q m) /
/// 2^32` with the shift folded into the destinations (each step writes the word below the one
/// it reads, which an earlier step of the same chain has already read). The word the shift drops
/// goes to `t[0]` (one thread: zero, and overwritten) or `w0` (a group: the thread below takes it).
pub(super) fn round_chains_in(l: usize, group: bool) -> [Vec<Step>; 4] {
    let t = |j: usize| format!("t[{j}]");
    let a = |j: usize| format!("a[{j}]");
    let m = |j: usize| format!("m[{j}]");
    let (top0, top1, w0) = if group {
        ("e0".to_string(), "e1".to_string(), "w0".to_string())
    } else {
        (t(l), t(l + 1), t(0))
    };
    let above = |j: usize| if j + 1 < l { t(j + 1) } else { top0.clone() };
    let (bi, q) = ("bi".to_string(), "q".to_string());
    let zero = "0".to_string();
    let first = |j: usize, mad: &'static str, madc: &'static str| if j == 0 { mad } else { madc };
    let mut a_lo = Vec::new();
    let mut a_hi = Vec::new();
    let mut b_lo = Vec::new();
    let mut b_hi = Vec::new();
    for j in 0..l {
        a_lo.push(Step::new(
            first(j, "mad.lo.cc", "madc.lo.cc"),
            t(j),
            &[a(j), bi.clone(), t(j)],
        ));
        a_hi.push(Step::new(
            first(j, "mad.hi.cc", "madc.hi.cc"),
            above(j),
            &[a(j), bi.clone(), above(j)],
        ));
        // The low word of t + q m is zero (in the group's first thread; the others' go down).
        let d = if j == 0 { w0.clone() } else { t(j - 1) };
        b_lo.push(Step::new(
            first(j, "mad.lo.cc", "madc.lo.cc"),
            d,
            &[q.clone(), m(j), t(j)],
        ));
        b_hi.push(Step::new(
            first(j, "mad.hi.cc", "madc.hi.cc"),
            t(j),
            &[q.clone(), m(j), t(j)],
        ));
    }
    a_lo.push(Step::new(
        "addc.cc",
        top0.clone(),
        &[top0.clone(), zero.clone()],
    ));
    a_lo.push(Step::new(
        "addc",
        top1.clone(),
        &[zero.clone(), zero.clone()],
    ));
    a_hi.push(Step::new(
        "addc",
        top1.clone(),
        &[top1.clone(), zero.clone()],
    ));
    b_lo.push(Step::new(
        "addc.cc",
        t(l - 1),
        &[top0.clone(), zero.clone()],
    ));
    b_lo.push(Step::new("addc", top0.clone(), &[top1, zero.clone()]));
    b_hi.push(Step::new("addc", top0.clone(), &[top0, zero]));
    [a_lo, a_hi, b_lo, b_hi]
}

/// The Montgomery product `r = a b / 2^(32 s) mod m` of `s`-word numbers, for odd `m` and
/// `a b < m 2^(32 s)`, below `m`. `b` is read one word a round at run-time indices (local memory);
/// `a`, `m` and the accumulator are indexed by constants only, so they stay in registers.
fn mont_function(s: usize) -> (String, String) {
    let name = format!("bf_mont_{s}");
    let [a_lo, a_hi, b_lo, b_hi] = round_chains_in(s, false);
    let (d_alo, h_alo) = chain(&a_lo);
    let (d_ahi, h_ahi) = chain(&a_hi);
    let (d_blo, h_blo) = chain(&b_lo);
    let (d_bhi, h_bhi) = chain(&b_hi);
    let text = format!(
        r#"// r = a b / 2^{bits} mod m ({s} 32-bit words; odd m, a b < m 2^{bits}): CIOS, one round per word of
// b, each four carry chains of multiply-adds (low and high halves of t += a b_i, then of
// t += q m with the shift by a word folded in). r may be a.
static __device__ __forceinline__ void {name}(u32* r, const u32* a, const u32* b, const u32* m, const u32 minv) {{
  u32 t[{s2}];
  #pragma unroll
  for (int j = 0; j < {s2}; ++j) t[j] = 0u;
  #pragma unroll 1
  for (int i = 0; i < {s}; ++i) {{
    const u32 bi = b[i];
#ifdef __CUDA_ARCH__
    {d_alo}
    {d_ahi}
#else
    {h_alo}
    {h_ahi}
#endif
    const u32 q = t[0] * minv;
#ifdef __CUDA_ARCH__
    {d_blo}
    {d_bhi}
#else
    {h_blo}
    {h_bhi}
#endif
  }}
  // t < 2m (t[{s}] is 0 or 1): subtract m unless t < m (the borrow of t - m), without holding both.
  u32 borrow = 0u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) borrow = (u32)(((u64)t[j] - (u64)m[j] - (u64)borrow) >> 63);
  const u32 mask = (t[{s}] != 0u || borrow == 0u) ? ~0u : 0u;
  borrow = 0u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{
    const u64 x = (u64)t[j] - (u64)(m[j] & mask) - (u64)borrow;
    r[j] = (u32)x;
    borrow = (u32)(x >> 63);
  }}
}}
"#,
        bits = 32 * s,
        s2 = s + 2,
    );
    (name, text)
}

/// `r = r + r mod m` for `r < m` (a doubling of a Montgomery form).
fn double_function(s: usize) -> (String, String) {
    let name = format!("bf_mod_double_{s}");
    let text = format!(
        r#"// r = 2 r mod m for r < m ({s} 32-bit words).
static __device__ __forceinline__ void {name}(u32* r, const u32* m) {{
  u32 d[{s}];
  const u32 out = r[{last}] >> 31;
  #pragma unroll
  for (int j = {last}; j > 0; --j) r[j] = (r[j] << 1) | (r[j - 1] >> 31);
  r[0] <<= 1;
  u32 borrow = 0u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{
    const u64 x = (u64)r[j] - (u64)m[j] - (u64)borrow;
    d[j] = (u32)x;
    borrow = (u32)(x >> 63);
  }}
  const bool over = out != 0u || borrow == 0u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) r[j] = over ? d[j] : r[j];
}}
"#,
        last = s - 1,
    );
    (name, text)
}

/// The power's table and its walk over the exponent's windows, one text for both forms (one
/// thread, or a group whose `words` each thread holds): from `acc` = R^2 mod m (and `a` = x),
/// `tab[j] = x^j R mod m`, then the top window picks the start and each other window `w`
/// squarings and a product by its entry. `mont(r, a, b)` is the C of a Montgomery product.
pub(super) fn windows_walk(
    plan: &PowModPlan,
    words: usize,
    mont: &dyn Fn(&str, &str, &str) -> String,
) -> String {
    let w = plan.window;
    format!(
        r#"  // tab[j] = x^j R mod m: x R = x R^2 / R (x < R and R^2 mod m < m keep x R^2 < m R).
  #pragma unroll
  for (int j = 0; j < {words}; ++j) sq[j] = acc[j];
  {to_form};
  #pragma unroll
  for (int j = 0; j < {words}; ++j) tab[1][j] = a[j];
  #pragma unroll 1
  for (int i = 2; i < {entries}; ++i) {{
    {next};
    #pragma unroll
    for (int j = 0; j < {words}; ++j) tab[i][j] = a[j];
  }}
  // The top window picks the start, each other one {w} squarings and a product.
  #pragma unroll 1
  for (int i = {top_window}; i >= 0; --i) {{
    const int pos = i * {w};
    const u64 two = ((u64)ew[(pos >> 5) + 1] << 32) | (u64)ew[pos >> 5];
    const u32 win = (u32)(two >> (pos & 31)) & {mask}u;
    if (i == {top_window}) {{
      #pragma unroll
      for (int j = 0; j < {words}; ++j) acc[j] = tab[win][j];
    }} else {{
      #pragma unroll 1
      for (int r = 0; r < {w}; ++r) {{
        #pragma unroll
        for (int j = 0; j < {words}; ++j) sq[j] = acc[j];
        {square};
      }}
      {times};
    }}
  }}"#,
        entries = 1u64 << w,
        top_window = plan.windows() - 1,
        mask = (1u32 << w) - 1,
        to_form = mont("a", "a", "sq"),
        next = mont("a", "a", "tab[1]"),
        square = mont("acc", "acc", "sq"),
        times = mont("acc", "acc", "tab[win]"),
    )
}

/// The device functions of `plan`, callees first: `(name, text)` pairs. The last is
/// `plan.function_name()(u64* out, const u64* x, const u64* e, const u64* m)` on 64-bit limbs.
pub(crate) fn pow_mod_functions(plan: &PowModPlan) -> Vec<(String, String)> {
    let s = plan.words();
    let e = plan.exp_words();
    let w = plan.window;
    let n = plan.bits;
    let k = plan.exp_bits;
    let last = s - 1;
    let top_bit = 63 - n.leading_zeros();
    let name = plan.function_name();
    let mont = format!("bf_mont_{s}");
    let double = format!("bf_mod_double_{s}");
    let mut t = String::new();
    let _ = write!(
        t,
        r#"// x^e mod m for a {n}-bit m and a {k}-bit e (64-bit limbs, least significant first): Montgomery
// arithmetic on {s} 32-bit words, fixed windows of {w} bits over a table of x^j R mod m (R = 2^{n})
// in local memory. The window picks the entry at run time: not constant-time. An even or zero m
// gives all ones, which no residue equals.
static __device__ __forceinline__ void {name}(u64* out, const u64* x64, const u64* e64, const u64* m64) {{
  u32 m[{s}], a[{s}], acc[{s}];
  u32 tab[{entries}][{s}];
  u32 sq[{s}];
  u32 ew[{ew}];
  #pragma unroll
  for (int j = 0; j < {half}; ++j) {{
    m[2 * j] = (u32)m64[j];
    m[2 * j + 1] = (u32)(m64[j] >> 32);
    a[2 * j] = (u32)x64[j];
    a[2 * j + 1] = (u32)(x64[j] >> 32);
  }}
  #pragma unroll
  for (int j = 0; j < {ehalf}; ++j) {{
    ew[2 * j] = (u32)e64[j];
    ew[2 * j + 1] = (u32)(e64[j] >> 32);
  }}
  ew[{e}] = 0u;
  // -m^-1 mod 2^32: Newton's iteration from m (m m = 1 mod 8 for odd m), each step doubling the
  // bits that are right.
  u32 inv = m[0];
  #pragma unroll
  for (int j = 0; j < 4; ++j) inv *= 2u - m[0] * inv;
  const u32 minv = 0u - inv;
  // R mod m: m shifted up until its top bit is set (ms), R - ms < ms, then ms halved back down
  // with a conditional subtraction per step.
  u32 ms[{s}];
  #pragma unroll
  for (int j = 0; j < {s}; ++j) ms[j] = m[j];
  int z = 0;
  #pragma unroll 1
  while (z < {n} && (ms[{last}] >> 31) == 0u) {{
    #pragma unroll
    for (int j = {last}; j > 0; --j) ms[j] = (ms[j] << 1) | (ms[j - 1] >> 31);
    ms[0] <<= 1;
    ++z;
  }}
  u32 borrow = 0u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{
    const u64 x = 0ull - (u64)ms[j] - (u64)borrow;
    acc[j] = (u32)x;
    borrow = (u32)(x >> 63);
  }}
  #pragma unroll 1
  for (int step = 0; step <= z; ++step) {{
    if (step > 0) {{
      #pragma unroll
      for (int j = 0; j < {last}; ++j) ms[j] = (ms[j] >> 1) | (ms[j + 1] << 31);
      ms[{last}] >>= 1;
    }}
    u32 d[{s}];
    borrow = 0u;
    #pragma unroll
    for (int j = 0; j < {s}; ++j) {{
      const u64 x = (u64)acc[j] - (u64)ms[j] - (u64)borrow;
      d[j] = (u32)x;
      borrow = (u32)(x >> 63);
    }}
    #pragma unroll
    for (int j = 0; j < {s}; ++j) acc[j] = borrow ? acc[j] : d[j];
  }}
  // tab[0] = R mod m, the Montgomery form of 1.
  #pragma unroll
  for (int j = 0; j < {s}; ++j) tab[0][j] = acc[j];
  // R^2 mod m, the form of 2^{n}: from the form of 1, a squaring per bit of {n} from the top and a
  // doubling where the bit is set.
  #pragma unroll 1
  for (int bit = {top_bit}; bit >= 0; --bit) {{
    #pragma unroll
    for (int j = 0; j < {s}; ++j) sq[j] = acc[j];
    {mont}(acc, acc, sq, m, minv);
    if (({n}u >> bit) & 1u) {double}(acc, m);
  }}
{walk}
  // Out of the Montgomery form: a product by 1.
  #pragma unroll
  for (int j = 0; j < {s}; ++j) sq[j] = j == 0 ? 1u : 0u;
  {mont}(acc, acc, sq, m, minv);
  const bool odd = (m[0] & 1u) != 0u;
  #pragma unroll
  for (int j = 0; j < {half}; ++j)
    out[j] = odd ? (((u64)acc[2 * j + 1] << 32) | (u64)acc[2 * j]) : ~0ull;
}}
"#,
        entries = 1u64 << w,
        ew = e + 1,
        half = s / 2,
        walk = windows_walk(plan, s, &|r, a, b| format!(
            "{mont}({r}, {a}, {b}, m, minv)"
        )),
        ehalf = e / 2,
    );
    vec![mont_function(s), double_function(s), (name, t)]
}

impl Emitter<'_> {
    /// `dest` (the result's limbs) = `x^e mod m` from the limbs of the operands, through the
    /// device function of its widths; by the instance's threads together where it has several
    /// (the operands are those of its first thread, the result every thread's).
    pub(super) fn pow_mod_call(&mut self, x: &[String], e: &[String], m: &[String]) -> Vec<String> {
        let threads = self.sched.pow_mod_threads;
        // The schedule took its thread count from this plan.
        let plan = PowModPlan::new(64 * x.len() as u64, 64 * e.len() as u64)
            .with_threads(threads)
            .expect("the schedule splits powers only as their plans do");
        let functions = if threads == 1 {
            pow_mod_functions(&plan)
        } else {
            super::montgomery_group::group_functions(&plan)
        };
        let lane: &[&str] = if threads == 1 { &[] } else { &["lane"] };
        self.device_call(
            functions,
            &plan.function_name(),
            x.len(),
            &[x, e, m],
            lane,
            false,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::host;
    use super::*;
    use num_bigint::BigUint;

    /// A host program around the functions of `plan`: reads instances (x, e, m limbs in decimal)
    /// from stdin, writes each result's limbs. A group of threads is emulated by as many host
    /// threads, its shuffles and ballots by an exchange between barriers; the group's first
    /// thread gets the operands, the others zeros, and every thread's result must agree.
    fn host_program(plan: &PowModPlan) -> String {
        let mut src = String::from(host::PRELUDE);
        src.push_str("#include <thread>\n#include <barrier>\n#include <vector>\n");
        let g = plan.threads;
        let _ = write!(
            src,
            r#"static std::barrier<>* bf_bar;
static u32 bf_x[32];
thread_local int bf_lane;
static u32 bf_swap(u32 v, int from) {{
  bf_x[bf_lane] = v;
  bf_bar->arrive_and_wait();
  const u32 r = bf_x[from];
  bf_bar->arrive_and_wait();
  return r;
}}
static u32 __shfl_sync(u32, u32 v, int src, int w) {{ return bf_swap(v, (bf_lane & ~(w - 1)) + src); }}
static u32 __shfl_down_sync(u32, u32 v, int d, int w) {{
  const int i = (bf_lane & (w - 1)) + d;
  return bf_swap(v, i < w ? (bf_lane & ~(w - 1)) + i : bf_lane);
}}
static u32 __shfl_up_sync(u32, u32 v, int d, int w) {{
  const int i = (bf_lane & (w - 1)) - d;
  return bf_swap(v, i >= 0 ? (bf_lane & ~(w - 1)) + i : bf_lane);
}}
static u32 __ballot_sync(u32, bool p) {{
  bf_x[bf_lane] = p ? 1u : 0u;
  bf_bar->arrive_and_wait();
  u32 r = 0u;
  for (int i = 0; i < {g}; ++i) r |= bf_x[i] << i;
  bf_bar->arrive_and_wait();
  return r;
}}
"#
        );
        let functions = if g == 1 {
            pow_mod_functions(plan)
        } else {
            super::super::montgomery_group::group_functions(plan)
        };
        for (_, text) in functions {
            src.push_str(&text);
        }
        let (s, e) = (plan.bits / 64, plan.exp_bits / 64);
        let call = if g == 1 {
            format!(
                "{}(r[k], k == 0 ? x : zx, k == 0 ? e : ze, k == 0 ? m : zm)",
                plan.function_name()
            )
        } else {
            format!(
                "{}(r[k], k == 0 ? x : zx, k == 0 ? e : ze, k == 0 ? m : zm, (u32)k)",
                plan.function_name()
            )
        };
        let _ = write!(
            src,
            r#"int main() {{
  static u64 x[{s}], e[{e}], m[{s}], r[{g}][{s}], zx[{s}], ze[{e}], zm[{s}];
  std::barrier<> bar({g});
  bf_bar = &bar;
  for (;;) {{
    for (int j = 0; j < {s}; ++j) if (scanf("%llu", &x[j]) != 1) return 0;
    for (int j = 0; j < {e}; ++j) scanf("%llu", &e[j]);
    for (int j = 0; j < {s}; ++j) scanf("%llu", &m[j]);
    std::vector<std::thread> group;
    for (int k = 0; k < {g}; ++k)
      group.emplace_back([&, k] {{ bf_lane = k; {call}; }});
    for (auto& t : group) t.join();
    for (int k = 1; k < {g}; ++k)
      for (int j = 0; j < {s}; ++j)
        if (r[k][j] != r[0][j]) {{ printf("thread %d disagrees\n", k); return 1; }}
    for (int j = 0; j < {s}; ++j) printf("%llu ", r[0][j]);
    printf("\n");
  }}
}}
"#
        );
        src
    }

    /// Compiles the host program of `plan` with the system's C++ compiler and checks every
    /// instance against num-bigint's `modpow` (all ones for an even modulus).
    fn check(plan: &PowModPlan, cases: &[(BigUint, BigUint, BigUint)]) {
        let mut input = String::new();
        for (x, e, m) in cases {
            input.push_str(&host::limbs(x, (plan.bits / 64) as usize));
            input.push_str(&host::limbs(e, (plan.exp_bits / 64) as usize));
            input.push_str(&host::limbs(m, (plan.bits / 64) as usize));
            input.push('\n');
        }
        let tag = format!(
            "powmod-{}-{}-{}-{}",
            plan.bits, plan.exp_bits, plan.window, plan.threads
        );
        let text = host::run(&tag, &host_program(plan), &input);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), cases.len(), "{text}");
        let all = (BigUint::from(1u8) << plan.bits) - 1u8;
        for ((x, e, m), line) in cases.iter().zip(lines) {
            let got = host::number(line);
            let want = if m.bit(0) {
                x.modpow(e, m)
            } else {
                all.clone()
            };
            assert_eq!(
                got, want,
                "{x}^{e} mod {m} at {} bits, {}-bit exponent",
                plan.bits, plan.exp_bits
            );
        }
    }

    fn cases(bits: u64, exp_bits: u64, seed: u64) -> Vec<(BigUint, BigUint, BigUint)> {
        let mut word = host::words(seed);
        let mut big = |b: u64| {
            let words: Vec<u64> = (0..b / 64).map(|_| word()).collect();
            let digits: Vec<u32> = words
                .iter()
                .flat_map(|w| [*w as u32, (*w >> 32) as u32])
                .collect();
            BigUint::from_slice(&digits)
        };
        let one = BigUint::from(1u8);
        let all = |b: u64| (BigUint::from(1u8) << b) - 1u8;
        let mut out = Vec::new();
        for i in 0..12u64 {
            // Full-width moduli, then shorter ones (the normalisation of R mod m).
            let mbits = if i < 6 { bits } else { 1 + (i * 53) % bits };
            let m = (big(bits) % (&one << mbits)) | &one;
            out.push((big(bits), big(exp_bits), m));
        }
        let b = |v: u32| BigUint::from(v);
        for (x, e, m) in [
            (b(0), b(0), b(3)),
            (b(0), b(5), b(3)),
            (b(7), b(0), b(3)),
            (b(7), b(0), b(1)),
            (b(5), b(9), b(1)),
            (all(bits), all(exp_bits), all(bits)),
            (all(bits) - 1u8, b(2), all(bits)),
            (b(2), all(exp_bits), all(bits) - 2u8),
            (all(bits), b(3), b(3)),
            (b(3), b(4), b(10)),
            (b(3), b(4), b(0)),
            (&one << (bits - 1), b(1), (&one << (bits - 1)) + 1u8),
            (b(2), b(65537), (&one << (bits - 1)) | &one),
        ] {
            out.push((x, e, m));
        }
        out
    }

    #[test]
    fn powers_equal_modpow_on_the_host() {
        for (bits, exp_bits) in [
            (64u64, 64u64),
            (128, 64),
            (192, 192),
            (256, 512),
            (320, 320),
            (512, 128),
            (1024, 512),
            (1088, 64),
            (2048, 512),
        ] {
            let plan = PowModPlan::new(bits, exp_bits);
            check(&plan, &cases(bits, exp_bits, bits ^ exp_bits));
        }
    }

    /// Groups of threads, emulated by host threads: the plans' own groups and small words per
    /// thread (two) that make every exchange between threads matter.
    #[test]
    fn groups_of_threads_equal_modpow_on_the_host() {
        for (bits, exp_bits, threads, count) in [
            (128u64, 64u64, 2u32, 25usize),
            (256, 64, 4, 25),
            (512, 128, 8, 12),
            (1024, 64, 2, 25),
            (2048, 64, 4, 8),
            (1024, 64, 16, 4),
        ] {
            let plan = PowModPlan::new(bits, exp_bits)
                .with_threads(threads)
                .unwrap();
            let all = cases(bits, exp_bits, bits + threads as u64);
            // The random instances first, then the edge cases (a share of each).
            let n = all.len();
            let picked: Vec<_> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| *i < count / 2 || *i >= n - (count - count / 2))
                .map(|(_, c)| c.clone())
                .collect();
            check(&plan, &picked);
        }
    }

    #[test]
    fn every_window_width() {
        for w in 1..=crate::montgomery::MAX_WINDOW {
            let plan = PowModPlan {
                bits: 192,
                exp_bits: 192,
                window: w,
                threads: 1,
            };
            check(&plan, &cases(192, 192, w as u64));
        }
    }
}

//! `limb.pow_mod` as C: one device function per widths, planned by [`crate::montgomery`] (whose
//! documentation gives the steps), and the call that one thread makes of it.
//!
//! The text is plain C over `u32`/`u64` (no PTX), so the tests below compile it for the host and
//! check it against num-bigint without a GPU. Word products are 32x32->64 multiply-adds into a
//! `u64`, which the CUDA compiler turns into wide multiply-adds and which cannot overflow:
//! `(2^32-1)^2 + 2 (2^32-1) = 2^64 - 1`.

use super::chain::{both_targets, Step};
use super::Emitter;
use crate::montgomery::{OneThreadSquare, PowModPlan, ProductForm};
use std::fmt::Write;

/// The steps of one CIOS round on `t[0..l]` and the two words above it (`t[l]`, `t[l+1]`, zero
/// on entry): `t += a b_i` as a chain of low halves and one of high halves, then `t = (t + q m) /
/// 2^32` with the shift folded into the destinations (each step writes the word below the one
/// it reads, which an earlier step of the same chain has already read). The word the shift drops
/// (zero) goes to `t[0]`, which the next step overwrites.
fn round_chains(l: usize) -> [Vec<Step>; 4] {
    let t = |j: usize| format!("t[{j}]");
    let a = |j: usize| format!("a[{j}]");
    let m = |j: usize| format!("m[{j}]");
    let (top0, top1, w0) = (t(l), t(l + 1), t(0));
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
        // The low word of t + q m is zero.
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

/// The carry chains of two CIOS rounds of the one-thread product, on two accumulators whose
/// pairs of words never straddle each other's: `L` holds its words in pairs that start at even
/// positions of `t` (`l[2k], l[2k+1]` at positions `2k, 2k+1` of the rounds' base), `H` in pairs
/// that start at odd ones (`h[2k], h[2k+1]` at `2k-1, 2k`). Each word product `a_j b_i` (and
/// `q m_j`) is one 64-bit value at positions `j+i, j+i+1` and goes whole into the accumulator of
/// its start's parity, so a chain adds whole products in turn, a `mad.lo.cc`/`madc.hi.cc` pair
/// each that the GPU's compiler fuses into one wide multiply-add with carry in and out, reading
/// and writing register pairs in place (about a quarter of the instructions of chains of low and
/// high halves, and no moves between rounds).
///
/// The round at an even base `2i` has its bottom word in `L`: `h[1]` joins `l[0]` (the carry
/// enters `H`'s chain of odd products), the even products go into `L`, `q` comes from `l[0]`.
/// The round at `2i + 1` has it in `H`: `l[1]` joins `h[2]`, and the roles swap. The last chain
/// of each accumulator moves it down two words (folded into its destinations), which keeps each
/// pair in its registers from one pair of rounds to the next. Words that first receive a carry
/// in a pair of rounds are written, not read, so nothing needs clearing between them.
pub(super) fn paired_rounds(s: usize, joins: Joins) -> [Vec<Step>; 8] {
    let l = |j: usize| format!("l[{j}]");
    let h = |j: usize| format!("h[{j}]");
    let a = |j: usize| format!("a[{j}]");
    let m = |j: usize| format!("m[{j}]");
    // Each round's join, into the chain of its odd products (which starts a word above the
    // bottom) of the factors' or of the reduction's.
    let (join0, join1) = (Some((l(0), h(1))), Some((h(2), l(1))));
    let (ab0, qm0, ab1, qm1) = match joins {
        Joins::Products => (join0, None, join1, None),
        Joins::Reduction => (None, join0, None, join1),
    };
    let factors: [(Operand, &str, Join); 8] = [
        (&a, "b0", ab0),
        (&a, "b0", None),
        (&m, "q", None),
        (&m, "q", qm0),
        (&a, "b1", ab1),
        (&a, "b1", None),
        (&m, "q", None),
        (&m, "q", qm1),
    ];
    let mut chains = factors
        .into_iter()
        .zip(PAIRED_CHAINS)
        .map(|((f, g, join), at)| at.products(f, g, 0, None).chain(s, join));
    std::array::from_fn(|_| chains.next().expect("eight chains"))
}

/// A chain's first factor: the C of its word `j`.
type Operand<'a> = &'a dyn Fn(usize) -> String;

/// An addition `d += y` at a chain's bottom, before its products.
type Join = Option<(String, String)>;

/// Where one chain of [`paired_rounds`] adds its word products `f(j) g` (`j` of one parity):
/// into accumulator `acc` at words `j + at, j + at + 1`, written `down` words lower, then its
/// carry into the words `s + top.0` (`top.1`: fresh, written as the carry alone).
#[derive(Clone, Copy)]
struct ChainAt {
    acc: char,
    parity: usize,
    at: usize,
    down: usize,
    top: &'static [(usize, bool)],
}

impl ChainAt {
    const fn new(
        acc: char,
        parity: usize,
        at: usize,
        down: usize,
        top: &'static [(usize, bool)],
    ) -> ChainAt {
        ChainAt {
            acc,
            parity,
            at,
            down,
            top,
        }
    }

    fn products<'a>(
        &self,
        f: &'a dyn Fn(usize) -> String,
        g: &'a str,
        from: usize,
        top_add: Option<(String, String)>,
    ) -> Products<'a> {
        Products {
            acc: self.acc,
            f,
            g,
            parity: self.parity,
            from,
            at: self.at,
            down: self.down,
            top: self.top,
            top_add,
        }
    }
}

/// The eight chains of a pair of rounds, in order: base `2i` (its bottom word in `L`): the odd
/// products `a_j b0` at `h[j+1..]`, the even ones at `l[j..]`, then `q m` likewise; base `2i + 1`
/// (bottom word in `H`): the odd products at `l[j+1..]`, the even ones at `h[j+2..]`, then `q m`,
/// whose chains move each accumulator down two words.
const PAIRED_CHAINS: [ChainAt; 8] = [
    ChainAt::new('h', 1, 1, 0, &[(2, true)]),
    ChainAt::new('l', 0, 0, 0, &[(0, false), (1, true)]),
    ChainAt::new('l', 0, 0, 0, &[(0, false), (1, false)]),
    ChainAt::new('h', 1, 1, 0, &[(2, false)]),
    ChainAt::new('l', 1, 1, 0, &[(2, true)]),
    ChainAt::new('h', 0, 2, 0, &[(2, false), (3, true)]),
    ChainAt::new('h', 0, 2, 2, &[(2, false), (3, false)]),
    ChainAt::new('l', 1, 1, 2, &[(2, false)]),
];

/// Where [`paired_rounds`] adds the words of a round's bottom position that the other
/// accumulator holds: in the chain of the round's odd word products of the factors (whose
/// `q` then reads the joined word), or of the reduction (`q` from the sum of the two words; the
/// chains of the factors' products may then start anywhere, as a square's do). With
/// `Reduction`, the second round's join reads `h[2]` before the shift of `H` (chain 6) moves
/// it: chain 7 goes first.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Joins {
    Products,
    Reduction,
}

/// The chains of a square's products in the pair of rounds at words `p` and `p + 1` of a share
/// of `l` words (a group's thread, or one thread's whole number), in [`paired_rounds`]'
/// accumulators and positions: round `p` multiplies `b0` by the share's word at `p` once and
/// those above it doubled (`a[p + 1] << 1`, then `d[q]`, the words of `2 a`), the share's top
/// bit `top` times `b0` one word above the top where it doubled words; round `p + 1` the same
/// with `b1`. Each pair of words computed once, the words' squares once (see
/// emit/montgomery_group.rs `square` for a group's words at the same place).
pub(super) fn square_products(l: usize, p: usize) -> [Vec<Vec<Step>>; 2] {
    let word = |p: usize, j: usize| match j {
        _ if j == p => format!("a[{j}]"),
        _ if j == p + 1 => format!("(a[{j}] << 1)"),
        _ => format!("d[{j}]"),
    };
    let f0 = move |j: usize| word(p, j);
    let f1 = move |j: usize| word(p + 1, j);
    // A round's chains of odd and even products (paired_rounds' own) from `from`, the top bit's
    // product on the even chain where the round doubles words (all but the top word's round).
    let round = |f: &dyn Fn(usize) -> String, g: &str, from: usize, [odd, even]: [ChainAt; 2]| {
        let top_add = (from + 1 < l).then(|| (g.to_string(), "top".to_string()));
        vec![
            odd.products(f, g, from, None).chain(l, None),
            even.products(f, g, from, top_add).chain(l, None),
        ]
    };
    [
        round(&f0, "b0", p, [PAIRED_CHAINS[0], PAIRED_CHAINS[1]]),
        round(&f1, "b1", p + 1, [PAIRED_CHAINS[4], PAIRED_CHAINS[5]]),
    ]
}

/// One chain of [`paired_rounds`]: accumulator `acc` += `f(j) g` for the `j` of one `parity`
/// from `from` up to the accumulator's width `s`, each at words `j + at, j + at + 1`, written
/// `down` words lower; then the carry into the words `s + top.0`, each with `top.1` fresh: a
/// fresh word is written as the carry alone (nothing earlier in the pair of rounds wrote it), the
/// others are added to, the first with the product `top_add` too where there is one (below 2^32:
/// one factor a bit).
struct Products<'a> {
    acc: char,
    f: &'a dyn Fn(usize) -> String,
    g: &'a str,
    parity: usize,
    from: usize,
    at: usize,
    down: usize,
    top: &'a [(usize, bool)],
    top_add: Option<(String, String)>,
}

impl Products<'_> {
    /// The chain's steps over an accumulator of `s` words (and those above), after `join`, an
    /// addition `d += y` at the chain's bottom whose carry enters its first product (which must
    /// then be the first of its parity).
    fn chain(&self, s: usize, join: Join) -> Vec<Step> {
        let x = |j: usize| format!("{}[{j}]", self.acc);
        let first = (self.parity..s)
            .step_by(2)
            .find(|&j| j >= self.from)
            .unwrap_or(s + self.parity);
        let mut steps: Vec<Step> = Vec::new();
        if let Some((d, y)) = join {
            debug_assert_eq!(
                first, self.parity,
                "a join's carry enters the chain's first word"
            );
            steps.push(Step::new("add.cc", d.clone(), &[d, y]));
        }
        for j in (first..s).step_by(2) {
            let w = j + self.at;
            let lo = if steps.is_empty() {
                "mad.lo.cc"
            } else {
                "madc.lo.cc"
            };
            let args = |k: usize| [(self.f)(j), self.g.to_string(), x(k)];
            steps.push(Step::new(lo, x(w - self.down), &args(w)));
            steps.push(Step::new("madc.hi.cc", x(w + 1 - self.down), &args(w + 1)));
        }
        for (n, &(above, fresh)) in self.top.iter().enumerate() {
            let w = s + above;
            let last = n + 1 == self.top.len();
            let carry = !steps.is_empty();
            let src = if fresh { "0".to_string() } else { x(w) };
            let step = match (&self.top_add, n) {
                (Some((f, g)), 0) => {
                    let op = match (carry, last) {
                        (true, true) => "madc.lo",
                        (true, false) => "madc.lo.cc",
                        (false, true) => "mad.lo",
                        (false, false) => "mad.lo.cc",
                    };
                    Step::new(op, x(w - self.down), &[f.clone(), g.clone(), src])
                }
                _ => {
                    let op = match (carry, last) {
                        (true, true) => "addc",
                        (true, false) => "addc.cc",
                        (false, true) => "add",
                        (false, false) => "add.cc",
                    };
                    Step::new(op, x(w - self.down), &[src, "0".to_string()])
                }
            };
            steps.push(step);
        }
        steps
    }
}

/// [`mont_function`] on one accumulator, in chains of low and high halves of the word products:
/// `s + 2` words of accumulator instead of the paired form's `2 s + 7`, for widths where those
/// do not fit in registers beside `a` and `m`.
fn mont_function_halves(s: usize) -> (String, String) {
    let name = format!("bf_mont_{s}");
    let [a_lo, a_hi, b_lo, b_hi] = round_chains(s);
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
{products}
    const u32 q = t[0] * minv;
{reduction}
  }}
{subtract}}}
"#,
        bits = 32 * s,
        s2 = s + 2,
        products = both_targets(&[a_lo, a_hi], "    "),
        reduction = both_targets(&[b_lo, b_hi], "    "),
        subtract = subtract_once(s, "t", 0),
    );
    (name, text)
}

/// The Montgomery product `r = a b / 2^(32 s) mod m` of `s`-word numbers, for odd `m` and
/// `a b < m 2^(32 s)`, below `m`. `b` is read two words a loop turn at run-time indices (local
/// memory); `a`, `m` and the accumulators are indexed by constants only, so they stay in
/// registers.
fn mont_function(s: usize, form: ProductForm) -> (String, String) {
    let pairs_per_turn = match form {
        ProductForm::Paired { pairs_per_turn } => pairs_per_turn,
        ProductForm::Halves => return mont_function_halves(s),
        ProductForm::Group { .. } => unreachable!("a group's product is montgomery_group's"),
    };
    let name = format!("bf_mont_{s}");
    let rounds = paired_rounds(s, Joins::Products);
    let both = |range: std::ops::Range<usize>| both_targets(&rounds[range], "    ");
    let text = format!(
        r#"// r = a b / 2^{bits} mod m ({s} 32-bit words; odd m, a b < m 2^{bits}): CIOS, one round per word of
// b, each four carry chains of whole 64-bit word products, split by the parity of their
// position into two accumulators whose pairs of words stay in register pairs. r may be a.
static __device__ __forceinline__ void {name}(u32* r, const u32* a, const u32* b, const u32* m, const u32 minv) {{
  u32 l[{s3}], h[{s4}];
  #pragma unroll
  for (int j = 0; j < {s3}; ++j) l[j] = 0u;
  #pragma unroll
  for (int j = 0; j < {s4}; ++j) h[j] = 0u;
  #pragma unroll {unroll}
  for (int i = 0; i < {s}; i += 2) {{
    const u32 b0 = b[i], b1 = b[i + 1];
{r0}
    u32 q = l[0] * minv;
{r1}
{r2}
    q = h[2] * minv;
{r3}
  }}
  // t = L + H / 2^32.
{end}}}
"#,
        bits = 32 * s,
        unroll = pairs_per_turn,
        s3 = s + 3,
        s4 = s + 4,
        end = sum_and_subtract(s, 0, 1),
        r0 = both(0..2),
        r1 = both(2..4),
        r2 = both(4..6),
        r3 = both(6..8),
    );
    (name, text)
}

/// The Montgomery square `r = a^2 / 2^(32 s) mod m` for `a < m` (odd `m`), below `m`: CIOS with
/// each cross product `a_i a_j` computed once. Round `i` adds `a_i D_i` with `D_i = a_i + 2
/// (a_{i+1} + a_{i+2} 2^32 + ..) 2^32`, whose words come from `d = 2 a` (the word above `a_i`
/// without `a_i`'s top bit), then `q m`: about `s^2 / 2 + s^2` word products instead of `2 s^2`.
/// The rows shrink from below as `i` grows (`a_i a_j` for `j >= i`) and all reach the top.
/// Unrolled: `a`'s words are indexed by the round.
/// The accumulators are paired as in [`paired_rounds`] (pairs at even positions in `L`, at odd
/// ones in `H`), indexed by absolute position; the words below a round's base are dead.
fn sqr_function(s: usize) -> (String, String) {
    let name = format!("bf_mont_sqr_{s}");
    let width = 2 * s + 2;
    // Accumulator `x` (`'l'` or `'h'`) at position `p`: the word of the pair of `x` holding `p`.
    let word = |x: char, p: usize| format!("{x}[{p}]");
    let mut body = String::new();
    for i in 0..s {
        let top = i + s + 1;
        let (lo, hi) = if i % 2 == 0 { ('l', 'h') } else { ('h', 'l') };
        // The row's words (multiplicand, relative position j: the product lands at i + j).
        let mut row: Vec<(String, usize)> = vec![(format!("a[{i}]"), i)];
        if i + 1 < s {
            row.push(("e".to_string(), i + 1));
        }
        for j in i + 2..=s {
            row.push((format!("d[{j}]"), j));
        }
        let reduce: Vec<(String, usize)> = (0..s).map(|j| (format!("m[{j}]"), j)).collect();
        // One chain into `x` of the products `f g` at `i + j, i + j + 1` for the (f, j) of one
        // parity, after `head`, then the carry on through `x`'s words up to the top.
        let chain_into = |x: char, head: Vec<Step>, g: &str, words: &[(String, usize)], parity| {
            let mut steps = head;
            let mut next = i + 1;
            for (f, j) in words.iter().filter(|(_, j)| j % 2 == parity) {
                let p = i + j;
                let first = if steps.is_empty() {
                    "mad.lo.cc"
                } else {
                    "madc.lo.cc"
                };
                let args = |p: usize| [f.clone(), g.to_string(), word(x, p)];
                steps.push(Step::new(first, word(x, p), &args(p)));
                steps.push(Step::new("madc.hi.cc", word(x, p + 1), &args(p + 1)));
                next = p + 2;
            }
            if steps.is_empty() {
                // No products of this parity: no carry to pass on.
                return steps;
            }
            for p in next..=top {
                let op = if p == top { "addc" } else { "addc.cc" };
                steps.push(Step::new(op, word(x, p), &[word(x, p), "0".to_string()]));
            }
            steps
        };
        let text = |cs: &[Vec<Step>]| {
            let cs: Vec<Vec<Step>> = cs.iter().filter(|c| !c.is_empty()).cloned().collect();
            format!("{}\n", both_targets(&cs, "  "))
        };
        let a_i = format!("a[{i}]");
        let _ = writeln!(body, "  // Round {i}: a_{i} D_{i}, then q m.");
        if i + 1 < s {
            let _ = writeln!(body, "  e = a[{}] << 1;", i + 1);
        }
        body.push_str(&text(&[
            chain_into(lo, Vec::new(), &a_i, &row, 0),
            chain_into(hi, Vec::new(), &a_i, &row, 1),
        ]));
        // Position i holds a word of each accumulator: q from their sum, which the first chain
        // forms again with its carry.
        let _ = writeln!(body, "  q = ({} + {}) * minv;", word(lo, i), word(hi, i));
        let join = vec![Step::new(
            "add.cc",
            word(lo, i),
            &[word(lo, i), word(hi, i)],
        )];
        body.push_str(&text(&[
            chain_into(hi, join, "q", &reduce, 1),
            chain_into(lo, Vec::new(), "q", &reduce, 0),
        ]));
    }
    let text = format!(
        r#"// r = a^2 / 2^{bits} mod m ({s} 32-bit words; odd m, a < m): CIOS with each cross product once
// (round i adds a_i (a_i + 2 (a_i+1 + a_i+2 2^32 + ..) 2^32), then q m), on accumulators paired
// by the parity of their words' positions. r may be a.
static __device__ __forceinline__ void {name}(u32* r, const u32* a, const u32* m, const u32 minv) {{
  u32 l[{width}], h[{width}], d[{s1}];
  #pragma unroll
  for (int j = 0; j < {width}; ++j) {{ l[j] = 0u; h[j] = 0u; }}
  // d = 2 a: d[j] = the word at 32 j of 2 a.
  #pragma unroll
  for (int j = 1; j < {s}; ++j) d[j] = (a[j] << 1) | (a[j - 1] >> 31);
  d[{s}] = a[{a_top}] >> 31;
  u32 e, q;
{body}  // t = L + H from word {s}.
{end}}}
"#,
        bits = 32 * s,
        s1 = s + 1,
        end = sum_and_subtract(s, s, s),
        a_top = s - 1,
    );
    (name, text)
}

/// Pairs of rounds a loop turn of a square on paired accumulators (one thread's, or each thread's
/// of a group): as the products', whose chains interleave past the GPU's carry flags from eight
/// pairs. A turn takes a fixed part of the words (a branch of its own), since a round's word must
/// be known to the compiler.
pub(super) const SQUARE_PAIRS_PER_TURN: usize = 4;

/// The operands of a square's rounds ([`square_products`]) over a share of `l` words `a`: `d`, the
/// share's words of `2 a` (no bit from below the share), and `top`, its top bit.
pub(super) fn square_operands(l: usize) -> String {
    format!(
        "  // d: the share's words of 2 a (no bit from below it); top: its top bit.\n  u32 d[{l}];\n  \
         d[0] = a[0] << 1;\n  #pragma unroll\n  for (int j = 1; j < {l}; ++j) d[j] = (a[j] << 1) | \
         (a[j - 1] >> 31);\n  const u32 top = a[{last}] >> 31;\n",
        last = l - 1
    )
}

/// The steps of a square over a share of `l` words as the cases of a `switch` on a loop turn's
/// part ([`SQUARE_PAIRS_PER_TURN`] pairs of rounds each), `step(p)` the text of the pair of rounds
/// at words `p` and `p + 1`; and the number of parts.
pub(super) fn square_parts(l: usize, step: &dyn Fn(usize) -> String) -> (String, usize) {
    let per_part = 2 * SQUARE_PAIRS_PER_TURN;
    let mut cases = String::new();
    for p in (0..l).step_by(2) {
        if p % per_part == 0 {
            let _ = writeln!(cases, "    case {}: {{", p / per_part);
        }
        cases.push_str(&step(p));
        if p + 2 == l || (p + 2) % per_part == 0 {
            cases.push_str("      break;\n    }\n");
        }
    }
    (cases, l.div_ceil(per_part))
}

/// The Montgomery square `r = a^2 / 2^(32 s) mod m` for `a < m` (odd `m`), below `m`, on the
/// paired accumulators of [`mont_function`]: its rounds with `b = a`, round `p` adding `a_p`
/// times the words from `p` up, those above `p` doubled ([`square_products`]), so each cross
/// product once: `s^2 / 2 + s^2` word products instead of `2 s^2`.
fn paired_square_function(s: usize) -> (String, String) {
    let name = format!("bf_mont_psq_{s}");
    let [_, _, c2, c3, _, _, c6, c7] = paired_rounds(s, Joins::Reduction);
    let i = "        ";
    let (cases, parts) = square_parts(s, &|p| {
        let [first, second] = square_products(s, p);
        format!(
            r#"      {{
        const u32 b0 = a[{p}], b1 = a[{p1}];
{r0}
        u32 q = (l[0] + h[1]) * minv;
{r1}
{r2}
        q = (h[2] + l[1]) * minv;
{r3}
      }}
"#,
            p1 = p + 1,
            r0 = both_targets(&first, i),
            r1 = both_targets(&[c2.clone(), c3.clone()], i),
            r2 = both_targets(&second, i),
            r3 = both_targets(&[c7.clone(), c6.clone()], i),
        )
    });
    let text = format!(
        r#"// r = a^2 / 2^{bits} mod m ({s} 32-bit words; odd m, a < m): the rounds of bf_mont_{s} with each
// cross product once, doubled. r may be a.
static __device__ __forceinline__ void {name}(u32* r, const u32* a, const u32* m, const u32 minv) {{
  u32 l[{s3}], h[{s4}];
  #pragma unroll
  for (int j = 0; j < {s3}; ++j) l[j] = 0u;
  #pragma unroll
  for (int j = 0; j < {s4}; ++j) h[j] = 0u;
{operands}  #pragma unroll 1
  for (u32 part = 0; part < {parts}u; ++part) {{
    switch (part) {{
{cases}    }}
  }}
  // t = L + H / 2^32.
{end}}}
"#,
        bits = 32 * s,
        s3 = s + 3,
        s4 = s + 4,
        operands = square_operands(s),
        end = sum_and_subtract(s, 0, 1),
    );
    (name, text)
}

/// The end of a Montgomery product: `r = t - m` unless `t < m`, for `t < 2m` in words
/// `{t}[base..=base + s]` (the top one 0 or 1), by the borrow of `t - m` first, so that `t` and
/// `t - m` are not held at once.
fn subtract_once(s: usize, t: &str, base: usize) -> String {
    format!(
        r#"  // t < 2m: subtract m unless t < m (the borrow of t - m).
  u32 borrow = 0u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) borrow = (u32)(((u64){t}[{at}] - (u64)m[j] - (u64)borrow) >> 63);
  const u32 mask = ({t}[{top}] != 0u || borrow == 0u) ? ~0u : 0u;
  borrow = 0u;
  #pragma unroll
  for (int j = 0; j < {s}; ++j) {{
    const u64 x = (u64){t}[{at}] - (u64)(m[j] & mask) - (u64)borrow;
    r[j] = (u32)x;
    borrow = (u32)(x >> 63);
  }}
"#,
        top = base + s,
        at = if base == 0 {
            "j".to_string()
        } else {
            format!("{base} + j")
        },
    )
}

/// The sum of paired accumulators: `l[lb + j] += h[hb + j]` for `j <= s`, one carry chain.
pub(super) fn paired_sum(s: usize, lb: usize, hb: usize) -> Vec<Step> {
    (0..=s)
        .map(|j| {
            let op = match j {
                0 => "add.cc",
                j if j == s => "addc",
                _ => "addc.cc",
            };
            let l = format!("l[{}]", lb + j);
            Step::new(op, l.clone(), &[l, format!("h[{}]", hb + j)])
        })
        .collect()
}

/// The end of a product on paired accumulators: [`paired_sum`] (`t = l[lb..=lb + s] < 2m`),
/// then [`subtract_once`].
fn sum_and_subtract(s: usize, lb: usize, hb: usize) -> String {
    format!(
        "{}\n{}",
        both_targets(&[paired_sum(s, lb, hb)], "  "),
        subtract_once(s, "l", lb)
    )
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

/// `acc = acc^2` through the product `mont` (the C of `acc = acc sq`), `sq` a copy of `acc` in
/// local memory (the product reads its second factor at run-time indices).
fn square_by_product(words: usize, mont: &str) -> String {
    format!(
        "#pragma unroll\n        for (int j = 0; j < {words}; ++j) sq[j] = acc[j];\n        {mont};"
    )
}

/// The power's table and its walk over the exponent's windows, one text for both forms (one
/// thread, or a group whose `words` each thread holds): from `acc` = R^2 mod m (and `a` = x),
/// `tab[j] = x^j R mod m`, then the top window picks the start and each other window `w`
/// squarings and a product by its entry. `mont(r, a, b)` is the C of a Montgomery product,
/// `square` the statements that square `acc` in place.
pub(super) fn windows_walk(
    plan: &PowModPlan,
    words: usize,
    mont: &dyn Fn(&str, &str, &str) -> String,
    square: &str,
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
        {square}
      }}
      {times};
    }}
  }}"#,
        entries = 1u64 << w,
        top_window = plan.windows() - 1,
        mask = (1u32 << w) - 1,
        to_form = mont("a", "a", "sq"),
        next = mont("a", "a", "tab[1]"),
        times = mont("acc", "acc", "tab[win]"),
    )
}

/// `minv = -m^-1 mod 2^32` from the words `m` of an odd modulus, as C statements.
const NEG_INVERSE: &str = r#"  // -m^-1 mod 2^32: Newton's iteration from m (m m = 1 mod 8 for odd m), each step doubling the
  // bits that are right.
  u32 inv = m[0];
  #pragma unroll
  for (int j = 0; j < 4; ++j) inv *= 2u - m[0] * inv;
  const u32 minv = 0u - inv;
"#;

/// The device functions of one Montgomery product of `s` 32-bit words on 64-bit limbs, callees
/// first; the last is `bf_mont_mul_{s}(u64* out, const u64* a, const u64* b, const u64* m)`:
/// `out = a b / 2^(32 s) mod m` for an odd `m` and `b < m`, all ones for an even or zero `m`.
pub(crate) fn mont_mul_functions(s: usize) -> Vec<(String, String)> {
    let name = format!("bf_mont_mul_{s}");
    let text = format!(
        r#"// out = a b / 2^{bits} mod m ({s} 32-bit words; odd m, b < m): one Montgomery product. An even or
// zero m gives all ones, which no residue equals.
static __device__ __forceinline__ void {name}(u64* out, const u64* a64, const u64* b64, const u64* m64) {{
  u32 a[{s}], b[{s}], m[{s}];
  #pragma unroll
  for (int j = 0; j < {half}; ++j) {{
    a[2 * j] = (u32)a64[j];
    a[2 * j + 1] = (u32)(a64[j] >> 32);
    b[2 * j] = (u32)b64[j];
    b[2 * j + 1] = (u32)(b64[j] >> 32);
    m[2 * j] = (u32)m64[j];
    m[2 * j + 1] = (u32)(m64[j] >> 32);
  }}
{NEG_INVERSE}  bf_mont_{s}(a, a, b, m, minv);
  const bool odd = (m[0] & 1u) != 0u;
  #pragma unroll
  for (int j = 0; j < {half}; ++j)
    out[j] = odd ? (((u64)a[2 * j + 1] << 32) | (u64)a[2 * j]) : ~0ull;
}}
"#,
        bits = 32 * s,
        half = s / 2,
    );
    vec![
        mont_function(s, crate::montgomery::one_thread_form(s)),
        (name, text),
    ]
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
{neg_inverse}  // R mod m: m shifted up until its top bit is set (ms), R - ms < ms, then ms halved back down
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
        neg_inverse = NEG_INVERSE,
        ew = e + 1,
        half = s / 2,
        walk = windows_walk(
            plan,
            s,
            &|r, a, b| format!("{mont}({r}, {a}, {b}, m, minv)"),
            &match plan.one_thread_square() {
                OneThreadSquare::Unrolled => format!("bf_mont_sqr_{s}(acc, acc, m, minv);"),
                OneThreadSquare::Paired => format!("bf_mont_psq_{s}(acc, acc, m, minv);"),
                OneThreadSquare::Products => {
                    square_by_product(s, &format!("{mont}(acc, acc, sq, m, minv)"))
                }
            }
        ),
        ehalf = e / 2,
    );
    let mut functions = vec![mont_function(s, plan.product_form()), double_function(s)];
    match plan.one_thread_square() {
        OneThreadSquare::Unrolled => functions.push(sqr_function(s)),
        OneThreadSquare::Paired => functions.push(paired_square_function(s)),
        OneThreadSquare::Products => {}
    }
    functions.push((name, t));
    functions
}

impl Emitter<'_> {
    /// `dest` = the Montgomery product of `a` and `b` modulo `m` (limbs of one length), through
    /// the device function of its width.
    pub(super) fn mont_mul_call(
        &mut self,
        a: &[String],
        b: &[String],
        m: &[String],
    ) -> Vec<String> {
        let s = 2 * a.len();
        let name = format!("bf_mont_mul_{s}");
        self.device_call(
            mont_mul_functions(s),
            &name,
            a.len(),
            &[a, b, m],
            &[],
            false,
        )
    }

    /// `dest` (the result's limbs) = `x^e mod m` from the limbs of the operands, through the
    /// device function of its widths; by the instance's threads together where it has several
    /// (the operands are those of its first thread, the result every thread's).
    pub(super) fn pow_mod_call(&mut self, x: &[String], e: &[String], m: &[String]) -> Vec<String> {
        let threads = self.sched.group_threads;
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
        let g = plan.threads;
        src.push_str(&host::group_prelude(g));
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

    /// The product alone, `a b / R mod m` on 32-bit words, against num-bigint: moduli just below
    /// `2^(32 s)` and operands just below them make every carry into the accumulators' top words
    /// happen (a whole exponentiation reaches them rarely).
    #[test]
    fn montgomery_products_equal_num_bigint_at_the_top() {
        type Form = fn(usize) -> (String, String);
        let forms: [(&str, Form); 4] = [
            ("paired", |s| {
                mont_function(s, ProductForm::Paired { pairs_per_turn: 1 })
            }),
            ("halves", mont_function_halves),
            ("square", sqr_function),
            ("paired4", |s| {
                mont_function(s, ProductForm::Paired { pairs_per_turn: 4 })
            }),
        ];
        for (form, s) in [
            (0, 2usize),
            (0, 4),
            (0, 6),
            (0, 10),
            (0, crate::montgomery::MAX_WORDS_PAIRED),
            (3, 16),
            (3, 32),
            (1, 2),
            (1, 10),
            (1, 34),
            (1, 64),
            (2, 2),
            (2, 4),
            (2, 6),
            (2, 10),
            (2, 16),
            (2, 32),
        ] {
            let (form, function) = forms[form];
            assert!(!form.starts_with("paired") || s <= crate::montgomery::MAX_WORDS_PAIRED);
            let (name, text) = function(s);
            // A square reads its operand twice: the second factor is the first.
            let (b_name, call) = if form == "square" {
                ("a", format!("{name}(r, a, m, 0u - inv)"))
            } else {
                ("b", format!("{name}(r, a, b, m, 0u - inv)"))
            };
            let mut src = String::from(host::PRELUDE);
            src.push_str(&text);
            let _ = write!(
                src,
                r#"int main() {{
  u32 a[{s}], b[{s}], m[{s}], r[{s}];
  for (;;) {{
    for (int j = 0; j < {s}; ++j) if (scanf("%u", &a[j]) != 1) return 0;
    for (int j = 0; j < {s}; ++j) scanf("%u", &b[j]);
    for (int j = 0; j < {s}; ++j) scanf("%u", &m[j]);
    (void)b;
    u32 inv = m[0];
    for (int k = 0; k < 5; ++k) inv *= 2u - m[0] * inv;
    {call};
    for (int j = 0; j < {s}; ++j) printf("%u ", r[j]);
    printf("\n");
  }}
}}
"#
            );
            let mut word = host::words(s as u64 + 99);
            let bits = 32 * s as u64;
            let one = BigUint::from(1u8);
            let top = &one << bits;
            let mut cases = Vec::new();
            for i in 0..400u64 {
                // Moduli within a few thousand of 2^bits, or random with the top bit set, or
                // random of any length; operands random below m, or m minus a little.
                let random = |word: &mut dyn FnMut() -> u64| {
                    let digits: Vec<u32> = (0..s).map(|_| word() as u32).collect();
                    BigUint::from_slice(&digits)
                };
                let m = match i % 3 {
                    0 => &top - 1u8 - 2u64 * (word() % 5000),
                    1 => random(&mut word) | (&one << (bits - 1)) | &one,
                    _ => (random(&mut word) >> (word() % bits)) | &one,
                };
                let near = |word: &mut dyn FnMut() -> u64| {
                    let d = word() % 1000;
                    if m > BigUint::from(d) {
                        &m - 1u8 - d
                    } else {
                        BigUint::from(0u8)
                    }
                };
                let a = if i % 2 == 0 {
                    near(&mut word)
                } else {
                    random(&mut word) % &m
                };
                let b = if i % 5 < 3 {
                    near(&mut word)
                } else {
                    random(&mut word) % &m
                };
                cases.push((a, b, m));
            }
            let mut input = String::new();
            let words32 = |v: &BigUint| {
                let mut d = v.to_u32_digits();
                d.resize(s, 0);
                d.iter().map(|w| format!("{w} ")).collect::<String>()
            };
            for (a, b, m) in &cases {
                input.push_str(&format!("{}{}{}\n", words32(a), words32(b), words32(m)));
            }
            let out = host::run(&format!("mont-{form}-{s}"), &src, &input);
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), cases.len(), "{out}");
            for ((a, b, m), line) in cases.iter().zip(lines) {
                let digits: Vec<u32> = line
                    .split_whitespace()
                    .map(|w| w.parse().unwrap())
                    .collect();
                let got = BigUint::from_slice(&digits);
                let rinv = (&top % m).modinv(m).expect("odd modulus");
                let b = if b_name == "a" { a } else { b };
                assert_eq!(
                    got,
                    a * b * rinv % m,
                    "{a} {b} / R mod {m}, {s} words, {form}"
                );
            }
        }
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
            // Four and eight words a thread: squares whose loop turns take a whole share.
            (512, 64, 4, 8),
            (1024, 64, 4, 8),
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

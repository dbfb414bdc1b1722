//! `limb.mul_words` as C: the product one thread computes whole, as one device function per
//! shape (limbs of each factor, limbs kept, an addend or none).
//!
//! Rows of whole 64-bit word products in PTX carry chains: row `i` adds `a_j b_i` for every `j`,
//! each product one 64-bit value at words `i + j, i + j + 1`. Products of one parity of `i + j`
//! never overlap, so a row is two chains, each into an accumulator of its own (`e`: pairs from
//! even positions, `o`: from odd ones) as `mad.lo.cc`/`madc.hi.cc` pairs, which ptxas fuses into
//! one wide multiply-add with carry in and out (emit/montgomery.rs does the same for Montgomery
//! rounds): about one instruction per word product, against four or more for column sums of
//! 64-bit limbs. The two accumulators are summed once at the end.
//!
//! The two chains of a row are independent: one-thread kernels run few warps (Poly at 2^11 bits:
//! 8 a SM), and the products depend on that parallelism within a thread. One accumulator with
//! each row as two dependent chains (low halves, then high halves) needs 64 registers fewer at
//! 2^11 bits but ran Poly there at 158 K Gu32ops/s against 381 K (H200, bench/RESULTS.md
//! 2026-11-27, sixteenth session).
//!
//! From 64 words kept (2^11 bits) a product sums its low band first ([`split_at`]): the word
//! products below half the width, their carries out of the band counted in one word, then the two
//! accumulators' low halves summed into `e`. The high band then holds two accumulators of half
//! the width beside the finished low words: 32 registers fewer where both operands and both
//! accumulators are live, which took Poly at 2^11 bits (parameters parked) from 32 bytes of
//! local memory a thread to none, and from 415.6-415.7 K to 425.7-426.3 K Gu32ops/s (NVIDIA H100,
//! bench/RESULTS.md 2026-11-28, eighteenth session). At 2^10 bits it spilled instead (0 -> 32
//! bytes parked), so narrower products keep one band.
//!
//! `a b + c` starts its accumulator at `c` ([`Op::LimbMulAddWords`]): no addition after the
//! product, and no register holds the product and the addend at once (Poly at 2^9 bits: 1.02 M
//! -> 1.26 M Gu32ops/s, same session).
//!
//! A square (`a == b`) computes each cross product once: rows `i` over `j > i`, the sum doubled
//! by a one-bit shift, then the squares `a_i^2` (pairs at even positions: one chain).
//!
//! Fully unrolled: every array is indexed by constants and stays in registers. Each chain is
//! rendered for the GPU and, as plain C, for the host, where the tests below compile it.
//!
//! [`Op::LimbMulAddWords`]: bigfuse_core::Op::LimbMulAddWords

use super::chain::{both_targets, Step};
use super::Emitter;

/// One shape of `limb.mul_words`: what its device function computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WordProduct {
    /// Limbs of each factor and limbs kept.
    pub na: usize,
    pub nb: usize,
    pub out: usize,
    /// The same number twice (`na == nb`).
    pub square: bool,
    /// `a b + c`, `c` of `out` limbs (not with `square`: the doubling would count it twice).
    pub addend: bool,
}

impl WordProduct {
    /// The device function's name: one per shape.
    pub(crate) fn name(&self) -> String {
        let WordProduct { na, nb, out, .. } = *self;
        match (self.square, self.addend) {
            (true, _) => format!("bf_sqr_words_{na}_{out}"),
            (false, false) => format!("bf_mul_words_{na}_{nb}_{out}"),
            (false, true) => format!("bf_mad_words_{na}_{nb}_{out}"),
        }
    }

    /// The device function: `(name, text)`.
    pub(crate) fn function(&self) -> (String, String) {
        self.function_split(split_at(2 * self.out))
    }

    /// The device function, its products below 32-bit position `split` summed first.
    fn function_split(&self, split: Option<usize>) -> (String, String) {
        let WordProduct {
            na,
            nb,
            out,
            square,
            addend,
        } = *self;
        assert!(
            !(square && addend),
            "a square with an addend would double it"
        );
        let name = self.name();
        let (wa, wb, w) = (2 * na, 2 * nb, 2 * out);
        assert!(
            split.is_none_or(|m| m >= 2 && m + 2 <= w),
            "the low band's sink lies inside the product"
        );
        let mut acc = Accumulators::new(w, addend);
        // Row `i`: its multiplier and the multiplicands `j` (a square's cross products once).
        let rows: Vec<(usize, String, Vec<usize>)> = if square {
            (0..wa)
                .map(|i| (i, format!("a[{i}]"), (i + 1..wa).collect()))
                .collect()
        } else {
            (0..wb)
                .map(|i| (i, format!("b[{i}]"), (0..wa).collect()))
                .collect()
        };
        let mut body = String::new();
        let from = match split {
            Some(m) => {
                acc.sink = Some(m + 1);
                body.push_str(&format!(
                    "  // The low band: word products below position {m}.\n"
                ));
                for (i, g, js) in &rows {
                    let low: Vec<usize> = js.iter().copied().filter(|j| i + j < m).collect();
                    if !low.is_empty() {
                        body.push_str(&acc.row(*i, g, &low));
                    }
                }
                body.push_str(&acc.fold(m));
                body.push_str("  // The high band.\n");
                for (i, g, js) in &rows {
                    let high: Vec<usize> = js.iter().copied().filter(|j| i + j >= m).collect();
                    if !high.is_empty() {
                        body.push_str(&acc.row(*i, g, &high));
                    }
                }
                m
            }
            None => {
                for (i, g, js) in &rows {
                    body.push_str(&acc.row(*i, g, js));
                }
                1
            }
        };
        body.push_str(&acc.sum(from));
        if square {
            body.push_str(&double(w));
            body.push_str(&diagonal(wa, w));
        }
        let loads = |x: &str, n: usize| {
            format!(
                "  u32 {x}[{w2}];\n  #pragma unroll\n  for (int j = 0; j < {n}; ++j) {{ {x}[2 * j] = (u32){x}64[j]; {x}[2 * j + 1] = (u32)({x}64[j] >> 32); }}\n",
                w2 = 2 * n
            )
        };
        let mut operands = loads("a", na);
        let mut params = "u64* r, const u64* a64".to_string();
        if !square {
            operands.push_str(&loads("b", nb));
            params.push_str(", const u64* b64");
        }
        if addend {
            params.push_str(", const u64* c64");
        }
        let (start, how) = if addend {
            (
                "e[j] = (u32)(c64[j / 2] >> (32 * (j % 2))); o[j] = 0u;",
                "carry chains on two\n// accumulators, e (from c, with pairs of words from even positions) and o (from odd ones), summed at\n// the end.",
            )
        } else {
            (
                "e[j] = 0u; o[j] = 0u;",
                "carry chains on two\n// accumulators, e (pairs of words from even positions) and o (from odd ones), summed at the end.",
            )
        };
        let what = match (square, addend) {
            (true, _) => "a^2",
            (false, false) => "a b",
            (false, true) => "a b + c",
        };
        let text = format!(
            r#"// r = {what} mod 2^{bits} ({na} x {nb} limbs): rows of whole word products in {how}
static __device__ __forceinline__ void {name}({params}) {{
{operands}  u32 e[{w}], o[{w}];{sink}
  #pragma unroll
  for (int j = 0; j < {w}; ++j) {{ {start} }}
{body}  #pragma unroll
  for (int k = 0; k < {out}; ++k) r[k] = ((u64)e[2 * k + 1] << 32) | (u64)e[2 * k];
}}
"#,
            bits = 64 * out,
            sink = if split.is_some() { " u32 s = 0u;" } else { "" },
        );
        (name, text)
    }
}

/// The accumulators' words written so far (the highest of each), so that a chain's carry goes
/// on through written words only: a word above them is still zero and takes the carry whole.
struct Accumulators {
    w: usize,
    top: [Option<usize>; 2],
    /// Where chains end their carries while the low band is summed: the position above the band,
    /// kept in `s` (bounded by the number of chains, so it never carries out).
    sink: Option<usize>,
}

impl Accumulators {
    /// `w` words each; `e` written whole where it starts at an addend.
    fn new(w: usize, addend: bool) -> Accumulators {
        Accumulators {
            w,
            top: [addend.then(|| w - 1), None],
            sink: None,
        }
    }

    /// Row `i`: `g` times `a[j]` for the `j` in `js`, at positions `i + j` below the width, as
    /// one chain per parity.
    fn row(&mut self, i: usize, g: &str, js: &[usize]) -> String {
        let mut chains = Vec::new();
        for parity in 0..2 {
            let terms: Vec<(&str, usize, usize)> = js
                .iter()
                .filter(|&&j| (i + j) % 2 == parity)
                .flat_map(|&j| [("lo", j, i + j), ("hi", j, i + j + 1)])
                .collect();
            chains.extend(self.chain(parity, g, &terms));
        }
        format!("  // Row {i}.\n{}\n", both_targets(&chains, "    "))
    }

    /// One chain into accumulator `k` (`e` or `o`): for each term `(half, j, p)`, that half of
    /// `a[j] g` added at position `p` (consecutive positions; those past the width dropped), then
    /// the carry on up: through the words written before, into the first one above them (still
    /// zero: it takes the carry whole). None where no term lies below the width.
    fn chain(&mut self, k: usize, g: &str, terms: &[(&str, usize, usize)]) -> Option<Vec<Step>> {
        let x = if k == 0 { 'e' } else { 'o' };
        let word = |p: usize| format!("{x}[{p}]");
        let mut steps: Vec<Step> = Vec::new();
        let mut last = 0;
        for &(half, j, p) in terms.iter().filter(|t| t.2 < self.w) {
            let op = match (half, steps.is_empty()) {
                ("lo", true) => "mad.lo.cc",
                ("lo", false) => "madc.lo.cc",
                (_, true) => "mad.hi.cc",
                (_, false) => "madc.hi.cc",
            };
            steps.push(Step::new(
                op,
                word(p),
                &[format!("a[{j}]"), g.to_string(), word(p)],
            ));
            last = p;
        }
        if steps.is_empty() {
            return None;
        }
        let written = self.top[k].map_or(0, |t| t + 1);
        let mut q = last + 1;
        while q < self.w {
            if self.sink == Some(q) {
                steps.push(Step::new("addc", "s", &["s".into(), "0".into()]));
                break;
            }
            let fresh = q >= written;
            let src = if fresh { "0".to_string() } else { word(q) };
            let op = if fresh || q + 1 == self.w {
                "addc"
            } else {
                "addc.cc"
            };
            steps.push(Step::new(op, word(q), &[src, "0".to_string()]));
            q += 1;
            if fresh {
                break;
            }
        }
        self.top[k] = Some(self.top[k].map_or(q - 1, |t| t.max(q - 1)));
        Some(steps)
    }

    /// The low band done (positions below `m`, the carries above it in the sink `s`): `e += o`
    /// up to position `m`, then the sink and the carry added at `m + 1` and carried on through
    /// `e`'s written words. `o` is not read below `m` again, and starts over at `m`.
    fn fold(&mut self, m: usize) -> String {
        let mut steps = e_plus_o(1..m + 1);
        let top = self.top[0].unwrap_or(0);
        if top <= m {
            steps.push(Step::new(
                "addc",
                format!("e[{}]", m + 1),
                &["s".into(), "0".into()],
            ));
            self.top[0] = Some(m + 1);
        } else {
            for q in m + 1..=top {
                let op = if q == top { "addc" } else { "addc.cc" };
                let add = if q == m + 1 { "s" } else { "0" };
                steps.push(Step::new(
                    op,
                    format!("e[{q}]"),
                    &[format!("e[{q}]"), add.into()],
                ));
            }
        }
        self.sink = None;
        format!(
            "  // e = e + o up to {m}, the carries above it from s; o starts over at {m}.\n{}\n  o[{m}] = 0u;\n",
            both_targets(&[steps], "    ")
        )
    }

    /// `e += o` from position `from` to the top (the carry out of the top is dropped: the product
    /// kept).
    fn sum(&self, from: usize) -> String {
        let steps = e_plus_o(from..self.w);
        if steps.is_empty() {
            return String::new();
        }
        format!("  // e = e + o.\n{}\n", both_targets(&[steps], "    "))
    }
}

/// `e[p] += o[p]` for the positions `ps`, one carry chain from the first.
fn e_plus_o(ps: std::ops::Range<usize>) -> Vec<Step> {
    let first = ps.start;
    ps.map(|p| {
        let op = if p == first { "add.cc" } else { "addc.cc" };
        Step::new(
            op,
            format!("e[{p}]"),
            &[format!("e[{p}]"), format!("o[{p}]")],
        )
    })
    .collect()
}

/// Where a product sums its low band first: half its width, from 64 words (2^11 bits) kept.
/// The band's accumulator words are final before the high band starts, so the high band holds
/// two accumulators of half the width beside the finished low words.
fn split_at(w: usize) -> Option<usize> {
    (w >= SPLIT_FROM_WORDS).then_some(w / 2)
}

/// 32-bit words kept from which products sum their low band first ([`split_at`]).
const SPLIT_FROM_WORDS: usize = 64;

/// `e <<= 1` over `w` words (the cross products counted twice).
fn double(w: usize) -> String {
    format!(
        "  // The cross products twice.\n  #pragma unroll\n  for (int p = {top}; p > 0; --p) e[p] = __funnelshift_l(e[p - 1], e[p], 1u);\n  e[0] <<= 1;\n",
        top = w - 1
    )
}

/// `e += a_i^2` at positions `2i, 2i + 1` below the width: one chain (the squares do not
/// overlap).
fn diagonal(wa: usize, w: usize) -> String {
    let mut steps = Vec::new();
    for i in 0..wa {
        let p = 2 * i;
        if p >= w {
            break;
        }
        let args = |q: usize| [format!("a[{i}]"), format!("a[{i}]"), format!("e[{q}]")];
        let lo = if i == 0 { "mad.lo.cc" } else { "madc.lo.cc" };
        steps.push(Step::new(lo, format!("e[{p}]"), &args(p)));
        if p + 1 < w {
            steps.push(Step::new(
                "madc.hi.cc",
                format!("e[{}]", p + 1),
                &args(p + 1),
            ));
        }
    }
    format!("  // The squares.\n{}\n", both_targets(&[steps], "    "))
}

impl Emitter<'_> {
    /// The limbs of `a b + c` (`c` where given, of `out` limbs) kept to `out` limbs, through the
    /// device function of its shape (`square`: `a` and `b` are one value).
    pub(super) fn mul_words_call(
        &mut self,
        a: &[String],
        b: &[String],
        c: Option<&[String]>,
        out: usize,
        square: bool,
    ) -> Vec<String> {
        let shape = WordProduct {
            na: a.len(),
            nb: b.len(),
            out,
            square,
            addend: c.is_some(),
        };
        let (name, text) = shape.function();
        let mut operands: Vec<&[String]> = if square { vec![a] } else { vec![a, b] };
        operands.extend(c);
        self.device_call(
            vec![(name.clone(), text)],
            &name,
            out,
            &operands,
            &[],
            false,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::host;
    use super::*;
    use num_bigint::BigUint;

    /// The device function of a shape compiled for the host, against num-bigint's product (plus
    /// an addend made from the case: `a ^ b` kept to the product's limbs).
    fn check(shape: WordProduct, cases: &[(BigUint, BigUint)]) {
        check_split(shape, split_at(2 * shape.out), cases)
    }

    fn check_split(shape: WordProduct, split: Option<usize>, cases: &[(BigUint, BigUint)]) {
        let WordProduct {
            na,
            nb,
            out,
            square,
            addend,
            ..
        } = shape;
        let (name, text) = shape.function_split(split);
        let call = match (square, addend) {
            (true, _) => format!("{name}(r, a);"),
            (false, false) => format!("{name}(r, a, b);"),
            (false, true) => format!("{name}(r, a, b, c);"),
        };
        let src = format!(
            "{}{text}int main() {{\n  static u64 a[{na}], b[{nb}], c[{out}], r[{out}];\n  for (;;) {{\n    for (int j = 0; j < {na}; ++j) if (scanf(\"%llu\", &a[j]) != 1) return 0;\n    for (int j = 0; j < {nb}; ++j) scanf(\"%llu\", &b[j]);\n    for (int j = 0; j < {out}; ++j) scanf(\"%llu\", &c[j]);\n    {call}\n    for (int j = 0; j < {out}; ++j) printf(\"%llu \", r[j]);\n    printf(\"\\n\");\n  }}\n}}\n",
            host::PRELUDE
        );
        let keep = BigUint::from(1u8) << (64 * out);
        let plus = |a: &BigUint, b: &BigUint| (a ^ b) % &keep;
        let input: String = cases
            .iter()
            .map(|(a, b)| {
                format!(
                    "{}{}{}\n",
                    host::limbs(a, na),
                    host::limbs(b, nb),
                    host::limbs(&plus(a, b), out)
                )
            })
            .collect();
        let tag = split.map_or(String::new(), |m| format!("-split{m}"));
        let got = host::run(&format!("mulwords-{name}{tag}"), &src, &input);
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines.len(), cases.len());
        for ((a, b), line) in cases.iter().zip(lines) {
            let c = if addend {
                plus(a, b)
            } else {
                BigUint::default()
            };
            let want = (if square { a * a } else { a * b } + c) % &keep;
            assert_eq!(
                host::number(line),
                want,
                "{shape:?} split {split:?}: {a} * {b}"
            );
        }
    }

    /// The shapes of one size: the product, the product with an addend and, of equal factors,
    /// the square.
    fn kinds(na: usize, nb: usize, out: usize) -> impl Iterator<Item = WordProduct> {
        let shape = |square, addend| WordProduct {
            na,
            nb,
            out,
            square,
            addend,
        };
        [shape(false, false), shape(false, true)]
            .into_iter()
            .chain((na == nb).then(|| shape(true, false)))
    }

    fn cases(na: usize, nb: usize, square: bool, seed: u64) -> Vec<(BigUint, BigUint)> {
        let mut word = host::words(seed);
        let mut big = |n: usize| {
            let digits: Vec<u32> = (0..n)
                .map(|_| word())
                .flat_map(|w| [w as u32, (w >> 32) as u32])
                .collect();
            BigUint::from_slice(&digits)
        };
        let all = |n: usize| (BigUint::from(1u8) << (64 * n)) - 1u8;
        let one = BigUint::from(1u8);
        let mut out = vec![
            (all(na), all(nb)),
            (BigUint::default(), all(nb)),
            (one.clone(), all(nb)),
            (all(na), one.clone()),
            (&one << (64 * na - 1), &one << (64 * nb - 1)),
        ];
        for _ in 0..40 {
            out.push((big(na), big(nb)));
        }
        // Dense ones: products whose carries run far.
        for _ in 0..10 {
            let (x, y) = (big(na), big(nb));
            out.push((all(na) - (x >> 40u32), all(nb) - (y >> 40u32)));
        }
        if square {
            for c in &mut out {
                c.1 = c.0.clone();
            }
        }
        out
    }

    #[test]
    fn products_equal_num_bigint_on_the_host() {
        for (na, nb, out) in [
            (1, 1, 1),
            (1, 1, 2),
            (2, 2, 2),
            (2, 2, 4),
            (3, 3, 3),
            (4, 4, 4),
            (4, 4, 8),
            (5, 5, 5),
            (8, 8, 8),
            (16, 16, 16),
            (16, 16, 32),
            (3, 1, 3),
            (1, 4, 4),
            (17, 17, 17),
        ] {
            for shape in kinds(na, nb, out) {
                let seed = if shape.square { na * 1000 } else { na * 100 } + out;
                check(shape, &cases(na, nb, shape.square, seed as u64));
            }
        }
    }

    /// The low band summed first, at split points across the width (the default takes it at
    /// half of 64 words and more only): every kind of product, truncated or whole, of equal and
    /// unequal factors.
    #[test]
    fn products_summed_in_two_bands_equal_num_bigint_on_the_host() {
        for (na, nb, out, splits) in [
            (2, 2, 2, &[2][..]),
            (3, 3, 3, &[2, 3, 4][..]),
            (4, 4, 8, &[2, 5, 8, 14][..]),
            (5, 3, 5, &[4, 7][..]),
            (2, 6, 6, &[3, 9][..]),
            (9, 9, 9, &[9, 16][..]),
            (32, 32, 32, &[32][..]),
        ] {
            for &m in splits {
                for shape in kinds(na, nb, out) {
                    let seed = if shape.square { na * 20 } else { na * 10 } + m;
                    let cases = cases(na, nb, shape.square, seed as u64);
                    check_split(shape, Some(m), &cases);
                }
            }
        }
    }
}

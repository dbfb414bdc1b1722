//! CUDA for the kernels of a product over global memory (plan and CPU model in
//! `crate::ntt_global`). Each block loads its points into shared memory once, transforms them in
//! passes of up to four stages held in registers (one barrier per pass), and writes them once.
//!
//! Shared buffers hold `m` interleaved transforms of length L (element i of transform j at
//! i m + j, m = 1 for a row, W for a column group), element a at a + a / 2^r for cubes of 2^r
//! points. In a pass, thread u takes transform j = u mod m and cube g = u / m, so a warp reads 32
//! consecutive elements except in the pass whose cube is 2^r consecutive points; there
//! consecutive cubes lie 2^r m apart, which the pad turns into 2^r m + m: distinct banks.

use super::ntt::{garner_source, HELPERS};
use super::Src;
use crate::ntt_global::{padded, GlobalNtt, Step};

/// The source of `step`'s kernel, named `name`, under the comment `header`.
pub fn source(plan: &GlobalNtt, step: Step, name: &str, header: &str) -> String {
    let mut k = Kernel {
        plan,
        src: Src::default(),
        threads: plan.threads(step),
        pad: plan.radix(step),
    };
    for line in header.lines() {
        k.src.line(format!("// {line}"));
    }
    k.src.line("typedef unsigned int u32;");
    k.src.line("typedef unsigned long long u64;");
    k.src.out.push('\n');
    k.src.out.push_str(HELPERS);
    if step == Step::Finish {
        k.src.out.push_str(&garner_source(&plan.ntt));
    }
    k.src.out.push('\n');
    match step {
        Step::Columns => k.columns(name),
        Step::Rows => k.rows(name),
        Step::Finish => k.finish(name),
    }
    k.src.out
}

struct Kernel<'a> {
    plan: &'a GlobalNtt,
    src: Src,
    threads: u32,
    /// Element a of a shared buffer is at a + a >> pad.
    pad: u32,
}

impl Kernel<'_> {
    /// The kernel's signature and the block's place: `inst` and, for `blocks` per instance,
    /// `rem`.
    fn signature(&mut self, name: &str, params: &[&str], blocks: u64) {
        self.src.line(format!(
            "extern \"C\" __global__ void __launch_bounds__({}) {name}(",
            self.threads
        ));
        for p in params {
            self.src.line(format!("    {p},"));
        }
        self.src.line("    const u32* __restrict__ tab,");
        self.src.line("    const u64 n) {");
        self.src.depth += 1;
        self.src.line("extern __shared__ __align__(16) u32 s[];");
        self.src
            .line(format!("const u64 inst = blockIdx.x / {blocks}u;"));
        self.src
            .line(format!("const u32 rem = blockIdx.x % {blocks}u;"));
        self.src.line("if (inst >= n) return;");
        self.src.line("(void)rem;");
    }

    /// `p`, `tb` (the prime's tables) and, for Montgomery products, `ni` (-p^-1 mod 2^32) for
    /// the prime `pi`.
    fn prime(&mut self, pi: &str, montgomery: bool) {
        let ps = &self.plan.ntt.primes;
        let pick = |f: &dyn Fn(usize) -> u32| {
            format!(
                "{pi} == 0u ? {}u : {pi} == 1u ? {}u : {}u",
                f(0),
                f(1),
                f(2)
            )
        };
        self.src
            .line(format!("const u32 p = {};", pick(&|i| ps[i].p)));
        self.src
            .line("const u32 p2 = 2u * p, np = 0u - p; // the butterflies' constants");
        if montgomery {
            self.src
                .line(format!("const u32 ni = {};", pick(&|i| ps[i].neg_inv)));
        }
        self.src.line(format!(
            "const u32* tb = tab + {pi} * {}u;",
            self.plan.offsets().stride
        ));
    }

    /// The passes of one transform of 2^`l` points in `buf`, `2^log_m` interleaved, cubes of up to
    /// 2^`radix` points, forward
    /// (decimation in frequency, bits from the top) or inverse (decimation in time, from the
    /// bottom), with the twiddle pairs at `tw` (a `const uint2*`). Ends with a barrier. Declares
    /// `g`, `low`, `a0`, `xp` and `e*` in its loops: `buf` must not be one of them.
    fn passes(&mut self, l: u32, log_m: u32, radix: u32, forward: bool, buf: &str, tw: &str) {
        let mut ranges = Vec::new();
        if forward {
            let mut hi = l;
            while hi > 0 {
                let r = hi.min(radix);
                ranges.push((hi - r, r));
                hi -= r;
            }
        } else {
            let mut lb = 0;
            while lb < l {
                let r = (l - lb).min(radix);
                ranges.push((lb, r));
                lb += r;
            }
        }
        let m = 1u64 << log_m;
        for (lb, r) in ranges {
            let cubes = ((1u64 << l) >> r) << log_m;
            let size = 1u64 << r;
            self.src.line(format!(
                "// stages on bits {lb}..{} of {} transform(s) of 2^{l} points",
                lb + r,
                m
            ));
            self.src.open(format!(
                "for (u32 u = threadIdx.x; u < {cubes}u; u += {}u) {{",
                self.threads
            ));
            self.src.line(format!(
                "const u32 g = u >> {log_m}u, low = g & {}u;",
                (1u64 << lb) - 1
            ));
            self.src.line(format!(
                "const u32 a0 = ((((g >> {lb}u) << {}u) | low) << {log_m}u) | (u & {}u);",
                lb + r,
                m - 1
            ));
            let pad = self.pad;
            self.src
                .line(format!("u32* xp = {buf} + a0 + (a0 >> {pad});"));
            // Padding is additive over the disjoint bits of the base and the offsets.
            let offset = |q: u64| padded((q << lb) << log_m, pad);
            let loads: Vec<String> = (0..size)
                .map(|q| format!("e{q} = xp[{}]", offset(q)))
                .collect();
            self.src.line(format!("u32 {};", loads.join(", ")));
            let order: Vec<u32> = if forward {
                (0..r).rev().collect()
            } else {
                (0..r).collect()
            };
            for c in order {
                let b = lb + c;
                self.src.open("{");
                self.src
                    .line(format!("const uint2* w = {tw} + (low << {}u);", l - 1 - b));
                for q in 0..size {
                    if q >> c & 1 == 1 {
                        continue;
                    }
                    let e = (q & ((1 << c) - 1)) << (l - 1 - c);
                    let f = if forward { "bf_dif" } else { "bf_dit" };
                    self.src.line(format!(
                        "{{ const uint2 z = __ldg(&w[{e}]); {f}(e{q}, e{}, z.x, z.y, p2, np); }}",
                        q + (1 << c)
                    ));
                }
                self.src.close("}");
            }
            let stores: Vec<String> = (0..size)
                .map(|q| format!("xp[{}] = e{q};", offset(q)))
                .collect();
            self.src.line(stores.join(" "));
            self.src.close("}");
            self.src.line("__syncthreads();");
        }
    }

    fn columns(&mut self, name: &str) {
        let g = self.plan;
        let (log_w, log_c, log_r) = (g.log_width, g.log_cols, g.log_rows);
        let elements = g.group_elements();
        let o = g.offsets();
        let mut params = vec!["const u64* __restrict__ in0 /* a */"];
        if g.operands == 2 {
            params.push("const u64* __restrict__ in1 /* b */");
        }
        params.push("u32* __restrict__ out0 /* transforms */");
        self.src.line(format!(
            "// Forward transforms of the columns of {} column(s) x {} rows of an operand, prime after prime, then",
            g.width(),
            g.rows()
        ));
        self.src
            .line("// each result k1 of column c (at row bitrev(k1)) times w_N^(c k1).");
        self.signature(name, &params, g.blocks_per_instance(Step::Columns));
        let groups = g.groups();
        let per_thread = elements / self.threads as u64;
        self.src.line(format!(
            "const u32 op = rem / {groups}u, c0 = (rem % {groups}u) << {log_w}u;"
        ));
        let src = if g.operands == 2 {
            "op == 0u ? in0 : in1"
        } else {
            "in0"
        };
        self.src.line(format!(
            "const u32* src = reinterpret_cast<const u32*>({src}) + inst * {}ull; // 32-bit digits",
            2 * g.in_limbs
        ));
        self.src.line(format!(
            "// this thread's {per_thread} digits (element threadIdx.x + {} i), read once for the three primes",
            self.threads
        ));
        self.src.line(format!("u32 dg[{per_thread}];"));
        self.src.line("#pragma unroll");
        self.src
            .open(format!("for (u32 i = 0u; i < {per_thread}u; ++i) {{"));
        self.src.line(format!(
            "const u32 a = threadIdx.x + i * {}u;",
            self.threads
        ));
        self.src.line(format!(
            "const u32 d = c0 + (a & {}u) + ((a >> {log_w}u) << {log_c}u);",
            g.width() - 1
        ));
        self.src.line(format!(
            "dg[i] = d < {}u ? __ldg(src + d) : 0u;",
            2 * g.in_limbs
        ));
        self.src.close("}");
        self.src.line("#pragma unroll 1");
        self.src.open("for (u32 pi = 0u; pi < 3u; ++pi) {");
        self.prime("pi", false);
        self.src.line("#pragma unroll");
        self.src
            .open(format!("for (u32 i = 0u; i < {per_thread}u; ++i) {{"));
        self.src.line(format!(
            "const u32 a = threadIdx.x + i * {}u;",
            self.threads
        ));
        self.src
            .line(format!("s[a + (a >> {})] = bf_digit(dg[i], p);", self.pad));
        self.src.close("}");
        self.src.line("__syncthreads();");
        self.passes(
            log_r,
            log_w,
            g.radix(Step::Columns),
            true,
            "s",
            &format!("reinterpret_cast<const uint2*>(tb + {}u)", o.col_f),
        );
        self.src.line(format!(
            "u32* dst = out0 + inst * {}ull + (op * 3u + pi) * {}u;",
            g.transform_words(),
            g.n()
        ));
        self.twiddle_loop(true, |k| {
            k.src
                .line("dst[c + (pos << LOG_C)] = v;".replace("LOG_C", &format!("{log_c}u")));
        });
        self.src
            .line("__syncthreads(); // before the next prime's digits overwrite s");
        self.src.close("}");
        self.src.close("}");
    }

    /// The loop over a column group's elements (`pos` its row, `c` its column, `a` its place in
    /// `s`) with `v` the element times w_N^(+-c bitrev(pos)); `body` stores it. In `finish`
    /// (inverse) the element comes from `src` and goes into `x`.
    fn twiddle_loop(&mut self, forward: bool, body: impl FnOnce(&mut Self)) {
        let g = self.plan;
        let o = g.offsets();
        let (lo, hi) = if forward {
            (o.step_lo_f, o.step_hi_f)
        } else {
            (o.step_lo_i, o.step_hi_i)
        };
        self.src.open(format!(
            "for (u32 a = threadIdx.x; a < {}u; a += {}u) {{",
            g.group_elements(),
            self.threads
        ));
        self.src.line(format!(
            "const u32 pos = a >> {}u, c = c0 + (a & {}u);",
            g.log_width,
            g.width() - 1
        ));
        self.src.line(format!(
            "const u32 e = c * (__brev(pos) >> {}u);",
            32 - g.log_rows
        ));
        let input = if forward {
            format!("s[a + (a >> {})]", self.pad)
        } else {
            format!("__ldg(src + c + (pos << {}u))", g.log_cols)
        };
        self.src.line(format!(
            "const uint2 tl = __ldg(reinterpret_cast<const uint2*>(tb + {lo}u) + (e & {}u));",
            (1u64 << g.split()) - 1
        ));
        self.src.line(format!(
            "const uint2 th = __ldg(reinterpret_cast<const uint2*>(tb + {hi}u) + (e >> {}u));",
            g.split()
        ));
        self.src.line(format!(
            "const u32 v = bf_shoup(bf_shoup({input}, tl.x, tl.y, p), th.x, th.y, p);"
        ));
        body(self);
        self.src.close("}");
    }

    fn rows(&mut self, name: &str) {
        let g = self.plan;
        let (log_c, c) = (g.log_cols, g.cols());
        let o = g.offsets();
        let pc = padded(c, self.pad);
        self.src.line(format!(
            "// For each prime and row of {c} points: forward transforms of both operands' rows, their"
        ));
        self.src
            .line("// pointwise product scaled by N^-1, and the inverse transform.");
        self.signature(
            name,
            &[
                "const u32* __restrict__ in0 /* transforms */",
                "u32* __restrict__ out0 /* products' transforms */",
            ],
            g.blocks_per_instance(Step::Rows),
        );
        self.src.line(format!(
            "const u32 pi = rem >> {}u, row = rem & {}u;",
            g.log_rows,
            g.rows() - 1
        ));
        self.prime("pi", true);
        self.src.line(format!(
            "const u32* src = in0 + inst * {}ull + pi * {}u + (row << {log_c}u);",
            g.transform_words(),
            g.n()
        ));
        self.src.open(format!(
            "for (u32 i = threadIdx.x; i < {c}u; i += {}u) {{",
            self.threads
        ));
        self.src
            .line(format!("const u32 k = i + (i >> {});", self.pad));
        self.src.line("s[k] = __ldg(src + i);");
        if g.operands == 2 {
            self.src
                .line(format!("s[{pc}u + k] = __ldg(src + {}u + i);", 3 * g.n()));
        }
        self.src.close("}");
        self.src.line("__syncthreads();");
        self.src.line("#pragma unroll 1");
        self.src
            .open(format!("for (u32 op = 0u; op < {}u; ++op) {{", g.operands));
        self.src.line(format!("u32* buf = s + op * {pc}u;"));
        self.passes(
            log_c,
            0,
            g.radix(Step::Rows),
            true,
            "buf",
            &format!("reinterpret_cast<const uint2*>(tb + {}u)", o.row_f),
        );
        self.src.close("}");
        let (sc, scs): (Vec<u32>, Vec<u32>) = g
            .ntt
            .primes
            .iter()
            .map(|pr| {
                let v = g.ntt.scale(pr);
                (v, crate::ntt::shoup(v, pr.p))
            })
            .unzip();
        self.src.line(format!(
            "const u32 sc = pi == 0u ? {}u : pi == 1u ? {}u : {}u; // N^-1 2^32 mod p",
            sc[0], sc[1], sc[2]
        ));
        self.src.line(format!(
            "const u32 scs = pi == 0u ? {}u : pi == 1u ? {}u : {}u;",
            scs[0], scs[1], scs[2]
        ));
        let second = if g.operands == 2 {
            format!("s[{pc}u + k]")
        } else {
            "s[k]".to_string()
        };
        self.src.open(format!(
            "for (u32 i = threadIdx.x; i < {c}u; i += {}u) {{",
            self.threads
        ));
        self.src
            .line(format!("const u32 k = i + (i >> {});", self.pad));
        self.src.line(format!(
            "s[k] = bf_shoup(bf_mont(s[k], {second}, p, ni), sc, scs, p);"
        ));
        self.src.close("}");
        self.src.line("__syncthreads();");
        self.passes(
            log_c,
            0,
            g.radix(Step::Rows),
            false,
            "s",
            &format!("reinterpret_cast<const uint2*>(tb + {}u)", o.row_i),
        );
        self.src.line(format!(
            "u32* dst = out0 + inst * {}ull + pi * {}u + (row << {log_c}u);",
            g.product_words(),
            g.n()
        ));
        self.src.line(format!(
            "for (u32 i = threadIdx.x; i < {c}u; i += {}u) dst[i] = s[i + (i >> {})];",
            self.threads, self.pad
        ));
        self.src.close("}");
    }

    fn finish(&mut self, name: &str) {
        let g = self.plan;
        let o = g.offsets();
        let pe = padded(g.group_elements(), self.pad);
        let out = g.out_limbs;
        self.src.line(format!(
            "// For each group of {} columns: the inverse twiddles and column transforms of the three",
            g.width()
        ));
        self.src.line("// primes, then Garner's CRT into each limb's column sums: X (mod 2^64), Y (the rest, a limb up).");
        self.signature(
            name,
            &[
                "const u32* __restrict__ in0 /* products' transforms */",
                "u64* __restrict__ out0 /* X */",
                "u64* __restrict__ out1 /* Y */",
            ],
            g.blocks_per_instance(Step::Finish),
        );
        self.src
            .line(format!("const u32 c0 = rem << {}u;", g.log_width));
        self.src.line("#pragma unroll 1");
        self.src.open("for (u32 pi = 0u; pi < 3u; ++pi) {");
        self.prime("pi", false);
        self.src.line(format!("u32* x = s + pi * {pe}u;"));
        self.src.line(format!(
            "const u32* src = in0 + inst * {}ull + pi * {}u;",
            g.product_words(),
            g.n()
        ));
        let pad = self.pad;
        self.twiddle_loop(false, |k| k.src.line(format!("x[a + (a >> {pad})] = v;")));
        self.src.line("__syncthreads();");
        self.passes(
            g.log_rows,
            g.log_width,
            g.radix(Step::Finish),
            false,
            "x",
            &format!("reinterpret_cast<const uint2*>(tb + {}u)", o.col_i),
        );
        self.src.close("}");
        self.src.line(format!("u64* X = out0 + inst * {out}ull;"));
        self.src.line(format!("u64* Y = out1 + inst * {out}ull;"));
        self.src.open(format!(
            "for (u32 u = threadIdx.x; u < {}u; u += {}u) {{",
            g.group_elements() / 2,
            self.threads
        ));
        self.src.line(format!(
            "const u32 row = u >> {}u, j = (u & {}u) << 1;",
            g.log_width - 1,
            g.width() / 2 - 1
        ));
        self.src.line(format!(
            "const u32 a = (row << {}u) | j, k = a + (a >> {});",
            g.log_width, self.pad
        ));
        self.src.line("u64 lo0, hi0, lo1, hi1;");
        // The inverse column transforms leave their values in [0, 4p); Garner takes them reduced.
        let ps: Vec<u32> = g.ntt.primes.iter().map(|pr| pr.p).collect();
        let residues = |k: &str| {
            format!(
                "bf_reduce4(s[{k}], {}u), bf_reduce4(s[{pe}u + {k}], {}u), bf_reduce4(s[{}u + {k}], {}u)",
                ps[0],
                ps[1],
                2 * pe,
                ps[2]
            )
        };
        self.src
            .line(format!("bf_garner({}, lo0, hi0);", residues("k")));
        self.src
            .line(format!("bf_garner({}, lo1, hi1);", residues("k + 1u")));
        self.src.line(format!(
            "const u32 l = (c0 + j + (row << {}u)) >> 1; // columns 2l and 2l + 1",
            g.log_cols
        ));
        self.src.line("const u64 sl = lo0 + (lo1 << 32);");
        self.src.line(format!("if (l < {out}u) X[l] = sl;"));
        self.src.line(format!(
            "if (l + 1u < {out}u) Y[l + 1u] = hi0 + (lo1 >> 32) + (hi1 << 32) + (u64)(sl < lo0);"
        ));
        self.src.line("if (l == 0u) Y[0] = 0ull;");
        self.src.close("}");
        self.src.close("}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_has_its_parameters_and_no_unrolled_size_blowup() {
        let plan = GlobalNtt::new(1 << 14, 1 << 14, false).unwrap();
        for step in Step::ALL {
            let src = source(&plan, step, &format!("k_{}", step.name()), "test");
            assert!(src.contains(&format!("k_{}(", step.name())), "{src}");
            assert!(src.contains("const u64 n)"));
            // Straight-line passes: a few hundred lines per kernel, whatever the size.
            assert!(src.lines().count() < 1200, "{}", src.lines().count());
        }
    }
}

//! CUDA for `limb_mul`: operands staged in shared memory, slices of the product accumulated in
//! registers with multiply-add-with-carry chains, slices combined with the carry machinery.
//! The numbers (slices, widths, offsets) come from `crate::mul`.

use super::chain::{chain, Step};
use super::{Emitter, Val};
use crate::mul::{self, MulShape};
use bigfuse_core::{Op, ValueId};

impl Emitter<'_> {
    pub(super) fn limb_mul(&mut self, id: ValueId, comment: &str) -> Val {
        let Op::LimbMul { a, b, out_len, .. } = self.func.node(id).op.clone() else {
            unreachable!("limb_mul() is called on limb_mul nodes")
        };
        let (a_leaves, q_in, in_len) = self.array_parts(a);
        let (b_leaves, _, _) = self.array_parts(b);
        let out_len = out_len.as_const().unwrap_or(0);
        let q_out = self.sched.q_of(out_len);
        let t_count = self.sched.threads_per_instance as u64;
        let s = self
            .sel
            .product(id)
            .and_then(|p| p.shape(self.sched))
            .expect("instruction selection plans every classical product");
        debug_assert_eq!((s.digits_in, s.digits_out), (2 * in_len, 2 * out_len));
        let lay = mul::layout(
            &s,
            self.sched.instances_per_block as u64,
            self.sched.warps_per_instance() as u64,
        );
        let w = s.width;
        let offset = self
            .placement
            .staging_of(id)
            .expect("placement stages every product")
            .offset;

        self.line(format!(
            "// {comment}: {} slices of {w} digits, {} row blocks of {w} digits per operand",
            s.slices, s.blocks
        ));
        let out = self.declare_array(id, q_out);
        self.open("{");
        self.line(format!(
            "u32* ms = reinterpret_cast<u32*>(bf_smem + {offset}) + slot * {}u;",
            lay.stride
        ));
        self.line(format!(
            "u32* ma = ms + {}u; // digit j at j + j / {w}",
            lay.a
        ));
        self.line(format!(
            "u32* mb = ms + {}u; // digit j at (j + {w}) + (j + {w}) / {w}: {w} zero digits on each side",
            lay.b
        ));

        self.line("// stage both operands as 32-bit digits");
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q_in}; ++q) {{"));
        self.line(format!("const u32 d = 2u * (t * {q_in}u + (u32)q);"));
        self.open(format!("if (d < {}u) {{", s.digits_in));
        for (buf, leaf, shift) in [("ma", &a_leaves[0], 0), ("mb", &b_leaves[0], w)] {
            for half in 0..2 {
                let j = if shift == 0 {
                    format!("(d + {half}u)")
                } else {
                    format!("(d + {}u)", half + shift)
                };
                let value = if half == 0 {
                    format!("(u32){leaf}[q]")
                } else {
                    format!("(u32)({leaf}[q] >> 32)")
                };
                self.line(format!("{buf}[{j} + {j} / {w}u] = {value};"));
            }
        }
        self.close("}");
        self.close("}");
        let pad_a = s.blocks * w - s.digits_in;
        if pad_a > 0 {
            self.line(format!(
                "for (u32 j = {}u + t; j < {}u; j += {t_count}u) {{ ma[j + j / {w}u] = 0u; mb[(j + {w}u) + (j + {w}u) / {w}u] = 0u; }}",
                s.digits_in,
                s.blocks * w
            ));
        }
        self.line(format!(
            "for (u32 j = t; j < {w}u; j += {t_count}u) {{ mb[j + j / {w}u] = 0u; const u32 k = {}u + j; mb[k + k / {w}u] = 0u; }}",
            (s.blocks + 1) * w
        ));
        self.line("__syncthreads();");

        // A square (the same array twice) of even slice width: cross products once, then doubled.
        let square = a == b && !s.wide && s.width.is_multiple_of(2);
        self.slices(&s, square);

        // Everyone has read the operands: L and O take their place.
        self.line("__syncthreads();");
        self.line(format!("u32* ml = ms + {}u;", lay.l));
        self.line(format!("u32* mo = ms + {}u;", lay.o));
        let acc = |p: &str, k: u64| format!("{p}{k}");
        for (has, slice, vals) in [("has1", "g1", "s1_"), ("has2", "g2", "c")] {
            self.open(format!("if ({has}) {{"));
            self.line(format!("const u32 base = {slice} * {w}u;"));
            for k in 0..w {
                self.line(format!(
                    "{{ const u32 j = base + {k}u; ml[j + (j >> 5)] = {}; mo[j + (j >> 5)] = {}; }}",
                    acc(vals, k),
                    match k {
                        0 => acc(vals, w),
                        1 => acc(vals, w + 1),
                        _ => "0u".to_string(),
                    }
                ));
            }
            self.close("}");
        }
        self.line("__syncthreads();");

        self.line(format!(
            "// L + O (O shifted up by one slice) with the carry machinery: {q_out} limbs per thread"
        ));
        let sw = s.slices * w;
        let (x, y) = (self.temp(), self.temp());
        self.line(format!("u64 {x}[{q_out}], {y}[{q_out}];"));
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q_out}; ++q) {{"));
        self.line(format!("const u32 d = 2u * (t * {q_out}u + (u32)q);"));
        self.line(format!(
            "const u32 l0 = d < {sw}u ? ml[d + (d >> 5)] : 0u, l1 = d + 1u < {sw}u ? ml[(d + 1u) + ((d + 1u) >> 5)] : 0u;"
        ));
        self.line(format!(
            "const u32 o0 = (d >= {w}u && d - {w}u < {sw}u) ? mo[(d - {w}u) + ((d - {w}u) >> 5)] : 0u;"
        ));
        self.line(format!(
            "const u32 o1 = (d + 1u >= {w}u && d + 1u - {w}u < {sw}u) ? mo[(d + 1u - {w}u) + ((d + 1u - {w}u) >> 5)] : 0u;"
        ));
        self.line(format!("{x}[q] = (u64)l0 | ((u64)l1 << 32);"));
        self.line(format!("{y}[q] = (u64)o0 | ((u64)o1 << 32);"));
        self.close("}");
        self.finish_product(&x, &y, out, q_out, out_len, offset, lay.flags)
    }

    /// The end of a product: `out = x + y` with carries (flags at word `flags` of the staging buffer
    /// at byte `offset`), then a barrier that frees the staging buffer; closes the product's block.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish_product(
        &mut self,
        x: &str,
        y: &str,
        out: Vec<String>,
        q_out: u32,
        out_len: u64,
        offset: u32,
        flags: u64,
    ) -> Val {
        let flags = format!("(reinterpret_cast<u32*>(bf_smem + {offset}) + {flags}u)");
        self.add_with_carries(x, y, q_out, &out[0], &flags);
        self.line("__syncthreads(); // the staging buffer is free for the next step");
        self.close("}");
        Val::Array {
            leaves: out,
            q: q_out,
            len: out_len,
        }
    }

    /// The slices of this thread: a loop over row blocks, each a fully unrolled block of
    /// `width` x `width` digit products in multiply-add-with-carry chains. Leaves the slices'
    /// `width + 2` words in `s1_*` (first slice) and `c*` (second slice).
    fn slices(&mut self, s: &MulShape, square: bool) {
        let w = s.width;
        let (sl, k) = (s.slices, s.blocks);
        let regs = |p: &str| {
            (0..w + 2)
                .map(|i| format!("{p}{i} = 0u"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        self.line(format!("u32 {};", regs("c")));
        self.line(format!("u32 {};", regs("s1_")));
        let rank_to_slice = |r: &str| {
            if s.wide {
                format!("(({r}) & 1 ? {} - (({r}) >> 1) : (({r}) >> 1))", sl - 1)
            } else {
                r.to_string()
            }
        };
        self.line(format!(
            "const int r1 = (int)t, r2 = {} - (int)t;",
            sl as i64 - 1
        ));
        self.line("const bool has1 = r1 <= r2, has2 = r1 < r2;");
        self.line(format!(
            "const int g1 = {}, g2 = {};",
            rank_to_slice("r1"),
            rank_to_slice("(has2 ? r2 : 0)")
        ));
        self.line(format!(
            "const int lo1 = max(0, g1 - {k}), lo2 = max(0, g2 - {k});"
        ));
        if square {
            // Squares: the full blocks of slice g are its first floor(g/2) (see mul::square_*).
            self.line("const int n1 = has1 ? (g1 >> 1) : 0, n2 = has2 ? (g2 >> 1) : 0;");
        } else {
            // A truncated product's last row block of each slice is its diagonal: it is done after
            // the loop with only the products on or below the diagonal.
            let skip = u64::from(!s.wide);
            self.line(format!(
                "const int n1 = has1 ? min(g1, {}) - lo1 + {} : 0, n2 = has2 ? min(g2, {}) - lo2 + {} : 0;",
                k - 1,
                1 - skip,
                k - 1,
                1 - skip
            ));
        }
        // The full row blocks accumulate on paired accumulators (see `paired_row`), summed into
        // a slice's words when it is done.
        self.line(format!("u32 {};", regs("e")));
        self.line(format!("u32 {};", regs("o")));
        let zero = |p: &str| {
            (0..w + 2)
                .map(|i| format!("{p}{i} = 0u;"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        self.line("#pragma unroll 1");
        self.open("for (int j = 0; j < n1 + n2; ++j) {");
        self.line(format!(
            "if (j == n1) {{ {} {} {} }}",
            paired_sum("s1_", w),
            zero("e"),
            zero("o")
        ));
        self.line("const bool first = j < n1;");
        self.line("const int g = first ? g1 : g2;");
        self.line("const int r = first ? lo1 + j : lo2 + (j - n1);");
        self.load_block("g", w);
        for ii in 0..w {
            for parity in 0..2 {
                self.line(paired_row("b", w, ii, parity));
            }
        }
        self.close("}");
        self.line(paired_sum("c", w));
        // With two slices, the first one was saved when the second began; a thread whose second
        // slice has no full row block never reached the save.
        let keep: Vec<String> = (0..w + 2)
            .map(|i| format!("s1_{i} = c{i}; c{i} = 0u;"))
            .collect();
        self.line(format!("if (!has2 || n2 == 0) {{ {} }}", keep.join(" ")));
        if square {
            for (has, acc, g) in [("has1", "s1_", "g1"), ("has2", "c", "g2")] {
                self.open(format!("if ({has}) {{"));
                self.line(format!("if (({g} & 1) == 0) {{"));
                self.partial(acc, g, &format!("({g} >> 1)"), 0, w);
                self.line("} else {");
                self.partial(acc, g, &format!("({g} >> 1)"), -1, w);
                self.partial(acc, g, &format!("(({g} >> 1) + 1)"), 1, w);
                self.line("}");
                self.double_and_add_squares(acc, g, w);
                self.close("}");
            }
        } else if !s.wide {
            self.line("if (has1)");
            self.diagonal("s1_", "g1", w);
            self.line("if (has2)");
            self.diagonal("c", "g2", w);
        }
    }

    /// The row `ii` chain over columns `from..w` into accumulators `{acc}0..{acc}{w+1}`, with the
    /// window digits named `{window}{k - ii + w - 1}`. Columns below `from` are skipped (their
    /// products are zero on a diagonal block).
    fn chain_from(&mut self, acc: &str, window: &str, w: u64, ii: u64, from: u64, high: bool) {
        // Output operands: the written accumulators (low chain: columns from..w-1 then the two
        // overflow words; high chain: columns from+1..w then the top word).
        let first = from + u64::from(high);
        let outs: Vec<u64> = (first..w + 2).collect();
        let n_out = outs.len() as u64;
        let a_op = n_out;
        let half = if high { "hi" } else { "lo" };
        let mut text = Vec::new();
        let mut inputs = vec![format!("\"r\"(a{ii})")];
        for (i, k) in (from..w).enumerate() {
            let op = if i == 0 { "mad" } else { "madc" };
            text.push(format!(
                "{op}.{half}.cc.u32 %{i}, %{a_op}, %{}, %{i};",
                n_out + 1 + i as u64
            ));
            inputs.push(format!("\"r\"({window}{})", k + w - 1 - ii));
        }
        let top = n_out - 1; // operand index of {acc}{w+1}
        if high {
            text.push(format!("addc.u32 %{top}, %{top}, 0;"));
        } else {
            text.push(format!("addc.cc.u32 %{}, %{}, 0;", top - 1, top - 1));
            text.push(format!("addc.u32 %{top}, %{top}, 0;"));
        }
        let outputs: Vec<String> = outs.iter().map(|i| format!("\"+&r\"({acc}{i})")).collect();
        self.line(format!(
            "asm(\"{}\" : {} : {});",
            text.join(" "),
            outputs.join(", "),
            inputs.join(", ")
        ));
    }

    /// The diagonal block (row block r = slice g) of a truncated product: only the products on or
    /// below the diagonal, into accumulators `{acc}*`.
    fn diagonal(&mut self, acc: &str, slice: &str, w: u64) {
        self.open("{");
        self.line(format!("const u32* pa = ma + {slice} * {};", w + 1));
        self.line("const u32* pb = mb + 1;");
        let a_loads: Vec<String> = (0..w).map(|i| format!("a{i} = pa[{i}]")).collect();
        self.line(format!("const u32 {};", a_loads.join(", ")));
        // Window digits b0..b(w-1) sit at window positions w-1..2w-2 (one padding word before).
        let b_loads: Vec<String> = (w - 1..2 * w - 1)
            .map(|x| format!("d{x} = pb[{}]", x + 1))
            .collect();
        self.line(format!("const u32 {};", b_loads.join(", ")));
        for ii in 0..w {
            self.chain_from(acc, "d", w, ii, ii, false);
            self.chain_from(acc, "d", w, ii, ii, true);
        }
        self.close("}");
    }

    /// Row block `r` (a C variable in scope) of slice `g` (a C expression): digits a0..a{w-1} of
    /// the first operand and the window b0..b{2w-2} of the second (skipping the padding word).
    fn load_block(&mut self, g: &str, w: u64) {
        self.line(format!("const u32* pa = ma + r * {};", w + 1));
        self.line(format!("const u32* pb = mb + ({g} - r) * {} + 1;", w + 1));
        let a_loads: Vec<String> = (0..w).map(|i| format!("a{i} = pa[{i}]")).collect();
        self.line(format!("const u32 {};", a_loads.join(", ")));
        let b_loads: Vec<String> = (0..2 * w - 1)
            .map(|x| format!("b{x} = pb[{}]", x + u64::from(x + 1 >= w)))
            .collect();
        self.line(format!("const u32 {};", b_loads.join(", ")));
    }

    /// A partial block of a square: row block `r` of slice `g` with 2r - g = `d`, keeping only the
    /// products `k - 2 ii > d width` (each cross product of the slice once).
    fn partial(&mut self, acc: &str, g: &str, r: &str, d: i64, w: u64) {
        self.open("{");
        self.line(format!("const int r = {r};"));
        self.load_block(g, w);
        self.line("(void)a0; (void)b0;");
        for ii in 0..w {
            let from = (2 * ii as i64 + d * w as i64 + 1).max(0) as u64;
            if from < w {
                self.chain_from(acc, "b", w, ii, from, false);
                self.chain_from(acc, "b", w, ii, from, true);
            }
        }
        self.close("}");
    }

    /// Doubles a square's slice accumulators (every cross product stands for two) and adds the
    /// squares a_i^2 whose column 2i falls in slice `g`.
    fn double_and_add_squares(&mut self, acc: &str, g: &str, w: u64) {
        let n = w + 2;
        let mut text: Vec<String> = vec!["add.cc.u32 %0, %0, %0;".into()];
        for i in 1..n {
            let op = if i + 1 == n {
                "addc.u32"
            } else {
                "addc.cc.u32"
            };
            text.push(format!("{op} %{i}, %{i}, %{i};"));
        }
        let outs: Vec<String> = (0..n).map(|i| format!("\"+&r\"({acc}{i})")).collect();
        self.line(format!(
            "asm(\"{}\" : {});",
            text.join(" "),
            outs.join(", ")
        ));
        self.open("{");
        let half = w / 2;
        for m in 0..half {
            self.line(format!(
                "const u32 q{m} = ma[({g} * {half}u + {m}u) + ({g} * {half}u + {m}u) / {w}u];"
            ));
        }
        let mut text = Vec::new();
        let mut ins = Vec::new();
        for m in 0..half {
            let (lo, hi) = (2 * m, 2 * m + 1);
            let op_lo = if m == 0 { "add.cc.u32" } else { "addc.cc.u32" };
            text.push(format!("{op_lo} %{lo}, %{lo}, %{};", n + 2 * m));
            text.push(format!("addc.cc.u32 %{hi}, %{hi}, %{};", n + 2 * m + 1));
            ins.push(format!("\"r\"(q{m} * q{m})"));
            ins.push(format!("\"r\"(__umulhi(q{m}, q{m}))"));
        }
        text.push(format!("addc.cc.u32 %{w}, %{w}, 0;"));
        text.push(format!("addc.u32 %{}, %{}, 0;", w + 1, w + 1));
        let outs: Vec<String> = (0..n).map(|i| format!("\"+&r\"({acc}{i})")).collect();
        self.line(format!(
            "asm(\"{}\" : {} : {});",
            text.join(" "),
            outs.join(", "),
            ins.join(", ")
        ));
        self.close("}");
    }
}

/// Row `ii` of a row block, the products `a{ii} b_k` (window digit `{window}{k - ii + w - 1}`)
/// of the columns `k` of one parity, each a whole 64-bit value at words `k, k + 1` of the
/// accumulator `e` (pairs from even columns) or `o` (from odd ones): a `mad.lo.cc`/`madc.hi.cc`
/// pair per product, which ptxas fuses into one wide multiply-add with carry in and out, then
/// the carry on to the accumulator's top word `w + 1`. Products of one column parity never
/// overlap, so each row is two such chains instead of chains of low and of high halves.
fn paired_row(window: &str, w: u64, ii: u64, parity: u64) -> String {
    let acc = if parity == 0 { "e" } else { "o" };
    let x = |k: u64| format!("{acc}{k}");
    let a = format!("a{ii}");
    let mut steps = Vec::new();
    let mut next = parity;
    for k in (parity..w).step_by(2) {
        let b = format!("{window}{}", k + w - 1 - ii);
        let lo = if steps.is_empty() {
            "mad.lo.cc"
        } else {
            "madc.lo.cc"
        };
        steps.push(Step::new(lo, x(k), &[a.clone(), b.clone(), x(k)]));
        steps.push(Step::new("madc.hi.cc", x(k + 1), &[a.clone(), b, x(k + 1)]));
        next = k + 2;
    }
    for k in next..w + 2 {
        let op = if k == w + 1 { "addc" } else { "addc.cc" };
        steps.push(Step::new(op, x(k), &[x(k), "0".to_string()]));
    }
    chain(&steps).0
}

/// `{dest}0..{dest}{w+1}` = the sum of the paired accumulators `e` and `o` (plain C: it runs
/// once a slice).
fn paired_sum(dest: &str, w: u64) -> String {
    let mut text = String::from("{ u64 s = 0; ");
    for k in 0..w + 2 {
        text.push_str(&format!(
            "s = (s >> 32) + (u64)e{k} + (u64)o{k}; {dest}{k} = (u32)s; "
        ));
    }
    text.push('}');
    text
}

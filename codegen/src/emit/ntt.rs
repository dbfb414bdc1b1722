//! CUDA for `limb_mul.ntt`: three-prime NTT products (plan and constants from `crate::ntt`).
//! Each pass loads a thread's cubes of up to 32 elements from shared memory, runs up to five
//! butterfly stages in registers, and stores them back: one barrier per pass
//! (`ntt::pass_ranges`). The transforms are one device function per transform size, called by
//! every product and prime, its passes straight-line code, its butterflies and Garner's CRT in
//! PTX: what NVRTC compiles stays small however many products a kernel has.

use super::staging::{Home, NttStep};
use super::{Emitter, Val};
use crate::isel::{self, NttSum};
use crate::ntt::{self, NttPlan};
use bigfuse_core::{Type, ValueId};

/// Device helpers the NTT code calls (emitted once per kernel that has an NTT).
pub(super) const HELPERS: &str = r#"// Synchronizes the `threads` threads of one instance on barrier `id` (1..15): the instances of a
// block do not wait for each other inside their products.
__device__ __forceinline__ void bf_sync_instance(u32 id, u32 threads) { asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory"); }
// a * w mod p by Shoup's method (ws = floor(w * 2^32 / p), p < 2^31, any 32-bit a)
__device__ __forceinline__ u32 bf_shoup(u32 a, u32 w, u32 ws, u32 p) {
  const u32 q = __umulhi(a, ws);
  const u32 r = a * w - q * p;
  return r >= p ? r - p : r;
}
// a * b / 2^32 mod p (Montgomery; ni = -p^-1 mod 2^32; a, b < 2p, the forward transforms' outputs)
__device__ __forceinline__ u32 bf_mont(u32 a, u32 b, u32 p, u32 ni) {
  const u64 ab = (u64)a * b;
  const u32 m = (u32)ab * ni;
  const u32 t = (u32)((ab + (u64)m * p) >> 32);
  return t >= p ? t - p : t;
}
// Butterflies mod p (w, ws: twiddle and Shoup companion; p2 = 2p, np = -p) in PTX: NVVM takes
// each as one statement instead of a dozen (a transform has hundreds), and the conditional
// subtractions become predicated ones. They reduce lazily (Harvey's; p < 2^30 keeps 4p in 32 bits):
// eight instructions each, where reducing fully took eleven.
// Decimation in frequency: (a, b) <- (a + b, (a - b) w), from [0, 2p) to [0, 2p).
__device__ __forceinline__ void bf_dif(u32& a, u32& b, u32 w, u32 ws, u32 p2, u32 np) {
  asm("{ .reg .u32 s, d, q, r; .reg .pred g;\n\t"
      "add.u32 s, %0, %1; sub.u32 d, %0, %1; add.u32 d, d, %4;\n\t"
      "setp.ge.u32 g, s, %4; @g sub.u32 s, s, %4;\n\t"
      "mul.hi.u32 q, d, %3; mul.lo.u32 r, d, %2; mad.lo.u32 r, q, %5, r;\n\t"
      "mov.u32 %0, s; mov.u32 %1, r; }" : "+r"(a), "+r"(b) : "r"(w), "r"(ws), "r"(p2), "r"(np));
}
// Decimation in time: (a, b) <- (a + b w, a - b w), from [0, 4p) to [0, 4p).
__device__ __forceinline__ void bf_dit(u32& a, u32& b, u32 w, u32 ws, u32 p2, u32 np) {
  asm("{ .reg .u32 s, d, q, r, u; .reg .pred g;\n\t"
      "mul.hi.u32 q, %1, %3; mul.lo.u32 r, %1, %2; mad.lo.u32 r, q, %5, r;\n\t"
      "setp.ge.u32 g, %0, %4; mov.u32 u, %0; @g sub.u32 u, u, %4;\n\t"
      "add.u32 s, u, r; sub.u32 d, u, r; add.u32 d, d, %4;\n\t"
      "mov.u32 %0, s; mov.u32 %1, d; }" : "+r"(a), "+r"(b) : "r"(w), "r"(ws), "r"(p2), "r"(np));
}
// The first forward stage, whose second input is zero (a zero-padded operand's upper half):
// (a, 0) <- (a, a w), in [0, 2p), without loading the zero.
__device__ __forceinline__ void bf_dif0(u32 a, u32& b, u32 w, u32 ws, u32 np) {
  asm("{ .reg .u32 q, r;\n\t"
      "mul.hi.u32 q, %1, %3; mul.lo.u32 r, %1, %2; mad.lo.u32 %0, q, %4, r; }"
      : "=r"(b) : "r"(a), "r"(w), "r"(ws), "r"(np));
}
// The last inverse stage where only the lower half of the result is wanted: a <- a + b w.
__device__ __forceinline__ void bf_dit_lo(u32& a, u32 b, u32 w, u32 ws, u32 p2, u32 np) {
  asm("{ .reg .u32 q, r, u; .reg .pred g;\n\t"
      "mul.hi.u32 q, %1, %3; mul.lo.u32 r, %1, %2; mad.lo.u32 r, q, %5, r;\n\t"
      "setp.ge.u32 g, %0, %4; mov.u32 u, %0; @g sub.u32 u, u, %4;\n\t"
      "add.u32 %0, u, r; }" : "+r"(a) : "r"(b), "r"(w), "r"(ws), "r"(p2), "r"(np));
}
// A 32-bit digit into [0, 2p), the forward transform's input range (`ntt::reduce_digit`).
__device__ __forceinline__ u32 bf_digit(u32 d, u32 p) { return d - (d >> 30) * p; }
// A value in [0, 4p), the inverse transform's output, into [0, p) (`ntt::reduce_4p`).
__device__ __forceinline__ u32 bf_reduce4(u32 x, u32 p) {
  x = x >= 2u * p ? x - 2u * p : x;
  return x >= p ? x - p : x;
}
"#;

impl Emitter<'_> {
    /// NTT product `id`.
    pub(super) fn ntt_mul(&mut self, id: ValueId, plan: &NttPlan, comment: &str) -> Val {
        let step = NttStep::product(self.func, id);
        self.ntt_step(&step, plan, id, id, comment)
    }

    /// A sum of NTT products that runs as one (`isel::NttSum`), at its last addition's partial
    /// map: the value of that addition's result; the other nodes it covers need none.
    pub(super) fn ntt_sum(&mut self, sum: &NttSum, comment: &str) {
        let step = NttStep::sum(self.func, sum, self.sched);
        let val = self.ntt_step(&step, &sum.plan, sum.products[0], sum.chain.apply, comment);
        self.vals[sum.chain.apply.index()] = Some(val);
        for v in [sum.at, sum.chain.flags, sum.chain.scan] {
            self.vals[v.index()] = Some(Val::Scalar(vec![]));
        }
    }

    /// The code of NTT step `step` (a product, or a sum of products), computing node `out`'s value
    /// with the twiddle table of product `table_of`. Per prime: each product's operands are
    /// cut into digits and transformed, and their transforms multiplied pointwise, a later
    /// product's added to the ones before; one inverse transform of the result, whose residues
    /// are kept for Garner's CRT.
    fn ntt_step(
        &mut self,
        step: &NttStep,
        plan: &NttPlan,
        table_of: ValueId,
        out: ValueId,
        comment: &str,
    ) -> Val {
        let in_len = match self.func.ty(step.pairs[0].0) {
            Type::Array(_, n) => n.as_const().expect("specialized lengths"),
            t => unreachable!("an NTT product of {t:?}"),
        };
        let out_len = match self.func.ty(out) {
            Type::Array(_, n) => n.as_const().expect("specialized lengths"),
            t => unreachable!("an NTT product into {t:?}"),
        };
        let q_out = self.sched.q_of(out_len);
        debug_assert_eq!((plan.digits_in, plan.digits_out), (2 * in_len, 2 * out_len));
        let t_count = self.sched.threads_per_instance as u64;
        let n = plan.n();
        let cubes = Cubes::new(n, t_count);
        let lay = isel::ntt_layout(plan, self.sched);
        let offset = self
            .placement
            .staging_of(step.at)
            .expect("placement stages every NTT step")
            .offset;
        let table = format!("tw{}", table_of.0);

        self.line(format!(
            "// {comment}: NTT of 2^{} points in 3 primes, {} elements per thread, passes of up to {} stages",
            plan.log_n,
            cubes.per_thread,
            cubes.stages
        ));
        let out_regs = self.declare_array(out, q_out);
        self.open("{");
        self.line(format!(
            "u32* ms = reinterpret_cast<u32*>(bf_smem + {offset}) + slot * {}u;",
            lay.stride
        ));
        self.line(format!(
            "u32* nx = ms + {}u; u32* ny = ms + {}u; // element i at i + i / 32",
            lay.x, lay.y
        ));
        let cols = 2 * q_out;
        match lay.residues {
            Some((r1, r2)) => self.line(format!(
                "u32* r1 = ms + {r1}u; u32* r2 = ms + {r2}u; // residues of the first two primes"
            )),
            None => self.line(format!(
                "u32 ra[{cols}], rb[{cols}], rc[{cols}]; // residues of this thread's {cols} result digits, per prime"
            )),
        }
        let staged = self.stage_before(step);
        // A sum's later products transform into the residues' room (`NttLayout::sum_buffer`);
        // its residues wait in the block's staging slot meanwhile.
        let sum = step.pairs.len() > 1;
        if sum {
            let (Some(z), Some(rw), Some(at)) = (
                lay.sum_buffer(plan),
                lay.residue_words(),
                staged.as_ref().and_then(|h| h.residues),
            ) else {
                unreachable!("a fused sum has a third buffer and slot residues (NttSum::fuses)")
            };
            self.line(format!(
                "u32* nz = ms + {z}u; // later products' second operands, in the residues' room"
            ));
            self.line(format!(
                "u32* s1 = reinterpret_cast<u32*>({} + {at}u); u32* s2 = s1 + {rw}u; // the residues meanwhile",
                self.slot_base()
            ));
        }
        self.line("#pragma unroll 1");
        self.open("for (int pi = 0; pi < 3; ++pi) {");
        let pick = |v: [u32; 3]| format!("(pi == 0 ? {}u : pi == 1 ? {}u : {}u)", v[0], v[1], v[2]);
        let prime = |f: &dyn Fn(&ntt::Prime) -> u32| {
            pick([f(&plan.primes[0]), f(&plan.primes[1]), f(&plan.primes[2])])
        };
        self.line(format!("const u32 p = {};", prime(&|p| p.p)));
        self.line(format!("const u32 ni = {};", prime(&|p| p.neg_inv)));
        self.line(format!("const u32 sc = {};", prime(&|p| plan.scale(p))));
        self.line(format!(
            "const u32 scs = {};",
            prime(&|p| ntt::shoup(plan.scale(p), p.p))
        ));
        let section = ntt::PassTwiddles::new(plan.log_n, cubes.stages).entries();
        self.line(format!(
            "const uint2* tf = {table} + (u32)pi * {}u; // forward twiddles, then inverse (ntt::PassTwiddles)",
            2 * section
        ));
        let core = self.transforms(plan);
        let last = step.pairs.len() - 1;
        for (j, &(a, b)) in step.pairs.iter().enumerate() {
            // A square transforms its operand once and multiplies the transform by itself.
            let square = a == b;
            let (fa, fb) = match (j, square) {
                (0, true) => ("nx", "nx"),
                (0, false) => ("nx", "ny"),
                (_, true) => ("ny", "ny"),
                (_, false) => ("ny", "nz"),
            };
            let mut operands = vec![(fa, a)];
            if !square {
                operands.push((fb, b));
            }
            self.line(if square {
                "// the operand as 32-bit digits mod p"
            } else {
                "// both operands as 32-bit digits mod p"
            });
            for &(buf, operand) in &operands {
                let home = staged.as_ref().map(|h| h.operand(operand));
                self.stage_digits(buf, operand, plan, home);
            }
            let zero: Vec<String> = operands
                .iter()
                .map(|(buf, _)| format!(" {buf}[i + (i >> 5)] = 0u;"))
                .collect();
            self.line(format!(
                "for (u32 i = {}u + t; i < {}u; i += {t_count}u) {{{} }} // the upper half is not read",
                plan.digits_in,
                n / 2,
                zero.concat()
            ));
            self.line(self.instance_sync());
            let ops = operands.len();
            let (acc, inv) = (u32::from(j > 0), u32::from(j == last));
            let keep = match (j == last, lay.residues, sum) {
                (false, _, _) | (_, None, _) => "nullptr",
                (true, Some(_), false) => "pi == 0 ? r1 : pi == 1 ? r2 : nx",
                (true, Some(_), true) => "pi == 0 ? s1 : pi == 1 ? s2 : nx",
            };
            let what = match (j == last, keep) {
                (false, _) => " // the sum of pointwise products so far stays in nx",
                (true, "nullptr") => "",
                (true, _) => " // the third prime's digits stay in place",
            };
            self.line(format!(
                "{core}(nx, {fa}, {fb}, {ops}u, {acc}u, {inv}u, tf, p, ni, sc, scs, {keep}, {}u, t);{what}",
                plan.digits_out
            ));
            if j < last {
                self.line(self.instance_sync());
            }
        }
        if lay.residues.is_none() {
            self.line("// scale by N^-1 and keep this thread's result digits in registers");
            self.line("#pragma unroll");
            self.open(format!("for (int j = 0; j < {cols}; ++j) {{"));
            self.line(format!("const u32 c = t * {cols}u + (u32)j;"));
            self.line(format!(
                "const u32 v = c < {}u ? bf_shoup(nx[c + (c >> 5)], sc, scs, p) : 0u;",
                plan.digits_out
            ));
            self.line("if (pi == 0) ra[j] = v; else if (pi == 1) rb[j] = v; else rc[j] = v;");
            self.close("}");
        }
        self.line(self.instance_sync());
        self.close("}");
        if sum {
            self.line(
                "// the first two primes' residues back into their room, which nz no longer takes",
            );
            self.line(format!(
                "for (u32 k = t; k < {}u; k += {t_count}u) {{ r1[k] = s1[k]; r2[k] = s2[k]; }}",
                lay.residue_words().unwrap_or(0)
            ));
            self.line(self.instance_sync());
        }

        self.line(format!(
            "// CRT (Garner) per digit column, then the column sums as limbs: {q_out} per thread"
        ));
        let (x, y) = (self.temp(), self.temp());
        self.line(format!("u64 {x}[{q_out}], {y}[{q_out}];"));
        self.line("u64* nh = reinterpret_cast<u64*>(ny); // high words of each limb's column sums");
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q_out}; ++q) {{"));
        self.line(format!("const u32 l = t * {q_out}u + (u32)q;"));
        self.line("u64 lo[2], hi[2];");
        self.line("#pragma unroll");
        self.open("for (int h = 0; h < 2; ++h) {");
        if lay.residues.is_some() {
            self.line("const u32 c = 2u * l + (u32)h;");
            self.line(format!(
                "if (c >= {}u) {{ lo[h] = 0ull; hi[h] = 0ull; continue; }}",
                plan.digits_out
            ));
            self.line("const u32 k = c + (c >> 5);");
            self.line("const u32 v1 = r1[k], g2 = r2[k], g3 = nx[k];");
        } else {
            self.line("const u32 j = 2u * (u32)q + (u32)h;");
            self.line("const u32 v1 = ra[j], g2 = rb[j], g3 = rc[j];");
        }
        let garner = self.garner_function(plan);
        self.line(format!("{garner}(v1, g2, g3, lo[h], hi[h]);"));
        self.close("}");
        self.line("// limb = column 2l + column 2l+1 shifted by 32 bits");
        self.line("const u64 sl = lo[0] + (lo[1] << 32);");
        self.line(format!("{x}[q] = sl;"));
        self.line(format!(
            "if (l < {out_len}u) nh[l] = hi[0] + (lo[1] >> 32) + (hi[1] << 32) + (u64)(sl < lo[0]);"
        ));
        self.close("}");
        self.line(self.instance_sync());
        self.line("#pragma unroll");
        self.line(format!(
            "for (int q = 0; q < {q_out}; ++q) {{ const u32 l = t * {q_out}u + (u32)q; {y}[q] = (l >= 1u && l - 1u < {out_len}u) ? nh[l - 1u] : 0ull; }}"
        ));
        let product = self.finish_product(&x, &y, out_regs, q_out, out_len, offset, lay.flags);
        if let Some(h) = staged {
            self.reload_parked(&h.parked);
        }
        product
    }
}

impl Emitter<'_> {
    /// An operand's 32-bit digits into `buf`, reduced into [0, 2p): from where it lies in memory,
    /// thread t reading words t, t + T, ... (coalesced), where it has a home there (`home`, from
    /// [`Self::stage_before`]) or is a parameter's words that only NTT products read
    /// (`read_in_place`); from this thread's registers otherwise.
    fn stage_digits(&mut self, buf: &str, operand: ValueId, plan: &NttPlan, home: Option<Home>) {
        let t_count = self.sched.threads_per_instance;
        let put = |e: &mut Self, d: &str, w: &str| {
            for half in 0..2u32 {
                let v = if half == 0 {
                    format!("(u32){w}")
                } else {
                    format!("(u32)({w} >> 32)")
                };
                e.line(format!(
                    "{{ const u32 i = {d} + {half}u; {buf}[i + (i >> 5)] = bf_digit({v}, p); }}"
                ));
            }
        };
        let home = match self.val(operand) {
            Val::Global(k) => Some(Home::Param(*k)),
            _ => home,
        };
        if let Some(home) = home {
            let len = plan.digits_in / 2;
            let (word, from) = (
                self.home_word(home, "l"),
                match home {
                    Home::Param(k) => format!("from in{k}, read where it lies"),
                    Home::Slot(_) => "staged in the block's slot".into(),
                },
            );
            self.open(format!(
                "for (u32 l = t; l < {len}u; l += {t_count}u) {{ // {from}"
            ));
            self.line(format!("const u64 w = {word};"));
            put(self, "2u * l", "w");
            self.close("}");
            return;
        }
        let Val::Array { leaves, q, .. } = self.val(operand).clone() else {
            unreachable!("an NTT operand {:?}", self.val(operand))
        };
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
        self.line(format!("const u32 d = 2u * (t * {q}u + (u32)q);"));
        self.open(format!("if (d < {}u) {{", plan.digits_in));
        put(self, "d", &format!("{}[q]", leaves[0]));
        self.close("}");
        self.close("}");
    }
}

/// How the threads of an instance cover a transform of `n` points: each holds `per_thread`
/// elements in every register pass (32 with the n/32 threads the schedule gives an NTT product
/// by default, `NttPlan::threads`; 64 with half as many under a `q` hint), and `workers` threads
/// have work (all of them unless the instance has more than n/2 threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cubes {
    per_thread: u64,
    workers: u64,
    /// The most stages a pass runs ([`ntt::pass_stages`]).
    stages: u32,
}

impl Cubes {
    fn new(n: u64, threads: u64) -> Cubes {
        let per_thread = ntt::elements_per_thread(n, threads);
        Cubes {
            per_thread,
            workers: n / per_thread,
            stages: ntt::pass_stages(n, threads),
        }
    }
}

impl Emitter<'_> {
    /// Garner's CRT of one digit column as a device function ([`garner_source`]). Returns its
    /// name.
    fn garner_function(&mut self, plan: &NttPlan) -> String {
        let name = "bf_garner";
        let text = garner_source(plan);
        self.device_function(name, |e| e.src.out.push_str(&text));
        name.to_string()
    }

    /// The device function that runs one prime's part of every NTT product of `plan`'s size in
    /// this kernel: forward transforms of `ops` operands in `fa` and `fb` (natural order in,
    /// bit-reversed out), their pointwise product into `nx` (added to it with `acc`), and with
    /// `inv` the inverse transform of `nx` (natural order out) and, when `keep` is given, the
    /// first `cols` digits scaled into it. A sum of k products calls it k times per prime: the
    /// first without `acc`, the last with `inv`. Every product and
    /// prime calls it and the operands share its passes, so NVRTC compiles each pass once per
    /// kernel instead of once per product, prime and operand (Poly at 2^15 bits: 3.9 s of NVRTC
    /// before, 0.5 s after). Returns the function's name.
    fn transforms(&mut self, plan: &NttPlan) -> String {
        let log_n = plan.log_n;
        let n = plan.n();
        let threads = self.sched.threads_per_instance as u64;
        let cubes = Cubes::new(n, threads);
        // Every operand fills at most the lower half (n >= 2 digits_in - 1): the forward
        // transforms skip the zero upper half. A product of no more digits than that keeps only
        // the lower half of the inverse transform.
        debug_assert!(2 * plan.digits_in <= n);
        let half_out = 2 * plan.digits_out <= n;
        let name = format!(
            "bf_ntt_{log_n}_{threads}{}",
            if half_out { "_lo" } else { "" }
        );
        self.device_function(&name, |e| {
            e.line(format!(
                "// One prime's transforms for NTT products of 2^{log_n} points: {} elements per thread",
                cubes.per_thread
            ));
            e.line(format!(
                "// in registers, as cubes (base | k << lb) of up to {} stages per pass, one barrier per pass.",
                cubes.stages
            ));
            // Internal, so that the compiler sees every call and keeps the pointers in shared memory.
            e.open(format!(
                "static __device__ __noinline__ void {name}(u32* nx, u32* fa, u32* fb, const u32 ops, const u32 acc, const u32 inv, const uint2* tf, const u32 p, const u32 ni, const u32 sc, const u32 scs, u32* keep, const u32 cols, const u32 t) {{"
            ));
            e.line(format!(
                "const uint2* ti = tf + {}u; // inverse twiddles",
                ntt::PassTwiddles::new(log_n, cubes.stages).entries()
            ));
            e.line("const u32 p2 = 2u * p, np = 0u - p; // the butterflies' constants");
            e.line(
                "// forward transforms of fa (and fb, with two ops; decimation in frequency): natural order in, bit-reversed out",
            );
            e.cube_passes(log_n, cubes, true, true);
            e.line("// pointwise products into nx (Montgomery: the 2^-32 is undone by the final scaling); with acc, added");
            e.line("// mod p to the sum of products nx holds (a sum's earlier terms)");
            e.open("if (acc) {");
            e.line(format!(
                "for (u32 i = t; i < {n}u; i += {threads}u) {{ const u32 k = i + (i >> 5); const u32 v = nx[k] + bf_mont(fa[k], fb[k], p, ni); nx[k] = v >= p ? v - p : v; }}"
            ));
            e.close_open("} else {");
            e.line(format!(
                "for (u32 i = t; i < {n}u; i += {threads}u) {{ const u32 k = i + (i >> 5); nx[k] = bf_mont(fa[k], fb[k], p, ni); }}"
            ));
            e.close("}");
            e.line(e.instance_sync());
            e.line("if (!inv) return; // a sum's earlier products: the next one's is added before the inverse transform");
            e.line("// inverse transform (decimation in time): bit-reversed in, natural order out");
            e.cube_passes(log_n, cubes, false, half_out);
            e.line("// scaled by N^-1 (which also removes the Montgomery factor): the result's digits into `keep`");
            e.line(format!(
                "if (keep) for (u32 c = t; c < cols; c += {threads}u) {{ const u32 k = c + (c >> 5); keep[k] = bf_shoup(nx[k], sc, scs, p); }}"
            ));
            e.close("}");
        });
        name
    }

    /// The passes of one direction ([`ntt::pass_ranges`], straight-line: each pass's lowest bit
    /// and offsets are constants that fold into the loads' and stores' immediates). A pass of r
    /// stages from bit lb has each thread take its cubes of 2^r elements base | k << lb, run the
    /// stages in registers and store them back; forward passes run from the top range down,
    /// inverse ones from the bottom up.
    ///
    /// Forward stage s acts on bit b = log_n - 1 - s, inverse stage s on bit b = s; both pair
    /// element i with i + 2^b and use the twiddle (i mod 2^b) << (log_n - 1 - b) (`NttPlan::forward`
    /// and `inverse`). In a cube with c = b - lb that twiddle sits in the kernel's table at
    /// [`ntt::PassTwiddles::entry`]: stage c's block plus `low` plus a constant.
    ///
    /// With `trim`, forward transforms take the upper half of their input as zero (the first
    /// stage neither loads it nor adds it: `bf_dif0`) and the inverse one computes and stores the
    /// lower half of its output only (`bf_dit_lo`), as `ntt`'s model does.
    fn cube_passes(&mut self, log_n: u32, cubes: Cubes, forward: bool, trim: bool) {
        let Cubes {
            per_thread,
            workers,
            stages,
        } = cubes;
        let threads = self.sched.threads_per_instance as u64;
        let twiddles = ntt::PassTwiddles::new(log_n, stages);
        let mut ranges = ntt::pass_ranges(log_n, stages);
        if forward {
            ranges.reverse();
        }
        for (lb, radix) in ranges {
            let size = 1u64 << radix;
            let groups = per_thread >> radix;
            // The top stage of the whole transform runs in this pass: the first forward stage,
            // the last inverse one.
            let trimmed = trim && lb + radix == log_n;
            // Elements that this pass loads and stores (the lower half where trimmed).
            let live = if trimmed { size / 2 } else { size };
            self.open(format!(
                "{{ // stages on bits {lb}..{}: {groups} cube(s) of {size} per thread",
                lb + radix - 1
            ));
            if workers < threads {
                self.open(format!("if (t < {workers}u) {{"));
            }
            let g = if groups > 1 {
                self.line("#pragma unroll 1");
                self.open(format!("for (u32 u = 0u; u < {groups}u; ++u) {{"));
                format!("t + u * {workers}u")
            } else {
                self.open("{");
                "t".to_string()
            };
            if ntt::swaps_lane_bit(lb, radix, 1 << (log_n - radix)) {
                self.line(format!(
                    "const u32 gn = {g}, g = gn ^ ((((gn >> {lb}u) ^ (gn >> 5)) & 1u) * {}u); // ntt::swap_lane_bit",
                    (1u32 << lb) | 32
                ));
            } else {
                self.line(format!("const u32 g = {g};"));
            }
            self.line(format!("const u32 low = g & {}u;", (1u64 << lb) - 1));
            self.line(format!(
                "const u32 base = ((g >> {lb}u) << {}u) | low;",
                lb + radix
            ));
            if forward {
                // The operands one after the other: one cube's registers live at a time, and still
                // one barrier per pass, as they live in different buffers.
                self.line("#pragma unroll 1");
                self.open("for (u32 op = 0u; op < ops; ++op) {");
                self.line("u32* x = (op == 0u ? fa : fb) + base + (base >> 5);");
            } else {
                self.open("{");
                self.line("u32* x = nx + base + (base >> 5);");
            }
            // i + i / 32 is additive over disjoint bits: element k sits at phys(k << lb) from the
            // cube's base.
            let regs: Vec<String> = (0..size)
                .map(|k| {
                    if forward && k >= live {
                        format!("e{k}")
                    } else {
                        format!("e{k} = x[{}]", ntt::phys(k << lb))
                    }
                })
                .collect();
            self.line(format!("u32 {};", regs.join(", ")));
            let tw = if forward { "tf" } else { "ti" };
            let order: Vec<u32> = if forward {
                (0..radix).rev().collect()
            } else {
                (0..radix).collect()
            };
            for c in order {
                self.open("{");
                // Stage c's block of the section: the lanes' `low` read consecutive entries.
                self.line(format!(
                    "const uint2* w = {tw} + {}u + low;",
                    twiddles.offset(lb, c)
                ));
                let dist = 1u64 << c;
                let top = trimmed && c == radix - 1;
                let (f, consts) = match (forward, top) {
                    (true, false) => ("bf_dif", "p2, np"),
                    (true, true) => ("bf_dif0", "np"),
                    (false, false) => ("bf_dit", "p2, np"),
                    (false, true) => ("bf_dit_lo", "p2, np"),
                };
                for k in (0..size).filter(|k| k & dist == 0) {
                    let e = twiddles.entry(lb, c, k, 0) - twiddles.offset(lb, c);
                    self.line(format!(
                        "{{ const uint2 z = __ldg(&w[{e}]); {f}(e{k}, e{}, z.x, z.y, {consts}); }}",
                        k + dist
                    ));
                }
                self.close("}");
            }
            let stores: Vec<String> = (0..if forward { size } else { live })
                .map(|k| format!("x[{}] = e{k};", ntt::phys(k << lb)))
                .collect();
            self.line(stores.join(" "));
            self.close("}");
            self.close("}");
            if workers < threads {
                self.close("}");
            }
            self.line(self.instance_sync());
            self.close("}");
        }
    }

    /// The barrier inside an NTT product, which only the instance's threads share (its part of
    /// the staging buffer, its twiddles read-only): a named barrier of the instance's threads
    /// where a block holds several instances of whole warps (ids 1..15; 0 is `__syncthreads`),
    /// so that the block's other instances go on; `__syncthreads` otherwise. The barrier that
    /// frees the staging buffer at the product's end stays block-wide: the next step may use
    /// the buffer's bytes for another instance.
    fn instance_sync(&self) -> String {
        let (ipb, t) = (
            self.sched.instances_per_block,
            self.sched.threads_per_instance,
        );
        if ipb > 1 && ipb <= 15 && t % 32 == 0 {
            format!("bf_sync_instance(1u + threadIdx.x / {t}u, {t}u);")
        } else {
            "__syncthreads();".into()
        }
    }
}

/// Garner's CRT of one digit column (`bf_garner(v1, g2, g3, lo, hi)`: its residues mod the three
/// primes in, the column sum v1 + v2 p1 + v3 p1 p2 < 2^96 out as a 64-bit low part and the rest),
/// in PTX like the butterflies: NVVM sees one statement per column. The source of the device
/// function, for the kernels of one block's products and of products over global memory.
pub(super) fn garner_source(plan: &NttPlan) -> String {
    let (c12, p1m3, c123) = plan.crt_constants();
    let ps: Vec<u32> = plan.primes.iter().map(|p| p.p).collect();
    let (p1, p2, p3) = (ps[0], ps[1], ps[2]);
    let p12 = p1 as u64 * p2 as u64;
    // `a * w mod p` by Shoup's method into `out`, from `a` (below 2^32), as in bf_shoup.
    let shoup = |out: &str, a: &str, w: u32, p: u32| {
        format!(
            "mul.hi.u32 q, {a}, {}U; mul.lo.u32 r, {a}, {w}U; mul.lo.u32 q, q, {p}U; sub.u32 {out}, r, q; setp.ge.u32 g, {out}, {p}U; @g sub.u32 {out}, {out}, {p}U;",
            ntt::shoup(w, p)
        )
    };
    let steps = [
        ".reg .u32 u, d, q, r, v2, w, v3; .reg .u64 t, m, x, s; .reg .pred g;".to_string(),
        format!("setp.ge.u32 g, %2, {p2}U; mov.u32 u, %2; @g sub.u32 u, u, {p2}U;"),
        format!("sub.u32 d, %3, u; add.u32 d, d, {p2}U;"),
        shoup("v2", "d", c12, p2),
        format!("setp.ge.u32 g, %2, {p3}U; mov.u32 w, %2; @g sub.u32 w, w, {p3}U;"),
        shoup("r", "v2", p1m3, p3),
        format!("add.u32 r, r, w; setp.ge.u32 g, r, {p3}U; @g sub.u32 r, r, {p3}U;"),
        format!("sub.u32 d, %4, r; add.u32 d, d, {p3}U;"),
        shoup("v3", "d", c123, p3),
        format!(
            "cvt.u64.u32 t, %2; mad.wide.u32 t, v2, {p1}U, t; mad.wide.u32 t, v3, {}U, t;",
            p12 & 0xffff_ffff
        ),
        format!("mul.wide.u32 m, v3, {}U;", p12 >> 32),
        "shl.b64 x, m, 32; add.u64 s, t, x; setp.lt.u64 g, s, t; shr.u64 x, m, 32; @g add.u64 x, x, 1;".to_string(),
        "mov.u64 %0, s; mov.u64 %1, x;".to_string(),
    ];
    let mut s = String::new();
    s.push_str(
        "// Garner's CRT of one digit column: residues v1, g2, g3 mod p1, p2, p3 in, the column\n",
    );
    s.push_str(
        "// sum v1 + v2 p1 + v3 p1 p2 (v2, v3 the mixed-radix digits) out as lo + hi * 2^64.\n",
    );
    s.push_str(
        "__device__ __forceinline__ void bf_garner(u32 v1, u32 g2, u32 g3, u64& lo, u64& hi) {\n",
    );
    s.push_str(&format!("  asm(\"{{ {}\\n\\t\"\n", steps[0]));
    for st in &steps[1..steps.len() - 1] {
        s.push_str(&format!("      \"{st}\\n\\t\"\n"));
    }
    s.push_str(&format!(
        "      \"{} }}\" : \"=l\"(lo), \"=l\"(hi) : \"r\"(v1), \"r\"(g2), \"r\"(g3));\n",
        steps[steps.len() - 1]
    ));
    s.push_str("}\n");
    s
}

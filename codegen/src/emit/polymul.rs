//! CUDA for `poly_mul`: transforms of both operands in shared memory, pointwise products,
//! inverse transform (plan, twiddles and a CPU model of this exact code in `crate::polymul`).
//! Each stage is a loop over the M/2 butterflies, T threads apart, then one barrier.

use super::{Emitter, Val};
use crate::polymul::PolyPlan;
use bigfuse_core::{Op, ValueId};

/// Device helpers for arithmetic modulo a prime below 2^64 on Montgomery forms (R = 2^64).
pub(super) const HELPERS: &str = r#"// a * b / 2^64 mod p (Montgomery; ni = -p^-1 mod 2^64; a * b < p * 2^64)
__device__ __forceinline__ u64 bf_mont64(u64 a, u64 b, u64 p, u64 ni) {
  const u64 lo = a * b, hi = __umul64hi(a, b);
  const u64 mh = __umul64hi(lo * ni, p);
  const u64 s1 = hi + mh, s = s1 + (lo != 0ull ? 1ull : 0ull);
  return (s1 < hi || s < s1 || s >= p) ? s - p : s;
}
__device__ __forceinline__ u64 bf_add64(u64 a, u64 b, u64 p) {
  const u64 s = a + b;
  return (s < a || s >= p) ? s - p : s;
}
__device__ __forceinline__ u64 bf_sub64(u64 a, u64 b, u64 p) {
  return a >= b ? a - b : a - b + p;
}
"#;

impl Emitter<'_> {
    pub(super) fn poly_mul(&mut self, id: ValueId, plan: &PolyPlan, comment: &str) -> Val {
        let Op::PolyMul { a, b, modulus } = self.func.node(id).op.clone() else {
            unreachable!("poly_mul() is called on poly_mul nodes")
        };
        let (a_leaves, q_in, n) = self.array_parts(a);
        let (b_leaves, _, _) = self.array_parts(b);
        debug_assert_eq!((plan.n, Some(plan.mont.p)), (n, modulus.as_const()));
        let (m, p, ni) = (plan.m(), plan.mont.p, plan.mont.neg_inv);
        let t_count = self.sched.threads_per_instance;
        let out_len = 2 * n;
        let q_out = self.sched.q_of(out_len);
        let offset = self
            .placement
            .staging_of(id)
            .expect("placement stages every polynomial product")
            .offset;
        self.line(format!(
            "// {comment}: transforms of 2^{} points modulo {p} in shared memory",
            plan.log_m
        ));
        let out = self.declare_array(id, q_out);
        self.open("{");
        self.line(format!("const u64 p = 0x{p:x}ull, ni = 0x{ni:x}ull;"));
        let (buf, stride) = if plan.two_buffers() {
            // Both transforms side by side: one pass of butterflies serves both operands.
            self.line(format!(
                "u64* sa = reinterpret_cast<u64*>(bf_smem + {offset}) + slot * {}u;",
                2 * m
            ));
            self.line(format!("u64* sb = sa + {m}u;"));
            self.twiddle_pointer(id);
            self.line("// both operands, zero-padded");
            self.line("#pragma unroll");
            self.open(format!("for (int q = 0; q < {q_in}; ++q) {{"));
            self.line(format!("const u32 i = t * {q_in}u + (u32)q;"));
            self.line(format!(
                "if (i < {n}u) {{ sa[i] = {}[q]; sb[i] = {}[q]; }}",
                a_leaves[0], b_leaves[0]
            ));
            self.close("}");
            self.line(format!(
                "for (u32 i = {n}u + t; i < {m}u; i += {t_count}u) {{ sa[i] = 0ull; sb[i] = 0ull; }}"
            ));
            self.line("__syncthreads();");
            self.line("// forward transforms (decimation in frequency): bit-reversed out");
            self.forward_stages(&["sa", "sb"], "s", m);
            self.line("// pointwise products");
            self.line(format!(
                "for (u32 i = t; i < {m}u; i += {t_count}u) sa[i] = bf_mont64(sa[i], sb[i], p, ni);"
            ));
            ("sa", "s")
        } else {
            // One buffer: the first transform waits in registers, elements t + r*T per thread.
            let held = m.div_ceil(t_count as u64);
            self.line(format!(
                "u64* s = reinterpret_cast<u64*>(bf_smem + {offset}) + slot * {m}u;"
            ));
            self.twiddle_pointer(id);
            self.line(format!("u64 fa[{held}];"));
            for (k, leaf) in [&a_leaves[0], &b_leaves[0]].into_iter().enumerate() {
                let which = if k == 0 { "first" } else { "second" };
                self.line(format!("// the {which} operand, zero-padded, transformed (decimation in frequency): bit-reversed out"));
                self.line("#pragma unroll");
                self.open(format!("for (int q = 0; q < {q_in}; ++q) {{"));
                self.line(format!("const u32 i = t * {q_in}u + (u32)q;"));
                self.line(format!("if (i < {n}u) s[i] = {leaf}[q];"));
                self.close("}");
                self.line(format!(
                    "for (u32 i = {n}u + t; i < {m}u; i += {t_count}u) s[i] = 0ull;"
                ));
                self.line("__syncthreads();");
                self.forward_stages(&["s"], "st", m);
                if k == 0 {
                    self.line("#pragma unroll");
                    self.line(format!(
                        "for (int r = 0; r < {held}; ++r) {{ const u32 i = t + (u32)r * {t_count}u; fa[r] = i < {m}u ? s[i] : 0ull; }}"
                    ));
                    self.line("__syncthreads();");
                }
            }
            self.line("// pointwise products (each thread its own elements of both transforms)");
            self.line("#pragma unroll");
            self.line(format!(
                "for (int r = 0; r < {held}; ++r) {{ const u32 i = t + (u32)r * {t_count}u; if (i < {m}u) s[i] = bf_mont64(s[i], fa[r], p, ni); }}"
            ));
            ("s", "st")
        };
        self.line("__syncthreads();");
        self.line("// inverse transform (decimation in time): natural order out");
        self.line("#pragma unroll 1");
        self.open(format!(
            "for (u32 h = 1u, {stride} = {}u; h < {m}u; h <<= 1, {stride} >>= 1) {{",
            m / 2
        ));
        self.open(format!(
            "for (u32 j = t; j < {}u; j += {t_count}u) {{",
            m / 2
        ));
        self.line("const u32 k = j & (h - 1u), i0 = ((j - k) << 1) + k, i1 = i0 + h;");
        self.line(format!(
            "const u64 u = {buf}[i0], v = bf_mont64({buf}[i1], tw[{}u + k * {stride}], p, ni);",
            m / 2
        ));
        self.line(format!(
            "{buf}[i0] = bf_add64(u, v, p); {buf}[i1] = bf_sub64(u, v, p);"
        ));
        self.close("}");
        self.line("__syncthreads();");
        self.close("}");
        self.line(format!(
            "// scaled by M^-1: this thread's {q_out} coefficients"
        ));
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q_out}; ++q) {{"));
        self.line(format!("const u32 i = t * {q_out}u + (u32)q;"));
        self.line(format!(
            "{}[q] = i < {out_len}u ? bf_mont64({buf}[i], 0x{:x}ull, p, ni) : 0ull;",
            out[0],
            plan.scale()
        ));
        self.close("}");
        // The buffers may be reused by the next step: everyone has read them.
        self.line("__syncthreads();");
        self.close("}");
        Val::Array {
            leaves: out,
            q: q_out,
            len: out_len,
        }
    }

    fn twiddle_pointer(&mut self, id: ValueId) {
        self.line(format!(
            "const u64* tw = reinterpret_cast<const u64*>(tw{}); // forward twiddles, then inverse",
            id.0
        ));
    }

    /// The forward transform's stages over the buffers `bufs` (one loop of butterflies serves
    /// all of them; `stride` names the twiddle stride).
    fn forward_stages(&mut self, bufs: &[&str], stride: &str, m: u64) {
        let t_count = self.sched.threads_per_instance;
        self.line("#pragma unroll 1");
        self.open(format!(
            "for (u32 h = {}u, {stride} = 1u; h >= 1u; h >>= 1, {stride} <<= 1) {{",
            m / 2
        ));
        self.open(format!(
            "for (u32 j = t; j < {}u; j += {t_count}u) {{",
            m / 2
        ));
        self.line("const u32 k = j & (h - 1u), i0 = ((j - k) << 1) + k, i1 = i0 + h;");
        self.line(format!("const u64 w = tw[k * {stride}];"));
        for (i, b) in bufs.iter().enumerate() {
            if i == 0 {
                self.line(format!("u64 u = {b}[i0], v = {b}[i1];"));
            } else {
                self.line(format!("u = {b}[i0]; v = {b}[i1];"));
            }
            self.line(format!(
                "{b}[i0] = bf_add64(u, v, p); {b}[i1] = bf_mont64(bf_sub64(u, v, p), w, p, ni);"
            ));
        }
        self.close("}");
        self.line("__syncthreads();");
        self.close("}");
    }
}

//! Emission of additions and subtractions that instruction selection chose as carry chains: the pattern
//! `map(partial) ; map(flags) ; scan.exclusive carry ; map(apply)` becomes PTX carry chains over a
//! thread's limbs (`add.cc`/`addc`, two instructions per limb) around the same ballot resolution
//! of the carries between threads (`carry.rs`), instead of per-limb flag words.

use super::{Emitter, Val};
use crate::isel::CarryChain;

impl Emitter<'_> {
    /// Emits a whole addition group at its partial map; the group's other nodes become aliases.
    pub(super) fn carry_group(&mut self, g: &CarryChain, comment: &str) {
        let (xs, q, len) = self.array_parts(g.x);
        let (ys, _, _) = self.array_parts(g.y);
        let (x, y) = (&xs[0], &ys[0]);
        let op = if g.sub { "sub" } else { "add" };
        self.line(format!(
            "// {comment} .. {}: a {} b with carry chains over {q} limbs per thread",
            g.apply,
            if g.sub { "-" } else { "+" }
        ));
        let out = self.declare_array(g.apply, q);
        let r = out[0].clone();
        // In kernels with halo lanes: whether lane 0 decides the carry into the warp. A limb
        // propagates a carry when a + b is all ones (a - b: when a = b).
        let halo = self.halo_exact(&[g.x, g.y]).map(|exact| {
            let (x, y, sub) = (x.clone(), y.clone(), g.sub);
            self.halo_decides(exact, q, |e| {
                if sub {
                    format!("{x}[{e}] == {y}[{e}]")
                } else {
                    format!("({x}[{e}] ^ {y}[{e}]) == 0xffffffffffffffffull")
                }
            })
        });
        if let Some((_, exact)) = &halo {
            for id in [g.flags, g.scan, g.apply] {
                self.exact[id.index()] = Some(exact.clone());
            }
        }
        self.open("{");
        let carry = self.temp();
        self.line(format!("u32 {carry} = 0u;"));
        // Chains of up to 8 limbs per asm statement (operand limit); the carry goes from one
        // statement to the next through a register.
        let chunks: Vec<(u32, u32)> = (0..q).step_by(8).map(|s| (s, (s + 8).min(q))).collect();
        for (ci, &(lo, hi)) in chunks.iter().enumerate() {
            let n = hi - lo;
            let mut text = Vec::new();
            let mut ops_out: Vec<String> = (lo..hi).map(|i| format!("\"=l\"({r}[{i}])")).collect();
            ops_out.push(format!("\"+r\"({carry})"));
            let mut ops_in: Vec<String> = Vec::new();
            for i in lo..hi {
                ops_in.push(format!("\"l\"({x}[{i}])"));
                ops_in.push(format!("\"l\"({y}[{i}])"));
            }
            let cidx = n; // operand index of the carry register
            let first_in = n + 1;
            if ci > 0 {
                // Restore the flag: carry-in c in {0, 1} (borrow: 0 or all ones).
                if g.sub {
                    text.push(format!("sub.cc.u32 %{cidx}, 0, %{cidx};"));
                } else {
                    text.push(format!("add.cc.u32 %{cidx}, %{cidx}, 0xffffffff;"));
                }
            }
            for k in 0..n {
                let first = ci == 0 && k == 0;
                let ins = if first {
                    format!("{op}.cc.u64")
                } else {
                    format!("{op}c.cc.u64")
                };
                text.push(format!(
                    "{ins} %{k}, %{}, %{};",
                    first_in + 2 * k,
                    first_in + 2 * k + 1
                ));
            }
            text.push(format!("{op}c.u32 %{cidx}, 0, 0;"));
            self.line(format!(
                "asm(\"{}\" : {} : {});",
                text.join(" "),
                ops_out.join(", "),
                ops_in.join(", ")
            ));
        }
        // carry (borrow) out of this thread's limbs: add gives 0/1, sub gives 0/all ones
        let all = self.temp();
        let (fold, want) = if g.sub {
            ("|", "0ull")
        } else {
            ("&", "0xffffffffffffffffull")
        };
        let terms: Vec<String> = (0..q).map(|i| format!("{r}[{i}]")).collect();
        self.line(format!(
            "const u64 {all} = {};",
            terms.join(&format!(" {fold} "))
        ));
        let agg = self.temp();
        self.line(format!(
            "const u32 {agg} = ({carry} & 1u) | (({all} == {want}) ? 2u : 0u);"
        ));
        if self.sched.threads_per_instance > 1 {
            let flags = if self.sched.block_span() > 32 {
                self.staging(g.scan, "u32")
            } else {
                String::new()
            };
            // A thread's limbs cannot both carry out and be all ones (all zeros for a borrow).
            let pre = match &halo {
                Some((decided, _)) => self.carry_by_halo(g.scan, &agg, decided, true),
                None => self.carry_in_instance(g.scan, &flags, &agg, true),
            };
            let cin = self.temp();
            self.line(format!("const u64 {cin} = (u64)({pre} & 1u);"));
            let mut text = vec![format!("{op}.cc.u64 %0, %0, %{q};")];
            for i in 1..q {
                if i + 1 == q {
                    text.push(format!("{op}c.u64 %{i}, %{i}, 0;"));
                } else {
                    text.push(format!("{op}c.cc.u64 %{i}, %{i}, 0;"));
                }
            }
            if q == 1 {
                text[0] = format!("{op}.u64 %0, %0, %1;");
            }
            let outs: Vec<String> = (0..q).map(|i| format!("\"+l\"({r}[{i}])")).collect();
            self.line(format!(
                "asm(\"{}\" : {} : \"l\"({cin}));",
                text.join(" "),
                outs.join(", ")
            ));
        }
        self.close("}");
        let val = Val::Array {
            leaves: out,
            q,
            len,
        };
        self.vals[g.apply.index()] = Some(val);
        // The flags and the scan exist only inside the group.
        self.vals[g.flags.index()] = Some(Val::Scalar(vec![]));
        self.vals[g.scan.index()] = Some(Val::Scalar(vec![]));
    }
}

//! Emission of additions and subtractions that instruction selection chose as carry chains: the pattern
//! `map(partial) ; map(flags) ; scan.exclusive carry ; map(apply)` becomes PTX carry chains over a
//! thread's limbs (`add.cc`/`addc`, two instructions per limb) around the same ballot resolution
//! of the carries between threads (`carry.rs`), instead of per-limb flag words.

use super::{warp::FULL, Emitter, Val};
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
            let mut ops_out: Vec<String> = (lo..hi).map(|i| format!("\"=&l\"({r}[{i}])")).collect();
            ops_out.push(format!("\"+&r\"({carry})"));
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
            self.carry_in(op, &r, q, &cin);
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

impl Emitter<'_> {
    /// Adds (subtracts) the carry (borrow) `cin`, 0 or 1, into this thread's `q` limbs `r`. A
    /// carry goes past the lowest limb only where that limb was all ones (all zeros), which is
    /// rare in most data: from five limbs up the warp adds it to the lowest limb and runs the
    /// rest of the chain only when some lane carries out of it (a warp-uniform branch: the
    /// ballots before it leave the warp converged), which saves ALU instructions, the bound of
    /// programs that chain many additions (6-Add at 2^17 / 2^18 bits, six limbs a thread: 92% /
    /// 94% of the copy -> 96% / 98% on an H200). At four limbs the whole chain measured as fast
    /// or 1% faster (2^14..2^16 bits).
    fn carry_in(&mut self, op: &str, r: &str, q: u32, cin: &str) {
        let chain = |from: u32, amount: u32| -> String {
            let mut text = vec![format!("{op}.cc.u64 %0, %0, %{amount};")];
            for i in 1..amount {
                let ins = if i + 1 == amount { "c" } else { "c.cc" };
                text.push(format!("{op}{ins}.u64 %{i}, %{i}, 0;"));
            }
            if amount == 1 {
                text[0] = format!("{op}.u64 %0, %0, %1;");
            }
            let outs: Vec<String> = (from..from + amount)
                .map(|i| format!("\"+l\"({r}[{i}])"))
                .collect();
            format!("asm(\"{}\" : {}", text.join(" "), outs.join(", "))
        };
        if q < 5 {
            self.line(format!("{} : \"l\"({cin}));", chain(0, q)));
            return;
        }
        let out = self.temp();
        self.line(format!("u32 {out};"));
        self.line(format!(
            "asm(\"{op}.cc.u64 %0, %0, %2; {op}c.u32 %1, 0, 0;\" : \"+l\"({r}[0]), \"=r\"({out}) : \"l\"({cin}));"
        ));
        self.open(format!("if (__any_sync({FULL}, {out} != 0u)) {{"));
        self.line(format!("{} : \"l\"((u64)({out} & 1u)));", chain(1, q - 1)));
        self.close("}");
    }
}

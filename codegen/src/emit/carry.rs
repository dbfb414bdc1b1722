//! Carries between the threads of an instance, resolved with ballots (`carry_prefix`). Additions
//! (`add.rs`), carry scans and the sums that end products (`mul.rs`, `ntt.rs`) all meet the same
//! problem, so the resolution, and the test that it matches the sequential carry scan, live here
//! once.

use super::warp::FULL;
use super::Emitter;

impl Emitter<'_> {
    /// Exclusive prefix of carry flags over the threads of the instance, resolved with ballots: the
    /// lanes' (generate, propagate) bits become two 32-bit masks whose integer sum carries exactly
    /// as the limbs do, so one addition resolves 32 threads (and one more, 32 warps).
    ///
    /// `disjoint` says that no thread's `agg` is 3 (generate and propagate at once), as for the
    /// aggregates of additions; otherwise the carry into a lane is read off the sum with the
    /// propagate bits of generating lanes masked (the sum bit of such a lane is its carry-in).
    pub(super) fn carry_prefix(&mut self, flags: &str, agg: &str, disjoint: bool) -> String {
        let t_count = self.sched.block_span();
        let (g, p, gm, pm) = (self.temp(), self.temp(), self.temp(), self.temp());
        self.line(format!(
            "const u32 {g} = {agg} & 1u, {p} = ({agg} >> 1) & 1u;"
        ));
        self.line(format!(
            "u32 {gm} = __ballot_sync({FULL}, {g}), {pm} = __ballot_sync({FULL}, {p});"
        ));
        if t_count < 32 {
            // Kill each instance's top lane so that no carry crosses into the next instance.
            let mut top = 0u32;
            let mut lane = t_count - 1;
            while lane < 32 {
                top |= 1 << lane;
                lane += t_count;
            }
            self.line(format!("{gm} &= ~0x{top:08x}u; {pm} &= ~0x{top:08x}u;"));
        }
        // With several warps per instance, the warps' own (generate, propagate) bits go through
        // shared memory and are resolved the same way, giving each warp its carry-in.
        let warp_in = if t_count > 32 {
            let w = self.sched.warps_per_instance();
            let st = flags;
            let s0 = self.temp();
            self.line(format!("const u64 {s0} = (u64)({gm} | {pm}) + (u64){gm};"));
            let word = format!("(u32)({s0} >> 32) | ({pm} == {FULL} ? 2u : 0u)");
            self.line(format!(
                "if (lane == 0u) {st}[slot * {w}u + warp] = {word};"
            ));
            self.line("__syncthreads();");
            let (f, gw, pw, sw, cw, ow) = (
                self.temp(),
                self.temp(),
                self.temp(),
                self.temp(),
                self.temp(),
                self.temp(),
            );
            self.line(format!(
                "const u32 {f} = lane < {w}u ? {st}[slot * {w}u + lane] : 0u;"
            ));
            self.line(format!(
                "const u32 {gw} = __ballot_sync({FULL}, {f} & 1u), {pw} = __ballot_sync({FULL}, ({f} >> 1) & 1u);"
            ));
            self.line(format!("const u64 {sw} = (u64)({gw} | {pw}) + (u64){gw};"));
            let pw_only = if disjoint {
                pw.clone()
            } else {
                format!("({pw} & ~{gw})")
            };
            self.line(format!(
                "const u32 {cw} = (u32)(({sw} ^ (u64){pw_only}) >> warp) & 1u;"
            ));
            self.line(format!(
                "const u32 {ow} = (({pw} | ~((1u << warp) - 1u)) == {FULL}) ? 1u : 0u;"
            ));
            Some((cw, ow))
        } else {
            None
        };
        let plus_cin = warp_in
            .as_ref()
            .map(|(c, _)| format!(" + (u64){c}"))
            .unwrap_or_default();
        let below = if t_count < 32 {
            format!(
                "(((1u << lane) - 1u) & ~((1u << (lane & ~{}u)) - 1u))",
                t_count - 1
            )
        } else {
            "((1u << lane) - 1u)".to_string()
        };
        let warp_ones = warp_in
            .as_ref()
            .map(|(_, o)| format!("{o} & "))
            .unwrap_or_default();
        self.lane_carries(&gm, &pm, disjoint, &plus_cin, &below, &warp_ones)
    }

    /// The ballot arithmetic that gives each lane its exclusive carry (bit 0) and whether every
    /// lane below it propagates (bit 1) from the masks `gm`, `pm`: `plus_cin` adds the carry into
    /// lane 0, `below` masks the lanes of this lane's instance below it, `ones` prefixes the
    /// condition that the warps before propagate too.
    fn lane_carries(
        &mut self,
        gm: &str,
        pm: &str,
        disjoint: bool,
        plus_cin: &str,
        below: &str,
        ones_before: &str,
    ) -> String {
        let (s, c, ones, pre) = (self.temp(), self.temp(), self.temp(), self.temp());
        self.line(format!(
            "const u64 {s} = (u64)({gm} | {pm}) + (u64){gm}{plus_cin};"
        ));
        let pm_only = if disjoint {
            pm.to_string()
        } else {
            format!("({pm} & ~{gm})")
        };
        self.line(format!(
            "const u32 {c} = (u32)(({s} ^ (u64){pm_only}) >> lane) & 1u;"
        ));
        self.line(format!(
            "const u32 {ones} = {ones_before}((((~{pm}) & {below}) == 0u) ? 1u : 0u);"
        ));
        self.line(format!("const u32 {pre} = {c} | ({ones} << 1);"));
        pre
    }

    /// The exclusive carry into each lane of a whole warp from the lanes' generate and propagate
    /// masks `gm`, `pm` (no carry into lane 0), as [`Self::carry_prefix`] resolves one warp:
    /// bit 0 the carry, bit 1 whether every lane below propagates.
    pub(super) fn warp_carry(&mut self, gm: &str, pm: &str, disjoint: bool) -> String {
        self.lane_carries(gm, pm, disjoint, "", "((1u << lane) - 1u)", "")
    }

    /// `out = x + y` over the instance's limbs (`x`, `y`: u64 arrays of `q` elements per thread),
    /// carries resolved across threads like an addition's; `flags` points at the block's carry
    /// staging (used when an instance spans several warps).
    pub(super) fn add_with_carries(&mut self, x: &str, y: &str, q: u32, out: &str, flags: &str) {
        let f = self.temp();
        self.line(format!("u32 {f}[{q}];"));
        self.line("#pragma unroll");
        self.line(format!(
            "for (int q = 0; q < {q}; ++q) {{ const u64 s = {x}[q] + {y}[q]; {f}[q] = (u32)(s < {y}[q]) | ((u32)(s == 0xffffffffffffffffull) << 1); {x}[q] = s; }}"
        ));
        let agg = self.temp();
        self.line(format!("u32 {agg} = 2u;"));
        self.line("#pragma unroll");
        self.line(format!(
            "for (int q = 0; q < {q}; ++q) {agg} = ((({f}[q] | (({f}[q] >> 1) & {agg})) & 1u) | ({agg} & {f}[q] & 2u));"
        ));
        let carry_in = if self.sched.threads_per_instance > 1 {
            // Limb flags of a sum never carry and equal all ones at once: aggregates are in {0, 1, 2}.
            let pre = self.carry_prefix(flags, &agg, true);
            format!("({pre} & 1u)")
        } else {
            "0u".to_string()
        };
        let c = self.temp();
        self.line(format!("u32 {c} = {carry_in};"));
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
        self.line(format!("{out}[q] = {x}[q] + (u64){c};"));
        self.line(format!("{c} = ({f}[q] & 1u) | (({f}[q] >> 1) & {c});"));
        self.close("}");
    }
}

#[cfg(test)]
mod tests {
    use bigfuse_core::{apply_lambda, ops, Value};

    /// The arithmetic of `carry_prefix` for one warp: exclusive carry prefix of lane `i` from the
    /// ballots of the lanes' (generate, propagate) bits.
    fn ballot_prefix(aggs: &[u32; 32], disjoint: bool) -> Vec<u32> {
        let (mut gm, mut pm) = (0u32, 0u32);
        for (i, a) in aggs.iter().enumerate() {
            gm |= (a & 1) << i;
            pm |= ((a >> 1) & 1) << i;
        }
        let s = (gm | pm) as u64 + gm as u64;
        let p_only = if disjoint { pm } else { pm & !gm };
        (0..32)
            .map(|lane| {
                let c = ((s ^ p_only as u64) >> lane) as u32 & 1;
                let below = (1u32 << lane).wrapping_sub(1);
                let ones = (!pm & below == 0) as u32;
                c | (ones << 1)
            })
            .collect()
    }

    fn sequential(aggs: &[u32; 32]) -> Vec<u32> {
        let op = ops::carry();
        let mut acc = ops::CARRY_IDENTITY;
        let mut out = Vec::new();
        for a in aggs {
            out.push(acc);
            acc = match apply_lambda(&op, &[Value::U32(acc), Value::U32(*a)]).unwrap() {
                Value::U32(v) => v,
                v => panic!("{v:?}"),
            };
        }
        out
    }

    #[test]
    fn ballot_resolution_matches_the_carry_scan() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for round in 0..2000 {
            let with_three = round % 2 == 0;
            let aggs: [u32; 32] = std::array::from_fn(|_| {
                if with_three {
                    rng.gen_range(0..4)
                } else {
                    rng.gen_range(0..3)
                }
            });
            let want = sequential(&aggs);
            assert_eq!(ballot_prefix(&aggs, false), want, "{aggs:?}");
            if !with_three {
                assert_eq!(ballot_prefix(&aggs, true), want, "{aggs:?}");
            }
        }
        // The shorter form is wrong once a lane both generates and propagates.
        let mut aggs = [0u32; 32];
        aggs[0] = 1;
        aggs[1] = 3;
        assert_ne!(ballot_prefix(&aggs, true), sequential(&aggs));
    }
}

//! Scans and reductions over an instance's elements, in three layers: sequentially over a
//! thread's Q elements in registers, across lanes with shuffles (`warp.rs`), and, when an instance
//! spans several warps, across warps through a shared staging buffer (`memory.rs`). Carry scans
//! resolve the threads' carries with ballots (`carry.rs`) instead of shuffling the operator.

use super::{scalar::literal, Emitter, Val};
use bigfuse_core::{Func, Literal, Op, Type, ValueId};

impl Emitter<'_> {
    /// A scan: each thread scans its Q elements, then combines them with the prefix of the threads
    /// before it (ballots for a carry scan, the operator through shuffles and staging otherwise).
    pub(super) fn scan(&mut self, id: ValueId, comment: &str, carry: bool) -> Val {
        let Op::Scan {
            op,
            init,
            exclusive,
            input,
            ..
        } = &self.func.node(id).op
        else {
            unreachable!("scan() is called on scan nodes")
        };
        let (op, exclusive, input) = ((**op).clone(), *exclusive, *input);
        let op = &op;
        let (q, len) = self.array_shape(&self.func.ty(id).clone());
        let types = self.leaf_types(id);
        let init = literal(init);
        self.line(format!("// {comment}"));
        let leaves = self.declare_array(id, q);
        // In kernels with halo lanes: whether lane 0 decides the carry into the warp. An element
        // propagates when its flags say propagate and not generate.
        let halo = if carry {
            let (f, _, _) = self.array_parts(input);
            let f = f[0].clone();
            self.halo_exact(&[input]).map(|exact| {
                self.halo_decides(exact, q, |e| {
                    format!("(({f}[{e}] >> 1) & 1u) != 0u && ({f}[{e}] & 1u) == 0u")
                })
            })
        } else {
            None
        };
        if let Some((_, exact)) = &halo {
            self.exact[id.index()] = Some(exact.clone());
        }
        self.open("{");
        self.line("// this thread's elements, sequentially");
        let acc = self.vars(&types, &init);
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
        let x = self.element(input, "q");
        let dest: Vec<String> = leaves.iter().map(|l| format!("{l}[q]")).collect();
        if exclusive {
            for (d, a) in dest.iter().zip(&acc) {
                self.line(format!("{d} = {a};"));
            }
            self.apply(op, &[acc.clone(), x], &acc);
        } else {
            self.apply(op, &[acc.clone(), x], &acc);
            for (d, a) in dest.iter().zip(&acc) {
                self.line(format!("{d} = {a};"));
            }
        }
        self.close("}");
        if self.sched.threads_per_instance > 1 {
            self.line("// combine with the threads before this one");
            let pre = if carry {
                let flags = if self.sched.block_span() > 32 {
                    self.staging(id, "u32")
                } else {
                    String::new()
                };
                // The thread's aggregate may be 3 (generate and propagate) for all we know.
                vec![match &halo {
                    Some((decided, _)) => self.carry_by_halo(id, &acc[0], decided, false),
                    None => self.carry_in_instance(id, &flags, &acc[0], false),
                }]
            } else {
                let pre = self.thread_prefix(id, op, &init, &types, &acc);
                if self.sched.blocks_per_instance > 1 {
                    self.across_blocks(id, op, &types, &init, &pre, &acc)
                } else {
                    pre
                }
            };
            self.line("#pragma unroll");
            self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
            let cur: Vec<String> = leaves.iter().map(|l| format!("{l}[q]")).collect();
            self.apply(op, &[pre, cur.clone()], &cur);
            self.close("}");
        }
        self.close("}");
        Val::Array { leaves, q, len }
    }

    /// A reduction: each thread folds its real elements, then lanes and warps combine in order;
    /// every thread of the instance ends with the total.
    pub(super) fn reduce(
        &mut self,
        id: ValueId,
        comment: &str,
        op: &Func,
        init: &Literal,
        input: ValueId,
    ) -> Val {
        let (_, q, len) = self.array_parts(input);
        let types = self.leaf_types(id);
        let init = literal(init);
        self.line(format!("// {comment}"));
        let result = self.declare_scalar(id, init.clone());
        self.open("{");
        self.line("#pragma unroll");
        self.open(format!("for (int q = 0; q < {q}; ++q) {{"));
        if self.padded(q, len) {
            self.line(format!("if (t * {q}u + q >= {len}u) continue; // padding"));
        }
        let x = self.element(input, "q");
        self.apply(op, &[result.clone(), x], &result);
        self.close("}");
        let t_count = self.sched.threads_per_instance;
        if self.sched.blocks_per_instance > 1 {
            // Across blocks: the prefix up to and including this thread; the instance's last
            // thread holds the whole reduction (what depends on it is written from there).
            let pre = self.thread_prefix(id, op, &init, &types, &result);
            let pre = self.across_blocks(id, op, &types, &init, &pre, &result);
            let own = self.bind(&types, result.clone());
            self.apply(op, &[pre, own], &result);
        } else if t_count > 1 && t_count <= 32 {
            self.lane_reduce(op, &types, &result, t_count, "t");
        } else if t_count > 32 {
            let w = self.sched.warps_per_instance();
            self.lane_reduce(op, &types, &result, 32, "lane");
            let st = self.staging(id, "u64");
            self.stage_warp_values(&st, &result, 0);
            for (k, (t, v)) in types.iter().zip(&result).enumerate() {
                let val = self.staged_value(&st, t, k, types.len());
                self.line(format!("{v} = lane < {w}u ? {val} : {};", init[k]));
            }
            let width = w.next_power_of_two();
            self.lane_reduce(op, &types, &result, width, "lane");
            for (t, v) in types.iter().zip(&result) {
                let b = self.shfl("idx", t, v, "0", 32);
                self.line(format!("{v} = {b};"));
            }
        }
        self.close("}");
        Val::Scalar(result)
    }

    /// Exclusive prefix, over the threads of this thread's instance, of `agg` (generic operator).
    fn thread_prefix(
        &mut self,
        id: ValueId,
        op: &Func,
        init: &[String],
        types: &[Type],
        agg: &[String],
    ) -> Vec<String> {
        let t_count = self.sched.block_span();
        let x = self.vars(types, agg);
        if t_count <= 32 {
            self.lane_scan(op, types, &x, t_count, "t");
            return self.shifted(types, &x, "up", "1", t_count, "t == 0u", init);
        }
        let w = self.sched.warps_per_instance();
        self.lane_scan(op, types, &x, 32, "lane");
        let st = self.staging(id, "u64");
        self.stage_warp_values(&st, &x, 31);
        let wv: Vec<String> = types
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let v = self.staged_value(&st, t, k, types.len());
                format!("(lane < {w}u ? {v} : {})", init[k])
            })
            .collect();
        let wv = self.vars(types, &wv);
        self.lane_scan(op, types, &wv, w.next_power_of_two(), "lane");
        let wp = self.shifted(
            types,
            &wv,
            "idx",
            "(warp + 31u) & 31u",
            32,
            "warp == 0u",
            init,
        );
        let lp = self.shifted(types, &x, "up", "1", 32, "lane == 0u", init);
        let pre = self.vars(types, init);
        self.apply(op, &[wp, lp], &pre);
        pre
    }
}

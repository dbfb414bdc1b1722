//! Exchanges between the lanes of a warp: shuffles, and the scans and reductions built from them.
//! Everything here stays in registers; crossing warps takes shared memory (`scan.rs`, `carry.rs`).

use super::Emitter;
use bigfuse_core::{Func, Type};

/// Every lane: shuffles and ballots here always involve the whole warp.
pub(super) const FULL: &str = "0xffffffffu";

impl Emitter<'_> {
    /// A warp shuffle of one leaf; `kind` is "up", "xor" or "idx" (read lane `arg`).
    pub(super) fn shfl(&self, kind: &str, t: &Type, x: &str, arg: &str, width: u32) -> String {
        let f = if kind == "idx" {
            "__shfl_sync".to_string()
        } else {
            format!("__shfl_{kind}_sync")
        };
        match t {
            Type::Bool => format!("({f}({FULL}, (int){x}, {arg}, {width}) != 0)"),
            _ => format!("{f}({FULL}, {x}, {arg}, {width})"),
        }
    }

    /// Inclusive scan across the lanes of `width` (a power of two <= 32), in place on `x`.
    pub(super) fn lane_scan(
        &mut self,
        op: &Func,
        types: &[Type],
        x: &[String],
        width: u32,
        lane: &str,
    ) {
        let mut d = 1;
        while d < width {
            let y: Vec<String> = types
                .iter()
                .zip(x)
                .map(|(t, v)| self.shfl("up", t, v, &d.to_string(), width))
                .collect();
            let y = self.bind(types, y);
            self.open(format!("if ({lane} >= {d}u) {{"));
            self.apply(op, &[y, x.to_vec()], x);
            self.close("}");
            d *= 2;
        }
    }

    /// Ordered butterfly reduction across aligned groups of `width` lanes; every lane ends with
    /// its group's total. `pos` is the lane's position in its group.
    pub(super) fn lane_reduce(
        &mut self,
        op: &Func,
        types: &[Type],
        x: &[String],
        width: u32,
        pos: &str,
    ) {
        let mut d = 1;
        while d < width {
            let y: Vec<String> = types
                .iter()
                .zip(x)
                .map(|(t, v)| self.shfl("xor", t, v, &d.to_string(), width))
                .collect();
            let y = self.bind(types, y);
            let upper = self.temp();
            self.line(format!("const bool {upper} = ({pos} & {d}u) != 0u;"));
            let lo: Vec<String> = x
                .iter()
                .zip(&y)
                .map(|(a, b)| format!("({upper} ? {b} : {a})"))
                .collect();
            let hi: Vec<String> = x
                .iter()
                .zip(&y)
                .map(|(a, b)| format!("({upper} ? {a} : {b})"))
                .collect();
            let lo = self.bind(types, lo);
            let hi = self.bind(types, hi);
            self.apply(op, &[lo, hi], x);
            d *= 2;
        }
    }

    /// `x` shuffled (`kind`, `arg`, `width`), with `init` where `first` holds (the lane that has no
    /// predecessor): the exclusive shift of a lane scan.
    // Seven plain inputs (the values; the shuffle's kind, argument and width; the first lane's
    // condition and value): a struct for this one helper would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn shifted(
        &mut self,
        types: &[Type],
        x: &[String],
        kind: &str,
        arg: &str,
        width: u32,
        first: &str,
        init: &[String],
    ) -> Vec<String> {
        let moved: Vec<String> = types
            .iter()
            .zip(x)
            .map(|(t, v)| self.shfl(kind, t, v, arg, width))
            .collect();
        let moved = self.bind(types, moved);
        let sel = moved
            .iter()
            .zip(init)
            .map(|(p, i)| format!("({first} ? {i} : {p})"))
            .collect();
        self.bind(types, sel)
    }
}

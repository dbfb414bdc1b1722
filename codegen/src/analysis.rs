//! Analyses shared by schedule and place: last uses and a register-pressure estimate.

use bigfuse_core::{Func, Op, Type};

/// For each node, the index of the last node that reads it (outputs are read at the end).
pub fn last_uses(func: &Func) -> Vec<usize> {
    let mut last: Vec<usize> = (0..func.nodes.len()).collect();
    for (i, n) in func.nodes.iter().enumerate() {
        for a in n.op.args() {
            last[a.index()] = i;
        }
    }
    for o in &func.outputs {
        last[o.index()] = func.nodes.len();
    }
    last
}

/// 32-bit registers one element of this type takes.
pub fn words(t: &Type) -> u32 {
    t.leaves()
        .iter()
        .map(|l| if *l == Type::U64 { 2 } else { 1 })
        .sum()
}

/// Registers held by a value: arrays hold `q_of(len)` elements per thread.
pub fn value_registers(t: &Type, q_of: &dyn Fn(u64) -> u32) -> u32 {
    match t {
        Type::Array(e, n) => words(e) * q_of(n.as_const().unwrap_or(0)),
        // Big values only exist as parameters after lowering: they stay in global memory.
        Type::Big(_) => 0,
        other => words(other),
    }
}

/// The largest number of registers live at once, counting values that alias others (zip,
/// from_limbs) once, plus a fixed allowance for indices, pointers and temporaries.
pub fn register_estimate(func: &Func, q_of: &dyn Fn(u64) -> u32, mul_width: u32) -> u32 {
    const OVERHEAD: u32 = 24;
    let last = last_uses(func);
    let mut peak = 0;
    for point in 0..func.nodes.len() {
        let mut live = 0;
        for (i, n) in func.nodes.iter().enumerate().take(point + 1) {
            // Array parameters are loaded into registers (big ones are read through limbs).
            let loaded = matches!((&n.op, &n.ty), (Op::Param(_), Type::Array(..)));
            if last[i] < point || (aliases(&n.op) && !loaded) {
                continue;
            }
            live += value_registers(&n.ty, q_of);
        }
        if let Op::LimbMul {
            algo: bigfuse_core::MulAlgo::Ntt,
            ..
        } = func.nodes[point].op
        {
            // a cube of 32 transform elements, its twiddles and butterfly temporaries
            live += 32 + 32 + 16;
        } else if let Op::LimbMul { .. } = func.nodes[point].op {
            // two slices of accumulators, a window of b, a block of a
            live += 2 * (mul_width + 2) + 2 * mul_width - 1 + mul_width;
        }
        peak = peak.max(live);
    }
    peak + OVERHEAD
}

/// Operations whose result is other values' registers under another name.
pub fn aliases(op: &Op) -> bool {
    matches!(
        op,
        Op::Zip(_) | Op::FromLimbs(_) | Op::Tuple(_) | Op::Extract(..) | Op::Param(_)
    )
}

//! Placement: each logical array goes to registers unless another thread reads it; cross-thread
//! steps (the block-level part of a scan or reduction) get short-lived shared staging buffers,
//! which are reused by liveness.

use crate::error::{CgResult, CodegenError};
use crate::mul;
use crate::schedule::Schedule;
use crate::target::Target;
use bigfuse_core::ops;
use bigfuse_core::{Func, Op, Type, ValueId};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// Stays where it is in global memory (big-integer parameters, loaded by `limbs`).
    Global,
    /// Each thread keeps its own `q` elements in registers.
    Registers { q: u32 },
    /// One value per instance, held by every thread of the instance.
    Scalar,
}

/// A shared staging buffer of one scan or reduction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staging {
    pub node: ValueId,
    pub offset: u32,
    pub bytes: u32,
    /// Which buffer (colour) it shares with other staging uses.
    pub buffer: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub places: Vec<Place>,
    pub staging: Vec<Staging>,
    pub shared_bytes: u32,
    pub notes: Vec<String>,
}

impl Placement {
    pub fn staging_of(&self, node: ValueId) -> Option<&Staging> {
        self.staging.iter().find(|s| s.node == node)
    }
}

/// Whether node `id` of `func` is a carry scan, which code generation resolves with warp ballots:
/// an unsegmented scan with identity 2 whose operator is the carry operator on flag words, i.e.
/// - the operator is `(u32, u32) -> u32` and equals [`ops::carry`] on every pair of `{0, 1, 2, 3}`,
/// - the scanned values provably lie in `{0, 1, 2, 3}` (possible bits within `0b11`).
///
/// Then every value the scan computes (inputs, identity, and results of the operator on such
/// values, which [`ops::carry`] keeps in `{0, .., 3}`) lies where the two operators agree, so the
/// scan equals the scan with [`ops::carry`], whatever the operator does elsewhere.
pub fn is_carry_scan(func: &Func, id: ValueId) -> bool {
    let Op::Scan {
        op,
        init,
        input,
        flags: None,
        ..
    } = &func.node(id).op
    else {
        return false;
    };
    if *init != ops::carry_identity() || !is_carry_operator(op) {
        return false;
    }
    let masks = crate::bits::analyse(func, None);
    masks[input.index()].iter().all(|m| m & !0b11 == 0) && masks[input.index()].len() == 1
}

/// True when `op` is `(u32, u32) -> u32` and agrees with [`ops::carry`] on `{0, 1, 2, 3}`^2
/// (decided by evaluating both on the 16 pairs; remembered per operator).
pub fn is_carry_operator(op: &Func) -> bool {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static KNOWN: OnceLock<Mutex<HashMap<Func, bool>>> = OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    if let Some(v) = known.lock().ok().and_then(|k| k.get(op).copied()) {
        return v;
    }
    let v = agrees_with_carry(op);
    if let Ok(mut k) = known.lock() {
        k.insert(op.clone(), v);
    }
    v
}

fn agrees_with_carry(op: &Func) -> bool {
    use bigfuse_core::{apply_lambda, Value};
    let u32_ty = [Type::U32, Type::U32];
    if op.params.len() != 2
        || op.params.iter().zip(&u32_ty).any(|(p, t)| p.ty != *t)
        || op.output_types() != [Type::U32]
    {
        return false;
    }
    let carry = ops::carry();
    (0..4u32).all(|lo| {
        (0..4u32).all(|hi| {
            let args = [Value::U32(lo), Value::U32(hi)];
            match (apply_lambda(op, &args), apply_lambda(&carry, &args)) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            }
        })
    })
}

/// Bytes of staging a cross-warp step needs: one word (u32 for carry flags, u64 per leaf otherwise)
/// per warp of each instance in the block.
fn staging_bytes(func: &Func, id: ValueId, sched: &Schedule) -> Option<u32> {
    let node = func.node(id);
    let slots = sched.instances_per_block * sched.warps_per_instance();
    if let Op::LimbMul {
        a,
        out_len,
        algo: bigfuse_core::MulAlgo::Ntt,
        ..
    } = &node.op
    {
        let Type::Array(_, in_len) = func.ty(*a) else {
            return None;
        };
        let plan = crate::ntt::plan(in_len.as_const()?, out_len.as_const()?).ok()?;
        // Leave room for the other steps' staging (a few words per warp).
        let limit = (sched.shared_limit as u64).saturating_sub(4096);
        let layout = plan.layout(
            sched.instances_per_block as u64,
            sched.warps_per_instance() as u64,
            limit,
        );
        return Some((layout.total * 4) as u32);
    }
    if let Op::LimbMul { a, out_len, .. } = &node.op {
        // Operands always go through shared memory: every output digit reads every input digit.
        let Type::Array(_, in_len) = func.ty(*a) else {
            return None;
        };
        let shape = mul::shape(
            in_len.as_const().unwrap_or(0),
            out_len.as_const().unwrap_or(0),
            sched.threads_per_instance,
        );
        let layout = mul::layout(
            &shape,
            sched.instances_per_block as u64,
            sched.warps_per_instance() as u64,
        );
        return Some((layout.total * 4) as u32);
    }
    if let Op::PolyMul { a, modulus, .. } = &node.op {
        let Type::Array(_, n) = func.ty(*a) else {
            return None;
        };
        let plan = crate::polymul::plan(n.as_const()?, modulus.as_const()?).ok()?;
        return Some((plan.shared_bytes() * sched.instances_per_block as u64) as u32);
    }
    if sched.threads_per_instance <= 32 {
        return None; // warp shuffles and ballots need no shared memory
    }
    match &node.op {
        _ if is_carry_scan(func, id) => Some(slots * 4),
        Op::Scan { init, .. } | Op::Reduce { init, .. } => {
            Some(slots * 8 * init.leaves().len() as u32)
        }
        _ => None,
    }
}

pub fn place(func: &Func, sched: &Schedule, target: &Target) -> CgResult<Placement> {
    let places = func
        .nodes
        .iter()
        .map(|n| match &n.ty {
            Type::Big(_) => Place::Global,
            Type::Array(_, len) => Place::Registers {
                q: sched.q_of(len.as_const().unwrap_or(0)),
            },
            _ => Place::Scalar,
        })
        .collect();

    // Every staging use writes, passes a barrier, then reads. A buffer may take a new occupant once
    // another staging use (and so another barrier) lies between: all threads have finished reading
    // the old occupant by then; products end with a barrier of their own, so the very next use may
    // take theirs. Greedy colouring under that rule.
    struct Buffer {
        bytes: u32,
        last_use: usize,
        /// The last occupant ends with a barrier of its own: the next use may take it at once.
        fenced: bool,
    }
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut uses: Vec<(ValueId, u32, u32)> = Vec::new();
    for id in func.ids() {
        let Some(bytes) = staging_bytes(func, id, sched) else {
            continue;
        };
        let k = uses.len();
        let fenced = matches!(func.node(id).op, Op::LimbMul { .. } | Op::PolyMul { .. });
        let free = buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.last_use + 2 <= k || (b.fenced && b.last_use < k))
            .max_by_key(|(_, b)| b.bytes)
            .map(|(i, _)| i);
        let colour = match free {
            Some(i) => {
                buffers[i].bytes = buffers[i].bytes.max(bytes);
                buffers[i].last_use = k;
                buffers[i].fenced = fenced;
                i
            }
            None => {
                buffers.push(Buffer {
                    bytes,
                    last_use: k,
                    fenced,
                });
                buffers.len() - 1
            }
        };
        uses.push((id, bytes, colour as u32));
    }
    let mut offsets = Vec::new();
    let mut total = 0u32;
    for b in &buffers {
        offsets.push(total);
        total += b.bytes.div_ceil(16) * 16;
    }
    let staging: Vec<Staging> = uses
        .iter()
        .map(|(node, bytes, colour)| Staging {
            node: *node,
            offset: offsets[*colour as usize],
            bytes: *bytes,
            buffer: *colour,
        })
        .collect();
    if total > target.max_shared_per_block {
        return Err(CodegenError::TooBig(format!(
            "`{}` needs {total} bytes of shared staging per block; the limit is {}",
            func.name, target.max_shared_per_block
        )));
    }
    let products = func
        .nodes
        .iter()
        .filter(|n| matches!(n.op, Op::LimbMul { .. }))
        .count();
    let mut notes = vec![format!(
        "all arrays in registers{}; {} staging use(s) in {} shared buffer(s), {} bytes",
        if products > 0 {
            format!(" (the operands of {products} product(s) are also staged in shared memory, which every thread reads)")
        } else {
            " (no array is read by another thread)".to_string()
        },
        staging.len(),
        buffers.len(),
        total
    )];
    if sched.threads_per_instance <= 32 {
        notes.push(
            "cross-thread steps inside one warp: shuffles and ballots, no shared memory".into(),
        );
    }
    Ok(Placement {
        places,
        staging,
        shared_bytes: total,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{BinOp, Builder, Literal, Size};

    /// `((hi | ((hi >> 1) & lo)) & 1) | (lo & hi & 2)`, with its own constants; `tweak` changes the
    /// result on (lo, hi) = (3, 1) only.
    fn user_carry(tweak: bool) -> Func {
        let mut b = Builder::lambda();
        let lo = b.param("lo", Type::U32);
        let hi = b.param("hi", Type::U32);
        let one = b.u32(1);
        let sh = b.binary(BinOp::Shr, hi, one).unwrap();
        let t = b.and(sh, lo).unwrap();
        let g = b.or(hi, t).unwrap();
        let one = b.u32(1);
        let g = b.and(g, one).unwrap();
        let p = b.and(lo, hi).unwrap();
        let two = b.u32(2);
        let p = b.and(p, two).unwrap();
        let mut r = b.or(g, p).unwrap();
        if tweak {
            // + 4 * (lo == 3 && hi == 1)
            let three = b.u32(3);
            let one = b.u32(1);
            let l3 = b.eq(lo, three).unwrap();
            let h1 = b.eq(hi, one).unwrap();
            let both = b.and(l3, h1).unwrap();
            let four = b.u32(4);
            let zero = b.u32(0);
            let extra = b.select(both, four, zero).unwrap();
            r = b.or(r, extra).unwrap();
        }
        b.finish(&[r]).unwrap()
    }

    /// A scan of `mask & x` over a u32 array parameter with the given operator and identity.
    fn program(op: Func, init: u32, mask: u32) -> (Func, ValueId) {
        let mut b = Builder::new("p", &[]);
        let xs = b.param("xs", Type::array(Type::U32, Size::lit(8)));
        let m = b.u32(mask);
        let masked = b.map(
            {
                let mut l = Builder::lambda();
                let x = l.param("x", Type::U32);
                let m = l.param("m", Type::U32);
                let r = l.and(x, m).unwrap();
                l.finish(&[r]).unwrap()
            },
            &[xs, m],
        );
        let masked = masked.unwrap();
        let s = b.scan(op, Literal::U32(init), true, masked, None).unwrap();
        (b.finish(&[s]).unwrap(), s)
    }

    #[test]
    fn carry_scans_are_recognised_by_meaning() {
        let (f, s) = program(ops::carry(), 2, 3);
        assert!(is_carry_scan(&f, s));
        let (f, s) = program(user_carry(false), 2, 3);
        assert_ne!(user_carry(false), ops::carry());
        assert!(is_carry_scan(&f, s), "the user's operator");
        // Inclusive scans too.
        let mut g = f.clone();
        if let Op::Scan { exclusive, .. } = &mut g.nodes[s.index()].op {
            *exclusive = false;
        }
        assert!(is_carry_scan(&g, s));
    }

    #[test]
    fn near_misses_are_refused() {
        let (f, s) = program(user_carry(true), 2, 3);
        assert!(!is_carry_operator(&user_carry(true)));
        assert!(!is_carry_scan(&f, s), "differs on one pair");
        let (f, s) = program(user_carry(false), 2, 7);
        assert!(!is_carry_scan(&f, s), "inputs may have bit 2");
        let (f, s) = program(user_carry(false), 0, 3);
        assert!(!is_carry_scan(&f, s), "identity 0");
        let (f, s) = program(ops::carry(), 1, 3);
        assert!(!is_carry_scan(&f, s), "identity 1");
        // Not a scan at all.
        assert!(!is_carry_scan(&f, ValueId(0)));
    }
}

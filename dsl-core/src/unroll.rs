//! Unrolling: the loops of a specialized program become their rounds, one after another, with the
//! round's index a constant. Loops in loop bodies unroll first. A loop that carries several
//! values gives a tuple; the fields read from it are the rounds' values themselves, so no tuple
//! of big integers or arrays reaches code generation.
//!
//! [`unroll`] unrolls every loop; [`unroll_where`] keeps the loops a caller chooses (codegen keeps
//! long loops of one-thread programs, which it emits as loops).

use crate::builder::Builder;
use crate::error::{IrError, IrResult};
use crate::ir::{Func, Op, ValueId};
use crate::rewrite::{rewrite, same_output, Rewritten};
use crate::types::Type;
use std::collections::HashMap;

/// The most nodes unrolling may produce: past it, the program is refused with a clear error
/// rather than handed to a compiler that would take minutes over it.
pub const MAX_UNROLLED_NODES: usize = 1 << 20;

/// `func` (concrete) with every loop unrolled.
pub fn unroll(func: &Func) -> IrResult<Func> {
    unroll_where(func, &|_, _| false)
}

/// `func` (concrete) with its loops unrolled except those for which `keep(body, rounds)` holds
/// (their bodies' own loops are unrolled or kept by the same rule).
pub fn unroll_where(func: &Func, keep: &dyn Fn(&Func, u64) -> bool) -> IrResult<Func> {
    if !func.nodes.iter().any(|n| matches!(n.op, Op::Loop { .. })) {
        return Ok(func.clone());
    }
    // Loops whose every use reads one field: their rounds' values stand for those fields.
    let mut fields_only = vec![true; func.nodes.len()];
    for n in &func.nodes {
        if !matches!(n.op, Op::Extract(..)) {
            for a in n.op.args() {
                fields_only[a.index()] = false;
            }
        }
    }
    for o in &func.outputs {
        fields_only[o.index()] = false;
    }
    let mut carried: HashMap<ValueId, Vec<ValueId>> = HashMap::new();
    rewrite(
        func,
        Builder::like(func),
        Type::clone,
        |b, m, id, node| {
            Ok::<_, IrError>(match &node.op {
                Op::Loop { count, body, args } => {
                    let body = unroll_where(body, keep)?;
                    let rounds = count.as_const().unwrap_or(0);
                    if keep(&body, rounds) {
                        let op = Op::Loop {
                            count: *count,
                            body: Box::new(body),
                            args: args.clone(),
                        };
                        return Ok(Rewritten::Value(b.copy(&op, &node.ty, |v| m.get(v))?));
                    }
                    let args: Vec<ValueId> = args.iter().map(|a| m.get(*a)).collect();
                    let k = body.outputs.len();
                    let mut state = args.clone();
                    for i in 0..rounds {
                        let index = b.u32(i as u32);
                        let mut inputs = vec![index];
                        inputs.extend(&state);
                        let next = b.inline_all(&body, &inputs)?;
                        state[..k].copy_from_slice(&next);
                        if b.func().nodes.len() > MAX_UNROLLED_NODES {
                            return Err(IrError::Size(format!(
                                "`{}`: a loop of {rounds} rounds unrolls to more than {MAX_UNROLLED_NODES} nodes; make the loop shorter or its body smaller",
                                func.name
                            )));
                        }
                    }
                    state.truncate(k);
                    if k == 1 {
                        Rewritten::Value(state[0])
                    } else if fields_only[id.index()] {
                        carried.insert(id, state);
                        Rewritten::Drop
                    } else {
                        Rewritten::Value(b.tuple(&state)?)
                    }
                }
                Op::Extract(t, i) => match carried.get(t) {
                    Some(vals) => Rewritten::Value(vals[*i as usize]),
                    None => Rewritten::Copy,
                },
                _ => Rewritten::Copy,
            })
        },
        same_output,
    )
}

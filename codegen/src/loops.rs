//! Which loops stay loops. Unrolling makes every round's index a constant (bit tests and shifts
//! by it fold) and lets the CUDA compiler schedule across rounds, but its code grows with the
//! rounds: a 512-bit square-and-multiply over every bit of a 512-bit exponent is half a million
//! limb operations, which NVRTC takes minutes over. A loop of a program that runs one thread per
//! instance ([`crate::per_thread`]) stays a loop when unrolling it would pass [`ROLL_FROM`] limb
//! operations; `emit` writes it as a C `for` over the round's index with the carried values in
//! registers. Everywhere else (values spread over threads, arrays, residues) loops unroll.

use crate::per_thread;
use bigfuse_core::{Func, Op, Type};

/// The limb operations past which a loop of a one-thread program stays a loop. Below it the
/// rounds unroll as before: `pow_bits` (tests/macro_loops.rs) at 256 bits unrolls to about 11,000.
pub const ROLL_FROM: u64 = 1 << 14;

/// 64-bit limbs of `t` when it is a big integer, else 1.
fn limbs(t: &Type) -> u64 {
    match t {
        Type::Big(s) => s.as_const().unwrap_or(64).div_ceil(64),
        _ => 1,
    }
}

/// About how many limb operations one run of `f` performs: products count their column
/// products, divisions and roots (a Newton reciprocal and 2-by-1 steps) ten times that, loops
/// their rounds, other big operations one per limb.
pub fn cost(f: &Func) -> u64 {
    f.nodes
        .iter()
        .map(|n| {
            let widest =
                n.op.args()
                    .iter()
                    .map(|a| limbs(f.ty(*a)))
                    .chain(std::iter::once(limbs(&n.ty)))
                    .max()
                    .unwrap_or(1);
            match &n.op {
                Op::Param(_) | Op::Const(_) | Op::Tuple(_) | Op::Extract(..) => 0,
                Op::BigMul(..) | Op::BigMulWide(..) => widest * widest,
                Op::BigDiv(..) | Op::BigRem(..) | Op::BigIsqrt(..) | Op::BigIsqrtWhole(..) => {
                    10 * widest * widest
                }
                // Two Montgomery products (2.5 products each) per bit of the exponent.
                Op::BigPowMod(_, e, _) => 5 * limbs(f.ty(*e)) * 64 * widest * widest,
                // Into Montgomery form, the operation, out (chains share the conversions).
                Op::BigMod(..) => 3 * 2 * widest * widest,
                // Batches of 31 binary steps, each a few products by a word.
                Op::BigGcd(..) | Op::BigInvMod(..) => 40 * widest * widest,
                Op::Loop { count, body, .. } => {
                    count.as_const().unwrap_or(0).saturating_mul(cost(body))
                }
                op => {
                    let inner: u64 = op.lambdas().iter().map(|l| cost(l)).sum();
                    widest + inner * limbs(&n.ty)
                }
            }
        })
        .fold(0u64, u64::saturating_add)
}

/// The program with its loops unrolled, except those that stay loops: long loops (past
/// [`ROLL_FROM`]) of a program that can run one thread per instance, unless the hint `wanted`
/// says not to run it so.
pub fn unroll(func: &Func, wanted: Option<bool>) -> bigfuse_core::IrResult<Func> {
    let may_roll = wanted != Some(false) && per_thread::eligible(func);
    bigfuse_core::unroll_where(func, &|body, rounds| {
        may_roll && rounds.saturating_mul(cost(body)) > ROLL_FROM
    })
}

/// True when `f` (or a loop inside it) still holds a loop.
pub fn has_loop(f: &Func) -> bool {
    f.any_op(&|op| matches!(op, Op::Loop { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{Builder, Size};

    /// `rounds` rounds of `acc = acc * x` at `bits` bits.
    fn power(bits: u64, rounds: u64) -> Func {
        let big = Type::Big(Size::lit(bits));
        let mut b = Builder::new("p", &[]);
        let x = b.param("x", big.clone());
        let mut body = Builder::loop_body(&b);
        let acc = body.param("acc", big.clone());
        let xx = body.param("x", big);
        let next = body.mul(acc, xx).unwrap();
        let body = body.finish(&[next]).unwrap();
        let r = b.repeat(Size::lit(rounds), body, &[x], &[x]).unwrap();
        b.finish(&[r]).unwrap()
    }

    #[test]
    fn long_loops_of_one_thread_programs_stay_loops() {
        let short = unroll(&power(128, 64), None).unwrap();
        assert!(!has_loop(&short), "64 rounds of a 2-limb product unroll");
        let long = unroll(&power(512, 512), None).unwrap();
        assert!(
            has_loop(&long),
            "512 rounds of an 8-limb product stay a loop"
        );
        let refused = unroll(&power(512, 512), Some(false)).unwrap();
        assert!(
            !has_loop(&refused),
            "no loops without one thread per instance"
        );
    }
}

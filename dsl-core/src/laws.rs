//! Sampling the laws a program claims: every operator of a scan or a reduction is declared
//! associative with its initial value as identity. Backends regroup the operator freely (threads,
//! warps, blocks), so a false claim gives results that depend on the schedule; the CPU backend
//! samples the claim in debug builds on the values of the actual call and reports a counterexample.

use crate::error::{IrError, IrResult};
use crate::eval::{apply_lambda, eval_nodes};
use crate::ir::{Func, Op};
use crate::print::print;
use crate::value::Value;

/// Checks, on values drawn from this call, that each scan and reduction operator of `func` is
/// associative and that its initial value is an identity: up to `samples` triples per operator.
pub fn check_operators(func: &Func, inputs: &[Value], samples: usize) -> IrResult<()> {
    let vals = eval_nodes(func, inputs)?;
    for (i, node) in func.nodes.iter().enumerate() {
        let (op, init, input, what) = match &node.op {
            Op::Scan {
                op, init, input, ..
            } => (op, init, input, "scan"),
            Op::Reduce { op, init, input } => (op, init, input, "reduce"),
            _ => continue,
        };
        let Value::Array(xs) = &vals[input.index()] else {
            continue;
        };
        if xs.is_empty() {
            continue;
        }
        let identity = Value::from_literal(init);
        let f = |a: &Value, b: &Value| apply_lambda(op, &[a.clone(), b.clone()]);
        let report = |law: String| {
            Err(IrError::Law(format!(
                "the {what} operator of `{}` (node %{i}) is used as associative with identity {init}, but {law}. \
                 Scans and reductions regroup their operator across threads, so the result would depend on the schedule. \
                 The operator:\n{}",
                func.name,
                print(op).trim_end()
            )))
        };
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ i as u64);
        let mut pick = |pool: &[Value]| pool[(rng.next() % pool.len() as u64) as usize].clone();
        // Raw elements and a few combined ones (values a scan actually passes to its operator).
        let mut pool: Vec<Value> = xs.iter().take(4 * samples).cloned().collect();
        for _ in 0..samples.min(xs.len()) {
            let (a, b) = (pick(xs), pick(xs));
            pool.push(f(&a, &b)?);
        }
        for x in pool.iter().take(samples) {
            let (l, r) = (f(&identity, x)?, f(x, &identity)?);
            if l != *x || r != *x {
                return report(format!(
                    "op({init}, x) = {} and op(x, {init}) = {} for x = {}",
                    show(&l),
                    show(&r),
                    show(x)
                ));
            }
        }
        for _ in 0..samples {
            let (a, b, c) = (pick(&pool), pick(&pool), pick(&pool));
            let left = f(&f(&a, &b)?, &c)?;
            let right = f(&a, &f(&b, &c)?)?;
            if left != right {
                return report(format!(
                    "op(op(a, b), c) = {} differs from op(a, op(b, c)) = {} for a = {}, b = {}, c = {}",
                    show(&left),
                    show(&right),
                    show(&a),
                    show(&b),
                    show(&c)
                ));
            }
        }
    }
    Ok(())
}

fn show(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::U32(x) => format!("{x}u32"),
        Value::U64(x) => format!("{x}u64"),
        Value::Big(x) => format!("0x{x:x}"),
        Value::Array(xs) | Value::Tuple(xs) => {
            let inner: Vec<String> = xs.iter().map(show).collect();
            format!("({})", inner.join(", "))
        }
    }
}

/// xorshift64*: deterministic, so a reported counterexample is reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::Builder;
    use crate::ir::{BinOp, Literal};
    use crate::types::{Size, Type};

    fn scan_with(op: BinOp, init: u64) -> Func {
        let mut l = Builder::lambda();
        let a = l.param("a", Type::U64);
        let b = l.param("b", Type::U64);
        let r = l.binary(op, a, b).unwrap();
        let f = l.finish(&[r]).unwrap();
        let mut b = Builder::new("s", &[]);
        let xs = b.param("xs", Type::array(Type::U64, Size::lit(16)));
        let s = b.scan(f, Literal::U64(init), false, xs, None).unwrap();
        b.finish(&[s]).unwrap()
    }

    fn input() -> Vec<Value> {
        vec![Value::Array(
            (1..=16u64).map(|x| Value::U64(x * 7919)).collect(),
        )]
    }

    #[test]
    fn associative_operators_pass() {
        check_operators(&scan_with(BinOp::Add, 0), &input(), 64).unwrap();
        check_operators(&scan_with(BinOp::Xor, 0), &input(), 64).unwrap();
        check_operators(&scan_with(BinOp::Mul, 1), &input(), 64).unwrap();
    }

    #[test]
    fn a_non_associative_operator_is_reported_with_a_counterexample() {
        let e = check_operators(&scan_with(BinOp::Sub, 0), &input(), 64).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("op(x, 0u64)") || msg.contains("differs"),
            "{msg}"
        );
        let e = check_operators(&scan_with(BinOp::Add, 1), &input(), 64).unwrap_err();
        assert!(e.to_string().contains("identity 1u64"), "{e}");
    }
}

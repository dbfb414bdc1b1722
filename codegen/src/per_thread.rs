//! One thread per instance: a program over whole small values becomes one element-wise map over
//! arrays of one element, so that `scalarize` computes each instance in one thread with its limbs
//! in registers (carry chains, column products, barrel shifts, compares from the top limb) instead
//! of spreading each value over threads that meet through shared memory and barriers.
//!
//! That pays where the values are small and the program long: a division (a Newton reciprocal
//! and 2-by-1 steps, some hundred operations of a few limbs each) at 64..512 bits runs as
//! straight-line register code; the parallel lowering needs a barrier for nearly every one of those
//! operations. The layout in memory does not change: `[U<n>; 1]` is the n/64 limbs of one `U<n>`,
//! `[u32; 1]` one u32 (see `layout.rs`).

use crate::error::CgResult;
use bigfuse_core::{Builder, Func, Op, Size, Type, ValueId};

/// Programs with a division whose values have at most this many bits run one thread per instance
/// (divisions up to this divisor width with dividends up to twice as wide; products alone: up to
/// [`MAX_PRODUCT_BITS`]). Measured
/// on an H200 (bench/RESULTS.md, 2026-11-25): 1-Mul at 256 / 512 bits 321,485 / 286,154 Gu32ops/s
/// against 56,421 / 237,761 spread over threads, Poly 952,529 / 531,205 against 62,003 / 331,058,
/// division 5-8x; at 1024 bits a division's CUDA takes NVRTC 12-18 s (and column-sum products spilled,
/// before they became whole device functions: 1-Mul 153,510 against 230,321).
pub const MAX_BITS: u64 = 512;

/// Programs whose only heavy operations are products (no division) run one thread per instance
/// up to this width: one thread's products are whole device functions of carry chains
/// (`limb.mul_words`). Measured on an H200 (bench/RESULTS.md 2026-11-26 sixth session): at 1024
/// bits 1-Mul 527 K and Poly 712 K Gu32ops/s against 277 K and 318 K for the classical product
/// on two threads per instance.
pub const MAX_PRODUCT_BITS: u64 = 1024;

/// Programs with at least as many products as big integers they read and write (Poly: four
/// products, three values) run one thread per instance up to this width. Measured on an H200
/// (bench/RESULTS.md 2026-11-26 sixth session): at 2048 bits Poly 384 K Gu32ops/s in one thread
/// (255 registers) against 287 K for the classical product on four threads per instance; a lone
/// product (1-Mul) 204 K against 253 K, so it stays on four threads: one thread's 255 registers
/// leave too few warps to hide its loads.
pub const MAX_DENSE_PRODUCT_BITS: u64 = 2048;

/// True when every value of `func` can live in one thread: big integers and scalars (no arrays
/// or residues), and every operation one a closure may compute, or a loop of such operations.
pub fn eligible(func: &Func) -> bool {
    let value = |t: &Type| matches!(t, Type::Big(_) | Type::Bool | Type::U32 | Type::U64);
    func.params.iter().all(|p| value(&p.ty))
        && func.outputs.iter().all(|o| value(func.ty(*o)))
        && func.nodes.iter().all(|n| {
            n.ty.leaves().iter().all(value)
                && match &n.op {
                    Op::Loop { body, .. } => eligible(body),
                    op => op.is_element_op(),
                }
        })
}

/// The widest big integer `func` computes with (0 when none).
pub fn widest(func: &Func) -> u64 {
    func.nodes
        .iter()
        .flat_map(|n| n.ty.leaves())
        .filter_map(|t| match t {
            Type::Big(s) => s.as_const(),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// The rule of [`crate::compile`]: `before` is the program as the `divide` pass got it, `after`
/// what it made of it. One thread per instance when [`eligible`] accepts `after` and `before`
/// multiplies values of at most [`MAX_PRODUCT_BITS`] (at most [`MAX_DENSE_PRODUCT_BITS`] with
/// as many products as values read and written) or divides (divisors of at most
/// [`MAX_BITS`], values of at most twice that). Additions and bit operations alone keep the
/// parallel lowering, whose accesses to memory are coalesced. `wanted` (a hint) overrides the rule
/// where the program is eligible. A program that kept a loop ([`crate::loops`]) or exponentiates
/// modulo a big integer, computes a gcd or an inverse, or divides whole (`divide` left a
/// `big.div_rem`; one thread computes each: [`bigfuse_core::Op::is_one_thread_op`]) runs so
/// always: no other lowering compiles those. The [`MAX_BITS`] rule for divisions thus applies to
/// the Newton expansion that `divide` makes where it does not divide whole.
pub fn chosen(before: &Func, after: &Func, wanted: Option<bool>) -> bool {
    if crate::loops::has_loop(after) || crate::montgomery::has_one_thread_op(after) {
        return eligible(after);
    }
    eligible(after)
        && wanted.unwrap_or_else(|| {
            let w = widest(before);
            let products = before
                .nodes
                .iter()
                .filter(|n| matches!(n.op, Op::BigMul(..) | Op::BigMulWide(..)))
                .count();
            let product = products > 0;
            let dense = products >= before.params.len() + before.outputs.len();
            let divisor = before
                .nodes
                .iter()
                .filter_map(|n| match n.op {
                    Op::BigDiv(_, d) | Op::BigRem(_, d) => match before.ty(d) {
                        Type::Big(s) => s.as_const(),
                        _ => None,
                    },
                    // A square root divides by roots of half its width.
                    Op::BigIsqrt(a) => match before.ty(a) {
                        Type::Big(s) => s.as_const().map(|b| b / 2),
                        _ => None,
                    },
                    _ => None,
                })
                .max();
            match divisor {
                Some(d) => d <= MAX_BITS && w <= 2 * MAX_BITS,
                None => product && (w <= MAX_PRODUCT_BITS || dense && w <= MAX_DENSE_PRODUCT_BITS),
            }
        })
}

/// `func` as one map over one-element arrays: parameters and results `[T; 1]`.
pub fn per_thread(func: &Func) -> CgResult<Func> {
    let one = Size::lit(1);
    // The body as a lambda over the elements, returning the results (a tuple when several).
    let mut l = Builder::lambda();
    let mut map: Vec<ValueId> = Vec::with_capacity(func.nodes.len());
    let params: Vec<ValueId> = func
        .params
        .iter()
        .map(|p| l.param(&p.name, p.ty.clone()))
        .collect();
    for node in &func.nodes {
        let v = match &node.op {
            Op::Param(k) => params[*k as usize],
            other => l.copy(other, &node.ty, |v| map[v.index()])?,
        };
        map.push(v);
    }
    let results: Vec<ValueId> = func.outputs.iter().map(|o| map[o.index()]).collect();
    let body = if results.len() == 1 {
        l.finish(&results)?
    } else {
        let t = l.tuple(&results)?;
        l.finish(&[t])?
    };
    let mut b = Builder::like(func);
    let args: Vec<ValueId> = func
        .params
        .iter()
        .map(|p| b.param(&p.name, Type::array(p.ty.clone(), one)))
        .collect();
    let all = b.map(body, &args)?;
    let outputs = if results.len() == 1 {
        vec![all]
    } else {
        let mut outs = Vec::with_capacity(results.len());
        for k in 0..results.len() {
            let mut f = Builder::lambda();
            let t = f.param("t", Type::Tuple(func.output_types()));
            let field = f.extract(t, k as u32)?;
            let f = f.finish(&[field])?;
            outs.push(b.map(f, &[all])?);
        }
        outs
    };
    Ok(b.finish(&outputs)?)
}

/// The reference paper's Poly, `(a^2 + b)(b^2 + b) + a b`, on two values (for tests).
#[cfg(test)]
pub(crate) fn poly(b: &mut Builder, x: ValueId, y: ValueId) -> ValueId {
    let a2 = b.mul(x, x).unwrap();
    let b2 = b.mul(y, y).unwrap();
    let l = b.add(a2, y).unwrap();
    let r = b.add(b2, y).unwrap();
    let p = b.mul(l, r).unwrap();
    let ab = b.mul(x, y).unwrap();
    b.add(p, ab).unwrap()
}

/// `f(a, b) = Poly(a, b)` (`poly`) or `a b` over two `bits`-bit values (for tests).
#[cfg(test)]
pub(crate) fn poly_or_product(bits: u64, poly: bool) -> Func {
    let mut b = Builder::new("f", &[]);
    let x = b.param("a", Type::Big(Size::lit(bits)));
    let y = b.param("b", Type::Big(Size::lit(bits)));
    let r = if poly {
        self::poly(&mut b, x, y)
    } else {
        b.mul(x, y).unwrap()
    };
    b.finish(&[r]).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{eval, Value};
    use num_bigint::BigUint;

    /// Products alone: one thread up to 1024 bits; up to 2048 with as many products as values
    /// read and written (Poly), not for a lone product.
    #[test]
    fn products_run_one_thread_up_to_their_widths() {
        let program = poly_or_product;
        for (bits, poly, want) in [
            (1024, false, true),
            (1024, true, true),
            (2048, false, false),
            (2048, true, true),
            (4096, true, false),
        ] {
            let f = program(bits, poly);
            assert_eq!(chosen(&f, &f, None), want, "{bits} bits, poly {poly}");
        }
    }

    #[test]
    fn one_map_over_one_element_means_the_program() {
        let mut b = Builder::new("f", &[]);
        let x = b.param("a", Type::Big(Size::lit(128)));
        let y = b.param("b", Type::Big(Size::lit(128)));
        let k = b.param("k", Type::U32);
        let q = b.div(x, y).unwrap();
        let s = b.shl(x, k).unwrap();
        let c = b.lt(x, y).unwrap();
        let f = b.finish(&[q, s, c]).unwrap();
        let g = crate::divide::divide(&f, None, None).unwrap();
        assert!(eligible(&g) && chosen(&f, &g, None));
        // With the hint against it, the division is expanded for the parallel lowering.
        let parallel = crate::divide::divide(&f, Some(false), None).unwrap();
        assert!(!chosen(&f, &parallel, Some(false)));
        let h = per_thread(&g).unwrap();
        let a = BigUint::from(1u8) << 100u32;
        let d = BigUint::from(12345u32);
        let want = eval(
            &f,
            &[Value::Big(a.clone()), Value::Big(d.clone()), Value::U32(3)],
        )
        .unwrap();
        let one = |v: Value| Value::Array(vec![v]);
        let got = eval(
            &h,
            &[one(Value::Big(a)), one(Value::Big(d)), one(Value::U32(3))],
        )
        .unwrap();
        assert_eq!(got, want.into_iter().map(one).collect::<Vec<_>>());
    }
}

//! Possible bits: for every scalar leaf of every value, a mask of the bits that may be set (a bit
//! outside the mask is zero in every run). Arrays are described by their elements.
//!
//! The analysis over-approximates: an operation it does not model gets every bit of its width.
//! Code generation uses it to prove that a scan only ever sees small flag words (see
//! [`crate::isel::is_carry_scan`]).

use bigfuse_core::{BinOp, Func, Literal, Op, Type, UnOp};

/// One mask per scalar leaf.
pub type Masks = Vec<u64>;

/// Every bit a scalar of this type can hold (a bool is 0 or 1; big integers are described limb-wise
/// elsewhere and count as all ones).
pub fn width_mask(t: &Type) -> u64 {
    match t {
        Type::Bool => 1,
        Type::U32 => u32::MAX as u64,
        _ => u64::MAX,
    }
}

/// No knowledge: every bit of every leaf (of the element, for arrays).
pub fn all_bits(t: &Type) -> Masks {
    match t {
        Type::Big(_) => vec![u64::MAX],
        t => t.leaves().iter().map(width_mask).collect(),
    }
}

fn literal_masks(l: &Literal) -> Masks {
    l.leaves()
        .iter()
        .map(|l| match l {
            Literal::Bool(b) => *b as u64,
            Literal::U32(v) => *v as u64,
            Literal::U64(v) => *v,
            // A residue's Montgomery form may use every bit.
            Literal::Zp(..) | Literal::Big(..) => u64::MAX,
            Literal::Tuple(_) => unreachable!("leaves are scalars"),
        })
        .collect()
}

/// The leaf range of field `i` of a tuple type.
fn field_range(t: &Type, i: u32) -> std::ops::Range<usize> {
    let Type::Tuple(ts) = t else {
        return 0..t.leaf_count();
    };
    let start: usize = ts[..i as usize].iter().map(Type::leaf_count).sum();
    start..start + ts.get(i as usize).map_or(0, Type::leaf_count)
}

/// Possible bits of every node of `func`. For a lambda, `params` gives its parameters' masks; for a
/// program (`params` = None), parameters may hold anything.
pub fn analyse(func: &Func, params: Option<&[Masks]>) -> Vec<Masks> {
    let mut out: Vec<Masks> = Vec::with_capacity(func.nodes.len());
    for node in &func.nodes {
        let ty = &node.ty;
        let full = || all_bits(ty);
        let m = |v: bigfuse_core::ValueId| -> &Masks { &out[v.index()] };
        let w = width_mask(ty);
        let new = match &node.op {
            Op::Param(i) => match params {
                Some(ps) => ps
                    .get(*i as usize)
                    .filter(|p| p.len() == ty.leaf_count())
                    .cloned()
                    .unwrap_or_else(full),
                None => full(),
            },
            Op::Const(l) => literal_masks(l),
            Op::Cast(a) => vec![m(*a).first().copied().unwrap_or(u64::MAX) & w],
            Op::Unary(UnOp::Not, _) => vec![w],
            // Counts of a u64's bits are at most 64.
            Op::Unary(..) => vec![0x7f],
            Op::Binary(op, a, b) if ty.is_scalar() => {
                let (x, y) = (
                    m(*a).first().copied().unwrap_or(u64::MAX),
                    m(*b).first().copied().unwrap_or(u64::MAX),
                );
                let bw = width_mask(func.ty(*a));
                let shift_const = || match &func.node(*b).op {
                    Op::Const(Literal::U32(k)) => Some(*k as u64),
                    Op::Const(Literal::U64(k)) => Some(*k),
                    _ => None,
                };
                let bits = bw.count_ones() as u64;
                vec![match op {
                    _ if op.is_comparison() => 1,
                    BinOp::And => x & y,
                    BinOp::Or | BinOp::Xor => x | y,
                    BinOp::Shl => match shift_const() {
                        Some(k) => (x << (k % bits)) & bw,
                        None => w,
                    },
                    BinOp::Shr => match shift_const() {
                        Some(k) => x >> (k % bits),
                        None => w,
                    },
                    _ => w,
                }]
            }
            Op::Select(_, a, b) => m(*a).iter().zip(m(*b)).map(|(x, y)| x | y).collect(),
            Op::Tuple(xs) | Op::Zip(xs) => xs.iter().flat_map(|x| m(*x).clone()).collect(),
            Op::Extract(t, i) => {
                let r = field_range(func.ty(*t), *i);
                m(*t).get(r).map_or_else(full, <[u64]>::to_vec)
            }
            Op::Map { f, args } => {
                let arg_masks: Vec<Masks> = args.iter().map(|a| m(*a).clone()).collect();
                let inner = analyse(f, Some(&arg_masks));
                inner[f.outputs[0].index()].clone()
            }
            _ => full(),
        };
        // Never claim more leaves (or bits) than the type has.
        let new = if new.len() == ty.leaf_count() || matches!(ty, Type::Big(_)) {
            new
        } else {
            full()
        };
        let new = new.iter().zip(all_bits(ty)).map(|(m, w)| m & w).collect();
        out.push(new);
    }
    out
}

/// Possible bits of a lambda's result, given its parameters' masks.
pub fn lambda_output(f: &Func, params: &[Masks]) -> Masks {
    analyse(f, Some(params))[f.outputs[0].index()].clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::{Builder, Size};

    #[test]
    fn flag_words_have_two_possible_bits() {
        let f = bigfuse_core::ops::Intrinsic::LimbPartial { sub: false }
            .func()
            .clone();
        assert_eq!(
            lambda_output(&f, &[vec![u64::MAX], vec![u64::MAX]]),
            vec![u64::MAX, 3]
        );
        let mut b = Builder::lambda();
        let x = b.param("x", Type::U32);
        let one = b.u32(1);
        let two = b.u32(2);
        let s = b.binary(BinOp::Shl, x, two).unwrap();
        let lo = b.binary(BinOp::And, x, one).unwrap();
        let r = b.binary(BinOp::Or, s, lo).unwrap();
        let f = b.finish(&[r]).unwrap();
        assert_eq!(lambda_output(&f, &[vec![3]]), vec![0b1101]);
        // x << 2 clears bits 0 and 1; x & 1 sets bit 0 at most.
        assert_eq!(
            lambda_output(&f, &[vec![u32::MAX as u64]]),
            vec![u32::MAX as u64 - 2]
        );
    }

    #[test]
    fn program_values_follow_their_maps() {
        let mut b = Builder::new("p", &[]);
        let t = Type::array(Type::U64, Size::lit(4));
        let a = b.param("a", t.clone());
        let c = b.param("c", t);
        let partial = b
            .map(
                bigfuse_core::ops::Intrinsic::LimbPartial { sub: false }
                    .func()
                    .clone(),
                &[a, c],
            )
            .unwrap();
        let z = b.zip(&[a, partial]).unwrap();
        let f = b.finish(&[z]).unwrap();
        let m = analyse(&f, None);
        assert_eq!(m[a.index()], vec![u64::MAX]);
        assert_eq!(m[partial.index()], vec![u64::MAX, 3]);
        assert_eq!(m[z.index()], vec![u64::MAX, u64::MAX, 3]);
    }
}

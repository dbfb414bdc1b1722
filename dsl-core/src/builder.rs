//! Building IR with type inference. The `#[bigfuse::kernel]` macro expands to calls of this builder;
//! passes use it too, so every node they make is type-checked when it is made.

use crate::error::{IrError, IrResult};
use crate::ir::{BinOp, CmpOp, Func, Literal, Node, Op, Param, ShiftOp, UnOp, ValueId};
use crate::typeck::{check_cast, infer};
use crate::types::{Size, Type};
use crate::validate::validate;

pub struct Builder {
    func: Func,
}

impl Builder {
    /// A kernel program with the given size parameters (e.g. `["BITS"]`).
    pub fn new(name: &str, size_params: &[&str]) -> Builder {
        Builder {
            func: Func {
                name: name.to_string(),
                size_params: size_params.iter().map(|s| s.to_string()).collect(),
                params: vec![],
                nodes: vec![],
                outputs: vec![],
            },
        }
    }

    /// An empty function with the name and size parameters of `like` (for passes that rebuild one).
    pub fn like(like: &Func) -> Builder {
        Builder {
            func: Func {
                name: like.name.clone(),
                size_params: like.size_params.clone(),
                params: vec![],
                nodes: vec![],
                outputs: vec![],
            },
        }
    }

    /// An operator (lambda) over scalars and tuples.
    pub fn lambda() -> Builder {
        Builder::new("op", &[])
    }

    /// The body of a loop in `outer` (see [`Op::Loop`]): a program over `outer`'s sizes whose first
    /// parameter is the round's index, a u32.
    pub fn loop_body(outer: &Builder) -> Builder {
        let mut b = Builder::new("op", &[]);
        b.func.size_params = outer.func.size_params.clone();
        b.param("i", Type::U32);
        b
    }

    /// `count` rounds of `body` (from [`Builder::loop_body`]) carrying `carried` (as many as the
    /// body returns) and reading `captured` in every round.
    pub fn repeat(
        &mut self,
        count: Size,
        body: Func,
        carried: &[ValueId],
        captured: &[ValueId],
    ) -> IrResult<ValueId> {
        let args = carried.iter().chain(captured).copied().collect();
        self.push(Op::Loop {
            count,
            body: Box::new(body),
            args,
        })
    }

    /// The function built so far (for inspecting types while building).
    pub fn func(&self) -> &Func {
        &self.func
    }

    pub fn ty(&self, v: ValueId) -> &Type {
        self.func.ty(v)
    }

    fn err(&self, message: String) -> IrError {
        IrError::Type {
            func: self.func.name.clone(),
            message,
        }
    }

    /// Adds a node whose type the operation determines.
    pub fn push(&mut self, op: Op) -> IrResult<ValueId> {
        let ty = infer(&self.func, &op)?;
        Ok(self.push_typed(op, ty))
    }

    fn push_typed(&mut self, op: Op, ty: Type) -> ValueId {
        let id = ValueId(self.func.nodes.len() as u32);
        self.func.nodes.push(Node { op, ty });
        id
    }

    /// Checks that `v` has type `ty`: the kernel macro states the type it derived for each value it
    /// builds, so that its own type checker (which must run at compile time, with the user's
    /// spans) and this IR's can never silently disagree.
    pub fn expect_type(&self, v: ValueId, ty: &Type) -> IrResult<()> {
        let actual = self.ty(v);
        if actual == ty {
            Ok(())
        } else {
            Err(self.err(format!(
                "internal error: the kernel macro typed {v} as {ty}, the IR as {actual} (please report this)"
            )))
        }
    }

    /// Copies the nodes of lambda `f` here, with `args` for its parameters; returns the value of its
    /// (single) output. Passes that compose or unfold operators (map fusion, segmented scans,
    /// delayed reductions) use it.
    pub fn inline(&mut self, f: &Func, args: &[ValueId]) -> IrResult<ValueId> {
        Ok(self.inline_all(f, args)?[0])
    }

    /// Copies the nodes of `f` here, with `args` for its parameters; returns the values of all its
    /// outputs (loop unrolling inlines a body once per round).
    pub fn inline_all(&mut self, f: &Func, args: &[ValueId]) -> IrResult<Vec<ValueId>> {
        let mut map: Vec<ValueId> = Vec::with_capacity(f.nodes.len());
        for node in &f.nodes {
            let new = match &node.op {
                Op::Param(i) => args[*i as usize],
                other => self.copy(other, &node.ty, |v| map[v.index()])?,
            };
            map.push(new);
        }
        Ok(f.outputs.iter().map(|o| map[o.index()]).collect())
    }

    /// A node of another function (of type `ty`) copied here, its arguments renamed by `remap`.
    /// Passes that rebuild a function use it for every node they leave as it is.
    pub fn copy(
        &mut self,
        op: &Op,
        ty: &Type,
        remap: impl FnMut(ValueId) -> ValueId,
    ) -> IrResult<ValueId> {
        let mut op = op.clone();
        op.map_args(remap);
        match op {
            // A cast's target type is its node's, not something its operation implies.
            Op::Cast(a) => self.cast(a, ty.clone()),
            op => self.push(op),
        }
    }

    pub fn param(&mut self, name: &str, ty: Type) -> ValueId {
        let index = self.func.params.len() as u32;
        self.func.params.push(Param {
            name: name.to_string(),
            ty: ty.clone(),
        });
        self.push_typed(Op::Param(index), ty)
    }

    pub fn constant(&mut self, lit: Literal) -> ValueId {
        let ty = lit.ty();
        self.push_typed(Op::Const(lit), ty)
    }

    pub fn u32(&mut self, v: u32) -> ValueId {
        self.constant(Literal::U32(v))
    }

    pub fn u64(&mut self, v: u64) -> ValueId {
        self.constant(Literal::U64(v))
    }

    pub fn bool(&mut self, v: bool) -> ValueId {
        self.constant(Literal::Bool(v))
    }

    pub fn binary(&mut self, op: BinOp, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.push(Op::Binary(op, a, b))
    }

    fn is_big(&self, v: ValueId) -> bool {
        matches!(self.ty(v), Type::Big(_))
    }

    /// `a + b`: wrapping, for big integers and integer scalars alike.
    pub fn add(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) || self.is_big(b) {
            self.push(Op::BigAdd(a, b))
        } else {
            self.binary(BinOp::Add, a, b)
        }
    }

    /// `a - b`: wrapping, for big integers and integer scalars alike.
    pub fn sub(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) || self.is_big(b) {
            self.push(Op::BigSub(a, b))
        } else {
            self.binary(BinOp::Sub, a, b)
        }
    }

    /// `a * b`: the product modulo 2^bits for big integers; the low word for integer scalars.
    pub fn mul(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) || self.is_big(b) {
            self.push(Op::BigMul(a, b))
        } else {
            self.binary(BinOp::Mul, a, b)
        }
    }

    /// The full product of two `U<n>`: a `U<2n>`.
    pub fn mul_wide(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.push(Op::BigMulWide(a, b))
    }

    /// `a / b`, rounded down; `x / 0` is all ones. Big integers may differ in width (the
    /// quotient has the dividend's); integer scalars must be of one type.
    pub fn div(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) || self.is_big(b) {
            self.push(Op::BigDiv(a, b))
        } else {
            self.binary(BinOp::Div, a, b)
        }
    }

    /// The square root of a big integer, rounded down.
    pub fn isqrt(&mut self, a: ValueId) -> IrResult<ValueId> {
        self.push(Op::BigIsqrt(a))
    }

    /// `gcd(a, b)` (see [`Op::BigGcd`]).
    pub fn gcd(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.push(Op::BigGcd(a, b))
    }

    /// `(a^-1 mod m, exists)` (see [`Op::BigInvMod`]).
    pub fn inv_mod(&mut self, a: ValueId, m: ValueId) -> IrResult<ValueId> {
        self.push(Op::BigInvMod(a, m))
    }

    /// `x^e mod m` (see [`Op::BigPowMod`]).
    pub fn pow_mod(&mut self, x: ValueId, e: ValueId, m: ValueId) -> IrResult<ValueId> {
        self.push(Op::BigPowMod(x, e, m))
    }

    /// `(a op b) mod m` for `op` one of `Add`, `Sub`, `Mul` (see [`Op::BigMod`]).
    pub fn big_mod(&mut self, op: BinOp, a: ValueId, b: ValueId, m: ValueId) -> IrResult<ValueId> {
        self.push(Op::BigMod(op, a, b, m))
    }

    /// `a % b`; `x % 0` is `x` (for big integers, modulo 2^width of the divisor's type, which
    /// the remainder has).
    pub fn rem(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) || self.is_big(b) {
            self.push(Op::BigRem(a, b))
        } else {
            self.binary(BinOp::Rem, a, b)
        }
    }

    /// The product of two limb arrays as `out_len` limbs, computed with `algo`.
    pub fn limb_mul(
        &mut self,
        a: ValueId,
        b: ValueId,
        out_len: Size,
        algo: crate::ir::MulAlgo,
    ) -> IrResult<ValueId> {
        self.push(Op::LimbMul {
            a,
            b,
            out_len,
            algo,
        })
    }

    fn compare(&mut self, op: CmpOp, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) || self.is_big(b) {
            self.push(Op::BigCmp(op, a, b))
        } else {
            let bin = match op {
                CmpOp::Lt => BinOp::Lt,
                CmpOp::Le => BinOp::Le,
                CmpOp::Eq => BinOp::Eq,
            };
            self.binary(bin, a, b)
        }
    }

    pub fn lt(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.compare(CmpOp::Lt, a, b)
    }

    pub fn le(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.compare(CmpOp::Le, a, b)
    }

    pub fn gt(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.compare(CmpOp::Lt, b, a)
    }

    pub fn ge(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.compare(CmpOp::Le, b, a)
    }

    pub fn eq(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.compare(CmpOp::Eq, a, b)
    }

    pub fn ne(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) || self.is_big(b) {
            let e = self.compare(CmpOp::Eq, a, b)?;
            self.not(e)
        } else {
            self.binary(BinOp::Ne, a, b)
        }
    }

    fn bitwise(&mut self, op: BinOp, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) || self.is_big(b) {
            self.push(Op::BigBitwise(op, a, b))
        } else {
            self.binary(op, a, b)
        }
    }

    /// `a & b` on bools, integers and big integers.
    pub fn and(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.bitwise(BinOp::And, a, b)
    }

    /// `a | b` on bools, integers and big integers.
    pub fn or(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.bitwise(BinOp::Or, a, b)
    }

    /// `a ^ b` on bools, integers and big integers.
    pub fn xor(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.bitwise(BinOp::Xor, a, b)
    }

    /// A shift or rotation by `k`. On a big integer `k` is a u32 (a u64 amount is narrowed,
    /// saturating, so that huge amounts still shift everything out); shifts by `bits` or more
    /// give 0 and rotations take `k` modulo `bits`. On an integer the amount is taken modulo its
    /// width, as in the IR's `shl`/`shr`.
    pub fn shift(&mut self, op: ShiftOp, a: ValueId, k: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) {
            let k = self.amount_u32(k)?;
            return self.push(Op::BigShift(op, a, k));
        }
        let t = self.ty(a).clone();
        let k = if *self.ty(k) == t {
            k
        } else {
            self.cast(k, t.clone())?
        };
        let width = match t {
            Type::U32 => 32,
            _ => 64,
        };
        match op {
            ShiftOp::Shl => self.binary(BinOp::Shl, a, k),
            ShiftOp::Shr => self.binary(BinOp::Shr, a, k),
            ShiftOp::Rotl | ShiftOp::Rotr => {
                // The IR's shifts take amounts modulo the width, so w - k needs no masking.
                let w = self.int(&t, width)?;
                let back = self.binary(BinOp::Sub, w, k)?;
                let (l, r) = if op == ShiftOp::Rotl {
                    (k, back)
                } else {
                    (back, k)
                };
                let hi = self.binary(BinOp::Shl, a, l)?;
                let lo = self.binary(BinOp::Shr, a, r)?;
                // A zero amount shifts `a` by the width, i.e. by 0 modulo the width: `a | a`.
                self.binary(BinOp::Or, hi, lo)
            }
        }
    }

    fn int(&mut self, t: &Type, v: u64) -> IrResult<ValueId> {
        Ok(match t {
            Type::U32 => self.u32(v as u32),
            _ => self.u64(v),
        })
    }

    /// A shift amount or bit index as u32: u64 amounts saturate (all of them are past any width).
    fn amount_u32(&mut self, k: ValueId) -> IrResult<ValueId> {
        match self.ty(k) {
            Type::U64 => {
                let max = self.u64(u32::MAX as u64);
                let big = self.binary(BinOp::Lt, max, k)?;
                let low = self.cast(k, Type::U32)?;
                let sat = self.u32(u32::MAX);
                self.select(big, sat, low)
            }
            _ => Ok(k),
        }
    }

    /// `a << k`: see [`Builder::shift`].
    pub fn shl(&mut self, a: ValueId, k: ValueId) -> IrResult<ValueId> {
        self.shift(ShiftOp::Shl, a, k)
    }

    /// `a >> k`: see [`Builder::shift`].
    pub fn shr(&mut self, a: ValueId, k: ValueId) -> IrResult<ValueId> {
        self.shift(ShiftOp::Shr, a, k)
    }

    /// A bit count (leading zeros, trailing zeros, ones) of an integer or big integer, as u32;
    /// the width for 0 where zeros are counted. `Not` is [`Builder::not`].
    pub fn count(&mut self, op: UnOp, a: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) {
            self.push(Op::BigUnary(op, a))
        } else {
            self.push(Op::Unary(op, a))
        }
    }

    /// Bit `i` of `a` (an integer or big integer) as a bool; false past the width.
    pub fn bit(&mut self, a: ValueId, i: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) {
            let i = self.amount_u32(i)?;
            return self.push(Op::BigBit(a, i));
        }
        let t = self.ty(a).clone();
        let width = if t == Type::U32 { 32 } else { 64 };
        let i = if *self.ty(i) == t {
            i
        } else {
            self.cast(i, t.clone())?
        };
        let w = self.int(&t, width)?;
        let inside = self.binary(BinOp::Lt, i, w)?;
        let shifted = self.binary(BinOp::Shr, a, i)?;
        let one = self.int(&t, 1)?;
        let low = self.binary(BinOp::And, shifted, one)?;
        let zero = self.int(&t, 0)?;
        let set = self.binary(BinOp::Ne, low, zero)?;
        self.binary(BinOp::And, inside, set)
    }

    /// The big integer of type `ty` (a `U<..>`) whose low `len` bits are set (all of them when
    /// `len >= bits`).
    pub fn mask(&mut self, ty: &Type, len: ValueId) -> IrResult<ValueId> {
        let Type::Big(bits) = ty else {
            return Err(IrError::Type {
                func: self.func.name.clone(),
                message: format!("a mask is a U<..>, not {ty}"),
            });
        };
        // One zero limb: the text form reads a zero back that way, so programs round-trip exactly.
        let zero = self.constant(Literal::Big(vec![0], *bits));
        let ones = self.not(zero)?;
        let high = self.shl(ones, len)?;
        self.not(high)
    }

    /// Bits `lo .. lo + len` of the big integer `a`, at the bottom of a value of its width.
    pub fn extract_bits(&mut self, a: ValueId, lo: ValueId, len: ValueId) -> IrResult<ValueId> {
        let t = self.ty(a).clone();
        let down = self.shr(a, lo)?;
        let m = self.mask(&t, len)?;
        self.and(down, m)
    }

    /// `a` with bits `lo .. lo + len` replaced by the low `len` bits of `field` (both big integers
    /// of one width); bits past the width are dropped.
    pub fn insert_bits(
        &mut self,
        a: ValueId,
        field: ValueId,
        lo: ValueId,
        len: ValueId,
    ) -> IrResult<ValueId> {
        let t = self.ty(a).clone();
        let m = self.mask(&t, len)?;
        let hole = self.shl(m, lo)?;
        let keep = self.not(hole)?;
        let kept = self.and(a, keep)?;
        let f = self.and(field, m)?;
        let f = self.shl(f, lo)?;
        self.or(kept, f)
    }

    /// `src[idx[k]]` for each k (0 past the end) over `[u64; n]` and `[u64; m]` indices.
    pub fn gather(&mut self, src: ValueId, idx: ValueId) -> IrResult<ValueId> {
        self.push(Op::Gather { src, idx })
    }

    /// `x^e` for `x: Zp<P>`, `e: u64`.
    pub fn zp_pow(&mut self, x: ValueId, e: ValueId) -> IrResult<ValueId> {
        self.push(Op::ZpPow(x, e))
    }

    /// The inverse of `x: Zp<P>` (0 maps to 0).
    pub fn zp_inv(&mut self, x: ValueId) -> IrResult<ValueId> {
        self.push(Op::ZpInv(x))
    }

    /// The product of two polynomials over `Zp<P>` (arrays of N coefficients): 2N coefficients.
    pub fn poly_mul(&mut self, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        let modulus = match self.ty(a) {
            Type::Array(e, _) => match &**e {
                Type::Zp(m) => *m,
                _ => Size::lit(0),
            },
            _ => Size::lit(0),
        };
        self.push(Op::PolyMul { a, b, modulus })
    }

    /// `!a`: logical on bools, bitwise on integers and big integers.
    pub fn not(&mut self, a: ValueId) -> IrResult<ValueId> {
        if self.is_big(a) {
            self.push(Op::BigUnary(UnOp::Not, a))
        } else {
            self.push(Op::Unary(UnOp::Not, a))
        }
    }

    pub fn select(&mut self, c: ValueId, a: ValueId, b: ValueId) -> IrResult<ValueId> {
        self.push(Op::Select(c, a, b))
    }

    pub fn cast(&mut self, a: ValueId, to: Type) -> IrResult<ValueId> {
        check_cast(&self.func, self.ty(a), &to)?;
        Ok(self.push_typed(Op::Cast(a), to))
    }

    pub fn tuple(&mut self, xs: &[ValueId]) -> IrResult<ValueId> {
        self.push(Op::Tuple(xs.to_vec()))
    }

    pub fn extract(&mut self, t: ValueId, i: u32) -> IrResult<ValueId> {
        self.push(Op::Extract(t, i))
    }

    pub fn limbs(&mut self, a: ValueId) -> IrResult<ValueId> {
        self.push(Op::Limbs(a))
    }

    pub fn from_limbs(&mut self, a: ValueId) -> IrResult<ValueId> {
        self.push(Op::FromLimbs(a))
    }

    pub fn iota(&mut self, n: Size) -> IrResult<ValueId> {
        self.push(Op::Iota(n))
    }

    pub fn map(&mut self, f: Func, args: &[ValueId]) -> IrResult<ValueId> {
        self.push(Op::Map {
            f: Box::new(f),
            args: args.to_vec(),
        })
    }

    pub fn zip(&mut self, xs: &[ValueId]) -> IrResult<ValueId> {
        self.push(Op::Zip(xs.to_vec()))
    }

    pub fn scan(
        &mut self,
        op: Func,
        init: Literal,
        exclusive: bool,
        input: ValueId,
        flags: Option<ValueId>,
    ) -> IrResult<ValueId> {
        self.push(Op::Scan {
            op: Box::new(op),
            init,
            exclusive,
            input,
            flags,
        })
    }

    pub fn reduce(&mut self, op: Func, init: Literal, input: ValueId) -> IrResult<ValueId> {
        self.push(Op::Reduce {
            op: Box::new(op),
            init,
            input,
        })
    }

    /// Finishes with the given outputs and validates the whole function.
    pub fn finish(mut self, outputs: &[ValueId]) -> IrResult<Func> {
        for o in outputs {
            if o.index() >= self.func.nodes.len() {
                return Err(self.err(format!("output {o} does not exist")));
            }
        }
        self.func.outputs = outputs.to_vec();
        validate(&self.func)?;
        Ok(self.func)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::eval;
    use crate::value::Value;

    #[test]
    fn a_type_the_macro_states_is_checked() {
        let mut b = Builder::new("f", &[]);
        let x = b.param("x", Type::U32);
        assert!(b.expect_type(x, &Type::U32).is_ok());
        let e = b.expect_type(x, &Type::U64).unwrap_err().to_string();
        assert!(e.contains("typed %0 as u64, the IR as u32"), "{e}");
    }

    #[test]
    fn inlining_a_lambda_computes_what_applying_it_does() {
        // carry(lo, hi) inlined twice: carry(carry(x, y), z).
        let carry = crate::ops::carry();
        let mut b = Builder::new("f", &[]);
        let x = b.param("x", Type::U32);
        let y = b.param("y", Type::U32);
        let z = b.param("z", Type::U32);
        let xy = b.inline(&carry, &[x, y]).unwrap();
        let r = b.inline(&carry, &[xy, z]).unwrap();
        let f = b.finish(&[r]).unwrap();
        for (x, y, z) in [(1, 2, 2), (1, 2, 0), (0, 1, 2), (2, 2, 2)] {
            let got = eval(&f, &[Value::U32(x), Value::U32(y), Value::U32(z)]).unwrap();
            let apply = |a: u32, b: u32| {
                crate::eval::apply_lambda(&carry, &[Value::U32(a), Value::U32(b)]).unwrap()
            };
            let Value::U32(xy) = apply(x, y) else {
                panic!("u32")
            };
            assert_eq!(got, vec![apply(xy, z)], "({x}, {y}, {z})");
        }
    }
}

//! Types of IR values. Sizes may be symbolic (`U<BITS>`) until a call specializes them.

use std::fmt;

/// A length or bit width: `factor * sizes[param]`, or the constant `factor` when `param` is None.
///
/// Symbolic sizes let one program serve every BITS; `specialize` turns them into constants so that
/// code generation sees only fixed lengths (loops unroll, register arrays stay registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Size {
    pub factor: u64,
    pub param: Option<u32>,
}

impl Size {
    pub const fn lit(n: u64) -> Size {
        Size {
            factor: n,
            param: None,
        }
    }

    pub const fn param(index: u32) -> Size {
        Size {
            factor: 1,
            param: Some(index),
        }
    }

    pub const fn scaled(factor: u64, index: u32) -> Size {
        Size {
            factor,
            param: Some(index),
        }
    }

    /// The constant, if this size no longer depends on a size parameter.
    pub fn as_const(&self) -> Option<u64> {
        match self.param {
            None => Some(self.factor),
            Some(_) => None,
        }
    }

    /// Substitutes the size parameters; `None` when a parameter is missing or the product overflows.
    pub fn eval(&self, sizes: &[u64]) -> Option<u64> {
        match self.param {
            None => Some(self.factor),
            Some(p) => sizes
                .get(p as usize)
                .and_then(|v| v.checked_mul(self.factor)),
        }
    }

    /// Prints with the names of the size parameters, e.g. `BITS` or `2*BITS`.
    pub fn display<'a>(&'a self, names: &'a [String]) -> impl fmt::Display + 'a {
        SizeDisplay { size: self, names }
    }
}

struct SizeDisplay<'a> {
    size: &'a Size,
    names: &'a [String],
}

impl fmt::Display for SizeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.size.param {
            None => write!(f, "{}", self.size.factor),
            Some(p) => {
                let fallback = format!("S{p}");
                let name = self.names.get(p as usize).unwrap_or(&fallback);
                if self.size.factor == 1 {
                    write!(f, "{name}")
                } else {
                    write!(f, "{}*{name}", self.size.factor)
                }
            }
        }
    }
}

/// The types of IR values.
///
/// A kernel program runs over one instance; the batch is an implicit outer map. `Big` values are
/// unsigned integers of a fixed bit width (arithmetic wraps modulo 2^bits); lowering turns them into
/// `Array(U64, bits/64)` of little-endian limbs. Arrays of tuples are kept as tuples of arrays
/// (structure of arrays) by code generation, so `Zip` and `Extract` cost nothing there.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Bool,
    U32,
    U64,
    Big(Size),
    /// An integer modulo a prime P < 2^64 (`Zp<P>`); the modulus is a size, chosen per call like
    /// BITS, so every kernel is specialized to one prime. Lowering turns it into a u64 holding the
    /// Montgomery form.
    Zp(Size),
    Array(Box<Type>, Size),
    Tuple(Vec<Type>),
}

impl Type {
    pub fn array(elem: Type, len: Size) -> Type {
        Type::Array(Box::new(elem), len)
    }

    /// Bool, u32, u64 or `Zp<P>`: one register.
    pub fn is_scalar(&self) -> bool {
        matches!(self, Type::Bool | Type::U32 | Type::U64 | Type::Zp(_))
    }

    pub fn is_zp(&self) -> bool {
        matches!(self, Type::Zp(_))
    }

    /// True when a `Zp<P>` occurs anywhere in the type (lowering removes them all).
    pub fn mentions_zp(&self) -> bool {
        match self {
            Type::Zp(_) => true,
            Type::Array(e, _) => e.mentions_zp(),
            Type::Tuple(ts) => ts.iter().any(Type::mentions_zp),
            _ => false,
        }
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, Type::U32 | Type::U64)
    }

    /// A scalar or a (nested) tuple of scalars: what an array element or a lambda value may be.
    pub fn is_element(&self) -> bool {
        match self {
            // Big integers are elements of arrays and closure values before lowering, which
            // turns them into tuples of limbs there.
            Type::Bool | Type::U32 | Type::U64 | Type::Zp(_) | Type::Big(_) => true,
            Type::Tuple(ts) => ts.iter().all(Type::is_element),
            _ => false,
        }
    }

    /// Scalars and tuples of scalars, flattened left to right: the registers that hold a value.
    pub fn leaves(&self) -> Vec<Type> {
        let mut out = Vec::new();
        self.collect_leaves(&mut out);
        out
    }

    fn collect_leaves(&self, out: &mut Vec<Type>) {
        match self {
            Type::Tuple(ts) => ts.iter().for_each(|t| t.collect_leaves(out)),
            Type::Array(elem, _) => elem.collect_leaves(out),
            other => out.push(other.clone()),
        }
    }

    /// Number of leaves, i.e. `leaves().len()` without allocating.
    pub fn leaf_count(&self) -> usize {
        match self {
            Type::Tuple(ts) => ts.iter().map(Type::leaf_count).sum(),
            Type::Array(elem, _) => elem.leaf_count(),
            _ => 1,
        }
    }

    /// The leaves of field `i` of a tuple type, as a range of [`Type::leaves`].
    pub fn field_leaves(&self, i: u32) -> std::ops::Range<usize> {
        let Type::Tuple(ts) = self else {
            panic!("field {i} of {self:?}, which is not a tuple")
        };
        let start: usize = ts[..i as usize].iter().map(Type::leaf_count).sum();
        start..start + ts[i as usize].leaf_count()
    }

    /// True when every size in the type is a constant.
    pub fn is_concrete(&self) -> bool {
        match self {
            Type::Big(s) | Type::Zp(s) => s.param.is_none(),
            Type::Array(e, s) => s.param.is_none() && e.is_concrete(),
            Type::Tuple(ts) => ts.iter().all(Type::is_concrete),
            _ => true,
        }
    }

    /// Replaces symbolic sizes by their values.
    pub fn specialize(&self, sizes: &[u64]) -> Option<Type> {
        Some(match self {
            Type::Big(s) => Type::Big(Size::lit(s.eval(sizes)?)),
            Type::Zp(s) => Type::Zp(Size::lit(s.eval(sizes)?)),
            Type::Array(e, s) => Type::array(e.specialize(sizes)?, Size::lit(s.eval(sizes)?)),
            Type::Tuple(ts) => Type::Tuple(
                ts.iter()
                    .map(|t| t.specialize(sizes))
                    .collect::<Option<Vec<_>>>()?,
            ),
            other => other.clone(),
        })
    }

    /// Prints with the names of the size parameters.
    pub fn display<'a>(&'a self, names: &'a [String]) -> impl fmt::Display + 'a {
        TypeDisplay { ty: self, names }
    }
}

struct TypeDisplay<'a> {
    ty: &'a Type,
    names: &'a [String],
}

impl fmt::Display for TypeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ty {
            Type::Bool => write!(f, "bool"),
            Type::U32 => write!(f, "u32"),
            Type::U64 => write!(f, "u64"),
            Type::Big(s) => write!(f, "U<{}>", s.display(self.names)),
            Type::Zp(s) => write!(f, "Zp<{}>", s.display(self.names)),
            Type::Array(e, s) => {
                write!(f, "[{}; {}]", e.display(self.names), s.display(self.names))
            }
            Type::Tuple(ts) => {
                write!(f, "(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", t.display(self.names))?;
                }
                if ts.len() == 1 {
                    write!(f, ",")?;
                }
                write!(f, ")")
            }
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.display(&[]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_substitute_and_print() {
        let names = vec!["BITS".to_string()];
        let s = Size::scaled(2, 0);
        assert_eq!(s.eval(&[256]), Some(512));
        assert_eq!(s.eval(&[]), None);
        assert_eq!(Size::lit(7).eval(&[]), Some(7));
        assert_eq!(format!("{}", s.display(&names)), "2*BITS");
        let t = Type::array(Type::Tuple(vec![Type::U64, Type::U32]), Size::param(0));
        assert_eq!(format!("{}", t.display(&names)), "[(u64, u32); BITS]");
        assert_eq!(t.leaves(), vec![Type::U64, Type::U32]);
        assert!(!t.is_concrete());
        assert!(t.specialize(&[4]).unwrap().is_concrete());
    }

    #[test]
    fn overflowing_size_is_refused() {
        assert_eq!(Size::scaled(u64::MAX, 0).eval(&[2]), None);
    }
}

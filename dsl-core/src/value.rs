//! Values of the evaluator.

use crate::ir::Literal;
use crate::types::Type;
use num_bigint::BigUint;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    Bool(bool),
    U32(u32),
    U64(u64),
    Big(BigUint),
    Array(Vec<Value>),
    Tuple(Vec<Value>),
}

impl Value {
    pub fn from_literal(l: &Literal) -> Value {
        match l {
            Literal::Bool(b) => Value::Bool(*b),
            Literal::U32(v) => Value::U32(*v),
            Literal::U64(v) | Literal::Zp(v, _) => Value::U64(*v),
            Literal::Big(limbs, _) => Value::Big(crate::eval::limbs_to_big(limbs)),
            Literal::Tuple(ls) => Value::Tuple(ls.iter().map(Value::from_literal).collect()),
        }
    }

    /// True when the value inhabits the (concrete) type; big values must fit their width.
    pub fn has_type(&self, ty: &Type) -> bool {
        match (self, ty) {
            (Value::Bool(_), Type::Bool)
            | (Value::U32(_), Type::U32)
            | (Value::U64(_), Type::U64) => true,
            // Residues are held reduced.
            (Value::U64(v), Type::Zp(p)) => p.as_const().is_some_and(|p| *v < p),
            (Value::Big(v), Type::Big(s)) => s.as_const().is_some_and(|bits| v.bits() <= bits),
            (Value::Array(vs), Type::Array(e, n)) => {
                n.as_const() == Some(vs.len() as u64) && vs.iter().all(|v| v.has_type(e))
            }
            (Value::Tuple(vs), Type::Tuple(ts)) => {
                vs.len() == ts.len() && vs.iter().zip(ts).all(|(v, t)| v.has_type(t))
            }
            _ => false,
        }
    }

    /// The integer held by a scalar (bools are 0/1).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Bool(b) => Some(*b as u64),
            Value::U32(v) => Some(*v as u64),
            Value::U64(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_big(&self) -> Option<&BigUint> {
        match self {
            Value::Big(v) => Some(v),
            _ => None,
        }
    }
}

impl From<BigUint> for Value {
    fn from(v: BigUint) -> Value {
        Value::Big(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::U32(v)
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::U64(v)
    }
}

//! Batches: one column of values per kernel argument or result, converted to and from the flat
//! 64-bit words the GPU kernels read (instance `i` of a column of W words per instance occupies
//! words `[i*W, (i+1)*W)`; big integers as little-endian limbs).

use crate::error::{Error, Result};
use bigfuse_core::{Type, Value};
use num_bigint::BigUint;
use rayon::prelude::*;

/// The values of one argument for a whole batch, borrowed from the caller.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    Big(&'a [BigUint]),
    Bool(&'a [bool]),
    U32(&'a [u32]),
    U64(&'a [u64]),
}

impl Arg<'_> {
    pub fn len(&self) -> usize {
        match self {
            Arg::Big(v) => v.len(),
            Arg::Bool(v) => v.len(),
            Arg::U32(v) => v.len(),
            Arg::U64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn kind(&self) -> &'static str {
        match self {
            Arg::Big(_) => "BigUint",
            Arg::Bool(_) => "bool",
            Arg::U32(_) => "u32",
            Arg::U64(_) => "u64",
        }
    }

    /// Whether this column can feed a parameter of type `ty` (an array parameter takes the
    /// elements of all instances, flat: instance `i` is elements `[i*N, (i+1)*N)`).
    fn matches(&self, ty: &Type) -> bool {
        let elem = match ty {
            Type::Array(e, _) => &**e,
            t => t,
        };
        matches!(
            (self, elem),
            (Arg::Big(_), Type::Big(_))
                | (Arg::Bool(_), Type::Bool)
                | (Arg::U32(_), Type::U32)
                | (Arg::U64(_), Type::U64 | Type::Zp(_))
        )
    }

    fn scalar(&self, i: usize) -> Value {
        match self {
            Arg::Big(v) => Value::Big(v[i].clone()),
            Arg::Bool(v) => Value::Bool(v[i]),
            Arg::U32(v) => Value::U32(v[i]),
            Arg::U64(v) => Value::U64(v[i]),
        }
    }

    /// The evaluator's value of instance `i` of a parameter of type `ty`.
    pub fn value_of(&self, ty: &Type, i: usize) -> Value {
        match ty {
            Type::Array(_, n) => {
                let n = n.as_const().unwrap_or(0) as usize;
                Value::Array((i * n..(i + 1) * n).map(|k| self.scalar(k)).collect())
            }
            _ => self.scalar(i),
        }
    }

    /// The evaluator's value of instance `i` of a scalar or big-integer parameter.
    pub fn value(&self, i: usize) -> Value {
        self.scalar(i)
    }
}

impl<'a> From<&'a [BigUint]> for Arg<'a> {
    fn from(v: &'a [BigUint]) -> Self {
        Arg::Big(v)
    }
}
impl<'a> From<&'a Vec<BigUint>> for Arg<'a> {
    fn from(v: &'a Vec<BigUint>) -> Self {
        Arg::Big(v)
    }
}
impl<'a> From<&'a [bool]> for Arg<'a> {
    fn from(v: &'a [bool]) -> Self {
        Arg::Bool(v)
    }
}
impl<'a> From<&'a [u32]> for Arg<'a> {
    fn from(v: &'a [u32]) -> Self {
        Arg::U32(v)
    }
}
impl<'a> From<&'a [u64]> for Arg<'a> {
    fn from(v: &'a [u64]) -> Self {
        Arg::U64(v)
    }
}

/// The values of one result for a whole batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    Big(Vec<BigUint>),
    Bool(Vec<bool>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::Big(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::U64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Collects evaluator values of one type into a column (arrays flattened, instance-major).
    pub fn from_values(ty: &Type, values: Vec<Value>) -> Result<Column> {
        if let Type::Array(elem, _) = ty {
            let mut flat = Vec::new();
            for v in values {
                match v {
                    Value::Array(xs) => flat.extend(xs),
                    _ => {
                        return Err(Error::Argument {
                            kernel: String::new(),
                            message: format!("internal: a result of type {ty} held another type"),
                        })
                    }
                }
            }
            return Column::from_values(elem, flat);
        }
        let bad = || Error::Argument {
            kernel: String::new(),
            message: format!("internal: a result of type {ty} held another type"),
        };
        Ok(match ty {
            Type::Big(_) => Column::Big(
                values
                    .into_iter()
                    .map(|v| match v {
                        Value::Big(b) => Ok(b),
                        _ => Err(bad()),
                    })
                    .collect::<Result<_>>()?,
            ),
            Type::Bool => Column::Bool(
                values
                    .iter()
                    .map(|v| v.as_bool().ok_or_else(bad))
                    .collect::<Result<_>>()?,
            ),
            Type::U32 => Column::U32(
                values
                    .iter()
                    .map(|v| v.as_u64().map(|x| x as u32).ok_or_else(bad))
                    .collect::<Result<_>>()?,
            ),
            Type::U64 | Type::Zp(_) => Column::U64(
                values
                    .iter()
                    .map(|v| v.as_u64().ok_or_else(bad))
                    .collect::<Result<_>>()?,
            ),
            other => {
                return Err(Error::Argument {
                    kernel: String::new(),
                    message: format!("results of type {other} are not supported"),
                })
            }
        })
    }

    /// Reads a column of `n` instances from the kernel's flat words.
    pub fn from_words(ty: &Type, words: &[u64], n: usize) -> Column {
        if let Type::Array(elem, len) = ty {
            let len = len.as_const().unwrap_or(0) as usize;
            return Column::from_words(elem, words, n * len);
        }
        match ty {
            Type::Big(s) => {
                let m = (s.as_const().unwrap_or(0) / 64) as usize;
                Column::Big(
                    words[..n * m]
                        .par_chunks(m.max(1))
                        .map(big_from_limbs)
                        .collect(),
                )
            }
            Type::Bool => Column::Bool(words[..n].iter().map(|w| *w != 0).collect()),
            Type::U32 => Column::U32(words[..n].iter().map(|w| *w as u32).collect()),
            _ => Column::U64(words[..n].to_vec()),
        }
    }
}

/// The big integer with these little-endian 64-bit limbs.
pub fn big_from_limbs(limbs: &[u64]) -> BigUint {
    let mut digits = Vec::with_capacity(limbs.len() * 2);
    for w in limbs {
        digits.push(*w as u32);
        digits.push((*w >> 32) as u32);
    }
    BigUint::new(digits)
}

/// Checks that the arguments match the parameters (count, kinds, equal lengths, widths) and
/// returns the batch size.
pub fn check_args(kernel: &str, params: &[(String, Type)], args: &[Arg]) -> Result<usize> {
    if params.len() != args.len() {
        return Err(Error::Argument {
            kernel: kernel.into(),
            message: format!(
                "it takes {} argument(s), {} were given",
                params.len(),
                args.len()
            ),
        });
    }
    for ((name, ty), a) in params.iter().zip(args) {
        if !a.matches(ty) {
            return Err(Error::Argument {
                kernel: kernel.into(),
                message: format!("`{name}` is {ty}, but a column of {} was given", a.kind()),
            });
        }
    }
    // Instances in each column: an array parameter's column holds N values per instance.
    let mut counts = Vec::with_capacity(args.len());
    for ((name, ty), a) in params.iter().zip(args) {
        let per = match ty {
            Type::Array(_, len) => len.as_const().unwrap_or(0) as usize,
            _ => 1,
        };
        if per == 0 || a.len() % per != 0 {
            return Err(Error::Argument {
                kernel: kernel.into(),
                message: format!(
                    "`{name}` is {ty}, so its column holds {per} values per instance (flat, instance after instance), but it has {} values",
                    a.len()
                ),
            });
        }
        counts.push(a.len() / per);
    }
    let n = counts.first().copied().unwrap_or(0);
    for ((name, _), c) in params.iter().zip(&counts).skip(1) {
        if *c != n {
            return Err(Error::BatchMismatch {
                first: params[0].0.clone(),
                first_len: n,
                other: name.clone(),
                other_len: *c,
            });
        }
    }
    for ((name, ty), a) in params.iter().zip(args) {
        let modulus = match ty {
            Type::Zp(p) => p.as_const(),
            Type::Array(e, _) => match &**e {
                Type::Zp(p) => p.as_const(),
                _ => None,
            },
            _ => None,
        };
        if let (Some(p), Arg::U64(values)) = (modulus, a) {
            if let Some((index, v)) = values.par_iter().enumerate().find_first(|(_, v)| **v >= p) {
                return Err(Error::Argument {
                    kernel: kernel.into(),
                    message: format!(
                        "`{name}` is {ty}, but value {index} is {v}, not below the modulus {p}: pass residues (reduce with `% p` first)"
                    ),
                });
            }
        }
    }
    for ((name, ty), a) in params.iter().zip(args) {
        let elem = match ty {
            Type::Array(e, _) => &**e,
            t => t,
        };
        if let (Arg::Big(values), Type::Big(s)) = (a, elem) {
            let max = s.as_const().unwrap_or(0);
            if let Some((index, v)) = values
                .par_iter()
                .enumerate()
                .find_first(|(_, v)| v.bits() > max)
            {
                return Err(Error::ValueTooWide {
                    param: name.clone(),
                    index,
                    bits: v.bits(),
                    max,
                });
            }
        }
    }
    Ok(n)
}

/// Words per value of a column feeding a parameter of type `ty`: a big integer's limbs (also
/// for an array of them, whose column holds its elements), else one.
pub fn words_per_value(ty: &Type) -> usize {
    match ty {
        Type::Big(s) => (s.as_const().unwrap_or(0) / 64) as usize,
        Type::Array(e, _) => words_per_value(e),
        _ => 1,
    }
}

/// The flat words of one (already checked) argument: `words` per value (see [`words_per_value`]).
pub fn to_words(arg: &Arg, words: usize) -> Vec<u64> {
    match arg {
        Arg::Big(values) => {
            let mut out = vec![0u64; values.len() * words];
            if words > 0 {
                out.par_chunks_mut(words)
                    .zip(values.par_iter())
                    .for_each(|(dst, v)| {
                        for (d, s) in dst.iter_mut().zip(v.iter_u64_digits()) {
                            *d = s;
                        }
                    });
            }
            out
        }
        Arg::Bool(v) => v.iter().map(|b| *b as u64).collect(),
        Arg::U32(v) => v.iter().map(|x| *x as u64).collect(),
        Arg::U64(v) => v.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::Size;

    #[test]
    fn limbs_round_trip() {
        let v = (BigUint::from(1u8) << 190u32) + BigUint::from(u64::MAX);
        let words = to_words(&Arg::Big(std::slice::from_ref(&v)), 3);
        assert_eq!(words, vec![u64::MAX, 0, 1 << 62]);
        assert_eq!(big_from_limbs(&words), v);
        let col = Column::from_words(&Type::Big(Size::lit(192)), &words, 1);
        assert_eq!(col, Column::Big(vec![v]));
    }

    #[test]
    fn arguments_are_checked() {
        let ty = Type::Big(Size::lit(64));
        let params = vec![("a".to_string(), ty.clone()), ("b".to_string(), ty)];
        let one = vec![BigUint::from(1u8)];
        let two = vec![BigUint::from(1u8), BigUint::from(2u8)];
        let wide = vec![BigUint::from(1u8) << 64u32];
        assert!(matches!(
            check_args("k", &params, &[Arg::Big(&one), Arg::Big(&two)]),
            Err(Error::BatchMismatch { .. })
        ));
        assert!(matches!(
            check_args("k", &params, &[Arg::Big(&one), Arg::Big(&wide)]),
            Err(Error::ValueTooWide {
                bits: 65,
                max: 64,
                index: 0,
                ..
            })
        ));
        assert!(matches!(
            check_args("k", &params, &[Arg::Big(&one)]),
            Err(Error::Argument { .. })
        ));
        assert!(matches!(
            check_args("k", &params, &[Arg::Big(&one), Arg::U64(&[1])]),
            Err(Error::Argument { .. })
        ));
        assert_eq!(
            check_args("k", &params, &[Arg::Big(&one), Arg::Big(&one)]).unwrap(),
            1
        );
    }
}

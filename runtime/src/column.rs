//! The data of a call: what the caller passes ([`Arg`]: big integers, little-endian 64-bit limbs,
//! plain values, or a [`Batch`] already on the device), where results go ([`Out`]), owned result
//! columns ([`Column`]), and the conversions between them and the kernels' byte layout
//! ([`bigfuse_codegen::layout`]).

// The conversions to and from the kernels' byte layout feed the GPU's staging buffers only; a
// build without the GPU backend keeps them (and their tests) rather than gating each one.
#![cfg_attr(not(feature = "cuda"), allow(dead_code))]

use crate::batch::Batch;
use crate::error::{Error, Result};
use bigfuse_codegen::{layout_of, BufferLayout};
use bigfuse_core::{Type, Value};
use num_bigint::BigUint;
use rayon::prelude::*;

/// The values of one argument for a whole batch, borrowed from the caller.
///
/// A parameter `U<BITS>` takes big integers or their little-endian 64-bit limbs (`BITS / 64`
/// words per value, value after value); an array parameter `[T; N]` takes the elements of all
/// instances, flat (instance `i` is elements `[i*N, (i+1)*N)`); any parameter takes a [`Batch`]
/// of its type on the same device.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    /// Big integers, one per value (each must fit its parameter's width).
    Big(&'a [BigUint]),
    /// `bool` values.
    Bool(&'a [bool]),
    /// `u32` values.
    U32(&'a [u32]),
    /// `u64` values, residues of `Zp<P>`, or the limbs of big integers.
    U64(&'a [u64]),
    /// Values already on the call's device (used in place, no transfer).
    Batch(&'a Batch),
}

impl Arg<'_> {
    /// Values given (limbs count one each; a batch counts its instances).
    pub fn len(&self) -> usize {
        match self {
            Arg::Big(v) => v.len(),
            Arg::Bool(v) => v.len(),
            Arg::U32(v) => v.len(),
            Arg::U64(v) => v.len(),
            Arg::Batch(b) => b.len(),
        }
    }

    /// Whether no value is given.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn kind(&self) -> String {
        match self {
            Arg::Big(_) => "BigUint".into(),
            Arg::Bool(_) => "bool".into(),
            Arg::U32(_) => "u32".into(),
            Arg::U64(_) => "u64".into(),
            Arg::Batch(b) => format!("a batch of {}", b.ty()),
        }
    }

    /// The evaluator's value of instance `i` of a parameter of type `ty` (checked arguments).
    pub fn value_of(&self, ty: &Type, i: usize) -> Value {
        if let Arg::Batch(b) = self {
            return b.host_value(i);
        }
        match ty {
            Type::Array(e, n) => {
                let n = n.as_const().unwrap_or(0) as usize;
                Value::Array((i * n..(i + 1) * n).map(|k| self.scalar(e, k)).collect())
            }
            t => self.scalar(t, i),
        }
    }

    /// The evaluator's value of instance `i` of a scalar or big-integer parameter.
    pub fn value(&self, i: usize) -> Value {
        match self {
            Arg::Big(v) => Value::Big(v[i].clone()),
            Arg::Bool(v) => Value::Bool(v[i]),
            Arg::U32(v) => Value::U32(v[i]),
            Arg::U64(v) => Value::U64(v[i]),
            Arg::Batch(b) => b.host_value(i),
        }
    }

    /// Value `k` (flat) as an element of type `elem`.
    fn scalar(&self, elem: &Type, k: usize) -> Value {
        match (self, elem) {
            (Arg::U64(v), Type::Big(s)) => {
                let m = (s.as_const().unwrap_or(0) / 64) as usize;
                Value::Big(big_from_limbs(&v[k * m..(k + 1) * m]))
            }
            _ => self.value(k),
        }
    }
}

/// Where the values of one result go, borrowed from the caller: the vector is resized to the
/// batch's values (its allocation, and the big integers' allocations, are reused).
#[derive(Debug)]
pub enum Out<'a> {
    /// Big integers (arrays of them flat, instance after instance).
    Big(&'a mut Vec<BigUint>),
    /// `bool` results.
    Bool(&'a mut Vec<bool>),
    /// `u32` results.
    U32(&'a mut Vec<u32>),
    /// `u64` values, residues, or the limbs of big integers (`BITS / 64` per value).
    U64(&'a mut Vec<u64>),
}

impl Out<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Out::Big(_) => "BigUint",
            Out::Bool(_) => "bool",
            Out::U32(_) => "u32",
            Out::U64(_) => "u64",
        }
    }

    /// Empties the destination (after a failed call: no stale values are left behind).
    pub(crate) fn clear(&mut self) {
        match self {
            Out::Big(v) => v.clear(),
            Out::Bool(v) => v.clear(),
            Out::U32(v) => v.clear(),
            Out::U64(v) => v.clear(),
        }
    }
}

/// Which Rust values a kind of parameter takes: the marker types of [`IntoArg`] and [`IntoOut`].
pub mod kind {
    /// `U<BITS>` (and arrays of it): big integers or their limbs.
    pub struct Big;
    /// `u64` and `Zp<P>` (residues).
    pub struct U64;
    /// `u32`.
    pub struct U32;
    /// `bool`.
    pub struct Bool;
}

/// What a generated `run` accepts for a parameter of kind `K` (see [`kind`]): slices, vectors and
/// arrays of the values, limbs for big integers, or a [`Batch`].
pub trait IntoArg<'a, K> {
    /// The argument, borrowing the values.
    fn into_arg(self) -> Arg<'a>;
}

/// Where a generated `run_into` may put a result of kind `K`.
pub trait IntoOut<'a, K> {
    /// The destination, borrowing the vector.
    fn into_out(self) -> Out<'a>;
}

macro_rules! host_args {
    ($kind:ty, $elem:ty, $variant:ident) => {
        impl<'a> IntoArg<'a, $kind> for &'a [$elem] {
            fn into_arg(self) -> Arg<'a> {
                Arg::$variant(self)
            }
        }
        impl<'a> IntoArg<'a, $kind> for &'a Vec<$elem> {
            fn into_arg(self) -> Arg<'a> {
                Arg::$variant(self)
            }
        }
        impl<'a, const N: usize> IntoArg<'a, $kind> for &'a [$elem; N] {
            fn into_arg(self) -> Arg<'a> {
                Arg::$variant(self)
            }
        }
        impl<'a> IntoOut<'a, $kind> for &'a mut Vec<$elem> {
            fn into_out(self) -> Out<'a> {
                Out::$variant(self)
            }
        }
    };
}

host_args!(kind::Big, BigUint, Big);
host_args!(kind::Big, u64, U64);
host_args!(kind::U64, u64, U64);
host_args!(kind::U32, u32, U32);
host_args!(kind::Bool, bool, Bool);

impl<'a, K> IntoArg<'a, K> for &'a Batch {
    fn into_arg(self) -> Arg<'a> {
        Arg::Batch(self)
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
impl<'a> From<&'a Vec<u64>> for Arg<'a> {
    fn from(v: &'a Vec<u64>) -> Self {
        Arg::U64(v)
    }
}
impl<'a> From<&'a Batch> for Arg<'a> {
    fn from(b: &'a Batch) -> Self {
        Arg::Batch(b)
    }
}

/// The values of one result for a whole batch, owned: what [`Kernel::run`](crate::Kernel::run)
/// returns when the caller has no vectors of its own to fill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    /// Big integers (arrays of them flat, instance after instance).
    Big(Vec<BigUint>),
    /// `bool` values.
    Bool(Vec<bool>),
    /// `u32` values.
    U32(Vec<u32>),
    /// `u64` values or residues.
    U64(Vec<u64>),
}

impl Column {
    /// Values held (an array result counts each element).
    pub fn len(&self) -> usize {
        match self {
            Column::Big(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::U64(v) => v.len(),
        }
    }

    /// Whether the column holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An empty column for results of type `ty` (big integers as `BigUint`).
    pub fn empty(ty: &Type) -> Column {
        match Elem::of(ty) {
            Elem::Big(_) => Column::Big(Vec::new()),
            Elem::Bool => Column::Bool(Vec::new()),
            Elem::U32 => Column::U32(Vec::new()),
            Elem::U64 | Elem::Zp(_) => Column::U64(Vec::new()),
        }
    }

    /// The column as a destination for results.
    pub fn as_out(&mut self) -> Out<'_> {
        match self {
            Column::Big(v) => Out::Big(v),
            Column::Bool(v) => Out::Bool(v),
            Column::U32(v) => Out::U32(v),
            Column::U64(v) => Out::U64(v),
        }
    }

    /// Borrows the column as an argument.
    pub fn as_arg(&self) -> Arg<'_> {
        match self {
            Column::Big(v) => Arg::Big(v),
            Column::Bool(v) => Arg::Bool(v),
            Column::U32(v) => Arg::U32(v),
            Column::U64(v) => Arg::U64(v),
        }
    }

    /// Collects evaluator values of one type into a column (arrays flattened, instance-major).
    pub fn from_values(ty: &Type, values: Vec<Value>) -> Result<Column> {
        let bad = || Error::Argument {
            kernel: String::new(),
            message: format!("internal: a result of type {ty} held another type"),
        };
        if let Type::Array(elem, _) = ty {
            let mut flat = Vec::new();
            for v in values {
                match v {
                    Value::Array(xs) => flat.extend(xs),
                    _ => return Err(bad()),
                }
            }
            return Column::from_values(elem, flat);
        }
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

    /// Moves or converts the column into `out` (a result of type `ty`, `n` instances).
    pub(crate) fn write_to(self, ty: &Type, out: &mut Out) -> Result<()> {
        let mismatch = |got: &str| Error::Argument {
            kernel: String::new(),
            message: format!(
                "a result of type {ty} cannot be written into a vector of {got}; pass {}",
                Elem::of(ty).out_kinds()
            ),
        };
        match (self, out) {
            (Column::Big(v), Out::Big(o)) => **o = v,
            (Column::Big(v), Out::U64(o)) => {
                let Elem::Big(m) = Elem::of(ty) else {
                    return Err(mismatch("u64"));
                };
                o.clear();
                resize_par(o, v.len() * m, 0);
                o.par_chunks_mut(m.max(1))
                    .zip(v.par_iter())
                    .for_each(|(d, x)| {
                        for (d, s) in d.iter_mut().zip(x.iter_u64_digits()) {
                            *d = s;
                        }
                    });
            }
            (Column::Bool(v), Out::Bool(o)) => **o = v,
            (Column::U32(v), Out::U32(o)) => **o = v,
            (Column::U64(v), Out::U64(o)) => **o = v,
            (_, o) => return Err(mismatch(o.kind())),
        }
        Ok(())
    }
}

/// The big integer with these little-endian 64-bit limbs.
pub fn big_from_limbs(limbs: &[u64]) -> BigUint {
    let mut b = BigUint::default();
    assign_limbs(&mut b, limbs);
    b
}

/// Sets `b` to the value of these little-endian limbs, reusing its allocation.
fn assign_limbs(b: &mut BigUint, limbs: &[u64]) {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: on a little-endian machine a u64 is its two u32 halves, low half first, and a
        // u64 slice is suitably aligned for u32.
        let digits =
            unsafe { std::slice::from_raw_parts(limbs.as_ptr() as *const u32, limbs.len() * 2) };
        b.assign_from_slice(digits);
    }
    #[cfg(not(target_endian = "little"))]
    {
        let digits: Vec<u32> = limbs
            .iter()
            .flat_map(|w| [*w as u32, (*w >> 32) as u32])
            .collect();
        b.assign_from_slice(&digits);
    }
}

/// The element of a parameter or result: what one value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    /// A big integer of this many 64-bit limbs.
    Big(usize),
    U64,
    Zp(u64),
    U32,
    Bool,
}

impl Elem {
    pub(crate) fn of(ty: &Type) -> Elem {
        match ty {
            Type::Array(e, _) => Elem::of(e),
            Type::Big(s) => Elem::Big((s.as_const().unwrap_or(0) / 64) as usize),
            Type::Zp(p) => Elem::Zp(p.as_const().unwrap_or(0)),
            Type::U32 => Elem::U32,
            Type::Bool => Elem::Bool,
            _ => Elem::U64,
        }
    }

    /// What an argument of this element may be.
    fn arg_kinds(self) -> &'static str {
        match self {
            Elem::Big(_) => "BigUint values or their u64 limbs",
            Elem::U64 => "u64 values",
            Elem::Zp(_) => "u64 residues",
            Elem::U32 => "u32 values",
            Elem::Bool => "bool values",
        }
    }

    fn out_kinds(self) -> &'static str {
        match self {
            Elem::Big(_) => "a Vec<BigUint> or a Vec<u64> for the limbs",
            Elem::U64 | Elem::Zp(_) => "a Vec<u64>",
            Elem::U32 => "a Vec<u32>",
            Elem::Bool => "a Vec<bool>",
        }
    }

    /// Host words (or values) per element: limbs for big integers, else one.
    fn units(self) -> usize {
        match self {
            Elem::Big(m) => m,
            _ => 1,
        }
    }
}

/// A parameter or result of a specialized program: its type, layout and host shape, which the
/// runtime converts values through.
#[derive(Clone, Debug)]
pub struct Slot {
    /// The parameter's name (`result K` for results).
    pub name: String,
    /// Its type, sizes constant.
    pub ty: Type,
    /// How one instance lies in the kernels' buffers.
    pub layout: BufferLayout,
    pub(crate) elem: Elem,
    /// Values per instance: N for an array `[T; N]`, else 1.
    pub(crate) per: usize,
}

impl Slot {
    /// The slot of a value of type `ty` (sizes constant) called `name` in errors.
    pub fn new(name: &str, ty: &Type) -> Result<Slot> {
        let per = match ty {
            Type::Array(_, n) => n.as_const().unwrap_or(0) as usize,
            _ => 1,
        };
        Ok(Slot {
            name: name.to_string(),
            ty: ty.clone(),
            layout: layout_of(name, ty)?,
            elem: Elem::of(ty),
            per,
        })
    }

    /// Bytes per instance in the kernel's layout.
    pub fn bytes(&self) -> usize {
        self.layout.bytes() as usize
    }

    /// The instances in `arg` for this parameter, after checking its kind and shape (values are
    /// checked as they are converted).
    pub(crate) fn instances(&self, kernel: &str, arg: &Arg) -> Result<usize> {
        let bad = |message: String| Error::Argument {
            kernel: kernel.into(),
            message,
        };
        let name = &self.name;
        let ty = &self.ty;
        let values = match (arg, self.elem) {
            (Arg::Batch(b), _) => {
                if b.ty() != ty {
                    return Err(bad(format!(
                        "`{name}` is {ty}, but a batch of {} was given",
                        b.ty()
                    )));
                }
                return Ok(b.len());
            }
            (Arg::Big(v), Elem::Big(_)) => v.len(),
            (Arg::U64(v), Elem::Big(m)) => {
                if m == 0 || v.len() % m != 0 {
                    return Err(bad(format!(
                        "`{name}` is {ty}: as limbs, each value takes {m} u64 words, but {} words were given",
                        v.len()
                    )));
                }
                v.len() / m
            }
            (Arg::U64(v), Elem::U64 | Elem::Zp(_)) => v.len(),
            (Arg::U32(v), Elem::U32) => v.len(),
            (Arg::Bool(v), Elem::Bool) => v.len(),
            (a, e) => {
                return Err(bad(format!(
                    "`{name}` is {ty}, but a column of {} was given: pass {}",
                    a.kind(),
                    e.arg_kinds()
                )))
            }
        };
        if self.per == 0 || values % self.per != 0 {
            return Err(bad(format!(
                "`{name}` is {ty}, so its column holds {} values per instance (flat, instance after instance), but it has {values} values",
                self.per
            )));
        }
        Ok(values / self.per)
    }

    /// Checks that `out` can take this result.
    pub(crate) fn check_out(&self, kernel: &str, out: &Out) -> Result<()> {
        let ok = matches!(
            (out, self.elem),
            (Out::Big(_) | Out::U64(_), Elem::Big(_))
                | (Out::U64(_), Elem::U64 | Elem::Zp(_))
                | (Out::U32(_), Elem::U32)
                | (Out::Bool(_), Elem::Bool)
        );
        if ok {
            Ok(())
        } else {
            Err(Error::Argument {
                kernel: kernel.into(),
                message: format!(
                    "result `{}` is {}, but it was to be written into a vector of {}: pass {}",
                    self.name,
                    self.ty,
                    out.kind(),
                    self.elem.out_kinds()
                ),
            })
        }
    }

    /// Writes instances `[start, start + count)` of a host argument into `dst`, in the kernel's
    /// layout (`count * self.bytes()` bytes), checking each value (width, residue) on the way.
    pub(crate) fn write(
        &self,
        arg: &Arg,
        start: usize,
        count: usize,
        dst: &mut [u8],
    ) -> Result<()> {
        let (v0, v1) = (start * self.per, (start + count) * self.per);
        debug_assert_eq!(dst.len(), count * self.bytes());
        match (arg, self.elem) {
            (Arg::Big(values), Elem::Big(m)) => {
                let dst = as_words_mut(dst);
                let bits = m as u64 * 64;
                par_try(
                    dst,
                    &values[v0..v1],
                    m,
                    |d: &mut [u64], vs: &[BigUint], first: usize| {
                        for (k, (d, v)) in d.chunks_mut(m.max(1)).zip(vs).enumerate() {
                            if v.bits() > bits {
                                return Err(Error::ValueTooWide {
                                    param: self.name.clone(),
                                    index: v0 + first + k,
                                    bits: v.bits(),
                                    max: bits,
                                });
                            }
                            let mut limbs = v.iter_u64_digits();
                            for w in d.iter_mut() {
                                *w = limbs.next().unwrap_or(0);
                            }
                        }
                        Ok(())
                    },
                )
            }
            (Arg::U64(words), Elem::Big(m)) => {
                copy_par(as_words_mut(dst), &words[v0 * m..v1 * m]);
                Ok(())
            }
            (Arg::U64(values), Elem::Zp(p)) => par_try(
                as_words_mut(dst),
                &values[v0..v1],
                1,
                |d: &mut [u64], vs: &[u64], first: usize| {
                    for (k, (d, v)) in d.iter_mut().zip(vs).enumerate() {
                        if *v >= p {
                            return Err(Error::Argument {
                                    kernel: String::new(),
                                    message: format!(
                                        "`{}` is {}, but value {} is {v}, not below the modulus {p}: pass residues (reduce with `% p` first)",
                                        self.name,
                                        self.ty,
                                        v0 + first + k
                                    ),
                                });
                        }
                        *d = *v;
                    }
                    Ok(())
                },
            ),
            (Arg::U64(values), Elem::U64) => {
                copy_par(as_words_mut(dst), &values[v0..v1]);
                Ok(())
            }
            (Arg::U32(values), Elem::U32) => {
                let (pre, d, post) = unsafe_free_cast_u32(dst);
                debug_assert!(pre == 0 && post == 0);
                copy_par(d, &values[v0..v1]);
                Ok(())
            }
            (Arg::Bool(values), Elem::Bool) => {
                for (d, v) in dst.iter_mut().zip(&values[v0..v1]) {
                    *d = *v as u8;
                }
                Ok(())
            }
            (a, _) => Err(Error::Argument {
                kernel: String::new(),
                message: format!(
                    "internal: `{}` ({}) cannot be staged from {}",
                    self.name,
                    self.ty,
                    a.kind()
                ),
            }),
        }
    }

    /// Reads instances `[start, start + count)` of a result from `src` (the kernel's layout) into
    /// `out`, which holds the whole batch's values already (see [`Slot::size_out`]).
    pub(crate) fn read(&self, src: &[u8], start: usize, count: usize, out: &mut Out) -> Result<()> {
        let (v0, v1) = (start * self.per, (start + count) * self.per);
        match (out, self.elem) {
            (Out::Big(o), Elem::Big(m)) => {
                let src = as_words(src);
                let o = &mut o[v0..v1];
                if o.len() * m < 4096 {
                    o.iter_mut()
                        .zip(src.chunks(m.max(1)))
                        .for_each(|(b, l)| assign_limbs(b, l));
                } else {
                    o.par_iter_mut()
                        .zip(src.par_chunks(m.max(1)))
                        .for_each(|(b, l)| assign_limbs(b, l));
                }
            }
            (Out::U64(o), Elem::Big(m)) => copy_par(&mut o[v0 * m..v1 * m], as_words(src)),
            (Out::U64(o), Elem::U64 | Elem::Zp(_)) => copy_par(&mut o[v0..v1], as_words(src)),
            (Out::U32(o), Elem::U32) => {
                let (pre, s, post) = unsafe_free_cast_u32_ref(src);
                debug_assert!(pre == 0 && post == 0);
                copy_par(&mut o[v0..v1], s)
            }
            (Out::Bool(o), Elem::Bool) => {
                for (d, s) in o[v0..v1].iter_mut().zip(src) {
                    *d = *s != 0;
                }
            }
            (o, _) => {
                return Err(Error::Argument {
                    kernel: String::new(),
                    message: format!(
                        "internal: result `{}` ({}) cannot be read into a vector of {}",
                        self.name,
                        self.ty,
                        o.kind()
                    ),
                })
            }
        }
        Ok(())
    }

    /// Sizes `out` for `n` instances (new big integers are zero, existing ones keep their
    /// allocations).
    pub(crate) fn size_out(&self, out: &mut Out, n: usize) {
        let values = n * self.per;
        match out {
            Out::Big(o) => o.resize(values, BigUint::default()),
            Out::Bool(o) => resize_par(o, values, false),
            Out::U32(o) => resize_par(o, values, 0),
            Out::U64(o) => resize_par(o, values * self.elem.units(), 0),
        }
    }
}

/// `v.resize(len, fill)`, with a large growth filled in parallel: fresh memory costs a page fault
/// per page on first touch, which is most of the time of filling it on one thread.
fn resize_par<T: Copy + Send + Sync>(v: &mut Vec<T>, len: usize, fill: T) {
    let old = v.len();
    if len <= old || (len - old) * std::mem::size_of::<T>() < PARALLEL_BYTES {
        v.resize(len, fill);
        return;
    }
    v.reserve_exact(len - old);
    let piece = piece_items(len - old, std::mem::size_of::<T>());
    v.spare_capacity_mut()[..len - old]
        .par_chunks_mut(piece)
        .for_each(|c| {
            for x in c {
                x.write(fill);
            }
        });
    // SAFETY: the `len - old` elements after the old length were just initialised.
    unsafe { v.set_len(len) };
}

/// Pieces of a conversion run in parallel above this many bytes (below, rayon's start-up costs
/// more than it saves).
const PARALLEL_BYTES: usize = 256 << 10;

/// Items per piece when `items` items of `item_bytes` bytes each are split among the threads:
/// two pieces per thread (even shares, so that no thread is left with a second round alone), of
/// at least 64 KiB.
fn piece_items(items: usize, item_bytes: usize) -> usize {
    let pieces = 2 * rayon::current_num_threads().max(1);
    let min_items = ((64 << 10) / item_bytes.max(1)).max(1);
    items.div_ceil(pieces).max(min_items)
}

/// `dst.copy_from_slice(src)`, in parallel for large copies.
fn copy_par<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    let bytes = std::mem::size_of_val(src);
    if bytes < PARALLEL_BYTES {
        dst.copy_from_slice(src);
        return;
    }
    let piece = piece_items(src.len(), std::mem::size_of::<T>());
    dst.par_chunks_mut(piece)
        .zip(src.par_chunks(piece))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// Runs `f` over matching pieces of `dst` (`per` units per value) and `values`, in parallel when
/// large; the error of the lowest failing value wins.
fn par_try<T: Send, V: Sync>(
    dst: &mut [T],
    values: &[V],
    per: usize,
    f: impl Fn(&mut [T], &[V], usize) -> Result<()> + Sync,
) -> Result<()> {
    let bytes = std::mem::size_of_val(dst);
    if bytes < PARALLEL_BYTES || values.len() < 2 {
        return f(dst, values, 0);
    }
    let chunk_values = piece_items(values.len(), std::mem::size_of::<T>() * per.max(1));
    let errors: Vec<Error> = dst
        .par_chunks_mut(chunk_values * per.max(1))
        .zip(values.par_chunks(chunk_values))
        .enumerate()
        .filter_map(|(i, (d, v))| f(d, v, i * chunk_values).err())
        .collect();
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn as_words_mut(bytes: &mut [u8]) -> &mut [u64] {
    // SAFETY: any bit pattern is a valid u64; `align_to_mut` keeps alignment.
    let (pre, words, post) = unsafe { bytes.align_to_mut::<u64>() };
    assert!(
        pre.is_empty() && post.is_empty(),
        "staging buffers are 8-byte aligned and whole words"
    );
    words
}

fn as_words(bytes: &[u8]) -> &[u64] {
    // SAFETY: as above.
    let (pre, words, post) = unsafe { bytes.align_to::<u64>() };
    assert!(
        pre.is_empty() && post.is_empty(),
        "staging buffers are 8-byte aligned and whole words"
    );
    words
}

fn unsafe_free_cast_u32(bytes: &mut [u8]) -> (usize, &mut [u32], usize) {
    // SAFETY: any bit pattern is a valid u32; `align_to_mut` keeps alignment.
    let (pre, w, post) = unsafe { bytes.align_to_mut::<u32>() };
    (pre.len(), w, post.len())
}

fn unsafe_free_cast_u32_ref(bytes: &[u8]) -> (usize, &[u32], usize) {
    // SAFETY: as above.
    let (pre, w, post) = unsafe { bytes.align_to::<u32>() };
    (pre.len(), w, post.len())
}

/// The values of instances `range` of a host argument of parameter `slot` (checked with
/// [`check_args`] first): the same kind of argument over fewer instances.
pub(crate) fn instances_of<'a>(
    slot: &Slot,
    arg: &Arg<'a>,
    range: std::ops::Range<usize>,
) -> Result<Arg<'a>> {
    let per = slot.per;
    let (v0, v1) = (range.start * per, range.end * per);
    Ok(match (*arg, slot.elem) {
        (Arg::Big(v), _) => Arg::Big(&v[v0..v1]),
        (Arg::U64(w), e) => {
            let u = e.units();
            Arg::U64(&w[v0 * u..v1 * u])
        }
        (Arg::U32(v), _) => Arg::U32(&v[v0..v1]),
        (Arg::Bool(v), _) => Arg::Bool(&v[v0..v1]),
        (Arg::Batch(_), _) => {
            return Err(Error::Argument {
                kernel: String::new(),
                message: format!(
                    "`{}` is a batch, which lives on one device; a call split over several devices takes host data (read the batch with `to_column` first, or call `run` on its device)",
                    slot.name
                ),
            })
        }
    })
}

/// An empty destination of the same kind as `out`, for part of a batch.
pub(crate) fn empty_like(out: &Out) -> Column {
    match out {
        Out::Big(_) => Column::Big(Vec::new()),
        Out::Bool(_) => Column::Bool(Vec::new()),
        Out::U32(_) => Column::U32(Vec::new()),
        Out::U64(_) => Column::U64(Vec::new()),
    }
}

/// Appends a part's results (a column made by [`empty_like`] for this `out`) to `out`.
pub(crate) fn append(out: &mut Out, part: Column) {
    match (out, part) {
        (Out::Big(o), Column::Big(mut p)) => o.append(&mut p),
        (Out::Bool(o), Column::Bool(mut p)) => o.append(&mut p),
        (Out::U32(o), Column::U32(mut p)) => o.append(&mut p),
        (Out::U64(o), Column::U64(mut p)) => o.append(&mut p),
        _ => unreachable!("a part's column is made like its destination"),
    }
}

/// Checks that the arguments match the parameters (count, kinds, equal instance counts) and
/// returns the batch size.
pub(crate) fn check_args(kernel: &str, params: &[Slot], args: &[Arg]) -> Result<usize> {
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
    let mut n = None;
    for (p, a) in params.iter().zip(args) {
        let c = p.instances(kernel, a)?;
        match n {
            None => n = Some(c),
            Some(first) if first != c => {
                return Err(Error::BatchMismatch {
                    first: params[0].name.clone(),
                    first_len: first,
                    other: p.name.clone(),
                    other_len: c,
                })
            }
            _ => {}
        }
    }
    Ok(n.unwrap_or(0))
}

/// Checks every host value of the arguments (widths, residues) without converting them: the CPU
/// backend's counterpart of the checks [`Slot::write`] makes while staging.
pub(crate) fn check_values(params: &[Slot], args: &[Arg]) -> Result<()> {
    for (p, a) in params.iter().zip(args) {
        match (a, p.elem) {
            (Arg::Big(values), Elem::Big(m)) => {
                let max = m as u64 * 64;
                if let Some((index, v)) = values
                    .par_iter()
                    .enumerate()
                    .find_first(|(_, v)| v.bits() > max)
                {
                    return Err(Error::ValueTooWide {
                        param: p.name.clone(),
                        index,
                        bits: v.bits(),
                        max,
                    });
                }
            }
            (Arg::U64(values), Elem::Zp(q)) => {
                if let Some((index, v)) =
                    values.par_iter().enumerate().find_first(|(_, v)| **v >= q)
                {
                    return Err(Error::Argument {
                        kernel: String::new(),
                        message: format!(
                            "`{}` is {}, but value {index} is {v}, not below the modulus {q}: pass residues (reduce with `% p` first)",
                            p.name, p.ty
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::Size;

    fn big(bits: u64) -> Slot {
        Slot::new("a", &Type::Big(Size::lit(bits))).unwrap()
    }

    #[test]
    fn limbs_round_trip() {
        let v = (BigUint::from(1u8) << 190u32) + BigUint::from(u64::MAX);
        let s = big(192);
        let mut staged = vec![0u8; 24];
        s.write(&Arg::Big(std::slice::from_ref(&v)), 0, 1, &mut staged)
            .unwrap();
        assert_eq!(as_words(&staged), &[u64::MAX, 0, 1 << 62]);
        assert_eq!(big_from_limbs(as_words(&staged)), v);
        let mut out = vec![BigUint::from(7u8); 3];
        let mut o = Out::Big(&mut out);
        s.size_out(&mut o, 1);
        s.read(&staged, 0, 1, &mut o).unwrap();
        assert_eq!(out, vec![v.clone()]);
        let mut limbs = Vec::new();
        let mut o = Out::U64(&mut limbs);
        s.size_out(&mut o, 1);
        s.read(&staged, 0, 1, &mut o).unwrap();
        assert_eq!(limbs, vec![u64::MAX, 0, 1 << 62]);
    }

    #[test]
    fn arguments_are_checked() {
        let params = vec![big(64), Slot::new("b", &Type::Big(Size::lit(64))).unwrap()];
        let one = vec![BigUint::from(1u8)];
        let two = vec![BigUint::from(1u8), BigUint::from(2u8)];
        assert!(matches!(
            check_args("k", &params, &[Arg::Big(&one), Arg::Big(&two)]),
            Err(Error::BatchMismatch { .. })
        ));
        assert!(matches!(
            check_args("k", &params, &[Arg::Big(&one)]),
            Err(Error::Argument { .. })
        ));
        // Limbs feed big-integer parameters; bools do not.
        assert_eq!(
            check_args("k", &params, &[Arg::Big(&one), Arg::U64(&[1])]).unwrap(),
            1
        );
        assert!(matches!(
            check_args("k", &params, &[Arg::Big(&one), Arg::Bool(&[true])]),
            Err(Error::Argument { .. })
        ));
        let wide = vec![BigUint::from(1u8) << 64u32];
        let mut dst = vec![0u8; 8];
        assert!(matches!(
            params[0].write(&Arg::Big(&wide), 0, 1, &mut dst),
            Err(Error::ValueTooWide {
                bits: 65,
                max: 64,
                index: 0,
                ..
            })
        ));
        assert!(matches!(
            check_values(&params, &[Arg::Big(&wide), Arg::Big(&one)]),
            Err(Error::ValueTooWide { index: 0, .. })
        ));
    }

    #[test]
    fn the_lowest_bad_value_is_reported() {
        // Large enough to be converted in parallel pieces.
        let s = big(64);
        let n = 100_000;
        let mut values = vec![BigUint::from(3u8); n];
        values[70_000] = BigUint::from(1u8) << 70u32;
        values[90_000] = BigUint::from(1u8) << 80u32;
        let mut dst = vec![0u8; n * 8];
        match s.write(&Arg::Big(&values), 0, n, &mut dst) {
            Err(Error::ValueTooWide { index, .. }) => assert_eq!(index, 70_000),
            other => panic!("{other:?}"),
        }
        let zp = Slot::new("x", &Type::Zp(Size::lit(97))).unwrap();
        let mut residues = vec![5u64; n];
        residues[12_345] = 97;
        residues[99_999] = 1000;
        let mut dst = vec![0u8; n * 8];
        let e = zp.write(&Arg::U64(&residues), 0, n, &mut dst).unwrap_err();
        assert!(e.to_string().contains("value 12345"), "{e}");
    }

    #[test]
    fn narrow_units_move_at_their_width() {
        let s = Slot::new("f", &Type::array(Type::Bool, Size::lit(3))).unwrap();
        assert_eq!(s.bytes(), 3);
        let mut dst = vec![9u8; 6];
        s.write(
            &Arg::Bool(&[true, false, true, false, false, true]),
            0,
            2,
            &mut dst,
        )
        .unwrap();
        assert_eq!(dst, vec![1, 0, 1, 0, 0, 1]);
        let s = Slot::new("x", &Type::U32).unwrap();
        let mut dst = vec![0u8; 8];
        s.write(&Arg::U32(&[7, 0xdead_beef]), 0, 2, &mut dst)
            .unwrap();
        let mut out = Vec::new();
        let mut o = Out::U32(&mut out);
        s.size_out(&mut o, 2);
        s.read(&dst, 0, 2, &mut o).unwrap();
        assert_eq!(out, vec![7, 0xdead_beef]);
    }
}

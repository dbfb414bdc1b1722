//! Type checking of a kernel function (or an operator), producing SSA instructions for `expand`.
//! Closures become nested bodies (lambdas of the IR); a closure may read scalars of the enclosing
//! kernel (they are broadcast) and, in a map over `iota(n)`, another array at its own index.

use crate::types::{length, parse_type, KType, Width};
use std::collections::{HashMap, HashSet};

const SUPPORTED: &str = "a kernel body may use `let` bindings, `let mut` variables with assignments \
                         (`x = e;`, `x += e;`, ..), `if` statements assigning them, `for i in 0..K` loops, `+`, `-`, `*`, `/` and `%` (u32, u64), `a.mul_wide(b)`, \
                         comparisons, `&&`, `||`, `!`, `&`, `|`, `^`, `<<`, `>>`, `as u32` / `as u64` / `as U<..>` / \
                         `as Zp<P>`, parentheses, `if`/`else` (which selects between two values), tuples; on U<..>, u32 \
                         and u64 `.rotate_left(k)`, `.rotate_right(k)`, `.leading_zeros()`, `.trailing_zeros()`, \
                         `.count_ones()`, `.bit(i)`, and on U<..> `.extract_bits(lo, len)`, `.insert_bits(field, lo, len)`, \
                         `U::<BITS>::mask(len)`, `U::ZERO`, `U::ONE`, `U::MAX`; on arrays `.map(f)`, `.zip(ys)`, \
                         `.unzip()`, `.scan_inclusive(op, e)`, `.scan_exclusive(op, e)`, `.reduce(op, e)` and `iota(N)`; \
                         on Zp<P> `.pow(e)`, `.inv()`, `.value()`, `Zp::from(x)`, `Zp::ZERO`, `Zp::ONE`";

const LOOPS: &str = "a kernel loops only with `for i in 0..K`, where K is a constant or a size \
                     (`BITS`, `2 * BITS`): every instance runs the same rounds (no `while`, no `loop`)";
const NO_BREAK: &str = "a kernel loop runs all its rounds: there is no `break` or `continue` \
                        (select with `if`/`else` what a round computes instead)";

/// The methods of U<..> and of u32/u64, for error messages.
const BIG_METHODS: &str = "mul_wide, rotate_left, rotate_right, leading_zeros, trailing_zeros, \
                           count_ones, bit, extract_bits and insert_bits";
const INT_METHODS: &str =
    "rotate_left, rotate_right, leading_zeros, trailing_zeros, count_ones and bit";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BOp {
    Add,
    Sub,
    Mul,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    /// On u32, u64 and U<..> (x / 0 is all ones and x % 0 is x, as the IR defines them).
    Div,
    Rem,
}

/// How a shift or rotation moves bits (`<<`, `>>`, `rotate_left`, `rotate_right`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shift {
    Left,
    Right,
    RotateLeft,
    RotateRight,
}

/// A bit count: `leading_zeros`, `trailing_zeros`, `count_ones` (a u32, as in Rust).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    LeadingZeros,
    TrailingZeros,
    Ones,
}

#[derive(Clone, Debug)]
pub enum Lit {
    Bool(bool),
    U32(u32),
    U64(u64),
    Zp(u64, Width),
    Big(u64, Width),
    Tuple(Vec<Lit>),
}

/// An operator of a scan or a reduction (or a map): a closure, or a `#[bigfuse::op]` function.
#[derive(Clone, Debug)]
pub enum OpRef {
    Closure(Body),
    Named(syn::Path),
}

/// A closure's (or an operator function's) straight-line code: params are its first instructions.
#[derive(Clone, Debug)]
pub struct Body {
    pub insts: Vec<(Inst, KType)>,
    pub output: usize,
}

#[derive(Clone, Debug)]
pub enum Inst {
    Param(String),
    Const(Lit),
    Binary(BOp, usize, usize),
    Not(usize),
    /// `x.isqrt()` of a U<..>: its square root, rounded down.
    Isqrt(usize),
    /// `x.pow_mod(e, m)`: x^e mod m of U<..>s (the exponent of any width).
    PowMod(usize, usize, usize),
    /// `a.add_mod(b, m)`, `a.sub_mod(b, m)`, `a.mul_mod(b, m)`: `(a op b) mod m` of U<..>s of
    /// one width (`op` is `+`, `-` or `*`).
    ModArith(BOp, usize, usize, usize),
    /// `a.gcd(b)` of two U<..> of one width.
    Gcd(usize, usize),
    /// `a.inv_mod(m)`: `(a^-1 mod m, exists)` of two U<..> of one width.
    InvMod(usize, usize),
    /// A shift or rotation of a U<..> by a u32 amount, or a rotation of a u32/u64 (scalar `<<` and
    /// `>>` stay `Binary`).
    Shift(Shift, usize, usize),
    /// A bit count of a U<..>, u32 or u64: a u32.
    Count(Count, usize),
    /// Bit `i` (a u32) of a U<..>, u32 or u64: false past the width.
    Bit(usize, usize),
    /// The U<..> of the instruction's type whose low `len` bits (a u32) are set.
    Mask(usize),
    /// `x.extract_bits(lo, len)`.
    ExtractBits(usize, usize, usize),
    /// `x.insert_bits(field, lo, len)`.
    InsertBits(usize, usize, usize, usize),
    Select(usize, usize, usize),
    Cast(usize),
    MulWide(usize, usize),
    Tuple(Vec<usize>),
    Extract(usize, u32),
    Zip(Vec<usize>),
    Iota(Width),
    Map {
        f: OpRef,
        args: Vec<usize>,
    },
    Scan {
        op: OpRef,
        init: Lit,
        exclusive: bool,
        input: usize,
    },
    Reduce {
        op: OpRef,
        init: Lit,
        input: usize,
    },
    Pow(usize, usize),
    Inv(usize),
    PolyMul(usize, usize),
    /// The round's index (a u32): the first instruction of a loop body.
    LoopIndex,
    /// `for i in 0..count`: `body` (a loop index, then one `Param` per value of `args`, which are
    /// the carried values' starting values followed by the captured ones) returns `next`, the
    /// carried values of the next round. Its value: the one carried value, or a tuple of them.
    Loop {
        count: Width,
        body: Vec<(Inst, KType)>,
        next: Vec<usize>,
        args: Vec<usize>,
    },
}

impl Inst {
    /// Calls `f` on every value of this instruction's program that it reads (not on the values of
    /// nested bodies: closures and loop bodies have their own).
    fn operands_mut(&mut self, f: &mut dyn FnMut(&mut usize)) {
        match self {
            Inst::Param(_) | Inst::Const(_) | Inst::Iota(_) | Inst::LoopIndex => {}
            Inst::Not(a)
            | Inst::Isqrt(a)
            | Inst::Count(_, a)
            | Inst::Mask(a)
            | Inst::Cast(a)
            | Inst::Extract(a, _)
            | Inst::Inv(a)
            | Inst::Scan { input: a, .. }
            | Inst::Reduce { input: a, .. } => f(a),
            Inst::Binary(_, a, b)
            | Inst::Shift(_, a, b)
            | Inst::Bit(a, b)
            | Inst::MulWide(a, b)
            | Inst::Pow(a, b)
            | Inst::Gcd(a, b)
            | Inst::InvMod(a, b)
            | Inst::PolyMul(a, b) => {
                f(a);
                f(b)
            }
            Inst::ExtractBits(a, b, c)
            | Inst::Select(a, b, c)
            | Inst::PowMod(a, b, c)
            | Inst::ModArith(_, a, b, c) => {
                f(a);
                f(b);
                f(c)
            }
            Inst::InsertBits(a, b, c, d) => {
                f(a);
                f(b);
                f(c);
                f(d)
            }
            Inst::Tuple(xs)
            | Inst::Zip(xs)
            | Inst::Map { args: xs, .. }
            | Inst::Loop { args: xs, .. } => xs.iter_mut().for_each(f),
        }
    }
}

pub struct Checked {
    pub name: syn::Ident,
    pub sizes: Vec<String>,
    pub params: Vec<(syn::Ident, KType)>,
    pub insts: Vec<(Inst, KType)>,
    pub outputs: Vec<usize>,
    pub output_types: Vec<KType>,
    /// Whether the declared return type is a tuple (then `run` returns a tuple of columns).
    pub tuple_return: bool,
}

/// What a closure sees of the kernel around it.
struct Outer {
    scopes: Vec<HashMap<String, usize>>,
    types: Vec<KType>,
}

/// A closure being checked: what it captured, and which of its values is its element's index.
struct Lambda {
    outer: Outer,
    /// Values of the enclosing kernel read by the closure, in the order of its extra parameters.
    captures: Vec<usize>,
    /// Whether captures are allowed (maps only: scan and reduce operators take exactly two values).
    may_capture: bool,
    /// The closure parameter bound to the element of `iota(n)`, which may index other arrays.
    own_index: Option<usize>,
    /// The length of the mapped array (own-index accesses must have it).
    len: Option<Width>,
}

struct Checker {
    sizes: Vec<String>,
    insts: Vec<(Inst, KType)>,
    scopes: Vec<HashMap<String, usize>>,
    /// The `let mut` names of each scope (parallel to `scopes`): those assignments may change.
    muts: Vec<HashSet<String>>,
    lambda: Option<Lambda>,
    /// Whether `for` loops are allowed (in a kernel's body; not in closures or operators).
    loops: bool,
}

/// An error covering all of `tokens` (first to last token, where the compiler can show that).
fn err<T>(tokens: impl quote::ToTokens, msg: impl std::fmt::Display) -> syn::Result<T> {
    Err(syn::Error::new_spanned(tokens, msg.to_string()))
}

fn check_signature(sig: &syn::Signature, what: &str) -> syn::Result<()> {
    if let Some(c) = &sig.constness {
        return err(c, format!("{what} cannot be `const`"));
    }
    if let Some(a) = &sig.asyncness {
        return err(a, format!("{what} cannot be `async`"));
    }
    if let Some(u) = &sig.unsafety {
        return err(u, format!("{what} cannot be `unsafe`"));
    }
    if !sig.generics.params.is_empty() {
        return err(
            &sig.generics,
            format!("{what} takes no generic parameters: write sizes directly, as in U<BITS> or [u64; N]; they become arguments of `run`"),
        );
    }
    if let Some(v) = &sig.variadic {
        return err(v, format!("{what} cannot be variadic"));
    }
    Ok(())
}

/// The typed parameters of a kernel or operator signature, pushed as `Param` instructions.
fn check_params(c: &mut Checker, sig: &syn::Signature) -> syn::Result<Vec<(syn::Ident, KType)>> {
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => {
                return err(r, "a kernel is a free function: it takes no `self`")
            }
            syn::FnArg::Typed(pt) => {
                let syn::Pat::Ident(pi) = &*pt.pat else {
                    return err(
                        &pt.pat,
                        "kernel parameters are plain names (`a: U<BITS>`), not patterns",
                    );
                };
                if let Some(m) = &pi.mutability {
                    return err(
                        m,
                        "kernel parameters are immutable: drop `mut` and copy the parameter into a variable, `let mut x = x;`",
                    );
                }
                if pi.by_ref.is_some() || pi.subpat.is_some() {
                    return err(pi, "kernel parameters are plain names");
                }
                let ty = parse_type(&pt.ty, &mut c.sizes)?;
                if matches!(ty, KType::Tuple(_)) {
                    return err(
                        &pt.ty,
                        "kernel parameters cannot be tuples: pass each value as its own parameter",
                    );
                }
                let name = pi.ident.to_string();
                if params
                    .iter()
                    .any(|(p, _): &(syn::Ident, KType)| *p == pi.ident)
                {
                    return err(&pi.ident, format!("parameter `{name}` is declared twice"));
                }
                let id = c.push(Inst::Param(name.clone()), ty.clone());
                c.scopes[0].insert(name, id);
                params.push((pi.ident.clone(), ty));
            }
        }
    }
    Ok(params)
}

pub fn check(f: &syn::ItemFn) -> syn::Result<Checked> {
    let sig = &f.sig;
    check_signature(sig, "a kernel")?;
    let mut c = Checker::new();
    c.loops = true;
    let params = check_params(&mut c, sig)?;
    let (output_types, tuple_return) =
        match &sig.output {
            syn::ReturnType::Default => return err(
                &sig.ident,
                "a kernel must return a value: add `-> U<BITS>` (or bool, u32, u64, Zp<P>, an array, or a tuple)",
            ),
            syn::ReturnType::Type(_, ty) => match &**ty {
                syn::Type::Tuple(t) if t.elems.is_empty() => {
                    return err(t, "a kernel must return a value, not `()`")
                }
                syn::Type::Tuple(t) => (
                    t.elems
                        .iter()
                        .map(|e| c.result_type(e))
                        .collect::<syn::Result<Vec<_>>>()?,
                    true,
                ),
                other => (vec![c.result_type(other)?], false),
            },
        };
    for t in &output_types {
        if matches!(t, KType::Tuple(_)) {
            return err(
                &sig.output,
                "a kernel returns values or a flat tuple of them, not nested tuples",
            );
        }
    }
    let (stmts, tail) = split_block(&f.block)?;
    for s in stmts {
        c.stmt(s)?;
    }
    let outputs = match (tail, tuple_return) {
        (syn::Expr::Tuple(t), true) => {
            if t.elems.len() != output_types.len() {
                return err(
                    t,
                    format!(
                        "the function returns {} values but this tuple has {}",
                        output_types.len(),
                        t.elems.len()
                    ),
                );
            }
            let mut outs = Vec::new();
            for (e, want) in t.elems.iter().zip(&output_types) {
                outs.push(c.expect(e, want, "this result")?);
            }
            outs
        }
        (e, true) => {
            let v = c.expr(e, None)?;
            match c.insts[v].0.clone() {
                Inst::Tuple(xs) if xs.len() == output_types.len() => {
                    for ((x, want), e2) in xs.iter().zip(&output_types).zip(std::iter::repeat(e)) {
                        if c.ty(*x) != *want {
                            return err(
                                e2,
                                format!(
                                    "this result is {} but {} is expected",
                                    c.show(&c.ty(*x)),
                                    c.show(want)
                                ),
                            );
                        }
                    }
                    xs
                }
                // A tuple-valued operation (`a.div_rem(b)`, `a.inv_mod(m)`): its fields.
                _ if c.ty(v) == KType::Tuple(output_types.clone()) => (0..output_types.len())
                    .map(|i| c.push(Inst::Extract(v, i as u32), output_types[i].clone()))
                    .collect(),
                _ => return err(
                    e,
                    "the function returns a tuple: end the body with a tuple expression `(x, y)`",
                ),
            }
        }
        (e, false) => vec![c.expect(e, &output_types[0], "the result")?],
    };
    Ok(Checked {
        name: sig.ident.clone(),
        sizes: c.sizes,
        params,
        insts: c.insts,
        outputs,
        output_types,
        tuple_return,
    })
}

/// A `#[bigfuse::op]` function: typed parameters (scalars, tuples), one scalar or tuple result.
pub struct CheckedOp {
    pub sizes: Vec<String>,
    pub body: Body,
    pub param_types: Vec<KType>,
    pub output_type: KType,
}

pub fn check_op(f: &syn::ItemFn) -> syn::Result<CheckedOp> {
    let sig = &f.sig;
    check_signature(sig, "an operator")?;
    let mut c = Checker::new();
    let params = check_params(&mut c, sig)?;
    for (p, t) in &params {
        if !t.is_element() {
            return err(
                p,
                format!(
                    "an operator takes scalars or tuples of them, not {}",
                    c.show(t)
                ),
            );
        }
    }
    let syn::ReturnType::Type(_, out_ty) = &sig.output else {
        return err(
            &sig.ident,
            "an operator returns a value: add `-> u32` (or another scalar or tuple type)",
        );
    };
    let out = c.declared(out_ty)?;
    if !out.is_element() {
        return err(out_ty, "an operator returns a scalar or a tuple of scalars");
    }
    let (stmts, tail) = split_block(&f.block)?;
    for s in stmts {
        c.stmt(s)?;
    }
    let output = c.expect(tail, &out, "the result")?;
    Ok(CheckedOp {
        sizes: c.sizes,
        param_types: params.into_iter().map(|(_, t)| t).collect(),
        output_type: out,
        body: Body {
            insts: c.insts,
            output,
        },
    })
}

/// The statements of a block and its final expression.
fn split_block(b: &syn::Block) -> syn::Result<(Vec<&syn::Stmt>, &syn::Expr)> {
    match b.stmts.last() {
        Some(syn::Stmt::Expr(e, None)) => Ok((b.stmts[..b.stmts.len() - 1].iter().collect(), e)),
        Some(syn::Stmt::Expr(syn::Expr::Return(r), _)) => err(
            r,
            "write the result as the block's last expression, without `return`",
        ),
        Some(last) => err(
            last,
            "a kernel body (and each `if` branch) must end with the value it produces, without `;`",
        ),
        None => err(b, "an empty block produces no value"),
    }
}

/// A name bound by a closure parameter or a `let` pattern.
enum Pattern {
    /// A name, its declared type, and whether it is `mut` (`let mut x`: assignable).
    Name(syn::Ident, Option<Box<syn::Type>>, bool),
    Wild,
    Tuple(Vec<Pattern>),
}

/// A pattern; `let_mut`: whether `mut` names are allowed (in `let`, not in closure parameters).
fn pattern(p: &syn::Pat, let_mut: bool) -> syn::Result<Pattern> {
    match p {
        syn::Pat::Ident(pi) => {
            if let Some(m) = &pi.mutability {
                if !let_mut {
                    return err(m, "closure parameters are immutable: drop `mut` (bind a `let mut` inside the closure to assign)");
                }
            }
            if pi.by_ref.is_some() || pi.subpat.is_some() {
                return err(pi, "bind plain names here");
            }
            Ok(Pattern::Name(
                pi.ident.clone(),
                None,
                pi.mutability.is_some(),
            ))
        }
        syn::Pat::Wild(_) => Ok(Pattern::Wild),
        syn::Pat::Tuple(t) => Ok(Pattern::Tuple(
            t.elems
                .iter()
                .map(|e| pattern(e, let_mut))
                .collect::<syn::Result<_>>()?,
        )),
        syn::Pat::Paren(p) => pattern(&p.pat, let_mut),
        syn::Pat::Type(pt) => match pattern(&pt.pat, let_mut)? {
            Pattern::Name(n, _, m) => Ok(Pattern::Name(n, Some(pt.ty.clone()), m)),
            other => Ok(other),
        },
        other => err(
            other,
            "bind a name, `_` or a tuple of them, e.g. `|(x, y)|`",
        ),
    }
}

impl Checker {
    /// A checker for a kernel or operator body (closures get their own, see `operator`).
    fn new() -> Checker {
        Checker {
            sizes: Vec::new(),
            insts: Vec::new(),
            scopes: vec![HashMap::new()],
            muts: vec![HashSet::new()],
            lambda: None,
            loops: false,
        }
    }

    fn push(&mut self, inst: Inst, ty: KType) -> usize {
        self.insts.push((inst, ty));
        self.insts.len() - 1
    }

    fn ty(&self, v: usize) -> KType {
        self.insts[v].1.clone()
    }

    fn show(&self, t: &KType) -> String {
        t.describe(&self.sizes)
    }

    /// The type a constructor path like `Zp::<P>::from` or `U::<BITS>::mask` builds: from its
    /// type arguments when written, else the type the context expects (None when neither says).
    fn constructed_type(
        &mut self,
        seg: &syn::PathSegment,
        expected: Option<&KType>,
    ) -> syn::Result<Option<KType>> {
        match &seg.arguments {
            syn::PathArguments::AngleBracketed(a) => {
                let name = &seg.ident;
                let ty: syn::Type = syn::parse_quote!(#name #a);
                self.declared(&ty).map(Some)
            }
            _ => Ok(expected.cloned()),
        }
    }

    fn declared(&mut self, ty: &syn::Type) -> syn::Result<KType> {
        let before = self.sizes.len();
        let t = parse_type(ty, &mut self.sizes)?;
        if self.sizes.len() > before {
            return err(
                ty,
                format!(
                    "size `{}` does not appear in any parameter, so no call could choose it",
                    self.sizes[before]
                ),
            );
        }
        Ok(t)
    }

    /// A declared result type. A modulus may appear there first (a kernel can compute residues
    /// modulo a prime chosen per call from integers); any other size must come from a parameter.
    fn result_type(&mut self, ty: &syn::Type) -> syn::Result<KType> {
        let before = self.sizes.len();
        let t = parse_type(ty, &mut self.sizes)?;
        fn other_sizes(t: &KType, out: &mut Vec<usize>) {
            match t {
                KType::Big(w) => out.extend(w.param),
                KType::Array(e, n) => {
                    out.extend(n.param);
                    other_sizes(e, out);
                }
                KType::Tuple(ts) => ts.iter().for_each(|t| other_sizes(t, out)),
                _ => {}
            }
        }
        let mut used = Vec::new();
        other_sizes(&t, &mut used);
        if let Some(&new) = used.iter().find(|&&i| i >= before) {
            return err(
                ty,
                format!(
                    "size `{}` does not appear in any parameter, so no call could choose it",
                    self.sizes[new]
                ),
            );
        }
        Ok(t)
    }

    /// A name in scope; inside a closure, a scalar of the enclosing kernel is captured (it becomes
    /// a broadcast argument of the map).
    fn lookup(&mut self, ident: &syn::Ident) -> syn::Result<Option<usize>> {
        let name = ident.to_string();
        if let Some(v) = self.scopes.iter().rev().find_map(|s| s.get(&name).copied()) {
            return Ok(Some(v));
        }
        let Some(l) = &self.lambda else {
            return Ok(None);
        };
        let Some(outer) = l
            .outer
            .scopes
            .iter()
            .rev()
            .find_map(|s| s.get(&name).copied())
        else {
            return Ok(None);
        };
        let ty = l.outer.types[outer].clone();
        if !l.may_capture {
            return err(ident, format!("a scan or reduce operator sees only its two arguments: `{name}` belongs to the enclosing kernel"));
        }
        if matches!(ty, KType::Big(_)) {
            return err(ident, format!(
                "`{name}` is {}: closures cannot read the kernel's big integers yet (the big integers inside a closure come from the mapped arrays)",
                self.show(&ty)
            ));
        }
        if !ty.is_scalar() {
            return err(ident, format!(
                "`{name}` is {}: a closure cannot read a whole array; zip it with the mapped array (`xs.zip({name}).map(|(x, y)| ..)`), or map over `iota(n)` and read `{name}[i]` at the element's own index",
                self.show(&ty)
            ));
        }
        Ok(Some(self.capture(outer, &name, ty)))
    }

    fn capture(&mut self, outer: usize, name: &str, ty: KType) -> usize {
        let id = self.push(Inst::Param(name.to_string()), ty);
        self.scopes[0].insert(name.to_string(), id);
        self.lambda
            .as_mut()
            .expect("captures happen in closures")
            .captures
            .push(outer);
        id
    }

    /// Binds a pattern to a value of type `ty`: names to values, tuples field by field.
    fn bind(&mut self, pat: &Pattern, v: usize, span: &dyn quote::ToTokens) -> syn::Result<()> {
        match pat {
            Pattern::Wild => Ok(()),
            Pattern::Name(n, declared, mutable) => {
                if let Some(t) = declared {
                    let want = self.declared(t)?;
                    if want != self.ty(v) {
                        return err(
                            t,
                            format!(
                                "this value is {}, not {}",
                                self.show(&self.ty(v)),
                                self.show(&want)
                            ),
                        );
                    }
                }
                if *mutable && matches!(self.ty(v), KType::Tuple(_)) {
                    return err(
                        n,
                        format!(
                            "`{n}` would be a mutable tuple ({}): bind each field to its own `let mut` name",
                            self.show(&self.ty(v))
                        ),
                    );
                }
                self.scopes.last_mut().unwrap().insert(n.to_string(), v);
                let muts = self.muts.last_mut().unwrap();
                if *mutable {
                    muts.insert(n.to_string());
                } else {
                    muts.remove(&n.to_string());
                }
                Ok(())
            }
            Pattern::Tuple(ps) => {
                let KType::Tuple(ts) = self.ty(v) else {
                    return err(
                        span,
                        format!(
                            "a tuple pattern needs a tuple, not {}",
                            self.show(&self.ty(v))
                        ),
                    );
                };
                if ts.len() != ps.len() {
                    return err(
                        span,
                        format!(
                            "this pattern has {} fields but the value has {}",
                            ps.len(),
                            ts.len()
                        ),
                    );
                }
                for (i, p) in ps.iter().enumerate() {
                    let f = self.extract(v, i as u32);
                    self.bind(p, f, span)?;
                }
                Ok(())
            }
        }
    }

    /// Field `i` of a tuple value; a tuple built here gives its field directly (so tuples of arrays
    /// never reach the IR).
    fn extract(&mut self, v: usize, i: u32) -> usize {
        if let Inst::Tuple(xs) = &self.insts[v].0 {
            return xs[i as usize];
        }
        let KType::Tuple(ts) = self.ty(v) else {
            unreachable!("callers check for tuples")
        };
        self.push(Inst::Extract(v, i), ts[i as usize].clone())
    }

    fn stmt(&mut self, s: &syn::Stmt) -> syn::Result<()> {
        match s {
            syn::Stmt::Local(local) => {
                let pat = pattern(&local.pat, true)?;
                let Some(init) = &local.init else {
                    return err(local, "a `let` in a kernel needs a value: `let x = ...;`");
                };
                if let Some((_, diverge)) = &init.diverge {
                    return err(diverge, "`let ... else` is not supported in a kernel");
                }
                let declared = match &pat {
                    Pattern::Name(_, Some(t), _) => Some(self.declared(t)?),
                    _ => None,
                };
                let v = match &declared {
                    Some(t) => self.expect(&init.expr, t, "this value")?,
                    None => self.expr(&init.expr, None)?,
                };
                let pat = match pat {
                    Pattern::Name(n, _, m) => Pattern::Name(n, None, m),
                    p => p,
                };
                self.bind(&pat, v, &local.pat)
            }
            syn::Stmt::Expr(syn::Expr::Assign(a), _) => self.assign(a),
            syn::Stmt::Expr(syn::Expr::Binary(b), _) if compound_op(&b.op).is_some() => {
                self.compound_assign(b)
            }
            syn::Stmt::Expr(syn::Expr::ForLoop(f), _) => self.for_loop(f),
            syn::Stmt::Expr(syn::Expr::If(i), _) => self.if_stmt(i),
            syn::Stmt::Expr(e @ (syn::Expr::While(_) | syn::Expr::Loop(_)), _) => err(e, LOOPS),
            syn::Stmt::Expr(e @ (syn::Expr::Break(_) | syn::Expr::Continue(_)), _) => {
                err(e, NO_BREAK)
            }
            syn::Stmt::Expr(e, _) => err(
                e,
                format!("a statement here has no effect: bind it with `let`, or assign it to a `let mut` variable. {SUPPORTED}"),
            ),
            syn::Stmt::Item(i) => err(
                i,
                "items (fn, struct, use, ...) cannot be declared inside a kernel",
            ),
            syn::Stmt::Macro(m) => err(m, "macros cannot be used inside a kernel"),
        }
    }

    fn expect(&mut self, e: &syn::Expr, want: &KType, what: &str) -> syn::Result<usize> {
        let v = self.expr(e, Some(want))?;
        if self.ty(v) != *want {
            return err(
                e,
                format!(
                    "{what} is {} but {} is expected",
                    self.show(&self.ty(v)),
                    self.show(want)
                ),
            );
        }
        Ok(v)
    }

    fn literal(&mut self, lit: &syn::Lit, expected: Option<&KType>) -> syn::Result<usize> {
        match lit {
            syn::Lit::Bool(b) => Ok(self.push(Inst::Const(Lit::Bool(b.value)), KType::Bool)),
            syn::Lit::Int(i) => {
                let ty = match i.suffix() {
                    "u32" => KType::U32,
                    "u64" => KType::U64,
                    "" => match expected {
                        Some(t @ (KType::U32 | KType::U64)) => t.clone(),
                        Some(KType::Zp(w)) => {
                            // An integer literal as a residue: its value modulo P.
                            let v: u64 = i.base10_parse().map_err(|_| {
                                syn::Error::new(i.span(), "this literal does not fit a u64")
                            })?;
                            let c = self.push(Inst::Const(Lit::U64(v)), KType::U64);
                            return Ok(self.push(Inst::Cast(c), KType::Zp(*w)));
                        }
                        Some(KType::Big(w)) => {
                            let v: u64 = i.base10_parse().map_err(|_| {
                                syn::Error::new(i.span(), "a U<..> literal must fit a u64 (larger constants: pass them as a parameter)")
                            })?;
                            return Ok(self.push(Inst::Const(Lit::Big(v, *w)), KType::Big(*w)));
                        }
                        _ => {
                            return err(
                                i,
                                "the type of this literal is unknown: add a suffix (`1u64`, `1u32`) or use it next to a typed value",
                            )
                        }
                    },
                    other => return err(i, format!("literals of type `{other}` are not supported: use u32 or u64")),
                };
                let inst = if ty == KType::U32 {
                    Inst::Const(Lit::U32(i.base10_parse().map_err(|_| {
                        syn::Error::new(i.span(), "this literal does not fit a u32")
                    })?))
                } else {
                    Inst::Const(Lit::U64(i.base10_parse().map_err(|_| {
                        syn::Error::new(i.span(), "this literal does not fit a u64")
                    })?))
                };
                Ok(self.push(inst, ty))
            }
            other => err(
                other,
                "only integer and bool literals can be used in a kernel",
            ),
        }
    }

    /// A constant for the initial value of a scan or reduction, of type `want`.
    fn constant(&mut self, e: &syn::Expr, want: &KType) -> syn::Result<Lit> {
        let msg = format!("the initial value must be a constant {} (a literal, `Zp::ZERO`, `Zp::ONE`, `U::ZERO`, `U::ONE`, `u64::MAX`, or a tuple of those)", self.show(want));
        let bad = |e: &syn::Expr| err(e, &msg);
        match (e, want) {
            (syn::Expr::Paren(p), _) => self.constant(&p.expr, want),
            (syn::Expr::Tuple(t), KType::Tuple(ts)) if t.elems.len() == ts.len() => Ok(Lit::Tuple(
                t.elems
                    .iter()
                    .zip(ts)
                    .map(|(e, t)| self.constant(e, t))
                    .collect::<syn::Result<_>>()?,
            )),
            _ => {
                let before = self.insts.len();
                let v = self.expr(e, Some(want))?;
                if self.ty(v) != *want {
                    return err(
                        e,
                        format!(
                            "the initial value is {} but the elements are {}",
                            self.show(&self.ty(v)),
                            self.show(want)
                        ),
                    );
                }
                let lit = match (&self.insts[v].0, want) {
                    (Inst::Const(l), _) => l.clone(),
                    (Inst::Cast(c), KType::Zp(w)) => match &self.insts[*c].0 {
                        Inst::Const(Lit::U64(x)) => Lit::Zp(*x, *w),
                        _ => return bad(e),
                    },
                    _ => return bad(e),
                };
                self.insts.truncate(before);
                Ok(lit)
            }
        }
    }

    fn expr(&mut self, e: &syn::Expr, expected: Option<&KType>) -> syn::Result<usize> {
        match e {
            syn::Expr::Paren(p) => self.expr(&p.expr, expected),
            syn::Expr::Group(g) => self.expr(&g.expr, expected),
            syn::Expr::Lit(l) => self.literal(&l.lit, expected),
            syn::Expr::Path(p) => self.path(p, expected),
            syn::Expr::Block(b) if b.label.is_none() && b.attrs.is_empty() => self.block(&b.block, expected),
            syn::Expr::Unary(u) => match u.op {
                syn::UnOp::Not(_) => {
                    let v = self.expr(&u.expr, expected)?;
                    let t = self.ty(v);
                    if !matches!(t, KType::Bool | KType::U32 | KType::U64 | KType::Big(_)) {
                        return err(u, format!("`!` applies to bool, u32, u64 and U<..>, not {}", self.show(&t)));
                    }
                    Ok(self.push(Inst::Not(v), t))
                }
                syn::UnOp::Neg(_) => err(u, "kernel integers are unsigned: there is no negation (use `a - b`, which wraps)"),
                _ => err(u, "dereferencing is not supported in a kernel: kernel values are not references"),
            },
            syn::Expr::Binary(b) => self.binary(b, expected),
            syn::Expr::If(i) => self.if_expr(i, expected),
            syn::Expr::Cast(c) => {
                let to = self.declared(&c.ty)?;
                if !to.is_int() && !matches!(to, KType::Zp(_) | KType::Big(_)) {
                    return err(&c.ty, "`as` converts to u32, u64, Zp<P> or U<BITS> only");
                }
                let v = self.expr(&c.expr, None)?;
                let from = self.ty(v);
                let ok = match (&from, &to) {
                    (KType::Zp(_), KType::U64) => true,
                    (KType::Zp(_), _) => false,
                    // Between widths (truncating or zero-extending), or the low bits of a U<..>.
                    (KType::Big(_), t) => t.is_int() || matches!(t, KType::Big(_)),
                    // Zero extension of an integer.
                    (f, KType::Big(_)) => f.is_int(),
                    (f, _) => f.is_scalar(),
                };
                if !ok {
                    let hint = match (&from, &to) {
                        (KType::Zp(_), _) => " (a residue converts to u64 with `.value()` or `as u64`)",
                        (KType::Big(_), KType::Zp(_)) => " (a U<..> converts to u32, u64 or another U<..>; `(x as u64) as Zp<P>` reduces its low 64 bits)",
                        (KType::Bool, KType::Big(_)) => " (convert the bool to an integer first: `(b as u64) as U<..>`)",
                        _ => "",
                    };
                    return err(c, format!("cannot convert {} to {} with `as`{hint}", self.show(&from), self.show(&to)));
                }
                Ok(self.push(Inst::Cast(v), to))
            }
            syn::Expr::Tuple(t) => {
                let hint = match expected {
                    Some(KType::Tuple(ts)) if ts.len() == t.elems.len() => Some(ts.clone()),
                    _ => None,
                };
                let mut xs = Vec::new();
                for (k, e) in t.elems.iter().enumerate() {
                    let h = hint.as_ref().map(|ts| ts[k].clone());
                    xs.push(self.expr(e, h.as_ref())?);
                }
                let ty = KType::Tuple(xs.iter().map(|x| self.ty(*x)).collect());
                Ok(self.push(Inst::Tuple(xs), ty))
            }
            syn::Expr::Field(f) => {
                let v = self.expr(&f.base, None)?;
                let syn::Member::Unnamed(idx) = &f.member else {
                    return err(&f.member, "kernel values have no named fields: tuples have `.0`, `.1`, ..");
                };
                match self.ty(v) {
                    KType::Tuple(ts) if (idx.index as usize) < ts.len() => Ok(self.extract(v, idx.index)),
                    t => err(f, format!("{} has no field {}", self.show(&t), idx.index)),
                }
            }
            syn::Expr::MethodCall(m) => self.method(m, expected),
            syn::Expr::Call(c) => self.call(c, expected),
            syn::Expr::Index(i) => self.index(i),
            syn::Expr::Assign(a) => err(a, "an assignment is a statement, not a value: write `x = ...;` on its own"),
            syn::Expr::Return(r) => err(r, "write the result as the block's last expression, without `return`"),
            syn::Expr::ForLoop(_) => err(
                e,
                "a `for` loop is a statement and produces no value: assign `let mut` variables inside it and read them after it",
            ),
            syn::Expr::While(_) | syn::Expr::Loop(_) => err(e, LOOPS),
            syn::Expr::Break(_) | syn::Expr::Continue(_) => err(e, NO_BREAK),
            syn::Expr::Match(m) => err(m.match_token, "`match` is not supported: use `if`/`else`"),
            syn::Expr::Closure(c) => err(c, "a closure can only be the operator of `.map`, `.scan_inclusive`, `.scan_exclusive` or `.reduce`"),
            syn::Expr::Macro(m) => err(m, "macros cannot be used inside a kernel"),
            syn::Expr::Reference(r) => err(r, "kernel values are not references: drop the `&`"),
            other => err(other, format!("unsupported expression. {SUPPORTED}")),
        }
    }

    fn path(&mut self, p: &syn::ExprPath, expected: Option<&KType>) -> syn::Result<usize> {
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let zp_of = |_: &Self, what: &str| -> syn::Result<Width> {
            match expected {
                Some(KType::Zp(w)) => Ok(*w),
                _ => err(p, format!("the modulus of `Zp::{what}` is unknown here: use it where a Zp<P> is expected (e.g. as a reduce's initial value or next to a Zp<P> value)")),
            }
        };
        match segs.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            [_] => {
                let ident = p.path.get_ident().expect("one segment");
                let name = ident.to_string();
                match self.lookup(ident)? {
                    Some(v) => Ok(v),
                    None => {
                        let hint = if self.sizes.contains(&name) {
                            format!("`{name}` is a size, not a value")
                        } else {
                            format!("cannot find `{name}` in this kernel: only its parameters and `let` bindings are in scope")
                        };
                        err(ident, hint)
                    }
                }
            }
            ["Zp", c @ ("ZERO" | "ONE")] => {
                let w = zp_of(self, c)?;
                Ok(self.push(Inst::Const(Lit::Zp((c == "ONE") as u64, w)), KType::Zp(w)))
            }
            ["U", c @ ("ZERO" | "ONE")] => match expected {
                Some(KType::Big(w)) => Ok(self.push(
                    Inst::Const(Lit::Big((c == "ONE") as u64, *w)),
                    KType::Big(*w),
                )),
                _ => err(
                    p,
                    format!(
                        "the width of `U::{c}` is unknown here: use it where a U<BITS> is expected"
                    ),
                ),
            },
            ["U", "MAX"] => match expected {
                Some(KType::Big(w)) => {
                    let zero = self.push(Inst::Const(Lit::Big(0, *w)), KType::Big(*w));
                    Ok(self.push(Inst::Not(zero), KType::Big(*w)))
                }
                _ => err(
                    p,
                    "the width of `U::MAX` is unknown here: use it where a U<BITS> is expected",
                ),
            },
            ["u64", "MAX"] => Ok(self.push(Inst::Const(Lit::U64(u64::MAX)), KType::U64)),
            ["u32", "MAX"] => Ok(self.push(Inst::Const(Lit::U32(u32::MAX)), KType::U32)),
            _ => err(
                p,
                format!("`{}` is not a value of this kernel", quote::quote!(#p)),
            ),
        }
    }

    fn call(&mut self, c: &syn::ExprCall, expected: Option<&KType>) -> syn::Result<usize> {
        let syn::Expr::Path(fp) = &*c.func else {
            return err(
                c,
                format!("function calls are not supported in a kernel. {SUPPORTED}"),
            );
        };
        let segs: Vec<String> = fp
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        match segs.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["iota"] => {
                if c.args.len() != 1 {
                    return err(c, "`iota(n)` takes the length: a size name, a literal or {k * N}");
                }
                let before = self.sizes.len();
                let n = length(&c.args[0], &mut self.sizes)?;
                if self.sizes.len() > before {
                    return err(&c.args[0], format!("size `{}` does not appear in any parameter, so no call could choose it", self.sizes[before]));
                }
                Ok(self.push(Inst::Iota(n), KType::Array(Box::new(KType::U64), n)))
            }
            ["Zp", "from"] => {
                let w = match self.constructed_type(&fp.path.segments[0], expected)? {
                    Some(KType::Zp(w)) => w,
                    _ => return err(c, "the modulus of `Zp::from` is unknown here: write `Zp::<P>::from(x)` or use it where a Zp<P> is expected"),
                };
                if c.args.len() != 1 {
                    return err(c, "`Zp::from(x)` takes one integer");
                }
                let x = self.expr(&c.args[0], Some(&KType::U64))?;
                let t = self.ty(x);
                if !matches!(t, KType::U32 | KType::U64 | KType::Bool) {
                    return err(&c.args[0], format!("`Zp::from` takes an integer, not {}", self.show(&t)));
                }
                Ok(self.push(Inst::Cast(x), KType::Zp(w)))
            }
            ["U", "mask"] => {
                let w = match self.constructed_type(&fp.path.segments[0], expected)? {
                    Some(KType::Big(w)) => w,
                    _ => return err(c, "the width of `U::mask` is unknown here: write `U::<BITS>::mask(len)` or use it where a U<BITS> is expected"),
                };
                if c.args.len() != 1 {
                    return err(c, "`U::<BITS>::mask(len)` takes the number of low bits to set, a u32");
                }
                let len = self.amount(&c.args[0], "the length of a mask")?;
                Ok(self.push(Inst::Mask(len), KType::Big(w)))
            }
            _ => err(c, format!("function calls are not supported in a kernel (a `#[bigfuse::op]` function is passed by name to map, scan or reduce). {SUPPORTED}")),
        }
    }

    /// A shift or rotation amount, bit index or bit-field position or length: a u32 (an integer
    /// literal is one), as in Rust's `rotate_left` and `checked_shl`.
    fn amount(&mut self, e: &syn::Expr, what: &str) -> syn::Result<usize> {
        let v = self.expr(e, Some(&KType::U32))?;
        match self.ty(v) {
            KType::U32 => Ok(v),
            t @ (KType::U64 | KType::Big(_)) => err(
                e,
                format!(
                    "{what} is a u32, not {}: convert it with `as u32`",
                    self.show(&t)
                ),
            ),
            t => err(e, format!("{what} is a u32, not {}", self.show(&t))),
        }
    }

    /// `x << k` and `x >> k`: on U<..> by a u32 amount (shifts by the width or more give 0); on
    /// u32 and u64 by an amount of the value's type, as before.
    fn shift(
        &mut self,
        b: &syn::ExprBinary,
        op: BOp,
        expected: Option<&KType>,
    ) -> syn::Result<usize> {
        let text = op_text(&b.op);
        // A bare literal shifted is a U<..> where one is expected; otherwise it takes the
        // amount's type (as for every other scalar operator).
        let literal_value = is_untyped_literal(&b.left) && !is_untyped_literal(&b.right);
        let (l, r) = if literal_value && !matches!(expected, Some(KType::Big(_))) {
            let r = self.expr(&b.right, expected)?;
            let tr = self.ty(r);
            (self.expr(&b.left, Some(&tr))?, Some(r))
        } else {
            (self.expr(&b.left, expected)?, None)
        };
        let lt = self.ty(l);
        match &lt {
            KType::Big(_) => {
                if let Some(r) = r {
                    // Only reached when the amount was checked first: a U<..> amount.
                    return err(
                        &b.right,
                        format!(
                            "`{text}` shifts by a u32, not by {}: convert the amount with `as u32`",
                            self.show(&self.ty(r))
                        ),
                    );
                }
                let k = self.amount(
                    &b.right,
                    &format!("the amount of `{text}` on {}", self.show(&lt)),
                )?;
                let op = if op == BOp::Shl {
                    Shift::Left
                } else {
                    Shift::Right
                };
                Ok(self.push(Inst::Shift(op, l, k), lt))
            }
            KType::U32 | KType::U64 => {
                let r = match r {
                    Some(r) => r,
                    None => self.expr(&b.right, Some(&lt))?,
                };
                let rt = self.ty(r);
                if rt != lt {
                    return err(
                        b,
                        format!(
                            "`{text}` needs operands of one type, but the left is {} and the right is {}",
                            self.show(&lt),
                            self.show(&rt)
                        ),
                    );
                }
                Ok(self.push(Inst::Binary(op, l, r), lt))
            }
            other => err(
                b,
                format!(
                    "`{text}` applies to U<..>, u32 and u64, not {}",
                    self.show(other)
                ),
            ),
        }
    }

    /// `xs[i]` inside a map over `iota(n)`, where `i` is the element's own index.
    fn index(&mut self, i: &syn::ExprIndex) -> syn::Result<usize> {
        let own = self.lambda.as_ref().and_then(|l| l.own_index);
        let is_own = match (&*i.index, own) {
            (syn::Expr::Path(p), Some(own)) => p.path.get_ident().is_some_and(|id| {
                self.scopes
                    .iter()
                    .rev()
                    .find_map(|s| s.get(&id.to_string()).copied())
                    == Some(own)
            }),
            _ => false,
        };
        let syn::Expr::Path(base) = &*i.expr else {
            return err(i, "only a named array can be indexed");
        };
        let Some(ident) = base.path.get_ident() else {
            return err(base, "only a named array can be indexed");
        };
        if !is_own {
            return err(i, "an array can only be read at the element's own index: inside `iota(n).map(|i| ..)`, write `xs[i]` with that `i` (other positions would need communication between threads)");
        }
        let name = ident.to_string();
        let l = self.lambda.as_ref().expect("own index implies a closure");
        let Some(outer) = l
            .outer
            .scopes
            .iter()
            .rev()
            .find_map(|s| s.get(&name).copied())
        else {
            return err(
                ident,
                format!("`{name}` is not an array of the enclosing kernel"),
            );
        };
        let ty = l.outer.types[outer].clone();
        let KType::Array(elem, n) = ty.clone() else {
            return err(
                ident,
                format!("`{name}` is {}, not an array", self.show(&ty)),
            );
        };
        if l.len != Some(n) {
            return err(
                i,
                format!(
                    "`{name}` has length {}, not the length of the mapped `iota`",
                    n.describe(&self.sizes)
                ),
            );
        }
        let key = format!("{name}[]");
        if let Some(v) = self.scopes[0].get(&key) {
            return Ok(*v);
        }
        let id = self.push(Inst::Param(key.clone()), *elem);
        self.scopes[0].insert(key, id);
        self.lambda.as_mut().unwrap().captures.push(outer);
        Ok(id)
    }

    fn method(&mut self, m: &syn::ExprMethodCall, expected: Option<&KType>) -> syn::Result<usize> {
        let name = m.method.to_string();
        if m.turbofish.is_some() {
            return err(m, "methods of kernel values take no type arguments");
        }
        let nargs = |k: usize, usage: &str| -> syn::Result<()> {
            if m.args.len() != k {
                return err(m, format!("`{usage}`"));
            }
            Ok(())
        };
        if name == "mul_wide" {
            nargs(1, "a.mul_wide(b) takes one argument: the other factor")?;
            let x = self.expr(&m.receiver, None)?;
            let tx = self.ty(x);
            let y = self.expr(&m.args[0], Some(&tx))?;
            return match (self.ty(x), self.ty(y)) {
                (KType::Big(wx), KType::Big(wy)) if wx == wy => {
                    let wide = Width {
                        factor: wx.factor * 2,
                        param: wx.param,
                    };
                    Ok(self.push(Inst::MulWide(x, y), KType::Big(wide)))
                }
                (tx, ty) => err(
                    m,
                    format!(
                        "`mul_wide` multiplies two U<..> of one width into one twice as wide, not {} and {}",
                        self.show(&tx),
                        self.show(&ty)
                    ),
                ),
            };
        }
        if name == "div_rem" {
            nargs(1, "a.div_rem(b) takes one argument: the divisor")?;
            let x = self.expr(&m.receiver, None)?;
            let tx = self.ty(x);
            let y = self.expr(&m.args[0], Some(&tx))?;
            let ty = self.ty(y);
            return match (&tx, &ty) {
                (KType::Big(_), KType::Big(_)) => {
                    let q = self.push(Inst::Binary(BOp::Div, x, y), tx.clone());
                    let r = self.push(Inst::Binary(BOp::Rem, x, y), ty.clone());
                    Ok(self.push(Inst::Tuple(vec![q, r]), KType::Tuple(vec![tx, ty])))
                }
                _ => err(
                    m,
                    format!(
                        "`div_rem` divides a U<..> by a U<..> (of any widths) into the quotient and the remainder, not {} by {}",
                        self.show(&tx),
                        self.show(&ty)
                    ),
                ),
            };
        }
        let x = self.expr(&m.receiver, None)?;
        let tx = self.ty(x);
        let bits = matches!(tx, KType::Big(_) | KType::U32 | KType::U64);
        match (&tx, name.as_str()) {
            (_, "rotate_left" | "rotate_right") if bits => {
                nargs(1, &format!("x.{name}(k) takes the amount, a u32"))?;
                let k = self.amount(&m.args[0], "the amount of a rotation")?;
                let op = if name == "rotate_left" { Shift::RotateLeft } else { Shift::RotateRight };
                Ok(self.push(Inst::Shift(op, x, k), tx))
            }
            (_, "leading_zeros" | "trailing_zeros" | "count_ones") if bits => {
                nargs(0, &format!("x.{name}() takes no arguments"))?;
                let op = match name.as_str() {
                    "leading_zeros" => Count::LeadingZeros,
                    "trailing_zeros" => Count::TrailingZeros,
                    _ => Count::Ones,
                };
                Ok(self.push(Inst::Count(op, x), KType::U32))
            }
            (_, "bit") if bits => {
                nargs(1, "x.bit(i) takes the bit's index, a u32")?;
                let i = self.amount(&m.args[0], "a bit index")?;
                Ok(self.push(Inst::Bit(x, i), KType::Bool))
            }
            (KType::Big(_), "isqrt") => {
                nargs(0, "x.isqrt() takes no arguments")?;
                Ok(self.push(Inst::Isqrt(x), tx))
            }
            (KType::Big(_), "pow_mod") => {
                nargs(2, "x.pow_mod(e, m) takes the exponent (a U<..> of any width) and the modulus (of x's type)")?;
                let e = self.expr(&m.args[0], None)?;
                if !matches!(self.ty(e), KType::Big(_)) {
                    let te = self.ty(e);
                    return err(&m.args[0], format!("the exponent of `pow_mod` is a U<..> (of any width), not {}; widen a u64 with `as U<64>`", self.show(&te)));
                }
                let md = self.expect(&m.args[1], &tx, "the modulus")?;
                Ok(self.push(Inst::PowMod(x, e, md), tx))
            }
            (KType::Big(_), "add_mod" | "sub_mod" | "mul_mod") => {
                nargs(2, &format!("a.{name}(b, m) takes the other operand and the modulus (both of a's type)"))?;
                let y = self.expect(&m.args[0], &tx, &format!("the other operand of `{name}`"))?;
                let md = self.expect(&m.args[1], &tx, "the modulus")?;
                let op = match name.as_str() {
                    "add_mod" => BOp::Add,
                    "sub_mod" => BOp::Sub,
                    _ => BOp::Mul,
                };
                Ok(self.push(Inst::ModArith(op, x, y, md), tx))
            }
            (_, "add_mod" | "sub_mod" | "mul_mod") => err(
                &m.method,
                format!(
                    "`{name}` applies to U<..>, not {} (residues modulo P compute with `+`, `-` and `*`)",
                    self.show(&tx)
                ),
            ),
            (KType::Big(_), "gcd") => {
                nargs(1, "a.gcd(b) takes the other number (of a's type)")?;
                let y = self.expect(&m.args[0], &tx, "the other operand of `gcd`")?;
                Ok(self.push(Inst::Gcd(x, y), tx))
            }
            (KType::Big(_), "inv_mod") => {
                nargs(1, "a.inv_mod(m) takes the modulus (of a's type)")?;
                let md = self.expect(&m.args[0], &tx, "the modulus")?;
                Ok(self.push(Inst::InvMod(x, md), KType::Tuple(vec![tx, KType::Bool])))
            }
            (_, "gcd" | "inv_mod") => err(
                &m.method,
                format!(
                    "`{name}` applies to U<..>, not {} (residues modulo P have `inv`)",
                    self.show(&tx)
                ),
            ),
            (_, "pow_mod") => err(
                &m.method,
                format!("`pow_mod` applies to U<..>, not {} (residues modulo P have `pow`)", self.show(&tx)),
            ),
            (_, "isqrt") => err(
                &m.method,
                format!("`isqrt` applies to U<..>, not {}", self.show(&tx)),
            ),
            (KType::Big(_), "extract_bits") => {
                nargs(2, "x.extract_bits(lo, len) takes the lowest bit's index and the field's length, both u32")?;
                let lo = self.amount(&m.args[0], "the position of a bit field")?;
                let len = self.amount(&m.args[1], "the length of a bit field")?;
                Ok(self.push(Inst::ExtractBits(x, lo, len), tx))
            }
            (KType::Big(_), "insert_bits") => {
                nargs(3, "x.insert_bits(field, lo, len) takes the field (of x's type), the lowest bit's index and the field's length (u32)")?;
                let field = self.expect(&m.args[0], &tx, "the field")?;
                let lo = self.amount(&m.args[1], "the position of a bit field")?;
                let len = self.amount(&m.args[2], "the length of a bit field")?;
                Ok(self.push(Inst::InsertBits(x, field, lo, len), tx))
            }
            (KType::U32 | KType::U64, "extract_bits" | "insert_bits") => err(
                &m.method,
                format!("`{name}` applies to U<..>: on {} write shifts and masks, e.g. `(x >> lo) & ((1 << len) - 1)`", self.show(&tx)),
            ),
            (_, "rotate_left" | "rotate_right" | "leading_zeros" | "trailing_zeros" | "count_ones" | "bit" | "extract_bits" | "insert_bits") => {
                let hint = match tx {
                    KType::Bool => " (convert a bool with `as u32`)",
                    KType::Zp(_) => " (a residue's value is `x.value()`, a u64)",
                    _ => "",
                };
                err(m, format!("`{name}` applies to U<..>, u32 and u64, not {}{hint}", self.show(&tx)))
            }
            (KType::Zp(_), "pow") => {
                nargs(1, "x.pow(e) takes the exponent, a u64")?;
                let e = self.expect(&m.args[0], &KType::U64, "the exponent")?;
                Ok(self.push(Inst::Pow(x, e), tx))
            }
            (KType::Zp(_), "inv") => {
                nargs(0, "x.inv() takes no arguments")?;
                Ok(self.push(Inst::Inv(x), tx))
            }
            (KType::Zp(_), "value") => {
                nargs(0, "x.value() takes no arguments")?;
                Ok(self.push(Inst::Cast(x), KType::U64))
            }
            (KType::Array(_, n), "zip") => {
                nargs(1, "xs.zip(ys) takes the other array")?;
                let y = self.expr(&m.args[0], None)?;
                match self.ty(y) {
                    KType::Array(ey, ny) if ny == *n => {
                        let KType::Array(ex, _) = tx.clone() else { unreachable!() };
                        Ok(self.push(Inst::Zip(vec![x, y]), KType::Array(Box::new(KType::Tuple(vec![*ex, *ey])), *n)))
                    }
                    t => err(&m.args[0], format!("zip needs an array of the same length ({}), not {}", n.describe(&self.sizes), self.show(&t))),
                }
            }
            (KType::Array(e, n), "unzip") => {
                nargs(0, "xs.unzip() takes no arguments")?;
                let KType::Tuple(ts) = &**e else {
                    return err(m, format!("unzip needs an array of tuples, not {}", self.show(&tx)));
                };
                let mut parts = Vec::new();
                for (k, t) in ts.iter().enumerate() {
                    parts.push(self.field_map(x, e, k as u32, t, *n));
                }
                let ty = KType::Tuple(parts.iter().map(|p| self.ty(*p)).collect());
                Ok(self.push(Inst::Tuple(parts), ty))
            }
            (KType::Array(e, n), "map") => {
                nargs(1, "xs.map(f) takes a closure or a #[bigfuse::op] function")?;
                let own_index = matches!(self.insts[x].0, Inst::Iota(_));
                let (f, out, captures) = self.operator(&m.args[0], &[(**e).clone()], None, true, own_index.then_some(*n))?;
                let mut args = vec![x];
                args.extend(captures);
                let out = out.unwrap_or_else(|| (**e).clone());
                let _ = expected;
                Ok(self.push(Inst::Map { f, args }, KType::Array(Box::new(out), *n)))
            }
            (KType::Array(e, _), "scan_inclusive" | "scan_exclusive" | "reduce") => {
                nargs(2, &format!("xs.{name}(op, e) takes an associative operator and its identity"))?;
                let elem = (**e).clone();
                let init = self.constant(&m.args[1], &elem)?;
                let (op, _, _) = self.operator(&m.args[0], &[elem.clone(), elem.clone()], Some(&elem), false, None)?;
                if name == "reduce" {
                    Ok(self.push(Inst::Reduce { op, init, input: x }, elem))
                } else {
                    Ok(self.push(Inst::Scan { op, init, exclusive: name == "scan_exclusive", input: x }, tx.clone()))
                }
            }
            (KType::Array(e, n), "poly_mul") if matches!(**e, KType::Zp(_)) => {
                nargs(1, "a.poly_mul(b) takes the other polynomial's coefficients")?;
                let y = self.expr(&m.args[0], Some(&tx))?;
                if self.ty(y) != tx {
                    return err(&m.args[0], format!("poly_mul needs two {}, not {}", self.show(&tx), self.show(&self.ty(y))));
                }
                let doubled = Width { factor: n.factor * 2, param: n.param };
                Ok(self.push(Inst::PolyMul(x, y), KType::Array(e.clone(), doubled)))
            }
            (KType::Array(..), other) => err(&m.method, format!("arrays have no method `{other}`: they have map, zip, unzip, scan_inclusive, scan_exclusive, reduce and (on Zp<P> coefficients) poly_mul")),
            (KType::Zp(_), other) => err(&m.method, format!("Zp<P> has no method `{other}`: it has pow, inv and value")),
            (_, other) if bits => {
                let has = if matches!(tx, KType::Big(_)) { BIG_METHODS } else { INT_METHODS };
                err(&m.method, format!("{} has no method `{other}`: it has {has}", self.show(&tx)))
            }
            _ => err(
                &m.method,
                format!("method calls (`.{}()`) are not supported on {}. {SUPPORTED}", m.method, self.show(&tx)),
            ),
        }
    }

    /// `xs.map(|t| t.k)` for field `k` of an array of tuples.
    fn field_map(&mut self, x: usize, elem: &KType, k: u32, t: &KType, n: Width) -> usize {
        let p = (Inst::Param("t".into()), elem.clone());
        let body = Body {
            insts: vec![p, (Inst::Extract(0, k), t.clone())],
            output: 1,
        };
        self.push(
            Inst::Map {
                f: OpRef::Closure(body),
                args: vec![x],
            },
            KType::Array(Box::new(t.clone()), n),
        )
    }

    /// Checks an operator argument: a closure over `params` (its result type is returned) or the
    /// path of a `#[bigfuse::op]` function. Returns the operator, its result type when known, and
    /// the kernel values it captured (extra map arguments, in order).
    fn operator(
        &mut self,
        e: &syn::Expr,
        params: &[KType],
        result: Option<&KType>,
        may_capture: bool,
        own_index: Option<Width>,
    ) -> syn::Result<(OpRef, Option<KType>, Vec<usize>)> {
        match e {
            syn::Expr::Path(p) if p.path.get_ident().is_none_or(|i| self.scopes.iter().all(|s| !s.contains_key(&i.to_string()))) => {
                Ok((OpRef::Named(p.path.clone()), result.cloned(), vec![]))
            }
            syn::Expr::Closure(c) => {
                if c.inputs.len() != params.len() {
                    return err(c, format!("this closure takes {} argument(s) but is given {}", c.inputs.len(), params.len()));
                }
                if let Some(m) = &c.movability.or(None) {
                    return err(m, "closures in a kernel are not `static`");
                }
                let mut sub = Checker {
                    sizes: std::mem::take(&mut self.sizes),
                    insts: Vec::new(),
                    scopes: vec![HashMap::new()],
                    muts: vec![HashSet::new()],
                    loops: false,
                    lambda: Some(Lambda {
                        outer: Outer {
                            scopes: {
                                let mut all = self.lambda.as_ref().map(|l| l.outer.scopes.clone()).unwrap_or_default();
                                if self.lambda.is_none() {
                                    all.extend(self.scopes.iter().cloned());
                                }
                                all
                            },
                            types: if self.lambda.is_none() {
                                self.insts.iter().map(|(_, t)| t.clone()).collect()
                            } else {
                                vec![]
                            },
                        },
                        captures: vec![],
                        may_capture: may_capture && self.lambda.is_none(),
                        own_index: None,
                        len: own_index,
                    }),
                };
                let r = (|| {
                    for (k, (pat, t)) in c.inputs.iter().zip(params).enumerate() {
                        let pat = pattern(pat, false)?;
                        let v = sub.push(Inst::Param(format!("a{k}")), t.clone());
                        if own_index.is_some() && k == 0 {
                            sub.lambda.as_mut().unwrap().own_index = Some(v);
                        }
                        sub.bind(&pat, v, &c.inputs[k])?;
                    }
                    let out = match result {
                        Some(t) => sub.expect(&c.body, t, "the operator's result")?,
                        None => sub.expr(&c.body, None)?,
                    };
                    let t = sub.ty(out);
                    if !t.is_element() {
                        return err(&c.body, format!("a closure returns a scalar or a tuple of scalars, not {}", sub.show(&t)));
                    }
                    Ok((out, t))
                })();
                self.sizes = std::mem::take(&mut sub.sizes);
                let (out, t) = r?;
                let captures = sub.lambda.take().map(|l| l.captures).unwrap_or_default();
                Ok((OpRef::Closure(Body { insts: sub.insts, output: out }), Some(t), captures))
            }
            other => err(other, "an operator is a closure (`|a, b| a + b`) or the name of a #[bigfuse::op] function"),
        }
    }

    fn block(&mut self, b: &syn::Block, expected: Option<&KType>) -> syn::Result<usize> {
        let (stmts, tail) = split_block(b)?;
        self.push_scope();
        let r = (|| {
            for s in stmts {
                self.stmt(s)?;
            }
            self.expr(tail, expected)
        })();
        self.pop_scope();
        r
    }

    fn if_expr(&mut self, i: &syn::ExprIf, expected: Option<&KType>) -> syn::Result<usize> {
        let cond = self.expr(&i.cond, Some(&KType::Bool))?;
        if self.ty(cond) != KType::Bool {
            return err(
                &i.cond,
                format!(
                    "an `if` condition must be bool, not {}",
                    self.show(&self.ty(cond))
                ),
            );
        }
        let Some((_, else_branch)) = &i.else_branch else {
            return err(
                i,
                "an `if` in a kernel selects between two values: add an `else` branch",
            );
        };
        let then = self.block(&i.then_branch, expected)?;
        let then_ty = self.ty(then);
        let other = self.expr(else_branch, Some(&then_ty))?;
        if self.ty(other) != then_ty {
            return err(
                else_branch,
                format!(
                    "both branches must have one type: this one is {} but the other is {}",
                    self.show(&self.ty(other)),
                    self.show(&then_ty)
                ),
            );
        }
        Ok(self.push(Inst::Select(cond, then, other), then_ty))
    }

    fn binary(&mut self, b: &syn::ExprBinary, expected: Option<&KType>) -> syn::Result<usize> {
        use syn::BinOp as S;
        let op = match b.op {
            S::Add(_) => BOp::Add,
            S::Sub(_) => BOp::Sub,
            S::Mul(_) => BOp::Mul,
            S::Lt(_) => BOp::Lt,
            S::Le(_) => BOp::Le,
            S::Gt(_) => BOp::Gt,
            S::Ge(_) => BOp::Ge,
            S::Eq(_) => BOp::Eq,
            S::Ne(_) => BOp::Ne,
            S::And(_) | S::BitAnd(_) => BOp::And,
            S::Or(_) | S::BitOr(_) => BOp::Or,
            S::BitXor(_) => BOp::Xor,
            S::Shl(_) => return self.shift(b, BOp::Shl, expected),
            S::Shr(_) => return self.shift(b, BOp::Shr, expected),
            S::Div(_) => BOp::Div,
            S::Rem(_) => BOp::Rem,
            _ => {
                return err(
                    b.op,
                    "a compound assignment (`x += e`) is a statement, not a value: write it on its own, ending with `;`",
                )
            }
        };
        let logical = matches!(b.op, S::And(_) | S::Or(_));
        let comparison = matches!(
            op,
            BOp::Lt | BOp::Le | BOp::Gt | BOp::Ge | BOp::Eq | BOp::Ne
        );
        // Operand types flow from a typed side to a literal side; arithmetic also from the context.
        let hint = if logical {
            Some(&KType::Bool)
        } else if comparison {
            None
        } else {
            expected
        };
        let (l, r) = if is_untyped_literal(&b.left) && !is_untyped_literal(&b.right) {
            let r = self.expr(&b.right, hint)?;
            let tr = self.ty(r);
            let l = self.expr(&b.left, Some(&tr))?;
            (l, r)
        } else {
            let l = self.expr(&b.left, hint)?;
            let tl = self.ty(l);
            let r = self.expr(&b.right, Some(&tl))?;
            (l, r)
        };
        let (lt, rt) = (self.ty(l), self.ty(r));
        if lt != rt {
            let both_big = matches!((&lt, &rt), (KType::Big(_), KType::Big(_)));
            let hint = if both_big && matches!(op, BOp::Div | BOp::Rem) {
                " (`a.div_rem(b)` takes a divisor of another width; or convert one with `as U<..>`)"
            } else if both_big {
                " (convert one with `as U<..>`, which truncates or zero-extends)"
            } else {
                ""
            };
            return err(
                b,
                format!(
                    "`{}` needs operands of one type, but the left is {} and the right is {}{hint}",
                    op_text(&b.op),
                    self.show(&lt),
                    self.show(&rt)
                ),
            );
        }
        let big = matches!(lt, KType::Big(_));
        let zp = matches!(lt, KType::Zp(_));
        if !big && !lt.is_scalar() {
            return err(
                b,
                format!(
                    "`{}` does not apply to {}: compute on arrays element by element with `.map`",
                    op_text(&b.op),
                    self.show(&lt)
                ),
            );
        }
        let result = match op {
            _ if logical => {
                if lt != KType::Bool {
                    return err(
                        b,
                        format!("`&&` and `||` need bool operands, not {}", self.show(&lt)),
                    );
                }
                KType::Bool
            }
            BOp::Add | BOp::Sub if big || zp || lt.is_int() => lt,
            BOp::Mul if big || zp => lt,
            BOp::Mul | BOp::Div | BOp::Rem if lt.is_int() || big => lt,
            BOp::Div | BOp::Rem if zp => {
                return err(
                    b.op,
                    "residues have no `/` or `%`: multiply by the inverse, `x * y.inv()`",
                )
            }
            BOp::Eq | BOp::Ne => KType::Bool,
            BOp::Lt | BOp::Le | BOp::Gt | BOp::Ge if lt != KType::Bool && !zp => KType::Bool,
            BOp::Lt | BOp::Le | BOp::Gt | BOp::Ge if zp => {
                return err(b, "residues have no order: compare `x.value()` instead")
            }
            BOp::And | BOp::Or | BOp::Xor if !zp => lt,
            _ => {
                return err(
                    b,
                    format!("`{}` does not apply to {}", op_text(&b.op), self.show(&lt)),
                )
            }
        };
        Ok(self.push(Inst::Binary(op, l, r), result))
    }
}

fn is_untyped_literal(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.suffix().is_empty(),
        syn::Expr::Paren(p) => is_untyped_literal(&p.expr),
        _ => false,
    }
}

fn op_text(op: &syn::BinOp) -> String {
    quote::quote!(#op).to_string()
}

/// The operator of a compound assignment (`+=` gives `+`), spanned like it.
fn compound_op(op: &syn::BinOp) -> Option<syn::BinOp> {
    use syn::spanned::Spanned;
    use syn::BinOp as S;
    let span = op.span();
    Some(match op {
        S::AddAssign(_) => syn::parse_quote_spanned!(span=> +),
        S::SubAssign(_) => syn::parse_quote_spanned!(span=> -),
        S::MulAssign(_) => syn::parse_quote_spanned!(span=> *),
        S::DivAssign(_) => syn::parse_quote_spanned!(span=> /),
        S::RemAssign(_) => syn::parse_quote_spanned!(span=> %),
        S::BitXorAssign(_) => syn::parse_quote_spanned!(span=> ^),
        S::BitAndAssign(_) => syn::parse_quote_spanned!(span=> &),
        S::BitOrAssign(_) => syn::parse_quote_spanned!(span=> |),
        S::ShlAssign(_) => syn::parse_quote_spanned!(span=> <<),
        S::ShrAssign(_) => syn::parse_quote_spanned!(span=> >>),
        _ => return None,
    })
}

/// Mutable variables, assignments, `if` statements and `for` loops.
impl Checker {
    fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
        self.muts.push(HashSet::new());
    }

    fn pop_scope(&mut self) {
        self.scopes.pop();
        self.muts.pop();
    }

    /// The scope of the `let mut` variable that `target` names (an error if it is anything else).
    fn assignable(&self, target: &syn::Expr) -> syn::Result<(usize, String)> {
        let ident = match target {
            syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
            _ => None,
        };
        let Some(ident) = ident else {
            return err(
                target,
                "only a `let mut` variable can be assigned, by its name (`x = ...;`): not a field, an element or a pattern",
            );
        };
        let name = ident.to_string();
        let Some(level) = self.scopes.iter().rposition(|s| s.contains_key(&name)) else {
            let outer = self
                .lambda
                .as_ref()
                .is_some_and(|l| l.outer.scopes.iter().any(|s| s.contains_key(&name)));
            return if outer {
                err(
                    ident,
                    format!("a closure cannot assign to `{name}`, which belongs to the enclosing kernel"),
                )
            } else {
                err(ident, format!("cannot find `{name}` in this kernel"))
            };
        };
        if !self.muts[level].contains(&name) {
            return err(
                ident,
                format!("`{name}` is not mutable: declare it with `let mut {name} = ...;` to assign to it"),
            );
        }
        Ok((level, name))
    }

    /// Rebinds a `let mut` variable to `v`, which must keep its type.
    fn rebind(
        &mut self,
        level: usize,
        name: String,
        v: usize,
        value: &syn::Expr,
    ) -> syn::Result<()> {
        let old = self.ty(self.scopes[level][&name]);
        let new = self.ty(v);
        if old != new {
            return err(
                value,
                format!(
                    "`{name}` is {}, and an assignment keeps a variable's type: this value is {}",
                    self.show(&old),
                    self.show(&new)
                ),
            );
        }
        self.scopes[level].insert(name, v);
        Ok(())
    }

    /// `x = e;`
    fn assign(&mut self, a: &syn::ExprAssign) -> syn::Result<()> {
        let (level, name) = self.assignable(&a.left)?;
        let t = self.ty(self.scopes[level][&name]);
        let v = self.expr(&a.right, Some(&t))?;
        self.rebind(level, name, v, &a.right)
    }

    /// `x += e;` and the like: `x = x + e;`.
    fn compound_assign(&mut self, b: &syn::ExprBinary) -> syn::Result<()> {
        let (level, name) = self.assignable(&b.left)?;
        let t = self.ty(self.scopes[level][&name]);
        let op = compound_op(&b.op).expect("callers check for a compound assignment");
        let value = syn::Expr::Binary(syn::ExprBinary {
            attrs: vec![],
            left: b.left.clone(),
            op,
            right: b.right.clone(),
        });
        let v = self.expr(&value, Some(&t))?;
        self.rebind(level, name, v, &value)
    }

    /// The statements of a block in statement position (a loop body, an `if` statement's branch).
    fn stmt_block(&mut self, b: &syn::Block) -> syn::Result<()> {
        self.push_scope();
        let r = b.stmts.iter().try_for_each(|s| self.stmt(s));
        self.pop_scope();
        r
    }

    /// `if c { x = ...; } else { ... }` as a statement: each `let mut` variable that a branch
    /// assigns becomes a selection between the two branches' values (the `else` may be absent).
    fn if_stmt(&mut self, i: &syn::ExprIf) -> syn::Result<()> {
        let cond = self.expr(&i.cond, Some(&KType::Bool))?;
        if self.ty(cond) != KType::Bool {
            return err(
                &i.cond,
                format!(
                    "an `if` condition must be bool, not {}",
                    self.show(&self.ty(cond))
                ),
            );
        }
        let before = self.scopes.clone();
        self.stmt_block(&i.then_branch)?;
        let then = std::mem::replace(&mut self.scopes, before.clone());
        if let Some((_, e)) = &i.else_branch {
            match &**e {
                syn::Expr::Block(b) if b.label.is_none() && b.attrs.is_empty() => {
                    self.stmt_block(&b.block)?
                }
                syn::Expr::If(inner) => self.if_stmt(inner)?,
                other => return err(other, "an `else` branch is a block or another `if`"),
            }
        }
        for (level, scope) in before.iter().enumerate() {
            let mut names: Vec<&String> = scope.keys().collect();
            names.sort();
            for name in names {
                let (t, e) = (then[level][name], self.scopes[level][name]);
                if t != e {
                    let v = self.push(Inst::Select(cond, t, e), self.ty(t));
                    self.scopes[level].insert(name.clone(), v);
                }
            }
        }
        Ok(())
    }

    /// The number of rounds of `for i in 0..K`: a literal, a size of the kernel (`BITS`), or a
    /// multiple of one (`2 * BITS`).
    fn loop_count(&self, e: &syn::Expr) -> syn::Result<Width> {
        const COUNT: &str = "the number of rounds is an integer literal, a size of the kernel \
                             (`BITS`, a name in its parameters' types) or a multiple of one (`2 * BITS`)";
        let lit = |e: &syn::Expr| match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => Some(i.base10_parse::<u64>().map_err(|_| {
                syn::Error::new(i.span(), "this number of rounds does not fit a u64")
            })),
            _ => None,
        };
        match e {
            syn::Expr::Paren(p) => self.loop_count(&p.expr),
            syn::Expr::Group(g) => self.loop_count(&g.expr),
            syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                syn::Stmt::Expr(e, None) => self.loop_count(e),
                _ => err(b, COUNT),
            },
            syn::Expr::Lit(_) => Ok(Width {
                factor: lit(e).expect("an integer literal").or_else(|_| err(e, COUNT))?,
                param: None,
            }),
            syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().unwrap().to_string();
                if let Some(i) = self.sizes.iter().position(|s| *s == name) {
                    return Ok(Width {
                        factor: 1,
                        param: Some(i),
                    });
                }
                if self.scopes.iter().any(|s| s.contains_key(&name)) {
                    return err(
                        p,
                        format!("`{name}` is a value, which may differ between instances; every instance runs the same rounds, so {COUNT}"),
                    );
                }
                err(
                    p,
                    format!(
                        "`{name}` is not a size of this kernel (its sizes: {}); {COUNT}",
                        if self.sizes.is_empty() {
                            "none".to_string()
                        } else {
                            self.sizes.join(", ")
                        }
                    ),
                )
            }
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Mul(_)) => {
                let l = self.loop_count(&b.left)?;
                let r = self.loop_count(&b.right)?;
                let (w, k) = match (l.param, r.param) {
                    (None, _) => (r, l.factor),
                    (_, None) => (l, r.factor),
                    _ => return err(b, format!("a product of two sizes is not a size; {COUNT}")),
                };
                let factor = w.factor.checked_mul(k);
                match factor {
                    Some(factor) => Ok(Width {
                        factor,
                        param: w.param,
                    }),
                    None => err(b, "this number of rounds does not fit a u64"),
                }
            }
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Div(_)) => err(
                b,
                "sizes cannot be divided yet (a size is a constant or a multiple of one size): for one \
                 round per 64-bit limb, declare the width as `U<{64 * L}>` and loop `for i in 0..L`",
            ),
            other => err(other, COUNT),
        }
    }

    /// `for i in 0..K { ... }`: becomes one `Inst::Loop` that carries the `let mut` variables the
    /// body assigns and captures the values it reads from outside.
    fn for_loop(&mut self, f: &syn::ExprForLoop) -> syn::Result<()> {
        if let Some(l) = &f.label {
            return err(l, NO_BREAK);
        }
        if !self.loops {
            return err(
                f.for_token,
                "`for` loops are supported in a kernel's body, not in closures or #[bigfuse::op] functions",
            );
        }
        let index = match &*f.pat {
            syn::Pat::Ident(pi)
                if pi.by_ref.is_none() && pi.mutability.is_none() && pi.subpat.is_none() =>
            {
                Some(pi.ident.to_string())
            }
            syn::Pat::Wild(_) => None,
            other => {
                return err(
                    other,
                    "the loop's index is a plain name (`for i in 0..K`; a u32) or `_`",
                )
            }
        };
        let range = match &*f.expr {
            syn::Expr::Range(r) => r,
            other => {
                return err(
                    other,
                    "a kernel loop runs over `0..K` (K a constant or a size such as BITS): it cannot iterate over values or arrays (use `.map` over an array)",
                )
            }
        };
        if !matches!(range.limits, syn::RangeLimits::HalfOpen(_)) {
            return err(range, "write the rounds as `0..K` (with `..`, not `..=`)");
        }
        match range.start.as_deref() {
            Some(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            })) if i.base10_digits() == "0" => {}
            _ => {
                return err(
                    range,
                    "a kernel loop counts from 0: write `for i in 0..K` (offset the index in the body: `let j = i + 1;`)",
                )
            }
        }
        let Some(end) = &range.end else {
            return err(range, "a kernel loop needs a number of rounds: `0..K`");
        };
        let count = self.loop_count(end)?;

        // Every `let mut` variable in scope may be carried: each gets a parameter in the body; those
        // the body reassigns are carried, the others are read-only (captured).
        let mut candidates: Vec<(String, usize, usize)> = Vec::new();
        let mut seen = HashSet::new();
        for level in (0..self.scopes.len()).rev() {
            for (name, &v) in &self.scopes[level] {
                if seen.insert(name.clone())
                    && self.muts[level].contains(name)
                    && index.as_ref() != Some(name)
                {
                    candidates.push((name.clone(), level, v));
                }
            }
        }
        candidates.sort();
        let start = self.insts.len();
        let i = self.push(Inst::LoopIndex, KType::U32);
        self.push_scope();
        let mut placeholders = Vec::new();
        for (name, _, v) in &candidates {
            let p = self.push(Inst::Param(name.clone()), self.ty(*v));
            self.scopes.last_mut().unwrap().insert(name.clone(), p);
            self.muts.last_mut().unwrap().insert(name.clone());
            placeholders.push(p);
        }
        if let Some(n) = &index {
            self.scopes.last_mut().unwrap().insert(n.clone(), i);
        }
        let r = self.stmt_block(&f.body);
        let finals: Vec<usize> = candidates
            .iter()
            .map(|(n, _, _)| self.scopes.last().unwrap()[n])
            .collect();
        self.pop_scope();
        r?;

        let carried: Vec<usize> = (0..candidates.len())
            .filter(|&k| finals[k] != placeholders[k])
            .collect();
        if carried.is_empty() {
            return err(
                f.for_token,
                "this loop assigns no `let mut` variable declared before it, so it has no effect",
            );
        }
        let body_start = start + 1 + placeholders.len();
        // The outer value that a body value stands for, if any.
        let outer_of = |r: usize| -> Option<usize> {
            if r < start {
                return Some(r);
            }
            let k = placeholders.iter().position(|&p| p == r)?;
            (!carried.contains(&k)).then_some(candidates[k].2)
        };
        let mut body: Vec<(Inst, KType)> = self.insts.split_off(body_start);
        let mut refs: Vec<usize> = carried.iter().map(|&k| finals[k]).collect();
        for (inst, _) in &mut body {
            debug_assert!(
                !matches!(inst, Inst::Param(_)),
                "no captures in loop bodies"
            );
            inst.operands_mut(&mut |r| refs.push(*r));
        }
        let mut captured: Vec<usize> = refs.iter().filter_map(|&r| outer_of(r)).collect();
        captured.sort();
        captured.dedup();
        let c = carried.len();
        let base = 1 + c + captured.len();
        let remap = |r: usize| -> usize {
            if r == start {
                0
            } else if let Some(o) = outer_of(r) {
                1 + c + captured.binary_search(&o).unwrap()
            } else if let Some(j) = carried.iter().position(|&k| placeholders[k] == r) {
                1 + j
            } else {
                base + (r - body_start)
            }
        };
        for (inst, _) in &mut body {
            inst.operands_mut(&mut |r| *r = remap(*r));
        }
        let mut insts = vec![(Inst::LoopIndex, KType::U32)];
        for &k in &carried {
            insts.push((
                Inst::Param(candidates[k].0.clone()),
                self.ty(candidates[k].2),
            ));
        }
        for (n, &o) in captured.iter().enumerate() {
            insts.push((Inst::Param(format!("c{n}")), self.ty(o)));
        }
        insts.extend(body);
        let next: Vec<usize> = carried.iter().map(|&k| remap(finals[k])).collect();
        let mut args: Vec<usize> = carried.iter().map(|&k| candidates[k].2).collect();
        args.extend(&captured);
        self.insts.truncate(start);
        let types: Vec<KType> = carried.iter().map(|&k| self.ty(candidates[k].2)).collect();
        let ty = if c == 1 {
            types[0].clone()
        } else {
            KType::Tuple(types.clone())
        };
        let l = self.push(
            Inst::Loop {
                count,
                body: insts,
                next,
                args,
            },
            ty,
        );
        for (j, &k) in carried.iter().enumerate() {
            let v = if c == 1 {
                l
            } else {
                self.push(Inst::Extract(l, j as u32), types[j].clone())
            };
            let (name, level, _) = &candidates[k];
            self.scopes[*level].insert(name.clone(), v);
        }
        Ok(())
    }
}

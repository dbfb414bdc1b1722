//! Kernel types as the macro sees them, parsed from Rust type syntax.
//!
//! Why the macro keeps its own types (KType, Width here; Lit, BOp, Inst in check.rs) instead of
//! dsl-core's Type, Size, Literal and Op: it checks a kernel while the Rust compiler expands it, so
//! every error must point at the user's tokens (`syn` spans), and it must work before any size is
//! known, on names the user wrote (`BITS`, `P`, `{2 * BITS}`), producing Rust code that builds the
//! IR later. dsl-core's types carry neither spans nor syntax. The two must agree: the generated
//! code states the macro's type for every value it builds and `Builder::expect_type` checks it
//! against dsl-core's type inference, so a disagreement is an error (naming the value) the first
//! time the kernel's IR is built, which every kernel test does.

use syn::spanned::Spanned;

/// `factor * size_param` (or the constant `factor`): the width of a `U<..>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Width {
    pub factor: u64,
    pub param: Option<usize>,
}

impl Width {
    pub fn describe(&self, sizes: &[String]) -> String {
        match self.param {
            None => self.factor.to_string(),
            Some(p) if self.factor == 1 => sizes[p].clone(),
            Some(p) => format!("{{{} * {}}}", self.factor, sizes[p]),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KType {
    Big(Width),
    /// An integer modulo the prime given by the width (`Zp<P>`).
    Zp(Width),
    Bool,
    U32,
    U64,
    Array(Box<KType>, Width),
    Tuple(Vec<KType>),
}

impl KType {
    pub fn is_int(&self) -> bool {
        matches!(self, KType::U32 | KType::U64)
    }

    /// One register: bool, u32, u64 or Zp<P>.
    pub fn is_scalar(&self) -> bool {
        matches!(self, KType::Bool | KType::U32 | KType::U64 | KType::Zp(_))
    }

    /// What an operator (closure) may take and return: scalars, big integers and tuples of them.
    pub fn is_element(&self) -> bool {
        match self {
            KType::Tuple(ts) => ts.iter().all(KType::is_element),
            KType::Big(_) => true,
            t => t.is_scalar(),
        }
    }

    pub fn describe(&self, sizes: &[String]) -> String {
        match self {
            KType::Bool => "bool".into(),
            KType::U32 => "u32".into(),
            KType::U64 => "u64".into(),
            KType::Big(w) => format!("U<{}>", w.describe(sizes)),
            KType::Zp(w) => format!("Zp<{}>", w.describe(sizes)),
            KType::Array(e, n) => format!("[{}; {}]", e.describe(sizes), n.describe(sizes)),
            KType::Tuple(ts) => {
                let inner: Vec<String> = ts.iter().map(|t| t.describe(sizes)).collect();
                if ts.len() == 1 {
                    format!("({},)", inner[0])
                } else {
                    format!("({})", inner.join(", "))
                }
            }
        }
    }
}

const TYPE_HINT: &str =
    "kernel values have the types U<BITS> (a big unsigned integer of BITS bits; BITS is a \
                         size chosen per call, or a literal multiple of 64), Zp<P> (an integer modulo the \
                         prime P, chosen per call), bool, u32, u64, and arrays [T; N] of u32, u64, bool, Zp<P> or U<BITS>";

fn size_param(name: &str, sizes: &mut Vec<String>) -> usize {
    match sizes.iter().position(|s| s == name) {
        Some(i) => i,
        None => {
            sizes.push(name.to_string());
            sizes.len() - 1
        }
    }
}

fn width_literal(lit: &syn::LitInt) -> syn::Result<u64> {
    let bits: u64 = lit.base10_parse().map_err(|_| {
        syn::Error::new(lit.span(), "the width of U<..> must be a positive integer")
    })?;
    if bits == 0 || !bits.is_multiple_of(64) {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "U<{bits}>: widths are whole 64-bit limbs; use a positive multiple of 64 such as {}",
                bits.div_ceil(64).max(1) * 64
            ),
        ));
    }
    Ok(bits)
}

/// Parses a type; new size parameters are appended to `sizes`.
pub fn parse_type(ty: &syn::Type, sizes: &mut Vec<String>) -> syn::Result<KType> {
    let unsupported = || syn::Error::new(ty.span(), format!("unsupported type: {TYPE_HINT}"));
    if let syn::Type::Paren(p) = ty {
        return parse_type(&p.elem, sizes);
    }
    if let syn::Type::Tuple(t) = ty {
        return Ok(KType::Tuple(
            t.elems
                .iter()
                .map(|e| parse_type(e, sizes))
                .collect::<syn::Result<_>>()?,
        ));
    }
    if let syn::Type::Array(a) = ty {
        let elem = parse_type(&a.elem, sizes)?;
        if !elem.is_scalar() && !matches!(elem, KType::Big(_)) {
            return Err(syn::Error::new(
                a.elem.span(),
                "array elements are u32, u64, bool, Zp<P> or U<BITS>",
            ));
        }
        let len = length(&a.len, sizes)?;
        return Ok(KType::Array(Box::new(elem), len));
    }
    let syn::Type::Path(tp) = ty else {
        if let syn::Type::Reference(_) = ty {
            return Err(syn::Error::new(
                ty.span(),
                format!("kernel parameters are values, not references: drop the `&`. {TYPE_HINT}"),
            ));
        }
        return Err(unsupported());
    };
    if tp.qself.is_some() || tp.path.segments.len() != 1 {
        return Err(unsupported());
    }
    let seg = &tp.path.segments[0];
    let name = seg.ident.to_string();
    match (name.as_str(), &seg.arguments) {
        ("bool", syn::PathArguments::None) => Ok(KType::Bool),
        ("u32", syn::PathArguments::None) => Ok(KType::U32),
        ("u64", syn::PathArguments::None) => Ok(KType::U64),
        ("U", syn::PathArguments::AngleBracketed(args)) if args.args.len() == 1 => {
            match &args.args[0] {
                syn::GenericArgument::Type(syn::Type::Path(p)) if p.path.get_ident().is_some() => {
                    let ident = p.path.get_ident().unwrap().to_string();
                    Ok(KType::Big(Width {
                        factor: 1,
                        param: Some(size_param(&ident, sizes)),
                    }))
                }
                syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(lit), ..
                })) => Ok(KType::Big(Width {
                    factor: width_literal(lit)?,
                    param: None,
                })),
                syn::GenericArgument::Const(syn::Expr::Block(b)) if b.block.stmts.len() == 1 => {
                    scaled_width(&b.block.stmts[0], sizes)
                }
                other => Err(syn::Error::new(
                    other.span(),
                    "the width of U<..> is a size name (U<BITS>), a multiple of one (U<{2 * BITS}>) \
                     or a literal multiple of 64 (U<256>)",
                )),
            }
        }
        ("Zp", syn::PathArguments::AngleBracketed(args)) if args.args.len() == 1 => {
            let modulus = match &args.args[0] {
                syn::GenericArgument::Type(syn::Type::Path(p)) if p.path.get_ident().is_some() => {
                    let ident = p.path.get_ident().unwrap().to_string();
                    Width {
                        factor: 1,
                        param: Some(size_param(&ident, sizes)),
                    }
                }
                syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(lit),
                    ..
                })) => Width {
                    factor: lit.base10_parse::<u64>().map_err(|_| {
                        syn::Error::new(lit.span(), "the modulus of Zp<..> must fit a u64")
                    })?,
                    param: None,
                },
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "the modulus of Zp<..> is a name chosen per call (Zp<P>) or a literal prime (Zp<97>)",
                    ))
                }
            };
            Ok(KType::Zp(modulus))
        }
        ("Zp", _) => Err(syn::Error::new(
            seg.span(),
            "Zp needs its modulus: Zp<P> (chosen per call) or Zp<97>",
        )),
        ("U", _) => Err(syn::Error::new(
            seg.span(),
            "U needs its width: U<BITS> or U<256>",
        )),
        ("i8" | "i16" | "i32" | "i64" | "i128" | "isize", _) => Err(syn::Error::new(
            seg.span(),
            format!("signed integers are not supported: {TYPE_HINT}"),
        )),
        ("BigUint", _) => Err(syn::Error::new(
            seg.span(),
            "inside a kernel, write U<BITS> for a big integer (callers pass BigUint values)",
        )),
        _ => Err(unsupported()),
    }
}

/// The length of an array type or of `iota(..)`: a size name, a literal or `{k * NAME}`.
pub fn length(e: &syn::Expr, sizes: &mut Vec<String>) -> syn::Result<Width> {
    match e {
        syn::Expr::Path(p) if p.path.get_ident().is_some() => Ok(Width {
            factor: 1,
            param: Some(size_param(&p.path.get_ident().unwrap().to_string(), sizes)),
        }),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(lit),
            ..
        }) => {
            let n: u64 = lit.base10_parse().map_err(|_| {
                syn::Error::new(lit.span(), "an array length is a positive integer")
            })?;
            if n == 0 {
                return Err(syn::Error::new(
                    lit.span(),
                    "an array length is a positive integer",
                ));
            }
            Ok(Width {
                factor: n,
                param: None,
            })
        }
        syn::Expr::Block(b) if b.block.stmts.len() == 1 => {
            match scaled_width(&b.block.stmts[0], sizes)? {
                KType::Big(w) => Ok(w),
                _ => unreachable!("scaled_width gives a width"),
            }
        }
        other => Err(syn::Error::new(
            other.span(),
            "an array length is a size name (N), a literal (64) or a multiple of a size ({2 * N})",
        )),
    }
}

/// `{k * NAME}` or `{NAME * k}` inside `U<..>`.
fn scaled_width(stmt: &syn::Stmt, sizes: &mut Vec<String>) -> syn::Result<KType> {
    let bad = || {
        syn::Error::new(
            stmt.span(),
            "write a scaled width as {k * NAME} with an integer k, e.g. U<{2 * BITS}>",
        )
    };
    let syn::Stmt::Expr(syn::Expr::Binary(b), None) = stmt else {
        return Err(bad());
    };
    if !matches!(b.op, syn::BinOp::Mul(_)) {
        return Err(bad());
    }
    let side = |e: &syn::Expr| -> Option<Result<u64, String>> {
        match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => Some(i.base10_parse::<u64>().map_err(|e| e.to_string())),
            _ => None,
        }
    };
    let name = |e: &syn::Expr| match e {
        syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    };
    let (k, n) = match (side(&b.left), name(&b.right), side(&b.right), name(&b.left)) {
        (Some(k), Some(n), _, _) | (_, _, Some(k), Some(n)) => (k, n),
        _ => return Err(bad()),
    };
    let k = k.map_err(|_| bad())?;
    if k == 0 {
        return Err(bad());
    }
    Ok(KType::Big(Width {
        factor: k,
        param: Some(size_param(&n, sizes)),
    }))
}

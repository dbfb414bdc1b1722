//! Type checking of a kernel function, producing straight-line SSA instructions for `expand`.

use crate::types::{parse_type, KType};
use std::collections::HashMap;

const SUPPORTED: &str = "a kernel body may use `let` bindings, `+`, `-`, `*`, `a.mul_wide(b)`, comparisons, \
                         `&&`, `||`, `!`, `&`, `|`, `^`, `<<`, `>>` (scalars), `as u32` / `as u64`, parentheses \
                         and `if`/`else` (which selects between two values)";

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
}

#[derive(Clone, Debug)]
pub enum Lit {
    Bool(bool),
    U32(u32),
    U64(u64),
}

#[derive(Clone, Debug)]
pub enum Inst {
    Param(String),
    Const(Lit),
    Binary(BOp, usize, usize),
    Not(usize),
    Select(usize, usize, usize),
    Cast(usize),
    MulWide(usize, usize),
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

struct Checker {
    sizes: Vec<String>,
    insts: Vec<(Inst, KType)>,
    scopes: Vec<HashMap<String, usize>>,
}

/// An error covering all of `tokens` (first to last token, where the compiler can show that).
fn err<T>(tokens: impl quote::ToTokens, msg: impl std::fmt::Display) -> syn::Result<T> {
    Err(syn::Error::new_spanned(tokens, msg.to_string()))
}

pub fn check(f: &syn::ItemFn) -> syn::Result<Checked> {
    let sig = &f.sig;
    if let Some(c) = &sig.constness {
        return err(c, "a kernel cannot be `const`");
    }
    if let Some(a) = &sig.asyncness {
        return err(a, "a kernel cannot be `async`");
    }
    if let Some(u) = &sig.unsafety {
        return err(u, "a kernel cannot be `unsafe`");
    }
    if !sig.generics.params.is_empty() {
        return err(
            &sig.generics,
            "a kernel takes no generic parameters: write sizes directly, as in U<BITS>; BITS becomes an argument of `run`",
        );
    }
    if let Some(v) = &sig.variadic {
        return err(v, "a kernel cannot be variadic");
    }
    let mut c = Checker {
        sizes: Vec::new(),
        insts: Vec::new(),
        scopes: vec![HashMap::new()],
    };
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
                        "kernel values are immutable: drop `mut` and bind a new name with `let`",
                    );
                }
                if pi.by_ref.is_some() || pi.subpat.is_some() {
                    return err(pi, "kernel parameters are plain names");
                }
                let ty = parse_type(&pt.ty, &mut c.sizes)?;
                let name = pi.ident.to_string();
                if params
                    .iter()
                    .any(|(p, _): &(syn::Ident, KType)| *p == pi.ident)
                {
                    return err(&pi.ident, format!("parameter `{name}` is declared twice"));
                }
                let id = c.push(Inst::Param(name.clone()), ty);
                c.scopes[0].insert(name, id);
                params.push((pi.ident.clone(), ty));
            }
        }
    }
    let (output_types, tuple_return) =
        match &sig.output {
            syn::ReturnType::Default => return err(
                &sig.ident,
                "a kernel must return a value: add `-> U<BITS>` (or bool, u32, u64, or a tuple)",
            ),
            syn::ReturnType::Type(_, ty) => match &**ty {
                syn::Type::Tuple(t) if t.elems.is_empty() => {
                    return err(t, "a kernel must return a value, not `()`")
                }
                syn::Type::Tuple(t) => (
                    t.elems
                        .iter()
                        .map(|e| c.declared(e))
                        .collect::<syn::Result<Vec<_>>>()?,
                    true,
                ),
                other => (vec![c.declared(other)?], false),
            },
        };
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
                outs.push(c.expect(e, *want, "this result")?);
            }
            outs
        }
        (e, true) => {
            return err(
                e,
                "the function returns a tuple: end the body with a tuple expression `(x, y)`",
            )
        }
        (e, false) => vec![c.expect(e, output_types[0], "the result")?],
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

impl Checker {
    fn push(&mut self, inst: Inst, ty: KType) -> usize {
        self.insts.push((inst, ty));
        self.insts.len() - 1
    }

    fn ty(&self, v: usize) -> KType {
        self.insts[v].1
    }

    fn show(&self, t: KType) -> String {
        t.describe(&self.sizes)
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

    fn lookup(&self, name: &str) -> Option<usize> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn stmt(&mut self, s: &syn::Stmt) -> syn::Result<()> {
        match s {
            syn::Stmt::Local(local) => {
                let (ident, declared) = match &local.pat {
                    syn::Pat::Ident(pi) => (pi, None),
                    syn::Pat::Type(pt) => match &*pt.pat {
                        syn::Pat::Ident(pi) => (pi, Some(self.declared(&pt.ty)?)),
                        other => return err(other, "`let` binds a plain name here, not a pattern"),
                    },
                    other => return err(other, "`let` binds a plain name here, not a pattern"),
                };
                if let Some(m) = &ident.mutability {
                    return err(m, "kernel values are immutable: drop `mut` and bind a new name with `let` instead");
                }
                let Some(init) = &local.init else {
                    return err(local, "a `let` in a kernel needs a value: `let x = ...;`");
                };
                if let Some((_, diverge)) = &init.diverge {
                    return err(diverge, "`let ... else` is not supported in a kernel");
                }
                let v = match declared {
                    Some(t) => self.expect(&init.expr, t, "this value")?,
                    None => self.expr(&init.expr, None)?,
                };
                self.scopes
                    .last_mut()
                    .unwrap()
                    .insert(ident.ident.to_string(), v);
                Ok(())
            }
            syn::Stmt::Expr(e, _) => err(
                e,
                format!("a statement here has no effect: bind it with `let`. {SUPPORTED}"),
            ),
            syn::Stmt::Item(i) => err(
                i,
                "items (fn, struct, use, ...) cannot be declared inside a kernel",
            ),
            syn::Stmt::Macro(m) => err(m, "macros cannot be used inside a kernel"),
        }
    }

    fn expect(&mut self, e: &syn::Expr, want: KType, what: &str) -> syn::Result<usize> {
        let v = self.expr(e, Some(want))?;
        if self.ty(v) != want {
            return err(
                e,
                format!(
                    "{what} is {} but {} is expected",
                    self.show(self.ty(v)),
                    self.show(want)
                ),
            );
        }
        Ok(v)
    }

    fn literal(&mut self, lit: &syn::Lit, expected: Option<KType>) -> syn::Result<usize> {
        match lit {
            syn::Lit::Bool(b) => Ok(self.push(Inst::Const(Lit::Bool(b.value)), KType::Bool)),
            syn::Lit::Int(i) => {
                let ty = match i.suffix() {
                    "u32" => KType::U32,
                    "u64" => KType::U64,
                    "" => match expected {
                        Some(t @ (KType::U32 | KType::U64)) => t,
                        Some(KType::Big(_)) => {
                            return err(
                                i,
                                "integer literals cannot be used as U<..> values yet: pass the constant as a parameter",
                            )
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

    fn expr(&mut self, e: &syn::Expr, expected: Option<KType>) -> syn::Result<usize> {
        match e {
            syn::Expr::Paren(p) => self.expr(&p.expr, expected),
            syn::Expr::Group(g) => self.expr(&g.expr, expected),
            syn::Expr::Lit(l) => self.literal(&l.lit, expected),
            syn::Expr::Path(p) => {
                let Some(ident) = p.path.get_ident() else {
                    return err(p, format!("`{}` is not a value of this kernel", quote::quote!(#p)));
                };
                let name = ident.to_string();
                self.lookup(&name).map_or_else(
                    || {
                        let hint = if self.sizes.contains(&name) {
                            format!("`{name}` is a size, not a value")
                        } else {
                            format!("cannot find `{name}` in this kernel: only its parameters and `let` bindings are in scope")
                        };
                        err(ident, hint)
                    },
                    Ok,
                )
            }
            syn::Expr::Block(b) if b.label.is_none() && b.attrs.is_empty() => self.block(&b.block, expected),
            syn::Expr::Unary(u) => match u.op {
                syn::UnOp::Not(_) => {
                    let v = self.expr(&u.expr, expected)?;
                    if matches!(self.ty(v), KType::Big(_)) {
                        return err(u, "`!` (bitwise not) on U<..> is not supported yet");
                    }
                    let t = self.ty(v);
                    Ok(self.push(Inst::Not(v), t))
                }
                syn::UnOp::Neg(_) => err(u, "kernel integers are unsigned: there is no negation (use `a - b`, which wraps)"),
                _ => err(u, "dereferencing is not supported in a kernel: kernel values are not references"),
            },
            syn::Expr::Binary(b) => self.binary(b, expected),
            syn::Expr::If(i) => self.if_expr(i, expected),
            syn::Expr::Cast(c) => {
                let to = self.declared(&c.ty)?;
                if !to.is_int() {
                    return err(&c.ty, "`as` converts to u32 or u64 only");
                }
                let v = self.expr(&c.expr, None)?;
                if !self.ty(v).is_scalar() {
                    return err(c, format!("cannot convert {} with `as`", self.show(self.ty(v))));
                }
                Ok(self.push(Inst::Cast(v), to))
            }
            syn::Expr::MethodCall(m) if m.method == "mul_wide" => {
                if m.args.len() != 1 || m.turbofish.is_some() {
                    return err(m, "`a.mul_wide(b)` takes one argument: the other factor");
                }
                let x = self.expr(&m.receiver, None)?;
                let y = self.expr(&m.args[0], Some(self.ty(x)))?;
                match (self.ty(x), self.ty(y)) {
                    (KType::Big(wx), KType::Big(wy)) if wx == wy => {
                        let wide = crate::types::Width {
                            factor: wx.factor * 2,
                            param: wx.param,
                        };
                        Ok(self.push(Inst::MulWide(x, y), KType::Big(wide)))
                    }
                    (tx, ty) => err(
                        m,
                        format!(
                            "`mul_wide` multiplies two U<..> of one width into one twice as wide, not {} and {}",
                            self.show(tx),
                            self.show(ty)
                        ),
                    ),
                }
            }
            syn::Expr::MethodCall(m) => err(
                &m.method,
                format!("method calls (`.{}()`) are not supported in a kernel. {SUPPORTED}", m.method),
            ),
            syn::Expr::Call(c) => err(c, format!("function calls are not supported in a kernel: write the expression inline. {SUPPORTED}")),
            syn::Expr::Assign(a) => err(a, "kernel values are immutable: bind a new name with `let` instead of assigning"),
            syn::Expr::Return(r) => err(r, "write the result as the block's last expression, without `return`"),
            syn::Expr::ForLoop(_) | syn::Expr::While(_) | syn::Expr::Loop(_) => err(
                e,
                "loops are not supported in a kernel: the whole function is one data-parallel expression",
            ),
            syn::Expr::Match(m) => err(m.match_token, "`match` is not supported: use `if`/`else`"),
            syn::Expr::Closure(c) => err(c, "closures are not supported in this kernel body"),
            syn::Expr::Index(i) => err(i, "indexing is not supported: a U<..> is one number, not an array"),
            syn::Expr::Tuple(t) => err(t, "tuples can only be the kernel's result"),
            syn::Expr::Macro(m) => err(m, "macros cannot be used inside a kernel"),
            syn::Expr::Reference(r) => err(r, "kernel values are not references: drop the `&`"),
            other => err(other, format!("unsupported expression. {SUPPORTED}")),
        }
    }

    fn block(&mut self, b: &syn::Block, expected: Option<KType>) -> syn::Result<usize> {
        let (stmts, tail) = split_block(b)?;
        self.scopes.push(HashMap::new());
        let r = (|| {
            for s in stmts {
                self.stmt(s)?;
            }
            self.expr(tail, expected)
        })();
        self.scopes.pop();
        r
    }

    fn if_expr(&mut self, i: &syn::ExprIf, expected: Option<KType>) -> syn::Result<usize> {
        let cond = self.expr(&i.cond, Some(KType::Bool))?;
        if self.ty(cond) != KType::Bool {
            return err(
                &i.cond,
                format!(
                    "an `if` condition must be bool, not {}",
                    self.show(self.ty(cond))
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
        let other = self.expr(else_branch, Some(then_ty))?;
        if self.ty(other) != then_ty {
            return err(
                else_branch,
                format!(
                    "both branches must have one type: this one is {} but the other is {}",
                    self.show(self.ty(other)),
                    self.show(then_ty)
                ),
            );
        }
        Ok(self.push(Inst::Select(cond, then, other), then_ty))
    }

    fn binary(&mut self, b: &syn::ExprBinary, expected: Option<KType>) -> syn::Result<usize> {
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
            S::Shl(_) => BOp::Shl,
            S::Shr(_) => BOp::Shr,
            S::Div(_) | S::Rem(_) => {
                return err(b.op, "division and remainder are not supported in a kernel")
            }
            _ => {
                return err(
                    b.op,
                    "compound assignment is not supported: kernel values are immutable, bind a new name with `let`",
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
            Some(KType::Bool)
        } else if comparison {
            None
        } else {
            expected
        };
        let (l, r) = if is_untyped_literal(&b.left) && !is_untyped_literal(&b.right) {
            let r = self.expr(&b.right, hint)?;
            let l = self.expr(&b.left, Some(self.ty(r)))?;
            (l, r)
        } else {
            let l = self.expr(&b.left, hint)?;
            let r = self.expr(&b.right, Some(self.ty(l)))?;
            (l, r)
        };
        let (lt, rt) = (self.ty(l), self.ty(r));
        if lt != rt {
            return err(
                b,
                format!(
                    "`{}` needs operands of one type, but the left is {} and the right is {}",
                    op_text(&b.op),
                    self.show(lt),
                    self.show(rt)
                ),
            );
        }
        let big = matches!(lt, KType::Big(_));
        let result = match op {
            _ if logical => {
                if lt != KType::Bool {
                    return err(
                        b,
                        format!("`&&` and `||` need bool operands, not {}", self.show(lt)),
                    );
                }
                KType::Bool
            }
            BOp::Add | BOp::Sub if big || lt.is_int() => lt,
            BOp::Mul if big => lt,
            BOp::Mul | BOp::Shl | BOp::Shr if lt.is_int() => lt,
            BOp::Eq | BOp::Ne => KType::Bool,
            BOp::Lt | BOp::Le | BOp::Gt | BOp::Ge if lt != KType::Bool => KType::Bool,
            BOp::And | BOp::Or | BOp::Xor if !big => lt,
            BOp::And | BOp::Or | BOp::Xor => {
                return err(b.op, "bitwise operations on U<..> are not supported yet")
            }
            _ => {
                return err(
                    b,
                    format!("`{}` does not apply to {}", op_text(&b.op), self.show(lt)),
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

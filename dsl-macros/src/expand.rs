//! Expansion: the checked kernel becomes a module with IR-building code and typed entry points.

use crate::check::{BOp, Checked, CheckedOp, Count, Inst, Lit, OpRef, Shift};
use crate::types::{KType, Width};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

/// How generated code names a size: by its index among the kernel's sizes, or (in an operator,
/// which is built for whichever kernel uses it) by looking its name up among the kernel's.
#[derive(Clone, Copy)]
enum Sizes<'a> {
    Kernel,
    Op(&'a [String]),
}

fn size_tokens(w: &Width, m: Sizes) -> TokenStream {
    let f = w.factor;
    match (w.param, m) {
        (None, _) => quote!(__ir::Size::lit(#f)),
        (Some(p), Sizes::Kernel) => {
            let p = p as u32;
            quote!(__ir::Size::scaled(#f, #p))
        }
        (Some(p), Sizes::Op(names)) => {
            let n = &names[p];
            quote!(__ir::Size::scaled(#f, __size(#n)?))
        }
    }
}

fn ir_type(t: &KType, m: Sizes) -> TokenStream {
    match t {
        KType::Bool => quote!(__ir::Type::Bool),
        KType::U32 => quote!(__ir::Type::U32),
        KType::U64 => quote!(__ir::Type::U64),
        KType::Big(w) => {
            let s = size_tokens(w, m);
            quote!(__ir::Type::Big(#s))
        }
        KType::Zp(w) => {
            let s = size_tokens(w, m);
            quote!(__ir::Type::Zp(#s))
        }
        KType::Array(e, n) => {
            let e = ir_type(e, m);
            let s = size_tokens(n, m);
            quote!(__ir::Type::array(#e, #s))
        }
        KType::Tuple(ts) => {
            let ts: Vec<TokenStream> = ts.iter().map(|t| ir_type(t, m)).collect();
            quote!(__ir::Type::Tuple(::std::vec![#(#ts),*]))
        }
    }
}

fn lit_tokens(l: &Lit, m: Sizes) -> TokenStream {
    match l {
        Lit::Bool(x) => quote!(__ir::Literal::Bool(#x)),
        Lit::U32(x) => quote!(__ir::Literal::U32(#x)),
        Lit::U64(x) => quote!(__ir::Literal::U64(#x)),
        Lit::Zp(x, w) => {
            let s = size_tokens(w, m);
            quote!(__ir::Literal::Zp(#x, #s))
        }
        Lit::Big(x, w) => {
            let s = size_tokens(w, m);
            quote!(__ir::Literal::Big(::std::vec![#x], #s))
        }
        Lit::Tuple(ls) => {
            let ls: Vec<TokenStream> = ls.iter().map(|l| lit_tokens(l, m)).collect();
            quote!(__ir::Literal::Tuple(::std::vec![#(#ls),*]))
        }
    }
}

/// A path written in the kernel's scope, as seen from inside the generated module.
fn from_module(p: &syn::Path) -> TokenStream {
    let first = p.segments.first().map(|s| s.ident.to_string());
    if p.leading_colon.is_some() || first.as_deref() == Some("crate") {
        quote!(#p)
    } else if first.as_deref() == Some("self") {
        let rest: Vec<&syn::PathSegment> = p.segments.iter().skip(1).collect();
        quote!(super::#(#rest)::*)
    } else {
        quote!(super::#p)
    }
}

/// An operator as an expression building its lambda (`__sizes` names the kernel's sizes).
fn operator_tokens(
    op: &OpRef,
    m: Sizes,
    checks: &mut Vec<TokenStream>,
    associative: bool,
) -> TokenStream {
    match op {
        OpRef::Closure(body) => {
            let stmts = body_code(&body.insts, m, checks);
            let out = format_ident!("v{}", body.output);
            quote!({
                let mut b = __ir::Builder::lambda();
                #(#stmts)*
                b.finish(&[#out])?
            })
        }
        OpRef::Named(path) => {
            let p = from_module(path);
            if associative {
                let name = quote!(#path).to_string().replace(' ', "");
                let msg = format!(
                    "`{name}` is used as a scan or reduce operator, which must be associative: declare it with #[bigfuse::op(associative)]"
                );
                checks.push(quote!(
                    const _: () = ::core::assert!(#p::ASSOCIATIVE, #msg);
                ));
            }
            quote!(#p::lambda(__sizes)?)
        }
    }
}

/// IR-building statements for straight-line instructions (`v<i>` is instruction i).
fn body_code(insts: &[(Inst, KType)], m: Sizes, checks: &mut Vec<TokenStream>) -> Vec<TokenStream> {
    let mut body = Vec::new();
    for (i, (inst, ty)) in insts.iter().enumerate() {
        let v = format_ident!("v{}", i);
        let id = |x: &usize| format_ident!("v{}", *x);
        let ids = |xs: &[usize]| -> Vec<syn::Ident> { xs.iter().map(id).collect() };
        let call = match inst {
            Inst::Param(p) => {
                let t = ir_type(ty, m);
                quote!(b.param(#p, #t))
            }
            Inst::Const(l) => {
                let l = lit_tokens(l, m);
                quote!(b.constant(#l))
            }
            Inst::Binary(op, a, c) => {
                let (a, c) = (id(a), id(c));
                match op {
                    BOp::Add => quote!(b.add(#a, #c)?),
                    BOp::Sub => quote!(b.sub(#a, #c)?),
                    BOp::Mul => quote!(b.mul(#a, #c)?),
                    BOp::Lt => quote!(b.lt(#a, #c)?),
                    BOp::Le => quote!(b.le(#a, #c)?),
                    BOp::Gt => quote!(b.gt(#a, #c)?),
                    BOp::Ge => quote!(b.ge(#a, #c)?),
                    BOp::Eq => quote!(b.eq(#a, #c)?),
                    BOp::Ne => quote!(b.ne(#a, #c)?),
                    BOp::And => quote!(b.and(#a, #c)?),
                    BOp::Or => quote!(b.or(#a, #c)?),
                    BOp::Xor => quote!(b.xor(#a, #c)?),
                    BOp::Shl => quote!(b.binary(__ir::BinOp::Shl, #a, #c)?),
                    BOp::Shr => quote!(b.binary(__ir::BinOp::Shr, #a, #c)?),
                    BOp::Div => quote!(b.div(#a, #c)?),
                    BOp::Rem => quote!(b.rem(#a, #c)?),
                }
            }
            Inst::Shift(op, a, k) => {
                let (a, k) = (id(a), id(k));
                let op = match op {
                    Shift::Left => quote!(__ir::ShiftOp::Shl),
                    Shift::Right => quote!(__ir::ShiftOp::Shr),
                    Shift::RotateLeft => quote!(__ir::ShiftOp::Rotl),
                    Shift::RotateRight => quote!(__ir::ShiftOp::Rotr),
                };
                quote!(b.shift(#op, #a, #k)?)
            }
            Inst::Count(op, a) => {
                let a = id(a);
                let op = match op {
                    Count::LeadingZeros => quote!(__ir::UnOp::LeadingZeros),
                    Count::TrailingZeros => quote!(__ir::UnOp::TrailingZeros),
                    Count::Ones => quote!(__ir::UnOp::CountOnes),
                };
                quote!(b.count(#op, #a)?)
            }
            Inst::Bit(a, i) => {
                let (a, i) = (id(a), id(i));
                quote!(b.bit(#a, #i)?)
            }
            Inst::Mask(len) => {
                let len = id(len);
                let t = ir_type(ty, m);
                quote!(b.mask(&#t, #len)?)
            }
            Inst::ExtractBits(a, lo, len) => {
                let (a, lo, len) = (id(a), id(lo), id(len));
                quote!(b.extract_bits(#a, #lo, #len)?)
            }
            Inst::InsertBits(a, f, lo, len) => {
                let (a, f, lo, len) = (id(a), id(f), id(lo), id(len));
                quote!(b.insert_bits(#a, #f, #lo, #len)?)
            }
            Inst::Isqrt(a) => {
                let a = id(a);
                quote!(b.isqrt(#a)?)
            }
            Inst::PowMod(x, e, md) => {
                let (x, e, md) = (id(x), id(e), id(md));
                quote!(b.pow_mod(#x, #e, #md)?)
            }
            Inst::ModArith(op, x, y, md) => {
                let (x, y, md) = (id(x), id(y), id(md));
                let op = match op {
                    BOp::Add => quote!(::bigfuse::ir::BinOp::Add),
                    BOp::Sub => quote!(::bigfuse::ir::BinOp::Sub),
                    _ => quote!(::bigfuse::ir::BinOp::Mul),
                };
                quote!(b.big_mod(#op, #x, #y, #md)?)
            }
            Inst::Gcd(x, y) => {
                let (x, y) = (id(x), id(y));
                quote!(b.gcd(#x, #y)?)
            }
            Inst::InvMod(x, md) => {
                let (x, md) = (id(x), id(md));
                quote!(b.inv_mod(#x, #md)?)
            }
            Inst::Not(a) => {
                let a = id(a);
                quote!(b.not(#a)?)
            }
            Inst::Select(c, a, e) => {
                let (c, a, e) = (id(c), id(a), id(e));
                quote!(b.select(#c, #a, #e)?)
            }
            Inst::MulWide(a, c) => {
                let (a, c) = (id(a), id(c));
                quote!(b.mul_wide(#a, #c)?)
            }
            Inst::Cast(a) => {
                let a = id(a);
                let t = ir_type(ty, m);
                quote!(b.cast(#a, #t)?)
            }
            Inst::Tuple(xs) => {
                let xs = ids(xs);
                quote!(b.tuple(&[#(#xs),*])?)
            }
            Inst::Extract(x, k) => {
                let x = id(x);
                quote!(b.extract(#x, #k)?)
            }
            Inst::Zip(xs) => {
                let xs = ids(xs);
                quote!(b.zip(&[#(#xs),*])?)
            }
            Inst::Iota(n) => {
                let n = size_tokens(n, m);
                quote!(b.iota(#n)?)
            }
            Inst::Pow(x, e) => {
                let (x, e) = (id(x), id(e));
                quote!(b.zp_pow(#x, #e)?)
            }
            Inst::Inv(x) => {
                let x = id(x);
                quote!(b.zp_inv(#x)?)
            }
            Inst::PolyMul(x, y) => {
                let (x, y) = (id(x), id(y));
                quote!(b.poly_mul(#x, #y)?)
            }
            Inst::LoopIndex => quote!(__ir::ValueId(0)),
            Inst::Loop {
                count,
                body: insts,
                next,
                args,
            } => {
                let stmts = body_code(insts, m, checks);
                let next = ids(next);
                let (carried, captured) = args.split_at(next.len());
                let (carried, captured) = (ids(carried), ids(captured));
                let count = size_tokens(count, m);
                quote!({
                    let __body = {
                        let mut b = __ir::Builder::loop_body(&b);
                        #(#stmts)*
                        b.finish(&[#(#next),*])?
                    };
                    b.repeat(#count, __body, &[#(#carried),*], &[#(#captured),*])?
                })
            }
            Inst::Map { f, args } => {
                let f = operator_tokens(f, m, checks, false);
                let args = ids(args);
                quote!({
                    let __f = #f;
                    b.map(__f, &[#(#args),*])?
                })
            }
            Inst::Scan {
                op,
                init,
                exclusive,
                input,
            } => {
                let f = operator_tokens(op, m, checks, true);
                let init = lit_tokens(init, m);
                let input = id(input);
                quote!({
                    let __f = #f;
                    b.scan(__f, #init, #exclusive, #input, ::core::option::Option::None)?
                })
            }
            Inst::Reduce { op, init, input } => {
                let f = operator_tokens(op, m, checks, true);
                let init = lit_tokens(init, m);
                let input = id(input);
                quote!({
                    let __f = #f;
                    b.reduce(__f, #init, #input)?
                })
            }
        };
        let t = ir_type(ty, m);
        body.push(quote!(let #v = #call; b.expect_type(#v, &#t)?;));
    }
    body
}

fn rust_elem(t: &KType) -> TokenStream {
    match t {
        KType::Bool => quote!(bool),
        KType::U32 => quote!(u32),
        KType::U64 | KType::Zp(_) => quote!(u64),
        KType::Big(_) => quote!(::bigfuse::BigUint),
        KType::Array(e, _) => rust_elem(e),
        KType::Tuple(_) => {
            unreachable!("the checker refuses tuple parameters and nested tuple results")
        }
    }
}

/// The marker of which Rust values a parameter or result of this type takes
/// (`bigfuse::kind::*`, see `IntoArg`).
fn kind_tokens(t: &KType) -> TokenStream {
    match t {
        KType::Bool => quote!(::bigfuse::kind::Bool),
        KType::U32 => quote!(::bigfuse::kind::U32),
        KType::U64 | KType::Zp(_) => quote!(::bigfuse::kind::U64),
        KType::Big(_) => quote!(::bigfuse::kind::Big),
        KType::Array(e, _) => kind_tokens(e),
        KType::Tuple(_) => {
            unreachable!("the checker refuses tuple parameters and nested tuple results")
        }
    }
}

/// The `Out` variant that collects a result of this type as `run` returns it.
fn out_variant(t: &KType) -> TokenStream {
    match t {
        KType::Bool => quote!(::bigfuse::Out::Bool),
        KType::U32 => quote!(::bigfuse::Out::U32),
        KType::U64 | KType::Zp(_) => quote!(::bigfuse::Out::U64),
        KType::Big(_) => quote!(::bigfuse::Out::Big),
        KType::Array(e, _) => out_variant(e),
        KType::Tuple(_) => unreachable!("the checker refuses nested tuple results"),
    }
}

/// The doc comments of `f`, which may have no other attribute.
fn doc_attributes<'a>(f: &'a syn::ItemFn, attr: &str) -> syn::Result<Vec<&'a syn::Attribute>> {
    if let Some(other) = f.attrs.iter().find(|a| !a.path().is_ident("doc")) {
        return Err(syn::Error::new_spanned(
            other,
            format!("#[bigfuse::{attr}] functions take only doc comments as attributes"),
        ));
    }
    Ok(f.attrs.iter().collect())
}

/// `#[bigfuse::op]`: a module `name` with `lambda(kernel_sizes)` building the operator's IR for a
/// kernel with those size names, and `ASSOCIATIVE`, which scans and reductions require.
pub fn expand_op(f: &syn::ItemFn, k: &CheckedOp, associative: bool) -> syn::Result<TokenStream> {
    let name = &f.sig.ident;
    let name_str = name.to_string();
    let vis = &f.vis;
    let docs = doc_attributes(f, "op")?;
    let mut checks = Vec::new();
    let stmts = body_code(&k.body.insts, Sizes::Op(&k.sizes), &mut checks);
    let out = format_ident!("v{}", k.body.output);
    let size_names = &k.sizes;
    let sig_doc = format!(
        "The operator `{name_str}`: ({}) -> {}{}.",
        k.param_types
            .iter()
            .map(|t| t.describe(&k.sizes))
            .collect::<Vec<_>>()
            .join(", "),
        k.output_type.describe(&k.sizes),
        if associative {
            ", declared associative"
        } else {
            ""
        }
    );
    Ok(quote! {
        #(#docs)*
        #[doc = #sig_doc]
        #[allow(non_snake_case, dead_code, unused_variables, clippy::all)]
        #vis mod #name {
            use ::bigfuse::__private::ir as __ir;

            /// Whether the operator is declared associative (required by scans and reductions).
            pub const ASSOCIATIVE: bool = #associative;

            /// The operator's IR for a kernel whose size parameters are `kernel_sizes`.
            pub fn lambda(kernel_sizes: &[&str]) -> ::core::result::Result<__ir::Func, __ir::IrError> {
                let __size = |n: &str| -> ::core::result::Result<u32, __ir::IrError> {
                    kernel_sizes.iter().position(|k| *k == n).map(|i| i as u32).ok_or_else(|| __ir::IrError::Type {
                        func: #name_str.to_string(),
                        message: ::std::format!("the operator uses the size `{}`, which the kernel using it does not have (its sizes: {:?})", n, kernel_sizes),
                    })
                };
                let _ = &__size;
                let _: &[&str] = &[#(#size_names),*];
                let __sizes = kernel_sizes;
                let mut b = __ir::Builder::lambda();
                #(#stmts)*
                b.finish(&[#out])
            }
        }
    })
}

pub fn expand(f: &syn::ItemFn, k: &Checked) -> syn::Result<TokenStream> {
    let name = &k.name;
    let name_str = name.to_string();
    let vis = &f.vis;
    let docs = doc_attributes(f, "kernel")?;
    for (p, _) in &k.params {
        if p == "dev" {
            return Err(syn::Error::new(
                p.span(),
                "`dev` is the name of run's device argument: rename this parameter",
            ));
        }
    }

    let sizes = &k.sizes;
    let size_args: Vec<syn::Ident> = sizes
        .iter()
        .map(|s| {
            let lower = s.to_lowercase();
            if k.params.iter().any(|(p, _)| *p == lower) || lower == "dev" {
                format_ident!("{}_size", lower)
            } else {
                syn::Ident::new(&lower, Span::call_site())
            }
        })
        .collect();

    // IR-building statements.
    let mut checks = Vec::new();
    let body = body_code(&k.insts, Sizes::Kernel, &mut checks);
    let outs: Vec<syn::Ident> = k.outputs.iter().map(|o| format_ident!("v{}", *o)).collect();

    let params: Vec<TokenStream> = k
        .params
        .iter()
        .map(|(p, t)| {
            let kind = kind_tokens(t);
            quote!(#p: impl ::bigfuse::IntoArg<'a, #kind>)
        })
        .collect();
    let param_names: Vec<&syn::Ident> = k.params.iter().map(|(p, _)| p).collect();
    let args = quote!(&[#(::bigfuse::IntoArg::into_arg(#param_names)),*]);
    let results: Vec<syn::Ident> = (0..k.output_types.len())
        .map(|i| format_ident!("__r{}", i))
        .collect();
    let ret_elems: Vec<TokenStream> = k
        .output_types
        .iter()
        .map(|t| {
            let e = rust_elem(t);
            quote!(::std::vec::Vec<#e>)
        })
        .collect();
    let out_vars: Vec<TokenStream> = k.output_types.iter().map(out_variant).collect();
    // `out` (or `out0`, `out1`, ... for a tuple), unless a parameter has that name.
    let out_names: Vec<syn::Ident> = (0..k.output_types.len())
        .map(|i| {
            let base = if k.tuple_return {
                format!("out{i}")
            } else {
                "out".to_string()
            };
            if k.params.iter().any(|(p, _)| *p == base) {
                format_ident!("result_{}", base)
            } else {
                format_ident!("{}", base)
            }
        })
        .collect();
    let out_params: Vec<TokenStream> = k
        .output_types
        .iter()
        .zip(&out_names)
        .map(|(t, name)| {
            let kind = kind_tokens(t);
            quote!(#name: impl ::bigfuse::IntoOut<'o, #kind>)
        })
        .collect();
    let batches: Vec<syn::Ident> = (0..k.output_types.len())
        .map(|i| format_ident!("__b{}", i))
        .collect();
    let (ret_ty, ret_val, batch_ty, batch_val) = if k.tuple_return {
        let bt: Vec<TokenStream> = batches.iter().map(|_| quote!(::bigfuse::Batch)).collect();
        (
            quote!((#(#ret_elems),*)),
            quote!((#(#results),*)),
            quote!((#(#bt),*)),
            quote!((#(#batches),*)),
        )
    } else {
        (
            ret_elems[0].clone(),
            quote!(__r0),
            quote!(::bigfuse::Batch),
            quote!(__b0),
        )
    };
    let sizes_doc =
        if sizes.is_empty() {
            String::new()
        } else {
            format!(
            " The size(s) {} are chosen per call; the kernel is specialized and cached for each.",
            sizes.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
        )
        };
    let run_doc = format!(
        "Runs `{name_str}` over a batch: one value per instance in each argument (all of one length; \
         big integers as `BigUint` or as little-endian `u64` limbs; or a `Batch` on the device). \
         `dev` is a `Device`, or `Devices` that share the batch (host data only).{sizes_doc}"
    );
    let run_into_doc = format!(
        "Runs `{name_str}` over a batch like `run`, writing each result into a vector you keep \
         (`Vec<BigUint>`, or `Vec<u64>` for the limbs of big integers): resized, its allocations reused."
    );
    let launch_doc = format!(
        "Launches `{name_str}` and returns its result(s) as `Batch`es on the device, without waiting: \
         pass batches (or host data, uploaded first) and chain launches to keep intermediates on the \
         device; reading a batch waits for the kernels that compute it."
    );

    Ok(quote! {
        #(#docs)*
        #[allow(non_snake_case, dead_code, clippy::too_many_arguments)]
        #vis mod #name {
            use ::bigfuse::__private::ir as __ir;

            /// The kernel's IR, with symbolic sizes.
            pub fn program() -> ::core::result::Result<__ir::Func, __ir::IrError> {
                let __sizes: &[&str] = &[#(#sizes),*];
                let _ = __sizes;
                #(#checks)*
                let mut b = __ir::Builder::new(#name_str, __sizes);
                #(#body)*
                b.finish(&[#(#outs),*])
            }

            /// The kernel, built once per process.
            pub fn kernel() -> ::bigfuse::Result<&'static ::bigfuse::Kernel> {
                static KERNEL: ::std::sync::OnceLock<::bigfuse::Kernel> = ::std::sync::OnceLock::new();
                if let ::core::option::Option::Some(k) = KERNEL.get() {
                    return ::core::result::Result::Ok(k);
                }
                let k = ::bigfuse::Kernel::new(program()?)?;
                ::core::result::Result::Ok(KERNEL.get_or_init(|| k))
            }

            #[doc = #run_doc]
            pub fn run<'a>(dev: &impl ::bigfuse::RunOn, #(#size_args: u64,)* #(#params),*) -> ::bigfuse::Result<#ret_ty> {
                #(let mut #results = ::std::vec::Vec::new();)*
                ::bigfuse::RunOn::run_into(dev, kernel()?, &[#(#size_args),*], #args, &mut [#(#out_vars(&mut #results)),*])?;
                ::core::result::Result::Ok(#ret_val)
            }

            #[doc = #run_into_doc]
            pub fn run_into<'a, 'o>(dev: &impl ::bigfuse::RunOn, #(#size_args: u64,)* #(#params,)* #(#out_params),*) -> ::bigfuse::Result<()> {
                ::bigfuse::RunOn::run_into(dev, kernel()?, &[#(#size_args),*], #args, &mut [#(::bigfuse::IntoOut::into_out(#out_names)),*])
            }

            #[doc = #launch_doc]
            pub fn launch<'a>(dev: &::bigfuse::Device, #(#size_args: u64,)* #(#params),*) -> ::bigfuse::Result<#batch_ty> {
                let mut __batches = kernel()?.launch(dev, &[#(#size_args),*], #args)?.into_iter();
                #(let #batches = __batches.next().ok_or_else(|| ::bigfuse::Error::Argument {
                    kernel: #name_str.into(),
                    message: "internal: a result batch is missing".into(),
                })?;)*
                ::core::result::Result::Ok(#batch_val)
            }

            /// Compiles and loads the tuned kernel for these sizes, waiting for it (nothing to
            /// do on the CPU backend): later calls neither compile nor run the compact form that
            /// serves first calls while the tuned kernel compiles (`bigfuse::runtime::tiers`).
            /// Call it before timing calls.
            pub fn prepare(dev: &::bigfuse::Device, #(#size_args: u64),*) -> ::bigfuse::Result<()> {
                kernel()?.prepare_on(dev, &[#(#size_args),*])
            }

            /// Every compiler pass's output and decision for these sizes (and, on a GPU, the
            /// compiled kernel's registers, shared memory and spills).
            pub fn explain(dev: &::bigfuse::Device, #(#size_args: u64),*) -> ::bigfuse::Result<::std::string::String> {
                kernel()?.explain(dev, &[#(#size_args),*])
            }

            /// The generated CUDA C for these sizes and target (no GPU needed).
            pub fn cuda(target: &::bigfuse::Target, #(#size_args: u64),*) -> ::bigfuse::Result<::std::string::String> {
                kernel()?.cuda_source(&[#(#size_args),*], target)
            }
        }
    })
}

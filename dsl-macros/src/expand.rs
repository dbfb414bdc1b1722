//! Expansion: the checked kernel becomes a module with IR-building code and typed entry points.

use crate::check::{BOp, Checked, Inst, Lit};
use crate::types::KType;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

fn ir_type(t: KType) -> TokenStream {
    match t {
        KType::Bool => quote!(__ir::Type::Bool),
        KType::U32 => quote!(__ir::Type::U32),
        KType::U64 => quote!(__ir::Type::U64),
        KType::Big(w) => {
            let f = w.factor;
            match w.param {
                None => quote!(__ir::Type::Big(__ir::Size::lit(#f))),
                Some(p) => {
                    let p = p as u32;
                    quote!(__ir::Type::Big(__ir::Size::scaled(#f, #p)))
                }
            }
        }
    }
}

fn rust_elem(t: KType) -> TokenStream {
    match t {
        KType::Bool => quote!(bool),
        KType::U32 => quote!(u32),
        KType::U64 => quote!(u64),
        KType::Big(_) => quote!(::bigfuse::BigUint),
    }
}

fn take_fn(t: KType) -> TokenStream {
    match t {
        KType::Bool => quote!(::bigfuse::__private::take_bool),
        KType::U32 => quote!(::bigfuse::__private::take_u32),
        KType::U64 => quote!(::bigfuse::__private::take_u64),
        KType::Big(_) => quote!(::bigfuse::__private::take_big),
    }
}

pub fn expand(f: &syn::ItemFn, k: &Checked) -> syn::Result<TokenStream> {
    let name = &k.name;
    let name_str = name.to_string();
    let vis = &f.vis;
    let docs: Vec<&syn::Attribute> = f
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    if let Some(other) = f.attrs.iter().find(|a| !a.path().is_ident("doc")) {
        return Err(syn::Error::new_spanned(
            other,
            "#[bigfuse::kernel] functions take only doc comments as attributes",
        ));
    }
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
    let mut body = Vec::new();
    for (i, (inst, ty)) in k.insts.iter().enumerate() {
        let v = format_ident!("v{}", i);
        let id = |x: &usize| format_ident!("v{}", *x);
        let call = match inst {
            Inst::Param(p) => {
                let t = ir_type(*ty);
                quote!(b.param(#p, #t))
            }
            Inst::Const(Lit::Bool(x)) => quote!(b.constant(__ir::Literal::Bool(#x))),
            Inst::Const(Lit::U32(x)) => quote!(b.constant(__ir::Literal::U32(#x))),
            Inst::Const(Lit::U64(x)) => quote!(b.constant(__ir::Literal::U64(#x))),
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
                }
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
                let t = ir_type(*ty);
                quote!(b.cast(#a, #t)?)
            }
        };
        body.push(quote!(let #v = #call;));
    }
    let outs: Vec<syn::Ident> = k.outputs.iter().map(|o| format_ident!("v{}", *o)).collect();

    let params: Vec<TokenStream> = k
        .params
        .iter()
        .map(|(p, t)| {
            let e = rust_elem(*t);
            quote!(#p: &[#e])
        })
        .collect();
    let param_names: Vec<&syn::Ident> = k.params.iter().map(|(p, _)| p).collect();
    let ret_elems: Vec<TokenStream> = k
        .output_types
        .iter()
        .map(|t| {
            let e = rust_elem(*t);
            quote!(::std::vec::Vec<#e>)
        })
        .collect();
    let takes: Vec<TokenStream> = k
        .output_types
        .iter()
        .map(|t| {
            let f = take_fn(*t);
            quote!(#f(cols.next())?)
        })
        .collect();
    let (ret_ty, ret_val) = if k.tuple_return {
        (
            quote!((#(#ret_elems),*)),
            quote!(::core::result::Result::Ok((#(#takes),*))),
        )
    } else {
        let f = take_fn(k.output_types[0]);
        (ret_elems[0].clone(), quote!(#f(cols.next())))
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
        "Runs `{name_str}` over a batch: one value per instance in each argument (all of one length).{sizes_doc}"
    );

    Ok(quote! {
        #(#docs)*
        #[allow(non_snake_case, dead_code, clippy::too_many_arguments)]
        #vis mod #name {
            use ::bigfuse::__private::ir as __ir;

            /// The kernel's IR, with symbolic sizes.
            pub fn program() -> ::core::result::Result<__ir::Func, __ir::IrError> {
                let mut b = __ir::Builder::new(#name_str, &[#(#sizes),*]);
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
            pub fn run(dev: &::bigfuse::Device, #(#size_args: u64,)* #(#params),*) -> ::bigfuse::Result<#ret_ty> {
                let cols = kernel()?.run(dev, &[#(#size_args),*], &[#(::bigfuse::Arg::from(#param_names)),*])?;
                let mut cols = cols.into_iter();
                #ret_val
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

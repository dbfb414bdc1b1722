//! `#[bigfuse::kernel]`: turns a Rust function over big unsigned integers into code that builds
//! bigfuse IR, plus a module with `run`, `explain` and `cuda` entry points.
//!
//! The macro only type-checks and translates; it never reaches the compiler or the runtime. Every
//! unsupported construct is a compile error at its own span, with a hint.

mod check;
mod expand;
mod types;

use proc_macro::TokenStream;

/// Compiles a function over `U<BITS>` (and `bool`, `u32`, `u64`) into a GPU kernel.
///
/// ```ignore
/// #[bigfuse::kernel]
/// fn add(a: U<BITS>, b: U<BITS>) -> U<BITS> {
///     a + b
/// }
/// // generated: add::run(&dev, bits, &a, &b), add::explain(&dev, bits), add::cuda(&target, bits),
/// //            add::program(), add::kernel()
/// ```
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = proc_macro2::TokenStream::from(attr);
    if !attr.is_empty() {
        return syn::Error::new_spanned(attr, "#[bigfuse::kernel] takes no arguments")
            .to_compile_error()
            .into();
    }
    let func = match syn::parse::<syn::ItemFn>(item) {
        Ok(f) => f,
        Err(e) => {
            return syn::Error::new(
                e.span(),
                format!("#[bigfuse::kernel] applies to a function: {e}"),
            )
            .to_compile_error()
            .into()
        }
    };
    match check::check(&func).and_then(|k| expand::expand(&func, &k)) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

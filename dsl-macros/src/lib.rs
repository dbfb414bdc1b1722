//! `#[bigfuse::kernel]`: turns a Rust function over big unsigned integers, residues and arrays
//! into code that builds bigfuse IR, plus a module with `run`, `explain` and `cuda` entry points;
//! `#[bigfuse::op]`: an operator such functions pass to map, scan or reduce.
//!
//! The macro only type-checks and translates; it never reaches the compiler or the runtime. Every
//! unsupported construct is a compile error at its own span, with a hint.

mod check;
mod expand;
mod types;

use proc_macro::TokenStream;

/// Compiles a function over `U<BITS>`, `Zp<P>`, `bool`, `u32`, `u64` and arrays `[T; N]` of them
/// (map / zip / unzip / scan / reduce / iota with closures or `#[bigfuse::op]` operators) into a
/// GPU kernel.
///
/// ```ignore
/// #[bigfuse::kernel]
/// fn add(a: U<BITS>, b: U<BITS>) -> U<BITS> {
///     a + b
/// }
/// // generated: add::run(&dev, bits, &a, &b), add::explain(&dev, bits), add::cuda(&target, bits),
/// //            add::program(), add::kernel()
///
/// #[bigfuse::kernel]
/// fn dot(xs: [Zp<P>; N], ys: [Zp<P>; N]) -> Zp<P> {
///     xs.zip(ys).map(|(x, y)| x * y).reduce(|s, t| s + t, Zp::ZERO)
/// }
/// // dot::run(&dev, p, n, &xs, &ys): sizes in order of first appearance, arrays as flat slices
///
/// #[bigfuse::kernel]
/// fn bits(a: U<BITS>, b: U<BITS>, k: u32, xs: [U<BITS>; N]) -> (U<BITS>, u32, [U<BITS>; N]) {
///     let f = a.extract_bits(k, 16).insert_bits(b, 0, 8) | U::<BITS>::mask(4);
///     (((a << 3) ^ b) + (a >> k) * f, a.count_ones(), xs.map(|x| !x.rotate_left(k)))
/// }
/// ```
///
/// Bit operations. On `U<..>` (whole values and array elements alike): `&`, `|`, `^` (operands
/// of one width), `!`, `<<` and `>>` by a `u32` (or an integer literal; by the width or more they
/// give 0), `rotate_left(k)` and `rotate_right(k)` (`k: u32`, taken modulo the width),
/// `leading_zeros()`, `trailing_zeros()` (the width for 0) and `count_ones()` (a `u32`), `bit(i)`
/// (a `bool`, false past the width), `extract_bits(lo, len)` (bits `lo..lo+len` at the bottom),
/// `insert_bits(field, lo, len)` (those bits replaced by the low `len` bits of `field`, a value of
/// the same type), `U::<BITS>::mask(len)` (or `U::mask(len)` where a `U<..>` is expected: the low
/// `len` bits set), `U::MAX`, and `as U<M>` (any width the types accept: truncation or zero
/// extension), `as u64`, `as u32` (the low bits). On `u32` and `u64`: `rotate_left`,
/// `rotate_right`, `leading_zeros`, `trailing_zeros`, `count_ones`, `bit(i)` as on `U<..>`, `<<` and
/// `>>` by an amount of the value's type (taken modulo its width), and `/`, `%` (`x / 0` is all
/// ones and `x % 0` is `x`, never a trap).
///
/// Division. On `U<..>` (whole values and array elements): `a / b` and `a % b` (operands of one
/// width), and `a.div_rem(b)`, a tuple `(a / b, a % b)` where `b` may have another width than `a`
/// (the quotient has `a`'s width and the remainder `b`'s: e.g. a `U<{2 * BITS}>` product reduced
/// by a `U<BITS>` modulus). Division by zero is defined for each instance: `a / 0` is all ones and
/// `a % 0` is `a` (modulo 2^width of `b`), never a trap. The compiler divides by a Newton
/// reciprocal of the divisor and products (`codegen/src/divide.rs`); one divisor's reciprocal
/// serves every division by it in the kernel. `a.isqrt()` on `U<..>`: the square root rounded
/// down (Zimmermann's Karatsuba square root, one division per level).
///
/// Modular exponentiation. `x.pow_mod(e, m)` on `U<..>`: `x^e mod m` for an odd modulus `m` of
/// `x`'s type and an exponent `e` of any width (e.g. `U<512>` beside a 2048-bit modulus). It is
/// Montgomery arithmetic in one thread per instance (`codegen/src/montgomery.rs`); a base at or
/// above `m` is reduced and `x^0` is `1 mod m`. An even or zero modulus among a call's arguments
/// (host values: `BigUint` or limbs) is an error naming the first such instance; one the kernel
/// computes, or one in a device `Batch` (not read back for the check), gives all
/// ones (`U::MAX`), which no residue equals, for that instance.
///
/// Arithmetic modulo a big odd integer. `a.add_mod(b, m)`, `a.sub_mod(b, m)`, `a.mul_mod(b, m)`
/// on `U<..>` of one width: `(a + b) mod m`, `(a - b) mod m` (in `0..m`) and `a b mod m`, from the
/// whole integers (operands at or above `m` are reduced, nothing wraps), for an odd modulus of up
/// to 2048 bits, per instance. The compiler keeps a chain of them modulo one `m` in Montgomery
/// form (`codegen/src/residue.rs`): each input is converted once, each result that leaves the
/// chain once, and `R^2 mod m` is computed once per modulus; so an expression of many operations
/// costs about one Montgomery product per product. One thread per instance. An even or zero
/// modulus is an error or all ones, as for `pow_mod`.
///
/// Greatest common divisors and inverses. `a.gcd(b)` on `U<..>` of one width: `gcd(a, b)`
/// (`gcd(0, 0) = 0`). `a.inv_mod(m)`: `(a^-1 mod m, exists)`, a tuple of `a`'s type and a `bool`
/// (`let (x, ok) = a.inv_mod(m);`), `(0, false)` where `gcd(a, m) > 1` or `m` is zero; any
/// modulus. Both run in one thread per instance (`codegen/src/emit/gcd.rs`).
///
/// Bounded loops. `let mut x = ..;` declares a variable that assignments change: `x = e;`,
/// `x += e;` (and `-=`, `*=`, `/=`, `%=`, `&=`, `|=`, `^=`, `<<=`, `>>=`); an assignment keeps the
/// variable's type. `if c { x = ..; } else { .. }` may be a statement (the `else` is optional):
/// each variable a branch assigns selects between the branches' values. `for i in 0..K { .. }`
/// runs K rounds, K an integer literal, a size (`BITS`) or a multiple of one (`2 * BITS`); `i` is a
/// `u32`. The loop carries the `let mut` variables its body assigns (of any type but a tuple) and
/// reads the other values it names; loops nest. When the kernel is specialized the compiler
/// unrolls a loop (the index a constant) or, for a long loop of a program over whole values
/// (past 2^14 limb operations unrolled), keeps it a loop in the CUDA and runs the program one
/// thread per instance (`codegen/src/loops.rs`); unrolling past 2^20 IR nodes is an error. There is no `while`, `loop`, `break` or
/// `continue`, sizes cannot be divided (for one round per limb, declare `U<{64 * L}>` and loop
/// `0..L`), and closures and `#[bigfuse::op]` functions have no loops.
///
/// ```ignore
/// #[bigfuse::kernel]
/// fn pow(x: U<BITS>, e: U<BITS>) -> U<BITS> {
///     let mut acc: U<BITS> = U::ONE;
///     let mut sq = x;
///     for i in 0..BITS {
///         if e.bit(i) {
///             acc = acc * sq;
///         }
///         sq *= sq;
///     }
///     acc // x^e mod 2^BITS
/// }
/// ```
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = proc_macro2::TokenStream::from(attr);
    if !attr.is_empty() {
        return syn::Error::new_spanned(attr, "#[bigfuse::kernel] takes no arguments")
            .to_compile_error()
            .into();
    }
    let func = match parse_fn(item, "kernel") {
        Ok(f) => f,
        Err(e) => return e.to_compile_error().into(),
    };
    match check::check(&func).and_then(|k| expand::expand(&func, &k)) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Marks a function as an operator for kernels: pass it by name to `.map`, `.scan_inclusive`,
/// `.scan_exclusive` or `.reduce`. Scans and reductions regroup their operator across threads,
/// so they require `#[bigfuse::op(associative)]`; the CPU backend samples that claim in debug
/// builds and reports a counterexample.
///
/// ```ignore
/// #[bigfuse::op(associative)]
/// fn carry(lo: u32, hi: u32) -> u32 {
///     ((hi | ((hi >> 1) & lo)) & 1) | (lo & hi & 2)
/// }
/// ```
#[proc_macro_attribute]
pub fn op(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = proc_macro2::TokenStream::from(attr);
    let associative = match attr.to_string().as_str() {
        "" => false,
        "associative" => true,
        _ => {
            return syn::Error::new_spanned(
                attr,
                "#[bigfuse::op] takes nothing or `associative`: #[bigfuse::op(associative)]",
            )
            .to_compile_error()
            .into()
        }
    };
    let func = match parse_fn(item, "op") {
        Ok(f) => f,
        Err(e) => return e.to_compile_error().into(),
    };
    match check::check_op(&func).and_then(|k| expand::expand_op(&func, &k, associative)) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The function an attribute applies to, or an error saying that it must be one.
fn parse_fn(item: TokenStream, attr: &str) -> syn::Result<syn::ItemFn> {
    syn::parse::<syn::ItemFn>(item).map_err(|e| {
        syn::Error::new(
            e.span(),
            format!("#[bigfuse::{attr}] applies to a function: {e}"),
        )
    })
}

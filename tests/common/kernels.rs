//! Kernels used by several test files.

#[bigfuse::kernel]
pub fn add(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a + b
}

#[bigfuse::kernel]
pub fn sub(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a - b
}

/// Every comparison at once.
#[bigfuse::kernel]
pub fn compare(a: U<BITS>, b: U<BITS>) -> (bool, bool, bool, bool, bool, bool) {
    (a < b, a <= b, a > b, a >= b, a == b, a != b)
}

/// Carry out of an addition, computed by comparison, and a select.
#[bigfuse::kernel]
pub fn add_carry_min(a: U<BITS>, b: U<BITS>) -> (U<BITS>, bool, U<BITS>) {
    let s = a + b;
    let carry = s < a;
    (s, carry, if a < b { a } else { b })
}

/// The anchors' 6-Add: six dependent additions, exactly as written (r = 6a + 10b).
#[bigfuse::kernel]
pub fn six_add(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let t1 = a + b;
    let t2 = t1 + t1;
    let t3 = t2 + b;
    let t4 = t3 + t3;
    let t5 = t4 + t3;
    t5 + b
}

/// Absolute difference with scalars mixed in.
#[bigfuse::kernel]
pub fn absdiff(a: U<BITS>, b: U<BITS>, k: u64) -> (U<BITS>, u64) {
    let d = if a >= b { a - b } else { b - a };
    let flag = (a < b) as u64;
    (d, flag * k + 1)
}

/// The product modulo 2^BITS (the low half).
#[bigfuse::kernel]
pub fn mul(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a * b
}

/// The full product.
#[bigfuse::kernel]
pub fn mul_wide(a: U<BITS>, b: U<BITS>) -> U<{ 2 * BITS }> {
    a.mul_wide(b)
}

/// The reference paper's Poly: four multiplications and three additions, one kernel.
#[bigfuse::kernel]
pub fn poly(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let a2 = a * a;
    let b2 = b * b;
    (a2 + b) * (b2 + b) + a * b
}

/// A product of computed operands with a value live across it: on the NTT the product stages its
/// operands in the launch's scratch and reads `s` back from there (codegen/src/emit/staging.rs).
#[bigfuse::kernel]
pub fn staged_product(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let s = a + b;
    s * (b - a) + s
}

/// A sum of two products, the second a square of a computed value: on the NTT the sum runs as
/// one product, the transforms' pointwise products added before one inverse transform
/// (`isel::NttSum`).
#[bigfuse::kernel]
pub fn product_sum(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let s = a + b;
    a * b + s * s
}

/// A sum of two products, the first a square: the other side of `product_sum`'s cases.
#[bigfuse::kernel]
pub fn square_sum(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a * a + b * (a - b)
}

/// A sum of three products: on the NTT one product, three pairs of transforms and one inverse
/// transform.
#[bigfuse::kernel]
pub fn product_sum3(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a * b + a * a + (b - a) * b
}

/// A square (the product of a value with itself takes the squaring path).
#[bigfuse::kernel]
pub fn square(a: U<BITS>) -> U<BITS> {
    a * a
}

/// `x^e mod 2^BITS`, square-and-multiply over every bit of `e`: a loop that stays a loop from
/// 320 bits (codegen/src/loops.rs).
#[bigfuse::kernel]
pub fn pow_bits(x: U<BITS>, e: U<BITS>) -> U<BITS> {
    let mut acc: U<BITS> = U::ONE;
    let mut sq = x;
    for i in 0..BITS {
        if e.bit(i) {
            acc = acc * sq;
        }
        sq *= sq;
    }
    acc
}

/// A power modulo an odd per-instance modulus (codegen/src/montgomery.rs).
#[bigfuse::kernel]
pub fn pow_mod(x: U<BITS>, e: U<BITS>, m: U<BITS>) -> U<BITS> {
    x.pow_mod(e, m)
}

/// The paper's Poly modulo an odd per-instance modulus, one chain in Montgomery form
/// (codegen/src/residue.rs).
#[bigfuse::kernel]
pub fn poly_mod(a: U<BITS>, b: U<BITS>, m: U<BITS>) -> U<BITS> {
    let a2 = a.mul_mod(a, m);
    let b2 = b.mul_mod(b, m);
    let ab = a.mul_mod(b, m);
    a2.add_mod(b, m).mul_mod(b2.add_mod(b, m), m).add_mod(ab, m)
}

/// gcd (codegen/src/emit/gcd.rs).
#[bigfuse::kernel]
pub fn gcd(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a.gcd(b)
}

/// The inverse modulo m and whether it exists (codegen/src/emit/gcd.rs).
#[bigfuse::kernel]
pub fn inv_mod(a: U<BITS>, m: U<BITS>) -> (U<BITS>, bool) {
    a.inv_mod(m)
}

//! The benchmarked kernels, written as a user would.

#[bigfuse::kernel]
pub fn add1(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a + b
}

/// The anchors' 6-Add, exactly as written (no algebraic rewriting): r = 6a + 10b.
#[bigfuse::kernel]
pub fn add6(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let t1 = a + b;
    let t2 = t1 + t1;
    let t3 = t2 + b;
    let t4 = t3 + t3;
    let t5 = t4 + t3;
    t5 + b
}

#[bigfuse::kernel]
pub fn mul1(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a * b
}

/// The reference paper's Poly, counted as four multiplications.
#[bigfuse::kernel]
pub fn poly(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let a2 = a * a;
    let b2 = b * b;
    (a2 + b) * (b2 + b) + a * b
}

use bigfuse::BigUint;

pub fn ref_add1(x: &BigUint, y: &BigUint) -> BigUint {
    x + y
}

pub fn ref_add6(x: &BigUint, y: &BigUint) -> BigUint {
    BigUint::from(6u8) * x + BigUint::from(10u8) * y
}

pub fn ref_mul1(x: &BigUint, y: &BigUint) -> BigUint {
    x * y
}

pub fn ref_poly(x: &BigUint, y: &BigUint) -> BigUint {
    (x * x + y) * (y * y + y) + x * y
}

//! Every generated kernel is a reviewed snapshot, and NVRTC compiles each one (no GPU needed).
//! Without the NVRTC library this fails with instructions, unless BIGFUSE_SKIP_NVRTC=1.

mod common;

use bigfuse::{Kernel, Target};
use common::kernels::*;

fn nvrtc_compiles(kernel: &Kernel, bits: u64) {
    common::nvrtc_compiles(kernel, &[bits]);
}

fn snap(name: &str, kernel: &Kernel, bits: u64) {
    let src = kernel.cuda_source(&[bits], &Target::h100()).unwrap();
    insta::assert_snapshot!(format!("{name}_{bits}"), src);
    nvrtc_compiles(kernel, bits);
}

/// Says which NVRTC compiles the kernels (CI runs this file with NVRTC 13 and with NVRTC 12, and
/// shows this test's output); with `BIGFUSE_EXPECT_NVRTC=<major>` another major version fails.
#[test]
fn nvrtc_version() {
    let expected = std::env::var("BIGFUSE_EXPECT_NVRTC").ok();
    match bigfuse::runtime::nvrtc::library() {
        Ok(lib) => {
            println!("kernels compiled by {}", lib.describe());
            if let Some(major) = expected {
                assert_eq!(lib.version().0.to_string(), major, "{}", lib.describe());
            }
        }
        Err(e) => {
            assert!(expected.is_none(), "BIGFUSE_EXPECT_NVRTC is set, but {e}");
            println!("no NVRTC: {e}");
        }
    }
}

#[test]
fn add_kernels() {
    for bits in [256, 3008, 4096, 131072] {
        snap("add", add::kernel().unwrap(), bits);
    }
}

#[test]
fn sub_kernels() {
    for bits in [256, 131072] {
        snap("sub", sub::kernel().unwrap(), bits);
    }
}

#[test]
fn six_add_kernels() {
    for bits in [512, 4096, 131072] {
        snap("six_add", six_add::kernel().unwrap(), bits);
    }
}

/// Instances longer than one block's threads span several blocks: their carries (and scans)
/// resolve by look-back through a launch's scratch.
#[test]
fn spanning_kernels() {
    let bits = 1 << 22;
    snap("add", add::kernel().unwrap(), bits);
    snap("six_add", six_add::kernel().unwrap(), bits);
    snap("compare", compare::kernel().unwrap(), bits);
    let scan = bigfuse::programs::prefix_sums::kernel().unwrap();
    let sizes = [(1u64 << 61) - 1, (1 << 20) + 17];
    let src = scan.cuda_source(&sizes, &Target::h100()).unwrap();
    insta::assert_snapshot!("prefix_sums_1048593", src);
    common::nvrtc_compiles(scan, &sizes);
    // Whole 16-byte vectors per warp: 16 residues a thread through the swizzled transposition
    // buffers, over several blocks and in one.
    for n in [1u64 << 20, 1 << 12] {
        let sizes = [(1u64 << 61) - 1, n];
        let src = scan.cuda_source(&sizes, &Target::h100()).unwrap();
        insta::assert_snapshot!(format!("prefix_sums_{n}"), src);
        common::nvrtc_compiles(scan, &sizes);
    }
}

#[test]
fn compare_and_select_kernels() {
    snap("compare", compare::kernel().unwrap(), 192);
    snap("compare", compare::kernel().unwrap(), 65536);
    snap("add_carry_min", add_carry_min::kernel().unwrap(), 2048);
    snap("absdiff", absdiff::kernel().unwrap(), 512);
}

/// A shift by a run-time amount (limbs gathered through shared memory), a bitwise operation and a
/// bit count (a reduction), fused in one kernel.
#[bigfuse::kernel]
fn shift_xor_count(a: U<BITS>, b: U<BITS>, k: u32) -> (U<BITS>, u32) {
    let s = (a << k) ^ b;
    (s, s.count_ones())
}

/// The same on array elements: one thread per element, the shift a barrel shifter over its limbs.
#[bigfuse::kernel]
fn shift_xor_count_elements(xs: [U<BITS>; N], ys: [U<BITS>; N], k: u32) -> [u32; N] {
    xs.zip(ys).map(|(a, b)| ((a << k) ^ b).count_ones())
}

/// Division of whole values: the divisor's clz and shift, its 64-bit reciprocal in u64 arithmetic
/// (`divlu`), one 2-by-1 step with its four corrections, the remainder shifted back, and the
/// selects of division by zero (codegen/src/divide.rs).
#[bigfuse::kernel]
fn divide_whole(a: U<BITS>, b: U<BITS>) -> (U<BITS>, U<BITS>) {
    (a / b, a % b)
}

/// A quotient alone: at 4096 bits the device function computes no remainder and reads the
/// operands where they lie in global memory (codegen/src/place.rs, `divided_in_place`).
#[bigfuse::kernel]
fn quotient(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    a / b
}

/// A square root from 8192 bits: one device function whose loops stay loops, reading the value
/// where it lies and writing the root where it goes (codegen/src/emit/isqrt.rs).
#[bigfuse::kernel]
fn root(a: U<BITS>) -> U<BITS> {
    a.isqrt()
}

/// CGBN's `sqrt_wide` as a user writes it: the root function's operand copied by two loops from
/// where `b`'s and `a`'s words lie, and its low `BITS` bits written where they go
/// (codegen/src/place.rs, `read_in_place` and `written_in_place`).
#[bigfuse::kernel]
fn wide_root(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let zero: U<BITS> = U::ZERO;
    let w = ((a as U<{ 2 * BITS }>) << zero.leading_zeros()) | (b as U<{ 2 * BITS }>);
    w.isqrt() as U<BITS>
}

#[test]
fn division_kernels() {
    snap("divide_whole", divide_whole::kernel().unwrap(), 64);
    snap("quotient", quotient::kernel().unwrap(), 4096);
    snap("root", root::kernel().unwrap(), 8192);
    snap("wide_root", wide_root::kernel().unwrap(), 8192);
}

#[test]
fn bit_operation_kernels() {
    // 2^22 bits: an instance over several blocks, the shift's limbs read from global memory.
    for bits in [256, 4096, 1 << 22] {
        snap("shift_xor_count", shift_xor_count::kernel().unwrap(), bits);
    }
    let k = shift_xor_count_elements::kernel().unwrap();
    let src = k.cuda_source(&[320, 1000], &Target::h100()).unwrap();
    insta::assert_snapshot!("shift_xor_count_elements_320_1000", src);
    common::nvrtc_compiles(k, &[320, 1000]);
}

#[test]
fn every_test_kernel_compiles_at_every_size() {
    let kernels = [
        add::kernel().unwrap(),
        sub::kernel().unwrap(),
        compare::kernel().unwrap(),
        add_carry_min::kernel().unwrap(),
        six_add::kernel().unwrap(),
        absdiff::kernel().unwrap(),
    ];
    for k in kernels {
        for &bits in common::SIZES {
            nvrtc_compiles(k, bits);
        }
    }
}

#[test]
fn explain_six_add() {
    let dev = bigfuse::Device::cpu();
    let text = six_add::explain(&dev, 4096).unwrap();
    insta::assert_snapshot!("explain_six_add_4096", text);
}

#[test]
fn multiplication_kernels() {
    for bits in [256, 4096] {
        snap("mul", mul::kernel().unwrap(), bits);
    }
    snap("mul_wide", mul_wide::kernel().unwrap(), 3008);
    snap("poly", poly::kernel().unwrap(), 2048);
    snap("mul", mul::kernel().unwrap(), 65536);
    snap("mul_wide", mul_wide::kernel().unwrap(), 32768);
    snap("square", square::kernel().unwrap(), 2048);
    snap("square", square::kernel().unwrap(), 65536);
    // Operands and a live value staged in the scratch's slots around the NTT product.
    snap("staged_product", staged_product::kernel().unwrap(), 65536);
    // Sums of products as one NTT product: two terms, and three (a middle term added, no inverse).
    snap("product_sum", product_sum::kernel().unwrap(), 65536);
    snap("product_sum3", product_sum3::kernel().unwrap(), 65536);
    // Over global memory: the three NTT kernels and the addition of the column sums.
    snap("mul", mul::kernel().unwrap(), 1 << 19);
    for k in [
        mul::kernel().unwrap(),
        mul_wide::kernel().unwrap(),
        poly::kernel().unwrap(),
        square::kernel().unwrap(),
    ] {
        for &bits in common::SIZES {
            nvrtc_compiles(k, bits);
        }
    }
}

/// Poly's kernels as the runtime loads them where the held form spills (at 2^13..2^18 bits with
/// NVRTC 13.0): the thread coordinates read from their special registers where used
/// (`Compiled::spill_free`).
#[test]
fn kernels_with_coordinates_read_where_used() {
    for bits in [8192, 65536] {
        let plan = poly::kernel()
            .unwrap()
            .plan(&[bits], &Target::h100(), &bigfuse::Hints::default())
            .unwrap();
        let read = plan.parts[0].compiled.spill_free.clone().unwrap().source;
        insta::assert_snapshot!(format!("poly_read_coordinates_{bits}"), read);
        common::nvrtc_compiles_plan(&plan);
    }
}

/// Poly's one-thread kernels as the runtime loads them where the held form spills (at 2^10 /
/// 2^11 bits with NVRTC 13.0): the parameters' words that live across a product parked in shared
/// memory where loaded (`Compiled::spill_free`).
#[test]
fn kernels_with_parameters_parked() {
    for bits in [1024, 2048] {
        let plan = poly::kernel()
            .unwrap()
            .plan(&[bits], &Target::h100(), &bigfuse::Hints::default())
            .unwrap();
        let parked = plan.parts[0].compiled.spill_free.clone().unwrap().source;
        insta::assert_snapshot!(format!("poly_parked_{bits}"), parked);
        common::nvrtc_compiles_plan(&plan);
    }
}

#[test]
fn explain_poly() {
    let dev = bigfuse::Device::cpu();
    let text = poly::explain(&dev, 2048).unwrap();
    insta::assert_snapshot!("explain_poly_2048", text);
}

/// Kernels written as array programs (bigfuse::programs): the user-written addition and the dot
/// product modulo a prime (one kernel at 2^10 elements; two, chunked, when the vectors are long).
#[test]
fn array_program_kernels() {
    use bigfuse::programs::{dot, user_add};
    for (name, kernel, sizes) in [
        ("user_add", user_add::kernel().unwrap(), vec![64u64]),
        ("dot", dot::kernel().unwrap(), vec![3221225473, 1024]),
        (
            "dot",
            dot::kernel().unwrap(),
            vec![18446744073709551557, 1024],
        ),
    ] {
        let src = kernel.cuda_source(&sizes, &Target::h100()).unwrap();
        let tag: Vec<String> = sizes.iter().map(u64::to_string).collect();
        insta::assert_snapshot!(format!("{name}_{}", tag.join("_")), src);
        common::nvrtc_compiles(kernel, &sizes);
    }
}

/// The kernels of a polynomial product over Z (bigfuse::poly): residues of 128-bit coefficients
/// modulo one prime, the product of 256-coefficient polynomials modulo it, and the CRT of three
/// residues into a 192-bit coefficient.
#[test]
fn polynomial_product_kernels() {
    use bigfuse::poly::{garner, poly_mul_mod, primes, residues, PolyMul};
    let p = primes(1)[0];
    let pm = PolyMul::new(256, 64).unwrap();
    let crt = Kernel::new(garner(&pm.primes, pm.out_bits, 1).unwrap()).unwrap();
    for (name, kernel, sizes) in [
        ("residues", residues::kernel().unwrap(), vec![2u64, p]),
        (
            "poly_mul_mod",
            poly_mul_mod::kernel().unwrap(),
            vec![p, 256],
        ),
        ("crt3_192bits", &crt, vec![]),
    ] {
        let src = kernel.cuda_source(&sizes, &Target::h100()).unwrap();
        let tag: Vec<String> = std::iter::once(name.to_string())
            .chain(sizes.iter().map(u64::to_string))
            .collect();
        insta::assert_snapshot!(tag.join("_"), src);
        common::nvrtc_compiles(kernel, &sizes);
    }
}

/// A loop that stays a loop: its carried limbs in variables, a `for` held to one round at a time.
#[test]
fn rolled_loop_kernels() {
    snap("pow_bits_rolled", pow_bits::kernel().unwrap(), 320);
}

#[test]
fn gcd_kernels() {
    snap("gcd", gcd::kernel().unwrap(), 128);
    snap("inv_mod", inv_mod::kernel().unwrap(), 128);
    // Groups of threads per instance: an inverse from 2048 bits, a gcd from 4096.
    snap("inv_mod", inv_mod::kernel().unwrap(), 2048);
    snap("gcd", gcd::kernel().unwrap(), 4096);
}

/// Arithmetic modulo a big odd integer: R^2 by a division, Montgomery products, sums in the form.
#[test]
fn residue_kernels() {
    snap("poly_mod", poly_mod::kernel().unwrap(), 256);
}

#[test]
fn pow_mod_kernels() {
    snap("pow_mod", pow_mod::kernel().unwrap(), 128);
    // A group of eight threads per instance (codegen/src/emit/montgomery_group.rs).
    snap("pow_mod", pow_mod::kernel().unwrap(), 4096);
}

//! Every generated kernel is a reviewed snapshot, and NVRTC compiles each one (no GPU needed).
//! Without the NVRTC library this fails with instructions, unless BIGFUSE_SKIP_NVRTC=1.

mod common;

use bigfuse::{Hints, Kernel, Target};
use common::kernels::*;

fn nvrtc_compiles(kernel: &Kernel, bits: u64) {
    let c = kernel
        .compile(&[bits], &Target::h100(), &Hints::default())
        .unwrap();
    if !bigfuse::runtime::nvrtc::available() {
        if std::env::var("BIGFUSE_SKIP_NVRTC").is_ok_and(|v| v == "1") {
            eprintln!(
                "NVRTC not available: skipping the compile of {}",
                c.kernel_name
            );
            return;
        }
        panic!(
            "{}\n(the README's test command installs it; BIGFUSE_SKIP_NVRTC=1 skips these compiles)",
            bigfuse::Error::NoNvrtc
        );
    }
    if let Err(e) = bigfuse::runtime::nvrtc::compile_uncached(&c.source, &c.kernel_name, "sm_90") {
        panic!("{e}");
    }
}

fn snap(name: &str, kernel: &Kernel, bits: u64) {
    let src = kernel.cuda_source(&[bits], &Target::h100()).unwrap();
    insta::assert_snapshot!(format!("{name}_{bits}"), src);
    nvrtc_compiles(kernel, bits);
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

#[test]
fn compare_and_select_kernels() {
    snap("compare", compare::kernel().unwrap(), 192);
    snap("compare", compare::kernel().unwrap(), 65536);
    snap("add_carry_min", add_carry_min::kernel().unwrap(), 2048);
    snap("absdiff", absdiff::kernel().unwrap(), 512);
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

#[test]
fn explain_poly() {
    let dev = bigfuse::Device::cpu();
    let text = poly::explain(&dev, 2048).unwrap();
    insta::assert_snapshot!("explain_poly_2048", text);
}

//! Splitting: a program too large for one kernel runs as several, with the same results.

use bigfuse::{BigUint, Device, Hints, Target};

/// Forty values of U<BITS> live at once: at 2^18 bits that is more registers than a thread has.
#[bigfuse::kernel]
pub fn crowded(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    let x0 = a - b;
    let x1 = b + x0;
    let x2 = x0 + x1;
    let x3 = x1 - x2;
    let x4 = x2 + x3;
    let x5 = x3 + x4;
    let x6 = x4 - x5;
    let x7 = x5 + x6;
    let x8 = x6 + x7;
    let x9 = x7 - x8;
    let x10 = x8 + x9;
    let x11 = x9 + x10;
    let x12 = x10 - x11;
    let x13 = x11 + x12;
    let x14 = x12 + x13;
    let x15 = x13 - x14;
    let x16 = x14 + x15;
    let x17 = x15 + x16;
    let x18 = x16 - x17;
    let x19 = x17 + x18;
    let x20 = x18 + x19;
    let x21 = x19 - x20;
    let x22 = x20 + x21;
    let x23 = x21 + x22;
    let x24 = x22 - x23;
    let x25 = x23 + x24;
    let x26 = x24 + x25;
    let x27 = x25 - x26;
    let x28 = x26 + x27;
    let x29 = x27 + x28;
    let x30 = x28 - x29;
    let x31 = x29 + x30;
    let x32 = x30 + x31;
    let x33 = x31 - x32;
    let x34 = x32 + x33;
    let x35 = x33 + x34;
    let x36 = x34 - x35;
    let x37 = x35 + x36;
    let x38 = x36 + x37;
    let x39 = x37 - x38;
    x39 + x38
        + x37
        + x36
        + x35
        + x34
        + x33
        + x32
        + x31
        + x30
        + x29
        + x28
        + x27
        + x26
        + x25
        + x24
        + x23
        + x22
        + x21
        + x20
        + x19
        + x18
        + x17
        + x16
        + x15
        + x14
        + x13
        + x12
        + x11
        + x10
        + x9
        + x8
        + x7
        + x6
        + x5
        + x4
        + x3
        + x2
        + x1
        + x0
        + b
        + a
}

const BITS: u64 = 1 << 18;

#[test]
fn the_crowded_program_is_split_at_large_sizes_and_not_at_small_ones() {
    let k = crowded::kernel().unwrap();
    let big = k.plan(&[BITS], &Target::h100(), &Hints::default()).unwrap();
    assert!(big.is_split(), "{}", big.explain());
    let text = crowded::explain(&Device::cpu(), BITS).unwrap();
    assert!(
        text.contains("split into") && text.contains("does not fit one kernel"),
        "{text}"
    );
    let small = k.plan(&[256], &Target::h100(), &Hints::default()).unwrap();
    assert!(!small.is_split());
}

#[test]
fn the_split_program_gives_the_reference_results_on_the_gpu() {
    let Some(gpu) =
        bigfuse::runtime::gpu_for_tests().expect("BIGFUSE_REQUIRE_GPU=1 but no GPU could be used")
    else {
        return;
    };
    let dev = Device::Gpu(gpu);
    let m = BigUint::from(1u8) << BITS;
    let a = vec![
        m.clone() - 1u8,
        BigUint::from(3u8),
        BigUint::from(12345u32) << 100_000u32,
        m.clone() >> 1u32,
        BigUint::from(0u8),
    ];
    let b = vec![
        BigUint::from(1u8),
        m.clone() - 5u8,
        BigUint::from(987u32) << 200_000u32,
        m.clone() >> 3u32,
        BigUint::from(7u8),
    ];
    let want = crowded::run(&Device::cpu(), BITS, &a, &b).unwrap();
    let got = crowded::run(&dev, BITS, &a, &b).unwrap();
    assert_eq!(got, want);
    // The same through the call pipeline in several chunks, and through batches on the device
    // (the split plan's intermediates live in the chunks' arenas, or in pooled temporaries).
    std::env::set_var("BIGFUSE_PIPELINE_INSTANCES", "2");
    let chunked = crowded::run(&dev, BITS, &a, &b);
    std::env::remove_var("BIGFUSE_PIPELINE_INSTANCES");
    assert_eq!(chunked.unwrap(), want);
    let ab = bigfuse::Batch::big(&dev, BITS, &a).unwrap();
    let bb = bigfuse::Batch::big(&dev, BITS, &b).unwrap();
    let r = crowded::launch(&dev, BITS, &ab, &bb).unwrap();
    assert_eq!(r.to_big().unwrap(), want);
}

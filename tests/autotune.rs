//! Autotuning on the GPU: candidates are measured, the winner cached on disk and reused.

mod common;

use bigfuse::{BigUint, Device};
use common::kernels::six_add;

#[test]
fn tuning_measures_caches_and_reuses() {
    let Some(gpu) =
        bigfuse::runtime::gpu_for_tests().expect("BIGFUSE_REQUIRE_GPU=1 but no GPU could be used")
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("bigfuse-tune-{}", std::process::id()));
    // SAFETY: the only test of this binary; nothing else reads the environment concurrently.
    unsafe { std::env::set_var("BIGFUSE_CACHE_DIR", &dir) };
    let k = six_add::kernel().unwrap();
    let first = k.autotune(&gpu, &[4096]).unwrap();
    assert!(!first.from_cache);
    assert!(first.timings.len() >= 2, "{:?}", first.timings);
    let again = k.autotune(&gpu, &[4096]).unwrap();
    assert!(again.from_cache);
    assert_eq!(again.hints, first.hints);
    // A corrupt cache is ignored and tuning happens again.
    std::fs::write(dir.join("autotune.txt"), "\u{0}\u{1}garbage\n").unwrap();
    assert!(!k.autotune(&gpu, &[4096]).unwrap().from_cache);
    // The tuned schedule computes the same results.
    let (a, b) = common::operand_pairs(4096, 300, 9);
    let dev = Device::Gpu(gpu);
    let r = k
        .run_with(&dev, &[4096], &[(&a).into(), (&b).into()], &first.hints)
        .unwrap();
    let bigfuse::Column::Big(r) = &r[0] else {
        panic!("a big result")
    };
    let m = BigUint::from(1u8) << 4096u32;
    for i in 0..a.len() {
        assert_eq!(
            r[i],
            (BigUint::from(6u8) * &a[i] + BigUint::from(10u8) * &b[i]) % &m
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

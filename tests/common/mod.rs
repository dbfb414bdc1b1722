//! Shared by the integration tests: reference arithmetic, value generators, test kernels.
#![allow(dead_code)]

pub mod kernels;

use bigfuse::BigUint;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub fn modulus(bits: u64) -> BigUint {
    BigUint::from(1u8) << bits
}

pub fn all_ones(bits: u64) -> BigUint {
    modulus(bits) - 1u8
}

pub fn wrap_add(a: &BigUint, b: &BigUint, bits: u64) -> BigUint {
    (a + b) % modulus(bits)
}

pub fn wrap_sub(a: &BigUint, b: &BigUint, bits: u64) -> BigUint {
    (a + modulus(bits) - b) % modulus(bits)
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// A random value of at most `bits` bits, from one of several shapes: uniform, short, mostly ones
/// (long carry chains), a single bit, sparse.
pub fn random_big(rng: &mut StdRng, bits: u64) -> BigUint {
    let words = (bits / 64) as usize;
    let mut limbs: Vec<u64> = match rng.gen_range(0..6) {
        0 | 1 => (0..words).map(|_| rng.gen()).collect(),
        2 => {
            let used = rng.gen_range(1..=words);
            (0..words)
                .map(|i| if i < used { rng.gen() } else { 0 })
                .collect()
        }
        3 => {
            // all ones except a few random limbs: carries run far
            let mut v = vec![u64::MAX; words];
            for _ in 0..rng.gen_range(0..3) {
                let i = rng.gen_range(0..words);
                v[i] = rng.gen();
            }
            v
        }
        4 => {
            let mut v = vec![0u64; words];
            let bit = rng.gen_range(0..bits);
            v[(bit / 64) as usize] = 1 << (bit % 64);
            v
        }
        _ => (0..words)
            .map(|_| if rng.gen_bool(0.1) { rng.gen() } else { 0 })
            .collect(),
    };
    if limbs.is_empty() {
        limbs.push(0);
    }
    bigfuse::runtime::big_from_limbs(&limbs)
}

/// Values that break carry logic: 0, 1, all ones, powers of two around limb edges, all ones in
/// the low limbs only.
pub fn edge_values(bits: u64) -> Vec<BigUint> {
    let mut v = vec![
        BigUint::from(0u8),
        BigUint::from(1u8),
        all_ones(bits),
        all_ones(bits) - 1u8,
        modulus(bits - 1),
        BigUint::from(u64::MAX),
    ];
    if bits > 64 {
        v.push(modulus(64));
        v.push(all_ones(bits - 64));
        v.push(all_ones(bits) - all_ones(64));
    }
    v
}

/// Operand pairs: every pair of edge values, then random pairs, `n` in all (at least the edges).
pub fn operand_pairs(bits: u64, n: usize, seed: u64) -> (Vec<BigUint>, Vec<BigUint>) {
    let edges = edge_values(bits);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for x in &edges {
        for y in &edges {
            a.push(x.clone());
            b.push(y.clone());
        }
    }
    let mut r = rng(seed ^ bits);
    while a.len() < n {
        let x = random_big(&mut r, bits);
        // Sometimes equal or complementary operands: the cases where comparisons and carries hinge.
        let y = match r.gen_range(0..6) {
            0 => x.clone(),
            1 => all_ones(bits) - &x,
            2 => (modulus(bits) - &x) % modulus(bits),
            _ => random_big(&mut r, bits),
        };
        let y = y % modulus(bits);
        a.push(x);
        b.push(y);
    }
    a.truncate(n.max(edges.len() * edges.len()));
    b.truncate(a.len());
    (a, b)
}

/// Sizes the tests cover: powers of two and sizes that are not.
pub const SIZES: &[u64] = &[
    64, 128, 192, 256, 320, 512, 1024, 2048, 3008, 4096, 8192, 16384, 32768, 65536, 131072, 262144,
];

/// The GPU if there is one (required with BIGFUSE_REQUIRE_GPU=1).
pub fn gpu() -> Option<bigfuse::Device> {
    bigfuse::runtime::gpu_for_tests()
        .expect("BIGFUSE_REQUIRE_GPU=1 but no GPU could be used")
        .map(bigfuse::Device::Gpu)
}

/// Both CPU levels, and the GPU when there is one. With BIGFUSE_TEST_GPU_ONLY=1 and a GPU, only
/// the GPU: a run on a lent GPU machine spends its time on the GPU's results (every test run
/// without a GPU checks both CPU levels).
pub fn devices() -> Vec<bigfuse::Device> {
    let gpu = gpu();
    if gpu.is_some() && std::env::var("BIGFUSE_TEST_GPU_ONLY").is_ok_and(|v| v == "1") {
        return gpu.into_iter().collect();
    }
    let mut devs = vec![bigfuse::Device::cpu(), bigfuse::Device::cpu_lowered()];
    devs.extend(gpu);
    devs
}

/// Compiles the kernel for these sizes with NVRTC (no GPU needed). Without the NVRTC library this
/// fails with instructions, unless BIGFUSE_SKIP_NVRTC=1.
pub fn nvrtc_compiles(kernel: &bigfuse::Kernel, sizes: &[u64]) {
    nvrtc_compiles_with(kernel, sizes, &bigfuse::Hints::default())
}

/// [`nvrtc_compiles`] with these schedule hints.
pub fn nvrtc_compiles_with(kernel: &bigfuse::Kernel, sizes: &[u64], hints: &bigfuse::Hints) {
    nvrtc_compiles_plan(&kernel.plan(sizes, &bigfuse::Target::h100(), hints).unwrap());
}

/// [`nvrtc_compiles`] for every kernel of a plan.
pub fn nvrtc_compiles_plan(plan: &bigfuse::codegen::Plan) {
    let name = &plan.parts[0].compiled.kernel_name;
    if let Err(e) = bigfuse::runtime::nvrtc::library() {
        if matches!(e, bigfuse::Error::NoCuda) {
            eprintln!("built without CUDA: skipping the compile of {name}");
            return;
        }
        if std::env::var("BIGFUSE_SKIP_NVRTC").is_ok_and(|v| v == "1") {
            eprintln!("NVRTC not available: skipping the compile of {name}");
            return;
        }
        panic!(
            "{}\n(the README's test command installs it; BIGFUSE_SKIP_NVRTC=1 skips these compiles)",
            e
        );
    }
    // With the form the runtime takes where the kernel spills, where it is likely to.
    for part in &plan.parts {
        let c = &part.compiled;
        for source in c.likely_sources() {
            if let Err(e) =
                bigfuse::runtime::nvrtc::compile_uncached(source, &c.kernel_name, "sm_90")
            {
                panic!("{e}");
            }
        }
    }
}

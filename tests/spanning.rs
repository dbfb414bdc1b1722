//! Integers and arrays longer than one block's threads: each instance spans several blocks, whose
//! carries and scans resolve by look-back (codegen/src/emit/lookback.rs). Every result against
//! num-bigint or a sequential prefix sum, with batches of 1 and 3; on the GPU at every size up to
//! 2^26 bits and 2^24 + 17 elements, on the CPU backend at the smaller ones.

mod common;

use bigfuse::prelude::*;
use bigfuse::programs::prefix_sums;
use bigfuse::{BigUint, Hints, Target};
use common::kernels::{add, compare, six_add, sub};
use common::{all_ones, modulus, random_big, rng, wrap_add, wrap_sub};
use rand::Rng;

/// A 61-bit prime.
const P: u64 = (1 << 61) - 1;

/// The default plan of `kernel` at `sizes` on an H100.
fn default_plan(kernel: &bigfuse::Kernel, sizes: &[u64]) -> bigfuse::codegen::Plan {
    kernel
        .plan(sizes, &Target::h100(), &Hints::default())
        .unwrap()
}

/// The CPU backend with `cpu` sizes, and the GPU (if any) with `gpu` sizes.
fn devices(cpu: &[u64], gpu: &[u64]) -> Vec<(Device, Vec<u64>)> {
    let mut devs = vec![(Device::cpu(), cpu.to_vec())];
    devs.extend(common::gpu().map(|g| (g, gpu.to_vec())));
    devs
}

/// Operands for `count` instances at `bits`: a carry (and a borrow) through every limb, then
/// carries that stop at block edges, then random values of the shapes `random_big` draws.
fn operands(bits: u64, count: usize, seed: u64) -> (Vec<BigUint>, Vec<BigUint>) {
    let mut r = rng(seed ^ bits);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..count {
        let (x, y) = match i {
            0 => (all_ones(bits), BigUint::from(1u8)),
            // Ones up to a limb inside the instance's second block (1984 limbs a block of 1-Add),
            // and a carry through many warps' halos (124 limbs a warp) into the third block.
            1 => (modulus(64 * 1984 + 64 * 700) - 1u8, BigUint::from(3u8)),
            2 => (
                modulus(64 * 2 * 1984 + 64 * 5) - (BigUint::from(1u8) << (64 * 1800)),
                BigUint::from(1u8) << (64 * 1800),
            ),
            _ => (random_big(&mut r, bits), random_big(&mut r, bits)),
        };
        a.push(x % modulus(bits));
        b.push(y % modulus(bits));
    }
    (a, b)
}

fn check_sums(dev: &Device, bits: u64, count: usize) {
    let (a, b) = operands(bits, count, 7);
    let s = add::run(dev, bits, &a, &b).unwrap();
    let d = sub::run(dev, bits, &a, &b).unwrap();
    let d2 = sub::run(dev, bits, &b, &a).unwrap();
    for i in 0..count {
        assert!(
            s[i] == wrap_add(&a[i], &b[i], bits),
            "a + b at {bits} bits, instance {i} of {count}, on {dev}"
        );
        assert!(
            d[i] == wrap_sub(&a[i], &b[i], bits),
            "a - b at {bits} bits, instance {i} of {count}, on {dev}"
        );
        assert!(
            d2[i] == wrap_sub(&b[i], &a[i], bits),
            "b - a at {bits} bits, instance {i} of {count}, on {dev}"
        );
    }
    let six = six_add::run(dev, bits, &a, &b).unwrap();
    for i in 0..count {
        let want = (BigUint::from(6u8) * &a[i] + BigUint::from(10u8) * &b[i]) % modulus(bits);
        assert!(
            six[i] == want,
            "6-Add at {bits} bits, instance {i} on {dev}"
        );
    }
}

/// The plan the tests rely on: these sizes span blocks.
#[test]
fn long_instances_span_blocks() {
    let plan = |bits: u64, hints: &str| {
        add::kernel()
            .unwrap()
            .plan(&[bits], &Target::h100(), &hints.parse::<Hints>().unwrap())
    };
    // 31 lanes of each warp own 4 limbs each (496 threads a 512-thread block); lane 0 is the
    // halo.
    for (bits, blocks) in [
        (1u64 << 19, 5u32),
        (1 << 22, 34),
        ((1 << 22) + 1088, 34),
        (1 << 26, 529),
    ] {
        let p = plan(bits, "").unwrap();
        assert_eq!(p.parts.len(), 1);
        let s = &p.parts[0].compiled.schedule;
        assert_eq!(
            (s.blocks_per_instance, s.lane_halo),
            (blocks, true),
            "{bits} bits"
        );
        assert!(p.parts[0].compiled.scratch.is_some());
        let explain = p.parts[0].compiled.explain();
        assert!(
            explain.contains("a halo that decides the carries"),
            "{explain}"
        );
    }
    // Chains of additions: eight limbs a thread in 256-thread blocks, still with halo lanes.
    let six = default_plan(six_add::kernel().unwrap(), &[1 << 22]);
    let s = &six.parts[0].compiled.schedule;
    assert_eq!(
        (s.blocks_per_instance, s.lane_halo, s.block_threads, s.q),
        (34, true, 256, 8)
    );
    // Chains at 2^17 and 2^18 bits span three blocks for their halo lanes (Q=6).
    for (bits, block) in [(1u64 << 17, 128), (1 << 18, 256)] {
        let six = default_plan(six_add::kernel().unwrap(), &[bits]);
        let s = &six.parts[0].compiled.schedule;
        assert_eq!(
            (s.blocks_per_instance, s.lane_halo, s.block_threads, s.q),
            (3, true, block, 6),
            "{bits} bits"
        );
    }
    // A chain of six additions does not fit four limbs of halo: no halo lanes there.
    let six4 = six_add::kernel()
        .unwrap()
        .plan(
            &[1 << 22],
            &Target::h100(),
            &"q=4".parse::<Hints>().unwrap(),
        )
        .unwrap();
    assert!(!six4.parts[0].compiled.schedule.lane_halo);
    // Scans of residues: look-back only, sixteen elements a thread.
    let scan = default_plan(prefix_sums::kernel().unwrap(), &[P, (1 << 20) + 17]);
    let s = &scan.parts[0].compiled.schedule;
    assert_eq!(
        (s.blocks_per_instance, s.lane_halo, s.block_threads, s.q),
        (257, false, 256, 16)
    );
    // Before looking back, each block prefetches the tile of the block half the resident blocks
    // later (4 blocks on each of 132 SMs): 32 KiB tiles, within the 8 MiB cap.
    assert_eq!(s.prefetch_ahead, 256);
    assert!(scan.parts[0].compiled.source.contains("prefetch.global.L2"));
    assert!(s.decisions.iter().any(|d| d.contains("prefetches into L2")));
    // Carries with halo lanes seldom wait: no prefetch; nor in one block.
    let six = default_plan(six_add::kernel().unwrap(), &[1 << 22]);
    assert!(six.parts[0].compiled.schedule.lane_halo);
    assert_eq!(six.parts[0].compiled.schedule.prefetch_ahead, 0);
    let one = default_plan(prefix_sums::kernel().unwrap(), &[P, 1 << 12]);
    assert_eq!(one.parts[0].compiled.schedule.prefetch_ahead, 0);
    // One block per instance as before: 2^22 bits do not fit one block's registers.
    assert!(
        plan(1 << 20, "span=1").unwrap().parts[0]
            .compiled
            .schedule
            .blocks_per_instance
            == 1
    );
    let e = plan(1 << 22, "span=1").unwrap_err().to_string();
    assert!(e.contains("registers"), "{e}");
}

#[test]
fn sums_and_differences_across_blocks() {
    for bits in [1u64 << 19, (1 << 22) + 1088] {
        for count in [1, 3] {
            check_sums(&Device::cpu(), bits, count);
        }
    }
    if let Some(gpu) = common::gpu() {
        for bits in [
            1u64 << 17,
            (1 << 17) + 1088,
            1 << 18,
            1u64 << 19,
            1 << 20,
            1 << 22,
            (1 << 22) + 1088,
            1 << 24,
            1 << 26,
        ] {
            for count in [1, 3] {
                check_sums(&gpu, bits, count);
            }
        }
    }
}

/// Comparisons of integers that span blocks: the reduction passes between the blocks by
/// look-back and the instance's last thread writes the answers.
fn check_comparisons(dev: &Device, bits: u64) {
    let mut r = rng(bits ^ 3);
    let x = random_big(&mut r, bits) | (BigUint::from(1u8) << (bits - 1));
    let low = BigUint::from(1u8);
    let a = vec![
        x.clone(),
        x.clone(),
        &x - &low,
        x.clone(),
        BigUint::from(0u8),
        random_big(&mut r, bits),
    ];
    let b = vec![
        x.clone(),
        &x - &low,
        x.clone(),
        x.clone() ^ (BigUint::from(1u8) << (bits / 2)),
        BigUint::from(0u8),
        random_big(&mut r, bits),
    ];
    let got = compare::run(dev, bits, &a, &b).unwrap();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let want = (x < y, x <= y, x > y, x >= y, x == y, x != y);
        let g = (got.0[i], got.1[i], got.2[i], got.3[i], got.4[i], got.5[i]);
        assert_eq!(g, want, "instance {i} at {bits} bits on {dev}");
    }
}

#[test]
fn comparisons_across_blocks() {
    let plan = default_plan(compare::kernel().unwrap(), &[1 << 22]);
    assert!(plan.parts[0].compiled.schedule.blocks_per_instance > 1);
    check_comparisons(&Device::cpu(), (1 << 22) + 1088);
    if let Some(gpu) = common::gpu() {
        for bits in [1u64 << 20, 1 << 22, (1 << 22) + 1088, 1 << 26] {
            check_comparisons(&gpu, bits);
        }
    }
}

/// A select on a comparison needs the answer in every block: the plan splits it off (the
/// comparison's kernel spans blocks, the select reads its answer as a parameter).
#[bigfuse::kernel]
fn smaller(a: U<BITS>, b: U<BITS>) -> U<BITS> {
    if a < b {
        a
    } else {
        b
    }
}

#[test]
fn selects_across_blocks() {
    let plan = default_plan(smaller::kernel().unwrap(), &[1 << 24]);
    assert_eq!(plan.parts.len(), 2);
    let gpu = [1u64 << 21, (1 << 22) + 1088, 1 << 24, 1 << 26];
    for (dev, sizes) in devices(&[(1 << 19) + 64], &gpu) {
        for bits in sizes {
            let (mut a, mut b) = operands(bits, 3, 9);
            // Equal values, and a difference in the lowest limb only.
            a.push(a[2].clone());
            b.push(a[2].clone());
            a.push(b[2].clone() ^ BigUint::from(1u8));
            b.push(b[2].clone());
            let got = smaller::run(&dev, bits, &a, &b).unwrap();
            for i in 0..a.len() {
                let want = if a[i] < b[i] { &a[i] } else { &b[i] };
                assert!(
                    got[i] == *want,
                    "min at {bits} bits, instance {i}, on {dev}"
                );
            }
        }
    }
}

/// Element-wise work alone spans blocks too (no scan, no scratch).
#[bigfuse::kernel]
fn scaled(xs: [u64; N], k: u64) -> [u64; N] {
    xs.map(|x| x * k + 1)
}

#[test]
fn maps_across_blocks() {
    let n = (1u64 << 20) + 5;
    let plan = default_plan(scaled::kernel().unwrap(), &[n]);
    let c = &plan.parts[0].compiled;
    assert!(c.schedule.blocks_per_instance > 1 && c.scratch.is_none());
    let mut r = rng(5);
    let xs: Vec<u64> = (0..2 * n).map(|_| r.gen()).collect();
    let mut devs = vec![Device::cpu()];
    devs.extend(common::gpu());
    for dev in devs {
        let got = scaled::run(&dev, n, &xs, &[3, 5]).unwrap();
        for (i, (x, g)) in xs.iter().zip(&got).enumerate() {
            let k = if (i as u64) < n { 3u64 } else { 5 };
            assert_eq!(
                *g,
                x.wrapping_mul(k).wrapping_add(1),
                "element {i} on {dev}"
            );
        }
    }
}

/// Shifts and rotations by a run-time amount read limbs of other blocks: from the operand in
/// global memory.
#[bigfuse::kernel]
fn shifts(a: U<BITS>, k: u32) -> (U<BITS>, U<BITS>, U<BITS>, U<BITS>) {
    (a << k, a >> k, a.rotate_left(k), a.rotate_right(k))
}

fn check_shifts(dev: &Device, bits: u64) {
    let mut r = rng(bits ^ 11);
    let b32 = bits as u32;
    // Limb and block edges (1984 limbs a block of 512 threads at Q=4), BITS - 1, BITS and more.
    let mut k = vec![0u32, 1, 63, 64, 65, 64 * 1984 + 3, b32 - 1, b32, b32 + 5];
    k.extend((0..3).map(|_| r.gen_range(0..b32)));
    let a: Vec<BigUint> = (0..k.len())
        .map(|i| match i {
            0 => all_ones(bits),
            _ => random_big(&mut r, bits),
        })
        .collect();
    let (l, rs, rl, rr) = shifts::run(dev, bits, &a, &k).unwrap();
    let m = modulus(bits);
    for i in 0..k.len() {
        let s = k[i] as u64;
        let ctx = format!("at {bits} bits, k = {s}, on {dev}");
        let (shl, shr) = if s >= bits {
            (BigUint::default(), BigUint::default())
        } else {
            ((&a[i] << s) % &m, &a[i] >> s)
        };
        let t = s % bits;
        let rotl = ((&a[i] << t) | (&a[i] >> (bits - t))) % &m;
        let rotr = ((&a[i] >> t) | (&a[i] << (bits - t))) % &m;
        assert!(l[i] == shl, "a << k {ctx}");
        assert!(rs[i] == shr, "a >> k {ctx}");
        assert!(rl[i] == rotl, "a.rotate_left(k) {ctx}");
        assert!(rr[i] == rotr, "a.rotate_right(k) {ctx}");
    }
}

#[test]
fn shifts_across_blocks() {
    let plan = default_plan(shifts::kernel().unwrap(), &[1 << 24]);
    assert_eq!(plan.parts.len(), 1);
    let c = &plan.parts[0].compiled;
    assert!(c.schedule.blocks_per_instance > 1 && c.scratch.is_none());
    assert!(
        c.source.contains("in global memory"),
        "gathers read the operand where it lies"
    );
    // A shift of a computed value: the plan splits there, and the shift reads the sum from
    // global memory as a parameter.
    let plan = default_plan(shifted_sum::kernel().unwrap(), &[1 << 24]);
    assert_eq!(plan.parts.len(), 2);
    let plan = default_plan(shifted_plus::kernel().unwrap(), &[1 << 24]);
    let s = &plan.parts[0].compiled.schedule;
    assert_eq!(plan.parts.len(), 1);
    assert!(s.blocks_per_instance > 1 && s.lane_halo);
    let gpu = [1u64 << 19, 1 << 20, (1 << 22) + 1088, 1 << 24, 1 << 26];
    for (dev, sizes) in devices(&[(1 << 19) + 64], &gpu) {
        for bits in sizes {
            check_shifts(&dev, bits);
            let (a, b) = operands(bits, 3, 5);
            let k = [3u32, 64 * 1984 + 1, (bits / 2) as u32];
            let got = shifted_sum::run(&dev, bits, &a, &b, &k).unwrap();
            let plus = shifted_plus::run(&dev, bits, &a, &b, &k).unwrap();
            for i in 0..3 {
                let want = (wrap_add(&a[i], &b[i], bits) << k[i]) % modulus(bits);
                assert!(
                    got[i] == want,
                    "(a + b) << {} at {bits} bits on {dev}",
                    k[i]
                );
                let shl = (&a[i] << k[i]) % modulus(bits);
                let want = wrap_add(&shl, &b[i], bits);
                assert!(
                    plus[i] == want,
                    "(a << {}) + b at {bits} bits on {dev}",
                    k[i]
                );
            }
        }
    }
}

#[bigfuse::kernel]
fn shifted_sum(a: U<BITS>, b: U<BITS>, k: u32) -> U<BITS> {
    (a + b) << k
}

/// A gather and a carry chain in one kernel whose warps carry with halo lanes.
#[bigfuse::kernel]
fn shifted_plus(a: U<BITS>, b: U<BITS>, k: u32) -> U<BITS> {
    (a << k) + b
}

fn check_prefix_sums(dev: &Device, n: u64, count: usize) {
    let mut r = rng(n);
    let xs: Vec<u64> = (0..n as usize * count)
        .map(|i| match i % 5 {
            0 => P - 1,
            _ => r.gen::<u64>() % P,
        })
        .collect();
    let got = prefix_sums::run(dev, P, n, &xs).unwrap();
    assert_eq!(got.len(), xs.len());
    for (k, (x, g)) in xs
        .chunks(n as usize)
        .zip(got.chunks(n as usize))
        .enumerate()
    {
        let mut s = 0u64;
        for (i, (v, w)) in x.iter().zip(g).enumerate() {
            s = ((s as u128 + *v as u128) % P as u128) as u64;
            assert!(
                *w == s,
                "prefix sum {i} of instance {k} (N = {n}, {count} instances) on {dev}: {w} != {s}"
            );
        }
    }
}

#[test]
fn scans_across_blocks() {
    for n in [1u64, 17, 4097, (1 << 20) + 17] {
        check_prefix_sums(&Device::cpu(), n, 1);
    }
    check_prefix_sums(&Device::cpu(), (1 << 12) + 1, 3);
    if let Some(gpu) = common::gpu() {
        for n in [
            1u64,
            17,
            256,
            4096,
            4097,
            1 << 20,
            (1 << 20) + 17,
            (1 << 22) + 3,
            (1 << 24) + 17,
        ] {
            for count in [1, 3] {
                check_prefix_sums(&gpu, n, count);
            }
        }
    }
}

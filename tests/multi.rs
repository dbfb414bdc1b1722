//! Calls split over several devices (`Devices`): the same results, in the same order, as on one
//! device, whatever the split; through `run` (BigUint), `run_into` (limbs, reused vectors) and on
//! array programs. On the CPU backend with several CPU devices (both levels, fixed and measured
//! weights); on the GPU with the GPU once and twice, and the GPU beside the CPU backend.

mod common;

use bigfuse::prelude::*;
use bigfuse::Error;
use rand::RngCore;

#[bigfuse::kernel]
fn fma(a: U<BITS>, b: U<BITS>, c: U<BITS>) -> (U<BITS>, bool) {
    (a * b + c, a < b)
}

#[bigfuse::kernel]
fn dot(xs: [Zp<P>; N], ys: [Zp<P>; N]) -> Zp<P> {
    xs.zip(ys)
        .map(|(x, y)| x * y)
        .reduce(|s, t| s + t, Zp::ZERO)
}

/// Multi-device handles over the CPU backend (and the GPU when there is one).
fn device_sets() -> Vec<Devices> {
    let mut sets = vec![
        Devices::new(vec![Device::cpu()]).unwrap(),
        Devices::new(vec![Device::cpu(), Device::cpu_lowered()]).unwrap(),
        Devices::with_weights(
            vec![Device::cpu(), Device::cpu_lowered(), Device::cpu()],
            &[1.0, 2.0, 5.0],
        )
        .unwrap(),
    ];
    if let Some(gpu) = common::gpu() {
        sets.push(Devices::new(vec![gpu.clone()]).unwrap());
        sets.push(Devices::with_weights(vec![gpu.clone(), gpu.clone()], &[3.0, 1.0]).unwrap());
        sets.push(Devices::new(vec![gpu, Device::cpu()]).unwrap());
    }
    sets
}

fn operands(bits: u64, n: usize, seed: u64) -> [Vec<BigUint>; 3] {
    let mut rng = common::rng(seed);
    let mut v = || -> Vec<BigUint> {
        (0..n)
            .map(|i| match i % 5 {
                0 => common::all_ones(bits),
                1 => BigUint::default(),
                _ => common::random_big(&mut rng, bits),
            })
            .collect()
    };
    [v(), v(), v()]
}

fn limbs(values: &[BigUint], bits: u64) -> Vec<u64> {
    let m = (bits / 64) as usize;
    values
        .iter()
        .flat_map(|x| {
            let mut l: Vec<u64> = x.iter_u64_digits().collect();
            l.resize(m, 0);
            l
        })
        .collect()
}

#[test]
fn split_calls_equal_one_device() {
    for bits in [64u64, 256, 1088] {
        for n in [0usize, 1, 2, 3, 7, 61, 1009] {
            let [a, b, c] = operands(bits, n, bits + n as u64);
            let (want, less) = fma::run(&Device::cpu(), bits, &a, &b, &c).unwrap();
            for devs in device_sets() {
                // Twice: the second call splits by the speeds the first one measured.
                for round in 0..2 {
                    let ctx = format!("{bits} bits, {n} instances, {devs:?}, round {round}");
                    let (got, got_less) = fma::run(&devs, bits, &a, &b, &c).unwrap();
                    assert_eq!(got, want, "{ctx}");
                    assert_eq!(got_less, less, "{ctx}");
                    // Limbs in, limbs out, into vectors that already hold something.
                    let (la, lb, lc) = (limbs(&a, bits), limbs(&b, bits), limbs(&c, bits));
                    let mut out = vec![7u64; 3];
                    let mut out_less = vec![true; 5];
                    fma::run_into(&devs, bits, &la, &lb, &lc, &mut out, &mut out_less).unwrap();
                    assert_eq!(out, limbs(&want, bits), "{ctx}");
                    assert_eq!(out_less, less, "{ctx}");
                }
            }
        }
    }
}

#[test]
fn split_array_programs_equal_one_device() {
    let p = 18446744073709551557u64;
    let mut rng = common::rng(7);
    for (n, batch) in [(1usize, 5usize), (10, 13), (1024, 6)] {
        let xs: Vec<u64> = (0..n * batch).map(|_| rng.next_u64() % p).collect();
        let ys: Vec<u64> = (0..n * batch).map(|_| rng.next_u64() % p).collect();
        let want = dot::run(&Device::cpu(), p, n as u64, &xs, &ys).unwrap();
        for devs in device_sets() {
            let got = dot::run(&devs, p, n as u64, &xs, &ys).unwrap();
            assert_eq!(got, want, "n={n} batch={batch} {devs:?}");
        }
    }
}

#[test]
fn bad_calls_are_errors_and_leave_no_results() {
    let devs = Devices::with_weights(vec![Device::cpu(), Device::cpu()], &[1.0, 1.0]).unwrap();
    let [a, b, c] = operands(128, 6, 1);
    // A value too wide for its parameter, in the second device's part.
    let mut wide = a.clone();
    wide[5] = BigUint::from(1u8) << 200;
    let (mut out, mut less) = (vec![BigUint::from(3u8)], vec![true]);
    let err = fma::run_into(&devs, 128, &wide, &b, &c, &mut out, &mut less).unwrap_err();
    assert!(
        matches!(err, Error::ValueTooWide { index: 5, .. }),
        "the index in the whole batch: {err}"
    );
    assert!(out.is_empty() && less.is_empty(), "no stale results");
    // Columns of different lengths.
    let err = fma::run(&devs, 128, &a, &b[..5], &c).unwrap_err();
    assert!(matches!(err, Error::BatchMismatch { .. }), "{err}");
    // A batch lives on one device.
    let batch = Batch::big(&Device::cpu(), 128, &a).unwrap();
    let err = fma::run(&devs, 128, &batch, &b, &c).unwrap_err();
    assert!(err.to_string().contains("host data"), "{err}");
    // Handles that cannot be made.
    assert!(Devices::new(Vec::new()).is_err());
    for weights in [
        vec![1.0],
        vec![1.0, 0.0],
        vec![1.0, f64::NAN],
        vec![-1.0, 1.0],
    ] {
        let err = Devices::with_weights(vec![Device::cpu(), Device::cpu()], &weights).unwrap_err();
        assert!(err.to_string().contains("positive"), "{weights:?}: {err}");
    }
}

#[test]
fn every_gpu_or_a_reason() {
    let count = Device::count();
    match Devices::gpus() {
        Ok(devs) => {
            assert_eq!(devs.devices().len(), count);
            assert!(devs.devices().iter().all(Device::is_gpu));
        }
        Err(e) => {
            assert_eq!(count, 0, "{e}");
            assert!(common::gpu().is_none(), "a GPU is there, yet: {e}");
        }
    }
}

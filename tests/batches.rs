//! Every way of passing data equals num-bigint: `run` from `BigUint` and from limbs, `run_into`
//! into reused vectors, `launch` on device-resident batches and chains of launches; on the CPU
//! backends and the GPU; with batches of 0, 1, a prime number of instances, and more chunks than
//! the call pipeline keeps in flight. Batches of the wrong type, size or device are errors.

mod common;

use bigfuse::prelude::*;
use bigfuse::{Arg, Error, Out};
use common::kernels::{add, compare, mul, poly};
use common::{modulus, random_big, rng};
use std::sync::Mutex;

/// A kernel whose values move at their own widths: bools as bytes, u32 as four bytes.
#[bigfuse::kernel]
fn narrow(flag: bool, k: u32, a: U<BITS>) -> (U<BITS>, u32, bool) {
    let doubled = a + a;
    (if flag { doubled } else { a }, k + 1, !flag)
}

/// Arrays of narrow values: per instance, the sum of N u32 and whether any flag is set.
#[bigfuse::kernel]
fn narrow_arrays(xs: [u32; N], fs: [bool; N]) -> (u32, bool, [u32; N]) {
    let s = xs.reduce(|a, b| a + b, 0u32);
    let any = fs.reduce(|a, b| a | b, false);
    let ys = xs.zip(fs).map(|(x, f)| if f { x } else { 0u32 });
    (s, any, ys)
}

/// GPU tests here set the pipeline's chunk size through the environment: one at a time.
static ENV: Mutex<()> = Mutex::new(());

fn devices() -> Vec<Device> {
    let mut d = vec![Device::cpu(), Device::cpu_lowered()];
    if let Some(g) = bigfuse::runtime::gpu_for_tests().expect("a GPU is required") {
        d.push(Device::Gpu(g));
    }
    d
}

fn values(seed: u64, n: usize, bits: u64) -> Vec<BigUint> {
    let mut r = rng(seed);
    (0..n).map(|_| random_big(&mut r, bits)).collect()
}

fn limbs(values: &[BigUint], bits: u64) -> Vec<u64> {
    let m = (bits / 64) as usize;
    let mut out = vec![0u64; values.len() * m];
    for (d, v) in out.chunks_mut(m).zip(values) {
        for (d, s) in d.iter_mut().zip(v.iter_u64_digits()) {
            *d = s;
        }
    }
    out
}

fn wrap_mul(a: &BigUint, b: &BigUint, bits: u64) -> BigUint {
    (a * b) % modulus(bits)
}

fn reference_poly(a: &BigUint, b: &BigUint, bits: u64) -> BigUint {
    ((a * a + b) * (b * b + b) + a * b) % modulus(bits)
}

/// With `instances` per chunk of the GPU pipeline (None: the default choice).
fn with_chunks<T>(instances: Option<usize>, f: impl FnOnce() -> T) -> T {
    let _guard = ENV.lock().unwrap_or_else(|p| p.into_inner());
    match instances {
        Some(c) => std::env::set_var("BIGFUSE_PIPELINE_INSTANCES", c.to_string()),
        None => std::env::remove_var("BIGFUSE_PIPELINE_INSTANCES"),
    }
    let r = f();
    std::env::remove_var("BIGFUSE_PIPELINE_INSTANCES");
    r
}

#[test]
fn every_path_equals_num_bigint() {
    for dev in devices() {
        for (bits, sizes) in [(64u64, [0usize, 1, 13, 61]), (4096, [0, 1, 13, 61])] {
            for &n in &sizes {
                let a = values(n as u64 * 7 + bits, n, bits);
                let b = values(n as u64 * 11 + bits + 1, n, bits);
                let want: Vec<BigUint> = a
                    .iter()
                    .zip(&b)
                    .map(|(x, y)| wrap_mul(x, y, bits))
                    .collect();
                let (al, bl) = (limbs(&a, bits), limbs(&b, bits));
                with_chunks(Some(5), || {
                    // BigUint in, BigUint out.
                    assert_eq!(
                        mul::run(&dev, bits, &a, &b).unwrap(),
                        want,
                        "{dev} {bits} {n}"
                    );
                    // Limbs in, limbs out, into a reused (too long, dirty) vector.
                    let mut out = vec![u64::MAX; 3 * al.len() + 5];
                    mul::run_into(&dev, bits, &al, &bl, &mut out).unwrap();
                    assert_eq!(out, limbs(&want, bits), "{dev} {bits} {n} limbs");
                    // Mixed: limbs and BigUint, into reused BigUints.
                    let mut big_out = vec![BigUint::from(12345u32); n / 2 + 3];
                    mul::run_into(&dev, bits, &al, &b, &mut big_out).unwrap();
                    assert_eq!(big_out, want);
                    // Batches on the device.
                    let (ab, bb) = (
                        Batch::big(&dev, bits, &a).unwrap(),
                        Batch::big(&dev, bits, &bl).unwrap(),
                    );
                    assert_eq!(ab.len(), n);
                    let r = mul::launch(&dev, bits, &ab, &bb).unwrap();
                    assert_eq!(r.to_big().unwrap(), want);
                    assert_eq!(r.to_limbs().unwrap(), limbs(&want, bits));
                    // A batch and host data in one call.
                    assert_eq!(mul::run(&dev, bits, &ab, &b).unwrap(), want);
                });
            }
        }
    }
}

#[test]
fn chains_stay_on_the_device() {
    for dev in devices() {
        let bits = 2048;
        let n = 37;
        let (a, b, c) = (values(1, n, bits), values(2, n, bits), values(3, n, bits));
        let (ab, bb, cb) = (
            Batch::big(&dev, bits, &a).unwrap(),
            Batch::big(&dev, bits, &b).unwrap(),
            Batch::big(&dev, bits, &c).unwrap(),
        );
        // x = a*b, y = x + c, z = poly(y, a): three launches, one read.
        let x = mul::launch(&dev, bits, &ab, &bb).unwrap();
        let y = add::launch(&dev, bits, &x, &cb).unwrap();
        let z = poly::launch(&dev, bits, &y, &ab).unwrap();
        let (lt, ..) = compare::launch(&dev, bits, &z, &x).unwrap();
        let z = z.to_big().unwrap();
        let lt = lt.to_bool().unwrap();
        for i in 0..n {
            let x = wrap_mul(&a[i], &b[i], bits);
            let y = (&x + &c[i]) % modulus(bits);
            let want = reference_poly(&y, &a[i], bits);
            assert_eq!(z[i], want, "{dev} instance {i}");
            assert_eq!(lt[i], want < x, "{dev} instance {i}");
        }
    }
}

#[test]
fn long_batches_pipeline_in_many_chunks() {
    // More chunks than the pipeline keeps in flight, the last one partial; and the default
    // chunking of a batch larger than one chunk's bytes.
    for dev in devices() {
        let bits = 512;
        let n = 1009;
        let a = values(5, n, bits);
        let b = values(6, n, bits);
        let want: Vec<BigUint> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| reference_poly(x, y, bits))
            .collect();
        for chunk in [Some(100), Some(7), None] {
            let got = with_chunks(chunk, || poly::run(&dev, bits, &a, &b).unwrap());
            assert_eq!(got, want, "{dev} chunks of {chunk:?}");
        }
    }
    if let Some(g) = bigfuse::runtime::gpu_for_tests().unwrap() {
        // About 24 MiB of transfers: several chunks of the default size.
        let dev = Device::Gpu(g);
        let bits = 4096;
        let n = 16_411;
        let a = values(7, n, bits);
        let b = values(8, n, bits);
        let got = with_chunks(None, || add::run(&dev, bits, &a, &b).unwrap());
        for i in (0..n).step_by(97).chain([n - 1]) {
            assert_eq!(got[i], (&a[i] + &b[i]) % modulus(bits), "instance {i}");
        }
    }
}

#[test]
fn narrow_values_move_at_their_width() {
    for dev in devices() {
        let bits = 256;
        let n = 29;
        let a = values(9, n, bits);
        let flags: Vec<bool> = (0..n).map(|i| i % 3 == 0).collect();
        let ks: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
        let (r, k1, nf) = with_chunks(Some(4), || {
            narrow::run(&dev, bits, &flags, &ks, &a).unwrap()
        });
        for i in 0..n {
            let want = if flags[i] {
                (&a[i] << 1u32) % modulus(bits)
            } else {
                a[i].clone()
            };
            assert_eq!(r[i], want, "{dev} {i}");
            assert_eq!(k1[i], ks[i].wrapping_add(1));
            assert_eq!(nf[i], !flags[i]);
        }
        // The same through batches of each width.
        let (rb, kb, fb) = narrow::launch(
            &dev,
            bits,
            &Batch::bool(&dev, &flags).unwrap(),
            &Batch::u32(&dev, &ks).unwrap(),
            &Batch::big(&dev, bits, &a).unwrap(),
        )
        .unwrap();
        assert_eq!(rb.to_big().unwrap(), r);
        assert_eq!(kb.to_u32().unwrap(), k1);
        assert_eq!(fb.to_bool().unwrap(), nf);

        let len = 5;
        let xs: Vec<u32> = (0..n * len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761))
            .collect();
        let fs: Vec<bool> = (0..n * len).map(|i| i % 7 == 2).collect();
        let (s, any, ys) = with_chunks(Some(3), || {
            narrow_arrays::run(&dev, len as u64, &xs, &fs).unwrap()
        });
        for i in 0..n {
            let x = &xs[i * len..(i + 1) * len];
            let f = &fs[i * len..(i + 1) * len];
            assert_eq!(
                s[i],
                x.iter().fold(0u32, |a, b| a.wrapping_add(*b)),
                "{dev} {i}"
            );
            assert_eq!(any[i], f.iter().any(|b| *b));
            for k in 0..len {
                assert_eq!(ys[i * len + k], if f[k] { x[k] } else { 0 });
            }
        }
    }
}

#[test]
fn wrong_batches_and_data_are_errors() {
    for dev in devices() {
        let a = values(10, 4, 256);
        let b256 = Batch::big(&dev, 256, &a).unwrap();
        let b128 = Batch::big(&dev, 512, &a).unwrap();
        // A batch of another size.
        let e = mul::launch(&dev, 256, &b256, &b128).unwrap_err();
        assert!(
            e.to_string()
                .contains("`b` is U<256>, but a batch of U<512>"),
            "{e}"
        );
        // A batch of another type, through the dynamic interface.
        let flags = Batch::bool(&dev, &[true, false, true, true]).unwrap();
        let e = mul::kernel()
            .unwrap()
            .run(&dev, &[256], &[Arg::Batch(&b256), Arg::Batch(&flags)])
            .unwrap_err();
        assert!(e.to_string().contains("a batch of bool"), "{e}");
        // Batches of different lengths.
        let short = Batch::big(&dev, 256, &a[..3]).unwrap();
        assert!(matches!(
            mul::launch(&dev, 256, &b256, &short),
            Err(Error::BatchMismatch { .. })
        ));
        // Limbs that are not whole values.
        let e = mul::run(&dev, 256, &[1u64, 2, 3, 4, 5][..], &a[..1]).unwrap_err();
        assert!(e.to_string().contains("4 u64 words"), "{e}");
        // A value too wide, found while converting a later chunk: an error, and no results left.
        let mut wide = values(11, 40, 256);
        wide[33] = BigUint::from(1u8) << 300u32;
        let mut out = vec![BigUint::from(1u8); 3];
        let e =
            with_chunks(Some(8), || mul::run_into(&dev, 256, &wide, &wide, &mut out)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::ValueTooWide {
                    index: 33,
                    bits: 301,
                    ..
                }
            ),
            "{dev}: {e}"
        );
        assert!(
            out.is_empty(),
            "{dev}: results of a failed call are cleared"
        );
        // Results into a vector of the wrong kind, through the dynamic interface.
        let mut bools: Vec<bool> = Vec::new();
        let e = mul::kernel()
            .unwrap()
            .run_into(
                &dev,
                &[256],
                &[Arg::Big(&a), Arg::Big(&a)],
                &mut [Out::Bool(&mut bools)],
            )
            .unwrap_err();
        assert!(e.to_string().contains("Vec<BigUint> or a Vec<u64>"), "{e}");
        // Residues must be below the modulus.
        let e = Batch::zp(&dev, 97, &[3, 97]).unwrap_err();
        assert!(e.to_string().contains("value 1 is 97"), "{e}");
        // Reading a batch as another kind.
        assert!(b256.to_bool().is_err());
    }
}

#[test]
fn batches_do_not_cross_devices() {
    let Some(g) = bigfuse::runtime::gpu_for_tests().unwrap() else {
        return;
    };
    let gpu = Device::Gpu(g);
    let cpu = Device::cpu();
    let a = values(12, 3, 128);
    let on_cpu = Batch::big(&cpu, 128, &a).unwrap();
    let on_gpu = Batch::big(&gpu, 128, &a).unwrap();
    let e = add::launch(&gpu, 128, &on_cpu, &on_gpu).unwrap_err();
    assert!(e.to_string().contains("host memory"), "{e}");
    let e = add::run(&cpu, 128, &on_gpu, &on_cpu).unwrap_err();
    assert!(e.to_string().contains("lives on GPU"), "{e}");
    // An explicit copy makes it right.
    let moved = on_cpu.copy_to(&gpu).unwrap();
    assert!(moved.is_on_gpu());
    let r = add::launch(&gpu, 128, &moved, &on_gpu).unwrap();
    r.wait().unwrap();
    assert!(r.is_ready());
    let twice: Vec<BigUint> = a.iter().map(|x| (x << 1u32) % modulus(128)).collect();
    assert_eq!(r.to_big().unwrap(), twice);
}

#[test]
fn chunked_reductions_run_on_batches() {
    // Dot products of 3000 residues: longer than one block's reduction, so the plan runs a
    // chunk kernel over n*C virtual instances, then combines the partials.
    use bigfuse::ir::{Size, Type};
    use bigfuse::programs::dot;
    let p = 4_179_340_454_199_820_289u64;
    let len = 3000usize;
    let n = 7;
    let mut r = rng(13);
    let mut draw =
        |k: usize| -> Vec<u64> { (0..k).map(|_| rand::Rng::gen_range(&mut r, 0..p)).collect() };
    let (xs, ys) = (draw(n * len), draw(n * len));
    let want: Vec<u64> = (0..n)
        .map(|i| {
            (0..len).fold(0u128, |s, k| {
                (s + xs[i * len + k] as u128 * ys[i * len + k] as u128) % p as u128
            }) as u64
        })
        .collect();
    let plan = dot::kernel()
        .unwrap()
        .plan(
            &[p, len as u64],
            &bigfuse::Target::h100(),
            &Default::default(),
        )
        .unwrap();
    assert!(plan.is_split(), "{}", plan.explain());
    let ty = Type::array(Type::Zp(Size::lit(p)), Size::lit(len as u64));
    for dev in devices() {
        let got = with_chunks(Some(3), || dot::run(&dev, p, len as u64, &xs, &ys).unwrap());
        assert_eq!(got, want, "{dev}");
        let (xb, yb) = (
            Batch::new(&dev, &ty, &xs).unwrap(),
            Batch::new(&dev, &ty, &ys).unwrap(),
        );
        assert_eq!(xb.len(), n);
        let d = dot::launch(&dev, p, len as u64, &xb, &yb).unwrap();
        assert_eq!(d.to_u64().unwrap(), want, "{dev}");
        // A batch of arrays of another length is refused.
        let short = Batch::new(
            &dev,
            &Type::array(Type::Zp(Size::lit(p)), Size::lit(1000)),
            &xs[..3000],
        )
        .unwrap();
        let e = dot::launch(&dev, p, len as u64, &xb, &short).unwrap_err();
        assert!(e.to_string().contains("a batch of [Zp<"), "{e}");
    }
}

#[test]
fn calls_from_several_threads_at_once_give_their_own_results() {
    // Pipelined calls, launches and batch reads from four threads on one device share its
    // streams and pools; each must get exactly its own results.
    for dev in devices() {
        let bits = 1024;
        // Chunks of 50 instances: every call is a pipeline of several chunks.
        with_chunks(Some(50), || {
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..4u64)
                    .map(|t| {
                        let dev = &dev;
                        s.spawn(move || {
                            for round in 0..3u64 {
                                let n = 300 + 37 * t as usize + round as usize;
                                let a = values(100 + 10 * t + round, n, bits);
                                let b = values(200 + 10 * t + round, n, bits);
                                let want: Vec<BigUint> = a
                                    .iter()
                                    .zip(&b)
                                    .map(|(x, y)| wrap_mul(x, y, bits))
                                    .collect();
                                assert_eq!(mul::run(dev, bits, &a, &b).unwrap(), want, "{dev} {t}");
                                let ab = Batch::big(dev, bits, &a).unwrap();
                                let bb = Batch::big(dev, bits, &limbs(&b, bits)).unwrap();
                                let x = mul::launch(dev, bits, &ab, &bb).unwrap();
                                let y = add::launch(dev, bits, &x, &ab).unwrap();
                                let sums: Vec<BigUint> = want
                                    .iter()
                                    .zip(&a)
                                    .map(|(w, x)| (w + x) % modulus(bits))
                                    .collect();
                                assert_eq!(y.to_big().unwrap(), sums, "{dev} {t}");
                            }
                        })
                    })
                    .collect();
                for h in handles {
                    h.join().expect("a calling thread failed");
                }
            })
        });
    }
}

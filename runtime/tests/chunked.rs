//! Chunked reductions: both kernels compile with NVRTC, and on a GPU (when there is one) the plan
//! gives the evaluator's results over a batch.

use bigfuse_codegen::{compile_plan, Hints, Plan, Target};
use bigfuse_core::{eval, specialize, BinOp, Builder, Func, Literal, Size, Type, Value};
use bigfuse_runtime::{gpu_for_tests, nvrtc};

/// The 128-bit dot product: products as (lo, hi), summed with a carry; results lo and hi.
fn dot128() -> Func {
    let pair = Type::Tuple(vec![Type::U64, Type::U64]);
    let mut w = Builder::lambda();
    let x = w.param("x", Type::U64);
    let y = w.param("y", Type::U64);
    let lo = w.mul(x, y).unwrap();
    let hi = w.binary(BinOp::MulHi, x, y).unwrap();
    let t = w.tuple(&[lo, hi]).unwrap();
    let wide = w.finish(&[t]).unwrap();
    let mut a = Builder::lambda();
    let p = a.param("p", pair.clone());
    let q = a.param("q", pair);
    let (p0, p1) = (a.extract(p, 0).unwrap(), a.extract(p, 1).unwrap());
    let (q0, q1) = (a.extract(q, 0).unwrap(), a.extract(q, 1).unwrap());
    let lo = a.add(p0, q0).unwrap();
    let c = a.lt(lo, p0).unwrap();
    let c = a.cast(c, Type::U64).unwrap();
    let hi = a.add(p1, q1).unwrap();
    let hi = a.add(hi, c).unwrap();
    let t = a.tuple(&[lo, hi]).unwrap();
    let add128 = a.finish(&[t]).unwrap();

    let mut b = Builder::new("dot128", &["N"]);
    let xs = b.param("xs", Type::array(Type::U64, Size::param(0)));
    let ys = b.param("ys", Type::array(Type::U64, Size::param(0)));
    let prods = b.map(wide, &[xs, ys]).unwrap();
    let init = Literal::Tuple(vec![Literal::U64(0), Literal::U64(0)]);
    let acc = b.reduce(add128, init, prods).unwrap();
    let lo = b.extract(acc, 0).unwrap();
    let hi = b.extract(acc, 1).unwrap();
    b.finish(&[lo, hi]).unwrap()
}

fn plan(n: u64) -> Plan {
    compile_plan(&dot128(), &[n], &Target::h100(), &Hints::default()).unwrap()
}

#[test]
fn both_kernels_of_a_chunked_reduction_compile_with_nvrtc() {
    if !nvrtc::available() {
        eprintln!("NVRTC not available: skipping");
        return;
    }
    for n in [1 << 14, 3 << 12, 1 << 20, 1 << 26] {
        let plan = plan(n);
        assert!(plan.parts.len() >= 2, "{}", plan.explain());
        for p in &plan.parts {
            let c = &p.compiled;
            if let Err(e) = nvrtc::compile_uncached(&c.source, &c.kernel_name, "sm_90") {
                panic!("N={n}: {e}");
            }
        }
    }
}

/// A cheap deterministic generator (no dependency).
fn words(seed: u64, len: usize) -> Vec<u64> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

#[test]
fn chunked_reductions_match_the_evaluator_on_the_gpu() {
    let Some(gpu) = gpu_for_tests().unwrap() else {
        return;
    };
    let f = dot128();
    let batch = 3usize;
    for n in [1u64 << 10, 1 << 14, 3 << 12, 1 << 20, 1 << 24] {
        let program = gpu.load_plan(plan(n)).unwrap();
        let len = n as usize;
        let xs = words(n, batch * len);
        let ys = words(n + 1, batch * len);
        let a = gpu.upload(&xs, "xs").unwrap();
        let b = gpu.upload(&ys, "ys").unwrap();
        let mut outs: Vec<_> = program
            .result_words()
            .iter()
            .map(|w| gpu.alloc(batch * *w as usize, "result").unwrap())
            .collect();
        program
            .launch(&gpu, batch as u64, &[&a, &b], &mut outs)
            .unwrap();
        let got: Vec<Vec<u64>> = outs
            .iter()
            .map(|o| gpu.download(o, "result").unwrap())
            .collect();
        let concrete = specialize(&f, &[n]).unwrap();
        for i in 0..batch {
            let arr = |w: &[u64]| {
                Value::Array(
                    w[i * len..(i + 1) * len]
                        .iter()
                        .map(|x| Value::U64(*x))
                        .collect(),
                )
            };
            let want = eval(&concrete, &[arr(&xs), arr(&ys)]).unwrap();
            let got: Vec<Value> = got.iter().map(|g| Value::U64(g[i])).collect();
            assert_eq!(got, want, "N={n}, instance {i}");
        }
    }
}

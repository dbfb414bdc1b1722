//! Differential fuzzing: random programs (DAGs of +, -, *, /, %, comparisons, selects, scalar operations;
//! random sizes; batches of 1, primes and more) through the compiler, compared with the reference
//! evaluator — on the CPU (lowered evaluator, every pass, NVRTC for a sample) in every test run,
//! and on the GPU whenever one is present. `bench fuzz` runs many more on a GPU.

mod common;

use bigfuse::fuzz::{array_program, as_columns, inputs, program, reference, Program};
use bigfuse::{Device, Hints, Kernel, Target};
use std::time::{Duration, Instant};

/// Seeds that once failed, kept as regression tests (programs with products). 961866: a 256-bit
/// square of a zero-extended 64-bit value was wrong on the GPU only: its carry chains' `asm`
/// let the compiler give an input (a zero word) the register of an accumulator holding zero,
/// which the chain had written by the time it read the input; accumulators are early-clobber
/// operands now (emit/chain.rs).
const REGRESSIONS: &[u64] = &[961866];

/// Batch sizes: 1, primes, and enough to fill a few blocks.
const BATCHES: &[usize] = &[1, 2, 7, 31, 97];

fn check(p: &Program, dev: &Device, nvrtc: bool) {
    let kernel = Kernel::new(p.func.clone()).unwrap();
    let n = BATCHES[(p.seed % BATCHES.len() as u64) as usize];
    let cols = inputs(p, n);
    let want = reference(p, &cols, n).unwrap();
    let args = as_columns(&cols);
    let args: Vec<_> = args.iter().map(|c| c.arg()).collect();
    let got = kernel
        .run(dev, &[p.bits], &args)
        .unwrap_or_else(|e| panic!("seed {} on {dev}: {e}", p.seed));
    assert_eq!(
        got,
        want,
        "seed {} ({} bits) on {dev}:\n{}",
        p.seed,
        p.bits,
        bigfuse::ir::print(&p.func)
    );
    // Every pass must accept the program (splitting it if it must).
    let plan = kernel
        .plan(&[p.bits], &Target::h100(), &Hints::default())
        .unwrap();
    if nvrtc && bigfuse::runtime::nvrtc::available() {
        for part in &plan.parts {
            let c = &part.compiled;
            bigfuse::runtime::nvrtc::compile_uncached(&c.source, &c.kernel_name, "sm_90")
                .unwrap_or_else(|e| panic!("seed {}: {e}", p.seed));
        }
    }
}

#[test]
fn regressions() {
    let gpu = common::gpu();
    for &seed in REGRESSIONS {
        let p = program(seed, true).unwrap();
        check(&p, &Device::cpu_lowered(), true);
        if let Some(gpu) = &gpu {
            check(&p, gpu, false);
        }
    }
}

#[test]
fn random_programs_on_the_cpu() {
    // Bounded: at most 1500 programs or 60 seconds; NVRTC compiles one in twenty-five.
    let start = Instant::now();
    let mut done = 0;
    for seed in 0..1500u64 {
        if start.elapsed() > Duration::from_secs(60) {
            break;
        }
        let p = program(seed, seed % 3 == 0).unwrap();
        check(&p, &Device::cpu_lowered(), seed % 25 == 0);
        done += 1;
    }
    assert!(done >= 20, "only {done} programs in the time budget");
    eprintln!("{done} random programs agreed with the reference evaluator");
}

#[test]
fn random_programs_on_the_gpu() {
    let Some(dev) = common::gpu() else { return };
    for seed in 1000..1200u64 {
        check(&program(seed, seed % 2 == 0).unwrap(), &dev, false);
    }
}

/// True when the kernels `p` compiles to (default hints) contain `text`.
fn kernels_contain(p: &Program, text: &str) -> bool {
    Kernel::new(p.func.clone())
        .unwrap()
        .plan(&[p.bits], &Target::h100(), &Hints::default())
        .unwrap()
        .parts
        .iter()
        .any(|part| part.compiled.source.contains(text))
}

/// The first `count` random programs at 2048 bits that raise to a power modulo a number: a group
/// of threads computes each power, and the rest of the program runs on that group's schedule.
fn programs_with_powers_in_groups(count: usize) -> Vec<Program> {
    programs_at_2048_with(count, &["pow_mod"])
}

/// The first `count` random programs at 2048 bits with an inverse: a group of threads computes
/// it (two threads, four where the program raises to a power too), and the program's gcds run
/// on that group.
fn programs_with_inverses_in_groups(count: usize) -> Vec<Program> {
    programs_at_2048_with(count, &["inv_mod"])
}

fn programs_at_2048_with(count: usize, ops: &[&str]) -> Vec<Program> {
    (0u64..)
        .map(|seed| program(seed, true).unwrap())
        .filter(|p| {
            // An operation whose result nothing reads is dropped, in lambdas too: only a live
            // one makes a group.
            let live = bigfuse::codegen::fuse::dead_code(&p.func).unwrap();
            let ir = bigfuse::ir::print(&live);
            p.bits == 2048 && ops.iter().any(|op| ir.contains(op))
        })
        .take(count)
        .collect()
}

/// The first `count` random programs (among the first 20,000 seeds) whose kernels divide whole
/// at 3008..8192 bits (one thread per instance, the divisor in local memory).
fn programs_with_wide_divisions(count: usize) -> Vec<Program> {
    (0u64..20_000)
        .map(|seed| program(seed, true).unwrap())
        .filter(|p| {
            // A device function computes the parts read: `bf_div_rem_`, `bf_div_` or `bf_rem_`;
            // or the root (`bf_isqrt_`, from 4097 bits).
            (3008..=8192).contains(&p.bits)
                && ["bf_div_", "bf_rem_", "bf_isqrt_"]
                    .iter()
                    .any(|f| kernels_contain(p, f))
        })
        .take(count)
        .collect()
}

#[test]
fn random_programs_with_wide_divisions_on_the_cpu() {
    let programs = programs_with_wide_divisions(24);
    assert_eq!(programs.len(), 24, "the generator divides at these widths");
    // Those of the GPU test: square roots among them too.
    let roots: Vec<&Program> = programs
        .iter()
        .filter(|p| kernels_contain(p, "bf_isqrt_"))
        .collect();
    assert!(!roots.is_empty(), "no square root among the wide divisions");
    for (i, p) in programs.iter().take(6).chain(roots).enumerate() {
        check(p, &Device::cpu_lowered(), i < 2 || i == 6);
    }
}

#[test]
fn random_programs_with_wide_divisions_on_the_gpu() {
    let Some(dev) = common::gpu() else { return };
    for p in programs_with_wide_divisions(24) {
        check(&p, &dev, false);
    }
}

#[test]
fn random_programs_with_powers_in_groups_on_the_cpu() {
    for (i, p) in programs_with_powers_in_groups(6).iter().enumerate() {
        assert!(
            kernels_contain(p, "_g4("),
            "seed {}: the power is not computed by a group",
            p.seed
        );
        check(p, &Device::cpu_lowered(), i < 2);
    }
}

#[test]
fn random_programs_with_powers_in_groups_on_the_gpu() {
    let Some(dev) = common::gpu() else { return };
    for p in programs_with_powers_in_groups(24) {
        check(&p, &dev, false);
    }
}

#[test]
fn random_programs_with_inverses_in_groups_on_the_cpu() {
    for (i, p) in programs_with_inverses_in_groups(6).iter().enumerate() {
        assert!(
            kernels_contain(p, "bf_inv_mod_64_g"),
            "seed {}: the inverse is not computed by a group",
            p.seed
        );
        check(p, &Device::cpu_lowered(), i < 2);
    }
}

#[test]
fn random_programs_with_inverses_in_groups_on_the_gpu() {
    let Some(dev) = common::gpu() else { return };
    // Twelve: each program's kernels take some 10 s of NVRTC on an H200 host (16 cores), and
    // 24 of them passed the GPU's 250 s (2026-11-29); `bench fuzz` runs thousands more.
    for p in programs_with_inverses_in_groups(12) {
        // Each program compiles its kernels first: the time says which one a slow run spent.
        let start = Instant::now();
        check(&p, &dev, false);
        eprintln!(
            "seed {} agrees ({:.1} s)",
            p.seed,
            start.elapsed().as_secs_f64()
        );
    }
}

#[test]
fn random_array_programs_on_the_cpu() {
    // Bounded like the big-integer programs; NVRTC compiles one in ten.
    let start = Instant::now();
    let mut done = 0;
    for seed in 0..800u64 {
        if start.elapsed() > Duration::from_secs(45) {
            break;
        }
        let p = array_program(seed).unwrap();
        check(&p, &Device::cpu_lowered(), seed % 10 == 0);
        done += 1;
    }
    assert!(done >= 20, "only {done} programs in the time budget");
    eprintln!("{done} random array programs agreed with the reference evaluator");
}

#[test]
fn random_array_programs_on_the_gpu() {
    let Some(dev) = common::gpu() else { return };
    for seed in 1000..1300u64 {
        check(&array_program(seed).unwrap(), &dev, false);
    }
}

/// The IR text of random programs, of every part they compile to and of every stage `explain`
/// shows reads back (`bigfuse::ir::parse`) into the same function: the text format loses nothing
/// on the programs the compiler really sees.
#[test]
fn random_programs_and_their_stages_read_back() {
    use bigfuse::ir::{parse, print, Func};
    let same = |f: &Func, what: &str| {
        let text = print(f);
        let back = parse(&text).unwrap_or_else(|e| panic!("{what}: {e}\n{text}"));
        assert!(back == *f, "{what} reads back differently:\n{text}");
    };
    let start = Instant::now();
    let mut done = 0;
    for seed in 0..300u64 {
        if start.elapsed() > Duration::from_secs(30) {
            break;
        }
        done += 1;
        for p in [
            program(seed, seed % 3 == 0).unwrap(),
            array_program(seed).unwrap(),
        ] {
            same(&p.func, &format!("seed {}", p.seed));
            let plan = Kernel::new(p.func.clone())
                .unwrap()
                .plan(&[p.bits], &Target::h100(), &Hints::default())
                .unwrap();
            for part in &plan.parts {
                if let bigfuse::codegen::Body::Ir(f) = &part.body {
                    same(f, &format!("a part of seed {}", p.seed));
                }
                for stage in &part.compiled.stages {
                    // A pass that changed nothing shows no program.
                    if stage.ir == bigfuse::codegen::passes::UNCHANGED {
                        continue;
                    }
                    let back = parse(&stage.ir).unwrap_or_else(|e| {
                        panic!("seed {} after {}: {e}\n{}", p.seed, stage.pass, stage.ir)
                    });
                    assert_eq!(
                        print(&back),
                        stage.ir,
                        "seed {} after {}",
                        p.seed,
                        stage.pass
                    );
                }
            }
        }
    }
    assert!(done >= 20, "only {done} seeds in the time budget");
    eprintln!("{done} seeds: programs, parts and stages read back");
}

/// A program with a mask (and so bit fields) reads back as the same program: the zero a mask starts
/// from is a literal in the form the text reads back (`Builder::mask` once made it with no limbs).
#[test]
fn masks_read_back_exactly() {
    use bigfuse::ir::{parse, print, Builder, Size, Type};
    let mut b = Builder::new("mask", &["BITS"]);
    let k = b.param("k", Type::U32);
    let m = b.mask(&Type::Big(Size::param(0)), k).unwrap();
    let f = b.finish(&[m]).unwrap();
    assert_eq!(parse(&print(&f)).unwrap(), f);
}

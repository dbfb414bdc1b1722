//! Tiered compilation: the compact schedule (what serves a GPU's first calls while the tuned
//! kernel compiles) compiles, is smaller, and gives num-bigint's results; a first call is served
//! by it and the tuned kernel takes over.

mod common;

use bigfuse::runtime::tiers;
use bigfuse::{Arg, BigUint, Column, Hints, Kernel, Tier};
use common::kernels::{add, mul, poly};

/// A one-thread division (as tests/division.rs has it).
#[bigfuse::kernel]
fn divrem(a: U<BITS>, b: U<BITS>) -> (U<BITS>, U<BITS>) {
    (a / b, a % b)
}

/// Sizes where the tuned kernels differ most: one-thread products (2^10, 2^11), classical
/// register blocks (2^12, 2^15), NTT products (2^16, 2^18).
const SIZES: [u64; 6] = [1024, 2048, 4096, 32768, 65536, 262144];

fn source_bytes(k: &Kernel, bits: u64, hints: &Hints) -> usize {
    k.plan(&[bits], &bigfuse::Target::h100(), hints)
        .unwrap()
        .parts
        .iter()
        .map(|p| p.compiled.source.len())
        .sum()
}

#[test]
fn compact_hints_fill_only_what_is_not_given() {
    let given: Hints = "width=6,ntt=131072".parse().unwrap();
    let forms = given.compact();
    assert_eq!(forms.len(), 2);
    for f in &forms {
        assert_eq!((f.mul_width, f.ntt_from_bits), (Some(6), Some(131072)));
    }
    assert_eq!(
        (forms[0].per_thread, forms[1].per_thread),
        (None, Some(false))
    );
    // A compact kernel compiles once: held coordinates, no second form to load where it spills.
    for f in &forms {
        assert_eq!(f.read_coordinates, Some(false));
    }
    let read: Hints = "coords=1".parse().unwrap();
    assert!(read
        .compact()
        .iter()
        .all(|f| f.read_coordinates == Some(true)));
    let plan = poly::kernel()
        .unwrap()
        .plan(&[65536], &bigfuse::Target::h100(), &forms[0])
        .unwrap();
    assert!(plan.parts.iter().all(|p| p.compiled.spill_free.is_none()));
    let one_thread: Hints = "thread=1".parse().unwrap();
    let forms = one_thread.compact();
    assert_eq!(forms.len(), 1);
    assert_eq!(forms[0].per_thread, Some(true));
    assert_eq!(
        forms[0].mul_width,
        Some(bigfuse::codegen::schedule::COMPACT_WIDTH)
    );
    assert_eq!(
        forms[0].ntt_from_bits,
        Some(bigfuse::codegen::schedule::COMPACT_NTT_FROM_BITS)
    );
}

fn compact_plan(k: &Kernel, bits: u64) -> Option<bigfuse::codegen::Plan> {
    k.compact_plan(&[bits], &bigfuse::Target::h100(), &Hints::default())
        .unwrap()
}

/// The products NVRTC takes longest on have a compact form worth compiling first, a fraction of
/// the tuned source, which compiles (with NVRTC, when the library is there: the test command
/// installs it); one-thread divisions, which more threads make longer, have none.
#[test]
fn compact_kernels_compile_faster_and_compile() {
    for k in [poly::kernel().unwrap(), mul::kernel().unwrap()] {
        for bits in SIZES {
            let tuned = tiers::plan_weight(
                &k.plan(&[bits], &bigfuse::Target::h100(), &Hints::default())
                    .unwrap(),
            );
            let plan = compact_plan(k, bits)
                .unwrap_or_else(|| panic!("{} at {bits} bits: no compact form", k.name()));
            let small = tiers::plan_weight(&plan);
            assert!(
                tiers::pays(tuned, small),
                "{} at {bits} bits: compact {small}, tuned {tuned} (weighted bytes)",
                k.name()
            );
            common::nvrtc_compiles_plan(&plan);
        }
    }
    // Poly at 2^11 bits is one thread per instance, 1 MB of CUDA (9.9 s of NVRTC): its compact
    // form spreads it over threads.
    let bits = 2048;
    let tuned = source_bytes(poly::kernel().unwrap(), bits, &Hints::default());
    let small = source_bytes(
        poly::kernel().unwrap(),
        bits,
        &Hints::default().compact()[1],
    );
    assert!(small * 10 < tuned, "{small} {tuned}");
    for bits in [1024, 4096] {
        assert!(compact_plan(divrem::kernel().unwrap(), bits).is_none());
    }
    assert!(!tiers::pays(1000, 901));
    assert!(tiers::pays(1000, 900));
}

fn operands(bits: u64, n: usize, seed: u64) -> (Vec<BigUint>, Vec<BigUint>) {
    let mut rng = common::rng(seed);
    let mut a: Vec<BigUint> = (0..n).map(|_| common::random_big(&mut rng, bits)).collect();
    let mut b: Vec<BigUint> = (0..n).map(|_| common::random_big(&mut rng, bits)).collect();
    // Edge values: all ones times all ones (the longest carries), and zero.
    a[0] = common::all_ones(bits);
    b[0] = common::all_ones(bits);
    b[n - 1] = BigUint::from(0u8);
    (a, b)
}

fn poly_ref(a: &BigUint, b: &BigUint, bits: u64) -> BigUint {
    ((a * a + b) * (b * b + b) + a * b) % common::modulus(bits)
}

fn expect(k: &Kernel, a: &[BigUint], b: &[BigUint], bits: u64) -> Vec<BigUint> {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            if k.name().starts_with("mul") {
                (x * y) % common::modulus(bits)
            } else {
                poly_ref(x, y, bits)
            }
        })
        .collect()
}

/// On the GPU: every compact form's results equal num-bigint's at every size (7 instances, a
/// prime number, with edge values).
#[test]
fn compact_kernels_equal_num_bigint_on_the_gpu() {
    let Some(dev) = common::gpu() else {
        eprintln!("no GPU: skipped");
        return;
    };
    for k in [poly::kernel().unwrap(), mul::kernel().unwrap()] {
        for (i, bits) in SIZES.into_iter().enumerate() {
            let (a, b) = operands(bits, 7, i as u64);
            for form in Hints::default().compact() {
                let got = k
                    .run_with(&dev, &[bits], &[Arg::Big(&a), Arg::Big(&b)], &form)
                    .unwrap();
                assert_eq!(
                    got,
                    [Column::Big(expect(k, &a, &b, bits))],
                    "{} at {bits} bits, {form}",
                    k.name()
                );
            }
        }
    }
}

/// A kernel no cache can hold: the program of `k` under a name of this process and moment.
fn fresh(k: &Kernel, what: &str) -> Kernel {
    let mut f = k.func().clone();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    f.name = format!("{what}_{}_{nanos}", std::process::id());
    Kernel::new(f).unwrap()
}

/// A first call of a kernel that is slow to compile is served by the compact tier; `prepare`
/// waits for the tuned kernel, which then serves; a kernel that compiles fast is never tiered.
#[test]
fn first_calls_are_served_while_the_tuned_kernel_compiles() {
    let Some(dev) = common::gpu() else {
        eprintln!("no GPU: skipped");
        return;
    };
    let bigfuse::Device::Gpu(gpu) = &dev else {
        unreachable!()
    };
    let auto = bigfuse::runtime::tiers::mode() == bigfuse::runtime::tiers::Mode::Auto;
    let hints = bigfuse::runtime::env_hints();
    for bits in [32768u64, 262144] {
        let k = fresh(poly::kernel().unwrap(), "poly_tiers");
        let (a, b) = operands(bits, 5, bits);
        let want = [Column::Big(expect(&k, &a, &b, bits))];
        assert_eq!(k.serving(gpu, &[bits], &hints), None);
        let args = [Arg::Big(&a), Arg::Big(&b)];
        assert_eq!(k.run(&dev, &[bits], &args).unwrap(), want, "{bits} bits");
        let first = k.serving(gpu, &[bits], &hints);
        if auto {
            // The tuned compile started after the compact one finished and takes longer.
            assert_eq!(first, Some(Tier::Compact), "{bits} bits");
            let batch = &k.launch(&dev, &[bits], &args).unwrap()[0];
            assert_eq!(Column::Big(batch.to_big().unwrap()), want[0]);
        }
        k.prepare(gpu, &[bits]).unwrap();
        assert_eq!(k.serving(gpu, &[bits], &hints), Some(Tier::Tuned));
        assert_eq!(k.run(&dev, &[bits], &args).unwrap(), want, "{bits} bits");
    }
    // `prepare_on` (the macro's `prepare`) leaves the tuned kernel loaded before any call.
    let k = fresh(poly::kernel().unwrap(), "poly_prepared");
    k.prepare_on(&dev, &[4096]).unwrap();
    assert_eq!(k.serving(gpu, &[4096], &hints), Some(Tier::Tuned));
    let k = fresh(add::kernel().unwrap(), "add_tiers");
    let (a, b) = operands(4096, 3, 1);
    let got = k.run(&dev, &[4096], &[Arg::Big(&a), Arg::Big(&b)]).unwrap();
    let sums: Vec<BigUint> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| common::wrap_add(x, y, 4096))
        .collect();
    assert_eq!(got, [Column::Big(sums)]);
    if auto {
        assert_eq!(k.serving(gpu, &[4096], &hints), Some(Tier::Tuned));
    }
}

/// `explain` says what serves the first calls: the compact form for a long kernel, the tuned one
/// for a short kernel or where no compact form pays.
#[test]
fn explain_names_the_first_calls_tier() {
    let cpu = bigfuse::Device::cpu();
    let text = poly::kernel().unwrap().explain(&cpu, &[32768]).unwrap();
    assert!(
        text.contains("== tiers ==\nfirst calls with empty caches: the compact form `"),
        "{text}"
    );
    let text = add::kernel().unwrap().explain(&cpu, &[4096]).unwrap();
    assert!(
        text.contains("first calls with empty caches: the tuned kernel (3 KB of CUDA, under 16 KB"),
        "{text}"
    );
    let text = divrem::kernel().unwrap().explain(&cpu, &[1024]).unwrap();
    assert!(
        text.contains("no compact form compiles a tenth faster"),
        "{text}"
    );
}

/// The macro's `prepare` has nothing to compile on the CPU backend.
#[test]
fn prepare_on_the_cpu_is_a_no_op() {
    poly::prepare(&bigfuse::Device::cpu(), 4096).unwrap();
    poly::kernel()
        .unwrap()
        .prepare_on(&bigfuse::Device::cpu_lowered(), &[4096])
        .unwrap();
}

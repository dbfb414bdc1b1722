//! `bench modexp`: `x.pow_mod(e, m)` (Montgomery; one thread per instance up to 1024 bits, a group
//! of threads from 2048) at 256..4096-bit odd moduli, a 512-bit exponent (CGBN's own benchmark
//! shape) and a full-length one, in operations per second: the kernel alone (CUDA events,
//! median), checked against num-bigint's `modpow` on sampled instances first, next to GMP's
//! `mpz_powm` on all host cores (through rug, behind the `gmp` feature) and CGBN's figures
//! measured on an H200 (../shared/anchors).

use crate::measure::{odd_modulus, rate_cell, Measured};
use bigfuse::ir::{Builder, Func, Size, Type};
use bigfuse::runtime::GpuDevice;
use bigfuse::{Hints, Kernel};
use rand::{Rng, SeedableRng};
use std::fmt::Write as _;

/// The kernel: `x^e mod m` with `x, m: U<BITS>`, `e: U<E>`.
pub fn func() -> Func {
    let mut b = Builder::new("modexp", &["BITS", "E"]);
    let x = b.param("x", Type::Big(Size::param(0)));
    let e = b.param("e", Type::Big(Size::param(1)));
    let m = b.param("m", Type::Big(Size::param(0)));
    let r = b.pow_mod(x, e, m).expect("pow_mod is well typed");
    b.finish(&[r]).expect("pow_mod is well typed")
}

/// CGBN's modexp with a 512-bit exponent on an H200, best TPI, operations per second
/// (../shared/anchors/h200-2026-11-23.md), where measured.
fn cgbn(bits: u64) -> Option<f64> {
    match bits {
        1024 => Some(4.10e6),
        2048 => Some(1.087e6),
        4096 => Some(284e3),
        _ => None,
    }
}

pub struct Row {
    pub bits: u64,
    pub ebits: u64,
    pub n: u64,
    /// The schedule variant (`default`, or hints such as `block=256`).
    pub variant: String,
    pub gpu: Result<Measured, String>,
    pub gmp_per_s: Option<f64>,
}

impl Row {
    pub fn per_s(&self) -> Option<f64> {
        self.gpu
            .as_ref()
            .ok()
            .map(|m| self.n as f64 / (m.ms * 1e-3))
    }
}

/// Instances on the GPU: enough to fill it several times over with one thread each.
fn instances(bits: u64, ebits: u64) -> u64 {
    let work = bits * bits * ebits; // about proportional to one power's time
    let n = (1u64 << 48) / work.max(1);
    n.clamp(1 << 15, 1 << 18).next_power_of_two()
}

/// Times every size (and, with `full`, a full-length exponent besides the 512-bit one) under
/// every variant, printing each row as it is measured (a long run cut short keeps its rows).
pub fn run(
    gpu: &GpuDevice,
    runs: usize,
    sizes: &[u64],
    full: bool,
    variants: &[crate::variant::Variant],
) -> bigfuse::Result<(f64, Vec<Row>)> {
    let kernel = Kernel::new(func())?;
    // The same-run copy bandwidth every figure stands next to (powers are bound by arithmetic).
    let copy = crate::measure::same_run_copy(gpu, runs)?;
    let mut rows = Vec::new();
    for &bits in sizes {
        let shapes: Vec<u64> = if full && bits != 512 {
            vec![512, bits]
        } else {
            vec![512]
        };
        for ebits in shapes {
            if crate::stopped() {
                return Ok((copy, rows));
            }
            let n = instances(bits, ebits);
            eprintln!("  modexp {bits} bits, {ebits}-bit exponent, {n} instances");
            let mut rng = rand::rngs::StdRng::seed_from_u64(bits ^ (ebits << 20));
            let s = (bits / 64) as usize;
            let x: Vec<u64> = (0..n as usize * s).map(|_| rng.gen()).collect();
            let e: Vec<u64> = (0..n as usize * (ebits / 64) as usize)
                .map(|_| rng.gen())
                .collect();
            let m: Vec<u64> = (0..n).flat_map(|_| odd_modulus(&mut rng, bits)).collect();
            let gmp_per_s = gmp::per_s(bits, ebits, (&x, &e, &m), runs.min(3))?;
            for v in variants {
                let gpu_row = measure(gpu, &kernel, &v.hints, runs, bits, ebits, n, (&x, &e, &m));
                let row = Row {
                    bits,
                    ebits,
                    n,
                    variant: v.name.clone(),
                    gpu: gpu_row.map_err(|e| e.to_string()),
                    gmp_per_s,
                };
                eprintln!("    {}", line(&row));
                rows.push(row);
            }
        }
    }
    Ok((copy, rows))
}

#[allow(clippy::too_many_arguments)]
fn measure(
    gpu: &GpuDevice,
    kernel: &Kernel,
    hints: &Hints,
    runs: usize,
    bits: u64,
    ebits: u64,
    n: u64,
    (x, e, m): (&[u64], &[u64], &[u64]),
) -> bigfuse::Result<Measured> {
    let t = std::time::Instant::now();
    let program = kernel.prepare_with(gpu, &[bits, ebits], hints)?;
    eprintln!("    compiled in {:.1} s", t.elapsed().as_secs_f64());
    let (s, k) = ((bits / 64) as usize, (ebits / 64) as usize);
    let big = bigfuse::runtime::big_from_limbs;
    crate::measure::check_and_time(
        gpu,
        &program,
        runs,
        n,
        bits,
        &[(x, "bases"), (e, "exponents"), (m, "moduli")],
        "modexp",
        |i, got| {
            let want = big(&x[i * s..(i + 1) * s])
                .modpow(&big(&e[i * k..(i + 1) * k]), &big(&m[i * s..(i + 1) * s]));
            big(&got[i * s..(i + 1) * s]) == want
        },
    )
}

pub fn table(gpu: &str, runs: usize, copy_gbs: f64, rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GPU: {gpu}; same-run device-to-device copy {copy_gbs:.0} GB/s (read + written). x^e mod m, odd m with its top bit set, random x and e; operations per second = \
         instances / kernel time (median of {runs}); checked against num-bigint's modpow on sampled \
         instances. GMP: mpz_powm ({}) on all host cores. CGBN: its modexp with a 512-bit exponent, \
         best TPI, on an H200 (../shared/anchors).\n",
        gmp::describe()
    );
    let _ = writeln!(
        s,
        "| modulus bits | exponent bits | variant | instances | ops/s | GMP ops/s | / GMP | CGBN ops/s | / CGBN | kernel |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let _ = writeln!(s, "{}", line(r));
    }
    s
}

/// One row of the table.
fn line(r: &Row) -> String {
    let anchor = if r.ebits == 512 { cgbn(r.bits) } else { None };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}x", a / b),
        _ => "-".into(),
    };
    let kernel = match &r.gpu {
        Ok(m) => format!(
            "{} regs, {} B local, {:.2} ms",
            m.registers, m.local_bytes, m.ms
        ),
        Err(e) => format!("failed: {e}"),
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {kernel} |",
        r.bits,
        r.ebits,
        r.variant,
        r.n,
        rate_cell(r.per_s()),
        rate_cell(r.gmp_per_s),
        ratio(r.per_s(), r.gmp_per_s),
        rate_cell(anchor),
        ratio(r.per_s(), anchor),
    )
}

pub fn failures(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            r.gpu
                .as_ref()
                .err()
                .map(|e| format!("{} bits, {}-bit exponent: {e}", r.bits, r.ebits))
        })
        .collect()
}

/// GMP's `mpz_powm` on every host core over the first instances (enough for a second or so).
mod gmp {
    #[cfg(not(feature = "gmp"))]
    pub fn describe() -> String {
        crate::gmp::describe()
    }

    #[cfg(not(feature = "gmp"))]
    pub fn per_s(
        _bits: u64,
        _ebits: u64,
        _ops: (&[u64], &[u64], &[u64]),
        _runs: usize,
    ) -> bigfuse::Result<Option<f64>> {
        Ok(None)
    }

    #[cfg(feature = "gmp")]
    pub fn describe() -> String {
        crate::gmp::describe()
    }

    #[cfg(feature = "gmp")]
    pub fn per_s(
        bits: u64,
        ebits: u64,
        (x, e, m): (&[u64], &[u64], &[u64]),
        runs: usize,
    ) -> bigfuse::Result<Option<f64>> {
        use rayon::prelude::*;
        use rug::Integer;
        let s = (bits / 64) as usize;
        // About half a second of work: a first pass over 64 instances gives the rate.
        let probe = std::time::Instant::now();
        let k = (ebits / 64) as usize;
        let first = 64.min(x.len() / s);
        (0..first).into_par_iter().for_each(|i| {
            let one = |v: &[u64], b: u64| crate::gmp::integers(b, v).remove(0);
            let _ = one(&x[i * s..(i + 1) * s], bits)
                .pow_mod_ref(
                    &one(&e[i * k..(i + 1) * k], ebits),
                    &one(&m[i * s..(i + 1) * s], bits),
                )
                .map(Integer::from);
        });
        let rate = first as f64 / probe.elapsed().as_secs_f64().max(1e-6);
        let count = ((rate * 0.5) as usize).clamp(first, (x.len() / s).min(1 << 14));
        let xs = crate::gmp::integers(bits, &x[..count * s]);
        let es = crate::gmp::integers(ebits, &e[..count * (ebits / 64) as usize]);
        let ms = crate::gmp::integers(bits, &m[..count * s]);
        let mut out: Vec<Integer> = vec![Integer::new(); count];
        let ms_wall = crate::measure::median_wall_ms(1, runs, |_| {
            out.par_iter_mut().enumerate().for_each(|(i, o)| {
                *o = xs[i]
                    .pow_mod_ref(&es[i], &ms[i])
                    .map(Integer::from)
                    .unwrap_or_default();
            });
            Ok(())
        })?;
        let big = |v: &Integer| crate::gmp::big(v);
        if big(&out[0]) != big(&xs[0]).modpow(&big(&es[0]), &big(&ms[0])) {
            return Err(bigfuse::Error::Argument {
                kernel: "GMP modexp".into(),
                message: "instance 0 differs from num-bigint".into(),
            });
        }
        Ok(Some(count as f64 / (ms_wall * 1e-3)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse::ir::{eval, specialize, Value};

    #[test]
    fn the_kernel_means_modpow() {
        let f = specialize(&func(), &[256, 512]).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for _ in 0..4 {
            let big = |v: Vec<u64>| bigfuse::runtime::big_from_limbs(&v);
            let x = big((0..4).map(|_| rng.gen()).collect());
            let e = big((0..8).map(|_| rng.gen()).collect());
            let m = big(odd_modulus(&mut rng, 256));
            let got = eval(
                &f,
                &[
                    Value::Big(x.clone()),
                    Value::Big(e.clone()),
                    Value::Big(m.clone()),
                ],
            )
            .unwrap();
            assert_eq!(got, vec![Value::Big(x.modpow(&e, &m))]);
        }
    }

    #[test]
    fn instance_counts_shrink_with_the_work() {
        assert!(instances(256, 512) >= instances(4096, 4096));
        assert!(instances(4096, 4096) >= 1 << 13);
    }
}

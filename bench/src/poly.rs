//! `bench poly`: products of polynomials over Z (bigfuse::poly, multi-prime NTT + CRT) in
//! Emeliyanenko's metric, the whole GPU pipeline timed (residues, the products modulo each prime,
//! Chinese remaindering), results checked against a schoolbook num-bigint product first.

use crate::json::fixed;
use crate::measure::{copy_gbs, median_ms};
use bigfuse::poly::{schoolbook, PolyMul};
use bigfuse::runtime::GpuDevice;
use bigfuse::BigUint;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;
use std::fmt::Write;

/// Coefficients per input in one timed call (batch = 2^COEFF_LOG / N): 2^20 coefficients of up to
/// 256 bits are 32 MiB per input and 2^21 product coefficients of up to 576 bits, 151 MiB.
pub const COEFF_LOG: u32 = 20;
pub const LOGS: std::ops::RangeInclusive<u32> = 8..=12;
pub const BITS: [u64; 3] = [64, 128, 256];

pub struct PolyRow {
    pub log_n: u32,
    pub bits: u64,
    pub primes: usize,
    pub copy_gbs: f64,
    pub ms: Result<f64, String>,
}

impl PolyRow {
    pub fn batch(&self) -> u64 {
        1 << (COEFF_LOG - self.log_n)
    }

    /// Emeliyanenko's count per prime, batch * (3 * 2.5 * M log2 M + 2M) with M = 2N the transform
    /// length, summed over the primes, per second (G).
    pub fn gmul(&self) -> f64 {
        let m = 2.0 * (1u64 << self.log_n) as f64;
        let per_prime = 3.0 * 2.5 * m * m.log2() + 2.0 * m;
        match &self.ms {
            Ok(ms) => self.primes as f64 * self.batch() as f64 * per_prime / (ms * 1e-3) / 1e9,
            Err(_) => f64::NAN,
        }
    }

    pub fn products_per_s(&self) -> f64 {
        match &self.ms {
            Ok(ms) => self.batch() as f64 / (ms * 1e-3),
            Err(_) => f64::NAN,
        }
    }
}

fn one(gpu: &GpuDevice, runs: usize, log_n: u32, bits: u64) -> bigfuse::Result<(usize, f64)> {
    let n = 1u64 << log_n;
    let batch = 1u64 << (COEFF_LOG - log_n);
    let pm = PolyMul::new(n, bits)?;
    let l = (bits / 64) as usize;
    let mut rng = rand::rngs::StdRng::seed_from_u64(log_n as u64 * 1000 + bits);
    let mut limbs = |fill_ones: bool| -> Vec<u64> {
        (0..(batch * n) as usize * l)
            .map(|i| {
                if fill_ones && i < n as usize * l {
                    u64::MAX
                } else {
                    rng.gen()
                }
            })
            .collect()
    };
    // The first product has all-ones coefficients: the largest results the primes must hold.
    let (ah, bh) = (limbs(true), limbs(true));
    let a = gpu.upload(&ah, "a")?;
    let b = gpu.upload(&bh, "b")?;
    let prepared = pm.prepare(gpu)?;
    let mut buffers = pm.buffers(gpu, batch)?;
    pm.launch_into(gpu, &prepared, batch, &a, &b, &mut buffers)?;
    let words = gpu.download(&buffers.out, "products")?;
    let w = (pm.out_bits / 64) as usize;
    let coeffs = |h: &[u64], k: usize| -> Vec<BigUint> {
        (0..n as usize)
            .map(|j| bigfuse::runtime::big_from_limbs(&h[(k * n as usize + j) * l..][..l]))
            .collect()
    };
    [0usize, batch as usize - 1].par_iter().try_for_each(|&k| {
        let want = schoolbook(&coeffs(&ah, k), &coeffs(&bh, k));
        let got: Vec<BigUint> = (0..2 * n as usize)
            .map(|j| bigfuse::runtime::big_from_limbs(&words[(k * 2 * n as usize + j) * w..][..w]))
            .collect();
        if got == want {
            Ok(())
        } else {
            Err(bigfuse::Error::Argument {
                kernel: "poly_mul".into(),
                message: format!(
                    "product {k} at N=2^{log_n}, {bits} bits differs from the schoolbook product"
                ),
            })
        }
    })?;
    let ms = median_ms(gpu, runs, || {
        pm.launch_into(gpu, &prepared, batch, &a, &b, &mut buffers)
    })?;
    Ok((pm.primes.len(), ms))
}

pub fn poly(gpu: &GpuDevice, runs: usize) -> bigfuse::Result<Vec<PolyRow>> {
    let src = gpu.alloc(1 << 26, "copy source")?;
    let mut scratch = gpu.alloc(1 << 26, "copy target")?;
    let mut rows = Vec::new();
    for bits in BITS {
        for log_n in LOGS {
            if crate::stopped() {
                return Ok(rows);
            }
            eprintln!(
                "  poly: N = 2^{log_n}, {bits}-bit coefficients, batch 2^{}",
                COEFF_LOG - log_n
            );
            let copy = copy_gbs(gpu, runs, &src, &mut scratch)?;
            let (primes, ms) = match one(gpu, runs, log_n, bits) {
                Ok((k, ms)) => (k, Ok(ms)),
                Err(e) => {
                    eprintln!("    poly: {e}");
                    (0, Err(e.to_string()))
                }
            };
            rows.push(PolyRow {
                log_n,
                bits,
                primes,
                copy_gbs: copy,
                ms,
            });
        }
    }
    Ok(rows)
}

pub fn table(gpu: &str, runs: usize, rows: &[PolyRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GPU: {gpu}. Products of polynomials over Z (bigfuse::poly: residues, NTT products modulo K \
         62-bit primes, Garner CRT, all on the GPU), batch = 2^{COEFF_LOG} / N products, median of {runs}. \
         GMul/s = K * batch * (3 * 2.5 * M log2 M + 2M) / time with M = 2N (Emeliyanenko's count, per prime, \
         summed over primes); time covers the whole pipeline. Copy: same-run device-to-device copy (GB/s).\n"
    );
    let _ = writeln!(
        s,
        "| N | bits | K primes | batch | ms | products/s | GMul/s | copy GB/s |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    for r in rows {
        let (ms, gm, pps) = match &r.ms {
            Ok(ms) => (
                format!("{ms:.3}"),
                format!("{:.1}", r.gmul()),
                format!("{:.3e}", r.products_per_s()),
            ),
            Err(_) => ("-".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "| 2^{} | {} | {} | 2^{} | {ms} | {pps} | {gm} | {:.0} |",
            r.log_n,
            r.bits,
            r.primes,
            COEFF_LOG - r.log_n,
            r.copy_gbs
        );
    }
    s
}

/// The JSON of `bench poly`.
#[derive(Serialize)]
struct PolyJson<'a> {
    gpu: &'a str,
    runs: usize,
    rows: Vec<PolyRowJson>,
}

#[derive(Serialize)]
struct PolyRowJson {
    log_n: u32,
    bits: u64,
    primes: usize,
    batch: u64,
    ms: Option<f64>,
    gmul_per_s: Option<f64>,
    copy_gbs: Option<f64>,
}

pub fn json(gpu: &str, runs: usize, rows: &[PolyRow]) -> String {
    crate::json::pretty(&PolyJson {
        gpu,
        runs,
        rows: rows
            .iter()
            .map(|r| PolyRowJson {
                log_n: r.log_n,
                bits: r.bits,
                primes: r.primes,
                batch: r.batch(),
                ms: r.ms.as_ref().ok().and_then(|ms| fixed(*ms, 4)),
                gmul_per_s: fixed(r.gmul(), 2),
                copy_gbs: fixed(r.copy_gbs, 1),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::tests::{gpu_reads_back, same_shape, AWKWARD_GPU};

    #[test]
    fn json_is_escaped_and_shaped_as_before() {
        let rows = vec![
            PolyRow {
                log_n: 8,
                bits: 64,
                primes: 3,
                copy_gbs: 4128.84,
                ms: Ok(0.444_149),
            },
            PolyRow {
                log_n: 9,
                bits: 64,
                primes: 3,
                copy_gbs: 4151.2,
                ms: Err("too big".into()),
            },
        ];
        let v = gpu_reads_back(&json(AWKWARD_GPU, 10, &rows), "/gpu");
        let row = &v["rows"][0];
        assert_eq!(row["batch"], 4096);
        assert_eq!(row["ms"], 0.4441);
        assert_eq!(row["gmul_per_s"], (rows[0].gmul() * 100.0).round() / 100.0);
        assert_eq!(row["copy_gbs"], 4128.8);
        assert!(v["rows"][1]["ms"].is_null());
        assert!(v["rows"][1]["gmul_per_s"].is_null());
        same_shape(
            &v,
            include_str!("../results/poly-h200-2026-11-22.json"),
            &[("", &[]), ("/rows/0", &[])],
        );
    }
}

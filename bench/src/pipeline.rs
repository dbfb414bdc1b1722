//! `bench pipeline`: how a call's time from host data depends on how the pipeline cuts the batch.
//! For each Done-when size of issue 10 (mul and Poly at 4096 bits x 2^16 and 2^15 bits x 2^12),
//! `run_into` from limbs (b) and `run` from `BigUint` (a) are timed with the batch cut into k
//! chunks (`BIGFUSE_PIPELINE_INSTANCES` = ceil(n / k)) and with the runtime's own choice (k = 0),
//! next to the PCIe floor of the same run. What the runtime's choice should be is read off these
//! tables (bench/RESULTS.md).

use crate::e2e::random_operands;
use crate::e2e_report::BAR_SIZES;
use crate::measure::{bigs, median_wall_ms, verify};
use crate::ops::Op;
use crate::pcie;
use bigfuse::runtime::GpuDevice;
use bigfuse::{BigUint, Device};
use std::fmt::Write;
use std::sync::Arc;

/// Untimed calls before each figure.
const WARMUP: usize = 2;

pub struct Options {
    pub ops: Vec<Op>,
    /// Chunk counts to try (0: the runtime's choice).
    pub chunks: Vec<usize>,
    pub runs: usize,
}

/// Sets the pipeline's chunk size for the calls that follow (`None`: the runtime's choice).
fn set_chunk(instances: Option<usize>) {
    match instances {
        Some(c) => std::env::set_var("BIGFUSE_PIPELINE_INSTANCES", c.to_string()),
        None => std::env::remove_var("BIGFUSE_PIPELINE_INSTANCES"),
    }
}

pub fn run(o: &Options) -> Result<String, String> {
    let gpu = Arc::new(GpuDevice::new(0).map_err(|e| format!("opening the GPU: {e}"))?);
    let dev = Device::Gpu(gpu.clone());
    let bw = pcie::measure(&gpu, o.runs, pcie::COPY_BYTES).map_err(|e| e.to_string())?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "bench pipeline on {}, {} host threads, pinned PCIe {:.1} GB/s up, {:.1} GB/s down, medians of {}",
        gpu.target().name,
        rayon::current_num_threads(),
        bw.h2d_gbs,
        bw.d2h_gbs,
        o.runs
    );
    let _ = writeln!(
        out,
        "\n| op | NumBits x n | chunks asked | instances per chunk | (b) limbs ms | (a) BigUint ms | PCIe floor ms | (b)/PCIe | (a)/PCIe |\n|---|---|---|---|---|---|---|---|---|"
    );
    for (bits, n) in BAR_SIZES {
        let sets: Vec<(Vec<u64>, Vec<u64>)> = (0..2).map(|s| random_operands(bits, n, s)).collect();
        let big: Vec<(Vec<BigUint>, Vec<BigUint>)> = sets
            .iter()
            .map(|(a, b)| (bigs(a, bits), bigs(b, bits)))
            .collect();
        let bytes = 3.0 * (n * bits / 8) as f64;
        let floor =
            crate::e2e_report::transfer_ms(2.0 * bytes / 3.0, bytes / 3.0, bw.h2d_gbs, bw.d2h_gbs);
        for &op in &o.ops {
            let mut limbs_out: Vec<u64> = Vec::new();
            for &k in &o.chunks {
                if crate::stopped() {
                    return Ok(out);
                }
                let c = (k > 0).then(|| (n as usize).div_ceil(k));
                set_chunk(c);
                let measured = (|| -> bigfuse::Result<(f64, f64)> {
                    let (a, b) = &sets[0];
                    op.run_into_limbs(&dev, bits, a, b, &mut limbs_out)?;
                    verify(
                        (a, b),
                        &format!("{} run_into", op.name()),
                        bits,
                        n as usize,
                        &limbs_out,
                        op.reference(),
                    )?;
                    let b_ms = median_wall_ms(WARMUP, o.runs, |i| {
                        let (a, b) = &sets[i % 2];
                        op.run_into_limbs(&dev, bits, a, b, &mut limbs_out)
                    })?;
                    let a_ms = median_wall_ms(WARMUP, o.runs, |i| {
                        let (a, b) = &big[i % 2];
                        op.run_big(&dev, bits, a, b)
                    })?;
                    Ok((b_ms, a_ms))
                })();
                set_chunk(None);
                let label = if k == 0 {
                    "runtime".into()
                } else {
                    k.to_string()
                };
                let per = c.map_or("runtime".into(), |c| c.to_string());
                match measured {
                    Ok((b_ms, a_ms)) => {
                        let _ = writeln!(
                            out,
                            "| {} | {bits} x {n} | {label} | {per} | {b_ms:.3} | {a_ms:.3} | {floor:.3} | {:.2}x | {:.2}x |",
                            op.name(),
                            b_ms / floor,
                            a_ms / floor
                        );
                    }
                    Err(e) => {
                        let _ = writeln!(
                            out,
                            "| {} | {bits} x {n} | {label} | {per} | failed: {e} | | | | |",
                            op.name()
                        );
                    }
                }
                eprint!(".");
            }
        }
    }
    eprintln!();
    Ok(out)
}

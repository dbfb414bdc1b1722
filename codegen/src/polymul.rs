//! Products of polynomials over Z/pZ (p < 2^64 prime), for `poly_mul`: both operands, zero-padded
//! to a power-of-two length M >= 2N, are transformed in shared memory (decimation in frequency:
//! natural order in, bit-reversed out) one after the other in one buffer — the first transform
//! waits in registers, M/T elements per thread — multiplied pointwise, transformed back
//! (decimation in time: bit-reversed in, natural out) and scaled by M^-1. Everything is in Montgomery form, so every
//! product is one `redc`; the twiddles are a constant table. The CPU model below follows the GPU
//! code step by step, so the arithmetic and the indexing are tested without a GPU.

use crate::error::{CgResult, CodegenError};
use bigfuse_core::modular::{mul_mod, pow_mod, Montgomery};

/// The longest transform a block holds: 2^14 u64 use 128 KiB of shared memory (one buffer; the
/// first operand's transform waits in registers), which covers polynomials of degree 2^12.
pub const MAX_LOG_M: u32 = 14;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolyPlan {
    /// Coefficients of each operand.
    pub n: u64,
    pub log_m: u32,
    pub mont: Montgomery,
    /// A primitive M-th root of unity (as an integer).
    pub root: u64,
}

impl PolyPlan {
    pub fn m(&self) -> u64 {
        1 << self.log_m
    }

    /// Threads per instance: eight butterflies each per stage (16 transform elements waiting in
    /// registers), at least a warp, at most 1024.
    pub fn threads(&self) -> u32 {
        (self.m() / 16).clamp(32, 1024) as u32
    }

    /// Whether both transforms fit in shared memory side by side (up to 2^13 points: 128 KiB),
    /// so that one pass of butterflies serves both operands; beyond that the first transform waits
    /// in registers. Measured on an H200 (bench poly, 2026-11-22): one buffer for every size was
    /// 5-15% slower at 2^9..2^13 points.
    pub fn two_buffers(&self) -> bool {
        self.log_m <= 13
    }

    /// Shared memory per instance: one or two transforms.
    pub fn shared_bytes(&self) -> u64 {
        if self.two_buffers() {
            2 * self.m() * 8
        } else {
            self.m() * 8
        }
    }

    /// Forward twiddles w^k (k < M/2), then inverse ones w^-k, as Montgomery forms.
    pub fn twiddles(&self) -> Vec<u64> {
        let (p, half) = (self.mont.p, self.m() / 2);
        let inv_root = pow_mod(self.root, p - 2, p);
        let mut out = Vec::with_capacity(self.m() as usize);
        for base in [self.root, inv_root] {
            let mut w = 1u64;
            for _ in 0..half {
                out.push(self.mont.to_form(w));
                w = mul_mod(w, base, p);
            }
        }
        out
    }

    /// The twiddles as the kernel's table of 32-bit words (low word first).
    pub fn twiddle_table(&self) -> Vec<u32> {
        self.twiddles()
            .iter()
            .flat_map(|w| [*w as u32, (*w >> 32) as u32])
            .collect()
    }

    /// M^-1 in Montgomery form: the inverse transform's scale.
    pub fn scale(&self) -> u64 {
        let p = self.mont.p;
        self.mont.to_form(pow_mod(self.m() % p, p - 2, p))
    }
}

/// The plan for products of two polynomials of `n` coefficients modulo the prime `p`.
pub fn plan(n: u64, p: u64) -> CgResult<PolyPlan> {
    if n == 0 {
        return Err(CodegenError::Unsupported(
            "poly_mul of empty polynomials".into(),
        ));
    }
    let log_m = (2 * n).next_power_of_two().trailing_zeros().max(1);
    if log_m > MAX_LOG_M {
        return Err(CodegenError::Unsupported(format!(
            "poly_mul of {n} coefficients needs a transform of 2^{log_m} points; one block holds at most 2^{MAX_LOG_M} (polynomials of up to {} coefficients)",
            1u64 << (MAX_LOG_M - 1)
        )));
    }
    if p < 3 || p.is_multiple_of(2) {
        return Err(CodegenError::Unsupported(format!(
            "poly_mul modulo {p}: the modulus must be an odd prime"
        )));
    }
    let two_adicity = (p - 1).trailing_zeros();
    if two_adicity < log_m {
        return Err(CodegenError::Unsupported(format!(
            "poly_mul of {n} coefficients modulo {p}: the transform needs 2^{log_m} | p - 1, but only 2^{two_adicity} divides it; \
             use an NTT-friendly prime such as 4179340454199820289 (29 * 2^57 + 1) or 3221225473 (3 * 2^30 + 1)"
        )));
    }
    // An element of order exactly M: x^((p-1)/M) for an x whose power has order M (not M/2).
    let m = 1u64 << log_m;
    let root = (2..1000u64)
        .map(|x| pow_mod(x, (p - 1) / m, p))
        .find(|w| pow_mod(*w, m / 2, p) != 1)
        .ok_or_else(|| {
            CodegenError::Unsupported(format!(
                "no primitive 2^{log_m}-th root of unity modulo {p}"
            ))
        })?;
    Ok(PolyPlan {
        n,
        log_m,
        mont: Montgomery::new(p),
        root,
    })
}

/// The GPU algorithm on the CPU: operands and result are Montgomery forms.
pub fn model(plan: &PolyPlan, a: &[u64], b: &[u64]) -> Vec<u64> {
    let (m, p) = (plan.m() as usize, plan.mont.p);
    let tw = plan.twiddles();
    let mont = |x: u64, y: u64| plan.mont.redc(x as u128 * y as u128);
    let add = |x: u64, y: u64| ((x as u128 + y as u128) % p as u128) as u64;
    let sub = |x: u64, y: u64| if x >= y { x - y } else { x + (p - y) };
    let mut sa = vec![0u64; m];
    let mut sb = vec![0u64; m];
    sa[..a.len()].copy_from_slice(a);
    sb[..b.len()].copy_from_slice(b);
    let (mut h, mut s) = (m / 2, 1usize);
    while h >= 1 {
        for j in 0..m / 2 {
            let k = j & (h - 1);
            let i0 = ((j - k) << 1) + k;
            let i1 = i0 + h;
            let w = tw[k * s];
            for x in [&mut sa, &mut sb] {
                let (u, v) = (x[i0], x[i1]);
                x[i0] = add(u, v);
                x[i1] = mont(sub(u, v), w);
            }
        }
        h >>= 1;
        s <<= 1;
    }
    for i in 0..m {
        sa[i] = mont(sa[i], sb[i]);
    }
    let (mut h, mut s) = (1usize, m / 2);
    while h < m {
        for j in 0..m / 2 {
            let k = j & (h - 1);
            let i0 = ((j - k) << 1) + k;
            let i1 = i0 + h;
            let w = tw[m / 2 + k * s];
            let (u, v) = (sa[i0], mont(sa[i1], w));
            sa[i0] = add(u, v);
            sa[i1] = sub(u, v);
        }
        h <<= 1;
        s >>= 1;
    }
    let scale = plan.scale();
    (0..2 * plan.n as usize)
        .map(|i| mont(sa[i], scale))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::modular::add_mod;

    fn schoolbook(a: &[u64], b: &[u64], p: u64) -> Vec<u64> {
        let mut out = vec![0u64; 2 * a.len()];
        for (i, x) in a.iter().enumerate() {
            for (j, y) in b.iter().enumerate() {
                out[i + j] = add_mod(out[i + j], mul_mod(*x, *y, p), p);
            }
        }
        out
    }

    #[test]
    fn the_gpu_algorithm_multiplies_polynomials() {
        let mut seed = 7u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for p in [3221225473u64, 4179340454199820289, 18446744069414584321] {
            for n in [1u64, 2, 3, 16, 100, 256] {
                let plan = plan(n, p).unwrap();
                let a: Vec<u64> = (0..n).map(|_| next() % p).collect();
                let mut b: Vec<u64> = (0..n).map(|_| next() % p).collect();
                b[0] = p - 1;
                let forms = |v: &[u64]| v.iter().map(|x| plan.mont.to_form(*x)).collect::<Vec<_>>();
                let got: Vec<u64> = model(&plan, &forms(&a), &forms(&b))
                    .iter()
                    .map(|c| plan.mont.redc(*c as u128))
                    .collect();
                assert_eq!(got, schoolbook(&a, &b, p), "p={p} n={n}");
            }
        }
    }

    #[test]
    fn unsuitable_sizes_and_primes_are_refused() {
        assert!(plan(4096, 4179340454199820289).is_ok());
        // Degree 2^12: 4097 coefficients, a 2^14-point transform.
        assert_eq!(plan(4097, 4179340454199820289).unwrap().log_m, 14);
        assert!(plan(8192, 4179340454199820289).is_ok());
        assert!(plan(8193, 4179340454199820289).is_err());
        // 2^64 - 59 - 1 is divisible by 4 only.
        let e = plan(16, 18446744073709551557).unwrap_err().to_string();
        assert!(e.contains("NTT-friendly"), "{e}");
    }
}

//! Products of polynomials over Z on the GPU, by number-theoretic transforms in several primes and
//! Chinese remaindering (as Emeliyanenko does): each coefficient is reduced modulo K primes of
//! about 62 bits (one kernel per prime, written in the DSL), each product is computed modulo each
//! prime by `poly_mul` (transforms in shared memory), and the K residues of every product
//! coefficient are recombined into an exact integer by Garner's algorithm (one more kernel, built
//! with the IR builder because its shape depends on K). Everything runs through the same
//! compiler; on the CPU backend the same programs run in the evaluator.

use crate::ir::modular::{inv_mod, is_prime, mul_mod};
use crate::ir::{Builder, Func, Literal, Size, Type, ValueId};
use crate::runtime::{DeviceBuffer, GpuDevice, GpuProgram};
use crate::{BigUint, Device, Kernel, Result};
use std::sync::Arc;

/// The residue modulo P of one coefficient given as L little-endian 64-bit limbs: Horner's rule
/// as an associative reduction over (value, weight) pairs, each limb weighing 2^64 mod P.
#[crate::kernel]
pub fn residues(c: [u64; L]) -> Zp<P> {
    let base = Zp::<P>::from(u64::MAX) + Zp::ONE;
    let (v, _) = c.map(|x| (Zp::<P>::from(x), base)).reduce(
        |(v1, w1), (v2, w2)| (v1 + v2 * w1, w1 * w2),
        (Zp::ZERO, Zp::ONE),
    );
    v
}

/// The product of two polynomials of N coefficients modulo P (2N coefficients).
#[crate::kernel]
pub fn poly_mul_mod(a: [Zp<P>; N], b: [Zp<P>; N]) -> [Zp<P>; { 2 * N }] {
    a.poly_mul(b)
}

/// The product of two polynomials by the schoolbook method on the CPU (num-bigint): the reference
/// the GPU products are checked against. Both have n coefficients; the product has 2n.
pub fn schoolbook(a: &[BigUint], b: &[BigUint]) -> Vec<BigUint> {
    let mut out = vec![BigUint::default(); a.len() + b.len()];
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
    out
}

/// Bits of the primes: below 2^62, so that Garner's partial sums stay simple, and with 2^20 | p - 1
/// (far more than the 2^13-point transforms need).
const PRIME_BITS: u32 = 62;
const PRIME_TWO_ADICITY: u32 = 20;

/// The `k` largest primes p < 2^62 with p = c * 2^20 + 1.
pub fn primes(k: usize) -> Vec<u64> {
    let step = 1u64 << PRIME_TWO_ADICITY;
    let mut c = ((1u64 << PRIME_BITS) - 1) / step;
    let mut out = Vec::with_capacity(k);
    while out.len() < k && c > 0 {
        let p = c * step + 1;
        if is_prime(p) {
            out.push(p);
        }
        c -= 1;
    }
    out
}

/// A plan for products of polynomials of `n` coefficients of at most `bits` bits each.
#[derive(Clone, Debug)]
pub struct PolyMul {
    /// Coefficients per polynomial.
    pub n: u64,
    /// Bits of each input coefficient (a multiple of 64).
    pub bits: u64,
    /// Limbs per input coefficient.
    pub in_limbs: u64,
    /// Bits of each result coefficient (a multiple of 64 that holds n * (2^bits - 1)^2).
    pub out_bits: u64,
    /// The NTT primes the product is computed modulo (then combined by the CRT).
    pub primes: Vec<u64>,
    crt: Arc<Kernel>,
}

impl PolyMul {
    /// For polynomials of `n` coefficients (at most 4096) below 2^bits (a multiple of 64).
    pub fn new(n: u64, bits: u64) -> Result<PolyMul> {
        if bits == 0 || !bits.is_multiple_of(64) || n == 0 {
            return Err(crate::Error::Argument {
                kernel: "poly_mul".into(),
                message: format!(
                    "coefficients of {bits} bits and {n} coefficients: bits must be a positive multiple of 64, n positive"
                ),
            });
        }
        // Product coefficients are below n * 2^(2 bits); the primes' product must exceed that.
        let need = 2 * bits + 64 - (n.max(1) - 1).leading_zeros() as u64 + 1;
        let k = need.div_ceil(PRIME_BITS as u64 - 1) as usize;
        let primes = primes(k);
        let out_bits = need.div_ceil(64) * 64;
        // One coefficient per instance: its arithmetic is one thread's, and its registers too.
        let crt = Arc::new(Kernel::new(garner(&primes, out_bits, 1)?)?);
        Ok(PolyMul {
            n,
            bits,
            in_limbs: bits / 64,
            out_bits,
            primes,
            crt,
        })
    }

    /// The products of `a[i]` and `b[i]` for every i: each polynomial is its n coefficients, lowest
    /// first; each product has 2n coefficients (the last is 0).
    pub fn run(
        &self,
        dev: &Device,
        a: &[Vec<BigUint>],
        b: &[Vec<BigUint>],
    ) -> Result<Vec<Vec<BigUint>>> {
        let (n, l) = (self.n as usize, self.in_limbs as usize);
        if a.len() != b.len() {
            return Err(crate::Error::BatchMismatch {
                first: "a".into(),
                first_len: a.len(),
                other: "b".into(),
                other_len: b.len(),
            });
        }
        let limbs = |polys: &[Vec<BigUint>], name: &str| -> Result<Vec<u64>> {
            let mut out = vec![0u64; polys.len() * n * l];
            for (i, poly) in polys.iter().enumerate() {
                if poly.len() != n {
                    return Err(crate::Error::Argument {
                        kernel: "poly_mul".into(),
                        message: format!("`{name}[{i}]` has {} coefficients, not {n}", poly.len()),
                    });
                }
                for (j, c) in poly.iter().enumerate() {
                    if c.bits() > self.bits {
                        return Err(crate::Error::ValueTooWide {
                            param: format!("{name}[{i}]"),
                            index: j,
                            bits: c.bits(),
                            max: self.bits,
                        });
                    }
                    for (k, d) in c.iter_u64_digits().enumerate() {
                        out[(i * n + j) * l + k] = d;
                    }
                }
            }
            Ok(out)
        };
        let (al, bl) = (limbs(a, "a")?, limbs(b, "b")?);
        if let Device::Gpu(gpu) = dev {
            let ad = gpu.upload(&al, "coefficients of a")?;
            let bd = gpu.upload(&bl, "coefficients of b")?;
            let out = self.launch(gpu, a.len() as u64, &ad, &bd)?;
            let words = gpu.download(&out, "product coefficients")?;
            let w = (self.out_bits / 64) as usize;
            return Ok(words
                .chunks(w * 2 * n)
                .map(|poly| poly.chunks(w).map(crate::runtime::big_from_limbs).collect())
                .collect());
        }
        let mut products = Vec::with_capacity(self.primes.len());
        for &p in &self.primes {
            let ra = residues::run(dev, l as u64, p, &al)?;
            let rb = residues::run(dev, l as u64, p, &bl)?;
            products.push(poly_mul_mod::run(dev, p, n as u64, &ra, &rb)?);
        }
        let args: Vec<crate::Arg> = products
            .iter()
            .map(|c| crate::Arg::from(c.as_slice()))
            .collect();
        let cols = self.crt.run(dev, &[], &args)?;
        let Some(crate::Column::Big(coeffs)) = cols.into_iter().next() else {
            return Err(crate::Error::Argument {
                kernel: "poly_mul".into(),
                message: "internal: the CRT kernel returned no big integers".into(),
            });
        };
        Ok(coeffs.chunks(2 * n).map(<[BigUint]>::to_vec).collect())
    }
}

impl PolyMul {
    /// Compiles (or takes from the cache) every kernel for `gpu`.
    pub fn prepare(&self, gpu: &GpuDevice) -> Result<PreparedPolyMul> {
        let mut per_prime = Vec::with_capacity(self.primes.len());
        for &p in &self.primes {
            per_prime.push((
                residues::kernel()?.prepare(gpu, &[self.in_limbs, p])?,
                poly_mul_mod::kernel()?.prepare(gpu, &[p, self.n])?,
            ));
        }
        Ok(PreparedPolyMul {
            per_prime,
            crt: self.crt.prepare(gpu, &[])?,
        })
    }

    /// The products of `batch` pairs of polynomials already on the device (coefficients as
    /// `in_limbs` little-endian limbs each, polynomial after polynomial); returns the product
    /// coefficients as `out_bits / 64` limbs each, 2n per product. All work stays on the GPU.
    pub fn launch(
        &self,
        gpu: &GpuDevice,
        batch: u64,
        a: &DeviceBuffer,
        b: &DeviceBuffer,
    ) -> Result<DeviceBuffer> {
        let prepared = self.prepare(gpu)?;
        self.launch_prepared(gpu, &prepared, batch, a, b)
    }

    /// [`PolyMul::launch`] with the kernels prepared once (for timing).
    pub fn launch_prepared(
        &self,
        gpu: &GpuDevice,
        prepared: &PreparedPolyMul,
        batch: u64,
        a: &DeviceBuffer,
        b: &DeviceBuffer,
    ) -> Result<DeviceBuffer> {
        let mut buffers = self.buffers(gpu, batch)?;
        self.launch_into(gpu, prepared, batch, a, b, &mut buffers)?;
        Ok(buffers.out)
    }

    /// Device buffers for `batch` products: residues, products modulo each prime, the result.
    pub fn buffers(&self, gpu: &GpuDevice, batch: u64) -> Result<PolyBuffers> {
        let coeffs = (batch * self.n) as usize;
        Ok(PolyBuffers {
            ra: gpu.alloc(coeffs, "residues of a")?,
            rb: gpu.alloc(coeffs, "residues of b")?,
            products: (0..self.primes.len())
                .map(|_| gpu.alloc(2 * coeffs, "products modulo a prime"))
                .collect::<Result<_>>()?,
            out: gpu.alloc(
                2 * coeffs * (self.out_bits / 64) as usize,
                "product coefficients",
            )?,
        })
    }

    /// The whole computation into `buffers` (its `out` holds the product coefficients): no
    /// allocation, so this is what a benchmark times.
    pub fn launch_into(
        &self,
        gpu: &GpuDevice,
        prepared: &PreparedPolyMul,
        batch: u64,
        a: &DeviceBuffer,
        b: &DeviceBuffer,
        buffers: &mut PolyBuffers,
    ) -> Result<()> {
        let coeffs = batch * self.n;
        for ((res, conv), prod) in prepared.per_prime.iter().zip(&mut buffers.products) {
            res.launch(gpu, coeffs, &[a], std::slice::from_mut(&mut buffers.ra))?;
            res.launch(gpu, coeffs, &[b], std::slice::from_mut(&mut buffers.rb))?;
            conv.launch(
                gpu,
                batch,
                &[&buffers.ra, &buffers.rb],
                std::slice::from_mut(prod),
            )?;
        }
        let inputs: Vec<&DeviceBuffer> = buffers.products.iter().collect();
        prepared.crt.launch(
            gpu,
            2 * coeffs,
            &inputs,
            std::slice::from_mut(&mut buffers.out),
        )
    }
}

/// Device memory of one batch of products (see [`PolyMul::buffers`]).
pub struct PolyBuffers {
    ra: DeviceBuffer,
    rb: DeviceBuffer,
    products: Vec<DeviceBuffer>,
    /// The product coefficients, `out_bits / 64` limbs each, 2n per product.
    pub out: DeviceBuffer,
}

/// The kernels of a [`PolyMul`], compiled and loaded on one GPU.
pub struct PreparedPolyMul {
    per_prime: Vec<(Arc<GpuProgram>, Arc<GpuProgram>)>,
    crt: Arc<GpuProgram>,
}

/// Garner's algorithm for the residues of `m` coefficients modulo `primes` (one array per prime per
/// instance; `PolyMul` uses m = 1, one coefficient per instance), as an array program: each coefficient's mixed-radix digits v_i (modulo
/// p_i, from the earlier ones by Horner's rule modulo p_i), then the integer sum of
/// v_i * (p_0 ... p_{i-1}) in `out_bits` bits by Horner's rule with one-limb constants. One thread
/// per coefficient, its limbs in registers.
pub fn garner(
    primes: &[u64],
    out_bits: u64,
    m: u64,
) -> std::result::Result<Func, crate::ir::IrError> {
    let mut b = Builder::new(&format!("crt{}", primes.len()), &[]);
    let zp = |p: u64| Type::Zp(Size::lit(p));
    let big = Type::Big(Size::lit(out_bits));
    let rs: Vec<ValueId> = primes
        .iter()
        .enumerate()
        .map(|(i, p)| b.param(&format!("r{i}"), Type::array(zp(*p), Size::lit(m))))
        .collect();
    let zipped = b.zip(&rs)?;
    let f = {
        let mut l = Builder::lambda();
        let t = l.param("r", Type::Tuple(primes.iter().map(|p| zp(*p)).collect()));
        let mut digits: Vec<ValueId> = Vec::new(); // v_i as u64
        for (i, &p) in primes.iter().enumerate() {
            let r = l.extract(t, i as u32)?;
            let v = if i == 0 {
                r
            } else {
                // u = v_{i-1} p_{i-2} ... + v_0, modulo p.
                let mut u = l.cast(digits[i - 1], zp(p))?;
                for j in (0..i - 1).rev() {
                    let pj = l.constant(Literal::Zp(primes[j] % p, Size::lit(p)));
                    let prod = l.mul(u, pj)?;
                    let vj = l.cast(digits[j], zp(p))?;
                    u = l.add(prod, vj)?;
                }
                let prefix = primes[..i]
                    .iter()
                    .fold(1u64, |acc, q| mul_mod(acc, q % p, p));
                let c = l.constant(Literal::Zp(inv_mod(prefix, p), Size::lit(p)));
                let d = l.sub(r, u)?;
                l.mul(d, c)?
            };
            digits.push(l.cast(v, Type::U64)?);
        }
        let mut acc = l.cast(digits[primes.len() - 1], big.clone())?;
        for j in (0..primes.len() - 1).rev() {
            let pj = l.constant(Literal::Big(vec![primes[j]], Size::lit(out_bits)));
            let prod = l.mul(acc, pj)?;
            let vj = l.cast(digits[j], big.clone())?;
            acc = l.add(prod, vj)?;
        }
        l.finish(&[acc])?
    };
    let out = b.map(f, &[zipped])?;
    b.finish(&[out])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primes_are_ntt_friendly_and_distinct() {
        let ps = primes(9);
        assert_eq!(ps.len(), 9);
        for p in &ps {
            assert!(is_prime(*p) && *p < 1 << 62 && (p - 1) % (1 << 20) == 0);
        }
        assert!(ps.windows(2).all(|w| w[0] > w[1]));
    }
}

//! `bench modmul`: arithmetic modulo a big odd per-instance modulus (`add_mod`, `sub_mod`,
//! `mul_mod`; Montgomery form, codegen/src/residue.rs) at 256..2048 bits, in modular products per
//! second, in three shapes:
//! - `one`: a single `a.mul_mod(b, m)` per instance: `R^2 mod m` (a division), two conversions
//!   into the form, the product and one out, all for one product;
//! - `chain16`: sixteen dependent products `p = p b mod m` per instance: the conversions are
//!   shared, so this is about the rate of the Montgomery products themselves;
//! - `poly`: the paper's Poly modulo m, `(a^2 + b)(b^2 + b) + a b`, one fused kernel (four
//!   products counted, as `bench mul` counts Poly);
//! - `ladder`: `a^b mod m` by square-and-multiply over every bit of `b`, written as a loop that
//!   stays a loop (2 BITS products counted): its carried values stay in Montgomery form across
//!   rounds, so this is the rate of a user's own modular loop.
//!
//! The kernel alone (CUDA events, median), checked against num-bigint on sampled instances first,
//! next to GMP on all host cores doing the same arithmetic (`mpz_mul` then `mpz_mod` per product,
//! through rug behind the `gmp` feature) and the same-run device-to-device copy.

use crate::measure::{odd_modulus, rate_cell, Measured};
use bigfuse::ir::{BinOp, Builder, Func, Size, Type, ValueId};
use bigfuse::runtime::GpuDevice;
use bigfuse::{BigUint, Hints, Kernel};
use rand::{Rng, SeedableRng};
use std::fmt::Write as _;

/// Products of the `chain16` shape.
const CHAIN: usize = 16;

/// The shapes, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    One,
    Chain,
    Poly,
    Ladder,
}

impl Shape {
    pub const ALL: [Shape; 4] = [Shape::One, Shape::Chain, Shape::Poly, Shape::Ladder];

    pub fn name(self) -> &'static str {
        match self {
            Shape::One => "one",
            Shape::Chain => "chain16",
            Shape::Poly => "poly",
            Shape::Ladder => "ladder",
        }
    }

    /// Modular products one instance counts for at `bits` bits.
    pub fn products(self, bits: u64) -> u64 {
        match self {
            Shape::One => 1,
            Shape::Chain => CHAIN as u64,
            Shape::Poly => 4,
            Shape::Ladder => 2 * bits,
        }
    }

    /// The kernel over `a, b, m: U<BITS>`.
    pub fn func(self) -> Func {
        let mut b = Builder::new(self.name(), &["BITS"]);
        let ty = Type::Big(Size::param(0));
        let [x, y, m] = ["a", "b", "m"].map(|n| b.param(n, ty.clone()));
        let op = |b: &mut Builder, o: BinOp, p: ValueId, q: ValueId| {
            b.big_mod(o, p, q, m)
                .expect("residue arithmetic is well typed")
        };
        let r = match self {
            Shape::One => op(&mut b, BinOp::Mul, x, y),
            Shape::Chain => (0..CHAIN).fold(x, |p, _| op(&mut b, BinOp::Mul, p, y)),
            Shape::Ladder => {
                let well = "the ladder is well typed";
                let mut l = Builder::loop_body(&b);
                let i = ValueId(0); // the round's index, the body's first parameter
                let acc = l.param("acc", ty.clone());
                let sq = l.param("sq", ty.clone());
                let e = l.param("e", ty.clone());
                let md = l.param("m", ty.clone());
                let times = l.big_mod(BinOp::Mul, acc, sq, md).expect(well);
                let set = l.bit(e, i).expect(well);
                let acc2 = l.select(set, times, acc).expect(well);
                let sq2 = l.big_mod(BinOp::Mul, sq, sq, md).expect(well);
                let body = l.finish(&[acc2, sq2]).expect(well);
                let one = b.constant(bigfuse::ir::Literal::Big(vec![1], Size::param(0)));
                let start = op(&mut b, BinOp::Mul, one, one);
                let lp = b
                    .repeat(Size::param(0), body, &[start, x], &[y, m])
                    .expect(well);
                b.extract(lp, 0).expect(well)
            }
            Shape::Poly => {
                let a2 = op(&mut b, BinOp::Mul, x, x);
                let b2 = op(&mut b, BinOp::Mul, y, y);
                let ab = op(&mut b, BinOp::Mul, x, y);
                let l = op(&mut b, BinOp::Add, a2, y);
                let r = op(&mut b, BinOp::Add, b2, y);
                let p = op(&mut b, BinOp::Mul, l, r);
                op(&mut b, BinOp::Add, p, ab)
            }
        };
        b.finish(&[r]).expect("residue arithmetic is well typed")
    }

    /// What the kernel computes, by num-bigint.
    pub fn expect(self, a: &BigUint, b: &BigUint, m: &BigUint) -> BigUint {
        match self {
            Shape::One => a * b % m,
            Shape::Chain => (0..CHAIN).fold(a.clone(), |p, _| p * b % m),
            Shape::Poly => ((a * a + b) * (b * b + b) + a * b) % m,
            Shape::Ladder => a.modpow(b, m),
        }
    }
}

pub struct Row {
    pub bits: u64,
    pub shape: Shape,
    pub n: u64,
    pub gpu: Result<Measured, String>,
    pub gmp_per_s: Option<f64>,
}

impl Row {
    /// Modular products per second on the GPU.
    pub fn per_s(&self) -> Option<f64> {
        self.gpu
            .as_ref()
            .ok()
            .map(|m| (self.n * self.shape.products(self.bits)) as f64 / (m.ms * 1e-3))
    }
}

/// Instances: enough to fill the GPU several times over with one thread each.
fn instances(bits: u64) -> u64 {
    ((1u64 << 36) / (bits * bits)).clamp(1 << 16, 1 << 20)
}

/// Times every size and shape, printing each row as it is measured.
pub fn run(gpu: &GpuDevice, runs: usize, sizes: &[u64]) -> bigfuse::Result<(f64, Vec<Row>)> {
    let copy = crate::measure::same_run_copy(gpu, runs)?;
    let mut rows = Vec::new();
    for &bits in sizes {
        let n = instances(bits);
        let mut rng = rand::rngs::StdRng::seed_from_u64(bits);
        let s = (bits / 64) as usize;
        // Operands as wide as the modulus (some above it: they are reduced).
        let a: Vec<u64> = (0..n as usize * s).map(|_| rng.gen()).collect();
        let b: Vec<u64> = (0..n as usize * s).map(|_| rng.gen()).collect();
        let m: Vec<u64> = (0..n).flat_map(|_| odd_modulus(&mut rng, bits)).collect();
        for shape in Shape::ALL {
            if crate::stopped() {
                return Ok((copy, rows));
            }
            eprintln!("  modmul {bits} bits, {}, {n} instances", shape.name());
            let gmp_per_s = gmp::per_s(shape, bits, (&a, &b, &m), runs.min(3))?;
            let gpu_row = measure(gpu, shape, runs, bits, n, (&a, &b, &m));
            let row = Row {
                bits,
                shape,
                n,
                gpu: gpu_row.map_err(|e| e.to_string()),
                gmp_per_s,
            };
            eprintln!("    {}", line(&row));
            rows.push(row);
        }
    }
    Ok((copy, rows))
}

fn measure(
    gpu: &GpuDevice,
    shape: Shape,
    runs: usize,
    bits: u64,
    n: u64,
    (a, b, m): (&[u64], &[u64], &[u64]),
) -> bigfuse::Result<Measured> {
    let kernel = Kernel::new(shape.func())?;
    let t = std::time::Instant::now();
    let program = kernel.prepare_with(gpu, &[bits], &Hints::default())?;
    eprintln!("    compiled in {:.1} s", t.elapsed().as_secs_f64());
    let s = (bits / 64) as usize;
    let at = |v: &[u64], i: usize| bigfuse::runtime::big_from_limbs(&v[i * s..(i + 1) * s]);
    crate::measure::check_and_time(
        gpu,
        &program,
        runs,
        n,
        bits,
        &[(a, "a"), (b, "b"), (m, "moduli")],
        shape.name(),
        |i, got| at(got, i) == shape.expect(&at(a, i), &at(b, i), &at(m, i)),
    )
}

pub fn table(gpu: &str, runs: usize, copy_gbs: f64, rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GPU: {gpu}; same-run device-to-device copy {copy_gbs:.0} GB/s (read + written). Products \
         modulo an odd per-instance m with its top bit set, operands as wide as m; modular \
         products per second = instances x products per instance / kernel time (median of \
         {runs}); checked against num-bigint on sampled instances. one: a single mul_mod (R^2 mod m, \
         conversions in and out included); chain16: 16 dependent products; poly: \
         (a^2 + b)(b^2 + b) + ab mod m (4 products counted); ladder: a^b mod m by a loop of \
         square-and-multiply over b's bits (2 BITS products counted). GMP: mpz_mul then mpz_mod \
         per product ({}) on all host cores.\n",
        crate::gmp::describe()
    );
    let _ = writeln!(
        s,
        "| modulus bits | shape | instances | products/s | GMP products/s | / GMP | kernel |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for r in rows {
        let _ = writeln!(s, "{}", line(r));
    }
    s
}

fn line(r: &Row) -> String {
    let ratio = match (r.per_s(), r.gmp_per_s) {
        (Some(a), Some(b)) => format!("{:.1}x", a / b),
        _ => "-".into(),
    };
    let kernel = match &r.gpu {
        Ok(m) => format!(
            "{} regs, {} B local, {:.3} ms",
            m.registers, m.local_bytes, m.ms
        ),
        Err(e) => format!("failed: {e}"),
    };
    format!(
        "| {} | {} | {} | {} | {} | {ratio} | {kernel} |",
        r.bits,
        r.shape.name(),
        r.n,
        rate_cell(r.per_s()),
        rate_cell(r.gmp_per_s),
    )
}

pub fn failures(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            r.gpu
                .as_ref()
                .err()
                .map(|e| format!("{} bits, {}: {e}", r.bits, r.shape.name()))
        })
        .collect()
}

/// GMP on every host core: the same products and sums on rug Integers.
mod gmp {
    use super::Shape;

    #[cfg(not(feature = "gmp"))]
    pub fn per_s(
        _shape: Shape,
        _bits: u64,
        _ops: (&[u64], &[u64], &[u64]),
        _runs: usize,
    ) -> bigfuse::Result<Option<f64>> {
        Ok(None)
    }

    #[cfg(feature = "gmp")]
    pub fn per_s(
        shape: Shape,
        bits: u64,
        (a, b, m): (&[u64], &[u64], &[u64]),
        runs: usize,
    ) -> bigfuse::Result<Option<f64>> {
        use rayon::prelude::*;
        use rug::{Assign, Integer};
        let s = (bits / 64) as usize;
        // About 2^22 products (a second or less on 16 cores at any width).
        let count = (a.len() / s)
            .min(1 << 18)
            .min(((1u64 << 22) / shape.products(bits)).max(64) as usize);
        let xs = crate::gmp::integers(bits, &a[..count * s]);
        let ys = crate::gmp::integers(bits, &b[..count * s]);
        let ms = crate::gmp::integers(bits, &m[..count * s]);
        let mut out: Vec<(Integer, Integer)> =
            vec![(Integer::with_capacity(2 * bits as usize), Integer::new()); count];
        let ms_wall = crate::measure::median_wall_ms(1, runs, |_| {
            out.par_iter_mut().enumerate().for_each(|(i, (t, o))| {
                let (x, y, md) = (&xs[i], &ys[i], &ms[i]);
                let mut mulmod = |o: &mut Integer, p: &Integer, q: &Integer| {
                    t.assign(p * q);
                    o.assign(&*t % md);
                };
                match shape {
                    Shape::One => mulmod(o, x, y),
                    Shape::Chain => {
                        o.assign(x);
                        for _ in 0..super::CHAIN {
                            let p = o.clone();
                            mulmod(o, &p, y);
                        }
                    }
                    Shape::Ladder => {
                        let mut acc = Integer::from(1);
                        acc %= md;
                        let mut sq = x.clone();
                        for i in 0..bits as u32 {
                            if y.get_bit(i) {
                                let p = acc.clone();
                                mulmod(&mut acc, &p, &sq);
                            }
                            let p = sq.clone();
                            mulmod(&mut sq, &p, &p);
                        }
                        o.assign(&acc);
                    }
                    Shape::Poly => {
                        let (mut a2, mut b2, mut ab) =
                            (Integer::new(), Integer::new(), Integer::new());
                        mulmod(&mut a2, x, x);
                        mulmod(&mut b2, y, y);
                        mulmod(&mut ab, x, y);
                        a2 += y;
                        b2 += y;
                        mulmod(o, &a2, &b2);
                        *o += &ab;
                        *o %= md;
                    }
                }
            });
            Ok(())
        })?;
        let big = crate::gmp::big;
        if big(&out[0].1) != shape.expect(&big(&xs[0]), &big(&ys[0]), &big(&ms[0])) {
            return Err(bigfuse::Error::Argument {
                kernel: "GMP modmul".into(),
                message: "instance 0 differs from num-bigint".into(),
            });
        }
        Ok(Some(
            (count as u64 * shape.products(bits)) as f64 / (ms_wall * 1e-3),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse::ir::{eval, specialize, Value};

    #[test]
    fn the_kernels_mean_what_num_bigint_computes() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for shape in Shape::ALL {
            let f = specialize(&shape.func(), &[256]).unwrap();
            for _ in 0..4 {
                let big = |v: Vec<u64>| bigfuse::runtime::big_from_limbs(&v);
                let a = big((0..4).map(|_| rng.gen()).collect());
                let b = big((0..4).map(|_| rng.gen()).collect());
                let m = big(odd_modulus(&mut rng, 256));
                let got = eval(
                    &f,
                    &[
                        Value::Big(a.clone()),
                        Value::Big(b.clone()),
                        Value::Big(m.clone()),
                    ],
                )
                .unwrap();
                assert_eq!(got, vec![Value::Big(shape.expect(&a, &b, &m))], "{shape:?}");
            }
        }
    }
}

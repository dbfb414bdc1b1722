//! The three operations of `bench e2e` and `bench jit` (1-Add, 1-Mul, Poly), called exactly as a
//! user calls them: through the functions `#[bigfuse::kernel]` generates (`run`, `run_into`,
//! `launch`), with the paper's metric of each.

use crate::kernels::{add1, mul1, poly, ref_add1, ref_mul1, ref_poly};
use crate::measure::{low_bits, Reference};
use bigfuse::{Batch, BigUint, Device, Kernel};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Add,
    Mul,
    Poly,
}

pub const ALL: [Op; 3] = [Op::Add, Op::Mul, Op::Poly];

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Mul => "mul",
            Op::Poly => "poly",
        }
    }

    /// `add`, `mul` or `poly` (also `add1`, `mul1`, the kernels' names; any case).
    pub fn parse(text: &str) -> Result<Op, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "add" | "add1" | "1-add" => Ok(Op::Add),
            "mul" | "mul1" | "1-mul" => Ok(Op::Mul),
            "poly" => Ok(Op::Poly),
            other => Err(format!("unknown operation `{other}`: use add, mul or poly")),
        }
    }

    /// A comma-separated list (`add,mul,poly`), in the given order, without repeats.
    pub fn parse_list(items: &[String]) -> Result<Vec<Op>, String> {
        let mut ops = Vec::new();
        for item in items.iter().flat_map(|s| s.split(',')) {
            if item.trim().is_empty() {
                continue;
            }
            let op = Op::parse(item)?;
            if !ops.contains(&op) {
                ops.push(op);
            }
        }
        if ops.is_empty() {
            return Err("no operation given: use e.g. --ops add,mul,poly".into());
        }
        Ok(ops)
    }

    pub fn kernel(self) -> bigfuse::Result<&'static Kernel> {
        match self {
            Op::Add => add1::kernel(),
            Op::Mul => mul1::kernel(),
            Op::Poly => poly::kernel(),
        }
    }

    /// The exact result (reduce it modulo 2^bits).
    pub fn reference(self) -> Reference {
        match self {
            Op::Add => ref_add1,
            Op::Mul => ref_mul1,
            Op::Poly => ref_poly,
        }
    }

    /// Products the paper counts per instance (0: an addition, measured in GB/s).
    pub fn products(self) -> f64 {
        match self {
            Op::Add => 0.0,
            Op::Mul => 1.0,
            Op::Poly => 4.0,
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Op::Add => "GB/s",
            _ => "Gu32ops/s",
        }
    }

    /// The paper's metric for `n` instances of `bits` bits in `ms` milliseconds: GB/s =
    /// 3*n*bits/8 / time for an addition; Gu32ops/s = products*300*n*m*log2(m) / time, m = bits/32.
    pub fn metric(self, bits: u64, n: u64, ms: f64) -> f64 {
        match self {
            Op::Add => add_gbs(bits, n, ms),
            op => gu32ops(bits, n, op.products(), ms),
        }
    }

    /// `run` from `BigUint` values to a fresh `Vec<BigUint>`.
    pub fn run_big(
        self,
        dev: &Device,
        bits: u64,
        a: &[BigUint],
        b: &[BigUint],
    ) -> bigfuse::Result<Vec<BigUint>> {
        match self {
            Op::Add => add1::run(dev, bits, a, b),
            Op::Mul => mul1::run(dev, bits, a, b),
            Op::Poly => poly::run(dev, bits, a, b),
        }
    }

    /// `run_into` from little-endian limbs (bits/64 per value) to limbs, into a vector kept by the
    /// caller.
    pub fn run_into_limbs(
        self,
        dev: &Device,
        bits: u64,
        a: &[u64],
        b: &[u64],
        out: &mut Vec<u64>,
    ) -> bigfuse::Result<()> {
        match self {
            Op::Add => add1::run_into(dev, bits, a, b, out),
            Op::Mul => mul1::run_into(dev, bits, a, b, out),
            Op::Poly => poly::run_into(dev, bits, a, b, out),
        }
    }

    /// `launch` on batches (on the device already, or host data uploaded first); does not wait.
    pub fn launch(self, dev: &Device, bits: u64, a: &Batch, b: &Batch) -> bigfuse::Result<Batch> {
        match self {
            Op::Add => add1::launch(dev, bits, a, b),
            Op::Mul => mul1::launch(dev, bits, a, b),
            Op::Poly => poly::launch(dev, bits, a, b),
        }
    }
}

/// GB/s of an addition: 3 * n * bits/8 bytes (two operands read, one result written) per time.
pub fn add_gbs(bits: u64, n: u64, ms: f64) -> f64 {
    3.0 * n as f64 * bits as f64 / 8.0 / (ms * 1e-3) / 1e9
}

/// Gu32ops/s of `products` multiplications per instance: products * 300 * n * m * log2(m) / time,
/// m = bits / 32 (the paper's count).
pub fn gu32ops(bits: u64, n: u64, products: f64, ms: f64) -> f64 {
    let m = (bits / 32) as f64;
    products * 300.0 * n as f64 * m * m.log2() / (ms * 1e-3) / 1e9
}

/// The chain of `bench e2e`: x = a*b; y = Poly(x, a); z = y + b, each modulo 2^bits.
pub fn chain_reference(bits: u64, a: &BigUint, b: &BigUint) -> BigUint {
    let x = low_bits(&ref_mul1(a, b), bits);
    let y = low_bits(&ref_poly(&x, a), bits);
    low_bits(&ref_add1(&y, b), bits)
}

/// The chain on batches, launched back to back (one wait, by the caller): mul, then Poly, then add.
/// The intermediates are returned too, so that the caller decides when they are dropped.
pub fn chain_launch(
    dev: &Device,
    bits: u64,
    a: &Batch,
    b: &Batch,
) -> bigfuse::Result<(Batch, Batch, Batch)> {
    let x = mul1::launch(dev, bits, a, b)?;
    let y = poly::launch(dev, bits, &x, a)?;
    let z = add1::launch(dev, bits, &y, b)?;
    Ok((x, y, z))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_operations() {
        assert_eq!(Op::parse("Poly"), Ok(Op::Poly));
        assert_eq!(Op::parse(" add1 "), Ok(Op::Add));
        assert!(Op::parse("div").unwrap_err().contains("add, mul or poly"));
        let list = Op::parse_list(&["mul,add".into(), "mul".into()]).unwrap();
        assert_eq!(list, vec![Op::Mul, Op::Add]);
        assert!(Op::parse_list(&[",".into()]).is_err());
    }

    #[test]
    fn metrics_match_the_paper_tables() {
        // bench paper: NumBits x NumInsts = 2^32 (tables::add_gbs and gu32ops are these there).
        let (bits, n) = (4096u64, 1u64 << 20);
        assert!((add_gbs(bits, n, 1.0) - 3.0 * 2f64.powi(32) / 8.0 / 1e6).abs() < 1e-6);
        assert!((add_gbs(bits, n, 1.0) - crate::tables::add_gbs(12, 1.0)).abs() < 1e-9);
        assert!((gu32ops(bits, n, 4.0, 2.5) - crate::tables::gu32ops(12, 4.0, 2.5)).abs() < 1e-6);
        // 1-Add at 2^28 bits in 1 ms: 3 * 2^25 bytes.
        assert!((add_gbs(512, 1 << 19, 1.0) - 3.0 * 2f64.powi(25) / 1e6).abs() < 1e-9);
        // m = 128, log2 m = 7: 300 * 2^20 * 128 * 7 / 1 ms.
        let want = 300.0 * 2f64.powi(20) * 128.0 * 7.0 / 1e-3 / 1e9;
        assert!((Op::Mul.metric(bits, n, 1.0) - want).abs() < 1e-6 * want);
        assert!((Op::Poly.metric(bits, n, 1.0) - 4.0 * want).abs() < 1e-6 * want);
        assert_eq!(Op::Add.unit(), "GB/s");
    }

    /// The dispatch on the CPU backend (no GPU needed): each entry point computes its own operation.
    #[test]
    fn entry_points_compute_their_operation() {
        let dev = Device::cpu();
        let bits = 128;
        let modulus = BigUint::from(1u8) << bits;
        let limbs: Vec<u64> = vec![u64::MAX, u64::MAX, 3, 1 << 63, 12345, 0];
        let a_l = limbs.clone();
        let b_l: Vec<u64> = limbs.iter().rev().map(|x| x ^ 0x5555).collect();
        let big = |l: &[u64]| -> Vec<BigUint> {
            l.chunks(2).map(bigfuse::runtime::big_from_limbs).collect()
        };
        let (a, b) = (big(&a_l), big(&b_l));
        for op in ALL {
            let want: Vec<BigUint> = a
                .iter()
                .zip(&b)
                .map(|(x, y)| op.reference()(x, y) % &modulus)
                .collect();
            assert_eq!(op.run_big(&dev, bits, &a, &b).unwrap(), want, "{op:?}");
            let mut out = Vec::new();
            op.run_into_limbs(&dev, bits, &a_l, &b_l, &mut out).unwrap();
            assert_eq!(big(&out), want, "{op:?}");
            let (ab, bb) = (
                Batch::big(&dev, bits, &a_l).unwrap(),
                Batch::big(&dev, bits, &b_l).unwrap(),
            );
            let r = op.launch(&dev, bits, &ab, &bb).unwrap();
            r.wait().unwrap();
            assert_eq!(r.to_big().unwrap(), want, "{op:?}");
        }
        let (ab, bb) = (
            Batch::big(&dev, bits, &a).unwrap(),
            Batch::big(&dev, bits, &b).unwrap(),
        );
        let (_, _, z) = chain_launch(&dev, bits, &ab, &bb).unwrap();
        let want: Vec<BigUint> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| chain_reference(bits, x, y))
            .collect();
        assert_eq!(z.to_big().unwrap(), want);
    }
}

//! `bench bits`: the bit-level operations on `U<BITS>` (issue 17 item 1) over the paper's operands
//! (NumBits x NumInsts = 2^32), each checked against num-bigint first, in GB/s (two operands read,
//! one result written, as the addition table counts) next to a same-run device-to-device copy, and
//! in operations per second next to GMP on all host cores (through rug, behind the `gmp` feature).
//!
//! The kernels are built with the IR builder, as the macro builds them: shift amounts come from the
//! second operand's low word, so every instance shifts by its own amount.

use crate::json;
use crate::measure::{Bench, Measured, TOTAL_LOG};
use bigfuse::ir::{Builder, Func, ShiftOp, Size, Type, UnOp, ValueId};
use bigfuse::{BigUint, Hints, Kernel};
use num_integer::Integer as _;
use serde::Serialize;
use std::fmt::Write as _;

/// One benchmarked operation of `a: U<BITS>`, `b: U<BITS>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    /// `a ^ b`
    Xor,
    /// `a & !b`
    AndNot,
    /// `a << (b mod 256)`
    Shl,
    /// `a >> (b mod 256)`
    Shr,
    /// `a.rotate_left(b mod 2^32)` (modulo BITS inside)
    Rotl,
    /// `a << b.leading_zeros()`: the normalisation step of a division
    Normalize,
    /// bits `b mod 256 .. + 512` of `a`
    Extract,
    /// `a / b` (issue 17 item 2; the bench's random operands are full width)
    Div,
    /// CGBN's `div_rem_wide` shape: `w = a * 2^BITS + b` by `d = b | 2^(BITS-1)`, both the
    /// quotient and the remainder (their sum modulo 2^BITS is the kernel's one result)
    DivWide,
    /// CGBN's `sqrt_wide` shape: the square root of `a * 2^BITS + b`
    SqrtWide,
    /// `a.isqrt()`: the square root of a parameter, as a user writes it (read where it lies,
    /// the root written where it goes, from 8192 bits)
    Sqrt,
    /// `gcd(a, b)` (issue 17; CGBN's `gcd` shape: random full-width operands)
    Gcd,
    /// `a^-1 mod (b | 1)`, all ones where there is none (CGBN's `modinv` shape)
    ModInv,
}

pub const ALL: [BitOp; 13] = [
    BitOp::Xor,
    BitOp::AndNot,
    BitOp::Shl,
    BitOp::Shr,
    BitOp::Rotl,
    BitOp::Normalize,
    BitOp::Extract,
    BitOp::Div,
    BitOp::DivWide,
    BitOp::SqrtWide,
    BitOp::Sqrt,
    BitOp::Gcd,
    BitOp::ModInv,
];

impl BitOp {
    pub fn name(self) -> &'static str {
        match self {
            BitOp::Xor => "xor",
            BitOp::AndNot => "andnot",
            BitOp::Shl => "shl",
            BitOp::Shr => "shr",
            BitOp::Rotl => "rotl",
            BitOp::Normalize => "normalize",
            BitOp::Extract => "extract",
            BitOp::Div => "div",
            BitOp::DivWide => "divwide",
            BitOp::SqrtWide => "sqrtwide",
            BitOp::Sqrt => "sqrt",
            BitOp::Gcd => "gcd",
            BitOp::ModInv => "modinv",
        }
    }

    pub fn what(self) -> &'static str {
        match self {
            BitOp::Xor => "a ^ b",
            BitOp::AndNot => "a & !b",
            BitOp::Shl => "a << (b mod 256)",
            BitOp::Shr => "a >> (b mod 256)",
            BitOp::Rotl => "a.rotate_left(b as u32)",
            BitOp::Normalize => "a << b.leading_zeros()",
            BitOp::Extract => "a.extract_bits(b mod 256, 512)",
            BitOp::Div => "a / b",
            BitOp::DivWide => "(a:b).div_rem(b | 2^(BITS-1))",
            BitOp::SqrtWide => "(a:b).isqrt()",
            BitOp::Sqrt => "a.isqrt()",
            BitOp::Gcd => "a.gcd(b)",
            BitOp::ModInv => "a.inv_mod(b | 1) (all ones where none)",
        }
    }

    /// The kernel of this operation.
    pub fn func(self) -> Func {
        let mut b = Builder::new(&format!("bits_{}", self.name()), &["BITS"]);
        let ty = Type::Big(Size::param(0));
        let x = b.param("a", ty.clone());
        let y = b.param("b", ty);
        let r = self
            .build(&mut b, x, y)
            .expect("bit kernels are well typed");
        b.finish(&[r]).expect("bit kernels are well typed")
    }

    fn build(self, b: &mut Builder, x: ValueId, y: ValueId) -> bigfuse::ir::IrResult<ValueId> {
        let amount = |b: &mut Builder| -> bigfuse::ir::IrResult<ValueId> {
            let low = b.cast(y, Type::U32)?;
            let m = b.u32(255);
            b.and(low, m)
        };
        match self {
            BitOp::Xor => b.xor(x, y),
            BitOp::AndNot => {
                let n = b.not(y)?;
                b.and(x, n)
            }
            BitOp::Shl => {
                let k = amount(b)?;
                b.shl(x, k)
            }
            BitOp::Shr => {
                let k = amount(b)?;
                b.shr(x, k)
            }
            BitOp::Rotl => {
                let k = b.cast(y, Type::U32)?;
                b.shift(ShiftOp::Rotl, x, k)
            }
            BitOp::Normalize => {
                let k = b.count(UnOp::LeadingZeros, y)?;
                b.shl(x, k)
            }
            BitOp::Extract => {
                let k = amount(b)?;
                let len = b.u32(512);
                b.extract_bits(x, k, len)
            }
            BitOp::Div => b.div(x, y),
            BitOp::Gcd => b.gcd(x, y),
            BitOp::ModInv => {
                let Type::Big(bits) = b.ty(x).clone() else {
                    unreachable!("the operands are U<BITS>")
                };
                let one = b.constant(bigfuse::ir::Literal::Big(vec![1], bits));
                let m = b.or(y, one)?;
                let r = b.inv_mod(x, m)?;
                let inv = b.extract(r, 0)?;
                let exists = b.extract(r, 1)?;
                // All ones at the kernel's width (a size parameter here): !0.
                let zero = b.constant(bigfuse::ir::Literal::Big(vec![], bits));
                let none = b.not(zero)?;
                b.select(exists, inv, none)
            }
            BitOp::SqrtWide => {
                let (w, bits, _) = wide_operand(b, x, y)?;
                let r = b.isqrt(w)?;
                b.cast(r, Type::Big(bits))
            }
            BitOp::Sqrt => b.isqrt(x),
            BitOp::DivWide => {
                let (w, bits, width) = wide_operand(b, x, y)?;
                // d = y | 2^(BITS-1): the mask of the low BITS - 1 bits, inverted.
                let one = b.u32(1);
                let below = b.sub(width, one)?;
                let low_bits = b.mask(&Type::Big(bits), below)?;
                let top = b.not(low_bits)?;
                let d = b.or(y, top)?;
                let q = b.div(w, d)?;
                let r = b.rem(w, d)?;
                let q = b.cast(q, Type::Big(bits))?;
                b.add(q, r)
            }
        }
    }

    /// num-bigint's result modulo 2^bits.
    pub fn reference(self, a: &BigUint, b: &BigUint, bits: u64) -> BigUint {
        let m = BigUint::from(1u8) << bits;
        let low = b.iter_u64_digits().next().unwrap_or(0);
        let k = low & 255;
        match self {
            BitOp::Xor => a ^ b,
            BitOp::AndNot => a ^ (a & b),
            BitOp::Shl => (a << k) % m,
            BitOp::Shr => a >> k,
            BitOp::Rotl => {
                let k = (low as u32 as u64) % bits;
                ((a << k) | (a >> (bits - k))) % m
            }
            BitOp::Normalize => (a << (bits - b.bits())) % m,
            BitOp::Extract => (a >> k) % (BigUint::from(1u8) << 512u32),
            BitOp::Div if b.bits() == 0 => &m - 1u8,
            BitOp::Div => a / b,
            BitOp::SqrtWide => ((a << bits) + b).sqrt() % m,
            BitOp::Sqrt => a.sqrt(),
            BitOp::Gcd => a.gcd(b),
            BitOp::ModInv => a
                .modinv(&(b | BigUint::from(1u8)))
                .unwrap_or_else(|| &m - 1u8),
            BitOp::DivWide => {
                let w = (a << bits) + b;
                let d = b | (BigUint::from(1u8) << (bits - 1));
                (&w / &d + &w % &d) % m
            }
        }
    }
}

/// `a * 2^BITS + b` as a `U<2 * BITS>` (the wide operand of CGBN's `div_rem_wide` and
/// `sqrt_wide`), BITS as a size and as a u32 value.
fn wide_operand(
    b: &mut Builder,
    x: ValueId,
    y: ValueId,
) -> bigfuse::ir::IrResult<(ValueId, Size, ValueId)> {
    let Type::Big(bits) = b.ty(x).clone() else {
        unreachable!("the operands are U<BITS>")
    };
    let wide = Type::Big(Size {
        factor: 2,
        param: bits.param,
    });
    // BITS as a u32: the leading zeros of a U<BITS> zero.
    let zero = b.constant(bigfuse::ir::Literal::Big(vec![], bits));
    let width = b.count(UnOp::LeadingZeros, zero)?;
    let hi = b.cast(x, wide.clone())?;
    let hi = b.shl(hi, width)?;
    let lo = b.cast(y, wide)?;
    Ok((b.or(hi, lo)?, bits, width))
}

/// One operation at one size.
pub struct Row {
    pub op: BitOp,
    pub log: u32,
    pub copy_gbs: f64,
    pub gpu: Result<Measured, String>,
    /// GMP's wall time over all instances, when built with it.
    pub gmp_ms: Option<f64>,
}

impl Row {
    fn insts(&self) -> f64 {
        (1u64 << (TOTAL_LOG - self.log)) as f64
    }

    pub fn gbs(&self) -> Option<f64> {
        self.gpu
            .as_ref()
            .ok()
            .map(|m| crate::tables::add_gbs(self.log, m.ms))
    }

    /// Operations (instances) per second on the GPU.
    pub fn gops(&self) -> Option<f64> {
        self.gpu
            .as_ref()
            .ok()
            .map(|m| self.insts() / (m.ms * 1e-3) / 1e9)
    }

    pub fn gmp_gops(&self) -> Option<f64> {
        self.gmp_ms.map(|ms| self.insts() / (ms * 1e-3) / 1e9)
    }
}

/// Every operation of `ops` at NumBits 2^min_log..2^max_log.
pub fn run(
    bench: &mut Bench,
    ops: &[BitOp],
    min_log: u32,
    max_log: u32,
    hints: &Hints,
) -> bigfuse::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for op in ops {
        let kernel = Kernel::new(op.func())?;
        for log in min_log..=max_log {
            if crate::stopped() {
                return Ok(rows);
            }
            let bits = 1u64 << log;
            let copy_gbs = bench.copy_gbs()?;
            eprintln!("  {} at 2^{log} bits", op.name());
            let gpu = bench
                .measure(&kernel, bits, hints, |a, b| op.reference(a, b, bits))
                .map_err(|e| e.to_string());
            if let Err(e) = &gpu {
                eprintln!("    {e}");
            }
            let n = 1usize << (TOTAL_LOG - log);
            let words = n * (bits / 64) as usize;
            let gmp_ms = gmp::time(
                *op,
                bits,
                &bench.a_host[..words],
                &bench.b_host[..words],
                bench.runs.min(5),
            )?;
            rows.push(Row {
                op: *op,
                log,
                copy_gbs,
                gpu,
                gmp_ms,
            });
        }
    }
    Ok(rows)
}

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// Three significant digits: 0.000331 Gops/s, not 0.000.
fn rate(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| {
        cell(Some(x), json::decimals(x, 3).max(3) as usize)
    })
}

pub fn table(gpu: &str, runs: usize, rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GPU: {gpu}. NumBits x NumInsts = 2^32; GB/s = 3*NumInsts*NumBits/8 / time (median of {runs}), \
         next to a same-run device-to-device copy (read + written); Gops/s = NumInsts / time; GMP: {} \
         on the same operands, the arithmetic only.\n",
        gmp::describe()
    );
    let _ = writeln!(
        s,
        "| op | NumBits | copy GB/s | GB/s (% copy) | Gops/s | GMP Gops/s | GPU / GMP | kernel |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    for r in rows {
        let pct = r.gbs().map(|g| 100.0 * g / r.copy_gbs);
        let ratio = match (r.gops(), r.gmp_gops()) {
            (Some(g), Some(h)) => format!("{:.1}x", g / h),
            _ => "-".into(),
        };
        let kernel = match &r.gpu {
            Ok(m) => format!(
                "T={} Q={} {} regs, {} B local, {} B shared",
                m.threads_per_instance, m.q, m.registers, m.local_bytes, m.shared_bytes
            ),
            Err(e) => format!("failed: {e}"),
        };
        let _ = writeln!(
            s,
            "| {} `{}` | 2^{} | {:.0} | {} ({}%) | {} | {} | {ratio} | {kernel} |",
            r.op.name(),
            r.op.what(),
            r.log,
            r.copy_gbs,
            cell(r.gbs(), 0),
            cell(pct, 1),
            rate(r.gops()),
            rate(r.gmp_gops()),
        );
    }
    s
}

#[derive(Serialize)]
struct RowJson {
    op: &'static str,
    what: &'static str,
    numbits: u64,
    copy_gbs: Option<f64>,
    gbs: Option<f64>,
    gops: Option<f64>,
    gmp_gops: Option<f64>,
    error: Option<String>,
}

#[derive(Serialize)]
struct BitsJson<'a> {
    bench: &'static str,
    gpu: &'a str,
    runs: usize,
    gmp: String,
    rows: Vec<RowJson>,
}

pub fn json(gpu: &str, runs: usize, rows: &[Row]) -> String {
    json::pretty(&BitsJson {
        bench: "bits",
        gpu,
        runs,
        gmp: gmp::describe(),
        rows: rows
            .iter()
            .map(|r| RowJson {
                op: r.op.name(),
                what: r.op.what(),
                numbits: 1 << r.log,
                copy_gbs: json::fixed(r.copy_gbs, 1),
                gbs: r.gbs().and_then(|g| json::fixed(g, 1)),
                gops: r.gops().and_then(|g| json::significant(g, 4)),
                gmp_gops: r.gmp_gops().and_then(|g| json::significant(g, 4)),
                error: r.gpu.as_ref().err().cloned(),
            })
            .collect(),
    })
}

/// Failed figures, for the command's exit status.
pub fn failures(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            r.gpu
                .as_ref()
                .err()
                .map(|e| format!("{} at 2^{}: {e}", r.op.name(), r.log))
        })
        .collect()
}

/// GMP on every host core: the same operation on `rug::Integer`s, rayon over instances.
mod gmp {
    #[cfg(feature = "gmp")]
    pub use built::*;
    #[cfg(not(feature = "gmp"))]
    pub use not_built::*;

    #[cfg(not(feature = "gmp"))]
    mod not_built {
        use super::super::BitOp;

        pub fn describe() -> String {
            crate::gmp::describe()
        }

        pub fn time(
            _op: BitOp,
            _bits: u64,
            _a: &[u64],
            _b: &[u64],
            _runs: usize,
        ) -> bigfuse::Result<Option<f64>> {
            Ok(None)
        }
    }

    #[cfg(feature = "gmp")]
    mod built {
        use super::super::BitOp;
        use crate::measure::{median_wall_ms, sample};
        use rayon::prelude::*;
        use rug::{Assign, Integer};

        pub fn describe() -> String {
            crate::gmp::describe()
        }

        fn compute(op: BitOp, bits: u32, a: &Integer, b: &Integer, out: &mut Integer) {
            let low = b.to_u64_wrapping();
            let k = (low & 255) as u32;
            match op {
                BitOp::Xor => out.assign(a ^ b),
                BitOp::AndNot => out.assign(a & !b.clone()),
                BitOp::Shl => out.assign(a << k),
                BitOp::Shr => out.assign(a >> k),
                BitOp::Rotl => {
                    let k = (low as u32) % bits;
                    out.assign(a << k);
                    out.keep_bits_mut(bits);
                    *out |= Integer::from(a >> (bits - k));
                }
                BitOp::Normalize => out.assign(a << (bits - b.significant_bits())),
                BitOp::Extract => {
                    out.assign(a >> k);
                    out.keep_bits_mut(512);
                }
                BitOp::Div if *b == 0 => {
                    out.assign(1);
                    *out <<= bits;
                    *out -= 1;
                }
                BitOp::Div => out.assign(a / b),
                BitOp::SqrtWide => {
                    let w = Integer::from(a << bits) + b;
                    out.assign(w.sqrt());
                }
                BitOp::Sqrt => out.assign(a.sqrt_ref()),
                BitOp::DivWide => {
                    let w = Integer::from(a << bits) + b;
                    let mut d = b.clone();
                    d.set_bit(bits - 1, true);
                    let (q, r) = w.div_rem(d);
                    out.assign(q + r);
                }
                BitOp::Gcd => out.assign(a.gcd_ref(b)),
                BitOp::ModInv => {
                    let mut m = b.clone();
                    m.set_bit(0, true);
                    match a.invert_ref(&m) {
                        Some(inv) => out.assign(inv),
                        None => {
                            out.assign(1);
                            *out <<= bits;
                            *out -= 1;
                        }
                    }
                }
            }
            out.keep_bits_mut(bits);
        }

        /// Checks sampled instances against num-bigint, then the median wall time of `runs`
        /// passes over all instances (after one untimed pass).
        pub fn time(
            op: BitOp,
            bits: u64,
            a: &[u64],
            b: &[u64],
            runs: usize,
        ) -> bigfuse::Result<Option<f64>> {
            let (xs, ys) = (crate::gmp::integers(bits, a), crate::gmp::integers(bits, b));
            let mut out: Vec<Integer> = (0..xs.len())
                .into_par_iter()
                .map(|_| Integer::with_capacity(2 * bits as usize))
                .collect();
            let pass = |out: &mut [Integer]| {
                out.par_iter_mut()
                    .zip(xs.par_iter().zip(ys.par_iter()))
                    .for_each(|(o, (x, y))| compute(op, bits as u32, x, y, o));
            };
            pass(&mut out);
            use crate::gmp::big;
            let bad = sample(bits, xs.len())
                .into_par_iter()
                .find_any(|&i| big(&out[i]) != op.reference(&big(&xs[i]), &big(&ys[i]), bits));
            if let Some(i) = bad {
                return Err(bigfuse::Error::Argument {
                    kernel: format!("GMP {}", op.name()),
                    message: format!("instance {i} at {bits} bits differs from num-bigint"),
                });
            }
            let ms = median_wall_ms(1, runs, |_| {
                pass(&mut out);
                Ok(())
            })?;
            Ok(Some(ms))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse::ir::{eval, specialize, Value};

    #[test]
    fn each_kernel_compiles_where_nvrtc_is() {
        if !bigfuse::runtime::nvrtc::available() {
            eprintln!("no NVRTC: the bit kernels are compiled by the snapshot tests' runs only");
            return;
        }
        for op in ALL {
            let kernel = Kernel::new(op.func()).unwrap();
            // Division kernels are large (a reciprocal by Newton's iteration): fewer sizes.
            let sizes: &[u64] = if matches!(
                op,
                BitOp::Div
                    | BitOp::DivWide
                    | BitOp::SqrtWide
                    | BitOp::Sqrt
                    | BitOp::Gcd
                    | BitOp::ModInv
            ) {
                &[256, 1024]
            } else {
                &[256, 4096, 65536]
            };
            for &bits in sizes {
                let plan = kernel
                    .plan(&[bits], &bigfuse::Target::h100(), &Hints::default())
                    .unwrap();
                for part in &plan.parts {
                    let c = &part.compiled;
                    bigfuse::runtime::nvrtc::compile_uncached(&c.source, &c.kernel_name, "sm_90")
                        .unwrap_or_else(|e| panic!("{} at {bits}: {e}", op.name()));
                }
            }
        }
    }

    #[test]
    fn each_kernel_means_its_reference() {
        let mut x = 0x243f6a8885a308d3u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for bits in [512u64, 1024] {
            for op in ALL {
                let f = specialize(&op.func(), &[bits]).unwrap();
                for _ in 0..8 {
                    let a = bigfuse::runtime::big_from_limbs(
                        &(0..bits / 64).map(|_| next()).collect::<Vec<_>>(),
                    );
                    let b = bigfuse::runtime::big_from_limbs(
                        &(0..bits / 64 - 1).map(|_| next()).collect::<Vec<_>>(),
                    );
                    let got = eval(&f, &[Value::Big(a.clone()), Value::Big(b.clone())]).unwrap();
                    assert_eq!(
                        got,
                        vec![Value::Big(op.reference(&a, &b, bits))],
                        "{} at {bits}",
                        op.name()
                    );
                }
            }
        }
    }
}

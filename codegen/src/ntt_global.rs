//! Products too long for one block: a four-step NTT over global memory, in three kernels, then
//! the column sums added by an ordinary (block-spanning) addition kernel. A strategy of
//! [`crate::split`]: it takes a product node that does not fit one kernel (or, with the hint
//! `gntt`, any product from a size).
//!
//! The transform of N = R * C points (same primes, digits and exactness rules as the one-block
//! NTT of [`crate::ntt`]) sees the data as R rows of C points, point n = c + C r:
//! 1. `columns`: for each operand and column c, the digits read once, then for each prime an
//!    R-point forward transform (decimation in frequency) of the column, each result k1 (stored
//!    at row bitrev(k1)) times w_N^(c k1);
//! 2. `rows`: for each prime and row, the C-point forward transforms of both operands' rows,
//!    their pointwise product scaled by N^-1, and the C-point inverse transform (decimation in
//!    time), so the product's transform never goes back to global memory;
//! 3. `finish`: for each column, the twiddles w_N^-(c k1), the R-point inverse transform, then
//!    Garner's CRT of the three primes' residues into exact column sums, written as two big
//!    integers X (each limb's sum mod 2^64) and Y (the rest, one limb up);
//! 4. the product is X + Y, an ordinary addition (carries across blocks by look-back).
//!
//! A block holds up to a row of C = 2^12 points or a group of W adjacent columns (W >= 8, so
//! that each row of a group is a whole 32-byte sector) in shared memory: each element is read
//! and written once per kernel. The instances of a batch share the launches (each instance is a
//! fixed number of blocks of each kernel). [`GlobalNtt`] is the plan and, step by step, the CPU
//! model the kernels follow (tested against num-bigint here; the CUDA in `emit/ntt_global.rs`).
//!
//! Where it is used: products that do not fit one block (from 2^19 bits), or from the size the
//! hint `gntt` gives. Measured on an H200 (bench/RESULTS.md, 2026-11-26), 1-Mul in Gu32ops/s,
//! one-block NTT against this: 30,851 / 25,086 at 2^16 bits, 28,379 / 30,352 at 2^17, 27,712 /
//! 29,985 at 2^18. A lone product would gain 7-8% at 2^17 and 2^18, but there Poly's four
//! products run fused in one kernel (1.07x its 1-Mul) and over global memory they would be
//! separate kernels (not measured at those sizes; 0.7-0.96x its 1-Mul from 2^19), so the default
//! keeps one block wherever it fits.

use crate::error::{CgResult, CodegenError};
use crate::layout::layout_of;
use crate::ntt::{self, dif, dit, mul_mont, mul_shoup, pow_mod, shoup, NttPlan, Prime};
use crate::place::Placement;
use crate::schedule::Schedule;
use crate::{Compiled, Target};
use bigfuse_core::{Size, Type};

/// The longest row a block transforms (points): two operands' rows of 2^12 points take 33 KiB of
/// shared memory.
pub const MAX_LOG_COLS: u32 = 12;
/// The shortest column transform (rows).
pub const MIN_LOG_ROWS: u32 = 3;
/// Elements of a column group when the columns are short: W = 2^12 / R adjacent columns.
const LOG_GROUP_ELEMENTS: u32 = 12;
/// Stages per register pass of the row transforms and of the column transforms
/// ([`GlobalNtt::radix`]).
const ROW_RADIX: u32 = 5;
const COLUMN_RADIX: u32 = 4;
/// Narrowest column group: 8 columns of 4 bytes, one 32-byte sector per row.
const MIN_LOG_WIDTH: u32 = 3;

/// The kernels of a product over global memory, in launch order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    Columns,
    Rows,
    Finish,
}

impl Step {
    pub const ALL: [Step; 3] = [Step::Columns, Step::Rows, Step::Finish];

    pub fn name(self) -> &'static str {
        match self {
            Step::Columns => "columns",
            Step::Rows => "rows",
            Step::Finish => "finish",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalNtt {
    /// Primes, transform length, digits: the one-block NTT's plan for the same operands.
    pub ntt: NttPlan,
    /// 64-bit limbs of each operand and of the result.
    pub in_limbs: u64,
    pub out_limbs: u64,
    /// R = 2^log_rows rows of C = 2^log_cols points.
    pub log_rows: u32,
    pub log_cols: u32,
    /// W = 2^log_width adjacent columns per block of `columns` and `finish`.
    pub log_width: u32,
    /// 1 for a square (one operand transformed), else 2.
    pub operands: u32,
}

/// Where each table of one prime starts in the kernels' table (32-bit words; the prime's tables
/// start at `prime * stride`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableOffsets {
    pub stride: u64,
    /// Pairs (w^e, Shoup's companion), e < R/2: the column transforms, forward and inverse.
    pub col_f: u64,
    pub col_i: u64,
    /// Pairs for the row transforms, e < C/2.
    pub row_f: u64,
    pub row_i: u64,
    /// Pairs (w_N^e, Shoup's companion) for e = lo + hi 2^split: the low and high parts, forward
    /// and inverse.
    pub step_lo_f: u64,
    pub step_hi_f: u64,
    pub step_lo_i: u64,
    pub step_hi_i: u64,
}

impl GlobalNtt {
    /// The plan for operands of `in_limbs` limbs (both the same width, as `a * b` and
    /// `a.mul_wide(b)` have) and a result of `out_limbs`, or why the primes cannot make it exact.
    pub fn new(in_limbs: u64, out_limbs: u64, square: bool) -> CgResult<GlobalNtt> {
        let ntt = ntt::plan(in_limbs, out_limbs)?;
        let log_n = ntt.log_n;
        if log_n < MIN_LOG_ROWS + MIN_LOG_WIDTH {
            return Err(CodegenError::Unsupported(format!(
                "a product over global memory needs at least 2^{} points, not 2^{log_n}",
                MIN_LOG_ROWS + MIN_LOG_WIDTH
            )));
        }
        let log_cols = MAX_LOG_COLS.min(log_n - MIN_LOG_ROWS);
        let log_rows = log_n - log_cols;
        let log_width = LOG_GROUP_ELEMENTS
            .saturating_sub(log_rows)
            .clamp(MIN_LOG_WIDTH, log_cols);
        Ok(GlobalNtt {
            ntt,
            in_limbs,
            out_limbs,
            log_rows,
            log_cols,
            log_width,
            operands: if square { 1 } else { 2 },
        })
    }

    pub fn n(&self) -> u64 {
        self.ntt.n()
    }
    pub fn rows(&self) -> u64 {
        1 << self.log_rows
    }
    pub fn cols(&self) -> u64 {
        1 << self.log_cols
    }
    pub fn width(&self) -> u64 {
        1 << self.log_width
    }
    /// Column groups per operand and prime.
    pub fn groups(&self) -> u64 {
        self.cols() / self.width()
    }
    /// Elements of one column group (rows x width).
    pub fn group_elements(&self) -> u64 {
        self.rows() * self.width()
    }
    /// Bits of the twiddle exponent's low part in the step tables.
    pub fn split(&self) -> u32 {
        self.ntt.log_n.div_ceil(2)
    }

    /// Blocks each instance takes in `step`'s kernel.
    pub fn blocks_per_instance(&self, step: Step) -> u64 {
        match step {
            Step::Columns => self.operands as u64 * self.groups(),
            Step::Rows => 3 * self.rows(),
            Step::Finish => self.groups(),
        }
    }

    /// Stages per register pass of `step`'s transforms (a cube of 2^radix points per thread).
    /// Rows take cubes of 32 points, measured on an H200 at 2^19 bits (RESULTS.md, 2026-11-26):
    /// cubes of 16 are bound by L1 and shared-memory traffic (three passes, a twiddle load per
    /// butterfly: 22,344 Gu32ops/s); cubes of 64 need 127 registers, 12 warps per SM and stall on
    /// latency (26,026); cubes of 32 take 63 registers, 24 warps (31,424).
    pub fn radix(&self, step: Step) -> u32 {
        match step {
            Step::Rows => ROW_RADIX.min(self.log_cols),
            Step::Columns | Step::Finish => COLUMN_RADIX.min(self.log_rows),
        }
    }

    /// Threads per block of `step`'s kernel: one cube per thread and pass.
    pub fn threads(&self, step: Step) -> u32 {
        let elements = match step {
            Step::Rows => self.cols(),
            Step::Columns | Step::Finish => self.group_elements(),
        };
        (elements >> self.radix(step)).clamp(32, 512) as u32
    }

    /// Shared memory of `step`'s kernel (bytes): its buffers of 32-bit elements, element i at
    /// i + i / 2^radix (bank-conflict free in every full pass, see `emit/ntt_global.rs`).
    pub fn shared_bytes(&self, step: Step) -> u32 {
        let (buffers, len) = match step {
            Step::Columns => (1, self.group_elements()),
            Step::Rows => (self.operands as u64, self.cols()),
            Step::Finish => (3, self.group_elements()),
        };
        (buffers * padded(len, self.radix(step)) * 4) as u32
    }

    /// 32-bit words per instance of the transforms `columns` writes (operands x primes x N).
    pub fn transform_words(&self) -> u64 {
        self.operands as u64 * 3 * self.n()
    }
    /// 32-bit words per instance of the products' transforms `rows` writes (primes x N).
    pub fn product_words(&self) -> u64 {
        3 * self.n()
    }

    pub fn offsets(&self) -> TableOffsets {
        let (r, c) = (self.rows(), self.cols());
        let lo = 1u64 << self.split();
        let hi = 1u64 << (self.ntt.log_n - self.split());
        let col_f = 0;
        let col_i = col_f + r;
        let row_f = col_i + r;
        let row_i = row_f + c;
        let step_lo_f = row_i + c;
        let step_hi_f = step_lo_f + 2 * lo;
        let step_lo_i = step_hi_f + 2 * hi;
        let step_hi_i = step_lo_i + 2 * lo;
        TableOffsets {
            stride: step_hi_i + 2 * hi,
            col_f,
            col_i,
            row_f,
            row_i,
            step_lo_f,
            step_hi_f,
            step_lo_i,
            step_hi_i,
        }
    }

    /// Every prime's tables, prime after prime ([`TableOffsets`]): the kernels' one table.
    pub fn table(&self) -> Vec<u32> {
        let mut t = Vec::new();
        for prime in &self.ntt.primes {
            let tw = Twiddles::new(self, prime);
            for pairs in [
                &tw.col_f,
                &tw.col_i,
                &tw.row_f,
                &tw.row_i,
                &tw.step_lo_f,
                &tw.step_hi_f,
                &tw.step_lo_i,
                &tw.step_hi_i,
            ] {
                t.extend(pairs.iter().flat_map(|&(w, s)| [w, s]));
            }
        }
        debug_assert_eq!(t.len() as u64, 3 * self.offsets().stride);
        t
    }

    /// What `explain` says of the plan.
    pub fn describe(&self) -> String {
        format!(
            "a product over global memory: NTT of 2^{} points in 3 primes as {} rows of {} points; \
             kernels `columns` ({} column transforms of {} points per block, {} blocks per instance), \
             `rows` (forward, pointwise and inverse transforms of one row, {} blocks), `finish` \
             (inverse column transforms and Garner's CRT, {} blocks), then the column sums added",
            self.ntt.log_n,
            self.rows(),
            self.cols(),
            self.width(),
            self.rows(),
            self.blocks_per_instance(Step::Columns),
            self.blocks_per_instance(Step::Rows),
            self.blocks_per_instance(Step::Finish),
        )
    }

    /// The types of `step`'s inputs and outputs (per instance): the operands' digits as their
    /// big integers, the transforms as arrays of 32-bit residues, X and Y as big integers.
    pub fn types(&self, step: Step) -> (Vec<Type>, Vec<Type>) {
        let big = |limbs: u64| Type::Big(Size::lit(64 * limbs));
        let words = |n: u64| Type::Array(Box::new(Type::U32), Size::lit(n));
        match step {
            Step::Columns => (
                vec![big(self.in_limbs); self.operands as usize],
                vec![words(self.transform_words())],
            ),
            Step::Rows => (
                vec![words(self.transform_words())],
                vec![words(self.product_words())],
            ),
            Step::Finish => (
                vec![words(self.product_words())],
                vec![big(self.out_limbs), big(self.out_limbs)],
            ),
        }
    }

    /// `step`'s kernel, named `name`, for `target`: one instance is
    /// [`GlobalNtt::blocks_per_instance`] blocks, each with its shared buffers.
    pub fn kernel(&self, step: Step, name: &str, target: &Target) -> CgResult<Compiled> {
        let shared = self.shared_bytes(step);
        if shared > target.max_shared_per_block {
            return Err(CodegenError::TooBig(format!(
                "the `{}` kernel of a product over global memory needs {shared} bytes of shared memory per block; {} allows {}",
                step.name(),
                target.name,
                target.max_shared_per_block
            )));
        }
        let threads = self.threads(step);
        let blocks = self.blocks_per_instance(step) as u32;
        let why = format!(
            "kernel `{}` of {}: {blocks} block(s) of {threads} threads per instance, {shared} bytes of shared memory each",
            step.name(),
            self.describe()
        );
        let (ins, outs) = self.types(step);
        let layouts = |prefix: &str, ts: &[Type]| -> CgResult<Vec<_>> {
            ts.iter()
                .enumerate()
                .map(|(i, t)| layout_of(&format!("{prefix}{i}"), t))
                .collect()
        };
        Ok(Compiled {
            kernel_name: name.to_string(),
            source: crate::emit::ntt_global::source(self, step, name, &why),
            schedule: Schedule {
                threads_per_instance: threads * blocks,
                blocks_per_instance: blocks,
                lane_halo: false,
                instances_per_block: 1,
                block_threads: threads,
                max_len: self.n(),
                q: 16,
                est_registers: 64,
                mul_width: 0,
                min_blocks: 1,
                group_threads: 1,
                shared_limit: target.max_shared_per_block,
                tuples_coalesced: false,
                wide_coalesced: false,
                prefetch_ahead: 0,
                read_coordinates: false,
                park_values: false,
                decisions: vec![why.clone()],
            },
            placement: Placement {
                places: vec![],
                staging: vec![],
                transpose: None,
                parks: Vec::new(),
                shared_bytes: shared,
                notes: vec![],
            },
            inputs: layouts("in", &ins)?,
            outputs: layouts("out", &outs)?,
            kernels: vec![],
            fusion_notes: vec![],
            selection: vec![],
            stages: vec![],
            tables: vec![self.table()],
            scratch: None,
            sizes: vec![],
            target: target.clone(),
            spill_free: None,
        })
    }

    // ---- the CPU model, kernel by kernel, on one instance's words ----

    /// `columns`: the operands' 32-bit digits in, their column-transformed residues out
    /// (operand, prime, point c + C * row).
    pub fn columns(&self, a: &[u32], b: &[u32]) -> Vec<u32> {
        let (n, r, c) = (
            self.n() as usize,
            self.rows() as usize,
            self.cols() as usize,
        );
        let mut out = vec![0u32; self.transform_words() as usize];
        for (op, digits) in [a, b].into_iter().take(self.operands as usize).enumerate() {
            for (pi, prime) in self.ntt.primes.iter().enumerate() {
                let p = prime.p;
                let tw = Twiddles::new(self, prime);
                let dst = &mut out[(op * 3 + pi) * n..(op * 3 + pi + 1) * n];
                for col in 0..c {
                    let mut x: Vec<u32> = (0..r)
                        .map(|row| {
                            ntt::reduce_digit(digits.get(col + c * row).copied().unwrap_or(0), p)
                        })
                        .collect();
                    dif(&mut x, &tw.col_f, p);
                    for (pos, v) in x.into_iter().enumerate() {
                        let e = col as u64 * bit_reverse(pos as u64, self.log_rows);
                        dst[col + c * pos] = tw.step(self, v, e, prime, true);
                    }
                }
            }
        }
        out
    }

    /// `rows`: the column-transformed residues in, the product's residues (prime, point c + C *
    /// row) out, after the row transforms, the pointwise product scaled by N^-1 and the inverse
    /// row transforms.
    pub fn rows_step(&self, t: &[u32]) -> Vec<u32> {
        let (n, c) = (self.n() as usize, self.cols() as usize);
        let mut out = vec![0u32; self.product_words() as usize];
        for (pi, prime) in self.ntt.primes.iter().enumerate() {
            let p = prime.p;
            let tw = Twiddles::new(self, prime);
            let sc = self.ntt.scale(prime);
            let scs = shoup(sc, p);
            let second = if self.operands == 2 { 3 + pi } else { pi };
            for row in 0..self.rows() as usize {
                let span = |k: usize| k * n + row * c..k * n + (row + 1) * c;
                let mut x = t[span(pi)].to_vec();
                let mut y = t[span(second)].to_vec();
                dif(&mut x, &tw.row_f, p);
                dif(&mut y, &tw.row_f, p);
                for (u, v) in x.iter_mut().zip(&y) {
                    *u = mul_shoup(mul_mont(*u, *v, prime), sc, scs, p);
                }
                dit(&mut x, &tw.row_i, p);
                out[pi * n + row * c..pi * n + (row + 1) * c].copy_from_slice(&x);
            }
        }
        out
    }

    /// `finish`: the products' residues in, (X, Y) out: limb l of X is the low 64 bits of the
    /// sum of columns 2l and 2l+1 (the second shifted by 32 bits), limb l+1 of Y its high bits.
    pub fn finish(&self, u: &[u32]) -> (Vec<u64>, Vec<u64>) {
        let (n, r, c) = (
            self.n() as usize,
            self.rows() as usize,
            self.cols() as usize,
        );
        let mut residues = vec![vec![0u32; n]; 3];
        for (pi, prime) in self.ntt.primes.iter().enumerate() {
            let p = prime.p;
            let tw = Twiddles::new(self, prime);
            for col in 0..c {
                let mut x: Vec<u32> = (0..r)
                    .map(|pos| {
                        let e = col as u64 * bit_reverse(pos as u64, self.log_rows);
                        tw.step(self, u[pi * n + col + c * pos], e, prime, false)
                    })
                    .collect();
                dit(&mut x, &tw.col_i, p);
                for (row, v) in x.into_iter().enumerate() {
                    residues[pi][col + c * row] = ntt::reduce_4p(v, p);
                }
            }
        }
        let limbs = self.out_limbs as usize;
        let (mut xs, mut ys) = (vec![0u64; limbs], vec![0u64; limbs]);
        for l in 0..limbs.min(n / 2) {
            let col = |k: usize| {
                self.ntt
                    .garner(residues[0][k], residues[1][k], residues[2][k])
            };
            let (v0, v1) = (col(2 * l), col(2 * l + 1));
            let sum = v0 + (v1 << 32);
            xs[l] = sum as u64;
            if l + 1 < limbs {
                ys[l + 1] = (sum >> 64) as u64;
            }
        }
        (xs, ys)
    }
}

/// Elements of a shared buffer of `len` elements with one pad word every 2^`shift`.
pub fn padded(len: u64, shift: u32) -> u64 {
    len + (len >> shift)
}

/// The low `bits` bits of `x` in reverse order.
pub fn bit_reverse(x: u64, bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (64 - bits)
    }
}

/// One prime's tables ([`TableOffsets`]).
struct Twiddles {
    col_f: Vec<(u32, u32)>,
    col_i: Vec<(u32, u32)>,
    row_f: Vec<(u32, u32)>,
    row_i: Vec<(u32, u32)>,
    step_lo_f: Vec<(u32, u32)>,
    step_hi_f: Vec<(u32, u32)>,
    step_lo_i: Vec<(u32, u32)>,
    step_hi_i: Vec<(u32, u32)>,
}

impl Twiddles {
    fn new(plan: &GlobalNtt, prime: &Prime) -> Twiddles {
        let p = prime.p as u64;
        let log_n = plan.ntt.log_n;
        let w = pow_mod(prime.generator as u64, (p - 1) >> log_n, p);
        let w_inv = pow_mod(w, p - 2, p);
        let pairs = |root: u64, len: u64| -> Vec<(u32, u32)> {
            let mut x = 1u64;
            (0..len / 2)
                .map(|_| {
                    let v = x as u32;
                    x = x * root % p;
                    (v, shoup(v, prime.p))
                })
                .collect()
        };
        let split = plan.split();
        let powers = |root: u64, count: u64, step: u64| -> Vec<(u32, u32)> {
            let s = pow_mod(root, step, p);
            let mut x = 1u64;
            (0..count)
                .map(|_| {
                    let v = x as u32;
                    x = x * s % p;
                    (v, shoup(v, prime.p))
                })
                .collect()
        };
        let (r, c) = (plan.rows(), plan.cols());
        let (lo, hi) = (1u64 << split, 1u64 << (log_n - split));
        Twiddles {
            col_f: pairs(pow_mod(w, c, p), r),
            col_i: pairs(pow_mod(w_inv, c, p), r),
            row_f: pairs(pow_mod(w, r, p), c),
            row_i: pairs(pow_mod(w_inv, r, p), c),
            step_lo_f: powers(w, lo, 1),
            step_hi_f: powers(w, hi, lo),
            step_lo_i: powers(w_inv, lo, 1),
            step_hi_i: powers(w_inv, hi, lo),
        }
    }

    /// `v * w^e` (forward) or `v * w^-e` mod p, as the kernels compute it: two products by
    /// Shoup's method with the tables' low and high parts.
    fn step(&self, plan: &GlobalNtt, v: u32, e: u64, prime: &Prime, forward: bool) -> u32 {
        let split = plan.split();
        let (lo, hi) = if forward {
            (&self.step_lo_f, &self.step_hi_f)
        } else {
            (&self.step_lo_i, &self.step_hi_i)
        };
        let l = lo[(e & ((1 << split) - 1)) as usize];
        let h = hi[(e >> split) as usize];
        mul_shoup(mul_shoup(v, l.0, l.1, prime.p), h.0, h.1, prime.p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::{BigUint, RandBigInt};

    fn digits(v: &BigUint, n: usize) -> Vec<u32> {
        let mut d = v.to_u32_digits();
        d.resize(n, 0);
        d
    }

    fn product(plan: &GlobalNtt, x: &BigUint, y: &BigUint) -> BigUint {
        let d = 2 * plan.in_limbs as usize;
        let t = plan.columns(&digits(x, d), &digits(y, d));
        let (xs, ys) = plan.finish(&plan.rows_step(&t));
        let big = |w: &[u64]| {
            BigUint::from_slice(
                &w.iter()
                    .flat_map(|v| [*v as u32, (*v >> 32) as u32])
                    .collect::<Vec<_>>(),
            )
        };
        (big(&xs) + big(&ys)) % (BigUint::from(1u8) << (64 * plan.out_limbs))
    }

    #[test]
    fn shapes_follow_the_transform_length() {
        let p = GlobalNtt::new(1 << 15, 1 << 15, false).unwrap(); // 2^21 bits
        assert_eq!(p.ntt.log_n, 17);
        assert_eq!((p.log_rows, p.log_cols, p.log_width), (5, 12, 7));
        assert_eq!(p.group_elements(), 4096);
        let p = GlobalNtt::new(1 << 20, 1 << 21, false).unwrap(); // 2^26 bits, wide
        assert_eq!((p.log_rows, p.log_cols, p.log_width), (10, 12, 3));
        assert_eq!(p.shared_bytes(Step::Finish), 3 * 8704 * 4);
        assert!(p.shared_bytes(Step::Finish) <= 227 * 1024);
        // The primes allow 2^23 points: operands up to 2^27 bits.
        assert_eq!(
            GlobalNtt::new(1 << 21, 1 << 21, false).unwrap().ntt.log_n,
            23
        );
        assert!(GlobalNtt::new(1 << 22, 1 << 22, false).is_err());
        let t = p.table();
        assert_eq!(t.len() as u64, 3 * p.offsets().stride);
    }

    #[test]
    fn the_model_multiplies_exactly() {
        let mut rng = rand::thread_rng();
        // From the smallest plan (2^8 points: 8 rows of 32) to four-step shapes with many rows.
        for (limbs, square) in [
            (2u64, false),
            (33, false),
            (64, true),
            (300, false),
            (1024, false),
        ] {
            for wide in [false, true] {
                let out = if wide { 2 * limbs } else { limbs };
                let plan = GlobalNtt::new(limbs, out, square).unwrap();
                let max = (BigUint::from(1u8) << (64 * limbs)) - 1u8;
                let r = rng.gen_biguint(64 * limbs);
                let cases = if square {
                    vec![(max.clone(), max.clone()), (r.clone(), r)]
                } else {
                    vec![
                        (max.clone(), max.clone()),
                        (r, rng.gen_biguint(64 * limbs)),
                        (BigUint::from(1u8), max.clone()),
                        (BigUint::from(0u8), max.clone()),
                    ]
                };
                for (x, y) in cases {
                    let want = (&x * &y) % (BigUint::from(1u8) << (64 * out));
                    assert_eq!(
                        product(&plan, &x, &y),
                        want,
                        "{limbs} limbs, wide {wide}, square {square}"
                    );
                }
            }
        }
    }

    #[test]
    fn many_rows_and_a_prime_number_of_limbs() {
        // 2^16 points at 257 + 16000 limbs: 16 rows of 4096, groups of 256 columns.
        let mut rng = rand::thread_rng();
        let limbs = 16_257;
        let plan = GlobalNtt::new(limbs, 2 * limbs, false).unwrap();
        assert_eq!((plan.log_rows, plan.log_cols), (4, 12));
        let x = rng.gen_biguint(64 * limbs);
        let y = (BigUint::from(1u8) << (64 * limbs)) - 1u8;
        assert_eq!(product(&plan, &x, &y), &x * &y);
    }
}

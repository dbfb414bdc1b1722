//! Random kernel programs for differential testing: every compiler path is checked against the
//! reference evaluator on programs nobody wrote by hand (`tests/fuzz.rs` on the CPU in every test
//! run, `bench fuzz` on the GPU).

use crate::ir::{
    BinOp, Builder, Func, IrResult, Literal, ShiftOp, Size, Type, UnOp, Value, ValueId,
};
use num_bigint::BigUint;

/// A small deterministic generator (xorshift64*), so that a failing seed reproduces anywhere.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e3779b97f4a7c15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545f4914f6cdd1d)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A random program and the sizes to run it at.
#[derive(Clone, Debug)]
pub struct Program {
    pub seed: u64,
    pub func: Func,
    pub bits: u64,
}

/// Sizes the fuzzer draws from: small and large, powers of two and not.
pub const BITS: &[u64] = &[
    64, 128, 192, 256, 320, 512, 1024, 2048, 3008, 4096, 8192, 16384, 65536,
];

/// A shift amount or bit index worth trying at `bits` bits: 0, 1, limb edges, the width and its
/// neighbours, u32::MAX, or a random position.
fn amount(r: &mut Rng, bits: u64) -> u32 {
    let w = bits as u32;
    match r.below(12) {
        0 => 0,
        1 => 1,
        2 => 63,
        3 => 64,
        4 => 65,
        5 => w - 1,
        6 => w,
        7 => w + 1,
        8 => u32::MAX,
        9 => r.below(2 * bits) as u32,
        _ => r.below(bits) as u32,
    }
}

const SHIFTS: [ShiftOp; 4] = ShiftOp::ALL;
const COUNTS: [UnOp; 3] = [UnOp::LeadingZeros, UnOp::TrailingZeros, UnOp::CountOnes];

/// `m` as a modulus: a parameter (the first `params` values) made odd by the program, because
/// the runtime refuses an even modulus among the arguments (the evaluator would give all ones);
/// a computed value as it is (even ones give all ones on every path).
fn computed(b: &mut Builder, m: ValueId, params: u64) -> IrResult<ValueId> {
    if (m.index() as u64) < params {
        let one = b.constant(Literal::Big(vec![1], Size::param(0)));
        b.or(m, one)
    } else {
        Ok(m)
    }
}

/// A random DAG of additions, subtractions, products (and, up to 512 bits, divisions,
/// remainders and square roots; from 3008 to 8192 bits divisions and remainders by one thread, in
/// programs without products; up to 1024 bits, gcds, inverses, powers and sums, differences
/// and products modulo a number; at 2048 bits gcds, inverses and powers, in groups of threads),
/// comparisons, selects, bit operations (`!`, `&`, `|`, `^`, shifts and rotations by run-time
/// amounts, bit counts and tests, bit-field extraction and insertion, masks, changes of width)
/// and scalar operations (division and remainder included) over two or three `U<BITS>`
/// parameters, a `u64` and a `bool`, with one to four results. `products` allows
/// multiplications (slower to compile at large sizes).
pub fn program(seed: u64, products: bool) -> IrResult<Program> {
    let mut r = Rng::new(seed);
    let bits = BITS[r.below(BITS.len() as u64) as usize];
    let mut b = Builder::new(&format!("fuzz{seed}"), &["BITS"]);
    let big = Type::Big(Size::param(0));
    let n_big = 2 + r.below(2);
    let mut bigs: Vec<ValueId> = (0..n_big)
        .map(|i| b.param(&format!("x{i}"), big.clone()))
        .collect();
    let mut words: Vec<ValueId> = vec![b.param("k", Type::U64)];
    let mut flags: Vec<ValueId> = vec![b.param("f", Type::Bool)];
    // u32 values: shift amounts, bit positions, counts.
    let mut amounts: Vec<ValueId> = (0..2).map(|_| b.u32(amount(&mut r, bits))).collect();
    let mut odd: Option<ValueId> = None;
    // A division above 2048 bits is computed whole by one thread only in a program without
    // products (one thread's product of these widths would take NVRTC minutes); with one it
    // would be the Newton expansion. So a program does one or the other (a square root of such
    // a width, one thread's function, counts as a division).
    let (mut multiplied, mut divided_wide) = (false, false);
    let steps = 3 + r.below(10);
    for _ in 0..steps {
        let pick = |r: &mut Rng, v: &[ValueId]| v[r.below(v.len() as u64) as usize];
        match r.below(20) {
            0..=2 => {
                let (x, y) = (pick(&mut r, &bigs), pick(&mut r, &bigs));
                let v = b.add(x, y)?;
                bigs.push(v);
            }
            3..=4 => {
                let (x, y) = (pick(&mut r, &bigs), pick(&mut r, &bigs));
                let v = b.sub(x, y)?;
                bigs.push(v);
            }
            5 if products => {
                let (x, y) = (pick(&mut r, &bigs), pick(&mut r, &bigs));
                // Division where its kernels stay small (one thread per instance): most of the
                // time up to 512 bits.
                let v = if (bits <= 1024 || bits == 2048) && r.chance(25) {
                    // The operations computed through a device function: a gcd, an inverse
                    // (its flag too) or a power (the modulus a third operand). At 2048 bits
                    // these three, which a group of threads computes together (a gcd on the
                    // group of an inverse or a power of the program, alone on one thread).
                    let kind = if bits > 1024 { r.below(3) } else { r.below(5) };
                    match kind {
                        // Arithmetic modulo a number: mostly one odd modulus, so that chains form
                        // (kept in Montgomery form), sometimes any value (an even one: all ones).
                        3 | 4 => {
                            let m = if r.chance(80) {
                                match odd {
                                    Some(m) => m,
                                    None => {
                                        let one = b.constant(Literal::Big(vec![1], Size::param(0)));
                                        let m = b.or(bigs[0], one)?;
                                        odd = Some(m);
                                        m
                                    }
                                }
                            } else {
                                let m = pick(&mut r, &bigs);
                                computed(&mut b, m, n_big)?
                            };
                            let op = [BinOp::Add, BinOp::Sub, BinOp::Mul][r.below(3) as usize];
                            b.big_mod(op, x, y, m)?
                        }
                        0 => b.gcd(x, y)?,
                        1 => {
                            let t = b.inv_mod(x, y)?;
                            let exists = b.extract(t, 1)?;
                            flags.push(exists);
                            b.extract(t, 0)?
                        }
                        _ => {
                            let m = pick(&mut r, &bigs);
                            let m = computed(&mut b, m, n_big)?;
                            b.pow_mod(x, y, m)?
                        }
                    }
                } else if bits <= 512 && r.chance(60) {
                    match r.below(5) {
                        0 | 1 => b.div(x, y)?,
                        2 | 3 => b.rem(x, y)?,
                        _ => b.isqrt(x)?,
                    }
                } else if (3008..=8192).contains(&bits) && !multiplied && r.chance(50) {
                    divided_wide = true;
                    // From 4097 bits a square root is one thread's root function (the value
                    // padded to 8192 bits); narrower ones would be written out.
                    match r.below(if bits > 4096 { 3 } else { 2 }) {
                        0 => b.div(x, y)?,
                        1 => b.rem(x, y)?,
                        _ => b.isqrt(x)?,
                    }
                } else if divided_wide {
                    b.add(x, y)?
                } else {
                    multiplied = true;
                    b.mul(x, y)?
                };
                bigs.push(v);
            }
            6 | 7 => {
                let (x, y) = (pick(&mut r, &bigs), pick(&mut r, &bigs));
                let v = match r.below(5) {
                    0 => b.lt(x, y)?,
                    1 => b.le(x, y)?,
                    2 => b.gt(x, y)?,
                    3 => b.eq(x, y)?,
                    _ => b.ne(x, y)?,
                };
                flags.push(v);
            }
            8 | 9 => {
                let c = pick(&mut r, &flags);
                let (x, y) = (pick(&mut r, &bigs), pick(&mut r, &bigs));
                let v = b.select(c, x, y)?;
                bigs.push(v);
            }
            10 => {
                let (p, q) = (pick(&mut r, &flags), pick(&mut r, &flags));
                let v = match r.below(3) {
                    0 => b.and(p, q)?,
                    1 => b.or(p, q)?,
                    _ => b.not(p)?,
                };
                flags.push(v);
            }
            11 => {
                let (x, c) = (pick(&mut r, &words), pick(&mut r, &flags));
                let c = b.cast(c, Type::U64)?;
                let v = match r.below(3) {
                    0 => b.add(x, c)?,
                    1 => b.binary(crate::ir::BinOp::Mul, x, x)?,
                    _ => b.xor(x, c)?,
                };
                words.push(v);
            }
            12 => {
                let (x, y) = (pick(&mut r, &bigs), pick(&mut r, &bigs));
                let v = match r.below(4) {
                    0 => b.and(x, y)?,
                    1 => b.or(x, y)?,
                    2 => b.xor(x, y)?,
                    _ => b.not(x)?,
                };
                bigs.push(v);
            }
            13 | 14 => {
                let (x, k) = (pick(&mut r, &bigs), pick(&mut r, &amounts));
                let op = SHIFTS[r.below(4) as usize];
                bigs.push(b.shift(op, x, k)?);
            }
            15 => {
                let x = pick(&mut r, &bigs);
                let c = b.count(COUNTS[r.below(3) as usize], x)?;
                amounts.push(c);
                if r.chance(50) {
                    let w = b.cast(c, Type::U64)?;
                    words.push(w);
                }
            }
            16 => {
                let (x, i) = (pick(&mut r, &bigs), pick(&mut r, &amounts));
                flags.push(b.bit(x, i)?);
            }
            17 => {
                // To another width, an operation there, and back: truncation and zero extension.
                let x = pick(&mut r, &bigs);
                let other = match r.below(4) {
                    0 => Size::scaled(2, 0),
                    1 => Size::lit(64),
                    2 => Size::lit(128),
                    _ => Size::lit(192),
                };
                let y = b.cast(x, Type::Big(other))?;
                let y = match r.below(3) {
                    0 => b.not(y)?,
                    1 => {
                        let k = pick(&mut r, &amounts);
                        b.shift(SHIFTS[r.below(4) as usize], y, k)?
                    }
                    _ => b.add(y, y)?,
                };
                bigs.push(b.cast(y, big.clone())?);
            }
            18 => {
                let x = pick(&mut r, &bigs);
                let (lo, len) = (pick(&mut r, &amounts), pick(&mut r, &amounts));
                let v = match r.below(5) {
                    0 => b.extract_bits(x, lo, len)?,
                    1 => {
                        let y = pick(&mut r, &bigs);
                        b.insert_bits(x, y, lo, len)?
                    }
                    2 => b.mask(&big, len)?,
                    3 => {
                        let w = b.cast(x, Type::U64)?;
                        words.push(w);
                        continue;
                    }
                    _ => {
                        let w = b.cast(x, Type::U32)?;
                        amounts.push(w);
                        continue;
                    }
                };
                bigs.push(v);
            }
            _ => {
                // Scalar division and remainder (by zero too: a flag as u64 is 0 or 1), and
                // amounts computed from words.
                let (x, y) = (pick(&mut r, &words), pick(&mut r, &words));
                let y = if r.chance(30) {
                    let c = pick(&mut r, &flags);
                    b.cast(c, Type::U64)?
                } else {
                    y
                };
                let op = if r.chance(50) { BinOp::Div } else { BinOp::Rem };
                if r.chance(50) {
                    words.push(b.binary(op, x, y)?);
                } else {
                    // An amount near the width: (x as u32) % (2 * bits + 3), or a quotient.
                    let x = b.cast(x, Type::U32)?;
                    let d = b.u32(if op == BinOp::Rem {
                        2 * bits as u32 + 3
                    } else {
                        1 << 24
                    });
                    amounts.push(b.binary(op, x, d)?);
                }
            }
        }
    }
    // Results: the last big value, and sometimes a flag, a word and an amount.
    let mut outs = vec![*bigs.last().unwrap()];
    if r.chance(50) {
        outs.push(*flags.last().unwrap());
    }
    if r.chance(30) {
        outs.push(*words.last().unwrap());
    }
    if r.chance(30) && amounts.len() > 2 {
        outs.push(*amounts.last().unwrap());
    }
    if r.chance(30) && bigs.len() > 3 {
        outs.push(bigs[bigs.len() / 2]);
    }
    Ok(Program {
        seed,
        func: b.finish(&outs)?,
        bits,
    })
}

/// Random inputs for `n` instances of a program: values with long carry chains and equal
/// operands mixed in.
pub fn inputs(p: &Program, n: usize) -> Vec<Vec<Value>> {
    let mut r = Rng::new(p.seed ^ 0xabcdef);
    let words = (p.bits / 64) as usize;
    let mut cols: Vec<Vec<Value>> = Vec::new();
    for param in &p.func.params {
        let col = (0..n)
            .map(|i| match param.ty {
                Type::Bool => Value::Bool(r.chance(50)),
                Type::U64 => Value::U64(r.next_u64()),
                // Array programs: `bits` is the length N.
                Type::Array(ref e, _) if matches!(**e, Type::Big(_)) => {
                    let Type::Big(w) = &**e else { unreachable!() };
                    let limbs = w.as_const().unwrap_or(64) / 64;
                    Value::Array(
                        (0..p.bits)
                            .map(|_| {
                                let ls: Vec<u64> = (0..limbs)
                                    .map(|_| match r.below(5) {
                                        0 => u64::MAX,
                                        1 => 0,
                                        2 => r.below(4),
                                        _ => r.next_u64(),
                                    })
                                    .collect();
                                Value::Big(crate::runtime::big_from_limbs(&ls))
                            })
                            .collect(),
                    )
                }
                Type::Array(..) => Value::Array(
                    (0..p.bits)
                        .map(|_| {
                            Value::U64(match r.below(5) {
                                0 => u64::MAX,
                                1 => 0,
                                2 => r.below(4),
                                _ => r.next_u64(),
                            })
                        })
                        .collect(),
                ),
                _ => {
                    let limbs: Vec<u64> = (0..words)
                        .map(|_| match r.below(4) {
                            0 => u64::MAX,
                            1 => 0,
                            _ => r.next_u64(),
                        })
                        .collect();
                    let v = crate::runtime::big_from_limbs(&limbs);
                    // Sometimes the same value as the previous column's instance.
                    match cols.last().map(|c: &Vec<Value>| &c[i]) {
                        Some(Value::Big(prev)) if r.chance(20) => Value::Big(prev.clone()),
                        _ => Value::Big(v),
                    }
                }
            })
            .collect();
        cols.push(col);
    }
    cols
}

/// The columns of `inputs` as kernel arguments.
pub fn as_columns(cols: &[Vec<Value>]) -> Vec<ArgColumn> {
    cols.iter()
        .map(|c| match c.first() {
            Some(Value::Bool(_)) => {
                ArgColumn::Bool(c.iter().map(|v| v.as_bool().unwrap_or(false)).collect())
            }
            Some(Value::U64(_)) => {
                ArgColumn::U64(c.iter().map(|v| v.as_u64().unwrap_or(0)).collect())
            }
            // Arrays of big integers: flat, instance after instance.
            Some(Value::Array(xs)) if matches!(xs.first(), Some(Value::Big(_))) => ArgColumn::Big(
                c.iter()
                    .flat_map(|v| match v {
                        Value::Array(xs) => xs
                            .iter()
                            .map(|x| x.as_big().cloned().unwrap_or_default())
                            .collect(),
                        _ => Vec::new(),
                    })
                    .collect(),
            ),
            // Arrays: flat, instance after instance.
            Some(Value::Array(_)) => ArgColumn::U64(
                c.iter()
                    .flat_map(|v| match v {
                        Value::Array(xs) => xs.iter().map(|x| x.as_u64().unwrap_or(0)).collect(),
                        _ => Vec::new(),
                    })
                    .collect(),
            ),
            _ => ArgColumn::Big(
                c.iter()
                    .map(|v| v.as_big().cloned().unwrap_or_default())
                    .collect(),
            ),
        })
        .collect()
}

/// Owned argument columns (borrow them with [`ArgColumn::arg`]).
#[derive(Clone, Debug)]
pub enum ArgColumn {
    Big(Vec<BigUint>),
    Bool(Vec<bool>),
    U64(Vec<u64>),
}

impl ArgColumn {
    pub fn arg(&self) -> crate::Arg<'_> {
        match self {
            ArgColumn::Big(v) => crate::Arg::Big(v),
            ArgColumn::Bool(v) => crate::Arg::Bool(v),
            ArgColumn::U64(v) => crate::Arg::U64(v),
        }
    }
}

/// The reference results of instance `i`, per program output, as kernel columns would hold them.
pub fn reference(p: &Program, cols: &[Vec<Value>], n: usize) -> IrResult<Vec<crate::Column>> {
    let concrete = crate::ir::specialize(&p.func, &[p.bits])?;
    let mut outs: Vec<Vec<Value>> = vec![Vec::with_capacity(n); concrete.outputs.len()];
    for i in 0..n {
        let args: Vec<Value> = cols.iter().map(|c| c[i].clone()).collect();
        for (o, v) in outs.iter_mut().zip(crate::ir::eval(&concrete, &args)?) {
            o.push(v);
        }
    }
    Ok(concrete
        .output_types()
        .iter()
        .zip(outs)
        .map(|(t, vals)| {
            crate::Column::from_values(t, vals).expect("evaluator results have their types")
        })
        .collect())
}

/// Array lengths the array fuzzer draws from: one warp and less, several warps, padding, and
/// lengths that are chunked (reductions over more than 1024 elements).
pub const LENGTHS: &[u64] = &[
    1, 2, 3, 7, 32, 33, 64, 100, 256, 1000, 1024, 3000, 4096, 6144,
];

/// Associative operators with their identities, as lambdas over u64 (for scans and reductions).
fn associative(r: &mut Rng) -> IrResult<(Func, Literal)> {
    let mut l = Builder::lambda();
    let a = l.param("a", Type::U64);
    let c = l.param("b", Type::U64);
    let (v, init) = match r.below(7) {
        0 => (l.add(a, c)?, 0),
        1 => (l.xor(a, c)?, 0),
        2 => (l.and(a, c)?, u64::MAX),
        3 => (l.or(a, c)?, 0),
        4 => (l.binary(BinOp::Mul, a, c)?, 1),
        5 => {
            let lt = l.lt(a, c)?;
            (l.select(lt, c, a)?, 0) // max
        }
        _ => {
            let lt = l.lt(a, c)?;
            (l.select(lt, a, c)?, u64::MAX) // min
        }
    };
    Ok((l.finish(&[v])?, Literal::U64(init)))
}

/// An element-wise operation of two u64 values (and the broadcast scalar `k`).
fn elementwise(r: &mut Rng) -> IrResult<Func> {
    let mut l = Builder::lambda();
    let x = l.param("x", Type::U64);
    let y = l.param("y", Type::U64);
    let k = l.param("k", Type::U64);
    let v = match r.below(14) {
        // Division and remainder (elements are often 0: x / 0 is all ones, x % 0 is x).
        9 => l.binary(BinOp::Div, x, y)?,
        10 => l.binary(BinOp::Rem, x, y)?,
        11 => {
            let c = l.count(COUNTS[r.below(3) as usize], x)?;
            l.cast(c, Type::U64)?
        }
        12 => l.shift(SHIFTS[r.below(4) as usize], x, y)?,
        13 => {
            let set = l.bit(x, k)?;
            l.select(set, y, x)?
        }
        0 => l.add(x, y)?,
        1 => l.sub(x, y)?,
        2 => l.binary(BinOp::Mul, x, y)?,
        3 => l.binary(BinOp::MulHi, x, k)?,
        4 => l.xor(x, k)?,
        5 => l.binary(BinOp::Shr, x, y)?,
        6 => l.binary(BinOp::Shl, y, k)?,
        7 => {
            let lt = l.lt(x, y)?;
            l.select(lt, y, x)?
        }
        _ => {
            let s = l.add(x, k)?;
            l.and(s, y)?
        }
    };
    l.finish(&[v])
}

/// Widths of the big-integer elements of array programs (each computed by one thread).
pub const ELEMENT_BITS: &[u64] = &[64, 128, 192, 320];

/// A random closure over big integers of type `big` (two elements and the broadcast `k: u64`):
/// arithmetic, bit operations, shifts by amounts from `k`, counts, tests, changes of width.
fn big_elementwise(r: &mut Rng, big: &Type, bits: u64, out_big: bool) -> IrResult<Func> {
    let mut l = Builder::lambda();
    let mut vals = vec![l.param("x", big.clone()), l.param("y", big.clone())];
    let k = l.param("k", Type::U64);
    let pick = |r: &mut Rng, v: &[ValueId]| v[r.below(v.len() as u64) as usize];
    // Amounts: a constant worth trying, and k reduced near the width.
    let c = l.u32(amount(r, bits));
    let kk = l.cast(k, Type::U32)?;
    let d = l.u32(2 * bits as u32 + 1);
    let near = l.binary(BinOp::Rem, kk, d)?;
    let amounts = [c, near];
    for _ in 0..1 + r.below(4) {
        let (x, y) = (pick(r, &vals), pick(r, &vals));
        let v = match r.below(10) {
            0 => l.add(x, y)?,
            1 => l.sub(x, y)?,
            2 => l.mul(x, y)?,
            3 => l.xor(x, y)?,
            4 => {
                let (a, o) = (l.and(x, y)?, l.or(x, y)?);
                let n = l.not(a)?;
                l.and(n, o)?
            }
            5 | 6 => {
                let a = amounts[r.below(2) as usize];
                l.shift(SHIFTS[r.below(4) as usize], x, a)?
            }
            7 => {
                let c = l.count(COUNTS[r.below(3) as usize], x)?;
                let c = l.cast(c, big.clone())?;
                l.add(c, y)?
            }
            8 => {
                let a = amounts[r.below(2) as usize];
                let set = l.bit(x, a)?;
                l.select(set, x, y)?
            }
            _ => {
                let a = amounts[r.below(2) as usize];
                match r.below(4) {
                    0 => {
                        let w = l.cast(x, Type::Big(Size::lit(2 * bits)))?;
                        let w = l.shift(ShiftOp::Shl, w, a)?;
                        let w = l.add(w, w)?;
                        l.cast(w, big.clone())?
                    }
                    1 => l.extract_bits(x, a, amounts[1])?,
                    2 => l.insert_bits(x, y, a, amounts[0])?,
                    _ => l.mask(big, a)?,
                }
            }
        };
        vals.push(v);
    }
    let last = *vals.last().unwrap();
    let v = if out_big {
        last
    } else {
        match r.below(4) {
            0 => l.cast(last, Type::U64)?,
            1 => {
                let c = l.count(COUNTS[r.below(3) as usize], last)?;
                l.cast(c, Type::U64)?
            }
            2 => {
                let set = l.bit(last, amounts[1])?;
                l.cast(set, Type::U64)?
            }
            _ => {
                let x = l.cast(last, Type::U32)?;
                l.cast(x, Type::U64)?
            }
        }
    };
    l.finish(&[v])
}

/// An associative operator on big integers of type `big`, with its identity.
fn big_associative(r: &mut Rng, big: &Type, bits: u64) -> IrResult<(Func, Literal)> {
    let mut l = Builder::lambda();
    let a = l.param("a", big.clone());
    let c = l.param("b", big.clone());
    let Type::Big(size) = big else {
        unreachable!("a big-integer type")
    };
    // Identities in the minimal form the text reads back (one limb for 0).
    let (v, init) = match r.below(4) {
        0 => (l.add(a, c)?, vec![0]),
        1 => (l.xor(a, c)?, vec![0]),
        2 => (l.or(a, c)?, vec![0]),
        _ => (l.and(a, c)?, vec![u64::MAX; (bits / 64) as usize]),
    };
    Ok((l.finish(&[v])?, Literal::Big(init, *size)))
}

/// A random array program over `[u64; N]`: element-wise maps (with a broadcast scalar), scans and
/// reductions with associative operators, and user-written carry scans (the operator of
/// `ops::carry` spelled differently), with one to three results; some also take arrays of big
/// integers (`[U<W>; N]`, W a literal width) mapped with bit operations, arithmetic and changes of
/// width, reduced, and turned into u64 arrays that the rest uses. `bits` of the returned program
/// is N.
pub fn array_program(seed: u64) -> IrResult<Program> {
    let mut r = Rng::new(seed ^ 0x5eed_a77a);
    let n = LENGTHS[r.below(LENGTHS.len() as u64) as usize];
    let mut b = Builder::new(&format!("afuzz{seed}"), &["N"]);
    let arr = Type::array(Type::U64, Size::param(0));
    let n_arrays = 2 + r.below(2);
    let mut arrays: Vec<ValueId> = (0..n_arrays)
        .map(|i| b.param(&format!("xs{i}"), arr.clone()))
        .collect();
    let mut scalars: Vec<ValueId> = vec![b.param("k", Type::U64)];
    // Arrays of big integers, in a third of the programs.
    let elem_bits = ELEMENT_BITS[r.below(ELEMENT_BITS.len() as u64) as usize];
    let big = Type::Big(Size::lit(elem_bits));
    let mut bigs: Vec<ValueId> = if r.chance(35) {
        let t = Type::array(big.clone(), Size::param(0));
        (0..2)
            .map(|i| b.param(&format!("zs{i}"), t.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let mut big_results: Vec<ValueId> = Vec::new();
    let steps = 2 + r.below(6);
    for _ in 0..steps {
        let pick = |r: &mut Rng, v: &[ValueId]| v[r.below(v.len() as u64) as usize];
        let step = r.below(if bigs.is_empty() { 10 } else { 14 });
        // Steps 10 to 13 (when there are arrays of big integers) map or reduce them.
        if step >= 10 {
            let (x, y, k) = (
                pick(&mut r, &bigs),
                pick(&mut r, &bigs),
                pick(&mut r, &scalars),
            );
            match step {
                10 | 11 => {
                    let f = big_elementwise(&mut r, &big, elem_bits, true)?;
                    bigs.push(b.map(f, &[x, y, k])?);
                }
                12 => {
                    let f = big_elementwise(&mut r, &big, elem_bits, false)?;
                    arrays.push(b.map(f, &[x, y, k])?);
                }
                _ => {
                    let (op, init) = big_associative(&mut r, &big, elem_bits)?;
                    big_results.push(b.reduce(op, init, x)?);
                }
            }
            continue;
        }
        match step {
            0..=3 => {
                let (x, y, k) = (
                    pick(&mut r, &arrays),
                    pick(&mut r, &arrays),
                    pick(&mut r, &scalars),
                );
                let f = elementwise(&mut r)?;
                arrays.push(b.map(f, &[x, y, k])?);
            }
            4 | 5 => {
                let (op, init) = associative(&mut r)?;
                let x = pick(&mut r, &arrays);
                arrays.push(b.scan(op, init, r.chance(50), x, None)?);
            }
            6 | 7 => {
                let (op, init) = associative(&mut r)?;
                let x = pick(&mut r, &arrays);
                scalars.push(b.reduce(op, init, x)?);
            }
            _ => {
                // A user addition of two arrays: flags, a carry scan written as `(hi | (hi >> 1 & lo)) & 1 | lo & hi & 2`, apply.
                let (x, y) = (pick(&mut r, &arrays), pick(&mut r, &arrays));
                let flags = {
                    let mut l = Builder::lambda();
                    let a = l.param("a", Type::U64);
                    let c = l.param("b", Type::U64);
                    let s = l.add(a, c)?;
                    let g = l.lt(s, a)?;
                    let g = l.cast(g, Type::U32)?;
                    let ones = l.u64(u64::MAX);
                    let p = l.eq(s, ones)?;
                    let p = l.cast(p, Type::U32)?;
                    let one = l.u32(1);
                    let p = l.binary(BinOp::Shl, p, one)?;
                    let f = l.or(g, p)?;
                    l.finish(&[f])?
                };
                let carry = {
                    let mut l = Builder::lambda();
                    let lo = l.param("lo", Type::U32);
                    let hi = l.param("hi", Type::U32);
                    let one = l.u32(1);
                    let two = l.u32(2);
                    let h = l.binary(BinOp::Shr, hi, one)?;
                    let t = l.and(h, lo)?;
                    let g = l.or(hi, t)?;
                    let g = l.and(g, one)?;
                    let p = l.and(lo, hi)?;
                    let p = l.and(p, two)?;
                    let v = l.or(g, p)?;
                    l.finish(&[v])?
                };
                let apply = {
                    let mut l = Builder::lambda();
                    let a = l.param("a", Type::U64);
                    let c = l.param("b", Type::U64);
                    let cin = l.param("c", Type::U32);
                    let s = l.add(a, c)?;
                    let one = l.u32(1);
                    let bit = l.and(cin, one)?;
                    let bit = l.cast(bit, Type::U64)?;
                    let v = l.add(s, bit)?;
                    l.finish(&[v])?
                };
                let fl = b.map(flags, &[x, y])?;
                let carries = b.scan(carry, Literal::U32(2), true, fl, None)?;
                arrays.push(b.map(apply, &[x, y, carries])?);
            }
        }
    }
    let mut outs = vec![*arrays.last().unwrap()];
    if scalars.len() > 1 && r.chance(70) {
        outs.push(*scalars.last().unwrap());
    }
    if r.chance(30) && arrays.len() > n_arrays as usize {
        outs.push(arrays[arrays.len() - 2]);
    }
    // Sometimes a reduction-only program (the chunked path for long arrays).
    if r.chance(25) && scalars.len() > 1 {
        outs = vec![*scalars.last().unwrap()];
    }
    if let Some(z) = big_results.last() {
        outs.push(*z);
    }
    if bigs.len() > 2 && r.chance(60) {
        outs.push(*bigs.last().unwrap());
    }
    Ok(Program {
        seed,
        func: b.finish(&outs)?,
        bits: n,
    })
}

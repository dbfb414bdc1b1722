//! GMP on every host core, what a user would otherwise call: the same operation modulo 2^bits on
//! `rug::Integer`s, rayon over instances (the global pool: one thread per core). Products are full
//! GMP products truncated with `keep_bits_mut`; Poly truncates its two factors before their product
//! (the same result modulo 2^bits, and the cheaper way to get it). The inputs are converted to
//! Integers beforehand and the results written into Integers allocated beforehand: only the
//! arithmetic is timed.
//!
//! Behind the bench crate's `gmp` feature (it builds GMP from source, which needs `m4`); without it
//! every GMP figure is reported as not built.

use crate::ops::Op;

#[cfg(feature = "gmp")]
pub use built::*;
#[cfg(not(feature = "gmp"))]
pub use not_built::*;

#[cfg(not(feature = "gmp"))]
mod not_built {
    use super::*;

    /// Nothing to hold without GMP.
    pub struct Sets;

    pub fn available() -> bool {
        false
    }

    pub fn describe() -> String {
        "not built (build the bench with `--features gmp`)".into()
    }

    pub fn prepare(_bits: u64, _sets: &[(&[u64], &[u64])]) -> Sets {
        Sets
    }

    /// `None`: GMP is not built into this binary.
    pub fn time(_op: Op, _bits: u64, _sets: &Sets, _runs: usize) -> bigfuse::Result<Option<f64>> {
        Ok(None)
    }
}

#[cfg(feature = "gmp")]
mod built {
    use super::*;
    use crate::measure::{low_bits, median_wall_ms, sample};
    use bigfuse::BigUint;
    use rayon::prelude::*;
    use rug::integer::Order;
    use rug::{Assign, Integer};

    /// The operands of each input set as Integers.
    pub struct Sets {
        sets: Vec<(Vec<Integer>, Vec<Integer>)>,
    }

    pub fn available() -> bool {
        true
    }

    /// E.g. "GMP 6.3.0 (rug), 16 threads".
    pub fn describe() -> String {
        use gmp_mpfr_sys::gmp;
        format!(
            "GMP {}.{}.{} (rug), {} threads",
            gmp::VERSION,
            gmp::VERSION_MINOR,
            gmp::VERSION_PATCHLEVEL,
            rayon::current_num_threads()
        )
    }

    /// Values of `bits` bits given as little-endian limbs (bits/64 per value), as Integers.
    pub fn integers(bits: u64, limbs: &[u64]) -> Vec<Integer> {
        limbs
            .par_chunks((bits / 64) as usize)
            .map(|c| Integer::from_digits(c, Order::Lsf))
            .collect()
    }

    /// Converts each set's operands (little-endian limbs, bits/64 per value) to Integers.
    pub fn prepare(bits: u64, sets: &[(&[u64], &[u64])]) -> Sets {
        Sets {
            sets: sets
                .iter()
                .map(|(a, b)| (integers(bits, a), integers(bits, b)))
                .collect(),
        }
    }

    /// Scratch integers of one worker.
    pub type Scratch = (Integer, Integer);

    pub fn scratch(bits: u64) -> Scratch {
        (
            Integer::with_capacity(2 * bits as usize),
            Integer::with_capacity(2 * bits as usize),
        )
    }

    /// out = op(a, b) mod 2^bits.
    pub fn compute(
        op: Op,
        bits: u32,
        a: &Integer,
        b: &Integer,
        out: &mut Integer,
        t: &mut Scratch,
    ) {
        match op {
            Op::Add => out.assign(a + b),
            Op::Mul => out.assign(a * b),
            Op::Poly => {
                // (a*a + b) * (b*b + b) + a*b
                let (t1, t2) = t;
                t1.assign(a.square_ref());
                *t1 += b;
                t1.keep_bits_mut(bits);
                t2.assign(b.square_ref());
                *t2 += b;
                t2.keep_bits_mut(bits);
                out.assign(&*t1 * &*t2);
                t1.assign(a * b);
                *out += &*t1;
            }
        }
        out.keep_bits_mut(bits);
    }

    fn run_all(op: Op, bits: u64, (a, b): &(Vec<Integer>, Vec<Integer>), out: &mut [Integer]) {
        out.par_iter_mut()
            .zip(a.par_iter().zip(b.par_iter()))
            .for_each_init(
                || scratch(bits),
                |t, (o, (x, y))| compute(op, bits as u32, x, y, o, t),
            );
    }

    /// An Integer as num-bigint holds it (to check GMP against the reference).
    pub fn big(x: &Integer) -> BigUint {
        bigfuse::runtime::big_from_limbs(&x.to_digits::<u64>(Order::Lsf))
    }

    /// Checks sampled instances of the first set against num-bigint, then the median wall time of
    /// `runs` passes over all instances (after one untimed pass), rotating through the sets.
    pub fn time(op: Op, bits: u64, sets: &Sets, runs: usize) -> bigfuse::Result<Option<f64>> {
        let Some(first) = sets.sets.first() else {
            return Ok(None);
        };
        let n = first.0.len();
        let mut out: Vec<Integer> = (0..n)
            .into_par_iter()
            .map(|_| Integer::with_capacity(2 * bits as usize))
            .collect();
        run_all(op, bits, first, &mut out);
        let reference = op.reference();
        let bad = sample(bits, n).into_par_iter().find_any(|&i| {
            big(&out[i]) != low_bits(&reference(&big(&first.0[i]), &big(&first.1[i])), bits)
        });
        if let Some(i) = bad {
            return Err(bigfuse::Error::Argument {
                kernel: format!("GMP {}", op.name()),
                message: format!("instance {i} at {bits} bits differs from num-bigint"),
            });
        }
        let ms = median_wall_ms(1, runs, |k| {
            run_all(op, bits, &sets.sets[k % sets.sets.len()], &mut out);
            Ok(())
        })?;
        Ok(Some(ms))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use rand::{Rng, SeedableRng};

        #[test]
        fn gmp_computes_each_operation_modulo_2_bits() {
            let mut rng = rand::rngs::StdRng::seed_from_u64(7);
            for bits in [64u64, 512, 4096] {
                let m = (bits / 64) as usize;
                let modulus = BigUint::from(1u8) << bits;
                let mut values: Vec<Vec<u64>> = vec![vec![0; m], vec![u64::MAX; m]];
                values.extend((0..6).map(|_| (0..m).map(|_| rng.gen()).collect()));
                for op in crate::ops::ALL {
                    let mut t = scratch(bits);
                    let mut out = Integer::new();
                    for x in &values {
                        for y in &values {
                            let (a, b) = (
                                Integer::from_digits(x, Order::Lsf),
                                Integer::from_digits(y, Order::Lsf),
                            );
                            compute(op, bits as u32, &a, &b, &mut out, &mut t);
                            let want = op.reference()(&big(&a), &big(&b)) % &modulus;
                            assert_eq!(big(&out), want, "{op:?} at {bits} bits");
                        }
                    }
                }
            }
        }

        #[test]
        fn timing_checks_and_rotates() {
            let bits = 256u64;
            let a: Vec<u64> = (0..400u64)
                .map(|i| i.wrapping_mul(0x9e3779b97f4a7c15))
                .collect();
            let b: Vec<u64> = a.iter().map(|x| x.rotate_left(17) ^ 1).collect();
            let sets = prepare(bits, &[(&a, &b), (&b, &a)]);
            assert_eq!(sets.sets.len(), 2);
            assert_eq!(sets.sets[0].0.len(), 100);
            for op in crate::ops::ALL {
                let ms = time(op, bits, &sets, 3).unwrap().unwrap();
                assert!(ms.is_finite() && ms >= 0.0);
            }
            assert!(available() && describe().starts_with("GMP 6."));
        }
    }
}

//! The gcd and the modular inverse of big integers: the plan of a `limb.gcd` or `limb.inv_mod`,
//! which `emit` writes as one device function per width (`emit/gcd.rs` for one thread,
//! `emit/gcd_group.rs` for a group of threads per instance).
//!
//! Both run Pornin's batched binary GCD: batches of 31 steps on 64-bit approximations, whose
//! factors are then applied to the whole numbers (see `emit/gcd.rs`). The inverse carries two
//! more numbers `u`, `v` and the modulus, updated by the same factors. A thread's registers hold
//! about 255 words, so one thread computes a gcd whole up to [`GCD_WORDS_ALONE`] words (its
//! `a`, `b` and their updates) and an inverse up to [`INVERSE_WORDS_ALONE`] (five numbers and
//! their updates); wider ones run on a group of threads per instance, each holding a slice of
//! every number. A program's instances get the threads its widest grouped operation asks for
//! (`schedule`, with the powers of [`crate::montgomery`]).

use crate::error::{CgResult, CodegenError};
use bigfuse_core::{Func, Op};

/// The widest gcd (in 32-bit words) one thread computes alone. Measured on an H100
/// (bench/RESULTS.md 2026-11-25): 0.062 G gcds a second at 2048 bits in 254 registers without
/// spills, 0.007 G at 4096 bits with 1,304 bytes of local memory a thread.
pub const GCD_WORDS_ALONE: usize = 64;

/// The widest inverse (in 32-bit words) one thread computes alone. Measured on an H100
/// (bench/RESULTS.md 2026-11-25): 0.116 G inverses a second at 1024 bits (136 bytes of local
/// memory), 0.008 G at 2048 bits (1,536 bytes), 0.001 G at 4096 bits (4,528 bytes).
pub const INVERSE_WORDS_ALONE: usize = 32;

/// 32-bit words of each number a group's thread holds for a gcd: as many as one thread holds
/// alone, so that the fewest threads share an instance. Every thread of a group runs the 31 steps
/// of each batch, so a warp's instances, not its threads, pay for them: measured on an H200
/// (bench/RESULTS.md 2026-11-28), at 4096 bits 12.1 M gcds a second on 2 threads of 64 words,
/// 11.6 M on 4 of 32, 8 M on 8 of 16; at 8192 bits 3.3 M on 4 threads of 64, 2.3 M on 16 of 16.
pub const GCD_WORDS_PER_THREAD: usize = 64;

/// 32-bit words of each number a group's thread holds for an inverse: as many as one thread holds
/// alone, as for the gcd. Measured on an H200 (bench/RESULTS.md 2026-11-28): at 2048 bits 17.3 M
/// inverses a second on 2 threads of 32 words, 12.9 M on 4 of 16, 12 M on 8 of 8; at 4096 bits
/// 4.6 M on 4 threads of 32, 2.0 M on 2 of 64 (which spill), 3 M on 16 of 8.
pub const INVERSE_WORDS_PER_THREAD: usize = 32;

/// How one `gcd(a, b)` or `y^-1 mod m` is computed at its width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcdPlan {
    /// The operands' (and result's) width, a multiple of 64.
    pub bits: u64,
    /// An inverse (else a gcd).
    pub inverse: bool,
    /// Threads that compute it together (a power of two up to 32).
    pub threads: u32,
}

impl GcdPlan {
    /// The plan at `bits` (a multiple of 64): one thread up to the widths one thread holds, else
    /// groups whose threads hold the words per thread above (as many as the limbs allow).
    pub fn new(bits: u64, inverse: bool) -> GcdPlan {
        let words = (bits / 32) as usize;
        let (alone, per_thread) = if inverse {
            (INVERSE_WORDS_ALONE, INVERSE_WORDS_PER_THREAD)
        } else {
            (GCD_WORDS_ALONE, GCD_WORDS_PER_THREAD)
        };
        let mut threads = 1u32;
        if words > alone {
            while threads < 32
                && words / (2 * threads as usize) >= per_thread
                && (words / 2).is_multiple_of(2 * threads as usize)
            {
                threads *= 2;
            }
        }
        GcdPlan {
            bits,
            inverse,
            threads,
        }
    }

    /// This plan computed by `threads` threads: a power of two up to 32 that splits the 64-bit
    /// limbs evenly (each thread needs two 32-bit words or more).
    pub fn with_threads(self, threads: u32) -> CgResult<GcdPlan> {
        let limbs = self.bits / 64;
        if !threads.is_power_of_two() || threads > 32 || !limbs.is_multiple_of(threads as u64) {
            return Err(CodegenError::Unsupported(format!(
                "{} at {} bits cannot be split over {threads} threads: a power of two up to 32 \
                 that divides its {limbs} limbs is needed",
                self.what(),
                self.bits
            )));
        }
        Ok(GcdPlan { threads, ..self })
    }

    fn what(&self) -> &'static str {
        if self.inverse {
            "an inverse modulo m"
        } else {
            "a gcd"
        }
    }

    /// 32-bit words of each number.
    pub fn words(&self) -> usize {
        (self.bits / 32) as usize
    }

    /// About the registers one thread of a group needs: its words of the numbers that live at
    /// once and some for the factors, indices and carries.
    pub fn registers(&self) -> u32 {
        let l = (self.words() / self.threads as usize) as u32;
        if self.inverse {
            10 * l + 48
        } else {
            4 * l + 40
        }
    }

    /// The device function's name.
    pub fn function_name(&self) -> String {
        let op = if self.inverse { "inv_mod" } else { "gcd" };
        match self.threads {
            1 => format!("bf_{op}_{}", self.words()),
            t => format!("bf_{op}_{}_g{t}", self.words()),
        }
    }

    /// One line for `explain`.
    pub fn describe(&self) -> String {
        format!(
            "{} at {} bits: Pornin's batched binary GCD (31 steps a batch on 64-bit \
             approximations), {} thread(s) per instance, {} 32-bit words of each number a thread{}",
            self.what(),
            self.bits,
            self.threads,
            self.words() / self.threads as usize,
            if self.threads > 1 {
                format!("; about {} registers", self.registers())
            } else {
                String::new()
            }
        )
    }
}

/// The plans of every `limb.gcd` and `limb.inv_mod` in `f` (closures and loops included), one
/// per operation and width.
pub fn plans(f: &Func) -> Vec<GcdPlan> {
    let mut out = Vec::new();
    collect(f, &mut out);
    out
}

fn collect(f: &Func, out: &mut Vec<GcdPlan>) {
    let bits = |v| match f.ty(v) {
        bigfuse_core::Type::Tuple(ls) => 64 * ls.len() as u64,
        _ => 0,
    };
    for n in &f.nodes {
        let plan = match &n.op {
            Op::LimbGcd(a, _) => Some(GcdPlan::new(bits(*a), false)),
            Op::LimbInvMod(a, _) => Some(GcdPlan::new(bits(*a), true)),
            Op::Loop { body, .. } => {
                collect(body, out);
                None
            }
            op => {
                op.lambdas().iter().for_each(|l| collect(l, out));
                None
            }
        };
        if let Some(p) = plan.filter(|p| !out.contains(p)) {
            out.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_from_the_widths_one_thread_cannot_hold() {
        let t = |bits, inverse| GcdPlan::new(bits, inverse).threads;
        assert_eq!(
            [
                t(1024, false),
                t(2048, false),
                t(4096, false),
                t(8192, false)
            ],
            [1, 1, 2, 4]
        );
        assert_eq!(
            [t(1024, true), t(2048, true), t(4096, true), t(8192, true)],
            [1, 2, 4, 8]
        );
        assert_eq!(t(1 << 16, false), 32);
        assert_eq!(t(1 << 17, false), 32, "at most a warp");
        assert_eq!(t(4160, false), 1, "130 words do not split into even halves");
        assert!(GcdPlan::new(256, true).with_threads(4).is_ok());
        assert!(GcdPlan::new(256, true).with_threads(8).is_err());
        assert!(GcdPlan::new(256, true).with_threads(3).is_err());
        assert_eq!(
            GcdPlan::new(4096, true).function_name(),
            "bf_inv_mod_128_g4"
        );
        assert_eq!(GcdPlan::new(2048, false).function_name(), "bf_gcd_64");
        assert!(GcdPlan::new(4096, false)
            .describe()
            .contains("2 thread(s) per instance, 64 32-bit words"));
    }
}

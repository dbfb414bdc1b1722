//! Modular exponentiation modulo an odd big integer: the plan of a `limb.pow_mod`, which
//! `emit` writes as one device function per size (`emit/montgomery.rs`).
//!
//! `big.pow_mod x, e, m` runs in one thread per instance: `per_thread` always takes a program
//! that exponentiates, `scalarize` turns the operation into `limb.pow_mod` on the operands' limbs
//! (inside a closure over array elements too), and emission calls the function planned here. The
//! exponentiation is one heavy operation planned once, as products are: its steps are not IR,
//! because their speed comes from what the IR cannot say (a table indexed at run time in local
//! memory, 32-bit words multiplied into 64-bit accumulators, loops held rolled so that a 2048-bit
//! power compiles in seconds). The host-compiled tests of `emit/montgomery.rs` check the
//! generated C against num-bigint on the CPU.
//!
//! The steps, for an `n`-bit modulus (`s = n / 32` words) and a `k`-bit exponent:
//! 1. `-m^-1 mod 2^32` by Newton's iteration from `m` itself;
//! 2. `R mod m` (`R = 2^n`): `m` shifted up until its top bit is set, `R` minus that, then halved
//!    back down with a conditional subtraction per step (no step for a modulus of full width);
//! 3. `R^2 mod m`, the Montgomery form of `2^n`: squarings and doublings over the bits of `n`;
//! 4. a table of `x^j R mod m` for `j < 2^w` (`w` = [`PowModPlan::window`]);
//! 5. fixed windows of `w` exponent bits from the top: `w` squarings, then a product by the table
//!    entry the window picks (every window, also a zero one: the same steps for every exponent);
//! 6. a product by 1 leaves the Montgomery form.
//!
//! Every product is CIOS (Koç, Acar and Kaliski, 1996): one round per word of the second factor,
//! which is read from local memory, so that the rounds stay a loop; the words of the first factor,
//! the modulus and the accumulator stay in registers. An even or zero modulus has no Montgomery
//! form: the result is all ones then (see [`bigfuse_core::Op::BigPowMod`]). The table lookup
//! depends on the exponent, so this is not constant-time.

use crate::error::{CgResult, CodegenError};
use bigfuse_core::{Func, Op};

/// True when `f` (or a closure or loop inside it) computes an operation that one thread computes
/// whole ([`Op::is_one_thread_op`]: a power modulo a big integer, a gcd, an inverse).
pub fn has_one_thread_op(f: &Func) -> bool {
    f.any_op(&Op::is_one_thread_op)
}

/// Refuses a `pow_mod`, `gcd` or `inv_mod` left among the program's own steps: one thread
/// computes each, so it belongs in a closure, or in a program that `per_thread` turned into one.
pub fn check(func: &Func) -> CgResult<()> {
    if let Some(id) = func.ids().find(|id| func.node(*id).op.is_one_thread_op()) {
        return Err(CodegenError::Unsupported(format!(
            "`{}`: `{}` runs one thread per instance, in programs over whole big integers and \
             scalars; this one also computes over arrays. Compute it in a closure over the \
             arrays' elements (`xs.zip(ys).map(|(x, y)| ..)`) or in a kernel of its own",
            func.name,
            bigfuse_core::node_text(func, id)
        )));
    }
    Ok(())
}

/// The widest modulus (in 32-bit words) whose products one thread computes on paired
/// accumulators (emit/montgomery.rs `paired_rounds`: whole 64-bit word products in carry chains,
/// which the GPU's compiler fuses into wide multiply-adds). Measured on an H100 (512-bit
/// exponents, bench/RESULTS.md 2026-11-25): paired 56.0 M / 16.4 M / 4.08 M powers a second at
/// 256 / 512 / 1024 bits against 43.7 M / 12.5 M / 3.25 M in halves; at 2048 bits the paired
/// form's 135 accumulator words spill (483 K against 772 K).
pub const MAX_WORDS_PAIRED: usize = 32;

/// The widest modulus (in 32-bit words) whose squarings compute each cross product once
/// (emit/montgomery.rs `sqr_function`); wider ones square by products. Measured on an H100
/// (512-bit exponents, bench/RESULTS.md 2026-11-25): 61.7 M powers a second at 256 bits against
/// 56.1 M by products; 16.5 M against 16.4 M at 512 bits; at 1024 bits 2.58 M against 4.09 M: the
/// unrolled rounds hold so many carry chains at once that the GPU's compiler keeps their carries
/// in a register (thousands of bit operations a square, SASS of sm_90).
pub const MAX_WORDS_SQUARED: usize = 8;

/// How the Montgomery products of a power are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProductForm {
    /// One thread, whole word products on paired accumulators, `pairs_per_turn` pairs of rounds
    /// a loop turn. At a loop's end every accumulator word must be back in its register, which
    /// costs moves (45-61 a turn at 1024 bits, against 126 wide multiply-adds, on the same pipe);
    /// more pairs a turn share them among more work. Never the whole loop: unrolled whole, the
    /// rounds' carry chains interleave until the compiler keeps carries in a register. Measured
    /// on an H100 (512-bit exponents, bench/RESULTS.md 2026-11-25): at 1024 bits 4.05 / 4.54 /
    /// 4.99 / 5.11 / 1.70 M powers a second with 1 / 2 / 4 / 8 / 16 pairs a turn (8: twice the
    /// NVRTC time, 4.8 s); at 512 bits 16.3 / 19.9 M with 1 / 4 and 10.9 M whole; at 256 bits
    /// 62.1 M with 1, 59.9 M whole.
    Paired { pairs_per_turn: usize },
    /// One thread, chains of low and of high halves of the word products on one accumulator
    /// (`s + 2` words instead of the paired form's `2 s + 7`), one round a loop turn: for moduli
    /// whose paired accumulators do not fit in registers (2048 bits: 614.8 K with four rounds a
    /// turn against 772.4 K with one).
    Halves,
    /// A group of threads (emit/montgomery_group.rs), each running the one-thread paired rounds
    /// over its words, `pairs_per_turn` pairs of rounds a loop turn; its squares compute each
    /// cross product once. Measured on an H200 (512-bit exponents, bench/RESULTS.md 2026-11-26,
    /// sixth session, squares by products): at 2048 bits in groups of 4, 0.929 / 1.087 / 1.204 /
    /// 1.179 M powers a second with 1 / 2 / 4 / 8 pairs a turn; at 4096 bits in groups of 8,
    /// 233.9 / 276.5 / 307.0 / 310.5 K (8: the compiler starts keeping carries in registers).
    /// With the squares (seventh session): 1.358 M (1.25x CGBN) and 349.4 K (1.23x).
    Group { pairs_per_turn: usize },
}

/// How one thread computes a Montgomery square.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OneThreadSquare {
    /// Rounds unrolled whole, each cross product once (emit/montgomery.rs `sqr_function`), up to
    /// [`MAX_WORDS_SQUARED`].
    Unrolled,
    /// The paired product's rounds with each cross product once, a loop turn a fixed part of the
    /// words (emit/montgomery.rs `paired_square_function`).
    Paired,
    /// As a product (chains of halves).
    Products,
}

/// How one thread computes a Montgomery product of `words` 32-bit words: a power's (up to
/// [`MAX_WORDS_ALONE`], or wider where it does not split into a group), and each product of
/// `big.mul_mod` (up to [`crate::residue::MAX_BITS`]).
pub fn one_thread_form(words: usize) -> ProductForm {
    if words > MAX_WORDS_PAIRED {
        ProductForm::Halves
    } else if words >= 16 {
        ProductForm::Paired { pairs_per_turn: 4 }
    } else {
        ProductForm::Paired { pairs_per_turn: 1 }
    }
}

/// The widest window: its table holds 32 entries (8 KiB per thread at 2048 bits).
pub const MAX_WINDOW: u32 = 5;

/// How one `x^e mod m` is computed at these widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowModPlan {
    /// The modulus' (and base's, and result's) width.
    pub bits: u64,
    /// The exponent's width.
    pub exp_bits: u64,
    /// Exponent bits per window.
    pub window: u32,
    /// Threads that compute one power together (a power of two; see
    /// `emit/montgomery_group.rs`): [`WORDS_PER_THREAD`] 32-bit words each where the words split
    /// so, else one.
    pub threads: u32,
}

/// 32-bit words of each operand that one thread of a group holds: few enough that a thread's
/// registers leave room for many warps, enough that the group's exchanges (three shuffles a
/// round) stay a small part of a round's four carry chains.
pub const WORDS_PER_THREAD: usize = 16;

/// The widest modulus (in 32-bit words) one thread computes alone; wider ones that split into
/// [`WORDS_PER_THREAD`] words a thread go to a group. Measured on an H200 (bench/RESULTS.md,
/// 2026-11-26 sixth session, 512-bit exponents): at 2048 bits one thread 772.9 K powers a second
/// (chains of halves: the paired accumulators do not fit its registers; 255 registers, 8.9 KB
/// local), groups of 2 / 4 on paired accumulators 996.8 K / 1.087 M with two pairs of rounds a
/// loop turn and 1.204 M (4) with four; at 1024 bits one thread's paired form (5.0 M) is ahead of
/// the groups.
pub const MAX_WORDS_ALONE: usize = 32;

impl PowModPlan {
    /// The plan for a `bits`-bit modulus and an `exp_bits`-bit exponent (both multiples of 64).
    pub fn new(bits: u64, exp_bits: u64) -> PowModPlan {
        // The window that needs the fewest products: one per window plus the table's.
        let window = (1..=MAX_WINDOW)
            .min_by_key(|&w| exp_bits.div_ceil(w as u64) + (1u64 << w).saturating_sub(2))
            .unwrap_or(1);
        let words = (bits / 32) as usize;
        let mut threads = 1u32;
        if words > MAX_WORDS_ALONE {
            while threads < 32
                && words / (2 * threads as usize) >= WORDS_PER_THREAD
                && (words / 2).is_multiple_of(2 * threads as usize)
            {
                threads *= 2;
            }
        }
        PowModPlan {
            bits,
            exp_bits,
            window,
            threads,
        }
    }

    /// This plan computed by `threads` threads (which must split the 64-bit limbs evenly).
    pub fn with_threads(self, threads: u32) -> CgResult<PowModPlan> {
        let limbs = self.bits / 64;
        if !threads.is_power_of_two() || threads > 32 || !limbs.is_multiple_of(threads as u64) {
            return Err(CodegenError::Unsupported(format!(
                "x^e mod m at {} bits cannot be split over {threads} threads: a power of two \
                 up to 32 that divides its {limbs} limbs is needed",
                self.bits
            )));
        }
        Ok(PowModPlan { threads, ..self })
    }

    /// How its Montgomery products are computed ([`ProductForm`]).
    pub fn product_form(&self) -> ProductForm {
        if self.threads > 1 {
            ProductForm::Group { pairs_per_turn: 4 }
        } else {
            one_thread_form(self.words())
        }
    }

    /// True when its squarings compute each cross product once: a group's always
    /// (emit/montgomery_group.rs `square`), one thread's unless its products are in halves.
    pub fn squares_once(&self) -> bool {
        self.threads > 1 || self.one_thread_square() != OneThreadSquare::Products
    }

    /// How one thread squares (a group squares as a group).
    pub fn one_thread_square(&self) -> OneThreadSquare {
        if self.words() <= MAX_WORDS_SQUARED {
            OneThreadSquare::Unrolled
        } else if matches!(one_thread_form(self.words()), ProductForm::Paired { .. }) {
            OneThreadSquare::Paired
        } else {
            OneThreadSquare::Products
        }
    }

    /// 32-bit words of the modulus.
    pub fn words(&self) -> usize {
        (self.bits / 32) as usize
    }

    /// 32-bit words of the exponent.
    pub fn exp_words(&self) -> usize {
        (self.exp_bits / 32) as usize
    }

    /// Windows of the exponent, the top one possibly narrower.
    pub fn windows(&self) -> u64 {
        self.exp_bits.div_ceil(self.window as u64)
    }

    /// Montgomery products of one power: the squarings and doublings of `R^2`, the table, the
    /// windows' squarings and products, and leaving the form.
    pub fn products(&self) -> u64 {
        let r2 = 64 - self.bits.leading_zeros() as u64;
        let table = (1u64 << self.window) - 1;
        let windows = self.windows() - 1;
        r2 + table + windows * (self.window as u64 + 1) + 1
    }

    /// About the registers one thread needs: its words of the first factor, the modulus and the
    /// accumulator of a product, and some for indices and carries.
    pub fn registers(&self) -> u32 {
        let words = (self.words() / self.threads as usize) as u32;
        match self.product_form() {
            // The paired accumulators hold 2 words + 7 beside the factor and the modulus.
            ProductForm::Paired { .. } | ProductForm::Group { .. } => 4 * words + 48,
            ProductForm::Halves => 3 * words + 40,
        }
    }

    /// The device function's name.
    pub fn function_name(&self) -> String {
        match self.threads {
            1 => format!("bf_pow_mod_{}_{}", self.bits, self.exp_bits),
            t => format!("bf_pow_mod_{}_{}_g{t}", self.bits, self.exp_bits),
        }
    }

    /// One line for `explain`.
    pub fn describe(&self) -> String {
        let form = match self.product_form() {
            ProductForm::Paired { pairs_per_turn } => format!(
                "whole word products on paired accumulators, {pairs_per_turn} pair(s) of rounds a \
                 loop turn"
            ),
            ProductForm::Halves => "chains of low and high halves on one accumulator".to_string(),
            ProductForm::Group { pairs_per_turn } => format!(
                "whole word products on paired accumulators in each thread, exchanges between \
                 the group's threads, {pairs_per_turn} pair(s) of rounds a loop turn"
            ),
        };
        format!(
            "x^e mod m at {} bits with a {}-bit exponent: {} thread(s) per instance, Montgomery \
             products (CIOS) on {} 32-bit words ({} per thread; {form}), squares {}, fixed \
             windows of {} bits over a table of {} powers in local memory, {} products in all; \
             about {} registers",
            self.bits,
            self.exp_bits,
            self.threads,
            self.words(),
            self.words() / self.threads as usize,
            if self.squares_once() {
                "with each cross product once"
            } else {
                "as products"
            },
            self.window,
            1u64 << self.window,
            self.products(),
            self.registers()
        )
    }
}

/// The plans of every `limb.pow_mod` in `f` (closures and loops included), one per widths.
pub fn plans(f: &Func) -> Vec<PowModPlan> {
    let mut out = Vec::new();
    collect(f, &mut out);
    out
}

fn collect(f: &Func, out: &mut Vec<PowModPlan>) {
    let limbs = |f: &Func, v| match f.ty(v) {
        bigfuse_core::Type::Tuple(ls) => 64 * ls.len() as u64,
        _ => 0,
    };
    for n in &f.nodes {
        match &n.op {
            Op::LimbPowMod(x, e, _) => {
                let p = PowModPlan::new(limbs(f, *x), limbs(f, *e));
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            Op::Loop { body, .. } => collect(body, out),
            op => op.lambdas().iter().for_each(|l| collect(l, out)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_minimise_the_products() {
        assert_eq!(PowModPlan::new(1024, 64).window, 3);
        assert_eq!(PowModPlan::new(1024, 256).window, 4);
        assert_eq!(PowModPlan::new(1024, 512).window, 5);
        assert_eq!(PowModPlan::new(4096, 4096).window, MAX_WINDOW);
        // CGBN's shape: 512 squarings, 102 window products, 31 for the table, R^2's 11, one more.
        let p = PowModPlan::new(1024, 512);
        assert_eq!(p.windows(), 103);
        assert_eq!(p.products(), 11 + 31 + 102 * 6 + 1);
    }

    #[test]
    fn product_forms_follow_the_width() {
        let form = |bits| PowModPlan::new(bits, 512).product_form();
        assert_eq!(form(256), ProductForm::Paired { pairs_per_turn: 1 });
        assert_eq!(form(512), ProductForm::Paired { pairs_per_turn: 4 });
        assert_eq!(form(1024), ProductForm::Paired { pairs_per_turn: 4 });
        assert_eq!(form(2048), ProductForm::Group { pairs_per_turn: 4 });
        assert_eq!(form(1088), ProductForm::Halves);
        assert_eq!(form(4096), ProductForm::Group { pairs_per_turn: 4 });
        assert!(PowModPlan::new(256, 512).squares_once());
        assert!(PowModPlan::new(512, 512).squares_once());
        assert_eq!(
            PowModPlan::new(1024, 512).one_thread_square(),
            OneThreadSquare::Paired
        );
        assert!(
            !PowModPlan::new(2112, 512).squares_once(),
            "66 words: halves, one thread"
        );
        assert!(PowModPlan::new(2048, 512).squares_once());
        assert!(PowModPlan::new(1024, 512)
            .describe()
            .contains("4 pair(s) of rounds"));
    }

    #[test]
    fn groups_from_2048_bits_give_each_thread_sixteen_words() {
        let t = |bits| PowModPlan::new(bits, 512).threads;
        assert_eq!([t(256), t(512), t(1024), t(2048), t(4096)], [1, 1, 1, 4, 8]);
        assert_eq!(t(1088), 1, "34 words do not split into even halves");
        assert_eq!(t(4160), 1, "130 words do not split into even halves");
        assert_eq!(t(1 << 16), 32);
        assert!(PowModPlan::new(256, 64).with_threads(4).is_ok());
        assert!(PowModPlan::new(256, 64).with_threads(8).is_err());
        assert!(PowModPlan::new(256, 64).with_threads(3).is_err());
    }
}

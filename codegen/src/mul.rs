//! Classical multiplication: how a `limb_mul` is cut into work for the threads of an instance, and
//! where its operands and partial results live in shared memory. Pure arithmetic; `emit` writes the
//! CUDA from these numbers, `place` sizes the staging buffer with them.
//!
//! The product is computed on 32-bit digits. Output digits are cut into `slices` slices of `width`
//! consecutive digits; each thread owns two slices, ranked by cost and paired first-with-last, so
//! every thread does the same number of row blocks (the reference paper's fig. 4 balancing). A slice
//! is accumulated row block by row block (`width` digits of `a` against a window of `b`) with
//! multiply-add-with-carry chains into `width + 2` registers: `width` digits of the slice plus two
//! overflow words that belong to the next slice. The slices' low digits (L) and overflow words (O)
//! are then added as two big integers with the carry machinery of addition.

/// How one `limb_mul` is split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MulShape {
    /// 32-bit digits of each operand.
    pub digits_in: u64,
    /// 32-bit digits of the result.
    pub digits_out: u64,
    /// Digits per slice (>= 2, so that a slice's two overflow words fit in the next slice).
    pub width: u64,
    /// Slices of the result (<= 2 * threads).
    pub slices: u64,
    /// Blocks of `width` digits in each (zero-padded) operand.
    pub blocks: u64,
    /// True when the result is the full product (twice the operands' digits).
    pub wide: bool,
    pub threads: u64,
}

/// Digits per slice the schedule aims for: 8 keeps each chain long enough to amortise its loads
/// and the accumulators within registers.
pub const DEFAULT_WIDTH: u32 = 8;
/// A chain's operands must fit one inline-asm statement (at most 30 operands).
pub const MAX_WIDTH: u32 = 12;

/// The split of a product of `in_limbs`-limb operands into `out_limbs` limbs over `threads`
/// threads: the slice width follows from the thread count (the schedule picks the threads from the
/// width it wants, [`threads_for`]).
pub fn shape(in_limbs: u64, out_limbs: u64, threads: u32) -> MulShape {
    let digits_in = 2 * in_limbs;
    let digits_out = 2 * out_limbs;
    let t = threads as u64;
    let width = digits_out.div_ceil(2 * t).clamp(2, MAX_WIDTH as u64);
    let slices = digits_out.div_ceil(width);
    let blocks = digits_in.div_ceil(width);
    MulShape {
        digits_in,
        digits_out,
        width,
        slices,
        blocks,
        wide: digits_out > digits_in,
        threads: t,
    }
}

/// Threads per instance for a product with `out_limbs` limbs so that slices have about `width` digits.
pub fn threads_for(out_limbs: u64, width: u32) -> u32 {
    (2 * out_limbs)
        .div_ceil(2 * width as u64)
        .next_power_of_two()
        .min(1024) as u32
}

impl MulShape {
    /// The slice of cost rank `r` (0 = cheapest). Truncated products: slice r costs r + 1 row
    /// blocks. Full products: costs rise then fall, so ranks alternate between the two ends.
    pub fn slice_of_rank(&self, r: u64) -> u64 {
        if !self.wide {
            r
        } else if r.is_multiple_of(2) {
            r / 2
        } else {
            self.slices - 1 - r / 2
        }
    }

    /// Row blocks `[lo, hi]` that contribute to slice `s` (empty when lo > hi).
    pub fn rows(&self, s: u64) -> (i64, i64) {
        let lo = (s as i64 - self.blocks as i64).max(0);
        let hi = (s as i64).min(self.blocks as i64 - 1);
        (lo, hi)
    }

    pub fn cost(&self, s: u64) -> u64 {
        let (lo, hi) = self.rows(s);
        (hi - lo + 1).max(0) as u64
    }

    /// The slices thread `t` computes: ranks `t` and `slices - 1 - t`.
    pub fn slices_of(&self, t: u64) -> Vec<u64> {
        let (r1, r2) = (t, self.slices as i64 - 1 - t as i64);
        if (r1 as i64) < r2 {
            vec![self.slice_of_rank(r1), self.slice_of_rank(r2 as u64)]
        } else if r1 as i64 == r2 {
            vec![self.slice_of_rank(r1)]
        } else {
            vec![]
        }
    }

    /// Physical index of logical digit `j` of a skewed operand buffer: one padding word after each
    /// `width` digits, so that threads reading windows `width` apart hit different banks.
    pub fn skew_ab(&self, j: u64) -> u64 {
        j + j / self.width
    }

    /// Physical index of digit `j` of the L and O buffers: one padding word per 32, so that threads
    /// reading consecutive runs of digits hit different banks.
    pub fn skew_lo(j: u64) -> u64 {
        j + (j >> 5)
    }
}

/// Squaring (truncated products of an operand with itself): each cross product a_i a_j (i < j) is
/// computed once and the slice doubled, then the squares a_i^2 are added. Row block `r` of slice
/// `g` holds only pairs with i < j when 2r <= g - 2 (a full block), only pairs with i > j when
/// 2r >= g + 2 (skipped), and both when 2r - g is -1, 0 or 1: those blocks keep the products with
/// `k - 2 ii > (2r - g) width` ([`square_keeps`]).
pub fn square_full_blocks(g: u64) -> u64 {
    g / 2
}

/// The partial blocks of slice `g`: `(r, 2r - g)`.
pub fn square_partial_blocks(g: u64) -> Vec<(u64, i64)> {
    if g.is_multiple_of(2) {
        vec![(g / 2, 0)]
    } else {
        vec![((g - 1) / 2, -1), (g.div_ceil(2), 1)]
    }
}

/// Whether a partial block with `2r - g = d` keeps the product of row `ii` and column `k`.
pub fn square_keeps(d: i64, ii: u64, k: u64, width: u64) -> bool {
    k as i64 - 2 * ii as i64 > d * width as i64
}

/// Word offsets (32-bit) of one instance's buffers inside its staging region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MulLayout {
    pub a: u64,
    /// Start of `b`'s buffer, which holds `width` zero digits before digit 0 and after the last.
    pub b: u64,
    pub l: u64,
    pub o: u64,
    /// Words per instance (a multiple of 4, so that every instance's region is 16-byte aligned).
    pub stride: u64,
    /// Where the carry flags of the final addition go (after all instances' regions), in words.
    pub flags: u64,
    /// Total words for the block.
    pub total: u64,
}

pub fn layout(shape: &MulShape, instances_per_block: u64, warps_per_instance: u64) -> MulLayout {
    let a_words = shape.skew_ab(shape.blocks * shape.width) + 1;
    let b_words = shape.skew_ab((shape.blocks + 2) * shape.width) + 1;
    let lo_words = MulShape::skew_lo(shape.slices * shape.width) + 2;
    // The operands are dead once the slices are computed, so L and O reuse their space.
    let stride = (a_words + b_words).max(2 * lo_words).div_ceil(4) * 4;
    let flags = stride * instances_per_block;
    let flag_words = if warps_per_instance > 1 {
        instances_per_block * warps_per_instance
    } else {
        0
    };
    MulLayout {
        a: 0,
        b: a_words,
        l: 0,
        o: lo_words,
        stride,
        flags,
        total: (flags + flag_words).div_ceil(4) * 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slice_is_owned_once_and_work_is_balanced() {
        for (inl, outl) in [
            (4u64, 4u64),
            (32, 32),
            (3, 3),
            (47, 47),
            (32, 64),
            (1, 1),
            (1, 2),
            (4096, 4096),
            (2048, 4096),
        ] {
            for threads in [1u32, 2, 4, 8, 64, 512] {
                let s = shape(inl, outl, threads);
                assert!(s.slices * s.width >= s.digits_out);
                assert!(
                    s.slices <= 2 * threads as u64 || s.width == MAX_WIDTH as u64,
                    "{s:?}"
                );
                if s.slices > 2 * threads as u64 {
                    continue; // the schedule never picks this: it raises the thread count first
                }
                let mut owner = vec![0; s.slices as usize];
                let mut loads = Vec::new();
                for t in 0..threads as u64 {
                    let mine = s.slices_of(t);
                    // A thread with the single middle slice of an odd count has less to do.
                    if mine.len() == 2 {
                        loads.push(mine.iter().map(|x| s.cost(*x)).sum::<u64>());
                    }
                    for x in mine {
                        owner[x as usize] += 1;
                    }
                }
                assert!(owner.iter().all(|&c| c == 1), "{s:?} {owner:?}");
                let busy: Vec<u64> = loads.into_iter().filter(|&l| l > 0).collect();
                if busy.is_empty() {
                    continue;
                }
                let (min, max) = (busy.iter().min().unwrap(), busy.iter().max().unwrap());
                assert!(max - min <= 2, "{s:?}: loads from {min} to {max}");
            }
        }
    }

    #[test]
    fn squaring_counts_every_cross_product_once_and_no_square() {
        for (limbs, threads) in [(4u64, 1u32), (32, 4), (64, 8), (47, 4), (128, 16)] {
            let s = shape(limbs, limbs, threads);
            if s.width % 2 == 1 {
                continue; // squaring needs an even width (the emitter falls back otherwise)
            }
            let w = s.width;
            for g in 0..s.slices {
                // count[(i, j)] = how often the ordered product a_i a_j is accumulated for slice g
                let mut count = std::collections::HashMap::new();
                let mut add_block = |r: u64, keep: &dyn Fn(u64, u64) -> bool| {
                    for ii in 0..w {
                        for k in 0..w {
                            if !keep(ii, k) {
                                continue;
                            }
                            let (i, c) = ((r * w + ii) as i64, (g * w + k) as i64);
                            let j = c - i;
                            if j >= 0 {
                                *count.entry((i, j)).or_insert(0) += 1;
                            }
                        }
                    }
                };
                for r in 0..square_full_blocks(g) {
                    add_block(r, &|_, _| true);
                }
                for (r, d) in square_partial_blocks(g) {
                    add_block(r, &|ii, k| square_keeps(d, ii, k, w));
                }
                for c in g * w..(g + 1) * w {
                    for i in 0..=c as i64 {
                        let j = c as i64 - i;
                        let n = count.get(&(i, j)).copied().unwrap_or(0)
                            + if i != j {
                                count.get(&(j, i)).copied().unwrap_or(0)
                            } else {
                                0
                            };
                        let want = if i == j { 0 } else { 1 };
                        if i <= j {
                            assert_eq!(n, want, "{s:?} slice {g} column {c}: pair ({i}, {j})");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn row_blocks_cover_exactly_the_products_of_a_slice() {
        let s = shape(6, 12, 2);
        for slice in 0..s.slices {
            let (lo, hi) = s.rows(slice);
            for i in 0..s.digits_in {
                for c in slice * s.width..(slice + 1) * s.width {
                    let j = c as i64 - i as i64;
                    if j >= 0 && (j as u64) < s.digits_in {
                        let r = (i / s.width) as i64;
                        assert!(
                            lo <= r && r <= hi,
                            "slice {slice}: a{i} b{j} in block {r} outside {lo}..={hi}"
                        );
                    }
                }
            }
        }
    }
}

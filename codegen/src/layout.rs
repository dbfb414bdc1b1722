//! How kernel parameters and results lie in global memory: the one definition that emission, the
//! split planner and the runtime's buffers all follow.
//!
//! Instance `i` of a buffer occupies units `[i * U, (i + 1) * U)`, where U is the number of
//! 64-bit limbs of a big integer (element after element for an array of them), the number of
//! elements of an array of scalars, or 1 for a scalar. A unit is as wide as the value it holds:
//! 8 bytes for limbs, `u64` and residues, 4 for `u32`, 1 for `bool` (0 or 1) — so a batch of
//! `u32` or `bool` moves at its own width over PCIe and through device memory.

use crate::error::{CgResult, CodegenError};
use bigfuse_core::{Func, Type};

/// The width of one unit of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// A 64-bit word: a limb, a `u64`, a residue, or a leaf of an interleaved tuple.
    U64,
    U32,
    /// A `bool` as one byte, 0 or 1.
    Bool,
}

impl Unit {
    pub fn bytes(self) -> u64 {
        match self {
            Unit::U64 => 8,
            Unit::U32 => 4,
            Unit::Bool => 1,
        }
    }

    /// The C type of a unit in the kernel's signature.
    pub fn ctype(self) -> &'static str {
        match self {
            Unit::U64 => "u64",
            Unit::U32 => "u32",
            Unit::Bool => "unsigned char",
        }
    }

    /// The unit of a buffer of values whose scalar leaves are `leaf`.
    fn of_leaf(leaf: &Type) -> Unit {
        match leaf {
            Type::U32 => Unit::U32,
            Type::Bool => Unit::Bool,
            _ => Unit::U64,
        }
    }
}

/// How a parameter or result is laid out per instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferLayout {
    pub name: String,
    pub ty: Type,
    /// Units per instance.
    pub units: u64,
    pub unit: Unit,
}

impl BufferLayout {
    /// Bytes per instance.
    pub fn bytes(&self) -> u64 {
        self.units * self.unit.bytes()
    }
}

/// The layout of a buffer holding values of type `ty` (sizes already constant); `name` is for
/// the error when the type cannot cross the kernel boundary.
pub fn layout_of(name: &str, ty: &Type) -> CgResult<BufferLayout> {
    let size = |s: &bigfuse_core::Size| s.as_const().unwrap_or(0);
    let (units, unit) = match ty {
        Type::Big(s) => (size(s) / 64, Unit::U64),
        Type::Array(e, n) if e.is_scalar() => (size(n), Unit::of_leaf(e)),
        // Arrays of big integers: element after element, each its limbs.
        Type::Array(e, n) if matches!(**e, Type::Big(_)) => {
            let Type::Big(s) = &**e else { unreachable!() };
            (size(n) * (size(s) / 64), Unit::U64)
        }
        // Arrays of tuples of scalars (big integers as limb tuples, after lowering): interleaved
        // 64-bit words.
        Type::Array(e, n) if e.leaves().iter().all(Type::is_scalar) => {
            (size(n) * e.leaf_count() as u64, Unit::U64)
        }
        t if t.is_scalar() => (1, Unit::of_leaf(t)),
        other => {
            return Err(CodegenError::Unsupported(format!(
                "`{name}` has type {other}: kernel parameters and results are big integers, scalars or arrays of scalars"
            )))
        }
    };
    Ok(BufferLayout {
        name: name.to_string(),
        ty: ty.clone(),
        units,
        unit,
    })
}

/// The layouts of a function's parameters and results; fails when one cannot cross the kernel
/// boundary.
pub fn buffer_layouts(func: &Func) -> CgResult<(Vec<BufferLayout>, Vec<BufferLayout>)> {
    let inputs = func
        .params
        .iter()
        .map(|p| layout_of(&p.name, &p.ty))
        .collect::<CgResult<_>>()?;
    let outputs = func
        .outputs
        .iter()
        .enumerate()
        .map(|(k, o)| layout_of(&format!("result {k}"), func.ty(*o)))
        .collect::<CgResult<_>>()?;
    Ok((inputs, outputs))
}

/// The global scratch of a kernel's launch. The runtime gives each launch its own, with the
/// cleared part zeroed before the kernel starts.
///
/// Look-back records, where instances span several blocks: the blocks of an instance pass each
/// scan's prefix on through them (decoupled look-back, `emit/lookback.rs`). Per (scan, block),
/// `2 * leaves` records of 16 bytes, each a value and a flag (non-zero once written), written and
/// read whole: first the leaves of the block's own aggregate, then those of its inclusive prefix.
/// A record is never rewritten in a launch, so a reader that sees its flag has its value, with no
/// fence between them. Cleared.
///
/// Staging slots, where NTT products stage operands that the kernel would hold in registers
/// across the transforms' calls (`emit::staging`), once per product: `staged_words` 64-bit words a
/// slot. A launch has [`Self::slots`] of them, as many as its blocks that run at once, not one a
/// block, so that the scratch stays small however large the batch. A block claims a free slot
/// when it starts and frees it when it ends, through one 32-bit flag a slot (0: free; the flags
/// are cleared, padded to 16 bytes); the slots' words follow the flags and are not cleared.
/// Claiming never waits on anything but a running block's end, so any number of slots is
/// correct; fewer than the resident blocks would only make blocks wait.
///
/// In order: records (none where `scans` is 0), flags, slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scratch {
    /// Scans (carry scans included) and reductions that resolve across blocks, in node order.
    pub scans: u32,
    /// 64-bit words of the widest scan's value.
    pub leaves: u32,
    /// 64-bit words a staging slot (a block's) holds; 0 where the kernel stages nothing.
    pub staged_words: u64,
}

impl Scratch {
    /// Records per (scan, block).
    pub fn records(&self) -> u64 {
        2 * self.leaves as u64
    }

    /// Bytes of a launch's look-back records, for `grid` blocks.
    pub fn record_bytes(&self, grid: u64) -> u64 {
        16 * self.records() * self.scans as u64 * grid
    }

    /// Staging slots of a launch of `grid` blocks of which at most `resident` run at once.
    pub fn slots(&self, grid: u64, resident: u64) -> u64 {
        if self.staged_words == 0 {
            0
        } else {
            grid.min(resident).max(1)
        }
    }

    /// Bytes of the flags of `slots` staging slots (padded so that the words after them align).
    pub fn flag_bytes(slots: u64) -> u64 {
        (4 * slots).next_multiple_of(16)
    }

    /// Bytes the runtime clears before a launch of `grid` blocks with `slots` staging slots.
    pub fn cleared_bytes(&self, grid: u64, slots: u64) -> u64 {
        self.record_bytes(grid) + Self::flag_bytes(slots)
    }

    /// Bytes of scratch for a launch of `grid` blocks with `slots` staging slots.
    pub fn bytes(&self, grid: u64, slots: u64) -> u64 {
        self.cleared_bytes(grid, slots) + 8 * self.staged_words * slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigfuse_core::Size;

    /// Each (scan, block) has an aggregate and an inclusive record per leaf, 16 bytes each.
    #[test]
    fn scratch_holds_two_records_per_leaf_scan_and_block() {
        let s = Scratch {
            scans: 6,
            leaves: 1,
            staged_words: 0,
        };
        assert_eq!((s.records(), s.bytes(37, 0)), (2, 16 * 2 * 6 * 37));
        assert_eq!(s.slots(37, 8), 0);
        let s = Scratch {
            scans: 1,
            leaves: 3,
            staged_words: 0,
        };
        assert_eq!(s.bytes(513, 0), 16 * 6 * 513);
    }

    #[test]
    fn staging_slots_are_the_resident_blocks_not_the_grid() {
        let s = Scratch {
            scans: 0,
            leaves: 0,
            staged_words: 4096,
        };
        assert_eq!(s.slots(1_000_000, 264), 264);
        assert_eq!(s.slots(5, 264), 5);
        assert_eq!(s.slots(5, 0), 1);
        // 264 flags (1,056 bytes, already a multiple of 16), then 264 slots of 32 KiB.
        assert_eq!(s.cleared_bytes(1_000_000, 264), 1056);
        assert_eq!(s.bytes(1_000_000, 264), 1056 + 264 * 4096 * 8);
        // 5 flags pad to 32 bytes so that the slots' words start aligned.
        assert_eq!(s.cleared_bytes(5, 5), 32);
    }

    #[test]
    fn units_follow_the_values() {
        let l = layout_of("a", &Type::Big(Size::lit(4096))).unwrap();
        assert_eq!((l.units, l.unit, l.bytes()), (64, Unit::U64, 512));
        let l = layout_of("f", &Type::Bool).unwrap();
        assert_eq!((l.units, l.unit, l.bytes()), (1, Unit::Bool, 1));
        let l = layout_of("x", &Type::array(Type::U32, Size::lit(10))).unwrap();
        assert_eq!((l.units, l.unit, l.bytes()), (10, Unit::U32, 40));
        let l = layout_of("y", &Type::array(Type::Big(Size::lit(192)), Size::lit(5))).unwrap();
        assert_eq!((l.units, l.unit), (15, Unit::U64));
        let t = Type::Tuple(vec![Type::U64, Type::U64]);
        assert!(layout_of("t", &t).is_err());
    }
}

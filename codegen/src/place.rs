//! Placement: each logical array goes to registers unless another thread reads it; cross-thread
//! steps (the block-level part of a scan or reduction) get short-lived shared staging buffers,
//! which are reused by liveness.

use crate::error::{CgResult, CodegenError};
use crate::isel::Selection;
use crate::schedule::Schedule;
use crate::target::Target;
use bigfuse_core::{Func, Op, Type, ValueId};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// Stays where it is in global memory (big-integer parameters, loaded by `limbs`).
    Global,
    /// Each thread keeps its own `q` elements in registers.
    Registers { q: u32 },
    /// One value per instance, held by every thread of the instance.
    Scalar,
}

/// A shared staging buffer of one scan or reduction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staging {
    pub node: ValueId,
    pub offset: u32,
    pub bytes: u32,
    /// Which buffer (colour) it shares with other staging uses.
    pub buffer: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub places: Vec<Place>,
    pub staging: Vec<Staging>,
    /// The warps' transposition buffers (see [`coalesced_vectors`]), after the staging buffers.
    pub transpose: Option<Transpose>,
    /// Where one-thread maps park the words that live across their products ([`Parking`]),
    /// after the transposition buffers.
    pub parks: Vec<Park>,
    pub shared_bytes: u32,
    pub notes: Vec<String>,
}

impl Placement {
    pub fn staging_of(&self, node: ValueId) -> Option<&Staging> {
        self.staging.iter().find(|s| s.node == node)
    }

    pub fn park_of(&self, node: ValueId) -> Option<&Park> {
        self.parks.iter().find(|p| p.node == node)
    }
}

/// The words a one-thread map's body parks in shared memory ([`Parking`]), each thread its
/// own: slot `k` of element `q` of thread `x` at `offset + 8 ((q S + k) block_threads + x)`, `S`
/// the slots of an element, so that a warp's reads of one slot are 256 consecutive bytes (no bank
/// conflicts) and no thread reads another's (no barrier).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Park {
    /// The map.
    pub node: ValueId,
    pub offset: u32,
    /// Elements per thread.
    pub q: u32,
    /// Which words are parked and which steps read them there.
    pub plan: Parking,
}

impl Park {
    /// Slots of an element: its parked words.
    pub fn slot_count(&self) -> u32 {
        self.plan.slots.len() as u32
    }
}

/// Whether a step of a one-thread body is a product or another device function of its own
/// registers: what values live across it compete with.
fn product_step(op: &Op) -> bool {
    matches!(op, Op::LimbMulWords(..) | Op::LimbMulAddWords(..)) || op.is_one_thread_op()
}

/// What a one-thread map's body reads from shared memory: the words of its parameters (big
/// integers' limbs) that a step reads with a product step between the body's start and it. The
/// kernel parks them where it loads them; the other steps read the registers. Held instead, they
/// are what such kernels spill (Poly at 2^10 / 2^11 bits: 320 / 856 bytes a thread). Read again
/// from global memory, they cost more than the spills (Poly at 2^10: 550 K Gu32ops/s against 715
/// K held; each thread's words lie 128 bytes from its neighbour's, so every warp-wide load touched
/// 32 sectors); parked, Poly ran at 852-873 K without spills (H200, bench/RESULTS.md 2026-11-27,
/// sixteenth session). Computed values that live across a product are not parked: parking `a^2`
/// across `b^2` too took Poly at 2^11 bits from 72 to 88 bytes of spills (ptxas, NVRTC 13.0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parking {
    /// The parked leaves in slot order.
    pub slots: Vec<(usize, usize)>,
    /// Where each leaf of each node comes from: tuples and extracts pass leaves on.
    origin: Vec<Vec<(usize, usize)>>,
    /// Product steps before each node, and whether it is one.
    products_before: Vec<usize>,
    product: Vec<bool>,
}

impl Parking {
    /// The plan for body `f`, whose parameters `parkable` are the kernel's parameters' words.
    pub fn of(f: &Func, parkable: &[bool]) -> Parking {
        let mut p = Parking {
            slots: Vec::new(),
            origin: Vec::with_capacity(f.nodes.len()),
            products_before: Vec::with_capacity(f.nodes.len()),
            product: Vec::with_capacity(f.nodes.len()),
        };
        let mut products = 0;
        for (k, n) in f.nodes.iter().enumerate() {
            p.products_before.push(products);
            p.product.push(product_step(&n.op));
            let from = match &n.op {
                Op::Tuple(xs) => xs
                    .iter()
                    .flat_map(|x| p.origin[x.index()].clone())
                    .collect(),
                Op::Extract(t, i) => p.origin[t.index()][f.ty(*t).field_leaves(*i)].to_vec(),
                _ => {
                    for a in n.op.args() {
                        for &(o, leaf) in &p.origin[a.index()] {
                            let parkable = match f.nodes[o].op {
                                Op::Param(i) => parkable.get(i as usize) == Some(&true),
                                _ => false,
                            };
                            if parkable && p.crosses(o, k) {
                                p.slots.push((o, leaf));
                            }
                        }
                    }
                    (0..n.ty.leaf_count()).map(|leaf| (k, leaf)).collect()
                }
            };
            p.origin.push(from);
            products += usize::from(p.product[k]);
        }
        p.slots.sort_unstable();
        p.slots.dedup();
        p
    }

    /// Whether a product step lies between node `o` (a product's result comes after it) and
    /// step `k`.
    fn crosses(&self, o: usize, k: usize) -> bool {
        self.products_before[k] > self.products_before[o] + usize::from(self.product[o])
    }

    /// The slot that step `k` reads leaf `leaf` of its argument `a` from, if parked there.
    pub fn read(&self, k: usize, a: usize, leaf: usize) -> Option<usize> {
        let (o, l) = self.origin[a][leaf];
        if !self.crosses(o, k) {
            return None;
        }
        self.slots.binary_search(&(o, l)).ok()
    }

    /// The slots that body parameter `i`'s leaves are parked in, as `(leaf, slot)`.
    pub fn stores(&self, f: &Func, i: u32) -> Vec<(usize, usize)> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, (o, _))| matches!(f.nodes[*o].op, Op::Param(j) if j == i))
            .map(|(slot, (_, leaf))| (*leaf, slot))
            .collect()
    }
}

/// The maps whose bodies read parked words ([`Parking`]) in a kernel that parks them
/// ([`crate::schedule::Schedule::park_values`]), with their plans and elements per thread.
fn parked_maps(func: &Func, sched: &Schedule) -> Vec<(ValueId, Parking, u32)> {
    if !sched.park_values {
        return vec![];
    }
    func.ids()
        .filter_map(|id| match (&func.node(id).op, func.ty(id)) {
            (Op::Map { f, args }, Type::Array(_, len)) => {
                let plan = Parking::of(f, &parkable_args(func, sched, args));
                let q = sched.q_of(len.as_const().unwrap_or(0));
                (!plan.slots.is_empty()).then_some((id, plan, q))
            }
            _ => None,
        })
        .collect()
}

/// Which arguments of a map are parameters of the kernel whose elements are tuples of words: the
/// arrays it loads element by element (`emit::memory`), and so may park where it loads them.
/// Those read where they lie ([`read_in_place`]) are not loaded.
fn parkable_args(func: &Func, sched: &Schedule, args: &[ValueId]) -> Vec<bool> {
    args.iter()
        .map(|&a| {
            matches!(func.node(a).op, Op::Param(_))
                && matches!(func.ty(a), Type::Array(e, _)
                    if e.leaf_count() > 1 && e.leaves().iter().all(|l| *l == Type::U64))
                && !read_in_place(func, sched, a)
        })
        .collect()
}

/// Whether kernel parameter `id`, one big integer per instance as a tuple of words, is only ever
/// an operand, in the maps that read it, of operations whose device functions read their words
/// where they lie in global memory, so that no register holds them:
///
/// - divisions wider than [`crate::divide::MAX_REGISTER_DIVISOR_BITS`] in a kernel of one thread
///   per instance (`emit::divide`): a thread holds a 4096-bit operand in 128 of its 255
///   registers, so the kernel of `a / b` spilled both operands to local memory, then copied them
///   into the function's arrays there (4,144 bytes of local memory a thread); and square roots
///   there (`emit::isqrt`), whose function copies the value into its own array anyway. A
///   root's parameter may also be part of its operand, its words gathered with others (`(a <<
///   BITS) | b`, the wide root's operand: a loop copies each run of words into the function's
///   array; held in registers, the 2,048 words at 65536 bits took NVRTC 143 s);
/// - gcds and inverses computed by a group of threads per instance (`emit::gcd_group`): each
///   thread reads its own words, where the group's first thread held the whole number (in local
///   memory: 8 KB of each operand at 65536 bits) and passed the others theirs by shuffles, and
///   the kernel's code grew with the width (NVRTC took 144 s at 65536 bits).
pub fn read_in_place(func: &Func, sched: &Schedule, id: ValueId) -> bool {
    let Type::Array(e, n) = func.ty(id) else {
        return false;
    };
    let words = e.leaf_count() as u64;
    let one_each = n.as_const() == Some(1) && e.leaves().iter().all(|l| *l == Type::U64);
    let divided =
        sched.threads_per_instance == 1 && 64 * words > crate::divide::MAX_REGISTER_DIVISOR_BITS;
    let grouped = sched.group_threads > 1 && sched.threads_per_instance == sched.group_threads;
    // Gathered words only into roots: a root's time dwarfs the copy of its operand, and the
    // division of the wide shape at 4096 bits (`(a:b) / d`) ran 4% slower with `a`'s words copied by a loop
    // than loaded in 16-byte words (0.0663 against 0.0692 G/s on an H200, bench/RESULTS.md
    // twenty-fifth session).
    let gathered: fn(&Op) -> bool = |op| matches!(op, Op::LimbIsqrt(..));
    let by: fn(&Op) -> bool = if divided {
        |op| matches!(op, Op::LimbDivRem(..) | Op::LimbIsqrt(..))
    } else if grouped {
        |op| matches!(op, Op::LimbGcd(..) | Op::LimbInvMod(..))
    } else {
        return false;
    };
    let mut users = func
        .ids()
        .filter(|&u| func.node(u).op.args().contains(&id))
        .peekable();
    sched.blocks_per_instance == 1
        && matches!(func.node(id).op, Op::Param(_))
        && one_each
        && !func.outputs.contains(&id)
        && users.peek().is_some()
        && users.all(|u| match &func.node(u).op {
            Op::Map { f, args } => args
                .iter()
                .enumerate()
                .filter(|(_, &a)| a == id)
                .all(|(i, _)| only_operand_of(f, i as u32, by, gathered)),
            _ => false,
        })
}

/// A map's operation that writes a result of the kernel where it goes ([`written_in_place`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// The kernel's result.
    pub result: usize,
    /// The operation's node in the map's body.
    pub node: ValueId,
    /// Where the map's elements are tuples: the field that is the result, taken out by a map of
    /// its own ([`extracted_in_place`]); the map's other fields are computed as usual.
    pub field: Option<usize>,
}

/// Where map `id`'s body ends in an operation whose device function writes a result of the
/// kernel where it goes, where it would write to a local array that the kernel reads back into
/// registers and stores:
///
/// - in a kernel of one thread per instance, one part of a division wider than
///   [`crate::divide::MAX_REGISTER_DIVISOR_BITS`] (a quotient alone, or a remainder alone), the
///   map being the result: 1 KB of local memory traffic a 4096-bit quotient (`emit::divide`;
///   the warp writes one-word quotients, word and zeros, side by side); a square root there, the
///   map being the result, or its low words the result (the root of a `2 BITS`-bit number cast
///   back to `BITS`; the function writes as many) (`emit::isqrt`: the kernel's copy out of the
///   function's array was as long as the number, 488 KB of CUDA at 262144 bits);
/// - a gcd computed by a group of threads per instance, the map being the result, or an
///   inverse's number, a field of the map's tuples that a map of its own takes out as the
///   result: each thread writes its own words (`emit::gcd_group`), where the group's first
///   thread took the whole number and stored it (at 65536 bits, 45 s of NVRTC a kernel).
pub fn written_in_place(func: &Func, sched: &Schedule, id: ValueId) -> Option<Written> {
    let Op::Map { f, .. } = &func.node(id).op else {
        return None;
    };
    let [out] = f.outputs[..] else { return None };
    let grouped = sched.group_threads > 1 && sched.threads_per_instance == sched.group_threads;
    let shaped = sched.blocks_per_instance == 1
        && matches!(func.ty(id), Type::Array(_, n) if n.as_const() == Some(1));
    if !shaped {
        return None;
    }
    let wide =
        |a: ValueId| 64 * f.ty(a).leaf_count() as u64 > crate::divide::MAX_REGISTER_DIVISOR_BITS;
    let written = |node: ValueId| -> Option<ValueId> {
        if let Some(d) = root_cast_narrower(f, node) {
            let Op::LimbIsqrt(a) = f.node(d).op else {
                unreachable!("root_cast_narrower finds roots")
            };
            return (sched.threads_per_instance == 1 && users(f, node).is_empty() && wide(a))
                .then_some(d);
        }
        match f.node(node).op {
            Op::Extract(d, part) if sched.threads_per_instance == 1 => {
                let Op::LimbDivRem(_, b) = f.node(d).op else {
                    return None;
                };
                let parts = crate::divide::Parts::read_in(f, d);
                let alone = match part {
                    0 => !parts.remainder,
                    _ => !parts.quotient,
                };
                (alone
                    && 64 * f.ty(b).leaf_count() as u64 > crate::divide::MAX_REGISTER_DIVISOR_BITS)
                    .then_some(d)
            }
            Op::LimbGcd(..) if grouped && users(f, node).is_empty() => Some(node),
            Op::LimbIsqrt(a)
                if sched.threads_per_instance == 1 && users(f, node).is_empty() && wide(a) =>
            {
                Some(node)
            }
            Op::Extract(inv, 0)
                if grouped
                    && matches!(f.node(inv).op, Op::LimbInvMod(..))
                    && users(f, inv).iter().all(|&u| {
                        u == node || matches!(f.node(u).op, Op::Extract(_, i) if i != 0)
                    }) =>
            {
                Some(inv)
            }
            _ => None,
        }
    };
    if let Some(k) = sole_result(func, id) {
        return Some(Written {
            result: k,
            node: written(out)?,
            field: None,
        });
    }
    // A tuple's field that a map of its own takes out as the result, the map's other users
    // taking out other fields.
    let Op::Tuple(fields) = &f.node(out).op else {
        return None;
    };
    let (field, node) = fields.iter().enumerate().find_map(|(i, &x)| {
        let d = written(x)?;
        // The field's leaves read as zeros in the body: no other field may be that value.
        let once = fields.iter().filter(|&&y| y == x).count() == 1;
        (matches!(f.node(d).op, Op::LimbInvMod(..)) && users(f, x) == [out] && once)
            .then_some((i, d))
    })?;
    let mut taken = None;
    for u in users(func, id) {
        match taken_field(func, u) {
            Some(i) if i == field && taken.is_none() => taken = Some(u),
            Some(i) if i != field => {}
            _ => return None,
        }
    }
    Some(Written {
        result: sole_result(func, taken?)?,
        node,
        field: Some(field),
    })
}

/// Where `node` is a root's low words in order, each taken once and the root read by nothing
/// else (the wide root `(a:b).isqrt()` cast back to `BITS`): the root, whose function writes
/// those words alone.
fn root_cast_narrower(f: &Func, node: ValueId) -> Option<ValueId> {
    let Op::Tuple(fields) = &f.node(node).op else {
        return None;
    };
    let Op::Extract(d, 0) = f.node(*fields.first()?).op else {
        return None;
    };
    let low = fields
        .iter()
        .enumerate()
        .all(|(j, &x)| f.node(x).op == Op::Extract(d, j as u32) && users(f, x) == [node]);
    (matches!(f.node(d).op, Op::LimbIsqrt(_)) && low && users(f, d).len() == fields.len())
        .then_some(d)
}

/// Whether map `id` only takes out a field of its argument's tuples that the argument's map
/// writes where the kernel's result goes ([`written_in_place`]): then it computes nothing.
pub fn extracted_in_place(func: &Func, sched: &Schedule, id: ValueId) -> bool {
    let Op::Map { args, .. } = &func.node(id).op else {
        return false;
    };
    let [src] = args[..] else { return false };
    written_in_place(func, sched, src).is_some_and(|w| {
        w.field.is_some()
            && taken_field(func, id) == w.field
            && sole_result(func, id) == Some(w.result)
    })
}

/// The nodes of `f` that use `x`.
fn users(f: &Func, x: ValueId) -> Vec<ValueId> {
    f.ids()
        .filter(|&u| f.node(u).op.args().contains(&x))
        .collect()
}

/// The one result of the kernel that node `id` is, where it is one and read by no other node.
fn sole_result(func: &Func, id: ValueId) -> Option<usize> {
    let results: Vec<usize> = (0..func.outputs.len())
        .filter(|&k| func.outputs[k] == id)
        .collect();
    match results[..] {
        [k] if users(func, id).is_empty() => Some(k),
        _ => None,
    }
}

/// Where `id` is a map over one array whose body only takes out a field of its element: that
/// field.
fn taken_field(func: &Func, id: ValueId) -> Option<usize> {
    let Op::Map { f, args } = &func.node(id).op else {
        return None;
    };
    let [out] = f.outputs[..] else { return None };
    match f.node(out).op {
        Op::Extract(p, i) if args.len() == 1 && f.node(p).op == Op::Param(0) => Some(i as usize),
        _ => None,
    }
}

/// Whether body `f`'s parameter `i` is used, and only as an operand of operations `by` accepts:
/// whole, or, into those `gathered` accepts too, as words gathered into one (tuples of its
/// words, as scalarize writes `(a << BITS) | b`: `b`'s words, then `a`'s), which the operand's
/// array reads where they lie (`emit::scalar`'s `operand_arrays`).
fn only_operand_of(f: &Func, i: u32, by: fn(&Op) -> bool, gathered: fn(&Op) -> bool) -> bool {
    let Some(p) = f.ids().find(|&x| f.node(x).op == Op::Param(i)) else {
        return false;
    };
    // Used, by none of the body's results, and each use accepted.
    let only = |x: ValueId, ok: &dyn Fn(ValueId) -> bool| {
        let used = users(f, x);
        !f.outputs.contains(&x) && !used.is_empty() && used.into_iter().all(ok)
    };
    let operand = |u: ValueId| by(&f.node(u).op);
    let into = |u: ValueId| operand(u) && gathered(&f.node(u).op);
    let gathered_into = |t: ValueId| matches!(f.node(t).op, Op::Tuple(_)) && only(t, &into);
    only(p, &|u| {
        operand(u)
            || (matches!(f.node(u).op, Op::Extract(x, _) if x == p) && only(u, &gathered_into))
    })
}

/// Where the warps' transposition buffers lie: one per warp of the block, each of `32 * vectors`
/// 16-byte vectors. Every coalesced access of the kernel uses its warp's whole buffer at this
/// stride, whatever its own vectors per thread: with strides of their own, the buffers of two
/// warps at different accesses would overlap, and warps synchronise only within themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transpose {
    pub offset: u32,
    pub vectors: u32,
}

/// The widest tuple (64-bit words) that goes through a transposition buffer: wider ones take
/// more shared memory per warp than the coalescing pays for. Measured on an H200 (bench/RESULTS.md
/// 2026-11-26 sixth session): Poly at 2^11 bits (32 words, one thread per instance) 135,637
/// Gu32ops/s through the buffers against 383,328 read directly.
pub const TUPLE_MAX_WORDS: u64 = 16;

/// Whether elements of `w`-word tuples that do not go through the transposition buffers move in
/// 16-byte loads and stores (each element lies 16-byte aligned where `w` is even): half the
/// memory requests of 8-byte ones, each thread's words lying `8 w` bytes from its neighbour's.
/// `a / b` at 4096 bits (one thread per instance, bound by L2 throughput) stored 64 partial
/// sectors per instance. Up to 32 words (one-thread products' sizes) the words stay 8-byte
/// accesses: the register pairs of 16-byte stores made Poly at 2^11 bits spill 48 bytes a thread
/// against 28 (ptxas).
pub fn tuple_vectors(w: usize) -> bool {
    w.is_multiple_of(2) && w > 32
}

/// Vectors of 16 bytes per thread when the global loads and stores of an array of `len` 64-bit
/// words go through the warp's transposition buffer, `None` when they access memory directly.
///
/// A thread holds Q consecutive words. With Q = 4 its own two 16-byte accesses lie 32 bytes
/// apart, so each warp-wide access spans 1 KiB and uses half of every sector it touches: on an
/// H200, Q=4 kernels moved twice the L1 and L2 sectors of Q=2 ones for the same DRAM bytes, and
/// ran at 74% of DRAM peak against 89% (`ncu`, bench/RESULTS.md, 2026-11-25). Through the buffer
/// the warp reads vector `k * 32 + lane` of its contiguous region, then each thread its
/// consecutive words (stores the reverse): 6-Add at 2^14..2^16 bits went from 86-88% to 97-98%
/// of the copy, 1-Add at 2^18 from 88% to 102%. With Q = 8 or 16 the threads' reads from the
/// buffer lie 64 or 128 bytes apart and would conflict four or eight ways (dot products went from
/// 85-89% to 74-78%), so the vectors are swizzled ([`swizzled_vectors`]); so, prefix sums of
/// residues at Q = 8 went from 54% to 69% of the copy at 2^20..2^26 elements and from 60% to 78%
/// at 2^16 (H200, bench/RESULTS.md, 2026-11-26). Only programs with such scans do that
/// ([`Schedule::wide_coalesced`]): 6-Add (an instance over several blocks) went from 92-94% to
/// 87-90% (80 registers against 72), at 2^18 bits in one 512-thread block to 45% (spills), and
/// dot products did not gain (80-86%, as direct).
/// The warp's region must be contiguous (no padding, whole warps per block); kernels with products
/// keep direct accesses too: they are not bound by memory, and their shared memory is their
/// operands'.
///
/// Arrays of `w`-word tuples (`w > 1`: the limbs of whole big integers in a program that runs one
/// thread per instance, one element each) go through the buffer too, `w / 2` vectors per thread,
/// for `w` up to 16: read directly, each warp-wide access touches 32 sectors at a stride of `8 w`
/// bytes, and the 1-Mul kernel at 2^9 bits (one thread per instance, 8 words) was bound by L2
/// throughput (79%) at 47% of DRAM throughput (`ncu`, H200, bench/RESULTS.md 2026-11-26).
pub fn coalesced_vectors(sel: &Selection, sched: &Schedule, len: u64, w: u64) -> Option<u32> {
    if w > 1 {
        // The schedule decided for the program (one thread per instance, one element each).
        return (len == 1
            && sched.tuples_coalesced
            && w.is_multiple_of(2)
            && w <= TUPLE_MAX_WORDS
            && sched.block_threads.is_multiple_of(32))
        .then_some((w / 2) as u32);
    }
    let q = sched.q_of(len);
    let v = q / 2;
    // Warps' regions follow each other in the buffer: the batch is one array, or (instances that
    // span blocks) each instance is, padded at its end, of whole 16-byte vectors.
    let contiguous = sched.threads_per_instance as u64 * q as u64 == len
        || (sched.blocks_per_instance > 1 && len.is_multiple_of(2));
    let wide = (v == 4 || v == 8) && sched.wide_coalesced;
    (q.is_multiple_of(2)
        && (v == 2 || wide)
        && contiguous
        && sched.block_threads.is_multiple_of(32)
        && sel.products().next().is_none())
    .then_some(v)
}

/// Whether the transposition buffer of an access of `vecs` vectors per thread is swizzled:
/// vector `i` at `i ^ ((i >> 3) & 7)`, so that neither the lanes' consecutive vectors nor a
/// thread's own ones (`vecs` apart across threads) meet in a bank within a quarter warp. Tuples
/// always are; arrays of words from 4 vectors (Q = 8, 16): with 2, the threads' vectors lie 32
/// bytes apart and conflict at most two ways, and those kernels ran at 97-105% of the copy without.
pub fn swizzled_vectors(vecs: u32, tuples: bool) -> bool {
    tuples || vecs >= 4
}

/// Vectors per thread of the kernel's transposition buffers: the most any of its coalesced
/// global accesses needs, `None` when it has none.
pub fn transposition_vectors(func: &Func, sel: &Selection, sched: &Schedule) -> Option<u32> {
    global_word_arrays(func)
        .into_iter()
        .filter_map(|(len, w)| coalesced_vectors(sel, sched, len, w))
        .max()
}

/// True when some array of single words (not of tuples) of `func` is accessed through the
/// transposition buffer.
pub fn words_coalesced(func: &Func, sel: &Selection, sched: &Schedule) -> bool {
    global_word_arrays(func)
        .into_iter()
        .any(|(len, w)| w == 1 && coalesced_vectors(sel, sched, len, 1).is_some())
}

/// The arrays of 64-bit words (or of tuples of them) `func` loads from or stores to global
/// memory: (length, words per element).
fn global_word_arrays(func: &Func) -> Vec<(u64, u64)> {
    let words = |t: &Type| match t {
        Type::Big(s) => s.as_const().map(|b| (b / 64, 1)),
        Type::Array(e, n) if matches!(**e, Type::U64 | Type::Zp(_)) => n.as_const().map(|n| (n, 1)),
        Type::Array(e, n) if e.leaves().len() > 1 && e.leaves().iter().all(|l| *l == Type::U64) => {
            n.as_const().map(|n| (n, e.leaves().len() as u64))
        }
        _ => None,
    };
    let loads = func.nodes.iter().filter_map(|n| match &n.op {
        Op::Limbs(_) => words(&n.ty),
        Op::Param(_) if matches!(n.ty, Type::Array(..)) => words(&n.ty),
        _ => None,
    });
    let stores = func.outputs.iter().filter_map(|o| words(func.ty(*o)));
    loads.chain(stores).collect()
}

/// Bytes of staging a cross-warp step needs: one word (u32 for carry flags, u64 per leaf otherwise)
/// per warp of each instance in the block.
fn staging_bytes(func: &Func, sel: &Selection, id: ValueId, sched: &Schedule) -> Option<u32> {
    let node = func.node(id);
    let slots = sched.instances_per_block * sched.warps_per_instance();
    // A sum of NTT products stages at its node, as one product; its terms and its addition's
    // steps stage nothing of their own.
    if let Some(sum) = sel.fused_ntt_sum(id, sched) {
        return sel.product(sum.products[0]).map(|p| p.staging_bytes(sched));
    }
    if sel.computed_by_fused_ntt_sum(id, sched) {
        return None;
    }
    if let Some(product) = sel.product(id) {
        return Some(product.staging_bytes(sched));
    }
    if let Op::Gather { src, .. } = &node.op {
        if sched.blocks_per_instance > 1 {
            // From the parameter's words in global memory (`schedule::spans_blocks`).
            return None;
        }
        // Any thread may read any element: the instance's whole array is staged.
        let len = match func.ty(*src) {
            Type::Array(_, n) => n.as_const().unwrap_or(0),
            _ => 0,
        };
        let words = sched.threads_per_instance * sched.q_of(len);
        return Some(sched.instances_per_block * words * 8);
    }
    if sched.block_span() <= 32 {
        return None; // warp shuffles and ballots need no shared memory
    }
    match &node.op {
        _ if sel.is_carry_scan(id) => Some(slots * 4),
        Op::Scan { init, .. } | Op::Reduce { init, .. } => {
            Some(slots * 8 * init.leaves().len() as u32)
        }
        _ => None,
    }
}

pub fn place(
    func: &Func,
    sel: &Selection,
    sched: &Schedule,
    target: &Target,
) -> CgResult<Placement> {
    let places = func
        .ids()
        .map(|id| match func.ty(id) {
            Type::Big(_) => Place::Global,
            Type::Array(..) if read_in_place(func, sched, id) => Place::Global,
            Type::Array(_, len) => Place::Registers {
                q: sched.q_of(len.as_const().unwrap_or(0)),
            },
            _ => Place::Scalar,
        })
        .collect();

    // Every staging use writes, passes a barrier, then reads. A buffer may take a new occupant once
    // another staging use (and so another barrier) lies between: all threads have finished reading
    // the old occupant by then; products end with a barrier of their own, so the very next use may
    // take theirs. Greedy colouring under that rule.
    struct Buffer {
        bytes: u32,
        last_use: usize,
        /// The last occupant ends with a barrier of its own: the next use may take it at once.
        fenced: bool,
    }
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut uses: Vec<(ValueId, u32, u32)> = Vec::new();
    for id in func.ids() {
        let Some(bytes) = staging_bytes(func, sel, id, sched) else {
            continue;
        };
        let k = uses.len();
        let fenced = matches!(func.node(id).op, Op::LimbMul { .. } | Op::PolyMul { .. })
            || sel.fused_ntt_sum(id, sched).is_some();
        let free = buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.last_use + 2 <= k || (b.fenced && b.last_use < k))
            .max_by_key(|(_, b)| b.bytes)
            .map(|(i, _)| i);
        let colour = match free {
            Some(i) => {
                buffers[i].bytes = buffers[i].bytes.max(bytes);
                buffers[i].last_use = k;
                buffers[i].fenced = fenced;
                i
            }
            None => {
                buffers.push(Buffer {
                    bytes,
                    last_use: k,
                    fenced,
                });
                buffers.len() - 1
            }
        };
        uses.push((id, bytes, colour as u32));
    }
    let mut offsets = Vec::new();
    let mut total = 0u32;
    for b in &buffers {
        offsets.push(total);
        total += b.bytes.div_ceil(16) * 16;
    }
    let vectors = transposition_vectors(func, sel, sched);
    let transpose = vectors.map(|v| {
        let offset = total;
        total += sched.block_threads * v * 16;
        Transpose { offset, vectors: v }
    });
    let parks: Vec<Park> = parked_maps(func, sched)
        .into_iter()
        .map(|(node, plan, q)| {
            let park = Park {
                node,
                offset: total,
                q,
                plan,
            };
            total += sched.block_threads * park.slot_count() * q * 8;
            park
        })
        .collect();
    let staging: Vec<Staging> = uses
        .iter()
        .map(|(node, bytes, colour)| Staging {
            node: *node,
            offset: offsets[*colour as usize],
            bytes: *bytes,
            buffer: *colour,
        })
        .collect();
    if total > target.max_shared_per_block {
        return Err(CodegenError::TooBig(format!(
            "`{}` needs {total} bytes of shared staging per block; the limit is {}",
            func.name, target.max_shared_per_block
        )));
    }
    let products = func
        .nodes
        .iter()
        .filter(|n| matches!(n.op, Op::LimbMul { .. }))
        .count();
    let mut notes = vec![format!(
        "all arrays in registers{}; {} staging use(s) in {} shared buffer(s), {} bytes",
        if products > 0 {
            format!(" (the operands of {products} product(s) are also staged in shared memory, which every thread reads)")
        } else {
            " (no array is read by another thread)".to_string()
        },
        staging.len(),
        buffers.len(),
        total
    )];
    if sched.block_span() <= 32 {
        notes.push(
            "cross-thread steps inside one warp: shuffles and ballots, no shared memory".into(),
        );
    }
    if let Some(v) = vectors {
        notes.push(format!(
            "global loads and stores of {}-word-per-thread arrays coalesced through a per-warp transposition buffer ({} bytes per warp)",
            2 * v,
            32 * v * 16
        ));
    }
    for p in &parks {
        notes.push(format!(
            "{}: {} word(s) of each element that live across a product parked in shared memory, read there after it",
            p.node,
            p.slot_count()
        ));
    }
    for id in func.ids() {
        if read_in_place(func, sched, id) {
            notes.push(format!(
                "{id}: read where it lies in global memory by the operations that use it, never loaded"
            ));
        }
        if let Some(w) = written_in_place(func, sched, id) {
            let what = match w.field {
                Some(i) => format!("field {i} of {id}"),
                None => id.to_string(),
            };
            notes.push(format!(
                "{what}: its last operation writes it straight into result {}, from no register",
                w.result
            ));
        }
    }
    Ok(Placement {
        places,
        staging,
        transpose,
        parks,
        shared_bytes: total,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use crate::per_thread::poly_or_product as program;
    use crate::{compile, Hints, Target};

    /// One-thread Poly's second form parks the parameter words that a step reads after a
    /// product: all of b's (b^2 comes after a^2) and a's for a b; a^2 reads a's registers. The
    /// park takes shared memory of its own, `park=1` makes that form the kernel, and a lone
    /// product, with no value across a product, has one form.
    #[test]
    fn one_thread_kernels_park_the_parameter_words_that_live_across_a_product() {
        let target = Target::h100();
        for bits in [1024u64, 2048] {
            let w = (bits / 64) as u32;
            let c = compile(&program(bits, true), &[], &target, &Hints::default()).unwrap();
            assert_eq!(c.schedule.threads_per_instance, 1);
            assert!(c.placement.parks.is_empty());
            let second = c.spill_free.as_ref().expect("a second form");
            assert!(second.schedule.park_values);
            let park = &second.placement.parks[0];
            assert_eq!((park.slot_count(), park.q), (2 * w, 1));
            assert_eq!(
                second.placement.shared_bytes,
                c.placement.shared_bytes + c.schedule.block_threads * 2 * w * 8
            );
            let read = &second.source;
            for k in 0..w {
                let stored = |p: u32, s: u32| {
                    format!(
                        "reinterpret_cast<u64*>(bf_smem + {})[(q * {}u + {s}u) * {}u + threadIdx.x] = v{p}_{k}[q];",
                        park.offset,
                        park.slot_count(),
                        c.schedule.block_threads
                    )
                };
                assert!(read.contains(&stored(0, k)), "{bits}: a word {k}");
                assert!(read.contains(&stored(1, w + k)), "{bits}: b word {k}");
            }
            let reads = read
                .matches("reinterpret_cast<volatile const u64*>")
                .count() as u32;
            // b in b^2, in both sums and in a b; a in a b.
            assert_eq!(reads, 5 * w, "{bits}");
            // a^2 reads the registers the load filled.
            assert!(read.contains(&format!("const u64 p0[{w}] = {{v0_0[q], v0_1[q]")));
            assert_eq!(c.likely_sources().len(), 2);
            let forced = compile(
                &program(bits, true),
                &[],
                &target,
                &Hints::default().with("park=1").unwrap().0,
            )
            .unwrap();
            assert_eq!(&forced.source, read);
            assert!(forced.spill_free.is_none());
        }
        let mul = compile(&program(1024, false), &[], &target, &Hints::default()).unwrap();
        assert_eq!(mul.schedule.threads_per_instance, 1);
        assert!(mul.spill_free.is_none());
    }

    /// A division wider than its register form reads parameters that only divisions read where
    /// they lie (in `a / b + a`, b only), and writes a part read alone into the kernel's result;
    /// narrower ones load their operands and store their results, and a pair read whole goes
    /// through registers. `explain`'s placement notes say which.
    #[test]
    fn wide_divisions_read_and_write_where_the_words_lie() {
        use bigfuse_core::{Builder, Size, Type};
        let target = Target::h100();
        // `a / b` (0), `a % b` (1) or both (2) at `bits`, and `a / b + a` (3).
        let program = |bits: u64, which: u32| {
            let mut b = Builder::new("f", &[]);
            let x = b.param("a", Type::Big(Size::lit(bits)));
            let y = b.param("b", Type::Big(Size::lit(bits)));
            let rs = match which {
                0 => vec![b.div(x, y).unwrap()],
                1 => vec![b.rem(x, y).unwrap()],
                2 => vec![b.div(x, y).unwrap(), b.rem(x, y).unwrap()],
                _ => {
                    let q = b.div(x, y).unwrap();
                    vec![b.add(q, x).unwrap()]
                }
            };
            b.finish(&rs).unwrap()
        };
        // (bits, program, a read in place, b read in place, the result written in place)
        for (bits, which, a_in_place, b_in_place, written) in [
            (2048, 0, false, false, false),
            (4096, 0, true, true, true),
            (4096, 1, true, true, true),
            (4096, 2, true, true, false),
            (4096, 3, false, true, false),
            (8192, 0, true, true, true),
        ] {
            let c = compile(&program(bits, which), &[], &target, &Hints::default()).unwrap();
            assert_eq!(c.schedule.threads_per_instance, 1, "{bits} {which}");
            let s = &c.source;
            let case = format!("{bits} bits, program {which}");
            assert_eq!(!s.contains("const u64 p0["), a_in_place, "{case}");
            assert_eq!(!s.contains("const u64 p1["), b_in_place, "{case}");
            assert_eq!(s.contains("written where computed"), written, "{case}");
            // A remainder alone by its thread; a quotient alone by its thread, or by the warp
            // where it has one word.
            let by_thread = s.contains("if (live) bf_rem_");
            let by_warp = s.contains("const bool bf_one_word = live && bf_div_")
                && s.contains("__ballot_sync(0xffffffffu, bf_one_word), bf_q)");
            assert_eq!(by_thread || by_warp, written, "{case}");
            assert_eq!(by_warp, written && which == 0, "{case}");
            let noted = |text: &str| c.placement.notes.iter().any(|n| n.contains(text));
            assert_eq!(noted("%0: read where it lies"), a_in_place, "{case}");
            assert_eq!(noted("%1: read where it lies"), b_in_place, "{case}");
            assert_eq!(noted("straight into result 0"), written, "{case}");
        }
    }

    #[test]
    fn grouped_gcds_and_inverses_read_and_write_where_the_words_lie() {
        use bigfuse_core::{Builder, Size, Type};
        let target = Target::h100();
        // gcd(a, b) (0), the inverse and its flag (1), gcd(a + b, b) (2), the inverse's number
        // doubled beside its flag (3), the inverse's number twice beside its flag (4).
        let program = |bits: u64, which: u32| {
            let mut b = Builder::new("f", &[]);
            let x = b.param("a", Type::Big(Size::lit(bits)));
            let y = b.param("b", Type::Big(Size::lit(bits)));
            let rs = match which {
                0 => vec![b.gcd(x, y).unwrap()],
                2 => {
                    let s = b.add(x, y).unwrap();
                    vec![b.gcd(s, y).unwrap()]
                }
                _ => {
                    let t = b.inv_mod(x, y).unwrap();
                    let (v, ok) = (b.extract(t, 0).unwrap(), b.extract(t, 1).unwrap());
                    match which {
                        3 => vec![b.add(v, v).unwrap(), ok],
                        4 => vec![v, v, ok],
                        _ => vec![v, ok],
                    }
                }
            };
            b.finish(&rs).unwrap()
        };
        // (program, a and b read in place, the number written in place)
        for (which, in_place, written) in [
            (0, true, true),
            (1, true, true),
            (2, false, true),
            (3, true, false),
            (4, true, false),
        ] {
            let c = compile(&program(4096, which), &[], &target, &Hints::default()).unwrap();
            assert!(c.schedule.group_threads > 1, "program {which}");
            // Calls, not the definitions (which start with `static`).
            let calls = |f: &str| c.source.lines().any(|l| l.trim_start().starts_with(f));
            let noted = |text: &str| c.placement.notes.iter().any(|n| n.contains(text));
            assert_eq!(noted("%0: read where it lies"), in_place, "program {which}");
            assert_eq!(noted("%1: read where it lies"), in_place, "program {which}");
            assert_eq!(calls("bf_gg_take_"), !in_place, "program {which}");
            assert_eq!(noted("straight into result 0"), written, "program {which}");
            assert_eq!(calls("if (live) bf_gg_store_"), written, "program {which}");
            assert_eq!(calls("bf_gg_give_"), !written, "program {which}");
            // The leaves written in place are never read.
            assert!(!c.source.contains("bf_written"), "program {which}");
        }
    }
}

//! Scheduling: how many threads serve one instance (T, a power of two), how many elements of each
//! array a thread keeps in registers (Q = ceil(len / T)), how many instances share a block (IPB),
//! and the block size. The schedule decorates the program; it does not rewrite it.

use crate::analysis::register_estimate;
use crate::error::{CgResult, CodegenError};
use crate::group::Grouped;
use crate::isel::{Product, Selection};
use crate::mul;
use crate::target::Target;
use bigfuse_core::{Func, Op, Type};

/// Caller's overrides (from the API or the environment); `None` leaves the choice to the model.
///
/// Hints have one text form, `q=2,block=256,width=-,minb=-,ntt=-,chunk=-,thread=-,group=-,divw=-,span=-,gntt=-,coords=-,park=-` (`-` for no hint):
/// [`Display`](std::fmt::Display) writes it, [`Hints::with`] and [`str::parse`] read it. With the
/// `serde` feature, hints serialize as that text, a string (`"hints": "q=2,block=-,..."` in JSON),
/// and deserialize through the same parser: one reader for the autotune cache, the bench's
/// `--variant` and serialized hints, and every key is written in a form that names it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Hints {
    /// Elements per thread of the longest arrays.
    pub q: Option<u32>,
    /// Threads per block.
    pub block_threads: Option<u32>,
    /// 32-bit digits per slice of a classical product.
    pub mul_width: Option<u32>,
    /// Products of operands of at least this many bits use the NTT, full products from half as
    /// many (default [`crate::lower::NTT_FROM_BITS`]).
    pub ntt_from_bits: Option<u64>,
    /// Blocks per SM the compiler must leave room for (`__launch_bounds__`), which caps registers.
    pub min_blocks: Option<u32>,
    /// Elements per chunk of a long reduction (default [`crate::chunk::CHUNK_LEN`]).
    pub chunk_len: Option<u64>,
    /// One thread per instance for programs of whole small values (`thread=1`), or not
    /// (`thread=0`); by default [`crate::per_thread::chosen`]'s rule.
    pub per_thread: Option<bool>,
    /// Threads that compute one power modulo a big integer, gcd or inverse together (`group=4`;
    /// a power of two that splits the operands' limbs), in a program of one thread per instance;
    /// by default the widest of its plans' ([`crate::group::Grouped`]). Named for the power, the
    /// first operation computed by groups.
    pub pow_mod_group: Option<u32>,
    /// The widest divisor (bits) that one thread divides by whole (`divw=4096`); by default the
    /// rule of [`crate::divide::divides_whole`].
    pub divide_whole_bits: Option<u64>,
    /// The most blocks one instance may span (`span=1`: every instance in one block); by default
    /// as many as its arrays need at the cost model's Q ([`spans_blocks`]). Given as more than 1,
    /// instances span blocks (where the program allows it) even where one block would hold them.
    pub span: Option<u32>,
    /// Products of operands of at least this many bits go over global memory in kernels of
    /// their own (`gntt=65536`, [`crate::ntt_global`]); by default only those that do not fit a
    /// block.
    pub global_ntt_from_bits: Option<u64>,
    /// Thread coordinates read from their special registers wherever they are used (`coords=1`)
    /// or held in registers (`coords=0`); by default held, and the runtime loads the kernel's
    /// other form ([`crate::Compiled::spill_free`]) where held ones spill.
    pub read_coordinates: Option<bool>,
    /// In kernels of one thread per instance, the parameters' words that live across a product
    /// parked in shared memory where loaded and read there after it (`park=1`), or held in
    /// registers (`park=0`); by default held, and the runtime loads the kernel's other form
    /// ([`crate::Compiled::spill_free`]) where held ones spill.
    pub park_values: Option<bool>,
}

/// The text form of hints, one home for every reader and writer (the autotune cache, `explain`,
/// the bench's `--variant`): `q=2,block=256,width=-,minb=-,ntt=-,chunk=-,thread=-,group=-,divw=-,span=-,gntt=-,coords=-,park=-`, `-` for no hint.
impl Hints {
    /// The keys of the text form, in the order it is written.
    pub const KEYS: [&'static str; 13] = [
        "q", "block", "width", "minb", "ntt", "chunk", "thread", "group", "divw", "span", "gntt",
        "coords", "park",
    ];

    /// Sets the hint `key` to `value` (a number, or `-` for none).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let num = || -> Result<Option<u64>, String> {
            match value {
                "-" => Ok(None),
                v => v
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| format!("`{key}={v}`: {v} is not a number")),
            }
        };
        let flag = || -> Result<Option<bool>, String> {
            match num()? {
                None => Ok(None),
                Some(0) => Ok(Some(false)),
                Some(1) => Ok(Some(true)),
                Some(_) => Err(format!("`{key}={value}`: write 1, 0 or -")),
            }
        };
        let small = || -> Result<Option<u32>, String> {
            num()?
                .map(|n| u32::try_from(n).map_err(|_| format!("`{key}={value}`: too large")))
                .transpose()
        };
        match key {
            "q" => self.q = small()?,
            "block" => self.block_threads = small()?,
            "width" => self.mul_width = small()?,
            "minb" => self.min_blocks = small()?,
            "ntt" => self.ntt_from_bits = num()?,
            "chunk" => self.chunk_len = num()?,
            "group" => self.pow_mod_group = small()?,
            "divw" => self.divide_whole_bits = num()?,
            "gntt" => self.global_ntt_from_bits = num()?,
            "span" => {
                self.span = small()?;
                if self.span == Some(0) {
                    return Err("`span=0`: write 1 or more (1 for one block)".into());
                }
            }
            "thread" => self.per_thread = flag()?,
            "coords" => self.read_coordinates = flag()?,
            "park" => self.park_values = flag()?,
            other => {
                return Err(format!(
                    "unknown schedule key `{other}` ({})",
                    Hints::KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }

    /// These hints with the `key=value` pairs of `text` (comma-separated) applied; also returns
    /// how many pairs there were.
    pub fn with(mut self, text: &str) -> Result<(Hints, usize), String> {
        let mut count = 0;
        for part in text.trim().split(',').filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: write key=value"))?;
            self.set(k.trim(), v.trim())?;
            count += 1;
        }
        Ok((self, count))
    }

    /// Hints of the same program's compact forms, which NVRTC may compile in a fraction of the
    /// tuned kernel's time (one serves a GPU's first calls while the tuned kernel compiles: the
    /// runtime's `tiers`, which keeps a form only if it compiles clearly faster). NVRTC's time
    /// grows with straight-line code, so: product slices of [`COMPACT_WIDTH`] digits (the inner
    /// block of a classical product is unrolled over its slice) and classical products below
    /// [`COMPACT_NTT_FROM_BITS`] (NTT transforms are long unrolled passes); then the same with
    /// several threads per instance, for one-thread programs, which unroll whole products (and
    /// which that makes longer where they divide); thread coordinates held, so that a compact
    /// kernel compiles once even where it spills. A hint given here stays as it is.
    ///
    /// Measured with NVRTC 13.0 (2026-11-27, CPU time of one compile): Poly at 2^11 bits 9.9 s
    /// -> 0.43 s, at 2^15 1.8 s -> 0.47 s, at 2^18 2.0 s -> 0.51 s; 1-Mul at 2^15 0.68 s -> 0.22 s.
    pub fn compact(&self) -> Vec<Hints> {
        let narrow = Hints {
            mul_width: self.mul_width.or(Some(COMPACT_WIDTH)),
            ntt_from_bits: self.ntt_from_bits.or(Some(COMPACT_NTT_FROM_BITS)),
            // One compile, whether it spills or not: a second form would delay the first
            // result (Poly at 2^18 bits: 1.2 s instead of 0.6-0.8).
            read_coordinates: self.read_coordinates.or(Some(false)),
            park_values: self.park_values.or(Some(false)),
            ..self.clone()
        };
        let mut forms = vec![narrow.clone()];
        if self.per_thread.is_none() {
            forms.push(Hints {
                per_thread: Some(false),
                ..narrow
            });
        }
        forms
    }
}

/// Digits per product slice in [`Hints::compact`]: the narrowest slice (`mul::threads_for`
/// widens it where a block's threads would not cover the product).
pub const COMPACT_WIDTH: u32 = 2;

/// Operand bits from which products use the NTT in [`Hints::compact`]: every product that one
/// block computes classically (up to 2^18 bits) stays classical.
pub const COMPACT_NTT_FROM_BITS: u64 = 1 << 19;

/// The text form (see [`Hints`]); keys left out are no hint, so `""` is [`Hints::default`].
impl std::str::FromStr for Hints {
    type Err = String;

    fn from_str(text: &str) -> Result<Hints, String> {
        Hints::default().with(text).map(|(hints, _)| hints)
    }
}

/// Serialized as their text form, a string, and read back by its parser ([`Hints::with`]).
#[cfg(feature = "serde")]
impl serde::Serialize for Hints {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Hints {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Hints, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Hints;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("hints as text, like \"q=2,block=256,width=-,minb=-,ntt=-,chunk=-\"")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Hints, E> {
                text.parse()
                    .map_err(|e| E::custom(format_args!("invalid hints {text:?}: {e}")))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

impl std::fmt::Display for Hints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn v<T: std::fmt::Display>(x: &Option<T>) -> String {
            x.as_ref().map_or("-".to_string(), |x| x.to_string())
        }
        let values = [
            v(&self.q),
            v(&self.block_threads),
            v(&self.mul_width),
            v(&self.min_blocks),
            v(&self.ntt_from_bits),
            v(&self.chunk_len),
            v(&self.per_thread.map(u8::from)),
            v(&self.pow_mod_group),
            v(&self.divide_whole_bits),
            v(&self.span),
            v(&self.global_ntt_from_bits),
            v(&self.read_coordinates.map(u8::from)),
            v(&self.park_values.map(u8::from)),
        ];
        let pairs: Vec<String> = Hints::KEYS
            .iter()
            .zip(values)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        f.write_str(&pairs.join(","))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Threads per instance: a power of two up to one block's, or a whole number of blocks where
    /// an instance spans several.
    pub threads_per_instance: u32,
    /// Blocks one instance spans: 1, or more for instances too long for one block, whose scans
    /// resolve across blocks by look-back ([`spans_blocks`]).
    pub blocks_per_instance: u32,
    /// Where instances span blocks and every scan is a carry scan: each warp's first lane is a
    /// halo that recomputes the last elements of the warp before it ([`lane_halo_pays`]).
    pub lane_halo: bool,
    /// Instances per block.
    pub instances_per_block: u32,
    pub block_threads: u32,
    /// Length of the longest array (limbs of the widest big integer).
    pub max_len: u64,
    /// Elements per thread of the longest arrays.
    pub q: u32,
    pub est_registers: u32,
    /// Target digits per slice of classical products.
    pub mul_width: u32,
    /// Blocks per SM in `__launch_bounds__` (registers per thread <= 65536 / (blocks * block)).
    pub min_blocks: u32,
    /// Threads that compute each power modulo a big integer, gcd and inverse together: the
    /// threads of an instance in a program of one-element arrays, else one (see
    /// [`crate::group`]).
    pub group_threads: u32,
    /// Shared memory a block may use (bytes): placement sizes buffers within it.
    pub shared_limit: u32,
    /// A program of one thread per instance moves its whole big integers (arrays of limb tuples)
    /// through the warps' transposition buffers ([`crate::place::coalesced_vectors`]): where it
    /// computes little per word it moves ([`TUPLES_COALESCED_UP_TO`]).
    pub tuples_coalesced: bool,
    /// Arrays of words held 8 or 16 to a thread go through the warps' transposition buffers too
    /// ([`crate::place::coalesced_vectors`]): in programs with scans other than carries
    /// ([`generic_scans`]), which move little per instruction they execute.
    pub wide_coalesced: bool,
    /// Where instances span blocks and look back across them: how many blocks later the block
    /// is whose tiles of the array parameters each block prefetches into L2 just before it looks
    /// back ([`lookback_prefetch`]); 0 for none.
    pub prefetch_ahead: u32,
    /// The thread coordinates (`t`, `slot`, `inst`, `live`, `lane`, `warp`) are read from their
    /// special registers where used instead of held (`emit::prologue`; instances of one block
    /// only).
    pub read_coordinates: bool,
    /// The parameters' words that live across a product are parked in shared memory where
    /// loaded and read there after it ([`crate::place::Parking`]; one thread per instance only).
    pub park_values: bool,
    /// Why each choice was made, for `explain`.
    pub decisions: Vec<String>,
}

impl Schedule {
    /// The registers a thread may use under `__launch_bounds__(block_threads, min_blocks)` on
    /// `target`, in the allocation's steps of 8.
    pub fn register_cap(&self, target: &Target) -> u32 {
        (target.regs_per_sm / (self.min_blocks * self.block_threads).max(1))
            .min(target.max_regs_per_thread)
            / 8
            * 8
    }

    /// Elements per thread of an array of `len` elements.
    pub fn q_of(&self, len: u64) -> u32 {
        len.div_ceil(self.threads_per_instance as u64).max(1) as u32
    }

    /// Threads of one instance inside one block: as far as shuffles, ballots and block barriers
    /// reach.
    pub fn block_span(&self) -> u32 {
        if self.blocks_per_instance > 1 {
            self.block_threads
        } else {
            self.threads_per_instance
        }
    }

    /// Warps of one instance inside one block.
    pub fn warps_per_instance(&self) -> u32 {
        self.block_span().div_ceil(32)
    }

    /// Blocks a launch over `n` instances takes.
    pub fn grid_for(&self, n: u64) -> u64 {
        n.div_ceil(self.instances_per_block as u64) * self.blocks_per_instance as u64
    }
}

/// The most scalar operations per word moved (read or written, per instance) of a program of one
/// thread per instance whose whole big integers still go through the warps' transposition
/// buffers. Read directly, each warp-wide access touches 32 sectors at a stride of 8 w bytes,
/// which bounds a kernel that computes little by L2 throughput; through the buffer every access
/// is a whole line, at the price of about ten instructions per word. Measured on an H200 (bench
/// mul, same run, bench/RESULTS.md 2026-11-26): 1-Mul at 2^9 bits (22 operations per word) 282 K
/// -> 434 K Gu32ops/s, at 2^7 and 2^8 (7 and 11) unchanged; Poly at 2^7, 2^8 and 2^9 (32, 53 and
/// 96 per word) 864 K -> 851 K, 946 K -> 797 K and 527 K -> 514 K; powers and chains of modular
/// products unchanged. Those counts included the nodes of lambdas that nothing reads, which
/// `dead_code` has dropped since the twenty-fifth session: Poly at 2^7 now counts 14 (27
/// before), a 64-bit 1-Add 13, a 64-bit Poly 9 (18), so the bound is 13, which keeps every
/// decision above.
pub const TUPLES_COALESCED_UP_TO: u64 = 13;

/// The most 64-bit words of one element `func` reads or writes (a whole big integer's limbs in a
/// program of one thread per instance).
fn widest_tuple(func: &Func) -> u64 {
    let words = |t: &Type| match t {
        Type::Array(e, _) => e.leaves().len() as u64,
        t => t.leaves().len() as u64,
    };
    func.params
        .iter()
        .map(|p| words(&p.ty))
        .chain(func.outputs.iter().map(|o| words(func.ty(*o))))
        .max()
        .unwrap_or(0)
}

/// Scalar operations per word moved of `func` (lambdas and loops counted whole), for
/// [`TUPLES_COALESCED_UP_TO`].
pub fn ops_per_word(func: &Func) -> u64 {
    fn ops(f: &Func) -> u64 {
        f.nodes
            .iter()
            .map(|n| match &n.op {
                Op::Loop { count, body, .. } => {
                    count.as_const().unwrap_or(1).saturating_mul(ops(body))
                }
                // A power, a Montgomery product, a gcd, an inverse or a division: a device
                // function of thousands of operations per word.
                op if op.is_one_thread_op() => 1 << 20,
                // A whole product's chains stay in registers: what they add per word moved is
                // wide multiply-adds, which the transposition buffers' loads do not slow (Poly at
                // 2^9 bits 1.02 M Gu32ops/s through them, bench/RESULTS.md 2026-11-26 sixth
                // session).
                Op::LimbMulWords(..) | Op::LimbMulAddWords(..) => 1,
                op => 1 + op.lambdas().iter().map(|l| ops(l)).sum::<u64>(),
            })
            .fold(0, u64::saturating_add)
    }
    let words = |t: &Type| -> u64 {
        match t {
            Type::Array(e, n) => e.leaves().len() as u64 * n.as_const().unwrap_or(1),
            Type::Big(s) => s.as_const().unwrap_or(64) / 64,
            t => t.leaves().len() as u64,
        }
    };
    let moved: u64 = func.params.iter().map(|p| words(&p.ty)).sum::<u64>()
        + func.outputs.iter().map(|o| words(func.ty(*o))).sum::<u64>();
    ops(func) / moved.max(1)
}

/// Limbs per thread the cost model starts from: 16 bytes of each operand per thread, one 16-byte
/// load, the most threads to keep loads in flight. Measured on an H200 (bench/RESULTS.md,
/// 2026-11-21): 1-Add at Q=2 runs at 104-106% of the copy at every size 2^9..2^17, Q=4 at 92-94%.
pub const PREFERRED_Q: u32 = 2;

/// Threads per block when several instances share one.
pub const PREFERRED_BLOCK: u32 = 256;

/// Threads per block of a program that exponentiates modulo a big integer or computes a gcd or an
/// inverse (see [`crate::montgomery`]).
pub const POW_MOD_BLOCK: u32 = 128;

/// One thread per instance computing whole products of at least this many limbs
/// (`limb.mul_words`) runs in blocks of [`WIDE_PRODUCT_BLOCK`] threads, [`WIDE_PRODUCT_MIN_BLOCKS`]
/// of them per SM (at most 168 registers a thread): Poly at 2^10 bits needs about 220 registers.
/// Measured on an H200 (bench/RESULTS.md 2026-11-26 sixth session): Poly 712 K Gu32ops/s with
/// 168 registers (304 B spilled) against 621 K with 128 (640 B spilled) and 514 K with 218 (no
/// spills, fewer warps); 1-Mul (128 registers) 527 K against 520 K in blocks of 256.
pub const WIDE_PRODUCT_LIMBS: usize = 16;
/// See [`WIDE_PRODUCT_LIMBS`].
pub const WIDE_PRODUCT_BLOCK: u32 = 128;
/// See [`WIDE_PRODUCT_LIMBS`].
pub const WIDE_PRODUCT_MIN_BLOCKS: u32 = 3;
/// Blocks per SM where the products have twice [`WIDE_PRODUCT_LIMBS`] limbs or more (255
/// registers): Poly at 2^11 bits 384 K Gu32ops/s against 179 K with 168 registers (2.5 KB
/// spilled), H200, bench/RESULTS.md 2026-11-26 sixth session.
pub const WIDER_PRODUCT_MIN_BLOCKS: u32 = 2;

/// Blocks per SM in the launch bounds of a program of one thread per instance whose one-thread
/// operations are all square roots through the root's device function
/// ([`crate::divide::roots_in_local_memory_only`]: roots of values from 8192 bits). That
/// function is bound by the latency of local memory, and more resident threads hide more of it;
/// with one block per SM the CUDA compiler spread the rest of the program over 254 registers.
/// The root of the 2·BITS-bit concatenation of two parameters (`bench bits --ops sqrtwide`,
/// H200, bench/RESULTS.md 2026-11-29 twenty-fourth session), G roots/s at BITS = 16384 / 32768:
/// 0.00530 / 0.00121 with 1 or 2 blocks (254 registers), 0.00661 / 0.00175 with 4 (128),
/// 0.00771 / 0.00213 with 8 (64), 0.00750 / 0.00197 with 16 (32); at 4096 / 8192, 0.0884 /
/// 0.0262 with 8 against 0.0900 / 0.0262 with 1. A root alone (`a.isqrt()`) keeps 54
/// registers either way.
pub const ROOT_FUNCTION_MIN_BLOCKS: u32 = 8;

/// Threads per block of a program with a classical product: half the shared staging per block
/// and the same threads per SM. Measured on an H100 (bench/RESULTS.md, 2026-11-25, same run):
/// 1-Mul 2^10..2^15 bits 278,346 / 252,627 / 173,479 / 101,984 / 64,928 / 37,274 Gu32ops/s
/// against 243,195 / 221,550 / 164,880 / 99,611 / 63,811 with 256 threads (2^15: NTT 35,019), Poly
/// 316,245 / 284,687 / 210,237 / 139,970 / 84,695 / 49,055 against 286,431 / 259,528 / 196,634 /
/// 133,419 / 82,439 (NTT 38,308).
pub const CLASSICAL_BLOCK: u32 = 128;

/// Elements per thread from which instances span several blocks: 1024 threads at this Q are too
/// few (arrays of more than 4096 elements, integers of more than 2^18 bits).
pub const SPAN_Q: u32 = 4;

/// Elements per thread and threads per block of instances that span several blocks, for a
/// program of `steps` scans. One or two carry scans (1-Add, a - b): Q=4 in 512-thread blocks,
/// whose 16-byte accesses go through the warps' buffers whole lines at a time
/// ([`crate::place::coalesced_vectors`]); programs of more scans compute more per element than
/// they move, and Q=8 in 256-thread blocks spreads each scan's fixed cost over twice the limbs
/// (and gives a halo lane eight limbs: chains of up to eight additions, [`lane_halo_pays`]).
/// Measured on an H200 (`bench huge`, bench/RESULTS.md, 2026-11-26), 2^20..2^26 bits: 1-Add
/// 102-103% of the copy at Q=4 / 512, 80-83% at Q=8 / 256; 6-Add with halo lanes 91-94% at
/// Q=8 / 256, 61-69% at Q=8 / 512 (Q=4: the chain does not fit the halo). Other scans take
/// [`SCAN_Q`]: prefix sums over residues, through the warps' transposition buffers, 69% at
/// Q=8 / 256, 78-79% at Q=16 / 256 or 128 (60 registers), 73% at Q=16 / 64, 39% at Q=32.
pub fn span_shape(steps: usize, carries_only: bool) -> (u32, u32) {
    if steps <= 2 && carries_only {
        (SPAN_Q, 512)
    } else if carries_only {
        (8, 256)
    } else {
        (SCAN_Q, 256)
    }
}

/// Elements per thread of programs with scans other than carries (prefix sums over residues, user
/// scans): each element costs tens of instructions (a modular sum in the thread's own scan and
/// again with its prefix), so the lane and warp scans and the barrier are spread over many.
/// Measured on an H200 (`bench huge`, prefix sums over [Zp<2^61 - 1>; N], bench/RESULTS.md,
/// 2026-11-26): in one block, N = 2^8 / 2^10 / 2^12, 98% of the copy at Q=16 against 73% / 67% /
/// 78% at Q=2 / 2 / 4 (Q=8: 99% / 100% / 95%); over several blocks Q=16 in 256-thread blocks held
/// to 60 registers ([`SPAN_SCAN_MIN_BLOCKS`]) 79% at N = 2^20..2^26 against 69% at Q=8.
pub const SCAN_Q: u32 = 16;

/// Blocks per SM in the launch bounds of a kernel whose instances span blocks with scans other
/// than carries: 60 registers at Q=16, 78-79% of the copy against 75% with two blocks (68
/// registers); with more (48 or 40 registers) the values spill (75%, 63%).
pub const SPAN_SCAN_MIN_BLOCKS: u32 = 4;

/// The most bytes of array parameters that blocks prefetch ahead of their use
/// ([`lookback_prefetch`]): what L2 keeps beside the streaming loads and stores.
pub const PREFETCH_BYTES: u64 = 8 << 20;

/// How many blocks later the block is whose tiles each block prefetches into L2 just before it
/// looks back across blocks (0: none): half the blocks resident on the GPU, at most
/// [`PREFETCH_BYTES`] of tiles in flight. While a block waits for the blocks before it, its
/// loads are done and its stores not begun; the prefetches keep memory busy meanwhile, and the
/// block they are for finds its tile in L2. Prefix sums over [Zp<2^61 - 1>; N], N = 2^20..2^26, on
/// an H100 (bench/RESULTS.md, 2026-11-26, fifth session): 89-91% of the copy without, 96-97% with
/// half the resident blocks ahead; a quarter or less ahead 89-94%, three quarters 89-91%, all of
/// them 78% (the tiles leave L2 before their block reads them). Issued when a block starts
/// instead: 95-96% on the H100, 83-85% on an H200 (79-80% without).
/// Not in kernels whose carries use halo lanes (they seldom wait).
pub fn lookback_prefetch(func: &Func, sched: &Schedule, target: &Target) -> u32 {
    let looks_back = func
        .ids()
        .any(|id| matches!(func.node(id).op, Op::Scan { .. } | Op::Reduce { .. }));
    if sched.blocks_per_instance <= 1 || sched.lane_halo || !looks_back {
        return 0;
    }
    let resident = sched.min_blocks.max(1) * target.sm_count;
    // The arrays read into registers: parameters' elements and big integers' limbs.
    let tile: u64 = func
        .ids()
        .filter(|&id| match (&func.node(id).op, func.ty(id)) {
            (Op::Param(_), Type::Array(e, _)) => e.is_scalar() && !only_gathered(func, id),
            (Op::Limbs(_), Type::Array(..)) => !only_gathered(func, id),
            _ => false,
        })
        .map(|id| {
            let Type::Array(_, len) = func.ty(id) else {
                unreachable!("filtered to arrays")
            };
            sched.q_of(len.as_const().unwrap_or(0)) as u64 * sched.block_threads as u64 * 8
        })
        .sum();
    if tile == 0 {
        return 0;
    }
    (resident / 2).min((PREFETCH_BYTES / tile) as u32)
}

/// Whether `func` has a scan other than a carry scan.
pub fn generic_scans(func: &Func, sel: &Selection) -> bool {
    func.ids().any(|id| {
        matches!(func.node(id).op, bigfuse_core::Op::Scan { .. }) && !sel.is_carry_scan(id)
    })
}

/// Arrays from which programs that chain more than two carry scans (6-Add) span blocks although
/// one block would hold them (2^17 bits), to carry with halo lanes instead of a block barrier per
/// scan ([`lane_halo_pays`]).
pub const CHAIN_SPAN_FROM: u64 = 2048;

/// Block sizes tried, in order, for such chains: the first that gives halo lanes and an even Q
/// (16-byte accesses). Measured on an H200 (`bench add`, bench/RESULTS.md, 2026-11-26): 6-Add at
/// 2^17 bits over three 128-thread blocks (Q=6) 91.0-93.9% of the copy in four runs against
/// 87.0-89.0% in one 512-thread block; at 2^18 over three 256-thread blocks (Q=6) 92.2-94.0%
/// against 85.4-85.7% (over five 128-thread blocks, Q=7: 79.8%); at 2^19 over nine 128-thread
/// blocks (Q=8) 88.2% against 77-79% over five 256-thread blocks (Q=7).
pub const CHAIN_SPAN_BLOCKS: [u32; 2] = [256, 128];

/// The most blocks one instance spans by default: 2^26-bit integers (2^20 limbs) at Q=4 in
/// 512-thread blocks take 512, scans over 2^24 elements 8192.
pub const MAX_SPAN: u32 = 1 << 16;

/// The parameter whose words array `src` is, as they lie in global memory: the limbs of a
/// big-integer parameter, or an array parameter of 64-bit words. A gather from such an array
/// (a shift by a run-time amount reads the operand's limbs this way) reads global memory directly
/// where an instance spans blocks.
pub fn global_words(func: &Func, src: bigfuse_core::ValueId) -> Option<u32> {
    use bigfuse_core::Op;
    match func.node(src).op {
        Op::Limbs(p) => match func.node(p).op {
            Op::Param(i) => Some(i),
            _ => None,
        },
        Op::Param(i) => match func.ty(src) {
            Type::Array(e, _) if matches!(**e, Type::U64 | Type::Zp(_)) => Some(i),
            _ => None,
        },
        _ => None,
    }
}

/// Whether array `id` ([`global_words`]) is only ever gathered from: where an instance spans
/// blocks its words are then read where they lie, never loaded into registers.
pub fn only_gathered(func: &Func, id: bigfuse_core::ValueId) -> bool {
    use bigfuse_core::Op;
    global_words(func, id).is_some()
        && !func.outputs.contains(&id)
        && func.nodes.iter().all(|n| match &n.op {
            Op::Gather { idx, .. } => *idx != id,
            op => !op.args().contains(&id),
        })
}

/// Whether the instances of `func` may span several blocks: every step across threads is a scan
/// (carry scans included), which the blocks of an instance resolve in order by look-back
/// (`emit/lookback.rs`), or a reduction (a comparison of big integers) whose result no element
/// depends on: the instance's last thread then holds it whole and writes what follows from it.
/// Element-wise work needs nothing, nor do gathers from a parameter's words ([`global_words`]).
/// Other gathers and products read across the whole instance from values no other block can
/// see, and a reduction that elements depend on would have to reach every block first.
pub fn spans_blocks(func: &Func, sel: &Selection) -> bool {
    use bigfuse_core::Op;
    // Nodes computed from a reduction's result.
    let mut after_reduce = vec![false; func.nodes.len()];
    for id in func.ids() {
        let n = func.node(id);
        after_reduce[id.index()] = matches!(n.op, Op::Reduce { .. })
            || n.op.args().iter().any(|a| after_reduce[a.index()]);
    }
    sel.products().next().is_none()
        && func.ids().all(|id| {
            let n = func.node(id);
            let elementwise_after_reduce =
                after_reduce[id.index()] && matches!(n.ty, Type::Array(..));
            !elementwise_after_reduce
                && match &n.op {
                    Op::Gather { src, .. } => global_words(func, *src).is_some(),
                    Op::LimbMul { .. } | Op::PolyMul { .. } => false,
                    Op::Scan { flags, .. } => flags.is_none(),
                    _ => true,
                }
        })
}

/// Lanes of a warp that own elements where lane 0 is a halo ([`lane_halo_pays`]).
pub const WARP_OWNERS: u32 = 31;

/// Whether the warps of instances that span blocks carry with a halo lane: every scan of `func`
/// is a carry scan. Each warp's lane 0 then recomputes the last Q elements of the warp before it
/// (of the block before, for a block's first warp): the carry into lane 1 is the halo's carry out
/// wherever one of its limbs with exact inputs does not propagate, so warps neither exchange
/// carries through shared memory nor meet at block barriers; a warp waits for the one before it
/// only where the halo's limb propagates (an all-ones limb, e.g. a carry through the whole
/// integer). Addition `k` of a chain decides at limb `k` of the halo (the limbs below it may lack
/// a carry from before the halo). Measured on an H200 (bench/RESULTS.md, 2026-11-26): with a
/// whole halo warp per block and carries resolved through shared memory and a barrier per
/// scan, 6-Add ran at 72-79% of the copy at 2^19..2^26 bits, and with no halo (look-back per
/// scan) at 31-46%.
///
/// Addition `k` of a chain decides at the halo's limb `k`, so chains longer than Q limbs cannot
/// (every warp would wait for the one before: 6-Add at Q=4 ran at 1-26% of the copy); they
/// resolve carries through shared memory and look-back instead.
pub fn lane_halo_pays(func: &Func, sel: &Selection, q: u64) -> bool {
    let depth = carry_depth(func, sel) as u64;
    // A halo lane recomputes elements another lane owns: a reduction would count them twice.
    let reduces = func
        .nodes
        .iter()
        .any(|n| matches!(n.op, bigfuse_core::Op::Reduce { .. }));
    carries_only(func, sel) && !reduces && depth >= 1 && depth <= q
}

/// The longest chain of carry scans in `func`: 1 for `a + b`, 6 for 6-Add (each addition reads
/// the one before).
pub fn carry_depth(func: &Func, sel: &Selection) -> u32 {
    let mut depth = vec![0u32; func.nodes.len()];
    for id in func.ids() {
        let below = func
            .node(id)
            .op
            .args()
            .iter()
            .map(|a| depth[a.index()])
            .max()
            .unwrap_or(0);
        depth[id.index()] = below + u32::from(sel.is_carry_scan(id));
    }
    depth.into_iter().max().unwrap_or(0)
}

/// Whether every scan of `func` is a carry scan (additions, subtractions, user carry scans).
pub fn carries_only(func: &Func, sel: &Selection) -> bool {
    func.ids().all(|id| {
        !matches!(func.node(id).op, bigfuse_core::Op::Scan { .. }) || sel.is_carry_scan(id)
    })
}

/// Limbs per thread for a program whose arrays have `len` elements and which has `steps`
/// cross-thread steps (carry scans, reductions). Each step costs a barrier once an instance spans
/// several warps, so programs with many steps trade threads for fewer warps per instance: 6-Add
/// (six steps) measured 103-105% of the copy while an instance fits one warp (Q=2 to 2^12 bits,
/// Q=4 at 2^13), and 86-88% beyond with Q=4 up to 512 threads per instance, Q=8 above — against
/// 70-76% with Q=2 there.
pub fn choose_q(len: u64, steps: usize) -> u32 {
    let threads = |q: u64| len.div_ceil(q);
    let smallest = |from: u64, max_threads: u64| {
        let mut q = from;
        while threads(q) > max_threads && q < 64 {
            q *= 2;
        }
        q as u32
    };
    if threads(PREFERRED_Q as u64) <= 32 {
        PREFERRED_Q
    } else if steps <= 2 {
        smallest(PREFERRED_Q as u64, 1024)
    } else if threads(4) <= 512 {
        4
    } else {
        smallest(8, 1024)
    }
}

/// Elements per thread of an array program that only reduces (dot products, sums): the thread's
/// own elements are combined sequentially, the cheap part, before the cross-thread combination,
/// the expensive one, and small blocks keep that combination short. Measured on an H200 (bench dot,
/// 2026-11-22, 62-bit prime): 4096-element chunks at Q=4 (1024 threads) reached 35% of the copy
/// bandwidth, Q=8 (512) 64%, Q=16 (256) 70%; 1024-element chunks at Q=8 (128 threads) 76-78%, and
/// 2^10-element vectors in one block the same way 83% (Q=16 with 64 threads: 75%).
pub const REDUCE_Q: u32 = 8;
pub const REDUCE_MIN_THREADS: u64 = 128;

pub fn reduce_q(len: u64) -> u32 {
    let mut q = REDUCE_Q as u64;
    while q > 2 && len.div_ceil(q) < REDUCE_MIN_THREADS {
        q /= 2;
    }
    q as u32
}

/// A program over arrays (every parameter an array, as opposed to big integers) whose only
/// cross-thread steps are reductions.
fn is_array_reduction(func: &Func) -> bool {
    use bigfuse_core::Op;
    !func.params.is_empty()
        && func.params.iter().all(|p| matches!(p.ty, Type::Array(..)))
        && func.nodes.iter().any(|n| matches!(n.op, Op::Reduce { .. }))
        && func.nodes.iter().all(|n| {
            !matches!(
                n.op,
                Op::Scan { .. } | Op::LimbMul { .. } | Op::PolyMul { .. }
            )
        })
}

fn array_lengths(func: &Func, out: &mut Vec<u64>) {
    for n in &func.nodes {
        if let Type::Array(_, len) = &n.ty {
            out.push(len.as_const().unwrap_or(0));
        }
    }
}

pub fn schedule(
    func: &Func,
    sel: &Selection,
    target: &Target,
    hints: &Hints,
) -> CgResult<Schedule> {
    let mut lens = Vec::new();
    array_lengths(func, &mut lens);
    let max_len = lens.iter().copied().max().unwrap_or(1).max(1);
    let max_t = target.max_threads_per_block.min(1024);
    let mut decisions = Vec::new();

    let steps = func
        .nodes
        .iter()
        .filter(|n| {
            matches!(
                n.op,
                bigfuse_core::Op::Scan { .. } | bigfuse_core::Op::Reduce { .. }
            )
        })
        .count();
    let want_q = hints
        .q
        .unwrap_or_else(|| {
            if is_array_reduction(func) {
                reduce_q(max_len)
            } else if generic_scans(func, sel) && sel.products().next().is_none() {
                SCAN_Q
            } else {
                choose_q(max_len, steps)
            }
        })
        .max(1) as u64;
    let mut t = max_len
        .div_ceil(want_q)
        .next_power_of_two()
        .min(max_t as u64) as u32;
    // Instances longer than one block's threads at SPAN_Q span several blocks, where the only
    // steps across threads are scans; otherwise Q grows (and registers with it).
    let most_blocks = hints.span.unwrap_or(MAX_SPAN);
    let mut blocks = 1u32;
    let mut lane_halo = false;
    let mut span_block = 0u32;
    let too_long = max_len.div_ceil(SPAN_Q as u64) > max_t as u64;
    let carries = carries_only(func, sel);
    // Chains of carries span blocks from 2^17 bits (although one block holds them up to 2^18) to
    // carry with halo lanes, in the first block size that gives them ([`CHAIN_SPAN_BLOCKS`]).
    let chain = hints.span.is_none()
        && hints.block_threads.is_none()
        && carries
        && steps > 2
        && max_len >= CHAIN_SPAN_FROM;
    if (too_long || hints.span.is_some() || chain) && most_blocks > 1 && spans_blocks(func, sel) {
        let (q, b) = span_shape(steps, carries);
        let candidates = if chain {
            CHAIN_SPAN_BLOCKS.to_vec()
        } else {
            vec![hints.block_threads.unwrap_or(b).min(max_t)]
        };
        let span_q = hints.q.unwrap_or(q).max(1) as u64;
        let spread = max_len.div_ceil(span_q);
        let mut first = None;
        for candidate in candidates {
            if !candidate.is_power_of_two() || candidate < 64 {
                return Err(CodegenError::Unsupported(format!(
                    "block size {candidate}: an instance that spans blocks needs a power of two of at least 64 threads"
                )));
            }
            let shape = |halo: bool| {
                let owning = if halo {
                    candidate / 32 * WARP_OWNERS
                } else {
                    candidate
                };
                let blocks = spread.div_ceil(owning as u64).clamp(1, most_blocks as u64) as u32;
                (blocks, blocks * owning)
            };
            // Halo lanes where the chain of carries fits the limbs a thread ends up with.
            let halo = lane_halo_pays(func, sel, max_len.div_ceil(shape(true).1 as u64));
            let (b, threads) = shape(halo);
            first.get_or_insert((b, threads, halo, candidate));
            // A requested span that one block would hold leaves the one-block schedule as it
            // is; a chain takes the first block size with halo lanes and whole 16-byte vectors
            // per thread, or (too long for one block) the first.
            let take = if chain {
                b > 1 && halo && max_len.div_ceil(threads as u64).is_multiple_of(2)
            } else {
                b > 1 || too_long
            };
            if take {
                (blocks, t, lane_halo, span_block) = (b, threads, halo, candidate);
                break;
            }
        }
        if blocks == 1 && too_long {
            (blocks, t, lane_halo, span_block) = first.expect("one block size at least");
        }
        if blocks > 1 && chain && !too_long {
            decisions.push(format!(
                "a chain of {steps} carry scans over {max_len} elements: instances span blocks (although one would hold them) to carry with halo lanes, not a block barrier per scan"
            ));
        }
        if blocks > 1 {
            decisions.push(format!(
                "{max_len}-element arrays at Q={span_q} need {spread} threads: each instance spans {blocks} blocks, {}",
                if lane_halo {
                    "lane 0 of each warp a halo that decides the carries into the warp (the warp before waited for only where it propagates)"
                } else if steps > 0 {
                    "its scans resolved across them by look-back"
                } else {
                    "which need nothing from each other (element-wise work, gathers from parameters in global memory)"
                }
            ));
        }
    }
    let mul_width = hints
        .mul_width
        .unwrap_or(mul::DEFAULT_WIDTH)
        .clamp(2, mul::MAX_WIDTH);
    // Products are the heaviest work: their slices decide the threads per instance.
    let products: Vec<u64> = sel
        .products()
        .filter_map(|(_, p)| match p {
            Product::Classical { out_len, .. } => Some(*out_len),
            _ => None,
        })
        .collect();
    // NTT products want 32 transform elements per thread (`NttPlan::threads`).
    let ntt_threads = sel
        .products()
        .filter(|(_, p)| matches!(p, Product::Ntt(_)))
        .map(|(_, p)| p.threads(mul_width))
        .max();
    if let Some(&widest) = products.iter().max() {
        if hints.q.is_none() {
            t = mul::threads_for(widest, mul_width).min(max_t);
        }
        let needed = mul::threads_for(widest, mul::MAX_WIDTH).min(max_t);
        if t < needed {
            t = needed;
            decisions.push(format!(
                "T raised to {t} so that product slices stay within {} digits",
                mul::MAX_WIDTH
            ));
        }
        decisions.push(format!(
            "classical product(s) in slices of about {mul_width} 32-bit digits, two slices per thread"
        ));
    }
    // Polynomial products: eight butterflies per thread and stage.
    let poly_threads = sel
        .products()
        .filter(|(_, p)| matches!(p, Product::Poly(_)))
        .map(|(_, p)| p.threads(mul_width))
        .max();
    if let Some(pt) = poly_threads {
        let pt = pt.min(max_t);
        if hints.q.is_none() || t < pt {
            t = t.max(pt);
        }
        decisions.push(format!(
            "polynomial product(s): {pt} threads per instance, eight butterflies each per stage"
        ));
    }
    if let Some(nt) = ntt_threads {
        let nt = nt.min(max_t);
        // A `q` hint may halve them: 64 elements per thread, two cubes one after the other.
        let fewest = if hints.q.is_some() {
            (nt / 2).max(32)
        } else {
            nt
        };
        if products.is_empty() && hints.q.is_none() || t < fewest {
            t = nt;
        }
        decisions.push(format!(
            "NTT product(s): {t} threads per instance give {} transform elements each",
            (nt << crate::ntt::ELEMENTS_LOG) / t
        ));
    }
    // A power modulo a big integer in a program of one thread per instance (one-element arrays)
    // runs on the group of threads its plan asks for: a thread's share of the registers.
    let heavy = crate::montgomery::has_one_thread_op(func);
    let products_of = |limbs: usize| {
        max_len == 1
            && func.any_op(&|op| {
                matches!(op, Op::LimbMulWords(_, _, n) | Op::LimbMulAddWords(_, _, _, n) if *n >= limbs)
            })
    };
    let wide_products = products_of(WIDE_PRODUCT_LIMBS);
    let classical = sel
        .products()
        .any(|(_, p)| matches!(p, crate::isel::Product::Classical { .. }));
    let grouped: Vec<Grouped> = crate::group::plans(func)
        .into_iter()
        .map(|p| {
            if max_len == 1 {
                p
            } else {
                p.with_threads(1).expect("one thread computes any of them")
            }
        })
        .collect();
    // Every power, gcd and inverse of the program must split over the group (limbs of other
    // widths may not).
    let group = hints
        .pow_mod_group
        .or_else(|| grouped.iter().map(|p| p.threads()).max());
    if let Some(g) = group.filter(|_| max_len == 1 && !grouped.is_empty()) {
        if let Some(p) = grouped.iter().find(|p| p.with_threads(g).is_err()) {
            if hints.pow_mod_group.is_some() {
                return Err(p.with_threads(g).expect_err("this plan refused the group"));
            }
        } else if g > 1 && hints.q.is_none() {
            t = g.min(max_t);
            decisions.push(format!(
                "{g} threads per instance compute each power, gcd and inverse together"
            ));
        }
    }
    decisions.extend(grouped.iter().map(|p| p.describe()));
    let q_at = |t: u32| max_len.div_ceil(t as u64) as u32;
    let regs_at = |t: u32| {
        register_estimate(
            func,
            &|len: u64| len.div_ceil(t as u64).max(1) as u32,
            mul_width,
        )
    };
    match hints.q {
        Some(q) => decisions.push(format!("Q={q} requested")),
        None if blocks > 1 => {}
        None => decisions.push(format!(
            "Q={want_q} from the cost model ({steps} cross-thread step(s), {max_len}-element arrays)"
        )),
    }
    // More threads per instance lower the registers each thread needs.
    // (Not for arrays of one element, one thread per instance: more threads would idle.)
    while regs_at(t) > target.max_regs_per_thread
        && (t < max_t || (blocks > 1 && blocks < most_blocks))
        && (t as u64) < max_len
    {
        // Instances that span blocks take more blocks.
        blocks = if blocks > 1 { blocks * 2 } else { 1 };
        t *= 2;
        decisions.push(format!(
            "T doubled to {t}: too many registers at Q={}",
            q_at(t / 2)
        ));
    }
    let est = regs_at(t);
    if est > target.max_regs_per_thread && max_len == 1 {
        // One thread per instance (crate::per_thread): more threads cannot share the values, and
        // the CUDA compiler keeps the excess in local memory (explain shows the spills).
        decisions.push(format!(
            "about {est} registers per thread at one thread per instance: the excess spills to local memory"
        ));
    } else if est > target.max_regs_per_thread {
        return Err(CodegenError::TooBig(format!(
            "`{}` needs about {est} registers per thread with {t} threads per instance \
             ({} elements each); a thread has {}. Use a smaller size or fewer simultaneous values.",
            func.name,
            q_at(t),
            target.max_regs_per_thread
        )));
    }
    let q = q_at(t);
    decisions.push(format!(
        "T={t} threads per instance, Q={q} elements per thread for {max_len}-element arrays{}",
        if t as u64 * q as u64 > max_len {
            format!(" ({} padding elements)", t as u64 * q as u64 - max_len)
        } else {
            String::new()
        }
    ));

    let block = match hints.block_threads {
        _ if blocks > 1 => span_block,
        Some(b) => {
            if b % 32 != 0 || b < t || b > max_t || b % t != 0 {
                return Err(CodegenError::Unsupported(format!(
                    "block size {b}: it must be a multiple of 32 and of the {t} threads per instance, at most {max_t}"
                )));
            }
            decisions.push(format!("block of {b} threads requested"));
            b
        }
        // A power modulo a big integer, a gcd or an inverse takes many registers per thread:
        // smaller blocks let the SM hold as many as its registers allow, not whole 256-thread
        // blocks only.
        None if heavy => t.max(POW_MOD_BLOCK.min(max_t)).max(32),
        None if wide_products => {
            decisions.push(format!(
                "blocks of {WIDE_PRODUCT_BLOCK} threads: one thread per instance computes \
                 products of {WIDE_PRODUCT_LIMBS} limbs or more, which need more registers \
                 than 256-thread blocks leave"
            ));
            WIDE_PRODUCT_BLOCK
        }
        None if classical => {
            let b = t.max(CLASSICAL_BLOCK.min(max_t)).max(32);
            decisions.push(format!(
                "blocks of {b} threads for a classical product: less shared staging per block, \
                 the same threads per SM"
            ));
            b
        }
        None => t.max(PREFERRED_BLOCK.min(max_t)).max(32),
    };
    let ipb = if blocks > 1 { 1 } else { block / t };
    // At least 16 warps per SM keep shared-memory and carry latencies hidden; the cap this puts on
    // registers (128 with 256-thread blocks) only binds programs that would otherwise crowd out
    // other blocks (Poly, NTT products).
    let group_threads = if max_len == 1 && grouped.iter().all(|p| p.with_threads(t).is_ok()) {
        t
    } else {
        1
    };
    // A power modulo a big integer needs its registers (the plan's estimate) more than company.
    // A group's threads need few: room for as many blocks as that estimate allows, which also
    // keeps the CUDA compiler from holding whole operands in registers around the power.
    let default_min_blocks = if wide_products && !heavy {
        if products_of(2 * WIDE_PRODUCT_LIMBS) {
            WIDER_PRODUCT_MIN_BLOCKS
        } else {
            WIDE_PRODUCT_MIN_BLOCKS
        }
    } else if !heavy {
        (512 / block).max(1)
    } else if group_threads > 1 {
        let regs = grouped
            .iter()
            .map(|p| {
                p.with_threads(t)
                    .expect("the group splits every one")
                    .registers()
            })
            .max()
            .unwrap_or(255);
        (target.regs_per_sm / (block * regs)).max(1)
    } else if t == 1 && crate::divide::roots_in_local_memory_only(func) {
        if hints.min_blocks.is_none() {
            decisions.push(format!(
                "room for {ROOT_FUNCTION_MIN_BLOCKS} blocks per SM: the program's square roots \
                 keep their numbers in local memory and wait on its latency"
            ));
        }
        ROOT_FUNCTION_MIN_BLOCKS
    } else {
        1
    };
    let min_blocks = hints.min_blocks.unwrap_or(default_min_blocks).max(1);
    let per_word = ops_per_word(func);
    let widest = widest_tuple(func);
    let tuples_coalesced = t == 1
        && max_len == 1
        && per_word <= TUPLES_COALESCED_UP_TO
        && widest <= crate::place::TUPLE_MAX_WORDS;
    if t == 1 && max_len == 1 {
        decisions.push(format!(
            "{per_word} scalar operations per word moved, values of up to {widest} words: whole big integers {} (at most {} operations per word and {} words go through the warps' transposition buffers)",
            if tuples_coalesced {
                "read and written through the warps' transposition buffers, whole lines per access"
            } else {
                "read and written directly"
            },
            TUPLES_COALESCED_UP_TO,
            crate::place::TUPLE_MAX_WORDS
        ));
    }
    let mut sched = Schedule {
        tuples_coalesced,
        wide_coalesced: generic_scans(func, sel),
        group_threads,
        threads_per_instance: t,
        blocks_per_instance: blocks,
        lane_halo,
        instances_per_block: ipb,
        block_threads: block,
        max_len,
        q,
        est_registers: est,
        mul_width,
        min_blocks,
        shared_limit: target.max_shared_per_block,
        prefetch_ahead: 0,
        read_coordinates: hints.read_coordinates == Some(true) && blocks == 1,
        park_values: hints.park_values == Some(true) && blocks == 1 && t == 1,
        decisions,
    };
    // Coalesced accesses (`place::coalesced_vectors`) cost a few registers; with 512-thread
    // blocks that is the step from three blocks per SM to two: 6-Add at 2^17 bits took 45
    // registers and ran at 76.5% of the copy, 86.7% when held to three blocks (40 registers;
    // 85.8% before coalescing; H200, bench/RESULTS.md, 2026-11-25). 256-thread blocks lost with
    // such a cap (98% -> 93%), so they keep theirs.
    if hints.min_blocks.is_none() && blocks > 1 && generic_scans(func, sel) {
        sched.min_blocks = SPAN_SCAN_MIN_BLOCKS;
    }
    let coalesced = crate::place::words_coalesced(func, sel, &sched);
    if hints.min_blocks.is_none() && coalesced && block == 512 {
        sched.min_blocks = 3;
    }
    sched.prefetch_ahead = lookback_prefetch(func, &sched, target);
    if sched.prefetch_ahead > 0 {
        sched.decisions.push(format!(
            "before it looks back, each block prefetches into L2 the tiles of the block {} later \
             (half the blocks resident), which keeps memory busy while blocks wait",
            sched.prefetch_ahead
        ));
    }
    sched.decisions.push(format!(
        "__launch_bounds__({block}, {}): at most {} registers per thread",
        sched.min_blocks,
        sched.register_cap(target)
    ));
    sched.decisions.push(if blocks > 1 {
        format!("each instance spans {blocks} blocks of {block} threads")
    } else {
        format!("{ipb} instance(s) per block of {block} threads")
    });
    sched
        .decisions
        .push(format!("about {est} registers per thread (estimate)"));
    Ok(sched)
}

#[cfg(test)]
mod tests {
    use super::{choose_q, Hints, TUPLES_COALESCED_UP_TO};
    use bigfuse_core::{Builder, Size, Type};

    /// A lone product moves its big integers through the warps' buffers, and so does Poly from
    /// 256 bits (whole products in device functions); Poly of column sums (128 bits) and a power
    /// do not; explain says which and why.
    #[test]
    fn one_thread_programs_coalesce_what_computes_little() {
        let kernel = |bits: u64, poly: bool, power: bool| {
            let mut b = Builder::new("k", &[]);
            let ty = Type::Big(Size::lit(bits));
            let x = b.param("a", ty.clone());
            let y = b.param("b", ty);
            let r = if power {
                b.pow_mod(x, y, y).unwrap()
            } else if poly {
                crate::per_thread::poly(&mut b, x, y)
            } else {
                b.mul(x, y).unwrap()
            };
            let f = b.finish(&[r]).unwrap();
            crate::compile(&f, &[], &crate::Target::h100(), &Hints::default()).unwrap()
        };
        for (bits, poly, power, want) in [
            (512, false, false, true),
            (256, false, false, true),
            (256, true, false, true),
            (512, true, false, true),
            (1024, true, false, true),
            (128, true, false, false),
            (256, false, true, false),
        ] {
            let c = kernel(bits, poly, power);
            assert_eq!(
                c.schedule.tuples_coalesced, want,
                "{bits} bits, poly {poly}"
            );
            assert_eq!(
                c.source.contains("through the warp's buffer"),
                want,
                "{bits} bits, poly {poly}"
            );
            let line = c
                .schedule
                .decisions
                .iter()
                .find(|d| d.contains("per word moved"))
                .expect("explain says why");
            assert!(line.contains(&TUPLES_COALESCED_UP_TO.to_string()), "{line}");
        }
    }

    #[test]
    fn hints_read_back_what_they_write() {
        let h = Hints {
            q: Some(4),
            min_blocks: Some(1),
            ntt_from_bits: Some(1 << 15),
            per_thread: Some(true),
            pow_mod_group: Some(4),
            divide_whole_bits: Some(8192),
            ..Hints::default()
        };
        let text = h.to_string();
        assert_eq!(
            text,
            "q=4,block=-,width=-,minb=1,ntt=32768,chunk=-,thread=1,group=4,divw=8192,span=-,gntt=-,coords=-,park=-"
        );
        assert_eq!(Hints::default().with(&text), Ok((h.clone(), 13)));
        // Overrides apply on top of a base; `-` clears.
        let (g, n) = h.clone().with("block=256,q=-").unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            (g.q, g.block_threads, g.min_blocks),
            (None, Some(256), Some(1))
        );
        for bad in ["q", "q=x", "q=99999999999", "speed=3", "thread=2", "span=0"] {
            assert!(Hints::default().with(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hints_parse_from_their_text_form() {
        let h: Hints = "q=2, minb=1".parse().unwrap();
        assert_eq!(
            h,
            Hints {
                q: Some(2),
                min_blocks: Some(1),
                ..Hints::default()
            }
        );
        assert_eq!(h.to_string().parse::<Hints>(), Ok(h));
        assert_eq!("".parse::<Hints>(), Ok(Hints::default()));
        assert!("q=2;block=256".parse::<Hints>().is_err());
    }

    /// With the `serde` feature (on in workspace builds: the bench turns it on), hints are their
    /// text form as a string, read back by the one parser.
    #[cfg(feature = "serde")]
    mod serde_form {
        use super::Hints;
        use proptest::prelude::*;
        use std::collections::BTreeMap;

        #[test]
        fn hints_serialize_as_their_text_form() {
            let h = Hints {
                q: Some(4),
                min_blocks: Some(1),
                ntt_from_bits: Some(1 << 15),
                ..Hints::default()
            };
            let json = serde_json::to_string(&h).unwrap();
            assert_eq!(
                json,
                r#""q=4,block=-,width=-,minb=1,ntt=32768,chunk=-,thread=-,group=-,divw=-,span=-,gntt=-,coords=-,park=-""#
            );
            assert_eq!(serde_json::from_str::<Hints>(&json).unwrap(), h);
            // Inside other values, and the keys the text leaves out are no hint.
            let map: BTreeMap<String, Hints> =
                serde_json::from_str(r#"{"tuned": "q=8,block=512", "none": ""}"#).unwrap();
            assert_eq!(map["tuned"].q, Some(8));
            assert_eq!(map["tuned"].block_threads, Some(512));
            assert_eq!(map["tuned"].chunk_len, None);
            assert_eq!(map["none"], Hints::default());
            let back: BTreeMap<String, Hints> =
                serde_json::from_str(&serde_json::to_string(&map).unwrap()).unwrap();
            assert_eq!(back, map);
        }

        #[test]
        fn garbage_is_rejected_with_the_reason() {
            let err = |json: &str| match serde_json::from_str::<Hints>(json) {
                Ok(h) => panic!("{json} read as {h:?}"),
                Err(e) => e.to_string(),
            };
            let cases = [
                (
                    r#""q=x""#,
                    "invalid hints \"q=x\": `q=x`: x is not a number",
                ),
                (r#""speed=3""#, "unknown schedule key `speed`"),
                (r#""q""#, "`q`: write key=value"),
                (r#""q=99999999999""#, "`q=99999999999`: too large"),
                (r#""ntt=-1""#, "-1 is not a number"),
                ("4", "expected hints as text"),
                ("null", "expected hints as text"),
                (r#"{"q": 2}"#, "expected hints as text"),
            ];
            for (json, why) in cases {
                let e = err(json);
                assert!(e.contains(why), "{json}: {e}");
            }
        }

        fn hint<T: std::fmt::Debug + Clone + 'static>(
            value: impl Strategy<Value = T> + 'static,
        ) -> impl Strategy<Value = Option<T>> {
            prop_oneof![Just(None), value.prop_map(Some)]
        }

        proptest! {
            #[test]
            fn every_hints_value_round_trips(
                q in hint(any::<u32>()),
                block_threads in hint(any::<u32>()),
                mul_width in hint(any::<u32>()),
                ntt_from_bits in hint(any::<u64>()),
                min_blocks in hint(any::<u32>()),
                chunk_len in hint(any::<u64>()),
                per_thread in hint(any::<bool>()),
                pow_mod_group in hint(any::<u32>()),
                divide_whole_bits in hint(any::<u64>()),
                span in hint(1..=u32::MAX),
                global_ntt_from_bits in hint(any::<u64>()),
                read_coordinates in hint(any::<bool>()),
                park_values in hint(any::<bool>()),
            ) {
                let h = Hints {
                    q, block_threads, mul_width, ntt_from_bits, min_blocks, chunk_len, per_thread,
                    pow_mod_group, divide_whole_bits, span, global_ntt_from_bits, read_coordinates,
                    park_values,
                };
                let json = serde_json::to_string(&h).unwrap();
                prop_assert_eq!(&json, &format!("\"{h}\""));
                prop_assert_eq!(serde_json::from_str::<Hints>(&json).unwrap(), h);
            }
        }
    }

    #[test]
    fn cost_model_follows_the_measurements() {
        // 1-Add (one step): Q=2 from 2^9 to 2^17 bits, Q=4 at 2^18 (Q=2 would need 2048 threads).
        for log in 9..=17 {
            assert_eq!(choose_q(1 << (log - 6), 1), 2, "2^{log}");
        }
        assert_eq!(choose_q(1 << 12, 1), 4);
        // 6-Add (six steps): one warp per instance while it can, then Q=4 to 512 threads, then 8.
        let six: Vec<u32> = (9..=18).map(|log| choose_q(1 << (log - 6), 6)).collect();
        assert_eq!(six, vec![2, 2, 2, 2, 4, 4, 4, 4, 4, 8]);
    }
}

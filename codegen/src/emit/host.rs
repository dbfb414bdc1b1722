//! Test support: device functions that `emit` writes in plain C, compiled for the host and run
//! (no GPU needed). One home for the compiler call, the prelude that makes CUDA's qualifiers
//! and intrinsics mean their host equivalents, and the exchange with the program.

use num_bigint::BigUint;
use std::process::{Command, Stdio};

/// What every host program starts with: `__device__`, `__forceinline__` and `__align__` as plain
/// C++, the kernels' integer types, CUDA's bit intrinsics and funnel shifts, and its 16-byte
/// vector type.
pub const PRELUDE: &str =
    "#include <stdio.h>\n#define __device__\n#define __forceinline__ inline\n\
typedef unsigned int u32;\ntypedef unsigned long long u64;\n\
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }\n\
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((u64)x); }\n\
static inline int __ffs(int x) { return __builtin_ffs(x); }\n\
static inline u32 __funnelshift_l(u32 lo, u32 hi, u32 s) { s &= 31u; return s ? (hi << s) | (lo >> (32u - s)) : hi; }\n\
static inline u32 __funnelshift_r(u32 lo, u32 hi, u32 s) { s &= 31u; return s ? (lo >> s) | (hi << (32u - s)) : lo; }\n\
#define __align__(n) alignas(n)\n\
struct alignas(16) ulonglong2 { u64 x, y; };\n\
static inline ulonglong2 make_ulonglong2(u64 x, u64 y) { return {x, y}; }\n";

/// Compiles `source` (C++20, with threads, undefined behaviour trapped) and runs it with `input`
/// on its standard input; returns what it wrote. `tag` names its temporary folder.
pub fn run(tag: &str, source: &str, input: &str) -> String {
    let dir = std::env::temp_dir().join(format!("bigfuse-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (file, exe) = (dir.join("p.cpp"), dir.join("p"));
    std::fs::write(&file, source).unwrap();
    let cc = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = Command::new(&cc)
        .args([
            "-O2",
            "-std=c++20",
            "-pthread",
            "-fsanitize=undefined",
            // Device code reads words as 16-byte vectors, as CUDA allows.
            "-fno-strict-aliasing",
            "-fno-sanitize-recover=all",
            "-w",
            "-o",
        ])
        .arg(&exe)
        .arg(&file)
        .output()
        .unwrap_or_else(|e| {
            panic!("the host C++ compiler `{cc}` (set CXX to another) did not run: {e}")
        });
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let mut child = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Written from a thread of its own: the program's output fills its pipe meanwhile.
    let mut stdin = child.stdin.take().unwrap();
    let text = input.to_string();
    let writer = std::thread::spawn(move || {
        use std::io::Write as _;
        stdin.write_all(text.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{tag}: the host program failed");
    String::from_utf8(out.stdout).unwrap()
}

/// `v` as `words` 64-bit limbs in decimal, then a space.
pub fn limbs(v: &BigUint, words: usize) -> String {
    let mut l = v.to_u64_digits();
    l.resize(words, 0);
    l.iter().map(|w| format!("{w} ")).collect()
}

/// Pairs of operands as the host programs read them: per line, `x` as `nx` limbs then `y` as
/// `ny` limbs.
pub fn pairs(cases: &[(BigUint, BigUint)], nx: usize, ny: usize) -> String {
    cases
        .iter()
        .map(|(x, y)| format!("{}{}\n", limbs(x, nx), limbs(y, ny)))
        .collect()
}

/// The number whose 64-bit limbs (decimal, least significant first) these words are.
pub fn number(words: &str) -> BigUint {
    let digits: Vec<u32> = words
        .split_whitespace()
        .flat_map(|w| {
            let v: u64 = w.parse().unwrap();
            [v as u32, (v >> 32) as u32]
        })
        .collect();
    BigUint::from_slice(&digits)
}

/// A small deterministic word generator (xorshift), so that a failing case reproduces.
pub fn words(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// A number of 1..=`words` 32-bit words (a length drawn from `word`) made of edge words (0, 1,
/// 2^31 - 1, 2^31, all ones) and random ones: the shapes that reach a division's rare
/// corrections.
pub fn edge_number(word: &mut impl FnMut() -> u64, words: usize) -> BigUint {
    let len = 1 + (word() as usize) % words;
    let digits: Vec<u32> = (0..len)
        .map(|_| match word() % 8 {
            0 => 0,
            1 => 1,
            2 => 0x7fff_ffff,
            3 => 0x8000_0000,
            4 | 5 => u32::MAX,
            _ => word() as u32,
        })
        .collect();
    BigUint::from_slice(&digits)
}

/// CUDA's warp exchanges (`__shfl_sync`, `__shfl_up_sync`, `__shfl_down_sync`, `__ballot_sync`
/// on 32-bit values) for a group of `g` host threads: each thread sets `bf_lane` (its index) and
/// the program points `bf_bar` at a barrier of `g` threads; every exchange is a write, a barrier,
/// a read and a barrier.
pub fn group_prelude(g: u32) -> String {
    format!(
        r#"#include <thread>
#include <barrier>
#include <vector>
static std::barrier<>* bf_bar;
static u32 bf_x[32];
thread_local int bf_lane;
static u32 bf_swap(u32 v, int from) {{
  bf_x[bf_lane] = v;
  bf_bar->arrive_and_wait();
  const u32 r = bf_x[from];
  bf_bar->arrive_and_wait();
  return r;
}}
// CUDA's: a source lane outside the segment counts modulo its width.
static u32 __shfl_sync(u32, u32 v, int src, int w) {{ return bf_swap(v, (bf_lane & ~(w - 1)) + (src & (w - 1))); }}
static u32 __shfl_down_sync(u32, u32 v, int d, int w) {{
  const int i = (bf_lane & (w - 1)) + d;
  return bf_swap(v, i < w ? (bf_lane & ~(w - 1)) + i : bf_lane);
}}
static u32 __shfl_up_sync(u32, u32 v, int d, int w) {{
  const int i = (bf_lane & (w - 1)) - d;
  return bf_swap(v, i >= 0 ? (bf_lane & ~(w - 1)) + i : bf_lane);
}}
static u32 __ballot_sync(u32, bool p) {{
  bf_x[bf_lane] = p ? 1u : 0u;
  bf_bar->arrive_and_wait();
  u32 r = 0u;
  for (int i = 0; i < {g}; ++i) r |= bf_x[i] << i;
  bf_bar->arrive_and_wait();
  return r;
}}
"#
    )
}

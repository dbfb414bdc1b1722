//! File tests of the compiler passes: IR text in, IR text out (`tests/filetests/<pass>/*.ir`; the
//! format and how to bless are in `tests/filetests/README.md`).
//!
//! Each file is read with `bigfuse_core::parse`, run through one pass, printed, and compared with
//! the text after its `; expect:` line. Input and output are validated, must compute the same on
//! random inputs (so a blessed expectation is at least a correct one), and the output must read
//! back into the same function, so every file also tests the text format on real pass output.

use bigfuse_codegen::{fuse, lower, modular, scalarize};
use bigfuse_core::eval::limbs_to_big;
use bigfuse_core::{eval, parse, print, validate, Func, Type, Value};
use num_bigint::{BigUint, RandBigInt};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The passes a file may name, each the directory of its files.
const PASSES: &[&str] = &["lower", "lower_zp", "scalarize", "fuse", "isel"];

const EXPECT: &str = "; expect:";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests")
}

fn bless() -> bool {
    std::env::var_os("BIGFUSE_BLESS").is_some_and(|v| v != "0" && !v.is_empty())
}

/// The pass's output as text: comment lines for what is not IR (fusion's kernels and notes), then
/// the function.
fn run_pass(pass: &str, input: &Func) -> Result<(Func, String), String> {
    let err = |e: bigfuse_codegen::CodegenError| format!("{pass} failed: {e}");
    let mut comments = String::new();
    let out = match pass {
        "lower" => lower::lower(input).map_err(err)?,
        "lower_zp" => modular::lower_zp(input).map_err(err)?,
        "scalarize" => scalarize::scalarize(input).map_err(err)?,
        "fuse" => {
            let fused = fuse(input).map_err(err)?;
            for k in &fused.kernels {
                let _ = writeln!(comments, "; kernel {:?}: {}", k.nodes, k.reason);
            }
            for n in &fused.notes {
                let _ = writeln!(comments, "; note: {n}");
            }
            fused.func
        }
        // Selection decorates the program: its table comes first, one `; isel` line per choice,
        // and the function is unchanged.
        "isel" => {
            let sel = bigfuse_codegen::isel::select(input).map_err(err)?;
            for line in sel.describe(input) {
                let _ = writeln!(comments, "; isel {line}");
            }
            input.clone()
        }
        other => return Err(format!("unknown pass `{other}` (passes: {PASSES:?})")),
    };
    let text = format!("{comments}{}", print(&out));
    Ok((out, text))
}

/// A random value of a concrete type; a quarter of the scalars and big integers are all zeros or
/// all ones, where carries and borrows run furthest.
fn random_value(r: &mut StdRng, t: &Type) -> Value {
    let extreme = r.gen_range(0..4) == 0;
    let ones = r.gen::<bool>();
    match t {
        Type::Bool => Value::Bool(r.gen()),
        Type::U32 if extreme => Value::U32(if ones { u32::MAX } else { 0 }),
        Type::U32 => Value::U32(r.gen()),
        Type::U64 if extreme => Value::U64(if ones { u64::MAX } else { 0 }),
        Type::U64 => Value::U64(r.gen()),
        Type::Zp(p) => Value::U64(r.gen_range(0..p.as_const().unwrap())),
        Type::Big(bits) => {
            let bits = bits.as_const().unwrap();
            Value::Big(match (extreme, ones) {
                (true, true) => (BigUint::from(1u8) << bits) - 1u8,
                (true, false) => BigUint::default(),
                _ => r.gen_biguint(bits),
            })
        }
        Type::Array(e, n) => Value::Array(
            (0..n.as_const().unwrap())
                .map(|_| random_value(r, e))
                .collect(),
        ),
        Type::Tuple(ts) => Value::Tuple(ts.iter().map(|t| random_value(r, t)).collect()),
    }
}

/// `v` as a value of `to`, the type a pass gave it: big integers that became tuples of limbs (or
/// back). Residues and their forms' u64 integers are the same values already.
fn adapt(v: &Value, to: &Type) -> Value {
    match (v, to) {
        (Value::Big(b), Type::Tuple(ts)) => {
            let mut d = b.to_u64_digits();
            d.resize(ts.len(), 0);
            Value::Tuple(d.into_iter().map(Value::U64).collect())
        }
        (Value::Tuple(vs), Type::Big(_)) => {
            let limbs: Vec<u64> = vs.iter().filter_map(Value::as_u64).collect();
            Value::Big(limbs_to_big(&limbs))
        }
        (Value::Array(vs), Type::Array(e, _)) => {
            Value::Array(vs.iter().map(|v| adapt(v, e)).collect())
        }
        (Value::Tuple(vs), Type::Tuple(ts)) if vs.len() == ts.len() => {
            Value::Tuple(vs.iter().zip(ts).map(|(v, t)| adapt(v, t)).collect())
        }
        _ => v.clone(),
    }
}

/// The pass's output computes what its input does, on random inputs.
fn same_meaning(input: &Func, out: &Func) -> Result<(), String> {
    let mut r = StdRng::seed_from_u64(0x5eed);
    for _ in 0..8 {
        let args: Vec<Value> = input
            .params
            .iter()
            .map(|p| random_value(&mut r, &p.ty))
            .collect();
        let want = eval(input, &args).map_err(|e| format!("evaluating the input: {e}"))?;
        let out_args: Vec<Value> = args
            .iter()
            .zip(&out.params)
            .map(|(a, p)| adapt(a, &p.ty))
            .collect();
        let got = eval(out, &out_args).map_err(|e| format!("evaluating the output: {e}"))?;
        let want: Vec<Value> = want
            .iter()
            .zip(out.output_types())
            .map(|(v, t)| adapt(v, &t))
            .collect();
        if got != want {
            return Err(format!(
                "the output computes something else: on {args:?} the input gives {want:?}, the output {got:?}"
            ));
        }
    }
    Ok(())
}

/// Lines without trailing blanks, and no blank lines at either end.
fn normalize(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let start = lines
        .iter()
        .position(|l| !l.is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(start, |e| e + 1);
    lines[start..end].join("\n") + "\n"
}

/// A line diff (longest common subsequence), `-` expected, `+` actual.
fn diff(expected: &str, actual: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        }
    }
    out
}

/// Runs one file; with `BIGFUSE_BLESS=1` rewrites its expectation instead of comparing.
fn check_file(path: &Path, pass: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let named = first.trim().strip_prefix("; pass:").map(str::trim);
    if named != Some(pass) {
        return Err(format!(
            "the first line must be `; pass: {pass}` (the file's directory), not `{first}`"
        ));
    }
    let (input_text, expected) = match text.lines().position(|l| l.trim() == EXPECT) {
        Some(k) => {
            let lines: Vec<&str> = text.lines().collect();
            (lines[..k].join("\n"), Some(lines[k + 1..].join("\n")))
        }
        None => (text.clone(), None),
    };
    // The input starts the file, so the parser's line numbers are the file's.
    let input = parse(&input_text).map_err(|e| format!("input: {e}"))?;
    validate(&input).map_err(|e| format!("input: {e}"))?;
    let (out, actual) = run_pass(pass, &input)?;
    validate(&out).map_err(|e| format!("output: {e}\n{actual}"))?;
    same_meaning(&input, &out).map_err(|e| format!("{e}\n{actual}"))?;
    match parse(&print(&out)) {
        Ok(back) if back == out => {}
        Ok(_) => return Err(format!("the output reads back differently:\n{actual}")),
        Err(e) => return Err(format!("the output does not read back: {e}\n{actual}")),
    }
    if bless() {
        let blessed = format!("{}\n\n{EXPECT}\n{}", input_text.trim_end(), actual);
        if blessed != text {
            std::fs::write(path, blessed).map_err(|e| format!("cannot write: {e}"))?;
            eprintln!("blessed {}", path.display());
        }
        return Ok(());
    }
    let Some(expected) = expected else {
        return Err(format!(
            "no `{EXPECT}` line: run with BIGFUSE_BLESS=1 to append the output, then review it\n{actual}"
        ));
    };
    if let Err(e) = parse(&expected) {
        return Err(format!("the expected output is not IR text: {e}"));
    }
    let (expected, actual) = (normalize(&expected), normalize(&actual));
    if expected != actual {
        return Err(format!(
            "the output differs (- expected, + actual; BIGFUSE_BLESS=1 accepts it):\n{}",
            diff(&expected, &actual)
        ));
    }
    Ok(())
}

/// Every `.ir` file of a pass's directory; fails listing each file that fails.
fn run_dir(pass: &str) {
    let dir = root().join(pass);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ir"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 3,
        "{}: every pass keeps at least three file tests",
        dir.display()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| {
            check_file(f, pass)
                .err()
                .map(|e| format!("{}: {e}", f.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} file test(s) failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

#[test]
fn lower_files() {
    run_dir("lower");
}

#[test]
fn lower_zp_files() {
    run_dir("lower_zp");
}

#[test]
fn scalarize_files() {
    run_dir("scalarize");
}

#[test]
fn fuse_files() {
    run_dir("fuse");
}

#[test]
fn isel_files() {
    run_dir("isel");
}

#[test]
fn every_directory_is_a_pass() {
    for entry in std::fs::read_dir(root()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                PASSES.contains(&name.as_str()),
                "{}: no pass is named `{name}` (passes: {PASSES:?})",
                path.display()
            );
        }
    }
}

#[test]
fn the_diff_marks_changed_lines() {
    assert_eq!(diff("a\nb\nc\n", "a\nx\nc\n"), "  a\n- b\n+ x\n  c\n");
    assert_eq!(normalize("\n a  \n\nb\n\n"), " a\n\nb\n");
}

#[test]
fn a_changed_meaning_is_caught() {
    let f = parse("fn f(x: u64) -> u64 {\n%0 = param x : u64\n%1 = const 1u64 : u64\n%2 = add %0, %1 : u64\nreturn %2\n}")
        .unwrap();
    let g = parse(&print(&f).replace("1u64", "2u64")).unwrap();
    assert!(same_meaning(&f, &f).is_ok());
    assert!(same_meaning(&f, &g).is_err());
}

//! An addition written out by a user (as the macro frontend produces it) is recognised: its scan is
//! resolved with ballots, its maps are selected as carry chains like the built-in `a + b`, and it
//! computes the sum.

use bigfuse_codegen::{compile, fuse, lower, Hints, Target};
use bigfuse_core::ops::Intrinsic;
use bigfuse_core::{eval, BinOp, Builder, Func, Literal, Op, Size, Type, Value, ValueId};
use num_bigint::{BigUint, RandBigInt};
use rand::SeedableRng;

/// `((hi | ((hi >> 1) & lo)) & 1) | (lo & hi & 2)`, constants made where they appear.
pub fn user_carry() -> Func {
    let mut b = Builder::lambda();
    let lo = b.param("lo", Type::U32);
    let hi = b.param("hi", Type::U32);
    let one = b.u32(1);
    let sh = b.binary(BinOp::Shr, hi, one).unwrap();
    let t = b.and(sh, lo).unwrap();
    let g = b.or(hi, t).unwrap();
    let one = b.u32(1);
    let g = b.and(g, one).unwrap();
    let p = b.and(lo, hi).unwrap();
    let two = b.u32(2);
    let p = b.and(p, two).unwrap();
    let r = b.or(g, p).unwrap();
    b.finish(&[r]).unwrap()
}

/// The body of `|x, y| ..` over either two u64 parameters or one (u64, u64) tuple parameter.
fn lambda2(zipped: bool, body: impl FnOnce(&mut Builder, ValueId, ValueId) -> ValueId) -> Func {
    let mut b = Builder::lambda();
    let (x, y) = if zipped {
        let t = b.param("t", Type::Tuple(vec![Type::U64, Type::U64]));
        (b.extract(t, 0).unwrap(), b.extract(t, 1).unwrap())
    } else {
        (b.param("x", Type::U64), b.param("y", Type::U64))
    };
    let r = body(&mut b, x, y);
    b.finish(&[r]).unwrap()
}

/// `sums = map(+, a, b); flags = map(..); carries = scan(user_carry, 2, exclusive, flags);
/// r = map(|s, c| s + ((c & 1) as u64), sums, carries)` over `a, b: [u64; n]`.
pub fn user_add(n: u64, zipped: bool) -> Func {
    let mut b = Builder::new("user_add", &[]);
    let t = Type::array(Type::U64, Size::lit(n));
    let a = b.param("a", t.clone());
    let c = b.param("b", t);
    let args = if zipped {
        vec![b.zip(&[a, c]).unwrap()]
    } else {
        vec![a, c]
    };
    let sum = lambda2(zipped, |b, x, y| b.add(x, y).unwrap());
    let flags = lambda2(zipped, |b, x, y| {
        let s = b.add(x, y).unwrap();
        let lt = b.lt(s, x).unwrap();
        let g = b.cast(lt, Type::U32).unwrap();
        let max = b.u64(u64::MAX);
        let eq = b.eq(s, max).unwrap();
        let p = b.cast(eq, Type::U32).unwrap();
        let one = b.u32(1);
        let p = b.binary(BinOp::Shl, p, one).unwrap();
        b.or(g, p).unwrap()
    });
    let sums = b.map(sum, &args).unwrap();
    let flags = b.map(flags, &args).unwrap();
    let carries = b
        .scan(user_carry(), Literal::U32(2), true, flags, None)
        .unwrap();
    let apply = {
        let mut l = Builder::lambda();
        let s = l.param("s", Type::U64);
        let c = l.param("c", Type::U32);
        let one = l.u32(1);
        let bit = l.and(c, one).unwrap();
        let bit = l.cast(bit, Type::U64).unwrap();
        let r = l.add(s, bit).unwrap();
        l.finish(&[r]).unwrap()
    };
    let r = b.map(apply, &[sums, carries]).unwrap();
    b.finish(&[r]).unwrap()
}

/// The built-in `a + b` over `U<BITS>`.
fn builtin_add() -> Func {
    let mut b = Builder::new("add", &["BITS"]);
    let t = Type::Big(Size::param(0));
    let x = b.param("a", t.clone());
    let y = b.param("b", t);
    let r = b.add(x, y).unwrap();
    b.finish(&[r]).unwrap()
}

fn limbs(v: &BigUint, n: u64) -> Value {
    let mut d = v.to_u64_digits();
    d.resize(n as usize, 0);
    Value::Array(d.into_iter().map(Value::U64).collect())
}

fn to_big(v: &Value) -> BigUint {
    let Value::Array(xs) = v else {
        panic!("expected limbs, got {v:?}")
    };
    let d: Vec<u64> = xs.iter().map(|x| x.as_u64().unwrap()).collect();
    bigfuse_core::eval::limbs_to_big(&d)
}

fn cases(n: u64) -> Vec<(BigUint, BigUint)> {
    let bits = 64 * n;
    let one = BigUint::from(1u8);
    let max = (&one << bits) - 1u8;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut v = vec![
        (BigUint::from(0u8), BigUint::from(0u8)),
        (max.clone(), one.clone()), // a carry through every limb
        (one.clone(), max.clone()),
        (max.clone(), max.clone()),
        (max.clone(), BigUint::from(0u8)),
        // a carry out of limb 0 running to the top limb
        (&max - (&one << 64u32) + 1u8, BigUint::from(u64::MAX)),
    ];
    for _ in 0..4 {
        v.push((rng.gen_biguint(bits), rng.gen_biguint(bits)));
    }
    v
}

#[test]
fn user_addition_is_recognised_and_adds() {
    for n in [64u64, 4096] {
        for zipped in [false, true] {
            let f = user_add(n, zipped);
            let fused = fuse(&lower(&f).unwrap()).unwrap();
            // The built-in pattern: partial map, flags, scan, apply, nothing else computed.
            let maps: Vec<&Func> = fused
                .func
                .nodes
                .iter()
                .filter_map(|n| match &n.op {
                    Op::Map { f, .. } => Some(&**f),
                    _ => None,
                })
                .collect();
            let pattern = [
                Intrinsic::LimbPartial { sub: false },
                Intrinsic::CarryFlags,
                Intrinsic::ApplyCarry { sub: false },
            ]
            .map(|i| i.func());
            assert_eq!(maps, pattern, "n={n} zipped={zipped}: {:?}", fused.notes);
            let modulus = BigUint::from(1u8) << (64 * n);
            for (a, b) in cases(n) {
                let inputs = [limbs(&a, n), limbs(&b, n)];
                let want = (&a + &b) % &modulus;
                assert_eq!(to_big(&eval(&f, &inputs).unwrap()[0]), want);
                assert_eq!(
                    to_big(&eval(&fused.func, &inputs).unwrap()[0]),
                    want,
                    "n={n} zipped={zipped} a={a:x} b={b:x}"
                );
            }
        }
    }
}

/// The kernel text without comments and with value names numbered in order of appearance, so
/// that two programs computing the same thing through differently numbered IR compare equal.
fn normalised(src: &str) -> String {
    let mut names: std::collections::HashMap<String, usize> = Default::default();
    let mut out = String::new();
    for line in src.lines() {
        let code = line.split("//").next().unwrap().trim_end();
        if code.trim().is_empty() || code.contains("__global__") {
            continue;
        }
        let mut word = String::new();
        let flush = |word: &mut String,
                     out: &mut String,
                     names: &mut std::collections::HashMap<String, usize>| {
            if word.len() > 1
                && word.starts_with('v')
                && word[1..].chars().all(|c| c.is_ascii_digit() || c == '_')
            {
                let k = names.len();
                let id = *names.entry(word.clone()).or_insert(k);
                out.push_str(&format!("V{id}"));
            } else {
                out.push_str(word);
            }
            word.clear();
        };
        for ch in code.chars() {
            if ch.is_ascii_alphanumeric() || ch == '_' {
                word.push(ch);
            } else {
                flush(&mut word, &mut out, &mut names);
                out.push(ch);
            }
        }
        flush(&mut word, &mut out, &mut names);
        out.push('\n');
    }
    out
}

#[test]
fn user_addition_costs_what_the_builtin_costs() {
    for n in [64u64, 4096] {
        let user = compile(&user_add(n, false), &[], &Target::h200(), &Hints::default()).unwrap();
        let builtin = compile(
            &builtin_add(),
            &[64 * n],
            &Target::h200(),
            &Hints::default(),
        )
        .unwrap();
        assert!(user.source.contains("with carry chains"), "{}", user.source);
        assert_eq!(
            user.schedule.threads_per_instance,
            builtin.schedule.threads_per_instance
        );
        assert_eq!(user.placement.shared_bytes, builtin.placement.shared_bytes);
        assert_eq!(
            normalised(&user.source),
            normalised(&builtin.source),
            "n={n}"
        );
    }
}

#[test]
fn user_addition_cuda_snapshot() {
    let c = compile(
        &user_add(64, false),
        &[],
        &Target::h200(),
        &Hints::default(),
    )
    .unwrap();
    insta::assert_snapshot!("user_add_64", c.source);
}

/// `a - b` written out: differences, borrow flags `(x < y) | (x == y) << 1`, the same scan, and
/// `d - (c & 1)`; or, with `wrong`, flags `(x <= y) | ..`, which are not borrows.
pub fn user_sub(n: u64, wrong: bool) -> Func {
    let mut b = Builder::new("user_sub", &[]);
    let t = Type::array(Type::U64, Size::lit(n));
    let a = b.param("a", t.clone());
    let c = b.param("b", t);
    let diff = lambda2(false, |b, x, y| b.sub(x, y).unwrap());
    let flags = lambda2(false, |b, x, y| {
        let lt = if wrong {
            b.le(x, y).unwrap()
        } else {
            b.lt(x, y).unwrap()
        };
        let g = b.cast(lt, Type::U32).unwrap();
        let eq = b.eq(y, x).unwrap();
        let p = b.cast(eq, Type::U32).unwrap();
        let one = b.u32(1);
        let p = b.binary(BinOp::Shl, p, one).unwrap();
        b.or(p, g).unwrap()
    });
    let diffs = b.map(diff, &[a, c]).unwrap();
    let flags = b.map(flags, &[a, c]).unwrap();
    let borrows = b
        .scan(user_carry(), Literal::U32(2), true, flags, None)
        .unwrap();
    let apply = {
        let mut l = Builder::lambda();
        let c = l.param("c", Type::U32);
        let d = l.param("d", Type::U64);
        let one = l.u32(1);
        let bit = l.and(one, c).unwrap();
        let bit = l.cast(bit, Type::U64).unwrap();
        let r = l.sub(d, bit).unwrap();
        l.finish(&[r]).unwrap()
    };
    let r = b.map(apply, &[borrows, diffs]).unwrap();
    b.finish(&[r]).unwrap()
}

#[test]
fn user_subtraction_is_recognised_and_a_wrong_one_is_not() {
    let n = 64;
    let modulus = BigUint::from(1u8) << (64 * n);
    for wrong in [false, true] {
        let f = user_sub(n, wrong);
        let fused = fuse(&lower(&f).unwrap()).unwrap();
        let selected = fused
            .func
            .nodes
            .iter()
            .any(|n| matches!(&n.op, Op::Map { f, .. } if Intrinsic::of(f) == Some(Intrinsic::LimbPartial { sub: true })));
        assert_eq!(selected, !wrong, "{:?}", fused.notes);
        for (a, b) in cases(n) {
            let inputs = [limbs(&a, n), limbs(&b, n)];
            let want = eval(&f, &inputs).unwrap();
            assert_eq!(eval(&fused.func, &inputs).unwrap(), want);
            if !wrong {
                assert_eq!(to_big(&want[0]), (&a + &modulus - &b) % &modulus);
            }
        }
        // Either way the kernel is generated (the wrong one with its own scan).
        let c = compile(&f, &[], &Target::h200(), &Hints::default()).unwrap();
        assert_eq!(c.source.contains("with carry chains"), !wrong);
        if wrong {
            // Still a carry scan (its flag words may be 3): ballots, lanes' carries read with
            // the generating lanes' propagate bits masked.
            assert!(c.source.contains("__ballot_sync"));
            assert!(c.source.contains(" & ~x"), "{}", c.source);
        }
    }
}

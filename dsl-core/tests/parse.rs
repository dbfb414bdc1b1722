//! The text of `print` reads back into the same function (`parse(print(f)) == f`), for hand-written
//! programs that use every operation and for random programs; bad text gives an error that names
//! its line, never a panic.

use bigfuse_core::{
    eval, ops, parse, print, specialize, validate, BinOp, Builder, Func, Literal, MulAlgo, ShiftOp,
    Size, Type, UnOp, Value, ValueId,
};
use num_bigint::BigUint;
use proptest::prelude::*;

/// A small deterministic generator, so that random inputs reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn random_value(r: &mut Rng, t: &Type) -> Value {
    match t {
        Type::Bool => Value::Bool(r.next() & 1 == 1),
        Type::U32 => Value::U32(r.next() as u32),
        Type::U64 => Value::U64(r.next()),
        Type::Zp(p) => Value::U64(r.next() % p.as_const().unwrap()),
        Type::Big(bits) => {
            let bits = bits.as_const().unwrap();
            let limbs: Vec<u32> = (0..bits / 32).map(|_| r.next() as u32).collect();
            Value::Big(BigUint::new(limbs))
        }
        Type::Array(e, n) => Value::Array(
            (0..n.as_const().unwrap())
                .map(|_| random_value(r, e))
                .collect(),
        ),
        Type::Tuple(ts) => Value::Tuple(ts.iter().map(|t| random_value(r, t)).collect()),
    }
}

/// Reads `print(f)` back and checks that nothing was lost: the same function, the same text, and
/// (at `sizes`) the same results on random inputs.
fn round_trip(f: &Func, sizes: &[u64]) {
    validate(f).unwrap();
    let text = print(f);
    let back = parse(&text).unwrap_or_else(|e| panic!("{e}\nin\n{text}"));
    assert_eq!(print(&back), text);
    assert_eq!(&back, f, "the text was\n{text}");
    validate(&back).unwrap();
    let (f, back) = (
        specialize(f, sizes).unwrap(),
        specialize(&back, sizes).unwrap(),
    );
    let mut r = Rng(0x9e3779b97f4a7c15);
    for _ in 0..4 {
        let inputs: Vec<Value> = f
            .params
            .iter()
            .map(|p| random_value(&mut r, &p.ty))
            .collect();
        assert_eq!(eval(&f, &inputs).unwrap(), eval(&back, &inputs).unwrap());
    }
}

fn lambda(params: &[(&str, Type)], body: impl FnOnce(&mut Builder, &[ValueId]) -> ValueId) -> Func {
    let mut l = Builder::lambda();
    let ps: Vec<ValueId> = params.iter().map(|(n, t)| l.param(n, t.clone())).collect();
    let r = body(&mut l, &ps);
    l.finish(&[r]).unwrap()
}

#[test]
fn bit_operations_on_big_integers() {
    let mut b = Builder::new("bits", &["BITS"]);
    let ty = Type::Big(Size::param(0));
    let x = b.param("x", ty.clone());
    let y = b.param("y", ty.clone());
    let k = b.param("k", Type::U32);
    let w = b.param("w", Type::U64);
    let mut outs = vec![b.not(x).unwrap()];
    outs.push(b.and(x, y).unwrap());
    outs.push(b.or(x, y).unwrap());
    outs.push(b.xor(x, y).unwrap());
    for op in ShiftOp::ALL {
        outs.push(b.shift(op, x, k).unwrap());
    }
    for op in UnOp::ALL.into_iter().filter(|u| u.is_count()) {
        outs.push(b.count(op, x).unwrap());
        outs.push(b.count(op, w).unwrap());
        outs.push(b.count(op, k).unwrap());
    }
    outs.push(b.bit(x, k).unwrap());
    outs.push(b.cast(x, Type::Big(Size::lit(128))).unwrap());
    outs.push(b.cast(x, Type::U64).unwrap());
    outs.push(b.cast(x, Type::U32).unwrap());
    round_trip(&b.finish(&outs).unwrap(), &[192]);

    let mut b = Builder::new("gather", &[]);
    let x = b.param("x", Type::Big(Size::lit(256)));
    let l = b.limbs(x).unwrap();
    let n = b.iota(Size::lit(6)).unwrap();
    let g = b.gather(l, n).unwrap();
    round_trip(&b.finish(&[g]).unwrap(), &[]);
}

#[test]
fn scalar_operations() {
    let mut b = Builder::new("scalars", &[]);
    let p = b.param("p", Type::Bool);
    let x = b.param("x", Type::U32);
    let y = b.param("y", Type::U64);
    let q = b.bool(false);
    let seven = b.u32(7);
    let max = b.u64(u64::MAX);
    let nested = b.constant(Literal::Tuple(vec![
        Literal::U32(2),
        Literal::Tuple(vec![Literal::Bool(true), Literal::U64(1)]),
        Literal::Tuple(vec![]),
    ]));
    let mut outs = vec![nested];
    for op in BinOp::ALL {
        outs.push(b.binary(op, y, max).unwrap());
        outs.push(b.binary(op, x, seven).unwrap());
    }
    for op in [BinOp::And, BinOp::Or, BinOp::Xor, BinOp::Eq, BinOp::Ne] {
        outs.push(b.binary(op, p, q).unwrap());
    }
    outs.push(b.not(p).unwrap());
    outs.push(b.not(x).unwrap());
    let wide = b.cast(x, Type::U64).unwrap();
    let narrow = b.cast(y, Type::U32).unwrap();
    let bit = b.cast(p, Type::U64).unwrap();
    let s = b.select(p, wide, bit).unwrap();
    let t = b.tuple(&[narrow, s, p]).unwrap();
    let one = b.tuple(&[s]).unwrap();
    let none = b.tuple(&[]).unwrap();
    let e = b.extract(t, 1).unwrap();
    outs.extend([t, one, none, e]);
    round_trip(&b.finish(&outs).unwrap(), &[]);
}

#[test]
fn big_integer_operations_with_symbolic_sizes() {
    let mut b = Builder::new("bigs", &["BITS"]);
    let big = Type::Big(Size::param(0));
    let a = b.param("a", big.clone());
    let c = b.param("b", big.clone());
    let k = b.param("k", Type::U64);
    let add = b.add(a, c).unwrap();
    let sub = b.sub(add, c).unwrap();
    let mul = b.mul(sub, a).unwrap();
    let wide = b.mul_wide(mul, c).unwrap();
    let lt = b.lt(a, c).unwrap();
    let le = b.le(a, c).unwrap();
    let eq = b.eq(a, c).unwrap();
    let both = b.and(lt, le).unwrap();
    let either = b.or(both, eq).unwrap();
    let kk = b.cast(k, big.clone()).unwrap();
    let lit = b.constant(Literal::Big(vec![5, 0, 7], Size::param(0)));
    let zero = b.constant(Literal::Big(vec![0], Size::param(0)));
    let sum = b.add(kk, lit).unwrap();
    let sum = b.add(sum, zero).unwrap();
    let sel = b.select(either, sum, mul).unwrap();
    round_trip(&b.finish(&[sel, wide]).unwrap(), &[256]);
}

#[test]
fn modular_operations() {
    let mut b = Builder::new("zp", &["P", "N"]);
    let zp = Type::Zp(Size::param(0));
    let x = b.param("x", zp.clone());
    let e = b.param("e", Type::U64);
    let xs = b.param("xs", Type::array(zp.clone(), Size::param(1)));
    let ys = b.param("ys", Type::array(zp.clone(), Size::param(1)));
    let pow = b.zp_pow(x, e).unwrap();
    let inv = b.zp_inv(pow).unwrap();
    let three = b.constant(Literal::Zp(3, Size::param(0)));
    let prod = b.mul(inv, three).unwrap();
    let ez = b.cast(e, zp.clone()).unwrap();
    let sum = b.add(prod, ez).unwrap();
    let same = b.eq(sum, x).unwrap();
    let back = b.cast(sum, Type::U64).unwrap();
    let poly = b.poly_mul(xs, ys).unwrap();
    round_trip(&b.finish(&[back, same, poly]).unwrap(), &[97, 4]);
}

#[test]
fn array_operations() {
    let mut b = Builder::new("arrays", &[]);
    let arr = Type::array(Type::U64, Size::lit(4));
    let xs = b.param("xs", arr.clone());
    let ys = b.param("ys", arr);
    let k = b.param("k", Type::U64);
    let flags = b.param("flags", Type::array(Type::Bool, Size::lit(4)));
    let big = b.param("big", Type::Big(Size::lit(256)));
    let limbs = b.limbs(big).unwrap();
    let idx = b.iota(Size::lit(4)).unwrap();
    let f = lambda(
        &[("x", Type::U64), ("y", Type::U64), ("k", Type::U64)],
        |l, p| {
            let s = l.add(p[0], p[1]).unwrap();
            l.xor(s, p[2]).unwrap()
        },
    );
    let mixed = b.map(f, &[xs, limbs, k]).unwrap();
    let z = b.zip(&[mixed, idx, flags]).unwrap();
    let pair = Type::Tuple(vec![Type::U64, Type::U64, Type::Bool]);
    let pick = lambda(&[("t", pair)], |l, p| l.extract(p[0], 0).unwrap());
    let picked = b.map(pick, &[z]).unwrap();
    let to_u32 = lambda(&[("x", Type::U64)], |l, p| l.cast(p[0], Type::U32).unwrap());
    let words = b.map(to_u32, &[picked]).unwrap();
    let carries = b
        .scan(ops::carry(), ops::carry_identity(), true, words, None)
        .unwrap();
    let lex = b
        .scan(ops::lex_compare(), ops::lex_identity(), false, words, None)
        .unwrap();
    // A map whose operator happens to be a known one still writes out its lambda.
    let both = b.map(ops::carry(), &[carries, lex]).unwrap();
    let plus = || {
        lambda(&[("a", Type::U64), ("b", Type::U64)], |l, p| {
            l.add(p[0], p[1]).unwrap()
        })
    };
    let seg = b
        .scan(plus(), Literal::U64(0), false, ys, Some(flags))
        .unwrap();
    let total = b.reduce(plus(), Literal::U64(0), seg).unwrap();
    let code = b.reduce(ops::carry(), ops::carry_identity(), both).unwrap();
    let prod = b
        .limb_mul(xs, ys, Size::lit(8), MulAlgo::Classical)
        .unwrap();
    let low = b.limb_mul(xs, limbs, Size::lit(4), MulAlgo::Ntt).unwrap();
    let back = b.from_limbs(low).unwrap();
    // A scan over tuples, with a tuple identity.
    let zz = b.zip(&[xs, ys]).unwrap();
    let t2 = Type::Tuple(vec![Type::U64, Type::U64]);
    let pairwise = lambda(&[("p", t2.clone()), ("q", t2)], |l, p| {
        let (a0, a1) = (l.extract(p[0], 0).unwrap(), l.extract(p[0], 1).unwrap());
        let (b0, b1) = (l.extract(p[1], 0).unwrap(), l.extract(p[1], 1).unwrap());
        let s = l.add(a0, b0).unwrap();
        let m = l.xor(a1, b1).unwrap();
        l.tuple(&[s, m]).unwrap()
    });
    let init = Literal::Tuple(vec![Literal::U64(0), Literal::U64(0)]);
    let tuples = b.scan(pairwise, init, true, zz, None).unwrap();
    let f = b
        .finish(&[total, code, prod, back, tuples, carries])
        .unwrap();
    round_trip(&f, &[]);
}

#[test]
fn lambdas_over_symbolic_big_integers() {
    // A lambda has no size names of its own: its `U<BITS>` prints (and reads) as `U<S0>`.
    let mut b = Builder::new("elems", &["BITS", "N"]);
    let big = Type::Big(Size::param(0));
    let xs = b.param("xs", Type::array(big.clone(), Size::param(1)));
    let double = lambda(&[("x", big.clone())], |l, p| l.add(p[0], p[0]).unwrap());
    let doubled = b.map(double, &[xs]).unwrap();
    let plus = lambda(&[("a", big.clone()), ("b", big.clone())], |l, p| {
        l.add(p[0], p[1]).unwrap()
    });
    let sum = b
        .reduce(plus, Literal::Big(vec![0], Size::param(0)), doubled)
        .unwrap();
    let f = b.finish(&[sum, doubled]).unwrap();
    assert!(print(&f).contains("|x: U<S0>| {"));
    round_trip(&f, &[128, 3]);
}

#[test]
fn parameters_that_share_a_name_are_told_apart() {
    // Introduced out of order, so that no convention could guess which is which.
    let mut b = Builder::new("twins", &[]);
    b.param("x", Type::U64);
    b.param("x", Type::U64);
    b.param("y", Type::U64);
    let mut f = b.finish(&[ValueId(0)]).unwrap();
    f.nodes.swap(0, 1);
    let sub = bigfuse_core::Node {
        op: bigfuse_core::Op::Binary(BinOp::Sub, ValueId(0), ValueId(1)),
        ty: Type::U64,
    };
    f.nodes.push(sub);
    f.outputs = vec![ValueId(3)];
    assert!(print(&f).contains("%0 = param #1 : u64\n  %1 = param #0 : u64\n  %2 = param y"));
    round_trip(&f, &[]);
    let e = error("fn f(x: u64, x: u64) -> u64 {\n  %0 = param x : u64\n  return %0\n}\n");
    assert_eq!(e.line, 2);
    assert_eq!(
        e.message,
        "several parameters are named `x`: write `param #0` or `param #1`"
    );
}

#[test]
fn hand_written_text_may_use_labels_and_comments() {
    let text = "
; doubles its argument
fn double(a: u64) -> (u64, bool) {
    %a = param a : u64
    %two = const 2u64 : u64

    %r = mul %a, %two : u64
    %big = lt %r, %a : bool
    return %r, %big
}
";
    let f = parse(text).unwrap();
    assert_eq!(
        print(&f),
        "fn double(a: u64) -> (u64, bool) {
  %0 = param a : u64
  %1 = const 2u64 : u64
  %2 = mul %0, %1 : u64
  %3 = lt %2, %0 : bool
  return %2, %3
}
"
    );
    assert_eq!(
        eval(&f, &[Value::U64(21)]).unwrap(),
        vec![Value::U64(42), Value::Bool(false)]
    );
}

/// The error for `text`, which must not parse.
fn error(text: &str) -> bigfuse_core::ParseError {
    match parse(text) {
        Ok(f) => panic!("parsed:\n{}", print(&f)),
        Err(e) => e,
    }
}

fn with_body(body: &str) -> String {
    format!(
        "fn f(a: u64, b: u64) -> u64 {{\n  %0 = param a : u64\n  %1 = param b : u64\n{body}}}\n"
    )
}

#[test]
fn an_unknown_operation_is_named() {
    let e = error(&with_body("  %2 = frob %0, %1 : u64\n  return %2\n"));
    assert_eq!(e.line, 4);
    assert_eq!(e.message, "unknown operation `frob`");
    assert!(e
        .to_string()
        .starts_with("line 4: unknown operation `frob`\n    %2 = frob"));
}

#[test]
fn a_wrong_type_annotation_is_reported() {
    let e = error(&with_body("  %2 = add %0, %1 : u32\n  return %2\n"));
    assert_eq!(e.line, 4);
    assert_eq!(e.message, "`%2` is annotated u32 but `add` gives u64");
    let e = error(&with_body("  %2 = add %0, %1 : U<N>\n  return %2\n"));
    assert_eq!(e.line, 4);
    assert!(e.message.starts_with("unknown size `N`"), "{e}");
    let e = error(&with_body("  %2 = add %0, %1 : u128\n  return %2\n"));
    assert!(e.message.starts_with("unknown type `u128`"), "{e}");
}

#[test]
fn an_ill_typed_operation_is_reported() {
    let text = "fn f(a: u64, b: u32) -> u64 {\n  %0 = param a : u64\n  %1 = param b : u32\n  %2 = add %0, %1 : u64\n  return %2\n}\n";
    let e = error(text);
    assert_eq!(e.line, 4);
    assert_eq!(
        e.message,
        "`add` needs operands of one type, not u64 and u32"
    );
    let e = error(&with_body(
        "  %2 = cast %0 : U<64>\n  %3 = cast %2 : bool\n  return %3\n",
    ));
    assert_eq!(e.line, 5);
    assert!(e.message.starts_with("cannot convert U<64> to bool"), "{e}");
}

#[test]
fn an_undefined_value_is_reported() {
    let e = error(&with_body("  %2 = add %0, %7 : u64\n  return %2\n"));
    assert_eq!(e.line, 4);
    assert!(e.message.starts_with("`%7` is not defined above"), "{e}");
    // Defined, but after its use.
    let e = error(&with_body(
        "  %2 = add %0, %3 : u64\n  %3 = add %0, %1 : u64\n  return %2\n",
    ));
    assert_eq!(e.line, 4);
    let e = error(&with_body("  %1 = add %0, %0 : u64\n  return %1\n"));
    assert_eq!(e.message, "`%1` is defined twice");
    let e = error(&with_body("  return %9\n"));
    assert_eq!(e.line, 4);
}

#[test]
fn a_missing_return_is_reported() {
    let e = error(&with_body("  %2 = add %0, %1 : u64\n"));
    assert_eq!(e.line, 5);
    assert_eq!(e.message, "`f` ends without a `return`");
    let e = error("fn f(a: u64) -> u64 {\n  %0 = param a : u64\n");
    assert_eq!(e.line, 2);
    assert!(e.message.starts_with("the text ends inside `f`"), "{e}");
    let e = error("fn f(a: u64) -> u64 {\n  %0 = param a : u64\n  return %0\n");
    assert!(e.message.starts_with("the text ends before the `}`"), "{e}");
}

#[test]
fn other_mistakes_are_reported_with_their_line() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 1, "expected `fn name(params) -> type {`"),
        ("func f() -> u64 {", 1, "expected `fn name(params) -> type {`"),
        ("fn f(a u64) -> u64 {", 1, "expected `:` after parameter `a`"),
        (
            "fn f(a: u64) -> u32 {\n%0 = param a : u64\nreturn %0\n}",
            1,
            "the header says `f` returns u32 but its `return` gives u64",
        ),
        (
            "fn f(a: u64) -> u64 {\n%0 = param c : u64\nreturn %0\n}",
            2,
            "there is no parameter `c` (the parameters are: a)",
        ),
        (
            "fn f(a: u64) -> u64 {\n%0 = param a\nreturn %0\n}",
            2,
            "expected `: type` at the end of the node",
        ),
        (
            "fn f(a: u64) -> u64 {\n%0 = param a : u64\nreturn %0\n}\n}",
            5,
            "text after the end of `f`",
        ),
        (
            "fn f(a: u64) -> u64 {\n%0 = const 5 : u64\nreturn %0\n}",
            2,
            "a number literal needs its type",
        ),
        (
            "fn f(a: u64) -> u32 {\n%0 = const 5000000000u32 : u32\nreturn %0\n}",
            2,
            "5000000000 does not fit in u32",
        ),
        (
            "fn f(a: [u64; 4]) -> [u64; 4] {\n%0 = param a : [u64; 4]\n%1 = map (%0) : [u64; 4]\nreturn %1\n}",
            4,
            "expected the lambda block `|params| {` of the node on line 3",
        ),
        (
            "fn f(a: [u64; 4]) -> [u64; 4] {\n%0 = param a : [u64; 4]\n%1 = scan.inclusive plus, init 0u64, %0 : [u64; 4]\nreturn %1\n}",
            3,
            "unknown operator `plus`",
        ),
        (
            "fn f(a: [u64; 4]) -> [u64; 4] {\n%0 = param a : [u64; 4]\n%1 = map (%0) : [u64; 4]\n|x: u64| {\n%0 = param x : u64\n%1 = cast %0 : u32\nreturn %1\n}\nreturn %1\n}",
            3,
            "`%1` is annotated [u64; 4] but `map` gives [u32; 4]",
        ),
        (
            "fn f(a: [u64; 4]) -> [u64; 4] {\n%0 = param a : [u64; 4]\n|x: u64| {\n}\nreturn %0\n}",
            3,
            "a lambda block may only follow",
        ),
    ];
    for (text, line, start) in cases {
        let e = error(text);
        assert_eq!(
            (e.line, e.message.starts_with(start)),
            (*line, true),
            "{e}\nfor\n{text}"
        );
    }
}

#[test]
fn an_inline_lambda_sees_only_its_own_values() {
    let text = "fn f(a: [u64; 4]) -> u64 {
  %0 = param a : [u64; 4]
  %1 = const 1u64 : u64
  %2 = reduce |..|, init 0u64, %0 : u64
      |x: u64, y: u64| {
        %0 = param x : u64
        %1 = param y : u64
        %2 = add %0, %1 : u64
        %3 = add %2, %9 : u64
        return %3
      }
  return %2
}
";
    let e = error(text);
    assert_eq!(e.line, 9);
    assert!(e.message.starts_with("`%9` is not defined above"), "{e}");
}

// Random programs: a choice stream drives a builder, so that proptest shrinks to short programs.

struct Choices(Vec<u32>, usize);

impl Choices {
    fn next(&mut self, n: usize) -> usize {
        let v = self.0.get(self.1).copied().unwrap_or(0);
        self.1 += 1;
        v as usize % n.max(1)
    }

    fn more(&self) -> bool {
        self.1 < self.0.len()
    }
}

fn random_lambda(c: &mut Choices, arity: usize) -> Func {
    let mut l = Builder::lambda();
    let mut vals: Vec<ValueId> = (0..arity)
        .map(|i| l.param(&format!("x{i}"), Type::U64))
        .collect();
    for _ in 0..1 + c.next(4) {
        let ops = [
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::MulHi,
            BinOp::Xor,
            BinOp::Shr,
        ];
        let v = match c.next(3) {
            0 => l.u64(c.next(1000) as u64),
            _ => {
                let (a, b) = (vals[c.next(vals.len())], vals[c.next(vals.len())]);
                l.binary(ops[c.next(ops.len())], a, b).unwrap()
            }
        };
        vals.push(v);
    }
    let last = *vals.last().unwrap();
    l.finish(&[last]).unwrap()
}

/// A random well-typed program over big integers, words, flags and arrays of words, at a symbolic
/// or a concrete size.
fn random_program(choices: Vec<u32>) -> (Func, Vec<u64>) {
    let mut c = Choices(choices, 0);
    let symbolic = c.next(2) == 0;
    let mut b = Builder::new("random", &["BITS"]);
    let (big, arr) = if symbolic {
        (Type::Big(Size::param(0)), Size::param(0))
    } else {
        (Type::Big(Size::lit(256)), Size::lit(4))
    };
    let mut bigs = vec![b.param("a", big.clone()), b.param("b", big.clone())];
    let mut words = vec![b.param("k", Type::U64)];
    let mut flags = vec![b.param("f", Type::Bool)];
    let mut arrays = vec![b.param("xs", Type::array(Type::U64, arr))];
    let mut others = vec![];
    while c.more() {
        macro_rules! pick {
            ($v:expr) => {
                $v[c.next($v.len())]
            };
        }
        match c.next(14) {
            0 => bigs.push(b.add(pick!(bigs), pick!(bigs)).unwrap()),
            1 => bigs.push(b.sub(pick!(bigs), pick!(bigs)).unwrap()),
            2 => bigs.push(b.mul(pick!(bigs), pick!(bigs)).unwrap()),
            3 => flags.push(match c.next(3) {
                0 => b.lt(pick!(bigs), pick!(bigs)).unwrap(),
                1 => b.le(pick!(bigs), pick!(bigs)).unwrap(),
                _ => b.eq(pick!(bigs), pick!(bigs)).unwrap(),
            }),
            4 => bigs.push(b.select(pick!(flags), pick!(bigs), pick!(bigs)).unwrap()),
            5 => words.push(b.u64(c.next(1 << 20) as u64)),
            6 => bigs.push(b.cast(pick!(words), big.clone()).unwrap()),
            7 => {
                let f = random_lambda(&mut c, 2);
                arrays.push(b.map(f, &[pick!(arrays), pick!(words)]).unwrap());
            }
            8 => {
                let f = random_lambda(&mut c, 2);
                let (x, ex) = (pick!(arrays), c.next(2) == 0);
                arrays.push(b.scan(f, Literal::U64(0), ex, x, None).unwrap());
            }
            9 => {
                let f = random_lambda(&mut c, 2);
                words.push(b.reduce(f, Literal::U64(0), pick!(arrays)).unwrap());
            }
            10 => {
                let w = pick!(words);
                let t = b.tuple(&[w, pick!(flags)]).unwrap();
                others.push(b.extract(t, (c.next(2)) as u32).unwrap());
            }
            11 if !symbolic => {
                let l = b.limbs(pick!(bigs)).unwrap();
                arrays.push(l);
                bigs.push(b.from_limbs(pick!(arrays)).unwrap());
            }
            12 => others.push(b.zip(&[pick!(arrays), pick!(arrays)]).unwrap()),
            _ => flags.push(b.not(pick!(flags)).unwrap()),
        }
    }
    let mut outs = vec![*bigs.last().unwrap(), *arrays.last().unwrap()];
    outs.extend(others.last());
    let f = b.finish(&outs).unwrap();
    // A concrete program keeps the size name: `specialize` still wants its value.
    (f, vec![if symbolic { 128 } else { 256 }])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_programs_read_back(choices in prop::collection::vec(any::<u32>(), 0..40)) {
        let (f, sizes) = random_program(choices);
        round_trip(&f, &sizes);
    }
}

/// Text of a program with every kind of line, for mutation.
fn sample_text() -> String {
    let mut b = Builder::new("sample", &["BITS"]);
    let arr = Type::array(Type::U64, Size::lit(4));
    let xs = b.param("xs", arr);
    let a = b.param("a", Type::Big(Size::param(0)));
    let k = b.param("k", Type::U64);
    let s = b.add(a, a).unwrap();
    let f = lambda(&[("x", Type::U64), ("k", Type::U64)], |l, p| {
        l.add(p[0], p[1]).unwrap()
    });
    let m = b.map(f, &[xs, k]).unwrap();
    let plus = lambda(&[("x", Type::U64), ("y", Type::U64)], |l, p| {
        l.add(p[0], p[1]).unwrap()
    });
    let r = b.reduce(plus, Literal::U64(0), m).unwrap();
    let t = b.constant(Literal::Tuple(vec![
        Literal::Big(vec![1, 2], Size::param(0)),
        Literal::U32(3),
    ]));
    print(&b.finish(&[s, m, r, t]).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Damaged text gives an error (or, by chance, another valid function), never a panic.
    #[test]
    fn damaged_text_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0..4usize, 0..12usize), 1..4)
    ) {
        let mut text: Vec<char> = sample_text().chars().collect();
        let pieces = ["%", ",", ":", "|", "{", "}", "(", ")", "[", "<", "0", "9", "x", "\n", " ", "u", ".", "*"];
        for (at, kind, what) in edits {
            let i = at.index(text.len() + 1);
            match kind {
                0 if i < text.len() => {
                    text.remove(i);
                }
                1 => text.insert(i.min(text.len()), pieces[what % pieces.len()].chars().next().unwrap()),
                2 => text.truncate(i),
                _ if i < text.len() => text[i] = pieces[what % pieces.len()].chars().next().unwrap(),
                _ => {}
            }
        }
        let text: String = text.into_iter().collect();
        if let Ok(f) = parse(&text) {
            // Whatever reads back prints and reads back the same way.
            prop_assert_eq!(parse(&print(&f)).ok(), Some(f));
        }
    }
}

#[test]
fn overflowing_sizes_are_errors() {
    let text = "fn f(a: [u64; 18446744073709551615]) -> U<64> {\n  %0 = param a : [u64; 18446744073709551615]\n  %1 = from_limbs %0 : U<64>\n  return %1\n}\n";
    let e = error(text);
    assert_eq!(e.line, 3);
    let e = error("fn f() -> u64 {\n  %0 = const 18446744073709551616u64 : u64\n  return %0\n}\n");
    assert_eq!(e.line, 2);
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep_type = format!("{}u64{}", "[".repeat(100_000), "; 1]".repeat(100_000));
    let e = error(&format!(
        "fn f(a: {deep_type}) -> u64 {{\n  %0 = param a : u64\n  return %0\n}}\n"
    ));
    assert_eq!(
        (e.line, e.message.as_str()),
        (1, "nested more than 64 deep")
    );
    let deep_literal = format!("{}1u64{}", "(".repeat(100_000), ")".repeat(100_000));
    let e = error(&format!(
        "fn f() -> u64 {{\n  %0 = const {deep_literal} : u64\n  return %0\n}}\n"
    ));
    assert_eq!(e.line, 2);
    // Maps inside lambdas (which validate refuses anyway), 200 deep.
    let mut text = String::from("fn f(a: [u64; 1]) -> [u64; 1] {\n%0 = param a : [u64; 1]\n");
    for _ in 0..200 {
        text.push_str("%1 = map (%0) : [u64; 1]\n|a: [u64; 1]| {\n%0 = param a : [u64; 1]\n");
    }
    let e = error(&text);
    assert_eq!(e.message, "lambdas nested more than 64 deep");
}

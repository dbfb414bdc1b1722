//! A readable text form of the IR, used by `explain` and by snapshot tests; [`crate::parse()`]
//! reads it back.

use crate::ir::{Func, Op};
use crate::ops::Intrinsic;
use std::fmt::Write;

/// The whole function, one node a line.
pub fn print(func: &Func) -> String {
    let mut s = String::new();
    let names = &func.size_params;
    let generics = if names.is_empty() {
        String::new()
    } else {
        format!("<{}>", names.join(", "))
    };
    let params: Vec<String> = func
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.ty.display(names)))
        .collect();
    let outs: Vec<String> = func
        .output_types()
        .iter()
        .map(|t| t.display(names).to_string())
        .collect();
    let _ = writeln!(
        s,
        "fn {}{}({}) -> {} {{",
        func.name,
        generics,
        params.join(", "),
        if outs.len() == 1 {
            outs[0].clone()
        } else {
            format!("({})", outs.join(", "))
        }
    );
    body(func, 1, &mut s);
    s.push_str("}\n");
    s
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

/// An intrinsic's name (its lambda is not printed: the name says what it is).
fn lambda_name(f: &Func) -> Option<&'static str> {
    Intrinsic::of(f).map(Intrinsic::name)
}

/// The text of one node, e.g. `%7 = map (%4, %6) : [u64; 4]` (lambdas not expanded).
pub fn node_text(func: &Func, id: crate::ir::ValueId) -> String {
    let n = func.node(id);
    format!(
        "{id} = {} : {}",
        op_text(func, &n.op),
        n.ty.display(&func.size_params)
    )
}

fn op_text(func: &Func, op: &Op) -> String {
    let names = &func.size_params;
    let list = |xs: &[crate::ir::ValueId]| {
        xs.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match op {
        Op::Param(p) => {
            let name = &func.params[*p as usize].name;
            // A name that several parameters share would not say which one this is.
            if func.params.iter().filter(|q| q.name == *name).count() > 1 {
                format!("param #{p}")
            } else {
                format!("param {name}")
            }
        }
        Op::Const(l) => format!("const {l}"),
        Op::Unary(u, a) => format!("{} {a}", u.mnemonic()),
        Op::Binary(b, x, y) => format!("{} {x}, {y}", b.mnemonic()),
        Op::Cast(a) => format!("cast {a}"),
        Op::ZpPow(a, e) => format!("zp.pow {a}, {e}"),
        Op::ZpInv(a) => format!("zp.inv {a}"),
        Op::PolyMul { a, b, modulus } => {
            format!("poly_mul {a}, {b} mod {}", modulus.display(names))
        }
        Op::Select(c, a, b) => format!("select {c}, {a}, {b}"),
        Op::Tuple(xs) => format!("tuple {}", list(xs)),
        Op::Extract(t, k) => format!("extract {t}.{k}"),
        Op::BigAdd(a, b) => format!("big.add {a}, {b}"),
        Op::BigSub(a, b) => format!("big.sub {a}, {b}"),
        Op::BigCmp(c, a, b) => format!("big.{} {a}, {b}", c.mnemonic()),
        Op::BigMul(a, b) => format!("big.mul {a}, {b}"),
        Op::BigMulWide(a, b) => format!("big.mul_wide {a}, {b}"),
        Op::BigDiv(a, b) => format!("big.div {a}, {b}"),
        Op::BigRem(a, b) => format!("big.rem {a}, {b}"),
        Op::BigIsqrt(a) => format!("big.isqrt {a}"),
        Op::BigIsqrtWhole(a) => format!("big.isqrt_whole {a}"),
        Op::LimbIsqrt(a) => format!("limb.isqrt {a}"),
        Op::BigDivRem(a, b) => format!("big.div_rem {a}, {b}"),
        Op::LimbDivRem(a, b) => format!("limb.div_rem {a}, {b}"),
        Op::BigPowMod(x, e, m) => format!("big.pow_mod {x}, {e}, {m}"),
        Op::LimbPowMod(x, e, m) => format!("limb.pow_mod {x}, {e}, {m}"),
        Op::BigMod(o, a, b, m) => format!("big.{}_mod {a}, {b}, {m}", o.mnemonic()),
        Op::BigMontMul(a, b, m) => format!("big.mont_mul {a}, {b}, {m}"),
        Op::LimbMontMul(a, b, m) => format!("limb.mont_mul {a}, {b}, {m}"),
        Op::BigGcd(a, b) => format!("big.gcd {a}, {b}"),
        Op::BigInvMod(a, m) => format!("big.inv_mod {a}, {m}"),
        Op::LimbGcd(a, b) => format!("limb.gcd {a}, {b}"),
        Op::LimbMulWords(a, b, n) => format!("limb.mul_words {a}, {b}, {n}"),
        Op::LimbMulAddWords(a, b, c, n) => format!("limb.mul_add_words {a}, {b}, {c}, {n}"),
        Op::LimbInvMod(a, m) => format!("limb.inv_mod {a}, {m}"),
        Op::BigUnary(u, a) => format!("big.{} {a}", u.mnemonic()),
        Op::BigBitwise(o, a, b) => format!("big.{} {a}, {b}", o.mnemonic()),
        Op::BigShift(o, a, k) => format!("big.{} {a}, {k}", o.mnemonic()),
        Op::BigBit(a, i) => format!("big.bit {a}, {i}"),
        Op::Gather { src, idx } => format!("gather {src}, {idx}"),
        Op::LimbMul {
            a,
            b,
            out_len,
            algo,
        } => format!(
            "limb_mul.{} {a}, {b}, out {}",
            match algo {
                crate::ir::MulAlgo::Classical => "classical",
                crate::ir::MulAlgo::Ntt => "ntt",
            },
            out_len.display(names)
        ),
        Op::Limbs(a) => format!("limbs {a}"),
        Op::FromLimbs(a) => format!("from_limbs {a}"),
        Op::Iota(n) => format!("iota {}", n.display(names)),
        Op::Map { f, args } => match lambda_name(f) {
            Some(name) => format!("map {name} ({})", list(args)),
            None => format!("map ({})", list(args)),
        },
        Op::Zip(xs) => format!("zip {}", list(xs)),
        Op::Scan {
            op,
            init,
            exclusive,
            input,
            flags,
        } => format!(
            "scan.{} {}, init {init}, {input}{}",
            if *exclusive { "exclusive" } else { "inclusive" },
            lambda_name(op).unwrap_or("|..|"),
            flags.map(|f| format!(", segments {f}")).unwrap_or_default()
        ),
        Op::Reduce { op, init, input } => {
            format!(
                "reduce {}, init {init}, {input}",
                lambda_name(op).unwrap_or("|..|")
            )
        }
        Op::Loop { count, args, .. } => format!("loop {}, ({})", count.display(names), list(args)),
    }
}

fn body(func: &Func, depth: usize, s: &mut String) {
    for (i, n) in func.nodes.iter().enumerate() {
        let _ = writeln!(
            s,
            "{}{}",
            indent(depth),
            node_text(func, crate::ir::ValueId(i as u32))
        );
        if let Op::Loop { body: l, .. } = &n.op {
            // A loop's body is a program over the same sizes.
            let params: Vec<String> = l
                .params
                .iter()
                .map(|p| format!("{}: {}", p.name, p.ty.display(&l.size_params)))
                .collect();
            let _ = writeln!(s, "{}|{}| {{", indent(depth + 2), params.join(", "));
            body(l, depth + 3, s);
            let _ = writeln!(s, "{}}}", indent(depth + 2));
        }
        for l in n.op.lambdas() {
            // An intrinsic is named in its node's line.
            if lambda_name(l).is_some() {
                continue;
            }
            let params: Vec<String> = l
                .params
                .iter()
                .map(|p| format!("{}: {}", p.name, p.ty))
                .collect();
            let _ = writeln!(s, "{}|{}| {{", indent(depth + 2), params.join(", "));
            body(l, depth + 3, s);
            let _ = writeln!(s, "{}}}", indent(depth + 2));
        }
    }
    let outs: Vec<String> = func.outputs.iter().map(|o| o.to_string()).collect();
    let _ = writeln!(s, "{}return {}", indent(depth), outs.join(", "));
}

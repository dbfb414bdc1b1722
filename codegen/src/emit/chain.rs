//! Carry chains written once for both targets: PTX `asm` on the GPU (the carry flag lives only
//! inside one statement) and the same steps as C on the host, where the tests compile the
//! device functions that use them (`montgomery.rs`, `montgomery_group.rs`, `divide.rs`).

/// One instruction of a carry chain: PTX's `mad{c}.{lo,hi}{.cc}.u32 d, a, b, c` (`d = half(a b) +
/// c [+ CF]`), `add{c}{.cc}.u32 d, a, b` (`d = a + b [+ CF]`) or `sub{c}{.cc}.u32 d, a, b`
/// (`d = a - b [- CF]`, CF the borrow). Operands are C expressions: the chain's accumulators
/// (read and written), other values (read) or `0`.
#[derive(Clone)]
pub(crate) struct Step {
    op: &'static str,
    d: String,
    srcs: Vec<String>,
}

impl Step {
    pub(crate) fn new(op: &'static str, d: impl Into<String>, srcs: &[String]) -> Step {
        Step {
            op,
            d: d.into(),
            srcs: srcs.to_vec(),
        }
    }
}

/// A carry chain as one `asm` statement for the GPU (the carry flag lives only inside one), and
/// the same steps as C with the flag in a variable for the host, under `#ifdef __CUDA_ARCH__`:
/// the host-compiled tests run the very steps the GPU does. Only chains differ between the two
/// branches; everything around them is one text.
pub(crate) fn chain(steps: &[Step]) -> (String, String) {
    // Accumulators are the destinations ('+&r': early clobber, since a chain writes some before
    // it reads the last inputs, and an input equal to an accumulator's value on entry, such as a
    // zero, must not share its register); every other named source is an input ("r").
    let mut outs: Vec<&str> = Vec::new();
    for s in steps {
        if !outs.contains(&s.d.as_str()) {
            outs.push(&s.d);
        }
    }
    let mut ins: Vec<&str> = Vec::new();
    for s in steps {
        for x in &s.srcs {
            if x != "0" && !outs.contains(&x.as_str()) && !ins.contains(&x.as_str()) {
                ins.push(x);
            }
        }
    }
    let operand = |x: &str| -> String {
        if x == "0" {
            return "0".into();
        }
        match outs.iter().position(|o| *o == x) {
            Some(k) => format!("%{k}"),
            None => format!(
                "%{}",
                outs.len() + ins.iter().position(|i| *i == x).unwrap()
            ),
        }
    };
    let text: Vec<String> = steps
        .iter()
        .map(|s| {
            let args: Vec<String> = std::iter::once(operand(&s.d))
                .chain(s.srcs.iter().map(|x| operand(x)))
                .collect();
            format!("{}.u32 {};", s.op, args.join(", "))
        })
        .collect();
    let device = format!(
        "asm(\"{}\" : {} : {});",
        text.join(" "),
        outs.iter()
            .map(|o| format!("\"+&r\"({o})"))
            .collect::<Vec<_>>()
            .join(", "),
        ins.iter()
            .map(|i| format!("\"r\"({i})"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut host = String::from("{ u64 cf = 0; ");
    for s in steps {
        let (a, b) = (&s.srcs[0], &s.srcs[1]);
        let sub = s.op.starts_with("sub");
        let carry_in = if s.op.starts_with("madc") || s.op.starts_with("addc") {
            " + cf"
        } else if s.op.starts_with("subc") {
            " - cf"
        } else {
            ""
        };
        let first = if s.op.contains(".lo") {
            format!("(u64)(u32)({a} * {b})")
        } else if s.op.contains(".hi") {
            format!("(((u64){a} * (u64){b}) >> 32)")
        } else {
            format!("(u64){a}")
        };
        let second = if s.op.starts_with("mad") {
            format!("(u64){}", s.srcs[2])
        } else {
            format!("(u64){b}")
        };
        // A borrow is the sign of the 64-bit difference; a carry the bit above 32.
        let (sign, flag) = if sub { ("-", 63) } else { ("+", 32) };
        host.push_str(&format!(
            "{{ const u64 x = {first} {sign} {second}{carry_in}; {} = (u32)x;{} }} ",
            s.d,
            if s.op.ends_with(".cc") {
                format!(" cf = x >> {flag};")
            } else {
                String::new()
            }
        ));
    }
    host.push('}');
    (device, host)
}

/// Carry chains as one text for both targets: the GPU's `asm` statements under
/// `#ifdef __CUDA_ARCH__`, the host's C otherwise ([`chain`]), each statement on a line of its
/// own after `indent`.
pub(crate) fn both_targets(chains: &[Vec<Step>], indent: &str) -> String {
    let (device, host): (Vec<String>, Vec<String>) = chains.iter().map(|c| chain(c)).unzip();
    let sep = format!("\n{indent}");
    format!(
        "#ifdef __CUDA_ARCH__\n{indent}{}\n#else\n{indent}{}\n#endif",
        device.join(&sep),
        host.join(&sep)
    )
}

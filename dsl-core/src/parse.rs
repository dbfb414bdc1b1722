//! Reads back the text that [`print`](crate::print::print) writes, so that a pass can be tested as
//! IR text in, IR text out.
//!
//! The format, one construct a line (indentation is free; blank lines and lines that start with
//! `;` are comments):
//!
//! ```text
//! header    fn NAME<SIZE, ..>(NAME: TYPE, ..) -> TYPE {     sizes optional; several outputs: (T, U)
//! node      %ID = OPERATION : TYPE                           the type must be the one the operation gives
//! lambda    |NAME: TYPE, ..| {  ..nodes..  return %ID  }     on the lines after a map, or a `|..|` scan / reduce
//! end       return %ID, ..   then   }
//! type      bool | u32 | u64 | U<SIZE> | Zp<SIZE> | [TYPE; SIZE] | (TYPE,) | (TYPE, TYPE, ..) | ()
//! size      N | NAME | N*NAME                               NAME a size of the header, or S0, S1, .. by index
//! literal   true | false | Nu32 | Nu64 | NzpSIZE | 0xHEXuSIZE | (LITERAL, ..)
//! scalar    param NAME | param #I | const LITERAL | not %A | cast %A | select %C, %A, %B | tuple %A, .. | extract %T.K
//! binary    add | sub | mul | mulhi | and | or | xor | shl | shr | lt | le | eq | ne   %A, %B
//! modular   zp.pow %X, %E | zp.inv %X | poly_mul %A, %B mod SIZE
//! big       big.add | big.sub | big.mul | big.mul_wide | big.lt | big.le | big.eq   %A, %B
//! limbs     limbs %A | from_limbs %A | iota SIZE | limb_mul.classical %A, %B, out SIZE | limb_mul.ntt ..
//! arrays    map (%A, ..) | map INTRINSIC (%A, ..) | zip %A, ..
//! scan      scan.inclusive OPERATOR, init LITERAL, %A | scan.exclusive .. [, segments %F]
//! reduce    reduce OPERATOR, init LITERAL, %A               OPERATOR: INTRINSIC | |..|
//! ```
//!
//! `%ID`s are labels (`print` numbers them in order; hand-written text may use any letters, digits
//! and `_`), each defined once and before its uses; a lambda sees only its own. A cast's type is its
//! target. An INTRINSIC is the name of an [`Intrinsic`] (`carry`, `lex_compare`, `add.partial`,
//! `carry.flags`, `add192`, ..): the lambda lowering builds under that name, never printed out. A
//! parameter whose name others share is written `param #INDEX`.
//!
//! The text does not say three things, which read back as every pass builds them: a lambda is named
//! `op` and has no size parameters of its own (so its sizes print as `S0`, ..), and a big literal
//! holds no zero limbs above its highest nonzero one, but at least one (the count of limbs does not
//! change its value). Reading checks every node's type; the rest of
//! [`validate`](crate::validate()) is left to the caller.

use crate::error::IrError;
use crate::ir::{BinOp, CmpOp, Func, Literal, MulAlgo, Node, Op, Param, ShiftOp, UnOp, ValueId};
use crate::ops::Intrinsic;
use crate::typeck::{check_cast, infer};
use crate::types::{Size, Type};
use std::collections::HashMap;
use std::fmt;

/// Why a text is not a function, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based number of the offending line.
    pub line: usize,
    pub message: String,
    /// The offending line as written (empty at the end of the text).
    pub source: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)?;
        if !self.source.is_empty() {
            write!(f, "\n    {}", self.source)?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}

type PResult<T> = Result<T, ParseError>;

/// The function `print` wrote as `text`.
pub fn parse(text: &str) -> Result<Func, ParseError> {
    let mut lines = Lines::new(text);
    let Some((no, header)) = lines.next() else {
        return Err(ParseError {
            line: lines.end_line(),
            message: "expected `fn name(params) -> type {`, found the end of the text".into(),
            source: String::new(),
        });
    };
    let (func, declared) = parse_header(&mut Cur::new(header, no))?;
    let func = parse_body(&mut lines, func)?;
    // The header's output type follows from the body, so the two can only disagree in text edited
    // on one side; several outputs and one tuple output read alike there, and `return` tells.
    let outs = func.output_types();
    let returned = if outs.len() == 1 {
        outs[0].clone()
    } else {
        Type::Tuple(outs)
    };
    if returned != declared {
        let names = &func.size_params;
        return Err(ParseError {
            line: no,
            message: format!(
                "the header says `{}` returns {} but its `return` gives {}",
                func.name,
                declared.display(names),
                returned.display(names)
            ),
            source: header.to_string(),
        });
    }
    if let Some((no, text)) = lines.next() {
        return Err(ParseError {
            line: no,
            message: format!("text after the end of `{}`", func.name),
            source: text.to_string(),
        });
    }
    Ok(func)
}

/// The meaningful lines: numbered from 1, trimmed, comments and blank lines left out.
struct Lines<'a> {
    lines: Vec<(usize, &'a str)>,
    next: usize,
    count: usize,
    /// Lambda blocks being read inside one another.
    depth: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Lines<'a> {
        let all: Vec<&str> = text.lines().collect();
        Lines {
            count: all.len(),
            lines: all
                .into_iter()
                .enumerate()
                .map(|(i, l)| (i + 1, l.trim()))
                .filter(|(_, l)| !l.is_empty() && !l.starts_with(';'))
                .collect(),
            next: 0,
            depth: 0,
        }
    }

    fn next(&mut self) -> Option<(usize, &'a str)> {
        let l = self.lines.get(self.next).copied();
        self.next += 1;
        l
    }

    fn end_line(&self) -> usize {
        self.count.max(1)
    }

    fn end_error(&self, message: String) -> ParseError {
        ParseError {
            line: self.end_line(),
            message,
            source: String::new(),
        }
    }
}

/// A cursor over one line (or a part of one).
struct Cur<'a> {
    s: &'a str,
    i: usize,
    line: usize,
    /// Types and literals being read inside one another.
    depth: usize,
}

/// How deep types, literals and lambdas may nest: far beyond any real program, and shallow enough
/// that hostile text cannot exhaust the stack (errors are values, never a crash).
const MAX_NESTING: usize = 64;

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Characters of parameter and function names: anything but blanks and the punctuation around them
/// (the macro frontend names captured arrays `xs[]`).
fn is_name(c: char) -> bool {
    !c.is_whitespace() && !":,()|<>{}".contains(c)
}

impl<'a> Cur<'a> {
    fn new(s: &'a str, line: usize) -> Cur<'a> {
        Cur {
            s,
            i: 0,
            line,
            depth: 0,
        }
    }

    fn err(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            line: self.line,
            message: message.into(),
            source: self.s.to_string(),
        }
    }

    fn rest(&self) -> &'a str {
        &self.s[self.i..]
    }

    /// What comes next, for messages.
    fn found(&self) -> String {
        let r = self.rest().trim_start();
        if r.is_empty() {
            "the end of the line".into()
        } else {
            let short: String = r.chars().take(24).collect();
            format!("`{short}`")
        }
    }

    fn ws(&mut self) {
        let r = self.rest();
        self.i += r.len() - r.trim_start().len();
    }

    fn at_end(&mut self) -> bool {
        self.ws();
        self.i == self.s.len()
    }

    fn eat(&mut self, token: &str) -> bool {
        self.ws();
        if self.rest().starts_with(token) {
            self.i += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &str, context: &str) -> PResult<()> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.err(format!(
                "expected `{token}` {context}, found {}",
                self.found()
            )))
        }
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        self.ws();
        let r = self.rest();
        let n = r.find(|c| !f(c)).unwrap_or(r.len());
        self.i += n;
        &r[..n]
    }

    fn ident(&mut self, what: &str) -> PResult<&'a str> {
        let w = self.take_while(is_ident);
        if w.is_empty() {
            Err(self.err(format!("expected {what}, found {}", self.found())))
        } else {
            Ok(w)
        }
    }

    fn name(&mut self, what: &str) -> PResult<&'a str> {
        let w = self.take_while(is_name);
        if w.is_empty() {
            Err(self.err(format!("expected {what}, found {}", self.found())))
        } else {
            Ok(w)
        }
    }

    fn end(&mut self, context: &str) -> PResult<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.err(format!("unexpected {} {context}", self.found())))
        }
    }

    fn number(&mut self, what: &str) -> PResult<u64> {
        let digits = self.take_while(|c| c.is_ascii_digit());
        if digits.is_empty() {
            return Err(self.err(format!("expected {what}, found {}", self.found())));
        }
        digits.parse().map_err(|_| {
            self.err(format!(
                "{digits} is too large for {what} (at most 2^64 - 1)"
            ))
        })
    }

    fn size(&mut self, names: &[String]) -> PResult<Size> {
        self.ws();
        if self.rest().starts_with(|c: char| c.is_ascii_digit()) {
            let n = self.number("a size")?;
            if self.rest().starts_with('*') {
                self.i += 1;
                let p = self.size_param(names)?;
                return Ok(Size::scaled(n, p));
            }
            return Ok(Size::lit(n));
        }
        Ok(Size::param(self.size_param(names)?))
    }

    fn size_param(&mut self, names: &[String]) -> PResult<u32> {
        let name = self.ident("a size (a number or a size parameter)")?;
        if let Some(i) = names.iter().position(|n| n == name) {
            return Ok(i as u32);
        }
        // `Size` prints a parameter without a name (a lambda's, a literal's) by its index.
        if let Some(i) = name.strip_prefix('S').and_then(|d| d.parse::<u32>().ok()) {
            return Ok(i);
        }
        Err(self.err(if names.is_empty() {
            format!("unknown size `{name}`: here sizes are numbers or S0, S1, ..")
        } else {
            format!(
                "unknown size `{name}` (the sizes of this function are {})",
                names.join(", ")
            )
        }))
    }

    /// Runs `f` one level of nesting deeper.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_NESTING {
            return Err(self.err(format!("nested more than {MAX_NESTING} deep")));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn ty(&mut self, names: &[String]) -> PResult<Type> {
        self.nested(|c| c.ty_inner(names))
    }

    fn ty_inner(&mut self, names: &[String]) -> PResult<Type> {
        if self.eat("[") {
            let elem = self.ty(names)?;
            self.expect(";", "between an array's element type and its length")?;
            let len = self.size(names)?;
            self.expect("]", "after an array's length")?;
            return Ok(Type::array(elem, len));
        }
        if self.eat("(") {
            let mut ts = Vec::new();
            let mut trailing_comma = false;
            while !self.eat(")") {
                ts.push(self.ty(names)?);
                trailing_comma = self.eat(",");
                if !trailing_comma && !self.rest().trim_start().starts_with(')') {
                    return Err(self.err(format!(
                        "expected `,` or `)` in a tuple type, found {}",
                        self.found()
                    )));
                }
            }
            if ts.len() == 1 && !trailing_comma {
                return Err(self.err("a tuple of one type is written `(T,)`"));
            }
            return Ok(Type::Tuple(ts));
        }
        let word = self.take_while(is_ident);
        match word {
            "bool" => Ok(Type::Bool),
            "u32" => Ok(Type::U32),
            "u64" => Ok(Type::U64),
            "U" | "Zp" => {
                self.expect("<", &format!("after `{word}`"))?;
                let s = self.size(names)?;
                self.expect(">", &format!("after the size of `{word}<..>`"))?;
                Ok(if word == "U" {
                    Type::Big(s)
                } else {
                    Type::Zp(s)
                })
            }
            "" => Err(self.err(format!("expected a type, found {}", self.found()))),
            other => Err(self.err(format!(
                "unknown type `{other}` (types: bool, u32, u64, U<N>, Zp<P>, [T; N], tuples)"
            ))),
        }
    }

    fn literal(&mut self, names: &[String]) -> PResult<Literal> {
        self.nested(|c| c.literal_inner(names))
    }

    fn literal_inner(&mut self, names: &[String]) -> PResult<Literal> {
        self.ws();
        if self.eat("(") {
            let mut ls = Vec::new();
            while !self.eat(")") {
                ls.push(self.literal(names)?);
                if !self.eat(",") && !self.rest().trim_start().starts_with(')') {
                    return Err(self.err(format!(
                        "expected `,` or `)` in a tuple literal, found {}",
                        self.found()
                    )));
                }
            }
            return Ok(Literal::Tuple(ls));
        }
        if self.eat("0x") {
            let hex = self.take_while(|c| c.is_ascii_hexdigit());
            if hex.is_empty() {
                return Err(self.err("expected hexadecimal digits after `0x`"));
            }
            if !self.rest().starts_with('u') {
                return Err(self.err(format!(
                    "expected the width of a big literal (`u256`, `uBITS`) after its digits, found {}",
                    self.found()
                )));
            }
            self.i += 1;
            let bits = self.size(names)?;
            return Ok(Literal::Big(hex_limbs(hex), bits));
        }
        if self.eat("true") {
            return Ok(Literal::Bool(true));
        }
        if self.eat("false") {
            return Ok(Literal::Bool(false));
        }
        let v = self.number("a literal (true, false, 1u32, 1u64, 1zpP, 0x1uBITS or a tuple)")?;
        let r = self.rest();
        if r.starts_with("u32") {
            self.i += 3;
            u32::try_from(v)
                .map(Literal::U32)
                .map_err(|_| self.err(format!("{v} does not fit in u32")))
        } else if r.starts_with("u64") {
            self.i += 3;
            Ok(Literal::U64(v))
        } else if r.starts_with("zp") {
            self.i += 2;
            Ok(Literal::Zp(v, self.size(names)?))
        } else {
            Err(self.err(format!(
                "a number literal needs its type: `{v}u32`, `{v}u64` or `{v}zpP`"
            )))
        }
    }
}

/// Little-endian limbs of a hexadecimal number, none zero above the highest nonzero one.
fn hex_limbs(hex: &str) -> Vec<u64> {
    let digits = hex.trim_start_matches('0').as_bytes();
    let mut limbs: Vec<u64> = digits
        .rchunks(16)
        .map(|chunk| {
            chunk.iter().fold(0u64, |acc, d| {
                (acc << 4) | (*d as char).to_digit(16).unwrap_or(0) as u64
            })
        })
        .collect();
    if limbs.is_empty() {
        limbs.push(0);
    }
    limbs
}

fn parse_header(c: &mut Cur) -> PResult<(Func, Type)> {
    if c.take_while(is_ident) != "fn" {
        return Err(c.err(format!(
            "expected `fn name(params) -> type {{`, found {}",
            c.found()
        )));
    }
    let name = c.take_while(|ch| is_name(ch) && ch != '<');
    if name.is_empty() {
        return Err(c.err("expected the function's name after `fn`"));
    }
    let mut size_params: Vec<String> = Vec::new();
    if c.eat("<") {
        while !c.eat(">") {
            let s = c.ident("a size parameter's name")?;
            if size_params.iter().any(|n| n == s) {
                return Err(c.err(format!("size parameter `{s}` is declared twice")));
            }
            size_params.push(s.to_string());
            if !c.eat(",") && !c.rest().trim_start().starts_with('>') {
                return Err(c.err(format!(
                    "expected `,` or `>` between size parameters, found {}",
                    c.found()
                )));
            }
        }
    }
    c.expect("(", "before the parameters")?;
    let params = param_list(c, ")", &size_params)?;
    c.expect("->", "before the output type")?;
    let out = c.ty(&size_params)?;
    c.expect("{", "at the end of the header")?;
    c.end("after the header's `{`")?;
    Ok((
        Func {
            name: name.to_string(),
            size_params,
            params,
            nodes: vec![],
            outputs: vec![],
        },
        out,
    ))
}

/// `NAME: TYPE, ..` up to `close`.
fn param_list(c: &mut Cur, close: &str, names: &[String]) -> PResult<Vec<Param>> {
    let mut params = Vec::new();
    while !c.eat(close) {
        let name = c.name("a parameter's name")?;
        c.expect(":", &format!("after parameter `{name}`"))?;
        let ty = c.ty(names)?;
        params.push(Param {
            name: name.to_string(),
            ty,
        });
        if !c.eat(",") && !c.rest().trim_start().starts_with(close) {
            return Err(c.err(format!(
                "expected `,` or `{close}` after a parameter, found {}",
                c.found()
            )));
        }
    }
    Ok(params)
}

/// The nodes of `func` up to its `return` and closing `}`.
fn parse_body(lines: &mut Lines, mut func: Func) -> PResult<Func> {
    let mut scope: HashMap<String, ValueId> = HashMap::new();
    loop {
        let Some((no, text)) = lines.next() else {
            return Err(lines.end_error(format!(
                "the text ends inside `{}`: expected `return` and `}}`",
                func.name
            )));
        };
        let mut c = Cur::new(text, no);
        if text == "}" {
            return Err(c.err(format!("`{}` ends without a `return`", func.name)));
        }
        if text.starts_with('%') {
            node(lines, &mut c, &mut func, &mut scope)?;
            continue;
        }
        if text.starts_with('|') {
            return Err(c.err(
                "a lambda block may only follow a map, or a scan or reduce written with `|..|`",
            ));
        }
        if c.take_while(is_ident) == "return" {
            let mut outputs = Vec::new();
            if !c.at_end() {
                loop {
                    outputs.push(value(&mut c, &scope)?);
                    if !c.eat(",") {
                        break;
                    }
                }
            }
            c.end("after the returned values")?;
            func.outputs = outputs;
            return match lines.next() {
                Some((_, "}")) => Ok(func),
                Some((no, text)) => Err(Cur::new(text, no).err(format!(
                    "expected `}}` after the `return` of `{}`",
                    func.name
                ))),
                None => Err(lines.end_error(format!(
                    "the text ends before the `}}` closing `{}`",
                    func.name
                ))),
            };
        }
        return Err(c.err("expected a node `%N = operation : type`, or `return`"));
    }
}

fn value(c: &mut Cur, scope: &HashMap<String, ValueId>) -> PResult<ValueId> {
    if !c.eat("%") {
        return Err(c.err(format!("expected a value `%N`, found {}", c.found())));
    }
    let name = c.take_while(is_ident);
    scope.get(name).copied().ok_or_else(|| {
        c.err(format!(
            "`%{name}` is not defined above (a lambda sees only its own values)"
        ))
    })
}

fn values(c: &mut Cur, scope: &HashMap<String, ValueId>) -> PResult<Vec<ValueId>> {
    let mut vs = Vec::new();
    if c.at_end() || c.rest().trim_start().starts_with(')') {
        return Ok(vs);
    }
    loop {
        vs.push(value(c, scope)?);
        if !c.eat(",") {
            return Ok(vs);
        }
    }
}

fn two(c: &mut Cur, scope: &HashMap<String, ValueId>, what: &str) -> PResult<(ValueId, ValueId)> {
    let a = value(c, scope)?;
    c.expect(",", &format!("between the operands of `{what}`"))?;
    Ok((a, value(c, scope)?))
}

/// The message of an IR error without the function's name: the line number says more, and in a
/// lambda the name is only `op`.
fn ir_message(e: IrError) -> String {
    match e {
        IrError::Type { message, .. } | IrError::Malformed { message, .. } => message,
        other => other.to_string(),
    }
}

/// A lambda's operator: named, or inline (its block follows).
enum Operator {
    Named(Func),
    Inline,
}

fn operator(c: &mut Cur) -> PResult<Operator> {
    if c.eat("|..|") {
        return Ok(Operator::Inline);
    }
    let name = c.take_while(|ch| is_ident(ch) || ch == '.');
    match Intrinsic::by_name(name) {
        Some(i) => Ok(Operator::Named(i.func().clone())),
        None => Err(c.err(format!(
            "unknown operator `{name}`: write an intrinsic ({}), or `|..|` with the lambda's block on the next lines",
            Intrinsic::ALL.map(|i| i.name()).join(", ")
        ))),
    }
}

fn placeholder() -> Func {
    Func {
        name: "op".into(),
        size_params: vec![],
        params: vec![],
        nodes: vec![],
        outputs: vec![],
    }
}

/// One node line (and the lambda block after it, if any), appended to `func`.
fn node(
    lines: &mut Lines,
    c: &mut Cur,
    func: &mut Func,
    scope: &mut HashMap<String, ValueId>,
) -> PResult<()> {
    // The caller saw the `%`.
    c.eat("%");
    let id = c.take_while(is_ident);
    if id.is_empty() {
        return Err(c.err("expected a value's name after `%`"));
    }
    if scope.contains_key(id) {
        return Err(c.err(format!("`%{id}` is defined twice")));
    }
    c.expect("=", &format!("after `%{id}`"))?;
    // The type follows the last ` : `, which no type's text contains.
    let start = c.i;
    let Some(split) = c.s[start..].rfind(" : ").map(|k| start + k) else {
        return Err(c.err("expected `: type` at the end of the node"));
    };
    let mut opc = Cur {
        s: &c.s[..split],
        i: start,
        ..Cur::new(c.s, c.line)
    };
    let mut tyc = Cur {
        i: split + 3,
        ..Cur::new(c.s, c.line)
    };
    let names = func.size_params.clone();
    let declared = tyc.ty(&names)?;
    tyc.end("after the node's type")?;
    let (mut op, mnemonic, inline) = operation(&mut opc, func, scope, &names)?;
    opc.end(&format!("after the operands of `{mnemonic}`"))?;
    if inline {
        // A loop's body is a program over the kernel's sizes; an operator's lambda has none.
        let sizes: &[String] = if matches!(op, Op::Loop { .. }) {
            &names
        } else {
            &[]
        };
        let lambda = lambda_block(lines, c, sizes)?;
        match &mut op {
            Op::Map { f, .. } => **f = lambda,
            Op::Scan { op, .. } | Op::Reduce { op, .. } => **op = lambda,
            Op::Loop { body, .. } => **body = lambda,
            _ => {}
        }
    }
    let err = |m: String| ParseError {
        line: c.line,
        message: m,
        source: c.s.to_string(),
    };
    let ty = match &op {
        // A cast's target is its node's type: there is nothing to infer.
        Op::Cast(a) => {
            check_cast(func, func.ty(*a), &declared).map_err(|e| err(ir_message(e)))?;
            declared
        }
        op => {
            let t = infer(func, op).map_err(|e| err(ir_message(e)))?;
            if t != declared {
                return Err(err(format!(
                    "`%{id}` is annotated {} but `{mnemonic}` gives {}",
                    declared.display(&names),
                    t.display(&names)
                )));
            }
            t
        }
    };
    let v = ValueId(func.nodes.len() as u32);
    func.nodes.push(Node { op, ty });
    scope.insert(id.to_string(), v);
    Ok(())
}

/// `|params| {` and the lambda's (or loop body's, over `sizes`) body, after the node at `at`
/// that needs it.
fn lambda_block(lines: &mut Lines, at: &Cur, sizes: &[String]) -> PResult<Func> {
    let Some((no, text)) = lines.next() else {
        return Err(lines.end_error(
            "the text ends where a lambda block `|params| { .. }` should follow".into(),
        ));
    };
    let mut c = Cur::new(text, no);
    if !c.eat("|") {
        return Err(c.err(format!(
            "expected the lambda block `|params| {{` of the node on line {}",
            at.line
        )));
    }
    let params = param_list(&mut c, "|", sizes)?;
    c.expect("{", "after a lambda's parameters")?;
    c.end("after a lambda's `{`")?;
    if lines.depth >= MAX_NESTING {
        return Err(c.err(format!("lambdas nested more than {MAX_NESTING} deep")));
    }
    lines.depth += 1;
    let body = parse_body(
        lines,
        Func {
            params,
            size_params: sizes.to_vec(),
            ..placeholder()
        },
    );
    lines.depth -= 1;
    body
}

/// The operation of a node line: the op, its mnemonic, and whether a lambda block follows.
fn operation(
    c: &mut Cur,
    func: &Func,
    scope: &HashMap<String, ValueId>,
    names: &[String],
) -> PResult<(Op, String, bool)> {
    let m = c.take_while(|ch| is_ident(ch) || ch == '.');
    let v = |c: &mut Cur| value(c, scope);
    let mut inline = false;
    let op = match m {
        "param" => {
            let name = c.rest().trim();
            c.i = c.s.len();
            let same: Vec<usize> = (0..func.params.len())
                .filter(|&i| func.params[i].name == name)
                .collect();
            let by_index = name
                .strip_prefix('#')
                .and_then(|d| d.parse::<usize>().ok())
                .filter(|&i| i < func.params.len());
            match (same.as_slice(), by_index) {
                (&[i], _) | ([], Some(i)) => Op::Param(i as u32),
                ([], None) => {
                    let all: Vec<&str> = func.params.iter().map(|p| p.name.as_str()).collect();
                    return Err(c.err(format!(
                        "there is no parameter `{name}` (the parameters are: {})",
                        all.join(", ")
                    )));
                }
                (shared, _) => {
                    let alts: Vec<String> =
                        shared.iter().map(|i| format!("`param #{i}`")).collect();
                    return Err(c.err(format!(
                        "several parameters are named `{name}`: write {}",
                        alts.join(" or ")
                    )));
                }
            }
        }
        "const" => Op::Const(c.literal(names)?),
        "cast" => Op::Cast(v(c)?),
        "zp.pow" => {
            let (x, e) = two(c, scope, m)?;
            Op::ZpPow(x, e)
        }
        "zp.inv" => Op::ZpInv(v(c)?),
        "poly_mul" => {
            let (a, b) = two(c, scope, m)?;
            c.expect("mod", "after the operands of `poly_mul`")?;
            Op::PolyMul {
                a,
                b,
                modulus: c.size(names)?,
            }
        }
        "big.pow_mod" => {
            let (x, e) = two(c, scope, m)?;
            c.expect(",", "before the modulus of `big.pow_mod`")?;
            Op::BigPowMod(x, e, v(c)?)
        }
        "big.add_mod" | "big.sub_mod" | "big.mul_mod" => {
            let (a, b) = two(c, scope, m)?;
            c.expect(",", &format!("before the modulus of `{m}`"))?;
            let op = match m {
                "big.add_mod" => BinOp::Add,
                "big.sub_mod" => BinOp::Sub,
                _ => BinOp::Mul,
            };
            Op::BigMod(op, a, b, v(c)?)
        }
        "big.mont_mul" | "limb.mont_mul" => {
            let (a, b) = two(c, scope, m)?;
            c.expect(",", &format!("before the modulus of `{m}`"))?;
            if m == "big.mont_mul" {
                Op::BigMontMul(a, b, v(c)?)
            } else {
                Op::LimbMontMul(a, b, v(c)?)
            }
        }
        "big.gcd" => {
            let (a, b) = two(c, scope, m)?;
            Op::BigGcd(a, b)
        }
        "big.inv_mod" => {
            let (a, b) = two(c, scope, m)?;
            Op::BigInvMod(a, b)
        }
        "big.div_rem" => {
            let (a, b) = two(c, scope, m)?;
            Op::BigDivRem(a, b)
        }
        "limb.div_rem" => {
            let (a, b) = two(c, scope, m)?;
            Op::LimbDivRem(a, b)
        }
        "limb.gcd" => {
            let (a, b) = two(c, scope, m)?;
            Op::LimbGcd(a, b)
        }
        "limb.mul_words" => {
            let (a, b) = two(c, scope, m)?;
            c.expect(",", "before the limb count of `limb.mul_words`")?;
            Op::LimbMulWords(
                a,
                b,
                c.number("the limb count of `limb.mul_words`")? as usize,
            )
        }
        "limb.mul_add_words" => {
            let (a, b) = two(c, scope, m)?;
            c.expect(",", "before the addend of `limb.mul_add_words`")?;
            let addend = v(c)?;
            c.expect(",", "before the limb count of `limb.mul_add_words`")?;
            Op::LimbMulAddWords(
                a,
                b,
                addend,
                c.number("the limb count of `limb.mul_add_words`")? as usize,
            )
        }
        "limb.inv_mod" => {
            let (a, b) = two(c, scope, m)?;
            Op::LimbInvMod(a, b)
        }
        "limb.pow_mod" => {
            let (x, e) = two(c, scope, m)?;
            c.expect(",", "before the modulus of `limb.pow_mod`")?;
            Op::LimbPowMod(x, e, v(c)?)
        }
        "select" => {
            let (cond, a) = two(c, scope, m)?;
            c.expect(",", "between the operands of `select`")?;
            Op::Select(cond, a, v(c)?)
        }
        "tuple" => Op::Tuple(values(c, scope)?),
        "extract" => {
            let t = v(c)?;
            c.expect(".", "between a tuple and the index of its field")?;
            let k = c.number("a field index")?;
            let k = u32::try_from(k).map_err(|_| c.err(format!("field index {k} is too large")))?;
            Op::Extract(t, k)
        }
        "big.add" | "big.sub" | "big.mul" | "big.mul_wide" | "big.div" | "big.rem" | "big.lt"
        | "big.le" | "big.eq" => {
            let (a, b) = two(c, scope, m)?;
            match m {
                "big.add" => Op::BigAdd(a, b),
                "big.sub" => Op::BigSub(a, b),
                "big.mul" => Op::BigMul(a, b),
                "big.mul_wide" => Op::BigMulWide(a, b),
                "big.div" => Op::BigDiv(a, b),
                "big.rem" => Op::BigRem(a, b),
                "big.lt" => Op::BigCmp(CmpOp::Lt, a, b),
                "big.le" => Op::BigCmp(CmpOp::Le, a, b),
                _ => Op::BigCmp(CmpOp::Eq, a, b),
            }
        }
        "limb_mul.classical" | "limb_mul.ntt" => {
            let (a, b) = two(c, scope, m)?;
            c.expect(",", "before `out` of `limb_mul`")?;
            c.expect("out", "before the length of a `limb_mul`'s product")?;
            Op::LimbMul {
                a,
                b,
                out_len: c.size(names)?,
                algo: if m == "limb_mul.ntt" {
                    MulAlgo::Ntt
                } else {
                    MulAlgo::Classical
                },
            }
        }
        "limbs" => Op::Limbs(v(c)?),
        "big.isqrt" => Op::BigIsqrt(v(c)?),
        "big.isqrt_whole" => Op::BigIsqrtWhole(v(c)?),
        "limb.isqrt" => Op::LimbIsqrt(v(c)?),
        "from_limbs" => Op::FromLimbs(v(c)?),
        "iota" => Op::Iota(c.size(names)?),
        "map" => {
            // `map NAME (..)` names an intrinsic; `map (..)` has its lambda's block on the next lines.
            let f = if c.eat("(") {
                inline = true;
                placeholder()
            } else {
                let Operator::Named(f) = operator(c)? else {
                    return Err(c.err("a map's lambda is an intrinsic's name or a block after the line, not `|..|`"));
                };
                c.expect("(", "before the arguments of `map`")?;
                f
            };
            let args = values(c, scope)?;
            c.expect(")", "after the arguments of `map`")?;
            Op::Map {
                f: Box::new(f),
                args,
            }
        }
        "zip" => Op::Zip(values(c, scope)?),
        "loop" => {
            let count = c.size(names)?;
            c.expect(",", "after a loop's count")?;
            c.expect("(", "before the arguments of `loop`")?;
            let args = values(c, scope)?;
            c.expect(")", "after the arguments of `loop`")?;
            inline = true;
            Op::Loop {
                count,
                body: Box::new(placeholder()),
                args,
            }
        }
        "scan.inclusive" | "scan.exclusive" | "reduce" => {
            let op = match operator(c)? {
                Operator::Named(f) => f,
                Operator::Inline => {
                    inline = true;
                    placeholder()
                }
            };
            c.expect(",", &format!("after the operator of `{m}`"))?;
            c.expect("init", &format!("before the identity of `{m}`"))?;
            let init = c.literal(names)?;
            c.expect(",", &format!("after the identity of `{m}`"))?;
            let input = v(c)?;
            if m == "reduce" {
                Op::Reduce {
                    op: Box::new(op),
                    init,
                    input,
                }
            } else {
                let flags = if c.eat(",") {
                    c.expect("segments", "before a scan's segment flags")?;
                    Some(v(c)?)
                } else {
                    None
                };
                Op::Scan {
                    op: Box::new(op),
                    init,
                    exclusive: m == "scan.exclusive",
                    input,
                    flags,
                }
            }
        }
        "gather" => {
            let (src, idx) = two(c, scope, m)?;
            Op::Gather { src, idx }
        }
        "big.bit" => {
            let (x, i) = two(c, scope, m)?;
            Op::BigBit(x, i)
        }
        other => {
            let (big, name) = match other.strip_prefix("big.") {
                Some(rest) => (true, rest),
                None => (false, other),
            };
            let unary = UnOp::ALL.into_iter().find(|u| u.mnemonic() == name);
            let shift = ShiftOp::ALL.into_iter().find(|s| s.mnemonic() == name);
            let binary = BinOp::ALL.into_iter().find(|b| b.mnemonic() == name);
            match (big, unary, shift, binary) {
                (false, Some(u), _, _) => Op::Unary(u, v(c)?),
                (true, Some(u), _, _) => Op::BigUnary(u, v(c)?),
                (true, None, Some(s), _) => {
                    let (x, k) = two(c, scope, other)?;
                    Op::BigShift(s, x, k)
                }
                (true, None, None, Some(b @ (BinOp::And | BinOp::Or | BinOp::Xor))) => {
                    let (x, y) = two(c, scope, other)?;
                    Op::BigBitwise(b, x, y)
                }
                (false, None, _, Some(b)) => {
                    let (x, y) = two(c, scope, other)?;
                    Op::Binary(b, x, y)
                }
                _ if other.is_empty() => {
                    return Err(c.err(format!("expected an operation, found {}", c.found())))
                }
                _ => return Err(c.err(format!("unknown operation `{other}`"))),
            }
        }
    };
    Ok((op, m.to_string(), inline))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_limbs_are_little_endian_and_minimal() {
        assert_eq!(hex_limbs("0"), vec![0]);
        assert_eq!(hex_limbs("000ff"), vec![0xff]);
        assert_eq!(
            hex_limbs("1ffffffffffffffff"),
            vec![u64::MAX, 1],
            "17 digits are two limbs"
        );
    }

    #[test]
    fn types_and_sizes_read_back() {
        let names = vec!["BITS".to_string(), "N".to_string()];
        for text in [
            "bool",
            "[(u64, u32); 2*BITS]",
            "(U<BITS>,)",
            "()",
            "[Zp<N>; 4]",
            "U<S1>",
        ] {
            let t = Cur::new(text, 1).ty(&names).unwrap();
            let back = t.display(&names).to_string();
            assert_eq!(back, text.replace("S1", "N"));
        }
        assert!(Cur::new("(u64)", 1).ty(&names).is_err());
        assert!(Cur::new("U<M>", 1).ty(&names).is_err());
    }
}

//! `--filter EXPR`: the grammar perf and ftrace use for tracepoint filters
//! (Documentation/trace/events.rst, "Event filtering"), parsed into comparisons of named values
//! with constants and compiled into what one BPF filter holds: up to [`FILTER_ATOMS`]
//! comparisons, the truth table that combines them, and a glob automaton per string match.
//! Pure: the probe layer resolves the names against each probe.

use std::fmt::Write as _;

use tracer_common::{FILTER_ATOMS, GLOB_ACCEPT, GLOB_DEAD, GLOB_ROW, GLOB_STATES};

use crate::Error;

/// Where a piece of the expression is: a byte range of its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub len: usize,
}

/// How a name is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `&`: any bit in common.
    BitAnd,
    /// `~`: a glob match (strings).
    Glob,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::BitAnd => "&",
            Op::Glob => "~",
        }
    }

    /// Whether strings can be compared this way.
    pub fn for_strings(self) -> bool {
        matches!(self, Op::Eq | Op::Ne | Op::Glob)
    }
}

/// The constant a name is compared with.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Literal {
    /// A number, as two's complement (`-2` is `u64::MAX - 1`), and whether it was negative.
    Number { value: u64, negative: bool },
    /// A quoted string.
    Str(String),
    /// An unquoted word that is not a number: a string for a string field (`comm == bash`, as
    /// ftrace takes it), an error for a number.
    Word(String),
}

/// One comparison: `name op literal`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Atom {
    pub name: String,
    pub name_span: Span,
    pub op: Op,
    pub literal: Literal,
    pub literal_span: Span,
    /// String comparisons: the automaton's first row in [`FilterPlan::globs`], and whether the
    /// empty string matches.
    pub glob: Option<(u32, bool)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Expr {
    Atom(usize),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

impl Expr {
    fn eval(&self, bits: u64) -> bool {
        match self {
            Expr::Atom(k) => bits >> k & 1 == 1,
            Expr::Not(e) => !e.eval(bits),
            Expr::And(a, b) => a.eval(bits) && b.eval(bits),
            Expr::Or(a, b) => a.eval(bits) || b.eval(bits),
        }
    }
}

/// A parsed and compiled `--filter`, the same for every probe of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterPlan {
    /// The expression as given (for errors that point into it).
    pub text: String,
    /// The distinct comparisons, at most [`FILTER_ATOMS`].
    pub atoms: Vec<Atom>,
    /// Bit `i`: whether the hit passes when the atoms' results are the bits of `i`.
    pub table: u64,
    /// The rows of every string comparison's automaton (`GLOBS`).
    pub globs: Vec<[u8; GLOB_ROW]>,
}

impl FilterPlan {
    /// Rows of the glob automata and the shape the programs are loaded with: the number of
    /// comparisons, and a bit per comparison of strings from bit 8.
    pub fn sizing(&self) -> (u32, u32) {
        let strings = (self.atoms.iter().enumerate())
            .filter(|(_, a)| a.glob.is_some())
            .fold(0, |m, (k, _)| m | 1 << (8 + k));
        (self.globs.len() as u32, self.atoms.len() as u32 | strings)
    }

    /// A usage error about the part of the expression at `span`: the message, then the
    /// expression with the part underlined.
    pub fn error_at(
        &self,
        span: Span,
        message: impl std::fmt::Display,
        hints: Vec<String>,
    ) -> Error {
        Error::usage(pointed(&self.text, span, message), hints)
    }
}

/// `--filter: MESSAGE`, the expression, and a caret line under `span`.
fn pointed(text: &str, span: Span, message: impl std::fmt::Display) -> String {
    let mut out = format!("--filter: {message}\n    {text}\n    ");
    let before = text.get(..span.start).unwrap_or(text).chars().count();
    let width = text
        .get(span.start..span.start + span.len)
        .map_or(1, |s| s.chars().count().max(1));
    let _ = write!(out, "{}{}", " ".repeat(before), "^".repeat(width));
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Name(String),
    Number(Literal),
    Str(String),
    Op(Op),
    AndAnd,
    OrOr,
    Not,
    Open,
    Close,
    End,
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl Lexer<'_> {
    fn error(&self, span: Span, message: impl std::fmt::Display, hint: &str) -> Error {
        Error::usage(pointed(self.text, span, message), vec![hint.to_string()])
    }

    /// The next token and where it is.
    fn next(&mut self) -> Result<(Token, Span), Error> {
        let bytes = self.text.as_bytes();
        while self.pos < bytes.len() && bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        let start = self.pos;
        let span = |end: usize| Span {
            start,
            len: end - start,
        };
        let Some(&c) = bytes.get(start) else {
            return Ok((Token::End, span(start)));
        };
        let two = self.text.get(start..start + 2).unwrap_or("");
        let (token, len) = match (c, two) {
            (_, "&&") => (Token::AndAnd, 2),
            (_, "||") => (Token::OrOr, 2),
            (_, "==") => (Token::Op(Op::Eq), 2),
            (_, "!=") => (Token::Op(Op::Ne), 2),
            (_, "<=") => (Token::Op(Op::Le), 2),
            (_, ">=") => (Token::Op(Op::Ge), 2),
            (b'<', _) => (Token::Op(Op::Lt), 1),
            (b'>', _) => (Token::Op(Op::Gt), 1),
            (b'&', _) => (Token::Op(Op::BitAnd), 1),
            (b'~', _) => (Token::Op(Op::Glob), 1),
            (b'!', _) => (Token::Not, 1),
            (b'(', _) => (Token::Open, 1),
            (b')', _) => (Token::Close, 1),
            (b'=', _) => {
                return Err(self.error(
                    span(start + 1),
                    "'=' is not an operator",
                    "compare with ==",
                ))
            }
            (b'|', _) => {
                return Err(self.error(
                    span(start + 1),
                    "'|' is not an operator",
                    "join conditions with ||",
                ))
            }
            (b'"' | b'\'', _) => return self.string(c),
            _ => return self.word(),
        };
        self.pos += len;
        Ok((token, span(self.pos)))
    }

    /// A quoted string, with `\"`, `\'` and `\\` as escapes.
    fn string(&mut self, quote: u8) -> Result<(Token, Span), Error> {
        let start = self.pos;
        let mut out = String::new();
        let mut chars = self.text[start + 1..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, e)) if e == '"' || e == '\'' || e == '\\' => out.push(e),
                    // Glob escapes stay for the glob compiler.
                    Some((_, e)) => {
                        out.push('\\');
                        out.push(e);
                    }
                    None => break,
                },
                c if c as u32 == u32::from(quote) => {
                    self.pos = start + 1 + i + 1;
                    let span = Span {
                        start,
                        len: self.pos - start,
                    };
                    return Ok((Token::Str(out), span));
                }
                c => out.push(c),
            }
        }
        let span = Span {
            start,
            len: self.text.len() - start,
        };
        Err(self.error(
            span,
            "the string is not closed",
            "end it with the quote it began with",
        ))
    }

    /// A name (`filename`, `how->flags`, `a.b`), a number, or an unquoted word.
    fn word(&mut self) -> Result<(Token, Span), Error> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        let mut end = start;
        while end < bytes.len() {
            let c = bytes[end];
            let arrow = c == b'-' && bytes.get(end + 1) == Some(&b'>') && end > start;
            if arrow {
                end += 2;
            } else if c.is_ascii_alphanumeric()
                || matches!(c, b'_' | b'.' | b'/' | b'*' | b'?')
                || (c == b'-' && end == start)
                || (c == b'+' && end == start)
            {
                end += 1;
            } else {
                break;
            }
        }
        let span = Span {
            start,
            len: end.max(start + 1) - start,
        };
        if end == start {
            let c = self.text[start..].chars().next().unwrap_or(' ');
            return Err(self.error(
                span,
                format_args!("unexpected '{c}'"),
                "write NAME OP VALUE, e.g. 'ret < 0' or 'filename ~ \"/etc/*\"'",
            ));
        }
        self.pos = end;
        let word = &self.text[start..end];
        if let Some(number) = parse_number(word) {
            return Ok((Token::Number(number), span));
        }
        let name = word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && word
                .split("->")
                .flat_map(|p| p.split('.'))
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        match name {
            true => Ok((Token::Name(word.to_string()), span)),
            false => Ok((Token::Number(Literal::Word(word.to_string())), span)),
        }
    }
}

/// A decimal, hex (`0x`) or octal (`0o`, or a leading 0 as in C) number, maybe negative.
fn parse_number(word: &str) -> Option<Literal> {
    let (negative, digits) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word.strip_prefix('+').unwrap_or(word)),
    };
    let magnitude = if let Some(hex) = digits.strip_prefix("0x").or(digits.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()?
    } else if let Some(oct) = digits.strip_prefix("0o") {
        u64::from_str_radix(oct, 8).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse::<u64>().ok()?
    };
    if negative && magnitude > 1 << 63 {
        return None;
    }
    Some(Literal::Number {
        value: match negative {
            true => magnitude.wrapping_neg(),
            false => magnitude,
        },
        negative: negative && magnitude != 0,
    })
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    token: Token,
    span: Span,
    atoms: Vec<Atom>,
}

impl Parser<'_> {
    fn advance(&mut self) -> Result<(), Error> {
        (self.token, self.span) = self.lexer.next()?;
        Ok(())
    }

    fn error(&self, message: impl std::fmt::Display, hint: &str) -> Error {
        self.lexer.error(self.span, message, hint)
    }

    fn or(&mut self) -> Result<Expr, Error> {
        let mut left = self.and()?;
        while self.token == Token::OrOr {
            self.advance()?;
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, Error> {
        let mut left = self.unary()?;
        while self.token == Token::AndAnd {
            self.advance()?;
            left = Expr::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, Error> {
        match self.token.clone() {
            Token::Not => {
                self.advance()?;
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            Token::Open => {
                let open = self.span;
                self.advance()?;
                let inner = self.or()?;
                if self.token != Token::Close {
                    return Err(self.lexer.error(
                        open,
                        "this parenthesis is not closed",
                        "add the ')' that ends it",
                    ));
                }
                self.advance()?;
                Ok(inner)
            }
            Token::Name(name) => self.comparison(name),
            Token::End => Err(self.error(
                "a condition is missing here",
                "write NAME OP VALUE, e.g. 'ret < 0'",
            )),
            _ => Err(self.error(
                "expected a name here",
                "write NAME OP VALUE with the name first, e.g. 'ret < 0' (names: argument and field names, comm, pid, tid, cpu)",
            )),
        }
    }

    fn comparison(&mut self, name: String) -> Result<Expr, Error> {
        let name_span = self.span;
        self.advance()?;
        let op = match self.token {
            Token::Op(op) => op,
            _ => {
                return Err(self.error(
                    format_args!("expected an operator after '{name}'"),
                    "operators: == != < <= > >= & on numbers, == != ~ on strings",
                ))
            }
        };
        self.advance()?;
        let literal = match self.token.clone() {
            Token::Number(literal) => literal,
            Token::Str(text) => Literal::Str(text),
            Token::Name(word) => Literal::Word(word),
            _ => {
                return Err(self.error(
                    format_args!("expected a value after '{name} {}'", op.text()),
                    "a number (42, -2, 0x40) or a quoted string (\"/etc/*\")",
                ))
            }
        };
        let literal_span = self.span;
        self.advance()?;
        let atom = Atom {
            name,
            name_span,
            op,
            literal,
            literal_span,
            glob: None,
        };
        let same = |a: &Atom| a.name == atom.name && a.op == atom.op && a.literal == atom.literal;
        let index = match self.atoms.iter().position(same) {
            Some(index) => index,
            None if self.atoms.len() < FILTER_ATOMS => {
                self.atoms.push(atom);
                self.atoms.len() - 1
            }
            None => {
                let span = Span {
                    start: name_span.start,
                    len: literal_span.start + literal_span.len - name_span.start,
                };
                return Err(self.lexer.error(
                    span,
                    format_args!("more than {FILTER_ATOMS} different comparisons"),
                    "a filter is evaluated in the kernel with a fixed number of comparisons: use fewer, or trace more and narrow it afterwards",
                ));
            }
        };
        Ok(Expr::Atom(index))
    }
}

/// Parses and compiles `--filter`'s expression.
pub fn parse(text: &str) -> Result<FilterPlan, Error> {
    let mut parser = Parser {
        lexer: Lexer { text, pos: 0 },
        token: Token::End,
        span: Span { start: 0, len: 0 },
        atoms: Vec::new(),
    };
    parser.advance()?;
    let expr = parser.or()?;
    if parser.token != Token::End {
        let hint = match parser.token {
            Token::Close => "this ')' has no '(' before it",
            _ => "join conditions with && or ||",
        };
        return Err(parser.error("unexpected text after a complete condition", hint));
    }
    let mut table = 0u64;
    for bits in 0..1u64 << parser.atoms.len() {
        if expr.eval(bits) {
            table |= 1 << bits;
        }
    }
    let mut plan = FilterPlan {
        text: text.to_string(),
        atoms: parser.atoms,
        table,
        globs: Vec::new(),
    };
    for k in 0..plan.atoms.len() {
        let atom = &plan.atoms[k];
        let pattern = match (&atom.literal, atom.op) {
            (Literal::Str(s) | Literal::Word(s), Op::Glob) => glob_pattern(s),
            // An unquoted IPv4 address is a number of a network-order value (`skc_daddr ==
            // 127.0.0.1`), not a string: a string argument's compare asks for quotes.
            (Literal::Word(s), Op::Eq | Op::Ne) if s.parse::<std::net::Ipv4Addr>().is_ok() => {
                continue
            }
            (Literal::Str(s) | Literal::Word(s), Op::Eq | Op::Ne) => Ok(literal_pattern(s)),
            (Literal::Number { .. }, Op::Glob) => {
                Err("~ matches strings against a glob".to_string())
            }
            _ => continue,
        };
        let span = atom.literal_span;
        let pattern = pattern.map_err(|why| {
            plan.error_at(span, format_args!("bad glob: {why}"), vec![
                "globs take * (any text), ? (one byte), [abc], [a-z], [!abc]; \\ quotes the next character".into(),
            ])
        })?;
        let automaton = compile(&pattern).map_err(|why| {
            plan.error_at(span, why, vec!["use a shorter or simpler pattern".into()])
        })?;
        let base = plan.globs.len() as u32;
        plan.globs.extend(automaton.rows);
        plan.atoms[k].glob = Some((base, automaton.empty_matches));
    }
    Ok(plan)
}

/// One element of a glob: any text, or one byte of a set.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Element {
    Star,
    Byte(Box<[bool; 256]>),
}

fn one(byte: u8) -> Element {
    let mut set = Box::new([false; 256]);
    set[byte as usize] = true;
    Element::Byte(set)
}

/// `==`'s pattern: every byte literal.
fn literal_pattern(text: &str) -> Vec<Element> {
    text.bytes().map(one).collect()
}

/// A glob's elements: `*`, `?`, `[...]` classes (`!` or `^` negates, `a-z` ranges), `\x`.
fn glob_pattern(text: &str) -> Result<Vec<Element>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'*' => {
                if out.last() != Some(&Element::Star) {
                    out.push(Element::Star);
                }
            }
            b'?' => out.push(Element::Byte(Box::new([true; 256]))),
            b'\\' => {
                i += 1;
                let byte = *bytes.get(i).ok_or("a \\ at the end quotes nothing")?;
                out.push(one(byte));
            }
            b'[' => {
                let mut set = Box::new([false; 256]);
                let mut j = i + 1;
                let negate = matches!(bytes.get(j), Some(b'!' | b'^'));
                if negate {
                    j += 1;
                }
                let first = j;
                loop {
                    let c = *bytes.get(j).ok_or("a [ class is not closed with ]")?;
                    if c == b']' && j > first {
                        break;
                    }
                    if bytes.get(j + 1) == Some(&b'-')
                        && bytes.get(j + 2).is_some_and(|&e| e != b']')
                    {
                        let end = bytes[j + 2];
                        if end < c {
                            return Err(format!(
                                "the range {}-{} is backwards",
                                c as char, end as char
                            ));
                        }
                        for b in c..=end {
                            set[b as usize] = true;
                        }
                        j += 3;
                    } else {
                        set[c as usize] = true;
                        j += 1;
                    }
                }
                if negate {
                    for b in set.iter_mut() {
                        *b = !*b;
                    }
                }
                out.push(Element::Byte(set));
                i = j;
            }
            byte => out.push(one(byte)),
        }
        i += 1;
    }
    Ok(out)
}

/// A glob as a deterministic automaton: rows of next states (with [`GLOB_ACCEPT`] when that
/// state matches, [`GLOB_DEAD`] when no continuation can), state 0 first.
struct Automaton {
    rows: Vec<[u8; GLOB_ROW]>,
    empty_matches: bool,
}

/// Positions of the pattern still alive after the text so far: bit i = element i is next (bit
/// `len` = the pattern is done). A `*` may match nothing, so the position after it is alive
/// with it.
fn closure(pattern: &[Element], mut set: u64) -> u64 {
    for (i, element) in pattern.iter().enumerate() {
        if set >> i & 1 == 1 && *element == Element::Star {
            set |= 1 << (i + 1);
        }
    }
    set
}

fn step(pattern: &[Element], set: u64, byte: u8) -> u64 {
    let mut next = 0;
    for (i, element) in pattern.iter().enumerate() {
        if set >> i & 1 == 0 {
            continue;
        }
        match element {
            Element::Star => next |= 1 << i,
            Element::Byte(bytes) if bytes[byte as usize] => next |= 1 << (i + 1),
            Element::Byte(_) => {}
        }
    }
    closure(pattern, next)
}

/// Subset construction over the pattern's positions.
fn compile(pattern: &[Element]) -> Result<Automaton, String> {
    if pattern.len() > 63 {
        return Err(format!(
            "the pattern has {} elements; at most 63 are compiled into the kernel",
            pattern.len()
        ));
    }
    let done = 1u64 << pattern.len();
    let start = closure(pattern, 1);
    let mut states = vec![start];
    let mut rows = Vec::new();
    let mut k = 0;
    while k < states.len() {
        let mut row = [GLOB_DEAD; GLOB_ROW];
        for byte in 0..=255u8 {
            let next = step(pattern, states[k], byte);
            if next == 0 {
                continue;
            }
            let index = match states.iter().position(|&s| s == next) {
                Some(index) => index,
                None => {
                    states.push(next);
                    states.len() - 1
                }
            };
            if index >= GLOB_STATES {
                return Err(format!(
                    "the pattern needs more than {GLOB_STATES} automaton states"
                ));
            }
            let accept = if next & done != 0 { GLOB_ACCEPT } else { 0 };
            row[byte as usize] = index as u8 | accept;
        }
        rows.push(row);
        k += 1;
    }
    Ok(Automaton {
        rows,
        empty_matches: start & done != 0,
    })
}

/// The names every probe has besides its own fields and arguments.
pub const TASK_NAMES: [&str; 4] = ["comm", "pid", "tid", "cpu"];

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs an automaton the way the BPF program does.
    fn matches(plan: &FilterPlan, atom: usize, text: &str) -> bool {
        let (base, empty) = plan.atoms[atom].glob.expect("a string atom");
        let mut state = 0u32;
        let mut accepts = empty;
        for &byte in text.as_bytes() {
            let next = plan.globs[(base + state) as usize][byte as usize];
            accepts = next & GLOB_ACCEPT != 0;
            state = u32::from(next & !GLOB_ACCEPT);
            if state == u32::from(GLOB_DEAD) {
                break;
            }
        }
        accepts != (plan.atoms[atom].op == Op::Ne)
    }

    fn error(text: &str) -> String {
        match parse(text) {
            Err(Error::Usage { message, hints }) => format!("{message}\n{}", hints.join("\n")),
            other => panic!("expected a usage error for {text}, got {other:?}"),
        }
    }

    #[test]
    fn comparisons_and_their_truth_table() {
        let plan = parse("ret < 0").expect("parse");
        assert_eq!(plan.atoms.len(), 1);
        assert_eq!(plan.atoms[0].name, "ret");
        assert_eq!(plan.atoms[0].op, Op::Lt);
        assert_eq!(
            plan.atoms[0].literal,
            Literal::Number {
                value: 0,
                negative: false
            }
        );
        assert_eq!(plan.table, 0b10);
        // a && (b || !c): atoms a=0, b=1, c=2.
        let plan = parse("pid == 5 && (flags & 0x40 || !(cpu >= 1))").expect("parse");
        assert_eq!(plan.atoms.len(), 3);
        for bits in 0..8u64 {
            let (a, b, c) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
            assert_eq!(
                plan.table >> bits & 1 == 1,
                a && (b || !c),
                "bits {bits:03b}"
            );
        }
        assert_eq!(
            plan.atoms[1].literal,
            Literal::Number {
                value: 0x40,
                negative: false
            }
        );
        // The same comparison twice is one atom; && binds tighter than ||.
        let plan = parse("ret == -2 || ret == -2 && tid != 1").expect("parse");
        assert_eq!(plan.atoms.len(), 2);
        assert_eq!(
            plan.atoms[0].literal,
            Literal::Number {
                value: (-2i64) as u64,
                negative: true
            }
        );
        assert_eq!(plan.table, 0b1010);
    }

    #[test]
    fn numbers_in_every_base() {
        let value = |text| match parse_number(text) {
            Some(Literal::Number { value, .. }) => value,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(value("42"), 42);
        assert_eq!(value("0x2a"), 42);
        assert_eq!(value("052"), 42);
        assert_eq!(value("0o52"), 42);
        assert_eq!(value("-1"), u64::MAX);
        assert_eq!(value("0"), 0);
        assert_eq!(parse_number("0x"), None);
        assert_eq!(parse_number("12ab"), None);
    }

    #[test]
    fn an_unquoted_address_is_not_a_string_but_a_quoted_one_is() {
        let bare = parse("daddr == 127.0.0.1").unwrap();
        assert_eq!(bare.atoms[0].glob, None);
        assert_eq!(bare.atoms[0].literal, Literal::Word("127.0.0.1".into()));
        let quoted = parse("name == \"127.0.0.1\"").unwrap();
        assert!(quoted.atoms[0].glob.is_some());
        // Other bare words stay strings (a string argument's compare asks for quotes then).
        assert!(parse("name == abc.def").unwrap().atoms[0].glob.is_some());
    }

    #[test]
    fn globs_match_as_the_shell_does() {
        let plan = parse(
            r#"filename ~ "/etc/*" || comm == 'ba*sh' || filename ~ "*.so.[0-9]" || comm ~ bash || filename ~ "[!/]?x\*""#,
        )
        .expect("parse");
        assert!(matches(&plan, 0, "/etc/hostname"));
        assert!(matches(&plan, 0, "/etc/"));
        assert!(!matches(&plan, 0, "/etc"));
        assert!(!matches(&plan, 0, "/usr/etc/x"));
        // == is literal: the * is a character.
        assert!(matches(&plan, 1, "ba*sh"));
        assert!(!matches(&plan, 1, "bash"));
        assert!(matches(&plan, 2, "/lib/libc.so.6"));
        assert!(!matches(&plan, 2, "/lib/libc.so.60"));
        assert!(!matches(&plan, 2, "/lib/libc.so"));
        // An unquoted word is a string.
        assert!(matches(&plan, 3, "bash"));
        assert!(!matches(&plan, 3, "bashx"));
        assert!(matches(&plan, 4, "a.x*"));
        assert!(!matches(&plan, 4, "/.x*"));
        assert!(!matches(&plan, 4, "a.xy"));
    }

    #[test]
    fn not_equal_and_empty_strings() {
        let plan = parse(r#"comm != "sh" && filename == "" && filename ~ "*""#).expect("parse");
        assert!(matches(&plan, 0, "bash"));
        assert!(!matches(&plan, 0, "sh"));
        assert!(matches(&plan, 0, ""));
        assert!(matches(&plan, 1, ""));
        assert!(!matches(&plan, 1, "x"));
        assert!(matches(&plan, 2, ""));
        assert!(matches(&plan, 2, "anything at all"));
    }

    #[test]
    fn errors_point_at_the_column() {
        assert_eq!(
            error("ret = 0"),
            "--filter: '=' is not an operator\n    ret = 0\n        ^\ncompare with =="
        );
        assert_eq!(
            error("(ret < 0"),
            "--filter: this parenthesis is not closed\n    (ret < 0\n    ^\nadd the ')' that ends it"
        );
        assert_eq!(
            error(r#"filename ~ "/etc"#),
            "--filter: the string is not closed\n    filename ~ \"/etc\n               ^^^^^\nend it with the quote it began with"
        );
        assert_eq!(
            error("ret < 0 ret > 5"),
            "--filter: unexpected text after a complete condition\n    ret < 0 ret > 5\n            ^^^\njoin conditions with && or ||"
        );
        assert_eq!(
            error("ret <"),
            "--filter: expected a value after 'ret <'\n    ret <\n         ^\na number (42, -2, 0x40) or a quoted string (\"/etc/*\")"
        );
        assert_eq!(
            error("0 < ret"),
            "--filter: expected a name here\n    0 < ret\n    ^\nwrite NAME OP VALUE with the name first, e.g. 'ret < 0' (names: argument and field names, comm, pid, tid, cpu)"
        );
        assert!(error("a==1||a==2||a==3||a==4||a==5||a==6||a==7")
            .starts_with("--filter: more than 6 different comparisons\n    a==1||a==2||a==3||a==4||a==5||a==6||a==7\n                                        ^^^^"));
        assert!(error(r#"filename ~ "[z-a]""#).contains("bad glob: the range z-a is backwards"));
        assert!(error("ret ~ 5").contains("bad glob: ~ matches strings against a glob"));
    }

    #[test]
    fn member_paths_are_names() {
        let plan = parse("how->flags & 0100 && p->a.b == 1").expect("parse");
        assert_eq!(plan.atoms[0].name, "how->flags");
        assert_eq!(
            plan.atoms[0].literal,
            Literal::Number {
                value: 0o100,
                negative: false
            }
        );
        assert_eq!(plan.atoms[1].name, "p->a.b");
        assert_eq!(plan.atoms[1].name_span, Span { start: 21, len: 6 });
    }
}

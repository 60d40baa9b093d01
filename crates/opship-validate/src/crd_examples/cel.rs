//! CEL expressions of `x-kubernetes-validations` checked as the API server compiles them: first
//! the size and nesting limits of cel-go's parser, measured by a single loop over the text,
//! then the `cel` crate's parser, which recurses once per nesting level and so must never see
//! an expression the limits refuse.
//!
//! The API server parses with cel-go's defaults (it sets neither `ParserRecursionLimit` nor
//! `ParserExpressionSizeLimit`), which refuse an expression when
//! - it has more than [`MAX_CODE_POINTS`] code points;
//! - its parse listener sees more than [`MAX_DEPTH`] open invocations of one grammar rule
//!   (brackets, calls, lists, maps and conditionals nest `expr`; pending `+`/`*` operators nest
//!   `calc`, pending relations `relation`): [`Shape::nesting`];
//! - its parse-tree visitor meets more than [`MAX_DEPTH`] selections, indexes, member calls,
//!   relations, arithmetic operators and conditionals on one path from the root:
//!   [`Shape::depth`]. This is what `self.a.a.a…` and `x + x + x…` exceed.
//!
//! [`shape`] computes both counts for every expression the grammar accepts, with an explicit
//! stack instead of recursion: the depth as cel-go's visitor counts it over the tree (the tests
//! compare it with the `cel` crate's tree), the nesting as ANTLR enters rules (a left-recursive
//! rule once per invocation, however long its loop). On broken input it errs towards larger
//! counts; the parse then runs on a thread with a large stack ([`PARSER_STACK`]), with the
//! crate's own recursion and error-recovery limits as the last guard.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// cel-go's `ExpressionSizeCodePointLimit` default.
pub const MAX_CODE_POINTS: usize = 100_000;

/// cel-go's `MaxRecursionDepth` default.
pub const MAX_DEPTH: usize = 250;

/// Stack of the thread that parses CEL. An expression within the limits needs at most a few
/// MiB (measured: 250 nested brackets, calls, lists or indexes, 250 brackets each inside
/// `a + a *`, 250 chained selections: each fits in 4 MiB); the rest is margin for broken
/// input. Only the pages touched are ever committed.
pub const PARSER_STACK: usize = 64 * 1024 * 1024;

/// Parse results are cached up to this many expressions…
const CACHE_MAX_ENTRIES: usize = 16_384;
/// …and this many bytes of expression text.
const CACHE_MAX_BYTES: usize = 32 * 1024 * 1024;

/// Why the API server would refuse an expression, or `None` when it parses. Must run on a
/// thread with a [`PARSER_STACK`]-sized stack.
pub fn check(text: &str) -> Option<String> {
    let code_points = text.chars().count();
    if code_points > MAX_CODE_POINTS {
        return Some(format!(
            "it is {code_points} characters long; the API server refuses CEL expressions of \
             more than {MAX_CODE_POINTS} characters (cel-go's expression size limit)"
        ));
    }
    let s = shape(text);
    if s.nesting > MAX_DEPTH {
        return Some(format!(
            "it nests {} levels deep; the API server refuses CEL expressions nested more than \
             {MAX_DEPTH} levels (cel-go's parser recursion limit)",
            s.nesting
        ));
    }
    if s.depth > MAX_DEPTH {
        return Some(format!(
            "it chains {} selections, indexes, calls and operators; the API server refuses \
             more than {MAX_DEPTH} on one path (cel-go's parser recursion limit)",
            s.depth
        ));
    }
    parse(text)
}

/// Parse results by expression text, shared by every bundle of the process: operators repeat
/// the same rules across versions and bundles, and the ANTLR-based parser costs milliseconds
/// per expression.
static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();

#[derive(Default)]
struct Cache {
    map: HashMap<String, Option<String>>,
    bytes: usize,
}

/// [`check`], through the cache.
pub fn check_cached(text: &str) -> Option<String> {
    let cache = CACHE.get_or_init(Mutex::default);
    if let Ok(c) = cache.lock()
        && let Some(hit) = c.map.get(text)
    {
        return hit.clone();
    }
    let result = check(text);
    if let Ok(mut c) = cache.lock()
        && c.map.len() < CACHE_MAX_ENTRIES
        && c.bytes + text.len() <= CACHE_MAX_BYTES
    {
        c.bytes += text.len();
        c.map.insert(text.to_owned(), result.clone());
    }
    result
}

/// The `cel` crate's verdict: its first error as `line:column: message`.
fn parse(text: &str) -> Option<String> {
    let result = std::panic::catch_unwind(|| {
        cel::parser::Parser::new()
            .enable_optional_syntax(true)
            .enable_ident_escape_syntax(true)
            .max_recursion_depth(MAX_DEPTH as u16)
            .parse(text)
            .map(|_| ())
            .map_err(|e| {
                // The errors' Display pads a caret line to the column, which panics past
                // column 65,535; the fields say everything needed.
                e.errors.into_iter().next().map(|e| (e.pos, e.msg))
            })
    });
    match result {
        Ok(Ok(())) => None,
        Ok(Err(Some(((line, col), msg)))) => Some(describe(text, line, col, &msg)),
        Ok(Err(None)) => Some("the parser reported an error without a message".to_owned()),
        Err(_) => Some("the parser failed on this expression".to_owned()),
    }
}

/// `line:column: message`, where the crate's message allows.
fn describe(text: &str, line: isize, col: isize, msg: &str) -> String {
    // The crate's own recursion guard reports character offsets instead of a line and wraps
    // its message in debug output; [`shape`] keeps valid expressions away from it.
    if msg.contains("Recursion limit") {
        return format!("it nests deeper than the parser's limit of {MAX_DEPTH} levels");
    }
    let lines = text.split('\n').count() as isize;
    if line >= 1 && line <= lines && col >= 1 {
        format!("{line}:{col}: {msg}")
    } else {
        msg.to_owned()
    }
}

/// What cel-go's parser counts in an expression, see the module documentation.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The most open invocations of one grammar rule at any point of the parse.
    pub nesting: usize,
    /// The most counted nodes (selections, indexes, member calls, relations, arithmetic,
    /// conditionals) on one path of the tree.
    pub depth: usize,
}

/// Measures an expression in one pass. Linear in its length, no recursion.
pub fn shape(text: &str) -> Shape {
    let mut m = Machine::default();
    m.frames.push(Frame::new(Kind::Top, None));
    let mut lexer = Lexer {
        b: text.as_bytes(),
        pos: 0,
    };
    let mut next = lexer.next();
    while let Some(tok) = next {
        next = lexer.next();
        m.token(tok, next);
    }
    m.finish()
}

/// Tokens as far as the counts care. Literals of every kind are `Operand`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Operand,
    Ident,
    EscIdent,
    /// `== != < <= > >= in`
    Rel,
    /// `+`
    Plus,
    /// `-`, binary or unary
    Minus,
    /// `* / %`
    Mul,
    /// `!`
    Not,
    And,
    Or,
    Question,
    Colon,
    Comma,
    Dot,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
}

/// cel-go's lexer (its ANTLR grammar): longest match, and on a character no token can start
/// with, ANTLR's recovery, which drops the characters read so far plus the offending one. The
/// recovery matters: text after a broken string literal is read as tokens again.
struct Lexer<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn at(&self, i: usize) -> u8 {
        self.b.get(i).copied().unwrap_or(0)
    }

    fn next(&mut self) -> Option<Tok> {
        loop {
            let p = self.pos;
            let c = *self.b.get(p)?;
            let (tok, end) = match c {
                b' ' | b'\t' | b'\r' | b'\n' | 0x0c => (None, p + 1),
                b'/' if self.at(p + 1) == b'/' => {
                    let end = self.b[p..]
                        .iter()
                        .position(|&c| c == b'\n')
                        .map_or(self.b.len(), |i| p + i);
                    (None, end)
                }
                b'0'..=b'9' => (Some(Tok::Operand), self.number(p)),
                b'.' if self.at(p + 1).is_ascii_digit() => (Some(Tok::Operand), self.number(p)),
                b'"' | b'\'' => match self.string(p, false) {
                    Ok(end) => (Some(Tok::Operand), end),
                    Err(stuck) => (None, self.skip(stuck)),
                },
                b'A'..=b'Z' | b'a'..=b'z' | b'_' => self.word(p),
                b'`' => {
                    let mut i = p + 1;
                    while matches!(self.at(i), b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'/' | b' ')
                    {
                        i += 1;
                    }
                    if i > p + 1 && self.at(i) == b'`' {
                        (Some(Tok::EscIdent), i + 1)
                    } else {
                        (None, self.skip(i))
                    }
                }
                b'=' | b'&' | b'|' => {
                    if self.at(p + 1) == c {
                        let tok = match c {
                            b'=' => Tok::Rel,
                            b'&' => Tok::And,
                            _ => Tok::Or,
                        };
                        (Some(tok), p + 2)
                    } else {
                        (None, self.skip(p + 1))
                    }
                }
                b'!' if self.at(p + 1) == b'=' => (Some(Tok::Rel), p + 2),
                b'<' | b'>' if self.at(p + 1) == b'=' => (Some(Tok::Rel), p + 2),
                b'!' => (Some(Tok::Not), p + 1),
                b'<' | b'>' => (Some(Tok::Rel), p + 1),
                b'+' => (Some(Tok::Plus), p + 1),
                b'-' => (Some(Tok::Minus), p + 1),
                b'*' | b'/' | b'%' => (Some(Tok::Mul), p + 1),
                b'?' => (Some(Tok::Question), p + 1),
                b':' => (Some(Tok::Colon), p + 1),
                b',' => (Some(Tok::Comma), p + 1),
                b'.' => (Some(Tok::Dot), p + 1),
                b'(' => (Some(Tok::LParen), p + 1),
                b')' => (Some(Tok::RParen), p + 1),
                b'[' => (Some(Tok::LBracket), p + 1),
                b']' => (Some(Tok::RBracket), p + 1),
                b'{' => (Some(Tok::LBrace), p + 1),
                b'}' => (Some(Tok::RBrace), p + 1),
                _ => (None, self.skip(p)),
            };
            self.pos = end;
            if tok.is_some() {
                return tok;
            }
        }
    }

    /// Where lexing resumes after an error detected at `stuck`: past the character there.
    fn skip(&self, stuck: usize) -> usize {
        match self.b.get(stuck) {
            None => self.b.len(),
            Some(&c) => {
                let len = match c {
                    0xf0..=0xff => 4,
                    0xe0..=0xef => 3,
                    0xc0..=0xdf => 2,
                    _ => 1,
                };
                (stuck + len).min(self.b.len())
            }
        }
    }

    fn digits(&self, mut i: usize, hex: bool) -> usize {
        while if hex {
            self.at(i).is_ascii_hexdigit()
        } else {
            self.at(i).is_ascii_digit()
        } {
            i += 1;
        }
        i
    }

    /// The end of the number at `p` (`NUM_INT`, `NUM_UINT`, `NUM_FLOAT`).
    fn number(&self, p: usize) -> usize {
        if self.at(p) == b'0' && self.at(p + 1) == b'x' && self.at(p + 2).is_ascii_hexdigit() {
            let i = self.digits(p + 2, true);
            return if matches!(self.at(i), b'u' | b'U') {
                i + 1
            } else {
                i
            };
        }
        let mut i = self.digits(p, false);
        let mut float = false;
        if self.at(i) == b'.' && self.at(i + 1).is_ascii_digit() {
            i = self.digits(i + 1, false);
            float = true;
        }
        if matches!(self.at(i), b'e' | b'E') {
            let sign = usize::from(matches!(self.at(i + 1), b'+' | b'-'));
            if self.at(i + 1 + sign).is_ascii_digit() {
                i = self.digits(i + 1 + sign, false);
                float = true;
            }
        }
        if !float && matches!(self.at(i), b'u' | b'U') {
            i += 1;
        }
        i
    }

    /// An identifier, a keyword, or a raw or bytes literal (`r"…"`, `b'…'`, `br'…'`).
    fn word(&self, p: usize) -> (Option<Tok>, usize) {
        let mut q = p;
        while matches!(self.at(q), b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_') {
            q += 1;
        }
        let word = &self.b[p..q];
        if matches!(self.at(q), b'"' | b'\'') {
            let raw = match word {
                b"r" | b"R" | b"br" | b"bR" | b"Br" | b"BR" => Some(true),
                b"b" | b"B" => Some(false),
                _ => None,
            };
            // The literal wins when it is longer than the identifier, i.e. when it lexes.
            if let Some(raw) = raw
                && let Ok(end) = self.string(q, raw)
            {
                return (Some(Tok::Operand), end);
            }
        }
        let tok = match word {
            b"in" => Tok::Rel,
            b"true" | b"false" | b"null" => Tok::Operand,
            _ => Tok::Ident,
        };
        (Some(tok), q)
    }

    /// The string literal whose opening quote is at `p`: its end, or where the lexer gets
    /// stuck when it does not terminate (a line break in a one-line literal, a bad escape, the
    /// end of the text).
    fn string(&self, p: usize, raw: bool) -> Result<usize, usize> {
        let q = self.b[p];
        if self.at(p + 1) == q && self.at(p + 2) == q {
            let mut i = p + 3;
            loop {
                match self.b.get(i) {
                    None => break,
                    Some(&c) if c == q && self.at(i + 1) == q && self.at(i + 2) == q => {
                        return Ok(i + 3);
                    }
                    Some(b'\\') if !raw => match self.escape(i) {
                        Ok(end) => i = end,
                        Err(_) => break,
                    },
                    Some(_) => i += 1,
                }
            }
            // Not terminated: the longest literal that lexes is the empty one, `""`.
            return Ok(p + 2);
        }
        let mut i = p + 1;
        loop {
            match self.b.get(i) {
                None => return Err(i),
                Some(&c) if c == q => return Ok(i + 1),
                Some(b'\n' | b'\r') => return Err(i),
                Some(b'\\') if !raw => i = self.escape(i)?,
                Some(_) => i += 1,
            }
        }
    }

    /// The end of the escape sequence at `i` (a backslash), or where it stops being one.
    fn escape(&self, i: usize) -> Result<usize, usize> {
        let hex = |from: usize, n: usize| -> Result<usize, usize> {
            (from..from + n)
                .find(|&j| !self.at(j).is_ascii_hexdigit())
                .map_or(Ok(from + n), |j| Err(j.min(self.b.len())))
        };
        match self.b.get(i + 1) {
            None => Err(self.b.len()),
            Some(
                b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'"' | b'\'' | b'\\' | b'?' | b'`',
            ) => Ok(i + 2),
            Some(b'x' | b'X') => hex(i + 2, 2),
            Some(b'u') => hex(i + 2, 4),
            Some(b'U') => hex(i + 2, 8),
            Some(b'0'..=b'3') => (i + 2..i + 4)
                .find(|&j| !matches!(self.at(j), b'0'..=b'7'))
                .map_or(Ok(i + 4), |j| Err(j.min(self.b.len()))),
            Some(_) => Err(i + 1),
        }
    }
}

/// What opened an expression (one `expr` invocation of the grammar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Top,
    /// `( … )`
    Paren,
    /// `operand[ … ]`
    Index,
    /// `f( … )` or `operand.f( … )`
    Call,
    /// `[ … ]`
    List,
    /// `{ k: v }`
    Map,
    /// `Name{ f: v }`
    Message,
    /// The `e2` of `c ? e1 : e2`, which the grammar parses as an `expr` of its own.
    Else,
}

impl Kind {
    fn closer(self) -> Option<Tok> {
        match self {
            Kind::Paren | Kind::Call => Some(Tok::RParen),
            Kind::Index | Kind::List => Some(Tok::RBracket),
            Kind::Map | Kind::Message => Some(Tok::RBrace),
            Kind::Top | Kind::Else => None,
        }
    }
}

/// Binary operators by precedence, loosest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    /// `?` waiting for its `:`.
    Cond,
    Or,
    And,
    Rel,
    Add,
    Mul,
}

impl Op {
    /// Whether cel-go's visitor counts the node.
    fn counted(self) -> usize {
        usize::from(matches!(self, Op::Rel | Op::Add | Op::Mul))
    }
}

/// The operand being read: a primary and its postfix selections, indexes and calls.
#[derive(Debug, Clone, Copy)]
struct Operand {
    depth: usize,
    /// `a.b.c` so far: the name of a message if `{` follows (cel-go counts none of its dots).
    name: bool,
    /// A bare identifier, so `(` makes a global call.
    ident: bool,
}

/// One open expression with its operator stack (shunting-yard: precedence rises upwards).
#[derive(Debug)]
struct Frame {
    kind: Kind,
    /// The operand a bracket applies to (`Index`, member `Call`): its depth, and whether the
    /// node the bracket makes is counted.
    base: Option<(usize, bool)>,
    ops: Vec<(Op, usize)>,
    cur: Option<Operand>,
    /// The deepest finished element (arguments, list items, map keys and values).
    acc: usize,
    /// Whether the current element has begun (the grammar enters `expr` on its first token).
    started: bool,
    /// After a `.`: whether `?` followed (`a.?b`).
    after_dot: Option<bool>,
    /// Whether this frame's condition chain is closed because its `e2` (an `Else` child) is
    /// being read.
    suspended: bool,
    /// What this frame contributes to the rule counts now: `expr`, `calc`, `relation`.
    contrib: [usize; 3],
}

impl Frame {
    fn new(kind: Kind, base: Option<(usize, bool)>) -> Self {
        Frame {
            kind,
            base,
            ops: Vec::new(),
            cur: None,
            acc: 0,
            started: false,
            after_dot: None,
            suspended: false,
            contrib: [0; 3],
        }
    }

    fn counts(&self) -> [usize; 3] {
        if !self.started {
            return [0; 3];
        }
        if self.suspended {
            return [1, 0, 0];
        }
        // Precedence rises up the stack, so the pending relation and arithmetic are on top
        // (at most three operators: broken input piles up only `?`s below them).
        let (mut calc, mut rel) = (0, 0);
        for (op, _) in self.ops.iter().rev() {
            match op {
                Op::Add | Op::Mul => calc += 1,
                Op::Rel => rel += 1,
                _ => break,
            }
        }
        [1, 1 + calc, 1 + rel]
    }

    /// Reduces operators down to (not including) the first one looser than `floor`, folding
    /// `v` in; returns the result.
    fn reduce(&mut self, floor: Op, mut v: usize, deepest: &mut usize) -> usize {
        while let Some(&(op, left)) = self.ops.last() {
            if op < floor || op == Op::Cond {
                break;
            }
            self.ops.pop();
            v = left.max(v) + op.counted();
            *deepest = (*deepest).max(v);
        }
        v
    }

    /// Ends the current element: every operator reduced except pending conditionals, which
    /// only an `Else` child can finish.
    fn end_element(&mut self, deepest: &mut usize) -> usize {
        let v = self.cur.take().map_or(0, |o| o.depth);
        let mut v = self.reduce(Op::Or, v, deepest);
        // A `?` without `:` (broken input): fold it in as if the branches were there.
        while let Some((_, left)) = self.ops.pop() {
            v = left.max(v) + 1;
        }
        *deepest = (*deepest).max(v);
        self.acc = self.acc.max(v);
        self.started = false;
        self.after_dot = None;
        v
    }
}

#[derive(Default)]
struct Machine {
    frames: Vec<Frame>,
    /// Current sums of the frames' contributions.
    sums: [usize; 3],
    nesting: usize,
    deepest: usize,
    /// The `(` of a member call, already opened.
    skip_paren: bool,
    /// A `.` before an identifier with no operand: `.f(x)` is a global call.
    leading_dot: bool,
}

impl Machine {
    fn top(&mut self) -> &mut Frame {
        self.frames
            .last_mut()
            .expect("the top frame is never closed")
    }

    /// Brings the top frame's contribution (and the maximum) up to date.
    fn refresh(&mut self) {
        let Some(f) = self.frames.last_mut() else {
            return;
        };
        let new = f.counts();
        for ((sum, old), new) in self.sums.iter_mut().zip(f.contrib).zip(new) {
            *sum = *sum - old + new;
        }
        f.contrib = new;
        self.nesting = self.nesting.max(self.sums.into_iter().max().unwrap_or(0));
    }

    fn push(&mut self, mut frame: Frame) {
        // The grammar enters these expressions right after the bracket (or `:`), before it
        // looks at the next token; arguments, list items and entries only when one follows.
        frame.started = matches!(frame.kind, Kind::Paren | Kind::Index | Kind::Else);
        self.frames.push(frame);
        self.refresh();
    }

    /// Closes the top frame and hands its value to the parent, as the operand the frame's
    /// bracket makes.
    fn close(&mut self) {
        if self.frames.len() == 1 {
            return;
        }
        let mut deepest = self.deepest;
        let mut f = self.frames.pop().expect("checked above");
        f.end_element(&mut deepest);
        for (sum, old) in self.sums.iter_mut().zip(f.contrib) {
            *sum -= old;
        }
        let inner = f.acc;
        let value = match f.base {
            Some((operand, counted)) => operand.max(inner) + usize::from(counted),
            None => inner,
        };
        deepest = deepest.max(value);
        self.deepest = deepest;
        let parent = self.top();
        if f.kind == Kind::Else {
            // The conditional `c ? e1 : e2` this frame was the `e2` of.
            parent.suspended = false;
            let left = match parent.ops.pop() {
                Some((Op::Cond, left)) => left,
                Some(other) => {
                    parent.ops.push(other);
                    0
                }
                None => 0,
            };
            let v = left.max(value) + 1;
            parent.cur = Some(Operand {
                depth: v,
                name: false,
                ident: false,
            });
        } else {
            parent.cur = Some(Operand {
                depth: value,
                name: false,
                ident: false,
            });
        }
        self.refresh();
    }

    /// Closes `Else` frames: the token ends the expression they are the tail of.
    fn close_else(&mut self) {
        while self.frames.len() > 1 && self.top().kind == Kind::Else {
            self.close();
        }
    }

    fn begin(&mut self) {
        let f = self.top();
        f.started = true;
        self.refresh();
    }

    /// Starts an operand; a second operand without an operator in between (broken input) is
    /// joined to the first like an uncounted operator.
    fn operand(&mut self, o: Operand) {
        let f = self.top();
        f.cur = Some(match f.cur {
            Some(prev) => Operand {
                depth: prev.depth.max(o.depth),
                ..o
            },
            None => o,
        });
    }

    fn token(&mut self, tok: Tok, next: Option<Tok>) {
        if std::mem::take(&mut self.skip_paren) && tok == Tok::LParen {
            return;
        }
        // Closers and separators end an element; every other token is part of one.
        if !matches!(
            tok,
            Tok::RParen | Tok::RBracket | Tok::RBrace | Tok::Comma | Tok::Colon
        ) {
            self.begin();
        }
        if let Some(opt) = self.top().after_dot {
            match tok {
                Tok::Question if !opt => {
                    self.top().after_dot = Some(true);
                    return;
                }
                Tok::Ident if !opt && next == Some(Tok::LParen) => {
                    // `operand.f(`: a member call, counted once, arguments beneath it.
                    let f = self.top();
                    f.after_dot = None;
                    let depth = f.cur.take().map_or(0, |o| o.depth);
                    self.push(Frame::new(Kind::Call, Some((depth, true))));
                    self.skip_paren = true;
                    return;
                }
                _ => {
                    // A selection; anything but an identifier after the dot is broken input,
                    // counted as a selection all the same.
                    let f = self.top();
                    f.after_dot = None;
                    if let Some(o) = f.cur.as_mut() {
                        o.depth += 1;
                        o.name = o.name && !opt && tok == Tok::Ident;
                        o.ident = false;
                    }
                    if matches!(tok, Tok::Ident | Tok::EscIdent) {
                        return;
                    }
                }
            }
        }
        let has_operand = self.top().cur.is_some();
        match tok {
            Tok::Operand => self.operand(Operand {
                depth: 0,
                name: false,
                ident: false,
            }),
            Tok::Ident | Tok::EscIdent => {
                let leading_dot = std::mem::take(&mut self.leading_dot);
                self.operand(Operand {
                    depth: 0,
                    name: tok == Tok::Ident,
                    ident: tok == Tok::Ident || leading_dot,
                })
            }
            Tok::Dot if has_operand => self.top().after_dot = Some(false),
            Tok::Dot => self.leading_dot = true,
            Tok::Question if !has_operand => {} // `[?x]`, `{?k: v}`: optional entries
            Tok::Not => {}
            Tok::Minus if !has_operand => {}
            Tok::Question => self.binary(Op::Cond),
            Tok::Or => self.binary(Op::Or),
            Tok::And => self.binary(Op::And),
            Tok::Rel => self.binary(Op::Rel),
            Tok::Plus | Tok::Minus => self.binary(Op::Add),
            Tok::Mul => self.binary(Op::Mul),
            Tok::LParen => {
                let f = self.top();
                let frame = match f.cur.take() {
                    None => Frame::new(Kind::Paren, None),
                    // `f(`: a global call, not counted.
                    Some(o) if o.ident => Frame::new(Kind::Call, None),
                    // Broken input: keep the operand's depth.
                    Some(o) => Frame::new(Kind::Call, Some((o.depth, false))),
                };
                self.push(frame);
            }
            Tok::LBracket => {
                let f = self.top();
                let frame = match f.cur.take() {
                    None => Frame::new(Kind::List, None),
                    Some(o) => Frame::new(Kind::Index, Some((o.depth, true))),
                };
                self.push(frame);
            }
            Tok::LBrace => {
                let f = self.top();
                let frame = match f.cur.take() {
                    None => Frame::new(Kind::Map, None),
                    // `a.b.C{`: a message; its name's dots are not selections.
                    Some(o) if o.name => Frame::new(Kind::Message, None),
                    Some(o) => Frame::new(Kind::Message, Some((o.depth, false))),
                };
                self.push(frame);
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                self.close_else();
                // A closer that matches no bracket (broken input) closes the innermost one.
                if self.top().kind.closer().is_some() {
                    self.close();
                }
            }
            Tok::Comma => {
                self.close_else();
                let mut deepest = self.deepest;
                self.top().end_element(&mut deepest);
                self.deepest = deepest;
            }
            Tok::Colon => {
                // Above the last `?` there is at most one operator of each other kind.
                let in_cond = self
                    .top()
                    .ops
                    .iter()
                    .rev()
                    .take(6)
                    .any(|(o, _)| *o == Op::Cond);
                if in_cond {
                    // `c ? e1 :`: e1 ends, e2 is an expression of its own.
                    let mut deepest = self.deepest;
                    let f = self.top();
                    let v = f.cur.take().map_or(0, |o| o.depth);
                    let v = f.reduce(Op::Or, v, &mut deepest);
                    if let Some((Op::Cond, left)) = f.ops.last_mut() {
                        *left = (*left).max(v);
                    }
                    f.suspended = true;
                    self.deepest = deepest;
                    self.refresh();
                    self.push(Frame::new(Kind::Else, None));
                } else if self.top().kind == Kind::Else {
                    self.close_else();
                    self.token(Tok::Colon, next);
                } else {
                    // `k: v` in a map or message; elsewhere broken input, read the same way.
                    let mut deepest = self.deepest;
                    self.top().end_element(&mut deepest);
                    self.deepest = deepest;
                }
            }
        }
        self.refresh();
    }

    fn binary(&mut self, op: Op) {
        let mut deepest = self.deepest;
        let f = self.top();
        let Some(o) = f.cur.take() else {
            // An operator without a left operand (broken input).
            return;
        };
        let v = if op == Op::Cond {
            f.reduce(Op::Or, o.depth, &mut deepest)
        } else {
            f.reduce(op, o.depth, &mut deepest)
        };
        f.ops.push((op, v));
        self.deepest = deepest;
    }

    fn finish(mut self) -> Shape {
        while self.frames.len() > 1 {
            self.close();
        }
        let mut deepest = self.deepest;
        self.top().end_element(&mut deepest);
        Shape {
            nesting: self.nesting,
            depth: deepest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_of(text: &str) -> (usize, usize) {
        let s = shape(text);
        (s.nesting, s.depth)
    }

    /// [`check`] on a parser-sized stack, as the suite runs it.
    fn checked(text: String) -> Option<String> {
        std::thread::Builder::new()
            .stack_size(PARSER_STACK)
            .spawn(move || check(&text))
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn counts_what_cel_go_counts() {
        // (expression, listener nesting, visitor depth), worked out from cel-go's grammar.
        for (text, nesting, depth) in [
            ("", 0, 0),
            (
                "self.size <= 3 || (has(self.memoryLimitMB) && self.memoryLimitMB >= 128)",
                3,
                2,
            ),
            ("self.a.a", 1, 2),
            ("a + b + c", 2, 2),
            ("a + b * c", 3, 2),
            ("a * b + c", 2, 2),
            ("a < b", 2, 1),
            ("a in b", 2, 1),
            ("a && b && c || d", 1, 0),
            ("a ? b : c", 2, 1),
            ("a ? b : c ? d : e", 3, 2),
            ("((((a))))", 5, 0),
            ("x.f(y.g(z))", 3, 2),
            ("f(g(h(x.y)))", 4, 1),
            ("f()", 1, 0),
            ("[1, 2, a.b.c,]", 2, 2),
            ("{'k': a[0], ?'l': b}", 3, 1),
            ("a.b.C{f: x.y, ?g: 1}", 2, 1),
            ("a.?b.c", 1, 2),
            ("a[?0]", 2, 1),
            ("-a.b + !c", 2, 2),
            (".a.b", 1, 1),
            ("1.5 + .5e3 + 0x1fu + 2u", 2, 3),
            ("a.`b.c` == 1", 2, 2),
            ("x.all(y, y > 0)", 3, 2),
            // Literals and comments hide what they hold.
            ("'((((' + r\"\\q\" + b'x' + '''a\n(b''' // [[[\n + c", 2, 4),
        ] {
            assert_eq!(shape_of(text), (nesting, depth), "{text:?}");
        }
    }

    /// cel-go's visitor count over the `cel` crate's tree of the same expression (no macros).
    fn tree_depth(e: &cel::common::ast::IdedExpr) -> usize {
        use cel::common::ast::{EntryExpr, Expr};
        let entry = |x: &cel::common::ast::IdedEntryExpr| match &x.expr {
            EntryExpr::MapEntry(m) => tree_depth(&m.key).max(tree_depth(&m.value)),
            EntryExpr::StructField(f) => tree_depth(&f.value),
        };
        match &e.expr {
            Expr::Call(c) => {
                let counted = c.target.is_some()
                    || matches!(
                        c.func_name.as_str(),
                        "_+_"
                            | "_-_"
                            | "_*_"
                            | "_/_"
                            | "_%_"
                            | "_<_"
                            | "_<=_"
                            | "_>_"
                            | "_>=_"
                            | "_==_"
                            | "_!=_"
                            | "@in"
                            | "_[_]"
                            | "_[?_]"
                            | "_?._"
                            | "_?_:_"
                    );
                let args = c.args.iter().map(tree_depth).max().unwrap_or(0);
                let target = c.target.as_deref().map_or(0, tree_depth);
                args.max(target) + usize::from(counted)
            }
            Expr::Select(s) => tree_depth(&s.operand) + 1,
            Expr::List(l) => l.elements.iter().map(tree_depth).max().unwrap_or(0),
            Expr::Map(m) => m.entries.iter().map(entry).max().unwrap_or(0),
            Expr::Struct(s) => s.entries.iter().map(entry).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// Random expressions of every construct, deterministic (xorshift).
    struct Gen(u64);

    impl Gen {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }

        fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[self.below(xs.len())]
        }

        fn list(&mut self, d: usize) -> String {
            let n = self.below(3);
            (0..n).map(|_| self.expr(d)).collect::<Vec<_>>().join(", ")
        }

        fn expr(&mut self, d: usize) -> String {
            if d == 0 {
                return self
                    .pick(&[
                        "1",
                        "2u",
                        "3.5",
                        ".5e2",
                        "0x1F",
                        "'s'",
                        "\"d\"",
                        r"r'\q'",
                        "b'x'",
                        "'''a\nb'''",
                        "true",
                        "null",
                        "-1",
                        "a",
                        "self",
                        ".x",
                        "in_x",
                    ])
                    .to_owned();
            }
            let d = d - 1;
            match self.below(16) {
                0 => {
                    let op = self.pick(&["+", "-", "*", "/", "%"]);
                    format!("{} {op} {}", self.expr(d), self.expr(d))
                }
                1 => {
                    let op = self.pick(&["<", "<=", "==", "!=", "in", ">", ">="]);
                    format!("{} {op} {}", self.expr(d), self.expr(d))
                }
                2 => {
                    let op = self.pick(&["&&", "||"]);
                    format!("{} {op} {}", self.expr(d), self.expr(d))
                }
                3 => format!("{} ? {} : {}", self.expr(d), self.expr(d), self.expr(d)),
                4 => format!("({})", self.expr(d)),
                5 => format!("({}).a", self.expr(d)),
                6 => format!("({}).f({})", self.expr(d), self.list(d)),
                7 => format!("g({})", self.list(d)),
                8 => format!("({})[{}]", self.expr(d), self.expr(d)),
                9 => {
                    let comma = self.pick(&["", ","]);
                    format!("[{}{comma}]", self.list(d))
                }
                10 => format!(
                    "{{{}: {}, ?{}: {}}}",
                    self.expr(d),
                    self.expr(d),
                    self.expr(d),
                    self.expr(d)
                ),
                11 => format!("a.b.M{{f: {}, ?g: {}}}", self.expr(d), self.expr(d)),
                12 => format!("!({})", self.expr(d)),
                13 => format!("-({})", self.expr(d)),
                14 => format!("a.?b[?{}]", self.expr(d)),
                _ => format!("[?{}, {}] // c\n", self.expr(d), self.expr(d)),
            }
        }
    }

    #[test]
    fn depth_agrees_with_the_parser_s_tree() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        let mut parsed = 0;
        for _ in 0..600 {
            let d = 1 + g.below(6);
            let text = g.expr(d);
            // The generator nests conditionals where the grammar wants parentheses.
            let Ok(tree) = cel::parser::Parser::new()
                .enable_optional_syntax(true)
                .enable_ident_escape_syntax(true)
                .parse(&text)
            else {
                continue;
            };
            parsed += 1;
            assert_eq!(shape(&text).depth, tree_depth(&tree), "{text}");
        }
        assert!(parsed > 400, "{parsed}");
    }

    #[test]
    fn text_after_a_broken_literal_counts() {
        // cel-go's lexer drops `'\q` and reads the rest as tokens: `.a.a.a…`.
        let text = format!("'\\q{}'", ".a".repeat(300));
        assert_eq!(shape_of(&text).1, 299);
        // An unterminated one-line literal ends at the line break.
        let text = format!("'abc\n{}", "(".repeat(300));
        assert_eq!(shape_of(&text).0, 301);
        // `=` alone is dropped with the character after it.
        assert_eq!(shape_of("a =(b)"), (1, 0));
    }

    #[test]
    fn limits_are_cel_go_s() {
        // Selections: 250 parse, 251 do not.
        assert_eq!(checked(format!("self{}", ".a".repeat(250))), None);
        let err = checked(format!("self{}", ".a".repeat(251))).unwrap();
        assert!(err.contains("chains 251 selections"), "{err}");
        // Operators: the left spine of `a + a + …`.
        assert_eq!(checked(format!("a{}", " + a".repeat(250))), None);
        assert!(checked(format!("a{}", " + a".repeat(251))).is_some());
        // Brackets: 249 pairs are 250 expressions.
        let nest = |n: usize| format!("{}a{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(checked(nest(249)), None);
        let err = checked(nest(250)).unwrap();
        assert!(err.contains("nests 251 levels"), "{err}");
        // Each `a + b * (` keeps three `calc` rules open.
        let mixed = |n: usize| format!("{}c{}", "a + b * (".repeat(n), ")".repeat(n));
        assert_eq!(shape_of(&mixed(83)), (250, 166));
        assert_eq!(checked(mixed(83)), None);
        assert!(checked(mixed(84)).unwrap().contains("nests 253 levels"));
        // Size in code points, not bytes.
        let s = |n: usize| format!("'{}'", "é".repeat(n - 2));
        assert_eq!(checked(s(MAX_CODE_POINTS)), None);
        let err = checked(s(MAX_CODE_POINTS + 1)).unwrap();
        assert!(err.contains("100001 characters"), "{err}");
    }

    #[test]
    fn what_overflowed_the_stack_is_refused_quickly() {
        let err = checked(format!("self{}", ".a".repeat(20_000))).unwrap();
        assert!(err.contains("chains 20000 selections"), "{err}");
        let err = checked(format!("a{}", " + a".repeat(25_000))).unwrap();
        assert!(err.contains("100001 characters"), "{err}");
        let err = checked(format!("a{}", "+a".repeat(25_000))).unwrap();
        assert!(err.contains("chains 25000"), "{err}");
        let err = checked(format!("{}a", "a ? a : ".repeat(5_000))).unwrap();
        assert!(err.contains("nests 5001 levels"), "{err}");
    }

    #[test]
    fn broken_input_is_measured_in_linear_time() {
        // Questions without colons pile up on the operator stack, quotes that never close
        // make the lexer look ahead: neither may make a pass quadratic (100,000 characters
        // squared would not finish in a test).
        let text = "a?".repeat(MAX_CODE_POINTS / 2);
        assert_eq!(shape(&text).nesting, 1);
        let text = format!(
            "{}{}",
            "a?b:".repeat(MAX_CODE_POINTS / 8),
            "c:".repeat(MAX_CODE_POINTS / 4)
        );
        assert!(shape(&text).nesting > MAX_DEPTH);
        let text = format!(r"'''''{}\q", r"\'''".repeat(MAX_CODE_POINTS / 5));
        assert_eq!(shape(&text).nesting, 1);
    }

    #[test]
    fn syntax_errors_far_into_a_line_have_a_position() {
        let err = checked(format!("'{}' +", "x".repeat(70_000))).unwrap();
        assert!(err.starts_with("1:70005: "), "{}", &err[..80]);
        let err = checked(format!("a &&\n'{}' + )", "x".repeat(70_000))).unwrap();
        assert!(err.starts_with("2:70006: "), "{}", &err[..80]);
    }
}

//! The fast path of YAML reading: `serde_json::Value` trees with node positions built straight
//! from the parser's event stream, without going through serde. Multi-MiB CRDs make parsing the
//! bulk of validation time, and this skips a layer that cost about a third of it. Scalars are
//! resolved exactly as serde-saphyr's untyped path does with opship's options (YAML 1.1
//! booleans, legacy octal); a differential test over the corpus holds the two paths together.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use granit_parser::{Event, Options, Parser, ScalarStyle, Span, Tag};
use serde_json::{Map, Number, Value};

use crate::error::{Error, Result};
use crate::yaml::{Budget, DuplicateKey, Origin, Pos, Positions};

/// Limits, the same as the serde path's budget.
const MAX_DEPTH: usize = 512;
const MAX_ANCHORS: usize = 10_000;

/// One parsed document: value, positions of its nodes.
pub(crate) struct Tree {
    pub value: Value,
    pub positions: Positions,
}

/// An anchored node kept for aliases: its value and its size in nodes and scalar bytes.
struct Anchored {
    value: Value,
    nodes: usize,
    bytes: usize,
}

enum Kind {
    Seq(Vec<Value>),
    Map {
        map: Map<String, Value>,
        /// The key read and waiting for its value, with where the key starts.
        key: Option<(String, Pos)>,
        /// Values of `<<` merge keys and where they start, applied at the end (explicit
        /// keys win).
        merges: Vec<(Value, Pos)>,
    },
}

/// An open collection.
struct Frame {
    kind: Kind,
    anchor: usize,
    /// This collection's index in the positions.
    idx: usize,
    /// Node count when it opened.
    first_node: usize,
    /// Scalar byte count when it opened.
    first_byte: usize,
    at: Pos,
}

struct Builder<'f> {
    file: &'f Path,
    lenient: bool,
    /// Every node of the current document, in document order.
    positions: Positions,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    dups: Vec<(String, Pos)>,
    nodes: usize,
    /// Scalar and key bytes so far, alias expansion included.
    bytes: usize,
    budget: Budget,
    /// What aliases and anchors copied so far (nodes, bytes).
    copied: (usize, usize),
    aliases: usize,
    /// Whether the last error was the budget's (not the text's).
    over_budget: bool,
    /// Finished documents.
    docs: Vec<Tree>,
    /// The current document's root, once complete.
    root: Option<Value>,
}

fn pos(span: &Span) -> Pos {
    Pos {
        line: u32::try_from(span.start.line()).unwrap_or(u32::MAX),
        col: u32::try_from(span.start.col() + 1).unwrap_or(u32::MAX),
    }
}

impl Builder<'_> {
    fn error(&self, at: Pos, message: impl Into<String>) -> Error {
        Error::Yaml {
            origin: Origin {
                file: Arc::from(self.file),
                pos: at,
            },
            message: message.into(),
        }
    }

    /// Where a new node goes: `None` for a mapping key, else `Some` of the key it is the
    /// value of (`None` inside: a root or a sequence item).
    fn slot(&self) -> Option<Option<&str>> {
        match self.stack.last().map(|f| &f.kind) {
            None | Some(Kind::Seq(_)) => Some(None),
            Some(Kind::Map {
                key: Some((k, _)), ..
            }) => Some(Some(k.as_str())),
            Some(Kind::Map { key: None, .. }) => None,
        }
    }

    /// Records a new node (not a key) starting at `at`; returns its index.
    fn open(&mut self, at: Pos) -> usize {
        let key = match self.stack.last().map(|f| &f.kind) {
            Some(Kind::Map {
                key: Some((k, _)), ..
            }) => Some(k.as_str()),
            _ => None,
        };
        self.positions.open(at, key)
    }

    fn count(&mut self, n: usize, at: Pos) -> Result<()> {
        self.nodes += n;
        if self.nodes > self.budget.max_nodes {
            self.over_budget = true;
            return Err(self.error(
                at,
                format!(
                    "more than {} YAML nodes (alias expansion included)",
                    self.budget.max_nodes
                ),
            ));
        }
        Ok(())
    }

    /// Charges a copy of `nodes` nodes and `bytes` scalar bytes (an alias's value, or the copy
    /// kept of an anchored node) to the budget, before it is made.
    fn charge_copy(&mut self, nodes: usize, bytes: usize, at: Pos) -> Result<()> {
        self.copied.0 += nodes;
        self.copied.1 += bytes;
        let why = if self.copied.0 > self.budget.max_copied_nodes {
            format!(
                "aliases and anchors copy more than {} YAML nodes",
                self.budget.max_copied_nodes
            )
        } else if self.copied.1 > self.budget.max_copied_bytes {
            format!(
                "aliases and anchors copy more than {} bytes of text",
                self.budget.max_copied_bytes
            )
        } else {
            return Ok(());
        };
        self.over_budget = true;
        Err(self.error(
            at,
            format!("{why}, the limit for an input of this size; not read further"),
        ))
    }

    /// Attaches a finished node to its parent (or returns it when it is a document root).
    fn attach(&mut self, value: Value, at: Pos) -> Result<Option<Value>> {
        match self.stack.last_mut().map(|f| &mut f.kind) {
            None => Ok(Some(value)),
            Some(Kind::Seq(items)) => {
                items.push(value);
                Ok(None)
            }
            Some(Kind::Map { map, key, merges }) => match key.take() {
                None => {
                    let k = match value {
                        Value::String(s) => s,
                        Value::Null => "null".to_owned(),
                        Value::Bool(b) => b.to_string(),
                        Value::Number(n) => n.to_string(),
                        _ => return Err(self.error(at, "mapping keys must be scalars")),
                    };
                    *key = Some((k, at));
                    Ok(None)
                }
                Some((k, key_at)) => {
                    if k == "<<" {
                        merges.push((value, at));
                        return Ok(None);
                    }
                    match map.entry(k) {
                        serde_json::map::Entry::Vacant(e) => {
                            e.insert(value);
                        }
                        serde_json::map::Entry::Occupied(mut e) => {
                            let k = e.key().clone();
                            if !self.lenient {
                                return Err(
                                    self.error(key_at, format!("duplicate mapping key: {k}"))
                                );
                            }
                            e.insert(value);
                            self.dups.push((k, at));
                        }
                    }
                    Ok(None)
                }
            },
        }
    }

    /// Keeps an anchored node for later aliases.
    fn record_anchor(
        &mut self,
        anchor: usize,
        value: &Value,
        (nodes, bytes): (usize, usize),
        at: Pos,
    ) -> Result<()> {
        if anchor == 0 {
            return Ok(());
        }
        if self.anchors.len() >= MAX_ANCHORS {
            self.over_budget = true;
            return Err(self.error(at, format!("more than {MAX_ANCHORS} anchors")));
        }
        self.charge_copy(nodes, bytes, at)?;
        self.anchors.insert(
            anchor,
            Anchored {
                value: value.clone(),
                nodes,
                bytes,
            },
        );
        Ok(())
    }

    /// Records `at` as the position of `value` (under `key`) and of everything in it: nodes
    /// that came through an alias or a merge are placed where the alias is, as the serde path
    /// does.
    fn place_all(&mut self, value: &Value, key: Option<&str>, at: Pos) {
        let me = self.positions.open(at, key);
        match value {
            Value::Object(m) => {
                for (k, v) in m {
                    self.place_all(v, Some(k), at);
                }
            }
            Value::Array(a) => {
                for v in a {
                    self.place_all(v, None, at);
                }
            }
            _ => {}
        }
        self.positions.close(me);
    }

    /// Applies `<<` merges to a finished mapping at the current pointer: keys from the merged
    /// mappings that the mapping does not set itself, earlier sources first.
    fn merge(
        &mut self,
        map: &mut Map<String, Value>,
        merges: Vec<(Value, Pos)>,
        idx: usize,
        at: Pos,
    ) -> Result<()> {
        let bad = "a merge key (<<) takes a mapping or a list of mappings";
        let mut sources = Vec::new();
        for (m, m_at) in merges {
            match m {
                Value::Object(o) => sources.push((o, m_at)),
                Value::Array(items) => {
                    for (i, item) in items.into_iter().enumerate() {
                        let Value::Object(o) = item else {
                            return Err(self.error(at, bad));
                        };
                        let item_at = self
                            .positions
                            .children(idx)
                            .filter(|&c| self.positions.key_is(c, "<<"))
                            .find_map(|c| self.positions.children(c).nth(i))
                            .map_or(m_at, |c| self.positions.pos_at(c));
                        sources.push((o, item_at));
                    }
                }
                _ => return Err(self.error(at, bad)),
            }
        }
        for (src, src_at) in sources {
            for (k, v) in src {
                if !map.contains_key(&k) {
                    self.place_all(&v, Some(&k), src_at);
                    map.insert(k, v);
                }
            }
        }
        Ok(())
    }
}

fn is_core(tag: &Tag, suffix: &str) -> bool {
    tag.handle() == "tag:yaml.org,2002:" && tag.suffix() == suffix
}

/// Resolves a scalar as serde-saphyr's `deserialize_any` does under opship's options.
fn scalar(
    text: Cow<'_, str>,
    style: ScalarStyle,
    tag: Option<&Tag>,
) -> std::result::Result<Value, String> {
    if let Some(tag) = tag {
        if is_core(tag, "str")
            || is_core(tag, "binary")
            || (tag.handle() == "!" && tag.suffix().is_empty())
        {
            return Ok(Value::String(text.into_owned()));
        }
        if is_core(tag, "null") {
            return Ok(Value::Null);
        }
        if is_core(tag, "bool") {
            return bool11(&text)
                .map(Value::Bool)
                .ok_or_else(|| format!("invalid boolean `{text}`"));
        }
        if is_core(tag, "int") {
            return int(&text).ok_or_else(|| format!("invalid integer `{text}`"));
        }
        if is_core(tag, "float") {
            return float(&text)
                .ok_or_else(|| format!("invalid floating point `{text}`"))?
                .map_err(str::to_owned);
        }
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::String(text.into_owned()));
    }
    if matches!(&*text, "" | "~" | "null" | "Null" | "NULL") {
        return Ok(Value::Null);
    }
    // Fast exit: every non-string plain scalar starts with one of these.
    let first = text.as_bytes()[0];
    if !matches!(
        first,
        b'0'..=b'9'
            | b'+'
            | b'-'
            | b'.'
            | b' '
            | b'\t'
            | b'y'
            | b'Y'
            | b'n'
            | b'N'
            | b't'
            | b'T'
            | b'f'
            | b'F'
            | b'o'
            | b'O'
    ) {
        return Ok(Value::String(text.into_owned()));
    }
    if let Some(b) = bool11(&text) {
        return Ok(Value::Bool(b));
    }
    let t = trim(&text);
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    let upper_radix = matches!(unsigned.as_bytes(), [b'0', b'X' | b'O' | b'B', ..]);
    let signed_nan = t.len() != unsigned.len() && matches!(unsigned, ".nan" | ".NaN" | ".NAN");
    if upper_radix || signed_nan {
        return Ok(Value::String(text.into_owned()));
    }
    if let Some(v) = int(t) {
        return Ok(v);
    }
    match float(t) {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(e.to_owned()),
        None => Ok(Value::String(text.into_owned())),
    }
}

fn trim(s: &str) -> &str {
    s.trim_matches([' ', '\t', '\r', '\n'])
}

fn bool11(s: &str) -> Option<bool> {
    let t = trim(s);
    if ["true", "yes", "y", "on"]
        .iter()
        .any(|w| t.eq_ignore_ascii_case(w))
    {
        Some(true)
    } else if ["false", "no", "n", "off"]
        .iter()
        .any(|w| t.eq_ignore_ascii_case(w))
    {
        Some(false)
    } else {
        None
    }
}

/// Digits with single underscores between them, in a radix.
fn digits(d: &str, radix: u32) -> Option<u128> {
    let b = d.as_bytes();
    let mut val: u128 = 0;
    let mut saw = false;
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            if i == 0 || b[i - 1] == b'_' || i + 1 >= b.len() || b[i + 1] == b'_' {
                return None;
            }
            continue;
        }
        let v = (c as char).to_digit(radix)?;
        val = val
            .checked_mul(u128::from(radix))?
            .checked_add(u128::from(v))?;
        saw = true;
    }
    saw.then_some(val)
}

/// Integers: decimal, 0x, 0o, 0b, and 0-prefixed legacy octal (Kubernetes' YAML 1.1).
fn int(t: &str) -> Option<Value> {
    let t = trim(t);
    let (neg, rest) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let strip = |r: &'_ str| -> String { r.strip_prefix('_').unwrap_or(r).to_owned() };
    let mag = if let Some(r) = rest.strip_prefix("0x") {
        digits(&strip(r), 16)?
    } else if let Some(r) = rest.strip_prefix("0o") {
        digits(&strip(r), 8)?
    } else if let Some(r) = rest.strip_prefix("0b") {
        digits(&strip(r), 2)?
    } else if rest == "0" {
        0
    } else if let Some(r) = rest.strip_prefix('0') {
        digits(&strip(r), 8)?
    } else {
        if !rest.as_bytes().first().is_some_and(u8::is_ascii_digit) {
            return None;
        }
        digits(rest, 10)?
    };
    if neg {
        let v = i64::try_from(mag)
            .ok()
            .map(|m| -m)
            .or((mag == 1u128 << 63).then_some(i64::MIN))?;
        Some(Value::Number(v.into()))
    } else {
        u64::try_from(mag).ok().map(|v| Value::Number(v.into()))
    }
}

/// Floats: `Some(Ok)` a finite number, `Some(Err)` a non-finite one (refused, as JSON cannot
/// hold it), `None` not a float.
fn float(t: &str) -> Option<std::result::Result<Value, &'static str>> {
    let t = trim(t);
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if matches!(
        unsigned,
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF"
    ) {
        return Some(Err("infinite or NaN numbers are not allowed"));
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Some(
            Number::from_f64(v)
                .map(Value::Number)
                .ok_or("infinite or NaN numbers are not allowed"),
        ),
        Ok(_) if unsigned.as_bytes().first().is_some_and(u8::is_ascii_digit) => {
            Some(Err("infinite or NaN numbers are not allowed"))
        }
        _ => None,
    }
}

impl Builder<'_> {
    fn new(file: &Path, lenient: bool, budget: Budget) -> Builder<'_> {
        Builder {
            file,
            lenient,
            positions: Positions::default(),
            stack: Vec::new(),
            anchors: HashMap::new(),
            dups: Vec::new(),
            nodes: 0,
            bytes: 0,
            budget,
            copied: (0, 0),
            aliases: 0,
            over_budget: false,
            docs: Vec::new(),
            root: None,
        }
    }

    /// Takes one parser event starting at `at`.
    fn feed(&mut self, ev: Event<'_>, at: Pos) -> Result<()> {
        match ev {
            Event::StreamStart
            | Event::StreamEnd
            | Event::Anchor(..)
            | Event::UnresolvedAlias(_) => {}
            #[allow(unreachable_patterns)]
            Event::DocumentStart(..) => {
                self.positions = Positions::default();
                self.anchors.clear();
                self.root = None;
            }
            Event::DocumentEnd => {
                if let Some(v) = self.root.take()
                    && !v.is_null()
                {
                    self.docs.push(Tree {
                        value: v,
                        positions: std::mem::take(&mut self.positions),
                    });
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                self.count(1, at)?;
                let len = text.len();
                self.bytes += len;
                let is_key = self.slot().is_none();
                if !is_key {
                    let v = scalar(text, style, tag.as_deref()).map_err(|e| self.error(at, e))?;
                    let i = self.open(at);
                    self.positions.close(i);
                    self.record_anchor(anchor, &v, (1, len), at)?;
                    if let Some(r) = self.attach(v, at)? {
                        self.root = Some(r);
                    }
                    return Ok(());
                }
                // A key is only ever used as text.
                let v = scalar(text.clone(), style, tag.as_deref())
                    .unwrap_or_else(|_| Value::String(text.to_string()));
                match is_key {
                    false => {
                        self.record_anchor(anchor, &v, (1, len), at)?;
                        if let Some(r) = self.attach(v, at)? {
                            self.root = Some(r);
                        }
                    }
                    true => {
                        // A key: resolved like any scalar, then spelled as its text.
                        let key = match (&v, style) {
                            (Value::String(_), _) => v,
                            (_, ScalarStyle::Plain) => Value::String(trim(&text).to_owned()),
                            _ => Value::String(text.to_string()),
                        };
                        let key = if matches!(key, Value::String(ref s) if s.is_empty())
                            && style == ScalarStyle::Plain
                        {
                            Value::String("null".to_owned())
                        } else {
                            key
                        };
                        self.record_anchor(anchor, &key, (1, len), at)?;
                        self.attach(key, at)?;
                    }
                }
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                let is_seq = matches!(ev, Event::SequenceStart(..));
                self.count(1, at)?;
                if self.stack.len() >= MAX_DEPTH {
                    return Err(self.error(at, format!("nesting deeper than {MAX_DEPTH} levels")));
                }
                if self.slot().is_none() {
                    return Err(self.error(at, "mapping keys must be scalars"));
                }
                let idx = self.open(at);
                let kind = if is_seq {
                    Kind::Seq(Vec::new())
                } else {
                    Kind::Map {
                        map: Map::new(),
                        key: None,
                        merges: Vec::new(),
                    }
                };
                self.stack.push(Frame {
                    kind,
                    anchor,
                    idx,
                    first_node: self.nodes,
                    first_byte: self.bytes,
                    at,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let frame = self
                    .stack
                    .pop()
                    .ok_or_else(|| self.error(at, "unbalanced collection end"))?;
                let value = match frame.kind {
                    Kind::Seq(items) => Value::Array(items),
                    Kind::Map {
                        mut map, merges, ..
                    } => {
                        if !merges.is_empty() {
                            self.merge(&mut map, merges, frame.idx, at)?;
                        }
                        Value::Object(map)
                    }
                };
                self.positions.close(frame.idx);
                let size = (self.nodes - frame.first_node, self.bytes - frame.first_byte);
                self.record_anchor(frame.anchor, &value, size, frame.at)?;
                if let Some(r) = self.attach(value, frame.at)? {
                    self.root = Some(r);
                }
            }
            Event::Alias(id) => {
                self.aliases += 1;
                if self.aliases > self.budget.max_aliases {
                    self.over_budget = true;
                    return Err(
                        self.error(at, format!("more than {} aliases", self.budget.max_aliases))
                    );
                }
                let Some(a) = self.anchors.get(&id) else {
                    return Err(self.error(at, "alias to an unknown anchor"));
                };
                let (n, bytes) = (a.nodes, a.bytes);
                // Counted before the copy is made: the copy is what must not happen.
                self.count(n, at)?;
                self.charge_copy(n, bytes, at)?;
                self.bytes += bytes;
                let value = self
                    .anchors
                    .get(&id)
                    .map_or(Value::Null, |a| a.value.clone());
                match self.slot() {
                    Some(key) => {
                        let key = key.map(str::to_owned);
                        self.place_all(&value, key.as_deref(), at);
                        if let Some(r) = self.attach(value, at)? {
                            self.root = Some(r);
                        }
                    }
                    None => {
                        self.attach(value, at)?;
                    }
                }
            }
            #[allow(unreachable_patterns)]
            _ => {}
        }
        Ok(())
    }
}

/// Parses a stream into trees. `lenient`: duplicate keys are kept (last wins) and reported
/// instead of failing.
pub(crate) fn parse(
    text: &str,
    file: &Path,
    lenient: bool,
    budget: Budget,
    quick: bool,
) -> Result<(Vec<Tree>, Vec<DuplicateKey>)> {
    // The quick reader first; whatever it leaves (or any error) is read again by granit, the
    // judge of validity and of every error message.
    if quick {
        let mut b = Builder::new(file, lenient, budget);
        if crate::yaml_scan::scan(text, |ev, at| b.feed(ev, at)).is_ok() {
            return Ok(b.finish());
        }
    }
    let mut b = Builder::new(file, lenient, budget);
    granit(text, &mut b)?;
    Ok(b.finish())
}

/// Reads `text` under `budget` and fails only when the budget is exceeded: the check in front
/// of readers that build values their own way (serde-saphyr's typed path). Syntax errors and
/// the like are theirs to report.
pub(crate) fn check_budget(text: &str, file: &Path, budget: Budget) -> Result<()> {
    let mut b = Builder::new(file, false, budget);
    match granit(text, &mut b) {
        Err(e) if b.over_budget => Err(e),
        _ => Ok(()),
    }
}

/// Feeds granit's events for `text` to `b`.
fn granit(text: &str, b: &mut Builder<'_>) -> Result<()> {
    // Comments are not kept in the trees; without them the parser skips the work of
    // attaching each one to a node (a fifth of its time on commented CRDs).
    let mut options = Options::default();
    options.emit_comments = false;
    for ev in Parser::new_from_str_with_options(text, options) {
        let (ev, span) = ev.map_err(|e| {
            let m = e.marker();
            b.error(
                Pos {
                    line: u32::try_from(m.line()).unwrap_or(u32::MAX),
                    col: u32::try_from(m.col() + 1).unwrap_or(u32::MAX),
                },
                e.info(),
            )
        })?;
        b.feed(ev, pos(&span))?;
    }
    Ok(())
}

impl Builder<'_> {
    fn finish(self) -> (Vec<Tree>, Vec<DuplicateKey>) {
        let file = self.file;
        let dups = self
            .dups
            .into_iter()
            .map(|(key, pos)| DuplicateKey {
                key,
                origin: Origin {
                    file: Arc::from(file),
                    pos,
                },
            })
            .collect();
        (self.docs, dups)
    }
}

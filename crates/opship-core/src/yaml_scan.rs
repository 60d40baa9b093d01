//! The quick reader for the block YAML that bundles and CRDs are written in. For the subset it
//! knows (block mappings and sequences, plain, quoted and block scalars, one-line flow
//! collections, comments, `---` between documents) it produces granit-parser's events with
//! granit's positions, several times faster; at anything else (anchors, aliases, tags, tabs, CR
//! line ends, directives, complex keys, multi-line flow collections, and every error) it gives up
//! and the caller reads the whole text again with granit. So granit stays the only judge of what
//! is valid and of every error message; a differential test over the corpus and a fuzz target
//! hold the two readers to the same events.

use std::borrow::Cow;

use granit_parser::{Event, ScalarStyle, StructureStyle};

use crate::yaml::Pos;

/// Why reading stopped before the end.
pub(crate) enum Stop<E> {
    /// The text uses something this reader leaves to granit: where in this file it gave up
    /// and the line of the text (for the tests' statistics).
    Unsupported(u32, u32),
    /// The receiver refused an event.
    Sink(E),
}

type R<T, E> = Result<T, Stop<E>>;

/// Deepest flow nesting read here (granit takes over beyond).
const MAX_FLOW_DEPTH: usize = 64;

/// Where a block node starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// First thing on its line.
    Line,
    /// After `- ` on the line of a sequence entry.
    Dash,
    /// After `key:` on the key's line: only a scalar or a flow collection may follow.
    Colon,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Chomp {
    Strip,
    Clip,
    Keep,
}

/// Reads `text` and hands every event with its position to `sink`. Texts with a tab or a
/// carriage return are left to granit whole.
pub(crate) fn scan<'a, E>(
    text: &'a str,
    sink: impl FnMut(Event<'a>, Pos) -> Result<(), E>,
) -> R<(), E> {
    if !plain_text(text.as_bytes()) {
        return Err(Stop::Unsupported(line!(), 0));
    }
    let mut s = Scanner {
        text,
        b: text.as_bytes(),
        p: 0,
        ls: 0,
        le: 0,
        line: 1,
        sink,
    };
    s.le = s.find_le(0);
    s.stream()
}

/// Whether every character is one YAML allows in a stream and this reader takes: no tab, no
/// CR, no control character, no byte-order mark, no U+FFFE or U+FFFF (granit refuses those
/// or reads them in ways left to it).
fn plain_text(b: &[u8]) -> bool {
    // Whole chunks at a time, as the compiler turns this into vector code; a chunk with a
    // suspect byte (or any lead byte of the suspect non-ASCII characters) is looked at closely.
    const CHUNK: usize = 64;
    let suspect = |c: u8| (c < 0x20 && c != b'\n') | (c == 0x7F) | (c == 0xC2) | (c == 0xEF);
    for (n, chunk) in b.chunks(CHUNK).enumerate() {
        if !chunk.iter().fold(false, |acc, &c| acc | suspect(c)) {
            continue;
        }
        let base = n * CHUNK;
        for (k, &c) in chunk.iter().enumerate() {
            let i = base + k;
            let next = |d: usize| b.get(i + d).copied().unwrap_or(0);
            let bad = match c {
                0xC2 => matches!(next(1), 0x80..=0x9F) && next(1) != 0x85,
                0xEF => {
                    (next(1) == 0xBB && next(2) == 0xBF)
                        || (next(1) == 0xBF && matches!(next(2), 0xBE | 0xBF))
                }
                c => suspect(c),
            };
            if bad {
                return false;
            }
        }
    }
    true
}

fn quote_style(double: bool) -> ScalarStyle {
    if double {
        ScalarStyle::DoubleQuoted
    } else {
        ScalarStyle::SingleQuoted
    }
}

struct Scanner<'a, F> {
    text: &'a str,
    b: &'a [u8],
    /// The cursor.
    p: usize,
    /// Start of the cursor's line.
    ls: usize,
    /// End of the cursor's line: its `\n` or the end of the text.
    le: usize,
    /// The cursor's line, from 1.
    line: u32,
    sink: F,
}

fn is_blank_or_end(b: &[u8], i: usize, end: usize) -> bool {
    i >= end || b[i] == b' '
}

impl<'a, E, F: FnMut(Event<'a>, Pos) -> Result<(), E>> Scanner<'a, F> {
    fn find_le(&self, from: usize) -> usize {
        memchr::memchr(b'\n', &self.b[from..]).map_or(self.b.len(), |i| from + i)
    }

    fn unsupported(&self, at: u32) -> Stop<E> {
        Stop::Unsupported(at, self.line)
    }

    fn eof(&self) -> bool {
        self.p >= self.b.len()
    }

    /// Moves the cursor to the start of the next line.
    fn next_line(&mut self) {
        if self.le >= self.b.len() {
            self.p = self.b.len();
            self.ls = self.p;
            self.le = self.p;
            return;
        }
        self.p = self.le + 1;
        self.ls = self.p;
        self.line += 1;
        self.le = self.find_le(self.p);
    }

    /// Granit's position of byte `i` of the cursor's line: line, and column in characters.
    fn pos_at(&self, i: usize) -> Pos {
        let prefix = &self.b[self.ls..i];
        let chars = if prefix.is_ascii() {
            prefix.len()
        } else {
            prefix.iter().filter(|&&c| (c & 0xC0) != 0x80).count()
        };
        Pos {
            line: self.line,
            col: u32::try_from(chars + 1).unwrap_or(u32::MAX),
        }
    }

    fn pos(&self) -> Pos {
        self.pos_at(self.p)
    }

    fn emit(&mut self, ev: Event<'a>, at: Pos) -> R<(), E> {
        (self.sink)(ev, at).map_err(Stop::Sink)
    }

    fn scalar(&mut self, mut text: Cow<'a, str>, style: ScalarStyle, at: Pos) -> R<(), E> {
        // Built strings end up in the trees as they are: no spare capacity kept there.
        if let Cow::Owned(s) = &mut text {
            s.shrink_to_fit();
        }
        self.emit(Event::Scalar(text, style, 0, None), at)
    }

    /// Leading spaces of the line starting at `ls`.
    fn spaces_from(&self, ls: usize) -> usize {
        self.b[ls..].iter().take_while(|&&c| c == b' ').count()
    }

    /// From the start of the cursor's line, skips lines that are empty, spaces or comments,
    /// and puts the cursor on the first character of the next line with content (or the end).
    fn skip_blank_lines(&mut self) {
        loop {
            if self.ls >= self.b.len() {
                self.p = self.b.len();
                return;
            }
            let first = self.ls + self.spaces_from(self.ls);
            if first < self.le && self.b[first] != b'#' {
                self.p = first;
                return;
            }
            self.next_line();
        }
    }

    /// The cursor's line is a document marker (`---` or `...` alone at the line start).
    fn at_marker(&self, m: &[u8; 3]) -> bool {
        self.p == self.ls
            && self.b[self.ls..].starts_with(m)
            && is_blank_or_end(self.b, self.ls + 3, self.le)
    }

    fn at_any_marker(&self) -> bool {
        self.at_marker(b"---") || self.at_marker(b"...")
    }

    /// A block sequence entry indicator at the cursor.
    fn at_dash(&self) -> bool {
        self.b[self.p] == b'-' && is_blank_or_end(self.b, self.p + 1, self.le)
    }

    /// From `i` to the line's end there are only spaces, maybe followed by a comment.
    fn rest_is_blank(&self, i: usize) -> bool {
        let mut j = i;
        while j < self.le && self.b[j] == b' ' {
            j += 1;
        }
        j >= self.le || (self.b[j] == b'#' && (j == self.ls || self.b[j - 1] == b' '))
    }

    fn skip_spaces(&mut self) {
        while self.p < self.le && self.b[self.p] == b' ' {
            self.p += 1;
        }
    }

    fn stream(&mut self) -> R<(), E> {
        loop {
            self.skip_blank_lines();
            if self.eof() {
                return Ok(());
            }
            if self.at_marker(b"...") || (self.p == self.ls && self.b[self.p] == b'%') {
                return Err(self.unsupported(line!()));
            }
            let explicit = self.at_marker(b"---");
            let start = self.pos();
            let (start_ls, start_le) = (self.ls, self.le);
            if explicit {
                if !self.rest_is_blank(self.ls + 3) {
                    return Err(self.unsupported(line!()));
                }
                self.next_line();
            }
            self.emit(Event::DocumentStart(explicit, None), start)?;
            self.skip_blank_lines();
            if self.eof() || self.at_marker(b"---") {
                // An empty document: granit puts its null right after the marker.
                if !explicit || start_le != start_ls + 3 {
                    return Err(self.unsupported(line!()));
                }
                let at = Pos {
                    line: start.line,
                    col: start.col + 3,
                };
                self.scalar(Cow::Borrowed("~"), ScalarStyle::Plain, at)?;
            } else {
                if self.at_marker(b"...") {
                    return Err(self.unsupported(line!()));
                }
                self.block_node(-1, Ctx::Line)?;
                self.skip_blank_lines();
                if !self.eof() && !self.at_marker(b"---") {
                    return Err(self.unsupported(line!()));
                }
            }
            let at = self.pos();
            self.emit(Event::DocumentEnd, at)?;
        }
    }

    /// A block node whose first character is at the cursor (not a space, not a comment).
    /// `parent`: the indentation of the collection holding it (-1 at the root). Returns with
    /// the cursor at the start of the line after the node.
    fn block_node(&mut self, parent: i64, ctx: Ctx) -> R<(), E> {
        let col = self.p - self.ls;
        match self.b[self.p] {
            b'-' if self.at_dash() => {
                if ctx == Ctx::Colon {
                    return Err(self.unsupported(line!()));
                }
                self.block_seq(col, false)
            }
            b'|' | b'>' => self.block_scalar(parent),
            b'[' | b'{' => {
                self.flow_node(0)?;
                self.end_of_value()
            }
            b'&' | b'*' | b'!' | b'%' | b'@' | b'`' | b'?' | b',' | b']' | b'}' | b'#' => {
                Err(self.unsupported(line!()))
            }
            _ => {
                if ctx != Ctx::Colon && self.key_ahead() {
                    return self.block_map(col);
                }
                if parent < 0 {
                    // A document that is one scalar: rare, left to granit.
                    return Err(self.unsupported(line!()));
                }
                match self.b[self.p] {
                    q @ (b'"' | b'\'') => {
                        let at = self.pos();
                        let text = self.quoted(q == b'"', parent)?;
                        let style = quote_style(q == b'"');
                        self.scalar(text, style, at)?;
                        self.end_of_value()
                    }
                    _ => self.plain(parent),
                }
            }
        }
    }

    /// After a scalar or flow collection that ends on the cursor's line: only spaces and a
    /// comment may follow; moves to the next line.
    fn end_of_value(&mut self) -> R<(), E> {
        if !self.rest_is_blank(self.p) {
            return Err(self.unsupported(line!()));
        }
        self.next_line();
        Ok(())
    }

    /// Whether the cursor's line holds a mapping key starting at the cursor.
    fn key_ahead(&self) -> bool {
        let b = self.b;
        match b[self.p] {
            q @ (b'"' | b'\'') => {
                // A one-line quoted key: its end, then `:`.
                let mut i = self.p + 1;
                while i < self.le {
                    if b[i] == b'\\' && q == b'"' {
                        i += 2;
                        continue;
                    }
                    if b[i] == q {
                        if q == b'\'' && i + 1 < self.le && b[i + 1] == b'\'' {
                            i += 2;
                            continue;
                        }
                        let mut j = i + 1;
                        while j < self.le && b[j] == b' ' {
                            j += 1;
                        }
                        return j < self.le && b[j] == b':' && is_blank_or_end(b, j + 1, self.le);
                    }
                    i += 1;
                }
                false
            }
            _ => {
                let line = &b[self.p..self.le];
                let mut from = 0;
                while let Some(i) = memchr::memchr2(b':', b'#', &line[from..]) {
                    let i = from + i;
                    if line[i] == b'#' {
                        if i > 0 && line[i - 1] == b' ' {
                            return false;
                        }
                    } else if i + 1 >= line.len() || line[i + 1] == b' ' {
                        return true;
                    }
                    from = i + 1;
                }
                false
            }
        }
    }

    fn block_map(&mut self, m: usize) -> R<(), E> {
        let start = self.pos();
        self.emit(Event::MappingStart(StructureStyle::Block, 0, None), start)?;
        loop {
            let key_at = self.pos();
            let (key, style, colon) = self.key()?;
            self.scalar(key, style, key_at)?;
            let colon_at = self.pos_at(colon);
            self.p = colon + 1;
            self.skip_spaces();
            if self.rest_is_blank(self.p) {
                self.next_line();
                self.skip_blank_lines();
                let ind = self.p - self.ls;
                if self.eof() || self.at_any_marker() {
                    self.scalar(Cow::Borrowed("~"), ScalarStyle::Plain, colon_at)?;
                } else if ind > m {
                    self.block_node(m as i64, Ctx::Line)?;
                } else if ind == m && self.at_dash() {
                    self.block_seq(m, true)?;
                } else {
                    self.scalar(Cow::Borrowed("~"), ScalarStyle::Plain, colon_at)?;
                }
            } else {
                self.block_node(m as i64, Ctx::Colon)?;
            }
            self.skip_blank_lines();
            if self.eof() || self.at_any_marker() {
                break;
            }
            let ind = self.p - self.ls;
            if ind < m {
                break;
            }
            if ind > m || self.at_dash() {
                return Err(self.unsupported(line!()));
            }
        }
        let at = self.pos();
        self.emit(Event::MappingEnd, at)
    }

    /// A block mapping key at the cursor (known to be one by [`Self::key_ahead`]): its text,
    /// style and the byte of its `:`.
    fn key(&mut self) -> R<(Cow<'a, str>, ScalarStyle, usize), E> {
        let start = self.p;
        let key = self.key_text()?;
        self.check_key_length(start, key.2)?;
        Ok(key)
    }

    /// An implicit key may span at most 1024 characters up to its `:`; granit refuses longer.
    fn check_key_length(&self, start: usize, colon: usize) -> R<(), E> {
        const MAX_KEY: usize = 1024;
        if colon - start > MAX_KEY && self.text[start..colon].chars().count() > MAX_KEY {
            return Err(self.unsupported(line!()));
        }
        Ok(())
    }

    fn key_text(&mut self) -> R<(Cow<'a, str>, ScalarStyle, usize), E> {
        let b = self.b;
        match b[self.p] {
            q @ (b'"' | b'\'') => {
                let double = q == b'"';
                let text = self.quoted(double, i64::MAX)?;
                let mut j = self.p;
                while j < self.le && b[j] == b' ' {
                    j += 1;
                }
                if j >= self.le || b[j] != b':' || !is_blank_or_end(b, j + 1, self.le) {
                    return Err(self.unsupported(line!()));
                }
                let style = quote_style(double);
                Ok((text, style, j))
            }
            c => {
                let next_blank = is_blank_or_end(b, self.p + 1, self.le);
                if (matches!(c, b'-' | b'?' | b':') && next_blank)
                    || matches!(
                        c,
                        b'&' | b'*'
                            | b'!'
                            | b'|'
                            | b'>'
                            | b'%'
                            | b'@'
                            | b'`'
                            | b'['
                            | b']'
                            | b'{'
                            | b'}'
                            | b','
                            | b'#'
                    )
                {
                    return Err(self.unsupported(line!()));
                }
                let line = &b[self.p..self.le];
                let mut from = 0;
                let colon = loop {
                    let Some(i) = memchr::memchr2(b':', b'#', &line[from..]) else {
                        return Err(self.unsupported(line!()));
                    };
                    let i = from + i;
                    if line[i] == b'#' {
                        if i > 0 && line[i - 1] == b' ' {
                            // A comment before any `:`: not a key.
                            return Err(self.unsupported(line!()));
                        }
                    } else if i + 1 >= line.len() || line[i + 1] == b' ' {
                        break self.p + i;
                    }
                    from = i + 1;
                };
                let mut end = colon;
                while end > self.p && b[end - 1] == b' ' {
                    end -= 1;
                }
                let text = &self.text[self.p..end];
                if text == "<<" {
                    return Err(self.unsupported(line!()));
                }
                Ok((Cow::Borrowed(text), ScalarStyle::Plain, colon))
            }
        }
    }

    /// A block sequence whose first `-` is at the cursor, at column `s`. `indentless`: the
    /// value of a mapping key at the same column.
    fn block_seq(&mut self, s: usize, indentless: bool) -> R<(), E> {
        if !indentless {
            let at = self.pos();
            self.emit(Event::SequenceStart(StructureStyle::Block, 0, None), at)?;
        }
        let mut first = true;
        loop {
            self.p += 1;
            self.skip_spaces();
            let on_next_lines = self.rest_is_blank(self.p);
            // Where the entry's content starts, or the end of the `-` line when it is on the
            // next lines: granit's start of a sequence without indentation.
            let item_at = if on_next_lines {
                self.pos_at(self.le)
            } else {
                self.pos()
            };
            if first && indentless {
                self.emit(
                    Event::SequenceStart(StructureStyle::Block, 0, None),
                    item_at,
                )?;
            }
            first = false;
            if on_next_lines {
                self.next_line();
                self.skip_blank_lines();
                if !self.eof() && !self.at_any_marker() && self.p - self.ls > s {
                    self.block_node(s as i64, Ctx::Line)?;
                } else {
                    self.scalar(Cow::Borrowed("~"), ScalarStyle::Plain, item_at)?;
                }
            } else {
                self.block_node(s as i64, Ctx::Dash)?;
            }
            self.skip_blank_lines();
            if self.eof() || self.at_any_marker() {
                break;
            }
            let ind = self.p - self.ls;
            if ind == s && self.at_dash() {
                continue;
            }
            if ind < s || (indentless && ind == s) {
                break;
            }
            return Err(self.unsupported(line!()));
        }
        let at = self.pos();
        self.emit(Event::SequenceEnd, at)
    }

    /// A plain scalar at the cursor, maybe continued on more-indented lines.
    fn plain(&mut self, parent: i64) -> R<(), E> {
        let at = self.pos();
        let start = self.p;
        let (end, comment) = self.plain_line(start)?;
        if comment {
            self.scalar(
                Cow::Borrowed(&self.text[start..end]),
                ScalarStyle::Plain,
                at,
            )?;
            self.next_line();
            return Ok(());
        }
        let mut owned: Option<String> = None;
        loop {
            // Look past empty lines for a continuation.
            let mut ls = if self.le >= self.b.len() {
                break;
            } else {
                self.le + 1
            };
            let mut line = self.line + 1;
            let mut empties = 0usize;
            let (cls, cle, first) = loop {
                if ls >= self.b.len() {
                    break (ls, ls, ls);
                }
                let le = self.find_le(ls);
                let first = ls + self.spaces_from(ls);
                if first < le {
                    break (ls, le, first);
                }
                empties += 1;
                ls = le + 1;
                line += 1;
            };
            if first >= self.b.len() || (first - cls) as i64 <= parent || self.b[first] == b'#' {
                break;
            }
            self.ls = cls;
            self.le = cle;
            self.line = line;
            self.p = first;
            let (cend, comment) = self.plain_line(first)?;
            if comment {
                return Err(self.unsupported(line!()));
            }
            let s = owned.get_or_insert_with(|| self.text[start..end].to_owned());
            if empties == 0 {
                s.push(' ');
            } else {
                s.extend(std::iter::repeat_n('\n', empties));
            }
            s.push_str(&self.text[first..cend]);
        }
        let text = match owned {
            Some(s) => Cow::Owned(s),
            None => Cow::Borrowed(&self.text[start..end]),
        };
        self.scalar(text, ScalarStyle::Plain, at)?;
        self.next_line();
        Ok(())
    }

    /// One line of a plain scalar from `start`: where its text ends (trailing spaces off) and
    /// whether a comment follows. A `: ` inside is left to granit (an error there).
    fn plain_line(&self, start: usize) -> R<(usize, bool), E> {
        let b = self.b;
        let line = &b[start..self.le];
        let mut from = 0;
        let mut end = line.len();
        let mut comment = false;
        while let Some(i) = memchr::memchr2(b':', b'#', &line[from..]) {
            let i = from + i;
            if line[i] == b'#' {
                if i > 0 && line[i - 1] == b' ' {
                    end = i;
                    comment = true;
                    break;
                }
            } else if i + 1 >= line.len() || line[i + 1] == b' ' {
                return Err(self.unsupported(line!()));
            }
            from = i + 1;
        }
        let mut e = start + end;
        while e > start && b[e - 1] == b' ' {
            e -= 1;
        }
        if e == start {
            return Err(self.unsupported(line!()));
        }
        Ok((e, comment))
    }

    /// A quoted scalar at the cursor (its opening quote); leaves the cursor after the closing
    /// quote. Lines after the first must be indented more than `parent`.
    fn quoted(&mut self, double: bool, parent: i64) -> R<Cow<'a, str>, E> {
        let q = if double { b'"' } else { b'\'' };
        let b = self.b;
        let start = self.p + 1;
        // The common case: one line, no escapes.
        let mut i = start;
        while i < self.le {
            let c = b[i];
            if c == q {
                if !double && i + 1 < self.le && b[i + 1] == b'\'' {
                    break;
                }
                self.p = i + 1;
                return Ok(Cow::Borrowed(&self.text[start..i]));
            }
            if c == b'\\' && double {
                break;
            }
            i += 1;
        }
        let mut out = String::with_capacity(i - start + 16);
        out.push_str(&self.text[start..i]);
        // Where the text ends without the spaces written at the end of the current line: those
        // go at a line break, escaped ones (`\ `) stay.
        let mut hard_end = self.text[start..i].trim_end_matches(' ').len();
        loop {
            // Within a line.
            while i < self.le {
                let c = b[i];
                if c == q {
                    if !double && i + 1 < self.le && b[i + 1] == b'\'' {
                        out.push('\'');
                        hard_end = out.len();
                        i += 2;
                        continue;
                    }
                    self.p = i + 1;
                    return Ok(Cow::Owned(out));
                }
                if c == b'\\' && double {
                    if i + 1 >= self.le {
                        // An escaped line break: the lines join without a space.
                        i = self.quoted_next_line(parent)?;
                        if self.p != i {
                            return Err(self.unsupported(line!()));
                        }
                        let first = self.ls + self.spaces_from(self.ls);
                        i = first;
                        continue;
                    }
                    i = self.escape(i + 1, &mut out)?;
                    hard_end = out.len();
                    continue;
                }
                // Copy up to the next quote or backslash in one go.
                let run = b[i..self.le]
                    .iter()
                    .position(|&c| c == q || (double && c == b'\\'))
                    .map_or(self.le, |k| i + k);
                let text = &self.text[i..run];
                out.push_str(text);
                let spaces = text.len() - text.trim_end_matches(' ').len();
                if spaces < text.len() {
                    hard_end = out.len() - spaces;
                }
                i = run;
            }
            // A line break inside the scalar: the line's trailing spaces go, then one space or
            // the empty lines' breaks.
            out.truncate(hard_end);
            let mut empties = 0usize;
            loop {
                self.next_line();
                if self.eof() {
                    return Err(self.unsupported(line!()));
                }
                let first = self.ls + self.spaces_from(self.ls);
                if first < self.le {
                    if ((first - self.ls) as i64) <= parent || self.at_marker_line() {
                        return Err(self.unsupported(line!()));
                    }
                    i = first;
                    break;
                }
                empties += 1;
            }
            if empties == 0 {
                out.push(' ');
            } else {
                out.extend(std::iter::repeat_n('\n', empties));
            }
            hard_end = out.len();
        }
    }

    /// The cursor's line starts with a document marker.
    fn at_marker_line(&self) -> bool {
        (self.b[self.ls..].starts_with(b"---") || self.b[self.ls..].starts_with(b"..."))
            && is_blank_or_end(self.b, self.ls + 3, self.le)
    }

    /// After an escaped line break in a double-quoted scalar: the next line, which must have
    /// content indented more than `parent`. Returns the cursor.
    fn quoted_next_line(&mut self, parent: i64) -> R<usize, E> {
        self.next_line();
        if self.eof() {
            return Err(self.unsupported(line!()));
        }
        let first = self.ls + self.spaces_from(self.ls);
        if first >= self.le || ((first - self.ls) as i64) <= parent || self.at_marker_line() {
            return Err(self.unsupported(line!()));
        }
        Ok(self.p)
    }

    /// One escape of a double-quoted scalar, `i` after the backslash; returns the byte after it.
    fn escape(&self, i: usize, out: &mut String) -> R<usize, E> {
        let b = self.b;
        let c = match b[i] {
            b'0' => '\0',
            b'a' => '\u{07}',
            b'b' => '\u{08}',
            b't' => '\t',
            b'n' => '\n',
            b'v' => '\u{0B}',
            b'f' => '\u{0C}',
            b'r' => '\r',
            b'e' => '\u{1B}',
            b' ' => ' ',
            b'"' => '"',
            b'/' => '/',
            b'\\' => '\\',
            b'N' => '\u{85}',
            b'_' => '\u{A0}',
            b'L' => '\u{2028}',
            b'P' => '\u{2029}',
            x @ (b'x' | b'u' | b'U') => {
                let n = match x {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let hex = b
                    .get(i + 1..i + 1 + n)
                    .ok_or_else(|| self.unsupported(line!()))?;
                if i + n >= self.le || !hex.iter().all(u8::is_ascii_hexdigit) {
                    return Err(self.unsupported(line!()));
                }
                let v = u32::from_str_radix(
                    std::str::from_utf8(hex).map_err(|_| self.unsupported(line!()))?,
                    16,
                )
                .map_err(|_| self.unsupported(line!()))?;
                out.push(char::from_u32(v).ok_or_else(|| self.unsupported(line!()))?);
                return Ok(i + 1 + n);
            }
            _ => return Err(self.unsupported(line!())),
        };
        out.push(c);
        Ok(i + 1)
    }

    /// A literal (`|`) or folded (`>`) scalar whose indicator is at the cursor, as libyaml and
    /// granit read it: indentation from the first line with content, folding and chomping.
    fn block_scalar(&mut self, parent: i64) -> R<(), E> {
        let b = self.b;
        let literal = b[self.p] == b'|';
        let mut j = self.p + 1;
        let mut chomp = Chomp::Clip;
        if j < self.le && (b[j] == b'-' || b[j] == b'+') {
            chomp = if b[j] == b'-' {
                Chomp::Strip
            } else {
                Chomp::Keep
            };
            j += 1;
        }
        if j < self.le && b[j] != b' ' {
            // An indentation indicator, or anything else: granit's.
            return Err(self.unsupported(line!()));
        }
        if parent < 0 || !self.rest_is_blank(j) {
            return Err(self.unsupported(line!()));
        }
        self.next_line();
        // Leading empty lines, then the first line with content sets the indentation.
        let mut breaks = 0usize;
        let mut max_blank = 0usize;
        let indent = loop {
            if self.eof() {
                return Err(self.unsupported(line!()));
            }
            let n = self.spaces_from(self.ls);
            if self.ls + n < self.le {
                break n;
            }
            max_blank = max_blank.max(n);
            breaks += 1;
            self.next_line();
        };
        if (indent as i64) <= parent || max_blank > indent {
            return Err(self.unsupported(line!()));
        }
        self.p = self.ls + indent;
        let at = self.pos();
        let mut out = String::new();
        let mut leading_break = false;
        let mut leading_blank = false;
        let mut trailing_breaks = breaks;
        loop {
            // At a line's content, after `indent` spaces; the content goes to the line's end.
            let blank_start = b[self.p] == b' ';
            if !literal && leading_break && !leading_blank && !blank_start {
                // Folded: one line break between two lines of text is a space.
                if trailing_breaks == 0 {
                    out.push(' ');
                }
            } else if leading_break {
                out.push('\n');
            }
            out.extend(std::iter::repeat_n('\n', trailing_breaks));
            trailing_breaks = 0;
            leading_blank = blank_start;
            out.push_str(&self.text[self.p..self.le]);
            // Granit ends the last line with a break even when the text does not.
            leading_break = true;
            self.next_line();
            // Lines with at most `indent` spaces and nothing else are line breaks.
            let more = loop {
                if self.eof() {
                    break false;
                }
                let spaces = self.spaces_from(self.ls);
                let n = spaces.min(indent);
                let last = self.le >= b.len();
                if self.ls + n == self.le {
                    if last {
                        // Spaces at the very end, without a line break: not an empty line.
                        break false;
                    }
                    trailing_breaks += 1;
                    self.next_line();
                    continue;
                }
                if last && self.ls + spaces == self.le {
                    // Spaces beyond the indentation, then the end of the text: granit's.
                    return Err(self.unsupported(line!()));
                }
                break n == indent;
            };
            if !more {
                break;
            }
            self.p = self.ls + indent;
        }
        if chomp != Chomp::Strip && leading_break {
            out.push('\n');
        }
        if chomp == Chomp::Keep {
            out.extend(std::iter::repeat_n('\n', trailing_breaks));
        }
        let style = if literal {
            ScalarStyle::Literal
        } else {
            ScalarStyle::Folded
        };
        self.scalar(Cow::Owned(out), style, at)?;
        // The cursor is at the start of the line that ended the scalar.
        self.p = self.ls;
        Ok(())
    }

    /// A flow collection or scalar inside one, at the cursor; leaves the cursor after it.
    fn flow_node(&mut self, depth: usize) -> R<(), E> {
        if depth >= MAX_FLOW_DEPTH || self.p >= self.le {
            return Err(self.unsupported(line!()));
        }
        let b = self.b;
        let at = self.pos();
        match b[self.p] {
            open @ (b'[' | b'{') => {
                let is_seq = open == b'[';
                let close = if is_seq { b']' } else { b'}' };
                let ev = if is_seq {
                    Event::SequenceStart(StructureStyle::Flow, 0, None)
                } else {
                    Event::MappingStart(StructureStyle::Flow, 0, None)
                };
                self.emit(ev, at)?;
                self.p += 1;
                self.flow_spaces()?;
                if b[self.p] != close {
                    loop {
                        if is_seq {
                            self.flow_node(depth + 1)?;
                        } else {
                            self.flow_key()?;
                            self.flow_spaces()?;
                            self.flow_node(depth + 1)?;
                        }
                        self.flow_spaces()?;
                        match b[self.p] {
                            b',' => {
                                self.p += 1;
                                self.flow_spaces()?;
                                if b[self.p] == close {
                                    // A trailing comma: granit's.
                                    return Err(self.unsupported(line!()));
                                }
                            }
                            c if c == close => break,
                            _ => return Err(self.unsupported(line!())),
                        }
                    }
                }
                self.p += 1;
                let end_at = self.pos();
                let ev = if is_seq {
                    Event::SequenceEnd
                } else {
                    Event::MappingEnd
                };
                self.emit(ev, end_at)
            }
            q @ (b'"' | b'\'') => {
                let text = self.flow_quoted(q == b'"')?;
                let style = quote_style(q == b'"');
                self.scalar(text, style, at)?;
                if self.p < self.le && b[self.p] == b':' {
                    return Err(self.unsupported(line!()));
                }
                Ok(())
            }
            _ => {
                let end = self.flow_plain()?;
                let start = self.p;
                self.p = end;
                let mut e = end;
                while e > start && b[e - 1] == b' ' {
                    e -= 1;
                }
                self.scalar(Cow::Borrowed(&self.text[start..e]), ScalarStyle::Plain, at)?;
                if self.p < self.le && b[self.p] == b':' {
                    return Err(self.unsupported(line!()));
                }
                Ok(())
            }
        }
    }

    /// Spaces inside a flow collection; its line must go on.
    fn flow_spaces(&mut self) -> R<(), E> {
        self.skip_spaces();
        if self.p >= self.le || self.b[self.p] == b'#' {
            return Err(self.unsupported(line!()));
        }
        Ok(())
    }

    /// A one-line quoted scalar in a flow collection.
    fn flow_quoted(&mut self, double: bool) -> R<Cow<'a, str>, E> {
        let line = self.line;
        let text = self.quoted(double, i64::MAX)?;
        if self.line != line {
            return Err(self.unsupported(line!()));
        }
        Ok(text)
    }

    /// The end of a plain scalar in a flow collection at the cursor (before `,`, a bracket or
    /// a `:`).
    fn flow_plain(&self) -> R<usize, E> {
        let b = self.b;
        if matches!(
            b[self.p],
            b'-' | b'?'
                | b':'
                | b'&'
                | b'*'
                | b'!'
                | b'|'
                | b'>'
                | b'%'
                | b'@'
                | b'`'
                | b'#'
                | b','
                | b'['
                | b']'
                | b'{'
                | b'}'
        ) {
            return Err(self.unsupported(line!()));
        }
        let mut i = self.p;
        while i < self.le {
            match b[i] {
                b',' | b'[' | b']' | b'{' | b'}' | b':' => return Ok(i),
                b'#' if b[i - 1] == b' ' => return Err(self.unsupported(line!())),
                _ => i += 1,
            }
        }
        Err(self.unsupported(line!()))
    }

    /// A key of a flow mapping and its `:`; leaves the cursor after the `:`.
    fn flow_key(&mut self) -> R<(), E> {
        let b = self.b;
        let at = self.pos();
        let key_start = self.p;
        let (text, style) = match b[self.p] {
            q @ (b'"' | b'\'') => {
                let t = self.flow_quoted(q == b'"')?;
                let style = quote_style(q == b'"');
                self.skip_spaces();
                (t, style)
            }
            _ => {
                let start = self.p;
                let end = self.flow_plain()?;
                if b[end] != b':' || !is_blank_or_end(b, end + 1, self.le) {
                    return Err(self.unsupported(line!()));
                }
                self.p = end;
                let mut e = end;
                while e > start && b[e - 1] == b' ' {
                    e -= 1;
                }
                (Cow::Borrowed(&self.text[start..e]), ScalarStyle::Plain)
            }
        };
        if self.p >= self.le || b[self.p] != b':' {
            return Err(self.unsupported(line!()));
        }
        self.check_key_length(key_start, self.p)?;
        self.scalar(text, style, at)?;
        self.p += 1;
        Ok(())
    }
}

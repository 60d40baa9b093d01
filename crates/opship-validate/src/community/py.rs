//! The Python semantics the community pipeline's checks are written in, where they show in a
//! verdict or a message: `str()` and `repr()` of parsed YAML, python-semver's version grammar,
//! dateutil's `isoparse`, semantic_version's NPM ranges (`olm.skipRange`).

use serde_json::Value;

/// Python's `repr()` of a string: single quotes unless the text holds a single quote and no
/// double quote.
pub fn repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `repr()` of a value PyYAML gives for this JSON value.
pub fn repr(v: &Value) -> String {
    match v {
        Value::String(s) => repr_str(s),
        other => str_of(other),
    }
}

/// Python's `str()` of a value PyYAML gives for this JSON value.
pub fn str_of(v: &Value) -> String {
    match v {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|_| !n.is_i64() && !n.is_u64()) {
                float_repr(f)
            } else {
                n.to_string()
            }
        }
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(repr).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", repr_str(k), repr(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let s = format!("{f:?}");
    if s.contains('e') {
        // Python writes 1e+16 where Rust writes 1e16.
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else {
        s
    }
}

/// Python's `repr()` of a list of strings.
pub fn repr_list<S: AsRef<str>>(items: &[S]) -> String {
    let inner: Vec<String> = items.iter().map(|s| repr_str(s.as_ref())).collect();
    format!("[{}]", inner.join(", "))
}

/// Python's `repr()` of a set of strings (the members in the order given: Python's own order
/// depends on the process's hash seed).
pub fn repr_set<S: AsRef<str>>(items: &[S]) -> String {
    let inner: Vec<String> = items.iter().map(|s| repr_str(s.as_ref())).collect();
    format!("{{{}}}", inner.join(", "))
}

/// A version as python-semver's `Version.parse` reads it; `optional` allows a missing minor
/// and patch (`optional_minor_and_patch=True`). Returns (major, minor, patch).
pub fn parse_semver(text: &str, optional: bool) -> Option<(u64, u64, u64)> {
    // Python's `$` also matches before one final newline.
    let text = text.strip_suffix('\n').unwrap_or(text);
    let (core, _rest) = split_core(text)?;
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3 || (!optional && parts.len() != 3) {
        return None;
    }
    let mut nums = [0u64; 3];
    for (i, p) in parts.iter().enumerate() {
        nums[i] = numeric(p)?;
    }
    Some((nums[0], nums[1], nums[2]))
}

/// `0` or a number without leading zeros.
fn numeric(p: &str) -> Option<u64> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || (p.len() > 1 && p.starts_with('0'))
    {
        return None;
    }
    p.parse().ok()
}

/// The `major.minor.patch` part and whether the pre-release and build parts are well formed.
fn split_core(text: &str) -> Option<(&str, ())> {
    let (rest, build) = match text.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (text, None),
    };
    if let Some(b) = build
        && !b
            .split('.')
            .all(|id| !id.is_empty() && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-'))
    {
        return None;
    }
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    if let Some(p) = pre {
        for id in p.split('.') {
            let ok = !id.is_empty()
                && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
                && (!id.bytes().all(|c| c.is_ascii_digit()) || numeric(id).is_some());
            if !ok {
                return None;
            }
        }
    }
    Some((core, ()))
}

/// A version as python-semanticversion's `Version()` reads it (strict SemVer 2.0): the key
/// bundles are ordered by (build metadata ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemVer {
    core: (u64, u64, u64),
    pre: Vec<PreId>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum PreId {
    Num(u64),
    Alpha(String),
}

impl SemVer {
    /// Parses strict SemVer.
    pub fn parse(text: &str) -> Option<SemVer> {
        let core = parse_semver(text, false)?;
        if text.ends_with('\n') {
            return None;
        }
        let no_build = text.split_once('+').map_or(text, |(r, _)| r);
        let pre = match no_build.split_once('-') {
            Some((_, p)) => p
                .split('.')
                .map(|id| match id.parse::<u64>() {
                    Ok(n) if id.bytes().all(|b| b.is_ascii_digit()) => PreId::Num(n),
                    _ => PreId::Alpha(id.to_owned()),
                })
                .collect(),
            None => Vec::new(),
        };
        Some(SemVer { core, pre })
    }

    /// The version without pre-release.
    pub fn core(&self) -> (u64, u64, u64) {
        self.core
    }

    /// Whether it has a pre-release part.
    pub fn is_prerelease(&self) -> bool {
        !self.pre.is_empty()
    }
}

impl PartialOrd for SemVer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SemVer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        self.core
            .cmp(&other.core)
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => {
                    for (a, b) in self.pre.iter().zip(&other.pre) {
                        let o = match (a, b) {
                            (PreId::Num(x), PreId::Num(y)) => x.cmp(y),
                            (PreId::Num(_), PreId::Alpha(_)) => Ordering::Less,
                            (PreId::Alpha(_), PreId::Num(_)) => Ordering::Greater,
                            (PreId::Alpha(x), PreId::Alpha(y)) => x.cmp(y),
                        };
                        if o != Ordering::Equal {
                            return o;
                        }
                    }
                    self.pre.len().cmp(&other.pre.len())
                }
            })
    }
}

/// An NPM range (`>=1.0.0 <1.2.0 || 2.0.0`) as semantic_version's `NpmSpec` reads it, for
/// `olm.skipRange`. `None` when it does not parse (the pipeline then ignores the range).
#[derive(Debug, Clone)]
pub struct NpmRange {
    clauses: Vec<Vec<(Op, SemVer)>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl NpmRange {
    /// Parses the range; partial versions (`1.2`, `1.x`), `~` and `^` are expanded as npm does.
    pub fn parse(text: &str) -> Option<NpmRange> {
        let mut clauses = Vec::new();
        for clause in text.split("||") {
            let words: Vec<&str> = clause.split_whitespace().collect();
            let mut comparators = Vec::new();
            if words.len() == 3 && words[1] == "-" {
                let (lo, _) = partial(words[0])?;
                comparators.push((Op::Ge, lo));
                let (hi, parts) = partial(words[2])?;
                comparators.push(upper(&hi, parts, true));
            } else if words.is_empty() {
                comparators.push((Op::Ge, SemVer::parse("0.0.0")?));
            } else {
                for w in words {
                    comparators.extend(comparator(w)?);
                }
            }
            clauses.push(comparators);
        }
        Some(NpmRange { clauses })
    }

    /// Whether the version is in the range. A pre-release matches a clause only when one of
    /// its comparators names a pre-release of the same `major.minor.patch`, as npm decides.
    pub fn contains(&self, v: &SemVer) -> bool {
        self.clauses.iter().any(|c| {
            c.iter().all(|(op, bound)| match op {
                Op::Lt => v < bound,
                Op::Le => v <= bound,
                Op::Gt => v > bound,
                Op::Ge => v >= bound,
                Op::Eq => v == bound,
            }) && (!v.is_prerelease()
                || c.iter()
                    .any(|(_, b)| b.is_prerelease() && b.core() == v.core()))
        })
    }
}

/// One clause of an [`NpmRange`] (comparators that must all hold).
pub struct Clause<'a>(&'a [(Op, SemVer)]);

impl NpmRange {
    /// The clauses (`||` alternatives).
    pub fn clauses(&self) -> impl Iterator<Item = Clause<'_>> {
        self.clauses.iter().map(|c| Clause(c))
    }
}

impl Clause<'_> {
    /// The positions of the ascending `sorted` whose versions meet every comparator (the
    /// pre-release rule of [`NpmRange::contains`] aside): one block, since each comparator
    /// holds on a prefix, a suffix or (`=`) a block of them.
    pub fn block<T>(&self, sorted: &[T], key: impl Fn(&T) -> &SemVer) -> std::ops::Range<usize> {
        let (mut lo, mut hi) = (0, sorted.len());
        for (op, bound) in self.0 {
            if matches!(op, Op::Gt | Op::Ge | Op::Eq) {
                let below = |v: &T| match op {
                    Op::Gt => key(v) <= bound,
                    _ => key(v) < bound,
                };
                lo = lo.max(sorted.partition_point(below));
            }
            if matches!(op, Op::Lt | Op::Le | Op::Eq) {
                let within = |v: &T| match op {
                    Op::Lt => key(v) < bound,
                    _ => key(v) <= bound,
                };
                hi = hi.min(sorted.partition_point(within));
            }
        }
        lo..hi.max(lo)
    }

    /// The `major.minor.patch` whose pre-releases the clause admits: those of its comparators
    /// that are pre-releases.
    pub fn prerelease_cores(&self) -> std::collections::BTreeSet<(u64, u64, u64)> {
        self.0
            .iter()
            .filter(|(_, b)| b.is_prerelease())
            .map(|(_, b)| b.core())
            .collect()
    }
}

/// A possibly partial version (`1`, `1.2`, `1.x`, `*`): the lowest version it names and how
/// many parts were given.
fn partial(text: &str) -> Option<(SemVer, usize)> {
    let text = text.trim_start_matches(['v', '=']);
    if text == "*" || text.eq_ignore_ascii_case("x") || text.is_empty() {
        return Some((SemVer::parse("0.0.0")?, 0));
    }
    let (core, tail) = match text.find(['-', '+']) {
        Some(i) => (&text[..i], &text[i..]),
        None => (text, ""),
    };
    let mut parts = Vec::new();
    for p in core.split('.') {
        if p == "*" || p.eq_ignore_ascii_case("x") {
            break;
        }
        parts.push(numeric(p)?);
    }
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let n = parts.len();
    parts.resize(3, 0);
    let full = format!(
        "{}.{}.{}{}",
        parts[0],
        parts[1],
        parts[2],
        if n == 3 { tail } else { "" }
    );
    Some((SemVer::parse(&full)?, n))
}

/// The bound above a partial version: `<` the next one, or `<=` a full version.
fn upper(v: &SemVer, parts: usize, inclusive_full: bool) -> (Op, SemVer) {
    let (ma, mi, pa) = v.core();
    let next = |a: u64, b: u64, c: u64| SemVer {
        core: (a, b, c),
        pre: vec![PreId::Num(0)],
    };
    match parts {
        0 => (
            Op::Ge,
            SemVer {
                core: (0, 0, 0),
                pre: Vec::new(),
            },
        ),
        1 => (Op::Lt, next(ma + 1, 0, 0)),
        2 => (Op::Lt, next(ma, mi + 1, 0)),
        _ if inclusive_full => (Op::Le, v.clone()),
        _ => (Op::Lt, next(ma, mi, pa + 1)),
    }
}

fn comparator(word: &str) -> Option<Vec<(Op, SemVer)>> {
    let (op, rest) = if let Some(r) = word.strip_prefix(">=") {
        (Some(Op::Ge), r)
    } else if let Some(r) = word.strip_prefix("<=") {
        (Some(Op::Le), r)
    } else if let Some(r) = word.strip_prefix('>') {
        (Some(Op::Gt), r)
    } else if let Some(r) = word.strip_prefix('<') {
        (Some(Op::Lt), r)
    } else if let Some(r) = word.strip_prefix('~') {
        let (v, n) = partial(r)?;
        let (ma, mi, _) = v.core();
        let hi = if n <= 1 {
            upper(&v, 1, false)
        } else {
            upper(
                &SemVer {
                    core: (ma, mi, 0),
                    pre: vec![],
                },
                2,
                false,
            )
        };
        return Some(vec![(Op::Ge, v), hi]);
    } else if let Some(r) = word.strip_prefix('^') {
        let (v, n) = partial(r)?;
        let (ma, mi, _) = v.core();
        let hi = if ma > 0 || n <= 1 {
            upper(&v, 1, false)
        } else if mi > 0 || n == 2 {
            upper(&v, 2, false)
        } else {
            upper(&v, 3, false)
        };
        return Some(vec![(Op::Ge, v), hi]);
    } else {
        (None, word)
    };
    let (v, n) = partial(rest)?;
    Some(match (op, n) {
        (Some(Op::Ge), _) | (Some(Op::Lt), _) => vec![(op?, v)],
        (Some(Op::Gt), 3) | (Some(Op::Le), 3) => vec![(op?, v)],
        // `>1.2` is `>=1.3.0`; `<=1.2` is `<1.3.0`.
        (Some(Op::Gt), _) => vec![match upper(&v, n, false) {
            (Op::Lt, hi) => (Op::Ge, hi),
            other => other,
        }],
        (Some(Op::Le), _) => vec![upper(&v, n, false)],
        (None, 3) | (Some(Op::Eq), 3) => vec![(Op::Eq, v)],
        (None, _) | (Some(Op::Eq), _) => vec![(Op::Ge, v.clone()), upper(&v, n, false)],
    })
}

/// How a scalar is written in its YAML file, which decides what PyYAML makes of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// A plain scalar without a tag: PyYAML resolves it by its form (YAML 1.1), so a
    /// timestamp-like one becomes a `datetime` (or a `date`).
    Plain,
    /// Quoted, a block scalar or tagged `!!str`: always a string.
    Str,
    /// Tagged `!!timestamp`: constructed as a timestamp whatever its quoting.
    Timestamp,
}

/// `validate_timestamp` of the pipeline on a `createdAt` written as `written` whose text (or
/// `str()` of its parsed value) is `text`: a `datetime` passes; anything else passes when
/// dateutil's `isoparse` reads `str()` of it. A plain scalar in YAML 1.1's timestamp form
/// becomes a `datetime` (time given) or a `date` (whose `str()` always reads back), so it
/// passes; one PyYAML cannot construct (`2023-02-29`, offset `+24:00`) makes the whole CSV
/// unreadable, and fails here.
pub fn is_timestamp(text: &str, written: Written) -> bool {
    match written {
        Written::Plain if yaml11_timestamp_form(text) => yaml11_constructible(text),
        Written::Timestamp => yaml11_timestamp_form(text) && yaml11_constructible(text),
        Written::Plain | Written::Str => isoparse(text),
    }
}

/// PyYAML's implicit resolver for `tag:yaml.org,2002:timestamp` (YAML 1.1): a date with
/// two-digit month and day, or a date with one- or two-digit month and day, a time with a one-
/// or two-digit hour, an optional fraction and an optional zone.
static YAML11_TIMESTAMP: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}",
        r"|([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:[Tt]|[ \t]+)([0-9]{1,2}):([0-9]{2}):([0-9]{2})",
        r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|([-+])([0-9]{1,2})(?::([0-9]{2}))?))?)$",
    ))
    .expect("valid regex")
});

fn yaml11_timestamp_form(text: &str) -> bool {
    YAML11_TIMESTAMP.is_match(text)
}

/// Whether PyYAML's `construct_yaml_timestamp` builds the value: a real date, hour, minute
/// and second, and a zone offset under 24 hours (`datetime.timezone`'s limit).
fn yaml11_constructible(text: &str) -> bool {
    let Some(c) = YAML11_TIMESTAMP.captures(text) else {
        return false;
    };
    let num = |i: usize| {
        c.get(i)
            .map_or(0, |m| m.as_str().parse::<i64>().unwrap_or(-1))
    };
    if c.get(1).is_none() {
        // The date-only form: `YYYY-MM-DD`.
        let field = |r: std::ops::Range<usize>| text[r].parse::<i64>().unwrap_or(-1);
        return valid_date(field(0..4), field(5..7), field(8..10));
    }
    valid_date(num(1), num(2), num(3))
        && (0..24).contains(&num(4))
        && (0..60).contains(&num(5))
        && (0..60).contains(&num(6))
        && num(8) * 60 + num(9) < 24 * 60
}

/// Python's `int()` of ASCII bytes: surrounding whitespace, a sign, and digits with single
/// underscores between them (`b" 8"`, `b"+1"` and `b"0_1"` are numbers; `b""` and `b"8:"` are
/// not). dateutil's `isoparse` reads each field with it.
fn py_int(s: &[u8]) -> Option<i64> {
    let space = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r');
    let start = s.iter().position(|c| !space(c))?;
    let end = s.len() - s.iter().rev().position(|c| !space(c))?;
    let mut t = &s[start..end];
    let negative = t.first() == Some(&b'-');
    if matches!(t.first(), Some(b'-' | b'+')) {
        t = &t[1..];
    }
    if t.is_empty() || !t[0].is_ascii_digit() || !t[t.len() - 1].is_ascii_digit() {
        return None;
    }
    let mut n: i64 = 0;
    let mut underscore = false;
    for &c in t {
        if c == b'_' {
            if underscore {
                return None;
            }
            underscore = true;
            continue;
        }
        if !c.is_ascii_digit() {
            return None;
        }
        underscore = false;
        n = n.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
    }
    Some(if negative { -n } else { n })
}

/// `s[from..to]` as Python slices bytes: clamped to the string.
fn slice(s: &[u8], from: usize, to: usize) -> &[u8] {
    &s[from.min(s.len())..to.min(s.len())]
}

/// dateutil's `isoparse` (2.9, default separator: any one character between date and time)
/// accepts the text and `datetime()` builds its result. Where dateutil raises
/// `OverflowError` (a week date or `24:00` past 9999-12-31) the pipeline's check breaks; that
/// is no valid timestamp either.
pub fn isoparse(text: &str) -> bool {
    if !text.is_ascii() {
        return false;
    }
    let s = text.as_bytes();
    let Some((mut date, pos)) = isodate_common(s).or_else(|| isodate_uncommon(s)) else {
        return false;
    };
    let mut time = [0i64; 4];
    if s.len() > pos {
        match isotime(&s[pos + 1..]) {
            Some(t) => time = t,
            None => return false,
        }
    }
    if time[0] == 24 {
        // Midnight at the end of the day: the next day, which must exist.
        time[0] = 0;
        if !valid_date(date[0], date[1], date[2]) {
            return false;
        }
        let next = days_from_civil(date[0], date[1], date[2]) + 1;
        date = civil_from_days(next);
    }
    valid_date(date[0], date[1], date[2])
        && (0..24).contains(&time[0])
        && (0..60).contains(&time[1])
        && (0..60).contains(&time[2])
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// A date `datetime.date` accepts: year 1 to 9999, a real month and day.
fn valid_date(year: i64, month: i64, day: i64) -> bool {
    if !(1..=9999).contains(&year) || !(1..=12).contains(&month) || day < 1 {
        return false;
    }
    let days = [
        31,
        28 + i64::from(is_leap(year)),
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    day <= days[month as usize - 1]
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01.
fn civil_from_days(days: i64) -> [i64; 3] {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    [yoe + era * 400 + i64::from(m <= 2), m, d]
}

/// `_parse_isodate_common`: `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, `YYYYMMDD`. The fields are not
/// checked here (`datetime()` does), so `None` only where dateutil raises while reading.
fn isodate_common(s: &[u8]) -> Option<([i64; 3], usize)> {
    if s.len() < 4 {
        return None;
    }
    let year = py_int(&s[0..4])?;
    let mut pos = 4;
    if pos >= s.len() {
        return Some(([year, 1, 1], pos));
    }
    let has_sep = s[pos] == b'-';
    pos += usize::from(has_sep);
    if s.len() - pos < 2 {
        return None;
    }
    let month = py_int(&s[pos..pos + 2])?;
    pos += 2;
    if pos >= s.len() {
        return has_sep.then_some(([year, month, 1], pos));
    }
    if has_sep {
        if s[pos] != b'-' {
            return None;
        }
        pos += 1;
    }
    if s.len() - pos < 2 {
        return None;
    }
    let day = py_int(&s[pos..pos + 2])?;
    Some(([year, month, day], pos + 2))
}

/// `_parse_isodate_uncommon`: week dates (`YYYY-Www-D`, `YYYYWwwD`) and ordinal dates
/// (`YYYY-DDD`, `YYYYDDD`), as calendar dates. A field may be shorter than its width at the
/// end of the text, as Python's slices allow (`2023-W5`).
fn isodate_uncommon(s: &[u8]) -> Option<([i64; 3], usize)> {
    if s.len() < 4 {
        return None;
    }
    let year = py_int(&s[0..4])?;
    let has_sep = s.get(4) == Some(&b'-');
    let mut pos = 4 + usize::from(has_sep);
    if s.get(pos) == Some(&b'W') {
        pos += 1;
        let week = py_int(slice(s, pos, pos + 2))?;
        pos += 2;
        let mut day = 1;
        if s.len() > pos {
            if (s[pos] == b'-') != has_sep {
                return None;
            }
            pos += usize::from(has_sep);
            day = py_int(slice(s, pos, pos + 1))?;
            pos += 1;
        }
        if !(1..54).contains(&week) || !(1..8).contains(&day) || !valid_date(year, 1, 4) {
            return None;
        }
        // Monday of week 1 is the Monday on or before 4 January.
        let jan4 = days_from_civil(year, 1, 4);
        let weekday = (jan4 + 3).rem_euclid(7); // 0 = Monday (1970-01-01 was a Thursday)
        let date = civil_from_days(jan4 - weekday + (week - 1) * 7 + (day - 1));
        // Past 9999-12-31 dateutil raises OverflowError.
        return valid_date(date[0], date[1], date[2]).then_some((date, pos));
    }
    if s.len() - pos < 3 {
        return None;
    }
    let ordinal = py_int(&s[pos..pos + 3])?;
    pos += 3;
    if ordinal < 1 || ordinal > 365 + i64::from(is_leap(year)) || !valid_date(year, 1, 1) {
        return None;
    }
    let date = civil_from_days(days_from_civil(year, 1, 1) + ordinal - 1);
    Some((date, pos))
}

/// `_parse_isotime`: hour, minute, second (colons optional but consistent), a fraction after
/// `.` or `,`, a zone; each two-character field read with Python's `int()`. Returns hour,
/// minute, second and microseconds.
fn isotime(s: &[u8]) -> Option<[i64; 4]> {
    if s.len() < 2 {
        return None;
    }
    let mut comps = [0i64; 4];
    let mut pos = 0;
    let mut comp: i32 = -1;
    let mut has_sep = false;
    while pos < s.len() && comp < 5 {
        comp += 1;
        if matches!(s[pos], b'-' | b'+' | b'Z' | b'z') {
            tzstr(&s[pos..])?;
            pos = s.len();
            break;
        }
        if comp == 1 && s[pos] == b':' {
            has_sep = true;
            pos += 1;
        } else if comp == 2 && has_sep {
            if s[pos] != b':' {
                return None;
            }
            pos += 1;
        }
        if comp < 3 {
            comps[comp as usize] = py_int(slice(s, pos, pos + 2))?;
            pos += 2;
        }
        if comp == 3 {
            // `[\.,]([0-9]+)`
            let rest = slice(s, pos, s.len());
            if !matches!(rest.first(), Some(b'.' | b',')) {
                continue;
            }
            let n = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
            if n == 0 {
                continue;
            }
            pos += 1 + n;
        }
    }
    if pos < s.len() {
        return None;
    }
    if comps[0] == 24 && comps[1..].iter().any(|&c| c != 0) {
        return None;
    }
    Some(comps)
}

/// `_parse_tzstr`: `Z`, or a sign and `hh`, `hhmm` or `hh:mm` (minutes at most 59, hours at
/// most 23, but `00:00` always).
fn tzstr(s: &[u8]) -> Option<()> {
    if s == b"Z" || s == b"z" {
        return Some(());
    }
    if ![3, 5, 6].contains(&s.len()) || !matches!(s[0], b'+' | b'-') {
        return None;
    }
    let hours = py_int(&s[1..3])?;
    let minutes = match s.len() {
        3 => 0,
        _ => py_int(if s[3] == b':' { &s[4..] } else { &s[3..] })?,
    };
    if hours == 0 && minutes == 0 {
        return Some(());
    }
    (minutes <= 59 && hours <= 23).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_repr() {
        assert_eq!(repr_str("a"), "'a'");
        assert_eq!(repr_str("it's"), "\"it's\"");
        assert_eq!(repr_list(&["a", "b"]), "['a', 'b']");
        assert_eq!(str_of(&serde_json::json!(1.0)), "1.0");
        assert_eq!(
            str_of(&serde_json::json!([true, null, {"a": 1}])),
            "[True, None, {'a': 1}]"
        );
    }

    #[test]
    fn semver_grammar() {
        assert_eq!(parse_semver("1.23", true), Some((1, 23, 0)));
        assert_eq!(parse_semver("1.23", false), None);
        assert_eq!(parse_semver("1.05.0", false), None);
        assert_eq!(parse_semver("1.2.3-rc.1+b", false), Some((1, 2, 3)));
        assert!(SemVer::parse("1.0.0-v2.0.0.final").unwrap() < SemVer::parse("1.0.0").unwrap());
        assert!(SemVer::parse("0.0.4-v1.3.2.final").unwrap() < SemVer::parse("1.0.0-a").unwrap());
    }

    #[test]
    fn npm_ranges() {
        let r = NpmRange::parse(">=1.0.0 <1.2.0").unwrap();
        assert!(r.contains(&SemVer::parse("1.1.9").unwrap()));
        assert!(!r.contains(&SemVer::parse("1.2.0").unwrap()));
        assert!(!r.contains(&SemVer::parse("1.1.0-rc.1").unwrap()));
        let r = NpmRange::parse("<1.2.0 || 3.x").unwrap();
        assert!(r.contains(&SemVer::parse("3.4.5").unwrap()));
        assert!(NpmRange::parse(">=one").is_none());
    }

    /// Verdicts of dateutil 2.9.0.post0's `isoparse` (the pipeline's), checked by running it.
    #[test]
    fn isoparse_as_dateutil_reads() {
        for ok in [
            "2023-06-07T08:55:00Z",
            "2023-06-07t08:55:00z",
            "2023-06-07 08:55:00",
            "2023-06-07T 8:55:00Z",
            "2023-06-07T08:55:00.123456789Z",
            "2023-06-07T08:55:00,5Z",
            "2023-06-07T08:55:00+0530",
            "2023-06-07T08:55:00+05",
            "2023-06",
            "2023",
            "20230607T085500Z",
            "2023-06-07T08",
            "2023-06-07T08:5",
            "2023-06-07T24:00:00",
            "2023-W5",
            "2023W053",
            "2024-366",
            "2023-06-07X08:55:00",
            "2023-+6-07",
            "2023-06- 7",
            "2023-06-07T08:55:00+05 30",
            "2023-06-07T08:55:00+-1",
            "2_23-06-07",
            "2023-06-07T085500.5",
        ] {
            assert!(isoparse(ok), "{ok}");
        }
        for bad in [
            "2023-9-26T00:00:00Z",
            "2023-06-07T8:55:00Z",
            "2023-06-07  08:55:00",
            "2023-06-07T08:55:00.Z",
            "2023-06-07T08:55:00 +05:30",
            "2023-06-07T08:55:00+5",
            "2023-06-07T08:55:00+24:00",
            "2023-6-07",
            "2023-06-07T24:00:01",
            "2023-366",
            " 2023-06-07",
            "2023-06-07 ",
            "0000-01-01",
            "2023-02-29",
            "2023-06-07T08:55:60",
            "2023-06-07T08:5500",
            "2023-06-07T08:55:00Zjunk",
            "2023-06-07T08.5",
            "9999-W52-7",
            "9999-12-31T24:00:00",
            "२०२३-06-07",
            "yesterday",
            "",
        ] {
            assert!(!isoparse(bad), "{bad}");
        }
    }

    /// A plain scalar in YAML 1.1's timestamp form is a `datetime` to PyYAML 6.0.3, whatever
    /// `isoparse` says of its text; quoted, the same text is `isoparse`'s.
    #[test]
    fn plain_timestamps_as_pyyaml_reads_them() {
        for (text, plain, quoted) in [
            ("2023-9-26T00:00:00Z", true, false),
            ("2023-06-07T8:55:00Z", true, false),
            ("2023-06-07T08:55:00.Z", true, false),
            ("2023-06-07T08:55:00 +05:30", true, false),
            ("2023-06-07 8:55:00 -5", true, false),
            ("2023-06-07T08:55:00Z", true, true),
            ("2023-06-07", true, true),
            // Not the timestamp form: a string either way.
            ("2023-6-07", false, false),
            ("2023-06-07T08:55:00,5Z", true, true),
            // The form, but PyYAML cannot build it: the CSV does not load.
            ("2023-02-29", false, false),
            ("2023-06-07T08:55:00+24:00", false, false),
            ("2023-06-07T24:00:00", false, true),
        ] {
            assert_eq!(is_timestamp(text, Written::Plain), plain, "plain {text}");
            assert_eq!(is_timestamp(text, Written::Str), quoted, "quoted {text}");
        }
        assert!(is_timestamp("2023-9-26T00:00:00Z", Written::Timestamp));
        assert!(!is_timestamp("2023-9-26", Written::Timestamp));
    }
}

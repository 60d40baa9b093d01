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

/// Whether dateutil's `isoparse` accepts the text (what `validate_timestamp` asks), or PyYAML
/// would have read the plain scalar as a timestamp already.
pub fn is_timestamp(text: &str) -> bool {
    yaml11_timestamp(text) || isoparse(text).is_some()
}

/// YAML 1.1's timestamp form (PyYAML reads such a `createdAt` as a datetime), with a real date
/// and time: PyYAML cannot construct `2021-13-01` and the pipeline never sees it as a timestamp.
fn yaml11_timestamp(text: &str) -> bool {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:(?:[Tt]|[ \t]+)([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?$",
        )
        .expect("valid regex")
    });
    let Some(c) = RE.captures(text) else {
        return false;
    };
    let num = |i: usize| c.get(i).map_or(Some(0), |m| m.as_str().parse::<u32>().ok());
    let (Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(sec)) =
        (num(1), num(2), num(3), num(4), num(5), num(6))
    else {
        return false;
    };
    // The date-only form has exactly two-digit month and day.
    if c.get(4).is_none() && (c[2].len() != 2 || c[3].len() != 2) {
        return false;
    }
    valid_date(y, mo, d).is_some() && h < 24 && mi < 60 && sec < 60
}

fn digits(s: &[u8], from: usize, n: usize) -> Option<u32> {
    let part = s.get(from..from + n)?;
    if !part.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(part).ok()?.parse().ok()
}

/// dateutil's `isoparse` (default separator: any one character between date and time);
/// `Some(())` when it parses to a valid datetime.
fn isoparse(text: &str) -> Option<()> {
    if !text.is_ascii() {
        return None;
    }
    let s = text.as_bytes();
    let (year, month, day, pos) = isodate(s)?;
    let mut time = (0u32, 0u32, 0u32);
    if s.len() > pos {
        time = isotime(&s[pos + 1..])?;
    }
    valid_date(year, month, day)?;
    if time.0 == 24 {
        return (time.1 == 0 && time.2 == 0).then_some(());
    }
    (time.0 < 24 && time.1 < 60 && time.2 < 60).then_some(())
}

fn valid_date(year: u32, month: u32, day: u32) -> Option<()> {
    if year == 0 || !(1..=12).contains(&month) || day == 0 {
        return None;
    }
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    let days = [
        31,
        if leap { 29 } else { 28 },
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
    (day <= days[month as usize - 1]).then_some(())
}

/// `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, `YYYYMMDD`, and the week and ordinal forms.
fn isodate(s: &[u8]) -> Option<(u32, u32, u32, usize)> {
    isodate_common(s).or_else(|| isodate_uncommon(s))
}

fn isodate_common(s: &[u8]) -> Option<(u32, u32, u32, usize)> {
    let year = digits(s, 0, 4)?;
    let mut pos = 4;
    if s.len() == pos {
        return Some((year, 1, 1, pos));
    }
    let has_sep = s[pos] == b'-';
    if has_sep {
        pos += 1;
    }
    let month = digits(s, pos, 2)?;
    pos += 2;
    if pos >= s.len() {
        return has_sep.then_some((year, month, 1, pos));
    }
    if has_sep {
        if s[pos] != b'-' {
            return None;
        }
        pos += 1;
    }
    let day = digits(s, pos, 2)?;
    Some((year, month, day, pos + 2))
}

fn isodate_uncommon(s: &[u8]) -> Option<(u32, u32, u32, usize)> {
    if s.len() < 4 {
        return None;
    }
    let year = digits(s, 0, 4)?;
    let has_sep = s.get(4) == Some(&b'-');
    let mut pos = 4 + usize::from(has_sep);
    if s.get(pos) == Some(&b'W') {
        pos += 1;
        let week = digits(s, pos, 2)?;
        pos += 2;
        let mut dow = 1;
        if s.len() > pos {
            if (s[pos] == b'-') != has_sep {
                return None;
            }
            pos += usize::from(has_sep);
            dow = digits(s, pos, 1)?;
            pos += 1;
        }
        if !(1..=53).contains(&week) || !(1..=7).contains(&dow) {
            return None;
        }
        // A valid week date; its calendar day is not needed to accept it.
        return Some((year, 1, 1, pos));
    }
    if s.len() - pos < 3 {
        return None;
    }
    let ordinal = digits(s, pos, 3)?;
    pos += 3;
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    if ordinal < 1 || ordinal > 365 + u32::from(leap) {
        return None;
    }
    Some((year, 1, 1, pos))
}

fn isotime(s: &[u8]) -> Option<(u32, u32, u32)> {
    if s.len() < 2 {
        return None;
    }
    let mut comps = [0u32; 3];
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
            let end = (pos + 2).min(s.len());
            let part = &s[pos..end];
            if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
                return None;
            }
            comps[comp as usize] = std::str::from_utf8(part).ok()?.parse().ok()?;
            pos = end;
        } else if comp == 3 && matches!(s.get(pos), Some(b'.' | b',')) {
            let n = s[pos + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if n > 0 {
                pos += 1 + n;
            }
        }
    }
    if pos < s.len() {
        return None;
    }
    Some((comps[0], comps[1], comps[2]))
}

fn tzstr(s: &[u8]) -> Option<()> {
    if s == b"Z" || s == b"z" {
        return Some(());
    }
    if ![3, 5, 6].contains(&s.len()) || !matches!(s[0], b'+' | b'-') {
        return None;
    }
    let hours = digits(s, 1, 2)?;
    let minutes = match s.len() {
        3 => 0,
        _ => {
            let from = if s[3] == b':' { 4 } else { 3 };
            let part = &s[from..];
            if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(part).ok()?.parse::<u32>().ok()?
        }
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

    #[test]
    fn timestamps() {
        for ok in [
            "2021-03-05T10:00:00Z",
            "2020-10-21 12:00:00",
            "2023-01-25T14:31:30.000Z",
            "2022-07-19",
            "2022-07",
            "2021-10-05T12:00:00+02:00",
            "20210101T1000",
        ] {
            assert!(is_timestamp(ok), "{ok}");
        }
        for bad in [
            "yesterday",
            "2021-13-01",
            "2021-02-30",
            "2021-01-01T25:00",
            "0.1.0",
            "",
        ] {
            assert!(!is_timestamp(bad), "{bad}");
        }
    }
}

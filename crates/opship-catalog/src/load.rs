//! Reading a catalog directory exactly as opm v1.26.5's `declcfg.LoadFS` does: every file
//! under the root, whatever its name (hidden files and directories, any extension, nested at
//! any depth), except files named `.indexignore` and the files their patterns exclude, is a
//! stream of YAML or JSON documents. Files are parsed in parallel and merged in path order, so
//! the result does not depend on scheduling. Nothing opm would read is skipped: a temporary
//! that an interrupted opship run left inside the catalog is an error, not something to pass
//! over, so `catalog verify` and `catalog build` judge the catalog opm serves.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use opship_core::input::{self, Kind};
use opship_core::yaml::{Origin, Pos};
use rayon::prelude::*;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::gojson;
use crate::model::{self, Catalog};

/// The name of ignore files.
pub const INDEX_IGNORE: &str = ".indexignore";

/// Loads every catalog file under `root`.
pub fn load_dir(root: &Path) -> Result<Catalog> {
    let meta = std::fs::metadata(root).map_err(|e| Error::io(root, e))?;
    if !meta.is_dir() {
        return Err(Error::Usage(format!(
            "{}: not a directory (a file-based catalog is a directory of YAML/JSON files)",
            opship_core::paths::show(root)
        )));
    }
    let files = catalog_files(root)?;
    let parsed: Vec<Result<Catalog>> = files.par_iter().map(|p| load_file(p)).collect();
    let mut cat = Catalog::default();
    for c in parsed {
        cat.merge(c?);
    }
    Ok(cat)
}

/// The files of a catalog directory that opm reads, in its walk (lexical) order: every file
/// but `.indexignore` files and what their patterns exclude. A temporary of an interrupted
/// opship run anywhere in the tree is an error ([`opship_core::fsutil::leftover_message`]).
pub fn catalog_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut patterns = Vec::new();
    walk(root, root, &[], &mut patterns, &mut found)?;
    let mut out = Vec::new();
    for (path, rel) in found {
        if excluded(&patterns, &rel) {
            continue;
        }
        if std::fs::symlink_metadata(&path)
            .map_err(|err| Error::io(&path, err))?
            .file_type()
            .is_symlink()
        {
            // Never read (or quote back) a file outside the catalog through a link.
            input::check_in_tree(root, &path)?;
            let meta = std::fs::metadata(&path).map_err(|err| Error::io(&path, err))?;
            if meta.is_dir() {
                // opm opens it as a file and fails; following it could loop for ever.
                return Err(Error::Usage(format!(
                    "{}: a symbolic link to a directory; catalogs are read without following \
                     those",
                    opship_core::paths::show(&path)
                )));
            }
        }
        // A FIFO would block the reader for ever, a device never end.
        input::check(&path, Kind::Catalog)?;
        out.push(path);
    }
    Ok(out)
}

/// Collects, in `fs.WalkDir` order, every entry that is not a directory (with its path
/// components relative to the root) and the patterns of every `.indexignore` file.
fn walk(
    root: &Path,
    dir: &Path,
    rel: &[String],
    patterns: &mut Vec<IgnorePattern>,
    found: &mut Vec<(PathBuf, Vec<String>)>,
) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        if opship_core::fsutil::is_temporary(e.file_name()) {
            return Err(Error::Usage(opship_core::fsutil::leftover_message(&path)));
        }
        let mut child = rel.to_vec();
        child.push(e.file_name().to_string_lossy().into_owned());
        // As `fs.WalkDir`: a link is an entry of its own, never a directory to descend into.
        let ft = e.file_type().map_err(|err| Error::io(&path, err))?;
        if ft.is_dir() {
            walk(root, &path, &child, patterns, found)?;
        } else if e.file_name() == INDEX_IGNORE {
            let text = input::read_string_in_tree(root, &path, Kind::Config)?;
            patterns.extend(IgnorePattern::parse_file(rel, &text));
        } else {
            found.push((path, child));
        }
    }
    Ok(())
}

/// Whether the file at `rel` is excluded: the last pattern (in walk order, later lines
/// last) that matches it decides, as go-git's gitignore matcher that opm uses.
fn excluded(patterns: &[IgnorePattern], rel: &[String]) -> bool {
    patterns
        .iter()
        .rev()
        .find(|p| p.matches(rel))
        .is_some_and(|p| !p.include)
}

/// One line of an `.indexignore` file, with the directory it applies under. The semantics are
/// go-git's `gitignore` package at the version opm v1.26.5 vendors, not git's own: a pattern
/// without `/` matches any component of the path below its directory (so a file under a
/// matching directory too); one with `/` matches components from the start (a leading `/` only
/// anchors, a match of the leading components covers what is below them); `**` spans
/// directories; a trailing `/` needs the match not to be the file itself; `!` re-includes,
/// and can re-include a file below an excluded directory (git cannot).
struct IgnorePattern {
    domain: Vec<String>,
    parts: Vec<String>,
    include: bool,
    dir_only: bool,
    /// Had a `/` (other than a trailing one): matched component by component from the start.
    anchored: bool,
}

impl IgnorePattern {
    /// The patterns of one file in directory `domain` (components relative to the root).
    fn parse_file(domain: &[String], text: &str) -> Vec<IgnorePattern> {
        text.split('\n')
            .filter_map(|line| {
                // Go's `bufio.Scanner` lines lose a trailing `\r`; opm trims all white space.
                let line = line.strip_suffix('\r').unwrap_or(line).trim();
                if line.is_empty() || line.starts_with('#') {
                    return None;
                }
                let (include, pat) = match line.strip_prefix('!') {
                    Some(rest) => (true, rest),
                    None => (false, line),
                };
                let (dir_only, pat) = match pat.strip_suffix('/') {
                    Some(rest) => (true, rest),
                    None => (false, pat),
                };
                Some(IgnorePattern {
                    domain: domain.to_vec(),
                    parts: pat.split('/').map(str::to_owned).collect(),
                    include,
                    dir_only,
                    anchored: pat.contains('/'),
                })
            })
            .collect()
    }

    /// Whether the pattern matches the file whose path components are `path`.
    fn matches(&self, path: &[String]) -> bool {
        if path.len() <= self.domain.len() || !path.starts_with(&self.domain) {
            return false;
        }
        let path = &path[self.domain.len()..];
        if self.anchored {
            self.matches_anchored(path)
        } else {
            self.matches_name(path)
        }
    }

    fn matches_name(&self, path: &[String]) -> bool {
        for (i, name) in path.iter().enumerate() {
            match go_match(&self.parts[0], name) {
                Err(BadPattern) => return false,
                Ok(false) => continue,
                // A directory-only pattern cannot match the file itself.
                Ok(true) => return !(self.dir_only && i == path.len() - 1),
            }
        }
        false
    }

    fn matches_anchored(&self, mut path: &[String]) -> bool {
        let mut matched = false;
        let mut spans = false;
        for (i, part) in self.parts.iter().enumerate() {
            if part.is_empty() {
                spans = false;
                continue;
            }
            if part == "**" {
                if i == self.parts.len() - 1 {
                    break;
                }
                spans = true;
                continue;
            }
            if part.contains("**") || path.is_empty() {
                return false;
            }
            if spans {
                spans = false;
                // The first component from here that matches; none at all is no match.
                matched = false;
                while let Some((name, rest)) = path.split_first() {
                    path = rest;
                    match go_match(part, name) {
                        Err(BadPattern) => return false,
                        Ok(true) => {
                            matched = true;
                            break;
                        }
                        Ok(false) => {}
                    }
                }
            } else {
                match go_match(part, &path[0]) {
                    Ok(true) => {
                        matched = true;
                        path = &path[1..];
                    }
                    _ => return false,
                }
            }
        }
        // The pattern named the file itself, which a directory-only pattern cannot.
        matched && !(self.dir_only && path.is_empty())
    }
}

/// A pattern Go's `filepath.Match` refuses (`ErrBadPattern`): it matches nothing.
#[derive(Debug, PartialEq)]
struct BadPattern;

/// One element of a `filepath.Match` pattern.
#[derive(Debug)]
enum Glob {
    Char(char),
    Any,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// Go's `filepath.Match` on Unix for one path component: `*` any run of characters, `?` one
/// character, `[…]`/`[^…]` a class of characters and ranges, `\` escapes the next character.
/// A malformed pattern is an error whatever the name, as Go reports it.
fn go_match(pattern: &str, name: &str) -> std::result::Result<bool, BadPattern> {
    let globs = parse_glob(pattern)?;
    let name: Vec<char> = name.chars().collect();
    // can[j]: the globs so far can consume exactly name[..j]. O(globs × name), whatever the
    // number of stars.
    let mut can = vec![false; name.len() + 1];
    can[0] = true;
    for g in &globs {
        let mut next = vec![false; name.len() + 1];
        match g {
            Glob::Star => {
                let mut reach = false;
                for j in 0..=name.len() {
                    reach = reach || can[j];
                    next[j] = reach;
                }
            }
            _ => {
                for j in 0..name.len() {
                    if can[j] && glob_char(g, name[j]) {
                        next[j + 1] = true;
                    }
                }
            }
        }
        can = next;
    }
    Ok(can[name.len()])
}

fn glob_char(g: &Glob, c: char) -> bool {
    match g {
        Glob::Char(x) => *x == c,
        Glob::Any => c != '/',
        Glob::Star => true,
        Glob::Class { negated, ranges } => {
            ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
        }
    }
}

fn parse_glob(pattern: &str) -> std::result::Result<Vec<Glob>, BadPattern> {
    let mut out = Vec::new();
    let mut chars = pattern.chars().peekable();
    // One character of a class: `\x` escapes; a bare `-` or `]` is malformed there.
    fn class_char(
        chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    ) -> std::result::Result<char, BadPattern> {
        match chars.next() {
            None | Some('-' | ']') => Err(BadPattern),
            Some('\\') => chars.next().ok_or(BadPattern),
            Some(c) => Ok(c),
        }
    }
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                if !matches!(out.last(), Some(Glob::Star)) {
                    out.push(Glob::Star);
                }
            }
            '?' => out.push(Glob::Any),
            '\\' => out.push(Glob::Char(chars.next().ok_or(BadPattern)?)),
            '[' => {
                let negated = chars.next_if_eq(&'^').is_some();
                let mut ranges = Vec::new();
                loop {
                    if !ranges.is_empty() && chars.next_if_eq(&']').is_some() {
                        break;
                    }
                    let lo = class_char(&mut chars)?;
                    let hi = if chars.next_if_eq(&'-').is_some() {
                        class_char(&mut chars)?
                    } else {
                        lo
                    };
                    ranges.push((lo, hi));
                }
                out.push(Glob::Class { negated, ranges });
            }
            c => out.push(Glob::Char(c)),
        }
    }
    Ok(out)
}

/// Loads one catalog file (a YAML or JSON stream).
pub fn load_file(path: &Path) -> Result<Catalog> {
    let bytes = input::read(path, Kind::Catalog)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::parse(
            opship_core::paths::show(path).to_string(),
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    load_text(&text, path)
}

/// Parses catalog text; `path` names it in errors.
pub fn load_text(text: &str, path: &Path) -> Result<Catalog> {
    let mut cat = Catalog::default();
    for (blob, origin, escaped) in raw_blobs(text, path)? {
        let bundles = cat.bundles.len();
        model::add_blob(&mut cat, blob, Some(origin))?;
        if escaped && cat.bundles.len() > bundles {
            // JSON written by opm keeps `\u003c` in the values it built itself; keep it too.
            for p in &mut cat.bundles.last_mut().expect("just added").properties {
                p.html_escaped = gojson::to_string(&p.value, gojson::MARSHAL)
                    != gojson::to_string(&p.value, gojson::COMPACT);
            }
        }
    }
    Ok(cat)
}

/// The documents of a YAML or JSON stream, as opm decodes them: a stream whose first
/// non-blank character is `{` is JSON (key order kept), anything else YAML (converted to JSON
/// with sorted keys, as `sigs.k8s.io/yaml` does).
pub fn blobs(text: &str, path: &Path) -> Result<Vec<(Value, Origin)>> {
    Ok(raw_blobs(text, path)?
        .into_iter()
        .map(|(v, o, _)| (v, o))
        .collect())
}

/// [`blobs`], with whether the blob's JSON text escapes `<`, `>` or `&` as Go does.
fn raw_blobs(text: &str, path: &Path) -> Result<Vec<(Value, Origin, bool)>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let file: Arc<Path> = Arc::from(path);
    if text.trim_start().starts_with('{') {
        let mut out = Vec::new();
        let mut lines = LineCounter::default();
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        loop {
            let start = stream.byte_offset();
            match stream.next() {
                None => break,
                Some(Ok(v)) => {
                    let skipped = text[start..].len() - text[start..].trim_start().len();
                    let raw = &text[start..stream.byte_offset()];
                    let escaped = ["\\u003c", "\\u003e", "\\u0026"]
                        .iter()
                        .any(|e| raw.contains(e));
                    out.push((v, lines.origin(&file, text, start + skipped), escaped));
                }
                Some(Err(e)) => {
                    return Err(Error::parse(
                        format!(
                            "{}:{}:{}",
                            opship_core::paths::show(path),
                            e.line(),
                            e.column()
                        ),
                        format!("invalid JSON: {e}"),
                    ));
                }
            }
        }
        Ok(out)
    } else {
        let docs = opship_core::yaml::parse_stream(text, path).map_err(|e| match e {
            // A syntax error is the file's content, which `catalog validate` reports as such.
            opship_core::Error::Yaml { origin, message } => {
                Error::parse(origin.to_string(), message)
            }
            other => other.into(),
        })?;
        Ok(docs
            .into_iter()
            .map(|d| {
                let origin = d.origin("");
                (gojson::sorted(&d.value), origin, false)
            })
            .collect())
    }
}

/// Line numbers of increasing offsets into one text, counted from the previous offset: the
/// documents of a stream are positioned in one pass over it, not one pass each (a
/// 50,000-bundle catalog).
#[derive(Default)]
struct LineCounter {
    offset: usize,
    line: usize,
}

impl LineCounter {
    fn origin(&mut self, file: &Arc<Path>, text: &str, offset: usize) -> Origin {
        let offset = offset.min(text.len());
        if offset < self.offset {
            *self = Self::default();
        }
        self.line += memchr::memchr_iter(b'\n', &text.as_bytes()[self.offset..offset]).count();
        self.offset = offset;
        let line_start = memchr::memrchr(b'\n', &text.as_bytes()[..offset]).map_or(0, |i| i + 1);
        Origin {
            file: file.clone(),
            pos: Pos {
                line: u32::try_from(self.line + 1).unwrap_or(u32::MAX),
                col: u32::try_from(offset - line_start + 1).unwrap_or(u32::MAX),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linked_directories_are_refused_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("pkg/loop")).unwrap();
        let err = load_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("symbolic link to a directory"), "{err}");
        // An excluded one is never opened, by opm or here.
        std::fs::write(dir.path().join(".indexignore"), "loop\n").unwrap();
        load_dir(dir.path()).unwrap();
    }

    #[test]
    fn documents_of_a_json_stream_keep_their_line_and_column() {
        let text = "{\"a\": 1}\n\n  {\"b\":\n 2} {\"c\": 3}\n{\"d\": \"x\\ny\"}\n";
        let pos: Vec<(u32, u32)> = blobs(text, Path::new("c.json"))
            .unwrap()
            .iter()
            .map(|(_, o)| (o.pos.line, o.pos.col))
            .collect();
        assert_eq!(pos, [(1, 1), (3, 3), (4, 5), (5, 1)]);
    }

    fn ignores(files: &[(&[&str], &str)]) -> Vec<IgnorePattern> {
        files
            .iter()
            .flat_map(|(dir, text)| {
                let dir: Vec<String> = dir.iter().map(|s| (*s).to_owned()).collect();
                IgnorePattern::parse_file(&dir, text)
            })
            .collect()
    }

    fn is_excluded(patterns: &[IgnorePattern], path: &str) -> bool {
        let rel: Vec<String> = path.split('/').map(str::to_owned).collect();
        excluded(patterns, &rel)
    }

    #[test]
    fn ignore_patterns_as_go_git_reads_them() {
        let p = ignores(&[(
            &[],
            "# c\n  *.md  \n/build/\nsub/**/x.json\n!keep.md\nlogs\r\n[a-c]?.txt\n[^x]z\n\\#h\n",
        )]);
        for (path, want) in [
            ("README.md", true),
            ("a/b/README.md", true),
            // A name pattern matches a directory component too.
            ("notes.md/catalog.yaml", true),
            ("keep.md", false),
            ("build/catalog.yaml", true),
            ("build", false),
            ("a/build/catalog.yaml", false),
            ("sub/x.json", true),
            ("sub/q/r/x.json", true),
            ("sub/q/r/y.json", false),
            ("logs", true),
            ("a/logs/l.yaml", true),
            ("b1.txt", true),
            ("d1.txt", false),
            ("az", true),
            ("xz", false),
            ("#h", true),
            ("catalog.yaml", false),
        ] {
            assert_eq!(is_excluded(&p, path), want, "{path}");
        }
    }

    #[test]
    fn a_deeper_or_later_pattern_wins_and_may_re_include() {
        // go-git keeps every file's patterns in one list, walk order; the last match wins,
        // so a package's `!x.yaml` re-includes what the root's `*.yaml` excluded.
        let p = ignores(&[(&[], "*.yaml\nold/\n"), (&["pkg"], "!x.yaml\n")]);
        assert!(is_excluded(&p, "pkg/y.yaml"));
        assert!(!is_excluded(&p, "pkg/x.yaml"));
        assert!(is_excluded(&p, "other/x.yaml"));
        let p = ignores(&[(&[], "old/\n!old/keep.json\n")]);
        assert!(is_excluded(&p, "old/a.json"));
        assert!(!is_excluded(&p, "old/keep.json"));
        // A pattern of `pkg/.indexignore` never reaches outside `pkg/`, nor `pkg` itself.
        let p = ignores(&[(&["pkg"], "*\n")]);
        assert!(is_excluded(&p, "pkg/a.yaml") && !is_excluded(&p, "a.yaml"));
    }

    #[test]
    fn malformed_patterns_match_nothing() {
        for bad in ["[", "[]", "[a-", "x\\", "[^]", "[]a]"] {
            assert_eq!(go_match(bad, "a"), Err(BadPattern), "{bad}");
            assert!(!is_excluded(&ignores(&[(&[], bad)]), "a"), "{bad}");
        }
        assert_eq!(go_match("*a*a*a*a*a*a*b", &"a".repeat(200)), Ok(false));
        assert_eq!(go_match("\\*", "*"), Ok(true));
        assert_eq!(go_match("[\\]]", "]"), Ok(true));
        assert_eq!(go_match("[!a]", "!"), Ok(true));
        // A reversed range is well-formed in Go; it matches nothing.
        assert_eq!(go_match("[z-a]", "m"), Ok(false));
    }
}

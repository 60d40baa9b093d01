//! Reading a catalog directory: every file under the root (minus what `.indexignore` files
//! exclude, gitignore syntax) is a stream of YAML or JSON documents; files are parsed in
//! parallel and merged in path order, so the result does not depend on scheduling.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use opship_core::input::{self, Kind};
use opship_core::yaml::{Origin, Pos};
use rayon::prelude::*;
use regex::Regex;
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
            root.display()
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

/// The files of a catalog directory, in walk (lexical) order, without ignored ones.
pub fn catalog_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut ignores: Vec<IgnoreFile> = Vec::new();
    walk(root, root, &mut ignores, &mut out)?;
    Ok(out)
}

fn walk(
    root: &Path,
    dir: &Path,
    ignores: &mut Vec<IgnoreFile>,
    out: &mut Vec<PathBuf>,
) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    let pushed = if entries.iter().any(|e| e.file_name() == INDEX_IGNORE) {
        let path = dir.join(INDEX_IGNORE);
        let text = input::read_string_in_tree(root, &path, Kind::Config)?;
        ignores.push(IgnoreFile::parse(
            dir.strip_prefix(root).unwrap_or(dir),
            &text,
        ));
        true
    } else {
        false
    };
    for e in entries {
        let path = e.path();
        // A killed `opship catalog add` leaves its temporary copy of the package's file; it is
        // not catalog content (the next `add` removes it).
        if opship_core::output::is_leftover(&e.file_name().to_string_lossy()) {
            tracing::debug!("skipping {}, left by an interrupted run", path.display());
            continue;
        }
        let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        let link = std::fs::symlink_metadata(&path)
            .map_err(|err| Error::io(&path, err))?
            .file_type()
            .is_symlink();
        if link {
            // Never read (or quote back) a file outside the catalog through a link.
            input::check_in_tree(root, &path)?;
        }
        let ft = std::fs::metadata(&path).map_err(|err| Error::io(&path, err))?;
        if ft.is_dir() && link {
            // opm's fs.WalkDir does not descend into linked directories either; following
            // them could loop forever.
            return Err(Error::Usage(format!(
                "{}: a symbolic link to a directory; catalogs are read without following those",
                path.display()
            )));
        }
        if ft.is_dir() {
            if ignored(ignores, &rel, true) {
                continue;
            }
            walk(root, &path, ignores, out)?;
        } else if e.file_name() != INDEX_IGNORE && !ignored(ignores, &rel, false) {
            // A FIFO would block the reader for ever, a device never end.
            input::check(&path, Kind::Catalog)?;
            out.push(path);
        }
    }
    if pushed {
        ignores.pop();
    }
    Ok(())
}

fn ignored(ignores: &[IgnoreFile], rel: &Path, is_dir: bool) -> bool {
    ignores.iter().any(|i| i.matches(rel, is_dir))
}

/// One `.indexignore` file: gitignore patterns relative to its directory.
struct IgnoreFile {
    dir: PathBuf,
    patterns: Vec<IgnorePattern>,
}

struct IgnorePattern {
    negate: bool,
    dir_only: bool,
    /// Matched against the whole relative path (pattern had a slash) or the last component.
    anchored: bool,
    re: Regex,
}

impl IgnoreFile {
    fn parse(dir: &Path, text: &str) -> Self {
        let patterns = text
            .lines()
            .filter_map(|line| {
                let line = line.trim_end();
                if line.is_empty() || line.starts_with('#') {
                    return None;
                }
                let (negate, mut pat) = match line.strip_prefix('!') {
                    Some(rest) => (true, rest),
                    None => (false, line.strip_prefix('\\').unwrap_or(line)),
                };
                let dir_only = pat.ends_with('/');
                pat = pat.trim_end_matches('/');
                let anchored = pat.contains('/');
                let pat = pat.trim_start_matches('/');
                Regex::new(&format!("^{}$", glob_regex(pat)))
                    .ok()
                    .map(|re| IgnorePattern {
                        negate,
                        dir_only,
                        anchored,
                        re,
                    })
            })
            .collect();
        IgnoreFile {
            dir: dir.to_path_buf(),
            patterns,
        }
    }

    /// Whether `rel` (relative to the catalog root) or one of its parent directories is
    /// ignored by this file.
    fn matches(&self, rel: &Path, is_dir: bool) -> bool {
        let Ok(inner) = rel.strip_prefix(&self.dir) else {
            return false;
        };
        let parts: Vec<String> = inner
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        for n in 1..=parts.len() {
            let sub = parts[..n].join("/");
            let sub_is_dir = n < parts.len() || is_dir;
            let mut verdict = false;
            for p in &self.patterns {
                if p.dir_only && !sub_is_dir {
                    continue;
                }
                let target = if p.anchored {
                    sub.as_str()
                } else {
                    &parts[n - 1]
                };
                if p.re.is_match(target) {
                    verdict = !p.negate;
                }
            }
            if verdict {
                return true;
            }
        }
        false
    }
}

fn glob_regex(pat: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = pat.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                if chars.get(i + 2) == Some(&'/') {
                    out.push_str("(?:.*/)?");
                    i += 3;
                } else {
                    out.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            '[' => {
                if let Some(end) = chars[i + 1..].iter().position(|c| *c == ']') {
                    let class: String = chars[i + 1..i + 1 + end].iter().collect();
                    let class = class
                        .strip_prefix('!')
                        .map_or(class.clone(), |c| format!("^{c}"));
                    out.push('[');
                    out.push_str(&class.replace('\\', "\\\\"));
                    out.push(']');
                    i += end + 2;
                    continue;
                }
                out.push_str("\\[");
            }
            '\\' if i + 1 < chars.len() => {
                out.push_str(&regex::escape(&chars[i + 1].to_string()));
                i += 2;
                continue;
            }
            c => out.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    out
}

/// Loads one catalog file (a YAML or JSON stream).
pub fn load_file(path: &Path) -> Result<Catalog> {
    let bytes = input::read(path, Kind::Catalog)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::parse(
            path.display().to_string(),
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
                        format!("{}:{}:{}", path.display(), e.line(), e.column()),
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

    #[test]
    fn ignore_patterns() {
        let f = IgnoreFile::parse(
            Path::new(""),
            "# c\n*.md\n/build/\nsub/**/x.json\n!keep.md\n",
        );
        assert!(f.matches(Path::new("README.md"), false));
        assert!(f.matches(Path::new("a/b/README.md"), false));
        assert!(!f.matches(Path::new("keep.md"), false));
        assert!(f.matches(Path::new("build/catalog.yaml"), false));
        assert!(!f.matches(Path::new("a/build"), false));
        assert!(f.matches(Path::new("sub/x.json"), false));
        assert!(f.matches(Path::new("sub/q/r/x.json"), false));
        assert!(!f.matches(Path::new("catalog.yaml"), false));
    }
}

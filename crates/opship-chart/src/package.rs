//! Packaging a chart directory into `<name>-<version>.tgz`, byte for byte the same on every
//! run and machine: the layout `helm package` writes (one `<name>/` top directory, no
//! directory entries, `Chart.yaml` first, then `values.yaml`, `values.schema.json`,
//! `templates/`, then the other files, each group sorted), mode 0644, uid/gid 0, no user
//! names, every mtime `SOURCE_DATE_EPOCH` (or 0), and Helm's gzip header (mtime 0, its extra
//! field and the comment `Helm`). The bytes depend on the file contents only, never on file
//! times, so a fresh git checkout packages to the same digest.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flate2::{Compression, GzBuilder};
use opship_core::input::Kind;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::render::Files;

/// The gzip extra field `helm package` writes (`headerBytes` in Helm's `chartutil/save.go`).
const HELM_GZIP_EXTRA: &[u8] = b"+aHR0cHM6Ly95b3V0dS5iZS96OVV6MWljandyTQo=";

/// Helm v4's chart loader (`pkg/chart/loader/archive`, used for archives and, file by file,
/// for chart directories) refuses a chart file larger than this: `MaxDecompressedFileSize`,
/// 5 MiB. opship refuses to render, package or push such a chart rather than make one Helm
/// cannot load.
pub const HELM_MAX_FILE_BYTES: u64 = 5 * 1024 * 1024;
/// The loader's limit for all files of a chart together: `MaxDecompressedChartSize`, 100 MiB.
pub const HELM_MAX_CHART_BYTES: u64 = 100 * 1024 * 1024;
/// At most this many files in a chart.
const MAX_FILES: usize = 10_000;

/// Why Helm would refuse a chart file of `size` bytes at `rel` (`what`: the bundle object it
/// is rendered from, if any); `None` when Helm loads it.
pub fn file_over_helm_limit(rel: &str, size: u64, what: Option<&str>) -> Option<String> {
    (size > HELM_MAX_FILE_BYTES).then(|| {
        format!(
            "chart file {rel}{} is {size} bytes; Helm loads no chart file over {HELM_MAX_FILE_BYTES} bytes \
             (5 MiB, MaxDecompressedFileSize of its chart loader), so the chart could not be installed",
            what.map(|w| format!(" ({w})")).unwrap_or_default()
        )
    })
}

/// Why Helm would refuse a chart whose files hold `total` bytes; `None` when it loads it.
pub fn chart_over_helm_limit(total: u64) -> Option<String> {
    (total > HELM_MAX_CHART_BYTES).then(|| {
        format!(
            "the chart's files hold {total} bytes; Helm loads no chart over {HELM_MAX_CHART_BYTES} bytes \
             (100 MiB, MaxDecompressedChartSize of its chart loader)"
        )
    })
}

/// Checks rendered chart files against Helm's loader limits; `what` names the bundle object
/// a file comes from. Errors are about `origin` (the bundle or chart directory).
pub fn check_helm_limits(
    files: &Files,
    origin: &Path,
    what: impl Fn(&str) -> Option<String>,
) -> Result<()> {
    let mut total = 0u64;
    for (rel, bytes) in files {
        let size = bytes.len() as u64;
        if let Some(m) = file_over_helm_limit(rel, size, what(rel).as_deref()) {
            return Err(Error::invalid(origin, m));
        }
        total += size;
    }
    match chart_over_helm_limit(total) {
        Some(m) => Err(Error::invalid(origin, m)),
        None => Ok(()),
    }
}

/// A packaged chart.
#[derive(Debug, Clone)]
pub struct Package {
    /// Chart name.
    pub name: String,
    /// Chart version.
    pub version: String,
    /// The `.tgz` bytes.
    pub bytes: Vec<u8>,
}

impl Package {
    /// `<name>-<version>.tgz`.
    pub fn file_name(&self) -> String {
        format!("{}-{}.tgz", self.name, self.version)
    }

    /// `sha256:<hex>` of the archive: the index digest (without the prefix) and the OCI layer
    /// digest.
    pub fn digest(&self) -> String {
        sha256(&self.bytes)
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    opship_core::image::oci::Digest::of(bytes).to_string()
}

/// The parsed `Chart.yaml` of a chart directory or archive, with name and version checked.
pub fn chart_metadata(text: &str, path: &Path) -> Result<Value> {
    let doc = opship_core::yaml::parse_one(text, path)?;
    let v = doc.value;
    for key in ["name", "version"] {
        if v[key].as_str().is_none_or(str::is_empty) {
            return Err(Error::invalid(path, format!("`{key}` is missing")));
        }
    }
    // Both make the archive's file name `<name>-<version>.tgz`.
    for key in ["name", "version"] {
        let value = v[key].as_str().unwrap_or_default();
        if value.contains(['/', '\\']) || value.starts_with('.') {
            return Err(Error::invalid(
                path,
                format!("chart {key} `{value}` is not a file name"),
            ));
        }
    }
    Ok(v)
}

/// Files of the chart directory that `.helmignore` does not exclude. Supported patterns: a
/// file or directory name (`foo`, `dir/`), `*` wildcards in one path component (`*.tgz`,
/// `.*`), `!` is not; blank lines and `#` comments are skipped. Symlinks are refused.
pub fn read_dir(dir: &Path) -> Result<Files> {
    let ignore_file = dir.join(".helmignore");
    let ignore = if std::fs::symlink_metadata(&ignore_file).is_ok() {
        opship_core::input::read_string_in_tree(dir, &ignore_file, Kind::Config)?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_owned)
            .collect()
    } else {
        Vec::new()
    };
    let mut files = Files::new();
    walk(dir, dir, &ignore, &mut files)?;
    if !files.contains_key("Chart.yaml") {
        return Err(Error::invalid(dir, "not a chart: Chart.yaml is missing"));
    }
    check_helm_limits(&files, dir, |_| None)?;
    Ok(files)
}

fn glob_match(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((pre, post)) => {
            name.len() >= pre.len() + post.len()
                && name.starts_with(pre)
                && glob_match_rest(post, &name[pre.len()..])
        }
    }
}

fn glob_match_rest(pattern: &str, name: &str) -> bool {
    if !pattern.contains('*') {
        return name.ends_with(pattern);
    }
    (0..=name.len()).any(|i| name.is_char_boundary(i) && glob_match(pattern, &name[i..]))
}

fn ignored(ignore: &[String], rel: &str, is_dir: bool) -> bool {
    let base = rel.rsplit('/').next().unwrap_or(rel);
    ignore.iter().any(|p| {
        let (p, dir_only) = match p.strip_suffix('/') {
            Some(p) => (p, true),
            None => (p.as_str(), false),
        };
        if dir_only && !is_dir {
            return false;
        }
        if p.contains('/') {
            glob_match(p.trim_start_matches('/'), rel)
        } else {
            glob_match(p, base)
        }
    })
}

fn walk(root: &Path, dir: &Path, ignore: &[String], files: &mut Files) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let ft = e.file_type().map_err(|err| Error::io(&path, err))?;
        let rel = path
            .strip_prefix(root)
            .map_err(|_| Error::invalid(&path, "outside the chart"))?
            .to_string_lossy()
            .replace('\\', "/");
        if ft.is_symlink() {
            return Err(Error::invalid(
                &path,
                "symbolic links are not packaged (copy the file into the chart)",
            ));
        }
        if ignored(ignore, &rel, ft.is_dir()) {
            continue;
        }
        if ft.is_dir() {
            walk(root, &path, ignore, files)?;
            continue;
        }
        if !ft.is_file() {
            // Helm refuses irregular files too; opening a FIFO would block.
            return Err(Error::invalid(
                &path,
                "is not a regular file (a FIFO, socket or device); a chart holds regular files only",
            ));
        }
        let meta = e.metadata().map_err(|err| Error::io(&path, err))?;
        if let Some(m) = file_over_helm_limit(&rel, meta.len(), None) {
            return Err(Error::invalid(root, m));
        }
        if files.len() >= MAX_FILES {
            return Err(Error::invalid(root, "more than 10000 files"));
        }
        let bytes = opship_core::input::read(&path, Kind::Blob)?;
        files.insert(rel, bytes);
    }
    Ok(())
}

/// Helm's order of entries: Chart.yaml, values.yaml, values.schema.json, templates/, the rest.
fn rank(path: &str) -> u8 {
    match path {
        "Chart.yaml" => 0,
        "values.yaml" => 1,
        "values.schema.json" => 2,
        p if p.starts_with("templates/") => 3,
        _ => 4,
    }
}

/// Packages chart files (as rendered, or as read by [`read_dir`]). `mtime` is written into
/// every entry (seconds since the epoch: `SOURCE_DATE_EPOCH`, or 0).
pub fn package(files: &Files, mtime: u64, origin: &Path) -> Result<Package> {
    let chart_yaml = files
        .get("Chart.yaml")
        .ok_or_else(|| Error::invalid(origin, "not a chart: Chart.yaml is missing"))?;
    let text = std::str::from_utf8(chart_yaml)
        .map_err(|_| Error::invalid(origin.join("Chart.yaml"), "not UTF-8"))?;
    let meta = chart_metadata(text, &origin.join("Chart.yaml"))?;
    let name = meta["name"].as_str().unwrap_or_default().to_owned();
    let version = meta["version"].as_str().unwrap_or_default().to_owned();
    let mut paths: Vec<&String> = files.keys().collect();
    paths.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    let mut tar = tar::Builder::new(Vec::new());
    tar.mode(tar::HeaderMode::Deterministic);
    for p in paths {
        let data = &files[p];
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(mtime);
        h.set_entry_type(tar::EntryType::Regular);
        let full = format!("{name}/{p}");
        tar.append_data(&mut h, &full, data.as_slice())
            .map_err(|e| Error::io(origin.join(p), e))?;
    }
    let tar_bytes = tar
        .into_inner()
        .map_err(|e| Error::io(origin.to_path_buf(), e))?;
    let mut gz = GzBuilder::new()
        .mtime(0)
        .extra(HELM_GZIP_EXTRA)
        .comment("Helm")
        .write(Vec::new(), Compression::default());
    gz.write_all(&tar_bytes)
        .map_err(|e| Error::io(origin.to_path_buf(), e))?;
    let bytes = gz
        .finish()
        .map_err(|e| Error::io(origin.to_path_buf(), e))?;
    Ok(Package {
        name,
        version,
        bytes,
    })
}

/// Reads the files of a chart archive, without the `<name>/` prefix, within Helm's loader
/// limits (5 MiB unpacked per file, 100 MiB in all). Entries outside one top directory, links
/// and other non-regular entries are refused.
pub fn unpack(bytes: &[u8], origin: &Path) -> Result<Files> {
    let gz = flate2::read::GzDecoder::new(bytes);
    let mut archive = tar::Archive::new(gz);
    let mut files = Files::new();
    let mut top: Option<String> = None;
    let mut total = 0u64;
    let bad = |m: String| Error::invalid(origin, m);
    for entry in archive
        .entries()
        .map_err(|e| bad(format!("not a chart archive: {e}")))?
    {
        let mut entry = entry.map_err(|e| bad(format!("not a chart archive: {e}")))?;
        let path: PathBuf = entry
            .path()
            .map_err(|e| bad(format!("bad entry name: {e}")))?
            .into_owned();
        let ty = entry.header().entry_type();
        if ty.is_dir() {
            continue;
        }
        if !ty.is_file() {
            return Err(bad(format!(
                "{}: not a regular file",
                opship_core::paths::show(&path)
            )));
        }
        let text = path.to_string_lossy().replace('\\', "/");
        let Some((first, rest)) = text.split_once('/') else {
            return Err(bad(format!("{text}: outside the chart's top directory")));
        };
        if rest.split('/').any(|c| c == ".." || c.is_empty()) || first == ".." {
            return Err(bad(format!("{text}: not a plain relative path")));
        }
        match &top {
            Some(t) if t != first => {
                return Err(bad(format!("{text}: a second top directory")));
            }
            None => top = Some(first.to_owned()),
            _ => {}
        }
        let size = entry.header().size().unwrap_or(u64::MAX);
        total = total.saturating_add(size);
        if let Some(m) =
            file_over_helm_limit(rest, size, None).or_else(|| chart_over_helm_limit(total))
        {
            return Err(bad(m));
        }
        let mut data = Vec::with_capacity(size as usize);
        entry
            .by_ref()
            .take(HELM_MAX_FILE_BYTES + 1)
            .read_to_end(&mut data)
            .map_err(|e| bad(format!("{text}: {e}")))?;
        if let Some(m) = file_over_helm_limit(rest, data.len() as u64, None) {
            return Err(bad(m));
        }
        files.insert(rest.to_owned(), data);
    }
    if !files.contains_key("Chart.yaml") {
        return Err(bad("not a chart archive: no Chart.yaml".into()));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Entries<'a> = &'a [(&'a str, &'a [u8])];

    fn raw_tgz(entries: Entries<'_>) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut h = tar::Header::new_old();
            h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        let tar = b.into_inner().unwrap();
        let mut gz = GzBuilder::new().write(Vec::new(), Compression::default());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn hostile_archives_are_refused() {
        let ok = b"apiVersion: v2\nname: x\nversion: 1.0.0\n";
        let cases: &[(Entries<'_>, &str)] = &[
            (
                &[("x/Chart.yaml", ok), ("x/../../etc/passwd", b"a")],
                "plain relative",
            ),
            (
                &[("x/Chart.yaml", ok), ("y/other", b"a")],
                "second top directory",
            ),
            (&[("Chart.yaml", ok)], "top directory"),
            (&[("x/values.yaml", b"a: 1")], "no Chart.yaml"),
        ];
        for (entries, want) in cases {
            let err = unpack(&raw_tgz(entries), Path::new("h.tgz"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{want}: {err}");
        }
        assert!(unpack(b"not gzip", Path::new("h.tgz")).is_err());
        // Helm's loader limit: 5 MiB loads, one byte more does not.
        let limit = vec![b'a'; HELM_MAX_FILE_BYTES as usize];
        let over = vec![b'a'; HELM_MAX_FILE_BYTES as usize + 1];
        assert!(
            unpack(
                &raw_tgz(&[("x/Chart.yaml", ok), ("x/big", &limit)]),
                Path::new("h.tgz")
            )
            .is_ok()
        );
        let err = unpack(
            &raw_tgz(&[("x/Chart.yaml", ok), ("x/big", &over)]),
            Path::new("h.tgz"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("chart file big is 5242881 bytes"), "{err}");
        let traversal = b"apiVersion: v2\nname: x\nversion: ../../1.0.0\n";
        let err = chart_metadata(
            std::str::from_utf8(traversal).unwrap(),
            Path::new("Chart.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("not a file name"), "{err}");
        assert!(unpack(&raw_tgz(&[("x/Chart.yaml", ok)]), Path::new("h.tgz")).is_ok());
    }

    #[test]
    fn helmignore_patterns() {
        let ig = vec!["*.tgz".to_owned(), ".git/".to_owned(), "secret".to_owned()];
        assert!(ignored(&ig, "charts/a.tgz", false));
        assert!(ignored(&ig, ".git", true));
        assert!(!ignored(&ig, ".git", false));
        assert!(ignored(&ig, "x/secret", false));
        assert!(!ignored(&ig, "values.yaml", false));
    }

    #[test]
    fn archive_is_reproducible_and_round_trips() {
        let mut files = Files::new();
        files.insert(
            "Chart.yaml".into(),
            b"apiVersion: v2\nname: demo\nversion: 0.1.0\n".to_vec(),
        );
        files.insert("templates/a.yaml".into(), b"a: 1\n".to_vec());
        files.insert(format!("crds/{}.yaml", "x".repeat(120)), b"b: 2\n".to_vec());
        let a = package(&files, 0, Path::new("demo")).unwrap();
        let b = package(&files, 0, Path::new("demo")).unwrap();
        assert_eq!(a.bytes, b.bytes);
        assert_eq!(a.file_name(), "demo-0.1.0.tgz");
        // Helm's gzip header: FEXTRA|FCOMMENT, mtime 0.
        assert_eq!(&a.bytes[..8], &[0x1f, 0x8b, 8, 0x14, 0, 0, 0, 0]);
        assert_eq!(unpack(&a.bytes, Path::new("demo.tgz")).unwrap(), files);
        let c = package(&files, 1_700_000_000, Path::new("demo")).unwrap();
        assert_ne!(a.bytes, c.bytes);
    }
}

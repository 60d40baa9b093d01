//! A bundle on disk: file names as operator-sdk gives them, the atomic swap of a whole bundle
//! directory, and the drift check that compares a generated bundle with a committed one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{Error, Result};
use crate::manifest::Object;

/// `manifests/` file name of an object, without the `dup<N>_` prefix for repeats.
pub(crate) fn file_name(o: &Object, package: &str) -> String {
    match o.kind() {
        "ClusterServiceVersion" => format!("{}.clusterserviceversion.yaml", package.to_lowercase()),
        "CustomResourceDefinition" => {
            let v = o.value();
            let group = v["spec"]["group"].as_str().unwrap_or_default();
            let plural = v["spec"]["names"]["plural"].as_str().unwrap_or_default();
            if group.is_empty() || plural.is_empty() {
                format!("{}.yaml", o.name())
            } else {
                format!("{group}_{plural}.yaml")
            }
        }
        kind => {
            let kind = kind.to_lowercase();
            if o.group().is_empty() {
                format!("{}_{}_{kind}.yaml", o.name(), o.version())
            } else {
                format!("{}_{}_{}_{kind}.yaml", o.name(), o.group(), o.version())
            }
        }
    }
}

/// Object names become file names; refuse the ones that would escape `manifests/`.
pub(crate) fn check_name(o: &Object) -> Result<()> {
    let n = o.name();
    if n.is_empty() {
        return Err(o.error("/metadata", "has no metadata.name"));
    }
    if n.contains('/') || n.contains('\\') || n.contains('\0') || n.starts_with('.') {
        return Err(o.error(
            "/metadata/name",
            format!("name `{n}` is not a valid Kubernetes object name"),
        ));
    }
    Ok(())
}

/// Files of a generated bundle, keyed by path relative to the bundle directory.
pub type Files = BTreeMap<String, Vec<u8>>;

/// The most files a bundle may hold; `opship validate` refuses to read more (and OLM's
/// unpacker would choke on them long before).
pub const MAX_FILES: usize = 10_000;
/// The most bytes all files of a bundle may hold together (the validator reads no more).
pub const MAX_TOTAL_BYTES: u64 = 256 * 1024 * 1024;

/// What a bundle directory holds when opship (or operator-sdk) generated it, or a team keeps
/// beside it (see [`is_kept`]): an existing directory with anything else (a subdirectory opship
/// does not write) is not replaced without `--force`.
pub const TARGET: crate::output::Target = crate::output::Target {
    what: "bundle",
    generated: |rel| {
        rel == "bundle.Dockerfile"
            || ["manifests/", "metadata/", "tests/"]
                .iter()
                .any(|d| rel.starts_with(d))
            || is_kept(rel)
    },
};

/// A file a team keeps at the top of its bundle directory beside what operator-sdk writes
/// (`art.yaml`, a `*.package.yaml`, `image-references`): operator-sdk writes only
/// `manifests/`, `metadata/`, `tests/scorecard/` and `bundle.Dockerfile` and leaves the rest,
/// so opship carries such files over into the new bundle unchanged, even with `--force`.
pub fn is_kept(rel: &str) -> bool {
    !rel.is_empty()
        && !rel.contains('/')
        && rel != "bundle.Dockerfile"
        && !crate::fsutil::is_temporary(rel)
}

/// Writes a generated bundle as the whole content of `dir`, atomically (see
/// [`crate::output::replace_dir`]), after checking it stays within what the validator reads.
/// The files of `dir` that [`is_kept`] names are written back as they are.
pub fn write_dir(files: &Files, dir: &Path, overwrite: crate::output::Overwrite) -> Result<()> {
    let kept = kept_files(dir, files, overwrite)?;
    if kept.is_empty() {
        check_size(files)?;
        return crate::output::replace_dir(dir, files, TARGET, overwrite);
    }
    let mut all = files.clone();
    all.extend(kept);
    check_size(&all)?;
    crate::output::replace_dir(dir, &all, TARGET, overwrite)
}

/// The regular files at the top of an existing bundle directory that [`is_kept`] names and the
/// generated bundle does not have. A symlink there is refused without `--force` (it would not
/// be followed, nor kept).
fn kept_files(dir: &Path, files: &Files, overwrite: crate::output::Overwrite) -> Result<Files> {
    let mut kept = Files::new();
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        _ => return Ok(kept),
    }
    let mut total: u64 = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if kind.is_symlink() && is_kept(&name) && overwrite == crate::output::Overwrite::Refuse {
            return Err(Error::Input(format!(
                "{}: is a symlink beside the bundle; opship keeps only regular files there (use --force to remove it); nothing written",
                crate::paths::show(&path)
            )));
        }
        if !kind.is_file() || !is_kept(&name) || files.contains_key(&name) {
            continue;
        }
        let bytes = crate::input::read(&path, crate::input::Kind::Manifest)?;
        total += bytes.len() as u64;
        if total > MAX_TOTAL_BYTES {
            return Err(Error::Input(format!(
                "{}: the files kept beside the bundle hold more than {MAX_TOTAL_BYTES} bytes; nothing written",
                crate::paths::show(dir)
            )));
        }
        kept.insert(name, bytes);
    }
    Ok(kept)
}

/// Refuses a bundle larger than [`MAX_FILES`] files or [`MAX_TOTAL_BYTES`] bytes: written, it
/// would be one that `opship validate` (and OLM) refuse.
pub fn check_size(files: &Files) -> Result<()> {
    if files.len() > MAX_FILES {
        return Err(Error::Input(format!(
            "the bundle would hold {} files, more than the {MAX_FILES} a bundle may have; nothing written (are the inputs right?)",
            files.len()
        )));
    }
    let total: u64 = files.values().map(|b| b.len() as u64).sum();
    if total > MAX_TOTAL_BYTES {
        return Err(Error::Input(format!(
            "the bundle's files would hold {total} bytes, more than the {MAX_TOTAL_BYTES} a bundle may have; nothing written"
        )));
    }
    Ok(())
}

/// How a directory on disk differs from a generated bundle.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Drift {
    /// Files whose content differs, with a unified diff (committed → generated).
    pub changed: Vec<(String, String)>,
    /// Files the generated bundle has and the directory lacks.
    pub missing: Vec<String>,
    /// Files in the directory the generated bundle does not have (stale).
    pub stale: Vec<String>,
}

impl Drift {
    /// No difference at all.
    pub fn is_clean(&self) -> bool {
        self.changed.is_empty() && self.missing.is_empty() && self.stale.is_empty()
    }
}

/// Every file under `dir` (a tree rooted at `root`), by path relative to `root`, `/`-separated.
pub(crate) fn list_files(root: &Path, dir: &Path, out: &mut BTreeSet<String>) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        if entry.file_type().map_err(|e| Error::io(&path, e))?.is_dir() {
            list_files(root, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(root) {
            out.insert(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// Compares `files` with what `dir` holds.
pub fn drift(files: &Files, dir: &Path) -> Result<Drift> {
    let mut on_disk = BTreeSet::new();
    list_files(dir, dir, &mut on_disk)?;
    let mut d = Drift::default();
    for (rel, bytes) in files {
        if !on_disk.remove(rel) {
            d.missing.push(rel.clone());
            continue;
        }
        let path = dir.join(rel);
        let current = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        if &current != bytes {
            let old = String::from_utf8_lossy(&current);
            let new = String::from_utf8_lossy(bytes);
            let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
                .unified_diff()
                .context_radius(3)
                .header(&format!("a/{rel}"), &format!("b/{rel}"))
                .to_string();
            d.changed.push((rel.clone(), diff));
        }
    }
    // Files a team keeps beside the bundle are carried over by `write_dir`, never stale.
    d.stale = on_disk.into_iter().filter(|r| !is_kept(r)).collect();
    Ok(d)
}

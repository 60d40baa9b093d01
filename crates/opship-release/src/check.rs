//! Read-only checks that recognise a step as done: digests in the layout, the catalog's
//! entries, directories holding exactly the staged files, and the hashes of every file a
//! release may write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use opship_core::image::{Digest, Layout};
use opship_core::input;

use crate::error::{Error, Result};
use crate::plan::s;

/// The digest of `tag` in the layout `dir`, if it is there.
pub(crate) fn layout_digest(dir: &Path, tag: &str) -> Option<String> {
    if !dir.join("oci-layout").is_file() {
        return None;
    }
    Layout::new(dir)
        .read_image(tag)
        .ok()
        .map(|i| i.descriptor.digest.as_str().to_owned())
}

/// Whether the catalog `dir` has this release: `Some(reason)` when it holds a bundle with
/// `image`; an error when it holds the version with another image (a released version is
/// not replaced silently).
pub(crate) fn catalog_has(
    dir: &Path,
    package: &str,
    version: &str,
    image: &str,
) -> Result<Option<String>> {
    if !dir.exists() {
        return Ok(None);
    }
    let catalog = opship_catalog::load::load_dir(dir).map_err(|e| Error::Check {
        id: "catalog-add".into(),
        message: e.to_string(),
    })?;
    for b in &catalog.bundles {
        if b.package != package {
            continue;
        }
        if b.image == image {
            return Ok(Some(format!(
                "{} is in the catalog with this image",
                b.name
            )));
        }
        if b.name.ends_with(&format!(".v{version}")) {
            return Err(Error::Conflict(format!(
                "the catalog {} already has {} with the image {}, not {image}; a released \
                 version is not replaced (`opship catalog add --replace` does it by hand)",
                s(dir),
                b.name,
                b.image
            )));
        }
    }
    Ok(None)
}

/// Whether directory `b` holds exactly `files` (relative path → bytes).
pub(crate) fn holds_exactly(b: &Path, files: &BTreeMap<PathBuf, Vec<u8>>) -> bool {
    b.is_dir() && files_of(b) == *files
}

/// Every file under `dir`, relative path → bytes. Read as opship reads its inputs: regular
/// files within the size budget of a blob, symlinks followed only inside `dir` (never a
/// directory through one, so a link loop ends); a file that cannot be read so is left out,
/// which makes a directory compared with [`holds_exactly`] differ.
pub(crate) fn files_of(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(kind) = e.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(root, &p, out);
                continue;
            }
            // Only a symlink needs resolving (a path check per file costs a release re-run
            // a tenth of its time).
            let bytes = if kind.is_symlink() {
                input::read_in_tree(root, &p, input::Kind::Blob)
            } else {
                input::read(&p, input::Kind::Blob)
            };
            if let (Ok(rel), Ok(bytes)) = (p.strip_prefix(root), bytes) {
                out.insert(rel.to_path_buf(), bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// sha256 of every file under `roots`, for the files a release changed.
pub(crate) fn snapshot(roots: &[PathBuf]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for root in roots {
        if root.is_file() {
            if let Ok(b) = input::read(root, input::Kind::Blob) {
                out.insert(s(root), Digest::of(&b).as_str().to_owned());
            }
            continue;
        }
        for (rel, bytes) in files_of(root) {
            out.insert(s(&root.join(rel)), Digest::of(&bytes).as_str().to_owned());
        }
    }
    out
}

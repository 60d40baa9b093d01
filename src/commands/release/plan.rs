//! The steps of a release as data (what runs, what it writes, the digest that proves it done,
//! how far it is) and the checks that recognise a step as already done.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use opship_core::image::{Digest, Layout};

use super::s;
use crate::commands::CmdError;

/// How far a step is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum State {
    /// Already done; why we know.
    Done(String),
    /// Run by this release.
    Ran,
    /// Would run (dry run).
    Planned,
    /// Cannot be checked before an earlier step has run (dry run).
    AfterEarlier,
}

impl State {
    pub(super) fn word(&self) -> &'static str {
        match self {
            State::Done(_) => "done",
            State::Ran => "ran",
            State::Planned => "planned",
            State::AfterEarlier => "planned",
        }
    }
}

/// One step of the plan: the command that does it, what it writes and the digest that
/// proves it done.
#[derive(Debug, Clone)]
pub(super) struct Step {
    pub(super) id: String,
    pub(super) what: String,
    pub(super) command: Vec<String>,
    pub(super) writes: Vec<String>,
    pub(super) digest: Option<String>,
    pub(super) state: State,
}

/// The digest of `tag` in the layout `dir`, if it is there.
pub(super) fn layout_digest(dir: &Path, tag: &str) -> Option<String> {
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
pub(super) fn catalog_has(
    dir: &Path,
    package: &str,
    version: &str,
    image: &str,
) -> Result<Option<String>, CmdError> {
    if !dir.exists() {
        return Ok(None);
    }
    let catalog = opship_catalog::load::load_dir(dir)?;
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
            return Err(format!(
                "the catalog {} already has {} with the image {}, not {image}; a released \
                 version is not replaced (`opship catalog add --replace` does it by hand)",
                s(dir),
                b.name,
                b.image
            )
            .into());
        }
    }
    Ok(None)
}

/// Whether two directories hold the same files with the same bytes.
pub(super) fn same_tree(a: &Path, b: &Path) -> bool {
    b.is_dir() && files_of(a) == files_of(b)
}

pub(super) fn files_of(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if let (Ok(rel), Ok(bytes)) = (p.strip_prefix(root), std::fs::read(&p)) {
                out.insert(rel.to_path_buf(), bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// sha256 of every file under `roots`, for the files a release changed.
pub(super) fn snapshot(roots: &[PathBuf]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for root in roots {
        if root.is_file() {
            if let Ok(b) = std::fs::read(root) {
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

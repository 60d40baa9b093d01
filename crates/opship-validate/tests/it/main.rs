//! Integration tests of opship-validate: corpus parity, per-rule fixtures, bad input, reports.

use std::path::PathBuf;

/// The shared corpus: `$OPSHIP_CORPUS`, `../shared/corpus` next to the repository, or
/// `/work/shared/corpus`.
pub fn corpus_dir() -> PathBuf {
    if let Ok(p) = std::env::var("OPSHIP_CORPUS") {
        return PathBuf::from(p);
    }
    let repo = repo_dir();
    let sibling = repo.join("../shared/corpus");
    if sibling.is_dir() {
        return sibling;
    }
    PathBuf::from("/work/shared/corpus")
}

/// The repository root.
pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every corpus bundle directory (`bundles/<operator>/<version>`), sorted.
pub fn corpus_bundles() -> Vec<PathBuf> {
    let root = corpus_dir().join("bundles");
    let mut dirs = Vec::new();
    for op in std::fs::read_dir(&root).expect("corpus bundles/ is readable") {
        let op = op.unwrap().path();
        if !op.is_dir() {
            continue;
        }
        for v in std::fs::read_dir(&op).unwrap() {
            let v = v.unwrap().path();
            if v.is_dir() {
                dirs.push(v);
            }
        }
    }
    dirs.sort();
    assert_eq!(dirs.len(), 237, "the corpus has 237 bundles");
    dirs
}

mod bad_input;
mod community;
mod docs;
mod fixtures;
mod parity;
mod parity_optional;
mod report;
mod suites;
mod upgrade;

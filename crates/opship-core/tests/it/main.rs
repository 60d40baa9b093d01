//! Integration tests of opship-core, one binary: the corpus round trip, the sample operator's
//! generated bundles, and bad input.

mod decompose;
mod generate;
mod image;
mod roundtrip;
mod sample;
mod semantic;
mod unpack;
mod yaml_fast;
mod yaml_quick;

use std::path::PathBuf;

/// The shared corpus of real bundles: `$OPSHIP_CORPUS`, else `../shared/corpus` next to the
/// repository, else `/work/shared/corpus`. Missing corpus fails the tests rather than skipping.
pub fn corpus_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("OPSHIP_CORPUS") {
        return PathBuf::from(p);
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    for c in [
        repo.join("../shared/corpus"),
        PathBuf::from("/work/shared/corpus"),
    ] {
        if c.join("bundles").is_dir() {
            return c;
        }
    }
    panic!("corpus not found: set OPSHIP_CORPUS to the shared/corpus directory");
}

/// The repository root.
pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[path = "../../../../tests/support/tracked.rs"]
mod tracked;

/// `rel` of the repository as git tracks it (a snapshot shared by this process's tests; read
/// it, never write into it): never what a run of opship in the checkout left there.
pub fn tracked(rel: &str) -> PathBuf {
    tracked::snapshot(&repo_dir(), rel)
}

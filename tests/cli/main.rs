//! Integration tests of the `opship` binary, one test binary: the sample operator end to end,
//! drift checks, kustomize interop and bad input.

mod adopt;
mod bad_input;
mod bounded;
mod build;
mod catalog;
mod catalog_verify;
mod chart;
mod checkout;
mod cosign_peers;
mod digests;
mod docs;
mod faults;
mod generate;
mod hostile;
mod hostile_chart;
mod hostile_validate;
mod index;
mod keyless;
mod keyless_release;
mod kill;
mod layout_lock;
mod manifests;
mod non_utf8;
mod progress;
mod push_all;
mod registry;
mod release;
mod secrets;
mod sign;
mod signals;
mod support_registry;
mod token_auth;
mod validate;
mod verify_blob;
mod workflows;

#[path = "../support/tracked.rs"]
mod tracked;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `opship` as built for this test run (`OPSHIP_TEST_BIN` names another build: worktrees
/// sharing one target directory overwrite each other's `target/debug/opship`).
pub fn opship() -> Command {
    let bin =
        std::env::var_os("OPSHIP_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_opship").into());
    let mut c = Command::new(bin);
    c.env_remove("SOURCE_DATE_EPOCH")
        .env_remove("OPSHIP_CONFIG")
        .env("NO_COLOR", "1");
    c
}

/// The real operator projects: `../shared/projects` next to the repository, else the
/// machine's copy.
pub fn shared_projects() -> PathBuf {
    [
        repo().join("../shared/projects"),
        "/work/shared/projects".into(),
    ]
    .into_iter()
    .find(|p: &PathBuf| p.is_dir())
    .expect("shared/projects not found")
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// `rel` (a directory or file of the repository) as git tracks it: never what a run of opship
/// in the checkout or anything else untracked left there. A snapshot shared by the tests of
/// this process: read it, never write into it (copy it first, as [`sample_copy`] does).
pub fn tracked(rel: &str) -> PathBuf {
    tracked::snapshot(&repo(), rel)
}

/// The repository's sample (`bundle/`) and catalog (`index/`) as git tracks them, at the same
/// relative paths under the directory returned: the working directory of tests that run
/// opship on `bundle/…` as a user in the checkout would, without reading what a run there left.
pub fn tracked_tree() -> PathBuf {
    tracked("index");
    tracked("bundle").parent().unwrap().to_path_buf()
}

/// A copy of the sample operator's `bundle/` in a temporary directory: what git tracks of it.
pub fn sample_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    copy_dir(&tracked("bundle"), &dir);
    (tmp, dir)
}

/// Every file under `dir`, relative path → content (lossy UTF-8, so failures show text).
pub fn read_tree(dir: &Path) -> std::collections::BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walk(root, &e.path(), out);
            } else {
                let rel = e
                    .path()
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(
                    rel,
                    String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned(),
                );
            }
        }
    }
    let mut out = Default::default();
    walk(dir, dir, &mut out);
    out
}

/// Hidden entries of `dir`: what a failed or finished atomic write must not leave behind.
pub fn hidden_entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// Output of a finished command, for assertions.
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs a command to completion.
pub fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().expect("run opship");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

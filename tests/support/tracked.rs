//! What git tracks of the repository, the only part of the checkout the tests read: a run of
//! opship in the checkout (the README's `release` of the sample writes `bundle/.opship`,
//! `bundle/dist` and `bundle/index`), an editor's backup or any other untracked file must not
//! change what a test sees. Included by path in every test binary that reads the repository.

#![allow(dead_code)] // each test binary uses part of it

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The files git tracks under `rel` (a path relative to the repository root `root`), relative
/// to `rel`, sorted: the index's entries (a file added but not yet committed counts), read
/// from the working tree, so an edit of a tracked file is seen.
pub fn tracked_files(root: &Path, rel: &str) -> Vec<PathBuf> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z", "--cached", "--full-name", "--"])
        .arg(rel)
        .output()
        .unwrap_or_else(|e| {
            panic!("the tests read only what git tracks and list it with `git ls-files`: {e}")
        });
    assert!(
        out.status.success(),
        "`git ls-files {rel}` in {} failed (the tests read only what git tracks: run them in a \
         git checkout): {}",
        root.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let prefix = rel.trim_end_matches('/');
    let mut files: Vec<PathBuf> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let p = std::str::from_utf8(p).expect("tracked path in UTF-8");
            let rest = if prefix.is_empty() {
                p
            } else {
                p.strip_prefix(prefix)
                    .and_then(|r| r.strip_prefix('/'))
                    .unwrap_or_else(|| panic!("`git ls-files {rel}` listed {p}"))
            };
            PathBuf::from(rest)
        })
        .collect();
    files.sort();
    files
}

/// Copies what git tracks under `rel` of the repository `root` into `to` (created): the
/// working tree's content of every tracked file, and nothing untracked or ignored. A tracked
/// file missing from the working tree is left out; a tracked symlink is copied as a symlink.
pub fn copy_tracked(root: &Path, rel: &str, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let from = root.join(rel);
    for f in tracked_files(root, rel) {
        let (src, dest) = (from.join(&f), to.join(&f));
        let Ok(meta) = std::fs::symlink_metadata(&src) else {
            continue; // deleted in the working tree
        };
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dest).unwrap();
        } else if meta.is_file() {
            std::fs::copy(&src, &dest).unwrap_or_else(|e| panic!("copying {}: {e}", src.display()));
        }
    }
}

/// The directory `rel` of the repository `root` as git tracks it: a copy of its tracked
/// files, made once per test process (the first time a path under the same top-level
/// directory is asked for) in `target/tmp/tracked-<pid>`. Read-only by convention: tests that
/// change a sample copy it first. Snapshots of test processes that are gone are removed when
/// the next one is made.
pub fn snapshot(root: &Path, rel: &str) -> PathBuf {
    static DONE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = base.join(format!("tracked-{}", std::process::id()));
    let top = rel.split('/').next().unwrap_or(rel).to_owned();
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if done.is_empty() {
        remove_stale(base);
        let _ = std::fs::remove_dir_all(&dir); // a snapshot of an earlier process with our pid
    }
    if !done.contains(&top) {
        copy_tracked(root, &top, &dir.join(&top));
        done.insert(top);
    }
    dir.join(rel)
}

/// Removes the snapshots of test processes that no longer run.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("tracked-") else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

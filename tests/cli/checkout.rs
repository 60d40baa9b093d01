//! The tests read only what git tracks of the checkout (issue 33): the README's main job run in
//! a checkout (its key, OCI layout and catalog under `bundle/`), an untracked file in a
//! tracked directory or an editor's backup never reach a test's copy of the sample.

use std::path::Path;
use std::process::Command;

use crate::support_registry::isolated;
use crate::tracked::{copy_tracked, tracked_files};
use crate::{read_tree, repo, run, sample_copy, tracked};

fn git(dir: &Path, args: &[&str]) {
    let r = run(Command::new("git").arg("-C").arg(dir).args(args));
    assert_eq!(r.code, 0, "git {args:?}: {}", r.stderr);
}

/// A git repository holding the sample as the checkout tracks it, with the checkout's
/// `.gitignore`, committed: a clone as a newcomer has it.
fn sample_repo(root: &Path) {
    copy_tracked(&repo(), "bundle", &root.join("bundle"));
    std::fs::copy(repo().join(".gitignore"), root.join(".gitignore")).unwrap();
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(
        root,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-qm",
            "sample",
        ],
    );
}

#[test]
fn the_readme_main_job_in_a_checkout_does_not_reach_a_copy_of_the_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("checkout");
    sample_repo(&root);
    let before = read_tree(&root.join("bundle"));
    // The README's main job, as a newcomer runs it in the checkout.
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let r = run(isolated(&home).current_dir(&root).args([
        "-c",
        "bundle/opship.yaml",
        "release",
        "--version",
        "0.3.0",
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = root.join("bundle");
    for left in [".opship/cosign.key", "dist/oci/index.json", "index"] {
        assert!(b.join(left).exists(), "the release wrote no {left}");
    }
    let copy = tmp.path().join("copy");
    copy_tracked(&root, "bundle", &copy);
    assert_eq!(
        read_tree(&copy),
        before,
        "the copy differs from the tracked sample"
    );
}

#[test]
fn a_copy_takes_tracked_edits_and_leaves_out_untracked_and_deleted_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("checkout");
    sample_repo(&root);
    let b = root.join("bundle");
    // Untracked: in a tracked directory, an ignored directory, an editor's backup, a hidden
    // file at the top, a file in a new directory.
    std::fs::write(b.join("0.2.0/manifests/extra.yaml"), "kind: ConfigMap\n").unwrap();
    std::fs::create_dir_all(b.join("dist/charts")).unwrap();
    std::fs::write(b.join("dist/charts/x.tgz"), "x").unwrap();
    std::fs::write(b.join("opship.yaml~"), "old").unwrap();
    std::fs::write(b.join(".notes"), "mine").unwrap();
    std::fs::create_dir_all(b.join("scratch/deep")).unwrap();
    std::fs::write(b.join("scratch/deep/f"), "f").unwrap();
    // Tracked: an edit in the working tree, a file added to the index, a deleted file.
    let cfg = b.join("opship.yaml");
    let edited = format!("{}# edited\n", std::fs::read_to_string(&cfg).unwrap());
    std::fs::write(&cfg, &edited).unwrap();
    std::fs::write(b.join("config/added.yaml"), "a: 1\n").unwrap();
    git(&root, &["add", "bundle/config/added.yaml"]);
    std::fs::remove_file(b.join("0.1.0/metadata/annotations.yaml")).unwrap();

    let copy = tmp.path().join("copy");
    copy_tracked(&root, "bundle", &copy);
    let got = read_tree(&copy);
    for absent in [
        "0.2.0/manifests/extra.yaml",
        "dist/charts/x.tgz",
        "opship.yaml~",
        ".notes",
        "scratch/deep/f",
        "0.1.0/metadata/annotations.yaml",
    ] {
        assert!(!got.contains_key(absent), "{absent} was copied");
    }
    assert_eq!(got["opship.yaml"], edited);
    assert_eq!(got["config/added.yaml"], "a: 1\n");
    // Everything else is the tracked sample.
    let listed = tracked_files(&root, "bundle");
    assert_eq!(got.len(), listed.len() - 1, "{:?}", got.keys());
    // A subdirectory is copied alone, with paths relative to it.
    let sub = tmp.path().join("sub");
    copy_tracked(&root, "bundle/0.2.0", &sub);
    assert!(sub.join("metadata/annotations.yaml").is_file());
    assert!(!sub.join("manifests/extra.yaml").exists());
}

#[test]
fn the_sample_the_tests_read_is_what_git_tracks() {
    let (_t, copy) = sample_copy();
    let mut got: Vec<String> = read_tree(&copy).into_keys().collect();
    got.sort();
    // `git ls-files` itself, not the helper, says what is tracked.
    let out = Command::new("git")
        .arg("-C")
        .arg(repo().join("bundle"))
        .args(["ls-files", "-z"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut want: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .filter(|p| !p.is_empty() && repo().join("bundle").join(p).exists())
        .map(str::to_owned)
        .collect();
    want.sort();
    assert_eq!(got, want);
    assert!(!copy.join(".opship").exists() && !copy.join("dist").exists());
    assert_eq!(read_tree(&tracked("bundle")), read_tree(&copy));
}

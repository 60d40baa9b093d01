//! Bad input: each case exits 2 with one clear line naming the file and line, and writes
//! nothing (or leaves the previous bundle as it was).

use std::path::{Path, PathBuf};

use crate::{Run, opship, read_tree, run, sample_copy};

/// Generates `version` of the (modified) sample into `out` and returns the result, checking
/// the common contract: exit 2, exactly one line on stderr, nothing written.
fn fails(dir: &Path, version: &str, expect: &[&str]) -> Run {
    let out = dir.join("out");
    let r = run(opship()
        .arg("-c")
        .arg(dir.join("opship.yaml"))
        .args(["generate", "bundle", "--version", version, "-o"])
        .arg(&out));
    assert_eq!(r.code, 2, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    let lines: Vec<&str> = r.stderr.trim_end().lines().collect();
    assert_eq!(lines.len(), 1, "want one line, got:\n{}", r.stderr);
    assert!(lines[0].starts_with("error: "), "{}", r.stderr);
    for e in expect {
        assert!(r.stderr.contains(e), "`{e}` not in: {}", r.stderr);
    }
    assert!(!r.stderr.contains("panicked"));
    assert!(!out.exists(), "nothing may be written on error");
    r
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

fn p(dir: &Path, rel: &str) -> PathBuf {
    dir.join(rel)
}

#[test]
fn invalid_yaml() {
    let (_t, dir) = sample_copy();
    std::fs::write(
        p(&dir, "config/broken.yaml"),
        "apiVersion: v1\nkind: ConfigMap\ndata: [1, 2\nmetadata: {}\n",
    )
    .unwrap();
    fails(&dir, "0.1.0", &["config/broken.yaml:4:"]);
}

#[test]
fn duplicate_key() {
    let (_t, dir) = sample_copy();
    std::fs::write(
        p(&dir, "config/dup.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"1\"\n  a: \"2\"\n",
    )
    .unwrap();
    fails(&dir, "0.1.0", &["config/dup.yaml:7:", "duplicate"]);
}

#[test]
fn deployment_without_containers() {
    let (_t, dir) = sample_copy();
    let m = p(&dir, "config/manager/manager.yaml");
    let text = std::fs::read_to_string(&m).unwrap();
    // Cut the pod's containers list down to an empty one.
    let start = text.find("      containers:").unwrap();
    let end = text.find("      serviceAccountName:").unwrap();
    let line = text[..start].lines().count() + 1;
    std::fs::write(
        &m,
        format!("{}      containers: []\n{}", &text[..start], &text[end..]),
    )
    .unwrap();
    let r = fails(
        &dir,
        "0.1.0",
        &[
            "config/manager/manager.yaml:",
            "has no containers",
            "Deployment memcached-operator-controller-manager",
        ],
    );
    assert!(
        r.stderr.contains(&format!("manager.yaml:{line}:")),
        "want line {line}: {}",
        r.stderr
    );
}

#[test]
fn binding_to_a_missing_role() {
    let (_t, dir) = sample_copy();
    edit(
        &p(&dir, "config/rbac/role_binding.yaml"),
        "name: memcached-operator-manager-role\n",
        "name: memcached-operator-no-such-role\n",
    );
    fails(
        &dir,
        "0.1.0",
        &[
            "config/rbac/role_binding.yaml:",
            "ClusterRole memcached-operator-no-such-role",
            "not among the manifests",
        ],
    );
}

#[test]
fn disallowed_kind() {
    let (_t, dir) = sample_copy();
    std::fs::write(
        p(&dir, "config/job.yaml"),
        "# a one-off migration job\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\nspec:\n  template:\n    spec:\n      containers: [{name: m, image: busybox}]\n      restartPolicy: Never\n",
    )
    .unwrap();
    fails(
        &dir,
        "0.1.0",
        &["config/job.yaml:2:1", "Job migrate", "excludeKinds"],
    );
}

#[test]
fn unknown_key_in_config() {
    let (_t, dir) = sample_copy();
    edit(
        &p(&dir, "opship.yaml"),
        "defaultChannel: stable",
        "defaultChanel: stable",
    );
    fails(&dir, "0.1.0", &["opship.yaml:4:", "defaultChanel"]);
}

#[test]
fn non_semver_version() {
    let (_t, dir) = sample_copy();
    fails(&dir, "1.0", &["version `1.0` is not a semantic version"]);
    fails(&dir, "v1.0.0", &["version `v1.0.0`"]);
    fails(&dir, "01.0.0", &["version `01.0.0`"]);
}

/// Makes a directory unwritable for the test's lifetime: `chattr +i` as root (root ignores
/// permission bits), mode 0555 otherwise.
struct Unwritable(PathBuf);

impl Unwritable {
    fn new(dir: &Path) -> Self {
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .map(|o| o.stdout == b"0\n")
            .unwrap_or(false);
        if root {
            let ok = std::process::Command::new("chattr")
                .arg("+i")
                .arg(dir)
                .status()
                .expect("chattr (e2fsprogs)");
            assert!(ok.success(), "chattr +i failed");
        } else {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        Unwritable(dir.to_path_buf())
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}

#[test]
fn unwritable_output_dir_leaves_the_old_bundle() {
    let (_t, dir) = sample_copy();
    // Something to regenerate: a changed input.
    edit(
        &p(&dir, "config/manager/manager.yaml"),
        "memory: 64Mi",
        "memory: 80Mi",
    );
    let before = read_tree(&dir.join("0.1.0"));
    for locked in [dir.clone(), dir.join("0.1.0")] {
        let guard = Unwritable::new(&locked);
        let r = run(opship().arg("-c").arg(dir.join("opship.yaml")).args([
            "generate",
            "bundle",
            "--version",
            "0.1.0",
        ]));
        drop(guard);
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
        assert!(
            r.stderr.contains("0.1.0") || r.stderr.contains(&dir.display().to_string()),
            "{}",
            r.stderr
        );
        assert_eq!(
            before,
            read_tree(&dir.join("0.1.0")),
            "old bundle must stay intact"
        );
        let leftovers = crate::hidden_entries(&dir);
        assert!(
            leftovers.is_empty(),
            "temporary directories left: {leftovers:?}"
        );
    }
}

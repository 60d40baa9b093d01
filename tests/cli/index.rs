//! Image indexes (OCI index and Docker manifest list) against a real registry: a two-platform
//! index made by `crane` (0.20, from a newer Debian suite on the tests' PATH; scripts/test puts
//! it there). `inspect`, `pull`, `sign` and `verify` resolve its tag to the same digest (the
//! index's, as crane reports it); the pulled layout holds every platform, skopeo and umoci
//! read it, and opship's re-push of it is the same index, which `crane validate --remote`
//! passes. A child missing from the registry fails the pull and leaves nothing behind;
//! `catalog build --base` builds on the multi-arch index straight from the registry.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use opship_core::image::Layout;
use opship_core::image::oci::ManifestKind;

use crate::support_registry::{TestRegistry, isolated, json, ok, require};
use crate::{run, tracked};

const ARCHS: [&str; 2] = ["amd64", "arm64"];

fn crane() -> Command {
    require(
        "crane",
        "crane (scripts/peers puts crane 0.20 on the tests' PATH)",
    );
    Command::new("crane")
}

fn tool_ok(cmd: &mut Command, what: &str) -> String {
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert!(
        out.status.success(),
        "{what}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A two-platform index `REG/<repo>:v1` made with crane (OCI index, or a Docker manifest list
/// with `docker`): one small image per architecture (its own file layer, its platform set with
/// `crane mutate --set-platform`), then `crane index append`. Returns (reference, digest).
fn crane_index(reg: &TestRegistry, tmp: &Path, repo_name: &str, docker: bool) -> (String, String) {
    let parts = format!("{}/{repo_name}-parts", reg.addr);
    let mut manifests = Vec::new();
    for arch in ARCHS {
        let dir = tmp.join(format!("{repo_name}-{arch}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hello.txt"), format!("hello from {arch}\n")).unwrap();
        let tarball = tmp.join(format!("{repo_name}-{arch}.tar"));
        tool_ok(
            Command::new("tar")
                .arg("-C")
                .arg(&dir)
                .arg("-cf")
                .arg(&tarball)
                .arg("hello.txt"),
            "tar",
        );
        let base = format!("{parts}:{arch}-base");
        let mut append = crane();
        append.arg("append");
        if !docker {
            append.arg("--oci-empty-base");
        }
        tool_ok(
            append.arg("-f").arg(&tarball).args(["-t", &base]),
            "crane append",
        );
        let image = format!("{parts}:{arch}");
        tool_ok(
            crane().args([
                "mutate",
                "--set-platform",
                &format!("linux/{arch}"),
                &base,
                "-t",
                &image,
            ]),
            "crane mutate",
        );
        manifests.push(image);
    }
    let reference = format!("{}/{repo_name}:v1", reg.addr);
    let mut index = crane();
    index.args(["index", "append"]);
    if docker {
        index.arg("--docker-empty-base");
    }
    for m in &manifests {
        index.args(["-m", m]);
    }
    tool_ok(index.args(["-t", &reference]), "crane index append");
    let digest = tool_ok(crane().args(["digest", &reference]), "crane digest")
        .trim()
        .to_owned();
    (reference, digest)
}

fn media_types(docker: bool) -> (&'static str, &'static str) {
    if docker {
        (
            "application/vnd.docker.distribution.manifest.list.v2+json",
            "application/vnd.docker.distribution.manifest.v2+json",
        )
    } else {
        (
            "application/vnd.oci.image.index.v1+json",
            "application/vnd.oci.image.manifest.v1+json",
        )
    }
}

/// Runs the whole agreement check on one kind of index.
fn index_agrees_everywhere(docker: bool) {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let name = if docker { "list" } else { "oci" };
    let (reference, digest) = crane_index(&reg, tmp.path(), name, docker);
    let (index_type, child_type) = media_types(docker);

    // inspect: the index itself, with its platforms.
    let r = ok(
        run(isolated(&home).args(["inspect", "-o", "json", &reference])),
        "inspect",
    );
    let v = json(&r.stdout);
    assert_eq!(v["digest"], digest.as_str());
    assert_eq!(v["mediaType"], index_type);
    let platforms: Vec<String> = v["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["mediaType"], child_type);
            format!("{}/{}", m["platform"]["os"], m["platform"]["architecture"]).replace('"', "")
        })
        .collect();
    assert_eq!(platforms, ["linux/amd64", "linux/arm64"]);
    let text = ok(
        run(isolated(&home).args(["inspect", &reference])),
        "inspect",
    );
    assert!(
        text.stdout.contains(&format!("Digest:    {digest}"))
            && text.stdout.contains(" linux/arm64 ("),
        "{}",
        text.stdout
    );

    // pull: the index whole, every platform, by tag and by digest.
    let layout = tmp.path().join("pulled");
    let r = ok(
        run(isolated(&home)
            .arg("pull")
            .arg(&reference)
            .arg(format!("{}:v1", layout.display()))),
        "pull",
    );
    assert_eq!(r.stdout.trim(), digest);
    assert!(
        r.stderr.contains("linux/amd64, linux/arm64"),
        "{}",
        r.stderr
    );
    let by_digest = format!("{}/{name}@{digest}", reg.addr);
    let r = ok(
        run(isolated(&home)
            .arg("pull")
            .arg(&by_digest)
            .arg(format!("{}:pinned", layout.display()))),
        "pull by digest",
    );
    assert_eq!(r.stdout.trim(), digest);
    let l = Layout::new(&layout);
    let top = l.tagged("v1").unwrap();
    assert_eq!(top.digest.as_str(), digest);
    assert_eq!(top.media_type, index_type);
    let tree = l.manifest_tree(&top).unwrap();
    assert_eq!(tree.len(), 3, "the index and its two platform manifests");
    let mut archs = Vec::new();
    for node in &tree {
        if let ManifestKind::Image(m) = &node.kind {
            // Every blob is there and verifies.
            let config: serde_json::Value =
                serde_json::from_slice(&l.read_blob(&m.config).unwrap()).unwrap();
            archs.push(config["architecture"].as_str().unwrap().to_owned());
            for layer in &m.layers {
                l.read_blob(layer).unwrap();
            }
        }
    }
    archs.sort();
    assert_eq!(archs, ARCHS);

    // sign and verify, by tag and by digest: the same digest.
    let key_prefix = tmp.path().join("cosign");
    let with_password = |c: &mut Command| {
        c.env("COSIGN_PASSWORD", "index-test").stdin(Stdio::null());
    };
    let mut c = isolated(&home);
    with_password(&mut c);
    ok(
        run(c
            .args(["key", "generate", "--output-key-prefix"])
            .arg(&key_prefix)),
        "key generate",
    );
    let mut c = isolated(&home);
    with_password(&mut c);
    let r = ok(
        run(c
            .args(["sign", "--key"])
            .arg(key_prefix.with_extension("key"))
            .arg(&reference)),
        "sign",
    );
    assert!(
        r.stdout.contains(&format!("sha256-{}.sig", &digest[7..])),
        "{}",
        r.stdout
    );
    for r in [&reference, &by_digest] {
        let v = ok(
            run(isolated(&home)
                .args(["verify", "--key"])
                .arg(key_prefix.with_extension("pub"))
                .arg(r)),
            "verify",
        );
        assert!(
            v.stderr
                .contains(&format!("signature(s) of {digest} verified"))
                || v.stdout.contains(&format!("signs {digest}")),
            "{}\n{}",
            v.stdout,
            v.stderr
        );
    }

    // push of the pulled layout: children, then the index; the same digest, crane validates.
    let target = format!("{}/{name}-again:v1", reg.addr);
    let r = ok(
        run(isolated(&home)
            .arg("push")
            .arg(format!("{}:v1", layout.display()))
            .arg(&target)),
        "push",
    );
    assert_eq!(r.stdout.trim(), digest);
    tool_ok(
        crane().args(["validate", "--remote", &target]),
        "crane validate",
    );
    assert_eq!(
        tool_ok(crane().args(["digest", &target]), "crane digest").trim(),
        digest
    );
    // A re-push sends nothing but the tag lookup.
    let r = ok(
        run(isolated(&home)
            .arg("push")
            .arg(format!("{}:v1", layout.display()))
            .arg(&target)),
        "re-push",
    );
    assert!(
        r.stderr.contains("4 of 4 blobs already present"),
        "{}",
        r.stderr
    );

    // A command that needs one image (catalog render of an image) says which platforms there
    // are rather than picking one.
    let r = run(isolated(&home).args(["catalog", "render", &reference]));
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("multi-platform image index") && r.stderr.contains("linux/arm64 sha256:"),
        "{}",
        r.stderr
    );

    if !docker {
        // skopeo and umoci read the layout (an OCI index).
        require("skopeo", "skopeo");
        let raw = tool_ok(
            Command::new("skopeo")
                .args(["inspect", "--raw"])
                .arg(format!("oci:{}:v1", layout.display())),
            "skopeo inspect --raw",
        );
        assert_eq!(
            opship_core::image::oci::Digest::of(raw.as_bytes()).as_str(),
            digest
        );
        let copy = tmp.path().join("skopeo-copy");
        tool_ok(
            Command::new("skopeo")
                .args(["copy", "--all", "--quiet"])
                .arg(format!("oci:{}:v1", layout.display()))
                .arg(format!("oci:{}:v1", copy.display())),
            "skopeo copy --all",
        );
        require("umoci", "umoci");
        let tags = tool_ok(
            Command::new("umoci").args(["ls", "--layout"]).arg(&layout),
            "umoci ls",
        );
        assert!(tags.lines().any(|t| t == "v1"), "{tags}");
    }
}

#[test]
fn oci_index_resolves_to_one_digest_in_inspect_pull_sign_verify_push() {
    index_agrees_everywhere(false);
}

#[test]
fn docker_manifest_list_resolves_to_one_digest_in_inspect_pull_sign_verify_push() {
    index_agrees_everywhere(true);
}

#[test]
fn a_missing_child_fails_the_pull_and_leaves_no_partial_layout() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (reference, _) = crane_index(&reg, tmp.path(), "broken", false);
    let manifest = json(&tool_ok(
        crane().args(["manifest", &reference]),
        "crane manifest",
    ));
    let child = manifest["manifests"][1]["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    tool_ok(
        crane().args(["delete", &format!("{}/broken@{child}", reg.addr)]),
        "crane delete",
    );
    // Into a new directory: exit 2, naming the child, and no directory.
    let fresh = tmp.path().join("fresh");
    let r = run(isolated(&home)
        .arg("pull")
        .arg(&reference)
        .arg(format!("{}:v1", fresh.display())));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains(&child), "{}", r.stderr);
    assert!(!fresh.exists());
    // Into a layout holding another image: its index.json stays byte for byte the same.
    let existing = tmp.path().join("existing");
    ok(
        run(isolated(&home)
            .arg("pull")
            .arg(format!("{}/broken-parts:amd64", reg.addr))
            .arg(format!("{}:amd64", existing.display()))),
        "pull one platform",
    );
    let before = std::fs::read(existing.join("index.json")).unwrap();
    let r = run(isolated(&home)
        .arg("pull")
        .arg(&reference)
        .arg(format!("{}:v1", existing.display())));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(std::fs::read(existing.join("index.json")).unwrap(), before);
}

#[test]
fn catalog_build_takes_a_multi_arch_base_straight_from_the_registry() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (reference, _) = crane_index(&reg, tmp.path(), "opm", false);
    let out: PathBuf = tmp.path().join("catalog");
    let r = ok(
        run(isolated(&home)
            .args(["catalog", "build"])
            .arg(tracked("index"))
            .args(["--base", &reference, "--layout"])
            .arg(&out)
            .args(["--tag", "v0"])),
        "catalog build --base REF",
    );
    let digest = r.stdout.split_whitespace().nth(1).unwrap().to_owned();
    let l = Layout::new(&out);
    let top = l.tagged("v0").unwrap();
    assert_eq!(top.digest.as_str(), digest);
    assert_eq!(top.media_type, "application/vnd.oci.image.index.v1+json");
    let mut archs = Vec::new();
    for node in l.manifest_tree(&top).unwrap() {
        if let ManifestKind::Image(m) = &node.kind {
            let config: serde_json::Value =
                serde_json::from_slice(&l.read_blob(&m.config).unwrap()).unwrap();
            assert_eq!(
                config["config"]["Labels"]["operators.operatorframework.io.index.configs.v1"],
                "/configs"
            );
            // The base's layer and the catalog's.
            assert_eq!(m.layers.len(), 2);
            archs.push(config["architecture"].as_str().unwrap().to_owned());
        }
    }
    archs.sort();
    assert_eq!(archs, ARCHS);
    // The multi-arch catalog goes up whole, and crane finds it well-formed.
    let target = format!("{}/catalog:v0", reg.addr);
    let r = ok(
        run(isolated(&home)
            .arg("push")
            .arg(format!("{}:v0", out.display()))
            .arg(&target)),
        "push catalog",
    );
    assert_eq!(r.stdout.trim(), digest);
    tool_ok(
        crane().args(["validate", "--remote", &target]),
        "crane validate",
    );
}

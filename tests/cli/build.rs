//! `opship build` against real tools: Debian's `skopeo` and `umoci` must read the layouts and
//! archives opship writes. A missing tool fails the test (scripts/test installs both).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{opship, read_tree, repo, run, tracked, tracked_tree};

/// A tool that must be installed; panics with the way to install it otherwise.
fn tool(name: &str) -> Command {
    let ok = Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "`{name}` is not installed: `apt-get install -y skopeo umoci` (scripts/test does this)"
    );
    Command::new(name)
}

/// Runs a tool, asserting success; returns stdout.
fn tool_out(cmd: &mut Command) -> String {
    let r = run(cmd);
    assert_eq!(
        r.code, 0,
        "{cmd:?}\nstdout:\n{}\nstderr:\n{}",
        r.stdout, r.stderr
    );
    r.stdout
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn annotations(bundle: &Path) -> serde_json::Value {
    let a =
        opship_core::image::build::annotations(&bundle.join("metadata/annotations.yaml")).unwrap();
    serde_json::to_value(a).unwrap()
}

/// `opship build ARGS...`, asserting success; `(tag, digest)` per output line.
fn build(args: &[&str]) -> Vec<(String, String)> {
    let r = run(opship().args(["build"]).args(args));
    assert_eq!(r.code, 0, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    r.stdout
        .lines()
        .map(|l| {
            let (t, d) = l.split_once(' ').unwrap();
            (t.to_owned(), d.to_owned())
        })
        .collect()
}

/// Files of a bundle that go into its image.
fn bundle_files(bundle: &Path) -> std::collections::BTreeMap<String, String> {
    read_tree(bundle)
        .into_iter()
        .filter(|(k, _)| {
            k.starts_with("manifests/")
                || k.starts_with("metadata/")
                || k.starts_with("tests/scorecard/")
        })
        .collect()
}

fn long_name_bundle() -> PathBuf {
    let corpus = std::env::var_os("OPSHIP_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            [
                repo().join("../shared/corpus"),
                "/work/shared/corpus".into(),
            ]
            .into_iter()
            .find(|c| c.join("bundles").is_dir())
            .expect("corpus not found: set OPSHIP_CORPUS")
        });
    corpus.join("bundles/service-binding-operator/1.4.0")
}

#[test]
fn skopeo_reads_the_layout() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = tmp.path().join("oci");
    let l = layout.to_str().unwrap();
    let b2 = tracked("bundle/0.2.0");
    let b3 = tracked("bundle/0.3.0");
    let out = build(&[b2.to_str().unwrap(), b3.to_str().unwrap(), "--layout", l]);
    assert_eq!(
        out.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        ["0.2.0", "0.3.0"]
    );

    for ((tag, digest), bundle) in out.iter().zip([&b2, &b3]) {
        let reference = format!("oci:{l}:{tag}");
        let inspect = json(&tool_out(tool("skopeo").args(["inspect", &reference])));
        assert_eq!(inspect["Digest"], digest.as_str());
        assert_eq!(inspect["Labels"], annotations(bundle));
        assert_eq!(inspect["Architecture"], "amd64");
        assert_eq!(inspect["Os"], "linux");
        assert_eq!(inspect["Created"], "1970-01-01T00:00:00Z");

        let config = json(&tool_out(
            tool("skopeo").args(["inspect", "--config", &reference]),
        ));
        assert_eq!(config["config"]["Labels"], annotations(bundle));
        assert_eq!(config["rootfs"]["diff_ids"].as_array().unwrap().len(), 1);

        // A copy into another layout keeps the manifest byte for byte (same digest).
        let other = tmp.path().join("other");
        let dest = format!("oci:{}:copied-{tag}", other.display());
        tool_out(tool("skopeo").args(["copy", "--quiet", &reference, &dest]));
        let index = json(&std::fs::read_to_string(other.join("index.json")).unwrap());
        assert!(
            index["manifests"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["digest"] == digest.as_str()),
            "{index}"
        );

        // dir: transport: layer and config blobs verified by skopeo.
        let dir = tmp.path().join(format!("dir-{tag}"));
        tool_out(tool("skopeo").args([
            "copy",
            "--quiet",
            &reference,
            &format!("dir:{}", dir.display()),
        ]));
        let m = json(&std::fs::read_to_string(dir.join("manifest.json")).unwrap());
        let layer = m["layers"][0]["digest"].as_str().unwrap();
        assert!(dir.join(layer.trim_start_matches("sha256:")).is_file());
    }
}

#[test]
fn umoci_unpacks_what_was_built() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = tmp.path().join("oci");
    let l = layout.to_str().unwrap();
    // The sample bundle has tests/scorecard; the corpus one has names over 100 bytes (PAX).
    for (bundle, tag) in [
        (tracked("bundle/0.3.0"), "sample"),
        (long_name_bundle(), "long-names"),
    ] {
        build(&[bundle.to_str().unwrap(), "--layout", l, "--tag", tag]);
        let out = tmp.path().join(format!("unpacked-{tag}"));
        tool_out(tool("umoci").args([
            "unpack",
            "--rootless",
            "--image",
            &format!("{l}:{tag}"),
            out.to_str().unwrap(),
        ]));
        let rootfs = out.join("rootfs");
        assert_eq!(
            read_tree(&rootfs),
            bundle_files(&bundle),
            "{}",
            bundle.display()
        );
        let config = json(&std::fs::read_to_string(out.join("config.json")).unwrap());
        assert_eq!(
            config["annotations"]["operators.operatorframework.io.bundle.package.v1"],
            annotations(&bundle)["operators.operatorframework.io.bundle.package.v1"]
        );
    }
    // umoci agrees on the tags.
    let ls = tool_out(tool("umoci").args(["ls", "--layout", l]));
    let mut tags: Vec<&str> = ls.lines().collect();
    tags.sort_unstable();
    assert_eq!(tags, ["long-names", "sample"]);
}

#[test]
fn builds_are_byte_identical_and_honour_source_date_epoch() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tracked("bundle/0.3.0");
    let mut trees = Vec::new();
    for n in 0..2 {
        let layout = tmp.path().join(format!("oci{n}"));
        let archive = tmp.path().join(format!("a{n}.tar"));
        let r = run(opship()
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .args(["build", bundle.to_str().unwrap(), "--layout"])
            .arg(&layout)
            .arg("--archive")
            .arg(&archive));
        assert_eq!(r.code, 0, "{}", r.stderr);
        trees.push((
            r.stdout,
            read_tree(&layout),
            std::fs::read(&archive).unwrap(),
        ));
    }
    assert_eq!(trees[0], trees[1]);
    let l = tmp.path().join("oci0");
    let inspect = json(&tool_out(
        tool("skopeo").args(["inspect", &format!("oci:{}:0.3.0", l.display())]),
    ));
    assert_eq!(inspect["Created"], "2023-11-14T22:13:20Z");
    // Without the variable the digest differs (created and entry mtimes are 0).
    let plain = build(&[
        bundle.to_str().unwrap(),
        "--layout",
        tmp.path().join("oci2").to_str().unwrap(),
    ]);
    assert!(!trees[0].0.contains(&plain[0].1));
}

#[test]
fn archive_is_readable_as_docker_and_oci_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tracked("bundle/0.3.0");
    let archive = tmp.path().join("bundle.tar");
    let out = build(&[
        bundle.to_str().unwrap(),
        "--layout",
        tmp.path().join("oci").to_str().unwrap(),
        "--archive",
        archive.to_str().unwrap(),
        "--label",
        "com.example.team=storage",
    ]);
    let a = archive.to_str().unwrap();
    let docker = json(&tool_out(
        tool("skopeo").args(["inspect", &format!("docker-archive:{a}")]),
    ));
    assert_eq!(
        docker["Labels"]["operators.operatorframework.io.bundle.package.v1"],
        "memcached-operator"
    );
    assert_eq!(docker["Labels"]["com.example.team"], "storage");
    let oci = json(&tool_out(
        tool("skopeo").args(["inspect", &format!("oci-archive:{a}:0.3.0")]),
    ));
    assert_eq!(oci["Digest"], out[0].1.as_str());
    // docker load's manifest.json names the image.
    let dir = tmp.path().join("from-archive");
    tool_out(tool("skopeo").args([
        "copy",
        "--quiet",
        &format!("docker-archive:{a}:memcached-operator-bundle:0.3.0"),
        &format!("dir:{}", dir.display()),
    ]));
    assert!(dir.join("manifest.json").is_file());
}

#[test]
fn json_output_docker_format_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tracked("bundle/0.3.0");
    let layout = tmp.path().join("oci");
    let r = run(opship()
        .args([
            "build",
            bundle.to_str().unwrap(),
            "--format",
            "docker",
            "-o",
            "json",
            "--layout",
        ])
        .arg(&layout));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = json(&r.stdout);
    assert_eq!(v[0]["tag"], "0.3.0");
    assert_eq!(
        v[0]["mediaType"],
        "application/vnd.docker.distribution.manifest.v2+json"
    );
    let index = json(&std::fs::read_to_string(layout.join("index.json")).unwrap());
    assert_eq!(index["manifests"][0]["digest"], v[0]["digest"]);

    // --tag with several bundles.
    let r = run(opship()
        .args([
            "build",
            "bundle/0.2.0",
            "bundle/0.3.0",
            "--tag",
            "x",
            "--layout",
        ])
        .arg(&layout)
        .current_dir(tracked_tree()));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--tag"), "{}", r.stderr);
    // Not a bundle: the missing directory is named.
    let r = run(opship()
        .args(["build", tmp.path().to_str().unwrap(), "--layout"])
        .arg(&layout));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("manifests"), "{}", r.stderr);
    // A bad label.
    let r = run(opship()
        .args([
            "build",
            bundle.to_str().unwrap(),
            "--label",
            "novalue",
            "--layout",
        ])
        .arg(&layout));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("KEY=VALUE"), "{}", r.stderr);
}

//! Paths whose names are not UTF-8 (issue 33): read like any other at every command that
//! takes a path (never mistaken for a missing file through a lossy conversion), and named in
//! messages losslessly, quoted with Rust's escapes (`"b\xFF"`), by `opship_core::paths::show`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use crate::{copy_dir, opship, repo, run};

/// `dir/<bytes>`.
fn named(dir: &Path, bytes: &[u8]) -> PathBuf {
    dir.join(OsString::from_vec(bytes.to_vec()))
}

/// Names of several shapes: a lone 0xFF, Latin-1 `é` (0xE9) inside text, a truncated UTF-8
/// sequence, and a byte that looks like a layout's `:`-separated tag around it.
const NAMES: [&[u8]; 4] = [b"b\xff", b"caf\xe9-bundle", b"\xe2\x82-x", b"a:\xfe"];

/// How `show` spells the name: Rust's quoted escapes.
fn escaped(path: &Path) -> String {
    format!("{path:?}")
}

#[test]
fn bundle_directories_with_non_utf8_names_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, name) in NAMES.iter().enumerate() {
        let bundle = named(tmp.path(), name);
        copy_dir(&repo().join("bundle/0.2.0"), &bundle);
        // validate bundle: read, and its report names the directory losslessly.
        let r = run(opship().args(["validate", "bundle"]).arg(&bundle));
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert!(!r.stdout.contains('\u{fffd}'), "{}", r.stdout);
        // catalog render: the bundle rendered.
        let r = run(opship()
            .args(["catalog", "render", "--image", "quay.io/x/b:v1"])
            .arg(&bundle));
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stdout.contains("memcached-operator.v0.2.0"),
            "{}",
            r.stdout
        );
        // manifests: rendered.
        let r = run(opship()
            .arg("manifests")
            .arg(&bundle)
            .args(["--namespace", "ns", "-o", "-"]));
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("kind: Deployment"), "{}", r.stdout);
        // build, into a layout whose name is not UTF-8 either; then the layout image is
        // validated and rendered by `LAYOUT:TAG` and `oci:LAYOUT:TAG`.
        let layout = named(
            tmp.path(),
            &[b"oci-\xe9".as_slice(), &[b'0' + i as u8]].concat(),
        );
        let r = run(opship()
            .arg("build")
            .arg(&bundle)
            .arg("--layout")
            .arg(&layout)
            .args(["--tag", "t1"]));
        assert_eq!(r.code, 0, "{}", r.stderr);
        let mut tagged = layout.clone().into_os_string();
        tagged.push(":t1");
        let mut explicit = OsString::from("oci:");
        explicit.push(&tagged);
        for arg in [&tagged, &explicit] {
            let r = run(opship().args(["validate", "bundle"]).arg(arg));
            assert_eq!(r.code, 0, "{arg:?}: {}\n{}", r.stdout, r.stderr);
            let r = run(opship()
                .args(["catalog", "render", "--image", "quay.io/x/b:v1"])
                .arg(arg));
            assert_eq!(r.code, 0, "{arg:?}: {}", r.stderr);
            assert!(r.stdout.contains("memcached-operator.v0.2.0"));
        }
        // catalog add into an index whose name is not UTF-8; validate, render and build it.
        let index = named(
            tmp.path(),
            &[b"index-\xff".as_slice(), &[b'0' + i as u8]].concat(),
        );
        let r = run(opship()
            .args(["catalog", "add", "--bundle"])
            .arg(&bundle)
            .args([
                "--image",
                "quay.io/x/b:v1",
                "--channel",
                "stable",
                "--index",
            ])
            .arg(&index));
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stdout.contains(escaped(&index).trim_end_matches('"')),
            "{}",
            r.stdout
        );
        let r = run(opship().args(["catalog", "validate"]).arg(&index));
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(&escaped(&index)), "{}", r.stderr);
        let r = run(opship().args(["catalog", "render"]).arg(&index));
        assert_eq!(r.code, 0, "{}", r.stderr);
        let r = run(opship()
            .args(["catalog", "build"])
            .arg(&index)
            .arg("--layout")
            .arg(&layout)
            .args(["--tag", "catalog"]));
        assert_eq!(r.code, 0, "{}", r.stderr);
        // chart render from it.
        let r = run(opship()
            .args(["chart", "render", "--bundle"])
            .arg(&bundle)
            .arg("--output")
            .arg(named(
                tmp.path(),
                &[b"charts-\xe9".as_slice(), &[b'0' + i as u8]].concat(),
            )));
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
}

#[test]
fn generate_reads_an_input_directory_with_a_non_utf8_name() {
    let tmp = tempfile::tempdir().unwrap();
    let stream = run(opship()
        .arg("-c")
        .arg(repo().join("bundle/opship.yaml"))
        .args(["generate", "bundle", "--version", "0.2.0", "-o"])
        .arg(tmp.path().join("reference")));
    assert_eq!(stream.code, 0, "{}", stream.stderr);
    for name in [b"in\xff".as_slice(), b"m\xe9nifests"] {
        // A directory of plain manifests: the sample's CRD, RBAC and manager rendered once.
        let input = named(tmp.path(), name);
        std::fs::create_dir_all(&input).unwrap();
        for f in std::fs::read_dir(tmp.path().join("reference/manifests")).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), input.join(f.file_name())).unwrap();
        }
        let out = named(tmp.path(), &[name, b"-out"].concat());
        let r = run(opship()
            .arg("-c")
            .arg(repo().join("bundle/opship.yaml"))
            .args(["generate", "bundle", "--version", "0.2.0", "--input"])
            .arg(&input)
            .arg("-o")
            .arg(&out));
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(out.join("manifests").is_dir());
    }
}

#[test]
fn a_missing_or_wrong_non_utf8_path_is_named_losslessly() {
    let tmp = tempfile::tempdir().unwrap();
    for name in NAMES {
        let missing = named(tmp.path(), name);
        let shown = escaped(&missing);
        for r in [
            run(opship().args(["validate", "bundle"]).arg(&missing)),
            run(opship().args(["catalog", "validate"]).arg(&missing)),
            run(opship()
                .arg("manifests")
                .arg(&missing)
                .args(["--namespace", "ns"])),
            run(opship()
                .arg("build")
                .arg(&missing)
                .arg("--layout")
                .arg(tmp.path().join("oci"))),
        ] {
            assert_ne!(r.code, 0);
            let out = format!("{}{}", r.stdout, r.stderr);
            // The name, or a path below it, quoted and escaped.
            assert!(out.contains(shown.trim_end_matches('"')), "{shown}: {out}");
            assert!(!out.contains('\u{fffd}'), "{out}");
        }
        // A directory that is no bundle, given to `catalog add`: refused naming it.
        std::fs::create_dir_all(&missing).unwrap();
        let r = run(opship()
            .args(["catalog", "add", "--bundle"])
            .arg(&missing)
            .args([
                "--image",
                "quay.io/x/b:v1",
                "--channel",
                "stable",
                "--index",
            ])
            .arg(tmp.path().join("index")));
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr
                .contains(&format!("{shown}: not a bundle directory")),
            "{}",
            r.stderr
        );
    }
}

//! `generate bundle --use-image-digests` against a real registry (Debian's `docker-registry`):
//! the sample operator with its images pointed at the test registry, a single-arch OCI image,
//! a Docker v2 image and a multi-arch OCI index pushed with `skopeo copy --all`. Every pinned
//! reference must equal what `skopeo inspect --raw | sha256sum` gives for the tag.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support_registry::{TestRegistry, isolated, json, ok, run_stdin, skopeo};
use crate::{opship, read_tree, run, sample_copy};

const CSV: &str = "manifests/memcached-operator.clusterserviceversion.yaml";
/// A pinned reference on a host that does not exist: looking it up would fail the run.
const PINNED: &str = "unreachable.invalid/tools/pinned@sha256:0000000000000000000000000000000000000000000000000000000000000001";

/// The images of one test registry.
struct Images {
    /// `ADDR/example/memcached-operator` (OCI manifest, tag v0.3.0).
    operator: String,
    /// `ADDR/library/memcached` (OCI index of two platforms, tag 1.6.26-alpine).
    memcached: String,
    /// The platform manifests' digests inside that index.
    platforms: Vec<String>,
    /// `ADDR/tools/busybox` (Docker v2 manifest, tag 1.36).
    busybox: String,
}

/// `skopeo inspect --raw` of `reference` piped through `sha256sum`: the digest an independent
/// client computes for what the registry serves under the tag, and the manifest itself.
fn served_digest(reference: &str, creds: Option<(&str, &str)>) -> (String, Value) {
    let mut cmd = skopeo();
    cmd.args(["inspect", "--raw", "--tls-verify=false"]);
    if let Some((u, p)) = creds {
        cmd.arg(format!("--creds={u}:{p}"));
    }
    let out = cmd.arg(format!("docker://{reference}")).output().unwrap();
    assert!(
        out.status.success(),
        "skopeo inspect {reference}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut sum = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    sum.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let hex = String::from_utf8(sum.wait_with_output().unwrap().stdout).unwrap();
    let hex = hex.split_whitespace().next().unwrap().to_owned();
    (
        format!("sha256:{hex}"),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

fn build_into(layout: &Path, tag: &str, version: &str, format: &str) {
    ok(
        run(opship()
            .args(["build", "--layout"])
            .arg(layout)
            .args(["--tag", tag, "--format", format])
            .arg(crate::tracked("bundle").join(version))),
        "opship build",
    );
}

/// Adds to the layout an OCI image index of the images tagged `tags` (as linux/amd64 and
/// linux/arm64), tagged `tag`; returns the platform manifests' digests.
fn write_index(layout: &Path, tags: [&str; 2], tag: &str) -> Vec<String> {
    let l = opship_core::image::Layout::new(layout);
    let mut manifests = Vec::new();
    for (t, arch) in tags.iter().zip(["amd64", "arm64"]) {
        let d = l.read_image(t).unwrap().descriptor;
        manifests.push(json!({
            "mediaType": d.media_type,
            "digest": d.digest.as_str(),
            "size": d.size,
            "platform": {"architecture": arch, "os": "linux"},
        }));
    }
    let platforms = manifests
        .iter()
        .map(|m| m["digest"].as_str().unwrap().to_owned())
        .collect();
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": manifests,
    }))
    .unwrap();
    let digest = opship_core::image::oci::Digest::of(&index);
    l.write_blob(&digest, &index).unwrap();
    let path = layout.join("index.json");
    let mut top: Value = json(&std::fs::read_to_string(&path).unwrap());
    top["manifests"].as_array_mut().unwrap().push(json!({
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "digest": digest.as_str(),
        "size": index.len(),
        "annotations": {"org.opencontainers.image.ref.name": tag},
    }));
    std::fs::write(&path, serde_json::to_vec(&top).unwrap()).unwrap();
    platforms
}

/// Pushes the three images to the registry at `addr` (with credentials when given).
fn push_images(tmp: &Path, home: &Path, addr: &str, creds: Option<(&str, &str)>) -> Images {
    let layout = tmp.join("oci");
    build_into(&layout, "op", "0.3.0", "oci");
    build_into(&layout, "bb", "0.1.0", "docker");
    build_into(&layout, "amd64", "0.1.0", "oci");
    build_into(&layout, "arm64", "0.2.0", "oci");
    let platforms = write_index(&layout, ["amd64", "arm64"], "multi");

    let push = |tag: &str, target: &str| {
        let src = format!("{}:{tag}", layout.display());
        let r = match creds {
            Some((u, p)) => run_stdin(
                isolated(home).args(["push", "-u", u, "--password-stdin", &src, target]),
                &format!("{p}\n"),
            ),
            None => run(isolated(home).args(["push", &src, target])),
        };
        ok(r, "opship push");
    };
    let images = Images {
        operator: format!("{addr}/example/memcached-operator"),
        memcached: format!("{addr}/library/memcached"),
        platforms,
        busybox: format!("{addr}/tools/busybox"),
    };
    push("op", &format!("{}:v0.3.0", images.operator));
    push("bb", &format!("{}:1.36", images.busybox));

    // The index goes up with skopeo: opship pushes single images only.
    let mut copy = skopeo();
    copy.args(["copy", "--all", "--dest-tls-verify=false"]);
    if let Some((u, p)) = creds {
        copy.arg(format!("--dest-creds={u}:{p}"));
    }
    let out = copy
        .arg(format!("oci:{}:multi", layout.display()))
        .arg(format!("docker://{}:1.6.26-alpine", images.memcached))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "skopeo copy --all: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    images
}

/// A copy of the sample operator whose images live on `addr`: the operator image, the
/// `RELATED_IMAGE_MEMCACHED` env value, and two init containers (one by tag, one pinned).
fn project(addr: &str) -> (tempfile::TempDir, PathBuf) {
    let (t, dir) = sample_copy();
    let cfg = dir.join("opship.yaml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace(
            "image: quay.io/example/memcached-operator\n",
            &format!("image: {addr}/example/memcached-operator\n"),
        ),
    )
    .unwrap();
    let manager = dir.join("config/manager/manager.yaml");
    let text = std::fs::read_to_string(&manager).unwrap();
    let text = text
        .replace(
            "value: docker.io/library/memcached:1.6.26-alpine",
            &format!("value: {addr}/library/memcached:1.6.26-alpine"),
        )
        .replace(
            "      containers:\n",
            &format!(
                "      initContainers:\n        - name: wait\n          image: {addr}/tools/busybox:1.36\n        - name: pinned\n          image: {PINNED}\n      containers:\n"
            ),
        );
    assert!(text.contains("initContainers"));
    std::fs::write(&manager, text).unwrap();
    (t, dir)
}

fn generate(home: &Path, dir: &Path, extra: &[&str]) -> crate::Run {
    run(isolated(home)
        .arg("-c")
        .arg(dir.join("opship.yaml"))
        .args([
            "generate",
            "bundle",
            "--version",
            "0.3.0",
            "--use-image-digests",
        ])
        .args(extra))
}

fn csv(out: &Path) -> Value {
    let path = out.join(CSV);
    let text = std::fs::read_to_string(&path).unwrap();
    opship_core::manifest::parse_objects(&text, &path).unwrap()[0]
        .value()
        .clone()
}

/// Checks every image field of the generated CSV against the served digests.
fn assert_pinned(out: &Path, images: &Images, creds: Option<(&str, &str)>) {
    let (op, op_manifest) = served_digest(&format!("{}:v0.3.0", images.operator), creds);
    let (mem, mem_manifest) = served_digest(&format!("{}:1.6.26-alpine", images.memcached), creds);
    let (bb, bb_manifest) = served_digest(&format!("{}:1.36", images.busybox), creds);
    // The three kinds of manifest are really there, and the index is not a platform manifest.
    assert_eq!(
        op_manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        mem_manifest["mediaType"],
        "application/vnd.oci.image.index.v1+json"
    );
    assert_eq!(
        bb_manifest["mediaType"],
        "application/vnd.docker.distribution.manifest.v2+json"
    );
    assert!(!images.platforms.contains(&mem), "{mem}");

    let op = format!("{}@{op}", images.operator);
    let mem = format!("{}@{mem}", images.memcached);
    let bb = format!("{}@{bb}", images.busybox);
    let v = csv(out);
    assert_eq!(v["metadata"]["annotations"]["containerImage"], op.as_str());
    let pod = &v["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["image"], op.as_str());
    let env = pod["containers"][0]["env"].as_array().unwrap();
    let related = env
        .iter()
        .find(|e| e["name"] == "RELATED_IMAGE_MEMCACHED")
        .unwrap();
    assert_eq!(related["value"], mem.as_str());
    assert_eq!(pod["initContainers"][0]["image"], bb.as_str());
    assert_eq!(pod["initContainers"][1]["image"], PINNED);
    let mut listed: Vec<(&str, &str)> = v["spec"]["relatedImages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["image"].as_str().unwrap()))
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            ("manager", op.as_str()),
            ("memcached", mem.as_str()),
            ("pinned", PINNED),
            ("wait", bb.as_str()),
        ]
    );
    // No tag survives anywhere in the CSV.
    let text = std::fs::read_to_string(out.join(CSV)).unwrap();
    for tag in [":v0.3.0", ":1.6.26-alpine", ":1.36"] {
        assert!(!text.contains(tag), "{tag} left in the CSV");
    }
}

#[test]
fn tags_are_pinned_to_the_served_digests_index_kept() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let images = push_images(tmp.path(), &home, &reg.addr, None);
    let (_t, dir) = project(&reg.addr);

    let out = dir.join("out1");
    let r = ok(
        generate(&home, &dir, &["-o", out.to_str().unwrap()]),
        "generate --use-image-digests",
    );
    assert_pinned(&out, &images, None);
    // Each distinct image is looked up once, though the operator image is used three times
    // and memcached twice; the pinned one is never looked up.
    for image in [
        format!("{}:v0.3.0", images.operator),
        format!("{}:1.6.26-alpine", images.memcached),
        format!("{}:1.36", images.busybox),
    ] {
        let n = r
            .stderr
            .lines()
            .filter(|l| l.starts_with(&format!("resolved {image} to sha256:")))
            .count();
        assert_eq!(n, 1, "{image}\n{}", r.stderr);
    }
    assert!(r.stderr.contains("(OCI image index)"), "{}", r.stderr);
    assert!(!r.stderr.contains("unreachable.invalid"), "{}", r.stderr);

    // Deterministic: a second run gives the same bytes.
    let out2 = dir.join("out2");
    ok(
        generate(&home, &dir, &["-o", out2.to_str().unwrap()]),
        "second run",
    );
    assert_eq!(read_tree(&out), read_tree(&out2));

    // --check resolves too: up to date while the tags stay, drift once a tag moves.
    let r = ok(
        generate(&home, &dir, &["-o", out.to_str().unwrap(), "--check"]),
        "--check",
    );
    assert!(r.stdout.contains("up to date"), "{}", r.stdout);
    let layout = tmp.path().join("oci");
    ok(
        run(isolated(&home).args([
            "push",
            &format!("{}:amd64", layout.display()),
            &format!("{}:v0.3.0", images.operator),
        ])),
        "move the tag",
    );
    let r = generate(&home, &dir, &["-o", out.to_str().unwrap(), "--check"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("out of date"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains(&format!("+    containerImage: {}@sha256:", images.operator)),
        "{}",
        r.stdout
    );
}

#[test]
fn unknown_tag_or_unreachable_registry_fails_naming_image_and_place() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    push_images(tmp.path(), &home, &reg.addr, None);
    let (_t, dir) = project(&reg.addr);
    let out = dir.join("out");
    ok(
        generate(&home, &dir, &["-o", out.to_str().unwrap()]),
        "generate",
    );
    let before = read_tree(&out);

    // 0.4.0: the operator tag v0.4.0 was never pushed. And a related image on a port where
    // nothing listens.
    let manager = dir.join("config/manager/manager.yaml");
    let text = std::fs::read_to_string(&manager).unwrap();
    std::fs::write(
        &manager,
        text.replace(
            &format!("value: {}/library/memcached:1.6.26-alpine", reg.addr),
            "value: 127.0.0.1:1/library/memcached:1.6.26-alpine",
        ),
    )
    .unwrap();
    let r = run(isolated(&home)
        .arg("-c")
        .arg(dir.join("opship.yaml"))
        .args([
            "generate",
            "bundle",
            "--version",
            "0.4.0",
            "--use-image-digests",
        ])
        .arg("-o")
        .arg(&out));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let err = &r.stderr;
    assert!(
        err.contains("cannot pin 2 images to digests; no bundle was written"),
        "{err}"
    );
    let missing = format!("{}/example/memcached-operator:v0.4.0", reg.addr);
    let line = err.lines().find(|l| l.contains(&missing)).expect(err);
    assert!(line.contains("MANIFEST_UNKNOWN"), "{line}");
    assert!(line.contains("404"), "{line}");
    assert!(
        line.contains(
            "image of container manager in deployment memcached-operator-controller-manager"
        ) && line.contains("annotation containerImage")
            && line.contains("relatedImages entry manager"),
        "{line}"
    );
    let line = err
        .lines()
        .find(|l| l.contains("127.0.0.1:1/library/memcached:1.6.26-alpine"))
        .expect(err);
    assert!(
        line.contains("env RELATED_IMAGE_MEMCACHED of container manager")
            && line.contains("cannot reach registry 127.0.0.1:1"),
        "{line}"
    );
    assert_eq!(before, read_tree(&out), "the bundle must stay as it was");

    // A value that is no image reference is refused before any lookup, at its line.
    let text = std::fs::read_to_string(&manager).unwrap();
    std::fs::write(
        &manager,
        text.replace(
            "value: 127.0.0.1:1/library/memcached:1.6.26-alpine",
            "value: 127.0.0.1:1/library/memcached:1.6.26-alpine\n            - name: RELATED_IMAGE_BAD\n              value: quay.io/Upper/Case:1",
        ),
    )
    .unwrap();
    let r = run(isolated(&home)
        .arg("-c")
        .arg(dir.join("opship.yaml"))
        .args([
            "generate",
            "bundle",
            "--version",
            "0.4.0",
            "--use-image-digests",
        ])
        .arg("-o")
        .arg(&out));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("config/manager/manager.yaml:")
            && r.stderr.contains("RELATED_IMAGE_BAD")
            && r.stderr
                .contains("\"quay.io/Upper/Case:1\", not an image reference")
            && r.stderr.contains("BND007"),
        "{}",
        r.stderr
    );
    assert_eq!(before, read_tree(&out), "the bundle must stay as it was");
    assert!(crate::hidden_entries(&dir).is_empty());
}

#[test]
fn credentials_from_the_docker_config_reach_a_protected_registry() {
    let creds = ("alice", "s3cret");
    let reg = TestRegistry::start(Some(creds));
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let images = push_images(tmp.path(), &home, &reg.addr, Some(creds));
    let (_t, dir) = project(&reg.addr);

    // Without credentials: refused, naming the registry's answer and the image, nothing written.
    let out = dir.join("out");
    let r = generate(&home, &dir, &["-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("cannot pin 3 images"), "{}", r.stderr);
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains(&format!("{}:1.36", images.busybox)))
        .expect(&r.stderr);
    assert!(line.contains("401"), "{line}");
    assert!(
        line.contains("image of init container wait in deployment"),
        "{line}"
    );
    assert!(!out.exists());

    // With `auths` in $DOCKER_CONFIG/config.json.
    let docker_config = tmp.path().join("docker");
    std::fs::create_dir_all(&docker_config).unwrap();
    std::fs::write(
        docker_config.join("config.json"),
        format!(
            r#"{{"auths":{{"{}":{{"auth":"YWxpY2U6czNjcmV0"}}}}}}"#,
            reg.addr
        ),
    )
    .unwrap();
    ok(
        run(isolated(&home)
            .env("DOCKER_CONFIG", &docker_config)
            .arg("-c")
            .arg(dir.join("opship.yaml"))
            .args([
                "generate",
                "bundle",
                "--version",
                "0.3.0",
                "--use-image-digests",
            ])
            .arg("-o")
            .arg(&out)),
        "generate with credentials",
    );
    assert_pinned(&out, &images, Some(creds));

    // `useImageDigests: true` in the config does the same as the flag (here: --check, clean).
    let cfg = dir.join("opship.yaml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("{text}useImageDigests: true\n")).unwrap();
    let r = ok(
        run(isolated(&home)
            .env("DOCKER_CONFIG", &docker_config)
            .arg("-c")
            .arg(&cfg)
            .args(["generate", "bundle", "--version", "0.3.0", "--check"])
            .arg("-o")
            .arg(&out)),
        "--check with useImageDigests",
    );
    assert!(r.stdout.contains("up to date"), "{}", r.stdout);
}

#[test]
fn all_versions_are_pinned_together_or_not_at_all() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let images = push_images(tmp.path(), &home, &reg.addr, None);
    let (_t, dir) = project(&reg.addr);
    let layout = format!("{}:op", tmp.path().join("oci").display());
    let push_tag = |tag: &str| {
        ok(
            run(isolated(&home).args(["push", &layout, &format!("{}:{tag}", images.operator)])),
            "push",
        )
    };
    push_tag("v0.1.0");
    let before = read_tree(&dir);
    let all = || {
        run(isolated(&home)
            .arg("-c")
            .arg(dir.join("opship.yaml"))
            .args(["generate", "bundle", "--all", "--use-image-digests"]))
    };

    // v0.2.0 is missing: 0.1.0 and 0.3.0 resolve, but no version is written.
    let r = all();
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains(&format!("{}:v0.2.0", images.operator)))
        .expect(&r.stderr);
    assert!(
        line.contains("0.2.0: image of container manager in deployment"),
        "{line}"
    );
    assert_eq!(before, read_tree(&dir), "no bundle may change");

    push_tag("v0.2.0");
    let r = ok(all(), "generate --all");
    // memcached and busybox are used by all three versions: looked up once.
    for image in [
        format!("{}:1.6.26-alpine", images.memcached),
        format!("{}:1.36", images.busybox),
    ] {
        let n = r
            .stderr
            .lines()
            .filter(|l| l.starts_with(&format!("resolved {image} to ")))
            .count();
        assert_eq!(n, 1, "{image}\n{}", r.stderr);
    }
    let (op, _) = served_digest(&format!("{}:v0.1.0", images.operator), None);
    let v = csv(&dir.join("0.1.0"));
    assert_eq!(
        v["metadata"]["annotations"]["containerImage"],
        format!("{}@{op}", images.operator)
    );
    assert_pinned(&dir.join("0.3.0"), &images, None);
}

//! `opship catalog`: the release sequence of the sample operator through a real registry
//! (build, push, add to channels, validate after every step), concurrent adds under the lock,
//! runs killed mid-write, and render/validate on the corpus through the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support_registry::TestRegistry;
use crate::{opship, repo, run, tracked};

const PKG: &str = "memcached-operator";

fn ok(cmd: &mut Command) -> String {
    let r = run(cmd);
    assert_eq!(
        r.code, 0,
        "{cmd:?}\nstdout:\n{}\nstderr:\n{}",
        r.stdout, r.stderr
    );
    r.stdout
}

/// The blobs of a catalog directory as opm's JSON, parsed.
fn blobs(index: &Path) -> Vec<Value> {
    let out = ok(opship().args(["catalog", "render", index.to_str().unwrap(), "-o", "json"]));
    serde_json::Deserializer::from_str(&out)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect()
}

/// `channel -> [(entry, replaces, skipRange)]`.
fn channels(index: &Path) -> std::collections::BTreeMap<String, Vec<(String, String, String)>> {
    blobs(index)
        .into_iter()
        .filter(|b| b["schema"] == "olm.channel")
        .map(|c| {
            let entries = c["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
                    (s("name"), s("replaces"), s("skipRange"))
                })
                .collect();
            (c["name"].as_str().unwrap().to_owned(), entries)
        })
        .collect()
}

fn e(name: &str, replaces: &str, skip_range: &str) -> (String, String, String) {
    (name.into(), replaces.into(), skip_range.into())
}

fn validate(index: &Path) {
    ok(opship().args(["catalog", "validate", index.to_str().unwrap()]));
}

/// Builds the three sample bundles into a layout and pushes them; returns the references.
fn push_sample(reg: &TestRegistry, tmp: &Path) -> Vec<String> {
    let layout = tmp.join("oci");
    let mut refs = Vec::new();
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        let dir = tracked("bundle").join(v);
        ok(opship().args([
            "build",
            dir.to_str().unwrap(),
            "--layout",
            layout.to_str().unwrap(),
        ]));
        let r = format!("{}/memcached-operator-bundle:v{v}", reg.addr);
        ok(opship().args(["push", &format!("{}:{v}", layout.display()), &r]));
        refs.push(r);
    }
    refs
}

#[test]
fn release_sequence_through_a_registry() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let refs = push_sample(&reg, tmp.path());
    // A pushed bundle image renders exactly like its directory given the same reference,
    // in both CSV formats.
    for fmt in ["bundle-object", "csv-metadata"] {
        assert_eq!(
            ok(opship().args(["catalog", "render", &refs[2], "--csv-format", fmt])),
            ok(opship().args([
                "catalog",
                "render",
                tracked("bundle/0.3.0").to_str().unwrap(),
                "--image",
                &refs[2],
                "--csv-format",
                fmt,
            ]))
        );
    }
    // --pin-digest writes the digest that was pulled and verified.
    let pinned: Value = serde_json::from_str(&ok(opship().args([
        "catalog",
        "render",
        &refs[0],
        "--pin-digest",
    ])))
    .unwrap();
    let image = pinned["image"].as_str().unwrap();
    let inspect = ok(opship().args(["inspect", &refs[0], "-o", "json"]));
    let digest = serde_json::from_str::<Value>(&inspect).unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        image,
        format!("{}/memcached-operator-bundle@{digest}", reg.addr)
    );
    assert!(
        pinned["relatedImages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["image"] == image)
    );
    let index = tmp.path().join("index");
    let names: Vec<String> = ["0.1.0", "0.2.0", "0.3.0"]
        .iter()
        .map(|v| format!("{PKG}.v{v}"))
        .collect();
    for (i, r) in refs.iter().enumerate() {
        let out = ok(opship().args([
            "catalog",
            "add",
            "--bundle",
            r,
            "--channel",
            "stable,fast",
            "--skip-range",
            "minor",
            "--index",
            index.to_str().unwrap(),
        ]));
        assert!(out.contains("wrote"), "{out}");
        validate(&index);
        // The bundle is rendered from the pushed image; its image is the reference.
        let bundle = blobs(&index)
            .into_iter()
            .find(|b| b["schema"] == "olm.bundle" && b["name"] == names[i].as_str())
            .unwrap();
        assert_eq!(bundle["image"], r.as_str());
        let expected: Vec<_> = (0..=i)
            .map(|j| e(&names[j], if j == 0 { "" } else { &names[j - 1] }, ""))
            .collect();
        let ch = channels(&index);
        assert_eq!(ch.keys().collect::<Vec<_>>(), ["fast", "stable"]);
        assert_eq!(ch["stable"], expected, "after {}", names[i]);
        assert_eq!(ch["fast"], expected);
    }
    // Readable by the non-root user opm serves as once copied into an image.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(index.join(PKG).join("catalog.yaml"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
    // The same version again is refused and changes nothing.
    let before = std::fs::read(index.join(PKG).join("catalog.yaml")).unwrap();
    let r = run(opship().args([
        "catalog",
        "add",
        "--bundle",
        &refs[1],
        "--channel",
        "stable",
        "--index",
        index.to_str().unwrap(),
    ]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("already has version 0.2.0"),
        "{}",
        r.stderr
    );
    assert_eq!(
        before,
        std::fs::read(index.join(PKG).join("catalog.yaml")).unwrap()
    );

    // Deprecating a bundle writes olm.deprecations and stays valid.
    ok(opship().args([
        "catalog",
        "deprecate",
        "--package",
        PKG,
        "--bundle",
        &names[0],
        "--message",
        "0.1.0 has a data-loss bug; upgrade",
        "--index",
        index.to_str().unwrap(),
    ]));
    validate(&index);
    let dep = blobs(&index)
        .into_iter()
        .find(|b| b["schema"] == "olm.deprecations")
        .unwrap();
    assert_eq!(dep["entries"][0]["reference"]["name"], names[0].as_str());
    // Deprecating something that does not exist is refused before writing.
    let r = run(opship().args([
        "catalog",
        "deprecate",
        "--package",
        PKG,
        "--channel",
        "nope",
        "--message",
        "x",
        "--index",
        index.to_str().unwrap(),
    ]));
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("cannot deprecate channel \"nope\": channel not found"),
        "{}",
        r.stderr
    );
}

/// A catalog with the sample's 0.1.0 in `stable`, from the local bundle directory.
fn seeded_index(tmp: &Path) -> PathBuf {
    let index = tmp.join("index");
    ok(opship().args([
        "catalog",
        "add",
        "--bundle",
        tracked("bundle/0.1.0").to_str().unwrap(),
        "--image",
        "quay.io/example/memcached-operator-bundle:v0.1.0",
        "--channel",
        "stable",
        "--index",
        index.to_str().unwrap(),
    ]));
    index
}

fn add_cmd(index: &Path, version: &str, channel: &str, replace: bool) -> Command {
    let mut c = opship();
    c.args([
        "catalog",
        "add",
        "--bundle",
        tracked("bundle").join(version).to_str().unwrap(),
        "--image",
        &format!("quay.io/example/memcached-operator-bundle:v{version}"),
        "--channel",
        channel,
        "--index",
        index.to_str().unwrap(),
    ]);
    if replace {
        c.arg("--replace");
    }
    c
}

#[test]
fn concurrent_adds_all_land() {
    let tmp = tempfile::tempdir().unwrap();
    let index = seeded_index(tmp.path());
    // Two releases into two new channels at once.
    let mut a = add_cmd(&index, "0.2.0", "alpha", false)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut b = add_cmd(&index, "0.3.0", "beta", false)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    // Six writers of the same bundle into six channels.
    let mut children: Vec<_> = (1..=6)
        .map(|i| {
            add_cmd(&index, "0.3.0", &format!("c{i}"), true)
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in &mut children {
        assert!(c.wait().unwrap().success());
    }
    validate(&index);
    let ch = channels(&index);
    assert_eq!(
        ch.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "alpha", "beta", "c1", "c2", "c3", "c4", "c5", "c6", "stable"
        ]
    );
    assert_eq!(ch["alpha"], [e(&format!("{PKG}.v0.2.0"), "", "")]);
    let bundles: Vec<String> = blobs(&index)
        .into_iter()
        .filter(|b| b["schema"] == "olm.bundle")
        .map(|b| b["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        bundles,
        [
            format!("{PKG}.v0.1.0"),
            format!("{PKG}.v0.2.0"),
            format!("{PKG}.v0.3.0")
        ]
    );
}

#[test]
fn a_killed_add_leaves_the_previous_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    let index = seeded_index(tmp.path());
    let file = index.join(PKG).join("catalog.yaml");
    let before = std::fs::read(&file).unwrap();
    let mut after = None;
    // Kill at increasing delays: before, during and after the write.
    for delay_ms in [0u64, 2, 5, 10, 20, 40, 80, 160] {
        let mut child = add_cmd(&index, "0.2.0", "stable", true)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let status = child.wait().unwrap();
        let now = std::fs::read(&file).unwrap();
        if status.success() {
            after.get_or_insert_with(|| now.clone());
        }
        // Always exactly the old or the complete new catalog.
        assert!(
            now == before || after.as_ref().is_none_or(|a| *a == now) && now.len() > before.len(),
            "partial catalog after a kill at {delay_ms} ms"
        );
        let text = String::from_utf8(now).unwrap();
        let cat = opship_catalog_check(&text);
        assert!(cat, "catalog does not parse after a kill at {delay_ms} ms");
    }
    // A later run removes what a killed one left behind and succeeds.
    ok(&mut add_cmd(&index, "0.2.0", "stable", true));
    validate(&index);
    let leftovers: Vec<_> = std::fs::read_dir(index.join(PKG))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leftovers, ["catalog.yaml"]);
}

/// Whether the text is a catalog opship (and so opm) can load: every document has a schema.
fn opship_catalog_check(text: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.yaml"), text).unwrap();
    run(opship().args(["catalog", "validate", dir.path().to_str().unwrap()])).code == 0
}

#[test]
fn render_and_validate_corpus_through_the_binary() {
    let corpus = std::env::var("OPSHIP_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            let sibling = repo().join("../shared/corpus");
            if sibling.is_dir() {
                sibling
            } else {
                PathBuf::from("/work/shared/corpus")
            }
        });
    let out = ok(opship().args([
        "catalog",
        "render",
        corpus.join("bundles/keda/1.4.1").to_str().unwrap(),
        "--image",
        "127.0.0.1:5000/corpus/keda:1.4.1",
    ]));
    assert_eq!(
        out,
        std::fs::read_to_string(corpus.join("expected/bundle-render/keda/1.4.1.json")).unwrap()
    );
    let dir = corpus.join("catalogs/v4.16/shipwright-operator");
    let out = ok(opship().args([
        "catalog",
        "render",
        dir.to_str().unwrap(),
        "--output",
        "json",
    ]));
    assert_eq!(
        out,
        std::fs::read_to_string(
            corpus.join("expected/catalog-render/v4.16-shipwright-operator.json")
        )
        .unwrap()
    );
    let r = run(opship().args([
        "catalog",
        "validate",
        dir.to_str().unwrap(),
        "--output",
        "json",
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["passed"], true);
    let r = run(opship().args([
        "catalog",
        "validate",
        dir.to_str().unwrap(),
        "--output",
        "yaml",
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("passed: true\n"), "{}", r.stdout);
}

#[test]
fn bad_input_is_an_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("broken.yaml"),
        "schema: olm.package\nname: [unclosed\n",
    )
    .unwrap();
    // A file that does not parse is a failed validation (opm exits 1 on it too), reported
    // with the file and line like every other finding.
    let r = run(opship().args(["catalog", "validate", tmp.path().to_str().unwrap()]));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains("broken.yaml:2:"), "{}", r.stdout);
    for missing in ["/nonexistent/dir", "nonexistent", "/etc/hostname"] {
        let r = run(opship().args(["catalog", "render", missing]));
        assert_eq!(r.code, 2);
        assert!(
            r.stderr.contains("no such bundle or catalog directory"),
            "{missing}: {}",
            r.stderr
        );
    }
    let r = run(opship().args([
        "catalog",
        "add",
        "--bundle",
        tmp.path().to_str().unwrap(),
        "--image",
        "x.io/y:v1",
        "--channel",
        "stable",
        "--index",
        tmp.path().join("ix").to_str().unwrap(),
    ]));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not a bundle directory"), "{}", r.stderr);
    assert!(!tmp.path().join("ix").exists(), "nothing written");
}

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

#[test]
fn catalog_image_is_read_back_by_skopeo_umoci_and_render() {
    let tmp = tempfile::tempdir().unwrap();
    let index = seeded_index(tmp.path());
    ok(&mut add_cmd(&index, "0.2.0", "stable", false));
    let layout = tmp.path().join("oci");
    let l = layout.to_str().unwrap();
    let out = ok(opship().args([
        "catalog",
        "build",
        index.to_str().unwrap(),
        "--layout",
        l,
        "--tag",
        "v1",
        "--label",
        "org.opencontainers.image.source=https://example.com/op",
    ]));
    let (tag, digest) = out.trim().split_once(' ').unwrap();
    assert_eq!(tag, "v1");
    // Reproducible: the same catalog gives the same digest.
    let again = ok(opship().args([
        "catalog",
        "build",
        index.to_str().unwrap(),
        "--layout",
        l,
        "--tag",
        "v1b",
    ]));
    let again_no_label = again.trim().split_once(' ').unwrap().1.to_owned();
    let third = ok(opship().args([
        "catalog",
        "build",
        index.to_str().unwrap(),
        "--layout",
        l,
        "--tag",
        "v1c",
    ]));
    assert_eq!(third.trim().split_once(' ').unwrap().1, again_no_label);

    let inspect: Value =
        serde_json::from_str(&ok(tool("skopeo").args(["inspect", &format!("oci:{l}:v1")])))
            .unwrap();
    assert_eq!(inspect["Digest"], digest);
    assert_eq!(
        inspect["Labels"]["operators.operatorframework.io.index.configs.v1"],
        "/configs"
    );
    assert_eq!(
        inspect["Labels"]["org.opencontainers.image.source"],
        "https://example.com/op"
    );

    let unpacked = tmp.path().join("unpacked");
    ok(tool("umoci").args([
        "unpack",
        "--rootless",
        "--image",
        &format!("{l}:v1"),
        unpacked.to_str().unwrap(),
    ]));
    assert_eq!(
        crate::read_tree(&unpacked.join("rootfs/configs")),
        crate::read_tree(&index),
        "/configs of the image differs from the catalog directory"
    );
    // opship renders the image (recognised by its configs label) like the directory.
    assert_eq!(
        ok(opship().args(["catalog", "render", &format!("oci:{l}:v1")])),
        ok(opship().args(["catalog", "render", index.to_str().unwrap()]))
    );
    // An invalid catalog is refused.
    let bad = tmp.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("c.yaml"),
        "schema: olm.package\nname: x\ndefaultChannel: nope\n",
    )
    .unwrap();
    let r = run(opship().args(["catalog", "build", bad.to_str().unwrap(), "--layout", l]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no image built"), "{}", r.stderr);
}

#[test]
fn dockerfile_graph_and_template_through_the_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let index = seeded_index(tmp.path());
    ok(&mut add_cmd(&index, "0.2.0", "stable", false));
    let out = ok(opship().args([
        "catalog",
        "dockerfile",
        index.to_str().unwrap(),
        "-i",
        "scratch",
        "-l",
        "a=b",
    ]));
    assert!(out.contains("index.Dockerfile"), "{out}");
    let df = std::fs::read_to_string(tmp.path().join("index.Dockerfile")).unwrap();
    assert!(
        df.contains("ADD index /configs\n")
            && df.contains("\nFROM scratch\n")
            && !df.contains("ENTRYPOINT"),
        "{df}"
    );
    assert!(
        df.contains("LABEL operators.operatorframework.io.index.configs.v1=/configs\n")
            && df.contains("LABEL \"a\"=\"b\"\n"),
        "{df}"
    );
    let r = run(opship().args(["catalog", "dockerfile", index.to_str().unwrap()]));
    assert_eq!(r.code, 2, "an existing Dockerfile is not overwritten");

    let mermaid = ok(opship().args(["catalog", "graph", index.to_str().unwrap()]));
    assert!(mermaid.contains(&format!(
        "      {PKG}-stable-{PKG}.v0.1.0[\"{PKG}.v0.1.0\"]-- replace --> {PKG}-stable-{PKG}.v0.2.0[\"{PKG}.v0.2.0\"]\n"
    )), "{mermaid}");
    let dot = ok(opship().args([
        "catalog",
        "graph",
        index.to_str().unwrap(),
        "--format",
        "dot",
    ]));
    assert!(dot.starts_with("digraph catalog {"), "{dot}");

    // A basic template naming the sample's bundle directories renders to the same bundles.
    let t = tmp.path().join("basic.yaml");
    std::fs::write(&t, format!(
        "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: {PKG}\n  defaultChannel: stable\n- schema: olm.channel\n  name: stable\n  package: {PKG}\n  entries:\n  - name: {PKG}.v0.1.0\n- schema: olm.bundle\n  image: {}\n",
        tracked("bundle/0.1.0").display()
    )).unwrap();
    let out = ok(opship().args([
        "catalog",
        "template",
        "basic",
        t.to_str().unwrap(),
        "-o",
        "yaml",
    ]));
    assert!(
        out.contains("schema: olm.bundle\n") && out.contains(&format!("name: {PKG}.v0.1.0\n")),
        "{out}"
    );
}

/// A two-platform "opm" base image (each platform's `/bin/opm` says its architecture) as an
/// OCI index in a layout, tagged `latest`.
fn fake_opm_base(dir: &Path) -> PathBuf {
    use opship_core::image::{layer, layout::Layout, oci::Digest};
    let layout_dir = dir.join("opm-base");
    let layout = Layout::new(&layout_dir);
    layout.init().unwrap();
    let mut platforms = Vec::new();
    for arch in ["amd64", "arm64"] {
        let root = dir.join(format!("rootfs-{arch}"));
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(
            root.join("bin/opm"),
            format!("#!/bin/sh\necho opm {arch}\n"),
        )
        .unwrap();
        let l = layer::build(&layer::collect(&root, &["bin"]).unwrap(), 0).unwrap();
        layout.write_blob(&l.digest, &l.gzip).unwrap();
        let config = serde_json::json!({
            "architecture": arch, "os": "linux",
            "config": {"Labels": {"base": "opm"}, "Entrypoint": ["/bin/sh"]},
            "rootfs": {"type": "layers", "diff_ids": [l.diff_id.to_string()]},
            "history": [{"created_by": "fake opm base"}],
        });
        let config = serde_json::to_vec(&config).unwrap();
        layout.write_blob(&Digest::of(&config), &config).unwrap();
        let manifest = serde_json::json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": Digest::of(&config).to_string(), "size": config.len()},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": l.digest.to_string(), "size": l.gzip.len()}],
        });
        let manifest = serde_json::to_vec(&manifest).unwrap();
        layout
            .write_blob(&Digest::of(&manifest), &manifest)
            .unwrap();
        platforms.push(serde_json::json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": Digest::of(&manifest).to_string(), "size": manifest.len(),
            "platform": {"architecture": arch, "os": "linux"},
        }));
    }
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": platforms,
    }))
    .unwrap();
    layout.write_blob(&Digest::of(&index), &index).unwrap();
    std::fs::write(
        layout_dir.join("index.json"),
        serde_json::to_vec(&serde_json::json!({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "digest": Digest::of(&index).to_string(), "size": index.len(),
            "annotations": {"org.opencontainers.image.ref.name": "latest"},
        }]}))
        .unwrap(),
    )
    .unwrap();
    layout_dir
}

#[test]
fn catalog_on_a_multi_arch_opm_base_stays_multi_arch() {
    let tmp = tempfile::tempdir().unwrap();
    let index = seeded_index(tmp.path());
    let base = fake_opm_base(tmp.path());
    let out = tmp.path().join("out");
    let o = out.to_str().unwrap();
    ok(opship().args([
        "catalog",
        "build",
        index.to_str().unwrap(),
        "--base",
        &format!("oci:{}:latest", base.display()),
        "--layout",
        o,
        "--tag",
        "v0",
    ]));
    let raw: Value = serde_json::from_str(&ok(tool("skopeo").args([
        "inspect",
        "--raw",
        &format!("oci:{o}:v0"),
    ])))
    .unwrap();
    let archs: Vec<&str> = raw["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["platform"]["architecture"].as_str().unwrap())
        .collect();
    assert_eq!(archs, ["amd64", "arm64"]);
    for arch in ["amd64", "arm64"] {
        let config: Value = serde_json::from_str(&ok(tool("skopeo").args([
            "--override-arch",
            arch,
            "inspect",
            "--config",
            &format!("oci:{o}:v0"),
        ])))
        .unwrap();
        assert_eq!(config["architecture"], arch);
        assert_eq!(
            config["config"]["Labels"]["operators.operatorframework.io.index.configs.v1"],
            "/configs"
        );
        assert_eq!(config["config"]["Labels"]["base"], "opm");
        assert_eq!(
            config["config"]["Entrypoint"],
            serde_json::json!(["/bin/opm"])
        );
        assert_eq!(
            config["config"]["Cmd"],
            serde_json::json!(["serve", "/configs"])
        );
        // The platform image unpacks to the base's /bin/opm plus the catalog in /configs.
        let single = tmp.path().join(format!("single-{arch}"));
        ok(tool("skopeo").args([
            "--override-arch",
            arch,
            "copy",
            "--quiet",
            &format!("oci:{o}:v0"),
            &format!("oci:{}:x", single.display()),
        ]));
        let rootfs = tmp.path().join(format!("unpacked-{arch}"));
        ok(tool("umoci").args([
            "unpack",
            "--rootless",
            "--image",
            &format!("{}:x", single.display()),
            rootfs.to_str().unwrap(),
        ]));
        assert_eq!(
            std::fs::read_to_string(rootfs.join("rootfs/bin/opm")).unwrap(),
            format!("#!/bin/sh\necho opm {arch}\n")
        );
        assert_eq!(
            crate::read_tree(&rootfs.join("rootfs/configs")),
            crate::read_tree(&index)
        );
    }
}

/// `index/` of the repository is the sample operator's catalog as `catalog add` makes it from
/// `bundle/0.1.0`..`0.3.0` (the releases of `bundle/opship.yaml`); it must stay up to date.
#[test]
fn committed_index_is_up_to_date() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        let mut c = opship();
        c.args([
            "catalog",
            "add",
            "--bundle",
            tracked("bundle").join(v).to_str().unwrap(),
            "--image",
            &format!("quay.io/example/memcached-operator-bundle:v{v}"),
            "--channel",
            "stable",
            "--index",
            index.to_str().unwrap(),
        ]);
        if v == "0.3.0" {
            c.args(["--skip-range-value", ">=0.1.0 <0.3.0"]);
        }
        ok(&mut c);
    }
    assert_eq!(
        crate::read_tree(&index),
        crate::read_tree(&tracked("index")),
        "index/ is stale: regenerate it as this test does (docs/catalog.md)"
    );
    validate(&tracked("index"));
}

/// `catalogs:` targets in opship.yaml: one release added to a 4.16 and a 4.17 catalog gets the
/// CSV format each OpenShift version requires, the target's directory and channels.
#[test]
fn config_targets_pick_directory_format_and_channels() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("opship.yaml");
    std::fs::write(
        &cfg,
        "package: memcached-operator\nchannels: [stable]\ncatalogs:\n  - name: v4.16\n    dir: catalogs/v4.16\n    ocpVersion: \"4.16\"\n  - name: v4.17\n    dir: catalogs/v4.17\n    ocpVersion: \"4.17\"\n    channels: [stable, fast]\n    skipRange: minor\n",
    )
    .unwrap();
    for target in ["v4.16", "v4.17"] {
        for v in ["0.1.0", "0.2.0"] {
            ok(opship().args([
                "-c",
                cfg.to_str().unwrap(),
                "catalog",
                "add",
                "--target",
                target,
                "--bundle",
                tracked("bundle").join(v).to_str().unwrap(),
                "--image",
                &format!("quay.io/example/memcached-operator-bundle:v{v}"),
            ]));
        }
    }
    let c416 = tmp.path().join("catalogs/v4.16");
    let c417 = tmp.path().join("catalogs/v4.17");
    validate(&c416);
    validate(&c417);
    let props = |dir: &Path| -> Vec<String> {
        blobs(dir)
            .into_iter()
            .filter(|b| b["schema"] == "olm.bundle")
            .flat_map(|b| {
                b["properties"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["type"].as_str().unwrap().to_owned())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    assert!(props(&c416).iter().any(|t| t == "olm.bundle.object"));
    assert!(!props(&c416).iter().any(|t| t == "olm.csv.metadata"));
    assert!(props(&c417).iter().any(|t| t == "olm.csv.metadata"));
    assert!(!props(&c417).iter().any(|t| t == "olm.bundle.object"));
    assert_eq!(channels(&c416).keys().collect::<Vec<_>>(), ["stable"]);
    assert_eq!(
        channels(&c417).keys().collect::<Vec<_>>(),
        ["fast", "stable"]
    );
    // The 4.17 target's skipRange policy is minor; 0.2.0 is the first of its minor: none.
    assert_eq!(
        channels(&c417)["stable"][1],
        e(&format!("{PKG}.v0.2.0"), &format!("{PKG}.v0.1.0"), "")
    );
    let r = run(opship().args([
        "-c",
        cfg.to_str().unwrap(),
        "catalog",
        "add",
        "--target",
        "v9",
        "--bundle",
        "x",
    ]));
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("no catalog target `v9`") && r.stderr.contains("v4.16, v4.17"),
        "{}",
        r.stderr
    );
}

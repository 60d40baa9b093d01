//! Hostile input, third round (issue 28): YAML alias bombs in every configuration-type input
//! stay far below 512 MB (measured as the process's own peak RSS), an image reference that is
//! not one is refused before anything is written, a kustomization that is not a regular file
//! is an error, and catalog templates never read a local directory as a catalog.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Run, opship, run, sample_copy, tracked};

/// The most a hostile input may make opship take.
const MAX_RSS_KIB: u64 = 512 * 1024;

/// Runs opship with `args` in `dir` under GNU time (its peak RSS) and, as a safety net for the
/// machine, an address-space limit of 4 GiB. Returns the run and the peak RSS in KiB.
pub(crate) fn measured(dir: &Path, args: &[&str]) -> (Run, u64) {
    measured_env(dir, args, &[])
}

/// [`measured`] with extra environment variables.
fn measured_env(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> (Run, u64) {
    let bin: PathBuf = std::env::var_os("OPSHIP_TEST_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_opship").into())
        .into();
    let rss = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--as={}", 4u64 << 30))
        .args(["--", "/usr/bin/time", "-f", "%M", "-o"])
        .arg(rss.path())
        .arg(bin)
        .args(args)
        .current_dir(dir)
        .env_remove("SOURCE_DATE_EPOCH")
        .env_remove("OPSHIP_CONFIG")
        .env("NO_COLOR", "1")
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .envs(envs.iter().copied());
    let r = run(&mut cmd);
    let text = std::fs::read_to_string(rss.path()).unwrap();
    let kib = text
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no RSS from GNU time: {text:?}; stderr {}", r.stderr));
    (r, kib)
}

/// Ten levels of ten aliases: 10^10 nodes if expanded.
fn alias_bomb(indent: &str) -> String {
    let mut s = format!("{indent}a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = format!("*a{}", i - 1);
        s.push_str(&format!(
            "{indent}a{i}: &a{i} [{}]\n",
            vec![p; 10].join(", ")
        ));
    }
    s
}

/// Issue 28's scalar: 3.5 MB named 9,990 times (35 GB if copied), within the 4 MiB of a
/// configuration file.
fn aliased_scalar(indent: &str) -> String {
    let mut s = format!(
        "{indent}big: &s \"{}\"\n{indent}uses:\n",
        "x".repeat(3_500_000)
    );
    for _ in 0..9_990 {
        s.push_str(&format!("{indent}- *s\n"));
    }
    s
}

fn refused_small(what: &str, (r, kib): (Run, u64), file: &str) {
    eprintln!("{what}: exit {}, peak RSS {} MiB", r.code, kib / 1024);
    assert_eq!(r.code, 2, "{what}: {}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(file) && r.stderr.contains("aliases and anchors copy more than"),
        "{what}: {}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert!(kib < MAX_RSS_KIB, "{what}: peak RSS {kib} KiB");
}

#[test]
fn yaml_alias_bombs_stay_small_in_every_configuration_input() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (_s, sample) = sample_copy();
    let bundle = tracked("bundle/0.1.0");
    for (kind, body) in [("bomb", alias_bomb("")), ("scalar", aliased_scalar(""))] {
        // PROJECT of an operator-sdk project.
        let project = t.join(format!("project-{kind}"));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("PROJECT"), &body).unwrap();
        refused_small(
            &format!("PROJECT {kind}"),
            measured(
                t,
                &["init", "--from-operator-sdk", project.to_str().unwrap()],
            ),
            "PROJECT",
        );
        // An inline ClusterExtension config.
        let inline = t.join(format!("inline-{kind}.yaml"));
        std::fs::write(&inline, &body).unwrap();
        refused_small(
            &format!("--inline-config {kind}"),
            measured(
                t,
                &[
                    "manifests",
                    bundle.to_str().unwrap(),
                    "-n",
                    "ops",
                    "--inline-config",
                    inline.to_str().unwrap(),
                ],
            ),
            "inline-",
        );
        // A manifest stream (what kustomize prints).
        let stream = t.join(format!("stream-{kind}.yaml"));
        std::fs::write(&stream, format!("apiVersion: v1\nkind: ConfigMap\n{body}")).unwrap();
        let out = t.join(format!("out-{kind}"));
        refused_small(
            &format!("manifest stream {kind}"),
            measured(
                &sample,
                &[
                    "-c",
                    "opship.yaml",
                    "generate",
                    "bundle",
                    "--version",
                    "0.3.0",
                    "-i",
                    stream.to_str().unwrap(),
                    "-o",
                    out.to_str().unwrap(),
                ],
            ),
            "stream-",
        );
        assert!(!out.exists(), "nothing written");
        // A YAML catalog.
        let catalog = t.join(format!("catalog-{kind}"));
        std::fs::create_dir_all(catalog.join("pkg")).unwrap();
        std::fs::write(
            catalog.join("pkg/catalog.yaml"),
            format!("schema: olm.package\nname: pkg\n{body}"),
        )
        .unwrap();
        refused_small(
            &format!("catalog {kind}"),
            measured(t, &["catalog", "render", catalog.to_str().unwrap()]),
            "catalog.yaml",
        );
        // A catalog template.
        let template = t.join(format!("template-{kind}.yaml"));
        std::fs::write(&template, format!("schema: olm.package\nname: pkg\n{body}")).unwrap();
        refused_small(
            &format!("template {kind}"),
            measured(
                t,
                &["catalog", "template", "basic", template.to_str().unwrap()],
            ),
            "template-",
        );
    }
}

fn generate(dir: &Path, out: &Path, extra: &[&str]) -> Run {
    run(opship()
        .current_dir(dir)
        .args([
            "-c",
            "opship.yaml",
            "generate",
            "bundle",
            "--version",
            "0.3.0",
            "-o",
        ])
        .arg(out)
        .args(extra))
}

#[test]
fn generate_refuses_an_image_reference_that_is_not_one() {
    let (_t, dir) = sample_copy();
    let out = dir.join("out");
    // The operator image from opship.yaml (the flag has its own check).
    let cfg = dir.join("opship.yaml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace(
            "image: quay.io/example/memcached-operator",
            "image: \"x\\nmalicious: yes\"",
        ),
    )
    .unwrap();
    let r = generate(&dir, &out, &[]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("not an image reference") && r.stderr.contains("BND007"),
        "{}",
        r.stderr
    );
    assert!(!out.exists(), "nothing written");
    // The same in a manifest: refused with the file and line of the container's image.
    let (_t, dir) = sample_copy();
    let cfg = dir.join("config/manager/manager.yaml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("image: controller"))
        .unwrap()
        + 1;
    std::fs::write(
        &cfg,
        text.replace("image: controller:latest", "image: \"Quay.io/UPPER/op:v1\""),
    )
    .unwrap();
    let r = generate(&dir, &out, &[]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("not an image reference") && r.stderr.contains(&format!(":{line}:")),
        "line {line}: {}",
        r.stderr
    );
    assert!(!out.exists(), "nothing written");
    // A good reference still works.
    let (_t, dir) = sample_copy();
    let r = generate(&dir, &out, &["--operator-image", "quay.io/example/op:v1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_kustomization_that_is_not_a_regular_file_is_an_error() {
    for kind in ["directory", "fifo"] {
        let tmp = tempfile::tempdir().unwrap();
        let input = tmp.path().join("manifests");
        std::fs::create_dir_all(&input).unwrap();
        std::fs::write(
            input.join("cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
        )
        .unwrap();
        let k = input.join("kustomization.yaml");
        if kind == "directory" {
            std::fs::create_dir(&k).unwrap();
            std::fs::write(
                k.join("x.yaml"),
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\n",
            )
            .unwrap();
        } else {
            assert!(Command::new("mkfifo").arg(&k).status().unwrap().success());
        }
        let out = tmp.path().join("out");
        let r = run(opship()
            .current_dir(tmp.path())
            .args([
                "generate",
                "bundle",
                "--package",
                "p",
                "--version",
                "0.1.0",
                "-i",
                input.to_str().unwrap(),
                "-o",
            ])
            .arg(&out));
        assert_eq!(r.code, 2, "{kind}: {}\n{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("kustomization.yaml")
                && r.stderr.contains("a kustomization must be a regular file"),
            "{kind}: {}",
            r.stderr
        );
        assert!(!out.exists(), "{kind}: nothing written");
    }
}

#[test]
fn templates_never_read_a_local_directory_as_a_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    // A directory holding a "secret": read as a catalog, its content ended up in the error.
    let secret = tmp.path().join("docker");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(
        secret.join("config.json"),
        "{\"auths\": {\"quay.io\": {\"auth\": \"c2VjcmV0LXRva2Vu\"}}}",
    )
    .unwrap();
    for image in [secret.to_str().unwrap(), "/etc"] {
        let t = tmp.path().join("basic.yaml");
        std::fs::write(
            &t,
            format!(
                "schema: olm.template.basic\nentries:\n- schema: olm.bundle\n  image: {image}\n"
            ),
        )
        .unwrap();
        let r = run(opship().args(["catalog", "template", "basic", t.to_str().unwrap()]));
        assert_eq!(r.code, 2, "{image}: {}\n{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("not a bundle directory") && r.stderr.contains("basic.yaml"),
            "{image}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("c2VjcmV0"), "{}", r.stderr);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
    }
}

#[test]
fn build_applies_the_readers_limits_before_reading() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bundle");
    crate::copy_dir(&tracked("bundle/0.1.0"), &bundle);
    // 420 MB (sparse: no disk used), past `validate`'s 64 MiB per file.
    std::fs::File::create(bundle.join("manifests/huge.yaml"))
        .unwrap()
        .set_len(420_000_000)
        .unwrap();
    let layout = tmp.path().join("oci");
    let lay = layout.to_str().unwrap();
    let (r, kib) = measured(
        tmp.path(),
        &["build", bundle.to_str().unwrap(), "--layout", lay],
    );
    eprintln!(
        "build of a 420 MB file: exit {}, peak RSS {} MiB",
        r.code,
        kib / 1024
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("huge.yaml") && r.stderr.contains("larger than 67108864 bytes"),
        "{}",
        r.stderr
    );
    // Refused on its size, before a byte of it was read.
    assert!(kib < 64 * 1024, "peak RSS {kib} KiB");
    let blobs = layout.join("blobs/sha256");
    assert!(
        !blobs.exists() || std::fs::read_dir(&blobs).unwrap().next().is_none(),
        "no image written"
    );
    // Just within the limit: built, and `validate` reads the same bundle.
    std::fs::write(bundle.join("manifests/huge.yaml"), "").unwrap();
    let r = run(opship().args(["build", bundle.to_str().unwrap(), "--layout", lay]));
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// Issue 28, finding 5: a 300 MB predicate is refused by its size before it is read; a large
/// honest one (44 MiB of SBOM-like objects) is signed in both formats within the memory bound.
#[test]
fn attest_predicates_are_bounded_in_size_and_memory() {
    let s = crate::sign::Setup::new();
    let (key, _public) = s.keys("k", "pw");
    let home = s.home.to_str().unwrap().to_owned();
    let key = key.to_str().unwrap().to_owned();
    let image = s.image("v0.3.0");
    let attest = |predicate: &Path, extra: &[&str]| {
        let mut args = vec![
            "attest",
            "--key",
            key.as_str(),
            "--type",
            "cyclonedx",
            "--predicate",
            predicate.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.push(image.as_str());
        measured_env(
            s.tmp.path(),
            &args,
            &[("HOME", home.as_str()), ("COSIGN_PASSWORD", "pw")],
        )
    };

    let huge = s.path("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(300 * 1024 * 1024)
        .unwrap();
    let (r, kib) = attest(&huge, &[]);
    eprintln!(
        "300 MB predicate: exit {}, peak RSS {} MiB",
        r.code,
        kib / 1024
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("huge.json") && r.stderr.contains("attestation predicate"),
        "{}",
        r.stderr
    );
    assert!(kib < MAX_RSS_KIB, "peak RSS {kib} KiB");

    // Many small objects: what makes a parsed tree cost several times the file.
    let big = s.path("sbom.json");
    let mut text = String::from("{\"bomFormat\":\"CycloneDX\",\"components\":[");
    let mut i = 0;
    while text.len() < 44 * 1024 * 1024 {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            "{{\"type\":\"library\",\"name\":\"c{i}\",\"version\":\"1.{i}\"}}"
        ));
        i += 1;
    }
    text.push_str("]}");
    std::fs::write(&big, &text).unwrap();
    drop(text);
    for extra in [&[][..], &["--bundle-format"][..]] {
        let (r, kib) = attest(&big, extra);
        eprintln!(
            "44 MiB predicate {extra:?}: exit {}, peak RSS {} MiB",
            r.code,
            kib / 1024
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert!(kib < MAX_RSS_KIB, "{extra:?}: peak RSS {kib} KiB");
    }
}

/// Adds `count` layers of `size` bytes (one blob, named `count` times, with a signature that
/// does not verify) to the `.sig` manifest of `image` in `layout`.
fn bloat_signatures(layout: &Path, image: &str, count: usize, size: usize) {
    use opship_core::image::oci::Digest;
    let blob = |d: &str| {
        layout
            .join("blobs/sha256")
            .join(d.trim_start_matches("sha256:"))
    };
    let index_path = layout.join("index.json");
    let mut index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&index_path).unwrap()).unwrap();
    let tag = format!("sha256-{}.sig", image.trim_start_matches("sha256:"));
    let entry = index["manifests"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag.as_str())
        .expect("a .sig manifest in the layout");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(blob(entry["digest"].as_str().unwrap())).unwrap())
            .unwrap();
    let big = vec![b'x'; size];
    let big_digest = Digest::of(&big).to_string();
    std::fs::write(blob(&big_digest), &big).unwrap();
    let layer = serde_json::json!({
        "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
        "digest": big_digest,
        "size": size,
        "annotations": {"dev.cosignproject.cosign/signature": "MEUCIQDx"},
    });
    let layers = manifest["layers"].as_array_mut().unwrap();
    layers.extend(std::iter::repeat_n(layer, count));
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let digest = Digest::of(&bytes).to_string();
    std::fs::write(blob(&digest), &bytes).unwrap();
    entry["digest"] = digest.into();
    entry["size"] = bytes.len().into();
    std::fs::write(&index_path, serde_json::to_vec(&index).unwrap()).unwrap();
}

/// Issue 28, finding 2: `verify` judges one signature layer at a time, so a `.sig` manifest of
/// many large layers (1,000 x 1.4 MB in a layout, 40 x 15 MB in a registry: 1.4 GB and 600 MB
/// if held together) stays far below 512 MB, and the honest signature among them verifies.
#[test]
fn verify_of_many_large_signature_layers_stays_small() {
    let s = crate::sign::Setup::new();
    let (key, public) = s.keys("k", "pw");
    let home = s.home.to_str().unwrap().to_owned();
    let public = public.to_str().unwrap().to_owned();
    let layout = s.path("bloated");
    let (built, digest) = crate::support_registry::build(&s.path("b"), "0.3.0");
    std::fs::rename(&built, &layout).unwrap();
    let target = format!("{}:0.3.0", layout.display());
    let identity = format!("{}/bloated", s.reg.addr);
    crate::support_registry::ok(
        s.sign(&key, "pw", &["--identity", &identity], &target),
        "sign the layout image",
    );
    bloat_signatures(&layout, &digest, 1_000, 1_400_000);
    let envs = [("HOME", home.as_str())];
    let (r, kib) = measured_env(
        s.tmp.path(),
        &["verify", "--key", &public, "--identity", &identity, &target],
        &envs,
    );
    eprintln!(
        "layout, 1,000 layers of 1.4 MB: exit {}, peak RSS {} MiB",
        r.code,
        kib / 1024
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(kib < MAX_RSS_KIB, "peak RSS {kib} KiB");

    // The same image in a registry, its `.sig` of 40 layers of 15 MB.
    let layout2 = s.path("bloated2");
    let (built, digest2) = crate::support_registry::build(&s.path("c"), "0.3.0");
    assert_eq!(digest, digest2);
    std::fs::rename(&built, &layout2).unwrap();
    let target2 = format!("{}:0.3.0", layout2.display());
    crate::support_registry::ok(
        s.sign(&key, "pw", &["--identity", &identity], &target2),
        "sign",
    );
    bloat_signatures(&layout2, &digest, 40, 15_000_000);
    let image = format!("{}/bloated:v0.3.0", s.reg.addr);
    crate::support_registry::ok(
        crate::run(crate::support_registry::isolated(&s.home).args(["push", &target2, &image])),
        "push with the signature",
    );
    let (r, kib) = measured_env(s.tmp.path(), &["verify", "--key", &public, &image], &envs);
    eprintln!(
        "registry, 40 layers of 15 MB: exit {}, peak RSS {} MiB",
        r.code,
        kib / 1024
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(kib < MAX_RSS_KIB, "peak RSS {kib} KiB");
}

/// Issue 28, finding 6: one package of 50,000 bundles in a replaces chain (the shape,
/// about 12 MB here), and one of 20,000 channels, are validated, rendered and graphed; each
/// pass was quadratic in the documents of the file and did not finish. No time is asserted: a quadratic pass makes this
/// test run for hours instead of seconds. Peak RSS stays under the bound.
#[test]
fn a_long_replaces_chain_is_validated_rendered_and_graphed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("catalog/chain");
    std::fs::create_dir_all(&dir).unwrap();
    let n = 50_000;
    let mut text = String::from(
        "{\"schema\":\"olm.package\",\"name\":\"chain\",\"defaultChannel\":\"stable\"}\n",
    );
    let name = |i: usize| format!("chain.v{}.{}.0", i / 100, i % 100);
    let entries: Vec<String> = (0..n)
        .map(|i| match i {
            0 => format!("{{\"name\":\"{}\"}}", name(i)),
            _ => format!(
                "{{\"name\":\"{}\",\"replaces\":\"{}\"}}",
                name(i),
                name(i - 1)
            ),
        })
        .collect();
    text.push_str(&format!(
        "{{\"schema\":\"olm.channel\",\"name\":\"stable\",\"package\":\"chain\",\"entries\":[{}]}}\n",
        entries.join(",")
    ));
    for i in 0..n {
        text.push_str(&format!(
            "{{\"schema\":\"olm.bundle\",\"name\":\"{}\",\"package\":\"chain\",\"image\":\"quay.io/x/chain-bundle:v{}.{}.0\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"chain\",\"version\":\"{}.{}.0\"}}}}]}}\n",
            name(i), i / 100, i % 100, i / 100, i % 100
        ));
    }
    std::fs::write(dir.join("catalog.json"), text).unwrap();

    // The other shape: 20,000 channels of one entry each (127 s before).
    let dir = tmp.path().join("channels/wide");
    std::fs::create_dir_all(&dir).unwrap();
    let mut text =
        String::from("{\"schema\":\"olm.package\",\"name\":\"wide\",\"defaultChannel\":\"c0\"}\n");
    for i in 0..20_000 {
        text.push_str(&format!(
            "{{\"schema\":\"olm.channel\",\"name\":\"c{i}\",\"package\":\"wide\",\"entries\":[{{\"name\":\"wide.v{}.{}.0\"}}]}}\n",
            i / 100,
            i % 100
        ));
    }
    for i in 0..20_000 {
        let v = format!("{}.{}.0", i / 100, i % 100);
        text.push_str(&format!(
            "{{\"schema\":\"olm.bundle\",\"name\":\"wide.v{v}\",\"package\":\"wide\",\"image\":\"quay.io/x/wide-bundle:v{v}\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"wide\",\"version\":\"{v}\"}}}}]}}\n"
        ));
    }
    std::fs::write(dir.join("catalog.json"), text).unwrap();

    for catalog in ["catalog", "channels"] {
        let catalog = tmp.path().join(catalog);
        let catalog = catalog.to_str().unwrap();
        for args in [
            &["catalog", "validate", catalog][..],
            &["catalog", "render", catalog, "-o", "json"][..],
            &["catalog", "graph", catalog][..],
        ] {
            let (r, kib) = measured(tmp.path(), args);
            eprintln!("{args:?}: exit {}, peak RSS {} MiB", r.code, kib / 1024);
            assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
            assert!(kib < MAX_RSS_KIB, "{args:?}: peak RSS {kib} KiB");
        }
    }
}

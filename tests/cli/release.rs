//! `opship release` end to end on a copy of the sample operator: three versions to a real
//! registry, every artefact checked by another tool (skopeo, the openssl cosign verifier, the
//! Helm SDK, the catalog rendered from the pushed images); the embedded default with nothing
//! configured; a registry killed in the middle of a release and the re-run that finishes it
//! with exactly one set of artefacts; and `--dry-run` changing nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::support_registry::{
    TestRegistry, http_get, isolated, json, ok, require, skopeo, skopeo_inspect,
};
use crate::{Run, read_tree, repo, run, sample_copy};

/// The Python with helm-python-sdk (scripts/test makes .venv; OPSHIP_PYTHON names another).
fn python() -> PathBuf {
    std::env::var_os("OPSHIP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"))
}

/// `helm_check.py lint CHART` with the real Helm engine; fails on any lint error.
fn helm_lint(chart: &Path) {
    let out = Command::new(python())
        .arg(repo().join("tests/scripts/helm_check.py"))
        .arg("lint")
        .arg(chart)
        .output()
        .unwrap_or_else(|e| panic!("no Python with helm-python-sdk ({e}); run scripts/test"));
    assert!(
        out.status.success(),
        "helm lint {}: {}",
        chart.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(v["errors"], serde_json::json!([]), "{v}");
    assert_eq!(v["total_charts_linted"], 1, "{v}");
}

/// The openssl/curl/jq cosign verifier (shares no code with opship).
fn openssl_verify(reg: &str, repo_name: &str, reference: &str, public: &Path) -> Run {
    for tool in ["openssl", "curl", "jq"] {
        require(tool, tool);
    }
    run(Command::new("bash")
        .arg(repo().join("tests/scripts/verify-cosign.sh"))
        .args([reg, repo_name, reference])
        .arg(public))
}

/// `opship -c bundle/opship.yaml release --version V ARGS...` in `dir` (the temp project).
fn release(dir: &Path, home: &Path, version: &str, extra: &[&str]) -> Run {
    run(isolated(home)
        .current_dir(dir)
        .args(["-c", "bundle/opship.yaml", "release", "--version", version])
        .args(extra))
}

fn release_json(dir: &Path, home: &Path, version: &str, registry: &str) -> serde_json::Value {
    let r = ok(
        release(dir, home, version, &["--registry", registry, "-o", "json"]),
        "opship release",
    );
    json(&r.stdout)
}

fn status_of(summary: &serde_json::Value, id: &str) -> String {
    summary["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}: {summary}"))["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The JSON objects of an FBC stream (`opship catalog render -o json`).
fn fbc(text: &str) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .map(Result::unwrap)
        .collect()
}

/// Tags of a repository straight from the registry (sorted).
fn tags(addr: &str, repository: &str) -> Vec<String> {
    let (status, body) =
        http_get(addr, &format!("/v2/{repository}/tags/list"), &[]).expect("registry reachable");
    if status == 404 {
        return vec![];
    }
    let mut t: Vec<String> = json(&body)["tags"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    t.sort();
    t
}

/// The tags of a repository that are not cosign signatures or attestations, and how many
/// signature (`.sig`) and attestation (`.att`) tags there are besides.
fn release_tags(addr: &str, repository: &str) -> (Vec<String>, usize, usize) {
    let (cosign, rest): (Vec<String>, Vec<String>) = tags(addr, repository)
        .into_iter()
        .partition(|t| t.starts_with("sha256-") && (t.ends_with(".sig") || t.ends_with(".att")));
    let atts = cosign.iter().filter(|t| t.ends_with(".att")).count();
    (rest, cosign.len() - atts, atts)
}

/// Every manifest of every tag of the release's repositories: what a registry "holds".
fn registry_content(addr: &str, ns: &str) -> Vec<(String, String, String)> {
    let accept = "application/vnd.oci.image.manifest.v1+json, \
                  application/vnd.docker.distribution.manifest.v2+json";
    let mut out = Vec::new();
    for r in [
        "memcached-operator-bundle",
        "memcached-operator-catalog",
        "memcached-operator",
    ] {
        let repository = format!("{ns}/{r}");
        for t in tags(addr, &repository) {
            let (_, body) = http_get(
                addr,
                &format!("/v2/{repository}/manifests/{t}"),
                &[("Accept", accept)],
            )
            .unwrap();
            out.push((repository.clone(), t, body));
        }
    }
    out
}

#[test]
fn release_three_versions_to_a_registry_checked_by_other_tools() {
    let reg = TestRegistry::start(None);
    let (tmp, _) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let ns = format!("{}/sample", reg.addr);
    let mut summaries = Vec::new();
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        let s = release_json(tmp.path(), home.path(), v, &ns);
        for id in [
            "push-bundle",
            "sign",
            "push-catalog:bundle/index",
            "push-chart",
        ] {
            assert_eq!(status_of(&s, id), "ran", "{id} of {v}: {s}");
        }
        summaries.push((v, s));
    }
    let public = tmp.path().join("bundle/.opship/cosign.pub");
    let catalog_dir = tmp.path().join("bundle/index");
    for (v, s) in &summaries {
        let digest = s["bundle"]["digest"].as_str().unwrap();
        // skopeo sees the bundle image under its tag with the summary's digest and labels.
        let bundle_ref = format!("{ns}/memcached-operator-bundle:v{v}");
        assert_eq!(s["bundle"]["reference"], bundle_ref.as_str());
        let b = skopeo_inspect(&bundle_ref);
        assert_eq!(b["Digest"], digest, "{b}");
        assert_eq!(
            b["Labels"]["operators.operatorframework.io.bundle.package.v1"],
            "memcached-operator"
        );
        // The catalog image of this release.
        let cat = &s["catalogs"][0]["image"];
        let c = skopeo_inspect(cat["reference"].as_str().unwrap());
        assert_eq!(c["Digest"], cat["digest"], "{c}");
        assert!(
            c["Labels"]["operators.operatorframework.io.index.configs.v1"].is_string(),
            "{c}"
        );
        // The signature, checked with openssl against the generated public key.
        let r = openssl_verify(
            &reg.addr,
            "sample/memcached-operator-bundle",
            &format!("v{v}"),
            &public,
        );
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        // The chart archive lints clean with the Helm engine; the registry has its tag.
        helm_lint(&tmp.path().join(s["chart"]["archive"].as_str().unwrap()));
        assert!(
            tags(&reg.addr, "sample/memcached-operator").contains(&v.to_string()),
            "chart {v} not pushed"
        );
    }
    // The catalog validates and its bundles are exactly what the pushed images render to.
    ok(
        run(isolated(home.path())
            .args(["catalog", "validate"])
            .arg(&catalog_dir)),
        "catalog validate",
    );
    let rendered = ok(
        run(isolated(home.path())
            .args(["catalog", "render", "-o", "json"])
            .arg(&catalog_dir)),
        "catalog render",
    );
    let in_catalog: Vec<serde_json::Value> = fbc(&rendered.stdout)
        .into_iter()
        .filter(|o| o["schema"] == "olm.bundle")
        .collect();
    assert_eq!(in_catalog.len(), 3);
    for (v, s) in &summaries {
        let image = format!(
            "{ns}/memcached-operator-bundle@{}",
            s["bundle"]["digest"].as_str().unwrap()
        );
        let from_image = ok(
            run(isolated(home.path()).args(["catalog", "render", "-o", "json", &image])),
            "catalog render of the pushed bundle image",
        );
        let expected = fbc(&from_image.stdout)
            .into_iter()
            .find(|o| o["schema"] == "olm.bundle")
            .unwrap();
        let found = in_catalog
            .iter()
            .find(|o| o["image"] == image.as_str())
            .unwrap_or_else(|| panic!("{v}: no catalog bundle with image {image}"));
        assert_eq!(found, &expected, "{v}");
    }
    // The channel is the upgrade graph of the config: 0.3.0 replaces 0.2.0 and skips below.
    let text =
        std::fs::read_to_string(catalog_dir.join("memcached-operator/catalog.yaml")).unwrap();
    assert!(
        text.contains("replaces: memcached-operator.v0.2.0"),
        "{text}"
    );
    assert!(text.contains("skipRange: \">=0.1.0 <0.3.0\""), "{text}");
}

#[test]
fn the_embedded_default_needs_no_registry_and_no_key() {
    let (tmp, _) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    // The README's main-job command, word for word, on a project that configures no registry
    // and no key.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let line = readme
        .lines()
        .find_map(|l| l.strip_prefix("cargo run --release -- "))
        .filter(|l| l.contains(" release "))
        .expect("README's quickstart runs `opship ... release`");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        words,
        ["-c", "bundle/opship.yaml", "release", "--version", "0.3.0"]
    );
    let r = ok(
        run(isolated(home.path()).current_dir(tmp.path()).args(&words)),
        "opship release (embedded default)",
    );
    assert!(
        r.stdout.contains("released memcached-operator 0.3.0"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("generated the signing key"),
        "{}",
        r.stderr
    );
    let b = tmp.path().join("bundle");
    // A valid OCI layout, as skopeo reads it.
    let out = skopeo()
        .arg("inspect")
        .arg(format!("oci:{}:0.3.0", b.join("dist/oci").display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let inspected = json(&String::from_utf8_lossy(&out.stdout));
    // The signature in the layout verifies with the generated public key.
    let key = b.join(".opship/cosign.key");
    let public = b.join(".opship/cosign.pub");
    ok(
        run(isolated(home.path())
            .args(["verify", "--key"])
            .arg(&public)
            .args(["--identity", "quay.io/example/memcached-operator-bundle"])
            .arg(format!("{}:0.3.0", b.join("dist/oci").display()))),
        "opship verify of the layout",
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for f in [&key, &b.join(".opship/cosign.password")] {
            let mode = std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", f.display());
        }
    }
    // The catalog validates and points at the built image by digest.
    ok(
        run(isolated(home.path())
            .args(["catalog", "validate"])
            .arg(b.join("index"))),
        "catalog validate",
    );
    let catalog = std::fs::read_to_string(b.join("index/memcached-operator/catalog.yaml")).unwrap();
    let digest = inspected["Digest"].as_str().unwrap();
    assert!(
        catalog.contains(&format!(
            "quay.io/example/memcached-operator-bundle@{digest}"
        )),
        "{catalog}"
    );
    // The chart, linted by the Helm engine.
    helm_lint(&b.join("dist/charts/memcached-operator-0.3.0.tgz"));
    helm_lint(&b.join("dist/charts/memcached-operator"));

    // Run again: everything is recognised as done, nothing changes, the key is kept.
    let key_before = std::fs::read(&key).unwrap();
    let tree = read_tree(tmp.path());
    let again = ok(
        release(tmp.path(), home.path(), "0.3.0", &["-o", "json"]),
        "second release",
    );
    let s = json(&again.stdout);
    assert_eq!(s["filesChanged"], serde_json::json!([]), "{s}");
    for st in s["steps"].as_array().unwrap() {
        if !st["id"].as_str().unwrap().starts_with("catalog-validate") {
            assert_eq!(st["status"], "done", "{st}");
        }
    }
    assert_eq!(std::fs::read(&key).unwrap(), key_before);
    assert_eq!(read_tree(tmp.path()), tree);
}

/// A proxy in front of the registry that kills the registry process when a request whose
/// first line contains `trigger` arrives (that request is never answered), and relays
/// everything else, one request per connection.
struct KillingProxy {
    addr: String,
    fired: Arc<AtomicBool>,
}

impl KillingProxy {
    fn start(upstream: &str, trigger: &str, registry_pid: u32) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let fired = Arc::new(AtomicBool::new(false));
        let (f, up, trig) = (fired.clone(), upstream.to_owned(), trigger.to_owned());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (f, up, trig) = (f.clone(), up.clone(), trig.clone());
                std::thread::spawn(move || relay(stream, &up, &trig, &f, registry_pid));
            }
        });
        KillingProxy { addr, fired }
    }

    /// From now on, relay everything (the registry runs again).
    fn disarm(&self) {
        self.fired.store(true, Ordering::SeqCst);
    }
}

fn relay(client: TcpStream, upstream: &str, trigger: &str, fired: &AtomicBool, pid: u32) {
    let mut reader = BufReader::new(client.try_clone().unwrap());
    let mut head = Vec::new();
    let mut first = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if first.is_empty() {
            first = line.clone();
        }
        if line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if !lower.starts_with("connection:") {
            head.extend_from_slice(line.as_bytes());
        }
    }
    if first.contains(trigger) && !fired.swap(true, Ordering::SeqCst) {
        // The registry dies while this request is in flight.
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let Ok(mut up) = TcpStream::connect(upstream) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    head.extend_from_slice(&body);
    if up.write_all(&head).is_err() {
        return;
    }
    let mut answer = Vec::new();
    let _ = up.read_to_end(&mut answer);
    let mut client = client;
    let _ = client.write_all(&answer);
    let _ = client.shutdown(Shutdown::Both);
}

#[test]
fn a_release_interrupted_by_a_dead_registry_finishes_when_run_again() {
    let mut reg = TestRegistry::start(None);
    let (tmp, _) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    // 0.1.0 is released normally, straight to the registry.
    let direct = format!("{}/sample", reg.addr);
    release_json(tmp.path(), home.path(), "0.1.0", &direct);
    let catalog_dir = tmp.path().join("bundle/index");
    let catalog_before = read_tree(&catalog_dir);

    // 0.2.0 goes through a proxy that kills the registry when the signature is written.
    let proxy = KillingProxy::start(
        &reg.addr,
        "PUT /v2/sample/memcached-operator-bundle/manifests/sha256-",
        reg.pid(),
    );
    let via_proxy = format!("{}/sample", proxy.addr);
    let failed = run(isolated(home.path())
        .current_dir(tmp.path())
        .env("OPSHIP_REGISTRY_RETRIES", "1")
        .env("OPSHIP_REGISTRY_TIMEOUT", "5")
        .args(["-c", "bundle/opship.yaml", "release", "--version", "0.2.0"])
        .args(["--registry", &via_proxy]));
    assert_eq!(failed.code, 2, "{}\n{}", failed.stdout, failed.stderr);
    assert!(
        failed.stderr.contains("stopped at step `sign`")
            && failed.stderr.contains("Run the same release again"),
        "{}",
        failed.stderr
    );
    assert!(failed.stdout.is_empty(), "{}", failed.stdout);
    // The failed release did not touch the catalog.
    assert_eq!(read_tree(&catalog_dir), catalog_before);

    // The registry comes back with its storage; the same command finishes the release.
    reg.restart();
    proxy.disarm();
    let r = ok(
        release(
            tmp.path(),
            home.path(),
            "0.2.0",
            &["--registry", &via_proxy, "-o", "json"],
        ),
        "re-run of the release",
    );
    let s = json(&r.stdout);
    assert_eq!(status_of(&s, "push-bundle"), "done", "{s}");
    assert_eq!(status_of(&s, "sign"), "ran", "{s}");
    assert_eq!(status_of(&s, "catalog-add:bundle/index"), "ran", "{s}");

    // Exactly one set of artefacts: two releases' tags, one signature and one provenance
    // attestation per image.
    let digest = s["bundle"]["digest"].as_str().unwrap();
    let sig_tag = format!("sha256-{}.sig", digest.trim_start_matches("sha256:"));
    let bundle_tags = tags(&reg.addr, "sample/memcached-operator-bundle");
    assert_eq!(bundle_tags.len(), 6, "{bundle_tags:?}");
    assert!(
        bundle_tags.contains(&sig_tag.replace(".sig", ".att")),
        "{bundle_tags:?}"
    );
    assert!(
        bundle_tags.contains(&"v0.1.0".to_owned()) && bundle_tags.contains(&"v0.2.0".to_owned())
    );
    assert!(bundle_tags.contains(&sig_tag), "{bundle_tags:?}");
    // The catalog image and the chart of each release, each with its one `.sig`.
    assert_eq!(
        release_tags(&reg.addr, "sample/memcached-operator-catalog"),
        (vec!["v0.1.0".to_owned(), "v0.2.0".to_owned()], 2, 2)
    );
    assert_eq!(
        release_tags(&reg.addr, "sample/memcached-operator"),
        (vec!["0.1.0".to_owned(), "0.2.0".to_owned()], 2, 0)
    );
    let (_, sig) = http_get(
        &reg.addr,
        &format!("/v2/sample/memcached-operator-bundle/manifests/{sig_tag}"),
        &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
    )
    .unwrap();
    // The summary names the `.sig` manifest the registry holds.
    assert_eq!(
        s["signature"]["digest"].as_str().unwrap(),
        opship_core::image::Digest::of(sig.as_bytes()).as_str()
    );
    assert_eq!(json(&sig)["layers"].as_array().unwrap().len(), 1, "{sig}");
    let public = tmp.path().join("bundle/.opship/cosign.pub");
    let v = openssl_verify(
        &reg.addr,
        "sample/memcached-operator-bundle",
        "v0.2.0",
        &public,
    );
    assert_eq!(v.code, 0, "{}\n{}", v.stdout, v.stderr);
    // The catalog holds each release once.
    let text =
        std::fs::read_to_string(catalog_dir.join("memcached-operator/catalog.yaml")).unwrap();
    assert_eq!(text.matches("schema: olm.bundle").count(), 2, "{text}");
}

#[test]
fn dry_run_changes_no_file_and_nothing_in_the_registry() {
    let reg = TestRegistry::start(None);
    let (tmp, _) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let ns = format!("{}/sample", reg.addr);
    // On a fresh project: nothing written at all.
    let fresh = read_tree(tmp.path());
    let r = ok(
        release(
            tmp.path(),
            home.path(),
            "0.1.0",
            &["--registry", &ns, "--dry-run"],
        ),
        "dry run on a fresh project",
    );
    assert_eq!(read_tree(tmp.path()), fresh);
    assert!(registry_content(&reg.addr, "sample").is_empty());
    for expected in [
        format!("{ns}/memcached-operator-bundle:v0.1.0"),
        format!("{ns}/memcached-operator-catalog:v0.1.0"),
        format!("oci://{ns}/memcached-operator:0.1.0"),
        "bundle/.opship/cosign.key".to_owned(),
        "bundle/index/memcached-operator".to_owned(),
        "bundle/dist/charts/memcached-operator-0.1.0.tgz".to_owned(),
        "attest --key bundle/.opship/cosign.key --password-file bundle/.opship/cosign.password \
         --type slsaprovenance1 --predicate bundle/dist/provenance/"
            .to_owned(),
    ] {
        assert!(
            r.stdout.contains(&expected),
            "{expected} not in the plan:\n{}",
            r.stdout
        );
    }

    // After a real release of 0.1.0, a dry run of 0.2.0 lists its steps, changes nothing.
    release_json(tmp.path(), home.path(), "0.1.0", &ns);
    let files = read_tree(tmp.path());
    let content = registry_content(&reg.addr, "sample");
    assert!(!content.is_empty());
    let r = ok(
        release(
            tmp.path(),
            home.path(),
            "0.2.0",
            &["--registry", &ns, "--dry-run", "-o", "json"],
        ),
        "dry run",
    );
    let plan = json(&r.stdout);
    assert_eq!(plan["dryRun"], true);
    assert_eq!(status_of(&plan, "push-bundle"), "planned", "{plan}");
    assert_eq!(status_of(&plan, "sign"), "planned", "{plan}");
    assert_eq!(status_of(&plan, "attest"), "planned", "{plan}");
    assert_eq!(
        status_of(&plan, "attest-catalog:bundle/index"),
        "planned",
        "{plan}"
    );
    assert!(
        plan["bundle"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(read_tree(tmp.path()), files);
    assert_eq!(registry_content(&reg.addr, "sample"), content);

    // A dry run of the released version finds every step done.
    let r = ok(
        release(
            tmp.path(),
            home.path(),
            "0.1.0",
            &["--registry", &ns, "--dry-run", "-o", "json"],
        ),
        "dry run of a released version",
    );
    let plan = json(&r.stdout);
    for id in [
        "build",
        "push-bundle",
        "sign",
        "catalog-add:bundle/index",
        "attest",
        "attest-catalog:bundle/index",
        "chart-package",
    ] {
        assert_eq!(status_of(&plan, id), "done", "{id}: {plan}");
    }
    assert_eq!(read_tree(tmp.path()), files);
    assert_eq!(registry_content(&reg.addr, "sample"), content);
}

#[test]
fn a_bundle_with_validation_errors_releases_nothing() {
    let (tmp, dir) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let base = dir.join("base/memcached-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&base).unwrap();
    assert!(text.contains("minKubeVersion: 1.27.0"));
    std::fs::write(
        &base,
        text.replace("minKubeVersion: 1.27.0", "minKubeVersion: soon"),
    )
    .unwrap();
    let before = read_tree(tmp.path());
    let r = release(tmp.path(), home.path(), "0.3.0", &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("error[CSV009]"), "{}", r.stderr);
    // Findings name the bundle directory, not the staging copy.
    assert!(
        r.stderr
            .contains("bundle/0.3.0/manifests/memcached-operator.clusterserviceversion.yaml:"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("nothing was released"), "{}", r.stderr);
    assert_eq!(read_tree(tmp.path()), before);
}

#[test]
fn a_misspelt_release_key_is_an_error_with_its_line() {
    let (tmp, dir) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let config = dir.join("opship.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("signing:\n  key: cosign.key\n  pasword: x\n");
    std::fs::write(&config, &text).unwrap();
    let line = text.lines().count();
    let r = release(tmp.path(), home.path(), "0.3.0", &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("opship.yaml:{line}:")),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("pasword"), "{}", r.stderr);
    // A configured key that does not exist is refused before anything is done.
    text = text.replace("  pasword: x\n", "");
    std::fs::write(&config, &text).unwrap();
    let before = read_tree(tmp.path());
    let r = release(tmp.path(), home.path(), "0.3.0", &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("cosign.key does not exist"),
        "{}",
        r.stderr
    );
    assert_eq!(read_tree(tmp.path()), before);
}

#[test]
fn a_release_that_fails_after_the_catalog_step_adds_no_second_entry_on_rerun() {
    let mut reg = TestRegistry::start(None);
    let (tmp, _) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let proxy = KillingProxy::start(
        &reg.addr,
        "PUT /v2/sample/memcached-operator-catalog/manifests/",
        reg.pid(),
    );
    let ns = format!("{}/sample", proxy.addr);
    let failed = run(isolated(home.path())
        .current_dir(tmp.path())
        .env("OPSHIP_REGISTRY_RETRIES", "1")
        .env("OPSHIP_REGISTRY_TIMEOUT", "5")
        .args(["-c", "bundle/opship.yaml", "release", "--version", "0.1.0"])
        .args(["--registry", &ns]));
    assert_eq!(failed.code, 2, "{}\n{}", failed.stdout, failed.stderr);
    assert!(
        failed
            .stderr
            .contains("stopped at step `push-catalog:bundle/index`"),
        "{}",
        failed.stderr
    );
    // The image was pushed and signed, so the catalog was written.
    let catalog = tmp
        .path()
        .join("bundle/index/memcached-operator/catalog.yaml");
    let written = std::fs::read_to_string(&catalog).unwrap();
    assert_eq!(written.matches("schema: olm.bundle").count(), 1);

    reg.restart();
    proxy.disarm();
    let s = json(
        &ok(
            release(
                tmp.path(),
                home.path(),
                "0.1.0",
                &["--registry", &ns, "-o", "json"],
            ),
            "re-run",
        )
        .stdout,
    );
    for id in ["push-bundle", "sign", "catalog-add:bundle/index"] {
        assert_eq!(status_of(&s, id), "done", "{id}: {s}");
    }
    assert_eq!(status_of(&s, "push-catalog:bundle/index"), "ran", "{s}");
    assert_eq!(std::fs::read_to_string(&catalog).unwrap(), written);
    assert_eq!(
        release_tags(&reg.addr, "sample/memcached-operator-catalog"),
        (vec!["v0.1.0".to_owned()], 1, 1)
    );
    let c = skopeo_inspect(&format!(
        "{}/sample/memcached-operator-catalog:v0.1.0",
        reg.addr
    ));
    assert_eq!(c["Digest"], s["catalogs"][0]["image"]["digest"]);
}

#[test]
fn a_catalog_that_does_not_validate_stops_the_release_with_exit_1() {
    let (tmp, dir) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    // Another package in the catalog whose channel names a bundle that is not there.
    let other = dir.join("index/other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("catalog.yaml"),
        "---\nschema: olm.package\nname: other\ndefaultChannel: stable\n---\nschema: \
         olm.channel\npackage: other\nname: stable\nentries:\n  - name: other.v1.0.0\n",
    )
    .unwrap();
    let r = release(tmp.path(), home.path(), "0.1.0", &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("other.v1.0.0"), "{}", r.stderr);
    assert!(
        r.stderr.contains("does not validate after adding 0.1.0"),
        "{}",
        r.stderr
    );
    // Fixed, the same command finishes: the entry already added is recognised.
    std::fs::remove_dir_all(&other).unwrap();
    let s = json(
        &ok(
            release(tmp.path(), home.path(), "0.1.0", &["-o", "json"]),
            "re-run",
        )
        .stdout,
    );
    for id in ["build", "sign", "catalog-add:bundle/index"] {
        assert_eq!(status_of(&s, id), "done", "{id}: {s}");
    }
    assert_eq!(status_of(&s, "catalog-build:bundle/index"), "ran", "{s}");
    let text = std::fs::read_to_string(dir.join("index/memcached-operator/catalog.yaml")).unwrap();
    assert_eq!(text.matches("schema: olm.bundle").count(), 1, "{text}");
}

#[test]
fn each_catalog_target_gets_its_own_render_format_and_image() {
    let (tmp, dir) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let config = dir.join("opship.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "catalogs:\n  - name: v4.16\n    dir: catalogs/v4.16\n    ocpVersion: \"4.16\"\n  \
         - name: v4.17\n    dir: catalogs/v4.17\n    ocpVersion: \"4.17\"\n",
    );
    std::fs::write(&config, text).unwrap();
    let s = json(
        &ok(
            release(tmp.path(), home.path(), "0.1.0", &["-o", "json"]),
            "release",
        )
        .stdout,
    );
    assert_eq!(s["catalogs"].as_array().unwrap().len(), 2, "{s}");
    let changed: Vec<&str> = s["filesChanged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for (target, property) in [
        ("v4.16", "olm.bundle.object"),
        ("v4.17", "olm.csv.metadata"),
    ] {
        let file = dir.join(format!("catalogs/{target}/memcached-operator/catalog.yaml"));
        let fbc_text = std::fs::read_to_string(&file).unwrap();
        assert!(fbc_text.contains(property), "{target}: {fbc_text}");
        assert!(
            changed.contains(
                &format!("bundle/catalogs/{target}/memcached-operator/catalog.yaml").as_str()
            ),
            "{changed:?}"
        );
        ok(
            run(isolated(home.path())
                .args(["catalog", "validate"])
                .arg(dir.join("catalogs").join(target))),
            "catalog validate",
        );
        // Its own catalog image in the layout, with the digest the summary gives.
        let c = s["catalogs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == target)
            .unwrap();
        assert_eq!(
            c["image"]["layout"],
            format!("bundle/dist/oci:catalog-{target}-0.1.0").as_str()
        );
        let out = skopeo()
            .arg("inspect")
            .arg(format!(
                "oci:{}:catalog-{target}-0.1.0",
                dir.join("dist/oci").display()
            ))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            json(&String::from_utf8_lossy(&out.stdout))["Digest"],
            c["image"]["digest"]
        );
    }
    assert!(
        !dir.join("index").exists(),
        "no default index/ when targets are configured"
    );
}

/// The `--events jsonl` lines of a run (standard error), parsed.
fn events(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(json)
        .collect()
}

/// The events expected from a summary: start and finish of every step that ran, a skip of
/// every other, in plan order.
fn expected_events(summary: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for st in summary["steps"].as_array().unwrap() {
        let id = st["id"].as_str().unwrap().to_owned();
        if st["status"] == "ran" {
            out.push(("start".to_owned(), id.clone()));
            out.push(("finish".to_owned(), id));
        } else {
            out.push(("skip".to_owned(), id));
        }
    }
    out
}

#[test]
fn events_jsonl_report_each_step_of_a_release_and_of_its_rerun() {
    let reg = TestRegistry::start(None);
    let (tmp, _) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let ns = format!("{}/sample", reg.addr);
    let args = ["--registry", &ns, "-o", "json", "--events", "jsonl"];
    let first = ok(release(tmp.path(), home.path(), "0.1.0", &args), "release");
    let s = json(&first.stdout);
    let ev = events(&first.stderr);
    let steps: Vec<(String, String)> = ev
        .iter()
        .filter(|e| ["start", "finish", "skip"].contains(&e["event"].as_str().unwrap()))
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_owned(),
                e["step"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(steps, expected_events(&s), "{}", first.stderr);
    // A full release: every step ran but the bundle validation (done on the staged copy)
    // and the bundle directory (the sample commits it).
    let skipped: Vec<&str> = steps
        .iter()
        .filter(|(e, _)| e == "skip")
        .map(|(_, id)| id.as_str())
        .collect();
    assert_eq!(skipped, ["bundle", "validate"], "{steps:?}");
    for id in [
        "push-bundle",
        "sign",
        "sign-catalog:bundle/index",
        "attest",
        "attest-catalog:bundle/index",
        "sign-chart",
    ] {
        assert!(
            steps.contains(&("finish".to_owned(), id.to_owned())),
            "{id}: {steps:?}"
        );
    }
    // Step events carry the command line that does the same by hand.
    let attest = ev
        .iter()
        .find(|e| e["event"] == "finish" && e["step"] == "attest")
        .unwrap();
    let command: Vec<&str> = attest["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        command[..4],
        ["opship", "-c", "bundle/opship.yaml", "attest"],
        "{attest}"
    );
    assert!(
        command
            .windows(2)
            .any(|w| w == ["--type", "slsaprovenance1"])
            && command.contains(&"--predicate")
            && command.last().unwrap().ends_with(&format!(
                "memcached-operator-bundle@{}",
                s["bundle"]["digest"].as_str().unwrap()
            )),
        "{attest}"
    );
    // Finish events carry the digest the summary gives.
    let finish_build = ev
        .iter()
        .find(|e| e["event"] == "finish" && e["step"] == "build")
        .unwrap();
    assert_eq!(finish_build["digest"], s["bundle"]["digest"]);
    // No progress lines besides the JSON: every line of standard error is an event or a note
    // about the generated key.
    for l in first.stderr.lines() {
        assert!(
            l.starts_with('{') || l.contains("signing key"),
            "not an event: {l}"
        );
    }

    // The re-run: only skips, and the catalog validation that always runs.
    let again = ok(release(tmp.path(), home.path(), "0.1.0", &args), "re-run");
    let s2 = json(&again.stdout);
    let steps2: Vec<(String, String)> = events(&again.stderr)
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_owned(),
                e["step"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(steps2, expected_events(&s2), "{}", again.stderr);
    for (e, id) in &steps2 {
        assert!(
            e == "skip" || id == "catalog-validate:bundle/index",
            "{e} {id}"
        );
    }
}

/// `cosign verify` of a real cosign (cosign2 or cosign3 from scripts/peers) with the key.
fn cosign_verify(cosign: &str, public: &Path, reference: &str) -> Run {
    require(
        cosign,
        "cosign (scripts/peers puts cosign2 and cosign3 on PATH)",
    );
    run(Command::new(cosign)
        .args(["verify", "--key"])
        .arg(public)
        .args([
            "--insecure-ignore-tlog=true",
            "--allow-insecure-registry",
            "--allow-http-registry",
            "-o",
            "json",
            reference,
        ])
        .env("COSIGN_EXPERIMENTAL", "0"))
}

#[test]
fn catalog_image_and_chart_are_signed_and_a_rerun_signs_only_what_lacks_a_signature() {
    let reg = TestRegistry::start(None);
    let (tmp, dir) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let public = dir.join(".opship/cosign.pub");
    // The images' repositories are the registry's (so the catalog entry made before the
    // registry exists stays right once it does).
    let ns = format!("{}/sample", reg.addr);
    let config = dir.join("opship.yaml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "quay.io/example/memcached-operator-",
        &format!("{ns}/memcached-operator-"),
    );
    std::fs::write(&config, text).unwrap();

    // Without a registry: the catalog image is signed in the layout.
    let s = json(
        &ok(
            release(tmp.path(), home.path(), "0.1.0", &["-o", "json"]),
            "release without a registry",
        )
        .stdout,
    );
    assert_eq!(status_of(&s, "sign-catalog:bundle/index"), "ran", "{s}");
    let catalog_repo = s["catalogs"][0]["repository"].as_str().unwrap();
    ok(
        run(isolated(home.path())
            .args(["verify", "--key"])
            .arg(&public)
            .args(["--identity", catalog_repo])
            .arg(format!("{}:catalog-0.1.0", dir.join("dist/oci").display()))),
        "opship verify of the catalog image in the layout",
    );

    // The registry appears: each image is pushed and signed for its registry identity; the
    // layout's signatures stay behind, so each `.sig` holds one signature.
    let s = release_json(tmp.path(), home.path(), "0.1.0", &ns);
    for id in [
        "push-bundle",
        "sign",
        "push-catalog:bundle/index",
        "sign-catalog:bundle/index",
        "push-chart",
        "sign-chart",
    ] {
        assert_eq!(status_of(&s, id), "ran", "{id}: {s}");
    }
    for id in ["build", "catalog-add:bundle/index", "chart-package"] {
        assert_eq!(status_of(&s, id), "done", "{id}: {s}");
    }
    let accept = [("Accept", "application/vnd.oci.image.manifest.v1+json")];
    let sig_of = |repo: &str, digest: &str| {
        let tag = format!("sha256-{}.sig", digest.trim_start_matches("sha256:"));
        let (status, body) = http_get(
            &reg.addr,
            &format!("/v2/sample/{repo}/manifests/{tag}"),
            &accept,
        )
        .unwrap();
        assert_eq!(status, 200, "{repo} {tag}: {body}");
        json(&body)
    };
    let bundle_digest = s["bundle"]["digest"].as_str().unwrap();
    let catalog_digest = s["catalogs"][0]["image"]["digest"].as_str().unwrap();
    let chart_digest = s["chart"]["manifestDigest"].as_str().unwrap();
    for (repo, digest) in [
        ("memcached-operator-bundle", bundle_digest),
        ("memcached-operator-catalog", catalog_digest),
        ("memcached-operator", chart_digest),
    ] {
        assert_eq!(
            sig_of(repo, digest)["layers"].as_array().unwrap().len(),
            1,
            "{repo}"
        );
    }

    // Real cosign (2.5 and 3.1) and opship verify accept the catalog image's and the chart's
    // signatures.
    let catalog_ref = format!("{ns}/memcached-operator-catalog@{catalog_digest}");
    let chart_ref = format!("{ns}/memcached-operator@{chart_digest}");
    for reference in [&catalog_ref, &chart_ref] {
        for cosign in ["cosign2", "cosign3"] {
            let r = cosign_verify(cosign, &public, reference);
            assert_eq!(
                r.code, 0,
                "{cosign} verify {reference}:\n{}\n{}",
                r.stdout, r.stderr
            );
            assert!(
                r.stdout.contains(reference.split('@').nth(1).unwrap()),
                "{}",
                r.stdout
            );
        }
        ok(
            run(isolated(home.path())
                .args(["verify", "--key"])
                .arg(&public)
                .args(["-a", "release=0.1.0", reference])),
            "opship verify",
        );
    }

    // The catalog image's signature goes (deleted from the registry): the re-run signs that
    // image again and nothing else.
    let sig_tag = format!(
        "sha256-{}.sig",
        catalog_digest.trim_start_matches("sha256:")
    );
    let deleted = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "d=$(curl -fsSI -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
             http://{a}/v2/sample/memcached-operator-catalog/manifests/{sig_tag} \
             | tr -d '\\r' | awk -F': ' 'tolower($1)==\"docker-content-digest\" {{print $2}}') && \
             curl -fsS -X DELETE http://{a}/v2/sample/memcached-operator-catalog/manifests/$d",
            a = reg.addr
        ))
        .status()
        .unwrap();
    assert!(deleted.success());
    let again = release_json(tmp.path(), home.path(), "0.1.0", &ns);
    for st in again["steps"].as_array().unwrap() {
        let id = st["id"].as_str().unwrap();
        let expected = match id {
            "sign-catalog:bundle/index" | "catalog-validate:bundle/index" => "ran",
            _ => "done",
        };
        assert_eq!(st["status"], expected, "{id}: {again}");
    }
    assert_eq!(
        sig_of("memcached-operator-catalog", catalog_digest)["layers"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let r = cosign_verify("cosign3", &public, &catalog_ref);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
}

/// `git` in `dir` with a fixed identity and dates (the same tree gives the same commit).
fn git(dir: &Path, args: &[&str]) -> String {
    require("git", "git");
    let r = ok(
        run(Command::new("git")
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "Release Test")
            .env("GIT_AUTHOR_EMAIL", "release@example.com")
            .env("GIT_COMMITTER_NAME", "Release Test")
            .env("GIT_COMMITTER_EMAIL", "release@example.com")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .args(args)),
        &format!("git {args:?}"),
    );
    r.stdout.trim().to_owned()
}

/// A copy of the sample operator committed to a git repository whose `origin` is `origin`.
fn committed_sample(origin: &str) -> (tempfile::TempDir, String) {
    let (tmp, _) = sample_copy();
    git(tmp.path(), &["init", "-q", "-b", "main"]);
    git(tmp.path(), &["remote", "add", "origin", origin]);
    git(tmp.path(), &["add", "-A"]);
    git(tmp.path(), &["commit", "-q", "-m", "sample operator"]);
    let head = git(tmp.path(), &["rev-parse", "HEAD"]);
    (tmp, head)
}

/// `cosign2`/`cosign3 verify-attestation --type slsaprovenance1` with the offline flags: the
/// predicate of the one attestation that verifies.
fn cosign_provenance(major: u8, home: &Path, public: &Path, image: &str) -> serde_json::Value {
    let name = format!("cosign{major}");
    require(
        &name,
        "cosign (scripts/peers puts cosign2 and cosign3 on PATH)",
    );
    let r = ok(
        run(Command::new(&name)
            .env("HOME", home)
            .env_remove("DOCKER_CONFIG")
            .args(["verify-attestation", "--key"])
            .arg(public)
            .args([
                "--type",
                "slsaprovenance1",
                "--insecure-ignore-tlog=true",
                "--allow-insecure-registry",
                image,
            ])),
        &format!("{name} verify-attestation --type slsaprovenance1 {image}"),
    );
    let envelopes: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(json)
        .collect();
    assert_eq!(envelopes.len(), 1, "{}", r.stdout);
    use base64::Engine as _;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(envelopes[0]["payload"].as_str().unwrap())
        .unwrap();
    let statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        statement["predicateType"], "https://slsa.dev/provenance/v1",
        "{statement}"
    );
    statement["predicate"].clone()
}

#[test]
fn release_attests_slsa_provenance_that_cosign_verifies_and_a_rerun_keeps() {
    let origin = "https://example.com/acme/memcached-operator.git";
    let reg = TestRegistry::start(None);
    let (tmp, head) = committed_sample(origin);
    let home = tempfile::tempdir().unwrap();
    let ns = format!("{}/sample", reg.addr);
    let s = release_json(tmp.path(), home.path(), "0.1.0", &ns);
    assert_eq!(status_of(&s, "attest"), "ran", "{s}");
    assert_eq!(status_of(&s, "attest-catalog:bundle/index"), "ran", "{s}");
    let bundle_digest = s["bundle"]["digest"].as_str().unwrap().to_owned();
    let catalog_digest = s["catalogs"][0]["image"]["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let public = tmp.path().join("bundle/.opship/cosign.pub");
    let bundle_ref = format!("{ns}/memcached-operator-bundle@{bundle_digest}");
    let catalog_ref = format!("{ns}/memcached-operator-catalog@{catalog_digest}");

    // Real cosign 2 and 3 accept both attestations; the predicate says what was built, from
    // which commit and inputs, by which opship.
    for major in [2, 3] {
        let p = cosign_provenance(major, home.path(), &public, &bundle_ref);
        let external = &p["buildDefinition"]["externalParameters"];
        assert_eq!(
            external["artifacts"][0]["name"], "memcached-operator-bundle:v0.1.0",
            "{p}"
        );
        assert_eq!(
            external["artifacts"][0]["digest"]["sha256"],
            bundle_digest.trim_start_matches("sha256:"),
            "{p}"
        );
        assert_eq!(external["source"]["uri"], format!("git+{origin}"), "{p}");
        assert_eq!(external["source"]["digest"]["gitCommit"], head, "{p}");
        assert_eq!(external["parameters"]["version"], "0.1.0", "{p}");
        let deps = p["buildDefinition"]["resolvedDependencies"]
            .as_array()
            .unwrap();
        let config = std::fs::read(tmp.path().join("bundle/opship.yaml")).unwrap();
        assert!(
            deps.iter().any(|d| d["name"] == "opship.yaml"
                && d["digest"]["sha256"] == opship_core::image::Digest::of(&config).hex()),
            "{p}"
        );
        assert!(
            deps.iter().any(|d| d["name"]
                .as_str()
                .unwrap_or("")
                .ends_with(".clusterserviceversion.yaml")),
            "{p}"
        );
        assert_eq!(
            p["runDetails"]["builder"]["version"]["opship"],
            env!("CARGO_PKG_VERSION"),
            "{p}"
        );
        let c = cosign_provenance(major, home.path(), &public, &catalog_ref);
        let external = &c["buildDefinition"]["externalParameters"];
        assert_eq!(
            external["artifacts"][0]["digest"]["sha256"],
            catalog_digest.trim_start_matches("sha256:"),
            "{c}"
        );
        assert!(
            c["buildDefinition"]["resolvedDependencies"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["digest"]["sha256"] == bundle_digest.trim_start_matches("sha256:")),
            "the catalog's provenance names the bundle image it holds: {c}"
        );
    }
    // The predicate file the step command names is the predicate attested.
    let att_tag = |d: &str| format!("sha256-{}.att", d.trim_start_matches("sha256:"));
    let file = tmp.path().join(format!(
        "bundle/dist/provenance/{}.slsa.json",
        att_tag(&bundle_digest)
    ));
    let written: serde_json::Value = json(&std::fs::read_to_string(&file).unwrap());
    assert_eq!(
        written,
        cosign_provenance(2, home.path(), &public, &bundle_ref)
    );

    // A re-run recognises both attestations: no new layer.
    let layers = |repo: &str, d: &str| {
        let (_, body) = http_get(
            &reg.addr,
            &format!("/v2/sample/{repo}/manifests/{}", att_tag(d)),
            &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
        )
        .unwrap();
        json(&body)["layers"].as_array().unwrap().len()
    };
    assert_eq!(layers("memcached-operator-bundle", &bundle_digest), 1);
    assert_eq!(layers("memcached-operator-catalog", &catalog_digest), 1);
    let again = release_json(tmp.path(), home.path(), "0.1.0", &ns);
    assert_eq!(status_of(&again, "attest"), "done", "{again}");
    assert_eq!(
        status_of(&again, "attest-catalog:bundle/index"),
        "done",
        "{again}"
    );
    assert_eq!(layers("memcached-operator-bundle", &bundle_digest), 1);
    assert_eq!(layers("memcached-operator-catalog", &catalog_digest), 1);

    // The same commit released again from another checkout (another key) into a fresh
    // registry at the same address: the same images, the same predicate digests.
    let step_digest = |s: &serde_json::Value, id: &str| {
        s["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|st| st["id"] == id)
            .unwrap()["digest"]
            .clone()
    };
    let (tmp2, head2) = committed_sample(origin);
    assert_eq!(head2, head);
    let home2 = tempfile::tempdir().unwrap();
    let mut reg = reg;
    reg.restart_empty();
    assert_eq!(layers_or_none(&reg.addr, &bundle_digest), None);
    let s2 = release_json(tmp2.path(), home2.path(), "0.1.0", &ns);
    assert_eq!(s2["catalogs"][0]["image"]["digest"], catalog_digest, "{s2}");
    for id in ["attest", "attest-catalog:bundle/index"] {
        assert_eq!(status_of(&s2, id), "ran", "{s2}");
        assert!(step_digest(&s, id).is_string(), "{s}");
        assert_eq!(step_digest(&s, id), step_digest(&s2, id), "{id}");
    }
    let public2 = tmp2.path().join("bundle/.opship/cosign.pub");
    for image in [&bundle_ref, &catalog_ref] {
        let p2 = cosign_provenance(2, home2.path(), &public2, image);
        let p1 = json(
            &std::fs::read_to_string(tmp.path().join(format!(
                "bundle/dist/provenance/{}.slsa.json",
                att_tag(image.rsplit('@').next().unwrap())
            )))
            .unwrap(),
        );
        assert_eq!(p2, p1, "{image}");
    }

    // The bundle's provenance does not depend on the registry it went to either.
    let other = TestRegistry::start(None);
    let tmp3 = committed_sample(origin).0;
    let s3 = release_json(
        tmp3.path(),
        home2.path(),
        "0.1.0",
        &format!("{}/elsewhere", other.addr),
    );
    assert_eq!(step_digest(&s3, "attest"), step_digest(&s, "attest"));
}

/// The number of layers of the bundle's `.att` manifest, `None` without one.
fn layers_or_none(addr: &str, digest: &str) -> Option<usize> {
    let (status, body) = http_get(
        addr,
        &format!(
            "/v2/sample/memcached-operator-bundle/manifests/sha256-{}.att",
            digest.trim_start_matches("sha256:")
        ),
        &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
    )?;
    (status == 200).then(|| json(&body)["layers"].as_array().unwrap().len())
}

#[test]
fn release_reads_the_key_password_from_stdin() {
    let reg = TestRegistry::start(None);
    let (tmp, _) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let ns = format!("{}/sample", reg.addr);
    let prefix = tmp.path().join("ci");
    ok(
        crate::support_registry::run_stdin(
            isolated(home.path())
                .env_remove("COSIGN_PASSWORD")
                .args(["key", "generate", "--password-stdin", "--output-key-prefix"])
                .arg(&prefix),
            "s3cret\n",
        ),
        "key generate --password-stdin",
    );
    let key = tmp.path().join("ci.key");
    let with_stdin = |password: &str| {
        crate::support_registry::run_stdin(
            isolated(home.path())
                .current_dir(tmp.path())
                .env_remove("COSIGN_PASSWORD")
                .env("SOURCE_DATE_EPOCH", "1700000000")
                .args(["-c", "bundle/opship.yaml", "release", "--version", "0.1.0"])
                .args(["--registry", &ns, "--password-stdin", "-o", "json", "--key"])
                .arg(&key),
            password,
        )
    };
    // A wrong password stops the release at the first signature; the right one finishes it.
    let wrong = with_stdin("wrong\n");
    assert_eq!(wrong.code, 2, "{}\n{}", wrong.stdout, wrong.stderr);
    let s = json(&ok(with_stdin("s3cret\n"), "release --password-stdin").stdout);
    for id in [
        "sign",
        "attest",
        "sign-catalog:bundle/index",
        "attest-catalog:bundle/index",
    ] {
        assert_eq!(status_of(&s, id), "ran", "{id}: {s}");
    }
    let bundle = format!(
        "{ns}/memcached-operator-bundle@{}",
        s["bundle"]["digest"].as_str().unwrap()
    );
    let public = tmp.path().join("ci.pub");
    let p = cosign_provenance(2, home.path(), &public, &bundle);
    // SOURCE_DATE_EPOCH is the one time the provenance records.
    assert_eq!(
        p["runDetails"]["metadata"],
        serde_json::json!({"startedOn": "2023-11-14T22:13:20Z", "finishedOn": "2023-11-14T22:13:20Z"}),
        "{p}"
    );
}

/// On a terminal `release` draws one progress bar over its steps (a spinner until their
/// number is known) instead of a line per step; what the user must see (the generated key)
/// still prints, above the bar, and the summary goes to standard output as always. `script`
/// (util-linux) gives the release a terminal.
#[test]
fn a_terminal_gets_a_progress_bar_instead_of_step_lines() {
    let (tmp, _) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let bin: PathBuf = std::env::var_os("OPSHIP_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_opship").into());
    let summary = tmp.path().join("summary.txt");
    let typescript = tmp.path().join("typescript");
    let line = format!(
        "'{}' -c bundle/opship.yaml release --version 0.3.0 >'{}'",
        bin.display(),
        summary.display()
    );
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &line])
        .arg(&typescript)
        .current_dir(tmp.path())
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .env_remove("SOURCE_DATE_EPOCH")
        .env_remove("OPSHIP_CONFIG")
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .output()
        .expect("script (util-linux) runs");
    let tty = std::fs::read_to_string(&typescript).unwrap();
    assert!(out.status.success(), "{tty}");
    // The embedded default (no registry): bundle, validate, build, key, sign, the catalog's
    // add, validate, build and sign, the chart's render and package. The bar is redrawn at
    // most 20 times a second, so not every count shows.
    assert!(tty.contains("release: staging"), "{tty}");
    assert!(tty.contains("release [") && tty.contains("/11 "), "{tty}");
    assert!(tty.contains("generated the signing key"), "{tty}");
    assert!(!tty.contains("release: build the bundle image"), "{tty}");
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(
        summary.starts_with("released memcached-operator 0.3.0"),
        "{summary}"
    );
    // Without a terminal (every other test) the same release prints a line per step.
}

/// A `verify:` policy in `opship.yaml`: an unsigned foreign bundle in the catalog stops the
/// release before anything is written or pushed; signed by a key the policy trusts, the same
/// release goes through.
#[test]
fn a_verify_policy_stops_a_release_whose_catalog_has_an_unsigned_bundle() {
    let reg = TestRegistry::start(None);
    let (tmp, dir) = sample_copy();
    let home = tempfile::tempdir().unwrap();
    let ns = format!("{}/sample", reg.addr);
    let first = release_json(tmp.path(), home.path(), "0.1.0", &ns);
    // A foreign package whose bundle image is pushed but not signed.
    let layout = first["bundle"]["layout"].as_str().unwrap();
    let foreign = format!("{}/foreign/bundle:v1.0.0", reg.addr);
    ok(
        run(isolated(home.path())
            .current_dir(tmp.path())
            .args(["push", layout, &foreign])),
        "push foreign",
    );
    let digest = first["bundle"]["digest"].as_str().unwrap();
    let foreign_pinned = format!("{}/foreign/bundle@{digest}", reg.addr);
    let other = dir.join("index/other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("catalog.yaml"),
        format!(
            "---\nschema: olm.package\nname: other\ndefaultChannel: stable\n---\nschema: \
             olm.channel\npackage: other\nname: stable\nentries:\n  - name: other.v1.0.0\n---\n\
             schema: olm.bundle\nname: other.v1.0.0\npackage: other\nimage: {foreign_pinned}\n\
             properties:\n  - type: olm.package\n    value:\n      packageName: other\n      \
             version: 1.0.0\n"
        ),
    )
    .unwrap();
    let config = dir.join("opship.yaml");
    let base = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{base}verify:\n  keys: [.opship/cosign.pub]\n"),
    )
    .unwrap();
    let tree_before = read_tree(&dir);
    let tags_before = tags(&reg.addr, "sample/memcached-operator-bundle");
    let catalog_tags_before = tags(&reg.addr, "sample/memcached-operator-catalog");

    let r = release(tmp.path(), home.path(), "0.2.0", &["--registry", &ns]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("do not pass the `verify:` policy")
            && r.stderr
                .contains(&format!("unsigned other.v1.0.0 ({foreign_pinned})")),
        "{}",
        r.stderr
    );
    // Nothing written, nothing pushed.
    assert!(read_tree(&dir) == tree_before, "the project changed");
    assert_eq!(
        tags(&reg.addr, "sample/memcached-operator-bundle"),
        tags_before
    );
    assert_eq!(
        tags(&reg.addr, "sample/memcached-operator-catalog"),
        catalog_tags_before
    );

    // The publisher's partner signs it with a key the policy lists: the release goes through.
    let partner = tmp.path().join("partner");
    ok(
        run(isolated(home.path())
            .env("COSIGN_PASSWORD", "partner-pw")
            .args(["key", "generate", "--output-key-prefix"])
            .arg(&partner)),
        "key generate",
    );
    ok(
        run(isolated(home.path())
            .env("COSIGN_PASSWORD", "partner-pw")
            .args(["sign", "--key"])
            .arg(partner.with_extension("key"))
            .arg(&foreign_pinned)),
        "sign foreign",
    );
    std::fs::write(
        &config,
        format!(
            "{base}verify:\n  keys: [.opship/cosign.pub, {}]\n",
            partner.with_extension("pub").display()
        ),
    )
    .unwrap();
    let s = release_json(tmp.path(), home.path(), "0.2.0", &ns);
    assert_eq!(status_of(&s, "push-catalog:bundle/index"), "ran", "{s}");
}

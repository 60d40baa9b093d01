//! `opship release` signing keylessly in a GitHub Actions job: no key configured, the token
//! from `ACTIONS_ID_TOKEN_REQUEST_URL` (served on loopback with the Sigstore stack's issuer
//! behind it); the bundle image, catalog image and chart signed and the provenance attested
//! through the stack's Fulcio, Rekor v2 and timestamp authority, each checked by cosign 3
//! with the workflow identity. Rekor down after Fulcio certified the key stops the release
//! at its first signature with nothing of it in the registry, and Rekor dying between the
//! bundle's signature and the catalog image's leaves the catalog image unsigned; the same
//! command finishes the release once Rekor is back.

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::keyless::{Actions, cosign3_verify, opship_clean, refuses, stack};
use crate::support_registry::{TestRegistry, free_port, http_get, json, ok};
use crate::{Run, read_tree, run, sample_copy};

/// `opship release` of the sample in a job with the Actions token variables, no key.
fn release(dir: &Path, home: &Path, actions: &Actions, ns: &str, extra: &[&str]) -> Run {
    run(opship_clean(home)
        .current_dir(dir)
        .env("ACTIONS_ID_TOKEN_REQUEST_URL", &actions.url)
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "runner-secret")
        .args(["-c", "bundle/opship.yaml", "release", "--version", "0.1.0"])
        .args(["--registry", ns, "-o", "json"])
        .args(extra))
}

fn step<'a>(summary: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    summary["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}: {summary}"))
}

/// Tags of a repository that are cosign's (`sha256-…`: `.sig`, `.att`, referrer tags).
fn cosign_tags(addr: &str, repository: &str) -> Vec<String> {
    let (status, body) =
        http_get(addr, &format!("/v2/{repository}/tags/list"), &[]).expect("registry reachable");
    if status == 404 {
        return vec![];
    }
    json(&body)["tags"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .filter(|t| t.starts_with("sha256-"))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn release_signs_keylessly_with_the_actions_token() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let (tmp, _) = sample_copy();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let actions = Actions::start(s);
    let ns = format!("{}/sample", reg.addr);
    let identity = s.var("GITHUB_IDENTITY");
    let issuer = s.var("OIDC_ISSUER_URL");
    let sc = s.var("SIGSTORE_SIGNING_CONFIG");

    // The plan says keyless, the identity the token names and where it comes from (no
    // certificate asked for); no key is made.
    let plan = json(
        &ok(
            release(tmp.path(), &home, &actions, &ns, &["--dry-run"]),
            "dry run",
        )
        .stdout,
    );
    let sign = step(&plan, "sign");
    assert!(
        sign["description"]
            .as_str()
            .unwrap()
            .contains(&format!("keylessly as {identity} (issuer {issuer})")),
        "{sign}"
    );
    assert_eq!(plan["signature"]["keyless"]["identity"], identity, "{plan}");
    assert_eq!(
        plan["signature"]["keyless"]["tokenSource"],
        "GitHub Actions (ACTIONS_ID_TOKEN_REQUEST_URL)",
        "{plan}"
    );
    assert!(
        !sign["command"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--key"),
        "{sign}"
    );
    assert!(
        plan["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["id"] != "key")
    );

    let r = ok(
        release(tmp.path(), &home, &actions, &ns, &["--signing-config", sc]),
        "keyless release",
    );
    let summary = json(&r.stdout);
    assert!(
        !tmp.path().join("bundle/.opship/cosign.key").exists(),
        "a key was generated"
    );
    let keyless = &summary["signature"]["keyless"];
    assert_eq!(keyless["identity"], identity, "{summary}");
    assert_eq!(keyless["issuer"], issuer, "{summary}");
    assert!(summary["signature"]["publicKey"].is_null(), "{summary}");
    let catalog = &summary["catalogs"][0]["image"];
    for id in ["sign", "attest", "sign-chart"] {
        let st = step(&summary, id);
        assert_eq!(st["status"], "ran", "{st}");
        assert!(
            st["description"]
                .as_str()
                .unwrap()
                .contains(&format!("keylessly as {identity}")),
            "{st}"
        );
    }
    let signed_catalog = summary["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["id"].as_str().unwrap().starts_with("sign-catalog:"))
        .count();
    assert_eq!(signed_catalog, 1, "{summary}");

    // cosign 3 verifies each artefact with the workflow identity (tlog and timestamps on).
    let bundle = format!(
        "{ns}/memcached-operator-bundle@{}",
        summary["bundle"]["digest"].as_str().unwrap()
    );
    let catalog_ref = format!(
        "{}@{}",
        catalog["reference"]
            .as_str()
            .unwrap()
            .rsplit_once(':')
            .unwrap()
            .0,
        catalog["digest"].as_str().unwrap()
    );
    let chart = format!(
        "{}@{}",
        summary["chart"]["reference"]
            .as_str()
            .unwrap()
            .trim_start_matches("oci://")
            .rsplit_once(':')
            .unwrap()
            .0,
        summary["chart"]["manifestDigest"].as_str().unwrap()
    );
    let who = [
        "--certificate-identity",
        identity,
        "--certificate-oidc-issuer",
        issuer,
        "--certificate-github-workflow-trigger",
        "push",
    ];
    let cosign_home = tmp.path().join("cosign-home");
    std::fs::create_dir_all(&cosign_home).unwrap();
    for (what, image) in [
        ("bundle image", &bundle),
        ("catalog image", &catalog_ref),
        ("chart", &chart),
    ] {
        let mut args = who.to_vec();
        args.extend(["-a", "release=0.1.0"]);
        ok(
            cosign3_verify(s, &cosign_home, "verify", &args, image),
            &format!("cosign3 verify of the {what}"),
        );
    }
    let mut att = who.to_vec();
    att.extend(["--type", "https://slsa.dev/provenance/v1"]);
    for image in [&bundle, &catalog_ref] {
        ok(
            cosign3_verify(s, &cosign_home, "verify-attestation", &att, image),
            "cosign3 verify-attestation of the provenance",
        );
    }
    // Another workflow's identity is refused.
    refuses(
        cosign3_verify(
            s,
            &cosign_home,
            "verify",
            &[
                "--certificate-identity",
                "https://github.com/other/repo/.github/workflows/release.yml@refs/heads/main",
                "--certificate-oidc-issuer",
                issuer,
            ],
            &bundle,
        ),
        "cosign3 verify with another workflow's identity",
    );

    // A re-run finds each keyless signature and attestation by the workflow identity (the
    // trusted root beside the signing config) and writes nothing to the registry.
    let repositories = [
        "sample/memcached-operator-bundle",
        "sample/memcached-operator-catalog",
        "sample/memcached-operator",
    ];
    let before = cosign_manifests(&reg.addr, &repositories);
    assert_eq!(before.len(), 3, "one referrer tag per image: {before:?}");
    let again = json(
        &ok(
            release(tmp.path(), &home, &actions, &ns, &["--signing-config", sc]),
            "keyless re-run",
        )
        .stdout,
    );
    let checked: Vec<&serde_json::Value> = again["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|st| {
            let id = st["id"].as_str().unwrap();
            id.starts_with("sign") || id.starts_with("attest")
        })
        .collect();
    assert_eq!(checked.len(), 5, "{again}");
    for st in checked {
        assert_eq!(st["status"], "done", "{st}");
        let reason = st["reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!("by {identity} (issuer {issuer}) verifies")),
            "{st}"
        );
    }
    assert_eq!(
        cosign_manifests(&reg.addr, &repositories),
        before,
        "the re-run wrote a signature or attestation"
    );

    // A `verify:` policy by an unanchored pattern: the next run verifies the catalog's bundle
    // before anything else and names the certificate's own identity, issuer and workflow
    // claims next to the pattern, on stderr and in the summary.
    let config = tmp.path().join("bundle/opship.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "verify:\n  certificateIdentityRegexp: 'example-org'\n  certificateOidcIssuer: '{issuer}'\n  trustedRoot: '{}'\n",
        s.var("SIGSTORE_TRUSTED_ROOT")
    ));
    std::fs::write(&config, text).unwrap();
    let r = ok(
        release(tmp.path(), &home, &actions, &ns, &["--signing-config", sc]),
        "keyless re-run with a verify: policy",
    );
    let v = json(&r.stdout);
    let image = &v["verified"][0]["images"][0];
    assert_eq!(image["verdict"], "verified", "{v}");
    assert!(
        image["by"].as_str().unwrap().contains("/example-org/"),
        "{image}"
    );
    assert_eq!(image["signer"]["identity"], identity, "{image}");
    assert_eq!(image["signer"]["issuer"], issuer, "{image}");
    assert_eq!(
        image["signer"]["githubWorkflowRepository"], "example-org/example-repo",
        "{image}"
    );
    assert!(
        r.stderr.contains(&format!(
            "; signed by {identity} (issuer {issuer}, repository example-org/example-repo, ref refs/heads/main"
        )),
        "{}",
        r.stderr
    );
}

/// Every cosign tag (`sha256-…`) of the repositories with its manifest, as served.
fn cosign_manifests(addr: &str, repositories: &[&str]) -> Vec<(String, String)> {
    let accept =
        "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json";
    let mut out = Vec::new();
    for repository in repositories {
        for tag in cosign_tags(addr, repository) {
            let (status, body) = http_get(
                addr,
                &format!("/v2/{repository}/manifests/{tag}"),
                &[("Accept", accept)],
            )
            .expect("registry reachable");
            assert_eq!(status, 200, "{repository}:{tag}: {body}");
            out.push((format!("{repository}:{tag}"), body));
        }
    }
    out
}

#[test]
fn rekor_down_stops_the_release_with_nothing_half_written() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let (tmp, _) = sample_copy();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let actions = Actions::start(s);
    let ns = format!("{}/sample", reg.addr);
    let catalog_dir = tmp.path().join("bundle/index");
    let catalog = |d: &Path| d.exists().then(|| read_tree(d));
    let catalog_before = catalog(&catalog_dir);
    // A dry run reads the token: an expired one is an error before anything is planned.
    let expired = s.token("github", &["--ttl", "-60"]);
    let r = release(
        tmp.path(),
        &home,
        &actions,
        &ns,
        &["--dry-run", "--identity-token", &expired],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("expired at"), "{}", r.stderr);
    let closed = format!("http://127.0.0.1:{}", free_port());
    let r = release(
        tmp.path(),
        &home,
        &actions,
        &ns,
        &[
            "--signing-config",
            s.var("SIGSTORE_SIGNING_CONFIG"),
            "--rekor-url",
            &closed,
        ],
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("stopped at step `sign`") && r.stderr.contains("cannot reach Rekor"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    // The bundle image is pushed (the step before), without any signature, attestation or
    // referrer; no catalog image or chart; the catalog directory untouched.
    for repository in [
        "sample/memcached-operator-bundle",
        "sample/memcached-operator-catalog",
        "sample/memcached-operator",
    ] {
        assert_eq!(cosign_tags(&reg.addr, repository), Vec::<String>::new());
    }
    let (status, _) = http_get(
        &reg.addr,
        "/v2/sample/memcached-operator-catalog/tags/list",
        &[],
    )
    .unwrap();
    assert_eq!(status, 404, "a catalog image was pushed");
    assert_eq!(catalog(&catalog_dir), catalog_before);

    // With Rekor back, the same command finishes: the pushed image is kept, then signed.
    let summary = json(
        &ok(
            release(
                tmp.path(),
                &home,
                &actions,
                &ns,
                &["--signing-config", s.var("SIGSTORE_SIGNING_CONFIG")],
            ),
            "re-run with Rekor",
        )
        .stdout,
    );
    assert_eq!(step(&summary, "push-bundle")["status"], "done", "{summary}");
    assert_eq!(step(&summary, "sign")["status"], "ran", "{summary}");
    let cosign_home = tmp.path().join("cosign-home");
    std::fs::create_dir_all(&cosign_home).unwrap();
    ok(
        cosign3_verify(
            s,
            &cosign_home,
            "verify",
            &[
                "--certificate-identity",
                s.var("GITHUB_IDENTITY"),
                "--certificate-oidc-issuer",
                s.var("OIDC_ISSUER_URL"),
            ],
            &format!(
                "{ns}/memcached-operator-bundle@{}",
                summary["bundle"]["digest"].as_str().unwrap()
            ),
        ),
        "cosign3 verify after the re-run",
    );
}

/// Rekor behind a relay that forwards `N` requests and then exits (its port closed: Rekor
/// is down from the next request on). Prints its port.
const DYING_RELAY: &str = r#"
import http.server, os, sys, urllib.request, urllib.error
upstream, left = sys.argv[1], int(sys.argv[2])
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global left
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        req = urllib.request.Request(upstream + self.path, data=body, method="POST",
            headers={k: v for k, v in self.headers.items() if k.lower() in ("content-type", "accept")})
        try:
            r = urllib.request.urlopen(req); status, data, ctype = r.status, r.read(), r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            status, data, ctype = e.code, e.read(), e.headers.get("Content-Type", "")
        self.send_response(status); self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data))); self.send_header("Connection", "close")
        self.end_headers(); self.wfile.write(data); self.wfile.flush()
        left -= 1
        if left == 0:
            os._exit(0)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

#[test]
fn rekor_dying_mid_release_leaves_the_catalog_image_unsigned_until_the_rerun() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let (tmp, _) = sample_copy();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let actions = Actions::start(s);
    let ns = format!("{}/sample", reg.addr);
    let sc = s.var("SIGSTORE_SIGNING_CONFIG");
    // The bundle image's signature and provenance get their entries; then Rekor is gone.
    let rekor: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sc).unwrap()).unwrap();
    let upstream = rekor["rekorTlogUrls"][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut relay = Command::new("python3")
        .args(["-c", DYING_RELAY, &upstream, "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufReader::new(relay.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let relay_url = format!("http://127.0.0.1:{}", line.trim());
    let r = release(
        tmp.path(),
        &home,
        &actions,
        &ns,
        &["--signing-config", sc, "--rekor-url", &relay_url],
    );
    let _ = relay.kill();
    let _ = relay.wait();
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("stopped at step `sign-catalog:") && r.stderr.contains("Rekor"),
        "{}",
        r.stderr
    );
    // The catalog image is pushed, with no signature, attestation or referrer of it.
    assert_eq!(
        cosign_tags(&reg.addr, "sample/memcached-operator-catalog"),
        Vec::<String>::new()
    );
    let catalog_tag = format!("{ns}/memcached-operator-catalog:v0.1.0");
    let cosign_home = tmp.path().join("cosign-home");
    std::fs::create_dir_all(&cosign_home).unwrap();
    let who = [
        "--certificate-identity",
        s.var("GITHUB_IDENTITY"),
        "--certificate-oidc-issuer",
        s.var("OIDC_ISSUER_URL"),
    ];
    refuses(
        cosign3_verify(s, &cosign_home, "verify", &who, &catalog_tag),
        "cosign3 verify of the unsigned catalog image",
    );
    // The bundle image's signature, made before, is whole.
    ok(
        cosign3_verify(
            s,
            &cosign_home,
            "verify",
            &who,
            &format!("{ns}/memcached-operator-bundle:v0.1.0"),
        ),
        "cosign3 verify of the bundle image",
    );
    // The same release with Rekor reachable finishes: the catalog image is signed; the bundle
    // image's signature and provenance, checked against --trusted-root, are not made again.
    let summary = json(
        &ok(
            release(
                tmp.path(),
                &home,
                &actions,
                &ns,
                &[
                    "--signing-config",
                    sc,
                    "--trusted-root",
                    s.var("SIGSTORE_TRUSTED_ROOT"),
                ],
            ),
            "re-run with Rekor",
        )
        .stdout,
    );
    for id in ["sign", "attest"] {
        assert_eq!(step(&summary, id)["status"], "done", "{summary}");
    }
    let catalog_step = summary["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"].as_str().unwrap().starts_with("sign-catalog:"))
        .unwrap();
    assert_eq!(catalog_step["status"], "ran", "{summary}");
    ok(
        cosign3_verify(s, &cosign_home, "verify", &who, &catalog_tag),
        "cosign3 verify of the catalog image after the re-run",
    );
}

/// `--identity-token` where the release cannot sign keylessly is an error, not a key.
#[test]
fn an_identity_token_without_a_registry_or_with_a_key_is_an_error() {
    let (tmp, _) = sample_copy();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let key = tmp.path().join("k.key");
    std::fs::write(&key, "not read").unwrap();
    std::fs::write(tmp.path().join("k.pub"), "not read").unwrap();
    for (extra, reason) in [
        (vec![], "needs a registry"),
        (
            vec![
                "--registry",
                "127.0.0.1:9/x",
                "--key",
                key.to_str().unwrap(),
            ],
            "a signing key is configured",
        ),
    ] {
        let r = run(opship_clean(&home)
            .current_dir(tmp.path())
            .args(["-c", "bundle/opship.yaml", "release", "--version", "0.1.0"])
            .args(["--dry-run", "--identity-token", "t.jwt"])
            .args(&extra));
        assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(reason), "want {reason:?}: {}", r.stderr);
        assert!(!tmp.path().join("bundle/.opship").exists());
    }
    // So is --trusted-root, which only the keyless checks read.
    let r = run(opship_clean(&home)
        .current_dir(tmp.path())
        .args(["-c", "bundle/opship.yaml", "release", "--version", "0.1.0"])
        .args(["--dry-run", "--trusted-root", "trusted_root.json"]));
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("--trusted-root is for keyless signing, which needs a registry"),
        "{}",
        r.stderr
    );
}

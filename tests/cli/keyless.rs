//! Keyless signing against the real Sigstore stack of `../shared/sigstore-stack` (Fulcio
//! 1.8.8, Rekor v2, the timestamp authority, GitHub-style and email OIDC issuers), started
//! once for this test binary and stopped when it exits: opship signs and attests with a
//! GitHub Actions token and an email token; cosign 3 (trusted root, tlog and timestamp
//! checks) and cosign 2 (`--ca-roots`, cosign 2 format) verify with the right identity and
//! refuse a wrong identity, issuer or repository; the entries are in Rekor (its checkpoint);
//! failures (no token, wrong audience, expired, Fulcio down, Rekor down after the
//! certificate) exit 2 with the reason and write nothing to the registry. The stack and its
//! helpers are shared with `keyless_release`.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use crate::support_registry::{TestRegistry, free_port, isolated, manifest_status, ok, require};
use crate::{Run, repo, run};

/// A running stack: its directory and the variables of `DIR/env`.
pub(crate) struct Stack {
    dir: PathBuf,
    env: BTreeMap<String, String>,
}

fn stack_script(name: &str) -> PathBuf {
    repo().join("../shared/sigstore-stack").join(name)
}

/// The stack, started on first use; a watcher runs `down` when this test process is gone.
pub(crate) fn stack() -> &'static Stack {
    static STACK: OnceLock<Stack> = OnceLock::new();
    STACK.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("opship-sigstore-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let dir = base.join("stack");
        let up = ok(run(Command::new(stack_script("up")).arg(&dir)), "sigstore-stack up");
        let _ = up;
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; '{down}' '{dir}' >/dev/null 2>&1; rm -rf '{base}'",
            pid = std::process::id(),
            down = stack_script("down").display(),
            dir = dir.display(),
            base = base.display(),
        );
        // Detached: the outer shell returns at once, the watcher outlives this process.
        let status = Command::new("sh")
            .args(["-c", &format!("( {script} ) >/dev/null 2>&1 </dev/null &")])
            .status()
            .expect("stack watcher");
        assert!(status.success());
        let text = std::fs::read_to_string(dir.join("env")).unwrap();
        let env = text
            .lines()
            .filter_map(|l| l.strip_prefix("export "))
            .flat_map(|l| {
                // `A=1 B=2` on one line, `X='a b'` quoted.
                let mut out = Vec::new();
                let mut rest = l;
                while let Some((k, v)) = rest.split_once('=') {
                    let (value, next) = if let Some(q) = v.strip_prefix('\'') {
                        let end = q.find('\'').unwrap_or(q.len());
                        (q[..end].to_owned(), q.get(end + 1..).unwrap_or(""))
                    } else {
                        match v.split_once(' ') {
                            Some((a, b)) => (a.to_owned(), b),
                            None => (v.to_owned(), ""),
                        }
                    };
                    out.push((k.trim().to_owned(), value));
                    rest = next.trim_start();
                    if rest.is_empty() {
                        break;
                    }
                }
                out
            })
            .collect();
        Stack { dir, env }
    })
}

impl Stack {
    pub(crate) fn var(&self, k: &str) -> &str {
        self.env
            .get(k)
            .unwrap_or_else(|| panic!("{k} not in the stack's env"))
    }

    /// A fresh token file (`token DIR profile ARGS…`).
    pub(crate) fn token(&self, profile: &str, extra: &[&str]) -> String {
        let r = ok(
            run(Command::new(stack_script("token"))
                .arg(&self.dir)
                .arg(profile)
                .args(extra)),
            "token",
        );
        r.stdout.trim().to_owned()
    }
}

/// A one-file image pushed with crane to `addr/repo_tag`; its digest.
fn image(tmp: &Path, addr: &str, repo_tag: &str) -> String {
    require("crane", "crane (scripts/peers)");
    let dir = tmp.join(repo_tag.replace([':', '/'], "-"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("file.txt"), repo_tag).unwrap();
    let tar = dir.join("layer.tar");
    assert!(
        Command::new("tar")
            .arg("-C")
            .arg(&dir)
            .args(["-cf"])
            .arg(&tar)
            .arg("file.txt")
            .status()
            .unwrap()
            .success()
    );
    let r = ok(
        run(Command::new("crane")
            .args(["append", "--insecure", "-f"])
            .arg(&tar)
            .args(["-t", &format!("{addr}/{repo_tag}")])),
        "crane append",
    );
    r.stdout.trim().rsplit('@').next().unwrap().to_owned()
}

/// opship without any token in its environment.
pub(crate) fn opship_clean(home: &Path) -> Command {
    let mut c = isolated(home);
    c.env_remove("SIGSTORE_ID_TOKEN")
        .env_remove("ACTIONS_ID_TOKEN_REQUEST_URL")
        .env_remove("ACTIONS_ID_TOKEN_REQUEST_TOKEN")
        .stdin(Stdio::null());
    c
}

pub(crate) fn cosign(major: u8, home: &Path) -> Command {
    let name = format!("cosign{major}");
    require(
        &name,
        "cosign (scripts/peers puts cosign2 and cosign3 on PATH)",
    );
    let mut c = Command::new(name);
    c.env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .stdin(Stdio::null());
    c
}

pub(crate) fn refuses(r: Run, what: &str) -> Run {
    assert_ne!(
        r.code, 0,
        "{what} should fail\nstdout:\n{}\nstderr:\n{}",
        r.stdout, r.stderr
    );
    r
}

/// `cosign3 verify[-attestation]` with the trusted root (tlog and timestamps checked).
pub(crate) fn cosign3_verify(
    s: &Stack,
    home: &Path,
    what: &str,
    extra: &[&str],
    image: &str,
) -> Run {
    run(cosign(3, home)
        .args([what, "--trusted-root", s.var("SIGSTORE_TRUSTED_ROOT")])
        .args(["--insecure-ignore-sct", "--allow-http-registry"])
        .args(extra)
        .arg(image))
}

#[test]
fn keyless_sign_and_attest_verified_by_cosign() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let sc = s.var("SIGSTORE_SIGNING_CONFIG");
    let gh_identity = s.var("GITHUB_IDENTITY");
    let gh_issuer = s.var("OIDC_ISSUER_URL");

    // GitHub Actions token, cosign 3's format (the default for a new image).
    let d = image(tmp.path(), &reg.addr, "app:1");
    let img = format!("{}/app@{d}", reg.addr);
    let tok = s.token("github", &[]);
    let r = ok(
        run(opship_clean(&home).args([
            "sign",
            "--insecure",
            "--signing-config",
            sc,
            "--identity-token",
            &tok,
            "-a",
            "release=1",
            &img,
        ])),
        "opship sign keyless",
    );
    assert!(r.stderr.contains(gh_identity), "{}", r.stderr);
    // No `.sig`: the bundle referrer only.
    assert_eq!(
        manifest_status(&reg.addr, "app", &format!("sha256-{}.sig", &d[7..])),
        404
    );
    let good = [
        "--certificate-identity",
        gh_identity,
        "--certificate-oidc-issuer",
        gh_issuer,
    ];
    let v = ok(
        cosign3_verify(
            s,
            &home,
            "verify",
            &[
                &good[..],
                &[
                    "--certificate-github-workflow-repository",
                    "example-org/example-repo",
                    "-a",
                    "release=1",
                ],
            ]
            .concat(),
            &img,
        ),
        "cosign3 verify",
    );
    let _ = v;
    refuses(
        cosign3_verify(
            s,
            &home,
            "verify",
            &[
                "--certificate-identity",
                "https://github.com/example-org/other/.github/workflows/release.yml@refs/heads/main",
                "--certificate-oidc-issuer",
                gh_issuer,
            ],
            &img,
        ),
        "cosign3 verify, wrong identity",
    );
    refuses(
        cosign3_verify(
            s,
            &home,
            "verify",
            &[
                "--certificate-identity",
                gh_identity,
                "--certificate-oidc-issuer",
                s.var("OIDC_EMAIL_ISSUER_URL"),
            ],
            &img,
        ),
        "cosign3 verify, wrong issuer",
    );
    refuses(
        cosign3_verify(
            s,
            &home,
            "verify",
            &[
                &good[..],
                &[
                    "--certificate-github-workflow-repository",
                    "example-org/other",
                ],
            ]
            .concat(),
            &img,
        ),
        "cosign3 verify, wrong repository",
    );

    // Attest keylessly: the image has cosign 3 bundles, so the attestation is one too.
    let pred = tmp.path().join("prov.json");
    std::fs::write(&pred, r#"{"buildDefinition":{"buildType":"x"}}"#).unwrap();
    ok(
        run(opship_clean(&home)
            .args(["attest", "--insecure", "--signing-config", sc])
            .args(["--identity-token", &s.token("github", &[])])
            .args(["--type", "slsaprovenance1", "--predicate"])
            .arg(&pred)
            .arg(&img)),
        "opship attest keyless",
    );
    ok(
        cosign3_verify(
            s,
            &home,
            "verify-attestation",
            &[&good[..], &["--type", "slsaprovenance1"]].concat(),
            &img,
        ),
        "cosign3 verify-attestation",
    );

    // The log holds the entries: the bundle's log index is below Rekor's checkpoint size.
    // rekor-tiles (POSIX storage) publishes its checkpoint as a file of the tile tree, which
    // is what a static file server would serve; its HTTP read API answers 501.
    let checkpoint = std::fs::read_to_string(s.dir.join("rekor-tiles/checkpoint")).unwrap();
    let size: u64 = checkpoint
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("checkpoint: {checkpoint}"));
    assert!(size >= 2, "{checkpoint}");

    // Email token, cosign 2's format; cosign 2 verifies with --ca-roots.
    let d2 = image(tmp.path(), &reg.addr, "lib:1");
    let img2 = format!("{}/lib@{d2}", reg.addr);
    ok(
        run(opship_clean(&home).args([
            "sign",
            "--insecure",
            "--format",
            "cosign2",
            "--signing-config",
            sc,
            "--identity-token",
            &s.token("email", &[]),
            &img2,
        ])),
        "opship sign keyless cosign2",
    );
    let email = s.var("EMAIL_IDENTITY");
    let email_issuer = s.var("OIDC_EMAIL_ISSUER_URL");
    let cosign2 = |identity: &str, issuer: &str| {
        run(cosign(2, &home)
            .args(["verify", "--ca-roots", s.var("FULCIO_ROOT_PEM")])
            .args(["--certificate-identity", identity])
            .args(["--certificate-oidc-issuer", issuer])
            .args([
                "--insecure-ignore-tlog",
                "--insecure-ignore-sct",
                "--allow-http-registry",
            ])
            .arg(&img2))
    };
    ok(cosign2(email, email_issuer), "cosign2 verify");
    refuses(
        cosign2("other@example.test", email_issuer),
        "cosign2, wrong identity",
    );
    refuses(cosign2(email, gh_issuer), "cosign2, wrong issuer");
}

#[test]
fn keyless_failures_write_nothing() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let d = image(tmp.path(), &reg.addr, "app:1");
    let img = format!("{}/app@{d}", reg.addr);
    let sc = s.var("SIGSTORE_SIGNING_CONFIG");
    let closed = format!("http://127.0.0.1:{}", free_port());
    let fails = |extra: &[&str], reason: &str| {
        let r = run(opship_clean(&home)
            .args(["sign", "--insecure", "--signing-config", sc])
            .args(extra)
            .arg(&img));
        assert_eq!(
            r.code, 2,
            "{reason}\nstdout:\n{}\nstderr:\n{}",
            r.stdout, r.stderr
        );
        assert!(r.stderr.contains(reason), "want {reason:?}\n{}", r.stderr);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
    };
    fails(&[], "no identity token for keyless signing");
    fails(
        &[
            "--identity-token",
            &s.token("github", &["--claims", "aud=not-sigstore"]),
        ],
        "is for the audience `not-sigstore`, not `sigstore`",
    );
    fails(
        &["--identity-token", &s.token("github", &["--ttl", "-60"])],
        "expired at",
    );
    // Fulcio's own refusal is quoted (an email it cannot take as verified).
    fails(
        &[
            "--identity-token",
            &s.token("email", &["--claims", "email_verified:=false"]),
        ],
        "refused (",
    );
    fails(
        &[
            "--identity-token",
            &s.token("github", &[]),
            "--fulcio-url",
            &closed,
        ],
        "cannot reach Fulcio",
    );
    // Rekor down after Fulcio certified the key: nothing in the registry.
    for format in ["cosign3", "cosign2"] {
        fails(
            &[
                "--identity-token",
                &s.token("github", &[]),
                "--rekor-url",
                &closed,
                "--format",
                format,
            ],
            "cannot reach Rekor",
        );
    }
    fails(
        &[
            "--identity-token",
            &s.token("github", &[]),
            "--timestamp-server-url",
            &format!("{closed}/api/v1/timestamp"),
        ],
        "cannot reach the timestamp authority",
    );
    for tag in [
        format!("sha256-{}.sig", &d[7..]),
        format!("sha256-{}", &d[7..]),
    ] {
        assert_eq!(
            manifest_status(&reg.addr, "app", &tag),
            404,
            "{tag} written"
        );
    }
}

/// cosign 3's default `verify-attestation` finds opship's attestation on an image cosign 3
/// signed before (opship follows the image's format), and opship's keyless cosign 3
/// signature leads opship's key attestation to a bundle as well.
#[test]
fn attestation_follows_the_images_format() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pred = tmp.path().join("prov.json");
    std::fs::write(&pred, r#"{"buildDefinition":{"buildType":"x"}}"#).unwrap();
    let prefix = tmp.path().join("k");
    ok(
        run(opship_clean(&home)
            .env("COSIGN_PASSWORD", "pw")
            .args(["key", "generate", "--output-key-prefix"])
            .arg(&prefix)),
        "key generate",
    );
    let key = prefix.with_extension("key");
    let public = prefix.with_extension("pub");
    for (repo, by) in [("c3", "cosign3"), ("op", "opship")] {
        let d = image(tmp.path(), &reg.addr, &format!("{repo}:1"));
        let img = format!("{}/{repo}@{d}", reg.addr);
        let tok = s.token("github", &[]);
        if by == "cosign3" {
            ok(
                run(cosign(3, &home)
                    .args(["sign", "--signing-config", s.var("SIGSTORE_SIGNING_CONFIG")])
                    .args(["--trusted-root", s.var("SIGSTORE_TRUSTED_ROOT")])
                    .args(["--identity-token", &tok, "--yes", "--allow-http-registry"])
                    .arg(&img)),
                "cosign3 sign keyless",
            );
        } else {
            ok(
                run(opship_clean(&home).args([
                    "sign",
                    "--insecure",
                    "--signing-config",
                    s.var("SIGSTORE_SIGNING_CONFIG"),
                    "--identity-token",
                    &tok,
                    &img,
                ])),
                "opship sign keyless",
            );
        }
        ok(
            run(opship_clean(&home)
                .env("COSIGN_PASSWORD", "pw")
                .args(["attest", "--insecure", "--key"])
                .arg(&key)
                .args(["--type", "slsaprovenance1", "--predicate"])
                .arg(&pred)
                .arg(&img)),
            "opship attest --key",
        );
        // With a key, both places: the bundle cosign 3 reads, and the `.att` for cosign 2
        // readers once a `.sig` comes.
        assert_eq!(
            manifest_status(&reg.addr, repo, &format!("sha256-{}.att", &d[7..])),
            200,
            "{by}: no .att next to the bundle"
        );
        ok(
            run(cosign(3, &home)
                .args(["verify-attestation", "--key"])
                .arg(&public)
                .args([
                    "--type",
                    "slsaprovenance1",
                    "--insecure-ignore-tlog=true",
                    "--allow-insecure-registry",
                ])
                .arg(&img)),
            &format!("cosign3 verify-attestation after {by}"),
        );
    }
}

/// GitHub Actions' token service on loopback (the stack's issuer behind it): answers
/// `GET /token?audience=A` with `{"value": TOKEN}` for `Authorization: bearer SECRET` only.
pub(crate) const ACTIONS_SERVER: &str = r#"
import http.server, json, sys, urllib.parse, urllib.request
issuer, secret = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        if self.headers.get("Authorization", "").lower() != "bearer " + secret.lower():
            self.send_response(401); self.end_headers(); return
        aud = q.get("audience", [""])[0]
        tok = urllib.request.urlopen(issuer + "/token?profile=github&aud=" + urllib.parse.quote(aud)).read().decode()
        body = json.dumps({"count": 1, "value": tok}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// GitHub Actions' token service on loopback; its URL (as the runner sets it).
pub(crate) struct Actions {
    child: Child,
    /// The token URL, as the runner sets `ACTIONS_ID_TOKEN_REQUEST_URL`.
    pub(crate) url: String,
}

impl Actions {
    /// Started with the stack's issuer behind it; the request token is `runner-secret`.
    pub(crate) fn start(s: &Stack) -> Actions {
        let mut child = Command::new("python3")
            .args([
                "-c",
                ACTIONS_SERVER,
                s.var("OIDC_ISSUER_URL"),
                "runner-secret",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Actions {
            child,
            url: format!("http://127.0.0.1:{}/token?api-version=2.0", line.trim()),
        }
    }
}

impl Drop for Actions {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn github_actions_token_flow() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let actions = Actions::start(s);
    let url = &actions.url;
    let d = image(tmp.path(), &reg.addr, "op/bundle:1");
    let img = format!("{}/op/bundle@{d}", reg.addr);
    let sign = |bearer: &str| {
        run(opship_clean(&home)
            .env("ACTIONS_ID_TOKEN_REQUEST_URL", url)
            .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", bearer)
            .args(["sign", "--insecure", "--signing-config"])
            .arg(s.var("SIGSTORE_SIGNING_CONFIG"))
            .arg(&img))
    };
    let r = sign("wrong");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("refused (401"), "{}", r.stderr);
    ok(sign("runner-secret"), "opship sign with the Actions token");
    ok(
        cosign3_verify(
            s,
            &home,
            "verify",
            &[
                "--certificate-identity",
                s.var("GITHUB_IDENTITY"),
                "--certificate-oidc-issuer",
                s.var("OIDC_ISSUER_URL"),
                "--certificate-github-workflow-trigger",
                "push",
            ],
            &img,
        ),
        "cosign3 verify of the Actions-token signature",
    );
}

/// One `opship sign` of many images signs them a few at a time (the log integrates entries in
/// batches) and reports them in the order given; cosign 3 verifies every one.
#[test]
fn keyless_sign_of_many_images_reports_them_in_order() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let images: Vec<String> = (0..12)
        .map(|i| {
            let d = image(tmp.path(), &reg.addr, &format!("many{i}:1"));
            format!("{}/many{i}@{d}", reg.addr)
        })
        .collect();
    let r = ok(
        run(opship_clean(&home)
            .args(["sign", "--insecure", "--signing-config"])
            .arg(s.var("SIGSTORE_SIGNING_CONFIG"))
            .args(["--identity-token", &s.token("github", &[])])
            .args(&images)),
        "opship sign of 12 images",
    );
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), images.len(), "{}", r.stdout);
    for (i, line) in lines.iter().enumerate() {
        assert!(line.starts_with(&format!("many{i}@sha256:")), "{line}");
    }
    for img in &images {
        ok(
            cosign3_verify(
                s,
                &home,
                "verify",
                &[
                    "--certificate-identity",
                    s.var("GITHUB_IDENTITY"),
                    "--certificate-oidc-issuer",
                    s.var("OIDC_ISSUER_URL"),
                ],
                img,
            ),
            "cosign3 verify",
        );
    }
}

/// `opship verify` / `verify-attestation` keylessly against the stack's trusted root: opship's
/// signature and attestation (cosign 3 bundles, GitHub token), opship's cosign 2 format (email
/// token, signed timestamp, no Rekor v1 bundle), cosign 3's keyless signature and attestation,
/// and cosign 2's keyless `.sig` all verify with the right identity; a wrong identity, issuer or
/// repository is refused with the field, expected and found; a tampered bundle is refused.
#[test]
fn opship_verifies_keyless_signatures_of_opship_and_cosign() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let sc = s.var("SIGSTORE_SIGNING_CONFIG");
    let tr = s.var("SIGSTORE_TRUSTED_ROOT");
    let (gh, gh_issuer) = (s.var("GITHUB_IDENTITY"), s.var("OIDC_ISSUER_URL"));
    let (email, email_issuer) = (s.var("EMAIL_IDENTITY"), s.var("OIDC_EMAIL_ISSUER_URL"));
    let pred = tmp.path().join("prov.json");
    std::fs::write(&pred, r#"{"buildDefinition":{"buildType":"x"}}"#).unwrap();

    // opship, cosign 3 format, GitHub token: signature and attestation.
    let d = image(tmp.path(), &reg.addr, "op3:1");
    let op3 = format!("{}/op3@{d}", reg.addr);
    ok(
        run(opship_clean(&home)
            .args(["sign", "--insecure", "--signing-config", sc])
            .args(["--identity-token", &s.token("github", &[]), &op3])),
        "opship sign keyless",
    );
    ok(
        run(opship_clean(&home)
            .args(["attest", "--insecure", "--signing-config", sc])
            .args(["--identity-token", &s.token("github", &[])])
            .args(["--type", "slsaprovenance1", "--predicate"])
            .arg(&pred)
            .arg(&op3)),
        "opship attest keyless",
    );
    // opship, cosign 2 format, email token.
    let d = image(tmp.path(), &reg.addr, "op2:1");
    let op2 = format!("{}/op2@{d}", reg.addr);
    ok(
        run(opship_clean(&home)
            .args([
                "sign",
                "--insecure",
                "--format",
                "cosign2",
                "--signing-config",
                sc,
            ])
            .args(["--identity-token", &s.token("email", &[]), &op2])),
        "opship sign keyless cosign2",
    );
    ok(
        run(opship_clean(&home)
            .args([
                "attest",
                "--insecure",
                "--format",
                "cosign2",
                "--signing-config",
                sc,
            ])
            .args(["--identity-token", &s.token("email", &[])])
            .args(["--type", "slsaprovenance1", "--predicate"])
            .arg(&pred)
            .arg(&op2)),
        "opship attest keyless cosign2",
    );
    // cosign 3, GitHub token: signature and attestation.
    let d = image(tmp.path(), &reg.addr, "c3:1");
    let c3 = format!("{}/c3@{d}", reg.addr);
    ok(
        run(cosign(3, &home)
            .args(["sign", "--signing-config", sc, "--trusted-root", tr])
            .args(["--identity-token", &s.token("github", &[])])
            .args(["--yes", "--allow-http-registry", &c3])),
        "cosign3 sign keyless",
    );
    ok(
        run(cosign(3, &home)
            .args(["attest", "--signing-config", sc, "--trusted-root", tr])
            .args(["--identity-token", &s.token("github", &[])])
            .args(["--type", "slsaprovenance1", "--predicate"])
            .arg(&pred)
            .args(["--yes", "--allow-http-registry", &c3])),
        "cosign3 attest keyless",
    );
    // cosign 2, email token: Fulcio and the timestamp authority (cosign 2 cannot write to
    // Rekor v2).
    let d = image(tmp.path(), &reg.addr, "c2:1");
    let c2 = format!("{}/c2@{d}", reg.addr);
    ok(
        run(cosign(2, &home)
            .args(["sign", "--fulcio-url", s.var("FULCIO_URL")])
            .args(["--identity-token", &s.token("email", &[])])
            .args([
                "--tlog-upload=false",
                "--timestamp-server-url",
                s.var("TSA_URL"),
            ])
            .args([
                "--insecure-skip-verify",
                "--yes",
                "--allow-http-registry",
                &c2,
            ])),
        "cosign2 sign keyless",
    );

    let verify = |what: &str, identity: &str, issuer: &str, extra: &[&str], img: &str| {
        run(opship_clean(&home)
            .args([what, "--insecure", "--trusted-root", tr])
            .args(["--certificate-identity", identity])
            .args(["--certificate-oidc-issuer", issuer])
            .arg("--insecure-ignore-sct")
            .args(extra)
            .arg(img))
    };
    let repo = [
        "--certificate-github-workflow-repository",
        "example-org/example-repo",
    ];
    for img in [&op3, &c3] {
        let r = ok(
            verify("verify", gh, gh_issuer, &repo, img),
            "opship verify keyless",
        );
        assert!(
            r.stderr.contains("verified with a certificate for"),
            "{}",
            r.stderr
        );
        assert!(
            r.stderr
                .contains("not checked: certificate transparency SCT"),
            "{}",
            r.stderr
        );
        ok(
            verify(
                "verify-attestation",
                gh,
                gh_issuer,
                &["--type", "slsaprovenance1"],
                img,
            ),
            "opship verify-attestation keyless",
        );
        let r = refuses(
            verify(
                "verify",
                "https://github.com/example-org/other/.github/workflows/release.yml@refs/heads/main",
                gh_issuer,
                &[],
                img,
            ),
            "wrong identity",
        );
        assert!(
            r.stdout
                .contains("certificate identity: expected `https://github.com/example-org/other/"),
            "{}",
            r.stdout
        );
        let r = refuses(verify("verify", gh, email_issuer, &[], img), "wrong issuer");
        assert!(
            r.stdout.contains("certificate OIDC issuer: expected"),
            "{}",
            r.stdout
        );
        let r = refuses(
            verify(
                "verify",
                gh,
                gh_issuer,
                &[
                    "--certificate-github-workflow-repository",
                    "example-org/other",
                ],
                img,
            ),
            "wrong repository",
        );
        assert!(
            r.stdout
                .contains("expected `example-org/other`, found `example-org/example-repo`"),
            "{}",
            r.stdout
        );
        assert_eq!(r.code, 1);
    }
    // cosign 2 format: no Rekor v1 bundle to check, so the log is skipped on request only.
    for img in [&op2, &c2] {
        let r = refuses(verify("verify", email, email_issuer, &[], img), "no tlog");
        assert!(
            r.stdout.contains("no transparency-log entry"),
            "{}",
            r.stdout
        );
        let r = ok(
            verify(
                "verify",
                email,
                email_issuer,
                &["--insecure-ignore-tlog"],
                img,
            ),
            "opship verify keyless cosign2",
        );
        assert!(
            r.stderr.contains("not checked: transparency log"),
            "{}",
            r.stderr
        );
        refuses(
            verify(
                "verify",
                "other@example.test",
                email_issuer,
                &["--insecure-ignore-tlog"],
                img,
            ),
            "cosign2 format, wrong identity",
        );
    }
    // opship's `.att` attestation in cosign 2's format.
    ok(
        verify(
            "verify-attestation",
            email,
            email_issuer,
            &["--insecure-ignore-tlog", "--type", "slsaprovenance1"],
            &op2,
        ),
        "opship verify-attestation keyless cosign2",
    );
    refuses(
        verify(
            "verify-attestation",
            email,
            gh_issuer,
            &["--insecure-ignore-tlog", "--type", "slsaprovenance1"],
            &op2,
        ),
        "cosign2 attestation, wrong issuer",
    );

    // Blobs: cosign 3's bundle verifies; a tampered one (another signature) is refused.
    let blob = tmp.path().join("blob.txt");
    std::fs::write(&blob, "opship keyless blob\n").unwrap();
    let bundle = tmp.path().join("blob.sigstore.json");
    ok(
        run(cosign(3, &home)
            .args(["sign-blob", "--signing-config", sc, "--trusted-root", tr])
            .args(["--identity-token", &s.token("github", &[])])
            .arg("--bundle")
            .arg(&bundle)
            .arg("--yes")
            .arg(&blob)),
        "cosign3 sign-blob",
    );
    let verify_blob = |b: &Path| {
        run(opship_clean(&home)
            .args(["verify-blob", "--trusted-root", tr])
            .args([
                "--certificate-identity",
                gh,
                "--certificate-oidc-issuer",
                gh_issuer,
            ])
            .arg("--insecure-ignore-sct")
            .arg("--bundle")
            .arg(b)
            .arg(&blob))
    };
    ok(verify_blob(&bundle), "opship verify-blob");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    let sig = v["messageSignature"]["signature"]
        .as_str()
        .unwrap()
        .to_owned();
    let flipped = format!(
        "{}{}",
        &sig[..10],
        if &sig[10..11] == "A" { "B" } else { "A" }
    );
    v["messageSignature"]["signature"] = format!("{flipped}{}", &sig[11..]).into();
    let tampered = tmp.path().join("tampered.sigstore.json");
    std::fs::write(&tampered, serde_json::to_vec(&v).unwrap()).unwrap();
    let r = refuses(verify_blob(&tampered), "tampered bundle");
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("verification failed"), "{}", r.stderr);
}

/// `catalog verify` keylessly, with the identity options of `verify`: a bundle signed by the
/// GitHub workflow identity passes, one signed with an email identity is refused with the
/// certificate's mismatch.
#[test]
fn catalog_verify_keyless_by_identity() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let sc = s.var("SIGSTORE_SIGNING_CONFIG");
    let tr = s.var("SIGSTORE_TRUSTED_ROOT");
    let (gh, gh_issuer) = (s.var("GITHUB_IDENTITY"), s.var("OIDC_ISSUER_URL"));
    let mut signed = Vec::new();
    for (name, profile) in [("gh", "github"), ("mail", "email")] {
        let d = image(tmp.path(), &reg.addr, &format!("{name}:1"));
        let reference = format!("{}/{name}@{d}", reg.addr);
        ok(
            run(opship_clean(&home)
                .args(["sign", "--insecure", "--signing-config", sc])
                .args(["--identity-token", &s.token(profile, &[]), &reference])),
            "opship sign keyless",
        );
        signed.push(reference);
    }
    let verify = |index: &Path| {
        run(opship_clean(&home)
            .args(["catalog", "verify"])
            .arg(index)
            .args(["--trusted-root", tr, "--insecure-ignore-sct"])
            .args(["--certificate-identity", gh])
            .args(["--certificate-oidc-issuer", gh_issuer]))
    };
    let good = tmp.path().join("good");
    crate::catalog_verify::catalog(&good, &[("op.v0.0.0", signed[0].clone())]);
    let r = ok(verify(&good), "catalog verify keyless");
    assert!(
        r.stdout.contains(&format!(
            "verified op.v0.0.0 ({}): by a certificate for {gh}",
            signed[0]
        )),
        "{}",
        r.stdout
    );
    let bad = tmp.path().join("bad");
    crate::catalog_verify::catalog(
        &bad,
        &[
            ("op.v0.0.0", signed[0].clone()),
            ("op.v0.1.0", signed[1].clone()),
        ],
    );
    let r = verify(&bad);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let line = r
        .stdout
        .lines()
        .find(|l| l.contains("op.v0.1.0"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        line.starts_with("refused ")
            && line.contains(&format!("certificate identity: expected `{gh}`")),
        "{line}"
    );
}

/// An unanchored `--certificate-identity-regexp` matches identities of other repositories
/// (as cosign's does); every verdict then names the certificate's own identity, issuer and
/// workflow claims, so the signer is never hidden behind the pattern: `verify` (text, and
/// `-o json` with cosign's `optional.Subject`/`Issuer`/`githubWorkflow*`, replacing what the
/// payload claimed there), `verify-attestation`, `catalog verify` (text and JSON), and the
/// email identity too.
#[test]
fn regexp_verdicts_name_the_actual_signer() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let sc = s.var("SIGSTORE_SIGNING_CONFIG");
    let tr = s.var("SIGSTORE_TRUSTED_ROOT");
    let gh_issuer = s.var("OIDC_ISSUER_URL");
    let pred = tmp.path().join("prov.json");
    std::fs::write(&pred, r#"{"buildDefinition":{"buildType":"y"}}"#).unwrap();
    // Two impostors whose identities contain the trusted repository's path: a branch named
    // after it, and a workflow file path holding it.
    let impostors = [
        (
            "evil-org/evil-repo",
            vec![
                "--claims",
                "repository=evil-org/evil-repo",
                "ref=refs/heads/github.com/example-org/example-repo/x",
            ],
            "https://github.com/evil-org/evil-repo/.github/workflows/release.yml@refs/heads/github.com/example-org/example-repo/x",
        ),
        (
            "mallory/tools",
            vec![
                "--claims",
                "repository=mallory/tools",
                "workflow_path=.github/workflows/github.com/example-org/example-repo/a.yml",
            ],
            "https://github.com/mallory/tools/.github/workflows/github.com/example-org/example-repo/a.yml@refs/heads/main",
        ),
    ];
    let regexp = [
        "--certificate-identity-regexp",
        "github.com/example-org/example-repo/",
        "--certificate-oidc-issuer",
        gh_issuer,
    ];
    let mut signed = Vec::new();
    for (i, (repository, claims, identity)) in impostors.iter().enumerate() {
        let d = image(tmp.path(), &reg.addr, &format!("imp{i}:1"));
        let img = format!("{}/imp{i}@{d}", reg.addr);
        // The cosign 2 format, whose payload carries `-a` annotations in `optional`: the
        // impostor claims the trusted identity there.
        ok(
            run(opship_clean(&home)
                .args(["sign", "--insecure", "--format", "cosign2"])
                .args(["--signing-config", sc])
                .args(["-a", &format!("Subject={}", s.var("GITHUB_IDENTITY"))])
                .args(["-a", "githubWorkflowRepository=example-org/example-repo"])
                .args(["--identity-token", &s.token("github", &claims[..]), &img])),
            "impostor sign",
        );
        ok(
            run(opship_clean(&home)
                .args(["attest", "--insecure", "--signing-config", sc])
                .args(["--identity-token", &s.token("github", &claims[..])])
                .args(["--type", "slsaprovenance1", "--predicate"])
                .arg(&pred)
                .arg(&img)),
            "impostor attest",
        );
        let verify = |what: &str, extra: &[&str]| {
            ok(
                run(opship_clean(&home)
                    .args([what, "--insecure", "--trusted-root", tr])
                    .args(regexp)
                    .args(["--insecure-ignore-sct", "--insecure-ignore-tlog"])
                    .args(extra)
                    .arg(&img)),
                "the unanchored regexp matches the impostor, as cosign's does",
            )
        };
        let r = verify("verify", &[]);
        let line = r
            .stdout
            .lines()
            .find(|l| l.starts_with("verified "))
            .unwrap_or_else(|| panic!("{}", r.stdout));
        assert!(
            line.contains(&format!(
                "; signed by {identity} (issuer {gh_issuer}, repository {repository}, ref "
            )),
            "{line}"
        );
        let r = verify("verify", &["-o", "json"]);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let optional = &v[0]["optional"];
        assert_eq!(optional["Subject"], *identity, "{v}");
        assert_eq!(optional["Issuer"], gh_issuer, "{v}");
        assert_eq!(optional["githubWorkflowRepository"], *repository, "{v}");
        assert_eq!(optional["githubWorkflowTrigger"], "push", "{v}");
        let r = verify("verify-attestation", &["--type", "slsaprovenance1"]);
        assert!(
            r.stdout
                .contains(&format!("; signed by {identity} (issuer ")),
            "{}",
            r.stdout
        );
        signed.push((format!("op.v0.{i}.0"), img));
    }

    // catalog verify: text names the pattern and the signer; JSON carries the signer.
    let index = tmp.path().join("index");
    let entries: Vec<(&str, String)> = signed
        .iter()
        .map(|(n, i)| (n.as_str(), i.clone()))
        .collect();
    crate::catalog_verify::catalog(&index, &entries);
    let cverify = |extra: &[&str]| {
        ok(
            run(opship_clean(&home)
                .args(["catalog", "verify"])
                .arg(&index)
                .args(["--trusted-root", tr, "--insecure-ignore-sct"])
                .arg("--insecure-ignore-tlog")
                .args(regexp)
                .args(extra)),
            "catalog verify by regexp",
        )
    };
    let r = cverify(&[]);
    for ((_, _, identity), (name, _)) in impostors.iter().zip(&signed) {
        let line = r
            .stdout
            .lines()
            .find(|l| l.contains(name.as_str()))
            .unwrap_or_else(|| panic!("{}", r.stdout));
        assert!(
            line.contains("by a certificate for /github.com/example-org/example-repo/")
                && line.contains(&format!("; signed by {identity} (issuer {gh_issuer}")),
            "{line}"
        );
    }
    let v: serde_json::Value = serde_json::from_str(&cverify(&["-o", "json"]).stdout).unwrap();
    for (image, (repository, _, identity)) in v["images"].as_array().unwrap().iter().zip(&impostors)
    {
        assert_eq!(image["signer"]["identity"], *identity, "{v}");
        assert_eq!(image["signer"]["issuer"], gh_issuer, "{v}");
        assert_eq!(
            image["signer"]["githubWorkflowRepository"], *repository,
            "{v}"
        );
    }

    // An email identity matched by a pattern is named too.
    let d = image(tmp.path(), &reg.addr, "mail:1");
    let img = format!("{}/mail@{d}", reg.addr);
    ok(
        run(opship_clean(&home)
            .args(["sign", "--insecure", "--signing-config", sc])
            .args([
                "--identity-token",
                &s.token("email", &["--claims", "email=eve@example.test"]),
            ])
            .arg(&img)),
        "email sign",
    );
    let r = ok(
        run(opship_clean(&home)
            .args(["verify", "--insecure", "--trusted-root", tr])
            .args(["--certificate-identity-regexp", "example"])
            .args(["--certificate-oidc-issuer-regexp", "127"])
            .arg("--insecure-ignore-sct")
            .arg(&img)),
        "email verify by regexp",
    );
    assert!(
        r.stdout.contains(&format!(
            "; signed by eve@example.test (issuer {})",
            s.var("OIDC_EMAIL_ISSUER_URL")
        )),
        "{}",
        r.stdout
    );
}

/// `sign --trusted-root` and `attest --trusted-root`, as cosign 3 has them: with the stack's
/// root, signing (both formats) and attesting verify what Fulcio, Rekor and the timestamp
/// authority return, and what they write passes cosign 3; with a root whose Fulcio CA, log key
/// or timestamp authority is another one, exit 2 naming the service and the root, with
/// nothing in the registry; with `--key`, a usage error; a missing root file, an error before
/// any service is asked.
#[test]
fn sign_with_trusted_root_checks_what_the_services_return() {
    let s = stack();
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let sc = s.var("SIGSTORE_SIGNING_CONFIG");
    let tr = s.var("SIGSTORE_TRUSTED_ROOT");
    let pred = tmp.path().join("prov.json");
    std::fs::write(&pred, r#"{"buildDefinition":{"buildType":"tr"}}"#).unwrap();
    let sign = |root: &str, extra: &[&str], img: &str| {
        run(opship_clean(&home)
            .args([
                "sign",
                "--insecure",
                "--signing-config",
                sc,
                "--trusted-root",
                root,
            ])
            .args(["--identity-token", &s.token("github", &[])])
            .args(extra)
            .arg(img))
    };
    let who = [
        "--certificate-identity",
        s.var("GITHUB_IDENTITY"),
        "--certificate-oidc-issuer",
        s.var("OIDC_ISSUER_URL"),
    ];
    for (n, format) in ["cosign3", "cosign2"].iter().enumerate() {
        let d = image(tmp.path(), &reg.addr, &format!("good{n}:1"));
        let img = format!("{}/good{n}@{d}", reg.addr);
        ok(sign(tr, &["--format", format], &img), "sign --trusted-root");
        ok(
            run(opship_clean(&home)
                .args([
                    "attest",
                    "--insecure",
                    "--signing-config",
                    sc,
                    "--trusted-root",
                    tr,
                ])
                .args(["--identity-token", &s.token("github", &[])])
                .args(["--type", "slsaprovenance1", "--predicate"])
                .arg(&pred)
                .arg(&img)),
            "attest --trusted-root",
        );
        if *format == "cosign3" {
            ok(
                cosign3_verify(s, &home, "verify", &who, &img),
                "cosign3 verify",
            );
            let mut att = who.to_vec();
            att.extend(["--type", "slsaprovenance1"]);
            ok(
                cosign3_verify(s, &home, "verify-attestation", &att, &img),
                "cosign3 verify-attestation",
            );
        }
    }

    // Roots that trust other services than the ones that answer.
    let root: serde_json::Value = serde_json::from_slice(&std::fs::read(tr).unwrap()).unwrap();
    let other_key = {
        let out = Command::new("sh")
            .args([
                "-c",
                "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 2>/dev/null | openssl pkey -pubout -outform DER | base64 -w0",
            ])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(!other_key.is_empty());
    let tsa_certs = root["timestampAuthorities"][0]["certChain"]["certificates"].clone();
    let ca_certs = root["certificateAuthorities"][0]["certChain"]["certificates"].clone();
    // Which part of the root is replaced (a JSON pointer), by what, and what the error says.
    let variants = [
        (
            "fulcio",
            "/certificateAuthorities/0/certChain/certificates",
            tsa_certs,
            "the certificate Fulcio at",
        ),
        (
            "rekor",
            "/tlogs/0/publicKey/rawBytes",
            serde_json::Value::from(other_key),
            "what Rekor at",
        ),
        (
            "tsa",
            "/timestampAuthorities/0/certChain/certificates",
            ca_certs,
            "the timestamp authority at",
        ),
    ];
    for (name, pointer, replacement, says) in variants {
        let mut bad = root.clone();
        *bad.pointer_mut(pointer).unwrap() = replacement;
        let file = tmp.path().join(format!("root-{name}.json"));
        std::fs::write(&file, serde_json::to_vec(&bad).unwrap()).unwrap();
        for (n, format) in ["cosign3", "cosign2"].iter().enumerate() {
            let repo = format!("bad{name}{n}");
            let d = image(tmp.path(), &reg.addr, &format!("{repo}:1"));
            let img = format!("{}/{repo}@{d}", reg.addr);
            let r = sign(file.to_str().unwrap(), &["--format", format], &img);
            assert_eq!(r.code, 2, "{name} {format}: {}", r.stderr);
            assert!(
                r.stderr.contains(says)
                    && r.stderr
                        .contains(&format!("--trusted-root {}", file.display())),
                "{name} {format}: {}",
                r.stderr
            );
            assert!(r.stdout.is_empty(), "{}", r.stdout);
            for tag in [
                format!("sha256-{}.sig", &d[7..]),
                format!("sha256-{}", &d[7..]),
            ] {
                assert_eq!(
                    manifest_status(&reg.addr, &repo, &tag),
                    404,
                    "{name}: {tag}"
                );
            }
        }
    }

    // With a key: a usage error; a missing root: named, before any service.
    let r = run(opship_clean(&home).args([
        "sign",
        "--key",
        "k.key",
        "--trusted-root",
        tr,
        "127.0.0.1:9/x@sha256:00",
    ]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot be used with"), "{}", r.stderr);
    let missing = tmp.path().join("no-root.json");
    let r = run(opship_clean(&home)
        .args(["sign", "--insecure", "--trusted-root"])
        .arg(&missing)
        .args(["--fulcio-url", &format!("http://127.0.0.1:{}", free_port())])
        .args(["--identity-token", &s.token("github", &[])])
        .arg(format!("{}/good0@sha256:{}", reg.addr, "0".repeat(64))));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&missing.display().to_string()) && !r.stderr.contains("Fulcio"),
        "{}",
        r.stderr
    );
}

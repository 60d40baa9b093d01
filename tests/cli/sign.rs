//! `opship key generate | sign | verify` against a real registry (distribution 2.8.2 on a
//! loopback port), checked by peers that share no code with opship: an openssl/curl/jq
//! verifier (tests/scripts/verify-cosign.sh), a Python signer on PyPI `cryptography` and
//! `PyNaCl` (tests/scripts/cosign_signer.py, run with the interpreter scripts/test sets up in
//! `.venv`; `OPSHIP_PYTHON` names another), and skopeo copying the signatures.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support_registry::{TestRegistry, build, isolated, json, ok, skopeo};
use crate::{Run, repo, run};

pub(crate) const PASSWORD: &str = "correct horse S3cret-battery";

/// The Python with `cryptography` and `PyNaCl`; the test fails when it is missing.
fn python() -> Command {
    let py = std::env::var_os("OPSHIP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"));
    let probe = Command::new(&py)
        .args(["-c", "import cryptography, nacl"])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{} not runnable ({e}): scripts/test creates .venv with cryptography and PyNaCl",
                py.display()
            )
        });
    assert!(
        probe.status.success(),
        "{} lacks cryptography/PyNaCl (scripts/test installs them): {}",
        py.display(),
        String::from_utf8_lossy(&probe.stderr)
    );
    let mut c = Command::new(py);
    c.arg(repo().join("tests/scripts/cosign_signer.py"));
    c
}

/// Runs the openssl/curl/jq verifier.
fn openssl_verify(reg: &str, repo_name: &str, reference: &str, public: &Path) -> Run {
    for tool in ["openssl", "curl", "jq"] {
        crate::support_registry::require(tool, tool);
    }
    run(Command::new("bash")
        .arg(repo().join("tests/scripts/verify-cosign.sh"))
        .args([reg, repo_name, reference])
        .arg(public))
}

/// `opship` isolated from the user's credentials, with the key password in the environment.
pub(crate) fn opship_pw(home: &Path, password: &str) -> Command {
    let mut c = isolated(home);
    c.env("COSIGN_PASSWORD", password).stdin(Stdio::null());
    c
}

/// A registry with the sample bundles 0.3.0 and 0.2.0 pushed as `bundle:v0.3.0`/`v0.2.0`.
pub(crate) struct Setup {
    pub(crate) reg: TestRegistry,
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) home: PathBuf,
    layout: PathBuf,
    /// Digests of v0.3.0 and v0.2.0.
    pub(crate) d3: String,
    pub(crate) d2: String,
}

impl Setup {
    pub(crate) fn new() -> Self {
        let reg = TestRegistry::start(None);
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let (layout, d3) = build(tmp.path(), "0.3.0");
        let (_, d2) = build(tmp.path(), "0.2.0");
        for v in ["0.3.0", "0.2.0"] {
            ok(
                run(isolated(&home).args([
                    "push",
                    &format!("{}:{v}", layout.display()),
                    &format!("{}/bundle:v{v}", reg.addr),
                ])),
                "push",
            );
        }
        Setup {
            reg,
            tmp,
            home,
            layout,
            d3,
            d2,
        }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    pub(crate) fn image(&self, tag: &str) -> String {
        format!("{}/bundle:{tag}", self.reg.addr)
    }

    /// `opship key generate` with `password`; returns (private, public).
    pub(crate) fn keys(&self, prefix: &str, password: &str) -> (PathBuf, PathBuf) {
        let p = self.path(prefix);
        ok(
            run(opship_pw(&self.home, password)
                .args(["key", "generate", "--output-key-prefix"])
                .arg(&p)),
            "key generate",
        );
        (p.with_extension("key"), p.with_extension("pub"))
    }

    pub(crate) fn sign(&self, key: &Path, password: &str, extra: &[&str], reference: &str) -> Run {
        run(opship_pw(&self.home, password)
            .args(["sign", "--key"])
            .arg(key)
            .args(extra)
            .arg(reference))
    }

    pub(crate) fn verify(&self, public: &Path, extra: &[&str], reference: &str) -> Run {
        run(isolated(&self.home)
            .args(["verify", "--key"])
            .arg(public)
            .args(extra)
            .arg(reference))
    }

    fn py(&self, args: &[&str]) -> Run {
        ok(run(python().args(args)), "cosign_signer.py")
    }
}

pub(crate) fn fails_with(r: Run, reason: &str) -> Run {
    assert_eq!(
        r.code, 1,
        "expected exit 1\nstdout:\n{}\nstderr:\n{}",
        r.stdout, r.stderr
    );
    assert!(
        r.stdout.contains(reason) || r.stderr.contains(reason),
        "expected `{reason}`\nstdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    r
}

#[test]
fn key_generate_writes_cosign_key_files_python_can_open() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let prefix = tmp.path().join("release");
    ok(
        run(opship_pw(&home, PASSWORD)
            .args(["key", "generate", "--output-key-prefix"])
            .arg(&prefix)),
        "key generate",
    );
    let key = prefix.with_extension("key");
    let public = prefix.with_extension("pub");
    let text = std::fs::read_to_string(&key).unwrap();
    assert!(text.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"));
    assert!(text.ends_with("-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // The envelope is cosign's: scrypt N=32768 r=8 p=1, 32-byte salt, 24-byte nonce.
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    let env: serde_json::Value = {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    assert_eq!(env["kdf"]["name"], "scrypt");
    assert_eq!(
        env["kdf"]["params"],
        serde_json::json!({"N": 32768, "r": 8, "p": 1})
    );
    assert_eq!(env["cipher"]["name"], "nacl/secretbox");

    // PyNaCl + hashlib.scrypt decrypt it to the key whose public half is the .pub file.
    let r = ok(
        run(python()
            .arg("pubkey")
            .arg(&key)
            .args(["--password", PASSWORD])),
        "python pubkey",
    );
    assert_eq!(r.stdout, std::fs::read_to_string(&public).unwrap());

    // Never overwritten without --force; with it, a new key.
    let r = run(opship_pw(&home, PASSWORD)
        .args(["key", "generate", "--output-key-prefix"])
        .arg(&prefix));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("not overwriting it without --force"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_to_string(&key).unwrap(), text);
    ok(
        run(opship_pw(&home, "")
            .args(["key", "generate", "--force", "--output-key-prefix"])
            .arg(&prefix)),
        "key generate --force, empty password",
    );
    assert_ne!(std::fs::read_to_string(&key).unwrap(), text);
    let r = ok(
        run(python().arg("pubkey").arg(&key).args(["--password", ""])),
        "python pubkey, empty password",
    );
    assert_eq!(r.stdout, std::fs::read_to_string(&public).unwrap());

    // --password-file; no password source and no terminal: a clear error, nothing written.
    let pwfile = tmp.path().join("pw.txt");
    std::fs::write(&pwfile, "from-file\n").unwrap();
    let other = tmp.path().join("other");
    ok(
        run(isolated(&home)
            .env_remove("COSIGN_PASSWORD")
            .args(["key", "generate", "--password-file"])
            .arg(&pwfile)
            .arg("--output-key-prefix")
            .arg(&other)),
        "key generate --password-file",
    );
    ok(
        run(python()
            .arg("pubkey")
            .arg(other.with_extension("key"))
            .args(["--password", "from-file"])),
        "python reads the --password-file key",
    );
    let none = tmp.path().join("none");
    let r = run(isolated(&home)
        .env_remove("COSIGN_PASSWORD")
        .stdin(Stdio::null())
        .args(["key", "generate", "--output-key-prefix"])
        .arg(&none));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("set COSIGN_PASSWORD"), "{}", r.stderr);
    assert!(!none.with_extension("key").exists());
}

/// Drives `opship ARGS…` on a pseudo-terminal (Python's `pty`): answers each password prompt
/// with the next of `answers`; returns (exit code, everything the terminal showed).
fn on_terminal(dir: &Path, answers: &[&str], args: &[&str]) -> (i32, String) {
    // Answers only once the terminal's echo is off (rpassword prints the prompt first), so
    // an echoed password would be opship's fault, not the driver's.
    const DRIVER: &str = r#"
import os, pty, sys, termios, time
answers = sys.argv[1].split("\n")
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
seen = b""
answered = 0
while True:
    try:
        chunk = os.read(fd, 1024)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
    while answered < seen.count(b"password") and answered < len(answers):
        deadline = time.time() + 30
        while termios.tcgetattr(fd)[3] & termios.ECHO and time.time() < deadline:
            time.sleep(0.01)
        os.write(fd, answers[answered].encode() + b"\n")
        answered += 1
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let bin =
        std::env::var_os("OPSHIP_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_opship").into());
    let out = Command::new("python3")
        .args(["-c", DRIVER, &answers.join("\n")])
        .arg(bin)
        .args(args)
        .current_dir(dir)
        .env_remove("COSIGN_PASSWORD")
        .env("NO_COLOR", "1")
        .output()
        .expect("python3 (pty driver)");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn key_generate_prompts_without_echo_on_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, screen) = on_terminal(
        tmp.path(),
        &["tty-Secret-1", "tty-Secret-1"],
        &["key", "generate"],
    );
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("Enter password for private key: "),
        "{screen}"
    );
    assert!(
        screen.contains("Enter password for private key again: "),
        "{screen}"
    );
    assert!(
        !screen.contains("tty-Secret-1"),
        "password echoed:\n{screen}"
    );
    let r = ok(
        run(python()
            .arg("pubkey")
            .arg(tmp.path().join("cosign.key"))
            .args(["--password", "tty-Secret-1"])),
        "python opens the prompted key",
    );
    assert_eq!(
        r.stdout,
        std::fs::read_to_string(tmp.path().join("cosign.pub")).unwrap()
    );
    // Two different answers: nothing written.
    let other = tmp.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (code, screen) = on_terminal(&other, &["one", "two"], &["key", "generate"]);
    assert_eq!(code, 2, "{screen}");
    assert!(screen.contains("the passwords do not match"), "{screen}");
    assert!(!other.join("cosign.key").exists());
}

/// Acceptance 1: what `opship sign` pushes verifies with openssl/curl/jq alone, and with
/// `opship verify`; a second signature keeps the first.
#[test]
fn sign_verifies_with_openssl_and_keeps_existing_signatures() {
    let s = Setup::new();
    let (key, public) = s.keys("k", PASSWORD);
    let r = ok(s.sign(&key, PASSWORD, &[], &s.image("v0.3.0")), "sign");
    assert!(
        r.stderr
            .contains(&format!("{} resolved to {}", s.image("v0.3.0"), s.d3)),
        "{}",
        r.stderr
    );
    let sig_tag = format!("sha256-{}.sig", &s.d3[7..]);
    assert_eq!(r.stdout.trim(), format!("{}/bundle:{sig_tag}", s.reg.addr));

    let v = ok(
        openssl_verify(&s.reg.addr, "bundle", "v0.3.0", &public),
        "openssl verifier",
    );
    assert!(
        v.stdout.contains(&format!(
            "layer 0: Verified OK identity={}/bundle\n",
            s.reg.addr
        )),
        "{}",
        v.stdout
    );
    // The payload is byte for byte cosign's.
    let dir = s.path("fetched");
    s.py(&[
        "fetch-sig",
        &s.reg.addr,
        "bundle",
        &s.d3,
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read_to_string(dir.join("payload")).unwrap(),
        format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"{}/bundle"}},"image":{{"docker-manifest-digest":"{}"}},"type":"cosign container image signature"}},"optional":null}}"#,
            s.reg.addr, s.d3
        )
    );
    let r = ok(s.verify(&public, &[], &s.image("v0.3.0")), "verify");
    assert!(r.stdout.starts_with("verified "), "{}", r.stdout);

    // A second key signs too, with an annotation, by digest: both signatures stay.
    let (key2, public2) = s.keys("k2", "");
    let by_digest = format!("{}/bundle@{}", s.reg.addr, s.d3);
    let r = ok(
        s.sign(
            &key2,
            "",
            &["-a", "release=0.3.0", "-a", "team=<ops>"],
            &by_digest,
        ),
        "sign by digest",
    );
    assert!(r.stderr.contains("(2 signatures there)"), "{}", r.stderr);
    let v = ok(
        openssl_verify(&s.reg.addr, "bundle", &s.d3, &public2),
        "openssl key 2",
    );
    assert!(
        v.stdout.contains("layer 0: Verification failure"),
        "{}",
        v.stdout
    );
    assert!(v.stdout.contains("layer 1: Verified OK"), "{}", v.stdout);
    ok(
        openssl_verify(&s.reg.addr, "bundle", "v0.3.0", &public),
        "openssl key 1 still",
    );
    let r = ok(
        s.verify(
            &public2,
            &["-o", "json", "-a", "release=0.3.0"],
            &s.image("v0.3.0"),
        ),
        "verify json",
    );
    let payloads = json(&r.stdout);
    assert_eq!(payloads.as_array().unwrap().len(), 1, "{}", r.stdout);
    assert_eq!(payloads[0]["optional"]["team"], "<ops>");
    assert_eq!(
        payloads[0]["critical"]["image"]["docker-manifest-digest"],
        s.d3.as_str()
    );
    // A required annotation the payload lacks.
    fails_with(
        s.verify(&public, &["-a", "release=0.3.0"], &s.image("v0.3.0")),
        "the payload has no annotation `release`",
    );
    // An image without signatures.
    fails_with(s.verify(&public, &[], &s.image("v0.2.0")), "no signatures");
    let r = run(isolated(&s.home)
        .args(["verify", "--key"])
        .arg(&public)
        .args([s.image("v0.3.0"), s.image("v0.2.0")]));
    assert_eq!(r.code, 1, "one of two unsigned: {}", r.stderr);

    // Several images in one run; two names of one image are signed once, and the image
    // already signed with this payload and key gets nothing new (cosign's rule).
    let r = ok(
        run(opship_pw(&s.home, PASSWORD)
            .args(["sign", "--key"])
            .arg(&key)
            .args([s.image("v0.3.0"), s.image("v0.2.0"), by_digest.clone()])),
        "sign three references",
    );
    assert_eq!(r.stdout.lines().count(), 3, "{}", r.stdout);
    assert_eq!(
        r.stderr.matches("(2 signatures there)").count(),
        2,
        "{}",
        r.stderr
    );
    assert_eq!(
        r.stderr.matches("already signed").count(),
        2,
        "{}",
        r.stderr
    );
    assert_eq!(
        r.stderr.matches("(1 signature there)").count(),
        1,
        "{}",
        r.stderr
    );
    ok(
        run(isolated(&s.home)
            .args(["verify", "--key"])
            .arg(&public)
            .args([s.image("v0.3.0"), s.image("v0.2.0")])),
        "verify two",
    );
    let v = ok(
        openssl_verify(&s.reg.addr, "bundle", "v0.3.0", &public),
        "openssl, 2 layers",
    );
    assert_eq!(v.stdout.matches("Verified OK").count(), 1, "{}", v.stdout);
    assert_eq!(v.stdout.matches("layer ").count(), 2, "{}", v.stdout);
}

/// Acceptance 2: keys and signatures written by the Python signer (both PEM labels, scrypt
/// N=32768/65536/131072, empty and non-empty password) are accepted by opship, and opship
/// signs with those keys.
#[test]
fn python_signer_keys_and_signatures_are_accepted() {
    let s = Setup::new();
    let cases = [
        ("sigstore", 32768, ""),
        ("sigstore", 32768, PASSWORD),
        ("sigstore", 65536, ""),
        ("sigstore", 65536, PASSWORD),
        ("cosign", 32768, ""),
        ("cosign", 32768, PASSWORD),
        ("cosign", 65536, ""),
        ("cosign", 65536, PASSWORD),
        ("sigstore", 131072, PASSWORD),
    ];
    for (i, (label, n, pw)) in cases.iter().enumerate() {
        let what = format!("{label} N={n} password={}", !pw.is_empty());
        let prefix = s.path(&format!("py{i}"));
        s.py(&[
            "genkey",
            prefix.to_str().unwrap(),
            "--label",
            label,
            "--n",
            &n.to_string(),
            "--password",
            pw,
        ]);
        let key = prefix.with_extension("key");
        let public = prefix.with_extension("pub");
        // Python signs v0.2.0 (replacing its .sig manifest); opship verifies.
        s.py(&[
            "sign",
            &s.reg.addr,
            "bundle",
            &s.d2,
            key.to_str().unwrap(),
            "--password",
            pw,
        ]);
        let r = s.verify(&public, &[], &s.image("v0.2.0"));
        assert_eq!(r.code, 0, "{what}: {}{}", r.stdout, r.stderr);
        // opship signs v0.3.0 with the Python key; openssl verifies with the Python .pub.
        let r = s.sign(&key, pw, &[], &s.image("v0.3.0"));
        assert_eq!(r.code, 0, "{what}: {}", r.stderr);
        let v = openssl_verify(&s.reg.addr, "bundle", "v0.3.0", &public);
        assert_eq!(v.code, 0, "{what}: {}{}", v.stdout, v.stderr);
        assert!(
            v.stdout.contains(&format!("layer {i}: Verified OK")),
            "{what}: {}",
            v.stdout
        );
    }
    // Every signature opship added is still there, each verifiable by its own key only.
    let v = openssl_verify(&s.reg.addr, "bundle", "v0.3.0", &s.path("py3.pub"));
    assert_eq!(v.stdout.matches("Verified OK").count(), 1, "{}", v.stdout);
    assert_eq!(
        v.stdout.matches("Verification failure").count(),
        cases.len() - 1
    );
}

// Acceptance 3: negative controls. Each must fail verification with a clear reason, in
// opship and (where it is about the signature) in the openssl verifier.

#[test]
fn negative_wrong_public_key() {
    let s = Setup::new();
    let (key, public) = s.keys("k", PASSWORD);
    let (_, other) = s.keys("other", PASSWORD);
    ok(s.sign(&key, PASSWORD, &[], &s.image("v0.3.0")), "sign");
    ok(
        s.verify(&public, &[], &s.image("v0.3.0")),
        "control: right key",
    );
    fails_with(
        s.verify(&other, &[], &s.image("v0.3.0")),
        "the signature does not verify with the public key",
    );
    let v = openssl_verify(&s.reg.addr, "bundle", "v0.3.0", &other);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("Verification failure"), "{}", v.stdout);
}

/// Pushes `payload` with `signature` (base64) as the `.sig` of `digest`.
pub(crate) fn push_raw(s: &Setup, digest: &str, payload: &[u8], signature: &str) {
    let file = s.path("raw-payload");
    std::fs::write(&file, payload).unwrap();
    s.py(&[
        "push-sig",
        &s.reg.addr,
        "bundle",
        digest,
        "--payload",
        file.to_str().unwrap(),
        "--signature",
        signature,
    ]);
}

/// Signs v0.3.0 with opship and fetches what was pushed: (public key, payload, signature).
pub(crate) fn signed(s: &Setup) -> (PathBuf, Vec<u8>, String) {
    let (key, public) = s.keys("k", PASSWORD);
    ok(s.sign(&key, PASSWORD, &[], &s.image("v0.3.0")), "sign");
    let dir = s.path("fetched");
    s.py(&[
        "fetch-sig",
        &s.reg.addr,
        "bundle",
        &s.d3,
        dir.to_str().unwrap(),
    ]);
    (
        public,
        std::fs::read(dir.join("payload")).unwrap(),
        std::fs::read_to_string(dir.join("signature.b64")).unwrap(),
    )
}

#[test]
fn negative_payload_byte_changed() {
    let s = Setup::new();
    let (public, payload, sig) = signed(&s);
    // Control: the fetched pieces pushed back unchanged verify.
    push_raw(&s, &s.d3, &payload, &sig);
    ok(
        s.verify(&public, &[], &s.image("v0.3.0")),
        "control: unchanged",
    );
    let mut changed = payload.clone();
    let i = changed.len() - 3; // `null}` → `nuLl}`
    changed[i] = changed[i].to_ascii_uppercase();
    assert_ne!(changed, payload);
    push_raw(&s, &s.d3, &changed, &sig);
    fails_with(
        s.verify(&public, &[], &s.image("v0.3.0")),
        "the signature does not verify with the public key",
    );
    let v = openssl_verify(&s.reg.addr, "bundle", "v0.3.0", &public);
    assert_eq!(v.code, 1, "{}", v.stdout);
}

#[test]
fn negative_payload_names_another_digest() {
    let s = Setup::new();
    let prefix = s.path("py");
    s.py(&["genkey", prefix.to_str().unwrap(), "--password", PASSWORD]);
    let key = prefix.with_extension("key");
    let public = prefix.with_extension("pub");
    // A valid signature by the right key, over a payload claiming v0.2.0's digest, stored as
    // v0.3.0's signature.
    s.py(&[
        "sign",
        &s.reg.addr,
        "bundle",
        &s.d3,
        key.to_str().unwrap(),
        "--password",
        PASSWORD,
        "--claim-digest",
        &s.d2,
    ]);
    fails_with(
        s.verify(&public, &[], &s.image("v0.3.0")),
        &format!("the payload signs {}, not this image ({})", s.d2, s.d3),
    );
    let v = openssl_verify(&s.reg.addr, "bundle", "v0.3.0", &public);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("names"), "{}", v.stdout);
}

#[test]
fn negative_signature_copied_to_another_image() {
    let s = Setup::new();
    let (key, public) = s.keys("k", PASSWORD);
    ok(s.sign(&key, PASSWORD, &[], &s.image("v0.3.0")), "sign");
    s.py(&[
        "copy-tag",
        &s.reg.addr,
        "bundle",
        &format!("sha256-{}.sig", &s.d3[7..]),
        &format!("sha256-{}.sig", &s.d2[7..]),
    ]);
    ok(
        s.verify(&public, &[], &s.image("v0.3.0")),
        "control: original",
    );
    fails_with(
        s.verify(&public, &[], &s.image("v0.2.0")),
        &format!("the payload signs {}, not this image ({})", s.d3, s.d2),
    );
    let v = openssl_verify(&s.reg.addr, "bundle", "v0.2.0", &public);
    assert_eq!(v.code, 1, "{}", v.stdout);
}

#[test]
fn negative_truncated_signature() {
    use base64::Engine as _;
    let s = Setup::new();
    let (public, payload, sig) = signed(&s);
    let der = base64::engine::general_purpose::STANDARD
        .decode(sig.trim())
        .unwrap();
    let truncated = base64::engine::general_purpose::STANDARD.encode(&der[..der.len() - 4]);
    push_raw(&s, &s.d3, &payload, &truncated);
    fails_with(
        s.verify(&public, &[], &s.image("v0.3.0")),
        "the signature does not verify with the public key",
    );
    let v = openssl_verify(&s.reg.addr, "bundle", "v0.3.0", &public);
    assert_eq!(v.code, 1, "{}", v.stdout);
}

#[test]
fn negative_wrong_key_password() {
    let s = Setup::new();
    let (key, _) = s.keys("k", PASSWORD);
    let r = s.sign(&key, "not the password", &[], &s.image("v0.3.0"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("{}: wrong password", key.display())),
        "{}",
        r.stderr
    );
    // Nothing was pushed.
    let tags = ok(
        run(isolated(&s.home).args(["tags", &format!("{}/bundle", s.reg.addr)])),
        "tags",
    );
    assert!(!tags.stdout.contains(".sig"), "{}", tags.stdout);
    // A Python key with a non-empty password, opened with the empty one.
    let prefix = s.path("py");
    s.py(&[
        "genkey",
        prefix.to_str().unwrap(),
        "--label",
        "cosign",
        "--password",
        "x",
    ]);
    let r = s.sign(&prefix.with_extension("key"), "", &[], &s.image("v0.3.0"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("wrong password"), "{}", r.stderr);
    // scrypt parameters Go cosign refuses are refused before any key derivation.
    let weak = s.path("weak");
    s.py(&[
        "genkey",
        weak.to_str().unwrap(),
        "--n",
        "16384",
        "--password",
        "x",
    ]);
    let r = s.sign(&weak.with_extension("key"), "x", &[], &s.image("v0.3.0"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("unsupported scrypt parameters N=16384 r=8 p=1"),
        "{}",
        r.stderr
    );
    // The public key given as the signing key.
    let r = s.sign(&weak.with_extension("pub"), "x", &[], &s.image("v0.3.0"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("this is a public key"), "{}", r.stderr);
}

/// Acceptance 5: a failing run prints no secret and writes nothing but the key files.
#[test]
fn no_secret_in_output_or_files() {
    let s = Setup::new();
    let (key, _) = s.keys("k", PASSWORD);
    let key_text = std::fs::read_to_string(&key).unwrap();
    let before = crate::read_tree(s.tmp.path());
    for (pw, reference) in [
        ("wrong-Pa55-XYZZY", s.image("v0.3.0")),
        (PASSWORD, format!("{}/bundle:nope", s.reg.addr)),
        (PASSWORD, format!("{}:0.3.0", s.layout.display())),
    ] {
        let r = run(opship_pw(&s.home, pw)
            .args(["-vv", "sign", "--key"])
            .arg(&key)
            .arg(&reference));
        assert_eq!(r.code, 2, "{}", r.stderr);
        let all = format!("{}{}", r.stdout, r.stderr);
        for secret in [PASSWORD, "wrong-Pa55-XYZZY", "S3cret"] {
            assert!(!all.contains(secret), "`{secret}` in output:\n{all}");
        }
        for line in key_text.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!all.contains(line), "key material in output:\n{all}");
        }
    }
    // No file changed or appeared, and no file but the key holds the password in any form.
    assert_eq!(crate::read_tree(s.tmp.path()), before);
    for (path, content) in &before {
        assert!(!content.contains(PASSWORD), "password in {path}");
    }
}

/// Acceptance 4: a signature made in a layout travels with `opship push`, survives `skopeo
/// copy` to another repository (with sigstore attachments enabled), and still verifies with
/// opship and openssl.
#[test]
fn signatures_survive_push_from_layout_and_skopeo_copy() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, digest) = build(tmp.path(), "0.3.0");
    let prefix = tmp.path().join("k");
    ok(
        run(opship_pw(&home, PASSWORD)
            .args(["key", "generate", "--output-key-prefix"])
            .arg(&prefix)),
        "key generate",
    );
    let key = prefix.with_extension("key");
    let public = prefix.with_extension("pub");
    let src = format!("{}:0.3.0", layout.display());
    let repo_ref = format!("{}/operators/bundle", reg.addr);

    // A layout image has no repository: the identity must be given.
    let r = run(opship_pw(&home, PASSWORD)
        .args(["sign", "--key"])
        .arg(&key)
        .arg(&src));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("pass --identity"), "{}", r.stderr);
    let r = run(opship_pw(&home, PASSWORD)
        .args(["sign", "--bundle-format", "--identity", &repo_ref, "--key"])
        .arg(&key)
        .arg(&src));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--bundle-format needs registry references"),
        "{}",
        r.stderr
    );
    let r = run(opship_pw(&home, PASSWORD)
        .args(["sign", "--identity", &repo_ref, "--key"])
        .arg(&key)
        .args([&src, &src]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--identity names one repository"),
        "{}",
        r.stderr
    );
    let r = ok(
        run(opship_pw(&home, PASSWORD)
            .args(["sign", "--key"])
            .arg(&key)
            .args(["--identity", &repo_ref, &format!("oci:{src}")])),
        "sign layout",
    );
    let sig_tag = format!("sha256-{}.sig", &digest[7..]);
    assert_eq!(r.stdout.trim(), format!("{}:{sig_tag}", layout.display()));
    let tags = opship_core::image::Layout::new(&layout).tags().unwrap();
    assert!(tags.contains(&sig_tag), "{tags:?}");
    // skopeo still reads the layout, and the image digest is unchanged.
    let out = skopeo()
        .args(["inspect", &format!("oci:{src}")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json(&String::from_utf8_lossy(&out.stdout))["Digest"],
        digest.as_str()
    );
    ok(
        run(isolated(&home)
            .args(["verify", "--key"])
            .arg(&public)
            .args(["--identity", &repo_ref, &src])),
        "verify in the layout",
    );

    // Push the image: its signature goes along.
    let target = format!("{repo_ref}:v0.3.0");
    let r = ok(run(isolated(&home).args(["push", &src, &target])), "push");
    assert!(r.stderr.contains("pushed its signatures"), "{}", r.stderr);
    ok(
        run(isolated(&home)
            .args(["verify", "--key"])
            .arg(&public)
            .arg(&target)),
        "verify pushed",
    );
    ok(
        openssl_verify(&reg.addr, "operators/bundle", "v0.3.0", &public),
        "openssl on pushed",
    );
    // Pushing again adds nothing (same signature, deduplicated).
    let r = ok(
        run(isolated(&home).args(["push", &src, &target])),
        "re-push",
    );
    assert!(r.stderr.contains("(1 in all)"), "{}", r.stderr);

    // skopeo copy to another repository, sigstore attachments on (registries.d), and a plain
    // copy, which leaves the signatures behind.
    let policy = tmp.path().join("policy.json");
    std::fs::write(
        &policy,
        r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
    )
    .unwrap();
    let regd = tmp.path().join("registries.d");
    std::fs::create_dir_all(&regd).unwrap();
    std::fs::write(
        regd.join("local.yaml"),
        format!(
            "docker:\n  {}:\n    use-sigstore-attachments: true\n",
            reg.addr
        ),
    )
    .unwrap();
    let copy = |dest: &str, with_attachments: bool| {
        let mut c = skopeo();
        c.arg("--policy").arg(&policy);
        if with_attachments {
            c.arg("--registries.d").arg(&regd);
        } else {
            let empty = tmp.path().join("empty-registries.d");
            std::fs::create_dir_all(&empty).unwrap();
            c.arg("--registries.d").arg(empty);
        }
        let out = c
            .args(["copy", "--src-tls-verify=false", "--dest-tls-verify=false"])
            .arg(format!("docker://{target}"))
            .arg(format!("docker://{}/{dest}:v0.3.0", reg.addr))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    copy("mirror/bundle", true);
    copy("plain/bundle", false);
    let mirror = format!("{}/mirror/bundle:v0.3.0", reg.addr);
    // The payload names the original repository: accepted when that identity is trusted,
    // rejected by default with the reason.
    ok(
        run(isolated(&home)
            .args(["verify", "--key"])
            .arg(&public)
            .args(["--identity", &repo_ref, &mirror])),
        "verify the copy",
    );
    fails_with(
        run(isolated(&home)
            .args(["verify", "--key"])
            .arg(&public)
            .arg(&mirror)),
        &format!("the payload's identity is `{repo_ref}`"),
    );
    ok(
        openssl_verify(&reg.addr, "mirror/bundle", "v0.3.0", &public),
        "openssl on the copy",
    );
    fails_with(
        run(isolated(&home)
            .args(["verify", "--any-identity", "--key"])
            .arg(&public)
            .arg(format!("{}/plain/bundle:v0.3.0", reg.addr))),
        "no signatures",
    );
}

/// `--bundle-format`: a Sigstore bundle attached as a referrer through the fallback tag
/// (distribution 2.8.2 has no referrers API), checked by the Python verifier and by opship.
#[test]
fn bundle_format_referrer_with_fallback_tag() {
    let s = Setup::new();
    let (key, public) = s.keys("k", PASSWORD);
    let r = ok(
        s.sign(&key, PASSWORD, &["--bundle-format"], &s.image("v0.3.0")),
        "sign --bundle-format",
    );
    assert!(
        r.stderr.contains("listed in the fallback tag"),
        "{}",
        r.stderr
    );
    let tags = ok(
        run(isolated(&s.home).args(["tags", "-o", "json", &format!("{}/bundle", s.reg.addr)])),
        "tags",
    );
    let tags = json(&tags.stdout);
    let fallback = format!("sha256-{}", &s.d3[7..]);
    assert!(
        tags.as_array()
            .unwrap()
            .iter()
            .any(|t| t == fallback.as_str()),
        "{tags}"
    );
    let v = ok(
        run(python()
            .args(["verify-bundle", &s.reg.addr, "bundle", &s.d3])
            .arg(&public)),
        "python bundle verifier",
    );
    assert!(v.stdout.contains(": verified"), "{}", v.stdout);
    // Signing again adds nothing: the bundle there has the same statement and verifies with
    // the key (and the `.sig` layer likewise).
    let again = ok(
        s.sign(&key, PASSWORD, &["--bundle-format"], &s.image("v0.3.0")),
        "sign again",
    );
    assert!(again.stderr.contains("already signed"), "{}", again.stderr);
    assert!(again.stderr.contains("kept"), "{}", again.stderr);
    let v = ok(
        run(python()
            .args(["verify-bundle", &s.reg.addr, "bundle", &s.d3])
            .arg(&public)),
        "python bundle verifier, 2",
    );
    assert_eq!(v.stdout.matches(": verified").count(), 1, "{}", v.stdout);
    let r = ok(s.verify(&public, &[], &s.image("v0.3.0")), "opship verify");
    assert_eq!(
        r.stdout.matches("verified Sigstore bundle").count(),
        1,
        "{}",
        r.stdout
    );
    let (_, other) = s.keys("other", "");
    let r = fails_with(
        s.verify(&other, &[], &s.image("v0.3.0")),
        "no DSSE signature verifies",
    );
    assert!(
        r.stderr.contains("none of the 2 signature(s)"),
        "{}",
        r.stderr
    );
}

/// Signing and verifying on a registry that wants credentials (htpasswd): the registry
/// password comes on stdin, the key password from COSIGN_PASSWORD; refused credentials are
/// exit 2 quoting the registry.
#[test]
fn sign_and_verify_with_registry_credentials() {
    let reg = TestRegistry::start(Some(("alice", "s3cret")));
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, digest) = build(tmp.path(), "0.3.0");
    let target = format!("{}/private/bundle:v0.3.0", reg.addr);
    let auth = ["-u", "alice", "--password-stdin"];
    ok(
        crate::support_registry::run_stdin(
            isolated(&home)
                .args(["push", &format!("{}:0.3.0", layout.display()), &target])
                .args(auth),
            "s3cret\n",
        ),
        "push",
    );
    let prefix = tmp.path().join("k");
    ok(
        run(opship_pw(&home, PASSWORD)
            .args(["key", "generate", "--output-key-prefix"])
            .arg(&prefix)),
        "key generate",
    );
    let r = ok(
        crate::support_registry::run_stdin(
            isolated(&home)
                .env("COSIGN_PASSWORD", PASSWORD)
                .args(["sign", "--bundle-format", "--key"])
                .arg(prefix.with_extension("key"))
                .args(auth)
                .arg(&target),
            "s3cret\n",
        ),
        "sign with credentials",
    );
    assert!(r.stderr.contains(&digest), "{}", r.stderr);
    let r = ok(
        crate::support_registry::run_stdin(
            isolated(&home)
                .args(["verify", "--key"])
                .arg(prefix.with_extension("pub"))
                .args(auth)
                .arg(&target),
            "s3cret\n",
        ),
        "verify with credentials",
    );
    assert!(
        r.stdout.contains("verified Sigstore bundle"),
        "{}",
        r.stdout
    );
    assert_eq!(r.stdout.matches("verified ").count(), 2, "{}", r.stdout);
    // Anonymous: refused, exit 2, the registry's answer quoted.
    let r = run(isolated(&home)
        .args(["verify", "--key"])
        .arg(prefix.with_extension("pub"))
        .arg(&target));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("401"), "{}", r.stderr);
}

/// A FIFO at `path` (nothing ever writes to it: opening it for reading would block).
fn fifo(path: &Path) {
    let out = Command::new("mkfifo").arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "mkfifo: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn key_and_password_files_that_are_no_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let prefix = tmp.path().join("k");
    ok(
        run(opship_pw(&home, PASSWORD)
            .args(["key", "generate", "--output-key-prefix"])
            .arg(&prefix)),
        "key generate",
    );
    let (key, public) = (prefix.with_extension("key"), prefix.with_extension("pub"));
    let pipe = tmp.path().join("pipe");
    fifo(&pipe);
    let huge = tmp.path().join("huge.key");
    std::fs::write(&huge, "A".repeat(1 << 20)).unwrap();
    let (layout, _) = build(tmp.path(), "0.3.0");
    let image = format!("oci:{}:0.3.0", layout.display());
    let before = crate::read_tree(&layout);
    let zero = Path::new("/dev/zero");

    let new_prefix = tmp.path().join("new");
    let os = |parts: &[&dyn AsRef<std::ffi::OsStr>]| -> Vec<std::ffi::OsString> {
        parts.iter().map(|p| p.as_ref().to_owned()).collect()
    };
    // (what, arguments, the file named, why)
    let not_regular = "is not a regular file (a FIFO, socket or device)";
    let cases = [
        (
            "sign --key /dev/zero",
            os(&[&"sign", &"--key", &zero]),
            zero,
            not_regular,
        ),
        (
            "sign --key FIFO",
            os(&[&"sign", &"--key", &pipe]),
            &*pipe,
            not_regular,
        ),
        (
            "sign --key of 1 MiB",
            os(&[&"sign", &"--key", &huge]),
            &*huge,
            "is larger than 65536 bytes",
        ),
        (
            "sign --password-file /dev/zero",
            os(&[&"sign", &"--key", &key, &"--password-file", &zero]),
            zero,
            not_regular,
        ),
        (
            "sign --password-file FIFO",
            os(&[&"sign", &"--key", &key, &"--password-file", &pipe]),
            &*pipe,
            not_regular,
        ),
        (
            "verify --key /dev/zero",
            os(&[&"verify", &"--key", &zero]),
            zero,
            not_regular,
        ),
        (
            "verify --key FIFO",
            os(&[&"verify", &"--key", &pipe]),
            &*pipe,
            not_regular,
        ),
        (
            "key generate --password-file FIFO",
            os(&[
                &"key",
                &"generate",
                &"--output-key-prefix",
                &new_prefix,
                &"--password-file",
                &pipe,
            ]),
            &*pipe,
            not_regular,
        ),
    ];
    for (what, args, file, why) in cases {
        let mut cmd = opship_pw(&home, PASSWORD);
        cmd.args(&args);
        if args[0] != *"key" {
            cmd.args(["--identity", "example.com/bundle", &image]);
        }
        let (r, killed) = crate::faults::run_bounded(&mut cmd, std::time::Duration::from_secs(60));
        assert!(!killed, "{what}: still running after 60 s");
        assert_eq!(r.code, 2, "{what}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("{}: {why}", file.display())),
            "{what}: {}",
            r.stderr
        );
        assert_eq!(r.stdout, "", "{what}");
    }
    assert!(!tmp.path().join("new.key").exists() && !tmp.path().join("new.pub").exists());
    assert_eq!(crate::read_tree(&layout), before, "the layout changed");
    // The same files, when they are real, work.
    ok(
        run(opship_pw(&home, PASSWORD)
            .args(["sign", "--key"])
            .arg(&key)
            .args(["--identity", "example.com/bundle", &image])),
        "sign",
    );
    ok(
        run(isolated(&home)
            .args(["verify", "--key"])
            .arg(&public)
            .args(["--identity", "example.com/bundle", &image])),
        "verify",
    );
}

//! No secret in any message: an `--identity-token` value that is neither a file nor a JWT, a
//! malformed or refused JWT, a Fulcio (hostile, written here) that quotes the request back,
//! a Docker config `auth` that is not base64, credential helpers that fail with or answer
//! badly typed credentials, and registries and token services (hostile, written here) that
//! echo the password, its Basic form or the token they issued. Each error must still say
//! what went wrong, and hold no piece of the secret.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

use crate::support_registry::{isolated, run_stdin};
use crate::{Run, run};

/// Fails when `r`'s output holds `secret` or any 6-character piece of it.
fn holds_no_piece(r: &Run, secret: &str, what: &str) {
    let all = format!("{}\n{}", r.stdout, r.stderr);
    let chars: Vec<char> = secret.chars().collect();
    for w in chars.windows(6.min(chars.len())) {
        let piece: String = w.iter().collect();
        assert!(
            !all.contains(&piece),
            "{what}: `{piece}` of the secret is in the output:\n{all}"
        );
    }
}

/// A server answering every request with what the mode says (see the script): a hostile
/// Fulcio, registry or token service. Its base URL.
struct Hostile {
    child: Child,
    url: String,
}

const HOSTILE: &str = r#"
import base64, http.server, sys
mode = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def answer(self, code, body, headers=()):
        body = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        for k, v in headers: self.send_header(k, v)
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        req = self.rfile.read(n).decode("utf-8", "replace")
        if mode == "fulcio-echo":
            self.answer(400, "invalid request: " + req)
        elif mode == "fulcio-signature":
            tok = req.split('"oidcIdentityToken":"')[1].split('"')[0]
            self.answer(401, "signature " + tok.split(".")[2] + " does not verify")
    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        port = self.server.server_address[1]
        if mode == "registry-echo":
            if not auth:
                self.answer(401, '{"errors":[{"code":"UNAUTHORIZED","message":"login"}]}',
                            [("WWW-Authenticate", 'Basic realm="r"'), ("Docker-Distribution-API-Version", "registry/2.0")])
                return
            plain = base64.b64decode(auth.split()[1]).decode()
            msg = "bad credentials %s (%s, password %s)" % (auth, plain, plain.split(":", 1)[1])
            self.answer(401, '{"errors":[{"code":"UNAUTHORIZED","message":"%s"}]}' % msg,
                        [("Docker-Distribution-API-Version", "registry/2.0")])
        elif mode == "registry-plain-echo":
            if not auth:
                self.answer(401, "login", [("WWW-Authenticate", 'Basic realm="r"')])
                return
            plain = base64.b64decode(auth.split()[1]).decode()
            self.answer(403, "<html>no entry for " + plain + " / " + auth + "</html>", [("Content-Type", "text/html")])
        elif mode == "token-garbage":
            if self.path.startswith("/v2/") and not auth.lower().startswith("bearer"):
                self.answer(401, "", [("WWW-Authenticate", 'Bearer realm="http://127.0.0.1:%d/token",service="s"' % port),
                                      ("Docker-Distribution-API-Version", "registry/2.0")])
            elif self.path.startswith("/token"):
                self.answer(200, 'token=' + sys.argv[2] + '; expires 300')
            else:
                self.answer(401, "no")
        elif mode == "token-typed":
            if self.path.startswith("/v2/") and not auth.lower().startswith("bearer"):
                self.answer(401, "", [("WWW-Authenticate", 'Bearer realm="http://127.0.0.1:%d/token",service="s"' % port),
                                      ("Docker-Distribution-API-Version", "registry/2.0")])
            elif self.path.startswith("/token"):
                self.answer(200, '{"token": ' + sys.argv[2] + '}', [("Content-Type", "application/json")])
            else:
                self.answer(401, "no")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

impl Hostile {
    fn start(mode: &str, extra: &[&str]) -> Hostile {
        let mut child = Command::new("python3")
            .args(["-c", HOSTILE, mode])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Hostile {
            child,
            url: format!("127.0.0.1:{}", line.trim()),
        }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An unsigned JWT with these claims (valid for ten minutes, audience sigstore).
fn jwt(sub: &str, signature: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(
            format!(r#"{{"iss":"https://issuer.example.test","sub":"{sub}","aud":"sigstore","exp":{exp},"email":"{sub}@example.test"}}"#)
                .as_bytes()
        ),
        signature
    )
}

fn sign_with_token(home: &Path, token: &str, extra: &[&str]) -> Run {
    run(isolated(home)
        .args(["sign", "--insecure", "--identity-token", token])
        .args(extra)
        .arg("127.0.0.1:9/op/bundle@sha256:0000000000000000000000000000000000000000000000000000000000000000"))
}

#[test]
fn identity_token_values_are_never_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    // Not a file, not a JWT: a secret pasted in the wrong place, with and without dots, a
    // JWT cut short, a JWT whose claims are not base64url, a token of another audience.
    let other_audience = {
        let t = jwt("someone", "c2lnbmF0dXJlLW9mLWEtcmVhbC10b2tlbg");
        let parts: Vec<&str> = t.split('.').collect();
        let claims = String::from_utf8(URL_SAFE_NO_PAD.decode(parts[1]).unwrap())
            .unwrap()
            .replace("\"aud\":\"sigstore\"", "\"aud\":\"elsewhere\"");
        format!(
            "{}.{}.{}",
            parts[0],
            URL_SAFE_NO_PAD.encode(claims),
            parts[2]
        )
    };
    for (token, says) in [
        ("ghp_R4nd0mS3cr3tValueWithoutDots", "not a JWT"),
        ("s3cr3t.v4lue.with-dots!", "not a JWT"),
        ("eyJhbGciOiJSUzI1NiJ9.eyJpc3Mi", "not a JWT"),
        ("eyJhbGciOiJSUzI1NiJ9.%%%notbase64%%%.c2ln", "not a JWT"),
        (other_audience.as_str(), "audience `elsewhere`"),
    ] {
        let r = sign_with_token(home, token, &[]);
        assert_eq!(r.code, 2, "{token}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{token}: {}", r.stderr);
        let secret = token.rsplit('.').next().unwrap();
        holds_no_piece(&r, secret, token);
        if !token.starts_with("eyJ") {
            holds_no_piece(&r, token, token);
        }
    }
}

#[test]
fn a_fulcio_that_quotes_the_request_gets_no_token_into_the_error() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    for mode in ["fulcio-echo", "fulcio-signature"] {
        let fulcio = Hostile::start(mode, &[]);
        let signature = "U2lnbmF0dXJlT2ZBUmVhbFRva2VuMTIzNDU2Nzg5";
        let token = jwt("alice", signature);
        let r = sign_with_token(
            home,
            &token,
            &["--fulcio-url", &format!("http://{}", fulcio.url)],
        );
        assert_eq!(r.code, 2, "{mode}: {}", r.stderr);
        assert!(
            r.stderr.contains("Fulcio at http://"),
            "{mode}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("[withheld]"), "{mode}: {}", r.stderr);
        holds_no_piece(&r, signature, mode);
        holds_no_piece(&r, &token, mode);
    }
}

#[test]
fn registry_passwords_are_never_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let password = "Pa55w0rd-Never-Shown";
    // `opship login` against registries that quote the credentials they were sent, in a
    // distribution error body and in an HTML page.
    for mode in ["registry-echo", "registry-plain-echo"] {
        let reg = Hostile::start(mode, &[]);
        let r = run_stdin(
            isolated(home).args(["login", &reg.url, "-u", "robot", "--password-stdin"]),
            password,
        );
        assert_eq!(r.code, 2, "{mode}: {}", r.stderr);
        assert!(r.stderr.contains("[withheld]"), "{mode}: {}", r.stderr);
        holds_no_piece(&r, password, mode);
        holds_no_piece(&r, &STANDARD.encode(format!("robot:{password}")), mode);
    }
    // A token service whose answer is not token JSON: the token it issued is not shown.
    let issued = "Zq9opaqueXk2TkWm7vBn4";
    for (mode, value) in [
        ("token-garbage", issued.to_owned()),
        ("token-typed", "918273645546372819".to_owned()),
    ] {
        let reg = Hostile::start(mode, &[&value]);
        let r = run(isolated(home).args(["tags", "--insecure", &format!("{}/op/x", reg.url)]));
        assert_eq!(r.code, 2, "{mode}: {}", r.stderr);
        assert!(r.stderr.contains("not token JSON"), "{mode}: {}", r.stderr);
        holds_no_piece(&r, &value, mode);
    }
}

#[test]
fn stored_credentials_are_never_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(home.join(".docker")).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let config = home.join(".docker/config.json");
    // `auth` that is not base64 (the decoder would name the bad byte and its offset).
    for auth in ["cm9ib3Q6U2VjcmV0!UGFzcw==", "robot:Secr3tPlainText"] {
        std::fs::write(
            &config,
            format!(r#"{{"auths":{{"127.0.0.1:9":{{"auth":"{auth}"}}}}}}"#),
        )
        .unwrap();
        let r = run(isolated(&home).args(["tags", "--insecure", "127.0.0.1:9/op/x"]));
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("not base64"), "{}", r.stderr);
        assert!(!r.stderr.contains("offset"), "{}", r.stderr);
        holds_no_piece(&r, auth, auth);
    }
    // Credential helpers: a numeric secret (serde would quote it), a failing helper that
    // wrote credentials JSON before exiting 1.
    for (name, script) in [
        (
            "numeric",
            r#"printf '{"ServerURL":"x","Username":"robot","Secret":73619284756102}'"#,
        ),
        (
            "failing",
            r#"printf '{"Username":"robot","Secret":"Helper-S3cret-Value"}'; exit 1"#,
        ),
    ] {
        let helper = bin.join(format!("docker-credential-{name}"));
        std::fs::write(&helper, format!("#!/bin/sh\ncat >/dev/null\n{script}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(
            &config,
            format!(r#"{{"credHelpers":{{"127.0.0.1:9":"{name}"}}}}"#),
        )
        .unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let r =
            run(isolated(&home)
                .env("PATH", path)
                .args(["tags", "--insecure", "127.0.0.1:9/op/x"]));
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("docker-credential-{name} get")),
            "{name}: {}",
            r.stderr
        );
        for secret in ["73619284756102", "Helper-S3cret-Value"] {
            holds_no_piece(&r, secret, name);
        }
    }
}

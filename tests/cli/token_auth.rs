//! The bearer token flow against a real registry: `docker-registry` configured with
//! `auth.token`, and a token service written here that checks HTTP Basic credentials and
//! issues RS256 JWTs signed with a throw-away key (`openssl` makes the key and self-signed
//! certificate and signs each token; the registry verifies the `x5c` chain against the
//! certificate as its `rootcertbundle`). opship must log in, push, pull and list tags through
//! it, and quote the token service's answer when it refuses a password.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

use crate::run;
use crate::support_registry::{
    RegistryAuth, TestRegistry, build, http_get, isolated, json, ok, require, run_stdin,
};

const SERVICE: &str = "opship-test-registry";
const ISSUER: &str = "opship-test-token-issuer";
const USER: &str = "robot";
const PASSWORD: &str = "t0ken-pass";

/// What the token service saw.
#[derive(Default)]
struct Seen {
    /// Tokens issued to authenticated users, with the scopes granted.
    granted: Vec<String>,
    /// Refused requests.
    refused: usize,
}

/// A token service on a loopback port: `GET /token?service=…&scope=…` with HTTP Basic
/// credentials → `{"token": JWT, "access_token": JWT}` granting the requested scopes.
/// Anonymous requests get a token with no access; a wrong password gets 401 and an error body.
struct TokenServer {
    realm: String,
    cert_pem: PathBuf,
    seen: Arc<Mutex<Seen>>,
    _dir: tempfile::TempDir,
}

impl TokenServer {
    fn start() -> Self {
        require("openssl", "openssl");
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key.pem");
        let cert = dir.path().join("cert.pem");
        let out = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            ])
            .args(["-subj", "/CN=opship test token issuer"])
            .args(["-addext", "keyUsage=critical,digitalSignature,keyCertSign"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl req: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The PEM body is the base64 of the DER certificate: exactly what `x5c` holds.
        let cert_b64: String = std::fs::read_to_string(&cert)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let realm = format!("http://{}/token", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (seen2, key2) = (seen.clone(), key.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (seen, key, x5c) = (seen2.clone(), key2.clone(), cert_b64.clone());
                std::thread::spawn(move || serve(stream, &key, &x5c, &seen));
            }
        });
        TokenServer {
            realm,
            cert_pem: cert,
            seen,
            _dir: dir,
        }
    }
}

/// Answers one request (the connection is closed after it).
fn serve(stream: TcpStream, key: &Path, x5c: &str, seen: &Mutex<Seen>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("authorization")
        {
            authorization = Some(v.trim().to_owned());
        }
    }
    let target = first.split_whitespace().nth(1).unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let params: Vec<(String, String)> = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (percent_decode(k), percent_decode(v)))
        .collect();
    let user = authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Basic "))
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok());
    let service_ok = params.iter().any(|(k, v)| k == "service" && v == SERVICE);
    let (status, body) = if path != "/token" || !service_ok {
        (
            "400 Bad Request",
            r#"{"errors":[{"code":"UNSUPPORTED","message":"unknown service"}]}"#.to_owned(),
        )
    } else {
        match user
            .as_deref()
            .map(|u| u.split_once(':').unwrap_or((u, "")))
        {
            Some((u, p)) if u == USER && p == PASSWORD => {
                let scopes: Vec<&str> = params
                    .iter()
                    .filter(|(k, _)| k == "scope")
                    .map(|(_, v)| v.as_str())
                    .collect();
                let token = jwt(key, x5c, u, &scopes);
                seen.lock().unwrap().granted.push(scopes.join(" "));
                (
                    "200 OK",
                    serde_json::json!({"token": token, "access_token": token, "expires_in": 300})
                        .to_string(),
                )
            }
            Some((u, _)) => {
                seen.lock().unwrap().refused += 1;
                (
                    "401 Unauthorized",
                    format!(
                        r#"{{"errors":[{{"code":"UNAUTHORIZED","message":"test token service: wrong password for {u}"}}]}}"#
                    ),
                )
            }
            None => (
                "200 OK",
                serde_json::json!({"token": jwt(key, x5c, "", &[])}).to_string(),
            ),
        }
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A JWT for `sub` granting `scopes` (`repository:NAME:ACTIONS`), RS256-signed by `openssl`.
fn jwt(key: &Path, x5c: &str, sub: &str, scopes: &[&str]) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let access: Vec<serde_json::Value> = scopes
        .iter()
        .filter_map(|s| {
            let (kind, rest) = s.split_once(':')?;
            let (name, actions) = rest.rsplit_once(':')?;
            Some(serde_json::json!({
                "type": kind,
                "name": name,
                "actions": actions.split(',').collect::<Vec<_>>(),
            }))
        })
        .collect();
    let header = serde_json::json!({"typ": "JWT", "alg": "RS256", "x5c": [x5c]});
    let claims = serde_json::json!({
        "iss": ISSUER,
        "sub": sub,
        "aud": SERVICE,
        "exp": now + 300,
        "nbf": now - 60,
        "iat": now - 60,
        "jti": format!("{now}-{}", rand_suffix()),
        "access": access,
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut child = Command::new("openssl")
        .args(["dgst", "-sha256", "-sign"])
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(signing_input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "openssl dgst: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(&out.stdout))
}

/// A per-process counter, so every token has its own `jti`.
fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[test]
fn token_flow_login_push_pull_tags() {
    let tokens = TokenServer::start();
    let reg = TestRegistry::start_with(RegistryAuth::Token {
        realm: &tokens.realm,
        service: SERVICE,
        issuer: ISSUER,
        rootcertbundle: &tokens.cert_pem,
    });
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, digest) = build(tmp.path(), "0.3.0");
    let src = format!("{}:0.3.0", layout.display());
    let target = format!("{}/team/bundle:v0.3.0", reg.addr);

    // The registry really wants a bearer token from our service.
    let (status, _) = http_get(&reg.addr, "/v2/", &[]).unwrap();
    assert_eq!(status, 401);

    // Anonymous: the token service grants nothing, so the registry refuses the push.
    let r = run(isolated(&home).args(["push", &src, &target]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains(&reg.addr), "{}", r.stderr);

    // A wrong password: refused by the token service, whose answer is quoted; nothing stored.
    let r = run_stdin(
        isolated(&home).args(["login", &reg.addr, "-u", USER, "--password-stdin"]),
        // Not a word of the service's answer: a password in an answer is withheld.
        "n0t-th3-pass\n",
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("test token service: wrong password for robot"),
        "{}",
        r.stderr
    );
    assert!(!home.join(".docker/config.json").exists());
    let r = run_stdin(
        isolated(&home).args(["push", "-u", USER, "--password-stdin", &src, &target]),
        "n0t-th3-pass\n",
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("refused the credentials of user `robot`: token service: UNAUTHORIZED: test token service: wrong password for robot"),
        "{}",
        r.stderr
    );
    assert!(tokens.seen.lock().unwrap().refused >= 2);
    assert!(tokens.seen.lock().unwrap().granted.is_empty());

    // login checks the password with the token service and stores it.
    ok(
        run_stdin(
            isolated(&home).args(["login", &reg.addr, "-u", USER, "--password-stdin"]),
            &format!("{PASSWORD}\n"),
        ),
        "login",
    );
    assert!(home.join(".docker/config.json").exists());

    // Push, re-push, pull, tags, inspect: credentials from config.json, tokens from the service.
    let r = ok(run(isolated(&home).args(["push", &src, &target])), "push");
    assert_eq!(r.stdout.trim(), digest);
    let r = ok(
        run(isolated(&home).args(["push", &src, &target])),
        "re-push",
    );
    assert!(
        r.stderr.contains("2 of 2 blobs already present"),
        "{}",
        r.stderr
    );
    let pulled = tmp.path().join("pulled");
    let r = ok(
        run(isolated(&home).args(["pull", &target, &format!("{}:back", pulled.display())])),
        "pull",
    );
    assert_eq!(r.stdout.trim(), digest);
    let image = opship_core::image::Layout::new(&pulled)
        .read_image("back")
        .unwrap();
    assert_eq!(image.descriptor.digest.as_str(), digest);
    let r = ok(
        run(isolated(&home).args(["tags", &format!("{}/team/bundle", reg.addr)])),
        "tags",
    );
    assert_eq!(r.stdout, "v0.3.0\n");
    let r = ok(
        run(isolated(&home).args(["inspect", "-o", "json", &target])),
        "inspect",
    );
    assert_eq!(json(&r.stdout)["digest"], digest.as_str());

    // The tokens asked for were the ones each operation needs.
    let granted = tokens.seen.lock().unwrap().granted.clone();
    assert!(
        granted.contains(&"repository:team/bundle:pull,push".to_owned()),
        "{granted:?}"
    );
    assert!(
        granted.contains(&"repository:team/bundle:pull".to_owned()),
        "{granted:?}"
    );

    // An independent client (skopeo) reads the pushed image through the same token flow.
    let auth_file = tmp.path().join("auth.json");
    std::fs::write(
        &auth_file,
        serde_json::json!({"auths": {reg.addr.as_str(): {"auth": STANDARD.encode(format!("{USER}:{PASSWORD}"))}}})
            .to_string(),
    )
    .unwrap();
    let inspect = skopeo_inspect_with_auth(&target, &auth_file);
    assert_eq!(inspect["Digest"], digest.as_str());
}

fn skopeo_inspect_with_auth(reference: &str, auth_file: &Path) -> serde_json::Value {
    let out = crate::support_registry::skopeo()
        .args(["inspect", "--tls-verify=false", "--authfile"])
        .arg(auth_file)
        .arg(format!("docker://{reference}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "skopeo inspect {reference}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&String::from_utf8_lossy(&out.stdout))
}

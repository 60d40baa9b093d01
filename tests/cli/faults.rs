//! Faults between opship and a real registry: a proxy written here sits in front of
//! `docker-registry` and, following a script, drops connections (mid-request and
//! mid-answer), answers 500 or 429 itself, or stalls past opship's timeout. Pushes must retry
//! through transient faults, fail with a clear error (exit 2) on persistent ones without a tag
//! pointing at an incomplete image, and a push killed halfway must complete when re-run. What
//! the registry holds is checked behind the proxy's back, with plain HTTP and skopeo.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::run;
use crate::support_registry::{TestRegistry, build, isolated, manifest_status, ok, skopeo_inspect};

/// What the proxy does to a request a rule matches.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Read the request head and part of the body, then close the connection.
    DropRequest,
    /// Forward the request, then pass on only the first half of the answer and close.
    DropResponse,
    /// Answer with this status and a distribution-style error body; nothing is forwarded.
    Status(u16),
    /// Hold the request this long without answering, then close.
    Stall(Duration),
}

/// Applies `fault` to the next `times` requests whose method is `method` and whose path
/// contains `path`.
struct Rule {
    method: &'static str,
    path: String,
    fault: Fault,
    times: usize,
}

fn rule(method: &'static str, path: &str, fault: Fault, times: usize) -> Rule {
    Rule {
        method,
        path: path.to_owned(),
        fault,
        times,
    }
}

/// The proxy: one thread per connection, one request per connection (the upstream request
/// is sent with `Connection: close` and the answer relayed as it comes).
struct FaultProxy {
    /// `127.0.0.1:PORT`.
    addr: String,
    rules: Arc<Mutex<Vec<Rule>>>,
    /// `METHOD PATH -> what happened`, in arrival order.
    log: Arc<Mutex<Vec<String>>>,
}

impl FaultProxy {
    fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let rules = Arc::new(Mutex::new(Vec::<Rule>::new()));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (r, l, up) = (rules.clone(), log.clone(), upstream.to_owned());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (r, l, up) = (r.clone(), l.clone(), up.clone());
                std::thread::spawn(move || handle(stream, &up, &r, &l));
            }
        });
        FaultProxy { addr, rules, log }
    }

    fn script(&self, rules: Vec<Rule>) {
        *self.rules.lock().unwrap() = rules;
    }

    /// Rules not used up yet.
    fn unused(&self) -> Vec<String> {
        self.rules
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.times > 0 && r.times != usize::MAX)
            .map(|r| format!("{} {} {:?} x{}", r.method, r.path, r.fault, r.times))
            .collect()
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    fn count(&self, needle: &str) -> usize {
        self.log().iter().filter(|l| l.contains(needle)).count()
    }
}

fn handle(client: TcpStream, upstream: &str, rules: &Mutex<Vec<Rule>>, log: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(client.try_clone().unwrap());
    let mut head = Vec::new();
    let mut content_length = 0usize;
    let mut first = String::new();
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
            content_length = v.trim().parse().unwrap_or(0);
        }
        assert!(
            !lower.starts_with("transfer-encoding:"),
            "the fault proxy only relays Content-Length bodies: {line}"
        );
        if !lower.starts_with("connection:") {
            head.extend_from_slice(line.as_bytes());
        }
    }
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let fault = {
        let mut rules = rules.lock().unwrap();
        rules
            .iter_mut()
            .find(|r| r.times > 0 && r.method == method && path.contains(&r.path))
            .map(|r| {
                if r.times != usize::MAX {
                    r.times -= 1;
                }
                r.fault
            })
    };
    log.lock().unwrap().push(format!(
        "{method} {path} -> {}",
        fault.map_or("forwarded".to_owned(), |f| format!("{f:?}"))
    ));
    let mut client = client;
    match fault {
        Some(Fault::DropRequest) => {
            let mut part = vec![0u8; content_length / 2];
            let _ = reader.read_exact(&mut part);
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        Some(Fault::Status(code)) => {
            let body = format!(
                r#"{{"errors":[{{"code":"{}","message":"fault proxy: injected {code}"}}]}}"#,
                if code == 429 {
                    "TOOMANYREQUESTS"
                } else {
                    "UNKNOWN"
                }
            );
            let mut body_in = vec![0u8; content_length];
            let _ = reader.read_exact(&mut body_in);
            let _ = write!(
                client,
                "HTTP/1.1 {code} Injected\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            return;
        }
        Some(Fault::Stall(d)) => {
            std::thread::sleep(d);
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        Some(Fault::DropResponse) | None => {}
    }
    let mut body = vec![0u8; content_length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let Ok(mut up) = TcpStream::connect(upstream) else {
        return;
    };
    let mut request = head;
    request.extend_from_slice(b"Connection: close\r\n\r\n");
    request.extend_from_slice(&body);
    if up.write_all(&request).is_err() {
        return;
    }
    let mut answer = Vec::new();
    let _ = up.read_to_end(&mut answer);
    let answer = match fault {
        Some(Fault::DropResponse) => &answer[..answer.len() / 2],
        _ => &answer[..],
    };
    let _ = client.write_all(answer);
    let _ = client.shutdown(Shutdown::Both);
}

/// `opship` with a 2 s timeout (stalls last longer) and `retries` retries.
fn fast(home: &Path, retries: u32) -> Command {
    let mut c = isolated(home);
    c.env("OPSHIP_REGISTRY_TIMEOUT", "2")
        .env("OPSHIP_REGISTRY_RETRIES", retries.to_string());
    c
}

/// The layer digest (hex) of `tag` in `layout`.
fn layer_hex(layout: &Path, tag: &str) -> String {
    opship_core::image::Layout::new(layout)
        .read_image(tag)
        .unwrap()
        .manifest
        .layers[0]
        .digest
        .hex()
        .to_owned()
}

/// Pulls `reference` straight from the registry into a new layout, verifying every blob.
fn pull_verified(home: &Path, reference: &str, dir: &Path) -> String {
    let r = ok(
        run(isolated(home).args(["pull", reference, &format!("{}:x", dir.display())])),
        "pull from the registry",
    );
    let image = opship_core::image::Layout::new(dir)
        .read_image("x")
        .unwrap();
    assert_eq!(image.descriptor.digest.as_str(), r.stdout.trim());
    r.stdout.trim().to_owned()
}

#[test]
fn transient_faults_are_retried() {
    let reg = TestRegistry::start(None);
    let proxy = FaultProxy::start(&reg.addr);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, digest) = build(tmp.path(), "0.3.0");
    let src = format!("{}:0.3.0", layout.display());
    let layer = layer_hex(&layout, "0.3.0");

    proxy.script(vec![
        rule("HEAD", "/blobs/sha256:", Fault::Status(500), 1),
        rule("POST", "/blobs/uploads/", Fault::Status(429), 1),
        rule("PUT", &layer, Fault::DropRequest, 1),
        rule("PUT", &layer, Fault::DropResponse, 1),
        rule("PUT", "/blobs/uploads/", Fault::Status(503), 1),
        rule(
            "PUT",
            "/manifests/sha256:",
            Fault::Stall(Duration::from_secs(6)),
            1,
        ),
        rule("PUT", "/manifests/v0.3.0", Fault::DropResponse, 1),
    ]);
    let via_proxy = format!("{}/flaky/bundle:v0.3.0", proxy.addr);
    let r = ok(run(fast(&home, 5).args(["push", &src, &via_proxy])), "push");
    assert_eq!(r.stdout.trim(), digest);
    assert!(
        proxy.unused().is_empty(),
        "faults not hit: {:?}",
        proxy.unused()
    );

    // Behind the proxy: the registry has the complete image under the tag.
    let direct = format!("{}/flaky/bundle:v0.3.0", reg.addr);
    assert_eq!(skopeo_inspect(&direct)["Digest"], digest.as_str());
    assert_eq!(
        pull_verified(&home, &direct, &tmp.path().join("p1")),
        digest
    );

    // Pulls retry too: a 503 on the manifest, a body cut short, a stalled blob.
    proxy.script(vec![
        rule("GET", "/manifests/v0.3.0", Fault::Status(503), 1),
        rule("GET", &layer, Fault::DropResponse, 1),
        rule(
            "GET",
            "/blobs/sha256:",
            Fault::Stall(Duration::from_secs(6)),
            1,
        ),
    ]);
    let pulled = tmp.path().join("p2");
    let r = ok(
        run(fast(&home, 5).args(["pull", &via_proxy, &format!("{}:x", pulled.display())])),
        "pull through faults",
    );
    assert_eq!(r.stdout.trim(), digest);
    assert!(
        proxy.unused().is_empty(),
        "faults not hit: {:?}",
        proxy.unused()
    );
    opship_core::image::Layout::new(&pulled)
        .read_image("x")
        .unwrap();
}

#[test]
fn persistent_faults_fail_clearly_and_tag_nothing_incomplete() {
    let reg = TestRegistry::start(None);
    let proxy = FaultProxy::start(&reg.addr);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, digest) = build(tmp.path(), "0.3.0");
    let src = format!("{}:0.3.0", layout.display());
    let layer = layer_hex(&layout, "0.3.0");

    // Every upload of the layer answered 500: 1 + 2 retries, then exit 2 quoting the answer.
    proxy.script(vec![rule("PUT", &layer, Fault::Status(500), usize::MAX)]);
    let r = run(fast(&home, 2).args(["push", &src, &format!("{}/a/bundle:v1", proxy.addr)]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("registry {} answered 500", proxy.addr))
            && r.stderr.contains("UNKNOWN: fault proxy: injected 500"),
        "{}",
        r.stderr
    );
    assert_eq!(proxy.count(&format!("{layer} -> Status(500)")), 3);
    assert!(!r.stdout.contains("sha256:"), "{}", r.stdout);
    assert_eq!(
        manifest_status(&reg.addr, "a/bundle", "v1"),
        404,
        "the tag must not exist"
    );
    assert_eq!(
        manifest_status(&reg.addr, "a/bundle", &digest),
        404,
        "no manifest without its layer"
    );

    // Every connection dropped mid-upload: exit 2, "cannot reach", nothing tagged.
    proxy.script(vec![rule("PUT", &layer, Fault::DropRequest, usize::MAX)]);
    let r = run(fast(&home, 1).args(["push", &src, &format!("{}/b/bundle:v1", proxy.addr)]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("cannot reach registry {}", proxy.addr)),
        "{}",
        r.stderr
    );
    assert_eq!(proxy.count(&format!("{layer} -> DropRequest")), 2);
    assert_eq!(manifest_status(&reg.addr, "b/bundle", "v1"), 404);

    // The tag's PUT stalls every time: the image is there by digest, complete, but untagged.
    proxy.script(vec![rule(
        "PUT",
        "/manifests/v1",
        Fault::Stall(Duration::from_secs(5)),
        usize::MAX,
    )]);
    let r = run(fast(&home, 1).args(["push", &src, &format!("{}/c/bundle:v1", proxy.addr)]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("cannot reach registry {}", proxy.addr)),
        "{}",
        r.stderr
    );
    assert_eq!(manifest_status(&reg.addr, "c/bundle", "v1"), 404);
    assert_eq!(manifest_status(&reg.addr, "c/bundle", &digest), 200);
    let by_digest = format!("{}/c/bundle@{digest}", reg.addr);
    assert_eq!(
        pull_verified(&home, &by_digest, &tmp.path().join("c")),
        digest
    );
}

#[test]
fn a_push_killed_halfway_completes_when_run_again() {
    let reg = TestRegistry::start(None);
    let proxy = FaultProxy::start(&reg.addr);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, digest) = build(tmp.path(), "0.3.0");
    let src = format!("{}:0.3.0", layout.display());
    let layer = layer_hex(&layout, "0.3.0");
    let via_proxy = format!("{}/killed/bundle:v0.3.0", proxy.addr);

    // The layer upload hangs; opship is SIGKILLed while it waits.
    proxy.script(vec![rule(
        "PUT",
        &layer,
        Fault::Stall(Duration::from_secs(60)),
        1,
    )]);
    let mut child = isolated(&home)
        .args(["push", &src, &via_proxy])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while proxy.count("Stall") == 0 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "push ended before the stall: {:?}",
            proxy.log()
        );
        assert!(Instant::now() < deadline, "no stall: {:?}", proxy.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    let direct = format!("{}/killed/bundle:v0.3.0", reg.addr);
    assert_eq!(
        manifest_status(&reg.addr, "killed/bundle", "v0.3.0"),
        404,
        "no tag after the kill"
    );

    // Run again: completes, and the image verifies blob by blob.
    let r = ok(
        run(isolated(&home).args(["push", &src, &via_proxy])),
        "re-run",
    );
    assert_eq!(r.stdout.trim(), digest);
    assert_eq!(skopeo_inspect(&direct)["Digest"], digest.as_str());
    assert_eq!(pull_verified(&home, &direct, &tmp.path().join("p")), digest);
}

#[test]
fn a_failing_image_stops_push_all_and_a_rerun_completes() {
    let reg = TestRegistry::start(None);
    let proxy = FaultProxy::start(&reg.addr);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let layout = tmp.path().join("oci");
    ok(
        run(crate::opship()
            .args(["build", "--layout"])
            .arg(&layout)
            .arg(crate::repo().join("bundle/0.1.0"))
            .arg(crate::repo().join("bundle/0.2.0"))
            .arg(crate::repo().join("bundle/0.3.0"))),
        "build",
    );
    let l = layout.display().to_string();
    let ns = format!("{}/ops", proxy.addr);

    // The tag of the second image is refused every time; one image at a time.
    proxy.script(vec![rule(
        "PUT",
        "/manifests/0.2.0",
        Fault::Status(500),
        usize::MAX,
    )]);
    let r = run(fast(&home, 1).args(["push", &l, &ns, "--all-tags", "--jobs", "1"]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", r.stdout);
    assert!(
        lines[0].starts_with(&format!("{ns}/memcached-operator-bundle:0.1.0 sha256:")),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains(&format!(
            "{ns}/memcached-operator-bundle:0.2.0 (layout tag `0.2.0`)"
        )) && r.stderr.contains("fault proxy: injected 500"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("pushed 1 of 3 images"), "{}", r.stderr);
    let tag_status = |v: &str| manifest_status(&reg.addr, "ops/memcached-operator-bundle", v);
    assert_eq!(tag_status("0.1.0"), 200);
    assert_eq!(tag_status("0.2.0"), 404);
    assert_eq!(
        tag_status("0.3.0"),
        404,
        "nothing started after the failure"
    );

    // Without the fault the same command completes; the first image is already up to date.
    proxy.script(Vec::new());
    let r = ok(
        run(fast(&home, 1).args(["push", &l, &ns, "--all-tags"])),
        "re-run",
    );
    assert_eq!(r.stdout.lines().count(), 3, "{}", r.stdout);
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        assert_eq!(tag_status(v), 200, "{v}");
        let direct = format!("{}/ops/memcached-operator-bundle:{v}", reg.addr);
        pull_verified(&home, &direct, &tmp.path().join(format!("p{v}")));
    }
}

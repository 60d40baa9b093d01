//! Faults between opship and a real registry: a proxy written here sits in front of
//! `docker-registry` and, following a script, drops connections (mid-request and
//! mid-answer), answers 500 or 429 itself, or stalls past opship's timeout. Pushes must retry
//! through transient faults, fail with a clear error (exit 2) on persistent ones without a tag
//! pointing at an incomplete image, and a push killed halfway must complete when re-run. What
//! the registry holds is checked behind the proxy's back, with plain HTTP and skopeo.
//!
//! Hostile servers too: an HTML 404 page instead of a registry, a body dripped a byte a second
//! (only the deadline ends it), a body that stops half-way, bodies longer than their
//! descriptor or endless, corrupted content, 501/505 answers (never retried). Each failure is
//! exit 2 with a message naming the object, within a bound on the child's wall-clock time,
//! and leaves the target layout as it was.

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
    /// Answer 404 with a large HTML page, as a plain web server does; nothing is forwarded.
    Html404,
    /// Forward, then send the answer's head at once and its body one byte per interval.
    Drip(Duration),
    /// Forward, then send the head and half the body, and go silent for a minute.
    StallBody,
    /// Forward, then send this many bytes more body than the registry did (`Content-Length`
    /// adjusted).
    Longer(usize),
    /// Answer 200 with a chunked body of 1 GiB (`endless wrote N` in the log says how much
    /// went out before the client hung up).
    Endless,
    /// Forward, with the last byte of the body changed.
    Corrupt,
}

/// The HTML 404 page of [`Fault::Html404`]; its end marker must never reach a message.
fn html_page() -> String {
    let mut page = String::from(
        "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>\n<h1>Not Found</h1>\n",
    );
    while page.len() < 20_000 {
        page.push_str("<p>The requested URL was not found on this server. Lorem ipsum.</p>\n");
    }
    page.push_str("<p>END-OF-PAGE-MARKER</p></body></html>\n");
    page
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
        Some(Fault::Html404) => {
            let page = html_page();
            let mut body_in = vec![0u8; content_length];
            let _ = reader.read_exact(&mut body_in);
            let _ = write!(
                client,
                "HTTP/1.1 404 Not Found\r\nServer: Apache/2.4.62 (Debian)\r\nContent-Type: text/html; charset=iso-8859-1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
            return;
        }
        Some(Fault::Endless) => {
            let _ = write!(
                client,
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nDocker-Distribution-API-Version: registry/2.0\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            );
            let chunk = vec![b'x'; 1 << 20];
            let mut wrote = 0usize;
            while wrote < 1 << 30 {
                let ok = write!(client, "{:x}\r\n", chunk.len()).is_ok()
                    && client.write_all(&chunk).is_ok()
                    && client.write_all(b"\r\n").is_ok();
                if !ok {
                    break;
                }
                wrote += chunk.len();
            }
            log.lock().unwrap().push(format!("endless wrote {wrote}"));
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        _ => {}
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
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(answer.len(), |p| p + 4);
    let (answer_head, answer_body) = answer.split_at(split);
    match fault {
        Some(Fault::DropResponse) => {
            let _ = client.write_all(&answer[..answer.len() / 2]);
        }
        Some(Fault::Drip(every)) => {
            if client.write_all(answer_head).is_ok() {
                for b in answer_body {
                    std::thread::sleep(every);
                    if client.write_all(std::slice::from_ref(b)).is_err() {
                        break;
                    }
                }
            }
        }
        Some(Fault::StallBody) => {
            let _ = client.write_all(answer_head);
            let _ = client.write_all(&answer_body[..answer_body.len() / 2]);
            let _ = client.flush();
            std::thread::sleep(Duration::from_secs(60));
        }
        Some(Fault::Longer(extra)) => {
            let head = String::from_utf8_lossy(answer_head).into_owned();
            let mut out = String::new();
            for line in head.split("\r\n") {
                if line.to_ascii_lowercase().starts_with("content-length:") {
                    out.push_str(&format!(
                        "Content-Length: {}\r\n",
                        answer_body.len() + extra
                    ));
                } else if !line.is_empty() {
                    out.push_str(line);
                    out.push_str("\r\n");
                }
            }
            out.push_str("\r\n");
            let mut body = answer_body.to_vec();
            body.extend(std::iter::repeat_n(b'!', extra));
            let _ = client.write_all(out.as_bytes());
            let _ = client.write_all(&body);
        }
        Some(Fault::Corrupt) => {
            let mut body = answer_body.to_vec();
            if let Some(last) = body.last_mut() {
                *last ^= 0x20;
            }
            let _ = client.write_all(answer_head);
            let _ = client.write_all(&body);
        }
        _ => {
            let _ = client.write_all(&answer);
        }
    }
    let _ = client.shutdown(Shutdown::Both);
}

/// Runs `cmd` to completion, but kills it after `limit`: a hang fails the test (with
/// `killed`) instead of hanging it. `limit` is a generous bound, not a measurement.
pub(crate) fn run_bounded(cmd: &mut Command, limit: Duration) -> (crate::Run, bool) {
    run_bounded_stdin(cmd, Stdio::null(), limit)
}

/// [`run_bounded`] with `stdin` as standard input.
pub(crate) fn run_bounded_stdin(
    cmd: &mut Command,
    stdin: Stdio,
    limit: Duration,
) -> (crate::Run, bool) {
    let mut child = cmd
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run opship");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let end = Instant::now() + limit;
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= end {
            let _ = child.kill();
            killed = true;
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = crate::Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out_t.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_t.join().unwrap()).into_owned(),
    };
    (run, killed)
}

/// Every file in the layout's blob store holds the content its name says, and no temporary
/// file is left.
fn assert_blobs_intact(layout: &Path) {
    let blobs = layout.join("blobs/sha256");
    for e in std::fs::read_dir(&blobs).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with('.'),
            "leftover {name} in {}",
            blobs.display()
        );
        let bytes = std::fs::read(e.path()).unwrap();
        assert_eq!(
            opship_core::image::oci::Digest::of(&bytes).hex(),
            name,
            "{} holds other content",
            e.path().display()
        );
    }
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
            .arg(crate::tracked("bundle/0.1.0"))
            .arg(crate::tracked("bundle/0.2.0"))
            .arg(crate::tracked("bundle/0.3.0"))),
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

/// `opship` with a 2 s idle timeout, a 5 s deadline and `retries` retries.
fn bounded(home: &Path, retries: u32) -> Command {
    let mut c = fast(home, retries);
    c.env("OPSHIP_REGISTRY_DEADLINE", "5");
    c
}

/// The wall-clock bound of each hostile-server run: far above the 5 s deadline (and the
/// retries' timeouts), far below "for ever".
const BOUND: Duration = Duration::from_secs(90);

/// A layout holding another image (0.2.0), as the target of failing pulls, and its
/// `index.json` bytes.
fn target_layout(tmp: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let (layout, _) = build(&tmp.join("target"), "0.2.0");
    let index = std::fs::read(layout.join("index.json")).unwrap();
    (layout, index)
}

/// A pull that must fail: exit 2 within the bound, the layout untouched (same `index.json`,
/// no blob with wrong content, no leftover, not the layer of the image pulled).
fn failed_pull(
    home: &Path,
    reference: &str,
    retries: u32,
    layout: &Path,
    index: &[u8],
    layer: &str,
) -> crate::Run {
    let (r, killed) = run_bounded(
        bounded(home, retries).args(["pull", reference, &format!("{}:pulled", layout.display())]),
        BOUND,
    );
    assert!(
        !killed,
        "pull of {reference} still running after {BOUND:?}: {}",
        r.stderr
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stdout, "", "{}", r.stdout);
    assert_eq!(
        std::fs::read(layout.join("index.json")).unwrap(),
        index,
        "index.json changed"
    );
    assert!(
        !layout.join("blobs/sha256").join(layer).exists(),
        "the layer of the failed pull is in the layout"
    );
    assert_blobs_intact(layout);
    r
}

#[test]
fn hostile_answers_to_a_pull_fail_clearly_in_bounded_time_and_change_nothing() {
    let reg = TestRegistry::start(None);
    let proxy = FaultProxy::start(&reg.addr);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, _) = build(&tmp.path().join("src"), "0.3.0");
    let layer = layer_hex(&layout, "0.3.0");
    let layer_size = opship_core::image::Layout::new(&layout)
        .read_image("0.3.0")
        .unwrap()
        .manifest
        .layers[0]
        .size;
    let src = format!("{}:0.3.0", layout.display());
    let image = format!("{}/hostile/bundle:v1", proxy.addr);
    ok(run(isolated(&home).args(["push", &src, &image])), "push");
    let (target, index) = target_layout(tmp.path());

    // A body dripped a byte a second never trips the 2 s idle timeout: the 5 s deadline
    // ends the pull, naming the blob and how far it got.
    proxy.script(vec![rule(
        "GET",
        &layer,
        Fault::Drip(Duration::from_secs(1)),
        usize::MAX,
    )]);
    let r = failed_pull(&home, &image, 3, &target, &index, &layer);
    assert!(
        r.stderr.contains(&format!(
            "registry {}: gave up after the deadline of 5 s (--deadline) while reading blob sha256:{layer} of hostile/bundle (",
            proxy.addr
        )) && r.stderr.contains(&format!(" of {layer_size} bytes received)")),
        "{}",
        r.stderr
    );

    // A body that stops half-way: the idle timeout, retried once, then the object and the
    // bytes received, not "cannot reach".
    proxy.script(vec![rule("GET", &layer, Fault::StallBody, usize::MAX)]);
    let r = failed_pull(&home, &image, 1, &target, &index, &layer);
    assert!(
        r.stderr.contains(&format!(
            "registry {} stopped sending blob sha256:{layer} of hostile/bundle after {} of {layer_size} bytes: no data for 2 s (--timeout)",
            proxy.addr,
            layer_size / 2
        )),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("cannot reach"), "{}", r.stderr);
    assert_eq!(proxy.count(&format!("{layer} -> StallBody")), 2);

    // More body than the descriptor says: refused when the length is announced...
    proxy.script(vec![rule("GET", &layer, Fault::Longer(4096), usize::MAX)]);
    let r = failed_pull(&home, &image, 3, &target, &index, &layer);
    let refused = format!(
        "registry {} sent more than {layer_size} bytes (the size its descriptor gives) for blob sha256:{layer} of hostile/bundle; refused",
        proxy.addr
    );
    assert!(r.stderr.contains(&refused), "{}", r.stderr);
    assert_eq!(proxy.count(&format!("{layer} -> Longer")), 1, "not retried");

    // ... and as soon as it arrives when it is not: 1 GiB offered, a few MiB taken.
    proxy.script(vec![rule("GET", &layer, Fault::Endless, usize::MAX)]);
    let r = failed_pull(&home, &image, 3, &target, &index, &layer);
    assert!(r.stderr.contains(&refused), "{}", r.stderr);
    // The proxy logs once its next write fails, which may be just after opship exits.
    let logged = Instant::now() + Duration::from_secs(30);
    let wrote: usize = loop {
        if let Some(n) = proxy
            .log()
            .iter()
            .find_map(|l| l.strip_prefix("endless wrote ")?.parse().ok())
        {
            break n;
        }
        assert!(
            Instant::now() < logged,
            "the endless answer was never cut off"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        wrote < 64 << 20,
        "{wrote} bytes went out before opship hung up"
    );

    // An endless manifest: refused past the 4 MiB manifest limit.
    proxy.script(vec![rule(
        "GET",
        "/manifests/v1",
        Fault::Endless,
        usize::MAX,
    )]);
    let r = failed_pull(&home, &image, 3, &target, &index, &layer);
    assert!(
        r.stderr.contains(&format!(
            "registry {} sent more than 4194304 bytes (the limit for a manifest) for manifest v1 of hostile/bundle; refused",
            proxy.addr
        )),
        "{}",
        r.stderr
    );

    // Content that is not what the descriptor names: the blob, its digest and repository.
    proxy.script(vec![rule("GET", &layer, Fault::Corrupt, usize::MAX)]);
    let r = failed_pull(&home, &image, 3, &target, &index, &layer);
    assert!(
        r.stderr.contains(&format!(
            "registry {} sent wrong content for blob sha256:{layer} of hostile/bundle: expected sha256:{layer} ({layer_size} bytes), got sha256:",
            proxy.addr
        )),
        "{}",
        r.stderr
    );

    // Into a directory that did not exist: nothing is left of it.
    let fresh = tmp.path().join("fresh");
    let (r, killed) = run_bounded(
        bounded(&home, 0).args(["pull", &image, &format!("{}:x", fresh.display())]),
        BOUND,
    );
    assert!(!killed && r.code == 2, "{}", r.stderr);
    assert!(!fresh.exists(), "a failed pull left {}", fresh.display());

    // Without faults the same pull works, into the same layout.
    proxy.script(Vec::new());
    ok(
        run(bounded(&home, 0).args(["pull", &image, &format!("{}:pulled", target.display())])),
        "pull without faults",
    );
    opship_core::image::Layout::new(&target)
        .read_image("pulled")
        .unwrap();
    opship_core::image::Layout::new(&target)
        .read_image("0.2.0")
        .unwrap();
}

#[test]
fn a_web_server_is_not_taken_for_a_registry() {
    let reg = TestRegistry::start(None);
    let proxy = FaultProxy::start(&reg.addr);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, _) = build(&tmp.path().join("src"), "0.3.0");
    let src = format!("{}:0.3.0", layout.display());
    proxy.script(vec![
        rule("GET", "/", Fault::Html404, usize::MAX),
        rule("HEAD", "/", Fault::Html404, usize::MAX),
        rule("POST", "/", Fault::Html404, usize::MAX),
    ]);
    let image = format!("{}/web/site:v1", proxy.addr);
    let target = tmp.path().join("pulled");
    for args in [
        vec![
            "pull".to_owned(),
            image.clone(),
            format!("{}:x", target.display()),
        ],
        vec!["inspect".to_owned(), image.clone()],
        vec!["push".to_owned(), src.clone(), image.clone()],
    ] {
        let (r, killed) = run_bounded(bounded(&home, 3).args(&args), BOUND);
        assert!(!killed && r.code == 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!(
                "{} does not look like an OCI registry: it answered 404 Not Found to ",
                proxy.addr
            )) && r.stderr.contains(
                "(no Docker-Distribution-API-Version header, a text/html; charset=iso-8859-1 answer): <!DOCTYPE html> <html><head><title>404 Not Found"
            ),
            "{args:?}: {}",
            r.stderr
        );
        // A short quote, never the whole page.
        assert!(!r.stderr.contains("END-OF-PAGE-MARKER"), "{}", r.stderr);
        assert!(
            r.stderr.len() < 1500,
            "{} bytes: {}",
            r.stderr.len(),
            r.stderr
        );
    }
    assert!(!target.exists());
    // Not retried: the answer is final (one GET each by pull, inspect and push's look at
    // the tag; at most one POST per blob: the first refusal drops the other upload).
    assert_eq!(
        proxy.count("/manifests/v1 -> Html404"),
        3,
        "{:?}",
        proxy.log()
    );
    let posts = proxy.count("/blobs/uploads/ -> Html404");
    assert!((1..=2).contains(&posts), "{:?}", proxy.log());
}

#[test]
fn answers_that_never_change_are_not_retried() {
    let reg = TestRegistry::start(None);
    let proxy = FaultProxy::start(&reg.addr);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, digest) = build(tmp.path(), "0.3.0");
    let src = format!("{}:0.3.0", layout.display());
    let layer = layer_hex(&layout, "0.3.0");

    // 501 Not Implemented on the layer upload: one attempt, exit 2, the answer quoted.
    proxy.script(vec![rule("PUT", &layer, Fault::Status(501), usize::MAX)]);
    let (r, killed) = run_bounded(
        bounded(&home, 3).args(["push", &src, &format!("{}/a/bundle:v1", proxy.addr)]),
        BOUND,
    );
    assert!(!killed && r.code == 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "registry {} answered 501 Not Implemented: UNKNOWN: fault proxy: injected 501",
            proxy.addr
        )),
        "{}",
        r.stderr
    );
    assert_eq!(proxy.count(&format!("{layer} -> Status(501)")), 1);
    assert_eq!(manifest_status(&reg.addr, "a/bundle", "v1"), 404);
    assert_eq!(manifest_status(&reg.addr, "a/bundle", &digest), 404);

    // 505 on opening the upload: the same.
    proxy.script(vec![rule(
        "POST",
        "/blobs/uploads/",
        Fault::Status(505),
        usize::MAX,
    )]);
    let (r, killed) = run_bounded(
        bounded(&home, 3).args(["push", &src, &format!("{}/b/bundle:v1", proxy.addr)]),
        BOUND,
    );
    assert!(!killed && r.code == 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("answered 505 HTTP Version Not Supported"),
        "{}",
        r.stderr
    );
    // The two blobs go up together and the first failure drops the other upload: one POST
    // or two, never a retry.
    let posts = proxy.count("/blobs/uploads/ -> Status(505)");
    assert!((1..=2).contains(&posts), "{posts} POSTs: {:?}", proxy.log());
    assert_eq!(manifest_status(&reg.addr, "b/bundle", "v1"), 404);

    // A 503 still is retried, and the push goes through.
    proxy.script(vec![rule("PUT", &layer, Fault::Status(503), 2)]);
    let (r, killed) = run_bounded(
        bounded(&home, 3).args(["push", &src, &format!("{}/c/bundle:v1", proxy.addr)]),
        BOUND,
    );
    assert!(!killed && r.code == 0, "{}", r.stderr);
    assert_eq!(proxy.count(&format!("{layer} -> Status(503)")), 2);
    assert_eq!(manifest_status(&reg.addr, "c/bundle", "v1"), 200);
}

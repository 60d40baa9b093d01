//! Registry client tests against a fake registry on loopback that lies or fails on purpose
//! (wrong digests, 5xx): the client must refuse bad content and retry transient errors. The
//! real-registry tests (docker-registry, skopeo) are in the CLI tests, `tests/cli/registry.rs`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opship_core::image::oci::Digest;
use opship_oci::registry::{self, Options, Registry};
use opship_oci::{Auth, Error};

mod chart;
mod cosign;
mod digest;
mod index;
mod sigstore;

/// One canned answer: status, headers, body.
#[derive(Clone)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn ok(body: &[u8], headers: &[(&str, &str)]) -> Answer {
    Answer {
        status: 200,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body: body.to_vec(),
    }
}

fn status(code: u16) -> Answer {
    Answer {
        status: code,
        headers: Vec::new(),
        body: if code == 429 {
            br#"{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}"#.to_vec()
        } else {
            br#"{"errors":[{"code":"UNAVAILABLE","message":"try later"}]}"#.to_vec()
        },
    }
}

/// A fake registry: `GET path` → a queue of answers (the last one repeats).
struct Fake {
    addr: String,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

fn fake(routes: Vec<(&str, Vec<Answer>)>) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let routes: HashMap<String, Vec<Answer>> =
        routes.into_iter().map(|(p, a)| (p.to_owned(), a)).collect();
    let hits = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let h = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let path = first.split_whitespace().nth(1).unwrap_or("").to_owned();
            let n = {
                let mut hits = h.lock().unwrap();
                let n = hits.entry(path.clone()).or_insert(0);
                *n += 1;
                *n
            };
            let answer = match routes.get(&path) {
                Some(list) => list[(n - 1).min(list.len() - 1)].clone(),
                None if path == "/v2/" => ok(b"{}", &[]),
                None => Answer {
                    status: 404,
                    headers: Vec::new(),
                    body: br#"{"errors":[{"code":"NOT_FOUND","message":"nope"}]}"#.to_vec(),
                },
            };
            let mut head = format!(
                "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                answer.status,
                answer.body.len()
            );
            for (k, v) in &answer.headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&answer.body);
        }
    });
    Fake { addr, hits }
}

fn options() -> Options {
    Options {
        backoff: Duration::from_millis(5),
        ..Options::default()
    }
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// A manifest whose config is `config` (no layers); returns (bytes, digest).
fn manifest(config: &[u8]) -> (Vec<u8>, String) {
    let d = Digest::of(config);
    let m = format!(
        r#"{{"schemaVersion":2,"mediaType":"{OCI_MANIFEST}","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{d}","size":{}}},"layers":[]}}"#,
        config.len()
    );
    let md = Digest::of(m.as_bytes()).to_string();
    (m.into_bytes(), md)
}

const CONFIG: &[u8] = br#"{"architecture":"amd64","config":{"Labels":{"a":"b"}},"os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;

#[test]
fn a_blob_with_the_wrong_content_is_refused_and_nothing_is_tagged() {
    let (m, md) = manifest(CONFIG);
    let cd = Digest::of(CONFIG).to_string();
    let server = fake(vec![
        (
            "/v2/lie/manifests/1",
            vec![ok(
                &m,
                &[
                    ("Content-Type", OCI_MANIFEST),
                    ("Docker-Content-Digest", &md),
                ],
            )],
        ),
        (
            &format!("/v2/lie/blobs/{cd}"),
            vec![ok(b"{\"not\":\"the config\"}", &[])],
        ),
    ]);
    let r = registry::parse_reference(&format!("{}/lie:1", server.addr)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err =
        block(Registry::new(&r, Auth::Anonymous, options()).pull_to_layout(&r, dir.path(), "x"))
            .unwrap_err();
    assert!(matches!(err, Error::DigestMismatch { .. }), "{err}");
    assert!(err.to_string().contains(&cd), "{err}");
    assert!(!dir.path().join("index.json").exists());
}

#[test]
fn a_manifest_with_the_wrong_digest_is_refused() {
    let (m, _) = manifest(CONFIG);
    let (_, other) = manifest(b"{}");
    let server = fake(vec![(
        "/v2/lie/manifests/1",
        vec![ok(
            &m,
            &[
                ("Content-Type", OCI_MANIFEST),
                ("Docker-Content-Digest", &other),
            ],
        )],
    )]);
    let r = registry::parse_reference(&format!("{}/lie:1", server.addr)).unwrap();
    let reg = Registry::new(&r, Auth::Anonymous, options());
    let err = block(reg.inspect(&r)).unwrap_err();
    assert!(
        matches!(err, Error::DigestMismatch { .. } | Error::Registry { .. }),
        "{err}"
    );
    // Asking by digest for other content than the registry sends is refused too.
    let by_digest = registry::parse_reference(&format!("{}/lie@{other}", server.addr)).unwrap();
    assert!(block(reg.inspect(&by_digest)).is_err());
}

#[test]
fn transient_errors_are_retried_and_permanent_ones_reported() {
    let (m, md) = manifest(CONFIG);
    let cd = Digest::of(CONFIG).to_string();
    let good = ok(
        &m,
        &[
            ("Content-Type", OCI_MANIFEST),
            ("Docker-Content-Digest", &md),
        ],
    );
    let server = fake(vec![
        (
            "/v2/flaky/manifests/1",
            vec![status(503), status(429), good],
        ),
        (&format!("/v2/flaky/blobs/{cd}"), vec![ok(CONFIG, &[])]),
        ("/v2/down/manifests/1", vec![status(500)]),
    ]);
    let r = registry::parse_reference(&format!("{}/flaky:1", server.addr)).unwrap();
    let reg = Registry::new(&r, Auth::Anonymous, options());
    let i = block(reg.inspect(&r)).unwrap();
    assert_eq!(i.digest.as_str(), md);
    assert_eq!(i.labels.get("a").map(String::as_str), Some("b"));
    assert_eq!(server.hits.lock().unwrap()["/v2/flaky/manifests/1"], 3);

    let down = registry::parse_reference(&format!("{}/down:1", server.addr)).unwrap();
    let err = block(reg.inspect(&down)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("500") && text.contains(&server.addr),
        "{text}"
    );
    assert_eq!(server.hits.lock().unwrap()["/v2/down/manifests/1"], 4);
}

#[test]
fn a_dead_registry_is_unreachable_after_retries() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let r = registry::parse_reference(&format!("127.0.0.1:{port}/x:1")).unwrap();
    let err = block(Registry::new(&r, Auth::Anonymous, options()).resolve(&r)).unwrap_err();
    assert!(matches!(err, Error::Unreachable { .. }), "{err}");
}

#[test]
fn a_config_too_large_for_memory_is_refused_before_it_is_requested() {
    let d = Digest::of(b"x");
    let m = format!(
        r#"{{"schemaVersion":2,"mediaType":"{OCI_MANIFEST}","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{d}","size":1073741824}},"layers":[]}}"#
    );
    let md = Digest::of(m.as_bytes()).to_string();
    let server = fake(vec![(
        "/v2/big/manifests/1",
        vec![ok(
            m.as_bytes(),
            &[
                ("Content-Type", OCI_MANIFEST),
                ("Docker-Content-Digest", &md),
            ],
        )],
    )]);
    let r = registry::parse_reference(&format!("{}/big:1", server.addr)).unwrap();
    let err = block(Registry::new(&r, Auth::Anonymous, options()).inspect(&r)).unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("blob {d} of big")) && text.contains("1073741824"),
        "{text}"
    );
    assert!(
        !server
            .hits
            .lock()
            .unwrap()
            .contains_key(&format!("/v2/big/blobs/{d}")),
        "the blob was requested"
    );
}

#[test]
fn an_error_page_is_named_and_quoted_briefly_not_retried() {
    let page = format!(
        "<html><body><h1>Oops</h1>{}<p>TAIL-MARKER</p></body></html>",
        "<p>filler</p>".repeat(2000)
    );
    let server = fake(vec![(
        "/v2/web/manifests/1",
        vec![Answer {
            status: 404,
            headers: vec![("Content-Type".into(), "text/html".into())],
            body: page.into_bytes(),
        }],
    )]);
    let r = registry::parse_reference(&format!("{}/web:1", server.addr)).unwrap();
    let err = block(Registry::new(&r, Auth::Anonymous, options()).inspect(&r)).unwrap_err();
    assert!(matches!(err, Error::NotRegistry { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("does not look like an OCI registry"),
        "{text}"
    );
    assert!(text.contains("<html><body><h1>Oops</h1>"), "{text}");
    assert!(!text.contains("TAIL-MARKER") && text.len() < 800, "{text}");
    assert_eq!(server.hits.lock().unwrap()["/v2/web/manifests/1"], 1);
}

//! HTTP to the Sigstore services (Fulcio, Rekor, the timestamp authority, GitHub Actions'
//! token endpoint): one bounded request (time and answer size), and an error that names the
//! service and quotes what it answered.

use std::time::Duration;

use crate::error::{Error, Result};

/// A Sigstore service client.
pub struct Service {
    /// Human name in errors (`Fulcio`, `Rekor`, …).
    pub name: String,
    client: reqwest::Client,
}

impl Service {
    /// A client for `name` whose requests end after `timeout`.
    pub fn new(name: &str, timeout: Duration) -> Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(30)))
            .timeout(timeout)
            .user_agent(concat!("opship/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Keyless(format!("{name}: HTTP client: {e}")))?;
        Ok(Service {
            name: name.to_owned(),
            client,
        })
    }
}

/// What a request sends.
pub struct Body<'a> {
    /// `Content-Type`.
    pub content_type: &'a str,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// `Accept`.
    pub accept: &'a str,
}

/// The transport error and its causes in one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

/// The first bytes of an answer, as text, for an error message; credentials it may echo
/// (the identity token Fulcio was sent) withheld.
pub fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(600)]);
    let one = crate::redact::redact(&text.split_whitespace().collect::<Vec<_>>().join(" "), &[]);
    if bytes.len() > 600 {
        format!("{one} …")
    } else {
        one
    }
}

/// POST the JSON `request` to `url` and take a JSON answer of at most `limit` bytes (Fulcio's
/// and Rekor's APIs), as [`post_or_get`].
pub async fn post_json(
    service: &Service,
    url: &str,
    request: &serde_json::Value,
    limit: usize,
) -> Result<Vec<u8>> {
    let body = Body {
        content_type: "application/json",
        bytes: serde_json::to_vec(request).unwrap_or_default(),
        accept: "application/json",
    };
    post_or_get(service, url, Some(body), None, limit).await
}

/// POST `body` to `url` (GET without one), with a bearer token when given; the answer's
/// bytes (at most `limit`) when the status is 2xx, else an error quoting the answer.
pub async fn post_or_get(
    service: &Service,
    url: &str,
    body: Option<Body<'_>>,
    bearer: Option<&str>,
    limit: usize,
) -> Result<Vec<u8>> {
    let name = &service.name;
    let mut req = match body {
        Some(b) => service
            .client
            .post(url)
            .header("Content-Type", b.content_type)
            .header("Accept", b.accept)
            .body(b.bytes),
        None => service.client.get(url),
    };
    if let Some(t) = bearer {
        req = req.header("Authorization", format!("bearer {t}"));
    }
    let mut resp = req
        .send()
        .await
        .map_err(|e| Error::Keyless(format!("cannot reach {name} at {url}: {}", chain(&e))))?;
    let status = resp.status();
    let mut bytes = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                if bytes.len() + c.len() > limit {
                    return Err(Error::Keyless(format!(
                        "{name} at {url} sent more than {limit} bytes; refused"
                    )));
                }
                bytes.extend_from_slice(&c);
            }
            Ok(None) => break,
            Err(e) => {
                return Err(Error::Keyless(format!(
                    "{name} at {url} stopped answering: {}",
                    chain(&e)
                )));
            }
        }
    }
    if !status.is_success() {
        return Err(Error::Keyless(format!(
            "{name} at {url} refused ({status}): {}",
            crate::redact::redact(&quote(&bytes), &bearer.into_iter().collect::<Vec<_>>())
        )));
    }
    Ok(bytes)
}

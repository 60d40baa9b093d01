//! The HTTP side of the registry client: every request carries the registry's auth (HTTP Basic,
//! or a bearer token per repository scope from the token service its 401 names); every answer
//! is read against a byte budget, under the idle timeout and the command's deadline; transient
//! failures are retried with backoff; errors name the object and quote at most a few hundred
//! bytes of what the server said.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, Response, StatusCode, Url};
use tokio::time::Instant;

use crate::auth::Auth;
use crate::error::Error;

const MIB: u64 = 1024 * 1024;
/// The most bytes of a manifest or image index opship reads (containerd's and distribution's
/// limit too).
pub(crate) const MANIFEST_LIMIT: u64 = 4 * MIB;
/// The most bytes of a blob held in memory (an image config, a signature payload, a Sigstore
/// bundle); image layers go to disk instead.
pub(crate) const MEMORY_BLOB_LIMIT: u64 = 16 * MIB;
/// The most bytes of a tag list.
pub(crate) const TAGS_LIMIT: u64 = 16 * MIB;
/// The most bytes of a token service's answer.
const TOKEN_LIMIT: u64 = MIB;
/// The part of an error answer that is read: any distribution error body fits.
const ERROR_LIMIT: u64 = 64 * 1024;
/// Characters of an answer quoted in a message.
const QUOTE_CHARS: usize = 300;
/// The header distribution-compatible registries set on every answer.
const API_VERSION: &str = "docker-distribution-api-version";

/// A failed attempt, and whether another one may succeed.
pub(crate) struct Failure {
    pub(crate) error: Box<Error>,
    pub(crate) transient: bool,
}

impl Failure {
    /// A failure another attempt may not have.
    fn transient(error: Error) -> Self {
        Failure {
            error: Box::new(error),
            transient: true,
        }
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure {
            error: Box::new(error),
            transient: false,
        }
    }
}

impl From<opship_core::Error> for Failure {
    fn from(e: opship_core::Error) -> Self {
        Failure::from(Error::from(e))
    }
}

/// The outcome of one attempt.
pub(crate) type Attempt<T> = std::result::Result<T, Failure>;

/// Statuses worth another attempt: the server is overloaded, restarting or behind a proxy
/// that lost it. 501, 505 and the other 5xx say the request itself will never work.
pub(crate) fn transient_status(s: StatusCode) -> bool {
    matches!(s.as_u16(), 408 | 429 | 500 | 502 | 503 | 504)
}

/// The token scope of a repository: `pull`, or `pull,push`.
pub(crate) fn scope(repository: &str, push: bool) -> String {
    format!(
        "repository:{repository}:{}",
        if push { "pull,push" } else { "pull" }
    )
}

/// One request: what to send and the token scopes it needs.
pub(crate) struct Request {
    pub(crate) method: Method,
    pub(crate) url: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Option<Bytes>,
}

impl Request {
    pub(crate) fn new(method: Method, url: impl Into<String>, scopes: Vec<String>) -> Self {
        Request {
            method,
            url: url.into(),
            scopes,
            headers: HeaderMap::new(),
            body: None,
        }
    }

    pub(crate) fn header(mut self, name: header::HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    pub(crate) fn accept(self, types: &[&str]) -> Self {
        match HeaderValue::from_str(&types.join(", ")) {
            Ok(v) => self.header(header::ACCEPT, v),
            Err(_) => self,
        }
    }

    pub(crate) fn body(mut self, body: Bytes, content_type: HeaderValue) -> Self {
        self.headers.insert(header::CONTENT_TYPE, content_type);
        self.body = Some(body);
        self
    }

    fn describe(&self) -> String {
        format!("{} {}", self.method, self.url)
    }
}

/// What the registry's 401 asked for.
#[derive(Debug, Clone, Default)]
enum Challenge {
    /// No 401 seen yet: requests go out without credentials.
    #[default]
    Unknown,
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

#[derive(Default)]
struct AuthState {
    challenge: Challenge,
    /// Bearer tokens by their scopes (space-joined).
    tokens: HashMap<String, String>,
}

/// What a request was sent with.
enum Sent {
    Nothing,
    Basic,
    Token,
}

/// Where a retried operation is.
pub(crate) struct Backoff {
    attempt: u32,
    delay: Duration,
}

/// The transport of one registry host.
pub(crate) struct Http {
    client: std::result::Result<reqwest::Client, String>,
    scheme: &'static str,
    host: String,
    auth: Auth,
    idle: Duration,
    attempts: u32,
    backoff: Duration,
    /// When the command gives up, and the deadline in seconds (for messages).
    deadline: Option<(Instant, u64)>,
    state: Mutex<AuthState>,
}

/// The settings [`Http::new`] takes from the client options.
pub(crate) struct Settings {
    pub(crate) plain_http: bool,
    pub(crate) connect_timeout: Duration,
    pub(crate) idle: Duration,
    pub(crate) attempts: u32,
    pub(crate) backoff: Duration,
    pub(crate) deadline: Option<Duration>,
}

impl Http {
    /// `text` (what the registry answered) with this client's password withheld.
    fn withhold(&self, text: &str) -> String {
        self.auth.withhold(text)
    }

    pub(crate) fn new(host: String, auth: Auth, s: Settings) -> Self {
        // No overall per-request timeout here: the deadline covers the whole command and the
        // idle timeout every read, so a large blob may take as long as it keeps arriving.
        let client = reqwest::Client::builder()
            .connect_timeout(s.connect_timeout)
            .read_timeout(s.idle)
            .user_agent(concat!("opship/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| error_chain(&e));
        let deadline = s.deadline.map(|d| {
            let at = Instant::now()
                .checked_add(d)
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
            (at, d.as_secs())
        });
        Http {
            client,
            scheme: if s.plain_http { "http" } else { "https" },
            host,
            auth,
            idle: s.idle,
            attempts: s.attempts.max(1),
            backoff: s.backoff,
            deadline,
            state: Mutex::new(AuthState::default()),
        }
    }

    /// `scheme://host` + `path` (which starts with `/`).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}://{}{path}", self.scheme, self.host)
    }

    fn client(&self) -> Attempt<&reqwest::Client> {
        self.client.as_ref().map_err(|e| {
            Failure::from(Error::Unreachable {
                registry: self.host.clone(),
                message: format!("cannot set up the HTTP client: {e}"),
            })
        })
    }

    /// `fut`, unless the deadline passes first.
    pub(crate) async fn within<F: Future>(
        &self,
        fut: F,
        doing: impl FnOnce() -> String,
    ) -> Attempt<F::Output> {
        match self.deadline {
            None => Ok(fut.await),
            Some((at, seconds)) => tokio::time::timeout_at(at, fut).await.map_err(|_| {
                Failure::from(Error::Deadline {
                    registry: self.host.clone(),
                    seconds,
                    doing: doing(),
                })
            }),
        }
    }

    /// Runs `f` until it succeeds, fails for good, the attempts are used up or the next
    /// backoff would end past the deadline.
    pub(crate) async fn retry<T, F, Fut>(&self, mut f: F) -> crate::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Attempt<T>>,
    {
        let mut backoff = self.backoff();
        loop {
            if let Some(done) = self.settle(&mut backoff, f().await).await {
                return done;
            }
        }
    }

    /// The retry state of one operation (for loops [`Http::retry`] cannot express).
    pub(crate) fn backoff(&self) -> Backoff {
        Backoff {
            attempt: 1,
            delay: self.backoff,
        }
    }

    /// The final outcome of an attempt, or `None` after waiting for the next one.
    pub(crate) async fn settle<T>(
        &self,
        b: &mut Backoff,
        outcome: Attempt<T>,
    ) -> Option<crate::Result<T>> {
        match outcome {
            Ok(v) => Some(Ok(v)),
            Err(Failure {
                error,
                transient: true,
            }) if b.attempt < self.attempts && self.time_for(b.delay) => {
                tracing::warn!(
                    "{error}; retrying in {} ms (attempt {}/{})",
                    b.delay.as_millis(),
                    b.attempt,
                    self.attempts
                );
                tokio::time::sleep(b.delay).await;
                b.delay = b.delay.saturating_mul(2);
                b.attempt += 1;
                None
            }
            Err(f) => Some(Err(*f.error)),
        }
    }

    fn time_for(&self, delay: Duration) -> bool {
        self.deadline
            .is_none_or(|(at, _)| Instant::now().checked_add(delay).is_some_and(|t| t < at))
    }

    /// Sends `req` with the credentials the registry asked for. A 401 with a challenge not
    /// answered yet (a bearer token for these scopes, or Basic credentials not sent) is
    /// answered once; any other answer is returned as it is, whatever its status.
    pub(crate) async fn send(&self, req: &Request) -> Attempt<Response> {
        let mut answered = false;
        loop {
            let client = self.client()?;
            let mut builder = client
                .request(req.method.clone(), &req.url)
                .headers(req.headers.clone());
            if let Some(b) = &req.body {
                builder = builder.body(b.clone());
            } else if matches!(req.method, Method::POST | Method::PUT | Method::PATCH) {
                // Some registries want a length on every upload request, empty or not.
                builder = builder.header(header::CONTENT_LENGTH, 0);
            }
            let (builder, sent) = self.authorize(builder, &req.scopes).await?;
            let res = self
                .within(builder.send(), || {
                    format!("waiting for the answer to {}", req.describe())
                })
                .await?
                .map_err(|e| self.transport(req, e))?;
            if res.status() == StatusCode::UNAUTHORIZED
                && !answered
                && self.learn(res.headers(), &req.scopes, &sent)
            {
                answered = true;
                continue;
            }
            return Ok(res);
        }
    }

    /// The credentials the known challenge calls for (fetching a token when needed).
    async fn authorize(
        &self,
        builder: reqwest::RequestBuilder,
        scopes: &[String],
    ) -> Attempt<(reqwest::RequestBuilder, Sent)> {
        let (challenge, cached) = {
            let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            (
                state.challenge.clone(),
                state.tokens.get(&scopes.join(" ")).cloned(),
            )
        };
        match (challenge, &self.auth) {
            (Challenge::Unknown, _) => Ok((builder, Sent::Nothing)),
            (Challenge::Basic, Auth::Basic { username, password }) => {
                Ok((builder.basic_auth(username, Some(password)), Sent::Basic))
            }
            (Challenge::Basic, Auth::Anonymous) => Ok((builder, Sent::Nothing)),
            (Challenge::Bearer { realm, service }, _) => {
                let token = match cached {
                    Some(t) => t,
                    None => {
                        let t = self.token(&realm, service.as_deref(), scopes).await?;
                        self.state
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .tokens
                            .insert(scopes.join(" "), t.clone());
                        t
                    }
                };
                Ok((builder.bearer_auth(token), Sent::Token))
            }
        }
    }

    /// Takes in the challenge of a 401; whether sending again may help.
    fn learn(&self, headers: &HeaderMap, scopes: &[String], sent: &Sent) -> bool {
        let Some(challenge) = parse_challenge(headers) else {
            return false;
        };
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let again = match (&challenge, sent) {
            // A token we had was refused (expired, or for other scopes): fetch a new one.
            (Challenge::Bearer { .. }, _) => {
                state.tokens.remove(&scopes.join(" "));
                true
            }
            (Challenge::Basic, Sent::Basic) => false,
            (Challenge::Basic, _) => matches!(self.auth, Auth::Basic { .. }),
            (Challenge::Unknown, _) => false,
        };
        state.challenge = challenge;
        again
    }

    /// A bearer token for `scopes` from the token service `realm`, with the credentials when
    /// there are any (anonymous tokens otherwise).
    async fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        scopes: &[String],
    ) -> Attempt<String> {
        let mut url = Url::parse(realm).map_err(|e| {
            Failure::from(Error::Registry {
                registry: self.host.clone(),
                status: "an unusable answer".into(),
                answer: format!("the token service realm `{realm}` is not a URL: {e}"),
            })
        })?;
        {
            let mut q = url.query_pairs_mut();
            for s in scopes {
                q.append_pair("scope", s);
            }
            if let Some(s) = service {
                q.append_pair("service", s);
            }
        }
        let mut builder = self.client()?.get(url.clone());
        if let Auth::Basic { username, password } = &self.auth {
            builder = builder.basic_auth(username, Some(password));
        }
        let req = Request::new(Method::GET, url.as_str(), Vec::new());
        let res = self
            .within(builder.send(), || {
                format!("waiting for the token service at {realm}")
            })
            .await?
            .map_err(|e| self.transport(&req, e))?;
        let status = res.status();
        if !status.is_success() {
            let body = self.prefix(res, ERROR_LIMIT).await;
            return Err(Failure {
                error: Box::new(Error::Unauthorized {
                    registry: self.host.clone(),
                    user: user_suffix(self.auth.username()),
                    answer: self.withhold(&format!("token service: {}", describe_body(&body))),
                }),
                transient: transient_status(status),
            });
        }
        let body = self
            .read(
                res,
                TOKEN_LIMIT,
                "the limit for a token service's answer",
                &format!("the token service's answer ({realm})"),
            )
            .await?;
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let t: Token = serde_json::from_slice(&body).map_err(|e| {
            Failure::from(Error::Registry {
                registry: self.host.clone(),
                status: "an unusable answer".into(),
                // Neither serde's message (it quotes values) nor the body (a token the
                // service mangled is still a token): where it broke, and the size.
                answer: format!(
                    "the token service's answer is not token JSON (line {}, column {}; {} \
                     bytes, not shown: it may hold a token)",
                    e.line(),
                    e.column(),
                    body.len()
                ),
            })
        })?;
        t.token
            .filter(|t| !t.is_empty())
            .or(t.access_token.filter(|t| !t.is_empty()))
            .ok_or_else(|| {
                Failure::from(Error::Registry {
                    registry: self.host.clone(),
                    status: "an unusable answer".into(),
                    answer: "the token service's answer holds no token".into(),
                })
            })
    }

    fn transport(&self, req: &Request, e: reqwest::Error) -> Failure {
        let message = if e.is_timeout() && !e.is_connect() {
            format!(
                "no answer to {} within {} s (--timeout)",
                req.describe(),
                self.idle.as_secs_f64()
            )
        } else {
            format!("{}: {}", req.describe(), error_chain(&e))
        };
        Failure {
            error: Box::new(Error::Unreachable {
                registry: self.host.clone(),
                message,
            }),
            transient: !e.is_builder() && !e.is_redirect(),
        }
    }

    /// The whole body of `res`: at most `limit` bytes (`limit_text` says whose limit), under
    /// the idle timeout and the deadline.
    pub(crate) async fn read(
        &self,
        mut res: Response,
        limit: u64,
        limit_text: &str,
        what: &str,
    ) -> Attempt<Vec<u8>> {
        let mut out = Vec::new();
        self.stream(&mut res, limit, limit_text, what, |chunk| {
            out.extend_from_slice(chunk);
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Streams the body of `res` into `sink`, refusing it as soon as more than `limit` bytes
    /// arrive (or the `Content-Length` announces more); returns the bytes received.
    pub(crate) async fn stream(
        &self,
        res: &mut Response,
        limit: u64,
        limit_text: &str,
        what: &str,
        mut sink: impl FnMut(&[u8]) -> crate::Result<()>,
    ) -> Attempt<u64> {
        let too_large = || {
            Failure::from(Error::TooLarge {
                registry: self.host.clone(),
                what: what.to_owned(),
                limit: format!("{limit} bytes ({limit_text})"),
            })
        };
        if res.content_length().is_some_and(|n| n > limit) {
            return Err(too_large());
        }
        let expected = res.content_length();
        let of = |n: u64| match expected {
            Some(total) => format!("{n} of {total}"),
            None => n.to_string(),
        };
        let mut received = 0u64;
        loop {
            let chunk = self
                .within(res.chunk(), || {
                    format!("reading {what} ({} bytes received)", of(received))
                })
                .await?;
            match chunk {
                Ok(Some(c)) => {
                    let n = c.len() as u64;
                    if received.saturating_add(n) > limit {
                        return Err(too_large());
                    }
                    received += n;
                    sink(&c)?;
                }
                Ok(None) => return Ok(received),
                Err(e) => {
                    let reason = if e.is_timeout() {
                        format!("no data for {} s (--timeout)", self.idle.as_secs_f64())
                    } else {
                        error_chain(&e)
                    };
                    return Err(Failure::transient(Error::Interrupted {
                        registry: self.host.clone(),
                        what: what.to_owned(),
                        received: of(received),
                        reason,
                    }));
                }
            }
        }
    }

    /// What arrives of the body within `limit` bytes, the idle timeout and the deadline;
    /// errors only shorten it (this is for quoting).
    async fn prefix(&self, mut res: Response, limit: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while (out.len() as u64) < limit {
            match self.within(res.chunk(), String::new).await {
                Ok(Ok(Some(c))) => out.extend_from_slice(&c),
                _ => break,
            }
        }
        out.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        out
    }

    /// The error for an answer with a status the caller did not expect: the registry's error
    /// codes, or a note that the server does not look like a registry and a short quote.
    pub(crate) async fn refusal(&self, req: &Request, res: Response) -> Failure {
        let status = res.status();
        let final_url = res.url().clone();
        let api_header = res.headers().contains_key(API_VERSION);
        let content_type = res
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = if req.method == Method::HEAD {
            Vec::new()
        } else {
            self.prefix(res, ERROR_LIMIT).await
        };
        let envelope = envelope(&body);
        let transient = transient_status(status);
        let request = format!("{} {final_url}", req.method);
        // A redirect may lead elsewhere (blob storage); only the registry's own answers say
        // whether it is a registry.
        let from_registry_host = Url::parse(&req.url).is_ok_and(|asked| {
            asked.host_str() == final_url.host_str()
                && asked.port_or_known_default() == final_url.port_or_known_default()
        });
        let error = if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            Error::Unauthorized {
                registry: self.host.clone(),
                user: user_suffix(self.auth.username()),
                answer: self.withhold(&format!(
                    "{status}: {} (for {request})",
                    describe_body(&body)
                )),
            }
        } else if envelope.is_none() && !api_header && from_registry_host {
            let mut details = vec!["no Docker-Distribution-API-Version header".to_owned()];
            match content_type {
                Some(t) => details.push(format!("a {t} answer")),
                None if !body.is_empty() => details.push("an answer that is not JSON".into()),
                None => {}
            }
            Error::NotRegistry {
                registry: self.host.clone(),
                status: status.to_string(),
                request,
                details: format!("({})", details.join(", ")),
                answer: if body.is_empty() {
                    "(empty body)".into()
                } else {
                    self.withhold(&quote(&body))
                },
            }
        } else {
            Error::Registry {
                registry: self.host.clone(),
                status: status.to_string(),
                answer: self.withhold(&format!("{} (for {request})", describe_body(&body))),
            }
        };
        Failure {
            error: Box::new(error),
            transient,
        }
    }

    /// `res` when its status is one of `ok`, else the refusal.
    pub(crate) async fn expect(&self, req: &Request, ok: &[StatusCode]) -> Attempt<Response> {
        let res = self.send(req).await?;
        if ok.contains(&res.status()) {
            Ok(res)
        } else {
            Err(self.refusal(req, res).await)
        }
    }

    /// The `Location` of an upload answer, resolved against the request's URL.
    pub(crate) fn location(&self, res: &Response, req: &Request) -> Attempt<Url> {
        let Some(loc) = res
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
        else {
            return Err(Failure::from(Error::Registry {
                registry: self.host.clone(),
                status: "an unusable answer".into(),
                answer: format!(
                    "{} to {} has no Location header",
                    res.status(),
                    req.describe()
                ),
            }));
        };
        res.url().join(loc).map_err(|e| {
            Failure::from(Error::Registry {
                registry: self.host.clone(),
                status: "an unusable answer".into(),
                answer: format!("Location `{loc}` is not a URL: {e}"),
            })
        })
    }
}

/// The challenge of a `WWW-Authenticate` header (Bearer preferred over Basic).
fn parse_challenge(headers: &HeaderMap) -> Option<Challenge> {
    let mut found = None;
    for value in headers.get_all(header::WWW_AUTHENTICATE) {
        let Ok(text) = value.to_str() else { continue };
        let Ok(challenges) = http_auth::parse_challenges(text) else {
            continue;
        };
        for c in challenges {
            if c.scheme.eq_ignore_ascii_case("bearer") {
                let param = |name: &str| {
                    c.params
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.to_unescaped())
                };
                if let Some(realm) = param("realm") {
                    return Some(Challenge::Bearer {
                        realm,
                        service: param("service"),
                    });
                }
            } else if c.scheme.eq_ignore_ascii_case("basic") {
                found = Some(Challenge::Basic);
            }
        }
    }
    found
}

#[derive(serde::Deserialize)]
struct Envelope {
    errors: Vec<ErrorEntry>,
}

#[derive(serde::Deserialize)]
struct ErrorEntry {
    code: String,
    #[serde(default)]
    message: Option<String>,
}

/// `CODE: message; …` of a distribution error body.
fn envelope(body: &[u8]) -> Option<String> {
    let env: Envelope = serde_json::from_slice(body).ok()?;
    if env.errors.is_empty() {
        return None;
    }
    Some(
        env.errors
            .iter()
            .map(|e| match e.message.as_deref() {
                Some(m) if !m.is_empty() => format!("{}: {m}", e.code),
                _ => e.code.clone(),
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The error codes of a distribution error body, or a short quote of the body.
pub(crate) fn describe_body(body: &[u8]) -> String {
    envelope(body)
        .map(|e| crate::redact::redact(&e, &[]))
        .unwrap_or_else(|| {
            if body.iter().all(u8::is_ascii_whitespace) {
                "(empty body)".into()
            } else {
                quote(body)
            }
        })
}

/// At most [`QUOTE_CHARS`] characters of `body`, whitespace runs folded, marked when cut.
pub(crate) fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    // Credentials an answer echoes (a token, a password) are withheld before it is cut.
    let folded = crate::redact::redact(&text.split_whitespace().collect::<Vec<_>>().join(" "), &[]);
    let mut out: String = folded.chars().take(QUOTE_CHARS).collect();
    if out.len() < folded.len() {
        out.push_str(&format!("… ({} bytes in all)", body.len()));
    }
    out
}

pub(crate) fn user_suffix(user: Option<&str>) -> String {
    user.map(|u| format!(" of user `{u}`")).unwrap_or_default()
}

pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        src = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies() {
        let b = br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#;
        assert_eq!(describe_body(b), "UNAUTHORIZED: authentication required");
        assert_eq!(describe_body(b""), "(empty body)");
        let page = format!("<html>\n<body>{}</body></html>", "x".repeat(5000));
        let q = describe_body(page.as_bytes());
        assert!(q.starts_with("<html> <body>xxx"), "{q}");
        assert!(q.chars().count() < QUOTE_CHARS + 40, "{q}");
        assert!(
            q.ends_with(&format!("({} bytes in all)", page.len())),
            "{q}"
        );
    }

    #[test]
    fn challenges() {
        let mut h = HeaderMap::new();
        h.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(
                r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull""#,
            ),
        );
        match parse_challenge(&h) {
            Some(Challenge::Bearer { realm, service }) => {
                assert_eq!(realm, "https://auth.example/token");
                assert_eq!(service.as_deref(), Some("registry.example"));
            }
            other => panic!("{other:?}"),
        }
        h.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Basic realm="Registry Realm""#),
        );
        assert!(matches!(parse_challenge(&h), Some(Challenge::Basic)));
        h.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("garbage ,,"),
        );
        assert!(parse_challenge(&h).is_none());
    }

    #[test]
    fn statuses() {
        for s in [408, 429, 500, 502, 503, 504] {
            assert!(transient_status(StatusCode::from_u16(s).unwrap()), "{s}");
        }
        for s in [400, 401, 404, 501, 505, 511] {
            assert!(!transient_status(StatusCode::from_u16(s).unwrap()), "{s}");
        }
    }
}

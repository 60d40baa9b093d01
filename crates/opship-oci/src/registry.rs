//! The registry client: push from an OCI layout, pull into one, resolve, inspect, list tags,
//! check credentials. Every request is retried (bounded exponential backoff) on 5xx, 429,
//! connection errors and timeouts.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

pub use oci_client::Reference;
use oci_client::RegistryOperation;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::OciDescriptor;
use opship_core::image::layout::{self, Layout};
use opship_core::image::oci::{Descriptor, Digest, Manifest, media};

use crate::auth::Auth;
use crate::error::{Error, Result};

mod artifact;
pub use artifact::RawManifest;

/// Client options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Allow plain HTTP to any registry (loopback registries always may use it).
    pub insecure: bool,
    /// Upload blobs in chunks (PATCH) instead of one PUT.
    pub chunked: bool,
    /// Attempts per request (at least 1).
    pub attempts: u32,
    /// First backoff delay; doubled after each failed attempt.
    pub backoff: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Read timeout.
    pub read_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            insecure: false,
            chunked: false,
            attempts: 4,
            backoff: Duration::from_millis(250),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
        }
    }
}

/// A client for one registry host.
pub struct Registry {
    client: oci_client::Client,
    host: String,
    auth: Auth,
    options: Options,
    http: bool,
}

/// What a push did.
#[derive(Debug, Clone)]
pub struct PushReport {
    /// Digest of the pushed manifest.
    pub digest: Digest,
    /// Blobs in the image (config and layers).
    pub blobs: usize,
    /// Blobs the registry already had (HEAD said yes).
    pub skipped: usize,
    /// Blobs mounted from the `--from` repository.
    pub mounted: usize,
    /// Bytes uploaded.
    pub uploaded_bytes: u64,
}

/// What happened to one blob of a push.
enum BlobPush {
    /// The registry had it.
    Present,
    /// Mounted from another repository.
    Mounted,
    /// Uploaded, this many bytes.
    Uploaded(u64),
}

/// What a pull did.
#[derive(Debug, Clone)]
pub struct PullReport {
    /// Digest of the manifest.
    pub digest: Digest,
    /// Media type of the manifest.
    pub media_type: String,
    /// Blobs fetched (config and layers).
    pub blobs: usize,
    /// Bytes fetched (blobs and manifest).
    pub bytes: u64,
}

/// A remote image's manifest and config.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// Digest of the manifest.
    pub digest: Digest,
    /// Media type of the manifest.
    pub media_type: String,
    /// The manifest.
    pub manifest: serde_json::Value,
    /// The config blob.
    pub config: serde_json::Value,
    /// The config's labels.
    pub labels: BTreeMap<String, String>,
}

/// Parses an image reference (`host[:port]/repo[:tag][@digest]`).
pub fn parse_reference(s: &str) -> Result<Reference> {
    s.parse::<Reference>()
        .map_err(|e| Error::Input(format!("`{s}` is not an image reference: {e}")))
}

/// Whether `registry` (`host[:port]`) is a loopback address.
pub fn is_loopback(registry: &str) -> bool {
    let host = if let Some(rest) = registry.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        registry.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

const ACCEPT: &[&str] = &[media::OCI_MANIFEST, media::DOCKER_MANIFEST];

impl Registry {
    /// A client for the registry of `reference`.
    pub fn new(reference: &Reference, auth: Auth, options: Options) -> Self {
        let host = reference.resolve_registry().to_owned();
        let http = options.insecure || is_loopback(&host);
        let protocol = if options.insecure {
            ClientProtocol::Http
        } else if http {
            ClientProtocol::HttpsExcept(vec![host.clone()])
        } else {
            ClientProtocol::Https
        };
        let config = ClientConfig {
            protocol,
            use_monolithic_push: !options.chunked,
            connect_timeout: Some(options.connect_timeout),
            read_timeout: Some(options.read_timeout),
            user_agent: concat!("opship/", env!("CARGO_PKG_VERSION")),
            platform_resolver: None,
            ..ClientConfig::default()
        };
        Registry {
            client: oci_client::Client::new(config),
            host,
            auth,
            options,
            http,
        }
    }

    /// The registry host.
    pub fn host(&self) -> &str {
        &self.host
    }

    fn err(&self, e: OciDistributionError) -> Error {
        map_error(&self.host, self.auth.username(), e)
    }

    /// Runs `f` until it succeeds, fails for good, or the attempts are used up.
    async fn retry<T, F, Fut>(&self, mut f: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = oci_client::errors::Result<T>>,
    {
        let mut delay = self.options.backoff;
        let attempts = self.options.attempts.max(1);
        let mut attempt = 1;
        loop {
            match f().await {
                Ok(v) => return Ok(v),
                Err(e) if attempt < attempts && retryable(&e) => {
                    tracing::warn!(
                        "{}: {e}; retrying in {} ms (attempt {attempt}/{attempts})",
                        self.host,
                        delay.as_millis()
                    );
                    tokio::time::sleep(delay).await;
                    delay = delay.saturating_mul(2);
                    attempt += 1;
                }
                Err(e) => return Err(self.err(e)),
            }
        }
    }

    async fn store_auth(&self) {
        self.client
            .store_auth_if_needed(&self.host, &self.auth.to_oci())
            .await;
    }

    /// With credentials, fetches the token for `op` on the repository of `reference` up
    /// front: oci-client goes on without a token when the token service refuses, and the
    /// registry's bare 401 would hide the token service's answer (wrong password, no access).
    /// Basic-auth registries only cost a `GET /v2/` here; anonymous clients skip it.
    async fn authorize(&self, reference: &Reference, op: RegistryOperation) -> Result<()> {
        if matches!(self.auth, Auth::Anonymous) {
            return Ok(());
        }
        let auth = self.auth.to_oci();
        let auth = &auth;
        self.retry(move || self.client.auth(reference, auth, op))
            .await
            .map(|_| ())
    }

    /// Pushes the image tagged `tag` in the layout at `layout_dir` to `target`: blobs the
    /// registry lacks (HEAD first; mounted from `from` when given), the manifest by digest,
    /// then the tag of `target` (if it has one), the blobs at the same time. When the tag
    /// already holds this manifest, nothing else is sent.
    pub async fn push_from_layout(
        &self,
        layout_dir: &Path,
        tag: &str,
        target: &Reference,
        from: Option<&Reference>,
    ) -> Result<PushReport> {
        let image = Layout::new(layout_dir).read_image(tag)?;
        self.store_auth().await;
        let by_digest = target.clone_with_digest(image.descriptor.digest.to_string());
        self.authorize(&by_digest, RegistryOperation::Push).await?;
        if let Some(d) = target.digest()
            && d != image.descriptor.digest.as_str()
        {
            return Err(Error::Input(format!(
                "{}: the image `{tag}` is {}, not {d}",
                layout_dir.display(),
                image.descriptor.digest
            )));
        }
        let mut image = image;
        let blobs: Vec<(&Descriptor, bytes::Bytes)> = std::iter::once((
            &image.manifest.config,
            bytes::Bytes::from(std::mem::take(&mut image.config_bytes)),
        ))
        .chain(
            image.manifest.layers.iter().zip(
                std::mem::take(&mut image.layers)
                    .into_iter()
                    .map(bytes::Bytes::from),
            ),
        )
        .collect();
        let mut report = PushReport {
            digest: image.descriptor.digest.clone(),
            blobs: blobs.len(),
            skipped: 0,
            mounted: 0,
            uploaded_bytes: 0,
        };
        let tagged = target.tag().map(|t| {
            Reference::with_tag(
                target.registry().to_owned(),
                target.repository().to_owned(),
                t.to_owned(),
            )
        });
        // A re-push costs one request: when the tag already holds these exact manifest bytes,
        // the registry has every blob too (it refuses manifests with missing blobs). Any
        // error here (404 above all) just means: push.
        if let Some(tagged) = &tagged {
            let auth = self.auth.to_oci();
            match self.client.pull_manifest_raw(tagged, &auth, ACCEPT).await {
                Ok((body, _)) if Digest::of(&body) == image.descriptor.digest => {
                    tracing::info!("{}: {} is up to date", self.host, tagged.whole());
                    report.skipped = report.blobs;
                    return Ok(report);
                }
                Ok(_) => {}
                Err(e) => tracing::debug!("{}: {}: {e}", self.host, tagged.whole()),
            }
        }
        // The blobs of one image go up at the same time; the manifest waits for all of them.
        let outcomes = futures_util::future::try_join_all(
            blobs
                .into_iter()
                .map(|(desc, data)| self.push_blob(&by_digest, from, desc, data)),
        )
        .await?;
        for outcome in outcomes {
            match outcome {
                BlobPush::Present => report.skipped += 1,
                BlobPush::Mounted => report.mounted += 1,
                BlobPush::Uploaded(n) => report.uploaded_bytes += n,
            }
        }
        let content_type = image
            .manifest
            .media_type
            .clone()
            .unwrap_or_else(|| image.descriptor.media_type.clone());
        let content_type = reqwest::header::HeaderValue::from_str(&content_type)
            .map_err(|_| Error::Input(format!("bad manifest media type `{content_type}`")))?;
        let body = bytes::Bytes::from(image.manifest_bytes.clone());
        self.put_manifest(&by_digest, &body, &content_type).await?;
        if let Some(tagged) = &tagged {
            self.put_manifest(tagged, &body, &content_type).await?;
        }
        Ok(report)
    }

    /// One blob of a push: skipped when the registry has it, else mounted from `from` (same
    /// registry) when that works, else uploaded.
    async fn push_blob(
        &self,
        r: &Reference,
        from: Option<&Reference>,
        desc: &Descriptor,
        data: bytes::Bytes,
    ) -> Result<BlobPush> {
        let digest = desc.digest.as_str();
        if self
            .retry(move || self.client.blob_exists(r, digest))
            .await?
        {
            tracing::info!("{}: blob {digest} exists, skipped", self.host);
            return Ok(BlobPush::Present);
        }
        if let Some(from) = from
            && from.resolve_registry() == self.host
        {
            match self.client.mount_blob(r, from, digest).await {
                Ok(()) if self.client.blob_exists(r, digest).await.unwrap_or(false) => {
                    return Ok(BlobPush::Mounted);
                }
                Ok(()) => {}
                Err(e) => tracing::info!("mount of {digest} failed ({e}); uploading"),
            }
        }
        let len = data.len() as u64;
        self.retry(move || self.client.push_blob(r, data.clone(), digest))
            .await?;
        Ok(BlobPush::Uploaded(len))
    }

    async fn put_manifest(
        &self,
        r: &Reference,
        body: &bytes::Bytes,
        content_type: &reqwest::header::HeaderValue,
    ) -> Result<()> {
        // oci-client panics when a registry omits `Location` on a manifest PUT by digest, so
        // the PUT runs as its own task and a panic becomes an error.
        let attempts = self.options.attempts.max(1);
        let mut delay = self.options.backoff;
        let mut attempt = 1;
        loop {
            let client = self.client.clone();
            let (r2, body2, ct2) = (r.clone(), body.clone(), content_type.clone());
            let res =
                tokio::spawn(async move { client.push_manifest_raw(&r2, body2, ct2).await }).await;
            match res {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(e)) if attempt < attempts && retryable(&e) => {
                    tracing::warn!("{}: {e}; retrying", self.host);
                    tokio::time::sleep(delay).await;
                    delay = delay.saturating_mul(2);
                    attempt += 1;
                }
                Ok(Err(e)) => return Err(self.err(e)),
                Err(_) => {
                    return Err(Error::Registry {
                        registry: self.host.clone(),
                        status: "an unusable answer".into(),
                        answer: format!("manifest PUT for {} had no Location header", r.whole()),
                    });
                }
            }
        }
    }

    /// Fetches and verifies the manifest of `source`: bytes, digest, media type, parsed.
    async fn fetch_manifest(
        &self,
        source: &Reference,
    ) -> Result<(Vec<u8>, Digest, String, Manifest)> {
        self.store_auth().await;
        self.authorize(source, RegistryOperation::Pull).await?;
        let auth = self.auth.to_oci();
        let auth = &auth;
        let (body, digest) = self
            .retry(move || self.client.pull_manifest_raw(source, auth, ACCEPT))
            .await?;
        let actual = Digest::of(&body);
        let claimed = Digest::parse(&digest).map_err(|_| Error::Registry {
            registry: self.host.clone(),
            status: "an unusable answer".into(),
            answer: format!("manifest digest `{digest}` is not sha256"),
        })?;
        let expected = match source.digest() {
            Some(d) => Digest::parse(d)?,
            None => claimed.clone(),
        };
        if actual != expected || actual != claimed {
            return Err(Error::DigestMismatch {
                registry: self.host.clone(),
                what: format!("manifest {}", source.whole()),
                expected: expected.to_string(),
                actual: actual.to_string(),
            });
        }
        let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
            Error::Input(format!("{}: the manifest is not JSON: {e}", source.whole()))
        })?;
        let media_type = value
            .get("mediaType")
            .and_then(|v| v.as_str())
            .unwrap_or(media::OCI_MANIFEST)
            .to_owned();
        if media_type != media::OCI_MANIFEST && media_type != media::DOCKER_MANIFEST {
            return Err(Error::Input(format!(
                "{} is a {media_type}, not an image manifest; pull a platform image by digest",
                source.whole()
            )));
        }
        let manifest: Manifest = serde_json::from_value(value)
            .map_err(|e| Error::Input(format!("{}: not an image manifest: {e}", source.whole())))?;
        Ok((body.to_vec(), actual, media_type, manifest))
    }

    /// Fetches one blob and verifies its size and digest.
    async fn fetch_blob(&self, source: &Reference, desc: &Descriptor) -> Result<Vec<u8>> {
        let od = OciDescriptor {
            media_type: desc.media_type.clone(),
            digest: desc.digest.to_string(),
            size: i64::try_from(desc.size).unwrap_or(i64::MAX),
            ..OciDescriptor::default()
        };
        let od = &od;
        let bytes = self
            .retry(move || async move {
                let mut out = Vec::new();
                self.client.pull_blob(source, od, &mut out).await?;
                Ok(out)
            })
            .await?;
        let actual = Digest::of(&bytes);
        if bytes.len() as u64 != desc.size || actual != desc.digest {
            return Err(Error::DigestMismatch {
                registry: self.host.clone(),
                what: format!("blob {}", desc.digest),
                expected: format!("{} ({} bytes)", desc.digest, desc.size),
                actual: format!("{actual} ({} bytes)", bytes.len()),
            });
        }
        Ok(bytes)
    }

    /// Pulls `source` into the layout at `layout_dir` under `tag`: every blob and the
    /// manifest verified, blobs written first, `index.json` replaced atomically last.
    pub async fn pull_to_layout(
        &self,
        source: &Reference,
        layout_dir: &Path,
        tag: &str,
    ) -> Result<PullReport> {
        layout::check_tag(tag)?;
        let (manifest_bytes, digest, media_type, manifest) = self.fetch_manifest(source).await?;
        // All blobs at the same time; nothing is written until every one is verified.
        let descs: Vec<&Descriptor> = std::iter::once(&manifest.config)
            .chain(manifest.layers.iter())
            .collect();
        let fetched = futures_util::future::try_join_all(
            descs.iter().map(|desc| self.fetch_blob(source, desc)),
        )
        .await?;
        let blobs: Vec<(Digest, Vec<u8>)> = descs
            .iter()
            .map(|d| d.digest.clone())
            .zip(fetched)
            .collect();
        let layout = Layout::new(layout_dir);
        layout.init()?;
        let mut total = manifest_bytes.len() as u64;
        for (d, bytes) in &blobs {
            layout.write_blob(d, bytes)?;
            total += bytes.len() as u64;
        }
        layout.write_blob(&digest, &manifest_bytes)?;
        layout.tag(
            tag,
            Descriptor {
                media_type: media_type.clone(),
                digest: digest.clone(),
                size: manifest_bytes.len() as u64,
                annotations: BTreeMap::new(),
            },
        )?;
        Ok(PullReport {
            digest,
            media_type,
            blobs: blobs.len(),
            bytes: total,
        })
    }

    /// The digest `reference` points to (HEAD of the manifest).
    pub async fn resolve(&self, reference: &Reference) -> Result<Digest> {
        self.store_auth().await;
        let auth = self.auth.to_oci();
        let auth = &auth;
        let d = self
            .retry(move || self.client.fetch_manifest_digest(reference, auth))
            .await?;
        Digest::parse(&d).map_err(|_| Error::Registry {
            registry: self.host.clone(),
            status: "an unusable answer".into(),
            answer: format!("manifest digest `{d}` is not sha256"),
        })
    }

    /// Manifest, config and labels of `reference`, all verified.
    pub async fn inspect(&self, reference: &Reference) -> Result<Inspection> {
        let (manifest_bytes, digest, media_type, manifest) = self.fetch_manifest(reference).await?;
        let config_bytes = self.fetch_blob(reference, &manifest.config).await?;
        let config: serde_json::Value = serde_json::from_slice(&config_bytes).map_err(|e| {
            Error::Input(format!(
                "{}: the config is not JSON: {e}",
                reference.whole()
            ))
        })?;
        let labels = config
            .pointer("/config/Labels")
            .and_then(|v| v.as_object())
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let manifest: serde_json::Value = serde_json::from_slice(&manifest_bytes)
            .map_err(|e| Error::Input(format!("manifest: {e}")))?;
        Ok(Inspection {
            digest,
            media_type,
            manifest,
            config,
            labels,
        })
    }

    /// The tags of the repository of `reference`.
    pub async fn list_tags(&self, reference: &Reference) -> Result<Vec<String>> {
        self.store_auth().await;
        self.authorize(reference, RegistryOperation::Pull).await?;
        let auth = self.auth.to_oci();
        let auth = &auth;
        let r = self
            .retry(move || self.client.list_tags(reference, auth, None, None))
            .await?;
        Ok(r.tags)
    }

    /// Checks the credentials against the registry (`GET /v2/`, then the token service when
    /// the registry asks for a bearer token).
    pub async fn check_login(&self) -> Result<()> {
        let scheme = if self.http { "http" } else { "https" };
        let url = format!("{scheme}://{}/v2/", self.host);
        let http = reqwest::Client::builder()
            .connect_timeout(self.options.connect_timeout)
            .timeout(self.options.read_timeout)
            .build()
            .map_err(|e| self.unreachable(e))?;
        let res = self.send_retry(|| http.get(&url)).await?;
        if res.status().is_success() {
            return Ok(());
        }
        let challenge = res
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        if res.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Err(self.answer(res).await);
        }
        if challenge.to_ascii_lowercase().starts_with("bearer") {
            let probe = Reference::with_tag(
                self.host.clone(),
                "opship/login-check".into(),
                "latest".into(),
            );
            let auth = self.auth.to_oci();
            let auth = &auth;
            let probe = &probe;
            self.retry(move || self.client.auth(probe, auth, RegistryOperation::Pull))
                .await?;
            return Ok(());
        }
        let Auth::Basic { username, password } = &self.auth else {
            return Err(self.answer(res).await);
        };
        let res = self
            .send_retry(|| http.get(&url).basic_auth(username, Some(password)))
            .await?;
        if res.status().is_success() {
            Ok(())
        } else {
            Err(self.answer(res).await)
        }
    }

    async fn send_retry(
        &self,
        make: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response> {
        let attempts = self.options.attempts.max(1);
        let mut delay = self.options.backoff;
        let mut attempt = 1;
        loop {
            let res = make().send().await;
            let again = match &res {
                Ok(r) => r.status().is_server_error() || r.status().as_u16() == 429,
                Err(e) => e.is_connect() || e.is_timeout(),
            };
            if !again || attempt >= attempts {
                return res.map_err(|e| self.unreachable(e));
            }
            tokio::time::sleep(delay).await;
            delay = delay.saturating_mul(2);
            attempt += 1;
        }
    }

    fn unreachable(&self, e: reqwest::Error) -> Error {
        Error::Unreachable {
            registry: self.host.clone(),
            message: error_chain(&e),
        }
    }

    async fn answer(&self, res: reqwest::Response) -> Error {
        let status = res.status();
        let body = res.bytes().await.unwrap_or_default();
        let answer = describe_body(&body);
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            Error::Unauthorized {
                registry: self.host.clone(),
                user: user_suffix(self.auth.username()),
                answer: format!("{status}: {answer}"),
            }
        } else {
            Error::Registry {
                registry: self.host.clone(),
                status: status.to_string(),
                answer,
            }
        }
    }
}

fn user_suffix(user: Option<&str>) -> String {
    user.map(|u| format!(" of user `{u}`")).unwrap_or_default()
}

/// `CODE: message` of an error JSON body, or the body itself (shortened).
fn describe_body(body: &[u8]) -> String {
    if let Ok(env) = serde_json::from_slice::<oci_client::errors::OciEnvelope>(body) {
        return describe_envelope(&env);
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        "(empty body)".into()
    } else {
        text.chars().take(500).collect()
    }
}

fn describe_envelope(env: &oci_client::errors::OciEnvelope) -> String {
    if env.errors.is_empty() {
        return "(no error details)".into();
    }
    env.errors
        .iter()
        .map(|e| {
            let code = serde_json::to_value(&e.code)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("{:?}", e.code));
            format!("{code}: {}", e.message)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// The HTTP status that goes with the first error code (oci-client keeps the code, not the
/// status, of 4xx answers with an error body).
fn status_of(envelope: &oci_client::errors::OciEnvelope) -> &'static str {
    use oci_client::errors::OciErrorCode as C;
    match envelope.errors.first().map(|e| &e.code) {
        Some(C::BlobUnknown | C::ManifestUnknown | C::NameUnknown | C::NotFound) => "404 Not Found",
        Some(C::BlobUploadUnknown) => "404 Not Found",
        Some(C::Unauthorized) => "401 Unauthorized",
        Some(C::Denied) => "403 Forbidden",
        Some(C::Toomanyrequests) => "429 Too Many Requests",
        Some(C::Unsupported) => "405 Method Not Allowed",
        _ => "400 Bad Request",
    }
}

/// Whether a failed request is worth another attempt.
fn retryable(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::ServerError { code, .. } => *code >= 500 || *code == 429,
        // Without a status the request failed in transport: refused or reset connection,
        // timeout, a connection closed before the answer was complete.
        OciDistributionError::RequestError(r) => match r.status() {
            Some(s) => s.is_server_error() || s.as_u16() == 429,
            None => !r.is_builder() && !r.is_redirect(),
        },
        OciDistributionError::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|e| e.code == oci_client::errors::OciErrorCode::Toomanyrequests),
        _ => false,
    }
}

/// Turns an oci-client error into ours, quoting the registry.
fn map_error(host: &str, user: Option<&str>, e: OciDistributionError) -> Error {
    let registry = host.to_owned();
    match e {
        OciDistributionError::RegistryError { envelope, url } => {
            let unauthorized = envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::Unauthorized
                        | oci_client::errors::OciErrorCode::Denied
                )
            });
            let answer = format!("{} (for {url})", describe_envelope(&envelope));
            if unauthorized {
                Error::Unauthorized {
                    registry,
                    user: user_suffix(user),
                    answer,
                }
            } else {
                Error::Registry {
                    registry,
                    status: status_of(&envelope).into(),
                    answer,
                }
            }
        }
        OciDistributionError::ServerError { code, url, message } => {
            let status = reqwest::StatusCode::from_u16(code)
                .map(|s| s.to_string())
                .unwrap_or_else(|_| code.to_string());
            let answer = format!("{} (for {url})", describe_body(message.as_bytes()));
            if code == 401 || code == 403 {
                Error::Unauthorized {
                    registry,
                    user: user_suffix(user),
                    answer: format!("{status}: {answer}"),
                }
            } else {
                Error::Registry {
                    registry,
                    status,
                    answer,
                }
            }
        }
        OciDistributionError::UnauthorizedError { url } => Error::Unauthorized {
            registry,
            user: user_suffix(user),
            answer: format!("401 Unauthorized for {url}"),
        },
        OciDistributionError::AuthenticationFailure(reason) => Error::Unauthorized {
            registry,
            user: user_suffix(user),
            answer: format!("token service: {}", describe_body(reason.as_bytes())),
        },
        OciDistributionError::RequestError(r) => match r.status() {
            Some(s) if s.as_u16() == 401 || s.as_u16() == 403 => Error::Unauthorized {
                registry,
                user: user_suffix(user),
                answer: format!(
                    "{s} for {}",
                    r.url().map(|u| u.to_string()).unwrap_or_default()
                ),
            },
            Some(s) => Error::Registry {
                registry,
                status: s.to_string(),
                answer: format!("for {}", r.url().map(|u| u.to_string()).unwrap_or_default()),
            },
            None => Error::Unreachable {
                registry,
                message: error_chain(&r),
            },
        },
        OciDistributionError::DigestError(oci_client::errors::DigestError::VerificationError {
            expected,
            actual,
        }) => Error::DigestMismatch {
            registry,
            what: "content".into(),
            expected,
            actual,
        },
        other => Error::Registry {
            registry,
            status: "an unusable answer".into(),
            answer: error_chain(&other),
        },
    }
}

// Tag → digest as served, for pinning (a child module: it uses the client's private parts).
mod digest;
// Helm chart push (a child module for the same reason).
mod chart;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback() {
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(is_loopback("localhost:5000"));
        assert!(is_loopback("localhost"));
        assert!(is_loopback("[::1]:5000"));
        assert!(!is_loopback("quay.io"));
        assert!(!is_loopback("10.0.0.1:5000"));
    }

    #[test]
    fn body() {
        let b = br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#;
        assert_eq!(describe_body(b), "UNAUTHORIZED: authentication required");
        assert_eq!(describe_body(b""), "(empty body)");
    }
}

//! The registry client: push from an OCI layout, pull into one, resolve, inspect, list tags,
//! check credentials. Requests, auth, budgets, the deadline and retries are `http`'s; the
//! distribution API calls are `api`'s; what each command does with them is here.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

pub use oci_client::Reference;
use opship_core::image::layout::{self, Layout};
use opship_core::image::oci::{Descriptor, Digest, Manifest, media};
use reqwest::header::HeaderValue;

use crate::auth::Auth;
use crate::error::{Error, Result};

mod api;
mod artifact;
mod http;
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
    /// Idle timeout: the longest wait for an answer or for the next bytes of one.
    pub read_timeout: Duration,
    /// The longest the client works at all, counted from its creation: every request, every
    /// byte of every answer, retries and backoff included. `None`: no limit.
    pub deadline: Option<Duration>,
}

/// The default of [`Options::deadline`] (and of `--deadline`).
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);

impl Default for Options {
    fn default() -> Self {
        Options {
            insecure: false,
            chunked: false,
            attempts: 4,
            backoff: Duration::from_millis(250),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
            deadline: Some(DEFAULT_DEADLINE),
        }
    }
}

/// A client for one registry host.
pub struct Registry {
    http: http::Http,
    host: String,
    options: Options,
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
    /// A client for the registry of `reference`. The deadline starts now.
    pub fn new(reference: &Reference, auth: Auth, options: Options) -> Self {
        let host = reference.resolve_registry().to_owned();
        let plain_http = options.insecure || is_loopback(&host);
        let http = http::Http::new(
            host.clone(),
            auth,
            http::Settings {
                plain_http,
                connect_timeout: options.connect_timeout,
                idle: options.read_timeout,
                attempts: options.attempts,
                backoff: options.backoff,
                deadline: options.deadline,
            },
        );
        Registry {
            http,
            host,
            options,
        }
    }

    /// The registry host.
    pub fn host(&self) -> &str {
        &self.host
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
        let by_digest = target.clone_with_digest(image.descriptor.digest.to_string());
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
        // the registry has every blob too (it refuses manifests with missing blobs). A
        // missing tag or a refusal here just means: push (the push says why it fails).
        if let Some(tagged) = &tagged {
            match self.get_manifest(tagged, ACCEPT, true, true).await {
                Ok(Some(m)) if m.digest == image.descriptor.digest => {
                    tracing::info!("{}: {} is up to date", self.host, tagged.whole());
                    report.skipped = report.blobs;
                    return Ok(report);
                }
                Ok(_) => {}
                Err(e @ Error::Deadline { .. }) => return Err(e),
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
        let content_type = HeaderValue::from_str(&content_type)
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
        let digest = &desc.digest;
        if self.has_blob(r, digest, true).await? {
            tracing::info!("{}: blob {digest} exists, skipped", self.host);
            return Ok(BlobPush::Present);
        }
        let mut session = None;
        if let Some(from) = from
            && from.resolve_registry() == self.host
        {
            match self.mount_blob(r, from, digest).await {
                Ok(api::Mount::Mounted) => return Ok(BlobPush::Mounted),
                Ok(api::Mount::Session(url)) => {
                    tracing::info!("{}: mount of {digest} declined; uploading", self.host);
                    session = Some(url);
                }
                Err(e @ Error::Deadline { .. }) => return Err(e),
                Err(e) => tracing::info!("mount of {digest} failed ({e}); uploading"),
            }
        }
        let len = data.len() as u64;
        self.upload(r, digest, &data, self.options.chunked, session)
            .await?;
        Ok(BlobPush::Uploaded(len))
    }

    /// Fetches and verifies the manifest of `source`: bytes, digest, media type, parsed.
    async fn fetch_manifest(
        &self,
        source: &Reference,
    ) -> Result<(Vec<u8>, Digest, String, Manifest)> {
        let fetched = self
            .get_manifest(source, ACCEPT, false, false)
            .await?
            .ok_or_else(|| Error::Input(format!("{}: no manifest", source.whole())))?;
        let what = api::manifest_what(source);
        let value: serde_json::Value =
            serde_json::from_slice(&fetched.bytes).map_err(|e| Error::Registry {
                registry: self.host.clone(),
                status: "an unusable answer".into(),
                answer: format!(
                    "the {what} is not JSON ({e}): {}",
                    http::quote(&fetched.bytes)
                ),
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
        Ok((fetched.bytes, fetched.digest, media_type, manifest))
    }

    /// Fetches blob `desc` of `source` into the blob store of `layout`: streamed into a
    /// temporary file next to its final name, hashed as it arrives, renamed into place only
    /// when size and digest match. A blob the layout has already (verified) is not fetched.
    /// Returns whether it was fetched.
    async fn fetch_blob_into(
        &self,
        source: &Reference,
        desc: &Descriptor,
        layout: &Layout,
    ) -> Result<bool> {
        let path = layout.blob_path(&desc.digest);
        if layout.read_blob(desc).is_ok() {
            return Ok(false);
        }
        let dir = path.parent().unwrap_or(layout.dir()).to_path_buf();
        let prefix = format!(".{}.opship-", desc.digest.hex());
        let mut file = self
            .get_blob(
                source,
                desc,
                || {
                    let mut builder = tempfile::Builder::new();
                    builder.prefix(&prefix);
                    #[cfg(unix)]
                    {
                        use std::os::unix::fs::PermissionsExt;
                        builder.permissions(std::fs::Permissions::from_mode(0o644));
                    }
                    builder.tempfile_in(&dir).map_err(|e| Error::io(&dir, e))
                },
                |file, chunk| {
                    use std::io::Write;
                    file.write_all(chunk).map_err(|e| Error::io(file.path(), e))
                },
            )
            .await?;
        use std::io::Write;
        file.flush().map_err(|e| Error::io(file.path(), e))?;
        file.as_file()
            .sync_all()
            .map_err(|e| Error::io(file.path(), e))?;
        file.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        Ok(true)
    }

    /// Pulls `source` into the layout at `layout_dir` under `tag`: the manifest (within its
    /// budget, verified), then every blob streamed to disk and verified, `index.json`
    /// replaced atomically last. A failed pull leaves `index.json` as it was, no blob file
    /// with wrong content, and no layout directory that it created.
    pub async fn pull_to_layout(
        &self,
        source: &Reference,
        layout_dir: &Path,
        tag: &str,
    ) -> Result<PullReport> {
        layout::check_tag(tag)?;
        let (manifest_bytes, digest, media_type, manifest) = self.fetch_manifest(source).await?;
        let created = !layout_dir.exists();
        let layout = Layout::new(layout_dir);
        let result = self
            .pull_blobs(source, &layout, &manifest, &manifest_bytes, &digest)
            .await;
        let result = result.and_then(|()| {
            Ok(layout.tag(
                tag,
                Descriptor {
                    media_type: media_type.clone(),
                    digest: digest.clone(),
                    size: manifest_bytes.len() as u64,
                    annotations: BTreeMap::new(),
                },
            )?)
        });
        if let Err(e) = result {
            // Only a layout this pull made and nobody tagged anything in since.
            if created && !layout_dir.join("index.json").exists() {
                let _ = std::fs::remove_dir_all(layout_dir);
            }
            return Err(e);
        }
        let total = manifest_bytes.len() as u64
            + manifest.config.size
            + manifest.layers.iter().map(|l| l.size).sum::<u64>();
        Ok(PullReport {
            digest,
            media_type,
            blobs: 1 + manifest.layers.len(),
            bytes: total,
        })
    }

    async fn pull_blobs(
        &self,
        source: &Reference,
        layout: &Layout,
        manifest: &Manifest,
        manifest_bytes: &[u8],
        digest: &Digest,
    ) -> Result<()> {
        layout.init()?;
        let descs: Vec<&Descriptor> = std::iter::once(&manifest.config)
            .chain(manifest.layers.iter())
            .collect();
        futures_util::future::try_join_all(
            descs
                .iter()
                .map(|desc| self.fetch_blob_into(source, desc, layout)),
        )
        .await?;
        layout.write_blob(digest, manifest_bytes)?;
        Ok(())
    }

    /// The digest `reference` points to (HEAD of the manifest; a GET when the registry's
    /// answer has no digest or is not a 200, so an error quotes its body).
    pub async fn resolve(&self, reference: &Reference) -> Result<Digest> {
        let head = self.head_manifest(reference, ACCEPT, false).await?;
        if let Ok(Some(d)) = &head {
            let parsed = Digest::parse(d).map_err(|_| Error::Registry {
                registry: self.host.clone(),
                status: "an unusable answer".into(),
                answer: format!(
                    "the digest `{d}` of {} is not sha256",
                    api::manifest_what(reference)
                ),
            })?;
            if let Some(want) = reference.digest()
                && want != parsed.as_str()
            {
                return Err(Error::DigestMismatch {
                    registry: self.host.clone(),
                    what: api::manifest_what(reference),
                    expected: want.to_owned(),
                    actual: parsed.to_string(),
                });
            }
            return Ok(parsed);
        }
        let fetched = self
            .get_manifest(reference, ACCEPT, false, false)
            .await?
            .ok_or_else(|| Error::Input(format!("{}: no manifest", reference.whole())))?;
        Ok(fetched.digest)
    }

    /// Manifest, config and labels of `reference`, all verified.
    pub async fn inspect(&self, reference: &Reference) -> Result<Inspection> {
        let (manifest_bytes, digest, media_type, manifest) = self.fetch_manifest(reference).await?;
        let config_bytes = self.blob_bytes(reference, &manifest.config).await?;
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
        self.get_tags(reference).await
    }

    /// Checks the credentials against the registry: `GET /v2/` with them (through the token
    /// service when the registry asks for a bearer token).
    pub async fn check_login(&self) -> Result<()> {
        self.ping(http::scope("opship/login-check", false)).await
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
}

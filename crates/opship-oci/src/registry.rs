//! The registry client: push from an OCI layout, pull into one, resolve, inspect, list tags,
//! check credentials. Requests, auth, budgets, the deadline and retries are `http`'s; the
//! distribution API calls are `api`'s; what each command does with them is here.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use futures_util::{StreamExt as _, TryStreamExt as _};
pub use oci_client::Reference;
use opship_core::image::layout::{self, Layout};
use opship_core::image::oci::{
    self, Descriptor, Digest, ImageIndex, IndexEntry, ManifestKind, media,
};
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
    /// Blobs of the image or of all its platforms (configs and layers, each digest once).
    pub blobs: usize,
    /// Manifests stored: 1 for an image; for an index the index and every manifest it lists.
    pub manifests: usize,
    /// The platforms of an index (`linux/amd64`, …, in index order); empty for an image.
    pub platforms: Vec<String>,
    /// Bytes of the blobs and manifests.
    pub bytes: u64,
}

/// A remote image's manifest and config, or an image index's manifest and entries.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// Digest of the manifest (of the index for a multi-platform image).
    pub digest: Digest,
    /// Media type of the manifest.
    pub media_type: String,
    /// The manifest.
    pub manifest: serde_json::Value,
    /// The config blob (`null` for an index).
    pub config: serde_json::Value,
    /// The config's labels (none for an index).
    pub labels: BTreeMap<String, String>,
    /// For an index or manifest list: its entries with their platforms (empty for an image).
    pub manifests: Vec<IndexEntry>,
}

impl Inspection {
    /// Whether this is an image index or Docker manifest list.
    pub fn is_index(&self) -> bool {
        oci::is_index_type(&self.media_type)
    }
}

/// A manifest fetched from a registry: bytes, digest (checked), media type, parsed.
#[derive(Debug, Clone)]
struct Remote {
    bytes: Vec<u8>,
    digest: Digest,
    media_type: String,
    kind: ManifestKind,
}

/// Parses an image reference (`host[:port]/repo[:tag][@digest]`).
pub fn parse_reference(s: &str) -> Result<Reference> {
    if let Some(r) = parse_plain(s) {
        return Ok(r);
    }
    s.parse::<Reference>()
        .map_err(|e| Error::Input(format!("`{s}` is not an image reference: {e}")))
}

/// The common case without oci-spec's regex, whose Unicode `\w{0,127}` takes ~200M
/// instructions to compile (most of a command's CPU): `HOST[:PORT]/PATH[:TAG][@sha256:HEX]`
/// with an explicit registry other than Docker Hub and ASCII only. Accepts a subset of what
/// the regex accepts and gives the same `Reference` (unit-tested against it); anything else
/// (`None`) goes to the regex.
fn parse_plain(s: &str) -> Option<Reference> {
    let (rest, digest) = match s.split_once('@') {
        Some((r, d)) => {
            let hex = d.strip_prefix("sha256:")?;
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            (r, Some(d))
        }
        None => (s, None),
    };
    let (host, path_tag) = rest.split_once('/')?;
    let (path, tag) = match path_tag.rsplit_once(':') {
        Some((p, t)) if !t.contains('/') => (p, Some(t)),
        _ => (path_tag, None),
    };
    let host_name = match host.split_once(':') {
        Some((h, port)) => {
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            h
        }
        None => host,
    };
    if !(host.contains('.') || host.contains(':') || host == "localhost")
        || host_name == "docker.io"
        || host_name == "index.docker.io"
        || !host_name.split('.').all(|c| {
            !c.is_empty()
                && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !c.starts_with('-')
                && !c.ends_with('-')
        })
        || path.is_empty()
        || path.len() > 255
        || !path
            .split('/')
            .all(opship_core::naming::repository_path_component)
    {
        return None;
    }
    if let Some(t) = tag {
        let first_ok = t
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !first_ok
            || t.len() > 128
            || !t
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        {
            return None;
        }
    }
    let (registry, repository) = (host.to_owned(), path.to_owned());
    Some(match (tag, digest) {
        (Some(t), Some(d)) => {
            Reference::with_tag_and_digest(registry, repository, t.to_owned(), d.to_owned())
        }
        (None, Some(d)) => Reference::with_digest(registry, repository, d.to_owned()),
        (Some(t), None) => Reference::with_tag(registry, repository, t.to_owned()),
        (None, None) => Reference::with_tag(registry, repository, "latest".to_owned()),
    })
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

/// The `Accept` of every manifest request that resolves a reference: image indexes and Docker
/// manifest lists as well as both image manifest types. Without the index types a registry
/// picks a platform for a manifest list (distribution: linux/amd64) and answers 404 for an
/// OCI index, so a tag would resolve to different digests in different commands.
pub(crate) const ACCEPT_ANY: &[&str] = &[
    media::OCI_INDEX,
    media::DOCKER_LIST,
    media::OCI_MANIFEST,
    media::DOCKER_MANIFEST,
];

/// Blobs fetched or pushed at the same time for one pull or push of an index.
const BLOB_JOBS: usize = 8;

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

    /// Pushes what `tag` names in the layout at `layout_dir` to `target`. An image: the blobs
    /// the registry lacks (HEAD first; mounted from `from` when given), the manifest by
    /// digest, then the tag of `target` (if it has one), the blobs at the same time. An image
    /// index or Docker manifest list: the blobs of every image it lists (each digest once),
    /// every listed manifest by digest (children before the index that lists them), the
    /// index by digest, then the tag. When the tag already holds this manifest, nothing else
    /// is sent.
    pub async fn push_from_layout(
        &self,
        layout_dir: &Path,
        tag: &str,
        target: &Reference,
        from: Option<&Reference>,
    ) -> Result<PushReport> {
        let layout = Layout::new(layout_dir);
        let desc = layout.tagged(tag)?;
        if let Some(d) = target.digest()
            && d != desc.digest.as_str()
        {
            return Err(Error::Input(format!(
                "{}: the image `{tag}` is {}, not {d}",
                opship_core::paths::show(layout_dir),
                desc.digest
            )));
        }
        let tagged = target.tag().map(|t| {
            Reference::with_tag(
                target.registry().to_owned(),
                target.repository().to_owned(),
                t.to_owned(),
            )
        });
        if oci::is_index_type(&desc.media_type) {
            return self
                .push_index_from_layout(&layout, &desc, target, tagged.as_ref(), from)
                .await;
        }
        let image = layout.read_image(tag)?;
        let by_digest = target.clone_with_digest(image.descriptor.digest.to_string());
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
        if let Some(tagged) = &tagged
            && self.tag_holds(tagged, &report.digest).await?
        {
            report.skipped = report.blobs;
            return Ok(report);
        }
        // The blobs of one image go up at the same time; the manifest waits for all of them.
        let outcomes = futures_util::future::try_join_all(
            blobs
                .into_iter()
                .map(|(desc, data)| self.push_blob(&by_digest, from, desc, data)),
        )
        .await?;
        report.count(outcomes);
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

    /// Whether the tag `tagged` holds the manifest `digest` already. A re-push costs this one
    /// request: the registry has every blob and child manifest of what a tag holds (it
    /// refuses manifests whose blobs or children are missing). A missing tag or a refusal
    /// here just means: push (the push says why it fails).
    async fn tag_holds(&self, tagged: &Reference, digest: &Digest) -> Result<bool> {
        match self.get_manifest(tagged, ACCEPT_ANY, true, true).await {
            Ok(Some(m)) if m.digest == *digest => {
                tracing::info!("{}: {} is up to date", self.host, tagged.whole());
                Ok(true)
            }
            Ok(_) => Ok(false),
            Err(e @ Error::Deadline { .. }) => Err(e),
            Err(e) => {
                tracing::debug!("{}: {}: {e}", self.host, tagged.whole());
                Ok(false)
            }
        }
    }

    /// The index `desc` of `layout` and everything it lists, in the order the registry
    /// accepts them: blobs, image manifests, nested indexes, the index, the tag.
    async fn push_index_from_layout(
        &self,
        layout: &Layout,
        desc: &Descriptor,
        target: &Reference,
        tagged: Option<&Reference>,
        from: Option<&Reference>,
    ) -> Result<PushReport> {
        // Every manifest is read and verified before anything is sent.
        let nodes = layout.manifest_tree(desc)?;
        let blobs = image_blobs(nodes.iter().map(|n| &n.kind));
        let mut report = PushReport {
            digest: desc.digest.clone(),
            blobs: blobs.len(),
            skipped: 0,
            mounted: 0,
            uploaded_bytes: 0,
        };
        if let Some(tagged) = tagged
            && self.tag_holds(tagged, &desc.digest).await?
        {
            report.skipped = report.blobs;
            return Ok(report);
        }
        let by_digest = |d: &Digest| target.clone_with_digest(d.to_string());
        let repo = by_digest(&desc.digest);
        // A few blobs at a time, each read (and verified) from the layout just before it goes
        // up, so memory holds at most BLOB_JOBS blobs whatever the number of platforms.
        let outcomes: Vec<BlobPush> = futures_util::stream::iter(blobs.values())
            .map(|d| {
                let repo = &repo;
                async move {
                    let data = layout.read_blob(d)?;
                    self.push_blob(repo, from, d, bytes::Bytes::from(data))
                        .await
                }
            })
            .buffer_unordered(BLOB_JOBS)
            .try_collect()
            .await?;
        report.count(outcomes);
        // Children before the index that lists them: the registry checks they exist.
        for node in &nodes {
            let body = bytes::Bytes::from(node.bytes.clone());
            self.put_manifest(
                &by_digest(&node.descriptor.digest),
                &body,
                &content_type(&node.media_type)?,
            )
            .await?;
        }
        if let (Some(tagged), Some(top)) = (tagged, nodes.last()) {
            let body = bytes::Bytes::from(top.bytes.clone());
            self.put_manifest(tagged, &body, &content_type(&top.media_type)?)
                .await?;
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

    /// Fetches and verifies the manifest of `source` (an image manifest or an image index /
    /// Docker manifest list): bytes within the budget, digest, media type, parsed.
    async fn fetch_manifest(&self, source: &Reference) -> Result<Remote> {
        let fetched = self
            .get_manifest(source, ACCEPT_ANY, false, false)
            .await?
            .ok_or_else(|| Error::Input(format!("{}: no manifest", source.whole())))?;
        self.parse_remote(source, fetched.bytes, fetched.digest, None)
    }

    /// Parses fetched manifest bytes; `claimed` is the media type the listing index gives.
    fn parse_remote(
        &self,
        source: &Reference,
        bytes: Vec<u8>,
        digest: Digest,
        claimed: Option<&str>,
    ) -> Result<Remote> {
        let what = api::manifest_what(source);
        if let Err(e) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            return Err(Error::Registry {
                registry: self.host.clone(),
                status: "an unusable answer".into(),
                answer: format!("the {what} is not JSON ({e}): {}", http::quote(&bytes)),
            });
        }
        let (media_type, kind) = oci::parse_manifest(&bytes, claimed, &source.whole())?;
        Ok(Remote {
            bytes,
            digest,
            media_type,
            kind,
        })
    }

    /// The manifest an index entry names, fetched by digest from the repository of `source`
    /// and checked against the entry (digest, size, media type).
    async fn fetch_child(&self, source: &Reference, entry: &IndexEntry) -> Result<Remote> {
        let d = &entry.descriptor;
        let r = source.clone_with_digest(d.digest.to_string());
        if !oci::is_index_type(&d.media_type) && !oci::is_image_type(&d.media_type) {
            return Err(Error::Input(format!(
                "{}: the index lists {} as a `{}`; opship pulls image manifests and indexes only",
                source.whole(),
                d.digest,
                d.media_type
            )));
        }
        let fetched = self
            .get_manifest(&r, ACCEPT_ANY, false, false)
            .await?
            .ok_or_else(|| Error::Input(format!("{}: no manifest", r.whole())))?;
        if fetched.bytes.len() as u64 != d.size {
            return Err(Error::DigestMismatch {
                registry: self.host.clone(),
                what: api::manifest_what(&r),
                expected: format!("{} ({} bytes, as the index lists it)", d.digest, d.size),
                actual: format!("{} ({} bytes)", fetched.digest, fetched.bytes.len()),
            });
        }
        self.parse_remote(&r, fetched.bytes, fetched.digest, Some(&d.media_type))
    }

    /// `top` and, for an index, every manifest it lists (recursively, each digest once,
    /// fetched a few at a time): deeper levels first, `top` last.
    async fn fetch_tree(&self, source: &Reference, top: Remote) -> Result<Vec<Remote>> {
        let mut seen = std::collections::BTreeSet::from([top.digest.clone()]);
        let mut levels = vec![vec![top]];
        loop {
            let entries: Vec<&IndexEntry> = levels
                .last()
                .into_iter()
                .flatten()
                .filter_map(|n| match &n.kind {
                    ManifestKind::Index(ix) => Some(ix.manifests.iter()),
                    ManifestKind::Image(_) => None,
                })
                .flatten()
                .filter(|e| seen.insert(e.descriptor.digest.clone()))
                .collect();
            if entries.is_empty() {
                break;
            }
            if levels.len() > layout::MAX_INDEX_DEPTH {
                return Err(Error::Input(format!(
                    "{}: image indexes nest deeper than {} levels",
                    source.whole(),
                    layout::MAX_INDEX_DEPTH
                )));
            }
            let next: Vec<Remote> = futures_util::stream::iter(entries)
                .map(|e| self.fetch_child(source, e))
                .buffered(BLOB_JOBS)
                .try_collect()
                .await?;
            levels.push(next);
        }
        Ok(levels.into_iter().rev().flatten().collect())
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
                    opship_core::fsutil::temp_file_in(&dir, &prefix, Some(0o644))
                        .map_err(|e| Error::io(&dir, e))
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
        file.persist(&path).map_err(|e| Error::io(&path, e))?;
        Ok(true)
    }

    /// Pulls `source` into the layout at `layout_dir` under `tag`: the manifest (within its
    /// budget, verified); for an image index or Docker manifest list every manifest it lists
    /// too (by digest, each checked against its entry), whole: every platform; then every
    /// blob streamed to disk and verified, the manifests written (children first), and
    /// `index.json` replaced atomically last. A failed pull leaves `index.json` as it was, no
    /// blob file with wrong content, and no layout directory that it created.
    pub async fn pull_to_layout(
        &self,
        source: &Reference,
        layout_dir: &Path,
        tag: &str,
    ) -> Result<PullReport> {
        layout::check_tag(tag)?;
        let top = self.fetch_manifest(source).await?;
        let created = !layout_dir.exists();
        let layout = Layout::new(layout_dir);
        let result = self.pull_tree(source, &layout, top).await;
        let result = result.and_then(|(report, desc)| {
            layout.tag(tag, desc)?;
            Ok(report)
        });
        if result.is_err() {
            // Only a layout this pull made and nobody tagged anything in since.
            if created && !layout_dir.join("index.json").exists() {
                let _ = std::fs::remove_dir_all(layout_dir);
            }
        }
        result
    }

    /// Everything but the tag of a pull; the report and the descriptor to tag.
    async fn pull_tree(
        &self,
        source: &Reference,
        layout: &Layout,
        top: Remote,
    ) -> Result<(PullReport, Descriptor)> {
        let descriptor = Descriptor {
            media_type: top.media_type.clone(),
            digest: top.digest.clone(),
            size: top.bytes.len() as u64,
            annotations: BTreeMap::new(),
        };
        let platforms = match &top.kind {
            ManifestKind::Index(ix) => platforms(ix),
            ManifestKind::Image(_) => Vec::new(),
        };
        let nodes = self.fetch_tree(source, top).await?;
        layout.init()?;
        let blobs = image_blobs(nodes.iter().map(|n| &n.kind));
        futures_util::stream::iter(blobs.values())
            .map(|d| self.fetch_blob_into(source, d, layout))
            .buffer_unordered(BLOB_JOBS)
            .try_collect::<Vec<bool>>()
            .await?;
        for n in &nodes {
            layout.write_blob(&n.digest, &n.bytes)?;
        }
        let bytes = nodes.iter().map(|n| n.bytes.len() as u64).sum::<u64>()
            + blobs.values().map(|d| d.size).sum::<u64>();
        Ok((
            PullReport {
                digest: descriptor.digest.clone(),
                media_type: descriptor.media_type.clone(),
                blobs: blobs.len(),
                manifests: nodes.len(),
                platforms,
                bytes,
            },
            descriptor,
        ))
    }

    /// [`Registry::resolve`], refusing an answer other than the digest `reference` pins;
    /// `shown` is the reference as the user wrote it.
    pub async fn resolve_pinned(&self, reference: &Reference, shown: &str) -> Result<Digest> {
        let digest = self.resolve(reference).await?;
        match reference.digest() {
            Some(d) if d != digest.as_str() => Err(Error::Input(format!(
                "{shown}: the registry answers {digest} for that digest"
            ))),
            _ => Ok(digest),
        }
    }

    /// The digest `reference` points to (HEAD of the manifest; a GET when the registry's
    /// answer has no digest or is not a 200, so an error quotes its body).
    pub async fn resolve(&self, reference: &Reference) -> Result<Digest> {
        let head = self.head_manifest(reference, ACCEPT_ANY, false).await?;
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
            .get_manifest(reference, ACCEPT_ANY, false, false)
            .await?
            .ok_or_else(|| Error::Input(format!("{}: no manifest", reference.whole())))?;
        Ok(fetched.digest)
    }

    /// Manifest, config and labels of the image `reference`, all verified; for an image index
    /// or Docker manifest list its manifest and entries (with their platforms).
    pub async fn inspect(&self, reference: &Reference) -> Result<Inspection> {
        let remote = self.fetch_manifest(reference).await?;
        let manifest: serde_json::Value = serde_json::from_slice(&remote.bytes)
            .map_err(|e| Error::Input(format!("manifest: {e}")))?;
        let image = match remote.kind {
            ManifestKind::Index(ix) => {
                return Ok(Inspection {
                    digest: remote.digest,
                    media_type: remote.media_type,
                    manifest,
                    config: serde_json::Value::Null,
                    labels: BTreeMap::new(),
                    manifests: ix.manifests,
                });
            }
            ManifestKind::Image(m) => m,
        };
        let config_bytes = self.blob_bytes(reference, &image.config).await?;
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
        Ok(Inspection {
            digest: remote.digest,
            media_type: remote.media_type,
            manifest,
            config,
            labels,
            manifests: Vec::new(),
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

impl PushReport {
    fn count(&mut self, outcomes: Vec<BlobPush>) {
        for outcome in outcomes {
            match outcome {
                BlobPush::Present => self.skipped += 1,
                BlobPush::Mounted => self.mounted += 1,
                BlobPush::Uploaded(n) => self.uploaded_bytes += n,
            }
        }
    }
}

/// The config and layer descriptors of the image manifests among `kinds`, each digest once.
fn image_blobs<'a>(kinds: impl Iterator<Item = &'a ManifestKind>) -> BTreeMap<Digest, Descriptor> {
    let mut blobs = BTreeMap::new();
    for kind in kinds {
        if let ManifestKind::Image(m) = kind {
            for d in std::iter::once(&m.config).chain(&m.layers) {
                blobs.entry(d.digest.clone()).or_insert_with(|| d.clone());
            }
        }
    }
    blobs
}

/// `os/arch[/variant]` of each entry of an index (`unknown` without a platform).
fn platforms(index: &ImageIndex) -> Vec<String> {
    index
        .manifests
        .iter()
        .map(|e| {
            e.platform
                .as_ref()
                .map_or_else(|| "unknown".to_owned(), ToString::to_string)
        })
        .collect()
}

/// The `Content-Type` of a manifest PUT.
fn content_type(media_type: &str) -> Result<HeaderValue> {
    HeaderValue::from_str(media_type)
        .map_err(|_| Error::Input(format!("bad manifest media type `{media_type}`")))
}

// Tag → digest as served, for pinning (a child module: it uses the client's private parts).
mod digest;
// Helm chart push (a child module for the same reason).
mod chart;

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path accepts only what oci-spec's regex accepts, and gives the same value.
    #[test]
    fn plain_references_parse_as_the_regex_parses_them() {
        let hex = "a".repeat(64);
        let mut fast = 0;
        let hosts = [
            "quay.io",
            "127.0.0.1:5000",
            "localhost",
            "localhost:5000",
            "docker.io",
            "index.docker.io",
            "Reg.Example.com",
            "-bad.io",
            "a..b",
            "host:",
            "host:x",
            "ns",
            "[::1]:5000",
            "ghcr.io:443",
        ];
        let paths = [
            "a",
            "ns/op-bundle",
            "a.b/c__d/e---f",
            "A",
            "a_",
            "a..b",
            "a___b",
            "a/",
            "/a",
            "a-.b",
            "x.y_z",
            "é",
            "",
            "op/sub/deep/more",
        ];
        let tags = [
            "",
            ":v1.2.3",
            ":latest",
            ":_x",
            ":.x",
            ":-x",
            ":a+b",
            ":é",
            ":",
            ":v1_2-3.4",
        ];
        let digests = [
            String::new(),
            format!("@sha256:{hex}"),
            format!("@sha256:{}", "A".repeat(64)),
            "@sha256:abc".to_owned(),
            format!("@sha512:{hex}{hex}"),
            "@".to_owned(),
        ];
        for h in hosts {
            for p in paths {
                for t in tags {
                    for d in &digests {
                        let s = format!("{h}/{p}{t}{d}");
                        if let Some(r) = parse_plain(&s) {
                            fast += 1;
                            assert_eq!(Ok(r), s.parse::<Reference>(), "{s}");
                        }
                    }
                }
            }
        }
        let long = format!("quay.io/{}:{}", "a".repeat(256), "t".repeat(129));
        assert!(parse_plain(&long).is_none());
        assert!(parse_plain("quay.io/ns/op:v1").is_some());
        assert!(fast > 400, "{fast}");
    }

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

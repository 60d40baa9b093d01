//! OCI / Docker v2 schema 2 objects: media types, digests, descriptors, the image manifest and
//! the image config, serialised as compact JSON in a fixed key order (struct field order;
//! maps sorted by key), so the same image is the same bytes everywhere.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::error::{Error, Result};

/// Media types.
pub mod media {
    /// OCI image manifest.
    pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
    /// OCI image index.
    pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
    /// OCI image config.
    pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
    /// OCI gzip layer.
    pub const OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
    /// Docker v2 schema 2 manifest.
    pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
    /// Docker manifest list.
    pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
    /// Docker image config.
    pub const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
    /// Docker gzip layer.
    pub const DOCKER_LAYER_GZIP: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";
}

/// Annotation keys.
pub mod annotation {
    /// The tag of a manifest in an OCI layout's `index.json`.
    pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
    /// Creation time of the image.
    pub const CREATED: &str = "org.opencontainers.image.created";
}

/// Manifest flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// OCI image-spec media types (the default; keeps manifest annotations).
    #[default]
    Oci,
    /// Docker v2 schema 2 media types (no manifest annotations).
    Docker,
}

impl Format {
    /// Media type of the manifest.
    pub fn manifest_type(self) -> &'static str {
        match self {
            Format::Oci => media::OCI_MANIFEST,
            Format::Docker => media::DOCKER_MANIFEST,
        }
    }
    /// Media type of the config.
    pub fn config_type(self) -> &'static str {
        match self {
            Format::Oci => media::OCI_CONFIG,
            Format::Docker => media::DOCKER_CONFIG,
        }
    }
    /// Media type of a gzip layer.
    pub fn layer_type(self) -> &'static str {
        match self {
            Format::Oci => media::OCI_LAYER_GZIP,
            Format::Docker => media::DOCKER_LAYER_GZIP,
        }
    }
}

/// A `sha256:<hex>` digest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Digest(String);

impl Digest {
    /// sha256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let h = Sha256::digest(bytes);
        let mut s = String::with_capacity(71);
        s.push_str("sha256:");
        for b in h.iter() {
            s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
            s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
        }
        Digest(s)
    }

    /// Parses `sha256:<64 lowercase hex>`; other algorithms are refused.
    pub fn parse(s: &str) -> Result<Self> {
        let ok = s.strip_prefix("sha256:").is_some_and(|h| {
            h.len() == 64
                && h.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if ok {
            Ok(Digest(s.to_owned()))
        } else {
            Err(Error::Input(format!(
                "`{s}` is not a sha256 digest (sha256:<64 lowercase hex digits>)"
            )))
        }
    }

    /// The hex part.
    pub fn hex(&self) -> &str {
        &self.0[7..]
    }

    /// The whole digest string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Digest {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        Digest::parse(&s)
    }
}

impl From<Digest> for String {
    fn from(d: Digest) -> String {
        d.0
    }
}

/// A content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Media type of the referenced content.
    pub media_type: String,
    /// Its digest.
    pub digest: Digest,
    /// Its size in bytes.
    pub size: u64,
    /// Optional annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Descriptor {
    /// Descriptor of `bytes`.
    pub fn of(media_type: &str, bytes: &[u8]) -> Self {
        Descriptor {
            media_type: media_type.to_owned(),
            digest: Digest::of(bytes),
            size: bytes.len() as u64,
            annotations: BTreeMap::new(),
        }
    }
}

/// An image manifest (OCI or Docker v2 schema 2; same shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// The manifest's own media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layer blobs.
    pub layers: Vec<Descriptor>,
    /// Annotations (OCI only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An image index (`index.json` of a layout).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    /// Always 2.
    pub schema_version: u32,
    /// The index's media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The manifests.
    pub manifests: Vec<Descriptor>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// The platform of an image index entry (image-spec `image-index.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// CPU architecture (`amd64`, `arm64`).
    pub architecture: String,
    /// Operating system (`linux`).
    pub os: String,
    /// Operating system version (Windows).
    #[serde(
        rename = "os.version",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub os_version: Option<String>,
    /// CPU variant (`v8` of arm64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

/// One entry of an image index (or Docker manifest list): a descriptor and its platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// The manifest it points to.
    #[serde(flatten)]
    pub descriptor: Descriptor,
    /// The platform it runs on (absent for artifacts and in layouts' `index.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
}

/// An image index or Docker manifest list as read from a registry or a layout blob: its
/// entries keep their platforms (the bytes, not this value, are what gets stored and pushed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageIndex {
    /// Always 2.
    pub schema_version: u32,
    /// The index's media type (OCI index or Docker manifest list; optional in OCI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The manifests, one per platform (and attestations).
    pub manifests: Vec<IndexEntry>,
}

/// What a manifest's bytes are: an image manifest or an image index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestKind {
    /// OCI image manifest or Docker v2 schema 2 manifest.
    Image(Manifest),
    /// OCI image index or Docker manifest list.
    Index(ImageIndex),
}

/// Whether `media_type` is one of the image index types (OCI index, Docker manifest list).
pub fn is_index_type(media_type: &str) -> bool {
    media_type == media::OCI_INDEX || media_type == media::DOCKER_LIST
}

/// Whether `media_type` is one of the image manifest types (OCI, Docker v2 schema 2).
pub fn is_image_type(media_type: &str) -> bool {
    media_type == media::OCI_MANIFEST || media_type == media::DOCKER_MANIFEST
}

/// Parses manifest bytes as an image manifest or an image index: the media type is the
/// manifest's own `mediaType`, else `claimed` (the descriptor's or the registry's), else its
/// shape (`manifests` makes an OCI index). Returns the media type and the parsed value;
/// `what` names the manifest in errors. Any other media type is refused.
pub fn parse_manifest(
    bytes: &[u8],
    claimed: Option<&str>,
    what: &str,
) -> Result<(String, ManifestKind)> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::Input(format!("{what} is not JSON: {e}")))?;
    let own = value.get("mediaType").and_then(|v| v.as_str());
    let media_type = match (own, claimed) {
        (Some(m), _) => m.to_owned(),
        (None, Some(c)) if !c.is_empty() => c.to_owned(),
        _ if value.get("manifests").is_some() => media::OCI_INDEX.to_owned(),
        _ => media::OCI_MANIFEST.to_owned(),
    };
    if let (Some(own), Some(c)) = (own, claimed)
        && !c.is_empty()
        && own != c
    {
        return Err(Error::Input(format!(
            "{what} says it is a {own}, but its descriptor says {c}"
        )));
    }
    let kind = if is_index_type(&media_type) {
        ManifestKind::Index(
            serde_json::from_value(value)
                .map_err(|e| Error::Input(format!("{what} is not an image index: {e}")))?,
        )
    } else if is_image_type(&media_type) {
        ManifestKind::Image(
            serde_json::from_value(value)
                .map_err(|e| Error::Input(format!("{what} is not an image manifest: {e}")))?,
        )
    } else {
        return Err(Error::Input(format!(
            "{what} is a {media_type}, not an OCI or Docker v2 image manifest or index"
        )));
    };
    Ok((media_type, kind))
}

/// The image config, with the fields a data-only image uses, in alphabetical key order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageConfig {
    /// CPU architecture (`amd64`).
    pub architecture: String,
    /// Runtime configuration: only the labels.
    pub config: RunConfig,
    /// Creation time, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// How the layers were made.
    #[serde(default)]
    pub history: Vec<History>,
    /// Operating system (`linux`).
    pub os: String,
    /// The layers' diff IDs.
    pub rootfs: RootFs,
}

/// `config` of the image config.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RunConfig {
    /// Image labels (sorted by key).
    #[serde(rename = "Labels", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// One `history` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// When.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// By what.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
}

/// `rootfs` of the image config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootFs {
    /// Always `layers`.
    #[serde(rename = "type")]
    pub kind: String,
    /// sha256 of each uncompressed layer.
    pub diff_ids: Vec<Digest>,
}

/// Compact JSON of a value (struct fields in declaration order, maps sorted).
pub fn to_json<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::Internal(format!("JSON: {e}")))
}

/// RFC 3339 UTC time of a Unix timestamp, e.g. `1970-01-01T00:00:00Z` (the same formatting
/// as the CSV's `createdAt`).
pub fn rfc3339(epoch: u64) -> String {
    crate::bundle::rfc3339_from_epoch(i64::try_from(epoch).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn digests() {
        let d = Digest::of(b"{}");
        assert_eq!(
            d.as_str(),
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert!(Digest::parse("sha256:abc").is_err());
        assert!(Digest::parse("sha512:00").is_err());
        assert_eq!(Digest::parse(d.as_str()).unwrap(), d);
    }
}

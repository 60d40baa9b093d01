//! Raw artifact operations the signing code needs beyond image push/pull: a manifest by tag
//! that may not exist, verified blobs, blob upload (HEAD first), manifest PUT of given bytes,
//! and whether the registry serves the OCI 1.1 referrers API. A child module of `registry` so
//! it reuses the client's retry, auth and error mapping without widening their visibility.

use opship_core::image::oci::{Descriptor, Digest, media};

use super::{Reference, Registry};
use crate::error::{Error, Result};

/// A manifest as the registry stored it, its digest checked.
#[derive(Debug, Clone)]
pub struct RawManifest {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// sha256 of the bytes (checked against the registry's `Docker-Content-Digest`).
    pub digest: Digest,
    /// `mediaType` of the manifest JSON (empty when absent).
    pub media_type: String,
}

const ACCEPT_ANY: &[&str] = &[
    media::OCI_MANIFEST,
    media::DOCKER_MANIFEST,
    media::OCI_INDEX,
    media::DOCKER_LIST,
];

impl Registry {
    /// The manifest `reference` names, or `None` when the registry does not have it (404).
    pub async fn manifest_if_any(&self, reference: &Reference) -> Result<Option<RawManifest>> {
        let Some(fetched) = self
            .get_manifest(reference, ACCEPT_ANY, false, true)
            .await?
        else {
            return Ok(None);
        };
        let media_type = serde_json::from_slice::<serde_json::Value>(&fetched.bytes)
            .ok()
            .and_then(|v| v.get("mediaType")?.as_str().map(str::to_owned))
            .unwrap_or_default();
        Ok(Some(RawManifest {
            bytes: fetched.bytes,
            digest: fetched.digest,
            media_type,
        }))
    }

    /// A blob of the repository of `reference`, its size and digest checked; blobs larger
    /// than 16 MiB are refused (they are never read into memory).
    pub async fn blob(&self, reference: &Reference, desc: &Descriptor) -> Result<Vec<u8>> {
        self.blob_bytes(reference, desc).await
    }

    /// Uploads `bytes` as a blob of the repository of `reference` unless it is there already;
    /// returns its digest.
    pub async fn upload_blob(&self, reference: &Reference, bytes: &[u8]) -> Result<Digest> {
        let digest = Digest::of(bytes);
        if self.has_blob(reference, &digest, true).await? {
            return Ok(digest);
        }
        let data = bytes::Bytes::copy_from_slice(bytes);
        self.upload(reference, &digest, &data, self.options.chunked, None)
            .await?;
        Ok(digest)
    }

    /// PUTs manifest `bytes` of `media_type` to `reference` (a tag or the bytes' digest);
    /// returns the digest.
    pub async fn put_manifest_bytes(
        &self,
        reference: &Reference,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<Digest> {
        let content_type = reqwest::header::HeaderValue::from_str(media_type)
            .map_err(|_| Error::Input(format!("bad manifest media type `{media_type}`")))?;
        let body = bytes::Bytes::copy_from_slice(bytes);
        self.put_manifest(reference, &body, &content_type).await?;
        Ok(Digest::of(bytes))
    }

    /// The image index `GET /v2/<repo>/referrers/<digest>` answers (OCI 1.1 referrers API),
    /// or `None` when the registry has no such API (any other answer, e.g. distribution
    /// 2.8.2's 404): clients then keep the `sha256-<hex>` fallback tag up to date.
    pub async fn referrers_index(
        &self,
        reference: &Reference,
        digest: &Digest,
    ) -> Result<Option<Vec<u8>>> {
        self.get_referrers(reference, digest).await
    }
}

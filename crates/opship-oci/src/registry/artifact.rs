//! Raw artifact operations the signing code needs beyond image push/pull: a manifest by tag
//! that may not exist, verified blobs, blob upload (HEAD first), manifest PUT of given bytes,
//! and whether the registry serves the OCI 1.1 referrers API. A child module of `registry` so
//! it reuses the client's retry, auth and error mapping without widening their visibility.

use oci_client::errors::OciDistributionError;
use opship_core::image::oci::{Descriptor, Digest, media};

use super::{Reference, Registry};
use crate::auth::Auth;
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

fn not_found(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::ServerError { code, .. } => *code == 404,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            use oci_client::errors::OciErrorCode as C;
            matches!(e.code, C::ManifestUnknown | C::NotFound | C::NameUnknown)
        }),
        _ => false,
    }
}

impl Registry {
    /// The manifest `reference` names, or `None` when the registry does not have it (404).
    pub async fn manifest_if_any(&self, reference: &Reference) -> Result<Option<RawManifest>> {
        self.store_auth().await;
        let auth = self.auth.to_oci();
        let auth = &auth;
        let found = self
            .retry(move || async move {
                match self
                    .client
                    .pull_manifest_raw(reference, auth, ACCEPT_ANY)
                    .await
                {
                    Ok(v) => Ok(Some(v)),
                    Err(e) if not_found(&e) => Ok(None),
                    Err(e) => Err(e),
                }
            })
            .await?;
        let Some((body, claimed)) = found else {
            return Ok(None);
        };
        let digest = Digest::of(&body);
        if claimed != digest.as_str() {
            return Err(Error::DigestMismatch {
                registry: self.host.clone(),
                what: format!("manifest {}", reference.whole()),
                expected: claimed,
                actual: digest.to_string(),
            });
        }
        let media_type = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("mediaType")?.as_str().map(str::to_owned))
            .unwrap_or_default();
        Ok(Some(RawManifest {
            bytes: body.to_vec(),
            digest,
            media_type,
        }))
    }

    /// A blob of the repository of `reference`, its size and digest checked.
    pub async fn blob(&self, reference: &Reference, desc: &Descriptor) -> Result<Vec<u8>> {
        self.store_auth().await;
        self.fetch_blob(reference, desc).await
    }

    /// Uploads `bytes` as a blob of the repository of `reference` unless it is there already;
    /// returns its digest.
    pub async fn upload_blob(&self, reference: &Reference, bytes: &[u8]) -> Result<Digest> {
        self.store_auth().await;
        let digest = Digest::of(bytes);
        let d = digest.as_str();
        if self
            .retry(move || self.client.blob_exists(reference, d))
            .await?
        {
            return Ok(digest);
        }
        let data = bytes::Bytes::copy_from_slice(bytes);
        self.retry(move || self.client.push_blob(reference, data.clone(), d))
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
        self.store_auth().await;
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
        let scheme = if self.http { "http" } else { "https" };
        let url = format!(
            "{scheme}://{}/v2/{}/referrers/{digest}",
            self.host,
            reference.repository()
        );
        let http = reqwest::Client::builder()
            .connect_timeout(self.options.connect_timeout)
            .timeout(self.options.read_timeout)
            .build()
            .map_err(|e| self.unreachable(e))?;
        let res = self
            .send_retry(|| {
                let req = http
                    .get(&url)
                    .header(reqwest::header::ACCEPT, media::OCI_INDEX);
                match &self.auth {
                    Auth::Basic { username, password } => req.basic_auth(username, Some(password)),
                    Auth::Anonymous => req,
                }
            })
            .await?;
        let is_index = res.status().is_success()
            && res
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with(media::OCI_INDEX));
        if !is_index {
            return Ok(None);
        }
        let body = res.bytes().await.map_err(|e| self.unreachable(e))?;
        Ok(Some(body.to_vec()))
    }
}

//! Pushing a Helm chart (a child module of `registry`: it uses the client's retries, auth and
//! error mapping). The tag is looked up first: the same manifest already there means nothing
//! to upload, other content under the same version is refused unless forced, since
//! `helm push` silently overwrites (helm/helm#10264).

use oci_client::Reference;
use oci_client::errors::{OciDistributionError, OciErrorCode};

use super::Registry;
use crate::artifact::{ChartArtifact, ChartPush, OCI_MANIFEST, chart_manifest, sha256};
use crate::error::{Error, Result};

/// Whether the registry said the tag does not exist.
fn not_found(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|x| {
            matches!(
                x.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown | OciErrorCode::NotFound
            )
        }),
        OciDistributionError::ServerError { code, .. } => *code == 404,
        _ => false,
    }
}

impl Registry {
    /// Pushes `artifact` as `repository/<name>:<version>` (`repository` is `host/path`, as in
    /// `oci://host/path`; `+` in the version becomes `_` in the tag): config and layer blobs the
    /// registry lacks, then the manifest under the tag.
    pub async fn push_chart(
        &self,
        repository: &str,
        name: &str,
        version: &str,
        artifact: &ChartArtifact,
        force: bool,
    ) -> Result<ChartPush> {
        let tag = version.replace('+', "_");
        let whole = format!("{}/{name}:{tag}", repository.trim_end_matches('/'));
        let reference: Reference = whole
            .parse()
            .map_err(|e| Error::Input(format!("`{whole}` is not a valid reference: {e}")))?;
        if reference.resolve_registry() != self.host {
            return Err(Error::Input(format!(
                "{whole} is not on registry {}",
                self.host
            )));
        }
        self.store_auth().await;
        let manifest = chart_manifest(artifact);
        let digest = sha256(&manifest);
        let auth = self.auth.to_oci();
        let (r, a) = (&reference, &auth);
        // HEAD of the tag, retried like every request, but a "not found" is an answer here.
        let mut delay = self.options.backoff;
        let attempts = self.options.attempts.max(1);
        let mut attempt = 1;
        let existing = loop {
            match self.client.fetch_manifest_digest(r, a).await {
                Ok(d) => break Some(d),
                Err(e) if not_found(&e) => break None,
                Err(e) if attempt < attempts && super::retryable(&e) => {
                    tracing::warn!("{}: {e}; retrying", self.host);
                    tokio::time::sleep(delay).await;
                    delay = delay.saturating_mul(2);
                    attempt += 1;
                }
                Err(e) => return Err(self.err(e)),
            }
        };
        match existing {
            Some(d) if d == digest => {
                return Ok(ChartPush {
                    reference: whole,
                    digest,
                    unchanged: true,
                });
            }
            Some(d) if !force => {
                return Err(Error::Input(format!(
                    "{whole} already exists with other content ({d}, this chart is {digest}); \
                     bump the chart version or push with --force"
                )));
            }
            _ => {}
        }
        for blob in [&artifact.config, &artifact.archive] {
            let d = sha256(blob);
            let d = d.as_str();
            if self.retry(move || self.client.blob_exists(r, d)).await? {
                continue;
            }
            let data = bytes::Bytes::copy_from_slice(blob);
            self.retry(move || self.client.push_blob(r, data.clone(), d))
                .await?;
        }
        let body = bytes::Bytes::from(manifest);
        let content_type = reqwest::header::HeaderValue::from_static(OCI_MANIFEST);
        self.put_manifest(&reference, &body, &content_type).await?;
        Ok(ChartPush {
            reference: whole,
            digest,
            unchanged: false,
        })
    }
}

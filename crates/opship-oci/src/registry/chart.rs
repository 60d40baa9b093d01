//! Pushing a Helm chart (a child module of `registry`: it uses the client's retries, auth and
//! error mapping). The tag is looked up first: the same manifest already there means nothing
//! to upload, other content under the same version is refused unless forced, since
//! `helm push` silently overwrites (helm/helm#10264).

use super::{Reference, Registry};
use crate::artifact::{ChartArtifact, ChartPush, OCI_MANIFEST, chart_manifest, sha256};
use crate::error::{Error, Result};

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
        // The fast parser: oci-spec's regex alone costs ~200M instructions to compile.
        let reference: Reference = super::parse_reference(&whole)?;
        if reference.resolve_registry() != self.host {
            return Err(Error::Input(format!(
                "{whole} is not on registry {}",
                self.host
            )));
        }
        let manifest = chart_manifest(artifact);
        let digest = sha256(&manifest);
        // HEAD of the tag, retried like every request; "not found" is an answer here.
        let existing = match self
            .head_manifest(&reference, &[OCI_MANIFEST], true)
            .await?
        {
            Ok(Some(d)) => Some(d),
            Err(reqwest::StatusCode::NOT_FOUND) => None,
            _ => {
                // No digest in the answer, or a refusal whose body HEAD cannot carry: GET.
                self.get_manifest(&reference, &[OCI_MANIFEST], true, true)
                    .await?
                    .map(|m| m.digest.to_string())
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
            let d = opship_core::image::oci::Digest::parse(&sha256(blob))?;
            if self.has_blob(&reference, &d, true).await? {
                continue;
            }
            let data = bytes::Bytes::copy_from_slice(blob);
            self.upload(&reference, &d, &data, self.options.chunked, None)
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

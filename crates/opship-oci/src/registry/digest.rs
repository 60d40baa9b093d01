//! The digest a tag stands for, as the registry serves it to every platform: for a multi-arch
//! image the digest of its image index (or Docker manifest list), never of one platform's
//! manifest. This is what `generate bundle --use-image-digests` pins, so a pinned bundle runs
//! on every architecture the tag did.

use opship_core::image::oci::{Digest, media};

use super::{ACCEPT_ANY, Reference, Registry, http};
use crate::error::{Error, Result};

impl Registry {
    /// The digest and media type of the manifest `reference` names. The manifest is fetched
    /// (GET, not HEAD) and the digest is the sha256 of the bytes received, so a registry whose
    /// `Docker-Content-Digest` disagrees with what it sent is an error rather than a pin to
    /// something else. A reference with a digest must match it.
    pub async fn manifest_digest(&self, reference: &Reference) -> Result<(Digest, String)> {
        let fetched = self
            .get_manifest(reference, ACCEPT_ANY, false, false)
            .await?
            .ok_or_else(|| Error::Input(format!("{}: no manifest", reference.whole())))?;
        let value: serde_json::Value =
            serde_json::from_slice(&fetched.bytes).map_err(|e| Error::Registry {
                registry: self.host.clone(),
                status: "an unusable answer".into(),
                answer: format!(
                    "the manifest of {} is not JSON ({e}): {}",
                    reference.whole(),
                    http::quote(&fetched.bytes)
                ),
            })?;
        // `mediaType` is optional in OCI manifests and indexes; the shape tells them apart.
        let media_type = match value.get("mediaType").and_then(|v| v.as_str()) {
            Some(m) => m.to_owned(),
            None if value.get("manifests").is_some() => media::OCI_INDEX.to_owned(),
            None => media::OCI_MANIFEST.to_owned(),
        };
        if !ACCEPT_ANY.contains(&media_type.as_str()) {
            return Err(Error::Registry {
                registry: self.host.clone(),
                status: "an unusable answer".into(),
                answer: format!(
                    "{} is a {media_type}, not an OCI or Docker v2 image or index",
                    reference.whole()
                ),
            });
        }
        Ok((fetched.digest, media_type))
    }
}

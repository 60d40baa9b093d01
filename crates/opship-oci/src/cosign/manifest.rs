//! The `.sig` manifest: cosign's legacy signature storage. Tag `sha256-<hex>.sig` next to the
//! image; one layer per signature (media type `application/vnd.dev.cosign.simplesigning.v1+json`,
//! the payload as blob, the base64 DER signature in the `dev.cosignproject.cosign/signature`
//! annotation), and a config listing the layers as diff IDs, shaped like cosign's (go-
//! containerregistry's empty image plus appended layers). Adding a signature keeps the
//! existing layers, whoever wrote them.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use opship_core::image::oci::{self, Descriptor, Digest, Manifest, media};

use crate::error::{Error, Result};
use crate::registry::{Reference, Registry};

/// Media type of a signature layer.
pub const SIMPLESIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// Layer annotation holding the base64 (standard, padded) DER signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// The tag of the signatures of `digest`: `sha256-<hex>.sig`.
pub fn tag(digest: &Digest) -> String {
    format!("sha256-{}.sig", digest.hex())
}

/// The layer descriptor of one signature.
pub fn layer(payload: &[u8], signature_der: &[u8]) -> Descriptor {
    let mut d = Descriptor::of(SIMPLESIGNING, payload);
    d.annotations.insert(
        SIGNATURE_ANNOTATION.to_owned(),
        STANDARD.encode(signature_der),
    );
    d
}

/// The signature layers of one image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signatures {
    /// Layer descriptors, oldest first.
    pub layers: Vec<Descriptor>,
}

impl Signatures {
    /// Reads a `.sig` manifest (OCI or Docker media types; other fields ignored).
    pub fn parse(bytes: &[u8], what: &str) -> Result<Self> {
        let m: Manifest = serde_json::from_slice(bytes)
            .map_err(|e| Error::Signature(format!("{what} is not an image manifest: {e}")))?;
        Ok(Signatures { layers: m.layers })
    }

    /// Appends `layer` unless the same payload with the same signature is there already;
    /// whether it was added.
    pub fn add(&mut self, layer: Descriptor) -> bool {
        let same = |l: &Descriptor| {
            l.digest == layer.digest
                && l.annotations.get(SIGNATURE_ANNOTATION)
                    == layer.annotations.get(SIGNATURE_ANNOTATION)
        };
        if self.layers.iter().any(same) {
            return false;
        }
        self.layers.push(layer);
        true
    }

    /// The config blob: cosign's shape (`architecture`, `created`, `history`, `os`, `rootfs`,
    /// `config`, zero times), so it also reads as an image config.
    pub fn config(&self) -> Vec<u8> {
        let diff_ids: Vec<&str> = self.layers.iter().map(|l| l.digest.as_str()).collect();
        let v = serde_json::json!({
            "architecture": "",
            "created": "0001-01-01T00:00:00Z",
            "history": self.layers.iter().map(|_| serde_json::json!({"created": "0001-01-01T00:00:00Z"})).collect::<Vec<_>>(),
            "os": "",
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
            "config": {},
        });
        serde_json::to_vec(&v).unwrap_or_default()
    }

    /// Config bytes, manifest bytes.
    pub fn to_manifest(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let config = self.config();
        let m = Manifest {
            schema_version: 2,
            media_type: Some(media::OCI_MANIFEST.to_owned()),
            config: Descriptor::of(media::OCI_CONFIG, &config),
            layers: self.layers.clone(),
            annotations: BTreeMap::new(),
        };
        Ok((config, oci::to_json(&m)?))
    }

    /// The signature (or attestation) manifest tagged `at` in its registry; none yet is an
    /// empty one.
    pub async fn fetch(registry: &Registry, at: &Reference) -> Result<Self> {
        match registry.manifest_if_any(at).await? {
            Some(raw) => Self::parse(&raw.bytes, &at.whole()),
            None => Ok(Self::default()),
        }
    }

    /// Writes this manifest under `at`: its config blob, then the manifest (the layers'
    /// blobs are the caller's, uploaded before). Returns the manifest's digest.
    pub async fn put(&self, registry: &Registry, at: &Reference) -> Result<Digest> {
        let (config, manifest_bytes) = self.to_manifest()?;
        registry.upload_blob(at, &config).await?;
        registry
            .put_manifest_bytes(at, &manifest_bytes, media::OCI_MANIFEST)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_dedupes_and_config_lists_layers() {
        let mut s = Signatures::default();
        assert!(s.add(layer(b"p1", b"s1")));
        assert!(!s.add(layer(b"p1", b"s1")));
        assert!(s.add(layer(b"p1", b"s2")));
        assert_eq!(s.layers.len(), 2);
        let (config, manifest) = s.to_manifest().unwrap();
        let c: oci::ImageConfig = serde_json::from_slice(&config).unwrap();
        assert_eq!(
            c.rootfs.diff_ids,
            vec![Digest::of(b"p1"), Digest::of(b"p1")]
        );
        let back = Signatures::parse(&manifest, "m").unwrap();
        assert_eq!(back, s);
        assert_eq!(
            back.layers[0].annotations[SIGNATURE_ANNOTATION],
            STANDARD.encode(b"s1")
        );
        assert_eq!(
            tag(&Digest::of(b"x")),
            format!("sha256-{}.sig", Digest::of(b"x").hex())
        );
    }
}

//! Making signatures and storing them: in a registry (read the `.sig` manifest, append the new
//! layer, upload the payload and config, PUT the manifest to the `.sig` tag), or in an OCI
//! layout under the same tag, from where `push` carries them to a registry (merged with any
//! signatures the registry already has).

use std::collections::BTreeMap;
use std::path::Path;

use opship_core::image::layout::{self, Layout};
use opship_core::image::oci::{self, Descriptor, Digest, annotation, media};

use super::key::PrivateKey;
use super::manifest::{self, Signatures};
use super::payload;
use super::verification::{layout_digest, layout_signatures};
use crate::error::Result;
use crate::registry::{Reference, Registry};

/// What a signing did.
#[derive(Debug, Clone)]
pub struct SignReport {
    /// The signed image digest.
    pub digest: Digest,
    /// Where the signatures are (`repo:sha256-….sig` or `LAYOUT:sha256-….sig`).
    pub location: String,
    /// Signatures stored there now (including older ones).
    pub signatures: usize,
    /// Digest of the new `.sig` manifest.
    pub manifest: Digest,
}

/// The repository identity cosign puts in payloads: `registry/path`, no tag (Docker Hub as
/// `index.docker.io/library/x`).
pub fn identity_of(reference: &Reference) -> String {
    format!(
        "{}/{}",
        reference.resolve_registry(),
        reference.repository()
    )
}

/// Signs `digest`: the payload and its layer descriptor.
pub fn new_signature(
    key: &PrivateKey,
    identity: &str,
    digest: &Digest,
    annotations: &BTreeMap<String, String>,
) -> Result<(Descriptor, Vec<u8>)> {
    let payload = payload::build(identity, digest, annotations);
    let signature = key.sign(&payload)?;
    Ok((manifest::layer(&payload, &signature), payload))
}

/// Resolves `reference`, signs its digest and stores the signature in its repository.
pub async fn sign_remote(
    registry: &Registry,
    reference: &Reference,
    key: &PrivateKey,
    identity: &str,
    annotations: &BTreeMap<String, String>,
) -> Result<SignReport> {
    let digest = registry.resolve(reference).await?;
    let signature = new_signature(key, identity, &digest, annotations)?;
    push_signatures(registry, reference, &digest, vec![signature]).await
}

/// Adds signature layers (with their payloads) to the `.sig` manifest of `digest` in the
/// repository of `repository`, keeping the signatures already there.
pub async fn push_signatures(
    registry: &Registry,
    repository: &Reference,
    digest: &Digest,
    new: Vec<(Descriptor, Vec<u8>)>,
) -> Result<SignReport> {
    let sig_ref = Reference::with_tag(
        repository.registry().to_owned(),
        repository.repository().to_owned(),
        manifest::tag(digest),
    );
    let location = sig_ref.whole();
    let mut sigs = match registry.manifest_if_any(&sig_ref).await? {
        Some(raw) => Signatures::parse(&raw.bytes, &location)?,
        None => Signatures::default(),
    };
    for (layer, payload) in new {
        if sigs.add(layer) {
            registry.upload_blob(&sig_ref, &payload).await?;
        }
    }
    let (config, manifest_bytes) = sigs.to_manifest()?;
    registry.upload_blob(&sig_ref, &config).await?;
    let manifest = registry
        .put_manifest_bytes(&sig_ref, &manifest_bytes, media::OCI_MANIFEST)
        .await?;
    Ok(SignReport {
        digest: digest.clone(),
        location,
        signatures: sigs.layers.len(),
        manifest,
    })
}

/// Signs the image tagged `tag` in the layout at `dir`; the signature goes into the layout
/// under the tag `sha256-<hex>.sig`.
pub fn sign_layout(
    dir: &Path,
    tag: &str,
    key: &PrivateKey,
    identity: &str,
    annotations: &BTreeMap<String, String>,
) -> Result<SignReport> {
    let layout = Layout::new(dir);
    let digest = layout_digest(&layout, tag)?;
    let (layer, payload) = new_signature(key, identity, &digest, annotations)?;
    let mut sigs = layout_signatures(&layout, &digest)?.unwrap_or_default();
    sigs.add(layer.clone());
    let (config, manifest_bytes) = sigs.to_manifest()?;
    // Blobs first, index.json last (atomically): a reader never sees a tag without its blobs.
    layout.write_blob(&layer.digest, &payload)?;
    layout.write_blob(&Digest::of(&config), &config)?;
    let manifest = Digest::of(&manifest_bytes);
    layout.write_blob(&manifest, &manifest_bytes)?;
    let sig_tag = manifest::tag(&digest);
    let mut index = layout.index()?;
    let mut desc = Descriptor::of(media::OCI_MANIFEST, &manifest_bytes);
    desc.annotations
        .insert(annotation::REF_NAME.to_owned(), sig_tag.clone());
    match index
        .manifests
        .iter_mut()
        .find(|d| d.annotations.get(annotation::REF_NAME) == Some(&sig_tag))
    {
        Some(slot) => *slot = desc,
        None => index.manifests.push(desc),
    }
    layout::write_atomic(&dir.join("index.json"), &oci::to_json(&index)?)?;
    Ok(SignReport {
        digest,
        location: format!("{}:{sig_tag}", dir.display()),
        signatures: sigs.layers.len(),
        manifest,
    })
}

/// Pushes the signatures the layout at `dir` holds for `digest` to the repository of
/// `target`, merged with those already there; `None` when the layout has none.
pub async fn push_layout_signatures(
    registry: &Registry,
    dir: &Path,
    digest: &Digest,
    target: &Reference,
) -> Result<Option<SignReport>> {
    let layout = Layout::new(dir);
    let Some(sigs) = layout_signatures(&layout, digest)? else {
        return Ok(None);
    };
    let mut new = Vec::with_capacity(sigs.layers.len());
    for l in sigs.layers {
        let payload = layout.read_blob(&l)?;
        new.push((l, payload));
    }
    push_signatures(registry, target, digest, new)
        .await
        .map(Some)
}

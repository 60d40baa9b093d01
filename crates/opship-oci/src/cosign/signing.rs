//! Making signatures and storing them: in a registry (read the `.sig` manifest, append the new
//! layer, upload the payload and config, PUT the manifest to the `.sig` tag), or in an OCI
//! layout under the same tag, from where `push` carries them to a registry (merged with any
//! signatures the registry already has).

use std::collections::BTreeMap;
use std::path::Path;

use opship_core::image::layout::Layout;
use opship_core::image::oci::{Descriptor, Digest, annotation, media};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::bundle;
use super::key::{PrivateKey, PublicKey};
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
    /// Digest of the `.sig` manifest.
    pub manifest: Digest,
    /// Whether a signature was added (false: an equal one that verifies with the key was
    /// there already, and nothing was written).
    pub added: bool,
    /// Where the Sigstore bundle is, with `--bundle-format`.
    pub bundle: Option<String>,
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
    sign_digest(
        registry,
        reference,
        &digest,
        key,
        identity,
        annotations,
        false,
    )
    .await
}

/// Whether `sigs` holds a layer with exactly `payload` whose signature verifies with `key`:
/// cosign's rule for not adding a signature twice (ECDSA signatures differ each time, so the
/// signature itself cannot be compared).
pub fn has_equal(
    sigs: &Signatures,
    payload_digest: &Digest,
    key: &PublicKey,
    mut payload: impl FnMut(&Descriptor) -> Option<Vec<u8>>,
) -> bool {
    sigs.layers.iter().any(|l| {
        l.digest == *payload_digest
            && l.media_type == manifest::SIMPLESIGNING
            && l.annotations
                .get(manifest::SIGNATURE_ANNOTATION)
                .and_then(|b| STANDARD.decode(b.trim()).ok())
                .zip(payload(l))
                .is_some_and(|(der, p)| key.verifies(&der, &p))
    })
}

/// Signs `digest` in the repository of `reference`: the `.sig` signature and, with `bundle`,
/// a Sigstore bundle referrer with the annotations in its statement. Everything is read and
/// checked first (the `.sig` manifest, the referrers and their fallback tag); then, only if
/// all is well, written. A signature equal to one already there (same payload or statement,
/// verifying with the key) is not added again.
pub async fn sign_digest(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    key: &PrivateKey,
    identity: &str,
    annotations: &BTreeMap<String, String>,
    bundle: bool,
) -> Result<SignReport> {
    let sig_ref = Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        manifest::tag(digest),
    );
    let location = sig_ref.whole();
    let (mut sigs, old_manifest) = match registry.manifest_if_any(&sig_ref).await? {
        Some(raw) => (Signatures::parse(&raw.bytes, &location)?, Some(raw.digest)),
        None => (Signatures::default(), None),
    };
    let (layer, payload) = new_signature(key, identity, digest, annotations)?;
    let mut equal = false;
    for l in &sigs.layers {
        if l.digest != layer.digest {
            continue;
        }
        let blob = registry.blob(&sig_ref, l).await.ok();
        let one = Signatures {
            layers: vec![l.clone()],
        };
        if has_equal(&one, &layer.digest, key.public(), |_| blob.clone()) {
            equal = true;
            break;
        }
    }
    let statement = bundle::statement(digest, annotations);
    let prepared = if bundle {
        Some(bundle::prepare(registry, reference, digest, Some(key.public()), &statement).await?)
    } else {
        None
    };
    // Every check passed: write.
    let manifest = match (equal, old_manifest) {
        (true, Some(m)) => m,
        _ => {
            sigs.add(layer);
            registry.upload_blob(&sig_ref, &payload).await?;
            sigs.put(registry, &sig_ref).await?
        }
    };
    let bundle = match &prepared {
        Some(p) => Some(
            bundle::attach(
                registry,
                reference,
                digest,
                key,
                &statement,
                bundle::PREDICATE_TYPE,
                p,
            )
            .await?,
        ),
        None => None,
    };
    Ok(SignReport {
        digest: digest.clone(),
        location,
        signatures: sigs.layers.len(),
        manifest,
        added: !equal,
        bundle,
    })
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
    let mut sigs = Signatures::fetch(registry, &sig_ref).await?;
    for (layer, payload) in new {
        if sigs.add(layer) {
            registry.upload_blob(&sig_ref, &payload).await?;
        }
    }
    let manifest = sigs.put(registry, &sig_ref).await?;
    Ok(SignReport {
        digest: digest.clone(),
        location,
        signatures: sigs.layers.len(),
        manifest,
        added: true,
        bundle: None,
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
    let sigs = layout_signatures(&layout, &digest)?.unwrap_or_default();
    if has_equal(&sigs, &layer.digest, key.public(), |l| {
        layout.read_blob(l).ok()
    }) {
        let sig_tag = manifest::tag(&digest);
        let manifest = layout
            .index()?
            .manifests
            .iter()
            .find(|d| d.annotations.get(annotation::REF_NAME) == Some(&sig_tag))
            .map(|d| d.digest.clone())
            .unwrap_or_else(|| Digest::of(b""));
        return Ok(SignReport {
            digest,
            location: format!("{}:{sig_tag}", opship_core::paths::show(dir)),
            signatures: sigs.layers.len(),
            manifest,
            added: false,
            bundle: None,
        });
    }
    // The signatures are read again, merged and tagged under the layout's index lock: two
    // signers at once (two releases of one version) both keep their signature.
    let sig_tag = manifest::tag(&digest);
    let mut merged: Option<Result<(Signatures, Digest)>> = None;
    let locked = layout.update_index(|index| {
        let r = (|| -> Result<(Signatures, Digest)> {
            let mut sigs = layout_signatures(&layout, &digest)?.unwrap_or_default();
            sigs.add(layer.clone());
            let (config, manifest_bytes) = sigs.to_manifest()?;
            // Blobs first, index.json last (atomically): a reader never sees a tag without
            // its blobs.
            layout.write_blob(&layer.digest, &payload)?;
            layout.write_blob(&Digest::of(&config), &config)?;
            let manifest = Digest::of(&manifest_bytes);
            layout.write_blob(&manifest, &manifest_bytes)?;
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
            Ok((sigs, manifest))
        })();
        let failed = r.is_err();
        merged = Some(r);
        if failed {
            return Err(opship_core::Error::Internal(
                "signing in the layout failed".into(),
            ));
        }
        Ok(())
    });
    let (sigs, manifest) = match (merged, locked) {
        (Some(Err(e)), _) => return Err(e),
        (_, Err(e)) => return Err(e.into()),
        (Some(Ok(m)), Ok(())) => m,
        (None, Ok(())) => unreachable!("update_index ran the change"),
    };
    Ok(SignReport {
        digest,
        location: format!("{}:{sig_tag}", opship_core::paths::show(dir)),
        signatures: sigs.layers.len(),
        manifest,
        added: true,
        bundle: None,
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

/// The two signature formats: cosign 2's `.sig` manifest and cosign 3's Sigstore bundle
/// referrers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `sha256-<hex>.sig` layers (and `.att` for attestations).
    Cosign2,
    /// Sigstore bundle v0.3 referrers.
    Cosign3,
}

/// The format the image's signatures already have: `.sig` (or `.att`) → cosign 2; Sigstore
/// bundles among its referrers (and no `.sig`) → cosign 3; none → `None`.
pub async fn existing_format(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
) -> Result<Option<Format>> {
    for tag in [manifest::tag(digest), super::attestation::tag(digest)] {
        let r = Reference::with_tag(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            tag,
        );
        if registry.manifest_if_any(&r).await?.is_some() {
            return Ok(Some(Format::Cosign2));
        }
    }
    let listing = super::referrers::list(registry, reference, digest, true).await?;
    let bundles = listing.entries.iter().any(|e| {
        e.manifest.as_ref().is_ok_and(|m| {
            m.layers
                .iter()
                .any(|l| l.media_type == bundle::BUNDLE_MEDIA)
        })
    });
    Ok(bundles.then_some(Format::Cosign3))
}

/// Signs `digest` keylessly in `format`: the certificate, log entry and timestamp are all
/// obtained (and the registry read and checked) before anything is written, so a Rekor or
/// TSA failure leaves the registry as it was.
pub async fn sign_keyless(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    session: &super::keyless::Session,
    identity: &str,
    annotations: &BTreeMap<String, String>,
    format: Format,
) -> Result<SignReport> {
    if format == Format::Cosign3 {
        let statement = bundle::statement(digest, annotations);
        let prepared = bundle::prepare(registry, reference, digest, None, &statement).await?;
        let signed = session
            .dsse_bundle(bundle::PAYLOAD_TYPE, &statement)
            .await?;
        let location = bundle::attach_bundle(
            registry,
            reference,
            digest,
            signed,
            bundle::PREDICATE_TYPE,
            &prepared,
        )
        .await?;
        return Ok(SignReport {
            digest: digest.clone(),
            location: location.clone(),
            signatures: 1,
            manifest: digest.clone(),
            added: true,
            bundle: Some(location),
        });
    }
    let sig_ref = Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        manifest::tag(digest),
    );
    let location = sig_ref.whole();
    let mut sigs = Signatures::fetch(registry, &sig_ref).await?;
    let payload = payload::build(identity, digest, annotations);
    let (layer, _) = session.cosign2_layer(&payload).await?;
    sigs.add(layer);
    registry.upload_blob(&sig_ref, &payload).await?;
    let manifest = sigs.put(registry, &sig_ref).await?;
    Ok(SignReport {
        digest: digest.clone(),
        location,
        signatures: sigs.layers.len(),
        manifest,
        added: true,
        bundle: None,
    })
}

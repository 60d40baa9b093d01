//! The Sigstore bundle format of cosign v3 (`--bundle-format`): an in-toto statement naming the
//! image digest (predicate type `https://sigstore.dev/cosign/sign/v1`), signed as a DSSE
//! envelope, wrapped in a Sigstore bundle v0.3 whose verification material is the public key
//! hint, and attached to the image as an OCI 1.1 referrer (a manifest with `subject`). On a
//! registry without the referrers API the `sha256-<hex>` fallback index tag is updated, as the
//! distribution spec's referrers tag schema says.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use opship_core::image::oci::{Digest, media};
use serde_json::json;

use super::key::{PrivateKey, PublicKey};
use crate::error::{Error, Result};
use crate::registry::{Reference, Registry};

/// Media type (and artifact type) of a Sigstore bundle v0.3.
pub const BUNDLE_MEDIA: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The in-toto predicate type of cosign's bundle signatures.
pub const PREDICATE_TYPE: &str = "https://sigstore.dev/cosign/sign/v1";
/// DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// Media type of the empty `{}` config of artifacts.
pub const EMPTY_MEDIA: &str = "application/vnd.oci.empty.v1+json";

/// The in-toto statement for `digest`.
pub fn statement(digest: &Digest) -> Vec<u8> {
    let v = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"digest": {"sha256": digest.hex()}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {},
    });
    serde_json::to_vec(&v).unwrap_or_default()
}

/// DSSE pre-authentication encoding: what the envelope's signature covers.
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// The bundle JSON signing `digest` with `key`.
pub fn build(digest: &Digest, key: &PrivateKey) -> Result<Vec<u8>> {
    let body = statement(digest);
    let sig = key.sign(&pae(PAYLOAD_TYPE, &body))?;
    let v = json!({
        "mediaType": BUNDLE_MEDIA,
        "verificationMaterial": {"publicKey": {"hint": key.public().hint()}},
        "dsseEnvelope": {
            "payload": STANDARD.encode(&body),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{"sig": STANDARD.encode(&sig)}],
        },
    });
    serde_json::to_vec(&v).map_err(|e| Error::Signature(format!("bundle JSON: {e}")))
}

/// Checks a bundle against `key` and `digest`; the reason when it does not verify.
pub fn check(bundle: &[u8], key: &PublicKey, digest: &Digest) -> std::result::Result<(), String> {
    let v: serde_json::Value =
        serde_json::from_slice(bundle).map_err(|e| format!("the bundle is not JSON: {e}"))?;
    let env = v
        .get("dsseEnvelope")
        .ok_or("the bundle has no dsseEnvelope (message-signature bundles are not read)")?;
    let payload_type = env
        .get("payloadType")
        .and_then(|t| t.as_str())
        .ok_or("the DSSE envelope has no payloadType")?;
    let body = env
        .get("payload")
        .and_then(|p| p.as_str())
        .and_then(|p| STANDARD.decode(p).ok())
        .ok_or("the DSSE payload is missing or not base64")?;
    let pae = pae(payload_type, &body);
    let sigs = env
        .get("signatures")
        .and_then(|s| s.as_array())
        .ok_or("the DSSE envelope has no signatures")?;
    let signed = sigs.iter().any(|s| {
        s.get("sig")
            .and_then(|x| x.as_str())
            .and_then(|x| STANDARD.decode(x).ok())
            .is_some_and(|der| key.verifies(&der, &pae))
    });
    if !signed {
        return Err("no DSSE signature verifies with the public key".into());
    }
    let st: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| format!("the DSSE payload is not JSON: {e}"))?;
    if st.get("predicateType").and_then(|p| p.as_str()) != Some(PREDICATE_TYPE) {
        return Err(format!(
            "the statement's predicateType is not {PREDICATE_TYPE}"
        ));
    }
    let names = st
        .get("subject")
        .and_then(|s| s.as_array())
        .is_some_and(|subs| {
            subs.iter()
                .any(|s| s.pointer("/digest/sha256").and_then(|d| d.as_str()) == Some(digest.hex()))
        });
    if !names {
        return Err(format!("the statement's subject is not {digest}"));
    }
    Ok(())
}

fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    opship_core::image::oci::rfc3339(secs)
}

/// Signs `digest` as a bundle and attaches it to the image in the repository of `reference`
/// as a referrer; returns where it went.
pub async fn attach(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    key: &PrivateKey,
) -> Result<String> {
    let by_digest = |d: &Digest| {
        Reference::with_digest(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            d.to_string(),
        )
    };
    let image = registry
        .manifest_if_any(&by_digest(digest))
        .await?
        .ok_or_else(|| {
            Error::Input(format!(
                "{}@{digest}: no such manifest",
                reference.repository()
            ))
        })?;
    let subject_type = if image.media_type.is_empty() {
        media::OCI_MANIFEST.to_owned()
    } else {
        image.media_type.clone()
    };
    let bundle = build(digest, key)?;
    let empty = b"{}";
    let target = by_digest(digest);
    registry.upload_blob(&target, empty).await?;
    registry.upload_blob(&target, &bundle).await?;
    let annotations = json!({
        "dev.sigstore.bundle.content": "dsse-envelope",
        "dev.sigstore.bundle.predicateType": PREDICATE_TYPE,
        "org.opencontainers.image.created": now_rfc3339(),
    });
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": media::OCI_MANIFEST,
        "artifactType": BUNDLE_MEDIA,
        "config": {"mediaType": EMPTY_MEDIA, "digest": Digest::of(empty), "size": 2},
        "layers": [{"mediaType": BUNDLE_MEDIA, "digest": Digest::of(&bundle), "size": bundle.len()}],
        "subject": {"mediaType": subject_type, "digest": digest, "size": image.bytes.len()},
        "annotations": annotations,
    });
    let bytes = serde_json::to_vec(&manifest)
        .map_err(|e| Error::Signature(format!("referrer manifest JSON: {e}")))?;
    let referrer = Digest::of(&bytes);
    registry
        .put_manifest_bytes(&by_digest(&referrer), &bytes, media::OCI_MANIFEST)
        .await?;
    if registry.referrers_index(reference, digest).await?.is_some() {
        return Ok(format!(
            "{}@{referrer} (referrers API)",
            reference.repository()
        ));
    }
    // Referrers tag schema: the index at tag `sha256-<hex>` lists the referrers.
    let tag = format!("sha256-{}", digest.hex());
    let tag_ref = Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        tag.clone(),
    );
    let mut index = match registry.manifest_if_any(&tag_ref).await? {
        Some(raw) => serde_json::from_slice::<serde_json::Value>(&raw.bytes).map_err(|e| {
            Error::Signature(format!(
                "{}: the fallback index is not JSON: {e}",
                tag_ref.whole()
            ))
        })?,
        None => json!({"schemaVersion": 2, "mediaType": media::OCI_INDEX, "manifests": []}),
    };
    let entry = json!({
        "mediaType": media::OCI_MANIFEST,
        "artifactType": BUNDLE_MEDIA,
        "digest": referrer,
        "size": bytes.len(),
        "annotations": annotations,
    });
    let Some(list) = index.get_mut("manifests").and_then(|m| m.as_array_mut()) else {
        return Err(Error::Signature(format!(
            "{}: the fallback tag is not an image index",
            tag_ref.whole()
        )));
    };
    if !list.iter().any(|m| m.get("digest") == entry.get("digest")) {
        list.push(entry);
    }
    let index_bytes = serde_json::to_vec(&index)
        .map_err(|e| Error::Signature(format!("fallback index JSON: {e}")))?;
    registry
        .put_manifest_bytes(&tag_ref, &index_bytes, media::OCI_INDEX)
        .await?;
    Ok(format!(
        "{}@{referrer}, listed in the fallback tag {}",
        reference.repository(),
        tag_ref.whole()
    ))
}

/// The bundles attached to `digest` (referrers API, else the fallback tag), checked with
/// `key`: (referrer digest, outcome) per bundle.
pub async fn verify_attached(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    key: &PublicKey,
) -> Result<Vec<(String, std::result::Result<(), String>)>> {
    let tag_ref = Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        format!("sha256-{}", digest.hex()),
    );
    // The referrers API when the registry has one, else the fallback tag.
    let (bytes, what) = match registry.referrers_index(reference, digest).await? {
        Some(b) => (
            b,
            format!("referrers of {}@{digest}", reference.repository()),
        ),
        None => match registry.manifest_if_any(&tag_ref).await? {
            Some(raw) => (raw.bytes, tag_ref.whole()),
            None => return Ok(Vec::new()),
        },
    };
    let index: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::Signature(format!("{what}: not JSON: {e}")))?;
    let mut out = Vec::new();
    for m in index
        .get("manifests")
        .and_then(|m| m.as_array())
        .into_iter()
        .flatten()
    {
        if m.get("artifactType").and_then(|a| a.as_str()) != Some(BUNDLE_MEDIA) {
            continue;
        }
        let Some(d) = m
            .get("digest")
            .and_then(|d| d.as_str())
            .and_then(|d| Digest::parse(d).ok())
        else {
            continue;
        };
        let r = Reference::with_digest(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            d.to_string(),
        );
        let outcome = match registry.manifest_if_any(&r).await? {
            None => Err("the referrer manifest is missing".to_owned()),
            Some(man) => {
                let layers: opship_core::image::oci::Manifest = serde_json::from_slice(&man.bytes)
                    .map_err(|e| Error::Signature(format!("{}: {e}", r.whole())))?;
                match layers.layers.iter().find(|l| l.media_type == BUNDLE_MEDIA) {
                    None => Err("the referrer has no bundle layer".to_owned()),
                    Some(l) => {
                        let bytes = registry.blob(&r, l).await?;
                        check(&bytes, key, digest)
                    }
                }
            }
        };
        out.push((r.whole(), outcome));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_and_check() {
        let key = PrivateKey::generate().unwrap();
        let other = PrivateKey::generate().unwrap();
        let d = Digest::of(b"image");
        let b = build(&d, &key).unwrap();
        assert_eq!(check(&b, key.public(), &d), Ok(()));
        assert!(
            check(&b, other.public(), &d)
                .unwrap_err()
                .contains("no DSSE signature")
        );
        assert!(
            check(&b, key.public(), &Digest::of(b"x"))
                .unwrap_err()
                .contains("subject")
        );
        assert_eq!(pae("t", b"ab"), b"DSSEv1 1 t 2 ab");
    }
}

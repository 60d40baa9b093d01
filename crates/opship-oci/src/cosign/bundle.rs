//! The Sigstore bundle format of cosign v3 (the default of `cosign sign` and `cosign attest`
//! 3.x; `opship sign --bundle-format`, `opship attest --bundle-format`): an in-toto statement,
//! signed as a DSSE envelope, wrapped in a Sigstore bundle v0.3 whose verification material is
//! the public key hint, and attached to the image as an OCI 1.1 referrer (`referrers`). A
//! signature's statement has predicate type `https://sigstore.dev/cosign/sign/v1`, an empty
//! predicate and the `-a k=v` annotations in `subject[].annotations`, where cosign 3 writes and
//! checks them; an attestation's statement carries its predicate.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use opship_core::image::oci::{Digest, media};
use serde_json::json;

use super::dsse::Envelope;
pub use super::dsse::{PAYLOAD_TYPE, pae};
use super::key::{PrivateKey, PublicKey};
use super::referrers::{self, Listing, NewReferrer};
use super::verification::{Verifier, sha256_bytes};
use crate::error::{Error, Result};
use crate::registry::{Reference, Registry};

/// Media type (and artifact type) of a Sigstore bundle v0.3.
pub const BUNDLE_MEDIA: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The in-toto predicate type of cosign's bundle signatures.
pub const PREDICATE_TYPE: &str = "https://sigstore.dev/cosign/sign/v1";
/// Media type of the empty `{}` config of artifacts.
pub const EMPTY_MEDIA: &str = "application/vnd.oci.empty.v1+json";
/// in-toto statement type cosign 3 writes for signatures.
pub const STATEMENT_V1: &str = "https://in-toto.io/Statement/v1";

/// The in-toto statement of a signature of `digest` with the `-a` annotations (cosign 3's
/// bytes: `_type`, `subject`, `predicateType`, `predicate`; no `annotations` key when none).
pub fn statement(digest: &Digest, annotations: &BTreeMap<String, String>) -> Vec<u8> {
    let mut subject = json!({"digest": {"sha256": digest.hex()}});
    if !annotations.is_empty() {
        subject["annotations"] = json!(annotations);
    }
    let v = json!({
        "_type": STATEMENT_V1,
        "subject": [subject],
        "predicateType": PREDICATE_TYPE,
        "predicate": {},
    });
    serde_json::to_vec(&v).unwrap_or_default()
}

/// The bundle JSON around a signed envelope.
pub fn wrap(envelope: &Envelope, key: &PublicKey) -> Result<Vec<u8>> {
    let v = json!({
        "mediaType": BUNDLE_MEDIA,
        "verificationMaterial": {"publicKey": {"hint": key.hint()}},
        "dsseEnvelope": {
            "payload": STANDARD.encode(&envelope.payload),
            "payloadType": envelope.payload_type,
            "signatures": envelope.signatures.iter()
                .map(|s| json!({"sig": STANDARD.encode(s)}))
                .collect::<Vec<_>>(),
        },
    });
    serde_json::to_vec(&v).map_err(|e| Error::Signature(format!("bundle JSON: {e}")))
}

/// The signature bundle of `digest` (with the `-a` annotations) signed with `key`.
pub fn build(
    digest: &Digest,
    key: &PrivateKey,
    annotations: &BTreeMap<String, String>,
) -> Result<Vec<u8>> {
    let env = Envelope::sign(PAYLOAD_TYPE, &statement(digest, annotations), key)?;
    wrap(&env, key.public())
}

/// A verified in-toto statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// `predicateType`.
    pub predicate_type: String,
    /// The whole statement.
    pub json: serde_json::Value,
    /// Who the certificate says signed, when verified keylessly.
    pub signer: Option<crate::cosign::sigstore::CertSigner>,
}

impl Statement {
    /// Parses statement bytes (the DSSE payload).
    pub fn parse(body: &[u8]) -> std::result::Result<Self, String> {
        let json: serde_json::Value = serde_json::from_slice(body)
            .map_err(|e| format!("the DSSE payload is not JSON: {e}"))?;
        let predicate_type = json
            .get("predicateType")
            .and_then(|p| p.as_str())
            .ok_or("the statement has no predicateType")?
            .to_owned();
        Ok(Statement {
            predicate_type,
            json,
            signer: None,
        })
    }

    /// The subject entry naming `digest`, if any.
    pub fn subject(&self, digest: &Digest) -> Option<&serde_json::Value> {
        self.json
            .get("subject")?
            .as_array()?
            .iter()
            .find(|s| s.pointer("/digest/sha256").and_then(|d| d.as_str()) == Some(digest.hex()))
    }

    /// The annotations of the subject naming `digest` (cosign 3's `-a`).
    pub fn annotations(&self, digest: &Digest) -> serde_json::Map<String, serde_json::Value> {
        self.subject(digest)
            .and_then(|s| s.get("annotations"))
            .and_then(|a| a.as_object())
            .cloned()
            .unwrap_or_default()
    }
}

/// Opens a DSSE envelope: a signature verifies with `key`, the payload is an in-toto statement
/// naming `digest`.
pub fn open_envelope(
    env: &Envelope,
    key: &PublicKey,
    digest: &Digest,
) -> std::result::Result<Statement, String> {
    if env.payload_type != PAYLOAD_TYPE {
        return Err(format!(
            "the DSSE payload type is `{}`, not {PAYLOAD_TYPE}",
            env.payload_type
        ));
    }
    if !env.verifies(key) {
        return Err(
            "no DSSE signature verifies with the public key (another key signed it, or the \
             payload was altered)"
                .into(),
        );
    }
    let st = Statement::parse(&env.payload)?;
    if st.subject(digest).is_none() {
        return Err(format!(
            "the statement's subject is not {digest} (a statement of another image)"
        ));
    }
    Ok(st)
}

/// Opens a bundle (any predicate type): see [`open_envelope`].
pub fn open(
    bundle: &[u8],
    key: &PublicKey,
    digest: &Digest,
) -> std::result::Result<Statement, String> {
    let v: serde_json::Value =
        serde_json::from_slice(bundle).map_err(|e| format!("the bundle is not JSON: {e}"))?;
    let env = v
        .get("dsseEnvelope")
        .ok_or("the bundle has no dsseEnvelope (message-signature bundles are not read)")?;
    open_envelope(&Envelope::from_value(env)?, key, digest)
}

/// Whether `bundle` holds exactly `statement` signed with `key` (see [`Envelope::holds`]).
pub fn holds(bundle: &[u8], key: &PublicKey, statement: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bundle)
        .ok()
        .and_then(|v| Envelope::from_value(v.get("dsseEnvelope")?).ok())
        .is_some_and(|env| env.holds(key, statement))
}

/// Checks a signature bundle against `key` and `digest`; the reason when it does not verify.
pub fn check(
    bundle: &[u8],
    key: &PublicKey,
    digest: &Digest,
) -> std::result::Result<Statement, String> {
    let st = open(bundle, key, digest)?;
    if st.predicate_type != PREDICATE_TYPE {
        return Err(format!(
            "the statement's predicateType is {}, not {PREDICATE_TYPE}",
            st.predicate_type
        ));
    }
    Ok(st)
}

/// `org.opencontainers.image.created` of new referrers: SOURCE_DATE_EPOCH when set (builds
/// that want the same manifest bytes), else now.
fn created() -> String {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        });
    opship_core::image::oci::rfc3339(secs)
}

/// What [`prepare`] found: the referrers, the subject, and an existing equal bundle.
#[derive(Debug, Clone)]
pub struct Prepared {
    listing: Listing,
    subject_media: String,
    subject_size: usize,
    /// Where an existing bundle with the same statement, verifying with the key, is (then
    /// nothing is added).
    pub existing: Option<String>,
}

/// Reads and checks everything an attach needs, writing nothing: the image manifest, the
/// referrers (a fallback tag that is no index is an error here), and whether a bundle with the
/// same statement that verifies with `key` is there already (cosign's rule for not signing
/// twice).
pub async fn prepare(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    key: Option<&PublicKey>,
    statement: &[u8],
) -> Result<Prepared> {
    let image = registry
        .manifest_if_any(&Reference::with_digest(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            digest.to_string(),
        ))
        .await?
        .ok_or_else(|| {
            Error::Input(format!(
                "{}@{digest}: no such manifest",
                reference.repository()
            ))
        })?;
    let listing = referrers::list(registry, reference, digest, true).await?;
    referrers::check_writable(&listing)?;
    let mut existing = None;
    // Keyless signatures are never equal to one there (each has its own certificate): cosign
    // 3 adds a bundle on every sign, and so does opship without a key.
    let entries = if key.is_some() {
        &listing.entries[..]
    } else {
        &[]
    };
    for e in entries {
        let Ok(m) = &e.manifest else { continue };
        let Some(layer) = m.layers.iter().find(|l| l.media_type == BUNDLE_MEDIA) else {
            continue;
        };
        let Ok(bytes) = registry.blob(&e.reference, layer).await else {
            continue;
        };
        if key.is_some_and(|key| holds(&bytes, key, statement)) {
            existing = Some(e.location.clone());
            break;
        }
    }
    Ok(Prepared {
        listing,
        subject_media: if image.media_type.is_empty() {
            media::OCI_MANIFEST.to_owned()
        } else {
            image.media_type
        },
        subject_size: image.bytes.len(),
        existing,
    })
}

/// Signs `statement` (of `predicate_type`) into a bundle and attaches it as a referrer of
/// `digest`, after [`prepare`]; nothing is written when `prepared.existing` is set. Returns
/// where the bundle is.
pub async fn attach(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    key: &PrivateKey,
    statement: &[u8],
    predicate_type: &str,
    prepared: &Prepared,
) -> Result<String> {
    if let Some(e) = &prepared.existing {
        return Ok(format!("{e} (kept: the same statement is signed there)"));
    }
    let env = Envelope::sign(PAYLOAD_TYPE, statement, key)?;
    let bundle = wrap(&env, key.public())?;
    attach_bundle(
        registry,
        reference,
        digest,
        bundle,
        predicate_type,
        prepared,
    )
    .await
}

/// Attaches signed `bundle` bytes (of `predicate_type`) as a referrer of `digest`, after
/// [`prepare`]; nothing is written when `prepared.existing` is set.
pub async fn attach_bundle(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    bundle: Vec<u8>,
    predicate_type: &str,
    prepared: &Prepared,
) -> Result<String> {
    if let Some(e) = &prepared.existing {
        return Ok(format!("{e} (kept: the same statement is signed there)"));
    }
    let empty = b"{}".to_vec();
    let annotations = json!({
        "dev.sigstore.bundle.content": "dsse-envelope",
        "dev.sigstore.bundle.predicateType": predicate_type,
        "org.opencontainers.image.created": created(),
    });
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": media::OCI_MANIFEST,
        "artifactType": BUNDLE_MEDIA,
        "config": {"mediaType": EMPTY_MEDIA, "digest": Digest::of(&empty), "size": 2},
        "layers": [{"mediaType": BUNDLE_MEDIA, "digest": Digest::of(&bundle), "size": bundle.len()}],
        "subject": {"mediaType": prepared.subject_media, "digest": digest, "size": prepared.subject_size},
        "annotations": annotations,
    });
    let manifest = serde_json::to_vec(&manifest)
        .map_err(|e| Error::Signature(format!("referrer manifest JSON: {e}")))?;
    let new = NewReferrer {
        blobs: vec![empty, bundle],
        manifest,
        artifact_type: BUNDLE_MEDIA.to_owned(),
        annotations,
    };
    referrers::add(registry, reference, digest, &prepared.listing, &new).await
}

/// A bundle found among the referrers of an image.
#[derive(Debug, Clone)]
pub struct Found {
    /// `repo@sha256:…` of the referrer manifest.
    pub location: String,
    /// The opened statement, or why the bundle does not verify.
    pub outcome: std::result::Result<Statement, String>,
}

/// Opens a bundle with a key or keylessly (the whole Sigstore verification: certificate,
/// log entries, timestamps, identity).
pub fn open_with(
    bundle: &[u8],
    verifier: &Verifier,
    digest: &Digest,
) -> std::result::Result<Statement, String> {
    match verifier {
        Verifier::Key(key) => open(bundle, key, digest),
        Verifier::Keyless(k) => {
            let sha = sha256_bytes(digest)
                .ok_or_else(|| format!("{digest}: keyless bundles name sha256 digests"))?;
            let v = crate::cosign::sigstore::verify_bundle(
                bundle,
                crate::cosign::sigstore::Artifact::Sha256(&sha),
                &k.signer(),
                &k.root,
                k.options,
            )?;
            let payload = v
                .statement
                .ok_or("the bundle is a message signature, not a DSSE statement")?;
            let mut st = Statement::parse(&payload)?;
            st.signer = v.signer;
            Ok(st)
        }
    }
}

/// Every Sigstore bundle among the referrers of `digest` (judged by the referrer manifest's
/// layers, whatever the index entry says), opened with `key`; other referrers are returned in
/// `others` for the caller to judge (cosign 2's `oci-1-1` simple-signing and DSSE referrers).
pub async fn find(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    key: &Verifier,
) -> Result<(Listing, Vec<Found>)> {
    let listing = referrers::list(registry, reference, digest, true).await?;
    let mut found = Vec::new();
    for e in &listing.entries {
        let Ok(m) = &e.manifest else {
            continue;
        };
        let Some(layer) = m.layers.iter().find(|l| l.media_type == BUNDLE_MEDIA) else {
            continue;
        };
        let outcome = match registry.blob(&e.reference, layer).await {
            Ok(bytes) => open_with(&bytes, key, digest),
            Err(err) => Err(format!("the bundle blob cannot be fetched: {err}")),
        };
        found.push(Found {
            location: e.location.clone(),
            outcome,
        });
    }
    Ok((listing, found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_and_check() {
        let key = PrivateKey::generate().unwrap();
        let other = PrivateKey::generate().unwrap();
        let d = Digest::of(b"image");
        let mut notes = BTreeMap::new();
        notes.insert("release".to_owned(), "1".to_owned());
        let b = build(&d, &key, &notes).unwrap();
        let st = check(&b, key.public(), &d).unwrap();
        assert_eq!(st.annotations(&d)["release"], "1");
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

    #[test]
    fn statement_is_cosign3s() {
        let d = Digest::parse(
            "sha256:8dce32fda5b66aea92206575ca89f3885ba56ccb561f3fe936dd7d21abce3947",
        )
        .unwrap();
        let mut notes = BTreeMap::new();
        notes.insert("foo".to_owned(), "bar".to_owned());
        // The statement cosign 3.1.1 signed for `cosign sign -a foo=bar`.
        assert_eq!(
            String::from_utf8(statement(&d, &notes)).unwrap(),
            r#"{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":"8dce32fda5b66aea92206575ca89f3885ba56ccb561f3fe936dd7d21abce3947"},"annotations":{"foo":"bar"}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}"#
        );
    }
}

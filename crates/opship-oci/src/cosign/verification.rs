//! Verification of cosign signatures: for each signature layer, the signature over the exact
//! payload bytes with the public key, then the payload's claims: type, digest (must be the
//! image's), identity (the repository, unless told otherwise) and the required annotations.
//! Every rejected signature gets its reason; the image counts as verified when at least one
//! signature passes, as `cosign verify` does.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use opship_core::image::layout::Layout;
use opship_core::image::oci::{Descriptor, Digest, annotation};

use super::bundle;
use super::key::PublicKey;
use super::manifest::{self, SIGNATURE_ANNOTATION, SIMPLESIGNING, Signatures};
use super::payload::{self, Claims};
use crate::error::{Error, Result};
use crate::registry::{Reference, Registry};

/// Which `docker-reference` a signature must name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// This repository (`registry/path`; a tag or digest in the payload's reference is
    /// ignored, so skopeo's `repo:tag` identities match too).
    Repository(String),
    /// Any identity (what `cosign verify` checks: it ignores docker-reference).
    Any,
}

/// How signatures are checked: with a public key, or keyless (a Fulcio certificate naming
/// the expected identity, against a Sigstore trusted root).
#[derive(Debug, Clone)]
pub enum Verifier {
    /// `--key`.
    Key(PublicKey),
    /// Identity options and `--trusted-root`.
    Keyless(Box<Keyless>),
}

/// Keyless verification's inputs.
#[derive(Debug, Clone)]
pub struct Keyless {
    /// Who must have signed.
    pub policy: crate::cosign::sigstore::IdentityPolicy,
    /// The trusted root (public-good unless given).
    pub root: crate::cosign::sigstore::TrustedRoot,
    /// Checks skipped on request.
    pub options: crate::cosign::sigstore::Options,
}

impl Verifier {
    /// A key verifier with `key`, else a keyless one (identity and issuer required, as cosign
    /// requires them) against `trusted_root` or the public-good root.
    pub fn new(
        key: Option<&Path>,
        policy: crate::cosign::sigstore::IdentityPolicy,
        trusted_root: Option<&Path>,
        options: crate::cosign::sigstore::Options,
    ) -> Result<Self> {
        if let Some(k) = key {
            return Ok(Verifier::Key(PublicKey::read(k)?));
        }
        if policy.subject.is_none() || policy.issuer.is_none() {
            return Err(Error::Input(
                "pass --key, or verify keylessly with --certificate-identity (or -regexp) and \
                 --certificate-oidc-issuer (or -regexp), as cosign requires"
                    .into(),
            ));
        }
        let root = match trusted_root {
            Some(p) => crate::cosign::sigstore::TrustedRoot::read(p)?,
            None => crate::cosign::sigstore::TrustedRoot::public_good(),
        };
        Ok(Verifier::Keyless(Box::new(Keyless {
            policy,
            root,
            options,
        })))
    }

    /// The checks skipped on request, for the caller to say.
    pub fn skipped(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if let Verifier::Keyless(k) = self {
            if k.options.ignore_tlog {
                out.push("transparency log (--insecure-ignore-tlog)");
            }
            if k.options.ignore_sct {
                out.push("certificate transparency SCT (--insecure-ignore-sct)");
            }
        }
        out
    }
}

impl Keyless {
    /// The signer for the verification core.
    pub fn signer(&self) -> crate::cosign::sigstore::Signer {
        crate::cosign::sigstore::Signer::Identity(self.policy.clone())
    }
}

/// The SHA-256 bytes of an image digest (for DSSE subjects); `None` for other algorithms.
pub fn sha256_bytes(digest: &Digest) -> Option<[u8; 32]> {
    let h = digest.hex();
    if !digest.as_str().starts_with("sha256:") || h.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// What a signature must satisfy besides its cryptography.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Identity check.
    pub identity: Identity,
    /// Annotations the payload's `optional` must contain with these (string) values.
    pub annotations: BTreeMap<String, String>,
}

/// One signature as found: its payload and base64 signature.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Where it was found, for messages (`<repo>:sha256-….sig layer 2`).
    pub source: String,
    /// The payload bytes (the layer blob), or why they could not be read.
    pub payload: std::result::Result<Vec<u8>, String>,
    /// The `dev.cosignproject.cosign/signature` annotation.
    pub signature: Option<String>,
    /// The layer's annotations (keyless: certificate, Rekor bundle, timestamp).
    pub annotations: BTreeMap<String, String>,
}

/// The verdict on one signature.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Where it was found.
    pub source: String,
    /// The verified claims, or why the signature was rejected.
    pub outcome: std::result::Result<Claims, String>,
}

/// The verdicts on all signatures of an image.
#[derive(Debug, Clone)]
pub struct Report {
    /// The image digest checked.
    pub digest: Digest,
    /// Where the signatures were looked for.
    pub location: String,
    /// One entry per signature found (empty: none found).
    pub checked: Vec<Checked>,
}

impl Report {
    /// The claims of the signatures that verified.
    pub fn verified(&self) -> Vec<&Claims> {
        self.checked
            .iter()
            .filter_map(|c| c.outcome.as_ref().ok())
            .collect()
    }
}

/// `registry/path` of a docker reference, without tag or digest; Docker Hub spelled
/// `index.docker.io` as go-containerregistry does.
pub fn repository_of(reference: &str) -> String {
    let no_digest = reference.split('@').next().unwrap_or(reference);
    let no_tag = match no_digest.rsplit_once(':') {
        Some((head, tail)) if !tail.contains('/') => head,
        _ => no_digest,
    };
    match no_tag.split_once('/') {
        Some(("docker.io", rest)) => format!("index.docker.io/{rest}"),
        _ => no_tag.to_owned(),
    }
}

/// The keyless material of cosign 2's annotations on a layer.
pub fn cosign2_material(
    annotations: &BTreeMap<String, String>,
) -> std::result::Result<crate::cosign::sigstore::verify::Cosign2<'_>, String> {
    use crate::cosign::keyless::{
        CERTIFICATE_ANNOTATION, REKOR_BUNDLE_ANNOTATION, TIMESTAMP_ANNOTATION,
    };
    Ok(crate::cosign::sigstore::verify::Cosign2 {
        certificate: annotations.get(CERTIFICATE_ANNOTATION).ok_or_else(|| {
            format!("no `{CERTIFICATE_ANNOTATION}` annotation (not a keyless signature)")
        })?,
        rekor_bundle: annotations.get(REKOR_BUNDLE_ANNOTATION).map(String::as_str),
        timestamp: annotations.get(TIMESTAMP_ANNOTATION).map(String::as_str),
    })
}

/// Checks one signature.
pub fn check(
    verifier: &Verifier,
    digest: &Digest,
    policy: &Policy,
    candidate: &Candidate,
) -> std::result::Result<Claims, String> {
    let payload = candidate.payload.as_ref().map_err(Clone::clone)?;
    let b64 = candidate
        .signature
        .as_deref()
        .ok_or_else(|| format!("no `{SIGNATURE_ANNOTATION}` annotation"))?;
    let der = STANDARD
        .decode(b64.trim())
        .map_err(|e| format!("the signature annotation is not base64 ({e})"))?;
    let signer = match verifier {
        Verifier::Key(key) => {
            if !key.verifies(&der, payload) {
                return Err(
                    "the signature does not verify with the public key (another key signed it, \
                     or the payload or signature was altered or truncated)"
                        .into(),
                );
            }
            None
        }
        Verifier::Keyless(k) => {
            use crate::cosign::sigstore::Artifact;
            use crate::cosign::sigstore::verify::{Cosign2Content, verify_cosign2};
            verify_cosign2(
                cosign2_material(&candidate.annotations)?,
                Cosign2Content::Message { signature: &der },
                Artifact::Bytes(payload),
                &k.signer(),
                &k.root,
                k.options,
            )?
            .signer
        }
    };
    let mut claims = payload::parse(payload)?;
    claims.signer = signer;
    if claims.kind != payload::TYPE {
        return Err(format!(
            "the payload's critical.type is `{}`, not `{}`",
            claims.kind,
            payload::TYPE
        ));
    }
    if claims.digest != digest.as_str() {
        return Err(format!(
            "the payload signs {}, not this image ({digest})",
            claims.digest
        ));
    }
    if let Identity::Repository(expected) = &policy.identity {
        let signed = repository_of(&claims.docker_reference);
        if signed != repository_of(expected) {
            return Err(format!(
                "the payload's identity is `{}`, not the repository `{}` (pass --identity {signed} \
                 if that repository is trusted here, or --any-identity)",
                claims.docker_reference,
                repository_of(expected)
            ));
        }
    }
    for (k, v) in &policy.annotations {
        match claims.optional.get(k) {
            Some(serde_json::Value::String(s)) if s == v => {}
            Some(other) => {
                return Err(format!("annotation `{k}` is {other}, not \"{v}\""));
            }
            None => return Err(format!("the payload has no annotation `{k}`")),
        }
    }
    Ok(claims)
}

/// The largest signature payload read. A simple-signing payload is a few hundred bytes; the
/// bound keeps a manifest of many large layers from being read at all.
const MAX_PAYLOAD: u64 = 16 * 1024 * 1024;

/// Why the layer `l` is no signature payload to read, if it is not one.
fn unreadable(l: &Descriptor) -> Option<String> {
    if l.media_type != SIMPLESIGNING {
        return Some(format!(
            "layer media type `{}` is not {SIMPLESIGNING}",
            l.media_type
        ));
    }
    (l.size > MAX_PAYLOAD).then(|| {
        format!(
            "the payload layer declares {} bytes; a signature payload is at most {MAX_PAYLOAD}",
            l.size
        )
    })
}

/// Checks layer `i` of `location` with its `payload`. One layer at a time: a payload is
/// dropped once judged, so many layers never sit in memory together.
fn judge_one(
    key: &Verifier,
    digest: &Digest,
    policy: &Policy,
    location: &str,
    i: usize,
    l: &Descriptor,
    payload: std::result::Result<Vec<u8>, String>,
) -> Checked {
    let c = Candidate {
        source: format!("{location} layer {}", i + 1),
        payload,
        signature: l.annotations.get(SIGNATURE_ANNOTATION).cloned(),
        annotations: l.annotations.clone(),
    };
    Checked {
        outcome: check(key, digest, policy, &c),
        source: c.source,
    }
}

/// Every simple-signing layer of `sigs` fetched from `at` and judged, one after another.
async fn judge_remote(
    registry: &Registry,
    at: &Reference,
    key: &Verifier,
    digest: &Digest,
    policy: &Policy,
    location: &str,
    sigs: &Signatures,
) -> Vec<Checked> {
    let mut out = Vec::with_capacity(sigs.layers.len());
    for (i, l) in sigs.layers.iter().enumerate() {
        let payload = match unreadable(l) {
            Some(why) => Err(why),
            None => registry
                .blob(at, l)
                .await
                .map_err(|e| format!("the payload blob cannot be fetched: {e}")),
        };
        out.push(judge_one(key, digest, policy, location, i, l, payload));
    }
    out
}

/// Verifies the signatures of the image `reference` in its registry (`repo:sha256-<hex>.sig`).
pub async fn verify_remote(
    registry: &Registry,
    reference: &Reference,
    key: &PublicKey,
    policy: &Policy,
) -> Result<Report> {
    verify_remote_with(registry, reference, &Verifier::Key(key.clone()), policy).await
}

/// [`verify_remote`] with a key or keylessly.
pub async fn verify_remote_with(
    registry: &Registry,
    reference: &Reference,
    key: &Verifier,
    policy: &Policy,
) -> Result<Report> {
    let digest = registry.resolve(reference).await?;
    if let Some(d) = reference.digest()
        && d != digest.as_str()
    {
        return Err(Error::DigestMismatch {
            registry: registry.host().to_owned(),
            what: format!("manifest {}", reference.whole()),
            expected: d.to_owned(),
            actual: digest.to_string(),
        });
    }
    let sig_ref = Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        manifest::tag(&digest),
    );
    let location = sig_ref.whole();
    let sigs = Signatures::fetch(registry, &sig_ref).await?;
    let mut checked =
        judge_remote(registry, &sig_ref, key, &digest, policy, &location, &sigs).await;
    checked.extend(judge_referrers(registry, reference, &digest, key, policy).await?);
    Ok(Report {
        digest,
        location,
        checked,
    })
}

/// The signatures among the referrers of `digest` (referrers API or fallback tag), each
/// judged by its manifest's layers: Sigstore bundles (cosign 3, `--bundle-format`) with the
/// annotations in the statement's subject, and simple-signing layers (cosign 2's
/// `--registry-referrers-mode=oci-1-1`) like `.sig` layers. Attestations are left to
/// `verify-attestation`; anything else is reported as not a signature.
async fn judge_referrers(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    key: &Verifier,
    policy: &Policy,
) -> Result<Vec<Checked>> {
    let (listing, bundles) = bundle::find(registry, reference, digest, key).await?;
    let mut out = Vec::new();
    if let Some(p) = &listing.problem {
        out.push(Checked {
            source: listing.location.clone(),
            outcome: Err(p.clone()),
        });
    }
    for found in bundles {
        if let Ok(st) = &found.outcome
            && st.predicate_type != bundle::PREDICATE_TYPE
        {
            continue; // an attestation
        }
        let outcome = found.outcome.and_then(|st| {
            let notes = st.annotations(digest);
            for (k, v) in &policy.annotations {
                match notes.get(k) {
                    Some(serde_json::Value::String(s)) if s == v => {}
                    Some(other) => return Err(format!("annotation `{k}` is {other}, not \"{v}\"")),
                    None => {
                        return Err(format!("the statement's subject has no annotation `{k}`"));
                    }
                }
            }
            Ok(Claims {
                docker_reference: String::new(),
                digest: digest.to_string(),
                kind: bundle::PREDICATE_TYPE.to_owned(),
                optional: notes,
                json: st.json,
                signer: st.signer,
            })
        });
        out.push(Checked {
            source: format!("Sigstore bundle {}", found.location),
            outcome,
        });
    }
    for e in &listing.entries {
        let m = match &e.manifest {
            Ok(m) => m,
            Err(reason) => {
                out.push(Checked {
                    source: format!("referrer {}", e.location),
                    outcome: Err(reason.clone()),
                });
                continue;
            }
        };
        let kinds: Vec<&str> = m.layers.iter().map(|l| l.media_type.as_str()).collect();
        if kinds
            .iter()
            .any(|k| *k == bundle::BUNDLE_MEDIA || *k == super::dsse::ENVELOPE_MEDIA)
        {
            continue; // judged above, or an attestation
        }
        if !kinds.contains(&SIMPLESIGNING) {
            out.push(Checked {
                source: format!("referrer {}", e.location),
                outcome: Err(format!(
                    "not a cosign signature (artifact type `{}`, layers {kinds:?})",
                    m.artifact_type
                )),
            });
            continue;
        }
        let sigs = Signatures {
            layers: m.layers.clone(),
        };
        let location = format!("referrer {}", e.location);
        out.extend(
            judge_remote(
                registry,
                &e.reference,
                key,
                digest,
                policy,
                &location,
                &sigs,
            )
            .await,
        );
    }
    Ok(out)
}

/// Digest of the image tagged `tag` in a layout.
pub fn layout_digest(layout: &Layout, tag: &str) -> Result<Digest> {
    let index = layout.index()?;
    index
        .manifests
        .iter()
        .find(|d| d.annotations.get(annotation::REF_NAME).map(String::as_str) == Some(tag))
        .map(|d| d.digest.clone())
        .ok_or_else(|| {
            Error::Input(format!(
                "{}: no image tagged `{tag}`",
                opship_core::paths::show(&layout.dir().join("index.json"))
            ))
        })
}

/// The signatures of `digest` stored in a layout (tag `sha256-<hex>.sig`), if any.
pub fn layout_signatures(layout: &Layout, digest: &Digest) -> Result<Option<Signatures>> {
    let tag = manifest::tag(digest);
    let index = layout.index()?;
    let Some(desc) = index
        .manifests
        .iter()
        .find(|d| d.annotations.get(annotation::REF_NAME) == Some(&tag))
    else {
        return Ok(None);
    };
    let bytes = layout.read_blob(desc)?;
    let what = format!("{}:{tag}", opship_core::paths::show(layout.dir()));
    Ok(Some(Signatures::parse(&bytes, &what)?))
}

/// Verifies the signatures stored in an OCI layout for the image tagged `tag`.
pub fn verify_layout(dir: &Path, tag: &str, key: &PublicKey, policy: &Policy) -> Result<Report> {
    verify_layout_with(dir, tag, &Verifier::Key(key.clone()), policy)
}

/// [`verify_layout`] with a key or keylessly.
pub fn verify_layout_with(
    dir: &Path,
    tag: &str,
    key: &Verifier,
    policy: &Policy,
) -> Result<Report> {
    let layout = Layout::new(dir);
    let digest = layout_digest(&layout, tag)?;
    let location = format!(
        "{}:{}",
        opship_core::paths::show(dir),
        manifest::tag(&digest)
    );
    let Some(sigs) = layout_signatures(&layout, &digest)? else {
        return Ok(Report {
            digest,
            location,
            checked: Vec::new(),
        });
    };
    let checked = sigs
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let payload = match unreadable(l) {
                Some(why) => Err(why),
                None => layout.read_blob(l).map_err(|e| e.to_string()),
            };
            judge_one(key, &digest, policy, &location, i, l, payload)
        })
        .collect();
    Ok(Report {
        digest,
        location,
        checked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories() {
        assert_eq!(repository_of("127.0.0.1:5000/a/b:v1"), "127.0.0.1:5000/a/b");
        assert_eq!(repository_of("127.0.0.1:5000/a/b"), "127.0.0.1:5000/a/b");
        assert_eq!(
            repository_of("127.0.0.1:5000/a/b@sha256:00"),
            "127.0.0.1:5000/a/b"
        );
        assert_eq!(
            repository_of("docker.io/library/x:1"),
            "index.docker.io/library/x"
        );
    }
}

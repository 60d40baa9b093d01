//! Attestations in cosign's formats (`cosign attest`, `cosign verify-attestation`): a predicate
//! (SLSA provenance, SPDX or CycloneDX SBOM, custom) in an in-toto statement naming the image,
//! signed as a DSSE envelope, stored either as a layer of the `sha256-<hex>.att` manifest
//! (cosign 2's default: media type `application/vnd.dsse.envelope.v1+json`, annotation
//! `predicateType`) or as a Sigstore bundle referrer (cosign 3's default, `--bundle-format`).
//! Verification reads both, and cosign 2's `oci-1-1` DSSE referrers.

use std::collections::BTreeMap;
use std::path::Path;

use opship_core::image::oci::{Descriptor, Digest};
use serde::Serialize;
use serde_json::value::RawValue;

use super::bundle::{self, Statement};
use super::dsse::{ENVELOPE_MEDIA, Envelope, PAYLOAD_TYPE};
use super::key::{PrivateKey, PublicKey};
use super::manifest::{SIGNATURE_ANNOTATION, Signatures};
use super::signing::identity_of;
use super::verification::{Verifier, cosign2_material, sha256_bytes};
use crate::error::{Error, Result};
use crate::registry::{Reference, Registry};

/// The in-toto statement type of opship's attestations.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// Layer annotation naming the predicate type in a `.att` manifest.
pub const PREDICATE_ANNOTATION: &str = "predicateType";

/// cosign's `--type` names and their predicate type URIs; any other `--type` containing `://`
/// is taken as the URI itself (as cosign does).
pub const TYPES: [(&str, &str); 10] = [
    ("slsaprovenance", "https://slsa.dev/provenance/v0.2"),
    ("slsaprovenance02", "https://slsa.dev/provenance/v0.2"),
    ("slsaprovenance1", "https://slsa.dev/provenance/v1"),
    ("link", "https://in-toto.io/Link/v1"),
    ("spdx", "https://spdx.dev/Document"),
    ("spdxjson", "https://spdx.dev/Document"),
    ("cyclonedx", "https://cyclonedx.org/bom"),
    ("vuln", "https://cosign.sigstore.dev/attestation/vuln/v1"),
    ("openvex", "https://openvex.dev/ns"),
    ("custom", "https://cosign.sigstore.dev/attestation/v1"),
];

/// The predicate type URI of a `--type` value.
pub fn predicate_type(name: &str) -> Result<String> {
    if let Some((_, uri)) = TYPES.iter().find(|(n, _)| *n == name) {
        return Ok((*uri).to_owned());
    }
    if name.contains("://") {
        return Ok(name.to_owned());
    }
    Err(Error::Input(format!(
        "--type `{name}`: expected one of {} or a predicate type URI",
        TYPES.map(|(n, _)| n).join(", ")
    )))
}

/// The `.att` tag of `digest`: `sha256-<hex>.att`.
pub fn tag(digest: &Digest) -> String {
    format!("sha256-{}.att", digest.hex())
}

/// A predicate: its type URI and JSON.
#[derive(Debug, Clone)]
pub struct Predicate {
    /// The predicate type URI.
    pub type_uri: String,
    /// The predicate as compact JSON text (keys in the order of its source). Kept as text, not
    /// a `Value` tree: a tree of a large SBOM costs several times its size in memory.
    pub json: Box<RawValue>,
}

impl PartialEq for Predicate {
    fn eq(&self, other: &Self) -> bool {
        self.type_uri == other.type_uri && self.json.get() == other.json.get()
    }
}

impl Predicate {
    /// A predicate from JSON bytes for the `--type` `kind`; `what` names the source in errors.
    pub fn from_bytes(bytes: &[u8], kind: &str, what: &str) -> Result<Self> {
        let type_uri = predicate_type(kind)?;
        let not_json = |e: serde_json::Error| {
            Error::Input(format!(
                "{what}: the predicate is not JSON: {e} (line {}, column {})",
                e.line(),
                e.column()
            ))
        };
        // Checked and compacted in one streaming pass, as cosign's statement carries it.
        let mut compact = Vec::with_capacity(bytes.len().min(1 << 20));
        let mut de = serde_json::Deserializer::from_slice(bytes);
        serde_transcode::transcode(&mut de, &mut serde_json::Serializer::new(&mut compact))
            .map_err(not_json)?;
        de.end().map_err(not_json)?;
        if compact.first() != Some(&b'{') {
            return Err(Error::Input(format!(
                "{what}: the predicate is not a JSON object"
            )));
        }
        let text = String::from_utf8(compact)
            .map_err(|e| Error::Input(format!("{what}: the predicate is not UTF-8: {e}")))?;
        let json = RawValue::from_string(text).map_err(not_json)?;
        Ok(Predicate { type_uri, json })
    }

    /// A predicate built in memory (opship's own provenance).
    pub fn from_value(type_uri: String, value: &serde_json::Value) -> Self {
        // Serializing a `Value` cannot fail (its keys are strings).
        let json = serde_json::value::to_raw_value(value).unwrap_or_default();
        Predicate { type_uri, json }
    }

    /// sha256 of the predicate JSON as signed (its compact text).
    pub fn digest(&self) -> Digest {
        Digest::of(self.json.get().as_bytes())
    }

    /// Reads a predicate file (at most 48 MiB, a regular file).
    pub fn read(path: &Path, kind: &str) -> Result<Self> {
        let bytes = opship_core::input::read(path, opship_core::input::Kind::Predicate)?;
        Self::from_bytes(&bytes, kind, &opship_core::paths::show(path).to_string())
    }
}

/// The statement of `predicate` about the image `digest` named `name` (its repository).
pub fn statement(name: &str, digest: &Digest, predicate: &Predicate) -> Vec<u8> {
    // A struct, not `json!`: the predicate stays text instead of becoming a tree again.
    #[derive(Serialize)]
    struct Subject<'a> {
        name: &'a str,
        digest: BTreeMap<&'static str, &'a str>,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        #[serde(rename = "_type")]
        kind: &'a str,
        subject: [Subject<'a>; 1],
        #[serde(rename = "predicateType")]
        predicate_type: &'a str,
        predicate: &'a RawValue,
    }
    let st = Doc {
        kind: STATEMENT_TYPE,
        subject: [Subject {
            name,
            digest: BTreeMap::from([("sha256", digest.hex())]),
        }],
        predicate_type: &predicate.type_uri,
        predicate: &predicate.json,
    };
    serde_json::to_vec(&st).unwrap_or_default()
}

/// Where an attestation is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A layer of the `sha256-<hex>.att` manifest (cosign 2's default).
    Att,
    /// A Sigstore bundle referrer (cosign 3's default).
    Bundle,
    /// Both, signed separately: cosign 2 reads only the `.att`, and cosign 3 reads only the
    /// bundle referrers once the image has any (a cosign 3 signature, before or after).
    Both,
}

/// The format of an attestation nobody chose one for. With a key: both, always: a key
/// signature is a `.sig` (cosign 2 readers, skopeo) unless asked otherwise, and cosign 3,
/// which reads only bundles once the image has one, may sign before or after. Keylessly, from
/// what the image already has: a `.sig` or `.att` → both; otherwise a bundle (cosign 3's
/// format throughout, as keyless `sign` writes).
pub async fn auto_format(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    keyless: bool,
) -> Result<Format> {
    use super::signing::{Format as Sig, existing_format};
    if !keyless {
        return Ok(Format::Both);
    }
    Ok(match existing_format(registry, reference, digest).await? {
        Some(Sig::Cosign2) => Format::Both,
        Some(Sig::Cosign3) | None => Format::Bundle,
    })
}

/// One report of the two writes of [`Format::Both`]: both places, added when either was.
fn both(att: AttestReport, bundle: AttestReport) -> AttestReport {
    AttestReport {
        added: att.added || bundle.added,
        also: Some(bundle.location),
        ..att
    }
}

/// What an attest did.
#[derive(Debug, Clone)]
pub struct AttestReport {
    /// The attested image.
    pub digest: Digest,
    /// Where the attestation is (with [`Format::Both`], the `.att`).
    pub location: String,
    /// With [`Format::Both`], the bundle referrer's place.
    pub also: Option<String>,
    /// Whether one was added (false: the same statement, verifying with the key, was there).
    pub added: bool,
    /// sha256 of the predicate JSON as signed.
    pub predicate_digest: Digest,
}

/// The `.att` tag of `digest` in the repository of `reference`.
fn att_reference(reference: &Reference, digest: &Digest) -> Reference {
    Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        tag(digest),
    )
}

/// Appends the envelope `env_bytes` as a layer (with `notes`, e.g. keyless certificate
/// annotations) to the `.att` manifest `atts` and writes it: blobs first, then the manifest.
async fn add_att_layer(
    registry: &Registry,
    att_ref: &Reference,
    mut atts: Signatures,
    env_bytes: &[u8],
    predicate_type: &str,
    notes: BTreeMap<String, String>,
) -> Result<()> {
    let mut layer = Descriptor::of(ENVELOPE_MEDIA, env_bytes);
    layer
        .annotations
        .insert(SIGNATURE_ANNOTATION.to_owned(), String::new());
    layer
        .annotations
        .insert(PREDICATE_ANNOTATION.to_owned(), predicate_type.to_owned());
    layer.annotations.extend(notes);
    atts.layers.push(layer);
    registry.upload_blob(att_ref, env_bytes).await?;
    atts.put(registry, att_ref).await?;
    Ok(())
}

/// Attests `digest` (in the repository of `reference`) with `predicate`, signed with `key`, in
/// `format`. Reads and checks first (the `.att` manifest, or the referrers and their fallback
/// tag), then writes; the same statement that verifies with the key is not added twice.
pub async fn attest(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    key: &PrivateKey,
    predicate: &Predicate,
    format: Format,
) -> Result<AttestReport> {
    if format == Format::Both {
        let att = attest_in(registry, reference, digest, key, predicate, Format::Att).await?;
        let bundle = attest_in(registry, reference, digest, key, predicate, Format::Bundle).await?;
        return Ok(both(att, bundle));
    }
    attest_in(registry, reference, digest, key, predicate, format).await
}

/// [`attest`] in one place (`Att` or `Bundle`).
async fn attest_in(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    key: &PrivateKey,
    predicate: &Predicate,
    format: Format,
) -> Result<AttestReport> {
    let body = statement(&identity_of(reference), digest, predicate);
    let predicate_digest = predicate.digest();
    if format == Format::Bundle {
        let prepared =
            bundle::prepare(registry, reference, digest, Some(key.public()), &body).await?;
        let added = prepared.existing.is_none();
        let location = bundle::attach(
            registry,
            reference,
            digest,
            key,
            &body,
            &predicate.type_uri,
            &prepared,
        )
        .await?;
        return Ok(AttestReport {
            digest: digest.clone(),
            also: None,
            location,
            added,
            predicate_digest,
        });
    }
    let att_ref = att_reference(reference, digest);
    let location = att_ref.whole();
    let atts = Signatures::fetch(registry, &att_ref).await?;
    for l in atts
        .layers
        .iter()
        .filter(|l| l.media_type == ENVELOPE_MEDIA)
    {
        let Ok(bytes) = registry.blob(&att_ref, l).await else {
            continue;
        };
        let same = Envelope::parse(&bytes).is_ok_and(|env| env.holds(key.public(), &body));
        if same {
            return Ok(AttestReport {
                digest: digest.clone(),
                also: None,
                location: format!("{location} (kept: the same statement is signed there)"),
                added: false,
                predicate_digest,
            });
        }
    }
    let env = Envelope::sign(PAYLOAD_TYPE, &body, key)?;
    let env_bytes = serde_json::to_vec(&env.to_value())
        .map_err(|e| Error::Signature(format!("envelope JSON: {e}")))?;
    add_att_layer(
        registry,
        &att_ref,
        atts,
        &env_bytes,
        &predicate.type_uri,
        BTreeMap::new(),
    )
    .await?;
    Ok(AttestReport {
        digest: digest.clone(),
        also: None,
        location,
        added: true,
        predicate_digest,
    })
}

/// The verdict on one attestation.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Where it was found.
    pub source: String,
    /// The verified statement, or why it was rejected.
    pub outcome: std::result::Result<Statement, String>,
}

/// The verdicts on all attestations of an image.
#[derive(Debug, Clone)]
pub struct Report {
    /// The image digest.
    pub digest: Digest,
    /// Where attestations were looked for.
    pub location: String,
    /// One entry per attestation found.
    pub checked: Vec<Checked>,
}

fn typed(
    outcome: std::result::Result<Statement, String>,
    wanted: Option<&str>,
) -> std::result::Result<Statement, String> {
    let st = outcome?;
    match wanted {
        Some(t) if st.predicate_type != t => Err(format!(
            "the predicate type is {}, not {t}",
            st.predicate_type
        )),
        _ => Ok(st),
    }
}

/// Opens a DSSE envelope layer with a key, or keylessly with the layer's cosign 2
/// annotations.
fn open_layer(
    bytes: &[u8],
    annotations: &std::collections::BTreeMap<String, String>,
    verifier: &Verifier,
    digest: &Digest,
) -> std::result::Result<Statement, String> {
    let env = Envelope::parse(bytes)?;
    match verifier {
        Verifier::Key(key) => bundle::open_envelope(&env, key, digest),
        Verifier::Keyless(k) => {
            use crate::cosign::sigstore::verify::{Cosign2Content, verify_cosign2};
            if env.payload_type != PAYLOAD_TYPE {
                return Err(format!(
                    "the DSSE payload type is `{}`, not {PAYLOAD_TYPE}",
                    env.payload_type
                ));
            }
            let [signature] = env.signatures.as_slice() else {
                return Err(format!(
                    "the envelope has {} signatures, not one",
                    env.signatures.len()
                ));
            };
            let sha = sha256_bytes(digest)
                .ok_or_else(|| format!("{digest}: keyless statements name sha256 digests"))?;
            let v = verify_cosign2(
                cosign2_material(annotations)?,
                Cosign2Content::Dsse {
                    payload_type: &env.payload_type,
                    payload: &env.payload,
                    signature,
                },
                crate::cosign::sigstore::Artifact::Sha256(&sha),
                &k.signer(),
                &k.root,
                k.options,
            )?;
            let mut st = Statement::parse(&env.payload)?;
            st.signer = v.signer;
            Ok(st)
        }
    }
}

/// The DSSE envelope layers of one manifest, each opened with `key`.
async fn judge_layers(
    registry: &Registry,
    key: &Verifier,
    digest: &Digest,
    predicate_type: Option<&str>,
    layers: &[Descriptor],
    at: &Reference,
    source: &str,
) -> Vec<Checked> {
    let mut out = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        let source = format!("{source} layer {}", i + 1);
        let outcome = if l.media_type != ENVELOPE_MEDIA {
            Err(format!(
                "layer media type `{}` is not {ENVELOPE_MEDIA}",
                l.media_type
            ))
        } else {
            match registry.blob(at, l).await {
                Err(e) => Err(format!("the envelope blob cannot be fetched: {e}")),
                Ok(bytes) => open_layer(&bytes, &l.annotations, key, digest),
            }
        };
        out.push(Checked {
            source,
            outcome: typed(outcome, predicate_type),
        });
    }
    out
}

/// Verifies the attestations of the image `reference` with `key`: the `.att` layers, Sigstore
/// bundles among the referrers (other than signatures), and DSSE referrers. With
/// `predicate_type`, only statements of that type pass.
pub async fn verify(
    registry: &Registry,
    reference: &Reference,
    key: &PublicKey,
    predicate_type: Option<&str>,
) -> Result<Report> {
    verify_with(
        registry,
        reference,
        &Verifier::Key(key.clone()),
        predicate_type,
    )
    .await
}

/// [`verify`] with a key or keylessly.
pub async fn verify_with(
    registry: &Registry,
    reference: &Reference,
    key: &Verifier,
    predicate_type: Option<&str>,
) -> Result<Report> {
    let digest = registry.resolve(reference).await?;
    let att_ref = att_reference(reference, &digest);
    let location = att_ref.whole();
    let mut checked = Vec::new();
    if let Some(raw) = registry.manifest_if_any(&att_ref).await? {
        let atts = Signatures::parse(&raw.bytes, &location)?;
        checked.extend(
            judge_layers(
                registry,
                key,
                &digest,
                predicate_type,
                &atts.layers,
                &att_ref,
                &location,
            )
            .await,
        );
    }
    let (listing, bundles) = bundle::find(registry, reference, &digest, key).await?;
    for found in bundles {
        if found
            .outcome
            .as_ref()
            .is_ok_and(|st| st.predicate_type == bundle::PREDICATE_TYPE)
        {
            continue; // a signature
        }
        checked.push(Checked {
            source: format!("Sigstore bundle {}", found.location),
            outcome: typed(found.outcome, predicate_type),
        });
    }
    for e in &listing.entries {
        let Ok(m) = &e.manifest else { continue };
        if m.layers.iter().any(|l| l.media_type == ENVELOPE_MEDIA) {
            let source = format!("referrer {}", e.location);
            checked.extend(
                judge_layers(
                    registry,
                    key,
                    &digest,
                    predicate_type,
                    &m.layers,
                    &e.reference,
                    &source,
                )
                .await,
            );
        }
    }
    Ok(Report {
        digest,
        location: format!("{location} and the referrers ({})", listing.location),
        checked,
    })
}

/// Attests `digest` keylessly in `format` (cosign 3: a Sigstore bundle referrer; cosign 2:
/// a `.att` layer with the certificate annotations). Everything from the services is
/// obtained before the registry is written.
pub async fn attest_keyless(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    session: &super::keyless::Session,
    predicate: &Predicate,
    format: Format,
) -> Result<AttestReport> {
    if format == Format::Both {
        let att =
            attest_keyless_in(registry, reference, digest, session, predicate, Format::Att).await?;
        let bundle = attest_keyless_in(
            registry,
            reference,
            digest,
            session,
            predicate,
            Format::Bundle,
        )
        .await?;
        return Ok(both(att, bundle));
    }
    attest_keyless_in(registry, reference, digest, session, predicate, format).await
}

/// [`attest_keyless`] in one place (`Att` or `Bundle`).
async fn attest_keyless_in(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    session: &super::keyless::Session,
    predicate: &Predicate,
    format: Format,
) -> Result<AttestReport> {
    let body = statement(&identity_of(reference), digest, predicate);
    let predicate_digest = predicate.digest();
    if format == Format::Bundle {
        let prepared = bundle::prepare(registry, reference, digest, None, &body).await?;
        let signed = session.dsse_bundle(PAYLOAD_TYPE, &body).await?;
        let location = bundle::attach_bundle(
            registry,
            reference,
            digest,
            signed,
            &predicate.type_uri,
            &prepared,
        )
        .await?;
        return Ok(AttestReport {
            digest: digest.clone(),
            also: None,
            location,
            added: true,
            predicate_digest,
        });
    }
    let att_ref = att_reference(reference, digest);
    let location = att_ref.whole();
    let atts = Signatures::fetch(registry, &att_ref).await?;
    let (env_bytes, notes) = session.cosign2_envelope(&body).await?;
    add_att_layer(
        registry,
        &att_ref,
        atts,
        &env_bytes,
        &predicate.type_uri,
        notes,
    )
    .await?;
    Ok(AttestReport {
        digest: digest.clone(),
        also: None,
        location,
        added: true,
        predicate_digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_statement() {
        assert_eq!(
            predicate_type("slsaprovenance1").unwrap(),
            "https://slsa.dev/provenance/v1"
        );
        assert_eq!(
            predicate_type("https://x.dev/p").unwrap(),
            "https://x.dev/p"
        );
        assert!(predicate_type("sbom").is_err());
        let p = Predicate::from_bytes(br#"{"b":1,"a":2}"#, "custom", "p.json").unwrap();
        let d = Digest::of(b"i");
        let s = String::from_utf8(statement("r/x", &d, &p)).unwrap();
        assert!(s.ends_with(r#""predicate":{"b":1,"a":2}}"#), "{s}");
        let key = PrivateKey::generate().unwrap();
        let env = Envelope::sign(PAYLOAD_TYPE, s.as_bytes(), &key).unwrap();
        let st = bundle::open_envelope(&env, key.public(), &d).unwrap();
        assert_eq!(st.predicate_type, p.type_uri);
        assert!(
            Predicate::from_bytes(b"{\n x", "custom", "p.json")
                .unwrap_err()
                .to_string()
                .contains("p.json: the predicate is not JSON")
        );
    }
}

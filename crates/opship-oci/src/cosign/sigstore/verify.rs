//! Sigstore bundle verification (`verify_bundle`): the bundle's parsing (v0.1–v0.3, message
//! signature or DSSE envelope, certificate, chain or public key), the signature over the
//! artifact, the transparency-log entries and their match with what was signed, the signing
//! times (Rekor v1 integrated time, RFC 3161 timestamps), the certificate's chain, validity and
//! SCT at those times, and the identity policy. One entry point for blobs and images.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use x509_cert::Certificate;
use x509_cert::der::Decode as _;

use super::cert::{self, IdentityPolicy};
use super::crypto::VerifyKey;
use super::trust::TrustedRoot;
use super::{timestamp, tlog};
use crate::cosign::dsse::pae;

/// What was signed.
#[derive(Debug, Clone, Copy)]
pub enum Artifact<'a> {
    /// The artifact's bytes (a blob).
    Bytes(&'a [u8]),
    /// Only its SHA-256 digest (an image manifest): enough for DSSE envelopes, whose statement
    /// names the digest; message signatures need the bytes.
    Sha256(&'a [u8; 32]),
    /// Read once as a stream: its SHA-256, and its digest with the hash of the key that
    /// signed it (the same digest for SHA-256 keys), which a message signature is checked
    /// over without the bytes.
    Streamed {
        /// SHA-256.
        sha256: &'a [u8; 32],
        /// The digest with [`VerifyKey::message_hash`] of the signing key.
        digest: &'a aws_lc_rs::digest::Digest,
    },
}

impl Artifact<'_> {
    fn sha256(&self) -> [u8; 32] {
        match self {
            Artifact::Bytes(b) => Sha256::digest(b).into(),
            Artifact::Sha256(d) | Artifact::Streamed { sha256: d, .. } => **d,
        }
    }
}

/// Who must have signed.
#[derive(Debug, Clone)]
pub enum Signer {
    /// A public key (`--key`).
    Key(VerifyKey),
    /// A Fulcio certificate matching this policy.
    Identity(IdentityPolicy),
}

/// Checks the caller chose to skip.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `--insecure-ignore-tlog`: no transparency-log entry needed or checked.
    pub ignore_tlog: bool,
    /// `--insecure-ignore-sct`: no SCT needed.
    pub ignore_sct: bool,
}

/// What a verified bundle established.
#[derive(Debug, Clone)]
pub struct Verified {
    /// Who the certificate says signed (identity, issuer, workflow claims), when signed
    /// keylessly.
    pub signer: Option<cert::CertSigner>,
    /// Verified signing times and their source (`rekor integrated time`, `timestamp by …`).
    pub times: Vec<(String, DateTime<Utc>)>,
    /// Checks skipped on request, for the caller to say.
    pub skipped: Vec<String>,
    /// The DSSE payload (an in-toto statement), for envelopes.
    pub statement: Option<Vec<u8>>,
    /// How many log entries were verified.
    pub tlog_entries: usize,
}

enum Content {
    Message {
        digest: Option<Vec<u8>>,
        signature: Vec<u8>,
    },
    Dsse {
        payload_type: String,
        payload: Vec<u8>,
        signature: Vec<u8>,
    },
}

impl Content {
    fn signature(&self) -> &[u8] {
        match self {
            Content::Message { signature, .. } | Content::Dsse { signature, .. } => signature,
        }
    }
}

enum Material {
    Certificate(Vec<u8>),
    PublicKey(String),
}

struct Bundle {
    material: Material,
    content: Content,
    tlog_entries: Vec<Value>,
    timestamps: Vec<Vec<u8>>,
    /// cosign 2's Rekor bundle: an inclusion promise without a proof.
    promise_only: bool,
}

fn b64(v: &Value, pointer: &str) -> Result<Vec<u8>, String> {
    let s = v
        .pointer(pointer)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("bundle: `{}` is missing", &pointer[1..].replace('/', ".")))?;
    // Go's decoder, which wrote and reads most bundles, skips line breaks.
    let s: String = s.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    STANDARD.decode(s).map_err(|e| {
        format!(
            "bundle: `{}` is not base64 ({e})",
            &pointer[1..].replace('/', ".")
        )
    })
}

fn parse(bytes: &[u8]) -> Result<Bundle, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("bundle: not JSON: {e}"))?;
    let media = v
        .get("mediaType")
        .and_then(Value::as_str)
        .ok_or("bundle: `mediaType` is missing")?;
    let known = [
        "application/vnd.dev.sigstore.bundle+json;version=0.1",
        "application/vnd.dev.sigstore.bundle+json;version=0.2",
        "application/vnd.dev.sigstore.bundle+json;version=0.3",
        "application/vnd.dev.sigstore.bundle.v0.3+json",
    ];
    if !known.contains(&media) {
        return Err(format!(
            "bundle: unsupported media type `{media}` (known: Sigstore bundle v0.1 to v0.3)"
        ));
    }
    let vm = v
        .get("verificationMaterial")
        .ok_or("bundle: `verificationMaterial` is missing")?;
    let material = if vm.get("certificate").is_some() {
        Material::Certificate(b64(vm, "/certificate/rawBytes")?)
    } else if let Some(chain) = vm.pointer("/x509CertificateChain/certificates") {
        let certs = chain
            .as_array()
            .ok_or("bundle: `x509CertificateChain.certificates` is not a list")?;
        let certs = (0..certs.len())
            .map(|i| b64(chain, &format!("/{i}/rawBytes")))
            .collect::<Result<Vec<_>, _>>()?;
        let leaf = certs
            .first()
            .ok_or("bundle: the certificate chain is empty")?
            .clone();
        // A chain that ends at a self-signed root would let the bundle pick its own anchor;
        // anchors come only from the trusted root.
        for (i, c) in certs.iter().enumerate() {
            if cert::signed_by(c, c) {
                return Err(format!(
                    "bundle: certificate {i} of the chain is a self-signed root; roots come only \
                     from the trusted root"
                ));
            }
        }
        Material::Certificate(leaf)
    } else if let Some(hint) = vm.pointer("/publicKey/hint") {
        Material::PublicKey(hint.as_str().unwrap_or_default().to_owned())
    } else {
        return Err("bundle: no certificate, certificate chain or public key".into());
    };
    let content = if let Some(ms) = v.get("messageSignature") {
        let digest = match ms.get("messageDigest") {
            Some(d) => {
                let alg = d.get("algorithm").and_then(Value::as_str).unwrap_or("");
                if alg != "SHA2_256" {
                    return Err(format!(
                        "bundle: message digest algorithm `{alg}` is not supported (SHA2_256)"
                    ));
                }
                Some(b64(ms, "/messageDigest/digest")?)
            }
            None => None,
        };
        Content::Message {
            digest,
            signature: b64(ms, "/signature")?,
        }
    } else if let Some(env) = v.get("dsseEnvelope") {
        let sigs = env
            .get("signatures")
            .and_then(Value::as_array)
            .ok_or("bundle: `dsseEnvelope.signatures` is missing")?;
        if sigs.len() != 1 {
            return Err(format!(
                "bundle: the DSSE envelope has {} signatures, not one",
                sigs.len()
            ));
        }
        Content::Dsse {
            payload_type: env
                .get("payloadType")
                .and_then(Value::as_str)
                .ok_or("bundle: `dsseEnvelope.payloadType` is missing")?
                .to_owned(),
            payload: b64(env, "/payload")?,
            signature: b64(env, "/signatures/0/sig")?,
        }
    } else {
        return Err("bundle: neither `messageSignature` nor `dsseEnvelope`".into());
    };
    let tlog_entries = vm
        .get("tlogEntries")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ts = vm
        .pointer("/timestampVerificationData/rfc3161Timestamps")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let timestamps = ts
        .iter()
        .map(|t| b64(t, "/signedTimestamp"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Bundle {
        material,
        content,
        tlog_entries,
        timestamps,
        promise_only: false,
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The DER of a base64 PEM (certificate or public key) as log entries carry verifiers.
fn pem_der(b64_pem: &str) -> Option<Vec<u8>> {
    let pem = STANDARD.decode(b64_pem).ok()?;
    let text = String::from_utf8(pem).ok()?;
    crate::cosign::key::pem_blocks(&text)
        .into_iter()
        .next()
        .and_then(|(_, d)| d.ok())
}

/// What the signature covers, as a log entry's digest would record it.
fn signed_digest(content: &Content, artifact: &[u8; 32]) -> [u8; 32] {
    match content {
        Content::Message { .. } => *artifact,
        Content::Dsse {
            payload_type,
            payload,
            ..
        } => Sha256::digest(pae(payload_type, payload)).into(),
    }
}

/// Checks that a log entry's body records this signature, verifier and artifact.
fn match_body(
    body: &[u8],
    content: &Content,
    verifier: &[u8],
    artifact: &[u8; 32],
) -> Result<(), String> {
    let b: Value = serde_json::from_slice(body)
        .map_err(|e| format!("tlog entry: the body is not JSON ({e})"))?;
    let kind = b.get("kind").and_then(Value::as_str).unwrap_or("");
    let version = b.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let spec = b.get("spec").ok_or("tlog entry: the body has no `spec`")?;
    let mismatch = |what: &str| {
        Err(format!(
            "tlog entry: the {kind} {version} entry records another {what} than the bundle's"
        ))
    };
    let s = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let sig = content.signature();
    match (kind, version) {
        ("hashedrekord", "0.0.1") => {
            if s(spec, "/data/hash/value") != Some(hex(&signed_digest(content, artifact))) {
                return mismatch("artifact digest");
            }
            if s(spec, "/signature/content").and_then(|c| STANDARD.decode(c).ok())
                != Some(sig.to_vec())
            {
                return mismatch("signature");
            }
            if s(spec, "/signature/publicKey/content").and_then(|c| pem_der(&c))
                != Some(verifier.to_vec())
            {
                return mismatch("certificate or key");
            }
        }
        ("hashedrekord", "0.0.2") => {
            let r = spec
                .get("hashedRekordV002")
                .ok_or("tlog entry: no `hashedRekordV002`")?;
            if s(r, "/data/digest").and_then(|c| STANDARD.decode(c).ok())
                != Some(signed_digest(content, artifact).to_vec())
            {
                return mismatch("artifact digest");
            }
            if s(r, "/signature/content").and_then(|c| STANDARD.decode(c).ok())
                != Some(sig.to_vec())
            {
                return mismatch("signature");
            }
            let v = s(r, "/signature/verifier/x509Certificate/rawBytes")
                .or_else(|| s(r, "/signature/verifier/publicKey/rawBytes"))
                .and_then(|c| STANDARD.decode(c).ok());
            if v != Some(verifier.to_vec()) {
                return mismatch("certificate or key");
            }
        }
        ("dsse", "0.0.1") => {
            let Content::Dsse { payload, .. } = content else {
                return mismatch("kind of signature (DSSE)");
            };
            if s(spec, "/payloadHash/value") != Some(hex(&Sha256::digest(payload))) {
                return mismatch("payload");
            }
            let found = spec
                .get("signatures")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|e| {
                    s(e, "/signature").and_then(|c| STANDARD.decode(c).ok()) == Some(sig.to_vec())
                        && s(e, "/verifier").and_then(|c| pem_der(&c)) == Some(verifier.to_vec())
                });
            if !found {
                return mismatch("signature or certificate");
            }
        }
        ("intoto", "0.0.2") => {
            let Content::Dsse { payload, .. } = content else {
                return mismatch("kind of signature (in-toto)");
            };
            if s(spec, "/content/payloadHash/value") != Some(hex(&Sha256::digest(payload))) {
                return mismatch("payload");
            }
            // Rekor stores the envelope's signature base64-encoded once more.
            let decode2 = |c: String| {
                let once = STANDARD.decode(c).ok()?;
                STANDARD.decode(&once).ok().or(Some(once))
            };
            let found = spec
                .pointer("/content/envelope/signatures")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|e| {
                    s(e, "/sig").and_then(decode2) == Some(sig.to_vec())
                        && s(e, "/publicKey").and_then(|c| {
                            pem_der(&c).or_else(|| {
                                pem_der(&String::from_utf8(STANDARD.decode(c).ok()?).ok()?)
                            })
                        }) == Some(verifier.to_vec())
                });
            if !found {
                return mismatch("signature or certificate");
            }
        }
        _ => {
            return Err(format!(
                "tlog entry: unsupported entry kind {kind} {version}"
            ));
        }
    }
    Ok(())
}

/// Verifies a Sigstore bundle (JSON bytes) over `artifact` for `signer` against `root`.
pub fn verify_bundle(
    bytes: &[u8],
    artifact: Artifact<'_>,
    signer: &Signer,
    root: &TrustedRoot,
    options: Options,
) -> Result<Verified, String> {
    verify_parsed(&parse(bytes)?, artifact, signer, root, options)
}

/// A keyless signature in cosign 2's format: the signature and what it signs (a `.sig`
/// layer's payload, or the DSSE envelope of a `.att` layer) with the layer's annotations.
#[derive(Debug, Clone, Copy)]
pub struct Cosign2<'a> {
    /// `dev.sigstore.cosign/certificate`: the leaf, PEM.
    pub certificate: &'a str,
    /// `dev.sigstore.cosign/bundle`: Rekor v1's entry and signed entry timestamp, if logged.
    pub rekor_bundle: Option<&'a str>,
    /// `dev.sigstore.cosign/rfc3161timestamp`: `{"SignedRFC3161Timestamp": base64}`.
    pub timestamp: Option<&'a str>,
}

/// What a cosign 2 layer signs.
#[derive(Debug, Clone, Copy)]
pub enum Cosign2Content<'a> {
    /// A signature over the artifact (a simple-signing payload).
    Message {
        /// The DER signature.
        signature: &'a [u8],
    },
    /// A DSSE envelope (one signature).
    Dsse {
        /// `payloadType`.
        payload_type: &'a str,
        /// The decoded payload.
        payload: &'a [u8],
        /// The DER signature.
        signature: &'a [u8],
    },
}

/// Verifies a cosign 2 keyless signature as [`verify_bundle`] does a bundle: the annotations
/// are the bundle's material (the Rekor bundle gives a promise, no inclusion proof).
pub fn verify_cosign2(
    material: Cosign2<'_>,
    content: Cosign2Content<'_>,
    artifact: Artifact<'_>,
    signer: &Signer,
    root: &TrustedRoot,
    options: Options,
) -> Result<Verified, String> {
    let der = crate::cosign::key::pem_blocks(material.certificate)
        .into_iter()
        .find(|(l, _)| l == "CERTIFICATE")
        .ok_or("the certificate annotation holds no PEM CERTIFICATE")?
        .1?;
    let mut tlog_entries = Vec::new();
    if let Some(b) = material.rekor_bundle {
        let v: Value = serde_json::from_str(b)
            .map_err(|e| format!("the Rekor bundle annotation is not JSON ({e})"))?;
        let p = v
            .get("Payload")
            .ok_or("the Rekor bundle has no `Payload`")?;
        let log_id = p
            .get("logID")
            .and_then(Value::as_str)
            .and_then(|h| {
                (0..h.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
                    .collect::<Option<Vec<u8>>>()
            })
            .ok_or("the Rekor bundle's `logID` is not hex")?;
        tlog_entries.push(serde_json::json!({
            "logIndex": p.get("logIndex").cloned().unwrap_or(Value::Null),
            "logId": {"keyId": STANDARD.encode(log_id)},
            "integratedTime": p.get("integratedTime").cloned().unwrap_or(Value::Null),
            "canonicalizedBody": p.get("body").cloned().unwrap_or(Value::Null),
            "inclusionPromise": {"signedEntryTimestamp": v.get("SignedEntryTimestamp").cloned().unwrap_or(Value::Null)},
        }));
    }
    let mut timestamps = Vec::new();
    if let Some(t) = material.timestamp {
        let v: Value = serde_json::from_str(t)
            .map_err(|e| format!("the timestamp annotation is not JSON ({e})"))?;
        timestamps.push(b64(&v, "/SignedRFC3161Timestamp")?);
    }
    let content = match content {
        Cosign2Content::Message { signature } => Content::Message {
            digest: None,
            signature: signature.to_vec(),
        },
        Cosign2Content::Dsse {
            payload_type,
            payload,
            signature,
        } => Content::Dsse {
            payload_type: payload_type.to_owned(),
            payload: payload.to_vec(),
            signature: signature.to_vec(),
        },
    };
    let bundle = Bundle {
        material: Material::Certificate(der),
        content,
        tlog_entries,
        timestamps,
        promise_only: true,
    };
    verify_parsed(&bundle, artifact, signer, root, options)
}

fn verify_parsed(
    bundle: &Bundle,
    artifact: Artifact<'_>,
    signer: &Signer,
    root: &TrustedRoot,
    options: Options,
) -> Result<Verified, String> {
    let digest = artifact.sha256();
    let leaf = match &bundle.material {
        Material::Certificate(der) => Some((
            Certificate::from_der(der).map_err(|e| format!("bundle: certificate: {e}"))?,
            der,
        )),
        Material::PublicKey(_) => None,
    };
    let (key, verifier_der) = match (&bundle.material, signer, &leaf) {
        (Material::PublicKey(hint), Signer::Identity(_), _) => {
            return Err(format!(
                "bundle: signed with a key (hint `{hint}`), not a certificate: verify it with \
                 --key"
            ));
        }
        (_, Signer::Key(k), Some((c, der))) => {
            if cert::spki_der(c)? != k.der() {
                return Err("bundle: the certificate is for another key than --key".into());
            }
            (k.clone(), der.to_vec())
        }
        (_, Signer::Key(k), None) => (k.clone(), k.der().to_vec()),
        (_, Signer::Identity(_), Some((c, der))) => (
            VerifyKey::from_spki_der(&cert::spki_der(c)?)
                .map_err(|e| format!("certificate key: {e}"))?,
            der.to_vec(),
        ),
        (Material::Certificate(_), Signer::Identity(_), None) => {
            return Err("bundle: no certificate".into());
        }
    };

    // The signature over the artifact.
    let mut statement = None;
    match &bundle.content {
        Content::Message {
            digest: hint,
            signature,
        } => {
            if let Some(h) = hint
                && h[..] != digest[..]
            {
                return Err(format!(
                    "bundle: the message digest {} is not the artifact's sha256 {}",
                    hex(h),
                    hex(&digest)
                ));
            }
            let verifies = match artifact {
                Artifact::Bytes(b) => key.verifies(b, signature),
                Artifact::Streamed { digest, .. } => key.verifies_digest(digest, signature),
                Artifact::Sha256(_) => {
                    return Err("bundle: a message signature needs the artifact's bytes".into());
                }
            };
            if !verifies {
                return Err(format!(
                    "bundle: the signature does not verify over the artifact with the {} key",
                    key.kind()
                ));
            }
        }
        Content::Dsse {
            payload_type,
            payload,
            signature,
        } => {
            if !key.verifies(&pae(payload_type, payload), signature) {
                return Err(format!(
                    "bundle: the DSSE signature does not verify with the {} key",
                    key.kind()
                ));
            }
            let st: Value = serde_json::from_slice(payload)
                .map_err(|e| format!("bundle: the DSSE payload is not JSON ({e})"))?;
            let want = hex(&digest);
            let subjects = st.get("subject").and_then(Value::as_array);
            let names = subjects
                .into_iter()
                .flatten()
                .any(|s| s.pointer("/digest/sha256").and_then(Value::as_str) == Some(&want));
            if !names {
                return Err(format!(
                    "bundle: the in-toto statement has no subject with sha256 {want}"
                ));
            }
            statement = Some(payload.clone());
        }
    }

    // Log entries and their times.
    let mut times = Vec::new();
    let mut skipped = Vec::new();
    let now = Utc::now();
    if options.ignore_tlog {
        skipped.push("transparency log (--insecure-ignore-tlog)".to_owned());
    } else {
        if bundle.tlog_entries.is_empty() {
            return Err(if bundle.promise_only {
                "no transparency-log entry (no `dev.sigstore.cosign/bundle` annotation; pass \
                 --insecure-ignore-tlog to accept it on its signed timestamp)"
                    .into()
            } else {
                "bundle: no transparency-log entry".into()
            });
        }
        for e in &bundle.tlog_entries {
            let v = if bundle.promise_only {
                tlog::verify_promised(e, root)?
            } else {
                tlog::verify_entry(e, root)?
            };
            match_body(&v.body, &bundle.content, &verifier_der, &digest)?;
            if let Some(t) = v.integrated_time {
                let t = DateTime::from_timestamp(t, 0)
                    .ok_or("tlog entry: integrated time out of range")?;
                if t > now + chrono::Duration::minutes(5) {
                    return Err(format!(
                        "tlog entry: integrated time {} is in the future",
                        t.to_rfc3339()
                    ));
                }
                if !v.log.valid_for.contains(t) {
                    return Err(format!(
                        "tlog entry: integrated time {} is outside the window the trusted root \
                         gives {} ({})",
                        t.to_rfc3339(),
                        v.log.base_url,
                        v.log.valid_for
                    ));
                }
                times.push((format!("integrated time in {}", v.log.base_url), t));
            }
        }
    }
    for ts in &bundle.timestamps {
        let t = timestamp::verify(ts, bundle.content.signature(), root)?;
        times.push((format!("timestamp by {}", t.authority.uri), t.time));
    }
    if times.is_empty() {
        if options.ignore_tlog {
            times.push(("the current time (no timestamp)".to_owned(), now));
        } else {
            return Err(
                "bundle: no verified signing time (no Rekor v1 integrated time and no signed \
                 timestamp)"
                    .into(),
            );
        }
    }

    // The certificate at those times, and who it names.
    let mut who = None;
    if let Some((c, der)) = &leaf {
        let (nb, na) = cert::validity(c);
        for (what, t) in &times {
            if *t < nb || *t > na {
                return Err(format!(
                    "certificate: the signing time {} ({what}) is outside its validity ({} to {})",
                    t.to_rfc3339(),
                    nb.to_rfc3339(),
                    na.to_rfc3339()
                ));
            }
        }
        if let Signer::Identity(policy) = signer {
            let ca = cert::chain(der, root)?;
            for (what, t) in &times {
                if !ca.valid_for.contains(*t) {
                    return Err(format!(
                        "certificate: the signing time {} ({what}) is outside the window the \
                         trusted root gives {} ({})",
                        t.to_rfc3339(),
                        ca.uri,
                        ca.valid_for
                    ));
                }
            }
            if options.ignore_sct {
                skipped.push("certificate transparency SCT (--insecure-ignore-sct)".to_owned());
            } else if !root.ctlogs.is_empty() {
                let issuer_cert = Certificate::from_der(&ca.chain[0])
                    .map_err(|e| format!("trusted root: CA certificate: {e}"))?;
                cert::verify_sct(der, &cert::spki_der(&issuer_cert)?, root)?;
            }
            policy.check(c)?;
        }
        let policy = match signer {
            Signer::Identity(p) => Some(p),
            Signer::Key(_) => None,
        };
        who = Some(cert::CertSigner::of(c, policy));
    }
    Ok(Verified {
        signer: who,
        times,
        skipped,
        statement,
        tlog_entries: if options.ignore_tlog {
            0
        } else {
            bundle.tlog_entries.len()
        },
    })
}

/// `opship verify-blob`: the files to read and how to judge them.
#[derive(Debug, Clone)]
pub struct BlobRequest {
    /// The Sigstore bundle (`--bundle`).
    pub bundle: std::path::PathBuf,
    /// The artifact.
    pub artifact: std::path::PathBuf,
    /// `--key`: verify with this public key instead of an identity.
    pub key: Option<std::path::PathBuf>,
    /// The identity policy (without `--key`).
    pub policy: IdentityPolicy,
    /// `--trusted-root` (default: the public-good root embedded).
    pub trusted_root: Option<std::path::PathBuf>,
    /// Checks to skip.
    pub options: Options,
}

/// Upper bound of an artifact `verify-blob` must hold in memory: only one signed by an Ed25519
/// key with a message signature (Ed25519 signs the message itself); others are streamed.
const MAX_ARTIFACT: u64 = 1 << 30;

/// Upper bound of a bundle file (they are a few kilobytes; cosign's limit is similar).
const MAX_BUNDLE: u64 = 16 << 20;

fn read_bounded(path: &std::path::Path, limit: u64) -> crate::error::Result<Vec<u8>> {
    use std::io::Read as _;
    let f = std::fs::File::open(path).map_err(|e| crate::error::Error::io(path, e))?;
    let meta = f.metadata().map_err(|e| crate::error::Error::io(path, e))?;
    if !meta.is_file() {
        return Err(crate::error::Error::Input(format!(
            "{}: not a regular file",
            opship_core::paths::show(path)
        )));
    }
    let mut out = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| crate::error::Error::io(path, e))?;
    if out.len() as u64 > limit {
        return Err(crate::error::Error::Input(format!(
            "{}: larger than {limit} bytes",
            opship_core::paths::show(path)
        )));
    }
    Ok(out)
}

/// Verifies a blob against its bundle. The outer error is a file or usage problem; the inner
/// one the reason the bundle is refused (named after the bundle file).
pub fn verify_blob(
    req: &BlobRequest,
) -> crate::error::Result<std::result::Result<Verified, String>> {
    let root = match &req.trusted_root {
        Some(p) => TrustedRoot::read(p)?,
        None => TrustedRoot::public_good(),
    };
    let signer = match &req.key {
        Some(p) => {
            let pem = read_bounded(p, 1 << 20)?;
            Signer::Key(
                VerifyKey::from_pem(&pem).map_err(|message| crate::error::Error::Key {
                    path: p.clone(),
                    message,
                })?,
            )
        }
        None => {
            if req.policy.subject.is_none() || req.policy.issuer.is_none() {
                return Err(crate::error::Error::Input(
                    "keyless verification needs --certificate-identity (or -regexp) and \
                     --certificate-oidc-issuer (or -regexp), as cosign does; or pass --key"
                        .into(),
                ));
            }
            Signer::Identity(req.policy.clone())
        }
    };
    let bundle = read_bounded(&req.bundle, MAX_BUNDLE)?;
    let refused = |e: String| format!("{}: {e}", opship_core::paths::show(&req.bundle));
    let parsed = match parse(&bundle) {
        Ok(p) => p,
        Err(e) => return Ok(Err(refused(e))),
    };
    // The artifact is read once, hashed as it goes, with the hash the signing key uses; only
    // an Ed25519 message signature needs the bytes themselves.
    let result = match message_hash(&parsed, &signer) {
        Some(hash) => {
            let (sha256, digest) = stream_digests(&req.artifact, hash)?;
            verify_parsed(
                &parsed,
                Artifact::Streamed {
                    sha256: &sha256,
                    digest: &digest,
                },
                &signer,
                &root,
                req.options,
            )
        }
        None => {
            let artifact = read_bounded(&req.artifact, MAX_ARTIFACT)?;
            verify_parsed(
                &parsed,
                Artifact::Bytes(&artifact),
                &signer,
                &root,
                req.options,
            )
        }
    };
    Ok(result.map_err(refused))
}

/// The hash a message signature of `bundle` is made with (its signer's key), SHA-256 when
/// the key cannot be told (verification then names the problem) or for a DSSE envelope;
/// `None` for an Ed25519 message signature.
fn message_hash(bundle: &Bundle, signer: &Signer) -> Option<&'static aws_lc_rs::digest::Algorithm> {
    let sha256 = Some(&aws_lc_rs::digest::SHA256);
    if matches!(bundle.content, Content::Dsse { .. }) {
        return sha256;
    }
    let key = match (signer, &bundle.material) {
        (Signer::Key(k), _) => Some(k.clone()),
        (Signer::Identity(_), Material::Certificate(der)) => Certificate::from_der(der)
            .ok()
            .and_then(|c| cert::spki_der(&c).ok())
            .and_then(|d| VerifyKey::from_spki_der(&d).ok()),
        (Signer::Identity(_), Material::PublicKey(_)) => None,
    };
    match key {
        Some(k) => k.message_hash(),
        None => sha256,
    }
}

/// One pass over the regular file `path` in fixed-size chunks: its SHA-256 and its digest
/// with `hash` (memory stays at one chunk whatever the size).
fn stream_digests(
    path: &std::path::Path,
    hash: &'static aws_lc_rs::digest::Algorithm,
) -> crate::error::Result<([u8; 32], aws_lc_rs::digest::Digest)> {
    use aws_lc_rs::digest::{Context, SHA256};
    use std::io::Read as _;
    let io = |e| crate::error::Error::io(path, e);
    let mut f = std::fs::File::open(path).map_err(io)?;
    if !f.metadata().map_err(io)?.is_file() {
        return Err(crate::error::Error::Input(format!(
            "{}: not a regular file",
            opship_core::paths::show(path)
        )));
    }
    let mut sha = Context::new(&SHA256);
    let mut other = (!std::ptr::eq(hash, &SHA256)).then(|| Context::new(hash));
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        sha.update(&buf[..n]);
        if let Some(o) = other.as_mut() {
            o.update(&buf[..n]);
        }
    }
    let sha = sha.finish();
    let mut sha256 = [0u8; 32];
    sha256.copy_from_slice(sha.as_ref());
    Ok((sha256, other.map_or(sha, Context::finish)))
}

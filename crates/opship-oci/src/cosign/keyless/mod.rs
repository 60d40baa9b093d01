//! Keyless signing (cosign's default): an identity token (`token`), an ephemeral ECDSA P-256
//! key that lives in memory only, a Fulcio certificate for it (`fulcio`), a transparency-log
//! entry (`rekor`) and an RFC 3161 timestamp (`tsa`) per signature, from the services a
//! signing config names (`services`). A [`Session`] holds the key and certificate for one
//! command; each signature it makes asks the log and the timestamp authority before anything
//! is written anywhere, so a failing service leaves the registry as it was.

pub mod fulcio;
pub mod http;
pub mod rekor;
pub mod services;
pub mod token;
pub mod tsa;

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use opship_core::image::oci::Descriptor;
use serde_json::json;

use super::dsse::{Envelope, pae};
use super::key::PrivateKey;
use super::manifest;
use crate::error::{Error, Result};
use fulcio::Chain;
use services::{Overrides, Services};
use token::TokenEnv;

/// cosign 2's layer annotation with the signing certificate (PEM).
pub const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
/// cosign 2's layer annotation with the rest of the chain (PEM).
pub const CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
/// cosign 2's layer annotation with the Rekor v1 bundle (signed entry timestamp).
pub const REKOR_BUNDLE_ANNOTATION: &str = "dev.sigstore.cosign/bundle";
/// cosign 2's layer annotation with the RFC 3161 timestamp.
pub const TIMESTAMP_ANNOTATION: &str = "dev.sigstore.cosign/rfc3161timestamp";

/// How a keyless session is set up. Its `Debug` withholds the token.
#[derive(Clone, Default)]
pub struct Options {
    /// `--identity-token` (a file or the token).
    pub identity_token: Option<String>,
    /// The token environment.
    pub env: TokenEnv,
    /// Signing config and URL overrides.
    pub overrides: Overrides,
    /// Per-request time limit.
    pub timeout: Duration,
    /// `--trusted-root`: what Fulcio, the log and the timestamp authority return is verified
    /// against this `trusted_root.json` before anything is written (cosign 3's `sign
    /// --trusted-root`).
    pub trusted_root: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field(
                "identity_token",
                &self
                    .identity_token
                    .as_ref()
                    .map(|_| crate::redact::WITHHELD),
            )
            .field("env", &self.env)
            .field("overrides", &self.overrides)
            .field("timeout", &self.timeout)
            .field("trusted_root", &self.trusted_root)
            .finish()
    }
}

/// A keyless signing session: the ephemeral key and its certificate.
pub struct Session {
    key: PrivateKey,
    chain: Chain,
    issuer: String,
    services: Services,
    rekor: http::Service,
    tsa: http::Service,
    /// `--trusted-root`, read, and its path for messages.
    trust: Option<(crate::cosign::sigstore::TrustedRoot, String)>,
}

/// The certificate chain Fulcio returned against `root`: issued by one of its certificate
/// authorities, valid now, and its SCT (when it has one) by one of its CT logs.
fn check_certificate(
    chain: &Chain,
    root: &crate::cosign::sigstore::TrustedRoot,
) -> std::result::Result<(), String> {
    use crate::cosign::sigstore::cert;
    use x509_cert::der::Decode as _;
    let ca = cert::chain(chain.leaf(), root)?;
    let now = chrono::Utc::now();
    if !ca.valid_for.contains(now) {
        return Err(format!(
            "its certificate authority {} is trusted only {}",
            ca.uri, ca.valid_for
        ));
    }
    if has_sct(chain.leaf()) {
        let issuer = x509_cert::Certificate::from_der(&ca.chain[0])
            .map_err(|e| format!("trusted root: CA certificate: {e}"))?;
        cert::verify_sct(chain.leaf(), &cert::spki_der(&issuer)?, root)?;
    }
    Ok(())
}

/// Whether a certificate (DER) embeds an SCT list.
fn has_sct(der: &[u8]) -> bool {
    use x509_cert::der::Decode as _;
    x509_cert::Certificate::from_der(der)
        .ok()
        .is_some_and(|c| crate::cosign::sigstore::cert::has_sct(&c))
}

/// The sha256 of the statement a DSSE envelope (bundle JSON) signs: its first subject's.
fn statement_subject(envelope: &serde_json::Value) -> std::result::Result<[u8; 32], String> {
    let payload = envelope
        .get("payload")
        .and_then(serde_json::Value::as_str)
        .and_then(|p| STANDARD.decode(p).ok())
        .ok_or("the envelope has no base64 payload")?;
    let st: serde_json::Value =
        serde_json::from_slice(&payload).map_err(|e| format!("the statement: {e}"))?;
    let hex = st
        .pointer("/subject/0/digest/sha256")
        .and_then(serde_json::Value::as_str)
        .ok_or("the statement names no sha256 subject")?;
    let mut out = [0u8; 32];
    if hex.len() != 64 {
        return Err("the statement's subject digest is not sha256".into());
    }
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
            .map_err(|_| "the statement's subject digest is not hex")?;
    }
    Ok(out)
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Session({} from {})", self.chain.identity, self.issuer)
    }
}

/// What one keyless signature produced.
#[derive(Debug, Clone)]
pub struct Signed {
    /// The DER signature.
    pub signature: Vec<u8>,
    /// The transparency-log entry, if a log is configured.
    pub logged: Option<rekor::Logged>,
    /// The DER timestamp token, if a TSA is configured.
    pub timestamp: Option<Vec<u8>>,
}

impl Session {
    /// Gets the token, makes the key and asks Fulcio for its certificate.
    pub async fn start(options: &Options) -> Result<Self> {
        let timeout = if options.timeout.is_zero() {
            Duration::from_secs(60)
        } else {
            options.timeout
        };
        let services = Services::resolve(&options.overrides)?;
        // The trusted root is read before any service is asked: a bad file costs no entry.
        let trust = match &options.trusted_root {
            Some(p) => Some((
                crate::cosign::sigstore::TrustedRoot::read(p)?,
                p.display().to_string(),
            )),
            None => None,
        };
        let token = token::obtain(options.identity_token.as_deref(), &options.env, timeout).await?;
        let key = PrivateKey::generate()?;
        let fulcio_service = http::Service::new("Fulcio", timeout)?;
        let chain = fulcio::certificate(&fulcio_service, &services.fulcio, &token, &key).await?;
        if let Some((root, path)) = &trust {
            check_certificate(&chain, root).map_err(|why| {
                Error::Keyless(format!(
                    "the certificate Fulcio at {} issued does not verify against \
                     --trusted-root {path}: {why}; nothing was logged or written",
                    services.fulcio
                ))
            })?;
        }
        Ok(Session {
            key,
            chain,
            issuer: token.claims.issuer.clone(),
            services,
            rekor: http::Service::new("Rekor", timeout)?,
            tsa: http::Service::new("the timestamp authority", timeout)?,
            trust,
        })
    }

    /// The certificate's identity (its SAN).
    pub fn identity(&self) -> &str {
        &self.chain.identity
    }

    /// The token's issuer.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The services in use.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// The certificate chain.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    fn check_valid(&self) -> Result<()> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        if now + 5 >= self.chain.not_after {
            return Err(Error::Keyless(format!(
                "the Fulcio certificate for {} expired at {} (certificates live minutes): sign \
                 fewer images per run",
                self.chain.identity,
                opship_core::image::oci::rfc3339(self.chain.not_after)
            )));
        }
        Ok(())
    }

    /// Logs and timestamps a signature (log first, as cosign does); with `--trusted-root`,
    /// checks what came back before the caller writes anything.
    async fn witness(&self, entry: rekor::Entry<'_>, signature: Vec<u8>) -> Result<Signed> {
        let logged = match &self.services.rekor {
            Some(log) => Some(rekor::log(&self.rekor, log, &entry, self.chain.leaf()).await?),
            None => None,
        };
        let timestamp = match &self.services.tsa {
            Some(url) => Some(tsa::timestamp(&self.tsa, url, &signature).await?),
            None => None,
        };
        let signed = Signed {
            signature,
            logged,
            timestamp,
        };
        if let Some((root, path)) = &self.trust {
            self.check_witnessed(&entry, &signed, root).map_err(|why| {
                Error::Keyless(format!(
                    "what {} returned does not verify against --trusted-root {path}: {why}; \
                     nothing was written to the registry",
                    self.witnesses()
                ))
            })?;
        }
        Ok(signed)
    }

    /// The services that witnessed a signature, for messages.
    fn witnesses(&self) -> String {
        let mut who = Vec::new();
        if let Some(r) = &self.services.rekor {
            who.push(format!("Rekor at {}", r.url));
        }
        if let Some(t) = &self.services.tsa {
            who.push(format!("the timestamp authority at {t}"));
        }
        if who.is_empty() {
            "Fulcio".to_owned()
        } else {
            who.join(" and ")
        }
    }

    /// The signature with its certificate, log entry and timestamp, verified as a bundle
    /// would be (the one verification core): the chain to the root's Fulcio, an SCT when the
    /// certificate has one, the entry's inclusion proof and checkpoint by the root's log and
    /// its match with the signature, the timestamp by the root's authority, and the
    /// certificate's validity at those times.
    fn check_witnessed(
        &self,
        entry: &rekor::Entry<'_>,
        signed: &Signed,
        root: &crate::cosign::sigstore::TrustedRoot,
    ) -> std::result::Result<(), String> {
        use crate::cosign::sigstore::{Artifact, IdentityPolicy, Matcher, Signer, verify_bundle};
        use sha2::Digest as _;
        let mut material = json!({"certificate": {"rawBytes": STANDARD.encode(self.chain.leaf())}});
        if let Some(l) = &signed.logged {
            material["tlogEntries"] = json!([l.entry]);
        }
        if let Some(t) = &signed.timestamp {
            material["timestampVerificationData"] =
                json!({"rfc3161Timestamps": [{"signedTimestamp": STANDARD.encode(t)}]});
        }
        let mut bundle = json!({
            "mediaType": super::bundle::BUNDLE_MEDIA,
            "verificationMaterial": material,
        });
        let subject: [u8; 32];
        let artifact = match entry {
            rekor::Entry::HashedRekord { payload, signature } => {
                bundle["messageSignature"] = json!({
                    "messageDigest": {
                        "algorithm": "SHA2_256",
                        "digest": STANDARD.encode(sha2::Sha256::digest(payload)),
                    },
                    "signature": STANDARD.encode(signature),
                });
                Artifact::Bytes(payload)
            }
            rekor::Entry::Dsse { envelope, .. } => {
                bundle["dsseEnvelope"] = envelope.clone();
                subject = statement_subject(envelope)?;
                Artifact::Sha256(&subject)
            }
        };
        let bytes = serde_json::to_vec(&bundle).map_err(|e| format!("bundle JSON: {e}"))?;
        let policy = IdentityPolicy {
            subject: Some(Matcher::Exact(self.chain.identity.clone())),
            issuer: None,
            claims: Vec::new(),
        };
        let options = crate::cosign::sigstore::Options {
            ignore_tlog: signed.logged.is_none(),
            // cosign 3 checks an SCT when the certificate carries one.
            ignore_sct: !has_sct(self.chain.leaf()),
        };
        verify_bundle(&bytes, artifact, &Signer::Identity(policy), root, options).map(|_| ())
    }

    /// Signs `body` as a DSSE envelope of `payload_type` and returns the Sigstore bundle v0.3
    /// (certificate, log entry, timestamp): cosign 3's format.
    pub async fn dsse_bundle(&self, payload_type: &str, body: &[u8]) -> Result<Vec<u8>> {
        self.check_valid()?;
        let signed_bytes = pae(payload_type, body);
        let signature = self.key.sign(&signed_bytes)?;
        let envelope = json!({
            "payload": STANDARD.encode(body),
            "payloadType": payload_type,
            "signatures": [{"sig": STANDARD.encode(&signature)}],
        });
        let signed = self
            .witness(
                rekor::Entry::Dsse {
                    envelope: envelope.clone(),
                    pae: &signed_bytes,
                    signature: &signature,
                },
                signature.clone(),
            )
            .await?;
        let mut material = json!({"certificate": {"rawBytes": STANDARD.encode(self.chain.leaf())}});
        material["tlogEntries"] = json!(signed.logged.iter().map(|l| &l.entry).collect::<Vec<_>>());
        if let Some(t) = &signed.timestamp {
            material["timestampVerificationData"] =
                json!({"rfc3161Timestamps": [{"signedTimestamp": STANDARD.encode(t)}]});
        }
        let bundle = json!({
            "mediaType": super::bundle::BUNDLE_MEDIA,
            "verificationMaterial": material,
            "dsseEnvelope": envelope,
        });
        serde_json::to_vec(&bundle).map_err(|e| Error::Signature(format!("bundle JSON: {e}")))
    }

    /// Signs a cosign 2 simple-signing payload: the `.sig` layer with the signature,
    /// certificate, chain, and (when the services give them) the Rekor v1 bundle and the
    /// timestamp annotations. Rekor v2 gives no signed entry timestamp, so with Rekor v2 the
    /// entry is made but cosign 2's layer cannot carry it.
    pub async fn cosign2_layer(&self, payload: &[u8]) -> Result<(Descriptor, Signed)> {
        self.check_valid()?;
        let signature = self.key.sign(payload)?;
        let signed = self
            .witness(
                rekor::Entry::HashedRekord {
                    payload,
                    signature: &signature,
                },
                signature.clone(),
            )
            .await?;
        let mut layer = manifest::layer(payload, &signature);
        self.annotate(&mut layer.annotations, &signed);
        Ok((layer, signed))
    }

    /// Signs an attestation statement for cosign 2's `.att` manifest: the DSSE envelope bytes
    /// and the annotations of its layer (certificate, chain, Rekor v1 bundle, timestamp).
    pub async fn cosign2_envelope(
        &self,
        body: &[u8],
    ) -> Result<(Vec<u8>, std::collections::BTreeMap<String, String>)> {
        self.check_valid()?;
        let signed_bytes = pae(super::dsse::PAYLOAD_TYPE, body);
        let signature = self.key.sign(&signed_bytes)?;
        let env = Envelope {
            payload_type: super::dsse::PAYLOAD_TYPE.to_owned(),
            payload: body.to_vec(),
            signatures: vec![signature.clone()],
        };
        let value = env.to_value();
        let signed = self
            .witness(
                rekor::Entry::Dsse {
                    envelope: value.clone(),
                    pae: &signed_bytes,
                    signature: &signature,
                },
                signature.clone(),
            )
            .await?;
        let mut notes = std::collections::BTreeMap::new();
        self.annotate(&mut notes, &signed);
        let bytes = serde_json::to_vec(&value)
            .map_err(|e| Error::Signature(format!("envelope JSON: {e}")))?;
        Ok((bytes, notes))
    }

    fn annotate(&self, notes: &mut std::collections::BTreeMap<String, String>, signed: &Signed) {
        notes.insert(CERTIFICATE_ANNOTATION.to_owned(), self.chain.leaf_pem());
        notes.insert(CHAIN_ANNOTATION.to_owned(), self.chain.rest_pem());
        if let Some(b) = signed
            .logged
            .as_ref()
            .and_then(|l| l.cosign2_bundle.clone())
        {
            notes.insert(REKOR_BUNDLE_ANNOTATION.to_owned(), b);
        }
        if let Some(t) = &signed.timestamp {
            notes.insert(
                TIMESTAMP_ANNOTATION.to_owned(),
                json!({"SignedRFC3161Timestamp": STANDARD.encode(t)}).to_string(),
            );
        }
    }
}

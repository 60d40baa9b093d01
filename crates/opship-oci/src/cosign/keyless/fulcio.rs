//! Fulcio's v2 API (`POST /api/v2/signingCert`): the identity token and the ephemeral public
//! key with a proof of possession (a signature over the token's email or subject) in, a
//! certificate chain (leaf first) out. The leaf is checked for what signing relies on: it
//! certifies our key and names the identity the token claims. Chain, SCT and validity
//! against a trusted root are the verification core's.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use der::{Decode, Encode};
use serde_json::json;
use x509_cert::Certificate;
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;

use super::http::{Service, post_json};
use super::token::IdentityToken;
use crate::cosign::key::PrivateKey;
use crate::error::{Error, Result};

/// A certificate chain from Fulcio.
#[derive(Debug, Clone)]
pub struct Chain {
    /// DER certificates, leaf first.
    pub der: Vec<Vec<u8>>,
    /// The leaf's SAN: the signing identity (email or URI).
    pub identity: String,
    /// The leaf's validity end (seconds since the epoch).
    pub not_after: u64,
}

impl Chain {
    /// The leaf certificate's DER.
    pub fn leaf(&self) -> &[u8] {
        &self.der[0]
    }

    /// The leaf as PEM.
    pub fn leaf_pem(&self) -> String {
        pem_cert(&self.der[0])
    }

    /// The certificates above the leaf as PEM (what cosign 2 puts in its chain annotation).
    pub fn rest_pem(&self) -> String {
        self.der[1..].iter().map(|d| pem_cert(d)).collect()
    }
}

/// One certificate as PEM, 64-column lines, LF.
pub fn pem_cert(der: &[u8]) -> String {
    let b = STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// The SAN entries of a certificate (emails and URIs), in order.
pub fn san(cert: &Certificate) -> Vec<String> {
    let Ok(Some((_, names))) = cert.tbs_certificate().get_extension::<SubjectAltName>() else {
        return Vec::new();
    };
    names
        .0
        .iter()
        .filter_map(|n| match n {
            GeneralName::Rfc822Name(s) | GeneralName::UniformResourceIdentifier(s) => {
                Some(s.as_str().to_owned())
            }
            _ => None,
        })
        .collect()
}

/// Asks Fulcio at `base` for a certificate of `key` for the token's identity.
pub async fn certificate(
    service: &Service,
    base: &str,
    token: &IdentityToken,
    key: &PrivateKey,
) -> Result<Chain> {
    let proof = key.sign(token.claims.challenge().as_bytes())?;
    let request = json!({
        "credentials": {"oidcIdentityToken": token.raw()},
        "publicKeyRequest": {
            "publicKey": {"algorithm": "ECDSA", "content": key.public().to_pem()},
            "proofOfPossession": STANDARD.encode(&proof),
        },
    });
    let url = format!("{base}/api/v2/signingCert");
    // A refusal that quotes the request back (or any piece of the token) is told without it.
    let raw = token.raw();
    let mut pieces: Vec<&str> = raw.split('.').collect();
    pieces.push(raw);
    let answer = post_json(service, &url, &request, 1 << 20)
        .await
        .map_err(|e| match e {
            Error::Keyless(m) => Error::Keyless(crate::redact::redact(&m, &pieces)),
            other => other,
        })?;
    parse_answer(&answer, &url, key, token)
}

fn parse_answer(
    answer: &[u8],
    url: &str,
    key: &PrivateKey,
    token: &IdentityToken,
) -> Result<Chain> {
    let bad = |why: String| Error::Keyless(format!("Fulcio at {url}: {why}"));
    let v: serde_json::Value =
        serde_json::from_slice(answer).map_err(|_| bad("the answer is not JSON".into()))?;
    let certs = [
        "signedCertificateEmbeddedSct",
        "signedCertificateDetachedSct",
    ]
    .iter()
    .find_map(|k| v.pointer(&format!("/{k}/chain/certificates")))
    .and_then(|c| c.as_array())
    .ok_or_else(|| bad("the answer holds no certificate chain".into()))?;
    let mut der = Vec::new();
    for pem in certs {
        let pem = pem
            .as_str()
            .ok_or_else(|| bad("a chain entry is not a string".into()))?;
        for c in Certificate::load_pem_chain(pem.as_bytes())
            .map_err(|e| bad(format!("a chain entry is not a PEM certificate: {e}")))?
        {
            der.push(
                c.to_der()
                    .map_err(|e| bad(format!("certificate DER: {e}")))?,
            );
        }
    }
    let Some(first) = der.first() else {
        return Err(bad("the chain is empty".into()));
    };
    let leaf = Certificate::from_der(first).map_err(|e| bad(format!("leaf certificate: {e}")))?;
    let spki = leaf
        .tbs_certificate()
        .subject_public_key_info()
        .to_der()
        .map_err(|e| bad(format!("leaf key: {e}")))?;
    if spki != key.public().der() {
        return Err(bad(
            "the certificate is for another public key than the one sent".into(),
        ));
    }
    let names = san(&leaf);
    let identity = names
        .first()
        .cloned()
        .ok_or_else(|| bad("the certificate has no email or URI SAN".into()))?;
    if let Some(want) = token.claims.expected_identity()
        && !names.contains(&want)
    {
        return Err(bad(format!(
            "the certificate names {identity}, not the token's identity {want}"
        )));
    }
    let not_after = leaf
        .tbs_certificate()
        .validity()
        .not_after
        .to_unix_duration()
        .as_secs();
    Ok(Chain {
        der,
        identity,
        not_after,
    })
}

//! DSSE envelopes (in-toto's Dead Simple Signing Envelope) as cosign writes them: the
//! pre-authentication encoding the signature covers, the envelope JSON of `.att` layers and of
//! Sigstore bundles, and its parsing and verification for untrusted input.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::key::{PrivateKey, PublicKey};
use crate::error::Result;

/// DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// Layer media type of a DSSE envelope in a `.att` manifest.
pub const ENVELOPE_MEDIA: &str = "application/vnd.dsse.envelope.v1+json";

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

/// A parsed envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `payloadType`.
    pub payload_type: String,
    /// The decoded payload.
    pub payload: Vec<u8>,
    /// The decoded DER signatures.
    pub signatures: Vec<Vec<u8>>,
}

impl Envelope {
    /// Signs `body` (of type `payload_type`) with `key`.
    pub fn sign(payload_type: &str, body: &[u8], key: &PrivateKey) -> Result<Self> {
        let sig = key.sign(&pae(payload_type, body))?;
        Ok(Envelope {
            payload_type: payload_type.to_owned(),
            payload: body.to_vec(),
            signatures: vec![sig],
        })
    }

    /// Whether this envelope carries exactly `body` as an in-toto statement, signed with
    /// `key`. Bytes are compared, not parsed trees: a statement may hold a large SBOM.
    pub fn holds(&self, key: &PublicKey, body: &[u8]) -> bool {
        self.payload_type == PAYLOAD_TYPE && self.payload == body && self.verifies(key)
    }

    /// The envelope as JSON (cosign's field order for `.att` layers: `payloadType`, `payload`,
    /// `signatures[{keyid, sig}]`).
    pub fn to_value(&self) -> serde_json::Value {
        json!({
            "payloadType": self.payload_type,
            "payload": STANDARD.encode(&self.payload),
            "signatures": self.signatures.iter()
                .map(|s| json!({"keyid": "", "sig": STANDARD.encode(s)}))
                .collect::<Vec<_>>(),
        })
    }

    /// Reads an envelope from its JSON value; the reason when it is not one.
    pub fn from_value(v: &serde_json::Value) -> std::result::Result<Self, String> {
        let payload_type = v
            .get("payloadType")
            .and_then(|t| t.as_str())
            .ok_or("the DSSE envelope has no payloadType")?
            .to_owned();
        let payload = v
            .get("payload")
            .and_then(|p| p.as_str())
            .and_then(|p| STANDARD.decode(p).ok())
            .ok_or("the DSSE payload is missing or not base64")?;
        let signatures = v
            .get("signatures")
            .and_then(|s| s.as_array())
            .ok_or("the DSSE envelope has no signatures")?
            .iter()
            .filter_map(|s| s.get("sig")?.as_str().and_then(|x| STANDARD.decode(x).ok()))
            .collect();
        Ok(Envelope {
            payload_type,
            payload,
            signatures,
        })
    }

    /// Reads an envelope from JSON bytes.
    pub fn parse(bytes: &[u8]) -> std::result::Result<Self, String> {
        let v: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("the DSSE envelope is not JSON: {e}"))?;
        Self::from_value(&v)
    }

    /// Whether one of the signatures verifies with `key`.
    pub fn verifies(&self, key: &PublicKey) -> bool {
        let pae = pae(&self.payload_type, &self.payload);
        self.signatures.iter().any(|der| key.verifies(der, &pae))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_parse_verify() {
        let key = PrivateKey::generate().unwrap();
        let other = PrivateKey::generate().unwrap();
        let env = Envelope::sign(PAYLOAD_TYPE, b"{}", &key).unwrap();
        let back = Envelope::parse(&serde_json::to_vec(&env.to_value()).unwrap()).unwrap();
        assert_eq!(back, env);
        assert!(back.verifies(key.public()));
        assert!(!back.verifies(other.public()));
        let mut changed = back.clone();
        changed.payload = b"{ }".to_vec();
        assert!(!changed.verifies(key.public()));
        assert_eq!(pae("t", b"ab"), b"DSSEv1 1 t 2 ab");
        assert!(Envelope::parse(b"[").unwrap_err().contains("not JSON"));
        assert!(Envelope::parse(b"{}").unwrap_err().contains("payloadType"));
    }
}

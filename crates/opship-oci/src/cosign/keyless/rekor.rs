//! Transparency-log entries for keyless signatures: Rekor v2 (rekor-tiles,
//! `POST /api/v2/log/entries` with a `hashedrekord` v0.0.2 request, DSSE signatures too; the answer is
//! already the bundle's `TransparencyLogEntry`) and Rekor v1 (`POST /api/v1/log/entries`,
//! `hashedrekord`/`dsse` v0.0.1; its answer turned into the same entry shape, with the signed
//! entry timestamp as inclusion promise). The answer is checked only for being the entry of
//! this signature; the inclusion proof and checkpoint are the verification core's.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use super::http::{Service, post_json};
use super::services::Tlog;
use crate::error::{Error, Result};

/// What is logged.
pub enum Entry<'a> {
    /// A signature over bytes (cosign 2's `.sig` payload): the bytes and the DER signature.
    HashedRekord {
        /// The signed bytes.
        payload: &'a [u8],
        /// DER ECDSA signature.
        signature: &'a [u8],
    },
    /// A DSSE envelope (JSON value as in the bundle) and its DER signature.
    Dsse {
        /// `{payload, payloadType, signatures}`.
        envelope: serde_json::Value,
        /// The bytes the signature covers (the DSSE pre-authentication encoding).
        pae: &'a [u8],
        /// DER ECDSA signature.
        signature: &'a [u8],
    },
}

/// A logged entry.
#[derive(Debug, Clone)]
pub struct Logged {
    /// The bundle's `tlogEntries[]` element.
    pub entry: serde_json::Value,
    /// cosign 2's `dev.sigstore.cosign/bundle` annotation (Rekor v1 only: Rekor v2 gives no
    /// signed entry timestamp).
    pub cosign2_bundle: Option<String>,
    /// The log index.
    pub index: String,
}

fn hex_to_b64(hex: &str) -> Option<String> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    bytes.map(|b| STANDARD.encode(b))
}

/// Logs `entry`, signed by the holder of `cert_der`, in `log`.
pub async fn log(
    service: &Service,
    log: &Tlog,
    entry: &Entry<'_>,
    cert_der: &[u8],
) -> Result<Logged> {
    let signature = match entry {
        Entry::HashedRekord { signature, .. } | Entry::Dsse { signature, .. } => *signature,
    };
    let (url, request) = if log.version == 2 {
        let verifier = json!({
            "x509Certificate": {"rawBytes": STANDARD.encode(cert_der)},
            "keyDetails": "PKIX_ECDSA_P256_SHA_256",
        });
        let request = match entry {
            Entry::HashedRekord { payload, signature } => json!({"hashedRekordRequestV002": {
                "digest": STANDARD.encode(Sha256::digest(payload)),
                "signature": {"content": STANDARD.encode(signature), "verifier": verifier},
            }}),
            // rekor-tiles takes hashedrekord only: a DSSE signature is logged as one over the
            // SHA-256 of its pre-authentication encoding (what cosign 3 and sigstore-go do).
            Entry::Dsse { pae, signature, .. } => json!({"hashedRekordRequestV002": {
                "digest": STANDARD.encode(Sha256::digest(pae)),
                "signature": {"content": STANDARD.encode(signature), "verifier": verifier},
            }}),
        };
        (format!("{}/api/v2/log/entries", log.url), request)
    } else {
        let pem = STANDARD.encode(super::fulcio::pem_cert(cert_der));
        let request = match entry {
            Entry::HashedRekord { payload, signature } => json!({
                "apiVersion": "0.0.1", "kind": "hashedrekord",
                "spec": {
                    "data": {"hash": {"algorithm": "sha256", "value": Sha256::digest(payload).iter().map(|b| format!("{b:02x}")).collect::<String>()}},
                    "signature": {"content": STANDARD.encode(signature), "publicKey": {"content": pem}},
                },
            }),
            Entry::Dsse { envelope, .. } => json!({
                "apiVersion": "0.0.1", "kind": "dsse",
                "spec": {"proposedContent": {"envelope": envelope.to_string(), "verifiers": [pem]}},
            }),
        };
        (format!("{}/api/v1/log/entries", log.url), request)
    };
    let answer = post_json(service, &url, &request, 4 << 20).await?;
    let bad = |why: &str| Error::Keyless(format!("Rekor at {url}: {why}"));
    let v: serde_json::Value =
        serde_json::from_slice(&answer).map_err(|_| bad("the answer is not JSON"))?;
    let logged = if log.version == 2 {
        let index = v
            .get("logIndex")
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| i.to_string())
            })
            .unwrap_or_else(|| "0".into());
        Logged {
            entry: v,
            cosign2_bundle: None,
            index,
        }
    } else {
        from_v1(&v).ok_or_else(|| bad("the answer is not a Rekor v1 log entry"))?
    };
    // The entry must be of this signature: its canonical body carries the signature.
    let body = logged
        .entry
        .get("canonicalizedBody")
        .and_then(|b| b.as_str())
        .and_then(|b| STANDARD.decode(b).ok())
        .ok_or_else(|| bad("the entry has no canonicalizedBody"))?;
    let sig = STANDARD.encode(signature);
    if !String::from_utf8_lossy(&body).contains(&sig) {
        return Err(bad(
            "the entry it returned does not hold this signature (another entry)",
        ));
    }
    Ok(logged)
}

/// A Rekor v1 answer (`{uuid: {body, integratedTime, logID, logIndex, verification}}`) as a
/// bundle `TransparencyLogEntry` and cosign 2's bundle annotation.
fn from_v1(v: &serde_json::Value) -> Option<Logged> {
    let (_, e) = v.as_object()?.iter().next()?;
    let body = e.get("body")?.as_str()?;
    let integrated = e.get("integratedTime")?.as_i64()?;
    let index = e.get("logIndex")?.as_i64()?;
    let log_id = e.get("logID")?.as_str()?;
    let set = e.pointer("/verification/signedEntryTimestamp")?.as_str()?;
    let kind: serde_json::Value = STANDARD
        .decode(body)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())?;
    let mut entry = json!({
        "logIndex": index.to_string(),
        "logId": {"keyId": hex_to_b64(log_id)?},
        "kindVersion": {"kind": kind.get("kind")?, "version": kind.get("apiVersion")?},
        "integratedTime": integrated.to_string(),
        "inclusionPromise": {"signedEntryTimestamp": set},
        "canonicalizedBody": body,
    });
    if let Some(p) = e.pointer("/verification/inclusionProof") {
        let hashes: Option<Vec<String>> = p
            .get("hashes")?
            .as_array()?
            .iter()
            .map(|h| hex_to_b64(h.as_str()?))
            .collect();
        entry["inclusionProof"] = json!({
            "logIndex": p.get("logIndex")?.as_i64()?.to_string(),
            "rootHash": hex_to_b64(p.get("rootHash")?.as_str()?)?,
            "treeSize": p.get("treeSize")?.as_i64()?.to_string(),
            "hashes": hashes?,
            "checkpoint": {"envelope": p.get("checkpoint")?.as_str()?},
        });
    }
    let annotation = json!({
        "SignedEntryTimestamp": set,
        "Payload": {"body": body, "integratedTime": integrated, "logIndex": index, "logID": log_id},
    });
    Some(Logged {
        entry,
        cosign2_bundle: Some(annotation.to_string()),
        index: index.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_answer_becomes_an_entry() {
        let body = STANDARD.encode(br#"{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{}}"#);
        let v = json!({"24296fb2": {"body": body, "integratedTime": 1700000000, "logIndex": 7,
            "logID": "c0d2", "verification": {"signedEntryTimestamp": "U0VU",
            "inclusionProof": {"logIndex": 7, "rootHash": "00ff", "treeSize": 8, "hashes": ["01"],
            "checkpoint": "cp\n"}}}});
        let l = from_v1(&v).unwrap();
        assert_eq!(l.entry["logId"]["keyId"], "wNI=");
        assert_eq!(l.entry["kindVersion"]["kind"], "hashedrekord");
        assert_eq!(l.entry["inclusionProof"]["rootHash"], "AP8=");
        assert_eq!(l.entry["integratedTime"], "1700000000");
        assert!(l.cosign2_bundle.unwrap().contains(r#""logIndex":7"#));
        assert!(from_v1(&json!({"x": {}})).is_none());
    }
}

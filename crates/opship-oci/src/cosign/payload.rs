//! The simple-signing payload cosign signs, byte for byte as cosign writes it (Go
//! `json.Marshal` of sigstore's `payload.SimpleContainerImage`: compact, struct order,
//! `optional` keys sorted, `<` `>` `&` escaped as `\u003c` `\u003e` `\u0026`), and its parsing
//! for verification, which reads whatever a signer wrote (skopeo's and sigstore-rs's payloads
//! differ from cosign's in the identity and the optional fields).

use std::collections::BTreeMap;

use opship_core::gojson::write_str;
use opship_core::image::oci::Digest;

/// `critical.type` of every cosign image signature.
pub const TYPE: &str = "cosign container image signature";

/// The payload for `digest` with identity `docker_reference` (cosign: the repository,
/// `registry/path`, no tag) and the `-a key=value` annotations (`optional`; `null` when none).
pub fn build(
    docker_reference: &str,
    digest: &Digest,
    optional: &BTreeMap<String, String>,
) -> Vec<u8> {
    let mut s = String::with_capacity(256);
    s.push_str(r#"{"critical":{"identity":{"docker-reference":"#);
    write_str(&mut s, docker_reference, true);
    s.push_str(r#"},"image":{"docker-manifest-digest":"#);
    write_str(&mut s, digest.as_str(), true);
    s.push_str(r#"},"type":"#);
    write_str(&mut s, TYPE, true);
    s.push_str(r#"},"optional":"#);
    if optional.is_empty() {
        s.push_str("null");
    } else {
        s.push('{');
        for (i, (k, v)) in optional.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            write_str(&mut s, k, true);
            s.push(':');
            write_str(&mut s, v, true);
        }
        s.push('}');
    }
    s.push('}');
    s.into_bytes()
}

/// What a payload claims.
#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    /// `critical.identity.docker-reference`.
    pub docker_reference: String,
    /// `critical.image.docker-manifest-digest`.
    pub digest: String,
    /// `critical.type`.
    pub kind: String,
    /// `optional` (any JSON values), empty when `null` or absent.
    pub optional: serde_json::Map<String, serde_json::Value>,
    /// The whole payload.
    pub json: serde_json::Value,
    /// Who the certificate says signed, when verified keylessly (set by verification, never
    /// read from the payload).
    pub signer: Option<crate::cosign::sigstore::CertSigner>,
}

/// Reads the claims of a payload; the reason when it is not a simple-signing payload.
pub fn parse(bytes: &[u8]) -> Result<Claims, String> {
    let json: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the payload is not JSON: {e}"))?;
    let field = |ptr: &str| -> Result<String, String> {
        json.pointer(ptr)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "the payload has no string `{}`",
                    &ptr[1..].replace('/', ".")
                )
            })
    };
    let kind = field("/critical/type")?;
    let digest = field("/critical/image/docker-manifest-digest")?;
    let docker_reference = field("/critical/identity/docker-reference")?;
    let optional = match json.get("optional") {
        None | Some(serde_json::Value::Null) => serde_json::Map::new(),
        Some(serde_json::Value::Object(m)) => m.clone(),
        Some(_) => return Err("the payload's `optional` is not an object".into()),
    };
    Ok(Claims {
        docker_reference,
        digest,
        kind,
        optional,
        json,
        signer: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:eb049c458fdc6cc2c0a40c1cd5e2de25abb8db7a99a642a844e6012f453bef9c";

    #[test]
    fn exactly_cosigns_bytes() {
        // The payload cosign wrote in the reference run (oci-sign-helm-anchors.md §2.1).
        let p = build(
            "127.0.0.1:5000/demo/bundle",
            &Digest::parse(D).unwrap(),
            &BTreeMap::new(),
        );
        assert_eq!(
            String::from_utf8(p).unwrap(),
            r#"{"critical":{"identity":{"docker-reference":"127.0.0.1:5000/demo/bundle"},"image":{"docker-manifest-digest":"sha256:eb049c458fdc6cc2c0a40c1cd5e2de25abb8db7a99a642a844e6012f453bef9c"},"type":"cosign container image signature"},"optional":null}"#
        );
    }

    #[test]
    fn annotations_sorted_and_go_escaped() {
        let mut a = BTreeMap::new();
        a.insert("z".to_owned(), "1".to_owned());
        a.insert("a".to_owned(), "<b>&\"q\"\n\u{1}".to_owned());
        let p = String::from_utf8(build("r/x", &Digest::parse(D).unwrap(), &a)).unwrap();
        assert!(
            p.ends_with(r#""optional":{"a":"\u003cb\u003e\u0026\"q\"\n\u0001","z":"1"}}"#),
            "{p}"
        );
        let c = parse(p.as_bytes()).unwrap();
        assert_eq!(c.optional["a"], "<b>&\"q\"\n\u{1}");
        assert_eq!(c.digest, D);
        assert_eq!(c.kind, TYPE);
        assert_eq!(c.docker_reference, "r/x");
    }

    #[test]
    fn parse_reasons() {
        assert!(parse(b"{").unwrap_err().contains("not JSON"));
        assert_eq!(
            parse(br#"{"critical":{"type":"x"}}"#).unwrap_err(),
            "the payload has no string `critical.image.docker-manifest-digest`"
        );
    }
}

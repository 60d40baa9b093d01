//! Signature verification with the public keys Sigstore uses (ECDSA P-256/P-384/P-521,
//! Ed25519, RSA PKCS#1 v1.5), given as PKIX SubjectPublicKeyInfo DER, through aws-lc-rs (the
//! backend rustls and the `sigstore` crate already use here). The hash follows the key, as
//! Sigstore's key details do (P-256 with SHA-256, P-384 with SHA-384, P-521 with SHA-512).

use aws_lc_rs::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use x509_cert::der::Decode as _;
use x509_cert::der::oid::ObjectIdentifier;
use x509_cert::spki::SubjectPublicKeyInfoRef;

const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
const P521: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.35");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");

/// A verification key: its algorithm and raw key bytes, parsed from SPKI DER.
#[derive(Clone)]
pub struct VerifyKey {
    alg: &'static dyn VerificationAlgorithm,
    raw: Vec<u8>,
    der: Vec<u8>,
    kind: &'static str,
}

impl std::fmt::Debug for VerifyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VerifyKey({})", self.kind)
    }
}

impl VerifyKey {
    /// Parses a PKIX SubjectPublicKeyInfo (DER); the reason when it is no key Sigstore uses.
    pub fn from_spki_der(der: &[u8]) -> Result<Self, String> {
        let spki = SubjectPublicKeyInfoRef::from_der(der)
            .map_err(|e| format!("not a PKIX public key ({e})"))?;
        let raw = spki
            .subject_public_key
            .as_bytes()
            .ok_or("the public key bit string has unused bits")?
            .to_vec();
        let oid = spki.algorithm.oid;
        let (alg, kind): (&'static dyn VerificationAlgorithm, _) = if oid == EC_PUBLIC_KEY {
            let curve = spki
                .algorithm
                .parameters
                .and_then(|p| p.decode_as::<ObjectIdentifier>().ok())
                .ok_or("an EC public key without a named curve")?;
            match curve {
                c if c == P256 => (&signature::ECDSA_P256_SHA256_ASN1, "ECDSA P-256"),
                c if c == P384 => (&signature::ECDSA_P384_SHA384_ASN1, "ECDSA P-384"),
                c if c == P521 => (&signature::ECDSA_P521_SHA512_ASN1, "ECDSA P-521"),
                c => return Err(format!("unsupported EC curve {c}")),
            }
        } else if oid == ED25519 {
            (&signature::ED25519, "Ed25519")
        } else if oid == RSA {
            (&signature::RSA_PKCS1_2048_8192_SHA256, "RSA")
        } else {
            return Err(format!("unsupported public key algorithm {oid}"));
        };
        Ok(VerifyKey {
            alg,
            raw,
            der: der.to_vec(),
            kind,
        })
    }

    /// The SPKI DER the key was read from.
    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// `ECDSA P-256`, `Ed25519`, … for messages.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Whether `sig` is this key's signature over `message`.
    pub fn verifies(&self, message: &[u8], sig: &[u8]) -> bool {
        UnparsedPublicKey::new(self.alg, &self.raw)
            .verify(message, sig)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_garbage_and_checks_signatures() {
        assert!(
            VerifyKey::from_spki_der(b"\x30\x00")
                .unwrap_err()
                .contains("not a PKIX")
        );
        let key = crate::cosign::PrivateKey::generate().unwrap();
        let v = VerifyKey::from_spki_der(key.public().der()).unwrap();
        assert_eq!(v.kind(), "ECDSA P-256");
        let sig = key.sign(b"message").unwrap();
        assert!(v.verifies(b"message", &sig));
        assert!(!v.verifies(b"messagf", &sig));
    }
}

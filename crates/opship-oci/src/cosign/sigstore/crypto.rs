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

/// A digest a signature is made over, when the signed structure names it (X.509 and CMS
/// signature algorithms) rather than the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    P256,
    P384,
    P521,
    Ed25519,
    Rsa,
}

/// A verification key: its algorithm and raw key bytes, parsed from SPKI DER.
#[derive(Clone)]
pub struct VerifyKey {
    alg: &'static dyn VerificationAlgorithm,
    family: Family,
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
        let (alg, kind, family): (&'static dyn VerificationAlgorithm, _, _) =
            if oid == EC_PUBLIC_KEY {
                let curve = spki
                    .algorithm
                    .parameters
                    .and_then(|p| p.decode_as::<ObjectIdentifier>().ok())
                    .ok_or("an EC public key without a named curve")?;
                match curve {
                    c if c == P256 => (
                        &signature::ECDSA_P256_SHA256_ASN1,
                        "ECDSA P-256",
                        Family::P256,
                    ),
                    c if c == P384 => (
                        &signature::ECDSA_P384_SHA384_ASN1,
                        "ECDSA P-384",
                        Family::P384,
                    ),
                    c if c == P521 => (
                        &signature::ECDSA_P521_SHA512_ASN1,
                        "ECDSA P-521",
                        Family::P521,
                    ),
                    c => return Err(format!("unsupported EC curve {c}")),
                }
            } else if oid == ED25519 {
                (&signature::ED25519, "Ed25519", Family::Ed25519)
            } else if oid == RSA {
                (&signature::RSA_PKCS1_2048_8192_SHA256, "RSA", Family::Rsa)
            } else {
                return Err(format!("unsupported public key algorithm {oid}"));
            };
        Ok(VerifyKey {
            alg,
            family,
            raw,
            der: der.to_vec(),
            kind,
        })
    }

    /// Parses the first `PUBLIC KEY` block of a PEM text (cosign's `.pub` files).
    pub fn from_pem(text: &[u8]) -> Result<Self, String> {
        let text = std::str::from_utf8(text).map_err(|_| "not a PEM text (not UTF-8)")?;
        let der = crate::cosign::key::pem_blocks(text)
            .into_iter()
            .find(|(label, _)| label == "PUBLIC KEY")
            .ok_or("no `PUBLIC KEY` PEM block")?
            .1?;
        Self::from_spki_der(&der)
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

    /// The hash this key signs a message with (Sigstore's key details), or `None` for
    /// Ed25519, which signs the message itself: what a streamed artifact is hashed with.
    pub fn message_hash(&self) -> Option<&'static aws_lc_rs::digest::Algorithm> {
        use aws_lc_rs::digest::{SHA256, SHA384, SHA512};
        match self.family {
            Family::P256 | Family::Rsa => Some(&SHA256),
            Family::P384 => Some(&SHA384),
            Family::P521 => Some(&SHA512),
            Family::Ed25519 => None,
        }
    }

    /// Whether `sig` is this key's signature over the message whose [`Self::message_hash`]
    /// is `digest` (false for Ed25519, which needs the message).
    pub fn verifies_digest(&self, digest: &aws_lc_rs::digest::Digest, sig: &[u8]) -> bool {
        self.message_hash()
            .is_some_and(|h| std::ptr::eq(h, digest.algorithm()))
            && UnparsedPublicKey::new(self.alg, &self.raw)
                .verify_digest(digest, sig)
                .is_ok()
    }

    /// Whether `sig` is this key's signature over `message` hashed with `hash` (Ed25519
    /// signs the message itself and ignores it).
    pub fn verifies_with(&self, hash: Hash, message: &[u8], sig: &[u8]) -> bool {
        use signature::*;
        let alg: &'static dyn VerificationAlgorithm = match (self.family, hash) {
            (Family::P256, Hash::Sha256) => &ECDSA_P256_SHA256_ASN1,
            (Family::P256, Hash::Sha384) => &ECDSA_P256_SHA384_ASN1,
            (Family::P256, Hash::Sha512) => &ECDSA_P256_SHA512_ASN1,
            (Family::P384, Hash::Sha256) => &ECDSA_P384_SHA256_ASN1,
            (Family::P384, Hash::Sha384) => &ECDSA_P384_SHA384_ASN1,
            (Family::P384, Hash::Sha512) => &ECDSA_P384_SHA512_ASN1,
            (Family::P521, Hash::Sha256) => &ECDSA_P521_SHA256_ASN1,
            (Family::P521, Hash::Sha384) => &ECDSA_P521_SHA384_ASN1,
            (Family::P521, Hash::Sha512) => &ECDSA_P521_SHA512_ASN1,
            (Family::Ed25519, _) => &ED25519,
            (Family::Rsa, Hash::Sha256) => &RSA_PKCS1_2048_8192_SHA256,
            (Family::Rsa, Hash::Sha384) => &RSA_PKCS1_2048_8192_SHA384,
            (Family::Rsa, Hash::Sha512) => &RSA_PKCS1_2048_8192_SHA512,
        };
        UnparsedPublicKey::new(alg, &self.raw)
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

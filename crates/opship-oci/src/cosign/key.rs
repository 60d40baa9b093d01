//! cosign key files. The private key is PEM `ENCRYPTED SIGSTORE PRIVATE KEY` (or the older
//! `ENCRYPTED COSIGN PRIVATE KEY`) around the JSON envelope of go-securesystemslib's
//! `encrypted` package: scrypt (N, r=8, p=1, 32-byte salt) derives the key of a NaCl
//! secretbox (XSalsa20-Poly1305, 24-byte nonce) sealing the PKCS#8 DER of an ECDSA P-256 key.
//! The public key is PEM `PUBLIC KEY` (PKIX SubjectPublicKeyInfo).
//!
//! Generation, export and ECDSA come from the `sigstore` crate; decryption is ours because
//! sigstore refuses N=131072, which Go cosign accepts (its "OWASP" parameter set), and
//! because a wrong password must be reported as such. Passwords and key bytes are held in
//! `Zeroizing` buffers and never formatted into messages.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use crypto_secretbox::aead::{Aead, KeyInit};
use opship_core::input::{self, Kind};
use serde::Deserialize;
use sigstore::crypto::signing_key::{SigStoreKeyPair, SigStoreSigner};
use sigstore::crypto::{CosignVerificationKey, Signature, SigningScheme};
use zeroize::Zeroizing;

use crate::error::{Error, Result};

/// PEM label cosign ≥ 2.1 writes (and opship writes).
pub const SIGSTORE_LABEL: &str = "ENCRYPTED SIGSTORE PRIVATE KEY";
/// PEM label of cosign ≤ 2.0 and skopeo's `generate-sigstore-key`.
pub const COSIGN_LABEL: &str = "ENCRYPTED COSIGN PRIVATE KEY";
/// PEM label of the public key.
pub const PUBLIC_LABEL: &str = "PUBLIC KEY";
/// scrypt N values Go cosign accepts (legacy, standard, OWASP); r=8 and p=1 always.
pub const SCRYPT_N: [u64; 3] = [32768, 65536, 131072];

/// A decrypted ECDSA P-256 signing key.
pub struct PrivateKey {
    signer: SigStoreSigner,
    public: PublicKey,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PrivateKey(public {})", self.public.hint())
    }
}

/// A verification key.
#[derive(Debug, Clone)]
pub struct PublicKey {
    key: CosignVerificationKey,
    der: Vec<u8>,
}

/// A newly generated key pair, as file contents.
pub struct KeyFiles {
    /// The encrypted private key PEM (LF line ends).
    pub private_pem: Zeroizing<String>,
    /// The public key PEM (LF line ends).
    pub public_pem: String,
}

/// Blocks of a PEM file: label and decoded body.
pub(crate) fn pem_blocks(text: &str) -> Vec<(String, std::result::Result<Vec<u8>, String>)> {
    let mut out = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        let Some(label) = line
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        else {
            continue;
        };
        let end = format!("-----END {label}-----");
        let mut body = String::new();
        let mut closed = false;
        for l in lines.by_ref() {
            if l == end {
                closed = true;
                break;
            }
            // RFC 7468 allows headers (`Proc-Type: …`) only in legacy PEM; skip them.
            if !l.contains(':') {
                body.push_str(l);
            }
        }
        let decoded = if closed {
            STANDARD
                .decode(body.as_bytes())
                .map_err(|e| format!("the {label} block is not valid base64 ({e})"))
        } else {
            Err(format!("the {label} block has no END line"))
        };
        out.push((label.to_owned(), decoded));
    }
    out
}

fn key_err(path: &Path, message: impl Into<String>) -> Error {
    Error::Key {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

#[derive(Deserialize)]
struct Envelope {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

/// A cosign private key file, parsed but not decrypted: the PEM block, its JSON envelope and
/// the scrypt and secretbox parameters, all checked. Parsing is cheap; parameters cosign never
/// writes (an scrypt N other than 32768, 65536 or 131072, which could cost gigabytes and
/// minutes to derive) are refused here, before any key derivation.
pub struct EncryptedKey {
    path: PathBuf,
    n: u64,
    salt: Vec<u8>,
    nonce: Vec<u8>,
    ciphertext: Vec<u8>,
}

impl std::fmt::Debug for EncryptedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "EncryptedKey({}, scrypt N={})",
            opship_core::paths::show(&self.path),
            self.n
        )
    }
}

/// The Poly1305 tag every secretbox ciphertext starts with.
const SECRETBOX_TAG: usize = 16;

impl EncryptedKey {
    /// Reads a private key file (a regular file of at most 64 KiB, through
    /// `opship_core::input`) and parses it.
    pub fn read(path: &Path) -> Result<Self> {
        let text = input::read(path, Kind::Key)?;
        Self::parse(&text, path)
    }

    /// Parses the text of a cosign private key file (`path` is named in errors).
    pub fn parse(text: &[u8], path: &Path) -> Result<Self> {
        let text = std::str::from_utf8(text)
            .map_err(|_| key_err(path, "not a PEM file (not UTF-8 text)"))?;
        let blocks = pem_blocks(text);
        let Some((label, body)) = blocks.into_iter().next() else {
            return Err(key_err(
                path,
                format!("not a PEM file: no `-----BEGIN {SIGSTORE_LABEL}-----` line"),
            ));
        };
        if label != SIGSTORE_LABEL && label != COSIGN_LABEL {
            let hint = match label.as_str() {
                "PUBLIC KEY" => " (this is a public key; sign with the private key)",
                "EC PRIVATE KEY" | "PRIVATE KEY" | "RSA PRIVATE KEY" => {
                    " (an unencrypted key; cosign and opship only take encrypted cosign keys: \
                     `cosign import-key-pair` converts it)"
                }
                _ => "",
            };
            return Err(key_err(
                path,
                format!(
                    "PEM block `{label}` is not a cosign private key (expected `{SIGSTORE_LABEL}` \
                     or `{COSIGN_LABEL}`){hint}"
                ),
            ));
        }
        let body = body.map_err(|m| key_err(path, m))?;
        let env: Envelope = serde_json::from_slice(&body).map_err(|e| {
            key_err(
                path,
                format!("the encrypted key is not the cosign JSON envelope ({e})"),
            )
        })?;
        if env.kdf.name != "scrypt" {
            return Err(key_err(
                path,
                format!(
                    "unsupported key derivation `{}` (cosign uses scrypt)",
                    env.kdf.name
                ),
            ));
        }
        let KdfParams { n, r, p } = env.kdf.params;
        if !SCRYPT_N.contains(&n) || r != 8 || p != 1 {
            return Err(key_err(
                path,
                format!(
                    "unsupported scrypt parameters N={n} r={r} p={p} (cosign accepts N=32768, \
                     65536 or 131072 with r=8 p=1)"
                ),
            ));
        }
        if env.cipher.name != "nacl/secretbox" {
            return Err(key_err(
                path,
                format!(
                    "unsupported cipher `{}` (cosign uses nacl/secretbox)",
                    env.cipher.name
                ),
            ));
        }
        let b64 = |field: &str, s: &str| {
            STANDARD
                .decode(s)
                .map_err(|e| key_err(path, format!("`{field}` is not base64 ({e})")))
        };
        let salt = b64("kdf.salt", &env.kdf.salt)?;
        let nonce = b64("cipher.nonce", &env.cipher.nonce)?;
        let ciphertext = b64("ciphertext", &env.ciphertext)?;
        if nonce.len() != 24 {
            return Err(key_err(
                path,
                format!("the secretbox nonce has {} bytes, not 24", nonce.len()),
            ));
        }
        if ciphertext.len() <= SECRETBOX_TAG {
            return Err(key_err(
                path,
                format!(
                    "the ciphertext has {} bytes, too short for a sealed key (the file is damaged)",
                    ciphertext.len()
                ),
            ));
        }
        Ok(EncryptedKey {
            path: path.to_path_buf(),
            n,
            salt,
            nonce,
            ciphertext,
        })
    }

    /// The scrypt cost parameter N (one of [`SCRYPT_N`]).
    pub fn scrypt_n(&self) -> u64 {
        self.n
    }

    /// Derives the box key from `password` (scrypt, the slow part) and opens the key.
    pub fn decrypt(&self, password: &[u8]) -> Result<PrivateKey> {
        let path = self.path.as_path();
        let log_n = u8::try_from(self.n.trailing_zeros()).unwrap_or(u8::MAX);
        let params = scrypt::Params::new(log_n, 8, 1)
            .map_err(|e| key_err(path, format!("scrypt parameters: {e}")))?;
        let mut box_key = Zeroizing::new([0u8; 32]);
        scrypt::scrypt(password, &self.salt, &params, box_key.as_mut_slice())
            .map_err(|e| key_err(path, format!("scrypt: {e}")))?;
        let cipher = crypto_secretbox::XSalsa20Poly1305::new(crypto_secretbox::Key::from_slice(
            box_key.as_slice(),
        ));
        let plain = cipher
            .decrypt(
                crypto_secretbox::Nonce::from_slice(&self.nonce),
                self.ciphertext.as_slice(),
            )
            .map_err(|_| {
                key_err(
                    path,
                    "wrong password: the key does not decrypt with it (or the file is damaged)",
                )
            })?;
        PrivateKey::from_pkcs8_der(&Zeroizing::new(plain), path)
    }
}

impl PrivateKey {
    /// A new random P-256 key.
    pub fn generate() -> Result<Self> {
        let signer = SigningScheme::ECDSA_P256_SHA256_ASN1
            .create_signer()
            .map_err(|e| Error::Signature(format!("generating a P-256 key: {e}")))?;
        Self::from_signer(signer, Path::new("(new key)"))
    }

    fn from_signer(signer: SigStoreSigner, path: &Path) -> Result<Self> {
        let pair = signer
            .to_sigstore_keypair()
            .map_err(|e| key_err(path, format!("unusable key: {e}")))?;
        let der = pair
            .public_key_to_der()
            .map_err(|e| key_err(path, format!("unusable key: {e}")))?;
        let public = PublicKey::from_der(&der, path)?;
        Ok(PrivateKey { signer, public })
    }

    /// Reads a cosign private key file's text, decrypting it with `password`.
    pub fn from_encrypted_pem(text: &[u8], password: &[u8], path: &Path) -> Result<Self> {
        EncryptedKey::parse(text, path)?.decrypt(password)
    }

    /// The key of a decrypted key file: PKCS#8 DER of an ECDSA P-256 key.
    pub fn from_pkcs8_der(der: &[u8], path: &Path) -> Result<Self> {
        let pair = SigStoreKeyPair::from_der(der)
            .map_err(|e| key_err(path, format!("the decrypted key is not PKCS#8: {e}")))?;
        let signer = pair
            .to_sigstore_signer(&SigningScheme::ECDSA_P256_SHA256_ASN1)
            .map_err(|_| {
                key_err(
                    path,
                    format!(
                        "the key is a {pair}, not ECDSA P-256 (the only type opship signs with)"
                    ),
                )
            })?;
        Self::from_signer(signer, path)
    }

    /// Reads and decrypts a private key file (see [`EncryptedKey::read`]).
    pub fn read(path: &Path, password: &[u8]) -> Result<Self> {
        EncryptedKey::read(path)?.decrypt(password)
    }

    /// The encrypted PEM (label `ENCRYPTED SIGSTORE PRIVATE KEY`, scrypt N=32768 r=8 p=1: the
    /// parameters every cosign and skopeo release reads) and the public PEM.
    pub fn to_files(&self, password: &[u8]) -> Result<KeyFiles> {
        let pair = self
            .signer
            .to_sigstore_keypair()
            .map_err(|e| Error::Signature(format!("exporting the key: {e}")))?;
        let pem = pair
            .private_key_to_encrypted_pem(password)
            .map_err(|e| Error::Signature(format!("encrypting the key: {e}")))?;
        Ok(KeyFiles {
            private_pem: Zeroizing::new(pem.replace("\r\n", "\n")),
            public_pem: self.public.to_pem(),
        })
    }

    /// The public half.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// ECDSA P-256 over SHA-256 of `message`, ASN.1 DER.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        self.signer
            .sign(message)
            .map_err(|e| Error::Signature(format!("signing: {e}")))
    }
}

impl PublicKey {
    fn from_der(der: &[u8], path: &Path) -> Result<Self> {
        let key = CosignVerificationKey::from_der(der, &SigningScheme::ECDSA_P256_SHA256_ASN1)
            .map_err(|e| key_err(path, format!("not a P-256 public key: {e}")))?;
        Ok(PublicKey {
            key,
            der: der.to_vec(),
        })
    }

    /// Parses a `PUBLIC KEY` PEM (an ECDSA P-256 PKIX key).
    pub fn from_pem(text: &[u8], path: &Path) -> Result<Self> {
        let text = std::str::from_utf8(text)
            .map_err(|_| key_err(path, "not a PEM file (not UTF-8 text)"))?;
        let Some((label, body)) = pem_blocks(text).into_iter().next() else {
            return Err(key_err(
                path,
                "not a PEM file: no `-----BEGIN PUBLIC KEY-----` line",
            ));
        };
        if label != PUBLIC_LABEL {
            return Err(key_err(
                path,
                format!("PEM block `{label}` is not a public key (expected `{PUBLIC_LABEL}`)"),
            ));
        }
        let der = body.map_err(|m| key_err(path, m))?;
        // Checks that the key really is P-256: sigstore only records the scheme.
        let detected = CosignVerificationKey::try_from_der(&der)
            .map_err(|e| key_err(path, format!("not a usable public key: {e}")))?;
        if !matches!(detected, CosignVerificationKey::ECDSA_P256_SHA256_ASN1(_)) {
            return Err(key_err(
                path,
                "not an ECDSA P-256 public key (the only type opship verifies)",
            ));
        }
        Self::from_der(&der, path)
    }

    /// Reads a public key file: a regular file of at most 64 KiB (`opship_core::input`).
    pub fn read(path: &Path) -> Result<Self> {
        let text = input::read(path, Kind::Key)?;
        Self::from_pem(&text, path)
    }

    /// Whether `signature` (ASN.1 DER) is this key's signature over `message`.
    pub fn verifies(&self, signature: &[u8], message: &[u8]) -> bool {
        self.key
            .verify_signature(Signature::Raw(signature), message)
            .is_ok()
    }

    /// The PKIX DER.
    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// base64(sha256(PKIX DER)): the key hint of Sigstore bundles.
    pub fn hint(&self) -> String {
        use sha2::Digest as _;
        STANDARD.encode(sha2::Sha256::digest(&self.der))
    }

    /// PEM with LF line ends, 64 columns.
    pub fn to_pem(&self) -> String {
        let b64 = STANDARD.encode(&self.der);
        let mut out = format!("-----BEGIN {PUBLIC_LABEL}-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
            out.push('\n');
        }
        out.push_str(&format!("-----END {PUBLIC_LABEL}-----\n"));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generate_export_read_sign_verify() {
        let key = PrivateKey::generate().unwrap();
        let files = key.to_files(b"pw").unwrap();
        assert!(
            files
                .private_pem
                .starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
        );
        assert!(!files.private_pem.contains('\r'));
        let p = Path::new("k.key");
        let back = PrivateKey::from_encrypted_pem(files.private_pem.as_bytes(), b"pw", p).unwrap();
        assert_eq!(back.public().der(), key.public().der());
        let public = PublicKey::from_pem(files.public_pem.as_bytes(), p).unwrap();
        let sig = back.sign(b"payload").unwrap();
        assert!(public.verifies(&sig, b"payload"));
        assert!(!public.verifies(&sig, b"payloaD"));
        assert!(!public.verifies(&sig[..sig.len() - 1], b"payload"));

        let e = PrivateKey::from_encrypted_pem(files.private_pem.as_bytes(), b"nope", p)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("k.key: wrong password"), "{e}");
        assert!(!e.contains("nope"), "{e}");
        let e = PrivateKey::from_encrypted_pem(files.public_pem.as_bytes(), b"", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("this is a public key"), "{e}");
        let e = PublicKey::from_pem(files.private_pem.as_bytes(), p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a public key"), "{e}");
        let e = PrivateKey::from_encrypted_pem(
            b"-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
            b"",
            p,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("an unencrypted key"), "{e}");
        let e = PrivateKey::from_encrypted_pem(b"hello", b"", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a PEM file"), "{e}");
        // A damaged envelope is named as such, not as a wrong password.
        let text = "-----BEGIN ENCRYPTED COSIGN PRIVATE KEY-----\nbm90IGpzb24=\n-----END ENCRYPTED COSIGN PRIVATE KEY-----\n";
        let e = PrivateKey::from_encrypted_pem(text.as_bytes(), b"", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not the cosign JSON envelope"), "{e}");
    }

    /// cosign's envelope with these scrypt parameters, as a PEM file.
    fn envelope(n: u64, r: u32, ciphertext: &[u8]) -> String {
        let json = format!(
            r#"{{"kdf":{{"name":"scrypt","params":{{"N":{n},"r":{r},"p":1}},"salt":"{}"}},"cipher":{{"name":"nacl/secretbox","nonce":"{}"}},"ciphertext":"{}"}}"#,
            STANDARD.encode([1u8; 32]),
            STANDARD.encode([2u8; 24]),
            STANDARD.encode(ciphertext)
        );
        format!(
            "-----BEGIN {SIGSTORE_LABEL}-----\n{}\n-----END {SIGSTORE_LABEL}-----\n",
            STANDARD.encode(json)
        )
    }

    #[test]
    fn parameters_are_checked_before_any_derivation() {
        let p = Path::new("k.key");
        // 2^40 × 128 × r bytes of scrypt memory: refused by parse, which derives nothing.
        for (n, r) in [(1u64 << 40, 8), (32768, 1 << 20), (1 << 14, 8), (0, 8)] {
            let e = EncryptedKey::parse(envelope(n, r, &[0; 64]).as_bytes(), p)
                .unwrap_err()
                .to_string();
            assert!(e.contains("unsupported scrypt parameters"), "{e}");
        }
        let e = EncryptedKey::parse(envelope(32768, 8, &[0; 16]).as_bytes(), p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("too short for a sealed key"), "{e}");
        for n in SCRYPT_N {
            let key = EncryptedKey::parse(envelope(n, 8, &[0; 64]).as_bytes(), p).unwrap();
            assert_eq!(key.scrypt_n(), n);
        }
        // Not PKCS#8, and PKCS#8 of a P-256 key.
        let e = PrivateKey::from_pkcs8_der(b"\x30\x03\x02\x01\x00", p)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("k.key: the decrypted key is not PKCS#8"),
            "{e}"
        );
    }
}

//! Fuzzes cosign key parsing: the encrypted private key file (PEM, the JSON envelope, scrypt
//! and secretbox parameters), the public key PEM, and the PKCS#8 DER a decrypted key file
//! holds, each with the same input.
//!
//! Key derivation itself is not run: `EncryptedKey::parse` accepts only cosign's scrypt
//! N values (32768, 65536, 131072) and refuses the rest before deriving, and deriving even the
//! smallest (32 MiB, a tenth of a second) per input would slow fuzzing a thousandfold. What
//! follows the derivation, the secretbox and the PKCS#8 parse, is reached through
//! `PrivateKey::from_pkcs8_der`.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use opship_oci::cosign::key::SCRYPT_N;
use opship_oci::cosign::{EncryptedKey, PrivateKey, PublicKey};

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.key");
    // Every refusal names the file; none is a panic.
    let named = |e: opship_oci::Error| {
        let text = e.to_string();
        assert!(text.starts_with("fuzz.key: "), "{text}");
    };
    match EncryptedKey::parse(data, path) {
        Ok(key) => assert!(SCRYPT_N.contains(&key.scrypt_n())),
        Err(e) => named(e),
    }
    if let Err(e) = PublicKey::from_pem(data, path) {
        named(e);
    }
    match PrivateKey::from_pkcs8_der(data, path) {
        // A key that parses can sign, and its public half verifies what it signed.
        Ok(key) => {
            let sig = key.sign(b"payload").expect("sign");
            assert!(key.public().verifies(&sig, b"payload"));
        }
        Err(e) => named(e),
    }
});

//! Fuzzes what `opship verify` and `verify-attestation` read from a registry before any
//! signature check: referrer manifests (`referrers::Referrer::parse`), DSSE envelopes
//! (`dsse::Envelope::parse`, `.att` layers), in-toto statements (`bundle::Statement::parse`)
//! and Sigstore bundles (`bundle::open`, `bundle::check`) with a fixed key. None may panic; a
//! parsed envelope re-serialises to one that parses to the same value; nothing random verifies.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use opship_core::image::oci::Digest;
use opship_oci::cosign::bundle::{self, Statement};
use opship_oci::cosign::dsse::Envelope;
use opship_oci::cosign::referrers::Referrer;
use opship_oci::cosign::PrivateKey;

fn key() -> &'static PrivateKey {
    static KEY: OnceLock<PrivateKey> = OnceLock::new();
    KEY.get_or_init(|| PrivateKey::generate().expect("key"))
}

fuzz_target!(|data: &[u8]| {
    let _ = Referrer::parse(data);
    if let Ok(env) = Envelope::parse(data) {
        let again = env.to_value().to_string().into_bytes();
        assert_eq!(Envelope::parse(&again).expect("round trip"), env);
        assert!(!env.verifies(key().public()));
    }
    if let Ok(st) = Statement::parse(data) {
        let _ = st.annotations(&Digest::of(data));
    }
    let digest = Digest::of(b"fuzz");
    assert!(bundle::open(data, key().public(), &digest).is_err());
    assert!(bundle::check(data, key().public(), &digest).is_err());
});

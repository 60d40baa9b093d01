//! cosign-compatible signatures, offline with a key (no Fulcio, no Rekor): key files (`key`),
//! the simple-signing payload (`payload`), the `.sig` manifest (`manifest`), signing into a
//! registry or an OCI layout (`signing`), verification (`verification`) and cosign v3's Sigstore
//! bundles attached as OCI 1.1 referrers (`bundle`). The formats are
//! cosign's, so cosign, skopeo, sigstore-rs and a few lines of openssl read what opship
//! writes, and opship reads what they write.

pub mod bundle;
pub mod key;
pub mod manifest;
pub mod payload;
pub mod signing;
pub mod verification;

pub use key::{EncryptedKey, PrivateKey, PublicKey};
pub use verification::{Identity, Policy, Report};

//! cosign-compatible signatures and attestations, offline with a key (no Fulcio, no Rekor):
//! key files (`key`), the simple-signing payload (`payload`), the `.sig` manifest
//! (`manifest`), signing into a registry or an OCI layout (`signing`), verification
//! (`verification`), DSSE envelopes (`dsse`), OCI 1.1 referrers and their fallback tag
//! (`referrers`), cosign v3's Sigstore bundles (`bundle`), attestations (`attestation`) and the
//! SLSA v1 provenance predicate (`provenance`). The formats are cosign's, so cosign 2 and 3,
//! skopeo, sigstore-rs and a few lines of openssl read what opship writes, and opship reads
//! what they write.

pub mod attestation;
pub mod bundle;
pub mod dsse;
pub mod key;
pub mod keyless;
pub mod manifest;
pub mod payload;
pub mod provenance;
pub mod referrers;
pub mod signing;
pub mod sigstore;
pub mod verification;

pub use key::{EncryptedKey, PrivateKey, PublicKey};
pub use verification::{Identity, Policy, Report};

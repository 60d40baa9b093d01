//! Keyless (Sigstore) verification material: the trusted root of a Sigstore instance
//! (`trust`: Fulcio CA chains, Rekor v1/v2 and CT log keys, timestamp authorities, each with
//! its validity window), signature checks with any key type those roots hold (`crypto`), and
//! transparency-log proofs (`tlog`: RFC 6962/9162 Merkle inclusion proofs and signed-note
//! checkpoints, Rekor v1 inclusion promises). Bundle, certificate-identity and timestamp verification build on these.

pub mod crypto;
pub mod tlog;
pub mod trust;

pub use crypto::VerifyKey;
pub use tlog::{Checkpoint, InclusionProof, VerifiedEntry};
pub use trust::{CertificateAuthority, TimeRange, TransparencyLog, TrustedRoot};

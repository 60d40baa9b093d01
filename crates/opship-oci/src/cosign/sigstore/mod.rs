//! Keyless (Sigstore) verification: the trusted root of a Sigstore instance (`trust`: Fulcio
//! CA chains, Rekor v1/v2 and CT log keys, timestamp authorities, each with its validity
//! window), signature checks with any key type those roots hold (`crypto`), transparency-log
//! proofs (`tlog`), RFC 3161 timestamps (`timestamp`), Fulcio certificates, SCTs and identity
//! policy (`cert`), and the bundle verification that puts them together (`verify`).

pub mod asn1;
pub mod cert;
pub mod crypto;
pub mod timestamp;
pub mod tlog;
pub mod trust;
pub mod verify;

pub use cert::{CertSigner, GithubClaim, IdentityPolicy, Matcher};
pub use crypto::VerifyKey;
pub use tlog::{Checkpoint, InclusionProof, VerifiedEntry};
pub use trust::{CertificateAuthority, TimeRange, TransparencyLog, TrustedRoot};
pub use verify::{Artifact, Options, Signer, Verified, verify_bundle};

//! opship-oci: the network half of opship. An OCI registry client on top of `oci-client`:
//! push an image from an OCI layout (HEAD before upload, manifest by digest before the tag),
//! pull into a layout (every digest verified), resolve, inspect, list tags, and credentials
//! from flags, Docker `config.json`, containers `auth.json` and credential helpers. Async; the
//! CLI drives it on a current-thread tokio runtime. Cosign-compatible signatures (`cosign`).

pub mod artifact;
pub mod auth;
pub mod batch;
pub mod cosign;
pub mod error;
pub mod redact;
pub mod registry;

pub use auth::Auth;
pub use error::{Error, Result};
pub use registry::{Options, Registry};

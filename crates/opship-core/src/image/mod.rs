//! OCI images of bundles without a container engine: reproducible layers, config and manifest,
//! the OCI image layout on disk, `docker load` archives, and safe unpacking of pulled layers.

pub mod archive;
pub mod build;
pub mod layer;
pub mod layout;
pub mod oci;
pub mod unpack;

pub use build::{BuildOptions, Image, build_bundle};
pub use layout::Layout;
pub use oci::{Digest, Format};

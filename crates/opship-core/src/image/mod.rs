//! OCI images of bundles without a container engine: reproducible layers, config and manifest,
//! the OCI image layout on disk, `docker load` archives, and safe unpacking of pulled layers.

pub mod unpack;

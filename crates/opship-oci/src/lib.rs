//! opship-oci: the network half of opship. The OCI registry client (push, pull, auth, retries)
//! and cosign-format signatures will live here, async and with heavy dependencies, so that the
//! offline core in opship-core builds and tests without them. Nothing is implemented yet: the
//! image and signing issues fill this crate.

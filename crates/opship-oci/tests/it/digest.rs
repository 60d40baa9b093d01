//! `Registry::manifest_digest` (what `generate bundle --use-image-digests` pins) against the
//! fake registry: an index is pinned by its own digest without fetching a platform manifest,
//! the digest is computed from the bytes, and a lying header or a non-image manifest is refused.

use opship_core::image::oci::Digest;
use opship_oci::Error;
use opship_oci::registry::{self, Registry};

use super::{OCI_MANIFEST, block, fake, manifest, ok, options};

const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// An index of one platform manifest (`platform_digest`); returns (bytes, digest).
fn index(platform_digest: &str) -> (Vec<u8>, String) {
    let i = format!(
        r#"{{"schemaVersion":2,"mediaType":"{OCI_INDEX}","manifests":[{{"mediaType":"{OCI_MANIFEST}","digest":"{platform_digest}","size":100,"platform":{{"architecture":"arm64","os":"linux"}}}}]}}"#
    );
    let d = Digest::of(i.as_bytes()).to_string();
    (i.into_bytes(), d)
}

#[test]
fn an_index_is_pinned_by_its_own_digest_and_no_platform_is_fetched() {
    let (_, platform) = manifest(b"{}");
    let (body, digest) = index(&platform);
    let platform_path = format!("/v2/multi/manifests/{platform}");
    let server = fake(vec![
        (
            "/v2/multi/manifests/1",
            vec![ok(
                &body,
                &[
                    ("Content-Type", OCI_INDEX),
                    ("Docker-Content-Digest", &digest),
                ],
            )],
        ),
        (&platform_path, vec![ok(b"{}", &[])]),
    ]);
    let r = registry::parse_reference(&format!("{}/multi:1", server.addr)).unwrap();
    let reg = Registry::new(&r, opship_oci::Auth::Anonymous, options());
    let (d, media_type) = block(reg.manifest_digest(&r)).unwrap();
    assert_eq!(d.as_str(), digest);
    assert_eq!(media_type, OCI_INDEX);
    assert!(!server.hits.lock().unwrap().contains_key(&platform_path));
}

#[test]
fn without_a_digest_header_the_digest_is_that_of_the_bytes() {
    let (body, digest) = manifest(b"{}");
    let server = fake(vec![(
        "/v2/plain/manifests/1",
        vec![ok(&body, &[("Content-Type", OCI_MANIFEST)])],
    )]);
    let r = registry::parse_reference(&format!("{}/plain:1", server.addr)).unwrap();
    let reg = Registry::new(&r, opship_oci::Auth::Anonymous, options());
    let (d, media_type) = block(reg.manifest_digest(&r)).unwrap();
    assert_eq!(d.as_str(), digest);
    assert_eq!(media_type, OCI_MANIFEST);
}

#[test]
fn a_lying_digest_header_and_a_schema1_manifest_are_refused() {
    let (body, _) = index(&manifest(b"{}").1);
    let (_, other) = manifest(b"[]");
    let schema1 = br#"{"schemaVersion":1,"mediaType":"application/vnd.docker.distribution.manifest.v1+prettyjws","name":"old","tag":"1","fsLayers":[]}"#;
    let server = fake(vec![
        (
            "/v2/lie/manifests/1",
            vec![ok(
                &body,
                &[
                    ("Content-Type", OCI_INDEX),
                    ("Docker-Content-Digest", &other),
                ],
            )],
        ),
        ("/v2/old/manifests/1", vec![ok(schema1, &[])]),
    ]);
    let r = registry::parse_reference(&format!("{}/lie:1", server.addr)).unwrap();
    let reg = Registry::new(&r, opship_oci::Auth::Anonymous, options());
    let err = block(reg.manifest_digest(&r)).unwrap_err();
    assert!(matches!(err, Error::DigestMismatch { .. }), "{err}");
    assert!(err.to_string().contains(&other), "{err}");

    let r = registry::parse_reference(&format!("{}/old:1", server.addr)).unwrap();
    let err = block(reg.manifest_digest(&r)).unwrap_err();
    assert!(
        err.to_string()
            .contains("manifest.v1+prettyjws, not an OCI or Docker v2 image or index"),
        "{err}"
    );
}

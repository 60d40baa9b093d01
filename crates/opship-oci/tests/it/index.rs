//! Pulls of image indexes against the fake registry: every listed manifest is fetched by digest
//! and checked against its entry; a child with other content, another size or none at all
//! fails the pull with an error naming it, and nothing is left behind (no `index.json`, no
//! layout directory the pull created).

use opship_core::image::oci::Digest;
use opship_oci::registry::{self, Registry};
use opship_oci::{Auth, Error};

use super::{CONFIG, OCI_MANIFEST, block, fake, manifest, ok, options};

const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// An index listing `child` (digest, size) for linux/amd64; returns (bytes, digest).
fn index_of(child: &str, size: usize) -> (Vec<u8>, String) {
    let i = format!(
        r#"{{"schemaVersion":2,"mediaType":"{OCI_INDEX}","manifests":[{{"mediaType":"{OCI_MANIFEST}","digest":"{child}","size":{size},"platform":{{"architecture":"amd64","os":"linux"}}}}]}}"#
    );
    let d = Digest::of(i.as_bytes()).to_string();
    (i.into_bytes(), d)
}

/// Pulls `multi:1` (the index `index`, whose child path answers `child`) into a new
/// directory; the error, and whether the directory exists afterwards.
fn pull_with_child(
    index: (Vec<u8>, String),
    child_digest: &str,
    child: Option<Vec<u8>>,
) -> (Error, bool) {
    let cd = Digest::of(CONFIG).to_string();
    let mut routes = vec![
        (
            "/v2/multi/manifests/1".to_owned(),
            vec![ok(
                &index.0,
                &[
                    ("Content-Type", OCI_INDEX),
                    ("Docker-Content-Digest", &index.1),
                ],
            )],
        ),
        (format!("/v2/multi/blobs/{cd}"), vec![ok(CONFIG, &[])]),
    ];
    if let Some(body) = child {
        routes.push((
            format!("/v2/multi/manifests/{child_digest}"),
            vec![ok(&body, &[("Content-Type", OCI_MANIFEST)])],
        ));
    }
    let server = fake(
        routes
            .iter()
            .map(|(p, a)| (p.as_str(), a.clone()))
            .collect(),
    );
    let r = registry::parse_reference(&format!("{}/multi:1", server.addr)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("layout");
    let err = block(Registry::new(&r, Auth::Anonymous, options()).pull_to_layout(&r, &dir, "x"))
        .unwrap_err();
    (err, dir.exists())
}

#[test]
fn an_index_and_its_child_are_pulled_whole() {
    let (m, md) = manifest(CONFIG);
    let (i, id) = index_of(&md, m.len());
    let cd = Digest::of(CONFIG).to_string();
    let child_path = format!("/v2/multi/manifests/{md}");
    let blob_path = format!("/v2/multi/blobs/{cd}");
    let server = fake(vec![
        (
            "/v2/multi/manifests/1",
            vec![ok(&i, &[("Content-Type", OCI_INDEX)])],
        ),
        (&child_path, vec![ok(&m, &[("Content-Type", OCI_MANIFEST)])]),
        (&blob_path, vec![ok(CONFIG, &[])]),
    ]);
    let r = registry::parse_reference(&format!("{}/multi:1", server.addr)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("layout");
    let reg = Registry::new(&r, Auth::Anonymous, options());
    let report = block(reg.pull_to_layout(&r, &dir, "x")).unwrap();
    assert_eq!(report.digest.as_str(), id);
    assert_eq!(report.media_type, OCI_INDEX);
    assert_eq!(report.manifests, 2);
    assert_eq!(report.blobs, 1);
    assert_eq!(report.platforms, ["linux/amd64"]);
    let layout = opship_core::image::Layout::new(&dir);
    let tree = layout.manifest_tree(&layout.tagged("x").unwrap()).unwrap();
    let digests: Vec<&str> = tree.iter().map(|n| n.descriptor.digest.as_str()).collect();
    assert_eq!(digests, [md.as_str(), id.as_str()]);
    assert!(layout.blob_path(&Digest::of(CONFIG)).exists());
    // inspect shows the index as an index, with the platform of its entry.
    let i = block(reg.inspect(&r)).unwrap();
    assert!(i.is_index());
    assert_eq!(i.digest.as_str(), id);
    assert_eq!(i.manifests.len(), 1);
    assert_eq!(
        i.manifests[0].platform.as_ref().unwrap().to_string(),
        "linux/amd64"
    );
    assert!(i.config.is_null() && i.labels.is_empty());
}

#[test]
fn a_missing_child_fails_the_pull_and_leaves_nothing() {
    let (m, md) = manifest(CONFIG);
    let (err, exists) = pull_with_child(index_of(&md, m.len()), &md, None);
    assert!(err.to_string().contains(&md), "{err}");
    assert!(err.to_string().contains("NOT_FOUND"), "{err}");
    assert!(!exists);
}

#[test]
fn a_child_with_other_content_is_refused() {
    let (m, md) = manifest(CONFIG);
    let (other, _) = manifest(b"{}");
    let (err, exists) = pull_with_child(index_of(&md, m.len()), &md, Some(other));
    assert!(matches!(err, Error::DigestMismatch { .. }), "{err}");
    assert!(err.to_string().contains(&md), "{err}");
    assert!(!exists);
}

#[test]
fn a_child_of_another_size_than_listed_is_refused() {
    let (m, md) = manifest(CONFIG);
    let (err, exists) = pull_with_child(index_of(&md, m.len() + 1), &md, Some(m.clone()));
    assert!(matches!(err, Error::DigestMismatch { .. }), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("{} bytes, as the index lists it", m.len() + 1)),
        "{err}"
    );
    assert!(!exists);
}

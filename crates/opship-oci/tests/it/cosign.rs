//! Verification against a registry that lies: a signature whose payload blob comes back with
//! other bytes is rejected with the reason, while an honest signature next to it still counts.

use std::collections::BTreeMap;

use opship_core::image::oci::Digest;
use opship_oci::Auth;
use opship_oci::cosign::manifest::{self, Signatures};
use opship_oci::cosign::signing::new_signature;
use opship_oci::cosign::verification::verify_remote;
use opship_oci::cosign::{Identity, Policy, PrivateKey};
use opship_oci::registry::{self, Registry};

use super::{CONFIG, OCI_MANIFEST, block, fake, manifest, ok, options};

#[test]
fn a_lying_payload_blob_rejects_that_signature_only() {
    let (m, md) = manifest(CONFIG);
    let digest = Digest::parse(&md).unwrap();
    let key = PrivateKey::generate().unwrap();
    let identity = "registry.example/lie";
    let (l1, p1) = new_signature(&key, identity, &digest, &BTreeMap::new()).unwrap();
    let notes = BTreeMap::from([("n".to_owned(), "2".to_owned())]);
    let (l2, p2) = new_signature(&key, identity, &digest, &notes).unwrap();
    let mut sigs = Signatures::default();
    sigs.add(l1.clone());
    sigs.add(l2.clone());
    let (_, sig_manifest) = sigs.to_manifest().unwrap();
    let sig_digest = Digest::of(&sig_manifest).to_string();
    let tampered = String::from_utf8(p1).unwrap().replace("null", "nulL");
    let sig_path = format!("/v2/lie/manifests/{}", manifest::tag(&digest));
    let blob1 = format!("/v2/lie/blobs/{}", l1.digest);
    let blob2 = format!("/v2/lie/blobs/{}", l2.digest);
    let server = fake(vec![
        (
            "/v2/lie/manifests/1",
            vec![ok(
                &m,
                &[
                    ("Content-Type", OCI_MANIFEST),
                    ("Docker-Content-Digest", &md),
                ],
            )],
        ),
        (
            &sig_path,
            vec![ok(
                &sig_manifest,
                &[
                    ("Content-Type", OCI_MANIFEST),
                    ("Docker-Content-Digest", &sig_digest),
                ],
            )],
        ),
        (&blob1, vec![ok(tampered.as_bytes(), &[])]),
        (&blob2, vec![ok(&p2, &[])]),
    ]);
    let r = registry::parse_reference(&format!("{}/lie:1", server.addr)).unwrap();
    let policy = Policy {
        identity: Identity::Any,
        annotations: BTreeMap::new(),
    };
    let reg = Registry::new(&r, Auth::Anonymous, options());
    let report = block(verify_remote(&reg, &r, key.public(), &policy)).unwrap();
    assert_eq!(report.digest, digest);
    assert_eq!(report.checked.len(), 2, "{report:?}");
    let reason = report.checked[0].outcome.as_ref().unwrap_err();
    assert!(
        reason.contains("the payload blob cannot be fetched"),
        "{reason}"
    );
    assert!(reason.contains(l1.digest.as_str()), "{reason}");
    let claims = report.checked[1].outcome.as_ref().unwrap();
    assert_eq!(claims.optional["n"], "2");
    assert_eq!(report.verified().len(), 1);
}

/// The provenance predicate written to a file and read back as `opship attest --predicate`
/// reads it signs the same bytes (so the predicate digest is the builder's), and two builds
/// from the same inputs (input files hashed from disk, in another order) give the same digest.
#[test]
fn provenance_predicate_survives_a_file_and_is_reproducible() {
    use opship_oci::cosign::attestation::{Predicate, statement};
    use opship_oci::cosign::provenance::{PREDICATE_TYPE, Provenance, Resource, Source};

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("opship.yaml"), "name: x\n").unwrap();
    std::fs::write(dir.path().join("csv.yaml"), "kind: ClusterServiceVersion\n").unwrap();
    let build = |names: &[&str]| Provenance {
        artifacts: vec![Resource {
            name: "registry.example/op-bundle:v1".into(),
            digest: Digest::of(b"image"),
        }],
        source: Some(Source {
            uri: "git+https://example.com/op".into(),
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
        }),
        inputs: names
            .iter()
            .map(|n| Resource::file(n, &dir.path().join(n)).unwrap())
            .collect(),
        builder_version: "1.2.3".into(),
        ..Default::default()
    };
    let a = build(&["opship.yaml", "csv.yaml"]);
    let b = build(&["csv.yaml", "opship.yaml"]);
    assert_eq!(Digest::of(&a.to_bytes()), Digest::of(&b.to_bytes()));
    let file = dir.path().join("provenance.json");
    std::fs::write(&file, a.to_bytes()).unwrap();
    let read = Predicate::read(&file, "slsaprovenance1").unwrap();
    assert_eq!(read, a.predicate());
    assert_eq!(read.type_uri, PREDICATE_TYPE);
    let d = Digest::of(b"image");
    assert_eq!(
        statement("registry.example/op-bundle", &d, &read),
        statement("registry.example/op-bundle", &d, &b.predicate())
    );
}

//! `Registry::push_chart` against the fake registry: a tag lookup that keeps failing stops the
//! push before any upload, and a tag holding other content is refused unless forced.

use std::collections::BTreeMap;

use opship_oci::artifact::{ChartArtifact, chart_manifest};
use opship_oci::registry::{self, Registry};
use opship_oci::{Auth, Error};

use super::{block, fake, ok, options, status};

fn artifact() -> ChartArtifact {
    ChartArtifact {
        config: br#"{"apiVersion":"v2","name":"demo","version":"1.0.0+b.1"}"#.to_vec(),
        archive: b"not really a tgz".to_vec(),
        annotations: BTreeMap::from([(
            "org.opencontainers.image.title".to_owned(),
            "demo".to_owned(),
        )]),
    }
}

#[test]
fn failing_tag_lookup_stops_before_any_upload() {
    let server = fake(vec![(
        "/v2/charts/demo/manifests/1.0.0_b.1",
        vec![status(500)],
    )]);
    let probe = registry::parse_reference(&format!("{}/charts/demo:x", server.addr)).unwrap();
    let reg = Registry::new(&probe, Auth::Anonymous, options());
    let repo = format!("{}/charts", server.addr);
    let err = block(reg.push_chart(&repo, "demo", "1.0.0+b.1", &artifact(), false)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("500") && text.contains(&server.addr),
        "{text}"
    );
    let hits = server.hits.lock().unwrap();
    // `+` became `_` in the tag; the lookup was retried; nothing was uploaded.
    // 4 attempts; oci-client follows a failed HEAD with a GET, so 4 or 8 requests.
    let n = hits["/v2/charts/demo/manifests/1.0.0_b.1"];
    assert!(n == 4 || n == 8, "{n} requests");
    assert!(
        !hits.keys().any(|p| p.contains("/blobs/")),
        "uploaded despite the failure: {hits:?}"
    );
}

#[test]
fn tag_with_other_content_is_refused_unless_forced() {
    let other = "sha256:".to_owned() + &"0".repeat(64);
    let server = fake(vec![(
        "/v2/charts/demo/manifests/1.0.0_b.1",
        vec![ok(
            b"{}",
            &[
                ("Docker-Content-Digest", other.as_str()),
                ("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
            ],
        )],
    )]);
    let probe = registry::parse_reference(&format!("{}/charts/demo:x", server.addr)).unwrap();
    let reg = Registry::new(&probe, Auth::Anonymous, options());
    let repo = format!("{}/charts", server.addr);
    let err = block(reg.push_chart(&repo, "demo", "1.0.0+b.1", &artifact(), false)).unwrap_err();
    assert!(matches!(err, Error::Input(_)), "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");
    assert!(err.to_string().contains(&other), "{err}");

    // The same manifest already there: nothing to do.
    let ours = opship_core::image::oci::Digest::of(&chart_manifest(&artifact())).to_string();
    let server = fake(vec![(
        "/v2/charts/demo/manifests/1.0.0_b.1",
        vec![ok(b"{}", &[("Docker-Content-Digest", ours.as_str())])],
    )]);
    let probe = registry::parse_reference(&format!("{}/charts/demo:x", server.addr)).unwrap();
    let reg = Registry::new(&probe, Auth::Anonymous, options());
    let repo = format!("{}/charts", server.addr);
    let pushed = block(reg.push_chart(&repo, "demo", "1.0.0+b.1", &artifact(), false)).unwrap();
    assert!(pushed.unchanged);
    assert_eq!(pushed.digest, ours);
    assert!(
        !server
            .hits
            .lock()
            .unwrap()
            .keys()
            .any(|p| p.contains("/blobs/"))
    );
}

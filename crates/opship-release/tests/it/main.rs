//! A release driven through the library API alone (no `opship` binary): the sample operator
//! into a real docker-registry on a loopback port, the typed result checked against
//! `skopeo inspect`, the registry's own answers and the files; then the re-run, every step
//! recognised as done, and the events of both.

mod support;
#[path = "../../../../tests/support/tracked.rs"]
mod tracked;

use std::path::Path;

use opship_release::{Event, Options, Outcome, State, Summary};
use support::{TestRegistry, copy_sample, manifest_digest, skopeo_digest, tags};

#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Start(String),
    Finish(String),
    Skip(String),
    Planned(usize),
}

fn release(project_dir: &Path, ns: &str, key: &Path) -> (Summary, Vec<Seen>) {
    let project =
        opship_core::config::Project::load(&project_dir.join("opship.yaml")).expect("config");
    let options = Options {
        version: "0.1.0".into(),
        registry: Some(ns.to_owned()),
        key: Some(key.to_path_buf()),
        password: Some(zeroize::Zeroizing::new("lib-test".into())),
        insecure: false,
        dry_run: false,
        registry_options: opship_oci::Options::default(),
        source_date_epoch: None,
        pin_images: None,
        keyless: Default::default(),
    };
    let mut seen = Vec::new();
    let mut on_event = |e: &Event<'_>| match e {
        Event::Started(s) => seen.push(Seen::Start(s.id.clone())),
        Event::Finished(s) => seen.push(Seen::Finish(s.id.clone())),
        Event::Skipped(s) => seen.push(Seen::Skip(s.id.clone())),
        Event::Planned { steps } => seen.push(Seen::Planned(*steps)),
        _ => {}
    };
    let outcome = opship_release::release(project, options, &mut on_event).expect("release");
    match outcome {
        Outcome::Released(s) => (*s, seen),
        other => panic!("not released: {other:?}"),
    }
}

#[test]
fn a_release_through_the_library_matches_the_registry_and_the_files() {
    let reg = TestRegistry::start();
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_sample(tmp.path());
    // A key of our own, as a pipeline would configure it.
    let key = opship_oci::cosign::PrivateKey::generate().unwrap();
    let files = key.to_files(b"lib-test").unwrap();
    std::fs::write(tmp.path().join("cosign.key"), &files.private_pem).unwrap();
    std::fs::write(tmp.path().join("cosign.pub"), &files.public_pem).unwrap();
    let ns = format!("{}/lib", reg.addr);

    let (s, events) = release(&dir, &ns, &tmp.path().join("cosign.key"));
    assert!(!s.dry_run);
    // First the number of steps (what a progress bar needs), then every step that ran
    // started and finished, in plan order; the rest skipped.
    let mut expected = vec![Seen::Planned(s.steps.len())];
    for st in &s.steps {
        match st.state {
            State::Ran => {
                expected.push(Seen::Start(st.id.clone()));
                expected.push(Seen::Finish(st.id.clone()));
            }
            _ => expected.push(Seen::Skip(st.id.clone())),
        }
    }
    assert_eq!(events, expected);
    let ids: Vec<&str> = s.steps.iter().map(|st| st.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "bundle",
            "validate",
            "build",
            "push-bundle",
            "sign",
            "attest",
            "catalog-add:bundle/index",
            "catalog-validate:bundle/index",
            "catalog-build:bundle/index",
            "push-catalog:bundle/index",
            "sign-catalog:bundle/index",
            "attest-catalog:bundle/index",
            "chart-render",
            "chart-package",
            "push-chart",
            "sign-chart",
        ]
        .map(|id| id.replace("bundle/index", &format!("{}", dir.join("index").display())))
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
    );
    for st in &s.steps {
        // The sample commits its bundle directories: that step is found done.
        if st.id != "validate" && st.id != "bundle" {
            assert_eq!(st.state, State::Ran, "{st:?}");
        }
    }
    assert!(matches!(s.steps[0].state, State::Done(_)));

    // The bundle image: the digest skopeo reads from the registry and from the layout.
    let bundle_ref = format!("{ns}/memcached-operator-bundle:v0.1.0");
    assert_eq!(s.bundle.reference.as_deref(), Some(bundle_ref.as_str()));
    assert_eq!(
        skopeo_digest(&format!("docker://{bundle_ref}")),
        s.bundle.digest
    );
    assert_eq!(
        skopeo_digest(&format!("oci:{}", s.bundle.layout)),
        s.bundle.digest
    );
    // The catalog image, pushed and in the layout.
    let cat = &s.catalogs[0];
    let cat_digest = cat.image.digest.clone().expect("catalog digest");
    assert_eq!(
        skopeo_digest(&format!(
            "docker://{}",
            cat.image.reference.as_ref().unwrap()
        )),
        cat_digest
    );
    assert_eq!(
        skopeo_digest(&format!("oci:{}", cat.image.layout)),
        cat_digest
    );
    // The catalog names the bundle image by the digest pushed.
    let fbc = std::fs::read_to_string(dir.join("index/memcached-operator/catalog.yaml")).unwrap();
    assert!(fbc.contains(&cat.entry_image), "{fbc}");
    assert_eq!(
        cat.entry_image,
        format!("{ns}/memcached-operator-bundle@{}", s.bundle.digest)
    );
    // The chart: the archive on disk has the digest reported, the registry serves the
    // manifest reported.
    let archive = std::fs::read(&s.chart.archive).unwrap();
    assert_eq!(
        opship_core::image::Digest::of(&archive).as_str(),
        s.chart.digest
    );
    assert_eq!(
        s.chart.reference.as_deref(),
        Some(format!("oci://{ns}/memcached-operator:0.1.0").as_str())
    );
    let chart_manifest = manifest_digest(&reg.addr, "lib/memcached-operator", "0.1.0");
    assert_eq!(
        s.chart.manifest_digest.as_deref(),
        Some(chart_manifest.as_str())
    );
    // One `.sig` per image, in each repository, with the digest the summary gives; one
    // `.att` (the SLSA provenance) per bundle and catalog image.
    let sig = |d: &str| format!("sha256-{}.sig", d.trim_start_matches("sha256:"));
    let att = |d: &str| format!("sha256-{}.att", d.trim_start_matches("sha256:"));
    assert_eq!(
        tags(&reg.addr, "lib/memcached-operator-bundle"),
        [
            att(&s.bundle.digest),
            sig(&s.bundle.digest),
            "v0.1.0".into()
        ]
    );
    assert_eq!(
        tags(&reg.addr, "lib/memcached-operator-catalog"),
        [att(&cat_digest), sig(&cat_digest), "v0.1.0".into()]
    );
    let atts = || {
        [
            manifest_digest(
                &reg.addr,
                "lib/memcached-operator-bundle",
                &att(&s.bundle.digest),
            ),
            manifest_digest(
                &reg.addr,
                "lib/memcached-operator-catalog",
                &att(&cat_digest),
            ),
        ]
    };
    let atts_before = atts();
    assert_eq!(
        tags(&reg.addr, "lib/memcached-operator"),
        ["0.1.0".to_owned(), sig(&chart_manifest)]
    );
    assert_eq!(
        s.signature.digest.as_deref(),
        Some(
            manifest_digest(
                &reg.addr,
                "lib/memcached-operator-bundle",
                &sig(&s.bundle.digest)
            )
            .as_str()
        )
    );
    assert!(
        s.files_changed
            .iter()
            .any(|f| f.ends_with("index/memcached-operator/catalog.yaml")),
        "{:?}",
        s.files_changed
    );

    // The re-run: every step recognised as done (the catalog is validated again), nothing
    // changes, no event but skips and the validation.
    let registry_before: Vec<Vec<String>> = [
        "lib/memcached-operator-bundle",
        "lib/memcached-operator-catalog",
        "lib/memcached-operator",
    ]
    .iter()
    .map(|r| tags(&reg.addr, r))
    .collect();
    let (again, events) = release(&dir, &ns, &tmp.path().join("cosign.key"));
    assert!(again.files_changed.is_empty(), "{:?}", again.files_changed);
    assert_eq!(events[0], Seen::Planned(again.steps.len()));
    for st in &again.steps {
        if st.id.starts_with("catalog-validate:") {
            assert_eq!(st.state, State::Ran);
        } else {
            assert!(matches!(st.state, State::Done(_)), "{st:?}");
            assert!(events.contains(&Seen::Skip(st.id.clone())), "{events:?}");
        }
    }
    assert_eq!(again.bundle.digest, s.bundle.digest);
    assert_eq!(again.chart.manifest_digest, s.chart.manifest_digest);
    assert_eq!(again.signature.digest, s.signature.digest);
    let registry_after: Vec<Vec<String>> = [
        "lib/memcached-operator-bundle",
        "lib/memcached-operator-catalog",
        "lib/memcached-operator",
    ]
    .iter()
    .map(|r| tags(&reg.addr, r))
    .collect();
    assert_eq!(registry_before, registry_after);
    assert_eq!(atts(), atts_before);
}

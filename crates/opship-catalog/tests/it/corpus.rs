//! opship against opm's own output on real data: every corpus bundle rendered, every corpus
//! catalog re-written, compared byte for byte.

use opship_catalog::render::{self, CsvFormat};
use opship_catalog::write::{self, Format};
use opship_catalog::{Catalog, load};
use rayon::prelude::*;

use super::{corpus_bundles, corpus_dir};

/// `opm render` of each bundle image equals opship's render of the directory with the same
/// image reference, byte for byte. opm v1.26.5 lists `olm.bundle.object` properties in manifest
/// file-name order, as opship does, so no difference needs allowing.
#[test]
fn bundle_render_matches_opm_for_all_237_bundles() {
    let bundles = corpus_bundles();
    let failures: Vec<String> = bundles
        .par_iter()
        .filter_map(|dir| {
            let version = dir.file_name().unwrap().to_string_lossy().into_owned();
            let op = dir
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let expected_path = corpus_dir()
                .join("expected/bundle-render")
                .join(&op)
                .join(format!("{version}.json"));
            let expected = std::fs::read_to_string(&expected_path).unwrap();
            let image = format!("127.0.0.1:5000/corpus/{op}:{version}");
            let got = match render::render_dir(dir, &image, CsvFormat::BundleObject) {
                Ok(b) => {
                    let cat = Catalog {
                        bundles: vec![b],
                        ..Default::default()
                    };
                    write::to_string(&cat, Format::Json).unwrap()
                }
                Err(e) => return Some(format!("{op}/{version}: {e}")),
            };
            if got == expected {
                None
            } else {
                let at = got
                    .bytes()
                    .zip(expected.bytes())
                    .position(|(a, b)| a != b)
                    .unwrap_or(got.len().min(expected.len()));
                let lo = at.saturating_sub(200);
                Some(format!(
                    "{op}/{version}: differs at byte {at}\n got: {}\nwant: {}",
                    &got[lo..(at + 200).min(got.len())],
                    &expected[lo..(at + 200).min(expected.len())]
                ))
            }
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} bundles differ:\n{}",
        failures.len(),
        bundles.len(),
        failures.join("\n")
    );
}

fn corpus_catalogs() -> Vec<(String, std::path::PathBuf)> {
    let mut out = Vec::new();
    for ocp in std::fs::read_dir(corpus_dir().join("catalogs")).unwrap() {
        let ocp = ocp.unwrap().path();
        for pkg in std::fs::read_dir(&ocp).unwrap() {
            let pkg = pkg.unwrap().path();
            out.push((
                format!(
                    "{}-{}",
                    ocp.file_name().unwrap().to_string_lossy(),
                    pkg.file_name().unwrap().to_string_lossy()
                ),
                pkg,
            ));
        }
    }
    out.sort();
    assert_eq!(out.len(), 9, "the corpus has nine catalogs");
    out
}

/// `opm render DIR -o json` of each corpus catalog, byte for byte; and opship's YAML output
/// loads back to the same JSON.
#[test]
fn catalog_render_matches_opm_byte_for_byte() {
    for (name, dir) in corpus_catalogs() {
        let cat = load::load_dir(&dir).unwrap();
        let got = write::to_string(&cat, Format::Json).unwrap();
        let yaml_dir = tempfile::tempdir().unwrap();
        std::fs::write(
            yaml_dir.path().join("catalog.yaml"),
            write::to_string(&cat, Format::Yaml).unwrap(),
        )
        .unwrap();
        let again =
            write::to_string(&load::load_dir(yaml_dir.path()).unwrap(), Format::Json).unwrap();
        assert!(
            again == got,
            "{name}: the YAML output does not load back to the same catalog"
        );
        let expected = std::fs::read_to_string(
            corpus_dir().join(format!("expected/catalog-render/{name}.json")),
        )
        .unwrap();
        if got != expected {
            let at = got
                .bytes()
                .zip(expected.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(expected.len()));
            let lo = at.saturating_sub(300);
            panic!(
                "{name}: differs at byte {at} (len {} vs {})\n got: {}\nwant: {}",
                got.len(),
                expected.len(),
                &got[lo..(at + 200).min(got.len())],
                &expected[lo..(at + 200).min(expected.len())]
            );
        }
    }
}

/// The nine real catalogs pass `opm validate`; opship agrees (no error-level finding).
#[test]
fn corpus_catalogs_validate() {
    for (name, dir) in corpus_catalogs() {
        let cat = load::load_dir(&dir).unwrap();
        let report = opship_catalog::validate::validate(&cat);
        assert!(report.passed(), "{name}:\n{}", report.error_tree());
        eprintln!("{name}: {}", report.warnings_text());
    }
}

/// `--csv-format csv-metadata` against the OpenShift 4.17+ catalogs: every corpus bundle that
/// also appears in one of them renders to the same properties (the catalogs went through
/// YAML, so values are compared with sorted keys; the bundle's own image differs).
#[test]
fn csv_metadata_render_matches_the_417_catalogs() {
    let mut compared = 0;
    for (name, dir) in corpus_catalogs() {
        if name.starts_with("v4.16") {
            continue;
        }
        let cat = load::load_dir(&dir).unwrap();
        for b in &cat.bundles {
            let version = b.version().unwrap();
            let bdir = corpus_dir().join("bundles").join(&b.package).join(&version);
            if !bdir.is_dir() {
                continue;
            }
            let got = render::render_dir(&bdir, &b.image, CsvFormat::CsvMetadata).unwrap();
            let norm = |p: &[opship_catalog::model::Property]| -> Vec<(String, serde_json::Value)> {
                p.iter()
                    .map(|p| (p.typ.clone(), opship_catalog::gojson::sorted(&p.value)))
                    .collect()
            };
            assert_eq!(
                norm(&got.properties),
                norm(&b.properties),
                "{name}: {}",
                b.name
            );
            assert_eq!(got.related_images, b.related_images, "{name}: {}", b.name);
            compared += 1;
        }
    }
    assert!(compared >= 5, "only {compared} bundles compared");
    eprintln!("{compared} bundles compared");
}

/// opm keeps a JSON catalog's raw property text: `\u003c` written by Go's `json.Marshal`
/// stays escaped, while YAML input (converted to JSON) is written unescaped.
#[test]
fn json_escapes_in_property_values_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.json"),
        r#"{"schema":"olm.bundle","name":"a.v1.0.0","package":"a","image":"q.io/a:v1","properties":[{"type":"custom","value":{"d":"x \u003c y \u0026 z"}},{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}"#,
    )
    .unwrap();
    let out = write::to_string(&load::load_dir(dir.path()).unwrap(), Format::Json).unwrap();
    assert!(out.contains(r#""d": "x \u003c y \u0026 z""#), "{out}");
    std::fs::remove_file(dir.path().join("c.json")).unwrap();
    std::fs::write(
        dir.path().join("c.yaml"),
        "schema: olm.bundle\nname: a.v1.0.0\npackage: a\nimage: q.io/a:v1\nproperties:\n- type: custom\n  value: {d: x < y & z}\n",
    )
    .unwrap();
    let out = write::to_string(&load::load_dir(dir.path()).unwrap(), Format::Json).unwrap();
    assert!(out.contains(r#""d": "x < y & z""#), "{out}");
}

/// The image path: corpus bundles built into an OCI layout (as `opship build` does) and
/// rendered from there equal opm's render of the same images. Every 12th bundle, to keep the
/// test short; the directory path above covers all 237 with the same rendering code.
#[test]
fn bundle_images_in_a_layout_render_like_opm() {
    use opship_core::image::{build, layout::Layout};
    let tmp = tempfile::tempdir().unwrap();
    let layout = tmp.path().join("oci");
    let bundles = corpus_bundles();
    let picked: Vec<_> = bundles.iter().step_by(12).collect();
    for dir in &picked {
        let version = dir.file_name().unwrap().to_string_lossy().into_owned();
        let op = dir
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let tag = format!("{op}-{version}").replace('+', "_");
        let image = build::build_bundle(dir, &build::BuildOptions::default()).unwrap();
        Layout::new(&layout)
            .write_images([(tag.as_str(), &image)])
            .unwrap();
        let reference = format!("127.0.0.1:5000/corpus/{op}:{version}");
        let cat = render::render_image(
            &layout,
            &tag,
            std::path::Path::new(&tag),
            Some(&reference),
            CsvFormat::BundleObject,
        )
        .unwrap();
        let got = write::to_string(&cat, Format::Json).unwrap();
        let expected = std::fs::read_to_string(
            corpus_dir().join(format!("expected/bundle-render/{op}/{version}.json")),
        )
        .unwrap();
        assert!(
            got == expected,
            "{op}/{version} rendered from its image differs from opm"
        );
    }
    assert!(picked.len() >= 19);
}

/// A real bundle whose relatedImages list four images under two to four names each
/// (gitlab-runner-operator 1.52.0, 11 entries with the bundle image: opm keeps the CSV's order
/// there, as the corpus render shows), grown past 12 entries with three more images: opm's
/// `sort.Slice` then takes its quicksort path and the entries sharing an image come out in Go's
/// order, not the CSV's. The expected names were computed with an independent transcription of
/// Go's pdqsort. A stable sort would keep the CSV's order within each image: `manager`,
/// `gitlab_runner_operator`, the annotation entry, `gitlab-runner-operator`, then
/// `kube-rbac-proxy`, `kube_rbac_proxy`.
#[test]
fn shared_images_past_twelve_entries_follow_gos_sort() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("1.52.0");
    let src = corpus_dir().join("bundles/gitlab-runner-operator/1.52.0");
    for sub in ["manifests", "metadata"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for e in std::fs::read_dir(src.join(sub)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), dir.join(sub).join(e.file_name())).unwrap();
        }
    }
    let csv = dir.join("manifests/gitlab-runner-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut doc = opship_core::yaml::parse_one(&text, &csv).unwrap().value;
    let list = doc["spec"]["relatedImages"].as_array_mut().unwrap();
    for (name, image) in [
        ("extra-a", "quay.io/extra/a:1"),
        ("extra-b", "registry.gitlab.com/gitlab-org/ci-cd/zz:1"),
        ("extra-c", "docker.io/library/busybox:1.36"),
    ] {
        list.push(serde_json::json!({"name": name, "image": image}));
    }
    std::fs::write(&csv, opship_core::yaml::to_string(&doc).unwrap()).unwrap();
    let image = "127.0.0.1:5000/corpus/gitlab-runner-operator:1.52.0";
    let b = render::render_dir(&dir, image, CsvFormat::BundleObject).unwrap();
    let names: Vec<&str> = b.related_images.iter().map(|r| r.name.as_str()).collect();
    let operator_annotation = "gl-openshift/gitlab-runner-operator/gitlab-runner-operator-\
        5ffabd4ede31b2d3e1ff35ca70683d488385429c546bd50a45cadcf42d10f94f-annotation";
    assert_eq!(
        names,
        [
            "",
            "extra-c",
            "extra-a",
            "gitlab-runner-helper",
            "gitlab_runner_helper",
            "gitlab_runner",
            "gitlab-runner",
            "extra-b",
            "gitlab-runner-operator",
            operator_annotation,
            "gitlab_runner_operator",
            "manager",
            "kube_rbac_proxy",
            "kube-rbac-proxy",
        ]
    );
}

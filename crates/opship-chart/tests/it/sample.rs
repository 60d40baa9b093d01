//! The sample operator's three versions (bundle/0.1.0, 0.2.0, 0.3.0) with the chart settings
//! and environments of bundle/opship.yaml, in both CRD placements.

use opship_chart::{CrdPlacement, Options};
use opship_core::config::Project;

use crate::compare::{check_bundle, check_bundle_with};
use crate::{helm, render_to_temp, tracked};

fn project() -> Project {
    Project::load(&tracked("bundle/opship.yaml")).unwrap()
}

#[test]
fn sample_versions_pass_helm_checks() {
    let p = project();
    let cfg = p.config.chart.clone().unwrap();
    for r in &p.config.releases {
        let opts = Options {
            name: cfg.name.clone(),
            crds: CrdPlacement::parse(cfg.crds.as_deref().unwrap()).unwrap(),
        };
        // The environments of opship.yaml (staging, prod), then the test's own.
        let s = check_bundle_with(&p.bundle_dir(&r.version), &opts, &p.config.environments);
        check_bundle(&p.bundle_dir(&r.version), &opts);
        // Deployment, CRD, Service, 3 ClusterRoles of the bundle, the CSV's RBAC and service
        // account: what OLM v1 installs, compared object by object in check_bundle.
        assert!(s.objects >= 6, "{}: {s:?}", r.version);
        assert_eq!(s.deployments, 1, "{}: {s:?}", r.version);
        assert_eq!(s.environments, 2, "{}: {s:?}", r.version);
    }
}

#[test]
fn sample_with_crds_in_helm_crds_dir() {
    let p = project();
    let opts = Options {
        name: None,
        crds: CrdPlacement::CrdsDir,
    };
    let dir = p.bundle_dir("0.3.0");
    check_bundle(&dir, &opts);
    let (_t, chart_dir, chart) = render_to_temp(&dir, &opts, &Default::default());
    assert!(
        chart
            .files
            .contains_key("crds/cache.example.com_memcacheds.yaml")
    );
    assert!(!chart.files.keys().any(|k| k.starts_with("templates/crds/")));
    // No Helm expression may be left in crds/: Helm does not template it.
    let crd =
        String::from_utf8(chart.files["crds/cache.example.com_memcacheds.yaml"].clone()).unwrap();
    assert!(!crd.contains("{{"), "{crd}");
    let r = helm(&["render".to_owned(), chart_dir.display().to_string()]);
    assert_eq!(
        r["crds"].as_array().unwrap().len(),
        1,
        "Helm does not see the CRD in crds/: {}",
        r["crds"]
    );
}

/// The environments of opship.yaml become values files with exactly their settings.
#[test]
fn sample_environment_values_files() {
    let p = project();
    let (_t, _dir, chart) = render_to_temp(
        &p.bundle_dir("0.2.0"),
        &Options::default(),
        &p.config.environments,
    );
    let prod = String::from_utf8(chart.files["values-prod.yaml"].clone()).unwrap();
    let v = opship_core::yaml::parse_one(&prod, std::path::Path::new("values-prod.yaml"))
        .unwrap()
        .value;
    assert_eq!(
        v,
        serde_json::json!({
            "replicas": 2,
            // Replaces the bundle's resources; here both are set, so nothing is nulled.
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
        })
    );
    assert!(chart.files.contains_key("values-staging.yaml"));
}

/// Chart.yaml carries the CSV's metadata.
#[test]
fn sample_chart_metadata() {
    let p = project();
    let (_t, _d, chart) = render_to_temp(
        &p.bundle_dir("0.3.0"),
        &Options::default(),
        &Default::default(),
    );
    let text = String::from_utf8(chart.files["Chart.yaml"].clone()).unwrap();
    let v = opship_core::yaml::parse_one(&text, std::path::Path::new("Chart.yaml"))
        .unwrap()
        .value;
    assert_eq!(v["apiVersion"], "v2");
    assert_eq!(v["name"], "memcached-operator");
    assert_eq!(v["version"], "0.3.0");
    assert_eq!(v["appVersion"], "0.3.0");
    assert_eq!(v["kubeVersion"], ">= 1.27.0-0");
    assert_eq!(v["home"], "https://example.com");
    assert_eq!(
        v["sources"][0],
        "https://github.com/example/memcached-operator"
    );
    assert_eq!(v["maintainers"][0]["email"], "alice@example.com");
    assert_eq!(v["keywords"][0], "memcached");
    // The CSV's SVG icon, inline.
    assert!(
        v["icon"]
            .as_str()
            .unwrap()
            .starts_with("data:image/svg+xml;base64,PHN2Zy"),
        "{}",
        v["icon"]
    );
}

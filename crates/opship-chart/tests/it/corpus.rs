//! At least twenty real bundles of the corpus, chosen for what they exercise, each checked by
//! the real Helm engine (lint, render = bundle, environments, schema).

use opship_chart::Options;
use serde_json::{Value, json};

use crate::compare::check_bundle;
use crate::corpus_dir;

/// `(operator/version, why it is here)`.
const BUNDLES: &[(&str, &str)] = &[
    (
        "opentelemetry-operator/0.33.0",
        "admission webhooks, PrometheusRule",
    ),
    (
        "opentelemetry-operator/0.27.0",
        "webhooks of an older layout, extra ServiceAccount object",
    ),
    (
        "service-binding-operator/1.4.0",
        "5 webhooks, 11 ClusterRoles and 3 ClusterRoleBindings of its own",
    ),
    (
        "rsct-operator/0.0.1-alpha4",
        "one webhook whose deployment already mounts a cert at the serving path; prerelease version",
    ),
    (
        "community-kubevirt-hyperconverged/1.15.0",
        "9 deployments, 8 cluster permissions, 6 webhooks incl. conversion, 2 MiB",
    ),
    (
        "community-kubevirt-hyperconverged/0.0.3",
        "6 deployments, v1beta1 CRDs",
    ),
    ("stackgres-community/1.18.8", "26 webhooks, 5 MiB of CRDs"),
    (
        "aws-neuron-operator/1.2.0",
        "4 cluster and 3 namespaced permissions, ConfigMaps, bindings, ServiceMonitor",
    ),
    ("aqua/2022.4.18", "3 clusterPermissions entries"),
    ("aqua/0.0.1", "v1beta1 CRDs, only cluster permissions"),
    (
        "prometheus/0.37.0",
        "v1beta1 CRDs, two namespaced permission sets, no cluster permissions",
    ),
    ("strimzi-kafka-operator/0.12.1", "v1beta1 CRDs"),
    ("keda/1.5.0", "v1beta1 CRDs"),
    (
        "ember-csi-community-operator/0.9.6",
        "v1beta1 CRDs of 0.5 MiB",
    ),
    ("cockroachdb/3.0.7", "v1beta1 CRD"),
    ("namespace-configuration-operator/0.1.0", "v1beta1 CRDs"),
    (
        "openshift-qiskit-operator/0.1.0",
        "v1beta1 CRD, no cluster permissions",
    ),
    (
        "ack-secretsmanager-controller/1.4.1",
        "a Secret and Roles of its own",
    ),
    (
        "airflow-helm-operator/0.0.1",
        "9 ServiceAccounts, Roles and RoleBindings of its own",
    ),
    (
        "l5-operator/0.0.3",
        "PrometheusRule, ServiceMonitor, ConfigMap, ClusterRoleBinding",
    ),
    (
        "percona-server-mongodb-operator/1.23.0",
        "1.5 MiB of CRDs, namespaced permissions only",
    ),
    (
        "debezium-operator/3.0.0-final",
        "prerelease version `-final`",
    ),
    (
        "hive-operator/2.5.3516-a2ed9b3",
        "prerelease version with a commit hash",
    ),
    ("volume-expander-operator/0.3.6", "no CRDs at all"),
    (
        "volume-expander-operator/0.1.9",
        "an rbac.authorization.k8s.io/v1beta1 ClusterRole, written as v1",
    ),
    (
        "alvearie-imaging-ingestion/0.0.1",
        "ConfigMap and ServiceAccount objects, no cluster permissions",
    ),
    (
        "kubedb-installer/2026.2.26",
        "1 MiB of CRDs, 4 ClusterRoles of its own",
    ),
];

fn check_all(part: usize, parts: usize) {
    let root = corpus_dir().join("bundles");
    for (i, (b, why)) in BUNDLES.iter().enumerate() {
        if i % parts != part {
            continue;
        }
        let s = check_bundle(&root.join(b), &Options::default());
        eprintln!("{b} ({why}): {s:?}");
    }
}

// Split in parts so the test harness runs them side by side.
#[test]
fn corpus_bundles_pass_helm_checks_part_1() {
    check_all(0, 3);
}

#[test]
fn corpus_bundles_pass_helm_checks_part_2() {
    check_all(1, 3);
}

#[test]
fn corpus_bundles_pass_helm_checks_part_3() {
    check_all(2, 3);
}

#[test]
fn at_least_twenty_corpus_bundles() {
    assert!(BUNDLES.len() >= 20);
}

/// A bundle OLM v1 refuses gets no chart, with the renderer's reason and position.
#[test]
fn bundle_olm_v1_refuses_gets_no_chart() {
    let dir = corpus_dir().join("bundles/opentelemetry-operator/0.158.0");
    let err = opship_chart::render_bundle(
        &dir,
        &Options::default(),
        &opship_chart::Templates::default(),
        &Default::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("[OLM015]"), "{err}");
    assert!(err.contains("poddisruptionbudget.yaml:2:"), "{err}");
}

/// A bundle with a duplicate YAML key is refused with the file and line, not charted.
#[test]
fn bundle_with_duplicate_key_is_refused_with_its_line() {
    let dir = corpus_dir().join("bundles/3scale-community-operator/0.7.0");
    let err = opship_chart::render_bundle(
        &dir,
        &Options::default(),
        &opship_chart::Templates::default(),
        &Default::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("apps.3scale.net_apimanagerbackups_crd.yaml:96:"),
        "{err}"
    );
    assert!(err.contains("duplicate"), "{err}");
}

/// Every bundle of the corpus, in every install mode (AllNamespaces with watchNamespace "",
/// OwnNamespace with the release namespace, SingleNamespace with `watched`): Helm's render of
/// the chart equals what OLM v1 installs (`opship manifests`), and a mode the CSV does not
/// support fails both, with the same reason. A bundle OLM v1 refuses gets no chart, for the
/// same reason. Helm's lint has nothing to say but the missing icon. Four parts, one Helm
/// process per part for the renders and one for the lint, run side by side.
fn modes_all(part: usize, parts: usize) {
    let root = corpus_dir().join("bundles");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flat_map(|op| std::fs::read_dir(op.unwrap().path()).unwrap())
        .map(|v| v.unwrap().path())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 237, "{}", dirs.len());
    let tmp = tempfile::tempdir().unwrap();
    let mut charts = Vec::new();
    let mut refused = Vec::new();
    let mut jobs = Vec::new();
    for (i, d) in dirs.iter().enumerate() {
        if i % parts != part {
            continue;
        }
        let chart = match opship_chart::render_bundle(
            d,
            &Options::default(),
            &opship_chart::Templates::default(),
            &crate::environments(),
        ) {
            Ok(c) => c,
            Err(e) => {
                // OLM v1 refuses it too, for the same reason.
                let olm = crate::compare::olm_objects(d, "ops", None).expect_err(&format!(
                    "{}: chart refused but OLM renders it: {e}",
                    d.display()
                ));
                assert_eq!(e.to_string(), olm.to_string(), "{}", d.display());
                refused.push(format!(
                    "{}: {}",
                    d.display(),
                    e.to_string().lines().last().unwrap_or("")
                ));
                continue;
            }
        };
        let dir = tmp.path().join(i.to_string()).join(&chart.name);
        opship_chart::write_dir(
            &chart.files,
            &dir,
            opship_chart::CHART_DIR,
            opship_chart::Overwrite::Refuse,
        )
        .unwrap();
        for w in ["", "ops", "watched"] {
            jobs.push((d.clone(), dir.display().to_string(), w));
        }
        charts.push((d.clone(), dir.display().to_string()));
    }
    let job_file = tmp.path().join("jobs.json");
    let list: Vec<Value> = jobs
        .iter()
        .map(|(_, c, w)| json!({"chart": c, "values": {"watchNamespace": w}, "namespace": "ops"}))
        .collect();
    std::fs::write(&job_file, serde_json::to_string(&list).unwrap()).unwrap();
    let results = crate::helm(&["render-many", job_file.to_str().unwrap()]);
    let mut same = 0;
    let mut failed_alike = 0;
    for ((bundle, _, w), res) in jobs.iter().zip(results.as_array().unwrap()) {
        let what = format!("{} (watchNamespace {w:?})", bundle.display());
        match crate::compare::olm_objects(bundle, "ops", Some(w)) {
            Ok(want) => {
                let mut got = crate::compare::parse_rendered(&res["manifests"], &what);
                opship_install::sort(&mut got);
                assert!(
                    got == want,
                    "{what}: {}",
                    crate::compare::first_difference(&got, &want)
                );
                same += 1;
            }
            Err(opship_install::Error::InstallMode { message, .. }) => {
                let err = res["error"]["message"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{what}: OLM refuses ({message}) but Helm renders"));
                assert!(
                    err.contains(&message),
                    "{what}: Helm: {err}\nOLM: {message}"
                );
                failed_alike += 1;
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
    eprintln!(
        "part {part}: {} charts, {same} renders equal to OLM v1, {failed_alike} unsupported modes refused alike, {} bundles refused",
        charts.len(),
        refused.len()
    );
    for r in &refused {
        eprintln!("  refused: {r}");
    }
    let mut args = vec!["lint-many".to_owned()];
    args.extend(charts.iter().map(|(_, c)| c.clone()));
    let r = crate::helm(&args);
    for (bundle, chart) in &charts {
        let lint = &r[chart];
        assert_eq!(lint["errors"], json!([]), "{}: {lint}", bundle.display());
        for m in lint["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: {lint}", bundle.display()))
        {
            assert!(crate::compare::lint_ok(m), "{}: {m}", bundle.display());
        }
    }
}

#[test]
fn whole_corpus_every_install_mode_part_1() {
    modes_all(0, 4);
}

#[test]
fn whole_corpus_every_install_mode_part_2() {
    modes_all(1, 4);
}

#[test]
fn whole_corpus_every_install_mode_part_3() {
    modes_all(2, 4);
}

#[test]
fn whole_corpus_every_install_mode_part_4() {
    modes_all(3, 4);
}

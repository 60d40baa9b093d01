//! opship-only suites (olm-v1, rbac, crd-examples) on real corpus bundles.
//!
//! Over the 237 corpus bundles (all three suites on) the suites flag:
//! - olm-v1: OLM001 dependencies.yaml 3 (kubedb-installer, l5-operator), OLM002
//!   required CRDs 4 (shipwright-operator), OLM006 no AllNamespaces 35, OLM007 webhooks 25,
//!   OLM011 OperatorConditions 5 (community-kubevirt-hyperconverged), OLM015 a PodDisruptionBudget 5
//!   (opentelemetry-operator); no bundle owns an APIService, supports only MultiNamespace, has
//!   broken webhook definitions, misnamed deployments or no package name.
//! - rbac: 201 bundles. RBAC001 `*` verbs 90, RBAC002 `*` resources 66, RBAC003 `*` API groups
//!   22, RBAC004 cluster-wide secret reads 156, RBAC005 escalate/bind/impersonate 19, RBAC006
//!   CRD create/delete 54, RBAC008 exec/attach/proxy/token 27, RBAC009 cluster-scoped
//!   resources in namespaced permissions 28; no `*` non-resource URL.
//! - crd-examples: 72 bundles. EX003 missing required fields 60 (mostly ACK controllers'
//!   `spec: {}` examples), EX006 unknown fields 22, EX002 wrong type 1 (keda 2.0.0); every
//!   example names a served version, no enum or bound violation, every CEL rule parses.

use std::collections::BTreeSet;

use opship_validate::{Finding, Level, Options, Suite};

fn run(bundle: &str, suite: Suite) -> Vec<Finding> {
    let dir = crate::corpus_dir().join("bundles").join(bundle);
    let b = opship_validate::load::load_dir(&dir).expect("corpus bundle loads");
    let mut opts = Options::default();
    opts.optional.insert(suite);
    opship_validate::validate(&b, &opts)
        .into_iter()
        .filter(|f| f.rule.suite == suite)
        .collect()
}

fn ids(findings: &[Finding]) -> BTreeSet<&'static str> {
    findings.iter().map(|f| f.rule.id).collect()
}

fn messages(findings: &[Finding], id: &str) -> Vec<String> {
    findings
        .iter()
        .filter(|f| f.rule.id == id)
        .map(|f| f.message.clone())
        .collect()
}

#[test]
fn olm_v1_dependencies_and_install_modes() {
    let f = run("l5-operator/0.0.2", Suite::OlmV1);
    let deps = messages(&f, "OLM001");
    assert_eq!(deps.len(), 2, "{deps:?}");
    assert!(
        deps[0].contains("package crunchy-postgres-operator"),
        "{deps:?}"
    );
    assert!(f.iter().filter(|f| f.rule.id == "OLM001").all(|f| {
        f.level == Level::Error
            && f.location
                .as_ref()
                .unwrap()
                .file
                .ends_with("metadata/dependencies.yaml")
    }));

    let f = run("shipwright-operator/0.15.2", Suite::OlmV1);
    let req = messages(&f, "OLM002");
    assert!(
        req.iter()
            .any(|m| m.contains("tektonconfigs.operator.tekton.dev")),
        "{req:?}"
    );

    let f = run("aqua/2022.4.16", Suite::OlmV1);
    assert!(ids(&f).contains("OLM006"), "{f:?}");
    assert!(f.iter().all(|f| f.rule.id != "OLM005"));

    let f = run("service-binding-operator/0.9.0", Suite::OlmV1);
    assert!(ids(&f).contains("OLM007"), "{f:?}");

    let f = run("community-kubevirt-hyperconverged/1.16.0", Suite::OlmV1);
    assert!(ids(&f).contains("OLM011"), "{f:?}");
}

/// The renderer's checks (opship-install) reach the suite: what `opship manifests` refuses.
#[test]
fn olm_v1_renderer_checks() {
    let f = run("opentelemetry-operator/0.158.0", Suite::OlmV1);
    let pdb = f.iter().find(|f| f.rule.id == "OLM015").expect("OLM015");
    assert_eq!(pdb.object, "opentelemetry-operator-webhook");
    assert!(
        pdb.message.contains("Kind: PodDisruptionBudget"),
        "{}",
        pdb.message
    );
    assert!(pdb.location.as_ref().unwrap().pos.line > 0);

    // A v1beta1 CRD is not refused by the renderer: operator-controller reads it into the v1
    // type as it is (and the API server refuses it at apply; the deprecated-API rules say so).
    let f = run("prometheus/0.37.0", Suite::OlmV1);
    assert!(messages(&f, "OLM013").is_empty(), "{f:?}");
}

#[test]
fn rbac_findings_point_at_the_rule_entry() {
    let f = run("cockroachdb/2.1.1", Suite::Rbac);
    assert!(ids(&f).is_superset(&["RBAC001", "RBAC009"].into()), "{f:?}");
    let star = f.iter().find(|f| f.rule.id == "RBAC001").unwrap();
    assert!(
        star.message.contains("grants every verb"),
        "{}",
        star.message
    );
    assert!(star.location.as_ref().unwrap().pos.line > 0);

    let f = run("gitlab-runner-operator/1.50.0", Suite::Rbac);
    assert!(ids(&f).is_superset(&["RBAC004", "RBAC008"].into()), "{f:?}");
    let f = run("klusterlet/0.10.0", Suite::Rbac);
    assert!(ids(&f).is_superset(&["RBAC005", "RBAC006"].into()), "{f:?}");
    assert!(
        messages(&f, "RBAC005").iter().any(|m| m.contains("`bind`")),
        "{f:?}"
    );
    let f = run("namespace-configuration-operator/0.0.1", Suite::Rbac);
    assert!(ids(&f).contains("RBAC002"), "{f:?}");
    assert!(f.iter().all(|f| f.level == Level::Warning));
}

#[test]
fn crd_examples_are_checked_against_their_schema() {
    let f = run("keda/2.0.0", Suite::CrdExamples);
    let types = messages(&f, "EX002");
    assert_eq!(
        types,
        ["example 7 (ScaledJob scaledjob-sample, keda.sh/v1alpha1): \
          spec.jobTargetRef.template: expected object, found string \"## template\""]
    );
    assert!(
        messages(&f, "EX006")
            .iter()
            .any(|m| m.contains("spec.scaleTargetRef.deploymentName: unknown field")),
        "{f:?}"
    );

    let f = run(
        "ack-applicationautoscaling-controller/1.4.0",
        Suite::CrdExamples,
    );
    assert!(
        messages(&f, "EX003")
            .iter()
            .any(|m| m.contains("spec.resourceID: required field is missing")),
        "{f:?}"
    );

    let f = run("mariadb-operator/26.6.0", Suite::CrdExamples);
    assert!(
        messages(&f, "EX006")
            .iter()
            .any(|m| m.contains("spec.secretTemplate.annotations")),
        "{f:?}"
    );
}

#[test]
fn clean_bundles_have_no_findings() {
    // AllNamespaces without dependencies; narrow RBAC; correct examples and 20 CEL rules
    // (ack-dms-controller).
    for (bundle, suite) in [
        ("mariadb-operator/26.6.0", Suite::OlmV1),
        ("3scale-community-operator/0.9.0", Suite::OlmV1),
        ("3scale-community-operator/0.9.0", Suite::Rbac),
        ("ack-dms-controller/0.1.0", Suite::CrdExamples),
        ("opentelemetry-operator/0.157.0", Suite::CrdExamples),
    ] {
        let f = run(bundle, suite);
        assert!(f.is_empty(), "{bundle} {suite}: {f:#?}");
    }
}

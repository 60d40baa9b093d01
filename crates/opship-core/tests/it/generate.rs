//! Generation rules on small inline inputs: RBAC folding, webhooks, extra service accounts.

use std::collections::BTreeMap;
use std::path::Path;

use opship_core::bundle::{self, Inputs, Options};
use opship_core::manifest::parse_objects;
use serde_json::json;

fn opts() -> Options {
    Options {
        package: "demo".into(),
        version: semver::Version::new(1, 0, 0),
        channels: vec!["stable".into()],
        default_channel: Some("stable".into()),
        replaces: None,
        skips: vec![],
        skip_range: None,
        created_at: None,
        extra_service_accounts: vec![],
        exclude_kinds: vec!["Namespace".into()],
        labels: BTreeMap::new(),
        operator_image: None,
        display_name: None,
        csv_annotations: Default::default(),
        extra_manifests: Vec::new(),
        csv_substitutions: Vec::new(),
    }
}

const BASE: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: demo-manager, namespace: sys, labels: {app: demo}}
spec:
  selector: {matchLabels: {app: demo}}
  template:
    metadata: {labels: {app: demo}}
    spec:
      serviceAccountName: demo-sa
      containers: [{name: manager, image: "quay.io/demo/op:1.0.0"}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: demo-sa, namespace: sys}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader-here, namespace: sys}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects: [{kind: ServiceAccount, name: demo-sa, namespace: sys}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: reader-for-all}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects:
  - {kind: ServiceAccount, name: demo-sa, namespace: sys}
  - {kind: Group, name: auditors}
"#;

fn generate(extra: &str, o: Options) -> bundle::Bundle {
    let objects = parse_objects(&format!("{BASE}---\n{extra}"), Path::new("in.yaml")).unwrap();
    bundle::generate(
        Inputs {
            objects,
            base_csv: None,
        },
        &o,
    )
    .unwrap()
}

#[test]
fn cluster_role_through_role_binding_is_namespaced_and_shared_bindings_are_kept() {
    let b = generate("", opts());
    let spec = &b.csv["spec"]["install"]["spec"];
    let rule = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]});
    assert_eq!(
        spec["permissions"],
        json!([{"serviceAccountName": "demo-sa", "rules": [rule]}])
    );
    assert_eq!(
        spec["clusterPermissions"],
        json!([{"serviceAccountName": "demo-sa", "rules": [rule]}])
    );
    // The binding with a Group subject stays, and so does the role it needs; the CSV's own
    // service account is not written (OLM creates it).
    let files: Vec<&String> = b.files.keys().collect();
    assert!(
        files.iter().any(|f| f.as_str()
            == "manifests/reader-for-all_rbac.authorization.k8s.io_v1_clusterrolebinding.yaml"),
        "{files:?}"
    );
    assert!(files.iter().any(|f| f.as_str() == "manifests/reader_rbac.authorization.k8s.io_v1_clusterrole.yaml"), "{files:?}");
    assert!(
        !files
            .iter()
            .any(|f| f.contains("serviceaccount") || f.contains("reader-here")),
        "{files:?}"
    );
    let crb = String::from_utf8(
        b.files["manifests/reader-for-all_rbac.authorization.k8s.io_v1_clusterrolebinding.yaml"]
            .clone(),
    )
    .unwrap();
    assert!(
        !crb.contains("namespace: sys\n  name"),
        "metadata.namespace is dropped: {crb}"
    );
    assert!(b.warnings.iter().any(|w| w.contains("no base CSV")));
}

#[test]
fn display_name_replaces_the_bases() {
    let base = generate_with_base("", opts());
    let mut o = opts();
    o.display_name = Some("Demo - Community Edition".into());
    let b = generate_with_base("", o);
    assert_eq!(base.csv["spec"]["displayName"], "Demo");
    assert_eq!(b.csv["spec"]["displayName"], "Demo - Community Edition");
    let text = std::str::from_utf8(&b.files[&b.csv_file]).unwrap();
    assert!(
        text.contains("displayName: Demo - Community Edition"),
        "{text}"
    );
}

/// `csvAnnotations` win over generation's own annotations; `extraManifests` are written as
/// they are, never over a generated file.
#[test]
fn csv_annotations_and_extra_manifests() {
    let mut o = opts();
    o.operator_image = Some(("controller".into(), "quay.io/demo/op:v1.0.0".into()));
    o.csv_annotations.insert(
        "features.operators.openshift.io/disconnected".into(),
        "true".into(),
    );
    o.csv_annotations
        .insert("containerImage".into(), "quay.io/demo/op:v{version}".into());
    let rule = b"# kept as written\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n";
    o.extra_manifests.push(("extra.yaml".into(), rule.to_vec()));
    let b = generate_with_base("", o.clone());
    let ann = &b.csv["metadata"]["annotations"];
    assert_eq!(ann["features.operators.openshift.io/disconnected"], "true");
    assert_eq!(ann["containerImage"], "quay.io/demo/op:v1.0.0");
    assert_eq!(b.files["manifests/extra.yaml"], rule.to_vec());

    // A name generation writes is refused.
    o.extra_manifests = vec![(b.csv_file["manifests/".len()..].to_owned(), rule.to_vec())];
    let objects = parse_objects(BASE, Path::new("in.yaml")).unwrap();
    let base = parse_objects(BASE_CSV, Path::new("base.yaml"))
        .unwrap()
        .remove(0);
    let e = bundle::generate(
        Inputs {
            objects,
            base_csv: Some(base),
        },
        &o,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("has the name of a file generation writes"),
        "{e}"
    );
}

/// `csvSubstitutions` replace literal text in the CSV, the deployments (and the images listed
/// from them) included, and nowhere else.
#[test]
fn csv_substitutions_replace_text_in_the_csv() {
    let extra = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: other}
spec:
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: other}}
    spec:
      serviceAccountName: demo-sa
      containers:
        - name: other
          image: "quay.io/demo/other:1.0.0"
          env: [{name: RELATED_IMAGE_AGENT, value: "quay.io/demo/agent:$(VERSION)"}]
---
apiVersion: v1
kind: Service
metadata: {name: svc, annotations: {note: "$(VERSION)"}}
spec: {ports: [{port: 80}]}
"#;
    let mut o = opts();
    o.csv_substitutions = vec![("$(VERSION)".into(), "1.0.0".into())];
    let b = generate_with_base(extra, o);
    let text = b.csv.to_string();
    assert!(!text.contains("$(VERSION)"), "{text}");
    assert!(
        b.csv["spec"]["relatedImages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["image"] == "quay.io/demo/agent:1.0.0"),
        "{text}"
    );
    let svc = b
        .files
        .iter()
        .find(|(k, _)| k.contains("svc"))
        .map(|(_, v)| String::from_utf8(v.clone()).unwrap())
        .unwrap();
    assert!(svc.contains("$(VERSION)"), "{svc}");
}

#[test]
fn extra_service_accounts_are_folded() {
    let extra = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: worker, namespace: sys}
rules: [{apiGroups: [batch], resources: [jobs], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: worker, namespace: sys}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: worker}
subjects: [{kind: ServiceAccount, name: worker-sa}]
"#;
    let without = generate(extra, opts());
    assert!(
        without
            .files
            .keys()
            .any(|f| f.starts_with("manifests/worker_rbac"))
    );
    let mut o = opts();
    o.extra_service_accounts = vec!["worker-sa".into()];
    let with = generate(extra, o);
    let perms = with.csv["spec"]["install"]["spec"]["permissions"]
        .as_array()
        .unwrap();
    assert_eq!(
        perms
            .iter()
            .map(|p| p["serviceAccountName"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["demo-sa", "worker-sa"]
    );
    assert!(
        !with
            .files
            .keys()
            .any(|f| f.starts_with("manifests/worker_rbac"))
    );
}

#[test]
fn webhook_definitions_from_admission_and_conversion_webhooks() {
    let extra = r#"
apiVersion: v1
kind: Service
metadata: {name: demo-webhook-service, namespace: sys}
spec:
  selector: {app: demo}
  ports: [{port: 443, targetPort: 9443}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: demo-validating}
webhooks:
  - name: vwidget.demo.io
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    clientConfig: {service: {name: demo-webhook-service, namespace: sys, path: /validate-widget}}
    rules: [{apiGroups: [demo.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [widgets]}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.demo.io}
spec:
  group: demo.io
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {service: {name: demo-webhook-service, namespace: sys, path: /convert}}
  versions:
    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
    - {name: v1beta1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
    - {name: v1alpha1, served: false, storage: false, schema: {openAPIV3Schema: {type: object}}}
"#;
    let b = generate(extra, opts());
    let defs = &b.csv["spec"]["webhookdefinitions"];
    assert_eq!(
        defs,
        &json!([
            {"type": "ConversionWebhook", "generateName": "cwidgets.kb.io", "deploymentName": "demo-manager",
             "containerPort": 443, "targetPort": 9443, "sideEffects": "None", "admissionReviewVersions": ["v1"],
             "conversionCRDs": ["widgets.demo.io"], "webhookPath": "/convert"},
            {"type": "ValidatingAdmissionWebhook", "generateName": "vwidget.demo.io", "deploymentName": "demo-manager",
             "containerPort": 443, "targetPort": 9443, "sideEffects": "None", "failurePolicy": "Fail",
             "rules": [{"apiGroups": ["demo.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["widgets"]}],
             "admissionReviewVersions": ["v1"], "webhookPath": "/validate-widget"},
        ])
    );
    // Owned: the served versions only.
    let owned: Vec<&str> = b.csv["spec"]["customresourcedefinitions"]["owned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["version"].as_str().unwrap())
        .collect();
    assert_eq!(owned, ["v1", "v1beta1"]);
    assert!(b.files.contains_key("manifests/demo.io_widgets.yaml"));
}

/// A base CSV of package `demo` with the annotations operator-sdk's scaffolding writes.
const BASE_CSV: &str = r#"
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo.v0.9.0
  annotations:
    capabilities: Basic Install
    containerImage: quay.io/demo/op:0.9.0
    operators.operatorframework.io/builder: operator-sdk-v1.42.0
    operators.operatorframework.io/project_layout: go.kubebuilder.io/v4
spec:
  displayName: Demo
  version: 0.9.0
  installModes: [{type: AllNamespaces, supported: true}]
  install: {strategy: deployment, spec: {deployments: []}}
"#;

fn generate_with_base(extra: &str, o: Options) -> bundle::Bundle {
    let objects = parse_objects(&format!("{BASE}---\n{extra}"), Path::new("in.yaml")).unwrap();
    let base = parse_objects(BASE_CSV, Path::new("base.yaml"))
        .unwrap()
        .remove(0);
    bundle::generate(
        Inputs {
            objects,
            base_csv: Some(base),
        },
        &o,
    )
    .unwrap()
}

#[test]
fn container_image_annotation_is_kept_when_no_container_got_the_operator_image() {
    // BASE's container is `quay.io/demo/op:1.0.0`, not the placeholder.
    let mut o = opts();
    o.operator_image = Some(("controller".into(), "quay.io/demo/op:v1.0.0".into()));
    let b = generate_with_base("", o.clone());
    assert_eq!(
        b.csv["metadata"]["annotations"]["containerImage"],
        "quay.io/demo/op:0.9.0"
    );
    assert!(b.warnings.iter().any(|w| w.contains("placeholder")));

    // An init container with the placeholder is enough.
    let init = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: demo-init}
spec:
  selector: {matchLabels: {app: init}}
  template:
    metadata: {labels: {app: init}}
    spec:
      initContainers: [{name: setup, image: "controller:latest"}]
      containers: [{name: main, image: "busybox:1"}]
"#;
    let b = generate_with_base(init, o);
    assert_eq!(
        b.csv["metadata"]["annotations"]["containerImage"],
        "quay.io/demo/op:v1.0.0"
    );
}

#[test]
fn builder_and_project_layout_annotations_are_not_kept() {
    let b = generate_with_base("", opts());
    let ann = b.csv["metadata"]["annotations"].as_object().unwrap();
    assert!(
        !ann.contains_key("operators.operatorframework.io/builder"),
        "{ann:?}"
    );
    assert!(
        !ann.contains_key("operators.operatorframework.io/project_layout"),
        "{ann:?}"
    );
    assert_eq!(ann["capabilities"], "Basic Install");
}

#[test]
fn channels_default_to_alpha() {
    let mut o = opts();
    o.channels = vec![];
    o.default_channel = None;
    let b = generate("", o);
    assert_eq!(b.metadata.channels, ["alpha"]);
    let ann = String::from_utf8(b.files["metadata/annotations.yaml"].clone()).unwrap();
    assert!(
        ann.contains("operators.operatorframework.io.bundle.channels.v1: alpha\n"),
        "{ann}"
    );
    assert!(!ann.contains("channel.default.v1"), "{ann}");
}

#[test]
fn webhook_definitions_are_sorted_by_generate_name_and_have_only_known_fields() {
    let extra = r#"
apiVersion: v1
kind: Service
metadata: {name: demo-webhook-service, namespace: sys}
spec:
  selector: {app: demo}
  ports: [{port: 443, targetPort: 9443}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: demo-validating}
webhooks:
  - name: awidget.demo.io
    admissionReviewVersions: [v1]
    sideEffects: None
    namespaceSelector: {matchLabels: {team: demo}}
    clientConfig: {service: {name: demo-webhook-service, namespace: sys, path: /validate}}
  - name: same.demo.io
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig: {service: {name: demo-webhook-service, namespace: sys, path: /validate-same}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: demo-mutating}
webhooks:
  - name: mwidget.demo.io
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig: {service: {name: demo-webhook-service, namespace: sys, path: /mutate}}
  - name: same.demo.io
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig: {service: {name: demo-webhook-service, namespace: sys, path: /mutate-same}}
"#;
    let b = generate(extra, opts());
    let defs = b.csv["spec"]["webhookdefinitions"].as_array().unwrap();
    let order: Vec<(&str, &str)> = defs
        .iter()
        .map(|d| {
            (
                d["generateName"].as_str().unwrap(),
                d["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("awidget.demo.io", "ValidatingAdmissionWebhook"),
            ("mwidget.demo.io", "MutatingAdmissionWebhook"),
            ("same.demo.io", "MutatingAdmissionWebhook"),
            ("same.demo.io", "ValidatingAdmissionWebhook"),
        ]
    );
    // The CSV's WebhookDescription has no namespaceSelector: the API server would prune it.
    assert!(defs.iter().all(|d| d.get("namespaceSelector").is_none()));
}

#[test]
fn every_refused_object_is_reported_at_once() {
    let extra = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec: {template: {spec: {containers: [{name: m, image: busybox}], restartPolicy: Never}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec: {schedule: "@daily"}
---
apiVersion: v1
kind: Namespace
metadata: {name: sys}
"#;
    let objects = parse_objects(&format!("{BASE}---\n{extra}"), Path::new("in.yaml")).unwrap();
    let err = bundle::generate(
        Inputs {
            objects,
            base_csv: None,
        },
        &opts(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("2 objects cannot be part of a registry+v1 bundle"),
        "{err}"
    );
    assert!(
        err.contains("in.yaml:37:1: Job migrate (batch/v1)"),
        "{err}"
    );
    assert!(
        err.contains("in.yaml:42:1: CronJob nightly (batch/v1)"),
        "{err}"
    );
    assert!(err.contains("`CronJob`, `Job`"), "{err}");
    assert!(
        !err.contains("Namespace"),
        "excluded kinds are not refused: {err}"
    );
}

#[test]
fn the_version_defaults_to_the_base_csvs() {
    let base = parse_objects(BASE_CSV, Path::new("base.yaml"))
        .unwrap()
        .remove(0);
    let objects = parse_objects(BASE, Path::new("in.yaml")).unwrap();
    let mut inputs = Inputs {
        objects,
        base_csv: Some(base),
    };
    assert_eq!(
        bundle::base_version(&inputs, "demo").unwrap(),
        semver::Version::new(0, 9, 0)
    );
    // A CSV of the package among the manifests wins over the base, as in generation.
    let in_manifests = BASE_CSV
        .replace("demo.v0.9.0", "demo.v0.8.0")
        .replace("version: 0.9.0", "version: 0.8.0");
    inputs
        .objects
        .extend(parse_objects(&in_manifests, Path::new("csv.yaml")).unwrap());
    assert_eq!(
        bundle::base_version(&inputs, "demo").unwrap(),
        semver::Version::new(0, 8, 0)
    );

    let none = Inputs {
        objects: parse_objects(BASE, Path::new("in.yaml")).unwrap(),
        base_csv: None,
    };
    let err = bundle::base_version(&none, "demo").unwrap_err().to_string();
    assert!(
        err.contains("--version") && err.contains("no base CSV"),
        "{err}"
    );

    let without = BASE_CSV.replace("  version: 0.9.0\n", "");
    let err = bundle::base_version(
        &Inputs {
            objects: vec![],
            base_csv: Some(
                parse_objects(&without, Path::new("base.yaml"))
                    .unwrap()
                    .remove(0),
            ),
        },
        "demo",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("base.yaml") && err.contains("spec.version"),
        "{err}"
    );
}

#[test]
fn refused_objects_are_listed_up_to_a_bound() {
    let jobs: String = (0..150)
        .map(|i| format!("apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j{i}}}\n---\n"))
        .collect();
    let objects = parse_objects(&format!("{BASE}---\n{jobs}"), Path::new("in.yaml")).unwrap();
    let err = bundle::generate(
        Inputs {
            objects,
            base_csv: None,
        },
        &opts(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("150 objects cannot"), "{err}");
    assert_eq!(err.lines().count(), 1 + 100 + 1, "{err}");
    assert!(err.ends_with("\n  … and 50 more"), "{err}");
}

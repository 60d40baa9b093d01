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

//! The acceptance check of one chart against its bundle, through the real Helm engine: lint
//! is clean, rendering with the default values gives the bundle's Deployments, RBAC rules,
//! Services, CRDs and other objects (compared as parsed objects), every `values-<env>.yaml`
//! renders and takes effect, and the schema refuses wrong values.
//!
//! Normalisation before comparing, applied to both sides alike: `metadata.namespace` and the
//! namespace of ServiceAccount subjects (Helm puts the release namespace there; a bundle has
//! none or OLM's placeholder), the labels the chart's helpers add (`helm.sh/chart`,
//! `app.kubernetes.io/managed-by`, `app.kubernetes.io/instance`), the CRD annotation
//! `helm.sh/resource-policy: keep`, `status` and `creationTimestamp`, and then null values and
//! empty maps and lists. For webhooks: volumes and mounts at the serving-certificate paths
//! (which the chart replaces with cert-manager's certificate), and `spec.conversion` plus the
//! CA-injection annotation of CRDs with a conversion webhook; the webhook wiring itself is
//! checked separately. A deployment without `replicas` is compared as `replicas: 1`, the
//! Kubernetes default that the chart writes. RBAC objects of `rbac.authorization.k8s.io/v1beta1`
//! compare as `v1`, which the chart writes (same schema; v1beta1 is gone since 1.22).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use opship_chart::Options;
use opship_chart::model::{self, CERT_PATHS, HELM_LABELS};
use opship_core::config::Environment;
use serde_json::{Value, json};

use crate::{environments, helm, render_to_temp};

/// Drops nulls and empty maps/lists, recursively.
fn prune(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for x in m.values_mut() {
                prune(x);
            }
            m.retain(|_, x| !is_empty(x));
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                prune(x);
            }
        }
        _ => {}
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn strip_cert_volumes(pod: &mut Value) {
    let mut dropped = BTreeSet::new();
    for c in pod["containers"].as_array_mut().into_iter().flatten() {
        if let Some(ms) = c.get_mut("volumeMounts").and_then(Value::as_array_mut) {
            ms.retain(|m| {
                let keep = !CERT_PATHS.contains(&m["mountPath"].as_str().unwrap_or(""))
                    && !m["name"].as_str().unwrap_or("").starts_with("opship-");
                if !keep {
                    dropped.insert(m["name"].as_str().unwrap_or("").to_owned());
                }
                keep
            });
        }
    }
    let used: BTreeSet<String> = pod["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["volumeMounts"].as_array().cloned().unwrap_or_default())
        .filter_map(|m| m["name"].as_str().map(str::to_owned))
        .collect();
    if let Some(vs) = pod.get_mut("volumes").and_then(Value::as_array_mut) {
        vs.retain(|v| {
            let n = v["name"].as_str().unwrap_or("");
            !(n.starts_with("opship-") || dropped.contains(n) && !used.contains(n))
        });
    }
}

/// The normalised form of an object (see the module docs).
pub fn normalise(v: &Value, webhooks: bool, conversion_crds: &BTreeSet<String>) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("status");
    }
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("namespace");
        meta.remove("creationTimestamp");
        if let Some(l) = meta.get_mut("labels").and_then(Value::as_object_mut) {
            for k in HELM_LABELS {
                l.remove(*k);
            }
        }
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove("helm.sh/resource-policy");
        }
    }
    for s in v
        .get_mut("subjects")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if s["kind"] == "ServiceAccount"
            && let Some(m) = s.as_object_mut()
        {
            m.remove("namespace");
        }
    }
    let kind = v["kind"].as_str().unwrap_or("").to_owned();
    if v["apiVersion"] == "rbac.authorization.k8s.io/v1beta1" {
        v["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
    }
    if kind == "Deployment" {
        if v["spec"].get("replicas").is_none() {
            v["spec"]["replicas"] = json!(1);
        }
        if webhooks && let Some(pod) = v.pointer_mut("/spec/template/spec") {
            strip_cert_volumes(pod);
        }
    }
    if kind == "CustomResourceDefinition"
        && conversion_crds.contains(v["metadata"]["name"].as_str().unwrap_or(""))
    {
        if let Some(s) = v.get_mut("spec").and_then(Value::as_object_mut) {
            s.remove("conversion");
        }
        if let Some(a) = v
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            a.remove("cert-manager.io/inject-ca-from");
        }
    }
    prune(&mut v);
    v
}

/// Objects of Helm's rendered output (NOTES.txt left out), with the file each came from.
pub fn parse_rendered(rendered: &Value, what: &str) -> Vec<(String, Value)> {
    assert!(
        rendered.get("error").is_none(),
        "{what}: Helm could not render: {}",
        rendered["error"]
    );
    let mut out = Vec::new();
    for (path, text) in rendered.as_object().expect("rendered manifests") {
        if path.ends_with("NOTES.txt") {
            continue;
        }
        let docs = opship_core::yaml::parse_stream(text.as_str().unwrap(), Path::new(path))
            .unwrap_or_else(|e| panic!("{what}: Helm's output is not YAML: {e}\n{text}"));
        for d in docs {
            out.push((path.clone(), d.value));
        }
    }
    out
}

fn key(v: &Value) -> (String, String) {
    (
        v["kind"].as_str().unwrap_or("").to_owned(),
        v["metadata"]["name"].as_str().unwrap_or("").to_owned(),
    )
}

/// What the check found, for the test to report.
#[derive(Debug, Default)]
pub struct Summary {
    /// Objects compared one to one with the bundle's.
    pub objects: usize,
    /// (Cluster)Roles compared with the CSV's permissions.
    pub csv_roles: usize,
    /// Webhook configurations checked.
    pub webhooks: usize,
}

/// The whole acceptance check of one bundle's chart, with the test environments.
pub fn check_bundle(bundle_dir: &Path, opts: &Options) -> Summary {
    check_bundle_with(bundle_dir, opts, &environments())
}

/// The whole acceptance check of one bundle's chart, with the given environments.
pub fn check_bundle_with(
    bundle_dir: &Path,
    opts: &Options,
    envs: &BTreeMap<String, Environment>,
) -> Summary {
    let what = bundle_dir.display().to_string();
    let (_tmp, dir, chart) = render_to_temp(bundle_dir, opts, envs);
    let mut args: Vec<String> = vec!["check".into(), dir.display().to_string()];
    for env in envs.keys() {
        args.push("--env".into());
        args.push(dir.join(format!("values-{env}.yaml")).display().to_string());
    }
    let bad = [
        r#"{"replicas": "two"}"#,
        r#"{"image": {"pullPolicy": "Sometimes"}}"#,
        r#"{"replicass": 2}"#,
        r#"{"rbac": {"create": "yes"}}"#,
    ];
    for b in bad {
        args.push("--bad-json".into());
        args.push(b.into());
    }
    let r = helm(&args);

    // 1. lint: no error, no warning; the only message allowed is the missing icon (info).
    let lint = &r["lint"];
    assert!(lint.get("error").is_none(), "{what}: lint failed: {lint}");
    assert_eq!(lint["errors"], json!([]), "{what}: lint errors: {lint}");
    for m in lint["messages"].as_array().unwrap() {
        assert!(
            m["severity"] == 1 && m["error"] == "icon is recommended",
            "{what}: lint message other than the missing icon: {m}"
        );
    }

    // 2. The schema refuses wrong values.
    for (b, res) in bad.iter().zip(r["bad"].as_array().unwrap()) {
        assert_eq!(
            res["error"]["type"], "HelmValuesError",
            "{what}: validate_schema accepted {b}: {res}"
        );
    }

    // 3. Render with the defaults = the bundle.
    let bundle = model::load_bundle(bundle_dir).unwrap();
    let csv = bundle.csv.value().clone();
    let defs = csv["spec"]["webhookdefinitions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let webhooks = !defs.is_empty();
    let conversion_crds: BTreeSet<String> = defs
        .iter()
        .filter(|d| d["type"] == "ConversionWebhook")
        .flat_map(|d| d["conversionCRDs"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c.as_str().map(str::to_owned))
        .collect();
    let mut rendered = parse_rendered(&r["default"], &what);
    for crd in r["crds"].as_array().unwrap() {
        // Files in crds/ are not templated: Helm applies their text as it is.
        let name = crd["name"].as_str().unwrap_or_default().to_owned();
        let text = crd["data"].as_str().unwrap_or_default();
        for d in opship_core::yaml::parse_stream(text, Path::new(&name)).unwrap() {
            rendered.push((name.clone(), d.value));
        }
    }
    let norm = |v: &Value| normalise(v, webhooks, &conversion_crds);
    let mut by_key: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
    for (_, v) in &rendered {
        by_key.entry(key(v)).or_default().push(v.clone());
    }
    let mut summary = Summary::default();
    let install = &csv["spec"]["install"]["spec"];

    // Deployments of the install strategy.
    for d in install["deployments"].as_array().unwrap() {
        let expected = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": d["name"], "labels": d.get("label").cloned().unwrap_or(Value::Null)},
            "spec": d["spec"],
        });
        let k = key(&expected);
        let got = by_key
            .get(&k)
            .unwrap_or_else(|| panic!("{what}: no Deployment {} rendered", k.1));
        assert_eq!(got.len(), 1, "{what}: Deployment {} rendered twice", k.1);
        assert_eq!(
            norm(&got[0]),
            norm(&expected),
            "{what}: Deployment {} differs",
            k.1
        );
        summary.objects += 1;
    }

    // The bundle's own objects (CRDs, Services, RBAC, ConfigMaps, ...); monitoring objects are
    // off by default.
    let off_by_default = ["ServiceMonitor", "PodMonitor", "PrometheusRule"];
    let mut bundle_keys = BTreeSet::new();
    for o in &bundle.objects {
        let v = o.value();
        let k = key(v);
        bundle_keys.insert(k.clone());
        if off_by_default.contains(&k.0.as_str()) {
            assert!(
                !by_key.contains_key(&k),
                "{what}: {} {} rendered though it is off by default",
                k.0,
                k.1
            );
            continue;
        }
        let got = by_key
            .get(&k)
            .unwrap_or_else(|| panic!("{what}: no {} {} rendered", k.0, k.1));
        assert!(
            got.iter().any(|g| norm(g) == norm(v)),
            "{what}: {} {} differs:\nrendered: {}\nbundle:   {}",
            k.0,
            k.1,
            norm(&got[0]),
            norm(v)
        );
        summary.objects += 1;
    }

    // RBAC of the CSV: every permissions/clusterPermissions entry is a (Cluster)Role with the
    // same rules, bound to the same service account.
    let mut rendered_roles: BTreeMap<(String, String), Value> = BTreeMap::new();
    let mut bound: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (_, v) in &rendered {
        let k = key(v);
        if bundle_keys.contains(&k) {
            continue;
        }
        match k.0.as_str() {
            "Role" | "ClusterRole" => {
                rendered_roles.insert(k, norm(&json!({"rules": v["rules"]})));
            }
            "RoleBinding" | "ClusterRoleBinding" => {
                let role_kind = v["roleRef"]["kind"].as_str().unwrap_or("").to_owned();
                let role = v["roleRef"]["name"].as_str().unwrap_or("").to_owned();
                for s in v["subjects"].as_array().into_iter().flatten() {
                    if s["kind"] == "ServiceAccount" {
                        assert_eq!(
                            s["namespace"], "ops",
                            "{what}: subject not in the release namespace"
                        );
                        bound
                            .entry((role_kind.clone(), role.clone()))
                            .or_default()
                            .push(s["name"].as_str().unwrap_or("").to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    let mut expected_roles: Vec<(String, String, Value)> = Vec::new();
    for (field, kind) in [
        ("permissions", "Role"),
        ("clusterPermissions", "ClusterRole"),
    ] {
        for p in install[field].as_array().into_iter().flatten() {
            expected_roles.push((
                kind.to_owned(),
                p["serviceAccountName"].as_str().unwrap_or("").to_owned(),
                norm(&json!({"rules": p["rules"]})),
            ));
        }
    }
    let mut actual_roles: Vec<(String, String, Value)> = Vec::new();
    for ((kind, name), rules) in &rendered_roles {
        let subjects = bound
            .get(&(kind.clone(), name.clone()))
            .unwrap_or_else(|| panic!("{what}: {kind} {name} is bound to nothing"));
        for sa in subjects {
            actual_roles.push((kind.clone(), sa.clone(), rules.clone()));
        }
    }
    let sort = |v: &mut Vec<(String, String, Value)>| {
        v.sort_by(|a, b| (&a.0, &a.1, a.2.to_string()).cmp(&(&b.0, &b.1, b.2.to_string())))
    };
    sort(&mut expected_roles);
    sort(&mut actual_roles);
    assert_eq!(
        actual_roles, expected_roles,
        "{what}: RBAC differs from the CSV's permissions"
    );
    summary.csv_roles = expected_roles.len();

    // Service accounts: every one the deployments and permissions name exists.
    let rendered_sas: BTreeSet<String> = rendered
        .iter()
        .filter(|(_, v)| v["kind"] == "ServiceAccount")
        .map(|(_, v)| key(v).1)
        .collect();
    for d in install["deployments"].as_array().unwrap() {
        let pod = &d["spec"]["template"]["spec"];
        if let Some(sa) = pod["serviceAccountName"]
            .as_str()
            .filter(|s| *s != "default")
        {
            assert!(
                rendered_sas.contains(sa),
                "{what}: service account {sa} not rendered"
            );
        }
    }

    // Webhooks: one configuration per definition, each pointing at a rendered Service that
    // selects the serving deployment, and conversion CRDs wired to it.
    for d in &defs {
        let kind = match d["type"].as_str().unwrap_or("") {
            "ValidatingAdmissionWebhook" => "ValidatingWebhookConfiguration",
            "MutatingAdmissionWebhook" => "MutatingWebhookConfiguration",
            _ => continue,
        };
        let name = d["generateName"]
            .as_str()
            .unwrap()
            .trim_end_matches(['-', '.']);
        let cfg = by_key
            .get(&(kind.to_owned(), name.to_owned()))
            .unwrap_or_else(|| panic!("{what}: no {kind} {name}"));
        let hook = &cfg[0]["webhooks"][0];
        assert_eq!(hook["rules"], d["rules"], "{what}: {name} rules");
        let svc = hook["clientConfig"]["service"]["name"].as_str().unwrap();
        assert_eq!(hook["clientConfig"]["service"]["namespace"], "ops");
        assert_eq!(
            hook["clientConfig"]["service"]["port"], d["containerPort"],
            "{what}: {name} port"
        );
        let service = &by_key
            .get(&("Service".to_owned(), svc.to_owned()))
            .unwrap_or_else(|| panic!("{what}: webhook service {svc} not rendered"))[0];
        let dns = json!(format!("{svc}.ops.svc"));
        assert!(
            rendered.iter().any(|(_, v)| v["kind"] == "Certificate"
                && v["spec"]["dnsNames"]
                    .as_array()
                    .is_some_and(|n| n.contains(&dns))),
            "{what}: no serving certificate for {dns}"
        );
        let dep = d["deploymentName"].as_str().unwrap();
        let dep_obj = &by_key[&("Deployment".to_owned(), dep.to_owned())][0];
        assert_eq!(
            service["spec"]["selector"], dep_obj["spec"]["selector"]["matchLabels"],
            "{what}: webhook service {svc} does not select {dep}"
        );
        let mounts: Vec<&str> =
            dep_obj["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m["mountPath"].as_str())
                .collect();
        assert!(
            mounts.contains(&CERT_PATHS[0]),
            "{what}: {dep} does not mount the serving certificate"
        );
        assert!(
            cfg[0]["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
                .as_str()
                .is_some_and(|a| a.starts_with("ops/")),
            "{what}: {name} has no CA injection"
        );
        summary.webhooks += 1;
    }
    for crd in &conversion_crds {
        let Some(c) = by_key.get(&("CustomResourceDefinition".to_owned(), crd.clone())) else {
            continue;
        };
        if c[0]["apiVersion"] == "apiextensions.k8s.io/v1" {
            assert_eq!(
                c[0]["spec"]["conversion"]["strategy"], "Webhook",
                "{what}: {crd} conversion not wired"
            );
        }
    }

    // 4. Each environment renders and takes effect on the operator's deployment.
    let (mdep, mcon) = &chart.manager;
    for (env, e) in envs {
        let file = dir.join(format!("values-{env}.yaml")).display().to_string();
        let objs = parse_rendered(&r["envs"][&file], &format!("{what} ({env})"));
        let dep = objs
            .iter()
            .map(|(_, v)| v)
            .find(|v| v["kind"] == "Deployment" && v["metadata"]["name"] == mdep.as_str())
            .unwrap_or_else(|| panic!("{what} ({env}): no deployment {mdep}"));
        if let Some(n) = e.replicas {
            assert_eq!(
                dep["spec"]["replicas"],
                json!(n),
                "{what} ({env}): replicas"
            );
        }
        let c = dep["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == mcon.as_str())
            .unwrap();
        if let Some(res) = &e.resources {
            assert_eq!(&c["resources"], res, "{what} ({env}): resources");
        }
        if let Some(tag) = &e.tag {
            let tag = tag.replace("{version}", &chart.version.to_string());
            let image = c["image"].as_str().unwrap();
            assert!(
                image.contains(&format!(":{tag}")),
                "{what} ({env}): image {image} lacks tag {tag}"
            );
        }
    }
    summary
}

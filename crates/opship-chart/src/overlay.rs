//! Kustomize overlays for users who deploy without Helm: `base/` holds the bundle's objects
//! as plain manifests (the deployments of the CSV, their service accounts and RBAC, CRDs and
//! the other objects, the same names the chart uses; not the webhook wiring, which needs
//! cert-manager), and `<env>/` applies one environment of `opship.yaml` to it (image tag,
//! replicas, resources of the operator container) with kustomize's own transformers.

use std::collections::BTreeMap;
use std::path::Path;

use opship_core::config::Environment;
use serde_json::{Value, json};

use crate::error::Result;
use crate::model::{self, Options};
use crate::render::Files;

fn yaml(v: &Value) -> Result<Vec<u8>> {
    Ok(opship_core::yaml::to_string(v)?.into_bytes())
}

fn file_name(kind: &str, name: &str) -> String {
    let safe: String = format!("{}-{name}.yaml", kind.to_lowercase())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    safe
}

/// The overlay tree of one bundle: `base/` and one directory per environment.
pub fn render(
    bundle_dir: &Path,
    opts: &Options,
    environments: &BTreeMap<String, Environment>,
    name: &str,
    version: &semver::Version,
) -> Result<Files> {
    let bundle = model::load_bundle(bundle_dir)?;
    let m = model::build(&bundle, opts)?;
    let ctx = &m.context;
    let csv = bundle.csv.value();
    let mut objects: Vec<Value> = Vec::new();
    for d in csv["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .into_iter()
        .flatten()
    {
        objects.push(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": d["name"], "labels": d.get("label").cloned().unwrap_or_else(|| json!({}))},
            "spec": d["spec"],
        }));
    }
    for sa in ctx["serviceAccounts"].as_array().into_iter().flatten() {
        objects
            .push(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}}));
    }
    for (list, kind, binding) in [
        ("roles", "Role", "RoleBinding"),
        ("clusterRoles", "ClusterRole", "ClusterRoleBinding"),
    ] {
        for r in ctx[list].as_array().into_iter().flatten() {
            objects.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": r["name"]},
                "rules": r["rules"],
            }));
            objects.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": binding,
                "metadata": {"name": r["name"]},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": r["name"]},
                "subjects": [{"kind": "ServiceAccount", "name": r["serviceAccountName"], "namespace": name}],
            }));
        }
    }
    for o in &bundle.objects {
        let mut v = o.value().clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("namespace");
            meta.remove("creationTimestamp");
        }
        if let Some(obj) = v.as_object_mut() {
            obj.remove("status");
        }
        objects.push(v);
    }
    let mut files = Files::new();
    let mut resources = Vec::new();
    for o in &objects {
        let mut f = file_name(
            o["kind"].as_str().unwrap_or("object"),
            o["metadata"]["name"].as_str().unwrap_or("unnamed"),
        );
        let mut n = 1;
        while resources.contains(&f) {
            n += 1;
            f = file_name(
                o["kind"].as_str().unwrap_or("object"),
                &format!(
                    "{}-{n}",
                    o["metadata"]["name"].as_str().unwrap_or("unnamed")
                ),
            );
        }
        files.insert(format!("base/{f}"), yaml(o)?);
        resources.push(f);
    }
    files.insert(
        "base/kustomization.yaml".into(),
        yaml(&json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "namespace": name,
            "resources": resources,
        }))?,
    );
    let (deployment, container) = &m.manager;
    let repository = m.values["image"]["repository"].clone();
    for (env, e) in environments {
        let mut k = json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": ["../base"],
        });
        if let Some(tag) = &e.tag {
            k["images"] = json!([{"name": repository, "newTag": tag.replace("{version}", &version.to_string())}]);
        }
        if let Some(r) = e.replicas {
            k["replicas"] = json!([{"name": deployment, "count": r}]);
        }
        if let Some(res) = &e.resources {
            let idx = csv["spec"]["install"]["spec"]["deployments"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|d| d["name"] == deployment.as_str())
                .and_then(|d| d["spec"]["template"]["spec"]["containers"].as_array())
                .and_then(|cs| cs.iter().position(|c| c["name"] == container.as_str()))
                .unwrap_or(0);
            let patch = json!([{"op": "add", "path": format!("/spec/template/spec/containers/{idx}/resources"), "value": res}]);
            k["patches"] = json!([{
                "target": {"group": "apps", "version": "v1", "kind": "Deployment", "name": deployment},
                "patch": opship_core::yaml::to_string(&patch)?,
            }]);
        }
        files.insert(format!("{env}/kustomization.yaml"), yaml(&k)?);
    }
    Ok(files)
}

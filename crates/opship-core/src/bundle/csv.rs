//! The ClusterServiceVersion: a base (written by hand once) brought up to date with the
//! manifests. Everything derivable from the manifests is recomputed on every run; everything
//! else (descriptions, icon, install modes, descriptors) is kept from the base.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::manifest::Object;

use super::collect::served_versions;

/// A new base when the project has none, as `operator-sdk generate kustomize manifests`
/// writes it.
pub(crate) fn new_base(package: &str) -> Object {
    let display: String = package
        .split('-')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ");
    Object::generated(
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {
                "annotations": {"alm-examples": "[]", "capabilities": "Basic Install"},
                "name": format!("{package}.v0.0.0"),
                "namespace": "placeholder",
            },
            "spec": {
                "apiservicedefinitions": {},
                "customresourcedefinitions": {},
                "description": format!("{display} description. TODO."),
                "displayName": display,
                "icon": [{"base64data": "", "mediatype": ""}],
                "install": {"spec": {"deployments": null}, "strategy": ""},
                "installModes": [
                    {"supported": false, "type": "OwnNamespace"},
                    {"supported": false, "type": "SingleNamespace"},
                    {"supported": false, "type": "MultiNamespace"},
                    {"supported": true, "type": "AllNamespaces"},
                ],
                "keywords": [package],
                "links": [{"name": display, "url": format!("https://{package}.domain")}],
                "maintainers": [{"email": "your@email.com", "name": "Maintainer Name"}],
                "maturity": "alpha",
                "provider": {"name": "Provider Name", "url": "https://your.domain"},
                "version": "0.0.0",
            }
        }),
        Path::new("<new base CSV>"),
    )
}

/// Makes sure `base` is a CSV and gives back its content as a mapping.
pub(crate) fn check_base(base: &Object) -> Result<()> {
    if base.kind() != "ClusterServiceVersion" {
        return Err(base.error("/kind", "the base CSV must be a ClusterServiceVersion"));
    }
    if !base.value()["spec"].is_object() && !base.value()["spec"].is_null() {
        return Err(base.error("/spec", "spec must be a mapping"));
    }
    Ok(())
}

/// Gets `obj[key]` as a mapping, creating it (or replacing a null) when needed.
pub(crate) fn map_at<'a>(obj: &'a mut Value, key: &str) -> Result<&'a mut Map<String, Value>> {
    let Value::Object(parent) = obj else {
        return Err(Error::Internal(format!(
            "parent of `{key}` is not a mapping"
        )));
    };
    let slot = parent
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
        .ok_or_else(|| Error::Input(format!("CSV field `{key}` must be a mapping")))
}

/// `spec.customresourcedefinitions.owned`: one entry per served version of every CRD, in CRD
/// order and version order. An entry of the base with the same (name, version, kind) keeps
/// its descriptors.
pub(crate) fn owned_crds(base_owned: &[Value], crds: &[Object]) -> Vec<Value> {
    let mut existing: HashMap<(String, String, String), &Value> = HashMap::new();
    for e in base_owned {
        let key = (
            e["name"].as_str().unwrap_or_default().to_owned(),
            e["version"].as_str().unwrap_or_default().to_owned(),
            e["kind"].as_str().unwrap_or_default().to_owned(),
        );
        existing.entry(key).or_insert(e);
    }
    let mut out = Vec::new();
    for crd in crds {
        for (_, version, kind) in served_versions(crd) {
            let key = (crd.name().to_owned(), version.clone(), kind.clone());
            match existing.get(&key) {
                Some(e) => out.push((*e).clone()),
                None => out.push(json!({"name": crd.name(), "version": version, "kind": kind})),
            }
        }
    }
    out
}

/// Rewrites a `WATCH_NAMESPACE` env var to read the namespaces OLM's OperatorGroup targets.
pub(crate) fn rewrite_watch_namespace(deployment: &mut Value) {
    for list in ["initContainers", "containers"] {
        let ptr = format!("/spec/template/spec/{list}");
        let containers = deployment.pointer_mut(&ptr).and_then(Value::as_array_mut);
        for c in containers.into_iter().flatten() {
            let envs = c.get_mut("env").and_then(Value::as_array_mut);
            for e in envs.into_iter().flatten() {
                if e.get("name").and_then(Value::as_str) == Some("WATCH_NAMESPACE") {
                    *e = json!({
                        "name": "WATCH_NAMESPACE",
                        "valueFrom": {"fieldRef": {
                            "fieldPath": "metadata.annotations['olm.targetNamespaces']"
                        }},
                    });
                }
            }
        }
    }
}

/// `{name, spec, label}` of a Deployment as `spec.install.spec.deployments` holds it.
pub(crate) fn install_deployment(d: &Object) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(d.name()));
    m.insert("spec".into(), d.value()["spec"].clone());
    if let Some(labels) = d.value()["metadata"]["labels"]
        .as_object()
        .filter(|l| !l.is_empty())
    {
        m.insert("label".into(), Value::Object(labels.clone()));
    }
    Value::Object(m)
}

/// `alm-examples`: the custom resources as a 2-space-indented JSON array.
pub(crate) fn alm_examples(crs: &[Object]) -> String {
    // Keys sorted, like the YAML around it, so input layout does not leak into the output.
    let list: Vec<Value> = crs.iter().map(|c| crate::yaml::sorted(c.value())).collect();
    serde_json::to_string_pretty(&list).unwrap_or_else(|_| "[]".into())
}

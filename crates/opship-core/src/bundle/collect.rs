//! Sorting input objects by what a bundle does with them, the first step of generation.

use std::collections::HashSet;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::manifest::Object;

/// Kinds that may stand as their own file in `manifests/` of a registry+v1 bundle
/// (operator-registry's supported_resources.go; the check is on kind only, as there).
pub const ALLOWED_KINDS: &[&str] = &[
    "ClusterServiceVersion",
    "CustomResourceDefinition",
    "Secret",
    "ConfigMap",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ServiceAccount",
    "Service",
    "PrometheusRule",
    "ServiceMonitor",
    "PodDisruptionBudget",
    "PriorityClass",
    "VerticalPodAutoscaler",
    "ConsoleYAMLSample",
    "ConsoleQuickStart",
    "ConsoleCLIDownload",
    "ConsoleLink",
    "ConsolePlugin",
    "NetworkPolicy",
    "PodMonitor",
];

/// The inputs, by role.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub csvs: Vec<Object>,
    pub roles: Vec<Object>,
    pub cluster_roles: Vec<Object>,
    pub role_bindings: Vec<Object>,
    pub cluster_role_bindings: Vec<Object>,
    pub deployments: Vec<Object>,
    pub service_accounts: Vec<Object>,
    pub services: Vec<Object>,
    pub crds: Vec<Object>,
    pub webhook_configs: Vec<Object>,
    pub scorecard: Option<Object>,
    /// Instances of the bundle's own CRDs: they become `alm-examples`.
    pub custom_resources: Vec<Object>,
    /// Other objects of allowed kinds, written as they are.
    pub others: Vec<Object>,
    /// Objects dropped because their kind is excluded.
    pub excluded: Vec<Object>,
}

/// `(group, version, kind)` of every served version of a CRD, in the CRD's version order.
pub(crate) fn served_versions(crd: &Object) -> Vec<(String, String, String)> {
    let v = crd.value();
    let group = v["spec"]["group"].as_str().unwrap_or_default().to_owned();
    let kind = v["spec"]["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut out = Vec::new();
    if let Some(versions) = v["spec"]["versions"].as_array() {
        for ver in versions {
            // v1beta1 CRDs may leave `served` out of `versions`; it defaults to true there.
            let served = ver["served"]
                .as_bool()
                .unwrap_or(crd.version() == "v1beta1");
            if served && let Some(name) = ver["name"].as_str() {
                out.push((group.clone(), name.to_owned(), kind.clone()));
            }
        }
    } else if let Some(name) = v["spec"]["version"].as_str() {
        out.push((group.clone(), name.to_owned(), kind.clone()));
    }
    out
}

const RBAC: &str = "rbac.authorization.k8s.io";

/// Sorts `objects` into a [`Collected`]. Identical objects (a resource listed twice in a
/// kustomization) count once. A kind a bundle cannot hold is an error unless excluded.
pub(crate) fn collect(objects: Vec<Object>, exclude_kinds: &[String]) -> Result<Collected> {
    let (c, refused) = sort(objects, exclude_kinds)?;
    if !refused.is_empty() {
        return Err(refusal(&refused));
    }
    for d in &c.deployments {
        check_deployment(d)?;
    }
    for w in &c.webhook_configs {
        if !w.value()["webhooks"].is_array() && !w.value()["webhooks"].is_null() {
            return Err(w.error("/webhooks", "`webhooks` must be a list"));
        }
    }
    Ok(c)
}

/// The kinds among `objects` that generation would refuse with `exclude_kinds`, each once in
/// the order first seen (what `opship init` excludes where operator-sdk drops silently).
pub fn refused_kinds(objects: &[Object], exclude_kinds: &[String]) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    if let Ok((_, refused)) = sort(objects.to_vec(), exclude_kinds) {
        for o in refused {
            if !kinds.iter().any(|k| k == o.kind()) {
                kinds.push(o.kind().to_owned());
            }
        }
    }
    kinds
}

/// Objects by what generation does with them, and those it refuses.
fn sort(objects: Vec<Object>, exclude_kinds: &[String]) -> Result<(Collected, Vec<Object>)> {
    let mut c = Collected::default();
    let mut seen: HashSet<String> = HashSet::new();
    let mut rest = Vec::new();
    for o in objects {
        let key = serde_json::to_string(o.value()).unwrap_or_default();
        if !seen.insert(key) {
            continue;
        }
        match (o.group(), o.kind()) {
            ("operators.coreos.com", "ClusterServiceVersion") => c.csvs.push(o),
            (RBAC, "Role") => c.roles.push(o),
            (RBAC, "ClusterRole") => c.cluster_roles.push(o),
            (RBAC, "RoleBinding") => c.role_bindings.push(o),
            (RBAC, "ClusterRoleBinding") => c.cluster_role_bindings.push(o),
            ("apps", "Deployment") => c.deployments.push(o),
            ("", "ServiceAccount") => c.service_accounts.push(o),
            ("", "Service") => c.services.push(o),
            ("apiextensions.k8s.io", "CustomResourceDefinition") => c.crds.push(o),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
            ) => c.webhook_configs.push(o),
            ("scorecard.operatorframework.io", "Configuration") => {
                if let Some(first) = &c.scorecard {
                    return Err(o.error(
                        "",
                        format!(
                            "a second scorecard Configuration (the first is at {})",
                            first.origin()
                        ),
                    ));
                }
                c.scorecard = Some(o);
            }
            ("kustomize.config.k8s.io", _) => {}
            _ => rest.push(o),
        }
    }
    let served: HashSet<(String, String, String)> =
        c.crds.iter().flat_map(served_versions).collect();
    // Every refused object is reported at once: fixing them one run at a time is slow.
    let mut refused: Vec<Object> = Vec::new();
    for o in rest {
        let gvk = (
            o.group().to_owned(),
            o.version().to_owned(),
            o.kind().to_owned(),
        );
        if served.contains(&gvk) {
            c.custom_resources.push(o);
        } else if exclude_kinds.iter().any(|k| k == o.kind()) {
            c.excluded.push(o);
        } else if ALLOWED_KINDS.contains(&o.kind()) {
            c.others.push(o);
        } else {
            refused.push(o);
        }
    }
    Ok((c, refused))
}

/// At most this many refused objects (and kinds) are named in the error: a stream of a
/// million objects must not give a million-line message.
const MAX_REFUSED_LISTED: usize = 100;

/// The error for objects of kinds a bundle cannot hold: one line for one object, else one
/// line per object, each at its `file:line:col`, in input order.
fn refusal(refused: &[Object]) -> Error {
    let mut kinds: Vec<&str> = refused.iter().map(Object::kind).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let more_kinds = kinds.len().saturating_sub(MAX_REFUSED_LISTED);
    let mut kinds = kinds
        .iter()
        .take(MAX_REFUSED_LISTED)
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if more_kinds > 0 {
        kinds.push_str(&format!(" (and {more_kinds} more kinds)"));
    }
    if let [o] = refused {
        return Error::invalid(
            o.origin(),
            format!(
                "{} ({}) cannot be part of a registry+v1 bundle: OLM only installs {}. \
                 Drop it from the manifests or list {kinds} under excludeKinds",
                o.describe(),
                o.api_version(),
                allowed_list(),
            ),
        );
    }
    let mut message = format!(
        "{} objects cannot be part of a registry+v1 bundle: OLM only installs {}. Drop them \
         from the manifests or list {kinds} under excludeKinds:",
        refused.len(),
        allowed_list()
    );
    for o in refused.iter().take(MAX_REFUSED_LISTED) {
        message.push_str(&format!(
            "\n  {}: {} ({})",
            o.origin(),
            o.describe(),
            o.api_version()
        ));
    }
    if refused.len() > MAX_REFUSED_LISTED {
        message.push_str(&format!(
            "\n  … and {} more",
            refused.len() - MAX_REFUSED_LISTED
        ));
    }
    Error::Input(message)
}

fn allowed_list() -> String {
    let mut kinds: Vec<&str> = ALLOWED_KINDS.to_vec();
    kinds.push("Deployment (inside the CSV)");
    kinds.join(", ")
}

/// The parts of a Deployment that generation relies on.
fn check_deployment(d: &Object) -> Result<()> {
    let v = d.value();
    if d.name().is_empty() {
        return Err(d.error("/metadata", "has no metadata.name"));
    }
    let pod = &v["spec"]["template"]["spec"];
    if !pod.is_object() {
        return Err(d.error("/spec", "has no spec.template.spec (pod template)"));
    }
    match &pod["containers"] {
        Value::Array(cs) if !cs.is_empty() => {
            for (i, c) in cs.iter().enumerate() {
                if c["name"].as_str().is_none_or(str::is_empty) {
                    return Err(d.error(
                        &format!("/spec/template/spec/containers/{i}"),
                        "container has no name",
                    ));
                }
                if c["image"].as_str().is_none_or(str::is_empty) {
                    return Err(d.error(
                        &format!("/spec/template/spec/containers/{i}"),
                        format!(
                            "container {} has no image",
                            c["name"].as_str().unwrap_or_default()
                        ),
                    ));
                }
            }
            Ok(())
        }
        _ => Err(d.error(
            "/spec/template/spec/containers",
            "has no containers (spec.template.spec.containers is empty or missing)",
        )),
    }
}

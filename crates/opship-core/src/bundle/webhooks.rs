//! `spec.webhookdefinitions` of the CSV, from admission webhook configurations and CRD
//! conversion webhooks. OLM creates the webhook configurations itself and wires their
//! certificates, so the bundle carries only this description of them.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::manifest::Object;

fn service_port(services: &[Object], name: &str, port: i64) -> Option<(String, i64, Value)> {
    let svc = services.iter().find(|s| s.name() == name)?;
    let ports = svc.value()["spec"]["ports"].as_array()?;
    let p = ports
        .iter()
        .find(|p| p["port"].as_i64() == Some(port))
        .or_else(|| ports.first())?;
    let container_port = p["port"].as_i64().unwrap_or(port);
    let target = p
        .get("targetPort")
        .cloned()
        .unwrap_or_else(|| json!(container_port));
    let selector = svc.value()["spec"]["selector"].clone();
    Some((
        selector.to_string(),
        container_port,
        json!({"target": target, "selector": selector}),
    ))
}

/// The deployment whose pod labels include all of a selector's labels.
fn deployment_for(deployments: &[Object], selector: &Value) -> Option<String> {
    let sel = selector.as_object().filter(|m| !m.is_empty())?;
    deployments
        .iter()
        .find(|d| {
            let labels = &d.value()["spec"]["template"]["metadata"]["labels"];
            sel.iter().all(|(k, v)| &labels[k] == v)
        })
        .map(|d| d.name().to_owned())
}

fn service_ref(
    service: &Value,
    services: &[Object],
    deployments: &[Object],
) -> (String, i64, Value, Option<String>) {
    let name = service["name"].as_str().unwrap_or_default();
    let port = service["port"].as_i64().unwrap_or(443);
    let path = service["path"].as_str().map(str::to_owned);
    match service_port(services, name, port) {
        Some((_, container_port, extra)) => {
            let dep = deployment_for(deployments, &extra["selector"])
                .unwrap_or_else(|| name.trim_end_matches("-service").to_owned());
            (dep, container_port, extra["target"].clone(), path)
        }
        None => (
            name.trim_end_matches("-service").to_owned(),
            port,
            json!(port),
            path,
        ),
    }
}

/// Webhook definitions for the admission webhooks and conversion webhooks found in the
/// manifests, or `None` when there are none (the base CSV's list is then kept).
pub(crate) fn definitions(
    configs: &[Object],
    crds: &[Object],
    services: &[Object],
    deployments: &[Object],
) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    for cfg in configs {
        let kind = if cfg.kind() == "MutatingWebhookConfiguration" {
            "MutatingAdmissionWebhook"
        } else {
            "ValidatingAdmissionWebhook"
        };
        for w in cfg.value()["webhooks"].as_array().into_iter().flatten() {
            let (dep, container_port, target, path) =
                service_ref(&w["clientConfig"]["service"], services, deployments);
            let mut d = Map::new();
            d.insert("type".into(), json!(kind));
            d.insert("generateName".into(), w["name"].clone());
            d.insert("deploymentName".into(), json!(dep));
            d.insert("containerPort".into(), json!(container_port));
            d.insert("targetPort".into(), target);
            let sides = w.get("sideEffects").cloned().unwrap_or(json!("None"));
            d.insert("sideEffects".into(), sides);
            // Only fields the CSV's WebhookDescription (operator-framework/api) has: the API
            // server prunes any other (`namespaceSelector`, which OLM sets itself from the
            // OperatorGroup), so copying it would promise a setting that is lost on install.
            for key in [
                "failurePolicy",
                "matchPolicy",
                "objectSelector",
                "timeoutSeconds",
                "reinvocationPolicy",
                "rules",
            ] {
                if let Some(v) = w.get(key).filter(|v| !v.is_null()) {
                    d.insert(key.into(), v.clone());
                }
            }
            let arv = w
                .get("admissionReviewVersions")
                .cloned()
                .unwrap_or(json!(["v1beta1"]));
            d.insert("admissionReviewVersions".into(), arv);
            if let Some(p) = path {
                d.insert("webhookPath".into(), json!(p));
            }
            out.push(Value::Object(d));
        }
    }

    // Conversion webhooks: one definition per (service, port, path), listing its CRDs.
    let mut conv: BTreeMap<(String, i64, String), Vec<(String, Value)>> = BTreeMap::new();
    for crd in crds {
        let conversion = &crd.value()["spec"]["conversion"];
        if conversion["strategy"].as_str() != Some("Webhook") {
            continue;
        }
        let service = if crd.version() == "v1" {
            &conversion["webhook"]["clientConfig"]["service"]
        } else {
            &conversion["webhookClientConfig"]["service"]
        };
        let Some(name) = service["name"].as_str() else {
            continue;
        };
        if !services.iter().any(|s| s.name() == name) {
            continue;
        }
        let port = service["port"].as_i64().unwrap_or(443);
        let path = service["path"].as_str().unwrap_or_default().to_owned();
        let versions = conversion["webhook"]["conversionReviewVersions"].clone();
        conv.entry((name.to_owned(), port, path))
            .or_default()
            .push((crd.name().to_owned(), versions));
    }
    for ((svc, port, path), crd_names) in conv {
        let service = json!({"name": svc, "port": port, "path": path});
        let (dep, container_port, target, _) = service_ref(&service, services, deployments);
        let prefix: String = crd_names
            .iter()
            .map(|(n, _)| n.split('.').next().unwrap_or_default())
            .collect();
        let names: Vec<&String> = crd_names.iter().map(|(n, _)| n).collect();
        let review = crd_names
            .iter()
            .find_map(|(_, v)| v.as_array().cloned())
            .unwrap_or_else(|| vec![json!("v1")]);
        let mut d = Map::new();
        d.insert("type".into(), json!("ConversionWebhook"));
        d.insert("generateName".into(), json!(format!("c{prefix}.kb.io")));
        d.insert("deploymentName".into(), json!(dep));
        d.insert("containerPort".into(), json!(container_port));
        d.insert("targetPort".into(), target);
        d.insert("sideEffects".into(), json!("None"));
        d.insert("admissionReviewVersions".into(), Value::Array(review));
        d.insert("conversionCRDs".into(), json!(names));
        if !path.is_empty() {
            d.insert("webhookPath".into(), json!(path));
        }
        out.push(Value::Object(d));
    }
    if out.is_empty() {
        return None;
    }
    // operator-sdk sorts by generateName; the type breaks ties (a mutating and a validating
    // webhook may share a name) so the order never depends on the input's.
    out.sort_by(|a, b| {
        (a["generateName"].as_str(), a["type"].as_str())
            .cmp(&(b["generateName"].as_str(), b["type"].as_str()))
    });
    Some(out)
}

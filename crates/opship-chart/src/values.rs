//! The chart's values: defaults taken from the bundle (so that rendering with them gives the
//! bundle's own objects), the JSON schema that Helm checks every values file against, and the
//! per-environment values files from `opship.yaml`.

use opship_core::config::Environment;
use serde_json::{Map, Value, json};

use crate::model::split_image;

/// What the defaults are derived from: the manager deployment's pod and container.
#[derive(Debug)]
pub struct Inputs<'a> {
    /// Pod spec of the manager deployment.
    pub pod: &'a Value,
    /// The manager container.
    pub container: &'a Value,
    /// The manager deployment's replicas, when set.
    pub replicas: Option<Value>,
    /// The CSV has webhook definitions.
    pub webhooks: bool,
    /// The bundle has CRDs.
    pub crds: bool,
}

fn or_empty_map(v: &Value) -> Value {
    if v.is_object() { v.clone() } else { json!({}) }
}

fn or_empty_list(v: &Value) -> Value {
    if v.is_array() { v.clone() } else { json!([]) }
}

/// Default values. Every value equals what the bundle has, and an empty value means "not
/// set", which the templates render as the field being absent.
pub fn defaults(i: &Inputs<'_>) -> Value {
    let image = i.container["image"].as_str().unwrap_or_default();
    let (repository, tag, digest) = split_image(image);
    let mut v = json!({
        "image": {
            "repository": repository,
            "tag": tag,
            "digest": digest,
            "pullPolicy": i.container["imagePullPolicy"].as_str().unwrap_or(""),
        },
        "imagePullSecrets": or_empty_list(&i.pod["imagePullSecrets"]),
        "replicas": i.replicas.clone().filter(Value::is_u64).unwrap_or(json!(1)),
        "resources": or_empty_map(&i.container["resources"]),
        "nodeSelector": or_empty_map(&i.pod["nodeSelector"]),
        "tolerations": or_empty_list(&i.pod["tolerations"]),
        "affinity": or_empty_map(&i.pod["affinity"]),
        "podSecurityContext": or_empty_map(&i.pod["securityContext"]),
        "securityContext": or_empty_map(&i.container["securityContext"]),
        "serviceAccount": {"create": true, "annotations": {}},
        "rbac": {"create": true},
        "metrics": {
            "enabled": true,
            "serviceMonitor": {"enabled": false},
            "prometheusRule": {"enabled": false},
        },
    });
    if i.crds {
        v["crd"] = json!({"enabled": true, "keep": true});
    }
    if i.webhooks {
        v["webhook"] = json!({"enabled": true, "certManager": {"enabled": true}});
    }
    v
}

fn object(props: Value) -> Value {
    json!({"type": "object", "additionalProperties": false, "properties": props})
}

/// The JSON schema (draft-07, self-contained: no `$ref` that Helm would fetch) of the values.
/// Unknown keys are refused, so a misspelt key in a values file is an error, not a silent
/// no-op; the deployment-config keys take the shapes OLM v1's config schema gives them.
pub fn schema(values: &Value) -> Value {
    let free = json!({"type": "object"});
    let or_null = |mut s: Value| {
        let t = s["type"].clone();
        s["type"] = json!([t, "null"]);
        s
    };
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let list_of = |item: Value| json!({"type": "array", "items": item});
    let mut props = Map::new();
    props.insert(
        "watchNamespace".into(),
        // Commas pass, so that several namespaces get the chart's own refusal (MultiNamespace).
        json!({"type": ["string", "null"], "pattern": "^[a-z0-9,-]*$"}),
    );
    if values.get("certProvider").is_some() {
        props.insert(
            "certProvider".into(),
            json!({"type": "string", "enum": ["", "cert-manager", "openshift-serviceca"]}),
        );
    }
    props.insert(
        "image".into(),
        object(json!({
            "repository": {"type": "string", "minLength": 1},
            "tag": {"type": "string"},
            "digest": {"type": "string", "pattern": "^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})?$"},
        })),
    );
    props.insert(
        "replicas".into(),
        json!({"type": ["integer", "null"], "minimum": 0}),
    );
    props.insert("nodeSelector".into(), or_null(strings.clone()));
    props.insert("annotations".into(), or_null(strings.clone()));
    props.insert(
        "tolerations".into(),
        or_null(list_of(object(json!({
            "key": {"type": "string"},
            "operator": {"type": "string"},
            "value": {"type": "string"},
            "effect": {"type": "string"},
            "tolerationSeconds": {"type": "integer"},
        })))),
    );
    props.insert(
        "resources".into(),
        or_null(object(json!({
            "limits": {"type": "object"},
            "requests": {"type": "object"},
            "claims": {"type": "array"},
        }))),
    );
    let mut env = object(json!({
        "name": {"type": "string"},
        "value": {"type": "string"},
        "valueFrom": {"type": "object"},
    }));
    env["required"] = json!(["name"]);
    props.insert("env".into(), or_null(list_of(env)));
    props.insert(
        "envFrom".into(),
        or_null(list_of(object(json!({
            "prefix": {"type": "string"},
            "configMapRef": {"type": "object"},
            "secretRef": {"type": "object"},
        })))),
    );
    props.insert(
        "volumes".into(),
        or_null(list_of(json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}))),
    );
    let mut mount = object(json!({
        "name": {"type": "string"},
        "mountPath": {"type": "string"},
        "readOnly": {"type": "boolean"},
        "recursiveReadOnly": {"type": "string"},
        "subPath": {"type": "string"},
        "mountPropagation": {"type": "string"},
        "subPathExpr": {"type": "string"},
    }));
    mount["required"] = json!(["name", "mountPath"]);
    props.insert("volumeMounts".into(), or_null(list_of(mount)));
    props.insert(
        "affinity".into(),
        or_null(object(json!({
            "nodeAffinity": {"type": "object"},
            "podAffinity": {"type": "object"},
            "podAntiAffinity": {"type": "object"},
        }))),
    );
    if values.get("crd").is_some() {
        props.insert(
            "crd".into(),
            object(json!({"enabled": {"type": "boolean"}, "keep": {"type": "boolean"}})),
        );
    }
    // Helm passes `global` to every chart; it must be allowed even when unused.
    props.insert("global".into(), free);
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Values",
        "type": "object",
        "additionalProperties": false,
        "properties": props,
    })
}

/// `new` as a values override that replaces `default` instead of merging into it: Helm merges
/// maps of values files into the defaults, and deletes a key whose value is null, so every
/// default key the new map lacks is set to null.
fn replacing(default: &Value, new: &Value) -> Value {
    match (default, new) {
        (Value::Object(d), Value::Object(n)) => {
            let mut out = Map::new();
            for (k, v) in n {
                out.insert(
                    k.clone(),
                    match d.get(k) {
                        Some(dv) => replacing(dv, v),
                        None => v.clone(),
                    },
                );
            }
            for k in d.keys() {
                if !n.contains_key(k) {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(out)
        }
        _ => new.clone(),
    }
}

/// The values file of one environment: only what the environment sets. `{version}` in a tag
/// is the chart version. Resources replace the default ones as a whole (unset defaults are
/// nulled), as the environment's `resources` is a complete pod-spec resources block.
pub fn environment(env: &Environment, version: &str, defaults: &Value) -> Value {
    let mut v = Map::new();
    if let Some(tag) = &env.tag {
        v.insert(
            "image".into(),
            json!({"tag": tag.replace("{version}", version)}),
        );
    }
    if let Some(r) = env.replicas {
        v.insert("replicas".into(), json!(r));
    }
    if let Some(r) = &env.resources {
        v.insert("resources".into(), replacing(&defaults["resources"], r));
    }
    Value::Object(v)
}

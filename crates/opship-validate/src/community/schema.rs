//! The pipeline's JSON schemas of `ci.yaml` and `release-config.yaml`, and the few JSON Schema
//! keywords they use, with the messages Python's `jsonschema` gives for them.

use std::sync::LazyLock;

use serde_json::{Value, json};

use opship_core::naming::excerpt;

use super::py::{repr as py_repr, repr_str};

/// `repr()` of a value as a message quotes it: at most [`opship_core::naming::EXCERPT_BYTES`]
/// of it (a `ci.yaml` that is one long string must not be printed whole).
fn repr(v: &Value) -> String {
    excerpt(&py_repr(v)).into_owned()
}

static CI: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "updateGraph": {"type": "string", "enum": ["replaces-mode", "semver-mode"]},
            "reviewers": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "merge": {"type": "boolean"},
            "cert_project_id": {"type": "string"},
            "fbc": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "enabled": {"type": "boolean"},
                    "version_promotion_strategy": {
                        "type": "string",
                        "enum": ["review-needed", "always", "never"]
                    },
                    "catalog_mapping": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "template_name": {"type": "string"},
                                "catalog_names": {
                                    "uniqueItems": true,
                                    "type": "array",
                                    "items": {"type": "string"},
                                    "minItems": 1
                                },
                                "type": {
                                    "type": "string",
                                    "enum": ["olm.template.basic", "olm.semver"]
                                }
                            },
                            "required": ["template_name", "type", "catalog_names"]
                        }
                    }
                }
            }
        }
    })
});

static RELEASE_CONFIG: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "additionalProperties": false,
        "type": "object",
        "properties": {
            "merge": {"type": "boolean"},
            "catalog_templates": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "template_name": {"type": "string"},
                        "channels": {
                            "type": "array",
                            "items": {"type": "string"},
                            "minItems": 1,
                            "uniqueItems": true
                        },
                        "defaultChannel": {"type": "string"},
                        "replaces": {"type": "string"},
                        "skips": {
                            "type": "array",
                            "items": {"type": "string"},
                            "minItems": 1,
                            "uniqueItems": true
                        },
                        "skipRange": {"type": "string"}
                    },
                    "required": ["template_name", "channels"]
                },
                "minItems": 1,
                "uniqueItems": true
            }
        },
        "required": ["catalog_templates"]
    })
});

/// Why `ci.yaml` does not follow the pipeline's schema (Python jsonschema's messages).
pub fn ci_errors(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    validate(&CI, doc, &mut out);
    out.sort();
    out
}

/// Why `release-config.yaml` does not follow the pipeline's schema.
pub fn release_config_errors(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    validate(&RELEASE_CONFIG, doc, &mut out);
    out.sort();
    out
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        _ => false,
    }
}

fn validate(schema: &Value, v: &Value, out: &mut Vec<String>) {
    let Some(s) = schema.as_object() else { return };
    for (keyword, arg) in s {
        match keyword.as_str() {
            "type" => {
                let t = arg.as_str().unwrap_or_default();
                if !is_type(v, t) {
                    out.push(format!("{} is not of type {}", repr(v), repr_str(t)));
                }
            }
            "enum" if !arg.as_array().is_some_and(|a| a.contains(v)) => {
                out.push(format!("{} is not one of {}", repr(v), repr(arg)));
            }
            "required" => {
                if let Some(m) = v.as_object() {
                    for r in arg
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                    {
                        if !m.contains_key(r) {
                            out.push(format!("{} is a required property", repr_str(r)));
                        }
                    }
                }
            }
            "properties" => {
                if let (Some(m), Some(props)) = (v.as_object(), arg.as_object()) {
                    for (k, sub) in props {
                        if let Some(child) = m.get(k) {
                            validate(sub, child, out);
                        }
                    }
                }
            }
            "additionalProperties" => {
                if arg == &Value::Bool(false)
                    && let Some(m) = v.as_object()
                {
                    let props = s.get("properties").and_then(Value::as_object);
                    let mut extras: Vec<&String> = m
                        .keys()
                        .filter(|k| !props.is_some_and(|p| p.contains_key(*k)))
                        .collect();
                    extras.sort();
                    if !extras.is_empty() {
                        let verb = if extras.len() == 1 { "was" } else { "were" };
                        let names: Vec<String> = extras
                            .iter()
                            .map(|e| excerpt(&repr_str(e)).into_owned())
                            .collect();
                        out.push(format!(
                            "Additional properties are not allowed ({} {verb} unexpected)",
                            names.join(", ")
                        ));
                    }
                }
            }
            "items" => {
                if let Some(a) = v.as_array() {
                    for item in a {
                        validate(arg, item, out);
                    }
                }
            }
            "minItems" => {
                let min = arg.as_u64().unwrap_or_default() as usize;
                if let Some(a) = v.as_array()
                    && a.len() < min
                {
                    let what = if min == 1 {
                        "should be non-empty"
                    } else {
                        "is too short"
                    };
                    out.push(format!("{} {what}", repr(v)));
                }
            }
            "uniqueItems" => {
                if arg == &Value::Bool(true)
                    && let Some(a) = v.as_array()
                    && has_duplicates(a)
                {
                    out.push(format!("{} has non-unique elements", repr(v)));
                }
            }
            _ => {}
        }
    }
}

/// Whether two items of `a` are equal (as `Value`s: key order aside), in time linear in the
/// items' size: each item's text with its keys sorted, hashed.
fn has_duplicates(a: &[Value]) -> bool {
    let mut seen = std::collections::HashSet::with_capacity(a.len());
    a.iter()
        .any(|x| !seen.insert(opship_core::yaml::sorted(x).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_as_python_jsonschema_words_them() {
        assert_eq!(
            ci_errors(&json!({"updateGraph": "x"})),
            ["'x' is not one of ['replaces-mode', 'semver-mode']"]
        );
        assert_eq!(
            ci_errors(&json!({"reviewers": []})),
            ["[] should be non-empty"]
        );
        assert_eq!(
            ci_errors(&json!({"fbc": {"enabled": "yes", "foo": 1}})),
            [
                "'yes' is not of type 'boolean'",
                "Additional properties are not allowed ('foo' was unexpected)"
            ]
            .iter()
            .map(|s| s.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
        );
        assert_eq!(
            release_config_errors(&json!({})),
            ["'catalog_templates' is a required property"]
        );
        assert_eq!(
            release_config_errors(
                &json!({"catalog_templates": [{"template_name": "a", "channels": ["x", "x"]}]})
            ),
            ["['x', 'x'] has non-unique elements"]
        );
        assert!(ci_errors(&json!({"updateGraph": "semver-mode", "reviewers": ["a"]})).is_empty());
    }
}

//! `olm.csv.metadata`: the part of a ClusterServiceVersion that catalogs for OpenShift 4.17
//! and newer carry instead of the whole CSV, in the field order and omission rules of opm's
//! `property.CSVMetadata`.

use serde_json::{Map, Value};

/// The `olm.csv.metadata` value of a CSV.
pub fn csv_metadata(csv: &Value) -> Value {
    let mut m = Map::new();
    let spec = csv.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(Value::Object(a)) = csv.pointer("/metadata/annotations")
        && !a.is_empty()
    {
        m.insert(
            "annotations".into(),
            crate::gojson::sorted(&Value::Object(a.clone())),
        );
    }
    for (key, from) in [
        ("apiServiceDefinitions", "apiservicedefinitions"),
        ("crdDescriptions", "customresourcedefinitions"),
        ("description", "description"),
        ("displayName", "displayName"),
        ("installModes", "installModes"),
        ("keywords", "keywords"),
    ] {
        if let Some(v) = spec.get(from).filter(|v| !is_empty(v)) {
            m.insert(key.into(), v.clone());
        }
    }
    if let Some(Value::Object(l)) = csv.pointer("/metadata/labels")
        && !l.is_empty()
    {
        m.insert(
            "labels".into(),
            crate::gojson::sorted(&Value::Object(l.clone())),
        );
    }
    for key in [
        "links",
        "maintainers",
        "maturity",
        "minKubeVersion",
        "nativeAPIs",
    ] {
        if let Some(v) = spec.get(key).filter(|v| !is_empty(v)) {
            m.insert(key.into(), v.clone());
        }
    }
    m.insert(
        "provider".into(),
        spec.get("provider")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    );
    Value::Object(m)
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

//! `olm.csv.metadata`: the part of a ClusterServiceVersion that catalogs for OpenShift 4.17
//! and newer carry instead of the whole CSV. opm decodes the CSV into operator-framework/api's
//! Go types and encodes `property.CSVMetadata`; this module applies the same field order and
//! omission rules (`omitempty` fields dropped when empty, struct fields always present).

use serde_json::{Map, Value};

use crate::gojson;
use crate::model::field;

/// Field kinds of the Go structs involved.
#[derive(Clone, Copy)]
enum F {
    /// `string`, always written.
    Str,
    /// `string,omitempty`.
    StrOpt,
    /// `int32,omitempty`.
    IntOpt,
    /// `bool`, always written.
    Bool,
    /// `[]string,omitempty`.
    StrsOpt,
    /// `json.RawMessage,omitempty`: the value as it is.
    RawOpt,
    /// `[]T,omitempty` of a struct.
    ListOpt(&'static [(&'static str, F)]),
    /// A struct, always written (Go's omitempty never omits structs).
    Struct(&'static [(&'static str, F)]),
    /// `map[string]string,omitempty`, keys sorted.
    MapOpt,
}

const DESCRIPTOR: &[(&str, F)] = &[
    ("path", F::Str),
    ("displayName", F::StrOpt),
    ("description", F::StrOpt),
    ("x-descriptors", F::StrsOpt),
    ("value", F::RawOpt),
];
const RESOURCE: &[(&str, F)] = &[("name", F::Str), ("kind", F::Str), ("version", F::Str)];
const CRD_DESCRIPTION: &[(&str, F)] = &[
    ("name", F::Str),
    ("version", F::Str),
    ("kind", F::Str),
    ("displayName", F::StrOpt),
    ("description", F::StrOpt),
    ("resources", F::ListOpt(RESOURCE)),
    ("statusDescriptors", F::ListOpt(DESCRIPTOR)),
    ("specDescriptors", F::ListOpt(DESCRIPTOR)),
    ("actionDescriptors", F::ListOpt(DESCRIPTOR)),
];
const APISERVICE_DESCRIPTION: &[(&str, F)] = &[
    ("name", F::Str),
    ("group", F::Str),
    ("version", F::Str),
    ("kind", F::Str),
    ("deploymentName", F::StrOpt),
    ("containerPort", F::IntOpt),
    ("displayName", F::StrOpt),
    ("description", F::StrOpt),
    ("resources", F::ListOpt(RESOURCE)),
    ("statusDescriptors", F::ListOpt(DESCRIPTOR)),
    ("specDescriptors", F::ListOpt(DESCRIPTOR)),
    ("actionDescriptors", F::ListOpt(DESCRIPTOR)),
];
const CRDS: &[(&str, F)] = &[
    ("owned", F::ListOpt(CRD_DESCRIPTION)),
    ("required", F::ListOpt(CRD_DESCRIPTION)),
];
const APISERVICES: &[(&str, F)] = &[
    ("owned", F::ListOpt(APISERVICE_DESCRIPTION)),
    ("required", F::ListOpt(APISERVICE_DESCRIPTION)),
];
const INSTALL_MODE: &[(&str, F)] = &[("type", F::Str), ("supported", F::Bool)];
const APP_LINK: &[(&str, F)] = &[("name", F::StrOpt), ("url", F::StrOpt)];
const MAINTAINER: &[(&str, F)] = &[("name", F::StrOpt), ("email", F::StrOpt)];
const GVK: &[(&str, F)] = &[("group", F::Str), ("version", F::Str), ("kind", F::Str)];

/// Encodes `v` as the Go field kind `f`; `None` when an omitempty field is empty.
fn encode(v: Option<&Value>, f: F) -> Option<Value> {
    match f {
        F::Str => Some(Value::String(
            v.and_then(Value::as_str).unwrap_or_default().to_owned(),
        )),
        F::StrOpt => v
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| Value::String(s.to_owned())),
        F::IntOpt => v
            .and_then(Value::as_i64)
            .filter(|n| *n != 0)
            .map(Value::from),
        F::Bool => Some(Value::Bool(v.and_then(Value::as_bool).unwrap_or(false))),
        F::StrsOpt => match v {
            Some(Value::Array(a)) if !a.is_empty() => Some(Value::Array(
                a.iter()
                    .map(|s| Value::String(s.as_str().unwrap_or_default().to_owned()))
                    .collect(),
            )),
            _ => None,
        },
        // The raw value is the CSV's JSON as opm marshalled it: keys sorted.
        F::RawOpt => v.filter(|v| !v.is_null()).map(gojson::sorted),
        F::ListOpt(fields) => match v {
            Some(Value::Array(a)) if !a.is_empty() => Some(Value::Array(
                a.iter().map(|i| strukt(i.as_object(), fields)).collect(),
            )),
            _ => None,
        },
        F::Struct(fields) => Some(strukt(v.and_then(Value::as_object), fields)),
        F::MapOpt => match v {
            Some(Value::Object(m)) if !m.is_empty() => {
                Some(gojson::sorted(&Value::Object(m.clone())))
            }
            _ => None,
        },
    }
}

fn strukt(m: Option<&Map<String, Value>>, fields: &[(&str, F)]) -> Value {
    let mut out = Map::new();
    for (name, f) in fields {
        let v = m.and_then(|m| field(m, name));
        if let Some(e) = encode(v, *f) {
            out.insert((*name).to_owned(), e);
        }
    }
    Value::Object(out)
}

/// The `olm.csv.metadata` value of a CSV (fields in `property.CSVMetadata` order).
pub fn csv_metadata(csv: &Value) -> Value {
    let spec = csv.get("spec").and_then(Value::as_object);
    let meta = csv.get("metadata").and_then(Value::as_object);
    let from_spec = |k: &str| spec.and_then(|s| field(s, k));
    let mut m = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            m.insert(k.to_owned(), v);
        }
    };
    put(
        "annotations",
        encode(meta.and_then(|m| field(m, "annotations")), F::MapOpt),
    );
    put(
        "apiServiceDefinitions",
        encode(from_spec("apiservicedefinitions"), F::Struct(APISERVICES)),
    );
    put(
        "crdDescriptions",
        encode(from_spec("customresourcedefinitions"), F::Struct(CRDS)),
    );
    put("description", encode(from_spec("description"), F::StrOpt));
    put("displayName", encode(from_spec("displayName"), F::StrOpt));
    put(
        "installModes",
        encode(from_spec("installModes"), F::ListOpt(INSTALL_MODE)),
    );
    put("keywords", encode(from_spec("keywords"), F::StrsOpt));
    put(
        "labels",
        encode(meta.and_then(|m| field(m, "labels")), F::MapOpt),
    );
    put("links", encode(from_spec("links"), F::ListOpt(APP_LINK)));
    put(
        "maintainers",
        encode(from_spec("maintainers"), F::ListOpt(MAINTAINER)),
    );
    put("maturity", encode(from_spec("maturity"), F::StrOpt));
    put(
        "minKubeVersion",
        encode(from_spec("minKubeVersion"), F::StrOpt),
    );
    put(
        "nativeAPIs",
        encode(from_spec("nativeAPIs"), F::ListOpt(GVK)),
    );
    put(
        "provider",
        encode(from_spec("provider"), F::Struct(APP_LINK)),
    );
    Value::Object(m)
}

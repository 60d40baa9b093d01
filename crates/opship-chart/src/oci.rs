//! What a chart looks like as an OCI artifact (the bytes only; pushing is opship-oci's): the
//! config blob is the Chart.yaml metadata as JSON, and the manifest carries the
//! `org.opencontainers.image.*` annotations Helm derives from it.

use std::collections::BTreeMap;

use serde_json::Value;

/// The config blob: Chart.yaml as compact JSON, keys sorted.
pub fn config(meta: &Value) -> Vec<u8> {
    serde_json::to_vec(&opship_core::yaml::sorted(meta)).unwrap_or_default()
}

/// Manifest annotations as `helm push` writes them: title, version, description, url (home),
/// source (first source), authors, created (`created` is given, so the manifest does not
/// depend on the archive's file time), plus the chart's own annotations.
pub fn annotations(meta: &Value, created: Option<&str>) -> BTreeMap<String, String> {
    let mut a: BTreeMap<String, String> = meta["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect();
    let s = |k: &str| meta[k].as_str().filter(|s| !s.is_empty());
    let mut set = |k: &str, v: Option<&str>| {
        if let Some(v) = v {
            a.insert(format!("org.opencontainers.image.{k}"), v.to_owned());
        }
    };
    set("title", s("name"));
    set("version", s("version"));
    set("description", s("description"));
    set("url", s("home"));
    set("source", meta["sources"][0].as_str());
    let authors: Vec<String> = meta["maintainers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let name = m["name"].as_str()?;
            Some(match m["email"].as_str() {
                Some(e) => format!("{name} ({e})"),
                None => name.to_owned(),
            })
        })
        .collect();
    if !authors.is_empty() {
        set("authors", Some(&authors.join(", ")));
    }
    set("created", created);
    a
}

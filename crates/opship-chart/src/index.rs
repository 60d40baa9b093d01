//! A chart repository's `index.yaml` for the packaged charts in a directory, as
//! `helm repo index` writes it, but deterministic: `created` of a new entry and `generated`
//! come from `SOURCE_DATE_EPOCH` (not the clock), and entries of an existing index whose
//! archive has not changed keep their `created`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::package::{self, chart_metadata, sha256};

/// How to build the index.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Base URL the archives are served from; without it, `urls` holds the bare file name.
    pub url: Option<String>,
    /// RFC 3339 time for `generated` and for the `created` of new entries.
    pub created: String,
    /// An existing index to merge: its entries for charts not in the directory are kept, and
    /// unchanged entries keep their `created`.
    pub merge: Option<Value>,
}

/// One archive's index entry: every Chart.yaml field, plus `created`, `digest` (hex, no
/// prefix) and `urls`.
pub fn entry(bytes: &[u8], file_name: &str, origin: &Path, opts: &Options) -> Result<Value> {
    let files = package::unpack(bytes, origin)?;
    let text = std::str::from_utf8(&files["Chart.yaml"])
        .map_err(|_| Error::invalid(origin, "Chart.yaml is not UTF-8"))?;
    let meta = chart_metadata(text, &origin.join("Chart.yaml"))?;
    let mut e: Map<String, Value> = meta.as_object().cloned().unwrap_or_default();
    let digest = sha256(bytes);
    e.insert("digest".into(), json!(digest.trim_start_matches("sha256:")));
    let url = match &opts.url {
        Some(base) => format!("{}/{file_name}", base.trim_end_matches('/')),
        None => file_name.to_owned(),
    };
    e.insert("urls".into(), json!([url]));
    e.insert("created".into(), json!(opts.created));
    Ok(Value::Object(e))
}

fn version_of(e: &Value) -> semver::Version {
    semver::Version::parse(e["version"].as_str().unwrap_or_default())
        .unwrap_or_else(|_| semver::Version::new(0, 0, 0))
}

/// Builds the index of every `*.tgz` in `dir` (sorted by file name).
pub fn build(dir: &Path, opts: &Options) -> Result<Value> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tgz"))
        .collect();
    names.sort();
    let old: BTreeMap<(String, String), Value> = opts
        .merge
        .as_ref()
        .and_then(|m| m["entries"].as_object())
        .into_iter()
        .flatten()
        .flat_map(|(name, list)| {
            list.as_array().into_iter().flatten().map(move |e| {
                (
                    (name.clone(), e["version"].as_str().unwrap_or("").to_owned()),
                    e.clone(),
                )
            })
        })
        .collect();
    let mut entries: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut seen = BTreeMap::new();
    for n in &names {
        let path = dir.join(n);
        let bytes = opship_core::input::read(&path, opship_core::input::Kind::Blob)?;
        let mut e = entry(&bytes, n, &path, opts)?;
        let name = e["name"].as_str().unwrap_or_default().to_owned();
        let version = e["version"].as_str().unwrap_or_default().to_owned();
        if let Some(first) = seen.insert((name.clone(), version.clone()), n.clone()) {
            return Err(Error::invalid(
                &path,
                format!("{name} {version} is also packaged in {first}"),
            ));
        }
        if let Some(prev) = old.get(&(name.clone(), version.clone()))
            && prev["digest"] == e["digest"]
            && let Some(c) = prev.get("created")
        {
            e["created"] = c.clone();
        }
        entries.entry(name).or_default().push(e);
    }
    for ((name, version), e) in old {
        if !seen.contains_key(&(name.clone(), version)) {
            entries.entry(name).or_default().push(e);
        }
    }
    for list in entries.values_mut() {
        // Newest first, as Helm sorts them.
        list.sort_by(|a, b| version_of(b).cmp_precedence(&version_of(a)));
    }
    Ok(json!({
        "apiVersion": "v1",
        "entries": entries,
        "generated": opts.created,
    }))
}

//! A registry+v1 bundle as read from a directory: the CSV, every other object of
//! `manifests/`, and the package name from `metadata/annotations.yaml`.

use std::path::{Path, PathBuf};

use opship_core::input::{self, Kind};
use opship_core::manifest::Object;
use opship_core::yaml;

use crate::error::{Error, Result};

/// A registry+v1 bundle read from disk: the CSV, every other object, the package name.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The bundle directory.
    pub dir: PathBuf,
    /// The ClusterServiceVersion.
    pub csv: Object,
    /// Every other object of `manifests/`, in file-name order.
    pub objects: Vec<Object>,
    /// `operators.operatorframework.io.bundle.package.v1` from `metadata/annotations.yaml`.
    pub package: Option<String>,
    /// The `properties` of `metadata/properties.yaml`, when the file exists: OLM v1 copies them
    /// into the CSV's `olm.properties` annotation, which reaches the pod template.
    pub properties: Option<Vec<serde_json::Value>>,
}

/// Reads `manifests/` (and the package name from `metadata/`) of a bundle directory. Syntax
/// errors name the file and line; a bundle without exactly one CSV is refused. Files are read
/// through `opship_core::input`: regular files within its size budget, symlinks only to
/// files inside the bundle, so a FIFO or `/dev/zero` in a bundle is an error, not a hang.
pub fn load(dir: &Path) -> Result<Bundle> {
    let manifests = dir.join("manifests");
    let entries =
        std::fs::read_dir(&manifests).map_err(|e| opship_core::Error::io(&manifests, e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| opship_core::Error::io(&manifests, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        // Hidden files, among them the temporaries of interrupted opship runs.
        if name.starts_with('.') {
            continue;
        }
        if ![".yaml", ".yml", ".json"].iter().any(|s| name.ends_with(s)) {
            continue;
        }
        // Through symlinks: a directory (or a link to one) is not a manifest; anything else
        // named like one is read, and refused by `input` when it is not a regular file.
        if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        files.push(path);
    }
    files.sort();
    let mut csv = None;
    let mut objects = Vec::new();
    for path in files {
        let text = input::read_string_in_tree(dir, &path, Kind::Manifest)?;
        for doc in yaml::parse_stream(&text, &path)? {
            let obj = Object::from_document(doc)?;
            if obj.kind() == "ClusterServiceVersion" {
                if csv.is_some() {
                    return Err(Error::bundle(&path, "a second ClusterServiceVersion"));
                }
                csv = Some(obj);
            } else {
                objects.push(obj);
            }
        }
    }
    let csv = csv.ok_or_else(|| Error::bundle(&manifests, "no ClusterServiceVersion"))?;
    let annotations = dir.join("metadata").join("annotations.yaml");
    let package = if std::fs::symlink_metadata(&annotations).is_ok() {
        let text = input::read_string_in_tree(dir, &annotations, Kind::Manifest)?;
        let doc = yaml::parse_one(&text, &annotations)?;
        doc.value["annotations"]["operators.operatorframework.io.bundle.package.v1"]
            .as_str()
            .map(str::to_owned)
    } else {
        None
    };
    let properties_file = dir.join("metadata").join("properties.yaml");
    let properties = if std::fs::symlink_metadata(&properties_file).is_ok() {
        let text = input::read_string_in_tree(dir, &properties_file, Kind::Manifest)?;
        if text.trim().is_empty() {
            None
        } else {
            let doc = yaml::parse_one(&text, &properties_file)?;
            match &doc.value["properties"] {
                serde_json::Value::Array(list) => Some(list.clone()),
                serde_json::Value::Null => Some(Vec::new()),
                _ => {
                    return Err(Error::bundle(
                        &properties_file,
                        "`properties` must be a list of {type, value}",
                    ));
                }
            }
        }
    } else {
        None
    };
    Ok(Bundle {
        dir: dir.to_path_buf(),
        csv,
        objects,
        package,
        properties,
    })
}

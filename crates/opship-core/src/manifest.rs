//! Kubernetes objects as opship reads them: a YAML document that has `apiVersion`, `kind` and
//! `metadata.name`, plus where it came from. Loading from a kustomize stream, a file, stdin or a
//! directory tree all end here.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::yaml::{self, Document, Origin};

/// One Kubernetes object and its source.
#[derive(Debug, Clone)]
pub struct Object {
    /// The document; `doc.value` is always a mapping with string `apiVersion` and `kind`.
    pub doc: Document,
}

impl Object {
    /// Checks that a document is a Kubernetes object.
    pub fn from_document(doc: Document) -> Result<Object> {
        let Value::Object(map) = &doc.value else {
            return Err(Error::invalid(
                doc.origin(""),
                "expected a Kubernetes object (a mapping with apiVersion and kind)",
            ));
        };
        for field in ["apiVersion", "kind"] {
            match map.get(field) {
                Some(Value::String(s)) if !s.is_empty() => {}
                Some(_) => {
                    return Err(Error::invalid(
                        doc.origin(&format!("/{field}")),
                        format!("`{field}` must be a non-empty string"),
                    ));
                }
                None => {
                    return Err(Error::invalid(
                        doc.origin(""),
                        format!("object has no `{field}`"),
                    ));
                }
            }
        }
        Ok(Object { doc })
    }

    /// Wraps generated content.
    pub fn generated(value: Value, file: &Path) -> Object {
        Object {
            doc: Document::detached(value, file),
        }
    }

    /// The content.
    pub fn value(&self) -> &Value {
        &self.doc.value
    }

    /// The content, mutable.
    pub fn value_mut(&mut self) -> &mut Value {
        &mut self.doc.value
    }

    /// `apiVersion`.
    pub fn api_version(&self) -> &str {
        self.doc.value["apiVersion"].as_str().unwrap_or_default()
    }

    /// `kind`.
    pub fn kind(&self) -> &str {
        self.doc.value["kind"].as_str().unwrap_or_default()
    }

    /// API group (empty for the core group).
    pub fn group(&self) -> &str {
        split_api_version(self.api_version()).0
    }

    /// API version without the group.
    pub fn version(&self) -> &str {
        split_api_version(self.api_version()).1
    }

    /// `metadata.name` (empty when absent).
    pub fn name(&self) -> &str {
        self.doc.value["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> Option<&str> {
        self.doc.value["metadata"]["namespace"].as_str()
    }

    /// Where the object starts.
    pub fn origin(&self) -> Origin {
        self.doc.origin("")
    }

    /// Where the node at a JSON pointer inside the object starts.
    pub fn origin_of(&self, pointer: &str) -> Origin {
        self.doc.origin(pointer)
    }

    /// `Kind name`, as messages name an object.
    pub fn describe(&self) -> String {
        if self.name().is_empty() {
            self.kind().to_owned()
        } else {
            format!("{} {}", self.kind(), self.name())
        }
    }

    /// An error about the node at `pointer`.
    pub fn error(&self, pointer: &str, message: impl Into<String>) -> Error {
        Error::invalid(
            self.origin_of(pointer),
            format!("{}: {}", self.describe(), message.into()),
        )
    }
}

/// Splits `group/version` (the core group has no slash).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Objects from a YAML stream. `kind: List` wrappers (what `kubectl get -o yaml` prints) are
/// unwrapped into their items.
pub fn parse_objects(text: &str, file: &Path) -> Result<Vec<Object>> {
    let mut out = Vec::new();
    for doc in yaml::parse_stream(text, file)? {
        let is_list = doc.value["kind"]
            .as_str()
            .is_some_and(|k| k.ends_with("List"))
            && doc.value["items"].is_array();
        if is_list {
            let n = doc.value["items"].as_array().map_or(0, Vec::len);
            for i in 0..n {
                if let Some(item) = doc.child(&format!("/items/{i}")) {
                    out.push(Object::from_document(item)?);
                }
            }
        } else {
            out.push(Object::from_document(doc)?);
        }
    }
    Ok(out)
}

/// Where manifests are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Standard input (a kustomize stream piped in).
    Stdin,
    /// A file holding a stream, or a directory tree of manifest files.
    Path(PathBuf),
}

impl Source {
    /// `-` means standard input.
    pub fn from_arg(arg: &Path) -> Source {
        if arg == Path::new("-") {
            Source::Stdin
        } else {
            Source::Path(arg.to_path_buf())
        }
    }
}

/// Loads every object from a source, building a directory that is a kustomization root with
/// kustomize (see [`crate::kustomize`]); `placeholder` is the operator image's placeholder,
/// which the build then keeps in place of any image the kustomizations map it to; `edits`
/// (directories absolute) are the `kustomize edit` commands run before the build, on a copy;
/// `envsubst`, the variables the build is piped through `envsubst` with.
pub fn load_with(
    source: &Source,
    placeholder: Option<&str>,
    edits: &[crate::config::KustomizeEdit],
    envsubst: Option<&std::collections::BTreeMap<String, String>>,
) -> Result<Vec<Object>> {
    if let Source::Path(p) = source
        && p.is_dir()
    {
        crate::kustomize::check_kustomization_file(p)?;
        if crate::kustomize::kustomization_file(p).is_some() {
            return crate::kustomize::build(p, placeholder, edits, envsubst);
        }
    }
    load(source)
}

/// Loads every object from a source, as files. Directories are walked recursively in sorted
/// path order (so the result does not depend on the file system), reading `*.yaml`, `*.yml`
/// and `*.json` and skipping `kustomization.yaml` and hidden entries.
pub fn load(source: &Source) -> Result<Vec<Object>> {
    match source {
        Source::Stdin => {
            let bytes = crate::input::read_stdin(crate::input::Kind::Manifest)?;
            let text = String::from_utf8(bytes)
                .map_err(|_| Error::Input("<stdin>: the manifests are not UTF-8 text".into()))?;
            parse_objects(&text, Path::new("<stdin>"))
        }
        Source::Path(p) => {
            let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
            if meta.is_dir() {
                crate::kustomize::check_kustomization_file(p)?;
                let mut files = Vec::new();
                walk(p, p, &mut files)?;
                files.sort();
                let mut out = Vec::new();
                for f in files {
                    let text = yaml::read_text(&f)?;
                    out.extend(parse_objects(&text, &f)?);
                }
                Ok(out)
            } else {
                let text = yaml::read_text(p)?;
                parse_objects(&text, p)
            }
        }
    }
}

/// The manifest files under `dir` (a tree rooted at `root`): regular files, or links to regular
/// files inside the tree; a FIFO, a device or a link out of the tree is an error, not a hang or
/// a read of something else.
fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let mut ft = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if ft.is_symlink() {
            crate::input::check_in_tree(root, &path)?;
            ft = std::fs::metadata(&path)
                .map_err(|e| Error::io(&path, e))?
                .file_type();
            if ft.is_dir() {
                return Err(Error::Input(format!(
                    "{}: a symbolic link to a directory; manifests are read without following those",
                    crate::paths::show(&path)
                )));
            }
        }
        if ft.is_dir() {
            crate::kustomize::check_kustomization_file(&path)?;
            walk(root, &path, out)?;
        } else if matches!(
            name.as_ref(),
            "kustomization.yaml" | "kustomization.yml" | "Kustomization"
        ) {
            continue;
        } else if name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json") {
            crate::input::check(&path, crate::input::Kind::Manifest)?;
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_need_kind() {
        let err = parse_objects(
            "apiVersion: v1\nmetadata:\n  name: x\n",
            Path::new("a.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("a.yaml:1:1") && err.contains("kind"), "{err}");
    }

    #[test]
    fn lists_are_unwrapped() {
        let objs = parse_objects(
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n",
            Path::new("l.yaml"),
        )
        .unwrap();
        assert_eq!(objs.len(), 1);
        assert_eq!(objs[0].describe(), "ConfigMap a");
    }

    #[test]
    fn api_version_split() {
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(
            split_api_version("rbac.authorization.k8s.io/v1"),
            ("rbac.authorization.k8s.io", "v1")
        );
    }
}

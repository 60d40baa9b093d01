//! `metadata/annotations.yaml` and `bundle.Dockerfile`: the same key/values twice, once for
//! tools that read the directory and once as labels of the bundle image.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::yaml;

/// Annotation keys of the bundle format.
pub mod keys {
    /// `registry+v1`.
    pub const MEDIATYPE: &str = "operators.operatorframework.io.bundle.mediatype.v1";
    /// `manifests/`.
    pub const MANIFESTS: &str = "operators.operatorframework.io.bundle.manifests.v1";
    /// `metadata/`.
    pub const METADATA: &str = "operators.operatorframework.io.bundle.metadata.v1";
    /// The package name.
    pub const PACKAGE: &str = "operators.operatorframework.io.bundle.package.v1";
    /// Comma-separated channels.
    pub const CHANNELS: &str = "operators.operatorframework.io.bundle.channels.v1";
    /// The default channel.
    pub const DEFAULT_CHANNEL: &str = "operators.operatorframework.io.bundle.channel.default.v1";
    /// `scorecard+v1`.
    pub const TEST_MEDIATYPE: &str = "operators.operatorframework.io.test.mediatype.v1";
    /// `tests/scorecard/`.
    pub const TEST_CONFIG: &str = "operators.operatorframework.io.test.config.v1";
}

/// What the metadata says about a bundle.
#[derive(Debug, Clone)]
pub struct Metadata {
    /// Package name.
    pub package: String,
    /// Channels (non-empty).
    pub channels: Vec<String>,
    /// Default channel.
    pub default_channel: Option<String>,
    /// Whether the bundle has `tests/scorecard/`.
    pub scorecard: bool,
    /// Extra labels from the config.
    pub labels: BTreeMap<String, String>,
}

impl Metadata {
    /// The annotations in the order they are written: the format's keys, then the extra labels
    /// sorted by key.
    pub fn annotations(&self) -> Result<Vec<(String, String)>> {
        let mut out: Vec<(String, String)> = vec![
            (keys::MEDIATYPE.into(), "registry+v1".into()),
            (keys::MANIFESTS.into(), "manifests/".into()),
            (keys::METADATA.into(), "metadata/".into()),
            (keys::PACKAGE.into(), self.package.clone()),
            (keys::CHANNELS.into(), self.channels.join(",")),
        ];
        if let Some(d) = &self.default_channel {
            out.push((keys::DEFAULT_CHANNEL.into(), d.clone()));
        }
        if self.scorecard {
            out.push((keys::TEST_MEDIATYPE.into(), "scorecard+v1".into()));
            out.push((keys::TEST_CONFIG.into(), "tests/scorecard/".into()));
        }
        for (k, v) in &self.labels {
            if out.iter().any(|(ok, _)| ok == k) {
                return Err(Error::Input(format!(
                    "label `{k}` in the config would override the bundle format's own annotation"
                )));
            }
            if k.is_empty() || k.chars().any(|c| c.is_whitespace() || c == '=') {
                return Err(Error::Input(format!(
                    "label key `{k}` is not a valid label name"
                )));
            }
            out.push((k.clone(), v.clone()));
        }
        Ok(out)
    }

    /// `metadata/annotations.yaml`.
    pub fn annotations_yaml(&self) -> Result<String> {
        let mut m = Map::new();
        for (k, v) in self.annotations()? {
            m.insert(k, Value::String(v));
        }
        let mut root = Map::new();
        root.insert("annotations".into(), Value::Object(m));
        yaml::to_string(&Value::Object(root))
    }

    /// `bundle.Dockerfile`, with paths relative to the bundle directory (the build context).
    pub fn dockerfile(&self) -> Result<String> {
        let mut s = String::from(
            "FROM scratch\n\n# Bundle labels, the same as metadata/annotations.yaml.\n",
        );
        for (k, v) in self.annotations()? {
            s.push_str(&format!("LABEL {k}={}\n", dockerfile_value(&v)));
        }
        s.push_str("\n# Copy files to locations specified by labels.\n");
        s.push_str("COPY manifests /manifests/\nCOPY metadata /metadata/\n");
        if self.scorecard {
            s.push_str("COPY tests/scorecard /tests/scorecard/\n");
        }
        Ok(s)
    }
}

/// A LABEL value: bare when it is one plain word, else a JSON-quoted string (which Docker's
/// parser reads the same way).
fn dockerfile_value(v: &str) -> String {
    let plain = !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._/:,+@".contains(c));
    if plain {
        v.to_owned()
    } else {
        serde_json::to_string(v).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_match_annotations() {
        let m = Metadata {
            package: "p".into(),
            channels: vec!["stable".into(), "fast".into()],
            default_channel: Some("stable".into()),
            scorecard: true,
            labels: BTreeMap::from([(
                "com.redhat.openshift.versions".into(),
                "v4.14 v4.15".into(),
            )]),
        };
        let df = m.dockerfile().unwrap();
        assert!(
            df.contains("LABEL operators.operatorframework.io.bundle.channels.v1=stable,fast\n")
        );
        assert!(df.contains("LABEL com.redhat.openshift.versions=\"v4.14 v4.15\"\n"));
        let a = m.annotations_yaml().unwrap();
        assert!(
            a.contains("com.redhat.openshift.versions: v4.14 v4.15"),
            "{a}"
        );
    }

    #[test]
    fn core_keys_cannot_be_overridden() {
        let m = Metadata {
            package: "p".into(),
            channels: vec!["a".into()],
            default_channel: None,
            scorecard: false,
            labels: BTreeMap::from([(keys::PACKAGE.into(), "x".into())]),
        };
        assert!(m.annotations().is_err());
    }
}

//! The SLSA v1 provenance predicate (`https://slsa.dev/provenance/v1`) opship attaches to what
//! it builds: what was built (name and digest), from which source commit and input files (each
//! with its digest), by which opship version. Deterministic: the same inputs give the same
//! bytes — inputs and parameters are sorted, and there is no time in it unless given
//! (`SOURCE_DATE_EPOCH`, [`Provenance::with_source_date_epoch`]).

use std::collections::BTreeMap;
use std::path::Path;

use opship_core::image::oci::Digest;
use serde_json::json;

use super::attestation::Predicate;
use crate::error::Result;

/// The predicate type URI of SLSA provenance v1.
pub const PREDICATE_TYPE: &str = "https://slsa.dev/provenance/v1";
/// `buildDefinition.buildType` of opship's builds.
pub const BUILD_TYPE: &str = "https://github.com/opship/opship/buildtypes/release/v1";
/// `runDetails.builder.id` (the version is in `builder.version.opship`).
pub const BUILDER_ID: &str = "https://github.com/opship/opship";

/// A built artifact or an input: a name and its sha256.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Resource {
    /// Name: the image reference, or the input's path relative to the project.
    pub name: String,
    /// sha256 digest.
    pub digest: Digest,
}

impl Resource {
    /// An input file: `name` (as recorded) and the sha256 of the file at `path`.
    pub fn file(name: &str, path: &Path) -> Result<Self> {
        let bytes = opship_core::input::read(path, opship_core::input::Kind::Blob)?;
        Ok(Resource {
            name: name.to_owned(),
            digest: Digest::of(&bytes),
        })
    }
}

/// The source a build came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Repository URI (`git+https://github.com/example/op`), as the project names it.
    pub uri: String,
    /// The commit (hex).
    pub commit: String,
}

/// Everything the predicate says.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    /// What was built.
    pub artifacts: Vec<Resource>,
    /// The source commit, if known.
    pub source: Option<Source>,
    /// The input files (sorted on output).
    pub inputs: Vec<Resource>,
    /// Build parameters (`version`, `channel`, …).
    pub parameters: BTreeMap<String, String>,
    /// opship's version.
    pub builder_version: String,
    /// Start and finish of the build, seconds since the epoch; omitted when `None`.
    pub started_on: Option<u64>,
    /// Finish time; omitted when `None`.
    pub finished_on: Option<u64>,
}

impl Provenance {
    /// Sets both times from `SOURCE_DATE_EPOCH` when it is set to a number.
    pub fn with_source_date_epoch(mut self) -> Self {
        if let Some(t) = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            self.started_on = Some(t);
            self.finished_on = Some(t);
        }
        self
    }

    /// The predicate JSON value.
    pub fn to_value(&self) -> serde_json::Value {
        let mut artifacts = self.artifacts.clone();
        artifacts.sort();
        artifacts.dedup();
        let mut inputs = self.inputs.clone();
        inputs.sort();
        inputs.dedup();
        let mut external = serde_json::Map::new();
        external.insert(
            "artifacts".into(),
            json!(
                artifacts
                    .iter()
                    .map(|a| json!({"name": a.name, "digest": {"sha256": a.digest.hex()}}))
                    .collect::<Vec<_>>()
            ),
        );
        if let Some(s) = &self.source {
            external.insert(
                "source".into(),
                json!({"uri": s.uri, "digest": {"gitCommit": s.commit}}),
            );
        }
        if !self.parameters.is_empty() {
            external.insert("parameters".into(), json!(self.parameters));
        }
        let mut deps: Vec<serde_json::Value> = Vec::new();
        if let Some(s) = &self.source {
            deps.push(json!({"uri": format!("{}@{}", s.uri, s.commit), "digest": {"gitCommit": s.commit}}));
        }
        deps.extend(
            inputs
                .iter()
                .map(|i| json!({"name": i.name, "digest": {"sha256": i.digest.hex()}})),
        );
        let mut run = json!({
            "builder": {"id": BUILDER_ID, "version": {"opship": self.builder_version}},
        });
        let mut metadata = serde_json::Map::new();
        if let Some(t) = self.started_on {
            metadata.insert(
                "startedOn".into(),
                json!(opship_core::image::oci::rfc3339(t)),
            );
        }
        if let Some(t) = self.finished_on {
            metadata.insert(
                "finishedOn".into(),
                json!(opship_core::image::oci::rfc3339(t)),
            );
        }
        if !metadata.is_empty() {
            run["metadata"] = serde_json::Value::Object(metadata);
        }
        json!({
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": external,
                "resolvedDependencies": deps,
            },
            "runDetails": run,
        })
    }

    /// The predicate, ready for [`super::attestation::attest`].
    pub fn predicate(&self) -> Predicate {
        Predicate::from_value(PREDICATE_TYPE.to_owned(), &self.to_value())
    }

    /// The predicate bytes (what [`super::attestation::AttestReport::predicate_digest`] hashes).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_value()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(order: bool) -> Provenance {
        let mut inputs = vec![
            Resource {
                name: "opship.yaml".into(),
                digest: Digest::of(b"cfg"),
            },
            Resource {
                name: "bundle/manifests/x.csv.yaml".into(),
                digest: Digest::of(b"csv"),
            },
        ];
        if order {
            inputs.reverse();
        }
        let mut parameters = BTreeMap::new();
        parameters.insert("version".into(), "0.3.0".into());
        Provenance {
            artifacts: vec![Resource {
                name: "quay.io/example/bundle:v0.3.0".into(),
                digest: Digest::of(b"image"),
            }],
            source: Some(Source {
                uri: "git+https://github.com/example/op".into(),
                commit: "0123456789abcdef0123456789abcdef01234567".into(),
            }),
            inputs,
            parameters,
            builder_version: "0.9.0".into(),
            started_on: None,
            finished_on: None,
        }
    }

    #[test]
    fn same_inputs_same_bytes() {
        let a = sample(false).to_bytes();
        assert_eq!(a, sample(true).to_bytes());
        assert_eq!(Digest::of(&a), Digest::of(&sample(false).to_bytes()));
        let s = String::from_utf8(a).unwrap();
        assert!(!s.contains("startedOn"), "{s}");
        assert!(s.starts_with(r#"{"buildDefinition":{"buildType":"https://github.com/opship/opship/buildtypes/release/v1","externalParameters":{"artifacts":[{"name":"quay.io/example/bundle:v0.3.0""#), "{s}");
        assert!(s.contains(r#"{"name":"bundle/manifests/x.csv.yaml","digest""#));
        let mut timed = sample(false);
        timed.started_on = Some(0);
        assert!(
            String::from_utf8(timed.to_bytes())
                .unwrap()
                .contains(r#""startedOn":"1970-01-01T00:00:00Z""#)
        );
        let mut other = sample(false);
        other.source.as_mut().unwrap().commit = "f".repeat(40);
        assert_ne!(other.to_bytes(), sample(false).to_bytes());
        assert_eq!(sample(false).predicate().type_uri, PREDICATE_TYPE);
    }
}

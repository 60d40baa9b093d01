//! The bundle options of one version of a project: `opship.yaml` (the version's `releases:`
//! entry over the project-wide settings) with a command's own settings over both. `generate
//! bundle` (its flags) and `release` (none) generate with these.

use std::collections::BTreeMap;

use super::{Options, parse_version, rfc3339_from_epoch};
use crate::config::{OperatorImage, Project};
use crate::error::Result;

/// Settings given over the project's (`generate bundle`'s flags); the default is none.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Channels, over the release's and the project's.
    pub channels: Option<Vec<String>>,
    /// The default channel; `Some("")` is "no default channel".
    pub default_channel: Option<String>,
    /// `spec.replaces`.
    pub replaces: Option<String>,
    /// `spec.skips`.
    pub skips: Option<Vec<String>>,
    /// The `olm.skipRange` annotation.
    pub skip_range: Option<String>,
    /// `createdAt`.
    pub created_at: Option<String>,
    /// Service accounts kept although no deployment uses them.
    pub extra_service_accounts: Option<Vec<String>>,
    /// Kinds left out besides the project's (whose default is `Namespace`).
    pub exclude_kinds: Vec<String>,
    /// Labels over the project's.
    pub labels: BTreeMap<String, String>,
    /// The operator image instead of the project's.
    pub operator: Option<OperatorImage>,
}

/// The options that generate `version` of `package`: each setting from `overrides`, else
/// the version's `releases:` entry, else the project's; `createdAt` falls back to
/// `source_date_epoch` (`SOURCE_DATE_EPOCH`).
pub fn options(
    project: Option<&Project>,
    package: &str,
    version: &str,
    overrides: &Overrides,
    source_date_epoch: Option<i64>,
) -> Result<Options> {
    let semver = parse_version(version)?;
    let config = project.map(|p| &p.config);
    let release = project.and_then(|p| p.release(version));
    let mut labels = config.map(|c| c.labels.clone()).unwrap_or_default();
    labels.extend(overrides.labels.clone());
    // The flag adds to the list: replacing it would make `--exclude-kind Job` refuse the
    // Namespace every kubebuilder project emits.
    let mut exclude_kinds = config
        .and_then(|c| c.exclude_kinds.clone())
        .unwrap_or_else(|| vec!["Namespace".to_owned()]);
    for k in &overrides.exclude_kinds {
        if !exclude_kinds.contains(k) {
            exclude_kinds.push(k.clone());
        }
    }
    let operator = overrides
        .operator
        .as_ref()
        .or_else(|| config.and_then(|c| c.operator.as_ref()));
    Ok(Options {
        package: package.to_owned(),
        version: semver,
        channels: overrides
            .channels
            .clone()
            .or_else(|| release.and_then(|r| r.channels.clone()))
            .or_else(|| config.map(|c| c.channels.clone()))
            .unwrap_or_default(),
        default_channel: overrides
            .default_channel
            .clone()
            .or_else(|| config.and_then(|c| c.default_channel.clone()))
            .filter(|d| !d.is_empty()),
        replaces: overrides
            .replaces
            .clone()
            .or_else(|| release.and_then(|r| r.replaces.clone())),
        skips: overrides
            .skips
            .clone()
            .or_else(|| release.map(|r| r.skips.clone()))
            .unwrap_or_default(),
        skip_range: overrides
            .skip_range
            .clone()
            .or_else(|| release.and_then(|r| r.skip_range.clone())),
        created_at: overrides
            .created_at
            .clone()
            .or_else(|| release.and_then(|r| r.created_at.clone()))
            .or_else(|| source_date_epoch.map(rfc3339_from_epoch)),
        extra_service_accounts: overrides
            .extra_service_accounts
            .clone()
            .or_else(|| config.map(|c| c.extra_service_accounts.clone()))
            .unwrap_or_default(),
        exclude_kinds,
        labels,
        operator_image: operator.map(|o| (o.placeholder().to_owned(), o.reference(version))),
        display_name: config.and_then(|c| c.display_name.clone()),
        csv_annotations: config
            .map(|c| c.csv_annotations.clone())
            .unwrap_or_default(),
        csv_substitutions: config
            .map(|c| {
                c.csv_substitutions
                    .iter()
                    .map(|s| (s.from.clone(), s.to.replace("{version}", version)))
                    .collect()
            })
            .unwrap_or_default(),
        extra_manifests: match project {
            Some(p) => extra_manifests(p)?,
            None => Vec::new(),
        },
    })
}

/// The project's `extraManifests`, read (within a manifest's budget) and checked to be one
/// Kubernetes object each: (file name, contents as they are).
fn extra_manifests(project: &Project) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for m in &project.config.extra_manifests {
        let path = project.resolve(m);
        // Read once, through the bounded reader; the text checked is the text copied.
        let text = crate::yaml::read_text(&path)?;
        let objects = crate::manifest::parse_objects(&text, &path)?;
        if objects.len() != 1 {
            return Err(crate::error::Error::Input(format!(
                "{}: an extraManifests file must hold one Kubernetes object, not {}",
                crate::paths::show(&path),
                objects.len()
            )));
        }
        let name = m
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push((name, text.into_bytes()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(yaml: &str) -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opship.yaml");
        std::fs::write(&path, yaml).unwrap();
        let p = Project::load(&path).unwrap();
        (dir, p)
    }

    const CONFIG: &str = "package: demo\nchannels: [stable]\ndefaultChannel: stable\n\
        labels: {team: a}\nreleases:\n  - version: 0.2.0\n    replaces: demo.v0.1.0\n    \
        channels: [fast]\n    createdAt: \"2026-01-01T00:00:00Z\"\n";

    #[test]
    fn display_name_is_the_projects_and_checked() {
        let (_d, p) = project("package: demo\ndisplayName: Demo - Community Edition\n");
        let o = options(Some(&p), "demo", "0.2.0", &Overrides::default(), None).unwrap();
        assert_eq!(o.display_name.as_deref(), Some("Demo - Community Edition"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opship.yaml");
        std::fs::write(&path, "package: demo\ndisplayName: \"\"\n").unwrap();
        let e = Project::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("opship.yaml") && e.contains("displayName"),
            "{e}"
        );
    }

    #[test]
    fn the_release_entry_wins_over_the_project_and_flags_over_both() {
        let (_d, p) = project(CONFIG);
        let o = options(Some(&p), "demo", "0.2.0", &Overrides::default(), Some(0)).unwrap();
        assert_eq!(o.channels, ["fast"]);
        assert_eq!(o.replaces.as_deref(), Some("demo.v0.1.0"));
        assert_eq!(o.default_channel.as_deref(), Some("stable"));
        assert_eq!(o.created_at.as_deref(), Some("2026-01-01T00:00:00Z"));
        assert_eq!(o.exclude_kinds, ["Namespace"]);
        // A version without an entry: the project's settings, createdAt from the epoch.
        let o = options(Some(&p), "demo", "0.3.0", &Overrides::default(), Some(0)).unwrap();
        assert_eq!(o.channels, ["stable"]);
        assert_eq!(o.replaces, None);
        assert_eq!(o.created_at.as_deref(), Some("1970-01-01T00:00:00Z"));

        let flags = Overrides {
            channels: Some(vec!["candidate".into()]),
            default_channel: Some(String::new()),
            exclude_kinds: vec!["Job".into(), "Namespace".into()],
            labels: [("team".to_owned(), "b".to_owned())].into(),
            ..Overrides::default()
        };
        let o = options(Some(&p), "demo", "0.2.0", &flags, None).unwrap();
        assert_eq!(o.channels, ["candidate"]);
        // `--default-channel ""`: none, over the config's.
        assert_eq!(o.default_channel, None);
        // Added to the default, each once.
        assert_eq!(o.exclude_kinds, ["Namespace", "Job"]);
        assert_eq!(o.labels["team"], "b");
    }

    #[test]
    fn without_a_project_only_the_overrides_count() {
        let o = options(None, "demo", "1.0.0", &Overrides::default(), None).unwrap();
        assert!(o.channels.is_empty());
        assert_eq!(o.created_at, None);
        assert!(options(None, "demo", "v1.0", &Overrides::default(), None).is_err());
    }
}

//! The project config, `opship.yaml`: what a release of this operator is made of. Typed and
//! strict: an unknown key is an error with its line, because a misspelt key silently ignored
//! is a release that quietly does the wrong thing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::yaml;

/// File name looked up when no `--config` is given.
pub const DEFAULT_FILE: &str = "opship.yaml";

/// One literal replacement in the CSV's text.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Substitution {
    /// The text to find (not a pattern).
    pub from: String,
    /// What replaces every occurrence.
    pub to: String,
}

/// `opship.yaml`, as written by the user.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    /// OLM package name (a DNS-1123 label).
    pub package: String,
    /// Channels a new bundle is published to (default: `alpha`, operator-sdk's).
    #[serde(default)]
    pub channels: Vec<String>,
    /// Default channel of the package.
    #[serde(default)]
    pub default_channel: Option<String>,
    /// The operator's own image.
    #[serde(default)]
    pub operator: Option<OperatorImage>,
    /// Kubernetes manifests of the operator: a kustomize-built stream (file) or a directory.
    #[serde(default)]
    pub manifests: Option<PathBuf>,
    /// `kustomize edit` commands run, in order, before `manifests` is built, each in its
    /// directory on a temporary copy of the kustomizations (the recipe's `cd DIR && kustomize
    /// edit ...`); the project's own files are never edited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kustomize_edits: Vec<KustomizeEdit>,
    /// The build of `manifests` is piped through `envsubst` (as the bundle recipe's
    /// `kustomize build … | envsubst | operator-sdk …`) with exactly these variables;
    /// `{version}` and `{operatorImage}` in a value are the release's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envsubst: Option<BTreeMap<String, String>>,
    /// The base ClusterServiceVersion (descriptions, icon, install modes, ...).
    #[serde(default)]
    pub csv_base: Option<PathBuf>,
    /// The CSV's `spec.displayName`, over the base CSV's (what a recipe's
    /// `sed -i 's|displayName: A|displayName: B|' CSV` does after generation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Annotations set on the CSV's `metadata.annotations` after generation, over what
    /// generation writes (what a recipe's `yq -i '.metadata.annotations."K" = "V"' CSV` does);
    /// `{version}` in a value is the release's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub csv_annotations: BTreeMap<String, String>,
    /// Files copied as they are into the bundle's `manifests/` under their own name (what a
    /// recipe's `cp FILE bundle/manifests/` does), relative to this file; each must be one
    /// Kubernetes object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_manifests: Vec<PathBuf>,
    /// Literal text replaced in the CSV after generation, in order (what a recipe's `sed -i
    /// 's/$(VERSION)/1.2.3/g' CSV` does); `{version}` in `to` is the release's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub csv_substitutions: Vec<Substitution>,
    /// Where bundles are written; `{version}` is replaced (default `bundle/{version}`).
    #[serde(default)]
    pub bundle_dir: Option<String>,
    /// Image repositories that releases are pushed to.
    #[serde(default)]
    pub images: Images,
    /// Extra labels for `metadata/annotations.yaml` and the bundle image
    /// (e.g. `com.redhat.openshift.versions`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Service accounts whose RBAC is folded into the CSV besides the deployments' own.
    #[serde(default)]
    pub extra_service_accounts: Vec<String>,
    /// Kinds dropped from the input instead of being an error (default: `Namespace`).
    #[serde(default)]
    pub exclude_kinds: Option<Vec<String>>,
    /// Released versions and how each one upgrades from the earlier ones.
    #[serde(default)]
    pub releases: Vec<Release>,
    /// Helm chart settings.
    #[serde(default)]
    pub chart: Option<ChartConfig>,
    /// Per-environment overrides (Helm values files, overlays).
    #[serde(default)]
    pub environments: BTreeMap<String, Environment>,
    /// `generate bundle` pins images to digests, as with `--use-image-digests`.
    #[serde(default)]
    pub use_image_digests: bool,
    /// File-based catalogs releases are added to, one per target (e.g. per OpenShift version).
    #[serde(default)]
    pub catalogs: Vec<CatalogTarget>,
    /// Where `opship release` pushes images and charts: `REGISTRY[/NAMESPACE]`, e.g.
    /// `quay.io/example`. Unset: images stay in the OCI layout `dist/oci`.
    #[serde(default)]
    pub registry: Option<String>,
    /// The cosign key `opship release` signs with (default: `.opship/cosign.key`, generated on
    /// first use).
    #[serde(default)]
    pub signing: Option<Signing>,
    /// Who must have signed every bundle image of the catalogs a release goes into: checked
    /// (as `opship catalog verify`) before the release writes or pushes anything.
    #[serde(default)]
    pub verify: Option<VerifyPolicy>,
}

/// The `verify:` policy: trusted keys, or the keyless identity (cosign's flags in camelCase).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyPolicy {
    /// Trusted public keys (an image passes with any of them).
    #[serde(default)]
    pub keys: Vec<PathBuf>,
    /// Keyless (without `keys`): the certificate's identity, exactly.
    #[serde(default)]
    pub certificate_identity: Option<String>,
    /// Keyless: a regular expression the identity must match.
    #[serde(default)]
    pub certificate_identity_regexp: Option<String>,
    /// Keyless: the OIDC issuer, exactly.
    #[serde(default)]
    pub certificate_oidc_issuer: Option<String>,
    /// Keyless: a regular expression the OIDC issuer must match.
    #[serde(default)]
    pub certificate_oidc_issuer_regexp: Option<String>,
    /// Keyless: cosign 3's trusted_root.json (default: the public-good Sigstore root).
    #[serde(default)]
    pub trusted_root: Option<PathBuf>,
}

/// The signing key of releases.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Signing {
    /// Encrypted cosign private key.
    pub key: PathBuf,
    /// Its public key (default: the key's path with `.pub` instead of `.key`).
    #[serde(default)]
    pub public_key: Option<PathBuf>,
    /// File whose first line is the key password (default: `COSIGN_PASSWORD`).
    #[serde(default)]
    pub password_file: Option<PathBuf>,
}

/// One file-based catalog a release goes into (`opship catalog add --target NAME`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CatalogTarget {
    /// Name used with `--target`, e.g. `v4.17`.
    pub name: String,
    /// The catalog directory (the package lives in `<dir>/<package>/`).
    pub dir: PathBuf,
    /// Target OpenShift version: 4.17 and newer get `olm.csv.metadata`, older
    /// `olm.bundle.object`.
    #[serde(default)]
    pub ocp_version: Option<String>,
    /// `bundle-object` or `csv-metadata` (instead of `ocpVersion`).
    #[serde(default)]
    pub csv_format: Option<String>,
    /// Channels of this catalog (default: the project's `channels`).
    #[serde(default)]
    pub channels: Option<Vec<String>>,
    /// skipRange policy of new entries: `none`, `minor`, `major` or `all`.
    #[serde(default)]
    pub skip_range: Option<String>,
}

/// One `kustomize edit ARGS...`, run in `dir` (relative to the config's directory).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KustomizeEdit {
    /// The kustomization directory the edit runs in, e.g. `config/manager`.
    pub dir: PathBuf,
    /// What follows `kustomize edit`, e.g. `[set, image, controller=controller]`; `{version}`
    /// is the release's version.
    pub args: Vec<String>,
}

/// The operator image and how manifests refer to it before release.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OperatorImage {
    /// Repository, e.g. `quay.io/example/memcached-operator`.
    pub image: String,
    /// Tag; `{version}` is replaced (default `v{version}`).
    #[serde(default)]
    pub tag: Option<String>,
    /// Image name used in the manifests and replaced at generation (default `controller`,
    /// kubebuilder's placeholder).
    #[serde(default)]
    pub placeholder: Option<String>,
}

impl OperatorImage {
    /// The full reference of the operator image for `version`.
    pub fn reference(&self, version: &str) -> String {
        let tag = self.tag.as_deref().unwrap_or("v{version}");
        format!("{}:{}", self.image, tag.replace("{version}", version))
    }

    /// The placeholder image name in the manifests.
    pub fn placeholder(&self) -> &str {
        self.placeholder.as_deref().unwrap_or("controller")
    }

    /// The operator image given as `REPO[:TAG]` on the command line (`generate bundle
    /// --operator-image`), over the config's `operator`: the repository (and the tag, when
    /// given) replace the config's; without a tag the config's tag pattern applies (else
    /// `v{version}`); the placeholder stays the config's (else `controller`). A colon after
    /// the last `/` starts the tag, so a registry port (`127.0.0.1:5000/op`) is not one. A
    /// digest (`@sha256:…`) is refused: the tag is what gets pinned, with
    /// `--use-image-digests`.
    pub fn from_flag(arg: &str, config: Option<&OperatorImage>) -> Result<OperatorImage> {
        let bad = |why: &str| {
            Error::Input(format!(
                "--operator-image `{}`: {why} (expected REPO[:TAG], e.g. quay.io/example/op:v1.2.3)",
                crate::naming::excerpt(arg)
            ))
        };
        if arg.is_empty() {
            return Err(bad("is empty"));
        }
        if arg.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("has whitespace"));
        }
        if arg.contains('@') {
            return Err(bad(
                "has a digest; give a tag (--use-image-digests pins it to its digest)",
            ));
        }
        let (image, tag) = split_tag(arg);
        if image.is_empty()
            || image.ends_with('/')
            || image.starts_with('/')
            || image.contains("//")
        {
            return Err(bad("has no repository name"));
        }
        // Only the registry host may carry a `:` (its port).
        if image.split('/').skip(1).any(|part| part.contains(':')) {
            return Err(bad("has a `:` inside the repository path"));
        }
        if let Some(t) = tag {
            // Docker's tag grammar; `{version}` is allowed as in the config's `tag`.
            let plain = t.replace("{version}", "v");
            let ok = !plain.is_empty()
                && plain.len() <= 128
                && !plain.starts_with(['.', '-'])
                && plain
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
            if !ok {
                return Err(bad(
                    "has an invalid tag (letters, digits, `_`, `.`, `-`, at most 128, not starting with `.` or `-`)",
                ));
            }
        }
        Ok(OperatorImage {
            image: image.to_owned(),
            tag: tag
                .map(str::to_owned)
                .or_else(|| config.and_then(|c| c.tag.clone())),
            placeholder: config.and_then(|c| c.placeholder.clone()),
        })
    }
}

/// Image repositories for released artefacts.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Images {
    /// Bundle image repository.
    #[serde(default)]
    pub bundle: Option<String>,
    /// Catalog (index) image repository.
    #[serde(default)]
    pub catalog: Option<String>,
}

/// One released version.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Release {
    /// Semantic version, without a leading `v`.
    pub version: String,
    /// The version (or CSV name) this one replaces.
    #[serde(default)]
    pub replaces: Option<String>,
    /// Versions (or CSV names) this one skips.
    #[serde(default)]
    pub skips: Vec<String>,
    /// `olm.skipRange`, e.g. `>=0.1.0 <0.3.0`.
    #[serde(default)]
    pub skip_range: Option<String>,
    /// Channels, when they differ from the project's.
    #[serde(default)]
    pub channels: Option<Vec<String>>,
    /// `createdAt` annotation, when the release should carry one.
    #[serde(default)]
    pub created_at: Option<String>,
}

/// Helm chart settings.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChartConfig {
    /// Chart name (default: the package name).
    #[serde(default)]
    pub name: Option<String>,
    /// Where CRDs go: `templates` (behind `crd.enabled`) or `crds`.
    #[serde(default)]
    pub crds: Option<String>,
    /// Output directory (default `dist/charts`).
    #[serde(default)]
    pub output: Option<PathBuf>,
}

/// Overrides for one deployment environment.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Environment {
    /// Operator image tag.
    #[serde(default)]
    pub tag: Option<String>,
    /// Replicas of the manager deployment.
    #[serde(default)]
    pub replicas: Option<u32>,
    /// Container resources (requests/limits), as in a pod spec.
    #[serde(default)]
    pub resources: Option<serde_json::Value>,
}

/// A config file read from disk, with the directory its relative paths are resolved against.
#[derive(Debug, Clone)]
pub struct Project {
    /// The parsed config.
    pub config: Config,
    /// The config file.
    pub path: PathBuf,
    /// Its directory.
    pub root: PathBuf,
}

impl Project {
    /// Reads and checks `opship.yaml`.
    pub fn load(path: &Path) -> Result<Project> {
        let text = yaml::read_text_of(path, crate::input::Kind::Config)?;
        let config: Config = yaml::parse_typed(&text, path)?;
        // Where a value is, for the checks below (the typed parse keeps no positions).
        let doc = yaml::parse_one(&text, path)?;
        let at = |pointer: &str| doc.origin(pointer);
        if config.package.is_empty() {
            return Err(Error::invalid(
                at("/package"),
                "`package` must name the OLM package",
            ));
        }
        if !is_dns1123_label(&config.package) {
            return Err(Error::invalid(
                at("/package"),
                format!(
                    "`package: {}` is not a DNS-1123 label (lower-case letters, digits and '-', at most 63)",
                    config.package
                ),
            ));
        }
        if let Some(d) = &config.display_name
            && (d.trim().is_empty() || d.contains('\n'))
        {
            return Err(Error::invalid(
                at("/displayName"),
                "`displayName` must be one non-empty line (the CSV's spec.displayName)",
            ));
        }
        for k in config.csv_annotations.keys() {
            if let Some(problem) = crate::naming::qualified_name_problem(k) {
                return Err(Error::invalid(
                    at(&format!(
                        "/csvAnnotations/{}",
                        k.replace('~', "~0").replace('/', "~1")
                    )),
                    format!("`csvAnnotations` key `{k}` is not an annotation key: {problem}"),
                ));
            }
        }
        if let Some(i) = config
            .csv_substitutions
            .iter()
            .position(|s| s.from.is_empty())
        {
            return Err(Error::invalid(
                at(&format!("/csvSubstitutions/{i}/from")),
                "`csvSubstitutions`: a `from` is empty (it would match everywhere)",
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, m) in config.extra_manifests.iter().enumerate() {
            let entry = format!("/extraManifests/{i}");
            let name = m.file_name().map(|n| n.to_string_lossy().into_owned());
            match name {
                Some(n) if n.ends_with(".yaml") || n.ends_with(".yml") || n.ends_with(".json") => {
                    if !seen.insert(n.clone()) {
                        return Err(Error::invalid(
                            at(&entry),
                            format!(
                                "`extraManifests` names two files called `{n}`; each keeps its name in manifests/"
                            ),
                        ));
                    }
                }
                _ => {
                    return Err(Error::invalid(
                        at(&entry),
                        format!(
                            "`extraManifests` entry `{}` is not a .yaml, .yml or .json file",
                            crate::paths::show(m)
                        ),
                    ));
                }
            }
        }
        let root = path
            .parent()
            .map(Path::to_path_buf)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(Project {
            config,
            path: path.to_path_buf(),
            root,
        })
    }

    /// The config's `kustomizeEdits` for the release `version`: directories resolved,
    /// `{version}` in an argument replaced.
    pub fn kustomize_edits(&self, version: &str) -> Vec<KustomizeEdit> {
        self.config
            .kustomize_edits
            .iter()
            .map(|e| KustomizeEdit {
                dir: self.resolve(&e.dir),
                args: e
                    .args
                    .iter()
                    .map(|a| a.replace("{version}", version))
                    .collect(),
            })
            .collect()
    }

    /// The `envsubst` variables for the release `version` (its operator image from
    /// `operator`, else empty).
    pub fn envsubst_vars(
        &self,
        version: &str,
        operator: Option<&OperatorImage>,
    ) -> Option<BTreeMap<String, String>> {
        let image = operator.map(|o| o.reference(version)).unwrap_or_default();
        self.config.envsubst.as_ref().map(|vars| {
            vars.iter()
                .map(|(k, v)| {
                    let v = v
                        .replace("{operatorImage}", &image)
                        .replace("{version}", version);
                    (k.clone(), v)
                })
                .collect()
        })
    }

    /// Resolves a path written in the config against the config's directory.
    pub fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.root.join(p)
        }
    }

    /// The bundle directory for `version`.
    pub fn bundle_dir(&self, version: &str) -> PathBuf {
        let pattern = self
            .config
            .bundle_dir
            .as_deref()
            .unwrap_or("bundle/{version}");
        self.resolve(Path::new(&pattern.replace("{version}", version)))
    }

    /// The release entry for `version`, if the config lists one.
    pub fn release(&self, version: &str) -> Option<&Release> {
        self.config.releases.iter().find(|r| r.version == version)
    }
}

/// An image reference as repository and tag: the tag follows a `:` after the last `/`, so a
/// registry port (`127.0.0.1:5000/op`) is not taken for one. A reference with a digest is all
/// repository (`None` tag): the digest is not a tag.
pub fn split_tag(reference: &str) -> (&str, Option<&str>) {
    if reference.contains('@') {
        return (reference, None);
    }
    let name_start = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[name_start..].rfind(':') {
        Some(i) => (
            &reference[..name_start + i],
            Some(&reference[name_start + i + 1..]),
        ),
        None => (reference, None),
    }
}

/// Kubernetes' DNS-1123 label rule.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// The commented starter config written by `opship init`.
pub fn starter(package: &str) -> String {
    format!(
        r#"# opship project config. Paths are relative to this file.
# Docs: https://github.com/opship/opship/blob/main/docs/config.md

# OLM package name (DNS-1123 label).
package: {package}

# Channels new bundles go to (`alpha` when unset, operator-sdk's default), and the package's
# default channel (none when unset, as with operator-sdk without --default-channel).
channels: [alpha]
#defaultChannel: alpha

# The operator image. Containers whose image is the placeholder (kubebuilder's `controller`)
# get `<image>:<tag>` at generation; `{{version}}` in the tag is the release version.
operator:
  image: quay.io/example/{package}
  tag: v{{version}}
  placeholder: controller

# The operator's manifests: a kustomization that opship builds with kustomize (operator-sdk's
# config/manifests: the base CSV, config/default, samples, scorecard), a saved
# `kustomize build` stream, or a directory of rendered files. Not config/default alone: it has
# no samples or scorecard and keeps the cert-manager wiring OLM replaces.
manifests: config/manifests
# The base ClusterServiceVersion: descriptions, icon, maintainers, install modes.
csvBase: config/manifests/bases/{package}.clusterserviceversion.yaml
# Where bundles are written.
bundleDir: bundle/{{version}}

# Where released images go. Leave empty to use the local OCI layout under dist/.
images:
  bundle: quay.io/example/{package}-bundle
  catalog: quay.io/example/{package}-catalog

# Extra labels for metadata/annotations.yaml and the bundle image.
labels: {{}}
#  com.redhat.openshift.versions: v4.14-v4.18

# Service accounts whose (Cluster)Role bindings are folded into the CSV, besides those the
# deployments run as.
extraServiceAccounts: []

# Kinds in the manifests that are dropped rather than refused (OLM creates the namespace).
excludeKinds: [Namespace]

# Released versions, oldest first, and how each upgrades from earlier ones.
releases:
  - version: 0.1.0
#  - version: 0.2.0
#    replaces: 0.1.0
#    skipRange: ">=0.1.0 <0.2.0"

# Helm chart settings.
chart:
  name: {package}
  crds: templates

# Per-environment Helm values.
environments: {{}}
#  prod:
#    replicas: 2
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starter_config_parses() {
        let text = starter("demo-operator");
        let c: Config = yaml::parse_typed(&text, Path::new("opship.yaml")).unwrap();
        assert_eq!(c.package, "demo-operator");
        assert_eq!(
            c.operator.unwrap().reference("1.2.3"),
            "quay.io/example/demo-operator:v1.2.3"
        );
        assert_eq!(c.releases.len(), 1);
        // operator-sdk's defaults.
        assert_eq!(c.channels, ["alpha"]);
        assert_eq!(c.default_channel, None);
    }

    #[test]
    fn operator_image_flag() {
        let config = OperatorImage {
            image: "quay.io/example/op".into(),
            tag: Some("release-{version}".into()),
            placeholder: Some("manager-image".into()),
        };
        let o = OperatorImage::from_flag("127.0.0.1:5000/x/op", Some(&config)).unwrap();
        assert_eq!(o.reference("1.2.3"), "127.0.0.1:5000/x/op:release-1.2.3");
        assert_eq!(o.placeholder(), "manager-image");
        let o = OperatorImage::from_flag("127.0.0.1:5000/x/op:dev", Some(&config)).unwrap();
        assert_eq!(o.reference("1.2.3"), "127.0.0.1:5000/x/op:dev");
        let o = OperatorImage::from_flag("op", None).unwrap();
        assert_eq!(o.reference("1.2.3"), "op:v1.2.3");
        assert_eq!(o.placeholder(), "controller");
        let o = OperatorImage::from_flag("quay.io/x/op:v{version}", None).unwrap();
        assert_eq!(o.reference("1.2.3"), "quay.io/x/op:v1.2.3");
        for bad in [
            "",
            "quay.io/x/op:",
            "quay.io/x/op@sha256:0123",
            "quay.io/x/",
            "/op",
            "quay.io//op",
            ":v1",
            "quay.io/x/op:-v1",
            "quay.io/x/op:a/b",
            "quay.io/x op:v1",
        ] {
            let err = OperatorImage::from_flag(bad, Some(&config))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("--operator-image `"), "{bad}: {err}");
        }
    }

    #[test]
    fn csv_annotations_and_extra_manifests_are_checked() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("opship.yaml");
        for (text, message) in [
            ("csvAnnotations: {\"a b\": x}\n", "is not an annotation key"),
            (
                "extraManifests: [a/x.yaml, b/x.yaml]\n",
                "two files called `x.yaml`",
            ),
            (
                "extraManifests: [notes.txt]\n",
                "is not a .yaml, .yml or .json file",
            ),
        ] {
            std::fs::write(&path, format!("package: demo\n{text}")).unwrap();
            let e = Project::load(&path).unwrap_err().to_string();
            assert!(e.contains(message), "{text}: {e}");
            // Named with the line of the entry (the second line of the file).
            assert!(e.contains("opship.yaml:2:"), "{text}: {e}");
        }
        std::fs::write(
            &path,
            "package: demo\ncsvAnnotations: {operators.openshift.io/valid-subscription: '[\"A\"]'}\nextraManifests: [x.yaml]\n",
        )
        .unwrap();
        let p = Project::load(&path).unwrap();
        assert_eq!(p.config.extra_manifests, [PathBuf::from("x.yaml")]);
    }

    #[test]
    fn unknown_key_names_line() {
        let text = "package: demo\nchannels: [stable]\ndefaultChanel: stable\n";
        let err = yaml::parse_typed::<Config>(text, Path::new("opship.yaml"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("opship.yaml:3:"), "{err}");
        assert!(err.contains("defaultChanel"), "{err}");
    }

    #[test]
    fn dns_label() {
        assert!(is_dns1123_label("memcached-operator"));
        assert!(!is_dns1123_label("Memcached"));
        assert!(!is_dns1123_label("-x"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
    }
}

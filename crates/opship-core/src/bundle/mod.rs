//! OLM registry+v1 bundles: generating one from an operator's manifests and a base CSV, the
//! way `operator-sdk generate bundle` does, minus its churn (`createdAt` on every run, stale
//! files, unordered relatedImages) and plus what it cannot do (replaces, skips, extra labels,
//! a drift check).

mod collect;
mod csv;
mod images;
pub mod layout;
pub mod metadata;
pub mod pin;
mod rbac;
pub mod semantic;
pub mod settings;
mod webhooks;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::manifest::Object;
use crate::yaml;

pub use collect::{ALLOWED_KINDS, refused_kinds};
pub use layout::{Drift, Files, MAX_FILES, MAX_TOTAL_BYTES, TARGET, check_size, drift, write_dir};
pub use metadata::Metadata;
pub use semantic::{SemanticDrift, semantic_drift, semantic_drift_dirs};

/// Everything about the release that is not in the manifests.
#[derive(Debug, Clone)]
pub struct Options {
    /// OLM package name.
    pub package: String,
    /// The release version.
    pub version: semver::Version,
    /// Channels (default `alpha`, operator-sdk's).
    pub channels: Vec<String>,
    /// Default channel; none (and no annotation) when `None` or empty.
    pub default_channel: Option<String>,
    /// `spec.replaces`: a CSV name or a version of this package.
    pub replaces: Option<String>,
    /// `spec.skips`: CSV names or versions.
    pub skips: Vec<String>,
    /// `olm.skipRange` annotation.
    pub skip_range: Option<String>,
    /// `createdAt` annotation; left as the base has it when `None`.
    pub created_at: Option<String>,
    /// Service accounts folded besides the deployments' own.
    pub extra_service_accounts: Vec<String>,
    /// Kinds dropped from the input.
    pub exclude_kinds: Vec<String>,
    /// Extra annotations/labels for the metadata.
    pub labels: BTreeMap<String, String>,
    /// `(placeholder, reference)`: containers whose image is the placeholder get the reference.
    pub operator_image: Option<(String, String)>,
    /// `spec.displayName` over the base CSV's.
    pub display_name: Option<String>,
    /// Annotations set on the CSV last, over generation's own.
    pub csv_annotations: BTreeMap<String, String>,
    /// Files written into `manifests/` as they are: (file name, contents).
    pub extra_manifests: Vec<(String, Vec<u8>)>,
    /// Literal (from, to) replacements in the CSV's strings, in order.
    pub csv_substitutions: Vec<(String, String)>,
}

/// The inputs of generation.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// The operator's manifests (a kustomize build).
    pub objects: Vec<Object>,
    /// The base CSV, used when the manifests carry none.
    pub base_csv: Option<Object>,
}

/// A generated bundle, in memory until written.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// Every file of the bundle directory, by relative path.
    pub files: Files,
    /// The CSV as generated.
    pub csv: Value,
    /// Path of the CSV in `files` (`manifests/<package>.clusterserviceversion.yaml`).
    pub csv_file: String,
    /// The metadata.
    pub metadata: Metadata,
    /// Notes for the user (nothing that stops generation).
    pub warnings: Vec<String>,
}

/// Turns a version or CSV name given for `replaces`/`skips` into a CSV name.
fn csv_name(package: &str, v: &str) -> String {
    let bare = v.strip_prefix('v').unwrap_or(v);
    if semver::Version::parse(bare).is_ok() {
        format!("{package}.v{bare}")
    } else {
        v.to_owned()
    }
}

/// Parses a release version the way operator-sdk does: strict semver, no leading `v`, no
/// leading zeros.
pub fn parse_version(s: &str) -> Result<semver::Version> {
    let v = semver::Version::parse(s).map_err(|e| {
        Error::Input(format!(
            "version `{s}` is not a semantic version (MAJOR.MINOR.PATCH[-pre][+build]): {e}"
        ))
    })?;
    if v.to_string() != s {
        return Err(Error::Input(format!(
            "version `{s}` is not in canonical form (expected `{v}`)"
        )));
    }
    Ok(v)
}

/// Whether `o` is a CSV of `package`, one that generation takes as its base when it is among
/// the manifests.
fn is_package_csv(o: &Object, package: &str) -> bool {
    o.group() == "operators.coreos.com"
        && o.kind() == "ClusterServiceVersion"
        && o.name().starts_with(&format!("{package}."))
}

/// The release version when none is given, as operator-sdk takes it: `spec.version` of the
/// base CSV that [`generate`] would start from (a CSV of the package among the manifests, else
/// `inputs.base_csv`).
pub fn base_version(inputs: &Inputs, package: &str) -> Result<semver::Version> {
    let base = inputs
        .objects
        .iter()
        .find(|o| is_package_csv(o, package))
        .or(inputs.base_csv.as_ref())
        .ok_or_else(|| {
            Error::Input(
                "no --version given and no base CSV to take it from (no CSV of this package \
                 among the manifests, no --base-csv or csvBase): pass --version"
                    .into(),
            )
        })?;
    match &base.value()["spec"]["version"] {
        Value::String(v) if !v.is_empty() => parse_version(v).map_err(|e| {
            base.error(
                "/spec/version",
                format!("the base CSV's spec.version cannot be the release version ({e}): pass --version"),
            )
        }),
        _ => Err(base.error(
            "/spec",
            "the base CSV has no spec.version to take the release version from: pass --version",
        )),
    }
}

/// Generates the bundle.
pub fn generate(inputs: Inputs, opts: &Options) -> Result<Bundle> {
    if !crate::config::is_dns1123_label(&opts.package) {
        return Err(Error::Input(format!(
            "package `{}` is not a DNS-1123 label",
            opts.package
        )));
    }
    let channels = if opts.channels.is_empty() {
        // operator-sdk's default, so a bundle made without channels lands where it would.
        vec!["alpha".to_owned()]
    } else {
        opts.channels.clone()
    };
    if let Some(bad) = channels.iter().find(|c| c.is_empty() || c.contains(',')) {
        return Err(Error::Input(format!(
            "channel name `{bad}` is empty or has a comma"
        )));
    }
    // The checks `opship validate` applies (CSV001, CSV002, CSV020), so generation never
    // writes a bundle its own validator refuses.
    let name = format!("{}.v{}", opts.package, opts.version);
    if let Some(p) = crate::naming::csv_name_problem(&name) {
        return Err(Error::Input(format!(
            "version {} gives the CSV name {p}; OLM refuses it (rule CSV001){}",
            opts.version,
            if opts.version.build.is_empty() {
                ""
            } else {
                ": build metadata (`+…`) cannot be part of a CSV name"
            }
        )));
    }
    if let Some(r) = &opts.replaces
        && let Some(p) = crate::naming::replaces_problem(&name, &csv_name(&opts.package, r))
    {
        return Err(Error::Input(format!(
            "--replaces {}: {p} (rule CSV002)",
            crate::naming::excerpt(r)
        )));
    }
    if let Some(r) = &opts.skip_range
        && let Some(p) = crate::naming::skip_range_problem(r)
    {
        return Err(Error::Input(format!("--skip-range {p} (rule CSV020)")));
    }
    // Parsed before it goes anywhere: a value that is not an image reference (`"x\nmalicious:
    // yes"`) would otherwise be written into the CSV for only `validate` to notice.
    if let Some((_, reference)) = &opts.operator_image
        && let Some(p) = crate::naming::image_reference_problem(reference)
    {
        return Err(Error::Input(format!(
            "the operator image {:?} is not an image reference: {p} (rule BND007); nothing written",
            crate::naming::excerpt(reference)
        )));
    }
    // An empty default channel is none: `channel.default.v1: ""` would name no channel.
    let default_channel = opts.default_channel.clone().filter(|d| !d.is_empty());
    let mut warnings = Vec::new();
    if let Some(d) = &default_channel
        && !channels.contains(d)
    {
        // Legal (another bundle of the package may define that channel), but often a typo.
        warnings.push(format!(
            "default channel `{d}` is not one of this bundle's channels ({}); another bundle of the package must provide it",
            channels.join(",")
        ));
    }

    let mut c = collect::collect(inputs.objects, &opts.exclude_kinds)?;
    // Canonical order, whatever order the input came in: kustomize sorts by kind and name,
    // a directory by path, and both must give the same bundle.
    c.deployments.sort_by(|a, b| a.name().cmp(b.name()));
    c.crds.sort_by(|a, b| a.name().cmp(b.name()));
    c.custom_resources.sort_by(|a, b| {
        (a.api_version(), a.kind(), a.name()).cmp(&(b.api_version(), b.kind(), b.name()))
    });
    for o in &c.excluded {
        tracing::debug!("dropping {} ({}): kind excluded", o.describe(), o.origin());
    }

    // The base: a CSV of this package in the manifests wins, as in operator-sdk.
    let base = match c.csvs.iter().position(|o| is_package_csv(o, &opts.package)) {
        Some(i) => c.csvs.remove(i),
        None => match inputs.base_csv {
            Some(b) => b,
            None => {
                warnings.push("no base CSV given: starting from a new one".to_owned());
                csv::new_base(&opts.package)
            }
        },
    };
    if let Some(other) = c.csvs.first() {
        return Err(other.error(
            "/metadata/name",
            format!(
                "is a CSV of another package; the manifests may only hold this package's CSV ({}.v...)",
                opts.package
            ),
        ));
    }
    csv::check_base(&base)?;

    // The operator image the containers now run, if any got it.
    let mut operator_image: Option<&str> = None;
    if let Some((placeholder, reference)) = &opts.operator_image {
        let n = images::replace_placeholder(&mut c.deployments, placeholder, reference);
        if n > 0 {
            operator_image = Some(reference);
        } else {
            warnings.push(format!(
                "no container uses the placeholder image `{placeholder}`; the operator image {reference} was not set in any deployment"
            ));
        }
    }
    for d in &mut c.deployments {
        csv::rewrite_watch_namespace(d.value_mut());
        // The deployments are the CSV's install strategy: replaced now, so the images
        // listed from them are what the CSV ends up with.
        substitute(d.value_mut(), &opts.csv_substitutions);
    }

    // RBAC.
    let mut csv_sas: BTreeSet<String> =
        c.deployments.iter().map(rbac::service_account_of).collect();
    csv_sas.extend(opts.extra_service_accounts.iter().cloned());
    let folded = rbac::fold(&c, &csv_sas)?;
    warnings.extend(folded.warnings.iter().cloned());

    // The CSV.
    let mut csv_value = base.value().clone();
    let version = opts.version.to_string();
    {
        let meta = csv::map_at(&mut csv_value, "metadata")?;
        meta.insert("name".into(), json!(format!("{}.v{version}", opts.package)));
    }
    let base_related: Vec<Value> = base.value()["spec"]["relatedImages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let base_owned: Vec<Value> = base.value()["spec"]["customresourcedefinitions"]["owned"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    apply_annotations(&mut csv_value, &c, opts, operator_image)?;

    let spec = csv::map_at(&mut csv_value, "spec")?;
    if let Some(d) = &opts.display_name {
        spec.insert("displayName".into(), json!(d));
    }
    if let Some(r) = &opts.replaces {
        spec.insert("replaces".into(), json!(csv_name(&opts.package, r)));
    }
    if !opts.skips.is_empty() {
        let skips: Vec<String> = opts
            .skips
            .iter()
            .map(|s| csv_name(&opts.package, s))
            .collect();
        spec.insert("skips".into(), json!(skips));
    }
    spec.insert("version".into(), json!(version));

    let owned = csv::owned_crds(&base_owned, &c.crds);
    {
        let crds = csv::map_at(&mut csv_value["spec"], "customresourcedefinitions")?;
        if owned.is_empty() {
            crds.remove("owned");
        } else {
            crds.insert("owned".into(), Value::Array(owned));
        }
    }

    {
        let install = csv::map_at(&mut csv_value["spec"], "install")?;
        install.insert("strategy".into(), json!("deployment"));
        // `strategy` before `spec`, as OLM writes it; rebuild to fix the order of a base that
        // had them the other way round or empty.
        let old_spec = install.remove("spec");
        let mut ispec = match old_spec {
            Some(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        ispec.remove("permissions");
        ispec.remove("clusterPermissions");
        ispec.remove("deployments");
        if !folded.cluster_permissions.is_empty() {
            ispec.insert(
                "clusterPermissions".into(),
                Value::Array(folded.cluster_permissions.clone()),
            );
        }
        let deployments: Vec<Value> = c.deployments.iter().map(csv::install_deployment).collect();
        ispec.insert("deployments".into(), Value::Array(deployments));
        if !folded.permissions.is_empty() {
            ispec.insert(
                "permissions".into(),
                Value::Array(folded.permissions.clone()),
            );
        }
        install.insert("spec".into(), Value::Object(ispec));
    }

    if let Some(defs) =
        webhooks::definitions(&c.webhook_configs, &c.crds, &c.services, &c.deployments)
    {
        csv::map_at(&mut csv_value, "spec")?
            .insert("webhookdefinitions".into(), Value::Array(defs));
    }

    let related = images::related_images(&base_related, &c.deployments)?;
    {
        let spec = csv::map_at(&mut csv_value, "spec")?;
        if related.is_empty() {
            spec.remove("relatedImages");
        } else {
            spec.insert("relatedImages".into(), Value::Array(related));
        }
    }

    // The rest of the CSV (its deployments are done), as `sed -i 's/A/B/g' CSV` after
    // generation would.
    if !opts.csv_substitutions.is_empty() {
        let deployments = csv_value["spec"]["install"]["spec"]
            .get_mut("deployments")
            .map(std::mem::take);
        substitute(&mut csv_value, &opts.csv_substitutions);
        if let Some(d) = deployments {
            csv_value["spec"]["install"]["spec"]["deployments"] = d;
        }
    }

    // Files.
    let mut files = Files::new();
    let csv_obj = Object::generated(csv_value.clone(), base.doc.file.as_ref());
    let mut manifests: Vec<Object> = Vec::new();
    manifests.extend(c.crds.iter().cloned());
    manifests.extend(c.services.iter().cloned());
    manifests.extend(c.others.iter().cloned());
    manifests.extend(folded.leftover.iter().cloned());
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let csv_file = layout::file_name(&csv_obj, &opts.package);
    let csv_path = format!("manifests/{csv_file}");
    files.insert(csv_path.clone(), yaml::to_string(&csv_value)?.into_bytes());
    names.insert(csv_file, 1);
    for mut o in manifests {
        layout::check_name(&o)?;
        if let Some(meta) = o
            .value_mut()
            .get_mut("metadata")
            .and_then(serde_json::Value::as_object_mut)
        {
            // OLM installs bundle objects into the operator's namespace, whatever it is.
            meta.remove("namespace");
        }
        let name = layout::file_name(&o, &opts.package);
        let n = names.entry(name.clone()).or_insert(0);
        *n += 1;
        let name = if *n == 1 {
            name
        } else {
            format!("dup{}_{name}", *n - 1)
        };
        files.insert(
            format!("manifests/{name}"),
            yaml::to_string(o.value())?.into_bytes(),
        );
    }

    // Files the project copies in as they are; never over a generated one.
    for (name, bytes) in &opts.extra_manifests {
        let path = format!("manifests/{name}");
        if files.contains_key(&path) {
            return Err(Error::Input(format!(
                "extraManifests: `{name}` has the name of a file generation writes ({path})"
            )));
        }
        files.insert(path, bytes.clone());
    }

    let metadata = Metadata {
        package: opts.package.clone(),
        channels,
        default_channel,
        scorecard: c.scorecard.is_some(),
        labels: opts.labels.clone(),
    };
    files.insert(
        "metadata/annotations.yaml".into(),
        metadata.annotations_yaml()?.into_bytes(),
    );
    files.insert(
        "bundle.Dockerfile".into(),
        metadata.dockerfile()?.into_bytes(),
    );
    if let Some(sc) = &c.scorecard {
        files.insert(
            "tests/scorecard/config.yaml".into(),
            yaml::to_string(&scorecard_config(sc.value()))?.into_bytes(),
        );
    }

    Ok(Bundle {
        files,
        csv: csv_value,
        csv_file: csv_path,
        metadata,
        warnings,
    })
}

/// The scorecard `Configuration` as operator-sdk writes it: its type's metadata holds only the
/// name, so labels and annotations a kustomization adds to every object (`commonLabels`) are
/// not written.
fn scorecard_config(v: &serde_json::Value) -> serde_json::Value {
    let mut out = v.clone();
    if let Some(m) = out.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        m.retain(|k, _| k == "name");
    }
    out
}

/// Annotations of the base that name the tool and project layout which scaffolded it.
/// operator-sdk rewrites them on every run; opship does not write them, and keeping the base's
/// would ship a stale claim about what generated the bundle.
const TOOL_ANNOTATIONS: [&str; 2] = [
    "operators.operatorframework.io/builder",
    "operators.operatorframework.io/project_layout",
];

/// `metadata.annotations` of the CSV: skipRange, createdAt, containerImage, alm-examples.
/// `operator_image` is the image containers got in place of the placeholder, if any did.
fn apply_annotations(
    csv_value: &mut Value,
    c: &collect::Collected,
    opts: &Options,
    operator_image: Option<&str>,
) -> Result<()> {
    csv::map_at(csv_value, "metadata")?;
    let ann = csv::map_at(&mut csv_value["metadata"], "annotations")?;
    for key in TOOL_ANNOTATIONS {
        ann.remove(key);
    }
    if let Some(r) = &opts.skip_range {
        ann.insert("olm.skipRange".into(), json!(r));
    }
    if let Some(t) = &opts.created_at {
        ann.insert("createdAt".into(), json!(t));
    }
    // Only when some container runs the operator image: otherwise the annotation would name
    // an image the bundle does not run, and the base's value is the better guess.
    if let Some(reference) = operator_image {
        ann.insert("containerImage".into(), json!(reference));
    }
    if !c.custom_resources.is_empty() {
        ann.insert(
            "alm-examples".into(),
            json!(csv::alm_examples(&c.custom_resources)),
        );
    }
    // The project's own, last: what its recipe set after operator-sdk ran.
    let version = opts.version.to_string();
    for (k, v) in &opts.csv_annotations {
        ann.insert(k.clone(), json!(v.replace("{version}", &version)));
    }
    Ok(())
}

/// Every string of `v` (not the keys) with each (from, to) replaced in turn.
fn substitute(v: &mut Value, subs: &[(String, String)]) {
    if subs.is_empty() {
        return;
    }
    match v {
        Value::String(s) => {
            for (from, to) in subs {
                if s.contains(from.as_str()) {
                    *s = s.replace(from.as_str(), to);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| substitute(x, subs)),
        Value::Object(m) => m.values_mut().for_each(|x| substitute(x, subs)),
        _ => {}
    }
}

/// Formats seconds since the Unix epoch as RFC 3339 UTC (`2024-01-02T03:04:05Z`), for
/// `createdAt` from `SOURCE_DATE_EPOCH`.
pub fn rfc3339_from_epoch(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_formatting() {
        assert_eq!(rfc3339_from_epoch(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_from_epoch(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339_from_epoch(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn versions_are_strict() {
        assert!(parse_version("1.2.3").is_ok());
        assert!(parse_version("1.2.3-rc.1+build.5").is_ok());
        assert!(parse_version("v1.2.3").is_err());
        assert!(parse_version("1.2").is_err());
        assert!(parse_version("01.2.3").is_err());
    }

    #[test]
    fn replaces_accepts_version_or_name() {
        assert_eq!(csv_name("op", "0.1.0"), "op.v0.1.0");
        assert_eq!(csv_name("op", "v0.1.0"), "op.v0.1.0");
        assert_eq!(csv_name("op", "op.v0.1.0"), "op.v0.1.0");
    }
}

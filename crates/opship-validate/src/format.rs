//! Bundle-format rules (`BF…`): the directory layout, `metadata/annotations.yaml`, the media
//! type, which kinds may ship, object metadata, and the dependencies and properties files, as
//! operator-registry's `ValidateBundleFormat` and `ValidateBundleContent` check them.

use opship_core::bundle::ALLOWED_KINDS;
use opship_core::bundle::metadata::keys;
use opship_core::manifest::Object;
use serde_json::Value;

use crate::load::Bundle;
use crate::rule::{Finding, Rule};

rule!(
    BundleFormat,
    BF001,
    Error,
    Some("BundleNotValid"),
    "The bundle has a manifests/ directory",
    "A registry+v1 bundle keeps its Kubernetes manifests (the CSV, CRDs and other objects) in \
     manifests/. Generate the bundle with `opship generate bundle` or move the files there."
);
rule!(
    BundleFormat,
    BF002,
    Error,
    Some("BundleNotValid"),
    "The bundle has a metadata/ directory",
    "metadata/ holds annotations.yaml (package, channels, media type) and optionally \
     dependencies.yaml and properties.yaml. Without it no catalog can place the bundle."
);
rule!(
    BundleFormat,
    BF003,
    Error,
    Some("BundleNotValid"),
    "metadata/ holds exactly one annotations file",
    "One file in metadata/ (normally annotations.yaml) must have an `annotations:` map with the \
     bundle's package, channels and media type."
);
rule!(
    BundleFormat,
    BF004,
    Error,
    Some("BundleNotValid"),
    "The required bundle annotations are present",
    "annotations.yaml needs operators.operatorframework.io.bundle.{mediatype,manifests,metadata,\
     package,channels}.v1. opm and OLM read the package and channels from here."
);
rule!(
    BundleFormat,
    BF005,
    Error,
    Some("BundleNotValid"),
    "Channels are non-empty, the default channel is non-empty when set",
    "channels.v1 is a comma-separated list of channel names and must name at least one; \
     channel.default.v1 is optional but must not be empty when present."
);
rule!(
    BundleFormat,
    BF006,
    Error,
    Some("BundleNotValid"),
    "The media type annotation matches the bundle's content",
    "mediatype.v1 must be `registry+v1` for a bundle with a ClusterServiceVersion (`helm` for a \
     chart, `plain` otherwise), and manifests.v1/metadata.v1 must name the directories."
);
rule!(
    BundleFormat,
    BF007,
    Error,
    Some("BundleNotValid"),
    "No subdirectories inside manifests/ or metadata/",
    "The bundle loader of operator-registry fails on a directory inside manifests/. Flatten the \
     files into manifests/."
);
rule!(
    BundleFormat,
    BF008,
    Error,
    Some("BundleNotValid"),
    "Every bundle file is readable YAML (UTF-8, parseable, within size limits)",
    "A file that cannot be parsed makes the whole bundle unloadable for OLM. The finding points \
     at the line and column the parser stopped at."
);
rule!(
    BundleFormat,
    BF009,
    Error,
    Some("BundleNotValid"),
    "Every manifest document is a Kubernetes object with apiVersion and kind",
    "Each YAML document in manifests/ must be a mapping with non-empty `apiVersion` and `kind`."
);
rule!(
    BundleFormat,
    BF010,
    Error,
    Some("BundleNotValid"),
    "Only kinds OLM can install are in manifests/",
    "OLM installs the CSV, CRDs, RBAC, ServiceAccounts, Services, Secrets, ConfigMaps, \
     monitoring objects, PDBs, PriorityClasses, VPAs, NetworkPolicies and console objects. \
     Deployments belong inside the CSV's install strategy; other kinds are refused."
);
rule!(
    BundleFormat,
    BF011,
    Error,
    Some("BundleNotValid"),
    "The bundle has exactly one ClusterServiceVersion",
    "A registry+v1 bundle describes one operator version with one CSV."
);
rule!(
    BundleFormat,
    BF012,
    Error,
    Some("BundleNotValid"),
    "Every object has valid metadata (name present and well-formed)",
    "Objects other than the CSV and CRDs are created as they are; their metadata.name must be a \
     valid Kubernetes name (RBAC objects allow path-segment names such as `system:foo`)."
);
rule!(
    BundleFormat,
    BF013,
    Error,
    Some("BundleNotValid"),
    "dependencies.yaml entries are well-formed",
    "Each dependency has a known `type`: olm.package {packageName, version: semver range}, \
     olm.gvk {group, version, kind}, olm.label {label} or olm.constraint {failureMessage and \
     one of cel, all, any, not, gvk, package}."
);
rule!(
    BundleFormat,
    BF014,
    Error,
    Some("BundleNotValid"),
    "properties.yaml entries are well-formed",
    "`properties:` is a list of {type, value} with a non-empty string type; opm copies them \
     into the catalog."
);
rule!(
    BundleFormat,
    BF015,
    Warning,
    None,
    "bundle.Dockerfile labels agree with annotations.yaml",
    "The bundle image's labels come from bundle.Dockerfile, while `opm` and the directory \
     loaders read annotations.yaml. When they disagree the image and the directory describe \
     different packages or channels. Regenerate both with `opship generate bundle`."
);

rule!(
    BundleFormat,
    BF016,
    Warning,
    None,
    "Annotation values are strings",
    "Bundle annotations are a map of strings. An unquoted `true` or `1` is read as text by \
     Go's YAML decoder but as a bool or number by others; quote the value."
);
rule!(
    BundleFormat,
    BF017,
    Warning,
    None,
    "No mapping key is given twice",
    "YAML forbids repeated keys in one mapping. The reference tools silently keep one of the \
     values, so what the cluster sees may not be what the author meant. Remove the duplicate."
);

rule!(
    BundleFormat,
    BF018,
    Warning,
    None,
    "Bundle image labels agree with annotations.yaml",
    "opm and OLM classify a bundle image by its config labels (the package label above all) \
     and read package and channels from them, while directory tools read \
     metadata/annotations.yaml. An image whose labels disagree with the annotations inside it \
     is a different bundle depending on who reads it. A missing package label is an error: \
     opm cannot tell the image is a bundle. Rebuild the image with `opship build`."
);

rule!(
    BundleFormat,
    BF019,
    Warning,
    None,
    "Field names are spelt as the API defines them, case included",
    "OLM and operator-framework/api decode the ClusterServiceVersion and the annotations, \
     dependencies and properties files with Go's encoding/json, which takes a key that differs \
     from a field name only in case (`ApiVersion`, `MinKubeVersion`) as that field. opship reads \
     it the same way, so the verdict is OLM's, and warns: the Kubernetes API server, kubectl, \
     kustomize and most other tools are case-sensitive and ignore or reject such a key. Rename \
     it to the exact spelling the finding gives."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[
    &BF001, &BF002, &BF003, &BF004, &BF005, &BF006, &BF007, &BF008, &BF009, &BF010, &BF011, &BF012,
    &BF013, &BF014, &BF015, &BF016, &BF017, &BF018, &BF019,
];

/// Reports the keys the loader renamed to their Go field's spelling (rule BF019).
pub(crate) fn go_case(b: &mut Bundle, renamed: Vec<crate::gofields::Renamed>) {
    for r in renamed {
        let also = match (r.both, r.kept) {
            (false, _) => String::new(),
            (true, true) => format!("; `{}` is given too, and this value wins", r.field),
            (true, false) => format!("; `{}` is given too, and its value wins", r.field),
        };
        b.findings.push(
            Finding::new(
                &BF019,
                &b.name,
                format!(
                    "key `{}` is read as `{}` (Go's decoder ignores case, as OLM does); \
                     case-sensitive tools ignore it: write `{}`{also}",
                    r.key, r.path, r.field
                ),
            )
            .at(r.origin),
        );
    }
}

/// Runs the format checks that need the whole loaded bundle; called by the loader.
pub(crate) fn check_loaded(b: &mut Bundle) {
    let mut out = Vec::new();
    annotations(b, &mut out);
    objects(b, &mut out);
    dependencies(b, &mut out);
    properties(b, &mut out);
    dockerfile(b, &mut out);
    b.findings.extend(out);
}

fn annotations(b: &Bundle, out: &mut Vec<Finding>) {
    let has_metadata = !b.findings.iter().any(|f| f.rule.id == "BF002");
    let Some(a) = &b.annotations else {
        if has_metadata && !b.rejected_annotations.is_empty() {
            for (at, why) in &b.rejected_annotations {
                out.push(Finding::new(&BF003, &b.name, why.clone()).at(at.clone()));
            }
        } else if has_metadata {
            out.push(
                Finding::new(
                    &BF003,
                    &b.name,
                    "no annotations file in metadata/ (a YAML file with an `annotations:` map)",
                )
                .at(crate::load::file_origin(&b.root.join("metadata"))),
            );
        }
        return;
    };
    for key in [
        keys::MEDIATYPE,
        keys::MANIFESTS,
        keys::METADATA,
        keys::PACKAGE,
        keys::CHANNELS,
    ] {
        if !a.values.contains_key(key) {
            out.push(
                Finding::new(&BF004, &b.name, format!("annotation `{key}` is missing"))
                    .at(a.doc.origin("/annotations")),
            );
        }
    }
    if let Some(ch) = a.get(keys::CHANNELS)
        && ch.split(',').all(|c| c.trim().is_empty())
    {
        out.push(
            Finding::new(&BF005, &b.name, "channels annotation names no channel")
                .at(a.origin(keys::CHANNELS)),
        );
    }
    if let Some(d) = a.get(keys::DEFAULT_CHANNEL)
        && d.trim().is_empty()
    {
        out.push(
            Finding::new(&BF005, &b.name, "default channel annotation is empty")
                .at(a.origin(keys::DEFAULT_CHANNEL)),
        );
    }
    if let Some(mt) = a.get(keys::MEDIATYPE)
        && manifests_loaded(b)
    {
        let detected = if b.csv().is_some() {
            "registry+v1"
        } else if b
            .files
            .iter()
            .any(|f| f.path.file_name().is_some_and(|n| n == "Chart.yaml"))
        {
            "helm"
        } else {
            "plain"
        };
        if mt != detected {
            out.push(
                Finding::new(
                    &BF006,
                    &b.name,
                    format!("media type is `{mt}` but the content is {detected}"),
                )
                .at(a.origin(keys::MEDIATYPE)),
            );
        }
    }
    for (key, dir) in [
        (keys::MANIFESTS, "manifests/"),
        (keys::METADATA, "metadata/"),
    ] {
        if let Some(v) = a.get(key)
            && v.trim_start_matches("./").trim_end_matches('/') != dir.trim_end_matches('/')
        {
            out.push(
                Finding::new(
                    &BF006,
                    &b.name,
                    format!("`{key}` is `{v}`, expected `{dir}`"),
                )
                .at(a.origin(key)),
            );
        }
    }
}

/// Whether every file of manifests/ was read: otherwise the objects are not the bundle's
/// content, and rules about that content (one CSV, the media type) would only add noise to the
/// finding that says why.
fn manifests_loaded(b: &Bundle) -> bool {
    let manifests = b.root.join("manifests");
    !b.findings.iter().any(|f| {
        f.rule.id == "BF001"
            || (matches!(f.rule.id, "BF008" | "BF009")
                && f.level == crate::Level::Error
                && f.location
                    .as_ref()
                    .is_some_and(|o| o.file.starts_with(&manifests)))
    })
}

fn objects(b: &Bundle, out: &mut Vec<Finding>) {
    let csvs: Vec<&Object> = b
        .objects
        .iter()
        .filter(|o| o.kind() == "ClusterServiceVersion")
        .collect();
    let loaded = manifests_loaded(b);
    match csvs.len() {
        0 if loaded => out.push(
            Finding::new(&BF011, &b.name, "no ClusterServiceVersion in manifests/")
                .at(crate::load::file_origin(&b.root.join("manifests"))),
        ),
        0 | 1 => {}
        n => {
            for extra in &csvs[1..] {
                out.push(
                    Finding::new(
                        &BF011,
                        &b.name,
                        format!(
                            "{n} ClusterServiceVersions; {} is one too many",
                            extra.describe()
                        ),
                    )
                    .at(extra.origin()),
                );
            }
        }
    }
    for o in &b.objects {
        if !ALLOWED_KINDS.contains(&o.kind()) {
            out.push(
                Finding::new(
                    &BF010,
                    &b.name,
                    format!(
                        "{} ({}) cannot be part of a registry+v1 bundle",
                        o.describe(),
                        o.api_version()
                    ),
                )
                .at(o.origin_of("/kind")),
            );
            continue;
        }
        if matches!(
            o.kind(),
            "ClusterServiceVersion" | "CustomResourceDefinition"
        ) {
            continue;
        }
        let name = o.name();
        let rbac = matches!(
            o.kind(),
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding"
        );
        let problem = if o.value()["metadata"]["name"].is_null() {
            Some("metadata.name is missing".to_owned())
        } else if rbac {
            path_segment_problem(name)
        } else {
            dns1123_subdomain_problem(name)
        };
        if let Some(p) = problem {
            out.push(
                Finding::new(&BF012, &b.name, format!("{}: {p}", o.describe()))
                    .at(o.origin_of("/metadata/name")),
            );
        }
    }
}

/// Why `name` is not a DNS-1123 subdomain (what Kubernetes requires of most object names).
pub fn dns1123_subdomain_problem(name: &str) -> Option<String> {
    opship_core::naming::dns1123_subdomain_problem(name)
}

fn path_segment_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("metadata.name is empty".into());
    }
    if name == "." || name == ".." || name.contains('/') || name.contains('%') {
        return Some(format!(
            "name `{name}` may not be `.` or `..` or contain `/` or `%`"
        ));
    }
    None
}

fn dependencies(b: &Bundle, out: &mut Vec<Finding>) {
    let Some(doc) = &b.dependencies else { return };
    let Some(list) = doc.value["dependencies"].as_array() else {
        out.push(
            Finding::new(&BF013, &b.name, "`dependencies` must be a list")
                .at(doc.origin("/dependencies")),
        );
        return;
    };
    for (i, dep) in list.iter().enumerate() {
        let ptr = format!("/dependencies/{i}");
        let mut bad = |msg: String, sub: &str| {
            out.push(Finding::new(&BF013, &b.name, msg).at(doc.origin(&format!("{ptr}{sub}"))));
        };
        let ty = dep["type"].as_str().unwrap_or_default();
        let value = &dep["value"];
        match ty {
            "olm.package" => {
                if value["packageName"].as_str().is_none_or(str::is_empty) {
                    bad(
                        "olm.package dependency needs a packageName".into(),
                        "/value",
                    );
                }
                match value["version"].as_str() {
                    None | Some("") => bad(
                        "olm.package dependency needs a version range".into(),
                        "/value",
                    ),
                    Some(r) => {
                        if let Err(e) = opship_core::semver_range::parse(r) {
                            bad(
                                format!("invalid version range `{r}`: {e}"),
                                "/value/version",
                            );
                        }
                    }
                }
            }
            "olm.gvk" => {
                for field in ["group", "version", "kind"] {
                    if value[field].as_str().is_none_or(str::is_empty) {
                        bad(format!("olm.gvk dependency needs `{field}`"), "/value");
                    }
                }
            }
            "olm.label" => {
                if value["label"].as_str().is_none_or(str::is_empty) {
                    bad("olm.label dependency needs `label`".into(), "/value");
                }
            }
            "olm.constraint" => {
                if let Some(p) = constraint_problem(value) {
                    bad(format!("olm.constraint: {p}"), "/value");
                }
            }
            "" => bad("dependency has no `type`".into(), ""),
            other => bad(
                format!(
                    "unknown dependency type `{other}` (olm.package, olm.gvk, olm.label or \
                     olm.constraint)"
                ),
                "/type",
            ),
        }
    }
}

/// Why a compound `olm.constraint` value is malformed. Unlike the reference, which only reads
/// the CEL form, `all`, `any`, `not`, `gvk` and `package` constraints are understood.
fn constraint_problem(v: &Value) -> Option<String> {
    let Some(map) = v.as_object() else {
        return Some("the value must be a mapping".into());
    };
    let kinds: Vec<&str> = ["cel", "all", "any", "not", "gvk", "package"]
        .into_iter()
        .filter(|k| map.contains_key(*k))
        .collect();
    match kinds.as_slice() {
        [] => Some("needs one of cel, all, any, not, gvk or package".into()),
        ["cel"] => v["cel"]["rule"]
            .as_str()
            .is_none_or(str::is_empty)
            .then(|| "cel.rule is missing".into()),
        [k @ ("all" | "any" | "not")] => {
            let Some(cs) = v[*k]["constraints"].as_array() else {
                return Some(format!("{k}.constraints must be a list"));
            };
            cs.iter().find_map(constraint_problem)
        }
        ["gvk"] => ["group", "version", "kind"]
            .iter()
            .find(|f| v["gvk"][**f].as_str().is_none_or(str::is_empty))
            .map(|f| format!("gvk.{f} is missing")),
        ["package"] => v["package"]["packageName"]
            .as_str()
            .is_none_or(str::is_empty)
            .then(|| "package.packageName is missing".into()),
        many => Some(format!(
            "has several constraint kinds at once: {}",
            many.join(", ")
        )),
    }
}

fn properties(b: &Bundle, out: &mut Vec<Finding>) {
    let Some(doc) = &b.properties else { return };
    let Some(list) = doc.value["properties"].as_array() else {
        out.push(
            Finding::new(&BF014, &b.name, "`properties` must be a list")
                .at(doc.origin("/properties")),
        );
        return;
    };
    for (i, p) in list.iter().enumerate() {
        if p["type"].as_str().is_none_or(str::is_empty) {
            out.push(
                Finding::new(&BF014, &b.name, "property has no `type`")
                    .at(doc.origin(&format!("/properties/{i}"))),
            );
        } else if p.get("value").is_none() {
            out.push(
                Finding::new(&BF014, &b.name, "property has no `value`")
                    .at(doc.origin(&format!("/properties/{i}"))),
            );
        }
    }
}

/// Compares an image's config labels with the bundle's annotations (rule BF018); called by
/// the image loaders.
pub(crate) fn check_labels(b: &mut Bundle, labels: &std::collections::BTreeMap<String, String>) {
    let Some(a) = &b.annotations else { return };
    let mut out = Vec::new();
    for key in [
        keys::MEDIATYPE,
        keys::MANIFESTS,
        keys::METADATA,
        keys::PACKAGE,
        keys::CHANNELS,
        keys::DEFAULT_CHANNEL,
    ] {
        let finding = match (a.get(key), labels.get(key)) {
            (Some(av), Some(lv)) if av != lv => Finding::new(
                &BF018,
                &b.name,
                format!("image label `{key}` is `{lv}` but annotations.yaml says `{av}`"),
            ),
            (Some(av), None) => {
                let f = Finding::new(
                    &BF018,
                    &b.name,
                    format!("the image has no label `{key}` (annotations.yaml: `{av}`)"),
                );
                if key == keys::PACKAGE {
                    f.with_level(crate::Level::Error)
                } else {
                    f
                }
            }
            (None, Some(lv)) => Finding::new(
                &BF018,
                &b.name,
                format!("image label `{key}={lv}` is not in annotations.yaml"),
            ),
            _ => continue,
        };
        out.push(finding.at(a.origin(key)));
    }
    b.findings.extend(out);
}

fn dockerfile(b: &Bundle, out: &mut Vec<Finding>) {
    let (Some((path, text)), Some(a)) = (&b.dockerfile, &b.annotations) else {
        return;
    };
    let mut labels = std::collections::BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("LABEL ") else {
            continue;
        };
        if let Some((k, v)) = rest.trim().split_once('=') {
            labels.insert(
                k.trim().to_owned(),
                (v.trim().trim_matches('"').to_owned(), n + 1),
            );
        }
    }
    let line_of = |n: usize| opship_core::yaml::Origin {
        file: std::sync::Arc::from(path.as_path()),
        pos: opship_core::yaml::Pos {
            line: u32::try_from(n).unwrap_or(0),
            col: 1,
        },
    };
    for key in [
        keys::MEDIATYPE,
        keys::MANIFESTS,
        keys::METADATA,
        keys::PACKAGE,
        keys::CHANNELS,
        keys::DEFAULT_CHANNEL,
    ] {
        match (a.get(key), labels.get(key)) {
            (Some(av), Some((lv, n))) if av != lv => out.push(
                Finding::new(
                    &BF015,
                    &b.name,
                    format!("label `{key}` is `{lv}` but annotations.yaml says `{av}`"),
                )
                .at(line_of(*n)),
            ),
            (Some(av), None) => out.push(
                Finding::new(
                    &BF015,
                    &b.name,
                    format!("bundle.Dockerfile lacks label `{key}` (annotations.yaml: `{av}`)"),
                )
                .at(crate::load::file_origin(path)),
            ),
            (None, Some((lv, n))) => out.push(
                Finding::new(
                    &BF015,
                    &b.name,
                    format!("label `{key}={lv}` is not in annotations.yaml"),
                )
                .at(line_of(*n)),
            ),
            _ => {}
        }
    }
}

//! Bundle rules (`BND…`): the `BundleValidator` of operator-framework/api (`bundle.go`): CRDs
//! against the CSV's owned list, service accounts shipped next to the CSV, the compressed size
//! limit; the newer `spec.release` naming and relatedImages pullspec rules; and an
//! opship-only check that a relatedImages list is complete.
//!
//! Findings are about the bundle as a whole and name it by its directory, as the reference
//! names them by the bundle's version (the two agree for every corpus bundle).

use std::collections::{BTreeMap, BTreeSet};

use opship_core::bundle::metadata::keys;
use opship_core::manifest::Object;
use serde_json::Value;

use crate::Options;
use crate::load::Bundle;
use crate::rule::{Finding, Level, Rule};

rule!(
    Bundle,
    BND001,
    Error,
    Some("BundleNotValid"),
    "No CRD group/version/kind is defined twice in the bundle",
    "Two CRD manifests serve the same group, version and kind (typically a v1 and a v1beta1 \
     copy of one CRD). Only one can be applied; keep a single apiextensions.k8s.io/v1 CRD."
);
rule!(
    Bundle,
    BND002,
    Error,
    Some("BundleNotValid"),
    "Every owned CRD of the CSV is in the bundle",
    "Each spec.customresourcedefinitions.owned entry (group from its name after the first '.', \
     version, kind) must match a version of a CRD manifest in manifests/. OLM refuses to \
     install a CSV whose owned CRDs it cannot create. Add the CRD file or fix the entry."
);
rule!(
    Bundle,
    BND003,
    Error,
    Some("BundleNotValid"),
    "Every CRD in the bundle is owned by the CSV",
    "A CRD manifest whose group and kind the CSV does not list under \
     spec.customresourcedefinitions.owned is installed without an owner; the console does not \
     show it and upgrades do not manage it. Add it to the owned list (one entry per served \
     version) or remove the file."
);
rule!(
    Bundle,
    BND004,
    Error,
    Some("BundleNotValid"),
    "No ServiceAccount manifest has the name of a CSV deployment's service account",
    "OLM creates the service accounts the CSV's deployments name and owns them; a \
     ServiceAccount manifest of the same name conflicts with that. Remove the manifest, or \
     rename it if a separate account was intended."
);
rule!(
    Bundle,
    BND005,
    Error,
    Some("BundleNotValid"),
    "The bundle's gzip-compressed size stays under 1 MiB",
    "OLM stages a bundle in one ConfigMap, and Kubernetes objects are limited to about 1 MiB; \
     the reference measures each file gzip-compressed and sums the sizes. Above 85% this is a \
     warning. Shrink CRD descriptions (controller-gen `crd:maxDescLen=0`) or split the \
     operator."
);
rule!(
    Bundle,
    BND006,
    Error,
    Some("BundleNotValid"),
    "With spec.release, the CSV is named <package>-v<version>-<release>",
    "Newer OLM and opm (operator-framework/api >= 0.37) identify a release of a version by \
     spec.release and require the bundle name `<package>-v<version>-<release>`; release also \
     replaces the legacy olm.substitutesFor annotation, so both cannot be set."
);
rule!(
    Bundle,
    BND007,
    Error,
    Some("BundleNotValid"),
    "Every relatedImages entry is a valid image reference",
    "spec.relatedImages[].image is what mirroring tools copy for disconnected installs; an \
     empty or malformed reference (upper-case repository, bad tag or digest) breaks them. \
     Newer operator-framework/api (>= 0.40) rejects it. Use `registry/repo@sha256:<64 hex>`."
);
rule!(
    Bundle,
    BND008,
    Warning,
    None,
    "A relatedImages list includes every deployment container image",
    "When a CSV lists relatedImages, mirroring for disconnected clusters relies on it; an \
     image used by a deployment's container or init container but missing from the list is \
     not mirrored and the pod fails to pull. Add the image to spec.relatedImages."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[
    &BND001, &BND002, &BND003, &BND004, &BND005, &BND006, &BND007, &BND008,
];

/// Bundles whose files gzip to more than this fail the size rule (1 MiB, as in the reference).
pub const SIZE_LIMIT: u64 = 1024 * 1024;

/// Runs the suite.
pub(crate) fn check(b: &Bundle, _opts: &Options, out: &mut Vec<Finding>) {
    size(b, out);
    let Some(csv) = b.csv() else { return };
    crds(b, csv, out);
    service_accounts(b, csv, out);
    release(b, csv, out);
    related_images(b, csv, out);
}

/// A group/version/kind served by a CRD or owned by the CSV.
type Gvk = (String, String, String);

fn gvk_string((g, v, k): &Gvk) -> String {
    format!("{g}/{v}, Kind={k}")
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

/// The file of an object, relative to the bundle root.
fn rel(b: &Bundle, o: &Object) -> String {
    let file = &o.doc.file;
    file.strip_prefix(&b.root)
        .unwrap_or(file)
        .display()
        .to_string()
}

/// BND001–BND003.
fn crds(b: &Bundle, csv: &Object, out: &mut Vec<Finding>) {
    // Every served (group, version, kind) with where it is defined.
    let mut served: Vec<(Gvk, &Object, String)> = Vec::new();
    for crd in b.crds() {
        let spec = &crd.value()["spec"];
        let group = str_at(spec, "group").to_owned();
        let kind = str_at(&spec["names"], "kind").to_owned();
        let versions = spec["versions"].as_array().map(Vec::as_slice);
        let v1beta1 = crd.api_version() == "apiextensions.k8s.io/v1beta1";
        if crd.api_version() != "apiextensions.k8s.io/v1" && !v1beta1 {
            continue;
        }
        match versions {
            Some(vs) if !vs.is_empty() => {
                for (i, v) in vs.iter().enumerate() {
                    served.push((
                        (group.clone(), str_at(v, "name").to_owned(), kind.clone()),
                        crd,
                        format!("/spec/versions/{i}/name"),
                    ));
                }
            }
            _ if v1beta1 => served.push((
                (
                    group.clone(),
                    str_at(spec, "version").to_owned(),
                    kind.clone(),
                ),
                crd,
                "/spec/version".to_owned(),
            )),
            _ => {}
        }
    }

    let mut keys: BTreeMap<Gvk, (&Object, String)> = BTreeMap::new();
    for (gvk, crd, ptr) in &served {
        if let Some((first, _)) = keys.get(gvk) {
            out.push(
                Finding::new(
                    &BND001,
                    &b.name,
                    format!(
                        "CRD {} is served by {} ({}) and again by this {} CRD",
                        gvk_string(gvk),
                        first.describe(),
                        rel(b, first),
                        crd.api_version()
                    ),
                )
                .at(crd.origin_of(ptr)),
            );
        }
        keys.insert(gvk.clone(), (crd, ptr.clone()));
    }

    let owned = csv.value()["spec"]["customresourcedefinitions"]["owned"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut owned_gk: BTreeSet<(String, String)> = BTreeSet::new();
    for (i, o) in owned.iter().enumerate() {
        let name = str_at(o, "name");
        let group = name.split_once('.').map_or(name, |(_, g)| g);
        let gvk: Gvk = (
            group.to_owned(),
            str_at(o, "version").to_owned(),
            str_at(o, "kind").to_owned(),
        );
        // As in the reference, a key is consumed by the first owned entry that matches it.
        if keys.remove(&gvk).is_some() {
            owned_gk.insert((gvk.0.clone(), gvk.2.clone()));
        } else {
            let listed_before = owned[..i].iter().any(|p| {
                str_at(p, "name") == name
                    && str_at(p, "version") == gvk.1
                    && str_at(p, "kind") == gvk.2
            });
            let message = if listed_before {
                format!(
                    "owned CRD {} is listed twice in the CSV; the second entry matches no CRD",
                    gvk_string(&gvk)
                )
            } else {
                format!(
                    "owned CRD {} (from `{name}`) has no CRD manifest in the bundle",
                    gvk_string(&gvk)
                )
            };
            out.push(
                Finding::new(&BND002, &b.name, message)
                    .at(csv.origin_of(&format!("/spec/customresourcedefinitions/owned/{i}"))),
            );
        }
    }
    for (gvk, (crd, ptr)) in keys {
        if owned_gk.contains(&(gvk.0.clone(), gvk.2.clone())) {
            continue;
        }
        out.push(
            Finding::new(
                &BND003,
                &b.name,
                format!(
                    "CRD \"{}\" is present in bundle \"{}\" but not defined in CSV (add it to \
                     spec.customresourcedefinitions.owned)",
                    gvk_string(&gvk),
                    csv.name()
                ),
            )
            .at(crd.origin_of(&ptr)),
        );
    }
}

/// BND004.
fn service_accounts(b: &Bundle, csv: &Object, out: &mut Vec<Finding>) {
    let deployments = csv.value()["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let names: BTreeSet<&str> = deployments
        .iter()
        .map(|d| str_at(&d["spec"]["template"]["spec"], "serviceAccountName"))
        .collect();
    for o in b.others() {
        if o.kind() != "ServiceAccount" || o.api_version() != "v1" {
            continue;
        }
        if names.contains(o.name()) {
            out.push(
                Finding::new(
                    &BND004,
                    &b.name,
                    format!(
                        "ServiceAccount `{}` is also the service account of a CSV deployment; \
                         OLM creates that one. Remove this manifest, or rename it in the \
                         manifest or the CSV if a separate account was intended",
                        o.name()
                    ),
                )
                .at(o.origin_of("/metadata/name")),
            );
        }
    }
}

/// Bytes as the reference prints them (decimal units).
fn human(n: u64) -> String {
    if n < 1000 {
        return format!("{n} B");
    }
    let mut div = 1000u64;
    let mut exp = 0usize;
    let mut m = n / 1000;
    while m >= 1000 {
        div *= 1000;
        exp += 1;
        m /= 1000;
    }
    #[allow(clippy::cast_precision_loss)]
    let v = n as f64 / div as f64;
    format!("{v:.1} {}B", ["k", "M", "G", "T", "P", "E"][exp.min(5)])
}

/// BND005.
fn size(b: &Bundle, out: &mut Vec<Finding>) {
    let gz = b.gzip_size();
    let raw: u64 = b.files.iter().map(|f| f.size).sum();
    // 85% of the limit, as the reference computes it.
    let warn = SIZE_LIMIT * 85 / 100;
    let (level, what) = if gz > SIZE_LIMIT {
        (Level::Error, "exceeds")
    } else if gz > warn {
        (Level::Warning, "is over 85% of")
    } else {
        return;
    };
    out.push(
        Finding::new(
            &BND005,
            &b.name,
            format!(
                "the bundle's files gzip to ~{} ({gz} bytes), which {what} the limit of 1 MiB \
                 ({SIZE_LIMIT} bytes); uncompressed they are {}",
                human(gz),
                human(raw)
            ),
        )
        .with_level(level)
        .at(crate::load::file_origin(&b.root)),
    );
}

/// BND006.
fn release(b: &Bundle, csv: &Object, out: &mut Vec<Finding>) {
    let spec = &csv.value()["spec"];
    let Some(release) = spec["release"].as_str().filter(|r| !r.is_empty()) else {
        return;
    };
    if csv.value()["metadata"]["annotations"]
        .get("olm.substitutesFor")
        .is_some()
    {
        out.push(
            Finding::new(
                &BND006,
                &b.name,
                "spec.release and the olm.substitutesFor annotation are both set; release \
                 replaces substitutesFor, remove the annotation",
            )
            .at(csv.origin_of("/metadata/annotations/olm.substitutesFor")),
        );
    }
    let Some(package) = b.annotations.as_ref().and_then(|a| a.get(keys::PACKAGE)) else {
        return;
    };
    let version = str_at(spec, "version");
    let version = crate::csv::parse_tolerant(version)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| version.to_owned());
    let want = format!("{package}-v{version}-{release}");
    if csv.name() != want {
        out.push(
            Finding::new(
                &BND006,
                &b.name,
                format!(
                    "spec.release is `{release}`, so the CSV must be named `{want}`, not `{}`",
                    csv.name()
                ),
            )
            .at(csv.origin_of("/metadata/name")),
        );
    }
}

/// Container images of the CSV's deployments, with where each is set.
fn deployment_images(csv: &Object) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let deployments = csv.value()["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, d) in deployments.iter().enumerate() {
        for list in ["initContainers", "containers"] {
            let cs = d["spec"]["template"]["spec"][list]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            for (j, c) in cs.iter().enumerate() {
                if let Some(img) = c["image"].as_str()
                    && !img.is_empty()
                {
                    out.push((
                        img.to_owned(),
                        format!(
                            "/spec/install/spec/deployments/{i}/spec/template/spec/{list}/{j}/image"
                        ),
                    ));
                }
            }
        }
    }
    out
}

/// BND007, BND008.
fn related_images(b: &Bundle, csv: &Object, out: &mut Vec<Finding>) {
    let related = csv.value()["spec"]["relatedImages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut listed = BTreeSet::new();
    for (i, r) in related.iter().enumerate() {
        // A non-string image is reported by CSV018.
        let image = match &r["image"] {
            Value::String(s) => s.as_str(),
            Value::Null => "",
            _ => continue,
        };
        listed.insert(image);
        let problem = if image.is_empty() {
            Some("image is empty".to_owned())
        } else {
            opship_core::naming::image_reference_problem(image)
                .map(|p| format!("`{image}` is not a valid image reference: {p}"))
        };
        if let Some(p) = problem {
            out.push(
                Finding::new(&BND007, &b.name, format!("relatedImages[{i}]: {p}"))
                    .at(csv.origin_of(&format!("/spec/relatedImages/{i}"))),
            );
        }
    }
    if related.is_empty() {
        return;
    }
    let mut reported = BTreeSet::new();
    for (img, ptr) in deployment_images(csv) {
        if !listed.contains(img.as_str()) && reported.insert(img.clone()) {
            out.push(
                Finding::new(
                    &BND008,
                    &b.name,
                    format!("deployment image `{img}` is not listed in spec.relatedImages"),
                )
                .at(csv.origin_of(&ptr)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sized(gzip_size: u64) -> Vec<Finding> {
        let mut b = crate::load::load_files(std::path::Path::new("big"), Vec::new());
        b.files.push(crate::load::FileInfo {
            path: "manifests/x.yaml".into(),
            size: gzip_size * 4,
            gzip_size,
        });
        let mut out = Vec::new();
        size(&b, &mut out);
        out
    }

    #[test]
    fn size_levels() {
        assert!(sized(SIZE_LIMIT * 85 / 100).is_empty());
        let warn = sized(SIZE_LIMIT * 85 / 100 + 1);
        assert_eq!(warn.len(), 1);
        assert_eq!(warn[0].level, Level::Warning);
        assert_eq!(sized(SIZE_LIMIT)[0].level, Level::Warning);
        let err = sized(SIZE_LIMIT + 1);
        assert_eq!(err[0].level, Level::Error);
        assert!(err[0].message.contains("exceeds"), "{}", err[0].message);
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(999), "999 B");
        assert_eq!(human(1_048_576), "1.0 MB");
        assert_eq!(human(891_290), "891.3 kB");
    }
}

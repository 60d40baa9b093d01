//! Rendering a bundle (directory or unpacked image) into the `olm.bundle` blob `opm render`
//! makes: properties from the CSV, CRDs, `dependencies.yaml`, `properties.yaml` and the
//! `olm.properties` annotation, in opm's order; `olm.bundle.object` per manifest or one
//! `olm.csv.metadata`; related images from the CSV, its deployments and the bundle itself.

use std::collections::BTreeSet;
use std::path::Path;

use base64::Engine;
use opship_validate::load::Bundle as Loaded;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::gojson;
use crate::model::{Bundle, Property, RelatedImage};

/// The annotation that names the package.
pub const PACKAGE_ANNOTATION: &str = "operators.operatorframework.io.bundle.package.v1";

/// How the CSV is carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CsvFormat {
    /// One `olm.bundle.object` per manifest (OpenShift 4.16 and older, opm's default).
    #[default]
    BundleObject,
    /// One `olm.csv.metadata` and no bundle objects (OpenShift 4.17 and newer).
    CsvMetadata,
}

impl CsvFormat {
    /// The format named in `opship.yaml` and on the command line: `bundle-object` or
    /// `csv-metadata`.
    pub fn parse(name: &str) -> Option<CsvFormat> {
        match name {
            "bundle-object" => Some(CsvFormat::BundleObject),
            "csv-metadata" => Some(CsvFormat::CsvMetadata),
            _ => None,
        }
    }

    /// The format OpenShift `version` (`MAJOR.MINOR`, a leading `v` allowed) needs: 4.17
    /// and newer require `olm.csv.metadata`, 4.16 and older forbid it. `None` when it is
    /// not `MAJOR.MINOR`.
    pub fn for_openshift(version: &str) -> Option<CsvFormat> {
        let t = version.trim().trim_start_matches('v');
        let (major, minor) = t.split_once('.')?;
        let parsed = (major.parse::<u64>().ok()?, minor.parse::<u64>().ok()?);
        Some(if parsed >= (4, 17) {
            CsvFormat::CsvMetadata
        } else {
            CsvFormat::BundleObject
        })
    }
}

/// Renders the bundle directory `dir` with `image` as its image reference.
pub fn render_dir(dir: &Path, image: &str, format: CsvFormat) -> Result<Bundle> {
    let loaded = opship_validate::load::load_dir_keys(dir, opship_validate::load::Keys::AsWritten)
        .map_err(|e| Error::Render {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?;
    render_loaded(&loaded, image, format)
}

/// Renders the bundle image tagged `tag` in the OCI layout `layout`.
pub fn render_layout(
    layout: &Path,
    tag: &str,
    shown: &Path,
    image: &str,
    format: CsvFormat,
) -> Result<Bundle> {
    let loaded = opship_validate::load::load_layout_keys(
        layout,
        tag,
        shown,
        opship_validate::load::Keys::AsWritten,
    )
    .map_err(|e| Error::Render {
        path: shown.to_path_buf(),
        message: e.to_string(),
    })?;
    render_loaded(&loaded, image, format)
}

/// Whether a directory looks like a bundle (has `manifests/` and `metadata/`), as opm decides.
pub fn is_bundle_dir(dir: &Path) -> bool {
    dir.join("manifests").is_dir() && dir.join("metadata").is_dir()
}

fn fail(b: &Loaded, message: impl Into<String>) -> Error {
    Error::Render {
        path: b.root.clone(),
        message: message.into(),
    }
}

/// Renders a loaded bundle.
pub fn render_loaded(b: &Loaded, image: &str, format: CsvFormat) -> Result<Bundle> {
    // opm decodes one object per manifest file and keeps only the first CSV.
    let mut objects: Vec<&Value> = Vec::new();
    let mut seen_files = BTreeSet::new();
    let mut csv: Option<&Value> = None;
    for o in &b.objects {
        if !seen_files.insert(o.doc.file.clone()) {
            continue;
        }
        if o.kind() == "ClusterServiceVersion" {
            if csv.is_some() {
                continue;
            }
            csv = Some(o.value());
        }
        objects.push(o.value());
    }
    if objects.is_empty() {
        return Err(fail(b, "no bundle objects found"));
    }
    let csv = csv.ok_or_else(|| fail(b, "no csv in bundle"))?;
    let annotations = b
        .annotations
        .as_ref()
        .ok_or_else(|| fail(b, "Could not find annotations file"))?;
    let package = annotations
        .get(PACKAGE_ANNOTATION)
        .unwrap_or_default()
        .to_owned();
    let name = str_at(csv, "/metadata/name").to_owned();
    let version = match csv.pointer("/spec/version") {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };

    let provided = provided_apis(&objects, csv)?
        .into_iter()
        .collect::<BTreeSet<_>>();
    let required = required_apis(csv).map_err(|m| fail(b, m))?;
    check_owned_in_bundle(csv, &provided).map_err(|m| {
        fail(
            b,
            format!("error checking provided apis in bundle {name}: {m}"),
        )
    })?;

    // bundle.Properties: properties.yaml, then the derived ones (package, olm.properties
    // annotation, provided GVKs), each list de-duplicated.
    let mut derived = vec![Property::built(
        "olm.package",
        json!({"packageName": package, "version": version}),
    )];
    if let Some(Value::String(raw)) = csv.pointer("/metadata/annotations/olm.properties") {
        // opm only warns when the annotation does not parse.
        if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(raw) {
            for item in items {
                if let Value::Object(m) = item {
                    derived.push(Property::new(
                        crate::model::field(&m, "type")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                        crate::model::field(&m, "value")
                            .cloned()
                            .unwrap_or(Value::Null),
                    ));
                }
            }
        }
    }
    for (g, v, k) in &provided {
        derived.push(gvk_property("olm.gvk", g, v, k));
    }
    let mut bundle_props = Vec::new();
    if let Some(doc) = &b.properties
        && let Some(Value::Array(items)) = doc.value.get("properties")
    {
        for item in items {
            if let Value::Object(m) = gojson::sorted(item) {
                bundle_props.push(Property::new(
                    m.get("type").and_then(Value::as_str).unwrap_or_default(),
                    m.get("value").cloned().unwrap_or(Value::Null),
                ));
            }
        }
    }
    bundle_props.extend(property_set(derived));
    let bundle_props = property_set(bundle_props);

    // ObjectsAndPropertiesFromBundle.
    let mut gvks: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut package_prop: Option<Property> = None;
    let mut others = Vec::new();
    for p in bundle_props {
        match p.typ.as_str() {
            "olm.gvk" => {
                gvks.insert(gvk_of(&p.value));
            }
            "olm.package" => {
                let name = p
                    .value
                    .get("packageName")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let version = p
                    .value
                    .get("version")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let mut v = json!({"packageName": name, "version": version});
                if let Some(r) = p
                    .value
                    .get("release")
                    .and_then(Value::as_str)
                    .filter(|r| !r.is_empty())
                {
                    v["release"] = r.into();
                }
                package_prop = Some(Property::built("olm.package", v));
            }
            _ => others.push(p),
        }
    }
    let mut required_gvks: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut package_required = Vec::new();
    if let Some(doc) = &b.dependencies
        && let Some(Value::Array(items)) = doc.value.get("dependencies")
    {
        for item in items {
            let item = gojson::sorted(item);
            let typ = item.get("type").and_then(Value::as_str).unwrap_or_default();
            let value = item.get("value").cloned().unwrap_or(Value::Null);
            match typ {
                "olm.gvk" => {
                    required_gvks.insert(gvk_of(&value));
                }
                "olm.package" => package_required.push(Property::built(
                    "olm.package.required",
                    json!({
                        "packageName": value.get("packageName").and_then(Value::as_str).unwrap_or_default(),
                        "versionRange": value.get("version").and_then(Value::as_str).unwrap_or_default(),
                    }),
                )),
                _ => others.push(Property::new(typ, value)),
            }
        }
    }
    gvks.extend(provided);
    required_gvks.extend(required);

    let mut props = vec![package_prop.unwrap_or_else(|| {
        Property::built(
            "olm.package",
            json!({"packageName": package, "version": version}),
        )
    })];
    props.extend(
        gvks.iter()
            .map(|(g, v, k)| gvk_property("olm.gvk", g, v, k)),
    );
    props.extend(
        required_gvks
            .iter()
            .map(|(g, v, k)| gvk_property("olm.gvk.required", g, v, k)),
    );
    props.extend(package_required);
    props.extend(others);
    props.sort_by_cached_key(|p| {
        let style = if p.html_escaped {
            gojson::MARSHAL
        } else {
            gojson::COMPACT
        };
        (p.typ.clone(), gojson::to_string(&p.value, style))
    });

    match format {
        CsvFormat::BundleObject => {
            for o in &objects {
                let data = gojson::to_string(&gojson::sorted(o), gojson::MARSHAL);
                props.push(Property::built(
                    "olm.bundle.object",
                    json!({"data": base64::engine::general_purpose::STANDARD.encode(data)}),
                ));
            }
        }
        CsvFormat::CsvMetadata => {
            props.push(Property::built(
                "olm.csv.metadata",
                crate::csvmeta::csv_metadata(csv),
            ));
        }
    }

    Ok(Bundle {
        name,
        package,
        image: image.to_owned(),
        properties: props,
        related_images: related_images(csv, image),
        origin: None,
    })
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn gvk_of(v: &Value) -> (String, String, String) {
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (s("group"), s("version"), s("kind"))
}

fn gvk_property(typ: &str, group: &str, version: &str, kind: &str) -> Property {
    Property::built(
        typ,
        json!({"group": group, "kind": kind, "version": version}),
    )
}

/// Removes repeated properties (same type and value), keeping the first.
fn property_set(props: Vec<Property>) -> Vec<Property> {
    let mut seen = BTreeSet::new();
    props
        .into_iter()
        .filter(|p| seen.insert((p.typ.clone(), gojson::to_string(&p.value, gojson::MARSHAL))))
        .collect()
}

/// Every version of every CRD in the bundle, plus the CSV's owned API services.
fn provided_apis(objects: &[&Value], csv: &Value) -> Result<Vec<(String, String, String)>> {
    let mut out = Vec::new();
    for o in objects {
        if str_at(o, "/kind") != "CustomResourceDefinition" {
            continue;
        }
        let api = str_at(o, "/apiVersion");
        if api != "apiextensions.k8s.io/v1" && api != "apiextensions.k8s.io/v1beta1" {
            continue;
        }
        let group = str_at(o, "/spec/group");
        let kind = str_at(o, "/spec/names/kind");
        if let Some(Value::Array(vs)) = o.pointer("/spec/versions") {
            for v in vs {
                out.push((group.into(), str_at(v, "/name").into(), kind.into()));
            }
        }
        if api.ends_with("v1beta1") {
            let v = str_at(o, "/spec/version");
            if !v.is_empty() {
                out.push((group.into(), v.into(), kind.into()));
            }
        }
    }
    if let Some(Value::Array(owned)) = csv.pointer("/spec/apiservicedefinitions/owned") {
        for a in owned {
            out.push((
                str_at(a, "/group").into(),
                str_at(a, "/version").into(),
                str_at(a, "/kind").into(),
            ));
        }
    }
    Ok(out)
}

/// The CSV's required CRDs (group taken from `plural.group`) and required API services.
fn required_apis(csv: &Value) -> Result<Vec<(String, String, String)>, String> {
    let mut out = Vec::new();
    if let Some(Value::Array(req)) = csv.pointer("/spec/customresourcedefinitions/required") {
        for r in req {
            let name = str_at(r, "/name");
            let Some((_, group)) = name.split_once('.') else {
                return Err(format!("couldn't parse plural.group from crd name: {name}"));
            };
            out.push((
                group.into(),
                str_at(r, "/version").into(),
                str_at(r, "/kind").into(),
            ));
        }
    }
    if let Some(Value::Array(req)) = csv.pointer("/spec/apiservicedefinitions/required") {
        for a in req {
            out.push((
                str_at(a, "/group").into(),
                str_at(a, "/version").into(),
                str_at(a, "/kind").into(),
            ));
        }
    }
    Ok(out)
}

/// opm refuses a bundle whose CSV owns a CRD version the bundle does not carry.
fn check_owned_in_bundle(
    csv: &Value,
    provided: &BTreeSet<(String, String, String)>,
) -> Result<(), String> {
    if let Some(Value::Array(owned)) = csv.pointer("/spec/customresourcedefinitions/owned") {
        for o in owned {
            let name = str_at(o, "/name");
            let Some((_, group)) = name.split_once('.') else {
                return Err(format!("couldn't parse plural.group from crd name: {name}"));
            };
            let key = (
                group.to_owned(),
                str_at(o, "/version").to_owned(),
                str_at(o, "/kind").to_owned(),
            );
            if !provided.contains(&key) {
                return Err(format!(
                    "couldn't find {}/{} {} ({}) in bundle",
                    key.0, key.1, key.2, name
                ));
            }
        }
    }
    Ok(())
}

/// The CSV's `relatedImages` as written, plus the bundle image and every deployment
/// container and init container image not yet listed, sorted by image as opm sorts them:
/// with Go's `sort.Slice`, which is not stable, so two entries that share an image under
/// different names end up in the order Go's algorithm leaves them ([`crate::gosort`]), not
/// in the CSV's order. opm appends the deployment images while iterating a Go map (random
/// order); only entries with equal images can be affected by that order, and opship appends
/// them sorted.
pub fn related_images(csv: &Value, image: &str) -> Vec<RelatedImage> {
    let mut out: Vec<RelatedImage> = Vec::new();
    if let Some(Value::Array(items)) = csv.pointer("/spec/relatedImages") {
        for i in items {
            let m = i.as_object().cloned().unwrap_or_else(Map::new);
            let get = |k: &str| {
                crate::model::field(&m, k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            out.push(RelatedImage {
                name: get("name"),
                image: get("image"),
            });
        }
    }
    let mut all: BTreeSet<String> = out.iter().map(|r| r.image.clone()).collect();
    if !image.is_empty() && all.insert(image.to_owned()) {
        out.push(RelatedImage {
            name: String::new(),
            image: image.to_owned(),
        });
    }
    let mut operator_images = BTreeSet::new();
    if let Some(Value::Array(deps)) = csv.pointer("/spec/install/spec/deployments") {
        for d in deps {
            for list in ["containers", "initContainers"] {
                if let Some(Value::Array(cs)) = d.pointer(&format!("/spec/template/spec/{list}")) {
                    for c in cs {
                        operator_images.insert(str_at(c, "/image").to_owned());
                    }
                }
            }
        }
    }
    for img in operator_images {
        if all.insert(img.clone()) {
            out.push(RelatedImage {
                name: String::new(),
                image: img,
            });
        }
    }
    crate::gosort::sort_slice(&mut out, |a, b| a.image.cmp(&b.image));
    out
}

/// The label that marks a catalog image and names its configs directory.
pub const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";

/// Renders the image tagged `tag` in the OCI layout `layout` as opm does: a catalog image
/// (configs label) is unpacked safely and its configs directory loaded; a bundle image
/// (package label) is rendered with `image` as its reference (default: `shown`).
pub fn render_image(
    layout: &Path,
    tag: &str,
    shown: &Path,
    image: Option<&str>,
    format: CsvFormat,
) -> Result<crate::Catalog> {
    use opship_core::image::{layout::Layout, unpack};
    let img = Layout::new(layout)
        .read_image(tag)
        .map_err(|e| Error::Render {
            path: shown.to_path_buf(),
            message: e.to_string(),
        })?;
    let labels = &img.config.config.labels;
    if let Some(configs) = labels.get(CONFIGS_LABEL) {
        let tmp = opship_core::fsutil::temp_dir(".opship-render-")
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        let mut un =
            unpack::DirUnpacker::new(tmp.path(), unpack::Limits::default()).map_err(|e| {
                Error::Render {
                    path: shown.to_path_buf(),
                    message: e.to_string(),
                }
            })?;
        for layer in &img.layers {
            un.add_layer(layer.as_slice()).map_err(|e| Error::Render {
                path: shown.to_path_buf(),
                message: e.to_string(),
            })?;
        }
        un.finish().map_err(|e| Error::Render {
            path: shown.to_path_buf(),
            message: e.to_string(),
        })?;
        let rel = configs.trim_start_matches('/');
        return crate::load::load_dir(&tmp.path().join(rel));
    }
    if labels.contains_key(PACKAGE_ANNOTATION) {
        let image = image.map_or_else(
            || opship_core::paths::show(shown).to_string(),
            str::to_owned,
        );
        let b = render_layout(layout, tag, shown, &image, format)?;
        return Ok(crate::Catalog {
            bundles: vec![b],
            ..Default::default()
        });
    }
    let mut keys: Vec<String> = labels.iter().map(|(k, v)| format!("  {k}={v}")).collect();
    keys.sort();
    Err(Error::Render {
        path: shown.to_path_buf(),
        message: if keys.is_empty() {
            "image type could not be determined: image has no labels".into()
        } else {
            format!(
                "image type could not be determined, found labels\n{}",
                keys.join("\n")
            )
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Two entries share an image under different names in a list longer than 12: Go's
    /// `sort.Slice` (pdqsort) leaves them in the other order than the CSV's, and opm's output
    /// has that order. The expected list was computed with an independent transcription of
    /// Go's `pdqsort_func` (the Rust port agrees), and differs from a stable sort.
    #[test]
    fn shared_image_in_a_long_list_is_in_opms_order() {
        let csv = json!({
            "spec": {
                "relatedImages": [
                    {"name": "operator", "image": "quay.io/acme/operator@sha256:0c"},
                    {"name": "db", "image": "quay.io/acme/postgres:15"},
                    {"name": "cache", "image": "quay.io/acme/redis:7"},
                    {"name": "ui", "image": "quay.io/acme/console:2.1"},
                    {"name": "agent", "image": "quay.io/acme/agent:2.1"},
                    {"name": "backup", "image": "quay.io/acme/backup:1.4"},
                    {"name": "exporter", "image": "quay.io/acme/exporter:0.9"},
                    {"name": "proxy", "image": "quay.io/acme/proxy:3"},
                    {"name": "init", "image": "quay.io/acme/init:1"},
                    {"name": "RELATED_IMAGE_DB", "image": "quay.io/acme/postgres:15"},
                    {"name": "webhook", "image": "quay.io/acme/webhook:2.1"},
                    {"name": "migrator", "image": "quay.io/acme/migrator:2.1"},
                    {"name": "docs", "image": "quay.io/acme/docs:2.1"}
                ],
                "install": {"spec": {"deployments": [{"spec": {"template": {"spec": {
                    "containers": [{"image": "quay.io/acme/operator@sha256:0c"}]
                }}}}]}}
            }
        });
        let got: Vec<(String, String)> = related_images(&csv, "quay.io/acme/bundle:2.1")
            .into_iter()
            .map(|r| (r.name, r.image))
            .collect();
        let want = [
            ("agent", "quay.io/acme/agent:2.1"),
            ("backup", "quay.io/acme/backup:1.4"),
            ("", "quay.io/acme/bundle:2.1"),
            ("ui", "quay.io/acme/console:2.1"),
            ("docs", "quay.io/acme/docs:2.1"),
            ("exporter", "quay.io/acme/exporter:0.9"),
            ("init", "quay.io/acme/init:1"),
            ("migrator", "quay.io/acme/migrator:2.1"),
            ("operator", "quay.io/acme/operator@sha256:0c"),
            ("RELATED_IMAGE_DB", "quay.io/acme/postgres:15"),
            ("db", "quay.io/acme/postgres:15"),
            ("proxy", "quay.io/acme/proxy:3"),
            ("cache", "quay.io/acme/redis:7"),
            ("webhook", "quay.io/acme/webhook:2.1"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, i)| ((*n).to_owned(), (*i).to_owned()))
            .collect();
        assert_eq!(got, want);

        // Up to 12 entries the sort is an insertion sort: the CSV's order stays.
        let mut short = csv.clone();
        short["spec"]["relatedImages"]
            .as_array_mut()
            .unwrap()
            .truncate(10);
        let got: Vec<String> = related_images(&short, "quay.io/acme/bundle:2.1")
            .into_iter()
            .filter(|r| r.image.contains("postgres"))
            .map(|r| r.name)
            .collect();
        assert_eq!(got, ["db", "RELATED_IMAGE_DB"]);
    }
}

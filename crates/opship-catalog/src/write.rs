//! Writing a catalog as opm does: per package (sorted by name, package-less blobs first), the
//! `olm.package`, then channels and bundles sorted by name, then deprecations, then other
//! schemas sorted by schema and name. JSON is Go's `json.Encoder` with four-space indent and no
//! HTML escaping; YAML is one `---` document per blob with sorted keys.

use std::path::Path;

use serde_json::Value;

use crate::error::Result;
use crate::gojson;
use crate::model::Catalog;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// opm's JSON.
    Json,
    /// YAML with sorted keys.
    Yaml,
}

/// A blob to write: a value, or a bundle (whose properties may carry HTML-escaped text).
pub enum Blob<'a> {
    /// Any blob.
    Value(Value),
    /// An `olm.bundle`.
    Bundle(&'a crate::model::Bundle),
}

impl Blob<'_> {
    /// The blob as a JSON value (escaping is a matter of text, not of value).
    pub fn to_value(&self) -> Value {
        match self {
            Blob::Value(v) => v.clone(),
            Blob::Bundle(b) => b.to_value(),
        }
    }
}

/// The blobs in opm's output order.
pub fn ordered_blobs(cat: &Catalog) -> Vec<Value> {
    ordered(cat).iter().map(Blob::to_value).collect()
}

fn ordered(cat: &Catalog) -> Vec<Blob<'_>> {
    let mut out = Vec::new();
    for pkg in cat.package_names() {
        let mut packages: Vec<_> = cat.packages.iter().filter(|p| p.name == pkg).collect();
        packages.sort_by(|a, b| a.name.cmp(&b.name));
        let mut channels: Vec<_> = cat.channels.iter().filter(|c| c.package == pkg).collect();
        channels.sort_by(|a, b| a.name.cmp(&b.name));
        let mut bundles: Vec<_> = cat.bundles.iter().filter(|b| b.package == pkg).collect();
        bundles.sort_by(|a, b| a.name.cmp(&b.name));
        let deprecations = cat.deprecations.iter().filter(|d| d.package == pkg);
        let mut others: Vec<_> = cat.others.iter().filter(|o| o.package == pkg).collect();
        others.sort_by(|a, b| a.schema.cmp(&b.schema).then_with(|| a.name.cmp(&b.name)));
        out.extend(packages.into_iter().map(|p| Blob::Value(p.to_value())));
        out.extend(channels.into_iter().map(|c| Blob::Value(c.to_value())));
        out.extend(bundles.into_iter().map(Blob::Bundle));
        out.extend(deprecations.map(|d| Blob::Value(d.to_value())));
        out.extend(others.into_iter().map(|o| Blob::Value(o.blob.clone())));
    }
    out
}

/// The catalog as text.
pub fn to_string(cat: &Catalog, format: Format) -> Result<String> {
    let blobs = ordered(cat);
    let mut out = String::new();
    for b in &blobs {
        match (format, b) {
            (Format::Json, Blob::Value(v)) => {
                gojson::write(&mut out, v, gojson::OPM, 0);
                out.push('\n');
            }
            (Format::Json, Blob::Bundle(bundle)) => {
                write_bundle_json(&mut out, bundle);
                out.push('\n');
            }
            (Format::Yaml, b) => {
                out.push_str("---\n");
                out.push_str(&opship_core::yaml::to_string(&b.to_value())?);
            }
        }
    }
    Ok(out)
}

/// A bundle in opm's JSON: like its value, except that property values built with Go's
/// `json.Marshal` keep their HTML-escaped text.
fn write_bundle_json(out: &mut String, b: &crate::model::Bundle) {
    let style = gojson::OPM;
    let Value::Object(mut m) = b.to_value() else {
        return;
    };
    let props = m.get_mut("properties").map(Value::take);
    out.push('{');
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        gojson::newline(out, style, 1);
        gojson::write_str(out, k, false);
        out.push_str(": ");
        if k == "properties" && props.is_some() {
            out.push('[');
            for (j, p) in b.properties.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                gojson::newline(out, style, 2);
                out.push('{');
                gojson::newline(out, style, 3);
                out.push_str("\"type\": ");
                gojson::write_str(out, &p.typ, false);
                out.push(',');
                gojson::newline(out, style, 3);
                out.push_str("\"value\": ");
                let vstyle = gojson::Style {
                    escape_html: p.html_escaped,
                    ..style
                };
                gojson::write(out, &p.value, vstyle, 3);
                gojson::newline(out, style, 2);
                out.push('}');
            }
            gojson::newline(out, style, 1);
            out.push(']');
        } else {
            gojson::write(out, v, style, 1);
        }
    }
    gojson::newline(out, style, 0);
    out.push('}');
}

/// Writes the catalog as one file per package, `<dir>/<package>/catalog.<ext>`, each
/// atomically.
pub fn write_fs(cat: &Catalog, dir: &Path, format: Format) -> Result<()> {
    let ext = match format {
        Format::Json => "json",
        Format::Yaml => "yaml",
    };
    for pkg in cat.package_names() {
        let pdir = dir.join(&pkg);
        std::fs::create_dir_all(&pdir).map_err(|e| crate::Error::io(&pdir, e))?;
        let text = to_string(&cat.package(&pkg), format)?;
        opship_core::fsutil::write_atomic_with_mode(
            &pdir.join(format!("catalog.{ext}")),
            text.as_bytes(),
            0o644,
        )?;
    }
    Ok(())
}

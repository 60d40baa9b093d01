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

/// The blobs in opm's output order.
pub fn ordered_blobs(cat: &Catalog) -> Vec<Value> {
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
        out.extend(packages.into_iter().map(|p| p.to_value()));
        out.extend(channels.into_iter().map(|c| c.to_value()));
        out.extend(bundles.into_iter().map(|b| b.to_value()));
        out.extend(deprecations.map(|d| d.to_value()));
        out.extend(others.into_iter().map(|o| o.blob.clone()));
    }
    out
}

/// The catalog as text.
pub fn to_string(cat: &Catalog, format: Format) -> Result<String> {
    let blobs = ordered_blobs(cat);
    let mut out = String::new();
    for b in &blobs {
        match format {
            Format::Json => {
                gojson::write(&mut out, b, gojson::OPM, 0);
                out.push('\n');
            }
            Format::Yaml => {
                out.push_str("---\n");
                out.push_str(&opship_core::yaml::to_string(b)?);
            }
        }
    }
    Ok(out)
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
        opship_core::fsutil::write_atomic(&pdir.join(format!("catalog.{ext}")), text.as_bytes())?;
    }
    Ok(())
}

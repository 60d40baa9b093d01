//! opship-chart: Helm charts for an operator, one per released version, made from the same
//! registry+v1 bundle that OLM installs. A chart holds the objects OLM v1 installs ([`olm`]),
//! Chart.yaml, values and notes rendered from Handlebars templates ([`render`]), the values
//! schema ([`values`]); it is packaged into a byte-reproducible `.tgz` ([`package`]) and
//! listed in a chart repository index ([`index`]). Synchronous and offline; pushing to a
//! registry lives in opship-oci.

pub mod error;
pub mod index;
pub mod model;
pub mod oci;
pub mod olm;
pub mod overlay;
pub mod package;
pub mod render;
pub mod values;

use std::collections::BTreeMap;
use std::path::Path;

use opship_core::config::Environment;

pub use error::{Error, Result};
pub use model::{CrdPlacement, Options};
pub use opship_core::output::{Overwrite, Target};
pub use render::{Files, Templates};

/// A rendered chart, in memory until written.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Chart name.
    pub name: String,
    /// Chart version (the operator version).
    pub version: semver::Version,
    /// Every file of the chart directory, by relative path.
    pub files: Files,
    /// The manager deployment and container the top-level values apply to.
    pub manager: (String, String),
    /// Default values, as in `values.yaml`.
    pub values: serde_json::Value,
}

/// Renders the chart of the bundle in `bundle_dir`, with a `values-<env>.yaml` per
/// environment.
pub fn render_bundle(
    bundle_dir: &Path,
    opts: &Options,
    templates: &Templates,
    environments: &BTreeMap<String, Environment>,
) -> Result<Chart> {
    let bundle = model::load_bundle(bundle_dir)?;
    let mut model = model::build(&bundle, opts)?;
    let manager = Some(&model.manager).filter(|(d, _)| !d.is_empty()).cloned();
    model.values = olm::values(&bundle, manager.as_ref());
    model.context["values"] = model.values.clone();
    model.context["installModes"] = serde_json::Value::from(
        opship_install::check::supported_modes(bundle.csv.value())
            .into_iter()
            .collect::<Vec<_>>(),
    );
    let objects = olm::templates(&bundle, &model.name, manager.as_ref(), opts.crds)?;
    let mut files = render::render(&model, templates)?;
    files.extend(objects);
    let schema = values::schema(&model.values);
    let mut schema_text = serde_json::to_string_pretty(&schema)
        .map_err(|e| Error::invalid(bundle_dir, format!("values schema: {e}")))?;
    schema_text.push('\n');
    files.insert("values.schema.json".into(), schema_text.into_bytes());
    let version = model.version.to_string();
    for (env, settings) in environments {
        if !opship_core::config::is_dns1123_label(env) {
            return Err(Error::invalid(
                bundle_dir,
                format!(
                    "environment `{env}`: the name must be a DNS-1123 label, since it becomes values-{env}.yaml"
                ),
            ));
        }
        let v = values::environment(settings, &version, &model.values);
        let mut text = format!("# Values for the `{env}` environment (from opship.yaml).\n");
        if v.as_object().is_none_or(|m| m.is_empty()) {
            text.push_str("{}\n");
        } else {
            text.push_str(&opship_core::yaml::to_string(&v)?);
        }
        files.insert(format!("values-{env}.yaml"), text.into_bytes());
    }
    package::check_helm_limits(&files, bundle_dir, |rel| render::origin_of(&model, rel))?;
    Ok(Chart {
        name: model.name,
        version: model.version,
        files,
        manager: model.manager,
        values: model.values,
    })
}

/// A chart directory as `chart render` writes it: what an existing one may hold and still be
/// replaced without `--force`. Besides the files of the new chart: Chart.yaml, the values
/// files and schema, `templates/…` and `crds/…` (the chart's own, and the output of added
/// templates), and the README.md and .helmignore a templates directory may add.
pub const CHART_DIR: Target = Target {
    what: "chart",
    generated: is_chart_file,
};

/// The kustomize overlays of `chart render --overlays`: `base/*.yaml` and
/// `<env>/kustomization.yaml`.
pub const OVERLAY_DIR: Target = Target {
    what: "kustomize overlays",
    generated: is_overlay_file,
};

fn is_chart_file(rel: &str) -> bool {
    matches!(
        rel,
        "Chart.yaml" | "values.yaml" | "values.schema.json" | "README.md" | ".helmignore"
    ) || (!rel.contains('/') && rel.starts_with("values-") && rel.ends_with(".yaml"))
        || rel.starts_with("templates/")
        || rel.starts_with("crds/")
}

fn is_overlay_file(rel: &str) -> bool {
    match rel.split_once('/') {
        Some(("base", rest)) => rest.is_empty() || (!rest.contains('/') && rest.ends_with(".yaml")),
        Some((env, rest)) => {
            opship_core::config::is_dns1123_label(env)
                && (rest.is_empty() || rest == "kustomization.yaml")
        }
        None => false,
    }
}

/// Checks, without writing, that `dir` may be replaced by `files` (see
/// [`opship_core::output::check`]): absent, empty or holding only what opship writes in a
/// `target` directory, unless `overwrite` is [`Overwrite::Force`]; never a symlink, the
/// current directory or one of its parents.
pub fn check_dir(files: &Files, dir: &Path, target: Target, overwrite: Overwrite) -> Result<()> {
    opship_core::output::check(dir, files, target, overwrite)?;
    Ok(())
}

/// Writes `files` as the whole content of `dir` once [`check_dir`] allows it, atomically
/// (a temporary sibling that then takes `dir`'s place).
pub fn write_dir(files: &Files, dir: &Path, target: Target, overwrite: Overwrite) -> Result<()> {
    opship_core::output::replace_dir(dir, files, target, overwrite)?;
    Ok(())
}

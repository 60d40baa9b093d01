//! Staging: the bundle generated, validated and built and the chart rendered and packaged in
//! a temporary directory, with the project's settings, before anything is written. Gives every
//! digest of the release ahead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use opship_core::bundle::{self, Inputs};
use opship_core::image::{BuildOptions, Format, Image, build_bundle};
use opship_core::manifest::{self, Object, Source};

use crate::check::files_of;
use crate::error::{Error, Result};
use crate::plan::Plan;

/// What staging produced.
pub(crate) struct Staged {
    /// Keeps the staging directory alive.
    pub _dir: opship_core::fsutil::TempDir,
    /// The generated bundle's files.
    pub bundle_files: opship_core::bundle::Files,
    /// The same, as read back from the staged directory (compared with the project's).
    pub bundle_tree: BTreeMap<PathBuf, Vec<u8>>,
    /// The bundle image.
    pub image: Image,
    /// The chart's name.
    pub chart_name: String,
    /// The chart's files (as rendered).
    pub chart_files: opship_chart::Files,
    /// The same, as read back from the staged chart directory.
    pub chart_tree: BTreeMap<PathBuf, Vec<u8>>,
    /// The packaged chart.
    pub package: opship_chart::package::Package,
}

/// Staging failed or found validation errors.
pub(crate) enum Stopped {
    Error(Error),
    Invalid(opship_validate::BundleReport),
}

fn failed(what: &str) -> impl Fn(&dyn std::fmt::Display) -> Stopped + '_ {
    move |e| {
        Stopped::Error(Error::Staging {
            what: what.to_owned(),
            message: e.to_string(),
        })
    }
}

/// Stages the release; `warn` gets the generator's warnings and validation findings below
/// error level.
pub(crate) fn stage(
    plan: &Plan,
    options: &crate::Options<'_>,
    warn: &mut dyn FnMut(Warning<'_>),
) -> std::result::Result<Staged, Stopped> {
    let dir = opship_core::fsutil::temp_dir(".opship-stage-").map_err(|e| failed("staging")(&e))?;
    let mut generated = generate(plan, options).map_err(|e| failed("generate")(&e))?;
    if plan.project.config.use_image_digests
        && let Some(pin) = options.pin_images
    {
        pin(&mut generated).map_err(|e| failed("generate")(&e))?;
    }
    for w in &generated.warnings {
        warn(Warning::Text(w));
    }
    bundle::check_size(&generated.files).map_err(|e| failed("generate")(&e))?;
    let staged_bundle = dir.path().join("bundle");
    bundle::write_dir(
        &generated.files,
        &staged_bundle,
        opship_core::output::Overwrite::Refuse,
    )
    .map_err(|e| failed("generate")(&e))?;

    let mut report = opship_validate::validate_dir(&staged_bundle, &Default::default())
        .map_err(|e| failed("validate")(&e))?;
    // The findings name the bundle directory the user knows, not the staged copy.
    report.path = plan.bundle_dir.clone();
    for f in &mut report.findings {
        if let Some(o) = &mut f.location
            && let Ok(rel) = o.file.strip_prefix(&staged_bundle)
        {
            o.file = plan.bundle_dir.join(rel).into();
        }
    }
    if report.has_errors() {
        return Err(Stopped::Invalid(report));
    }
    if !report.findings.is_empty() {
        warn(Warning::Findings(&report));
    }

    let epoch = options.source_date_epoch.unwrap_or(0);
    let image = build_bundle(
        &staged_bundle,
        &BuildOptions {
            epoch,
            extra_labels: BTreeMap::new(),
            format: Format::Oci,
        },
    )
    .map_err(|e| failed("build")(&e))?;

    let chart = render_chart(plan, &staged_bundle).map_err(|e| failed("chart render")(&e))?;
    let staged_chart = dir.path().join("charts").join(&chart.name);
    opship_chart::write_dir(
        &chart.files,
        &staged_chart,
        opship_chart::CHART_DIR,
        opship_chart::Overwrite::Refuse,
    )
    .map_err(|e| failed("chart render")(&e))?;
    let read =
        opship_chart::package::read_dir(&staged_chart).map_err(|e| failed("chart package")(&e))?;
    let package = opship_chart::package::package(&read, epoch, &staged_chart)
        .map_err(|e| failed("chart package")(&e))?;
    Ok(Staged {
        bundle_tree: files_of(&staged_bundle),
        chart_tree: files_of(&staged_chart),
        bundle_files: generated.files,
        image,
        chart_name: chart.name,
        chart_files: chart.files,
        package,
        _dir: dir,
    })
}

/// What staging reports besides errors.
pub(crate) enum Warning<'a> {
    Text(&'a str),
    Findings(&'a opship_validate::BundleReport),
}

/// The chart of a bundle directory with the project's chart settings, as `chart render` makes.
pub(crate) fn render_chart(plan: &Plan, bundle_dir: &Path) -> Result<opship_chart::Chart> {
    let cfg = plan.project.config.chart.clone().unwrap_or_default();
    let crds = match cfg.crds.as_deref() {
        None => opship_chart::CrdPlacement::Templates,
        Some(s) => opship_chart::CrdPlacement::parse(s).ok_or_else(|| {
            Error::Config(format!("CRD placement `{s}`: use `templates` or `crds`"))
        })?,
    };
    let opts = opship_chart::Options {
        name: cfg.name.clone(),
        crds,
    };
    opship_chart::render_bundle(
        bundle_dir,
        &opts,
        &opship_chart::Templates { dir: None },
        &plan.project.config.environments,
    )
    .map_err(|e| Error::Staging {
        what: "chart render".into(),
        message: e.to_string(),
    })
}

/// The bundle of the release, generated with the project's settings (what `opship generate
/// bundle --version V` does with the config alone).
fn generate(plan: &Plan, options: &crate::Options<'_>) -> Result<bundle::Bundle> {
    let err = |e: &dyn std::fmt::Display| Error::Config(e.to_string());
    let project = &plan.project;
    let c = &project.config;
    let source = c
        .manifests
        .as_ref()
        .map(|m| Source::Path(project.resolve(m)))
        .ok_or_else(|| {
            Error::Config(format!(
                "{}: no `manifests` to generate the bundle from",
                opship_core::paths::show(&project.path)
            ))
        })?;
    let operator = c.operator.as_ref();
    let objects = manifest::load_with(
        &source,
        operator.map(|o| o.placeholder()),
        &project.kustomize_edits(&plan.version),
        project.envsubst_vars(&plan.version, operator).as_ref(),
    )
    .map_err(|e| err(&e))?;
    let base_csv = match &c.csv_base {
        Some(p) => Some(load_one(&project.resolve(p))?),
        None => None,
    };
    let opts = bundle::settings::options(
        Some(project),
        &c.package,
        &plan.version,
        &Default::default(),
        options.source_date_epoch.map(|e| e as i64),
    )
    .map_err(|e| err(&e))?;
    bundle::generate(Inputs { objects, base_csv }, &opts).map_err(|e| err(&e))
}

fn load_one(path: &Path) -> Result<Object> {
    let mut objs = manifest::load(&Source::Path(path.to_path_buf()))
        .map_err(|e| Error::Config(e.to_string()))?;
    match objs.len() {
        1 => Ok(objs.remove(0)),
        n => Err(Error::Config(format!(
            "{}: expected one ClusterServiceVersion, found {n} objects",
            opship_core::paths::show(path)
        ))),
    }
}

//! `opship generate bundle`: command-line flags over `opship.yaml` (merged into bundle options
//! by `opship_core::bundle::settings`, as `release` merges the config alone), then generation,
//! pinning and writing or the drift check.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use opship_core::bundle::{self, Inputs, settings};
use opship_core::config::{OperatorImage, Project};
use opship_core::manifest::{self, Object, Source};

use super::{CmdError, ExitStatus};
use crate::cli::BundleArgs;

pub fn bundle(args: &BundleArgs, project: Option<&Project>) -> Result<ExitStatus, CmdError> {
    if args.all {
        let p = project.ok_or("--all needs a project config listing `releases` (pass --config)")?;
        if p.config.releases.is_empty() {
            return Err(
                format!("{} lists no `releases`", opship_core::paths::show(&p.path)).into(),
            );
        }
    }

    let source = match (
        &args.input,
        project.and_then(|p| p.config.manifests.as_ref().map(|m| p.resolve(m))),
    ) {
        (Some(i), _) => Source::from_arg(i),
        (None, Some(p)) => Source::Path(p),
        (None, None) => {
            return Err("no manifests: pass --input (a file, a directory or - for stdin) or set `manifests` in opship.yaml".into());
        }
    };

    let config_operator = project.and_then(|p| p.config.operator.as_ref());
    let operator = match &args.operator_image {
        Some(arg) => Some(OperatorImage::from_flag(arg, config_operator)?),
        None => config_operator.cloned(),
    };
    // A kustomization is built with the placeholder kept where the operator image goes, after
    // the config's `kustomize edit`s (which belong to its `manifests`, not to --input).
    let edits_for = |version: &str| match (&args.input, project) {
        (None, Some(p)) => p.kustomize_edits(version),
        _ => Vec::new(),
    };
    // `envsubst:` fills the release's version and operator image in, `kustomizeEdits` the
    // version: the build is per version then (the one asked for, else the newest release, is
    // built first).
    let envsubst_for = |version: &str| match (&args.input, project) {
        (None, Some(p)) => p.envsubst_vars(version, operator.as_ref()),
        _ => None,
    };
    let per_version = envsubst_for("").is_some()
        || (args.input.is_none()
            && project.is_some_and(|p| {
                p.config
                    .kustomize_edits
                    .iter()
                    .any(|e| e.args.iter().any(|a| a.contains("{version}")))
            }));
    let first_version = args
        .version
        .clone()
        .or_else(|| project.and_then(|p| p.config.releases.last().map(|r| r.version.clone())))
        .unwrap_or_default();
    let load = |version: &str| {
        manifest::load_with(
            &source,
            operator.as_ref().map(OperatorImage::placeholder),
            &edits_for(version),
            envsubst_for(version).as_ref(),
        )
    };
    let objects = load(&first_version)?;
    let base_path = args
        .base_csv
        .clone()
        .or_else(|| project.and_then(|p| p.config.csv_base.as_ref().map(|b| p.resolve(b))));
    let base_csv = match base_path {
        Some(path) => Some(load_one(&path)?),
        None => None,
    };

    let package = args
        .package
        .clone()
        .or_else(|| project.map(|p| p.config.package.clone()))
        .ok_or("no package name: pass --package or set `package` in opship.yaml")?;

    let versions: Vec<String> = match (args.all, &args.version, project) {
        (true, _, Some(p)) => p
            .config
            .releases
            .iter()
            .map(|r| r.version.clone())
            .collect(),
        (_, Some(v), _) => vec![v.clone()],
        // The newest release of the config (listed oldest first).
        (false, None, Some(p)) if !p.config.releases.is_empty() => {
            vec![
                p.config
                    .releases
                    .last()
                    .map(|r| r.version.clone())
                    .unwrap_or_default(),
            ]
        }
        // As operator-sdk: the version of the base CSV generation starts from.
        _ => {
            let inputs = Inputs {
                objects: objects.clone(),
                base_csv: base_csv.clone(),
            };
            vec![bundle::base_version(&inputs, &package)?.to_string()]
        }
    };

    let mut labels = BTreeMap::new();
    for l in &args.label {
        let (k, v) = l
            .split_once('=')
            .ok_or_else(|| format!("--label `{l}` is not KEY=VALUE"))?;
        labels.insert(k.to_owned(), v.to_owned());
    }
    let source_date = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<i64>()
                .map_err(|_| format!("SOURCE_DATE_EPOCH `{s}` is not a number of seconds"))
        })
        .transpose()?;
    // The flags over the config (opship-core maps both, as `release` does with the config).
    let overrides = settings::Overrides {
        channels: args.channels.clone(),
        // `--default-channel ""` is "no default channel", over the config's.
        default_channel: args.default_channel.clone(),
        replaces: args.replaces.clone(),
        skips: args.skips.clone(),
        skip_range: args.skip_range.clone(),
        created_at: args.created_at.clone(),
        extra_service_accounts: args.extra_service_accounts.clone(),
        exclude_kinds: args.exclude_kind.clone(),
        labels,
        operator: operator.clone(),
    };

    let use_digests = args.use_image_digests || project.is_some_and(|p| p.config.use_image_digests);
    // Every bundle is generated (and pinned) before any is written, so a failure in one
    // version leaves all of them as they were.
    let mut bundles: Vec<super::digests::Generated> = Vec::new();
    for version in &versions {
        let opts = settings::options(project, &package, version, &overrides, source_date)?;
        let out_dir: PathBuf = match (&args.output_dir, project) {
            (Some(d), _) => d.clone(),
            (None, Some(p)) => p.bundle_dir(version),
            (None, None) => PathBuf::from("bundle"),
        };
        let objects = if per_version && *version != first_version {
            load(version)?
        } else {
            objects.clone()
        };
        let inputs = Inputs {
            objects,
            base_csv: base_csv.clone(),
        };
        let generated = bundle::generate(inputs, &opts)?;
        for w in &generated.warnings {
            tracing::warn!("{w}");
        }
        bundles.push((version.clone(), out_dir, generated));
    }
    if use_digests {
        super::digests::pin_bundles(&mut bundles, args.insecure)?;
    }

    let overwrite = if args.force {
        opship_core::output::Overwrite::Force
    } else {
        opship_core::output::Overwrite::Refuse
    };
    // Every output is checked before the first is written.
    for (_, out_dir, generated) in &bundles {
        bundle::check_size(&generated.files)?;
        if !args.check {
            opship_core::output::check(out_dir, &generated.files, bundle::TARGET, overwrite)?;
        }
    }
    let mut drifted = false;
    for (version, out_dir, generated) in &bundles {
        if args.check && args.semantic {
            let d = bundle::semantic_drift(&generated.files, out_dir)?;
            drifted |= !d.is_clean();
            print_semantic_drift(out_dir, &d)?;
            continue;
        }
        if args.check {
            let d = bundle::drift(&generated.files, out_dir)?;
            if d.is_clean() {
                println!("{}: up to date", opship_core::paths::show(out_dir));
            } else {
                drifted = true;
                print_drift(out_dir, &d)?;
            }
        } else {
            bundle::write_dir(&generated.files, out_dir, overwrite)?;
            println!(
                "wrote {} {} ({} files) to {}",
                package,
                version,
                generated.files.len(),
                opship_core::paths::show(out_dir)
            );
        }
    }
    Ok(if drifted {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn load_one(path: &Path) -> Result<Object, CmdError> {
    let mut objs = manifest::load(&Source::Path(path.to_path_buf()))?;
    match objs.len() {
        1 => Ok(objs.remove(0)),
        n => Err(format!(
            "{}: expected one ClusterServiceVersion, found {n} objects",
            opship_core::paths::show(path)
        )
        .into()),
    }
}

fn print_drift(dir: &Path, d: &bundle::Drift) -> Result<(), CmdError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}: out of date", opship_core::paths::show(dir))?;
    for f in &d.missing {
        writeln!(out, "  missing: {f}")?;
    }
    for f in &d.stale {
        writeln!(out, "  stale (would be removed): {f}")?;
    }
    for (_, diff) in &d.changed {
        write!(out, "{diff}")?;
    }
    Ok(())
}

/// `DIR: N differences` (notes not counted), then per object or file a header and one line
/// per difference: `+` only generated, `-` only on disk, `~` changed, `note:` informational.
fn print_semantic_drift(dir: &Path, d: &bundle::SemanticDrift) -> Result<(), CmdError> {
    use bundle::semantic::{Change, compact};
    let mut out = std::io::stdout().lock();
    match d.changes().count() {
        0 => writeln!(
            out,
            "{}: up to date (semantically)",
            opship_core::paths::show(dir)
        )?,
        1 => writeln!(out, "{}: 1 difference", opship_core::paths::show(dir))?,
        n => writeln!(out, "{}: {n} differences", opship_core::paths::show(dir))?,
    }
    let mut group = None;
    for x in &d.differences {
        let key = (x.file(), &x.object);
        if group != Some(key) {
            group = Some(key);
            match &x.object {
                Some(o) => writeln!(out, "  {} ({o})", x.file())?,
                None => writeln!(out, "  {}", x.file())?,
            }
        }
        let whole = if x.object.is_some() { "object" } else { "file" };
        let path = if x.path.is_root() {
            format!("(whole {whole})")
        } else {
            x.path.to_string()
        };
        let from = x.old_file.as_deref().unwrap_or_default();
        match &x.change {
            Change::Added(_) if x.path.is_root() => {
                writeln!(out, "    + (whole {whole}, only generated)")?
            }
            Change::Removed(_) if x.path.is_root() => {
                writeln!(out, "    - (whole {whole}, only on disk)")?
            }
            Change::Added(v) => writeln!(out, "    + {path}: {}", compact(v))?,
            Change::Removed(v) => writeln!(out, "    - {path}: {}", compact(v))?,
            Change::Changed { old, new } => {
                writeln!(out, "    ~ {path}: {} → {}", compact(old), compact(new))?
            }
            Change::Renamed => writeln!(
                out,
                "    note: the same object is in {from} on disk (file names are not compared)"
            )?,
            Change::DockerfileInParent => writeln!(
                out,
                "    note: {} has none; its LABELs are compared with {} (operator-sdk's place for it, the project root)",
                opship_core::paths::show(dir),
                dir.parent()
                    .unwrap_or(dir)
                    .join("bundle.Dockerfile")
                    .display()
            )?,
        }
    }
    Ok(())
}

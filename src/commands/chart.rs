//! `opship chart render | package | index | push`: Helm charts from bundles. The work is in
//! opship-chart (render, package, index) and opship-oci (push); this module turns flags and
//! the project config into their options.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use opship_chart::{CrdPlacement, Options, Overwrite, Templates};
use opship_core::config::Project;

use super::{CmdError, ExitStatus, load_project};
use crate::cli::{ChartCommand, ChartIndexArgs, ChartPackageArgs, ChartPushArgs, ChartRenderArgs};

/// Runs a `chart` subcommand.
pub fn run(cmd: ChartCommand, config: Option<&Path>) -> Result<ExitStatus, CmdError> {
    match cmd {
        ChartCommand::Render(args) => render(&args, load_project(config)?.as_ref()),
        ChartCommand::Package(args) => package(&args),
        ChartCommand::Index(args) => index(&args),
        ChartCommand::Push(args) => push(&args),
    }
}

fn render(args: &ChartRenderArgs, project: Option<&Project>) -> Result<ExitStatus, CmdError> {
    let chart_cfg = project
        .and_then(|p| p.config.chart.clone())
        .unwrap_or_default();
    let bundles: Vec<PathBuf> = if args.all {
        let p = project.ok_or("--all needs a config (opship.yaml) with `releases`")?;
        if p.config.releases.is_empty() {
            return Err(format!(
                "{}: no `releases` to render",
                opship_core::paths::show(&p.path)
            )
            .into());
        }
        p.config
            .releases
            .iter()
            .map(|r| p.bundle_dir(&r.version))
            .collect()
    } else {
        args.bundle.clone()
    };
    let crds = match args.crds.as_deref().or(chart_cfg.crds.as_deref()) {
        None => CrdPlacement::Templates,
        Some(s) => CrdPlacement::parse(s)
            .ok_or_else(|| format!("CRD placement `{s}`: use `templates` or `crds`"))?,
    };
    let opts = Options {
        name: args.name.clone().or(chart_cfg.name.clone()),
        crds,
    };
    let output = match (&args.output, &chart_cfg.output, project) {
        (Some(o), _, _) => o.clone(),
        (None, Some(o), Some(p)) => p.resolve(o),
        _ => PathBuf::from("dist/charts"),
    };
    let templates = Templates {
        dir: args.templates.clone(),
    };
    let environments = project
        .map(|p| p.config.environments.clone())
        .unwrap_or_default();
    // Render every chart (and overlay) before writing any, so a bad bundle leaves no partial
    // output.
    let mut charts = Vec::new();
    let progress = super::progress::Progress::new("rendered", bundles.len());
    for b in &bundles {
        let chart = opship_chart::render_bundle(b, &opts, &templates, &environments)?;
        let overlay = if args.overlays {
            if chart.name == "overlays" {
                return Err(
                    "a chart named `overlays` and --overlays would share a directory; \
                            rename the chart (--name)"
                        .into(),
                );
            }
            Some(opship_chart::overlay::render(
                b,
                &opts,
                &environments,
                &chart.name,
                &chart.version,
            )?)
        } else {
            None
        };
        progress.item_done(&format!("{} {}", chart.name, chart.version));
        charts.push((chart, overlay));
    }
    drop(progress);
    let versioned = charts.len() > 1;
    let mut seen = BTreeMap::new();
    let mut dirs = Vec::new();
    for (c, _) in &charts {
        let dir = if versioned {
            output.join(c.version.to_string()).join(&c.name)
        } else {
            output.join(&c.name)
        };
        if let Some(prev) = seen.insert(dir.clone(), c.version.clone()) {
            return Err(format!(
                "{}: two bundles render version {prev} of chart {}",
                opship_core::paths::show(&dir),
                c.name
            )
            .into());
        }
        dirs.push(dir);
    }
    let overwrite = if args.force {
        Overwrite::Force
    } else {
        Overwrite::Refuse
    };
    // Every directory is checked before any is written: one that holds someone's work stops
    // the whole run with nothing written.
    let mut writes = Vec::new();
    for ((c, overlay), dir) in charts.iter().zip(&dirs) {
        writes.push((&c.files, dir.clone(), opship_chart::CHART_DIR));
        if let Some(files) = overlay {
            // Next to the chart: `<output>[/<version>]/overlays/{base,<env>}`.
            writes.push((
                files,
                dir.with_file_name("overlays"),
                opship_chart::OVERLAY_DIR,
            ));
        }
    }
    for (files, dir, target) in &writes {
        opship_chart::check_dir(files, dir, *target, overwrite)?;
    }
    for (files, dir, target) in &writes {
        opship_chart::write_dir(files, dir, *target, overwrite)?;
        println!("{}", opship_core::paths::show(dir));
    }
    Ok(ExitStatus::Success)
}

fn package(args: &ChartPackageArgs) -> Result<ExitStatus, CmdError> {
    let mtime = super::source_date_epoch()?.unwrap_or(0);
    // Package everything first: a bad chart leaves no archive behind.
    let mut packages = Vec::new();
    for dir in &args.charts {
        let files = opship_chart::package::read_dir(dir)?;
        packages.push(opship_chart::package::package(&files, mtime, dir)?);
    }
    std::fs::create_dir_all(&args.destination)
        .map_err(|e| format!("{}: {e}", opship_core::paths::show(&args.destination)))?;
    for p in &packages {
        let path = args.destination.join(p.file_name());
        // Readable by everyone, like `helm package` writes them (they get served).
        opship_core::fsutil::write_atomic_with_mode(&path, &p.bytes, 0o644)?;
        println!("{} {}", opship_core::paths::show(&path), p.digest());
    }
    Ok(ExitStatus::Success)
}

fn now_epoch() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn index(args: &ChartIndexArgs) -> Result<ExitStatus, CmdError> {
    let epoch = super::source_date_epoch()?.unwrap_or_else(now_epoch);
    let merge = match &args.merge {
        Some(p) => Some(
            opship_core::yaml::parse_stream(
                &opship_core::input::read_string(p, opship_core::input::Kind::Catalog)?,
                p,
            )?
            .into_iter()
            .next()
            .map(|d| d.value)
            .ok_or_else(|| format!("{}: empty index", opship_core::paths::show(p)))?,
        ),
        None => None,
    };
    let opts = opship_chart::index::Options {
        url: args.url.clone(),
        created: opship_core::image::oci::rfc3339(epoch),
        merge,
    };
    let index = opship_chart::index::build(&args.dir, &opts)?;
    let path = args.dir.join("index.yaml");
    opship_core::fsutil::write_atomic_with_mode(
        &path,
        opship_core::yaml::to_string(&index)?.as_bytes(),
        0o644,
    )?;
    println!("{}", opship_core::paths::show(&path));
    Ok(ExitStatus::Success)
}

/// Credentials for `host`: `--username` with `--password-stdin`, else the stored ones.
fn credentials(args: &crate::cli::RegistryArgs, host: &str) -> Result<opship_oci::Auth, CmdError> {
    if let (Some(username), true) = (&args.username, args.password_stdin) {
        // Bounded like every other secret (`opship_core::input`).
        return Ok(opship_oci::Auth::Basic {
            username: username.clone(),
            password: super::registry::read_password()?,
        });
    }
    let found = opship_oci::auth::lookup(host, &opship_oci::auth::Env::from_process())?;
    tracing::info!("credentials for {host}: {}", found.source);
    Ok(found.auth)
}

fn push(args: &ChartPushArgs) -> Result<ExitStatus, CmdError> {
    let repository = args
        .remote
        .strip_prefix("oci://")
        .ok_or_else(|| format!("`{}`: the target must be oci://REGISTRY/REPO", args.remote))?;
    let bytes = opship_core::input::read(&args.chart, opship_core::input::Kind::Blob)?;
    let files = opship_chart::package::unpack(&bytes, &args.chart)?;
    let text = std::str::from_utf8(&files["Chart.yaml"]).map_err(|_| {
        format!(
            "{}: Chart.yaml is not UTF-8",
            opship_core::paths::show(&args.chart)
        )
    })?;
    let meta = opship_chart::package::chart_metadata(text, &args.chart.join("Chart.yaml"))?;
    let name = meta["name"].as_str().unwrap_or_default().to_owned();
    let version = meta["version"].as_str().unwrap_or_default().to_owned();
    let created = super::source_date_epoch()?.map(opship_core::image::oci::rfc3339);
    let artifact = opship_oci::artifact::ChartArtifact {
        config: opship_chart::oci::config(&meta),
        annotations: opship_chart::oci::annotations(&meta, created.as_deref()),
        archive: bytes,
    };
    let probe = opship_oci::registry::parse_reference(&format!("{repository}/{name}:probe"))?;
    let registry_args = &args.registry;
    let auth = credentials(registry_args, probe.resolve_registry())?;
    let options = opship_oci::Options {
        insecure: registry_args.insecure,
        ..opship_oci::Options::default()
    };
    let client = opship_oci::Registry::new(&probe, auth, options);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pushed =
        rt.block_on(client.push_chart(repository, &name, &version, &artifact, args.force))?;
    let note = if pushed.unchanged { " (unchanged)" } else { "" };
    println!("{}@{}{note}", pushed.reference, pushed.digest);
    Ok(ExitStatus::Success)
}

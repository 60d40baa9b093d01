//! `opship catalog ...`: argument handling for the file-based catalog library; registry
//! references are pulled (verified) into a temporary OCI layout first.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};

use opship_core::paths::show;

use opship_catalog::render::{self, CsvFormat};
use opship_catalog::write::{self, Format};
use opship_catalog::{Catalog, add, validate};

use super::{CmdError, ExitStatus};
use crate::cli::{
    CatalogAddArgs, CatalogBuildArgs, CatalogCommand, CatalogDeprecateArgs, CatalogDockerfileArgs,
    CatalogGraphArgs, CatalogOutput, CatalogRenderArgs, CatalogReport, CatalogTemplateArgs,
    CatalogValidateArgs, CatalogVerifyArgs, CsvFormatArg, GraphFormat, ImageFormat, RegistryArgs,
    RegistryOutput, SkipRangeArg, SkipsArg, TemplateKind, TemplateOutput,
};

/// Runs `opship catalog ...`; `config` is the `--config` given, if any.
pub fn run(cmd: &CatalogCommand, config: Option<&Path>) -> Result<ExitStatus, CmdError> {
    match cmd {
        CatalogCommand::Render(a) => render(a),
        CatalogCommand::Validate(a) => validate(a),
        CatalogCommand::Add(a) => add(a, config),
        CatalogCommand::Deprecate(a) => deprecate(a),
        CatalogCommand::Graph(a) => graph(a),
        CatalogCommand::Template(a) => template(a),
        CatalogCommand::Build(a) => build(a),
        CatalogCommand::Dockerfile(a) => dockerfile(a),
        CatalogCommand::Verify(a) => verify(a),
    }
}

/// The CSV format: from `--ocp-version` when given (OpenShift 4.17 and newer require
/// `olm.csv.metadata`, 4.16 and older forbid it), else `--csv-format`.
fn csv_format(f: CsvFormatArg, ocp: Option<&str>) -> Result<CsvFormat, CmdError> {
    if let Some(v) = ocp {
        return Ok(CsvFormat::for_openshift(v)
            .ok_or_else(|| format!("--ocp-version `{v}`: expected MAJOR.MINOR like 4.17"))?);
    }
    Ok(match f {
        CsvFormatArg::BundleObject => CsvFormat::BundleObject,
        CsvFormatArg::CsvMetadata => CsvFormat::CsvMetadata,
    })
}

/// Renders one reference: a bundle or catalog directory, a layout image, a registry image.
fn render_ref(
    arg: &OsStr,
    image: Option<&str>,
    format: CsvFormat,
    registry: &RegistryArgs,
    pin_digest: bool,
) -> Result<Catalog, CmdError> {
    // A path keeps every byte of the argument; only a registry reference must be text.
    let path = Path::new(arg);
    let shown = show(path);
    if path.is_dir() {
        if render::is_bundle_dir(path) {
            let b = render::render_dir(path, image.unwrap_or_default(), format)?;
            return Ok(Catalog {
                bundles: vec![b],
                ..Default::default()
            });
        }
        return Ok(opship_catalog::load::load_dir(path)?);
    }
    if let opship_validate::Source::Layout { layout, tag } = opship_validate::Source::parse(path) {
        return Ok(render::render_image(&layout, &tag, path, image, format)?);
    }
    let text = arg.to_str().unwrap_or_default();
    let text = text.strip_prefix("docker://").unwrap_or(text);
    // As Docker decides: a registry reference starts with a host (a `.` or `:` in the first
    // component, or `localhost`); anything else is a path that does not exist.
    let host_like = text
        .split_once('/')
        .is_some_and(|(h, _)| h.contains(['.', ':']) || h == "localhost");
    if !host_like || path.exists() {
        return Err(format!(
            "{shown}: no such bundle or catalog directory, `LAYOUT:TAG` image or REGISTRY/REPO[:TAG] reference"
        )
        .into());
    }
    let reference = opship_oci::registry::parse_reference(text)
        .map_err(|e| format!("{shown}: not a directory, layout image or image reference: {e}"))?;
    // Registered: a signal removes it with what was pulled into it.
    let tmp = opship_core::fsutil::temp_dir(".opship-pull-")?;
    let layout = tmp.path().join("image");
    let digest = pull(&reference, &layout, registry)?;
    // The image field of a pulled bundle is the reference as given, as opm writes it, or
    // with --pin-digest the digest just pulled and verified (signatures only protect images
    // that clusters pull by digest).
    let pinned = format!(
        "{}/{}@{}",
        reference.registry(),
        reference.repository(),
        digest
    );
    let image = match (image, pin_digest) {
        (Some(i), _) => i,
        (None, true) => pinned.as_str(),
        (None, false) => text,
    };
    Ok(render::render_image(
        &layout,
        "image",
        path,
        Some(image),
        format,
    )?)
}

fn pull(
    reference: &opship_oci::registry::Reference,
    layout: &Path,
    args: &RegistryArgs,
) -> Result<String, CmdError> {
    let auth = if let (Some(username), true) = (&args.username, args.password_stdin) {
        opship_oci::auth::Auth::Basic {
            username: username.clone(),
            password: super::registry::read_password()?,
        }
    } else {
        opship_oci::auth::lookup(
            reference.resolve_registry(),
            &opship_oci::auth::Env::from_process(),
        )?
        .auth
    };
    let client = opship_oci::registry::Registry::new(
        reference,
        auth,
        opship_oci::registry::Options {
            insecure: args.insecure,
            ..opship_oci::registry::Options::default()
        },
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(client.pull_to_layout(reference, layout, "image"))?;
    Ok(report.digest.to_string())
}

fn render(args: &CatalogRenderArgs) -> Result<ExitStatus, CmdError> {
    let format = csv_format(args.csv_format, args.ocp_version.as_deref())?;
    let mut cat = Catalog::default();
    for r in &args.refs {
        cat.merge(render_ref(
            r,
            args.image.as_deref(),
            format,
            &args.registry,
            args.pin_digest,
        )?);
    }
    let text = write::to_string(
        &cat,
        match args.output {
            CatalogOutput::Json => Format::Json,
            CatalogOutput::Yaml => Format::Yaml,
        },
    )?;
    write_stdout(&text)?;
    Ok(ExitStatus::Success)
}

fn validate(args: &CatalogValidateArgs) -> Result<ExitStatus, CmdError> {
    let report = validate::validate_dir(&args.dir)?;
    match args.output {
        CatalogReport::Json => {
            let mut text = serde_json::to_string_pretty(&report.to_json())?;
            text.push('\n');
            write_stdout(&text)?;
        }
        CatalogReport::Yaml => {
            write_stdout(&opship_core::yaml::to_string(&report.to_json())?)?;
        }
        CatalogReport::Text => {
            let warnings = report.warnings_text();
            if !warnings.is_empty() {
                eprint!("{warnings}");
            }
            if report.passed() {
                super::progress::note(&format!("{}: valid", show(&args.dir)));
            } else {
                write_stdout(&format!("{}\n", report.error_tree()))?;
            }
        }
    }
    Ok(if report.passed() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

fn add(args: &CatalogAddArgs, config: Option<&Path>) -> Result<ExitStatus, CmdError> {
    // A `catalogs:` target of opship.yaml supplies defaults; flags win.
    let project = match &args.target {
        Some(_) => Some(super::load_project(config)?.ok_or(
            "--target needs the project config (opship.yaml or --config) that lists `catalogs:`",
        )?),
        None => None,
    };
    let target = match (&args.target, &project) {
        (Some(name), Some(p)) => Some(
            p.config
                .catalogs
                .iter()
                .find(|c| &c.name == name)
                .ok_or_else(|| {
                    let names: Vec<&str> =
                        p.config.catalogs.iter().map(|c| c.name.as_str()).collect();
                    format!(
                        "no catalog target `{name}` in {} (targets: {})",
                        opship_core::paths::show(&p.path),
                        if names.is_empty() {
                            "none".to_owned()
                        } else {
                            names.join(", ")
                        }
                    )
                })?,
        ),
        _ => None,
    };
    let index = match (&args.index, target, &project) {
        (Some(i), _, _) => i.clone(),
        (None, Some(t), Some(p)) => p.resolve(&t.dir),
        _ => PathBuf::from("index"),
    };
    // The target's own settings (opship-catalog reads them as `release` does); flags win.
    let settings = target.map(add::TargetSettings::of).transpose()?;
    let channels = if !args.channel.is_empty() {
        args.channel.clone()
    } else if let Some(c) = settings.as_ref().and_then(|s| s.channels.clone()) {
        c
    } else if let Some(p) = project.as_ref().filter(|p| !p.config.channels.is_empty()) {
        p.config.channels.clone()
    } else {
        return Err(
            "name the channels: --channel stable[,fast] (or a --target with channels)".into(),
        );
    };
    let format = match (args.csv_format, &args.ocp_version, &settings) {
        (Some(f), _, _) => csv_format(f, None)?,
        (None, Some(v), _) => csv_format(CsvFormatArg::BundleObject, Some(v))?,
        (None, None, Some(s)) => s.format,
        (None, None, None) => CsvFormat::BundleObject,
    };
    let skip_range = match (&args.skip_range_value, args.skip_range, settings) {
        (Some(r), _, _) => add::SkipRangePolicy::Custom(r.clone()),
        (None, Some(p), _) => match p {
            SkipRangeArg::None => add::SkipRangePolicy::None,
            SkipRangeArg::Minor => add::SkipRangePolicy::Minor,
            SkipRangeArg::Major => add::SkipRangePolicy::Major,
            SkipRangeArg::All => add::SkipRangePolicy::All,
        },
        (None, None, Some(s)) => s.skip_range,
        (None, None, None) => add::SkipRangePolicy::None,
    };
    let path = PathBuf::from(&args.bundle);
    if path.is_dir() && !render::is_bundle_dir(&path) {
        return Err(format!(
            "{}: not a bundle directory (it needs manifests/ and metadata/)",
            show(&path)
        )
        .into());
    }
    let is_local = path.is_dir()
        || matches!(
            opship_validate::Source::parse(&path),
            opship_validate::Source::Layout { .. }
        );
    if is_local && args.image.is_none() {
        return Err(format!(
            "{}: a local bundle needs --image REF (the reference clusters will pull it by)",
            show(&path)
        )
        .into());
    }
    let cat = render_ref(
        &args.bundle,
        args.image.as_deref(),
        format,
        &args.registry,
        args.pin_digest,
    )?;
    let [bundle] = <[_; 1]>::try_from(cat.bundles).map_err(|_| {
        format!(
            "{}: not a bundle (renders to no or several bundles)",
            show(&path)
        )
    })?;
    let opts = add::AddOptions {
        channels,
        default_channel: args.default_channel.clone(),
        skip_range,
        skips: match args.skips {
            SkipsArg::None => add::SkipsPolicy::None,
            SkipsArg::SameMinor => add::SkipsPolicy::SameMinor,
        },
        replace: args.replace,
    };
    let name = bundle.name.clone();
    let out = add::add(&index, bundle, &opts)?;
    let mut msg = String::new();
    for (ch, e) in &out.entries {
        msg.push_str(&format!("{ch}: {}", e.name));
        if !e.replaces.is_empty() {
            msg.push_str(&format!(" replaces {}", e.replaces));
        }
        if !e.skips.is_empty() {
            msg.push_str(&format!(" skips [{}]", e.skips.join(", ")));
        }
        if !e.skip_range.is_empty() {
            msg.push_str(&format!(" skipRange {:?}", e.skip_range));
        }
        msg.push('\n');
    }
    if let Some(old) = &out.replaced {
        msg.push_str(&format!("replaced {old} with {name}\n"));
    }
    msg.push_str(&format!("wrote {}\n", opship_core::paths::show(&out.file)));
    write_stdout(&msg)?;
    Ok(ExitStatus::Success)
}

fn deprecate(args: &CatalogDeprecateArgs) -> Result<ExitStatus, CmdError> {
    let target = match (&args.bundle, &args.channel) {
        (Some(b), _) => add::Target::Bundle(b.clone()),
        (None, Some(c)) => add::Target::Channel(c.clone()),
        (None, None) => add::Target::Package,
    };
    let file = add::deprecate(&args.index, &args.package, target, &args.message)?;
    write_stdout(&format!("wrote {}\n", opship_core::paths::show(&file)))?;
    Ok(ExitStatus::Success)
}

fn graph(args: &CatalogGraphArgs) -> Result<ExitStatus, CmdError> {
    let cat = render_ref(
        &args.dir,
        None,
        CsvFormat::BundleObject,
        &args.registry,
        false,
    )?;
    let opts = opship_catalog::graph::GraphOptions {
        package: args.package.clone(),
        v0_semantics: args.draw_v0_semantics,
        minimum_edge: args.minimum_edge.clone(),
    };
    if let Some(p) = &args.package
        && !cat.package_names().contains(p)
    {
        return Err(format!("{}: no package {p}", show(Path::new(&args.dir))).into());
    }
    write_stdout(&match args.format {
        GraphFormat::Mermaid => opship_catalog::graph::mermaid(&cat, &opts)?,
        GraphFormat::Dot => opship_catalog::graph::dot(&cat, &opts)?,
    })?;
    Ok(ExitStatus::Success)
}

fn template(args: &CatalogTemplateArgs) -> Result<ExitStatus, CmdError> {
    use opship_core::input::{self, Kind};
    let text = if args.file == Path::new("-") {
        String::from_utf8(input::read_stdin(Kind::Template)?)
            .map_err(|_| "standard input: the template is not UTF-8 text")?
    } else {
        input::read_string(&args.file, Kind::Template)?
    };
    let format = csv_format(args.csv_format, args.ocp_version.as_deref())?;
    let renderer = |image: &str| -> opship_catalog::Result<opship_catalog::model::Bundle> {
        // A template names bundles: a directory that is no bundle is never read as a catalog
        // (opm renders only bundle images here), so `image: /etc` walks nothing and no file's
        // content can reach an error message.
        let path = Path::new(image);
        if path.is_dir() && !render::is_bundle_dir(path) {
            return Err(opship_catalog::Error::Usage(format!(
                "{}: image {image:?} is a directory but not a bundle directory (manifests/ and \
                 metadata/); a template's olm.bundle image is a bundle image or bundle \
                 directory, never a catalog",
                opship_core::paths::show(&args.file)
            )));
        }
        // A template's image is the reference as written, unless pinned to its digest.
        let given = (!args.pin_digest).then_some(image);
        let cat = render_ref(
            OsStr::new(image),
            given,
            format,
            &args.registry,
            args.pin_digest,
        )
        .map_err(|e| opship_catalog::Error::Usage(format!("render {image}: {e}")))?;
        <[_; 1]>::try_from(cat.bundles).map(|[b]| b).map_err(|_| {
            opship_catalog::Error::Usage(format!("{image}: does not render to exactly one bundle"))
        })
    };
    let cat = match args.kind {
        TemplateKind::Basic => opship_catalog::template::basic(&text, &args.file, &renderer)?,
        TemplateKind::Semver => opship_catalog::template::semver(&text, &args.file, &renderer)?,
    };
    let text = match args.output {
        TemplateOutput::Json => write::to_string(&cat, Format::Json)?,
        TemplateOutput::Yaml => write::to_string(&cat, Format::Yaml)?,
        TemplateOutput::Mermaid => {
            opship_catalog::graph::mermaid(&cat, &opship_catalog::graph::GraphOptions::default())?
        }
    };
    write_stdout(&text)?;
    Ok(ExitStatus::Success)
}

fn labels(list: &[String]) -> Result<std::collections::BTreeMap<String, String>, CmdError> {
    list.iter()
        .map(|l| {
            l.split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| format!("label `{l}`: expected KEY=VALUE").into())
        })
        .collect()
}

fn build(args: &CatalogBuildArgs) -> Result<ExitStatus, CmdError> {
    let epoch = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.is_empty() => v
            .parse::<u64>()
            .map_err(|_| format!("SOURCE_DATE_EPOCH `{v}` is not a number of seconds"))?,
        _ => 0,
    };
    let opts = opship_catalog::build::BuildOptions {
        epoch,
        labels: labels(&args.label)?,
        format: match args.format {
            ImageFormat::Oci => opship_core::image::oci::Format::Oci,
            ImageFormat::Docker => opship_core::image::oci::Format::Docker,
        },
        architecture: String::new(),
    };
    let Some(base) = &args.base else {
        let image =
            opship_catalog::build::build_into_layout(&args.dir, &args.layout, &args.tag, &opts)?;
        write_stdout(&format!("{} {}\n", args.tag, image.digest()))?;
        return Ok(ExitStatus::Success);
    };
    // Registered: a signal removes it with what was pulled into it.
    let tmp = opship_core::fsutil::temp_dir(".opship-pull-")?;
    let (layout, tag) = match opship_validate::Source::parse(Path::new(base)) {
        opship_validate::Source::Layout { layout, tag } => (layout, tag),
        opship_validate::Source::Dir(_) => {
            let text = base.strip_prefix("docker://").unwrap_or(base);
            let reference = opship_oci::registry::parse_reference(text)
                .map_err(|e| format!("--base {base}: not a LAYOUT:TAG or image reference: {e}"))?;
            let layout = tmp.path().join("base");
            pull(&reference, &layout, &args.registry)?;
            (layout, "image".to_owned())
        }
    };
    let desc = opship_catalog::build::build_on_base(
        &args.dir,
        &layout,
        &tag,
        &args.layout,
        &args.tag,
        &opts,
    )?;
    write_stdout(&format!("{} {}\n", args.tag, desc.digest))?;
    Ok(ExitStatus::Success)
}

fn dockerfile(args: &CatalogDockerfileArgs) -> Result<ExitStatus, CmdError> {
    let opts = opship_catalog::build::DockerfileOptions {
        base_image: args.base_image.clone(),
        builder_image: args.builder_image.clone(),
        labels: labels(&args.extra_labels)?,
    };
    let path = opship_catalog::build::write_dockerfile(&args.dir, &opts)?;
    write_stdout(&format!("wrote {}\n", opship_core::paths::show(&path)))?;
    Ok(ExitStatus::Success)
}

fn write_stdout(text: &str) -> Result<(), CmdError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Runs `opship catalog verify`: exit 1 unless every image verified.
fn verify(args: &CatalogVerifyArgs) -> Result<ExitStatus, CmdError> {
    use opship_release::catalog_verify::{self, Options};
    let verifiers = if args.key.is_empty() {
        vec![(
            super::verify_blob::described(None, &args.keyless),
            super::verify_blob::verifier(None, &args.keyless)?,
        )]
    } else {
        args.key
            .iter()
            .map(|k| {
                Ok((
                    super::verify_blob::described(Some(k), &args.keyless),
                    super::verify_blob::verifier(Some(k), &args.keyless)?,
                ))
            })
            .collect::<Result<Vec<_>, CmdError>>()?
    };
    let deadline = super::registry::deadline(args.limits.deadline)?;
    let options = Options {
        verifiers,
        catalog_image: args.catalog_image.clone(),
        layout: args.layout.clone(),
    };
    let connect = |r: &opship_oci::registry::Reference| {
        super::registry::client_with(r, &args.registry, false, deadline).map_err(|e| e.to_string())
    };
    let result = super::registry::runtime()?.block_on(catalog_verify::verify_catalog(
        &args.index,
        &options,
        &connect,
    ))?;
    let mut out = std::io::stdout().lock();
    match args.output {
        RegistryOutput::Json => {
            serde_json::to_writer_pretty(&mut out, &result)?;
            writeln!(out)?;
        }
        RegistryOutput::Text => {
            for image in &result.images {
                writeln!(out, "{image}")?;
            }
        }
    }
    let failed = result.failures().len();
    if failed > 0 {
        eprintln!(
            "{failed} of {} image(s) of {} did not verify",
            result.images.len(),
            opship_core::paths::show(&args.index)
        );
    }
    Ok(if failed == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

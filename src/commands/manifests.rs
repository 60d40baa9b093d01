//! `opship manifests`: a bundle (directory, layout image or registry image) rendered by
//! opship-install into the objects OLM v1 installs, written as one YAML stream or one file per
//! object.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use opship_core::output::{self, Files, Overwrite, Target};
use opship_install::{CertProvider, InlineConfig, Options};

use super::{CmdError, ExitStatus};
use crate::cli::{CertProviderArg, ManifestsArgs};

/// What `-o DIR` holds: `NN_<kind>_<name>.yaml` files only, so an older output is replaced
/// without `--force` and anything else is refused.
pub const TARGET: Target = Target {
    what: "manifests",
    generated: is_manifest_file,
};

/// Whether `rel` is named like a file of [`opship_install::files`]: `NN_<kind>_<name>.yaml`
/// directly in the directory (two or more digits, a lower-case kind, a name).
fn is_manifest_file(rel: &str) -> bool {
    let Some(stem) = rel.strip_suffix(".yaml") else {
        return false;
    };
    if rel.contains('/') {
        return false;
    }
    let mut parts = stem.splitn(3, '_');
    let (Some(n), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    n.len() >= 2
        && n.bytes().all(|b| b.is_ascii_digit())
        && !kind.is_empty()
        && kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && !name.is_empty()
}

/// Runs `opship manifests`.
pub fn run(args: &ManifestsArgs, project_config: Option<&Path>) -> Result<ExitStatus, CmdError> {
    // `-c/--config` is the global project config, which this command does not read; given on
    // the command line (not through OPSHIP_CONFIG) it is almost surely meant as the inline
    // config, and ignoring it would render without the user's deployment config.
    if let Some(p) = project_config
        && std::env::var_os("OPSHIP_CONFIG").is_none_or(|e| Path::new(&e) != p)
    {
        return Err(format!(
            "--config {} is the project config (opship.yaml), which `opship manifests` does not \
             read; give an OLM v1 inline config (`watchNamespace`, `deploymentConfig`) with \
             --inline-config FILE",
            opship_core::paths::show(p)
        )
        .into());
    }
    let config = match &args.inline_config {
        Some(path) => InlineConfig::read(path)?,
        None => InlineConfig::default(),
    };
    let opts = Options {
        install_namespace: args.namespace.clone(),
        watch_namespace: args
            .watch_namespace
            .clone()
            .or(config.watch_namespace.clone()),
        deployment_config: config.deployment_config.clone(),
        cert_provider: args.cert_provider.map(|p| match p {
            CertProviderArg::CertManager => CertProvider::CertManager,
            CertProviderArg::OpenshiftServiceca => CertProvider::OpenShiftServiceCa,
        }),
    };
    // Registered: a signal removes it with what was pulled into it.
    let tmp = opship_core::fsutil::temp_dir(".opship-pull-")?;
    let (dir, unpacked) = bundle_dir(&args.bundle, tmp.path())?;
    let rendered = render(&dir, &opts);
    // An unpacked image is named by the argument, not by the temporary directory.
    let (objects, webhooks) = match (rendered, unpacked) {
        (Ok(r), _) => r,
        (Err(e), false) => return Err(e.into()),
        (Err(e), true) => {
            return Err(e
                .to_string()
                .replace(
                    &opship_core::paths::show(&dir).to_string(),
                    &opship_core::paths::show(&args.bundle).to_string(),
                )
                .into());
        }
    };
    if webhooks > 0 && opts.cert_provider.is_none() {
        tracing::warn!(
            "{}: the CSV defines {webhooks} webhook(s) but no --cert-provider is given: they are \
             rendered without serving certificates; OLM v1 installs webhooks only with \
             `--cert-provider cert-manager` or `openshift-serviceca`",
            opship_core::paths::show(&args.bundle)
        );
    }
    if args.output == Path::new("-") {
        let text = opship_install::stream(&objects)?;
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
        return Ok(ExitStatus::Success);
    }
    let files: Files = opship_install::files(&objects)?
        .into_iter()
        .map(|(name, text)| (name, text.into_bytes()))
        .collect();
    let overwrite = if args.force {
        Overwrite::Force
    } else {
        Overwrite::Refuse
    };
    output::replace_dir(&args.output, &files, TARGET, overwrite)?;
    super::progress::note(&format!(
        "wrote {} manifests to {}",
        files.len(),
        opship_core::paths::show(&args.output)
    ));
    Ok(ExitStatus::Success)
}

/// Loads and renders; also counts the CSV's webhook definitions.
fn render(
    dir: &Path,
    opts: &Options,
) -> Result<(Vec<serde_json::Value>, usize), opship_install::Error> {
    let bundle = opship_install::load(dir)?;
    let webhooks = bundle.csv.value()["spec"]["webhookdefinitions"]
        .as_array()
        .map_or(0, Vec::len);
    Ok((opship_install::render(&bundle, opts)?, webhooks))
}

/// The bundle directory of BUNDLE, as `opship validate bundle` reads its arguments: a
/// registry reference is pulled (verified) into a layout under `tmp`, a layout image is
/// unpacked into `tmp`, anything else is a directory. Returns whether it was unpacked.
fn bundle_dir(arg: &Path, tmp: &Path) -> Result<(PathBuf, bool), CmdError> {
    if let Some(reference) = super::validate::registry_reference(arg) {
        let layout = tmp.join("image");
        let tag = super::validate::pull(&reference, &layout)?;
        return Ok((unpack(&layout, &tag, arg, tmp)?, true));
    }
    match opship_validate::Source::parse(arg) {
        opship_validate::Source::Dir(d) => Ok((d, false)),
        opship_validate::Source::Layout { layout, tag } => {
            Ok((unpack(&layout, &tag, arg, tmp)?, true))
        }
    }
}

/// Unpacks the image tagged `tag` of `layout` (every blob verified, within the unpacker's
/// limits) into `tmp/bundle`.
fn unpack(layout: &Path, tag: &str, shown: &Path, tmp: &Path) -> Result<PathBuf, CmdError> {
    use opship_core::image::{layout::Layout, unpack};
    let named = |e: opship_core::Error| format!("{}: {e}", opship_core::paths::show(shown));
    let image = Layout::new(layout).read_image(tag).map_err(named)?;
    let dir = tmp.join("bundle");
    let mut unpacker = unpack::DirUnpacker::new(&dir, unpack::Limits::default()).map_err(named)?;
    for layer in &image.layers {
        unpacker.add_layer(layer.as_slice()).map_err(named)?;
    }
    unpacker.finish().map_err(named)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::is_manifest_file;

    #[test]
    fn manifest_file_names() {
        for ok in [
            "00_clusterrole_argocd-operator.v0.6.0-1dhiybrldl1gyksid1dk2dqjsc72psdybc7iyvse5gpx.yaml",
            "12_deployment_webhook-operator-webhook.yaml",
            "100_service_a.b.yaml",
        ] {
            assert!(is_manifest_file(ok), "{ok}");
        }
        for bad in [
            "README.md",
            "0_service_a.yaml",
            "00_Service_a.yaml",
            "00_service_.yaml",
            "00_service.yaml",
            "sub/00_service_a.yaml",
            "sub/",
            "kustomization.yaml",
        ] {
            assert!(!is_manifest_file(bad), "{bad}");
        }
    }
}

//! The SLSA v1 provenance a release attaches to its images: what was built, from which commit
//! (`git rev-parse HEAD` of the project directory) and inputs (the config and the bundle's
//! files), by which opship version. Nothing in it depends on the time (unless
//! `SOURCE_DATE_EPOCH`), the registry host or the machine, so two releases of one commit give
//! the same predicate bytes.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use opship_core::image::Digest;
use opship_oci::cosign::provenance::{Provenance, Resource, Source};

use crate::plan::Plan;

/// The commit and repository URI of the project directory, when it is in a git checkout.
/// The URI is `origin`'s when there is one, else `git+file://` and the checkout's top level.
pub(crate) fn source(dir: &Path) -> Option<Source> {
    let git = |args: &[&str]| -> Option<String> {
        // Bounded like every child: a git waiting on a lock or a hook does not hold the release.
        let limits = opship_core::child::Limits::new(Duration::from_secs(60), 64 * 1024);
        let out = opship_core::child::run(
            Command::new("git").arg("-C").arg(dir).args(args),
            None,
            limits,
            &format!("git {}", args.join(" ")),
        )
        .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "HEAD"])?;
    let uri = match git(&["config", "--get", "remote.origin.url"]) {
        Some(u) if u.contains("://") => format!("git+{u}"),
        // scp-like `git@host:path`.
        Some(u) => match u.split_once(':') {
            Some((host, path)) => format!("git+ssh://{}/{}", host, path.trim_start_matches('/')),
            None => format!("git+file://{u}"),
        },
        None => format!("git+file://{}", git(&["rev-parse", "--show-toplevel"])?),
    };
    Some(Source { uri, commit })
}

/// The inputs of a release: the config and the bundle's files (names relative to the project).
pub(crate) fn inputs(
    plan: &Plan,
    bundle_files: &opship_core::bundle::Files,
) -> Result<Vec<Resource>, String> {
    let rel = |p: &Path| {
        p.strip_prefix(&plan.project.root)
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let mut inputs = vec![
        Resource::file(&rel(&plan.project.path), &plan.project.path).map_err(|e| e.to_string())?,
    ];
    let bundle_dir = rel(&plan.bundle_dir);
    inputs.extend(bundle_files.iter().map(|(name, bytes)| Resource {
        name: format!("{bundle_dir}/{name}"),
        digest: Digest::of(bytes),
    }));
    Ok(inputs)
}

/// The provenance of one image of the release: `artifact` (a registry-independent name: the
/// image's last path segment and tag) with `digest`, from `inputs`; start and finish at
/// `source_date_epoch` when given (the release's `SOURCE_DATE_EPOCH`), else no time.
pub(crate) fn of(
    plan: &Plan,
    source: Option<&Source>,
    inputs: Vec<Resource>,
    artifact: String,
    digest: &str,
    source_date_epoch: Option<u64>,
) -> Result<Provenance, String> {
    let digest = Digest::parse(digest).map_err(|e| e.to_string())?;
    let parameters = [
        ("package".to_owned(), plan.project.config.package.clone()),
        ("version".to_owned(), plan.version.clone()),
        ("channels".to_owned(), plan.channels().join(",")),
    ]
    .into();
    Ok(Provenance {
        artifacts: vec![Resource {
            name: artifact,
            digest,
        }],
        source: source.cloned(),
        inputs,
        parameters,
        builder_version: env!("CARGO_PKG_VERSION").into(),
        started_on: source_date_epoch,
        finished_on: source_date_epoch,
    })
}

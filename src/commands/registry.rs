//! `opship push | pull | inspect | tags | login`: the registry commands. The async client in
//! opship-oci runs on a current-thread tokio runtime created here.

use std::io::{Read, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;

use opship_oci::auth::{self, Auth, Env};
use opship_oci::batch;
use opship_oci::registry::{self, Options, Registry};

use super::{CmdError, ExitStatus};
use crate::cli::{
    InspectArgs, LoginArgs, PullArgs, PushArgs, RegistryArgs, RegistryOutput, TagsArgs,
};

pub(super) fn runtime() -> Result<tokio::runtime::Runtime, CmdError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Reads a password from stdin, without the final line break: at most the budget of a
/// secret (`/dev/zero` on stdin is refused, not read until memory runs out).
pub(super) fn read_password() -> Result<String, CmdError> {
    let budget = opship_core::input::Kind::Secret.budget();
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(budget + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > budget {
        return Err(format!(
            "--password-stdin: standard input holds more than {budget} bytes; that is no password"
        )
        .into());
    }
    let s = String::from_utf8(bytes)
        .map_err(|_| "--password-stdin: standard input is not UTF-8 text")?;
    let p = s
        .strip_suffix("\r\n")
        .or_else(|| s.strip_suffix('\n'))
        .unwrap_or(&s);
    if p.is_empty() {
        return Err("--password-stdin: standard input is empty".into());
    }
    Ok(p.to_owned())
}

/// Credentials for `host`: the flags, else the configured sources.
fn credentials(args: &RegistryArgs, host: &str) -> Result<Auth, CmdError> {
    if let (Some(username), true) = (&args.username, args.password_stdin) {
        return Ok(Auth::Basic {
            username: username.clone(),
            password: read_password()?,
        });
    }
    let found = auth::lookup(host, &Env::from_process())?;
    tracing::info!("credentials for {host}: {}", found.source);
    Ok(found.auth)
}

/// The deadline of `OPSHIP_REGISTRY_DEADLINE` (or the default).
pub(super) fn env_deadline() -> Result<Option<std::time::Duration>, CmdError> {
    let seconds = match std::env::var(DEADLINE_ENV) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("{DEADLINE_ENV}: `{v}` is not a number of seconds"))?,
        _ => registry::DEFAULT_DEADLINE.as_secs_f64(),
    };
    deadline(seconds)
}

/// A client for the registry of `reference` with `--deadline`.
pub(super) fn client_with(
    reference: &registry::Reference,
    args: &RegistryArgs,
    chunked: bool,
    deadline: Option<std::time::Duration>,
) -> Result<Registry, CmdError> {
    let auth = credentials(args, reference.resolve_registry())?;
    let mut options = options(args, chunked)?;
    options.deadline = deadline;
    Ok(Registry::new(reference, auth, options))
}

const DEADLINE_ENV: &str = "OPSHIP_REGISTRY_DEADLINE";

/// `--deadline` / `OPSHIP_REGISTRY_DEADLINE` in seconds: `None` for 0 (no deadline).
pub(super) fn deadline(seconds: f64) -> Result<Option<std::time::Duration>, CmdError> {
    if !(seconds.is_finite() && (0.0..=604_800.0).contains(&seconds)) {
        return Err(format!(
            "--deadline / {DEADLINE_ENV}: `{seconds}` is not a number of seconds between 0 (none) and 604800"
        )
        .into());
    }
    Ok((seconds > 0.0).then(|| std::time::Duration::from_secs_f64(seconds)))
}

/// Client options from `--insecure`, `--timeout` and `--retries`.
pub(super) fn options(args: &RegistryArgs, chunked: bool) -> Result<Options, CmdError> {
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 86_400.0) {
        return Err(format!(
            "--timeout / OPSHIP_REGISTRY_TIMEOUT: `{}` is not a number of seconds between 0 and 86400",
            args.timeout
        )
        .into());
    }
    let timeout = std::time::Duration::from_secs_f64(args.timeout);
    let defaults = Options::default();
    Ok(Options {
        insecure: args.insecure,
        chunked,
        attempts: args.retries.saturating_add(1),
        read_timeout: timeout,
        connect_timeout: defaults.connect_timeout.min(timeout),
        ..defaults
    })
}

/// Splits `LAYOUT:TAG`; `None` as tag when there is no `:TAG` part.
pub(super) fn split_layout(s: &str) -> (PathBuf, Option<String>) {
    match s.rsplit_once(':') {
        Some((dir, tag)) if !dir.is_empty() && !tag.is_empty() && !tag.contains(['/', '\\']) => {
            (PathBuf::from(dir), Some(tag.to_owned()))
        }
        _ => (PathBuf::from(s), None),
    }
}

/// Runs `opship push LAYOUT:TAG REF` and `opship push LAYOUT NAMESPACE --all-tags`.
pub fn push(args: &PushArgs) -> Result<ExitStatus, CmdError> {
    if args.all_tags {
        return push_all(args);
    }
    let (dir, tag) = split_layout(&args.source);
    let tag = tag.ok_or_else(|| {
        format!(
            "`{}`: expected LAYOUT:TAG (or --all-tags to push every image of a layout)",
            args.source
        )
    })?;
    let target = registry::parse_reference(&args.target)?;
    let from = from_reference(args, &target)?;
    let client = client_with(
        &target,
        &args.registry,
        args.chunked,
        deadline(args.limits.deadline)?,
    )?;
    let report =
        runtime()?.block_on(client.push_from_layout(&dir, &tag, &target, from.as_ref()))?;
    tracing::info!(
        "{} blobs: {} uploaded ({} bytes), {} already present, {} mounted",
        report.blobs,
        report.blobs - report.skipped - report.mounted,
        report.uploaded_bytes,
        report.skipped,
        report.mounted
    );
    super::progress::note(&format!(
        "pushed {}: {} of {} blobs already present{}",
        args.target,
        report.skipped,
        report.blobs,
        if report.mounted > 0 {
            format!(", {} mounted", report.mounted)
        } else {
            String::new()
        }
    ));
    // Signatures `opship sign` stored in the layout for this image travel with it.
    if let Some(s) = runtime()?.block_on(opship_oci::cosign::signing::push_layout_signatures(
        &client,
        &dir,
        &report.digest,
        &target,
    ))? {
        super::progress::note(&format!(
            "pushed its signatures: {} ({} in all)",
            s.location, s.signatures
        ));
    }
    let mut out = std::io::stdout().lock();
    match args.output {
        RegistryOutput::Json => {
            serde_json::to_writer(&mut out, &[pushed_json(&tag, &args.target, &report)])?;
            writeln!(out)?;
        }
        RegistryOutput::Text => writeln!(out, "{}", report.digest)?,
    }
    Ok(ExitStatus::Success)
}

/// `--from REPO`: a repository on the target's registry, or a full reference.
fn from_reference(
    args: &PushArgs,
    target: &registry::Reference,
) -> Result<Option<registry::Reference>, CmdError> {
    let Some(f) = &args.from else {
        return Ok(None);
    };
    let full = if f.contains('/') && registry::parse_reference(f).is_ok() {
        f.clone()
    } else {
        format!("{}/{f}", target.registry())
    };
    Ok(Some(registry::parse_reference(&full)?))
}

fn pushed_json(tag: &str, reference: &str, r: &registry::PushReport) -> serde_json::Value {
    serde_json::json!({
        "tag": tag,
        "reference": reference,
        "digest": r.digest.to_string(),
        "blobs": r.blobs,
        "present": r.skipped,
        "mounted": r.mounted,
        "uploadedBytes": r.uploaded_bytes,
    })
}

/// `opship push LAYOUT NAMESPACE --all-tags`: every tagged image, `--jobs` at a time over one
/// client. Lines are printed in layout order as images finish; the first failure stops the
/// rest (exit 2), and what was pushed stays pushed.
fn push_all(args: &PushArgs) -> Result<ExitStatus, CmdError> {
    let dir = PathBuf::from(&args.source);
    if !dir.join("index.json").exists() && split_layout(&args.source).1.is_some() {
        return Err(format!(
            "`{}`: with --all-tags the source is a layout directory, without `:TAG`",
            args.source
        )
        .into());
    }
    let plan = batch::plan(&dir, &args.target)?;
    let first = &plan[0].target;
    let from = from_reference(args, first)?;
    let client = client_with(
        first,
        &args.registry,
        args.chunked,
        deadline(args.limits.deadline)?,
    )?;
    let mut pushed = Vec::new();
    let mut failed = None;
    let (mut uploaded, mut present, mut blobs) = (0u64, 0usize, 0usize);
    let mut out = std::io::stdout().lock();
    let mut write_error = None;
    let progress = super::progress::Progress::new("pushed", plan.len());
    runtime()?.block_on(
        client.push_all(
            &dir,
            &plan,
            args.jobs,
            from.as_ref(),
            |p, result| match result {
                Ok(report) => {
                    uploaded += report.uploaded_bytes;
                    present += report.skipped;
                    blobs += report.blobs;
                    if args.output == RegistryOutput::Text
                        && let Err(e) = writeln!(out, "{} {}", p.destination, report.digest)
                    {
                        write_error = Some(e);
                        return ControlFlow::Break(());
                    }
                    pushed.push(pushed_json(&p.tag, &p.destination, &report));
                    progress.item_done(&p.destination);
                    ControlFlow::Continue(())
                }
                Err(e) => {
                    failed = Some(format!("{} (layout tag `{}`): {e}", p.destination, p.tag));
                    ControlFlow::Break(())
                }
            },
        ),
    );
    drop(progress);
    if let Some(e) = write_error {
        return Err(e.into());
    }
    if args.output == RegistryOutput::Json {
        serde_json::to_writer(&mut out, &pushed)?;
        writeln!(out)?;
    }
    super::progress::note(&format!(
        "pushed {} of {} images to {}: {} of {blobs} blobs already present, {uploaded} bytes uploaded",
        pushed.len(),
        plan.len(),
        args.target,
        present
    ));
    match failed {
        Some(message) => Err(message.into()),
        None => Ok(ExitStatus::Success),
    }
}

/// Runs `opship pull REF LAYOUT[:TAG]`.
pub fn pull(args: &PullArgs) -> Result<ExitStatus, CmdError> {
    let source = registry::parse_reference(&args.source)?;
    let (dir, tag) = split_layout(&args.target);
    let tag = tag
        .or_else(|| source.tag().map(str::to_owned))
        .unwrap_or_else(|| "latest".to_owned());
    let client = client_with(
        &source,
        &args.registry,
        false,
        deadline(args.limits.deadline)?,
    )?;
    let report = runtime()?.block_on(client.pull_to_layout(&source, &dir, &tag))?;
    let platforms = if report.platforms.is_empty() {
        String::new()
    } else {
        format!(
            "an index of {} manifests for {}; ",
            report.manifests - 1,
            report.platforms.join(", ")
        )
    };
    super::progress::note(&format!(
        "pulled {} into {}:{tag} ({platforms}{} blobs, {} bytes)",
        args.source,
        opship_core::paths::show(&dir),
        report.blobs,
        report.bytes
    ));
    writeln!(std::io::stdout(), "{}", report.digest)?;
    Ok(ExitStatus::Success)
}

/// Runs `opship inspect REF`.
pub fn inspect(args: &InspectArgs) -> Result<ExitStatus, CmdError> {
    let reference = registry::parse_reference(&args.reference)?;
    let client = client_with(
        &reference,
        &args.registry,
        false,
        deadline(args.limits.deadline)?,
    )?;
    let i = runtime()?.block_on(client.inspect(&reference))?;
    let mut out = std::io::stdout().lock();
    match args.output {
        RegistryOutput::Json if i.is_index() => {
            let v = serde_json::json!({
                "reference": args.reference,
                "digest": i.digest.to_string(),
                "mediaType": i.media_type,
                "manifest": i.manifest,
                "manifests": i.manifests,
            });
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out)?;
        }
        RegistryOutput::Json => {
            let v = serde_json::json!({
                "reference": args.reference,
                "digest": i.digest.to_string(),
                "mediaType": i.media_type,
                "labels": i.labels,
                "manifest": i.manifest,
                "config": i.config,
            });
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out)?;
        }
        RegistryOutput::Text => {
            writeln!(out, "Digest:    {}", i.digest)?;
            writeln!(out, "MediaType: {}", i.media_type)?;
            if i.is_index() {
                writeln!(out, "Manifests:")?;
                for m in &i.manifests {
                    let platform = m
                        .platform
                        .as_ref()
                        .map_or_else(|| "unknown".to_owned(), ToString::to_string);
                    writeln!(
                        out,
                        "  {} {platform} ({}, {} bytes)",
                        m.descriptor.digest, m.descriptor.media_type, m.descriptor.size
                    )?;
                }
            } else {
                writeln!(out, "Labels:")?;
                for (k, v) in &i.labels {
                    writeln!(out, "  {k}={v}")?;
                }
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// Runs `opship tags REPO`.
pub fn tags(args: &TagsArgs) -> Result<ExitStatus, CmdError> {
    let reference = registry::parse_reference(&args.repository)?;
    let client = client_with(
        &reference,
        &args.registry,
        false,
        deadline(args.limits.deadline)?,
    )?;
    let tags = runtime()?.block_on(client.list_tags(&reference))?;
    let mut out = std::io::stdout().lock();
    match args.output {
        RegistryOutput::Json => {
            serde_json::to_writer(&mut out, &tags)?;
            writeln!(out)?;
        }
        RegistryOutput::Text => {
            for t in tags {
                writeln!(out, "{t}")?;
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// Runs `opship login REGISTRY -u USER --password-stdin`.
pub fn login(args: &LoginArgs) -> Result<ExitStatus, CmdError> {
    let server = args
        .server
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_end_matches('/');
    if server.is_empty() || server.contains('/') {
        return Err(format!(
            "`{}`: expected a registry host such as quay.io",
            args.server
        )
        .into());
    }
    let password = read_password()?;
    let probe = registry::parse_reference(&format!("{server}/opship/login-check:latest"))?;
    let auth = Auth::Basic {
        username: args.username.clone(),
        password: password.clone(),
    };
    let options = Options {
        insecure: args.insecure,
        deadline: deadline(args.limits.deadline)?,
        ..Options::default()
    };
    let client = Registry::new(&probe, auth, options);
    runtime()?.block_on(client.check_login())?;
    let file = auth::store(server, &args.username, &password, &Env::from_process())?;
    super::progress::note(&format!(
        "Login Succeeded (credentials stored in {})",
        opship_core::paths::show(&file)
    ));
    Ok(ExitStatus::Success)
}

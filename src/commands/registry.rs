//! `opship push | pull | inspect | tags | login`: the registry commands. The async client in
//! opship-oci runs on a current-thread tokio runtime created here.

use std::io::{Read, Write};
use std::path::PathBuf;

use opship_oci::auth::{self, Auth, Env};
use opship_oci::registry::{self, Options, Registry};

use super::{CmdError, ExitStatus};
use crate::cli::{
    InspectArgs, LoginArgs, PullArgs, PushArgs, RegistryArgs, RegistryOutput, TagsArgs,
};

fn runtime() -> Result<tokio::runtime::Runtime, CmdError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Reads a password from stdin, without the final line break.
fn read_password() -> Result<String, CmdError> {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s)?;
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

fn client(
    reference: &registry::Reference,
    args: &RegistryArgs,
    chunked: bool,
) -> Result<Registry, CmdError> {
    let auth = credentials(args, reference.resolve_registry())?;
    Ok(Registry::new(reference, auth, options(args, chunked)?))
}

/// Client options from `--insecure`, `--timeout` and `--retries`.
fn options(args: &RegistryArgs, chunked: bool) -> Result<Options, CmdError> {
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
fn split_layout(s: &str) -> (PathBuf, Option<String>) {
    match s.rsplit_once(':') {
        Some((dir, tag)) if !dir.is_empty() && !tag.is_empty() && !tag.contains(['/', '\\']) => {
            (PathBuf::from(dir), Some(tag.to_owned()))
        }
        _ => (PathBuf::from(s), None),
    }
}

/// Runs `opship push LAYOUT:TAG REF`.
pub fn push(args: &PushArgs) -> Result<ExitStatus, CmdError> {
    let (dir, tag) = split_layout(&args.source);
    let tag = tag.ok_or_else(|| format!("`{}`: expected LAYOUT:TAG", args.source))?;
    let target = registry::parse_reference(&args.target)?;
    let from = match &args.from {
        Some(f) => {
            let full = if f.contains('/') && registry::parse_reference(f).is_ok() {
                f.clone()
            } else {
                format!("{}/{f}", target.registry())
            };
            Some(registry::parse_reference(&full)?)
        }
        None => None,
    };
    let client = client(&target, &args.registry, args.chunked)?;
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
    eprintln!(
        "pushed {}: {} of {} blobs already present{}",
        args.target,
        report.skipped,
        report.blobs,
        if report.mounted > 0 {
            format!(", {} mounted", report.mounted)
        } else {
            String::new()
        }
    );
    writeln!(std::io::stdout(), "{}", report.digest)?;
    Ok(ExitStatus::Success)
}

/// Runs `opship pull REF LAYOUT[:TAG]`.
pub fn pull(args: &PullArgs) -> Result<ExitStatus, CmdError> {
    let source = registry::parse_reference(&args.source)?;
    let (dir, tag) = split_layout(&args.target);
    let tag = tag
        .or_else(|| source.tag().map(str::to_owned))
        .unwrap_or_else(|| "latest".to_owned());
    let client = client(&source, &args.registry, false)?;
    let report = runtime()?.block_on(client.pull_to_layout(&source, &dir, &tag))?;
    eprintln!(
        "pulled {} into {}:{tag} ({} blobs, {} bytes)",
        args.source,
        dir.display(),
        report.blobs,
        report.bytes
    );
    writeln!(std::io::stdout(), "{}", report.digest)?;
    Ok(ExitStatus::Success)
}

/// Runs `opship inspect REF`.
pub fn inspect(args: &InspectArgs) -> Result<ExitStatus, CmdError> {
    let reference = registry::parse_reference(&args.reference)?;
    let client = client(&reference, &args.registry, false)?;
    let i = runtime()?.block_on(client.inspect(&reference))?;
    let mut out = std::io::stdout().lock();
    match args.output {
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
            writeln!(out, "Labels:")?;
            for (k, v) in &i.labels {
                writeln!(out, "  {k}={v}")?;
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// Runs `opship tags REPO`.
pub fn tags(args: &TagsArgs) -> Result<ExitStatus, CmdError> {
    let reference = registry::parse_reference(&args.repository)?;
    let client = client(&reference, &args.registry, false)?;
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
        ..Options::default()
    };
    let client = Registry::new(&probe, auth, options);
    runtime()?.block_on(client.check_login())?;
    let file = auth::store(server, &args.username, &password, &Env::from_process())?;
    eprintln!("Login Succeeded (credentials stored in {})", file.display());
    Ok(ExitStatus::Success)
}

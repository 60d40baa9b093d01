//! `opship key generate`, `opship sign`, `opship verify`: cosign key pairs and signatures.
//! Passwords come from `--password-file`, `COSIGN_PASSWORD` or a no-echo prompt on a
//! terminal, and are never printed or logged.

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use opship_oci::cosign::signing::{self, identity_of};
use opship_oci::cosign::verification::{self, Identity, Policy, Report};
use opship_oci::cosign::{PrivateKey, PublicKey};
use opship_oci::registry::{self, Reference, Registry};
use zeroize::Zeroizing;

use super::registry::{client, runtime, split_layout};
use super::{CmdError, ExitStatus};
use crate::cli::{KeyGenerateArgs, RegistryArgs, RegistryOutput, SignArgs, VerifyArgs};

/// An image named on the command line.
enum Target {
    /// An image in an OCI layout: directory and tag.
    Layout(PathBuf, String),
    /// An image in a registry.
    Remote(Reference),
}

fn target(s: &str) -> Result<Target, CmdError> {
    if let Some(rest) = s.strip_prefix("oci:") {
        let (dir, tag) = split_layout(rest);
        let tag = tag.ok_or_else(|| format!("`{s}`: expected oci:LAYOUT:TAG"))?;
        return Ok(Target::Layout(dir, tag));
    }
    if let (dir, Some(tag)) = split_layout(s)
        && dir.join("oci-layout").is_file()
    {
        return Ok(Target::Layout(dir, tag));
    }
    Ok(Target::Remote(registry::parse_reference(s)?))
}

/// One client per registry host, reused for every image on it (connections, tokens).
fn cached<'a>(
    cache: &'a mut HashMap<String, Registry>,
    reference: &Reference,
    args: &RegistryArgs,
) -> Result<&'a Registry, CmdError> {
    let host = reference.resolve_registry().to_owned();
    if !cache.contains_key(&host) {
        let c = client(reference, args, false)?;
        cache.insert(host.clone(), c);
    }
    Ok(&cache[&host])
}

/// `key=value` pairs of `-a`.
fn annotations(pairs: &[String]) -> Result<BTreeMap<String, String>, CmdError> {
    let mut out = BTreeMap::new();
    for p in pairs {
        match p.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                out.insert(k.to_owned(), v.to_owned());
            }
            _ => return Err(format!("-a `{p}`: expected KEY=VALUE").into()),
        }
    }
    Ok(out)
}

/// The key password: `--password-file` (first line), else `COSIGN_PASSWORD` (may be
/// empty), else a prompt when standard input is a terminal (twice with `confirm`).
fn password(file: Option<&Path>, confirm: bool) -> Result<Zeroizing<String>, CmdError> {
    if let Some(f) = file {
        let text = Zeroizing::new(
            std::fs::read_to_string(f)
                .map_err(|e| format!("--password-file {}: {e}", f.display()))?,
        );
        let first = text.lines().next().unwrap_or("");
        return Ok(Zeroizing::new(first.to_owned()));
    }
    if let Some(p) = std::env::var_os("COSIGN_PASSWORD") {
        return p
            .into_string()
            .map(Zeroizing::new)
            .map_err(|_| "COSIGN_PASSWORD is not valid UTF-8".into());
    }
    if !std::io::stdin().is_terminal() {
        return Err(
            "no key password: set COSIGN_PASSWORD (empty for none) or pass \
                    --password-file FILE (there is no terminal to prompt on)"
                .into(),
        );
    }
    let first = Zeroizing::new(rpassword::prompt_password(
        "Enter password for private key: ",
    )?);
    if confirm {
        let again = Zeroizing::new(rpassword::prompt_password(
            "Enter password for private key again: ",
        )?);
        if *again != *first {
            return Err("the passwords do not match".into());
        }
    }
    Ok(first)
}

/// Runs `opship key generate`.
pub fn generate(args: &KeyGenerateArgs) -> Result<ExitStatus, CmdError> {
    let prefix = args.output_key_prefix.as_os_str().to_string_lossy();
    let private = PathBuf::from(format!("{prefix}.key"));
    let public = PathBuf::from(format!("{prefix}.pub"));
    if !args.force {
        for f in [&private, &public] {
            if f.exists() {
                return Err(
                    format!("{} exists; not overwriting it without --force", f.display()).into(),
                );
            }
        }
    }
    let pw = password(args.password_file.as_deref(), true)?;
    let key = PrivateKey::generate()?;
    let files = key.to_files(pw.as_bytes())?;
    opship_core::fsutil::write_atomic_with_mode(&private, files.private_pem.as_bytes(), 0o600)?;
    opship_core::fsutil::write_atomic_with_mode(&public, files.public_pem.as_bytes(), 0o644)?;
    eprintln!(
        "Private key written to {} (mode 0600)\nPublic key written to {}",
        private.display(),
        public.display()
    );
    Ok(ExitStatus::Success)
}

/// Runs `opship sign`: every REF with one key (decrypted once).
pub fn sign(args: &SignArgs) -> Result<ExitStatus, CmdError> {
    let notes = annotations(&args.annotations)?;
    let targets = args
        .references
        .iter()
        .map(|r| target(r).map(|t| (r.as_str(), t)))
        .collect::<Result<Vec<_>, _>>()?;
    if args.bundle_format && targets.iter().any(|(_, t)| matches!(t, Target::Layout(..))) {
        return Err(
            "--bundle-format needs registry references (referrers live in a registry); \
                    sign layout images without it"
                .into(),
        );
    }
    if args.identity.is_some() && targets.len() > 1 {
        return Err("--identity names one repository: sign one image at a time with it".into());
    }
    let pw = password(args.password_file.as_deref(), false)?;
    let key = PrivateKey::read(&args.key, pw.as_bytes())?;
    drop(pw);
    let rt = runtime()?;
    let mut clients = HashMap::new();
    let mut out = std::io::stdout().lock();
    for (text, target) in &targets {
        let report = match target {
            Target::Layout(dir, tag) => {
                let identity = match &args.identity {
                    Some(i) => i.clone(),
                    None => layout_identity(text, tag)?,
                };
                signing::sign_layout(dir, tag, &key, &identity, &notes)?
            }
            Target::Remote(reference) => {
                let client = cached(&mut clients, reference, &args.registry)?;
                let digest = rt.block_on(client.resolve(reference))?;
                match reference.digest() {
                    Some(d) if d != digest.as_str() => {
                        return Err(format!(
                            "{text}: the registry answers {digest} for that digest"
                        )
                        .into());
                    }
                    Some(_) => {}
                    None => eprintln!("{text} resolved to {digest}; signing the digest"),
                }
                let identity = args
                    .identity
                    .clone()
                    .unwrap_or_else(|| identity_of(reference));
                let signature = signing::new_signature(&key, &identity, &digest, &notes)?;
                let report = rt.block_on(signing::push_signatures(
                    client,
                    reference,
                    &digest,
                    vec![signature],
                ))?;
                if args.bundle_format {
                    let b = rt.block_on(opship_oci::cosign::bundle::attach(
                        client, reference, &digest, &key,
                    ))?;
                    eprintln!("attached a Sigstore bundle: {b}");
                }
                report
            }
        };
        eprintln!(
            "signed {}: {} ({} signature{} there)",
            report.digest,
            report.location,
            report.signatures,
            if report.signatures == 1 { "" } else { "s" }
        );
        writeln!(out, "{}", report.location)?;
    }
    Ok(ExitStatus::Success)
}

/// The identity of an image in a layout: its tag when that is a full reference.
fn layout_identity(text: &str, tag: &str) -> Result<String, CmdError> {
    match registry::parse_reference(tag) {
        Ok(r) if tag.contains('/') => Ok(identity_of(&r)),
        _ => Err(format!(
            "`{text}`: an image in a layout has no repository; pass --identity REGISTRY/REPO \
             (the repository it is pushed to)"
        )
        .into()),
    }
}

/// Runs `opship verify`: exit 1 unless every REF has a signature that verifies.
pub fn verify(args: &VerifyArgs) -> Result<ExitStatus, CmdError> {
    let key = PublicKey::read(&args.key)?;
    let targets = args
        .references
        .iter()
        .map(|r| target(r).map(|t| (r.as_str(), t)))
        .collect::<Result<Vec<_>, _>>()?;
    let explicit = if args.any_identity {
        Some(Identity::Any)
    } else {
        args.identity.clone().map(Identity::Repository)
    };
    let required = annotations(&args.annotations)?;
    let rt = runtime()?;
    let mut clients = HashMap::new();
    let mut out = std::io::stdout().lock();
    let mut payloads: Vec<serde_json::Value> = Vec::new();
    let mut failed = 0usize;
    for (text, target) in &targets {
        let report: Report = match target {
            Target::Layout(dir, tag) => {
                let identity = match &explicit {
                    Some(i) => i.clone(),
                    None => Identity::Repository(layout_identity(text, tag).map_err(|_| {
                        format!(
                            "`{text}`: an image in a layout has no repository to check the \
                             signatures' identity against; pass --identity REGISTRY/REPO or \
                             --any-identity"
                        )
                    })?),
                };
                let policy = Policy {
                    identity,
                    annotations: required.clone(),
                };
                verification::verify_layout(dir, tag, &key, &policy)?
            }
            Target::Remote(reference) => {
                let policy = Policy {
                    identity: explicit
                        .clone()
                        .unwrap_or_else(|| Identity::Repository(identity_of(reference))),
                    annotations: required.clone(),
                };
                let client = cached(&mut clients, reference, &args.registry)?;
                rt.block_on(verification::verify_remote(
                    client, reference, &key, &policy,
                ))?
            }
        };
        for c in &report.checked {
            match (&c.outcome, args.output) {
                (Ok(claims), RegistryOutput::Json) => payloads.push(claims.json.clone()),
                (Ok(claims), RegistryOutput::Text) => writeln!(
                    out,
                    "verified {}: signs {}{}",
                    c.source,
                    claims.digest,
                    if claims.docker_reference.is_empty() {
                        String::new()
                    } else {
                        format!(" as {}", claims.docker_reference)
                    }
                )?,
                (Err(reason), RegistryOutput::Json) => {
                    eprintln!("rejected {}: {reason}", c.source);
                }
                (Err(reason), RegistryOutput::Text) => {
                    writeln!(out, "rejected {}: {reason}", c.source)?;
                }
            }
        }
        let verified = report.verified().len();
        if report.checked.is_empty() {
            failed += 1;
            eprintln!(
                "{text}: no signatures ({} does not exist; image {})",
                report.location, report.digest
            );
        } else if verified == 0 {
            failed += 1;
            eprintln!(
                "{text}: none of the {} signature(s) of {} verified",
                report.checked.len(),
                report.digest
            );
        } else {
            eprintln!(
                "{text}: {verified} of {} signature(s) of {} verified with {}",
                report.checked.len(),
                report.digest,
                args.key.display()
            );
        }
    }
    if args.output == RegistryOutput::Json {
        serde_json::to_writer_pretty(&mut out, &payloads)?;
        writeln!(out)?;
    }
    Ok(if failed == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

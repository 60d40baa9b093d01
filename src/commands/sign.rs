//! `opship key generate`, `opship sign`, `opship verify`: cosign key pairs and signatures.
//! Passwords come from `--password-file`, `COSIGN_PASSWORD` or a no-echo prompt on a
//! terminal, and are never printed or logged.

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use futures_util::stream::{self, StreamExt};
use opship_core::image::oci::Digest;
use opship_oci::cosign::signing::{self, identity_of};
use opship_oci::cosign::verification::{self, Identity, Policy, Report};
use opship_oci::cosign::{EncryptedKey, PrivateKey};
use opship_oci::registry::{self, Reference, Registry};
use zeroize::Zeroizing;

use super::registry::{client_with, deadline, runtime, split_layout};
use super::{CmdError, ExitStatus};
use crate::cli::{
    DeadlineArgs, KeyGenerateArgs, RegistryArgs, RegistryOutput, SignArgs, VerifyArgs,
};

/// An image named on the command line.
pub(super) enum Target {
    /// An image in an OCI layout: directory and tag.
    Layout(PathBuf, String),
    /// An image in a registry.
    Remote(Reference),
}

pub(super) fn target(s: &str) -> Result<Target, CmdError> {
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

/// Registry images signed or verified at once.
pub(super) const PARALLEL: usize = 8;

/// `registry/repository@digest`: one `.sig` manifest.
fn job_key(reference: &Reference, digest: &Digest) -> String {
    format!("{}@{digest}", identity_of(reference))
}

/// One client per registry host of the registry targets (credentials looked up once each).
pub(super) fn clients_for(
    targets: &[(&str, Target)],
    args: &RegistryArgs,
    limits: &DeadlineArgs,
) -> Result<HashMap<String, Registry>, CmdError> {
    let mut clients = HashMap::new();
    let deadline = deadline(limits.deadline)?;
    for (_, t) in targets {
        if let Target::Remote(r) = t
            && !clients.contains_key(r.resolve_registry())
        {
            clients.insert(
                r.resolve_registry().to_owned(),
                client_with(r, args, false, deadline)?,
            );
        }
    }
    Ok(clients)
}

/// The client of `reference`'s host (built by [`clients_for`]).
pub(super) fn client_of<'a>(
    clients: &'a HashMap<String, Registry>,
    reference: &Reference,
) -> &'a Registry {
    &clients[reference.resolve_registry()]
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

/// The key password: `--password-stdin` (the first line of standard input), `--password-file`
/// (first line; a regular file of at most 64 KiB, read through `opship_core::input`), else
/// `COSIGN_PASSWORD` (may be empty), else a prompt when standard input is a terminal (twice
/// with `confirm`).
pub(crate) fn password(
    stdin: bool,
    file: Option<&Path>,
    confirm: bool,
) -> Result<Zeroizing<String>, CmdError> {
    if stdin {
        // Bounded like every secret: `/dev/zero` on stdin is refused, not read until memory
        // runs out. The empty password is a password (cosign's too).
        let budget = opship_core::input::Kind::Secret.budget();
        let mut bytes = Zeroizing::new(Vec::new());
        std::io::stdin()
            .lock()
            .take(budget + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("--password-stdin: cannot read standard input: {e}"))?;
        if bytes.len() as u64 > budget {
            return Err(format!(
                "--password-stdin: standard input holds more than {budget} bytes; that is no \
                 password"
            )
            .into());
        }
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| "--password-stdin: standard input is not UTF-8 text")?;
        let first = text.lines().next().unwrap_or("");
        return Ok(Zeroizing::new(first.to_owned()));
    }
    if let Some(f) = file {
        let text = Zeroizing::new(
            opship_core::input::read_string(f, opship_core::input::Kind::Secret)
                .map_err(|e| format!("--password-file {e}"))?,
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

/// `--password-stdin` without `-u`: the key password comes on standard input (with `-u USER`
/// it is the registry password, as for the other registry commands).
pub(crate) fn key_password_stdin(args: &RegistryArgs) -> bool {
    args.password_stdin && args.username.is_none()
}

/// Runs `opship key generate`.
pub fn generate(args: &KeyGenerateArgs) -> Result<ExitStatus, CmdError> {
    let prefix = args.output_key_prefix.as_os_str().to_string_lossy();
    let private = PathBuf::from(format!("{prefix}.key"));
    let public = PathBuf::from(format!("{prefix}.pub"));
    if !args.force {
        for f in [&private, &public] {
            if f.exists() {
                return Err(format!(
                    "{} exists; not overwriting it without --force",
                    opship_core::paths::show(f)
                )
                .into());
            }
        }
    }
    let pw = password(args.password_stdin, args.password_file.as_deref(), true)?;
    let key = PrivateKey::generate()?;
    let files = key.to_files(pw.as_bytes())?;
    opship_core::fsutil::write_atomic_with_mode(&private, files.private_pem.as_bytes(), 0o600)?;
    opship_core::fsutil::write_atomic_with_mode(&public, files.public_pem.as_bytes(), 0o644)?;
    super::progress::note(&format!(
        "Private key written to {} (mode 0600)\nPublic key written to {}",
        opship_core::paths::show(&private),
        opship_core::paths::show(&public)
    ));
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
    // Layout identities first: a missing --identity is a usage error before any work.
    let layout_identities = targets
        .iter()
        .map(|(text, t)| match (t, &args.identity) {
            (Target::Layout(..), Some(i)) => Ok(Some(i.clone())),
            (Target::Layout(_, tag), None) => layout_identity(text, tag).map(Some),
            (Target::Remote(_), _) => Ok(None),
        })
        .collect::<Result<Vec<_>, CmdError>>()?;
    let Some(key_path) = &args.key else {
        return super::keyless::sign(args, &targets, &notes);
    };
    if args.keyless.identity_token.is_some() {
        return Err("--identity-token is for keyless signing: pass either it or --key".into());
    }
    // The key file is read and checked before any password is asked for.
    let encrypted = EncryptedKey::read(key_path)?;
    let pw = password(
        key_password_stdin(&args.registry),
        args.password_file.as_deref(),
        false,
    )?;
    let key = encrypted.decrypt(pw.as_bytes())?;
    drop(pw);
    let rt = runtime()?;
    let clients = clients_for(&targets, &args.registry, &args.limits)?;
    // Resolve every registry image first, several at a time.
    let digests = rt.block_on(
        stream::iter(&targets)
            .map(|(_, t)| async {
                match t {
                    Target::Remote(r) => client_of(&clients, r).resolve(r).await.map(Some),
                    Target::Layout(..) => Ok(None),
                }
            })
            .buffered(PARALLEL)
            .collect::<Vec<_>>(),
    );
    // One signature per (repository, digest), even when several tags name it: two
    // read-modify-writes of one `.sig` manifest at once would lose one.
    let mut jobs: Vec<(String, &Reference, Digest)> = Vec::new();
    let mut resolved: Vec<Option<Digest>> = Vec::with_capacity(targets.len());
    for ((text, target), digest) in targets.iter().zip(digests) {
        let digest = digest?;
        resolved.push(digest.clone());
        let (Target::Remote(reference), Some(digest)) = (target, digest) else {
            continue;
        };
        match reference.digest() {
            Some(d) if d != digest.as_str() => {
                return Err(
                    format!("{text}: the registry answers {digest} for that digest").into(),
                );
            }
            Some(_) => {}
            None => {
                super::progress::note(&format!("{text} resolved to {digest}; signing the digest"))
            }
        }
        let job = job_key(reference, &digest);
        if !jobs.iter().any(|(k, ..)| *k == job) {
            jobs.push((job, reference, digest));
        }
    }
    let layouts = targets
        .iter()
        .filter(|(_, t)| matches!(t, Target::Layout(..)))
        .count();
    let progress = super::progress::Progress::new("signed", jobs.len() + layouts);
    let reports = rt.block_on(
        stream::iter(&jobs)
            .map(|(_, reference, digest)| async {
                let client = client_of(&clients, reference);
                let identity = args
                    .identity
                    .clone()
                    .unwrap_or_else(|| identity_of(reference));
                let report = signing::sign_digest(
                    client,
                    reference,
                    digest,
                    &key,
                    &identity,
                    &notes,
                    args.bundle_format
                        || args.keyless.format == Some(crate::cli::SignFormat::Cosign3),
                )
                .await?;
                if let Some(b) = &report.bundle {
                    progress.println(&format!("Sigstore bundle: {b}"));
                }
                progress.item_done(&reference.whole());
                Ok::<_, opship_oci::Error>(report)
            })
            .buffered(PARALLEL)
            .collect::<Vec<_>>(),
    );
    let mut done: HashMap<String, signing::SignReport> = HashMap::new();
    for ((job, ..), report) in jobs.iter().zip(reports) {
        done.insert(job.clone(), report?);
    }
    let mut out = std::io::stdout().lock();
    for (((text, target), digest), identity) in
        targets.iter().zip(&resolved).zip(&layout_identities)
    {
        let report = match (target, digest) {
            (Target::Layout(dir, tag), _) => {
                let identity = identity.as_deref().unwrap_or_default();
                let report = signing::sign_layout(dir, tag, &key, identity, &notes)?;
                progress.item_done(text);
                report
            }
            (Target::Remote(reference), Some(digest)) => done
                .get(&job_key(reference, digest))
                .cloned()
                .ok_or_else(|| format!("{text}: not signed"))?,
            (Target::Remote(_), None) => return Err(format!("{text}: not resolved").into()),
        };
        progress.println(&format!(
            "{} {}: {} ({} signature{} there)",
            if report.added {
                "signed"
            } else {
                "already signed (the same payload verifies with this key; nothing added)"
            },
            report.digest,
            report.location,
            report.signatures,
            if report.signatures == 1 { "" } else { "s" }
        ));
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
    let key = super::verify_blob::verifier(args.key.as_deref(), &args.keyless)?;
    let by = super::verify_blob::described(args.key.as_deref(), &args.keyless);
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
    // Policies first (the layout identity errors are usage errors, before any network).
    let policies = targets
        .iter()
        .map(|(text, target)| {
            let identity = match (target, &explicit) {
                (_, Some(i)) => i.clone(),
                (Target::Remote(reference), None) => Identity::Repository(identity_of(reference)),
                (Target::Layout(_, tag), None) => {
                    Identity::Repository(layout_identity(text, tag).map_err(|_| {
                        format!(
                            "`{text}`: an image in a layout has no repository to check the \
                             signatures' identity against; pass --identity REGISTRY/REPO or \
                             --any-identity"
                        )
                    })?)
                }
            };
            Ok(Policy {
                identity,
                annotations: required.clone(),
            })
        })
        .collect::<Result<Vec<_>, CmdError>>()?;
    let rt = runtime()?;
    let clients = clients_for(&targets, &args.registry, &args.limits)?;
    let progress = super::progress::Progress::new("verified", targets.len());
    let reports = rt.block_on(
        stream::iter(targets.iter().zip(&policies))
            .map(|((text, target), policy)| async {
                let report = match target {
                    Target::Layout(dir, tag) => {
                        verification::verify_layout_with(dir, tag, &key, policy)
                    }
                    Target::Remote(reference) => {
                        verification::verify_remote_with(
                            client_of(&clients, reference),
                            reference,
                            &key,
                            policy,
                        )
                        .await
                    }
                };
                progress.item_done(text);
                report
            })
            .buffered(PARALLEL)
            .collect::<Vec<_>>(),
    );
    drop(progress);
    let mut out = std::io::stdout().lock();
    let mut payloads: Vec<serde_json::Value> = Vec::new();
    let mut failed = 0usize;
    for ((text, _), report) in targets.iter().zip(reports) {
        let report: Report = report?;
        for c in &report.checked {
            match (&c.outcome, args.output) {
                (Ok(claims), RegistryOutput::Json) => payloads.push(match &claims.signer {
                    Some(s) => s.cosign_json(&claims.json),
                    None => claims.json.clone(),
                }),
                (Ok(claims), RegistryOutput::Text) => writeln!(
                    out,
                    "verified {}: signs {}{}{}",
                    c.source,
                    claims.digest,
                    if claims.docker_reference.is_empty() {
                        String::new()
                    } else {
                        format!(" as {}", claims.docker_reference)
                    },
                    signed_by(claims.signer.as_ref())
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
        let looked = format!("{} does not exist", report.location);
        let count = Count {
            noun: "signature",
            looked: &looked,
            checked: report.checked.len(),
            verified,
        };
        if !count.report(text, &report.digest, &by) {
            failed += 1;
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

/// `; signed by IDENTITY (issuer …, repository …)` for a certificate: the signer itself, not
/// only the policy it matched.
pub(super) fn signed_by(signer: Option<&opship_oci::cosign::sigstore::CertSigner>) -> String {
    signer.map_or(String::new(), |s| format!("; signed by {s}"))
}

/// How many signatures or attestations of one image were found and verified.
pub(super) struct Count<'a> {
    /// `signature` or `attestation`.
    pub(super) noun: &'a str,
    /// Where they were looked for, said when there are none.
    pub(super) looked: &'a str,
    pub(super) checked: usize,
    pub(super) verified: usize,
}

impl Count<'_> {
    /// Says on stderr what `verify` and `verify-attestation` conclude for one image; false
    /// when nothing verified.
    pub(super) fn report(&self, text: &str, digest: &Digest, by: &str) -> bool {
        let (noun, checked, verified) = (self.noun, self.checked, self.verified);
        if checked == 0 {
            eprintln!("{text}: no {noun}s ({}; image {digest})", self.looked);
        } else if verified == 0 {
            eprintln!("{text}: none of the {checked} {noun}(s) of {digest} verified");
        } else {
            eprintln!("{text}: {verified} of {checked} {noun}(s) of {digest} verified with {by}");
        }
        verified > 0
    }
}

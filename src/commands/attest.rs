//! `opship attest` and `opship verify-attestation`: in-toto attestations in cosign's formats
//! (`opship_oci::cosign::attestation`). Registry images only.

use std::io::Write;

use futures_util::stream::{self, StreamExt};
use opship_oci::cosign::EncryptedKey;
use opship_oci::cosign::attestation::{self, Format, Predicate};
use opship_oci::registry::Reference;

use super::registry::runtime;
use super::sign::{
    Count, PARALLEL, Target, client_of, clients_for, key_password_stdin, password, target,
};
use super::{CmdError, ExitStatus};
use crate::cli::{AttestArgs, RegistryOutput, VerifyAttestationArgs};

/// The registry references of `refs`; a layout image is a usage error.
pub(super) fn remote_targets(refs: &[String]) -> Result<Vec<(&str, Target)>, CmdError> {
    refs.iter()
        .map(|r| match target(r)? {
            Target::Layout(..) => Err(format!(
                "`{r}`: attestations live in a registry; push the image, then attest its reference"
            )
            .into()),
            t => Ok((r.as_str(), t)),
        })
        .collect()
}

pub(super) fn remote(t: &Target) -> &Reference {
    match t {
        Target::Remote(r) => r,
        Target::Layout(..) => unreachable!("remote_targets refuses layouts"),
    }
}

/// Runs `opship attest`: every REF with one key and one predicate.
pub fn attest(args: &AttestArgs) -> Result<ExitStatus, CmdError> {
    let targets = remote_targets(&args.references)?;
    // Predicate and key file first: usage errors before any password or network.
    let predicate = Predicate::read(&args.predicate, &args.kind)?;
    let Some(key_path) = &args.key else {
        return super::keyless::attest(args, &targets, &predicate);
    };
    let encrypted = EncryptedKey::read(key_path)?;
    let pw = password(
        key_password_stdin(&args.registry),
        args.password_file.as_deref(),
        false,
    )?;
    let key = encrypted.decrypt(pw.as_bytes())?;
    drop(pw);
    let format =
        if args.bundle_format || args.keyless.format == Some(crate::cli::SignFormat::Cosign3) {
            Format::Bundle
        } else {
            Format::Att
        };
    let auto = !args.bundle_format && args.keyless.format.is_none();
    let rt = runtime()?;
    let clients = clients_for(&targets, &args.registry, &args.limits)?;
    let progress = super::progress::Progress::new("attested", targets.len());
    let (clients, key, predicate, progress_ref) = (&clients, &key, &predicate, &progress);
    let reports = rt.block_on(
        stream::iter(&targets)
            .map(|(text, t)| async move {
                let progress = progress_ref;
                let reference = remote(t);
                let client = client_of(clients, reference);
                let digest = client.resolve_pinned(reference, text).await?;
                // No format asked for: where cosign 2 and cosign 3 readers both find it.
                let format = if auto {
                    attestation::auto_format(client, reference, &digest, false).await?
                } else {
                    format
                };
                let r =
                    attestation::attest(client, reference, &digest, key, predicate, format).await;
                progress.item_done(text);
                r
            })
            .buffered(PARALLEL)
            .collect::<Vec<_>>(),
    );
    drop(progress);
    let mut out = std::io::stdout().lock();
    for ((text, _), report) in targets.iter().zip(reports) {
        let report = report?;
        eprintln!(
            "{} {text} ({}): {} predicate {} ({})",
            if report.added {
                "attested"
            } else {
                "already attested"
            },
            report.digest,
            predicate.type_uri,
            report.predicate_digest,
            placed(&report)
        );
        writeln!(out, "{}", report.location)?;
        if let Some(also) = &report.also {
            writeln!(out, "{also}")?;
        }
    }
    Ok(ExitStatus::Success)
}

/// Where an attestation went, said on stderr: with both formats, which reader finds which.
pub(super) fn placed(report: &attestation::AttestReport) -> String {
    match &report.also {
        Some(bundle) => format!(
            "`.att` for cosign 2: {}; Sigstore bundle referrer for cosign 3: {bundle}",
            report.location
        ),
        None => report.location.clone(),
    }
}

/// Runs `opship verify-attestation`: exit 1 unless every REF has an attestation that verifies.
pub fn verify_attestation(args: &VerifyAttestationArgs) -> Result<ExitStatus, CmdError> {
    let key = super::verify_blob::verifier(args.key.as_deref(), &args.keyless)?;
    let by = super::verify_blob::described(args.key.as_deref(), &args.keyless);
    let targets = remote_targets(&args.references)?;
    let wanted = args
        .kind
        .as_deref()
        .map(attestation::predicate_type)
        .transpose()?;
    let rt = runtime()?;
    let clients = clients_for(&targets, &args.registry, &args.limits)?;
    let progress = super::progress::Progress::new("verified", targets.len());
    let (clients, key_ref, wanted_ref, progress_ref) = (&clients, &key, &wanted, &progress);
    let reports = rt.block_on(
        stream::iter(&targets)
            .map(|(text, t)| async move {
                let progress = progress_ref;
                let reference = remote(t);
                let r = attestation::verify_with(
                    client_of(clients, reference),
                    reference,
                    key_ref,
                    wanted_ref.as_deref(),
                )
                .await;
                progress.item_done(text);
                r
            })
            .buffered(PARALLEL)
            .collect::<Vec<_>>(),
    );
    drop(progress);
    let mut out = std::io::stdout().lock();
    let mut statements = Vec::new();
    let mut failed = 0usize;
    for ((text, _), report) in targets.iter().zip(reports) {
        let report = report?;
        let mut verified = 0usize;
        for c in &report.checked {
            match (&c.outcome, args.output) {
                (Ok(st), RegistryOutput::Json) => {
                    verified += 1;
                    statements.push(st.json.clone());
                }
                (Ok(st), RegistryOutput::Text) => {
                    verified += 1;
                    writeln!(
                        out,
                        "verified {}: {} about {}{}",
                        c.source,
                        st.predicate_type,
                        report.digest,
                        super::sign::signed_by(st.signer.as_ref())
                    )?;
                }
                (Err(reason), RegistryOutput::Json) => {
                    eprintln!("rejected {}: {reason}", c.source)
                }
                (Err(reason), RegistryOutput::Text) => {
                    writeln!(out, "rejected {}: {reason}", c.source)?
                }
            }
        }
        let looked = format!("looked in {}", report.location);
        let count = Count {
            noun: "attestation",
            looked: &looked,
            checked: report.checked.len(),
            verified,
        };
        if !count.report(text, &report.digest, &by) {
            failed += 1;
        }
    }
    if args.output == RegistryOutput::Json {
        serde_json::to_writer_pretty(&mut out, &statements)?;
        writeln!(out)?;
    }
    Ok(if failed == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

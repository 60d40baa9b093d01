//! `opship sign` and `opship attest` without `--key`: keyless signing through
//! `opship_oci::cosign::keyless` (identity token, Fulcio, Rekor, timestamp authority).

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use futures_util::StreamExt as _;

use opship_oci::cosign::attestation::{self, Predicate};
use opship_oci::cosign::keyless::services::Overrides;
use opship_oci::cosign::keyless::token::TokenEnv;
use opship_oci::cosign::keyless::{Options, Session};
use opship_oci::cosign::signing::{self, Format, identity_of};

use super::registry::runtime;
use super::sign::{Target, client_of, clients_for};
use super::{CmdError, ExitStatus};
use crate::cli::{AttestArgs, KeylessArgs, SignArgs, SignFormat};

/// Images signed at once by keyless `opship sign` (each holds a log entry in flight).
const SIGN_CONCURRENCY: usize = 8;

pub(super) fn options(k: &KeylessArgs, trusted_root: Option<&std::path::Path>) -> Options {
    Options {
        identity_token: k.identity_token.clone(),
        env: TokenEnv::from_process(),
        overrides: Overrides {
            signing_config: k.signing_config.clone(),
            fulcio: k.fulcio_url.clone(),
            rekor: k.rekor_url.clone(),
            tsa: k.timestamp_server_url.clone(),
        },
        timeout: Duration::from_secs(60),
        trusted_root: trusted_root.map(std::path::Path::to_path_buf),
    }
}

/// The format for one image: the flag, else the image's existing format, else cosign 3.
async fn format_for(
    wanted: Option<SignFormat>,
    client: &opship_oci::Registry,
    reference: &opship_oci::registry::Reference,
    digest: &opship_core::image::oci::Digest,
) -> Result<Format, opship_oci::Error> {
    Ok(match wanted {
        Some(SignFormat::Cosign2) => Format::Cosign2,
        Some(SignFormat::Cosign3) => Format::Cosign3,
        None => signing::existing_format(client, reference, digest)
            .await?
            .unwrap_or(Format::Cosign3),
    })
}

fn said(session: &Session) {
    let s = session.services();
    super::progress::note(&format!(
        "keyless: certificate for {} (issuer {}) from Fulcio {}; log {}; timestamps {}",
        session.identity(),
        session.issuer(),
        s.fulcio,
        s.rekor
            .as_ref()
            .map(|r| format!("{} (Rekor v{})", r.url, r.version))
            .unwrap_or_else(|| "none".into()),
        s.tsa.as_deref().unwrap_or("none"),
    ));
}

/// Keyless `opship sign`: images one after the other (one certificate for all).
pub fn sign(
    args: &SignArgs,
    targets: &[(&str, Target)],
    notes: &BTreeMap<String, String>,
) -> Result<ExitStatus, CmdError> {
    if targets.iter().any(|(_, t)| matches!(t, Target::Layout(..))) {
        return Err(
            "keyless signing needs registry references (the bundle is a referrer); push the \
             layout first, or sign it with --key"
                .into(),
        );
    }
    let rt = runtime()?;
    let clients = clients_for(targets, &args.registry, &args.limits)?;
    let session = rt.block_on(Session::start(&options(
        &args.keyless,
        args.trusted_root.as_deref(),
    )))?;
    said(&session);
    let mut out = std::io::stdout().lock();
    // Each signature waits on the log (rekor-tiles integrates entries in batches, about a
    // second each): images are signed a few at a time, reported in the order given; the first
    // failure stops the command (images before it are signed, as one after the other).
    let remote = targets.iter().filter_map(|(text, t)| match t {
        Target::Remote(reference) => Some((*text, reference)),
        Target::Layout(..) => None,
    });
    let (session, clients) = (&session, &clients);
    let mut signed = futures_util::stream::iter(remote.map(|(text, reference)| async move {
        let client = client_of(clients, reference);
        let digest = client.resolve_pinned(reference, text).await?;
        let format = format_for(args.keyless.format, client, reference, &digest).await?;
        let identity = args
            .identity
            .clone()
            .unwrap_or_else(|| identity_of(reference));
        signing::sign_keyless(
            client, reference, &digest, session, &identity, notes, format,
        )
        .await
    }))
    .buffered(SIGN_CONCURRENCY);
    while let Some(report) = rt.block_on(signed.next()) {
        let report = report?;
        eprintln!(
            "signed {} keylessly as {}: {}",
            report.digest,
            session.identity(),
            report.location
        );
        writeln!(out, "{}", report.location)?;
    }
    Ok(ExitStatus::Success)
}

/// Keyless `opship attest`.
pub fn attest(
    args: &AttestArgs,
    targets: &[(&str, Target)],
    predicate: &Predicate,
) -> Result<ExitStatus, CmdError> {
    let rt = runtime()?;
    let clients = clients_for(targets, &args.registry, &args.limits)?;
    let session = rt.block_on(Session::start(&options(
        &args.keyless,
        args.trusted_root.as_deref(),
    )))?;
    said(&session);
    let mut out = std::io::stdout().lock();
    for (text, t) in targets {
        let reference = super::attest::remote(t);
        let client = client_of(&clients, reference);
        let report = rt.block_on(async {
            let digest = client.resolve_pinned(reference, text).await?;
            let wanted = if args.bundle_format {
                Some(SignFormat::Cosign3)
            } else {
                args.keyless.format
            };
            let format = match wanted {
                Some(SignFormat::Cosign2) => attestation::Format::Att,
                Some(SignFormat::Cosign3) => attestation::Format::Bundle,
                None => attestation::auto_format(client, reference, &digest, true).await?,
            };
            attestation::attest_keyless(client, reference, &digest, &session, predicate, format)
                .await
        })?;
        eprintln!(
            "attested {text} ({}) keylessly as {}: {} predicate {} ({})",
            report.digest,
            session.identity(),
            predicate.type_uri,
            report.predicate_digest,
            super::attest::placed(&report)
        );
        writeln!(out, "{}", report.location)?;
        if let Some(also) = &report.also {
            writeln!(out, "{also}")?;
        }
    }
    Ok(ExitStatus::Success)
}

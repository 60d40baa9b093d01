//! `opship verify-blob`: one call into `opship_oci::cosign::sigstore::verify::verify_blob`,
//! the verdict printed.

use opship_oci::cosign::sigstore::verify::{self, BlobRequest};
use opship_oci::cosign::sigstore::{GithubClaim, IdentityPolicy, Matcher, Options};

use super::{CmdError, ExitStatus};
use crate::cli::{CertificateIdentityArgs, KeylessVerifyArgs, VerifyBlobArgs};

/// The identity policy the flags describe; a bad regular expression is a usage error.
pub fn policy(a: &CertificateIdentityArgs) -> Result<IdentityPolicy, CmdError> {
    let matcher = |exact: &Option<String>, re: &Option<String>, flag: &str| match (exact, re) {
        (Some(e), _) => Ok(Some(Matcher::Exact(e.clone()))),
        (None, Some(r)) => Matcher::regex(r)
            .map(Some)
            .map_err(|e| format!("{flag}: {e}")),
        (None, None) => Ok(None),
    };
    let claims = [
        (
            GithubClaim::Repository,
            &a.certificate_github_workflow_repository,
        ),
        (GithubClaim::Ref, &a.certificate_github_workflow_ref),
        (GithubClaim::Sha, &a.certificate_github_workflow_sha),
        (GithubClaim::Trigger, &a.certificate_github_workflow_trigger),
        (GithubClaim::Name, &a.certificate_github_workflow_name),
    ]
    .into_iter()
    .filter_map(|(c, v)| v.clone().map(|v| (c, v)))
    .collect();
    Ok(IdentityPolicy {
        subject: matcher(
            &a.certificate_identity,
            &a.certificate_identity_regexp,
            "--certificate-identity-regexp",
        )?,
        issuer: matcher(
            &a.certificate_oidc_issuer,
            &a.certificate_oidc_issuer_regexp,
            "--certificate-oidc-issuer-regexp",
        )?,
        claims,
    })
}

/// The checks `--insecure-*` skip.
pub fn options(k: &KeylessVerifyArgs) -> Options {
    Options {
        ignore_tlog: k.insecure_ignore_tlog,
        ignore_sct: k.insecure_ignore_sct,
    }
}

/// The key or keyless verifier of `verify` and `verify-attestation`; the skipped checks said.
pub fn verifier(
    key: Option<&std::path::Path>,
    k: &KeylessVerifyArgs,
) -> Result<opship_oci::cosign::verification::Verifier, CmdError> {
    let v = opship_oci::cosign::verification::Verifier::new(
        key,
        policy(&k.identity)?,
        k.trusted_root.as_deref(),
        options(k),
    )?;
    for s in v.skipped() {
        super::progress::note(&format!("warning: not checked: {s}"));
    }
    Ok(v)
}

/// What verified, for the summary line: the key file, or the identity asked for.
pub fn described(key: Option<&std::path::Path>, k: &KeylessVerifyArgs) -> String {
    match key {
        Some(p) => opship_core::paths::show(p).to_string(),
        None => {
            let id = &k.identity;
            let subject = id
                .certificate_identity
                .clone()
                .or_else(|| {
                    id.certificate_identity_regexp
                        .clone()
                        .map(|r| format!("/{r}/"))
                })
                .unwrap_or_default();
            let issuer = id
                .certificate_oidc_issuer
                .clone()
                .or_else(|| {
                    id.certificate_oidc_issuer_regexp
                        .clone()
                        .map(|r| format!("/{r}/"))
                })
                .unwrap_or_default();
            format!("a certificate for {subject} (issuer {issuer})")
        }
    }
}

/// Runs `opship verify-blob`: exit 1 when the bundle is refused.
pub fn verify_blob(args: &VerifyBlobArgs) -> Result<ExitStatus, CmdError> {
    let req = BlobRequest {
        bundle: args.bundle.clone(),
        artifact: args.artifact.clone(),
        key: args.key.clone(),
        policy: policy(&args.keyless.identity)?,
        trusted_root: args.keyless.trusted_root.clone(),
        options: options(&args.keyless),
    };
    match verify::verify_blob(&req)? {
        Ok(v) => {
            for s in &v.skipped {
                eprintln!("warning: not checked: {s}");
            }
            let who = v
                .signer
                .as_ref()
                .map_or("the key".to_owned(), ToString::to_string);
            let times = v
                .times
                .iter()
                .map(|(what, t)| format!("{} ({what})", t.to_rfc3339()))
                .collect::<Vec<_>>()
                .join(", ");
            println!(
                "Verified OK: {} signed by {who} at {times}; {} log entries checked",
                opship_core::paths::show(&args.artifact),
                v.tlog_entries
            );
            Ok(ExitStatus::Success)
        }
        Err(reason) => {
            eprintln!("error: verification failed: {reason}");
            Ok(ExitStatus::Failure)
        }
    }
}

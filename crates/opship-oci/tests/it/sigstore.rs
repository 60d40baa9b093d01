//! The transparency-log layer of keyless verification against the Sigstore conformance
//! suite's real bundles (`../shared/sigstore-conformance/bundle-verify`): every bundle that
//! must verify has inclusion proofs, checkpoints and inclusion promises that check out against its trusted root,
//! and every case that must fail for a trust-root, log, proof, checkpoint or promise reason is refused
//! here with that reason.

use std::path::PathBuf;

use opship_oci::cosign::sigstore::{TrustedRoot, tlog};

fn conformance() -> PathBuf {
    if let Ok(d) = std::env::var("OPSHIP_SIGSTORE_CONFORMANCE") {
        return PathBuf::from(d);
    }
    let sibling =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/sigstore-conformance");
    if sibling.exists() {
        return sibling;
    }
    PathBuf::from("/work/shared/sigstore-conformance")
}

/// The verdict of the trust-root and log layer on one case.
fn check(case: &std::path::Path) -> Result<(), String> {
    let root = match std::fs::read(case.join("trusted_root.json")) {
        Ok(bytes) => {
            TrustedRoot::from_json(&bytes, "trusted_root.json").map_err(|e| e.to_string())?
        }
        Err(_) => TrustedRoot::public_good(),
    };
    let bytes = std::fs::read(case.join("bundle.sigstore.json")).map_err(|e| e.to_string())?;
    let bundle: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("bundle: not JSON: {e}"))?;
    let entries = bundle
        .pointer("/verificationMaterial/tlogEntries")
        .and_then(|e| e.as_array())
        .ok_or("bundle: no tlogEntries")?;
    for e in entries {
        tlog::verify_entry(e, &root)?;
    }
    Ok(())
}

#[test]
fn conformance_bundles_logs_proofs_and_checkpoints() {
    let dir = conformance().join("bundle-verify");
    let refused: &[(&str, &str)] = &[
        ("bundle-malformed-json_fail", "not JSON"),
        (
            "bundle-negative-log-index_fail",
            "`logIndex` is \"-1\", not a non-negative integer",
        ),
        (
            "bundle-from-wrong-instance_fail",
            "is not a transparency log of the trusted root",
        ),
        ("checkpoint-bad-keyhint_fail", "no signature by the log"),
        (
            "checkpoint-wrong-roothash_fail",
            "differs from the inclusion proof's",
        ),
        (
            "inclusion-proof-corrupted-hash_fail",
            "inclusion proof: the audit path leads to",
        ),
        (
            "set-invalid-signature_fail",
            "inclusion promise (signed entry timestamp) does not verify",
        ),
        (
            "invalid-checkpoint-signature_fail",
            "does not verify with the log's key",
        ),
        ("invalid-inclusion-proof_fail", "inclusion proof"),
        ("intoto-missing-inclusion-proof_fail", "no inclusion proof"),
        ("rekor2-no-inclusion-proof_fail", "no inclusion proof"),
        (
            "rekor2-checkpoint-missing-log-signature_fail",
            "no signature lines",
        ),
        (
            "rekor2-checkpoint-missing-origin_fail",
            "line 2 should be the tree size",
        ),
        (
            "rekor2-checkpoint-missing-root-hash_fail",
            "line 3 should be a base64",
        ),
        (
            "rekor2-checkpoint-missing-size_fail",
            "line 2 should be the tree size",
        ),
        (
            "rekor2-checkpoint-no-matching-signature_fail",
            "no signature by the log",
        ),
        (
            "trust-root-tlog-missing-validity-start_fail",
            "validFor.start: missing",
        ),
    ];
    let mut passed = 0;
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.len() >= 70,
        "only {} cases in {}",
        names.len(),
        dir.display()
    );
    for name in &names {
        let verdict = check(&dir.join(name));
        if let Some((_, reason)) = refused.iter().find(|(n, _)| n == name) {
            let err = verdict.expect_err(&format!("{name} was not refused"));
            assert!(
                err.contains(reason),
                "{name}: refused for `{err}`, expected `{reason}`"
            );
        } else if !name.ends_with("_fail") {
            verdict.unwrap_or_else(|e| panic!("{name} must verify: {e}"));
            passed += 1;
        }
    }
    assert!(refused.iter().all(|(n, _)| names.iter().any(|m| m == n)));
    assert_eq!(
        passed,
        names.iter().filter(|n| !n.ends_with("_fail")).count()
    );
    assert!(passed >= 20, "{passed}");
}

/// The verdict of the whole verification on one case, with the inputs its README names.
fn verify_case(case: &std::path::Path) -> Result<opship_oci::cosign::sigstore::Verified, String> {
    use opship_oci::cosign::sigstore::{
        Artifact, IdentityPolicy, Matcher, Options, Signer, VerifyKey, verify_bundle,
    };
    let root = match std::fs::read(case.join("trusted_root.json")) {
        Ok(bytes) => {
            TrustedRoot::from_json(&bytes, "trusted_root.json").map_err(|e| e.to_string())?
        }
        Err(_) => TrustedRoot::public_good(),
    };
    let bundle = std::fs::read(case.join("bundle.sigstore.json")).map_err(|e| e.to_string())?;
    let artifact = std::fs::read(case.join("artifact"))
        .or_else(|_| std::fs::read(case.join("../a.txt")))
        .map_err(|e| e.to_string())?;
    let read = |f: &str, default: &str| {
        std::fs::read_to_string(case.join(f))
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| default.to_owned())
    };
    let signer = match std::fs::read(case.join("key.pub")) {
        Ok(pem) => Signer::Key(VerifyKey::from_pem(&pem)?),
        Err(_) => Signer::Identity(IdentityPolicy {
            subject: Some(Matcher::Exact(read(
                "identity",
                "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main",
            ))),
            issuer: Some(Matcher::Exact(read(
                "issuer",
                "https://token.actions.githubusercontent.com",
            ))),
            claims: Vec::new(),
        }),
    };
    verify_bundle(
        &bundle,
        Artifact::Bytes(&artifact),
        &signer,
        &root,
        Options::default(),
    )
}

#[test]
fn conformance_every_case_verifies_or_is_refused() {
    let dir = conformance().join("bundle-verify");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // Each refusal's reason, as the conformance README for the case states it.
    let reasons: &[(&str, &str)] = &[
        (
            "bundle-empty-certificate-chain_fail",
            "certificate chain is empty",
        ),
        (
            "bundle-from-wrong-instance_fail",
            "is not a transparency log of the trusted root",
        ),
        (
            "bundle-invalid-base64-signature_fail",
            "`signature` is not base64",
        ),
        ("bundle-malformed-json_fail", "not JSON"),
        (
            "bundle-negative-log-index_fail",
            "not a non-negative integer",
        ),
        ("bundle-unknown-version_fail", "unsupported media type"),
        ("bundle-with-root-cert_fail", "self-signed root"),
        ("checkpoint-bad-keyhint_fail", "no signature by the log"),
        (
            "checkpoint-wrong-roothash_fail",
            "differs from the inclusion proof's",
        ),
        ("dsse-invalid-sig_fail", "DSSE signature does not verify"),
        ("dsse-mismatch-envelope_fail", "records another payload"),
        ("dsse-mismatch-sig_fail", "records another signature"),
        ("inclusion-proof-corrupted-hash_fail", "audit path leads to"),
        ("incorrect-public-key_fail", "audit path leads to"),
        (
            "integrated-time-in-future_fail",
            "(integrated time in https://rekor.sigstore.dev) is outside its validity",
        ),
        ("intoto-expired-certificate_fail", "outside its validity"),
        (
            "intoto-log-entry-mismatch_fail",
            "intoto 0.0.2 entry records another",
        ),
        ("intoto-missing-inclusion-proof_fail", "no inclusion proof"),
        (
            "intoto-set-outside-signing-cert-validity_fail",
            "(integrated time in http://localhost:8000) is outside its validity",
        ),
        (
            "intoto-tsa-timestamp-outside-cert-validity_fail",
            "(timestamp by http://localhost:8000) is outside its validity",
        ),
        (
            "invalid-checkpoint-signature_fail",
            "does not verify with the log's key",
        ),
        ("invalid-ct-key_fail", "no valid SCT"),
        ("invalid-inclusion-proof_fail", "audit path leads to"),
        ("managed-key-no-key_fail", "signed with a key"),
        (
            "managed-key-wrong-key_fail",
            "PUBLIC KEY block is not valid base64",
        ),
        ("message-digest-mismatch_fail", "message digest a1cfc7"),
        (
            "rekor2-checkpoint-missing-log-signature_fail",
            "no signature lines",
        ),
        (
            "rekor2-checkpoint-missing-origin_fail",
            "line 2 should be the tree size",
        ),
        (
            "rekor2-checkpoint-missing-root-hash_fail",
            "line 3 should be a base64",
        ),
        (
            "rekor2-checkpoint-missing-size_fail",
            "line 2 should be the tree size",
        ),
        (
            "rekor2-checkpoint-no-matching-signature_fail",
            "no signature by the log",
        ),
        (
            "rekor2-dsse-invalid-sig_fail",
            "DSSE signature does not verify",
        ),
        (
            "rekor2-dsse-mismatch-envelope_fail",
            "records another artifact digest",
        ),
        ("rekor2-dsse-mismatch-sig_fail", "records another signature"),
        ("rekor2-no-inclusion-proof_fail", "no inclusion proof"),
        ("rekor2-no-timestamp_fail", "no verified signing time"),
        (
            "rekor2-timestamp-outside-trust-root-tsa-validity_fail",
            "outside the window the trusted root gives",
        ),
        (
            "rekor2-timestamp-outside-tsa-cert-validity_fail",
            "validity of the authority's certificate",
        ),
        (
            "rekor2-timestamp-payload-mismatch_fail",
            "message imprint is not the digest",
        ),
        (
            "rekor2-timestamp-untrusted-tsa-with-embedded-cert_fail",
            "not signed by any timestamp authority",
        ),
        (
            "rekor2-timestamp-untrusted-tsa-without-embedded-cert_fail",
            "not signed by any timestamp authority",
        ),
        (
            "rekor2-timestamp-with-incorrect-time_fail",
            "(timestamp by https://timestamp.sigstage.dev/api/v1/timestamp) is outside its validity",
        ),
        (
            "set-invalid-signature_fail",
            "inclusion promise (signed entry timestamp) does not verify",
        ),
        (
            "signature-mismatch_fail",
            "signature does not verify over the artifact",
        ),
        (
            "trust-root-tlog-missing-validity-start_fail",
            "validFor.start: missing",
        ),
        (
            "wrong-hashedrekord-artifact_fail",
            "records another artifact digest",
        ),
        (
            "wrong-hashedrekord-cert-and-sig_fail",
            "records another signature",
        ),
        (
            "wrong-hashedrekord-entry_fail",
            "records another artifact digest",
        ),
        ("wrong-material_fail", "is not the artifact's sha256"),
    ];
    let mut wrong = Vec::new();
    for name in &names {
        let verdict = verify_case(&dir.join(name));
        match (name.ends_with("_fail"), verdict) {
            (true, Ok(_)) => wrong.push(format!("{name}: verified, must be refused")),
            (false, Err(e)) => wrong.push(format!("{name}: refused ({e}), must verify")),
            (true, Err(e)) => match reasons.iter().find(|(n, _)| n == name) {
                Some((_, r)) if e.contains(r) => {}
                Some((_, r)) => wrong.push(format!("{name}: refused for `{e}`, expected `{r}`")),
                None => wrong.push(format!("{name}: refused ({e}) with no expected reason")),
            },
            (false, Ok(v)) => assert!(!v.times.is_empty(), "{name}: no signing time"),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(names.len() >= 70);
    assert_eq!(
        reasons.len(),
        names.iter().filter(|n| n.ends_with("_fail")).count()
    );
}

/// Truncated timestamps and certificates, and flipped bytes anywhere in the DER, are refused
/// with a reason, never a panic (the DER walker and the CMS/X.509 readers on hostile input).
#[test]
fn mangled_der_is_refused_without_panic() {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use opship_oci::cosign::sigstore::{Artifact, IdentityPolicy, Options, Signer, verify_bundle};
    let case = conformance().join("bundle-verify/rekor2-happy-path");
    let root = TrustedRoot::from_json(
        &std::fs::read(case.join("trusted_root.json")).unwrap(),
        "trusted_root.json",
    )
    .unwrap();
    let artifact = std::fs::read(conformance().join("bundle-verify/a.txt")).unwrap();
    let bundle: serde_json::Value =
        serde_json::from_slice(&std::fs::read(case.join("bundle.sigstore.json")).unwrap()).unwrap();
    let signer = Signer::Identity(IdentityPolicy::default());
    let check = |b: &serde_json::Value| {
        verify_bundle(
            &serde_json::to_vec(b).unwrap(),
            Artifact::Bytes(&artifact),
            &signer,
            &root,
            Options::default(),
        )
    };
    check(&bundle).expect("the unmodified bundle verifies");
    for pointer in [
        "/verificationMaterial/timestampVerificationData/rfc3161Timestamps/0/signedTimestamp",
        "/verificationMaterial/certificate/rawBytes",
    ] {
        let der = STANDARD
            .decode(bundle.pointer(pointer).unwrap().as_str().unwrap())
            .unwrap();
        let mut refused = 0;
        let cuts = (0..der.len()).step_by(7);
        let flips = (0..der.len()).step_by(11);
        for (i, cut) in cuts.map(|c| (c, true)).chain(flips.map(|f| (f, false))) {
            let mut d = der.clone();
            if cut {
                d.truncate(i);
            } else {
                d[i] ^= 0x41;
            }
            let mut b = bundle.clone();
            *b.pointer_mut(pointer).unwrap() = STANDARD.encode(&d).into();
            match check(&b) {
                Err(e) => {
                    assert!(!e.is_empty());
                    refused += 1;
                }
                // A flip in an unsigned part (e.g. an unused certificate field of the TSA's
                // embedded chain) may leave the proof intact.
                Ok(_) => assert!(!cut, "{pointer} cut at {i} verified"),
            }
        }
        assert!(refused > der.len() / 7, "{pointer}: only {refused} refused");
    }
}

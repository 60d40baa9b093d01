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

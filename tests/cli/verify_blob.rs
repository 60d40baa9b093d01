//! `opship verify-blob` on every case of the Sigstore conformance suite
//! (`../shared/sigstore-conformance/bundle-verify`), with the inputs each case's README names:
//! the cases that must verify exit 0 and say who signed, every `_fail` case exits 1 with the
//! reason on standard error. Also the usage errors and the `--insecure-*` notes.

use std::path::{Path, PathBuf};

use crate::{opship, run};

const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";

fn conformance() -> PathBuf {
    [
        crate::repo().join("../shared/sigstore-conformance"),
        "/work/shared/sigstore-conformance".into(),
    ]
    .into_iter()
    .find(|p: &PathBuf| p.is_dir())
    .expect("shared/sigstore-conformance not found")
}

fn verify_case(case: &Path) -> crate::Run {
    let mut c = opship();
    c.arg("verify-blob")
        .arg("--bundle")
        .arg(case.join("bundle.sigstore.json"));
    if case.join("key.pub").exists() {
        c.arg("--key").arg(case.join("key.pub"));
    } else {
        let read = |f: &str, d: &str| {
            std::fs::read_to_string(case.join(f)).map_or(d.to_owned(), |s| s.trim().to_owned())
        };
        c.args(["--certificate-identity", &read("identity", IDENTITY)]);
        c.args(["--certificate-oidc-issuer", &read("issuer", ISSUER)]);
    }
    if case.join("trusted_root.json").exists() {
        c.arg("--trusted-root").arg(case.join("trusted_root.json"));
    }
    let artifact = case.join("artifact");
    c.arg(if artifact.exists() {
        artifact
    } else {
        case.join("../a.txt")
    });
    run(&mut c)
}

#[test]
fn every_conformance_case_verifies_or_is_refused_with_a_reason() {
    let dir = conformance().join("bundle-verify");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 70, "{} cases", names.len());
    let mut wrong = Vec::new();
    let (mut passed, mut refused) = (0, 0);
    for name in &names {
        let r = verify_case(&dir.join(name));
        if name.ends_with("_fail") {
            // Refused: exit 1 with the reason, or exit 2 naming an unusable input file (the
            // malformed key of managed-key-wrong-key_fail, the trusted root without a
            // validity start), never a panic.
            if !(r.code == 1 && r.stderr.contains("verification failed: ")
                || r.code == 2
                    && (r.stderr.contains("key.pub: ") || r.stderr.contains("trusted_root.json: ")))
                || !r.stdout.is_empty()
            {
                wrong.push(format!("{name}: exit {}: {}{}", r.code, r.stdout, r.stderr));
            }
            // A certificate used outside its validity, and tampered material, say so.
            let expected = match name.as_str() {
                "integrated-time-in-future_fail"
                | "intoto-expired-certificate_fail"
                | "rekor2-timestamp-with-incorrect-time_fail" => Some("outside its validity"),
                "signature-mismatch_fail" => Some("signature does not verify over the artifact"),
                "dsse-mismatch-sig_fail" => Some("records another signature"),
                _ => None,
            };
            if let Some(e) = expected
                && !r.stderr.contains(e)
            {
                wrong.push(format!("{name}: `{}` does not say `{e}`", r.stderr.trim()));
            }
            refused += 1;
        } else {
            let keyed = dir.join(name).join("key.pub").exists();
            let said = if keyed { "signed by the key" } else { IDENTITY };
            if r.code != 0 || !r.stdout.starts_with("Verified OK: ") || !r.stdout.contains(said) {
                wrong.push(format!("{name}: exit {}: {}{}", r.code, r.stdout, r.stderr));
            }
            passed += 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        passed >= 20 && refused >= 45,
        "{passed} passed, {refused} refused"
    );
}

#[test]
fn identity_policy_and_insecure_flags() {
    let case = conformance().join("bundle-verify/happy-path-v0.3");
    let a = conformance().join("bundle-verify/a.txt");
    let base = || {
        let mut c = opship();
        c.arg("verify-blob")
            .arg("--bundle")
            .arg(case.join("bundle.sigstore.json"));
        c
    };
    // A regexp identity and the workflow's repository claim.
    let r = run(base()
        .args([
            "--certificate-identity-regexp",
            "^https://github.com/sigstore-conformance/",
            "--certificate-oidc-issuer-regexp",
            "githubusercontent",
            "--certificate-github-workflow-repository",
            "sigstore-conformance/extremely-dangerous-public-oidc-beacon",
        ])
        .arg(&a));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Wrong identity, issuer, repository: which field, expected and found.
    for (flag, value, says) in [
        (
            "--certificate-identity",
            "https://github.com/other/repo/.github/workflows/x.yml@refs/heads/main",
            "certificate identity: expected",
        ),
        (
            "--certificate-oidc-issuer",
            "https://accounts.google.com",
            "certificate OIDC issuer: expected `https://accounts.google.com`, found `https://token.actions.githubusercontent.com`",
        ),
        (
            "--certificate-github-workflow-repository",
            "other/repo",
            "--certificate-github-workflow-repository: expected `other/repo`, found `sigstore-conformance/extremely-dangerous-public-oidc-beacon`",
        ),
    ] {
        let mut c = base();
        if flag != "--certificate-identity" {
            c.args(["--certificate-identity", IDENTITY]);
        }
        if flag != "--certificate-oidc-issuer" {
            c.args(["--certificate-oidc-issuer", ISSUER]);
        }
        let r = run(c.args([flag, value]).arg(&a));
        assert_eq!(r.code, 1, "{flag}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(says), "{flag}: {}", r.stderr);
    }
    // No identity at all is a usage error; a bad regexp too.
    let r = run(base().arg(&a));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--certificate-identity"), "{}", r.stderr);
    let r = run(base()
        .args([
            "--certificate-identity-regexp",
            "(",
            "--certificate-oidc-issuer",
            ISSUER,
        ])
        .arg(&a));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("not a regular expression"),
        "{}",
        r.stderr
    );
    // Inputs that are no files: exit 2 naming the file, at once.
    let r = run(base()
        .args([
            "--certificate-identity",
            IDENTITY,
            "--certificate-oidc-issuer",
            ISSUER,
        ])
        .arg("/dev/zero"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("/dev/zero: not a regular file"),
        "{}",
        r.stderr
    );
    // Skipping the log and the SCT is said (a case with a signed timestamp: without the log
    // and a timestamp, the current time is the signing time, long after this certificate).
    let case = conformance().join("bundle-verify/rekor2-happy-path");
    let r = run(opship()
        .arg("verify-blob")
        .arg("--bundle")
        .arg(case.join("bundle.sigstore.json"))
        .arg("--trusted-root")
        .arg(case.join("trusted_root.json"))
        .args([
            "--certificate-identity",
            IDENTITY,
            "--certificate-oidc-issuer",
            ISSUER,
        ])
        .args(["--insecure-ignore-tlog", "--insecure-ignore-sct"])
        .arg(&a));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("not checked: transparency log (--insecure-ignore-tlog)")
            && r.stderr
                .contains("not checked: certificate transparency SCT"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("0 log entries checked"), "{}", r.stdout);
}

/// A 900 MiB artifact (sparse, made here) signed with an ECDSA P-256 and a P-384 key (SHA-256
/// and SHA-384 prehashes): `verify-blob` reads it once as a stream and stays under 100 MiB
/// of peak RSS, verified or refused (one byte changed in the middle).
#[test]
fn a_large_artifact_is_streamed_in_bounded_memory() {
    use base64::Engine as _;
    use std::io::{Seek as _, SeekFrom, Write as _};
    const MAX_RSS_KIB: u64 = 100 * 1024;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let artifact = dir.join("big.bin");
    {
        let mut f = std::fs::File::create(&artifact).unwrap();
        f.set_len(900 << 20).unwrap();
        f.write_all(b"opship large artifact").unwrap();
        f.seek(SeekFrom::End(-7)).unwrap();
        f.write_all(b"the end").unwrap();
    }
    let sha256 = openssl(&["dgst", "-sha256", "-binary", "big.bin"]);
    for (curve, hash) in [("P-256", "-sha256"), ("P-384", "-sha384")] {
        let key = format!("{curve}.key");
        let public = format!("{curve}.pub");
        openssl(&[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            &format!("ec_paramgen_curve:{curve}"),
            "-out",
            &key,
        ]);
        openssl(&["pkey", "-in", &key, "-pubout", "-out", &public]);
        let sig = openssl(&["dgst", hash, "-sign", &key, "big.bin"]);
        let bundle = serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {"publicKey": {"hint": curve}},
            "messageSignature": {
                "messageDigest": {
                    "algorithm": "SHA2_256",
                    "digest": base64::engine::general_purpose::STANDARD.encode(&sha256),
                },
                "signature": base64::engine::general_purpose::STANDARD.encode(&sig),
            },
        });
        // With the digest hint, and without it (the signature alone then decides).
        let mut bare = bundle.clone();
        bare["messageSignature"]
            .as_object_mut()
            .unwrap()
            .remove("messageDigest");
        let files = [
            (
                format!("{curve}.sigstore.json"),
                "is not the artifact's sha256",
            ),
            (
                format!("{curve}-bare.sigstore.json"),
                "signature does not verify over the artifact",
            ),
        ];
        std::fs::write(dir.join(&files[0].0), bundle.to_string()).unwrap();
        std::fs::write(dir.join(&files[1].0), bare.to_string()).unwrap();
        let verify = |bundle_file: &str| {
            crate::bounded::measured(
                dir,
                &[
                    "verify-blob",
                    "--bundle",
                    bundle_file,
                    "--key",
                    &public,
                    "--insecure-ignore-tlog",
                    artifact.to_str().unwrap(),
                ],
            )
        };
        for (file, _) in &files {
            let (r, kib) = verify(file);
            assert_eq!(r.code, 0, "{file}: {}{}", r.stdout, r.stderr);
            assert!(r.stdout.contains("signed by the key"), "{}", r.stdout);
            assert!(kib < MAX_RSS_KIB, "{file}: peak RSS {kib} KiB");
        }
        // One byte changed in the middle: refused, in the same bound.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&artifact)
            .unwrap();
        f.seek(SeekFrom::Start(450 << 20)).unwrap();
        f.write_all(b"x").unwrap();
        drop(f);
        for (file, says) in &files {
            let (r, kib) = verify(file);
            assert_eq!(r.code, 1, "{file}: {}{}", r.stdout, r.stderr);
            assert!(r.stderr.contains(says), "{file}: {}", r.stderr);
            assert!(kib < MAX_RSS_KIB, "{file}: peak RSS {kib} KiB");
        }
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&artifact)
            .unwrap();
        f.set_len(0).unwrap();
        f.set_len(900 << 20).unwrap();
        drop(f);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&artifact)
            .unwrap();
        f.write_all(b"opship large artifact").unwrap();
        f.seek(SeekFrom::End(-7)).unwrap();
        f.write_all(b"the end").unwrap();
    }
}

//! Real cosign 2.5 and 3.1 (`cosign2`, `cosign3` from scripts/peers) against a real registry
//! (distribution 2.8.2, no referrers API): cosign verifies what opship signs and attests
//! (`.sig`, Sigstore bundles with annotations, `.att`), opship verifies what each cosign
//! writes with its defaults (and cosign 2's OCI 1.1 referrer mode); wrong keys, wrong
//! annotations, changed payloads and moved signatures are rejected by both; signing is
//! idempotent; a fallback tag holding an image stops `sign --bundle-format` before any write.
//! Only the offline flags are passed to cosign (no Fulcio, no Rekor).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::sign::{PASSWORD, Setup, fails_with, opship_pw};
use crate::support_registry::{isolated, ok, require};
use crate::{Run, run};

/// `cosign2` or `cosign3` with the key password and an isolated home (no ~/.sigstore).
fn cosign(s: &Setup, major: u8) -> Command {
    let name = format!("cosign{major}");
    require(
        &name,
        "cosign (scripts/peers puts cosign2 and cosign3 on PATH)",
    );
    let mut c = Command::new(name);
    c.env("HOME", &s.home)
        .env("COSIGN_PASSWORD", PASSWORD)
        .env_remove("DOCKER_CONFIG")
        .stdin(Stdio::null());
    c
}

/// `cosign sign` with the defaults of that cosign and only the offline flags.
pub(crate) fn cosign_sign(s: &Setup, major: u8, key: &Path, extra: &[&str], image: &str) -> Run {
    let mut c = cosign(s, major);
    c.args(["sign", "--key"]).arg(key);
    if major == 3 {
        c.arg("--use-signing-config=false");
    } else {
        c.arg("-y");
    }
    c.args(["--tlog-upload=false", "--allow-insecure-registry"])
        .args(extra)
        .arg(image);
    run(&mut c)
}

/// `cosign attest` (defaults, offline flags).
fn cosign_attest(
    s: &Setup,
    major: u8,
    key: &Path,
    kind: &str,
    predicate: &Path,
    image: &str,
) -> Run {
    let mut c = cosign(s, major);
    c.args(["attest", "--key"]).arg(key);
    if major == 3 {
        c.arg("--use-signing-config=false");
    } else {
        c.arg("-y");
    }
    c.args([
        "--tlog-upload=false",
        "--allow-insecure-registry",
        "--type",
        kind,
        "--predicate",
    ])
    .arg(predicate)
    .arg(image);
    run(&mut c)
}

/// `cosign verify` / `verify-attestation` with `--insecure-ignore-tlog`.
fn cosign_check(
    s: &Setup,
    major: u8,
    what: &str,
    public: &Path,
    extra: &[&str],
    image: &str,
) -> Run {
    run(cosign(s, major)
        .args([what, "--key"])
        .arg(public)
        .args(["--insecure-ignore-tlog=true", "--allow-insecure-registry"])
        .args(extra)
        .arg(image))
}

fn passes(r: Run, what: &str) -> Run {
    ok(r, what)
}

fn refuses(r: Run, what: &str) {
    assert_ne!(
        r.code, 0,
        "{what} should fail\nstdout:\n{}\nstderr:\n{}",
        r.stdout, r.stderr
    );
}

/// A fresh one-layer image `repo:tag` pushed with crane; its digest.
fn crane_image(s: &Setup, repo_tag: &str, content: &str) -> String {
    require("crane", "crane (scripts/peers)");
    let dir = s.path(&format!("img-{}", repo_tag.replace([':', '/'], "-")));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("file.txt"), content).unwrap();
    let tar = dir.join("layer.tar");
    assert!(
        Command::new("tar")
            .arg("-C")
            .arg(&dir)
            .arg("-cf")
            .arg(&tar)
            .arg("file.txt")
            .status()
            .unwrap()
            .success()
    );
    let r = ok(
        run(Command::new("crane")
            .args(["append", "--insecure", "-f"])
            .arg(&tar)
            .args(["-t", &format!("{}/{repo_tag}", s.reg.addr)])),
        "crane append",
    );
    r.stdout.trim().rsplit('@').next().unwrap().to_owned()
}

/// `crane manifest` of `reference` as JSON.
fn manifest(reference: &str) -> serde_json::Value {
    let r = ok(
        run(Command::new("crane").args(["manifest", "--insecure", reference])),
        "crane manifest",
    );
    serde_json::from_str(&r.stdout).unwrap()
}

fn by_digest(s: &Setup, digest: &str) -> String {
    format!("{}/bundle@{digest}", s.reg.addr)
}

fn keys(s: &Setup) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let (key, public) = s.keys("k", PASSWORD);
    let (other, other_pub) = s.keys("other", PASSWORD);
    (key, public, other, other_pub)
}

/// cosign 2 and 3 verify opship's `.sig` and bundle signatures with annotations; wrong
/// annotations, another key and a signature moved to another image are refused by both.
/// Three opship signings, then cosign 2 with the same key, leave one signature; cosign with
/// another key adds one (one per key).
#[test]
fn cosign_verifies_what_opship_signs() {
    let s = Setup::new();
    let (key, public, other, other_pub) = keys(&s);
    let image = by_digest(&s, &s.d3);
    for _ in 0..3 {
        ok(
            s.sign(
                &key,
                PASSWORD,
                &["--bundle-format", "-a", "release=0.3.0"],
                &s.image("v0.3.0"),
            ),
            "opship sign",
        );
    }
    let sig_tag = format!("{}/bundle:sha256-{}.sig", s.reg.addr, &s.d3[7..]);
    let fallback = format!("{}/bundle:sha256-{}", s.reg.addr, &s.d3[7..]);
    assert_eq!(manifest(&sig_tag)["layers"].as_array().unwrap().len(), 1);
    assert_eq!(
        manifest(&fallback)["manifests"].as_array().unwrap().len(),
        1
    );
    for major in [2, 3] {
        let v = passes(
            cosign_check(
                &s,
                major,
                "verify",
                &public,
                &["-a", "release=0.3.0"],
                &image,
            ),
            &format!("cosign{major} verify -a"),
        );
        assert!(v.stdout.contains(&s.d3), "{}", v.stdout);
        refuses(
            cosign_check(&s, major, "verify", &public, &["-a", "release=9"], &image),
            &format!("cosign{major} verify, wrong annotation"),
        );
        refuses(
            cosign_check(&s, major, "verify", &other_pub, &[], &image),
            &format!("cosign{major} verify, wrong key"),
        );
    }
    // cosign 3 reads the bundle (not the `.sig`): a bundle-only image proves it.
    let only = crane_image(&s, "bundle:only-bundle", "only");
    ok(
        s.sign(
            &key,
            PASSWORD,
            &["--bundle-format", "-a", "k=v"],
            &by_digest(&s, &only),
        ),
        "opship sign only",
    );
    // Its `.sig` replaced by an image with no signature layer (the registry cannot delete
    // tags): what still verifies is the bundle.
    let sig_only = format!("{}/bundle:sha256-{}.sig", s.reg.addr, &only[7..]);
    ok(
        run(Command::new("crane").args(["copy", "--insecure", &s.image("v0.2.0"), &sig_only])),
        "crane copy over the .sig",
    );
    refuses(
        cosign_check(&s, 2, "verify", &public, &[], &by_digest(&s, &only)),
        "cosign2 verify without a .sig",
    );
    passes(
        cosign_check(
            &s,
            3,
            "verify",
            &public,
            &["-a", "k=v"],
            &by_digest(&s, &only),
        ),
        "cosign3 verify of a bundle alone",
    );
    refuses(
        cosign_check(
            &s,
            3,
            "verify",
            &public,
            &["-a", "k=w"],
            &by_digest(&s, &only),
        ),
        "cosign3 verify of a bundle alone, wrong annotation",
    );
    // One signature per key: cosign 2 with the same key finds the same payload and adds none.
    passes(
        cosign_sign(&s, 2, &key, &["-a", "release=0.3.0"], &image),
        "cosign2 sign, same key",
    );
    assert_eq!(manifest(&sig_tag)["layers"].as_array().unwrap().len(), 1);
    passes(
        cosign_sign(&s, 2, &other, &["-a", "release=0.3.0"], &image),
        "cosign2 sign, other key",
    );
    for _ in 0..2 {
        ok(
            s.sign(&other, PASSWORD, &["-a", "release=0.3.0"], &image),
            "opship sign, other key",
        );
    }
    assert_eq!(manifest(&sig_tag)["layers"].as_array().unwrap().len(), 2);
    // A signature moved to another image (the `.sig` of 0.3.0 copied to 0.2.0's tag).
    let moved = format!("{}/bundle:sha256-{}.sig", s.reg.addr, &s.d2[7..]);
    ok(
        run(Command::new("crane").args(["copy", "--insecure", &sig_tag, &moved])),
        "crane copy",
    );
    for major in [2, 3] {
        refuses(
            cosign_check(&s, major, "verify", &public, &[], &by_digest(&s, &s.d2)),
            &format!("cosign{major} verify of a moved signature"),
        );
    }
    fails_with(
        s.verify(&public, &[], &by_digest(&s, &s.d2)),
        "not this image",
    );
}

/// opship verifies what cosign 2 and 3 sign with their defaults (cosign 3: a Sigstore bundle
/// listed in the fallback index as `application/vnd.oci.empty.v1+json`, annotations in the
/// statement), and cosign 2's OCI 1.1 referrer mode; wrong key and annotation are refused.
#[test]
fn opship_verifies_what_cosign_signs() {
    let s = Setup::new();
    let (key, public, _, other_pub) = keys(&s);
    let d4 = crane_image(&s, "bundle:c3", "c3");
    let d5 = crane_image(&s, "bundle:c2r", "c2r");
    passes(
        cosign_sign(&s, 2, &key, &["-a", "team=ops"], &by_digest(&s, &s.d3)),
        "cosign2 sign",
    );
    passes(
        cosign_sign(&s, 3, &key, &["-a", "team=ops"], &by_digest(&s, &d4)),
        "cosign3 sign",
    );
    let mut c = cosign(&s, 2);
    c.env("COSIGN_EXPERIMENTAL", "1");
    passes(
        run(c
            .args([
                "sign",
                "-y",
                "--tlog-upload=false",
                "--allow-insecure-registry",
                "--registry-referrers-mode=oci-1-1",
                "-a",
                "team=ops",
                "--key",
            ])
            .arg(&key)
            .arg(by_digest(&s, &d5))),
        "cosign2 sign oci-1-1",
    );
    let fallback = manifest(&format!("{}/bundle:sha256-{}", s.reg.addr, &d4[7..]));
    assert_eq!(
        fallback["manifests"][0]["artifactType"], "application/vnd.oci.empty.v1+json",
        "{fallback}"
    );
    for (digest, source) in [
        (&s.d3, "sha256-"),
        (&d4, "Sigstore bundle"),
        (&d5, "referrer"),
    ] {
        let r = ok(
            s.verify(&public, &["-a", "team=ops"], &by_digest(&s, digest)),
            "opship verify of cosign's signature",
        );
        assert!(
            r.stdout.contains(&format!("verified {source}")) || r.stdout.contains(source),
            "{}",
            r.stdout
        );
        fails_with(
            s.verify(&public, &["-a", "team=dev"], &by_digest(&s, digest)),
            "annotation `team`",
        );
        fails_with(s.verify(&other_pub, &[], &by_digest(&s, digest)), "verif");
    }
    // A bundle copied under another image's fallback tag names the wrong subject.
    let moved = format!("{}/bundle:sha256-{}", s.reg.addr, &s.d2[7..]);
    ok(
        run(Command::new("crane").args([
            "copy",
            "--insecure",
            &format!("{}/bundle:sha256-{}", s.reg.addr, &d4[7..]),
            &moved,
        ])),
        "crane copy fallback",
    );
    fails_with(
        s.verify(&public, &[], &by_digest(&s, &s.d2)),
        "the statement's subject is not",
    );
    refuses(
        cosign_check(&s, 3, "verify", &public, &[], &by_digest(&s, &s.d2)),
        "cosign3 verify of a moved bundle",
    );
}

/// Attestations both ways: opship's `.att` and bundle attestations pass `cosign
/// verify-attestation --type slsaprovenance1` of cosign 2 and 3; cosign 2's and 3's pass
/// `opship verify-attestation`; another type or key is refused; re-attesting adds nothing.
#[test]
fn attestations_both_ways() {
    let s = Setup::new();
    let (key, public, _, other_pub) = keys(&s);
    let predicate = s.path("provenance.json");
    std::fs::write(
        &predicate,
        r#"{"buildDefinition":{"buildType":"https://example.com/t/v1","externalParameters":{"x":"1"}},"runDetails":{"builder":{"id":"https://example.com/b"}}}"#,
    )
    .unwrap();
    let att = |extra: &[&str], image: &str| {
        run(opship_pw(&s.home, PASSWORD)
            .args(["attest", "--key"])
            .arg(&key)
            .args(["--type", "slsaprovenance1", "--predicate"])
            .arg(&predicate)
            .args(extra)
            .arg(image))
    };
    let a = by_digest(&s, &s.d3);
    let b = by_digest(&s, &s.d2);
    ok(att(&[], &a), "opship attest");
    let again = ok(att(&[], &a), "opship attest again");
    assert!(
        again.stderr.contains("already attested"),
        "{}",
        again.stderr
    );
    let att_tag = format!("{}/bundle:sha256-{}.att", s.reg.addr, &s.d3[7..]);
    assert_eq!(manifest(&att_tag)["layers"].as_array().unwrap().len(), 1);
    let d6 = crane_image(&s, "bundle:att-bundle", "att");
    ok(
        att(&["--bundle-format"], &by_digest(&s, &d6)),
        "opship attest --bundle-format",
    );
    for major in [2, 3] {
        for image in [&a, &by_digest(&s, &d6)] {
            if major == 2 && *image != a {
                continue; // cosign 2 reads `.att` only
            }
            passes(
                cosign_check(
                    &s,
                    major,
                    "verify-attestation",
                    &public,
                    &["--type", "slsaprovenance1"],
                    image,
                ),
                &format!("cosign{major} verify-attestation of {image}"),
            );
            refuses(
                cosign_check(
                    &s,
                    major,
                    "verify-attestation",
                    &other_pub,
                    &["--type", "slsaprovenance1"],
                    image,
                ),
                &format!("cosign{major} verify-attestation, wrong key"),
            );
        }
    }
    // cosign's attestations, read by opship.
    let d7 = crane_image(&s, "bundle:c3att", "c3att");
    passes(
        cosign_attest(&s, 2, &key, "slsaprovenance1", &predicate, &b),
        "cosign2 attest",
    );
    passes(
        cosign_attest(
            &s,
            3,
            &key,
            "slsaprovenance1",
            &predicate,
            &by_digest(&s, &d7),
        ),
        "cosign3 attest",
    );
    for image in [&b, &by_digest(&s, &d7)] {
        let r = ok(
            run(isolated(&s.home)
                .args(["verify-attestation", "--key"])
                .arg(&public)
                .args(["--type", "slsaprovenance1", "-o", "json"])
                .arg(image)),
            "opship verify-attestation",
        );
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(
            v[0]["predicateType"], "https://slsa.dev/provenance/v1",
            "{v}"
        );
        assert_eq!(
            v[0]["predicate"]["buildDefinition"]["externalParameters"]["x"],
            "1"
        );
        fails_with(
            run(isolated(&s.home)
                .args(["verify-attestation", "--key"])
                .arg(&public)
                .args(["--type", "cyclonedx"])
                .arg(image)),
            "not https://cyclonedx.org/bom",
        );
        fails_with(
            run(isolated(&s.home)
                .args(["verify-attestation", "--key"])
                .arg(&other_pub)
                .arg(image)),
            "no DSSE signature verifies",
        );
    }
}

/// The fallback tag holds an image manifest (what `cosign copy` can leave): `sign
/// --bundle-format` fails before writing anything, the `.sig` included.
#[test]
fn fallback_tag_holding_an_image_writes_nothing() {
    let s = Setup::new();
    let (key, _, _, _) = keys(&s);
    let fallback = format!("{}/bundle:sha256-{}", s.reg.addr, &s.d3[7..]);
    ok(
        run(Command::new("crane").args(["copy", "--insecure", &s.image("v0.2.0"), &fallback])),
        "crane copy an image to the fallback tag",
    );
    let before = manifest(&fallback);
    let r = s.sign(&key, PASSWORD, &["--bundle-format"], &s.image("v0.3.0"));
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("is not an image index"), "{}", r.stderr);
    assert!(r.stderr.contains("nothing was written"), "{}", r.stderr);
    assert_eq!(manifest(&fallback), before);
    let tags = ok(
        run(Command::new("crane").args(["ls", "--insecure", &format!("{}/bundle", s.reg.addr)])),
        "crane ls",
    );
    assert!(!tags.stdout.contains(".sig"), "{}", tags.stdout);
}

/// `--password-stdin`: the key password on standard input for `key generate`, `sign` and
/// `attest` (no COSIGN_PASSWORD); cosign verifies the result.
#[test]
fn key_password_on_stdin() {
    let s = Setup::new();
    let with_stdin = |args: &[&str]| -> Run {
        let mut c = isolated(&s.home);
        c.env_remove("COSIGN_PASSWORD")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"from stdin\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let prefix = s.path("stdin");
    let prefix = prefix.to_str().unwrap();
    ok(
        with_stdin(&[
            "key",
            "generate",
            "--password-stdin",
            "--output-key-prefix",
            prefix,
        ]),
        "key generate --password-stdin",
    );
    let key = format!("{prefix}.key");
    let public = PathBuf::from(format!("{prefix}.pub"));
    ok(
        with_stdin(&[
            "sign",
            "--password-stdin",
            "--key",
            &key,
            &s.image("v0.3.0"),
        ]),
        "sign --password-stdin",
    );
    let predicate = s.path("p.json");
    std::fs::write(&predicate, r#"{"a":1}"#).unwrap();
    ok(
        with_stdin(&[
            "attest",
            "--password-stdin",
            "--key",
            &key,
            "--predicate",
            predicate.to_str().unwrap(),
            &s.image("v0.3.0"),
        ]),
        "attest --password-stdin",
    );
    passes(
        cosign_check(&s, 2, "verify", &public, &[], &by_digest(&s, &s.d3)),
        "cosign2 verify",
    );
    passes(
        cosign_check(
            &s,
            2,
            "verify-attestation",
            &public,
            &["--type", "custom"],
            &by_digest(&s, &s.d3),
        ),
        "cosign2 verify-attestation --type custom",
    );
    // `/dev/zero` on stdin is refused within the secret budget, not read until memory runs
    // out.
    let r = run(isolated(&s.home)
        .env_remove("COSIGN_PASSWORD")
        .args([
            "sign",
            "--password-stdin",
            "--key",
            &key,
            &s.image("v0.3.0"),
        ])
        .stdin(std::fs::File::open("/dev/zero").unwrap()));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("standard input holds more than 65536 bytes"),
        "{}",
        r.stderr
    );
    // The wrong password on stdin is refused as such.
    let (k2, _) = s.keys("k2", PASSWORD);
    let r = with_stdin(&[
        "sign",
        "--password-stdin",
        "--key",
        k2.to_str().unwrap(),
        &s.image("v0.3.0"),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("wrong password"), "{}", r.stderr);
}

/// A payload with one byte changed (its signature kept) is refused by cosign 2, cosign 3 and
/// opship; the unchanged pieces pushed back the same way pass all three (control).
#[test]
fn changed_payload_is_refused_by_all() {
    let s = Setup::new();
    let (public, payload, sig) = crate::sign::signed(&s);
    let image = by_digest(&s, &s.d3);
    crate::sign::push_raw(&s, &s.d3, &payload, &sig);
    for major in [2, 3] {
        passes(
            cosign_check(&s, major, "verify", &public, &[], &image),
            &format!("cosign{major} verify, control"),
        );
    }
    ok(s.verify(&public, &[], &image), "opship verify, control");
    let mut changed = payload.clone();
    let i = changed.len() - 3;
    changed[i] = changed[i].to_ascii_uppercase();
    assert_ne!(changed, payload);
    crate::sign::push_raw(&s, &s.d3, &changed, &sig);
    for major in [2, 3] {
        refuses(
            cosign_check(&s, major, "verify", &public, &[], &image),
            &format!("cosign{major} verify of a changed payload"),
        );
    }
    fails_with(
        s.verify(&public, &[], &image),
        "the signature does not verify with the public key",
    );
}

/// cosign 3's default `verify-attestation` reads only an image's Sigstore bundle referrers
/// once it has any: opship's attestation (no format asked for) is found by cosign 3.1 in every
/// order of opship signing (`.sig`), cosign 3 signing (a bundle) and opship attesting, and by
/// cosign 2 (the `.att`) whenever the image has a `.sig`; `attest` says where it wrote what,
/// and a second attest adds nothing. An image with no signature yet gets both too (cosign 3
/// may sign it later); `--format cosign2` writes the `.att` alone, as asked.
#[test]
fn cosign3_finds_opship_attestations_in_every_order() {
    let s = Setup::new();
    let (key, public, _, _) = keys(&s);
    let predicate = s.path("prov-order.json");
    std::fs::write(
        &predicate,
        r#"{"buildDefinition":{"buildType":"https://example.com/order/v1"},"runDetails":{"builder":{"id":"https://example.com/b"}}}"#,
    )
    .unwrap();
    let attest = |extra: &[&str], image: &str| {
        run(opship_pw(&s.home, PASSWORD)
            .args(["attest", "--key"])
            .arg(&key)
            .args(["--type", "slsaprovenance1", "--predicate"])
            .arg(&predicate)
            .args(extra)
            .arg(image))
    };
    let steps = ["opship sign", "cosign3 sign", "opship attest"];
    let orders = [
        [0, 1, 2],
        [1, 0, 2],
        [0, 2, 1],
        [2, 0, 1],
        [1, 2, 0],
        [2, 1, 0],
    ];
    for (n, order) in orders.iter().enumerate() {
        let d = crane_image(&s, &format!("bundle:order{n}"), &format!("order {n}"));
        let image = by_digest(&s, &d);
        let said: Vec<&str> = order.iter().map(|i| steps[*i]).collect();
        let what = said.join(", then ");
        for step in &said {
            match *step {
                "opship sign" => {
                    ok(
                        run(opship_pw(&s.home, PASSWORD)
                            .args(["sign", "--key"])
                            .arg(&key)
                            .arg(&image)),
                        &format!("{what}: opship sign"),
                    );
                }
                "cosign3 sign" => {
                    passes(
                        cosign_sign(&s, 3, &key, &[], &image),
                        &format!("{what}: cosign3 sign"),
                    );
                }
                _ => {
                    let r = ok(attest(&[], &image), &format!("{what}: opship attest"));
                    assert!(
                        r.stderr.contains("`.att` for cosign 2: ")
                            && r.stderr
                                .contains("; Sigstore bundle referrer for cosign 3: "),
                        "{what}: {}",
                        r.stderr
                    );
                    assert_eq!(r.stdout.lines().count(), 2, "{what}: {}", r.stdout);
                }
            }
        }
        let sig_tag = format!("{}/bundle:sha256-{}.sig", s.reg.addr, &d[7..]);
        assert_eq!(manifest(&sig_tag)["layers"].as_array().unwrap().len(), 1);
        for major in [3, 2] {
            passes(
                cosign_check(
                    &s,
                    major,
                    "verify-attestation",
                    &public,
                    &["--type", "slsaprovenance1"],
                    &image,
                ),
                &format!("{what}: cosign{major} verify-attestation"),
            );
            passes(
                cosign_check(&s, major, "verify", &public, &[], &image),
                &format!("{what}: cosign{major} verify"),
            );
        }
        let again = ok(attest(&[], &image), &format!("{what}: attest again"));
        assert!(
            again.stderr.contains("already attested"),
            "{what}: {}",
            again.stderr
        );
        // opship reads both of its own.
        let r = ok(
            run(isolated(&s.home)
                .args(["verify-attestation", "--key"])
                .arg(&public)
                .args(["--type", "slsaprovenance1"])
                .arg(&image)),
            &format!("{what}: opship verify-attestation"),
        );
        assert!(
            r.stderr.contains("2 of 2 attestation(s)"),
            "{what}: {}",
            r.stderr
        );
    }
    // Asked for cosign 2's format: the `.att` alone, which cosign 3 does not read once a
    // bundle is there.
    let d = crane_image(&s, "bundle:asked2", "asked 2");
    let image = by_digest(&s, &d);
    passes(cosign_sign(&s, 3, &key, &[], &image), "cosign3 sign");
    let r = ok(
        attest(&["--format", "cosign2"], &image),
        "attest --format cosign2",
    );
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(r.stdout.trim().ends_with(".att"), "{}", r.stdout);
}

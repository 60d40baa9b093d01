//! `opship catalog verify` against a real registry (distribution 2.8.2 on a loopback port):
//! a catalog whose bundle images are signed by opship, cosign 2 (`.sig`) and cosign 3
//! (Sigstore bundle referrer) passes; an unsigned bundle, one signed by another key and one
//! whose signature names another repository each fail with their reason; several `--key`s,
//! the catalog image, JSON output and an OCI layout instead of the registry; a catalog that
//! does not load.

use std::path::Path;

use crate::cosign_peers::cosign_sign;
use crate::sign::{PASSWORD, Setup, fails_with};
use crate::support_registry::{isolated, json, ok};
use crate::{Run, run};

/// Writes a catalog directory with one package whose bundles are `images` (name, image).
pub(crate) fn catalog(dir: &Path, images: &[(&str, String)]) {
    let pkg = dir.join("op");
    std::fs::create_dir_all(&pkg).unwrap();
    let mut text = String::from(
        r#"{"schema":"olm.package","name":"op","defaultChannel":"stable"}
"#,
    );
    let entries: Vec<String> = images
        .iter()
        .map(|(n, _)| format!(r#"{{"name":"{n}"}}"#))
        .collect();
    text.push_str(&format!(
        r#"{{"schema":"olm.channel","name":"stable","package":"op","entries":[{}]}}
"#,
        entries.join(",")
    ));
    for (i, (name, image)) in images.iter().enumerate() {
        text.push_str(&format!(
            r#"{{"schema":"olm.bundle","name":"{name}","package":"op","image":"{image}","properties":[{{"type":"olm.package","value":{{"packageName":"op","version":"0.{i}.0"}}}}]}}
"#
        ));
    }
    std::fs::write(pkg.join("catalog.json"), text).unwrap();
}

fn verify(s: &Setup, index: &Path, args: &[&str]) -> Run {
    run(isolated(&s.home)
        .args(["catalog", "verify"])
        .arg(index)
        .args(args))
}

fn push(s: &Setup, tag: &str, to: &str) {
    ok(
        run(isolated(&s.home)
            .arg("push")
            .arg(format!("{}:{tag}", s.path("oci").display()))
            .arg(to)),
        "push",
    );
}

#[test]
fn every_bundle_verified_or_refused_with_its_reason() {
    let s = Setup::new();
    let (key, public) = s.keys("trusted", PASSWORD);
    let (other_key, other_pub) = s.keys("other", PASSWORD);
    let reg = s.reg.addr.clone();
    // The same two images under other repositories.
    push(&s, "0.2.0", &format!("{reg}/foreign/bundle:v0.2.0"));
    push(&s, "0.3.0", &format!("{reg}/moved/bundle:v0.3.0"));
    push(&s, "0.2.0", &format!("{reg}/c3/bundle:v0.2.0"));
    push(&s, "0.3.0", &format!("{reg}/c2/bundle:v0.3.0"));
    let signed = format!("{reg}/bundle@{}", s.d3);
    let unsigned = format!("{reg}/bundle@{}", s.d2);
    let foreign = format!("{reg}/foreign/bundle@{}", s.d2);
    let moved = format!("{reg}/moved/bundle@{}", s.d3);
    let by_cosign3 = format!("{reg}/c3/bundle@{}", s.d2);
    let by_cosign2 = format!("{reg}/c2/bundle@{}", s.d3);
    ok(s.sign(&key, PASSWORD, &[], &signed), "sign");
    ok(s.sign(&other_key, PASSWORD, &[], &foreign), "sign other");
    // A signature made for `bundle`, stored beside `moved/bundle`: it names another image.
    ok(
        s.sign(
            &key,
            PASSWORD,
            &["--identity", &format!("{reg}/bundle")],
            &moved,
        ),
        "sign moved",
    );
    for (major, image) in [(2, &by_cosign2), (3, &by_cosign3)] {
        let r = cosign_sign(&s, major, &key, &[], image);
        assert_eq!(r.code, 0, "cosign{major} sign: {}", r.stderr);
    }

    // All good: opship's, cosign 2's and cosign 3's signatures with the trusted key.
    let good = s.path("good");
    catalog(
        &good,
        &[
            ("op.v0.0.0", signed.clone()),
            ("op.v0.1.0", by_cosign2.clone()),
            ("op.v0.2.0", by_cosign3.clone()),
        ],
    );
    let pubs = public.to_str().unwrap();
    let r = ok(verify(&s, &good, &["--key", pubs]), "catalog verify");
    assert_eq!(r.stdout.lines().count(), 3, "{}", r.stdout);
    for (name, image) in [
        ("op.v0.0.0", &signed),
        ("op.v0.1.0", &by_cosign2),
        ("op.v0.2.0", &by_cosign3),
    ] {
        assert!(
            r.stdout
                .contains(&format!("verified {name} ({image}): by {pubs}")),
            "{}",
            r.stdout
        );
    }

    // One bad bundle of each kind: each listed with its reason, exit 1.
    let bad = s.path("bad");
    catalog(
        &bad,
        &[
            ("op.v0.0.0", signed.clone()),
            ("op.v0.1.0", unsigned.clone()),
            ("op.v0.2.0", foreign.clone()),
            ("op.v0.3.0", moved.clone()),
            ("op.v0.4.0", format!("{reg}/bundle:v0.3.0")),
        ],
    );
    let r = fails_with(verify(&s, &bad, &["--key", pubs]), "4 of 5 image(s) of");
    let line = |name: &str| {
        r.stdout
            .lines()
            .find(|l| l.contains(&format!(" {name} (")))
            .unwrap_or_else(|| panic!("no line for {name}: {}", r.stdout))
            .to_owned()
    };
    assert!(line("op.v0.0.0").starts_with("verified "));
    let l = line("op.v0.1.0");
    assert!(
        l.starts_with("unsigned ") && l.contains(&format!("sha256-{}.sig", &s.d2[7..])),
        "{l}"
    );
    let l = line("op.v0.2.0");
    assert!(l.starts_with("refused ") && l.contains("signature"), "{l}");
    let l = line("op.v0.3.0");
    assert!(
        l.starts_with("refused ") && l.contains(&format!("{reg}/bundle")),
        "{l}"
    );
    let l = line("op.v0.4.0");
    assert!(
        l.starts_with("refused ") && l.contains("not a digest"),
        "{l}"
    );

    // JSON: one entry per image with its verdict.
    let r = verify(&s, &bad, &["--key", pubs, "-o", "json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v = json(&r.stdout);
    let verdicts: Vec<(&str, &str)> = v["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["bundles"][0].as_str().unwrap(),
                i["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("op.v0.0.0", "verified"),
            ("op.v0.1.0", "unsigned"),
            ("op.v0.2.0", "refused"),
            ("op.v0.3.0", "refused"),
            ("op.v0.4.0", "refused"),
        ],
        "{}",
        r.stdout
    );
    // Same inputs, same bytes.
    assert_eq!(
        verify(&s, &bad, &["--key", pubs, "-o", "json"]).stdout,
        r.stdout
    );

    // A second trusted key lets the other key's bundle through (and names the key).
    let both = s.path("both");
    catalog(
        &both,
        &[
            ("op.v0.0.0", signed.clone()),
            ("op.v0.1.0", foreign.clone()),
        ],
    );
    fails_with(verify(&s, &both, &["--key", pubs]), "1 of 2 image(s)");
    let others = other_pub.to_str().unwrap();
    let r = ok(
        verify(&s, &both, &["--key", pubs, "--key", others]),
        "two keys",
    );
    assert!(
        r.stdout
            .contains(&format!("verified op.v0.1.0 ({foreign}): by {others}")),
        "{}",
        r.stdout
    );

    // The catalog image is checked too when given.
    let r = fails_with(
        verify(&s, &good, &["--key", pubs, "--catalog-image", &unsigned]),
        "1 of 4 image(s)",
    );
    assert!(
        r.stdout
            .contains(&format!("unsigned catalog image {unsigned}")),
        "{}",
        r.stdout
    );
}

#[test]
fn layout_images_verified_by_digest() {
    let s = Setup::new();
    let (key, public) = s.keys("trusted", PASSWORD);
    let reg = s.reg.addr.clone();
    let layout = s.path("oci");
    // Sign 0.3.0 in the layout as the registry's `bundle` repository.
    ok(
        s.sign(
            &key,
            PASSWORD,
            &["--identity", &format!("{reg}/bundle")],
            &format!("{}:0.3.0", layout.display()),
        ),
        "sign layout",
    );
    let index = s.path("index");
    catalog(
        &index,
        &[
            ("op.v0.0.0", format!("{reg}/bundle@{}", s.d3)),
            ("op.v0.1.0", format!("{reg}/bundle@{}", s.d2)),
        ],
    );
    let pubs = public.to_str().unwrap();
    let layout_s = layout.to_str().unwrap();
    let r = fails_with(
        verify(&s, &index, &["--key", pubs, "--layout", layout_s]),
        "1 of 2 image(s)",
    );
    assert!(r.stdout.contains("verified op.v0.0.0"), "{}", r.stdout);
    assert!(r.stdout.contains("unsigned op.v0.1.0"), "{}", r.stdout);
    // Not in the layout at all: refused, naming the layout.
    catalog(
        &index,
        &[(
            "op.v0.0.0",
            format!("{reg}/bundle@sha256:{}", "0".repeat(64)),
        )],
    );
    let r = fails_with(
        verify(&s, &index, &["--key", pubs, "--layout", layout_s]),
        "no image with digest",
    );
    assert!(r.stdout.starts_with("refused "), "{}", r.stdout);
}

#[test]
fn a_catalog_that_does_not_load_is_an_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let prefix = tmp.path().join("k");
    ok(
        run(crate::sign::opship_pw(&home, PASSWORD)
            .args(["key", "generate", "--output-key-prefix"])
            .arg(&prefix)),
        "key generate",
    );
    let index = tmp.path().join("index");
    std::fs::create_dir_all(index.join("op")).unwrap();
    std::fs::write(
        index.join("op/catalog.json"),
        "{\"schema\":\"olm.package\",\"name\":\"op\"}\n{\"schema\": olm.bundle\n",
    )
    .unwrap();
    let r = run(isolated(&home)
        .args(["catalog", "verify"])
        .arg(&index)
        .arg("--key")
        .arg(prefix.with_extension("pub")));
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(r.stderr.contains("op/catalog.json:2:12"), "{}", r.stderr);
    // A key that is not a public key: a usage error before any network.
    let r = run(isolated(&home)
        .args(["catalog", "verify"])
        .arg(&index)
        .arg("--key")
        .arg(index.join("op/catalog.json")));
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
}

/// An `olm.bundle` blob of package `op` named `name` with image `image`, alone in a file.
fn lone_bundle(name: &str, image: &str) -> String {
    format!(
        "schema: olm.bundle\nname: {name}\npackage: op\nimage: {image}\nproperties:\n- type: \
         olm.package\n  value:\n    packageName: op\n    version: 0.9.1\n"
    )
}

#[test]
fn an_unsigned_bundle_in_any_file_opm_reads_is_refused() {
    // opm v1.26.5 reads every file under the catalog (hidden ones, any extension, nested
    // directories, hidden directories) but `.indexignore` files and what they exclude. An
    // unsigned bundle placed in any of those must fail the gate, not pass unseen.
    let s = Setup::new();
    let (key, public) = s.keys("trusted", PASSWORD);
    let reg = s.reg.addr.clone();
    let layout = s.path("oci");
    ok(
        s.sign(
            &key,
            PASSWORD,
            &["--identity", &format!("{reg}/bundle")],
            &format!("{}:0.3.0", layout.display()),
        ),
        "sign layout",
    );
    let signed = format!("{reg}/bundle@{}", s.d3);
    let unsigned = format!("{reg}/bundle@{}", s.d2);
    let pubs = public.to_str().unwrap();
    let layout_s = layout.to_str().unwrap();
    let cases: &[(&str, Option<(&str, &str)>)] = &[
        ("op/.op.opship-2.yaml", None),
        ("op/.catalog.opship-new-draft", None),
        ("op/.Catalog.new-q1W2e3", None),
        ("op/.op.old-x", None),
        ("op/.hidden", None),
        ("op/extra.txt", None),
        ("op/more/deeper/bundle", None),
        (".cache/op.json", None),
        (
            "op/.indexignored-not/x.yml",
            Some((".indexignore", "*.yaml\n")),
        ),
        // The root excludes `*.yaml`; the package's own `.indexignore` re-includes one file,
        // and go-git (whose matcher opm uses) lets the later pattern win.
        (
            "op/.sneaky.yaml",
            Some(("op/.indexignore", "!.sneaky.yaml\n")),
        ),
    ];
    for (i, (file, ignore)) in cases.iter().enumerate() {
        let index = s.path(&format!("index{i}"));
        catalog(&index, &[("op.v0.0.0", signed.clone())]);
        if ignore.is_some_and(|(f, _)| f.starts_with("op/")) {
            std::fs::write(index.join(".indexignore"), "*.yaml\n").unwrap();
        }
        if let Some((f, text)) = ignore {
            std::fs::write(index.join(f), text).unwrap();
        }
        let path = index.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, lone_bundle("op.v0.9.1", &unsigned)).unwrap();
        let r = fails_with(
            verify(&s, &index, &["--key", pubs, "--layout", layout_s]),
            "1 of 2 image(s)",
        );
        assert!(
            r.stdout
                .contains(&format!("unsigned op.v0.9.1 ({unsigned})")),
            "{file}: {}",
            r.stdout
        );
        assert!(
            r.stdout.contains("verified op.v0.0.0"),
            "{file}: {}",
            r.stdout
        );
    }
    // What an `.indexignore` excludes opm never reads: not part of the catalog.
    let index = s.path("ignored");
    catalog(&index, &[("op.v0.0.0", signed.clone())]);
    std::fs::write(index.join("op/.indexignore"), "/notes/\n*.md\n").unwrap();
    for f in ["op/notes/a.yaml", "op/README.md", "op/sub/CHANGES.md"] {
        let path = index.join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, lone_bundle("op.v0.9.1", &unsigned)).unwrap();
    }
    let r = ok(
        verify(&s, &index, &["--key", pubs, "--layout", layout_s]),
        "catalog verify",
    );
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    // A temporary of the exact shape opship makes (what a killed `catalog add` leaves): not
    // skipped, the catalog refused naming it.
    for name in [".opship-Ab12Cd", ".opship-zz90QQ"] {
        let index = s.path(&format!("left{name}"));
        catalog(&index, &[("op.v0.0.0", signed.clone())]);
        std::fs::write(
            index.join("op").join(name),
            lone_bundle("op.v0.9.1", &unsigned),
        )
        .unwrap();
        let r = verify(&s, &index, &["--key", pubs, "--layout", layout_s]);
        assert_eq!(r.code, 2, "{name}: {}\n{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains(name) && r.stderr.contains("interrupted opship run"),
            "{}",
            r.stderr
        );
    }
}

//! `opship push LAYOUT NAMESPACE --all-tags`: every image of a layout (bundles of several
//! operators, clashing versions renamed `<package>-bundle:<version>` by `opship build`) pushed
//! concurrently to a real registry, each to its own repository; skopeo reads them back.

use std::path::Path;

use crate::support_registry::{TestRegistry, isolated, json, ok, skopeo_inspect};
use crate::{opship, repo, run, tracked};

fn corpus_bundle(rel: &str) -> std::path::PathBuf {
    let corpus = std::env::var_os("OPSHIP_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            [
                repo().join("../shared/corpus"),
                "/work/shared/corpus".into(),
            ]
            .into_iter()
            .find(|c| c.join("bundles").is_dir())
            .expect("corpus not found: set OPSHIP_CORPUS")
        });
    corpus.join("bundles").join(rel)
}

/// `opship build` output lines `TAG DIGEST`.
fn build(layout: &Path, extra: &[&str], bundles: &[std::path::PathBuf]) -> Vec<(String, String)> {
    let r = ok(
        run(opship()
            .args(["build", "--layout"])
            .arg(layout)
            .args(extra)
            .args(bundles)),
        "build",
    );
    r.stdout
        .lines()
        .map(|l| {
            let (t, d) = l.split_once(' ').unwrap();
            (t.to_owned(), d.to_owned())
        })
        .collect()
}

#[test]
fn all_tags_of_a_layout_go_to_their_repositories() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let layout = tmp.path().join("oci");
    let mut built = build(
        &layout,
        &[],
        &[
            tracked("bundle/0.1.0"),
            tracked("bundle/0.2.0"),
            tracked("bundle/0.3.0"),
            corpus_bundle("ack-dms-controller/0.1.0"),
            corpus_bundle("volume-expander-operator/0.2.0"),
        ],
    );
    built.extend(build(
        &layout,
        &["--tag", "latest"],
        &[tracked("bundle/0.3.0")],
    ));
    let tags: Vec<&str> = built.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        tags,
        [
            "memcached-operator-bundle:0.1.0",
            "memcached-operator-bundle:0.2.0",
            "0.3.0",
            "ack-dms-controller-bundle:0.1.0",
            "volume-expander-operator-bundle:0.2.0",
            "latest",
        ]
    );
    let ns = format!("{}/operators", reg.addr);
    let expected: Vec<String> = [
        "memcached-operator-bundle:0.1.0",
        "memcached-operator-bundle:0.2.0",
        "memcached-operator-bundle:0.3.0",
        "ack-dms-controller-bundle:0.1.0",
        "volume-expander-operator-bundle:0.2.0",
        "memcached-operator-bundle:latest",
    ]
    .iter()
    .zip(&built)
    .map(|(dest, (_, digest))| format!("{ns}/{dest} {digest}"))
    .collect();

    let l = layout.display().to_string();
    let r = ok(
        run(isolated(&home).args(["push", &l, &ns, "--all-tags", "--jobs", "3"])),
        "push --all-tags",
    );
    assert_eq!(r.stdout.lines().collect::<Vec<_>>(), expected);
    // (How many blobs were already there depends on timing: `latest` shares its blobs with
    // `0.3.0` in the same repository.)
    assert!(r.stderr.contains("pushed 6 of 6 images"), "{}", r.stderr);

    // Every image is where the line says, as skopeo sees it.
    for line in &expected {
        let (reference, digest) = line.split_once(' ').unwrap();
        let inspect = skopeo_inspect(reference);
        assert_eq!(inspect["Digest"], digest, "{reference}");
    }
    let r = ok(
        run(isolated(&home).args(["tags", &format!("{ns}/memcached-operator-bundle")])),
        "tags",
    );
    let mut tags: Vec<&str> = r.stdout.lines().collect();
    tags.sort();
    assert_eq!(tags, ["0.1.0", "0.2.0", "0.3.0", "latest"]);

    // Again: nothing uploaded, same lines; JSON output.
    let r = ok(
        run(isolated(&home).args(["push", &l, &ns, "--all-tags", "-o", "json"])),
        "re-push",
    );
    let v = json(&r.stdout);
    let pushed = v.as_array().unwrap();
    assert_eq!(pushed.len(), 6);
    for (p, line) in pushed.iter().zip(&expected) {
        assert_eq!(
            format!(
                "{} {}",
                p["reference"].as_str().unwrap(),
                p["digest"].as_str().unwrap()
            ),
            *line
        );
        assert_eq!(p["present"], p["blobs"]);
        assert_eq!(p["uploadedBytes"], 0);
    }
    assert!(r.stderr.contains("12 of 12 blobs"), "{}", r.stderr);

    // One image pulled back, every blob verified.
    let (reference, digest) = expected[3].split_once(' ').unwrap();
    let pulled = tmp.path().join("pulled");
    let r = ok(
        run(isolated(&home).args(["pull", reference, &format!("{}:x", pulled.display())])),
        "pull",
    );
    assert_eq!(r.stdout.trim(), digest);

    // Two different images for one destination: refused before anything is pushed.
    build(
        &layout,
        &["--tag", "memcached-operator-bundle:latest"],
        &[tracked("bundle/0.2.0")],
    );
    let r = run(isolated(&home).args(["push", &l, &format!("{}/other", reg.addr), "--all-tags"]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "the tags `latest` and `memcached-operator-bundle:latest` would both be pushed to"
        ),
        "{}",
        r.stderr
    );
    assert_eq!(r.stdout, "");
    // A destination with a tag is not a namespace.
    let r = run(isolated(&home).args(["push", &l, &format!("{ns}/x:1"), "--all-tags"]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("registry namespace"), "{}", r.stderr);
}

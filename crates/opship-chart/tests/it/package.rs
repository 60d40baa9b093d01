//! Packaging and indexing against Helm's own: the same files as `helm package`, the same
//! bytes on every run, and an index.yaml that agrees with `repo_index_generate`.

use std::path::Path;

use opship_chart::Options;
use opship_chart::package;
use serde_json::{Value, json};

use crate::{corpus_dir, environments, helm, render_to_temp, tracked};

fn entries(tgz: &Path) -> Vec<Value> {
    let r = helm(&["tgz".to_owned(), tgz.display().to_string()]);
    r["entries"].as_array().unwrap().clone()
}

fn chart_yaml(e: &[Value]) -> Value {
    let c = e
        .iter()
        .find(|e| e["name"].as_str().unwrap().ends_with("/Chart.yaml"))
        .unwrap();
    opship_core::yaml::parse_one(c["text"].as_str().unwrap(), Path::new("Chart.yaml"))
        .unwrap()
        .value
}

/// Helm's `package` of the rendered directory and opship's archive hold the same files with
/// the same bytes (Chart.yaml, which Helm re-serialises, the same when parsed).
#[test]
fn helm_package_holds_the_same_files() {
    for bundle in [
        tracked("bundle/0.3.0"),
        // CRD file names longer than 100 bytes (GNU long names in the tar).
        corpus_dir().join("bundles/community-kubevirt-hyperconverged/1.15.0"),
    ] {
        let (tmp, dir, _chart) = render_to_temp(&bundle, &Options::default(), &environments());
        let files = package::read_dir(&dir).unwrap();
        let ours = package::package(&files, 0, &dir).unwrap();
        let ours_path = tmp.path().join(ours.file_name());
        std::fs::write(&ours_path, &ours.bytes).unwrap();
        let helm_dest = tmp.path().join("helm");
        std::fs::create_dir(&helm_dest).unwrap();
        let r = helm(&[
            "package".to_owned(),
            dir.display().to_string(),
            helm_dest.display().to_string(),
        ]);
        let theirs_path = r["path"].as_str().unwrap_or_else(|| panic!("{r}"));
        assert!(theirs_path.ends_with(&ours.file_name()), "{theirs_path}");
        let ours_e = entries(&ours_path);
        let theirs_e = entries(Path::new(theirs_path));
        let names = |e: &[Value]| {
            let mut n: Vec<String> = e
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_owned())
                .collect();
            n.sort();
            n
        };
        assert_eq!(names(&ours_e), names(&theirs_e), "{}", bundle.display());
        for o in &ours_e {
            let t = theirs_e.iter().find(|t| t["name"] == o["name"]).unwrap();
            assert_eq!(o["type"], "0", "{}: not a regular file", o["name"]);
            assert_eq!(o["mode"], t["mode"], "{}: mode", o["name"]);
            assert_eq!((&o["uid"], &o["gid"]), (&json!(0), &json!(0)));
            if !o["name"].as_str().unwrap().ends_with("/Chart.yaml") {
                assert_eq!(o["sha256"], t["sha256"], "{}: content", o["name"]);
            }
        }
        assert_eq!(chart_yaml(&ours_e), chart_yaml(&theirs_e));
        // Helm's gzip header: FEXTRA and FCOMMENT, mtime 0.
        let g = helm(&["tgz".to_owned(), ours_path.display().to_string()]);
        assert_eq!(
            &g["gzip_header"].as_str().unwrap()[..16],
            "1f8b081400000000"
        );
    }
}

/// The same chart gives the same archive bytes on every run, whatever the file times, and a
/// different SOURCE_DATE_EPOCH gives different entry mtimes.
#[test]
fn archive_is_byte_identical_across_runs() {
    let bundle = tracked("bundle/0.3.0");
    let (tmp1, dir1, _) = render_to_temp(&bundle, &Options::default(), &environments());
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (tmp2, dir2, _) = render_to_temp(&bundle, &Options::default(), &environments());
    let a = package::package(&package::read_dir(&dir1).unwrap(), 0, &dir1).unwrap();
    let b = package::package(&package::read_dir(&dir2).unwrap(), 0, &dir2).unwrap();
    assert_eq!(a.bytes, b.bytes);
    assert_eq!(a.digest(), b.digest());
    let epoch = 1_700_000_000;
    let c = package::package(&package::read_dir(&dir1).unwrap(), epoch, &dir1).unwrap();
    assert_ne!(a.bytes, c.bytes);
    let path = tmp1.path().join("c.tgz");
    std::fs::write(&path, &c.bytes).unwrap();
    for e in entries(&path) {
        assert_eq!(e["mtime"], json!(epoch), "{}", e["name"]);
    }
    drop(tmp2);
}

/// opship's index.yaml and Helm's `repo_index_generate` of the same archives agree on every
/// entry (all Chart.yaml fields, digest, urls), except `created`/`generated`, which Helm takes
/// from the clock and opship from SOURCE_DATE_EPOCH.
#[test]
fn index_agrees_with_helm_repo_index() {
    let tmp = tempfile::tempdir().unwrap();
    let pkgs = tmp.path().join("pkgs");
    std::fs::create_dir(&pkgs).unwrap();
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        let (_t, dir, _) = render_to_temp(
            &tracked(&format!("bundle/{v}")),
            &Options::default(),
            &Default::default(),
        );
        let p = package::package(&package::read_dir(&dir).unwrap(), 0, &dir).unwrap();
        std::fs::write(pkgs.join(p.file_name()), &p.bytes).unwrap();
    }
    let url = "https://example.github.io/charts";
    let opts = opship_chart::index::Options {
        url: Some(url.into()),
        created: "2024-01-02T03:04:05Z".into(),
        merge: None,
    };
    let ours = opship_chart::index::build(&pkgs, &opts).unwrap();
    let theirs = helm(&[
        "index".to_owned(),
        pkgs.display().to_string(),
        "--url".to_owned(),
        url.to_owned(),
    ]);
    assert_eq!(ours["apiVersion"], theirs["apiVersion"]);
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        for list in v["entries"].as_object_mut().unwrap().values_mut() {
            for e in list.as_array_mut().unwrap() {
                e.as_object_mut().unwrap().remove("created");
            }
        }
        v["entries"].clone()
    };
    assert_eq!(strip(&ours), strip(&theirs), "helm: {theirs}");
    let list = ours["entries"]["memcached-operator"].as_array().unwrap();
    assert_eq!(list[0]["version"], "0.3.0", "newest first");
    assert_eq!(list[0]["created"], "2024-01-02T03:04:05Z");
    assert_eq!(ours["generated"], "2024-01-02T03:04:05Z");

    // Merging keeps `created` of unchanged entries.
    let again = opship_chart::index::build(
        &pkgs,
        &opship_chart::index::Options {
            url: Some(url.into()),
            created: "2025-01-01T00:00:00Z".into(),
            merge: Some(ours.clone()),
        },
    )
    .unwrap();
    assert_eq!(
        again["entries"]["memcached-operator"][1]["created"],
        "2024-01-02T03:04:05Z"
    );
}

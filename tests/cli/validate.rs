//! `opship validate`: exit statuses, output formats, rule listing, on the sample operator.

use crate::{opship, repo, sample_copy, tracked_tree};

fn run(args: &[&str]) -> (i32, String, String) {
    let out = opship()
        .current_dir(tracked_tree())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn sample_bundles_are_clean_under_every_suite() {
    let (code, stdout, stderr) = run(&[
        "validate",
        "bundle",
        "bundle/0.1.0",
        "bundle/0.2.0",
        "bundle/0.3.0",
        "--select-optional",
        "all",
        "--k8s-version",
        "1.32",
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(!stdout.contains("\u{1b}["), "no colour without a terminal");
}

#[test]
fn errors_exit_1_and_name_rule_file_and_line() {
    let (_tmp, dir) = sample_copy();
    let csv = dir.join("0.3.0/manifests/memcached-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&csv).unwrap();
    // Break the YAML three lines into the spec.
    let broken = text.replacen("spec:\n", "spec:\n  displayName: [unclosed\n", 1);
    std::fs::write(&csv, broken).unwrap();
    let out = opship()
        .args(["validate", "bundle"])
        .arg(dir.join("0.3.0"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("BF008"), "{stdout}");
    assert!(
        stdout.contains("memcached-operator.clusterserviceversion.yaml:"),
        "{stdout}"
    );

    let out = opship()
        .args(["validate", "bundle", "-o", "json"])
        .arg(dir.join("0.3.0"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = v["bundles"][0]["findings"].as_array().unwrap();
    let f = findings.iter().find(|f| f["rule"] == "BF008").unwrap();
    assert_eq!(f["level"], "error");
    assert!(f["location"]["line"].as_u64().unwrap() > 0);
}

#[test]
fn unreadable_bundle_exits_2_naming_it() {
    let (code, stdout, stderr) = run(&["validate", "bundle", "bundle/0.3.0", "no/such/bundle"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stdout.contains("no/such/bundle") || stderr.contains("no/such/bundle"),
        "{stdout}{stderr}"
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[
            "validate",
            "bundle",
            "bundle/0.3.0",
            "--select-optional",
            "nope",
        ][..],
        &["validate", "bundle", "bundle/0.3.0", "--k8s-version", "one"],
        &["validate", "--explain", "XYZ999"],
        &["validate"],
    ] {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
    }
}

#[test]
fn list_and_explain_rules() {
    let (code, stdout, _) = run(&["validate", "--list-rules"]);
    assert_eq!(code, 0);
    assert!(stdout.lines().any(|l| l.starts_with("BF007 ")), "{stdout}");
    let (code, stdout, _) = run(&["validate", "--explain", "bf007"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("BF007: "), "{stdout}");
    assert!(stdout.contains("level:    error"), "{stdout}");
    let (code, stdout, _) = run(&["validate", "--list-rules", "--rules-format", "markdown"]);
    assert_eq!(code, 0);
    assert!(
        stdout == std::fs::read_to_string(repo().join("docs/rules.md")).unwrap(),
        "docs/rules.md differs from `--list-rules --rules-format markdown`: \
         OPSHIP_UPDATE_DOCS=1 cargo test -p opship-validate --test it docs"
    );
}

#[test]
fn images_in_an_oci_layout_are_validated_like_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = tmp.path().join("oci");
    let out = opship()
        .current_dir(tracked_tree())
        .args(["build", "bundle/0.3.0", "--layout"])
        .arg(&layout)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for arg in [
        format!("{}:0.3.0", layout.display()),
        format!("oci:{}:0.3.0", layout.display()),
    ] {
        let (code, stdout, stderr) = run(&["validate", "bundle", &arg, "--select-optional", "all"]);
        assert_eq!(code, 0, "{arg}: {stdout}{stderr}");
        assert!(stdout.contains("valid"), "{stdout}");
    }
    // A broken file inside the image is found at its line, named through the image.
    let (_t, dir) = sample_copy();
    let csv = dir.join("0.3.0/manifests/memcached-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&csv).unwrap();
    std::fs::write(
        &csv,
        text.replacen("spec:\n", "spec:\n  displayName: [\n", 1),
    )
    .unwrap();
    let out = opship()
        .args(["build", "--layout"])
        .arg(&layout)
        .args(["--tag", "broken"])
        .arg(dir.join("0.3.0"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let arg = format!("{}:broken", layout.display());
    let (code, stdout, _) = run(&["validate", "bundle", &arg]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{arg}/manifests/memcached-operator.clusterserviceversion.yaml:"
        )),
        "{stdout}"
    );
    let (code, stdout, stderr) =
        run(&["validate", "bundle", &format!("{}:nope", layout.display())]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stdout.contains("no image tagged `nope`"), "{stdout}");
}

/// `../shared/community` next to the repository, or `/work/shared/community`.
fn community_dir() -> std::path::PathBuf {
    if let Ok(p) = std::env::var("OPSHIP_COMMUNITY") {
        return p.into();
    }
    let sibling = repo().join("../shared/community");
    if sibling.is_dir() {
        return sibling;
    }
    "/work/shared/community".into()
}

#[test]
fn validate_operator_reports_operator_checks_once_with_check_names() {
    let op = community_dir().join("operators/apicurito");
    let (code, stdout, stderr) = run(&["validate", "operator", op.to_str().unwrap(), "-o", "json"]);
    assert_eq!(code, 1, "the pipeline fails apicurito: {stdout}{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let reports = doc["bundles"].as_array().unwrap();
    assert_eq!(reports.len(), 5, "the operator and its four bundles");
    let unique: Vec<&serde_json::Value> = reports
        .iter()
        .flat_map(|r| r["findings"].as_array().unwrap())
        .filter(|f| f["check"] == "check_operator_name_unique")
        .collect();
    assert_eq!(unique.len(), 1, "operator-level findings are reported once");
    assert_eq!(unique[0]["rule"], "COM005");
    assert_eq!(
        unique[0]["message"],
        "Bundles use multiple operator names: {'apicurito', 'apicuritooperator'}"
    );

    // One bundle of an FBC operator, in SARIF: the pipeline's check name beside the rule ID.
    let bundle = community_dir().join("operators/cat-facts-operator/1.1.0");
    let (code, stdout, stderr) = run(&[
        "validate",
        "bundle",
        bundle.to_str().unwrap(),
        "--select-optional",
        "community",
        "-o",
        "sarif",
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("check_bundle_release_config"), "{stdout}");
    assert!(stdout.contains("COM009"), "{stdout}");

    let (code, _, stderr) = run(&["validate", "operator", "/nonexistent/operator"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("/nonexistent/operator"), "{stderr}");
}

#[test]
fn upgrade_is_refused_when_a_crd_changes_incompatibly() {
    // The sample's own releases upgrade safely.
    let (code, stdout, stderr) = run(&[
        "validate",
        "upgrade",
        "--from",
        "bundle/0.2.0",
        "--to",
        "bundle/0.3.0",
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // A release that lowers `size`'s maximum and removes `containerPort`.
    let tmp = tempfile::tempdir().unwrap();
    let new = tmp.path().join("0.4.0");
    let copy = std::process::Command::new("cp")
        .args(["-r"])
        .arg(repo().join("bundle/0.3.0"))
        .arg(&new)
        .status()
        .unwrap();
    assert!(copy.success());
    let crd = new.join("manifests/cache.example.com_memcacheds.yaml");
    let text = std::fs::read_to_string(&crd).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut edited = String::new();
    let mut skip_indent = None;
    for l in &lines {
        let indent = l.len() - l.trim_start().len();
        if let Some(i) = skip_indent {
            if indent > i {
                continue;
            }
            skip_indent = None;
        }
        if l.trim_start() == "containerPort:" {
            skip_indent = Some(indent);
            continue;
        }
        if l.trim_start() == "maximum: 5" {
            edited.push_str(&l.replace("maximum: 5", "maximum: 3"));
        } else {
            edited.push_str(l);
        }
        edited.push('\n');
    }
    std::fs::write(&crd, edited).unwrap();
    let new_arg = new.to_str().unwrap();
    let (code, stdout, stderr) = run(&[
        "validate",
        "upgrade",
        "--from",
        "bundle/0.3.0",
        "--to",
        new_arg,
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    for want in [
        "UPG003",
        "^.spec.containerPort",
        "UPG008",
        "^.spec.size: maximum decreased : 5 -> 3",
        "memcacheds.cache.example.com",
        "upgrade from 0.3.0",
        "cache.example.com_memcacheds.yaml:",
    ] {
        assert!(stdout.contains(want), "{want:?} missing from {stdout}");
    }
    let (code, json, _) = run(&[
        "validate",
        "upgrade",
        "--from",
        "bundle/0.3.0",
        "--to",
        new_arg,
        "-o",
        "json",
    ]);
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(json.contains("\"UPG008\""), "{doc}");
    let (code, sarif, _) = run(&[
        "validate",
        "upgrade",
        "--from",
        "bundle/0.3.0",
        "--to",
        new_arg,
        "-o",
        "sarif",
    ]);
    assert_eq!(code, 1);
    assert!(sarif.contains("\"ruleId\": \"UPG003\"") || sarif.contains("\"ruleId\":\"UPG003\""));
    // The way back adds a field and raises a maximum: both allowed.
    let (code, stdout, stderr) = run(&[
        "validate",
        "upgrade",
        "--from",
        new_arg,
        "--to",
        "bundle/0.3.0",
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // A bundle that cannot be read: exit 2.
    let (code, _, stderr) = run(&[
        "validate",
        "upgrade",
        "--from",
        "no/such/bundle",
        "--to",
        "bundle/0.3.0",
    ]);
    assert_eq!(code, 2, "{stderr}");
}

//! Report formats: text, JSON, SARIF 2.1.0 (checked against its schema) and GitHub annotations.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use opship_core::yaml::{Origin, Pos};
use opship_validate::report::{Format, RenderOptions, render};
use opship_validate::{BundleReport, Error, Finding, Level, Options, Result, format};
use serde_json::Value;

const CSV: &str = "bundles/memcached/0.0.1/manifests/memcached-operator.clusterserviceversion.yaml";

fn at(file: &str, line: u32, col: u32) -> Origin {
    Origin {
        file: Arc::from(Path::new(file)),
        pos: Pos { line, col },
    }
}

/// Three bundles (one with findings of every shape, one clean, one with hostile text) and two
/// that could not be validated.
fn sample() -> Vec<Result<BundleReport>> {
    vec![
        Ok(BundleReport {
            path: PathBuf::from("bundles/memcached/0.0.1"),
            name: "0.0.1".into(),
            skipped: vec![],
            findings: vec![
                // Bundle-wide, no location: attached to the bundle directory.
                Finding::new(
                    &format::BF011,
                    "0.0.1",
                    "no ClusterServiceVersion in manifests/",
                ),
                // Whole file (line 0).
                Finding::new(
                    &format::BF003,
                    "0.0.1",
                    "metadata/extra.yaml also has annotations",
                )
                .at(at("bundles/memcached/0.0.1/metadata/extra.yaml", 0, 0)),
                // A position, another object, a warning.
                Finding::new(
                    &format::BF004,
                    "memcached-operator.v0.0.1",
                    "annotation `operators.operatorframework.io.bundle.package.v1` is missing",
                )
                .at(at(CSV, 12, 3))
                .with_level(Level::Warning),
                Finding::new(
                    &format::BF005,
                    "0.0.1",
                    "channels annotation names no channel",
                )
                .at(at(
                    "bundles/memcached/0.0.1/metadata/annotations.yaml",
                    4,
                    54,
                )),
            ],
        }),
        Ok(BundleReport {
            path: PathBuf::from("bundles/clean/1.0.0"),
            name: "1.0.0".into(),
            skipped: vec![],
            findings: vec![],
        }),
        Ok(BundleReport {
            path: PathBuf::from("odd dir/v1:2,3"),
            name: "v1:2,3".into(),
            skipped: vec![],
            findings: vec![
                Finding::new(
                    &format::BF008,
                    "weird,name: x",
                    "100% broken\r\nsecond line \u{1b}[31mred\u{1b}[0m, with: colons",
                )
                .at(at("odd dir/v1:2,3/manifests/ü #1.yaml", 7, 1))
                .with_level(Level::Warning),
            ],
        }),
        Err(Error::NotABundle {
            path: PathBuf::from("bundles/empty"),
            reason: "neither a bundle directory nor a bundle image".into(),
        }),
        Err(Error::io(
            "bundles/missing",
            std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory"),
        )),
    ]
}

/// Rendered, with the tool version masked so snapshots survive releases.
fn rendered(results: &[Result<BundleReport>], format: Format, color: bool) -> String {
    render(results, format, &RenderOptions { color }).replace(
        &format!("\"{}\"", env!("CARGO_PKG_VERSION")),
        "\"[version]\"",
    )
}

fn sarif_validator() -> jsonschema::Validator {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sarif-schema-2.1.0.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .should_validate_formats(true)
        // Draft 4 has no `uri-reference` format (the schema uses it for artifact URIs); check
        // it as RFC 3986 does.
        .with_format("uri-reference", is_uri_reference)
        .build(&schema)
        .expect("the SARIF schema compiles")
}

/// Whether `s` is made only of the characters an RFC 3986 URI reference may hold, with `%`
/// only as the start of a percent-encoded byte.
fn is_uri_reference(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if !(i + 2 < b.len()
                    && b[i + 1].is_ascii_hexdigit()
                    && b[i + 2].is_ascii_hexdigit())
                {
                    return false;
                }
                i += 3;
                continue;
            }
            c if c.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&c) => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

fn assert_valid_sarif(text: &str) -> Value {
    let doc: Value = serde_json::from_str(text).expect("SARIF is JSON");
    let v = sarif_validator();
    let errors: Vec<String> = v
        .iter_errors(&doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "SARIF schema errors: {errors:#?}");
    doc
}

#[test]
fn human() {
    let text = rendered(&sample(), Format::Human, false);
    assert!(!text.contains('\u{1b}'), "no colour unless asked:\n{text}");
    insta::assert_snapshot!("human", text);
}

#[test]
fn human_color() {
    let text = rendered(&sample(), Format::Human, true);
    assert!(text.contains("\u{1b}[1;31merror\u{1b}[0m"));
    assert!(text.contains("\u{1b}[1;33mwarning\u{1b}[0m"));
    // The hostile message's own escape sequence is defused.
    assert!(!text.contains("\u{1b}[31mred"));
    insta::assert_snapshot!("human_color", text);
}

#[test]
fn human_summary_only_when_nothing_to_report() {
    assert_eq!(
        rendered(&[], Format::Human, false),
        "0 bundles, 0 errors, 0 warnings\n"
    );
    let one = vec![Ok(BundleReport {
        path: PathBuf::from("b"),
        name: "b".into(),
        skipped: vec![],
        findings: vec![],
    })];
    assert_eq!(
        rendered(&one, Format::Human, false),
        "b: valid\n\n1 bundle, 0 errors, 0 warnings\n"
    );
}

#[test]
fn json() {
    let text = rendered(&sample(), Format::Json, false);
    assert!(text.ends_with("}\n"));
    insta::assert_snapshot!("json", text);
}

/// The fields docs/validation-output.md promises.
#[test]
fn json_has_the_documented_fields() {
    let text = render(&sample(), Format::Json, &RenderOptions::default());
    let doc: Value = serde_json::from_str(&text).expect("JSON output parses");
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["tool"]["name"], "opship");
    assert_eq!(doc["tool"]["version"], env!("CARGO_PKG_VERSION"));
    let s = &doc["summary"];
    for (k, n) in [
        ("bundles", 5),
        ("valid", 2),
        ("invalid", 1),
        ("failed", 2),
        ("errors", 3),
        ("warnings", 2),
    ] {
        assert_eq!(s[k], n, "summary.{k}");
    }
    let bundles = doc["bundles"].as_array().unwrap();
    assert_eq!(bundles.len(), 3);
    let b = &bundles[0];
    assert_eq!(b["path"], "bundles/memcached/0.0.1");
    assert_eq!(b["name"], "0.0.1");
    assert_eq!(b["valid"], false);
    assert_eq!(
        (b["errors"].as_u64(), b["warnings"].as_u64()),
        (Some(3), Some(1))
    );
    let f = &b["findings"].as_array().unwrap();
    assert_eq!(f.len(), 4);
    for finding in f.iter() {
        let keys: Vec<&str> = finding
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "rule", "level", "suite", "object", "message", "location", "upstream"
            ]
        );
    }
    assert_eq!(f[0]["rule"], "BF011");
    assert_eq!(f[0]["level"], "error");
    assert_eq!(f[0]["suite"], "bundle-format");
    assert_eq!(f[0]["location"], Value::Null);
    assert_eq!(f[0]["upstream"], "BundleNotValid");
    assert_eq!(
        f[1]["location"],
        serde_json::json!({"file": "bundles/memcached/0.0.1/metadata/extra.yaml", "line": null, "column": null})
    );
    assert_eq!(f[2]["level"], "warning");
    assert_eq!(f[2]["object"], "memcached-operator.v0.0.1");
    assert_eq!(
        f[2]["location"],
        serde_json::json!({"file": CSV, "line": 12, "column": 3})
    );
    assert_eq!(bundles[1]["valid"], true);
    assert_eq!(bundles[1]["findings"], serde_json::json!([]));
    // Warnings alone keep a bundle valid.
    assert_eq!(bundles[2]["valid"], true);
    assert_eq!(
        doc["failures"],
        serde_json::json!([
            {"path": "bundles/empty", "error": "bundles/empty: neither a bundle directory nor a bundle image"},
            {"path": "bundles/missing", "error": "bundles/missing: No such file or directory"},
        ])
    );
}

#[test]
fn sarif() {
    let text = rendered(&sample(), Format::Sarif, false);
    assert_valid_sarif(&text);
    insta::assert_snapshot!("sarif", text);
}

#[test]
fn sarif_details() {
    let text = render(&sample(), Format::Sarif, &RenderOptions::default());
    let doc = assert_valid_sarif(&text);
    let run = &doc["runs"][0];
    assert_eq!(doc["runs"].as_array().unwrap().len(), 1);
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "opship");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    let rules = driver["rules"].as_array().unwrap();
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["BF003", "BF004", "BF005", "BF008", "BF011"]);
    assert_eq!(rules[0]["shortDescription"]["text"], format::BF003.summary);
    assert_eq!(rules[0]["help"]["text"], format::BF003.help);
    assert_eq!(
        rules[0]["helpUri"],
        "https://github.com/opship/opship/blob/main/docs/rules.md#bf003"
    );
    assert_eq!(rules[0]["defaultConfiguration"]["level"], "error");
    assert_eq!(
        rules[0]["properties"]["tags"],
        serde_json::json!(["bundle-format"])
    );

    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for r in results {
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(
            rules[idx]["id"], r["ruleId"],
            "ruleIndex points at the rule"
        );
        assert!(r["partialFingerprints"]["opshipFindingHash/v1"].is_string());
    }
    // No location: the bundle directory, no region.
    let loc = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "bundles/memcached/0.0.1/");
    assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    assert!(loc.get("region").is_none());
    // Whole file: no region.
    assert!(
        results[1]["locations"][0]["physicalLocation"]
            .get("region")
            .is_none()
    );
    // Line and column.
    assert_eq!(
        results[2]["locations"][0]["physicalLocation"]["region"],
        serde_json::json!({"startLine": 12, "startColumn": 3})
    );
    assert_eq!(results[2]["level"], "warning");
    // Percent-encoding.
    assert_eq!(
        results[4]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "odd%20dir/v1%3A2,3/manifests/%C3%BC%20%231.yaml"
    );
    // Bundles that could not be validated are tool notifications.
    let inv = &run["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false);
    assert_eq!(
        inv["toolExecutionNotifications"].as_array().unwrap().len(),
        2
    );
}

/// The fingerprint depends on rule, file, object and message, not on the position, so an
/// alert survives lines moving; and it is the same from one run to the next.
#[test]
fn sarif_fingerprints_are_stable() {
    let fp = |line: u32, message: &str| {
        let r = vec![Ok(BundleReport {
            path: PathBuf::from("b"),
            name: "b".into(),
            skipped: vec![],
            findings: vec![Finding::new(&format::BF008, "o", message).at(at("b/m.yaml", line, 1))],
        })];
        let doc: Value =
            serde_json::from_str(&render(&r, Format::Sarif, &RenderOptions::default())).unwrap();
        doc["runs"][0]["results"][0]["partialFingerprints"]["opshipFindingHash/v1"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(fp(3, "m"), fp(3, "m"));
    assert_eq!(fp(3, "m"), fp(40, "m"));
    assert_ne!(fp(3, "m"), fp(3, "n"));
    // Pinned: changing the hash would re-open every alert on GitHub.
    assert_eq!(fp(3, "m"), "f2d7dccf7a6efad263e5253643a86b14");
}

/// The schema check has teeth: documents that break SARIF are rejected.
#[test]
fn sarif_schema_rejects_broken_documents() {
    let v = sarif_validator();
    let good: Value =
        serde_json::from_str(&render(&sample(), Format::Sarif, &RenderOptions::default())).unwrap();
    assert!(v.is_valid(&good));

    let mut wrong_version = good.clone();
    wrong_version["version"] = "2.0.0".into();
    let mut bad_level = good.clone();
    bad_level["runs"][0]["results"][0]["level"] = "fatal".into();
    let mut no_message = good.clone();
    no_message["runs"][0]["results"][0]
        .as_object_mut()
        .unwrap()
        .remove("message");
    let mut zero_line = good.clone();
    zero_line["runs"][0]["results"][2]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        0.into();
    let mut unknown_field = good.clone();
    unknown_field["runs"][0]["tool"]["driver"]["colour"] = "red".into();
    let mut no_driver_name = good.clone();
    no_driver_name["runs"][0]["tool"]["driver"]
        .as_object_mut()
        .unwrap()
        .remove("name");
    let mut relative_information_uri = good.clone();
    relative_information_uri["runs"][0]["tool"]["driver"]["informationUri"] = "opship docs".into();
    let mut unencoded_uri = good.clone();
    unencoded_uri["runs"][0]["results"][4]["locations"][0]["physicalLocation"]["artifactLocation"]
        ["uri"] = "odd dir/ü #1.yaml".into();
    for (what, doc) in [
        ("informationUri not a URI", relative_information_uri),
        ("artifact URI not percent-encoded", unencoded_uri),
        ("wrong version", wrong_version),
        ("bad level", bad_level),
        ("no message", no_message),
        ("zero line", zero_line),
        ("unknown field", unknown_field),
        ("no driver name", no_driver_name),
    ] {
        assert!(!v.is_valid(&doc), "{what}: the schema should reject it");
    }
}

/// A real bundle, broken on purpose, validated and rendered: every format copes, SARIF is valid.
#[test]
fn real_bundle_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memcached");
    copy_tree(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/_base"),
        &dir,
    );
    let ann = dir.join("metadata/annotations.yaml");
    let text = std::fs::read_to_string(&ann).unwrap();
    let text: String = text
        .lines()
        .filter(|l| !l.contains("bundle.package.v1"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&ann, text).unwrap();
    std::fs::create_dir(dir.join("manifests/nested")).unwrap();

    let results = vec![
        opship_validate::validate_dir(&dir, &Options::all()),
        opship_validate::validate_dir(&tmp.path().join("nope"), &Options::default()),
    ];
    let report = results[0].as_ref().expect("the bundle loads");
    assert!(report.has_errors(), "{:?}", report.findings);
    assert!(results[1].is_err());

    let sarif = render(&results, Format::Sarif, &RenderOptions::default());
    let doc = assert_valid_sarif(&sarif);
    assert_eq!(
        doc["runs"][0]["results"].as_array().unwrap().len(),
        report.findings.len()
    );
    let json: Value =
        serde_json::from_str(&render(&results, Format::Json, &RenderOptions::default())).unwrap();
    assert_eq!(json["summary"]["failed"], 1);
    let human = render(&results, Format::Human, &RenderOptions::default());
    assert!(human.contains("error[BF004]"), "{human}");
    let gh = render(&results, Format::Github, &RenderOptions::default());
    assert!(
        gh.lines()
            .all(|l| l.starts_with("::error ") || l.starts_with("::warning "))
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

#[test]
fn github() {
    let text = rendered(&sample(), Format::Github, false);
    insta::assert_snapshot!("github", text);
}

#[test]
fn github_escapes() {
    let text = render(&sample(), Format::Github, &RenderOptions::default());
    let hostile = text
        .lines()
        .find(|l| l.contains("BF008"))
        .expect("the BF008 annotation");
    assert_eq!(
        hostile,
        "::warning file=odd dir/v1%3A2%2C3/manifests/ü #1.yaml,line=7,col=1,title=BF008::\
         100%25 broken%0D%0Asecond line \\u{1b}[31mred\\u{1b}[0m, with: colons (weird,name: x)"
    );
    // One command per line: nothing in a message can start a new one.
    assert_eq!(text.lines().count(), 7);
    assert!(text.lines().all(|l| l.starts_with("::")));
    assert!(text.contains(
        "::error file=bundles/memcached/0.0.1/metadata/annotations.yaml,line=4,col=54,title=BF005::"
    ));
    // No location: the bundle goes into the message.
    assert!(text.contains(
        "::error title=BF011::bundles/memcached/0.0.1: no ClusterServiceVersion in manifests/\n"
    ));
}

#[test]
fn empty_results_in_every_format() {
    assert_eq!(rendered(&[], Format::Github, false), "");
    let json: Value = serde_json::from_str(&rendered(&[], Format::Json, false)).unwrap();
    assert_eq!(json["bundles"], serde_json::json!([]));
    assert_eq!(json["failures"], serde_json::json!([]));
    let sarif = assert_valid_sarif(&rendered(&[], Format::Sarif, false));
    assert_eq!(sarif["runs"][0]["results"], serde_json::json!([]));
    assert_eq!(
        sarif["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );
}

#[test]
fn deterministic() {
    for format in [Format::Human, Format::Json, Format::Sarif, Format::Github] {
        assert_eq!(
            render(&sample(), format, &RenderOptions { color: true }),
            render(&sample(), format, &RenderOptions { color: true }),
        );
    }
}

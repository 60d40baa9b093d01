//! The upgrade rules (`UPG…`): each prohibited and each allowed change of OLM v1's "CRD upgrade
//! safety" documentation and crdify's validations, on CRDs written here; and the verdicts and
//! violations of OLM v1's own preflight on every consecutive pair of corpus releases
//! (`expected/crd-upgrade.jsonl`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use opship_validate::upgrade::{self, Check, Scope, Violation};
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Corpus agreement

/// (CRD, scope, version, path, check): what the comparison with the reference looks at.
type Key = (String, String, String, String, String);

/// Pairs whose violation lists differ from the reference's, and why (docs/upgrade.md,
/// "Differences from the reference").
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[];

fn reference_keys(line: &Value) -> BTreeSet<Key> {
    let mut out = BTreeSet::new();
    for crd in line["crds"].as_array().into_iter().flatten() {
        let name = crd["name"].as_str().unwrap_or_default();
        for v in crd["violations"].as_array().into_iter().flatten() {
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            let (mut version, mut path) = (s("version"), s("property"));
            if s("check") == "existingFieldRemoval" {
                // crdify names the field in the message only: `removed field : v1.^.spec.x`.
                let what = s("message");
                let what = what.trim_start_matches("removed field : ");
                let (v, p) = what.split_once('.').expect("version.path");
                (version, path) = (v.to_owned(), p.to_owned());
            }
            out.insert((name.to_owned(), s("scope"), version, path, s("check")));
        }
    }
    out
}

fn opship_keys(violations: &[Violation]) -> BTreeSet<Key> {
    violations
        .iter()
        .filter(|v| v.check.is_olm_v1())
        .map(|v| {
            (
                v.crd.clone(),
                v.scope.name().to_owned(),
                v.version.clone(),
                v.path.clone(),
                v.check.name().to_owned(),
            )
        })
        .collect()
}

#[test]
fn corpus_pairs_agree_with_olm_v1_preflight() {
    let corpus = crate::corpus_dir();
    let text = std::fs::read_to_string(corpus.join("expected/crd-upgrade.jsonl"))
        .expect("expected/crd-upgrade.jsonl is readable");
    let bundles = corpus.join("bundles");
    let (mut compared, mut agree, mut no_reference) = (0, 0, 0);
    let mut problems = Vec::new();
    let mut differing = BTreeSet::new();
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        let (old, new) = (line["old"].as_str().unwrap(), line["new"].as_str().unwrap());
        let o = opship_validate::load::load_dir(&bundles.join(old)).unwrap();
        let n = opship_validate::load::load_dir(&bundles.join(new)).unwrap();
        let violations = upgrade::compare(&o, &n);
        let unsafe_ = upgrade::olm_v1_refuses(&violations);
        // The findings are made for every pair: nothing panics on the way to a report.
        let _ = upgrade::findings(&o, &n, &violations);
        let verdict = line["verdict"].as_str().unwrap();
        if verdict == "error" {
            // The upstream code panicked on one of these CRDs: opship gives a verdict anyway.
            no_reference += 1;
            continue;
        }
        compared += 1;
        let want = reference_keys(&line);
        let have = opship_keys(&violations);
        let verdict_ok = (verdict == "unsafe") == unsafe_;
        let known = KNOWN_DIFFERENCES
            .iter()
            .any(|(a, b, _)| *a == old && *b == new);
        if verdict_ok && want == have {
            agree += 1;
            if known {
                problems.push(format!("{old} -> {new}: listed as different, but agrees"));
            }
            continue;
        }
        differing.insert((old.to_owned(), new.to_owned()));
        if known {
            continue;
        }
        let missing: Vec<_> = want.difference(&have).take(5).collect();
        let extra: Vec<_> = have.difference(&want).take(5).collect();
        problems.push(format!(
            "{old} -> {new}: reference {verdict}, opship {}; missing {} {missing:?}; extra {} {extra:?}",
            if unsafe_ { "unsafe" } else { "safe" },
            want.difference(&have).count(),
            have.difference(&want).count(),
        ));
    }
    eprintln!(
        "crd-upgrade: {agree} of {compared} pairs agree with OLM v1's preflight (verdict and \
         violations); {} differ as documented; {no_reference} pairs without a reference verdict \
         checked without a crash",
        differing.len()
    );
    assert_eq!(compared, 176, "pairs with a reference verdict");
    assert_eq!(no_reference, 12, "pairs where the reference panicked");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// One case per rule, from OLM v1's documented examples and crdify's validations

/// The starting CRD of OLM v1's "CRD upgrade safety" examples (one version, `v1alpha1`).
fn base_crd() -> Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "samples.test.example.com"},
        "spec": {
            "group": "test.example.com",
            "names": {"kind": "Sample", "listKind": "SampleList", "plural": "samples", "singular": "sample"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": {"type": "object", "properties": {
                            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                            "mode": {"type": "string", "enum": ["fast", "safe"]},
                            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "name": {"type": "string", "minLength": 1},
                            "level": {"type": "string", "default": "info"}
                        }},
                        "status": {"type": "object"},
                        "pollInterval": {"type": "string"}
                    }
                }}
            }]
        }
    })
}

/// The schema of version `i`.
fn schema(crd: &mut Value, i: usize) -> &mut Value {
    &mut crd["spec"]["versions"][i]["schema"]["openAPIV3Schema"]
}

fn spec_prop<'a>(crd: &'a mut Value, name: &str) -> &'a mut Value {
    &mut schema(crd, 0)["properties"]["spec"]["properties"][name]
}

/// Writes a bundle with a CRD (pretty JSON, which is YAML with one key per line) and a CSV.
fn write_bundle(dir: &Path, name: &str, crds: &[Value], csv: Option<Value>) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("manifests")).unwrap();
    std::fs::create_dir_all(root.join("metadata")).unwrap();
    for (i, crd) in crds.iter().enumerate() {
        std::fs::write(
            root.join(format!("manifests/crd-{i}.yaml")),
            serde_json::to_string_pretty(crd).unwrap(),
        )
        .unwrap();
    }
    if let Some(csv) = csv {
        std::fs::write(
            root.join("manifests/csv.yaml"),
            serde_json::to_string_pretty(&csv).unwrap(),
        )
        .unwrap();
    }
    std::fs::write(
        root.join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  \
         operators.operatorframework.io.bundle.manifests.v1: manifests/\n  \
         operators.operatorframework.io.bundle.metadata.v1: metadata/\n  \
         operators.operatorframework.io.bundle.package.v1: sample\n  \
         operators.operatorframework.io.bundle.channels.v1: stable\n",
    )
    .unwrap();
    root
}

fn csv(version: &str, owned_version: &str, examples: Option<Value>) -> Value {
    let mut csv = serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": format!("sample.v{version}"), "annotations": {}},
        "spec": {
            "version": version,
            "customresourcedefinitions": {"owned": [{
                "name": "samples.test.example.com",
                "version": owned_version,
                "kind": "Sample"
            }]}
        }
    });
    if let Some(ex) = examples {
        csv["metadata"]["annotations"]["alm-examples"] = Value::String(ex.to_string());
    }
    csv
}

/// The upgrade from a bundle with `old` to one with `new` (CRDs only).
fn run(old: Value, new: Value) -> (Vec<Violation>, Vec<String>) {
    run_bundles(&[old], None, &[new], None)
}

fn run_bundles(
    old: &[Value],
    old_csv: Option<Value>,
    new: &[Value],
    new_csv: Option<Value>,
) -> (Vec<Violation>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let o = write_bundle(dir.path(), "sample-0.1.0", old, old_csv);
    let n = write_bundle(dir.path(), "sample-0.2.0", new, new_csv);
    let ob = opship_validate::load::load_dir(&o).unwrap();
    let nb = opship_validate::load::load_dir(&n).unwrap();
    let v = upgrade::compare(&ob, &nb);
    let findings = upgrade::findings(&ob, &nb, &v);
    let text = findings
        .iter()
        .map(|f| {
            let at = f
                .location
                .as_ref()
                .map(|o| {
                    format!(
                        "{}:{}",
                        o.file.strip_prefix(dir.path()).unwrap_or(&o.file).display(),
                        o.pos.line
                    )
                })
                .unwrap_or_default();
            format!("{} {} {} {}", f.rule.id, at, f.object, f.message)
        })
        .collect();
    (v, text)
}

/// Asserts exactly one finding of `rule`, whose text holds every part of `want`.
fn assert_one(findings: &[String], rule: &str, want: &[&str]) {
    let hits: Vec<&String> = findings
        .iter()
        .filter(|f| f.starts_with(&format!("{rule} ")))
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "one {rule} finding expected in {findings:#?}"
    );
    for w in want {
        assert!(hits[0].contains(w), "{:?} lacks {w:?}", hits[0]);
    }
}

fn assert_safe(old: Value, new: Value) {
    let (v, text) = run(old, new);
    assert!(v.is_empty(), "expected a safe upgrade, got {text:#?}");
}

#[test]
fn unchanged_crd_is_safe() {
    assert_safe(base_crd(), base_crd());
}

#[test]
fn scope_change_is_refused() {
    let mut new = base_crd();
    new["spec"]["scope"] = "Cluster".into();
    let (v, text) = run(base_crd(), new);
    assert_eq!(v.len(), 1);
    assert_one(
        &text,
        "UPG001",
        &[
            "sample-0.2.0/manifests/crd-0.yaml:",
            "samples.test.example.com",
            "upgrade from sample-0.1.0",
            r#"scope changed : "Namespaced" -> "Cluster""#,
        ],
    );
}

#[test]
fn removing_a_stored_version_is_refused_and_adding_one_is_not() {
    // The documented example: v1alpha1 renamed to v1alpha2.
    let mut new = base_crd();
    new["spec"]["versions"][0]["name"] = "v1alpha2".into();
    let (_, text) = run(base_crd(), new);
    assert_one(&text, "UPG002", &["stored versions removed : [v1alpha1]"]);
    // A stored version kept but no longer served: still there, so not refused.
    let mut new = base_crd();
    let mut v1 = new["spec"]["versions"][0].clone();
    v1["name"] = "v1".into();
    new["spec"]["versions"][0]["storage"] = false.into();
    new["spec"]["versions"][0]["served"] = false.into();
    new["spec"]["versions"].as_array_mut().unwrap().push(v1);
    let (v, text) = run(base_crd(), new.clone());
    assert!(!text.iter().any(|t| t.starts_with("UPG002")), "{text:#?}");
    // ... but clients of the version the old CSV owns lose it (opship's UPG013).
    assert!(v.iter().all(|v| !v.check.is_olm_v1()), "{text:#?}");
    // A new version with no change to the existing one (allowed by OLM v1's documentation).
    let mut added = base_crd();
    let mut v1 = added["spec"]["versions"][0].clone();
    v1["name"] = "v1".into();
    v1["storage"] = false.into();
    added["spec"]["versions"].as_array_mut().unwrap().push(v1);
    assert_safe(base_crd(), added);
}

#[test]
fn removing_an_existing_field_is_refused() {
    let mut new = base_crd();
    schema(&mut new, 0)["properties"]
        .as_object_mut()
        .unwrap()
        .remove("pollInterval");
    let (v, text) = run(base_crd(), new);
    assert_one(
        &text,
        "UPG003",
        &["version v1alpha1: ^.pollInterval: removed field : v1alpha1.^.pollInterval"],
    );
    // crdify compares the removed field with an empty schema: its type goes too.
    assert_one(
        &text,
        "UPG004",
        &[r#"^.pollInterval: type changed : "string" -> """#],
    );
    assert!(v.iter().all(|v| v.path == "^.pollInterval"));
    // A nested field: every location under it is reported.
    let mut new = base_crd();
    spec_prop(&mut new, "tags")["items"] = Value::Null;
    schema(&mut new, 0)["properties"]["spec"]["properties"]["tags"]
        .as_object_mut()
        .unwrap()
        .remove("items");
    let (_, text) = run(base_crd(), new);
    assert_one(&text, "UPG003", &["^.spec.tags.items"]);
}

#[test]
fn a_new_required_field_is_refused_and_optional_is_not() {
    let mut new = base_crd();
    schema(&mut new, 0)["required"] = serde_json::json!(["pollInterval"]);
    let (v, text) = run(base_crd(), new.clone());
    assert_eq!(v.len(), 1, "{text:#?}");
    assert_one(
        &text,
        "UPG005",
        &["version v1alpha1: ^: new required fields: [pollInterval]"],
    );
    assert_eq!(v[0].path, "^");
    // Required made optional again: allowed.
    assert_safe(new, base_crd());
    // A new optional field: allowed.
    let mut added = base_crd();
    *spec_prop(&mut added, "paused") = serde_json::json!({"type": "boolean"});
    assert_safe(base_crd(), added);
}

#[test]
fn a_type_change_is_refused() {
    for (from, to) in [("string", "integer"), ("string", "object")] {
        let mut old = base_crd();
        schema(&mut old, 0)["properties"]["pollInterval"]["type"] = from.into();
        let mut new = base_crd();
        schema(&mut new, 0)["properties"]["pollInterval"]["type"] = to.into();
        let (v, text) = run(old, new);
        assert_eq!(v.len(), 1, "{text:#?}");
        assert_one(
            &text,
            "UPG004",
            &[&format!(
                r#"^.pollInterval: type changed : "{from}" -> "{to}""#
            )],
        );
        assert_eq!(v[0].old.as_deref(), Some(format!("\"{from}\"").as_str()));
    }
}

#[test]
fn defaults_added_changed_or_removed_are_refused() {
    let mut added = base_crd();
    spec_prop(&mut added, "name")["default"] = "x".into();
    let (_, text) = run(base_crd(), added);
    assert_one(
        &text,
        "UPG007",
        &[r#"^.spec.name: default added when there was none previously : "x""#],
    );
    let mut changed = base_crd();
    spec_prop(&mut changed, "level")["default"] = "debug".into();
    let (_, text) = run(base_crd(), changed);
    assert_one(
        &text,
        "UPG007",
        &[r#"^.spec.level: default value changed : "info" -> "debug""#],
    );
    let mut removed = base_crd();
    spec_prop(&mut removed, "level")
        .as_object_mut()
        .unwrap()
        .remove("default");
    let (_, text) = run(base_crd(), removed);
    assert_one(&text, "UPG007", &[r#"default value removed : "info""#]);
}

#[test]
fn enums_restricted_are_refused_and_extended_are_not() {
    let mut added = base_crd();
    spec_prop(&mut added, "level")["enum"] = serde_json::json!(["info", "debug"]);
    let (_, text) = run(base_crd(), added);
    assert_one(
        &text,
        "UPG006",
        &[
            r#"^.spec.level: enum constraint added when there was none previously : ["debug" "info"]"#,
        ],
    );
    let mut removed = base_crd();
    spec_prop(&mut removed, "mode")["enum"] = serde_json::json!(["fast", "turbo"]);
    let (_, text) = run(base_crd(), removed);
    assert_one(
        &text,
        "UPG006",
        &[r#"^.spec.mode: allowed enum values removed : ["safe"]"#],
    );
    let mut extended = base_crd();
    spec_prop(&mut extended, "mode")["enum"] = serde_json::json!(["fast", "safe", "turbo"]);
    assert_safe(base_crd(), extended);
}

#[test]
fn bounds_tightened_are_refused_and_relaxed_are_not() {
    let cases: [(&str, &str, Value, &str); 6] = [
        (
            "replicas",
            "minimum",
            2.into(),
            "minimum increased : 1 -> 2",
        ),
        (
            "replicas",
            "maximum",
            5.into(),
            "maximum decreased : 10 -> 5",
        ),
        ("tags", "maxItems", 4.into(), "maximum decreased : 8 -> 4"),
        ("name", "minLength", 3.into(), "minimum increased : 1 -> 3"),
        (
            "name",
            "maxLength",
            63.into(),
            "maximum constraint added when there was none previously : 63",
        ),
        (
            "labels",
            "maxProperties",
            20.into(),
            "maximum constraint added when there was none previously : 20",
        ),
    ];
    for (field, key, value, message) in cases {
        let mut new = base_crd();
        spec_prop(&mut new, field)[key] = value;
        let (v, text) = run(base_crd(), new);
        assert_eq!(v.len(), 1, "{text:#?}");
        assert_eq!(v[0].check.name(), key);
        assert_one(&text, "UPG008", &[&format!("^.spec.{field}: {message}")]);
    }
    let mut added = base_crd();
    spec_prop(&mut added, "labels")["minProperties"] = 1.into();
    let (_, text) = run(base_crd(), added);
    assert_one(
        &text,
        "UPG008",
        &["minimum constraint added when there was none previously : 1"],
    );
    // Relaxed or removed bounds are allowed.
    let mut relaxed = base_crd();
    spec_prop(&mut relaxed, "replicas")["minimum"] = 0.into();
    spec_prop(&mut relaxed, "replicas")["maximum"] = 100.into();
    spec_prop(&mut relaxed, "tags")
        .as_object_mut()
        .unwrap()
        .remove("maxItems");
    spec_prop(&mut relaxed, "name")["minLength"] = 0.into();
    assert_safe(base_crd(), relaxed);
}

#[test]
fn patterns_and_nullable_switches_are_refused() {
    let mut pattern = base_crd();
    spec_prop(&mut pattern, "name")["pattern"] = "^[a-z]+$".into();
    let (_, text) = run(base_crd(), pattern.clone());
    assert_one(
        &text,
        "UPG009",
        &[r#"^.spec.name: pattern added : "" -> "^[a-z]+$""#],
    );
    let (_, text) = run(pattern, base_crd());
    assert_one(&text, "UPG009", &[r#"pattern removed : "^[a-z]+$" -> """#]);
    let mut nullable = base_crd();
    spec_prop(&mut nullable, "name")["nullable"] = true.into();
    let (_, text) = run(base_crd(), nullable.clone());
    assert_one(
        &text,
        "UPG010",
        &["^.spec.name: nullable added : false -> true"],
    );
    let (_, text) = run(nullable, base_crd());
    assert_one(&text, "UPG010", &["nullable removed : true -> false"]);
}

#[test]
fn changes_no_rule_covers_are_unhandled_but_descriptions_are_not() {
    let mut format = base_crd();
    schema(&mut format, 0)["properties"]["pollInterval"]["format"] = "duration".into();
    let (v, text) = run(base_crd(), format);
    assert_eq!(v.len(), 1, "{text:#?}");
    assert_one(
        &text,
        "UPG011",
        &[r#"^.pollInterval: unhandled changes found (format <absent> -> "duration")"#],
    );
    let mut open = base_crd();
    spec_prop(&mut open, "labels")["x-kubernetes-preserve-unknown-fields"] = true.into();
    let (_, text) = run(base_crd(), open);
    assert_one(&text, "UPG011", &["x-kubernetes-preserve-unknown-fields"]);
    let mut cel = base_crd();
    spec_prop(&mut cel, "replicas")["x-kubernetes-validations"] =
        serde_json::json!([{"rule": "self % 2 == 1"}]);
    let (_, text) = run(base_crd(), cel);
    assert_one(
        &text,
        "UPG011",
        &["^.spec.replicas", "x-kubernetes-validations"],
    );
    let mut described = base_crd();
    spec_prop(&mut described, "replicas")["description"] = "How many.".into();
    assert_safe(base_crd(), described);
}

/// Two served versions, `v1alpha1` and `v1`, whose `pollInterval` types are given.
fn two_versions(alpha: &str, ga: &str, webhook: bool) -> Value {
    let mut crd = base_crd();
    schema(&mut crd, 0)["properties"]["pollInterval"]["type"] = alpha.into();
    let mut v1 = crd["spec"]["versions"][0].clone();
    v1["name"] = "v1".into();
    v1["storage"] = false.into();
    v1["schema"]["openAPIV3Schema"]["properties"]["pollInterval"]["type"] = ga.into();
    crd["spec"]["versions"].as_array_mut().unwrap().push(v1);
    if webhook {
        crd["spec"]["conversion"] = serde_json::json!({"strategy": "Webhook"});
    }
    crd
}

#[test]
fn served_versions_without_a_webhook_must_be_compatible() {
    let (v, text) = run(base_crd(), two_versions("string", "integer", false));
    assert_eq!(v.len(), 1, "{text:#?}");
    assert_eq!(v[0].scope, Scope::ServedVersion);
    assert_eq!(v[0].version, "v1alpha1 -> v1");
    assert_one(
        &text,
        "UPG004",
        &[
            r#"served versions v1alpha1 -> v1 (no conversion webhook): ^.pollInterval: type changed : "string" -> "integer""#,
        ],
    );
    // A conversion webhook converts between them: not checked.
    assert_safe(base_crd(), two_versions("string", "integer", true));
    // The same difference in the cluster's CRD already: not new, not refused.
    assert_safe(
        two_versions("string", "integer", false),
        two_versions("string", "integer", false),
    );
}

#[test]
fn v1beta1_crds_are_read_as_the_api_server_stores_them() {
    // The old release ships a v1beta1 CRD with a top-level schema and `spec.version` only.
    let mut old = base_crd();
    let s = schema(&mut old, 0).clone();
    old["apiVersion"] = "apiextensions.k8s.io/v1beta1".into();
    old["spec"]["version"] = "v1alpha1".into();
    old["spec"]["validation"] = serde_json::json!({"openAPIV3Schema": s});
    old["spec"].as_object_mut().unwrap().remove("versions");
    assert_safe(old.clone(), base_crd());
    let mut new = base_crd();
    spec_prop(&mut new, "replicas")["type"] = "string".into();
    let (v, text) = run(old.clone(), new);
    assert_eq!(v.len(), 1, "{text:#?}");
    assert_eq!(
        (v[0].check, v[0].version.as_str()),
        (Check::Property(upgrade::schema::Check::Type), "v1alpha1")
    );
    // A v1beta1 CRD without any schema (where the reference's code panics) is compared as
    // the empty schema: a schema appearing is a type change of the root.
    old["spec"].as_object_mut().unwrap().remove("validation");
    let (v, _) = run(old, base_crd());
    assert!(v.iter().any(|v| v.path == "^" && v.check.name() == "type"));
}

#[test]
fn old_custom_resources_must_validate_against_the_new_schema() {
    let example = serde_json::json!([{
        "apiVersion": "test.example.com/v1alpha1",
        "kind": "Sample",
        "metadata": {"name": "demo"},
        "spec": {"replicas": 3, "mode": "safe"}
    }]);
    let old_csv = csv("0.1.0", "v1alpha1", Some(example.clone()));
    // The new schema makes `name` required and drops `safe`: the example breaks twice over,
    // the enum change also being an OLM v1 violation.
    let mut new = base_crd();
    schema(&mut new, 0)["properties"]["spec"]["required"] = serde_json::json!(["name"]);
    spec_prop(&mut new, "mode")["enum"] = serde_json::json!(["fast"]);
    let (v, text) = run_bundles(
        &[base_crd()],
        Some(old_csv.clone()),
        &[new],
        Some(csv("0.2.0", "v1alpha1", Some(example.clone()))),
    );
    let ex: Vec<&String> = text.iter().filter(|t| t.starts_with("UPG012")).collect();
    assert_eq!(ex.len(), 2, "{text:#?}");
    assert!(
        ex.iter()
            .any(|t| t.contains("alm-examples example 0, Sample demo") && t.contains("spec.name"))
    );
    assert!(
        v.iter()
            .any(|v| v.check == Check::Example && v.path == "spec.mode")
    );
    // A change the example does not touch: only the OLM v1 finding.
    let mut new = base_crd();
    spec_prop(&mut new, "level")["default"] = "warn".into();
    let (_, text) = run_bundles(
        &[base_crd()],
        Some(old_csv),
        &[new],
        Some(csv("0.2.0", "v1alpha1", Some(example))),
    );
    assert!(!text.iter().any(|t| t.starts_with("UPG012")), "{text:#?}");
}

#[test]
fn owned_versions_stay_served_and_owned_crds_stay() {
    let mut new = base_crd();
    let mut v1 = new["spec"]["versions"][0].clone();
    v1["name"] = "v1".into();
    new["spec"]["versions"][0]["storage"] = false.into();
    new["spec"]["versions"][0]["served"] = false.into();
    new["spec"]["versions"].as_array_mut().unwrap().push(v1);
    let (_, text) = run_bundles(
        &[base_crd()],
        Some(csv("0.1.0", "v1alpha1", None)),
        &[new.clone()],
        Some(csv("0.2.0", "v1", None)),
    );
    assert_one(
        &text,
        "UPG013",
        &["the old CSV owns version v1alpha1; the new CRD no longer serves it"],
    );
    // Owned v1 before and after: nothing to report.
    let (_, text) = run_bundles(
        &[new.clone()],
        Some(csv("0.1.0", "v1", None)),
        &[new],
        Some(csv("0.2.0", "v1", None)),
    );
    assert!(text.is_empty(), "{text:#?}");
    // The CRD dropped from the new bundle: reported at the new CSV's owned list.
    let mut other = base_crd();
    other["metadata"]["name"] = "others.test.example.com".into();
    let (_, text) = run_bundles(
        &[base_crd(), other.clone()],
        Some(csv("0.1.0", "v1alpha1", None)),
        &[other],
        Some(csv("0.2.0", "v1alpha1", None)),
    );
    assert_one(
        &text,
        "UPG014",
        &[
            "sample-0.2.0/manifests/csv.yaml:",
            "samples.test.example.com",
            "does not ship it",
        ],
    );
}

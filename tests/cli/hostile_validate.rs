//! `opship validate` on hostile bundles: CEL rules that used to overflow the stack, schemas and
//! examples nested as deep as the readers allow. Every run must end with exit 0 or 1 and
//! complete JSON (or SARIF) output naming each bundle, never a crash.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{opship, run, sample_copy};

const CRD: &str = "0.3.0/manifests/cache.example.com_memcacheds.yaml";
const CSV: &str = "0.3.0/manifests/memcached-operator.clusterserviceversion.yaml";
const RULE: &str = "rule: self.size <= 3 || (has(self.memoryLimitMB) && self.memoryLimitMB >= 128)";

/// Validates `dirs` with every suite; returns the exit code and the parsed JSON report.
fn validate(dirs: &[&Path], format: &str) -> (i32, Value) {
    let mut cmd = opship();
    cmd.args([
        "validate",
        "bundle",
        "--select-optional",
        "all",
        "--k8s-version",
        "1.32",
    ]);
    cmd.args(["-o", format]);
    cmd.args(dirs);
    let r = run(&mut cmd);
    assert!(
        r.code == 0 || r.code == 1,
        "exit {}:\n{}",
        r.code,
        &r.stderr[..r.stderr.floor_char_boundary(2000)]
    );
    let report: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| {
        panic!(
            "{format} output is not complete ({e}): {}",
            &r.stdout[..r.stdout.floor_char_boundary(500)]
        )
    });
    (r.code, report)
}

/// The findings of the report's bundle `i`.
fn findings(report: &Value, i: usize) -> &[Value] {
    report["bundles"][i]["findings"].as_array().unwrap()
}

/// A copy of the sample bundle 0.3.0 whose CEL rule is `rule`.
fn with_rule(rule: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = sample_copy();
    let crd = dir.join(CRD);
    let text = std::fs::read_to_string(&crd).unwrap();
    assert!(text.contains(RULE));
    let quoted = serde_json::to_string(rule).unwrap();
    std::fs::write(&crd, text.replace(RULE, &format!("rule: {quoted}"))).unwrap();
    (tmp, dir.join("0.3.0"))
}

/// The EX007 finding of a bundle whose only CEL rule is `rule`, from a run that also validates
/// the untouched sample bundle 0.2.0 (so the run is seen to go on after the hostile one).
fn cel_finding(rule: &str) -> String {
    let (_tmp, dir) = with_rule(rule);
    let good = dir.parent().unwrap().join("0.2.0");
    let (code, report) = validate(&[&dir, &good], "json");
    assert_eq!(code, 1);
    assert_eq!(report["bundles"].as_array().unwrap().len(), 2);
    assert!(findings(&report, 1).is_empty(), "{}", report["bundles"][1]);
    let ex007: Vec<&Value> = findings(&report, 0)
        .iter()
        .filter(|f| f["rule"] == "EX007")
        .collect();
    assert_eq!(ex007.len(), 1, "{}", report["bundles"][0]);
    assert_eq!(ex007[0]["level"], "error");
    let message = ex007[0]["message"].as_str().unwrap().to_owned();
    assert!(message.len() <= 1024, "{} bytes", message.len());
    message
}

#[test]
fn cel_rules_past_cel_go_s_limits_are_findings() {
    // 20,000 selections (40 KB): the stack overflow of the issue.
    let m = cel_finding(&format!("self{}", ".a".repeat(20_000)));
    assert!(
        m.contains("chains 20000 selections, indexes, calls and operators")
            && m.contains("more than 250"),
        "{m}"
    );
    // 25,000 `+` terms (100 KB): over the size limit.
    let m = cel_finding(&format!("self.a{}", " + self.a".repeat(25_000)));
    assert!(
        m.contains("it is 225006 characters long") && m.contains("more than 100000"),
        "{m}"
    );
    // Below the size limit, the sum still nests too deep for cel-go.
    let m = cel_finding(&format!("a{}", "+a".repeat(25_000)));
    assert!(m.contains("chains 25000"), "{m}");
    // Brackets.
    let m = cel_finding(&format!("{}a{}", "[".repeat(5_000), "]".repeat(5_000)));
    assert!(m.contains("nests 5001 levels deep"), "{m}");
}

#[test]
fn cel_syntax_error_past_column_65535_has_its_position() {
    let m = cel_finding(&format!("'{}' +", "x".repeat(70_000)));
    assert!(m.contains("does not parse: 1:70005: Syntax error"), "{m}");
}

#[test]
fn cel_rule_within_the_limits_still_parses() {
    let (_tmp, dir) = with_rule(&format!("self{} == 1", ".size".repeat(249)));
    let (code, report) = validate(&[&dir], "json");
    assert_eq!(code, 0, "{}", report["bundles"][0]);
}

#[test]
fn sarif_output_is_complete_after_a_hostile_rule() {
    let (_tmp, dir) = with_rule(&format!("self{}", ".a".repeat(20_000)));
    let (code, sarif) = validate(&[&dir], "sarif");
    assert_eq!(code, 1);
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(results.iter().any(|r| r["ruleId"] == "EX007"), "{sarif}");
}

/// A CRD whose `spec` schema nests `depth` levels of `wrap` (block YAML, as deep as the YAML
/// reader allows), with a CEL rule at the bottom.
fn deep_schema(wrap: &str, depth: usize) -> String {
    let mut out = String::from(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: memcacheds.cache.example.com
spec:
  group: cache.example.com
  names: {kind: Memcached, listKind: MemcachedList, plural: memcacheds, singular: memcached}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
",
    );
    let mut indent = 12;
    let mut line = |indent: usize, s: &str| {
        out.push_str(&" ".repeat(indent));
        out.push_str(s);
        out.push('\n');
    };
    for _ in 0..depth {
        match wrap {
            "items" => {
                line(indent, "type: array");
                line(indent, "items:");
                indent += 2;
            }
            "properties" => {
                line(indent, "type: object");
                line(indent, "properties:");
                line(indent + 2, "a:");
                indent += 4;
            }
            "additionalProperties" => {
                line(indent, "type: object");
                line(indent, "additionalProperties:");
                indent += 2;
            }
            "allOf" => {
                line(indent, "allOf:");
                line(indent, "- minimum: 1");
                indent += 2;
            }
            "not" => {
                line(indent, "not:");
                indent += 2;
            }
            _ => unreachable!(),
        }
    }
    line(indent, "type: string");
    line(indent, "x-kubernetes-validations:");
    line(indent, "- rule: self.size() > 0 &&");
    out
}

#[test]
fn deep_schemas_are_walked_or_refused_within_bounds() {
    // The YAML reader stops at 256 levels of nesting (a BF008 finding); every walk of
    // opship-validate over a schema is bounded below that or by its own cap.
    for (wrap, depth) in [
        ("items", 245),
        ("additionalProperties", 245),
        ("not", 245),
        ("properties", 122),
        ("allOf", 122),
        ("items", 1_000),
        ("properties", 1_000),
    ] {
        let (_tmp, dir) = sample_copy();
        std::fs::write(dir.join(CRD), deep_schema(wrap, depth)).unwrap();
        let (code, report) = validate(&[&dir.join("0.3.0")], "json");
        assert_eq!(code, 1, "{wrap} {depth}");
        let f = findings(&report, 0);
        let too_deep = f
            .iter()
            .any(|f| f["rule"] == "BF008" && f["message"] == "recursion limit exceeded");
        if depth < 250 {
            assert!(!too_deep, "{wrap} {depth}: {}", report["bundles"][0]);
            // The CEL rule at the bottom was reached (it is broken on purpose).
            assert!(
                f.iter().any(|f| f["rule"] == "EX007"),
                "{wrap} {depth}: {}",
                report["bundles"][0]
            );
        } else {
            assert!(too_deep, "{wrap} {depth}: {}", report["bundles"][0]);
        }
    }
}

#[test]
fn deeply_nested_alm_examples_are_a_finding() {
    let (_tmp, dir) = sample_copy();
    let csv = dir.join(CSV);
    let text = std::fs::read_to_string(&csv).unwrap();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let text = text.replacen(
        "    alm-examples: |-\n",
        &format!("    alm-examples: '{deep}'\n    x-was-examples: |-\n"),
        1,
    );
    std::fs::write(&csv, text).unwrap();
    let (code, report) = validate(&[&dir.join("0.3.0")], "json");
    assert_eq!(code, 1);
    assert!(
        findings(&report, 0).iter().any(|f| f["message"]
            .as_str()
            .unwrap()
            .contains("recursion limit exceeded")),
        "{}",
        report["bundles"][0]
    );
}

/// `validate operator` and `validate bundle --select-optional community` on an operator whose
/// `ci.yaml` and a bundle's `release-config.yaml` are symlinks to files outside it (a
/// password-like file, a token): no output format prints what they hold, each names the link.
#[cfg(unix)]
#[test]
fn community_files_symlinked_out_of_the_operator_are_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let passwd = tmp.path().join("passwd");
    std::fs::write(
        &passwd,
        "root:x:0:0:PASSWD-MARKER root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
    )
    .unwrap();
    let token = tmp.path().join("token");
    std::fs::write(&token, "ghp_TOKENMARKER0123456789abcdefghijklmnop\n").unwrap();
    let community = [
        crate::repo().join("../shared/community"),
        "/work/shared/community".into(),
    ]
    .into_iter()
    .find(|p: &PathBuf| p.is_dir())
    .expect("shared/community not found");
    let op = tmp.path().join("repo/operators/sosreport-operator");
    crate::copy_dir(&community.join("operators/sosreport-operator"), &op);
    let _ = std::fs::remove_file(op.join("ci.yaml"));
    std::os::unix::fs::symlink(&passwd, op.join("ci.yaml")).unwrap();
    let mut bundles: Vec<PathBuf> = std::fs::read_dir(&op)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("metadata").is_dir())
        .collect();
    bundles.sort();
    std::os::unix::fs::symlink(&token, bundles[0].join("release-config.yaml")).unwrap();
    for format in ["human", "json", "sarif", "github"] {
        let mut runs = Vec::new();
        let mut cmd = opship();
        cmd.args(["validate", "operator", "-o", format]).arg(&op);
        runs.push(run(&mut cmd));
        let mut cmd = opship();
        cmd.args([
            "validate",
            "bundle",
            "--select-optional",
            "community",
            "-o",
            format,
        ]);
        cmd.args(&bundles);
        runs.push(run(&mut cmd));
        for r in runs {
            assert_eq!(r.code, 1, "{format}: {}", r.stderr);
            for out in [&r.stdout, &r.stderr] {
                assert!(
                    !out.contains("MARKER") && !out.contains("root:x:0"),
                    "{format}: {out}"
                );
            }
            assert!(r.stdout.contains("leads out of"), "{format}: {}", r.stdout);
        }
    }
}

//! One failing catalog per rule of `opm validate` (the 21 cases the OLM reference ran against
//! opm, plus the newer rules), each checked for opm's wording, and the lints opm lacks.

use opship_catalog::load;
use opship_catalog::validate::{self, Report};

/// A small catalog: `olm.package demo` + the given extra documents (YAML).
fn catalog(extra: &str) -> Report {
    let text = format!("---\nschema: olm.package\nname: demo\ndefaultChannel: stable\n{extra}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("catalog.yaml"), text).unwrap();
    let cat = load::load_dir(dir.path()).unwrap();
    validate::validate(&cat)
}

fn bundle(name: &str, version: &str) -> String {
    format!(
        "---\nschema: olm.bundle\nname: {name}\npackage: demo\nimage: quay.io/example/demo-bundle:v{version}\nproperties:\n- type: olm.package\n  value: {{packageName: demo, version: \"{version}\"}}\n"
    )
}

fn channel(name: &str, entries: &str) -> String {
    format!("---\nschema: olm.channel\nname: {name}\npackage: demo\nentries:\n{entries}")
}

fn three_bundles() -> String {
    bundle("demo.v0.1.0", "0.1.0")
        + &bundle("demo.v0.1.1", "0.1.1")
        + &bundle("demo.v0.2.0", "0.2.0")
}

fn assert_error(r: &Report, id: &str, needle: &str) {
    let tree = r.error_tree();
    assert!(!r.passed(), "expected a failure with {needle}");
    assert!(tree.contains(needle), "missing {needle:?} in:\n{tree}");
    assert!(
        r.findings.iter().any(|f| f.id == id
            && f.message.contains(
                needle
                    .lines()
                    .last()
                    .unwrap()
                    .trim_start_matches(['└', '├', '─', ' ', '│'])
            )),
        "no {id} finding for {needle:?}: {:?}",
        r.findings
    );
}

#[test]
fn valid_linear_chain_with_skip_range_passes() {
    let r = catalog(
        &(three_bundles()
            + &channel(
                "stable",
                "- name: demo.v0.1.0\n- name: demo.v0.1.1\n  replaces: demo.v0.1.0\n- name: demo.v0.2.0\n  replaces: demo.v0.1.1\n  skipRange: '>=0.1.0 <0.2.0'\n",
            )),
    );
    assert!(r.passed(), "{}", r.error_tree());
}

#[test]
fn two_entries_replacing_the_same_bundle_are_two_heads() {
    let r = catalog(
        &(three_bundles()
            + &channel(
                "stable",
                "- name: demo.v0.1.0\n- name: demo.v0.1.1\n  replaces: demo.v0.1.0\n- name: demo.v0.2.0\n  replaces: demo.v0.1.0\n",
            )),
    );
    assert_eq!(
        r.error_tree(),
        "invalid index:\n└── invalid package \"demo\":\n    └── invalid channel \"stable\":\n        └── multiple channel heads found in graph: demo.v0.1.1, demo.v0.2.0"
    );
    assert_error(
        &r,
        "FBC003",
        "multiple channel heads found in graph: demo.v0.1.1, demo.v0.2.0",
    );
}

#[test]
fn replaces_cycle() {
    let r = catalog(
        &(three_bundles()
            + &bundle("demo.v0.3.0", "0.3.0")
            + &channel(
                "stable",
                "- name: demo.v0.3.0\n  replaces: demo.v0.2.0\n- name: demo.v0.1.0\n  replaces: demo.v0.2.0\n- name: demo.v0.1.1\n  replaces: demo.v0.1.0\n- name: demo.v0.2.0\n  replaces: demo.v0.1.1\n",
            )),
    );
    // The head (0.3.0) leads into the loop 0.2.0 -> 0.1.1 -> 0.1.0 -> 0.2.0.
    assert_error(
        &r,
        "FBC004",
        "detected cycle in replaces chain of upgrade graph: demo.v0.2.0 -> demo.v0.1.1 -> demo.v0.1.0 -> demo.v0.2.0",
    );
}

#[test]
fn undefined_default_channel() {
    let text = bundle("demo.v0.1.0", "0.1.0") + &channel("candidate", "- name: demo.v0.1.0\n");
    let r2 = {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("c.yaml"),
            format!("---\nschema: olm.package\nname: demo\ndefaultChannel: fast\n{text}"),
        )
        .unwrap();
        validate::validate(&load::load_dir(dir.path()).unwrap())
    };
    assert_error(
        &r2,
        "FBC007",
        "invalid channel \"fast\":\n        └── channel must contain at least one bundle",
    );
}

#[test]
fn skip_range_only_head_plus_unrelated_old_entry_is_two_heads() {
    let r = catalog(
        &(bundle("demo.v0.1.0", "0.1.0")
            + &bundle("demo.v0.2.0", "0.2.0")
            + &channel(
                "stable",
                "- name: demo.v0.1.0\n- name: demo.v0.2.0\n  skipRange: '<0.2.0'\n",
            )),
    );
    assert_error(
        &r,
        "FBC003",
        "multiple channel heads found in graph: demo.v0.1.0, demo.v0.2.0",
    );
}

#[test]
fn entry_without_bundle() {
    let r = catalog(
        &(bundle("demo.v0.1.0", "0.1.0")
            + &channel(
                "stable",
                "- name: demo.v0.1.0\n- name: demo.v0.3.0\n  replaces: demo.v0.1.0\n",
            )),
    );
    assert_error(
        &r,
        "FBC013",
        "no olm.bundle blobs found in package \"demo\" for olm.channel entries [demo.v0.3.0]",
    );
}

#[test]
fn tail_replacing_a_missing_bundle_and_skipping_a_missing_one_pass() {
    let r = catalog(
        &(bundle("demo.v0.2.0", "0.2.0")
            + &channel(
                "stable",
                "- name: demo.v0.2.0\n  replaces: demo.v0.1.0\n  skips: [demo.v0.0.1]\n",
            )),
    );
    assert!(r.passed(), "{}", r.error_tree());
}

#[test]
fn invalid_skip_range_fails() {
    let r = catalog(
        &(bundle("demo.v0.1.0", "0.1.0")
            + &channel("stable", "- name: demo.v0.1.0\n  skipRange: '0.1.x <<'\n")),
    );
    assert_error(
        &r,
        "FBC012",
        "invalid skipRange \"0.1.x <<\" in channel \"stable\"",
    );
}

#[test]
fn duplicate_versions_fail() {
    let r = catalog(
        &(bundle("demo.v0.1.0", "0.1.0")
            + &bundle("demo.v0.1.0-rebuild", "0.1.0")
            + &channel(
                "stable",
                "- name: demo.v0.1.0\n- name: demo.v0.1.0-rebuild\n  replaces: demo.v0.1.0\n",
            )),
    );
    assert_error(
        &r,
        "FBC009",
        "duplicate versions found in bundles: [{0.1.0: [demo.v0.1.0, demo.v0.1.0-rebuild]}]",
    );
}

#[test]
fn package_name_must_be_a_dns_label() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.yaml"),
        "---\nschema: olm.package\nname: Demo_Op\ndefaultChannel: stable\n---\nschema: olm.channel\nname: stable\npackage: Demo_Op\nentries:\n- name: x.v0.1.0\n---\nschema: olm.bundle\nname: x.v0.1.0\npackage: Demo_Op\nimage: quay.io/x/y:v1\nproperties:\n- type: olm.package\n  value: {packageName: Demo_Op, version: 0.1.0}\n",
    )
    .unwrap();
    let r = validate::validate(&load::load_dir(dir.path()).unwrap());
    assert_error(
        &r,
        "FBC001",
        "invalid package name \"Demo_Op\": [a lowercase RFC 1123 label must consist of lower case alphanumeric characters",
    );
}

#[test]
fn two_package_properties() {
    let b = bundle("demo.v0.1.0", "0.1.0")
        + "- type: olm.package\n  value: {packageName: demo, version: \"0.1.1\"}\n";
    let r = catalog(&(b + &channel("stable", "- name: demo.v0.1.0\n")));
    assert_error(
        &r,
        "FBC008",
        "must have exactly 1 \"olm.package\" property, found 2",
    );
}

#[test]
fn version_without_patch() {
    let r = catalog(&(bundle("demo.v1", "1.0") + &channel("stable", "- name: demo.v1\n")));
    assert_error(
        &r,
        "FBC009",
        "error parsing bundle \"demo.v1\" version \"1.0\": No Major.Minor.Patch elements found",
    );
}

#[test]
fn bundle_in_no_channel() {
    let r = catalog(
        &(bundle("demo.v0.1.0", "0.1.0")
            + &bundle("demo.v0.1.1", "0.1.1")
            + &channel("stable", "- name: demo.v0.1.0\n")),
    );
    assert_error(
        &r,
        "FBC013",
        "package \"demo\", bundle \"demo.v0.1.1\" not found in any channel entries",
    );
}

#[test]
fn duplicate_channel_entry() {
    let r = catalog(
        &(bundle("demo.v0.1.0", "0.1.0")
            + &channel("stable", "- name: demo.v0.1.0\n- name: demo.v0.1.0\n")),
    );
    assert_error(
        &r,
        "FBC002",
        "channel \"stable\": duplicate entry \"demo.v0.1.0\"",
    );
}

#[test]
fn uppercase_image_is_not_a_pull_spec() {
    let b = bundle("demo.v0.1.0", "0.1.0")
        .replace("quay.io/example/demo-bundle:v0.1.0", "Quay.io/UPPER/x:v1");
    let r = catalog(&(b + &channel("stable", "- name: demo.v0.1.0\n")));
    assert_error(
        &r,
        "FBC010",
        "image: invalid image pull spec \"Quay.io/UPPER/x:v1\": invalid reference format: repository name (UPPER/x) must be lowercase",
    );
}

#[test]
fn deprecations_are_validated() {
    let base = bundle("demo.v0.1.0", "0.1.0") + &channel("stable", "- name: demo.v0.1.0\n");
    let ok = catalog(
        &(base.clone()
            + "---\nschema: olm.deprecations\npackage: demo\nentries:\n- reference: {schema: olm.bundle, name: demo.v0.1.0}\n  message: use 0.2\n- reference: {schema: olm.channel, name: stable}\n  message: gone\n- reference: {schema: olm.package}\n  message: whole package\n"),
    );
    assert!(ok.passed(), "{}", ok.error_tree());
    let r = catalog(
        &(base.clone()
            + "---\nschema: olm.deprecations\npackage: demo\nentries:\n- reference: {schema: olm.bundle, name: demo.v9.9.9}\n  message: x\n- reference: {schema: olm.channel, name: nope}\n  message: x\n- reference: {schema: olm.package, name: demo}\n  message: x\n- reference: {schema: olm.weird, name: q}\n  message: x\n- reference: {name: q}\n  message: x\n- reference: {schema: olm.channel, name: stable}\n"),
    );
    for needle in [
        "cannot deprecate bundle \"demo.v9.9.9\": bundle not found",
        "cannot deprecate channel \"nope\": channel not found",
        "package name must be empty for deprecated package (specified \"demo\")",
        "cannot deprecate object declcfg.PackageScopedReference{Schema:\"olm.weird\", Name:\"q\"} referenced by entry 3: object schema unknown",
        "schema must be set for deprecation entry [4]",
        "deprecation entry [5] must have a message",
    ] {
        assert_error(&r, "FBC014", needle);
    }
    let two = catalog(
        &(base.clone()
            + "---\nschema: olm.deprecations\npackage: demo\nentries: []\n---\nschema: olm.deprecations\npackage: demo\nentries: []\n---\nschema: olm.deprecations\npackage: other\nentries: []\n"),
    );
    assert_error(
        &two,
        "FBC014",
        "expected a maximum of one deprecation per package: \"demo\"",
    );
    assert_error(
        &two,
        "FBC014",
        "cannot apply deprecations to an unknown package \"other\"",
    );
}

#[test]
fn empty_channel() {
    let r = catalog(
        &(bundle("demo.v0.1.0", "0.1.0")
            + &channel("stable", "- name: demo.v0.1.0\n")
            + "---\nschema: olm.channel\nname: empty\npackage: demo\nentries: []\n"),
    );
    assert_error(
        &r,
        "FBC006",
        "invalid channel \"empty\":\n        └── channel must contain at least one bundle",
    );
}

#[test]
fn unknown_schema_passes_and_missing_schema_is_a_load_error() {
    let r = catalog(
        &(bundle("demo.v0.1.0", "0.1.0")
            + &channel("stable", "- name: demo.v0.1.0\n")
            + "---\nschema: com.example.custom\nfoo: bar\n"),
    );
    assert!(r.passed(), "{}", r.error_tree());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.yaml"), "---\nname: demo\n").unwrap();
    let err = load::load_dir(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("object '{\"name\":\"demo\"}' is missing root schema field")
            && err.contains("c.yaml:2"),
        "{err}"
    );
}

#[test]
fn stranded_bundle() {
    // H replaces v1 and skips v2; v2 replaces v0: v0 is only reachable through the skipped v2.
    let r = catalog(
        &(bundle("demo.v0", "0.0.1")
            + &bundle("demo.v1", "0.0.2")
            + &bundle("demo.v2", "0.0.3")
            + &bundle("demo.h", "0.1.0")
            + &channel(
                "stable",
                "- name: demo.v0\n- name: demo.v1\n- name: demo.v2\n  replaces: demo.v0\n- name: demo.h\n  replaces: demo.v1\n  skips: [demo.v2]\n",
            )),
    );
    assert_error(
        &r,
        "FBC005",
        "channel contains one or more stranded bundles: demo.v0",
    );
}

#[test]
fn all_errors_are_reported_at_once_in_one_tree() {
    let r = catalog(
        &(bundle("demo.v1", "1.0")
            + &bundle("demo.v0.2.0", "0.2.0")
                .replace("quay.io/example/demo-bundle:v0.2.0", "Bad Image")
            + &channel("stable", "- name: demo.v1\n- name: demo.v0.2.0\n")),
    );
    let tree = r.error_tree();
    assert!(
        tree.starts_with("invalid index:\n└── invalid package \"demo\":\n"),
        "{tree}"
    );
    for needle in [
        "multiple channel heads",
        "No Major.Minor.Patch",
        "invalid image pull spec \"Bad Image\"",
    ] {
        assert!(tree.contains(needle), "{needle} missing:\n{tree}");
    }
}

#[test]
fn lint_skip_range_above_own_version() {
    let r = catalog(
        &(bundle("demo.v0.1.0", "0.1.0")
            + &bundle("demo.v0.2.0", "0.2.0")
            + &channel(
                "stable",
                "- name: demo.v0.1.0\n- name: demo.v0.2.0\n  replaces: demo.v0.1.0\n  skipRange: '>=0.1.0 <0.3.0'\n",
            )),
    );
    assert!(r.passed());
    assert!(
        r.findings
            .iter()
            .any(|f| f.id == "FBL001" && f.message.contains("upper bound <0.3.0")),
        "{:?}",
        r.findings
    );
}

#[test]
fn lint_skipped_bundle_edges_ignored_by_olm_v0() {
    // 0.3.0 replaces 0.2.0 and skips 0.1.1; 0.1.1 is the only bundle that replaces 0.1.0.
    let r = catalog(
        &(three_bundles()
            + &bundle("demo.v0.3.0", "0.3.0")
            + &channel(
                "stable",
                "- name: demo.v0.1.0\n- name: demo.v0.1.1\n  replaces: demo.v0.1.0\n- name: demo.v0.2.0\n  replaces: demo.v0.1.1\n- name: demo.v0.3.0\n  replaces: demo.v0.2.0\n  skips: [demo.v0.1.1]\n",
            )),
    );
    assert!(
        r.findings.iter().any(|f| f.id == "FBL002"
            && f.message
                .contains("\"demo.v0.1.1\" replaces \"demo.v0.1.0\"")),
        "{:?}",
        r.findings
    );
}

#[test]
fn lint_olm_v1_dependencies() {
    let b = bundle("demo.v0.1.0", "0.1.0")
        + "- type: olm.gvk.required\n  value: {group: a.io, kind: A, version: v1}\n";
    let r = catalog(&(b + &channel("stable", "- name: demo.v0.1.0\n")));
    assert!(r.passed());
    assert!(
        r.findings.iter().any(|f| f.id == "FBL003"),
        "{:?}",
        r.findings
    );
}

#[test]
fn json_output_has_opms_shape() {
    let r = catalog(&(bundle("demo.v1", "1.0") + &channel("stable", "- name: demo.v1\n")));
    let v = r.to_json();
    assert_eq!(v["passed"], false);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid index:")
    );
    assert_eq!(v["findings"][0]["id"], "FBC009");
}

/// The structural rules opm checks while building its model, one fixture each.
#[test]
fn structural_rules_each_have_a_fixture() {
    let ok_bundle = bundle("demo.v0.1.0", "0.1.0") + &channel("stable", "- name: demo.v0.1.0\n");
    let cases: Vec<(String, &str, &str)> = vec![
        // Only the package: opm creates the default channel empty and reports that.
        (
            String::new(),
            "FBC007",
            "invalid channel \"stable\":\n        └── channel must contain at least one bundle",
        ),
        (
            ok_bundle.clone() + "---\nschema: olm.package\nname: demo\ndefaultChannel: stable\n",
            "FBC001",
            "duplicate package \"demo\"",
        ),
        (
            ok_bundle.clone() + "---\nschema: olm.package\ndefaultChannel: x\n",
            "FBC001",
            "config contains package with no name",
        ),
        (
            ok_bundle.clone()
                + "---\nschema: olm.channel\nname: beta\npackage: ghost\nentries: []\n",
            "FBC002",
            "unknown package \"ghost\" for channel \"beta\"",
        ),
        (
            ok_bundle.clone() + "---\nschema: olm.channel\npackage: demo\nentries: []\n",
            "FBC002",
            "package contains channel with no name",
        ),
        (
            ok_bundle.clone() + &channel("stable", "- name: demo.v0.1.0\n"),
            "FBC002",
            "duplicate channel \"stable\"",
        ),
        (
            ok_bundle.clone() + &bundle("demo.v0.1.0", "0.1.0"),
            "FBC008",
            "duplicate bundle",
        ),
        (
            ok_bundle.clone()
                + &bundle("ghost.v1.0.0", "1.0.0").replace("package: demo\n", "package: ghost\n"),
            "FBC008",
            "unknown package \"ghost\"",
        ),
        (
            bundle("demo.v0.1.0", "0.1.0").replace("{packageName: demo,", "{packageName: other,")
                + &channel("stable", "- name: demo.v0.1.0\n"),
            "FBC008",
            "package \"demo\" does not match \"olm.package\" property \"other\"",
        ),
        (
            bundle("demo.v0.1.0", "0.1.0")
                + &channel("stable", "- name: demo.v0.1.0\n  skips: ['']\n"),
            "FBC011",
            "skip[0] is empty in channel \"stable\"",
        ),
        (
            bundle("demo.v0.1.0", "0.1.0")
                .replace("image: quay.io/example/demo-bundle:v0.1.0\n", "")
                + &channel("stable", "- name: demo.v0.1.0\n"),
            "FBC015",
            "bundle image must be set",
        ),
        (
            bundle("demo.v0.1.0", "0.1.0")
                + "relatedImages:\n- {name: op, image: 'quay.io/x/op:v1 '}\n"
                + &channel("stable", "- name: demo.v0.1.0\n"),
            "FBC010",
            "relatedImages[0].image: invalid image pull spec \"quay.io/x/op:v1 \": invalid reference format",
        ),
        (
            bundle("demo.v0.1.0", "0.1.0")
                + &channel("stable", "- name: demo.v0.1.0\n  replaces: demo.v0.1.0\n"),
            "FBC003",
            "no channel head found in graph",
        ),
    ];
    for (extra, id, needle) in cases {
        let r = catalog(&extra);
        assert_error(&r, id, needle);
    }
}

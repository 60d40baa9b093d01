//! Bundle data never becomes Helm code: every string of a real bundle (but the names and
//! keywords Kubernetes and opship read as identifiers) gets Go-template syntax appended, the
//! chart is rendered, and the real Helm v4 engine must lint and render it into exactly the
//! bundle's objects, hostile strings included (the whole comparison of `compare`), with the
//! CSV's display name verbatim in NOTES.txt.

use std::path::Path;

use opship_chart::{CrdPlacement, Options};
use serde_json::{Value, json};

use crate::compare::check_bundle;
use crate::{corpus_dir, helm, render_to_temp, tracked};

/// Appended to every string: an action that reads values, one that calls a template that does
/// not exist (Helm fails on it), an unterminated comment, a stray close, trim markers and a
/// trailing brace that would join the template's next `{{`.
const HOSTILE: &str = r#" {{ .Values.pwned }}{{ include "x" . }} {{/* }} {{- x -}} {"#;

/// Keys whose string values are names, references or keywords that Kubernetes or opship
/// resolve (object and container names, kinds, CRD names, webhook wiring, schema types,
/// the pull policy the values schema enumerates): these stay as they are.
const KEPT: &[&str] = &[
    "name",
    "namespace",
    "kind",
    "apiVersion",
    "version",
    "serviceAccountName",
    "serviceAccount",
    "deploymentName",
    "generateName",
    "conversionCRDs",
    "type",
    "group",
    "plural",
    "singular",
    "listKind",
    "shortNames",
    "mountPath",
    "imagePullPolicy",
    "strategy",
];

/// Appends [`HOSTILE`] to every string of `v` not under a [`KEPT`] key; returns how many. An
/// image pinned by digest keeps its reference: the values schema checks the digest's syntax.
fn poison(v: &mut Value, key: &str) -> usize {
    match v {
        Value::String(s) if !KEPT.contains(&key) && !s.contains("@sha256:") => {
            s.push_str(HOSTILE);
            1
        }
        Value::Array(a) => a.iter_mut().map(|x| poison(x, key)).sum(),
        Value::Object(m) => m.iter_mut().map(|(k, x)| poison(x, k)).sum(),
        _ => 0,
    }
}

/// Brace sequences at the edges of values and next to each other, and the model's namespace
/// stand-in, as data of a ConfigMap.
fn braces_config_map() -> Value {
    let cases = [
        "{",
        "}",
        "{{",
        "}}",
        "a{",
        "}a",
        "{{{",
        "}}}",
        "{}{}",
        "{{/*",
        "*/}}",
        "{{- x -}}",
        "{\"a\": {\"b\": 1}}",
        "x {} y",
        // What the model writes where the release namespace goes: data, not a namespace.
        "__OPSHIP_RELEASE_NAMESPACE__",
        "a.__OPSHIP_RELEASE_NAMESPACE__",
    ];
    let data: serde_json::Map<String, Value> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("case{i}"), json!(c)))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "hostile-braces"},
        "data": data,
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// A copy of `bundle` with every manifest poisoned and the brace ConfigMap added; returns the
/// CSV's poisoned display name.
fn hostile_copy(bundle: &Path, to: &Path) -> String {
    copy_dir(bundle, to);
    let manifests = to.join("manifests");
    let mut poisoned = 0;
    let mut display_name = None;
    for e in std::fs::read_dir(&manifests).unwrap() {
        let path = e.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut out = String::new();
        for doc in opship_core::yaml::parse_stream(&text, &path).unwrap() {
            let mut v = doc.value;
            poisoned += poison(&mut v, "");
            if v["kind"] == "ClusterServiceVersion" {
                display_name = v["spec"]["displayName"].as_str().map(str::to_owned);
            }
            out.push_str("---\n");
            out.push_str(&opship_core::yaml::to_string(&v).unwrap());
        }
        std::fs::write(&path, out).unwrap();
    }
    std::fs::write(
        manifests.join("hostile-braces.configmap.yaml"),
        opship_core::yaml::to_string(&braces_config_map()).unwrap(),
    )
    .unwrap();
    assert!(
        poisoned > 50,
        "{}: only {poisoned} strings",
        bundle.display()
    );
    display_name.expect("the CSV has a displayName")
}

fn check_hostile(bundle: &Path, crds: CrdPlacement) {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("bundle");
    let display_name = hostile_copy(bundle, &copy);
    let opts = Options { name: None, crds };
    // Lint, render with the defaults = the (poisoned) bundle's objects, environments, schema.
    let summary = check_bundle(&copy, &opts);
    assert!(summary.objects > 0, "{summary:?}");

    let (_t, dir, chart) = render_to_temp(&copy, &opts, &crate::environments());
    let r = helm(&["render", dir.to_str().unwrap()]);
    assert!(r.get("error").is_none(), "{r}");
    let notes = r["manifests"][format!("{}/templates/NOTES.txt", chart.name)]
        .as_str()
        .unwrap_or_else(|| panic!("no NOTES.txt: {r}"));
    assert!(
        notes.starts_with(&format!("{display_name} {}", chart.version)),
        "NOTES.txt: {notes}"
    );
    let rendered = r["manifests"].to_string();
    assert!(
        rendered.matches(".Values.pwned").count() > 20,
        "the hostile strings reach the rendered objects"
    );
}

#[test]
fn hostile_strings_in_the_sample_render_verbatim() {
    let bundle = tracked("bundle/0.3.0");
    check_hostile(&bundle, CrdPlacement::Templates);
    check_hostile(&bundle, CrdPlacement::CrdsDir);
}

/// Webhook definitions (paths, rules, policies), several deployments and a conversion CRD.
#[test]
fn hostile_strings_in_webhook_bundles_render_verbatim() {
    let root = corpus_dir().join("bundles");
    check_hostile(
        // 0.154.0 and later ship a PodDisruptionBudget, which OLM v1 refuses.
        &root.join("opentelemetry-operator/0.33.0"),
        CrdPlacement::Templates,
    );
    check_hostile(
        &root.join("community-kubevirt-hyperconverged/1.15.0"),
        CrdPlacement::Templates,
    );
}

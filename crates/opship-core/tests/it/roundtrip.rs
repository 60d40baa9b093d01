//! Round trip on real bundles: every corpus CSV with an install strategy is taken apart into
//! what `kustomize build` of its project would give, regenerated, and compared with the
//! original. Deliberate differences are classified (docs/generate.md explains each); anything
//! else fails the test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use opship_core::bundle;
use opship_core::manifest::Object;
use opship_core::yaml;
use serde_json::{Value, json};

use crate::corpus_dir;
use crate::decompose::{
    Original, alm_examples, decompose, deployment_sas, extra_sas, inputs_for, rules_by_sa,
};

/// How a regenerated bundle compares with the original.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Same deployments, permissions, owned CRD keys, objects and alm-examples; `true` when
    /// the file names are the original's too (bundles made by operator-sdk).
    Match(bool),
    /// Differs only in deliberate, documented ways (the reasons).
    Explained(BTreeSet<&'static str>),
    /// Differs in a way nobody explained: a bug.
    Mismatch(String),
    /// The original could not be decomposed (no install strategy).
    Skipped(&'static str),
}

fn owned_keys(csv: &Value) -> BTreeSet<(String, String, String)> {
    csv["spec"]["customresourcedefinitions"]["owned"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["name"].as_str().unwrap_or_default().to_owned(),
                e["version"].as_str().unwrap_or_default().to_owned(),
                e["kind"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn without_namespace(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("namespace");
    }
    v
}

/// Regenerates one corpus bundle and compares.
pub fn check(dir: &Path) -> Outcome {
    let (o, inputs, opts) = match inputs_for(dir) {
        Ok(x) => x,
        Err(e) if e.contains("duplicate mapping key") => {
            return Outcome::Explained(BTreeSet::from(["duplicate-key"]));
        }
        Err(e) if e.starts_with("CSV ") => {
            return Outcome::Skipped("no install strategy or version");
        }
        Err(e) => return Outcome::Mismatch(format!("loading the original: {e}")),
    };
    match bundle::generate(inputs, &opts) {
        Ok(b) => compare(&o, &b),
        // The original binds a role it does not ship: opship refuses such input.
        Err(e) if e.to_string().contains("which is not among the manifests") => {
            Outcome::Explained(BTreeSet::from(["binding-to-missing-role"]))
        }
        Err(e) => Outcome::Mismatch(format!("generation failed: {e}")),
    }
}

/// The original CSV and objects, with each documented generation rule applied (implemented
/// here independently of opship), and the rules that changed something.
struct Expected {
    deployments: Value,
    permissions: BTreeMap<String, Vec<Value>>,
    cluster_permissions: BTreeMap<String, Vec<Value>>,
    owned: BTreeSet<(String, String, String)>,
    objects: BTreeMap<(String, String), Value>,
    examples: Option<Vec<Value>>,
    reasons: BTreeSet<&'static str>,
}

fn served_of(others: &[Object]) -> BTreeMap<(String, String), (String, String)> {
    // (apiVersion, kind) -> (crd name, version)
    let mut m = BTreeMap::new();
    for crd in others
        .iter()
        .filter(|x| x.kind() == "CustomResourceDefinition")
    {
        let v = crd.value();
        let g = v["spec"]["group"].as_str().unwrap_or_default();
        let k = v["spec"]["names"]["kind"].as_str().unwrap_or_default();
        let mut versions: Vec<String> = Vec::new();
        if let Some(list) = v["spec"]["versions"].as_array() {
            for ver in list {
                if ver["served"]
                    .as_bool()
                    .unwrap_or(crd.version() == "v1beta1")
                {
                    versions.push(ver["name"].as_str().unwrap_or_default().to_owned());
                }
            }
        } else if let Some(ver) = v["spec"]["version"].as_str() {
            versions.push(ver.to_owned());
        }
        for ver in versions {
            m.insert(
                (format!("{g}/{ver}"), k.to_owned()),
                (crd.name().to_owned(), ver),
            );
        }
    }
    m
}

fn expected(o: &Original) -> Expected {
    let orig = o.csv.value();
    let mut reasons = BTreeSet::new();

    // WATCH_NAMESPACE is rewritten to the OperatorGroup's target namespaces.
    let mut deployments = orig["spec"]["install"]["spec"]["deployments"].clone();
    for d in deployments.as_array_mut().into_iter().flatten() {
        for list in ["initContainers", "containers"] {
            let Some(cs) = d.pointer_mut(&format!("/spec/template/spec/{list}")) else {
                continue;
            };
            for c in cs.as_array_mut().into_iter().flatten() {
                let Some(envs) = c.get_mut("env").and_then(Value::as_array_mut) else {
                    continue;
                };
                for e in envs {
                    if e["name"] == "WATCH_NAMESPACE" {
                        let new = json!({"name": "WATCH_NAMESPACE", "valueFrom": {"fieldRef": {
                            "fieldPath": "metadata.annotations['olm.targetNamespaces']"}}});
                        if *e != new {
                            *e = new;
                            reasons.insert("watch-namespace");
                        }
                    }
                }
            }
        }
    }

    // owned: one entry per served version of every CRD in the bundle.
    let served = served_of(&o.others);
    let owned: BTreeSet<(String, String, String)> = served
        .iter()
        .map(|((_, kind), (name, ver))| (name.clone(), ver.clone(), kind.clone()))
        .collect();
    if owned != owned_keys(orig) {
        reasons.insert("owned-per-served-version");
    }

    let csv_sas: BTreeSet<String> = deployment_sas(orig)
        .into_iter()
        .chain(extra_sas(orig))
        .collect();
    let mut permissions = rules_by_sa(&orig["spec"]["install"]["spec"]["permissions"]);
    let mut cluster_permissions =
        rules_by_sa(&orig["spec"]["install"]["spec"]["clusterPermissions"]);
    let mut objects: BTreeMap<(String, String), Value> = BTreeMap::new();
    let mut examples = alm_examples(orig);
    let mut manifest_crs = Vec::new();
    let roles: BTreeMap<(String, String), &Object> = o
        .others
        .iter()
        .filter(|x| matches!(x.kind(), "Role" | "ClusterRole"))
        .map(|x| ((x.kind().to_owned(), x.name().to_owned()), x))
        .collect();
    let mut folded_roles: BTreeSet<(String, String)> = BTreeSet::new();
    let mut needed_roles: BTreeSet<(String, String)> = BTreeSet::new();
    // RoleBindings before ClusterRoleBindings, in file order: the generator's order.
    let bindings: Vec<&Object> = o
        .others
        .iter()
        .filter(|x| x.kind() == "RoleBinding")
        .chain(o.others.iter().filter(|x| x.kind() == "ClusterRoleBinding"))
        .collect();
    for b in &bindings {
        let rk = b.value()["roleRef"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let rn = b.value()["roleRef"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let key = (rk, rn);
        let Some(role) = roles.get(&key) else {
            continue;
        };
        let subjects = b.value()["subjects"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut all_csv = !subjects.is_empty();
        for s in &subjects {
            let name = s["name"].as_str().unwrap_or_default();
            if s["kind"] == "ServiceAccount" && csv_sas.contains(name) {
                let rules = role.value()["rules"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let dest = if b.kind() == "ClusterRoleBinding" {
                    &mut cluster_permissions
                } else {
                    &mut permissions
                };
                dest.entry(name.to_owned()).or_default().extend(rules);
                folded_roles.insert(key.clone());
                reasons.insert("folded-binding");
            } else {
                all_csv = false;
            }
        }
        if !all_csv {
            needed_roles.insert(key.clone());
        }
    }
    for x in &o.others {
        let key = (x.kind().to_owned(), x.name().to_owned());
        let gv = (x.api_version().to_owned(), x.kind().to_owned());
        if x.kind() == "ServiceAccount" && csv_sas.contains(x.name()) {
            reasons.insert("csv-sa-manifest");
            continue;
        }
        if served.contains_key(&gv) {
            reasons.insert("cr-as-example");
            manifest_crs.push(x.value().clone());
            continue;
        }
        if matches!(x.kind(), "Role" | "ClusterRole")
            && folded_roles.contains(&key)
            && !needed_roles.contains(&key)
        {
            continue;
        }
        if matches!(x.kind(), "RoleBinding" | "ClusterRoleBinding") {
            let subjects = x.value()["subjects"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let role_key = (
                x.value()["roleRef"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                x.value()["roleRef"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
            let all_csv = !subjects.is_empty()
                && subjects.iter().all(|s| {
                    s["kind"] == "ServiceAccount"
                        && csv_sas.contains(s["name"].as_str().unwrap_or_default())
                });
            if all_csv && roles.contains_key(&role_key) {
                continue;
            }
        }
        objects.insert(key, without_namespace(x.value()));
    }
    if !manifest_crs.is_empty() {
        // The generator's input order: the bundle's own objects came before the samples.
        let mut list = manifest_crs;
        if let Some(ex) = &examples {
            let decomposed = alm_examples_were_decomposed(o);
            if decomposed {
                for e in ex {
                    if !list.contains(e) {
                        list.push(e.clone());
                    }
                }
            }
        }
        examples = Some(list);
    }
    Expected {
        deployments,
        permissions,
        cluster_permissions,
        owned,
        objects,
        examples,
        reasons,
    }
}

/// Whether [`decompose`] turned alm-examples into sample objects for this bundle.
fn alm_examples_were_decomposed(o: &Original) -> bool {
    let (_, base) = decompose(o);
    base.value()["metadata"]["annotations"]["alm-examples"] == "[]"
}

fn multiset(rules: &BTreeMap<String, Vec<Value>>) -> BTreeMap<String, Vec<String>> {
    rules
        .iter()
        .map(|(k, v)| {
            let mut r: Vec<String> = v.iter().map(Value::to_string).collect();
            r.sort();
            (k.clone(), r)
        })
        .collect()
}

fn compare(o: &Original, g: &bundle::Bundle) -> Outcome {
    let e = expected(o);
    let mut problems: Vec<String> = Vec::new();

    // The generator orders deployments by name.
    let by_name = |v: &Value| {
        let mut list = v.as_array().cloned().unwrap_or_default();
        list.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        Value::Array(list)
    };
    let (ed, gd) = (
        by_name(&e.deployments),
        by_name(&g.csv["spec"]["install"]["spec"]["deployments"]),
    );
    if ed != gd {
        problems.push(format!(
            "deployments differ at {}",
            first_difference(&ed, &gd, String::new())
        ));
    }
    let gp = rules_by_sa(&g.csv["spec"]["install"]["spec"]["permissions"]);
    if multiset(&e.permissions) != multiset(&gp) {
        problems.push(format!(
            "permissions differ: {:?} vs {:?}",
            e.permissions.keys(),
            gp.keys()
        ));
    }
    let gc = rules_by_sa(&g.csv["spec"]["install"]["spec"]["clusterPermissions"]);
    if multiset(&e.cluster_permissions) != multiset(&gc) {
        problems.push(format!(
            "clusterPermissions differ: {:?} vs {:?}",
            e.cluster_permissions.keys(),
            gc.keys()
        ));
    }
    if e.owned != owned_keys(&g.csv) {
        problems.push(format!(
            "owned CRDs differ: {:?} vs {:?}",
            e.owned,
            owned_keys(&g.csv)
        ));
    }

    let mut written: BTreeMap<(String, String), Value> = BTreeMap::new();
    for (path, bytes) in &g.files {
        if !path.starts_with("manifests/") || path.ends_with(".clusterserviceversion.yaml") {
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        for d in yaml::parse_stream(&text, Path::new(path)).expect("generated YAML parses") {
            let k = (
                d.value["kind"].as_str().unwrap_or_default().to_owned(),
                d.value["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
            written.insert(k, d.value);
        }
    }
    if e.objects != written {
        let a: BTreeSet<_> = e.objects.keys().collect();
        let b: BTreeSet<_> = written.keys().collect();
        problems.push(format!(
            "objects differ: only original {:?}, only generated {:?}, changed {:?}",
            a.difference(&b).collect::<Vec<_>>(),
            b.difference(&a).collect::<Vec<_>>(),
            a.intersection(&b)
                .filter(|k| e.objects[**k] != written[**k])
                .collect::<Vec<_>>()
        ));
    }
    // The generator orders examples by apiVersion, kind and name, and sorts their keys.
    let canon = |v: Option<Vec<Value>>| {
        v.map(|mut l| {
            l.sort_by(|a, b| {
                let k = |x: &Value| {
                    (
                        x["apiVersion"].to_string(),
                        x["kind"].to_string(),
                        x["metadata"]["name"].to_string(),
                    )
                };
                k(a).cmp(&k(b))
            });
            l.iter()
                .map(|x| yaml::sorted(x).to_string())
                .collect::<Vec<_>>()
        })
    };
    if canon(e.examples.clone()) != canon(alm_examples(&g.csv)) {
        problems.push("alm-examples differ".into());
    }

    if !problems.is_empty() {
        Outcome::Mismatch(problems.join("; "))
    } else if e.reasons.is_empty() {
        // Bundles written by operator-sdk also have its file names; hand-made ones do not.
        let mut original_names: BTreeSet<String> = BTreeSet::new();
        for x in o.others.iter().chain(std::iter::once(&o.csv)) {
            if let Some(f) = x.doc.file.file_name() {
                original_names.insert(f.to_string_lossy().into_owned());
            }
        }
        let generated_names: BTreeSet<String> = g
            .files
            .keys()
            .filter_map(|k| k.strip_prefix("manifests/"))
            .map(str::to_owned)
            .collect();
        Outcome::Match(original_names == generated_names)
    } else {
        Outcome::Explained(e.reasons)
    }
}

/// JSON pointer of the first place where two values differ, with both sides.
fn first_difference(a: &Value, b: &Value, at: String) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if v == w => {}
                    Some(w) => return first_difference(v, w, format!("{at}/{k}")),
                    None => return format!("{at}/{k} (only in original)"),
                }
            }
            for k in y.keys() {
                if !x.contains_key(k) {
                    return format!("{at}/{k} (only in generated)");
                }
            }
            format!("{at} (key order)")
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                if v != w {
                    return first_difference(v, w, format!("{at}/{i}"));
                }
            }
            at
        }
        _ => format!("{at}: {a} vs {b}"),
    }
}

fn corpus_bundles() -> Vec<PathBuf> {
    let root = corpus_dir().join("bundles");
    let mut out = Vec::new();
    for op in std::fs::read_dir(&root).expect("corpus bundles") {
        let op = op.unwrap().path();
        for v in std::fs::read_dir(&op).unwrap() {
            out.push(v.unwrap().path());
        }
    }
    out.sort();
    out
}

#[test]
fn corpus_round_trip() {
    let bundles = corpus_bundles();
    assert_eq!(bundles.len(), 237, "the corpus has 237 bundles");
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut bad = Vec::new();
    use rayon::prelude::*;
    let outcomes: Vec<Outcome> = bundles.par_iter().map(|b| check(b)).collect();
    for (b, outcome) in bundles.iter().zip(outcomes) {
        let key = match &outcome {
            Outcome::Match(true) => "match".to_owned(),
            Outcome::Match(false) => {
                "match, file names differ (original not named by operator-sdk)".to_owned()
            }
            Outcome::Explained(r) => format!(
                "explained: {}",
                r.iter().copied().collect::<Vec<_>>().join(", ")
            ),
            Outcome::Skipped(r) => format!("skipped: {r}"),
            Outcome::Mismatch(m) => {
                bad.push(format!("{}: {m}", b.display()));
                "MISMATCH".to_owned()
            }
        };
        *tally.entry(key).or_default() += 1;
    }
    eprintln!("round trip of {} corpus bundles: {tally:#?}", bundles.len());
    assert!(
        bad.is_empty(),
        "{} unexplained mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
    // docs/generate.md reports these figures; a drop is a regression.
    let matches: usize = tally
        .iter()
        .filter(|(k, _)| k.starts_with("match"))
        .map(|(_, n)| n)
        .sum();
    assert!(matches >= 178, "{tally:#?}");
    assert!(
        tally.get("match").copied().unwrap_or(0) >= 120,
        "{tally:#?}"
    );
    assert!(
        !tally.keys().any(|k| k.starts_with("skipped")),
        "{tally:#?}"
    );
}

//! Upgrade safety (`UPG…`): the CRDs of a new bundle checked against those of a bundle users
//! already run, with the decisions of OLM v1's CRD upgrade-safety preflight (operator-controller
//! over crdify, in OLM's configuration), plus what OLM v0 or a cluster would only tell later:
//! custom resources of the old bundle that the new schema refuses, owned versions no longer
//! served, owned CRDs dropped.
//!
//! The old bundle's CRDs play the cluster's: a `v1beta1` CRD is read as the API server stores
//! it in `v1` (one schema per version, `spec.version` as the only version), and an empty
//! `status.storedVersions` is the storage version. Findings are data ([`Violation`]) first, then
//! [`Finding`]s at the `file:line` of the new CRD.

pub mod schema;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::LazyLock;

use opship_core::manifest::{Object, split_api_version};
use serde::Serialize;
use serde_json::Value;

use crate::crd_examples::{self, schema as example_schema};
use crate::load::Bundle;
use crate::rule::{Finding, Rule};
use crate::{BundleReport, Result, Source};

rule!(
    Upgrade,
    UPG001,
    Error,
    None,
    "A CRD keeps its scope (Namespaced or Cluster)",
    "OLM v1 refuses an upgrade that changes a CRD's `spec.scope`, and so does the API server: \
     existing custom resources cannot move between namespaced and cluster scope. Keep the \
     scope, or ship a new CRD (another group or kind) and migrate."
);
rule!(
    Upgrade,
    UPG002,
    Error,
    None,
    "Every version the cluster stores stays in the CRD",
    "A cluster keeps custom resources in the versions listed in the CRD's \
     `status.storedVersions` (the storage version of each release that was installed). OLM v1 \
     and OLM v0 refuse a CRD that drops one of them: the stored objects could no longer be \
     read. Keep the version (served: false is enough) until a storage migration has removed it \
     from storedVersions on every cluster."
);
rule!(
    Upgrade,
    UPG003,
    Error,
    None,
    "No field of an existing version is removed",
    "OLM v1 refuses an upgrade that removes a field from a version of a CRD that already \
     exists: values users stored in that field would be pruned. Keep the field (mark it \
     deprecated in its description), or add it to a new version only."
);
rule!(
    Upgrade,
    UPG004,
    Error,
    None,
    "No field of an existing version changes type",
    "OLM v1 refuses an upgrade that changes the `type` of a field of an existing version: \
     stored values of the old type no longer validate. A field that is removed counts as a \
     change to no type. Add a new field with the new type instead."
);
rule!(
    Upgrade,
    UPG005,
    Error,
    None,
    "No existing object gains a required field",
    "OLM v1 refuses an upgrade that adds names to a `required` list of an existing version: \
     custom resources created before lack the field and could no longer be updated. Make the \
     field optional with a default in the controller, or require it in a new version only."
);
rule!(
    Upgrade,
    UPG006,
    Error,
    None,
    "Enum values are not removed, and no enum is added to an open field",
    "OLM v1 refuses an upgrade that removes values from a field's `enum`, or adds an `enum` to \
     a field that accepted any value: stored values outside the list no longer validate. Adding \
     values to an existing enum is allowed."
);
rule!(
    Upgrade,
    UPG007,
    Error,
    None,
    "Defaults are not added, changed or removed",
    "OLM v1 refuses an upgrade that adds, changes or removes a field's `default`: objects \
     read after the upgrade would silently get another value than before. Keep the default; \
     change behaviour in the controller, or in a new version."
);
rule!(
    Upgrade,
    UPG008,
    Error,
    None,
    "Bounds are not tightened (minimum, maximum, lengths, item and property counts)",
    "OLM v1 refuses an upgrade that adds a `maximum`, `maxLength`, `maxItems` or \
     `maxProperties` (or lowers one), or adds a `minimum`, `minLength`, `minItems` or \
     `minProperties` (or raises one): stored values outside the new bounds no longer validate. \
     Relaxing or removing a bound is allowed."
);
rule!(
    Upgrade,
    UPG009,
    Error,
    None,
    "Patterns are not added, changed or removed",
    "OLM v1 refuses an upgrade that adds a `pattern` to a field or changes it (stored values \
     may not match), and, with crdify's default policy, also one that removes it."
);
rule!(
    Upgrade,
    UPG010,
    Error,
    None,
    "`nullable` is not switched",
    "OLM v1 refuses an upgrade that makes a field nullable or no longer nullable (crdify's \
     default policy): clients and stored objects disagree about null values."
);
rule!(
    Upgrade,
    UPG011,
    Error,
    None,
    "A field changes only in ways a rule has judged safe",
    "OLM v1 refuses, fail-closed, an upgrade that changes a field in a way none of its rules \
     covers (format, anyOf/oneOf/allOf, additionalProperties, x-kubernetes-* markers, CEL \
     rules, exclusive bounds, ...): it cannot tell whether stored objects still validate. \
     Revert the change, or make it in a new version."
);
rule!(
    Upgrade,
    UPG012,
    Error,
    None,
    "Custom resources of the old bundle validate against the new CRD",
    "The examples of the old CSV (`alm-examples`) and custom resources shipped in the old \
     bundle stand for the objects users created from them. OLM v0 refuses a CRD update that \
     existing custom resources do not validate against; OLM v1 does not look, and the objects \
     break on their next update. Only problems that the old CRD did not have are reported."
);
rule!(
    Upgrade,
    UPG013,
    Warning,
    None,
    "Versions the old CSV owns are still served",
    "The old CSV's `owned` CRDs name the versions clients of the operator use. A new CRD that \
     no longer serves one breaks those clients (kubectl, GitOps manifests, other operators) \
     even when no object is stored in it. Keep serving the version for a deprecation period."
);
rule!(
    Upgrade,
    UPG014,
    Warning,
    None,
    "CRDs the old CSV owns stay in the bundle",
    "OLM v1 checks only the CRDs of the new bundle, and neither OLM removes a CRD a new \
     release drops: its custom resources stay in the cluster with no controller. Keep the CRD, \
     or document the migration."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[
    &UPG001, &UPG002, &UPG003, &UPG004, &UPG005, &UPG006, &UPG007, &UPG008, &UPG009, &UPG010,
    &UPG011, &UPG012, &UPG013, &UPG014,
];

/// Which comparison found a violation, as crdify groups them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// The CRD as a whole (scope, stored versions, removed fields).
    Crd,
    /// One version of the old CRD against the same version of the new one.
    SameVersion,
    /// Two served versions of the new CRD (no conversion webhook converts between them).
    ServedVersion,
    /// Beyond OLM v1: the bundles around the CRDs (examples, owned versions, dropped CRDs).
    Bundle,
}

impl Scope {
    /// The name the reference uses.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Crd => "crd",
            Scope::SameVersion => "sameVersion",
            Scope::ServedVersion => "servedVersion",
            Scope::Bundle => "bundle",
        }
    }
}

/// What a violation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// `spec.scope` changed.
    Scope,
    /// A stored version is gone.
    StoredVersionRemoval,
    /// A field of an existing version is gone.
    ExistingFieldRemoval,
    /// A property comparison.
    Property(schema::Check),
    /// A custom resource of the old bundle fails the new schema.
    Example,
    /// A version the old CSV owns is not served.
    UnservedVersion,
    /// A CRD the old CSV owns is not in the new bundle.
    RemovedCrd,
}

impl Check {
    /// The name of the check: crdify's for OLM v1's checks.
    pub fn name(self) -> &'static str {
        match self {
            Check::Scope => "scope",
            Check::StoredVersionRemoval => "storedVersionRemoval",
            Check::ExistingFieldRemoval => "existingFieldRemoval",
            Check::Property(c) => c.name(),
            Check::Example => "example",
            Check::UnservedVersion => "unservedVersion",
            Check::RemovedCrd => "removedCrd",
        }
    }

    /// Whether OLM v1's preflight makes this check (the others are opship's additions).
    pub fn is_olm_v1(self) -> bool {
        !matches!(
            self,
            Check::Example | Check::UnservedVersion | Check::RemovedCrd
        )
    }

    /// The rule that reports it.
    pub fn rule(self) -> &'static Rule {
        use schema::Check as P;
        match self {
            Check::Scope => &UPG001,
            Check::StoredVersionRemoval => &UPG002,
            Check::ExistingFieldRemoval => &UPG003,
            Check::Property(P::Type) => &UPG004,
            Check::Property(P::Required) => &UPG005,
            Check::Property(P::Enum) => &UPG006,
            Check::Property(P::Default) => &UPG007,
            Check::Property(
                P::Maximum
                | P::Minimum
                | P::MaxLength
                | P::MinLength
                | P::MaxItems
                | P::MinItems
                | P::MaxProperties
                | P::MinProperties,
            ) => &UPG008,
            Check::Property(P::Pattern) => &UPG009,
            Check::Property(P::Nullable) => &UPG010,
            Check::Property(P::Unhandled) => &UPG011,
            Check::Example => &UPG012,
            Check::UnservedVersion => &UPG013,
            Check::RemovedCrd => &UPG014,
        }
    }
}

/// One incompatible change between an old and a new CRD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The CRD's `metadata.name`.
    pub crd: String,
    /// Which comparison.
    pub scope: Scope,
    /// The version (`v1`), the pair of served versions (`v1beta1 -> v1`), or empty for the
    /// CRD as a whole.
    pub version: String,
    /// crdify's path of the property (`^.spec.size`), empty when not about one.
    pub path: String,
    /// What changed.
    pub check: Check,
    /// The old value, when there is one to show.
    pub old: Option<String>,
    /// The new value.
    pub new: Option<String>,
    /// What changed, in one line.
    pub message: String,
    /// JSON pointer in the new CRD where the finding is shown.
    pub pointer: String,
}

/// A version of a CRD as the API server stores it.
struct Version<'a> {
    name: String,
    served: bool,
    flat: schema::Flat<'a>,
    /// Where the version's schema (or the version, without one) sits.
    pointer: String,
}

/// A CRD as the API server stores it (`apiextensions.k8s.io/v1`).
struct Crd<'a> {
    name: String,
    scope: String,
    versions: Vec<Version<'a>>,
    stored: Vec<String>,
    webhook: bool,
}

/// A version without a schema is compared as the empty schema (any object): crdify itself
/// cannot read one (the `v1beta1` CRDs without `validation`).
static EMPTY: LazyLock<Value> = LazyLock::new(|| Value::Object(serde_json::Map::new()));

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

impl<'a> Crd<'a> {
    fn read(obj: &'a Object) -> Crd<'a> {
        let spec = &obj.value()["spec"];
        let global = &spec["validation"]["openAPIV3Schema"];
        let mut versions = Vec::new();
        let mut storage = Vec::new();
        match spec["versions"].as_array().filter(|v| !v.is_empty()) {
            Some(list) => {
                for (i, v) in list.iter().enumerate() {
                    let own = &v["schema"]["openAPIV3Schema"];
                    let (s, pointer) = if own.is_object() {
                        (own, format!("/spec/versions/{i}/schema/openAPIV3Schema"))
                    } else if global.is_object() {
                        (global, "/spec/validation/openAPIV3Schema".to_owned())
                    } else {
                        (&*EMPTY, format!("/spec/versions/{i}"))
                    };
                    let name = str_of(&v["name"]).to_owned();
                    if v["storage"].as_bool() == Some(true) {
                        storage.push(name.clone());
                    }
                    versions.push(Version {
                        served: v["served"].as_bool() == Some(true),
                        flat: schema::flatten(s, &pointer),
                        pointer,
                        name,
                    });
                }
            }
            None => {
                // v1beta1 with `spec.version` only: one served, stored version.
                let name = str_of(&spec["version"]).to_owned();
                let (s, pointer) = if global.is_object() {
                    (global, "/spec/validation/openAPIV3Schema".to_owned())
                } else {
                    (&*EMPTY, "/spec/version".to_owned())
                };
                storage.push(name.clone());
                versions.push(Version {
                    served: true,
                    flat: schema::flatten(s, &pointer),
                    pointer,
                    name,
                });
            }
        }
        let mut stored: Vec<String> = obj.value()["status"]["storedVersions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        if stored.is_empty() {
            stored = storage;
        }
        Crd {
            name: obj.name().to_owned(),
            scope: str_of(&spec["scope"]).to_owned(),
            versions,
            stored,
            webhook: str_of(&spec["conversion"]["strategy"]) == "Webhook",
        }
    }

    fn version(&self, name: &str) -> Option<&Version<'a>> {
        self.versions.iter().find(|v| v.name == name)
    }
}

/// The pointer of the node at `path`, or of its nearest ancestor that exists in `flat`.
fn nearest(flat: &schema::Flat<'_>, path: &str, fallback: &str) -> String {
    let mut p = path;
    loop {
        if let Some(n) = flat.get(p) {
            return n.pointer.clone();
        }
        match p.rfind(['.', '[']) {
            Some(i) if i > 0 => p = &p[..i],
            _ => return fallback.to_owned(),
        }
    }
}

/// Every property change between two flattened versions, by path.
fn compare_versions(old: &Version<'_>, new: &Version<'_>) -> BTreeMap<String, Vec<schema::Change>> {
    let mut out = BTreeMap::new();
    for (path, node) in &old.flat {
        let changes = schema::compare(node.schema, new.flat.get(path).map(|n| n.schema));
        if !changes.is_empty() {
            out.insert(path.clone(), changes);
        }
    }
    out
}

/// The pairs of served versions crdify compares, older first, by `older -> newer`.
fn served_pairs<'c, 'a>(crd: &'c Crd<'a>) -> Vec<(String, &'c Version<'a>, &'c Version<'a>)> {
    let mut served: Vec<&Version<'a>> = crd.versions.iter().filter(|v| v.served).collect();
    served.sort_by(|a, b| schema::version_order(&a.name, &b.name));
    let mut out = Vec::new();
    for (i, a) in served.iter().enumerate() {
        for b in &served[i + 1..] {
            out.push((format!("{} -> {}", a.name, b.name), *a, *b));
        }
    }
    out
}

fn violation(crd: &Crd<'_>, scope: Scope, check: Check, message: String) -> Violation {
    Violation {
        crd: crd.name.clone(),
        scope,
        version: String::new(),
        path: String::new(),
        check,
        old: None,
        new: None,
        message,
        pointer: String::new(),
    }
}

/// OLM v1's checks of one CRD: `old` is what the cluster has, `new` what the upgrade applies.
fn compare_crds(old: &Crd<'_>, new: &Crd<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    if old.scope != new.scope {
        let mut v = violation(
            new,
            Scope::Crd,
            Check::Scope,
            format!("scope changed : {:?} -> {:?}", old.scope, new.scope),
        );
        v.old = Some(old.scope.clone());
        v.new = Some(new.scope.clone());
        v.pointer = "/spec/scope".into();
        out.push(v);
    }
    let removed: Vec<&str> = old
        .stored
        .iter()
        .filter(|s| new.version(s).is_none())
        .map(String::as_str)
        .collect();
    if !removed.is_empty() {
        let mut v = violation(
            new,
            Scope::Crd,
            Check::StoredVersionRemoval,
            format!("stored versions removed : [{}]", removed.join(" ")),
        );
        v.old = Some(old.stored.join(" "));
        v.new = Some(
            new.versions
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        );
        v.pointer = "/spec/versions".into();
        out.push(v);
    }
    for nv in &new.versions {
        let Some(ov) = old.version(&nv.name) else {
            continue;
        };
        for path in ov.flat.keys().filter(|p| !nv.flat.contains_key(*p)) {
            let mut v = violation(
                new,
                Scope::Crd,
                Check::ExistingFieldRemoval,
                format!("removed field : {}.{path}", nv.name),
            );
            v.version = nv.name.clone();
            v.path = path.clone();
            v.pointer = nearest(&nv.flat, path, &nv.pointer);
            out.push(v);
        }
    }
    for ov in &old.versions {
        let Some(nv) = new.version(&ov.name) else {
            continue;
        };
        for (path, changes) in compare_versions(ov, nv) {
            for c in changes {
                out.push(Violation {
                    crd: new.name.clone(),
                    scope: Scope::SameVersion,
                    version: ov.name.clone(),
                    pointer: nearest(&nv.flat, &path, &nv.pointer),
                    path: path.clone(),
                    check: Check::Property(c.check),
                    old: c.old,
                    new: c.new,
                    message: c.message,
                });
            }
        }
    }
    // OLM configures crdify to skip the served-version check when a webhook converts.
    if !new.webhook {
        let mut known: HashMap<String, BTreeMap<String, Vec<schema::Change>>> = HashMap::new();
        for (pair, a, b) in served_pairs(old) {
            known.insert(pair, compare_versions(a, b));
        }
        for (pair, a, b) in served_pairs(new) {
            let before = known.get(&pair);
            for (path, changes) in compare_versions(a, b) {
                let had: BTreeSet<(schema::Check, &str)> = before
                    .and_then(|k| k.get(&path))
                    .into_iter()
                    .flatten()
                    .map(|c| (c.check, c.identity.as_str()))
                    .collect();
                for c in changes {
                    if had.contains(&(c.check, c.identity.as_str())) {
                        continue;
                    }
                    out.push(Violation {
                        crd: new.name.clone(),
                        scope: Scope::ServedVersion,
                        version: pair.clone(),
                        pointer: nearest(&b.flat, &path, &b.pointer),
                        path: path.clone(),
                        check: Check::Property(c.check),
                        old: c.old,
                        new: c.new,
                        message: c.message,
                    });
                }
            }
        }
    }
    out
}

/// The CRDs of a bundle by `metadata.name` (the first of a name).
fn crds_by_name(b: &Bundle) -> BTreeMap<&str, &Object> {
    let mut out = BTreeMap::new();
    for c in b.crds() {
        out.entry(c.name()).or_insert(c);
    }
    out
}

/// Every violation of an upgrade from `old` to `new`: OLM v1's checks of each CRD of the new
/// bundle that the old one has, then opship's bundle-level checks.
pub fn compare(old: &Bundle, new: &Bundle) -> Vec<Violation> {
    let old_crds = crds_by_name(old);
    let new_crds = crds_by_name(new);
    // Each CRD is read (flattened) once.
    let new_read: BTreeMap<&str, Crd<'_>> =
        new_crds.iter().map(|(k, c)| (*k, Crd::read(c))).collect();
    let mut out = Vec::new();
    for (name, n) in &new_read {
        if let Some(o) = old_crds.get(name) {
            out.extend(compare_crds(&Crd::read(o), n));
        }
    }
    let owned: Vec<&Value> = old
        .csv()
        .and_then(|c| c.value()["spec"]["customresourcedefinitions"]["owned"].as_array())
        .into_iter()
        .flatten()
        .collect();
    let mut dropped = BTreeSet::new();
    for o in &owned {
        let name = str_of(&o["name"]);
        if name.is_empty() {
            continue;
        }
        match new_read.get(name) {
            None => {
                if old_crds.contains_key(name) && dropped.insert(name) {
                    out.push(Violation {
                        crd: name.to_owned(),
                        scope: Scope::Bundle,
                        version: String::new(),
                        path: String::new(),
                        check: Check::RemovedCrd,
                        old: Some(name.to_owned()),
                        new: None,
                        message: "the old CSV owns this CRD; the new bundle does not ship it"
                            .into(),
                        pointer: String::new(),
                    });
                }
            }
            Some(crd) => {
                let version = str_of(&o["version"]);
                if version.is_empty() || crd.version(version).is_some_and(|v| v.served) {
                    continue;
                }
                out.push(Violation {
                    crd: name.to_owned(),
                    scope: Scope::Bundle,
                    version: version.to_owned(),
                    path: String::new(),
                    check: Check::UnservedVersion,
                    old: Some(version.to_owned()),
                    new: Some(
                        crd.versions
                            .iter()
                            .filter(|v| v.served)
                            .map(|v| v.name.as_str())
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                    message: format!(
                        "the old CSV owns version {version}; the new CRD {}",
                        if crd.version(version).is_some() {
                            "no longer serves it"
                        } else {
                            "no longer has it"
                        }
                    ),
                    pointer: "/spec/versions".into(),
                });
            }
        }
    }
    examples(old, &old_crds, &new_crds, &mut out);
    out.sort_by(|a, b| {
        (&a.crd, a.scope, &a.version, &a.path, a.check, &a.message)
            .cmp(&(&b.crd, b.scope, &b.version, &b.path, b.check, &b.message))
    });
    out.dedup();
    out
}

/// The custom resources of the old bundle: its CSV's examples and the objects of CRD kinds it
/// ships, each with a label.
fn old_resources(old: &Bundle) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    if let Some(csv) = old.csv() {
        let annotations = &csv.value()["metadata"]["annotations"];
        let key = ["alm-examples", "olm.examples"]
            .into_iter()
            .find(|k| annotations[*k].is_string());
        if let Some(key) = key
            && let Ok(Value::Array(list)) = serde_json::from_str::<Value>(str_of(&annotations[key]))
        {
            for (i, ex) in list.into_iter().enumerate() {
                out.push((format!("{key} example {i}"), ex));
            }
        }
    }
    for o in old.others() {
        out.push((
            format!("{} ({})", o.describe(), o.doc.origin("").file.display()),
            o.value().clone(),
        ));
    }
    out
}

/// The CRD of a bundle that defines `kind` in `group`.
fn find_kind<'o>(crds: &BTreeMap<&str, &'o Object>, group: &str, kind: &str) -> Option<&'o Object> {
    crds.values()
        .find(|c| {
            str_of(&c.value()["spec"]["group"]) == group
                && str_of(&c.value()["spec"]["names"]["kind"]) == kind
        })
        .copied()
}

fn examples(
    old: &Bundle,
    old_crds: &BTreeMap<&str, &Object>,
    new_crds: &BTreeMap<&str, &Object>,
    out: &mut Vec<Violation>,
) {
    let mut patterns = example_schema::Patterns::new();
    for (label, res) in old_resources(old) {
        let Some(api_version) = res["apiVersion"].as_str() else {
            continue;
        };
        let kind = str_of(&res["kind"]);
        let (group, version) = split_api_version(api_version);
        let (Some(n), Some(o)) = (
            find_kind(new_crds, group, kind),
            find_kind(old_crds, group, kind),
        ) else {
            continue;
        };
        let Some(ov) = crd_examples::crd_version(o, version).filter(|v| v.served) else {
            // Not valid before the upgrade either: the crd-examples suite reports it.
            continue;
        };
        let name = str_of(&res["metadata"]["name"]);
        let what = if name.is_empty() {
            format!("{label}, {kind} {api_version}")
        } else {
            format!("{label}, {kind} {name} {api_version}")
        };
        let base = Violation {
            crd: n.name().to_owned(),
            scope: Scope::Bundle,
            version: version.to_owned(),
            path: String::new(),
            check: Check::Example,
            old: None,
            new: None,
            message: String::new(),
            pointer: "/spec/versions".into(),
        };
        let Some(nv) = crd_examples::crd_version(n, version).filter(|v| v.served) else {
            out.push(Violation {
                message: format!("{what}: the new CRD does not serve version {version}"),
                ..base
            });
            continue;
        };
        let Some(new_schema) = nv.schema else {
            continue;
        };
        let run = |crd: &Object, s: &Value, status: bool, patterns: &mut _| {
            let mode = example_schema::Mode {
                prune: crd_examples::prunes(crd),
                status_subresource: status,
            };
            example_schema::validate(s, &res, mode, patterns)
                .into_iter()
                .filter(|v| {
                    !matches!(
                        v.kind,
                        example_schema::Kind::Unknown | example_schema::Kind::Suspicious
                    )
                })
                .collect::<Vec<_>>()
        };
        let before: BTreeSet<(String, String)> = ov
            .schema
            .map(|s| run(o, s, ov.status_subresource, &mut patterns))
            .unwrap_or_default()
            .into_iter()
            .map(|v| (v.path, format!("{:?}", v.kind)))
            .collect();
        let pointer = crd_version_pointer(n, version);
        for v in run(n, new_schema, nv.status_subresource, &mut patterns) {
            if before.contains(&(v.path.clone(), format!("{:?}", v.kind))) {
                continue;
            }
            out.push(Violation {
                path: v.path.clone(),
                message: format!("{what}: {}: {}", v.path, v.message),
                pointer: pointer.clone(),
                ..base.clone()
            });
        }
    }
}

/// Where the schema of `version` of a CRD document sits.
fn crd_version_pointer(crd: &Object, version: &str) -> String {
    let spec = &crd.value()["spec"];
    for (i, v) in spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if str_of(&v["name"]) == version {
            if v["schema"]["openAPIV3Schema"].is_object() {
                return format!("/spec/versions/{i}/schema/openAPIV3Schema");
            }
            return format!("/spec/versions/{i}");
        }
    }
    if spec["validation"]["openAPIV3Schema"].is_object() {
        return "/spec/validation/openAPIV3Schema".into();
    }
    "/spec".into()
}

/// The violations as findings, each at the `file:line` of the new CRD (the new CSV for a
/// dropped CRD), naming the old bundle.
pub fn findings(old: &Bundle, new: &Bundle, violations: &[Violation]) -> Vec<Finding> {
    let new_crds = crds_by_name(new);
    let mut out = Vec::new();
    for v in violations {
        let rule = v.check.rule();
        let mut message = format!("upgrade from {}: ", old.name);
        match v.scope {
            Scope::SameVersion => message.push_str(&format!("version {}: ", v.version)),
            Scope::ServedVersion => message.push_str(&format!(
                "served versions {} (no conversion webhook): ",
                v.version
            )),
            Scope::Crd if !v.version.is_empty() => {
                message.push_str(&format!("version {}: ", v.version))
            }
            _ => {}
        }
        if !v.path.is_empty() && v.check != Check::Example {
            message.push_str(&format!("{}: ", v.path));
        }
        message.push_str(&v.message);
        let mut f = Finding::new(rule, v.crd.clone(), message);
        let at = match new_crds.get(v.crd.as_str()) {
            Some(c) => Some(c.origin_of(&v.pointer)),
            None => new
                .csv()
                .map(|c| c.origin_of("/spec/customresourcedefinitions/owned")),
        };
        if let Some(at) = at {
            f = f.at(at);
        }
        out.push(f);
    }
    out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    out.dedup();
    out
}

/// The upgrade from `old` to `new` as a report about the new bundle (`path` as the user named
/// it).
pub fn report(old: &Bundle, new: &Bundle, path: &Path) -> BundleReport {
    let violations = compare(old, new);
    BundleReport {
        path: path.to_path_buf(),
        name: new.name.clone(),
        findings: findings(old, new, &violations),
        skipped: Vec::new(),
    }
}

/// Loads a bundle directory or layout image (see [`Source::parse`]).
pub fn load_source(arg: &Path) -> Result<Bundle> {
    match Source::parse(arg) {
        Source::Dir(d) => crate::load::load_dir(&d),
        Source::Layout { layout, tag } => crate::load::load_layout(&layout, &tag),
    }
}

/// `opship validate upgrade --from OLD --to NEW`: loads both bundles and reports the upgrade.
pub fn check_sources(from: &Path, to: &Path) -> Result<BundleReport> {
    let old = load_source(from)?;
    let new = load_source(to)?;
    Ok(report(&old, &new, to))
}

/// Whether OLM v1's preflight would refuse the upgrade: a violation of one of its checks.
pub fn olm_v1_refuses(violations: &[Violation]) -> bool {
    violations.iter().any(|v| v.check.is_olm_v1())
}

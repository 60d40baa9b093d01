//! ClusterServiceVersion rules (`CSV…`): the `ClusterServiceVersionValidator` of
//! operator-framework/api (`csv.go`, `typecheck.go`, `annotations.go`), rule by rule, plus the
//! shape checks the reference gets for free from decoding the CSV into its Go type, the newer
//! `spec.release` format and a working duplicate-install-mode check.
//!
//! Every finding names the CSV (`metadata.name`), as the reference names its CSV results.

use std::collections::BTreeSet;

use opship_core::manifest::Object;
use opship_core::yaml::escape_pointer_token;
use serde_json::Value;

use crate::Options;
use crate::load::Bundle;
use crate::rule::{Finding, Rule};

rule!(
    Csv,
    CSV001,
    Error,
    Some("CSVFileNotValid"),
    "The CSV name is a DNS-1123 subdomain of at most 63 characters",
    "OLM uses metadata.name as an object name and as a label value (olm.copiedFrom, owner \
     labels), so it must be lower-case letters, digits, '-' and '.', start and end with a \
     letter or digit, and be no longer than 63 characters. The convention is \
     `<package>.v<version>`, e.g. `memcached-operator.v0.3.0`."
);
rule!(
    Csv,
    CSV002,
    Error,
    Some("CSVFileNotValid"),
    "spec.replaces names a valid CSV",
    "spec.replaces is the metadata.name of the CSV this one upgrades, so it must pass the same \
     check as a CSV name (DNS-1123 subdomain, at most 63 characters), and it cannot be this \
     CSV's own name. A typo here breaks the upgrade graph of the channel."
);
rule!(
    Csv,
    CSV003,
    Error,
    Some("ValidationFailed"),
    "OLM annotation keys use the right case",
    "OLM reads olm.skipRange, olm.operatorGroup, olm.operatorNamespace, olm.targetNamespaces \
     and olm.providedAPIs with exact case; `olm.skiprange` is silently ignored, so the skip \
     range never applies. Rename the key to the spelling in the message."
);
rule!(
    Csv,
    CSV004,
    Error,
    Some("FieldNotFound"),
    "Required CSV fields are present (spec, install strategy, deployments, displayName)",
    "OLM cannot install a CSV without spec.install.strategy (`deployment`) and \
     spec.install.spec.deployments, and the console and catalogs show spec.displayName. \
     Regenerate the CSV (`opship generate bundle`) or add the missing field."
);
rule!(
    Csv,
    CSV005,
    Error,
    Some("CSVFileNotValid"),
    "spec.installModes is declared",
    "installModes tell OLM which OperatorGroups the operator can join (OwnNamespace, \
     SingleNamespace, MultiNamespace, AllNamespaces). Without them OLM refuses the CSV. \
     List all four types with `supported: true` or `false`."
);
rule!(
    Csv,
    CSV006,
    Error,
    Some("CSVFileNotValid"),
    "At least one install mode is supported",
    "When every install mode says `supported: false` no OperatorGroup can ever satisfy the \
     CSV and it never installs. Mark the modes the operator handles as supported \
     (AllNamespaces is what OLM v1 needs)."
);
rule!(
    Csv,
    CSV007,
    Error,
    Some("CSVFileNotValid"),
    "CSVs with conversion webhooks support AllNamespaces only",
    "A CRD conversion webhook serves every namespace of the cluster, so OLM only installs CSVs \
     whose webhookdefinitions list conversionCRDs when AllNamespaces is the one supported \
     install mode. Set AllNamespaces to true and every other mode to false."
);
rule!(
    Csv,
    CSV008,
    Warning,
    None,
    "Install modes are listed once each, with known types",
    "Each of OwnNamespace, SingleNamespace, MultiNamespace and AllNamespaces should appear \
     once. A duplicate with a different `supported` value makes the answer depend on which \
     entry a reader takes; an unknown type (e.g. `AllNamespace`) is ignored by OLM. The \
     reference has this check but it never fires (its set is never filled)."
);
rule!(
    Csv,
    CSV009,
    Error,
    Some("CSVFileNotValid"),
    "spec.minKubeVersion is a full semantic version",
    "OLM compares minKubeVersion with the cluster version and the reference parses it as \
     strict semver, so `1.25` is rejected: write `1.25.0`."
);
rule!(
    Csv,
    CSV010,
    Warning,
    Some("CSVFileNotValid"),
    "The CSV has an alm-examples annotation",
    "metadata.annotations.alm-examples (or olm.examples) is a JSON list of example custom \
     resources; the console uses it to pre-fill the create form of each owned API. Add one \
     example per owned CRD version."
);
rule!(
    Csv,
    CSV011,
    Warning,
    Some("CSVFileNotValid"),
    "Only one of alm-examples and olm.examples is set",
    "When both annotations are present only alm-examples is read; olm.examples is dead \
     weight that can drift. Keep alm-examples and remove olm.examples."
);
rule!(
    Csv,
    CSV012,
    Error,
    Some("ParseError"),
    "The examples annotation is a JSON list of objects with a kind",
    "alm-examples must be valid JSON: a list of objects, each with `apiVersion` and `kind`. \
     The console fails to show any example when the value does not parse. The message gives \
     the offset of the first bad character."
);
rule!(
    Csv,
    CSV013,
    Error,
    Some("OperationFailed"),
    "Every example is of an API the CSV owns",
    "Each alm-examples entry must have the group, version and kind of an owned CRD (group = \
     the owned CRD name after its first '.') or an owned APIService. An example for another \
     API is either a typo in apiVersion/kind or a missing `owned` entry."
);
rule!(
    Csv,
    CSV014,
    Warning,
    Some("OperationFailed"),
    "Every owned API has an example",
    "Without an example the console offers an empty YAML editor for that API. Add an \
     alm-examples entry with its apiVersion and kind."
);
rule!(
    Csv,
    CSV015,
    Error,
    Some("ParseError"),
    "Owned CRD names have the form <plural>.<group>",
    "spec.customresourcedefinitions.owned[].name is the CRD's metadata.name, `<plural>.<group>`; \
     OLM derives the API group from it. A name without a '.' cannot match any CRD."
);
rule!(
    Csv,
    CSV016,
    Error,
    Some("CSVFileNotValid"),
    "The CSV's apiVersion has a version",
    "A ClusterServiceVersion is `apiVersion: operators.coreos.com/v1alpha1`; an apiVersion \
     without a version part cannot be decoded."
);
rule!(
    Csv,
    CSV017,
    Warning,
    Some("PropertiesAnnotationUsed"),
    "Bundle properties are not declared in the olm.properties annotation",
    "The olm.properties CSV annotation is the legacy way to attach properties; opm and OLM \
     read metadata/properties.yaml. Move the entries there (same `type`/`value` list)."
);
rule!(
    Csv,
    CSV018,
    Error,
    Some("ParseError"),
    "The CSV decodes as a ClusterServiceVersion (spec.version is semver, fields have their types)",
    "OLM, opm and the reference validators decode the CSV into a typed structure: \
     spec.version must be a semantic version, strings must be strings, lists must be lists, \
     `supported` must be a boolean. A CSV that does not decode makes the whole bundle \
     unloadable (the reference reports a load error instead of findings)."
);
rule!(
    Csv,
    CSV019,
    Error,
    Some("FieldValueInvalid"),
    "spec.release is a short dot-separated release identifier",
    "spec.release (newer OLM: several builds of one version) must be at most 20 characters \
     of dot-separated [0-9A-Za-z-] identifiers, numeric ones without leading zeros, like \
     `1` or `2.hotfix`. The CSV CRD enforces this with a CEL rule on the cluster."
);

rule!(
    Csv,
    CSV020,
    Error,
    None,
    "olm.skipRange is a semver range",
    "The `olm.skipRange` annotation is a blang/semver range such as `>=1.0.0 <1.3.0`. OLM and \
     opm parse it when they build the upgrade graph; a value they cannot parse breaks the \
     catalog the bundle is added to. `opship generate bundle --skip-range` refuses the same \
     values."
);

rule!(
    Csv,
    CSV021,
    Warning,
    None,
    "webhookdefinitions entries have only fields of the CSV's WebhookDescription",
    "Each spec.webhookdefinitions entry is a WebhookDescription (operator-framework/api): \
     generateName, type, deploymentName, containerPort, targetPort, sideEffects, rules, \
     failurePolicy, matchPolicy, objectSelector, timeoutSeconds, admissionReviewVersions, \
     reinvocationPolicy, webhookPath and conversionCRDs. The API server prunes any other field \
     when the CSV is created, so the setting is silently lost on install: a `namespaceSelector` \
     copied from a webhook configuration never applies (OLM sets the namespace selector from \
     the OperatorGroup), and a misspelt field (`webhookPth`) is as good as absent (a field in \
     another case, `webhookpath`, is read as the field, as OLM reads it: see BF019). Remove the \
     field or fix its name. The reference decodes the CSV into its Go type, which ignores \
     unknown fields, so it reports nothing."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[
    &CSV001, &CSV002, &CSV003, &CSV004, &CSV005, &CSV006, &CSV007, &CSV008, &CSV009, &CSV010,
    &CSV011, &CSV012, &CSV013, &CSV014, &CSV015, &CSV016, &CSV017, &CSV018, &CSV019, &CSV020,
    &CSV021,
];

/// Annotation keys OLM reads case-sensitively.
const CASE_SENSITIVE_KEYS: [&str; 5] = [
    "olm.operatorGroup",
    "olm.operatorNamespace",
    "olm.targetNamespaces",
    "olm.providedAPIs",
    "olm.skipRange",
];

/// The fields of operator-framework/api's `WebhookDescription`, the type of a
/// `spec.webhookdefinitions` entry; the API server prunes any other.
pub const WEBHOOK_DESCRIPTION_FIELDS: [&str; 15] = [
    "generateName",
    "type",
    "deploymentName",
    "containerPort",
    "targetPort",
    "sideEffects",
    "rules",
    "failurePolicy",
    "matchPolicy",
    "objectSelector",
    "timeoutSeconds",
    "admissionReviewVersions",
    "reinvocationPolicy",
    "webhookPath",
    "conversionCRDs",
];

/// The install mode types OLM knows.
const INSTALL_MODES: [&str; 4] = [
    "OwnNamespace",
    "SingleNamespace",
    "MultiNamespace",
    "AllNamespaces",
];

/// Runs the suite.
pub(crate) fn check(b: &Bundle, _opts: &Options, out: &mut Vec<Finding>) {
    let Some(csv) = b.csv() else { return };
    let c = Ctx {
        csv,
        name: csv.name(),
        out,
    };
    c.run();
}

/// One CSV under check.
struct Ctx<'a> {
    csv: &'a Object,
    name: &'a str,
    out: &'a mut Vec<Finding>,
}

impl<'a> Ctx<'a> {
    fn push(&mut self, rule: &'static Rule, pointer: &str, message: impl Into<String>) {
        self.out
            .push(Finding::new(rule, self.name, message.into()).at(self.csv.origin_of(pointer)));
    }

    fn v(&self) -> &'a Value {
        self.csv.value()
    }

    fn run(mut self) {
        self.names();
        self.annotation_keys();
        self.required_fields();
        self.install_modes();
        self.min_kube_version();
        self.examples();
        self.type_meta();
        self.decode();
        self.release();
        self.webhook_fields();
    }

    /// CSV021.
    fn webhook_fields(&mut self) {
        let Some(defs) = self.v()["spec"]["webhookdefinitions"].as_array() else {
            return; // CSV018 reports a non-list
        };
        for (i, d) in defs.iter().enumerate() {
            let Some(map) = d.as_object() else { continue };
            for key in map.keys() {
                if WEBHOOK_DESCRIPTION_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                // A key that is a field in another case (`webhookpath`) was renamed by the
                // loader, as OLM's Go decoder reads it (BF019); what is left is unknown.
                let why = if key == "namespaceSelector" {
                    "; OLM sets the namespace selector itself, from the OperatorGroup"
                } else {
                    ""
                };
                let ptr = format!("/spec/webhookdefinitions/{i}/{}", escape_pointer_token(key));
                self.push(
                    &CSV021,
                    &ptr,
                    format!(
                        "spec.webhookdefinitions[{i}] has `{key}`, which the CSV's \
                         WebhookDescription does not have: the API server drops it on install{why}"
                    ),
                );
            }
        }
    }

    /// CSV001, CSV002, CSV020.
    fn names(&mut self) {
        let raw = &self.v()["metadata"]["name"];
        let name = raw.as_str().unwrap_or_default().to_owned();
        // A non-string name is reported by CSV018.
        if (raw.is_string() || raw.is_null())
            && let Some(p) = csv_name_problem(&name)
        {
            self.push(&CSV001, "/metadata/name", format!("metadata.name {p}"));
        }
        if let Some(replaces) = self.v()["spec"]["replaces"].as_str()
            && let Some(p) = opship_core::naming::replaces_problem(&name, replaces)
        {
            self.push(&CSV002, "/spec/replaces", format!("spec.replaces {p}"));
        }
        if let Some(range) = self.v()["metadata"]["annotations"]["olm.skipRange"].as_str()
            && let Some(p) = opship_core::naming::skip_range_problem(range)
        {
            self.push(
                &CSV020,
                "/metadata/annotations/olm.skipRange",
                format!("olm.skipRange {p}"),
            );
        }
    }

    /// CSV003, CSV017.
    fn annotation_keys(&mut self) {
        let Some(map) = self.v()["metadata"]["annotations"].as_object() else {
            return;
        };
        let keys: Vec<String> = map.keys().cloned().collect();
        for key in keys {
            let ptr = format!("/metadata/annotations/{}", escape_pointer_token(&key));
            if let Some(known) = CASE_SENSITIVE_KEYS
                .iter()
                .find(|k| k.eq_ignore_ascii_case(&key))
                && *known != key
            {
                self.push(
                    &CSV003,
                    &ptr,
                    format!("annotation `{key}` uses the wrong case; OLM only reads `{known}`"),
                );
            }
            if key == "olm.properties" {
                self.push(
                    &CSV017,
                    &ptr,
                    "the olm.properties annotation is set; declare these properties in \
                     metadata/properties.yaml instead",
                );
            }
        }
    }

    /// CSV004: the non-`omitempty` fields of the reference's CSV type, where it looks.
    fn required_fields(&mut self) {
        let spec = &self.v()["spec"];
        if is_zero(spec) {
            self.push(&CSV004, "/spec", "required field spec is missing or empty");
            return;
        }
        let install = &spec["install"];
        if is_zero(install) {
            self.push(
                &CSV004,
                "/spec/install",
                "required field spec.install is missing or empty",
            );
        } else {
            let strategy = &install["strategy"];
            if strategy.is_null() || strategy.as_str() == Some("") {
                self.push(
                    &CSV004,
                    "/spec/install/strategy",
                    "required field spec.install.strategy is missing (use `deployment`)",
                );
            }
            let ispec = &install["spec"];
            // The reference only looks inside install.spec when it is not empty.
            let present = ["deployments", "permissions", "clusterPermissions"]
                .iter()
                .any(|k| !ispec[*k].is_null());
            if present && ispec["deployments"].is_null() {
                self.push(
                    &CSV004,
                    "/spec/install/spec",
                    "required field spec.install.spec.deployments is missing",
                );
            }
        }
        let dn = &spec["displayName"];
        if dn.is_null() || dn.as_str() == Some("") {
            self.push(
                &CSV004,
                "/spec/displayName",
                "required field spec.displayName is missing or empty",
            );
        }
    }

    /// CSV005–CSV008.
    fn install_modes(&mut self) {
        let modes_v = &self.v()["spec"]["installModes"];
        let modes: &[Value] = modes_v.as_array().map(Vec::as_slice).unwrap_or_default();
        if modes.is_empty() {
            if modes_v.is_null() || modes_v.is_array() {
                self.push(
                    &CSV005,
                    "/spec/installModes",
                    "spec.installModes is missing or empty",
                );
            }
            return;
        }
        let supported = |m: &Value| m["supported"].as_bool().unwrap_or(false);
        let mode_type = |m: &Value| m["type"].as_str().unwrap_or_default().to_owned();
        if !modes.iter().any(supported) {
            self.push(
                &CSV006,
                "/spec/installModes",
                "none of the install modes is supported",
            );
        }
        let webhooks = self.v()["spec"]["webhookdefinitions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (i, w) in webhooks.iter().enumerate() {
            let has_conversion = match &w["conversionCRDs"] {
                Value::Array(a) => !a.is_empty(),
                _ => false,
            };
            if !has_conversion {
                continue;
            }
            let only_all = modes.iter().all(|m| {
                let all = mode_type(m) == "AllNamespaces";
                all == supported(m)
            });
            if !only_all {
                self.push(
                    &CSV007,
                    &format!("/spec/webhookdefinitions/{i}/conversionCRDs"),
                    "webhookdefinitions lists conversionCRDs, so AllNamespaces must be the only \
                     supported install mode",
                );
            }
        }
        let mut seen = BTreeSet::new();
        for (i, m) in modes.iter().enumerate() {
            let t = mode_type(m);
            if !m["type"].is_string() {
                continue; // CSV018
            }
            if !INSTALL_MODES.contains(&t.as_str()) {
                self.push(
                    &CSV008,
                    &format!("/spec/installModes/{i}/type"),
                    format!(
                        "unknown install mode type `{t}` (OwnNamespace, SingleNamespace, \
                         MultiNamespace or AllNamespaces)"
                    ),
                );
            } else if !seen.insert(t.clone()) {
                self.push(
                    &CSV008,
                    &format!("/spec/installModes/{i}/type"),
                    format!("install mode `{t}` is listed more than once"),
                );
            }
        }
    }

    /// CSV009.
    fn min_kube_version(&mut self) {
        let Some(v) = self.v()["spec"]["minKubeVersion"].as_str() else {
            return;
        };
        if v.trim().is_empty() {
            return;
        }
        if semver::Version::parse(v).is_err() {
            let hint = if v.trim().matches('.').count() == 1 {
                format!(" (write `{}.0`)", v.trim())
            } else {
                String::new()
            };
            self.push(
                &CSV009,
                "/spec/minKubeVersion",
                format!("spec.minKubeVersion `{v}` is not a MAJOR.MINOR.PATCH version{hint}"),
            );
        }
    }

    /// CSV010–CSV015.
    fn examples(&mut self) {
        let ann = &self.v()["metadata"]["annotations"];
        let empty = ann.as_object().is_none_or(|m| m.is_empty());
        if empty {
            self.push(
                &CSV010,
                "/metadata",
                "the CSV has no annotations, so no alm-examples",
            );
            return;
        }
        let alm = ann.get("alm-examples");
        let olm = ann.get("olm.examples");
        let (key, text) = match (alm, olm) {
            (None, None) => {
                self.push(
                    &CSV010,
                    "/metadata/annotations",
                    "neither alm-examples nor olm.examples is set",
                );
                return;
            }
            (Some(a), Some(_)) => {
                self.push(
                    &CSV011,
                    "/metadata/annotations/olm.examples",
                    "both alm-examples and olm.examples are set; only alm-examples is read",
                );
                ("alm-examples", a)
            }
            (Some(a), None) => ("alm-examples", a),
            (None, Some(o)) => ("olm.examples", o),
        };
        let ptr = format!("/metadata/annotations/{key}");
        // A non-string value is reported by CSV018.
        let text = match text {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            _ => return,
        };
        let mut examples: Vec<(String, String, String)> = Vec::new();
        if !text.is_empty() {
            let parsed: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    self.push(
                        &CSV012,
                        &ptr,
                        format!("{key} is not valid JSON: {e} of the annotation value"),
                    );
                    return;
                }
            };
            let items: &[Value] = match &parsed {
                Value::Null => &[],
                Value::Array(a) => a,
                other => {
                    self.push(
                        &CSV012,
                        &ptr,
                        format!(
                            "{key} must be a JSON list of objects, not {}",
                            opship_core::yaml::kind_name(other)
                        ),
                    );
                    return;
                }
            };
            for (i, item) in items.iter().enumerate() {
                let kind = item["kind"].as_str().unwrap_or_default();
                let api_version = item["apiVersion"].as_str().unwrap_or_default();
                let gv = split_group_version(api_version);
                match (item.is_object(), kind.is_empty(), gv) {
                    (true, false, Some((g, v))) => {
                        let gvk = (g.to_owned(), v.to_owned(), kind.to_owned());
                        if !examples.contains(&gvk) {
                            examples.push(gvk);
                        }
                    }
                    (true, _, None) => {
                        self.push(
                            &CSV012,
                            &ptr,
                            format!(
                                "{key} entry {i}: apiVersion `{api_version}` has more than one '/'"
                            ),
                        );
                        return;
                    }
                    (true, true, _) => {
                        self.push(&CSV012, &ptr, format!("{key} entry {i} has no kind"));
                        return;
                    }
                    (false, _, _) => {
                        self.push(
                            &CSV012,
                            &ptr,
                            format!(
                                "{key} entry {i} is {}, not an object",
                                opship_core::yaml::kind_name(item)
                            ),
                        );
                        return;
                    }
                }
            }
        }
        // Provided APIs: owned CRDs (group from the name) and owned APIServices.
        let mut provided: Vec<((String, String, String), String)> = Vec::new();
        let owned = self.v()["spec"]["customresourcedefinitions"]["owned"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (i, o) in owned.iter().enumerate() {
            let name = o["name"].as_str().unwrap_or_default();
            let Some((_, group)) = name.split_once('.') else {
                self.push(
                    &CSV015,
                    &format!("/spec/customresourcedefinitions/owned/{i}/name"),
                    format!("owned CRD name `{name}` is not <plural>.<group>"),
                );
                continue;
            };
            let gvk = (
                group.to_owned(),
                o["version"].as_str().unwrap_or_default().to_owned(),
                o["kind"].as_str().unwrap_or_default().to_owned(),
            );
            if !provided.iter().any(|(p, _)| *p == gvk) {
                provided.push((gvk, format!("/spec/customresourcedefinitions/owned/{i}")));
            }
        }
        let api_services = self.v()["spec"]["apiservicedefinitions"]["owned"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (i, o) in api_services.iter().enumerate() {
            let gvk = (
                o["group"].as_str().unwrap_or_default().to_owned(),
                o["version"].as_str().unwrap_or_default().to_owned(),
                o["kind"].as_str().unwrap_or_default().to_owned(),
            );
            if !provided.iter().any(|(p, _)| *p == gvk) {
                provided.push((gvk, format!("/spec/apiservicedefinitions/owned/{i}")));
            }
        }
        for gvk in &examples {
            if !provided.iter().any(|(p, _)| p == gvk) {
                self.push(
                    &CSV013,
                    &ptr,
                    format!(
                        "example of {} is not an API the CSV owns (check its apiVersion and \
                         kind, or add it to spec.customresourcedefinitions.owned)",
                        gvk_string(gvk)
                    ),
                );
            }
        }
        for (gvk, at) in &provided {
            if !examples.contains(gvk) {
                self.push(
                    &CSV014,
                    at,
                    format!("owned API {} has no example in {key}", gvk_string(gvk)),
                );
            }
        }
    }

    /// CSV016.
    fn type_meta(&mut self) {
        let av = self.csv.api_version();
        if av.ends_with('/') {
            self.push(
                &CSV016,
                "/apiVersion",
                format!("apiVersion `{av}` has no version (operators.coreos.com/v1alpha1)"),
            );
        }
    }

    /// CSV018: what decoding into the reference's Go type would reject.
    fn decode(&mut self) {
        let mut problems: Vec<(String, String)> = Vec::new();
        let v = self.v();
        let mut want = |ptr: &str, node: &Value, ty: Ty| {
            if let Some(p) = ty.mismatch(node) {
                problems.push((ptr.to_owned(), p));
            }
        };
        want("/metadata", &v["metadata"], Ty::Map);
        want("/metadata/name", &v["metadata"]["name"], Ty::Str);
        want(
            "/metadata/annotations",
            &v["metadata"]["annotations"],
            Ty::Map,
        );
        if let Some(m) = v["metadata"]["annotations"].as_object() {
            for (k, val) in m {
                want(
                    &format!("/metadata/annotations/{}", escape_pointer_token(k)),
                    val,
                    Ty::Str,
                );
            }
        }
        let spec = &v["spec"];
        want("/spec", spec, Ty::Map);
        for f in [
            "displayName",
            "replaces",
            "minKubeVersion",
            "maturity",
            "description",
        ] {
            want(&format!("/spec/{f}"), &spec[f], Ty::Str);
        }
        want("/spec/skips", &spec["skips"], Ty::StrList);
        want("/spec/keywords", &spec["keywords"], Ty::StrList);
        want("/spec/install", &spec["install"], Ty::Map);
        want(
            "/spec/install/strategy",
            &spec["install"]["strategy"],
            Ty::Str,
        );
        want("/spec/install/spec", &spec["install"]["spec"], Ty::Map);
        let deps = &spec["install"]["spec"]["deployments"];
        want("/spec/install/spec/deployments", deps, Ty::List);
        for (i, d) in deps.as_array().into_iter().flatten().enumerate() {
            let p = format!("/spec/install/spec/deployments/{i}");
            want(&p, d, Ty::Map);
            want(&format!("{p}/name"), &d["name"], Ty::Str);
            want(&format!("{p}/spec"), &d["spec"], Ty::Map);
        }
        let modes = &spec["installModes"];
        want("/spec/installModes", modes, Ty::List);
        for (i, m) in modes.as_array().into_iter().flatten().enumerate() {
            let p = format!("/spec/installModes/{i}");
            want(&p, m, Ty::Map);
            want(&format!("{p}/type"), &m["type"], Ty::Str);
            want(&format!("{p}/supported"), &m["supported"], Ty::Bool);
        }
        for section in ["customresourcedefinitions", "apiservicedefinitions"] {
            let s = &spec[section];
            want(&format!("/spec/{section}"), s, Ty::Map);
            for which in ["owned", "required"] {
                let list = &s[which];
                want(&format!("/spec/{section}/{which}"), list, Ty::List);
                for (i, o) in list.as_array().into_iter().flatten().enumerate() {
                    let p = format!("/spec/{section}/{which}/{i}");
                    want(&p, o, Ty::Map);
                    for f in ["name", "version", "kind", "group", "displayName"] {
                        want(&format!("{p}/{f}"), &o[f], Ty::Str);
                    }
                }
            }
        }
        let ri = &spec["relatedImages"];
        want("/spec/relatedImages", ri, Ty::List);
        for (i, r) in ri.as_array().into_iter().flatten().enumerate() {
            let p = format!("/spec/relatedImages/{i}");
            want(&p, r, Ty::Map);
            want(&format!("{p}/name"), &r["name"], Ty::Str);
            want(&format!("{p}/image"), &r["image"], Ty::Str);
        }
        let wh = &spec["webhookdefinitions"];
        want("/spec/webhookdefinitions", wh, Ty::List);
        for (i, w) in wh.as_array().into_iter().flatten().enumerate() {
            let p = format!("/spec/webhookdefinitions/{i}");
            want(&p, w, Ty::Map);
            want(
                &format!("{p}/conversionCRDs"),
                &w["conversionCRDs"],
                Ty::StrList,
            );
        }
        let version = &spec["version"];
        want("/spec/version", version, Ty::Str);
        if let Some(s) = version.as_str()
            && let Err(e) = parse_tolerant(s)
        {
            problems.push((
                "/spec/version".to_owned(),
                format!("spec.version `{s}` is not a semantic version: {e}"),
            ));
        }
        for (ptr, p) in problems {
            let msg = if ptr == "/spec/version" {
                p
            } else {
                format!("{} {p}", pointer_to_path(&ptr))
            };
            self.push(&CSV018, &ptr, msg);
        }
    }

    /// CSV019.
    fn release(&mut self) {
        let Some(r) = self.v()["spec"]["release"].as_str() else {
            if let Some(other) = self.v()["spec"].get("release")
                && !other.is_null()
            {
                let msg = format!(
                    "spec.release must be a string, not {}",
                    opship_core::yaml::kind_name(other)
                );
                self.push(&CSV019, "/spec/release", msg);
            }
            return;
        };
        if let Some(p) = release_problem(r) {
            self.push(&CSV019, "/spec/release", format!("spec.release `{r}` {p}"));
        }
    }
}

/// Why a spec.release value is malformed.
pub(crate) fn release_problem(r: &str) -> Option<String> {
    if r.is_empty() {
        return Some("is empty".into());
    }
    if r.len() > 20 {
        return Some("is longer than 20 characters".into());
    }
    for id in r.split('.') {
        if id.is_empty() {
            return Some("has an empty identifier".into());
        }
        if !id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') {
            return Some(format!(
                "has identifier `{id}` with characters other than [0-9A-Za-z-]"
            ));
        }
        if id.len() > 1 && id.starts_with('0') && id.bytes().all(|c| c.is_ascii_digit()) {
            return Some(format!("has numeric identifier `{id}` with a leading zero"));
        }
    }
    None
}

/// The JSON types the reference's Go structs expect.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Bool,
    Map,
    List,
    StrList,
}

impl Ty {
    /// What is wrong with `v` for this type (`null` is always fine: the field stays unset).
    fn mismatch(self, v: &Value) -> Option<String> {
        let ok = match self {
            Ty::Str => v.is_string(),
            Ty::Bool => v.is_boolean(),
            Ty::Map => v.is_object(),
            Ty::List => v.is_array(),
            Ty::StrList => v
                .as_array()
                .is_some_and(|a| a.iter().all(|x| x.is_string() || x.is_null())),
        };
        if ok || v.is_null() {
            return None;
        }
        let want = match self {
            Ty::Str => "a string",
            Ty::Bool => "a boolean (true or false)",
            Ty::Map => "a mapping",
            Ty::List => "a list",
            Ty::StrList => "a list of strings",
        };
        Some(format!(
            "is {}, but must be {want}{}",
            opship_core::yaml::kind_name(v),
            if matches!(self, Ty::Str) && (v.is_number() || v.is_boolean()) {
                " (quote it)"
            } else {
                ""
            }
        ))
    }
}

/// `/spec/installModes/0/supported` as `spec.installModes[0].supported`.
fn pointer_to_path(ptr: &str) -> String {
    let mut out = String::new();
    for token in ptr.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        let index = !token.is_empty() && token.bytes().all(|c| c.is_ascii_digit());
        if index || token.contains(['.', '/']) {
            out.push_str(&format!("[{token}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&token);
        }
    }
    out
}

/// Whether a value decodes to Go's zero value for a struct: absent, null or an empty mapping
/// (or a mapping whose values are all null).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.values().all(Value::is_null),
        _ => false,
    }
}

/// `group/version, Kind=kind`, as Kubernetes prints a GroupVersionKind.
pub(crate) fn gvk_string((g, v, k): &(String, String, String)) -> String {
    format!("{g}/{v}, Kind={k}")
}

/// `group/version` split as Kubernetes' `ParseGroupVersion` does; `None` for more than one '/'.
fn split_group_version(s: &str) -> Option<(&str, &str)> {
    match s.split_once('/') {
        None => Some(("", s)),
        Some((g, v)) if !v.contains('/') => Some((g, v)),
        Some(_) => None,
    }
}

/// Why `name` cannot be a CSV name (Kubernetes `IsDNS1123Subdomain` and `IsValidLabelValue`).
pub(crate) fn csv_name_problem(name: &str) -> Option<String> {
    opship_core::naming::csv_name_problem(name)
}

/// blang/semver's `ParseTolerant`, as the reference decodes `spec.version`: surrounding
/// space and a leading `v` are dropped, leading zeros removed, `1.2` padded to `1.2.0`.
pub(crate) fn parse_tolerant(s: &str) -> Result<semver::Version, String> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_owned).collect();
    for p in &mut parts {
        if p.len() > 1 {
            let t = p.trim_start_matches('0');
            *p = if t.is_empty() || !t.starts_with(|c: char| c.is_ascii_digit()) {
                format!("0{t}")
            } else {
                t.to_owned()
            };
        }
    }
    if parts.len() < 3 {
        if parts
            .last()
            .is_some_and(|p| p.contains('+') || p.contains('-'))
        {
            return Err("a short version cannot carry pre-release or build metadata".into());
        }
        while parts.len() < 3 {
            parts.push("0".into());
        }
    }
    semver::Version::parse(&parts.join(".")).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(csv_name_problem("memcached-operator.v0.3.0").is_none());
        assert!(csv_name_problem("Memcached.v1").is_some());
        assert!(csv_name_problem(&format!("{}.v1.0.0", "a".repeat(60))).is_some());
        assert!(csv_name_problem("a..b").is_some());
        assert!(csv_name_problem("").is_some());
    }

    #[test]
    fn tolerant_versions() {
        assert_eq!(parse_tolerant("v1.2").unwrap().to_string(), "1.2.0");
        assert_eq!(parse_tolerant(" 01.02.03 ").unwrap().to_string(), "1.2.3");
        assert!(parse_tolerant("1.2-rc1").is_err());
        assert!(parse_tolerant("").is_err());
        assert!(parse_tolerant("latest").is_err());
        assert_eq!(
            parse_tolerant("1.2.3-alpha.1+b4").unwrap().to_string(),
            "1.2.3-alpha.1+b4"
        );
    }

    #[test]
    fn releases() {
        assert!(release_problem("1").is_none());
        assert!(release_problem("2.hotfix-a").is_none());
        assert!(release_problem("01").is_some());
        assert!(release_problem("a..b").is_some());
        assert!(release_problem("a_b").is_some());
        assert!(release_problem(&"1".repeat(21)).is_some());
    }

    #[test]
    fn paths() {
        assert_eq!(
            pointer_to_path("/spec/installModes/0/supported"),
            "spec.installModes[0].supported"
        );
        assert_eq!(
            pointer_to_path("/metadata/annotations/olm.skipRange"),
            "metadata.annotations[olm.skipRange]"
        );
    }

    #[test]
    fn group_versions() {
        assert_eq!(split_group_version("v1"), Some(("", "v1")));
        assert_eq!(split_group_version("a.io/v1"), Some(("a.io", "v1")));
        assert_eq!(split_group_version("a/b/c"), None);
    }
}

#[cfg(test)]
mod odd_shapes {
    use std::path::{Path, PathBuf};

    /// Every field the CSV and bundle rules read, given every JSON type: no panic.
    #[test]
    fn no_panic_on_any_shape() {
        let shapes = [
            "null",
            "1",
            "true",
            "\"x\"",
            "[]",
            "{}",
            "[1, \"a\", null, {}]",
            "{a: 1}",
        ];
        let fields = [
            "metadata: {name: X, annotations: S}",
            "metadata: {annotations: {alm-examples: S, olm.examples: S}}",
            "spec: S",
            "spec: {install: S, installModes: S, displayName: S}",
            "spec: {install: {strategy: S, spec: S}}",
            "spec: {install: {spec: {deployments: S}}}",
            "spec: {install: {spec: {deployments: [{spec: {template: {spec: {containers: S, \
             serviceAccountName: S}}}}]}}}",
            "spec: {installModes: [S], webhookdefinitions: S}",
            "spec: {webhookdefinitions: [{conversionCRDs: S}], installModes: [{type: S, \
             supported: S}]}",
            "spec: {customresourcedefinitions: {owned: S}, apiservicedefinitions: {owned: [S]}}",
            "spec: {customresourcedefinitions: {owned: [{name: S, version: S, kind: S}]}}",
            "spec: {relatedImages: S, release: S, version: S, minKubeVersion: S, replaces: S}",
            "spec: {relatedImages: [S, {image: S}]}",
        ];
        for f in fields {
            for s in shapes {
                let csv = format!(
                    "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n{}\n",
                    f.replace('S', s)
                );
                let crd =
                    "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\n\
                           metadata: {name: a.b}\nspec: {group: S, names: S, versions: S}\n"
                        .replace('S', s);
                let files: Vec<(PathBuf, Vec<u8>)> = vec![
                    (PathBuf::from("manifests/csv.yaml"), csv.into_bytes()),
                    (PathBuf::from("manifests/crd.yaml"), crd.into_bytes()),
                    (
                        PathBuf::from("manifests/sa.yaml"),
                        b"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\n".to_vec(),
                    ),
                ];
                let b = crate::load::load_files(Path::new("odd"), files);
                let _ = crate::validate(&b, &crate::Options::all());
            }
        }
    }
}

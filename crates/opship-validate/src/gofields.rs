//! Field names read the way OLM reads them: the documents OLM and operator-framework/api decode
//! into Go structs (the ClusterServiceVersion, and the annotations, dependencies and properties
//! files) go through Go's `encoding/json` (via sigs.k8s.io/yaml), which takes a key that is not
//! spelled like the field but equals it without regard to case (`ApiVersion`, `MinKubeVersion`)
//! as that field. The loader renames such keys to the field's spelling, so every rule sees what
//! OLM sees, and reports each rename as a BF019 warning: the API server, kubectl and most
//! other tools are case-sensitive.
//!
//! Only the fields of these structs are known here ([`Shape`]); the Kubernetes types inside a
//! CSV (the deployment spec) are covered down to the pod template's containers. Deeper keys,
//! keys of maps (labels, annotations) and unknown fields are left as written.

use opship_core::yaml::{self, Document, Origin, Pos};
use serde_json::Value;

/// What a node decodes into.
#[derive(Debug)]
pub enum Shape {
    /// Anything: not looked into (scalars, raw JSON, types not modelled here).
    Any,
    /// A Go struct: its JSON field names and their shapes.
    Struct(&'static [(&'static str, Shape)]),
    /// A slice of one shape.
    List(&'static Shape),
    /// A map of string keys (kept as written) to one shape.
    Map(&'static Shape),
}

use Shape::{Any, List, Map, Struct};

const OBJECT_META: Shape = Struct(&[
    ("name", Any),
    ("generateName", Any),
    ("namespace", Any),
    ("selfLink", Any),
    ("uid", Any),
    ("resourceVersion", Any),
    ("generation", Any),
    ("creationTimestamp", Any),
    ("deletionTimestamp", Any),
    ("deletionGracePeriodSeconds", Any),
    ("labels", Any),
    ("annotations", Any),
    ("ownerReferences", Any),
    ("finalizers", Any),
    ("managedFields", Any),
]);

const LABEL_SELECTOR: Shape = Struct(&[
    ("matchLabels", Any),
    (
        "matchExpressions",
        List(&Struct(&[("key", Any), ("operator", Any), ("values", Any)])),
    ),
]);

const CONTAINER: Shape = Struct(&[
    ("name", Any),
    ("image", Any),
    ("command", Any),
    ("args", Any),
    ("workingDir", Any),
    ("ports", Any),
    ("envFrom", Any),
    ("env", Any),
    ("resources", Any),
    ("resizePolicy", Any),
    ("restartPolicy", Any),
    ("volumeMounts", Any),
    ("volumeDevices", Any),
    ("livenessProbe", Any),
    ("readinessProbe", Any),
    ("startupProbe", Any),
    ("lifecycle", Any),
    ("terminationMessagePath", Any),
    ("terminationMessagePolicy", Any),
    ("imagePullPolicy", Any),
    ("securityContext", Any),
    ("stdin", Any),
    ("stdinOnce", Any),
    ("tty", Any),
]);

const POD_SPEC: Shape = Struct(&[
    ("volumes", Any),
    ("initContainers", List(&CONTAINER)),
    ("containers", List(&CONTAINER)),
    ("ephemeralContainers", Any),
    ("restartPolicy", Any),
    ("terminationGracePeriodSeconds", Any),
    ("activeDeadlineSeconds", Any),
    ("dnsPolicy", Any),
    ("nodeSelector", Any),
    ("serviceAccountName", Any),
    ("serviceAccount", Any),
    ("automountServiceAccountToken", Any),
    ("nodeName", Any),
    ("hostNetwork", Any),
    ("hostPID", Any),
    ("hostIPC", Any),
    ("shareProcessNamespace", Any),
    ("securityContext", Any),
    ("imagePullSecrets", Any),
    ("hostname", Any),
    ("subdomain", Any),
    ("affinity", Any),
    ("schedulerName", Any),
    ("tolerations", Any),
    ("hostAliases", Any),
    ("priorityClassName", Any),
    ("priority", Any),
    ("dnsConfig", Any),
    ("readinessGates", Any),
    ("runtimeClassName", Any),
    ("enableServiceLinks", Any),
    ("preemptionPolicy", Any),
    ("overhead", Any),
    ("topologySpreadConstraints", Any),
    ("setHostnameAsFQDN", Any),
    ("os", Any),
    ("hostUsers", Any),
    ("schedulingGates", Any),
    ("resourceClaims", Any),
    ("resources", Any),
]);

const DEPLOYMENT_SPEC: Shape = Struct(&[
    ("replicas", Any),
    ("selector", LABEL_SELECTOR),
    (
        "template",
        Struct(&[("metadata", OBJECT_META), ("spec", POD_SPEC)]),
    ),
    ("strategy", Any),
    ("minReadySeconds", Any),
    ("revisionHistoryLimit", Any),
    ("paused", Any),
    ("progressDeadlineSeconds", Any),
]);

const POLICY_RULE: Shape = Struct(&[
    ("verbs", Any),
    ("apiGroups", Any),
    ("resources", Any),
    ("resourceNames", Any),
    ("nonResourceURLs", Any),
]);

const PERMISSIONS: Shape = List(&Struct(&[
    ("serviceAccountName", Any),
    ("rules", List(&POLICY_RULE)),
]));

const DESCRIPTOR: Shape = Struct(&[
    ("path", Any),
    ("displayName", Any),
    ("description", Any),
    ("x-descriptors", Any),
    ("value", Any),
]);

const API_RESOURCE_REFERENCE: Shape = Struct(&[("name", Any), ("kind", Any), ("version", Any)]);

const CRD_DESCRIPTION: Shape = Struct(&[
    ("name", Any),
    ("version", Any),
    ("kind", Any),
    ("displayName", Any),
    ("description", Any),
    ("resources", List(&API_RESOURCE_REFERENCE)),
    ("statusDescriptors", List(&DESCRIPTOR)),
    ("specDescriptors", List(&DESCRIPTOR)),
    ("actionDescriptors", List(&DESCRIPTOR)),
]);

const API_SERVICE_DESCRIPTION: Shape = Struct(&[
    ("name", Any),
    ("group", Any),
    ("version", Any),
    ("kind", Any),
    ("deploymentName", Any),
    ("containerPort", Any),
    ("displayName", Any),
    ("description", Any),
    ("resources", List(&API_RESOURCE_REFERENCE)),
    ("statusDescriptors", List(&DESCRIPTOR)),
    ("specDescriptors", List(&DESCRIPTOR)),
    ("actionDescriptors", List(&DESCRIPTOR)),
]);

const WEBHOOK_DESCRIPTION: Shape = Struct(&[
    ("generateName", Any),
    ("type", Any),
    ("deploymentName", Any),
    ("containerPort", Any),
    ("targetPort", Any),
    ("rules", Any),
    ("failurePolicy", Any),
    ("matchPolicy", Any),
    ("objectSelector", Any),
    ("sideEffects", Any),
    ("timeoutSeconds", Any),
    ("admissionReviewVersions", Any),
    ("reinvocationPolicy", Any),
    ("webhookPath", Any),
    ("conversionCRDs", Any),
]);

const APP_LINK: Shape = Struct(&[("name", Any), ("url", Any)]);

const CSV_SPEC: Shape = Struct(&[
    (
        "install",
        Struct(&[
            ("strategy", Any),
            (
                "spec",
                Struct(&[
                    (
                        "deployments",
                        List(&Struct(&[
                            ("name", Any),
                            ("spec", DEPLOYMENT_SPEC),
                            ("label", Any),
                        ])),
                    ),
                    ("permissions", PERMISSIONS),
                    ("clusterPermissions", PERMISSIONS),
                ]),
            ),
        ]),
    ),
    ("version", Any),
    ("maturity", Any),
    (
        "customresourcedefinitions",
        Struct(&[
            ("owned", List(&CRD_DESCRIPTION)),
            ("required", List(&CRD_DESCRIPTION)),
        ]),
    ),
    (
        "apiservicedefinitions",
        Struct(&[
            ("owned", List(&API_SERVICE_DESCRIPTION)),
            ("required", List(&API_SERVICE_DESCRIPTION)),
        ]),
    ),
    ("webhookdefinitions", List(&WEBHOOK_DESCRIPTION)),
    (
        "nativeAPIs",
        List(&Struct(&[("group", Any), ("version", Any), ("kind", Any)])),
    ),
    ("minKubeVersion", Any),
    ("displayName", Any),
    ("description", Any),
    ("keywords", Any),
    (
        "maintainers",
        List(&Struct(&[("name", Any), ("email", Any)])),
    ),
    ("provider", APP_LINK),
    ("links", List(&APP_LINK)),
    (
        "icon",
        List(&Struct(&[("base64data", Any), ("mediatype", Any)])),
    ),
    (
        "installModes",
        List(&Struct(&[("type", Any), ("supported", Any)])),
    ),
    ("replaces", Any),
    ("labels", Any),
    ("annotations", Any),
    ("selector", LABEL_SELECTOR),
    ("cleanup", Struct(&[("enabled", Any)])),
    ("skips", Any),
    (
        "relatedImages",
        List(&Struct(&[("name", Any), ("image", Any)])),
    ),
    ("release", Any),
]);

/// `v1alpha1.ClusterServiceVersion` (operator-framework/api), with its inline TypeMeta.
pub const CSV: Shape = Struct(&[
    ("kind", Any),
    ("apiVersion", Any),
    ("metadata", OBJECT_META),
    ("spec", CSV_SPEC),
    ("status", Any),
]);

/// The metadata files as operator-registry decodes them: `AnnotationsFile`,
/// `DependenciesFile` (with the typed values of olm.package, olm.gvk and olm.label) and the
/// properties file. One document is tried as each; a key matches one of the three roots.
pub const METADATA: Shape = Struct(&[
    ("annotations", Any),
    (
        "dependencies",
        List(&Struct(&[
            ("type", Any),
            (
                "value",
                Struct(&[
                    ("packageName", Any),
                    ("version", Any),
                    ("group", Any),
                    ("kind", Any),
                    ("label", Any),
                ]),
            ),
        ])),
    ),
    (
        "properties",
        List(&Struct(&[("type", Any), ("value", Any)])),
    ),
]);

/// A key renamed to its field's spelling.
#[derive(Debug, Clone)]
pub struct Renamed {
    /// The key as written.
    pub key: String,
    /// The field's spelling.
    pub field: &'static str,
    /// Dotted path of the field (`spec.minKubeVersion`).
    pub path: String,
    /// Where the key as written starts.
    pub origin: Origin,
    /// Whether the exact spelling was given too; which value is used then is
    /// [`Renamed::kept`].
    pub both: bool,
    /// With `both`: whether this key's value is the one used (it sorts after the exact
    /// spelling, as sigs.k8s.io/yaml hands keys to encoding/json sorted).
    pub kept: bool,
}

/// Go's `encoding/json` case folding of field names: ASCII letters compare without case, other
/// characters by their upper case (so `ſ` matches `s`).
pub fn fold_eq(a: &str, b: &str) -> bool {
    let up = |c: char| {
        if c.is_ascii() {
            c.to_ascii_uppercase()
        } else {
            let mut u = c.to_uppercase();
            match (u.next(), u.next()) {
                (Some(x), None) => x,
                _ => c,
            }
        }
    };
    a.chars().map(up).eq(b.chars().map(up))
}

/// The field a key decodes into, when it is not spelled like it.
fn refolded(
    fields: &'static [(&'static str, Shape)],
    key: &str,
) -> Option<&'static (&'static str, Shape)> {
    if fields.iter().any(|(n, _)| *n == key) {
        return None;
    }
    fields.iter().find(|(n, _)| fold_eq(n, key))
}

/// Whether any key under `value` needs renaming (the common case, no allocation, is no).
fn needs(value: &Value, shape: &'static Shape) -> bool {
    match (shape, value) {
        (Struct(fields), Value::Object(map)) => {
            map.iter()
                .any(|(k, v)| match fields.iter().find(|(n, _)| *n == k) {
                    Some((_, sub)) => needs(v, sub),
                    None => refolded(fields, k).is_some(),
                })
        }
        (List(sub), Value::Array(items)) => items.iter().any(|v| needs(v, sub)),
        (Map(sub), Value::Object(map)) => map.values().any(|v| needs(v, sub)),
        _ => false,
    }
}

/// Renames, in `doc`, every key that Go's decoder takes for a field of `shape` spelt otherwise.
/// `text` is the file's text, to point at the key itself.
pub fn normalize(doc: &mut Document, shape: &'static Shape, text: &str) -> Vec<Renamed> {
    let mut out = Vec::new();
    if needs(&doc.value, shape) {
        walk(doc, String::new(), String::new(), shape, text, &mut out);
    }
    out
}

/// [`normalize`] over one file's documents: in manifests/, the ClusterServiceVersion (found by
/// its exact `kind`, as the reference finds it: a `Kind:` key hides the CSV there too); in
/// metadata/, every document.
pub fn normalize_file(docs: &mut [Document], manifest: bool, text: &str) -> Vec<Renamed> {
    let mut out = Vec::new();
    for doc in docs {
        if !manifest {
            out.extend(normalize(doc, &METADATA, text));
        } else if doc.value.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion") {
            out.extend(normalize(doc, &CSV, text));
        }
    }
    out
}

fn walk(
    doc: &mut Document,
    ptr: String,
    path: String,
    shape: &'static Shape,
    text: &str,
    out: &mut Vec<Renamed>,
) {
    let join = |path: &str, key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match shape {
        Struct(fields) => {
            let keys: Vec<String> = match doc.value.pointer(&ptr) {
                Some(Value::Object(m)) => m.keys().cloned().collect(),
                _ => return,
            };
            for k in keys {
                let (name, sub) = match fields.iter().find(|(n, _)| *n == k) {
                    Some((n, sub)) => (*n, sub),
                    None => match refolded(fields, &k) {
                        Some((n, sub)) => {
                            let key_ptr = format!("{ptr}/{}", yaml::escape_pointer_token(&k));
                            let origin = key_origin(&doc.origin(&key_ptr), &k, text);
                            let both = doc
                                .value
                                .pointer(&ptr)
                                .and_then(Value::as_object)
                                .is_some_and(|m| m.contains_key(*n));
                            // sigs.k8s.io/yaml reads YAML into a Go map and hands it to
                            // encoding/json as JSON with sorted keys, so of two spellings the
                            // one that sorts last (by bytes) is decoded last and wins.
                            if !doc.rename_key(&ptr, &k, n, k.as_str() > *n) {
                                continue;
                            }
                            out.push(Renamed {
                                key: k.clone(),
                                field: n,
                                path: join(&path, n),
                                origin,
                                both,
                                kept: !both || k.as_str() > *n,
                            });
                            (*n, sub)
                        }
                        None => continue,
                    },
                };
                if matches!(sub, Any) {
                    continue;
                }
                let child = format!("{ptr}/{}", yaml::escape_pointer_token(name));
                if doc.value.pointer(&child).is_some_and(|v| needs(v, sub)) {
                    walk(doc, child, join(&path, name), sub, text, out);
                }
            }
        }
        List(sub) => {
            let n = doc
                .value
                .pointer(&ptr)
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            for i in 0..n {
                let child = format!("{ptr}/{i}");
                if doc.value.pointer(&child).is_some_and(|v| needs(v, sub)) {
                    walk(doc, child, format!("{path}[{i}]"), sub, text, out);
                }
            }
        }
        Map(sub) => {
            let keys: Vec<String> = match doc.value.pointer(&ptr) {
                Some(Value::Object(m)) => m.keys().cloned().collect(),
                _ => return,
            };
            for k in keys {
                let child = format!("{ptr}/{}", yaml::escape_pointer_token(&k));
                if doc.value.pointer(&child).is_some_and(|v| needs(v, sub)) {
                    walk(doc, child, join(&path, &k), sub, text, out);
                }
            }
        }
        Any => {}
    }
}

/// Where the key `key` whose value starts at `value` is written: the last occurrence of the
/// key followed by `:` (after an optional closing quote) before the value. Falls back to the
/// value's position.
fn key_origin(value: &Origin, key: &str, text: &str) -> Origin {
    let Some(end) = offset_of(text, value.pos) else {
        return value.clone();
    };
    let mut hay = &text[..end];
    while let Some(at) = hay.rfind(key) {
        let rest = text[at + key.len()..end].trim_start_matches(['"', '\'']);
        if rest.trim_start_matches([' ', '\t']).starts_with(':') {
            let before = &text[..at];
            let line = before.matches('\n').count() + 1;
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let col = text[line_start..at].chars().count() + 1;
            return Origin {
                file: value.file.clone(),
                pos: Pos {
                    line: u32::try_from(line).unwrap_or(0),
                    col: u32::try_from(col).unwrap_or(0),
                },
            };
        }
        hay = &hay[..at];
    }
    value.clone()
}

/// The byte offset of a 1-based line and column (columns count characters).
fn offset_of(text: &str, pos: Pos) -> Option<usize> {
    if pos.line == 0 {
        return None;
    }
    let mut start = 0;
    for _ in 1..pos.line {
        start += text[start..].find('\n')? + 1;
    }
    let line = &text[start..];
    let col = line
        .char_indices()
        .nth(pos.col.saturating_sub(1) as usize)
        .map_or(line.len(), |(i, _)| i);
    Some(start + col)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn folds_like_go() {
        assert!(fold_eq("apiVersion", "ApiVersion"));
        assert!(fold_eq("apiVersion", "APIVERSION"));
        assert!(fold_eq("spec", "ſpec"));
        assert!(!fold_eq("spec", "specs"));
        assert!(!fold_eq("api_version", "apiVersion"));
    }

    #[test]
    fn renames_with_positions_and_key_lines() {
        let text = "ApiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n\
                    metadata:\n  name: x\nSpec:\n  MinKubeVersion: 1.20.0\n  installModes:\n  \
                    - Type: OwnNamespace\n    supported: true\n  labels:\n    Name: kept\n";
        let mut doc = yaml::parse_one(text, Path::new("csv.yaml")).unwrap();
        let r = normalize(&mut doc, &CSV, text);
        let got: Vec<(String, &str, String, u32, u32)> = r
            .iter()
            .map(|r| {
                (
                    r.key.clone(),
                    r.field,
                    r.path.clone(),
                    r.origin.pos.line,
                    r.origin.pos.col,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("ApiVersion".into(), "apiVersion", "apiVersion".into(), 1, 1),
                ("Spec".into(), "spec", "spec".into(), 5, 1),
                (
                    "MinKubeVersion".into(),
                    "minKubeVersion",
                    "spec.minKubeVersion".into(),
                    6,
                    3
                ),
                (
                    "Type".into(),
                    "type",
                    "spec.installModes[0].type".into(),
                    8,
                    5
                ),
            ]
        );
        assert_eq!(doc.value["apiVersion"], "operators.coreos.com/v1alpha1");
        assert_eq!(doc.value["spec"]["minKubeVersion"], "1.20.0");
        // Map keys stay as written; key order is kept.
        assert_eq!(doc.value["spec"]["labels"]["Name"], "kept");
        let keys: Vec<&String> = doc.value.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["apiVersion", "kind", "metadata", "spec"]);
        // Positions moved with the keys.
        assert_eq!(doc.origin("/spec/minKubeVersion").pos.line, 6);
        assert_eq!(doc.origin("/spec/installModes/0/type").pos.line, 8);
        assert_eq!(doc.origin("/spec/labels/Name").pos.line, 11);
    }

    #[test]
    fn of_two_spellings_the_last_in_byte_order_wins() {
        // `Version` < `version`: the exact spelling wins wherever it is written.
        for text in [
            "spec:\n  version: 1.0.0\n  Version: 2.0.0\n",
            "spec:\n  Version: 2.0.0\n  version: 1.0.0\n",
        ] {
            let mut doc = yaml::parse_one(text, Path::new("a.yaml")).unwrap();
            let r = normalize(&mut doc, &CSV, text);
            assert!(r[0].both && !r[0].kept);
            assert_eq!(doc.value["spec"]["version"], "1.0.0");
            assert_eq!(doc.value["spec"].as_object().unwrap().len(), 1);
            let line = if text.starts_with("spec:\n  v") { 2 } else { 3 };
            assert_eq!(doc.origin("/spec/version").pos.line, line);
        }
        // `ſpec` sorts after `spec` (U+017F): it wins.
        let text = "ſpec:\n  version: 2.0.0\nspec:\n  version: 1.0.0\n";
        let mut doc = yaml::parse_one(text, Path::new("a.yaml")).unwrap();
        let r = normalize(&mut doc, &CSV, text);
        assert!(r[0].both && r[0].kept);
        assert_eq!(doc.value["spec"]["version"], "2.0.0");
        assert_eq!(doc.origin("/spec/version").pos.line, 2);
    }
}

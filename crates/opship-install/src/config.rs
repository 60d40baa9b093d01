//! The inputs of a render besides the bundle: install namespace, watch namespace, certificate
//! provider, and the deployment config of an OLM v1 `ClusterExtension` (OLM v0's
//! `Subscription.spec.config`), read from YAML or JSON and checked key by key the way OLM v1's
//! config schema checks it, so a typo is an error naming its line rather than a silent no-op.

use std::path::Path;

use opship_core::yaml::{self, Document};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Who issues the webhook serving certificates (operator-controller's certificate providers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertProvider {
    /// cert-manager: a self-signed Issuer and a Certificate per webhook deployment, CA
    /// injection by `cert-manager.io/inject-ca-from`.
    CertManager,
    /// OpenShift's service CA operator: serving-cert and inject-cabundle annotations.
    OpenShiftServiceCa,
}

impl CertProvider {
    /// Parses `cert-manager` or `openshift-serviceca`.
    pub fn parse(s: &str) -> Option<CertProvider> {
        match s {
            "cert-manager" => Some(CertProvider::CertManager),
            "openshift-serviceca" | "openshift-service-ca" => {
                Some(CertProvider::OpenShiftServiceCa)
            }
            _ => None,
        }
    }

    /// The name used on the command line and in chart values.
    pub fn as_str(self) -> &'static str {
        match self {
            CertProvider::CertManager => "cert-manager",
            CertProvider::OpenShiftServiceCa => "openshift-serviceca",
        }
    }
}

/// What to render a bundle for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The namespace the operator is installed into.
    pub install_namespace: String,
    /// The namespace it watches: `Some("")` for all namespaces, `None` for the default
    /// ([`crate::default_watch_namespace`]).
    pub watch_namespace: Option<String>,
    /// Changes to every deployment of the CSV; `None` changes nothing.
    pub deployment_config: Option<DeploymentConfig>,
    /// Certificates for webhooks; `None` renders webhooks without any (as OLM v1 without a
    /// provider).
    pub cert_provider: Option<CertProvider>,
}

/// An OLM v1 deployment config. Each field is `None` when not given; a given empty value is
/// kept, since OLM gives some of them meaning (`affinity: {}` erases the pod's affinity,
/// `resources: {}` clears every container's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeploymentConfig {
    /// `nodeSelector`: replaces the pod's.
    pub node_selector: Option<Map<String, Value>>,
    /// `tolerations`: added unless already there.
    pub tolerations: Option<Vec<Value>>,
    /// `resources`: replaces every container's.
    pub resources: Option<Map<String, Value>>,
    /// `env`: per container, replaces a variable of the same name, else appended.
    pub env: Option<Vec<Value>>,
    /// `envFrom`: per container, added unless already there.
    pub env_from: Option<Vec<Value>>,
    /// `volumes`: replaces a volume of the same name, else appended.
    pub volumes: Option<Vec<Value>>,
    /// `volumeMounts`: per container, replaces a mount of the same name, else appended.
    pub volume_mounts: Option<Vec<Value>>,
    /// `affinity`: `{}` erases, each given part replaces (an empty part erases it).
    pub affinity: Option<Map<String, Value>>,
    /// `annotations`: added to the Deployment and its pod template where not set.
    pub annotations: Option<Map<String, Value>>,
}

/// The keys of a deployment config, as OLM v1 spells them.
pub const DEPLOYMENT_CONFIG_KEYS: &[&str] = &[
    "nodeSelector",
    "tolerations",
    "resources",
    "env",
    "envFrom",
    "volumes",
    "volumeMounts",
    "affinity",
    "annotations",
];

/// An inline `ClusterExtension` config file: `watchNamespace` and `deploymentConfig`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InlineConfig {
    /// `watchNamespace`, when given.
    pub watch_namespace: Option<String>,
    /// `deploymentConfig`, when given.
    pub deployment_config: Option<DeploymentConfig>,
}

impl InlineConfig {
    /// Reads an inline config file (YAML or JSON), refusing unknown keys and wrong types with
    /// the file and line.
    pub fn read(path: &Path) -> Result<InlineConfig> {
        let text = opship_core::yaml::read_text_of(path, opship_core::input::Kind::Config)?;
        InlineConfig::parse(&text, path)
    }

    /// Parses the text of an inline config file.
    pub fn parse(text: &str, path: &Path) -> Result<InlineConfig> {
        let doc = yaml::parse_one(text, path)?;
        let Value::Object(map) = &doc.value else {
            if doc.value.is_null() {
                return Ok(InlineConfig::default());
            }
            return Err(Error::config(
                doc.origin(""),
                "expected a mapping with `watchNamespace` and/or `deploymentConfig`",
            ));
        };
        let mut out = InlineConfig::default();
        for (key, value) in map {
            let ptr = format!("/{}", yaml::escape_pointer_token(key));
            match key.as_str() {
                "watchNamespace" => match value {
                    Value::String(s) => out.watch_namespace = Some(s.clone()),
                    Value::Null => {}
                    other => {
                        return Err(Error::config(
                            doc.origin(&ptr),
                            format!(
                                "`watchNamespace` must be a string, not {}",
                                yaml::kind_name(other)
                            ),
                        ));
                    }
                },
                "deploymentConfig" => {
                    out.deployment_config = Some(DeploymentConfig::from_value(&doc, &ptr)?);
                }
                other => {
                    return Err(Error::config(
                        doc.origin(&ptr),
                        format!(
                            "unknown key `{other}`; an OLM v1 inline config has `watchNamespace` and `deploymentConfig`"
                        ),
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// How one field of a Kubernetes type is checked: its JSON type and, for objects, its keys.
#[derive(Clone, Copy)]
enum Shape {
    String,
    Bool,
    Int,
    /// A string or an integer (`intstr`, and resource quantities).
    StringOrInt,
    /// A map from strings to strings.
    StringMap,
    /// A map from strings to `Shape`.
    MapOf(&'static Shape),
    /// An object with these fields; `required` must be present.
    Object(&'static [(&'static str, Shape)], &'static [&'static str]),
    /// Any object (nested Kubernetes types checked by the API server).
    AnyObject,
    /// A list of `Shape`.
    List(&'static Shape),
}

const STRING: Shape = Shape::String;
const QUANTITY_MAP: Shape = Shape::MapOf(&Shape::StringOrInt);
const KEY_REF: Shape = Shape::Object(
    &[
        ("name", Shape::String),
        ("key", Shape::String),
        ("optional", Shape::Bool),
    ],
    &["key"],
);
const LOCAL_REF: Shape = Shape::Object(&[("name", Shape::String), ("optional", Shape::Bool)], &[]);
const RESOURCES: Shape = Shape::Object(
    &[
        ("limits", QUANTITY_MAP),
        ("requests", QUANTITY_MAP),
        ("claims", Shape::List(&Shape::AnyObject)),
    ],
    &[],
);
const TOLERATION: Shape = Shape::Object(
    &[
        ("key", Shape::String),
        ("operator", Shape::String),
        ("value", Shape::String),
        ("effect", Shape::String),
        ("tolerationSeconds", Shape::Int),
    ],
    &[],
);
const ENV_VAR: Shape = Shape::Object(
    &[
        ("name", Shape::String),
        ("value", Shape::String),
        (
            "valueFrom",
            Shape::Object(
                &[
                    ("fieldRef", Shape::AnyObject),
                    ("resourceFieldRef", Shape::AnyObject),
                    ("configMapKeyRef", KEY_REF),
                    ("secretKeyRef", KEY_REF),
                    ("fileKeyRef", Shape::AnyObject),
                ],
                &[],
            ),
        ),
    ],
    &["name"],
);
const ENV_FROM: Shape = Shape::Object(
    &[
        ("prefix", Shape::String),
        ("configMapRef", LOCAL_REF),
        ("secretRef", LOCAL_REF),
    ],
    &[],
);
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];
const VOLUME_MOUNT: Shape = Shape::Object(
    &[
        ("name", Shape::String),
        ("mountPath", Shape::String),
        ("readOnly", Shape::Bool),
        ("recursiveReadOnly", Shape::String),
        ("subPath", Shape::String),
        ("mountPropagation", Shape::String),
        ("subPathExpr", Shape::String),
    ],
    &["name", "mountPath"],
);
const AFFINITY: Shape = Shape::Object(
    &[
        ("nodeAffinity", Shape::AnyObject),
        ("podAffinity", Shape::AnyObject),
        ("podAntiAffinity", Shape::AnyObject),
    ],
    &[],
);

fn check_shape(doc: &Document, ptr: &str, what: &str, v: &Value, shape: Shape) -> Result<()> {
    let wrong = |expected: &str| {
        Err(Error::config(
            doc.origin(ptr),
            format!("`{what}` must be {expected}, not {}", yaml::kind_name(v)),
        ))
    };
    match shape {
        Shape::String if !v.is_string() => wrong("a string"),
        Shape::Bool if !v.is_boolean() => wrong("a boolean"),
        Shape::Int if !(v.is_i64() || v.is_u64()) => wrong("an integer"),
        Shape::StringOrInt if !(v.is_string() || v.is_i64() || v.is_u64() || v.is_f64()) => {
            wrong("a string or a number")
        }
        Shape::StringMap | Shape::MapOf(_) | Shape::Object(..) | Shape::AnyObject
            if !v.is_object() =>
        {
            wrong("a mapping")
        }
        Shape::List(_) if !v.is_array() => wrong("a list"),
        Shape::StringMap => {
            for (k, item) in v.as_object().into_iter().flatten() {
                let p = format!("{ptr}/{}", yaml::escape_pointer_token(k));
                check_shape(doc, &p, &format!("{what}.{k}"), item, STRING)?;
            }
            Ok(())
        }
        Shape::MapOf(inner) => {
            for (k, item) in v.as_object().into_iter().flatten() {
                let p = format!("{ptr}/{}", yaml::escape_pointer_token(k));
                check_shape(doc, &p, &format!("{what}.{k}"), item, *inner)?;
            }
            Ok(())
        }
        Shape::Object(fields, required) => {
            let map = v.as_object().cloned().unwrap_or_default();
            for (k, item) in &map {
                let p = format!("{ptr}/{}", yaml::escape_pointer_token(k));
                let Some((_, field)) = fields.iter().find(|(f, _)| f == k) else {
                    return Err(Error::config(
                        doc.origin(&p),
                        format!(
                            "unknown key `{k}` in `{what}`; known keys: {}",
                            fields
                                .iter()
                                .map(|(f, _)| *f)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                };
                check_shape(doc, &p, &format!("{what}.{k}"), item, *field)?;
            }
            for r in required {
                if !map.contains_key(*r) {
                    return Err(Error::config(
                        doc.origin(ptr),
                        format!("`{what}` needs `{r}`"),
                    ));
                }
            }
            Ok(())
        }
        Shape::List(inner) => {
            for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                check_shape(
                    doc,
                    &format!("{ptr}/{i}"),
                    &format!("{what}[{i}]"),
                    item,
                    *inner,
                )?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_volume(doc: &Document, ptr: &str, what: &str, v: &Value) -> Result<()> {
    let Some(map) = v.as_object() else {
        return check_shape(doc, ptr, what, v, Shape::AnyObject);
    };
    let mut sources = 0;
    for (k, item) in map {
        let p = format!("{ptr}/{}", yaml::escape_pointer_token(k));
        if k == "name" {
            check_shape(doc, &p, &format!("{what}.name"), item, STRING)?;
        } else if VOLUME_SOURCES.contains(&k.as_str()) {
            check_shape(doc, &p, &format!("{what}.{k}"), item, Shape::AnyObject)?;
            sources += 1;
        } else {
            return Err(Error::config(
                doc.origin(&p),
                format!("unknown key `{k}` in `{what}`: not a volume source"),
            ));
        }
    }
    if !map.contains_key("name") {
        return Err(Error::config(
            doc.origin(ptr),
            format!("`{what}` needs `name`"),
        ));
    }
    if sources > 1 {
        return Err(Error::config(
            doc.origin(ptr),
            format!("`{what}` may have one volume source, it has {sources}"),
        ));
    }
    Ok(())
}

/// A value check failed at `ptr`: the error with its file and line.
fn bad(doc: &Document, ptr: &str, message: String) -> Error {
    Error::config(doc.origin(ptr), message)
}

fn str_at<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Why `q` is not a Kubernetes resource quantity (`resource.ParseQuantity`'s grammar: a
/// signed decimal number, then one of the suffixes `Ki`…`Ei`, `n u m k M G T P E` or an
/// exponent `e`/`E` with a signed integer), or a negative one as the API server refuses for
/// container resources.
pub fn quantity_problem(q: &str) -> Option<String> {
    let b = q.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let mut digits = i - int_start;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let frac = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        digits += i - frac;
    }
    let suffix = &q[i..];
    let suffix_ok = matches!(
        suffix,
        "" | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
            | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
    ) || suffix
        .strip_prefix(['e', 'E'])
        .map(|e| e.strip_prefix(['+', '-']).unwrap_or(e))
        .is_some_and(|e| !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit()));
    if digits == 0 || !suffix_ok {
        return Some(
            "quantities must match the regular expression              '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                .into(),
        );
    }
    let negative = q.starts_with('-') && q[1..i].bytes().any(|c| c.is_ascii_digit() && c != b'0');
    negative.then(|| "must be greater than or equal to 0".into())
}

/// Why `name` is not an environment variable name the API server accepts (printable ASCII
/// other than `=`, not empty: its rule since `RelaxedEnvironmentVariableValidation`).
pub fn env_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("must not be empty".into());
    }
    name.bytes()
        .any(|c| !(32..=126).contains(&c) || c == b'=')
        .then(|| {
            "a valid environment variable name must consist only of printable ASCII characters \
         other than '='"
                .into()
        })
}

/// Whether `name` is a resource a container may ask for: `cpu`, `memory`,
/// `ephemeral-storage`, `hugepages-<size>`, or one qualified with a domain (`nvidia.com/gpu`).
fn resource_name_problem(name: &str) -> Option<String> {
    if matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-") {
        return None;
    }
    if !name.contains('/') {
        return Some("must be a standard resource for containers".into());
    }
    opship_core::naming::qualified_name_problem(name)
}

/// Checks the values of a deployment config key as the API server (and OLM v1, which applies
/// them to the operator's Deployment) would: a value that passes the schema but that the
/// server refuses is an error here, with its line, instead of a rendered manifest that fails
/// to apply.
fn check_values(doc: &Document, ptr: &str, key: &str, value: &Value) -> Result<()> {
    let at = |parts: &[&str]| -> String {
        parts.iter().fold(ptr.to_owned(), |p, t| {
            format!("{p}/{}", yaml::escape_pointer_token(t))
        })
    };
    let items = value.as_array().map(Vec::as_slice).unwrap_or_default();
    match key {
        "nodeSelector" | "annotations" => {
            for (k, v) in value.as_object().into_iter().flatten() {
                let spelled = if key == "annotations" {
                    k.to_lowercase()
                } else {
                    k.clone()
                };
                if let Some(p) = opship_core::naming::qualified_name_problem(&spelled) {
                    return Err(bad(doc, &at(&[k]), format!("`{key}` key {k:?}: {p}")));
                }
                if key == "nodeSelector"
                    && let Some(p) =
                        opship_core::naming::label_value_problem(v.as_str().unwrap_or_default())
                {
                    return Err(bad(doc, &at(&[k]), format!("`{key}.{k}`: {p}")));
                }
            }
        }
        "resources" => {
            for part in ["limits", "requests"] {
                for (name, q) in value
                    .get(part)
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    let p = at(&[part, name]);
                    if let Some(e) = resource_name_problem(name) {
                        return Err(bad(doc, &p, format!("`resources.{part}` {name:?}: {e}")));
                    }
                    let problem = match q {
                        Value::String(s) => quantity_problem(s),
                        Value::Number(n) if n.as_f64().is_some_and(|f| f < 0.0) => {
                            Some("must be greater than or equal to 0".into())
                        }
                        _ => None,
                    };
                    if let Some(e) = problem {
                        return Err(bad(doc, &p, format!("`resources.{part}.{name}` {q}: {e}")));
                    }
                }
            }
        }
        "tolerations" => {
            for (i, t) in items.iter().enumerate() {
                let i = i.to_string();
                let (k, op) = (str_at(t, "key"), str_at(t, "operator"));
                let (val, effect) = (str_at(t, "value"), str_at(t, "effect"));
                let w = format!("tolerations[{i}]");
                if !matches!(op, "" | "Equal" | "Exists") {
                    return Err(bad(
                        doc,
                        &at(&[&i, "operator"]),
                        format!("`{w}.operator` {op:?}: supported values: \"Equal\", \"Exists\""),
                    ));
                }
                if k.is_empty() && op != "Exists" {
                    return Err(bad(
                        doc,
                        &at(&[&i]),
                        format!(
                            "`{w}.operator` must be Exists when `key` is empty, which means \"match all values and all keys\""
                        ),
                    ));
                }
                if let Some(p) = (!k.is_empty())
                    .then(|| opship_core::naming::qualified_name_problem(k))
                    .flatten()
                {
                    return Err(bad(doc, &at(&[&i, "key"]), format!("`{w}.key` {k:?}: {p}")));
                }
                if op == "Exists" && !val.is_empty() {
                    return Err(bad(
                        doc,
                        &at(&[&i, "value"]),
                        format!("`{w}.value` must be empty when `operator` is 'Exists'"),
                    ));
                }
                if let Some(p) = opship_core::naming::label_value_problem(val) {
                    return Err(bad(doc, &at(&[&i, "value"]), format!("`{w}.value`: {p}")));
                }
                if !matches!(effect, "" | "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                    return Err(bad(
                        doc,
                        &at(&[&i, "effect"]),
                        format!(
                            "`{w}.effect` {effect:?}: supported values: \"NoExecute\", \"NoSchedule\", \"PreferNoSchedule\""
                        ),
                    ));
                }
                if t.get("tolerationSeconds").is_some_and(|s| !s.is_null()) && effect != "NoExecute"
                {
                    return Err(bad(
                        doc,
                        &at(&[&i, "effect"]),
                        format!("`{w}.effect` must be 'NoExecute' when `tolerationSeconds` is set"),
                    ));
                }
            }
        }
        "env" => {
            for (i, e) in items.iter().enumerate() {
                let i = i.to_string();
                let name = str_at(e, "name");
                if let Some(p) = env_name_problem(name) {
                    return Err(bad(
                        doc,
                        &at(&[&i, "name"]),
                        format!("`env[{i}].name` {name:?}: {p}"),
                    ));
                }
                let Some(from) = e.get("valueFrom").and_then(Value::as_object) else {
                    continue;
                };
                if !str_at(e, "value").is_empty() {
                    return Err(bad(
                        doc,
                        &at(&[&i, "valueFrom"]),
                        format!(
                            "`env[{i}].valueFrom` may not be specified when `value` is not empty"
                        ),
                    ));
                }
                let sources = from.values().filter(|v| !v.is_null()).count();
                if sources != 1 {
                    return Err(bad(
                        doc,
                        &at(&[&i, "valueFrom"]),
                        format!(
                            "`env[{i}].valueFrom` must specify exactly one source (`fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`), it has {sources}"
                        ),
                    ));
                }
            }
        }
        "envFrom" => {
            for (i, e) in items.iter().enumerate() {
                let i = i.to_string();
                let prefix = str_at(e, "prefix");
                if let Some(p) = (!prefix.is_empty())
                    .then(|| env_name_problem(prefix))
                    .flatten()
                {
                    return Err(bad(
                        doc,
                        &at(&[&i, "prefix"]),
                        format!("`envFrom[{i}].prefix` {prefix:?}: {p}"),
                    ));
                }
                let refs = ["configMapRef", "secretRef"]
                    .iter()
                    .filter(|r| e.get(**r).is_some_and(|v| !v.is_null()))
                    .count();
                // An entry with neither source (only a `prefix`) is rendered by OLM v1 as is
                // (its deploymentConfig scenario has one), so only two sources are refused.
                if refs > 1 {
                    return Err(bad(
                        doc,
                        &at(&[&i]),
                        format!(
                            "`envFrom[{i}]` has both `configMapRef` and `secretRef`; one entry \
                             names one source"
                        ),
                    ));
                }
            }
        }
        "volumes" => {
            let mut names = std::collections::BTreeSet::new();
            for (i, v) in items.iter().enumerate() {
                let i = i.to_string();
                let name = str_at(v, "name");
                if !opship_core::config::is_dns1123_label(name) {
                    return Err(bad(
                        doc,
                        &at(&[&i, "name"]),
                        format!(
                            "`volumes[{i}].name` {name:?} is not a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)"
                        ),
                    ));
                }
                if !names.insert(name) {
                    return Err(bad(
                        doc,
                        &at(&[&i, "name"]),
                        format!("`volumes[{i}].name` {name:?} is given twice"),
                    ));
                }
            }
        }
        "volumeMounts" => {
            let mut paths = std::collections::BTreeSet::new();
            for (i, m) in items.iter().enumerate() {
                let i = i.to_string();
                let w = format!("volumeMounts[{i}]");
                if str_at(m, "name").is_empty() {
                    return Err(bad(doc, &at(&[&i, "name"]), format!("`{w}.name` is empty")));
                }
                let path = str_at(m, "mountPath");
                if path.is_empty() {
                    return Err(bad(
                        doc,
                        &at(&[&i, "mountPath"]),
                        format!("`{w}.mountPath` is empty"),
                    ));
                }
                if !paths.insert(path) {
                    return Err(bad(
                        doc,
                        &at(&[&i, "mountPath"]),
                        format!("`{w}.mountPath` {path:?} must be unique"),
                    ));
                }
                let sub = str_at(m, "subPath");
                if !sub.is_empty() && !str_at(m, "subPathExpr").is_empty() {
                    return Err(bad(
                        doc,
                        &at(&[&i, "subPathExpr"]),
                        format!("`{w}`: subPathExpr and subPath are mutually exclusive"),
                    ));
                }
                for (field, p) in [("subPath", sub), ("subPathExpr", str_at(m, "subPathExpr"))] {
                    if p.starts_with('/') {
                        return Err(bad(
                            doc,
                            &at(&[&i, field]),
                            format!("`{w}.{field}` {p:?} must be a relative path"),
                        ));
                    }
                    if p.split('/').any(|c| c == "..") {
                        return Err(bad(
                            doc,
                            &at(&[&i, field]),
                            format!("`{w}.{field}` {p:?} must not contain '..'"),
                        ));
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

impl DeploymentConfig {
    /// Reads and checks the deployment config at `ptr` of `doc`.
    pub fn from_value(doc: &Document, ptr: &str) -> Result<DeploymentConfig> {
        let v = doc.value.pointer(ptr).cloned().unwrap_or(Value::Null);
        let mut out = DeploymentConfig::default();
        let map = match v {
            Value::Null => return Ok(out),
            Value::Object(m) => m,
            other => {
                return Err(Error::config(
                    doc.origin(ptr),
                    format!(
                        "`deploymentConfig` must be a mapping, not {}",
                        yaml::kind_name(&other)
                    ),
                ));
            }
        };
        for (key, value) in map {
            let p = format!("{ptr}/{}", yaml::escape_pointer_token(&key));
            let what = key.as_str();
            if value.is_null() {
                continue;
            }
            let list = |shape: &'static Shape| -> Result<Option<Vec<Value>>> {
                check_shape(doc, &p, what, &value, Shape::List(shape))?;
                Ok(value.as_array().cloned())
            };
            match what {
                "nodeSelector" | "annotations" => {
                    check_shape(doc, &p, what, &value, Shape::StringMap)?;
                    let m = value.as_object().cloned();
                    if what == "nodeSelector" {
                        out.node_selector = m;
                    } else {
                        out.annotations = m;
                    }
                }
                "resources" => {
                    check_shape(doc, &p, what, &value, RESOURCES)?;
                    out.resources = value.as_object().cloned();
                }
                "affinity" => {
                    check_shape(doc, &p, what, &value, AFFINITY)?;
                    out.affinity = value.as_object().cloned();
                }
                "tolerations" => out.tolerations = list(&TOLERATION)?,
                "env" => out.env = list(&ENV_VAR)?,
                "envFrom" => out.env_from = list(&ENV_FROM)?,
                "volumeMounts" => out.volume_mounts = list(&VOLUME_MOUNT)?,
                "volumes" => {
                    check_shape(doc, &p, what, &value, Shape::List(&Shape::AnyObject))?;
                    for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                        check_volume(doc, &format!("{p}/{i}"), &format!("volumes[{i}]"), item)?;
                    }
                    out.volumes = value.as_array().cloned();
                }
                other => {
                    return Err(Error::config(
                        doc.origin(&p),
                        format!(
                            "unknown key `{other}` in `deploymentConfig`; known keys: {}",
                            DEPLOYMENT_CONFIG_KEYS.join(", ")
                        ),
                    ));
                }
            }
            check_values(doc, &p, what, &value)?;
        }
        Ok(out)
    }

    /// Reads a deployment config given as a JSON value (chart values), with `origin` for
    /// errors.
    pub fn from_json(value: &Value, origin: &Path) -> Result<DeploymentConfig> {
        let doc = Document::detached(serde_json::json!({ "deploymentConfig": value }), origin);
        DeploymentConfig::from_value(&doc, "/deploymentConfig")
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == DeploymentConfig::default()
    }
}

/// Checks that `ns` can name a namespace (a DNS-1123 label), for the message of `what`.
pub fn check_namespace(ns: &str, what: &str) -> Result<()> {
    if !opship_core::config::is_dns1123_label(ns) {
        return Err(Error::Invalid(format!(
            "{what} `{ns}` is not a namespace name: lower-case letters, digits and `-`, starting and ending with a letter or digit, at most 63 characters"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(deployment_config: &str) -> String {
        let text = format!("watchNamespace: ''\ndeploymentConfig:\n{deployment_config}");
        InlineConfig::parse(&text, Path::new("c.yaml"))
            .map(|_| ())
            .unwrap_err()
            .to_string()
    }

    /// Values the schema lets through but the API server refuses (issue 28): each an error
    /// with the file and the line of the value.
    #[test]
    fn values_are_checked_as_the_api_server_would() {
        for (config, line, says) in [
            (
                "  resources:\n    limits:\n      cpu: abc\n",
                5,
                "quantities must match",
            ),
            (
                "  resources:\n    requests:\n      memory: -1Gi\n",
                5,
                "greater than or equal to 0",
            ),
            (
                "  resources:\n    requests:\n      gpu: 1\n",
                5,
                "standard resource",
            ),
            ("  env:\n  - name: A=B\n    value: x\n", 4, "other than '='"),
            (
                "  env:\n  - name: \"A\\nB\"\n    value: x\n",
                4,
                "printable ASCII",
            ),
            (
                "  env:\n  - name: ''\n    value: x\n",
                4,
                "must not be empty",
            ),
            (
                "  env:\n  - name: A\n    value: x\n    valueFrom:\n      fieldRef: {fieldPath: metadata.name}\n",
                7,
                "may not be specified when `value` is not empty",
            ),
            (
                "  tolerations:\n  - key: k\n    operator: Bogus\n",
                5,
                "\"Equal\", \"Exists\"",
            ),
            (
                "  tolerations:\n  - operator: Equal\n    value: v\n",
                4,
                "must be Exists when `key` is empty",
            ),
            (
                "  tolerations:\n  - key: k\n    effect: NoSchedule\n    tolerationSeconds: 5\n",
                5,
                "NoExecute",
            ),
            (
                "  nodeSelector:\n    \"bad key!\": x\n",
                4,
                "name part must consist",
            ),
            ("  annotations:\n    a/b/c: x\n", 4, "at most one '/'"),
            (
                "  volumes:\n  - name: ../X\n    emptyDir: {}\n",
                4,
                "DNS-1123 label",
            ),
            (
                "  volumeMounts:\n  - name: v\n    mountPath: ''\n",
                5,
                "mountPath` is empty",
            ),
            (
                "  volumeMounts:\n  - name: v\n    mountPath: /a\n    subPath: ../x\n",
                6,
                "must not contain '..'",
            ),
        ] {
            let err = refused(config);
            assert!(
                err.contains(&format!("c.yaml:{line}:")) && err.contains(says),
                "{config}: {err}"
            );
        }
    }

    #[test]
    fn good_values_pass() {
        let text = "deploymentConfig:\n  resources:\n    limits: {cpu: 500m, memory: 1.5Gi, nvidia.com/gpu: 1, ephemeral-storage: 1e3}\n    requests: {cpu: '0.25', memory: 128974848}\n  env:\n  - {name: LOG_LEVEL, value: debug}\n  - name: POD\n    value: ''\n    valueFrom: {fieldRef: {fieldPath: metadata.name}}\n  - {name: my.var-1}\n  tolerations:\n  - {operator: Exists}\n  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}\n  - {key: k, value: v, effect: NoSchedule}\n  nodeSelector: {kubernetes.io/os: linux}\n  annotations: {example.com/Note: x}\n  volumes:\n  - {name: certs, emptyDir: {}}\n  volumeMounts:\n  - {name: certs, mountPath: /certs, subPath: a/b}\n";
        let c = InlineConfig::parse(text, Path::new("c.yaml")).unwrap();
        assert!(c.deployment_config.is_some_and(|d| !d.is_empty()));
        for q in [
            "1", "+1", "0.5", ".5", "5.", "1e-3", "1E+9", "100Mi", "2Ei", "10n", "-0",
        ] {
            assert_eq!(quantity_problem(q), None, "{q}");
        }
        for q in ["", "abc", "1.2.3", "1Z", "1KB", "e3", "1e", "-1"] {
            assert!(quantity_problem(q).is_some(), "{q}");
        }
    }
}

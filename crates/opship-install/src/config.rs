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

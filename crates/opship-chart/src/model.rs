//! What a chart is made of besides OLM v1's objects (those come from [`crate::olm`]):
//! Chart.yaml metadata from the CSV, the operator's deployment and container (which `image`
//! and `replicas` apply to), and the Handlebars context of the remaining templates. The
//! bundle's objects as the CSV describes them (deployments, RBAC per permission entry, CRDs,
//! webhook wiring) are still computed here for the kustomize overlays (`overlay`), which keep
//! the bundle's own layout.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use opship_core::manifest::Object;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::values;

/// Written into the context where a value must become `{{ .Release.Namespace }}` in the Helm
/// template; the `yaml` helper turns it into the Helm expression after escaping the data. A
/// bundle whose strings contain it gets this with a number appended ([`Model::release_namespace`]),
/// so no bundle string is ever taken for it.
pub const RELEASE_NAMESPACE: &str = "__OPSHIP_RELEASE_NAMESPACE__";

/// The release namespace stand-in for `bundle`: [`RELEASE_NAMESPACE`], or the first numbered
/// variant that no key or string of the bundle contains.
fn namespace_stand_in(bundle: &Bundle) -> String {
    let texts: Vec<String> = std::iter::once(&bundle.csv)
        .chain(&bundle.objects)
        .map(|o| o.value().to_string())
        .collect();
    let mut candidate = RELEASE_NAMESPACE.to_owned();
    let mut n = 0;
    while texts.iter().any(|t| t.contains(&candidate)) {
        n += 1;
        candidate = format!("__OPSHIP_RELEASE_NAMESPACE_{n}__");
    }
    candidate
}

/// Where CRDs go in the chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrdPlacement {
    /// `templates/crds/`, behind `crd.enabled`, kept on uninstall when `crd.keep` (upgraded
    /// with the release).
    #[default]
    Templates,
    /// Helm's `crds/` directory: installed on first install only, never upgraded or deleted.
    CrdsDir,
}

impl CrdPlacement {
    /// Parses the config value (`templates` or `crds`).
    pub fn parse(s: &str) -> Option<CrdPlacement> {
        match s {
            "templates" => Some(CrdPlacement::Templates),
            "crds" => Some(CrdPlacement::CrdsDir),
            _ => None,
        }
    }
}

/// Chart settings that do not come from the bundle.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Chart name (default: the bundle's package name).
    pub name: Option<String>,
    /// Where CRDs go.
    pub crds: CrdPlacement,
}

/// A registry+v1 bundle read from disk (opship-install's, which the OLM objects come from).
pub use opship_install::Bundle;

/// Reads `manifests/` (and the package name from `metadata/`) of a bundle directory, through
/// `opship_core::input` (see [`opship_install::load`]).
pub fn load_bundle(dir: &Path) -> Result<Bundle> {
    Ok(opship_install::load(dir)?)
}

/// Kinds that are not namespaced; every other object is put into the release namespace.
const CLUSTER_SCOPED: &[&str] = &[
    "APIService",
    "ClusterIssuer",
    "ClusterRole",
    "ClusterRoleBinding",
    "ConsoleCLIDownload",
    "ConsoleLink",
    "ConsolePlugin",
    "ConsoleQuickStart",
    "ConsoleYAMLSample",
    "CSIDriver",
    "CustomResourceDefinition",
    "MutatingWebhookConfiguration",
    "Namespace",
    "PersistentVolume",
    "PriorityClass",
    "SecurityContextConstraints",
    "StorageClass",
    "ValidatingWebhookConfiguration",
    "VolumeSnapshotClass",
];

/// Whether objects of `kind` live in a namespace.
pub fn is_namespaced(kind: &str) -> bool {
    !CLUSTER_SCOPED.contains(&kind)
}

/// Splits an image reference into repository, tag and digest (tag and digest may be empty).
pub fn split_image(image: &str) -> (String, String, String) {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, d.to_owned()),
        None => (image, String::new()),
    };
    let slash = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
    match rest[slash..].rfind(':') {
        Some(i) => (
            rest[..slash + i].to_owned(),
            rest[slash + i + 1..].to_owned(),
            digest,
        ),
        None => (rest.to_owned(), String::new(), digest),
    }
}

fn str_of<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn without(v: &Value, keys: &[&str]) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => json!({}),
    }
}

/// Go's `url.ParseRequestURI` as far as Helm's lint uses it: an absolute `http(s)` URL with a
/// host and no spaces.
fn is_url(s: &str) -> bool {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"));
    rest.is_some_and(|r| {
        !r.is_empty() && !r.starts_with('/') && !s.chars().any(|c| c.is_whitespace() || c == '"')
    })
}

/// An e-mail address that Go's `net/mail.ParseAddress` accepts (the subset real CSVs use).
fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let ok = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && !p.ends_with('.')
            && !p.contains("..")
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c))
    };
    ok(local) && ok(domain) && !domain.contains('@')
}

/// The chart version: the CSV's `spec.version` (SemVer; a leading `v` dropped).
fn chart_version(csv: &Object) -> Result<semver::Version> {
    let v = csv.value()["spec"]["version"].as_str().unwrap_or_default();
    let v = v.strip_prefix('v').unwrap_or(v);
    semver::Version::parse(v).map_err(|e| {
        Error::Core(csv.error(
            "/spec/version",
            format!("`{v}` is not a SemVer version, so it cannot be a chart version: {e}"),
        ))
    })
}

/// Chart.yaml metadata from the CSV.
fn chart_metadata(csv: &Object, name: &str, version: &semver::Version) -> Value {
    let v = csv.value();
    let spec = &v["spec"];
    let mut description = str_of(v, "/metadata/annotations/description").to_owned();
    if description.is_empty() {
        description = str_of(spec, "/displayName").to_owned();
    }
    if description.is_empty() {
        description = format!("Helm chart of the {name} operator");
    }
    let mut sources: Vec<String> = Vec::new();
    if let Some(links) = spec["links"].as_array() {
        for l in links {
            if let Some(u) = l["url"].as_str().map(str::trim)
                && is_url(u)
                && !sources.iter().any(|s| s == u)
            {
                sources.push(u.to_owned());
            }
        }
    }
    let repo = str_of(v, "/metadata/annotations/repository").trim();
    if is_url(repo) && !sources.iter().any(|s| s == repo) {
        sources.insert(0, repo.to_owned());
    }
    let provider_url = str_of(spec, "/provider/url").trim();
    let home = if is_url(provider_url) {
        Some(provider_url.to_owned())
    } else {
        sources.first().cloned()
    };
    let keywords: Vec<String> = spec["keywords"]
        .as_array()
        .map(|k| {
            k.iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let maintainers: Vec<Value> = spec["maintainers"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter_map(|m| {
                    let name = m["name"].as_str()?.trim();
                    if name.is_empty() {
                        return None;
                    }
                    let mut out = Map::new();
                    out.insert("name".into(), json!(name));
                    if let Some(e) = m["email"].as_str().map(str::trim)
                        && is_email(e)
                    {
                        out.insert("email".into(), json!(e));
                    }
                    Some(Value::Object(out))
                })
                .collect()
        })
        .unwrap_or_default();
    let min_kube = str_of(spec, "/minKubeVersion").trim();
    let kube_version = semver::Version::parse(min_kube.strip_prefix('v').unwrap_or(min_kube))
        .ok()
        .map(|k| format!(">= {}.{}.{}-0", k.major, k.minor, k.patch));
    let icon = icon_of(spec);
    let mut annotations = BTreeMap::new();
    annotations.insert("artifacthub.io/operator".to_owned(), "true".to_owned());
    let caps = str_of(v, "/metadata/annotations/capabilities");
    if !caps.is_empty() {
        annotations.insert(
            "artifacthub.io/operatorCapabilities".to_owned(),
            caps.to_owned(),
        );
    }
    annotations.insert("opship.io/csv".to_owned(), csv.name().to_owned());
    json!({
        "name": name,
        "version": version.to_string(),
        "appVersion": version.to_string(),
        "description": description.lines().next().unwrap_or("").trim(),
        "kubeVersion": kube_version,
        "home": home,
        "sources": sources,
        "keywords": keywords,
        "maintainers": maintainers,
        "annotations": annotations,
        "icon": icon,
    })
}

/// Icons up to this size (base64 characters) go into Chart.yaml as a `data:` URI; larger ones
/// are left out, since Chart.yaml is copied into every entry of a repository index.
pub const MAX_ICON_CHARS: usize = 16 * 1024;

/// The CSV's first icon as a `data:` URI (Helm's lint accepts it), when it is an image, valid
/// base64 and small enough.
fn icon_of(spec: &Value) -> Option<String> {
    let icon = spec["icon"].as_array()?.first()?;
    let media = icon["mediatype"].as_str()?.trim();
    let data: String = icon["base64data"]
        .as_str()?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let media_ok = media.starts_with("image/")
        && media
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/+-.".contains(c));
    let data_ok = !data.is_empty()
        && data.len() <= MAX_ICON_CHARS
        && data.len().is_multiple_of(4)
        && data
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c));
    (media_ok && data_ok).then(|| format!("data:{media};base64,{data}"))
}

/// Picks the operator's own deployment and container: the one running the CSV's
/// `containerImage`, else a container named `manager`, else the first one.
fn manager_of(csv: &Value, deployments: &[Value]) -> (usize, usize) {
    let image = str_of(csv, "/metadata/annotations/containerImage");
    let containers = |d: &Value| {
        d.pointer("/spec/template/spec/containers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    if !image.is_empty() {
        for (i, d) in deployments.iter().enumerate() {
            if let Some(j) = containers(d).iter().position(|c| c["image"] == image) {
                return (i, j);
            }
        }
    }
    for (i, d) in deployments.iter().enumerate() {
        if let Some(j) = containers(d).iter().position(|c| c["name"] == "manager") {
            return (i, j);
        }
    }
    (0, 0)
}

/// One webhook definition of the CSV with the names opship gives its objects.
fn webhook_context(csv: &Value, chart: &str, namespace: &str) -> Value {
    let defs = csv["spec"]["webhookdefinitions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if defs.is_empty() {
        return json!(null);
    }
    let mut services: BTreeMap<String, Value> = BTreeMap::new();
    let mut validating = Vec::new();
    let mut mutating = Vec::new();
    let mut conversion: BTreeMap<String, Value> = BTreeMap::new();
    for d in &defs {
        let dep = d["deploymentName"].as_str().unwrap_or_default().to_owned();
        let port = d["containerPort"].as_i64().unwrap_or(443);
        let target = d.get("targetPort").cloned().unwrap_or_else(|| json!(port));
        let service = format!("{dep}-service");
        let entry = services.entry(service.clone()).or_insert_with(|| {
            json!({
                "name": service,
                "deployment": dep,
                "ports": [],
                "certificate": format!("{dep}-serving-cert"),
                "secret": format!("{dep}-service-cert"),
                "dnsNames": [
                    format!("{service}.{namespace}.svc"),
                    format!("{service}.{namespace}.svc.cluster.local"),
                ],
            })
        });
        let ports = entry["ports"].as_array_mut().expect("ports is an array");
        if !ports.iter().any(|p| p["port"] == port) {
            ports.push(json!({"port": port, "targetPort": target}));
        }
        let client = json!({"service": {
            "name": service,
            "namespace": namespace,
            "path": d.get("webhookPath").cloned().unwrap_or(Value::Null),
            "port": port,
        }});
        let client = strip_nulls(client);
        let name = d["generateName"].as_str().unwrap_or_default();
        let mut hook = Map::new();
        hook.insert("name".into(), json!(name));
        hook.insert("clientConfig".into(), client.clone());
        for key in [
            "admissionReviewVersions",
            "sideEffects",
            "failurePolicy",
            "matchPolicy",
            "objectSelector",
            "rules",
            "timeoutSeconds",
        ] {
            if let Some(v) = d.get(key) {
                hook.insert(key.into(), v.clone());
            }
        }
        let kind = d["type"].as_str().unwrap_or_default();
        let config_name = name.trim_end_matches(['-', '.']);
        // Whole strings for the templates, so no name of the bundle is written into YAML
        // unquoted.
        let inject_ca_from = format!("{namespace}/{dep}-serving-cert");
        let item = json!({"name": config_name, "injectCaFrom": inject_ca_from, "webhooks": [Value::Object(hook.clone())]});
        match kind {
            "ValidatingAdmissionWebhook" => validating.push(item),
            "MutatingAdmissionWebhook" => {
                if let Some(v) = d.get("reinvocationPolicy") {
                    hook.insert("reinvocationPolicy".into(), v.clone());
                }
                mutating.push(json!({"name": config_name, "injectCaFrom": inject_ca_from, "webhooks": [Value::Object(hook)]}));
            }
            "ConversionWebhook" => {
                for crd in d["conversionCRDs"].as_array().into_iter().flatten() {
                    if let Some(crd) = crd.as_str() {
                        conversion.insert(
                            crd.to_owned(),
                            json!({
                                "injectCaFrom": inject_ca_from,
                                "conversion": {
                                    "strategy": "Webhook",
                                    "webhook": {
                                        "clientConfig": client,
                                        "conversionReviewVersions": d.get("admissionReviewVersions").cloned().unwrap_or_else(|| json!(["v1"])),
                                    }
                                }
                            }),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    json!({
        "services": services.into_values().collect::<Vec<_>>(),
        "validating": validating,
        "mutating": mutating,
        "conversion": conversion,
        "issuer": format!("{chart}-selfsigned-issuer"),
    })
}

fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        other => other,
    }
}

/// The CRD file name in the chart: `<group>_<plural>.yaml`, like the bundle's.
fn crd_file(o: &Object) -> String {
    let v = o.value();
    let group = str_of(v, "/spec/group");
    let plural = str_of(v, "/spec/names/plural");
    if group.is_empty() || plural.is_empty() {
        format!("{}.yaml", o.name())
    } else {
        format!("{group}_{plural}.yaml")
    }
}

/// Where OLM mounts a webhook's serving certificate, and so does the chart.
pub const CERT_PATHS: &[&str] = &[
    "/tmp/k8s-webhook-server/serving-certs",
    "/apiserver.local.config/certificates",
];

/// Labels the chart's helpers set on every object; a bundle's own value for them is dropped
/// (it would be a duplicate key, and the object is now managed by Helm).
pub const HELM_LABELS: &[&str] = &[
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
];

fn labels_of(v: Option<&Value>) -> Value {
    match v {
        Some(Value::Object(m)) => Value::Object(
            m.iter()
                .filter(|(k, _)| !HELM_LABELS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => json!({}),
    }
}

/// Sets the namespace of ServiceAccount subjects to the release namespace (its stand-in).
fn rebind_subjects(v: &mut Value, namespace: &str) {
    if let Some(subjects) = v.get_mut("subjects").and_then(Value::as_array_mut) {
        for s in subjects {
            if s["kind"] == "ServiceAccount" {
                s["namespace"] = json!(namespace);
            }
        }
    }
}

/// The values toggle (a Helm expression) an object of `kind` named `name` is rendered under.
fn gate_of(kind: &str, name: &str) -> Option<&'static str> {
    match kind {
        "ServiceMonitor" | "PodMonitor" => Some(".Values.metrics.serviceMonitor.enabled"),
        "PrometheusRule" => Some(".Values.metrics.prometheusRule.enabled"),
        "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => {
            Some(".Values.rbac.create")
        }
        "ServiceAccount" => Some(".Values.serviceAccount.create"),
        "Service" if name.contains("metrics") => Some(".Values.metrics.enabled"),
        _ => None,
    }
}

/// A chart in the making: the template context and the values it defaults to.
#[derive(Debug, Clone)]
pub struct Model {
    /// Chart name.
    pub name: String,
    /// Chart version.
    pub version: semver::Version,
    /// The Handlebars context.
    pub context: Value,
    /// Default values (what `values.yaml` says).
    pub values: Value,
    /// The manager deployment and container names.
    pub manager: (String, String),
    /// What stands for the release namespace in the context (see [`RELEASE_NAMESPACE`]).
    pub release_namespace: String,
}

/// Derives everything a chart needs from a bundle.
pub fn build(bundle: &Bundle, opts: &Options) -> Result<Model> {
    let csv = bundle.csv.value();
    let version = chart_version(&bundle.csv)?;
    let name = match (&opts.name, &bundle.package) {
        (Some(n), _) => n.clone(),
        (None, Some(p)) => p.clone(),
        (None, None) => bundle
            .csv
            .name()
            .split_once(".v")
            .map(|(n, _)| n.to_owned())
            .unwrap_or_else(|| bundle.csv.name().to_owned()),
    };
    if !opship_core::config::is_dns1123_label(&name) {
        return Err(Error::bundle(
            &bundle.dir,
            format!(
                "`{name}` is not a valid chart name (lower-case letters, digits and '-', at most 63 characters)"
            ),
        ));
    }
    let install = &csv["spec"]["install"]["spec"];
    let deployments: Vec<Value> = install["deployments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if deployments.is_empty() {
        return Err(Error::Core(bundle.csv.error(
            "/spec/install/spec",
            "the CSV's install strategy has no deployments, so there is nothing to chart",
        )));
    }
    let (mi, mc) = manager_of(csv, &deployments);
    let namespace = namespace_stand_in(bundle);
    let mut webhooks = webhook_context(csv, &name, &namespace);
    if let Some(services) = webhooks.get_mut("services").and_then(Value::as_array_mut) {
        for s in services {
            let dep = s["deployment"].as_str().unwrap_or_default().to_owned();
            let selector = deployments
                .iter()
                .find(|d| d["name"] == dep.as_str())
                .and_then(|d| d.pointer("/spec/selector/matchLabels"))
                .cloned()
                .unwrap_or_else(|| json!({}));
            s["selector"] = selector;
        }
    }
    let webhook_deployments: BTreeMap<String, Value> = webhooks["services"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| (s["deployment"].as_str().unwrap_or("").to_owned(), s.clone()))
        .collect();

    let mut service_accounts = BTreeSet::new();
    let mut deps = Vec::new();
    let mut manager_names = (String::new(), String::new());
    let mut manager_pod = json!({});
    let mut manager_container = json!({});
    for (i, d) in deployments.iter().enumerate() {
        let dname = d["name"].as_str().unwrap_or_default();
        if dname.is_empty() {
            return Err(Error::Core(bundle.csv.error(
                &format!("/spec/install/spec/deployments/{i}"),
                "deployment without a name",
            )));
        }
        let spec = &d["spec"];
        let pod = &spec["template"]["spec"];
        let sa = pod["serviceAccountName"]
            .as_str()
            .or_else(|| pod["serviceAccount"].as_str())
            .unwrap_or("default")
            .to_owned();
        if sa != "default" {
            service_accounts.insert(sa.clone());
        }
        let is_manager = i == mi;
        let webhook = webhook_deployments
            .get(dname)
            .cloned()
            .unwrap_or(Value::Null);
        let containers: Vec<Value> = pod["containers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(j, c)| {
                let manager = is_manager && j == mc;
                if manager {
                    manager_names = (dname.to_owned(), c["name"].as_str().unwrap_or("").into());
                    manager_container = c.clone();
                }
                let mut drop = vec!["name"];
                if manager {
                    drop.extend(["image", "imagePullPolicy", "resources", "securityContext"]);
                }
                if !webhook.is_null() {
                    drop.push("volumeMounts");
                }
                let (kept, replaced): (Vec<Value>, Vec<Value>) = c["volumeMounts"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .partition(|m| {
                        !CERT_PATHS.contains(&m["mountPath"].as_str().unwrap_or_default())
                    });
                json!({
                    "manager": manager,
                    "name": c["name"],
                    "fields": without(&c, &drop),
                    "volumeMounts": kept,
                    "replacedMounts": replaced,
                })
            })
            .collect();
        // The deprecated `serviceAccount` field stays as the CSV has it.
        let mut drop = vec!["containers", "serviceAccountName"];
        if is_manager {
            manager_pod = pod.clone();
            drop.extend([
                "nodeSelector",
                "tolerations",
                "affinity",
                "securityContext",
                "imagePullSecrets",
            ]);
        }
        if !webhook.is_null() {
            drop.push("volumes");
        }
        let pod_meta = spec["template"].get("metadata").cloned();
        // Volumes that only back mounts at the certificate paths give way to the chart's
        // certificate when it is wired.
        let replaced_names: BTreeSet<String> = containers
            .iter()
            .flat_map(|c| c["replacedMounts"].as_array().cloned().unwrap_or_default())
            .filter_map(|m| m["name"].as_str().map(str::to_owned))
            .collect();
        let still_used: BTreeSet<String> = containers
            .iter()
            .flat_map(|c| c["volumeMounts"].as_array().cloned().unwrap_or_default())
            .filter_map(|m| m["name"].as_str().map(str::to_owned))
            .collect();
        let (volumes, replaced_volumes): (Vec<Value>, Vec<Value>) = pod["volumes"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .partition(|v| {
                let n = v["name"].as_str().unwrap_or_default();
                !replaced_names.contains(n) || still_used.contains(n)
            });
        deps.push(json!({
            "name": dname,
            "manager": is_manager,
            "labels": labels_of(d.get("label")),
            "spec": without(spec, if is_manager { &["replicas", "template"] } else { &["template"] }),
            "podMetadata": match pod_meta {
                Some(m) if m.as_object().is_some_and(|m| !m.is_empty()) => json!({"metadata": m}),
                _ => json!({}),
            },
            "podSpec": without(pod, &drop),
            "volumes": volumes,
            "replacedVolumes": replaced_volumes,
            "serviceAccountName": pod.get("serviceAccountName").cloned().unwrap_or(Value::Null),
            "containers": containers,
            "webhook": webhook,
        }));
    }

    // Objects of the bundle, sorted into the template groups.
    let mut crds = Vec::new();
    let mut objects = Vec::new();
    let mut object_names: BTreeSet<(String, String)> = BTreeSet::new();
    for o in &bundle.objects {
        object_names.insert((o.kind().to_owned(), o.name().to_owned()));
    }
    for o in &bundle.objects {
        let v = o.value();
        if o.kind() == "CustomResourceDefinition" {
            let conv = if o.api_version() == "apiextensions.k8s.io/v1" {
                webhooks["conversion"][o.name()].clone()
            } else {
                Value::Null
            };
            crds.push(json!({
                "file": crd_file(o),
                "name": o.name(),
                "apiVersion": o.api_version(),
                "labels": labels_of(v["metadata"].get("labels")),
                "annotations": v["metadata"].get("annotations").cloned().unwrap_or_else(|| json!({})),
                "rest": without(v, &["apiVersion", "kind", "metadata", "status"]),
                "spec": if conv.is_null() { v["spec"].clone() } else { without(&v["spec"], &["conversion"]) },
                "conversion": conv,
            }));
            continue;
        }
        if o.kind() == "ServiceAccount" {
            service_accounts.remove(o.name());
        }
        let mut body = without(v, &["apiVersion", "kind", "metadata", "status"]);
        rebind_subjects(&mut body, &namespace);
        // RBAC v1beta1 is gone since Kubernetes 1.22 and v1 has the same schema: write v1.
        let api_version = match (o.api_version(), o.kind()) {
            (
                "rbac.authorization.k8s.io/v1beta1",
                "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
            ) => "rbac.authorization.k8s.io/v1",
            (a, _) => a,
        };
        let mut metadata = without(
            &v["metadata"],
            &["namespace", "creationTimestamp", "labels"],
        );
        if is_namespaced(o.kind()) {
            metadata["namespace"] = json!(namespace);
        }
        objects.push(json!({
            "kind": o.kind(),
            "apiVersion": api_version,
            "name": o.name(),
            "gate": gate_of(o.kind(), o.name()),
            "metadata": metadata,
            "labels": labels_of(v["metadata"].get("labels")),
            "body": body,
        }));
    }

    // RBAC from the install strategy: one (Cluster)Role and binding per entry, named after
    // the service account (suffixed when that name is taken).
    let rbac = |key: &str, kind: &str| -> Vec<Value> {
        let mut used: BTreeSet<String> = BTreeSet::new();
        install[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let sa = p["serviceAccountName"].as_str().unwrap_or("default");
                let mut name = sa.to_owned();
                let mut n = 1;
                while used.contains(&name)
                    || object_names.contains(&(kind.to_owned(), name.clone()))
                {
                    n += 1;
                    name = format!("{sa}-{n}");
                }
                used.insert(name.clone());
                json!({
                    "name": name,
                    "serviceAccountName": sa,
                    "rules": p.get("rules").cloned().unwrap_or_else(|| json!([])),
                })
            })
            .collect()
    };
    let roles = rbac("permissions", "Role");
    let cluster_roles = rbac("clusterPermissions", "ClusterRole");
    for r in roles.iter().chain(&cluster_roles) {
        let sa = r["serviceAccountName"].as_str().unwrap_or("default");
        if sa != "default" && !object_names.contains(&("ServiceAccount".into(), sa.into())) {
            service_accounts.insert(sa.to_owned());
        }
    }

    let chart = chart_metadata(&bundle.csv, &name, &version);
    let values = values::defaults(&values::Inputs {
        pod: &manager_pod,
        container: &manager_container,
        replicas: deployments[mi]["spec"].get("replicas").cloned(),
        webhooks: !webhooks.is_null(),
        crds: !crds.is_empty(),
    });
    let context = json!({
        "chart": strip_nulls(chart),
        "crdsInTemplates": opts.crds == CrdPlacement::Templates,
        "deployments": deps,
        "serviceAccounts": service_accounts,
        "roles": roles,
        "clusterRoles": cluster_roles,
        "crds": crds,
        "objects": objects,
        "webhooks": webhooks,
        "values": values,
        "manager": {"deployment": manager_names.0, "container": manager_names.1},
        "csv": {"name": bundle.csv.name(), "displayName": str_of(csv, "/spec/displayName")},
    });
    Ok(Model {
        name,
        version,
        context,
        values,
        manager: manager_names,
        release_namespace: namespace,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_split() {
        let s = |i: &str| split_image(i);
        assert_eq!(
            s("quay.io/a/b:v1"),
            ("quay.io/a/b".into(), "v1".into(), String::new())
        );
        assert_eq!(
            s("localhost:5000/b"),
            ("localhost:5000/b".into(), String::new(), String::new())
        );
        assert_eq!(
            s("r/b:1@sha256:ab"),
            ("r/b".into(), "1".into(), "sha256:ab".into())
        );
    }

    #[test]
    fn urls_and_emails() {
        assert!(is_url("https://github.com/x"));
        assert!(!is_url("github.com/x"));
        assert!(!is_url("https://a b"));
        assert!(is_email("a.b@example.com"));
        assert!(!is_email("not-an-email"));
        assert!(!is_email("a@b@c"));
    }
}

//! The generators of OLM v1's registry+v1 renderer: service accounts, RBAC per watch
//! namespace (or lifted to cluster scope), CRDs, the bundle's other objects, deployments with
//! OLM's annotations and the deployment config, webhook configurations, their Services and
//! certificates. Objects OLM builds from Go types are written as `sigs.k8s.io/yaml` writes
//! those types (`status: {}`, `strategy: {}`, `resources: {}`, no `creationTimestamp`), since
//! the result must be the very objects OLM v1 applies.

use std::collections::{BTreeMap, BTreeSet};

use opship_core::manifest::Object;
use serde_json::{Map, Value, json};

use crate::bundle::Bundle;
use crate::check::{self, array, str_of};
use crate::config::{CertProvider, DeploymentConfig, Options, check_namespace};
use crate::error::{Error, Result};
use crate::name::{self, Rule};

/// One `permissions`/`clusterPermissions` entry as Go decodes it.
struct Permission {
    /// As written (`""` when absent): the hashed name uses it as is.
    service_account: String,
    rules: Option<Vec<Rule>>,
}

impl Permission {
    fn service_account_or_default(&self) -> &str {
        if self.service_account.is_empty() {
            "default"
        } else {
            &self.service_account
        }
    }
}

/// A field of a CSV mapping as operator-controller reads it: the CSV is decoded with
/// apimachinery's unstructured converter, which matches field names exactly (unlike
/// encoding/json, it does not fall back to a case-insensitive match).
fn field<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    map.get(name)
}

fn strings(csv: &Object, ptr: &str, v: Option<&Value>) -> Result<Option<Vec<String>>> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str().map(str::to_owned).ok_or_else(|| {
                    opship_core::Error::invalid(
                        csv.origin_of(&format!("{ptr}/{i}")),
                        "expected a string (OLM decodes this list as strings and fails otherwise)",
                    )
                    .into()
                })
            })
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some(_) => Err(opship_core::Error::invalid(
            csv.origin_of(ptr),
            "expected a list of strings",
        )
        .into()),
    }
}

fn permissions(csv: &Object, ptr: &str) -> Result<Vec<Permission>> {
    let v = csv.value().pointer(ptr).unwrap_or(&Value::Null);
    let mut out = Vec::new();
    for (i, p) in array(v).iter().enumerate() {
        let at = format!("{ptr}/{i}");
        let Some(map) = p.as_object() else {
            return Err(
                opship_core::Error::invalid(csv.origin_of(&at), "expected a mapping").into(),
            );
        };
        let service_account = match field(map, "serviceAccountName") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => {
                return Err(opship_core::Error::invalid(
                    csv.origin_of(&format!("{at}/serviceAccountName")),
                    "expected a string",
                )
                .into());
            }
        };
        let rules = match field(map, "rules") {
            None | Some(Value::Null) => None,
            Some(Value::Array(rules)) => {
                let mut list = Vec::new();
                for (j, r) in rules.iter().enumerate() {
                    let rp = format!("{at}/rules/{j}");
                    let Some(rm) = r.as_object() else {
                        return Err(opship_core::Error::invalid(
                            csv.origin_of(&rp),
                            "expected a mapping",
                        )
                        .into());
                    };
                    let get = |k: &str| strings(csv, &format!("{rp}/{k}"), field(rm, k));
                    list.push(Rule {
                        verbs: get("verbs")?,
                        api_groups: get("apiGroups")?,
                        resources: get("resources")?,
                        resource_names: get("resourceNames")?,
                        non_resource_urls: get("nonResourceURLs")?,
                    });
                }
                Some(list)
            }
            Some(_) => {
                return Err(opship_core::Error::invalid(
                    csv.origin_of(&format!("{at}/rules")),
                    "expected a list of rules",
                )
                .into());
            }
        };
        out.push(Permission {
            service_account,
            rules,
        });
    }
    Ok(out)
}

fn meta(name: &str, namespace: Option<&str>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(name));
    if let Some(ns) = namespace {
        m.insert("namespace".into(), json!(ns));
    }
    Value::Object(m)
}

fn subject(sa: &str, install_ns: &str) -> Value {
    json!([{ "kind": "ServiceAccount", "name": sa, "namespace": install_ns }])
}

/// The watch namespace a render uses when none is given: all namespaces when the CSV supports
/// it, else the install namespace when it supports OwnNamespace, else none (the caller must
/// name one).
pub fn default_watch_namespace(csv: &Value, install_namespace: &str) -> Option<String> {
    let modes = check::supported_modes(csv);
    if modes.contains("AllNamespaces") {
        Some(String::new())
    } else if modes.contains("OwnNamespace") {
        Some(install_namespace.to_owned())
    } else {
        None
    }
}

/// The install mode a watch namespace asks for.
pub fn install_mode(install_namespace: &str, watch: &str) -> &'static str {
    if watch.is_empty() {
        "AllNamespaces"
    } else if watch == install_namespace {
        "OwnNamespace"
    } else {
        "SingleNamespace"
    }
}

/// Checks that the CSV supports the install mode of `watch`, with operator-controller's
/// wording.
pub fn check_install_mode(csv: &Object, install_namespace: &str, watch: &str) -> Result<()> {
    let modes = check::supported_modes(csv.value());
    let list = check::mode_list(&modes);
    let fail = |what: String| {
        Err(Error::InstallMode {
            csv: csv.name().to_owned(),
            message: format!(
                "invalid target namespaces [{watch}]: supported install modes {list} do not support {what}"
            ),
        })
    };
    if watch.contains(',') {
        return Err(Error::InstallMode {
            csv: csv.name().to_owned(),
            message: format!(
                "watch namespace `{watch}` names several namespaces (MultiNamespace); OLM v1 installs an operator for all namespaces or for one"
            ),
        });
    }
    match install_mode(install_namespace, watch) {
        "AllNamespaces" if !modes.contains("AllNamespaces") => {
            fail("targeting all namespaces".into())
        }
        "OwnNamespace" if !modes.contains("OwnNamespace") => fail("targeting own namespace".into()),
        "SingleNamespace" if !modes.contains("SingleNamespace") => {
            fail(format!("target namespaces [{watch}]"))
        }
        _ => Ok(()),
    }
}

/// The watch namespace for `opts`: the given one, else the default; checked against the CSV's
/// install modes.
pub fn resolve_watch_namespace(b: &Bundle, opts: &Options) -> Result<String> {
    let watch = match &opts.watch_namespace {
        Some(w) => w.clone(),
        None => default_watch_namespace(b.csv.value(), &opts.install_namespace).ok_or_else(|| {
            Error::InstallMode {
                csv: b.csv.name().to_owned(),
                message: format!(
                    "a watch namespace is required: the CSV supports only {} (set --watch-namespace or `watchNamespace`)",
                    check::supported_modes(b.csv.value())
                        .into_iter()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        })?,
    };
    check_install_mode(&b.csv, &opts.install_namespace, &watch)?;
    if !watch.is_empty() {
        check_namespace(&watch, "watch namespace")?;
    }
    Ok(watch)
}

/// Renders the bundle into the objects OLM v1 installs, sorted by kind, namespace and name.
pub fn render(b: &Bundle, opts: &Options) -> Result<Vec<Value>> {
    let problems = check::check(&b.csv, &b.objects, b.package.as_deref());
    if !problems.is_empty() {
        return Err(Error::Refused {
            path: b.dir.clone(),
            problems,
        });
    }
    check_namespace(&opts.install_namespace, "install namespace")?;
    let watch = resolve_watch_namespace(b, opts)?;
    let mut objs = generate(b, opts, &watch)?;
    sort(&mut objs);
    Ok(objs)
}

/// Sorts objects as operator-controller's regression data lists them: by kind, namespace, name.
/// Objects with the same kind, namespace and name (a bundle's own ServiceAccount next to the
/// one OLM generates) are ordered by content, so the order never depends on how they were
/// produced.
pub fn sort(objs: &mut [Value]) {
    objs.sort_by(|a, b| {
        key(a).cmp(&key(b)).then_with(|| {
            opship_core::yaml::sorted(a)
                .to_string()
                .cmp(&opship_core::yaml::sorted(b).to_string())
        })
    });
}

fn key(o: &Value) -> (&str, &str, &str) {
    (
        str_of(&o["kind"]),
        str_of(&o["metadata"]["namespace"]),
        str_of(&o["metadata"]["name"]),
    )
}

/// Renders without the bundle checks and without resolving the watch namespace: `watch` is
/// taken as given (the chart renders with stand-ins for the namespaces).
pub fn generate(b: &Bundle, opts: &Options, watch: &str) -> Result<Vec<Value>> {
    let csv = &b.csv;
    let csv_name = csv.name();
    let ns = opts.install_namespace.as_str();
    let all = watch.is_empty();
    let targets = [watch.to_owned()];
    let perms = permissions(csv, "/spec/install/spec/permissions")?;
    let cluster_perms = permissions(csv, "/spec/install/spec/clusterPermissions")?;
    let mut objs = Vec::new();

    // Service accounts, one per name, except the namespace's `default`.
    let sas: BTreeSet<&str> = perms
        .iter()
        .chain(&cluster_perms)
        .map(Permission::service_account_or_default)
        .collect();
    for sa in sas.into_iter().filter(|s| *s != "default") {
        objs.push(
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(sa, Some(ns))}),
        );
    }

    // Namespaced permissions: a Role per watch namespace, or lifted in AllNamespaces mode.
    if !all {
        for target in &targets {
            for p in &perms {
                let sa = p.service_account_or_default();
                let name = name::for_permission(
                    &format!("{csv_name}-{sa}"),
                    &p.service_account,
                    p.rules.as_deref(),
                );
                objs.push(json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": meta(&name, Some(target)), "rules": name::rules_value(p.rules.as_deref()),
                }));
                objs.push(json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": meta(&name, Some(target)),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                    "subjects": subject(sa, ns),
                }));
            }
        }
    }
    let mut cluster: Vec<Permission> = cluster_perms;
    if all {
        for p in perms {
            let mut rules = p.rules.unwrap_or_default();
            rules.push(Rule::namespaces_read());
            cluster.push(Permission {
                service_account: p.service_account,
                rules: Some(rules),
            });
        }
    }
    for p in &cluster {
        let sa = p.service_account_or_default();
        let name = name::for_permission(
            &format!("{csv_name}-{sa}"),
            &p.service_account,
            p.rules.as_deref(),
        );
        objs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": meta(&name, None), "rules": name::rules_value(p.rules.as_deref()),
        }));
        objs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": meta(&name, None),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subject(sa, ns),
        }));
    }

    // CRDs, as the typed object writes them.
    let mut crds: Vec<Value> = Vec::new();
    for o in b
        .objects
        .iter()
        .filter(|o| o.kind() == "CustomResourceDefinition")
    {
        let mut crd = o.value().clone();
        drop_creation_timestamp(&mut crd["metadata"]);
        if crd.get("status").is_none_or(Value::is_null) {
            crd["status"] =
                json!({"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": null});
        }
        crds.push(crd);
    }

    // Every other object, in the install namespace when namespaced.
    for o in &b.objects {
        let kind = o.kind();
        if kind == "CustomResourceDefinition" || kind == "ClusterServiceVersion" {
            continue;
        }
        let namespaced = check::supported_kind(kind).ok_or_else(|| {
            Error::bundle(
                &b.dir,
                format!(
                    "bundle contains unsupported resource: Name: {}, Kind: {kind}",
                    o.name()
                ),
            )
        })?;
        let mut v = o.value().clone();
        if namespaced && let Some(m) = v["metadata"].as_object_mut() {
            m.insert("namespace".into(), json!(ns));
        }
        objs.push(v);
    }

    // Deployments.
    let mut csv_annotations = string_map(csv, "/metadata/annotations")?;
    if let Some(props) = &b.properties {
        csv_annotations.insert(
            "olm.properties".into(),
            Value::String(olm_properties(b, &csv_annotations, props)?),
        );
    }
    let webhooks = array(&csv.value()["spec"]["webhookdefinitions"]);
    let webhook_deployments: BTreeSet<&str> = webhooks
        .iter()
        .map(|w| str_of(&w["deploymentName"]))
        .collect();
    let mut deployments = Vec::new();
    for (i, d) in array(&csv.value()["spec"]["install"]["spec"]["deployments"])
        .iter()
        .enumerate()
    {
        let at = format!("/spec/install/spec/deployments/{i}");
        let dname = str_of(&d["name"]);
        let mut spec = match d.get("spec") {
            Some(Value::Object(m)) => Value::Object(m.clone()),
            None | Some(Value::Null) => json!({}),
            Some(_) => {
                return Err(opship_core::Error::invalid(
                    csv.origin_of(&format!("{at}/spec")),
                    "expected a mapping",
                )
                .into());
            }
        };
        typed_deployment_spec(&mut spec);
        let template_annotations =
            string_map(csv, &format!("{at}/spec/template/metadata/annotations"))?;
        let mut annotations = csv_annotations.clone();
        annotations.extend(template_annotations);
        annotations.insert("olm.targetNamespaces".into(), json!(targets.join(",")));
        annotations.insert("olm.operatorNamespace".into(), json!(ns));
        spec["template"]["metadata"]["annotations"] = Value::Object(annotations);
        spec["revisionHistoryLimit"] = json!(1);
        let mut metadata = meta(dname, Some(ns));
        let labels = string_map(csv, &format!("{at}/label"))?;
        if !labels.is_empty() {
            metadata["labels"] = Value::Object(labels);
        }
        let mut dep = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": metadata, "spec": spec, "status": {},
        });
        if let Some(cfg) = &opts.deployment_config {
            apply_deployment_config(&mut dep, cfg);
        }
        deployments.push(dep);
    }

    // Webhook configurations.
    let mut validating = Vec::new();
    let mut mutating = Vec::new();
    for wh in webhooks {
        let ty = str_of(&wh["type"]);
        if ty != "ValidatingAdmissionWebhook" && ty != "MutatingAdmissionWebhook" {
            continue;
        }
        let whname = str_of(&wh["generateName"]).trim_end_matches_once('-');
        let svc = service_name(str_of(&wh["deploymentName"]));
        let mut hook = Map::new();
        hook.insert("name".into(), json!(whname));
        let mut service = Map::new();
        service.insert("namespace".into(), json!(ns));
        service.insert("name".into(), json!(svc));
        if let Some(p) = wh.get("webhookPath").filter(|p| !p.is_null()) {
            service.insert("path".into(), p.clone());
        }
        service.insert(
            "port".into(),
            wh.get("containerPort").cloned().unwrap_or(json!(0)),
        );
        hook.insert("clientConfig".into(), json!({ "service": service }));
        for (k, omit) in [
            ("rules", true),
            ("failurePolicy", true),
            ("matchPolicy", true),
            ("objectSelector", true),
            ("sideEffects", false),
            ("timeoutSeconds", true),
            ("admissionReviewVersions", false),
        ] {
            match wh.get(k) {
                Some(v) if !(v.is_null() || omit && is_empty_list(v)) => {
                    hook.insert(k.into(), v.clone());
                }
                _ if !omit => {
                    hook.insert(k.into(), Value::Null);
                }
                _ => {}
            }
        }
        if ty == "MutatingAdmissionWebhook"
            && let Some(v) = wh.get("reinvocationPolicy").filter(|v| !v.is_null())
        {
            hook.insert("reinvocationPolicy".into(), v.clone());
        }
        if !all {
            hook.insert(
                "namespaceSelector".into(),
                json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": targets}]}),
            );
        }
        let (kind, list) = if ty == "ValidatingAdmissionWebhook" {
            ("ValidatingWebhookConfiguration", &mut validating)
        } else {
            ("MutatingWebhookConfiguration", &mut mutating)
        };
        let mut cfg = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": meta(whname, Some(ns)), "webhooks": [hook],
        });
        inject_ca(&mut cfg, opts.cert_provider, ns, &cert_name(&svc));
        list.push(cfg);
    }

    // Certificate volumes of webhook deployments.
    if let Some(_provider) = opts.cert_provider {
        for dep in &mut deployments {
            let dname = str_of(&dep["metadata"]["name"]).to_owned();
            if webhook_deployments.contains(dname.as_str()) {
                cert_volumes(dep, &cert_name(&service_name(&dname)));
            }
        }
    }

    // Conversion webhooks on CRDs.
    for wh in webhooks
        .iter()
        .filter(|w| str_of(&w["type"]) == "ConversionWebhook")
    {
        let svc = service_name(str_of(&wh["deploymentName"]));
        let path = wh
            .get("webhookPath")
            .filter(|p| !p.is_null())
            .cloned()
            .unwrap_or(json!("/"));
        for crd_name in array(&wh["conversionCRDs"]) {
            let Some(crd) = crds.iter_mut().find(|c| c["metadata"]["name"] == *crd_name) else {
                continue;
            };
            crd["spec"]["conversion"] = json!({
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"service": {
                        "namespace": ns, "name": svc, "path": path,
                        "port": wh.get("containerPort").cloned().unwrap_or(json!(0)),
                    }},
                    "conversionReviewVersions": wh.get("admissionReviewVersions").cloned().unwrap_or(Value::Null),
                },
            });
            inject_ca(crd, opts.cert_provider, ns, &cert_name(&svc));
        }
    }

    // Services of webhook deployments, and the provider's objects.
    let mut ports: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for wh in webhooks {
        let container_port = wh["containerPort"]
            .as_i64()
            .filter(|p| *p > 0)
            .unwrap_or(443);
        let target = wh
            .get("targetPort")
            .filter(|t| !t.is_null())
            .cloned()
            .unwrap_or(json!(container_port));
        let port = json!({"name": container_port.to_string(), "port": container_port, "targetPort": target});
        let list = ports.entry(str_of(&wh["deploymentName"])).or_default();
        if !list.contains(&port) {
            list.push(port);
        }
    }
    let mut services = Vec::new();
    for d in array(&csv.value()["spec"]["install"]["spec"]["deployments"]) {
        let dname = str_of(&d["name"]);
        let Some(list) = ports.get(dname) else {
            continue;
        };
        let mut list = list.clone();
        list.sort_by_key(|p| (p["port"].as_i64().unwrap_or(0), int_value(&p["targetPort"])));
        let svc = service_name(dname);
        let mut spec = Map::new();
        spec.insert("ports".into(), Value::Array(list));
        if let Some(sel) = d["spec"]["selector"]["matchLabels"]
            .as_object()
            .filter(|m| !m.is_empty())
        {
            spec.insert("selector".into(), Value::Object(sel.clone()));
        }
        let mut service = json!({
            "apiVersion": "v1", "kind": "Service", "metadata": meta(&svc, Some(ns)),
            "spec": spec, "status": {"loadBalancer": {}},
        });
        if opts.cert_provider == Some(CertProvider::OpenShiftServiceCa) {
            set_annotation(
                &mut service,
                "service.beta.openshift.io/serving-cert-secret-name",
                &cert_name(&svc),
            );
        }
        services.push(service);
    }
    if opts.cert_provider == Some(CertProvider::CertManager) {
        for dname in &webhook_deployments {
            let svc = service_name(dname);
            let cert = cert_name(&svc);
            let issuer = name::for_base_and_suffix(&cert, "selfsigned-issuer");
            objs.push(json!({
                "apiVersion": "cert-manager.io/v1", "kind": "Issuer",
                "metadata": meta(&issuer, Some(ns)), "spec": {"selfSigned": {}}, "status": {},
            }));
            objs.push(json!({
                "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                "metadata": meta(&cert, Some(ns)),
                "spec": {
                    "dnsNames": [format!("{svc}.{ns}.svc")],
                    "issuerRef": {"name": issuer},
                    "secretName": cert,
                    "usages": ["server auth"],
                },
                "status": {},
            }));
        }
    }

    objs.extend(crds);
    objs.extend(deployments);
    objs.extend(validating);
    objs.extend(mutating);
    objs.extend(services);
    Ok(objs)
}

/// The `olm.properties` annotation OLM v1 writes when the bundle has
/// `metadata/properties.yaml`: the CSV's own properties, then the file's, as Go marshals
/// `[]property.Property` (`{"type":…,"value":…}`; the file's values with sorted keys, as
/// `sigs.k8s.io/yaml` hands them over).
fn olm_properties(b: &Bundle, annotations: &Map<String, Value>, file: &[Value]) -> Result<String> {
    // `property.Property`: `type` (a string) then `value` (raw JSON), in that order.
    let property = |p: &Value| json!({"type": check::str_of(&p["type"]), "value": p.get("value").cloned().unwrap_or(Value::Null)});
    let mut all: Vec<Value> = Vec::new();
    if let Some(Value::String(existing)) = annotations.get("olm.properties") {
        let parsed: Value = serde_json::from_str(existing).map_err(|e| {
            Error::bundle(
                &b.dir,
                format!("failed to unmarshal csv.metadata.annotations['olm.properties']: {e}"),
            )
        })?;
        all.extend(array(&parsed).iter().map(property));
    }
    all.extend(
        file.iter()
            .map(|p| property(&opship_core::gojson::sorted(p))),
    );
    if all.is_empty() && !annotations.contains_key("olm.properties") {
        return Ok("null".into());
    }
    Ok(opship_core::gojson::to_string(
        &Value::Array(all),
        opship_core::gojson::MARSHAL,
    ))
}

trait TrimOnce {
    fn trim_end_matches_once(&self, c: char) -> &str;
}

impl TrimOnce for str {
    /// Go's `strings.TrimSuffix`: one occurrence only.
    fn trim_end_matches_once(&self, c: char) -> &str {
        self.strip_suffix(c).unwrap_or(self)
    }
}

fn is_empty_list(v: &Value) -> bool {
    v.as_array().is_some_and(Vec::is_empty)
}

/// `intstr.IntValue()`: the integer, or a string parsed as one (0 when it is not).
fn int_value(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

/// `<deployment with . as ->-service`, within 63 characters (OLM v0's naming).
pub fn service_name(deployment: &str) -> String {
    name::for_base_and_suffix(&deployment.replace('.', "-"), "service")
}

/// `<service>-cert`, within 63 characters: the serving certificate and its secret.
pub fn cert_name(service: &str) -> String {
    name::for_base_and_suffix(service, "cert")
}

fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    let md = &mut obj["metadata"];
    if !md["annotations"].is_object() {
        md["annotations"] = json!({});
    }
    md["annotations"][key] = json!(value);
}

fn inject_ca(obj: &mut Value, provider: Option<CertProvider>, ns: &str, cert: &str) {
    match provider {
        Some(CertProvider::CertManager) => {
            set_annotation(
                obj,
                "cert-manager.io/inject-ca-from",
                &format!("{ns}/{cert}"),
            );
        }
        Some(CertProvider::OpenShiftServiceCa) => {
            set_annotation(obj, "service.beta.openshift.io/inject-cabundle", "true");
        }
        None => {}
    }
}

/// Replaces any volume named or mounted like OLM's certificate volumes with OLM's own, in the
/// pod and every container.
fn cert_volumes(dep: &mut Value, secret: &str) {
    const CERTS: [(&str, &str, &str, &str); 2] = [
        (
            "webhook-cert",
            "/tmp/k8s-webhook-server/serving-certs",
            "tls.crt",
            "tls.key",
        ),
        (
            "apiservice-cert",
            "/apiserver.local.config/certificates",
            "apiserver.crt",
            "apiserver.key",
        ),
    ];
    let pod = &mut dep["spec"]["template"]["spec"];
    let mut remove: BTreeSet<String> = CERTS.iter().map(|c| c.0.to_owned()).collect();
    for c in array(&pod["containers"]) {
        for m in array(&c["volumeMounts"]) {
            if CERTS.iter().any(|cert| m["mountPath"] == cert.1) {
                remove.insert(str_of(&m["name"]).to_owned());
            }
        }
    }
    let mut volumes: Vec<Value> = array(&pod["volumes"])
        .iter()
        .filter(|v| !remove.contains(str_of(&v["name"])))
        .cloned()
        .collect();
    for (vname, _, cert_path, key_path) in CERTS {
        volumes.push(
            json!({"name": vname, "secret": {"secretName": secret, "items": [
            {"key": "tls.crt", "path": cert_path}, {"key": "tls.key", "path": key_path}]}}),
        );
    }
    pod["volumes"] = Value::Array(volumes);
    if let Some(containers) = pod["containers"].as_array_mut() {
        for c in containers {
            let mut mounts: Vec<Value> = array(&c["volumeMounts"])
                .iter()
                .filter(|m| !remove.contains(str_of(&m["name"])))
                .cloned()
                .collect();
            for (vname, path, _, _) in CERTS {
                mounts.push(json!({"name": vname, "mountPath": path}));
            }
            c["volumeMounts"] = Value::Array(mounts);
        }
    }
}

fn string_map(obj: &Object, ptr: &str) -> Result<Map<String, Value>> {
    match obj.value().pointer(ptr) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => {
            for (k, v) in m {
                if !v.is_string() {
                    return Err(opship_core::Error::invalid(
                        obj.origin_of(&format!("{ptr}/{}", opship_core::yaml::escape_pointer_token(k))),
                        format!("`{k}` must be a string (OLM decodes these as strings and fails otherwise); quote it"),
                    )
                    .into());
                }
            }
            Ok(m.clone())
        }
        Some(_) => Err(opship_core::Error::invalid(
            obj.origin_of(ptr),
            "expected a mapping of strings",
        )
        .into()),
    }
}

fn drop_creation_timestamp(meta: &mut Value) {
    if let Some(m) = meta.as_object_mut() {
        m.shift_remove("creationTimestamp");
    }
}

/// What decoding into `appsv1.DeploymentSpec` and writing it back does to a spec: the struct
/// fields without `omitempty` appear (`strategy: {}`, each container's `resources: {}`), the
/// template's `creationTimestamp` goes.
fn typed_deployment_spec(spec: &mut Value) {
    if spec.get("strategy").is_none_or(Value::is_null) {
        spec["strategy"] = json!({});
    }
    if !spec["template"].is_object() {
        spec["template"] = json!({});
    }
    let template = &mut spec["template"];
    if !template["metadata"].is_object() {
        template["metadata"] = json!({});
    }
    drop_creation_timestamp(&mut template["metadata"]);
    if !template["spec"].is_object() {
        template["spec"] = json!({});
    }
    let pod = &mut template["spec"];
    if pod.get("containers").is_none() {
        pod["containers"] = Value::Null;
    }
    for list in ["initContainers", "containers"] {
        if let Some(cs) = pod.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs {
                if c.is_object() && c.get("resources").is_none_or(Value::is_null) {
                    c["resources"] = json!({});
                }
            }
        }
    }
}

fn containers(dep: &mut Value) -> impl Iterator<Item = &mut Value> {
    dep["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .filter(|c| c.is_object())
}

/// Merges `items` into `list` by `name`: an item replaces the last entry of the original list
/// with its name, else it is appended (operator-controller's env, volume and mount merge).
fn merge_by_name(list: &mut Value, items: &[Value]) {
    let mut current: Vec<Value> = array(list).to_vec();
    let index: BTreeMap<String, usize> = current
        .iter()
        .enumerate()
        .map(|(i, v)| (str_of(&v["name"]).to_owned(), i))
        .collect();
    for item in items {
        match index.get(str_of(&item["name"])) {
            Some(i) => current[*i] = item.clone(),
            None => current.push(item.clone()),
        }
    }
    *list = Value::Array(current);
}

/// Appends each of `items` not already in `list`.
fn append_unique(list: &mut Value, items: &[Value]) {
    let mut current: Vec<Value> = array(list).to_vec();
    for item in items {
        if !current.contains(item) {
            current.push(item.clone());
        }
    }
    *list = Value::Array(current);
}

fn affinity_part_empty(key: &str, v: &Value) -> bool {
    let empty = |k: &str| array(&v[k]).is_empty();
    match key {
        "nodeAffinity" => {
            array(&v["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"])
                .is_empty()
                && empty("preferredDuringSchedulingIgnoredDuringExecution")
        }
        _ => {
            empty("requiredDuringSchedulingIgnoredDuringExecution")
                && empty("preferredDuringSchedulingIgnoredDuringExecution")
        }
    }
}

const AFFINITY_PARTS: [&str; 3] = ["nodeAffinity", "podAffinity", "podAntiAffinity"];

/// Applies an OLM v1 deployment config to a Deployment, as operator-controller does (which
/// follows OLM v0's `overrides/inject`).
pub fn apply_deployment_config(dep: &mut Value, cfg: &DeploymentConfig) {
    if let Some(env) = cfg.env.as_ref().filter(|e| !e.is_empty()) {
        for c in containers(dep) {
            merge_by_name(&mut c["env"], env);
        }
    }
    if let Some(env_from) = cfg.env_from.as_ref().filter(|e| !e.is_empty()) {
        for c in containers(dep) {
            append_unique(&mut c["envFrom"], env_from);
        }
    }
    let pod = &mut dep["spec"]["template"]["spec"];
    if let Some(volumes) = cfg.volumes.as_ref().filter(|e| !e.is_empty()) {
        merge_by_name(&mut pod["volumes"], volumes);
    }
    if let Some(mounts) = cfg.volume_mounts.as_ref().filter(|e| !e.is_empty()) {
        for c in containers(dep) {
            merge_by_name(&mut c["volumeMounts"], mounts);
        }
    }
    let pod = &mut dep["spec"]["template"]["spec"];
    if let Some(tolerations) = cfg.tolerations.as_ref().filter(|e| !e.is_empty()) {
        append_unique(&mut pod["tolerations"], tolerations);
    }
    if let Some(resources) = &cfg.resources {
        for c in containers(dep) {
            c["resources"] = Value::Object(resources.clone());
        }
    }
    let pod = &mut dep["spec"]["template"]["spec"];
    if let Some(ns) = &cfg.node_selector {
        // A map field with omitempty: an empty selector is written as none.
        match pod.as_object_mut() {
            Some(m) if ns.is_empty() => {
                m.shift_remove("nodeSelector");
            }
            _ => pod["nodeSelector"] = Value::Object(ns.clone()),
        }
    }
    if let Some(aff) = &cfg.affinity {
        apply_affinity(pod, aff);
    }
    if let Some(annotations) = cfg.annotations.as_ref().filter(|a| !a.is_empty()) {
        for ptr in ["/metadata", "/spec/template/metadata"] {
            let Some(target) = dep.pointer_mut(ptr) else {
                continue;
            };
            if !target["annotations"].is_object() {
                target["annotations"] = json!({});
            }
            let map = target["annotations"]
                .as_object_mut()
                .expect("just made a mapping");
            for (k, v) in annotations {
                if !map.contains_key(k) {
                    map.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

fn apply_affinity(pod: &mut Value, aff: &Map<String, Value>) {
    let Some(pod_map) = pod.as_object_mut() else {
        return;
    };
    let given: Vec<(&str, &Value)> = AFFINITY_PARTS
        .iter()
        .filter_map(|k| aff.get(*k).filter(|v| !v.is_null()).map(|v| (*k, v)))
        .collect();
    if given.is_empty() {
        pod_map.shift_remove("affinity");
        return;
    }
    let current = pod_map.entry("affinity").or_insert_with(|| json!({}));
    if !current.is_object() {
        *current = json!({});
    }
    let cur = current.as_object_mut().expect("just made a mapping");
    for (k, v) in given {
        if affinity_part_empty(k, v) {
            cur.shift_remove(k);
        } else {
            cur.insert(k.to_owned(), v.clone());
        }
    }
    let empty = AFFINITY_PARTS.iter().all(|k| {
        cur.get(*k)
            .is_none_or(|v| v.is_null() || affinity_part_empty(k, v))
    });
    if empty {
        pod_map.shift_remove("affinity");
    }
}

//! OLM v1 rules (`OLM…`): what operator-controller (`ClusterExtension`) refuses, or installs
//! only with caveats, from a registry+v1 bundle. No other tool checks this before release.
//!
//! The rules follow operator-controller's registry+v1 renderer and its manifest provider
//! (`internal/operator-controller/applier/provider.go`,
//! `rukpak/render/registryv1/validators/validator.go`) and the documented limitations
//! (`docs/project/olmv1_limitations.md`):
//! - no dependencies: catalogs turn `dependencies.yaml` entries and the CSV's required APIs into
//!   `olm.package.required`, `olm.gvk.required` and `olm.constraint` properties, which v1 refuses;
//! - no owned APIService definitions (`apiServiceDefintions are not supported`);
//! - at least one of AllNamespaces, OwnNamespace and SingleNamespace; Own/Single only through
//!   `spec.config.inline.watchNamespace` (GA since the `SingleOwnNamespaceInstallSupport` gate
//!   was promoted), so bundles without AllNamespaces carry a warning;
//! - webhooks need a certificate provider (cert-manager or OpenShift service-ca) on the
//!   cluster; conversion webhooks need AllNamespaces as the only install mode; admission rules
//!   may not target `*`, `olm.operatorframework.io` or webhook configurations; every webhook's
//!   deployment must exist and names must be unique per type;
//! - the renderer's own checks: unique DNS-1123 strategy deployment names, the owned CRDs in
//!   the bundle once each as apiextensions.k8s.io/v1, a package name, only the kinds v1
//!   installs, DNS-1123 webhook names;
//! - the OperatorConditions API does not exist under v1.
//!
//! The validator's and renderer's checks (OLM003, OLM005, OLM008…OLM010, OLM012…OLM016) are
//! not implemented here: they come from [`opship_install::check_bundle`], the code `opship
//! manifests` and the Helm chart run before rendering, so the suite reports exactly what the
//! renderer refuses.

use std::collections::BTreeSet;

use opship_core::bundle::metadata::keys;
use opship_core::manifest::Object;
use opship_core::yaml::Origin;
use serde_json::Value;

use crate::Options;
use crate::load::Bundle;
use crate::rule::{Finding, Rule};

rule!(
    OlmV1,
    OLM001,
    Error,
    None,
    "metadata/dependencies.yaml declares no package, GVK or constraint dependency",
    "OLM v1 does not resolve dependencies: catalogs turn olm.package, olm.gvk and olm.constraint \
     entries into olm.package.required, olm.gvk.required and olm.constraint properties, and a \
     ClusterExtension refuses a bundle that has them. Document the prerequisite and let the \
     cluster administrator install it, or drop the entry. olm.label dependencies are ignored by \
     v1 (warning)."
);
rule!(
    OlmV1,
    OLM002,
    Error,
    None,
    "The CSV requires no CRDs or APIServices from other operators",
    "spec.customresourcedefinitions.required and spec.apiservicedefinitions.required become \
     olm.gvk.required properties in the catalog, and OLM v1 refuses bundles with dependencies. \
     Remove the required entries and document the prerequisite instead; the operator should \
     degrade or report a condition while the API is missing."
);
rule!(
    OlmV1,
    OLM003,
    Error,
    None,
    "The CSV owns no APIService definitions",
    "OLM v1 cannot install aggregated API servers from a registry+v1 bundle: it fails with \
     `unsupported bundle: apiServiceDefintions are not supported`. Serve the API as a CRD, or \
     ship the APIService through another channel."
);
rule!(
    OlmV1,
    OLM004,
    Error,
    None,
    "Bundle properties declare no dependencies",
    "metadata/properties.yaml (or the CSV's olm.properties annotation) passes properties into \
     the catalog unchanged; olm.gvk.required, olm.package.required and olm.constraint there \
     make OLM v1 refuse the bundle. Remove them."
);
rule!(
    OlmV1,
    OLM005,
    Error,
    None,
    "The CSV supports AllNamespaces, OwnNamespace or SingleNamespace",
    "OLM v1 installs a registry+v1 bundle for all namespaces or for one watch namespace. A bundle \
     that supports only MultiNamespace (or no mode) is refused with `bundle must support at \
     least one of [AllNamespaces SingleNamespace OwnNamespace] install modes`. Support \
     AllNamespaces, the mode v1 recommends."
);
rule!(
    OlmV1,
    OLM006,
    Warning,
    None,
    "The CSV supports the AllNamespaces install mode",
    "Without AllNamespaces, a ClusterExtension must name the watch namespace in \
     spec.config.inline.watchNamespace, and operator-controller releases from before the \
     SingleOwnNamespaceInstallSupport promotion refuse the bundle outright (`bundle does not \
     support AllNamespaces install mode`). OLM v1 treats APIs as cluster-wide, so supporting \
     AllNamespaces is the recommended mode."
);
rule!(
    OlmV1,
    OLM007,
    Warning,
    None,
    "Webhooks need a certificate provider on the cluster",
    "OLM v1 installs webhookdefinitions only when a certificate provider is configured: \
     cert-manager, or the OpenShift service CA. On a cluster without one the install fails with \
     `webhookDefinitions are not supported`. Document cert-manager as a prerequisite."
);
rule!(
    OlmV1,
    OLM008,
    Error,
    None,
    "A bundle with a conversion webhook supports only AllNamespaces",
    "A conversion webhook converts a cluster-wide CRD, so OLM v1 (like v0) requires the bundle \
     to support AllNamespaces and no other install mode. Mark OwnNamespace, SingleNamespace and \
     MultiNamespace unsupported."
);
rule!(
    OlmV1,
    OLM009,
    Error,
    None,
    "Admission webhook rules target no forbidden API groups or resources",
    "OLM v1 refuses webhooks whose rules match every API group (`*`), the OLM API group \
     olm.operatorframework.io, or admissionregistration.k8s.io webhook configurations (`*`, \
     validating/mutatingwebhookconfigurations): a faulty webhook there could lock the cluster \
     out of removing it. Narrow the rules to the operator's own APIs."
);
rule!(
    OlmV1,
    OLM010,
    Error,
    None,
    "Webhook definitions name existing deployments, unique names and owned CRDs",
    "OLM v1 refuses a bundle where a webhook's deploymentName is not one of the CSV's \
     deployments, two webhooks of one type share a generateName, a conversion webhook lists a \
     CRD the CSV does not own, or two conversion webhooks claim the same CRD."
);
rule!(
    OlmV1,
    OLM011,
    Warning,
    None,
    "The operator does not rely on the OperatorConditions API",
    "OLM v1 has no OperatorCondition objects: an operator that reads OPERATOR_CONDITION_NAME or \
     updates operatorconditions.operators.coreos.com fails at start or while reconciling under \
     v1. Make the upgrade-readiness logic optional."
);

rule!(
    OlmV1,
    OLM012,
    Error,
    None,
    "Strategy deployment names are unique DNS-1123 subdomains",
    "Each entry of spec.install.spec.deployments becomes a Deployment of that name, so \
     operator-controller's registry+v1 validator refuses a bundle where two entries share a \
     name or a name is not a DNS-1123 subdomain (lower-case alphanumerics, `-` and `.`, \
     starting and ending alphanumeric, at most 253 characters). Rename the deployment, and \
     update the webhook definitions that name it."
);
rule!(
    OlmV1,
    OLM013,
    Error,
    None,
    "Owned CRDs are in the bundle, once each",
    "OLM v1 installs the CRDs the bundle carries: operator-controller's registry+v1 validator \
     refuses a CSV that owns a CRD missing from manifests/ and two CRDs of the same name, and \
     its renderer refuses a CRD served by a conversion webhook that keeps \
     spec.preserveUnknownFields true (the API server would never call the webhook). Ship every \
     owned CRD once, with preserveUnknownFields false."
);
rule!(
    OlmV1,
    OLM014,
    Error,
    None,
    "metadata/annotations.yaml names the package",
    "OLM v1 installs a bundle into a ClusterExtension of its package, and operator-controller's \
     registry+v1 validator refuses a bundle whose package name is empty. Set \
     operators.operatorframework.io.bundle.package.v1 in metadata/annotations.yaml."
);
rule!(
    OlmV1,
    OLM015,
    Error,
    None,
    "The bundle contains only kinds OLM v1 installs",
    "Besides the CSV and CRDs, OLM v1's registry+v1 renderer installs only ClusterRole, \
     ClusterRoleBinding, ConfigMap, PrometheusRule, Role, RoleBinding, Secret, Service, \
     ServiceAccount and ServiceMonitor objects from manifests/, and refuses a bundle with \
     anything else (OLM v0 also installed, for instance, PodDisruptionBudgets, PriorityClasses \
     and VerticalPodAutoscalers). Have the operator create such objects itself, or drop them."
);
rule!(
    OlmV1,
    OLM016,
    Error,
    None,
    "Webhook generateNames are DNS-1123 subdomains",
    "A webhook definition's generateName becomes the name of the webhook in the \
     ValidatingWebhookConfiguration, MutatingWebhookConfiguration or CRD conversion OLM v1 \
     creates, and operator-controller's registry+v1 validator refuses one that is not a \
     DNS-1123 subdomain (lower-case alphanumerics, `-` and `.`, at most 253 characters), for \
     instance `vmemcached.kb.io`. Rename it."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[
    &OLM001, &OLM002, &OLM003, &OLM004, &OLM005, &OLM006, &OLM007, &OLM008, &OLM009, &OLM010,
    &OLM011, &OLM012, &OLM013, &OLM014, &OLM015, &OLM016,
];

const DEPENDENCY_PROPERTIES: [&str; 3] =
    ["olm.gvk.required", "olm.package.required", "olm.constraint"];

/// Runs the suite.
pub(crate) fn check(b: &Bundle, _opts: &Options, out: &mut Vec<Finding>) {
    dependencies(b, out);
    properties(b, out);
    let Some(csv) = b.csv() else { return };
    let name = csv.name();
    required_apis(csv, name, out);
    registry_v1(b, csv, out);
    install_modes(csv, name, out);
    webhooks(csv, name, out);
    operator_conditions(csv, name, out);
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn dependencies(b: &Bundle, out: &mut Vec<Finding>) {
    let Some(doc) = &b.dependencies else { return };
    for (i, dep) in array(&doc.value["dependencies"]).iter().enumerate() {
        let ty = str_of(&dep["type"]);
        let value = &dep["value"];
        let what = match ty {
            "olm.package" => format!(
                "package {} {}",
                str_of(&value["packageName"]),
                str_of(&value["version"])
            ),
            "olm.gvk" => format!(
                "API {}/{} {}",
                str_of(&value["group"]),
                str_of(&value["version"]),
                str_of(&value["kind"])
            ),
            "olm.constraint" => {
                let msg = str_of(&value["failureMessage"]);
                if msg.is_empty() {
                    "a constraint".to_owned()
                } else {
                    format!("a constraint ({msg})")
                }
            }
            "olm.label" => {
                out.push(
                    Finding::new(
                        &OLM001,
                        &b.name,
                        format!(
                            "dependency on label `{}` is ignored by OLM v1; nothing enforces it",
                            str_of(&value["label"])
                        ),
                    )
                    .with_level(crate::Level::Warning)
                    .at(doc.origin(&format!("/dependencies/{i}"))),
                );
                continue;
            }
            _ => continue,
        };
        out.push(
            Finding::new(
                &OLM001,
                &b.name,
                format!("`{ty}` dependency on {what}: OLM v1 refuses bundles with dependencies"),
            )
            .at(doc.origin(&format!("/dependencies/{i}"))),
        );
    }
}

fn properties(b: &Bundle, out: &mut Vec<Finding>) {
    if let Some(doc) = &b.properties {
        for (i, p) in array(&doc.value["properties"]).iter().enumerate() {
            let ty = str_of(&p["type"]);
            if DEPENDENCY_PROPERTIES.contains(&ty) {
                out.push(
                    Finding::new(
                        &OLM004,
                        &b.name,
                        format!("property `{ty}` declares a dependency; OLM v1 refuses it"),
                    )
                    .at(doc.origin(&format!("/properties/{i}"))),
                );
            }
        }
    }
    let Some(csv) = b.csv() else { return };
    let Some(text) = csv.value()["metadata"]["annotations"]["olm.properties"].as_str() else {
        return;
    };
    let Ok(Value::Array(props)) = serde_json::from_str::<Value>(text) else {
        return;
    };
    for p in &props {
        let ty = str_of(&p["type"]);
        if DEPENDENCY_PROPERTIES.contains(&ty) {
            out.push(
                Finding::new(
                    &OLM004,
                    csv.name(),
                    format!(
                        "the olm.properties annotation has a `{ty}` property; OLM v1 refuses \
                         bundles with dependencies"
                    ),
                )
                .at(csv.origin_of("/metadata/annotations/olm.properties")),
            );
        }
    }
}

fn required_apis(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    let v = csv.value();
    for (i, r) in array(&v["spec"]["customresourcedefinitions"]["required"])
        .iter()
        .enumerate()
    {
        out.push(
            Finding::new(
                &OLM002,
                name,
                format!(
                    "requires CRD {} ({} {}); it becomes an olm.gvk.required dependency, which \
                     OLM v1 refuses",
                    str_of(&r["name"]),
                    str_of(&r["kind"]),
                    str_of(&r["version"])
                ),
            )
            .at(csv.origin_of(&format!("/spec/customresourcedefinitions/required/{i}"))),
        );
    }
    for (i, r) in array(&v["spec"]["apiservicedefinitions"]["required"])
        .iter()
        .enumerate()
    {
        out.push(
            Finding::new(
                &OLM002,
                name,
                format!(
                    "requires APIService {}/{} {}; it becomes an olm.gvk.required dependency, \
                     which OLM v1 refuses",
                    str_of(&r["group"]),
                    str_of(&r["version"]),
                    str_of(&r["kind"])
                ),
            )
            .at(csv.origin_of(&format!("/spec/apiservicedefinitions/required/{i}"))),
        );
    }
}

/// The supported install modes (`supported: true`).
fn supported_modes(csv: &Object) -> BTreeSet<&str> {
    array(&csv.value()["spec"]["installModes"])
        .iter()
        .filter(|m| m["supported"].as_bool() == Some(true))
        .map(|m| str_of(&m["type"]))
        .collect()
}

/// The checks of OLM v1's registry+v1 validator, from the code that `opship manifests` and the
/// chart run before rendering ([`opship_install::check_bundle`]), so the suite and the renderer
/// never disagree. Each problem becomes a finding of the rule with the same ID.
fn registry_v1(b: &Bundle, csv: &Object, out: &mut Vec<Finding>) {
    let name = csv.name();
    let package = b.annotations.as_ref().and_then(|a| a.get(keys::PACKAGE));
    let prefix = format!("{name}: ");
    for p in opship_install::check_bundle(csv, &b.objects, package) {
        let Some(rule) = RULES.iter().copied().find(|r| r.id == p.rule) else {
            debug_assert!(false, "opship-install reports unknown rule {}", p.rule);
            continue;
        };
        let message = p.message.strip_prefix(&prefix).unwrap_or(&p.message);
        let (object, origin) = match (p.rule, &b.annotations) {
            // The package name lives in metadata/annotations.yaml: point there.
            ("OLM014", Some(a)) => (b.name.as_str(), a.origin(keys::PACKAGE)),
            ("OLM014", None) => (b.name.as_str(), p.origin),
            _ => (object_at(b, &p.origin).unwrap_or(name), p.origin),
        };
        out.push(Finding::new(rule, object, message).at(origin));
    }
}

/// The name of the object whose document holds `origin`: the last one in that file starting at
/// or before it.
fn object_at<'a>(b: &'a Bundle, origin: &Origin) -> Option<&'a str> {
    b.objects
        .iter()
        .filter(|o| {
            let at = o.origin();
            at.file == origin.file && at.pos.line <= origin.pos.line
        })
        .max_by_key(|o| o.origin().pos.line)
        .map(Object::name)
}

/// OLM005 (from [`registry_v1`]) covers bundles without a mode v1 installs; this warns when v1
/// installs the bundle only for a watch namespace.
fn install_modes(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    // Without installModes the CSV validator reports the problem.
    if array(&csv.value()["spec"]["installModes"]).is_empty() {
        return;
    }
    let modes = supported_modes(csv);
    if modes.contains("AllNamespaces")
        || !["OwnNamespace", "SingleNamespace"]
            .iter()
            .any(|m| modes.contains(m))
    {
        return;
    }
    let list = modes.iter().copied().collect::<Vec<_>>().join(", ");
    out.push(
        Finding::new(
            &OLM006,
            name,
            format!(
                "supported install modes: {list}; under OLM v1 every ClusterExtension must \
                 set spec.config.inline.watchNamespace, and older operator-controller \
                 releases refuse the bundle"
            ),
        )
        .at(csv.origin_of("/spec/installModes")),
    );
}

fn webhooks(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    let defs = array(&csv.value()["spec"]["webhookdefinitions"]);
    if defs.is_empty() {
        return;
    }
    out.push(
        Finding::new(
            &OLM007,
            name,
            format!(
                "{} webhook definition{}; OLM v1 installs them only with cert-manager or the \
                 OpenShift service CA as certificate provider",
                defs.len(),
                if defs.len() == 1 { "" } else { "s" }
            ),
        )
        .at(csv.origin_of("/spec/webhookdefinitions")),
    );
}

fn operator_conditions(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    let spec = &csv.value()["spec"]["install"]["spec"];
    for (d, dep) in array(&spec["deployments"]).iter().enumerate() {
        let pod = &dep["spec"]["template"]["spec"];
        for list in ["initContainers", "containers"] {
            for (c, container) in array(&pod[list]).iter().enumerate() {
                for (e, env) in array(&container["env"]).iter().enumerate() {
                    if str_of(&env["name"]) == "OPERATOR_CONDITION_NAME" {
                        out.push(
                            Finding::new(
                                &OLM011,
                                name,
                                format!(
                                    "container `{}` of deployment `{}` reads \
                                     OPERATOR_CONDITION_NAME; OLM v1 creates no OperatorCondition",
                                    str_of(&container["name"]),
                                    str_of(&dep["name"])
                                ),
                            )
                            .at(csv.origin_of(&format!(
                                "/spec/install/spec/deployments/{d}/spec/template/spec/{list}/{c}/env/{e}"
                            ))),
                        );
                    }
                }
            }
        }
    }
    for kind in ["permissions", "clusterPermissions"] {
        for (p, perm) in array(&spec[kind]).iter().enumerate() {
            for (r, rule) in array(&perm["rules"]).iter().enumerate() {
                let groups = array(&rule["apiGroups"]);
                let resources = array(&rule["resources"]);
                if groups.iter().any(|g| str_of(g) == "operators.coreos.com")
                    && resources
                        .iter()
                        .any(|r| str_of(r).starts_with("operatorconditions"))
                {
                    out.push(
                        Finding::new(
                            &OLM011,
                            name,
                            "the operator's RBAC grants access to operatorconditions; OLM v1 \
                             has no OperatorCondition objects",
                        )
                        .at(csv.origin_of(&format!(
                            "/spec/install/spec/{kind}/{p}/rules/{r}/resources"
                        ))),
                    );
                }
            }
        }
    }
}

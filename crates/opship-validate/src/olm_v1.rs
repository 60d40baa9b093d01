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
//! - the OperatorConditions API does not exist under v1.

use std::collections::{BTreeMap, BTreeSet};

use opship_core::manifest::Object;
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

/// The rules of this suite.
pub const RULES: &[&Rule] = &[
    &OLM001, &OLM002, &OLM003, &OLM004, &OLM005, &OLM006, &OLM007, &OLM008, &OLM009, &OLM010,
    &OLM011,
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
    owned_apiservices(csv, name, out);
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

fn owned_apiservices(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    for (i, o) in array(&csv.value()["spec"]["apiservicedefinitions"]["owned"])
        .iter()
        .enumerate()
    {
        out.push(
            Finding::new(
                &OLM003,
                name,
                format!(
                    "owns APIService {}.{} ({}); OLM v1 does not install API services",
                    str_of(&o["version"]),
                    str_of(&o["group"]),
                    str_of(&o["kind"])
                ),
            )
            .at(csv.origin_of(&format!("/spec/apiservicedefinitions/owned/{i}"))),
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

fn install_modes(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    // Without installModes the CSV validator reports the problem; v1 would refuse too, but one
    // finding is enough.
    if array(&csv.value()["spec"]["installModes"]).is_empty() {
        return;
    }
    let modes = supported_modes(csv);
    let at = csv.origin_of("/spec/installModes");
    let list = if modes.is_empty() {
        "none".to_owned()
    } else {
        modes.iter().copied().collect::<Vec<_>>().join(", ")
    };
    if !["AllNamespaces", "OwnNamespace", "SingleNamespace"]
        .iter()
        .any(|m| modes.contains(m))
    {
        out.push(
            Finding::new(
                &OLM005,
                name,
                format!(
                    "supported install modes: {list}; OLM v1 needs AllNamespaces, OwnNamespace \
                     or SingleNamespace"
                ),
            )
            .at(at),
        );
    } else if !modes.contains("AllNamespaces") {
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
            .at(at),
        );
    }
}

fn webhooks(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    let v = csv.value();
    let defs = array(&v["spec"]["webhookdefinitions"]);
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

    let deployments: BTreeSet<&str> = array(&v["spec"]["install"]["spec"]["deployments"])
        .iter()
        .map(|d| str_of(&d["name"]))
        .collect();
    let owned: BTreeSet<&str> = array(&v["spec"]["customresourcedefinitions"]["owned"])
        .iter()
        .map(|d| str_of(&d["name"]))
        .collect();
    let modes = supported_modes(csv);
    let mut names: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut conversion_crds: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (i, wh) in defs.iter().enumerate() {
        let ty = str_of(&wh["type"]);
        let gen_name = str_of(&wh["generateName"]);
        let at = |p: &str| csv.origin_of(&format!("/spec/webhookdefinitions/{i}{p}"));
        if ty == "ConversionWebhook" && (modes.len() != 1 || !modes.contains("AllNamespaces")) {
            out.push(
                Finding::new(
                    &OLM008,
                    name,
                    format!(
                        "conversion webhook `{gen_name}` but supported install modes are {}; \
                         OLM v1 requires AllNamespaces only",
                        if modes.is_empty() {
                            "none".to_owned()
                        } else {
                            modes.iter().copied().collect::<Vec<_>>().join(", ")
                        }
                    ),
                )
                .at(at("")),
            );
        }
        let dep = str_of(&wh["deploymentName"]);
        if !deployments.contains(dep) {
            out.push(
                Finding::new(
                    &OLM010,
                    name,
                    format!(
                        "webhook `{gen_name}` ({ty}) references deployment `{dep}`, which is \
                         not in the install strategy"
                    ),
                )
                .at(at("/deploymentName")),
            );
        }
        let seen = names.entry((ty, gen_name)).or_default();
        *seen += 1;
        if *seen == 2 {
            out.push(
                Finding::new(
                    &OLM010,
                    name,
                    format!("duplicate {ty} webhook `{gen_name}`"),
                )
                .at(at("/generateName")),
            );
        }
        if ty == "ConversionWebhook" {
            for (j, crd) in array(&wh["conversionCRDs"]).iter().enumerate() {
                let crd = str_of(crd);
                conversion_crds.entry(crd).or_default().push(gen_name);
                if !owned.contains(crd) {
                    out.push(
                        Finding::new(
                            &OLM010,
                            name,
                            format!(
                                "conversion webhook `{gen_name}` lists CRD `{crd}`, which the \
                                 CSV does not own"
                            ),
                        )
                        .at(at(&format!("/conversionCRDs/{j}"))),
                    );
                }
            }
        } else {
            webhook_rules(csv, name, i, wh, out);
        }
    }
    for (crd, hooks) in conversion_crds {
        if hooks.len() > 1 {
            out.push(
                Finding::new(
                    &OLM010,
                    name,
                    format!(
                        "conversion webhooks {} all claim CRD `{crd}`",
                        hooks.join(", ")
                    ),
                )
                .at(csv.origin_of("/spec/webhookdefinitions")),
            );
        }
    }
}

fn webhook_rules(csv: &Object, name: &str, i: usize, wh: &Value, out: &mut Vec<Finding>) {
    let gen_name = str_of(&wh["generateName"]);
    for (r, rule) in array(&wh["rules"]).iter().enumerate() {
        for (g, group) in array(&rule["apiGroups"]).iter().enumerate() {
            let group = str_of(group);
            let at = csv.origin_of(&format!(
                "/spec/webhookdefinitions/{i}/rules/{r}/apiGroups/{g}"
            ));
            if group == "*" || group == "olm.operatorframework.io" {
                out.push(
                    Finding::new(
                        &OLM009,
                        name,
                        format!("webhook `{gen_name}` has a rule for API group `{group}`"),
                    )
                    .at(at),
                );
            } else if group == "admissionregistration.k8s.io" {
                for (k, res) in array(&rule["resources"]).iter().enumerate() {
                    let res = str_of(res);
                    let lower = res.to_ascii_lowercase();
                    if matches!(
                        lower.as_str(),
                        "*" | "mutatingwebhookconfiguration"
                            | "mutatingwebhookconfigurations"
                            | "validatingwebhookconfiguration"
                            | "validatingwebhookconfigurations"
                    ) {
                        out.push(
                            Finding::new(
                                &OLM009,
                                name,
                                format!(
                                    "webhook `{gen_name}` has a rule for `{res}` in \
                                     admissionregistration.k8s.io"
                                ),
                            )
                            .at(csv.origin_of(&format!(
                                "/spec/webhookdefinitions/{i}/rules/{r}/resources/{k}"
                            ))),
                        );
                    }
                }
            }
        }
    }
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

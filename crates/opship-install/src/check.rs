//! What OLM v1's registry+v1 validators check before they render a bundle, as problems with a
//! stable rule ID and a position. `opship manifests` and the chart refuse a bundle with any;
//! `opship validate bundle --select-optional olm-v1` reports the same list as findings, so the
//! two never disagree.

use std::collections::{BTreeMap, BTreeSet};

use opship_core::manifest::Object;
use opship_core::yaml::Origin;
use serde_json::Value;

/// One reason OLM v1 refuses the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The rule ID of the `olm-v1` validation suite (`OLM003`, `OLM005`, `OLM008`…`OLM016`).
    pub rule: &'static str,
    /// The file and line of the offending field.
    pub origin: Origin,
    /// What is wrong, naming the object.
    pub message: String,
}

/// Kinds OLM v1 installs besides the CSV and CRDs, with whether they are namespaced
/// (operator-registry's `lib/bundle` supported resources, which operator-controller's renderer
/// uses; other kinds of the registry+v1 format are refused by v1).
pub const SUPPORTED_KINDS: &[(&str, bool)] = &[
    ("ClusterRole", false),
    ("ClusterRoleBinding", false),
    ("ConfigMap", true),
    ("PrometheusRule", true),
    ("Role", true),
    ("RoleBinding", true),
    ("Secret", true),
    ("Service", true),
    ("ServiceAccount", true),
    ("ServiceMonitor", true),
];

/// Whether OLM v1 installs objects of `kind`, and whether they are namespaced.
pub fn supported_kind(kind: &str) -> Option<bool> {
    SUPPORTED_KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, namespaced)| *namespaced)
}

/// The string at `v`, `""` when it is not one.
pub fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The list at `v`, empty when it is not one.
pub fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// The install modes the CSV marks supported.
pub fn supported_modes(csv: &Value) -> BTreeSet<String> {
    array(&csv["spec"]["installModes"])
        .iter()
        .filter(|m| m["supported"].as_bool() == Some(true))
        .map(|m| str_of(&m["type"]).to_owned())
        .collect()
}

/// Runs every check of OLM v1's registry+v1 bundle validator on a bundle: the CSV, its other
/// objects (the CSV among them is skipped) and the package name of `metadata/annotations.yaml`.
pub fn check(csv: &Object, objects: &[Object], package: Option<&str>) -> Vec<Problem> {
    let mut out = Vec::new();
    let name = csv.name();
    let v = csv.value();
    let at = |p: &str| csv.origin_of(p);
    let mut push = |rule, origin, message: String| {
        out.push(Problem {
            rule,
            origin,
            message,
        })
    };

    // Install modes: at least one that v1 can install.
    let modes = supported_modes(v);
    if !array(&v["spec"]["installModes"]).is_empty()
        && !["AllNamespaces", "OwnNamespace", "SingleNamespace"]
            .iter()
            .any(|m| modes.contains(*m))
    {
        push(
            "OLM005",
            at("/spec/installModes"),
            format!(
                "{name}: supported install modes {}; OLM v1 needs AllNamespaces, OwnNamespace or SingleNamespace",
                mode_list(&modes)
            ),
        );
    }

    // Owned APIServices are not installed by v1.
    let owned_api = array(&v["spec"]["apiservicedefinitions"]["owned"]);
    if !owned_api.is_empty() {
        push(
            "OLM003",
            at("/spec/apiservicedefinitions/owned"),
            format!(
                "{name}: owns {} APIService definition(s); OLM v1 does not install APIServices",
                owned_api.len()
            ),
        );
    }

    // Deployments: unique names, DNS-1123 subdomains.
    let deployments = array(&v["spec"]["install"]["spec"]["deployments"]);
    let mut seen = BTreeSet::new();
    for (i, d) in deployments.iter().enumerate() {
        let dn = str_of(&d["name"]);
        if !seen.insert(dn) {
            push(
                "OLM012",
                at(&format!("/spec/install/spec/deployments/{i}/name")),
                format!("{name}: duplicate strategy deployment spec `{dn}`"),
            );
        }
        if let Some(why) = opship_core::naming::dns1123_subdomain_problem(dn) {
            push(
                "OLM012",
                at(&format!("/spec/install/spec/deployments/{i}/name")),
                format!("{name}: invalid strategy deployment name `{dn}`: {why}"),
            );
        }
    }

    // CRDs: owned ones present, none twice; objects of kinds v1 installs.
    let mut crd_names: BTreeMap<&str, usize> = BTreeMap::new();
    for o in objects {
        match o.kind() {
            "ClusterServiceVersion" => {}
            "CustomResourceDefinition" => {
                let n = crd_names.entry(o.name()).or_default();
                *n += 1;
                if *n == 2 {
                    push(
                        "OLM013",
                        o.origin(),
                        format!(
                            "bundle contains duplicate custom resource definition `{}`",
                            o.name()
                        ),
                    );
                }
            }
            kind if supported_kind(kind).is_none() => push(
                "OLM015",
                o.origin_of("/kind"),
                format!(
                    "bundle contains unsupported resource: Name: {}, Kind: {kind}; OLM v1 installs only {}",
                    o.name(),
                    SUPPORTED_KINDS
                        .iter()
                        .map(|(k, _)| *k)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            _ => {}
        }
    }
    let owned: Vec<(usize, &str)> = array(&v["spec"]["customresourcedefinitions"]["owned"])
        .iter()
        .enumerate()
        .map(|(i, d)| (i, str_of(&d["name"])))
        .collect();
    for (i, crd) in &owned {
        if !crd_names.contains_key(crd) {
            push(
                "OLM013",
                at(&format!("/spec/customresourcedefinitions/owned/{i}/name")),
                format!(
                    "{name}: references owned custom resource definition `{crd}` not found in bundle"
                ),
            );
        }
    }

    // Package name.
    if package.is_none_or(str::is_empty) {
        push(
            "OLM014",
            at(""),
            "package name is empty: metadata/annotations.yaml has no operators.operatorframework.io.bundle.package.v1"
                .to_owned(),
        );
    }

    webhooks(csv, &modes, &crd_names, objects, &mut out);
    out
}

/// Install modes as operator-controller prints them in its messages: `[AllNamespaces OwnNamespace]`.
pub fn mode_list(modes: &BTreeSet<String>) -> String {
    format!(
        "[{}]",
        modes
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ")
    )
}

fn webhooks(
    csv: &Object,
    modes: &BTreeSet<String>,
    crd_names: &BTreeMap<&str, usize>,
    objects: &[Object],
    out: &mut Vec<Problem>,
) {
    let name = csv.name();
    let v = csv.value();
    let defs = array(&v["spec"]["webhookdefinitions"]);
    let deployments: BTreeSet<&str> = array(&v["spec"]["install"]["spec"]["deployments"])
        .iter()
        .map(|d| str_of(&d["name"]))
        .collect();
    let owned: BTreeSet<&str> = array(&v["spec"]["customresourcedefinitions"]["owned"])
        .iter()
        .map(|d| str_of(&d["name"]))
        .collect();
    let mut names: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut conversion_crds: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut push = |rule, origin, message: String| {
        out.push(Problem {
            rule,
            origin,
            message,
        })
    };
    for (i, wh) in defs.iter().enumerate() {
        let ty = str_of(&wh["type"]);
        let gen_name = str_of(&wh["generateName"]);
        let at = |p: &str| csv.origin_of(&format!("/spec/webhookdefinitions/{i}{p}"));
        if ty == "ConversionWebhook" && (modes.len() != 1 || !modes.contains("AllNamespaces")) {
            push(
                "OLM008",
                at(""),
                format!(
                    "{name}: conversion webhook `{gen_name}` but supported install modes are {}; OLM v1 requires AllNamespaces only",
                    mode_list(modes)
                ),
            );
        }
        let dep = str_of(&wh["deploymentName"]);
        if !deployments.contains(dep) {
            push(
                "OLM010",
                at("/deploymentName"),
                format!(
                    "{name}: webhook of type `{ty}` with name `{gen_name}` references non-existent deployment `{dep}`"
                ),
            );
        }
        let seen = names.entry((ty, gen_name)).or_default();
        *seen += 1;
        if *seen == 2 {
            push(
                "OLM010",
                at("/generateName"),
                format!("{name}: duplicate webhook `{gen_name}` of type `{ty}`"),
            );
        }
        if let Some(why) = opship_core::naming::dns1123_subdomain_problem(gen_name) {
            push(
                "OLM016",
                at("/generateName"),
                format!("{name}: webhook of type `{ty}` has invalid name `{gen_name}`: {why}"),
            );
        }
        if ty == "ConversionWebhook" {
            for (j, crd) in array(&wh["conversionCRDs"]).iter().enumerate() {
                let crd = str_of(crd);
                conversion_crds.entry(crd).or_default().push(gen_name);
                if !owned.contains(crd) {
                    push(
                        "OLM010",
                        at(&format!("/conversionCRDs/{j}")),
                        format!(
                            "{name}: conversion webhook `{gen_name}` references custom resource definition `{crd}` not owned by the bundle"
                        ),
                    );
                } else if crd_names.contains_key(crd)
                    && objects.iter().any(|o| {
                        o.kind() == "CustomResourceDefinition"
                            && o.name() == crd
                            && o.value()["spec"]["preserveUnknownFields"] == Value::Bool(true)
                    })
                {
                    push(
                        "OLM013",
                        at(&format!("/conversionCRDs/{j}")),
                        format!(
                            "custom resource definition `{crd}` must have .spec.preserveUnknownFields set to false to let API Server call webhook to do the conversion"
                        ),
                    );
                }
            }
        } else {
            rules(csv, i, wh, &mut push);
        }
    }
    for (crd, hooks) in conversion_crds {
        if hooks.len() > 1 {
            let mut hooks = hooks;
            hooks.sort();
            push(
                "OLM010",
                csv.origin_of("/spec/webhookdefinitions"),
                format!(
                    "{name}: conversion webhooks [{}] reference same custom resource definition `{crd}`",
                    hooks.join(",")
                ),
            );
        }
    }
}

type Push<'a> = &'a mut dyn FnMut(&'static str, Origin, String);

fn rules(csv: &Object, i: usize, wh: &Value, push: Push<'_>) {
    let gen_name = str_of(&wh["generateName"]);
    for (r, rule) in array(&wh["rules"]).iter().enumerate() {
        for (g, group) in array(&rule["apiGroups"]).iter().enumerate() {
            let group = str_of(group);
            let at = csv.origin_of(&format!(
                "/spec/webhookdefinitions/{i}/rules/{r}/apiGroups/{g}"
            ));
            if group == "*" || group == "olm.operatorframework.io" {
                push(
                    "OLM009",
                    at,
                    format!(
                        "webhook `{gen_name}` contains forbidden rule: admission webhook rules cannot reference API group `{group}`"
                    ),
                );
            }
            if group == "admissionregistration.k8s.io" {
                for (k, res) in array(&rule["resources"]).iter().enumerate() {
                    let res = str_of(res);
                    if matches!(
                        res.to_ascii_lowercase().as_str(),
                        "*" | "mutatingwebhookconfiguration"
                            | "mutatingwebhookconfigurations"
                            | "validatingwebhookconfiguration"
                            | "validatingwebhookconfigurations"
                    ) {
                        push(
                            "OLM009",
                            csv.origin_of(&format!(
                                "/spec/webhookdefinitions/{i}/rules/{r}/resources/{k}"
                            )),
                            format!(
                                "webhook `{gen_name}` contains forbidden rule: admission webhook rules cannot reference resource `{res}` for API group `{group}`"
                            ),
                        );
                    }
                }
            }
        }
    }
}

//! Removed Kubernetes APIs (`DEP…`): what operator-sdk's `alpha-deprecated-apis` validator
//! (operator-framework/api `AlphaDeprecatedAPIsValidator`) checks for Kubernetes 1.22, 1.25
//! and 1.26, extended to every removal of the deprecation guide up to 1.32 (including the
//! flowcontrol APIs the reference misses). One finding per removal release lists every
//! affected bundle object and CSV `owned`/`required` resource; it is an error when
//! `--k8s-version` or the CSV's `minKubeVersion` is at or past the release, a warning
//! otherwise.

use opship_core::manifest::{Object, split_api_version};
use serde_json::Value;

use crate::Options;
use crate::good_practices::{csv_rules, strings};
use crate::load::Bundle;
use crate::rule::{Finding, Level, Rule};

rule!(
    DeprecatedApis,
    DEP001,
    Warning,
    Some("ValidationFailed"),
    "No APIs removed in Kubernetes 1.22 (v1beta1 CRDs, webhooks, RBAC, Ingress, ...)",
    "Kubernetes 1.22 removed the v1beta1 versions of CustomResourceDefinition, \
     Mutating/ValidatingWebhookConfiguration, APIService, TokenReview, SubjectAccessReviews, \
     CertificateSigningRequest, Lease, Ingress (also extensions/v1beta1), IngressClass, RBAC \
     kinds, PriorityClass, CSIDriver, CSINode, StorageClass and VolumeAttachment. Move to the \
     v1 APIs (for CRDs: apiextensions.k8s.io/v1 with a structural schema). An error when \
     --k8s-version or spec.minKubeVersion is 1.22 or later, a warning otherwise. See \
     https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22"
);
rule!(
    DeprecatedApis,
    DEP002,
    Warning,
    Some("ValidationFailed"),
    "No APIs removed in Kubernetes 1.25 (batch/v1beta1 CronJob, policy/v1beta1, ...)",
    "Kubernetes 1.25 removed batch/v1beta1 CronJob, discovery.k8s.io/v1beta1 EndpointSlice, \
     events.k8s.io/v1beta1 Event, autoscaling/v2beta1 HorizontalPodAutoscaler, policy/v1beta1 \
     PodDisruptionBudget and PodSecurityPolicy, and node.k8s.io/v1beta1 RuntimeClass. Move to \
     batch/v1, discovery.k8s.io/v1, events.k8s.io/v1, autoscaling/v2, policy/v1 and \
     node.k8s.io/v1 (PodSecurityPolicy has no successor: use Pod Security Admission). See \
     https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-25"
);
rule!(
    DeprecatedApis,
    DEP003,
    Warning,
    Some("ValidationFailed"),
    "No APIs removed in Kubernetes 1.26 (autoscaling/v2beta2, flowcontrol v1beta1)",
    "Kubernetes 1.26 removed autoscaling/v2beta2 HorizontalPodAutoscaler and \
     flowcontrol.apiserver.k8s.io/v1beta1 FlowSchema and PriorityLevelConfiguration. Move to \
     autoscaling/v2 and flowcontrol.apiserver.k8s.io/v1. (operator-framework/api checks only \
     the HorizontalPodAutoscaler.) See \
     https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-26"
);
rule!(
    DeprecatedApis,
    DEP004,
    Warning,
    None,
    "No APIs removed in Kubernetes 1.27 (storage.k8s.io/v1beta1 CSIStorageCapacity)",
    "Kubernetes 1.27 removed storage.k8s.io/v1beta1 CSIStorageCapacity; use storage.k8s.io/v1. \
     operator-framework/api does not check this release. See \
     https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-27"
);
rule!(
    DeprecatedApis,
    DEP005,
    Warning,
    None,
    "No APIs removed in Kubernetes 1.29 (flowcontrol.apiserver.k8s.io/v1beta2)",
    "Kubernetes 1.29 removed flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema and \
     PriorityLevelConfiguration; use flowcontrol.apiserver.k8s.io/v1. operator-framework/api \
     does not check this release. See \
     https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-29"
);
rule!(
    DeprecatedApis,
    DEP006,
    Warning,
    None,
    "No APIs removed in Kubernetes 1.32 (flowcontrol.apiserver.k8s.io/v1beta3)",
    "Kubernetes 1.32 removed flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema and \
     PriorityLevelConfiguration; use flowcontrol.apiserver.k8s.io/v1. operator-framework/api \
     does not check this release. See \
     https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-32"
);
rule!(
    DeprecatedApis,
    DEP007,
    Warning,
    Some("ValidationFailed"),
    "No RBAC rule grants access to podsecuritypolicies (removed in Kubernetes 1.25)",
    "PodSecurityPolicy was removed in Kubernetes 1.25 without a successor API, so a permission \
     on policy/podsecuritypolicies (typically `use`) grants nothing on current clusters and \
     hints at a security setup that no longer applies. Drop the rule and rely on Pod Security \
     Admission (namespace labels) or SecurityContextConstraints on OpenShift."
);
rule!(
    DeprecatedApis,
    DEP008,
    Error,
    Some("ValidationFailed"),
    "spec.minKubeVersion can be read as a version",
    "The removed-API checks compare spec.minKubeVersion with the Kubernetes release that removed \
     each API; the value must be a version such as 1.25.0 (`v1.25` and `1.25` are tolerated \
     here)."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[
    &DEP001, &DEP002, &DEP003, &DEP004, &DEP005, &DEP006, &DEP007, &DEP008,
];

/// APIs removed in one Kubernetes release: `(group, version, kinds, replacement apiVersion)`.
type Apis = &'static [(
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
)];

/// One removal release of the deprecation guide.
struct Removal {
    rule: &'static Rule,
    minor: u64,
    apis: Apis,
}

const FLOW: &[&str] = &["FlowSchema", "PriorityLevelConfiguration"];
const FLOW_V1: &str = "flowcontrol.apiserver.k8s.io/v1";

/// The removals of https://kubernetes.io/docs/reference/using-api/deprecation-guide/.
const REMOVALS: &[Removal] = &[
    Removal {
        rule: &DEP001,
        minor: 22,
        apis: &[
            (
                "admissionregistration.k8s.io",
                "v1beta1",
                &[
                    "MutatingWebhookConfiguration",
                    "ValidatingWebhookConfiguration",
                ],
                "admissionregistration.k8s.io/v1",
            ),
            (
                "apiextensions.k8s.io",
                "v1beta1",
                &["CustomResourceDefinition"],
                "apiextensions.k8s.io/v1",
            ),
            (
                "apiregistration.k8s.io",
                "v1beta1",
                &["APIService"],
                "apiregistration.k8s.io/v1",
            ),
            (
                "authentication.k8s.io",
                "v1beta1",
                &["TokenReview"],
                "authentication.k8s.io/v1",
            ),
            (
                "authorization.k8s.io",
                "v1beta1",
                &[
                    "LocalSubjectAccessReview",
                    "SelfSubjectAccessReview",
                    "SubjectAccessReview",
                ],
                "authorization.k8s.io/v1",
            ),
            (
                "certificates.k8s.io",
                "v1beta1",
                &["CertificateSigningRequest"],
                "certificates.k8s.io/v1",
            ),
            (
                "coordination.k8s.io",
                "v1beta1",
                &["Lease"],
                "coordination.k8s.io/v1",
            ),
            (
                "extensions",
                "v1beta1",
                &["Ingress"],
                "networking.k8s.io/v1",
            ),
            (
                "networking.k8s.io",
                "v1beta1",
                &["Ingress", "IngressClass"],
                "networking.k8s.io/v1",
            ),
            (
                "rbac.authorization.k8s.io",
                "v1beta1",
                &["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"],
                "rbac.authorization.k8s.io/v1",
            ),
            (
                "scheduling.k8s.io",
                "v1beta1",
                &["PriorityClass"],
                "scheduling.k8s.io/v1",
            ),
            (
                "storage.k8s.io",
                "v1beta1",
                &["CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"],
                "storage.k8s.io/v1",
            ),
        ],
    },
    Removal {
        rule: &DEP002,
        minor: 25,
        apis: &[
            ("batch", "v1beta1", &["CronJob"], "batch/v1"),
            (
                "discovery.k8s.io",
                "v1beta1",
                &["EndpointSlice"],
                "discovery.k8s.io/v1",
            ),
            ("events.k8s.io", "v1beta1", &["Event"], "events.k8s.io/v1"),
            (
                "autoscaling",
                "v2beta1",
                &["HorizontalPodAutoscaler"],
                "autoscaling/v2",
            ),
            ("policy", "v1beta1", &["PodDisruptionBudget"], "policy/v1"),
            (
                "policy",
                "v1beta1",
                &["PodSecurityPolicy"],
                "Pod Security Admission",
            ),
            (
                "node.k8s.io",
                "v1beta1",
                &["RuntimeClass"],
                "node.k8s.io/v1",
            ),
        ],
    },
    Removal {
        rule: &DEP003,
        minor: 26,
        apis: &[
            (
                "autoscaling",
                "v2beta2",
                &["HorizontalPodAutoscaler"],
                "autoscaling/v2",
            ),
            ("flowcontrol.apiserver.k8s.io", "v1beta1", FLOW, FLOW_V1),
        ],
    },
    Removal {
        rule: &DEP004,
        minor: 27,
        apis: &[(
            "storage.k8s.io",
            "v1beta1",
            &["CSIStorageCapacity"],
            "storage.k8s.io/v1",
        )],
    },
    Removal {
        rule: &DEP005,
        minor: 29,
        apis: &[("flowcontrol.apiserver.k8s.io", "v1beta2", FLOW, FLOW_V1)],
    },
    Removal {
        rule: &DEP006,
        minor: 32,
        apis: &[("flowcontrol.apiserver.k8s.io", "v1beta3", FLOW, FLOW_V1)],
    },
];

/// The Kubernetes releases this suite knows removals for, as `1.<minor>`.
pub fn releases() -> Vec<String> {
    REMOVALS.iter().map(|r| format!("1.{}", r.minor)).collect()
}

/// The replacement for a removed `apiVersion` + `kind`, with the release that removed it.
fn removed_in(api_version: &str, kind: &str) -> Option<(usize, &'static str)> {
    let (group, version) = split_api_version(api_version);
    REMOVALS.iter().enumerate().find_map(|(i, r)| {
        r.apis
            .iter()
            .find(|(g, v, kinds, _)| *g == group && *v == version && kinds.contains(&kind))
            .map(|(_, _, _, repl)| (i, *repl))
    })
}

/// One use of a removed API: what, where.
struct Hit {
    what: String,
    object: usize,
    pointer: String,
}

/// Runs the suite.
pub(crate) fn check(b: &Bundle, opts: &Options, out: &mut Vec<Finding>) {
    let csv = b.csv();
    let owner = csv.map_or(b.name.as_str(), Object::name);

    let mut min_kube = None;
    if let Some(csv) = csv
        && let Some(mkv) = csv.value()["spec"]["minKubeVersion"].as_str()
        && !mkv.trim().is_empty()
    {
        min_kube = crate::csv::parse_tolerant(mkv).ok();
        if min_kube.is_none() {
            out.push(
                Finding::new(
                    &DEP008,
                    owner,
                    format!(
                        "spec.minKubeVersion `{mkv}` is not a version; removed APIs are judged \
                         as if it were unset"
                    ),
                )
                .at(csv.origin_of("/spec/minKubeVersion")),
            );
        }
    }

    let mut hits: Vec<Vec<Hit>> = REMOVALS.iter().map(|_| Vec::new()).collect();
    for (idx, o) in b.objects.iter().enumerate() {
        if let Some((r, repl)) = removed_in(o.api_version(), o.kind()) {
            hits[r].push(Hit {
                what: format!("{} ({}; use {repl})", o.describe(), o.api_version()),
                object: idx,
                pointer: "/apiVersion".into(),
            });
        }
        if o.kind() == "ClusterServiceVersion" {
            csv_resources(o, idx, &mut hits);
        }
    }

    for (removal, hits) in REMOVALS.iter().zip(hits) {
        let Some(first) = hits.first() else { continue };
        let removed = semver::Version::new(1, removal.minor, 0);
        let release = format!("1.{}", removal.minor);
        let (level, why) = if let Some(k) = opts.k8s_version.as_ref().filter(|k| **k >= removed) {
            (
                Level::Error,
                format!("the target Kubernetes {k} no longer serves them"),
            )
        } else if let Some(m) = min_kube.as_ref().filter(|m| **m >= removed) {
            (
                Level::Error,
                format!("spec.minKubeVersion {m} is {release} or later"),
            )
        } else {
            (
                Level::Warning,
                format!("installing fails on Kubernetes {release} and later"),
            )
        };
        let list: Vec<&str> = hits.iter().map(|h| h.what.as_str()).collect();
        let o = &b.objects[first.object];
        out.push(
            Finding::new(
                removal.rule,
                owner,
                format!(
                    "uses APIs removed in Kubernetes {release} ({why}): {}; see \
                     https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-{}",
                    list.join(", "),
                    removal.minor
                ),
            )
            .with_level(level)
            .at(o.origin_of(&first.pointer)),
        );
    }

    psp_rules(b, csv, owner, out);
}

/// CSV `owned`/`required[].resources[]` entries whose `version` names a removed API
/// (`kind` plus a `group/version` in `version`, as the reference reads them).
fn csv_resources(csv: &Object, idx: usize, hits: &mut [Vec<Hit>]) {
    for relation in ["owned", "required"] {
        let ptr = format!("/spec/customresourcedefinitions/{relation}");
        let Some(list) = csv.value().pointer(&ptr).and_then(Value::as_array) else {
            continue;
        };
        for (i, crd) in list.iter().enumerate() {
            let Some(resources) = crd["resources"].as_array() else {
                continue;
            };
            for (j, res) in resources.iter().enumerate() {
                let (Some(kind), Some(version)) = (res["kind"].as_str(), res["version"].as_str())
                else {
                    continue;
                };
                if let Some((r, repl)) = removed_in(version, kind) {
                    hits[r].push(Hit {
                        what: format!(
                            "{kind} ({version}; use {repl}) in {relation}[{i}].resources[{j}] of \
                             the CSV"
                        ),
                        object: idx,
                        pointer: format!("{ptr}/{i}/resources/{j}"),
                    });
                }
            }
        }
    }
}

/// RBAC rules (CSV permissions, Role and ClusterRole objects) that grant access to
/// podsecuritypolicies.
fn psp_rules(b: &Bundle, csv: Option<&Object>, owner: &str, out: &mut Vec<Finding>) {
    let grants_psp = |rule: &Value| {
        strings(rule, "apiGroups")
            .iter()
            .any(|g| matches!(*g, "policy" | "extensions"))
            && strings(rule, "resources").contains(&"podsecuritypolicies")
    };
    if let Some(csv) = csv {
        for (field, ptr, rule) in csv_rules(csv) {
            if grants_psp(rule) {
                out.push(
                    Finding::new(
                        &DEP007,
                        owner,
                        format!(
                            "a rule in the CSV's {field} grants access to podsecuritypolicies, \
                             an API removed in Kubernetes 1.25"
                        ),
                    )
                    .at(csv.origin_of(ptr.as_str())),
                );
            }
        }
    }
    for o in b
        .objects
        .iter()
        .filter(|o| matches!(o.kind(), "Role" | "ClusterRole"))
    {
        let Some(rules) = o.value()["rules"].as_array() else {
            continue;
        };
        for (i, rule) in rules.iter().enumerate() {
            if grants_psp(rule) {
                out.push(
                    Finding::new(
                        &DEP007,
                        owner,
                        format!(
                            "{} grants access to podsecuritypolicies, an API removed in \
                             Kubernetes 1.25",
                            o.describe()
                        ),
                    )
                    .at(o.origin_of(&format!("/rules/{i}"))),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerant_versions() {
        let v = |s| crate::csv::parse_tolerant(s).ok().map(|v| v.to_string());
        assert_eq!(v("1.25"), Some("1.25.0".into()));
        assert_eq!(v(" v1.25.3 "), Some("1.25.3".into()));
        assert_eq!(v("1.025.0"), Some("1.25.0".into()));
        assert_eq!(v("1"), Some("1.0.0".into()));
        assert_eq!(v("1.28.0-0"), Some("1.28.0-0".into()));
        assert_eq!(v("1.25-rc"), None);
        assert_eq!(v("latest"), None);
        assert_eq!(v(""), None);
    }

    #[test]
    fn removal_table() {
        assert_eq!(
            removed_in("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition").map(|r| r.0),
            Some(0)
        );
        assert_eq!(
            removed_in("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema").map(|r| r.0),
            Some(5)
        );
        assert_eq!(removed_in("policy/v1", "PodDisruptionBudget"), None);
        assert_eq!(releases(), ["1.22", "1.25", "1.26", "1.27", "1.29", "1.32"]);
    }
}

//! Bundle-object rules (`OBJ…`): what opm's `bundle-objects` optional validator
//! (operator-framework/api `ObjectValidator`) checks in the extra objects a bundle ships:
//! PodDisruptionBudgets that block node drains, a PriorityClass that becomes the cluster
//! default, and roles that could weaken cluster stability.

use opship_core::manifest::Object;
use serde_json::Value;

use crate::Options;
use crate::good_practices::strings;
use crate::load::Bundle;
use crate::rule::{Finding, Rule};

rule!(
    BundleObjects,
    OBJ001,
    Error,
    Some("ObjectFailedValidation"),
    "A PodDisruptionBudget does not set maxUnavailable to 0 or 0%",
    "A PDB that allows no disruption blocks node drains and cluster upgrades for as long as \
     the operator is installed. OLM's guidance: never ship maxUnavailable 0 or \"0%\". Allow at \
     least one pod to be evicted. See https://github.com/operator-framework/operator-lifecycle-manager/blob/master/doc/design/adding-pod-disruption-budgets.md"
);
rule!(
    BundleObjects,
    OBJ002,
    Error,
    Some("ObjectFailedValidation"),
    "A PodDisruptionBudget does not set minAvailable to 100%",
    "minAvailable \"100%\" forbids every voluntary eviction, which blocks node drains and \
     cluster upgrades. Use a lower percentage or an absolute count below the replica count."
);
rule!(
    BundleObjects,
    OBJ003,
    Error,
    Some("ObjectFailedValidation"),
    "A PriorityClass is not the cluster's global default",
    "globalDefault: true changes the priority of every pod created without a priorityClassName \
     in the whole cluster. A bundle must not do that; set globalDefault: false and reference the \
     class from the operator's own pods."
);
rule!(
    BundleObjects,
    OBJ004,
    Warning,
    Some("ValidationFailed"),
    "Roles shipped in the bundle do not create or modify PodDisruptionBudgets",
    "A Role or ClusterRole that may create, update or patch policy/poddisruptionbudgets lets its \
     holder block node drains. Grant it only when the operator really manages PDBs for its \
     operands, and keep those PDBs permissive."
);
rule!(
    BundleObjects,
    OBJ005,
    Error,
    Some("ObjectFailedValidation"),
    "Roles shipped in the bundle do not modify OpenShift's default SecurityContextConstraints",
    "Changing or deleting the default SCCs (privileged, restricted, anyuid, hostaccess, \
     hostmount-anyuid, hostnetwork, node-exporter, nonroot) affects every workload on an \
     OpenShift cluster. Create a dedicated SCC for the operator instead and grant `use` on it."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[&OBJ001, &OBJ002, &OBJ003, &OBJ004, &OBJ005];

/// OpenShift's default SecurityContextConstraints.
pub const DEFAULT_SCCS: &[&str] = &[
    "privileged",
    "restricted",
    "anyuid",
    "hostaccess",
    "hostmount-anyuid",
    "hostnetwork",
    "node-exporter",
    "nonroot",
];

/// Runs the suite.
pub(crate) fn check(b: &Bundle, _opts: &Options, out: &mut Vec<Finding>) {
    for o in &b.objects {
        match o.kind() {
            "PodDisruptionBudget" => pdb(o, out),
            "PriorityClass" if o.value()["globalDefault"].as_bool() == Some(true) => out.push(
                Finding::new(
                    &OBJ003,
                    o.name(),
                    format!("{}: globalDefault must not be true", o.describe()),
                )
                .at(o.origin_of("/globalDefault")),
            ),
            "Role" | "ClusterRole" => rbac(o, out),
            _ => {}
        }
    }
}

fn pdb(o: &Object, out: &mut Vec<Finding>) {
    let spec = &o.value()["spec"];
    let zero = match &spec["maxUnavailable"] {
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => matches!(s.trim(), "0" | "0%"),
        _ => false,
    };
    if zero {
        out.push(
            Finding::new(
                &OBJ001,
                o.name(),
                format!(
                    "{}: maxUnavailable {} allows no disruption and blocks node drains",
                    o.describe(),
                    spec["maxUnavailable"]
                ),
            )
            .at(o.origin_of("/spec/maxUnavailable")),
        );
    }
    if spec["minAvailable"].as_str().map(str::trim) == Some("100%") {
        out.push(
            Finding::new(
                &OBJ002,
                o.name(),
                format!(
                    "{}: minAvailable \"100%\" allows no disruption and blocks node drains",
                    o.describe()
                ),
            )
            .at(o.origin_of("/spec/minAvailable")),
        );
    }
}

fn rbac(o: &Object, out: &mut Vec<Finding>) {
    let Some(rules) = o.value()["rules"].as_array() else {
        return;
    };
    for (i, rule) in rules.iter().enumerate() {
        let groups = strings(rule, "apiGroups");
        let resources = strings(rule, "resources");
        let verbs = strings(rule, "verbs");
        let has = |list: &[&str], items: &[&str]| list.iter().any(|x| items.contains(x));
        let at = o.origin_of(&format!("/rules/{i}"));
        if has(&groups, &["policy", "*"])
            && has(&resources, &["poddisruptionbudgets", "*"])
            && has(&verbs, &["*", "create", "update", "patch"])
        {
            out.push(
                Finding::new(
                    &OBJ004,
                    o.name(),
                    format!(
                        "{}: rule {} may create or update poddisruptionbudgets, which could \
                         block node drains",
                        o.describe(),
                        i + 1
                    ),
                )
                .at(at.clone()),
            );
        }
        let names = strings(rule, "resourceNames");
        let defaults: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| DEFAULT_SCCS.contains(n))
            .collect();
        if has(&groups, &["security.openshift.io"])
            && has(&resources, &["securitycontextconstraints"])
            && has(&verbs, &["*", "delete", "update", "patch"])
            && !defaults.is_empty()
        {
            out.push(
                Finding::new(
                    &OBJ005,
                    o.name(),
                    format!(
                        "{}: rule {} may modify the default SecurityContextConstraints {}",
                        o.describe(),
                        i + 1,
                        defaults.join(", ")
                    ),
                )
                .at(at),
            );
        }
    }
}

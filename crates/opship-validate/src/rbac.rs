//! RBAC least-privilege rules (`RBAC…`): a review of what the operator asks for in the CSV's
//! `spec.install.spec.permissions` (namespaced, become Roles) and `clusterPermissions` (become
//! ClusterRoles), and of the Role and ClusterRole objects shipped in `manifests/`. Each finding
//! points at the offending entry of the rule (`.../rules/3/verbs/0`).

use opship_core::manifest::Object;
use serde_json::Value;

use crate::Options;
use crate::load::Bundle;
use crate::rule::{Finding, Rule};

rule!(
    Rbac,
    RBAC001,
    Warning,
    None,
    "No RBAC rule grants every verb (`*`)",
    "`verbs: [\"*\"]` grants every current and future verb, including escalate, bind, \
     impersonate and deletecollection. List the verbs the operator uses (usually get, list, \
     watch, create, update, patch, delete); kubebuilder markers generate exact lists."
);
rule!(
    Rbac,
    RBAC002,
    Warning,
    None,
    "No RBAC rule grants every resource (`*`)",
    "`resources: [\"*\"]` covers every resource of the listed API groups, including ones added \
     later by other operators, and subresources such as secrets or pods/exec in the core \
     group. Name the resources."
);
rule!(
    Rbac,
    RBAC003,
    Warning,
    None,
    "No RBAC rule grants every API group (`*`)",
    "`apiGroups: [\"*\"]` extends the rule to every API group on the cluster, present and \
     future. Name the groups the operator talks to."
);
rule!(
    Rbac,
    RBAC004,
    Warning,
    None,
    "Secrets are not readable cluster-wide",
    "get, list or watch on secrets in clusterPermissions or a ClusterRole lets the operator read \
     every secret in every namespace: service-account tokens, TLS keys, other applications' \
     credentials. Read secrets in the namespaces it manages (permissions, or a Role per \
     namespace), or restrict the rule with resourceNames."
);
rule!(
    Rbac,
    RBAC005,
    Warning,
    None,
    "No escalate, bind or impersonate verbs",
    "escalate and bind let the holder grant permissions it does not have; impersonate lets it \
     act as any user, group or service account. An operator rarely needs them; if it creates \
     RoleBindings, grant it the bound permissions instead of bind."
);
rule!(
    Rbac,
    RBAC006,
    Warning,
    None,
    "The operator does not create or delete CustomResourceDefinitions",
    "OLM installs and upgrades the CRDs of a bundle; an operator that creates or deletes CRDs \
     at run time competes with OLM and can remove every custom resource of the cluster. Ship \
     the CRDs in the bundle and drop create/delete on customresourcedefinitions."
);
rule!(
    Rbac,
    RBAC007,
    Warning,
    None,
    "No rule grants every non-resource URL (`*`)",
    "`nonResourceURLs: [\"*\"]` opens every API server path that is not a resource (/metrics, \
     /debug/pprof, /logs, ...). Name the paths (usually /metrics)."
);
rule!(
    Rbac,
    RBAC008,
    Warning,
    None,
    "No cluster-wide access to pod exec/attach, node proxy or token creation",
    "create on pods/exec or pods/attach, get on nodes/proxy, and create on \
     serviceaccounts/token, granted cluster-wide, let the operator run commands in any pod, \
     reach every kubelet or mint tokens for any service account: each is a route to \
     cluster-admin. Scope them to the operator's namespace."
);
rule!(
    Rbac,
    RBAC009,
    Warning,
    None,
    "Namespaced permissions do not name cluster-scoped resources",
    "When the operator is installed for chosen namespaces (OwnNamespace, SingleNamespace, \
     MultiNamespace), spec.install.spec.permissions become Roles there, and a Role cannot grant \
     access to cluster-scoped resources such as nodes, namespaces or customresourcedefinitions: \
     the rule has no effect and the operator fails at run time. (AllNamespaces installs turn \
     permissions into a ClusterRole, which hides the mistake.) Move the rule to \
     clusterPermissions."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[
    &RBAC001, &RBAC002, &RBAC003, &RBAC004, &RBAC005, &RBAC006, &RBAC007, &RBAC008, &RBAC009,
];

/// Runs the suite.
pub(crate) fn check(b: &Bundle, _opts: &Options, out: &mut Vec<Finding>) {
    if let Some(csv) = b.csv() {
        let spec = &csv.value()["spec"]["install"]["spec"];
        // With AllNamespaces, OLM turns `permissions` into a ClusterRole; only installs for
        // chosen namespaces keep them in Roles.
        let namespaced_install = array(&csv.value()["spec"]["installModes"]).iter().any(|m| {
            m["supported"].as_bool() == Some(true)
                && matches!(
                    str_of(&m["type"]),
                    "OwnNamespace" | "SingleNamespace" | "MultiNamespace"
                )
        });
        for (kind, cluster) in [("permissions", false), ("clusterPermissions", true)] {
            for (p, perm) in array(&spec[kind]).iter().enumerate() {
                let sa = str_of(&perm["serviceAccountName"]);
                let base = format!("/spec/install/spec/{kind}/{p}/rules");
                let ctx = Ctx {
                    obj: csv,
                    name: csv.name(),
                    what: format!("{kind} of `{sa}`"),
                    cluster,
                    csv_namespaced: !cluster && namespaced_install,
                };
                rules(&ctx, &perm["rules"], &base, out);
            }
        }
    }
    for o in b.others() {
        let cluster = match o.kind() {
            "ClusterRole" => true,
            "Role" => false,
            _ => continue,
        };
        if !o.group().starts_with("rbac.authorization.k8s.io") {
            continue;
        }
        // Rules of an aggregated ClusterRole are filled in by the controller manager.
        if o.value()
            .get("aggregationRule")
            .is_some_and(|v| !v.is_null())
        {
            continue;
        }
        let ctx = Ctx {
            obj: o,
            name: o.name(),
            what: o.describe(),
            cluster,
            csv_namespaced: false,
        };
        rules(&ctx, &o.value()["rules"], "/rules", out);
    }
}

/// Where the rules come from.
struct Ctx<'a> {
    obj: &'a Object,
    /// The object name for findings.
    name: &'a str,
    /// How messages name the rule's owner (`clusterPermissions of \`sa\``, `ClusterRole x`).
    what: String,
    /// Whether the rules apply cluster-wide.
    cluster: bool,
    /// Whether these are the CSV's namespaced permissions (checked by RBAC009).
    csv_namespaced: bool,
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// The string items of a list field, with their indexes.
fn items<'v>(rule: &'v Value, field: &str) -> Vec<(usize, &'v str)> {
    array(&rule[field])
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_str().map(|s| (i, s)))
        .collect()
}

/// Cluster-scoped resources of the built-in API groups that a namespaced Role cannot grant.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "nodes"),
    ("", "namespaces"),
    ("", "persistentvolumes"),
    ("", "componentstatuses"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("apiregistration.k8s.io", "apiservices"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "volumeattachments"),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ),
    ("scheduling.k8s.io", "priorityclasses"),
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("node.k8s.io", "runtimeclasses"),
    ("networking.k8s.io", "ingressclasses"),
    ("config.openshift.io", "clusterversions"),
    ("security.openshift.io", "securitycontextconstraints"),
];

fn rules(ctx: &Ctx<'_>, rules: &Value, base: &str, out: &mut Vec<Finding>) {
    for (r, rule) in array(rules).iter().enumerate() {
        let at = |field: &str, i: Option<usize>| {
            let p = match i {
                Some(i) => format!("{base}/{r}/{field}/{i}"),
                None => format!("{base}/{r}/{field}"),
            };
            ctx.obj.origin_of(&p)
        };
        let push = |out: &mut Vec<Finding>, rule: &'static Rule, msg: String, o| {
            out.push(Finding::new(rule, ctx.name, format!("{} rule {r}: {msg}", ctx.what)).at(o));
        };
        let verbs = items(rule, "verbs");
        let groups = items(rule, "apiGroups");
        let resources = items(rule, "resources");
        let urls = items(rule, "nonResourceURLs");
        let named = !array(&rule["resourceNames"]).is_empty();
        let has_verb = |v: &str| verbs.iter().any(|(_, x)| *x == v || *x == "*");
        let in_group = |g: &str| groups.iter().any(|(_, x)| *x == g || *x == "*");

        if let Some((i, _)) = verbs.iter().find(|(_, v)| *v == "*") {
            let on = if resources.is_empty() && !urls.is_empty() {
                "non-resource URLs".to_owned()
            } else if resources.is_empty() {
                "nothing (no resources listed)".to_owned()
            } else {
                resources
                    .iter()
                    .map(|(_, r)| *r)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            push(
                out,
                &RBAC001,
                format!("grants every verb (`*`) on {on}"),
                at("verbs", Some(*i)),
            );
        }
        if let Some((i, _)) = resources.iter().find(|(_, v)| *v == "*") {
            let gs: Vec<&str> = groups
                .iter()
                .map(|(_, g)| if g.is_empty() { "core" } else { g })
                .collect();
            push(
                out,
                &RBAC002,
                format!(
                    "grants every resource (`*`) of API groups {}",
                    gs.join(", ")
                ),
                at("resources", Some(*i)),
            );
        }
        if let Some((i, _)) = groups.iter().find(|(_, v)| *v == "*") {
            push(
                out,
                &RBAC003,
                "applies to every API group (`*`)".to_owned(),
                at("apiGroups", Some(*i)),
            );
        }
        if ctx.cluster
            && !named
            && in_group("")
            && let Some((i, _)) = resources.iter().find(|(_, v)| *v == "secrets")
        {
            let read: Vec<&str> = ["get", "list", "watch"]
                .into_iter()
                .filter(|v| has_verb(v))
                .collect();
            if !read.is_empty() {
                push(
                    out,
                    &RBAC004,
                    format!("can {} secrets in every namespace", read.join("/")),
                    at("resources", Some(*i)),
                );
            }
        }
        for (i, v) in &verbs {
            if matches!(*v, "escalate" | "bind" | "impersonate") {
                push(
                    out,
                    &RBAC005,
                    format!("grants `{v}`"),
                    at("verbs", Some(*i)),
                );
            }
        }
        if in_group("apiextensions.k8s.io")
            && let Some((i, _)) = resources
                .iter()
                .find(|(_, v)| *v == "customresourcedefinitions")
        {
            let write: Vec<&str> = ["create", "delete", "deletecollection"]
                .into_iter()
                .filter(|v| has_verb(v))
                .collect();
            if !write.is_empty() {
                push(
                    out,
                    &RBAC006,
                    format!("can {} customresourcedefinitions", write.join("/")),
                    at("resources", Some(*i)),
                );
            }
        }
        if let Some((i, _)) = urls.iter().find(|(_, v)| *v == "*") {
            push(
                out,
                &RBAC007,
                "grants every non-resource URL (`*`)".to_owned(),
                at("nonResourceURLs", Some(*i)),
            );
        }
        if ctx.cluster {
            for (i, res) in &resources {
                let (group, verb) = match *res {
                    "pods/exec" | "pods/attach" => ("", "create"),
                    "nodes/proxy" => ("", "get"),
                    "serviceaccounts/token" => ("", "create"),
                    _ => continue,
                };
                if in_group(group) && has_verb(verb) {
                    push(
                        out,
                        &RBAC008,
                        format!("grants {verb} on {res} in every namespace"),
                        at("resources", Some(*i)),
                    );
                }
            }
        }
        if ctx.csv_namespaced {
            for (i, res) in &resources {
                let hit = CLUSTER_SCOPED
                    .iter()
                    .find(|(g, r)| r == res && groups.iter().any(|(_, x)| x == g));
                if let Some((g, _)) = hit {
                    push(
                        out,
                        &RBAC009,
                        format!(
                            "`{res}` ({}) is cluster-scoped; in OwnNamespace/SingleNamespace \
                             installs the Role cannot grant it",
                            if g.is_empty() { "core" } else { g }
                        ),
                        at("resources", Some(*i)),
                    );
                }
            }
        }
    }
}

//! Folding RBAC into the CSV: the rules of Roles and ClusterRoles bound to the operator's
//! service accounts become `permissions` and `clusterPermissions`, because OLM creates those
//! service accounts and grants them what the CSV lists.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Value, json};

use crate::error::Result;
use crate::manifest::Object;

use super::collect::Collected;

/// Result of folding.
#[derive(Debug, Default)]
pub(crate) struct Folded {
    /// `spec.install.spec.permissions`, sorted by service account.
    pub permissions: Vec<Value>,
    /// `spec.install.spec.clusterPermissions`, sorted by service account.
    pub cluster_permissions: Vec<Value>,
    /// RBAC objects and service accounts that stay as their own manifests.
    pub leftover: Vec<Object>,
    /// Things the user should know (bindings to built-in roles).
    pub warnings: Vec<String>,
}

/// ClusterRoles every cluster has; binding to them is fine even though they are not in the
/// manifests.
fn is_builtin_cluster_role(name: &str) -> bool {
    matches!(name, "admin" | "edit" | "view" | "cluster-admin") || name.starts_with("system:")
}

fn rules_of(role: &Object) -> Vec<Value> {
    role.value()["rules"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Folds the bindings of `c` for the service accounts in `csv_sas`.
pub(crate) fn fold(c: &Collected, csv_sas: &BTreeSet<String>) -> Result<Folded> {
    let roles: HashMap<&str, usize> = c
        .roles
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name(), i))
        .collect();
    let cluster_roles: HashMap<&str, usize> = c
        .cluster_roles
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name(), i))
        .collect();
    // Roles whose rules went into the CSV, and roles a written binding still refers to.
    let mut role_folded = vec![false; c.roles.len()];
    let mut role_needed = vec![false; c.roles.len()];
    let mut crole_folded = vec![false; c.cluster_roles.len()];
    let mut crole_needed = vec![false; c.cluster_roles.len()];

    let mut perms: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut cperms: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut out = Folded::default();

    // Bindings in name order, so the rules' order does not depend on the input's file order
    // (a directory and a kustomize stream of the same objects give the same CSV).
    let mut bindings: Vec<(&Object, bool)> = c
        .role_bindings
        .iter()
        .map(|b| (b, false))
        .chain(c.cluster_role_bindings.iter().map(|b| (b, true)))
        .collect();
    bindings.sort_by(|a, b| (a.1, a.0.name()).cmp(&(b.1, b.0.name())));
    for (binding, cluster_scoped) in bindings {
        let role_ref = &binding.value()["roleRef"];
        let ref_kind = role_ref["kind"].as_str().unwrap_or_default();
        let ref_name = role_ref["name"].as_str().unwrap_or_default();
        let ref_group = role_ref["apiGroup"].as_str().unwrap_or_default();
        if ref_name.is_empty() || !matches!(ref_kind, "Role" | "ClusterRole") {
            return Err(binding.error(
                "/roleRef",
                "roleRef must name a Role or ClusterRole (kind and name)",
            ));
        }
        if !matches!(ref_group, "" | "rbac.authorization.k8s.io") {
            return Err(binding.error(
                "/roleRef/apiGroup",
                format!("roleRef.apiGroup `{ref_group}` is not rbac.authorization.k8s.io"),
            ));
        }
        if cluster_scoped && ref_kind == "Role" {
            return Err(binding.error(
                "/roleRef/kind",
                "a ClusterRoleBinding can only refer to a ClusterRole",
            ));
        }
        let target = if ref_kind == "Role" {
            roles.get(ref_name).map(|&i| (false, i))
        } else {
            cluster_roles.get(ref_name).map(|&i| (true, i))
        };
        let Some((target_is_cluster_role, idx)) = target else {
            if ref_kind == "ClusterRole" && is_builtin_cluster_role(ref_name) {
                out.warnings.push(format!(
                    "{} ({}) binds the built-in ClusterRole {ref_name}; it is kept as a manifest",
                    binding.describe(),
                    binding.origin()
                ));
                out.leftover.push(binding.clone());
                continue;
            }
            return Err(binding.error(
                "/roleRef/name",
                format!("refers to {ref_kind} {ref_name}, which is not among the manifests"),
            ));
        };
        let subjects = binding.value()["subjects"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut any_csv = false;
        let mut any_other = false;
        for s in &subjects {
            let name = s["name"].as_str().unwrap_or_default();
            if s["kind"].as_str() == Some("ServiceAccount") && csv_sas.contains(name) {
                any_csv = true;
                let rules = if target_is_cluster_role {
                    rules_of(&c.cluster_roles[idx])
                } else {
                    rules_of(&c.roles[idx])
                };
                // A ClusterRole granted through a RoleBinding only applies in the namespace.
                let dest = if cluster_scoped {
                    &mut cperms
                } else {
                    &mut perms
                };
                dest.entry(name.to_owned()).or_default().extend(rules);
            } else {
                any_other = true;
            }
        }
        let (folded, needed) = if target_is_cluster_role {
            (&mut crole_folded, &mut crole_needed)
        } else {
            (&mut role_folded, &mut role_needed)
        };
        if any_csv {
            folded[idx] = true;
        }
        if any_other || !any_csv {
            needed[idx] = true;
            out.leftover.push(binding.clone());
        }
    }

    for (i, r) in c.roles.iter().enumerate() {
        if role_needed[i] || !role_folded[i] {
            out.leftover.push(r.clone());
        }
    }
    for (i, r) in c.cluster_roles.iter().enumerate() {
        if crole_needed[i] || !crole_folded[i] {
            out.leftover.push(r.clone());
        }
    }
    for sa in &c.service_accounts {
        if !csv_sas.contains(sa.name()) {
            out.leftover.push(sa.clone());
        }
    }

    let to_list = |m: BTreeMap<String, Vec<Value>>| -> Vec<Value> {
        m.into_iter()
            .filter(|(_, rules)| !rules.is_empty())
            .map(|(sa, rules)| json!({"serviceAccountName": sa, "rules": rules}))
            .collect()
    };
    out.permissions = to_list(perms);
    out.cluster_permissions = to_list(cperms);
    Ok(out)
}

/// The service account a Deployment's pods run as (`default` when unset).
pub(crate) fn service_account_of(deployment: &Object) -> String {
    let pod = &deployment.value()["spec"]["template"]["spec"];
    pod["serviceAccountName"]
        .as_str()
        .or_else(|| pod["serviceAccount"].as_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_owned()
}

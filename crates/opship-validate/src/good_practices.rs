//! Good-practices rules (`GP…`): what operator-sdk's `good-practices` validator
//! (operator-framework/api `GoodPracticesValidator`) checks: an install strategy with
//! deployments, resource requests on every container, CRD descriptions, channel naming, no
//! permission to create CRDs, and the `<operator>.v<semver>` CSV name.

use opship_core::bundle::metadata::keys;
use opship_core::manifest::Object;
use serde_json::Value;

use crate::Options;
use crate::load::Bundle;
use crate::rule::{Finding, Rule};

rule!(
    GoodPractices,
    GP001,
    Error,
    Some("ValidationFailed"),
    "The CSV's install strategy has deployments",
    "OLM installs an operator by creating the deployments listed under \
     spec.install.spec.deployments. A CSV without any installs nothing. Add the operator's \
     Deployment (generated bundles take it from config/manager)."
);
rule!(
    GoodPractices,
    GP002,
    Warning,
    Some("ValidationFailed"),
    "Every container of the install deployments requests CPU and memory",
    "Without resources.requests.cpu and resources.requests.memory the scheduler cannot place \
     the pod sensibly, and clusters with ResourceQuotas or LimitRanges may reject it. Set \
     requests on every container, including sidecars such as kube-rbac-proxy. See \
     https://sdk.operatorframework.io/docs/best-practices/managing-resources/"
);
rule!(
    GoodPractices,
    GP003,
    Warning,
    Some("ValidationFailed"),
    "Owned and required CRDs in the CSV have a description",
    "spec.customresourcedefinitions.owned[] and .required[] entries are shown to users in the \
     console and on OperatorHub; an empty description leaves them guessing what the API is for. \
     Describe each API in one sentence (kubebuilder: a `// +operator-sdk:csv:customresourcedefinitions` \
     marker or the type's doc comment)."
);
rule!(
    GoodPractices,
    GP004,
    Warning,
    Some("ValidationFailed"),
    "Channel names follow the candidate/fast/stable convention",
    "OLM's channel-naming recommendation: channels start with `candidate`, `fast` or `stable` \
     (optionally suffixed, e.g. `stable-v1`), so users can tell a channel's risk level at a \
     glance. Other names (the sdk default `alpha`, release numbers) still work. See \
     https://olm.operatorframework.io/docs/best-practices/channel-naming"
);
rule!(
    GoodPractices,
    GP005,
    Warning,
    Some("ValidationFailed"),
    "The CSV's permissions do not allow creating or patching CRDs",
    "OLM installs and upgrades the CRDs a bundle ships. An operator that creates or patches \
     CustomResourceDefinitions itself (a meta operator, CRDs among its operands) bypasses OLM's \
     CRD upgrade safety checks and dependency resolution. Ship the CRDs in the bundle or depend \
     on the operator that owns them. See \
     https://sdk.operatorframework.io/docs/best-practices/common-recommendation/"
);
rule!(
    GoodPractices,
    GP006,
    Warning,
    Some("ValidationFailed"),
    "The CSV name ends with a MAJOR.MINOR.PATCH version",
    "Bundle names (the CSV's metadata.name) conventionally end with the bundle's semantic \
     version, e.g. memcached-operator.v0.0.1, so catalogs and humans can tell versions apart. \
     See https://semver.org/"
);
rule!(
    GoodPractices,
    GP007,
    Warning,
    Some("ValidationFailed"),
    "The CSV name has the form <operator-name>.v<semver>",
    "The recommended bundle name is the package name, `.v` and the version, e.g. \
     memcached-operator.v0.0.1: exactly one `.v` separating the two. `opship generate bundle` \
     names the CSV this way."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[&GP001, &GP002, &GP003, &GP004, &GP005, &GP006, &GP007];

/// Runs the suite.
pub(crate) fn check(b: &Bundle, _opts: &Options, out: &mut Vec<Finding>) {
    let Some(csv) = b.csv() else { return };
    let name = csv.name();
    deployments(csv, name, out);
    crd_descriptions(csv, name, out);
    channels(b, name, out);
    crd_permissions(csv, name, out);
    csv_name(csv, name, out);
}

/// The CSV's `spec.install.spec.deployments`, with their JSON pointers.
pub(crate) fn csv_deployments(csv: &Object) -> Vec<(String, &Value)> {
    csv.value()
        .pointer("/spec/install/spec/deployments")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .enumerate()
                .map(|(i, d)| (format!("/spec/install/spec/deployments/{i}"), d))
                .collect()
        })
        .unwrap_or_default()
}

/// Every RBAC rule of the CSV's `clusterPermissions` and `permissions`: the field name
/// (`clusterPermissions` or `permissions`), the JSON pointer of the rule and the rule.
pub(crate) fn csv_rules(csv: &Object) -> Vec<(&'static str, String, &Value)> {
    let mut out = Vec::new();
    for field in ["clusterPermissions", "permissions"] {
        let Some(perms) = csv
            .value()
            .pointer(&format!("/spec/install/spec/{field}"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        for (i, perm) in perms.iter().enumerate() {
            let Some(rules) = perm["rules"].as_array() else {
                continue;
            };
            for (j, rule) in rules.iter().enumerate() {
                out.push((
                    field,
                    format!("/spec/install/spec/{field}/{i}/rules/{j}"),
                    rule,
                ));
            }
        }
    }
    out
}

/// The strings of a list-of-strings field of an RBAC rule (`apiGroups`, `resources`, ...);
/// anything that is not a string is skipped.
pub(crate) fn strings<'a>(rule: &'a Value, field: &str) -> Vec<&'a str> {
    rule[field]
        .as_array()
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn deployments(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    let deps = csv.value().pointer("/spec/install/spec/deployments");
    match deps.and_then(Value::as_array) {
        Some(list) if !list.is_empty() => {}
        _ => {
            let ptr = if deps.is_some() {
                "/spec/install/spec/deployments"
            } else {
                "/spec/install"
            };
            out.push(
                Finding::new(
                    &GP001,
                    name,
                    format!(
                        "CSV {name} has no deployment to install (spec.install.spec.deployments \
                         is missing or empty)"
                    ),
                )
                .at(csv.origin_of(ptr)),
            );
            return;
        }
    }
    for (ptr, dep) in csv_deployments(csv) {
        let dep_name = dep["name"].as_str().unwrap_or_default();
        let Some(containers) = dep
            .pointer("/spec/template/spec/containers")
            .and_then(Value::as_array)
        else {
            continue;
        };
        for (i, c) in containers.iter().enumerate() {
            let requests = &c["resources"]["requests"];
            let missing: Vec<&str> = ["cpu", "memory"]
                .into_iter()
                .filter(|k| requests.get(*k).is_none_or(Value::is_null))
                .collect();
            if missing.is_empty() {
                continue;
            }
            let cname = c["name"].as_str().unwrap_or_default();
            let cptr = format!("{ptr}/spec/template/spec/containers/{i}");
            let at = if c["resources"].is_object() {
                format!("{cptr}/resources")
            } else {
                cptr
            };
            out.push(
                Finding::new(
                    &GP002,
                    name,
                    format!(
                        "container `{cname}` of deployment `{dep_name}` requests no {}",
                        missing.join(" and no ")
                    ),
                )
                .at(csv.origin_of(&at)),
            );
        }
    }
}

fn crd_descriptions(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    for relation in ["owned", "required"] {
        let ptr = format!("/spec/customresourcedefinitions/{relation}");
        let Some(list) = csv.value().pointer(&ptr).and_then(Value::as_array) else {
            continue;
        };
        for (i, crd) in list.iter().enumerate() {
            if crd["description"].as_str().is_some_and(|d| !d.is_empty()) {
                continue;
            }
            let crd_name = crd["name"].as_str().unwrap_or_default();
            out.push(
                Finding::new(
                    &GP003,
                    name,
                    format!("{relation} CRD `{crd_name}` has an empty description"),
                )
                .at(csv.origin_of(&format!("{ptr}/{i}"))),
            );
        }
    }
}

fn channels(b: &Bundle, name: &str, out: &mut Vec<Finding>) {
    let Some(a) = &b.annotations else { return };
    let mut seen: Vec<&str> = Vec::new();
    let listed = a.get(keys::CHANNELS).unwrap_or_default().split(',');
    for ch in listed.chain(a.get(keys::DEFAULT_CHANNEL)) {
        let ch = ch.trim();
        if !ch.is_empty() && !seen.contains(&ch) {
            seen.push(ch);
        }
    }
    let bad: Vec<String> = seen
        .into_iter()
        .filter(|c| {
            !["candidate", "stable", "fast"]
                .iter()
                .any(|p| c.starts_with(p))
        })
        .map(|c| format!("`{c}`"))
        .collect();
    if bad.is_empty() {
        return;
    }
    let key = if a.get(keys::CHANNELS).is_some() {
        keys::CHANNELS
    } else {
        keys::DEFAULT_CHANNEL
    };
    out.push(
        Finding::new(
            &GP004,
            name,
            format!(
                "channel{} {} not start with candidate, fast or stable",
                if bad.len() == 1 { "" } else { "s" },
                if bad.len() == 1 {
                    format!("{} does", bad[0])
                } else {
                    format!("{} do", bad.join(", "))
                }
            ),
        )
        .at(a.origin(key)),
    );
}

fn crd_permissions(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    let hits: Vec<(&str, String)> = csv_rules(csv)
        .into_iter()
        .filter(|(_, _, rule)| {
            let groups = strings(rule, "apiGroups");
            let resources = strings(rule, "resources");
            let verbs = strings(rule, "verbs");
            groups
                .iter()
                .any(|g| matches!(*g, "apiextensions.k8s.io" | "*"))
                && resources
                    .iter()
                    .any(|r| matches!(*r, "customresourcedefinitions" | "*" | "[*]"))
                && verbs
                    .iter()
                    .any(|v| matches!(*v, "create" | "patch" | "*" | "[*]"))
        })
        .map(|(field, ptr, _)| (field, ptr))
        .collect();
    let Some((field, ptr)) = hits.first() else {
        return;
    };
    let more = match hits.len() {
        1 => String::new(),
        n => format!(
            " (and {} more rule{})",
            n - 1,
            if n == 2 { "" } else { "s" }
        ),
    };
    out.push(
        Finding::new(
            &GP005,
            name,
            format!(
                "CSV {name} grants create or patch on customresourcedefinitions in \
                 {field}{more}; operators should not manage CRDs themselves"
            ),
        )
        .at(csv.origin_of(ptr)),
    );
}

/// The `MAJOR.MINOR.PATCH[-pre][+build]` a name ends with, as the reference's pattern finds it
/// (the leftmost start from which the rest of the name matches).
fn trailing_version(name: &str) -> Option<&str> {
    let bytes = name.as_bytes();
    (0..bytes.len())
        .filter(|&i| bytes[i].is_ascii_digit())
        .find(|&i| matches_version(&name[i..]))
        .map(|i| &name[i..])
}

fn matches_version(s: &str) -> bool {
    fn digits(s: &str) -> Option<&str> {
        let n = s.bytes().take_while(u8::is_ascii_digit).count();
        (n > 0).then(|| &s[n..])
    }
    fn ident(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
    }
    let Some(rest) = digits(s)
        .and_then(|r| r.strip_prefix('.'))
        .and_then(digits)
        .and_then(|r| r.strip_prefix('.'))
        .and_then(digits)
    else {
        return false;
    };
    let (pre_part, build) = match rest.split_once('+') {
        Some((p, b)) => (p, Some(b)),
        None => (rest, None),
    };
    let pre_ok = match pre_part.strip_prefix('-') {
        Some(pre) => pre.split('.').all(ident),
        None => pre_part.is_empty(),
    };
    pre_ok && build.is_none_or(ident)
}

fn csv_name(csv: &Object, name: &str, out: &mut Vec<Finding>) {
    let at = csv.origin_of("/metadata/name");
    let versioned = trailing_version(name).is_some_and(|v| semver::Version::parse(v).is_ok());
    if !versioned {
        out.push(
            Finding::new(
                &GP006,
                name,
                format!(
                    "CSV name `{name}` does not end with a MAJOR.MINOR.PATCH version \
                     (e.g. memcached-operator.v0.0.1)"
                ),
            )
            .at(at.clone()),
        );
    }
    if name.split(".v").count() != 2 {
        out.push(
            Finding::new(
                &GP007,
                name,
                format!(
                    "CSV name `{name}` is not of the form <operator-name>.v<semver> \
                     (e.g. memcached-operator.v0.0.1)"
                ),
            )
            .at(at),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_versions() {
        assert_eq!(trailing_version("op.v1.2.3"), Some("1.2.3"));
        assert_eq!(
            trailing_version("op.v10.2.3-rc.1+b7"),
            Some("10.2.3-rc.1+b7")
        );
        assert_eq!(trailing_version("a.1.2.3.4"), Some("2.3.4"));
        assert_eq!(trailing_version("op.v1.2"), None);
        assert_eq!(trailing_version("op.v1.2.3+a.b"), None);
        assert_eq!(trailing_version("op-v1.2.3-final"), Some("1.2.3-final"));
        assert!(semver::Version::parse(trailing_version("op.v1.02.3").unwrap()).is_err());
    }
}

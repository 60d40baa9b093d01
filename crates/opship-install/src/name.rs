//! OLM v1's generated object names: `<base>-<hash>` within 63 characters, where the hash is
//! base 36 of the SHA-224 of Go's `json.Encoder` output for the permission entry. The names
//! must come out byte for byte as operator-controller's, since a chart and a cluster managed
//! by OLM v1 must not disagree on which Role is which.

use opship_core::gojson;
use serde_json::Value;
use sha2::{Digest, Sha224};

/// Kubernetes' limit for a label-like name, which operator-controller applies to every
/// generated name.
const MAX_NAME: usize = 63;

/// `base-suffix`, with `base` cut so that the whole is at most 63 bytes (as
/// operator-controller's `ObjectNameForBaseAndSuffix`; the cut is on bytes, and names are
/// ASCII by then since the CSV name and service account are DNS names).
pub fn for_base_and_suffix(base: &str, suffix: &str) -> String {
    if base.len() + suffix.len() > MAX_NAME {
        let keep = MAX_NAME.saturating_sub(suffix.len() + 1);
        let mut cut = keep.min(base.len());
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}-{suffix}", &base[..cut])
    } else {
        format!("{base}-{suffix}")
    }
}

/// The name of the Role/ClusterRole (and binding) for one permission entry.
/// `rules` is `None` when the CSV entry has no `rules` (Go writes `null`).
pub fn for_permission(base: &str, service_account: &str, rules: Option<&[Rule]>) -> String {
    // `StrategyDeploymentPermissions` in Go's field order, as `json.Encoder` writes it (with
    // its trailing newline).
    let entry = serde_json::json!({
        "serviceAccountName": service_account,
        "rules": rules_value(rules),
    });
    let mut json = gojson::to_string(&entry, gojson::MARSHAL);
    json.push('\n');
    let digest = Sha224::digest(json.as_bytes());
    for_base_and_suffix(base, &base36(&digest))
}

/// Rules as a Kubernetes object field (`rules` of a Role), `null` for a nil list.
pub fn rules_value(rules: Option<&[Rule]>) -> Value {
    match rules {
        None => Value::Null,
        Some(r) => Value::Array(r.iter().map(Rule::to_value).collect()),
    }
}

/// One RBAC policy rule as Go's `rbacv1.PolicyRule` holds it: `None` is a nil slice (absent
/// in the CSV), which Go writes as `null` for `verbs` and leaves out for the rest.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    /// `verbs`.
    pub verbs: Option<Vec<String>>,
    /// `apiGroups`.
    pub api_groups: Option<Vec<String>>,
    /// `resources`.
    pub resources: Option<Vec<String>>,
    /// `resourceNames`.
    pub resource_names: Option<Vec<String>>,
    /// `nonResourceURLs`.
    pub non_resource_urls: Option<Vec<String>>,
}

impl Rule {
    /// The rule OLM adds when it lifts namespaced permissions to cluster scope.
    pub fn namespaces_read() -> Rule {
        Rule {
            verbs: Some(vec!["get".into(), "list".into(), "watch".into()]),
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["namespaces".into()]),
            ..Rule::default()
        }
    }

    /// The rule as a Kubernetes object field, keys in Go's order, nil slices left out (as
    /// `sigs.k8s.io/yaml` writes a typed rule: `verbs` has no omitempty, so a nil one is
    /// `null`).
    pub fn to_value(&self) -> Value {
        let mut m = serde_json::Map::new();
        let list = |v: &Vec<String>| Value::Array(v.iter().cloned().map(Value::String).collect());
        m.insert(
            "verbs".into(),
            self.verbs.as_ref().map(list).unwrap_or(Value::Null),
        );
        for (key, field) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if let Some(v) = field.as_ref().filter(|v| !v.is_empty()) {
                m.insert(key.into(), list(v));
            }
        }
        Value::Object(m)
    }
}

/// Big-endian bytes as a base-36 number in lower case, without leading zeros (Go's
/// `big.Int.Text(36)`).
fn base36(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut num: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    let mut out = Vec::new();
    while !num.is_empty() {
        let mut rem: u32 = 0;
        let mut next = Vec::with_capacity(num.len());
        for &b in &num {
            let cur = (rem << 8) | u32::from(b);
            let q = cur / 36;
            rem = cur % 36;
            if !(next.is_empty() && q == 0) {
                next.push(q as u8);
            }
        }
        out.push(DIGITS[rem as usize]);
        num = next;
    }
    if out.is_empty() {
        out.push(b'0');
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base36_matches_go() {
        assert_eq!(base36(&[0]), "0");
        assert_eq!(base36(&[35]), "z");
        assert_eq!(base36(&[36]), "10");
        assert_eq!(base36(&[1, 0]), "74");
    }

    #[test]
    fn long_bases_are_cut_to_63() {
        let n = for_base_and_suffix(&"a".repeat(70), "xyz");
        assert_eq!(n.len(), 63);
        assert!(n.ends_with("-xyz"));
    }
}

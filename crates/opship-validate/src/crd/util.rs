//! Helpers of the CRD suite: field paths that print like Kubernetes' `field.Path` and double as
//! JSON pointers into the YAML, the name checks of `k8s.io/apimachinery/pkg/util/validation`,
//! and Go's `url.ParseRequestURI` acceptance test.

use opship_core::yaml::escape_pointer_token;
use serde_json::Value;

/// One step of a field path.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seg<'a> {
    /// A struct field: `.name`, pointer `/name`.
    F(&'a str),
    /// A map key: `[key]`, pointer `/key`.
    K(&'a str),
    /// A list index: `[3]`, pointer `/3`.
    I(usize),
}

/// `spec.versions[0].name`, as Kubernetes prints field paths.
pub(crate) fn field_path(segs: &[Seg<'_>]) -> String {
    let mut s = String::new();
    for seg in segs {
        match seg {
            Seg::F(f) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(f);
            }
            Seg::K(k) => {
                s.push('[');
                s.push_str(k);
                s.push(']');
            }
            Seg::I(i) => {
                s.push('[');
                s.push_str(&i.to_string());
                s.push(']');
            }
        }
    }
    s
}

/// The JSON pointer of the same node.
pub(crate) fn pointer(segs: &[Seg<'_>]) -> String {
    let mut s = String::new();
    for seg in segs {
        s.push('/');
        match seg {
            Seg::F(f) | Seg::K(f) => s.push_str(&escape_pointer_token(f)),
            Seg::I(i) => s.push_str(&i.to_string()),
        }
    }
    s
}

/// A value as Kubernetes prints it in `Invalid value: ...` (strings quoted).
pub(crate) fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        other => {
            let t = other.to_string();
            if t.chars().count() > 80 {
                format!("{}...", t.chars().take(77).collect::<String>())
            } else {
                t
            }
        }
    }
}

/// A string quoted the way Go's `%q` does for plain text.
pub(crate) fn quote(s: &str) -> String {
    format!("{s:?}")
}

const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters \
     or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. \
     'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// `IsDNS1035Label`: the problems, empty when valid.
pub(crate) fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".into());
    }
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-';
    if !ok {
        errs.push(DNS1035_MSG.into());
    }
    errs
}

pub(crate) use opship_core::naming::{
    dns1123_subdomain_messages as dns1123_subdomain, label_value_problem, qualified_name_problem,
};

/// Whether Go's `url.ParseRequestURI` accepts `s` (what the API approval annotation needs).
pub(crate) fn parses_as_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    // getScheme
    let mut rest = s;
    let mut has_scheme = false;
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' => {
                if i == 0 {
                    return false;
                }
                has_scheme = true;
                rest = &s[i + 1..];
                break;
            }
            _ => break,
        }
    }
    let rest = rest.split_once('?').map_or(rest, |(a, _)| a);
    if !rest.starts_with('/') {
        // An opaque URI (`mailto:x`) is fine with a scheme, a relative path is not.
        return has_scheme;
    }
    if has_scheme && let Some(auth) = rest.strip_prefix("//") {
        let authority = auth.split('/').next().unwrap_or_default();
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        // A port, when given, must be digits.
        let after_bracket = host.rsplit_once(']').map_or(host, |(_, p)| p);
        if let Some((_, port)) = after_bracket.rsplit_once(':')
            && !port.bytes().all(|b| b.is_ascii_digit())
        {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let segs = [
            Seg::F("spec"),
            Seg::F("versions"),
            Seg::I(1),
            Seg::F("properties"),
            Seg::K("a/b"),
        ];
        assert_eq!(field_path(&segs), "spec.versions[1].properties[a/b]");
        assert_eq!(pointer(&segs), "/spec/versions/1/properties/a~1b");
    }

    #[test]
    fn names() {
        assert!(dns1035_label("v1alpha1").is_empty());
        assert!(!dns1035_label("1v").is_empty());
        assert!(!dns1035_label("V1").is_empty());
        assert!(dns1123_subdomain("cache.example.com").is_empty());
        assert!(!dns1123_subdomain("Cache.example.com").is_empty());
        assert!(qualified_name_problem("example.com/foo").is_none());
        assert!(qualified_name_problem("a/b/c").is_some());
        assert!(label_value_problem("").is_none());
        assert!(label_value_problem("-x").is_some());
    }

    #[test]
    fn request_uris() {
        assert!(parses_as_request_uri(
            "https://github.com/kubernetes/enhancements/pull/1111"
        ));
        assert!(parses_as_request_uri("/relative/path"));
        assert!(parses_as_request_uri("mailto:someone"));
        assert!(!parses_as_request_uri("approved"));
        assert!(!parses_as_request_uri(":x"));
        assert!(!parses_as_request_uri("https://host:abc/"));
    }
}

//! Names and versions as Kubernetes and OLM check them: the one implementation that
//! generation refuses with and validation reports with (rules CSV001, CSV002, CSV020),
//! and the check of every name that becomes a path.

/// Why `name` is not a DNS-1123 subdomain, or `None` when it is one.
pub fn dns1123_subdomain_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("metadata.name is empty".into());
    }
    if name.len() > 253 {
        return Some(format!(
            "name `{}` is longer than 253 characters",
            crate::naming::excerpt(name)
        ));
    }
    let ok = name.split('.').all(|label| {
        !label.is_empty()
            && label
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    });
    (!ok).then(|| {
        format!(
            "name `{}` is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', \
             starting and ending with a letter or digit)",
            excerpt(name)
        )
    })
}

/// Why `name` cannot be a ClusterServiceVersion's `metadata.name` (or `spec.replaces`), or
/// `None`: OLM uses it as an object name and as a label value.
pub fn csv_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is empty".into());
    }
    let mut why = Vec::new();
    if dns1123_subdomain_problem(name).is_some() {
        why.push(
            "is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and \
             ending with a letter or digit)",
        );
    }
    if name.len() > 63 {
        why.push("is longer than 63 characters (it is used as a label value)");
    }
    (!why.is_empty()).then(|| format!("`{}` {}", excerpt(name), why.join(" and ")))
}

/// Why a CSV named `name` may not have `spec.replaces: replaces`, or `None`.
pub fn replaces_problem(name: &str, replaces: &str) -> Option<String> {
    if replaces.is_empty() {
        return None;
    }
    if replaces == name {
        return Some(format!(
            "`{}` is this CSV itself; a bundle cannot upgrade from itself",
            excerpt(replaces)
        ));
    }
    csv_name_problem(replaces)
}

/// Why `range` is not an `olm.skipRange` OLM can read (a blang/semver range), or `None`.
pub fn skip_range_problem(range: &str) -> Option<String> {
    crate::semver_range::parse(range)
        .err()
        .map(|e| format!("`{}` is not a semver range: {e}", excerpt(range)))
}

/// Why `name` cannot be used as one directory name below a catalog or output directory (the
/// package of `index/<package>/`), or `None`.
pub fn path_component_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is empty".into());
    }
    if name == "." || name == ".." || name.starts_with('.') {
        return Some(format!("`{}` starts with a dot", excerpt(name)));
    }
    if name.contains(['/', '\\', '\0']) || name.chars().any(char::is_control) {
        return Some(format!(
            "`{}` contains a path separator or a control character",
            excerpt(name)
        ));
    }
    if name.len() > 255 {
        return Some("is longer than 255 bytes".into());
    }
    None
}

/// The most bytes of a value that a message quotes.
pub const EXCERPT_BYTES: usize = 200;

/// `value` as a message quotes it: whole when short, else its first [`EXCERPT_BYTES`] bytes
/// (cut at a character boundary) and its length, so a 1 MB value never fills a report.
pub fn excerpt(value: &str) -> std::borrow::Cow<'_, str> {
    if value.len() <= EXCERPT_BYTES {
        return value.into();
    }
    let mut end = EXCERPT_BYTES;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &value[..end], value.len()).into()
}

/// Whether `c` is one path component of an image repository name as the distribution
/// reference grammar has it: `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`. Shared by the registry
/// client's reference parser and the validator's pull-spec rule.
pub fn repository_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        if !(matches!(sep, "." | "_" | "__") || sep.bytes().all(|x| x == b'-')) {
            return false;
        }
    }
    true
}

/// Whether `s` is an upper-case image placeholder (`REPLACE_IMAGE`, `IMAGE_PLACEHOLDER`,
/// `OPERATOR-IMG`, optionally with a tag: `REPLACE_ME:latest`): a project's `IMG` that make,
/// kustomize and operator-sdk pass through into the bundle unchanged, for a later step of its
/// pipeline to replace. No registry takes an upper-case repository, so such a name never
/// stands for a pullable image; `generate` writes it as operator-sdk does (and `validate`
/// reports it under BND007, as not releasable yet).
pub fn is_image_placeholder(s: &str) -> bool {
    let (name, tag) = match s.split_once(':') {
        Some((n, t)) => (n, Some(t)),
        None => (s, None),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 128
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '-');
    let tag_ok = tag.is_none_or(|t| {
        !t.is_empty()
            && t.len() <= 128
            && t.bytes().next().is_some_and(is_word)
            && t.bytes().all(|c| is_word(c) || c == b'.' || c == b'-')
    });
    name_ok && tag_ok
}

/// Why `s` is not an image reference `docker/distribution`'s `ParseNormalizedNamed` accepts,
/// or `None`: what `generate` refuses to write and rule BND007 reports.
pub fn image_reference_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("empty".into());
    }
    if s.len() == 64 && s.bytes().all(|c| matches!(c, b'a'..=b'f' | b'0'..=b'9')) {
        return Some("a bare 64-character hex string is an image ID, not a name".into());
    }
    // Normalize the domain as ParseNormalizedNamed does.
    let (domain, remainder) = match s.find('/') {
        Some(i)
            if s[..i].contains(['.', ':'])
                || &s[..i] == "localhost"
                || s[..i].to_lowercase() != s[..i] =>
        {
            (&s[..i], s[i + 1..].to_owned())
        }
        _ => ("docker.io", s.to_owned()),
    };
    let domain = if domain == "index.docker.io" {
        "docker.io"
    } else {
        domain
    };
    let remainder = if domain == "docker.io" && !remainder.contains('/') {
        format!("library/{remainder}")
    } else {
        remainder
    };
    let remote = remainder.split(':').next().unwrap_or_default();
    if remote.to_lowercase() != remote {
        return Some(format!("repository name `{remote}` must be lower-case"));
    }
    let full = format!("{domain}/{remainder}");
    let (name_tag, digest) = match full.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (full.as_str(), None),
    };
    let (name, tag) = match name_tag.rsplit_once(':') {
        Some((n, t)) if !t.contains('/') => (n, Some(t)),
        _ => (name_tag, None),
    };
    if let Some(t) = tag {
        let ok = !t.is_empty()
            && t.len() <= 128
            && t.bytes().next().is_some_and(is_word)
            && t.bytes().all(|c| is_word(c) || c == b'.' || c == b'-');
        if !ok {
            return Some(format!(
                "tag `{t}` must be 1-128 of [A-Za-z0-9_.-], not starting with '.' or '-'"
            ));
        }
    }
    if let Some(d) = digest
        && let Some(p) = digest_problem(d)
    {
        return Some(p);
    }
    if name.len() > 255 {
        return Some("the repository name is longer than 255 characters".into());
    }
    let parts: Vec<&str> = name.split('/').collect();
    let paths_ok = |ps: &[&str]| !ps.is_empty() && ps.iter().all(|p| repository_path_component(p));
    let ok = paths_ok(&parts) || (parts.len() > 1 && domain_ok(parts[0]) && paths_ok(&parts[1..]));
    if !ok {
        return Some(
            "the repository path must be lower-case letters and digits separated by '/', '.', \
             '_', '__' or '-'"
                .into(),
        );
    }
    None
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `host[:port]`: dot-separated `[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?` or `[ipv6]`.
fn domain_ok(d: &str) -> bool {
    let (host, port) = if d.starts_with('[') {
        match d.find(']') {
            Some(i) => (&d[..=i], d[i + 1..].strip_prefix(':')),
            None => return false,
        }
    } else {
        match d.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (d, None),
        }
    };
    if d.starts_with('[') && !d[host.len()..].is_empty() && port.is_none() {
        return false;
    }
    if let Some(p) = port
        && (p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()))
    {
        return false;
    }
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.trim_end_matches(']');
        return !inner.is_empty() && inner.bytes().all(|c| c.is_ascii_hexdigit() || c == b':');
    }
    !host.is_empty()
        && host.split('.').all(|c| {
            !c.is_empty()
                && c.bytes().all(|x| x.is_ascii_alphanumeric() || x == b'-')
                && !c.starts_with('-')
                && !c.ends_with('-')
        })
}

/// `algorithm:hex` with a supported algorithm and the right length of lower-case hex.
fn digest_problem(d: &str) -> Option<String> {
    let Some((alg, hex)) = d.split_once(':') else {
        return Some(format!("digest `{d}` must be <algorithm>:<hex>"));
    };
    let len = match alg {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => {
            return Some(format!(
                "digest algorithm `{alg}` is not sha256, sha384 or sha512"
            ));
        }
    };
    if hex.len() != len || !hex.bytes().all(|c| matches!(c, b'a'..=b'f' | b'0'..=b'9')) {
        return Some(format!(
            "{alg} digest must be {len} lower-case hex characters"
        ));
    }
    None
}

/// The API server's words for a name that is not a DNS-1123 subdomain.
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
     alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character \
     (e.g. 'example.com', regex used for validation is \
     '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn is_label_1123(l: &str) -> bool {
    let b = l.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// `IsDNS1123Subdomain`: the problems in the API server's words, empty when valid.
pub fn dns1123_subdomain_messages(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".into());
    }
    if !s.split('.').all(is_label_1123) {
        errs.push(DNS1123_SUBDOMAIN_MSG.into());
    }
    errs
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `IsQualifiedName` (label and annotation keys): why not, if not.
pub fn qualified_name_problem(s: &str) -> Option<String> {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if name.contains('/') {
        return Some("a qualified name must have at most one '/'".into());
    }
    if let Some(p) = prefix {
        if p.is_empty() {
            return Some("prefix part must be non-empty".into());
        }
        if let Some(e) = dns1123_subdomain_messages(p).into_iter().next() {
            return Some(format!("prefix part {e}"));
        }
    }
    if !is_qualified_name_part(name) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start \
             and end with an alphanumeric character (at most 63 characters)"
                .into(),
        );
    }
    None
}

/// `IsValidLabelValue`: why not, if not.
pub fn label_value_problem(s: &str) -> Option<String> {
    (!s.is_empty() && !is_qualified_name_part(s)).then(|| {
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' \
         or '.', and must start and end with an alphanumeric character (at most 63 characters)"
            .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_placeholders() {
        for p in [
            "REPLACE_IMAGE",
            "IMAGE_PLACEHOLDER",
            "OPERATOR-IMG",
            "IMG2",
            "REPLACE_ME:latest",
        ] {
            assert!(is_image_placeholder(p), "{p}");
            assert!(image_reference_problem(p).is_some(), "{p}");
        }
        for p in [
            "",
            "controller",
            "Replace_Image",
            "quay.io/REPLACE",
            "REPLACE/IMAGE",
            "_IMG",
            "IMG:",
            "IMG:-x",
            "IMG@sha256:00",
            "REPLACE IMAGE",
        ] {
            assert!(!is_image_placeholder(p), "{p}");
        }
    }

    #[test]
    fn pullspecs() {
        for ok in [
            "quay.io/example/op:v1",
            "memcached",
            "docker.io/library/memcached:1.6.26-alpine",
            "localhost:5000/a/b",
            "registry.example.com:443/ns/img@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "quay.io/a/b:v1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "gcr.io/a__b/c-d.e_f:1.0",
            "[::1]:5000/x",
        ] {
            assert_eq!(image_reference_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "quay.io/Example/op",
            "quay.io/a/b:",
            "quay.io/a/b:-x",
            "quay.io/a/b@sha256:abc",
            "quay.io/a/b@md5:0123456789abcdef0123456789abcdef",
            "quay.io//b",
            "quay.io/a/b c",
            "a/b/",
            "quay.io/a..b/c",
        ] {
            assert!(image_reference_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn csv_names() {
        assert!(csv_name_problem("memcached-operator.v0.3.0").is_none());
        assert!(csv_name_problem("memcached-operator.v1.0.0+meta").is_some());
        assert!(csv_name_problem("Memcached.v1").is_some());
        assert!(csv_name_problem(&format!("{}.v1.0.0", "a".repeat(60))).is_some());
        assert!(csv_name_problem("a..b").is_some());
        assert!(replaces_problem("a.v1.0.0", "a.v1.0.0").is_some());
        assert!(replaces_problem("a.v1.0.1", "a.v1.0.0").is_none());
    }

    #[test]
    fn skip_ranges_and_paths() {
        assert!(skip_range_problem(">=1.0.0 <1.2.0").is_none());
        assert!(skip_range_problem("garbage").is_some());
        for bad in ["", ".", "..", "../../escaped", "/abs", "a/b", ".hidden"] {
            assert!(path_component_problem(bad).is_some(), "{bad}");
        }
        assert!(path_component_problem("etcd").is_none());
    }

    #[test]
    fn excerpts_are_short_and_on_char_boundaries() {
        let long = "é".repeat(1000);
        let e = excerpt(&long);
        assert!(e.len() < 260 && e.ends_with("(2000 bytes)"), "{e}");
        assert_eq!(excerpt("short"), "short");
    }
}

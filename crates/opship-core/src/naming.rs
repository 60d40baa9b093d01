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

#[cfg(test)]
mod tests {
    use super::*;

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

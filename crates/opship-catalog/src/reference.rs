//! Checks of what opm checks by parsing: image pull specs (the grammar of
//! `distribution/reference.ParseNormalizedNamed`), bundle versions (blang/semver's `Parse`, with
//! its error messages) and package names (Kubernetes' DNS-1123 label).

use std::sync::LazyLock;

use regex::Regex;

static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    let domain_component = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
    let domain = format!(
        r"(?:{domain_component}(?:\.{domain_component})*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?"
    );
    let name_component = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*";
    let name = format!(r"(?:{domain}/)?{name_component}(?:/{name_component})*");
    // Go's `\w` is ASCII (RE2); Rust's is Unicode, which also makes this regex take ~200M
    // instructions to compile (128 bounded repeats of the Unicode word class).
    let tag = r"[0-9A-Za-z_][0-9A-Za-z_.-]{0,127}";
    let digest = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}";
    Regex::new(&format!(r"^({name})(?::({tag}))?(?:@({digest}))?$")).expect("valid regex")
});

static HEX64: LazyLock<Regex> = LazyLock::new(|| Regex::new("^[a-f0-9]{64}$").expect("regex"));

/// Checks a pull spec as `reference.ParseNormalizedNamed` does; the error is its message.
pub fn check_pull_spec(spec: &str) -> Result<(), String> {
    if HEX64.is_match(spec) {
        return Err(format!(
            "invalid repository name ({spec}), cannot specify 64-byte hexadecimal strings"
        ));
    }
    // Docker Hub names without a registry host get `docker.io/` (and `library/`).
    let (domain, remainder) = match spec.split_once('/') {
        Some((d, rest)) if d.contains(['.', ':']) || d == "localhost" || d.to_lowercase() != d => {
            (d.to_owned(), rest.to_owned())
        }
        _ => ("docker.io".to_owned(), spec.to_owned()),
    };
    let remote = remainder.split(':').next().unwrap_or_default();
    let remote = remote.split('@').next().unwrap_or_default();
    if remote.to_lowercase() != remote {
        return Err(format!(
            "invalid reference format: repository name ({remote}) must be lowercase"
        ));
    }
    let full = format!("{domain}/{remainder}");
    let Some(caps) = REFERENCE.captures(&full) else {
        if full.is_empty() || remainder.is_empty() {
            return Err("repository name must have at least one component".into());
        }
        if REFERENCE.is_match(&full.to_lowercase()) {
            return Err("repository name must be lowercase".into());
        }
        return Err("invalid reference format".into());
    };
    if caps.get(1).map_or(0, |m| m.as_str().len()) > 255 {
        return Err("repository name must not be more than 255 characters".into());
    }
    if let Some(d) = caps.get(3) {
        let (alg, hex) = d.as_str().split_once(':').unwrap_or_default();
        match alg {
            "sha256" if hex.len() != 64 => return Err("invalid checksum digest length".into()),
            "sha384" if hex.len() != 96 => return Err("invalid checksum digest length".into()),
            "sha512" if hex.len() != 128 => return Err("invalid checksum digest length".into()),
            "sha256" | "sha384" | "sha512" => {
                if hex.chars().any(|c| c.is_ascii_uppercase()) {
                    return Err("invalid checksum digest format".into());
                }
            }
            _ => return Err("unsupported digest algorithm".into()),
        }
    }
    Ok(())
}

/// blang/semver v4 `Parse`: strict `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, with its messages.
pub fn parse_version(s: &str) -> Result<semver::Version, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Err("No Major.Minor.Patch elements found".into());
    }
    let numeric = |p: &str, what: &str, cap: &str| -> Result<(), String> {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("Invalid character(s) found in {what} number {p:?}"));
        }
        if p.len() > 1 && p.starts_with('0') {
            return Err(format!(
                "{cap} number must not contain leading zeroes {p:?}"
            ));
        }
        p.parse::<u64>()
            .map(|_| ())
            .map_err(|e| format!("strconv.ParseUint: parsing {p:?}: {e}"))
    };
    numeric(parts[0], "major", "Major")?;
    numeric(parts[1], "minor", "Minor")?;
    let mut patch = parts[2];
    let mut build: Option<&str> = None;
    if let Some(i) = patch.find('+') {
        build = Some(&patch[i + 1..]);
        patch = &patch[..i];
    }
    let mut pre: Option<&str> = None;
    if let Some(i) = patch.find('-') {
        pre = Some(&patch[i + 1..]);
        patch = &patch[..i];
    }
    numeric(patch, "patch", "Patch")?;
    if let Some(pre) = pre {
        for p in pre.split('.') {
            if p.is_empty() {
                return Err("Prerelease is empty".into());
            }
            if p.bytes().all(|b| b.is_ascii_digit()) {
                if p.len() > 1 && p.starts_with('0') {
                    return Err(format!(
                        "Numeric PreRelease version must not contain leading zeroes {p:?}"
                    ));
                }
            } else if !p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                return Err(format!("Invalid character(s) found in prerelease {p:?}"));
            }
        }
    }
    if let Some(build) = build {
        for b in build.split('.') {
            if b.is_empty() {
                return Err("Build meta data is empty".into());
            }
            if !b.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') {
                return Err(format!(
                    "Invalid character(s) found in build meta data {b:?}"
                ));
            }
        }
    }
    semver::Version::parse(s).map_err(|e| e.to_string())
}

/// Kubernetes' `IsDNS1123Label`: the list of problems (empty when fine).
pub fn dns1123_label_errors(name: &str) -> Vec<String> {
    static LABEL: LazyLock<Regex> =
        LazyLock::new(|| Regex::new("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").expect("regex"));
    let mut errs = Vec::new();
    if name.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    if !LABEL.is_match(name) {
        errs.push(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
             '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .to_owned(),
        );
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_specs() {
        for ok in [
            "quay.io/example/op-bundle:v0.1.0",
            "127.0.0.1:5000/corpus/keda:1.4.1",
            "busybox",
            "registry.example.com/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(check_pull_spec(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            check_pull_spec("Quay.io/UPPER/x:v1").unwrap_err(),
            "invalid reference format: repository name (UPPER/x) must be lowercase"
        );
        assert!(check_pull_spec("quay.io/a b").is_err());
        assert!(check_pull_spec("quay.io/a@sha256:abc").is_err());
    }

    #[test]
    fn versions() {
        assert_eq!(
            parse_version("1.0").unwrap_err(),
            "No Major.Minor.Patch elements found"
        );
        assert!(parse_version("v1.0.0").is_err());
        assert_eq!(
            parse_version("1.2.3-rc.1+b5").unwrap().to_string(),
            "1.2.3-rc.1+b5"
        );
        assert!(
            parse_version("01.2.3")
                .unwrap_err()
                .contains("leading zeroes")
        );
    }
}

//! OperatorHub rules (`OHB…`): what operator-sdk's `operatorhub` selector runs
//! (operator-framework/api `OperatorHubV2Validator`, `StandardCapabilitiesValidator`,
//! `StandardCategoriesValidator`, and the deprecated `OperatorHubValidator` that bundles them):
//! provider, maintainers, links, version, icon, minKubeVersion, capability level and categories.
//! Removed Kubernetes APIs, which the reference also reports here, are the `deprecated-apis`
//! suite's job, and a minKubeVersion that is not MAJOR.MINOR.PATCH is the csv suite's CSV009.

use opship_core::manifest::Object;
use serde_json::Value;

use crate::Options;
use crate::load::Bundle;
use crate::rule::{Finding, Rule};

rule!(
    Operatorhub,
    OHB001,
    Error,
    Some("CSVFileNotValid"),
    "spec.provider.name is set",
    "OperatorHub shows who publishes the operator. Set spec.provider.name (and optionally \
     spec.provider.url) in the CSV."
);
rule!(
    Operatorhub,
    OHB002,
    Error,
    Some("CSVFileNotValid"),
    "Each maintainer has a name and a valid email address",
    "Every spec.maintainers[] entry needs `name` and `email`, and the email must parse as an \
     RFC 5322 address (what Go's net/mail accepts): `alice@example.com` or \
     `Alice <alice@example.com>`."
);
rule!(
    Operatorhub,
    OHB003,
    Error,
    Some("CSVFileNotValid"),
    "Each link has a name and a valid URL",
    "Every spec.links[] entry needs `name` and `url`, and the URL must be absolute (with a \
     scheme such as https://) and well-formed, as Go's url.ParseRequestURI requires."
);
rule!(
    Operatorhub,
    OHB004,
    Error,
    Some("CSVFileNotValid"),
    "spec.version is set",
    "OperatorHub and OLM order bundles by spec.version. Set it to the bundle's semantic \
     version (0.0.0 counts as unset)."
);
rule!(
    Operatorhub,
    OHB005,
    Error,
    Some("CSVFileNotValid"),
    "spec.icon is one icon with data and a supported media type",
    "spec.icon must be a list with exactly one {base64data, mediatype} entry, and mediatype \
     one of image/gif, image/jpeg, image/png or image/svg+xml."
);
rule!(
    Operatorhub,
    OHB006,
    Warning,
    Some("CSVFileNotValid"),
    "The CSV has an icon",
    "Without spec.icon OperatorHub and the OpenShift console show a generic placeholder. Add \
     one base64-encoded PNG, JPEG, GIF or SVG image."
);
rule!(
    Operatorhub,
    OHB007,
    Warning,
    Some("CSVFileNotValid"),
    "spec.minKubeVersion is set",
    "Without spec.minKubeVersion the bundle claims to install on any Kubernetes version, which \
     is rarely true. Set the oldest version you test on (e.g. 1.25.0); OLM refuses to install \
     on older clusters, and the deprecated-apis suite uses it to tell removed APIs apart."
);
rule!(
    Operatorhub,
    OHB008,
    Error,
    Some("CSVFileNotValid"),
    "The capabilities annotation names a known capability level",
    "metadata.annotations.capabilities must be one of Basic Install, Seamless Upgrades, Full \
     Lifecycle, Deep Insights or Auto Pilot (the operator capability levels)."
);
rule!(
    Operatorhub,
    OHB009,
    Error,
    Some("CSVFileNotValid"),
    "Every entry of the categories annotation is a known OperatorHub category",
    "metadata.annotations.categories is a comma-separated list; each entry must be one of \
     OperatorHub's categories (AI/Machine Learning, Application Runtime, Big Data, Cloud \
     Provider, Developer Tools, Database, Integration & Delivery, Logging & Tracing, Monitoring, \
     Modernization & Migration, Networking, Observability, OpenShift Optional, Security, \
     Storage, Streaming & Messaging), or of the list given with --categories."
);
// OHB010 (a `MinKubeVersion` key in the wrong case) is retired: the loader reads every CSV
// key as Go's decoder does and reports the spelling as BF019.

/// The rules of this suite.
pub const RULES: &[&Rule] = &[
    &OHB001, &OHB002, &OHB003, &OHB004, &OHB005, &OHB006, &OHB007, &OHB008, &OHB009,
];

/// The capability levels the `capabilities` annotation may name.
pub const CAPABILITIES: &[&str] = &[
    "Basic Install",
    "Seamless Upgrades",
    "Full Lifecycle",
    "Deep Insights",
    "Auto Pilot",
];

/// OperatorHub's categories (operator-framework/api `validCategories`).
pub const CATEGORIES: &[&str] = &[
    "AI/Machine Learning",
    "Application Runtime",
    "Big Data",
    "Cloud Provider",
    "Developer Tools",
    "Database",
    "Integration & Delivery",
    "Logging & Tracing",
    "Monitoring",
    "Modernization & Migration",
    "Networking",
    "Observability",
    "OpenShift Optional",
    "Security",
    "Storage",
    "Streaming & Messaging",
];

const MEDIA_TYPES: &[&str] = &["image/gif", "image/jpeg", "image/png", "image/svg+xml"];

/// Runs the suite.
pub(crate) fn check(b: &Bundle, opts: &Options, out: &mut Vec<Finding>) {
    let Some(csv) = b.csv() else { return };
    let name = csv.name();
    let spec = &csv.value()["spec"];
    let mut push = |rule: &'static Rule, ptr: &str, msg: String| {
        out.push(Finding::new(rule, name, msg).at(csv.origin_of(ptr)));
    };

    if non_empty(&spec["provider"]["name"]).is_none() {
        push(
            &OHB001,
            "/spec/provider",
            format!("CSV {name}: spec.provider.name is not set"),
        );
    }

    for (i, m) in array(&spec["maintainers"]).iter().enumerate() {
        let ptr = format!("/spec/maintainers/{i}");
        let (mname, email) = (non_empty(&m["name"]), non_empty(&m["email"]));
        if mname.is_none() || email.is_none() {
            push(
                &OHB002,
                &ptr,
                format!("maintainer {} needs both a name and an email", i + 1),
            );
        }
        if let Some(email) = email
            && let Err(e) = parse_mail_address(email)
        {
            push(
                &OHB002,
                &format!("{ptr}/email"),
                format!("maintainer email `{email}` is not a valid address: {e}"),
            );
        }
    }

    for (i, l) in array(&spec["links"]).iter().enumerate() {
        let ptr = format!("/spec/links/{i}");
        let (lname, url) = (non_empty(&l["name"]), non_empty(&l["url"]));
        if lname.is_none() || url.is_none() {
            push(
                &OHB003,
                &ptr,
                format!("link {} needs both a name and a url", i + 1),
            );
        }
        if let Some(url) = url
            && let Err(e) = parse_request_uri(url)
        {
            push(
                &OHB003,
                &format!("{ptr}/url"),
                format!("link url `{url}` is invalid: {e}"),
            );
        }
    }

    let version = match &spec["version"] {
        Value::String(s) => s.trim(),
        Value::Null => "",
        _ => "?",
    };
    if version.is_empty() || semver::Version::parse(version).is_ok_and(|v| v == ZERO) {
        push(
            &OHB004,
            if spec.get("version").is_some() {
                "/spec/version"
            } else {
                "/spec"
            },
            format!("CSV {name}: spec.version is not set"),
        );
    }

    icon(csv, name, &mut push);
    min_kube_version(spec, name, &mut push);
    annotations(csv, name, opts, &mut push);
}

const ZERO: semver::Version = semver::Version::new(0, 0, 0);

fn non_empty(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn icon(csv: &Object, name: &str, push: &mut impl FnMut(&'static Rule, &str, String)) {
    let icon = &csv.value()["spec"]["icon"];
    let list = match icon {
        Value::Null => {
            push(
                &OHB006,
                "/spec",
                format!("CSV {name}: spec.icon is not set"),
            );
            return;
        }
        Value::Array(list) => list,
        _ => {
            push(
                &OHB005,
                "/spec/icon",
                "spec.icon must be a list of {base64data, mediatype}".into(),
            );
            return;
        }
    };
    if list.len() != 1 {
        push(
            &OHB005,
            "/spec/icon",
            format!(
                "spec.icon has {} elements; exactly one is allowed",
                list.len()
            ),
        );
    }
    for (i, ic) in list.iter().enumerate() {
        let ptr = format!("/spec/icon/{i}");
        let media = non_empty(&ic["mediatype"]);
        if media.is_none() || non_empty(&ic["base64data"]).is_none() {
            push(
                &OHB005,
                &ptr,
                "an icon needs both base64data and mediatype".into(),
            );
        }
        if let Some(m) = media
            && !MEDIA_TYPES.contains(&m)
        {
            push(
                &OHB005,
                &format!("{ptr}/mediatype"),
                format!(
                    "icon media type `{m}` is not one of {}",
                    MEDIA_TYPES.join(", ")
                ),
            );
        }
    }
}

fn min_kube_version(spec: &Value, name: &str, push: &mut impl FnMut(&'static Rule, &str, String)) {
    // A `MinKubeVersion` key was renamed by the loader, as Go's decoder reads it (BF019).
    let key = "minKubeVersion";
    // A value that is not MAJOR.MINOR.PATCH is the csv suite's CSV009.
    let ptr = format!("/spec/{}", opship_core::yaml::escape_pointer_token(key));
    match &spec[key] {
        Value::Null => push(
            &OHB007,
            if spec.get(key).is_some() {
                &ptr
            } else {
                "/spec"
            },
            format!("CSV {name}: spec.minKubeVersion is not set"),
        ),
        Value::String(s) if s.trim().is_empty() => push(
            &OHB007,
            &ptr,
            format!("CSV {name}: spec.minKubeVersion is empty"),
        ),
        _ => {}
    }
}

fn annotations(
    csv: &Object,
    name: &str,
    opts: &Options,
    push: &mut impl FnMut(&'static Rule, &str, String),
) {
    let ann = &csv.value()["metadata"]["annotations"];
    if let Some(cap) = ann["capabilities"].as_str()
        && !CAPABILITIES.contains(&cap)
    {
        push(
            &OHB008,
            "/metadata/annotations/capabilities",
            format!(
                "capabilities `{cap}` is not a capability level ({})",
                CAPABILITIES.join(", ")
            ),
        );
    }
    let Some(cats) = ann["categories"].as_str() else {
        return;
    };
    let custom = opts.categories.as_deref();
    let known = |c: &str| match custom {
        Some(list) => list.iter().any(|k| k == c),
        None => CATEGORIES.contains(&c),
    };
    let bad: Vec<String> = cats
        .split(',')
        .map(str::trim)
        .filter(|c| !known(c))
        .map(|c| format!("`{c}`"))
        .collect();
    if bad.is_empty() {
        return;
    }
    let set = if custom.is_some() {
        "custom"
    } else {
        "OperatorHub"
    };
    push(
        &OHB009,
        "/metadata/annotations/categories",
        format!(
            "CSV {name}: categor{} {} not in the {set} categories",
            if bad.len() == 1 { "y" } else { "ies" },
            if bad.len() == 1 {
                format!("{} is", bad[0])
            } else {
                format!("{} are", bad.join(", "))
            }
        ),
    );
}

/// Parses one RFC 5322 address as Go's `net/mail.ParseAddress` does (`addr@domain` or
/// `Display Name <addr@domain>`, with optional comments); the error says what is wrong.
pub fn parse_mail_address(s: &str) -> Result<(), String> {
    let mut p = MailParser {
        s: s.as_bytes(),
        i: 0,
    };
    p.skip_cfws()?;
    if p.empty() {
        return Err("no address".into());
    }
    let start = p.i;
    // An addr-spec is tried first; failing that, a display name and an angle-addr.
    let plain = p.addr_spec().and_then(|()| {
        p.skip_cfws()?;
        if p.empty() {
            Ok(())
        } else {
            Err("expected a single address".into())
        }
    });
    if plain.is_ok() {
        return Ok(());
    }
    p.i = start;
    if p.peek() != Some(b'<') {
        p.phrase()?;
    }
    p.skip_cfws()?;
    if !p.consume(b'<') {
        return Err(match plain {
            Err(e) if !s.contains('<') => e,
            _ => "no angle-addr".into(),
        });
    }
    p.addr_spec()?;
    if !p.consume(b'>') {
        return Err("unclosed angle-addr".into());
    }
    p.skip_cfws()?;
    if !p.empty() {
        return Err("expected a single address".into());
    }
    Ok(())
}

struct MailParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl MailParser<'_> {
    fn empty(&self) -> bool {
        self.i >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn consume(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    /// Skips folding white space and (nested) comments.
    fn skip_cfws(&mut self) -> Result<(), String> {
        self.skip_space();
        while self.consume(b'(') {
            let mut depth = 1;
            while depth > 0 {
                match self.peek() {
                    None => return Err("misformatted parenthetical comment".into()),
                    Some(b'\\') => self.i += 2,
                    Some(b'(') => {
                        depth += 1;
                        self.i += 1;
                    }
                    Some(b')') => {
                        depth -= 1;
                        self.i += 1;
                    }
                    Some(_) => self.i += 1,
                }
            }
            self.skip_space();
        }
        Ok(())
    }

    /// RFC 5322 atext (plus `.` when `dot`); bytes of multi-byte UTF-8 count as text.
    fn is_atext(c: u8, dot: bool) -> bool {
        match c {
            b'.' => dot,
            b'(' | b')' | b'<' | b'>' | b'[' | b']' | b':' | b';' | b'@' | b'\\' | b',' | b'"' => {
                false
            }
            b'!'..=b'~' => true,
            c => c >= 0x80,
        }
    }

    /// A dot-atom (`dot`) or an atom; `permissive` allows leading, trailing and double dots
    /// (display names).
    fn atom(&mut self, dot: bool, permissive: bool) -> Result<(), String> {
        let start = self.i;
        while self.peek().is_some_and(|c| Self::is_atext(c, dot)) {
            self.i += 1;
        }
        if self.i == start {
            return Err(match self.peek() {
                Some(c) => format!("invalid character `{}`", char::from(c)),
                None => "unexpected end of address".into(),
            });
        }
        let atom = &self.s[start..self.i];
        if !permissive
            && (atom.starts_with(b".")
                || atom.ends_with(b".")
                || atom.windows(2).any(|w| w == b".."))
        {
            return Err("leading, trailing or double dot in address".into());
        }
        Ok(())
    }

    fn quoted_string(&mut self) -> Result<(), String> {
        self.i += 1; // the opening quote
        loop {
            match self.peek() {
                None => return Err("unclosed quoted-string".into()),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    if self.i + 1 >= self.s.len() {
                        return Err("unclosed quoted-string".into());
                    }
                    self.i += 2;
                }
                Some(c) if c == b' ' || c == b'\t' || c >= 0x21 => self.i += 1,
                Some(_) => return Err("bad character in quoted-string".into()),
            }
        }
    }

    fn addr_spec(&mut self) -> Result<(), String> {
        self.skip_space();
        match self.peek() {
            None => return Err("no addr-spec".into()),
            Some(b'"') => self.quoted_string()?,
            Some(_) => self.atom(true, false)?,
        }
        if !self.consume(b'@') {
            return Err("missing @ in addr-spec".into());
        }
        self.skip_space();
        match self.peek() {
            None => Err("no domain in addr-spec".into()),
            Some(b'[') => {
                self.i += 1;
                loop {
                    match self.peek() {
                        None => return Err("unclosed domain-literal".into()),
                        Some(b']') => {
                            self.i += 1;
                            return Ok(());
                        }
                        Some(b'[' | b'\\') => {
                            return Err("bad character in domain-literal".into());
                        }
                        Some(c) if c > b' ' => self.i += 1,
                        Some(_) => return Err("bad character in domain-literal".into()),
                    }
                }
            }
            Some(_) => self.atom(true, false),
        }
    }

    /// A display name: one or more atoms or quoted strings.
    fn phrase(&mut self) -> Result<(), String> {
        let mut words = 0;
        loop {
            self.skip_cfws()?;
            match self.peek() {
                Some(b'"') => self.quoted_string()?,
                Some(c) if Self::is_atext(c, true) => self.atom(true, true)?,
                _ => break,
            }
            words += 1;
        }
        if words == 0 {
            return Err("missing word in phrase".into());
        }
        Ok(())
    }
}

/// Checks a URL as Go's `url.ParseRequestURI` does: absolute (`scheme:...`) or an absolute
/// path, no control characters, a well-formed host and port, valid `%` escapes.
pub fn parse_request_uri(url: &str) -> Result<(), String> {
    let err = |why: &str| Err(format!("parse {url:?}: {why}"));
    if url.bytes().any(|c| c < 0x20 || c == 0x7f) {
        return err("net/url: invalid control character in URL");
    }
    if url == "*" {
        return Ok(());
    }
    // Scheme: a letter, then letters, digits, `+`, `-`, `.`, up to the first `:`.
    let mut scheme = "";
    let mut rest = url;
    for (i, c) in url.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return err("missing protocol scheme"),
            ':' => {
                scheme = &url[..i];
                rest = &url[i + 1..];
                break;
            }
            _ => break,
        }
    }
    let rest = rest.split_once('?').map_or(rest, |(r, _)| r);
    if !rest.starts_with('/') {
        return if scheme.is_empty() {
            err("invalid URI for request")
        } else {
            Ok(()) // opaque, e.g. mailto:x
        };
    }
    let mut path = rest;
    if !scheme.is_empty()
        && let Some(after) = rest.strip_prefix("//")
    {
        let (authority, p) = match after.find('/') {
            Some(i) => after.split_at(i),
            None => (after, ""),
        };
        path = p;
        let host = match authority.rfind('@') {
            Some(i) => {
                let user = &authority[..i];
                if !user
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&c))
                {
                    return err("net/url: invalid userinfo");
                }
                &authority[i + 1..]
            }
            None => authority,
        };
        if let Some(why) = host_problem(host) {
            return err(&why);
        }
    }
    if let Some(why) = escape_problem(path) {
        return err(&why);
    }
    Ok(())
}

fn host_problem(host: &str) -> Option<String> {
    let port = if host.starts_with('[') {
        match host.rfind(']') {
            Some(i) => &host[i + 1..],
            None => return Some("missing ']' in host".into()),
        }
    } else {
        host.rfind(':').map_or("", |i| &host[i..])
    };
    let port_ok =
        port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|c| c.is_ascii_digit()));
    if !port_ok {
        return Some(format!("invalid port {port:?} after host"));
    }
    if let Some(why) = escape_problem(host) {
        return Some(why);
    }
    host.bytes()
        .find(|&c| {
            c < 0x80 && !(c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"%".contains(&c))
        })
        .map(|c| format!("invalid character {:?} in host name", char::from(c)))
}

fn escape_problem(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let ok =
                b.len() > i + 2 && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit();
            if !ok {
                let end = (i + 3).min(b.len());
                return Some(format!(
                    "invalid URL escape {:?}",
                    String::from_utf8_lossy(&b[i..end])
                ));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mail_addresses() {
        for ok in [
            "alice@example.com",
            "Alice Example <alice@example.com>",
            "\"Alice, Ex\" <alice@example.com>",
            "<alice@example.com>",
            "a.b+c@sub.example.io",
            "alice@[127.0.0.1]",
            "alice@example.com (work)",
            "Jörg <joerg@example.de>",
            "\"quoted local\"@example.com",
        ] {
            assert!(
                parse_mail_address(ok).is_ok(),
                "{ok}: {:?}",
                parse_mail_address(ok)
            );
        }
        for bad in [
            "",
            "alice",
            "alice@",
            "alice@@example.com",
            "alice@example.com, bob@example.com",
            "Alice <alice@example.com",
            "alice@example..com",
            ".alice@example.com",
            "alice example@example.com",
            "Alice <alice>",
        ] {
            assert!(parse_mail_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn request_uris() {
        for ok in [
            "https://example.com",
            "https://example.com:8443/a/b?c=d#e",
            "http://user:pw@example.com/",
            "mailto:alice@example.com",
            "/absolute/path",
            "https://[::1]:80/x",
            "https://example.com/a%20b",
        ] {
            assert!(
                parse_request_uri(ok).is_ok(),
                "{ok}: {:?}",
                parse_request_uri(ok)
            );
        }
        for bad in [
            "",
            "example.com",
            "www.example.com/docs",
            ":foo",
            "https://exa mple.com",
            "https://example.com:80a/",
            "https://example.com/%zz",
            "https://example.com/\n",
            "https://[::1/x",
        ] {
            assert!(parse_request_uri(bad).is_err(), "{bad}");
        }
    }
}

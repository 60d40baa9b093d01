//! Rendering validation results as text for people, JSON for scripts, SARIF 2.1.0 for GitHub
//! code scanning and GitHub Actions workflow commands for pull-request annotations.
//!
//! Every format is deterministic: the same results give the same bytes. Findings keep the
//! order of [`BundleReport::findings`] and bundles the order of `results`. The JSON and SARIF
//! schemas are documented in `docs/validation-output.md`.

use std::fmt::Write as _;
use std::path::{Component, Path};

use serde::Serialize;

use crate::rule::{Finding, Level, Rule};
use crate::{BundleReport, Error, Result};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human-readable text, grouped per bundle.
    Human,
    /// JSON with a stable, documented schema.
    Json,
    /// SARIF 2.1.0 for GitHub code scanning.
    Sarif,
    /// GitHub Actions workflow commands (`::error file=...`).
    Github,
}

/// How to render.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// Use ANSI colours (only the human format; the caller decides from TTY and NO_COLOR).
    pub color: bool,
}

/// The version of the JSON report schema (`"version"` in the output). Bumped only for changes
/// that could break a reader; new fields may appear without a bump.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// The key of opship's fingerprint in SARIF `partialFingerprints`.
pub const SARIF_FINGERPRINT_KEY: &str = "opshipFindingHash/v1";

const TOOL_NAME: &str = "opship";
const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");
const TOOL_URI: &str = "https://github.com/opship/opship";
/// Where each rule is explained (`docs/rules.md`, one heading per rule ID).
const RULES_URI: &str = "https://github.com/opship/opship/blob/main/docs/rules.md";

/// Renders the outcome of validating several bundles; a bundle that could not be validated
/// at all is an `Err` in `results`.
pub fn render(results: &[Result<BundleReport>], format: Format, opts: &RenderOptions) -> String {
    match format {
        Format::Human => human(results, opts.color),
        Format::Json => json(results),
        Format::Sarif => sarif(results),
        Format::Github => github(results),
    }
}

/// Error and warning counts over some findings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
struct Counts {
    errors: usize,
    warnings: usize,
}

impl Counts {
    fn of(findings: &[Finding]) -> Counts {
        let mut c = Counts::default();
        for f in findings {
            match f.level {
                Level::Error => c.errors += 1,
                Level::Warning => c.warnings += 1,
            }
        }
        c
    }
}

/// `1 error`, `2 errors`.
fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The path a failed bundle names, when the error carries one.
fn error_path(e: &Error) -> Option<&Path> {
    match e {
        Error::Io { path, .. } | Error::NotABundle { path, .. } => Some(path),
        Error::Options(_) => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Human

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const GREEN: &str = "\x1b[32m";
const RESET: &str = "\x1b[0m";

struct Paint(bool);

impl Paint {
    fn wrap(&self, style: &str, text: &str) -> String {
        if self.0 {
            format!("{style}{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    fn level(&self, level: Level) -> String {
        let (style, text) = match level {
            Level::Error => ("\x1b[1;31m", "error"),
            Level::Warning => ("\x1b[1;33m", "warning"),
        };
        self.wrap(style, text)
    }
}

/// Text that came from a bundle, made safe for a terminal: control characters (escape
/// sequences, newlines) are shown escaped instead of acting.
fn clean(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Where a finding is, as text: `file:line:col`, `file` for a whole file, the bundle
/// directory when it has no location.
fn human_location(f: &Finding, bundle: &Path) -> String {
    match &f.location {
        Some(o) => clean(&o.to_string()),
        None => clean(&opship_core::paths::show(bundle).to_string()),
    }
}

fn human(results: &[Result<BundleReport>], color: bool) -> String {
    let paint = Paint(color);
    let mut out = String::new();
    let mut total = Counts::default();
    let mut failed = 0;
    for r in results {
        match r {
            Ok(report) => {
                let counts = Counts::of(&report.findings);
                total.errors += counts.errors;
                total.warnings += counts.warnings;
                let path = clean(&opship_core::paths::show(&report.path).to_string());
                let status = if report.findings.is_empty() {
                    paint.wrap(GREEN, "valid")
                } else {
                    let mut parts = Vec::new();
                    if counts.errors > 0 {
                        parts.push(paint.wrap(RED, &plural(counts.errors, "error")));
                    }
                    if counts.warnings > 0 {
                        parts.push(paint.wrap(YELLOW, &plural(counts.warnings, "warning")));
                    }
                    parts.join(", ")
                };
                let _ = writeln!(out, "{}: {status}", paint.wrap(BOLD, &path));
                for f in &report.findings {
                    let loc = paint.wrap(DIM, &human_location(f, &report.path));
                    let mut line = format!(
                        "  {loc}  {}[{}] {}",
                        paint.level(f.level),
                        f.rule.id,
                        clean(&f.message)
                    );
                    // The object helps when it is not just the bundle being reported.
                    if !f.object.is_empty() && f.object != report.name {
                        line.push_str(&paint.wrap(DIM, &format!(" ({})", clean(&f.object))));
                    }
                    out.push_str(&line);
                    out.push('\n');
                }
                for s in &report.skipped {
                    let _ = writeln!(
                        out,
                        "  {}",
                        paint.wrap(
                            DIM,
                            &format!("skipped {} ({}): {}", s.check, s.rule, clean(&s.reason))
                        )
                    );
                }
            }
            Err(e) => {
                failed += 1;
                let _ = writeln!(
                    out,
                    "{}: {}",
                    paint.wrap("\x1b[1;31m", "error"),
                    clean(&e.to_string())
                );
            }
        }
    }
    if !out.is_empty() {
        out.push('\n');
    }
    let mut summary = format!(
        "{}, {}, {}",
        plural(results.len(), "bundle"),
        plural(total.errors, "error"),
        plural(total.warnings, "warning")
    );
    if failed > 0 {
        let _ = write!(summary, " ({failed} could not be validated)");
    }
    let _ = writeln!(out, "{}", paint.wrap(BOLD, &summary));
    out
}

// ---------------------------------------------------------------------------------------------
// JSON

#[derive(Serialize)]
struct JsonReport<'a> {
    version: u32,
    tool: JsonTool,
    summary: JsonSummary,
    bundles: Vec<JsonBundle<'a>>,
    failures: Vec<JsonFailure>,
}

#[derive(Serialize)]
struct JsonTool {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct JsonSummary {
    bundles: usize,
    valid: usize,
    invalid: usize,
    failed: usize,
    errors: usize,
    warnings: usize,
}

#[derive(Serialize)]
struct JsonBundle<'a> {
    path: String,
    name: &'a str,
    valid: bool,
    errors: usize,
    warnings: usize,
    findings: Vec<JsonFinding<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    skipped: &'a [crate::community::Skipped],
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    rule: &'static str,
    level: Level,
    suite: &'static str,
    object: &'a str,
    message: &'a str,
    location: Option<JsonLocation>,
    upstream: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<&'static str>,
}

#[derive(Serialize)]
struct JsonLocation {
    file: String,
    line: Option<u32>,
    column: Option<u32>,
}

#[derive(Serialize)]
struct JsonFailure {
    path: Option<String>,
    error: String,
}

fn json(results: &[Result<BundleReport>]) -> String {
    let mut bundles = Vec::new();
    let mut failures = Vec::new();
    let mut summary = JsonSummary {
        bundles: results.len(),
        valid: 0,
        invalid: 0,
        failed: 0,
        errors: 0,
        warnings: 0,
    };
    for r in results {
        match r {
            Ok(report) => {
                let counts = Counts::of(&report.findings);
                let valid = counts.errors == 0;
                if valid {
                    summary.valid += 1;
                } else {
                    summary.invalid += 1;
                }
                summary.errors += counts.errors;
                summary.warnings += counts.warnings;
                bundles.push(JsonBundle {
                    path: opship_core::paths::show(&report.path).to_string(),
                    name: &report.name,
                    valid,
                    errors: counts.errors,
                    warnings: counts.warnings,
                    findings: report
                        .findings
                        .iter()
                        .map(|f| JsonFinding {
                            rule: f.rule.id,
                            level: f.level,
                            suite: f.rule.suite.name(),
                            object: &f.object,
                            message: &f.message,
                            location: f.location.as_ref().map(|o| JsonLocation {
                                file: opship_core::paths::show(&o.file).to_string(),
                                line: (o.pos.line > 0).then_some(o.pos.line),
                                column: (o.pos.line > 0 && o.pos.col > 0).then_some(o.pos.col),
                            }),
                            upstream: f.rule.upstream,
                            check: f.rule.check,
                        })
                        .collect(),
                    skipped: &report.skipped,
                });
            }
            Err(e) => {
                summary.failed += 1;
                failures.push(JsonFailure {
                    path: error_path(e).map(|p| opship_core::paths::show(p).to_string()),
                    error: e.to_string(),
                });
            }
        }
    }
    let doc = JsonReport {
        version: JSON_SCHEMA_VERSION,
        tool: JsonTool {
            name: TOOL_NAME,
            version: TOOL_VERSION,
        },
        summary,
        bundles,
        failures,
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("the report serialises");
    s.push('\n');
    s
}

// ---------------------------------------------------------------------------------------------
// SARIF 2.1.0

#[derive(Serialize)]
struct SarifLog {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [SarifRun; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRun {
    tool: SarifTool,
    invocations: [SarifInvocation; 1],
    column_kind: &'static str,
    results: Vec<SarifResult>,
}

#[derive(Serialize)]
struct SarifTool {
    driver: SarifDriver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifDriver {
    name: &'static str,
    information_uri: &'static str,
    version: &'static str,
    semantic_version: &'static str,
    rules: Vec<SarifRule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRule {
    id: &'static str,
    short_description: SarifText,
    full_description: SarifText,
    help: SarifText,
    help_uri: String,
    default_configuration: SarifConfiguration,
    properties: SarifRuleProperties,
}

#[derive(Serialize)]
struct SarifText {
    text: String,
}

#[derive(Serialize)]
struct SarifConfiguration {
    level: Level,
}

#[derive(Serialize)]
struct SarifRuleProperties {
    tags: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    upstream: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifInvocation {
    execution_successful: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_execution_notifications: Vec<SarifNotification>,
}

#[derive(Serialize)]
struct SarifNotification {
    level: Level,
    message: SarifText,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locations: Vec<SarifLocation>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: &'static str,
    rule_index: usize,
    level: Level,
    message: SarifText,
    locations: Vec<SarifLocation>,
    partial_fingerprints: SarifFingerprints,
    properties: SarifResultProperties,
}

#[derive(Serialize)]
struct SarifFingerprints {
    #[serde(rename = "opshipFindingHash/v1")]
    hash: String,
}

#[derive(Serialize)]
struct SarifResultProperties {
    suite: &'static str,
    bundle: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifLocation {
    physical_location: SarifPhysicalLocation,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    logical_locations: Vec<SarifLogicalLocation>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifPhysicalLocation {
    artifact_location: SarifArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<SarifRegion>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifArtifactLocation {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRegion {
    start_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_column: Option<u32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifLogicalLocation {
    name: String,
    kind: &'static str,
}

fn sarif_artifact(path: &Path, dir: bool) -> SarifArtifactLocation {
    let (mut uri, relative) = path_uri(path);
    if dir && !uri.ends_with('/') {
        uri.push('/');
    }
    SarifArtifactLocation {
        uri,
        uri_base_id: relative.then_some("%SRCROOT%"),
    }
}

fn sarif(results: &[Result<BundleReport>]) -> String {
    // Rules: those that fired, in ID order, so ruleIndex is stable for a given set of findings.
    let mut rules: Vec<&'static Rule> = results
        .iter()
        .flatten()
        .flat_map(|r| r.findings.iter().map(|f| f.rule))
        .collect();
    rules.sort_by_key(|r| r.id);
    rules.dedup_by_key(|r| r.id);

    let mut out = Vec::new();
    let mut notifications = Vec::new();
    for r in results {
        let report = match r {
            Ok(report) => report,
            Err(e) => {
                notifications.push(SarifNotification {
                    level: Level::Error,
                    message: SarifText {
                        text: e.to_string(),
                    },
                    locations: error_path(e)
                        .map(|p| SarifLocation {
                            physical_location: SarifPhysicalLocation {
                                artifact_location: sarif_artifact(p, false),
                                region: None,
                            },
                            logical_locations: Vec::new(),
                        })
                        .into_iter()
                        .collect(),
                });
                continue;
            }
        };
        for f in &report.findings {
            let (artifact, region) = match &f.location {
                Some(o) => (
                    sarif_artifact(&o.file, false),
                    (o.pos.line > 0).then(|| SarifRegion {
                        start_line: o.pos.line,
                        start_column: (o.pos.col > 0).then_some(o.pos.col),
                    }),
                ),
                None => (sarif_artifact(&report.path, true), None),
            };
            let hash = fingerprint(&[f.rule.id, &artifact.uri, &f.object, &f.message]);
            let logical = if f.object.is_empty() {
                Vec::new()
            } else {
                vec![SarifLogicalLocation {
                    name: f.object.clone(),
                    kind: "resource",
                }]
            };
            out.push(SarifResult {
                rule_id: f.rule.id,
                rule_index: rules
                    .iter()
                    .position(|r| r.id == f.rule.id)
                    .expect("every fired rule is listed"),
                level: f.level,
                message: SarifText {
                    text: f.message.clone(),
                },
                locations: vec![SarifLocation {
                    physical_location: SarifPhysicalLocation {
                        artifact_location: artifact,
                        region,
                    },
                    logical_locations: logical,
                }],
                partial_fingerprints: SarifFingerprints { hash },
                properties: SarifResultProperties {
                    suite: f.rule.suite.name(),
                    bundle: report.name.clone(),
                    check: f.rule.check,
                },
            });
        }
    }

    let log = SarifLog {
        schema: "https://json.schemastore.org/sarif-2.1.0.json",
        version: "2.1.0",
        runs: [SarifRun {
            tool: SarifTool {
                driver: SarifDriver {
                    name: TOOL_NAME,
                    information_uri: TOOL_URI,
                    version: TOOL_VERSION,
                    semantic_version: TOOL_VERSION,
                    rules: rules
                        .iter()
                        .map(|r| SarifRule {
                            id: r.id,
                            short_description: SarifText {
                                text: r.summary.to_string(),
                            },
                            full_description: SarifText {
                                text: r.help.to_string(),
                            },
                            help: SarifText {
                                text: r.help.to_string(),
                            },
                            help_uri: format!("{RULES_URI}#{}", r.id.to_ascii_lowercase()),
                            default_configuration: SarifConfiguration { level: r.level },
                            properties: SarifRuleProperties {
                                tags: vec![r.suite.name()],
                                upstream: r.upstream,
                                check: r.check,
                            },
                        })
                        .collect(),
                },
            },
            invocations: [SarifInvocation {
                execution_successful: notifications.is_empty(),
                tool_execution_notifications: notifications,
            }],
            column_kind: "unicodeCodePoints",
            results: out,
        }],
    };
    let mut s = serde_json::to_string_pretty(&log).expect("the SARIF log serialises");
    s.push('\n');
    s
}

/// A path as a URI reference: relative paths stay relative (forward slashes, `./` dropped,
/// percent-encoded), absolute ones under the current directory are made relative to it, other
/// absolute ones become `file://` URIs. The flag says whether the result is relative.
pub fn path_uri(path: &Path) -> (String, bool) {
    let relative_to_cwd;
    let mut path = path;
    if path.is_absolute()
        && let Ok(cwd) = std::env::current_dir()
        && let Ok(rest) = path.strip_prefix(&cwd)
    {
        relative_to_cwd = rest.to_path_buf();
        path = &relative_to_cwd;
    }
    let mut segments: Vec<String> = Vec::new();
    let mut absolute = false;
    let mut prefix = String::new();
    for c in path.components() {
        match c {
            Component::Prefix(p) => {
                prefix = percent_encode(&p.as_os_str().to_string_lossy().replace('\\', "/"));
                absolute = true;
            }
            Component::RootDir => absolute = true,
            Component::CurDir => {}
            Component::ParentDir => segments.push("..".to_string()),
            Component::Normal(s) => segments.push(percent_encode(&s.to_string_lossy())),
        }
    }
    if absolute {
        let mut uri = String::from("file:///");
        if !prefix.is_empty() {
            uri.push_str(prefix.trim_start_matches('/'));
            uri.push('/');
        }
        uri.push_str(&segments.join("/"));
        (uri, false)
    } else if segments.is_empty() {
        (String::from("./"), true)
    } else {
        (segments.join("/"), true)
    }
}

/// Percent-encodes one path segment: everything but RFC 3986's unreserved characters and a
/// few harmless sub-delimiters. `:` is encoded so a first segment never reads as a scheme.
fn percent_encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=@".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A stable 128-bit hex digest of some strings (two FNV-1a 64 passes with different bases):
/// the same inputs give the same fingerprint on every platform and release.
fn fingerprint(parts: &[&str]) -> String {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x6c62_272e_07bb_0142;
    for (i, part) in parts.iter().enumerate() {
        let bytes = part.bytes().chain(std::iter::once(0xff_u8));
        for byte in bytes {
            a = (a ^ u64::from(byte)).wrapping_mul(PRIME);
            b = (b ^ u64::from(byte.rotate_left(i as u32 % 8))).wrapping_mul(PRIME);
        }
    }
    format!("{a:016x}{b:016x}")
}

// ---------------------------------------------------------------------------------------------
// GitHub workflow commands

/// Escapes a workflow command's message (`%`, CR, LF). Other control characters (escape
/// sequences from a hostile bundle) are shown escaped, `\u{1b}`, rather than passed to the log.
pub fn escape_data(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Escapes a workflow command's property value (as data, plus `:` and `,`).
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

fn github(results: &[Result<BundleReport>]) -> String {
    let mut out = String::new();
    for r in results {
        let report = match r {
            Ok(report) => report,
            Err(e) => {
                let mut props = Vec::new();
                if let Some(p) = error_path(e) {
                    props.push(format!(
                        "file={}",
                        escape_property(&opship_core::paths::show(p).to_string())
                    ));
                }
                props.push("title=opship".to_string());
                let _ = writeln!(
                    out,
                    "::error {}::{}",
                    props.join(","),
                    escape_data(&format!("could not validate: {e}"))
                );
                continue;
            }
        };
        for f in &report.findings {
            let command = match f.level {
                Level::Error => "error",
                Level::Warning => "warning",
            };
            let mut props = Vec::new();
            let mut message = String::new();
            match &f.location {
                Some(o) => {
                    props.push(format!(
                        "file={}",
                        escape_property(&opship_core::paths::show(&o.file).to_string())
                    ));
                    if o.pos.line > 0 {
                        props.push(format!("line={}", o.pos.line));
                        if o.pos.col > 0 {
                            props.push(format!("col={}", o.pos.col));
                        }
                    }
                }
                // No file to annotate: say which bundle in the message.
                None => {
                    let _ = write!(message, "{}: ", opship_core::paths::show(&report.path));
                }
            }
            props.push(format!("title={}", escape_property(f.rule.id)));
            message.push_str(&f.message);
            if !f.object.is_empty() && f.object != report.name {
                let _ = write!(message, " ({})", f.object);
            }
            let _ = writeln!(
                out,
                "::{command} {}::{}",
                props.join(","),
                escape_data(&message)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn uris() {
        let uri = |p: &str| path_uri(&PathBuf::from(p));
        assert_eq!(
            uri("bundles/a b/m.yaml"),
            ("bundles/a%20b/m.yaml".into(), true)
        );
        assert_eq!(uri("./x/y"), ("x/y".into(), true));
        assert_eq!(uri("../x/ü#?%"), ("../x/%C3%BC%23%3F%25".into(), true));
        assert_eq!(uri("c:d"), ("c%3Ad".into(), true));
        assert_eq!(uri("."), ("./".into(), true));
        assert_eq!(
            uri("/nonexistent-root/a b"),
            ("file:///nonexistent-root/a%20b".into(), false)
        );
    }

    #[test]
    fn fingerprints_are_stable_and_separate_parts() {
        assert_eq!(fingerprint(&["a", "b"]), fingerprint(&["a", "b"]));
        assert_ne!(fingerprint(&["ab", ""]), fingerprint(&["a", "b"]));
        assert_eq!(fingerprint(&["a"]).len(), 32);
    }

    #[test]
    fn workflow_escapes() {
        assert_eq!(escape_data("50%\r\nx: y, z"), "50%25%0D%0Ax: y, z");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
        assert_eq!(escape_data("\u{1b}[0m\t"), "\\u{1b}[0m\\u{9}");
    }
}

//! The rule registry and the finding type: what a check can report, with a stable ID, and what
//! it did report about one bundle.

use std::fmt;

use opship_core::yaml::Origin;
use serde::Serialize;

/// How bad a finding is. Errors fail validation (exit 1); warnings are advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Fails validation.
    Error,
    /// Worth fixing, does not fail validation.
    Warning,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Error => "error",
            Level::Warning => "warning",
        })
    }
}

/// A group of rules that is switched on or off as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Suite {
    /// Bundle format: directories, annotations, media type, manifest loading, allowed kinds,
    /// dependencies and properties files (operator-registry `ValidateBundleFormat` and
    /// `ValidateBundleContent`). Always on.
    BundleFormat,
    /// The ClusterServiceVersion validator of operator-framework/api. Always on.
    Csv,
    /// The CustomResourceDefinition validator of operator-framework/api (apiextensions rules)
    /// plus structural-schema checks. Always on.
    Crd,
    /// The bundle validator of operator-framework/api (CRDs vs CSV, service accounts, size,
    /// related images). Always on.
    Bundle,
    /// OperatorHub v2, capabilities and categories (operator-sdk `name=operatorhub`).
    Operatorhub,
    /// operator-sdk's good-practices validator.
    GoodPractices,
    /// APIs removed from Kubernetes (operator-sdk `alpha-deprecated-apis`), up to 1.32.
    DeprecatedApis,
    /// PodDisruptionBudget, PriorityClass and SCC rules (opm's `bundle-objects`).
    BundleObjects,
    /// What OLM v1 refuses to install.
    OlmV1,
    /// Least-privilege review of the CSV's permissions.
    Rbac,
    /// `alm-examples` checked against the CRD schemas; CEL rules must parse.
    CrdExamples,
    /// The community-operators pipeline's static checks (operator-pipelines' `community` and
    /// `common` suites), run in the context of the bundle's operator directory.
    Community,
    /// An upgrade from an older bundle: OLM v1's CRD upgrade-safety checks and more
    /// (`opship validate upgrade`).
    Upgrade,
}

impl Suite {
    /// Every suite, default ones first.
    pub const ALL: [Suite; 13] = [
        Suite::BundleFormat,
        Suite::Csv,
        Suite::Crd,
        Suite::Bundle,
        Suite::Operatorhub,
        Suite::GoodPractices,
        Suite::DeprecatedApis,
        Suite::BundleObjects,
        Suite::OlmV1,
        Suite::Rbac,
        Suite::CrdExamples,
        Suite::Community,
        Suite::Upgrade,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Suite::BundleFormat => "bundle-format",
            Suite::Csv => "csv",
            Suite::Crd => "crd",
            Suite::Bundle => "bundle",
            Suite::Operatorhub => "operatorhub",
            Suite::GoodPractices => "good-practices",
            Suite::DeprecatedApis => "deprecated-apis",
            Suite::BundleObjects => "bundle-objects",
            Suite::OlmV1 => "olm-v1",
            Suite::Rbac => "rbac",
            Suite::CrdExamples => "crd-examples",
            Suite::Community => "community",
            Suite::Upgrade => "upgrade",
        }
    }

    /// Whether the suite runs only when selected (`--select-optional`).
    pub fn is_optional(self) -> bool {
        !matches!(
            self,
            Suite::BundleFormat | Suite::Csv | Suite::Crd | Suite::Bundle
        )
    }

    /// Whether `--select-optional all` turns the suite on: not `community`, which needs the
    /// bundle's operator directory and the repository's rules.
    pub fn in_all(self) -> bool {
        self.is_optional() && !matches!(self, Suite::Community | Suite::Upgrade)
    }

    /// Whether `--select-optional` can name the suite: not `upgrade`, which compares two
    /// bundles (`opship validate upgrade`).
    pub fn selectable(self) -> bool {
        self.is_optional() && self != Suite::Upgrade
    }

    /// The suites a command-line selector names: one of opship's suite names, operator-sdk's
    /// `name=...` selectors, or `suite=operatorframework` (operator-sdk's optional validators of
    /// that suite: operatorhub, good-practices and alpha-deprecated-apis).
    pub fn select(name: &str) -> Option<Vec<Suite>> {
        let name = name.trim();
        if let Some(suite) = name.strip_prefix("suite=") {
            return (suite.trim() == "operatorframework").then(|| {
                vec![
                    Suite::Operatorhub,
                    Suite::GoodPractices,
                    Suite::DeprecatedApis,
                ]
            });
        }
        Suite::from_name(name).map(|s| vec![s])
    }

    /// The suite of a command-line name. operator-sdk's selector names are accepted too
    /// (`name=operatorhub`, `alpha-deprecated-apis`, ...).
    pub fn from_name(name: &str) -> Option<Suite> {
        let name = name.trim();
        let name = name
            .strip_prefix("name=")
            .or_else(|| name.strip_prefix("suite="))
            .unwrap_or(name);
        Some(match name {
            "operatorhub" | "operatorhubv2" | "capabilities" | "categories" => Suite::Operatorhub,
            "good-practices" => Suite::GoodPractices,
            "deprecated-apis" | "alpha-deprecated-apis" => Suite::DeprecatedApis,
            "bundle-objects" | "objects" => Suite::BundleObjects,
            "olm-v1" => Suite::OlmV1,
            "rbac" => Suite::Rbac,
            "crd-examples" => Suite::CrdExamples,
            _ => return Suite::ALL.into_iter().find(|s| s.name() == name),
        })
    }
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One rule: a stable ID that never changes meaning, and what to tell the user.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Stable ID, e.g. `CSV004`. Never reused for another meaning.
    pub id: &'static str,
    /// The suite that holds the rule.
    pub suite: Suite,
    /// The usual level; a finding may carry another one (removed APIs are errors only from
    /// the Kubernetes version that removed them).
    pub level: Level,
    /// The error type operator-framework/api reports for the same problem
    /// (`FieldValueInvalid`, `BundleNotValid`, ...); `None` for rules the reference lacks.
    pub upstream: Option<&'static str>,
    /// One line: what the rule checks.
    pub summary: &'static str,
    /// Why it matters and how to fix it.
    pub help: &'static str,
    /// The name of the check of the community-operators pipeline (operator-pipelines'
    /// `operatorcert.static_tests`) this rule reproduces, e.g. `check_required_fields`;
    /// `None` for rules outside the `community` suite.
    pub check: Option<&'static str>,
}

/// One problem found in one bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule that fired.
    pub rule: &'static Rule,
    /// Level of this finding (usually the rule's).
    pub level: Level,
    /// The object the finding is about, named as the reference names it: the CSV name, the
    /// CRD name, or the bundle directory name for bundle-wide findings.
    pub object: String,
    /// What is wrong here, in one line.
    pub message: String,
    /// Where, when the problem sits in a file.
    pub location: Option<Origin>,
}

impl Finding {
    /// A finding at the rule's level, without a location. Long values quoted in the message
    /// or naming the object are cut ([`bounded`]): every finding is made here.
    pub fn new(rule: &'static Rule, object: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            rule,
            level: rule.level,
            object: bounded(object.into()),
            message: bounded(message.into()),
            location: None,
        }
    }

    /// Sets the location.
    #[must_use]
    pub fn at(mut self, origin: Origin) -> Self {
        self.location = Some(origin);
        self
    }

    /// Overrides the level.
    #[must_use]
    pub fn with_level(mut self, level: Level) -> Self {
        self.level = level;
        self
    }

    /// Sort key: file, line, column, rule, message. Findings without a file sort first.
    pub fn sort_key(&self) -> impl Ord + '_ {
        (
            self.location.as_ref().map(|o| (o.file.clone(), o.pos)),
            self.rule.id,
            &self.object,
            &self.message,
            self.level,
        )
    }
}

/// A value quoted in a message (between backticks, or a run of text without spaces: a version,
/// an annotation, an image, a CEL rule) longer than this is cut to [`RUN_KEPT`] bytes. The
/// longest in the corpus's findings are schema paths of about 200 bytes.
pub const RUN_MAX: usize = 512;
/// What is kept of a cut value.
pub const RUN_KEPT: usize = 200;
/// A message still longer than this once its values are cut (an unquoted value with spaces in
/// it) keeps its first [`MESSAGE_HEAD`] and last [`MESSAGE_TAIL`] bytes. The longest message
/// of the corpus (a list of CRDs on removed APIs) has 2,333 bytes.
pub const MESSAGE_MAX: usize = 4096;
/// See [`MESSAGE_MAX`].
pub const MESSAGE_HEAD: usize = 2048;
/// See [`MESSAGE_MAX`]; the end usually says what is wrong.
pub const MESSAGE_TAIL: usize = 1024;

/// `text` with every value longer than [`RUN_MAX`] bytes cut to its first [`RUN_KEPT`] bytes
/// and `… (N bytes)`: first what sits between a pair of backticks, then runs without spaces.
/// A message still over [`MESSAGE_MAX`] then has its middle replaced by `… (N bytes) …`. Cuts
/// fall on character boundaries.
pub fn bounded(text: String) -> String {
    if text.len() <= RUN_MAX {
        return text;
    }
    let text = cut_quoted(text);
    let text = cut_runs(text);
    if text.len() <= MESSAGE_MAX {
        return text;
    }
    let head = floor_boundary(&text, MESSAGE_HEAD);
    let mut tail = text.len() - MESSAGE_TAIL;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}… ({} bytes) …{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// `value`, or its first [`RUN_KEPT`] bytes and its length when longer than [`RUN_MAX`].
fn cut(out: &mut String, value: &str) -> bool {
    if value.len() > RUN_MAX {
        out.push_str(&value[..floor_boundary(value, RUN_KEPT)]);
        out.push_str(&format!("… ({} bytes)", value.len()));
        true
    } else {
        out.push_str(value);
        false
    }
}

/// Cuts what sits between each pair of backticks.
fn cut_quoted(text: String) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    // With an odd number of backticks the last one opens nothing.
    let pairs = (parts.len() - 1) / 2;
    let mut out = String::new();
    let mut changed = false;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 && i < 2 * pairs {
            changed |= cut(&mut out, part);
        } else {
            out.push_str(part);
        }
    }
    if changed { out } else { text }
}

/// Cuts runs of text without spaces (or backticks, which quote a value).
fn cut_runs(text: String) -> String {
    let gap = |c: char| c.is_whitespace() || c == '`';
    let mut out = String::new();
    let mut rest = text.as_str();
    let mut changed = false;
    while !rest.is_empty() {
        let run_end = rest.find(gap).unwrap_or(rest.len());
        changed |= cut(&mut out, &rest[..run_end]);
        rest = &rest[run_end..];
        let space_end = rest.find(|c: char| !gap(c)).unwrap_or(rest.len());
        out.push_str(&rest[..space_end]);
        rest = &rest[space_end..];
    }
    if changed { out } else { text }
}

/// The largest character boundary of `s` at or below `at`.
fn floor_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Every rule, in ID order.
pub fn all() -> Vec<&'static Rule> {
    let mut rules: Vec<&'static Rule> = [
        crate::format::RULES,
        crate::csv::RULES,
        crate::crd::RULES,
        crate::bundle::RULES,
        crate::operatorhub::RULES,
        crate::good_practices::RULES,
        crate::deprecated::RULES,
        crate::objects::RULES,
        crate::olm_v1::RULES,
        crate::rbac::RULES,
        crate::crd_examples::RULES,
        crate::community::RULES,
        crate::upgrade::RULES,
    ]
    .concat();
    rules.sort_by_key(|r| r.id);
    rules
}

/// The rule with this ID (case-insensitive).
pub fn find(id: &str) -> Option<&'static Rule> {
    all().into_iter().find(|r| r.id.eq_ignore_ascii_case(id))
}

/// `--list-rules`: one line per rule.
pub fn list_text() -> String {
    let mut out = String::new();
    for r in all() {
        out.push_str(&format!(
            "{:<8} {:<7} {:<15} {}\n",
            r.id,
            r.level.to_string(),
            r.suite.name(),
            r.summary
        ));
    }
    out
}

/// `--explain ID`: everything about one rule.
pub fn explain(r: &Rule) -> String {
    let mut out = format!("{}: {}\n\n", r.id, r.summary);
    out.push_str(&format!("level:    {}\n", r.level));
    out.push_str(&format!(
        "suite:    {}{}\n",
        r.suite.name(),
        if r.suite == Suite::Upgrade {
            " (run by `opship validate upgrade`)"
        } else if r.suite.is_optional() {
            " (optional: --select-optional)"
        } else {
            " (default)"
        }
    ));
    out.push_str(&format!(
        "upstream: {}\n\n",
        r.upstream.map_or_else(
            || "none (opship only)".to_owned(),
            |t| format!("operator-framework/api reports this as {t}")
        )
    ));
    if let Some(check) = r.check {
        out.push_str(&format!(
            "pipeline: the community-operators pipeline's {check}\n\n"
        ));
    }
    out.push_str(&wrap(r.help, 88));
    out.push('\n');
    out
}

/// The rule reference, `docs/rules.md`, generated from the registry so it cannot drift.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Validation rules\n\n\
         Generated by `opship validate --list-rules --rules-format markdown` from the rule \
         registry; a test keeps this file current. `opship validate --explain ID` prints one \
         rule.\n\n\
         The default suites (bundle-format, csv, crd, bundle) always run; the others run when \
         selected with `--select-optional`. *Upstream* is the error type \
         operator-framework/api reports for the same problem (none: opship only). A finding \
         may carry another level than the rule's usual one (removed APIs are errors only from \
         the Kubernetes version that removed them).\n",
    );
    for suite in Suite::ALL {
        let rules: Vec<&Rule> = all().into_iter().filter(|r| r.suite == suite).collect();
        if rules.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n## {}{}\n\n| ID | level | upstream | summary |\n|---|---|---|---|\n",
            suite.name(),
            if suite == Suite::Upgrade {
                " (`opship validate upgrade`)"
            } else if suite.is_optional() {
                " (optional)"
            } else {
                ""
            }
        ));
        for r in &rules {
            out.push_str(&format!(
                "| [{id}](#{lid}) | {} | {} | {} |\n",
                r.level,
                r.upstream.unwrap_or("—"),
                r.summary.replace('|', "\\|"),
                id = r.id,
                lid = r.id.to_lowercase()
            ));
        }
        for r in &rules {
            out.push_str(&format!(
                "\n### {}\n\n**{}** ({}, {})\n\n{}\n",
                r.id,
                r.summary,
                r.level,
                suite.name(),
                r.help
            ));
            if let Some(check) = r.check {
                out.push_str(&format!(
                    "\nThe community-operators pipeline's `{check}`.\n"
                ));
            }
        }
    }
    out
}

fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_in_one_place() {
        let short = "annotation `a` is `b`".to_owned();
        assert_eq!(bounded(short.clone()), short);
        let exact = "x".repeat(RUN_MAX);
        assert_eq!(bounded(format!("`{exact}` ok")), format!("`{exact}` ok"));

        let version = "1".repeat(1 << 20);
        let f = Finding::new(
            crate::csv::RULES[0],
            "x".repeat(1 << 20),
            format!("spec.version `{version}` is not a valid semantic version"),
        );
        assert_eq!(
            f.message,
            format!(
                "spec.version `{}… (1048576 bytes)` is not a valid semantic version",
                "1".repeat(RUN_KEPT)
            )
        );
        assert!(f.object.len() < 250 && f.object.ends_with("… (1048576 bytes)"));

        // Two values: the words between them stay.
        let m = bounded(format!(
            "label `k` is `{version}` but annotations.yaml says {version}"
        ));
        assert!(m.contains("bytes)` but annotations.yaml says 111"), "{m}");
        assert!(m.len() < 2 * RUN_KEPT + 100);

        // A lone backtick opens nothing.
        let m = bounded(format!("a ` {version}"));
        assert!(
            m.starts_with("a ` 111") && m.ends_with("… (1048576 bytes)"),
            "{m}"
        );

        // Cuts fall between characters.
        let m = bounded(format!("image {}", "é".repeat(300_000)));
        assert!(
            m.starts_with("image é") && m.ends_with("… (600000 bytes)"),
            "{m}"
        );

        // A quoted value with spaces (a CEL rule), a backtick inside it.
        let rule = format!("a + {}`b` + ", "a + ".repeat(250_000));
        let m = bounded(format!(
            "CEL rule `{rule}a` does not parse: 1:3: syntax error"
        ));
        assert!(m.starts_with("CEL rule `a + a + a"), "{m}");
        assert!(m.ends_with("` does not parse: 1:3: syntax error"), "{m}");
        assert!(m.len() < 2 * RUN_KEPT + 100, "{m}");

        // An unquoted one: head and tail, the tail saying what is wrong.
        let words = "a b ".repeat(250_000);
        let full = format!("example ({words}x): is too long");
        let cut = full.len() - MESSAGE_HEAD - MESSAGE_TAIL;
        let m = bounded(full);
        assert!(m.len() <= MESSAGE_HEAD + MESSAGE_TAIL + 40, "{}", m.len());
        assert!(m.starts_with("example (a b a b"));
        assert!(m.ends_with("a b a b x): is too long"), "{m}");
        assert!(m.contains(&format!("… ({cut} bytes) …")), "{m}");
    }

    #[test]
    fn ids_are_unique_and_well_formed() {
        let rules = all();
        for w in rules.windows(2) {
            assert_ne!(w[0].id, w[1].id, "duplicate rule ID");
        }
        for r in &rules {
            let (prefix, num) = r.id.split_at(r.id.len() - 3);
            assert!(
                prefix.chars().all(|c| c.is_ascii_uppercase()) && !prefix.is_empty(),
                "{}",
                r.id
            );
            assert!(num.chars().all(|c| c.is_ascii_digit()), "{}", r.id);
            assert!(!r.summary.is_empty() && !r.help.is_empty(), "{}", r.id);
            assert!(!r.summary.contains('\n'), "{}: summary is one line", r.id);
        }
    }

    #[test]
    fn suite_names_round_trip() {
        for s in Suite::ALL {
            assert_eq!(Suite::from_name(s.name()), Some(s));
        }
        assert_eq!(
            Suite::from_name("name=alpha-deprecated-apis"),
            Some(Suite::DeprecatedApis)
        );
        assert_eq!(Suite::from_name("nope"), None);
        assert_eq!(
            Suite::select("suite=operatorframework"),
            Some(vec![
                Suite::Operatorhub,
                Suite::GoodPractices,
                Suite::DeprecatedApis
            ])
        );
        assert_eq!(
            Suite::select("name=operatorhub"),
            Some(vec![Suite::Operatorhub])
        );
        assert_eq!(Suite::select("community"), Some(vec![Suite::Community]));
        assert_eq!(Suite::select("suite=nope"), None);
    }
}

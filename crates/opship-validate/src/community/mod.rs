//! The `community` suite (`COM…`): the static checks the community-operators pipeline runs on
//! every pull request (operator-pipelines' `operatorcert.static_tests`, suites `community` and
//! `common`), with the pipeline's verdicts, levels and wording, each rule naming the pipeline
//! check it reproduces. A bundle is checked in the context of its operator directory (sibling
//! bundles, `ci.yaml`, the repository's `config.yaml` and its waivers); the two checks that
//! run the `operator-sdk` binary are opship's own `operatorhub`, `good-practices` and
//! `deprecated-apis` suites instead.

pub mod graph;
pub mod py;
pub mod repo;
pub mod schema;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use opship_core::naming::excerpt;
use opship_core::yaml::Origin;
use rayon::prelude::*;
use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::rule::{Finding, Level, Rule};
use crate::{BundleReport, Options};
use py::{repr_list, repr_set, str_of};
use repo::{OperatorDir, PBundle, truthy};

/// Declares a community rule: like `rule!` with the pipeline's check name.
macro_rules! community_rule {
    ($id:ident, $level:ident, $check:literal, $summary:expr, $help:expr) => {
        #[doc = $summary]
        pub const $id: Rule = Rule {
            id: stringify!($id),
            suite: crate::rule::Suite::Community,
            level: Level::$level,
            upstream: None,
            summary: $summary,
            help: $help,
            check: Some($check),
        };
    };
}

community_rule!(
    COM001,
    Error,
    "check_required_fields",
    "The CSV has the fields OperatorHub requires, well formed",
    "The pipeline requires spec.displayName (3 to 50 characters), spec.description (20 or \
     more), spec.icon (base64 data of a PNG, JPEG, GIF or SVG), spec.version (SemVer), \
     spec.maintainers and spec.links (names with emails and URLs) and spec.provider.name \
     (errors), and warns about metadata.annotations capabilities, categories, containerImage \
     (REPO:TAG), createdAt (ISO 8601), repository (http(s) URL), support, description and \
     spec.keywords (a non-empty list of strings)."
);
community_rule!(
    COM002,
    Error,
    "check_dangling_bundles",
    "No bundle of the bundle's channels is left out of the update graph",
    "A bundle that nothing replaces (through replaces, skips or olm.skipRange) and that is \
     not the head of its channel cannot be updated from or to. Make the next bundle replace \
     or skip it. Off for operators with fbc.enabled in ci.yaml."
);
community_rule!(
    COM003,
    Error,
    "check_api_version_constraints",
    "minKubeVersion agrees with com.redhat.openshift.versions",
    "With spec.minKubeVersion set, the bundle's com.redhat.openshift.versions annotation must \
     be set and must not name OpenShift versions whose Kubernetes is older than \
     minKubeVersion. Off for operators with fbc.enabled."
);
community_rule!(
    COM004,
    Warning,
    "check_using_fbc",
    "The operator uses file-based catalogs",
    "The community repository recommends File Based Catalogs: new operators should start with \
     FBC, existing ones migrate (fbc.enabled in ci.yaml)."
);
community_rule!(
    COM005,
    Error,
    "check_operator_name_unique",
    "All bundles of the operator use one operator name in their CSV",
    "The part of each CSV's metadata.name before the first dot must be the same in every \
     bundle of the operator. Off for operators with fbc.enabled."
);
community_rule!(
    COM006,
    Warning,
    "check_ci_upgrade_graph",
    "ci.yaml names the update graph mode",
    "Set updateGraph in ci.yaml to replaces-mode or semver-mode; without it replaces-mode is \
     used, any other value fails. Off for operators with fbc.enabled."
);
community_rule!(
    COM007,
    Error,
    "check_upgrade_graph_loop",
    "The update graph of each channel has no loop",
    "A bundle that (through other bundles) replaces itself makes the update graph loop; an \
     empty or dot-less replaces fails too. Off for operators with fbc.enabled."
);
community_rule!(
    COM008,
    Error,
    "check_operator_name",
    "The package annotation, the CSV name and the directory agree, across bundles too",
    "The operator name in annotations.yaml (package annotation), the CSV's metadata.name and \
     the operator's directory name must be the same, and the same as in the operator's other \
     bundles (only a warning once the other bundles disagree among themselves)."
);
community_rule!(
    COM009,
    Error,
    "check_bundle_release_config",
    "release-config.yaml agrees with ci.yaml",
    "A bundle's release-config.yaml is for FBC operators only, its catalog templates must be \
     listed in ci.yaml's fbc.catalog_mapping, and a semver template takes only the channels \
     Fast, Candidate and Stable."
);
community_rule!(
    COM010,
    Error,
    "check_validate_schema_bundle_release_config",
    "release-config.yaml follows its schema",
    "release-config.yaml holds catalog_templates (a non-empty list of template_name, channels \
     and optionally defaultChannel, replaces, skips, skipRange) and optionally merge."
);
community_rule!(
    COM011,
    Error,
    "check_network_policy_presence",
    "The bundle holds no NetworkPolicy",
    "OLM cannot install NetworkPolicy objects from a bundle; the pipeline rejects bundles that \
     carry one in manifests/."
);
community_rule!(
    COM012,
    Error,
    "check_operator_version_directory_name",
    "The bundle directory is named after the CSV's spec.version",
    "A bundle lives in operators/<operator>/<spec.version>; rename the directory or fix the \
     version."
);
community_rule!(
    COM013,
    Error,
    "check_replaces_availability",
    "The replaced bundle exists and supports the same OpenShift versions",
    "spec.replaces must name another bundle of the operator, and that bundle must support at \
     least the OpenShift versions of this one. Comparing two different \
     com.redhat.openshift.versions needs the list of catalog indices (Red Hat's Pyxis \
     service): give it with --ocp-indices, else that part is skipped. Off for operators with \
     fbc.enabled."
);
community_rule!(
    COM014,
    Error,
    "check_schema_operator_ci_config",
    "ci.yaml follows its schema",
    "ci.yaml's updateGraph, reviewers, merge, cert_project_id and fbc (enabled, \
     version_promotion_strategy, catalog_mapping) must have the types and values the pipeline's \
     schema allows."
);
community_rule!(
    COM015,
    Error,
    "check_catalog_usage_ci_config",
    "Each catalog has one template in ci.yaml",
    "ci.yaml's fbc.catalog_mapping must not map one catalog to several templates."
);

/// The suite's rules.
pub const RULES: &[&Rule] = &[
    &COM001, &COM002, &COM003, &COM004, &COM005, &COM006, &COM007, &COM008, &COM009, &COM010,
    &COM011, &COM012, &COM013, &COM014, &COM015,
];

/// The pipeline's checks that opship does not run itself, and what covers them.
pub const NOT_RUN: &[(&str, &str)] = &[
    (
        "check_osdk_bundle_validate_operatorhub",
        "runs `operator-sdk bundle validate --select-optional name=operatorhub`: opship's \
         default suites with --select-optional operatorhub,deprecated-apis",
    ),
    (
        "check_osdk_bundle_validate_operator_framework",
        "runs `operator-sdk bundle validate --select-optional suite=operatorframework`: \
         opship's default suites with --select-optional suite=operatorframework",
    ),
];

/// A check that did not run for a bundle or operator, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The pipeline's check name.
    pub check: &'static str,
    /// opship's rule ID.
    pub rule: &'static str,
    /// Why it did not run.
    pub reason: String,
}

/// What the checks found about one bundle or operator.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Findings.
    pub findings: Vec<Finding>,
    /// Checks that did not run.
    pub skipped: Vec<Skipped>,
}

const FBC_OFF: &str = "off for operators with fbc.enabled in ci.yaml";

struct Ctx<'a> {
    op: &'a OperatorDir,
    opts: &'a Options,
    out: Outcome,
}

impl Ctx<'_> {
    /// Whether a check runs; records why not otherwise (a waiver in the repository's
    /// config.yaml, or FBC).
    fn runs(&mut self, rule: &'static Rule, fbc_off: bool) -> bool {
        let check = rule.check.expect("community rules name their check");
        let waivers = self.op.waivers.get_or_init(|| {
            RULES
                .iter()
                .filter_map(|r| r.check)
                .filter_map(|c| Some((c, waiver(self.op, c)?)))
                .collect()
        });
        if let Some(reason) = waivers.get(check) {
            self.skip(rule, reason.clone());
            return false;
        }
        if fbc_off && self.op.fbc_enabled() {
            self.skip(rule, FBC_OFF.to_owned());
            return false;
        }
        true
    }

    fn skip(&mut self, rule: &'static Rule, reason: String) {
        self.out.skipped.push(Skipped {
            check: rule.check.unwrap_or_default(),
            rule: rule.id,
            reason,
        });
    }
}

/// The waiver of a check for this operator in the repository's config.yaml (`tests[]` with the
/// check's `name` and an `ignore_operators` pattern matching the operator's name from its
/// start, as Python's `re.match` does).
fn waiver(op: &OperatorDir, check: &str) -> Option<String> {
    let tests = op.repo_config.get("tests")?.as_array()?;
    for t in tests {
        if t.get("name").and_then(Value::as_str) != Some(check) {
            continue;
        }
        for pat in t
            .get("ignore_operators")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if Regex::new(&format!("^(?:{pat})")).is_ok_and(|re| re.is_match(&op.name)) {
                return Some(format!(
                    "waived for this operator by the repository's config.yaml \
                     (ignore_operators `{}`)",
                    excerpt(pat)
                ));
            }
        }
    }
    None
}

fn finding(rule: &'static Rule, level: Level, object: &str, message: String) -> Finding {
    Finding::new(rule, object, message).with_level(level)
}

fn fail(rule: &'static Rule, object: &str, message: String) -> Finding {
    finding(rule, Level::Error, object, message)
}

fn warn(rule: &'static Rule, object: &str, message: String) -> Finding {
    finding(rule, Level::Warning, object, message)
}

fn at_file(f: Finding, path: Option<&Path>) -> Finding {
    match path {
        Some(p) => f.at(Origin::file(p)),
        None => f,
    }
}

/// The operator-level checks (reported once per operator).
pub fn operator_checks(op: &OperatorDir, opts: &Options) -> Outcome {
    let mut cx = Ctx {
        op,
        opts,
        out: Outcome::default(),
    };
    let object = op.name.as_str();
    let ci_file = op.config_path.as_deref();
    let ci = op.ci();

    if cx.runs(&COM005, true) {
        let mut names = BTreeSet::new();
        let mut error = None;
        for b in &op.bundles {
            match b.csv_operator_name() {
                Ok(n) => {
                    names.insert(n);
                }
                Err(e) => error = error.or(Some(e)),
            }
        }
        if let Some(e) = error {
            cx.out.findings.push(fail(&COM005, object, e));
        } else if names.len() > 1 {
            let names: Vec<std::borrow::Cow<'_, str>> = names.iter().map(|n| excerpt(n)).collect();
            cx.out.findings.push(fail(
                &COM005,
                object,
                format!("Bundles use multiple operator names: {}", repr_set(&names)),
            ));
        }
    }

    if cx.runs(&COM006, true) {
        let graph = ci.get("updateGraph");
        if !truthy(graph) {
            cx.out.findings.push(at_file(
                warn(
                    &COM006,
                    object,
                    "The 'updateGraph' option is missing in ci.yaml. The default upgrade graph \
                     'replaces-mode' will be used."
                        .to_owned(),
                ),
                ci_file,
            ));
        } else if !matches!(
            graph.and_then(Value::as_str),
            Some("replaces-mode" | "semver-mode")
        ) {
            cx.out.findings.push(at_file(
                fail(
                    &COM006,
                    object,
                    "The 'updateGraph' option in ci.yaml must be one of ['replaces-mode', \
                     'semver-mode']"
                        .to_owned(),
                ),
                ci_file,
            ));
        }
    }

    if cx.runs(&COM007, true) {
        for graph in op.graphs().values() {
            match graph {
                Err(e) => {
                    cx.out.findings.push(fail(&COM007, object, e.clone()));
                    break;
                }
                Ok(channel) => {
                    if let Some((from, to)) = channel.graph.cycle {
                        cx.out.findings.push(fail(
                            &COM007,
                            object,
                            format!(
                                "Upgrade graph loop detected: {} -> {}",
                                op.bundles[from].repr(),
                                op.bundles[to].repr()
                            ),
                        ));
                    }
                }
            }
        }
    }

    if cx.runs(&COM014, false) {
        let config = match &op.config {
            Ok(v) => v.clone(),
            Err(e) => {
                cx.out
                    .findings
                    .push(at_file(fail(&COM014, object, e.clone()), ci_file));
                Value::Object(Map::new())
            }
        };
        for m in schema::ci_errors(&config) {
            cx.out.findings.push(at_file(
                fail(
                    &COM014,
                    object,
                    format!(
                        "Operator's 'ci.yaml' contains invalid data which does not comply \
                         with the schema: {m}"
                    ),
                ),
                ci_file,
            ));
        }
    }

    if cx.runs(&COM015, false) {
        let mapping = ci
            .get("fbc")
            .and_then(|f| f.get("catalog_mapping"))
            .and_then(Value::as_array);
        let mut by_catalog: Vec<(String, Vec<Value>)> = Vec::new();
        for t in mapping.into_iter().flatten() {
            let template = t.get("template_name").cloned().unwrap_or(Value::Null);
            for c in t
                .get("catalog_names")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let c = str_of(c);
                match by_catalog.iter_mut().find(|(k, _)| *k == c) {
                    Some((_, list)) => list.push(template.clone()),
                    None => by_catalog.push((c, vec![template.clone()])),
                }
            }
        }
        for (catalog, templates) in by_catalog {
            if templates.len() > 1 {
                cx.out.findings.push(at_file(
                    fail(
                        &COM015,
                        object,
                        format!(
                            "Operator's 'ci.yaml' contains multiple templates '{}' for the \
                             same catalog '{}'.",
                            excerpt(&str_of(&Value::Array(templates))),
                            excerpt(&catalog)
                        ),
                    ),
                    ci_file,
                ));
            }
        }
    }
    cx.out
}

static CONTAINER_IMAGE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:[^/]+/)+[^/:]+:.+").expect("valid regex"));
static HTTP_URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^https?://.+").expect("valid regex"));

/// What a required field must be.
enum FieldRule {
    /// At least this many characters (any, or all but newlines).
    Min(usize, bool),
    Re(&'static LazyLock<Regex>),
    Capabilities,
    Categories,
    Timestamp,
    SemVer,
    Icon,
    People(&'static str, &'static str),
    Strings,
}

const CATEGORIES: [&str; 16] = [
    "AI/Machine Learning",
    "Application Runtime",
    "Big Data",
    "Cloud Provider",
    "Developer Tools",
    "Database",
    "Drivers and plugins",
    "Integration & Delivery",
    "Logging & Tracing",
    "Modernization & Migration",
    "Monitoring",
    "Networking",
    "OpenShift Optional",
    "Security",
    "Storage",
    "Streaming & Messaging",
];

fn required_fields() -> [(&'static str, FieldRule, bool); 15] {
    [
        (
            "metadata.annotations.capabilities",
            FieldRule::Capabilities,
            false,
        ),
        (
            "metadata.annotations.categories",
            FieldRule::Categories,
            false,
        ),
        (
            "metadata.annotations.containerImage",
            FieldRule::Re(&CONTAINER_IMAGE),
            false,
        ),
        (
            "metadata.annotations.createdAt",
            FieldRule::Timestamp,
            false,
        ),
        (
            "metadata.annotations.repository",
            FieldRule::Re(&HTTP_URL),
            false,
        ),
        (
            "metadata.annotations.support",
            FieldRule::Min(3, true),
            false,
        ),
        (
            "metadata.annotations.description",
            FieldRule::Min(10, true),
            false,
        ),
        ("spec.displayName", FieldRule::Min(3, false), true),
        ("spec.description", FieldRule::Min(20, true), true),
        ("spec.icon", FieldRule::Icon, true),
        ("spec.version", FieldRule::SemVer, true),
        ("spec.maintainers", FieldRule::People("name", "email"), true),
        ("spec.provider.name", FieldRule::Min(3, false), true),
        ("spec.links", FieldRule::People("name", "url"), true),
        ("spec.keywords", FieldRule::Strings, false),
    ]
}

/// Python's `str.strip()` whitespace.
fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// Whether a required field's value passes; `created_at` is how the CSV writes `createdAt`.
fn field_ok(rule: &FieldRule, value: &Value, created_at: py::Written) -> bool {
    match rule {
        FieldRule::Min(n, dotall) => {
            let s = str_of(value);
            let run = if *dotall {
                s.chars().count()
            } else {
                s.chars().take_while(|&c| c != '\n').count()
            };
            run >= *n
        }
        FieldRule::Re(re) => re.is_match(&str_of(value)),
        FieldRule::Capabilities => value
            .as_str()
            .is_some_and(|s| crate::operatorhub::CAPABILITIES.contains(&s)),
        FieldRule::Categories => str_of(value)
            .split(',')
            .all(|c| CATEGORIES.contains(&py_strip(c))),
        FieldRule::Timestamp => py::is_timestamp(&str_of(value), created_at),
        FieldRule::SemVer => value
            .as_str()
            .is_some_and(|s| py::parse_semver(s, false).is_some()),
        FieldRule::Icon => icon_ok(value),
        FieldRule::People(a, b) => {
            list_of_dicts(value, &[a, b]) && value.as_array().is_some_and(|l| !l.is_empty())
        }
        FieldRule::Strings => value
            .as_array()
            .is_some_and(|l| !l.is_empty() && l.iter().all(Value::is_string)),
    }
}

fn list_of_dicts(value: &Value, string_fields: &[&str]) -> bool {
    value.as_array().is_some_and(|items| {
        items.iter().all(|i| {
            i.as_object().is_some_and(|m| {
                string_fields
                    .iter()
                    .all(|f| m.get(*f).is_some_and(Value::is_string))
            })
        })
    })
}

fn icon_ok(value: &Value) -> bool {
    use base64::Engine as _;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
    );
    if !list_of_dicts(value, &["base64data", "mediatype"]) {
        return false;
    }
    let icons = value.as_array().map(Vec::as_slice).unwrap_or_default();
    !icons.is_empty()
        && icons.iter().all(|icon| {
            let data: String = icon["base64data"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .filter(|c| !matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'))
                .collect();
            data.len() >= 4
                && engine.decode(data.as_bytes()).is_ok()
                && matches!(
                    icon["mediatype"].as_str(),
                    Some("image/png" | "image/jpeg" | "image/gif" | "image/svg+xml")
                )
        })
}

/// `lookup_dict`: the value at a dotted path, `None` when a key is missing.
fn lookup<'v>(root: &'v Map<String, Value>, path: &str) -> Option<&'v Value> {
    let mut keys = path.split('.');
    let mut cur = root.get(keys.next()?)?;
    for k in keys {
        cur = cur.as_object()?.get(k)?;
    }
    Some(cur)
}

/// The bundle-level checks of one bundle of the operator.
pub fn bundle_checks(op: &OperatorDir, i: usize, opts: &Options) -> Outcome {
    let mut cx = Ctx {
        op,
        opts,
        out: Outcome::default(),
    };
    let b = &op.bundles[i];
    let object = format!("{}/{}", b.operator_name, b.version);
    let object = object.as_str();
    let csv_file = b.csv_path.as_deref();

    if cx.runs(&COM001, false) {
        match &b.csv {
            Err(e) => cx.out.findings.push(fail(&COM001, object, e.clone())),
            Ok(csv) => {
                for (field, rule, fatal) in required_fields() {
                    let message = match lookup(csv, field) {
                        None | Some(Value::Null) => format!("CSV does not define {field}"),
                        Some(v) if field_ok(&rule, v, b.created_at) => continue,
                        Some(_) => format!("CSV contains an invalid value for {field}"),
                    };
                    let level = if fatal { Level::Error } else { Level::Warning };
                    cx.out
                        .findings
                        .push(at_file(finding(&COM001, level, object, message), csv_file));
                }
            }
        }
    }

    if cx.runs(&COM002, true) {
        dangling(&mut cx, i, object);
    }

    if cx.runs(&COM003, true) {
        for m in api_version_constraints(b) {
            cx.out.findings.push(at_file(m, csv_file));
        }
    }

    if cx.runs(&COM004, true) {
        let message = if op.bundles.len() > 1 {
            NON_FBC_SUGGESTION
        } else {
            NON_FBC_WARNING
        };
        cx.out
            .findings
            .push(warn(&COM004, object, message.to_owned()));
    }

    if cx.runs(&COM008, false) {
        operator_name(&mut cx, i, object);
    }

    let rc_file = b.dir.join("release-config.yaml");
    let release_config = match &b.release_config {
        Ok(v) => v.clone().filter(|v| truthy(Some(v))),
        Err(e) => {
            // The pipeline stops on a release-config.yaml it cannot read; both checks say so.
            for rule in [&COM009, &COM010] {
                if cx.runs(rule, false) {
                    cx.out
                        .findings
                        .push(fail(rule, object, e.clone()).at(Origin::file(&rc_file)));
                }
            }
            None
        }
    };
    if let Some(rc) = &release_config {
        if cx.runs(&COM009, false) {
            for m in release_config_checks(op, rc) {
                cx.out
                    .findings
                    .push(fail(&COM009, object, m).at(Origin::file(&rc_file)));
            }
        }
        if cx.runs(&COM010, false) {
            for m in schema::release_config_errors(rc) {
                cx.out.findings.push(
                    fail(
                        &COM010,
                        object,
                        format!(
                            "Bundle's 'release-config.yaml' contains invalid data which does \
                             not comply with the schema: {m}"
                        ),
                    )
                    .at(Origin::file(&rc_file)),
                );
            }
        }
    }

    if cx.runs(&COM011, false) {
        for (file, name) in network_policies(&op.root, &b.dir.join("manifests")) {
            cx.out.findings.push(
                fail(
                    &COM011,
                    object,
                    format!(
                        "Bundle contains a NetworkPolicy in {name}. Network policies are not a \
                         supported resource that Operator Lifecycle Manager(OLM) can install \
                         and manage."
                    ),
                )
                .at(Origin::file(&file)),
            );
        }
    }

    if cx.runs(&COM012, false) {
        let csv_version = b
            .spec()
            .and_then(|s| s.get("version"))
            .filter(|v| truthy(Some(*v)))
            .map(str_of)
            .unwrap_or_default();
        if csv_version != b.version {
            let rel = csv_file
                .and_then(|p| p.strip_prefix(&op.repo_root).ok())
                .map(|p| opship_core::paths::show(p).to_string())
                .unwrap_or_default();
            cx.out.findings.push(at_file(
                fail(
                    &COM012,
                    object,
                    format!(
                        "Bundle directory name '{}/{}' does not match the expected operator CSV \
                         version '{}' from ./{rel}.",
                        b.operator_name,
                        b.version,
                        excerpt(&csv_version)
                    ),
                ),
                csv_file,
            ));
        }
    }

    if cx.runs(&COM013, true) {
        replaces_availability(&mut cx, i, object);
    }
    cx.out
}

const NON_FBC_SUGGESTION: &str = "[File Based Catalog (FBC)](https://github.com/redhat-openshift-ecosystem/community-operators-prod/discussions/5031#discussion-7097441) is a new way to manage operator metadata. This operator does not use FBC. Consider [migrating](https://redhat-openshift-ecosystem.github.io/operator-pipelines/users/fbc_onboarding/) for better maintainability.";
const NON_FBC_WARNING: &str = "[File Based Catalog (FBC)](https://github.com/redhat-openshift-ecosystem/community-operators-prod/discussions/5031#discussion-7097441) is a new way to manage operator metadata. This operator does not use FBC and it is recommended for new operators to [start directly with FBC](https://redhat-openshift-ecosystem.github.io/operator-pipelines/users/fbc_workflow/).";

fn dangling(cx: &mut Ctx<'_>, i: usize, object: &str) {
    let op = cx.op;
    let b = &op.bundles[i];
    let mut channels = b.channels();
    channels.extend(b.default_channel());
    for channel in channels {
        match op.graph(&channel) {
            Err(e) => {
                cx.out.findings.push(fail(&COM002, object, e));
                return;
            }
            Ok(graph) => {
                if let Some(m) = dangling_message(op, &channel, graph) {
                    cx.out.findings.push(fail(&COM002, object, m.clone()));
                }
            }
        }
    }
}

/// The dangling bundles of a channel, as the pipeline words them: the same for each of the
/// channel's bundles, so worded once per channel (and cut to a bounded message once).
fn dangling_message<'g>(
    op: &OperatorDir,
    channel: &str,
    graph: &'g repo::Channel,
) -> Option<&'g String> {
    graph
        .dangling
        .get_or_init(|| {
            let head = graph.graph.members.last().copied();
            let mut left: Vec<&PBundle> = graph
                .graph
                .unreplaced
                .iter()
                .filter(|&&m| Some(m) != head)
                .map(|&m| &op.bundles[m])
                .collect();
            if left.is_empty() {
                return None;
            }
            left.sort_by(|a, b| a.version.cmp(&b.version));
            let names: Vec<String> = left.iter().map(|b| b.repr()).collect();
            Some(crate::rule::bounded(format!(
                "Channel {} has dangling bundles: {{{}}}",
                opship_core::naming::excerpt(channel),
                names.join(", ")
            )))
        })
        .as_ref()
}

/// OpenShift → Kubernetes minor versions, as the pipeline's table has them.
const OCP_TO_K8S: [((u64, u64), (u64, u64)); 17] = [
    ((4, 1), (1, 13)),
    ((4, 2), (1, 14)),
    ((4, 3), (1, 16)),
    ((4, 4), (1, 17)),
    ((4, 5), (1, 18)),
    ((4, 6), (1, 19)),
    ((4, 7), (1, 20)),
    ((4, 8), (1, 21)),
    ((4, 9), (1, 22)),
    ((4, 10), (1, 23)),
    ((4, 11), (1, 24)),
    ((4, 12), (1, 25)),
    ((4, 13), (1, 26)),
    ((4, 14), (1, 27)),
    ((4, 15), (1, 28)),
    ((4, 16), (1, 29)),
    ((4, 17), (1, 30)),
];

/// `_parse_ocp_version`: `v4.12` → (4, 12, 0), or python-semver's complaint.
fn parse_ocp(text: &str) -> Result<(u64, u64, u64), String> {
    let t = py_strip(text);
    let t = t.strip_prefix('v').unwrap_or(t);
    let t = py_strip(t);
    py::parse_semver(t, true)
        .map(|(a, b, _)| (a, b, 0))
        .ok_or_else(|| format!("{} is not valid SemVer string", excerpt(t)))
}

fn api_version_constraints(b: &PBundle) -> Vec<Finding> {
    let object = format!("{}/{}", b.operator_name, b.version);
    let rule = &COM003;
    let mut out = Vec::new();
    let min = b.spec().and_then(|s| s.get("minKubeVersion"));
    if !truthy(min) {
        return out;
    }
    let min_text = str_of(min.expect("truthy"));
    let Some(k8s_min) = py::parse_semver(py_strip(&min_text), true) else {
        out.push(fail(
            rule,
            &object,
            format!(
                "Invalid minKubeVersion: {} is not valid SemVer string",
                excerpt(py_strip(&min_text))
            ),
        ));
        return out;
    };
    let k8s_min_str = format!("{}.{}.{}", k8s_min.0, k8s_min.1, k8s_min.2);
    let ocp = b.annotation("com.redhat.openshift.versions");
    if !truthy(ocp) {
        out.push(fail(
            rule,
            &object,
            format!(
                "minKubeVersion is set to {k8s_min_str} but com.redhat.openshift.versions is not set"
            ),
        ));
        return out;
    }
    let selector = str_of(ocp.expect("truthy"));
    let selector = py_strip(&selector);
    let known: Vec<(u64, u64, u64)> = OCP_TO_K8S.iter().map(|((a, b), _)| (*a, *b, 0)).collect();
    let versions: Result<Vec<(u64, u64, u64)>, String> = (|| {
        if let Some((a, z)) = selector.split_once('-') {
            let (a, z) = (parse_ocp(a)?, parse_ocp(z)?);
            Ok(known
                .iter()
                .copied()
                .filter(|v| a <= *v && *v <= z)
                .collect())
        } else if selector.contains(',') {
            let listed: BTreeSet<_> = selector
                .split(',')
                .map(parse_ocp)
                .collect::<Result<_, _>>()?;
            if listed != BTreeSet::from([(4, 5, 0), (4, 6, 0)]) {
                out.push(warn(
                    rule,
                    &object,
                    "Comma separated list of versions in com.redhat.openshift.versions is only \
                     supported for v4.5 and v4.6"
                        .to_owned(),
                ));
            }
            let min = *listed.iter().next().expect("split gives one item at least");
            Ok(known.iter().copied().filter(|v| *v >= min).collect())
        } else if let Some(exact) = selector.strip_prefix('=') {
            let v = parse_ocp(exact)?;
            let pos = known.partition_point(|k| *k <= v);
            Ok(vec![known[pos.saturating_sub(1)]])
        } else {
            let v = parse_ocp(selector)?;
            Ok(known.iter().copied().filter(|k| *k >= v).collect())
        }
    })();
    let versions = match versions {
        Ok(v) => v,
        Err(e) => {
            out.push(fail(
                rule,
                &object,
                format!("Invalid com.redhat.openshift.versions: {e}"),
            ));
            return out;
        }
    };
    let conflicting: Vec<String> = versions
        .iter()
        .filter(|v| {
            let k = OCP_TO_K8S
                .iter()
                .find(|((a, b), _)| (*a, *b) == (v.0, v.1))
                .map(|(_, k)| *k)
                .expect("from the table");
            (k.0, k.1, 0) < k8s_min
        })
        .map(|v| format!("{}.{}", v.0, v.1))
        .collect();
    if !conflicting.is_empty() {
        out.push(fail(
            rule,
            &object,
            format!(
                "OCP version(s) {} conflict with minKubeVersion={k8s_min_str}",
                conflicting.join(",")
            ),
        ));
    }
    out
}

fn operator_name(cx: &mut Ctx<'_>, i: usize, object: &str) {
    let op = cx.op;
    let b = &op.bundles[i];
    let rule = &COM008;
    let meta = match b.metadata_operator_name() {
        Err(_) => {
            cx.out.findings.push(fail(
                rule,
                object,
                format!("Invalid operator name in annotations.yaml for {}", b.repr()),
            ));
            return;
        }
        Ok(m) if m.is_empty() => {
            cx.out.findings.push(fail(
                rule,
                object,
                "Bundle does not define the operator name in annotations.yaml".to_owned(),
            ));
            return;
        }
        Ok(m) => m,
    };
    let Ok(csv_name) = b.csv_operator_name() else {
        cx.out.findings.push(fail(
            rule,
            object,
            format!("Invalid operator name in CSV for {}", b.repr()),
        ));
        return;
    };
    let has_others = op.bundles.len() > 1;
    if has_others {
        let census = op.census();
        consistency(
            cx,
            object,
            &meta,
            &census.package_names,
            &census.package_list,
            "from annotations.yaml",
        );
        consistency(
            cx,
            object,
            &csv_name,
            &census.csv_names,
            &census.csv_list,
            "from the CSV",
        );
    }
    let level = if has_others {
        Level::Warning
    } else {
        Level::Error
    };
    if meta != csv_name {
        cx.out.findings.push(finding(
            rule,
            level,
            object,
            format!(
                "Operator name from annotations.yaml ({}) does not match the name defined \
                 in the CSV ({})",
                excerpt(&meta),
                excerpt(&csv_name)
            ),
        ));
    }
    if meta != b.operator_name {
        cx.out.findings.push(finding(
            rule,
            level,
            object,
            format!(
                "Operator name from annotations.yaml ({}) does not match the operator's \
                 directory name ({})",
                excerpt(&meta),
                b.operator_name
            ),
        ));
    }
}

/// The bundle's name `mine` against the other bundles' (`all`: every bundle's names that read,
/// with how many bundles have each; `all_list`: them as the pipeline lists them).
fn consistency(
    cx: &mut Ctx<'_>,
    object: &str,
    mine: &str,
    all: &BTreeMap<String, usize>,
    all_list: &str,
    what: &str,
) {
    // The other bundles' names: all of them but this bundle's when no other has it.
    let alone = all.get(mine) == Some(&1);
    let others = all.len() - usize::from(alone);
    if others == 1 {
        let common = all
            .keys()
            .find(|k| !(alone && k.as_str() == mine))
            .expect("one other name");
        if common != mine {
            cx.out.findings.push(fail(
                &COM008,
                object,
                format!(
                    "Operator name {what} ({}) does not match the name defined in other \
                     bundles ({})",
                    excerpt(mine),
                    excerpt(common)
                ),
            ));
        }
    } else {
        cx.out.findings.push(warn(
            &COM008,
            object,
            format!("Operator name {what} is not consistent across bundles: {all_list}"),
        ));
    }
}

fn release_config_checks(op: &OperatorDir, rc: &Value) -> Vec<String> {
    let ci = op.ci();
    let fbc = ci.get("fbc");
    if !truthy(fbc.and_then(|f| f.get("enabled"))) {
        return vec![
            "Bundle's 'release-config.yaml' is used but FBC is not enabled for the operator. \
             Update the 'fbc.enabled' field in the ci.yaml file."
                .to_owned(),
        ];
    }
    let mapping: BTreeMap<String, &Value> = fbc
        .and_then(|f| f.get("catalog_mapping"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| Some((str_of(t.get("template_name")?), t)))
        .collect();
    let mut out = Vec::new();
    // A release-config.yaml without catalog_templates is the schema check's to report.
    for t in rc
        .get("catalog_templates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = t.get("template_name") else {
            continue;
        };
        let name = str_of(name);
        match mapping.get(&name) {
            None => out.push(format!(
                "Bundle's 'release-config.yaml' contains a catalog template '{}' that is \
                 not defined in the ci.yaml file under 'catalog_mapping'. Add the template to \
                 the 'catalog_mapping.",
                excerpt(&name)
            )),
            Some(m) => {
                if m.get("type").and_then(Value::as_str) != Some("olm.semver") {
                    continue;
                }
                let channels = t.get("channels").cloned().unwrap_or(Value::Null);
                let allowed = ["Fast", "Candidate", "Stable"];
                let ok = channels.as_array().is_some_and(|c| {
                    c.iter()
                        .all(|x| x.as_str().is_some_and(|s| allowed.contains(&s)))
                });
                if !ok {
                    out.push(format!(
                        "Bundle's 'release-config.yaml' contains a semver catalog template \
                         '{}' with invalid channels: {}. Allowed channels are: {}. Follow \
                         olm [documentation](https://olm.operatorframework.io/docs/reference/catalog-templates/#specification) \
                         to see more details about semver template.",
                        excerpt(&name),
                        excerpt(&str_of(&channels)),
                        repr_list(&allowed)
                    ));
                }
            }
        }
    }
    out
}

/// NetworkPolicy objects in `manifests/*.yaml` and `*.yml` of the operator directory `root` (one
/// document per file, as the pipeline reads them; files it cannot read, such as symlinks out of
/// `root`, are the bundle-format rules' to report).
fn network_policies(root: &Path, manifests: &Path) -> Vec<(PathBuf, String)> {
    repo::list_in_tree(root, manifests)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            p.is_file() && matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
        })
        .filter(|p| {
            let Ok(Value::Object(m)) = repo::load_yaml(root, p) else {
                return false;
            };
            m.get("kind").and_then(Value::as_str) == Some("NetworkPolicy")
                && m.get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|a| a.starts_with("networking.k8s.io/"))
        })
        .map(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (p, name)
        })
        .collect()
}

fn replaces_availability(cx: &mut Ctx<'_>, i: usize, object: &str) {
    let op = cx.op;
    let b = &op.bundles[i];
    let rule = &COM013;
    let Some(replaces) = b
        .spec()
        .and_then(|s| s.get("replaces"))
        .filter(|v| truthy(Some(*v)))
        .map(str_of)
    else {
        return;
    };
    let delimiter = if replaces.contains(".v") { ".v" } else { "." };
    let Some((_, replaces_version)) = replaces.split_once(delimiter) else {
        cx.out.findings.push(fail(
            rule,
            object,
            format!(
                "{} has invalid 'replaces' field: '{}'",
                b.repr(),
                excerpt(&replaces)
            ),
        ));
        return;
    };
    let own = b.csv_operator_version();
    if own.as_deref() == Ok(replaces_version) {
        cx.out.findings.push(fail(
            rule,
            object,
            format!(
                "{} attempts to replace itself. Please set 'spec.replaces' field to a \
                 different version in the CSV.",
                b.repr()
            ),
        ));
        return;
    }
    let census = op.census();
    let ver_to_dir = match &census.versions {
        Ok(v) => v,
        Err(e) => {
            cx.out.findings.push(fail(rule, object, e.clone()));
            return;
        }
    };
    let Some(&j) = ver_to_dir.get(replaces_version) else {
        cx.out.findings.push(fail(
            rule,
            object,
            format!(
                "{} attempts to replace version '{}' which does not exist in the submitted PR \
                 branch. Available versions: {}. If you are submitting multiple versions in \
                 sequence, make sure your fork is up to date with origin (rebased) before each \
                 submission to include all previously merged versions.",
                b.repr(),
                excerpt(replaces_version),
                census.versions_list
            ),
        ));
        return;
    };
    let replaced = &op.bundles[j];
    let mine = b.annotation("com.redhat.openshift.versions").cloned();
    let theirs = replaced
        .annotation("com.redhat.openshift.versions")
        .cloned();
    if mine == theirs {
        return;
    }
    let Some(indices) = &cx.opts.ocp_indices else {
        cx.skip(
            rule,
            format!(
                "needs the organization's catalog indices (Red Hat's Pyxis service) to compare \
                 com.redhat.openshift.versions {} with {} of {}: give them with --ocp-indices",
                excerpt(&mine.as_ref().map_or_else(|| "None".to_owned(), py::repr)),
                excerpt(&theirs.as_ref().map_or_else(|| "None".to_owned(), py::repr)),
                replaced.repr()
            ),
        );
        return;
    };
    let mine_set = supported(indices, mine.as_ref());
    let theirs_set = supported(indices, theirs.as_ref());
    if mine_set.is_subset(&theirs_set) {
        return;
    }
    let mine_list: Vec<&String> = mine_set.iter().collect();
    let theirs_list: Vec<&String> = theirs_set.iter().collect();
    let show = |v: &Option<Value>| {
        excerpt(&v.as_ref().map_or_else(|| "None".to_owned(), str_of)).into_owned()
    };
    cx.out.findings.push(fail(
        rule,
        object,
        format!(
            "Replaces bundle {} {} does not support the same OCP versions as bundle {} {}. In \
             order to fix this issue, align the OCP version range to match the range of the \
             replaced bundle. This can be done by setting the `com.redhat.openshift.versions` \
             annotation in the `metadata/annotations.yaml` file.\n`{}` - `{}`\n`{}` - `{}`",
            replaced.repr(),
            repr_list(&theirs_list),
            b.repr(),
            repr_list(&mine_list),
            b.repr(),
            show(&mine),
            replaced.repr(),
            show(&theirs)
        ),
    ));
}

/// The catalog indices an OpenShift version range selects, as Pyxis's `ocp_versions_range`
/// does: `v4.12` and later, `=v4.12` only, `v4.12-v4.14` between, a comma list from its lowest.
/// Sorted as text, as the pipeline sorts them.
pub fn supported(indices: &[String], range: Option<&Value>) -> BTreeSet<String> {
    let all = || indices.iter().cloned().collect();
    let Some(range) = range.filter(|v| truthy(Some(*v))) else {
        return all();
    };
    let text = str_of(range);
    let sel = py_strip(&text);
    let parsed: Vec<(String, (u64, u64, u64))> = indices
        .iter()
        .filter_map(|i| parse_ocp(i).ok().map(|v| (i.clone(), v)))
        .collect();
    let pick = |f: &dyn Fn((u64, u64, u64)) -> bool| -> BTreeSet<String> {
        parsed
            .iter()
            .filter(|(_, v)| f(*v))
            .map(|(i, _)| i.clone())
            .collect()
    };
    if let Some((a, z)) = sel.split_once('-') {
        match (parse_ocp(a), parse_ocp(z)) {
            (Ok(a), Ok(z)) => pick(&|v| a <= v && v <= z),
            _ => BTreeSet::new(),
        }
    } else if sel.contains(',') {
        match sel.split(',').map(parse_ocp).collect::<Result<Vec<_>, _>>() {
            Ok(list) => {
                let min = list.into_iter().min().unwrap_or_default();
                pick(&|v| v >= min)
            }
            Err(_) => BTreeSet::new(),
        }
    } else if let Some(exact) = sel.strip_prefix('=') {
        match parse_ocp(exact) {
            Ok(x) => pick(&|v| v == x),
            Err(_) => BTreeSet::new(),
        }
    } else {
        match parse_ocp(sel) {
            Ok(x) => pick(&|v| v >= x),
            Err(_) => BTreeSet::new(),
        }
    }
}

/// An operator directory read, with its operator-level checks, once per run.
type ReadOperator = Result<(OperatorDir, Outcome), String>;

/// The operator directories of one `validate bundle` run: read once each, however many of
/// its bundles the run validates (each bundle still reports its operator's findings, as the
/// pipeline does on every bundle), and dropped once the run's last bundle of it is checked.
#[derive(Default)]
pub struct Operators {
    read: std::sync::Mutex<BTreeMap<PathBuf, std::sync::Arc<ReadOperator>>>,
    /// How many bundles of the run are still to be checked, by operator directory.
    pending: std::sync::Mutex<BTreeMap<PathBuf, usize>>,
}

impl Operators {
    /// For a run over the bundle directories `dirs`: the operator directories more than one
    /// of them shares are kept until their last bundle is checked.
    pub fn for_bundles(dirs: &[PathBuf]) -> Operators {
        let mut pending: BTreeMap<PathBuf, usize> = BTreeMap::new();
        for d in dirs {
            if let Ok((_, parent)) = bundle_and_operator(d) {
                *pending.entry(parent).or_default() += 1;
            }
        }
        pending.retain(|_, n| *n > 1);
        Operators {
            read: Default::default(),
            pending: std::sync::Mutex::new(pending),
        }
    }

    /// The operator directory `dir` read and checked, the first time it is asked for.
    fn get(&self, dir: &Path, opts: &Options) -> std::sync::Arc<ReadOperator> {
        let lock = || {
            self.read
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(r) = lock().get(dir) {
            return r.clone();
        }
        // Read without holding the lock (reading runs on rayon's threads, which must never
        // wait on a lock a thread of theirs holds); two bundles of one operator asked for at
        // the same moment may both read it, and the first one kept is used.
        let read = std::sync::Arc::new(
            OperatorDir::load(dir)
                .map(|op| {
                    let o = operator_checks(&op, opts);
                    (op, o)
                })
                .map_err(|e| e.to_string()),
        );
        let shared = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(dir);
        if !shared {
            return read;
        }
        lock().entry(dir.to_path_buf()).or_insert(read).clone()
    }

    /// One bundle of `dir` is checked; the read is dropped after the run's last one.
    fn done(&self, dir: &Path) {
        let mut pending = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = pending.get_mut(dir) {
            *n -= 1;
            if *n == 0 {
                pending.remove(dir);
                self.read
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(dir);
            }
        }
    }
}

/// For `validate bundle --select-optional community`: the bundle's and its operator's checks,
/// the operator read from the bundle's parent directory (once per run, through `operators`).
pub fn check_bundle_dir(dir: &Path, opts: &Options, operators: &Operators) -> Outcome {
    let mut out = Outcome::default();
    let (resolved, parent) = match bundle_and_operator(dir) {
        Ok(found) => found,
        Err(why) => return skipped_all(why),
    };
    let (resolved, parent) = (resolved.as_path(), parent.as_path());
    if !repo::is_bundle(resolved) {
        return skipped_all(NEEDS_OPERATOR);
    }
    let read = operators.get(parent, opts);
    operators.done(parent);
    let (op, o) = match read.as_ref() {
        Ok(read) => read,
        Err(e) => return skipped_all(&format!("could not read the operator directory: {e}")),
    };
    let Some(i) = op.index_of(resolved) else {
        return skipped_all("the bundle is not a bundle of its parent directory");
    };
    out.findings.extend(o.findings.iter().cloned());
    out.skipped.extend(o.skipped.iter().cloned());
    let b = bundle_checks(op, i, opts);
    out.findings.extend(b.findings);
    out.skipped.extend(b.skipped);
    out
}

const NEEDS_OPERATOR: &str = "needs the bundle's operator directory (a bundle directory)";

/// The bundle directory `dir` resolved, and its operator directory: the directory that holds
/// it as named (`operators/foo` for `operators/foo/1.0.0`, also when `1.0.0` is a symlink). A
/// bundle directory that is a symlink out of its operator directory is not followed there.
fn bundle_and_operator(dir: &Path) -> Result<(PathBuf, PathBuf), &'static str> {
    let resolved = std::fs::canonicalize(dir).map_err(|_| NEEDS_OPERATOR)?;
    let named = std::path::absolute(dir).ok();
    let parent = match named
        .as_deref()
        .filter(|n| n.file_name().is_some())
        .and_then(Path::parent)
    {
        Some(p) => std::fs::canonicalize(p).map_err(|_| NEEDS_OPERATOR)?,
        // `..` and the like: no name to go by.
        None => resolved.parent().ok_or(NEEDS_OPERATOR)?.to_path_buf(),
    };
    if resolved.parent() != Some(parent.as_path()) {
        return Err(
            "the bundle directory is a symlink that leads out of its operator directory; not \
             followed",
        );
    }
    Ok((resolved, parent))
}

fn skipped_all(reason: &str) -> Outcome {
    Outcome {
        findings: Vec::new(),
        skipped: RULES
            .iter()
            .map(|r| Skipped {
                check: r.check.unwrap_or_default(),
                rule: r.id,
                reason: reason.to_owned(),
            })
            .collect(),
    }
}

/// `opship validate operator OPDIR`: the operator-level checks once (the first report, named
/// after the operator), then every bundle with the selected suites and the community
/// bundle-level checks, in directory order.
pub fn validate_operator(
    dir: &Path,
    opts: &Options,
) -> crate::Result<Vec<crate::Result<BundleReport>>> {
    let op = OperatorDir::load(dir).map_err(|e| crate::Error::io(dir, e))?;
    if op.bundles.is_empty() && op.config_path.is_none() {
        return Err(crate::Error::NotABundle {
            path: dir.to_path_buf(),
            reason: "not an operator directory: no ci.yaml and no bundle (VERSION/manifests \
                     and VERSION/metadata)"
                .to_owned(),
        });
    }
    let o = operator_checks(&op, opts);
    let mut findings = o.findings;
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    let mut reports = vec![Ok(BundleReport {
        path: dir.to_path_buf(),
        name: op.name.clone(),
        findings,
        skipped: o.skipped,
    })];
    let mut others = opts.clone();
    others.optional.remove(&crate::Suite::Community);
    let bundles: Vec<crate::Result<BundleReport>> = (0..op.bundles.len())
        .into_par_iter()
        .map(|i| {
            let b = &op.bundles[i];
            let path = dir.join(&b.version);
            let loaded = crate::load::load_dir_in(&path, &op.root, crate::load::Keys::Go)?;
            let mut findings = crate::validate(&loaded, &others);
            let c = bundle_checks(&op, i, opts);
            findings.extend(c.findings);
            findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
            findings.dedup();
            Ok(BundleReport {
                path,
                name: loaded.name.clone(),
                findings,
                skipped: c.skipped,
            })
        })
        .collect();
    reports.extend(bundles);
    Ok(reports)
}

//! Bundle validation for opship: the rules of operator-framework/api (CSV, CRD and bundle
//! validators, the optional OperatorHub, good-practices, deprecated-API and object validators)
//! and opship's own suites (OLM v1, RBAC least privilege, CRD examples), each finding tagged
//! with a stable rule ID, a level and a `file:line:col`.
//!
//! The flow: [`load::load_dir`] (or [`load::load_files`] for unpacked images) reads a bundle,
//! recording format problems as findings; [`validate`] runs the selected suites over it;
//! [`report`] renders the findings as text, JSON, SARIF or GitHub annotations.

/// Declares a rule constant: `rule!(Suite, ID, Level, upstream, summary, help)`.
macro_rules! rule {
    ($suite:ident, $id:ident, $level:ident, $upstream:expr, $summary:expr, $help:expr) => {
        #[doc = $summary]
        pub const $id: $crate::rule::Rule = $crate::rule::Rule {
            id: stringify!($id),
            suite: $crate::rule::Suite::$suite,
            level: $crate::rule::Level::$level,
            upstream: $upstream,
            summary: $summary,
            help: $help,
            check: None,
        };
    };
}

pub mod bundle;
pub mod community;
pub mod crd;
pub mod crd_examples;
pub mod csv;
pub mod deprecated;
pub mod error;
pub mod format;
pub mod gofields;
pub mod good_practices;
pub mod load;
pub mod objects;
pub mod olm_v1;
pub mod operatorhub;
pub mod rbac;
pub mod report;
pub mod rule;
pub mod upgrade;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use error::{Error, Result};
pub use load::Bundle;
pub use rule::{Finding, Level, Rule, Suite};

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Optional suites to run on top of the default ones.
    pub optional: BTreeSet<Suite>,
    /// The Kubernetes version the bundle targets (`--k8s-version`); removed APIs at or below it
    /// are errors, later ones warnings.
    pub k8s_version: Option<semver::Version>,
    /// Replacement list of OperatorHub categories (`--categories FILE`, like operator-sdk's
    /// `OPERATOR_BUNDLE_CATEGORIES`).
    pub categories: Option<Vec<String>>,
    /// The catalog indices of the repository's organization (`v4.16`, `v4.17`, ...), as Red
    /// Hat's Pyxis service lists them (`--ocp-indices`): what the community suite's
    /// `check_replaces_availability` needs to compare two OpenShift version ranges.
    pub ocp_indices: Option<Vec<String>>,
}

impl Options {
    /// Whether a suite runs under these options.
    pub fn runs(&self, suite: Suite) -> bool {
        !suite.is_optional() || self.optional.contains(&suite)
    }

    /// Every suite, as `--select-optional all` gives.
    pub fn all() -> Options {
        Options {
            optional: Suite::ALL.into_iter().filter(|s| s.in_all()).collect(),
            ..Options::default()
        }
    }
}

/// The outcome for one bundle.
#[derive(Debug, Clone)]
pub struct BundleReport {
    /// The bundle as the user named it.
    pub path: PathBuf,
    /// Its name (directory name).
    pub name: String,
    /// Findings, sorted by file, line, column and rule.
    pub findings: Vec<Finding>,
    /// Checks of the community suite that did not run, and why.
    pub skipped: Vec<community::Skipped>,
}

impl BundleReport {
    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.level == Level::Error)
    }
}

/// Runs the selected suites over a loaded bundle (the community suite aside: it needs the
/// bundle's directory, see [`validate_report`]).
pub fn validate(b: &Bundle, opts: &Options) -> Vec<Finding> {
    let mut out = b.findings.clone();
    type Check = fn(&Bundle, &Options, &mut Vec<Finding>);
    let suites: [(Suite, Check); 10] = [
        (Suite::Csv, csv::check),
        (Suite::Crd, crd::check),
        (Suite::Bundle, bundle::check),
        (Suite::Operatorhub, operatorhub::check),
        (Suite::GoodPractices, good_practices::check),
        (Suite::DeprecatedApis, deprecated::check),
        (Suite::BundleObjects, objects::check),
        (Suite::OlmV1, olm_v1::check),
        (Suite::Rbac, rbac::check),
        (Suite::CrdExamples, crd_examples::check),
    ];
    for (suite, check) in suites {
        if opts.runs(suite) {
            check(b, opts, &mut out);
        }
    }
    out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    out.dedup();
    out
}

/// Runs the selected suites over a loaded bundle, the community suite included (in the
/// context of the operator directory that holds `b.root`).
pub fn validate_report(b: &Bundle, opts: &Options, path: &Path) -> BundleReport {
    validate_report_in(b, opts, path, &community::Operators::default())
}

/// [`validate_report`] with the operator directories a run has read (see
/// [`community::Operators`]).
pub fn validate_report_in(
    b: &Bundle,
    opts: &Options,
    path: &Path,
    operators: &community::Operators,
) -> BundleReport {
    let mut findings = validate(b, opts);
    let mut skipped = Vec::new();
    if opts.runs(Suite::Community) {
        let c = community::check_bundle_dir(&b.root, opts, operators);
        findings.extend(c.findings);
        findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        findings.dedup();
        skipped = c.skipped;
    }
    BundleReport {
        path: path.to_path_buf(),
        name: b.name.clone(),
        findings,
        skipped,
    }
}

/// Loads and validates one bundle directory.
pub fn validate_dir(dir: &Path, opts: &Options) -> Result<BundleReport> {
    validate_dir_in(dir, opts, &community::Operators::default())
}

/// [`validate_dir`] with the operator directories a run has read.
fn validate_dir_in(
    dir: &Path,
    opts: &Options,
    operators: &community::Operators,
) -> Result<BundleReport> {
    let b = load::load_dir(dir)?;
    Ok(validate_report_in(&b, opts, dir, operators))
}

/// Where a bundle to validate is: a directory, or an image in an OCI layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A bundle directory.
    Dir(PathBuf),
    /// The image tagged `tag` in the OCI image layout `layout`.
    Layout {
        /// The layout directory.
        layout: PathBuf,
        /// The tag (`org.opencontainers.image.ref.name`).
        tag: String,
    },
}

impl Source {
    /// Reads a command-line argument: `oci:DIR:TAG` (skopeo's spelling) or `DIR:TAG` for an
    /// image in an OCI layout, otherwise a bundle directory.
    /// The layout directory keeps every byte of the argument (a name that is not UTF-8 is
    /// not turned into another, missing one).
    pub fn parse(arg: &Path) -> Source {
        use opship_core::paths;
        let explicit = paths::strip_prefix(arg.as_os_str(), "oci:");
        let candidate = explicit.unwrap_or(arg.as_os_str());
        if let Some((dir, tag)) = paths::rsplit_colon(candidate) {
            let dir = PathBuf::from(dir);
            let is_layout = dir.join("oci-layout").is_file();
            if !tag.is_empty()
                && !tag.contains('/')
                && (explicit.is_some() || (is_layout && !arg.exists()))
            {
                return Source::Layout { layout: dir, tag };
            }
        }
        Source::Dir(arg.to_path_buf())
    }
}

/// Loads and validates one bundle from a directory or a layout image.
pub fn validate_source(arg: &Path, opts: &Options) -> Result<BundleReport> {
    validate_source_in(arg, opts, &community::Operators::default())
}

/// [`validate_source`] with the operator directories a run has read.
fn validate_source_in(
    arg: &Path,
    opts: &Options,
    operators: &community::Operators,
) -> Result<BundleReport> {
    match Source::parse(arg) {
        Source::Dir(d) => validate_dir_in(&d, opts, operators),
        Source::Layout { layout, tag } => {
            let b = load::load_layout(&layout, &tag)?;
            Ok(validate_report_in(&b, opts, arg, operators))
        }
    }
}

/// Validates many bundles (directories or layout images, see [`Source::parse`]) in parallel;
/// results keep the order of `paths`.
pub fn validate_dirs(paths: &[PathBuf], opts: &Options) -> Vec<Result<BundleReport>> {
    validate_dirs_with(paths, opts, &|_| {})
}

/// [`validate_dirs`], calling `done` with each path as soon as its bundle is validated (in
/// completion order, from the worker threads): how a front end shows progress.
pub fn validate_dirs_with(
    paths: &[PathBuf],
    opts: &Options,
    done: &(dyn Fn(&Path) + Sync),
) -> Vec<Result<BundleReport>> {
    // Bundles of one operator directory share one read of it (the community suite).
    let operators = if opts.runs(Suite::Community) {
        community::Operators::for_bundles(paths)
    } else {
        community::Operators::default()
    };
    paths
        .par_iter()
        .map(|d| {
            let r = validate_source_in(d, opts, &operators);
            done(d);
            r
        })
        .collect()
}

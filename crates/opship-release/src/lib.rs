//! `opship release` as a library: one version of a project from `opship.yaml` to published
//! artefacts (bundle directory, validation, bundle image, push, signature, catalogs, catalog
//! images, Helm chart) as a [`Plan`] of typed [`Step`]s.
//!
//! Everything deterministic is first staged in a temporary directory (bundle generated,
//! validated and built; chart rendered and packaged), which gives the digests the release will
//! produce before anything in the project or a registry changes. Each step is then checked
//! against the project and the registry (read-only) and is either recorded as done or run by
//! calling the stage libraries (opship-core, opship-validate, opship-oci, opship-catalog,
//! opship-chart) directly. The catalog is written only after the bundle image is in place and
//! signed, so a release that fails earlier leaves every catalog untouched. Progress is reported
//! through a callback of [`Event`]s; the result is a typed [`Summary`].

mod check;
mod error;
mod event;
mod plan;
mod provenance;
mod run;
mod sign;
mod stage;
mod step;
mod summary;

use std::path::PathBuf;

pub use error::{Error, Result};
pub use event::Event;
pub use plan::{CatalogTarget, KeyPlan, KeylessPlan, Plan};
pub use step::{Kind, Location, State, Step, Subject};
pub use summary::{
    BundleSummary, CatalogImage, CatalogSummary, ChartSummary, KeylessSummary, SignatureSummary,
    Summary,
};

use opship_core::config::Project;
use zeroize::Zeroizing;

/// Pins the operator images of a generated bundle to digests (`useImageDigests`): given by the
/// caller, which owns the network half of pinning.
pub type Pinner<'a> =
    &'a dyn Fn(&mut opship_core::bundle::Bundle) -> std::result::Result<(), String>;

/// What to release and how.
pub struct Options<'a> {
    /// The version (strict semver, no leading `v`).
    pub version: String,
    /// `REGISTRY[/NAMESPACE]` to push to (over the config's `registry:`), `None` for the config's.
    pub registry: Option<String>,
    /// The signing key (over the config's `signing.key`).
    pub key: Option<PathBuf>,
    /// The key password when there is no password file (`COSIGN_PASSWORD`).
    pub password: Option<Zeroizing<String>>,
    /// Plain HTTP to the registry.
    pub insecure: bool,
    /// Check and plan only: write nothing.
    pub dry_run: bool,
    /// Registry client settings (timeouts, retries, deadline).
    pub registry_options: opship_oci::Options,
    /// `SOURCE_DATE_EPOCH`: file times, `createdAt`, chart annotations.
    pub source_date_epoch: Option<u64>,
    /// Pins image references to digests when the config asks for it.
    pub pin_images: Option<Pinner<'a>>,
    /// Keyless signing, used when no key is configured (no `key`, no `signing:`), the release
    /// pushes to a registry and an identity token is available.
    pub keyless: Keyless,
}

/// How the release signs keylessly (see [`Options::keyless`]).
#[derive(Debug, Clone, Default)]
pub struct Keyless {
    /// The token sources, the services and the time limit.
    pub options: opship_oci::cosign::keyless::Options,
    /// The signature format; `None`: the image's existing one, else cosign 3's bundles.
    pub format: Option<opship_oci::cosign::signing::Format>,
    /// `--trusted-root`: what the release's checks verify keyless signatures against (default:
    /// `trusted_root.json` beside the signing config, else the public-good root).
    pub trusted_root: Option<std::path::PathBuf>,
}

/// How a release ended when it did not fail.
#[derive(Debug)]
pub enum Outcome {
    /// Released (or, in a dry run, planned).
    Released(Box<Summary>),
    /// The bundle has validation errors; nothing was written.
    BundleInvalid {
        /// The validation report, naming the bundle directory.
        report: opship_validate::BundleReport,
    },
    /// A catalog does not validate after the bundle was added to it.
    CatalogInvalid {
        /// The catalog directory.
        dir: PathBuf,
        /// The catalog validation report.
        report: opship_catalog::validate::Report,
    },
}

/// Releases `options.version` of `project`, reporting each step through `on_event`.
pub fn release(
    project: Project,
    options: Options<'_>,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> Result<Outcome> {
    let plan = Plan::new(project, &options)?;
    run::release(plan, options, on_event)
}

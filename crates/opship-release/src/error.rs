//! The release's one error type: what stopped it, with the step and its command line when a
//! step failed.

/// Result of the release library.
pub type Result<T> = std::result::Result<T, Error>;

/// Why a release stopped.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    /// The config or the options do not make a release (a missing key, a bad registry).
    #[error("{0}")]
    Config(String),
    /// Staging (generate, validate, build, chart render/package in a temporary directory)
    /// failed; nothing was written.
    #[error("staging the release failed at {what}: {message}; nothing was released")]
    Staging {
        /// The stage (`generate`, `build`, …).
        what: String,
        /// The library's error.
        message: String,
    },
    /// What the project or the registry holds contradicts this release (a tag with another
    /// digest, a catalog listing the version with another image).
    #[error("{0}")]
    Conflict(String),
    /// A read-only check failed (a registry that does not answer).
    #[error("checking step `{id}` failed: {message}")]
    Check {
        /// The step.
        id: String,
        /// What went wrong.
        message: String,
    },
    /// A step failed while running.
    #[error(
        "release {version} stopped at step `{id}` ({description}): `{command}` failed: \
         {message}. Run the same release again once the cause is fixed: finished steps are \
         recognised and skipped."
    )]
    Step {
        /// The version released.
        version: String,
        /// The step.
        id: String,
        /// What it does.
        description: String,
        /// The equivalent `opship` command line.
        command: String,
        /// The library's error.
        message: String,
    },
    /// Reading or writing a local file failed outside a step.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

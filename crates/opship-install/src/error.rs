//! The one error type of opship-install: why a bundle cannot be rendered into what OLM v1
//! installs.

use std::path::PathBuf;

use opship_core::yaml::Origin;

use crate::check::Problem;

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that stops a render. Each variant names the file (and line where there is one).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    /// Reading the bundle or a YAML file failed (syntax, position included).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Core(#[from] opship_core::Error),

    /// The bundle cannot be read as registry+v1 (no CSV, two CSVs, ...).
    #[error("{}: {message}", opship_core::paths::show(path))]
    #[diagnostic(code(opship::install::bundle))]
    Bundle {
        /// The bundle directory or file.
        path: PathBuf,
        /// What is missing or wrong.
        message: String,
    },

    /// OLM v1's registry+v1 validators refuse the bundle: every problem, not just the first.
    #[error(
        "{}: OLM v1 cannot install this bundle:\n{}",
        opship_core::paths::show(path),
        list(problems)
    )]
    #[diagnostic(
        code(opship::install::refused),
        help(
            "`opship validate bundle --select-optional olm-v1` reports the same checks as findings"
        )
    )]
    Refused {
        /// The bundle directory.
        path: PathBuf,
        /// What the validators found.
        problems: Vec<Problem>,
    },

    /// The watch namespace asks for an install mode the CSV does not support.
    #[error("{csv}: {message}")]
    #[diagnostic(code(opship::install::install_mode))]
    InstallMode {
        /// The CSV's name.
        csv: String,
        /// The mode asked for and the supported ones.
        message: String,
    },

    /// A namespace or option given on the command line is not usable.
    #[error("{0}")]
    #[diagnostic(code(opship::install::invalid))]
    Invalid(String),

    /// The inline config (`watchNamespace`, `deploymentConfig`) is not what OLM v1 accepts.
    #[error("{origin}: {message}")]
    #[diagnostic(code(opship::install::config))]
    Config {
        /// The file and line of the bad key or value.
        origin: Origin,
        /// What is wrong.
        message: String,
    },
}

fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  {}: [{}] {}", p.origin, p.rule, p.message))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Error {
    /// Shorthand for [`Error::Bundle`].
    pub fn bundle(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Bundle {
            path: path.into(),
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Config`].
    pub fn config(origin: Origin, message: impl Into<String>) -> Self {
        Error::Config {
            origin,
            message: message.into(),
        }
    }
}

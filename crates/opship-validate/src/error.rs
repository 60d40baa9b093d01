//! The one error type of opship-validate: why validation could not run at all (a finding is
//! not an error; it is data in the report).

use std::path::PathBuf;

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What stops validation of a bundle before any rule runs.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    /// The path could not be read.
    #[error("{}: {source}", opship_core::paths::show(path))]
    #[diagnostic(code(opship::validate::io))]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's answer.
        source: std::io::Error,
    },

    /// The path is not something a bundle can be loaded from.
    #[error("{}: {reason}", opship_core::paths::show(path))]
    #[diagnostic(code(opship::validate::not_a_bundle))]
    NotABundle {
        /// What the user named.
        path: PathBuf,
        /// Why it is not a bundle.
        reason: String,
    },

    /// A validation option is wrong (unknown suite, bad Kubernetes version, unreadable
    /// categories file).
    #[error("{0}")]
    #[diagnostic(code(opship::validate::options))]
    Options(String),
}

impl Error {
    /// Shorthand for [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

//! The one error type of opship-catalog: why a catalog operation could not run (validation
//! problems are findings, not errors).

use std::path::PathBuf;

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What stops a catalog operation.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    /// A file or directory could not be read or written.
    #[error("{}: {source}", opship_core::paths::show(path))]
    #[diagnostic(code(opship::catalog::io))]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's answer.
        source: std::io::Error,
    },

    /// A catalog file is not valid YAML or JSON, or a blob has the wrong shape.
    #[error("{location}: {message}")]
    #[diagnostic(code(opship::catalog::parse))]
    Parse {
        /// `file`, `file:line:col` or `file: document N`.
        location: String,
        /// What is wrong.
        message: String,
    },

    /// A bundle could not be rendered.
    #[error("render {}: {message}", opship_core::paths::show(path))]
    #[diagnostic(code(opship::catalog::render))]
    Render {
        /// The bundle directory or image.
        path: PathBuf,
        /// Why.
        message: String,
    },

    /// The catalog is invalid: the whole error tree as opm prints it.
    #[error("{0}")]
    #[diagnostic(code(opship::catalog::invalid))]
    Invalid(String),

    /// An operation was asked for something it cannot do (bad option, a version already
    /// present, a template that does not fit).
    #[error("{0}")]
    #[diagnostic(code(opship::catalog::usage))]
    Usage(String),

    /// Building the catalog image failed.
    #[error("{0}")]
    #[diagnostic(code(opship::catalog::image))]
    Image(String),
}

impl Error {
    /// Shorthand for [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Shorthand for [`Error::Parse`].
    pub fn parse(location: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Parse {
            location: location.into(),
            message: message.into(),
        }
    }
}

impl From<opship_core::error::Error> for Error {
    fn from(e: opship_core::error::Error) -> Self {
        match e {
            opship_core::error::Error::Io { path, source } => Error::Io { path, source },
            other => Error::parse(String::new(), other.to_string()).strip_empty_location(),
        }
    }
}

impl Error {
    fn strip_empty_location(self) -> Self {
        match self {
            Error::Parse { location, message } if location.is_empty() => Error::Usage(message),
            other => other,
        }
    }
}

//! The one error type of opship-core: why the tool could not do its job (as opposed to a
//! validation finding, which is data).

use std::path::PathBuf;

use crate::yaml::Origin;

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that stops a core operation. Each variant names the file (and line, when the
/// problem sits in YAML) so the user can go straight to it.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    /// The YAML could not be parsed (syntax, duplicate key, budget exceeded, wrong type).
    #[error("{origin}: {message}")]
    #[diagnostic(code(opship::yaml))]
    Yaml {
        /// Where.
        origin: Origin,
        /// What the parser said.
        message: String,
    },

    /// A Kubernetes object or the project config is well-formed YAML but not acceptable.
    #[error("{origin}: {message}")]
    #[diagnostic(code(opship::invalid))]
    Invalid {
        /// Where.
        origin: Origin,
        /// What is wrong and, where possible, what to do.
        message: String,
    },

    /// A problem with the inputs as a whole rather than with one place in a file.
    #[error("{0}")]
    #[diagnostic(code(opship::input))]
    Input(String),

    /// Reading or writing a file failed.
    #[error("{}: {source}", crate::paths::show(path))]
    #[diagnostic(code(opship::io))]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's answer.
        source: std::io::Error,
    },

    /// An archive (an image layer) was refused: an entry would escape the target, is of a kind
    /// that is never unpacked (device, symlink), or a size or count budget was exceeded.
    #[error("{}: {message}", crate::paths::show(path))]
    #[diagnostic(code(opship::unsafe_archive))]
    Unsafe {
        /// The entry as the archive names it (or `(layer)` for the archive as a whole).
        path: PathBuf,
        /// Why it was refused.
        message: String,
    },

    /// A bug in opship rather than in the input.
    #[error("internal error: {0}")]
    #[diagnostic(code(opship::internal))]
    Internal(String),
}

impl Error {
    /// Shorthand for [`Error::Invalid`].
    pub fn invalid(origin: Origin, message: impl Into<String>) -> Self {
        Error::Invalid {
            origin,
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

//! The one error type of opship-chart: why a chart could not be rendered, packaged or indexed.

use std::path::PathBuf;

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that stops a chart operation. Each variant names the file (and the line, for
/// templates) so the user can go straight to it.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    /// Reading the bundle or a YAML file failed (syntax, position included).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Core(#[from] opship_core::Error),

    /// OLM v1's rules refuse the bundle or its options.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Install(#[from] opship_install::Error),

    /// The bundle cannot be turned into a chart (no CSV, no deployment, ...).
    #[error("{}: {message}", opship_core::paths::show(path))]
    #[diagnostic(code(opship::chart::bundle))]
    Bundle {
        /// The bundle directory or file.
        path: PathBuf,
        /// What is missing or wrong.
        message: String,
    },

    /// A chart template is broken: Handlebars syntax, a variable that does not exist (strict
    /// mode), or a Helm expression that came out mangled.
    #[error("{template}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    #[diagnostic(
        code(opship::chart::template),
        help(
            "Helm expressions in templates are written `\\{{{{ ... }}}}` (or inside a `{{{{{{{{raw}}}}}}}}` block); see docs/chart.md"
        )
    )]
    Template {
        /// The template file (under the templates directory, or the embedded default's name).
        template: String,
        /// 1-based line in the template (or in its output, for checks on rendered text).
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },

    /// A chart directory or archive is not what opship can package, index or push.
    #[error("{}: {message}", opship_core::paths::show(path))]
    #[diagnostic(code(opship::chart::invalid))]
    Invalid {
        /// The chart directory, archive or index.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// Reading or writing a file failed.
    #[error("{}: {source}", opship_core::paths::show(path))]
    #[diagnostic(code(opship::chart::io))]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's answer.
        source: std::io::Error,
    },
}

impl Error {
    /// Shorthand for [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Shorthand for [`Error::Invalid`].
    pub fn invalid(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Bundle`].
    pub fn bundle(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Bundle {
            path: path.into(),
            message: message.into(),
        }
    }
}

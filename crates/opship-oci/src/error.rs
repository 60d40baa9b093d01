//! The crate's error type.

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong talking to a registry.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum Error {
    /// The registry answered with an error status.
    #[error("registry {registry} answered {status}: {answer}")]
    #[diagnostic(code(opship::registry::answer))]
    Registry {
        /// Registry host.
        registry: String,
        /// HTTP status (or a short description when there is none).
        status: String,
        /// The error JSON code and message, or the body.
        answer: String,
    },
    /// Credentials were refused.
    #[error("registry {registry} refused the credentials{user}: {answer}")]
    #[diagnostic(
        code(opship::registry::unauthorized),
        help(
            "check the user name and password (`opship login`), or the credentials in the Docker config"
        )
    )]
    Unauthorized {
        /// Registry host.
        registry: String,
        /// ` of user X` or empty.
        user: String,
        /// What the registry said.
        answer: String,
    },
    /// The registry could not be reached (after retries).
    #[error("cannot reach registry {registry}: {message}")]
    #[diagnostic(code(opship::registry::unreachable))]
    Unreachable {
        /// Registry host.
        registry: String,
        /// Transport error.
        message: String,
    },
    /// The server answered, but not as an OCI registry does: an error page without the
    /// `Docker-Distribution-API-Version` header and without a distribution error body (a plain
    /// web server, a proxy's login page, a wrong port).
    #[error(
        "{registry} does not look like an OCI registry: it answered {status} to {request} {details}: {answer}"
    )]
    #[diagnostic(
        code(opship::registry::not_a_registry),
        help("check the registry host and port (and the path of the reference)")
    )]
    NotRegistry {
        /// Registry host.
        registry: String,
        /// HTTP status.
        status: String,
        /// `GET <url>`.
        request: String,
        /// What is missing (`(no Docker-Distribution-API-Version header, a text/html answer)`).
        details: String,
        /// The first few hundred bytes of the answer.
        answer: String,
    },
    /// The registry stopped sending an answer half-way (after the retries).
    #[error("registry {registry} stopped sending {what} after {received} bytes: {reason}")]
    #[diagnostic(code(opship::registry::interrupted))]
    Interrupted {
        /// Registry host.
        registry: String,
        /// Which object (`blob sha256:… of team/bundle`).
        what: String,
        /// Bytes received before it stopped (`1024 of 4096`).
        received: String,
        /// `no data for 60 s (--timeout)`, or the transport error.
        reason: String,
    },
    /// The command's deadline passed.
    #[error(
        "registry {registry}: gave up after the deadline of {seconds} s (--deadline) while {doing}"
    )]
    #[diagnostic(
        code(opship::registry::deadline),
        help(
            "raise --deadline (OPSHIP_REGISTRY_DEADLINE) for big images on slow links, or check the registry"
        )
    )]
    Deadline {
        /// Registry host.
        registry: String,
        /// The deadline.
        seconds: u64,
        /// What was going on (`reading blob sha256:… of team/bundle (1024 of 4096 bytes)`).
        doing: String,
    },
    /// The registry sent more than the descriptor or the budget allows.
    #[error("registry {registry} sent more than {limit} for {what}; refused")]
    #[diagnostic(code(opship::registry::too_large))]
    TooLarge {
        /// Registry host.
        registry: String,
        /// Which object.
        what: String,
        /// `the 1234 bytes its descriptor gives`, `4194304 bytes (the manifest limit)`.
        limit: String,
    },
    /// The registry sent content whose digest or size is not the one asked for.
    #[error("registry {registry} sent wrong content for {what}: expected {expected}, got {actual}")]
    #[diagnostic(code(opship::registry::digest))]
    DigestMismatch {
        /// Registry host.
        registry: String,
        /// Which object: `manifest sha256:… of team/bundle` or `blob sha256:… of team/bundle`.
        what: String,
        /// Expected digest/size.
        expected: String,
        /// Actual digest/size.
        actual: String,
    },
    /// Bad user input (reference, tag, credentials file).
    #[error("{0}")]
    #[diagnostic(code(opship::registry::input))]
    Input(String),
    /// A local file problem.
    #[error("{path}: {source}")]
    #[diagnostic(code(opship::registry::io))]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// An error from the OCI layout code.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Layout(#[from] opship_core::Error),
    /// A key file that cannot be used: unreadable, malformed, unsupported, or the password
    /// does not open it. The message never contains the password or key material.
    #[error("{path}: {message}")]
    #[diagnostic(code(opship::cosign::key))]
    Key {
        /// The key file.
        path: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A signature that cannot be made or stored (bad annotation, unusable existing signature
    /// manifest).
    #[error("{0}")]
    #[diagnostic(code(opship::cosign::signature))]
    Signature(String),
    /// Keyless signing: the identity token, Fulcio, Rekor or the timestamp authority (their
    /// answer quoted).
    #[error("{0}")]
    #[diagnostic(code(opship::keyless))]
    Keyless(String),
}

impl Error {
    /// Shorthand for [`Error::Io`].
    pub fn io(path: impl Into<std::path::PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

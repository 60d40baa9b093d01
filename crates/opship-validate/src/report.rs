//! TODO(owner): rendering reports as text, JSON, SARIF 2.1.0 and GitHub workflow annotations.

use crate::{BundleReport, Result};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human-readable text, grouped per bundle.
    Human,
    /// JSON with a stable, documented schema.
    Json,
    /// SARIF 2.1.0 for GitHub code scanning.
    Sarif,
    /// GitHub Actions workflow commands (`::error file=...`).
    Github,
}

/// How to render.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// Use ANSI colours (only the human format; the caller decides from TTY and NO_COLOR).
    pub color: bool,
}

/// Renders the outcome of validating several bundles; a bundle that could not be validated
/// at all is an `Err` in `results`.
pub fn render(results: &[Result<BundleReport>], format: Format, opts: &RenderOptions) -> String {
    let _ = (results, format, opts);
    String::new()
}

//! TODO(owner): bundle rules.

use crate::Options;
use crate::load::Bundle;
use crate::rule::{Finding, Rule};

/// The rules of this suite.
pub const RULES: &[&Rule] = &[];

/// Runs the suite.
pub(crate) fn check(_b: &Bundle, _opts: &Options, _out: &mut Vec<Finding>) {}

/// Bundles whose files gzip to more than this fail the size rule (1 MiB, as in the reference).
pub const SIZE_LIMIT: u64 = 1024 * 1024;

//! TODO(owner): good_practices rules.

use crate::Options;
use crate::load::Bundle;
use crate::rule::{Finding, Rule};

/// The rules of this suite.
pub const RULES: &[&Rule] = &[];

/// Runs the suite.
pub(crate) fn check(_b: &Bundle, _opts: &Options, _out: &mut Vec<Finding>) {}

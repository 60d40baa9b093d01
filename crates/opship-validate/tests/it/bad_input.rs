//! Bad input never panics: every hostile or broken file gives a finding or an error naming it.

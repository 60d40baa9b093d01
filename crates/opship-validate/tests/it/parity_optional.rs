//! Parity of the optional suites with operator-framework/api over the corpus (expected/api-optional.jsonl).

//! Parity of the default suite with operator-framework/api over the corpus (expected/api-default.jsonl).

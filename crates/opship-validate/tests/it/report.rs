//! Report formats: text, JSON, SARIF 2.1.0 (checked against its schema) and GitHub annotations.

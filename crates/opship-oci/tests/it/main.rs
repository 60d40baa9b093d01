//! Registry integration tests.

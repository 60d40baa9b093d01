//! opship-only suites (olm-v1, rbac, crd-examples) on real corpus bundles.

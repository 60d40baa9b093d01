//! Packaging and indexing against Helm's own: the same files as `helm package`, the same
//! bytes on every run, and an index.yaml that agrees with `repo_index_generate`.

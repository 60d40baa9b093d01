//! TODO(owner): rendering reports.

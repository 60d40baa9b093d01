//! opship's file-based catalogs (FBC): the model, loading and writing exactly as opm does,
//! rendering bundles into `olm.bundle` blobs, validation with opm's rules and more, adding
//! releases to channels, upgrade graphs, templates and catalog images.

pub mod add;
pub mod build;
pub mod csvmeta;
pub mod error;
/// Go's encoding/json text, shared with the rest of opship (`opship_core::gojson`).
pub use opship_core::gojson;
pub mod gosort;
pub mod graph;
pub mod load;
pub mod model;
pub mod reference;
pub mod render;
pub mod template;
pub mod validate;
pub mod write;

pub use error::{Error, Result};
pub use model::Catalog;

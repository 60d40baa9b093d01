//! opship-core: the synchronous, offline half of opship. YAML with positions, the project
//! config, the Kubernetes manifest model and OLM registry+v1 bundle generation. Nothing here
//! touches the network, so all of it is tested without servers.

pub mod bundle;
pub mod child;
pub mod cleanup;
pub mod config;
pub mod error;
pub mod fsutil;
pub mod gojson;
pub mod image;
pub mod input;
pub mod kustomize;
pub mod make;
pub mod manifest;
pub mod naming;
pub mod operator_sdk;
pub mod output;
pub mod paths;
pub mod semver_range;
pub mod shell;
pub mod yaml;
mod yaml_scan;
mod yaml_tree;

pub use error::{Error, Result};

//! opship-install: the objects OLM v1 installs for a registry+v1 bundle. operator-controller's
//! registry+v1 renderer made OLM's rules explicit: install modes decide where RBAC goes, the
//! pod carries `olm.targetNamespaces`, webhooks get Services and certificates, a deployment
//! config changes every deployment. This crate owns those rules: `opship manifests` writes the
//! result, the Helm chart is made from it, and the `olm-v1` validation suite reports its
//! checks ([`check`]). Synchronous and offline.

pub mod bundle;
pub mod check;
pub mod config;
pub mod error;
mod generate;
pub mod name;

use serde_json::Value;

pub use bundle::{Bundle, load};
pub use check::{Problem, check as check_bundle};
pub use config::{CertProvider, DeploymentConfig, InlineConfig, Options};
pub use error::{Error, Result};
pub use generate::{
    apply_deployment_config, cert_name, check_install_mode, default_watch_namespace, generate,
    install_mode, render, resolve_watch_namespace, service_name, sort,
};

/// The file name of the `index`-th object in a directory of manifests: `NN_<kind>_<name>.yaml`
/// (kind in lower case), as operator-controller's regression data names them.
pub fn file_name(index: usize, object: &Value) -> String {
    format!(
        "{index:02}_{}_{}.yaml",
        check::str_of(&object["kind"]).to_ascii_lowercase(),
        check::str_of(&object["metadata"]["name"])
    )
}

/// Every object as `(file name, YAML)`, in order.
pub fn files(objects: &[Value]) -> Result<Vec<(String, String)>> {
    objects
        .iter()
        .enumerate()
        .map(|(i, o)| Ok((file_name(i, o), opship_core::yaml::to_string(o)?)))
        .collect()
}

/// Every object in one YAML stream, documents separated by `---`.
pub fn stream(objects: &[Value]) -> Result<String> {
    let mut out = String::new();
    for o in objects {
        out.push_str("---\n");
        out.push_str(&opship_core::yaml::to_string(o)?);
    }
    Ok(out)
}

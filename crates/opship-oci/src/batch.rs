//! Pushing every image of an OCI layout to one registry namespace at once: which repository
//! and tag each layout tag goes to, and the concurrent push over one client (one connection
//! pool), several images at a time.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::Path;

use futures_util::StreamExt as _;
use opship_core::image::layout::Layout;
use opship_core::image::oci::{Digest, ImageConfig, Manifest, annotation};

use crate::error::{Error, Result};
use crate::registry::{PushReport, Reference, Registry, parse_reference};

/// The label that names an OLM bundle's package.
pub const PACKAGE_LABEL: &str = "operators.operatorframework.io.bundle.package.v1";

/// One image of a batch: where it comes from and where it goes.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The tag in the layout (`org.opencontainers.image.ref.name`).
    pub tag: String,
    /// The manifest digest in the layout.
    pub digest: Digest,
    /// The destination, `NAMESPACE/REPO:TAG`.
    pub destination: String,
    /// The destination, parsed.
    pub target: Reference,
}

/// Where the layout tag `ref_name` goes under `namespace` (`REGISTRY[/PATH]`):
///
/// - `NAME:TAG` (how `opship build` names clashing bundles, `<package>-bundle:<version>`, or
///   any full reference) → `NAMESPACE/<last path component of NAME>:TAG`;
/// - a plain `TAG` (`0.3.0`) → `NAMESPACE/<package>-bundle:TAG`, the package from the image's
///   bundle label (`operators.operatorframework.io.bundle.package.v1`).
pub fn destination(ref_name: &str, package: Option<&str>, namespace: &str) -> Result<String> {
    if ref_name.contains('@') {
        return Err(Error::Input(format!(
            "layout tag `{ref_name}` names a digest, not a tag; push it with `opship push LAYOUT:TAG REF`"
        )));
    }
    let (repo, tag) = match ref_name.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') && !name.is_empty() => {
            let last = name.rsplit('/').next().unwrap_or(name);
            (last.to_owned(), tag)
        }
        _ if ref_name.contains('/') => {
            return Err(Error::Input(format!(
                "layout tag `{ref_name}` has no `:TAG`; push it with `opship push LAYOUT:TAG REF`"
            )));
        }
        _ => {
            let package = package.ok_or_else(|| {
                Error::Input(format!(
                    "layout tag `{ref_name}`: the image has no `{PACKAGE_LABEL}` label to name its \
                     repository; push it with `opship push LAYOUT:{ref_name} REF`"
                ))
            })?;
            (format!("{package}-bundle"), ref_name)
        }
    };
    Ok(format!("{}/{repo}:{tag}", namespace.trim_end_matches('/')))
}

/// Checks that `namespace` is `REGISTRY` or `REGISTRY/PATH`, without tag or digest.
pub fn check_namespace(namespace: &str) -> Result<()> {
    let last = namespace
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("");
    let bad = namespace.is_empty()
        || namespace.contains('@')
        || (namespace.contains('/') && last.contains(':'));
    if bad {
        return Err(Error::Input(format!(
            "`{namespace}`: with --all-tags the destination is a registry namespace \
             (`REGISTRY[/PATH]`), without tag or digest"
        )));
    }
    Ok(())
}

/// Every tagged image of the layout at `dir` with its destination under `namespace`, in
/// `index.json` order. Two tags that would land on one destination are an error, unless they
/// are the same image (then it is pushed once).
pub fn plan(dir: &Path, namespace: &str) -> Result<Vec<Planned>> {
    check_namespace(namespace)?;
    let layout = Layout::new(dir);
    let index = layout.index()?;
    let mut out: Vec<Planned> = Vec::new();
    let mut seen: BTreeMap<String, (String, Digest)> = BTreeMap::new();
    for desc in &index.manifests {
        let Some(tag) = desc.annotations.get(annotation::REF_NAME) else {
            continue;
        };
        let package = if tag.contains(':') {
            None
        } else {
            package_of(&layout, desc)?
        };
        let destination = destination(tag, package.as_deref(), namespace)?;
        if let Some((other, digest)) = seen.get(&destination) {
            if *digest == desc.digest {
                continue;
            }
            return Err(Error::Input(format!(
                "{}: the tags `{other}` and `{tag}` would both be pushed to {destination}",
                opship_core::paths::show(&dir.join("index.json"))
            )));
        }
        seen.insert(destination.clone(), (tag.clone(), desc.digest.clone()));
        let target = parse_reference(&destination)?;
        out.push(Planned {
            tag: tag.clone(),
            digest: desc.digest.clone(),
            destination,
            target,
        });
    }
    if out.is_empty() {
        return Err(Error::Input(format!(
            "{}: no tagged images",
            opship_core::paths::show(&dir.join("index.json"))
        )));
    }
    Ok(out)
}

/// The bundle package label of the image `desc` points to (of the first image an index lists,
/// for a multi-platform image: its platforms carry the same bundle).
fn package_of(
    layout: &Layout,
    desc: &opship_core::image::oci::Descriptor,
) -> Result<Option<String>> {
    if opship_core::image::oci::is_index_type(&desc.media_type) {
        let first = layout
            .manifest_tree(desc)?
            .into_iter()
            .find(|n| matches!(n.kind, opship_core::image::oci::ManifestKind::Image(_)));
        return match first {
            Some(n) => package_of(layout, &n.descriptor),
            None => Ok(None),
        };
    }
    let manifest_bytes = layout.read_blob(desc)?;
    let manifest: Manifest = serde_json::from_slice(&manifest_bytes).map_err(|e| {
        Error::Input(format!(
            "{}: not an image manifest: {e}",
            opship_core::paths::show(&layout.blob_path(&desc.digest))
        ))
    })?;
    let config_bytes = layout.read_blob(&manifest.config)?;
    let config: ImageConfig = serde_json::from_slice(&config_bytes).map_err(|e| {
        Error::Input(format!(
            "{}: not an image config: {e}",
            opship_core::paths::show(&layout.blob_path(&manifest.config.digest))
        ))
    })?;
    Ok(config.config.labels.get(PACKAGE_LABEL).cloned())
}

impl Registry {
    /// Pushes the planned images from the layout at `dir`, up to `jobs` at a time, all over
    /// this one client. `each` sees every result in plan order as soon as it (and those
    /// before it) are done; returning `Break` drops the pushes under way and starts no more
    /// (as with any interrupted push, no tag then points at an incomplete image).
    pub async fn push_all(
        &self,
        dir: &Path,
        plan: &[Planned],
        jobs: usize,
        from: Option<&Reference>,
        mut each: impl FnMut(&Planned, Result<PushReport>) -> ControlFlow<()>,
    ) {
        let mut results = futures_util::stream::iter(plan.iter().map(|p| async move {
            (p, self.push_from_layout(dir, &p.tag, &p.target, from).await)
        }))
        .buffered(jobs.max(1));
        while let Some((p, result)) = results.next().await {
            if each(p, result).is_break() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations() {
        let ns = "127.0.0.1:5000/operators";
        assert_eq!(
            destination("0.3.0", Some("memcached-operator"), ns).unwrap(),
            "127.0.0.1:5000/operators/memcached-operator-bundle:0.3.0"
        );
        assert_eq!(
            destination("etcd-bundle:1.0.0", None, ns).unwrap(),
            "127.0.0.1:5000/operators/etcd-bundle:1.0.0"
        );
        assert_eq!(
            destination("quay.io/example/etcd:v1", None, "quay.io/mirror/").unwrap(),
            "quay.io/mirror/etcd:v1"
        );
        assert_eq!(
            destination("v2", Some("x"), "localhost:5000").unwrap(),
            "localhost:5000/x-bundle:v2"
        );
        assert!(destination("0.3.0", None, ns).is_err());
        assert!(destination("quay.io/x/y", None, ns).is_err());
        assert!(destination("quay.io/x/y@sha256:00", None, ns).is_err());
    }

    #[test]
    fn namespaces() {
        assert!(check_namespace("127.0.0.1:5000").is_ok());
        assert!(check_namespace("quay.io/example").is_ok());
        assert!(check_namespace("quay.io/example/bundle:v1").is_err());
        assert!(check_namespace("quay.io/example@sha256:00").is_err());
        assert!(check_namespace("").is_err());
    }
}

//! Pinning a generated bundle's images to digests (`generate bundle --use-image-digests`): the
//! image references of the CSV and where each is used, and their rewriting from digests that
//! the caller resolved. Resolving is network work and stays out of this crate: the CLI asks the
//! registries (opship-oci) and hands the answers in, so generation stays offline and testable.
//!
//! Pinned form: `repository@sha256:…`, the tag dropped, as operator-sdk writes it (its resolver,
//! operator-manifest-tools, returns `name@digest`). A reference that already carries a digest
//! is left exactly as written and never looked up.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use super::Bundle;
use crate::error::{Error, Result};
use crate::image::oci::Digest;
use crate::yaml;

/// Whether `image` names its manifest by digest (`repo@sha256:…` or `repo:tag@sha256:…`).
pub fn is_pinned(image: &str) -> bool {
    image.contains('@')
}

/// The repository of `image` as written: without `:tag` and `@digest`. A `:` before the last
/// `/` belongs to the registry's port (`127.0.0.1:5000/op:v1` → `127.0.0.1:5000/op`).
pub fn repository(image: &str) -> &str {
    let named = image.split_once('@').map_or(image, |(r, _)| r);
    let name_start = named.rfind('/').map_or(0, |i| i + 1);
    match named[name_start..].rfind(':') {
        Some(i) => &named[..name_start + i],
        None => named,
    }
}

/// `image` pinned to `digest`: `repository@digest`. A reference that has a digest already is
/// returned unchanged.
pub fn pinned(image: &str, digest: &Digest) -> String {
    if is_pinned(image) {
        image.to_owned()
    } else {
        format!("{}@{digest}", repository(image))
    }
}

/// An image reference of the CSV and every place that uses it, e.g.
/// `image of container manager in deployment memcached-operator-controller-manager`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUse {
    /// The reference as written.
    pub image: String,
    /// Where it is used, in CSV order.
    pub places: Vec<String>,
}

/// Every image field of a CSV: JSON pointer and a description of the place.
fn image_fields(csv: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if csv
        .pointer("/metadata/annotations/containerImage")
        .is_some_and(Value::is_string)
    {
        out.push((
            "/metadata/annotations/containerImage".to_owned(),
            "annotation containerImage".to_owned(),
        ));
    }
    let deployments = csv
        .pointer("/spec/install/spec/deployments")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, d) in deployments.iter().enumerate() {
        let dname = d["name"].as_str().unwrap_or_default();
        for (list, what) in [
            ("initContainers", "init container"),
            ("containers", "container"),
        ] {
            let Some(cs) = d["spec"]["template"]["spec"][list].as_array() else {
                continue;
            };
            for (j, c) in cs.iter().enumerate() {
                let cname = c["name"].as_str().unwrap_or_default();
                let cptr =
                    format!("/spec/install/spec/deployments/{i}/spec/template/spec/{list}/{j}");
                if c["image"].is_string() {
                    out.push((
                        format!("{cptr}/image"),
                        format!("image of {what} {cname} in deployment {dname}"),
                    ));
                }
                let Some(envs) = c["env"].as_array() else {
                    continue;
                };
                for (k, e) in envs.iter().enumerate() {
                    let name = e["name"].as_str().unwrap_or_default();
                    if name.starts_with("RELATED_IMAGE_") && e["value"].is_string() {
                        out.push((
                            format!("{cptr}/env/{k}/value"),
                            format!("env {name} of {what} {cname} in deployment {dname}"),
                        ));
                    }
                }
            }
        }
    }
    let related = csv
        .pointer("/spec/relatedImages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, r) in related.iter().enumerate() {
        if r["image"].is_string() {
            out.push((
                format!("/spec/relatedImages/{i}/image"),
                format!(
                    "relatedImages entry {}",
                    r["name"].as_str().unwrap_or_default()
                ),
            ));
        }
    }
    out
}

impl Bundle {
    /// The CSV's image references (install-strategy containers and init containers,
    /// `RELATED_IMAGE_*` env values, `relatedImages`, the `containerImage` annotation), each
    /// once with every place that uses it, sorted by reference. Empty references are skipped.
    pub fn image_uses(&self) -> Vec<ImageUse> {
        let mut by_image: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (ptr, place) in image_fields(&self.csv) {
            if let Some(image) = self.csv.pointer(&ptr).and_then(Value::as_str)
                && !image.is_empty()
            {
                by_image.entry(image.to_owned()).or_default().push(place);
            }
        }
        by_image
            .into_iter()
            .map(|(image, places)| ImageUse { image, places })
            .collect()
    }

    /// Rewrites every image reference given by tag to `repository@digest`, with the digest
    /// `digests` has for it; references with a digest stay as they are. Two `relatedImages`
    /// entries that now name the same image are kept once (the first, in name order), as
    /// generation does for identical references. The CSV file is written again. Returns how
    /// many references were rewritten. A tag reference missing from `digests` is an error.
    pub fn pin_images(&mut self, digests: &BTreeMap<String, Digest>) -> Result<usize> {
        let mut n = 0;
        for (ptr, place) in image_fields(&self.csv) {
            let Some(slot) = self.csv.pointer_mut(&ptr) else {
                continue;
            };
            let Some(image) = slot.as_str().filter(|s| !s.is_empty() && !is_pinned(s)) else {
                continue;
            };
            let digest = digests.get(image).ok_or_else(|| {
                Error::Input(format!(
                    "no digest was resolved for image `{image}` ({place})"
                ))
            })?;
            *slot = Value::String(pinned(image, digest));
            n += 1;
        }
        if let Some(related) = self
            .csv
            .pointer_mut("/spec/relatedImages")
            .and_then(Value::as_array_mut)
        {
            let mut seen = HashSet::new();
            related.retain(|r| match r["image"].as_str() {
                Some(image) => seen.insert(image.to_owned()),
                None => true,
            });
        }
        let text = yaml::to_string(&self.csv)?;
        self.files.insert(self.csv_file.clone(), text.into_bytes());
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn repository_keeps_the_port_and_drops_tag_and_digest() {
        assert_eq!(repository("quay.io/x/op:v1"), "quay.io/x/op");
        assert_eq!(repository("127.0.0.1:5000/x/op:v1"), "127.0.0.1:5000/x/op");
        assert_eq!(repository("127.0.0.1:5000/x/op"), "127.0.0.1:5000/x/op");
        assert_eq!(repository("memcached:1.6"), "memcached");
        assert_eq!(repository("busybox"), "busybox");
        assert_eq!(repository(&format!("a/b:t@{D}")), "a/b");
        let d = Digest::parse(D).unwrap();
        assert_eq!(
            pinned("localhost:5000/op:v1", &d),
            format!("localhost:5000/op@{D}")
        );
        assert_eq!(pinned("busybox", &d), format!("busybox@{D}"));
        // Already pinned: unchanged, even with a tag.
        let p = format!("a/b:t@{D}");
        assert_eq!(pinned(&p, &Digest::of(b"x")), p);
        assert!(is_pinned(&p) && !is_pinned("a/b:t"));
    }

    const DEP: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: op}
spec:
  template:
    spec:
      initContainers:
      - name: init
        image: busybox
      containers:
      - name: manager
        image: controller
        env:
        - name: RELATED_IMAGE_ONE
          value: quay.io/x/db:1
        - name: RELATED_IMAGE_SAME
          value: quay.io/x/db:latest
        - name: RELATED_IMAGE_PINNED
          value: quay.io/x/p@sha256:0000000000000000000000000000000000000000000000000000000000000001
        - name: OTHER
          value: quay.io/x/not-an-image-var:1
";

    fn bundle() -> Bundle {
        let objects = crate::manifest::parse_objects(DEP, std::path::Path::new("d.yaml")).unwrap();
        let opts = super::super::Options {
            package: "op".into(),
            version: semver::Version::new(1, 0, 0),
            channels: vec![],
            default_channel: None,
            replaces: None,
            skips: vec![],
            skip_range: None,
            created_at: None,
            extra_service_accounts: vec![],
            exclude_kinds: vec![],
            labels: BTreeMap::new(),
            operator_image: Some(("controller".into(), "127.0.0.1:5000/x/op:v1".into())),
            display_name: None,
            csv_annotations: Default::default(),
            extra_manifests: Vec::new(),
            csv_substitutions: Vec::new(),
        };
        let inputs = super::super::Inputs {
            objects,
            base_csv: None,
        };
        super::super::generate(inputs, &opts).unwrap()
    }

    #[test]
    fn uses_list_every_place_and_pinning_rewrites_them() {
        let mut b = bundle();
        let uses = b.image_uses();
        let op = uses
            .iter()
            .find(|u| u.image == "127.0.0.1:5000/x/op:v1")
            .unwrap();
        assert_eq!(
            op.places,
            [
                "annotation containerImage",
                "image of container manager in deployment op",
                "relatedImages entry manager",
            ]
        );
        let images: Vec<&str> = uses.iter().map(|u| u.image.as_str()).collect();
        assert!(
            !images.contains(&"quay.io/x/not-an-image-var:1"),
            "{images:?}"
        );
        assert_eq!(images.len(), 5, "{images:?}");

        // Two tags of one image resolve to the same digest: relatedImages keeps one entry.
        let d1 = Digest::of(b"op");
        let d2 = Digest::of(b"db");
        let d3 = Digest::of(b"busybox");
        let mut digests = BTreeMap::from([
            ("127.0.0.1:5000/x/op:v1".to_owned(), d1.clone()),
            ("quay.io/x/db:1".to_owned(), d2.clone()),
            ("quay.io/x/db:latest".to_owned(), d2.clone()),
        ]);
        let err = b.clone().pin_images(&digests).unwrap_err().to_string();
        assert!(
            err.contains("`busybox` (image of init container init in deployment op)"),
            "{err}"
        );
        digests.insert("busybox".to_owned(), d3.clone());
        assert_eq!(b.pin_images(&digests).unwrap(), 9);
        let related: Vec<(&str, &str)> = b.csv["spec"]["relatedImages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["name"].as_str().unwrap(), e["image"].as_str().unwrap()))
            .collect();
        let (op, db, bb) = (
            format!("127.0.0.1:5000/x/op@{d1}"),
            format!("quay.io/x/db@{d2}"),
            format!("busybox@{d3}"),
        );
        assert_eq!(
            related,
            [
                ("init", bb.as_str()),
                ("manager", op.as_str()),
                ("one", db.as_str()),
                (
                    "pinned",
                    "quay.io/x/p@sha256:0000000000000000000000000000000000000000000000000000000000000001"
                ),
            ]
        );
        let text = String::from_utf8(b.files[&b.csv_file].clone()).unwrap();
        assert!(text.contains(&format!("containerImage: {op}")), "{text}");
        assert!(text.contains(&format!("value: {db}")));
        assert!(text.contains("value: quay.io/x/not-an-image-var:1"));
        assert!(!text.contains("db:latest") && !text.contains("op:v1"));
    }
}

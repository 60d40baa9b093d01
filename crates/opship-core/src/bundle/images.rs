//! Images of a bundle: replacing the manifests' placeholder with the released operator image,
//! and the CSV's `relatedImages`, which disconnected mirrors read to know what to copy.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::manifest::Object;
use crate::yaml::Origin;

const CONTAINER_LISTS: [&str; 2] = ["initContainers", "containers"];

/// Whether `image` is the placeholder `name`, with or without tag or digest.
fn is_placeholder(image: &str, name: &str) -> bool {
    image == name
        || image
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with(':') || rest.starts_with('@'))
}

/// Points every container whose image is `placeholder` at `reference`. Returns how many
/// containers were changed.
pub(crate) fn replace_placeholder(
    deployments: &mut [Object],
    placeholder: &str,
    reference: &str,
) -> usize {
    let mut n = 0;
    for d in deployments {
        for list in CONTAINER_LISTS {
            let ptr = format!("/spec/template/spec/{list}");
            let Some(cs) = d
                .value_mut()
                .pointer_mut(&ptr)
                .and_then(Value::as_array_mut)
            else {
                continue;
            };
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                if c.get("image")
                    .and_then(Value::as_str)
                    .is_some_and(|i| is_placeholder(i, placeholder))
                {
                    c.insert("image".into(), Value::String(reference.to_owned()));
                    n += 1;
                }
            }
        }
    }
    n
}

/// An image the bundle refers to, and where that reference is.
struct Found {
    name: String,
    /// For a container image: the deployment (names are qualified with it on a clash).
    deployment: Option<String>,
    image: String,
    origin: Origin,
    what: String,
}

/// `RELATED_IMAGE_FOO_BAR` → `foo-bar`.
fn env_image_name(env: &str) -> Option<String> {
    env.strip_prefix("RELATED_IMAGE_")
        .filter(|s| !s.is_empty())
        .map(|s| s.to_ascii_lowercase().replace('_', "-"))
}

/// Builds `spec.relatedImages`: the base CSV's entries, then every `RELATED_IMAGE_*` env value
/// and every container and init-container image of the deployments. Entries found in the
/// manifests win over a base entry of the same name (the base is usually from an older
/// release); two different images under one name in the manifests is an error. An image
/// listed under several names is kept once, under the first name. Sorted by name, then image.
pub(crate) fn related_images(base: &[Value], deployments: &[Object]) -> Result<Vec<Value>> {
    let mut found: Vec<Found> = Vec::new();
    for d in deployments {
        let pod_ptr = "/spec/template/spec";
        let pod = &d.value()["spec"]["template"]["spec"];
        for list in CONTAINER_LISTS {
            let Some(cs) = pod[list].as_array() else {
                continue;
            };
            for (i, c) in cs.iter().enumerate() {
                let cname = c["name"].as_str().unwrap_or_default();
                let cptr = format!("{pod_ptr}/{list}/{i}");
                if let Some(image) = c["image"].as_str().filter(|s| !s.is_empty()) {
                    found.push(Found {
                        name: cname.to_owned(),
                        deployment: Some(d.name().to_owned()),
                        image: image.to_owned(),
                        origin: d.origin_of(&format!("{cptr}/image")),
                        what: format!("image of container {cname} in {}", d.describe()),
                    });
                }
                let Some(envs) = c["env"].as_array() else {
                    continue;
                };
                for (j, e) in envs.iter().enumerate() {
                    let Some(name) = e["name"].as_str().and_then(env_image_name) else {
                        continue;
                    };
                    let eptr = format!("{cptr}/env/{j}");
                    let Some(image) = e["value"].as_str().filter(|s| !s.is_empty()) else {
                        return Err(d.error(
                            &eptr,
                            format!(
                                "{} must have a literal `value`: OLM cannot list an image that is only known at run time",
                                e["name"].as_str().unwrap_or_default()
                            ),
                        ));
                    };
                    found.push(Found {
                        name,
                        deployment: None,
                        image: image.to_owned(),
                        origin: d.origin_of(&format!("{eptr}/value")),
                        what: format!(
                            "env {} of container {cname} in {}",
                            e["name"].as_str().unwrap_or_default(),
                            d.describe()
                        ),
                    });
                }
            }
        }
    }

    // Every image goes into relatedImages, where rule BND007 refuses what is not a reference.
    // An upper-case placeholder (`REPLACE_IMAGE`) is written as operator-sdk writes it, for
    // the project's own later step to replace.
    for f in &found {
        if crate::naming::is_image_placeholder(&f.image) {
            continue;
        }
        if let Some(p) = crate::naming::image_reference_problem(&f.image) {
            return Err(Error::invalid(
                f.origin.clone(),
                format!(
                    "the {} is {:?}, not an image reference: {p} (rule BND007)",
                    f.what,
                    crate::naming::excerpt(&f.image)
                ),
            ));
        }
    }
    // Container names repeat across deployments (kubebuilder calls every operator container
    // `manager`); when one name stands for several images, each is named after its deployment.
    let mut images_of: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for f in found.iter().filter(|f| f.deployment.is_some()) {
        images_of.entry(&f.name).or_default().insert(&f.image);
    }
    let ambiguous: std::collections::BTreeSet<String> = images_of
        .into_iter()
        .filter(|(_, imgs)| imgs.len() > 1)
        .map(|(n, _)| n.to_owned())
        .collect();
    for f in &mut found {
        if let Some(dep) = &f.deployment
            && ambiguous.contains(&f.name)
        {
            f.name = format!("{dep}-{}", f.name);
        }
    }

    // A container named like a `RELATED_IMAGE_` entry (`submariner-operator`): the entry keeps
    // the name, as operator-sdk lists only the entry; a container image that differs from it is
    // listed after its deployment instead of being a clash.
    let env_images: BTreeMap<String, String> = found
        .iter()
        .filter(|f| f.deployment.is_none())
        .map(|f| (f.name.clone(), f.image.clone()))
        .collect();
    for f in &mut found {
        if let Some(dep) = &f.deployment
            && env_images
                .get(&f.name)
                .is_some_and(|image| *image != f.image)
        {
            f.name = format!("{dep}-{}", f.name);
        }
    }

    let mut by_name: BTreeMap<String, &Found> = BTreeMap::new();
    for f in &found {
        if let Some(prev) = by_name.get(&f.name) {
            if prev.image != f.image {
                return Err(Error::invalid(
                    f.origin.clone(),
                    format!(
                        "relatedImages name clash: `{}` is {} ({}) but {} ({}) at {}; rename the container or the RELATED_IMAGE_ variable",
                        f.name, f.image, f.what, prev.image, prev.what, prev.origin
                    ),
                ));
            }
            continue;
        }
        by_name.insert(f.name.clone(), f);
    }

    let mut entries: Vec<(String, String)> = Vec::new();
    for b in base {
        let name = b["name"].as_str().unwrap_or_default();
        let image = b["image"].as_str().unwrap_or_default();
        if image.is_empty() || by_name.contains_key(name) {
            continue;
        }
        entries.push((name.to_owned(), image.to_owned()));
    }
    entries.extend(by_name.values().map(|f| (f.name.clone(), f.image.clone())));

    let mut seen_images = std::collections::HashSet::new();
    entries.sort();
    let mut out = Vec::new();
    for (name, image) in entries {
        if seen_images.insert(image.clone()) {
            out.push(json!({"name": name, "image": image}));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn dep(yaml: &str) -> Object {
        crate::manifest::parse_objects(yaml, Path::new("d.yaml"))
            .unwrap()
            .remove(0)
    }

    const DEP: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        image: controller:latest\n        env:\n        - name: RELATED_IMAGE_MEMCACHED_SERVER\n          value: memcached:1.6\n";

    #[test]
    fn placeholder_and_related() {
        let mut ds = vec![dep(DEP)];
        assert_eq!(
            replace_placeholder(&mut ds, "controller", "quay.io/x/op:v1"),
            1
        );
        let base = vec![
            json!({"name": "manager", "image": "quay.io/x/op:v0"}),
            json!({"name": "extra", "image": "busybox:1"}),
        ];
        let ri = related_images(&base, &ds).unwrap();
        assert_eq!(
            ri,
            vec![
                json!({"name": "extra", "image": "busybox:1"}),
                json!({"name": "manager", "image": "quay.io/x/op:v1"}),
                json!({"name": "memcached-server", "image": "memcached:1.6"}),
            ]
        );
    }

    #[test]
    fn same_container_name_in_two_deployments_is_qualified() {
        let other = DEP
            .replace("name: m}", "name: other}")
            .replace("controller:latest", "other:1")
            .replace("RELATED_IMAGE_MEMCACHED_SERVER", "RELATED_IMAGE_X");
        let ri = related_images(&[], &[dep(DEP), dep(&other)]).unwrap();
        let names: Vec<&str> = ri.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["m-manager", "memcached-server", "other-manager"]);
    }

    /// Issue 25, fault 10 (submariner): a container named like a `RELATED_IMAGE_` entry is no
    /// clash: the entry keeps the name; the container's other image is listed after its
    /// deployment, the same image once.
    #[test]
    fn container_named_like_a_related_image_entry() {
        let named = DEP
            .replace("name: manager", "name: memcached-server")
            .replace("name: m}", "name: op}");
        let ri = related_images(&[], &[dep(&named)]).unwrap();
        assert_eq!(
            ri,
            vec![
                json!({"name": "memcached-server", "image": "memcached:1.6"}),
                json!({"name": "op-memcached-server", "image": "controller:latest"}),
            ]
        );
        let same = named.replace("image: controller:latest", "image: memcached:1.6");
        let ri = related_images(&[], &[dep(&same)]).unwrap();
        assert_eq!(
            ri,
            vec![json!({"name": "memcached-server", "image": "memcached:1.6"})]
        );
    }

    #[test]
    fn env_name_clash_is_an_error() {
        let other = DEP
            .replace("name: m}", "name: other}")
            .replace("memcached:1.6", "memcached:1.7");
        let err = related_images(&[], &[dep(DEP), dep(&other)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("name clash") && err.contains("d.yaml:12:"),
            "{err}"
        );
    }
}

//! The FROM-scratch image of a bundle directory: one layer, a config whose labels are the
//! bundle's annotations, a manifest. Same directory content and options → same bytes.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::layer::{self, Layer};
use super::oci::{self, Descriptor, Digest, Format, History, ImageConfig, Manifest, RootFs};
use crate::error::{Error, Result};
use crate::yaml;

/// Architecture written to the config. A bundle image is data only (OLM copies its own `cpb`
/// helper into the unpack container), so one linux/amd64 manifest is the convention of
/// `docker build`-made bundles and is what Konflux policy expects (no multi-arch bundles).
pub const ARCHITECTURE: &str = "amd64";
/// Operating system written to the config.
pub const OS: &str = "linux";
/// `history[0].created_by`.
pub const CREATED_BY: &str = "opship build";

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Time of every tar entry and of `created` (seconds since the Unix epoch): 0, or
    /// `SOURCE_DATE_EPOCH` read by the caller.
    pub epoch: u64,
    /// Labels added to (and overriding) the annotations.
    pub extra_labels: BTreeMap<String, String>,
    /// Manifest media types.
    pub format: Format,
}

/// A built image: the three blobs and their descriptors.
#[derive(Debug, Clone)]
pub struct Image {
    /// Manifest bytes (compact JSON).
    pub manifest: Vec<u8>,
    /// Config bytes (compact JSON).
    pub config: Vec<u8>,
    /// The layer.
    pub layer: Layer,
    /// Descriptor of the manifest (what a layout's index or a registry tag points to).
    pub manifest_descriptor: Descriptor,
    /// The labels written to the config.
    pub labels: BTreeMap<String, String>,
    /// Manifest flavour.
    pub format: Format,
}

impl Image {
    /// The image digest (digest of the manifest).
    pub fn digest(&self) -> &Digest {
        &self.manifest_descriptor.digest
    }

    /// Every blob: (digest, bytes), config and layer first, manifest last.
    pub fn blobs(&self) -> [(Digest, &[u8]); 3] {
        [
            (self.layer.digest.clone(), self.layer.gzip.as_slice()),
            (Digest::of(&self.config), self.config.as_slice()),
            (
                self.manifest_descriptor.digest.clone(),
                self.manifest.as_slice(),
            ),
        ]
    }
}

/// Builds the image of the bundle in `dir` (`manifests/`, `metadata/annotations.yaml`, and
/// `tests/scorecard/` when present; nothing else, `bundle.Dockerfile` included, goes in).
pub fn build_bundle(dir: &Path, opts: &BuildOptions) -> Result<Image> {
    for required in ["manifests", "metadata"] {
        let p = dir.join(required);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Error::Input(format!(
                    "{}: a symbolic link; a bundle image holds only regular files and \
                     directories — replace it with a copy of its target",
                    crate::paths::show(&p)
                )));
            }
            _ => {
                return Err(Error::Input(format!(
                    "{}: missing; a bundle directory holds manifests/ and metadata/",
                    crate::paths::show(&p)
                )));
            }
        }
    }
    let mut roots = vec!["manifests", "metadata"];
    let scorecard = dir.join("tests/scorecard");
    if std::fs::symlink_metadata(&scorecard).is_ok_and(|m| m.is_dir()) {
        roots.push("tests/scorecard");
    }
    let mut labels = annotations(&dir.join("metadata/annotations.yaml"))?;
    labels.extend(opts.extra_labels.clone());
    let entries = layer::collect(dir, &roots)?;
    check_limits(&entries)?;
    let layer = layer::build(&entries, opts.epoch)?;
    assemble(layer, labels, opts)
}

/// The limits `validate` and `manifests` read a bundle with (a file of at most
/// [`crate::input::Kind::Manifest`]'s 64 MiB, [`MAX_FILES`] files, [`MAX_TOTAL_BYTES`] in
/// all), checked on the files' sizes before any is read: an image opship builds is one its
/// own readers accept, and a 420 MB file is refused instead of taking gigabytes.
///
/// [`MAX_FILES`]: crate::bundle::MAX_FILES
/// [`MAX_TOTAL_BYTES`]: crate::bundle::MAX_TOTAL_BYTES
fn check_limits(entries: &[layer::Entry]) -> Result<()> {
    let files: Vec<&Path> = entries.iter().filter_map(|e| e.source.as_deref()).collect();
    if files.len() > crate::bundle::MAX_FILES {
        return Err(Error::Input(format!(
            "the bundle holds {} files, more than the {} a bundle may have; no image built",
            files.len(),
            crate::bundle::MAX_FILES
        )));
    }
    let mut total = 0u64;
    for f in files {
        total += crate::input::check(f, crate::input::Kind::Manifest)
            .map_err(|e| Error::Input(format!("{e}; no image built")))?
            .len();
        if total > crate::bundle::MAX_TOTAL_BYTES {
            return Err(Error::Input(format!(
                "{}: the bundle's files hold more than the {} bytes a bundle may have; no image built",
                crate::paths::show(f),
                crate::bundle::MAX_TOTAL_BYTES
            )));
        }
    }
    Ok(())
}

/// What the config records about where an image's one layer came from.
#[derive(Debug, Clone, Copy)]
pub struct Provenance<'a> {
    /// `architecture` of the config.
    pub architecture: &'a str,
    /// `history[0].comment`.
    pub comment: &'a str,
    /// `history[0].created_by`.
    pub created_by: &'a str,
}

/// A bundle image's provenance.
pub const BUNDLE: Provenance<'static> = Provenance {
    architecture: ARCHITECTURE,
    comment: "bundle layer",
    created_by: CREATED_BY,
};

/// Config and manifest around a finished bundle layer.
pub fn assemble(
    layer: Layer,
    labels: BTreeMap<String, String>,
    opts: &BuildOptions,
) -> Result<Image> {
    assemble_one_layer(layer, labels, opts.format, opts.epoch, BUNDLE)
}

/// Config and manifest around one finished layer (bundle and catalog images alike).
pub fn assemble_one_layer(
    layer: Layer,
    labels: BTreeMap<String, String>,
    format: Format,
    epoch: u64,
    from: Provenance<'_>,
) -> Result<Image> {
    let created = oci::rfc3339(epoch);
    let config = ImageConfig {
        architecture: from.architecture.into(),
        config: oci::RunConfig {
            labels: labels.clone(),
        },
        created: Some(created.clone()),
        history: vec![History {
            comment: Some(from.comment.into()),
            created: Some(created.clone()),
            created_by: Some(from.created_by.into()),
        }],
        os: OS.into(),
        rootfs: RootFs {
            kind: "layers".into(),
            diff_ids: vec![layer.diff_id.clone()],
        },
    };
    let config = oci::to_json(&config)?;
    let mut annotations = BTreeMap::new();
    if format == Format::Oci {
        annotations.insert(oci::annotation::CREATED.to_owned(), created);
    }
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(format.manifest_type().into()),
        config: Descriptor::of(format.config_type(), &config),
        layers: vec![Descriptor {
            media_type: format.layer_type().into(),
            digest: layer.digest.clone(),
            size: layer.gzip.len() as u64,
            annotations: BTreeMap::new(),
        }],
        annotations,
    };
    let manifest = oci::to_json(&manifest)?;
    Ok(Image {
        manifest_descriptor: Descriptor::of(format.manifest_type(), &manifest),
        manifest,
        config,
        layer,
        labels,
        format,
    })
}

/// The `annotations` map of `metadata/annotations.yaml` as labels (scalars as strings).
pub fn annotations(path: &Path) -> Result<BTreeMap<String, String>> {
    let text = yaml::read_text(path)?;
    let doc = yaml::parse_one(&text, path)?;
    let Some(map) = doc.value.get("annotations").and_then(Value::as_object) else {
        return Err(Error::invalid(
            doc.origin(""),
            "no `annotations` map; expected `annotations: {operators.operatorframework.io.bundle.package.v1: ...}`",
        ));
    };
    let mut out = BTreeMap::new();
    for (k, v) in map {
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(Error::invalid(
                    doc.origin(&format!("/annotations/{}", yaml::escape_pointer_token(k))),
                    format!("annotation `{k}` is not a string"),
                ));
            }
        };
        out.insert(k.clone(), s);
    }
    if !out.contains_key(crate::bundle::metadata::keys::PACKAGE) {
        return Err(Error::invalid(
            doc.origin("/annotations"),
            format!(
                "no `{}` annotation: opm recognises a bundle image by this label",
                crate::bundle::metadata::keys::PACKAGE
            ),
        ));
    }
    Ok(out)
}

/// The default tag of a bundle: the CSV's `spec.version`, else the directory's name; `+`
/// (legal in SemVer, not in a tag) becomes `_`, as Helm does.
pub fn default_tag(dir: &Path) -> String {
    let tag = csv_version(dir).unwrap_or_else(|| {
        std::fs::canonicalize(dir)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "latest".into())
    });
    tag.replace('+', "_")
}

/// `spec.version` of the ClusterServiceVersion in `dir/manifests`, when one is found.
pub fn csv_version(dir: &Path) -> Option<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("manifests"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
        })
        .collect();
    files.sort();
    // Files named like a CSV first; parse others only if they mention the kind.
    files.sort_by_key(|p| {
        !p.file_name()
            .is_some_and(|n| n.to_string_lossy().contains("clusterserviceversion"))
    });
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        if !text.contains("ClusterServiceVersion") {
            continue;
        }
        let Ok(docs) = yaml::parse_stream(&text, &f) else {
            continue;
        };
        for d in docs {
            if d.value.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion")
                && let Some(v) = d.value.pointer("/spec/version")
            {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => continue,
                };
                if !v.is_empty() {
                    return Some(v);
                }
            }
        }
    }
    None
}

//! The catalog image without a container engine: FROM scratch, one reproducible layer with
//! the catalog under `/configs`, and the `operators.operatorframework.io.index.configs.v1`
//! label (binary-less catalog for OLM v1, or for OLM v0 with `extractContent`); and the
//! Dockerfile opm generates, for users who build with Docker.

use std::collections::BTreeMap;
use std::path::Path;

use opship_core::image::build::{self, Image, Provenance};
use opship_core::image::layer::{self, Entry};
use opship_core::image::layout::Layout;
use opship_core::image::oci::{self, Descriptor, Format};

use crate::error::{Error, Result};
use crate::render::CONFIGS_LABEL;

/// Where the catalog goes in the image.
pub const CONFIGS_DIR: &str = "/configs";

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Time of every tar entry and of `created` (0 unless `SOURCE_DATE_EPOCH`).
    pub epoch: u64,
    /// Labels besides the configs label.
    pub labels: BTreeMap<String, String>,
    /// Manifest media types.
    pub format: Format,
    /// CPU architecture written to the config.
    pub architecture: String,
}

fn image_err(e: impl std::fmt::Display) -> Error {
    Error::Image(e.to_string())
}

/// The layer entries: `configs/` and every file of the catalog directory below it.
fn entries(dir: &Path) -> Result<Vec<Entry>> {
    fn walk(root: &Path, dir: &Path, rel: &str, out: &mut Vec<Entry>) -> Result<()> {
        for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let e = e.map_err(|e| Error::io(dir, e))?;
            let path = e.path();
            let name = e.file_name();
            let name = name.to_str().ok_or_else(|| {
                Error::Image(format!(
                    "{}: file name is not UTF-8",
                    opship_core::paths::show(&path)
                ))
            })?;
            // The image holds every file of the directory, as `ADD index /configs` would:
            // a temporary an interrupted run left is refused (the loader refuses it too), not
            // dropped from the image.
            if opship_core::fsutil::is_temporary(name) {
                return Err(Error::Usage(opship_core::fsutil::leftover_message(&path)));
            }
            let child = format!("{rel}/{name}");
            let mut ft = std::fs::symlink_metadata(&path).map_err(|e| Error::io(&path, e))?;
            if ft.file_type().is_symlink() {
                // As the loader: a link within the catalog is its target's content, one that
                // leads out of it is refused.
                opship_core::input::check_in_tree(root, &path)?;
                ft = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?;
                if ft.is_dir() {
                    return Err(Error::Usage(format!(
                        "{}: a symbolic link to a directory; catalogs are read without following those",
                        opship_core::paths::show(&path)
                    )));
                }
            }
            if ft.is_dir() {
                out.push(Entry {
                    path: child.clone(),
                    source: None,
                });
                walk(root, &path, &child, out)?;
            } else if ft.is_file() {
                out.push(Entry {
                    path: child,
                    source: Some(path),
                });
            } else {
                return Err(Error::Image(format!(
                    "{}: not a regular file or directory; a catalog image holds only those",
                    opship_core::paths::show(&path)
                )));
            }
        }
        Ok(())
    }
    let mut out = vec![Entry {
        path: "configs".into(),
        source: None,
    }];
    walk(dir, dir, "configs", &mut out)?;
    out.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    Ok(out)
}

/// Builds the FROM-scratch catalog image of `dir`. The catalog must load and validate.
pub fn build_scratch(dir: &Path, opts: &BuildOptions) -> Result<Image> {
    let cat = crate::load::load_dir(dir)?;
    let report = crate::validate::validate(&cat);
    if !report.passed() {
        return Err(Error::Invalid(format!(
            "{} is not a valid catalog, no image built:\n{}",
            opship_core::paths::show(dir),
            report.error_tree()
        )));
    }
    let layer = layer::build(&entries(dir)?, opts.epoch).map_err(image_err)?;
    let mut labels = opts.labels.clone();
    labels.insert(CONFIGS_LABEL.into(), CONFIGS_DIR.into());
    let architecture = if opts.architecture.is_empty() {
        "amd64"
    } else {
        opts.architecture.as_str()
    };
    let from = Provenance {
        architecture,
        comment: "file-based catalog",
        created_by: "opship catalog build",
    };
    build::assemble_one_layer(layer, labels, opts.format, opts.epoch, from).map_err(image_err)
}

/// Builds and writes the image into the OCI layout `layout` under `tag`.
pub fn build_into_layout(
    dir: &Path,
    layout: &Path,
    tag: &str,
    opts: &BuildOptions,
) -> Result<Image> {
    let image = build_scratch(dir, opts)?;
    Layout::new(layout)
        .write_images([(tag, &image)])
        .map_err(image_err)?;
    Ok(image)
}

/// Dockerfile options (opm's `generate dockerfile` flags).
#[derive(Debug, Clone)]
pub struct DockerfileOptions {
    /// Final stage base; `scratch` builds a binary-less catalog.
    pub base_image: String,
    /// Builder stage image (must contain `/bin/opm`).
    pub builder_image: String,
    /// Extra `LABEL`s.
    pub labels: BTreeMap<String, String>,
}

/// opm's default for both images.
pub const OPM_IMAGE: &str = "quay.io/operator-framework/opm:latest";

impl Default for DockerfileOptions {
    fn default() -> Self {
        DockerfileOptions {
            base_image: OPM_IMAGE.into(),
            builder_image: OPM_IMAGE.into(),
            labels: BTreeMap::new(),
        }
    }
}

/// The two-stage Dockerfile of opm >= 1.44: the builder pre-computes the serve cache; the
/// final stage is the opm image (with entrypoint) or `scratch` (binary-less).
pub fn dockerfile(index_dir: &str, opts: &DockerfileOptions) -> Result<String> {
    if opts.builder_image == "scratch" {
        return Err(Error::Usage(
            "the builder image must contain /bin/opm; it cannot be scratch".into(),
        ));
    }
    let mut s = format!(
        "# The builder image is expected to contain\n# /bin/opm (with serve subcommand)\nFROM {} as builder\n\n# Copy FBC root into image at /configs and pre-populate serve cache\nADD {index_dir} /configs\nRUN [\"/bin/opm\", \"serve\", \"/configs\", \"--cache-dir=/tmp/cache\", \"--cache-only\"]\n\nFROM {}\n",
        opts.builder_image, opts.base_image
    );
    if opts.base_image != "scratch" {
        s.push_str("# The base image is expected to contain\n# /bin/opm (with serve subcommand) and /bin/grpc_health_probe\n\n# Configure the entrypoint and command\nENTRYPOINT [\"/bin/opm\"]\nCMD [\"serve\", \"/configs\", \"--cache-dir=/tmp/cache\"]\n");
    }
    s.push_str(&format!(
        "\nCOPY --from=builder /configs /configs\nCOPY --from=builder /tmp/cache /tmp/cache\n\n# Set FBC-specific label for the location of the FBC root directory\n# in the image\nLABEL {CONFIGS_LABEL}=/configs\n"
    ));
    if !opts.labels.is_empty() {
        s.push_str("\n# Set other custom labels\n");
        for (k, v) in &opts.labels {
            s.push_str(&format!("LABEL \"{k}\"=\"{v}\"\n"));
        }
    }
    Ok(s)
}

/// Writes `<dir>.Dockerfile` next to the catalog directory, refusing to overwrite (as opm).
pub fn write_dockerfile(dir: &Path, opts: &DockerfileOptions) -> Result<std::path::PathBuf> {
    let name = dir
        .file_name()
        .ok_or_else(|| {
            Error::Usage(format!(
                "{}: not a directory name",
                opship_core::paths::show(dir)
            ))
        })?
        .to_string_lossy()
        .into_owned();
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{}: not a directory",
            opship_core::paths::show(dir)
        )));
    }
    let target = dir.with_file_name(format!("{name}.Dockerfile"));
    if target.exists() {
        return Err(Error::Usage(format!(
            "{}: already exists; not overwritten",
            opship_core::paths::show(&target)
        )));
    }
    let text = dockerfile(&name, opts)?;
    opship_core::fsutil::write_atomic_with_mode(&target, text.as_bytes(), 0o644)?;
    Ok(target)
}

/// The command of a catalog image on an opm base: serve `/configs`. No pre-computed cache
/// (that needs the opm binary at build time); opm builds it when the pod starts.
pub const SERVE_CMD: [&str; 2] = ["serve", "/configs"];

fn is_index(media_type: &str) -> bool {
    media_type == oci::media::OCI_INDEX || media_type == oci::media::DOCKER_LIST
}

/// Reads a blob of `layout` by digest and size, verifying both.
fn read_blob(layout: &Layout, desc: &serde_json::Value) -> Result<(Vec<u8>, oci::Digest)> {
    let digest = desc
        .get("digest")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| Error::Image("a descriptor without digest".into()))
        .and_then(|d| oci::Digest::parse(d).map_err(image_err))?;
    let size = desc
        .get("size")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| Error::Image(format!("descriptor of {digest} has no size")))?;
    let bytes = layout
        .read_blob(&Descriptor {
            media_type: String::new(),
            digest: digest.clone(),
            size,
            annotations: BTreeMap::new(),
        })
        .map_err(image_err)?;
    Ok((bytes, digest))
}

/// Builds the catalog image on an opm base image (OLM v0 with the opm binary): the base
/// tagged `base_tag` in the layout `base` (an image or an index, so multi-arch bases stay
/// multi-arch) gets one more layer with `/configs`, the configs label, `ENTRYPOINT
/// ["/bin/opm"]` and `CMD ["serve", "/configs"]`. The result is tagged `tag` in `out`.
pub fn build_on_base(
    dir: &Path,
    base: &Path,
    base_tag: &str,
    out: &Path,
    tag: &str,
    opts: &BuildOptions,
) -> Result<Descriptor> {
    use serde_json::{Value, json};
    let cat = crate::load::load_dir(dir)?;
    let report = crate::validate::validate(&cat);
    if !report.passed() {
        return Err(Error::Invalid(format!(
            "{} is not a valid catalog, no image built:\n{}",
            opship_core::paths::show(dir),
            report.error_tree()
        )));
    }
    let layer = layer::build(&entries(dir)?, opts.epoch).map_err(image_err)?;
    let base_layout = Layout::new(base);
    let out_layout = Layout::new(out);
    out_layout.init().map_err(image_err)?;
    let index_bytes = std::fs::read(base.join("index.json"))
        .map_err(|e| Error::io(base.join("index.json"), e))?;
    let index: Value = serde_json::from_slice(&index_bytes).map_err(|e| {
        Error::Image(format!(
            "{}: not JSON: {e}",
            opship_core::paths::show(&base.join("index.json"))
        ))
    })?;
    let top = index["manifests"]
        .as_array()
        .and_then(|m| {
            m.iter().find(|d| {
                d.pointer("/annotations/org.opencontainers.image.ref.name")
                    .and_then(Value::as_str)
                    == Some(base_tag)
            })
        })
        .cloned()
        .ok_or_else(|| {
            Error::Image(format!(
                "{}: no image tagged `{base_tag}`",
                opship_core::paths::show(base)
            ))
        })?;
    let created = oci::rfc3339(opts.epoch);
    let mut labels = opts.labels.clone();
    labels.insert(CONFIGS_LABEL.into(), CONFIGS_DIR.into());

    // One platform manifest: copy its layers, add ours, rewrite config and manifest.
    let rebase = |desc: &Value| -> Result<Value> {
        let (bytes, _) = read_blob(&base_layout, desc)?;
        let mut manifest: Value = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Image(format!("base manifest: {e}")))?;
        let docker = manifest["mediaType"] == oci::media::DOCKER_MANIFEST
            || desc["mediaType"] == oci::media::DOCKER_MANIFEST;
        let (config_bytes, _) = read_blob(&base_layout, &manifest["config"])?;
        let mut config: Value = serde_json::from_slice(&config_bytes)
            .map_err(|e| Error::Image(format!("base config: {e}")))?;
        for l in manifest["layers"].as_array().cloned().unwrap_or_default() {
            let (b, d) = read_blob(&base_layout, &l)?;
            out_layout.write_blob(&d, &b).map_err(image_err)?;
        }
        if !config["config"].is_object() {
            config["config"] = json!({});
        }
        let run = &mut config["config"];
        if !run["Labels"].is_object() {
            run["Labels"] = json!({});
        }
        for (k, v) in &labels {
            run["Labels"][k] = Value::String(v.clone());
        }
        run["Entrypoint"] = json!(["/bin/opm"]);
        run["Cmd"] = json!(SERVE_CMD);
        config["created"] = Value::String(created.clone());
        match config
            .pointer_mut("/rootfs/diff_ids")
            .and_then(Value::as_array_mut)
        {
            Some(ids) => ids.push(Value::String(layer.diff_id.to_string())),
            None => return Err(Error::Image("base config has no rootfs.diff_ids".into())),
        }
        let history = json!({"created": created, "created_by": "opship catalog build", "comment": "file-based catalog"});
        match config["history"].as_array_mut() {
            Some(h) => h.push(history),
            None => config["history"] = json!([history]),
        }
        let config_bytes = serde_json::to_vec(&config).map_err(image_err)?;
        let config_digest = oci::Digest::of(&config_bytes);
        out_layout
            .write_blob(&config_digest, &config_bytes)
            .map_err(image_err)?;
        out_layout
            .write_blob(&layer.digest, &layer.gzip)
            .map_err(image_err)?;
        manifest["config"]["digest"] = Value::String(config_digest.to_string());
        manifest["config"]["size"] = json!(config_bytes.len());
        let layer_type = if docker {
            oci::media::DOCKER_LAYER_GZIP
        } else {
            oci::media::OCI_LAYER_GZIP
        };
        manifest["layers"]
            .as_array_mut()
            .ok_or_else(|| Error::Image("base manifest has no layers".into()))?
            .push(json!({"mediaType": layer_type, "digest": layer.digest.to_string(), "size": layer.gzip.len()}));
        let manifest_bytes = serde_json::to_vec(&manifest).map_err(image_err)?;
        let digest = oci::Digest::of(&manifest_bytes);
        out_layout
            .write_blob(&digest, &manifest_bytes)
            .map_err(image_err)?;
        let mut new_desc = desc.clone();
        new_desc["digest"] = Value::String(digest.to_string());
        new_desc["size"] = json!(manifest_bytes.len());
        if let Some(a) = new_desc
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
        {
            a.remove("org.opencontainers.image.ref.name");
            if a.is_empty() {
                new_desc.as_object_mut().map(|o| o.remove("annotations"));
            }
        }
        Ok(new_desc)
    };

    let media_type = top["mediaType"].as_str().unwrap_or_default().to_owned();
    let result = if is_index(&media_type) {
        let (bytes, _) = read_blob(&base_layout, &top)?;
        let mut idx: Value =
            serde_json::from_slice(&bytes).map_err(|e| Error::Image(format!("base index: {e}")))?;
        let mut manifests = Vec::new();
        for m in idx["manifests"].as_array().cloned().unwrap_or_default() {
            // Attestations and other non-runnable entries are dropped, not rebased.
            if m.pointer("/platform/os").and_then(Value::as_str) == Some("unknown") {
                continue;
            }
            manifests.push(rebase(&m)?);
        }
        if manifests.is_empty() {
            return Err(Error::Image("the base index lists no image".into()));
        }
        idx["manifests"] = Value::Array(manifests);
        let bytes = serde_json::to_vec(&idx).map_err(image_err)?;
        let digest = oci::Digest::of(&bytes);
        out_layout.write_blob(&digest, &bytes).map_err(image_err)?;
        Descriptor {
            media_type,
            digest,
            size: bytes.len() as u64,
            annotations: BTreeMap::new(),
        }
    } else {
        let d = rebase(&top)?;
        Descriptor {
            media_type,
            digest: oci::Digest::parse(d["digest"].as_str().unwrap_or_default())
                .map_err(image_err)?,
            size: d["size"].as_u64().unwrap_or_default(),
            annotations: BTreeMap::new(),
        }
    };
    opship_core::image::layout::check_tag(tag).map_err(image_err)?;
    let mut tagged = result.clone();
    tagged
        .annotations
        .insert(oci::annotation::REF_NAME.into(), tag.into());
    // Under the layout's index lock, like every other writer of `index.json`.
    out_layout
        .update_index(|out_index| {
            match out_index.manifests.iter_mut().find(|d| {
                d.annotations
                    .get(oci::annotation::REF_NAME)
                    .map(String::as_str)
                    == Some(tag)
            }) {
                Some(slot) => *slot = tagged,
                None => out_index.manifests.push(tagged),
            }
            Ok(())
        })
        .map_err(image_err)?;
    Ok(result)
}

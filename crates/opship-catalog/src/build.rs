//! The catalog image without a container engine: FROM scratch, one reproducible layer with
//! the catalog under `/configs`, and the `operators.operatorframework.io.index.configs.v1`
//! label (binary-less catalog for OLM v1, or for OLM v0 with `extractContent`); and the
//! Dockerfile opm generates, for users who build with Docker.

use std::collections::BTreeMap;
use std::path::Path;

use opship_core::image::build::Image;
use opship_core::image::layer::{self, Entry};
use opship_core::image::layout::Layout;
use opship_core::image::oci::{
    self, Descriptor, Format, History, ImageConfig, Manifest, RootFs, RunConfig,
};

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
    fn walk(dir: &Path, rel: &str, out: &mut Vec<Entry>) -> Result<()> {
        for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let e = e.map_err(|e| Error::io(dir, e))?;
            let path = e.path();
            let name = e.file_name();
            let name = name.to_str().ok_or_else(|| {
                Error::Image(format!("{}: file name is not UTF-8", path.display()))
            })?;
            // A temporary file of an interrupted `catalog add` is not catalog content.
            if name.starts_with(".opship-") {
                continue;
            }
            let child = format!("{rel}/{name}");
            let ft = std::fs::symlink_metadata(&path).map_err(|e| Error::io(&path, e))?;
            if ft.is_dir() {
                out.push(Entry {
                    path: child.clone(),
                    source: None,
                });
                walk(&path, &child, out)?;
            } else if ft.is_file() {
                out.push(Entry {
                    path: child,
                    source: Some(path),
                });
            } else {
                return Err(Error::Image(format!(
                    "{}: not a regular file or directory; a catalog image holds only those",
                    path.display()
                )));
            }
        }
        Ok(())
    }
    let mut out = vec![Entry {
        path: "configs".into(),
        source: None,
    }];
    walk(dir, "configs", &mut out)?;
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
            dir.display(),
            report.error_tree()
        )));
    }
    let layer = layer::build(&entries(dir)?, opts.epoch).map_err(image_err)?;
    let mut labels = opts.labels.clone();
    labels.insert(CONFIGS_LABEL.into(), CONFIGS_DIR.into());
    let created = oci::rfc3339(opts.epoch);
    let config = ImageConfig {
        architecture: if opts.architecture.is_empty() {
            "amd64".into()
        } else {
            opts.architecture.clone()
        },
        config: RunConfig {
            labels: labels.clone(),
        },
        created: Some(created.clone()),
        history: vec![History {
            comment: Some("file-based catalog".into()),
            created: Some(created.clone()),
            created_by: Some("opship catalog build".into()),
        }],
        os: "linux".into(),
        rootfs: RootFs {
            kind: "layers".into(),
            diff_ids: vec![layer.diff_id.clone()],
        },
    };
    let config = oci::to_json(&config).map_err(image_err)?;
    let mut annotations = BTreeMap::new();
    if opts.format == Format::Oci {
        annotations.insert(oci::annotation::CREATED.to_owned(), created);
    }
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(opts.format.manifest_type().into()),
        config: Descriptor::of(opts.format.config_type(), &config),
        layers: vec![Descriptor {
            media_type: opts.format.layer_type().into(),
            digest: layer.digest.clone(),
            size: layer.gzip.len() as u64,
            annotations: BTreeMap::new(),
        }],
        annotations,
    };
    let manifest = oci::to_json(&manifest).map_err(image_err)?;
    Ok(Image {
        manifest_descriptor: Descriptor::of(opts.format.manifest_type(), &manifest),
        manifest,
        config,
        layer,
        labels,
        format: opts.format,
    })
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
        .ok_or_else(|| Error::Usage(format!("{}: not a directory name", dir.display())))?
        .to_string_lossy()
        .into_owned();
    if !dir.is_dir() {
        return Err(Error::Usage(format!("{}: not a directory", dir.display())));
    }
    let target = dir.with_file_name(format!("{name}.Dockerfile"));
    if target.exists() {
        return Err(Error::Usage(format!(
            "{}: already exists; not overwritten",
            target.display()
        )));
    }
    let text = dockerfile(&name, opts)?;
    opship_core::fsutil::write_atomic(&target, text.as_bytes())?;
    Ok(target)
}

//! A `docker load`-able archive in the hybrid format Docker Engine ≥ 25 `docker save` writes:
//! an OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/<hex>`) plus the legacy
//! `manifest.json` (`[{"Config": "blobs/sha256/<hex>", "RepoTags": [...], "Layers":
//! ["blobs/sha256/<hex>"]}]`). The tar is deterministic like a layer: sorted entries, explicit
//! directories, fixed mtime, uid/gid 0, modes 0644/0755, PAX for long names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::build::Image;
use super::layer::{DIR_MODE, FILE_MODE, append};
use super::layout::{OCI_LAYOUT, check_tag, empty_index, write_atomic};
use super::oci::{self, annotation};
use crate::error::{Error, Result};

/// Annotation Docker and containerd use for the full image name in `index.json`.
pub const CONTAINERD_IMAGE_NAME: &str = "io.containerd.image.name";

/// One image of an archive.
#[derive(Debug, Clone, Copy)]
pub struct ArchiveImage<'a> {
    /// The full reference `docker load` tags the image with (`repo:tag`).
    pub repo_tag: &'a str,
    /// The short tag (`org.opencontainers.image.ref.name` in `index.json`).
    pub tag: &'a str,
    /// The image.
    pub image: &'a Image,
}

#[derive(Serialize)]
struct LegacyEntry {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "RepoTags")]
    repo_tags: Vec<String>,
    #[serde(rename = "Layers")]
    layers: Vec<String>,
}

/// The archive bytes.
pub fn archive_bytes(images: &[ArchiveImage<'_>], mtime: u64) -> Result<Vec<u8>> {
    let mut blobs: BTreeMap<String, &[u8]> = BTreeMap::new();
    let mut index = empty_index();
    let mut legacy = Vec::new();
    let mut seen = BTreeSet::new();
    for img in images {
        check_tag(img.tag)?;
        if !seen.insert(img.repo_tag) {
            return Err(Error::Input(format!(
                "`{}` given twice for one archive",
                img.repo_tag
            )));
        }
        for (d, bytes) in img.image.blobs() {
            blobs.insert(d.hex().to_owned(), bytes);
        }
        let mut desc = img.image.manifest_descriptor.clone();
        desc.annotations = BTreeMap::from([
            (CONTAINERD_IMAGE_NAME.to_owned(), img.repo_tag.to_owned()),
            (annotation::REF_NAME.to_owned(), img.tag.to_owned()),
        ]);
        index.manifests.push(desc);
        legacy.push(LegacyEntry {
            config: format!("blobs/sha256/{}", oci::Digest::of(&img.image.config).hex()),
            repo_tags: vec![img.repo_tag.to_owned()],
            layers: vec![format!("blobs/sha256/{}", img.image.layer.digest.hex())],
        });
    }
    let index = oci::to_json(&index)?;
    let legacy = oci::to_json(&legacy)?;

    let origin = Path::new("archive");
    let mut b = tar::Builder::new(Vec::new());
    append(&mut b, "blobs/", DIR_MODE, mtime, &[], origin)?;
    append(&mut b, "blobs/sha256/", DIR_MODE, mtime, &[], origin)?;
    for (hex, bytes) in &blobs {
        append(
            &mut b,
            &format!("blobs/sha256/{hex}"),
            FILE_MODE,
            mtime,
            bytes,
            origin,
        )?;
    }
    append(&mut b, "index.json", FILE_MODE, mtime, &index, origin)?;
    append(&mut b, "manifest.json", FILE_MODE, mtime, &legacy, origin)?;
    append(&mut b, "oci-layout", FILE_MODE, mtime, OCI_LAYOUT, origin)?;
    b.into_inner()
        .map_err(|e| Error::Internal(format!("tar: {e}")))
}

/// Writes the archive to `path` atomically.
pub fn write_archive(path: &Path, images: &[ArchiveImage<'_>], mtime: u64) -> Result<()> {
    let bytes = archive_bytes(images, mtime)?;
    write_atomic(path, &bytes)
}

/// The `docker load` name of a bundle image: `tag` itself when it is a full reference
/// (contains `/` or `:`), else `<package>-bundle:<tag>` with the package from the labels.
pub fn repo_tag(tag: &str, labels: &BTreeMap<String, String>) -> String {
    if tag.contains('/') || tag.contains(':') {
        return tag.to_owned();
    }
    let package = labels
        .get(crate::bundle::metadata::keys::PACKAGE)
        .map(|p| p.to_ascii_lowercase())
        .unwrap_or_else(|| "bundle".into());
    format!("{package}-bundle:{tag}")
}

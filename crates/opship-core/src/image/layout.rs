//! The OCI image layout on disk (image-spec `image-layout.md`): `oci-layout`, `index.json` and
//! `blobs/sha256/<hex>`. Several images share one layout, each named by the
//! `org.opencontainers.image.ref.name` annotation of its `index.json` entry.
//!
//! Writing: blobs first (temporary file + rename, skipped when the blob exists with the right
//! content), `index.json` last, atomically, so a reader never sees a tag whose blobs are
//! missing; `index.json` updates hold a file lock so concurrent writers keep each other's
//! tags. Reading verifies every blob's size and digest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::build::Image;
use super::oci::{
    self, Descriptor, Digest, ImageConfig, Index, Manifest, ManifestKind, annotation, media,
};
use crate::error::{Error, Result};

/// The lock file that serialises `index.json` updates (see [`Layout::update_index`]).
pub const LOCK_FILE: &str = "index.json.lock";

/// Content of `oci-layout`.
pub const OCI_LAYOUT: &[u8] = br#"{"imageLayoutVersion":"1.0.0"}"#;

/// An OCI layout directory.
#[derive(Debug, Clone)]
pub struct Layout {
    dir: PathBuf,
}

/// How deep image indexes may nest (an index of indexes of images is depth 2). Content
/// addressing rules out cycles; this bounds the work a hostile layout or registry can cause.
pub const MAX_INDEX_DEPTH: usize = 8;

/// One manifest (image or index) of what a tag points to, read and verified.
#[derive(Debug, Clone)]
pub struct TreeNode {
    /// Its descriptor (the `index.json` entry, or the entry of the index that lists it).
    pub descriptor: Descriptor,
    /// The manifest's media type.
    pub media_type: String,
    /// The manifest bytes.
    pub bytes: Vec<u8>,
    /// The parsed manifest.
    pub kind: ManifestKind,
}

/// An image read back from a layout, every blob verified.
#[derive(Debug, Clone)]
pub struct ReadImage {
    /// The `index.json` entry.
    pub descriptor: Descriptor,
    /// Manifest bytes.
    pub manifest_bytes: Vec<u8>,
    /// The parsed manifest.
    pub manifest: Manifest,
    /// Config bytes.
    pub config_bytes: Vec<u8>,
    /// The parsed config.
    pub config: ImageConfig,
    /// Layer blobs, in manifest order.
    pub layers: Vec<Vec<u8>>,
}

impl Layout {
    /// The layout at `dir` (nothing is read or written yet).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Layout { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of a blob.
    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.dir.join("blobs/sha256").join(digest.hex())
    }

    /// Creates the directory, `blobs/sha256/` and `oci-layout` when missing; refuses a
    /// directory whose `oci-layout` says something else.
    pub fn init(&self) -> Result<()> {
        let blobs = self.dir.join("blobs/sha256");
        // A layout may be made in a temporary (a pulled image): `fsutil`'s creation.
        crate::fsutil::create_dir_all(&blobs).map_err(|e| Error::io(&blobs, e))?;
        // A killed writer's `.opship-…` files would be taken for blobs (`umoci gc` fails on
        // `sha256:.opship-…`); the first writer after it removes them.
        crate::fsutil::sweep_once(&self.dir);
        crate::fsutil::sweep_once(&blobs);
        let marker = self.dir.join("oci-layout");
        match std::fs::read(&marker) {
            Ok(bytes) => {
                let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
                    Error::Input(format!("{}: not JSON: {e}", crate::paths::show(&marker)))
                })?;
                if v.get("imageLayoutVersion").and_then(|v| v.as_str()) != Some("1.0.0") {
                    return Err(Error::Input(format!(
                        "{}: imageLayoutVersion is not 1.0.0",
                        crate::paths::show(&marker)
                    )));
                }
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => write_atomic(&marker, OCI_LAYOUT),
            Err(e) => Err(Error::io(&marker, e)),
        }
    }

    /// Writes a blob unless a file with that content is already there (a damaged one of the
    /// same size is replaced).
    pub fn write_blob(&self, digest: &Digest, bytes: &[u8]) -> Result<()> {
        let path = self.blob_path(digest);
        if std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64)
            && std::fs::read(&path).is_ok_and(|b| Digest::of(&b) == *digest)
        {
            return Ok(());
        }
        write_atomic(&path, bytes)
    }

    /// Writes the blobs of an image (layer, config, manifest), skipping those present. Safe
    /// to call from several threads at once; the image is not tagged until
    /// [`Layout::write_images`].
    pub fn write_blobs(&self, image: &Image) -> Result<()> {
        for (digest, bytes) in image.blobs() {
            self.write_blob(&digest, bytes)?;
        }
        Ok(())
    }

    /// Reads and verifies a blob.
    pub fn read_blob(&self, desc: &Descriptor) -> Result<Vec<u8>> {
        let path = self.blob_path(&desc.digest);
        // The size is checked before reading, so a descriptor or a file that lies about it
        // never makes opship hold more than the descriptor says (nor block on a FIFO).
        let meta = crate::input::check(&path, crate::input::Kind::Blob)?;
        if meta.len() != desc.size {
            return Err(Error::Input(format!(
                "{}: {} bytes, the descriptor says {}",
                crate::paths::show(&path),
                meta.len(),
                desc.size
            )));
        }
        let bytes = crate::input::read(&path, crate::input::Kind::Blob)?;
        if bytes.len() as u64 != desc.size {
            return Err(Error::Input(format!(
                "{}: {} bytes, the descriptor says {}",
                crate::paths::show(&path),
                bytes.len(),
                desc.size
            )));
        }
        let actual = Digest::of(&bytes);
        if actual != desc.digest {
            return Err(Error::Input(format!(
                "{}: content hashes to {actual}, not {}",
                crate::paths::show(&path),
                desc.digest
            )));
        }
        Ok(bytes)
    }

    /// The parsed `index.json` (an empty index when the file does not exist).
    pub fn index(&self) -> Result<Index> {
        let path = self.dir.join("index.json");
        match crate::input::read(&path, crate::input::Kind::Config) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                Error::Input(format!(
                    "{}: not an OCI image index: {e}",
                    crate::paths::show(&path)
                ))
            }),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(empty_index())
            }
            Err(e) => Err(e),
        }
    }

    /// Writes images with their tags: all blobs, then one new `index.json`. An existing entry
    /// with the same tag is replaced in place; new tags are appended in the order given.
    pub fn write_images<'a>(
        &self,
        images: impl IntoIterator<Item = (&'a str, &'a Image)>,
    ) -> Result<()> {
        self.init()?;
        let images: Vec<(&str, &Image)> = images.into_iter().collect();
        for (tag, _) in &images {
            check_tag(tag)?;
        }
        for (_, image) in &images {
            self.write_blobs(image)?;
        }
        self.update_index(|index| {
            for (tag, image) in &images {
                set_tag(index, tag, image.manifest_descriptor.clone());
            }
            Ok(())
        })
    }

    /// Points `tag` at the manifest `desc` (whose blobs must be in the layout already).
    pub fn tag(&self, tag: &str, desc: Descriptor) -> Result<()> {
        check_tag(tag)?;
        self.init()?;
        self.update_index(|index| {
            set_tag(index, tag, desc);
            Ok(())
        })
    }

    /// Read-modify-write of `index.json` under an exclusive lock on `index.json.lock` in the
    /// layout, so writers in other processes (two `opship build` or `opship pull` into one
    /// layout) or threads wait for each other instead of losing each other's tags. The lock
    /// file stays (removing it would let a third writer lock a new file while a second still
    /// holds the old one); readers do not need it, since `index.json` is replaced atomically.
    pub fn update_index(&self, change: impl FnOnce(&mut Index) -> Result<()>) -> Result<()> {
        let lock_path = self.dir.join(LOCK_FILE);
        let lock = crate::cleanup::create(|| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)
        })
        .map_err(|e| Error::io(&lock_path, e))?;
        lock.lock().map_err(|e| Error::io(&lock_path, e))?;
        let mut index = self.index()?;
        change(&mut index)?;
        let bytes = oci::to_json(&index)?;
        write_atomic(&self.dir.join("index.json"), &bytes)
        // The lock goes with `lock`, after the rename.
    }

    /// The tags of the layout, in `index.json` order.
    pub fn tags(&self) -> Result<Vec<String>> {
        Ok(self
            .index()?
            .manifests
            .iter()
            .filter_map(|d| d.annotations.get(annotation::REF_NAME).cloned())
            .collect())
    }

    /// The `index.json` entry tagged `tag`.
    pub fn tagged(&self, tag: &str) -> Result<Descriptor> {
        self.index()?
            .manifests
            .into_iter()
            .find(|d| d.annotations.get(annotation::REF_NAME).map(String::as_str) == Some(tag))
            .ok_or_else(|| {
                Error::Input(format!(
                    "{}: no image tagged `{tag}`",
                    crate::paths::show(&self.dir.join("index.json"))
                ))
            })
    }

    /// Every manifest reachable from `desc` (an image manifest, or an image index / Docker
    /// manifest list and, recursively, the manifests it lists), each read and verified
    /// against its descriptor, children before the index that lists them, each digest once.
    /// Config and layer blobs are not read.
    pub fn manifest_tree(&self, desc: &Descriptor) -> Result<Vec<TreeNode>> {
        let mut out = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        self.collect_tree(desc, 0, &mut seen, &mut out)?;
        Ok(out)
    }

    fn collect_tree(
        &self,
        desc: &Descriptor,
        depth: usize,
        seen: &mut std::collections::BTreeSet<Digest>,
        out: &mut Vec<TreeNode>,
    ) -> Result<()> {
        if !seen.insert(desc.digest.clone()) {
            return Ok(());
        }
        if depth > MAX_INDEX_DEPTH {
            return Err(Error::Input(format!(
                "{}: image indexes nest deeper than {MAX_INDEX_DEPTH} levels at {}",
                crate::paths::show(&self.dir),
                desc.digest
            )));
        }
        let bytes = self.read_blob(desc)?;
        let what = crate::paths::show(&self.blob_path(&desc.digest)).to_string();
        let (media_type, kind) = oci::parse_manifest(&bytes, Some(&desc.media_type), &what)?;
        if let ManifestKind::Index(index) = &kind {
            for entry in &index.manifests {
                self.collect_tree(&entry.descriptor, depth + 1, seen, out)?;
            }
        }
        out.push(TreeNode {
            descriptor: desc.clone(),
            media_type,
            bytes,
            kind,
        });
        Ok(())
    }

    /// Resolves `tag` → manifest → config → layers, verifying every digest.
    pub fn read_image(&self, tag: &str) -> Result<ReadImage> {
        let index = self.index()?;
        let Some(desc) = index
            .manifests
            .iter()
            .find(|d| d.annotations.get(annotation::REF_NAME).map(String::as_str) == Some(tag))
            .cloned()
        else {
            return Err(Error::Input(format!(
                "{}: no image tagged `{tag}`",
                crate::paths::show(&self.dir.join("index.json"))
            )));
        };
        if oci::is_index_type(&desc.media_type) {
            let platforms = self
                .manifest_tree(&desc)
                .ok()
                .and_then(|t| t.into_iter().last())
                .and_then(|top| match top.kind {
                    ManifestKind::Index(ix) => Some(
                        ix.manifests
                            .iter()
                            .map(|e| {
                                let p = e
                                    .platform
                                    .as_ref()
                                    .map_or_else(|| "unknown".to_owned(), ToString::to_string);
                                format!("{p} {}", e.descriptor.digest)
                            })
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                    ManifestKind::Image(_) => None,
                })
                .unwrap_or_default();
            return Err(Error::Input(format!(
                "{}: `{tag}` is a multi-platform image index ({}), not one image; name one \
                 platform's manifest by digest (REPO@sha256:…): {platforms}",
                crate::paths::show(&self.dir.join("index.json")),
                desc.media_type
            )));
        }
        if desc.media_type != media::OCI_MANIFEST && desc.media_type != media::DOCKER_MANIFEST {
            return Err(Error::Input(format!(
                "{}: `{tag}` is a {}, not an image manifest",
                crate::paths::show(&self.dir.join("index.json")),
                desc.media_type
            )));
        }
        let manifest_bytes = self.read_blob(&desc)?;
        let manifest: Manifest = serde_json::from_slice(&manifest_bytes).map_err(|e| {
            Error::Input(format!(
                "{}: not an image manifest: {e}",
                crate::paths::show(&self.blob_path(&desc.digest))
            ))
        })?;
        let config_bytes = self.read_blob(&manifest.config)?;
        let config: ImageConfig = serde_json::from_slice(&config_bytes).map_err(|e| {
            Error::Input(format!(
                "{}: not an image config: {e}",
                crate::paths::show(&self.blob_path(&manifest.config.digest))
            ))
        })?;
        let layers = manifest
            .layers
            .iter()
            .map(|l| self.read_blob(l))
            .collect::<Result<Vec<_>>>()?;
        Ok(ReadImage {
            descriptor: desc,
            manifest_bytes,
            manifest,
            config_bytes,
            config,
            layers,
        })
    }
}

/// Replaces `path` with `bytes` atomically (temporary file in the same directory, then
/// rename), readable by everyone (0644), like the files `skopeo` and `docker save` write.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::fsutil::write_atomic_with_mode(path, bytes, 0o644)
}

/// Replaces the entry tagged `tag` in place, or appends one.
fn set_tag(index: &mut Index, tag: &str, mut desc: Descriptor) {
    desc.annotations = BTreeMap::from([(annotation::REF_NAME.to_owned(), tag.to_owned())]);
    match index
        .manifests
        .iter_mut()
        .find(|d| d.annotations.get(annotation::REF_NAME).map(String::as_str) == Some(tag))
    {
        Some(slot) => *slot = desc,
        None => index.manifests.push(desc),
    }
}

/// An index with no manifests.
pub fn empty_index() -> Index {
    Index {
        schema_version: 2,
        media_type: Some(media::OCI_INDEX.into()),
        manifests: Vec::new(),
        annotations: BTreeMap::new(),
    }
}

/// Refuses tags that are not `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}` (the distribution-spec tag
/// grammar) — except that a full reference (`registry/repo:tag`) is allowed too, since
/// `org.opencontainers.image.ref.name` permits it.
pub fn check_tag(tag: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || "._-/:@".contains(c);
    let first_ok = tag
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    if tag.is_empty() || tag.len() > 255 || !first_ok || !tag.chars().all(ok_char) {
        return Err(Error::Input(format!(
            "`{tag}` is not a valid tag: use letters, digits, `_`, `.`, `-` (first a letter, \
             digit or `_`), at most 128 characters; SemVer build metadata `+x` becomes `_x`"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        assert!(check_tag("0.3.0").is_ok());
        assert!(check_tag("v1.0.0_build.1").is_ok());
        assert!(check_tag("quay.io/x/y:1.0").is_ok());
        assert!(check_tag("").is_err());
        assert!(check_tag("-x").is_err());
        assert!(check_tag("1.0+b").is_err());
        assert!(check_tag("a b").is_err());
    }
}

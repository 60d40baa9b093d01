//! The one layer of a bundle image: a byte-reproducible tar of `manifests/`, `metadata/` and
//! `tests/scorecard/`, gzip-compressed with a pinned implementation and level.
//!
//! Rules (each one changes a digest if not fixed):
//! - entries sorted byte-wise by path (without the trailing `/`, so a directory comes right
//!   before its content), with an explicit entry for every directory, parents included;
//! - USTAR headers only; a path longer than 100 bytes gets a PAX extended header (`x`, named
//!   `././@PaxHeader`, one `path` record) and its first 100 bytes in the USTAR name field; the
//!   USTAR `prefix` field is never used;
//! - mtime = the caller's epoch (0 unless `SOURCE_DATE_EPOCH`), uid/gid 0, empty uname/gname,
//!   mode 0644 for files and 0755 for directories, no device numbers;
//! - symlinks, hard links, devices, FIFOs and sockets are refused;
//! - the archive ends with the two zero blocks and no record padding;
//! - gzip: flate2 with the zlib-rs backend, level 6, header mtime 0, no file name, OS byte 255.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::{Compression, GzBuilder};

use super::oci::Digest;
use crate::error::{Error, Result};

/// The gzip level of every layer.
pub const GZIP_LEVEL: u32 = 6;
/// The gzip header OS byte of every layer (255 = unknown, what Go and Python write too).
pub const GZIP_OS: u8 = 255;
/// Mode of every regular file in a layer.
pub const FILE_MODE: u32 = 0o644;
/// Mode of every directory in a layer.
pub const DIR_MODE: u32 = 0o755;

/// One entry of the layer, before it is written.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Path inside the layer, `/`-separated, no leading `/` or `./`, no trailing `/`.
    pub path: String,
    /// Where the content comes from (`None` for a directory).
    pub source: Option<PathBuf>,
}

impl Entry {
    /// Whether this is a directory entry.
    pub fn is_dir(&self) -> bool {
        self.source.is_none()
    }

    /// The name as it appears in the tar (`dir/` for directories).
    pub fn tar_name(&self) -> String {
        if self.is_dir() {
            format!("{}/", self.path)
        } else {
            self.path.clone()
        }
    }
}

/// A finished layer.
#[derive(Debug, Clone)]
pub struct Layer {
    /// The gzip-compressed tar (the blob).
    pub gzip: Vec<u8>,
    /// sha256 of `gzip`: the layer's digest.
    pub digest: Digest,
    /// sha256 of the uncompressed tar: the config's `rootfs.diff_ids` entry.
    pub diff_id: Digest,
    /// Size of the uncompressed tar.
    pub tar_size: u64,
    /// The entries in archive order (names as in the tar).
    pub entries: Vec<String>,
}

/// Collects the entries of `roots` (relative directory paths such as `manifests` or
/// `tests/scorecard`) under `base`, with their parent directories, sorted.
pub fn collect(base: &Path, roots: &[&str]) -> Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut seen_dirs = std::collections::BTreeSet::new();
    for root in roots {
        // Parent directories of the root itself (`tests` for `tests/scorecard`).
        let mut acc = String::new();
        for comp in root.split('/') {
            if !acc.is_empty() {
                acc.push('/');
            }
            acc.push_str(comp);
            if seen_dirs.insert(acc.clone()) {
                entries.push(Entry {
                    path: acc.clone(),
                    source: None,
                });
            }
        }
        let dir = base.join(root);
        walk(&dir, root, &mut entries)?;
    }
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    entries.dedup_by(|a, b| a.path == b.path);
    Ok(entries)
}

fn walk(dir: &Path, rel: &str, out: &mut Vec<Entry>) -> Result<()> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for e in rd {
        let e = e.map_err(|e| Error::io(dir, e))?;
        let path = e.path();
        let name = e.file_name();
        let Some(name) = name.to_str() else {
            return Err(Error::Input(format!(
                "{}: file name is not UTF-8; rename it",
                crate::paths::show(&path)
            )));
        };
        let child = format!("{rel}/{name}");
        let meta = std::fs::symlink_metadata(&path).map_err(|e| Error::io(&path, e))?;
        let ft = meta.file_type();
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
            let what = if ft.is_symlink() {
                "a symbolic link"
            } else {
                "not a regular file or directory (device, FIFO or socket)"
            };
            return Err(Error::Input(format!(
                "{}: {what}; a bundle image holds only regular files and directories — \
                 replace it with a copy of its target",
                crate::paths::show(&path)
            )));
        }
    }
    Ok(())
}

/// Writes the entries as a tar, then gzips it.
pub fn build(entries: &[Entry], mtime: u64) -> Result<Layer> {
    let tar = write_tar(entries, mtime)?;
    let diff_id = Digest::of(&tar);
    let gzip = gzip(&tar)?;
    Ok(Layer {
        digest: Digest::of(&gzip),
        diff_id,
        tar_size: tar.len() as u64,
        gzip,
        entries: entries.iter().map(Entry::tar_name).collect(),
    })
}

/// Gzips `data` the way every opship blob is gzipped.
pub fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    let mut enc = GzBuilder::new().mtime(0).operating_system(GZIP_OS).write(
        Vec::with_capacity(data.len() / 4 + 64),
        Compression::new(GZIP_LEVEL),
    );
    enc.write_all(data)
        .and_then(|()| enc.finish())
        .map_err(|e| Error::Internal(format!("gzip: {e}")))
}

/// Writes the deterministic tar of `entries` (in the order given).
pub fn write_tar(entries: &[Entry], mtime: u64) -> Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        match &e.source {
            None => append(
                &mut b,
                &e.tar_name(),
                DIR_MODE,
                mtime,
                &[],
                Path::new(&e.path),
            )?,
            Some(src) => {
                // Bounded even when a file grows after it was checked.
                let data = crate::input::read(src, crate::input::Kind::Catalog)?;
                append(&mut b, &e.path, FILE_MODE, mtime, &data, src)?;
            }
        }
    }
    b.into_inner()
        .map_err(|e| Error::Internal(format!("tar: {e}")))
}

/// Appends one regular file (`mode` 0644) or directory (`mode` 0755, `name` ending in `/`)
/// with a USTAR header, preceded by a PAX header when the name exceeds 100 bytes.
pub(crate) fn append(
    b: &mut tar::Builder<Vec<u8>>,
    name: &str,
    mode: u32,
    mtime: u64,
    data: &[u8],
    origin: &Path,
) -> Result<()> {
    let is_dir = name.ends_with('/');
    let bytes = name.as_bytes();
    let tar_err =
        |e: std::io::Error| Error::Input(format!("{}: tar: {e}", crate::paths::show(origin)));
    if bytes.contains(&0) {
        return Err(Error::Input(format!(
            "{}: file name contains a NUL byte",
            crate::paths::show(origin)
        )));
    }
    if bytes.len() > 100 {
        let record = pax_record("path", name);
        let mut h = new_header(b"././@PaxHeader", 0o644, mtime);
        h.set_entry_type(tar::EntryType::XHeader);
        h.set_size(record.len() as u64);
        h.set_cksum();
        b.append(&h, record.as_slice()).map_err(tar_err)?;
    }
    let mut h = new_header(&bytes[..bytes.len().min(100)], mode, mtime);
    if is_dir {
        h.set_entry_type(tar::EntryType::Directory);
        h.set_size(0);
    } else {
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(data.len() as u64);
    }
    h.set_cksum();
    b.append(&h, data).map_err(tar_err)
}

fn new_header(name: &[u8], mode: u32, mtime: u64) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    if let Some(u) = h.as_ustar_mut() {
        u.name[..name.len()].copy_from_slice(name);
    }
    h.set_mode(mode);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(mtime);
    h
}

/// One PAX record: `"<len> <key>=<value>\n"`, where `<len>` counts the whole record.
fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = key.len() + value.len() + 3; // ' ', '=', '\n'
    let mut len = body + 1;
    while len != body + len.to_string().len() {
        len = body + len.to_string().len();
    }
    format!("{len} {key}={value}\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_record_lengths() {
        for n in [1, 5, 89, 90, 95, 96, 97, 990, 995, 996] {
            let v = "x".repeat(n);
            let r = pax_record("path", &v);
            let (len, _) = std::str::from_utf8(&r).unwrap().split_once(' ').unwrap();
            assert_eq!(len.parse::<usize>().unwrap(), r.len(), "{n}");
        }
    }

    #[test]
    fn long_names_round_trip_through_the_tar_reader() {
        let dir = tempfile::tempdir().unwrap();
        let long = "m".repeat(150);
        std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
        std::fs::write(dir.path().join("manifests").join(&long), b"x: 1\n").unwrap();
        let entries = collect(dir.path(), &["manifests"]).unwrap();
        let tar = write_tar(&entries, 0).unwrap();
        let mut a = tar::Archive::new(tar.as_slice());
        let names: Vec<String> = a
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["manifests/".to_string(), format!("manifests/{long}")]
        );
        assert_eq!(tar.len() % 512, 0);
    }

    #[test]
    fn gzip_header_is_fixed() {
        let g = gzip(b"hello").unwrap();
        assert_eq!(&g[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
    }
}

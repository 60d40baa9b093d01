//! Reading the files opship is given: regular files only (never a FIFO, a device or a
//! directory), never more than a size budget for the kind of file, and, for files found inside a
//! tree, never through a symlink that leads out of that tree. Every command reads through here,
//! so `/dev/zero` as a key or a FIFO in a catalog is a clear error instead of a hang.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What a file is for; each kind has its own size budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `opship.yaml` and other small configuration files (categories, scenarios, deployment
    /// configs).
    Config,
    /// A Kubernetes manifest, a CSV, a kustomize stream: CRDs of several MiB are normal.
    Manifest,
    /// A file of a file-based catalog (one package's `catalog.json` may be large).
    Catalog,
    /// A catalog template (basic or semver).
    Template,
    /// A cosign key or public key (PEM).
    Key,
    /// A password file or a credentials file.
    Secret,
    /// An attestation predicate: signed whole, base64-encoded in a DSSE envelope, so a few
    /// copies of it are in memory at once.
    Predicate,
    /// A chart archive or another file read whole.
    Blob,
}

impl Kind {
    /// The most bytes a file of this kind may hold.
    pub fn budget(self) -> u64 {
        const MIB: u64 = 1024 * 1024;
        match self {
            Kind::Config => 4 * MIB,
            Kind::Manifest => 64 * MIB,
            Kind::Catalog => 256 * MIB,
            Kind::Template => 64 * MIB,
            Kind::Key => 64 * 1024,
            Kind::Secret => 64 * 1024,
            Kind::Predicate => 48 * MIB,
            Kind::Blob => 512 * MIB,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Config => "configuration file",
            Kind::Manifest => "manifest",
            Kind::Catalog => "catalog file",
            Kind::Template => "catalog template",
            Kind::Key => "key file",
            Kind::Secret => "password or credentials file",
            Kind::Predicate => "attestation predicate",
            Kind::Blob => "file",
        }
    }
}

fn refuse(path: &Path, message: String) -> Error {
    Error::Input(format!("{}: {message}", crate::paths::show(path)))
}

/// Checks that `path` (after following symlinks) is a regular file within the budget of
/// `kind`, without opening it: opening a FIFO would block.
pub fn check(path: &Path, kind: Kind) -> Result<std::fs::Metadata> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_dir() {
        return Err(refuse(
            path,
            format!("is a directory, not a {}", kind.what()),
        ));
    }
    if !meta.is_file() {
        return Err(refuse(
            path,
            format!(
                "is not a regular file (a FIFO, socket or device); a {} must be a regular file",
                kind.what()
            ),
        ));
    }
    if meta.len() > kind.budget() {
        return Err(too_big(path, kind));
    }
    Ok(meta)
}

fn too_big(path: &Path, kind: Kind) -> Error {
    refuse(
        path,
        format!(
            "is larger than {} bytes, the limit for a {}; not read",
            kind.budget(),
            kind.what()
        ),
    )
}

/// Reads a whole file of `kind`: a regular file, at most its budget (also when it grows while
/// being read).
pub fn read(path: &Path, kind: Kind) -> Result<Vec<u8>> {
    check(path, kind)?;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(kind.budget() + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > kind.budget() {
        return Err(too_big(path, kind));
    }
    Ok(bytes)
}

/// [`read`], as UTF-8 text.
pub fn read_string(path: &Path, kind: Kind) -> Result<String> {
    let bytes = read(path, kind)?;
    String::from_utf8(bytes).map_err(|e| {
        refuse(
            path,
            format!(
                "is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Like [`read`] for a file found while walking the tree `root`: a symlink is followed only when
/// its target stays inside `root`.
pub fn read_in_tree(root: &Path, path: &Path, kind: Kind) -> Result<Vec<u8>> {
    check_in_tree(root, path)?;
    read(path, kind)
}

/// [`read_in_tree`], as UTF-8 text.
pub fn read_string_in_tree(root: &Path, path: &Path, kind: Kind) -> Result<String> {
    check_in_tree(root, path)?;
    read_string(path, kind)
}

/// Refuses `path` when it is a symlink (or lies under one) whose target is outside `root`.
/// Returns the resolved path.
pub fn check_in_tree(root: &Path, path: &Path) -> Result<PathBuf> {
    let root_real = std::fs::canonicalize(root).map_err(|e| Error::io(root, e))?;
    let real = std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
    if !real.starts_with(&root_real) {
        return Err(refuse(
            path,
            format!(
                "is a symlink that leads out of {}; not followed",
                crate::paths::show(root)
            ),
        ));
    }
    Ok(real)
}

/// Reads standard input, at most the budget of `kind`.
pub fn read_stdin(kind: Kind) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(kind.budget() + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("-", e))?;
    if bytes.len() as u64 > kind.budget() {
        return Err(too_big(Path::new("(standard input)"), kind));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_devices_fifos_directories_and_big_files() {
        let d = tempfile::tempdir().unwrap();
        let e = read(Path::new("/dev/zero"), Kind::Key).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = read(d.path(), Kind::Config).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let big = d.path().join("big");
        std::fs::write(&big, vec![b'a'; 70 * 1024]).unwrap();
        let e = read(&big, Kind::Key).unwrap_err();
        assert!(e.to_string().contains("larger than 65536 bytes"), "{e}");
        assert_eq!(read(&big, Kind::Config).unwrap().len(), 70 * 1024);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = read(&fifo, Kind::Catalog).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_must_stay_in_their_tree() {
        let d = tempfile::tempdir().unwrap();
        let tree = d.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        std::fs::write(d.path().join("secret"), "outside").unwrap();
        std::fs::write(tree.join("inside"), "inside").unwrap();
        std::os::unix::fs::symlink("../secret", tree.join("out")).unwrap();
        std::os::unix::fs::symlink("inside", tree.join("in")).unwrap();
        assert_eq!(
            read_in_tree(&tree, &tree.join("in"), Kind::Catalog).unwrap(),
            b"inside"
        );
        let e = read_in_tree(&tree, &tree.join("out"), Kind::Catalog).unwrap_err();
        assert!(e.to_string().contains("leads out of"), "{e}");
        assert!(!e.to_string().contains("outside"), "{e}");
    }
}

//! File writes that never leave a half-written file behind: write a temporary file next to
//! the target, then rename it into place.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Replaces `path` with `bytes` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write(path, bytes, None)
}

/// Replaces `path` with `bytes` atomically, the file getting permission bits `mode` on Unix
/// (0644 for image layout files as skopeo writes them, 0600 for credentials).
pub fn write_atomic_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    write(path, bytes, Some(mode))
}

fn write(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".opship-");
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut tmp = builder
        .tempfile_in(parent)
        .map_err(|e| Error::io(path, e))?;
    // The mode given at creation is narrowed by the umask; the caller asked for exactly this.
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| Error::io(path, e))?;
    }
    tmp.write_all(bytes).map_err(|e| Error::io(path, e))?;
    tmp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

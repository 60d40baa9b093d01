//! Directories opship writes as a whole (a generated bundle, a rendered chart or overlay): which
//! existing directory it may replace, the atomic exchange of old and new content, and the
//! leftovers of runs that were killed half-way.
//!
//! A directory is replaced only when it is absent, empty, or holds nothing but what opship
//! generates there; anything else (a project, a file, a symlink, the current directory) is
//! refused with the reason, so a wrong `--output-dir` never deletes a user's work.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Files of a generated directory, keyed by path relative to it (`/`-separated).
pub type Files = BTreeMap<String, Vec<u8>>;

/// What kind of directory is written, which decides what an existing one may hold and still be
/// replaced without `--force`.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Named in messages ("bundle", "chart").
    pub what: &'static str,
    /// Whether a file at this relative path is something opship generates in such a directory.
    pub generated: fn(&str) -> bool,
}

/// Replacing existing content that does not look generated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Overwrite {
    /// Refuse (the default).
    #[default]
    Refuse,
    /// `--force`: replace a directory whatever it holds. Still never the current directory, an
    /// ancestor of it, or a symlink.
    Force,
}

/// The prefix of the temporary sibling opship creates next to `<base>`: the new content, and
/// (where the filesystem cannot exchange two directories) the old one while it is set aside.
fn temp_prefix(base: &str, purpose: &str) -> String {
    format!(".{base}{}{purpose}", crate::fsutil::TEMP_MARK)
}

/// Checks that `dir` may be replaced by `files` of kind `target`, without writing anything.
pub fn check(dir: &Path, files: &Files, target: Target, overwrite: Overwrite) -> Result<()> {
    let refuse = |why: String| {
        Error::Input(format!(
            "{}: {why}; refusing to replace it with the {}",
            crate::paths::show(dir),
            target.what
        ))
    };
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    if meta.file_type().is_symlink() {
        return Err(refuse(
            "is a symlink (opship never writes through one; give the directory it points to)"
                .into(),
        ));
    }
    if !meta.is_dir() {
        return match overwrite {
            Overwrite::Force => Ok(()),
            Overwrite::Refuse => Err(refuse(
                "exists and is not a directory (use --force to replace it)".into(),
            )),
        };
    }
    let real = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
    if let Ok(cwd) = std::env::current_dir().and_then(std::fs::canonicalize)
        && cwd.starts_with(&real)
    {
        return Err(refuse(
            "is the current directory or one of its parents (write the output into a subdirectory)"
                .into(),
        ));
    }
    if overwrite == Overwrite::Force {
        return Ok(());
    }
    let mut foreign = Vec::new();
    walk(dir, dir, &mut |rel, is_dir| {
        if !is_dir && !files.contains_key(rel) && !(target.generated)(rel) {
            foreign.push(rel.to_owned());
        }
        if is_dir && !(target.generated)(&format!("{rel}/")) {
            // A directory opship never makes: list it once, not every file under it.
            foreign.push(format!("{rel}/"));
            return false;
        }
        true
    })?;
    if !foreign.is_empty() {
        let shown: Vec<_> = foreign.iter().take(5).map(String::as_str).collect();
        return Err(refuse(format!(
            "holds files opship does not generate ({}{}) (use --force to replace it anyway)",
            shown.join(", "),
            if foreign.len() > 5 { ", …" } else { "" }
        )));
    }
    Ok(())
}

/// Walks `dir`, calling `visit(relative path, is_dir)`; a directory is entered when `visit`
/// returns true. Symlinks are reported as files and never followed.
fn walk(root: &Path, dir: &Path, visit: &mut dyn FnMut(&str, bool) -> bool) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let is_dir = e.file_type().map_err(|err| Error::io(&path, err))?.is_dir();
        if visit(&rel, is_dir) && is_dir {
            walk(root, &path, visit)?;
        }
    }
    Ok(())
}

/// Writes `files` as the whole content of `dir` once [`check`] allows it: into a temporary
/// sibling first, which then takes `dir`'s place in one atomic exchange (Linux
/// `renameat2(RENAME_EXCHANGE)`; two renames elsewhere). On any error `dir` is as it was; a run
/// killed at any moment leaves `dir` old or new, and a temporary sibling that the next run
/// removes.
pub fn replace_dir(dir: &Path, files: &Files, target: Target, overwrite: Overwrite) -> Result<()> {
    check(dir, files, target, overwrite)?;
    for rel in files.keys() {
        if rel.is_empty()
            || rel.starts_with('/')
            || rel
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(Error::Internal(format!(
                "generated file name `{rel}` is not relative"
            )));
        }
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // The parent may be a temporary itself (a release's staging directory).
    crate::fsutil::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
    let base = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            Error::Input(format!("{}: not a directory name", crate::paths::show(dir)))
        })?;
    // Two opship runs writing next to each other must not remove each other's temporaries.
    // A parent that is itself a temporary (a release's staging directory) is this run's own,
    // and already locked by it through `fsutil::TempDir`: a second lock there would wait for
    // ourselves.
    let private = parent.file_name().is_some_and(crate::fsutil::is_temporary);
    let lock = File::open(&parent).map_err(|e| Error::io(&parent, e))?;
    if !private {
        lock.lock().map_err(|e| Error::io(&parent, e))?;
    }
    remove_leftovers(&parent, &base)?;

    let tmp = crate::fsutil::temp_dir_in(&parent, &temp_prefix(&base, "new-"))
        .map_err(|e| Error::io(&parent, e))?;
    // Through `fsutil`'s creations: a signal handled meanwhile removes `tmp` for good.
    for (rel, bytes) in files {
        let path = tmp.path().join(rel);
        if let Some(p) = path.parent() {
            crate::fsutil::create_dir_all(p).map_err(|e| Error::io(dir.join(rel), e))?;
        }
        crate::fsutil::write_in_temp(&path, bytes).map_err(|e| Error::io(dir.join(rel), e))?;
    }
    // tempfile makes the directory 0700; a generated directory is as readable as any other.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::io(tmp.path(), e))?;
    }
    // Not while a signal is handled: the handler may be removing `tmp`.
    let renamed = crate::cleanup::commit(|| match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => exchange(tmp.path(), dir).map(|()| false),
        Ok(_) => {
            // A file, replaced under --force.
            std::fs::remove_file(dir).map_err(|e| Error::io(dir, e))?;
            std::fs::rename(tmp.path(), dir).map_err(|e| Error::io(dir, e))?;
            Ok(true)
        }
        Err(_) => {
            std::fs::rename(tmp.path(), dir).map_err(|e| Error::io(dir, e))?;
            Ok(true)
        }
    })?;
    if renamed {
        let _ = tmp.keep();
    }
    // After an exchange `tmp` holds the previous content and is removed when dropped.
    Ok(())
}

/// Swaps the directories `new` and `dir`.
fn exchange(new: &Path, dir: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        match renameat_with(CWD, new, CWD, dir, RenameFlags::EXCHANGE) {
            Ok(()) => return Ok(()),
            // Filesystems without the exchange (some network and overlay filesystems) fall
            // back to two renames.
            Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {}
            Err(e) => return Err(Error::io(dir, e.into())),
        }
    }
    // `.<base>.opship-old-XXXXXX`, the same random part as the new content's: a temporary
    // by its name, which a later run removes if this one is killed in between. The old
    // content is locked while it is aside, so a concurrent sweep leaves it alone.
    let name = new.file_name().map(|n| n.to_string_lossy().into_owned());
    let aside = match name.as_deref().and_then(|n| n.rsplit_once("new-")) {
        Some((head, random)) => new.with_file_name(format!("{head}old-{random}")),
        None => {
            return Err(Error::Internal(format!(
                "{}: not a temporary",
                crate::paths::show(new)
            )));
        }
    };
    let held = File::open(dir).map_err(|e| Error::io(dir, e))?;
    let _ = held.try_lock();
    std::fs::rename(dir, &aside).map_err(|e| Error::io(dir, e))?;
    if let Err(e) = std::fs::rename(new, dir) {
        let _ = std::fs::rename(&aside, dir);
        return Err(Error::io(dir, e));
    }
    std::fs::rename(&aside, new).map_err(|e| Error::io(new, e))
}

/// Removes the temporaries that earlier (killed) runs left next to `<parent>/<base>`: names
/// of the exact shape `fsutil::is_temporary` knows with this output's prefix, nothing else
/// (a user's `.<base>.notes` stays). The caller holds the lock on `parent`.
fn remove_leftovers(parent: &Path, base: &str) -> Result<()> {
    let ours = [temp_prefix(base, "new-"), temp_prefix(base, "old-")];
    for e in std::fs::read_dir(parent).map_err(|e| Error::io(parent, e))? {
        let e = e.map_err(|e| Error::io(parent, e))?;
        let name = e.file_name();
        if !crate::fsutil::is_temporary(&name) {
            continue;
        }
        let name = name.to_string_lossy();
        if ours.iter().any(|p| name.starts_with(p.as_str())) {
            let path = e.path();
            tracing::info!(
                "removing {} left by an interrupted run",
                crate::paths::show(&path)
            );
            let r = if e.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            r.map_err(|err| Error::io(&path, err))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Target = Target {
        what: "bundle",
        generated: |rel| rel.starts_with("manifests/") || rel == "bundle.Dockerfile",
    };

    fn files(pairs: &[(&str, &str)]) -> Files {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn replaces_generated_and_refuses_foreign() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        replace_dir(
            &out,
            &files(&[("manifests/a.yaml", "a")]),
            T,
            Overwrite::Refuse,
        )
        .unwrap();
        replace_dir(
            &out,
            &files(&[("manifests/b.yaml", "b")]),
            T,
            Overwrite::Refuse,
        )
        .unwrap();
        assert!(!out.join("manifests/a.yaml").exists());
        assert_eq!(std::fs::read(out.join("manifests/b.yaml")).unwrap(), b"b");
        std::fs::write(out.join("README.md"), "mine").unwrap();
        let e = replace_dir(
            &out,
            &files(&[("manifests/c.yaml", "c")]),
            T,
            Overwrite::Refuse,
        )
        .unwrap_err();
        assert!(e.to_string().contains("README.md"), "{e}");
        assert_eq!(std::fs::read(out.join("README.md")).unwrap(), b"mine");
        replace_dir(
            &out,
            &files(&[("manifests/c.yaml", "c")]),
            T,
            Overwrite::Force,
        )
        .unwrap();
        assert!(!out.join("README.md").exists());
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporaries left");
    }

    #[test]
    fn never_a_file_or_symlink_without_force() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("file");
        std::fs::write(&file, "data").unwrap();
        assert!(replace_dir(&file, &files(&[("manifests/a", "a")]), T, Overwrite::Refuse).is_err());
        assert_eq!(std::fs::read(&file).unwrap(), b"data");
        #[cfg(unix)]
        {
            let target = d.path().join("real");
            std::fs::create_dir(&target).unwrap();
            let link = d.path().join("link");
            std::os::unix::fs::symlink(&target, &link).unwrap();
            let e = replace_dir(&link, &files(&[("manifests/a", "a")]), T, Overwrite::Force)
                .unwrap_err();
            assert!(e.to_string().contains("symlink"), "{e}");
        }
    }

    #[test]
    fn leftovers_are_removed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".out.opship-new-x1Y2z3/manifests")).unwrap();
        std::fs::create_dir_all(d.path().join(".out.opship-old-Q9w8E7")).unwrap();
        // Names a user chose that merely look like a temporary: kept.
        std::fs::create_dir_all(d.path().join(".out.new-y")).unwrap();
        std::fs::write(d.path().join(".out.opship-new-notes.txt"), "mine").unwrap();
        replace_dir(
            &d.path().join("out"),
            &files(&[("manifests/a", "a")]),
            T,
            Overwrite::Refuse,
        )
        .unwrap();
        let mut names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, [".out.new-y", ".out.opship-new-notes.txt", "out"]);
    }
}

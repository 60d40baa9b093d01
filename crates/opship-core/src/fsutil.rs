//! File writes that never leave a half-written file behind (a temporary file next to the
//! target, then a rename), and the temporaries themselves: every one is named by
//! [`is_temporary`]'s one shape (`.opship-` or `.<stem>.opship-`, a purpose from a closed list,
//! six random letters or digits), registered with [`crate::cleanup`] so a signal removes it,
//! and holds a file lock while it lives, so a later run can tell the leftovers of a killed run
//! (unlocked) from another run's work in progress (locked) and [`sweep`] them.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::cleanup::{self, PathGuard};
use crate::error::{Error, Result};

/// The part every temporary's name has (`.opship-…`, `.<stem>.opship-…`).
pub const TEMP_MARK: &str = ".opship-";

/// How many random characters (ASCII letters and digits) end a temporary's name.
pub const TEMP_RANDOM_LEN: usize = 6;

/// What may follow [`TEMP_MARK`] before the random part: nothing (an atomic write's file), or
/// the purpose of a temporary directory. A closed list, so that no name a user chose by
/// chance (`.x.opship-1.yaml`, `.notes.opship-draft`) is taken for opship's.
const TEMP_PURPOSES: [&str; 9] = [
    "",
    "stage-",
    "render-",
    "unpack-",
    "kustomize-",
    "make-",
    "pull-",
    "new-",
    "old-",
];

/// Whether temporaries may be created with `prefix`: `.opship-` or `.<stem>.opship-` (a stem
/// without `/`), then one of the purposes (`stage-`, `new-`…) or nothing.
pub fn is_temp_prefix(prefix: &str) -> bool {
    TEMP_PURPOSES.iter().any(|purpose| {
        let Some(head) = prefix
            .strip_suffix(purpose)
            .and_then(|h| h.strip_suffix(TEMP_MARK))
        else {
            return false;
        };
        head.is_empty()
            || head
                .strip_prefix('.')
                .is_some_and(|stem| !stem.is_empty() && !stem.contains('/'))
    })
}

/// Whether `name` is a temporary opship makes: a prefix [`is_temp_prefix`] accepts followed by
/// exactly [`TEMP_RANDOM_LEN`] ASCII letters or digits, the shape of every name
/// [`temp_file_in`] and [`temp_dir_in`] create. Nothing else is: not every hidden file, nor
/// every name holding `.opship-`. [`sweep`] removes those no live run holds; readers that must
/// see what opm sees refuse them ([`leftover_message`]) rather than skip them.
pub fn is_temporary(name: impl AsRef<std::ffi::OsStr>) -> bool {
    let Some(name) = name.as_ref().to_str() else {
        return false;
    };
    let Some(cut) = name.len().checked_sub(TEMP_RANDOM_LEN) else {
        return false;
    };
    if !name.is_char_boundary(cut) {
        return false;
    }
    let (prefix, random) = name.split_at(cut);
    random.bytes().all(|b| b.is_ascii_alphanumeric()) && is_temp_prefix(prefix)
}

/// Whether a live process holds the temporary at `path` (its lock is taken): the work in
/// progress of another run, as opposed to what a killed run left.
pub fn is_held(path: &Path) -> bool {
    match File::open(path) {
        Ok(f) => f.try_lock().is_err() && still_there(path, &f),
        Err(_) => false,
    }
}

/// Why the temporary at `path` found inside a tree that opm reads as a whole (a catalog
/// directory) cannot be read past: opm would read it as content, so skipping it would judge
/// another catalog than the one served.
pub fn leftover_message(path: &Path) -> String {
    let shown = crate::paths::show(path);
    if is_held(path) {
        format!(
            "{shown}: a temporary of an opship run still writing here (opm would read it as \
             content); retry when that run has finished"
        )
    } else {
        format!(
            "{shown}: a temporary left by an interrupted opship run (opm would read it as \
             content); remove it, or re-run the command that was interrupted (`opship catalog \
             add` removes its own)"
        )
    }
}

/// Replaces `path` with `bytes` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write(path, bytes, None)
}

/// Replaces `path` with `bytes` atomically, the file getting permission bits `mode` on Unix
/// (0644 for image layout files as skopeo writes them, 0600 for credentials).
pub fn write_atomic_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    write(path, bytes, Some(mode))
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn write(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let parent = parent_of(path);
    sweep_once(parent);
    let mut tmp = temp_file_in(parent, TEMP_MARK, mode).map_err(|e| Error::io(path, e))?;
    tmp.file.write_all(bytes).map_err(|e| Error::io(path, e))?;
    tmp.file
        .as_file()
        .sync_all()
        .map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e))?;
    Ok(())
}

/// A temporary file: locked, registered for removal on a signal, removed when dropped unless
/// persisted.
#[derive(Debug)]
pub struct TempFile {
    file: tempfile::NamedTempFile,
    _guard: PathGuard,
}

impl TempFile {
    /// Its path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The open file.
    pub fn as_file(&self) -> &File {
        self.file.as_file()
    }

    /// Renames it to `to` (replacing what is there).
    pub fn persist(self, to: &Path) -> std::io::Result<()> {
        cleanup::commit(|| self.file.persist(to)).map_err(|e| e.error)?;
        Ok(())
    }
}

impl Write for TempFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Whether `path` still names the file or directory `held` is open on: [`sweep`] may have
/// removed it between its creation and its lock.
fn still_there(path: &Path, held: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::symlink_metadata(path), held.metadata()) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = held;
        path.exists()
    }
}

/// Refuses a prefix that would make names [`is_temporary`] does not recognise (their
/// leftovers would never be swept, and readers would take them for content).
fn check_prefix(prefix: &str) -> std::io::Result<()> {
    if is_temp_prefix(prefix) {
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{prefix}` is not the prefix of an opship temporary"),
        ))
    }
}

/// Creates a temporary file in `dir` named `prefix` (which [`is_temp_prefix`] accepts) and
/// [`TEMP_RANDOM_LEN`] random characters, with permission bits `mode` exactly (whatever the
/// umask).
pub fn temp_file_in(dir: &Path, prefix: &str, mode: Option<u32>) -> std::io::Result<TempFile> {
    check_prefix(prefix)?;
    loop {
        let (file, guard) = cleanup::create_registered(
            || {
                let mut builder = tempfile::Builder::new();
                builder.prefix(prefix).rand_bytes(TEMP_RANDOM_LEN);
                #[cfg(unix)]
                if let Some(mode) = mode {
                    use std::os::unix::fs::PermissionsExt;
                    builder.permissions(std::fs::Permissions::from_mode(mode));
                }
                builder.tempfile_in(dir)
            },
            |f| f.path(),
        )?;
        file.as_file().lock()?;
        if !still_there(file.path(), file.as_file()) {
            continue;
        }
        #[cfg(unix)]
        if let Some(mode) = mode {
            use std::os::unix::fs::PermissionsExt;
            file.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        return Ok(TempFile {
            file,
            _guard: guard,
        });
    }
}

/// A temporary directory: locked, registered for removal on a signal, removed with its
/// content when dropped unless kept.
#[derive(Debug)]
pub struct TempDir {
    dir: Option<tempfile::TempDir>,
    _lock: File,
    _guard: PathGuard,
}

impl TempDir {
    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }

    /// Leaves the directory where it is (it has been renamed into place).
    pub fn keep(mut self) -> PathBuf {
        self.dir.take().map(|d| d.keep()).unwrap_or_default()
    }
}

/// Creates a temporary directory in `parent` named `prefix` (which [`is_temp_prefix`]
/// accepts) and [`TEMP_RANDOM_LEN`] random characters. Leftovers of killed runs in `parent`
/// are removed first (once per process).
pub fn temp_dir_in(parent: &Path, prefix: &str) -> std::io::Result<TempDir> {
    check_prefix(prefix)?;
    sweep_once(parent);
    loop {
        let (dir, guard) = cleanup::create_registered(
            || {
                tempfile::Builder::new()
                    .prefix(prefix)
                    .rand_bytes(TEMP_RANDOM_LEN)
                    .tempdir_in(parent)
            },
            |d| d.path(),
        )?;
        let Ok(lock) = File::open(dir.path()) else {
            continue;
        };
        lock.lock()?;
        if !still_there(dir.path(), &lock) {
            let _ = dir.keep();
            continue;
        }
        return Ok(TempDir {
            dir: Some(dir),
            _lock: lock,
            _guard: guard,
        });
    }
}

/// A temporary directory in the system's temporary directory (`TMPDIR`, else `/tmp`).
pub fn temp_dir(prefix: &str) -> std::io::Result<TempDir> {
    temp_dir_in(&std::env::temp_dir(), prefix)
}

/// `std::fs::create_dir_all` for directories inside a temporary (or a temporary's parent),
/// through [`cleanup::create`]: a signal handled meanwhile never finds the temporary made
/// again after it removed it.
pub fn create_dir_all(path: &Path) -> std::io::Result<()> {
    cleanup::create(|| std::fs::create_dir_all(path))
}

/// Creates (or truncates) the file `path` inside a temporary, with permission bits `mode` on
/// Unix (before the umask), through [`cleanup::create`]; writing to it is the caller's, after
/// the registry is released (a removed file takes the writes with it).
pub fn create_file(path: &Path, mode: Option<u32>) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    cleanup::create(|| o.open(path))
}

/// Writes `bytes` as the new file `path` inside a temporary ([`create_file`], then the write).
pub fn write_in_temp(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    create_file(path, None)?.write_all(bytes)
}

/// Copies the file `from` to `to` inside a temporary, permission bits included, as
/// `std::fs::copy` does, creating `to` through [`create_file`]. Returns the bytes copied.
pub fn copy_file(from: &Path, to: &Path) -> std::io::Result<u64> {
    let mut input = File::open(from)?;
    let perms = input.metadata()?.permissions();
    let mut out = create_file(to, None)?;
    let n = std::io::copy(&mut input, &mut out)?;
    out.set_permissions(perms)?;
    Ok(n)
}

/// Removes the temporaries in `dir` that no live run holds (what a SIGKILL or a power cut
/// left), returning how many. Only regular files and directories whose name has the exact
/// shape of [`is_temporary`] and that belong to this user are considered (a user's
/// `.x.opship-notes` is not); a missing `dir` has none.
pub fn sweep(dir: &Path) -> Result<usize> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut removed = 0;
    for e in entries {
        let e = e.map_err(|e| Error::io(dir, e))?;
        if !is_temporary(e.file_name()) {
            continue;
        }
        let path = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if meta.uid() != own_uid() {
                continue;
            }
        }
        if !(meta.is_file() || meta.is_dir()) {
            continue;
        }
        let Ok(held) = File::open(&path) else {
            continue;
        };
        if held.try_lock().is_err() || !still_there(&path, &held) {
            continue; // a live run's, or gone meanwhile
        }
        tracing::info!(
            "removing {} left by an interrupted run",
            crate::paths::show(&path)
        );
        let r = if meta.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match r {
            Ok(()) => removed += 1,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(Error::io(&path, err)),
        }
    }
    Ok(removed)
}

#[cfg(unix)]
fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    // `/proc/self` belongs to the process's effective uid, the owner of the files it creates
    // (`unsafe_code = "forbid"` rules out calling `geteuid` directly).
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

/// [`sweep`] of `dir`, at most once per process; failures are logged, not fatal (a leftover
/// only takes space: readers of catalogs refuse one rather than read it as content).
pub fn sweep_once(dir: &Path) {
    static SWEPT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !SWEPT.lock().unwrap_or_else(|e| e.into_inner()).insert(key) {
        return;
    }
    if let Err(e) = sweep(dir) {
        tracing::warn!("{e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_removes_unlocked_temporaries_only() {
        let d = tempfile::tempdir().unwrap();
        // Live ones of this process, held by their locks (made first: `temp_dir_in` sweeps).
        let live_file = temp_file_in(d.path(), ".opship-", Some(0o600)).unwrap();
        let live_dir = temp_dir_in(d.path(), ".opship-stage-").unwrap();
        // What killed runs left: a file and a directory with content.
        std::fs::write(d.path().join(".opship-dEAd00"), "x").unwrap();
        std::fs::create_dir_all(d.path().join(".opship-stage-dEAd00/bundle")).unwrap();
        std::fs::write(d.path().join(".opship-stage-dEAd00/bundle/f"), "x").unwrap();
        // A user's names that merely look like it: never removed.
        std::fs::write(d.path().join(".x.opship-1.yaml"), "x").unwrap();
        std::fs::write(d.path().join(".opship-dead"), "x").unwrap();
        std::fs::write(d.path().join("keep.yaml"), "x").unwrap();
        std::fs::write(d.path().join(".hidden"), "x").unwrap();
        assert_eq!(sweep(d.path()).unwrap(), 2);
        let mut names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names.len(), 6, "{names:?}");
        assert!(live_file.path().exists() && live_dir.path().exists());
        for kept in ["keep.yaml", ".hidden", ".x.opship-1.yaml", ".opship-dead"] {
            assert!(names.contains(&kept.to_owned()), "{kept}: {names:?}");
        }
        drop((live_file, live_dir));
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 4);
    }

    /// What the signal handler does (hold the registry, remove the temporaries) while other
    /// threads go on writing into a temporary: none of the creations brings it back before
    /// the registry is released (in the handler: never, the process exits holding it).
    #[test]
    fn a_removed_temporary_is_not_made_again_while_a_signal_is_handled() {
        let d = tempfile::tempdir().unwrap();
        let tmp = temp_dir_in(d.path(), ".out.opship-new-").unwrap();
        let root = tmp.path().to_path_buf();
        std::fs::write(d.path().join("src"), "x").unwrap();
        type Make = fn(&Path, &Path) -> std::io::Result<()>;
        let makers: [Make; 4] = [
            |root, _| create_dir_all(&root.join("manifests")),
            |root, _| write_in_temp(&root.join("bundle.Dockerfile"), b"FROM scratch\n"),
            |root, src| copy_file(src, &root.join("copy")).map(|_| ()),
            |root, _| create_file(&root.join("f"), Some(0o644)).map(|_| ()),
        ];
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let writers = cleanup::commit(|| {
            std::fs::remove_dir_all(&root).unwrap();
            let writers: Vec<_> = makers
                .into_iter()
                .map(|make| {
                    let (root, src, ready_tx) =
                        (root.clone(), d.path().join("src"), ready_tx.clone());
                    std::thread::spawn(move || {
                        ready_tx.send(()).unwrap();
                        let _ = make(&root, &src);
                    })
                })
                .collect();
            for _ in 0..writers.len() {
                ready.recv().unwrap();
            }
            // The writers are at their creation; give them every chance to make it.
            std::thread::sleep(std::time::Duration::from_millis(200));
            assert!(
                !root.exists(),
                "a writer made the removed temporary again while the signal was handled"
            );
            writers
        });
        for w in writers {
            w.join().unwrap();
        }
        drop(tmp);
    }

    #[test]
    fn atomic_write_gives_the_mode_and_leaves_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("secret");
        write_atomic_with_mode(&f, b"pw\n", 0o600).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_temporary_is_the_exact_shape_opship_creates() {
        for name in [
            ".opship-Ab12Cd",
            ".opship-stage-zzzzzz",
            ".bundle.opship-new-0a1B2c",
            ".bundle.opship-old-0a1B2c",
            ".3f9e.opship-QWERTY",
            ".opship-kustomize-a1b2c3",
        ] {
            assert!(is_temporary(name), "{name}");
        }
        for name in [
            ".x.opship-1.yaml",
            ".catalog.opship-draft",
            ".opship-Ab12C",
            ".opship-Ab12Cde",
            ".opship-Ab-2Cd",
            ".opship-notes-abcdef",
            "opship-Ab12Cd",
            "..opship-Ab12Cd",
            ".x.new-AbC123",
            ".x.old-AbC123",
            ".gitignore",
            ".opship-\u{e9}b12Cd",
        ] {
            assert!(!is_temporary(name), "{name}");
        }
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            assert!(!is_temporary(std::ffi::OsStr::from_bytes(
                b".opship-\xffb12Cd"
            )));
        }
        // What the creators make is recognised, and they refuse any other prefix.
        let d = tempfile::tempdir().unwrap();
        let f = temp_file_in(d.path(), ".catalog.opship-", None).unwrap();
        assert!(is_temporary(f.path().file_name().unwrap()));
        let t = temp_dir_in(d.path(), ".opship-render-").unwrap();
        assert!(is_temporary(t.path().file_name().unwrap()));
        assert!(temp_file_in(d.path(), ".opship-notes-", None).is_err());
        assert!(temp_dir_in(d.path(), "opship-").is_err());
    }
}

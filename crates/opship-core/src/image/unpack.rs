//! Safe unpacking of image layers: a pulled bundle image's layers (`tar`, or `tar+gzip`,
//! told apart by their first bytes) read into memory for validation and rendering, or
//! written into a directory for `opship pull`.
//!
//! A layer comes from a registry, that is from anyone, so every entry is checked before a byte
//! of it is kept, and every budget is enforced while reading, never after:
//!
//! - paths are normalised: a leading `/` and `./` are dropped (as container runtimes do, the
//!   layer's root is the target), `.` components are dropped; a `..` component is refused, and
//!   so is a path that is empty, not UTF-8, longer than [`Limits::max_path_bytes`] or deeper
//!   than [`Limits::max_depth`];
//! - only regular files and directories are unpacked. Symlinks are refused (a bundle has no use
//!   for them, and refusing them closes every escape through a link); a hardlink is accepted only
//!   when it names a regular file met earlier in the same unpacking, and is materialised as a
//!   copy (counted against the budgets), never as a link. Character and block devices, fifos,
//!   GNU sparse files and unknown entry types are refused. PAX global headers and GNU volume
//!   labels carry no file and are skipped;
//! - whiteouts (`.wh.` names, including the opaque marker `.wh..wh..opq`) are refused: a bundle
//!   image is built `FROM scratch` with `COPY` only, so a deletion marker means the image is not
//!   the bundle it claims to be;
//! - an entry whose path goes through a file (`a` a file, then `a/b`), or that turns a file into
//!   a directory or back, is refused; a later file with the same path replaces the earlier one,
//!   as in a container runtime, so several layers can be unpacked into one tree in order;
//! - budgets: at most [`Limits::max_entries`] entries, [`Limits::max_file_bytes`] per file and
//!   [`Limits::max_total_bytes`] for all files, checked on each entry's header before its data is
//!   read; the decompressed stream itself (headers, long names, skipped data) is capped a little
//!   above the file budget and, past 16 MiB, at [`Limits::max_ratio`] times the compressed bytes
//!   read, so a gzip bomb is stopped after a few MiB instead of being inflated;
//! - on disk, everything is written into a fresh temporary directory next to the target (in its
//!   parent), with modes 0644 for files and 0755 for directories whatever the archive says, and
//!   renamed into place only when every layer was accepted: a refused layer leaves nothing behind.
//!   The target must not exist or be an empty directory.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::error::{Error, Result};

/// Budgets for unpacking. The defaults are far above any real bundle (the largest bundle of the
/// corpus has about 6 MiB of files) and far below what would hurt the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of all regular files together (512 MiB).
    pub max_total_bytes: u64,
    /// Bytes of one regular file (64 MiB, the largest file `validate` reads).
    pub max_file_bytes: u64,
    /// Entries of every kind, directories included (20,000).
    pub max_entries: usize,
    /// Bytes of one normalised path (4,096).
    pub max_path_bytes: usize,
    /// Components of one normalised path (64).
    pub max_depth: usize,
    /// Largest ratio of decompressed to compressed bytes, enforced once more than 16 MiB were
    /// decompressed (100; 0 turns the check off). gzip's best is about 1,000.
    pub max_ratio: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_total_bytes: 512 * 1024 * 1024,
            max_file_bytes: 64 * 1024 * 1024,
            max_entries: 20_000,
            max_path_bytes: 4096,
            max_depth: 64,
            max_ratio: 100,
        }
    }
}

/// The ratio check starts past this many decompressed bytes: tar's headers and padding make
/// small archives compress very well.
const RATIO_FLOOR: u64 = 16 * 1024 * 1024;

/// The name used in errors about the layer as a whole.
const LAYER: &str = "(layer)";

fn refuse(path: impl Into<PathBuf>, message: impl Into<String>) -> Error {
    Error::Unsafe {
        path: path.into(),
        message: message.into(),
    }
}

/// Reads one layer into memory: its regular files, with normalised relative paths, in path
/// order. The result feeds `opship_validate::load::load_files`.
pub fn read_layer<R: Read>(layer: R, limits: &Limits) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut u = MemoryUnpacker::new(limits.clone());
    u.add_layer(layer)?;
    Ok(u.finish())
}

/// Unpacks one layer into `target`, which must not exist or be an empty directory. Returns the
/// relative paths of the files written, in path order.
pub fn unpack_layer<R: Read>(layer: R, target: &Path, limits: &Limits) -> Result<Vec<PathBuf>> {
    let mut u = DirUnpacker::new(target, limits.clone())?;
    u.add_layer(layer)?;
    u.finish()
}

/// What an unpacked path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

/// Where accepted entries go.
trait Sink {
    /// Creates the directory `rel` (its parents exist).
    fn dir(&mut self, rel: &Path) -> Result<()>;
    /// Writes the file `rel` (its parent exists) from `data`, exactly `size` bytes.
    fn file(&mut self, rel: &Path, data: &mut dyn Read, size: u64) -> Result<()>;
    /// Copies the already written file `from` to `rel`.
    fn copy(&mut self, from: &Path, rel: &Path) -> Result<()>;
}

/// The state shared by both unpackers: budgets spent and what each path is.
#[derive(Debug)]
struct State {
    limits: Limits,
    entries: usize,
    total: u64,
    /// Decompressed bytes read over all layers.
    stream: u64,
    kinds: BTreeMap<PathBuf, Kind>,
    sizes: BTreeMap<PathBuf, u64>,
    /// Set by a refused layer: the tree is then partial and no longer used.
    poisoned: bool,
}

impl State {
    fn new(limits: Limits) -> Self {
        State {
            limits,
            entries: 0,
            total: 0,
            stream: 0,
            kinds: BTreeMap::new(),
            sizes: BTreeMap::new(),
            poisoned: false,
        }
    }

    /// The cap of the decompressed stream: the file budget plus room for the tar headers,
    /// padding and long names of every allowed entry.
    fn stream_budget(&self) -> u64 {
        self.limits
            .max_total_bytes
            .saturating_add((self.limits.max_entries as u64).saturating_mul(4096))
            .saturating_add(1024 * 1024)
    }

    fn add_layer<R: Read>(&mut self, layer: R, sink: &mut dyn Sink) -> Result<()> {
        if self.poisoned {
            return Err(Error::Internal(
                "an unpacking that refused a layer cannot take another".into(),
            ));
        }
        let r = self.read_layer(layer, sink);
        if r.is_err() {
            self.poisoned = true;
        }
        r
    }

    fn read_layer<R: Read>(&mut self, layer: R, sink: &mut dyn Sink) -> Result<()> {
        let compressed = Rc::new(Cell::new(0u64));
        let decompressed = Rc::new(Cell::new(self.stream));
        let mut input = Counting {
            inner: layer,
            count: compressed.clone(),
        };
        let mut head = [0u8; 4];
        let n = read_head(&mut input, &mut head).map_err(|e| Error::io(LAYER, e))?;
        let head = &head[..n];
        let raw: Box<dyn Read + '_> = if head.starts_with(&[0x1f, 0x8b]) {
            Box::new(flate2::read::MultiGzDecoder::new(
                io::Cursor::new(head.to_vec()).chain(input),
            ))
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            return Err(refuse(
                LAYER,
                "zstd-compressed layers are not supported: push the bundle with tar+gzip layers",
            ));
        } else {
            Box::new(io::Cursor::new(head.to_vec()).chain(input))
        };
        let guarded = Guard {
            inner: raw,
            decompressed: decompressed.clone(),
            compressed: compressed.clone(),
            budget: self.stream_budget(),
            start: self.stream,
            ratio: self.limits.max_ratio,
            tripped: Rc::new(Cell::new(None)),
        };
        let tripped = guarded.tripped.clone();
        let mut archive = tar::Archive::new(guarded);
        let mut last = String::from(LAYER);
        let result = self.entries(&mut archive, sink, &mut last);
        self.stream = decompressed.get();
        match result {
            Ok(()) => Ok(()),
            Err(e) => Err(match tripped.get() {
                // The stream guard fired: report the budget, naming the entry being read.
                Some(why) => refuse(last, why.message(self)),
                None => e,
            }),
        }
    }

    fn entries<R: Read>(
        &mut self,
        archive: &mut tar::Archive<R>,
        sink: &mut dyn Sink,
        last: &mut String,
    ) -> Result<()> {
        let bad_tar = |last: &str, e: io::Error| {
            refuse(
                last.to_owned(),
                format!("not a valid tar archive after this entry: {e}"),
            )
        };
        let entries = archive.entries().map_err(|e| bad_tar(last, e))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| bad_tar(last, e))?;
            let raw_path = entry.path_bytes().into_owned();
            *last = String::from_utf8_lossy(&raw_path).into_owned();
            self.entry(&mut entry, &raw_path, sink)?;
        }
        Ok(())
    }

    fn entry<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        raw_path: &[u8],
        sink: &mut dyn Sink,
    ) -> Result<()> {
        let shown = String::from_utf8_lossy(raw_path).into_owned();
        let ty = entry.header().entry_type();
        // Every entry counts, skipped ones too, so a flood of empty headers is cut short.
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(refuse(
                shown,
                format!(
                    "more than {} entries: refusing the layer (budget of entries)",
                    self.limits.max_entries
                ),
            ));
        }
        if ty.is_pax_global_extensions() || ty.as_byte() == b'V' {
            return Ok(());
        }
        // Old tar writes directories as regular files whose name ends in `/`.
        let is_dir = ty.is_dir() || (ty.is_file() && raw_path.ends_with(b"/"));
        let rel = self.normalise(raw_path, &shown)?;
        if ty.is_symlink() {
            let to = entry
                .link_name_bytes()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .unwrap_or_default();
            return Err(refuse(
                shown,
                format!("symbolic link (to {to:?}): links are never unpacked from a bundle layer"),
            ));
        }
        if ty.is_character_special() || ty.is_block_special() || ty.is_fifo() {
            return Err(refuse(
                shown,
                "device or fifo entry: only regular files and directories are unpacked",
            ));
        }
        if !(is_dir || ty.is_file() || ty.is_contiguous() || ty.is_hard_link()) {
            return Err(refuse(
                shown,
                format!(
                    "entry of type {:?} ({:?}): only regular files and directories are unpacked",
                    ty,
                    char::from(ty.as_byte())
                ),
            ));
        }
        let Some(rel) = rel else {
            // The root itself (`./`, `/`): nothing to create.
            return if is_dir {
                Ok(())
            } else {
                Err(refuse(shown, "empty path"))
            };
        };
        if let Some(name) = rel.file_name().and_then(|n| n.to_str())
            && name.starts_with(".wh.")
        {
            return Err(refuse(
                shown,
                "whiteout (a deletion marker): a bundle image is built FROM scratch and never \
                 deletes files, so whiteouts are refused",
            ));
        }
        self.parents(&rel, &shown, sink)?;
        if is_dir {
            return match self.kinds.get(&rel) {
                Some(Kind::Dir) => Ok(()),
                Some(Kind::File) => Err(refuse(
                    shown,
                    "directory over a file of the same path: refused",
                )),
                None => {
                    sink.dir(&rel)?;
                    self.kinds.insert(rel, Kind::Dir);
                    Ok(())
                }
            };
        }
        if self.kinds.get(&rel) == Some(&Kind::Dir) {
            return Err(refuse(
                shown,
                "file over a directory of the same path: refused",
            ));
        }
        let size = if ty.is_hard_link() {
            let target = entry
                .link_name_bytes()
                .map(|l| l.into_owned())
                .unwrap_or_default();
            let shown_target = String::from_utf8_lossy(&target).into_owned();
            let from = self.normalise(&target, &shown)?;
            let Some(from) = from.filter(|f| self.kinds.get(f) == Some(&Kind::File)) else {
                return Err(refuse(
                    shown,
                    format!(
                        "hard link to {shown_target:?}, which is not a regular file unpacked \
                         before it: refused"
                    ),
                ));
            };
            let size = self.sizes.get(&from).copied().unwrap_or(0);
            self.budget(&shown, size)?;
            if from != rel {
                sink.copy(&from, &rel)?;
            }
            size
        } else {
            let size = entry.size();
            self.budget(&shown, size)?;
            let mut data = entry.take(size);
            sink.file(&rel, &mut data, size).map_err(|e| match e {
                Error::Io { source, .. }
                    if source.kind() == io::ErrorKind::UnexpectedEof
                        || source.kind() == io::ErrorKind::Other =>
                {
                    refuse(shown.clone(), format!("could not read the entry: {source}"))
                }
                e => e,
            })?;
            size
        };
        self.kinds.insert(rel.clone(), Kind::File);
        self.sizes.insert(rel, size);
        Ok(())
    }

    /// Charges a file of `size` bytes to the budgets, before reading it.
    fn budget(&mut self, shown: &str, size: u64) -> Result<()> {
        if size > self.limits.max_file_bytes {
            return Err(refuse(
                shown,
                format!(
                    "file of {size} bytes, over the budget of {} bytes per file",
                    self.limits.max_file_bytes
                ),
            ));
        }
        self.total = self.total.saturating_add(size);
        if self.total > self.limits.max_total_bytes {
            return Err(refuse(
                shown,
                format!(
                    "files add up to more than the budget of {} bytes",
                    self.limits.max_total_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Every ancestor of `rel` must be a directory (created when missing), never a file.
    fn parents(&mut self, rel: &Path, shown: &str, sink: &mut dyn Sink) -> Result<()> {
        let mut ancestors: Vec<&Path> = rel
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .collect();
        ancestors.reverse();
        for a in ancestors {
            match self.kinds.get(a) {
                Some(Kind::Dir) => {}
                Some(Kind::File) => {
                    return Err(refuse(
                        shown,
                        format!(
                            "path goes through the file {}: refused",
                            crate::paths::show(a)
                        ),
                    ));
                }
                None => {
                    sink.dir(a)?;
                    self.kinds.insert(a.to_path_buf(), Kind::Dir);
                }
            }
        }
        Ok(())
    }

    /// The path relative to the layer root, or `None` for the root itself.
    fn normalise(&self, raw: &[u8], shown: &str) -> Result<Option<PathBuf>> {
        let Ok(s) = std::str::from_utf8(raw) else {
            return Err(refuse(shown, "path is not UTF-8"));
        };
        let mut out = PathBuf::new();
        let mut depth = 0;
        for part in s.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    return Err(refuse(
                        shown,
                        "path has a `..` component: it could escape the target, refused",
                    ));
                }
                p => {
                    if p.contains('\0') {
                        return Err(refuse(shown, "path has a NUL byte"));
                    }
                    // A drive letter or a backslash would change what the path means there.
                    if cfg!(windows) && (p.contains(':') || p.contains('\\')) {
                        return Err(refuse(shown, "path has `:` or `\\`, refused on Windows"));
                    }
                    depth += 1;
                    out.push(p);
                }
            }
        }
        if s.len() > self.limits.max_path_bytes || depth > self.limits.max_depth {
            return Err(refuse(
                shown,
                format!(
                    "path longer than {} bytes or deeper than {} components",
                    self.limits.max_path_bytes, self.limits.max_depth
                ),
            ));
        }
        Ok((depth > 0).then_some(out))
    }
}

/// Reads up to `buf.len()` bytes, fewer only at the end of the input.
fn read_head<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get().saturating_add(n as u64));
        Ok(n)
    }
}

/// Why the stream guard stopped reading.
#[derive(Debug, Clone, Copy)]
enum Tripped {
    Budget(u64),
    Ratio(u64),
}

impl Tripped {
    fn message(self, state: &State) -> String {
        match self {
            Tripped::Budget(b) => format!(
                "the layer decompresses to more than {b} bytes (budget of {} bytes of files): \
                 stopped reading",
                state.limits.max_total_bytes
            ),
            Tripped::Ratio(r) => format!(
                "the layer decompresses more than {r} times its compressed size (a \
                 decompression bomb?): stopped reading"
            ),
        }
    }
}

/// Caps the decompressed stream: total bytes and ratio to the compressed bytes read.
struct Guard<R> {
    inner: R,
    decompressed: Rc<Cell<u64>>,
    compressed: Rc<Cell<u64>>,
    budget: u64,
    /// The stream's count when this layer started: the ratio is per layer.
    start: u64,
    ratio: u64,
    tripped: Rc<Cell<Option<Tripped>>>,
}

impl<R: Read> Read for Guard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(t) = self.tripped.get() {
            return Err(io::Error::other(format!("stream guard: {t:?}")));
        }
        // Never read past the budget, even in one call.
        let left = self.budget.saturating_sub(self.decompressed.get());
        let want = buf
            .len()
            .min(usize::try_from(left.saturating_add(1)).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        let total = self.decompressed.get().saturating_add(n as u64);
        self.decompressed.set(total);
        let trip = if total > self.budget {
            Some(Tripped::Budget(self.budget))
        } else if self.ratio > 0
            && total - self.start > RATIO_FLOOR
            && (total - self.start) / self.compressed.get().max(1) > self.ratio
        {
            Some(Tripped::Ratio(self.ratio))
        } else {
            None
        };
        if let Some(t) = trip {
            self.tripped.set(Some(t));
            return Err(io::Error::other(format!("stream guard: {t:?}")));
        }
        Ok(n)
    }
}

/// Unpacks layers into memory. After a refused layer, it refuses every further call.
#[derive(Debug)]
pub struct MemoryUnpacker {
    state: State,
    files: BTreeMap<PathBuf, Vec<u8>>,
}

struct MemorySink<'a>(&'a mut BTreeMap<PathBuf, Vec<u8>>);

impl Sink for MemorySink<'_> {
    fn dir(&mut self, _rel: &Path) -> Result<()> {
        Ok(())
    }

    fn file(&mut self, rel: &Path, data: &mut dyn Read, size: u64) -> Result<()> {
        // The size is within the per-file budget; still, grow with the data actually read.
        let mut bytes = Vec::with_capacity(usize::try_from(size.min(1 << 20)).unwrap_or(0));
        data.read_to_end(&mut bytes)
            .map_err(|e| Error::io(rel, e))?;
        if bytes.len() as u64 != size {
            return Err(Error::io(
                rel,
                io::Error::new(io::ErrorKind::UnexpectedEof, "archive ends inside the file"),
            ));
        }
        self.0.insert(rel.to_path_buf(), bytes);
        Ok(())
    }

    fn copy(&mut self, from: &Path, rel: &Path) -> Result<()> {
        let bytes = self.0.get(from).cloned().unwrap_or_default();
        self.0.insert(rel.to_path_buf(), bytes);
        Ok(())
    }
}

impl MemoryUnpacker {
    /// An empty tree with these budgets.
    pub fn new(limits: Limits) -> Self {
        MemoryUnpacker {
            state: State::new(limits),
            files: BTreeMap::new(),
        }
    }

    /// Adds a layer on top of the ones before (budgets are shared by all layers).
    pub fn add_layer<R: Read>(&mut self, layer: R) -> Result<()> {
        self.state
            .add_layer(layer, &mut MemorySink(&mut self.files))
    }

    /// The regular files, with paths relative to the root, in path order.
    pub fn finish(self) -> Vec<(PathBuf, Vec<u8>)> {
        self.files.into_iter().collect()
    }
}

/// Unpacks layers into a directory: a temporary directory next to the target while unpacking,
/// renamed to the target by [`DirUnpacker::finish`]. Dropped without `finish` (or after a
/// refused layer), it removes the temporary directory and leaves the target untouched.
#[derive(Debug)]
pub struct DirUnpacker {
    state: State,
    target: PathBuf,
    tmp: crate::fsutil::TempDir,
}

struct DirSink<'a>(&'a Path);

impl Sink for DirSink<'_> {
    fn dir(&mut self, rel: &Path) -> Result<()> {
        let p = self.0.join(rel);
        let mut b = fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            b.mode(0o755);
        }
        crate::cleanup::create(|| b.create(&p)).map_err(|e| Error::io(p, e))
    }

    fn file(&mut self, rel: &Path, data: &mut dyn Read, size: u64) -> Result<()> {
        let p = self.0.join(rel);
        let mut f = create_file(&p)?;
        let n = io::copy(data, &mut f).map_err(|e| Error::io(rel, e))?;
        if n != size {
            return Err(Error::io(
                rel,
                io::Error::new(io::ErrorKind::UnexpectedEof, "archive ends inside the file"),
            ));
        }
        f.flush().map_err(|e| Error::io(&p, e))
    }

    fn copy(&mut self, from: &Path, rel: &Path) -> Result<()> {
        let src = self.0.join(from);
        let mut input = fs::File::open(&src).map_err(|e| Error::io(&src, e))?;
        let p = self.0.join(rel);
        let mut f = create_file(&p)?;
        io::copy(&mut input, &mut f).map_err(|e| Error::io(&p, e))?;
        Ok(())
    }
}

/// Creates (or truncates) a file with mode 0644. Only paths inside the temporary directory
/// reach here, and no link is ever created in it, so nothing can redirect the write.
fn create_file(p: &Path) -> Result<fs::File> {
    crate::fsutil::create_file(p, Some(0o644)).map_err(|e| Error::io(p, e))
}

impl DirUnpacker {
    /// Prepares to unpack into `target`, which must not exist or be an empty directory. Its
    /// parent is created if missing; the temporary directory is made there.
    pub fn new(target: &Path, limits: Limits) -> Result<Self> {
        match fs::symlink_metadata(target) {
            Ok(m) if m.is_dir() => {
                let mut it = fs::read_dir(target).map_err(|e| Error::io(target, e))?;
                if it.next().is_some() {
                    return Err(Error::Input(format!(
                        "{}: the target directory is not empty: unpack into a new or empty \
                         directory",
                        crate::paths::show(target)
                    )));
                }
            }
            Ok(_) => {
                return Err(Error::Input(format!(
                    "{}: the target exists and is not a directory",
                    crate::paths::show(target)
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(target, e)),
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        crate::fsutil::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
        let tmp = crate::fsutil::temp_dir_in(&parent, ".opship-unpack-")
            .map_err(|e| Error::io(&parent, e))?;
        Ok(DirUnpacker {
            state: State::new(limits),
            target: target.to_path_buf(),
            tmp,
        })
    }

    /// Adds a layer on top of the ones before (budgets are shared by all layers).
    pub fn add_layer<R: Read>(&mut self, layer: R) -> Result<()> {
        let root = self.tmp.path().to_path_buf();
        self.state.add_layer(layer, &mut DirSink(&root))
    }

    /// Moves the unpacked tree to the target. Returns the files' relative paths, in order.
    pub fn finish(self) -> Result<Vec<PathBuf>> {
        if self.state.poisoned {
            return Err(Error::Internal(
                "an unpacking that refused a layer cannot be finished".into(),
            ));
        }
        let files: Vec<PathBuf> = self
            .state
            .kinds
            .iter()
            .filter(|(_, k)| **k == Kind::File)
            .map(|(p, _)| p.clone())
            .collect();
        // The temporary stays registered (and is removed when dropped) until it is renamed:
        // a signal up to the rename removes it.
        let tmp = self.tmp.path().to_path_buf();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))
                .map_err(|e| Error::io(&tmp, e))?;
        }
        if fs::symlink_metadata(&self.target).is_ok() {
            // Empty when checked: remove_dir refuses if something appeared since.
            fs::remove_dir(&self.target).map_err(|e| Error::io(&self.target, e))?;
        }
        crate::cleanup::commit(|| fs::rename(&tmp, &self.target))
            .map_err(|e| Error::io(&self.target, e))?;
        let _ = self.tmp.keep();
        Ok(files)
    }
}

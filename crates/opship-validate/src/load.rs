//! Reading a bundle for validation: the on-disk (or in-memory, for unpacked images) registry+v1
//! layout turned into a [`Bundle`], with every problem met on the way recorded as a
//! bundle-format finding instead of aborting, so one bad file never hides the rest.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use opship_core::manifest::Object;
use opship_core::yaml::{self, Document, Origin};

use crate::error::{Error, Result};
use crate::format;
use crate::rule::Finding;
use rayon::prelude::*;

/// A file after parsing.
enum Parsed {
    /// The documents, and whether the text is blank (only spaces, comments and `---`).
    Yaml(
        opship_core::error::Result<(Vec<Document>, Vec<yaml::DuplicateKey>)>,
        bool,
        Vec<crate::gofields::Renamed>,
    ),
    NotUtf8(usize),
}

/// Raw input files are capped so that a hostile bundle cannot make validation read gigabytes.
/// Real bundles stay far below (the largest corpus file is about 6 MiB).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// At most this many files are read from a bundle (generation refuses to write more).
pub const MAX_FILES: usize = opship_core::bundle::MAX_FILES;
/// At most this many bytes are read from a bundle in all: files past it are reported unread.
pub const MAX_TOTAL_BYTES: u64 = opship_core::bundle::MAX_TOTAL_BYTES;

/// `metadata/annotations.yaml`: where it is and what it says.
#[derive(Debug, Clone)]
pub struct Annotations {
    /// The parsed file; `/annotations/<key>` points at each value.
    pub doc: Document,
    /// The string-valued annotations.
    pub values: BTreeMap<String, String>,
}

impl Annotations {
    /// The value of a key, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Where the value of `key` sits (the `annotations:` map when the key is absent).
    pub fn origin(&self, key: &str) -> Origin {
        self.doc
            .origin(&format!("/annotations/{}", yaml::escape_pointer_token(key)))
    }
}

/// One file of the bundle and its size, for the size rule.
#[derive(Debug, Clone)]
pub struct FileInfo {
    /// Path relative to the bundle root (`manifests/x.yaml`).
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// Size after gzip: exact (level 6, as Go's default) when the bundle is near the limit,
    /// otherwise a fast estimate that is never used for a verdict.
    pub gzip_size: u64,
}

/// A loaded bundle: what later checks look at.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The directory as the user named it (or an image reference for unpacked images).
    pub root: PathBuf,
    /// The name the reference gives the bundle in bundle-wide findings: the directory's name.
    pub name: String,
    /// Every object from `manifests/`, in file-name order.
    pub objects: Vec<Object>,
    /// `metadata/annotations.yaml`, when found and readable.
    pub annotations: Option<Annotations>,
    /// Files named `metadata/annotations.*` that cannot be the annotations file, and why
    /// (where, and a message naming the file): what BF003 reports instead of "missing".
    pub rejected_annotations: Vec<(Origin, String)>,
    /// `metadata/dependencies.yaml` (any metadata file with a `dependencies` list).
    pub dependencies: Option<Document>,
    /// `metadata/properties.yaml` (any metadata file with a `properties` list).
    pub properties: Option<Document>,
    /// `bundle.Dockerfile` next to the directories, when present: its text and path.
    pub dockerfile: Option<(PathBuf, String)>,
    /// The files under `manifests/` and `metadata/`, with their sizes.
    pub files: Vec<FileInfo>,
    /// Problems met while loading (bundle-format rules).
    pub findings: Vec<Finding>,
}

impl Bundle {
    /// The ClusterServiceVersion, when there is exactly one or the first of several.
    pub fn csv(&self) -> Option<&Object> {
        self.objects
            .iter()
            .find(|o| o.kind() == "ClusterServiceVersion")
    }

    /// The CustomResourceDefinitions.
    pub fn crds(&self) -> impl Iterator<Item = &Object> {
        self.objects
            .iter()
            .filter(|o| o.kind() == "CustomResourceDefinition")
    }

    /// Objects other than the CSV and CRDs.
    pub fn others(&self) -> impl Iterator<Item = &Object> {
        self.objects.iter().filter(|o| {
            !matches!(
                o.kind(),
                "ClusterServiceVersion" | "CustomResourceDefinition"
            )
        })
    }

    /// The CSV's `metadata.name` (empty without a CSV): how the reference names CSV findings.
    pub fn csv_name(&self) -> &str {
        self.csv().map(Object::name).unwrap_or_default()
    }

    /// The sum of the files' gzip sizes, as the reference measures bundle size.
    pub fn gzip_size(&self) -> u64 {
        self.files.iter().map(|f| f.gzip_size).sum()
    }
}

/// How keys of the CSV and the metadata files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// As OLM's Go decoder reads them: a key that is a field name in another case is renamed to
    /// the field (and reported, BF019). For validation.
    Go,
    /// As written: for rendering, where opm keeps each manifest as an unstructured object and
    /// looks spec fields up by their exact names.
    AsWritten,
}

/// Loads a bundle directory. Only a path that cannot be read as a directory is an `Err`; every
/// problem inside the bundle becomes a finding.
pub fn load_dir(dir: &Path) -> Result<Bundle> {
    load_dir_keys(dir, Keys::Go)
}

/// [`load_dir`], reading keys as `keys` says.
pub fn load_dir_keys(dir: &Path, keys: Keys) -> Result<Bundle> {
    load_dir_in(dir, dir, keys)
}

/// [`load_dir_keys`] for a bundle inside the tree `root` (the bundle directory itself, or the
/// operator directory that holds it): a file is read only when it lies in `root` once symlinks
/// are followed; one that leads out of it is a finding (BF008), its content never read, so no
/// finding can quote a file from elsewhere.
pub fn load_dir_in(dir: &Path, root: &Path, keys: Keys) -> Result<Bundle> {
    let meta = std::fs::metadata(dir).map_err(|e| Error::io(dir, e))?;
    let root_real = std::fs::canonicalize(root).map_err(|e| Error::io(root, e))?;
    let outside =
        |path: &Path| !std::fs::canonicalize(path).is_ok_and(|p| p.starts_with(&root_real));
    let leads_out = format!(
        "is a symlink that leads out of {}; not read",
        root.display()
    );
    if !meta.is_dir() {
        return Err(Error::NotABundle {
            path: dir.to_path_buf(),
            reason: "not a directory (a bundle is a directory with manifests/ and metadata/)"
                .into(),
        });
    }
    let mut input = Input::new(dir, keys);
    for sub in ["manifests", "metadata"] {
        let d = dir.join(sub);
        match std::fs::metadata(&d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                input
                    .not_dirs
                    .push((sub.to_owned(), "is not a directory".to_owned()));
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !d.is_symlink() => {
                input.missing.push(sub.to_owned());
                continue;
            }
            // A dangling symlink, a symlink loop, no permission.
            Err(e) => {
                input
                    .not_dirs
                    .push((sub.to_owned(), format!("cannot be read: {e}")));
                continue;
            }
        }
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(&d).map_err(|e| Error::io(&d, e))? {
            let entry = entry.map_err(|e| Error::io(&d, e))?;
            entries.push(entry);
        }
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let rel = Path::new(sub).join(&name);
            let path = entry.path();
            // Follow symlinks the way the reference's os.ReadFile does; a symlink that leads
            // nowhere (dangling, a loop) or to something that is not a file is a finding about
            // that entry, not an error about the whole bundle.
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(e) => {
                    input.unreadable.push((rel, format!("cannot be read: {e}")));
                    continue;
                }
            };
            if meta.is_dir() {
                input.dirs.push(rel);
                continue;
            }
            if !meta.is_file() {
                // A FIFO or device would block or never end.
                input
                    .unreadable
                    .push((rel, "is not a regular file; not read".to_owned()));
                continue;
            }
            if outside(&path) {
                input.unreadable.push((rel, leads_out.clone()));
                continue;
            }
            if input.files.len() >= MAX_FILES {
                return Err(Error::NotABundle {
                    path: dir.to_path_buf(),
                    reason: format!("more than {MAX_FILES} files"),
                });
            }
            if meta.len() > MAX_FILE_BYTES {
                input.too_big.push((rel, meta.len()));
                continue;
            }
            if input.total + meta.len() > MAX_TOTAL_BYTES {
                input.over_total.push(rel);
                continue;
            }
            match read_capped(&path) {
                Ok(Ok(bytes)) => {
                    input.total += bytes.len() as u64;
                    input.files.push((rel, bytes));
                }
                Ok(Err(len)) => input.too_big.push((rel, len)),
                Err(e) => input.unreadable.push((rel, format!("cannot be read: {e}"))),
            }
        }
    }
    let dockerfile = dir.join("bundle.Dockerfile");
    if std::fs::metadata(&dockerfile).is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES)
        && !outside(&dockerfile)
        && let Ok(Ok(bytes)) = read_capped(&dockerfile)
        && let Ok(text) = String::from_utf8(bytes)
    {
        input.dockerfile = Some((dockerfile, text));
    }
    Ok(input.finish())
}

/// Reads a file, but never more than [`MAX_FILE_BYTES`] (a file may grow after its size was
/// checked): `Ok(Err(len))` when it is larger.
fn read_capped(path: &Path) -> std::io::Result<std::result::Result<Vec<u8>, u64>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

/// Loads the bundle image tagged `tag` in the OCI image layout `layout` (what `opship build`
/// writes): every blob is verified, the layers are unpacked in memory within safe limits, and
/// the image's labels are checked against `metadata/annotations.yaml` (rule BF018). Findings
/// name files as `LAYOUT:TAG/manifests/...`.
pub fn load_layout(layout: &Path, tag: &str) -> Result<Bundle> {
    load_layout_as(
        layout,
        tag,
        &PathBuf::from(format!("{}:{tag}", opship_core::paths::show(layout))),
    )
}

/// [`load_layout`], naming the bundle's files under `shown` instead of `LAYOUT:TAG` (an image
/// pulled from a registry into a temporary layout is shown by its reference).
pub fn load_layout_as(layout: &Path, tag: &str, shown: &Path) -> Result<Bundle> {
    load_layout_keys(layout, tag, shown, Keys::Go)
}

/// [`load_layout_as`], reading keys as `keys` says.
pub fn load_layout_keys(layout: &Path, tag: &str, shown: &Path, keys: Keys) -> Result<Bundle> {
    use opship_core::image::{layout::Layout, unpack};
    let name = shown.to_path_buf();
    let not_a_bundle = |e: opship_core::error::Error| Error::NotABundle {
        path: name.clone(),
        reason: e.to_string(),
    };
    let image = Layout::new(layout).read_image(tag).map_err(not_a_bundle)?;
    let mut unpacker = unpack::MemoryUnpacker::new(unpack::Limits::default());
    for layer in &image.layers {
        unpacker.add_layer(layer.as_slice()).map_err(not_a_bundle)?;
    }
    let mut b = load_files_keys(&name, unpacker.finish(), keys);
    // Bundle-wide findings name the image by its tag, as they name a directory by its name.
    let dir_name = std::mem::replace(&mut b.name, tag.to_owned());
    for f in &mut b.findings {
        if f.object == dir_name {
            f.object = tag.to_owned();
        }
    }
    format::check_labels(&mut b, &image.config.config.labels);
    Ok(b)
}

/// Loads a bundle from files already in memory (an unpacked image, a fuzz input). `files` are
/// paths relative to the bundle root, e.g. `manifests/csv.yaml`; `root` is only used to name
/// them in findings.
pub fn load_files(root: &Path, files: Vec<(PathBuf, Vec<u8>)>) -> Bundle {
    load_files_keys(root, files, Keys::Go)
}

/// [`load_files`], reading keys as `keys` says.
pub fn load_files_keys(root: &Path, files: Vec<(PathBuf, Vec<u8>)>, keys: Keys) -> Bundle {
    let mut input = Input::new(root, keys);
    let mut files = files;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut seen_dirs = std::collections::BTreeSet::new();
    for (rel, bytes) in files {
        let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy());
        let top = parts.next().unwrap_or_default().into_owned();
        let rest: Vec<String> = parts.map(|p| p.into_owned()).collect();
        if (top == "manifests" || top == "metadata") && rest.is_empty() {
            input.not_dirs.push((top, "is not a directory".to_owned()));
            continue;
        }
        if (top == "manifests" || top == "metadata") && !rest.is_empty() {
            if rest.len() > 1 {
                if seen_dirs.insert(Path::new(&top).join(&rest[0])) {
                    input.dirs.push(Path::new(&top).join(&rest[0]));
                }
                continue;
            }
            if rest[0].starts_with('.') {
                continue;
            }
            if bytes.len() as u64 > MAX_FILE_BYTES {
                input.too_big.push((rel, bytes.len() as u64));
                continue;
            }
            if input.total + bytes.len() as u64 > MAX_TOTAL_BYTES {
                input.over_total.push(rel);
                continue;
            }
            input.total += bytes.len() as u64;
            input.files.push((rel, bytes));
        } else if rel == Path::new("bundle.Dockerfile") {
            input.dockerfile = Some((
                root.join(&rel),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    for sub in ["manifests", "metadata"] {
        if !input.files.iter().any(|(p, _)| p.starts_with(sub))
            && !input.dirs.iter().any(|p| p.starts_with(sub))
            && !input.not_dirs.iter().any(|(p, _)| p == sub)
        {
            input.missing.push(sub.to_owned());
        }
    }
    input.finish()
}

/// What was read, before it is parsed.
struct Input {
    root: PathBuf,
    files: Vec<(PathBuf, Vec<u8>)>,
    dirs: Vec<PathBuf>,
    missing: Vec<String>,
    /// `manifests` or `metadata` present but not a readable directory, and why.
    not_dirs: Vec<(String, String)>,
    too_big: Vec<(PathBuf, u64)>,
    /// Files not read because the bundle's total reached [`MAX_TOTAL_BYTES`].
    over_total: Vec<PathBuf>,
    /// Bytes read so far.
    total: u64,
    /// Entries that could not be read as files, and why.
    unreadable: Vec<(PathBuf, String)>,
    dockerfile: Option<(PathBuf, String)>,
    keys: Keys,
}

impl Input {
    fn new(root: &Path, keys: Keys) -> Self {
        Input {
            root: root.to_path_buf(),
            files: Vec::new(),
            dirs: Vec::new(),
            missing: Vec::new(),
            not_dirs: Vec::new(),
            too_big: Vec::new(),
            over_total: Vec::new(),
            total: 0,
            unreadable: Vec::new(),
            dockerfile: None,
            keys,
        }
    }

    fn finish(self) -> Bundle {
        let name = self
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| opship_core::paths::show(&self.root).to_string());
        let mut b = Bundle {
            root: self.root.clone(),
            name,
            objects: Vec::new(),
            annotations: None,
            rejected_annotations: Vec::new(),
            dependencies: None,
            properties: None,
            dockerfile: self.dockerfile,
            files: Vec::new(),
            findings: Vec::new(),
        };
        for sub in &self.missing {
            b.findings.push(
                Finding::new(
                    if sub == "manifests" {
                        &format::BF001
                    } else {
                        &format::BF002
                    },
                    &b.name,
                    format!("the bundle has no {sub}/ directory"),
                )
                .at(Origin::file(&self.root)),
            );
        }
        for (sub, why) in &self.not_dirs {
            b.findings.push(
                Finding::new(
                    if sub == "manifests" {
                        &format::BF001
                    } else {
                        &format::BF002
                    },
                    &b.name,
                    format!("{sub} {why}; the bundle needs a {sub}/ directory"),
                )
                .at(Origin::file(&self.root.join(sub))),
            );
        }
        for rel in &self.over_total {
            b.findings.push(
                Finding::new(
                    &format::BF008,
                    &b.name,
                    format!(
                        "{} not read: the bundle's files pass {MAX_TOTAL_BYTES} bytes in total",
                        opship_core::paths::show(rel)
                    ),
                )
                .at(Origin::file(&self.root.join(rel))),
            );
        }
        for (rel, why) in &self.unreadable {
            b.findings.push(
                Finding::new(
                    &format::BF008,
                    &b.name,
                    format!("{} {why}", opship_core::paths::show(rel)),
                )
                .at(Origin::file(&self.root.join(rel))),
            );
        }
        for d in &self.dirs {
            b.findings.push(
                Finding::new(
                    &format::BF007,
                    &b.name,
                    format!(
                        "{} is a directory; the bundle format allows only files in {}/",
                        opship_core::paths::show(d),
                        d.parent()
                            .map(Path::display)
                            .map(|p| p.to_string())
                            .unwrap_or_default()
                    ),
                )
                .at(Origin::file(&self.root.join(d))),
            );
        }
        for (rel, len) in &self.too_big {
            b.findings.push(
                Finding::new(
                    &format::BF008,
                    &b.name,
                    format!("file is {len} bytes, over the {MAX_FILE_BYTES}-byte limit; not read"),
                )
                .at(Origin::file(&self.root.join(rel))),
            );
        }
        let total: usize = self.files.iter().map(|(_, bytes)| bytes.len()).sum();
        // gzip output is never much larger than its input, so bundles far below the limit skip
        // the exact (slow) measurement. Above that, gzip's fastest level (greedy matching,
        // fixed codes: several times cheaper) comes first: level 6 searches more and picks the
        // better code, so it does not come out 10 % larger than level 1 on text, and a bundle
        // whose level-1 size is under 90 % of the warning threshold cannot reach it. Only the
        // bundles near the limit pay for the exact size.
        let quick: Vec<u64> = if total as u64 > crate::bundle::SIZE_LIMIT * 3 / 4 {
            self.files
                .par_iter()
                .map(|(_, bytes)| gzip_size_at(bytes, 1))
                .collect()
        } else {
            self.files.iter().map(|(_, b)| b.len() as u64).collect()
        };
        let exact = quick.iter().sum::<u64>() > crate::bundle::SIZE_LIMIT * 85 / 100 * 9 / 10;
        // Parsing dominates validation time and big CRD files make bundles uneven, so files
        // are parsed in parallel (inside the per-bundle parallelism) and merged in order.
        let root = &self.root;
        let keys = self.keys;
        let parsed: Vec<(FileInfo, PathBuf, Parsed)> = self
            .files
            .into_par_iter()
            .zip(quick)
            .map(|((rel, bytes), quick)| {
                let path = root.join(&rel);
                let info = FileInfo {
                    path: rel,
                    size: bytes.len() as u64,
                    gzip_size: if exact { gzip_size(&bytes) } else { quick },
                };
                let parsed = match String::from_utf8(bytes) {
                    Ok(text) => {
                        let mut docs = yaml::parse_stream_lenient(&text, &path);
                        let blank = matches!(&docs, Ok((d, _)) if d.is_empty()) && is_blank(&text);
                        let renamed = match &mut docs {
                            Ok((d, _)) if keys == Keys::Go => crate::gofields::normalize_file(
                                d,
                                info.path.starts_with("manifests"),
                                &text,
                            ),
                            _ => Vec::new(),
                        };
                        Parsed::Yaml(docs, blank, renamed)
                    }
                    Err(e) => Parsed::NotUtf8(e.utf8_error().valid_up_to()),
                };
                (info, path, parsed)
            })
            .collect();
        for (info, path, parsed) in parsed {
            let is_manifest = info.path.starts_with("manifests");
            let annotations_file = !is_manifest && is_annotations_name(&info.path);
            let rel = info.path.clone();
            b.files.push(info);
            let (docs, blank_file) = match parsed {
                Parsed::NotUtf8(offset) => {
                    if annotations_file {
                        b.rejected_annotations.push((
                            Origin::file(&path),
                            format!(
                                "{} is not UTF-8 text (invalid byte at offset {offset})",
                                opship_core::paths::show(&rel)
                            ),
                        ));
                    }
                    let f = Finding::new(
                        &format::BF008,
                        &b.name,
                        format!("not UTF-8 text (invalid byte at offset {offset})"),
                    )
                    .at(Origin::file(&path));
                    b.findings
                        .push(skipped_by_opm(f, is_manifest, annotations_file));
                    continue;
                }
                Parsed::Yaml(Err(e), _, _) => {
                    let f = yaml_finding(&b.name, &path, &e);
                    if annotations_file {
                        let at = f.location.clone().unwrap_or_else(|| Origin::file(&path));
                        let pos = if at.pos.line > 0 {
                            format!("{}:{}: ", at.pos.line, at.pos.col)
                        } else {
                            String::new()
                        };
                        b.rejected_annotations.push((
                            at,
                            format!(
                                "{} is not valid YAML: {pos}{}",
                                opship_core::paths::show(&rel),
                                f.message
                            ),
                        ));
                    }
                    b.findings
                        .push(skipped_by_opm(f, is_manifest, annotations_file));
                    continue;
                }
                Parsed::Yaml(Ok((docs, dups)), blank, renamed) => {
                    format::go_case(&mut b, renamed);
                    if annotations_file && docs.is_empty() {
                        let what = if blank {
                            "is empty"
                        } else {
                            "holds only `null`"
                        };
                        b.rejected_annotations.push((
                            Origin::file(&path),
                            format!(
                                "{} {what}; it must be a mapping with an `annotations:` map",
                                opship_core::paths::show(&rel)
                            ),
                        ));
                    }
                    duplicates(&mut b, dups);
                    (docs, blank)
                }
            };
            if docs.is_empty() {
                // The reference skips such files silently; say so, since an empty CSV file
                // otherwise only shows up as "no ClusterServiceVersion".
                let (rule, what) = if is_manifest {
                    (&format::BF009, "Kubernetes object")
                } else {
                    (&format::BF008, "YAML document")
                };
                b.findings.push(
                    Finding::new(
                        rule,
                        &b.name,
                        if blank_file {
                            format!(
                                "the file holds no {what} (it is empty or only comments and \
                                 `---`); it is skipped"
                            )
                        } else {
                            format!(
                                "the file holds no {what}, only `null` documents; it is skipped"
                            )
                        },
                    )
                    .with_level(crate::Level::Warning)
                    .at(Origin::file(&path)),
                );
                continue;
            }
            if is_manifest {
                read_manifest(&mut b, &path, docs);
            } else {
                read_metadata(&mut b, &rel, annotations_file, docs);
            }
        }
        format::check_loaded(&mut b);
        b
    }
}

fn read_manifest(b: &mut Bundle, path: &Path, docs: Vec<Document>) {
    for doc in docs {
        match Object::from_document(doc) {
            Ok(o) => b.objects.push(o),
            Err(e) => b.findings.push(yaml_finding(&b.name, path, &e)),
        }
    }
}

/// Whether a metadata file is meant to be the annotations file (`annotations.yaml` and the
/// like): when it does not qualify, BF003 says why.
fn is_annotations_name(rel: &Path) -> bool {
    rel.file_stem().is_some_and(|s| s == "annotations")
}

/// Whether YAML text holds nothing: only white space, comments and document markers.
fn is_blank(text: &str) -> bool {
    text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#') || l == "---" || l == "..."
    })
}

/// What a YAML value is, for messages: `a sequence`, `the string "x"`.
fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a sequence",
        serde_json::Value::Object(_) => "a mapping",
    }
}

fn read_metadata(b: &mut Bundle, rel: &Path, annotations_file: bool, docs: Vec<Document>) {
    let doc = match docs {
        mut d if d.len() == 1 => d.remove(0),
        d if d.is_empty() => return,
        d => {
            if annotations_file {
                b.rejected_annotations.push((
                    d[1].origin(""),
                    format!(
                        "{} holds {} YAML documents; it must hold one mapping with an \
                         `annotations:` map",
                        opship_core::paths::show(rel),
                        d.len()
                    ),
                ));
            }
            b.findings.push(
                Finding::new(
                    &format::BF008,
                    &b.name,
                    format!("expected one YAML document, found {}", d.len()),
                )
                .at(d[1].origin("")),
            );
            return;
        }
    };
    // The reference tries each metadata file as each known shape; the first that fits wins.
    if doc.value.get("annotations").is_some_and(|v| v.is_object()) {
        if b.annotations.is_some() {
            b.findings.push(
                Finding::new(
                    &format::BF003,
                    &b.name,
                    "a second annotations file; only the first (in file-name order) is used",
                )
                .with_level(crate::Level::Warning)
                .at(doc.origin("/annotations")),
            );
            return;
        }
        let mut values = BTreeMap::new();
        if let Some(map) = doc.value["annotations"].as_object() {
            for (k, v) in map {
                match v {
                    serde_json::Value::String(s) => {
                        values.insert(k.clone(), s.clone());
                    }
                    serde_json::Value::Null => {}
                    other => {
                        // The reference's YAML decoder reads the scalar's text into the string
                        // map, so `true` works there; opship does the same and advises quoting.
                        let text = match other {
                            serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {
                                other.to_string()
                            }
                            _ => String::new(),
                        };
                        values.insert(k.clone(), text);
                        b.findings.push(
                            Finding::new(
                                &format::BF016,
                                &b.name,
                                format!(
                                    "annotation `{k}` is `{other}`, not a string; quote it so \
                                     every reader sees the same text"
                                ),
                            )
                            .at(doc.origin(&format!(
                                "/annotations/{}",
                                yaml::escape_pointer_token(k)
                            ))),
                        );
                    }
                }
            }
        }
        b.annotations = Some(Annotations { doc, values });
    } else if doc.value.get("dependencies").is_some() {
        b.dependencies = Some(doc);
    } else if doc.value.get("properties").is_some() {
        b.properties = Some(doc);
    } else if annotations_file {
        let why = match &doc.value {
            serde_json::Value::Object(m) => match m.get("annotations") {
                Some(v) => format!(
                    "has `annotations:` but it is {}, not a mapping of strings",
                    kind_of(v)
                ),
                None => {
                    let keys: Vec<&str> = m.keys().take(5).map(String::as_str).collect();
                    format!(
                        "has no `annotations:` key (it has: {}{})",
                        keys.join(", "),
                        if m.len() > keys.len() { ", …" } else { "" }
                    )
                }
            },
            other => format!(
                "is {}; it must be a mapping with an `annotations:` map",
                kind_of(other)
            ),
        };
        let at = if doc.value.get("annotations").is_some() {
            doc.origin("/annotations")
        } else {
            doc.origin("")
        };
        b.rejected_annotations
            .push((at, format!("{} {why}", opship_core::paths::show(rel))));
    }
}

fn duplicates(b: &mut Bundle, dups: Vec<yaml::DuplicateKey>) {
    for d in dups {
        b.findings.push(
            Finding::new(
                &format::BF017,
                &b.name,
                format!(
                    "key `{}` is given twice in one mapping; the later value is used",
                    d.key
                ),
            )
            .at(d.origin),
        );
    }
}

/// A metadata file other than the annotations file that cannot be decoded (dependencies.yaml,
/// properties.yaml) is skipped by opm when it renders the bundle or adds it to an index (its
/// bundle parser tries each metadata file as each shape and keeps what decodes), and
/// operator-framework/api never reads it: the bundle still loads, without what the file says.
/// So the finding is a warning, which is the level opm gives it.
fn skipped_by_opm(f: Finding, is_manifest: bool, annotations_file: bool) -> Finding {
    if is_manifest || annotations_file || f.rule.id != "BF008" {
        return f;
    }
    let message = format!(
        "{}; opm skips a metadata file it cannot decode (the bundle renders and indexes without \
         its dependencies or properties)",
        f.message
    );
    Finding {
        message: crate::rule::bounded(message),
        ..f
    }
    .with_level(crate::Level::Warning)
}

fn yaml_finding(bundle: &str, path: &Path, err: &opship_core::error::Error) -> Finding {
    let (origin, message) = match err {
        opship_core::error::Error::Yaml { origin, message }
        | opship_core::error::Error::Invalid { origin, message } => {
            (origin.clone(), message.clone())
        }
        other => (Origin::file(path), other.to_string()),
    };
    let rule = if matches!(err, opship_core::error::Error::Invalid { .. }) {
        &format::BF009
    } else {
        &format::BF008
    };
    Finding::new(rule, bundle, message).at(origin)
}

/// gzip size at level 6, the level of Go's `gzip.DefaultCompression` the reference uses.
pub fn gzip_size(bytes: &[u8]) -> u64 {
    gzip_size_at(bytes, 6)
}

/// gzip size at a compression level.
fn gzip_size_at(bytes: &[u8], level: u32) -> u64 {
    struct Counter(u64);
    impl Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // A gzip member is the raw deflate stream between a 10-byte header (no name, comment or
    // extra field, as Go writes it) and an 8-byte trailer; deflating alone gives the same size
    // without computing the CRC the trailer would hold.
    const GZIP_FRAME: u64 = 10 + 8;
    let mut enc = flate2::write::DeflateEncoder::new(Counter(0), flate2::Compression::new(level));
    // Writing to a counter cannot fail.
    let _ = enc.write_all(bytes);
    enc.finish()
        .map(|c| c.0 + GZIP_FRAME)
        .unwrap_or(bytes.len() as u64)
}

/// Makes an `Origin` for a path (helper for checks that point at a whole file).
pub fn file_origin(path: &Path) -> Origin {
    Origin {
        file: Arc::from(path),
        pos: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_size_is_the_length_of_the_gzip_file() {
        let text = "apiVersion: v1\nkind: ConfigMap\n".repeat(5000);
        for data in [&b""[..], b"x", text.as_bytes()] {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
            enc.write_all(data).unwrap();
            let real = enc.finish().unwrap().len() as u64;
            assert_eq!(gzip_size(data), real);
        }
    }
}

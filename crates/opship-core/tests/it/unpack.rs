//! Safe unpacking of image layers: hostile archives built byte by byte are refused with the
//! entry named and nothing written anywhere; real bundle layers unpack in memory and on disk.

use std::cell::Cell;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use flate2::Compression;
use flate2::read::GzEncoder;
use opship_core::error::Error;
use opship_core::image::unpack::{self, DirUnpacker, Limits, MemoryUnpacker};
use tar::{EntryType, Header};

/// A raw GNU header: the path and link name are written as bytes, unchecked.
fn header(path: &[u8], ty: EntryType, size: u64, link: &[u8]) -> Header {
    let mut h = Header::new_gnu();
    let old = h.as_old_mut();
    old.name = [0; 100];
    old.name[..path.len()].copy_from_slice(path);
    old.linkname = [0; 100];
    old.linkname[..link.len()].copy_from_slice(link);
    h.set_entry_type(ty);
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_cksum();
    h
}

/// One entry of a hostile archive.
enum E<'a> {
    File(&'a str, &'a [u8]),
    Dir(&'a str),
    Raw(&'a [u8], EntryType, &'a [u8]),
}

fn tar_of(entries: &[E<'_>]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        match e {
            E::File(p, data) => {
                let h = header(p.as_bytes(), EntryType::Regular, data.len() as u64, b"");
                b.append(&h, *data).unwrap();
            }
            E::Dir(p) => {
                let h = header(p.as_bytes(), EntryType::Directory, 0, b"");
                b.append(&h, io::empty()).unwrap();
            }
            E::Raw(p, ty, link) => {
                let h = header(p, *ty, 0, link);
                b.append(&h, io::empty()).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Every path under `dir`, relative, sorted.
fn snapshot(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                walk(root, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Asserts the layer is refused in memory and on disk with an error naming `entry` and
/// containing `why`, and that nothing was written: the sandbox around the target (which holds
/// the target's parent and the places a `..` would reach) is as before.
fn refused(layer: &[u8], limits: &Limits, entry: &str, why: &str) {
    let check = |e: Error| {
        let msg = e.to_string();
        match &e {
            Error::Unsafe { path, .. } => assert_eq!(path, Path::new(entry), "{msg}"),
            other => panic!("expected a refusal naming {entry}, got {other:?}"),
        }
        assert!(msg.contains(why), "{msg:?} lacks {why:?}");
    };
    check(unpack::read_layer(layer, limits).unwrap_err());

    let sandbox = tempfile::tempdir().unwrap();
    let parent = sandbox.path().join("a/b");
    fs::create_dir_all(&parent).unwrap();
    let before = snapshot(sandbox.path());
    let target = parent.join("out");
    check(unpack::unpack_layer(layer, &target, limits).unwrap_err());
    assert_eq!(snapshot(sandbox.path()), before, "something was written");
    assert!(!target.exists());

    // An existing empty target stays empty.
    fs::create_dir(&target).unwrap();
    check(unpack::unpack_layer(layer, &target, limits).unwrap_err());
    assert!(snapshot(&target).is_empty());
}

#[test]
fn path_traversal_is_refused() {
    let layer = tar_of(&[
        E::File("manifests/ok.yaml", b"a: 1\n"),
        E::File("../../etc/x", b"pwned"),
    ]);
    refused(&layer, &Limits::default(), "../../etc/x", "`..`");
    refused(&gzip(&layer), &Limits::default(), "../../etc/x", "`..`");
    let layer = tar_of(&[E::File("manifests/../../x", b"pwned")]);
    refused(&layer, &Limits::default(), "manifests/../../x", "`..`");
    let layer = tar_of(&[E::File("/../etc/x", b"pwned")]);
    refused(&layer, &Limits::default(), "/../etc/x", "`..`");
}

#[test]
fn absolute_paths_stay_inside() {
    // A leading `/` means the layer's root, as in a container runtime.
    let layer = tar_of(&[E::File("/etc/passwd", b"root:x:0:0\n"), E::Dir("/")]);
    let files = unpack::read_layer(&layer[..], &Limits::default()).unwrap();
    assert_eq!(
        files,
        vec![(PathBuf::from("etc/passwd"), b"root:x:0:0\n".to_vec())]
    );
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out");
    unpack::unpack_layer(&layer[..], &target, &Limits::default()).unwrap();
    assert_eq!(snapshot(dir.path()), ["out", "out/etc", "out/etc/passwd"]);
}

#[test]
fn symlinks_are_refused() {
    // A symlink to /etc, then a file through it.
    let layer = tar_of(&[
        E::Raw(b"evil", EntryType::Symlink, b"/etc"),
        E::File("evil/passwd", b"pwned"),
    ]);
    refused(&layer, &Limits::default(), "evil", "symbolic link");
    // A symlinked directory inside the layer is refused as well.
    let layer = tar_of(&[
        E::Dir("manifests/"),
        E::Raw(b"m", EntryType::Symlink, b"manifests"),
        E::File("m/csv.yaml", b"a: 1\n"),
    ]);
    refused(&layer, &Limits::default(), "m", "symbolic link");
}

#[test]
fn hardlinks_outside_are_refused_and_inside_copied() {
    let layer = tar_of(&[E::Raw(b"link", EntryType::Link, b"../../etc/shadow")]);
    refused(&layer, &Limits::default(), "link", "`..`");
    let layer = tar_of(&[E::Raw(b"link", EntryType::Link, b"/etc/shadow")]);
    refused(&layer, &Limits::default(), "link", "hard link");
    let layer = tar_of(&[
        E::Dir("d"),
        E::Raw(b"link", EntryType::Link, b"d"),
        E::File("link/x", b""),
    ]);
    refused(&layer, &Limits::default(), "link", "hard link");

    // A link to a file met before becomes a copy.
    let layer = tar_of(&[
        E::File("a.yaml", b"a: 1\n"),
        E::Raw(b"b.yaml", EntryType::Link, b"./a.yaml"),
    ]);
    let files = unpack::read_layer(&layer[..], &Limits::default()).unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[1], (PathBuf::from("b.yaml"), b"a: 1\n".to_vec()));
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out");
    unpack::unpack_layer(&layer[..], &target, &Limits::default()).unwrap();
    assert_eq!(fs::read(target.join("b.yaml")).unwrap(), b"a: 1\n");
    assert!(
        fs::symlink_metadata(target.join("b.yaml"))
            .unwrap()
            .is_file()
    );
}

#[test]
fn devices_and_fifos_are_refused() {
    for ty in [EntryType::Char, EntryType::Block, EntryType::Fifo] {
        let layer = tar_of(&[E::Raw(b"dev/null", ty, b"")]);
        refused(&layer, &Limits::default(), "dev/null", "device or fifo");
    }
    let layer = tar_of(&[E::Raw(b"x", EntryType::new(b'Z'), b"")]);
    refused(&layer, &Limits::default(), "x", "only regular files");
}

#[test]
fn paths_through_files_are_refused() {
    let layer = tar_of(&[E::File("manifests", b"x"), E::File("manifests/a.yaml", b"")]);
    refused(
        &layer,
        &Limits::default(),
        "manifests/a.yaml",
        "through the file",
    );
    let layer = tar_of(&[E::File("a", b"x"), E::Dir("a/")]);
    refused(&layer, &Limits::default(), "a/", "over a file");
    let layer = tar_of(&[E::Dir("a/"), E::File("a", b"x")]);
    refused(&layer, &Limits::default(), "a", "over a directory");
}

#[test]
fn whiteouts_are_refused() {
    let layer = tar_of(&[E::File("manifests/.wh.csv.yaml", b"")]);
    refused(
        &layer,
        &Limits::default(),
        "manifests/.wh.csv.yaml",
        "whiteout",
    );
    let layer = tar_of(&[E::File("manifests/.wh..wh..opq", b"")]);
    refused(
        &layer,
        &Limits::default(),
        "manifests/.wh..wh..opq",
        "whiteout",
    );
}

/// A reader that produces chunks on demand and counts what it produced: hostile archives of
/// gigabytes are generated only as far as the unpacker reads them.
struct Lazy<F> {
    next: u64,
    buf: Vec<u8>,
    pos: usize,
    make: F,
    produced: Rc<Cell<u64>>,
}

impl<F: FnMut(u64) -> Option<Vec<u8>>> Read for Lazy<F> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.buf.len() {
            match (self.make)(self.next) {
                Some(b) => {
                    self.next += 1;
                    self.buf = b;
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        self.produced.set(self.produced.get() + n as u64);
        Ok(n)
    }
}

const MIB: u64 = 1024 * 1024;

/// A gzipped tar whose one entry (of type `ty`, named `name`) holds 1 GiB of zeros, compressed
/// as it is read. The counter tells how many uncompressed bytes were generated.
fn zero_bomb(name: &str, ty: EntryType) -> (impl Read, Rc<Cell<u64>>) {
    let produced = Rc::new(Cell::new(0));
    let h = header(name.as_bytes(), ty, 1024 * MIB, b"");
    let lazy = Lazy {
        next: 0,
        buf: Vec::new(),
        pos: 0,
        make: move |i| match i {
            0 => Some(h.as_bytes().to_vec()),
            1..=1024 => Some(vec![0; MIB as usize]),
            1025 => Some(vec![0; 1024]),
            _ => None,
        },
        produced: produced.clone(),
    };
    (GzEncoder::new(lazy, Compression::fast()), produced)
}

fn assert_refused_names(e: Error, entry: &str, why: &str) {
    let msg = e.to_string();
    match &e {
        Error::Unsafe { path, .. } => assert_eq!(path, Path::new(entry), "{msg}"),
        other => panic!("expected a refusal naming {entry}, got {other:?}"),
    }
    assert!(msg.contains(why), "{msg:?} lacks {why:?}");
}

#[test]
fn gzip_bomb_of_one_big_file_is_refused_from_its_header() {
    let (bomb, produced) = zero_bomb("manifests/big.yaml", EntryType::Regular);
    let e = unpack::read_layer(bomb, &Limits::default()).unwrap_err();
    assert_refused_names(e, "manifests/big.yaml", "per file");
    assert!(produced.get() < 8 * MIB, "read {} bytes", produced.get());

    let dir = tempfile::tempdir().unwrap();
    let (bomb, produced) = zero_bomb("manifests/big.yaml", EntryType::Regular);
    let e = unpack::unpack_layer(bomb, &dir.path().join("out"), &Limits::default()).unwrap_err();
    assert_refused_names(e, "manifests/big.yaml", "per file");
    assert!(produced.get() < 8 * MIB);
    assert!(snapshot(dir.path()).is_empty());
}

#[test]
fn gzip_bomb_in_a_long_name_stops_on_the_ratio() {
    // A GNU long-name entry is read whole by the tar parser: only the stream guard stops it.
    let (bomb, produced) = zero_bomb("././@LongLink", EntryType::GNULongName);
    let e = unpack::read_layer(bomb, &Limits::default()).unwrap_err();
    assert_refused_names(e, "(layer)", "times its compressed size");
    assert!(produced.get() < 64 * MIB, "read {} bytes", produced.get());
}

#[test]
fn gzip_bomb_stops_on_the_stream_budget_without_the_ratio() {
    let limits = Limits {
        max_total_bytes: MIB,
        max_entries: 10,
        max_ratio: 0,
        ..Limits::default()
    };
    let (bomb, produced) = zero_bomb("././@LongLink", EntryType::GNULongName);
    let dir = tempfile::tempdir().unwrap();
    let e = unpack::unpack_layer(bomb, &dir.path().join("out"), &limits).unwrap_err();
    assert_refused_names(e, "(layer)", "decompresses to more than");
    assert!(produced.get() < 8 * MIB, "read {} bytes", produced.get());
    assert!(snapshot(dir.path()).is_empty());
}

#[test]
fn total_and_per_file_budgets() {
    let limits = Limits {
        max_total_bytes: 100,
        max_file_bytes: 60,
        ..Limits::default()
    };
    let layer = tar_of(&[E::File("a", &[b'a'; 61])]);
    refused(&layer, &limits, "a", "per file");
    let layer = tar_of(&[
        E::File("a", &[b'a'; 60]),
        E::File("b", &[b'b'; 30]),
        E::File("c", &[b'c'; 30]),
    ]);
    refused(&layer, &limits, "c", "budget of 100 bytes");
    // A hard link counts as a copy.
    let layer = tar_of(&[
        E::File("a", &[b'a'; 60]),
        E::Raw(b"b", EntryType::Link, b"a"),
    ]);
    refused(&layer, &limits, "b", "budget of 100 bytes");
}

#[test]
fn hundred_thousand_tiny_files_are_refused() {
    let produced = Rc::new(Cell::new(0));
    let lazy = Lazy {
        next: 0,
        buf: Vec::new(),
        pos: 0,
        make: |i: u64| {
            if i < 100_000 {
                let name = format!("manifests/f{i}.yaml");
                Some(
                    header(name.as_bytes(), EntryType::Regular, 0, b"")
                        .as_bytes()
                        .to_vec(),
                )
            } else if i == 100_000 {
                Some(vec![0; 1024])
            } else {
                None
            }
        },
        produced: produced.clone(),
    };
    let e = unpack::read_layer(
        GzEncoder::new(lazy, Compression::fast()),
        &Limits::default(),
    )
    .unwrap_err();
    // The implicit `manifests` directory is no entry of the archive: the 20,001st file is refused.
    assert_refused_names(e, "manifests/f20000.yaml", "more than 20000 entries");
    assert!(produced.get() < 20_100 * 512);
}

#[test]
fn truncated_and_odd_layers() {
    let layer = tar_of(&[E::File("a.yaml", &[b'a'; 2000])]);
    refused(
        &layer[..1200],
        &Limits::default(),
        "a.yaml",
        "could not read",
    );
    let e = unpack::read_layer(&[0x28, 0xb5, 0x2f, 0xfd, 0][..], &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("zstd"), "{e}");
    let e = unpack::read_layer(&[7u8; 600][..], &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("not a valid tar"), "{e}");
    // Empty input is an empty layer.
    assert!(
        unpack::read_layer(&[][..], &Limits::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn target_must_be_empty() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("keep"), b"x").unwrap();
    let layer = tar_of(&[E::File("a", b"x")]);
    let e = unpack::unpack_layer(&layer[..], dir.path(), &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("not empty"), "{e}");
    assert_eq!(snapshot(dir.path()), ["keep"]);
}

#[test]
fn long_names_gnu_and_pax() {
    let long = format!("manifests/{}.yaml", "x".repeat(150));
    let pax_long = format!("metadata/{}.yaml", "p".repeat(200));
    let mut b = tar::Builder::new(Vec::new());
    // GNU long name (`L` entry), written by the tar crate for a GNU header.
    let mut h = Header::new_gnu();
    h.set_size(3);
    h.set_mode(0o644);
    b.append_data(&mut h, &long, &b"a: "[..]).unwrap();
    // PAX `path` record.
    let value = format!("path={pax_long}\n");
    let mut len = value.len() + 2;
    while format!("{len} {value}").len() != len {
        len += 1;
    }
    let record = format!("{len} {value}");
    assert_eq!(record.len(), len);
    let h = header(
        b"PaxHeaders/x",
        EntryType::XHeader,
        record.len() as u64,
        b"",
    );
    b.append(&h, record.as_bytes()).unwrap();
    let h = header(b"short-name", EntryType::Regular, 2, b"");
    b.append(&h, &b"b\n"[..]).unwrap();
    let layer = b.into_inner().unwrap();

    let files = unpack::read_layer(&layer[..], &Limits::default()).unwrap();
    let names: Vec<_> = files.iter().map(|(p, _)| p.display().to_string()).collect();
    assert_eq!(names, [long.clone(), pax_long.clone()]);

    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out");
    let written = unpack::unpack_layer(&gzip(&layer)[..], &target, &Limits::default()).unwrap();
    assert_eq!(written, [PathBuf::from(&long), PathBuf::from(&pax_long)]);
    assert_eq!(fs::read(target.join(&pax_long)).unwrap(), b"b\n");
}

/// A layer as `docker build` writes it for the bundle: `./`-prefixed directories and files, with
/// modes that must not survive (setuid, world-writable).
fn bundle_layer(bundle: &Path) -> (Vec<u8>, Vec<(PathBuf, Vec<u8>)>) {
    let mut b = tar::Builder::new(Vec::new());
    let mut expected = Vec::new();
    for top in ["manifests", "metadata"] {
        let mut h = Header::new_ustar();
        h.set_entry_type(EntryType::Directory);
        h.set_mode(0o777);
        h.set_size(0);
        b.append_data(&mut h, format!("./{top}/"), io::empty())
            .unwrap();
        let mut names: Vec<_> = fs::read_dir(bundle.join(top))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        for name in names {
            let bytes = fs::read(bundle.join(top).join(&name)).unwrap();
            let mut h = Header::new_ustar();
            h.set_mode(0o4777);
            h.set_size(bytes.len() as u64);
            b.append_data(&mut h, format!("./{top}/{name}"), &bytes[..])
                .unwrap();
            expected.push((PathBuf::from(top).join(&name), bytes));
        }
    }
    expected.sort();
    (gzip(&b.into_inner().unwrap()), expected)
}

#[test]
fn bundle_layer_unpacks_in_memory_and_on_disk() {
    let bundle = crate::tracked("bundle/0.3.0");
    let (layer, expected) = bundle_layer(&bundle);
    assert!(expected.len() >= 8);

    let files = unpack::read_layer(&layer[..], &Limits::default()).unwrap();
    assert_eq!(files, expected);
    assert!(files
        .iter()
        .any(|(p, _)| p == Path::new("manifests/memcached-operator.clusterserviceversion.yaml")));
    assert!(
        files
            .iter()
            .any(|(p, _)| p == Path::new("metadata/annotations.yaml"))
    );
    // What `load_files` needs: every object parses as YAML.
    for (p, bytes) in &files {
        let text = std::str::from_utf8(bytes).unwrap();
        opship_core::yaml::parse_stream(text, p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }

    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("pulled/bundle");
    let written = unpack::unpack_layer(&layer[..], &target, &Limits::default()).unwrap();
    assert_eq!(
        written,
        expected.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>()
    );
    for (p, bytes) in &expected {
        assert_eq!(&fs::read(target.join(p)).unwrap(), bytes, "{}", p.display());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(target.join(p)).unwrap().permissions().mode();
            assert_eq!(mode & 0o7777, 0o644 & !umask(), "{}", p.display());
        }
    }
    // Nothing but the target next to it: the temporary directory was renamed away.
    assert_eq!(
        snapshot(&dir.path().join("pulled"))
            .iter()
            .filter(|p| !p.contains('/'))
            .count(),
        1
    );
}

#[cfg(unix)]
fn umask() -> u32 {
    // The mode a fresh file gets tells the umask.
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("probe");
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o777)
        .open(&p)
        .unwrap();
    !fs::metadata(&p).unwrap().permissions().mode() & 0o777
}

#[test]
fn layers_stack_and_share_budgets() {
    let l1 = tar_of(&[
        E::File("manifests/a.yaml", b"one"),
        E::File("metadata/x", b"x"),
    ]);
    let l2 = gzip(&tar_of(&[E::File("manifests/a.yaml", b"two")]));
    let mut m = MemoryUnpacker::new(Limits::default());
    m.add_layer(&l1[..]).unwrap();
    m.add_layer(&l2[..]).unwrap();
    assert_eq!(
        m.finish(),
        [
            (PathBuf::from("manifests/a.yaml"), b"two".to_vec()),
            (PathBuf::from("metadata/x"), b"x".to_vec()),
        ]
    );

    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out");
    let mut d = DirUnpacker::new(&target, Limits::default()).unwrap();
    d.add_layer(&l1[..]).unwrap();
    d.add_layer(&l2[..]).unwrap();
    d.finish().unwrap();
    assert_eq!(fs::read(target.join("manifests/a.yaml")).unwrap(), b"two");

    // A refused second layer throws the first away too.
    let bad = tar_of(&[E::File("../x", b"")]);
    let mut d = DirUnpacker::new(&target.with_extension("2"), Limits::default()).unwrap();
    d.add_layer(&l1[..]).unwrap();
    assert!(d.add_layer(&bad[..]).is_err());
    assert!(d.add_layer(&l2[..]).is_err());
    assert!(d.finish().is_err());
    assert_eq!(
        snapshot(dir.path())
            .iter()
            .filter(|p| !p.contains('/'))
            .count(),
        1
    );

    // Budgets count over all layers.
    let limits = Limits {
        max_entries: 2,
        ..Limits::default()
    };
    let mut m = MemoryUnpacker::new(limits);
    m.add_layer(&l1[..]).unwrap();
    assert!(m.add_layer(&l2[..]).is_err());
}

#[test]
fn layers_written_by_opship_build_unpack_to_the_same_files() {
    use opship_core::image::layer;
    let bundle = crate::tracked("bundle/0.3.0");
    let entries = layer::collect(&bundle, &["manifests", "metadata", "tests/scorecard"]).unwrap();
    let built = layer::build(&entries, 0).unwrap();
    let files = unpack::read_layer(&built.gzip[..], &Limits::default()).unwrap();
    let expected: Vec<(PathBuf, Vec<u8>)> = entries
        .iter()
        .filter_map(|e| {
            let src = e.source.as_ref()?;
            Some((PathBuf::from(&e.path), fs::read(src).unwrap()))
        })
        .collect();
    assert_eq!(files, expected);
    assert!(
        files
            .iter()
            .any(|(p, _)| p == Path::new("tests/scorecard/config.yaml"))
    );
}

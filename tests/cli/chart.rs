//! `opship chart render | package | index | push` end to end: every version of the sample,
//! nothing written on a bad template, reproducible archives, a chart pushed to a real
//! registry (`docker-registry`) and pulled back by the Helm v4 SDK, and kustomize overlays
//! built by the real kustomize (`kubectl kustomize`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support_registry::{TestRegistry, isolated};
use crate::{hidden_entries, opship, read_tree, repo, run, sample_copy};

/// The Python with helm-python-sdk (scripts/test sets OPSHIP_PYTHON).
fn python() -> PathBuf {
    std::env::var_os("OPSHIP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"))
}

pub(crate) fn helm(args: &[&str]) -> serde_json::Value {
    let out = Command::new(python())
        .arg(repo().join("tests/scripts/helm_check.py"))
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("no Python with helm-python-sdk ({e}); run scripts/test or set OPSHIP_PYTHON")
        });
    assert!(
        out.status.success(),
        "helm_check.py {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn render_sample(version: &str, out: &Path) -> PathBuf {
    let r = run(opship()
        .arg("-c")
        .arg(repo().join("bundle/opship.yaml"))
        .args(["chart", "render", "--bundle"])
        .arg(repo().join("bundle").join(version))
        .arg("--output")
        .arg(out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    out.join("memcached-operator")
}

#[test]
fn render_all_versions_and_nothing_written_on_a_bad_template() {
    let (tmp, bundle) = sample_copy();
    let cfg = bundle.join("opship.yaml");
    let out = tmp.path().join("charts");
    let r = run(opship()
        .arg("-c")
        .arg(&cfg)
        .args(["chart", "render", "--all", "--output"])
        .arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        let chart = out.join(v).join("memcached-operator");
        let text = std::fs::read_to_string(chart.join("Chart.yaml")).unwrap();
        assert!(text.contains(&format!("version: \"{v}\"")), "{text}");
        assert!(chart.join("values-prod.yaml").is_file());
        assert!(
            r.stdout.contains(&chart.display().to_string()),
            "{}",
            r.stdout
        );
    }
    let before = read_tree(&out);

    // A replacement of an embedded template with a Helm expression Handlebars would take:
    // exit 2, the file and line named, the charts on disk untouched, no temporary directory
    // left behind.
    let templates = tmp.path().join("templates");
    std::fs::create_dir_all(templates.join("templates")).unwrap();
    let bad = templates.join("templates/NOTES.txt.hbs");
    std::fs::write(
        &bad,
        "{{csv.displayName}} is installed.\n\nNamespace: {{ .Release.Namespace }}\n",
    )
    .unwrap();
    let r = run(opship()
        .arg("-c")
        .arg(&cfg)
        .args(["chart", "render", "--all", "--output"])
        .arg(&out)
        .arg("--templates")
        .arg(&templates));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("{}:3", bad.display())),
        "{}",
        r.stderr
    );
    assert_eq!(read_tree(&out), before);
    for v in ["0.1.0", "0.2.0", "0.3.0"] {
        assert!(hidden_entries(&out.join(v)).is_empty());
    }

    // A bundle that is not one: exit 2, nothing written.
    let fresh = tmp.path().join("fresh");
    let r = run(opship()
        .args(["chart", "render", "--bundle"])
        .arg(tmp.path())
        .arg("--output")
        .arg(&fresh));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("manifests"), "{}", r.stderr);
    assert!(!fresh.exists());
}

#[test]
fn package_is_reproducible_and_index_is_dated_by_source_date_epoch() {
    let tmp = tempfile::tempdir().unwrap();
    let chart = render_sample("0.3.0", &tmp.path().join("a"));
    let chart_b = render_sample("0.3.0", &tmp.path().join("b"));
    let mut digests = Vec::new();
    for (c, dest) in [(&chart, "p1"), (&chart_b, "p2")] {
        let r = run(opship()
            .env("SOURCE_DATE_EPOCH", "1700000000")
            .args(["chart", "package"])
            .arg(c)
            .arg("--destination")
            .arg(tmp.path().join(dest)));
        assert_eq!(r.code, 0, "{}", r.stderr);
        let line = r.stdout.trim().to_owned();
        assert!(line.contains(".tgz sha256:"), "{line}");
        digests.push(line.split(' ').nth(1).unwrap().to_owned());
    }
    assert_eq!(digests[0], digests[1]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(tmp.path().join("p1/memcached-operator-0.3.0.tgz"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "archives are served: world-readable");
    }
    let a = std::fs::read(tmp.path().join("p1/memcached-operator-0.3.0.tgz")).unwrap();
    let b = std::fs::read(tmp.path().join("p2/memcached-operator-0.3.0.tgz")).unwrap();
    assert_eq!(a, b);

    let r = run(opship()
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args(["chart", "index"])
        .arg(tmp.path().join("p1"))
        .args(["--url", "https://charts.example.com"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let index = std::fs::read_to_string(tmp.path().join("p1/index.yaml")).unwrap();
    assert!(
        index.contains("generated: \"2023-11-14T22:13:20Z\""),
        "{index}"
    );
    assert!(
        index.contains("https://charts.example.com/memcached-operator-0.3.0.tgz"),
        "{index}"
    );
    assert!(
        index.contains(digests[0].trim_start_matches("sha256:")),
        "{index}"
    );

    let r = run(opship()
        .env("SOURCE_DATE_EPOCH", "soon")
        .args(["chart", "package"])
        .arg(&chart)
        .arg("--destination")
        .arg(tmp.path().join("p3")));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("SOURCE_DATE_EPOCH"), "{}", r.stderr);
    assert!(!tmp.path().join("p3").exists());
}

#[test]
fn pushed_chart_is_pulled_back_by_helm() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let chart = render_sample("0.3.0", &tmp.path().join("charts"));
    let pkgs = tmp.path().join("pkgs");
    let r = run(opship()
        .args(["chart", "package"])
        .arg(&chart)
        .arg("-d")
        .arg(&pkgs));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let tgz = pkgs.join("memcached-operator-0.3.0.tgz");
    let remote = format!("oci://{}/charts", reg.addr);
    let r = run(isolated(&home)
        .args(["chart", "push"])
        .arg(&tgz)
        .arg(&remote));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with(&format!(
            "{}/charts/memcached-operator:0.3.0@sha256:",
            reg.addr
        )),
        "{}",
        r.stdout
    );

    // Helm sees it: tags, Chart.yaml, and the pulled archive is ours byte for byte.
    let repo_ref = format!("{}/charts/memcached-operator", reg.addr);
    assert_eq!(
        helm(&["tags", &repo_ref])["tags"],
        serde_json::json!(["0.3.0"])
    );
    let shown = helm(&["show", &format!("oci://{repo_ref}:0.3.0")]);
    let text = shown["chart"].as_str().unwrap_or_else(|| panic!("{shown}"));
    assert!(text.contains("name: memcached-operator"), "{text}");
    let pulled = tmp.path().join("pulled");
    std::fs::create_dir(&pulled).unwrap();
    let p = helm(&[
        "pull",
        &format!("oci://{repo_ref}"),
        "0.3.0",
        pulled.to_str().unwrap(),
    ]);
    assert!(p.get("error").is_none(), "{p}");
    assert_eq!(
        std::fs::read(pulled.join("memcached-operator-0.3.0.tgz")).unwrap(),
        std::fs::read(&tgz).unwrap()
    );

    // Pushing again is a no-op; other content under the same version is refused unless
    // forced.
    let r = run(isolated(&home)
        .args(["chart", "push"])
        .arg(&tgz)
        .arg(&remote));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("(unchanged)"), "{}", r.stdout);
    let other = tmp.path().join("other");
    let r = run(opship()
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args(["chart", "package"])
        .arg(&chart)
        .arg("-d")
        .arg(&other));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let other_tgz = other.join("memcached-operator-0.3.0.tgz");
    let r = run(isolated(&home)
        .args(["chart", "push"])
        .arg(&other_tgz)
        .arg(&remote));
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("already exists"), "{}", r.stderr);
    let r = run(isolated(&home)
        .args(["chart", "push", "--force"])
        .arg(&other_tgz)
        .arg(&remote));
    assert_eq!(r.code, 0, "{}", r.stderr);

    // A version with build metadata is tagged with `_` for `+`; Helm maps it back.
    let plus = tmp.path().join("plus/memcached-operator");
    crate::copy_dir(&chart, &plus);
    let cy = plus.join("Chart.yaml");
    let text = std::fs::read_to_string(&cy)
        .unwrap()
        .replace("version: \"0.3.0\"", "version: \"0.3.0+build.7\"");
    std::fs::write(&cy, text).unwrap();
    let r = run(opship()
        .args(["chart", "package"])
        .arg(&plus)
        .arg("-d")
        .arg(&pkgs));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = run(isolated(&home)
        .args(["chart", "push"])
        .arg(pkgs.join("memcached-operator-0.3.0+build.7.tgz"))
        .arg(&remote));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains(":0.3.0_build.7@"), "{}", r.stdout);
    let tags = helm(&["tags", &repo_ref])["tags"].clone();
    assert!(
        tags.as_array()
            .unwrap()
            .iter()
            .any(|t| t == "0.3.0+build.7"),
        "{tags}"
    );

    // Not an oci:// target.
    let r = run(isolated(&home)
        .args(["chart", "push"])
        .arg(&tgz)
        .arg(&reg.addr));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("oci://"), "{}", r.stderr);
}

#[test]
fn overlays_build_with_kubectl_kustomize() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("charts");
    let r = run(opship()
        .arg("-c")
        .arg(repo().join("bundle/opship.yaml"))
        .args(["chart", "render", "--overlays", "--bundle"])
        .arg(repo().join("bundle/0.3.0"))
        .arg("--output")
        .arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let kubectl = std::env::var("OPSHIP_KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let overlays = out.join("overlays");
    for (env, replicas, cpu) in [("staging", 1, "10m"), ("prod", 2, "100m")] {
        let o = Command::new(&kubectl)
            .arg("kustomize")
            .arg(overlays.join(env))
            .output()
            .unwrap_or_else(|e| panic!("{kubectl} not runnable ({e}); scripts/test installs it"));
        assert!(
            o.status.success(),
            "{env}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let docs = opship_core::yaml::parse_stream(
            &String::from_utf8(o.stdout).unwrap(),
            Path::new("kustomize"),
        )
        .unwrap();
        let dep = docs
            .iter()
            .map(|d| &d.value)
            .find(|v| v["kind"] == "Deployment")
            .expect("a deployment");
        assert_eq!(dep["spec"]["replicas"], replicas, "{env}");
        assert_eq!(
            dep["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], cpu,
            "{env}"
        );
        assert_eq!(dep["metadata"]["namespace"], "memcached-operator");
        assert!(
            docs.iter()
                .any(|d| d.value["kind"] == "CustomResourceDefinition")
        );
        assert!(docs.iter().any(|d| d.value["kind"] == "ClusterRoleBinding"));
    }
}

/// With a registry that wants a password: the right one pushes, a wrong one is an error
/// quoting the registry, exit 2.
#[test]
fn chart_push_with_credentials() {
    use std::io::Write;
    let reg = TestRegistry::start(Some(("alice", "s3cret")));
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let chart = render_sample("0.1.0", &tmp.path().join("charts"));
    let r = run(opship()
        .args(["chart", "package"])
        .arg(&chart)
        .arg("-d")
        .arg(tmp.path()));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let tgz = tmp.path().join("memcached-operator-0.1.0.tgz");
    let remote = format!("oci://{}/charts", reg.addr);
    let push = |password: &str| {
        let mut child = isolated(&home)
            .args(["chart", "push", "-u", "alice", "--password-stdin"])
            .arg(&tgz)
            .arg(&remote)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(password.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, stderr) = push("wrong\n");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&reg.addr)
            && stderr.contains("refused the credentials of user")
            && stderr.contains("alice"),
        "{stderr}"
    );
    let (code, stdout, stderr) = push("s3cret\n");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("memcached-operator:0.1.0@sha256:"),
        "{stdout}"
    );
    // Without credentials the push is refused.
    let r = run(isolated(&home)
        .args(["chart", "push"])
        .arg(&tgz)
        .arg(&remote));
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("refused the credentials"), "{}", r.stderr);
}

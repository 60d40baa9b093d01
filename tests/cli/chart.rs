//! `opship chart render | package | index | push` end to end: every version of the sample,
//! nothing written on a bad template, reproducible archives, a chart pushed to a real
//! registry (`docker-registry`) and pulled back by the Helm v4 SDK, and kustomize overlays
//! built by the real kustomize (`kubectl kustomize`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support_registry::{TestRegistry, isolated};
use crate::{hidden_entries, opship, read_tree, repo, run, sample_copy, tracked};

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
        .arg(tracked("bundle/opship.yaml"))
        .args(["chart", "render", "--bundle"])
        .arg(tracked("bundle").join(version))
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

/// The objects of `helm_check.py render` (release `rel` in namespace `ops`), NOTES.txt left
/// out; or Helm's error message.
fn rendered_objects(
    chart: &Path,
    values: serde_json::Value,
) -> Result<Vec<serde_json::Value>, String> {
    let mut args = vec!["render", chart.to_str().unwrap()];
    let json = values.to_string();
    args.extend(["--values-json", &json]);
    let out = helm(&args);
    if let Some(e) = out.get("error") {
        return Err(e["message"].as_str().unwrap_or_default().to_owned());
    }
    let mut objects = Vec::new();
    for (file, text) in out["manifests"].as_object().unwrap() {
        if file.ends_with("NOTES.txt") {
            continue;
        }
        for d in opship_core::yaml::parse_stream(text.as_str().unwrap(), Path::new(file)).unwrap() {
            if !d.value.is_null() {
                objects.push(d.value);
            }
        }
    }
    Ok(objects)
}

fn kinds_in(objects: &[serde_json::Value], kind: &str) -> Vec<(String, String)> {
    objects
        .iter()
        .filter(|o| o["kind"] == kind)
        .map(|o| {
            (
                o["metadata"]["namespace"].as_str().unwrap_or("").to_owned(),
                o["metadata"]["name"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn operator_deployment(objects: &[serde_json::Value]) -> &serde_json::Value {
    let deps: Vec<_> = objects
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .collect();
    assert_eq!(deps.len(), 1, "{objects:?}");
    deps[0]
}

/// The chart installs what OLM v1 installs, by the install mode `watchNamespace` selects:
/// all namespaces (the permissions lifted to ClusterRoles), the release namespace, another
/// one (Roles there), with the pod's `olm.targetNamespaces`; a mode the CSV does not support
/// fails with operator-controller's message, and the default follows the supported modes.
/// The deployment config and an environment's values apply to the operator's deployment.
#[test]
fn install_modes_and_deployment_config() {
    let (tmp, bundle) = sample_copy();
    let out = tmp.path().join("charts");
    let chart = render_sample("0.3.0", &out);
    let target = |o: &[serde_json::Value]| {
        operator_deployment(o)["spec"]["template"]["metadata"]["annotations"]
            ["olm.targetNamespaces"]
            .clone()
    };

    // AllNamespaces (the default, the CSV supports it): no Role, the deployment in the
    // release namespace, no Helm labels.
    let all = rendered_objects(&chart, serde_json::json!({})).unwrap();
    assert!(kinds_in(&all, "Role").is_empty(), "{all:?}");
    assert!(kinds_in(&all, "ClusterRole").len() >= 2);
    assert_eq!(target(&all), "");
    let dep = operator_deployment(&all);
    assert_eq!(dep["metadata"]["namespace"], "ops");
    assert!(
        dep["metadata"]["labels"].get("helm.sh/chart").is_none(),
        "{dep}"
    );
    assert_eq!(
        rendered_objects(&chart, serde_json::json!({"watchNamespace": null})).unwrap(),
        all,
        "null is the default"
    );

    // SingleNamespace: the Role and its binding in the watched namespace.
    let single = rendered_objects(&chart, serde_json::json!({"watchNamespace": "team-a"})).unwrap();
    let roles = kinds_in(&single, "Role");
    assert!(
        !roles.is_empty() && roles.iter().all(|(ns, _)| ns == "team-a"),
        "{roles:?}"
    );
    assert_eq!(kinds_in(&single, "RoleBinding").len(), roles.len());
    assert_eq!(target(&single), "team-a");
    assert_eq!(operator_deployment(&single)["metadata"]["namespace"], "ops");
    assert!(kinds_in(&single, "ClusterRole").len() < kinds_in(&all, "ClusterRole").len());

    // OwnNamespace: the same in the release namespace.
    let own = rendered_objects(&chart, serde_json::json!({"watchNamespace": "ops"})).unwrap();
    let roles = kinds_in(&own, "Role");
    assert!(
        !roles.is_empty() && roles.iter().all(|(ns, _)| ns == "ops"),
        "{roles:?}"
    );
    assert_eq!(target(&own), "ops");

    // MultiNamespace is refused.
    let e = rendered_objects(&chart, serde_json::json!({"watchNamespace": "a,b"})).unwrap_err();
    assert!(e.contains("MultiNamespace"), "{e}");

    // The deployment config and values-prod.yaml (replicas, resources of every container),
    // the image.
    let prod = opship_core::yaml::parse_stream(
        &std::fs::read_to_string(chart.join("values-prod.yaml")).unwrap(),
        Path::new("values-prod.yaml"),
    )
    .unwrap()
    .remove(0)
    .value;
    let mut values = prod.clone();
    values["image"] = serde_json::json!({"tag": "v9"});
    values["nodeSelector"] = serde_json::json!({"disk": "ssd"});
    values["env"] = serde_json::json!([{"name": "RELATED_IMAGE_MEMCACHED", "value": "m:2"}]);
    let objects = rendered_objects(&chart, values).unwrap();
    let dep = operator_deployment(&objects);
    assert_eq!(dep["spec"]["replicas"], 2);
    let pod = &dep["spec"]["template"]["spec"];
    assert_eq!(pod["nodeSelector"], serde_json::json!({"disk": "ssd"}));
    for c in pod["containers"].as_array().unwrap() {
        assert_eq!(c["resources"], prod["resources"], "{c}");
    }
    let manager = pod["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "manager")
        .unwrap();
    assert_eq!(manager["image"], "quay.io/example/memcached-operator:v9");
    let env = manager["env"].as_array().unwrap();
    assert_eq!(
        env.iter()
            .filter(|e| e["name"] == "RELATED_IMAGE_MEMCACHED")
            .map(|e| e["value"].clone())
            .collect::<Vec<_>>(),
        ["m:2"],
        "replaced by name"
    );
    assert!(
        env.iter().any(|e| e["name"] == "WATCH_NAMESPACE"),
        "{env:?}"
    );

    // A CSV without AllNamespaces: the default is the release namespace, "" is refused with
    // operator-controller's message. Only SingleNamespace: a watch namespace is required.
    let csv = bundle.join("0.3.0/manifests/memcached-operator.clusterserviceversion.yaml");
    for (supported, default, refused) in [
        (
            &["OwnNamespace", "SingleNamespace"][..],
            Ok("ops"),
            "invalid target namespaces []: supported install modes [OwnNamespace SingleNamespace] do not support targeting all namespaces",
        ),
        (
            &["SingleNamespace"][..],
            Err("watchNamespace is required: the operator supports only [SingleNamespace]"),
            "invalid target namespaces [ops]: supported install modes [SingleNamespace] do not support targeting own namespace",
        ),
    ] {
        crate::hostile_chart::edit_manifest(&csv, |v| {
            for m in v["spec"]["installModes"].as_array_mut().unwrap() {
                let t = m["type"].as_str().unwrap().to_owned();
                m["supported"] = supported.contains(&t.as_str()).into();
            }
        });
        let out = tmp.path().join(format!("modes-{}", supported.len()));
        let r = run(opship()
            .args(["chart", "render", "--bundle"])
            .arg(bundle.join("0.3.0"))
            .arg("--output")
            .arg(&out));
        assert_eq!(r.code, 0, "{}", r.stderr);
        let c = out.join("memcached-operator");
        let values = std::fs::read_to_string(c.join("values.yaml")).unwrap();
        assert!(values.contains("\nwatchNamespace: null\n"), "{values}");
        match (rendered_objects(&c, serde_json::json!({})), default) {
            (Ok(o), Ok(ns)) => assert_eq!(target(&o), ns),
            (Err(e), Err(msg)) => assert!(e.contains(msg), "{e}"),
            (got, want) => panic!("{supported:?}: {got:?}, want {want:?}"),
        }
        let empty = if supported.len() == 1 { "ops" } else { "" };
        let e = rendered_objects(&c, serde_json::json!({"watchNamespace": empty})).unwrap_err();
        assert!(e.contains(refused), "{supported:?}: {e}");
        let o = rendered_objects(&c, serde_json::json!({"watchNamespace": "team-a"})).unwrap();
        assert_eq!(target(&o), "team-a");
    }
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
        .arg(tracked("bundle/opship.yaml"))
        .args(["chart", "render", "--overlays", "--bundle"])
        .arg(tracked("bundle/0.3.0"))
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

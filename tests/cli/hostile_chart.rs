//! `opship chart` on hostile input and hostile output paths: bundle text that looks like Helm
//! code stays text (checked by the real Helm v4 engine), `chart render` replaces only what it
//! wrote itself (never a file, a project, a symlink or the current directory; `--force` for
//! the rest), every input is a regular file within its budget (a FIFO is an error, not a
//! hang), charts Helm's loader would refuse (a file over 5 MiB) are never written, and the
//! objects carry only OLM's labels while the labels helper stays valid for long chart names.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::chart::helm;
use crate::{hidden_entries, opship, read_tree, run, sample_copy, tracked};

/// The chart files `render` writes for the sample bundle 0.3.0 into `out`.
fn render(bundle: &Path, out: &Path, extra: &[&str]) -> crate::Run {
    run(opship()
        .args(["chart", "render", "--bundle"])
        .arg(bundle)
        .arg("--output")
        .arg(out)
        .args(extra))
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success());
}

/// Rewrites every document of a manifest file through `edit`.
pub(crate) fn edit_manifest(path: &Path, edit: impl Fn(&mut Value)) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    for doc in opship_core::yaml::parse_stream(&text, path).unwrap() {
        let mut v = doc.value;
        edit(&mut v);
        out.push_str("---\n");
        out.push_str(&opship_core::yaml::to_string(&v).unwrap());
    }
    std::fs::write(path, out).unwrap();
}

fn manifest(bundle: &Path, name: &str) -> PathBuf {
    bundle.join("0.3.0/manifests").join(name)
}

const CSV: &str = "memcached-operator.clusterserviceversion.yaml";
const CRD: &str = "cache.example.com_memcacheds.yaml";

/// The issue's case: Go-template text in the CSV's displayName (NOTES.txt), a CRD
/// description, a pod annotation and an env value. Helm renders the chart and prints each
/// exactly as the bundle has it.
#[test]
fn bundle_text_that_looks_like_helm_code_stays_text() {
    let (tmp, bundle) = sample_copy();
    let display = r#"Memcached {{ .Values.pwned }} {{ include "x" . }}"#;
    let description = "Size {{/* is not a comment */}} }} {{- trimmed -}} {";
    let annotation = "{{ .Release.Name }}{";
    edit_manifest(&manifest(&bundle, CSV), |v| {
        v["spec"]["displayName"] = display.into();
        let pod = &mut v["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"];
        pod["metadata"]["annotations"]["example.com/note"] = annotation.into();
        pod["spec"]["containers"][0]["env"][0]["value"] = annotation.into();
        pod["spec"]["containers"][0]["env"][0]
            .as_object_mut()
            .unwrap()
            .remove("valueFrom");
    });
    edit_manifest(&manifest(&bundle, CRD), |v| {
        v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"]["description"] = description.into();
    });
    let out = tmp.path().join("charts");
    let r = render(&bundle.join("0.3.0"), &out, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let chart = out.join("memcached-operator");
    let rendered = helm(&["render", chart.to_str().unwrap()]);
    assert!(rendered.get("error").is_none(), "Helm: {rendered}");
    let m = &rendered["manifests"];
    let notes = m["memcached-operator/templates/NOTES.txt"]
        .as_str()
        .unwrap();
    assert!(
        notes.starts_with(&format!("{display} 0.3.0 is installed")),
        "{notes}"
    );
    let docs = |file: &str| -> Vec<Value> {
        let text = m[format!("memcached-operator/templates/{file}")]
            .as_str()
            .unwrap_or_else(|| panic!("{file} not rendered: {m}"));
        opship_core::yaml::parse_stream(text, Path::new(file))
            .unwrap()
            .into_iter()
            .map(|d| d.value)
            .collect()
    };
    let crd = &docs("crds/cache.example.com_memcacheds.yaml")[0];
    assert_eq!(
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"]["description"],
        description
    );
    // The deployment goes through Helm's fromYaml/toYaml (the deployment config is applied
    // at install time): the data stays text there too.
    let dep = &docs("olm/deployment-memcached-operator-controller-manager.yaml")[0];
    let pod = &dep["spec"]["template"];
    assert_eq!(
        pod["metadata"]["annotations"]["example.com/note"],
        annotation
    );
    assert_eq!(pod["spec"]["containers"][0]["env"][0]["value"], annotation);

    // With a deployment config the env list is merged by Helm at install time (toJson,
    // fromJsonArray): the bundle's value is still its text, the added variable is there.
    let values = serde_json::json!({"env": [{"name": "EXTRA", "value": "{{ .Values.x }}"}]});
    let rendered = helm(&[
        "render",
        chart.to_str().unwrap(),
        "--values-json",
        &values.to_string(),
    ]);
    assert!(rendered.get("error").is_none(), "Helm: {rendered}");
    let text = rendered["manifests"]
        ["memcached-operator/templates/olm/deployment-memcached-operator-controller-manager.yaml"]
        .as_str()
        .unwrap();
    let dep = &opship_core::yaml::parse_stream(text, Path::new("deployment")).unwrap()[0].value;
    let env = &dep["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(env[0]["value"], annotation, "{env}");
    assert!(
        env.as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "EXTRA" && e["value"] == "{{ .Values.x }}"),
        "{env}"
    );
}

/// What `render` finds at `OUTPUT/<name>` decides whether it may replace it: a regular file,
/// a project directory, a symlink or the current directory are refused with the reason and
/// left as they are; `--force` replaces a file or a foreign directory, never a symlink or the
/// current directory.
#[test]
fn render_replaces_only_what_it_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tracked("bundle/0.3.0");
    let out = tmp.path().join("charts");
    let chart = out.join("memcached-operator");

    // A regular file.
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(&chart, "my notes\n").unwrap();
    let r = render(&bundle, &out, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&chart.display().to_string()) && r.stderr.contains("not a directory"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_to_string(&chart).unwrap(), "my notes\n");
    let r = render(&bundle, &out, &["--force"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(chart.join("Chart.yaml").is_file());
    std::fs::remove_dir_all(&chart).unwrap();

    // A project directory.
    std::fs::create_dir_all(chart.join("src")).unwrap();
    std::fs::write(chart.join("Cargo.toml"), "[package]\n").unwrap();
    std::fs::write(chart.join("src/main.rs"), "fn main() {}\n").unwrap();
    let before = read_tree(&chart);
    let r = render(&bundle, &out, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("Cargo.toml")
            && r.stderr.contains("src/")
            && r.stderr.contains("--force"),
        "{}",
        r.stderr
    );
    assert_eq!(read_tree(&chart), before);
    assert!(hidden_entries(&out).is_empty());
    let r = render(&bundle, &out, &["--force"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!chart.join("Cargo.toml").exists());

    // A rendered chart is replaced without --force, also when the last run had other
    // environments or templates (values-old.yaml, README.md) than this one.
    std::fs::write(chart.join("values-old.yaml"), "replicas: 1\n").unwrap();
    std::fs::write(chart.join("README.md"), "# from a --templates run\n").unwrap();
    std::fs::create_dir_all(chart.join("templates/extra")).unwrap();
    std::fs::write(chart.join("templates/extra/x.yaml"), "a: 1\n").unwrap();
    let r = render(&bundle, &out, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!chart.join("values-old.yaml").exists() && !chart.join("README.md").exists());

    // A symlink, even with --force: its target is left alone.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("keep.txt"), "mine").unwrap();
    std::fs::remove_dir_all(&chart).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &chart).unwrap();
    for flags in [&[][..], &["--force"][..]] {
        let r = render(&bundle, &out, flags);
        assert_eq!(r.code, 2, "{flags:?}: {}", r.stderr);
        assert!(r.stderr.contains("symlink"), "{}", r.stderr);
    }
    assert_eq!(read_tree(&elsewhere).len(), 1);
    std::fs::remove_file(&chart).unwrap();

    // The current directory or one of its parents, even with --force.
    let project = tmp.path().join("work/memcached-operator");
    std::fs::create_dir_all(project.join("sub")).unwrap();
    std::fs::write(project.join("go.mod"), "module x\n").unwrap();
    for (cwd, output) in [(&project, ".."), (&project.join("sub"), "../..")] {
        for flags in [&[][..], &["--force"][..]] {
            let r = run(opship()
                .current_dir(cwd)
                .args(["chart", "render", "--bundle"])
                .arg(&bundle)
                .args(["--output", output])
                .args(flags));
            assert_eq!(r.code, 2, "{output} {flags:?}: {}", r.stderr);
            assert!(r.stderr.contains("current directory"), "{}", r.stderr);
        }
    }
    assert!(project.join("go.mod").is_file() && project.join("sub").is_dir());
}

/// The overlays directory is guarded the same way, and every directory of a run is checked
/// before any is written: one refusal leaves the output as it was.
#[test]
fn one_refused_directory_stops_the_whole_render() {
    let (tmp, bundle) = sample_copy();
    let cfg = bundle.join("opship.yaml");
    let out = tmp.path().join("charts");
    let all = |extra: &[&str]| {
        run(opship()
            .arg("-c")
            .arg(&cfg)
            .args(["chart", "render", "--all", "--overlays", "--output"])
            .arg(&out)
            .args(extra))
    };
    let r = all(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = all(&[]);
    assert_eq!(
        r.code, 0,
        "a second run replaces its own output: {}",
        r.stderr
    );

    // Someone's file in the last version's overlays: nothing of the run is written.
    std::fs::write(out.join("0.3.0/overlays/deploy.sh"), "kubectl apply\n").unwrap();
    std::fs::write(out.join("0.1.0/memcached-operator/Chart.yaml"), "stale\n").unwrap();
    let before = read_tree(&out);
    let r = all(&[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("deploy.sh") && r.stderr.contains("overlays"),
        "{}",
        r.stderr
    );
    assert_eq!(read_tree(&out), before, "nothing written");
    let r = all(&["--force"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!out.join("0.3.0/overlays/deploy.sh").exists());
}

/// Bundles, templates, chart directories, archives and indexes are read as regular files
/// only: a FIFO, a symlink out of its tree or a file past its budget is an error naming it,
/// and nothing is written.
#[test]
fn chart_inputs_are_regular_files_within_budget() {
    let (tmp, bundle) = sample_copy();
    let b = bundle.join("0.3.0");
    let out = tmp.path().join("charts");
    let refused = |r: &crate::Run, path: &Path, why: &str| {
        assert_eq!(r.code, 2, "{}: {}", path.display(), r.stderr);
        assert!(
            r.stderr.contains(&path.display().to_string()) && r.stderr.contains(why),
            "{why}: {}",
            r.stderr
        );
        assert!(!out.exists(), "nothing written");
    };

    // In the bundle: a FIFO, a symlink to a file outside it, a file over the manifest budget.
    let fifo = b.join("manifests/zz-fifo.yaml");
    mkfifo(&fifo);
    refused(&render(&b, &out, &[]), &fifo, "not a regular file");
    std::fs::remove_file(&fifo).unwrap();
    let secret = tmp.path().join("secret.yaml");
    std::fs::write(&secret, "kind: Secret\n").unwrap();
    let link = b.join("manifests/zz-link.yaml");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    refused(&render(&b, &out, &[]), &link, "leads out of");
    std::fs::remove_file(&link).unwrap();
    let big = b.join("manifests/zz-big.yaml");
    // Sparse: no disk space used.
    std::fs::File::create(&big)
        .unwrap()
        .set_len(opship_core::input::Kind::Manifest.budget() + 1)
        .unwrap();
    refused(&render(&b, &out, &[]), &big, "larger than");
    std::fs::remove_file(&big).unwrap();

    // In --templates: a FIFO and a symlink out of the directory.
    let templates = tmp.path().join("templates");
    std::fs::create_dir_all(templates.join("templates")).unwrap();
    let t_fifo = templates.join("templates/extra.yaml.hbs");
    mkfifo(&t_fifo);
    refused(
        &render(&b, &out, &["--templates", templates.to_str().unwrap()]),
        &t_fifo,
        "not a regular file",
    );
    std::fs::remove_file(&t_fifo).unwrap();
    let t_link = templates.join("templates/NOTES.txt.hbs");
    std::os::unix::fs::symlink(&secret, &t_link).unwrap();
    refused(
        &render(&b, &out, &["--templates", templates.to_str().unwrap()]),
        &t_link,
        "leads out of",
    );
    std::fs::remove_file(&t_link).unwrap();

    // `chart package` of a chart with a FIFO, `chart push` of a FIFO, `chart index --merge`
    // of a FIFO.
    let r = render(&b, &out, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let chart = out.join("memcached-operator");
    let c_fifo = chart.join("templates/pipe.yaml");
    mkfifo(&c_fifo);
    let dest = tmp.path().join("pkgs");
    let r = run(opship()
        .args(["chart", "package"])
        .arg(&chart)
        .arg("-d")
        .arg(&dest));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&c_fifo.display().to_string()) && r.stderr.contains("regular file"),
        "{}",
        r.stderr
    );
    assert!(!dest.exists());
    let r = run(opship()
        .args(["chart", "push"])
        .arg(&c_fifo)
        .arg("oci://127.0.0.1:9/charts"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    std::fs::create_dir_all(&dest).unwrap();
    let r = run(opship()
        .args(["chart", "index"])
        .arg(&dest)
        .arg("--merge")
        .arg(&c_fifo));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    assert!(!dest.join("index.yaml").exists());
}

/// Helm's chart loader refuses a chart file over 5 MiB (MaxDecompressedFileSize). A CRD that
/// large is refused by `chart render` with its name, its size and the limit, nothing
/// written; `chart package` draws the line exactly where Helm does.
#[test]
fn charts_helm_cannot_load_are_not_written() {
    let (tmp, bundle) = sample_copy();
    let limit = 5 * 1024 * 1024;
    edit_manifest(&manifest(&bundle, CRD), |v| {
        v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] =
            "x".repeat(limit + 1).into();
    });
    let out = tmp.path().join("charts");
    let r = render(&bundle.join("0.3.0"), &out, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("CustomResourceDefinition `memcacheds.cache.example.com`")
            && r.stderr.contains(&limit.to_string())
            && r.stderr.contains("MaxDecompressedFileSize"),
        "{}",
        r.stderr
    );
    assert!(!out.exists(), "nothing written");

    // A chart with one file of exactly 5 MiB loads in Helm and packages; one byte more and
    // Helm refuses it, and so does opship.
    let r = render(&tracked("bundle/0.3.0"), &out, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let chart = out.join("memcached-operator");
    for (size, loads) in [(limit, true), (limit + 1, false)] {
        std::fs::write(chart.join("LICENSE"), vec![b'a'; size]).unwrap();
        let h = helm(&["render", chart.to_str().unwrap()]);
        let dest = tmp.path().join(format!("pkgs-{size}"));
        let r = run(opship()
            .args(["chart", "package"])
            .arg(&chart)
            .arg("-d")
            .arg(&dest));
        if loads {
            assert!(h.get("error").is_none(), "{h}");
            assert_eq!(r.code, 0, "{}", r.stderr);
        } else {
            let msg = h["error"]["message"].as_str().unwrap_or_default();
            assert!(msg.contains("larger than the maximum file size"), "{h}");
            assert_eq!(r.code, 2, "{}", r.stderr);
            assert!(
                r.stderr.contains("LICENSE") && r.stderr.contains(&limit.to_string()),
                "{}",
                r.stderr
            );
            assert!(!dest.exists());
        }
    }
}

/// A valid label value: at most 63 characters, alphanumerics with `-`, `_`, `.` inside.
fn is_label_value(v: &str) -> bool {
    let b = v.as_bytes();
    v.len() <= 63
        && (v.is_empty()
            || (b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))))
}

/// The chart's objects carry exactly the labels OLM v1 gives them (the bundle's): no Helm
/// labels are added, so no chart name can make one invalid. The `<name>.labels` helper of
/// `_helpers.tpl`, left for templates added with `--templates`, gives labels Kubernetes
/// accepts for chart names up to 63 characters (and a version with build metadata): Helm's
/// scaffold cuts `name-version` at 63 characters and then only trims a `-`, which leaves a
/// trailing `.` or `_`.
#[test]
fn long_chart_names_give_valid_labels() {
    let (tmp, bundle) = sample_copy();
    let plus = bundle.join("0.3.0-plus");
    crate::copy_dir(&bundle.join("0.3.0"), &plus);
    edit_manifest(&plus.join("manifests").join(CSV), |v| {
        v["spec"]["version"] = "0.3.0+b".into();
    });
    // An added template that labels its object with the helper.
    let templates = tmp.path().join("templates");
    std::fs::create_dir_all(templates.join("templates")).unwrap();
    std::fs::write(
        templates.join("templates/extra.yaml.hbs"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  labels:\n    \\{{- include \"{{chart.name}}.labels\" . | nindent 4 }}\n",
    )
    .unwrap();
    // 60 and 56 characters are the cuts at "…-0." and "…-0.3.0_".
    for (len, b) in [
        (56, &plus),
        (59, &bundle.join("0.3.0")),
        (60, &bundle.join("0.3.0")),
        (62, &bundle.join("0.3.0")),
        (63, &plus),
    ] {
        let name = format!("m{}", "x".repeat(len - 1));
        let out = tmp.path().join(format!("charts-{len}"));
        let r = render(
            b,
            &out,
            &["--name", &name, "--templates", templates.to_str().unwrap()],
        );
        assert_eq!(r.code, 0, "{len}: {}", r.stderr);
        let chart = out.join(&name);
        let rendered = helm(&["render", chart.to_str().unwrap()]);
        assert!(rendered.get("error").is_none(), "{len}: {rendered}");
        let mut labels = 0;
        let mut helper_labels = 0;
        for (file, text) in rendered["manifests"].as_object().unwrap() {
            if file.ends_with("NOTES.txt") {
                continue;
            }
            let added = file.ends_with("templates/extra.yaml");
            for d in
                opship_core::yaml::parse_stream(text.as_str().unwrap(), Path::new(file)).unwrap()
            {
                for (k, v) in d.value["metadata"]["labels"]
                    .as_object()
                    .into_iter()
                    .flatten()
                {
                    let v = v.as_str().unwrap_or_default();
                    assert!(is_label_value(v), "{len}: {file}: label {k}: `{v}`");
                    if added {
                        helper_labels += 1;
                    } else {
                        assert!(
                            !k.starts_with("helm.sh/")
                                && k != "app.kubernetes.io/instance"
                                && v != "Helm",
                            "{len}: {file}: the chart added label {k}: `{v}`"
                        );
                        labels += 1;
                    }
                }
            }
        }
        assert!(labels > 10, "{len}: {labels} labels");
        assert_eq!(helper_labels, 3, "{len}: the helper's labels");
    }
}

//! `opship manifests`: the seven scenarios of OLM v1's registry+v1 regression data through the
//! real binary (one file per object, and one stream), a layout image, and bad input that must
//! fail with exit 2, a clear message and nothing written.

use std::path::{Path, PathBuf};

use opship_core::yaml;
use serde_json::Value;

use crate::{copy_dir, opship, repo, run};

/// operator-controller's regression data (`OPSHIP_OLM_V1_RENDER`, else next to the repository,
/// else /work/shared).
fn data() -> PathBuf {
    std::env::var_os("OPSHIP_OLM_V1_RENDER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            [
                repo().join("../shared/olm-v1-render"),
                "/work/shared/olm-v1-render".into(),
            ]
            .into_iter()
            .find(|c| c.join("scenarios.yaml").is_file())
            .expect("OLM v1 render data not found: set OPSHIP_OLM_V1_RENDER")
        })
}

fn parse(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    yaml::parse_one(&text, path).unwrap().value
}

fn scenarios() -> Vec<Value> {
    parse(&data().join("scenarios.yaml"))
        .as_array()
        .unwrap()
        .clone()
}

/// The expected files of a scenario, in name order.
fn expected(s: &Value) -> (PathBuf, Vec<String>) {
    let dir = data()
        .join("expected-manifests")
        .join(s["bundle"].as_str().unwrap())
        .join(s["case"].as_str().unwrap());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    (dir, names)
}

/// `opship manifests` for scenario `s`: the bundle, its namespaces, its deployment config in a
/// `--inline-config` file under `tmp`.
fn command(s: &Value, tmp: &Path) -> std::process::Command {
    let mut cmd = opship();
    cmd.arg("manifests")
        .arg(data().join("bundles").join(s["bundle"].as_str().unwrap()))
        .args(["--namespace", s["installNamespace"].as_str().unwrap()]);
    if let Some(w) = s["watchNamespace"].as_str() {
        cmd.args(["--watch-namespace", w]);
    }
    if let Some(dc) = s.get("deploymentConfig") {
        let path = tmp.join(format!("{}.json", s["case"].as_str().unwrap()));
        let text = serde_json::to_string_pretty(&serde_json::json!({ "deploymentConfig": dc }));
        std::fs::write(&path, text.unwrap()).unwrap();
        cmd.arg("--inline-config").arg(path);
    }
    cmd
}

#[test]
fn seven_scenarios_write_exactly_what_olm_v1_installs() {
    let tmp = tempfile::tempdir().unwrap();
    let all = scenarios();
    assert_eq!(all.len(), 7);
    for s in &all {
        let case = s["case"].as_str().unwrap();
        let out = tmp.path().join(format!("out-{case}"));
        let r = run(command(s, tmp.path()).arg("-o").arg(&out));
        assert_eq!(r.code, 0, "{case}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{case}: {}", r.stdout);
        let (want_dir, want) = expected(s);
        let mut got: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        got.sort();
        assert_eq!(got, want, "{case}: file names");
        for name in &want {
            assert_eq!(
                parse(&out.join(name)),
                parse(&want_dir.join(name)),
                "{case}/{name}"
            );
        }
        // Nothing but the directory itself: no temporaries left next to it.
        assert!(crate::hidden_entries(tmp.path()).is_empty());
    }
}

#[test]
fn stream_on_stdout_holds_the_same_objects_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenarios()
        .into_iter()
        .find(|s| s["case"] == "with-deploymentconfig-options")
        .unwrap();
    let (want_dir, want) = expected(&s);
    for extra in [&[][..], &["-o", "-"][..]] {
        let r = run(command(&s, tmp.path()).args(extra));
        assert_eq!(r.code, 0, "{}", r.stderr);
        let docs = yaml::parse_stream(&r.stdout, Path::new("stdout")).unwrap();
        let got: Vec<Value> = docs.into_iter().map(|d| d.value).collect();
        let want: Vec<Value> = want.iter().map(|n| parse(&want_dir.join(n))).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn webhooks_without_cert_provider_warn_and_with_one_get_certificates() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenarios()
        .into_iter()
        .find(|s| s["case"] == "all-webhook-types")
        .unwrap();
    let r = run(&mut command(&s, tmp.path()));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("--cert-provider"), "{}", r.stderr);
    let r = run(command(&s, tmp.path()).args(["--cert-provider", "cert-manager"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("--cert-provider"), "{}", r.stderr);
    assert!(r.stdout.contains("kind: Certificate"), "{}", r.stdout);
    assert!(r.stdout.contains("cert-manager.io/inject-ca-from"));
    let r = run(command(&s, tmp.path()).args(["--cert-provider", "openshift-serviceca"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("service.beta.openshift.io/inject-cabundle")
    );
}

#[test]
fn layout_and_registry_images_render_like_their_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let s = &scenarios()[1]; // single-namespace
    let bundle = data().join("bundles").join(s["bundle"].as_str().unwrap());
    let layout = tmp.path().join("oci");
    let r = run(opship()
        .arg("build")
        .arg(&bundle)
        .arg("--layout")
        .arg(&layout)
        .args(["--tag", "v1"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let from_dir = run(&mut command(s, tmp.path()));
    assert_eq!(from_dir.code, 0, "{}", from_dir.stderr);
    let from_image = run(opship()
        .arg("manifests")
        .arg(format!("{}:v1", layout.display()))
        .args(["-n", "argocd-system", "--watch-namespace", "argocd-watch"]));
    assert_eq!(from_image.code, 0, "{}", from_image.stderr);
    assert_eq!(from_image.stdout, from_dir.stdout);

    // The same image pushed to a registry (docker-registry on 127.0.0.1), by reference.
    let reg = crate::support_registry::TestRegistry::start(None);
    let home = tmp.path().join("home");
    let target = format!("{}/argocd-operator-bundle:v0.6.0", reg.addr);
    let r = run(crate::support_registry::isolated(&home)
        .arg("push")
        .arg(format!("{}:v1", layout.display()))
        .arg(&target));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let from_registry = run(crate::support_registry::isolated(&home)
        .arg("manifests")
        .arg(&target)
        .args(["-n", "argocd-system", "--watch-namespace", "argocd-watch"]));
    assert_eq!(from_registry.code, 0, "{}", from_registry.stderr);
    assert_eq!(from_registry.stdout, from_dir.stdout);
    // A tag the registry lacks: exit 2 with the registry's answer.
    let r = run(crate::support_registry::isolated(&home)
        .arg("manifests")
        .arg(format!("{}/argocd-operator-bundle:nope", reg.addr))
        .args(["-n", "argocd-system"]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("nope"), "{}", r.stderr);
    // A tag the layout lacks: exit 2, named by the argument.
    let r = run(opship()
        .arg("manifests")
        .arg(format!("{}:nope", layout.display()))
        .args(["-n", "argocd-system"]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains(":nope"), "{}", r.stderr);
}

/// Runs `opship manifests BUNDLE ARGS -o OUT` expecting exit 2, a message containing each of
/// `wants`, and nothing at OUT.
fn refused(bundle: &Path, args: &[&str], wants: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = run(opship()
        .arg("manifests")
        .arg(bundle)
        .args(args)
        .arg("-o")
        .arg(&out));
    assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
    assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
    for w in wants {
        assert!(r.stderr.contains(w), "{args:?}: no `{w}` in:\n{}", r.stderr);
    }
    assert!(!out.exists(), "{args:?}: wrote {}", out.display());
    assert!(crate::hidden_entries(tmp.path()).is_empty());
}

#[test]
fn bad_input_exits_2_with_a_message_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let webhook = data().join("bundles/webhook-operator.v0.0.5");
    let argocd = data().join("bundles/argocd-operator.v0.6.0");
    refused(
        &webhook,
        &["-n", "webhook-system", "--watch-namespace", "other"],
        &[
            "supported install modes [AllNamespaces]",
            "target namespaces [other]",
        ],
    );
    refused(
        &argocd,
        &["-n", "argocd-system", "--watch-namespace", "a,b"],
        &["MultiNamespace"],
    );
    refused(
        &argocd,
        &["-n", "Not_A_Namespace"],
        &["install namespace `Not_A_Namespace`"],
    );

    let unknown = tmp.path().join("unknown.yaml");
    std::fs::write(
        &unknown,
        "deploymentConfig:\n  nodeSelector:\n    a: b\n  nodeSelectr: {a: b}\n",
    )
    .unwrap();
    let unknown_s = unknown.to_str().unwrap();
    refused(
        &argocd,
        &["-n", "argocd-system", "--inline-config", unknown_s],
        &[&format!("{unknown_s}:4"), "unknown key `nodeSelectr`"],
    );
    let top = tmp.path().join("top.yaml");
    std::fs::write(&top, "watchNamespace: \"\"\nconfig: {}\n").unwrap();
    let top_s = top.to_str().unwrap();
    refused(
        &argocd,
        &["-n", "argocd-system", "--inline-config", top_s],
        &[&format!("{top_s}:2"), "unknown key `config`"],
    );
    let wrong = tmp.path().join("wrong.yaml");
    std::fs::write(&wrong, "deploymentConfig:\n  nodeSelector: [a]\n").unwrap();
    let wrong_s = wrong.to_str().unwrap();
    refused(
        &argocd,
        &["-n", "argocd-system", "--inline-config", wrong_s],
        &[&format!("{wrong_s}:2"), "`nodeSelector` must be a mapping"],
    );
    // The config's watch namespace is checked like the flag's.
    let watch = tmp.path().join("watch.yaml");
    std::fs::write(&watch, "watchNamespace: other\n").unwrap();
    refused(
        &webhook,
        &[
            "-n",
            "webhook-system",
            "--inline-config",
            watch.to_str().unwrap(),
        ],
        &["target namespaces [other]"],
    );
    // The global -c/--config is the project config, never silently taken for the inline one.
    refused(
        &argocd,
        &["-n", "argocd-system", "--config", wrong_s],
        &["--inline-config"],
    );
    refused(
        &tmp.path().join("missing"),
        &["-n", "argocd-system"],
        &["missing"],
    );

    // A bundle OLM v1 refuses: a kind it does not install.
    let pdb = tmp.path().join("pdb-bundle");
    copy_dir(&argocd, &pdb);
    std::fs::write(
        pdb.join("manifests/pdb.yaml"),
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: argocd-pdb\n\
         spec:\n  minAvailable: 1\n",
    )
    .unwrap();
    refused(
        &pdb,
        &["-n", "argocd-system"],
        &[
            "OLM v1 cannot install this bundle",
            "OLM015",
            "PodDisruptionBudget",
            "pdb.yaml:2",
        ],
    );
}

#[test]
fn output_dir_is_replaced_only_when_it_holds_manifests() {
    let tmp = tempfile::tempdir().unwrap();
    let s = &scenarios()[0];
    let out = tmp.path().join("out");
    let r = run(command(s, tmp.path()).arg("-o").arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let first = crate::read_tree(&out);
    // A second run (another mode) replaces the old manifests without --force.
    let r = run(command(&scenarios()[2], tmp.path()).arg("-o").arg(&out));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (_, want) = expected(&scenarios()[2]);
    let names: Vec<String> = crate::read_tree(&out).into_keys().collect();
    assert_eq!(names, want);
    assert_ne!(crate::read_tree(&out), first);
    // Anything else is refused and kept, unless --force.
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let before = crate::read_tree(&out);
    let r = run(command(s, tmp.path()).arg("-o").arg(&out));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("notes.txt"), "{}", r.stderr);
    assert!(r.stderr.contains("--force"), "{}", r.stderr);
    assert_eq!(crate::read_tree(&out), before);
    let r = run(command(s, tmp.path()).arg("-o").arg(&out).arg("--force"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(crate::read_tree(&out), first);
    // An error after a good run leaves the old output as it was.
    let r = run(command(s, tmp.path())
        .args(["--watch-namespace", "a,b", "-o"])
        .arg(&out));
    assert_eq!(r.code, 2);
    assert_eq!(crate::read_tree(&out), first);
    assert!(crate::hidden_entries(tmp.path()).is_empty());
}

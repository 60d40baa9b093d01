//! The acceptance check of one chart against its bundle, through the real Helm engine: lint
//! is clean, rendering with the default values gives exactly the objects OLM v1 installs
//! (`opship_install::render`, what `opship manifests` writes: the default install mode, the
//! chart's default certificate provider), every `values-<env>.yaml` renders and takes effect,
//! and the schema refuses wrong values. No normalisation: the chart adds nothing to OLM's
//! objects.

use std::collections::BTreeMap;
use std::path::Path;

use opship_chart::Options;
use opship_core::config::Environment;
use serde_json::{Value, json};

use crate::{environments, helm, render_to_temp};

/// Values documents the schema must refuse.
pub const BAD_VALUES: &[&str] = &[
    r#"{"replicas": "two"}"#,
    r#"{"replicass": 2}"#,
    r#"{"nodeSelector": ["linux"]}"#,
    r#"{"env": [{"value": "no name"}]}"#,
    r#"{"affinity": {"nodeAfinity": {}}}"#,
    r#"{"tolerations": [{"key": "k", "tolerationSeconds": "soon"}]}"#,
    r#"{"watchNamespace": "Not_A_Namespace"}"#,
];

/// Objects of a Helm render (the `manifests` map of helm_check.py), NOTES.txt left out,
/// sorted as OLM v1 sorts them.
pub fn parse_rendered(rendered: &Value, what: &str) -> Vec<Value> {
    assert!(
        rendered.get("error").is_none(),
        "{what}: Helm could not render: {}",
        rendered["error"]
    );
    let mut out = Vec::new();
    for (path, text) in rendered.as_object().expect("rendered manifests") {
        if path.ends_with("NOTES.txt") {
            continue;
        }
        let docs = opship_core::yaml::parse_stream(text.as_str().unwrap(), Path::new(path))
            .unwrap_or_else(|e| panic!("{what}: Helm's output is not YAML: {e}\n{text}"));
        out.extend(docs.into_iter().map(|d| d.value).filter(|v| !v.is_null()));
    }
    opship_install::sort(&mut out);
    out
}

/// What OLM v1 installs for the bundle into `namespace` with `watch` (None: the default) and
/// no certificate provider (the chart's default, as OLM v1's).
pub fn olm_objects(
    bundle_dir: &Path,
    namespace: &str,
    watch: Option<&str>,
) -> opship_install::Result<Vec<Value>> {
    let bundle = opship_install::load(bundle_dir)?;
    opship_install::render(
        &bundle,
        &opship_install::Options {
            install_namespace: namespace.to_owned(),
            watch_namespace: watch.map(str::to_owned),
            deployment_config: None,
            cert_provider: None,
        },
    )
}

/// The first difference between two object lists, for a readable failure.
pub fn first_difference(got: &[Value], want: &[Value]) -> String {
    let ids = |l: &[Value]| -> Vec<String> {
        l.iter()
            .map(|o| format!("{}/{}", o["kind"], o["metadata"]["name"]))
            .collect()
    };
    if ids(got) != ids(want) {
        return format!(
            "objects differ:\n helm: {:?}\n  olm: {:?}",
            ids(got),
            ids(want)
        );
    }
    for (g, w) in got.iter().zip(want) {
        if g != w {
            let g = opship_core::yaml::sorted(g).to_string();
            let w = opship_core::yaml::sorted(w).to_string();
            let at = g
                .bytes()
                .zip(w.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(0)
                .saturating_sub(80);
            let cut = |s: &str| s.chars().skip(at).take(400).collect::<String>();
            return format!("helm: …{}\n olm: …{}", cut(&g), cut(&w));
        }
    }
    String::new()
}

/// Whether a lint message is one the chart must accept: the missing icon (a CSV without a
/// small enough one), or an object of a removed API that the bundle ships and OLM v1
/// installs as it is (rbac.authorization.k8s.io/v1beta1).
pub fn lint_ok(m: &Value) -> bool {
    m["severity"] == 1 && m["error"] == "icon is recommended"
        || m["severity"] == 2
            && m["error"]
                .as_str()
                .is_some_and(|e| e.contains(" is deprecated in v"))
}

#[derive(Debug, Default)]
pub struct Summary {
    pub objects: usize,
    pub deployments: usize,
    pub environments: usize,
}

pub fn check_bundle(bundle_dir: &Path, opts: &Options) -> Summary {
    check_bundle_with(bundle_dir, opts, &environments())
}

pub fn check_bundle_with(
    bundle_dir: &Path,
    opts: &Options,
    envs: &BTreeMap<String, Environment>,
) -> Summary {
    let what = bundle_dir.display().to_string();
    let (_tmp, dir, chart) = render_to_temp(bundle_dir, opts, envs);
    let mut args: Vec<String> = vec!["check".into(), dir.display().to_string()];
    for env in envs.keys() {
        args.push("--env".into());
        args.push(dir.join(format!("values-{env}.yaml")).display().to_string());
    }
    for b in BAD_VALUES {
        args.push("--bad-json".into());
        args.push((*b).into());
    }
    let r = helm(&args);

    let lint = &r["lint"];
    assert!(lint.get("error").is_none(), "{what}: lint failed: {lint}");
    assert_eq!(lint["errors"], json!([]), "{what}: lint errors: {lint}");
    for m in lint["messages"].as_array().unwrap() {
        assert!(
            lint_ok(m),
            "{what}: lint message other than the missing icon: {m}"
        );
    }
    for (b, res) in BAD_VALUES.iter().zip(r["bad"].as_array().unwrap()) {
        assert_eq!(
            res["error"]["type"], "HelmValuesError",
            "{what}: validate_schema accepted {b}: {res}"
        );
    }

    // The default render is what OLM v1 installs.
    let mut rendered = parse_rendered(&r["default"], &what);
    for crd in r["crds"].as_array().unwrap() {
        let name = crd["name"].as_str().unwrap_or_default().to_owned();
        let text = crd["data"].as_str().unwrap_or_default();
        for d in opship_core::yaml::parse_stream(text, Path::new(&name)).unwrap() {
            rendered.push(d.value);
        }
    }
    opship_install::sort(&mut rendered);
    let want = olm_objects(bundle_dir, "ops", None).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        rendered == want,
        "{what}: Helm's render is not what OLM v1 installs: {}",
        first_difference(&rendered, &want)
    );
    let mut summary = Summary {
        objects: want.len(),
        deployments: want.iter().filter(|o| o["kind"] == "Deployment").count(),
        environments: 0,
    };

    // Each environment renders and takes effect: replicas and image of the operator's
    // deployment, resources of every container (OLM's deployment-config semantics).
    let (mdep, mcon) = &chart.manager;
    for (env, e) in envs {
        let file = dir.join(format!("values-{env}.yaml")).display().to_string();
        let objs = parse_rendered(&r["envs"][&file], &format!("{what} ({env})"));
        for dep in objs.iter().filter(|v| v["kind"] == "Deployment") {
            let containers = dep["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap();
            if let Some(res) = &e.resources {
                for c in containers {
                    assert_eq!(&c["resources"], res, "{what} ({env}): resources");
                }
            }
            if dep["metadata"]["name"] != mdep.as_str() {
                continue;
            }
            if let Some(n) = e.replicas {
                assert_eq!(
                    dep["spec"]["replicas"],
                    json!(n),
                    "{what} ({env}): replicas"
                );
            }
            if let Some(tag) = &e.tag {
                let tag = tag.replace("{version}", &chart.version.to_string());
                let c = containers
                    .iter()
                    .find(|c| c["name"] == mcon.as_str())
                    .unwrap();
                let image = c["image"].as_str().unwrap();
                assert!(
                    image.contains(&format!(":{tag}")),
                    "{what} ({env}): image {image} lacks tag {tag}"
                );
            }
        }
        summary.environments += 1;
    }
    summary
}

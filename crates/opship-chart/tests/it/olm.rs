//! The chart's OLM objects through the real Helm engine equal what OLM v1 installs, for the
//! seven scenarios of operator-controller's regression data.

use std::path::PathBuf;

use opship_core::yaml;
use serde_json::{Value, json};

use crate::helm;

fn data() -> PathBuf {
    std::env::var_os("OPSHIP_OLM_V1_RENDER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            [
                crate::repo_dir().join("../shared/olm-v1-render"),
                "/work/shared/olm-v1-render".into(),
            ]
            .into_iter()
            .find(|c| c.join("scenarios.yaml").is_file())
            .expect("olm-v1-render data not found: set OPSHIP_OLM_V1_RENDER")
        })
}

#[test]
fn helm_renders_the_seven_olm_v1_scenarios() {
    let data = data();
    let path = data.join("scenarios.yaml");
    let doc = yaml::parse_one(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    let mut same = 0;
    let mut failures = Vec::new();
    for s in doc.value.as_array().unwrap() {
        let case = s["case"].as_str().unwrap();
        let bundle = s["bundle"].as_str().unwrap();
        // The chart `chart render` writes for the bundle.
        let (_tmp, chart, _) = crate::render_to_temp(
            &data.join("bundles").join(bundle),
            &opship_chart::Options::default(),
            &Default::default(),
        );
        // The scenario's values only: the chart's defaults are OLM v1's.
        let mut values = json!({});
        if let Some(w) = s.get("watchNamespace") {
            values["watchNamespace"] = w.clone();
        }
        for (k, v) in s["deploymentConfig"].as_object().into_iter().flatten() {
            values[k] = v.clone();
        }
        let ns = s["installNamespace"].as_str().unwrap();
        let out = helm(&[
            "render",
            chart.to_str().unwrap(),
            "--values-json",
            &values.to_string(),
            "--namespace",
            ns,
        ]);
        if let Some(e) = out.get("error") {
            failures.push(format!("{case}: helm failed: {e}"));
            continue;
        }
        let mut got = crate::compare::parse_rendered(&out["manifests"], case);
        opship_install::sort(&mut got);
        let dir = data.join("expected-manifests").join(bundle).join(case);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        let want: Vec<Value> = names
            .iter()
            .map(|p| {
                yaml::parse_one(&std::fs::read_to_string(p).unwrap(), p)
                    .unwrap()
                    .value
            })
            .collect();
        if got == want {
            same += 1;
        } else {
            let gk: Vec<String> = got
                .iter()
                .map(|o| format!("{}/{}", o["kind"], o["metadata"]["name"]))
                .collect();
            let wk: Vec<String> = want
                .iter()
                .map(|o| format!("{}/{}", o["kind"], o["metadata"]["name"]))
                .collect();
            let mut detail = String::new();
            if gk == wk {
                for (g, w) in got.iter().zip(&want) {
                    if g != w {
                        detail.push_str(&format!(
                            "\n  {}: got {}\n  want {}",
                            g["kind"],
                            yaml::sorted(g),
                            yaml::sorted(w)
                        ));
                    }
                }
            } else {
                detail = format!("\n got {gk:?}\n want {wk:?}");
            }
            failures.push(format!(
                "{case}: differs{}",
                &detail[..detail.len().min(3000)]
            ));
        }
    }
    eprintln!("Helm render = OLM v1: {same}/7");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The webhook bundle with each certificate provider: Helm's render of the chart equals what
/// OLM v1 installs with that provider (Issuer and Certificate, or OpenShift's annotations; the
/// certificate volumes on the webhook deployment; CA injection on webhooks and the converted
/// CRD).
#[test]
fn helm_renders_each_certificate_provider_as_olm_v1() {
    let bundle_dir = data().join("bundles/webhook-operator.v0.0.5");
    let (_tmp, chart, _) = crate::render_to_temp(
        &bundle_dir,
        &opship_chart::Options::default(),
        &Default::default(),
    );
    let bundle = opship_install::load(&bundle_dir).unwrap();
    for provider in [
        opship_install::CertProvider::CertManager,
        opship_install::CertProvider::OpenShiftServiceCa,
    ] {
        let values = json!({"certProvider": provider.as_str()});
        let out = helm(&[
            "render",
            chart.to_str().unwrap(),
            "--values-json",
            &values.to_string(),
            "--namespace",
            "webhook-system",
        ]);
        let got = crate::compare::parse_rendered(&out["manifests"], provider.as_str());
        let want = opship_install::render(
            &bundle,
            &opship_install::Options {
                install_namespace: "webhook-system".into(),
                watch_namespace: None,
                deployment_config: None,
                cert_provider: Some(provider),
            },
        )
        .unwrap();
        assert!(
            got == want,
            "{}: {}",
            provider.as_str(),
            crate::compare::first_difference(&got, &want)
        );
        let kinds: Vec<&str> = want.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds.contains(&"Certificate"),
            provider == opship_install::CertProvider::CertManager,
            "{kinds:?}"
        );
    }
}

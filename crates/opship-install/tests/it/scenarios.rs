//! The seven scenarios of operator-controller's registry+v1 regression test: the same file
//! names, and in each file the same object once parsed.

use std::path::Path;

use opship_core::yaml;
use opship_install::{DeploymentConfig, Options};
use serde_json::Value;

use crate::render_data;

fn parse(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    yaml::parse_one(&text, path).unwrap().value
}

#[test]
fn seven_scenarios_render_exactly_as_olm_v1() {
    let data = render_data();
    let scenarios_path = data.join("scenarios.yaml");
    let text = std::fs::read_to_string(&scenarios_path).unwrap();
    let doc = yaml::parse_one(&text, &scenarios_path).unwrap();
    let scenarios = doc.value.as_array().unwrap();
    let mut passed = 0;
    let mut failures = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        let case = s["case"].as_str().unwrap();
        let bundle_name = s["bundle"].as_str().unwrap();
        let bundle = opship_install::load(&data.join("bundles").join(bundle_name)).unwrap();
        let deployment_config = s.get("deploymentConfig").map(|_| {
            DeploymentConfig::from_value(&doc, &format!("/{i}/deploymentConfig")).unwrap()
        });
        let opts = Options {
            install_namespace: s["installNamespace"].as_str().unwrap().to_owned(),
            watch_namespace: s["watchNamespace"].as_str().map(str::to_owned),
            deployment_config,
            cert_provider: None,
        };
        let objects = opship_install::render(&bundle, &opts).unwrap();
        let files = opship_install::files(&objects).unwrap();
        let expected_dir = data.join("expected-manifests").join(bundle_name).join(case);
        let mut expected: Vec<String> = std::fs::read_dir(&expected_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        expected.sort();
        let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
        if names != expected {
            failures.push(format!(
                "{case}: file names differ:\n got {names:#?}\n want {expected:#?}"
            ));
            continue;
        }
        let mut same = true;
        for (name, text) in &files {
            let got = yaml::parse_one(text, Path::new(name)).unwrap().value;
            let want = parse(&expected_dir.join(name));
            if got != want {
                same = false;
                let mut d = Vec::new();
                diff("", &got, &want, &mut d);
                failures.push(format!("{case}/{name} differs:\n{}", d.join("\n")));
            }
        }
        if same {
            passed += 1;
        }
    }
    eprintln!("OLM v1 scenarios: {passed}/{} identical", scenarios.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert_eq!(passed, 7);
}

/// The pointers where two values differ, with both sides (cut), for a readable failure.
fn diff(ptr: &str, got: &Value, want: &Value, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    Some(w) => diff(&format!("{ptr}/{k}"), v, w, out),
                    None => out.push(format!("  {ptr}/{k}: only in ours: {}", cut(v))),
                }
            }
            for (k, w) in b {
                if !a.contains_key(k) {
                    out.push(format!("  {ptr}/{k}: only in OLM's: {}", cut(w)));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                diff(&format!("{ptr}/{i}"), v, w, out);
            }
        }
        _ if got != want => out.push(format!("  {ptr}: ours {} / OLM's {}", cut(got), cut(want))),
        _ => {}
    }
}

fn cut(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 300 {
        format!("{}…", &s[..s.floor_char_boundary(300)])
    } else {
        s
    }
}

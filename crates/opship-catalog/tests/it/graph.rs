//! Upgrade graphs: opm's mermaid form (channels sorted by name, edges old -> new, skipRange
//! edges from every entry in range, deprecations styled) and dot.

use opship_catalog::graph::{self, GraphOptions};
use opship_catalog::load;

const CATALOG: &str = "---\nschema: olm.package\nname: demo\ndefaultChannel: stable\n---\nschema: olm.channel\nname: stable\npackage: demo\nentries:\n- name: demo.v0.1.0\n- name: demo.v0.1.1\n  replaces: demo.v0.1.0\n- name: demo.v0.2.0\n  replaces: demo.v0.1.1\n  skips: [demo.v0.1.0]\n  skipRange: '>=0.1.0 <0.2.0'\n---\nschema: olm.channel\nname: alpha\npackage: demo\nentries:\n- name: demo.v0.2.0\n";

fn catalog(extra: &str) -> opship_catalog::Catalog {
    let mut text = CATALOG.to_owned();
    for (n, v) in [
        ("demo.v0.1.0", "0.1.0"),
        ("demo.v0.1.1", "0.1.1"),
        ("demo.v0.2.0", "0.2.0"),
    ] {
        text.push_str(&format!("---\nschema: olm.bundle\nname: {n}\npackage: demo\nimage: q.io/d:v{v}\nproperties:\n- type: olm.package\n  value: {{packageName: demo, version: {v}}}\n"));
    }
    text.push_str(extra);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.yaml"), text).unwrap();
    load::load_dir(dir.path()).unwrap()
}

#[test]
fn mermaid_like_opm_render_graph() {
    let cat = catalog(
        "---\nschema: olm.deprecations\npackage: demo\nentries:\n- reference: {schema: olm.bundle, name: demo.v0.1.0}\n  message: gone\n- reference: {schema: olm.channel, name: alpha}\n  message: retired\n",
    );
    let got = graph::mermaid(&cat, &GraphOptions::default()).unwrap();
    let want = r#"graph LR
  classDef deprecated fill:#E8960F
  %% package "demo"
  subgraph "demo"
    %% channel "alpha"
    subgraph demo-alpha["alpha"]
      demo-alpha-demo.v0.2.0["demo.v0.2.0"]
    end
    %% channel "stable"
    subgraph demo-stable["stable"]
      demo-stable-demo.v0.1.0["demo.v0.1.0"]:::deprecated
      demo-stable-demo.v0.1.1["demo.v0.1.1"]
      demo-stable-demo.v0.1.0["demo.v0.1.0"]-- replace --> demo-stable-demo.v0.1.1["demo.v0.1.1"]
      demo-stable-demo.v0.2.0["demo.v0.2.0"]
      demo-stable-demo.v0.1.1["demo.v0.1.1"]-- replace --> demo-stable-demo.v0.2.0["demo.v0.2.0"]
      demo-stable-demo.v0.1.0["demo.v0.1.0"]-- skip --> demo-stable-demo.v0.2.0["demo.v0.2.0"]
      demo-stable-demo.v0.1.0["demo.v0.1.0"]-- "skipRange(>=0.1.0 <0.2.0)" --> demo-stable-demo.v0.2.0["demo.v0.2.0"]
      demo-stable-demo.v0.1.1["demo.v0.1.1"]-- "skipRange(>=0.1.0 <0.2.0)" --> demo-stable-demo.v0.2.0["demo.v0.2.0"]
    end
  end
style demo-alpha fill:#DCD0FF
"#;
    assert_eq!(got, want);
    let v0 = graph::mermaid(
        &cat,
        &GraphOptions {
            v0_semantics: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(
        v0.contains("classDef skipped stroke:#FF0000,stroke-width:4px\n"),
        "{v0}"
    );
    assert!(
        v0.ends_with("class demo-stable-demo.v0.1.0 skipped\n"),
        "{v0}"
    );
}

#[test]
fn dot_graph() {
    let cat = catalog("");
    let got = graph::dot(
        &cat,
        &GraphOptions {
            package: Some("demo".into()),
            v0_semantics: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(got.starts_with("digraph catalog {\n"), "{got}");
    assert!(
        got.contains(
            "\"demo-stable-demo.v0.1.1\" -> \"demo-stable-demo.v0.2.0\" [label=\"replace\"];"
        ),
        "{got}"
    );
    assert!(got.contains("\"demo-stable-demo.v0.1.0\" -> \"demo-stable-demo.v0.2.0\" [label=\"skip\", style=dashed];"), "{got}");
    assert!(
        got.contains("[label=\"demo.v0.1.0\", color=\"#FF0000\", penwidth=4]"),
        "{got}"
    );
    assert!(got.trim_end().ends_with('}'));
    assert_eq!(
        graph::dot(
            &cat,
            &GraphOptions {
                package: Some("other".into()),
                ..Default::default()
            }
        )
        .unwrap(),
        "digraph catalog {\n  rankdir=LR;\n  node [shape=box];\n}\n"
    );
}

#[test]
fn minimum_edge_like_opm() {
    let cat = catalog("");
    let got = graph::mermaid(
        &cat,
        &GraphOptions {
            minimum_edge: Some("demo.v0.1.1".into()),
            ..Default::default()
        },
    )
    .unwrap();
    // 0.1.0 and every edge from it disappear; 0.1.1 is the floor without edges; the skipRange
    // of 0.2.0 admits the floor, so its edges from entries at or above it stay.
    let want = r#"graph LR
  classDef deprecated fill:#E8960F
  %% package "demo"
  subgraph "demo"
    %% channel "alpha"
    subgraph demo-alpha["alpha"]
      demo-alpha-demo.v0.2.0["demo.v0.2.0"]
    end
    %% channel "stable"
    subgraph demo-stable["stable"]
      demo-stable-demo.v0.1.1["demo.v0.1.1"]
      demo-stable-demo.v0.2.0["demo.v0.2.0"]
      demo-stable-demo.v0.1.1["demo.v0.1.1"]-- replace --> demo-stable-demo.v0.2.0["demo.v0.2.0"]
      demo-stable-demo.v0.1.1["demo.v0.1.1"]-- "skipRange(>=0.1.0 <0.2.0)" --> demo-stable-demo.v0.2.0["demo.v0.2.0"]
    end
  end
"#;
    assert_eq!(got, want);
    let err = graph::mermaid(
        &cat,
        &GraphOptions {
            minimum_edge: Some("nope".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "unknown minimum edge name: \"nope\"");
}

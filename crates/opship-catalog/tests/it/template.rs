//! Templates with opm's semantics: the semver example the OLM reference ran through opm
//! v1.26.5, and basic templates in both spellings.

use std::path::Path;

use opship_catalog::model::{Bundle, Property};
use opship_catalog::template;
use opship_catalog::validate;
use opship_catalog::write::{self, Format};
use serde_json::json;

/// A stand-in renderer: `quay.io/example/demo-operator-bundle:vX.Y.Z` → bundle `demo-operator.vX.Y.Z`.
fn render(image: &str) -> opship_catalog::Result<Bundle> {
    let v = image.rsplit_once(":v").map(|(_, v)| v).unwrap_or_default();
    Ok(Bundle {
        name: format!("demo-operator.v{v}"),
        package: "demo-operator".into(),
        image: image.into(),
        properties: vec![Property::new(
            "olm.package",
            json!({"packageName": "demo-operator", "version": v}),
        )],
        ..Default::default()
    })
}

fn img(v: &str) -> String {
    format!("  - image: quay.io/example/demo-operator-bundle:v{v}\n")
}

fn entries(cat: &opship_catalog::Catalog, channel: &str) -> Vec<String> {
    let ch = cat
        .channels
        .iter()
        .find(|c| c.name == channel)
        .unwrap_or_else(|| panic!("no channel {channel}"));
    ch.entries
        .iter()
        .map(|e| {
            let mut s = e.name.trim_start_matches("demo-operator.v").to_owned();
            if !e.replaces.is_empty() {
                s.push_str(&format!(
                    " replaces {}",
                    e.replaces.trim_start_matches("demo-operator.v")
                ));
            }
            if !e.skips.is_empty() {
                let skips: Vec<&str> = e
                    .skips
                    .iter()
                    .map(|s| s.trim_start_matches("demo-operator.v"))
                    .collect();
                s.push_str(&format!(" skips[{}]", skips.join(",")));
            }
            s
        })
        .collect()
}

#[test]
fn semver_template_matches_opms_edges() {
    let all = [
        "0.1.0", "0.1.1", "0.2.0", "0.2.1", "1.0.0", "1.0.1", "1.1.0",
    ];
    let text = format!(
        "schema: olm.semver\nGenerateMajorChannels: true\nGenerateMinorChannels: true\ncandidate:\n  bundles:\n{}fast:\n  bundles:\n{}{}stable:\n  bundles:\n{}",
        all.iter().map(|v| img(v)).collect::<String>(),
        img("0.2.1"),
        img("1.0.1"),
        img("1.0.1"),
    );
    let cat = template::semver(&text, Path::new("semver.yaml"), &render).unwrap();
    // The reference's opm run, channel by channel.
    assert_eq!(
        entries(&cat, "candidate-v0"),
        [
            "0.1.0",
            "0.1.1 skips[0.1.0]",
            "0.2.0",
            "0.2.1 replaces 0.1.1 skips[0.1.0,0.2.0]"
        ]
    );
    assert_eq!(
        entries(&cat, "candidate-v0.1"),
        ["0.1.0", "0.1.1 skips[0.1.0]"]
    );
    assert_eq!(
        entries(&cat, "candidate-v0.2"),
        ["0.2.0", "0.2.1 replaces 0.1.1 skips[0.1.0,0.2.0]"]
    );
    assert_eq!(
        entries(&cat, "candidate-v1"),
        [
            "1.0.0",
            "1.0.1 skips[1.0.0]",
            "1.1.0 replaces 1.0.1 skips[1.0.0]"
        ]
    );
    assert_eq!(
        entries(&cat, "candidate-v1.1"),
        ["1.1.0 replaces 1.0.1 skips[1.0.0]"]
    );
    for single in [
        "fast-v0",
        "fast-v0.2",
        "fast-v1",
        "fast-v1.0",
        "stable-v1",
        "stable-v1.0",
    ] {
        assert_eq!(entries(&cat, single).len(), 1, "{single}");
    }
    assert_eq!(cat.channels.len(), 12);
    // opm >= 1.27 breaks the stable-v1 / stable-v1.0 tie by defaultChannelTypePreference,
    // which defaults to minor when minor channels are generated.
    assert_eq!(cat.packages[0].default_channel, "stable-v1.0");
    // opm validate passes on the result.
    let report = validate::validate(&cat);
    assert!(report.passed(), "{}", report.error_tree());
    // Deterministic bytes.
    let a = write::to_string(&cat, Format::Json).unwrap();
    let again = template::semver(&text, Path::new("semver.yaml"), &render).unwrap();
    assert_eq!(a, write::to_string(&again, Format::Json).unwrap());
}

#[test]
fn semver_template_preferences_and_errors() {
    let base = format!(
        "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: true\ndefaultChannelTypePreference: major\nstable:\n  bundles:\n{}",
        img("1.0.1")
    );
    let cat = template::semver(&base, Path::new("t.yaml"), &render).unwrap();
    assert_eq!(cat.packages[0].default_channel, "stable-v1");
    // Minor only by default.
    let minor = format!(
        "schema: olm.semver\ncandidate:\n  bundles:\n{}{}",
        img("0.1.0"),
        img("0.2.0")
    );
    let cat = template::semver(&minor, Path::new("t.yaml"), &render).unwrap();
    let names: Vec<&str> = cat.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["candidate-v0.1", "candidate-v0.2"]);
    assert_eq!(cat.packages[0].default_channel, "candidate-v0.2");
    for (bad, needle) in [
        ("schema: olm.semver\nbogus: 1\n", "unknown field `bogus`"),
        (
            "schema: olm.semver\ngenerateMinorChannels: false\ngenerateMajorChannels: true\ndefaultChannelTypePreference: minor\n",
            "doesn't make sense",
        ),
        (
            "schema: olm.semver\ndefaultChannelTypePreference: patch\n",
            "unknown DefaultChannelTypePreference",
        ),
        ("schema: olm.basic\n", "expected \"olm.semver\""),
    ] {
        let err = template::semver(bad, Path::new("t.yaml"), &render)
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{bad}: {err}");
    }
}

#[test]
fn basic_template_in_both_spellings() {
    let plain = "---\nschema: olm.package\nname: demo-operator\ndefaultChannel: stable\n---\nschema: olm.channel\nname: stable\npackage: demo-operator\nentries:\n- name: demo-operator.v0.1.0\n- name: demo-operator.v0.2.0\n  replaces: demo-operator.v0.1.0\n---\nschema: olm.bundle\nimage: quay.io/example/demo-operator-bundle:v0.1.0\n---\nschema: olm.bundle\nimage: quay.io/example/demo-operator-bundle:v0.2.0\n---\nschema: olm.deprecations\npackage: demo-operator\nentries:\n- reference: {schema: olm.bundle, name: demo-operator.v0.1.0}\n  message: old\n---\nschema: com.example.custom\npackage: demo-operator\nx: 1\n";
    let wrapped = json!({
        "schema": "olm.template.basic",
        "entries": [
            {"schema": "olm.package", "name": "demo-operator", "defaultChannel": "stable"},
            {"schema": "olm.channel", "name": "stable", "package": "demo-operator", "entries": [
                {"name": "demo-operator.v0.1.0"},
                {"name": "demo-operator.v0.2.0", "replaces": "demo-operator.v0.1.0"}]},
            {"schema": "olm.bundle", "image": "quay.io/example/demo-operator-bundle:v0.1.0"},
            {"schema": "olm.bundle", "image": "quay.io/example/demo-operator-bundle:v0.2.0"},
            {"schema": "olm.deprecations", "package": "demo-operator", "entries": [
                {"reference": {"schema": "olm.bundle", "name": "demo-operator.v0.1.0"}, "message": "old"}]},
            // JSON keeps its key order (as in opm); YAML is read with sorted keys.
            {"package": "demo-operator", "schema": "com.example.custom", "x": 1}
        ]
    });
    let a = template::basic(plain, Path::new("t.yaml"), &render).unwrap();
    let b = template::basic(&wrapped.to_string(), Path::new("t.json"), &render).unwrap();
    let ta = write::to_string(&a, Format::Json).unwrap();
    assert_eq!(ta, write::to_string(&b, Format::Json).unwrap());
    assert_eq!(a.bundles.len(), 2);
    assert_eq!(a.deprecations.len(), 1);
    assert_eq!(a.others.len(), 1);
    assert!(validate::validate(&a).passed());
    // A bundle with more than an image is refused.
    let err = template::basic(
        "---\nschema: olm.bundle\nimage: x/y:v1\npackage: demo\n",
        Path::new("t.yaml"),
        &render,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("unexpected fields present in basic template bundle"),
        "{err}"
    );
}

//! `add` on catalogs in memory and on disk: edges and policies, refusals, and that nothing is
//! written when the result would not validate.

use opship_catalog::add::{self, AddOptions, SkipRangePolicy, SkipsPolicy};
use opship_catalog::model::{Bundle, Property};
use opship_catalog::{Catalog, load};
use serde_json::json;

fn bundle(v: &str) -> Bundle {
    Bundle {
        name: format!("demo.v{v}"),
        package: "demo".into(),
        image: format!("quay.io/example/demo-bundle:v{v}"),
        properties: vec![Property::new(
            "olm.package",
            json!({"packageName": "demo", "version": v}),
        )],
        ..Default::default()
    }
}

fn opts(channels: &[&str]) -> AddOptions {
    AddOptions {
        channels: channels.iter().map(|c| (*c).to_owned()).collect(),
        ..Default::default()
    }
}

#[test]
fn skip_range_policies() {
    let v = semver::Version::parse("1.2.3").unwrap();
    assert_eq!(
        add::skip_range(&SkipRangePolicy::Minor, &v),
        ">=1.2.0 <1.2.3"
    );
    assert_eq!(
        add::skip_range(&SkipRangePolicy::Major, &v),
        ">=1.0.0 <1.2.3"
    );
    assert_eq!(add::skip_range(&SkipRangePolicy::All, &v), "<1.2.3");
    assert_eq!(add::skip_range(&SkipRangePolicy::None, &v), "");
    // Nothing earlier in the minor: no range at all.
    assert_eq!(
        add::skip_range(&SkipRangePolicy::Minor, &semver::Version::new(1, 3, 0)),
        ""
    );
}

#[test]
fn heads_replaces_skips_default_channel() {
    let mut cat = Catalog::default();
    add::apply_add(&mut cat, bundle("1.0.0"), &opts(&["stable"])).unwrap();
    add::apply_add(&mut cat, bundle("1.0.1"), &opts(&["stable"])).unwrap();
    let o = AddOptions {
        skips: SkipsPolicy::SameMinor,
        skip_range: SkipRangePolicy::Minor,
        default_channel: Some("fast".into()),
        ..opts(&["stable", "fast"])
    };
    let out = add::apply_add(&mut cat, bundle("1.0.2"), &o).unwrap();
    let stable = &out.entries[0].1;
    assert_eq!(stable.replaces, "demo.v1.0.1");
    // Never skip the bundle that is replaced (OLM v0 would drop the replaces edge).
    assert_eq!(stable.skips, ["demo.v1.0.0"]);
    assert_eq!(stable.skip_range, ">=1.0.0 <1.0.2");
    // A new channel starts with the bundle alone.
    assert_eq!(out.entries[1].1.replaces, "");
    assert_eq!(cat.packages[0].default_channel, "fast");
    assert!(opship_catalog::validate::validate(&cat).passed());
}

#[test]
fn refusals() {
    let mut cat = Catalog::default();
    add::apply_add(&mut cat, bundle("1.0.0"), &opts(&["stable"])).unwrap();
    add::apply_add(&mut cat, bundle("1.1.0"), &opts(&["stable"])).unwrap();
    let err = add::apply_add(&mut cat, bundle("1.1.0"), &opts(&["stable"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("already has version 1.1.0") && err.contains("--replace"),
        "{err}"
    );
    let err = add::apply_add(&mut cat, bundle("1.0.5"), &opts(&["stable"]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not below 1.0.5"), "{err}");
    let mut no_version = bundle("2.0.0");
    no_version.properties.clear();
    assert!(add::apply_add(&mut cat, no_version, &opts(&["stable"])).is_err());
    // --replace swaps the bundle and keeps its entry and edges.
    let mut rebuilt = bundle("1.1.0");
    rebuilt.image = "quay.io/example/demo-bundle@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".into();
    let out = add::apply_add(
        &mut cat,
        rebuilt,
        &AddOptions {
            replace: true,
            ..opts(&["stable"])
        },
    )
    .unwrap();
    assert_eq!(out.replaced.as_deref(), Some("demo.v1.1.0"));
    assert_eq!(cat.bundles.len(), 2);
    assert_eq!(cat.channels[0].entries[1].replaces, "demo.v1.0.0");
    assert!(cat.bundles.iter().any(|b| b.image.contains("@sha256:")));
}

#[test]
fn nothing_is_written_when_the_package_would_be_invalid() {
    let dir = tempfile::tempdir().unwrap();
    add::add(dir.path(), bundle("1.0.0"), &opts(&["stable"])).unwrap();
    let file = dir.path().join("demo/catalog.yaml");
    let before = std::fs::read(&file).unwrap();
    // A bundle image that is not a pull spec fails opm's rules: refused, file untouched.
    let mut bad = bundle("1.1.0");
    bad.image = "Not A Pull Spec".into();
    let err = add::add(dir.path(), bad, &opts(&["stable"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("nothing written") && err.contains("invalid image pull spec"),
        "{err}"
    );
    assert_eq!(before, std::fs::read(&file).unwrap());
    // Two files in the package directory: refused, not merged silently.
    std::fs::write(
        dir.path().join("demo/extra.yaml"),
        "schema: custom.x\npackage: demo\n",
    )
    .unwrap();
    let err = add::add(dir.path(), bundle("1.2.0"), &opts(&["stable"]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("holds 2 catalog files"), "{err}");
    let cat = load::load_dir(dir.path()).unwrap();
    assert_eq!(cat.bundles.len(), 1);
}

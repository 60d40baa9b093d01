//! The sample operator's generated bundle, file by file, as insta snapshots: any change to
//! generation shows up as a reviewed diff of real output.

use opship_core::bundle::{self, Inputs, Options};
use opship_core::config::Project;
use opship_core::manifest::{self, Source};

use crate::tracked;

pub(crate) fn generate(version: &str) -> bundle::Bundle {
    let project = Project::load(&tracked("bundle/opship.yaml")).unwrap();
    let c = &project.config;
    let objects = manifest::load(&Source::Path(
        project.resolve(c.manifests.as_ref().unwrap()),
    ))
    .unwrap();
    let base = manifest::load(&Source::Path(project.resolve(c.csv_base.as_ref().unwrap())))
        .unwrap()
        .remove(0);
    let release = project.release(version).unwrap();
    let opts = Options {
        package: c.package.clone(),
        version: bundle::parse_version(version).unwrap(),
        channels: c.channels.clone(),
        default_channel: c.default_channel.clone(),
        replaces: release.replaces.clone(),
        skips: release.skips.clone(),
        skip_range: release.skip_range.clone(),
        created_at: None,
        extra_service_accounts: c.extra_service_accounts.clone(),
        exclude_kinds: c.exclude_kinds.clone().unwrap(),
        labels: c.labels.clone(),
        operator_image: c
            .operator
            .as_ref()
            .map(|o| (o.placeholder().to_owned(), o.reference(version))),
        display_name: c.display_name.clone(),
        csv_annotations: c.csv_annotations.clone(),
        extra_manifests: Vec::new(),
        csv_substitutions: Vec::new(),
    };
    bundle::generate(
        Inputs {
            objects,
            base_csv: Some(base),
        },
        &opts,
    )
    .unwrap()
}

#[test]
fn sample_operator_0_3_0_snapshots() {
    let b = generate("0.3.0");
    let names: Vec<&String> = b.files.keys().collect();
    insta::assert_debug_snapshot!("file_list", names);
    for (path, bytes) in &b.files {
        let name = path.replace('/', "__");
        insta::assert_snapshot!(name, String::from_utf8(bytes.clone()).unwrap());
    }
}

#[test]
fn sample_generation_is_deterministic() {
    let a = generate("0.2.0");
    let b = generate("0.2.0");
    assert_eq!(a.files, b.files);
}

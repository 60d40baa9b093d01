//! Snapshots of the sample operator's chart (0.3.0, with opship.yaml's settings): every file
//! but the CRD, whose content is the bundle's and is compared through Helm elsewhere. A change
//! to a template or to the model shows up here as a reviewable diff.

use opship_chart::{CrdPlacement, Options};
use opship_core::config::Project;

use crate::{render_to_temp, tracked};

#[test]
fn sample_chart_files() {
    let p = Project::load(&tracked("bundle/opship.yaml")).unwrap();
    let opts = Options {
        name: None,
        crds: CrdPlacement::Templates,
    };
    let (_t, _d, chart) = render_to_temp(&p.bundle_dir("0.3.0"), &opts, &p.config.environments);
    let names: Vec<&String> = chart.files.keys().collect();
    insta::assert_yaml_snapshot!("file_list", names);
    for (name, bytes) in &chart.files {
        if name.starts_with("templates/crds/") {
            continue;
        }
        let text = String::from_utf8(bytes.clone()).unwrap();
        insta::assert_snapshot!(name.replace('/', "__"), text);
    }
}

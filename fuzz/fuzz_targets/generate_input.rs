//! Fuzzes `generate bundle`'s input loader and generation: the input is split at the first
//! `\0` into a kustomize-style manifest stream and a base CSV; both are parsed as
//! `opship generate bundle --input` parses them, and a bundle is generated in memory.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use opship_core::bundle::{self, Inputs, Options};
use opship_core::manifest;

fuzz_target!(|data: &[u8]| {
    let (stream, base) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let Ok(stream) = std::str::from_utf8(stream) else {
        return;
    };
    let Ok(objects) = manifest::parse_objects(stream, Path::new("fuzz/input.yaml")) else {
        return;
    };
    let base_csv = match base.map(std::str::from_utf8) {
        Some(Ok(text)) => match manifest::parse_objects(text, Path::new("fuzz/base.yaml")) {
            Ok(mut objs) if objs.len() == 1 => objs.pop(),
            _ => return,
        },
        Some(Err(_)) => return,
        None => None,
    };
    let opts = Options {
        package: "fuzz-operator".into(),
        version: semver::Version::new(1, 2, 3),
        channels: vec!["stable".into()],
        default_channel: Some("stable".into()),
        replaces: Some("1.2.2".into()),
        skips: vec!["1.2.1".into()],
        skip_range: Some(">=1.0.0 <1.2.3".into()),
        created_at: None,
        extra_service_accounts: Vec::new(),
        exclude_kinds: vec!["Namespace".into()],
        labels: Default::default(),
        operator_image: Some(("controller".into(), "quay.io/fuzz/op:v1.2.3".into())),
        display_name: Some("Fuzz Operator".into()),
        csv_annotations: Default::default(),
        extra_manifests: Vec::new(),
        csv_substitutions: Vec::new(),
    };
    if let Ok(b) = bundle::generate(Inputs { objects, base_csv }, &opts) {
        // What generation writes must stay within what the validator reads.
        let _ = bundle::check_size(&b.files);
        for name in b.files.keys() {
            assert!(!name.starts_with('/') && !name.split('/').any(|c| c == ".."), "{name}");
        }
    }
});

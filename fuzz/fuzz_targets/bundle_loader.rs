//! Fuzzes the bundle loader and every validation suite with in-memory bundles.
//!
//! The input is split at `\0` into up to eight files: the first is the CSV, the second
//! `metadata/annotations.yaml`, then a CRD, `metadata/dependencies.yaml`,
//! `metadata/properties.yaml`, `bundle.Dockerfile` and two more manifests. A file may pick its
//! own name with a first line `#path: <relative path>` (so nested directories, dot files and
//! odd names are reached too).
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use opship_validate::{Options, load, validate};

const NAMES: [&str; 8] = [
    "manifests/operator.clusterserviceversion.yaml",
    "metadata/annotations.yaml",
    "manifests/crd.yaml",
    "metadata/dependencies.yaml",
    "metadata/properties.yaml",
    "bundle.Dockerfile",
    "manifests/extra.yaml",
    "manifests/more.yaml",
];

fuzz_target!(|data: &[u8]| {
    let mut files = Vec::new();
    for (i, part) in data.split(|&b| b == 0).take(NAMES.len()).enumerate() {
        let (name, body) = match part.strip_prefix(b"#path: ") {
            Some(rest) => {
                let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
                let name = String::from_utf8_lossy(&rest[..end]).into_owned();
                (PathBuf::from(name), rest.get(end + 1..).unwrap_or_default())
            }
            None => (PathBuf::from(NAMES[i]), part),
        };
        files.push((name, body.to_vec()));
    }
    let bundle = load::load_files(Path::new("fuzz"), files);
    let _ = validate(&bundle, &Options::all());
});

//! Fuzzes the file-based catalog loader and every `opm validate` rule: the input is one catalog
//! file (a YAML or JSON stream), loaded as `opship catalog validate` and `render` load it, then
//! validated and written back in both formats.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use opship_catalog::{load, validate, write};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cat) = load::load_text(text, Path::new("fuzz/catalog.yaml")) else {
        return;
    };
    let report = validate::validate(&cat);
    let _ = report.error_tree();
    let _ = report.to_json();
    for format in [write::Format::Json, write::Format::Yaml] {
        let _ = write::to_string(&cat, format);
    }
});

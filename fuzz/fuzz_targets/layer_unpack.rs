//! Fuzzes the unpacking of image layers (what `validate bundle REF` and `catalog render REF`
//! do with pulled layers): the input is a layer, plain tar or gzip-compressed tar, read into
//! memory and unpacked into a fresh directory under the budgets, with small budgets so that
//! the limits themselves are reached too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opship_core::image::unpack::{self, Limits};

fuzz_target!(|data: &[u8]| {
    let small = Limits {
        max_total_bytes: 1 << 20,
        max_file_bytes: 256 << 10,
        max_entries: 200,
        max_path_bytes: 512,
        max_depth: 16,
        max_ratio: 100,
    };
    for limits in [Limits::default(), small] {
        let _ = unpack::read_layer(data, &limits);
        let dir = tempfile::tempdir().expect("temporary directory");
        let target = dir.path().join("out");
        if let Ok(files) = unpack::unpack_layer(data, &target, &limits) {
            // Whatever was written stays inside the target.
            for f in files {
                assert!(!f.is_absolute() && f.components().all(|c| c.as_os_str() != ".."));
            }
        }
    }
});

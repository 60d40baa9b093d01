//! Fuzzes the quick YAML reader (`opship_core::yaml`'s `yaml_scan`) against granit-parser.
//!
//! The input (UTF-8; other bytes are skipped) is read by both: wherever the quick reader gives
//! events, granit must accept the text and give the same events at the same positions. Then the
//! text goes through `yaml::parse_stream` and `parse_stream_lenient`, which must answer without
//! panicking.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use opship_core::yaml;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (quick, slow) = yaml::reader_events(text);
    if let Ok(quick) = quick {
        match slow {
            Ok(slow) => assert_eq!(quick, slow, "the readers disagree on {text:?}"),
            Err(e) => panic!("the quick reader accepted what granit refuses ({e}): {text:?}"),
        }
    }
    let _ = yaml::parse_stream(text, Path::new("fuzz.yaml"));
    let _ = yaml::parse_stream_lenient(text, Path::new("fuzz.yaml"));
});

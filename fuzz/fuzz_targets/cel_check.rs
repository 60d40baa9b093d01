//! Fuzzes the CEL check of the crd-examples suite with arbitrary rule text.
//!
//! The input (lossy UTF-8) is the `rule` of an `x-kubernetes-validations` entry of a CRD in an
//! in-memory bundle, validated with the crd-examples suite: the real path, from YAML to the
//! parser thread. Then, when the pre-check finds the text within cel-go's limits, the check
//! runs again on a stack a quarter of the parser thread's, so a text the pre-check
//! underestimates by that much overflows here instead of passing unnoticed.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use opship_validate::crd_examples::cel;
use opship_validate::{Options, Suite, load, validate};

/// A YAML double-quoted scalar holding `s` exactly (YAML allows only printable characters
/// unescaped).
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

fn crd(rule: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {{kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - rule: {}
",
        quoted(rule)
    )
}

fuzz_target!(|data: &[u8]| {
    let rule = String::from_utf8_lossy(data);
    let files = vec![(
        PathBuf::from("manifests/crd.yaml"),
        crd(&rule).into_bytes(),
    )];
    let bundle = load::load_files(Path::new("fuzz"), files);
    // The wrapper must hold any text, or the parser is not what is fuzzed.
    assert_eq!(bundle.objects.len(), 1, "{:?}", bundle.findings);
    let mut opts = Options::default();
    opts.optional.insert(Suite::CrdExamples);
    let findings = validate(&bundle, &opts);
    assert!(findings.iter().filter(|f| f.rule.id == "EX007").count() <= 1);

    let shape = cel::shape(&rule);
    if rule.chars().count() <= cel::MAX_CODE_POINTS
        && shape.nesting <= cel::MAX_DEPTH
        && shape.depth <= cel::MAX_DEPTH
    {
        let text = rule.into_owned();
        std::thread::Builder::new()
            .stack_size(cel::PARSER_STACK / 4)
            .spawn(move || cel::check(&text))
            .expect("a thread")
            .join()
            .expect("no panic outside the parser");
    }
});

//! CRD example rules (`EX…`): every `alm-examples` entry of the CSV checked against the OpenAPI
//! v3 schema of the CRD version it names, the way the API server would check it on
//! `kubectl apply`, and every CEL rule (`x-kubernetes-validations`) of the bundle's CRDs
//! parsed. Nothing else checks either before a user tries the example in the console.

pub mod cel;
pub(crate) mod schema;

use std::collections::HashSet;

use opship_core::manifest::{Object, split_api_version};
use opship_core::yaml::escape_pointer_token;
use serde_json::Value;

use crate::Options;
use crate::load::Bundle;
use crate::rule::{Finding, Level, Rule};
use schema::{Kind, Mode, Patterns};

rule!(
    CrdExamples,
    EX001,
    Error,
    None,
    "Each example names a served version of a CRD in the bundle",
    "The console offers alm-examples as templates for new resources. An example whose kind is \
     owned by the CSV but has no CRD in the bundle, or whose apiVersion is not a served version \
     of the CRD, cannot be created. Fix the example's apiVersion or serve the version."
);
rule!(
    CrdExamples,
    EX002,
    Error,
    None,
    "Example values have the types the CRD schema declares",
    "The API server rejects a custom resource whose field has another JSON type than the schema \
     says (a quoted \"3\" for an integer, a map for a list). Fix the example, or the schema if \
     the example shows what users really write."
);
rule!(
    CrdExamples,
    EX003,
    Error,
    None,
    "Examples set every required field",
    "A field listed in the schema's `required` without a default must be present, or the API \
     server rejects the resource. Add the field to the example."
);
rule!(
    CrdExamples,
    EX004,
    Error,
    None,
    "Example values are among the schema's enum values",
    "The API server rejects a value that is not one of the field's `enum` entries. Use one of \
     the listed values (enums are case-sensitive)."
);
rule!(
    CrdExamples,
    EX005,
    Error,
    None,
    "Example values satisfy the schema's bounds, patterns and formats",
    "minimum/maximum, minLength/maxLength, minItems/maxItems, min/maxProperties, multipleOf, \
     pattern and the date-time format are enforced by the API server. A number that does not \
     fit an int32/int64 format is accepted by the server but cannot be read by the operator's Go \
     types (warning)."
);
rule!(
    CrdExamples,
    EX006,
    Warning,
    None,
    "Examples have no fields the CRD schema does not know",
    "The API server silently drops (prunes) fields that are not in the structural schema, so \
     a user who copies the example loses them without notice; with `kubectl apply \
     --validate=strict` the create fails. Usually a typo or an outdated example: fix the field \
     name, or add it to the schema."
);
rule!(
    CrdExamples,
    EX007,
    Error,
    None,
    "Every CEL validation rule of the CRDs parses",
    "The API server compiles x-kubernetes-validations rules (and messageExpressions) when the \
     CRD is created and refuses the CRD when one does not parse, which fails the whole install. \
     It also refuses expressions over cel-go's parser limits: more than 100,000 characters, or \
     nested more than 250 levels (brackets, calls and conditionals; or selections, indexes, \
     calls and operators on one path, as in `self.a.a.a…`). Fix the expression; `kubectl apply \
     --dry-run=server` on the CRD shows the same error."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[&EX001, &EX002, &EX003, &EX004, &EX005, &EX006, &EX007];

/// Runs the suite.
pub(crate) fn check(b: &Bundle, _opts: &Options, out: &mut Vec<Finding>) {
    if b.crds().next().is_some() {
        cel_rules_on_parser_stack(b, out);
    }
    if let Some(csv) = b.csv() {
        examples(b, csv, out);
    }
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// One version of a CRD as far as validation is concerned.
pub(crate) struct Version<'a> {
    pub(crate) schema: Option<&'a Value>,
    pub(crate) served: bool,
    pub(crate) status_subresource: bool,
}

/// The version `version` of a CRD, from the v1 or v1beta1 layout.
pub(crate) fn crd_version<'a>(crd: &'a Object, version: &str) -> Option<Version<'a>> {
    let spec = &crd.value()["spec"];
    let global_schema = spec["validation"]["openAPIV3Schema"]
        .as_object()
        .map(|_| &spec["validation"]["openAPIV3Schema"]);
    let global_status = spec["subresources"]["status"].is_object();
    for v in array(&spec["versions"]) {
        if str_of(&v["name"]) != version {
            continue;
        }
        let own = &v["schema"]["openAPIV3Schema"];
        return Some(Version {
            schema: if own.is_object() {
                Some(own)
            } else {
                global_schema
            },
            served: v["served"].as_bool().unwrap_or(true),
            status_subresource: v["subresources"]["status"].is_object() || global_status,
        });
    }
    // v1beta1 with only `spec.version`.
    if array(&spec["versions"]).is_empty() && str_of(&spec["version"]) == version {
        return Some(Version {
            schema: global_schema,
            served: true,
            status_subresource: global_status,
        });
    }
    None
}

/// Whether unknown fields are pruned: always for v1, for v1beta1 only with
/// `preserveUnknownFields: false`.
pub(crate) fn prunes(crd: &Object) -> bool {
    crd.api_version() == "apiextensions.k8s.io/v1"
        || crd.value()["spec"]["preserveUnknownFields"].as_bool() == Some(false)
}

fn examples(b: &Bundle, csv: &Object, out: &mut Vec<Finding>) {
    let annotations = &csv.value()["metadata"]["annotations"];
    // alm-examples wins over olm.examples, as in the reference.
    let key = if annotations["alm-examples"].is_string() {
        "alm-examples"
    } else if annotations["olm.examples"].is_string() {
        "olm.examples"
    } else {
        return;
    };
    let Ok(Value::Array(list)) = serde_json::from_str::<Value>(str_of(&annotations[key])) else {
        // Invalid JSON is reported by the CSV rules.
        return;
    };
    let at = csv.origin_of(&format!(
        "/metadata/annotations/{}",
        escape_pointer_token(key)
    ));
    let crds: Vec<&Object> = b.crds().collect();
    let owned = &csv.value()["spec"]["customresourcedefinitions"]["owned"];
    let mut patterns = Patterns::new();
    for (i, ex) in list.iter().enumerate() {
        let Some(api_version) = ex["apiVersion"].as_str() else {
            continue;
        };
        let kind = str_of(&ex["kind"]);
        let (group, version) = split_api_version(api_version);
        let name = str_of(&ex["metadata"]["name"]);
        let label = if name.is_empty() {
            format!("example {i} ({kind} {api_version})")
        } else {
            format!("example {i} ({kind} {name}, {api_version})")
        };
        let found = crds.iter().enumerate().find(|(_, c)| {
            str_of(&c.value()["spec"]["group"]) == group
                && str_of(&c.value()["spec"]["names"]["kind"]) == kind
        });
        let Some((_, crd)) = found else {
            // Report only kinds the CSV owns as CRDs; other kinds are reported by the CSV rules
            // (not owned) or belong to an owned APIService.
            let owned_here = array(owned).iter().any(|o| {
                str_of(&o["kind"]) == kind
                    && str_of(&o["name"]).split_once('.').map(|(_, g)| g) == Some(group)
            });
            if owned_here {
                out.push(
                    Finding::new(
                        &EX001,
                        csv.name(),
                        format!(
                            "{label}: the CSV owns {kind} but no CRD in the bundle defines \
                             {kind} in group {group}"
                        ),
                    )
                    .at(at.clone()),
                );
            }
            continue;
        };
        let Some(ver) = crd_version(crd, version) else {
            out.push(
                Finding::new(
                    &EX001,
                    csv.name(),
                    format!("{label}: CRD {} has no version {version}", crd.name()),
                )
                .at(at.clone()),
            );
            continue;
        };
        if !ver.served {
            out.push(
                Finding::new(
                    &EX001,
                    csv.name(),
                    format!(
                        "{label}: version {version} of CRD {} is not served",
                        crd.name()
                    ),
                )
                .at(at.clone()),
            );
            continue;
        }
        let Some(schema) = ver.schema else { continue };
        let mode = Mode {
            prune: prunes(crd),
            status_subresource: ver.status_subresource,
        };
        for v in schema::validate(schema, ex, mode, &mut patterns) {
            let (rule, level) = match v.kind {
                Kind::Type => (&EX002, Level::Error),
                Kind::Required => (&EX003, Level::Error),
                Kind::Enum => (&EX004, Level::Error),
                Kind::Constraint => (&EX005, Level::Error),
                Kind::Suspicious => (&EX005, Level::Warning),
                Kind::Unknown => (&EX006, Level::Warning),
            };
            out.push(
                Finding::new(
                    rule,
                    csv.name(),
                    format!("{label}: {}: {}", v.path, v.message),
                )
                .with_level(level)
                .at(at.clone()),
            );
        }
    }
}

/// [`cel_rules`] on a thread whose stack holds the `cel` parser's recursion (validation runs
/// on rayon's workers, whose stacks are small).
fn cel_rules_on_parser_stack(b: &Bundle, out: &mut Vec<Finding>) {
    let found = std::thread::scope(|s| {
        let t = std::thread::Builder::new()
            .name("cel".into())
            .stack_size(cel::PARSER_STACK)
            .spawn_scoped(s, || {
                let mut found = Vec::new();
                cel_rules(b, &mut found);
                found
            });
        match t {
            Ok(t) => t.join().map_err(|_| "the CEL check panicked".to_owned()),
            Err(e) => Err(format!("cannot start the CEL parser's thread: {e}")),
        }
    });
    match found {
        Ok(found) => out.extend(found),
        Err(why) => {
            for crd in b.crds() {
                out.push(
                    Finding::new(
                        &EX007,
                        crd.name(),
                        format!("the CEL rules were not checked: {why}"),
                    )
                    .with_level(Level::Warning),
                );
            }
        }
    }
}

/// Parses every `x-kubernetes-validations[].rule` and `messageExpression` of the bundle's CRDs,
/// each distinct text once per process.
fn cel_rules(b: &Bundle, out: &mut Vec<Finding>) {
    for crd in b.crds() {
        let spec = &crd.value()["spec"];
        let mut reported: HashSet<String> = HashSet::new();
        for (i, v) in array(&spec["versions"]).iter().enumerate() {
            walk(
                crd,
                &v["schema"]["openAPIV3Schema"],
                &format!("/spec/versions/{i}/schema/openAPIV3Schema"),
                &mut Vec::new(),
                &mut reported,
                out,
            );
        }
        walk(
            crd,
            &spec["validation"]["openAPIV3Schema"],
            "/spec/validation/openAPIV3Schema",
            &mut Vec::new(),
            &mut reported,
            out,
        );
    }
}

/// One step of a JSON pointer, kept unformatted until a finding needs it.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn pointer(base: &str, steps: &[Step<'_>]) -> String {
    let mut p = base.to_owned();
    for s in steps {
        p.push('/');
        match s {
            Step::Key(k) => p.push_str(&escape_pointer_token(k)),
            Step::Index(i) => p.push_str(&i.to_string()),
        }
    }
    p
}

fn walk<'a>(
    crd: &Object,
    s: &'a Value,
    base: &str,
    steps: &mut Vec<Step<'a>>,
    reported: &mut HashSet<String>,
    out: &mut Vec<Finding>,
) {
    let Some(m) = s.as_object() else { return };
    if steps.len() > 256 {
        return;
    }
    if let Some(Value::Array(rules)) = m.get("x-kubernetes-validations") {
        for (i, v) in rules.iter().enumerate() {
            for field in ["rule", "messageExpression"] {
                let Some(text) = v[field].as_str() else {
                    continue;
                };
                // The same broken rule in several versions of one CRD is one finding.
                if let Some(err) = cel::check_cached(text)
                    && reported.insert(text.to_owned())
                {
                    let what = if field == "rule" {
                        "CEL rule"
                    } else {
                        "CEL messageExpression"
                    };
                    let p = format!(
                        "{}/x-kubernetes-validations/{i}/{field}",
                        pointer(base, steps)
                    );
                    out.push(
                        Finding::new(
                            &EX007,
                            crd.name(),
                            format!("{what} `{text}` does not parse: {err}"),
                        )
                        .at(crd.origin_of(&p)),
                    );
                }
            }
        }
    }
    for k in ["properties", "patternProperties", "definitions"] {
        if let Some(Value::Object(props)) = m.get(k) {
            for (name, sub) in props {
                steps.push(Step::Key(k));
                steps.push(Step::Key(name));
                walk(crd, sub, base, steps, reported, out);
                steps.truncate(steps.len() - 2);
            }
        }
    }
    for k in ["items", "additionalProperties", "not"] {
        if let Some(v @ Value::Object(_)) = m.get(k) {
            steps.push(Step::Key(k));
            walk(crd, v, base, steps, reported, out);
            steps.pop();
        }
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = m.get(k) {
            for (i, sub) in list.iter().enumerate() {
                steps.push(Step::Key(k));
                steps.push(Step::Index(i));
                walk(crd, sub, base, steps, reported, out);
                steps.truncate(steps.len() - 2);
            }
        }
    }
}

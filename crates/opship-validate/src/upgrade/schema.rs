//! The per-property comparison behind the upgrade rules: a CRD version's `openAPIV3Schema`
//! flattened into one node per location (`^.spec.foo`, `^.spec.list.items`,
//! `^.spec.x.allOf[0]`), and two nodes of one location compared field by field the way OLM v1's
//! CRD upgrade-safety preflight compares them (crdify's property validations under OLM's
//! configuration): each rule looks at its own keywords, and whatever differs beyond them is an
//! "unhandled" change.
//!
//! Schemas are read as the API server's Go types read them: keys those types do not have are
//! ignored, and a zero value (`""`, `false`, an empty list or map, `null`) is the same as an
//! absent key, except for the keywords the Go types hold by pointer (`maximum`, `default`,
//! `x-kubernetes-preserve-unknown-fields`, ...), where `0` or `false` is a value.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use opship_core::yaml::escape_pointer_token;
use serde_json::{Map, Value};

/// One schema node of a flattened version: the node and its JSON pointer in the CRD.
#[derive(Debug, Clone)]
pub struct Node<'a> {
    /// The schema object (or whatever the CRD holds there).
    pub schema: &'a Value,
    /// Where it sits in the CRD document.
    pub pointer: String,
}

/// A version's schema by location, as crdify's flattening names locations. When two nodes
/// map to one location (a property named `items` beside `items`), the later one in crdify's
/// walk order wins, as in crdify.
pub type Flat<'a> = BTreeMap<String, Node<'a>>;

/// Flattens a schema rooted at `pointer`.
pub fn flatten<'a>(schema: &'a Value, pointer: &str) -> Flat<'a> {
    let mut out = Flat::new();
    walk(schema, pointer.to_owned(), "^".to_owned(), &mut out);
    out
}

fn walk<'a>(s: &'a Value, pointer: String, path: String, out: &mut Flat<'a>) {
    let Some(m) = s.as_object() else { return };
    out.insert(
        path.clone(),
        Node {
            schema: s,
            pointer: pointer.clone(),
        },
    );
    let child = |key: &str| format!("{pointer}/{}", escape_pointer_token(key));
    match m.get("items") {
        Some(v @ Value::Object(_)) => walk(v, child("items"), format!("{path}.items"), out),
        Some(Value::Array(list)) => {
            for (i, v) in list.iter().enumerate() {
                walk(
                    v,
                    format!("{pointer}/items/{i}"),
                    format!("{path}.items[{i}]"),
                    out,
                );
            }
        }
        _ => {}
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = m.get(key) {
            for (i, v) in list.iter().enumerate() {
                walk(
                    v,
                    format!("{pointer}/{key}/{i}"),
                    format!("{path}.{key}[{i}]"),
                    out,
                );
            }
        }
    }
    if let Some(v) = m.get("not") {
        walk(v, child("not"), format!("{path}.not"), out);
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (name, v) in props {
            walk(
                v,
                format!("{pointer}/properties/{}", escape_pointer_token(name)),
                format!("{path}.{name}"),
                out,
            );
        }
    }
    if let Some(v) = m.get("additionalProperties") {
        walk(
            v,
            child("additionalProperties"),
            format!("{path}.additionalProperties"),
            out,
        );
    }
    for key in [
        "patternProperties",
        "additionalItems",
        "definitions",
        "dependencies",
    ] {
        match m.get(key) {
            Some(Value::Object(map)) if key != "additionalItems" => {
                for (name, v) in map {
                    walk(
                        v,
                        format!("{pointer}/{key}/{}", escape_pointer_token(name)),
                        format!("{path}.{key}[{name}]"),
                        out,
                    );
                }
            }
            Some(v) if key == "additionalItems" => {
                walk(v, child(key), format!("{path}.additionalItems"), out)
            }
            _ => {}
        }
    }
}

/// What a property comparison found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// `type` changed.
    Type,
    /// New names in `required`.
    Required,
    /// An enum added to a field that had none, or enum values removed.
    Enum,
    /// A default added, changed or removed.
    Default,
    /// `maximum` added or decreased.
    Maximum,
    /// `minimum` added or increased.
    Minimum,
    /// `maxLength` added or decreased.
    MaxLength,
    /// `minLength` added or increased.
    MinLength,
    /// `maxItems` added or decreased.
    MaxItems,
    /// `minItems` added or increased.
    MinItems,
    /// `maxProperties` added or decreased.
    MaxProperties,
    /// `minProperties` added or increased.
    MinProperties,
    /// A pattern added, changed or removed.
    Pattern,
    /// `nullable` switched.
    Nullable,
    /// Anything else that differs.
    Unhandled,
}

impl Check {
    /// crdify's name of the check.
    pub fn name(self) -> &'static str {
        match self {
            Check::Type => "type",
            Check::Required => "required",
            Check::Enum => "enum",
            Check::Default => "default",
            Check::Maximum => "maximum",
            Check::Minimum => "minimum",
            Check::MaxLength => "maxLength",
            Check::MinLength => "minLength",
            Check::MaxItems => "maxItems",
            Check::MinItems => "minItems",
            Check::MaxProperties => "maxProperties",
            Check::MinProperties => "minProperties",
            Check::Pattern => "pattern",
            Check::Nullable => "nullable",
            Check::Unhandled => "unhandled",
        }
    }
}

/// One incompatible difference at one location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Which check.
    pub check: Check,
    /// The old value, as text (`None`: absent).
    pub old: Option<String>,
    /// The new value.
    pub new: Option<String>,
    /// What changed, in one line.
    pub message: String,
    /// What identifies the change when the served-version check subtracts the issues the old
    /// CRD already had: equal for equal differences.
    pub identity: String,
}

/// The keywords a check of its own covers; the rest of a node is compared as a whole.
const HANDLED: &[&str] = &[
    "default",
    "enum",
    "maximum",
    "minimum",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "required",
    "type",
    "description",
    "pattern",
    "nullable",
    // Children are compared at their own locations.
    "properties",
    "items",
];

/// Compares the node of one location in the old and the new schema (`None`: the location is
/// gone, compared as an empty schema, as crdify does). Returns nothing when they are equal.
pub fn compare(old: &Value, new: Option<&Value>) -> Vec<Change> {
    let empty = Value::Object(Map::new());
    let new = new.unwrap_or(&empty);
    let mut out = Vec::new();
    let (ot, nt) = (string(old, "type"), string(new, "type"));
    if ot != nt {
        out.push(change(
            Check::Type,
            Some(quote(ot)),
            Some(quote(nt)),
            format!("type changed : {} -> {}", quote(ot), quote(nt)),
        ));
    }
    let old_required: BTreeSet<&str> = strings(old, "required").collect();
    let added: Vec<&str> = strings(new, "required")
        .filter(|r| !old_required.contains(r))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !added.is_empty() {
        out.push(change(
            Check::Required,
            None,
            Some(added.join(" ")),
            format!("new required fields: [{}]", added.join(" ")),
        ));
    }
    let old_enum = enum_values(old);
    let new_enum = enum_values(new);
    if old_enum.is_empty() && !new_enum.is_empty() {
        let list = list(&new_enum);
        out.push(change(
            Check::Enum,
            None,
            Some(list.clone()),
            format!("enum constraint added when there was none previously : {list}"),
        ));
    } else {
        let removed: BTreeSet<String> = old_enum.difference(&new_enum).cloned().collect();
        if !removed.is_empty() {
            // Values added at the same time are allowed (OLM sets crdify's enum addition
            // policy to Allow).
            out.push(change(
                Check::Enum,
                Some(list(&old_enum)),
                Some(list(&new_enum)),
                format!("allowed enum values removed : {}", list(&removed)),
            ));
        }
    }
    let (od, nd) = (raw_of(old, "default"), raw_of(new, "default"));
    match (&od, &nd) {
        (None, Some(n)) => out.push(change(
            Check::Default,
            None,
            Some(n.clone()),
            format!("default added when there was none previously : {n}"),
        )),
        (Some(o), None) => out.push(change(
            Check::Default,
            Some(o.clone()),
            None,
            format!("default value removed : {o}"),
        )),
        (Some(o), Some(n)) if o != n => out.push(change(
            Check::Default,
            Some(o.clone()),
            Some(n.clone()),
            format!("default value changed : {o} -> {n}"),
        )),
        _ => {}
    }
    for (key, check, upper) in [
        ("maximum", Check::Maximum, true),
        ("maxItems", Check::MaxItems, true),
        ("maxLength", Check::MaxLength, true),
        ("maxProperties", Check::MaxProperties, true),
        ("minimum", Check::Minimum, false),
        ("minItems", Check::MinItems, false),
        ("minLength", Check::MinLength, false),
        ("minProperties", Check::MinProperties, false),
    ] {
        let (o, n) = (number(old, key), number(new, key));
        let (what, tightened) = if upper {
            ("maximum", "decreased")
        } else {
            ("minimum", "increased")
        };
        match (o, n) {
            (None, Some(n)) => out.push(change(
                check,
                None,
                Some(num_text(n)),
                format!(
                    "{what} constraint added when there was none previously : {}",
                    num_text(n)
                ),
            )),
            (Some(o), Some(n)) if (upper && n < o) || (!upper && n > o) => out.push(change(
                check,
                Some(num_text(o)),
                Some(num_text(n)),
                format!("{what} {tightened} : {} -> {}", num_text(o), num_text(n)),
            )),
            _ => {}
        }
    }
    let (op, np) = (string(old, "pattern"), string(new, "pattern"));
    if op != np {
        let what = if op.is_empty() {
            "pattern added"
        } else if np.is_empty() {
            "pattern removed"
        } else {
            "pattern changed"
        };
        out.push(change(
            Check::Pattern,
            Some(quote(op)),
            Some(quote(np)),
            format!("{what} : {} -> {}", quote(op), quote(np)),
        ));
    }
    let (on, nn) = (flag(old, "nullable"), flag(new, "nullable"));
    if on != nn {
        let what = if nn {
            "nullable added"
        } else {
            "nullable removed"
        };
        out.push(change(
            Check::Nullable,
            Some(on.to_string()),
            Some(nn.to_string()),
            format!("{what} : {on} -> {nn}"),
        ));
    }
    let (or, nr) = (residual(old), residual(new));
    if or != nr {
        let mut keys: BTreeSet<&String> = or.keys().collect();
        keys.extend(nr.keys());
        let mut parts = Vec::new();
        for k in keys {
            let (a, b) = (or.get(k), nr.get(k));
            if a != b {
                let show = |v: Option<&Value>| v.map_or_else(|| "<absent>".to_owned(), raw);
                parts.push(format!("{k} {} -> {}", show(a), show(b)));
            }
        }
        let identity = format!(
            "{} -> {}",
            raw(&Value::Object(or.clone())),
            raw(&Value::Object(nr.clone()))
        );
        out.push(Change {
            check: Check::Unhandled,
            old: None,
            new: None,
            message: format!("unhandled changes found ({})", parts.join("; ")),
            identity,
        });
    }
    out
}

fn change(check: Check, old: Option<String>, new: Option<String>, message: String) -> Change {
    Change {
        check,
        old,
        new,
        identity: message.clone(),
        message,
    }
}

fn quote(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

fn list(values: &BTreeSet<String>) -> String {
    let v: Vec<&str> = values.iter().map(String::as_str).collect();
    format!("[{}]", v.join(" "))
}

fn string<'a>(s: &'a Value, key: &str) -> &'a str {
    s.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn number(s: &Value, key: &str) -> Option<f64> {
    s.get(key).and_then(Value::as_f64)
}

fn num_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn strings<'a>(s: &'a Value, key: &str) -> impl Iterator<Item = &'a str> {
    s.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn enum_values(s: &Value) -> BTreeSet<String> {
    s.get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(raw)
        .collect()
}

/// A raw JSON keyword (`default`, `example`) as its canonical text; `null` is absent.
fn raw_of(s: &Value, key: &str) -> Option<String> {
    s.get(key).filter(|v| !v.is_null()).map(raw)
}

/// Canonical JSON text: keys sorted, integral numbers written as integers (as Go writes a
/// value it read from YAML), so equal values give equal text.
pub fn raw(v: &Value) -> String {
    let mut out = String::new();
    write_raw(v, &mut out);
    out
}

fn write_raw(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            out.push('{');
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&quote(k));
                out.push(':');
                write_raw(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_raw(x, out);
            }
            out.push(']');
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if !n.is_i64() && !n.is_u64() && f.fract() == 0.0 && f.abs() < 9e15 => {
                let _ = write!(out, "{}", f as i64);
            }
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

/// The keywords of a node that no check covers, as the Go types hold them.
fn residual(s: &Value) -> Map<String, Value> {
    canon_without(s, HANDLED)
}

/// How the Go type holds a keyword.
enum Shape {
    /// A plain string: `""` is absent.
    Str,
    /// A plain bool: `false` is absent.
    Bool,
    /// A pointer to a number.
    Num,
    /// Raw JSON behind a pointer.
    Raw,
    /// A pointer to a bool or a string: any value is present.
    Ptr,
    /// A list of raw JSON values (`enum`) or strings: empty is absent.
    List,
    /// One schema.
    Schema,
    /// A list of schemas.
    Schemas,
    /// A map of schemas.
    SchemaMap,
    /// A schema or a list of schemas (`items`).
    SchemaOrArray,
    /// A schema or a bool (`additionalProperties`, `additionalItems`).
    SchemaOrBool,
    /// A map of schemas or string lists (`dependencies`).
    Dependencies,
    /// `externalDocs`.
    Docs,
    /// `x-kubernetes-validations`.
    Rules,
}

fn shape(key: &str) -> Option<Shape> {
    Some(match key {
        "id" | "$schema" | "$ref" | "description" | "type" | "format" | "title" | "pattern" => {
            Shape::Str
        }
        "exclusiveMaximum"
        | "exclusiveMinimum"
        | "uniqueItems"
        | "nullable"
        | "x-kubernetes-embedded-resource"
        | "x-kubernetes-int-or-string" => Shape::Bool,
        "maximum" | "minimum" | "multipleOf" | "maxLength" | "minLength" | "maxItems"
        | "minItems" | "maxProperties" | "minProperties" => Shape::Num,
        "default" | "example" => Shape::Raw,
        "x-kubernetes-preserve-unknown-fields"
        | "x-kubernetes-list-type"
        | "x-kubernetes-map-type" => Shape::Ptr,
        "enum" | "required" | "x-kubernetes-list-map-keys" => Shape::List,
        "not" => Shape::Schema,
        "allOf" | "anyOf" | "oneOf" => Shape::Schemas,
        "properties" | "patternProperties" | "definitions" => Shape::SchemaMap,
        "items" => Shape::SchemaOrArray,
        "additionalProperties" | "additionalItems" => Shape::SchemaOrBool,
        "dependencies" => Shape::Dependencies,
        "externalDocs" => Shape::Docs,
        "x-kubernetes-validations" => Shape::Rules,
        _ => return None,
    })
}

/// A schema node reduced to the keywords the Go type holds, zero values dropped, raw values
/// canonical: two nodes are semantically equal when their `canon` are equal.
fn canon(s: &Value) -> Map<String, Value> {
    canon_without(s, &[])
}

/// [`canon`] without the keywords `skip`.
fn canon_without(s: &Value, skip: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(m) = s.as_object() else {
        return out;
    };
    for (k, v) in m {
        if skip.contains(&k.as_str()) {
            continue;
        }
        let Some(shape) = shape(k) else { continue };
        if v.is_null() {
            continue;
        }
        let kept = match shape {
            Shape::Str => v.as_str().filter(|s| !s.is_empty()).map(|_| v.clone()),
            Shape::Bool => (v.as_bool() == Some(true)).then(|| v.clone()),
            Shape::Num => v.as_f64().map(|f| Value::String(num_text(f))),
            Shape::Raw => Some(Value::String(raw(v))),
            Shape::Ptr => Some(v.clone()),
            Shape::List => v
                .as_array()
                .filter(|a| !a.is_empty())
                .map(|a| Value::Array(a.iter().map(|x| Value::String(raw(x))).collect())),
            Shape::Schema => Some(Value::Object(canon(v))),
            Shape::Schemas => v
                .as_array()
                .filter(|a| !a.is_empty())
                .map(|a| Value::Array(a.iter().map(|x| Value::Object(canon(x))).collect())),
            Shape::SchemaMap => v.as_object().filter(|o| !o.is_empty()).map(|o| {
                Value::Object(
                    o.iter()
                        .map(|(k, x)| (k.clone(), Value::Object(canon(x))))
                        .collect(),
                )
            }),
            Shape::SchemaOrArray => match v {
                Value::Array(a) => Some(Value::Array(
                    a.iter().map(|x| Value::Object(canon(x))).collect(),
                )),
                other => Some(Value::Object(canon(other))),
            },
            Shape::SchemaOrBool => match v {
                Value::Bool(b) => Some(Value::Bool(*b)),
                other => Some(Value::Object(canon(other))),
            },
            Shape::Dependencies => v.as_object().filter(|o| !o.is_empty()).map(|o| {
                Value::Object(
                    o.iter()
                        .map(|(k, x)| {
                            let c = match x {
                                Value::Array(_) => x.clone(),
                                other => Value::Object(canon(other)),
                            };
                            (k.clone(), c)
                        })
                        .collect(),
                )
            }),
            Shape::Docs => Some(Value::Object(
                v.as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, x)| {
                        matches!(k.as_str(), "description" | "url")
                            && x.as_str().is_some_and(|s| !s.is_empty())
                    })
                    .map(|(k, x)| (k.clone(), x.clone()))
                    .collect(),
            )),
            Shape::Rules => v.as_array().filter(|a| !a.is_empty()).map(|a| {
                Value::Array(
                    a.iter()
                        .map(|r| {
                            Value::Object(
                                r.as_object()
                                    .into_iter()
                                    .flatten()
                                    .filter(|(k, x)| match k.as_str() {
                                        "rule" | "message" | "messageExpression" | "fieldPath" => {
                                            x.as_str().is_some_and(|s| !s.is_empty())
                                        }
                                        "reason" | "optionalOldSelf" => !x.is_null(),
                                        _ => false,
                                    })
                                    .map(|(k, x)| (k.clone(), x.clone()))
                                    .collect(),
                            )
                        })
                        .collect(),
                )
            }),
        };
        if let Some(kept) = kept {
            out.insert(k.clone(), kept);
        }
    }
    out
}

/// The kube-aware order of version names crdify pairs served versions in: names that are not
/// Kubernetes versions first (reverse alphabetical), then alphas, betas and GA versions, each
/// by major and minor number.
pub fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (major, tail) = rest.split_at(digits);
        if major.is_empty() {
            return None;
        }
        let major: u64 = major.parse().ok()?;
        if tail.is_empty() {
            return Some((2, major, 0));
        }
        let (kind, minor) = if let Some(m) = tail.strip_prefix("alpha") {
            (0, m)
        } else if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else {
            return None;
        };
        if minor.is_empty() || !minor.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        Some((kind, major, minor.parse().ok()?))
    }
    if a == b {
        return Ordering::Equal;
    }
    match (parse(a), parse(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.cmp(&y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kube_versions_order_as_crdify_pairs_them() {
        let mut v = vec![
            "v1", "v2beta1", "v1alpha1", "foo", "v1beta2", "v1beta1", "bar",
        ];
        v.sort_by(|a, b| version_order(a, b));
        assert_eq!(
            v,
            [
                "foo", "bar", "v1alpha1", "v1beta1", "v1beta2", "v2beta1", "v1"
            ]
        );
    }

    #[test]
    fn zero_values_equal_absent_keys_except_pointers() {
        let same = |a: Value, b: Value| compare(&a, Some(&b)).is_empty();
        assert!(same(
            json!({"type": "string", "format": "", "enum": [], "description": "a"}),
            json!({"type": "string", "nullable": false, "title": null})
        ));
        assert!(!same(
            json!({"type": "object"}),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false})
        ));
        assert!(same(
            json!({"default": 1.0}),
            json!({"default": 1, "properties": {"a": {}}})
        ));
    }

    #[test]
    fn flattening_names_locations_as_crdify() {
        let s = json!({"properties": {"spec": {"properties": {
            "list": {"items": {"type": "string"}},
            "m": {"additionalProperties": {"type": "string"}},
            "x": {"allOf": [{"minimum": 1}]}
        }}}});
        let f = flatten(&s, "/s");
        let keys: Vec<&str> = f.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "^",
                "^.spec",
                "^.spec.list",
                "^.spec.list.items",
                "^.spec.m",
                "^.spec.m.additionalProperties",
                "^.spec.x",
                "^.spec.x.allOf[0]"
            ]
        );
        assert_eq!(
            f["^.spec.list.items"].pointer,
            "/s/properties/spec/properties/list/items"
        );
    }
}

//! A validator for the structural-schema subset of OpenAPI v3 that Kubernetes applies to custom
//! resources: types, properties, required, additionalProperties, items, enum, pattern, numeric
//! and length bounds, a few formats, nullable and the `x-kubernetes-*` extensions. It follows
//! the API server's order: null values of non-nullable fields are dropped, defaults fill
//! missing fields, unknown fields are pruned (reported as warnings), the rest is validated.
//!
//! The schema is read in place, only along the paths an example uses, so a 5 MiB CRD costs
//! nothing for a two-field example; patterns are compiled on first use and cached by text.

use std::collections::HashMap;

use serde_json::Value;

/// What kind of violation a check found; the caller maps it to a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Wrong JSON type.
    Type,
    /// A required field is missing.
    Required,
    /// Not one of the enum values.
    Enum,
    /// A bound, pattern, length or format is violated.
    Constraint,
    /// A constraint the server accepts but that cannot be what the author meant (an int32
    /// field holding a 64-bit number).
    Suspicious,
    /// A field the schema does not know: the API server drops it.
    Unknown,
}

/// One violation: where in the example (`spec.size`) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The kind of problem.
    pub kind: Kind,
    /// JSONPath-like location inside the example.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Nesting limit: deeper schemas or values are not looked into, so a hostile CRD cannot
/// exhaust the stack.
const MAX_DEPTH: usize = 64;

/// Up to this many unknown fields of one object are reported one by one; more make one finding.
const MAX_UNKNOWN_LISTED: usize = 3;

/// Compiled `pattern`s by their text; `None` when Rust's regex cannot compile one (the CRD
/// rules report broken schemas). Shared by all examples of a bundle, so each pattern is
/// compiled once, and only when a value is checked against it.
pub type Patterns = HashMap<String, Option<regex::Regex>>;

/// Read access to one schema node (a JSON object; anything else accepts every value).
#[derive(Clone, Copy)]
struct Node<'s>(&'s Value);

impl<'s> Node<'s> {
    fn get(self, k: &str) -> Option<&'s Value> {
        self.0.get(k)
    }
    fn flag(self, k: &str) -> bool {
        self.get(k).and_then(Value::as_bool).unwrap_or(false)
    }
    fn num(self, k: &str) -> Option<f64> {
        self.get(k).and_then(Value::as_f64)
    }
    fn uint(self, k: &str) -> Option<u64> {
        self.get(k).and_then(Value::as_u64)
    }
    fn ty(self) -> Option<&'s str> {
        self.get("type")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
    }
    fn property(self, name: &str) -> Option<Node<'s>> {
        self.get("properties")?.get(name).map(Node)
    }
}

/// How to validate.
#[derive(Debug, Clone, Copy)]
pub struct Mode {
    /// Whether unknown fields are pruned (false for v1beta1 CRDs that keep
    /// `preserveUnknownFields`, the v1beta1 default).
    pub prune: bool,
    /// Whether the CRD has a status subresource, so the server ignores `status` on create.
    pub status_subresource: bool,
}

/// Validates an example (a whole custom resource) against the `openAPIV3Schema` of its CRD
/// version.
pub fn validate(
    schema: &Value,
    value: &Value,
    mode: Mode,
    patterns: &mut Patterns,
) -> Vec<Violation> {
    let mut v = Validator {
        mode,
        patterns,
        out: Vec::new(),
    };
    v.check(Node(schema), value, "", 0, true);
    v.out
}

struct Validator<'p> {
    mode: Mode,
    patterns: &'p mut Patterns,
    out: Vec<Violation>,
}

fn join(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$');
    match (path.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{}]", Value::String(key.to_owned())),
    }
}

fn describe(v: &Value) -> String {
    let kind = match v {
        Value::Null => return "null".into(),
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => return "an array".into(),
        Value::Object(_) => return "an object".into(),
    };
    let mut text = v.to_string();
    if text.len() > 60 {
        let mut cut = 57;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    format!("{kind} {text}")
}

/// Whether a number is integral the way Kubernetes' JSON decoder sees it (`3.0` becomes 3).
fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
        }
        _ => false,
    }
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// RFC 3339 date-time, leniently (the server's strfmt accepts several layouts): a date, then
/// optionally `T` or a space and a time with optional fraction and zone.
fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if b.len() < 10
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
    {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    if !matches!(b[10], b'T' | b't' | b' ')
        || !digits(11..13)
        || b.get(13) != Some(&b':')
        || !digits(14..16)
    {
        return false;
    }
    let mut i = 16;
    if b.get(i) == Some(&b':') {
        if !digits(i + 1..i + 3) {
            return false;
        }
        i += 3;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == start {
                return false;
            }
        }
    }
    match b.get(i) {
        None => true,
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let rest = &s[i + 1..];
            let rb = rest.as_bytes();
            (rb.len() == 5
                && rb[2] == b':'
                && rb
                    .iter()
                    .enumerate()
                    .all(|(k, c)| k == 2 || c.is_ascii_digit()))
                || (rb.len() == 4 && rb.iter().all(u8::is_ascii_digit))
                || (rb.len() == 2 && rb.iter().all(u8::is_ascii_digit))
        }
        _ => false,
    }
}

impl Validator<'_> {
    fn push(&mut self, kind: Kind, path: &str, message: String) {
        self.out.push(Violation {
            kind,
            path: if path.is_empty() {
                "(root)".into()
            } else {
                path.to_owned()
            },
            message,
        });
    }

    fn check(&mut self, n: Node<'_>, v: &Value, path: &str, depth: usize, root: bool) {
        if depth > MAX_DEPTH || v.is_null() || !n.0.is_object() {
            // Nulls of non-nullable fields are dropped by the server before validation; the
            // parent treats them as absent.
            return;
        }
        if n.flag("x-kubernetes-int-or-string") {
            if !(v.is_string() || is_integer(v)) {
                self.push(
                    Kind::Type,
                    path,
                    format!("expected an integer or a string, found {}", describe(v)),
                );
                return;
            }
        } else if let Some(ty) = n.ty() {
            let ok = match ty {
                "object" => v.is_object(),
                "array" => v.is_array(),
                "string" => v.is_string(),
                "integer" => is_integer(v),
                "number" => v.is_number(),
                "boolean" => v.is_boolean(),
                _ => true,
            };
            if !ok {
                self.push(
                    Kind::Type,
                    path,
                    format!("expected {ty}, found {}", describe(v)),
                );
                return;
            }
        }
        if let Some(Value::Array(values)) = n.get("enum")
            && !values.iter().any(|e| json_eq(e, v))
        {
            let list: Vec<String> = values.iter().take(12).map(Value::to_string).collect();
            self.push(
                Kind::Enum,
                path,
                format!(
                    "{} is not one of [{}{}]",
                    describe(v),
                    list.join(", "),
                    if values.len() > 12 { ", ..." } else { "" }
                ),
            );
        }
        match v {
            Value::String(s) => self.string(n, s, path),
            Value::Number(_) => self.number(n, v, path),
            Value::Array(a) => {
                let len = a.len() as u64;
                if let Some(min) = n.uint("minItems")
                    && len < min
                {
                    self.push(
                        Kind::Constraint,
                        path,
                        format!("has {len} items, fewer than minItems {min}"),
                    );
                }
                if let Some(max) = n.uint("maxItems")
                    && len > max
                {
                    self.push(
                        Kind::Constraint,
                        path,
                        format!("has {len} items, more than maxItems {max}"),
                    );
                }
                // The tuple form of `items` is not structural; it is not checked.
                if let Some(items @ Value::Object(_)) = n.get("items") {
                    for (i, item) in a.iter().enumerate() {
                        self.check(Node(items), item, &format!("{path}[{i}]"), depth + 1, false);
                    }
                }
            }
            Value::Object(m) => self.object(n, m, path, depth, root),
            _ => {}
        }
    }

    fn string(&mut self, n: Node<'_>, s: &str, path: &str) {
        if let Some(p) = n.get("pattern").and_then(Value::as_str) {
            let re = self
                .patterns
                .entry(p.to_owned())
                .or_insert_with(|| regex::RegexBuilder::new(p).size_limit(1 << 22).build().ok());
            if let Some(re) = re
                && !re.is_match(s)
            {
                self.push(
                    Kind::Constraint,
                    path,
                    format!(
                        "{} does not match pattern `{p}`",
                        describe(&Value::String(s.to_owned()))
                    ),
                );
            }
        }
        let len = s.chars().count() as u64;
        if let Some(min) = n.uint("minLength")
            && len < min
        {
            self.push(
                Kind::Constraint,
                path,
                format!("is {len} characters long, shorter than minLength {min}"),
            );
        }
        if let Some(max) = n.uint("maxLength")
            && len > max
        {
            self.push(
                Kind::Constraint,
                path,
                format!("is {len} characters long, longer than maxLength {max}"),
            );
        }
        if n.get("format").and_then(Value::as_str) == Some("date-time")
            && !s.is_empty()
            && !is_date_time(s)
        {
            self.push(
                Kind::Constraint,
                path,
                format!("`{s}` is not an RFC 3339 date-time"),
            );
        }
    }

    fn number(&mut self, n: Node<'_>, v: &Value, path: &str) {
        let Some(x) = v.as_f64() else { return };
        let exclusive_min = n.flag("exclusiveMinimum");
        let exclusive_max = n.flag("exclusiveMaximum");
        if let Some(min) = n.num("minimum")
            && (x < min || (exclusive_min && x == min))
        {
            let op = if exclusive_min { ">" } else { ">=" };
            self.push(
                Kind::Constraint,
                path,
                format!(
                    "{v} is not {op} {}",
                    n.get("minimum").unwrap_or(&Value::Null)
                ),
            );
        }
        if let Some(max) = n.num("maximum")
            && (x > max || (exclusive_max && x == max))
        {
            let op = if exclusive_max { "<" } else { "<=" };
            self.push(
                Kind::Constraint,
                path,
                format!(
                    "{v} is not {op} {}",
                    n.get("maximum").unwrap_or(&Value::Null)
                ),
            );
        }
        if let Some(m) = n.num("multipleOf").filter(|m| *m > 0.0) {
            let q = x / m;
            if (q - q.round()).abs() > 1e-9 {
                self.push(
                    Kind::Constraint,
                    path,
                    format!(
                        "{v} is not a multiple of {}",
                        n.get("multipleOf").unwrap_or(&Value::Null)
                    ),
                );
            }
        }
        let range = match n.get("format").and_then(Value::as_str) {
            Some("int32") => Some((i32::MIN as f64, i32::MAX as f64, "int32")),
            Some("int64") => Some((i64::MIN as f64, i64::MAX as f64, "int64")),
            _ => None,
        };
        if let Some((lo, hi, name)) = range
            && (x < lo || x > hi)
        {
            self.push(
                Kind::Suspicious,
                path,
                format!("{v} does not fit the field's format {name}"),
            );
        }
    }

    fn object(
        &mut self,
        n: Node<'_>,
        m: &serde_json::Map<String, Value>,
        path: &str,
        depth: usize,
        root: bool,
    ) {
        let present = |k: &str, child: Option<Node<'_>>| match m.get(k) {
            None => false,
            Some(Value::Null) => child.is_some_and(|c| c.flag("nullable")),
            Some(_) => true,
        };
        for req in n.get("required").map(array).unwrap_or_default() {
            let Some(req) = req.as_str() else { continue };
            if root && matches!(req, "apiVersion" | "kind" | "metadata") {
                continue;
            }
            let child = n.property(req);
            let defaulted = child.is_some_and(|c| c.get("default").is_some());
            if !(present(req, child) || defaulted) {
                self.push(
                    Kind::Required,
                    &join(path, req),
                    "required field is missing".to_owned(),
                );
            }
        }
        let count = m.len() as u64;
        if let Some(min) = n.uint("minProperties")
            && count < min
        {
            self.push(
                Kind::Constraint,
                path,
                format!("has {count} fields, fewer than minProperties {min}"),
            );
        }
        if let Some(max) = n.uint("maxProperties")
            && count > max
        {
            self.push(
                Kind::Constraint,
                path,
                format!("has {count} fields, more than maxProperties {max}"),
            );
        }
        let embedded = n.flag("x-kubernetes-embedded-resource");
        let preserve = n.flag("x-kubernetes-preserve-unknown-fields");
        let mut unknown: Vec<&str> = Vec::new();
        for (k, v) in m {
            if (root || embedded) && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            if root && k == "status" && self.mode.status_subresource {
                continue;
            }
            if let Some(child) = n.property(k) {
                self.check(child, v, &join(path, k), depth + 1, false);
                continue;
            }
            match n.get("additionalProperties") {
                Some(s @ Value::Object(_)) => {
                    self.check(Node(s), v, &join(path, k), depth + 1, false)
                }
                Some(Value::Bool(true)) => {}
                _ => {
                    if self.mode.prune && !preserve {
                        unknown.push(k);
                    }
                }
            }
        }
        // Many unknown fields in one object (a schema that declares none) make one finding.
        if unknown.len() > MAX_UNKNOWN_LISTED {
            self.push(
                Kind::Unknown,
                path,
                format!(
                    "{} unknown fields ({}, ...); the API server drops them",
                    unknown.len(),
                    unknown[..MAX_UNKNOWN_LISTED].join(", ")
                ),
            );
        } else {
            for k in unknown {
                self.push(
                    Kind::Unknown,
                    &join(path, k),
                    "unknown field; the API server drops it".to_owned(),
                );
            }
        }
    }
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(schema: Value, v: Value) -> Vec<(Kind, String)> {
        validate(
            &schema,
            &v,
            Mode {
                prune: true,
                status_subresource: true,
            },
            &mut Patterns::new(),
        )
        .into_iter()
        .map(|x| (x.kind, x.path))
        .collect()
    }

    #[test]
    fn types_required_enum_unknown() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "required": ["size", "mode", "def"],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "format": "int32"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "def": {"type": "string", "default": "x"},
            "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3},
            "port": {"x-kubernetes-int-or-string": true},
            "list": {"type": "array", "items": {"type": "integer"}, "maxItems": 1},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "when": {"type": "string", "format": "date-time"},
            "opt": {"type": "string", "nullable": true}
        }}}});
        let got = run(
            schema.clone(),
            json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
                "status": {"anything": 1},
                "spec": {"size": "3", "name": "Abcd", "port": "http", "list": [1, "2"],
                    "free": {"x": 1}, "labels": {"a": 1}, "extra": true, "when": "2024-01-01T00:00:00Z",
                    "opt": null}}),
        );
        assert_eq!(
            got,
            vec![
                (Kind::Required, "spec.mode".into()),
                (Kind::Type, "spec.size".into()),
                (Kind::Constraint, "spec.name".into()),
                (Kind::Constraint, "spec.name".into()),
                (Kind::Constraint, "spec.list".into()),
                (Kind::Type, "spec.list[1]".into()),
                (Kind::Type, "spec.labels.a".into()),
                (Kind::Unknown, "spec.extra".into()),
            ]
        );
        let got = run(
            schema,
            json!({"spec": {"size": 0, "mode": "c", "def": null, "port": 1.0, "when": "yesterday"}}),
        );
        assert_eq!(
            got,
            vec![
                (Kind::Constraint, "spec.size".into()),
                (Kind::Enum, "spec.mode".into()),
                (Kind::Constraint, "spec.when".into()),
            ]
        );
    }

    #[test]
    fn date_times() {
        for ok in [
            "2024-01-01",
            "2024-01-01T10:00:00Z",
            "2024-01-01 10:00:00.123+02:00",
            "2024-01-01T10:00Z",
        ] {
            assert!(is_date_time(ok), "{ok}");
        }
        for bad in [
            "2024-1-1",
            "yesterday",
            "2024-01-01T10",
            "2024-01-01T10:00:00X",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }

    #[test]
    fn hostile_schemas_do_not_panic() {
        let mut s = json!({"type": "object"});
        for _ in 0..200 {
            s = json!({"type": "object", "properties": {"a": s}});
        }
        let mut v = json!(1);
        for _ in 0..200 {
            v = json!({"a": v});
        }
        let _ = run(s, v);
        let _ = run(
            json!({"pattern": "(", "minimum": "x", "items": [1]}),
            json!("a"),
        );
        let _ = run(json!([1]), json!({}));
    }
}

//! One pass over an `openAPIV3Schema`: the structural-schema rules of
//! `k8s.io/apiextensions-apiserver/pkg/apiserver/schema` (ValidateStructural) and the keyword,
//! list-type and metadata checks of the apiextensions validation, which operator-framework/api
//! drops. Every node is visited once, by reference (nothing is cloned), with the recursion depth
//! capped; field paths are only turned into strings when something is reported.

use serde_json::{Map, Value};

use super::util::{Seg, show};
use super::{
    CRD021, CRD022, CRD023, CRD024, CRD025, CRD026, CRD027, E, Rep, present, str_of, strings,
};

/// Schema nodes nested deeper than this are not looked at (the YAML reader already stops at
/// 512 levels of YAML nesting, and every schema level takes at least two).
const MAX_DEPTH: usize = 300;

const OPENAPI_TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];

/// JSONSchemaProps fields not allowed at the root when the status subresource is enabled.
const NOT_AT_STATUS_ROOT: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "default",
    "enum",
    "maxProperties",
    "minProperties",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "nullable",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Lvl {
    Root,
    Item,
    Field,
}

/// What the position of a node forbids.
#[derive(Clone, Copy, Default)]
struct Ctx {
    /// Defaults are forbidden here, for this reason.
    no_defaults: Option<&'static str>,
    /// Inside the schema of an object's metadata, kind or apiVersion.
    inside_meta: bool,
}

struct Walk<'o, 'w, 'r> {
    rep: &'r mut Rep<'o, 'w>,
    path: Vec<Seg<'o>>,
    has_default: bool,
    depth: usize,
}

/// Checks one `openAPIV3Schema` found at `base`; returns whether any node has a `default`.
pub(crate) fn walk<'o>(
    rep: &mut Rep<'o, '_>,
    base: &[Seg<'o>],
    schema: &'o Value,
    status_enabled: bool,
) -> bool {
    let mut w = Walk {
        rep,
        path: base.to_vec(),
        has_default: false,
        depth: 0,
    };
    w.root(schema, status_enabled);
    w.has_default
}

fn truthy(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// The keys of one schema node that the checks look at, gathered in one pass over the mapping
/// (one walk instead of dozens of hash lookups per node).
#[derive(Default)]
struct N<'o> {
    ty: Option<&'o Value>,
    items: Option<&'o Value>,
    properties: Option<&'o Value>,
    additional_properties: Option<&'o Value>,
    all_of: Option<&'o Value>,
    any_of: Option<&'o Value>,
    one_of: Option<&'o Value>,
    not: Option<&'o Value>,
    default: Option<&'o Value>,
    nullable: Option<&'o Value>,
    int_or_string: Option<&'o Value>,
    preserve: Option<&'o Value>,
    embedded: Option<&'o Value>,
    list_type: Option<&'o Value>,
    list_map_keys: Option<&'o Value>,
    map_type: Option<&'o Value>,
    validations: Option<&'o Value>,
    unique_items: Option<&'o Value>,
    title: Option<&'o Value>,
    description: Option<&'o Value>,
    external_docs: Option<&'o Value>,
    required: Option<&'o Value>,
    /// id, $ref, additionalItems, patternProperties, definitions, dependencies.
    unsupported: [Option<&'o Value>; 6],
}

const UNSUPPORTED: [(&str, &str); 6] = [
    ("id", "id is not supported"),
    ("$ref", "$ref is not supported"),
    ("additionalItems", "additionalItems is not supported"),
    ("patternProperties", "patternProperties is not supported"),
    ("definitions", "definitions is not supported"),
    ("dependencies", "dependencies is not supported"),
];

impl<'o> N<'o> {
    fn of(m: &'o Map<String, Value>) -> Self {
        let mut n = N::default();
        for (k, v) in m {
            let slot = match k.as_str() {
                "type" => &mut n.ty,
                "items" => &mut n.items,
                "properties" => &mut n.properties,
                "additionalProperties" => &mut n.additional_properties,
                "allOf" => &mut n.all_of,
                "anyOf" => &mut n.any_of,
                "oneOf" => &mut n.one_of,
                "not" => &mut n.not,
                "default" => &mut n.default,
                "nullable" => &mut n.nullable,
                "x-kubernetes-int-or-string" => &mut n.int_or_string,
                "x-kubernetes-preserve-unknown-fields" => &mut n.preserve,
                "x-kubernetes-embedded-resource" => &mut n.embedded,
                "x-kubernetes-list-type" => &mut n.list_type,
                "x-kubernetes-list-map-keys" => &mut n.list_map_keys,
                "x-kubernetes-map-type" => &mut n.map_type,
                "x-kubernetes-validations" => &mut n.validations,
                "uniqueItems" => &mut n.unique_items,
                "title" => &mut n.title,
                "description" => &mut n.description,
                "externalDocs" => &mut n.external_docs,
                "required" => &mut n.required,
                "id" => &mut n.unsupported[0],
                "$ref" => &mut n.unsupported[1],
                "additionalItems" => &mut n.unsupported[2],
                "patternProperties" => &mut n.unsupported[3],
                "definitions" => &mut n.unsupported[4],
                "dependencies" => &mut n.unsupported[5],
                _ => continue,
            };
            *slot = Some(v);
        }
        n
    }

    fn ty(&self) -> &'o str {
        self.ty.and_then(Value::as_str).unwrap_or_default()
    }

    fn props(&self) -> Option<&'o Map<String, Value>> {
        self.properties.and_then(Value::as_object)
    }

    fn items_obj(&self) -> Option<&'o Map<String, Value>> {
        self.items.and_then(Value::as_object)
    }
}

fn flag(v: Option<&Value>) -> bool {
    v.and_then(Value::as_bool).unwrap_or(false)
}

fn set(v: Option<&Value>) -> bool {
    v.is_some_and(|v| !v.is_null())
}

fn non_empty_str(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
}

fn non_empty_list(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array).is_some_and(|a| !a.is_empty())
}

fn type_of(m: &Map<String, Value>) -> &str {
    m.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn is_type_only(v: &Value, ty: &str) -> bool {
    v.as_object()
        .is_some_and(|m| m.len() == 1 && m.get("type").and_then(Value::as_str) == Some(ty))
}

/// `anyOf: [{type: integer}, {type: string}]`, the int-or-string pattern.
/// `anyOf: [{type: integer}, {type: string}]`, the int-or-string pattern.
fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    any_of.and_then(Value::as_array).is_some_and(|a| {
        a.len() == 2 && is_type_only(&a[0], "integer") && is_type_only(&a[1], "string")
    })
}

impl<'o> Walk<'o, '_, '_> {
    fn at(&mut self, rule: &'static super::Rule, tail: &[Seg<'o>], e: E) {
        let n = self.path.len();
        self.path.extend_from_slice(tail);
        self.rep.report(rule, &self.path, e);
        self.path.truncate(n);
    }

    fn root(&mut self, s: &'o Value, status_enabled: bool) {
        if let Some(m) = s.as_object() {
            if truthy(m, "nullable") {
                self.at(
                    &CRD023,
                    &[Seg::F("nullable")],
                    E::Forbidden("nullable cannot be true at the root".into()),
                );
            }
            if status_enabled {
                if let Some(t) = m.get("type").filter(|t| !is_zero(t))
                    && t.as_str() != Some("object")
                {
                    self.at(
                        &CRD023,
                        &[Seg::F("type")],
                        E::Invalid(
                            Some(show(t)),
                            "only \"object\" is allowed as the type at the root of the schema if \
                             the status subresource is enabled"
                                .into(),
                        ),
                    );
                }
                if let Some(k) = m
                    .iter()
                    .find(|(k, v)| NOT_AT_STATUS_ROOT.contains(&k.as_str()) && !is_zero(v))
                    .map(|(k, _)| k)
                {
                    self.at(
                        &CRD023,
                        &[Seg::F(k)],
                        E::Forbidden(
                            "only description, type, format, title, maximum, exclusiveMaximum, \
                             minimum, exclusiveMinimum, maxLength, minLength, pattern, maxItems, \
                             minItems, uniqueItems, multipleOf, required, items, properties, \
                             externalDocs, example, x-kubernetes-preserve-unknown-fields and \
                             x-kubernetes-validations are allowed at the root of the schema if the \
                             status subresource is enabled"
                                .into(),
                        ),
                    );
                }
            }
        }
        self.node(s, Lvl::Root, Ctx::default());
    }

    /// Checks shared by structural and junctor nodes (the OpenAPI subset Kubernetes accepts).
    fn keywords(&mut self, n: &N<'o>, ctx: Ctx) {
        if n.default.is_some() {
            self.has_default = true;
            if let Some(reason) = ctx.no_defaults {
                self.at(
                    &CRD023,
                    &[Seg::F("default")],
                    E::Forbidden(format!("must not be set {reason}")),
                );
            }
        }
        match n.ty {
            None | Some(Value::Null) => {}
            Some(Value::String(t)) if t.is_empty() || OPENAPI_TYPES.contains(&t.as_str()) => {}
            Some(Value::String(t)) if t == "null" => self.at(
                &CRD026,
                &[Seg::F("type")],
                E::Forbidden("type cannot be set to null, use nullable as an alternative".into()),
            ),
            Some(Value::String(t)) => self.at(
                &CRD021,
                &[Seg::F("type")],
                E::NotSupported(t.clone(), OPENAPI_TYPES),
            ),
            Some(other) => self.at(
                &CRD021,
                &[Seg::F("type")],
                E::Invalid(Some(show(other)), "must be a string".into()),
            ),
        }
        for (i, (key, what)) in UNSUPPORTED.iter().enumerate() {
            let on = match n.unsupported[i] {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) => !s.is_empty(),
                Some(Value::Object(o)) => *key == "additionalItems" || !o.is_empty(),
                Some(_) => true,
            };
            if on {
                self.at(&CRD026, &[Seg::F(key)], E::Forbidden((*what).into()));
            }
        }
        if flag(n.unique_items) {
            self.at(
                &CRD026,
                &[Seg::F("uniqueItems")],
                E::Forbidden(
                    "uniqueItems cannot be set to true since the runtime complexity becomes \
                     quadratic"
                        .into(),
                ),
            );
        }
        if n.items.is_some_and(Value::is_array) {
            self.at(
                &CRD026,
                &[Seg::F("items")],
                E::Forbidden("items must be a schema object and not an array".into()),
            );
        }
    }

    fn not_a_schema(&mut self, s: &Value) {
        self.at(
            &CRD026,
            &[],
            E::Invalid(Some(show(s)), "must be a schema (a mapping)".into()),
        );
    }

    /// A node of the structural part: properties, items, additionalProperties.
    fn node(&mut self, s: &'o Value, lvl: Lvl, ctx: Ctx) {
        let Some(m) = s.as_object() else {
            self.not_a_schema(s);
            return;
        };
        if self.depth >= MAX_DEPTH {
            return;
        }
        self.depth += 1;
        let n = N::of(m);
        self.keywords(&n, ctx);
        let ty = n.ty();
        let ios = flag(n.int_or_string);
        let pres = flag(n.preserve);
        let emb = flag(n.embedded);
        let props = n.props();
        let ap = n.additional_properties.filter(|v| !v.is_null());

        // type
        if emb && ty != "object" {
            let d = "must be object if x-kubernetes-embedded-resource is true".to_owned();
            let e = match n.ty {
                Some(t) if !ty.is_empty() => E::Invalid(Some(show(t)), d),
                _ => E::Required(d),
            };
            self.at(&CRD024, &[Seg::F("type")], e);
        } else if ty.is_empty() && !ios && !pres {
            let d = match lvl {
                Lvl::Root => "must not be empty at the root",
                Lvl::Item => "must not be empty for specified array items",
                Lvl::Field => "must not be empty for specified object fields",
            };
            self.at(&CRD021, &[Seg::F("type")], E::Required(d.into()));
        }
        if lvl == Lvl::Root && !ty.is_empty() && ty != "object" {
            self.at(
                &CRD021,
                &[Seg::F("type")],
                E::Invalid(Some(quote_str(ty)), "must be object at the root".into()),
            );
        }
        if ty == "array" && !set(n.items) {
            self.at(
                &CRD021,
                &[Seg::F("items")],
                E::Required("must be specified".into()),
            );
        }

        // extensions
        if n.preserve == Some(&Value::Bool(false)) {
            self.at(
                &CRD024,
                &[Seg::F("x-kubernetes-preserve-unknown-fields")],
                E::Invalid(Some("false".into()), "must be true or undefined".into()),
            );
        }
        if ios && pres {
            self.at(
                &CRD024,
                &[Seg::F("x-kubernetes-preserve-unknown-fields")],
                E::Invalid(
                    Some("true".into()),
                    "must be false if x-kubernetes-int-or-string is true".into(),
                ),
            );
        }
        if ios && emb {
            self.at(
                &CRD024,
                &[Seg::F("x-kubernetes-embedded-resource")],
                E::Invalid(
                    Some("true".into()),
                    "must be false if x-kubernetes-int-or-string is true".into(),
                ),
            );
        }
        if emb && !pres && props.is_none_or(Map::is_empty) {
            self.at(
                &CRD024,
                &[Seg::F("properties")],
                E::Required(
                    "must not be empty if x-kubernetes-embedded-resource is true without \
                     x-kubernetes-preserve-unknown-fields"
                        .into(),
                ),
            );
        }
        if emb && ap.is_some() {
            self.at(
                &CRD024,
                &[Seg::F("additionalProperties")],
                E::Forbidden("must not be used if x-kubernetes-embedded-resource is set".into()),
            );
        }
        if emb && ctx.inside_meta {
            self.at(
                &CRD023,
                &[Seg::F("x-kubernetes-embedded-resource")],
                E::Forbidden("must not be used inside of resource meta".into()),
            );
        }
        if set(n.list_type) || set(n.list_map_keys) || set(n.map_type) {
            self.list_types(&n, ty);
        }

        // additionalProperties
        if let Some(ap) = ap {
            let schema_or_false = ap.is_object() || *ap == Value::Bool(false);
            if schema_or_false && props.is_some_and(|p| !p.is_empty()) {
                self.at(
                    &CRD025,
                    &[Seg::F("additionalProperties")],
                    E::Forbidden("additionalProperties and properties are mutual exclusive".into()),
                );
            }
            if lvl == Lvl::Root {
                self.at(
                    &CRD023,
                    &[Seg::F("additionalProperties")],
                    E::Forbidden("must not be used at the root".into()),
                );
            }
            if ap.is_object() {
                let mut c = ctx;
                if ctx.inside_meta {
                    c.no_defaults = Some("inside additionalProperties applying to object metadata");
                }
                self.path.push(Seg::F("additionalProperties"));
                self.node(ap, Lvl::Field, c);
                self.path.pop();
            } else if !ap.is_boolean() {
                self.path.push(Seg::F("additionalProperties"));
                self.not_a_schema(ap);
                self.path.pop();
            }
        }

        // properties
        match n.properties {
            Some(Value::Object(p)) => {
                for (k, v) in p {
                    let mut c = ctx;
                    if (lvl == Lvl::Root || emb)
                        && matches!(k.as_str(), "metadata" | "kind" | "apiVersion")
                    {
                        c.inside_meta = true;
                        if lvl == Lvl::Root {
                            c.no_defaults = Some(match k.as_str() {
                                "metadata" => "in top-level metadata",
                                "kind" => "in top-level kind",
                                _ => "in top-level apiVersion",
                            });
                        }
                    }
                    self.path.extend([Seg::F("properties"), Seg::K(k)]);
                    self.node(v, Lvl::Field, c);
                    self.path.truncate(self.path.len() - 2);
                }
            }
            None | Some(Value::Null) => {}
            Some(other) => {
                self.path.push(Seg::F("properties"));
                self.not_a_schema(other);
                self.path.pop();
            }
        }
        if let Some(items) = n.items.filter(|i| i.is_object()) {
            self.path.push(Seg::F("items"));
            self.node(items, Lvl::Item, ctx);
            self.path.pop();
        }

        // value validation: allOf, anyOf, oneOf, not
        if n.all_of.is_some() || n.any_of.is_some() || n.one_of.is_some() || n.not.is_some() {
            let skip_any_of = is_int_or_string_any_of(n.any_of);
            let skip_first_all_of = n
                .all_of
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_object)
                .is_some_and(|f| is_int_or_string_any_of(f.get("anyOf")));
            let base = self.path.len();
            self.junctors(&n, Some(m), base, true, skip_any_of, skip_first_all_of, ctx);
        }

        // metadata, kind and apiVersion at the root and in embedded resources
        let check_meta = lvl == Lvl::Root || emb;
        if let Some(p) = props
            && (check_meta || lvl == Lvl::Root)
        {
            if check_meta {
                for k in ["kind", "apiVersion"] {
                    if let Some(t) = p.get(k).and_then(Value::as_object)
                        && type_of(t) != "string"
                    {
                        self.at(
                            &CRD023,
                            &[Seg::F("properties"), Seg::K(k), Seg::F("type")],
                            E::Invalid(Some(quote_str(type_of(t))), "must be string".into()),
                        );
                    }
                }
            }
            if let Some(meta) = p.get("metadata").and_then(Value::as_object) {
                if check_meta && type_of(meta) != "object" {
                    self.at(
                        &CRD023,
                        &[Seg::F("properties"), Seg::K("metadata"), Seg::F("type")],
                        E::Invalid(Some(quote_str(type_of(meta))), "must be object".into()),
                    );
                }
                if lvl == Lvl::Root && !root_metadata_ok(meta) {
                    self.at(
                        &CRD023,
                        &[Seg::F("properties"), Seg::K("metadata")],
                        E::Forbidden(
                            "must not specify anything other than name and generateName, but \
                             metadata is implicitly specified"
                                .into(),
                        ),
                    );
                }
            }
        }
        self.depth -= 1;
    }

    /// The allOf/anyOf/oneOf/not of a node; `cp` is the structural node they apply to (`None`
    /// once a missing counterpart has been reported).
    #[allow(clippy::too_many_arguments)]
    fn junctors(
        &mut self,
        n: &N<'o>,
        cp: Option<&'o Map<String, Value>>,
        base: usize,
        forbid: bool,
        skip_any_of: bool,
        skip_first_all_of: bool,
        ctx: Ctx,
    ) {
        for (key, list) in [
            ("allOf", n.all_of),
            ("anyOf", n.any_of),
            ("oneOf", n.one_of),
        ] {
            let Some(list) = list.and_then(Value::as_array) else {
                continue;
            };
            for (i, b) in list.iter().enumerate() {
                let (f, skip) = match key {
                    "anyOf" => (forbid && !skip_any_of, false),
                    "allOf" => (forbid, skip_first_all_of && i == 0),
                    _ => (forbid, false),
                };
                self.path.extend([Seg::F(key), Seg::I(i)]);
                self.nested(b, cp, base, f, skip, ctx);
                self.path.truncate(self.path.len() - 2);
            }
        }
        if let Some(not) = n.not.filter(|v| !v.is_null()) {
            self.path.push(Seg::F("not"));
            self.nested(not, cp, base, forbid, false, ctx);
            self.path.pop();
        }
    }

    /// The structural path that corresponds to the current junctor path.
    fn structural_path(&self, base: usize) -> Vec<Seg<'o>> {
        let mut out = self.path[..base].to_vec();
        let mut i = base;
        while i < self.path.len() {
            match self.path[i] {
                Seg::F("allOf" | "anyOf" | "oneOf") => i += 2,
                Seg::F("not") => i += 1,
                seg => {
                    out.push(seg);
                    i += 1;
                }
            }
        }
        out
    }

    fn missing(&mut self, base: usize, tail: &[Seg<'o>]) {
        let mut s = self.structural_path(base);
        s.extend_from_slice(tail);
        let n = self.path.len();
        self.path.extend_from_slice(tail);
        let v = super::util::field_path(&self.path);
        self.rep.report_at(
            &CRD022,
            &s,
            E::Required(format!("because it is defined in {v}")),
            &self.path,
        );
        self.path.truncate(n);
    }

    /// A node inside allOf/anyOf/oneOf/not: value validations only.
    fn nested(
        &mut self,
        v: &'o Value,
        cp: Option<&'o Map<String, Value>>,
        base: usize,
        forbid: bool,
        skip_any_of: bool,
        ctx: Ctx,
    ) {
        let Some(m) = v.as_object() else {
            self.not_a_schema(v);
            return;
        };
        if self.depth >= MAX_DEPTH {
            return;
        }
        self.depth += 1;
        let n = N::of(m);
        self.keywords(&n, ctx);
        if forbid {
            let forbidden = |w: &mut Self, k: &'static str, d: &str| {
                w.at(&CRD022, &[Seg::F(k)], E::Forbidden(d.into()));
            };
            if non_empty_str(n.ty) {
                forbidden(self, "type", "must be empty to be structural");
            }
            if set(n.additional_properties) {
                forbidden(
                    self,
                    "additionalProperties",
                    "must be undefined to be structural",
                );
            }
            if n.default.is_some() {
                forbidden(self, "default", "must be undefined to be structural");
            }
            if non_empty_str(n.title) {
                forbidden(self, "title", "must be empty to be structural");
            }
            if non_empty_str(n.description) {
                forbidden(self, "description", "must be empty to be structural");
            }
            if flag(n.nullable) {
                forbidden(self, "nullable", "must be false to be structural");
            }
            if set(n.external_docs) {
                forbidden(self, "externalDocs", "must be undefined to be structural");
            }
            for (k, v) in [
                ("x-kubernetes-preserve-unknown-fields", n.preserve),
                ("x-kubernetes-embedded-resource", n.embedded),
                ("x-kubernetes-int-or-string", n.int_or_string),
            ] {
                if flag(v) {
                    forbidden(self, k, "must be false to be structural");
                }
            }
            for (k, v) in [
                ("x-kubernetes-list-map-keys", n.list_map_keys),
                ("x-kubernetes-validations", n.validations),
            ] {
                if non_empty_list(v) {
                    forbidden(self, k, "must be empty to be structural");
                }
            }
            for (k, v) in [
                ("x-kubernetes-list-type", n.list_type),
                ("x-kubernetes-map-type", n.map_type),
            ] {
                if set(v) {
                    forbidden(self, k, "must be undefined to be structural");
                }
            }
            if n.props().is_some_and(|p| p.contains_key("metadata")) {
                self.at(
                    &CRD022,
                    &[Seg::F("properties"), Seg::K("metadata")],
                    E::Forbidden("must not be specified in a nested context".into()),
                );
            }
        }
        self.junctors(&n, cp, base, forbid, skip_any_of, false, ctx);
        if let Some(items) = n.items.filter(|i| i.is_object()) {
            let child = cp.and_then(|c| c.get("items")).and_then(Value::as_object);
            if cp.is_some() && child.is_none() {
                self.missing(base, &[Seg::F("items")]);
            }
            self.path.push(Seg::F("items"));
            self.nested(items, child, base, forbid, false, ctx);
            self.path.pop();
        }
        if let Some(p) = n.props() {
            let cprops = cp
                .and_then(|c| c.get("properties"))
                .and_then(Value::as_object);
            for (k, pv) in p {
                let child = cprops.and_then(|ps| ps.get(k)).and_then(Value::as_object);
                if cp.is_some() && child.is_none() {
                    self.missing(base, &[Seg::F("properties"), Seg::K(k)]);
                }
                self.path.extend([Seg::F("properties"), Seg::K(k)]);
                self.nested(pv, child, base, forbid, false, ctx);
                self.path.truncate(self.path.len() - 2);
            }
        }
        self.depth -= 1;
    }

    fn list_types(&mut self, n: &N<'o>, ty: &str) {
        let lt = n.list_type.filter(|v| !v.is_null()).map(str_of);
        let items = n.items_obj();
        let keys = n.list_map_keys.map(strings).unwrap_or_default();
        let type_err = |d: &str| {
            if ty.is_empty() {
                E::Required(d.into())
            } else {
                E::Invalid(Some(quote_str(ty)), d.into())
            }
        };
        if let Some(lt) = lt {
            if ty != "array" {
                self.at(
                    &CRD027,
                    &[Seg::F("type")],
                    type_err("must be array if x-kubernetes-list-type is specified"),
                );
            } else if lt == "set"
                && let Some(is) = items
            {
                let d = "must be atomic as item of a list with x-kubernetes-list-type=set";
                match type_of(is) {
                    "array" => {
                        if let Some(ilt) = present(is.get("x-kubernetes-list-type"))
                            && str_of(ilt) != "atomic"
                        {
                            self.at(
                                &CRD027,
                                &[Seg::F("items"), Seg::F("x-kubernetes-list-type")],
                                E::Invalid(Some(show(ilt)), d.into()),
                            );
                        }
                    }
                    "object" => {
                        let mt = is.get("x-kubernetes-map-type");
                        if mt.and_then(Value::as_str) != Some("atomic") {
                            self.at(
                                &CRD027,
                                &[Seg::F("items"), Seg::F("x-kubernetes-map-type")],
                                E::Invalid(mt.map(show), d.into()),
                            );
                        }
                    }
                    _ => {}
                }
            }
            if !matches!(lt, "atomic" | "set" | "map") {
                self.at(
                    &CRD027,
                    &[Seg::F("x-kubernetes-list-type")],
                    E::NotSupported(lt.into(), &["atomic", "set", "map"]),
                );
            }
        }
        if !keys.is_empty() {
            let d = "must be map if x-kubernetes-list-map-keys is non-empty";
            match lt {
                None => self.at(
                    &CRD027,
                    &[Seg::F("x-kubernetes-list-type")],
                    E::Required(d.into()),
                ),
                Some("map") => {}
                Some(other) => self.at(
                    &CRD027,
                    &[Seg::F("x-kubernetes-list-type")],
                    E::Invalid(Some(quote_str(other)), d.into()),
                ),
            }
        }
        if lt == Some("map") {
            if keys.is_empty() {
                self.at(
                    &CRD027,
                    &[Seg::F("x-kubernetes-list-map-keys")],
                    E::Required("must not be empty if x-kubernetes-list-type is map".into()),
                );
            }
            match n.items {
                None | Some(Value::Null) => self.at(
                    &CRD027,
                    &[Seg::F("items")],
                    E::Required("must have a schema if x-kubernetes-list-type is map".into()),
                ),
                Some(Value::Object(_)) => {}
                Some(_) => self.at(
                    &CRD027,
                    &[Seg::F("items")],
                    E::Invalid(
                        None,
                        "must only have a single schema if x-kubernetes-list-type is map".into(),
                    ),
                ),
            }
            if let Some(is) = items {
                if type_of(is) != "object" {
                    self.at(
                        &CRD027,
                        &[Seg::F("items"), Seg::F("type")],
                        E::Invalid(
                            Some(quote_str(type_of(is))),
                            "must be object if parent array's x-kubernetes-list-type is map".into(),
                        ),
                    );
                } else {
                    let props = is.get("properties").and_then(Value::as_object);
                    let mut seen = std::collections::HashSet::new();
                    for k in &keys {
                        match props.and_then(|p| p.get(*k)).and_then(Value::as_object) {
                            Some(p) => {
                                let t = type_of(p);
                                if t == "array" || t == "object" {
                                    self.at(
                                        &CRD027,
                                        &[
                                            Seg::F("items"),
                                            Seg::F("properties"),
                                            Seg::K(k),
                                            Seg::F("type"),
                                        ],
                                        E::Invalid(
                                            Some(quote_str(t)),
                                            "must be a scalar type if parent array's \
                                             x-kubernetes-list-type is map"
                                                .into(),
                                        ),
                                    );
                                }
                            }
                            None => self.at(
                                &CRD027,
                                &[Seg::F("x-kubernetes-list-map-keys")],
                                E::Invalid(
                                    Some(quote_str(k)),
                                    "entries must all be names of item properties".into(),
                                ),
                            ),
                        }
                        if !seen.insert(*k) {
                            self.at(
                                &CRD027,
                                &[Seg::F("x-kubernetes-list-map-keys")],
                                E::Invalid(
                                    Some(quote_str(k)),
                                    "must not contain duplicate entries".into(),
                                ),
                            );
                        }
                    }
                }
            }
        }
        // validateMapListKeysMapSet
        if let (Some(lt @ ("set" | "map")), Some(is)) = (lt, items) {
            if truthy(is, "nullable") {
                self.at(
                    &CRD027,
                    &[Seg::F("items"), Seg::F("nullable")],
                    E::Forbidden(format!(
                        "cannot be nullable when x-kubernetes-list-type is {lt}"
                    )),
                );
            }
            if lt == "map" {
                let required = is.get("required").map(strings).unwrap_or_default();
                let props = is.get("properties").and_then(Value::as_object);
                for k in &keys {
                    let Some(p) = props.and_then(|p| p.get(*k)).and_then(Value::as_object) else {
                        continue;
                    };
                    if !required.contains(k) && present(p.get("default")).is_none() {
                        self.at(
                            &CRD027,
                            &[
                                Seg::F("items"),
                                Seg::F("properties"),
                                Seg::K(k),
                                Seg::F("default"),
                            ],
                            E::Required(
                                "this property is in x-kubernetes-list-map-keys, so it must have a \
                                 default or be a required property"
                                    .into(),
                            ),
                        );
                    }
                    if truthy(p, "nullable") {
                        self.at(
                            &CRD027,
                            &[
                                Seg::F("items"),
                                Seg::F("properties"),
                                Seg::K(k),
                                Seg::F("nullable"),
                            ],
                            E::Forbidden(
                                "this property is in x-kubernetes-list-map-keys, so it cannot be \
                                 nullable"
                                    .into(),
                            ),
                        );
                    }
                }
            }
        }
        // map-type
        if let Some(mt) = n.map_type.filter(|v| !v.is_null()) {
            if ty != "object" {
                self.at(
                    &CRD027,
                    &[Seg::F("type")],
                    type_err("must be object if x-kubernetes-map-type is specified"),
                );
            }
            let mt = str_of(mt);
            if mt != "atomic" && mt != "granular" {
                self.at(
                    &CRD027,
                    &[Seg::F("x-kubernetes-map-type")],
                    E::NotSupported(mt.into(), &["atomic", "granular"]),
                );
            }
        }
    }
}

fn quote_str(s: &str) -> String {
    super::util::quote(s)
}

/// Root `metadata` may only restrict name and generateName (and say `type: object`).
fn root_metadata_ok(meta: &Map<String, Value>) -> bool {
    meta.iter().all(|(k, v)| match k.as_str() {
        "type" | "default" | "example" | "externalDocs" => true,
        "properties" => match v {
            Value::Object(p) => {
                !p.is_empty() && p.keys().all(|k| k == "name" || k == "generateName")
            }
            _ => is_zero(v),
        },
        _ => is_zero(v),
    })
}

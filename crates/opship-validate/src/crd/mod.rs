//! CustomResourceDefinition rules (`CRD…`): the apiextensions validation that
//! operator-framework/api runs on every CRD of a bundle (`ValidateCustomResourceDefinition` after
//! converting v1 and v1beta1 to the internal version, defaults applied), and opship's own
//! structural-schema checks, which the reference drops because their field paths contain
//! `openAPIV3Schema`.
//!
//! Messages print like Kubernetes field errors (`spec.versions[1].name: Invalid value: ...`),
//! with the path as the user wrote it (v1 `jsonPath`, `webhook.clientConfig`), and every finding
//! points at the YAML node it is about.

mod schema;
mod util;

use opship_core::manifest::Object;
use serde_json::Value;

use crate::Options;
use crate::load::Bundle;
use crate::rule::{Finding, Rule};
use util::{Seg, dns1035_label, dns1123_subdomain, field_path, pointer, quote, show};

rule!(
    Crd,
    CRD001,
    Error,
    Some("FieldValueInvalid"),
    "metadata.name is `<spec.names.plural>.<spec.group>`",
    "Kubernetes serves a CRD under the name `<plural>.<group>` and refuses any other \
     (`must be spec.names.plural+\".\"+spec.group`); it must also be a DNS-1123 subdomain. Rename \
     the CRD, or fix spec.names.plural or spec.group so that they add up to the name."
);
rule!(
    Crd,
    CRD002,
    Error,
    Some("FieldValueRequired"),
    "Required CRD fields are set",
    "metadata.name, spec.group, spec.scope, spec.names.plural and kind, printer-column name, \
     type and jsonPath, scale replica paths, and for webhook conversion the client config, \
     service name and namespace and conversionReviewVersions are required; the API server \
     rejects the CRD without them. controller-gen fills them in when the Go markers are \
     complete."
);
rule!(
    Crd,
    CRD003,
    Error,
    Some("FieldValueForbidden"),
    "A CRD has no metadata.namespace",
    "CustomResourceDefinitions are cluster-scoped objects: `metadata.namespace` is not allowed on \
     this type and the API server rejects it. Remove the namespace (it often comes from a \
     kustomize `namespace:` applied to the whole bundle)."
);
rule!(
    Crd,
    CRD004,
    Error,
    Some("FieldValueInvalid"),
    "spec.preserveUnknownFields is not true",
    "`spec.preserveUnknownFields: true` turns off pruning and is rejected for new CRDs (`cannot \
     set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema \
     instead`). In apiextensions.k8s.io/v1beta1 it defaults to true, so every v1beta1 CRD that \
     does not set it to false fails; v1beta1 CRDs are also gone since Kubernetes 1.22. Convert \
     the CRD to apiextensions.k8s.io/v1 (controller-gen `crd:crdVersions=v1`) and mark the \
     fields that must keep unknown content with `x-kubernetes-preserve-unknown-fields: true`."
);
rule!(
    Crd,
    CRD005,
    Error,
    Some("FieldValueRequired"),
    "CRDs in protected groups carry the api-approved.kubernetes.io annotation",
    "Groups `k8s.io`, `kubernetes.io` and their subdomains belong to the Kubernetes project; a \
     CRD there needs the annotation `api-approved.kubernetes.io` with the URL of the API review \
     (see https://github.com/kubernetes/enhancements/pull/1111), or a value starting with \
     `unapproved` to bypass it knowingly. Better: move the API to a group you own."
);
rule!(
    Crd,
    CRD006,
    Error,
    Some("FieldValueInvalid"),
    "The api-approved.kubernetes.io annotation is a URL or starts with `unapproved`",
    "In a protected group (`*.k8s.io`, `*.kubernetes.io`) the approval annotation must be the URL \
     of the approved API review, or a reason starting with `unapproved`; anything else is \
     rejected by the API server."
);
rule!(
    Crd,
    CRD007,
    Error,
    Some("FieldValueInvalid"),
    "spec.group is a DNS subdomain with at least one dot",
    "The API group must be a lower-case DNS-1123 subdomain with at least one dot (e.g. \
     `cache.example.com`), usually a domain the project owns."
);
rule!(
    Crd,
    CRD008,
    Error,
    Some("FieldValueNotSupported"),
    "spec.scope and spec.conversion.strategy have supported values",
    "spec.scope is `Namespaced` or `Cluster`; spec.conversion.strategy is `None` or `Webhook`. \
     The values are case-sensitive."
);
rule!(
    Crd,
    CRD009,
    Error,
    Some("FieldValueInvalid"),
    "spec.names are valid resource names",
    "plural, singular, shortNames and categories must be lower-case DNS-1035 labels (letters, \
     digits and '-', starting with a letter); kind and listKind may be mixed case but otherwise \
     follow the same rule, and kind and listKind must differ."
);
rule!(
    Crd,
    CRD010,
    Error,
    Some("FieldValueInvalid"),
    "spec.versions have unique DNS-1035 names and exactly one storage version",
    "Each version name (`v1`, `v1alpha1`) must be a DNS-1035 label and unique; exactly one \
     version has `storage: true`; a v1beta1 `spec.version` must match the first entry of \
     spec.versions; `deprecationWarning` is only for deprecated versions and at most 256 \
     printable characters."
);
rule!(
    Crd,
    CRD011,
    Error,
    Some("FieldValueForbidden"),
    "v1beta1: top-level and per-version schema, subresources and columns are not mixed",
    "An apiextensions.k8s.io/v1beta1 CRD sets spec.validation, spec.subresources and \
     spec.additionalPrinterColumns either at the top level or per version, never both. Better: \
     convert the CRD to apiextensions.k8s.io/v1, which only has the per-version form."
);
rule!(
    Crd,
    CRD012,
    Error,
    Some("FieldValueInvalid"),
    "v1beta1: per-version schemas, subresources and columns are not all identical",
    "When every version of a v1beta1 CRD has the same schema (or subresources, or printer \
     columns), the API server wants the top-level field instead. This also fires for a single \
     version with a per-version schema. Move the value to the top level, or convert the CRD to \
     apiextensions.k8s.io/v1."
);
rule!(
    Crd,
    CRD013,
    Error,
    Some("FieldValueInvalid"),
    "The scale subresource's paths are simple JSON paths under .spec / .status",
    "subresources.scale.specReplicasPath must be a dot path under `.spec.` and labelSelectorPath \
     one under `.spec.` or `.status.` (e.g. `.spec.replicas`, `.status.selector`)."
);
rule!(
    Crd,
    CRD014,
    Error,
    Some("FieldValueInvalid"),
    "additionalPrinterColumns have a valid type, format and jsonPath",
    "A printer column's type is one of integer, number, string, boolean, date; its format, when \
     set, one of int32, int64, float, double, byte, date, date-time, password; its jsonPath a \
     simple path starting with `.` (e.g. `.status.phase`)."
);
rule!(
    Crd,
    CRD015,
    Error,
    Some("FieldValueInvalid"),
    "Conversion settings are consistent",
    "A `Webhook` conversion needs spec.preserveUnknownFields false, a client config with either \
     an https URL (no user info, query or fragment) or a service (valid port and path), and \
     conversionReviewVersions that are unique DNS-1035 labels including `v1` or `v1beta1`. With \
     OLM the webhook service is usually filled in from the CSV's webhookdefinitions."
);
rule!(
    Crd,
    CRD016,
    Error,
    Some("FieldValueForbidden"),
    "Webhook settings only appear with the Webhook conversion strategy",
    "A webhook client config or conversionReviewVersions with strategy `None` is rejected: \
     remove them or set `strategy: Webhook`."
);
rule!(
    Crd,
    CRD017,
    Error,
    Some("FieldValueInvalid"),
    "Labels and annotations of the CRD have valid keys and values",
    "Label and annotation keys are qualified names (`[prefix/]name`, the prefix a DNS subdomain, \
     the name at most 63 alphanumerics, '-', '_' or '.'); label values at most 63 such \
     characters."
);
rule!(
    Crd,
    CRD018,
    Error,
    Some("FieldValueTooLong"),
    "The CRD's annotations stay within 256 KiB",
    "All annotations of an object together may hold at most 262144 bytes. Move large content \
     (examples, descriptions) elsewhere."
);
rule!(
    Crd,
    CRD019,
    Error,
    None,
    "Problems the reference hides because their path names `status`",
    "operator-framework/api drops every CRD error whose field path contains `status` or \
     `openAPIV3Schema`, although the API server still rejects the CRD. opship reports the \
     apiextensions errors it would drop (e.g. a bad `scale.statusReplicasPath`) under this \
     rule. Level: error, because no bundle of the 237-bundle reference corpus trips it, so the \
     verdict stays the same as the reference's there."
);
rule!(
    Crd,
    CRD020,
    Error,
    None,
    "Every version has an OpenAPI v3 schema",
    "Since apiextensions.k8s.io/v1 each version needs `schema.openAPIV3Schema` (or, in v1beta1, \
     a top-level spec.validation); the API server refuses the CRD without it. The reference \
     hides this (its path contains openAPIV3Schema). Generate schemas with controller-gen; use \
     `x-kubernetes-preserve-unknown-fields: true` for free-form parts. Level: error; in the reference \
     corpus it fires only in bundles the reference already fails (v1beta1 CRDs)."
);
rule!(
    Crd,
    CRD021,
    Error,
    None,
    "Structural schema: every node has a valid `type`",
    "A structural schema gives every property and array item a `type` (one of array, boolean, \
     integer, number, object, string; `object` at the root; arrays need `items`), except \
     where x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields stands in. The \
     API server rejects non-structural schemas for v1 CRDs. The reference never reports this. \
     Level: error; checked against the 237-bundle reference corpus it fires only in \
     bundles the reference already fails (old v1beta1 CRDs), so no verdict changes."
);
rule!(
    Crd,
    CRD022,
    Error,
    None,
    "Structural schema: allOf/anyOf/oneOf/not only add value validations",
    "Inside allOf, anyOf, oneOf and not, a structural schema may not set type, default, \
     description, title, nullable, additionalProperties, x-kubernetes-* extensions or \
     metadata, and every property or items it names must also be declared outside the \
     junctor. (The int-or-string pattern `anyOf: [{type: integer}, {type: string}]` is \
     allowed.) Level: error; checked against the 237-bundle reference corpus it fires only in \
     bundles the reference already fails (old v1beta1 CRDs), so no verdict changes."
);
rule!(
    Crd,
    CRD023,
    Error,
    None,
    "Structural schema: the root and metadata follow the rules",
    "At the schema root: no additionalProperties, not nullable, `kind` and `apiVersion` of type \
     string, `metadata` of type object restricting at most name and generateName, no defaults \
     in top-level metadata, kind or apiVersion, and only a few keywords when the status \
     subresource is enabled. Level: error; checked against the 237-bundle reference corpus it fires only in \
     bundles the reference already fails (old v1beta1 CRDs), so no verdict changes."
);
rule!(
    Crd,
    CRD024,
    Error,
    None,
    "Structural schema: x-kubernetes extensions are used consistently",
    "`x-kubernetes-preserve-unknown-fields: false` is not allowed (omit it); int-or-string \
     excludes preserve-unknown-fields and embedded-resource; an embedded resource is \
     `type: object` with properties or preserve-unknown-fields and no additionalProperties. \
     Level: error; checked against the 237-bundle reference corpus it fires only in \
     bundles the reference already fails (old v1beta1 CRDs), so no verdict changes."
);
rule!(
    Crd,
    CRD025,
    Error,
    None,
    "Structural schema: properties and additionalProperties are not combined",
    "`properties` describe a struct, `additionalProperties` a map; a schema node may not have \
     both (additionalProperties: true aside). Level: error; checked against the 237-bundle reference corpus it fires only in \
     bundles the reference already fails (old v1beta1 CRDs), so no verdict changes."
);
rule!(
    Crd,
    CRD026,
    Error,
    None,
    "The schema uses only keywords Kubernetes supports",
    "Kubernetes' OpenAPI v3 subset has no `$ref`, `id`, `definitions`, `dependencies`, \
     `patternProperties`, `additionalItems`, list-valued `items`, `type: null` (use nullable) \
     or `uniqueItems: true`; each schema node is a mapping. Level: error; checked against the 237-bundle reference corpus it fires only in \
     bundles the reference already fails (old v1beta1 CRDs), so no verdict changes."
);
rule!(
    Crd,
    CRD027,
    Error,
    None,
    "x-kubernetes-list-type, list-map-keys and map-type fit together",
    "list-type is atomic, set or map and needs `type: array`; map lists need \
     x-kubernetes-list-map-keys naming scalar, required (or defaulted), non-nullable properties \
     of object items; set items are atomic; map-type is atomic or granular on `type: object`. \
     Server-side apply depends on these. Level: error; checked against the 237-bundle reference corpus it fires only in \
     bundles the reference already fails (old v1beta1 CRDs), so no verdict changes."
);
rule!(
    Crd,
    CRD028,
    Warning,
    None,
    "At least one version is served",
    "A CRD whose versions all have `served: false` installs but offers no API at all, which is \
     almost always a mistake."
);

/// The rules of this suite.
pub const RULES: &[&Rule] = &[
    &CRD001, &CRD002, &CRD003, &CRD004, &CRD005, &CRD006, &CRD007, &CRD008, &CRD009, &CRD010,
    &CRD011, &CRD012, &CRD013, &CRD014, &CRD015, &CRD016, &CRD017, &CRD018, &CRD019, &CRD020,
    &CRD021, &CRD022, &CRD023, &CRD024, &CRD025, &CRD026, &CRD027, &CRD028,
];

/// Runs the suite.
pub(crate) fn check(b: &Bundle, _opts: &Options, out: &mut Vec<Finding>) {
    for o in b.crds() {
        check_crd(o, out);
    }
}

/// A Kubernetes field error, without its path.
pub(crate) enum E {
    Required(String),
    Invalid(Option<String>, String),
    Forbidden(String),
    NotSupported(String, &'static [&'static str]),
    TooLong(usize),
}

/// Where findings about one CRD go.
pub(crate) struct Rep<'o, 'w> {
    obj: &'o Object,
    name: &'o str,
    out: &'w mut Vec<Finding>,
}

impl Rep<'_, '_> {
    /// Reports `e` at `segs`.
    pub(crate) fn report(&mut self, rule: &'static Rule, segs: &[Seg<'_>], e: E) {
        self.report_at(rule, segs, e, segs);
    }

    /// Reports `e` with the field path `segs`, located at the node `at`.
    pub(crate) fn report_at(
        &mut self,
        rule: &'static Rule,
        segs: &[Seg<'_>],
        e: E,
        at: &[Seg<'_>],
    ) {
        let path = field_path(segs);
        let detail = match e {
            E::Required(d) if d.is_empty() => "Required value".to_owned(),
            E::Required(d) => format!("Required value: {d}"),
            E::Invalid(Some(v), d) => format!("Invalid value: {v}: {d}"),
            E::Invalid(None, d) => format!("Invalid value: {d}"),
            E::Forbidden(d) => format!("Forbidden: {d}"),
            E::NotSupported(v, allowed) => format!(
                "Unsupported value: {}: supported values: {}",
                quote(&v),
                allowed
                    .iter()
                    .map(|a| quote(a))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            E::TooLong(n) => format!("Too long: must have at most {n} bytes"),
        };
        // The reference drops these; opship keeps them under a rule of its own.
        let rule = if rule.upstream.is_some()
            && (path.contains("openAPIV3Schema") || path.contains("status"))
        {
            &CRD019
        } else {
            rule
        };
        self.out.push(
            Finding::new(rule, self.name, format!("{path}: {detail}"))
                .at(self.obj.origin_of(&pointer(at))),
        );
    }
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

const PROTECTED_NOTE: &str = "see https://github.com/kubernetes/enhancements/pull/1111";
const APPROVAL: &str = "api-approved.kubernetes.io";

/// One entry of spec.versions after defaulting.
struct Version<'o> {
    name: &'o str,
    served: bool,
    storage: bool,
    /// Absent for the version a v1beta1 `spec.version` stands for.
    value: Option<&'o Value>,
}

fn check_crd(o: &Object, out: &mut Vec<Finding>) {
    let beta = match o.api_version() {
        "apiextensions.k8s.io/v1" => false,
        "apiextensions.k8s.io/v1beta1" => true,
        _ => return,
    };
    let v = o.value();
    let name = if o.name().is_empty() {
        "CustomResourceDefinition"
    } else {
        o.name()
    };
    let mut r = Rep { obj: o, name, out };
    let spec = &v["spec"];
    let names = &spec["names"];
    let group = str_of(&spec["group"]);
    let kind = str_of(&names["kind"]);
    let plural = str_of(&names["plural"]);
    let singular = match str_of(&names["singular"]) {
        "" => kind.to_lowercase(),
        s => s.to_owned(),
    };
    let list_kind = match str_of(&names["listKind"]) {
        "" if !kind.is_empty() => format!("{kind}List"),
        s => s.to_owned(),
    };

    metadata(&mut r, &v["metadata"], plural, group);

    // spec.group
    let g = [Seg::F("spec"), Seg::F("group")];
    if group.is_empty() {
        r.report(&CRD002, &g, E::Required(String::new()));
    } else if let errs @ [_, ..] = dns1123_subdomain(group).as_slice() {
        r.report(&CRD007, &g, E::Invalid(Some(quote(group)), errs.join(",")));
    } else if !group.contains('.') {
        r.report(
            &CRD007,
            &g,
            E::Invalid(
                Some(quote(group)),
                "should be a domain with at least one dot".into(),
            ),
        );
    }

    // spec.scope (v1beta1 defaults it to Namespaced)
    let scope = match str_of(&spec["scope"]) {
        "" if beta => "Namespaced",
        s => s,
    };
    let sc = [Seg::F("spec"), Seg::F("scope")];
    match scope {
        "" => r.report(&CRD002, &sc, E::Required(String::new())),
        "Cluster" | "Namespaced" => {}
        other => r.report(
            &CRD008,
            &sc,
            E::NotSupported(other.into(), &["Cluster", "Namespaced"]),
        ),
    }

    // Effective preserveUnknownFields: v1beta1 defaults to true.
    let puf = match spec.get("preserveUnknownFields").and_then(Value::as_bool) {
        Some(b) => b,
        None => beta,
    };

    // Versions, with the v1beta1 defaulting from spec.version.
    let mut versions: Vec<Version<'_>> = spec["versions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|ver| Version {
                    name: str_of(&ver["name"]),
                    served: ver["served"].as_bool().unwrap_or(false),
                    storage: ver["storage"].as_bool().unwrap_or(false),
                    value: Some(ver),
                })
                .collect()
        })
        .unwrap_or_default();
    let top_version = str_of(&spec["version"]);
    if beta && versions.is_empty() && !top_version.is_empty() {
        versions.push(Version {
            name: top_version,
            served: true,
            storage: true,
            value: None,
        });
    }

    let top_schema = if beta {
        present(spec.get("validation"))
    } else {
        None
    };
    let top_sub = if beta {
        present(spec.get("subresources"))
    } else {
        None
    };
    let per_version_sub = versions.iter().any(|v| {
        v.value
            .is_some_and(|x| present(x.get("subresources")).is_some())
    });
    let status_of = |sub: Option<&Value>| sub.is_some_and(|s| present(s.get("status")).is_some());

    // Schemas: presence, then one walk each.
    let mut has_default = false;
    let top_open_api = top_schema.and_then(|s| present(s.get("openAPIV3Schema")));
    if top_open_api.is_none() {
        for (i, ver) in versions.iter().enumerate() {
            let has = ver
                .value
                .and_then(|x| present(x.pointer("/schema/openAPIV3Schema")))
                .is_some();
            if !has {
                r.report(
                    &CRD020,
                    &[
                        Seg::F("spec"),
                        Seg::F("versions"),
                        Seg::I(i),
                        Seg::F("schema"),
                        Seg::F("openAPIV3Schema"),
                    ],
                    E::Required(String::new()),
                );
            }
        }
    }
    if let Some(s) = top_open_api {
        let any_status = status_of(top_sub)
            || versions
                .iter()
                .any(|v| status_of(v.value.and_then(|x| present(x.get("subresources")))));
        has_default |= schema::walk(
            &mut r,
            &[
                Seg::F("spec"),
                Seg::F("validation"),
                Seg::F("openAPIV3Schema"),
            ],
            s,
            any_status,
        );
    }
    for (i, ver) in versions.iter().enumerate() {
        let Some(x) = ver.value else { continue };
        if let Some(s) = present(x.pointer("/schema/openAPIV3Schema")) {
            let sub = if per_version_sub {
                present(x.get("subresources"))
            } else {
                top_sub
            };
            has_default |= schema::walk(
                &mut r,
                &[
                    Seg::F("spec"),
                    Seg::F("versions"),
                    Seg::I(i),
                    Seg::F("schema"),
                    Seg::F("openAPIV3Schema"),
                ],
                s,
                status_of(sub),
            );
        }
    }

    let pu = [Seg::F("spec"), Seg::F("preserveUnknownFields")];
    if has_default && puf {
        r.report(
            &CRD004,
            &pu,
            E::Invalid(
                Some("true".into()),
                "must be false in order to use defaults in the schema".into(),
            ),
        );
    }

    // Versions
    let mut storage = 0;
    let mut unique = true;
    let mut seen = std::collections::HashSet::new();
    for (i, ver) in versions.iter().enumerate() {
        storage += usize::from(ver.storage);
        unique &= seen.insert(ver.name);
        let base = [Seg::F("spec"), Seg::F("versions"), Seg::I(i)];
        let errs = dns1035_label(ver.name);
        if !errs.is_empty() {
            r.report(
                &CRD010,
                &[base[0], base[1], base[2], Seg::F("name")],
                E::Invalid(Some(quote(ver.name)), errs.join(",")),
            );
        }
        let Some(x) = ver.value else { continue };
        deprecation(&mut r, x, &base);
        if let Some(sub) = present(x.get("subresources")) {
            subresources(&mut r, sub, &base);
        }
        columns(&mut r, &x["additionalPrinterColumns"], &base, beta);
    }
    let vs = [Seg::F("spec"), Seg::F("versions")];
    if beta {
        exclusive(&mut r, spec, &versions);
    }
    if !unique {
        r.report(
            &CRD010,
            &vs,
            E::Invalid(None, "must contain unique version names".into()),
        );
    }
    if storage != 1 {
        r.report(
            &CRD010,
            &vs,
            E::Invalid(
                None,
                "must have exactly one version marked as storage version".into(),
            ),
        );
    }
    if beta && !top_version.is_empty() {
        let sv = [Seg::F("spec"), Seg::F("version")];
        let errs = dns1035_label(top_version);
        if !errs.is_empty() {
            r.report(
                &CRD010,
                &sv,
                E::Invalid(Some(quote(top_version)), errs.join(",")),
            );
        }
        if versions.first().is_some_and(|f| f.name != top_version) {
            r.report(
                &CRD010,
                &sv,
                E::Invalid(
                    Some(quote(top_version)),
                    "must match the first version in spec.versions".into(),
                ),
            );
        }
    }
    if !versions.is_empty() && !versions.iter().any(|v| v.served) {
        r.report(
            &CRD028,
            &vs,
            E::Invalid(
                None,
                "no version has `served: true`; the CRD would offer no API".into(),
            ),
        );
    }

    // Names
    for (field, value) in [
        ("plural", plural),
        ("singular", singular.as_str()),
        ("kind", kind),
        ("listKind", list_kind.as_str()),
    ] {
        if value.is_empty() {
            r.report(
                &CRD002,
                &[Seg::F("spec"), Seg::F("names"), Seg::F(field)],
                E::Required(String::new()),
            );
        }
    }
    check_names(&mut r, names, plural, &singular, kind, &list_kind);

    if beta {
        if let Some(sub) = top_sub {
            subresources(&mut r, sub, &[Seg::F("spec")]);
        }
        columns(
            &mut r,
            &spec["additionalPrinterColumns"],
            &[Seg::F("spec")],
            true,
        );
    }

    conversion(&mut r, spec, beta, puf);

    // validatePreserveUnknownFields
    if puf {
        r.report(
            &CRD004,
            &pu,
            E::Invalid(
                Some("true".into()),
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in \
                 spec.versions[*].schema instead"
                    .into(),
            ),
        );
    }
}

fn metadata(r: &mut Rep<'_, '_>, meta: &Value, plural: &str, group: &str) {
    let required = format!("{plural}.{group}");
    let name_problems = |n: &str, prefix: bool| {
        let masked = if prefix && n.ends_with('-') {
            format!("{}a", &n[..n.len() - 1])
        } else {
            n.to_owned()
        };
        let mut errs = dns1123_subdomain(&masked);
        if n != required {
            errs.push("must be spec.names.plural+\".\"+spec.group".to_owned());
        }
        errs
    };
    let generate = str_of(&meta["generateName"]);
    if !generate.is_empty() {
        for e in name_problems(generate, true) {
            r.report(
                &CRD001,
                &[Seg::F("metadata"), Seg::F("generateName")],
                E::Invalid(Some(quote(generate)), e),
            );
        }
    }
    let name = str_of(&meta["name"]);
    let n = [Seg::F("metadata"), Seg::F("name")];
    if name.is_empty() {
        r.report(
            &CRD002,
            &n,
            E::Required("name or generateName is required".into()),
        );
    } else {
        for e in name_problems(name, false) {
            r.report(&CRD001, &n, E::Invalid(Some(quote(name)), e));
        }
    }
    if !str_of(&meta["namespace"]).is_empty() {
        r.report(
            &CRD003,
            &[Seg::F("metadata"), Seg::F("namespace")],
            E::Forbidden("not allowed on this type".into()),
        );
    }
    let lp = [Seg::F("metadata"), Seg::F("labels")];
    if let Some(labels) = meta["labels"].as_object() {
        for (k, v) in labels {
            let at = [lp[0], lp[1], Seg::K(k)];
            if let Some(p) = util::qualified_name_problem(k) {
                r.report_at(&CRD017, &lp, E::Invalid(Some(quote(k)), p), &at);
            }
            if let Some(p) = v.as_str().and_then(util::label_value_problem) {
                r.report_at(&CRD017, &lp, E::Invalid(Some(show(v)), p), &at);
            }
        }
    }
    let ap = [Seg::F("metadata"), Seg::F("annotations")];
    if let Some(annotations) = meta["annotations"].as_object() {
        let mut total = 0;
        for (k, v) in annotations {
            total += k.len() + v.as_str().map_or(0, str::len);
            if let Some(p) = util::qualified_name_problem(&k.to_lowercase()) {
                r.report_at(
                    &CRD017,
                    &ap,
                    E::Invalid(Some(quote(k)), p),
                    &[ap[0], ap[1], Seg::K(k)],
                );
            }
        }
        const LIMIT: usize = 256 * 1024;
        if total > LIMIT {
            r.report(&CRD018, &ap, E::TooLong(LIMIT));
        }
    }
    // validateAPIApproval
    let protected = group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io");
    if protected {
        let value = str_of(&meta["annotations"][APPROVAL]);
        let at = [Seg::F("metadata"), Seg::F("annotations"), Seg::K(APPROVAL)];
        if value.is_empty() {
            r.report(
                &CRD005,
                &at,
                E::Required(format!(
                    "protected groups must have approval annotation {}, {PROTECTED_NOTE}",
                    quote(APPROVAL)
                )),
            );
        } else if !value.starts_with("unapproved") && !util::parses_as_request_uri(value) {
            r.report(
                &CRD006,
                &at,
                E::Invalid(
                    Some(quote(value)),
                    format!(
                        "protected groups must have approval annotation {} with either a URL or \
                         a reason starting with \"unapproved\", {PROTECTED_NOTE}",
                        quote(APPROVAL)
                    ),
                ),
            );
        }
    }
}

fn check_names(
    r: &mut Rep<'_, '_>,
    names: &Value,
    plural: &str,
    singular: &str,
    kind: &str,
    list_kind: &str,
) {
    let at = |f: &'static str| [Seg::F("spec"), Seg::F("names"), Seg::F(f)];
    for (f, value, lower) in [
        ("plural", plural, false),
        ("singular", singular, false),
        ("kind", kind, true),
        ("listKind", list_kind, true),
    ] {
        if value.is_empty() {
            continue;
        }
        let errs = if lower {
            dns1035_label(&value.to_lowercase())
        } else {
            dns1035_label(value)
        };
        if !errs.is_empty() {
            let prefix = if lower {
                "may have mixed case, but should otherwise match: "
            } else {
                ""
            };
            r.report(
                &CRD009,
                &at(f),
                E::Invalid(Some(quote(value)), format!("{prefix}{}", errs.join(","))),
            );
        }
    }
    for f in ["shortNames", "categories"] {
        for (i, s) in strings(&names[f]).into_iter().enumerate() {
            let errs = dns1035_label(s);
            if !errs.is_empty() {
                r.report(
                    &CRD009,
                    &[Seg::F("spec"), Seg::F("names"), Seg::F(f), Seg::I(i)],
                    E::Invalid(Some(quote(s)), errs.join(",")),
                );
            }
        }
    }
    if !kind.is_empty() && kind == list_kind {
        r.report(
            &CRD009,
            &at("listKind"),
            E::Invalid(
                Some(quote(list_kind)),
                "kind and listKind may not be the same".into(),
            ),
        );
    }
}

fn deprecation(r: &mut Rep<'_, '_>, ver: &Value, base: &[Seg<'_>]) {
    let Some(w) = present(ver.get("deprecationWarning")) else {
        return;
    };
    let w = str_of(w);
    let at = [base[0], base[1], base[2], Seg::F("deprecationWarning")];
    let mut errs = Vec::new();
    if !ver["deprecated"].as_bool().unwrap_or(false) {
        errs.push("can only be set for deprecated versions".to_owned());
    } else {
        if w.len() > 256 {
            errs.push("must be <= 256 characters long".into());
        }
        if w.is_empty() {
            errs.push("must not be an empty string".into());
        }
        if let Some((i, _)) = w
            .char_indices()
            .find(|(_, c)| c.is_control() || (c.is_whitespace() && *c != ' '))
        {
            errs.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at \
                 index {i}"
            ));
        }
    }
    for e in errs {
        r.report(&CRD010, &at, E::Invalid(Some(quote(w)), e));
    }
}

fn simple_json_path(s: &str) -> Option<&'static str> {
    if s.is_empty() {
        Some("must not be empty")
    } else if !s.starts_with('.') {
        Some("must be a simple json path starting with .")
    } else {
        None
    }
}

fn subresources<'o>(r: &mut Rep<'_, '_>, sub: &'o Value, base: &[Seg<'o>]) {
    let Some(scale) = present(sub.get("scale")) else {
        return;
    };
    let mut at = base.to_vec();
    at.extend([Seg::F("subresources"), Seg::F("scale"), Seg::F("")]);
    let last = at.len() - 1;
    for (field, prefixes, under) in [
        (
            "specReplicasPath",
            &[".spec."][..],
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            &[".status."][..],
            "should be a json path under .status",
        ),
    ] {
        at[last] = Seg::F(field);
        let p = str_of(&scale[field]);
        if p.is_empty() {
            r.report(&CRD002, &at, E::Required(String::new()));
        } else if let Some(e) = simple_json_path(p) {
            r.report(&CRD013, &at, E::Invalid(Some(quote(p)), e.into()));
        } else if !prefixes.iter().any(|pre| p.starts_with(pre)) {
            r.report(&CRD013, &at, E::Invalid(Some(quote(p)), under.into()));
        }
    }
    let p = str_of(&scale["labelSelectorPath"]);
    if !p.is_empty() {
        at[last] = Seg::F("labelSelectorPath");
        if let Some(e) = simple_json_path(p) {
            r.report(&CRD013, &at, E::Invalid(Some(quote(p)), e.into()));
        } else if !p.starts_with(".spec.") && !p.starts_with(".status.") {
            r.report(
                &CRD013,
                &at,
                E::Invalid(
                    Some(quote(p)),
                    "should be a json path under either .spec or .status".into(),
                ),
            );
        }
    }
}

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";

fn columns<'o>(r: &mut Rep<'_, '_>, cols: &'o Value, base: &[Seg<'o>], beta: bool) {
    let Some(cols) = cols.as_array() else { return };
    let json_path_key = if beta { "JSONPath" } else { "jsonPath" };
    for (i, col) in cols.iter().enumerate() {
        let mut at = base.to_vec();
        at.extend([Seg::F("additionalPrinterColumns"), Seg::I(i), Seg::F("")]);
        let last = at.len() - 1;
        at[last] = Seg::F("name");
        if str_of(&col["name"]).is_empty() {
            r.report(&CRD002, &at, E::Required(String::new()));
        }
        at[last] = Seg::F("type");
        let ty = str_of(&col["type"]);
        let must = format!("must be one of {COLUMN_TYPES}");
        if ty.is_empty() {
            r.report(&CRD002, &at, E::Required(must));
        } else if !COLUMN_TYPES.split(',').any(|t| t == ty) {
            r.report(&CRD014, &at, E::Invalid(Some(quote(ty)), must));
        }
        let format = str_of(&col["format"]);
        if !format.is_empty() && !COLUMN_FORMATS.split(',').any(|f| f == format) {
            at[last] = Seg::F("format");
            r.report(
                &CRD014,
                &at,
                E::Invalid(
                    Some(quote(format)),
                    format!("must be one of {COLUMN_FORMATS}"),
                ),
            );
        }
        at[last] = Seg::F(json_path_key);
        let jp = str_of(&col[json_path_key]);
        if jp.is_empty() {
            r.report(&CRD002, &at, E::Required(String::new()));
        } else if let Some(e) = simple_json_path(jp) {
            r.report(&CRD014, &at, E::Invalid(Some(quote(jp)), e.into()));
        }
    }
}

/// v1beta1 only: top-level vs per-version fields (v1 has no top-level form; identical
/// per-version values are folded into the top level when v1 is converted).
fn exclusive(r: &mut Rep<'_, '_>, spec: &Value, versions: &[Version<'_>]) {
    let per = |key: &str| -> Vec<Option<&Value>> {
        versions
            .iter()
            .map(|v| {
                v.value.and_then(|x| {
                    present(x.get(key)).filter(|c| {
                        !(key == "additionalPrinterColumns"
                            && c.as_array().is_some_and(Vec::is_empty))
                    })
                })
            })
            .collect()
    };
    for (top, key, what, identical) in [
        (
            "validation",
            "schema",
            "schemas",
            "per-version schemas may not all be set to identical values (top-level validation \
             should be used instead)",
        ),
        (
            "subresources",
            "subresources",
            "subresources",
            "per-version subresources may not all be set to identical values (top-level \
             subresources should be used instead)",
        ),
        (
            "additionalPrinterColumns",
            "additionalPrinterColumns",
            "additionalPrinterColumns",
            "per-version additionalPrinterColumns may not all be set to identical values \
             (top-level additionalPrinterColumns should be used instead)",
        ),
    ] {
        let values = per(key);
        let top_set = present(spec.get(top)).is_some_and(|t| {
            top != "additionalPrinterColumns" || t.as_array().is_some_and(|a| !a.is_empty())
        });
        if top_set && values.iter().any(Option::is_some) {
            r.report(
                &CRD011,
                &[Seg::F("spec"), Seg::F(top)],
                E::Forbidden(format!(
                    "top-level and per-version {what} are mutually exclusive"
                )),
            );
        }
        if let Some(Some(first)) = values.first()
            && values.iter().all(|v| v.is_some_and(|v| v == *first))
        {
            r.report(
                &CRD012,
                &[Seg::F("spec"), Seg::F("versions")],
                E::Invalid(None, identical.into()),
            );
        }
    }
}

fn conversion(r: &mut Rep<'_, '_>, spec: &Value, beta: bool, puf: bool) {
    let Some(conv) = present(spec.get("conversion")) else {
        return;
    };
    let strategy = str_of(&conv["strategy"]);
    let st = [Seg::F("spec"), Seg::F("conversion"), Seg::F("strategy")];
    if strategy != "None" && puf {
        r.report(
            &CRD015,
            &st,
            E::Invalid(
                Some(quote(strategy)),
                "must be None if spec.preserveUnknownFields is true".into(),
            ),
        );
    }
    match strategy {
        "" => r.report(&CRD002, &st, E::Required(String::new())),
        "None" | "Webhook" => {}
        other => r.report(
            &CRD008,
            &st,
            E::NotSupported(other.into(), &["None", "Webhook"]),
        ),
    }
    let (cc_path, crv_path): (Vec<Seg<'_>>, Vec<Seg<'_>>) = if beta {
        (
            vec![
                Seg::F("spec"),
                Seg::F("conversion"),
                Seg::F("webhookClientConfig"),
            ],
            vec![
                Seg::F("spec"),
                Seg::F("conversion"),
                Seg::F("conversionReviewVersions"),
            ],
        )
    } else {
        (
            vec![
                Seg::F("spec"),
                Seg::F("conversion"),
                Seg::F("webhook"),
                Seg::F("clientConfig"),
            ],
            vec![
                Seg::F("spec"),
                Seg::F("conversion"),
                Seg::F("webhook"),
                Seg::F("conversionReviewVersions"),
            ],
        )
    };
    let node = |segs: &[Seg<'_>]| present(conv.pointer(&pointer(&segs[2..])));
    let cc = node(&cc_path);
    let mut crv = node(&crv_path).map(strings).unwrap_or_default();
    if strategy == "Webhook" {
        if beta && crv.is_empty() {
            crv = vec!["v1beta1"];
        }
        match cc {
            None => r.report(
                &CRD002,
                &cc_path,
                E::Required("required when strategy is set to Webhook".into()),
            ),
            Some(cc) => webhook_client(r, cc, &cc_path),
        }
        if crv.is_empty() {
            r.report(&CRD002, &crv_path, E::Required(String::new()));
        } else {
            let mut seen = std::collections::HashSet::new();
            for (i, v) in crv.iter().enumerate() {
                let mut at = crv_path.clone();
                at.push(Seg::I(i));
                if !seen.insert(*v) {
                    r.report(
                        &CRD015,
                        &at,
                        E::Invalid(Some(quote(v)), "duplicate version".into()),
                    );
                    continue;
                }
                for e in dns1035_label(v) {
                    r.report(&CRD015, &at, E::Invalid(Some(quote(v)), e));
                }
            }
            if !crv.iter().any(|v| *v == "v1" || *v == "v1beta1") {
                r.report(
                    &CRD015,
                    &crv_path,
                    E::Invalid(None, "must include at least one of v1, v1beta1".into()),
                );
            }
        }
    } else {
        let forbidden =
            || E::Forbidden("should not be set when strategy is not set to Webhook".into());
        if cc.is_some() {
            r.report(&CRD016, &cc_path, forbidden());
        }
        if !crv.is_empty() {
            r.report(&CRD016, &crv_path, forbidden());
        }
    }
}

fn webhook_client(r: &mut Rep<'_, '_>, cc: &Value, base: &[Seg<'_>]) {
    let url = present(cc.get("url"));
    let service = present(cc.get("service"));
    let with = |f: &'static str| {
        let mut v = base.to_vec();
        v.push(Seg::F(f));
        v
    };
    match (url, service) {
        (Some(_), Some(_)) | (None, None) => r.report(
            &CRD002,
            base,
            E::Required("exactly one of url or service is required".into()),
        ),
        (Some(u), None) => {
            let at = with("url");
            let u = str_of(u);
            const FORM: &str = "; desired format: https://host[/path]";
            let (scheme, rest) = u.split_once("://").unwrap_or(("", u));
            let scheme = if u.contains("://") { scheme } else { "" };
            if scheme != "https" {
                r.report(
                    &CRD015,
                    &at,
                    E::Invalid(
                        Some(quote(scheme)),
                        format!("'https' is the only allowed URL scheme{FORM}"),
                    ),
                );
            }
            let authority = if u.contains("://") {
                rest.split(['/', '?', '#']).next().unwrap_or_default()
            } else {
                ""
            };
            let (user, host) = match authority.rsplit_once('@') {
                Some((u, h)) => (Some(u), h),
                None => (None, authority),
            };
            if host.is_empty() {
                r.report(
                    &CRD015,
                    &at,
                    E::Invalid(Some(quote(host)), format!("host must be specified{FORM}")),
                );
            }
            if let Some(user) = user {
                r.report(
                    &CRD015,
                    &at,
                    E::Invalid(
                        Some(quote(user)),
                        "user information is not permitted in the URL".into(),
                    ),
                );
            }
            let (before_frag, frag) = u.split_once('#').unwrap_or((u, ""));
            if !frag.is_empty() {
                r.report(
                    &CRD015,
                    &at,
                    E::Invalid(
                        Some(quote(frag)),
                        "fragments are not permitted in the URL".into(),
                    ),
                );
            }
            if let Some((_, q)) = before_frag.split_once('?')
                && !q.is_empty()
            {
                r.report(
                    &CRD015,
                    &at,
                    E::Invalid(
                        Some(quote(q)),
                        "query parameters are not permitted in the URL".into(),
                    ),
                );
            }
        }
        (None, Some(svc)) => {
            let base = with("service");
            let sub = |f: &'static str| {
                let mut v = base.clone();
                v.push(Seg::F(f));
                v
            };
            if str_of(&svc["name"]).is_empty() {
                r.report(
                    &CRD002,
                    &sub("name"),
                    E::Required("service name is required".into()),
                );
            }
            if str_of(&svc["namespace"]).is_empty() {
                r.report(
                    &CRD002,
                    &sub("namespace"),
                    E::Required("service namespace is required".into()),
                );
            }
            if let Some(port) = present(svc.get("port")) {
                let ok = port.as_i64().is_some_and(|p| (1..=65535).contains(&p));
                if !ok {
                    r.report(
                        &CRD015,
                        &sub("port"),
                        E::Invalid(
                            Some(show(port)),
                            "port is not valid: must be between 1 and 65535, inclusive".into(),
                        ),
                    );
                }
            }
            let path = str_of(&svc["path"]);
            for e in service_path_problems(path) {
                r.report(&CRD015, &sub("path"), E::Invalid(Some(quote(path)), e));
            }
        }
    }
}

fn service_path_problems(p: &str) -> Vec<String> {
    if p.is_empty() || p == "/" {
        return Vec::new();
    }
    if p == "//" {
        return vec!["segment[0] may not be empty".into()];
    }
    let mut errs = Vec::new();
    let rest = match p.strip_prefix('/') {
        Some(r) => r,
        None => {
            errs.push("must start with a '/'".into());
            &p[p.chars().next().map_or(0, char::len_utf8)..]
        }
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            errs.push(format!("segment[{i}] may not be empty"));
            continue;
        }
        for e in dns1123_subdomain(step) {
            errs.push(format!("segment[{i}]: {e}"));
        }
    }
    errs
}

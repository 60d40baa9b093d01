//! The file-based catalog model: `olm.package`, `olm.channel`, `olm.bundle`,
//! `olm.deprecations` and any other schema kept as it is, decoded with Go's rules (field names
//! matched case-insensitively, the last of repeated keys wins) and encoded in opm's field order.

use std::collections::BTreeMap;

use base64::Engine;
use opship_core::yaml::Origin;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// `olm.package`.
pub const SCHEMA_PACKAGE: &str = "olm.package";
/// `olm.channel`.
pub const SCHEMA_CHANNEL: &str = "olm.channel";
/// `olm.bundle`.
pub const SCHEMA_BUNDLE: &str = "olm.bundle";
/// `olm.deprecations`.
pub const SCHEMA_DEPRECATIONS: &str = "olm.deprecations";

/// A whole catalog (or a part of one: a rendered bundle, a package).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// `olm.package` blobs.
    pub packages: Vec<Package>,
    /// `olm.channel` blobs.
    pub channels: Vec<Channel>,
    /// `olm.bundle` blobs.
    pub bundles: Vec<Bundle>,
    /// `olm.deprecations` blobs.
    pub deprecations: Vec<Deprecation>,
    /// Blobs of any other schema, kept verbatim.
    pub others: Vec<Meta>,
}

impl Catalog {
    /// Appends everything of `other`.
    pub fn merge(&mut self, other: Catalog) {
        self.packages.extend(other.packages);
        self.channels.extend(other.channels);
        self.bundles.extend(other.bundles);
        self.deprecations.extend(other.deprecations);
        self.others.extend(other.others);
    }

    /// The names of all packages mentioned anywhere, sorted.
    pub fn package_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .packages
            .iter()
            .map(|p| p.name.clone())
            .chain(self.channels.iter().map(|c| c.package.clone()))
            .chain(self.bundles.iter().map(|b| b.package.clone()))
            .chain(self.deprecations.iter().map(|d| d.package.clone()))
            .chain(self.others.iter().map(|o| o.package.clone()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The part of the catalog that belongs to `package`.
    pub fn package(&self, package: &str) -> Catalog {
        Catalog {
            packages: self
                .packages
                .iter()
                .filter(|p| p.name == package)
                .cloned()
                .collect(),
            channels: self
                .channels
                .iter()
                .filter(|c| c.package == package)
                .cloned()
                .collect(),
            bundles: self
                .bundles
                .iter()
                .filter(|b| b.package == package)
                .cloned()
                .collect(),
            deprecations: self
                .deprecations
                .iter()
                .filter(|d| d.package == package)
                .cloned()
                .collect(),
            others: self
                .others
                .iter()
                .filter(|o| o.package == package)
                .cloned()
                .collect(),
        }
    }

    /// The bundle's `olm.package` version per bundle name (bundles without a parseable
    /// version are left out).
    pub fn versions(&self) -> BTreeMap<(String, String), semver::Version> {
        let mut out = BTreeMap::new();
        for b in &self.bundles {
            if let Some(v) = b.version().and_then(|v| semver::Version::parse(&v).ok()) {
                out.insert((b.package.clone(), b.name.clone()), v);
            }
        }
        out
    }
}

/// A package icon.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Icon {
    /// The decoded image bytes (`None` when the field was absent or null).
    pub data: Option<Vec<u8>>,
    /// Its media type.
    pub media_type: String,
}

/// `olm.package`.
#[derive(Debug, Clone, Default)]
pub struct Package {
    /// The package name.
    pub name: String,
    /// The channel installs follow by default.
    pub default_channel: String,
    /// Optional icon.
    pub icon: Option<Icon>,
    /// Optional description.
    pub description: String,
    /// Optional properties.
    pub properties: Vec<Property>,
    /// Where the blob was read.
    pub origin: Option<Origin>,
}

/// One entry of a channel: a bundle and its upgrade edges.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChannelEntry {
    /// The bundle name.
    pub name: String,
    /// The bundle this one replaces.
    pub replaces: String,
    /// Bundles this one skips.
    pub skips: Vec<String>,
    /// Versions that may upgrade straight to this one.
    pub skip_range: String,
}

/// `olm.channel`.
#[derive(Debug, Clone, Default)]
pub struct Channel {
    /// The channel name.
    pub name: String,
    /// The package it belongs to.
    pub package: String,
    /// The entries, in the file's order.
    pub entries: Vec<ChannelEntry>,
    /// Optional properties (internal use).
    pub properties: Vec<Property>,
    /// Where the blob was read.
    pub origin: Option<Origin>,
}

/// A property: a type and a JSON value kept as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// `olm.package`, `olm.gvk`, ...
    pub typ: String,
    /// The value.
    pub value: Value,
    /// The value's text has `<`, `>` and `&` escaped (`\u003c`...), as in JSON catalogs
    /// written by Go's `json.Marshal`; opm's writer copies such raw text unchanged.
    pub html_escaped: bool,
}

impl Property {
    /// A property whose value is written as it is.
    pub fn new(typ: impl Into<String>, value: Value) -> Self {
        Property {
            typ: typ.into(),
            value,
            html_escaped: false,
        }
    }

    /// A property whose value opm builds itself (its `property` package encodes without HTML
    /// escaping, so this is [`Property::new`] under a name that says where it comes from).
    pub fn built(typ: impl Into<String>, value: Value) -> Self {
        Property::new(typ, value)
    }
}

/// An image a bundle needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RelatedImage {
    /// Optional name (written even when empty).
    pub name: String,
    /// The pull spec.
    pub image: String,
}

/// `olm.bundle`.
#[derive(Debug, Clone, Default)]
pub struct Bundle {
    /// The bundle name (the CSV name).
    pub name: String,
    /// The package.
    pub package: String,
    /// The bundle image reference.
    pub image: String,
    /// Properties.
    pub properties: Vec<Property>,
    /// Related images.
    pub related_images: Vec<RelatedImage>,
    /// Where the blob was read.
    pub origin: Option<Origin>,
}

impl Bundle {
    /// The `olm.package` property values.
    pub fn package_properties(&self) -> Vec<&Value> {
        self.properties
            .iter()
            .filter(|p| p.typ == "olm.package")
            .map(|p| &p.value)
            .collect()
    }

    /// The version of the (first) `olm.package` property.
    pub fn version(&self) -> Option<String> {
        self.package_properties()
            .first()
            .and_then(|v| v.get("version"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The `olm.bundle.object` / `olm.csv.metadata` ClusterServiceVersion, decoded.
    pub fn csv(&self) -> Option<Value> {
        for p in &self.properties {
            if p.typ == "olm.bundle.object"
                && let Some(obj) = p
                    .value
                    .get("data")
                    .and_then(Value::as_str)
                    .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                && obj.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion")
            {
                return Some(obj);
            }
        }
        None
    }
}

/// The target of a deprecation entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reference {
    /// `olm.package`, `olm.channel` or `olm.bundle`.
    pub schema: String,
    /// The channel or bundle name (empty for the package).
    pub name: String,
}

/// One deprecation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeprecationEntry {
    /// What is deprecated.
    pub reference: Reference,
    /// What users are told.
    pub message: String,
}

/// `olm.deprecations`.
#[derive(Debug, Clone, Default)]
pub struct Deprecation {
    /// The package.
    pub package: String,
    /// The entries.
    pub entries: Vec<DeprecationEntry>,
    /// Where the blob was read.
    pub origin: Option<Origin>,
}

/// A blob of a schema opship does not model, kept verbatim.
#[derive(Debug, Clone)]
pub struct Meta {
    /// Its schema.
    pub schema: String,
    /// Its package (may be empty).
    pub package: String,
    /// Its name (may be empty).
    pub name: String,
    /// The whole blob.
    pub blob: Value,
    /// Where the blob was read.
    pub origin: Option<Origin>,
}

/// Looks a field up the way Go's decoder matches struct fields: case-insensitively, the last
/// matching key winning.
pub fn field<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    map.iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

/// Decoding context: names the Go type and field in errors, as Go does.
struct Ctx<'a> {
    ty: &'a str,
}

impl Ctx<'_> {
    fn err(&self, field: &str, want: &str, got: &Value) -> String {
        let kind = match got {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        format!(
            "json: cannot unmarshal {kind} into Go struct field {}.{field} of type {want}",
            self.ty
        )
    }

    fn string(&self, map: &Map<String, Value>, name: &str) -> Result<String, String> {
        match field(map, name) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.err(name, "string", other)),
        }
    }

    fn strings(&self, map: &Map<String, Value>, name: &str) -> Result<Vec<String>, String> {
        match field(map, name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s.clone()),
                    Value::Null => Ok(String::new()),
                    other => Err(self.err(name, "string", other)),
                })
                .collect(),
            Some(other) => Err(self.err(name, "[]string", other)),
        }
    }

    fn object<'v>(
        &self,
        v: &'v Value,
        name: &str,
    ) -> Result<Option<&'v Map<String, Value>>, String> {
        match v {
            Value::Null => Ok(None),
            Value::Object(m) => Ok(Some(m)),
            other => Err(self.err(name, name, other)),
        }
    }

    fn list<'v>(&self, map: &'v Map<String, Value>, name: &str) -> Result<&'v [Value], String> {
        match field(map, name) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.err(name, "array", other)),
        }
    }

    fn properties(&self, map: &Map<String, Value>) -> Result<Vec<Property>, String> {
        let ctx = Ctx { ty: "Property" };
        self.list(map, "properties")?
            .iter()
            .filter_map(|p| match ctx.object(p, "properties") {
                Ok(None) => None,
                Ok(Some(m)) => Some(Ok(Property {
                    typ: match ctx.string(m, "type") {
                        Ok(t) => t,
                        Err(e) => return Some(Err(e)),
                    },
                    value: field(m, "value").cloned().unwrap_or(Value::Null),
                    html_escaped: false,
                })),
                Err(e) => Some(Err(e)),
            })
            .collect()
    }
}

impl Package {
    /// Decodes a blob.
    pub fn from_value(map: &Map<String, Value>) -> Result<Self, String> {
        let c = Ctx { ty: "Package" };
        let icon = match field(map, "icon") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => {
                let ic = Ctx { ty: "Icon" };
                let data = match field(m, "base64data") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(decode_base64(s).map_err(|e| {
                        format!("illegal base64 data in Package.icon.base64data: {e}")
                    })?),
                    Some(other) => return Err(ic.err("base64data", "[]uint8", other)),
                };
                Some(Icon {
                    data,
                    media_type: ic.string(m, "mediatype")?,
                })
            }
            Some(other) => return Err(c.err("icon", "declcfg.Icon", other)),
        };
        Ok(Package {
            name: c.string(map, "name")?,
            default_channel: c.string(map, "defaultChannel")?,
            icon,
            description: c.string(map, "description")?,
            properties: c.properties(map)?,
            origin: None,
        })
    }

    /// The blob in opm's field order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("schema".into(), SCHEMA_PACKAGE.into());
        m.insert("name".into(), self.name.clone().into());
        m.insert("defaultChannel".into(), self.default_channel.clone().into());
        if let Some(icon) = &self.icon {
            let mut i = Map::new();
            i.insert(
                "base64data".into(),
                match &icon.data {
                    Some(d) => base64::engine::general_purpose::STANDARD.encode(d).into(),
                    None => Value::Null,
                },
            );
            i.insert("mediatype".into(), icon.media_type.clone().into());
            m.insert("icon".into(), Value::Object(i));
        }
        if !self.description.is_empty() {
            m.insert("description".into(), self.description.clone().into());
        }
        if !self.properties.is_empty() {
            m.insert("properties".into(), properties_value(&self.properties));
        }
        Value::Object(m)
    }
}

/// Go's `[]byte` JSON decoding: standard base64 with padding; line breaks are ignored.
fn decode_base64(s: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let cleaned: String = s.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    base64::engine::general_purpose::STANDARD.decode(cleaned)
}

impl Channel {
    /// Decodes a blob.
    pub fn from_value(map: &Map<String, Value>) -> Result<Self, String> {
        let c = Ctx { ty: "Channel" };
        let ec = Ctx { ty: "ChannelEntry" };
        let mut entries = Vec::new();
        for e in c.list(map, "entries")? {
            let Some(m) = ec.object(e, "entries")? else {
                entries.push(ChannelEntry::default());
                continue;
            };
            entries.push(ChannelEntry {
                name: ec.string(m, "name")?,
                replaces: ec.string(m, "replaces")?,
                skips: ec.strings(m, "skips")?,
                skip_range: ec.string(m, "skipRange")?,
            });
        }
        Ok(Channel {
            name: c.string(map, "name")?,
            package: c.string(map, "package")?,
            entries,
            properties: c.properties(map)?,
            origin: None,
        })
    }

    /// The blob in opm's field order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("schema".into(), SCHEMA_CHANNEL.into());
        m.insert("name".into(), self.name.clone().into());
        m.insert("package".into(), self.package.clone().into());
        m.insert(
            "entries".into(),
            Value::Array(
                self.entries
                    .iter()
                    .map(|e| {
                        let mut em = Map::new();
                        em.insert("name".into(), e.name.clone().into());
                        if !e.replaces.is_empty() {
                            em.insert("replaces".into(), e.replaces.clone().into());
                        }
                        if !e.skips.is_empty() {
                            em.insert(
                                "skips".into(),
                                Value::Array(e.skips.iter().map(|s| s.clone().into()).collect()),
                            );
                        }
                        if !e.skip_range.is_empty() {
                            em.insert("skipRange".into(), e.skip_range.clone().into());
                        }
                        Value::Object(em)
                    })
                    .collect(),
            ),
        );
        if !self.properties.is_empty() {
            m.insert("properties".into(), properties_value(&self.properties));
        }
        Value::Object(m)
    }
}

impl Bundle {
    /// Decodes a blob.
    pub fn from_value(map: &Map<String, Value>) -> Result<Self, String> {
        let c = Ctx { ty: "Bundle" };
        let rc = Ctx { ty: "RelatedImage" };
        let mut related_images = Vec::new();
        for r in c.list(map, "relatedImages")? {
            let Some(m) = rc.object(r, "relatedImages")? else {
                related_images.push(RelatedImage::default());
                continue;
            };
            related_images.push(RelatedImage {
                name: rc.string(m, "name")?,
                image: rc.string(m, "image")?,
            });
        }
        Ok(Bundle {
            name: c.string(map, "name")?,
            package: c.string(map, "package")?,
            image: c.string(map, "image")?,
            properties: c.properties(map)?,
            related_images,
            origin: None,
        })
    }

    /// The blob in opm's field order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("schema".into(), SCHEMA_BUNDLE.into());
        if !self.name.is_empty() {
            m.insert("name".into(), self.name.clone().into());
        }
        if !self.package.is_empty() {
            m.insert("package".into(), self.package.clone().into());
        }
        m.insert("image".into(), self.image.clone().into());
        if !self.properties.is_empty() {
            m.insert("properties".into(), properties_value(&self.properties));
        }
        if !self.related_images.is_empty() {
            m.insert(
                "relatedImages".into(),
                Value::Array(
                    self.related_images
                        .iter()
                        .map(|r| {
                            let mut rm = Map::new();
                            rm.insert("name".into(), r.name.clone().into());
                            rm.insert("image".into(), r.image.clone().into());
                            Value::Object(rm)
                        })
                        .collect(),
                ),
            );
        }
        Value::Object(m)
    }
}

impl Deprecation {
    /// Decodes a blob.
    pub fn from_value(map: &Map<String, Value>) -> Result<Self, String> {
        let c = Ctx { ty: "Deprecation" };
        let ec = Ctx {
            ty: "DeprecationEntry",
        };
        let rc = Ctx {
            ty: "PackageScopedReference",
        };
        let mut entries = Vec::new();
        for e in c.list(map, "entries")? {
            let Some(m) = ec.object(e, "entries")? else {
                entries.push(DeprecationEntry::default());
                continue;
            };
            let reference = match field(m, "reference") {
                None | Some(Value::Null) => Reference::default(),
                Some(Value::Object(r)) => Reference {
                    schema: rc.string(r, "schema")?,
                    name: rc.string(r, "name")?,
                },
                Some(other) => return Err(ec.err("reference", "PackageScopedReference", other)),
            };
            entries.push(DeprecationEntry {
                reference,
                message: ec.string(m, "message")?,
            });
        }
        Ok(Deprecation {
            package: c.string(map, "package")?,
            entries,
            origin: None,
        })
    }

    /// The blob in opm's field order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("schema".into(), SCHEMA_DEPRECATIONS.into());
        m.insert("package".into(), self.package.clone().into());
        m.insert(
            "entries".into(),
            Value::Array(
                self.entries
                    .iter()
                    .map(|e| {
                        let mut r = Map::new();
                        r.insert("schema".into(), e.reference.schema.clone().into());
                        if !e.reference.name.is_empty() {
                            r.insert("name".into(), e.reference.name.clone().into());
                        }
                        let mut em = Map::new();
                        em.insert("reference".into(), Value::Object(r));
                        em.insert("message".into(), e.message.clone().into());
                        Value::Object(em)
                    })
                    .collect(),
            ),
        );
        Value::Object(m)
    }
}

fn properties_value(props: &[Property]) -> Value {
    Value::Array(
        props
            .iter()
            .map(|p| {
                let mut m = Map::new();
                m.insert("type".into(), p.typ.clone().into());
                m.insert("value".into(), p.value.clone());
                Value::Object(m)
            })
            .collect(),
    )
}

/// The case-folded `schema`, `package` and `name` of a blob, as opm's `Meta` reads them; two
/// keys that fold to the same name are an error.
pub fn meta_keys(map: &Map<String, Value>) -> Result<(String, String, String), String> {
    let mut out: [Option<String>; 3] = [None, None, None];
    for (k, v) in map {
        let idx = match k.to_lowercase().as_str() {
            "schema" => 0,
            "package" => 1,
            "name" => 2,
            _ => continue,
        };
        if out[idx].is_some() {
            return Err(format!(
                "duplicate key {:?} in blob",
                ["schema", "package", "name"][idx]
            ));
        }
        out[idx] = Some(match v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => {
                return Err(format!(
                    "expected value for key {:?} to be a string, got {}",
                    ["schema", "package", "name"][idx],
                    other
                ));
            }
        });
    }
    let [s, p, n] = out;
    Ok((
        s.unwrap_or_default(),
        p.unwrap_or_default(),
        n.unwrap_or_default(),
    ))
}

/// Adds one blob to a catalog, decoded by its schema.
pub fn add_blob(cat: &mut Catalog, blob: Value, origin: Option<Origin>) -> Result<()> {
    let loc = origin.as_ref().map(|o| o.to_string()).unwrap_or_default();
    let Value::Object(map) = &blob else {
        return Err(Error::parse(
            loc,
            format!(
                "a catalog blob must be a JSON object, found {}",
                crate::gojson::to_string(&blob, crate::gojson::COMPACT)
            ),
        ));
    };
    let (schema, package, name) = meta_keys(map).map_err(|e| Error::parse(loc.clone(), e))?;
    let wrap = |what: &str, e: String| Error::parse(loc.clone(), format!("parse {what}: {e}"));
    match schema.as_str() {
        SCHEMA_PACKAGE => {
            let mut p = Package::from_value(map).map_err(|e| wrap("package", e))?;
            p.origin = origin;
            cat.packages.push(p);
        }
        SCHEMA_CHANNEL => {
            let mut c = Channel::from_value(map).map_err(|e| wrap("channel", e))?;
            c.origin = origin;
            cat.channels.push(c);
        }
        SCHEMA_BUNDLE => {
            let mut b = Bundle::from_value(map).map_err(|e| wrap("bundle", e))?;
            b.origin = origin;
            cat.bundles.push(b);
        }
        SCHEMA_DEPRECATIONS => {
            let mut d = Deprecation::from_value(map).map_err(|e| wrap("deprecations", e))?;
            d.origin = origin;
            cat.deprecations.push(d);
        }
        "" => {
            return Err(Error::parse(
                loc,
                format!(
                    "object '{}' is missing root schema field",
                    crate::gojson::to_string(&blob, crate::gojson::COMPACT)
                ),
            ));
        }
        _ => cat.others.push(Meta {
            schema,
            package,
            name,
            blob,
            origin,
        }),
    }
    Ok(())
}

//! Catalog templates with opm's semantics: `basic` (an FBC stream, plain or wrapped in
//! `schema: olm.template.basic`, whose image-only bundles are rendered) and `semver` (major
//! and minor channels per archetype generated from bundle versions). Bundle references are
//! rendered through a callback, so directories, layouts and registries all work.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::model::{self, Bundle, Catalog, Channel, ChannelEntry, Package};

/// Renders one bundle reference.
pub type Renderer<'a> = dyn Fn(&str) -> Result<Bundle> + 'a;

/// `basic`: the blobs of the template with every `{schema: olm.bundle, image: REF}` replaced
/// by the rendered bundle.
pub fn basic(text: &str, file: &Path, render: &Renderer<'_>) -> Result<Catalog> {
    let mut blobs = crate::load::blobs(text, file)?;
    // The wrapped form (opm >= 1.44): one document `{schema: olm.template.basic, entries}`.
    if blobs.len() == 1
        && let Value::Object(m) = &blobs[0].0
        && model::field(m, "schema").and_then(Value::as_str) == Some("olm.template.basic")
    {
        let origin = blobs[0].1.clone();
        let entries = match model::field(m, "entries") {
            Some(Value::Array(a)) => a.clone(),
            None | Some(Value::Null) => Vec::new(),
            Some(_) => {
                return Err(Error::parse(
                    origin.to_string(),
                    "`entries` of an olm.template.basic must be a list of FBC blobs",
                ));
            }
        };
        blobs = entries.into_iter().map(|e| (e, origin.clone())).collect();
    }
    let mut cat = Catalog::default();
    for (blob, origin) in blobs {
        if let Value::Object(m) = &blob
            && let Ok((schema, _, _)) = model::meta_keys(m)
            && schema == model::SCHEMA_BUNDLE
        {
            let b = Bundle::from_value(m).map_err(|e| Error::parse(origin.to_string(), e))?;
            if b.image.is_empty()
                || !b.package.is_empty()
                || !b.properties.is_empty()
                || !b.related_images.is_empty()
            {
                return Err(Error::parse(
                    origin.to_string(),
                    "unexpected fields present in basic template bundle",
                ));
            }
            cat.bundles.push(render(&b.image)?);
            continue;
        }
        model::add_blob(&mut cat, blob, Some(origin))?;
    }
    Ok(cat)
}

const ARCHETYPES: [&str; 3] = ["candidate", "fast", "stable"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Major,
    Minor,
}

/// The `olm.semver` template document.
#[derive(Debug, Default)]
struct SemverTemplate {
    major: bool,
    minor: bool,
    preference: String,
    bundles: BTreeMap<&'static str, Vec<String>>,
}

fn parse_semver(text: &str, file: &Path) -> Result<SemverTemplate> {
    let blobs = crate::load::blobs(text, file)?;
    let [(Value::Object(m), origin)] = blobs.as_slice() else {
        return Err(Error::parse(
            opship_core::paths::show(file).to_string(),
            "a semver template is one document with `schema: olm.semver`",
        ));
    };
    let loc = origin.to_string();
    let mut t = SemverTemplate::default();
    let mut schema = String::new();
    for (k, v) in m {
        let bad = |what: &str| Error::parse(loc.clone(), format!("`{k}` must be {what}"));
        match k.to_ascii_lowercase().as_str() {
            "schema" => schema = v.as_str().ok_or_else(|| bad("a string"))?.to_owned(),
            "generatemajorchannels" => t.major = v.as_bool().ok_or_else(|| bad("true or false"))?,
            "generateminorchannels" => t.minor = v.as_bool().ok_or_else(|| bad("true or false"))?,
            "defaultchanneltypepreference" => {
                t.preference = v.as_str().ok_or_else(|| bad("a string"))?.to_owned()
            }
            a @ ("candidate" | "fast" | "stable") => {
                let arch = ARCHETYPES
                    .iter()
                    .find(|x| **x == a)
                    .expect("known archetype");
                let Some(obj) = v.as_object() else {
                    return Err(bad("a mapping with `bundles`"));
                };
                let mut images = Vec::new();
                for (bk, bv) in obj {
                    if !bk.eq_ignore_ascii_case("bundles") {
                        return Err(Error::parse(
                            loc.clone(),
                            format!("unknown field `{k}.{bk}`"),
                        ));
                    }
                    for b in bv.as_array().map(Vec::as_slice).unwrap_or_default() {
                        let img = b
                            .as_object()
                            .and_then(|o| model::field(o, "image"))
                            .and_then(Value::as_str)
                            .ok_or_else(|| bad("a list of `{image: REF}`"))?;
                        images.push(img.to_owned());
                    }
                }
                t.bundles.insert(arch, images);
            }
            _ => return Err(Error::parse(loc.clone(), format!("unknown field `{k}`"))),
        }
    }
    if schema != "olm.semver" {
        return Err(Error::parse(
            loc,
            format!("schema is {schema:?}, expected \"olm.semver\""),
        ));
    }
    if !t.major && !t.minor {
        t.minor = true;
    }
    match t.preference.as_str() {
        "" => t.preference = if t.minor { "minor" } else { "major" }.into(),
        "minor" if !t.minor => {
            return Err(Error::parse(
                loc,
                "schema attribute mismatch: DefaultChannelTypePreference set to 'minor' doesn't make sense if not generating minor-version channels",
            ));
        }
        "major" if !t.major => {
            return Err(Error::parse(
                loc,
                "schema attribute mismatch: DefaultChannelTypePreference set to 'major' doesn't make sense if not generating major-version channels",
            ));
        }
        "minor" | "major" => {}
        other => {
            return Err(Error::parse(
                loc,
                format!(
                    "unknown DefaultChannelTypePreference: {other:?}\nValid values are 'major' or 'minor'"
                ),
            ));
        }
    }
    Ok(t)
}

/// `semver`: renders every referenced bundle and generates `<archetype>-v<X>` and/or
/// `<archetype>-v<X>.<Y>` channels, the default channel and the package.
pub fn semver(text: &str, file: &Path, render: &Renderer<'_>) -> Result<Catalog> {
    let t = parse_semver(text, file)?;
    let mut cat = Catalog::default();
    let mut rendered: BTreeMap<String, (Bundle, semver::Version)> = BTreeMap::new();
    let mut by_arch: BTreeMap<&str, Vec<(String, semver::Version)>> = BTreeMap::new();
    for arch in ARCHETYPES {
        for img in t.bundles.get(arch).map(Vec::as_slice).unwrap_or_default() {
            let name = match rendered.iter().find(|(_, (b, _))| &b.image == img) {
                Some((n, _)) => n.clone(),
                None => {
                    let b = render(img)?;
                    let v = b
                        .version()
                        .and_then(|v| crate::reference::parse_version(&v).ok())
                        .ok_or_else(|| {
                            Error::Usage(format!("{img}: bundle has no valid olm.package version"))
                        })?;
                    let n = b.name.clone();
                    rendered.insert(n.clone(), (b, v));
                    n
                }
            };
            let v = rendered[&name].1.clone();
            by_arch.entry(arch).or_default().push((name, v));
        }
    }
    let packages: std::collections::BTreeSet<&str> =
        rendered.values().map(|(b, _)| b.package.as_str()).collect();
    let pkg = match packages.into_iter().collect::<Vec<_>>().as_slice() {
        [one] => (*one).to_owned(),
        [] => return Err(Error::Usage("the semver template names no bundles".into())),
        many => {
            return Err(Error::Usage(format!(
                "the semver template's bundles belong to several packages: {}",
                many.join(", ")
            )));
        }
    };
    // Versions that differ only in build metadata cannot be ordered.
    let all: Vec<&semver::Version> = rendered.values().map(|(_, v)| v).collect();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            if a.major == b.major && a.minor == b.minor && a.patch == b.patch && a.pre == b.pre {
                return Err(Error::Usage(format!(
                    "bundle versions {a} and {b} cannot be ordered (they differ only in build metadata)"
                )));
            }
        }
    }

    let mut kinds = Vec::new();
    if t.major {
        kinds.push(Kind::Major);
    }
    if t.minor {
        kinds.push(Kind::Minor);
    }
    let channel_name = |arch: &str, kind: Kind, v: &semver::Version| match kind {
        Kind::Major => format!("{arch}-v{}", v.major),
        Kind::Minor => format!("{arch}-v{}.{}", v.major, v.minor),
    };
    let mut channels: BTreeMap<String, Channel> = BTreeMap::new();
    // (archetype priority, kind, version) of the channel first created with each name.
    let mut created: BTreeMap<String, (usize, Kind, semver::Version)> = BTreeMap::new();
    for (prio, arch) in ARCHETYPES.iter().enumerate() {
        let Some(list) = by_arch.get_mut(arch) else {
            continue;
        };
        list.sort_by(|a, b| a.1.cmp(&b.1));
        list.dedup_by(|a, b| a.0 == b.0);
        for kind in &kinds {
            // One stream per major version: the max patch of each minor replaces the max patch
            // of the minor before and skips every earlier entry of the stream but that one.
            let mut prev_zmax: Option<String> = None;
            let mut stream: Vec<&(String, semver::Version)> = Vec::new();
            let mut i = 0;
            while i < list.len() {
                let (name, v) = &list[i];
                let cname = channel_name(arch, *kind, v);
                let ch = channels.entry(cname.clone()).or_insert_with(|| Channel {
                    name: cname.clone(),
                    package: pkg.clone(),
                    ..Default::default()
                });
                created
                    .entry(cname.clone())
                    .or_insert((prio, *kind, v.clone()));
                let new_stream = stream.last().is_none_or(|(_, p)| p.major != v.major);
                if new_stream {
                    stream.clear();
                    prev_zmax = None;
                }
                let is_zmax = list
                    .get(i + 1)
                    .is_none_or(|(_, n)| n.major != v.major || n.minor != v.minor);
                let mut entry = ChannelEntry {
                    name: name.clone(),
                    ..Default::default()
                };
                if is_zmax {
                    if let Some(r) = &prev_zmax {
                        entry.replaces = r.clone();
                    }
                    entry.skips = stream
                        .iter()
                        .map(|(n, _)| n.clone())
                        .filter(|n| Some(n) != prev_zmax.as_ref())
                        .collect();
                    prev_zmax = Some(name.clone());
                }
                ch.entries.push(entry);
                stream.push(&list[i]);
                i += 1;
            }
        }
    }
    // Default: the most stable archetype, its highest version, the preferred kind on a tie.
    let preferred = if t.preference == "major" {
        Kind::Major
    } else {
        Kind::Minor
    };
    let default = created
        .iter()
        .max_by(|a, b| {
            let (pa, ka, va) = a.1;
            let (pb, kb, vb) = b.1;
            pa.cmp(pb)
                .then_with(|| va.cmp(vb))
                .then_with(|| (*ka == preferred).cmp(&(*kb == preferred)))
        })
        .map(|(n, _)| n.clone())
        .unwrap_or_default();
    // The default channel head's CSV gives the package its description and icon (opm >= 1.65).
    let head = channels
        .get(&default)
        .and_then(|c| {
            c.entries
                .iter()
                .filter_map(|e| rendered.get(&e.name))
                .max_by(|a, b| a.1.cmp(&b.1))
        })
        .map(|(b, _)| b.clone());
    let csv = head.as_ref().and_then(Bundle::csv);
    let mut package = Package {
        name: pkg.clone(),
        default_channel: default,
        ..Default::default()
    };
    if let Some(csv) = csv {
        package.description = csv
            .pointer("/spec/description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some(Value::Object(icon)) = csv.pointer("/spec/icon/0") {
            let icon: &Map<String, Value> = icon;
            use base64::Engine;
            package.icon = Some(model::Icon {
                data: icon
                    .get("base64data")
                    .and_then(Value::as_str)
                    .and_then(|d| {
                        base64::engine::general_purpose::STANDARD
                            .decode(d.trim())
                            .ok()
                    }),
                media_type: icon
                    .get("mediatype")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
    }
    cat.packages.push(package);
    cat.channels.extend(channels.into_values());
    cat.bundles.extend(rendered.into_values().map(|(b, _)| b));
    Ok(cat)
}

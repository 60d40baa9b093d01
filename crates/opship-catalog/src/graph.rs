//! The upgrade graph of each package and channel, drawn as mermaid (opm's `alpha
//! render-graph` output) or Graphviz dot. Edges point from the old version to the new one;
//! deprecated entries are marked, and with v0 semantics so are skipped entries (whose own
//! edges OLM v0 ignores).

use std::collections::BTreeSet;

use crate::model::{Catalog, Channel, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE};

/// Drawing options.
#[derive(Debug, Clone, Default)]
pub struct GraphOptions {
    /// Only this package.
    pub package: Option<String>,
    /// Mark skipped entries, as OLM v0 treats them (opm's `--draw-v0-semantics`).
    pub v0_semantics: bool,
    /// Draw only edges from this bundle's version on (opm's `--minimum-edge`).
    pub minimum_edge: Option<String>,
}

/// The channels to draw, sorted by name, with opm's `--minimum-edge` filter applied: the
/// floor entry keeps no edges, other edges stay only when their source is at or above the
/// floor, entries that lose every edge (or are below the floor) disappear.
pub fn filtered_channels(cat: &Catalog, opts: &GraphOptions) -> crate::Result<Vec<Channel>> {
    let versions: std::collections::BTreeMap<String, semver::Version> = cat
        .versions()
        .into_iter()
        .map(|((_, n), v)| (n, v))
        .collect();
    let zero = semver::Version::new(0, 0, 0);
    let min = match &opts.minimum_edge {
        None => None,
        Some(m) => Some((
            m.as_str(),
            versions
                .get(m)
                .cloned()
                .ok_or_else(|| crate::Error::Usage(format!("unknown minimum edge name: {m:?}")))?,
        )),
    };
    let min_package = min.as_ref().and_then(|(m, _)| {
        cat.channels
            .iter()
            .find(|c| c.entries.iter().any(|e| e.name == *m))
            .map(|c| c.package.clone())
    });
    let version = |n: &str| versions.get(n).unwrap_or(&zero);
    let mut out = Vec::new();
    for ch in channels(cat, opts) {
        let Some((floor_name, floor)) = &min else {
            out.push(ch.clone());
            continue;
        };
        if min_package.as_ref().is_some_and(|p| p != &ch.package) {
            continue;
        }
        let mut f = Channel {
            entries: Vec::new(),
            ..ch.clone()
        };
        for e in &ch.entries {
            if e.name == *floor_name {
                f.entries.push(crate::model::ChannelEntry {
                    name: e.name.clone(),
                    ..Default::default()
                });
                continue;
            }
            let mut fe = crate::model::ChannelEntry {
                name: e.name.clone(),
                ..Default::default()
            };
            if !e.replaces.is_empty() && version(&e.replaces) >= floor {
                fe.replaces = e.replaces.clone();
            }
            fe.skips = e
                .skips
                .iter()
                .filter(|s| version(s) >= floor)
                .cloned()
                .collect();
            if !e.skip_range.is_empty()
                && opship_core::semver_range::parse(&e.skip_range).is_ok_and(|r| r.matches(floor))
            {
                fe.skip_range = e.skip_range.clone();
            }
            let kept = !fe.replaces.is_empty() || !fe.skips.is_empty() || !fe.skip_range.is_empty();
            let had = !e.replaces.is_empty() || !e.skips.is_empty() || !e.skip_range.is_empty();
            if kept || (!had && version(&e.name) >= floor) {
                f.entries.push(fe);
            }
        }
        if !f.entries.is_empty() {
            out.push(f);
        }
    }
    Ok(out)
}

/// Go's `%q` for the plain names catalogs use.
fn q(s: &str) -> String {
    let mut out = String::new();
    crate::gojson::write_str(&mut out, s, false);
    out
}

struct Deprecated {
    packages: BTreeSet<String>,
    channels: BTreeSet<String>,
    bundles: BTreeSet<String>,
}

fn deprecated(cat: &Catalog) -> Deprecated {
    let mut d = Deprecated {
        packages: BTreeSet::new(),
        channels: BTreeSet::new(),
        bundles: BTreeSet::new(),
    };
    for dep in &cat.deprecations {
        for e in &dep.entries {
            match e.reference.schema.as_str() {
                SCHEMA_PACKAGE => {
                    d.packages.insert(dep.package.clone());
                }
                SCHEMA_CHANNEL => {
                    d.channels.insert(e.reference.name.clone());
                }
                SCHEMA_BUNDLE => {
                    d.bundles.insert(e.reference.name.clone());
                }
                _ => {}
            }
        }
    }
    d
}

fn channels<'a>(cat: &'a Catalog, opts: &GraphOptions) -> Vec<&'a Channel> {
    let mut chs: Vec<&Channel> = cat
        .channels
        .iter()
        .filter(|c| opts.package.as_ref().is_none_or(|p| &c.package == p))
        .collect();
    chs.sort_by(|a, b| a.name.cmp(&b.name));
    chs
}

/// The catalog's bundle versions, computed once per graph (not once per skipRange).
type Versions = std::collections::BTreeMap<(String, String), semver::Version>;

/// Entries of `ch` whose version lies in `range` (skipRange edges start there).
fn in_range<'a>(versions: &Versions, ch: &'a Channel, range: &str) -> Vec<&'a str> {
    let Ok(r) = opship_core::semver_range::parse(range) else {
        tracing::warn!(
            "ignoring invalid skipRange {range:?} in package {:?}",
            ch.package
        );
        return Vec::new();
    };
    ch.entries
        .iter()
        .filter(|e| {
            versions
                .get(&(ch.package.clone(), e.name.clone()))
                .is_some_and(|v| r.matches(v))
        })
        .map(|e| e.name.as_str())
        .collect()
}

/// Mermaid, in the form of opm's `alpha render-graph`.
pub fn mermaid(cat: &Catalog, opts: &GraphOptions) -> crate::Result<String> {
    let chans = filtered_channels(cat, opts)?;
    let floor = opts
        .minimum_edge
        .as_ref()
        .and_then(|m| cat.bundles.iter().find(|b| &b.name == m))
        .and_then(|b| b.version())
        .and_then(|v| semver::Version::parse(&v).ok());
    let versions = cat.versions();
    let dep = deprecated(cat);
    let mut pkgs: std::collections::BTreeMap<&str, String> = std::collections::BTreeMap::new();
    let mut deprecated_package = None;
    let mut deprecated_channels = Vec::new();
    let mut skipped_ids = Vec::new();
    for ch in &chans {
        let b = pkgs.entry(&ch.package).or_default();
        let channel_id = format!("{}-{}", ch.package, ch.name);
        b.push_str(&format!("    %% channel {}\n", q(&ch.name)));
        b.push_str(&format!("    subgraph {channel_id}[{}]\n", q(&ch.name)));
        if dep.packages.contains(&ch.package) {
            deprecated_package = Some(ch.package.clone());
        }
        if dep.channels.contains(&ch.name) {
            deprecated_channels.push(channel_id.clone());
        }
        let skipped: BTreeSet<&str> = ch
            .entries
            .iter()
            .flat_map(|e| e.skips.iter().map(String::as_str))
            .collect();
        for e in &ch.entries {
            if let Some(floor) = &floor
                && versions
                    .get(&(ch.package.clone(), e.name.clone()))
                    .is_none_or(|v| v < floor)
            {
                continue;
            }
            let mark = if dep.bundles.contains(&e.name) {
                ":::deprecated"
            } else {
                ""
            };
            let entry_id = format!("{channel_id}-{}", e.name);
            b.push_str(&format!("      {entry_id}[{}]{mark}\n", q(&e.name)));
            if opts.v0_semantics && skipped.contains(e.name.as_str()) {
                skipped_ids.push(entry_id.clone());
            }
            if !e.replaces.is_empty() {
                b.push_str(&format!(
                    "      {channel_id}-{}[{}]-- replace --> {entry_id}[{}]\n",
                    e.replaces,
                    q(&e.replaces),
                    q(&e.name)
                ));
            }
            for s in &e.skips {
                b.push_str(&format!(
                    "      {channel_id}-{s}[{}]-- skip --> {entry_id}[{}]\n",
                    q(s),
                    q(&e.name)
                ));
            }
            if !e.skip_range.is_empty() {
                for from in in_range(&versions, ch, &e.skip_range) {
                    b.push_str(&format!(
                        "      {channel_id}-{from}[{}]-- \"skipRange({})\" --> {entry_id}[{}]\n",
                        q(from),
                        e.skip_range,
                        q(&e.name)
                    ));
                }
            }
        }
        b.push_str("    end\n");
    }
    let mut out = String::from("graph LR\n  classDef deprecated fill:#E8960F\n");
    if opts.v0_semantics {
        out.push_str("  classDef skipped stroke:#FF0000,stroke-width:4px\n");
    }
    for (name, body) in &pkgs {
        out.push_str(&format!("  %% package {}\n", q(name)));
        out.push_str(&format!("  subgraph {}\n", q(name)));
        out.push_str(body);
        out.push_str("  end\n");
    }
    if let Some(p) = deprecated_package {
        out.push_str(&format!("style {p} fill:#989695\n"));
    }
    for c in deprecated_channels {
        out.push_str(&format!("style {c} fill:#DCD0FF\n"));
    }
    for s in skipped_ids {
        out.push_str(&format!("class {s} skipped\n"));
    }
    Ok(out)
}

/// Graphviz dot: one cluster per channel, edges labelled like the mermaid ones.
pub fn dot(cat: &Catalog, opts: &GraphOptions) -> crate::Result<String> {
    let chans = filtered_channels(cat, opts)?;
    let versions = cat.versions();
    let dep = deprecated(cat);
    let mut out = String::from("digraph catalog {\n  rankdir=LR;\n  node [shape=box];\n");
    for ch in &chans {
        let channel_id = format!("{}-{}", ch.package, ch.name);
        out.push_str(&format!(
            "  subgraph {} {{\n",
            q(&format!("cluster_{channel_id}"))
        ));
        out.push_str(&format!(
            "    label={};\n",
            q(&format!("{} / {}", ch.package, ch.name))
        ));
        if dep.channels.contains(&ch.name) || dep.packages.contains(&ch.package) {
            out.push_str("    style=filled;\n    fillcolor=\"#DCD0FF\";\n");
        }
        let skipped: BTreeSet<&str> = ch
            .entries
            .iter()
            .flat_map(|e| e.skips.iter().map(String::as_str))
            .collect();
        let mut nodes: BTreeSet<String> = BTreeSet::new();
        let mut edges = String::new();
        for e in &ch.entries {
            let mut attrs = vec![format!("label={}", q(&e.name))];
            if dep.bundles.contains(&e.name) {
                attrs.push("style=filled".into());
                attrs.push("fillcolor=\"#E8960F\"".into());
            }
            if opts.v0_semantics && skipped.contains(e.name.as_str()) {
                attrs.push("color=\"#FF0000\"".into());
                attrs.push("penwidth=4".into());
            }
            out.push_str(&format!(
                "    {} [{}];\n",
                q(&format!("{channel_id}-{}", e.name)),
                attrs.join(", ")
            ));
            nodes.insert(e.name.clone());
            let to = q(&format!("{channel_id}-{}", e.name));
            let mut edge = |from: &str, label: String, style: &str| {
                edges.push_str(&format!(
                    "    {} -> {to} [label={}{style}];\n",
                    q(&format!("{channel_id}-{from}")),
                    q(&label)
                ));
            };
            if !e.replaces.is_empty() {
                edge(&e.replaces, "replace".into(), "");
            }
            for s in &e.skips {
                edge(s, "skip".into(), ", style=dashed");
            }
            if !e.skip_range.is_empty() {
                for from in in_range(&versions, ch, &e.skip_range) {
                    edge(
                        from,
                        format!("skipRange({})", e.skip_range),
                        ", style=dotted",
                    );
                }
            }
        }
        // Targets outside the channel (a tail's replaces) are drawn grey.
        for e in &ch.entries {
            for t in std::iter::once(&e.replaces).chain(e.skips.iter()) {
                if !t.is_empty() && nodes.insert(t.clone()) {
                    out.push_str(&format!(
                        "    {} [label={}, color=grey, fontcolor=grey];\n",
                        q(&format!("{channel_id}-{t}")),
                        q(t)
                    ));
                }
            }
        }
        out.push_str(&edges);
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    Ok(out)
}

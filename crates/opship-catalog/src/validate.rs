//! `opship catalog validate`: every rule of `opm validate` (reported all at once, in opm's
//! error tree, with opm's messages) plus lints opm lacks: skipRange upper bounds above the
//! bundle's version, skipped bundles whose edges OLM v0 ignores, and OLM v1 installability.
//! Findings are data with stable IDs; the tree text is one way of printing them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use crate::model::{Catalog, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE};
use crate::reference;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// opm refuses the catalog.
    Error,
    /// opm accepts it, but clusters will not behave as the author probably meant.
    Warning,
}

/// A rule: stable ID, level and what it checks.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    /// Stable ID (`FBC001`).
    pub id: &'static str,
    /// Default level.
    pub level: Level,
    /// One line about what it checks.
    pub summary: &'static str,
}

macro_rules! rules {
    ($($name:ident = $id:literal, $level:ident, $summary:literal;)*) => {
        $(#[doc = $summary] pub const $name: Rule = Rule { id: $id, level: Level::$level, summary: $summary };)*
        /// Every rule, in ID order.
        pub const ALL: &[Rule] = &[$($name),*];
    };
}

rules! {
    PACKAGE_NAME = "FBC001", Error, "package name set, unique, and a DNS-1123 label";
    CHANNEL_DEF = "FBC002", Error, "channel names a known package, has a name, is not duplicated, has no duplicate entries";
    CHANNEL_HEAD = "FBC003", Error, "channel has exactly one head (entry no other entry replaces or skips)";
    REPLACES_CYCLE = "FBC004", Error, "no cycle in the replaces chain from the head";
    STRANDED = "FBC005", Error, "every entry is on the head's replaces chain or skipped";
    CHANNEL_EMPTY = "FBC006", Error, "channel contains at least one bundle";
    DEFAULT_CHANNEL = "FBC007", Error, "package has channels and a default channel that exists";
    BUNDLE_PACKAGE = "FBC008", Error, "bundle names a known package, is unique, has exactly one matching olm.package property";
    BUNDLE_VERSION = "FBC009", Error, "bundle version is strict semver, unique per package, no build metadata with a release";
    PULL_SPEC = "FBC010", Error, "image and relatedImages are valid pull specs";
    SKIPS = "FBC011", Error, "skips entries are not empty";
    SKIP_RANGE = "FBC012", Error, "skipRange parses as a blang/semver range";
    BUNDLE_CHANNEL = "FBC013", Error, "every bundle is in a channel and every channel entry has a bundle";
    DEPRECATIONS = "FBC014", Error, "olm.deprecations: known package, one per package, valid unique references, message set";
    BUNDLE_IMAGE = "FBC015", Error, "bundle image is set";
    PARSE = "FBC016", Error, "every catalog file is a YAML or JSON stream of valid blobs";
    SKIP_RANGE_BOUND = "FBL001", Warning, "skipRange's upper bound is not above the bundle's own version";
    SKIPPED_EDGES = "FBL002", Warning, "OLM v0 ignores the edges of skipped bundles: a replaces edge only a skipped bundle provides strands its target";
    OLM_V1 = "FBL003", Warning, "bundle is installable by OLM v1 (no required GVKs/packages/constraints, AllNamespaces supported)";
}

/// Loads and validates the catalog directory `root`. A file that does not parse is a finding
/// (FBC016, opm refuses such a catalog too), not an error; only a catalog that cannot be read
/// at all (no directory, a FIFO or an escaping link in it) is an `Err`.
pub fn validate_dir(root: &std::path::Path) -> crate::Result<Report> {
    match crate::load::load_dir(root) {
        Ok(cat) => Ok(validate(&cat)),
        Err(crate::Error::Parse { location, message }) => Ok(Report {
            findings: vec![Finding {
                id: PARSE.id,
                level: PARSE.level,
                package: String::new(),
                path: Vec::new(),
                message: if location.is_empty() {
                    message
                } else {
                    format!("{location}: {message}")
                },
            }],
        }),
        Err(e) => Err(e),
    }
}

/// One problem.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Rule ID.
    pub id: &'static str,
    /// Level.
    pub level: Level,
    /// The package it is about (empty for catalog-wide findings).
    pub package: String,
    /// The enclosing nodes of opm's error tree below the package (`invalid channel "x"`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
    /// The message, in opm's wording where opm has the rule.
    pub message: String,
}

/// The result of validating a catalog.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Every finding.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Whether opm would accept the catalog.
    pub fn passed(&self) -> bool {
        !self.findings.iter().any(|f| f.level == Level::Error)
    }

    /// The errors as opm prints them: `invalid index:` and a tree (empty when passed).
    pub fn error_tree(&self) -> String {
        let errors: Vec<&Finding> = self
            .findings
            .iter()
            .filter(|f| f.level == Level::Error)
            .collect();
        if errors.is_empty() {
            return String::new();
        }
        let mut root = Node::new("invalid index".into());
        let mut packages: BTreeMap<&str, Node> = BTreeMap::new();
        for f in &errors {
            let node = if f.package.is_empty() {
                &mut root
            } else {
                packages
                    .entry(&f.package)
                    .or_insert_with(|| Node::new(format!("invalid package {:?}", f.package)))
            };
            let mut cur = node;
            for p in &f.path {
                cur = cur.child(p);
            }
            cur.children.push(Node::new(f.message.clone()));
        }
        root.children.extend(packages.into_values());
        let mut out = String::new();
        root.render(&mut out, "", true);
        out.trim().to_owned()
    }

    /// The warnings, one per line: `warning[ID] package: message`.
    pub fn warnings_text(&self) -> String {
        let mut out = String::new();
        for f in self.findings.iter().filter(|f| f.level == Level::Warning) {
            out.push_str(&format!("warning[{}] {}: {}\n", f.id, f.package, f.message));
        }
        out
    }

    /// `--output json`: opm's `{passed, error: {message}}` plus opship's findings.
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::json!({ "passed": self.passed() });
        if !self.passed() {
            v["error"] = serde_json::json!({ "message": self.error_tree() });
        }
        v["findings"] = serde_json::to_value(&self.findings).unwrap_or(Value::Null);
        v
    }
}

struct Node {
    message: String,
    children: Vec<Node>,
}

impl Node {
    fn new(message: String) -> Self {
        Node {
            message,
            children: Vec::new(),
        }
    }

    fn child(&mut self, message: &str) -> &mut Node {
        let i = match self
            .children
            .iter()
            .position(|c| c.message == message && !c.children.is_empty())
        {
            Some(i) => i,
            None => {
                self.children.push(Node::new(message.to_owned()));
                self.children.len() - 1
            }
        };
        &mut self.children[i]
    }

    /// opm's `validationError.errorPrefix`: the node's line, then its children with
    /// `├── `/`└── ` and the parent's column continued by `│   ` or blanks.
    fn render(&self, out: &mut String, prefix: &str, last: bool) {
        out.push_str(prefix);
        out.push_str(&self.message);
        out.push_str(if self.children.is_empty() {
            "\n"
        } else {
            ":\n"
        });
        let base: String = if prefix.chars().count() >= 4 {
            let keep: String = prefix.chars().take(prefix.chars().count() - 4).collect();
            format!("{keep}{}", if last { "    " } else { "│   " })
        } else {
            prefix.to_owned()
        };
        for (i, c) in self.children.iter().enumerate() {
            let sub_last = i == self.children.len() - 1;
            let p = format!("{base}{}", if sub_last { "└── " } else { "├── " });
            c.render(out, &p, sub_last);
        }
    }
}

struct Checker {
    findings: Vec<Finding>,
}

impl Checker {
    fn push(&mut self, rule: &Rule, package: &str, path: &[String], message: String) {
        self.findings.push(Finding {
            id: rule.id,
            level: rule.level,
            package: package.to_owned(),
            path: path.to_vec(),
            message,
        });
    }
}

fn chan_node(name: &str) -> String {
    format!("invalid channel {name:?}")
}

fn bundle_node(name: &str) -> String {
    format!("invalid bundle {name:?}")
}

/// Validates a whole catalog.
pub fn validate(cat: &Catalog) -> Report {
    let mut c = Checker {
        findings: Vec::new(),
    };
    let mut packages: BTreeSet<&str> = BTreeSet::new();
    let mut default_channels: BTreeMap<&str, &str> = BTreeMap::new();
    for p in &cat.packages {
        if p.name.is_empty() {
            c.push(
                &PACKAGE_NAME,
                "",
                &[],
                "config contains package with no name".into(),
            );
            continue;
        }
        if !packages.insert(&p.name) {
            c.push(
                &PACKAGE_NAME,
                "",
                &[],
                format!("duplicate package {:?}", p.name),
            );
            continue;
        }
        let errs = reference::dns1123_label_errors(&p.name);
        if !errs.is_empty() {
            c.push(
                &PACKAGE_NAME,
                "",
                &[],
                format!("invalid package name {:?}: [{}]", p.name, errs.join(" ")),
            );
        }
        default_channels.insert(&p.name, &p.default_channel);
    }

    let mut package_channels: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut entries_without_bundle: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for ch in &cat.channels {
        if !packages.contains(ch.package.as_str()) {
            c.push(
                &CHANNEL_DEF,
                "",
                &[],
                format!("unknown package {:?} for channel {:?}", ch.package, ch.name),
            );
            continue;
        }
        if ch.name.is_empty() {
            c.push(
                &CHANNEL_DEF,
                &ch.package,
                &[],
                "package contains channel with no name".into(),
            );
            continue;
        }
        if !package_channels
            .entry(&ch.package)
            .or_default()
            .insert(&ch.name)
        {
            c.push(
                &CHANNEL_DEF,
                &ch.package,
                &[],
                format!("duplicate channel {:?}", ch.name),
            );
            continue;
        }
        let mut seen = BTreeSet::new();
        for e in &ch.entries {
            if !seen.insert(e.name.as_str()) {
                c.push(
                    &CHANNEL_DEF,
                    &ch.package,
                    &[],
                    format!("channel {:?}: duplicate entry {:?}", ch.name, e.name),
                );
            }
            entries_without_bundle
                .entry(&ch.package)
                .or_default()
                .insert(&e.name);
        }
        channel_graph(&mut c, ch);
    }

    let mut package_bundles: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut versions: BTreeMap<&str, BTreeMap<String, Vec<&str>>> = BTreeMap::new();
    // Each bundle's channel entries, in channel then entry order: looked up, not searched, so
    // validation stays linear in bundles and entries (a 50,000-bundle chain).
    let mut entries_of: std::collections::HashMap<
        (&str, &str),
        Vec<(&str, &crate::model::ChannelEntry)>,
    > = std::collections::HashMap::new();
    for ch in &cat.channels {
        for e in &ch.entries {
            entries_of
                .entry((ch.package.as_str(), e.name.as_str()))
                .or_default()
                .push((ch.name.as_str(), e));
        }
    }
    for b in &cat.bundles {
        let known = !b.package.is_empty() && packages.contains(b.package.as_str());
        let (pkg, path) = if known {
            (b.package.as_str(), vec![bundle_node(&b.name)])
        } else {
            ("", vec![bundle_node(&b.name)])
        };
        if b.package.is_empty() {
            c.push(
                &BUNDLE_PACKAGE,
                pkg,
                &path,
                "package name must be set".into(),
            );
        } else if !known {
            c.push(
                &BUNDLE_PACKAGE,
                pkg,
                &path,
                format!("unknown package {:?}", b.package),
            );
        }
        if !package_bundles
            .entry(&b.package)
            .or_default()
            .insert(&b.name)
        {
            c.push(&BUNDLE_PACKAGE, pkg, &path, "duplicate bundle".into());
        }
        let pkg_props = b.package_properties();
        let mut bad_props = false;
        for (i, p) in b.properties.iter().enumerate() {
            if p.typ == SCHEMA_PACKAGE && !p.value.is_object() {
                bad_props = true;
                c.push(
                    &BUNDLE_PACKAGE,
                    pkg,
                    &path,
                    format!(
                        "parse properties: parse property[{i}] of type \"olm.package\": json: cannot unmarshal {} into Go value of type property.Package",
                        json_kind(&p.value)
                    ),
                );
            }
        }
        if !bad_props && pkg_props.len() != 1 {
            c.push(
                &BUNDLE_PACKAGE,
                pkg,
                &path,
                format!(
                    "must have exactly 1 \"olm.package\" property, found {}",
                    pkg_props.len()
                ),
            );
        }
        if !bad_props && pkg_props.len() == 1 {
            let prop = pkg_props[0];
            let pname = prop
                .get("packageName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if pname != b.package {
                c.push(
                    &BUNDLE_PACKAGE,
                    pkg,
                    &path,
                    format!(
                        "package {:?} does not match \"olm.package\" property {:?}",
                        b.package, pname
                    ),
                );
            }
            let raw = prop
                .get("version")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let release = prop
                .get("release")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match reference::parse_version(raw) {
                Err(e) => c.push(
                    &BUNDLE_VERSION,
                    pkg,
                    &path,
                    format!("error parsing bundle {:?} version {raw:?}: {e}", b.name),
                ),
                Ok(v) => {
                    if !release.is_empty() && !v.build.is_empty() {
                        c.push(
                            &BUNDLE_VERSION,
                            pkg,
                            &path,
                            "cannot use build metadata in version with a release version".into(),
                        );
                    }
                    if !release.is_empty() {
                        let normalized = format!("{}-v{v}-{release}", b.package);
                        if b.name != normalized {
                            c.push(
                                &BUNDLE_VERSION,
                                pkg,
                                &path,
                                format!(
                                    "name {:?} does not match normalized name {normalized:?}",
                                    b.name
                                ),
                            );
                        }
                    }
                    let key = if release.is_empty() {
                        v.to_string()
                    } else {
                        format!("{v}-{release}")
                    };
                    versions
                        .entry(&b.package)
                        .or_default()
                        .entry(key)
                        .or_default()
                        .push(&b.name);
                }
            }
        }
        if !b.image.is_empty()
            && let Err(e) = reference::check_pull_spec(&b.image)
        {
            c.push(
                &PULL_SPEC,
                pkg,
                &path,
                format!("image: invalid image pull spec {:?}: {e}", b.image),
            );
        }
        for (i, r) in b.related_images.iter().enumerate() {
            if !r.image.is_empty()
                && let Err(e) = reference::check_pull_spec(&r.image)
            {
                c.push(
                    &PULL_SPEC,
                    pkg,
                    &path,
                    format!(
                        "relatedImages[{i}].image: invalid image pull spec {:?}: {e}",
                        r.image
                    ),
                );
            }
        }
        if b.image.is_empty() && !b.properties.iter().any(|p| p.typ == "olm.bundle.object") {
            c.push(&BUNDLE_IMAGE, pkg, &path, "bundle image must be set".into());
        }
        if let Some(set) = entries_without_bundle.get_mut(b.package.as_str()) {
            set.remove(b.name.as_str());
        }
        let mut found = false;
        for &(ch_name, e) in entries_of
            .get(&(b.package.as_str(), b.name.as_str()))
            .into_iter()
            .flatten()
        {
            {
                found = true;
                for (i, s) in e.skips.iter().enumerate() {
                    if s.is_empty() {
                        c.push(
                            &SKIPS,
                            pkg,
                            &path,
                            format!("skip[{i}] is empty in channel {ch_name:?}"),
                        );
                    }
                }
                if !e.skip_range.is_empty()
                    && let Err(err) = opship_core::semver_range::parse(&e.skip_range)
                {
                    c.push(
                        &SKIP_RANGE,
                        pkg,
                        &path,
                        format!(
                            "invalid skipRange {:?} in channel {:?}: {err}",
                            e.skip_range, ch_name
                        ),
                    );
                }
            }
        }
        if !found {
            c.push(
                &BUNDLE_CHANNEL,
                pkg,
                &path,
                format!(
                    "package {:?}, bundle {:?} not found in any channel entries",
                    b.package, b.name
                ),
            );
        }
    }

    for (pkg, entries) in &entries_without_bundle {
        if !entries.is_empty() {
            let list: Vec<&str> = entries.iter().copied().collect();
            c.push(
                &BUNDLE_CHANNEL,
                pkg,
                &[],
                format!(
                    "no olm.bundle blobs found in package {pkg:?} for olm.channel entries [{}]",
                    list.join(" ")
                ),
            );
        }
    }

    for pkg in &packages {
        let channels = package_channels.get(pkg);
        let default = default_channels.get(pkg).copied().unwrap_or_default();
        // With a default channel named, opm creates it (empty), so the package has a channel
        // and only that channel's emptiness is reported.
        if channels.is_none_or(BTreeSet::is_empty) && default.is_empty() {
            c.push(
                &DEFAULT_CHANNEL,
                pkg,
                &[],
                "package must contain at least one channel".into(),
            );
        }
        if default.is_empty() {
            c.push(
                &DEFAULT_CHANNEL,
                pkg,
                &[],
                "default channel must be set".into(),
            );
        } else if !channels.is_some_and(|s| s.contains(default)) {
            // opm creates the missing default channel empty, which then fails as such.
            c.push(
                &DEFAULT_CHANNEL,
                pkg,
                &[chan_node(default)],
                "channel must contain at least one bundle".into(),
            );
        }
    }

    for (pkg, vs) in &versions {
        let dupes: Vec<String> = vs
            .iter()
            .filter(|(_, names)| names.len() > 1)
            .map(|(v, names)| {
                let mut names = names.clone();
                names.sort();
                format!("{{{v}: [{}]}}", names.join(", "))
            })
            .collect();
        if !dupes.is_empty() {
            c.push(
                &BUNDLE_VERSION,
                pkg,
                &[],
                format!("duplicate versions found in bundles: [{}]", dupes.join(" ")),
            );
        }
    }

    deprecations(&mut c, cat, &packages, &package_channels, &package_bundles);
    lints(&mut c, cat);
    Report {
        findings: c.findings,
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// One head, no cycle on the replaces chain, nothing stranded (opm's `validateReplacesChain`:
/// skipRange makes no edge; a replaces target that is skipped ends the chain).
fn channel_graph(c: &mut Checker, ch: &crate::model::Channel) {
    let path = [chan_node(&ch.name)];
    if ch.entries.is_empty() {
        c.push(
            &CHANNEL_EMPTY,
            &ch.package,
            &path,
            "channel must contain at least one bundle".into(),
        );
        return;
    }
    let by_name: BTreeMap<&str, &crate::model::ChannelEntry> =
        ch.entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut incoming: BTreeSet<&str> = BTreeSet::new();
    let mut skipped: BTreeSet<&str> = BTreeSet::new();
    for e in &ch.entries {
        skipped.extend(e.skips.iter().map(String::as_str));
        if !e.replaces.is_empty() {
            incoming.insert(&e.replaces);
        }
        incoming.extend(e.skips.iter().map(String::as_str));
    }
    let mut heads: Vec<&str> = by_name
        .keys()
        .copied()
        .filter(|n| !incoming.contains(n))
        .collect();
    heads.sort();
    if heads.is_empty() {
        c.push(
            &CHANNEL_HEAD,
            &ch.package,
            &path,
            "no channel head found in graph".into(),
        );
        return;
    }
    if heads.len() > 1 {
        c.push(
            &CHANNEL_HEAD,
            &ch.package,
            &path,
            format!(
                "multiple channel heads found in graph: {}",
                heads.join(", ")
            ),
        );
        return;
    }
    let head = heads[0];
    let mut chain: Vec<&str> = vec![head];
    let mut on_chain: BTreeSet<&str> = BTreeSet::from([head]);
    let mut cur = by_name.get(head).copied();
    while let Some(e) = cur {
        if skipped.contains(e.replaces.as_str()) {
            break;
        }
        if on_chain.contains(e.replaces.as_str()) {
            let start = chain.iter().position(|n| *n == e.replaces).unwrap_or(0);
            let mut cycle: Vec<&str> = chain[start..].to_vec();
            cycle.push(&e.replaces);
            c.push(
                &REPLACES_CYCLE,
                &ch.package,
                &path,
                format!(
                    "detected cycle in replaces chain of upgrade graph: {}",
                    cycle.join(" -> ")
                ),
            );
            return;
        }
        on_chain.insert(&e.replaces);
        chain.push(&e.replaces);
        cur = by_name.get(e.replaces.as_str()).copied();
    }
    let stranded: Vec<&str> = by_name
        .keys()
        .copied()
        .filter(|n| !on_chain.contains(n) && !skipped.contains(n))
        .collect();
    if !stranded.is_empty() {
        c.push(
            &STRANDED,
            &ch.package,
            &path,
            format!(
                "channel contains one or more stranded bundles: {}",
                stranded.join(", ")
            ),
        );
    }
}

fn deprecations(
    c: &mut Checker,
    cat: &Catalog,
    packages: &BTreeSet<&str>,
    channels: &BTreeMap<&str, BTreeSet<&str>>,
    bundles: &BTreeMap<&str, BTreeSet<&str>>,
) {
    let mut seen_pkgs = BTreeSet::new();
    for (i, d) in cat.deprecations.iter().enumerate() {
        if d.package.is_empty() {
            c.push(
                &DEPRECATIONS,
                "",
                &[],
                format!("package name must be set for deprecation item {i}"),
            );
            continue;
        }
        if !packages.contains(d.package.as_str()) {
            c.push(
                &DEPRECATIONS,
                "",
                &[],
                format!(
                    "cannot apply deprecations to an unknown package {:?}",
                    d.package
                ),
            );
            continue;
        }
        if !seen_pkgs.insert(d.package.as_str()) {
            c.push(
                &DEPRECATIONS,
                "",
                &[],
                format!(
                    "expected a maximum of one deprecation per package: {:?}",
                    d.package
                ),
            );
            continue;
        }
        let mut refs = Vec::new();
        for (j, e) in d.entries.iter().enumerate() {
            let r = &e.reference;
            let go_ref = format!(
                "declcfg.PackageScopedReference{{Schema:{:?}, Name:{:?}}}",
                r.schema, r.name
            );
            if r.schema.is_empty() {
                c.push(
                    &DEPRECATIONS,
                    &d.package,
                    &[],
                    format!("schema must be set for deprecation entry [{j}]"),
                );
                continue;
            }
            if e.message.is_empty() {
                c.push(
                    &DEPRECATIONS,
                    &d.package,
                    &[],
                    format!("deprecation entry [{j}] must have a message"),
                );
            }
            if refs.contains(&r) {
                c.push(
                    &DEPRECATIONS,
                    &d.package,
                    &[],
                    format!("duplicate deprecation entry {go_ref}"),
                );
                continue;
            }
            refs.push(r);
            match r.schema.as_str() {
                SCHEMA_BUNDLE => {
                    if !bundles.get(d.package.as_str()).is_some_and(|s| s.contains(r.name.as_str())) {
                        c.push(
                            &DEPRECATIONS,
                            &d.package,
                            &[],
                            format!("cannot deprecate bundle {:?}: bundle not found", r.name),
                        );
                    }
                }
                SCHEMA_CHANNEL => {
                    if !channels.get(d.package.as_str()).is_some_and(|s| s.contains(r.name.as_str())) {
                        c.push(
                            &DEPRECATIONS,
                            &d.package,
                            &[],
                            format!("cannot deprecate channel {:?}: channel not found", r.name),
                        );
                    }
                }
                SCHEMA_PACKAGE => {
                    if !r.name.is_empty() {
                        c.push(
                            &DEPRECATIONS,
                            &d.package,
                            &[],
                            format!(
                                "package name must be empty for deprecated package (specified {:?})",
                                r.name
                            ),
                        );
                    }
                }
                _ => c.push(
                    &DEPRECATIONS,
                    &d.package,
                    &[],
                    format!(
                        "cannot deprecate object {go_ref} referenced by entry {j}: object schema unknown"
                    ),
                ),
            }
        }
    }
}

/// What opm does not check but clusters care about.
fn lints(c: &mut Checker, cat: &Catalog) {
    let versions = cat.versions();
    for ch in &cat.channels {
        let version_of = |name: &str| versions.get(&(ch.package.clone(), name.to_owned()));
        for e in &ch.entries {
            // FBL001: an upper bound above the bundle's own version admits versions that are
            // newer than the bundle, which then "upgrade" to an older one (PR #2090).
            if !e.skip_range.is_empty()
                && let Ok(range) = opship_core::semver_range::parse(&e.skip_range)
                && let Some(v) = version_of(&e.name)
                && let Some((ub, inclusive)) = range.upper_bound()
                && (ub > v || (inclusive && ub == v))
            {
                c.push(
                    &SKIP_RANGE_BOUND,
                    &ch.package,
                    &[],
                    format!(
                        "channel {:?}: entry {:?} (version {v}) has skipRange {:?} whose upper bound {}{ub} is not below its own version",
                        ch.name,
                        e.name,
                        e.skip_range,
                        if inclusive { "<=" } else { "<" }
                    ),
                );
            }
        }
        // FBL002: OLM v0 drops a skipped bundle from replaces traversal and ignores its
        // edges (PR #1762); a bundle only reachable through such an edge cannot upgrade.
        let skipped: BTreeSet<&str> = ch
            .entries
            .iter()
            .flat_map(|e| e.skips.iter().map(String::as_str))
            .collect();
        for e in ch
            .entries
            .iter()
            .filter(|e| skipped.contains(e.name.as_str()))
        {
            let target = e.replaces.as_str();
            if target.is_empty() || !ch.entries.iter().any(|x| x.name == target) {
                continue;
            }
            let reached_otherwise = ch.entries.iter().any(|x| {
                x.name != e.name
                    && !skipped.contains(x.name.as_str())
                    && (x.replaces == target
                        || x.skips.iter().any(|s| s == target)
                        || (!x.skip_range.is_empty()
                            && version_of(target).is_some_and(|v| {
                                opship_core::semver_range::parse(&x.skip_range)
                                    .is_ok_and(|r| r.matches(v))
                            })))
            });
            if !reached_otherwise && !skipped.contains(target) {
                c.push(
                    &SKIPPED_EDGES,
                    &ch.package,
                    &[],
                    format!(
                        "channel {:?}: {:?} replaces {target:?} but is itself skipped; OLM v0 ignores a skipped bundle's edges, so {target:?} has no upgrade path",
                        ch.name, e.name
                    ),
                );
            }
        }
    }
    // FBL003: OLM v1 installs only bundles without dependencies and with AllNamespaces.
    for b in &cat.bundles {
        let deps: BTreeSet<&str> = b
            .properties
            .iter()
            .map(|p| p.typ.as_str())
            .filter(|t| {
                matches!(
                    *t,
                    "olm.gvk.required" | "olm.package.required" | "olm.constraint"
                )
            })
            .collect();
        if !deps.is_empty() {
            let list: Vec<&str> = deps.into_iter().collect();
            c.push(
                &OLM_V1,
                &b.package,
                &[],
                format!(
                    "bundle {:?} declares {}; OLM v1 does not install bundles with dependencies",
                    b.name,
                    list.join(", ")
                ),
            );
        }
        let modes = b
            .csv()
            .and_then(|csv| csv.pointer("/spec/installModes").cloned())
            .or_else(|| {
                b.properties
                    .iter()
                    .find(|p| p.typ == "olm.csv.metadata")
                    .and_then(|p| p.value.get("installModes").cloned())
            });
        if let Some(Value::Array(modes)) = modes {
            let all_ns = modes.iter().any(|m| {
                m.get("type").and_then(Value::as_str) == Some("AllNamespaces")
                    && m.get("supported").and_then(Value::as_bool) == Some(true)
            });
            if !all_ns {
                c.push(
                    &OLM_V1,
                    &b.package,
                    &[],
                    format!(
                        "bundle {:?} does not support the AllNamespaces install mode; OLM v1 installs only AllNamespaces operators",
                        b.name
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_is_drawn_like_opm() {
        let r = Report {
            findings: vec![
                Finding {
                    id: "X",
                    level: Level::Error,
                    package: "demo".into(),
                    path: vec![chan_node("stable")],
                    message: "multiple channel heads found in graph: a, b".into(),
                },
                Finding {
                    id: "X",
                    level: Level::Error,
                    package: "demo".into(),
                    path: vec![],
                    message: "last".into(),
                },
            ],
        };
        assert_eq!(
            r.error_tree(),
            "invalid index:\n└── invalid package \"demo\":\n    ├── invalid channel \"stable\":\n    │   └── multiple channel heads found in graph: a, b\n    └── last"
        );
    }
}

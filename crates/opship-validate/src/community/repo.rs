//! An operator directory of a community-operators repository as the pipeline's
//! `operator_repo` reads it: its bundles (`<version>/manifests` + `<version>/metadata`),
//! `ci.yaml`, the repository's `config.yaml`, each bundle's CSV, annotations and
//! `release-config.yaml`, and the update graph of a channel. Every file is read inside its tree
//! (the operator directory, or the repository for `config.yaml`): a symlink out of it is an
//! error naming the link, never followed, so no finding can quote a file from elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use opship_core::input::{self, Kind};
use rayon::prelude::*;
use serde_json::{Map, Value};

use opship_core::yaml::Document;

use super::graph::{self, ChannelGraph};
use super::py::{NpmRange, SemVer, Written};

/// A YAML file as `load_yaml` gives it: `Null` for an empty file, `Err` with why it could not
/// be read (missing files are told apart by the caller).
pub type Loaded = Result<Value, String>;

/// Reads one YAML document of the tree `root` (several are an error, as PyYAML's `safe_load`
/// says); a symlink that leads out of `root` is refused.
pub fn load_yaml(root: &Path, path: &Path) -> Loaded {
    Ok(parse_yaml(root, path)?.1.map_or(Value::Null, |d| d.value))
}

/// [`load_yaml`] with the text and the document's node positions (`None` for an empty file).
fn parse_yaml(root: &Path, path: &Path) -> Result<(String, Option<Document>), String> {
    let text = input::read_string_in_tree(root, path, Kind::Manifest).map_err(|e| e.to_string())?;
    let (mut docs, _) =
        opship_core::yaml::parse_stream_lenient(&text, path).map_err(|e| e.to_string())?;
    match docs.len() {
        0 => Ok((text, None)),
        1 => Ok((text, Some(docs.remove(0)))),
        _ => Err(format!(
            "{} contains multiple yaml documents",
            opship_core::paths::show(path)
        )),
    }
}

/// How the scalar at `pointer` of `doc` is written in `text`, as far as PyYAML's reading of
/// it depends on that: what stands between its key's `:` and its first characters (its
/// properties, a tag `!!str` or `!!timestamp` or an anchor, and a block indicator, wherever
/// the parser places the node's start), then those characters (a quote); an alias is looked
/// up at its anchor.
fn written_as(text: &str, doc: &Document, pointer: &str) -> Written {
    if doc.value.pointer(pointer).is_none() {
        return Written::Plain;
    }
    let pos = doc.origin(pointer).pos;
    let Some(line_start) = text
        .split_inclusive('\n')
        .take((pos.line as usize).saturating_sub(1))
        .map(str::len)
        .try_fold(0usize, |acc, n| acc.checked_add(n))
    else {
        return Written::Plain;
    };
    let line = text[line_start.min(text.len())..]
        .split('\n')
        .next()
        .unwrap_or_default();
    let at = line_start
        + line
            .char_indices()
            .nth((pos.col as usize).saturating_sub(1))
            .map_or(line.len(), |(i, _)| i);
    let before = &text[..at.min(text.len())];
    let lead = before.rfind(':').map_or("", |c| &before[c + 1..]);
    let lead = lead.split('#').next().unwrap_or_default();
    match written_from(&format!("{lead}{}", &text[at.min(text.len())..])) {
        Err(anchor) => {
            // An alias: the node it names, written after `&anchor`.
            let mark = format!("&{anchor}");
            text.match_indices(&mark)
                .map(|(i, _)| &text[i + mark.len()..])
                .find(|rest| rest.starts_with([' ', '\t', '\n', '\r']))
                .and_then(|rest| written_from(rest).ok())
                .unwrap_or(Written::Str)
        }
        Ok(w) => w,
    }
}

/// The [`Written`] of a scalar whose text (with its properties) starts `s`, or the anchor an
/// alias (`*name`) names.
fn written_from(s: &str) -> Result<Written, &str> {
    let mut rest = s;
    let mut tagged = None;
    loop {
        rest = rest.trim_start_matches([' ', '\t', '\n', '\r']);
        let token_end = rest.find([' ', '\t', '\n', '\r']).unwrap_or(rest.len());
        match rest.as_bytes().first() {
            Some(b'!') => tagged = Some(&rest[..token_end]),
            Some(b'&') => {}
            Some(b'*') => return Err(&rest[1..token_end]),
            _ => break,
        }
        rest = &rest[token_end..];
    }
    Ok(match tagged {
        Some("!!timestamp" | "!<tag:yaml.org,2002:timestamp>") => Written::Timestamp,
        Some(_) => Written::Str,
        None if rest.starts_with(['"', '\'', '|', '>']) => Written::Str,
        None => Written::Plain,
    })
}

/// `path`, or the same name with the other YAML extension, when it is a file.
pub fn find_yaml(path: &Path) -> Option<PathBuf> {
    if path.is_file() {
        return Some(path.to_path_buf());
    }
    for ext in ["yaml", "yml"] {
        if path.extension().and_then(|e| e.to_str()) == Some(ext) {
            continue;
        }
        let alt = path.with_extension(ext);
        if alt.is_file() {
            return Some(alt);
        }
    }
    None
}

/// The entries of the directory `dir` of the tree `root`, sorted; a directory reached through a
/// symlink out of `root` is not listed (its names are not the tree's either).
pub(crate) fn list_in_tree(root: &Path, dir: &Path) -> Result<Vec<PathBuf>, String> {
    input::check_in_tree(root, dir).map_err(|e| e.to_string())?;
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", opship_core::paths::show(dir)))?
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    Ok(names)
}

/// Whether a directory is a bundle: it holds `manifests/` and `metadata/`.
pub fn is_bundle(path: &Path) -> bool {
    path.is_dir() && path.join("manifests").is_dir() && path.join("metadata").is_dir()
}

/// One bundle of the operator.
#[derive(Debug)]
pub struct PBundle {
    /// The bundle directory (resolved).
    pub dir: PathBuf,
    /// The operator directory's name.
    pub operator_name: String,
    /// The bundle directory's name (the version it claims).
    pub version: String,
    /// The CSV file: the first `*.clusterserviceversion.yaml`, else `.yml`.
    pub csv_path: Option<PathBuf>,
    /// The CSV's content, when it is a mapping.
    pub csv: Result<Map<String, Value>, String>,
    /// `metadata/annotations.yaml`'s `annotations` mapping.
    pub annotations: Result<Map<String, Value>, String>,
    /// `release-config.yaml` next to `manifests/`, when present.
    pub release_config: Result<Option<Value>, String>,
    /// How the CSV's `metadata.annotations.createdAt` is written (PyYAML reads a plain
    /// timestamp as a `datetime`, a quoted one as a string).
    pub created_at: Written,
}

impl PBundle {
    /// Reads the bundle `dir` of the operator directory `root`.
    fn load(root: &Path, dir: PathBuf) -> PBundle {
        let version = name_of(&dir);
        let operator_name = dir.parent().map(name_of).unwrap_or_default();
        let (csv_path, (csv, created_at)) = match find_csv(root, &dir.join("manifests")) {
            Err(e) => (None, (Err(e), Written::Plain)),
            Ok(None) => (
                None,
                (
                    Err(format!("CSV file for {operator_name}/{version} not found")),
                    Written::Plain,
                ),
            ),
            Ok(Some(p)) => {
                let csv = Self::read_csv(root, &p);
                (Some(p), csv)
            }
        };
        let annotations = match find_yaml(&dir.join("metadata").join("annotations.yaml")) {
            None => Ok(Map::new()),
            Some(p) => match load_yaml(root, &p) {
                Ok(Value::Null) => Ok(Map::new()),
                Ok(Value::Object(m)) => match m.get("annotations") {
                    None | Some(Value::Null) => Ok(Map::new()),
                    Some(Value::Object(a)) => Ok(a.clone()),
                    Some(Value::Array(a)) if a.is_empty() => Ok(Map::new()),
                    Some(Value::String(s)) if s.is_empty() => Ok(Map::new()),
                    Some(_) => Err("annotations is not a mapping".to_owned()),
                },
                Ok(_) => Err("Invalid annotations.yaml contents".to_owned()),
                Err(e) => Err(e),
            },
        };
        let rc = dir.join("release-config.yaml");
        let release_config = if rc.is_file() {
            load_yaml(root, &rc).map(Some)
        } else {
            Ok(None)
        };
        PBundle {
            dir,
            operator_name,
            version,
            csv_path,
            csv,
            annotations,
            release_config,
            created_at,
        }
    }

    /// The CSV's content and how its `createdAt` annotation is written.
    fn read_csv(root: &Path, p: &Path) -> (Result<Map<String, Value>, String>, Written) {
        match parse_yaml(root, p) {
            Ok((text, Some(doc))) => {
                let written = written_as(&text, &doc, "/metadata/annotations/createdAt");
                match doc.value {
                    Value::Object(m) => (Ok(m), written),
                    _ => (Err(invalid_csv(p)), written),
                }
            }
            Ok((_, None)) => (Err(invalid_csv(p)), Written::Plain),
            Err(e) => (Err(e), Written::Plain),
        }
    }

    /// `Bundle(<operator>/<version>)`, as the pipeline prints a bundle.
    pub fn repr(&self) -> String {
        format!("Bundle({}/{})", self.operator_name, self.version)
    }

    /// The CSV's `metadata.name` split at its first dot: (operator name, version without a
    /// leading `v`).
    pub fn csv_full_name(&self) -> Result<(String, String), String> {
        let invalid = || format!("CSV for {} has invalid .metadata.name", self.repr());
        let csv = self.csv.as_ref().map_err(Clone::clone)?;
        let name = csv
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(invalid)?;
        let (n, v) = name.split_once('.').ok_or_else(invalid)?;
        Ok((n.to_owned(), v.trim_start_matches('v').to_owned()))
    }

    /// The operator name of the CSV.
    pub fn csv_operator_name(&self) -> Result<String, String> {
        self.csv_full_name().map(|(n, _)| n)
    }

    /// The version of the CSV's name.
    pub fn csv_operator_version(&self) -> Result<String, String> {
        self.csv_full_name().map(|(_, v)| v)
    }

    /// `spec` of the CSV (empty when absent).
    pub fn spec(&self) -> Option<&Map<String, Value>> {
        self.csv.as_ref().ok()?.get("spec")?.as_object()
    }

    /// An annotation's value.
    pub fn annotation(&self, key: &str) -> Option<&Value> {
        self.annotations.as_ref().ok()?.get(key)
    }

    /// The channels annotation, split at commas and trimmed.
    pub fn channels(&self) -> BTreeSet<String> {
        match self.annotation("operators.operatorframework.io.bundle.channels.v1") {
            Some(Value::String(s)) => s.split(',').map(|c| c.trim().to_owned()).collect(),
            Some(v) => [super::py::str_of(v).trim().to_owned()].into(),
            None => BTreeSet::new(),
        }
    }

    /// The default channel annotation, trimmed.
    pub fn default_channel(&self) -> Option<String> {
        self.annotation("operators.operatorframework.io.bundle.channel.default.v1")
            .map(|v| super::py::str_of(v).trim().to_owned())
    }

    /// `str()` of the package annotation, `""` when absent.
    pub fn metadata_operator_name(&self) -> Result<String, String> {
        let a = self.annotations.as_ref().map_err(Clone::clone)?;
        Ok(a.get("operators.operatorframework.io.bundle.package.v1")
            .map(super::py::str_of)
            .unwrap_or_default())
    }
}

fn invalid_csv(p: &Path) -> String {
    format!("Invalid CSV contents ({})", opship_core::paths::show(p))
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The CSV of `manifests/`: the first `*.clusterserviceversion.yaml`, else `.yml`; `Err` when
/// `manifests/` leads out of the operator directory `root`.
fn find_csv(root: &Path, manifests: &Path) -> Result<Option<PathBuf>, String> {
    if !manifests.is_dir() {
        return Ok(None);
    }
    let names = list_in_tree(root, manifests)?;
    for suffix in [".clusterserviceversion.yaml", ".clusterserviceversion.yml"] {
        if let Some(p) = names.iter().find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(suffix) && n.len() > suffix.len())
        }) {
            return Ok(Some(p.clone()));
        }
    }
    Ok(None)
}

/// An operator directory with its bundles and configuration.
#[derive(Debug)]
pub struct OperatorDir {
    /// The directory (resolved).
    pub root: PathBuf,
    /// Its name.
    pub name: String,
    /// The repository root: the parent of `operators/`.
    pub repo_root: PathBuf,
    /// `ci.yaml` (`{}` when absent).
    pub config: Loaded,
    /// Where `ci.yaml` is, when present.
    pub config_path: Option<PathBuf>,
    /// The repository's `config.yaml` (`{}` when absent).
    pub repo_config: Value,
    /// The bundles, by directory name.
    pub bundles: Vec<PBundle>,
    /// The checks' waivers for this operator in the repository's config.yaml (check name →
    /// why), once looked up.
    pub waivers: std::sync::OnceLock<BTreeMap<&'static str, String>>,
    /// What the checks ask of all bundles at once ([`OperatorDir::census`]).
    census: std::sync::OnceLock<Census>,
    /// The update graphs, once built ([`OperatorDir::graphs`]).
    graphs: std::sync::OnceLock<BTreeMap<String, Result<Channel, String>>>,
}

/// What checks of one bundle ask of all the operator's bundles, computed once per operator
/// (the lists as the pipeline prints them, each name and the whole list cut to a bounded
/// length) instead of once per bundle.
#[derive(Debug)]
pub struct Census {
    /// The package annotations that read, and how many bundles have each.
    pub package_names: BTreeMap<String, usize>,
    /// `repr()` of the sorted list of `package_names`.
    pub package_list: String,
    /// The CSV operator names that read, and how many bundles have each.
    pub csv_names: BTreeMap<String, usize>,
    /// `repr()` of the sorted list of `csv_names`.
    pub csv_list: String,
    /// Each CSV version with its bundle (the last one, in directory order), or the first
    /// bundle's CSV name problem.
    pub versions: Result<BTreeMap<String, usize>, String>,
    /// `repr()` of the sorted list of `versions`.
    pub versions_list: String,
}

/// `repr()` of a list of names, each name and the whole list bounded.
fn bounded_list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let cut: Vec<std::borrow::Cow<'_, str>> =
        names.map(|n| opship_core::naming::excerpt(n)).collect();
    crate::rule::bounded(super::py::repr_list(&cut))
}

/// A channel's update graph, with what a check words about the whole channel, once.
#[derive(Debug)]
pub struct Channel {
    /// The graph.
    pub graph: ChannelGraph,
    /// `check_dangling_bundles`' message for the channel, worded on first use.
    pub dangling: std::sync::OnceLock<Option<String>>,
}

impl OperatorDir {
    /// Loads an operator directory; its bundles are read in parallel.
    pub fn load(dir: &Path) -> std::io::Result<OperatorDir> {
        let root = std::fs::canonicalize(dir)?;
        if !root.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{}: not a directory", opship_core::paths::show(dir)),
            ));
        }
        let repo_root = root
            .parent()
            .and_then(Path::parent)
            .map_or_else(|| root.clone(), Path::to_path_buf);
        let config_path = find_yaml(&root.join("ci.yaml"));
        let config = match &config_path {
            Some(p) => load_yaml(&root, p),
            None => Ok(Value::Object(Map::new())),
        };
        // The repository's config.yaml only where there is a repository: an operator directory
        // in `operators/`. Elsewhere two levels up is some unrelated directory.
        let in_repo = root
            .parent()
            .is_some_and(|p| p.file_name().is_some_and(|n| n == "operators"));
        let repo_config = find_yaml(&repo_root.join("config.yaml"))
            .filter(|_| in_repo)
            .and_then(|p| load_yaml(&repo_root, &p).ok())
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::Object(Map::new()));
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| is_bundle(p))
            .collect();
        dirs.sort();
        let bundles = dirs
            .into_par_iter()
            .map(|d| PBundle::load(&root, d))
            .collect();
        Ok(OperatorDir {
            name: name_of(&root),
            root,
            repo_root,
            config,
            config_path,
            repo_config,
            bundles,
            waivers: std::sync::OnceLock::new(),
            census: std::sync::OnceLock::new(),
            graphs: std::sync::OnceLock::new(),
        })
    }

    /// `ci.yaml` as a mapping (`{}` when absent, empty or unreadable).
    pub fn ci(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        match &self.config {
            Ok(Value::Object(m)) => m,
            _ => &EMPTY,
        }
    }

    /// Whether `ci.yaml` turns FBC on (which switches some checks off).
    pub fn fbc_enabled(&self) -> bool {
        truthy(self.ci().get("fbc").and_then(|f| f.get("enabled")))
    }

    /// `Operator(<name>)`, as the pipeline prints an operator.
    pub fn repr(&self) -> String {
        format!("Operator({})", self.name)
    }

    /// The index of the bundle in a directory (the bundles are sorted by directory).
    pub fn index_of(&self, dir: &Path) -> Option<usize> {
        self.bundles
            .binary_search_by(|b| b.dir.as_path().cmp(dir))
            .ok()
    }

    /// What the checks ask of all bundles at once, computed on first use.
    pub fn census(&self) -> &Census {
        self.census.get_or_init(|| {
            let mut package_names: BTreeMap<String, usize> = BTreeMap::new();
            let mut csv_names: BTreeMap<String, usize> = BTreeMap::new();
            let mut versions: Result<BTreeMap<String, usize>, String> = Ok(BTreeMap::new());
            for (i, b) in self.bundles.iter().enumerate() {
                if let Ok(n) = b.metadata_operator_name() {
                    *package_names.entry(n).or_default() += 1;
                }
                if let Ok(n) = b.csv_operator_name() {
                    *csv_names.entry(n).or_default() += 1;
                }
                if let Ok(map) = &mut versions {
                    match b.csv_operator_version() {
                        Ok(v) => {
                            map.insert(v, i);
                        }
                        Err(e) => versions = Err(e),
                    }
                }
            }
            Census {
                package_list: bounded_list(package_names.keys()),
                csv_list: bounded_list(csv_names.keys()),
                versions_list: bounded_list(versions.iter().flat_map(BTreeMap::keys)),
                package_names,
                csv_names,
                versions,
            }
        })
    }

    /// The update graph of every channel a bundle names (in its channels or as its default
    /// channel), or why the pipeline cannot build it; built on first use, once per operator.
    pub fn graphs(&self) -> &BTreeMap<String, Result<Channel, String>> {
        self.graphs.get_or_init(|| {
            let mut by_channel: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for (i, b) in self.bundles.iter().enumerate() {
                for c in b.channels() {
                    by_channel.entry(c).or_default().push(i);
                }
                if let Some(d) = b.default_channel() {
                    by_channel.entry(d).or_default();
                }
            }
            by_channel
                .into_iter()
                .map(|(channel, members)| {
                    let g = self.update_graph(members).map(|graph| Channel {
                        graph,
                        dangling: std::sync::OnceLock::new(),
                    });
                    (channel, g)
                })
                .collect()
        })
    }

    /// The update graph of the channel `channel` (empty when no bundle is in it).
    pub fn graph(&self, channel: &str) -> Result<&Channel, String> {
        static EMPTY: Channel = Channel {
            graph: ChannelGraph {
                members: Vec::new(),
                unreplaced: Vec::new(),
                cycle: None,
            },
            dangling: std::sync::OnceLock::new(),
        };
        match self.graphs().get(channel) {
            None => Ok(&EMPTY),
            Some(g) => g.as_ref().map_err(Clone::clone),
        }
    }

    /// Sorts bundle indices in the pipeline's bundle order: by CSV operator name, then by
    /// version (SemVer when every version is, else as text).
    pub fn sort(&self, idx: &mut [usize]) -> Result<(), String> {
        let mut keys = BTreeMap::new();
        for &i in idx.iter() {
            let (name, version) = self.bundles[i].csv_full_name()?;
            let semver = SemVer::parse(&version);
            keys.insert(i, (name, version, semver));
        }
        let all_semver = keys.values().all(|(_, _, s)| s.is_some());
        idx.sort_by(|a, b| {
            let (na, va, sa) = &keys[a];
            let (nb, vb, sb) = &keys[b];
            na.cmp(nb)
                .then_with(|| if all_semver { sa.cmp(sb) } else { va.cmp(vb) })
        });
        Ok(())
    }

    /// The update graph of a channel of bundles `members`, by `updateGraph` of `ci.yaml`
    /// (`replaces-mode` by default): each bundle to the bundles that replace it.
    fn update_graph(&self, mut members: Vec<usize>) -> Result<ChannelGraph, String> {
        self.sort(&mut members)?;
        let strategy = self
            .ci()
            .get("updateGraph")
            .cloned()
            .unwrap_or_else(|| Value::String("replaces-mode".to_owned()));
        match strategy.as_str() {
            Some("semver-mode") => Ok(graph::semver_mode(members)),
            Some("replaces-mode") => self.replaces_graph(members),
            _ => Err(format!(
                "{}: unsupported updateGraph value: {}",
                self.repr(),
                opship_core::naming::excerpt(&super::py::str_of(&strategy))
            )),
        }
    }

    /// The replaces-mode graph: a bundle's `olm.skipRange` replaces every version of the
    /// channel it covers, its `spec.skips` and `spec.replaces` the versions they name.
    fn replaces_graph(&self, members: Vec<usize>) -> Result<ChannelGraph, String> {
        let mut by_version: BTreeMap<String, usize> = BTreeMap::new();
        for &i in &members {
            by_version.insert(self.bundles[i].csv_operator_version()?, i);
        }
        let ranges: Vec<Option<NpmRange>> = members
            .iter()
            .map(|&i| {
                let range = self.bundles[i]
                    .csv
                    .as_ref()
                    .ok()
                    .and_then(|c| c.get("metadata"))
                    .and_then(|m| m.get("annotations"))
                    .and_then(|a| a.get("olm.skipRange"))
                    .filter(|v| truthy(Some(*v)))?;
                NpmRange::parse(&super::py::str_of(range))
            })
            .collect();
        // A range is checked against every version of the channel, which must all be SemVer
        // then (skipRanges first, as the pipeline does).
        let mut versions = Vec::new();
        if ranges.iter().any(Option::is_some) {
            for (version, &i) in &by_version {
                let v = SemVer::parse(version).ok_or_else(|| {
                    format!(
                        "Invalid version string: {}",
                        opship_core::naming::excerpt(&super::py::repr_str(version))
                    )
                })?;
                versions.push((v, i));
            }
        }
        let mut nodes = Vec::with_capacity(members.len());
        for (&i, range) in members.iter().zip(&ranges) {
            let b = &self.bundles[i];
            let spec = b.spec();
            let mut previous: Vec<&Value> = spec
                .and_then(|s| s.get("skips"))
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            previous.extend(spec.and_then(|s| s.get("replaces")));
            let mut replaces = Vec::new();
            for name in previous {
                if name.is_null() {
                    continue;
                }
                let name = super::py::str_of(name);
                let Some((_, version)) = name.split_once('.') else {
                    return Err(format!(
                        "{} has invalid 'replaces' field: '{}'",
                        b.repr(),
                        opship_core::naming::excerpt(&name)
                    ));
                };
                replaces.push(version.trim_start_matches('v').to_owned());
            }
            nodes.push(graph::Node {
                bundle: i,
                replaces,
                range: range.as_ref(),
            });
        }
        Ok(graph::replaces_mode(
            members,
            &nodes,
            &by_version,
            &versions,
        ))
    }
}

/// Python truthiness of a parsed YAML value.
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
    }
}

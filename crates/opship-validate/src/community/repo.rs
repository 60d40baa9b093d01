//! An operator directory of a community-operators repository as the pipeline's
//! `operator_repo` reads it: its bundles (`<version>/manifests` + `<version>/metadata`),
//! `ci.yaml`, the repository's `config.yaml`, each bundle's CSV, annotations and
//! `release-config.yaml`, and the update graph of a channel.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use opship_core::input::{self, Kind};
use rayon::prelude::*;
use serde_json::{Map, Value};

use super::py::{NpmRange, SemVer};

/// A YAML file as `load_yaml` gives it: `Null` for an empty file, `Err` with why it could not
/// be read (missing files are told apart by the caller).
pub type Loaded = Result<Value, String>;

/// Reads one YAML document (several are an error, as PyYAML's `safe_load` says).
pub fn load_yaml(path: &Path) -> Loaded {
    let text = input::read_string(path, Kind::Manifest).map_err(|e| e.to_string())?;
    let (mut docs, _) =
        opship_core::yaml::parse_stream_lenient(&text, path).map_err(|e| e.to_string())?;
    match docs.len() {
        0 => Ok(Value::Null),
        1 => Ok(docs.remove(0).value),
        _ => Err(format!(
            "{} contains multiple yaml documents",
            opship_core::paths::show(path)
        )),
    }
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
}

impl PBundle {
    fn load(dir: PathBuf) -> PBundle {
        let version = name_of(&dir);
        let operator_name = dir.parent().map(name_of).unwrap_or_default();
        let csv_path = find_csv(&dir.join("manifests"));
        let csv = match &csv_path {
            None => Err(format!("CSV file for {operator_name}/{version} not found")),
            Some(p) => match load_yaml(p) {
                Ok(Value::Object(m)) => Ok(m),
                Ok(_) => Err(format!(
                    "Invalid CSV contents ({})",
                    opship_core::paths::show(p)
                )),
                Err(e) => Err(e),
            },
        };
        let annotations = match find_yaml(&dir.join("metadata").join("annotations.yaml")) {
            None => Ok(Map::new()),
            Some(p) => match load_yaml(&p) {
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
            load_yaml(&rc).map(Some)
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

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn find_csv(manifests: &Path) -> Option<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(manifests)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    for suffix in [".clusterserviceversion.yaml", ".clusterserviceversion.yml"] {
        if let Some(p) = names.iter().find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(suffix) && n.len() > suffix.len())
        }) {
            return Some(p.clone());
        }
    }
    None
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
            Some(p) => load_yaml(p),
            None => Ok(Value::Object(Map::new())),
        };
        let repo_config = find_yaml(&repo_root.join("config.yaml"))
            .and_then(|p| load_yaml(&p).ok())
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::Object(Map::new()));
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| is_bundle(p))
            .collect();
        dirs.sort();
        let bundles = dirs.into_par_iter().map(PBundle::load).collect();
        Ok(OperatorDir {
            name: name_of(&root),
            root,
            repo_root,
            config,
            config_path,
            repo_config,
            bundles,
        })
    }

    /// `ci.yaml` as a mapping (`{}` when absent, empty or unreadable).
    pub fn ci(&self) -> Map<String, Value> {
        match &self.config {
            Ok(Value::Object(m)) => m.clone(),
            _ => Map::new(),
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

    /// The index of the bundle in a directory.
    pub fn index_of(&self, dir: &Path) -> Option<usize> {
        self.bundles.iter().position(|b| b.dir == dir)
    }

    /// The bundles of a channel, ordered as the pipeline orders bundles: by CSV operator
    /// name, then by version (SemVer when every version is, else as text).
    pub fn channel_bundles(&self, channel: &str) -> Result<Vec<usize>, String> {
        let mut idx: Vec<usize> = (0..self.bundles.len())
            .filter(|&i| self.bundles[i].channels().contains(channel))
            .collect();
        self.sort(&mut idx)?;
        Ok(idx)
    }

    /// Sorts bundle indices in the pipeline's bundle order.
    pub fn sort(&self, idx: &mut [usize]) -> Result<(), String> {
        let mut keys = BTreeMap::new();
        for &i in idx.iter() {
            keys.insert(i, self.bundles[i].csv_full_name()?);
        }
        let all_semver = keys.values().all(|(_, v)| SemVer::parse(v).is_some());
        idx.sort_by(|a, b| {
            let (na, va) = &keys[a];
            let (nb, vb) = &keys[b];
            na.cmp(nb).then_with(|| {
                if all_semver {
                    SemVer::parse(va).cmp(&SemVer::parse(vb))
                } else {
                    va.cmp(vb)
                }
            })
        });
        Ok(())
    }

    /// The update graph of a channel: each bundle to the bundles that replace it, by
    /// `updateGraph` of `ci.yaml` (`replaces-mode` by default).
    pub fn update_graph(&self, channel: &str) -> Result<Graph, String> {
        let bundles = self.channel_bundles(channel)?;
        let ci = self.ci();
        let strategy = ci
            .get("updateGraph")
            .cloned()
            .unwrap_or_else(|| Value::String("replaces-mode".to_owned()));
        match strategy.as_str() {
            Some("semver-mode") => Ok(bundles.windows(2).map(|w| (w[0], [w[1]].into())).collect()),
            Some("replaces-mode") => self.replaces_graph(channel, &bundles),
            _ => Err(format!(
                "{}: unsupported updateGraph value: {}",
                self.repr(),
                super::py::str_of(&strategy)
            )),
        }
    }

    fn replaces_graph(&self, channel: &str, bundles: &[usize]) -> Result<Graph, String> {
        let mut edges = Graph::new();
        let mut by_version: BTreeMap<String, usize> = BTreeMap::new();
        for &i in bundles {
            by_version.insert(self.bundles[i].csv_operator_version()?, i);
        }
        // olm.skipRange first, as the pipeline does.
        for &i in bundles {
            let b = &self.bundles[i];
            let range = b
                .csv
                .as_ref()
                .ok()
                .and_then(|c| c.get("metadata"))
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get("olm.skipRange"))
                .filter(|v| truthy(Some(*v)));
            let Some(range) = range else { continue };
            let Some(range) = NpmRange::parse(&super::py::str_of(range)) else {
                continue;
            };
            for (version, &other) in &by_version {
                let v = SemVer::parse(version).ok_or_else(|| {
                    format!("Invalid version string: {}", super::py::repr_str(version))
                })?;
                if range.contains(&v)
                    && b.channels().contains(channel)
                    && self.bundles[other].channels().contains(channel)
                {
                    edges.entry(other).or_default().insert(i);
                }
            }
        }
        for &i in bundles {
            let b = &self.bundles[i];
            let spec = b.spec();
            let mut previous: Vec<Value> = spec
                .and_then(|s| s.get("skips"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let Some(r) = spec.and_then(|s| s.get("replaces")) {
                previous.push(r.clone());
            }
            for name in previous {
                if name.is_null() {
                    continue;
                }
                let name = super::py::str_of(&name);
                let Some((_, version)) = name.split_once('.') else {
                    return Err(format!(
                        "{} has invalid 'replaces' field: '{name}'",
                        b.repr()
                    ));
                };
                if let Some(&replaced) = by_version.get(version.trim_start_matches('v'))
                    && b.channels().contains(channel)
                    && self.bundles[replaced].channels().contains(channel)
                {
                    edges.entry(replaced).or_default().insert(i);
                }
            }
        }
        Ok(edges)
    }
}

/// An update graph: bundle index → indices of the bundles that replace it.
pub type Graph = BTreeMap<usize, BTreeSet<usize>>;

/// A back edge of the graph, if it has a cycle (depth-first, in bundle order).
pub fn find_cycle(graph: &Graph) -> Option<(usize, usize)> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut marks: BTreeMap<usize, Mark> = BTreeMap::new();
    for &start in graph.keys() {
        if marks.get(&start).copied().unwrap_or(Mark::New) != Mark::New {
            continue;
        }
        // An explicit stack: a long chain of bundles must not exhaust the thread's stack.
        let mut stack: Vec<(usize, Vec<usize>)> = vec![(start, next_of(graph, start))];
        marks.insert(start, Mark::Open);
        while let Some((node, rest)) = stack.last_mut() {
            let node = *node;
            if let Some(n) = rest.pop() {
                match marks.get(&n).copied().unwrap_or(Mark::New) {
                    Mark::New => {
                        marks.insert(n, Mark::Open);
                        stack.push((n, next_of(graph, n)));
                    }
                    Mark::Open => return Some((node, n)),
                    Mark::Done => {}
                }
            } else {
                marks.insert(node, Mark::Done);
                stack.pop();
            }
        }
    }
    None
}

fn next_of(graph: &Graph, node: usize) -> Vec<usize> {
    let mut v: Vec<usize> = graph
        .get(&node)
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default();
    v.reverse();
    v
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

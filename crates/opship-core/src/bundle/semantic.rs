//! The semantic drift check (`generate bundle --check --semantic`): two bundles compared as
//! parsed objects rather than bytes, so a bundle that operator-sdk committed (its key order,
//! empty fields, comments, tool annotations, file names, root-level `bundle.Dockerfile`) is
//! compared with what opship generates and only the real differences show.
//!
//! "Old" is the bundle on disk (the committed one), "new" the generated one, as in the byte
//! drift check's unified diff.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::manifest::{Object, split_api_version};
use crate::yaml::{self, Origin};

use super::layout::{Files, MAX_FILES, MAX_TOTAL_BYTES};

/// The Dockerfile of a bundle directory, as opship writes it.
const DOCKERFILE: &str = "bundle.Dockerfile";
/// Where operator-sdk writes it: the project root, next to the bundle directory.
const PARENT_DOCKERFILE: &str = "../bundle.Dockerfile";
/// CSV annotations that operator-sdk writes about itself (time and tool version) rather than
/// about the operator.
const TOOL_ANNOTATIONS: &[&str] = &[
    "createdAt",
    "operators.operatorframework.io/builder",
    "operators.operatorframework.io/project_layout",
];
/// Prefix of operator-sdk's own keys in `metadata/annotations.yaml` and the Dockerfile LABELs
/// (`operators.operatorframework.io.metrics.builder`, `.mediatype.v1`, `.project_layout`).
const METRICS_PREFIX: &str = "operators.operatorframework.io.metrics.";
/// Fields by which list items are matched instead of by position, in order of preference:
/// containers, env, ports, volumes, deployments and relatedImages have a `name`, permission
/// entries a `serviceAccountName`, webhook definitions a `generateName`.
const ITEM_KEYS: &[&str] = &["name", "serviceAccountName", "generateName"];

/// An object as the comparison identifies it: API group, kind and name (not the version, so a
/// CRD moved from `v1beta1` to `v1` is the same object with a changed `apiVersion`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId {
    /// API group (empty for the core group).
    pub group: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.name` (empty when absent).
    pub name: String,
}

impl ObjectId {
    fn of(o: &Object) -> ObjectId {
        ObjectId {
            group: o.group().to_owned(),
            kind: o.kind().to_owned(),
            name: o.name().to_owned(),
        }
    }

    /// The identity of a document that looks like a Kubernetes object.
    fn of_value(v: &Value) -> Option<ObjectId> {
        let kind = v["kind"].as_str()?;
        let api_version = v["apiVersion"].as_str()?;
        Some(ObjectId {
            group: split_api_version(api_version).0.to_owned(),
            kind: kind.to_owned(),
            name: v["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        })
    }
}

impl fmt::Display for ObjectId {
    /// `Kind name`, as messages name objects elsewhere.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "{} {}", self.kind, self.name)
        }
    }
}

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    /// A mapping key.
    Key(String),
    /// A list position (lists whose items have no unique name).
    Index(usize),
    /// A list item found by a field that names it uniquely (`[name=manager]`).
    Named {
        /// The field (`name`, `serviceAccountName` or `generateName`).
        key: String,
        /// Its value.
        value: String,
    },
}

/// Where inside an object (or file) a difference sits. Printed as
/// `spec.install.spec.deployments[name=x].spec.template.spec.containers[name=manager].image`;
/// keys that are not plain words are quoted (`metadata.annotations["olm.skipRange"]`); the
/// empty path is the whole object or file.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    /// The whole object or file.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Segment::Key(k) if is_word(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Segment::Key(k) => write!(f, "[{}]", json_string(k))?,
                Segment::Index(n) => write!(f, "[{n}]")?,
                Segment::Named { key, value } => write!(f, "[{key}={value}]")?,
            }
        }
        Ok(())
    }
}

/// A key printed without quotes: letters, digits, `_` and `-` (`alm-examples`).
fn is_word(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// What differs at a path.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Only the new (generated) side has it.
    Added(Value),
    /// Only the old (on-disk) side has it.
    Removed(Value),
    /// Both have it, with different values.
    Changed {
        /// The old side's value.
        old: Value,
        /// The new side's value.
        new: Value,
    },
    /// A note: the same object under another file name in `manifests/` (see the
    /// difference's `old_file` and `new_file`). File names are not content; hand-named
    /// bundles differ from opship's names by design.
    Renamed,
    /// A note: one side has no `bundle.Dockerfile` of its own and the one in the parent
    /// directory (`../bundle.Dockerfile`, operator-sdk's layout) was compared instead.
    DockerfileInParent,
}

/// One difference between the two bundles.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// The file on the old side, relative to its bundle directory (`None` when the object or
    /// file is only on the new side).
    pub old_file: Option<String>,
    /// The file on the new side (`None` when only on the old side).
    pub new_file: Option<String>,
    /// The object, when the file holds a Kubernetes object.
    pub object: Option<ObjectId>,
    /// Where inside the object or file.
    pub path: FieldPath,
    /// What differs.
    pub change: Change,
}

impl Difference {
    /// Informational only ([`Change::Renamed`], [`Change::DockerfileInParent`]): the content
    /// is the same.
    pub fn is_note(&self) -> bool {
        matches!(self.change, Change::Renamed | Change::DockerfileInParent)
    }

    /// The file the difference is shown under: the new side's, else the old side's.
    pub fn file(&self) -> &str {
        self.new_file
            .as_deref()
            .or(self.old_file.as_deref())
            .unwrap_or_default()
    }
}

/// How two bundles differ once parsed: content differences and notes, ordered by file, object
/// and path (independent of key order and of the order objects were found in).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SemanticDrift {
    /// Every difference, notes included.
    pub differences: Vec<Difference>,
}

impl SemanticDrift {
    /// No content difference (notes aside): the bundles install the same objects.
    pub fn is_clean(&self) -> bool {
        self.differences.iter().all(Difference::is_note)
    }

    /// The content differences.
    pub fn changes(&self) -> impl Iterator<Item = &Difference> {
        self.differences.iter().filter(|d| !d.is_note())
    }

    /// The notes (renamed files, the Dockerfile's place).
    pub fn notes(&self) -> impl Iterator<Item = &Difference> {
        self.differences.iter().filter(|d| d.is_note())
    }
}

/// Compares a generated bundle (new) with the bundle directory `dir` (old). A directory that
/// does not exist is an empty bundle. A file of `dir` that does not parse is an error naming
/// the file and line.
pub fn semantic_drift(files: &Files, dir: &Path) -> Result<SemanticDrift> {
    let old = Side::read(dir)?;
    let new = Side {
        files: files.clone(),
        root: PathBuf::from("(generated)"),
    };
    compare(&old, &new)
}

/// Compares two bundle directories, `old` and `new` (each may keep its `bundle.Dockerfile`
/// in its parent directory, as operator-sdk does).
pub fn semantic_drift_dirs(old: &Path, new: &Path) -> Result<SemanticDrift> {
    compare(&Side::read(old)?, &Side::read(new)?)
}

/// A value as the drift check prints it: compact JSON, and past 100 characters the size of a
/// mapping (`{…5 keys}`) or list (`[…12 items]`), or the start of a string with its length.
pub fn compact(v: &Value) -> String {
    const MAX: usize = 100;
    const HEAD: usize = 60;
    let s = serde_json::to_string(v).unwrap_or_default();
    if s.chars().count() <= MAX {
        return s;
    }
    match v {
        Value::Object(m) => format!("{{…{} keys}}", m.len()),
        Value::Array(a) => format!("[…{} items]", a.len()),
        Value::String(t) => {
            let head = json_string(&t.chars().take(HEAD).collect::<String>());
            format!(
                "{}…\" ({} characters)",
                head.strip_suffix('"').unwrap_or(&head),
                t.chars().count()
            )
        }
        _ => s,
    }
}

/// One bundle's files, by path relative to its directory; the parent's Dockerfile as
/// `../bundle.Dockerfile` when the directory has none.
struct Side {
    files: Files,
    /// What errors name files by: the directory, or `(generated)`.
    root: PathBuf,
}

impl Side {
    fn read(dir: &Path) -> Result<Side> {
        let mut rels = BTreeSet::new();
        super::layout::list_files(dir, dir, &mut rels)?;
        if rels.len() > MAX_FILES {
            return Err(Error::Input(format!(
                "{}: more than {MAX_FILES} files, more than a bundle may have; not compared",
                crate::paths::show(dir)
            )));
        }
        let mut files = Files::new();
        let mut total: u64 = 0;
        for rel in rels {
            let bytes = crate::input::read(&dir.join(&rel), crate::input::Kind::Manifest)?;
            total += bytes.len() as u64;
            if total > MAX_TOTAL_BYTES {
                return Err(Error::Input(format!(
                    "{}: more than {MAX_TOTAL_BYTES} bytes, more than a bundle may have; not compared",
                    crate::paths::show(dir)
                )));
            }
            files.insert(rel, bytes);
        }
        if !files.contains_key(DOCKERFILE)
            && let Some(parent) = dir.parent()
        {
            let path = parent.join(DOCKERFILE);
            if path.is_file() {
                let bytes = crate::input::read(&path, crate::input::Kind::Manifest)?;
                files.insert(PARENT_DOCKERFILE.to_owned(), bytes);
            }
        }
        Ok(Side {
            files,
            root: dir.to_path_buf(),
        })
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn text(&self, rel: &str, bytes: &[u8]) -> Result<String> {
        String::from_utf8(bytes.to_vec()).map_err(|e| Error::Yaml {
            origin: Origin::file(&self.path(rel)),
            message: format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        })
    }

    /// The documents of a YAML file, normalized.
    fn documents(&self, rel: &str, bytes: &[u8]) -> Result<Vec<Value>> {
        let text = self.text(rel, bytes)?;
        let docs = yaml::parse_stream(&text, &self.path(rel))?;
        Ok(docs
            .into_iter()
            .map(|d| {
                let mut v = d.value;
                if rel == "metadata/annotations.yaml"
                    && let Some(a) = v.get_mut("annotations").and_then(Value::as_object_mut)
                {
                    a.retain(|k, _| !k.starts_with(METRICS_PREFIX));
                }
                normalize(&v, None)
            })
            .collect())
    }

    /// Every object of `manifests/`, with its file, normalized.
    fn objects(&self) -> Result<BTreeMap<ObjectId, Vec<(String, Value)>>> {
        let mut out: BTreeMap<ObjectId, Vec<(String, Value)>> = BTreeMap::new();
        for (rel, bytes) in &self.files {
            if !is_manifest(rel) {
                continue;
            }
            let text = self.text(rel, bytes)?;
            for doc in yaml::parse_stream(&text, &self.path(rel))? {
                let o = Object::from_document(doc)?;
                let mut v = o.value().clone();
                if o.kind() == "ClusterServiceVersion"
                    && let Some(a) = v
                        .get_mut("metadata")
                        .and_then(|m| m.get_mut("annotations"))
                        .and_then(Value::as_object_mut)
                {
                    a.retain(|k, _| !TOOL_ANNOTATIONS.contains(&k.as_str()));
                }
                out.entry(ObjectId::of(&o))
                    .or_default()
                    .push((rel.clone(), normalize(&v, None)));
            }
        }
        Ok(out)
    }

    /// The Dockerfile (its place and LABELs, the metrics ones aside), if any.
    fn dockerfile(&self) -> Result<Option<(&'static str, Value)>> {
        for rel in [DOCKERFILE, PARENT_DOCKERFILE] {
            if let Some(bytes) = self.files.get(rel) {
                let text = self.text(rel, bytes)?;
                let labels: Map<String, Value> = dockerfile_labels(&text)
                    .into_iter()
                    .filter(|(k, _)| !k.starts_with(METRICS_PREFIX))
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                let mut root = Map::new();
                root.insert("LABEL".into(), Value::Object(labels));
                return Ok(Some((rel, normalize(&Value::Object(root), None))));
            }
        }
        Ok(None)
    }
}

/// YAML files of `manifests/` hold the bundle's objects (matched by identity, not file name).
fn is_manifest(rel: &str) -> bool {
    rel.starts_with("manifests/") && is_yaml(rel)
}

fn is_yaml(rel: &str) -> bool {
    rel.ends_with(".yaml") || rel.ends_with(".yml") || rel.ends_with(".json")
}

fn compare(old: &Side, new: &Side) -> Result<SemanticDrift> {
    let mut out = Vec::new();

    let old_objects = old.objects()?;
    let new_objects = new.objects()?;
    let ids: BTreeSet<&ObjectId> = old_objects.keys().chain(new_objects.keys()).collect();
    let none = Vec::new();
    for id in ids {
        let a = old_objects.get(id).unwrap_or(&none);
        let b = new_objects.get(id).unwrap_or(&none);
        // Objects given twice (`dup1_` files) pair up in file-name order.
        for i in 0..a.len().max(b.len()) {
            let (o, n) = (a.get(i), b.get(i));
            let mut d = Differ {
                old_file: o.map(|(f, _)| f.clone()),
                new_file: n.map(|(f, _)| f.clone()),
                object: Some(id.clone()),
                out: &mut out,
            };
            match (o.map(|(_, v)| v), n.map(|(_, v)| v)) {
                (Some(o), Some(n)) => {
                    if d.old_file != d.new_file {
                        d.push(FieldPath::default(), Change::Renamed);
                    }
                    d.diff(o, n, &mut Vec::new());
                }
                (Some(o), None) => d.push(FieldPath::default(), Change::Removed(o.clone())),
                (None, Some(n)) => d.push(FieldPath::default(), Change::Added(n.clone())),
                (None, None) => {}
            }
        }
    }

    match (old.dockerfile()?, new.dockerfile()?) {
        (Some((of, o)), Some((nf, n))) => {
            let mut d = Differ {
                old_file: Some(of.to_owned()),
                new_file: Some(nf.to_owned()),
                object: None,
                out: &mut out,
            };
            if of != nf {
                d.push(FieldPath::default(), Change::DockerfileInParent);
            }
            d.diff(&o, &n, &mut Vec::new());
        }
        (Some((of, o)), None) => out.push(Difference {
            old_file: Some(of.to_owned()),
            new_file: None,
            object: None,
            path: FieldPath::default(),
            change: Change::Removed(o),
        }),
        (None, Some((nf, n))) => out.push(Difference {
            old_file: None,
            new_file: Some(nf.to_owned()),
            object: None,
            path: FieldPath::default(),
            change: Change::Added(n),
        }),
        (None, None) => {}
    }

    let rels: BTreeSet<&String> = old
        .files
        .keys()
        .chain(new.files.keys())
        .filter(|r| !is_manifest(r) && *r != DOCKERFILE && *r != PARENT_DOCKERFILE)
        .collect();
    for rel in rels {
        compare_file(old, new, rel, &mut out)?;
    }

    // By file, then object; a stable sort keeps each object's differences in path order.
    out.sort_by(|a, b| (a.file(), &a.object).cmp(&(b.file(), &b.object)));
    Ok(SemanticDrift { differences: out })
}

/// A file outside `manifests/`: YAML compared as parsed documents, anything else byte-wise.
fn compare_file(old: &Side, new: &Side, rel: &str, out: &mut Vec<Difference>) -> Result<()> {
    let a = old.files.get(rel);
    let b = new.files.get(rel);
    let content = |side: &Side, bytes: &Vec<u8>| -> Result<Value> {
        if is_yaml(rel) {
            let mut docs = side.documents(rel, bytes)?;
            Ok(if docs.len() == 1 {
                docs.remove(0)
            } else {
                Value::Array(docs)
            })
        } else {
            Ok(Value::String(String::from_utf8_lossy(bytes).into_owned()))
        }
    };
    let o = a.map(|bytes| content(old, bytes)).transpose()?;
    let n = b.map(|bytes| content(new, bytes)).transpose()?;
    let object = n.as_ref().or(o.as_ref()).and_then(ObjectId::of_value);
    let mut d = Differ {
        old_file: a.map(|_| rel.to_owned()),
        new_file: b.map(|_| rel.to_owned()),
        object,
        out,
    };
    match (o, n) {
        (Some(o), Some(n)) if is_yaml(rel) => d.diff(&o, &n, &mut Vec::new()),
        (Some(o), Some(n)) => {
            if a != b {
                d.push(FieldPath::default(), Change::Changed { old: o, new: n });
            }
        }
        (Some(o), None) => d.push(FieldPath::default(), Change::Removed(o)),
        (None, Some(n)) => d.push(FieldPath::default(), Change::Added(n)),
        (None, None) => {}
    }
    Ok(())
}

/// Walks two normalized values and records where they differ.
struct Differ<'a> {
    old_file: Option<String>,
    new_file: Option<String>,
    object: Option<ObjectId>,
    out: &'a mut Vec<Difference>,
}

impl Differ<'_> {
    fn push(&mut self, path: FieldPath, change: Change) {
        self.out.push(Difference {
            old_file: self.old_file.clone(),
            new_file: self.new_file.clone(),
            object: self.object.clone(),
            path,
            change,
        });
    }

    fn at(&mut self, path: &[Segment], change: Change) {
        self.push(FieldPath(path.to_vec()), change);
    }

    fn diff(&mut self, old: &Value, new: &Value, path: &mut Vec<Segment>) {
        match (old, new) {
            (Value::Object(a), Value::Object(b)) => {
                let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
                for k in keys {
                    path.push(Segment::Key(k.clone()));
                    match (a.get(k), b.get(k)) {
                        (Some(x), Some(y)) => self.diff(x, y, path),
                        (Some(x), None) => self.at(path, Change::Removed(x.clone())),
                        (None, Some(y)) => self.at(path, Change::Added(y.clone())),
                        (None, None) => {}
                    }
                    path.pop();
                }
            }
            (Value::Array(a), Value::Array(b)) => match item_key(a, b, path.last()) {
                Some(key) => self.diff_named(key, a, b, path),
                None => {
                    for i in 0..a.len().max(b.len()) {
                        path.push(Segment::Index(i));
                        match (a.get(i), b.get(i)) {
                            (Some(x), Some(y)) => self.diff(x, y, path),
                            (Some(x), None) => self.at(path, Change::Removed(x.clone())),
                            (None, Some(y)) => self.at(path, Change::Added(y.clone())),
                            (None, None) => {}
                        }
                        path.pop();
                    }
                }
            },
            (Value::String(a), Value::String(b)) if a != b => {
                // JSON held in a string (`alm-examples`, `internal-objects`): pretty-printed
                // by one tool and compact or re-ordered by another is the same value.
                match (json_container(a), json_container(b)) {
                    (Some(x), Some(y)) => self.diff(&x, &y, path),
                    _ => self.at(path, changed(old, new)),
                }
            }
            _ if old != new => self.at(path, changed(old, new)),
            _ => {}
        }
    }

    fn diff_named(&mut self, key: &str, a: &[Value], b: &[Value], path: &mut Vec<Segment>) {
        let by_name = |list: &[Value]| -> BTreeMap<String, Value> {
            list.iter()
                .filter_map(|v| Some((v[key].as_str()?.to_owned(), v.clone())))
                .collect()
        };
        let (a, b) = (by_name(a), by_name(b));
        let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for name in names {
            path.push(Segment::Named {
                key: key.to_owned(),
                value: name.clone(),
            });
            match (a.get(name), b.get(name)) {
                (Some(x), Some(y)) => self.diff(x, y, path),
                (Some(x), None) => self.at(path, Change::Removed(x.clone())),
                (None, Some(y)) => self.at(path, Change::Added(y.clone())),
                (None, None) => {}
            }
            path.pop();
        }
    }
}

fn changed(old: &Value, new: &Value) -> Change {
    Change::Changed {
        old: old.clone(),
        new: new.clone(),
    }
}

fn json_container(s: &str) -> Option<Value> {
    let t = s.trim_start();
    if !(t.starts_with('[') || t.starts_with('{')) {
        return None;
    }
    let v: Value = serde_json::from_str(s).ok()?;
    Some(normalize(&v, None))
}

/// The field that names the items of two lists, when every item of both is a mapping with a
/// distinct non-empty string there. `initContainers` run in list order, so they are always
/// compared by position.
fn item_key(a: &[Value], b: &[Value], parent: Option<&Segment>) -> Option<&'static str> {
    if matches!(parent, Some(Segment::Key(k)) if k == "initContainers") {
        return None;
    }
    ITEM_KEYS.iter().copied().find(|key| {
        [a, b].iter().all(|list| {
            let mut seen = BTreeSet::new();
            list.iter().all(|v| {
                v[*key]
                    .as_str()
                    .is_some_and(|s| !s.is_empty() && seen.insert(s))
            })
        })
    })
}

/// The value with every mapping key whose value is empty (`null`, `""`, `[]`, `{}`, after
/// the same is done inside it) removed: operator-sdk writes `creationTimestamp: null`,
/// `strategy: {}`, `resources: {}` and a CRD `status` of empty fields that opship leaves out,
/// and Kubernetes reads both the same. List items are kept (positions matter). An empty
/// mapping that means something is kept: `emptyDir: {}` (a volume source),
/// `subresources.status: {}` (enables the status subresource) and a schema property `{}`
/// (a declared field of any type).
fn normalize(v: &Value, key: Option<&str>) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, child) in m {
                let n = normalize(child, Some(k));
                let meaningful_empty = n.as_object().is_some_and(Map::is_empty)
                    && (k == "emptyDir" || matches!(key, Some("subresources" | "properties")));
                if !is_empty(&n) || meaningful_empty {
                    out.insert(k.clone(), n);
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|c| normalize(c, None)).collect()),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// The LABELs of a Dockerfile, later ones winning as in Docker: `LABEL k=v k2="v 2"`, the
/// legacy `LABEL k v`, lines continued with `\`, comments skipped.
fn dockerfile_labels(text: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut logical = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                logical.push_str(head);
                logical.push(' ');
            }
            None => {
                logical.push_str(trimmed);
                label_instruction(&logical, &mut labels);
                logical.clear();
            }
        }
    }
    label_instruction(&logical, &mut labels);
    labels
}

fn label_instruction(line: &str, labels: &mut BTreeMap<String, String>) {
    let line = line.trim();
    let Some((word, rest)) = line.split_once(char::is_whitespace) else {
        return;
    };
    if !word.eq_ignore_ascii_case("LABEL") {
        return;
    }
    let words = shell_words(rest);
    match words.first() {
        // Legacy form: the first word is the key, the other words the value.
        Some((k, None)) if !k.is_empty() => {
            let rest = words.get(1..).unwrap_or_default();
            let value: Vec<&str> = rest.iter().map(|(w, _)| w.as_str()).collect();
            labels.insert(k.clone(), value.join(" "));
        }
        Some(_) => {
            for (word, eq) in &words {
                if let Some((k, v)) = eq.and_then(|i| Some((word.get(..i)?, word.get(i + 1..)?)))
                    && !k.is_empty()
                {
                    labels.insert(k.to_owned(), v.to_owned());
                }
            }
        }
        None => {}
    }
}

/// Words of a LABEL line with quotes (`"…"` with backslash escapes, `'…'`) removed, each with
/// the byte offset of its first unquoted `=`.
fn shell_words(s: &str) -> Vec<(String, Option<usize>)> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut eq = None;
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    out.push((std::mem::take(&mut word), eq.take()));
                    in_word = false;
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(next) = chars.next() {
                                word.push(next);
                            }
                        }
                        c => word.push(c),
                    }
                }
            }
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            '=' if eq.is_none() => {
                in_word = true;
                eq = Some(word.len());
                word.push('=');
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push((word, eq));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_fields_are_absent_unless_they_mean_something() {
        let v = json!({
            "metadata": {"creationTimestamp": null, "labels": {}},
            "spec": {"strategy": {}, "x": "", "list": [], "nested": {"a": {"b": null}},
                     "volumes": [{"name": "v", "emptyDir": {}}], "args": [""]},
            "subresources": {"status": {}},
            "properties": {"any": {}},
        });
        assert_eq!(
            normalize(&v, None),
            json!({
                "spec": {"volumes": [{"name": "v", "emptyDir": {}}], "args": [""]},
                "subresources": {"status": {}},
                "properties": {"any": {}},
            })
        );
    }

    #[test]
    fn paths_print_readably() {
        let p = FieldPath(vec![
            Segment::Key("spec".into()),
            Segment::Key("relatedImages".into()),
            Segment::Named {
                key: "name".into(),
                value: "manager".into(),
            },
            Segment::Key("image".into()),
        ]);
        assert_eq!(p.to_string(), "spec.relatedImages[name=manager].image");
        let p = FieldPath(vec![
            Segment::Key("metadata".into()),
            Segment::Key("annotations".into()),
            Segment::Key("olm.skipRange".into()),
        ]);
        assert_eq!(p.to_string(), r#"metadata.annotations["olm.skipRange"]"#);
        let p = FieldPath(vec![Segment::Key("a b".into()), Segment::Index(2)]);
        assert_eq!(p.to_string(), r#"["a b"][2]"#);
    }

    #[test]
    fn dockerfile_labels_in_every_form() {
        let text = "FROM scratch\n# LABEL commented=out\nLABEL a=1 b=\"two words\" \\\n  c='x=y'\nlabel legacy value with spaces\nLABEL a=3\nCOPY x /x\n";
        let l = dockerfile_labels(text);
        assert_eq!(
            l,
            BTreeMap::from([
                ("a".into(), "3".into()),
                ("b".into(), "two words".into()),
                ("c".into(), "x=y".into()),
                ("legacy".into(), "value with spaces".into()),
            ])
        );
        // Malformed lines give no label, and no panic.
        assert!(dockerfile_labels("LABEL\nLABEL =\nLABEL =x\n\\").is_empty());
        dockerfile_labels("LABEL 'é=\nLABEL \"\nLABEL é \\");
    }

    #[test]
    fn long_values_are_shortened_deterministically() {
        assert_eq!(compact(&json!("short")), "\"short\"");
        let long = "x".repeat(200);
        assert_eq!(
            compact(&json!(long)),
            format!("\"{}…\" (200 characters)", "x".repeat(60))
        );
        let list: Vec<u32> = (0..100).collect();
        assert_eq!(compact(&json!(list)), "[…100 items]");
    }

    #[test]
    fn named_items_match_by_name_and_init_containers_by_position() {
        let a = [json!({"name": "a", "image": "1"}), json!({"name": "b"})];
        let b = [json!({"name": "b"}), json!({"name": "a", "image": "2"})];
        assert_eq!(item_key(&a, &b, None), Some("name"));
        assert_eq!(
            item_key(&a, &b, Some(&Segment::Key("initContainers".into()))),
            None
        );
        let dup = [json!({"name": "a"}), json!({"name": "a"})];
        assert_eq!(item_key(&dup, &b, None), None);
    }
}

//! The only place in opship that reads or writes YAML: parsing with source positions and safe,
//! byte-stable emitting.
//!
//! Documents are parsed into a [`Document`]: a `serde_json::Value` (so unknown Kubernetes
//! fields survive untouched and key order is kept) plus the line and column where each node
//! starts, kept as a compact table in document order that a JSON pointer is looked up in. Every
//! later error or validation finding looks its position up here instead of re-parsing.
//!
//! Reading follows Kubernetes' YAML 1.1 habits where they matter (`0644` is octal, merge keys are
//! expanded) and is stricter where silence would hide a mistake (duplicate keys are errors).
//! Writing quotes every plain scalar that some reader could take for a bool, number or null.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::Spanned;

use crate::error::{Error, Result};

/// A position in a YAML source file, 1-based like editors show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    /// Line, starting at 1 (0 when unknown).
    pub line: u32,
    /// Column, starting at 1 (0 when unknown).
    pub col: u32,
}

/// A file and a position in it: what error messages and findings print as `file:line:col`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    /// The file as the user named it (or `<stdin>`).
    pub file: Arc<Path>,
    /// Where in that file.
    pub pos: Pos,
}

impl Origin {
    /// An origin pointing at a whole file rather than a line in it.
    pub fn file(path: &Path) -> Self {
        Origin {
            file: Arc::from(path),
            pos: Pos::default(),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pos.line == 0 {
            write!(f, "{}", crate::paths::show(&self.file))
        } else {
            write!(
                f,
                "{}:{}:{}",
                crate::paths::show(&self.file),
                self.pos.line,
                self.pos.col
            )
        }
    }
}

/// One YAML document with the positions of its nodes.
#[derive(Debug, Clone)]
pub struct Document {
    /// The content. Maps keep their key order.
    pub value: Value,
    /// The file the document came from.
    pub file: Arc<Path>,
    /// Position of every node of the stream document this one came from.
    positions: Arc<Positions>,
    /// Index of this document's root in `positions` (not 0 for an item cut out of a
    /// `kind: List`).
    root: u32,
}

impl Document {
    /// Wraps a value that did not come from a file (generated content).
    pub fn detached(value: Value, file: &Path) -> Self {
        Document {
            value,
            file: Arc::from(file),
            positions: Arc::default(),
            root: 0,
        }
    }

    /// The node at `pointer` as a document of its own, keeping its positions.
    pub fn child(&self, pointer: &str) -> Option<Document> {
        Some(Document {
            value: self.value.pointer(pointer)?.clone(),
            file: self.file.clone(),
            positions: self.positions.clone(),
            root: self.positions.find(self.root, pointer),
        })
    }

    /// Where the node at `pointer` starts; falls back to the nearest ancestor that has a
    /// position, so a missing field still points at the object that should hold it.
    pub fn origin(&self, pointer: &str) -> Origin {
        Origin {
            file: self.file.clone(),
            pos: self
                .positions
                .pos_at(self.positions.find(self.root, pointer) as usize),
        }
    }
}

/// Where every node of one document starts, in document order, with the shape of the tree
/// (each node's extent and its key in its parent mapping), so that a JSON pointer can be
/// looked up without one string per node. Parsing records a few bytes per node; looking a
/// pointer up walks its tokens through the children of each level, which only findings do.
#[derive(Debug, Default, Clone)]
pub(crate) struct Positions {
    pos: Vec<Pos>,
    /// One past the index of each node's last descendant.
    end: Vec<u32>,
    /// Each node's key in its parent mapping, as a range of `keys` (`NO_KEY` for a sequence
    /// item or a root).
    key: Vec<(u32, u32)>,
    keys: String,
}

const NO_KEY: (u32, u32) = (u32::MAX, 0);
/// The key of an entry a rename dropped: matches no key and is no sequence item.
const DROPPED: (u32, u32) = (u32::MAX, 1);

impl Positions {
    /// Records a node that starts at `at` (the key it has in its parent mapping, if any) and
    /// returns its index; [`Positions::close`] ends it after its descendants.
    pub(crate) fn open(&mut self, at: Pos, key: Option<&str>) -> usize {
        let i = self.pos.len();
        self.pos.push(at);
        self.end.push(u32::MAX);
        let k = match key {
            Some(k) => {
                let start = self.keys.len();
                self.keys.push_str(k);
                (
                    u32::try_from(start).unwrap_or(u32::MAX),
                    u32::try_from(k.len()).unwrap_or(0),
                )
            }
            None => NO_KEY,
        };
        self.key.push(k);
        i
    }

    /// Ends the node at `i`: every node recorded since is inside it.
    pub(crate) fn close(&mut self, i: usize) {
        if let Some(e) = self.end.get_mut(i) {
            *e = u32::try_from(self.pos.len()).unwrap_or(u32::MAX);
        }
    }

    pub(crate) fn pos_at(&self, i: usize) -> Pos {
        self.pos.get(i).copied().unwrap_or_default()
    }

    fn end_of(&self, i: usize) -> usize {
        self.end
            .get(i)
            .map_or(i + 1, |&e| (e as usize).min(self.pos.len()).max(i + 1))
    }

    fn key_of(&self, i: usize) -> Option<&str> {
        let (start, len) = *self.key.get(i)?;
        if (start, len) == NO_KEY || (start, len) == DROPPED {
            return None;
        }
        self.keys.get(start as usize..start as usize + len as usize)
    }

    /// The children of node `i`, in document order.
    pub(crate) fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.end_of(i);
        let mut c = i + 1;
        std::iter::from_fn(move || {
            if c >= end {
                return None;
            }
            let here = c;
            c = self.end_of(c);
            Some(here)
        })
    }

    /// Whether node `i` is the value of mapping key `key`.
    pub(crate) fn key_is(&self, i: usize, key: &str) -> bool {
        self.key_of(i) == Some(key)
    }

    /// The child of `i` with mapping key `key`: the last one, as a key given twice keeps its
    /// later value.
    pub(crate) fn child_by_key(&self, i: usize, key: &str) -> Option<usize> {
        self.children(i)
            .filter(|&c| self.key_of(c) == Some(key))
            .last()
    }

    /// Gives node `i` the mapping key `key` (a renamed entry).
    fn set_key(&mut self, i: usize, key: &str) {
        let start = self.keys.len();
        self.keys.push_str(key);
        if let Some(k) = self.key.get_mut(i) {
            *k = (
                u32::try_from(start).unwrap_or(u32::MAX),
                u32::try_from(key.len()).unwrap_or(0),
            );
        }
    }

    /// Takes node `i` out of key lookups (an entry a rename dropped).
    fn drop_key(&mut self, i: usize) {
        if let Some(k) = self.key.get_mut(i) {
            *k = DROPPED;
        }
    }

    /// Whether the lookup of `pointer` from `root` ended at `at` because it found every token
    /// (and not at an ancestor because a token was missing).
    fn node_pointer_matches(&self, root: u32, pointer: &str, at: usize) -> bool {
        let depth = pointer
            .strip_prefix('/')
            .map_or(0, |rest| rest.split('/').count());
        let mut steps = 0;
        let mut i = root as usize;
        if at >= self.pos.len() {
            return false;
        }
        // Walk down from the root towards `at` through the children that contain it.
        while i != at {
            let Some(c) = self.children(i).find(|&c| c <= at && at < self.end_of(c)) else {
                return false;
            };
            i = c;
            steps += 1;
        }
        steps == depth
    }

    /// The deepest node on the way along `pointer` from `root` (`root` itself when the
    /// pointer's first token is not found, or when there are no positions).
    fn find(&self, root: u32, pointer: &str) -> u32 {
        let mut at = root as usize;
        if at >= self.pos.len() {
            return root;
        }
        let Some(rest) = pointer.strip_prefix('/') else {
            return root;
        };
        for token in rest.split('/') {
            let token: std::borrow::Cow<'_, str> = if token.contains('~') {
                token.replace("~1", "/").replace("~0", "~").into()
            } else {
                token.into()
            };
            let next = self.child_by_key(at, &token).or_else(|| {
                let n: usize = token.parse().ok()?;
                if token.len() > 1 && token.starts_with('0') {
                    return None;
                }
                self.children(at)
                    .nth(n)
                    .filter(|&c| self.key.get(c) == Some(&NO_KEY))
            });
            match next {
                Some(c) => at = c,
                None => break,
            }
        }
        u32::try_from(at).unwrap_or(root)
    }
}

impl Document {
    /// Renames the key `from` of the mapping at `parent` to `to`, in place, with the positions
    /// of the node and of everything under it (validators spell a key as Go's decoder reads
    /// it). When `to` is there too, `replace` says which value stays: the renamed one (`to`'s
    /// entry is dropped) or `to`'s (the `from` entry is dropped). Returns false when there is
    /// no such key.
    pub fn rename_key(&mut self, parent: &str, from: &str, to: &str, replace: bool) -> bool {
        let Some(Value::Object(map)) = self.value.pointer_mut(parent) else {
            return false;
        };
        if !map.contains_key(from) {
            return false;
        }
        let clash = map.contains_key(to);
        let old = std::mem::take(map);
        let mut renamed = Map::with_capacity(old.len());
        for (k, v) in old {
            if k == from {
                if !clash || replace {
                    renamed.insert(to.to_owned(), v);
                }
            } else if k != to || !replace {
                renamed.insert(k, v);
            }
        }
        *map = renamed;
        let from_wins = !clash || replace;
        let positions = Arc::make_mut(&mut self.positions);
        let at = positions.find(self.root, parent) as usize;
        // The table only knows the mapping when the lookup reached it (not its nearest
        // ancestor): then its children with either key are relabelled or dropped.
        if positions.node_pointer_matches(self.root, parent, at) {
            let children: Vec<usize> = positions.children(at).collect();
            for c in children {
                if positions.key_is(c, from) {
                    if from_wins {
                        positions.set_key(c, to);
                    } else {
                        positions.drop_key(c);
                    }
                } else if positions.key_is(c, to) && from_wins && clash {
                    positions.drop_key(c);
                }
            }
        }
        true
    }
}

/// Escapes one reference token of a JSON pointer (RFC 6901).
pub fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A YAML node as serde-saphyr hands it over, with its span; turned into a [`Document`].
enum Node {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(String, Spanned<Node>)>),
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Node, E> {
        Ok(Node::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Node, E> {
        Ok(Node::Number(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> std::result::Result<Node, E> {
        i64::try_from(v)
            .map(|v| Node::Number(v.into()))
            .or_else(|_| u64::try_from(v).map(|v| Node::Number(v.into())))
            .map_err(|_| E::custom(format!("integer {v} does not fit in 64 bits")))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> std::result::Result<Node, E> {
        u64::try_from(v)
            .map(|v| Node::Number(v.into()))
            .map_err(|_| E::custom(format!("integer {v} does not fit in 64 bits")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Node, E> {
        Number::from_f64(v)
            .map(Node::Number)
            .ok_or_else(|| E::custom("infinite or NaN numbers are not allowed"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Node, E> {
        Ok(Node::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Node, E> {
        Ok(Node::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E: de::Error>(self) -> std::result::Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Key>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            entries.push((key.0, value));
        }
        Ok(Node::Map(entries))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

/// A mapping key. Kubernetes objects only have string keys, but YAML allows any scalar; those
/// are kept as their text, as sigs.k8s.io/yaml does when it converts YAML to JSON.
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a scalar mapping key")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Key, E> {
                Ok(Key(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Key, E> {
                Ok(Key(v))
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Key, E> {
                Ok(Key("null".to_owned()))
            }
        }
        // Asking for a string keeps the key's spelling: `y:` stays "y" instead of becoming the
        // YAML 1.1 boolean `true`, and `1:` stays "1".
        d.deserialize_string(KeyVisitor)
    }
}

fn pos_of<T>(s: &Spanned<T>) -> Pos {
    let loc = s.referenced;
    Pos {
        line: u32::try_from(loc.line()).unwrap_or(u32::MAX),
        col: u32::try_from(loc.column()).unwrap_or(u32::MAX),
    }
}

fn flatten(
    node: Spanned<Node>,
    key: Option<&str>,
    positions: &mut Positions,
    dups: &mut Vec<(String, Pos)>,
) -> Value {
    let me = positions.open(pos_of(&node), key);
    let v = match node.value {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(b),
        Node::Number(n) => Value::Number(n),
        Node::String(s) => Value::String(s),
        Node::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(flatten(item, None, positions, dups));
            }
            Value::Array(out)
        }
        Node::Map(entries) => {
            let mut out = Map::with_capacity(entries.len());
            for (key, value) in entries {
                let at = pos_of(&value);
                let v = flatten(value, Some(&key), positions, dups);
                // Only reached in lenient mode: the strict parser refuses duplicates earlier.
                // The later value wins, as in Go's JSON decoding that Kubernetes tools use.
                if out.insert(key.clone(), v).is_some() {
                    dups.push((key, at));
                }
            }
            Value::Object(out)
        }
    };
    positions.close(me);
    v
}

/// Limits against hostile input. Generous enough for the multi-MiB CRDs real operators ship
/// (deep `openAPIV3Schema` nesting, hundreds of thousands of nodes), tight enough that an
/// alias bomb or a runaway stream stops with an error instead of eating the machine.
/// Node limit of trusted input (the project's own manifests).
const MAX_NODES: usize = 20_000_000;
/// Node limit of files under validation, which may come from anyone: the largest file of 237
/// real bundles has about 57,000 nodes; 2 million keep one file below about 600 MB.
const UNTRUSTED_MAX_NODES: usize = 2_000_000;
/// Nodes that aliases (and the copies kept for anchors) may add to any input, however small.
const COPIED_NODES_FLOOR: usize = 500_000;
/// Scalar bytes that aliases (and the copies kept for anchors) may add to any input.
const COPIED_BYTES_FLOOR: usize = 16 * 1024 * 1024;
/// Aliases in one input.
const MAX_ALIASES: usize = 10_000;

/// The budget of one YAML input, scaled to its size, that every reader applies (the tree
/// builder of [`parse_stream`] and friends, and the check in front of [`parse_typed`]). Text
/// without aliases costs memory in proportion to its size; aliases are what can turn a few
/// bytes into gigabytes (a nest of lists ten times ten times ..., or one 3.5 MB scalar named
/// ten thousand times). So what aliases and anchors copy is counted on its own, in nodes and
/// in scalar bytes, and may not exceed what the input could hold by itself: a node per 8 bytes
/// and its own size in bytes, with floors for small files, and at most [`MAX_ALIASES`]
/// aliases. A file within the budget takes at most a few hundred MB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Nodes in all, alias expansion included.
    pub max_nodes: usize,
    /// Alias (`*name`) occurrences.
    pub max_aliases: usize,
    /// Nodes copied by aliases and for anchors.
    pub max_copied_nodes: usize,
    /// Scalar and key bytes copied by aliases and for anchors.
    pub max_copied_bytes: usize,
}

impl Budget {
    /// The budget of an input of `len` bytes; `untrusted` for files under validation (a
    /// tighter cap on nodes).
    pub fn for_input(len: usize, untrusted: bool) -> Budget {
        let cap = if untrusted {
            UNTRUSTED_MAX_NODES
        } else {
            MAX_NODES
        };
        Budget {
            max_nodes: cap,
            max_aliases: MAX_ALIASES,
            max_copied_nodes: (len / 8).max(COPIED_NODES_FLOOR).min(cap),
            max_copied_bytes: len.max(COPIED_BYTES_FLOOR),
        }
    }
}

fn budget() -> serde_saphyr::Budget {
    let mut b = serde_saphyr::Budget::default();
    b.max_depth = 512;
    b.max_documents = 100_000;
    b.max_nodes = 20_000_000;
    b.max_events = 40_000_000;
    b.max_total_scalar_bytes = 512 * 1024 * 1024;
    b.max_reader_input_bytes = Some(1024 * 1024 * 1024);
    b.max_aliases = MAX_ALIASES;
    b.max_anchors = 10_000;
    b
}

fn options() -> serde_saphyr::Options {
    options_with(serde_saphyr::DuplicateKeyPolicy::Error, budget())
}

fn options_with(
    duplicate_keys: serde_saphyr::DuplicateKeyPolicy,
    budget: serde_saphyr::Budget,
) -> serde_saphyr::Options {
    serde_saphyr::options! {
        // Kubernetes reads YAML 1.1: `defaultMode: 0644` means 420, not 644.
        legacy_octal_numbers: true,
        duplicate_keys: duplicate_keys,
        budget: Some(budget),
        with_snippet: false,
    }
}

fn yaml_error(file: &Path, err: &serde_saphyr::Error) -> Error {
    let pos = err
        .location()
        .map(|l| Pos {
            line: u32::try_from(l.line()).unwrap_or(u32::MAX),
            col: u32::try_from(l.column()).unwrap_or(u32::MAX),
        })
        .unwrap_or_default();
    let message = err.without_snippet().to_string();
    // serde-saphyr appends " at line L, column C" to some messages; the origin already says it.
    let message = match message.rfind(" at line ") {
        Some(i) if pos.line != 0 => message[..i].to_owned(),
        _ => message,
    };
    Error::Yaml {
        origin: Origin {
            file: Arc::from(file),
            pos,
        },
        message,
    }
}

/// Parses a stream of YAML documents (`---` separated). Empty documents are skipped. A leading
/// byte-order mark and CRLF line ends are accepted.
pub fn parse_stream(text: &str, file: &Path) -> Result<Vec<Document>> {
    parse_fast(text, file, false, true).map(|(docs, _)| docs)
}

/// [`parse_stream`] with granit-parser alone, without the quick reader in front: for the
/// benchmark that compares the two.
#[doc(hidden)]
pub fn parse_stream_granit(text: &str, file: &Path) -> Result<Vec<Document>> {
    parse_fast(text, file, false, false).map(|(docs, _)| docs)
}

fn parse_fast(
    text: &str,
    file: &Path,
    lenient: bool,
    quick: bool,
) -> Result<(Vec<Document>, Vec<DuplicateKey>)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let budget = Budget::for_input(text.len(), lenient);
    let (trees, dups) = crate::yaml_tree::parse(text, file, lenient, budget, quick)?;
    let file: Arc<Path> = Arc::from(file);
    let docs = trees
        .into_iter()
        .map(|t| Document {
            value: t.value,
            file: file.clone(),
            positions: Arc::new(t.positions),
            root: 0,
        })
        .collect();
    Ok((docs, dups))
}

/// [`parse_stream`] through serde-saphyr's deserializer: the reference that the event-driven
/// fast path is tested against (same values, same positions).
#[doc(hidden)]
pub fn parse_stream_serde(text: &str, file: &Path) -> Result<Vec<Document>> {
    parse_stream_with(
        text,
        file,
        options_with(serde_saphyr::DuplicateKeyPolicy::Error, budget()),
    )
    .map(|(docs, _)| docs)
}

/// A mapping key given twice, found by [`parse_stream_lenient`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The key.
    pub key: String,
    /// Where its second value starts.
    pub origin: Origin,
}

/// Like [`parse_stream`], but a key given twice in one mapping is accepted (the later value
/// wins, as Go's Kubernetes libraries decide) and reported, for validators that must read what
/// the reference tools accept. Since validators read files from anyone, the limits are
/// tighter: at most 2 million nodes per file and 100,000 events recorded for anchors.
pub fn parse_stream_lenient(text: &str, file: &Path) -> Result<(Vec<Document>, Vec<DuplicateKey>)> {
    parse_fast(text, file, true, true)
}

fn parse_stream_with(
    text: &str,
    file: &Path,
    options: serde_saphyr::Options,
) -> Result<(Vec<Document>, Vec<DuplicateKey>)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let nodes: Vec<Spanned<Node>> = serde_saphyr::from_multiple_with_options(text, options)
        .map_err(|e| yaml_error(file, &e))?;
    let file: Arc<Path> = Arc::from(file);
    let mut dups = Vec::new();
    let docs = nodes
        .into_iter()
        .filter(|n| !matches!(n.value, Node::Null))
        .map(|node| {
            let mut positions = Positions::default();
            let value = flatten(node, None, &mut positions, &mut dups);
            Document {
                value,
                file: file.clone(),
                positions: Arc::new(positions),
                root: 0,
            }
        })
        .collect();
    let dups = dups
        .into_iter()
        .map(|(key, pos)| DuplicateKey {
            key,
            origin: Origin {
                file: file.clone(),
                pos,
            },
        })
        .collect();
    Ok((docs, dups))
}

/// Parses exactly one document; an empty file or a stream of several is an error.
pub fn parse_one(text: &str, file: &Path) -> Result<Document> {
    let mut docs = parse_stream(text, file)?;
    match docs.len() {
        1 => Ok(docs.remove(0)),
        0 => Err(Error::Yaml {
            origin: Origin::file(file),
            message: "the file holds no YAML document".into(),
        }),
        n => Err(Error::Yaml {
            origin: docs[1].origin(""),
            message: format!("expected one YAML document, found {n}"),
        }),
    }
}

/// Deserializes one document into a typed value; unknown fields and type errors come back with
/// the file, line and column of the offending key.
pub fn parse_typed<T: serde::de::DeserializeOwned>(text: &str, file: &Path) -> Result<T> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // serde-saphyr replays an alias's events for every use and a typed field may copy each
    // replayed scalar, so the shared budget is checked first, by the tree builder (which
    // stops at the first copy too many); every other error is left to serde-saphyr's words.
    crate::yaml_tree::check_budget(text, file, Budget::for_input(text.len(), false))?;
    serde_saphyr::from_str_with_options(text, options()).map_err(|e| yaml_error(file, &e))
}

/// Reads and parses a file as a YAML stream.
pub fn read_stream(path: &Path) -> Result<Vec<Document>> {
    let text = read_text(path)?;
    parse_stream(&text, path)
}

/// Reads a manifest file as UTF-8 text, with the path in the error (a regular file within
/// the manifest budget of [`crate::input`]).
pub fn read_text(path: &Path) -> Result<String> {
    read_text_of(path, crate::input::Kind::Manifest)
}

/// [`read_text`] for a file of another kind (its own size budget).
pub fn read_text_of(path: &Path, kind: crate::input::Kind) -> Result<String> {
    let bytes = crate::input::read(path, kind)?;
    String::from_utf8(bytes).map_err(|e| Error::Yaml {
        origin: Origin::file(path),
        message: format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

fn ser_options() -> serde_saphyr::SerializerOptions {
    let mut o = serde_saphyr::SerializerOptions::default();
    o.indent_step = 2;
    // Block-sequence items indented under their key, as kubectl and operator-sdk write them.
    o.compact_list_indent = false;
    // Long one-line strings (image references, descriptions) stay on one line; folding them
    // with `>` is legal but makes diffs of generated bundles noisy.
    o.folded_wrap_chars = usize::MAX / 2;
    o.prefer_block_scalars = true;
    o
}

/// What a value is, for messages (`must be a string, not a list`).
pub fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The value with every mapping's keys in sorted order.
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Writes one value as a YAML document in canonical form: mapping keys sorted (as kubectl and
/// kustomize print them), so the bytes depend on the content only, not on how the input was
/// laid out. Strings that YAML 1.1 or 1.2 readers could take for anything but a string
/// (`yes`, `on`, `y`, `0644`, `null`, `1e3`, ...) are quoted.
pub fn to_string(value: &Value) -> Result<String> {
    let mut out = String::new();
    serde_saphyr::to_fmt_writer_with_options(&mut out, &sorted(value), ser_options())
        .map_err(|e| Error::Internal(format!("could not write YAML: {e}")))?;
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// The quick reader's events, or where it gave up (see [`reader_events`]).
#[doc(hidden)]
pub type QuickEvents = std::result::Result<Vec<String>, (u32, u32)>;

/// The events of both YAML readers for `text`, one line each (position, then the event; ends of
/// collections and documents without position), for the differential test and the fuzz target.
/// The quick reader's are `Err((where in its source it gave up, line of the text))` when it
/// leaves the text to granit; granit's are `Err` when it refuses the text.
#[doc(hidden)]
pub fn reader_events(text: &str) -> (QuickEvents, std::result::Result<Vec<String>, String>) {
    use granit_parser::Event;
    fn line(ev: &Event<'_>, at: Pos) -> Option<String> {
        match ev {
            Event::StreamStart | Event::StreamEnd => None,
            Event::Scalar(..) | Event::SequenceStart(..) | Event::MappingStart(..) => {
                Some(format!("{}:{} {ev:?}", at.line, at.col))
            }
            _ => Some(format!("{ev:?}")),
        }
    }
    let mut events = Vec::new();
    let quick = match crate::yaml_scan::scan(text, |ev, at| {
        events.extend(line(&ev, at));
        Ok::<(), ()>(())
    }) {
        Ok(()) => Ok(events),
        Err(crate::yaml_scan::Stop::Unsupported(at, line)) => Err((at, line)),
        Err(crate::yaml_scan::Stop::Sink(())) => Err((0, 0)),
    };
    let mut options = granit_parser::Options::default();
    options.emit_comments = false;
    let mut slow = Vec::new();
    let mut failed = None;
    for ev in granit_parser::Parser::new_from_str_with_options(text, options) {
        match ev {
            Ok((ev, span)) => {
                let at = Pos {
                    line: u32::try_from(span.start.line()).unwrap_or(u32::MAX),
                    col: u32::try_from(span.start.col() + 1).unwrap_or(u32::MAX),
                };
                slow.extend(line(&ev, at));
            }
            Err(e) => {
                failed = Some(e.info().to_owned());
                break;
            }
        }
    }
    (quick, failed.map_or(Ok(slow), Err))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Result<Vec<Document>> {
        parse_stream(s, Path::new("t.yaml"))
    }

    #[test]
    fn positions_are_recorded_per_pointer() {
        let docs = p("a: 1\nb:\n  c: [x, y]\n---\nkind: Foo\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].origin("/b/c/1").pos, Pos { line: 3, col: 10 });
        // A block mapping value starts where its first key does.
        assert_eq!(docs[0].origin("/b").pos.line, 3);
        assert_eq!(docs[1].origin("/kind").pos.line, 5);
        // Unknown pointer falls back to the nearest known ancestor.
        assert_eq!(docs[0].origin("/b/zzz").pos.line, 3);
    }

    #[test]
    fn duplicate_keys_are_errors_with_line() {
        let err = p("a: 1\nb: 2\na: 3\n").unwrap_err().to_string();
        assert!(err.contains("t.yaml:3:"), "{err}");
        assert!(err.to_lowercase().contains("duplicate"), "{err}");
    }

    #[test]
    fn bom_crlf_and_empty_documents() {
        let docs =
            p("\u{feff}---\r\na: 1\r\n---\r\n# only a comment\r\n---\r\nb: yes\r\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].value, json!({"a": 1}));
        assert_eq!(docs[1].origin("/b").pos.line, 6);
    }

    #[test]
    fn anchors_and_merge_keys() {
        let docs = p("base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n").unwrap();
        assert_eq!(docs[0].value["derived"], json!({"x": 1, "y": 3}));
    }

    #[test]
    fn kubernetes_octal() {
        let docs = p("mode: 0644\n").unwrap();
        assert_eq!(docs[0].value["mode"], json!(420));
    }

    #[test]
    fn alias_bomb_is_refused() {
        let mut s = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = i - 1;
            s.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        let err = p(&s).unwrap_err().to_string();
        assert!(err.contains("t.yaml"), "{err}");
    }

    /// Ten levels of ten aliases each: 10^10 nodes if expanded.
    fn nested_alias_bomb() -> String {
        let mut s = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let p = format!("*a{}", i - 1);
            s.push_str(&format!("a{i}: &a{i} [{}]\n", vec![p; 10].join(", ")));
        }
        s
    }

    /// One `size`-byte scalar named `times` times.
    fn aliased_scalar(size: usize, times: usize) -> String {
        let mut s = format!("big: &s \"{}\"\nuses:\n", "x".repeat(size));
        for _ in 0..times {
            s.push_str("- *s\n");
        }
        s
    }

    #[test]
    fn every_reader_applies_the_alias_budget() {
        // Scaled down from issue 28's 3.5 MB x 9,990: 1 MB named 100 times (100 MB if copied)
        // is past the 16 MiB a 1 MB input may copy.
        let scalar = aliased_scalar(1 << 20, 100);
        let bomb = nested_alias_bomb();
        for text in [&scalar, &bomb] {
            for err in [
                p(text).map(|_| ()).unwrap_err(),
                parse_stream_lenient(text, Path::new("t.yaml"))
                    .map(|_| ())
                    .unwrap_err(),
                parse_typed::<Value>(text, Path::new("t.yaml"))
                    .map(|_| ())
                    .unwrap_err(),
            ] {
                let err = err.to_string();
                assert!(
                    err.starts_with("t.yaml:")
                        && err.contains("aliases and anchors copy more than"),
                    "{err}"
                );
            }
        }
        // Within the budget, aliases work on every path.
        let small = aliased_scalar(1000, 100);
        assert_eq!(
            p(&small).unwrap()[0].value["uses"][99],
            json!("x".repeat(1000))
        );
        // (serde-saphyr refuses 100 aliases of one anchor by its own ratio rule.)
        let v: Value = parse_typed(&aliased_scalar(1000, 9), Path::new("t.yaml")).unwrap();
        assert_eq!(v["uses"].as_array().map(Vec::len), Some(9));
    }

    #[test]
    fn the_budget_scales_with_the_input() {
        let small = Budget::for_input(1000, false);
        assert_eq!(small.max_copied_bytes, 16 << 20);
        assert_eq!(small.max_copied_nodes, 500_000);
        let big = Budget::for_input(64 << 20, false);
        assert_eq!(big.max_copied_bytes, 64 << 20);
        assert_eq!(big.max_copied_nodes, 8 << 20);
        // Bundle files keep their 2 million nodes in all.
        assert_eq!(Budget::for_input(64 << 20, true).max_nodes, 2_000_000);
        assert_eq!(
            Budget::for_input(64 << 20, true).max_copied_nodes,
            2_000_000
        );
    }

    #[test]
    fn invalid_yaml_names_line() {
        let err = p("a: 1\nb: [1, 2\nc: 3\n").unwrap_err().to_string();
        assert!(err.starts_with("t.yaml:"), "{err}");
    }

    #[test]
    fn ambiguous_strings_are_quoted_on_write() {
        let v = json!({
            "a": "yes", "b": "on", "c": "y", "d": "0644", "e": "null", "f": "~",
            "g": "true", "h": "1e3", "i": "", "j": "NO", "k": "off", "l": "0x1F",
            "m": "12:30", "n": "1.0", "o": "plain text",
        });
        let out = to_string(&v).unwrap();
        let back = &p(&out).unwrap()[0].value;
        assert_eq!(back, &v, "round trip of\n{out}");
        for line in out.lines() {
            if !line.starts_with("o:") {
                assert!(
                    line.contains('"') || line.contains('\''),
                    "unquoted: {line}"
                );
            }
        }
    }

    #[test]
    fn writing_is_stable_and_round_trips() {
        let v = json!({
            "metadata": {"name": "x", "annotations": {"alm-examples": "[\n  {\n    \"a\": 1\n  }\n]"}},
            "list": [{"name": "a", "value": "b"}, 3, 1.5, null, true],
            "empty": {}, "emptyList": [],
            "long": "a very long string ".repeat(20),
        });
        let a = to_string(&v).unwrap();
        let b = to_string(&v).unwrap();
        assert_eq!(a, b);
        assert_eq!(p(&a).unwrap()[0].value, v, "{a}");
    }
}

//! The update graph of one channel, built once per operator and run, in time and memory about
//! linear in the channel's bundles and the clauses of their `olm.skipRange`s. The pipeline's
//! graph draws one edge from every version a skipRange covers to the bundle that skips it, so
//! a channel whose skipRanges each cover every earlier version has n²/2 edges; here a range
//! is a few nodes of a segment tree over the channel's versions, sorted, and a version reaches
//! every range covering it through its tree ancestors. The two questions the checks ask stay
//! exact: which bundles nothing replaces (`check_dangling_bundles`) and whether the graph has
//! a loop, with one edge of it (`check_upgrade_graph_loop`).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use super::py::{NpmRange, SemVer};

/// What the checks need of a channel's update graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelGraph {
    /// The channel's bundles (indices into the operator's bundles) in the pipeline's order: the
    /// last one is the head of the channel.
    pub members: Vec<usize>,
    /// The members that no other bundle (nor a skipRange of theirs) replaces, in `members`
    /// order.
    pub unreplaced: Vec<usize>,
    /// An edge of a loop, `(replaced, replacing)`, when the graph has one: found depth-first
    /// from the bundles in directory order, the edge that closes the loop.
    pub cycle: Option<(usize, usize)>,
}

/// One bundle of a replaces-mode channel, as the graph needs it.
pub struct Node<'a> {
    /// Its index among the operator's bundles.
    pub bundle: usize,
    /// The versions its `spec.skips` and `spec.replaces` name (the part after the first dot of
    /// each name, a leading `v` dropped), in that order.
    pub replaces: Vec<String>,
    /// Its `olm.skipRange`, when it has one that parses.
    pub range: Option<&'a NpmRange>,
}

/// The graph of a semver-mode channel: each bundle is replaced by the next one.
pub fn semver_mode(members: Vec<usize>) -> ChannelGraph {
    ChannelGraph {
        unreplaced: members.last().copied().into_iter().collect(),
        members,
        cycle: None,
    }
}

/// The graph of a replaces-mode channel. `members` are the channel's bundles in the pipeline's
/// order; `by_version` maps each version (of the CSV's name) to its bundle (the last of the
/// channel's bundles with that version); `versions` are the same versions parsed, needed only
/// when a node has a skipRange.
pub fn replaces_mode(
    members: Vec<usize>,
    nodes: &[Node<'_>],
    by_version: &BTreeMap<String, usize>,
    versions: &[(SemVer, usize)],
) -> ChannelGraph {
    // Local ids: the real nodes in ascending bundle order (the order the search starts from
    // and visits successors in), then the two segment trees.
    let mut real: Vec<usize> = nodes.iter().map(|n| n.bundle).collect();
    real.sort_unstable();
    let id_of: HashMap<usize, u32> = real
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, i as u32))
        .collect();
    let k = real.len();

    // Versions split into releases and pre-releases, each sorted: a clause of a range selects
    // a block of the releases, and of the pre-releases only those of a core it names with a
    // pre-release of its own (npm's rule), a block per such core.
    let mut release: Vec<&(SemVer, usize)> = Vec::new();
    let mut pre: Vec<&(SemVer, usize)> = Vec::new();
    for v in versions {
        if v.0.is_prerelease() {
            pre.push(v);
        } else {
            release.push(v);
        }
    }
    release.sort_by(|a, b| a.0.cmp(&b.0));
    pre.sort_by(|a, b| a.0.cmp(&b.0));
    let trees = [
        Tree::new(k, release.len()),
        Tree::new(k + 2 * release.len(), pre.len()),
    ];
    let total = k + 2 * release.len() + 2 * pre.len();

    let mut edges: Vec<(u32, u32)> = Vec::new();
    let mut replaced = vec![false; k];
    for n in nodes {
        let to = id_of[&n.bundle];
        for v in &n.replaces {
            if let Some(from) = by_version.get(v) {
                edges.push((id_of[from], to));
                replaced[id_of[from] as usize] = true;
            }
        }
    }
    // Each version's bundle reaches its leaf, each tree node its parent.
    for (tree, list) in trees.iter().zip([&release, &pre]) {
        for (p, v) in list.iter().enumerate() {
            edges.push((id_of[&v.1], tree.leaf(p)));
        }
        tree.up_edges(&mut edges);
    }
    // A range: its blocks' tree nodes reach the bundle that has it; the versions of the
    // blocks are replaced.
    let mut covered = [vec![0i64; release.len() + 1], vec![0i64; pre.len() + 1]];
    for n in nodes {
        let Some(range) = n.range else { continue };
        let to = id_of[&n.bundle];
        for clause in range.clauses() {
            let mut blocks = vec![(0, clause.block(&release, |v| &v.0))];
            let in_pre = clause.block(&pre, |v| &v.0);
            for core in clause.prerelease_cores() {
                let lo = pre.partition_point(|v| v.0.core() < core).max(in_pre.start);
                let hi = pre.partition_point(|v| v.0.core() <= core).min(in_pre.end);
                blocks.push((1, lo..hi.max(lo)));
            }
            for (t, block) in blocks {
                if block.is_empty() {
                    continue;
                }
                covered[t][block.start] += 1;
                covered[t][block.end] -= 1;
                for node in trees[t].cover(block) {
                    edges.push((node, to));
                }
            }
        }
    }
    for (t, list) in [&release, &pre].into_iter().enumerate() {
        let mut depth = 0;
        for (p, v) in list.iter().enumerate() {
            depth += covered[t][p];
            if depth > 0 {
                replaced[id_of[&v.1] as usize] = true;
            }
        }
    }
    edges.sort_unstable();
    edges.dedup();
    let cycle = find_cycle(total, k, &edges).map(|(a, b)| (real[a as usize], real[b as usize]));
    let unreplaced = members
        .iter()
        .copied()
        .filter(|b| !replaced[id_of[b] as usize])
        .collect();
    ChannelGraph {
        members,
        unreplaced,
        cycle,
    }
}

/// A segment tree over `n` positions laid out bottom-up from node id `base`: node `base + j`
/// (1 ≤ j < 2n) has children `2j` and `2j + 1`, leaves are `n..2n`.
struct Tree {
    base: usize,
    n: usize,
}

impl Tree {
    fn new(base: usize, n: usize) -> Tree {
        Tree { base, n }
    }

    fn id(&self, j: usize) -> u32 {
        (self.base + j) as u32
    }

    fn leaf(&self, p: usize) -> u32 {
        self.id(self.n + p)
    }

    /// Every node to its parent (the root, 1, has none; node 0 is unused).
    fn up_edges(&self, edges: &mut Vec<(u32, u32)>) {
        for j in 2..2 * self.n {
            edges.push((self.id(j), self.id(j / 2)));
        }
    }

    /// The nodes whose leaves together are exactly `block` (at most two per level).
    fn cover(&self, block: Range<usize>) -> Vec<u32> {
        let (mut l, mut r) = (block.start + self.n, block.end + self.n);
        let mut out = Vec::new();
        while l < r {
            if l & 1 == 1 {
                out.push(self.id(l));
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                out.push(self.id(r));
            }
            l /= 2;
            r /= 2;
        }
        out
    }
}

/// A loop of the graph of `total` nodes (the first `real` of them bundles, the rest tree
/// nodes) with the sorted `edges`: depth-first from each bundle in order, successors in order;
/// the first time a successor is on the search's path, the loop is the path from it, and its
/// last bundle and its first one are the edge reported (the tree nodes between two bundles
/// stand for one edge of the pipeline's graph).
fn find_cycle(total: usize, real: usize, edges: &[(u32, u32)]) -> Option<(u32, u32)> {
    let mut start = vec![0u32; total + 1];
    for &(from, _) in edges {
        start[from as usize + 1] += 1;
    }
    for i in 0..total {
        start[i + 1] += start[i];
    }
    const NEW: u32 = u32::MAX;
    const DONE: u32 = u32::MAX - 1;
    // NEW, DONE, or the node's position on the path.
    let mut mark = vec![NEW; total];
    let mut path: Vec<(u32, u32)> = Vec::new(); // (node, next edge to follow)
    for root in 0..real as u32 {
        if mark[root as usize] != NEW {
            continue;
        }
        mark[root as usize] = 0;
        path.push((root, start[root as usize]));
        while let Some(&(node, next)) = path.last() {
            if next < start[node as usize + 1] {
                let to = edges[next as usize].1;
                if let Some(top) = path.last_mut() {
                    top.1 += 1;
                }
                match mark[to as usize] {
                    NEW => {
                        mark[to as usize] = path.len() as u32;
                        path.push((to, start[to as usize]));
                    }
                    DONE => {}
                    at => {
                        let bundles: Vec<u32> = path[at as usize..]
                            .iter()
                            .map(|&(n, _)| n)
                            .filter(|&n| (n as usize) < real)
                            .collect();
                        // Tree nodes only lead upwards: every loop holds a bundle.
                        return Some((*bundles.last()?, bundles[0]));
                    }
                }
            } else {
                mark[node as usize] = DONE;
                path.pop();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The pipeline's graph drawn edge by edge, for comparison on small cases.
    fn naive(
        nodes: &[Node<'_>],
        by_version: &BTreeMap<String, usize>,
        versions: &[(SemVer, usize)],
    ) -> BTreeMap<usize, BTreeSet<usize>> {
        let mut g: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for n in nodes {
            if let Some(r) = n.range {
                for (v, b) in versions {
                    if r.contains(v) {
                        g.entry(*b).or_default().insert(n.bundle);
                    }
                }
            }
            for v in &n.replaces {
                if let Some(b) = by_version.get(v) {
                    g.entry(*b).or_default().insert(n.bundle);
                }
            }
        }
        g
    }

    fn has_cycle(g: &BTreeMap<usize, BTreeSet<usize>>) -> bool {
        // Kahn: a graph without loops empties.
        let mut indeg: BTreeMap<usize, usize> = BTreeMap::new();
        for (a, bs) in g {
            indeg.entry(*a).or_default();
            for b in bs {
                *indeg.entry(*b).or_default() += 1;
            }
        }
        let mut ready: Vec<usize> = indeg.iter().filter(|e| *e.1 == 0).map(|e| *e.0).collect();
        let mut seen = 0;
        while let Some(a) = ready.pop() {
            seen += 1;
            for b in g.get(&a).into_iter().flatten() {
                let d = indeg.get_mut(b).unwrap();
                *d -= 1;
                if *d == 0 {
                    ready.push(*b);
                }
            }
        }
        seen < indeg.len()
    }

    /// Every combination of a few versions (pre-releases among them), ranges and replaces:
    /// the same bundles are left unreplaced as in the graph drawn edge by edge, a loop is found
    /// exactly when it has one, and the edge reported is one of its edges on a loop.
    #[test]
    fn agrees_with_the_graph_drawn_edge_by_edge() {
        let texts = [
            "1.0.0",
            "1.1.0-rc.1",
            "1.1.0",
            "1.2.0",
            "2.0.0-alpha",
            "2.0.0",
        ];
        let ranges: Vec<Option<NpmRange>> = [
            None,
            Some(">=1.0.0 <1.2.0"),
            Some(">=1.1.0-rc.0 <1.1.0"),
            Some("<2.0.0 || >=2.0.0-alpha <2.0.0"),
            Some(">=0.0.0"),
            Some("1.1.0"),
        ]
        .into_iter()
        .map(|r| r.map(|r| NpmRange::parse(r).unwrap()))
        .collect();
        let versions: Vec<(SemVer, usize)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (SemVer::parse(t).unwrap(), i))
            .collect();
        let by_version: BTreeMap<String, usize> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i))
            .collect();
        let mut cases = 0;
        for seed in 0u64..3000 {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next = |n: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % n) as usize
            };
            let nodes: Vec<Node<'_>> = (0..texts.len())
                .map(|i| Node {
                    bundle: i,
                    replaces: if next(3) == 0 {
                        vec![texts[next(texts.len() as u64)].to_string()]
                    } else {
                        Vec::new()
                    },
                    range: ranges[next(ranges.len() as u64)].as_ref(),
                })
                .collect();
            let members: Vec<usize> = (0..texts.len()).collect();
            let g = replaces_mode(members.clone(), &nodes, &by_version, &versions);
            let want = naive(&nodes, &by_version, &versions);
            let unreplaced: Vec<usize> = members
                .iter()
                .copied()
                .filter(|m| !want.contains_key(m))
                .collect();
            assert_eq!(g.unreplaced, unreplaced, "seed {seed}");
            assert_eq!(g.cycle.is_some(), has_cycle(&want), "seed {seed}: {want:?}");
            if let Some((from, to)) = g.cycle {
                assert!(
                    want[&from].contains(&to),
                    "seed {seed}: {from}->{to} {want:?}"
                );
                // The edge lies on a loop: `to` leads back to `from`.
                let mut seen = BTreeSet::new();
                let mut todo = vec![to];
                while let Some(a) = todo.pop() {
                    if seen.insert(a) {
                        todo.extend(want.get(&a).into_iter().flatten());
                    }
                }
                assert!(seen.contains(&from), "seed {seed}");
                cases += 1;
            }
        }
        assert!(cases > 100, "{cases} cases with a loop");
    }

    #[test]
    fn a_long_chain_covered_by_ranges_has_no_loop() {
        let n = 5000;
        let texts: Vec<String> = (0..n)
            .map(|i| format!("0.{}.{}", i / 100, i % 100))
            .collect();
        let ranges: Vec<NpmRange> = texts
            .iter()
            .map(|t| NpmRange::parse(&format!(">=0.0.0 <{t}")).unwrap())
            .collect();
        let versions: Vec<(SemVer, usize)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (SemVer::parse(t).unwrap(), i))
            .collect();
        let by_version = texts.iter().cloned().zip(0..).collect();
        let nodes: Vec<Node<'_>> = (0..n)
            .map(|i| Node {
                bundle: i,
                replaces: Vec::new(),
                range: Some(&ranges[i]),
            })
            .collect();
        let g = replaces_mode((0..n).collect(), &nodes, &by_version, &versions);
        assert_eq!(g.unreplaced, [n - 1]);
        assert_eq!(g.cycle, None);
    }
}

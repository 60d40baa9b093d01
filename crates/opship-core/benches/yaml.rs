//! Benchmark: YAML parsing of every corpus file into value trees with positions, one thread,
//! through `yaml::parse_stream` (the quick reader with granit behind it) and through granit
//! alone. Prints MB per second for each, best of `YAML_BENCH_ROUNDS` rounds (default 3). Run
//! with `cargo bench -p opship-core --bench yaml`.

#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use opship_core::yaml;

fn corpus() -> PathBuf {
    if let Some(p) = std::env::var_os("OPSHIP_CORPUS") {
        return PathBuf::from(p);
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    [
        repo.join("../shared/corpus"),
        PathBuf::from("/work/shared/corpus"),
    ]
    .into_iter()
    .find(|c| c.join("bundles").is_dir())
    .expect("corpus not found: set OPSHIP_CORPUS")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("corpus directory") {
        let p = e.expect("corpus entry").path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(p);
        }
    }
}

type Parse = fn(&str, &Path) -> opship_core::error::Result<Vec<yaml::Document>>;

fn main() {
    let mut paths = Vec::new();
    files(&corpus().join("bundles"), &mut paths);
    paths.sort();
    let texts: Vec<(PathBuf, String)> = paths
        .into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p).expect("corpus file");
            (p, t)
        })
        .collect();
    let bytes: usize = texts.iter().map(|(_, t)| t.len()).sum();
    let rounds: usize = std::env::var("YAML_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    println!(
        "{} files, {:.1} MB of YAML, best of {rounds} rounds, one thread",
        texts.len(),
        bytes as f64 / 1e6
    );
    let readers: [(&str, Parse); 2] = [
        ("granit-parser alone", yaml::parse_stream_granit),
        ("quick reader (granit behind it)", yaml::parse_stream),
    ];
    for (name, parse) in readers {
        let mut best = f64::MAX;
        let mut nodes = 0usize;
        for _ in 0..rounds {
            let start = Instant::now();
            nodes = 0;
            for (p, t) in &texts {
                // A file that does not parse costs the same on both paths (granit answers).
                if let Ok(docs) = parse(t, p) {
                    nodes += docs.len();
                }
            }
            best = best.min(start.elapsed().as_secs_f64());
        }
        println!(
            "{name:34} {:7.3} s  {:6.1} MB/s  ({nodes} documents)",
            best,
            bytes as f64 / 1e6 / best
        );
    }
}

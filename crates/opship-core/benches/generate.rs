//! Benchmark: generate the bundles of all decomposed corpus inputs (the round trip's inputs).
//! Prints bundles per second for generation in memory and for read + generate + write, and the
//! peak RSS. Run with `cargo bench -p opship-core --bench generate`.

#![allow(missing_docs)]

#[path = "../tests/it/decompose.rs"]
mod decompose;

use std::path::PathBuf;
use std::time::Instant;

use opship_core::bundle;

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

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() {
    let mut dirs = Vec::new();
    for op in std::fs::read_dir(corpus().join("bundles")).unwrap() {
        for v in std::fs::read_dir(op.unwrap().path()).unwrap() {
            dirs.push(v.unwrap().path());
        }
    }
    dirs.sort();

    // Read + decompose + generate + write, once over the corpus.
    let out = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let mut cases = Vec::new();
    let mut written = 0usize;
    for (i, d) in dirs.iter().enumerate() {
        let Ok((_, inputs, opts)) = decompose::inputs_for(d) else {
            continue;
        };
        if let Ok(b) = bundle::generate(inputs.clone(), &opts) {
            bundle::write_dir(
                &b.files,
                &out.path().join(i.to_string()),
                opship_core::output::Overwrite::Refuse,
            )
            .unwrap();
            written += 1;
            cases.push((inputs, opts));
        }
    }
    let e2e = t.elapsed();
    println!(
        "read+decompose+generate+write: {written} bundles of {} corpus dirs in {:.3} s = {:.1} bundles/s",
        dirs.len(),
        e2e.as_secs_f64(),
        written as f64 / e2e.as_secs_f64()
    );

    // Generation alone (inputs already parsed), several rounds.
    let rounds = 5;
    let t = Instant::now();
    let mut files = 0usize;
    for _ in 0..rounds {
        for (inputs, opts) in &cases {
            files += bundle::generate(inputs.clone(), opts).unwrap().files.len();
        }
    }
    let gen_time = t.elapsed();
    println!(
        "generate in memory: {} bundles ({} files) in {:.3} s = {:.1} bundles/s",
        cases.len() * rounds,
        files,
        gen_time.as_secs_f64(),
        (cases.len() * rounds) as f64 / gen_time.as_secs_f64()
    );
    println!("peak RSS: {:.1} MiB", peak_rss_kib() as f64 / 1024.0);
}

//! The quick YAML reader (`yaml_scan`) against granit-parser, event by event with positions:
//! on every real file it reads, on hand-made spellings of each construct it knows and of the
//! ones it must leave to granit, and on many small corruptions of real files. Wherever the quick
//! reader gives events, granit must accept the text and give the same ones.

use std::path::{Path, PathBuf};

use opship_core::yaml::reader_events;
use rayon::prelude::*;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(p);
        }
    }
}

/// `Ok(None)` when the quick reader read the text (same events as granit), `Ok(Some(why))`
/// when it left it to granit (where in yaml_scan.rs it gave up, line of the text).
fn check(text: &str) -> Result<Option<(u32, u32)>, String> {
    let (quick, slow) = reader_events(text);
    let quick = match quick {
        Ok(q) => q,
        Err(why) => return Ok(Some(why)),
    };
    let slow = slow.map_err(|e| format!("quick reader accepted what granit refuses: {e}"))?;
    if quick == slow {
        return Ok(None);
    }
    let i = quick
        .iter()
        .zip(&slow)
        .position(|(a, b)| a != b)
        .unwrap_or(quick.len().min(slow.len()));
    Err(format!(
        "event {i} differs:\n quick  {:?}\n granit {:?}",
        quick.get(i),
        slow.get(i)
    ))
}

fn real_files() -> Vec<PathBuf> {
    let mut all = Vec::new();
    files(&crate::corpus_dir().join("bundles"), &mut all);
    files(&crate::tracked("bundle"), &mut all);
    all
}

#[test]
fn quick_reader_gives_granits_events_on_every_real_file() {
    let all = real_files();
    assert!(all.len() > 2000, "{} files", all.len());
    type Outcome = (usize, Result<Option<(u32, u32)>, String>, PathBuf);
    let results: Vec<Outcome> = all
        .par_iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            (text.len(), check(&text), p.clone())
        })
        .collect();
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(_, r, p)| r.as_ref().err().map(|e| format!("{}: {e}", p.display())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The point of the quick reader is that it reads nearly all of the real bytes itself.
    let total: usize = results.iter().map(|r| r.0).sum();
    let quick: usize = results
        .iter()
        .filter(|r| matches!(r.1, Ok(None)))
        .map(|r| r.0)
        .sum();
    let left: Vec<String> = results
        .iter()
        .filter_map(|r| match r.1 {
            Ok(Some((at, line))) => Some(format!("{}:{line} (yaml_scan.rs:{at})", r.2.display())),
            _ => None,
        })
        .collect();
    eprintln!(
        "quick reader: {quick} of {total} bytes ({:.2} %), {} files left to granit",
        quick as f64 * 100.0 / total as f64,
        left.len()
    );
    for l in &left {
        eprintln!("  {l}");
    }
    assert!(
        quick * 100 >= total * 99,
        "quick reader read {quick} of {total} bytes; left to granit:\n{}",
        left.join("\n")
    );
}

#[test]
fn quick_reader_gives_granits_events_on_each_construct() {
    let read = [
        "a: 1\nb:\n  c: x y\n  d:\n  - p\n  - q: r\n    s: \"t\\n u\"\n",
        "e: |\n  lit\n  two\n\nf: >-\n  fo\n  ld\ng:\nh: plain\n  multi\n\n  line\n",
        "g:   \nh: # c\ni:\n",
        "k:\n- a\n- b\nz: 1\n",
        "- \n- x\n-\n  a: 1\n-   b: 2\n    c: 3\n- - y\n",
        "-\n- x\n- # c\n-\n",
        "k:\n-\n- x\n",
        "k:\n- - a\n  - b\n- c: d\n",
        "e: |-\n\n  x\n\n\nf: 1\n",
        "e: >\n  a\n  b\n\n  c\n    d\n  e\n",
        "e: >+\n  a\n\n   b\n  c\n\n\nf: |+\n  x\n\n",
        "e: |\n  a\n     \n  b\n   \nf: 1\n",
        "---\na: 1\n---\nb: 2\n",
        "--- \n# x\nx: {}\ny: []\nz: [a, \"b\"]\n",
        "# c\n\n---\n# x\na: \"é\" \nb: é\nc: ü\nü: x\n",
        "a: {x: 1, \"y\": [b, c], 'z': {}}\n",
        "a: {\"x\":1}\n",
        "a: \"x\n  y \n\n  z\\\n   w\"\nb: 'p''q\n  r'\n",
        "a:    \n  # c\nb: x\n  y\n",
        "a: \"\\x41\\u00e9\\U0001F600\\t\\\\\\\"\\/\\0\\ \"\n",
        "\"q k\": 1\n'p ''k''': 2\nurl: http://x:8080/y\nk:v: w\n",
        "-XX:\n  a: -1\n?x: :y\n",
        "a: foo\n  - bar\n  \"q\" [x]\n",
        "a: 1\n---\n---\nb: 2\n",
        "---\n",
        "list:\n  - name: x\n    value: |\n      {\"a\": 1}\n  - name: y\n",
        "a:\n  b:\n    c:\n      d: 1\n  e: 2\nf: 3\n",
        "a: 'single # not comment'\nb: x#y\nc: -1\nd: -x\ne: :x\n",
        "a: |\n  x\n\n",
        "a: |\n  x",
        "a: >\n  x\n\n\n",
        "a: b\n  c\n\n\n  d\ne: f\n",
        "- a\n  b\n- c\n",
        "e: |+\n  lit\n ",
        "e: |+\n  lit\n\n  ",
        "e: >\n  a\n  b\n",
        "a: \"x\\ \n  y\"\nb: \"p \\t \n  q\"\nc: \"r  \\\n s\"\nd: ' a  \n  b'\n",
        "a: \u{85}\u{a0}\u{2028}\u{fffd}\u{1F600}\u{d7ff}\n",
    ];
    let leave = [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a:\tb\n",
        "a: 1\r\nb: 2\r\n",
        "%YAML 1.2\n---\na: 1\n",
        "? a\n: b\n",
        "a: [1,\n  2]\n",
        "a: |2\n  x\n",
        "plain root\n",
        "a: b: c\n",
        "a: 1\n- b\n",
        "a: 1\n b: 2\n",
        "a: [1, 2,]\n",
        "a: \"unterminated\n",
        "a: x\n  # c\n  y\n",
        "a: 1\n...\n",
        "<<: {a: 1}\n",
        "a: b # c\n- x\n",
        "a: b # c\n  x: y\n",
        "a: \"\\q\"\n",
        "a: |\n\n",
        "'': \n''::`\n",
        "a: \u{1}b\n",
        "a: b\u{7f}\n",
        "a: \u{80}b\n",
        "a: \u{feff}b\n",
        "a: \u{fffe}\n",
        "a: \u{ffff}\n",
        "a: \"\u{b}\"\n",
    ];
    // Implicit keys up to 1024 characters to their `:`, and one more.
    let long_keys: Vec<String> = [1024usize, 1025]
        .iter()
        .flat_map(|&n| {
            [
                format!("{}: 1\n", "k".repeat(n)),
                format!("{}: 1\n", "é".repeat(n)),
                format!("a:\n  \"{}\": 1\n", "q".repeat(n - 2)),
                format!("a: {{{}: 1}}\n", "k".repeat(n)),
            ]
        })
        .collect();
    let mut failures = Vec::new();
    for t in &long_keys {
        if let Err(e) = check(t) {
            failures.push(format!("key of {} bytes: {e}", t.len()));
        }
    }
    for t in read {
        match check(t) {
            Ok(None) => {}
            Ok(Some((at, line))) => failures.push(format!(
                "{t:?}: left to granit at line {line} (yaml_scan.rs:{at})"
            )),
            Err(e) => failures.push(format!("{t:?}: {e}")),
        }
    }
    for t in leave {
        match check(t) {
            Ok(Some(_)) => {}
            Ok(None) => failures.push(format!("{t:?}: read by the quick reader")),
            Err(e) => failures.push(format!("{t:?}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Corruptions of real files: each of many small windows of real YAML gets one edit that
/// YAML is sensitive to (a character of syntax inserted, a character deleted, a line's
/// indentation changed, two lines swapped). Wherever the quick reader reads the result, it must
/// agree with granit, refusals included. `QUICK_ROUNDS` (edits per file, default 60) and
/// `QUICK_SEED` run longer or other campaigns by hand.
#[test]
fn quick_reader_agrees_with_granit_on_corrupted_real_files() {
    let mut all = real_files();
    all.sort();
    let texts: Vec<String> = all
        .iter()
        .step_by(7)
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    const SYNTAX: &[&str] = &[
        ":", ": ", "-", "- ", " ", "  ", "#", " #", "\"", "'", "|", ">", "[", "]", "{", "}", ",",
        "\n", "\n\n", "---\n", "\\", "''", "? ", "&", "*", "!", "é",
    ];
    let failures: Vec<String> = texts
        .par_iter()
        .enumerate()
        .flat_map_iter(|(n, text)| {
            let seed: u64 = std::env::var("QUICK_SEED")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0x9E37_79B9_7F4A_7C15);
            let mut rng = Rng(seed ^ (n as u64 + 1));
            let lines: Vec<&str> = text.lines().collect();
            let mut out = Vec::new();
            if lines.is_empty() {
                return out.into_iter();
            }
            for _ in 0..std::env::var("QUICK_ROUNDS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(60)
            {
                let from = rng.below(lines.len());
                let len = 1 + rng.below(12);
                let mut window: Vec<String> = lines[from..(from + len).min(lines.len())]
                    .iter()
                    .map(|l| (*l).to_owned())
                    .collect();
                let i = rng.below(window.len());
                match rng.below(4) {
                    0 => {
                        let l = &mut window[i];
                        let k = rng.below(l.len() + 1);
                        let at = (k..=l.len())
                            .find(|&k| l.is_char_boundary(k))
                            .unwrap_or(l.len());
                        l.insert_str(at, SYNTAX[rng.below(SYNTAX.len())]);
                    }
                    1 => {
                        let l = &mut window[i];
                        if let Some((k, _)) = l.char_indices().nth(rng.below(l.len().max(1))) {
                            l.remove(k);
                        }
                    }
                    2 => {
                        let l = &mut window[i];
                        if rng.below(2) == 0 {
                            l.insert(0, ' ');
                        } else if l.starts_with(' ') {
                            l.remove(0);
                        }
                    }
                    _ => {
                        let j = rng.below(window.len());
                        window.swap(i, j);
                    }
                }
                let doc = window.join("\n") + "\n";
                if let Err(e) = check(&doc) {
                    out.push(format!("{doc:?}: {e}"));
                }
            }
            out.into_iter()
        })
        .collect();
    let shown: Vec<&String> = failures.iter().take(20).collect();
    assert!(
        failures.is_empty(),
        "{} corruptions disagree; first ones:\n{}",
        failures.len(),
        shown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

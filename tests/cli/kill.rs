//! SIGKILL at 50 moments of `generate bundle`, `chart render` and `catalog add` each: the output
//! is always the old or the new state, the catalog always validates, and the next run leaves
//! no temporary file (issue 13). SIGTERM at 20 moments of `generate bundle` and `catalog add`:
//! the run exits 143 having removed its own temporaries (issue 28).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{hidden_entries, opship, read_tree, run, sample_copy, tracked};

const PKG: &str = "memcached-operator";
const KILLS: usize = 50;
const TERMS: usize = 20;

/// Deterministic delays (xorshift from a fixed seed) spread over `0..=span`, so a failure can
/// be rerun with the same moments.
fn moments(n: usize, span: Duration, seed: u64) -> Vec<Duration> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            span.mul_f64((x % 10_000) as f64 / 10_000.0)
        })
        .collect()
}

/// How long one uninterrupted run takes (the kills spread over 1.2 times that).
fn span_of(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let r = run(cmd);
    assert_eq!(r.code, 0, "{}", r.stderr);
    start.elapsed().mul_f64(1.2).max(Duration::from_millis(5))
}

/// How a run is stopped.
#[derive(Clone, Copy, PartialEq)]
enum Stop {
    Kill,
    Term,
}

/// Starts `cmd`, stops it after `after` (unless it finished) and gives its exit code.
/// A SIGTERM must end it like an error: exit 143 (or no code when it came before the
/// handler was installed, when nothing exists yet).
fn kill_after(cmd: &mut Command, after: Duration, stop: Stop) -> Option<i32> {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    match stop {
        Stop::Kill => {
            let _ = child.kill();
        }
        Stop::Term => {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
        }
    }
    let status = child.wait().unwrap();
    if stop == Stop::Term {
        assert!(
            matches!(status.code(), Some(0 | 143) | None),
            "SIGTERM at {after:?}: {status}"
        );
    }
    status.code()
}

type Tree = BTreeMap<String, String>;

/// The killed-run loop: `old`/`new` put the output into the old or the new state; `state`
/// reads it. After every kill the state is one of the two; each reset run is a full run and
/// must leave no temporary next to the output.
fn torture(
    parent: &Path,
    mut old: impl FnMut() -> Command,
    mut new: impl FnMut() -> Command,
    state: impl Fn() -> Tree,
    after_each: impl Fn(),
    (stop, seed): (Stop, u64),
    reset_cleans: bool,
) -> (usize, usize) {
    let r = run(&mut old());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let old_state = state();
    let span = span_of(&mut new());
    let new_state = state();
    assert_ne!(old_state, new_state, "the two states must differ");
    let (mut finished, mut interrupted) = (0, 0);
    let n = if stop == Stop::Term { TERMS } else { KILLS };
    let mut handled = 0;
    for (i, at) in moments(n, span, seed).into_iter().enumerate() {
        let r = run(&mut old());
        assert_eq!(r.code, 0, "reset {i}: {}", r.stderr);
        if reset_cleans {
            assert!(
                hidden_entries(parent).is_empty(),
                "reset {i} left {:?}",
                hidden_entries(parent)
            );
        }
        let code = kill_after(&mut new(), at, stop);
        if code == Some(143) {
            handled += 1;
        }
        if code == Some(0) {
            finished += 1;
        } else {
            interrupted += 1;
            if stop == Stop::Term {
                assert!(
                    hidden_entries(parent).is_empty(),
                    "SIGTERM {i} at {at:?} left {:?}",
                    hidden_entries(parent)
                );
            }
        }
        let now = state();
        assert!(
            now == old_state || now == new_state,
            "kill {i} at {at:?}: the output is neither the old nor the new state"
        );
        after_each();
    }
    if stop == Stop::Term {
        // The handler is the first thing `main` installs: some SIGTERMs must reach it.
        assert!(
            handled > 0,
            "no SIGTERM reached the handler ({interrupted} runs interrupted)"
        );
    }
    let r = run(&mut new());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(state(), new_state);
    assert!(
        hidden_entries(parent).is_empty(),
        "{:?}",
        hidden_entries(parent)
    );
    (finished, interrupted)
}

#[test]
fn killed_generate_leaves_the_old_or_the_new_bundle() {
    generate_stopped((Stop::Kill, 0x9E37_79B9_7F4A_7C15));
}

#[test]
fn terminated_generate_removes_its_temporaries() {
    generate_stopped((Stop::Term, 0x94D0_49BB_1331_11EB));
}

fn generate_stopped(stop: (Stop, u64)) {
    let (_t, dir) = sample_copy();
    let out = dir.join("out");
    let gen_ = |version: &str| {
        let mut c = opship();
        c.arg("-c")
            .arg(dir.join("opship.yaml"))
            .args(["generate", "bundle", "--version", version, "-o"])
            .arg(&out);
        c
    };
    let (done, killed) = torture(
        &dir,
        || gen_("0.2.0"),
        || gen_("0.3.0"),
        || read_tree(&out),
        || {},
        stop,
        true,
    );
    assert!(killed > 0, "no run was interrupted ({done} finished)");
}

#[test]
fn killed_chart_render_leaves_the_old_or_the_new_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("charts");
    let render = |version: &str| {
        let mut c = opship();
        c.args(["chart", "render", "--name", "op", "-b"])
            .arg(tracked("bundle").join(version))
            .arg("-o")
            .arg(&out);
        c
    };
    let chart = out.join("op");
    let (done, killed) = torture(
        &out,
        || render("0.2.0"),
        || render("0.3.0"),
        || {
            if chart.exists() {
                read_tree(&chart)
            } else {
                Tree::new()
            }
        },
        || {},
        (Stop::Kill, 0xD1B5_4A32_D192_ED03),
        true,
    );
    assert!(killed > 0, "no run was interrupted ({done} finished)");
}

#[test]
fn killed_catalog_add_leaves_a_valid_old_or_new_catalog() {
    catalog_add_stopped((Stop::Kill, 0x2545_F491_4F6C_DD1D));
}

#[test]
fn terminated_catalog_add_removes_its_temporaries() {
    catalog_add_stopped((Stop::Term, 0xBF58_476D_1CE4_E5B9));
}

fn catalog_add_stopped(stop: (Stop, u64)) {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let add = |version: &str, replace: bool| {
        let mut c = opship();
        c.args(["catalog", "add", "--bundle"])
            .arg(tracked("bundle").join(version))
            .args([
                "--image",
                &format!("quay.io/example/{PKG}-bundle:v{version}"),
                "--channel",
                "stable",
                "--index",
            ])
            .arg(&index);
        if replace {
            c.arg("--replace");
        }
        c
    };
    let r = run(&mut add("0.1.0", false));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let pkg = index.join(PKG);
    let first = std::fs::read(pkg.join("catalog.yaml")).unwrap();
    // The old state is the catalog with 0.1.0 only; the new one has 0.2.0 at the head.
    let (done, killed) = torture(
        &pkg,
        || {
            // Back to the old catalog by a full, unkilled write (what a user's revert does).
            let mut c = Command::new("cp");
            c.arg("--no-preserve=mode");
            let tmpfile = tmp.path().join("reset.yaml");
            std::fs::write(&tmpfile, &first).unwrap();
            c.arg(&tmpfile).arg(pkg.join("catalog.yaml"));
            c
        },
        || add("0.2.0", true),
        || {
            let mut t = Tree::new();
            t.insert(
                "catalog.yaml".into(),
                String::from_utf8(std::fs::read(pkg.join("catalog.yaml")).unwrap()).unwrap(),
            );
            t
        },
        || {
            // Whatever a kill left next to the file, the catalog validates, or (while the
            // killed run's temporary copy is there, which opm would read) it is refused
            // naming that temporary; the next `add` removes it.
            let r = run(opship().args(["catalog", "validate"]).arg(&index));
            let left = hidden_entries(&pkg);
            if left.is_empty() {
                assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
            } else {
                assert_ne!(r.code, 0, "{left:?} accepted:\n{}", r.stdout);
                assert!(
                    r.stdout.contains("interrupted opship run")
                        || r.stderr.contains("interrupted opship run"),
                    "{left:?}: {}\n{}",
                    r.stdout,
                    r.stderr
                );
            }
        },
        stop,
        false,
    );
    assert!(killed > 0, "no run was interrupted ({done} finished)");
}

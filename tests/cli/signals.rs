//! `release` into the layout stopped by SIGTERM and SIGKILL at moments spread over a run
//! (issue 28): SIGTERM exits 143 having removed its temporaries itself; after either, the
//! next run removes what is left, no `.opship-…` name remains anywhere (project, layout,
//! blobs, `TMPDIR`), `umoci gc` accepts the layout and the digests are those of an
//! uninterrupted run; the same for a release to a docker-registry. And two releases of one version at once both succeed with one result.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support_registry::{TestRegistry, isolated};
use crate::{copy_dir, run, tracked};

/// Every path under `dir` whose name is an opship temporary.
fn temporaries(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if opship_core::fsutil::is_temporary(&name) {
            out.push(e.path().display().to_string());
        }
        if e.file_type().unwrap().is_dir() {
            out.extend(temporaries(&e.path()));
        }
    }
    out
}

/// A fresh copy of the sample project and its own `TMPDIR`.
struct Project {
    _tmp: tempfile::TempDir,
    /// `--registry` (a namespace of its own in the test registry), or the layout only.
    registry: Option<String>,
    root: std::path::PathBuf,
    home: std::path::PathBuf,
    tmpdir: std::path::PathBuf,
}

fn project(registry: Option<String>) -> Project {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("p");
    copy_dir(&tracked("bundle"), &root.join("bundle"));
    let home = tmp.path().join("home");
    let tmpdir = tmp.path().join("tmp");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmpdir).unwrap();
    Project {
        registry,
        root,
        home,
        tmpdir,
        _tmp: tmp,
    }
}

fn release(p: &Project) -> Command {
    let mut c = isolated(&p.home);
    c.current_dir(&p.root)
        .env("TMPDIR", &p.tmpdir)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args(["-c", "bundle/opship.yaml", "release", "--version", "0.3.0"]);
    if let Some(r) = &p.registry {
        c.args(["--registry", r]);
    }
    c
}

/// The digests of the layout's bundle and catalog images.
fn digests(p: &Project) -> Vec<(String, String)> {
    let layout = opship_core::image::Layout::new(p.root.join("bundle/dist/oci"));
    let mut v: Vec<(String, String)> = layout
        .index()
        .unwrap()
        .manifests
        .iter()
        .filter_map(|d| {
            let tag = d.annotations.get("org.opencontainers.image.ref.name")?;
            // Signatures differ from run to run (ECDSA); images must not.
            (!tag.ends_with(".sig")).then(|| (tag.clone(), d.digest.as_str().to_owned()))
        })
        .collect();
    v.sort();
    v
}

fn umoci_gc(layout: &Path) {
    let out = Command::new("umoci")
        .arg("gc")
        .arg("--layout")
        .arg(layout)
        .output()
        .expect("umoci (scripts/test installs it)");
    assert!(
        out.status.success(),
        "umoci gc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `n` moments spread evenly over `span`, so that even a few interrupted runs stop it in
/// every stage (staging, image build, signing, catalog, provenance).
fn moments(n: usize, span: Duration) -> Vec<Duration> {
    (0..n)
        .map(|i| span.mul_f64((i as f64 + 0.5) / n as f64))
        .collect()
}

/// Starts a release, sends `signal` after `after` and returns its exit code (`None`: killed).
fn signalled(p: &Project, signal: &str, after: Duration) -> Option<i32> {
    let mut child = release(p)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let _ = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status();
    child.wait().unwrap().code()
}

/// `n` interrupted releases, each on a fresh project, each followed by a full one.
fn torture(signal: &str, n: usize, registry: Option<&TestRegistry>) {
    let ns = |name: &str| registry.map(|r| format!("{}/{name}", r.addr));
    let reference = project(ns("reference"));
    let start = Instant::now();
    let r = run(&mut release(&reference));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let span = start.elapsed().mul_f64(1.1);
    // Each round pushes to a namespace of its own, which the catalog image names: with a
    // registry only the bundle image is the same in every round.
    let compared = |d: Vec<(String, String)>| -> Vec<(String, String)> {
        d.into_iter()
            .filter(|(tag, _)| registry.is_none() || tag == "0.3.0")
            .collect()
    };
    let want = compared(digests(&reference));
    let mut interrupted = 0;
    for (i, at) in moments(n, span).into_iter().enumerate() {
        let p = project(ns(&format!("round{i}")));
        let code = signalled(&p, signal, at);
        if signal == "-TERM" {
            // Handled like an error: 143, and nothing of its own left behind. (`None`: the
            // signal came before `main` installed the handler, when nothing exists yet.)
            assert!(
                matches!(code, Some(143 | 0) | None),
                "kill {i} at {at:?}: exit {code:?}"
            );
            if code != Some(0) {
                interrupted += 1;
                let left: Vec<_> = temporaries(&p.root)
                    .into_iter()
                    .chain(temporaries(&p.tmpdir))
                    .collect();
                assert!(left.is_empty(), "SIGTERM {i} at {at:?} left {left:?}");
            }
        } else if code != Some(0) {
            interrupted += 1;
        }
        let r = run(&mut release(&p));
        assert_eq!(
            r.code, 0,
            "rerun after {signal} {i} at {at:?}: {}",
            r.stderr
        );
        let left: Vec<_> = temporaries(&p.root)
            .into_iter()
            .chain(temporaries(&p.tmpdir))
            .collect();
        assert!(
            left.is_empty(),
            "after {signal} {i} at {at:?} and a rerun: {left:?}"
        );
        assert_eq!(compared(digests(&p)), want, "{signal} {i} at {at:?}");
        umoci_gc(&p.root.join("bundle/dist/oci"));
    }
    assert!(
        interrupted * 4 > n,
        "only {interrupted} of {n} runs were interrupted"
    );
}

/// How many interrupted runs: the 20 SIGTERMs and 50 SIGKILLs per target (about three
/// minutes on a 2-core machine); `OPSHIP_SIGNAL_ROUNDS=N` sets another count.
fn rounds(default: usize) -> usize {
    std::env::var("OPSHIP_SIGNAL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn sigterm_during_release_removes_its_temporaries_and_exits_143() {
    torture("-TERM", rounds(20), None);
}

#[test]
fn sigterm_during_a_release_to_a_registry_removes_its_temporaries() {
    let reg = TestRegistry::start(None);
    torture("-TERM", rounds(20), Some(&reg));
}

#[test]
fn sigkill_during_a_release_to_a_registry_leaves_nothing_the_next_run_keeps() {
    let reg = TestRegistry::start(None);
    torture("-KILL", rounds(50), Some(&reg));
}

#[test]
fn sigkill_during_release_leaves_nothing_the_next_run_keeps() {
    torture("-KILL", rounds(50), None);
}

#[test]
fn two_releases_of_one_version_at_once_both_succeed_and_keep_every_signature() {
    let p = project(None);
    let children: Vec<_> = (0..2)
        .map(|_| {
            release(&p)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // One signature, which verifies: neither run's signature was lost or doubled.
    let r = run(isolated(&p.home)
        .args(["verify", "--key"])
        .arg(p.root.join("bundle/.opship/cosign.pub"))
        .args(["--identity", "quay.io/example/memcached-operator-bundle"])
        .arg(format!(
            "{}:0.3.0",
            p.root.join("bundle/dist/oci").display()
        )));
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let again = run(release(&p).args(["-o", "json"]));
    assert_eq!(again.code, 0, "{}", again.stderr);
    let s: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(s["filesChanged"], serde_json::json!([]), "{s}");
    assert!(temporaries(&p.root).is_empty());
}

#[test]
fn concurrent_layout_signers_keep_every_signature() {
    // `opship sign` into one layout from several processes at once: each index update is a
    // read-modify-write under the layout's lock, so every signature stays.
    let p = project(None);
    let r = run(&mut release(&p));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let layout = p.root.join("bundle/dist/oci");
    let key = p.root.join("bundle/.opship/cosign.key");
    let pw = p.root.join("bundle/.opship/cosign.password");
    let children: Vec<_> = (0..6)
        .map(|i| {
            isolated(&p.home)
                .args(["sign", "--key"])
                .arg(&key)
                .arg("--password-file")
                .arg(&pw)
                .args(["--identity", "quay.io/example/memcached-operator-bundle"])
                .args(["-a", &format!("n={i}")])
                .arg(format!("{}:0.3.0", layout.display()))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let l = opship_core::image::Layout::new(&layout);
    let digest = l.tagged("0.3.0").unwrap().digest;
    let sig_tag = format!("sha256-{}.sig", digest.hex());
    let sig = l.read_image(&sig_tag).unwrap();
    // The release's signature and the six new ones.
    assert_eq!(sig.manifest.layers.len(), 7, "{:?}", sig.manifest.layers);
    umoci_gc(&layout);
}

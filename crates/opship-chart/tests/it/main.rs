//! Integration tests of opship-chart, one binary. Charts are checked by the real Helm engine:
//! PyPI `helm-python-sdk` (Helm SDK v4), driven by `tests/scripts/helm_check.py` with the
//! Python of `$OPSHIP_PYTHON` (scripts/test installs the SDK into the repository's `.venv`).
//! A missing Python or SDK fails the tests; nothing is skipped.

mod compare;
mod corpus;
mod hostile;
mod olm;
mod package;
mod sample;
mod snapshot;
mod templates;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use opship_chart::{Chart, Options, Templates};
use opship_core::config::Environment;
use serde_json::Value;

/// The repository root.
pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[path = "../../../../tests/support/tracked.rs"]
mod tracked;

/// `rel` of the repository as git tracks it (a snapshot shared by this process's tests; read
/// it, never write into it): never what a run of opship in the checkout left there.
pub fn tracked(rel: &str) -> PathBuf {
    tracked::snapshot(&repo_dir(), rel)
}

/// The shared corpus of real bundles: `$OPSHIP_CORPUS`, else `../shared/corpus` next to the
/// repository, else `/work/shared/corpus`. A missing corpus fails the tests.
pub fn corpus_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("OPSHIP_CORPUS") {
        return PathBuf::from(p);
    }
    for c in [
        repo_dir().join("../shared/corpus"),
        PathBuf::from("/work/shared/corpus"),
    ] {
        if c.join("bundles").is_dir() {
            return c;
        }
    }
    panic!("corpus not found: set OPSHIP_CORPUS to the shared/corpus directory");
}

/// The Python that has helm-python-sdk: `$OPSHIP_PYTHON`, else the repository's `.venv`.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("OPSHIP_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = repo_dir().join(".venv/bin/python");
    assert!(
        venv.exists(),
        "no Python with helm-python-sdk: set OPSHIP_PYTHON or run scripts/test (it installs the SDK into .venv)"
    );
    venv
}

/// Runs the Helm driver and parses its JSON answer. The driver's own failure (no SDK, bad
/// arguments) fails the test.
pub fn helm<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Value {
    let script = repo_dir().join("tests/scripts/helm_check.py");
    let out = Command::new(python())
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python().display()));
    assert!(
        out.status.success(),
        "helm_check.py {:?} failed:\n{}",
        args.iter()
            .map(|a| a.as_ref().to_owned())
            .collect::<Vec<_>>(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "helm_check.py printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Environments used for every chart: replicas, resources and an image tag.
pub fn environments() -> BTreeMap<String, Environment> {
    let mut e = BTreeMap::new();
    e.insert(
        "staging".to_owned(),
        Environment {
            tag: Some("v{version}-rc.1".into()),
            replicas: Some(3),
            resources: Some(serde_json::json!({"requests": {"cpu": "50m", "memory": "96Mi"}})),
        },
    );
    e.insert(
        "prod".to_owned(),
        Environment {
            tag: None,
            replicas: Some(2),
            resources: Some(serde_json::json!({
                "requests": {"cpu": "100m", "memory": "128Mi"},
                "limits": {"cpu": "1", "memory": "512Mi"},
            })),
        },
    );
    e
}

/// Renders the chart of a bundle into a fresh temporary directory.
pub fn render_to_temp(
    bundle: &Path,
    opts: &Options,
    envs: &BTreeMap<String, Environment>,
) -> (tempfile::TempDir, PathBuf, Chart) {
    let chart = opship_chart::render_bundle(bundle, opts, &Templates::default(), envs)
        .unwrap_or_else(|e| panic!("{}: {e}", bundle.display()));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(&chart.name);
    opship_chart::write_dir(
        &chart.files,
        &dir,
        opship_chart::CHART_DIR,
        opship_chart::Overwrite::Refuse,
    )
    .unwrap();
    (tmp, dir, chart)
}

//! A real `docker-registry` on a free loopback port (killed on drop), the sample project
//! copied, and what skopeo and the registry itself say about images.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REGISTRY_BIN: &str = "/usr/bin/docker-registry";

/// A registry on 127.0.0.1.
pub struct TestRegistry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl TestRegistry {
    pub fn start() -> Self {
        assert!(
            Path::new(REGISTRY_BIN).exists(),
            "docker-registry is not installed (scripts/test installs it)"
        );
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  \
             filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            dir.path().join("data").display()
        );
        let file = dir.path().join("config.yml");
        std::fs::write(&file, config).unwrap();
        let child = Command::new(REGISTRY_BIN)
            .arg("serve")
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docker-registry");
        let start = Instant::now();
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "registry did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        TestRegistry {
            child,
            addr,
            _dir: dir,
        }
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The repository root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Copies the sample project (`bundle/`) under `into`, as git tracks it (never what a run
/// of opship in the checkout left there); returns the copy's directory.
pub fn copy_sample(into: &Path) -> PathBuf {
    let dir = into.join("bundle");
    crate::tracked::copy_tracked(&repo(), "bundle", &dir);
    dir
}

/// The digest `skopeo inspect` gives for `reference` (`docker://…` or `oci:…`).
pub fn skopeo_digest(reference: &str) -> String {
    let out = Command::new("skopeo")
        .args(["inspect", "--tls-verify=false", "--raw"])
        .arg(reference)
        .output()
        .expect("skopeo (scripts/test installs it)");
    assert!(
        out.status.success(),
        "skopeo inspect {reference}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The digest of the manifest bytes as served, computed apart from opship.
    let mut sha = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(sha.stdin.as_mut().unwrap(), &out.stdout).unwrap();
    let done = sha.wait_with_output().unwrap();
    let hex = String::from_utf8_lossy(&done.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    format!("sha256:{hex}")
}

/// `Docker-Content-Digest` of a manifest as the registry answers it.
pub fn manifest_digest(addr: &str, repository: &str, reference: &str) -> String {
    let out = Command::new("curl")
        .args(["-fsSI", "-H"])
        .arg("Accept: application/vnd.oci.image.manifest.v1+json")
        .arg(format!(
            "http://{addr}/v2/{repository}/manifests/{reference}"
        ))
        .output()
        .expect("curl");
    assert!(
        out.status.success(),
        "{repository}:{reference} not in the registry"
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("docker-content-digest")
                .then(|| v.trim().to_owned())
        })
        .expect("Docker-Content-Digest")
}

/// Tags of a repository (sorted), from the registry.
pub fn tags(addr: &str, repository: &str) -> Vec<String> {
    let out = Command::new("curl")
        .arg("-fsS")
        .arg(format!("http://{addr}/v2/{repository}/tags/list"))
        .output()
        .expect("curl");
    if !out.status.success() {
        return vec![];
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut t: Vec<String> = v["tags"]
        .as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    t.sort();
    t
}

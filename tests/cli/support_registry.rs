//! Shared by the registry tests: a real `docker-registry` (distribution 2.8.2) on a free
//! loopback port with basic (htpasswd) or token auth, and helpers to run `opship` and `skopeo`
//! against it. A missing tool fails the test (scripts/test installs docker-registry,
//! apache2-utils, skopeo and openssl).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Run, opship, run, tracked};

const REGISTRY_BIN: &str = "/usr/bin/docker-registry";

/// Fails the test when `path` (absolute, or a program on `PATH`) is missing.
pub fn require(path: &str, package: &str) {
    assert!(
        Path::new(path).exists() || which(path),
        "`{path}` is not installed: `apt-get install -y {package}` (scripts/test does this)"
    );
}

fn which(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// How the test registry authenticates.
pub enum RegistryAuth<'a> {
    /// Anonymous push and pull.
    None,
    /// `auth.htpasswd` with one user.
    Htpasswd(&'a str, &'a str),
    /// `auth.token`: bearer tokens from `realm`, signed by the certificate in `rootcertbundle`.
    Token {
        /// Token endpoint URL.
        realm: &'a str,
        /// `service` (the token's `aud`).
        service: &'a str,
        /// `issuer` (the token's `iss`).
        issuer: &'a str,
        /// PEM file with the trusted signing certificate.
        rootcertbundle: &'a Path,
    },
}

/// A `docker-registry` on 127.0.0.1, killed on drop.
pub struct TestRegistry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl TestRegistry {
    /// Starts a registry, anonymous or with one htpasswd user.
    pub fn start(htpasswd: Option<(&str, &str)>) -> Self {
        match htpasswd {
            Some((u, p)) => Self::start_with(RegistryAuth::Htpasswd(u, p)),
            None => Self::start_with(RegistryAuth::None),
        }
    }

    /// Starts a registry with the given authentication.
    pub fn start_with(auth: RegistryAuth<'_>) -> Self {
        require(REGISTRY_BIN, "docker-registry");
        let dir = tempfile::tempdir().unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  \
             filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            dir.path().join("data").display()
        );
        match auth {
            RegistryAuth::None => {}
            RegistryAuth::Htpasswd(user, pass) => {
                require("htpasswd", "apache2-utils");
                let out = Command::new("htpasswd")
                    .args(["-Bbn", user, pass])
                    .output()
                    .expect("run htpasswd");
                assert!(out.status.success(), "htpasswd failed");
                let file = dir.path().join("htpasswd");
                std::fs::write(&file, &out.stdout).unwrap();
                config.push_str(&format!(
                    "auth:\n  htpasswd:\n    realm: opship-test\n    path: {}\n",
                    file.display()
                ));
            }
            RegistryAuth::Token {
                realm,
                service,
                issuer,
                rootcertbundle,
            } => {
                config.push_str(&format!(
                    "auth:\n  token:\n    realm: {realm}\n    service: {service}\n    issuer: \
                     {issuer}\n    rootcertbundle: {}\n",
                    rootcertbundle.display()
                ));
            }
        }
        let config_file = dir.path().join("config.yml");
        std::fs::write(&config_file, config).unwrap();
        let child = Command::new(REGISTRY_BIN)
            .arg("serve")
            .arg(&config_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docker-registry");
        let mut reg = TestRegistry {
            child,
            addr,
            _dir: dir,
        };
        reg.wait_ready();
        reg
    }

    /// Process id of the registry (to kill it from another thread).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the registry process; its storage stays for [`TestRegistry::restart`].
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the registry again on the same address with the same storage and config.
    pub fn restart(&mut self) {
        self.stop();
        self.child = Command::new(REGISTRY_BIN)
            .arg("serve")
            .arg(self._dir.path().join("config.yml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("restart docker-registry");
        self.wait_ready();
    }

    /// Stops the registry, empties its storage and starts it again on the same address: a
    /// fresh registry that a release can be repeated into under the same names.
    pub fn restart_empty(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(self._dir.path().join("data"));
        self.restart();
    }

    /// Waits until `GET /v2/` answers (200, or 401 with auth).
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("docker-registry exited early: {status}");
            }
            if let Some((status, _)) = http_get(&self.addr, "/v2/", &[])
                && (status == 200 || status == 401)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "docker-registry did not come up on {}",
                self.addr
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain `GET` (HTTP/1.1, `Connection: close`) straight to `addr`: status and body, or
/// `None` when the connection fails. Used to look at the registry behind opship's back.
pub fn http_get(addr: &str, path: &str, headers: &[(&str, &str)]) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).ok()?;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Some((status, body))
}

/// HTTP status of `GET /v2/<repo>/manifests/<reference>` straight from the registry, accepting
/// OCI and Docker image manifests (distribution answers 404 for an OCI manifest to a client
/// that does not accept its media type): 200 when the tag or digest is there.
pub fn manifest_status(addr: &str, repo: &str, reference: &str) -> u16 {
    http_get(
        addr,
        &format!("/v2/{repo}/manifests/{reference}"),
        &[(
            "Accept",
            "application/vnd.oci.image.manifest.v1+json,              application/vnd.docker.distribution.manifest.v2+json",
        )],
    )
    .expect("registry reachable")
    .0
}

/// `opship` with an empty HOME and no other credential sources from the environment.
pub fn isolated(home: &Path) -> Command {
    let mut c = opship();
    c.env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("OPSHIP_REGISTRY_TIMEOUT")
        .env_remove("OPSHIP_REGISTRY_RETRIES")
        // A token in the environment (a CI job with `id-token: write`) makes a release
        // without a key sign keylessly against the public Sigstore.
        .env_remove("SIGSTORE_ID_TOKEN")
        .env_remove("ACTIONS_ID_TOKEN_REQUEST_URL")
        .env_remove("ACTIONS_ID_TOKEN_REQUEST_TOKEN");
    c
}

/// Runs a command with `stdin` as its standard input.
pub fn run_stdin(cmd: &mut Command, stdin: &str) -> Run {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run opship");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Asserts exit 0, showing the output otherwise.
pub fn ok(r: Run, what: &str) -> Run {
    assert_eq!(
        r.code, 0,
        "{what}\nstdout:\n{}\nstderr:\n{}",
        r.stdout, r.stderr
    );
    r
}

/// `skopeo`, failing the test when it is not installed.
pub fn skopeo() -> Command {
    require("skopeo", "skopeo");
    Command::new("skopeo")
}

/// `skopeo inspect --tls-verify=false docker://REF` as JSON; panics when skopeo fails.
pub fn skopeo_inspect(reference: &str) -> serde_json::Value {
    let out = skopeo()
        .args([
            "inspect",
            "--tls-verify=false",
            &format!("docker://{reference}"),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "skopeo inspect {reference}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&String::from_utf8_lossy(&out.stdout))
}

/// Parses JSON, showing the text when it is not.
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Builds `bundle/<version>` into a layout under `tmp` with tag `<version>`; returns
/// (layout, digest).
pub fn build(tmp: &Path, version: &str) -> (PathBuf, String) {
    let layout = tmp.join("oci");
    let r = ok(
        run(opship()
            .args(["build", "--layout"])
            .arg(&layout)
            .args(["--tag", version])
            .arg(tracked("bundle").join(version))),
        "opship build",
    );
    let digest = r.stdout.split_whitespace().nth(1).unwrap().to_owned();
    (layout, digest)
}

//! Credentials: explicit flags, Docker `config.json` (`auths`, `credHelpers`, `credsStore`),
//! containers `auth.json`, and `docker-credential-<name> get`; and `login`, which stores them.
//!
//! Lookup order for a registry host (the first source that knows the host wins):
//! 1. `--username` / `--password-stdin` (handled by the caller: [`Auth::Basic`]);
//! 2. `$DOCKER_CONFIG/config.json` when `DOCKER_CONFIG` is set, else `~/.docker/config.json`;
//! 3. `$REGISTRY_AUTH_FILE`;
//! 4. `$XDG_RUNTIME_DIR/containers/auth.json`;
//! 5. `$XDG_CONFIG_HOME/containers/auth.json` (default `~/.config/containers/auth.json`);
//! 6. anonymous.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use opship_core::input::{self, Kind};

use crate::error::{Error, Result};

/// Credentials for one registry.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// No credentials.
    Anonymous,
    /// User name and password (sent as HTTP Basic, or to the token service).
    Basic {
        /// User name.
        username: String,
        /// Password or token.
        password: String,
    },
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Anonymous => f.write_str("Anonymous"),
            Auth::Basic { username, .. } => write!(f, "Basic({username}, ***)"),
        }
    }
}

impl Auth {
    /// `text` with this password (and its `user:password` base64) withheld: for quoting what
    /// a server answered to a request that carried it.
    pub fn withhold(&self, text: &str) -> String {
        match self {
            Auth::Anonymous => text.to_owned(),
            Auth::Basic { username, password } => crate::redact::redact(
                text,
                &[password.as_str(), format!("{username}:{password}").as_str()],
            ),
        }
    }

    /// The user name, if any.
    pub fn username(&self) -> Option<&str> {
        match self {
            Auth::Anonymous => None,
            Auth::Basic { username, .. } => Some(username),
        }
    }
}

/// Where credentials were found (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The credentials.
    pub auth: Auth,
    /// The file or helper they came from (`anonymous` when none).
    pub source: String,
}

/// The environment the lookup reads (injectable for tests).
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$DOCKER_CONFIG`.
    pub docker_config: Option<PathBuf>,
    /// `$REGISTRY_AUTH_FILE`.
    pub registry_auth_file: Option<PathBuf>,
    /// `$XDG_RUNTIME_DIR`.
    pub xdg_runtime_dir: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
}

impl Env {
    /// The process environment.
    pub fn from_process() -> Self {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Env {
            home: var("HOME"),
            docker_config: var("DOCKER_CONFIG"),
            registry_auth_file: var("REGISTRY_AUTH_FILE"),
            xdg_runtime_dir: var("XDG_RUNTIME_DIR"),
            xdg_config_home: var("XDG_CONFIG_HOME"),
        }
    }

    /// The Docker config file `login` writes: `$DOCKER_CONFIG/config.json` or
    /// `~/.docker/config.json`.
    pub fn docker_config_file(&self) -> Option<PathBuf> {
        match (&self.docker_config, &self.home) {
            (Some(d), _) => Some(d.join("config.json")),
            (None, Some(h)) => Some(h.join(".docker/config.json")),
            (None, None) => None,
        }
    }

    /// The credential files in lookup order.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        files.extend(self.docker_config_file());
        files.extend(self.registry_auth_file.clone());
        if let Some(d) = &self.xdg_runtime_dir {
            files.push(d.join("containers/auth.json"));
        }
        match (&self.xdg_config_home, &self.home) {
            (Some(d), _) => files.push(d.join("containers/auth.json")),
            (None, Some(h)) => files.push(h.join(".config/containers/auth.json")),
            (None, None) => {}
        }
        files
    }
}

/// Keys under which a registry may appear in `auths`.
fn keys(host: &str) -> Vec<String> {
    let mut keys = vec![
        host.to_owned(),
        format!("https://{host}"),
        format!("http://{host}"),
        format!("https://{host}/v1/"),
        format!("https://{host}/v2/"),
    ];
    if matches!(
        host,
        "docker.io" | "index.docker.io" | "registry-1.docker.io"
    ) {
        keys.push("https://index.docker.io/v1/".into());
        keys.push("docker.io".into());
        keys.push("index.docker.io".into());
    }
    keys
}

/// A credentials file, `None` when it does not exist. Read through `opship_core::input`: a
/// regular file within the budget of a secret, never a FIFO or a device.
fn read_config(file: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::metadata(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => Ok(Some(input::read(file, Kind::Secret)?)),
    }
}

/// Credentials for `host` from the first source that knows it, or anonymous.
pub fn lookup(host: &str, env: &Env) -> Result<Found> {
    for file in env.files() {
        let Some(bytes) = read_config(&file)? else {
            continue;
        };
        let config: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Input(format!(
                "{}: not JSON: {e}",
                opship_core::paths::show(&file)
            ))
        })?;
        if let Some(found) = lookup_in(&config, host, &file)? {
            return Ok(found);
        }
    }
    Ok(Found {
        auth: Auth::Anonymous,
        source: "anonymous".into(),
    })
}

fn lookup_in(config: &serde_json::Value, host: &str, file: &Path) -> Result<Option<Found>> {
    let keys = keys(host);
    // A helper named for this registry wins over inline auths, as in Docker.
    if let Some(helpers) = config.get("credHelpers").and_then(|v| v.as_object()) {
        for key in &keys {
            if let Some(name) = helpers.get(key).and_then(|v| v.as_str()) {
                return helper_get(name, host).map(Some);
            }
        }
    }
    if let Some(auths) = config.get("auths").and_then(|v| v.as_object()) {
        for key in &keys {
            let Some(entry) = auths.get(key) else {
                continue;
            };
            if let Some(encoded) = entry.get("auth").and_then(|v| v.as_str())
                && !encoded.is_empty()
            {
                let auth = decode_auth(encoded).map_err(|e| {
                    Error::Input(format!(
                        "{}: auths.{key}.auth: {e}",
                        opship_core::paths::show(file)
                    ))
                })?;
                return Ok(Some(Found {
                    auth,
                    source: opship_core::paths::show(file).to_string(),
                }));
            }
            if let (Some(u), Some(p)) = (
                entry.get("username").and_then(|v| v.as_str()),
                entry.get("password").and_then(|v| v.as_str()),
            ) {
                return Ok(Some(Found {
                    auth: Auth::Basic {
                        username: u.into(),
                        password: p.into(),
                    },
                    source: opship_core::paths::show(file).to_string(),
                }));
            }
        }
    }
    if let Some(store) = config.get("credsStore").and_then(|v| v.as_str())
        && !store.is_empty()
    {
        // The store may not know the host: that is "no credentials", not an error.
        return Ok(helper_get(store, host).ok());
    }
    Ok(None)
}

/// Decodes `base64(user:password)`.
pub fn decode_auth(encoded: &str) -> std::result::Result<Auth, String> {
    // Not the decoder's message: it names the offending byte and its offset in the secret.
    let bytes = STANDARD
        .decode(encoded.trim())
        .map_err(|_| "not base64".to_owned())?;
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
    let (u, p) = text
        .split_once(':')
        .ok_or_else(|| "not `user:password`".to_owned())?;
    Ok(Auth::Basic {
        username: u.into(),
        password: p.into(),
    })
}

/// Runs `docker-credential-<name> get` with the host on stdin.
fn helper_get(name: &str, host: &str) -> Result<Found> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(Error::Input(format!(
            "invalid credential helper name `{name}`"
        )));
    }
    let program = format!("docker-credential-{name}");
    // A helper that prompts, hangs or floods is stopped: credentials are a few hundred bytes.
    let limits = opship_core::child::Limits::new(std::time::Duration::from_secs(60), 1024 * 1024);
    let out = opship_core::child::run(
        Command::new(&program).arg("get"),
        Some(host.as_bytes()),
        limits,
        &format!("{program} get"),
    )
    .map_err(|e| Error::Input(e.to_string()))?;
    if !out.status.success() {
        // stdout is where a helper writes credentials: quoted only when it is no JSON (the
        // helpers' "credentials not found" is plain text), and never with a credential shape.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stdout = if serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok() {
            "(a JSON answer, not shown: it may hold credentials)".into()
        } else {
            crate::redact::redact(stdout.trim(), &[])
        };
        return Err(Error::Input(format!(
            "{program} get {host}: {stdout}{}",
            crate::redact::redact(String::from_utf8_lossy(&out.stderr).trim(), &[])
        )));
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Answer {
        username: String,
        secret: String,
    }
    // serde's message quotes the value it did not expect (a numeric secret): only where.
    let a: Answer = serde_json::from_slice(&out.stdout).map_err(|e| {
        Error::Input(format!(
            "{program} get: not credentials JSON with string `Username` and `Secret` (line {}, \
             column {}; the answer is not shown: it may hold credentials)",
            e.line(),
            e.column()
        ))
    })?;
    Ok(Found {
        auth: Auth::Basic {
            username: a.username,
            password: a.secret,
        },
        source: program,
    })
}

/// Stores `user:password` for `host` in the Docker config file (`auths.<host>.auth`),
/// atomically and with mode 0600, keeping everything else in the file.
pub fn store(host: &str, username: &str, password: &str, env: &Env) -> Result<PathBuf> {
    let file = env.docker_config_file().ok_or_else(|| {
        Error::Input("neither HOME nor DOCKER_CONFIG is set: nowhere to store credentials".into())
    })?;
    let mut config: serde_json::Value = match read_config(&file)? {
        Some(b) => serde_json::from_slice(&b).map_err(|e| {
            Error::Input(format!(
                "{}: not JSON: {e}",
                opship_core::paths::show(&file)
            ))
        })?,
        None => serde_json::json!({}),
    };
    let Some(obj) = config.as_object_mut() else {
        return Err(Error::Input(format!(
            "{}: not a JSON object",
            opship_core::paths::show(&file)
        )));
    };
    let auths = obj.entry("auths").or_insert_with(|| serde_json::json!({}));
    let Some(auths) = auths.as_object_mut() else {
        return Err(Error::Input(format!(
            "{}: `auths` is not an object",
            opship_core::paths::show(&file)
        )));
    };
    let encoded = STANDARD.encode(format!("{username}:{password}"));
    let mut entry = serde_json::Map::new();
    entry.insert("auth".into(), encoded.into());
    auths.insert(host.to_owned(), serde_json::Value::Object(entry));
    let mut bytes =
        serde_json::to_vec_pretty(&config).map_err(|e| Error::Input(format!("JSON: {e}")))?;
    bytes.push(b'\n');
    write_private(&file, &bytes)?;
    Ok(file)
}

/// Writes `bytes` to `path` atomically with mode 0600.
fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    Ok(opship_core::fsutil::write_atomic_with_mode(
        path, bytes, 0o600,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode() {
        let a = decode_auth(&STANDARD.encode("u:p:q")).unwrap();
        assert_eq!(
            a,
            Auth::Basic {
                username: "u".into(),
                password: "p:q".into()
            }
        );
        assert!(decode_auth("!!").is_err());
        assert!(decode_auth(&STANDARD.encode("nocolon")).is_err());
    }

    #[test]
    fn order_and_store() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env {
            home: Some(dir.path().join("home")),
            registry_auth_file: Some(dir.path().join("auth.json")),
            ..Env::default()
        };
        assert_eq!(lookup("r:1", &env).unwrap().auth, Auth::Anonymous);
        std::fs::write(
            dir.path().join("auth.json"),
            format!(
                r#"{{"auths":{{"r:1":{{"auth":"{}"}}}}}}"#,
                STANDARD.encode("a:b")
            ),
        )
        .unwrap();
        assert_eq!(lookup("r:1", &env).unwrap().auth.username(), Some("a"));
        let file = store("r:1", "c", "d", &env).unwrap();
        assert_eq!(file, dir.path().join("home/.docker/config.json"));
        assert_eq!(lookup("r:1", &env).unwrap().auth.username(), Some("c"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}

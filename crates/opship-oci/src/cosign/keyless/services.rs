//! Which Fulcio, Rekor and timestamp authority a keyless signature uses: cosign 3's
//! `signing_config.json` (Sigstore's `SigningConfig` v0.2: `caUrls`, `rekorTlogUrls`,
//! `tsaUrls`, each with `majorApiVersion` and `validFor`), the `--fulcio-url`, `--rekor-url`,
//! `--timestamp-server-url` overrides, and the public-good instance when neither is given.

use std::path::Path;

use crate::error::{Error, Result};

/// Public-good Fulcio.
pub const PUBLIC_FULCIO: &str = "https://fulcio.sigstore.dev";
/// Public-good Rekor (API v1).
pub const PUBLIC_REKOR: &str = "https://rekor.sigstore.dev";
/// Public-good timestamp authority.
pub const PUBLIC_TSA: &str = "https://timestamp.sigstore.dev/api/v1/timestamp";

/// A transparency log: its URL and API major version (1: Rekor, 2: rekor-tiles).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tlog {
    /// Base URL.
    pub url: String,
    /// 1 or 2.
    pub version: u32,
}

/// The services of one keyless signing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Services {
    /// Fulcio's base URL (API v2 under it).
    pub fulcio: String,
    /// The log, or none (a signing config without one, as cosign 2 with `--tlog-upload=false`).
    pub rekor: Option<Tlog>,
    /// The timestamp authority's full endpoint, or none.
    pub tsa: Option<String>,
}

/// The overrides of the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--signing-config FILE`.
    pub signing_config: Option<std::path::PathBuf>,
    /// `--fulcio-url`.
    pub fulcio: Option<String>,
    /// `--rekor-url` (keeps the API version the config names; 2 without a config entry).
    pub rekor: Option<String>,
    /// `--timestamp-server-url`.
    pub tsa: Option<String>,
}

impl Default for Services {
    fn default() -> Self {
        Services {
            fulcio: PUBLIC_FULCIO.into(),
            rekor: Some(Tlog {
                url: PUBLIC_REKOR.into(),
                version: 1,
            }),
            tsa: Some(PUBLIC_TSA.into()),
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS` of an RFC 3339 time in UTC, comparable as text.
fn stamp(t: &str) -> String {
    t.chars().take(19).collect()
}

/// Whether a service entry is valid now (its `validFor` window).
fn valid_now(entry: &serde_json::Value, now: &str) -> bool {
    let window = entry.get("validFor");
    let start = window.and_then(|w| w.get("start")).and_then(|s| s.as_str());
    let end = window.and_then(|w| w.get("end")).and_then(|s| s.as_str());
    start.is_none_or(|s| stamp(s).as_str() <= now) && end.is_none_or(|e| now < stamp(e).as_str())
}

/// The valid entries of `list` with a supported API version, newest version first.
fn pick(
    doc: &serde_json::Value,
    list: &str,
    versions: &[u32],
    now: &str,
    what: &str,
) -> Result<Vec<(String, u32)>> {
    let Some(entries) = doc.get(list) else {
        return Ok(Vec::new());
    };
    let entries = entries
        .as_array()
        .ok_or_else(|| Error::Input(format!("{what}: `{list}` is not a list")))?;
    let mut out = Vec::new();
    for e in entries {
        let url = e
            .get("url")
            .and_then(|u| u.as_str())
            .ok_or_else(|| Error::Input(format!("{what}: an entry of `{list}` has no url")))?;
        let version = e
            .get("majorApiVersion")
            .and_then(|v| v.as_u64())
            .unwrap_or(1) as u32;
        if versions.contains(&version) && valid_now(e, now) {
            out.push((url.trim_end_matches('/').to_owned(), version));
        }
    }
    out.sort_by_key(|(_, v)| std::cmp::Reverse(*v));
    Ok(out)
}

impl Services {
    /// Reads a signing config (`what` names it in errors).
    pub fn from_signing_config(bytes: &[u8], what: &str) -> Result<Self> {
        let doc: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            Error::Input(format!(
                "{what}: not JSON: {e} (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        let media = doc.get("mediaType").and_then(|m| m.as_str()).unwrap_or("");
        if !media.starts_with("application/vnd.dev.sigstore.signingconfig.") {
            return Err(Error::Input(format!(
                "{what}: mediaType is `{media}`, not a Sigstore signing config \
                 (application/vnd.dev.sigstore.signingconfig.v0.2+json)"
            )));
        }
        let now = stamp(&opship_core::image::oci::rfc3339(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        ));
        let fulcio = pick(&doc, "caUrls", &[1], &now, what)?
            .into_iter()
            .next()
            .map(|(u, _)| u)
            .ok_or_else(|| {
                Error::Input(format!(
                    "{what}: no Fulcio (`caUrls`, API v1) valid now; keyless signing needs one"
                ))
            })?;
        let rekor = pick(&doc, "rekorTlogUrls", &[1, 2], &now, what)?
            .into_iter()
            .next()
            .map(|(url, version)| Tlog { url, version });
        let tsa = pick(&doc, "tsaUrls", &[1], &now, what)?
            .into_iter()
            .next()
            .map(|(u, _)| u);
        Ok(Services { fulcio, rekor, tsa })
    }

    /// The services for `overrides`: the signing config (else public-good), then each URL
    /// given on the command line in its place.
    pub fn resolve(overrides: &Overrides) -> Result<Self> {
        let mut s = match &overrides.signing_config {
            Some(p) => Self::read(p)?,
            None => Services::default(),
        };
        if let Some(u) = &overrides.fulcio {
            s.fulcio = u.trim_end_matches('/').to_owned();
        }
        if let Some(u) = &overrides.rekor {
            let version = match (&overrides.signing_config, &s.rekor) {
                (Some(_), Some(t)) => t.version,
                _ => 2,
            };
            s.rekor = Some(Tlog {
                url: u.trim_end_matches('/').to_owned(),
                version,
            });
        }
        if let Some(u) = &overrides.tsa {
            s.tsa = Some(u.clone());
        }
        Ok(s)
    }

    /// Reads a signing config file (a regular file of at most 64 KiB).
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = opship_core::input::read(path, opship_core::input::Kind::Secret)
            .map_err(|e| Error::Input(format!("--signing-config {e}")))?;
        Self::from_signing_config(&bytes, &opship_core::paths::show(path).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signing_config() {
        let doc = br#"{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json",
          "caUrls":[{"url":"http://f/","majorApiVersion":1,"validFor":{"start":"2020-01-01T00:00:00Z"}}],
          "rekorTlogUrls":[{"url":"http://r1","majorApiVersion":1,"validFor":{"start":"2020-01-01T00:00:00Z"}},
                           {"url":"http://r2","majorApiVersion":2,"validFor":{"start":"2020-01-01T00:00:00Z"}},
                           {"url":"http://old","majorApiVersion":2,"validFor":{"start":"2020-01-01T00:00:00Z","end":"2021-01-01T00:00:00Z"}}],
          "tsaUrls":[{"url":"http://t/api/v1/timestamp","majorApiVersion":1,"validFor":{"start":"2020-01-01T00:00:00Z"}}]}"#;
        let s = Services::from_signing_config(doc, "sc.json").unwrap();
        assert_eq!(s.fulcio, "http://f");
        assert_eq!(
            s.rekor,
            Some(Tlog {
                url: "http://r2".into(),
                version: 2
            })
        );
        assert_eq!(s.tsa.as_deref(), Some("http://t/api/v1/timestamp"));
        let e = Services::from_signing_config(br#"{"mediaType":"x"}"#, "sc.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sc.json: mediaType is `x`"), "{e}");
    }
}

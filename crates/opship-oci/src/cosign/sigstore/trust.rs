//! The trusted root of a Sigstore instance, in the `trusted_root.json` format of cosign 3 and
//! the Sigstore clients (`application/vnd.dev.sigstore.trustedroot+json;version=0.1`): Fulcio
//! certificate chains, Rekor (v1 and v2) and CT log keys with their log IDs, and timestamp
//! authority chains, each valid in a closed time window. The public-good instance's root
//! (sigstore.dev) is embedded; `--trusted-root FILE` names another.
//!
//! A window without a start is refused, not read as unbounded: a root that lost a bound must
//! not widen what it trusts.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use serde_json::Value;
use x509_cert::Certificate;
use x509_cert::der::Decode as _;

use super::crypto::VerifyKey;
use crate::error::{Error, Result};

/// The public-good root, as shipped in the `sigstore` 4.5.1 Python package.
const PUBLIC_GOOD: &str = include_str!("public_good_trusted_root.json");

/// A closed time interval `[start, end]`; no end means still valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    /// First instant of validity.
    pub start: DateTime<Utc>,
    /// Last instant of validity (inclusive), if any.
    pub end: Option<DateTime<Utc>>,
}

impl TimeRange {
    /// Whether `t` lies in the window (both ends inclusive).
    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        t >= self.start && self.end.is_none_or(|e| t <= e)
    }
}

impl std::fmt::Display for TimeRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.end {
            Some(e) => write!(f, "{} to {}", self.start.to_rfc3339(), e.to_rfc3339()),
            None => write!(f, "from {}", self.start.to_rfc3339()),
        }
    }
}

/// A transparency log (Rekor) or certificate transparency log and its key.
#[derive(Debug, Clone)]
pub struct TransparencyLog {
    /// `baseUrl`, e.g. `https://rekor.sigstore.dev`.
    pub base_url: String,
    /// `logId.keyId`: how entries, SCTs and checkpoints name the log.
    pub log_id: Vec<u8>,
    /// The log's signing key.
    pub key: VerifyKey,
    /// When the key may be used.
    pub valid_for: TimeRange,
}

impl TransparencyLog {
    /// The host of `base_url` (the name a checkpoint signature carries).
    pub fn host(&self) -> &str {
        let rest = self
            .base_url
            .split_once("://")
            .map_or(self.base_url.as_str(), |(_, r)| r);
        rest.split('/').next().unwrap_or(rest)
    }
}

/// A certificate authority (Fulcio) or timestamp authority and its chain.
#[derive(Debug, Clone)]
pub struct CertificateAuthority {
    /// `uri`.
    pub uri: String,
    /// The chain as DER, as listed: the issuing (intermediate) certificate first, the root last.
    pub chain: Vec<Vec<u8>>,
    /// When certificates it issued are trusted.
    pub valid_for: TimeRange,
}

/// A parsed trusted root.
#[derive(Debug, Clone)]
pub struct TrustedRoot {
    /// Rekor logs (`tlogs`).
    pub tlogs: Vec<TransparencyLog>,
    /// Certificate transparency logs (`ctlogs`); SCTs are checked only when there are any.
    pub ctlogs: Vec<TransparencyLog>,
    /// Fulcio instances (`certificateAuthorities`).
    pub certificate_authorities: Vec<CertificateAuthority>,
    /// RFC 3161 timestamp authorities (`timestampAuthorities`).
    pub timestamp_authorities: Vec<CertificateAuthority>,
}

fn bad(what: &str, field: &str, why: impl std::fmt::Display) -> Error {
    Error::Input(format!("{what}: {field}: {why}"))
}

fn time(v: &Value, what: &str, field: &str) -> Result<DateTime<Utc>> {
    let s = v
        .as_str()
        .ok_or_else(|| bad(what, field, "not an RFC 3339 time string"))?;
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| bad(what, field, format!("`{s}` is not an RFC 3339 time ({e})")))
}

fn range(v: Option<&Value>, what: &str, field: &str) -> Result<TimeRange> {
    let v = v.ok_or_else(|| bad(what, field, "missing (a validity window is required)"))?;
    let start = v
        .get("start")
        .ok_or_else(|| bad(what, &format!("{field}.start"), "missing"))?;
    let start = time(start, what, &format!("{field}.start"))?;
    let end = match v.get("end").filter(|e| !e.is_null()) {
        Some(e) => Some(time(e, what, &format!("{field}.end"))?),
        None => None,
    };
    Ok(TimeRange { start, end })
}

fn b64(v: Option<&Value>, what: &str, field: &str) -> Result<Vec<u8>> {
    let s = v
        .and_then(Value::as_str)
        .ok_or_else(|| bad(what, field, "missing"))?;
    STANDARD
        .decode(s)
        .map_err(|e| bad(what, field, format!("not base64 ({e})")))
}

/// Reads `tlogs` or `ctlogs`. With `skip_bad_keys`, a log whose key is no PKIX key Sigstore
/// uses is left out instead of failing the root (real roots carry CT keys in other encodings;
/// an SCT naming such a log then finds no trusted log).
fn logs(root: &Value, key: &str, what: &str, skip_bad_keys: bool) -> Result<Vec<TransparencyLog>> {
    let Some(list) = root.get(key) else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| bad(what, key, "not an array"))?;
    let parsed = list.iter().enumerate().map(|(i, l)| {
        let f = |s: &str| format!("{key}[{i}].{s}");
        let base_url = l
            .get("baseUrl")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let pk = l
            .get("publicKey")
            .ok_or_else(|| bad(what, &f("publicKey"), "missing"))?;
        let der = b64(pk.get("rawBytes"), what, &f("publicKey.rawBytes"))?;
        let key =
            VerifyKey::from_spki_der(&der).map_err(|e| bad(what, &f("publicKey.rawBytes"), e))?;
        Ok::<_, Error>(TransparencyLog {
            base_url,
            log_id: b64(l.pointer("/logId/keyId"), what, &f("logId.keyId"))?,
            key,
            valid_for: range(pk.get("validFor"), what, &f("publicKey.validFor"))?,
        })
    });
    let mut out = Vec::new();
    for log in parsed {
        match log {
            Ok(l) => out.push(l),
            Err(e) if skip_bad_keys && e.to_string().contains("publicKey.rawBytes") => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

fn authorities(root: &Value, key: &str, what: &str) -> Result<Vec<CertificateAuthority>> {
    let Some(list) = root.get(key) else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| bad(what, key, "not an array"))?;
    list.iter()
        .enumerate()
        .map(|(i, a)| {
            let f = |s: &str| format!("{key}[{i}].{s}");
            let certs = a
                .pointer("/certChain/certificates")
                .and_then(Value::as_array)
                .filter(|c| !c.is_empty())
                .ok_or_else(|| bad(what, &f("certChain.certificates"), "missing or empty"))?;
            let chain = certs
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    let field = f(&format!("certChain.certificates[{j}].rawBytes"));
                    let der = b64(c.get("rawBytes"), what, &field)?;
                    Certificate::from_der(&der).map_err(|e| {
                        bad(what, &field, format!("not an X.509 certificate ({e})"))
                    })?;
                    Ok(der)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(CertificateAuthority {
                uri: a
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                chain,
                valid_for: range(a.get("validFor"), what, &f("validFor"))?,
            })
        })
        .collect()
}

impl TrustedRoot {
    /// Parses `trusted_root.json`; `what` names the source in errors (which field, why).
    pub fn from_json(bytes: &[u8], what: &str) -> Result<Self> {
        let root: Value = serde_json::from_slice(bytes)
            .map_err(|e| Error::Input(format!("{what}: not JSON: {e}")))?;
        let media = root
            .get("mediaType")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !media.starts_with("application/vnd.dev.sigstore.trustedroot") {
            return Err(bad(
                what,
                "mediaType",
                format!("`{media}` is not application/vnd.dev.sigstore.trustedroot+json"),
            ));
        }
        Ok(TrustedRoot {
            tlogs: logs(&root, "tlogs", what, false)?,
            ctlogs: logs(&root, "ctlogs", what, true)?,
            certificate_authorities: authorities(&root, "certificateAuthorities", what)?,
            timestamp_authorities: authorities(&root, "timestampAuthorities", what)?,
        })
    }

    /// Reads a trusted root file (a regular file within the configuration-file budget).
    pub fn read(path: &std::path::Path) -> Result<Self> {
        let bytes = opship_core::input::read(path, opship_core::input::Kind::Config)?;
        Self::from_json(&bytes, &opship_core::paths::show(path).to_string())
    }

    /// The embedded root of the public-good instance (sigstore.dev).
    pub fn public_good() -> Self {
        // The embedded file is fixed at build time; the unit test below parses it.
        Self::from_json(
            PUBLIC_GOOD.as_bytes(),
            "embedded public-good trusted_root.json",
        )
        .unwrap_or(TrustedRoot {
            tlogs: Vec::new(),
            ctlogs: Vec::new(),
            certificate_authorities: Vec::new(),
            timestamp_authorities: Vec::new(),
        })
    }

    /// The Rekor log with this log ID.
    pub fn tlog(&self, log_id: &[u8]) -> Option<&TransparencyLog> {
        self.tlogs.iter().find(|l| l.log_id == log_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_good_parses() {
        let r = TrustedRoot::from_json(PUBLIC_GOOD.as_bytes(), "pg").unwrap();
        assert_eq!(r.tlogs.len(), 2);
        assert_eq!(r.tlogs[0].host(), "rekor.sigstore.dev");
        assert_eq!(r.tlogs[1].key.kind(), "Ed25519");
        assert_eq!(r.certificate_authorities.len(), 2);
        assert_eq!(r.certificate_authorities[1].chain.len(), 2);
        assert_eq!(r.ctlogs.len(), 2);
        assert_eq!(r.timestamp_authorities.len(), 1);
        let end = r.certificate_authorities[0].valid_for.end.unwrap();
        assert!(r.certificate_authorities[0].valid_for.contains(end));
        assert!(
            !r.certificate_authorities[0]
                .valid_for
                .contains(end + chrono::Duration::milliseconds(1))
        );
        assert_eq!(TrustedRoot::public_good().tlogs.len(), 2);
    }

    #[test]
    fn errors_name_the_field() {
        let e = TrustedRoot::from_json(b"{\"mediaType\":\"x\"}", "t.json").unwrap_err();
        assert!(e.to_string().contains("t.json: mediaType"), "{e}");
        let mut v: Value = serde_json::from_str(PUBLIC_GOOD).unwrap();
        v["tlogs"][1]["publicKey"]["validFor"]
            .as_object_mut()
            .unwrap()
            .remove("start");
        let e = TrustedRoot::from_json(v.to_string().as_bytes(), "t.json").unwrap_err();
        assert!(
            e.to_string()
                .contains("tlogs[1].publicKey.validFor.start: missing"),
            "{e}"
        );
        v["tlogs"][1]["publicKey"]["validFor"]["start"] = "2020-13-01".into();
        let e = TrustedRoot::from_json(v.to_string().as_bytes(), "t.json").unwrap_err();
        assert!(e.to_string().contains("not an RFC 3339 time"), "{e}");
    }
}

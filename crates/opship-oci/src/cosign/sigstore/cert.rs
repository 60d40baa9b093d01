//! Fulcio signing certificates: the chain to a certificate authority of the trusted root,
//! validity at the signing time, embedded SCTs from the root's CT logs (RFC 6962 §3.2,
//! verified over the precertificate TBS), and the identity policy cosign applies (subject
//! alternative name, OIDC issuer, GitHub workflow claims in Fulcio's extensions).

use chrono::{DateTime, Utc};
use sha2::{Digest as _, Sha256};
use x509_cert::Certificate;
use x509_cert::der::{Decode as _, Encode as _};

use super::asn1;
use super::crypto::{Hash, VerifyKey};
use super::trust::{CertificateAuthority, TrustedRoot};

/// Fulcio's OIDC issuer extension (v2, a DER UTF8String).
const ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
/// Fulcio's deprecated issuer extension (v1, raw bytes).
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
/// RFC 6962's embedded SCT list.
const SCT_LIST: &str = "1.3.6.1.4.1.11129.2.4.2";

/// The validity window of a certificate.
pub fn validity(cert: &Certificate) -> (DateTime<Utc>, DateTime<Utc>) {
    let v = cert.tbs_certificate().validity();
    let t = |d: std::time::Duration| {
        DateTime::from_timestamp(i64::try_from(d.as_secs()).unwrap_or(i64::MAX), 0)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    };
    (
        t(v.not_before.to_unix_duration()),
        t(v.not_after.to_unix_duration()),
    )
}

/// RFC 3339 for messages.
pub fn cert_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339()
}

/// The SubjectPublicKeyInfo DER of a certificate.
pub fn spki_der(cert: &Certificate) -> Result<Vec<u8>, String> {
    cert.tbs_certificate()
        .subject_public_key_info()
        .to_der()
        .map_err(|e| format!("certificate key: {e}"))
}

fn sig_hash(oid: &[u8]) -> Option<Hash> {
    [
        ("1.2.840.10045.4.3.2", Hash::Sha256),
        ("1.2.840.10045.4.3.3", Hash::Sha384),
        ("1.2.840.10045.4.3.4", Hash::Sha512),
        ("1.2.840.113549.1.1.11", Hash::Sha256),
        ("1.2.840.113549.1.1.12", Hash::Sha384),
        ("1.2.840.113549.1.1.13", Hash::Sha512),
        ("1.3.101.112", Hash::Sha512),
    ]
    .into_iter()
    .find(|(o, _)| asn1::oid(o) == oid)
    .map(|(_, h)| h)
}

/// The TBS bytes of a certificate as signed.
fn tbs_raw(der: &[u8]) -> Option<asn1::Tlv<'_>> {
    let (cert, _) = asn1::read(der)?;
    asn1::children(cert.content)?.first().copied()
}

/// Whether `issuer_der` signed `der`.
pub fn signed_by(der: &[u8], issuer_der: &[u8]) -> bool {
    let (Ok(cert), Ok(issuer)) = (
        Certificate::from_der(der),
        Certificate::from_der(issuer_der),
    ) else {
        return false;
    };
    if cert.tbs_certificate().issuer() != issuer.tbs_certificate().subject() {
        return false;
    }
    let Some(hash) = cert
        .signature_algorithm()
        .oid
        .to_der()
        .ok()
        .and_then(|o| asn1::read(&o).and_then(|(t, _)| sig_hash(t.content)))
    else {
        return false;
    };
    let (Some(tbs), Some(sig), Ok(key)) = (
        tbs_raw(der),
        cert.signature().as_bytes(),
        spki_der(&issuer).and_then(|d| VerifyKey::from_spki_der(&d)),
    ) else {
        return false;
    };
    key.verifies_with(hash, tbs.raw, sig)
}

/// Finds the certificate authority of `root` that issued `leaf` (DER) and checks the chain up
/// to the authority's root certificate; the reason when none did.
pub fn chain<'r>(leaf: &[u8], root: &'r TrustedRoot) -> Result<&'r CertificateAuthority, String> {
    for ca in &root.certificate_authorities {
        let Some(issuer) = ca.chain.first() else {
            continue;
        };
        if signed_by(leaf, issuer) && ca.chain.windows(2).all(|w| signed_by(&w[0], &w[1])) {
            return Ok(ca);
        }
    }
    Err(format!(
        "certificate: not issued by a certificate authority of the trusted root (known: {})",
        root.certificate_authorities
            .iter()
            .map(|c| format!("{} ({})", c.uri, c.valid_for))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn extension<'a>(cert: &'a Certificate, dotted: &str) -> Option<&'a [u8]> {
    cert.tbs_certificate()
        .extensions()?
        .iter()
        .find(|e| e.extn_id.to_string() == dotted)
        .map(|e| e.extn_value.as_bytes())
}

/// The subject alternative names (email, URI) of a certificate.
pub fn subjects(cert: &Certificate) -> Vec<String> {
    crate::cosign::keyless::fulcio::san(cert)
}

/// The OIDC issuer Fulcio recorded in the certificate.
pub fn oidc_issuer(cert: &Certificate) -> Option<String> {
    if let Some(v) = extension(cert, ISSUER_V2) {
        let (t, _) = asn1::read(v)?;
        return String::from_utf8(t.content.to_vec()).ok();
    }
    extension(cert, ISSUER_V1).and_then(|v| String::from_utf8(v.to_vec()).ok())
}

/// GitHub workflow claims in Fulcio's (v1) extensions, the ones cosign's
/// `--certificate-github-workflow-*` flags check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GithubClaim {
    /// `1.3.6.1.4.1.57264.1.2`: the event that triggered the workflow.
    Trigger,
    /// `…1.3`: the commit.
    Sha,
    /// `…1.4`: the workflow's name.
    Name,
    /// `…1.5`: `owner/repo`.
    Repository,
    /// `…1.6`: the git ref.
    Ref,
}

impl GithubClaim {
    /// Every claim, in the order they are reported.
    pub const ALL: [GithubClaim; 5] = [
        GithubClaim::Repository,
        GithubClaim::Ref,
        GithubClaim::Name,
        GithubClaim::Trigger,
        GithubClaim::Sha,
    ];

    /// The key cosign's `verify -o json` gives the claim in `optional`.
    pub fn key(self) -> &'static str {
        match self {
            GithubClaim::Trigger => "githubWorkflowTrigger",
            GithubClaim::Sha => "githubWorkflowSha",
            GithubClaim::Name => "githubWorkflowName",
            GithubClaim::Repository => "githubWorkflowRepository",
            GithubClaim::Ref => "githubWorkflowRef",
        }
    }

    /// A short name for text output.
    pub fn label(self) -> &'static str {
        match self {
            GithubClaim::Trigger => "trigger",
            GithubClaim::Sha => "sha",
            GithubClaim::Name => "workflow",
            GithubClaim::Repository => "repository",
            GithubClaim::Ref => "ref",
        }
    }

    fn oid(self) -> &'static str {
        match self {
            GithubClaim::Trigger => "1.3.6.1.4.1.57264.1.2",
            GithubClaim::Sha => "1.3.6.1.4.1.57264.1.3",
            GithubClaim::Name => "1.3.6.1.4.1.57264.1.4",
            GithubClaim::Repository => "1.3.6.1.4.1.57264.1.5",
            GithubClaim::Ref => "1.3.6.1.4.1.57264.1.6",
        }
    }

    /// The cosign flag that sets it, for messages.
    pub fn flag(self) -> &'static str {
        match self {
            GithubClaim::Trigger => "--certificate-github-workflow-trigger",
            GithubClaim::Sha => "--certificate-github-workflow-sha",
            GithubClaim::Name => "--certificate-github-workflow-name",
            GithubClaim::Repository => "--certificate-github-workflow-repository",
            GithubClaim::Ref => "--certificate-github-workflow-ref",
        }
    }

    /// The claim's value in `cert`.
    pub fn value(self, cert: &Certificate) -> Option<String> {
        extension(cert, self.oid()).and_then(|v| String::from_utf8(v.to_vec()).ok())
    }
}

/// An expected value: exact, or a regular expression (unanchored, as cosign's Go regexp
/// `MatchString`; anchor it with `^…$` to match whole values).
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Equal to.
    Exact(String),
    /// Matching.
    Regex(regex::Regex),
}

impl Matcher {
    /// A regular expression matcher; the reason when `re` does not compile.
    pub fn regex(re: &str) -> Result<Self, String> {
        regex::Regex::new(re)
            .map(Matcher::Regex)
            .map_err(|e| format!("`{re}` is not a regular expression: {e}"))
    }

    fn matches(&self, v: &str) -> bool {
        match self {
            Matcher::Exact(s) => s == v,
            Matcher::Regex(r) => r.is_match(v),
        }
    }
}

impl std::fmt::Display for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Matcher::Exact(s) => write!(f, "`{s}`"),
            Matcher::Regex(r) => write!(f, "a match of /{}/", r.as_str()),
        }
    }
}

/// Who a certificate says signed: what verdicts report next to the policy that matched, so a
/// pattern that matched is never all a reader sees (`/example-org/` also matches
/// `https://github.com/evil-org/example-org-fork/…`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CertSigner {
    /// The subject alternative name (email or URI) the policy matched; the first one when the
    /// policy names none.
    pub identity: String,
    /// The OIDC issuer Fulcio recorded.
    pub issuer: Option<String>,
    /// The GitHub workflow claims present, under cosign's keys (`githubWorkflowRepository`…).
    #[serde(flatten)]
    pub claims: std::collections::BTreeMap<&'static str, String>,
}

impl CertSigner {
    /// What `cert` says, with the identity `policy` matched.
    pub fn of(cert: &Certificate, policy: Option<&IdentityPolicy>) -> Self {
        let names = subjects(cert);
        let matched = policy
            .and_then(|p| p.subject.as_ref())
            .and_then(|m| names.iter().find(|s| m.matches(s)));
        let identity = matched.or(names.first()).cloned().unwrap_or_default();
        let claims = GithubClaim::ALL
            .into_iter()
            .filter_map(|c| c.value(cert).map(|v| (c.key(), v)))
            .collect();
        CertSigner {
            identity,
            issuer: oidc_issuer(cert),
            claims,
        }
    }
}

impl CertSigner {
    /// A verified payload as `cosign verify -o json` prints it for a certificate: `optional`
    /// gets `Subject`, `Issuer` and the workflow claims (replacing what the payload says
    /// there, which anyone could have signed).
    pub fn cosign_json(&self, payload: &serde_json::Value) -> serde_json::Value {
        let mut out = payload.clone();
        if let Some(o) = out.as_object_mut() {
            let optional = o
                .entry("optional")
                .or_insert_with(|| serde_json::Value::Object(Default::default()));
            if !optional.is_object() {
                *optional = serde_json::Value::Object(Default::default());
            }
            if let Some(m) = optional.as_object_mut() {
                m.insert("Subject".into(), self.identity.clone().into());
                m.insert(
                    "Issuer".into(),
                    self.issuer.clone().unwrap_or_default().into(),
                );
                for (k, v) in &self.claims {
                    m.insert((*k).into(), v.clone().into());
                }
            }
        }
        out
    }
}

/// Certificate text as printed: control characters escaped, so a crafted name cannot rewrite
/// the terminal line that reports it.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

impl std::fmt::Display for CertSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", printable(&self.identity))?;
        let mut parts = vec![format!(
            "issuer {}",
            self.issuer.as_deref().map_or("none".to_owned(), printable)
        )];
        for c in GithubClaim::ALL {
            if let Some(v) = self.claims.get(c.key()) {
                parts.push(format!("{} {}", c.label(), printable(v)));
            }
        }
        write!(f, " ({})", parts.join(", "))
    }
}

/// Who must have signed: the certificate's identity, its issuer and workflow claims.
#[derive(Debug, Clone, Default)]
pub struct IdentityPolicy {
    /// `--certificate-identity` / `-regexp`.
    pub subject: Option<Matcher>,
    /// `--certificate-oidc-issuer` / `-regexp`.
    pub issuer: Option<Matcher>,
    /// `--certificate-github-workflow-*`.
    pub claims: Vec<(GithubClaim, String)>,
}

impl IdentityPolicy {
    /// Checks `cert` against the policy; which field differs, expected and found, when not.
    pub fn check(&self, cert: &Certificate) -> Result<(), String> {
        let subjects = subjects(cert);
        if let Some(m) = &self.subject
            && !subjects.iter().any(|s| m.matches(s))
        {
            return Err(format!(
                "certificate identity: expected {m}, found {}",
                if subjects.is_empty() {
                    "no email or URI name".to_owned()
                } else {
                    subjects
                        .iter()
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ));
        }
        let issuer = oidc_issuer(cert);
        if let Some(m) = &self.issuer
            && !issuer.as_deref().is_some_and(|i| m.matches(i))
        {
            return Err(format!(
                "certificate OIDC issuer: expected {m}, found {}",
                issuer.map_or("none".to_owned(), |i| format!("`{i}`"))
            ));
        }
        for (claim, want) in &self.claims {
            let found = claim.value(cert);
            if found.as_deref() != Some(want.as_str()) {
                return Err(format!(
                    "certificate claim {}: expected `{want}`, found {}",
                    claim.flag(),
                    found.map_or("none".to_owned(), |v| format!("`{v}`"))
                ));
            }
        }
        Ok(())
    }
}

/// Whether `cert` embeds an SCT list (RFC 6962 §3.3).
pub fn has_sct(cert: &Certificate) -> bool {
    extension(cert, SCT_LIST).is_some()
}

/// The precertificate TBS an SCT signs: the certificate's TBS without the SCT list.
fn precert_tbs(der: &[u8]) -> Option<Vec<u8>> {
    let tbs = tbs_raw(der)?;
    let sct_oid = asn1::oid(SCT_LIST);
    let mut content = Vec::new();
    for field in asn1::children(tbs.content)? {
        if field.tag != 0xa3 {
            content.extend_from_slice(field.raw);
            continue;
        }
        let (exts, _) = asn1::read(field.content)?;
        let mut kept = Vec::new();
        for ext in asn1::children(exts.content)? {
            let is_sct = asn1::children(ext.content)?
                .first()
                .is_some_and(|o| o.content == sct_oid);
            if !is_sct {
                kept.extend_from_slice(ext.raw);
            }
        }
        content.extend(asn1::encode(0xa3, &asn1::encode(0x30, &kept)));
    }
    Some(asn1::encode(0x30, &content))
}

struct Sct<'a> {
    log_id: &'a [u8],
    timestamp: &'a [u8],
    extensions: &'a [u8],
    hash: u8,
    signature: &'a [u8],
}

fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if b.len() < n {
        return None;
    }
    let (h, t) = b.split_at(n);
    *b = t;
    Some(h)
}

fn take_u16<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
    let l = take(b, 2)?;
    take(b, usize::from(u16::from_be_bytes([l[0], l[1]])))
}

fn parse_scts(mut list: &[u8]) -> Option<Vec<Sct<'_>>> {
    let mut all = take_u16(&mut list)?;
    let mut out = Vec::new();
    while !all.is_empty() {
        let mut s = take_u16(&mut all)?;
        if take(&mut s, 1)? != [0] {
            continue;
        }
        let log_id = take(&mut s, 32)?;
        let timestamp = take(&mut s, 8)?;
        let extensions = take_u16(&mut s)?;
        let algs = take(&mut s, 2)?;
        let signature = take_u16(&mut s)?;
        out.push(Sct {
            log_id,
            timestamp,
            extensions,
            hash: algs[0],
            signature,
        });
    }
    Some(out)
}

/// Checks that an SCT embedded in `leaf` is signed by a CT log of `root` (only called when
/// the root has CT logs); the reason when none is.
pub fn verify_sct(leaf: &[u8], issuer_spki: &[u8], root: &TrustedRoot) -> Result<(), String> {
    let cert = Certificate::from_der(leaf).map_err(|e| format!("certificate: {e}"))?;
    let list = extension(&cert, SCT_LIST)
        .ok_or("certificate: no embedded SCT, and the trusted root has CT logs")?;
    let scts = asn1::read(list)
        .filter(|(t, _)| t.tag == 0x04)
        .and_then(|(t, _)| parse_scts(t.content))
        .ok_or("certificate: the SCT list extension is malformed")?;
    let tbs = precert_tbs(leaf).ok_or("certificate: the TBS is malformed")?;
    let tbs_len = u32::try_from(tbs.len()).map_err(|_| "certificate: TBS too large")?;
    let issuer_key_hash = Sha256::digest(issuer_spki);
    let mut reasons = Vec::new();
    for sct in &scts {
        let Some(log) = root.ctlogs.iter().find(|l| l.log_id == sct.log_id) else {
            reasons.push("an SCT from a CT log the trusted root does not list".to_owned());
            continue;
        };
        let hash = match sct.hash {
            4 => Hash::Sha256,
            5 => Hash::Sha384,
            6 => Hash::Sha512,
            h => {
                reasons.push(format!("an SCT with unknown hash algorithm {h}"));
                continue;
            }
        };
        let mut signed = vec![0u8, 0u8];
        signed.extend_from_slice(sct.timestamp);
        signed.extend_from_slice(&[0, 1]);
        signed.extend_from_slice(&issuer_key_hash);
        signed.extend_from_slice(&tbs_len.to_be_bytes()[1..]);
        signed.extend_from_slice(&tbs);
        signed.extend_from_slice(&(sct.extensions.len() as u16).to_be_bytes());
        signed.extend_from_slice(sct.extensions);
        if log.key.verifies_with(hash, &signed, sct.signature) {
            return Ok(());
        }
        reasons.push(format!(
            "the SCT of {} does not verify with its key",
            log.base_url
        ));
    }
    Err(format!(
        "certificate: no valid SCT from a CT log of the trusted root ({})",
        if reasons.is_empty() {
            "the list is empty".to_owned()
        } else {
            reasons.join("; ")
        }
    ))
}

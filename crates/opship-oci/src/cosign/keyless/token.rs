//! OIDC identity tokens for keyless signing: where they come from (`--identity-token` as a file
//! or the token itself, `SIGSTORE_ID_TOKEN`, GitHub Actions' `ACTIONS_ID_TOKEN_REQUEST_URL` +
//! `ACTIONS_ID_TOKEN_REQUEST_TOKEN`), and the claims read from them before Fulcio is asked,
//! so that an expired token or one for another audience is named as such instead of as
//! Fulcio's generic refusal. The signature of the token is Fulcio's to check, not ours.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use zeroize::Zeroizing;

use super::http::{Service, post_or_get};
use crate::error::{Error, Result};

/// The audience Fulcio accepts (public-good and the usual private deployments).
pub const AUDIENCE: &str = "sigstore";

/// Where a token came from, said in errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--identity-token FILE`.
    File(String),
    /// `--identity-token TOKEN`.
    Argument,
    /// `SIGSTORE_ID_TOKEN`.
    Environment,
    /// GitHub Actions' token request URL.
    GithubActions,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(p) => write!(f, "the identity token in {p}"),
            Source::Argument => f.write_str("the identity token given as --identity-token"),
            Source::Environment => f.write_str("the identity token in SIGSTORE_ID_TOKEN"),
            Source::GithubActions => {
                f.write_str("the identity token from ACTIONS_ID_TOKEN_REQUEST_URL")
            }
        }
    }
}

/// The claims of a token that matter before Fulcio sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    /// `iss`.
    pub issuer: String,
    /// `sub`.
    pub subject: String,
    /// `aud` (a string or a list in JWTs).
    pub audience: Vec<String>,
    /// `exp`, seconds since the epoch.
    pub expires: Option<u64>,
    /// `email`, when the token has one.
    pub email: Option<String>,
    /// `job_workflow_ref` of a GitHub Actions token.
    pub job_workflow_ref: Option<String>,
}

impl Claims {
    /// What Fulcio will name in the certificate's SAN, when it can be told from the claims:
    /// the email, or `https://github.com/<job_workflow_ref>` for GitHub Actions.
    pub fn expected_identity(&self) -> Option<String> {
        if let Some(e) = &self.email {
            return Some(e.clone());
        }
        self.job_workflow_ref
            .as_ref()
            .map(|r| format!("https://github.com/{r}"))
    }

    /// What the proof of possession signs: the email when there is one, else `sub` (Fulcio
    /// checks the signature over the principal's name, which is one of the two).
    pub fn challenge(&self) -> &str {
        self.email.as_deref().unwrap_or(&self.subject)
    }
}

/// An identity token and its claims. The token is a bearer credential: it is kept in a
/// zeroizing buffer and never put in messages.
pub struct IdentityToken {
    raw: Zeroizing<String>,
    /// Its claims.
    pub claims: Claims,
    /// Where it came from.
    pub source: Source,
}

impl std::fmt::Debug for IdentityToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IdentityToken({}, {:?})", self.source, self.claims)
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl IdentityToken {
    /// Parses a JWT's claims (its signature is not checked: Fulcio does that) and checks
    /// that it has not expired and that `sigstore` is among its audiences.
    pub fn parse(raw: &str, source: Source) -> Result<Self> {
        let raw = raw.trim();
        let bad = |why: &str| Error::Keyless(format!("{source} is not a JWT: {why}"));
        let parts: Vec<&str> = raw.split('.').collect();
        if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
            return Err(bad("expected three base64url parts separated by dots"));
        }
        let body = URL_SAFE_NO_PAD
            .decode(parts[1].trim_end_matches('='))
            .map_err(|_| bad("the claims part is not base64url"))?;
        let v: serde_json::Value =
            serde_json::from_slice(&body).map_err(|_| bad("the claims part is not JSON"))?;
        let text = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
        let audience = match v.get("aud") {
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let claims = Claims {
            issuer: text("iss").ok_or_else(|| bad("no `iss` claim"))?,
            subject: text("sub").unwrap_or_default(),
            audience,
            expires: v.get("exp").and_then(|x| x.as_u64()),
            email: text("email"),
            job_workflow_ref: text("job_workflow_ref"),
        };
        if let Some(exp) = claims.expires {
            let now = now();
            if exp <= now {
                return Err(Error::Keyless(format!(
                    "{source} expired at {} ({} s ago; issuer {}): get a fresh token",
                    opship_core::image::oci::rfc3339(exp),
                    now - exp,
                    claims.issuer
                )));
            }
        }
        if !claims.audience.iter().any(|a| a == AUDIENCE) {
            return Err(Error::Keyless(format!(
                "{source} is for the audience {}, not `{AUDIENCE}`: Fulcio refuses it (request \
                 the token with audience `{AUDIENCE}`)",
                if claims.audience.is_empty() {
                    "(none)".to_owned()
                } else {
                    claims
                        .audience
                        .iter()
                        .map(|a| format!("`{a}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )));
        }
        Ok(IdentityToken {
            raw: Zeroizing::new(raw.to_owned()),
            claims,
            source,
        })
    }

    /// The token itself, for Fulcio's request.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// Seconds until it expires (None: no `exp`).
    pub fn remaining(&self) -> Option<u64> {
        self.claims.expires.map(|e| e.saturating_sub(now()))
    }
}

/// The environment keyless signing reads (passed in, so that callers and tests decide).
/// Its `Debug` says which variables are set, never their values.
#[derive(Clone, Default)]
pub struct TokenEnv {
    /// `SIGSTORE_ID_TOKEN`.
    pub sigstore_id_token: Option<String>,
    /// `ACTIONS_ID_TOKEN_REQUEST_URL`.
    pub actions_url: Option<String>,
    /// `ACTIONS_ID_TOKEN_REQUEST_TOKEN`.
    pub actions_token: Option<String>,
}

impl std::fmt::Debug for TokenEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |v: &Option<String>| if v.is_some() { "set" } else { "unset" };
        f.debug_struct("TokenEnv")
            .field("sigstore_id_token", &set(&self.sigstore_id_token))
            .field("actions_url", &self.actions_url)
            .field("actions_token", &set(&self.actions_token))
            .finish()
    }
}

impl TokenEnv {
    /// From the process environment (empty values count as unset).
    pub fn from_process() -> Self {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        TokenEnv {
            sigstore_id_token: get("SIGSTORE_ID_TOKEN"),
            actions_url: get("ACTIONS_ID_TOKEN_REQUEST_URL"),
            actions_token: get("ACTIONS_ID_TOKEN_REQUEST_TOKEN"),
        }
    }

    /// Whether some source of a token is there (for `release`: keyless when no key is set).
    pub fn available(&self, flag: Option<&str>) -> bool {
        flag.is_some()
            || self.sigstore_id_token.is_some()
            || (self.actions_url.is_some() && self.actions_token.is_some())
    }
}

/// The token: `--identity-token` (an existing file is read, anything else is the token),
/// else `SIGSTORE_ID_TOKEN`, else GitHub Actions' request URL (audience `sigstore`).
pub async fn obtain(
    flag: Option<&str>,
    env: &TokenEnv,
    timeout: Duration,
) -> Result<IdentityToken> {
    if let Some(f) = flag {
        let path = Path::new(f);
        if path.exists() {
            let text = Zeroizing::new(
                opship_core::input::read_string(path, opship_core::input::Kind::Secret)
                    .map_err(|e| Error::Keyless(format!("--identity-token {e}")))?,
            );
            return IdentityToken::parse(
                &text,
                Source::File(opship_core::paths::show(path).to_string()),
            );
        }
        // The value is never quoted: a token that is not quite a JWT is still a credential.
        if !f.contains('.') {
            return Err(Error::Keyless(
                "--identity-token: no file of that name, and the value is not a JWT either \
                 (three base64url parts separated by dots); the value is not shown, it may be \
                 a secret"
                    .into(),
            ));
        }
        return IdentityToken::parse(f, Source::Argument).map_err(|e| match e {
            Error::Keyless(m) if m.contains("is not a JWT") => Error::Keyless(format!(
                "{m} (and no file of that name exists; the value is not shown)"
            )),
            other => other,
        });
    }
    if let Some(t) = &env.sigstore_id_token {
        return IdentityToken::parse(t, Source::Environment);
    }
    match (&env.actions_url, &env.actions_token) {
        (Some(url), Some(bearer)) => {
            let sep = if url.contains('?') { '&' } else { '?' };
            let url = format!("{url}{sep}audience={AUDIENCE}");
            let service = Service::new("GitHub Actions' token service", timeout)?;
            let answer = post_or_get(&service, &url, None, Some(bearer), 64 * 1024).await?;
            let v: serde_json::Value = serde_json::from_slice(&answer).map_err(|_| {
                Error::Keyless(
                    "ACTIONS_ID_TOKEN_REQUEST_URL answered something that is not JSON".into(),
                )
            })?;
            let value = v.get("value").and_then(|x| x.as_str()).ok_or_else(|| {
                Error::Keyless("ACTIONS_ID_TOKEN_REQUEST_URL's answer has no `value`".into())
            })?;
            IdentityToken::parse(value, Source::GithubActions)
        }
        (Some(_), None) | (None, Some(_)) => Err(Error::Keyless(
            "GitHub Actions: only one of ACTIONS_ID_TOKEN_REQUEST_URL and \
             ACTIONS_ID_TOKEN_REQUEST_TOKEN is set (the job needs `permissions: id-token: write`)"
                .into(),
        )),
        (None, None) => Err(Error::Keyless(
            "no identity token for keyless signing: pass --identity-token FILE|TOKEN, set \
             SIGSTORE_ID_TOKEN, or run in GitHub Actions with `permissions: id-token: write`; \
             or sign with --key"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: serde_json::Value) -> String {
        format!(
            "{}.{}.{}",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256"}"#),
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap()),
            URL_SAFE_NO_PAD.encode(b"sig")
        )
    }

    #[test]
    fn claims_and_refusals() {
        let exp = now() + 600;
        let t = IdentityToken::parse(
            &jwt(
                serde_json::json!({"iss":"https://i","sub":"repo:a/b","aud":"sigstore","exp":exp,
                "job_workflow_ref":"a/b/.github/workflows/r.yml@refs/heads/main"}),
            ),
            Source::Argument,
        )
        .unwrap();
        assert_eq!(
            t.claims.expected_identity().unwrap(),
            "https://github.com/a/b/.github/workflows/r.yml@refs/heads/main"
        );
        assert_eq!(t.claims.challenge(), "repo:a/b");
        let e = IdentityToken::parse(
            &jwt(serde_json::json!({"iss":"https://i","sub":"s","aud":["x"],"exp":exp})),
            Source::Environment,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("SIGSTORE_ID_TOKEN is for the audience `x`"),
            "{e}"
        );
        let e = IdentityToken::parse(
            &jwt(serde_json::json!({"iss":"https://i","sub":"s","aud":"sigstore","exp":10})),
            Source::Argument,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("expired at 1970-01-01T00:00:10Z"), "{e}");
        assert!(
            IdentityToken::parse("abc", Source::Argument)
                .unwrap_err()
                .to_string()
                .contains("not a JWT")
        );
        let t = IdentityToken::parse(
            &jwt(serde_json::json!({"iss":"https://i","sub":"s","aud":"sigstore","email":"a@b"})),
            Source::Argument,
        )
        .unwrap();
        assert_eq!(t.claims.challenge(), "a@b");
        assert!(!format!("{t:?}").contains(t.raw()));
    }
}

//! Credentials kept out of messages: what a server answered (quoted in errors) may echo what
//! it was sent, so every quote goes through [`redact`] first. It withholds JWTs (identity and
//! registry tokens), the values of JSON keys that name credentials, `Basic`/`Bearer`
//! authorization values, and the caller's own secrets wherever they appear.

use std::sync::LazyLock;

/// What replaces a withheld value.
pub const WITHHELD: &str = "[withheld]";

/// A JWT: three base64url parts, the first a JSON object (`{"` encodes as `eyJ`).
static JWT: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*(\.[A-Za-z0-9_-]*)?").expect("valid")
});

/// `"token": "…"` and the other keys whose values are credentials (any case, `_`/`-` spelt).
static KEYED: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r#"(?i)("(?:[a-z_-]*token|password|passwd|secret|auth|credentials?|client_secret)"\s*:\s*)"(?:[^"\\]|\\.)*""#,
    )
    .expect("valid")
});

/// `Basic …` / `Bearer …` / `token=…` as headers or query strings carry them.
static SCHEME: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(basic|bearer)(\s+|%20)[A-Za-z0-9._~+/=-]{4,}|\b((?:[a-z_]*token|password|secret)=)[^&\s]+")
        .expect("valid")
});

/// `text` with every credential-shaped value, and every one of `known` (the caller's secrets,
/// and their base64 as Basic authorization carries them), replaced by [`WITHHELD`].
pub fn redact(text: &str, known: &[&str]) -> String {
    use base64::Engine as _;
    let mut out = text.to_owned();
    for k in known.iter().filter(|k| k.len() >= 3) {
        out = out.replace(k, WITHHELD);
        let b64 = base64::engine::general_purpose::STANDARD.encode(k);
        out = out.replace(&b64, WITHHELD);
    }
    let out = JWT.replace_all(&out, WITHHELD);
    let out = KEYED.replace_all(&out, format!("${{1}}\"{WITHHELD}\""));
    let out = SCHEME.replace_all(&out, |c: &regex::Captures<'_>| match (c.get(1), c.get(3)) {
        // A challenge (`Basic realm="…"`) names no credential.
        (Some(_), _) if c[0].to_ascii_lowercase().contains("realm=") => c[0].to_owned(),
        (Some(scheme), _) => format!("{} {WITHHELD}", scheme.as_str()),
        (None, Some(key)) => format!("{}{WITHHELD}", key.as_str()),
        _ => WITHHELD.to_owned(),
    });
    out.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn withholds_tokens_keys_schemes_and_known_secrets() {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2lnbmF0dXJl";
        for (text, gone) in [
            (format!("bad token {jwt} here"), jwt),
            (r#"{"token":"abc.def","x":1}"#.to_owned(), "abc.def"),
            (r#"{"access_token" : "s3cr\"et"}"#.to_owned(), "s3cr"),
            (r#"{"Secret":"hunter2"}"#.to_owned(), "hunter2"),
            (
                "Authorization: Bearer opaque-123456".to_owned(),
                "opaque-123456",
            ),
            ("basic dXNlcjpwYXNz".to_owned(), "dXNlcjpwYXNz"),
            ("GET /t?access_token=zzzz&x=1".to_owned(), "zzzz"),
        ] {
            let r = redact(&text, &[]);
            assert!(!r.contains(gone), "{text} -> {r}");
            assert!(r.contains(WITHHELD), "{r}");
        }
        let r = redact("wrong password pa55word for u", &["pa55word"]);
        assert_eq!(r, "wrong password [withheld] for u");
        let r = redact("got dTpwYTU1d29yZA== back", &["u:pa55word"]);
        assert!(!r.contains("dTpwYTU1d29yZA"), "{r}");
        assert_eq!(redact("no secret here", &["zz"]), "no secret here");
        let challenge = r#"401: Basic realm="Registry Realm""#;
        assert_eq!(redact(challenge, &[]), challenge);
    }
}

//! The distribution API calls the client is made of: manifests (GET within a budget, HEAD,
//! PUT), blobs (HEAD, GET streamed against the descriptor's size and digest, upload in one PUT
//! or in chunks, cross-repository mount), tag lists and the referrers API. Each call is
//! retried as a whole; every answer is read through the budgets of `http`.

use bytes::Bytes;
use reqwest::header::{self, HeaderValue};
use reqwest::{Method, StatusCode};
use sha2::Digest as _;

use opship_core::image::oci::{Descriptor, Digest};

use super::http::{self, Attempt, Failure, Request, scope};
use super::{Reference, Registry};
use crate::error::{Error, Result};

/// A manifest as received: bytes within the budget, their digest checked against the
/// registry's `Docker-Content-Digest` and the reference's digest.
pub(crate) struct Fetched {
    pub(crate) bytes: Vec<u8>,
    pub(crate) digest: Digest,
}

/// What a mount request did.
pub(crate) enum Mount {
    Mounted,
    /// The registry opened an upload session instead.
    Session(reqwest::Url),
}

/// Upload chunk size with `--chunked` (the size oci-client and most tools use).
const CHUNK: usize = 4 * 1024 * 1024;

/// The tag or digest part of a manifest URL.
fn manifest_part(r: &Reference) -> &str {
    r.digest().or(r.tag()).unwrap_or("latest")
}

/// `manifest v1 of team/bundle`, for messages.
pub(crate) fn manifest_what(r: &Reference) -> String {
    format!("manifest {} of {}", manifest_part(r), r.repository())
}

/// `blob sha256:… of team/bundle`, for messages.
pub(crate) fn blob_what(r: &Reference, digest: &Digest) -> String {
    format!("blob {digest} of {}", r.repository())
}

fn octet_stream() -> HeaderValue {
    HeaderValue::from_static("application/octet-stream")
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in bytes {
        s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    s
}

impl Registry {
    fn repo_url(&self, r: &Reference, tail: &str) -> String {
        self.http.url(&format!("/v2/{}/{tail}", r.repository()))
    }

    fn scopes(&self, r: &Reference, push: bool) -> Vec<String> {
        vec![scope(r.repository(), push)]
    }

    /// GET of the manifest `r` names, `None` on 404 when `missing_ok`.
    pub(crate) async fn get_manifest(
        &self,
        r: &Reference,
        accept: &[&str],
        push: bool,
        missing_ok: bool,
    ) -> Result<Option<Fetched>> {
        let what = manifest_what(r);
        let expected = r.digest().map(Digest::parse).transpose()?;
        self.http
            .retry(|| async {
                let req = Request::new(
                    Method::GET,
                    self.repo_url(r, &format!("manifests/{}", manifest_part(r))),
                    self.scopes(r, push),
                )
                .accept(accept);
                let res = self.http.send(&req).await?;
                if res.status() == StatusCode::NOT_FOUND && missing_ok {
                    return Ok(None);
                }
                if !res.status().is_success() {
                    return Err(self.http.refusal(&req, res).await);
                }
                let claimed = res
                    .headers()
                    .get("docker-content-digest")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let bytes = self
                    .http
                    .read(res, http::MANIFEST_LIMIT, "the limit for a manifest", &what)
                    .await?;
                let digest = Digest::of(&bytes);
                // Another algorithm in the header cannot be checked here; the bytes are
                // checked against the reference's digest all the same.
                let claimed = claimed.filter(|c| c.starts_with("sha256:"));
                for want in expected
                    .as_ref()
                    .map(|d| d.to_string())
                    .into_iter()
                    .chain(claimed)
                {
                    if want != digest.as_str() {
                        return Err(Failure::from(Error::DigestMismatch {
                            registry: self.host.clone(),
                            what: what.clone(),
                            expected: want,
                            actual: digest.to_string(),
                        }));
                    }
                }
                Ok(Some(Fetched { bytes, digest }))
            })
            .await
    }

    /// HEAD of the manifest `r` names: its `Docker-Content-Digest`, `None` when the registry
    /// answers without one; `Err` for any answer but 200 (HEAD answers carry no error body).
    pub(crate) async fn head_manifest(
        &self,
        r: &Reference,
        accept: &[&str],
        push: bool,
    ) -> Result<std::result::Result<Option<String>, StatusCode>> {
        self.http
            .retry(|| async {
                let req = Request::new(
                    Method::HEAD,
                    self.repo_url(r, &format!("manifests/{}", manifest_part(r))),
                    self.scopes(r, push),
                )
                .accept(accept);
                let res = self.http.send(&req).await?;
                let status = res.status();
                if http::transient_status(status) {
                    return Err(self.http.refusal(&req, res).await);
                }
                if status != StatusCode::OK {
                    return Ok(Err(status));
                }
                Ok(Ok(res
                    .headers()
                    .get("docker-content-digest")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)))
            })
            .await
    }

    /// PUT of manifest `body` to `r` (a tag or the body's digest).
    pub(crate) async fn put_manifest(
        &self,
        r: &Reference,
        body: &Bytes,
        content_type: &HeaderValue,
    ) -> Result<()> {
        self.http
            .retry(|| async {
                let req = Request::new(
                    Method::PUT,
                    self.repo_url(r, &format!("manifests/{}", manifest_part(r))),
                    self.scopes(r, true),
                )
                .body(body.clone(), content_type.clone());
                let res = self.http.send(&req).await?;
                if res.status().is_success() {
                    Ok(())
                } else {
                    Err(self.http.refusal(&req, res).await)
                }
            })
            .await
    }

    /// Whether the repository of `r` has the blob.
    pub(crate) async fn has_blob(
        &self,
        r: &Reference,
        digest: &Digest,
        push: bool,
    ) -> Result<bool> {
        let found = self
            .http
            .retry(|| async {
                let req = Request::new(
                    Method::HEAD,
                    self.repo_url(r, &format!("blobs/{digest}")),
                    self.scopes(r, push),
                );
                let res = self.http.send(&req).await?;
                match res.status() {
                    StatusCode::OK => Ok(true),
                    StatusCode::NOT_FOUND => Ok(false),
                    _ => Err(self.http.refusal(&req, res).await),
                }
            })
            .await;
        match found {
            // A registry that keeps failing to say whether it has a blob (distribution answers
            // 500 for a blob whose link a crash left empty) still takes an upload, which
            // repairs it; if the upload fails too, its answer is the error.
            Err(Error::Registry { status, answer, .. }) if push && status.starts_with('5') => {
                tracing::warn!(
                    "{}: cannot tell whether blob {digest} is there ({status}: {answer}); uploading it",
                    self.host
                );
                Ok(false)
            }
            other => other,
        }
    }

    /// GET of blob `desc`, streamed into the state `restart` makes (again for each attempt)
    /// through `sink`: refused as soon as more bytes arrive than the descriptor gives,
    /// verified by size and digest at the end.
    pub(crate) async fn get_blob<S>(
        &self,
        r: &Reference,
        desc: &Descriptor,
        mut restart: impl FnMut() -> Result<S>,
        mut sink: impl FnMut(&mut S, &[u8]) -> Result<()>,
    ) -> Result<S> {
        let what = blob_what(r, &desc.digest);
        let mut backoff = self.http.backoff();
        loop {
            let outcome = match restart() {
                Ok(state) => self.blob_attempt(r, desc, &what, state, &mut sink).await,
                Err(e) => Err(Failure::from(e)),
            };
            if let Some(done) = self.http.settle(&mut backoff, outcome).await {
                return done;
            }
        }
    }

    async fn blob_attempt<S>(
        &self,
        r: &Reference,
        desc: &Descriptor,
        what: &str,
        mut state: S,
        sink: &mut impl FnMut(&mut S, &[u8]) -> Result<()>,
    ) -> Attempt<S> {
        let req = Request::new(
            Method::GET,
            self.repo_url(r, &format!("blobs/{}", desc.digest)),
            self.scopes(r, false),
        );
        let mut res = self.http.expect(&req, &[StatusCode::OK]).await?;
        let mut hasher = sha2::Sha256::new();
        let received = self
            .http
            .stream(
                &mut res,
                desc.size,
                "the size its descriptor gives",
                what,
                |chunk| {
                    hasher.update(chunk);
                    sink(&mut state, chunk)
                },
            )
            .await?;
        let actual = hex(&hasher.finalize());
        if received != desc.size || actual != desc.digest.as_str() {
            return Err(Failure::from(Error::DigestMismatch {
                registry: self.host.clone(),
                what: what.to_owned(),
                expected: format!("{} ({} bytes)", desc.digest, desc.size),
                actual: format!("{actual} ({received} bytes)"),
            }));
        }
        Ok(state)
    }

    /// A blob of at most [`http::MEMORY_BLOB_LIMIT`] bytes, in memory, verified.
    pub(crate) async fn blob_bytes(&self, r: &Reference, desc: &Descriptor) -> Result<Vec<u8>> {
        if desc.size > http::MEMORY_BLOB_LIMIT {
            return Err(Error::TooLarge {
                registry: self.host.clone(),
                what: blob_what(r, &desc.digest),
                limit: format!(
                    "{} bytes (the limit for a blob read into memory; its descriptor says {})",
                    http::MEMORY_BLOB_LIMIT,
                    desc.size
                ),
            });
        }
        self.get_blob(
            r,
            desc,
            || Ok(Vec::with_capacity(usize::try_from(desc.size).unwrap_or(0))),
            |buf, chunk| {
                buf.extend_from_slice(chunk);
                Ok(())
            },
        )
        .await
    }

    /// Asks the registry to mount `digest` from the repository of `from` into that of `r`.
    pub(crate) async fn mount_blob(
        &self,
        r: &Reference,
        from: &Reference,
        digest: &Digest,
    ) -> Result<Mount> {
        let mut scopes = self.scopes(r, true);
        scopes.push(scope(from.repository(), false));
        self.http
            .retry(|| async {
                let mut url = reqwest::Url::parse(&self.repo_url(r, "blobs/uploads/"))
                    .map_err(|e| Failure::from(Error::Input(format!("upload URL: {e}"))))?;
                url.query_pairs_mut()
                    .append_pair("mount", digest.as_str())
                    .append_pair("from", from.repository());
                let req = Request::new(Method::POST, url.as_str(), scopes.clone());
                let res = self
                    .http
                    .expect(&req, &[StatusCode::CREATED, StatusCode::ACCEPTED])
                    .await?;
                if res.status() == StatusCode::CREATED {
                    Ok(Mount::Mounted)
                } else {
                    Ok(Mount::Session(self.http.location(&res, &req)?))
                }
            })
            .await
    }

    /// Uploads `data` as blob `digest` to the repository of `r`: one PUT, or PATCHes of
    /// [`CHUNK`] bytes with `chunked`. `session` is an upload the registry opened already
    /// (for the first attempt).
    pub(crate) async fn upload(
        &self,
        r: &Reference,
        digest: &Digest,
        data: &Bytes,
        chunked: bool,
        session: Option<reqwest::Url>,
    ) -> Result<()> {
        let mut session = session;
        self.http
            .retry(|| {
                let opened = session.take();
                async move {
                    let mut location = match opened {
                        Some(l) => l,
                        None => self.open_upload(r).await?,
                    };
                    if chunked {
                        let mut start = 0usize;
                        for chunk in data.chunks(CHUNK) {
                            let end = start + chunk.len() - 1;
                            let range = HeaderValue::from_str(&format!("{start}-{end}"))
                                .map_err(|e| Failure::from(Error::Input(e.to_string())))?;
                            let req = Request::new(
                                Method::PATCH,
                                location.as_str(),
                                self.scopes(r, true),
                            )
                            .header(header::CONTENT_RANGE, range)
                            .body(data.slice_ref(chunk), octet_stream());
                            let res = self.http.expect(&req, &[StatusCode::ACCEPTED]).await?;
                            location = self.http.location(&res, &req)?;
                            start = end + 1;
                        }
                    }
                    location
                        .query_pairs_mut()
                        .append_pair("digest", digest.as_str());
                    let mut req =
                        Request::new(Method::PUT, location.as_str(), self.scopes(r, true));
                    if !chunked {
                        req = req.body(data.clone(), octet_stream());
                    }
                    self.http
                        .expect(&req, &[StatusCode::CREATED, StatusCode::NO_CONTENT])
                        .await
                        .map(|_| ())
                }
            })
            .await
    }

    /// POST that opens an upload session; its URL.
    async fn open_upload(&self, r: &Reference) -> Attempt<reqwest::Url> {
        let req = Request::new(
            Method::POST,
            self.repo_url(r, "blobs/uploads/"),
            self.scopes(r, true),
        );
        let res = self.http.expect(&req, &[StatusCode::ACCEPTED]).await?;
        self.http.location(&res, &req)
    }

    /// The tags of the repository of `r`.
    pub(crate) async fn get_tags(&self, r: &Reference) -> Result<Vec<String>> {
        let what = format!("the tag list of {}", r.repository());
        self.http
            .retry(|| async {
                let req = Request::new(
                    Method::GET,
                    self.repo_url(r, "tags/list"),
                    self.scopes(r, false),
                );
                let res = self.http.expect(&req, &[StatusCode::OK]).await?;
                let bytes = self
                    .http
                    .read(res, http::TAGS_LIMIT, "the limit for a tag list", &what)
                    .await?;
                #[derive(serde::Deserialize)]
                struct Tags {
                    tags: Option<Vec<String>>,
                }
                let t: Tags = serde_json::from_slice(&bytes).map_err(|e| {
                    Failure::from(Error::Registry {
                        registry: self.host.clone(),
                        status: "an unusable answer".into(),
                        answer: format!(
                            "{what} is not tag list JSON ({e}): {}",
                            http::quote(&bytes)
                        ),
                    })
                })?;
                Ok(t.tags.unwrap_or_default())
            })
            .await
    }

    /// `GET /v2/<repo>/referrers/<digest>`: the image index, or `None` for any answer that is
    /// not one (no referrers API).
    pub(crate) async fn get_referrers(
        &self,
        r: &Reference,
        digest: &Digest,
    ) -> Result<Option<Vec<u8>>> {
        let what = format!("the referrers of {digest} in {}", r.repository());
        let index = opship_core::image::oci::media::OCI_INDEX;
        self.http
            .retry(|| async {
                let req = Request::new(
                    Method::GET,
                    self.repo_url(r, &format!("referrers/{digest}")),
                    self.scopes(r, false),
                )
                .accept(&[index]);
                let res = self.http.send(&req).await?;
                let is_index = res.status().is_success()
                    && res
                        .headers()
                        .get(header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .is_some_and(|v| v.starts_with(index));
                if !is_index {
                    return Ok(None);
                }
                let bytes = self
                    .http
                    .read(
                        res,
                        http::MANIFEST_LIMIT,
                        "the limit for an image index",
                        &what,
                    )
                    .await?;
                Ok(Some(bytes))
            })
            .await
    }

    /// `GET /v2/` with the credentials: Ok when the registry lets them in.
    pub(crate) async fn ping(&self, probe_scope: String) -> Result<()> {
        self.http
            .retry(|| async {
                let req = Request::new(
                    Method::GET,
                    self.http.url("/v2/"),
                    vec![probe_scope.clone()],
                );
                self.http.expect(&req, &[StatusCode::OK]).await.map(|_| ())
            })
            .await
    }
}

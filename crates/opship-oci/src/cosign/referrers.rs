//! The OCI 1.1 referrers of an image as cosign 2 (experimental `oci-1-1` mode) and cosign 3
//! (Sigstore bundles) use them: listing them (the referrers API when the registry has one,
//! else the `sha256-<hex>` fallback index tag of the distribution spec's referrers tag schema),
//! fetching every listed manifest so it is judged by its own artifact type and layer media
//! types (an index entry's `artifactType` is only a hint: cosign 3 lists its bundles as
//! `application/vnd.oci.empty.v1+json` there), and adding a referrer — checked first, written
//! after: a fallback tag that is not an image index is an error before anything is written.

use std::collections::BTreeMap;

use opship_core::image::oci::{Descriptor, Digest, media};
use serde_json::json;

use crate::error::{Error, Result};
use crate::registry::{Reference, Registry};

/// One referrer manifest, parsed.
#[derive(Debug, Clone)]
pub struct Referrer {
    /// `artifactType`, else the config's media type (how OCI 1.1 defines the artifact type).
    pub artifact_type: String,
    /// The layers.
    pub layers: Vec<Descriptor>,
    /// The manifest annotations.
    pub annotations: BTreeMap<String, String>,
    /// The `subject` digest, if any.
    pub subject: Option<Digest>,
}

impl Referrer {
    /// Parses a referrer manifest; the reason when it is not an image manifest.
    pub fn parse(bytes: &[u8]) -> std::result::Result<Self, String> {
        let v: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| format!("the manifest is not JSON: {e}"))?;
        let layers = match v.get("layers") {
            Some(l) => serde_json::from_value::<Vec<Descriptor>>(l.clone())
                .map_err(|e| format!("the manifest's layers are not descriptors: {e}"))?,
            None => return Err("not an image manifest (no layers)".into()),
        };
        let artifact_type = v
            .get("artifactType")
            .and_then(|a| a.as_str())
            .or_else(|| v.pointer("/config/mediaType").and_then(|a| a.as_str()))
            .unwrap_or_default()
            .to_owned();
        let annotations = v
            .get("annotations")
            .and_then(|a| serde_json::from_value(a.clone()).ok())
            .unwrap_or_default();
        let subject = v
            .pointer("/subject/digest")
            .and_then(|d| d.as_str())
            .and_then(|d| Digest::parse(d).ok());
        Ok(Referrer {
            artifact_type,
            layers,
            annotations,
            subject,
        })
    }
}

/// A listed referrer: where it is and what it turned out to be.
#[derive(Debug, Clone)]
pub struct Entry {
    /// `repo@sha256:…` of the referrer manifest.
    pub location: String,
    /// Its reference (to fetch its blobs).
    pub reference: Reference,
    /// The parsed manifest, or why it could not be used.
    pub manifest: std::result::Result<Referrer, String>,
}

/// Where the referrers of an image are listed.
#[derive(Debug, Clone)]
pub enum Source {
    /// The registry serves the referrers API.
    Api,
    /// The fallback tag: its reference and its index (`None`: the tag does not exist yet).
    Tag(Reference, Option<serde_json::Value>),
}

/// The referrers of one image.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Where they are listed (for messages).
    pub location: String,
    /// How they are listed.
    pub source: Source,
    /// Why the listing cannot be used (a fallback tag holding an image manifest), if so.
    pub problem: Option<String>,
    /// The listed manifests, in listing order.
    pub entries: Vec<Entry>,
}

/// The fallback tag of `digest`: `sha256-<hex>`.
pub fn fallback_tag(digest: &Digest) -> String {
    format!("sha256-{}", digest.hex())
}

fn by_digest(reference: &Reference, d: &Digest) -> Reference {
    Reference::with_digest(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        d.to_string(),
    )
}

/// Lists the referrers of `digest` in the repository of `reference`; with `fetch`, every
/// listed manifest is fetched and parsed.
pub async fn list(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    fetch: bool,
) -> Result<Listing> {
    let tag_ref = Reference::with_tag(
        reference.registry().to_owned(),
        reference.repository().to_owned(),
        fallback_tag(digest),
    );
    let (index, source, location) = match registry.referrers_index(reference, digest).await? {
        Some(b) => {
            let what = format!("referrers of {}@{digest}", reference.repository());
            let v: serde_json::Value = serde_json::from_slice(&b)
                .map_err(|e| Error::Signature(format!("{what}: not JSON: {e}")))?;
            (Some(v), Source::Api, what)
        }
        None => match registry.manifest_if_any(&tag_ref).await? {
            Some(raw) => {
                let v: serde_json::Value = serde_json::from_slice(&raw.bytes)
                    .map_err(|e| Error::Signature(format!("{}: not JSON: {e}", tag_ref.whole())))?;
                (
                    Some(v.clone()),
                    Source::Tag(tag_ref.clone(), Some(v)),
                    tag_ref.whole(),
                )
            }
            None => (None, Source::Tag(tag_ref.clone(), None), tag_ref.whole()),
        },
    };
    let mut listing = Listing {
        location,
        source,
        problem: None,
        entries: Vec::new(),
    };
    let Some(index) = index else {
        return Ok(listing);
    };
    let Some(list) = index.get("manifests").and_then(|m| m.as_array()) else {
        listing.problem = Some(format!(
            "{} is not an image index (it holds {}); cosign and opship keep the referrers of \
             {digest} there",
            listing.location,
            index
                .get("mediaType")
                .and_then(|m| m.as_str())
                .unwrap_or("a manifest without mediaType")
        ));
        return Ok(listing);
    };
    for m in list {
        let Some(d) = m
            .get("digest")
            .and_then(|d| d.as_str())
            .and_then(|d| Digest::parse(d).ok())
        else {
            continue;
        };
        let r = by_digest(reference, &d);
        let manifest = if fetch {
            match registry.manifest_if_any(&r).await? {
                None => Err("the listed referrer manifest is missing".to_owned()),
                Some(raw) => Referrer::parse(&raw.bytes),
            }
        } else {
            Err("not fetched".to_owned())
        };
        listing.entries.push(Entry {
            location: r.whole(),
            reference: r,
            manifest,
        });
    }
    Ok(listing)
}

/// A referrer manifest to add: its bytes and the annotations of its index entry.
#[derive(Debug, Clone)]
pub struct NewReferrer {
    /// The blobs it needs (config and layers), uploaded before the manifest.
    pub blobs: Vec<Vec<u8>>,
    /// The manifest bytes.
    pub manifest: Vec<u8>,
    /// Its `artifactType`.
    pub artifact_type: String,
    /// Annotations copied to the fallback index entry.
    pub annotations: serde_json::Value,
}

/// Checks that a referrer can be added to `listing` (the fallback tag, when used, is an image
/// index); call before any write of the operation.
pub fn check_writable(listing: &Listing) -> Result<()> {
    match &listing.problem {
        Some(p) => Err(Error::Signature(format!("{p}; nothing was written"))),
        None => Ok(()),
    }
}

/// Adds `new` as a referrer of `digest`: blobs, the manifest by digest, then (without the
/// referrers API) the fallback index with one more entry. Returns where it went.
pub async fn add(
    registry: &Registry,
    reference: &Reference,
    digest: &Digest,
    listing: &Listing,
    new: &NewReferrer,
) -> Result<String> {
    check_writable(listing)?;
    let target = by_digest(reference, digest);
    for b in &new.blobs {
        registry.upload_blob(&target, b).await?;
    }
    let referrer = Digest::of(&new.manifest);
    registry
        .put_manifest_bytes(
            &by_digest(reference, &referrer),
            &new.manifest,
            media::OCI_MANIFEST,
        )
        .await?;
    let Source::Tag(tag_ref, index) = &listing.source else {
        return Ok(format!(
            "{}@{referrer} (referrers API)",
            reference.repository()
        ));
    };
    let mut index = index.clone().unwrap_or_else(
        || json!({"schemaVersion": 2, "mediaType": media::OCI_INDEX, "manifests": []}),
    );
    let entry = json!({
        "mediaType": media::OCI_MANIFEST,
        "artifactType": new.artifact_type,
        "digest": referrer,
        "size": new.manifest.len(),
        "annotations": new.annotations,
    });
    if let Some(list) = index.get_mut("manifests").and_then(|m| m.as_array_mut())
        && !list.iter().any(|m| m.get("digest") == entry.get("digest"))
    {
        list.push(entry);
    }
    let bytes = serde_json::to_vec(&index)
        .map_err(|e| Error::Signature(format!("fallback index JSON: {e}")))?;
    registry
        .put_manifest_bytes(tag_ref, &bytes, media::OCI_INDEX)
        .await?;
    Ok(format!(
        "{}@{referrer}, listed in the fallback tag {}",
        reference.repository(),
        tag_ref.whole()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_referrers() {
        let r = Referrer::parse(
            br#"{"schemaVersion":2,"config":{"mediaType":"application/vnd.dev.cosign.artifact.sig.v1+json","size":2,"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},"layers":[],"subject":{"mediaType":"x","size":1,"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}}"#,
        )
        .unwrap();
        assert_eq!(
            r.artifact_type,
            "application/vnd.dev.cosign.artifact.sig.v1+json"
        );
        assert!(r.subject.is_some());
        assert!(Referrer::parse(b"{}").unwrap_err().contains("no layers"));
        assert!(Referrer::parse(b"{").unwrap_err().contains("not JSON"));
    }
}

//! `opship catalog verify` and the release's `verify:` policy: the signature of every bundle
//! image a file-based catalog references (and of the catalog image, when given), each checked
//! by `opship_oci::cosign::verification` (the one verification core `opship verify` uses) with
//! any of the trusted keys or the keyless identity, in a registry or in an OCI layout.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use futures_util::stream::{self, StreamExt as _};
use opship_core::image::layout::Layout;
use opship_core::image::oci::annotation;
use opship_oci::cosign::verification::{self, Identity, Policy, Verifier};
use opship_oci::registry::{self, Reference, Registry};
use serde::Serialize;

use crate::error::{Error, Result};
use opship_core::config::{Project, VerifyPolicy};
use opship_oci::cosign::sigstore::{CertSigner, IdentityPolicy, Matcher};

/// Images verified at once.
const PARALLEL: usize = 8;

/// What must sign the images, and where to read them.
pub struct Options {
    /// The trusted verifiers, each with how it is named in the report (the key file, or the
    /// identity); an image passes when one of them verifies one of its signatures.
    pub verifiers: Vec<(String, Verifier)>,
    /// The catalog image, verified too when given.
    pub catalog_image: Option<String>,
    /// Read the images and signatures from this OCI layout (images found by digest) instead
    /// of their registries.
    pub layout: Option<PathBuf>,
}

/// What was concluded for one image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "lowercase")]
pub enum Verdict {
    /// A signature verified.
    Verified {
        /// The verifier's name (key file or identity).
        by: String,
        /// Signatures found.
        signatures: usize,
        /// Who the certificate of the signature that verified names (keyless): the signer
        /// itself, next to the policy (`by`) it matched.
        #[serde(skip_serializing_if = "Option::is_none")]
        signer: Option<CertSigner>,
    },
    /// No signature at all.
    Unsigned {
        /// Where signatures were looked for.
        location: String,
    },
    /// Signatures found but none verified, or the image could not be checked.
    Refused {
        /// Why, one reason per rejected signature (or the one reason the image could not be
        /// checked at all).
        reasons: Vec<String>,
    },
}

/// The verdict on one image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageReport {
    /// `bundle` or `catalog`.
    pub kind: &'static str,
    /// The package (empty for the catalog image).
    pub package: String,
    /// The bundle names referencing the image (empty for the catalog image).
    pub bundles: Vec<String>,
    /// The image reference as the catalog spells it.
    pub image: String,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// The verdicts on all images: by package, then bundle name; the catalog image last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// One entry per distinct image.
    pub images: Vec<ImageReport>,
}

impl Verification {
    /// True when every image verified.
    pub fn passed(&self) -> bool {
        self.images
            .iter()
            .all(|i| matches!(i.verdict, Verdict::Verified { .. }))
    }

    /// The images that did not verify, for a release's error.
    pub fn failures(&self) -> Vec<&ImageReport> {
        self.images
            .iter()
            .filter(|i| !matches!(i.verdict, Verdict::Verified { .. }))
            .collect()
    }
}

impl std::fmt::Display for ImageReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.bundles.is_empty() {
            format!("catalog image {}", self.image)
        } else {
            format!("{} ({})", self.bundles.join(", "), self.image)
        };
        match &self.verdict {
            Verdict::Verified {
                by,
                signatures,
                signer,
            } => {
                write!(
                    f,
                    "verified {what}: by {by} ({signatures} signature{} there)",
                    if *signatures == 1 { "" } else { "s" }
                )?;
                match signer {
                    Some(s) => write!(f, "; signed by {s}"),
                    None => Ok(()),
                }
            }
            Verdict::Unsigned { location } => {
                write!(
                    f,
                    "unsigned {what}: no signatures ({location} does not exist)"
                )
            }
            Verdict::Refused { reasons } => write!(f, "refused {what}: {}", reasons.join("; ")),
        }
    }
}

/// Verifies every bundle image of the catalog directory `index` (and `options.catalog_image`):
/// `connect` makes the client of an image's registry (called once per host, not with
/// `options.layout`). A catalog that cannot be read is an `Err`; an image that cannot be
/// checked is refused with the reason.
pub async fn verify_catalog(
    index: &Path,
    options: &Options,
    connect: &dyn Fn(&Reference) -> std::result::Result<Registry, String>,
) -> Result<Verification> {
    if options.verifiers.is_empty() {
        return Err(Error::Config(
            "no key or identity to verify the catalog's images with".into(),
        ));
    }
    let catalog = opship_catalog::load::load_dir(index)
        .map_err(|e| Error::Config(format!("{}: {e}", opship_core::paths::show(index))))?;
    // One entry per image (several bundles may share one).
    let mut by_image: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for b in &catalog.bundles {
        by_image
            .entry((b.package.clone(), b.image.clone()))
            .or_default()
            .push(b.name.clone());
    }
    let mut images: Vec<ImageReport> = by_image
        .into_iter()
        .map(|((package, image), mut bundles)| {
            bundles.sort();
            bundles.dedup();
            ImageReport {
                kind: "bundle",
                package,
                bundles,
                image,
                verdict: Verdict::Unsigned {
                    location: String::new(),
                },
            }
        })
        .collect();
    // Listed by package, then bundle name (the first of the image's bundles).
    images.sort_by(|a, b| {
        (&a.package, &a.bundles, &a.image).cmp(&(&b.package, &b.bundles, &b.image))
    });
    if let Some(c) = &options.catalog_image {
        images.push(ImageReport {
            kind: "catalog",
            package: String::new(),
            bundles: Vec::new(),
            image: c.clone(),
            verdict: Verdict::Unsigned {
                location: String::new(),
            },
        });
    }
    // Parse first; one client per registry host.
    let parsed: Vec<std::result::Result<Reference, String>> = images
        .iter()
        .map(|i| reference_of(&i.image, i.kind == "catalog"))
        .collect();
    let mut clients: HashMap<String, std::result::Result<Registry, String>> = HashMap::new();
    if options.layout.is_none() {
        for r in parsed.iter().flatten() {
            if !clients.contains_key(r.resolve_registry()) {
                clients.insert(r.resolve_registry().to_owned(), connect(r));
            }
        }
    }
    let verdicts: Vec<Verdict> = stream::iter(&parsed)
        .map(|r| async {
            let r = match r {
                Ok(r) => r,
                Err(why) => {
                    return Verdict::Refused {
                        reasons: vec![why.clone()],
                    };
                }
            };
            match &options.layout {
                Some(dir) => verify_in_layout(dir, r, &options.verifiers),
                None => match &clients[r.resolve_registry()] {
                    Ok(client) => verify_remote(client, r, &options.verifiers).await,
                    Err(e) => Verdict::Refused {
                        reasons: vec![e.clone()],
                    },
                },
            }
        })
        .buffered(PARALLEL)
        .collect()
        .await;
    for (i, v) in images.iter_mut().zip(verdicts) {
        i.verdict = v;
    }
    Ok(Verification { images })
}

/// The reference of a catalog entry: a bundle image must name its digest (a tag can move).
fn reference_of(image: &str, catalog: bool) -> std::result::Result<Reference, String> {
    if image.is_empty() {
        return Err("the bundle has no image".into());
    }
    let r = registry::parse_reference(image).map_err(|e| e.to_string())?;
    if !catalog && r.digest().is_none() {
        return Err(format!(
            "`{image}` names a tag, not a digest: a tag can move after it is verified; pin \
             the catalog to digests (`catalog add --pin-digest`)"
        ));
    }
    Ok(r)
}

/// The policy of one image: its signatures must name its own repository.
fn policy_of(r: &Reference) -> Policy {
    Policy {
        identity: Identity::Repository(verification::repository_of(&r.whole())),
        annotations: BTreeMap::new(),
    }
}

/// Folds the reports of each verifier into one verdict.
fn fold(reports: Vec<(&str, opship_oci::Result<verification::Report>)>, several: bool) -> Verdict {
    let mut reasons = Vec::new();
    let mut location = String::new();
    let mut found = false;
    for (name, report) in reports {
        let prefix = if several {
            format!("{name}: ")
        } else {
            String::new()
        };
        match report {
            Err(e) => reasons.push(format!("{prefix}{e}")),
            Ok(report) => {
                if let Some(claims) = report.verified().first() {
                    return Verdict::Verified {
                        by: name.to_owned(),
                        signatures: report.checked.len(),
                        signer: claims.signer.clone(),
                    };
                }
                location = report.location.clone();
                found |= !report.checked.is_empty();
                for c in &report.checked {
                    if let Err(why) = &c.outcome {
                        reasons.push(format!("{prefix}{}: {why}", c.source));
                    }
                }
            }
        }
    }
    if !found && reasons.is_empty() {
        return Verdict::Unsigned { location };
    }
    reasons.dedup();
    Verdict::Refused { reasons }
}

async fn verify_remote(
    client: &Registry,
    r: &Reference,
    verifiers: &[(String, Verifier)],
) -> Verdict {
    let policy = policy_of(r);
    let mut reports = Vec::with_capacity(verifiers.len());
    for (name, v) in verifiers {
        let report = verification::verify_remote_with(client, r, v, &policy).await;
        let verified = report.as_ref().is_ok_and(|r| !r.verified().is_empty());
        // Stop at an error that no other verifier gets past (the image is not there).
        let fatal = report.is_err();
        reports.push((name.as_str(), report));
        if verified || fatal {
            break;
        }
    }
    fold(reports, verifiers.len() > 1)
}

fn verify_in_layout(dir: &Path, r: &Reference, verifiers: &[(String, Verifier)]) -> Verdict {
    let Some(digest) = r.digest() else {
        return Verdict::Refused {
            reasons: vec![format!(
                "`{}`: an image in a layout is found by digest; name it by digest",
                r.whole()
            )],
        };
    };
    let tag = match Layout::new(dir).index() {
        Err(e) => {
            return Verdict::Refused {
                reasons: vec![e.to_string()],
            };
        }
        Ok(index) => index
            .manifests
            .iter()
            .filter(|d| d.digest.as_str() == digest)
            .find_map(|d| d.annotations.get(annotation::REF_NAME).cloned()),
    };
    let Some(tag) = tag else {
        return Verdict::Refused {
            reasons: vec![format!(
                "{}: no image with digest {digest}",
                opship_core::paths::show(&dir.join("index.json"))
            )],
        };
    };
    let policy = policy_of(r);
    let mut reports = Vec::with_capacity(verifiers.len());
    for (name, v) in verifiers {
        let report = verification::verify_layout_with(dir, &tag, v, &policy);
        let stop = report.as_ref().map_or(true, |r| !r.verified().is_empty());
        reports.push((name.as_str(), report));
        if stop {
            break;
        }
    }
    fold(reports, verifiers.len() > 1)
}

/// The verifiers of a project's `verify:` policy (paths against the config's directory).
pub fn verifiers_of(project: &Project, policy: &VerifyPolicy) -> Result<Vec<(String, Verifier)>> {
    let err = |e: opship_oci::Error| {
        Error::Config(format!(
            "{} `verify:`: {e}",
            opship_core::paths::show(&project.path)
        ))
    };
    if !policy.keys.is_empty() {
        return policy
            .keys
            .iter()
            .map(|k| {
                let path = project.resolve(k);
                let v = Verifier::new(
                    Some(&path),
                    IdentityPolicy::default(),
                    None,
                    Default::default(),
                )
                .map_err(err)?;
                Ok((opship_core::paths::show(&path).to_string(), v))
            })
            .collect();
    }
    let matcher = |exact: &Option<String>, re: &Option<String>| match (exact, re) {
        (Some(e), _) => Ok(Some(Matcher::Exact(e.clone()))),
        (None, Some(r)) => Matcher::regex(r).map(Some).map_err(|e| {
            Error::Config(format!(
                "{} `verify:`: {e}",
                opship_core::paths::show(&project.path)
            ))
        }),
        (None, None) => Ok(None),
    };
    let identity = IdentityPolicy {
        subject: matcher(
            &policy.certificate_identity,
            &policy.certificate_identity_regexp,
        )?,
        issuer: matcher(
            &policy.certificate_oidc_issuer,
            &policy.certificate_oidc_issuer_regexp,
        )?,
        claims: Vec::new(),
    };
    let name = format!(
        "a certificate for {} (issuer {})",
        identity
            .subject
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        identity
            .issuer
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    let root = policy.trusted_root.as_ref().map(|p| project.resolve(p));
    let v = Verifier::new(None, identity, root.as_deref(), Default::default()).map_err(err)?;
    Ok(vec![(name, v)])
}

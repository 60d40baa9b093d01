//! The typed result of a release: every artefact with its place and digest, and every step
//! with its state; [`Summary::to_json`] is `opship release -o json`.

use serde::Serialize;

use crate::step::{State, Step};

/// What a release did (or, in a dry run, would do).
#[derive(Debug, Clone)]
pub struct Summary {
    /// The package.
    pub package: String,
    /// The version.
    pub version: String,
    /// Only planned.
    pub dry_run: bool,
    /// `REGISTRY[/NAMESPACE]`, if images were pushed.
    pub registry: Option<String>,
    /// The bundle and its image.
    pub bundle: BundleSummary,
    /// The bundle image's signature.
    pub signature: SignatureSummary,
    /// Each catalog.
    pub catalogs: Vec<CatalogSummary>,
    /// The chart.
    pub chart: ChartSummary,
    /// Every step in order.
    pub steps: Vec<Step>,
    /// Files under the places a release writes whose content changed or that appeared
    /// (`… (removed)` for those that went).
    pub files_changed: Vec<String>,
    /// The catalogs the `verify:` policy checked before the release, with each image's
    /// verdict and signer.
    pub verified: Vec<VerifiedCatalog>,
}

/// A catalog whose images passed the `verify:` policy.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifiedCatalog {
    /// The catalog directory.
    pub dir: String,
    /// Each image: the policy that matched and who signed (`signer`, for certificates).
    pub images: Vec<crate::catalog_verify::ImageReport>,
}

/// The bundle.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleSummary {
    /// The bundle directory.
    pub dir: String,
    /// `LAYOUT:TAG` of its image.
    pub layout: String,
    /// The registry reference, with a registry.
    pub reference: Option<String>,
    /// The repository (the identity in signatures and the catalog).
    pub repository: String,
    /// The image digest.
    pub digest: String,
}

/// A signature.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureSummary {
    /// Where the signatures are (`REPO:sha256-….sig` or `LAYOUT:sha256-….sig`).
    pub reference: String,
    /// Digest of the `.sig` manifest as it is now.
    pub digest: Option<String>,
    /// The private key (none when keyless).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The public key (none when keyless).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// The key was generated (the default key).
    pub generated_key: bool,
    /// The keyless signer, when the release signed keylessly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyless: Option<KeylessSummary>,
}

/// Who signed keylessly: the certificate's identity and the token's issuer (what `cosign
/// verify --certificate-identity … --certificate-oidc-issuer …` is given).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeylessSummary {
    /// Where the identity token came from.
    pub token_source: String,
    /// The certificate's subject alternative name; none in a dry run (no certificate asked).
    pub identity: Option<String>,
    /// The OIDC issuer; none in a dry run.
    pub issuer: Option<String>,
}

/// A catalog.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSummary {
    /// The `catalogs:` target's name.
    pub name: Option<String>,
    /// The catalog directory.
    pub dir: String,
    /// The bundle's image as the catalog names it (`REPO@DIGEST`).
    pub entry_image: String,
    /// The catalog image's repository.
    pub repository: String,
    /// The catalog image.
    pub image: CatalogImage,
}

/// A catalog image.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogImage {
    /// `LAYOUT:TAG`.
    pub layout: String,
    /// The registry reference, with a registry.
    pub reference: Option<String>,
    /// Its digest (unknown in a dry run before the catalog add).
    pub digest: Option<String>,
    /// Where its signatures are.
    pub signature: Option<String>,
}

/// The chart.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartSummary {
    /// The chart directory.
    pub dir: String,
    /// The `.tgz`.
    pub archive: String,
    /// The archive's digest.
    pub digest: String,
    /// `oci://…:<version>`, with a registry.
    pub reference: Option<String>,
    /// The chart manifest's digest in the registry.
    pub manifest_digest: Option<String>,
    /// Where its signatures are, with a registry.
    pub signature: Option<String>,
}

impl Summary {
    /// The state of step `id`.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }

    /// The summary as `opship release -o json` prints it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "package": self.package,
            "version": self.version,
            "dryRun": self.dry_run,
            "registry": self.registry,
            "bundle": self.bundle,
            "signature": self.signature,
            "catalogs": self.catalogs,
            "chart": self.chart,
            "steps": self.steps.iter().map(|st| serde_json::json!({
                "id": st.id,
                "description": st.description,
                "status": st.state.word(),
                "reason": match &st.state { State::Done(why) => Some(why.as_str()), _ => None },
                "command": st.command,
                "reads": st.reads,
                "writes": st.writes,
                "digest": st.digest,
            })).collect::<Vec<_>>(),
            "filesChanged": self.files_changed,
            "verified": self.verified,
        })
    }
}

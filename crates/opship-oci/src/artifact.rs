//! A Helm chart as an OCI artifact, the way `helm push` stores it: a config blob of media type
//! `application/vnd.cncf.helm.config.v1+json` (the Chart.yaml metadata as JSON), one layer
//! `application/vnd.cncf.helm.chart.content.v1.tar+gzip` (the `.tgz` bytes, unchanged), an OCI
//! image manifest with annotations. The push itself is `Registry::push_chart`
//! (`registry/chart.rs`).

use std::collections::BTreeMap;

/// Media type of a Helm chart's config blob.
pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
/// Media type of a Helm chart's content layer.
pub const HELM_CHART_CONTENT: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// OCI image manifest media type.
pub(crate) const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// A chart ready to push.
#[derive(Debug, Clone)]
pub struct ChartArtifact {
    /// The chart's metadata as JSON (the config blob), keys in a fixed order.
    pub config: Vec<u8>,
    /// The `.tgz`.
    pub archive: Vec<u8>,
    /// Manifest annotations (`org.opencontainers.image.*`).
    pub annotations: BTreeMap<String, String>,
}

/// What a chart push did.
#[derive(Debug, Clone)]
pub struct ChartPush {
    /// `registry/repo/name:tag`.
    pub reference: String,
    /// The manifest digest.
    pub digest: String,
    /// The tag already pointed at exactly this manifest; nothing was uploaded.
    pub unchanged: bool,
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    opship_core::image::oci::Digest::of(bytes).to_string()
}

/// The manifest bytes of a chart artifact (deterministic: sorted annotations).
pub fn chart_manifest(a: &ChartArtifact) -> Vec<u8> {
    let m = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": HELM_CONFIG, "digest": sha256(&a.config), "size": a.config.len()},
        "layers": [{"mediaType": HELM_CHART_CONTENT, "digest": sha256(&a.archive), "size": a.archive.len()}],
        "annotations": a.annotations,
    });
    serde_json::to_vec(&m).unwrap_or_default()
}

//! Pushing a Helm chart to an OCI registry the way `helm push` stores it: a config blob of
//! media type `application/vnd.cncf.helm.config.v1+json` (the Chart.yaml metadata as JSON),
//! one layer `application/vnd.cncf.helm.chart.content.v1.tar+gzip` (the `.tgz` bytes,
//! unchanged), tagged with the chart version (`+` becomes `_`) in `<repo>/<chart name>`.
//! Unlike `helm push` (helm/helm#10264) an existing tag with other content is not silently
//! overwritten.

use std::collections::BTreeMap;

use oci_client::Reference;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;

use crate::auth::Auth;
use crate::error::{Error, Result};
use crate::registry::{Options, is_loopback};

/// Media type of a Helm chart's config blob.
pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
/// Media type of a Helm chart's content layer.
pub const HELM_CHART_CONTENT: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// OCI image manifest media type.
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

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

fn sha256(bytes: &[u8]) -> String {
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

fn map_err(host: &str, auth: &Auth, e: OciDistributionError) -> Error {
    match e {
        OciDistributionError::AuthenticationFailure(m)
        | OciDistributionError::UnauthorizedError { url: m } => Error::Unauthorized {
            registry: host.to_owned(),
            user: auth
                .username()
                .map(|u| format!(" of user {u}"))
                .unwrap_or_default(),
            answer: m,
        },
        OciDistributionError::RequestError(r) => Error::Unreachable {
            registry: host.to_owned(),
            message: r.to_string(),
        },
        other => Error::Registry {
            registry: host.to_owned(),
            status: "an error".into(),
            answer: other.to_string(),
        },
    }
}

/// Pushes `artifact` as `repository/<name>:<version>` (repository is `host/path`, as in
/// `oci://host/path`). HEAD first: an unchanged tag is left alone, a tag with other content
/// is refused unless `force`.
pub async fn push_chart(
    repository: &str,
    name: &str,
    version: &str,
    artifact: &ChartArtifact,
    auth: Auth,
    options: &Options,
    force: bool,
) -> Result<ChartPush> {
    let tag = version.replace('+', "_");
    let whole = format!("{}/{name}:{tag}", repository.trim_end_matches('/'));
    let reference: Reference = whole
        .parse()
        .map_err(|e| Error::Input(format!("`{whole}` is not a valid reference: {e}")))?;
    let host = reference.resolve_registry().to_owned();
    let http = options.insecure || is_loopback(&host);
    let protocol = if options.insecure {
        ClientProtocol::Http
    } else if http {
        ClientProtocol::HttpsExcept(vec![host.clone()])
    } else {
        ClientProtocol::Https
    };
    let client = oci_client::Client::new(ClientConfig {
        protocol,
        connect_timeout: Some(options.connect_timeout),
        read_timeout: Some(options.read_timeout),
        user_agent: concat!("opship/", env!("CARGO_PKG_VERSION")),
        ..ClientConfig::default()
    });
    let oci_auth = auth.to_oci();
    client.store_auth_if_needed(&host, &oci_auth).await;
    let manifest = chart_manifest(artifact);
    let digest = sha256(&manifest);
    match client.fetch_manifest_digest(&reference, &oci_auth).await {
        Ok(existing) if existing == digest => {
            return Ok(ChartPush {
                reference: whole,
                digest,
                unchanged: true,
            });
        }
        Ok(existing) if !force => {
            return Err(Error::Input(format!(
                "{whole} already exists with other content ({existing}, this chart is {digest}); \
                 bump the chart version or push with --force"
            )));
        }
        Ok(_) => {}
        Err(OciDistributionError::ImageManifestNotFoundError(_)) => {}
        Err(OciDistributionError::RegistryError { envelope, .. })
            if envelope.errors.iter().any(|e| {
                format!("{:?}", e.code).contains("NotFound")
                    || format!("{:?}", e.code).contains("Unknown")
            }) => {}
        Err(e) => return Err(map_err(&host, &auth, e)),
    }
    for blob in [&artifact.config, &artifact.archive] {
        let d = sha256(blob);
        let exists = client
            .blob_exists(&reference, &d)
            .await
            .map_err(|e| map_err(&host, &auth, e))?;
        if !exists {
            client
                .push_blob(&reference, bytes::Bytes::copy_from_slice(blob), &d)
                .await
                .map_err(|e| map_err(&host, &auth, e))?;
        }
    }
    client
        .push_manifest_raw(
            &reference,
            bytes::Bytes::from(manifest),
            reqwest::header::HeaderValue::from_static(OCI_MANIFEST),
        )
        .await
        .map_err(|e| map_err(&host, &auth, e))?;
    Ok(ChartPush {
        reference: whole,
        digest,
        unchanged: false,
    })
}

//! Integration tests of opship-install: OLM v1's own regression scenarios.

mod scenarios;

use std::path::PathBuf;

/// `../shared/olm-v1-render` (or `OPSHIP_OLM_V1_RENDER`).
pub fn render_data() -> PathBuf {
    std::env::var_os("OPSHIP_OLM_V1_RENDER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
            [
                repo.join("../shared/olm-v1-render"),
                "/work/shared/olm-v1-render".into(),
            ]
            .into_iter()
            .find(|c| c.join("scenarios.yaml").is_file())
            .expect("olm-v1-render data not found: set OPSHIP_OLM_V1_RENDER")
        })
}

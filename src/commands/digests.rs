//! `generate bundle --use-image-digests`: the network half of pinning. Collects the tag
//! references of the generated bundles, resolves each distinct one once through its registry
//! (opship-oci, credentials from the usual sources, a few at a time on a current-thread tokio
//! runtime), then lets the offline core rewrite the CSVs. Any failure stops the command before
//! a bundle is written.

use std::collections::BTreeMap;
use std::sync::Arc;

use opship_core::bundle::{Bundle, pin};
use opship_core::image::oci::{Digest, media};
use opship_oci::auth::{self, Env};
use opship_oci::registry::{self, Options, Reference, Registry};

use super::CmdError;

/// Lookups in flight at once: enough to hide latency, few enough not to trip rate limits.
const PARALLEL: usize = 8;

/// A bundle being generated: its version, output directory and contents.
pub type Generated = (String, std::path::PathBuf, Bundle);

/// Pins every image given by tag in `bundles` to the digest its registry serves for it.
pub fn pin_bundles(bundles: &mut [Generated], insecure: bool) -> Result<(), CmdError> {
    let several = bundles.len() > 1;
    let mut uses: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (version, _, b) in bundles.iter() {
        for u in b.image_uses() {
            if pin::is_pinned(&u.image) {
                continue;
            }
            let places = uses.entry(u.image).or_default();
            places.extend(u.places.into_iter().map(|p| {
                if several {
                    format!("{version}: {p}")
                } else {
                    p
                }
            }));
        }
    }
    let digests = resolve(&uses, insecure)?;
    for (_, _, b) in bundles.iter_mut() {
        b.pin_images(&digests)?;
    }
    Ok(())
}

/// What a failed image is: the reference(s) and where the bundle uses them.
fn describe(images: &[&str], uses: &BTreeMap<String, Vec<String>>) -> String {
    let places: Vec<&str> = images
        .iter()
        .flat_map(|i| uses.get(*i).into_iter().flatten().map(String::as_str))
        .collect();
    format!("{} (used as {})", images.join(", "), places.join("; "))
}

fn kind(media_type: &str) -> &str {
    match media_type {
        media::OCI_INDEX => "OCI image index",
        media::DOCKER_LIST => "Docker manifest list",
        media::OCI_MANIFEST => "OCI image manifest",
        media::DOCKER_MANIFEST => "Docker image manifest",
        other => other,
    }
}

/// Digest of every image of `uses` (by the reference as written). References that name the
/// same image (`memcached:1.6`, `docker.io/library/memcached:1.6`) are looked up once.
fn resolve(
    uses: &BTreeMap<String, Vec<String>>,
    insecure: bool,
) -> Result<BTreeMap<String, Digest>, CmdError> {
    let mut failures = Vec::new();
    let mut groups: BTreeMap<String, (Reference, Vec<&str>)> = BTreeMap::new();
    for image in uses.keys() {
        match registry::parse_reference(image) {
            Ok(r) => groups
                .entry(r.whole())
                .or_insert_with(|| (r, Vec::new()))
                .1
                .push(image),
            Err(e) => failures.push(format!("{}: {e}", describe(&[image], uses))),
        }
    }
    // Invalid references are reported together with the lookups' failures, so one run shows
    // every problem.
    let env = Env::from_process();
    let mut clients: BTreeMap<String, Arc<Registry>> = BTreeMap::new();
    let mut jobs = Vec::new();
    for (key, (reference, _)) in &groups {
        let host = reference.resolve_registry().to_owned();
        let client = match clients.get(&host) {
            Some(c) => Arc::clone(c),
            None => {
                let found = auth::lookup(&host, &env)?;
                tracing::info!("credentials for {host}: {}", found.source);
                let options = Options {
                    insecure,
                    ..Options::default()
                };
                let c = Arc::new(Registry::new(reference, found.auth, options));
                clients.insert(host, Arc::clone(&c));
                c
            }
        };
        jobs.push((key.clone(), reference.clone(), client));
    }
    let answers = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(lookup_all(jobs))?;

    let mut digests = BTreeMap::new();
    for (key, (_, images)) in &groups {
        match answers.get(key) {
            Some(Ok((digest, media_type))) => {
                super::progress::note(&format!(
                    "resolved {} to {digest} ({})",
                    images.join(", "),
                    kind(media_type)
                ));
                for image in images {
                    digests.insert((*image).to_owned(), digest.clone());
                }
            }
            Some(Err(e)) => failures.push(format!("{}: {e}", describe(images, uses))),
            None => failures.push(format!("{}: not looked up", describe(images, uses))),
        }
    }
    if failures.is_empty() {
        Ok(digests)
    } else {
        Err(failed(&failures))
    }
}

fn failed(failures: &[String]) -> CmdError {
    let mut msg = format!(
        "cannot pin {} image{} to digests; no bundle was written:",
        failures.len(),
        if failures.len() == 1 { "" } else { "s" }
    );
    for f in failures {
        msg.push_str("\n  ");
        msg.push_str(f);
    }
    msg.into()
}

type Answer = opship_oci::Result<(Digest, String)>;

/// Runs the lookups, at most [`PARALLEL`] at a time.
async fn lookup_all(
    jobs: Vec<(String, Reference, Arc<Registry>)>,
) -> Result<BTreeMap<String, Answer>, CmdError> {
    let mut pending = jobs.into_iter();
    let mut running = tokio::task::JoinSet::new();
    let start = |running: &mut tokio::task::JoinSet<(String, Answer)>,
                 (key, reference, client): (String, Reference, Arc<Registry>)| {
        running.spawn(async move {
            let answer = client.manifest_digest(&reference).await;
            (key, answer)
        });
    };
    for job in pending.by_ref().take(PARALLEL) {
        start(&mut running, job);
    }
    let mut answers = BTreeMap::new();
    while let Some(done) = running.join_next().await {
        let (key, answer) = done?;
        answers.insert(key, answer);
        if let Some(job) = pending.next() {
            start(&mut running, job);
        }
    }
    Ok(answers)
}

//! The release driver: stages, then goes through the steps in order, checking each against
//! the project and the registry (read-only) and running the pending ones through the stage
//! libraries, with one registry client and one signer for the whole release.

use std::path::Path;
use std::sync::Arc;

use opship_catalog::add::{self, AddOptions, SkipRangePolicy, SkipsPolicy, TargetSettings};
use opship_catalog::render::CsvFormat;
use opship_core::image::{Digest, Image, Layout};
use opship_oci::Registry;
use opship_oci::cosign::provenance::{Resource, Source};
use opship_oci::registry::parse_reference;

use crate::check::{catalog_has, holds_exactly, layout_digest, snapshot};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::plan::{Plan, s};
use crate::sign::Signer;
use crate::stage::{self, Staged, Stopped, Warning};
use crate::step::{Kind, Location, State, Step, Subject};
use crate::summary::{
    BundleSummary, CatalogImage, CatalogSummary, ChartSummary, KeylessSummary, SignatureSummary,
    Summary,
};
use crate::{Options, Outcome};

struct Runner<'e> {
    plan: Plan,
    rt: tokio::runtime::Runtime,
    client: Option<Arc<Registry>>,
    /// Digests of the images this release pushed (known to be there).
    pushed: Vec<String>,
    /// The chart push, started once the last catalog validates (see [`Runner::start_chart_push`]).
    chart_push: Option<ChartPushJob>,
    signer: Signer,
    /// The provenance's source and inputs, with a registry (attestations are registry-only).
    provenance: Option<(Option<Source>, Vec<Resource>)>,
    /// `SOURCE_DATE_EPOCH`: the provenance's build times.
    source_date_epoch: Option<u64>,
    on_event: &'e mut dyn FnMut(&Event<'_>),
}

type StepResult = std::result::Result<(), String>;

/// The chart push started ahead: what the registry held under the chart's tag when that is
/// this chart already, else the outcome of the push (the manifest digest or the error).
enum ChartPushed {
    Held(opship_oci::registry::RawManifest),
    Pushed(std::result::Result<String, String>),
}

/// What the chart task did: the push, and then, with the key decrypted already, the check and
/// the writing of the chart's signature.
struct ChartAhead {
    pushed: ChartPushed,
    sign: Option<SignAhead>,
}

/// A signing step's check and write done ahead: the subject, whether a signature by the key
/// verified, and the signing when it did not.
struct SignAhead {
    subject: Subject,
    verified: std::result::Result<Option<bool>, String>,
    signed: Option<StepResult>,
}

/// The task of the chart push; an error is the failed lookup of the tag.
type ChartPushJob = tokio::task::JoinHandle<std::result::Result<ChartAhead, String>>;

/// Whether the chart manifest `m` holds the archive with `digest`: the manifest's one layer is
/// the archive, so the same digest is the same chart.
fn holds_chart(m: &opship_oci::registry::RawManifest, digest: &str) -> bool {
    serde_json::from_slice::<serde_json::Value>(&m.bytes)
        .is_ok_and(|v| v["layers"][0]["digest"].as_str() == Some(digest))
}

/// An attestation step with what it attests.
struct Attestation {
    step: Step,
    provenance: opship_oci::cosign::provenance::Provenance,
    /// The provenance file written next to the project.
    file: std::path::PathBuf,
}

pub(crate) fn release(
    plan: Plan,
    mut options: Options<'_>,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> Result<Outcome> {
    // One release at a time per project: a second one (of the same version or another) waits
    // here, then finds the first one's steps done and joins its result.
    let _lock = if plan.dry_run {
        None
    } else {
        Some(lock_project(&plan, on_event)?)
    };
    if !plan.dry_run {
        // What killed runs left in the directories a release writes (SIGKILL cannot be
        // handled; SIGINT/SIGTERM are, by `opship_core::cleanup`).
        let mut dirs = plan.written_roots();
        dirs.push(plan.layout.join("blobs/sha256"));
        dirs.push(std::env::temp_dir());
        if let Some(p) = plan.bundle_dir.parent() {
            dirs.push(p.to_path_buf());
        }
        for d in [&plan.key.key, &plan.key.public] {
            if let Some(p) = d.parent() {
                dirs.push(p.to_path_buf());
            }
        }
        // `catalog add` writes its temporary copy in the package's directory; every catalog
        // reader refuses one (opm would serve it), so a killed run's is removed before the
        // catalog is read to see whether this release is already in it.
        dirs.extend(
            plan.catalogs
                .iter()
                .map(|c| c.dir.join(&plan.project.config.package)),
        );
        for d in &dirs {
            opship_core::fsutil::sweep_once(d);
        }
    }
    let signer = Signer::new(
        plan.key.clone(),
        options.password.take(),
        plan.keyless.clone(),
    );
    // A first release of this version (no bundle image in the layout yet) signs: the key is
    // decrypted meanwhile. A re-run decrypts only when a signature is missing.
    if !plan.dry_run && layout_digest(&plan.layout, &plan.bundle_tag).is_none() {
        signer.start_decrypting();
    }
    // The provenance's source (`git`, a process of its own) is looked up meanwhile too.
    let source = plan.registry.as_ref().map(|_| {
        let root = plan.project.root.clone();
        std::thread::spawn(move || crate::provenance::source(&root))
    });
    // So is the registry client (credentials, and the system's CA certificates: most of its
    // cost, paid even for a plain-HTTP registry).
    let client = plan.registry.clone().map(|ns| {
        let mut o = options.registry_options.clone();
        o.insecure |= options.insecure;
        std::thread::spawn(move || client_for(&ns, o))
    });
    let before = snapshot(&plan.written_roots());
    let staged = {
        let mut warn = |w: Warning<'_>| match w {
            Warning::Text(t) => on_event(&Event::Note(t)),
            Warning::Findings(r) => on_event(&Event::Findings(r)),
        };
        match stage::stage(&plan, &options, &mut warn) {
            Ok(s) => s,
            Err(Stopped::Invalid(report)) => return Ok(Outcome::BundleInvalid { report }),
            Err(Stopped::Error(e)) => return Err(e),
        }
    };
    on_event(&Event::Planned {
        steps: plan.step_count(),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // A dry run of a keyless release reads the token (its expiry and audience checked) and
    // names the identity it would sign as; no certificate is asked for.
    if plan.dry_run && plan.keyless.is_some() {
        rt.block_on(signer.preview())
            .map_err(|message| Error::Check {
                id: "sign".into(),
                message,
            })?;
    }
    let client = match client {
        Some(c) => Some(Arc::new(c.join().map_err(|_| {
            Error::Config("setting up the registry client failed".into())
        })??)),
        None => None,
    };
    // The `verify:` policy: every bundle the catalogs already reference, before anything is
    // written or pushed (the bundle this release adds is signed by the release itself).
    let verified = match &plan.project.config.verify {
        Some(policy) => match verify_catalogs(&plan, policy, &options, &rt, on_event)? {
            Ok(verified) => verified,
            Err(refused) => return Ok(refused),
        },
        None => Vec::new(),
    };
    let provenance = match source {
        Some(source) => Some((
            source.join().unwrap_or(None),
            crate::provenance::inputs(&plan, &staged.bundle_files).map_err(|e| Error::Staging {
                what: "provenance".into(),
                message: e,
            })?,
        )),
        None => None,
    };
    let mut r = Runner {
        provenance,
        source_date_epoch: options.source_date_epoch,
        plan,
        rt,
        client,
        chart_push: None,
        pushed: Vec::new(),
        signer,
        on_event,
    };
    let outcome = r.steps(&staged, &options)?;
    let summary = match outcome {
        Ok(summary) => summary,
        Err(invalid) => return Ok(invalid),
    };
    let after = snapshot(&r.plan.written_roots());
    let changed: Vec<String> = after
        .iter()
        .filter(|(p, d)| before.get(*p) != Some(d))
        .map(|(p, _)| p.clone())
        .chain(
            before
                .keys()
                .filter(|p| !after.contains_key(*p))
                .map(|p| format!("{p} (removed)")),
        )
        .collect();
    let mut summary = summary;
    summary.files_changed = changed;
    summary.verified = verified;
    summary.steps = std::mem::take(&mut r.plan.steps);
    Ok(Outcome::Released(Box::new(summary)))
}

/// Applies the `verify:` policy to each catalog target that exists; the first catalog with an
/// image that does not pass stops the release (`Outcome::CatalogUnverified`). Each verified
/// image is said with who signed it.
fn verify_catalogs(
    plan: &Plan,
    policy: &opship_core::config::VerifyPolicy,
    options: &Options<'_>,
    rt: &tokio::runtime::Runtime,
    on_event: &mut dyn FnMut(&Event<'_>),
) -> Result<std::result::Result<Vec<crate::summary::VerifiedCatalog>, Outcome>> {
    use crate::catalog_verify;
    let verify = catalog_verify::Options {
        verifiers: catalog_verify::verifiers_of(&plan.project, policy)?,
        catalog_image: None,
        layout: None,
    };
    let env = opship_oci::auth::Env::from_process();
    let connect = |r: &opship_oci::registry::Reference| {
        let found =
            opship_oci::auth::lookup(r.resolve_registry(), &env).map_err(|e| e.to_string())?;
        let mut o = options.registry_options.clone();
        o.insecure |= options.insecure;
        Ok(Registry::new(r, found.auth, o))
    };
    let mut verified = Vec::new();
    for target in &plan.catalogs {
        if !target.dir.is_dir() {
            continue;
        }
        let result = rt.block_on(catalog_verify::verify_catalog(
            &target.dir,
            &verify,
            &connect,
        ))?;
        if !result.passed() {
            return Ok(Err(Outcome::CatalogUnverified {
                dir: target.dir.clone(),
                verification: result,
            }));
        }
        for image in &result.images {
            on_event(&Event::Note(&image.to_string()));
        }
        on_event(&Event::Note(&format!(
            "verified the signatures of the {} image(s) of the catalog {}",
            result.images.len(),
            s(&target.dir)
        )));
        verified.push(crate::summary::VerifiedCatalog {
            dir: s(&target.dir),
            images: result.images,
        });
    }
    Ok(Ok(verified))
}

/// The project's release lock: an exclusive lock on its `.opship/` directory (created when
/// missing; a lock on a directory leaves no file behind), held until the release ends.
fn lock_project(plan: &Plan, on_event: &mut dyn FnMut(&Event<'_>)) -> Result<std::fs::File> {
    let dir = plan.project.resolve(Path::new(".opship"));
    std::fs::create_dir_all(&dir)?;
    let lock = std::fs::File::open(&dir)?;
    if lock.try_lock().is_err() {
        let note = format!(
            "another release of this project is running ({} is locked); waiting for it",
            s(&dir)
        );
        on_event(&Event::Note(&note));
        lock.lock()?;
    }
    Ok(lock)
}

/// The one registry client of the release (credentials looked up once).
fn client_for(ns: &str, o: opship_oci::Options) -> Result<Registry> {
    let probe =
        parse_reference(&format!("{ns}/probe:latest")).map_err(|e| Error::Config(e.to_string()))?;
    let found = opship_oci::auth::lookup(
        probe.resolve_registry(),
        &opship_oci::auth::Env::from_process(),
    )
    .map_err(|e| Error::Config(e.to_string()))?;
    tracing::info!(
        "credentials for {}: {}",
        probe.resolve_registry(),
        found.source
    );
    Ok(Registry::new(&probe, found.auth, o))
}

impl Runner<'_> {
    /// How the steps sign: keylessly as the certificate's identity once it is known, else as
    /// the plan says.
    fn signer_text(&self) -> String {
        match self.signer.keyless_identity() {
            Some((identity, issuer)) => format!("keylessly as {identity} (issuer {issuer})"),
            None => self.plan.signer_text(),
        }
    }

    /// Records a step: runs `action` when it is pending (and this is no dry run), reporting
    /// start and finish, else reports it skipped.
    fn execute(&mut self, mut step: Step, action: impl FnOnce(&Self) -> StepResult) -> Result<()> {
        if step.state.pending() && !self.plan.dry_run {
            (self.on_event)(&Event::Started(&step));
            if let Err(message) = action(self) {
                let command = step.command_line();
                return Err(Error::Step {
                    version: self.plan.version.clone(),
                    id: step.id,
                    description: step.description,
                    command,
                    message,
                });
            }
            step.state = State::Ran;
            (self.on_event)(&Event::Finished(&step));
        } else {
            (self.on_event)(&Event::Skipped(&step));
        }
        self.plan.steps.push(step);
        Ok(())
    }

    fn check_err(id: &str) -> impl Fn(String) -> Error + '_ {
        move |message| Error::Check {
            id: id.to_owned(),
            message,
        }
    }

    /// The digest the registry serves for `reference`, `None` when it has none.
    fn remote_digest(&self, id: &str, reference: &str) -> Result<Option<String>> {
        Ok(self
            .remote_manifest(id, reference)?
            .map(|m| m.digest.as_str().to_owned()))
    }

    fn remote_manifest(
        &self,
        id: &str,
        reference: &str,
    ) -> Result<Option<opship_oci::registry::RawManifest>> {
        let client = self.client.as_ref().ok_or_else(|| Error::Check {
            id: id.to_owned(),
            message: "no registry".into(),
        })?;
        let r = parse_reference(reference).map_err(|e| Self::check_err(id)(e.to_string()))?;
        self.rt
            .block_on(client.manifest_if_any(&r))
            .map_err(|e| Self::check_err(id)(format!("looking up {reference}: {e}")))
    }

    /// Checks and runs a signing step of `subject`.
    fn sign_step(
        &mut self,
        id: String,
        what: &str,
        subject: Subject,
        ahead: Option<SignAhead>,
    ) -> Result<()> {
        self.sign_and_attest_ahead(id, what, subject, None, ahead)
    }

    /// Checks and runs the signing step of `subject` and, with `attest` (the attestation's
    /// step id, artifact name and extra inputs) and a registry, the SLSA provenance
    /// attestation of it. Both need only the image in place and the key, so their checks
    /// run together and so do their writes; their events follow in plan order.
    fn sign_and_attest(
        &mut self,
        id: String,
        what: &str,
        subject: Subject,
        attest: Option<(String, String, Vec<Resource>)>,
    ) -> Result<()> {
        self.sign_and_attest_ahead(id, what, subject, attest, None)
    }

    /// [`Runner::sign_and_attest`], with the signature's check and write taken from `ahead`
    /// when they were done beside the steps (for this same subject).
    fn sign_and_attest_ahead(
        &mut self,
        id: String,
        what: &str,
        subject: Subject,
        attest: Option<(String, String, Vec<Resource>)>,
        ahead: Option<SignAhead>,
    ) -> Result<()> {
        let (ahead_verified, ahead_signed) = match ahead {
            Some(a) if a.subject == subject => (Some(a.verified), a.signed),
            _ => (None, None),
        };
        let mut sign = Step {
            id: id.clone(),
            kind: Kind::Sign {
                subject: subject.clone(),
            },
            description: format!("sign {what} {} {}", subject.digest, self.signer_text()),
            command: self
                .plan
                .sign_command(&subject.identity, &subject.reference()),
            reads: vec![subject.reference(), self.plan.signer_read()],
            writes: vec![subject.signature_reference()],
            digest: Some(subject.digest.clone()),
            state: State::Planned,
        };
        let attest = match (attest, &self.provenance) {
            (Some((aid, artifact, extra)), Some(_)) => {
                Some(self.attestation(aid, what, &subject, artifact, extra)?)
            }
            _ => None,
        };
        let pushed = self.pushed.contains(&subject.digest);
        let r = &*self;
        let (verified, attested) = r.rt.block_on(async {
            let attested = async {
                match (&attest, &r.client) {
                    (Some(a), Some(client)) => Some(
                        r.signer
                            .attested(client, &subject, &a.provenance, pushed)
                            .await
                            .map_err(Self::check_err(&a.step.id)),
                    ),
                    (Some(a), None) => Some(Err(Self::check_err(&a.step.id)("no registry".into()))),
                    (None, _) => None,
                }
            };
            let verified = async {
                match ahead_verified {
                    Some(v) => v,
                    None => {
                        r.signer
                            .verified(r.client.as_deref(), &subject, pushed)
                            .await
                    }
                }
            };
            tokio::join!(verified, attested)
        });
        match verified.map_err(Self::check_err(&id))? {
            Some(true) => {
                sign.state = State::Done(format!("a signature by {} verifies", self.signer.by()))
            }
            None if self.plan.dry_run => sign.state = State::AfterEarlier,
            _ => {}
        }
        let mut attest = attest;
        if let (Some(a), Some(attested)) = (&mut attest, attested) {
            match attested? {
                Some(true) => {
                    a.step.state = State::Done(format!(
                        "an attestation of this provenance by {} verifies",
                        self.signer.by()
                    ))
                }
                None if self.plan.dry_run => a.step.state = State::AfterEarlier,
                _ => {}
            }
        }

        let runs = |st: &Step| st.state.pending() && !self.plan.dry_run;
        let (run_sign, run_attest) = (runs(&sign), attest.as_ref().is_some_and(|a| runs(&a.step)));
        // Keyless: the certificate is asked for by the first step that writes a signature,
        // before anything is written, and the steps name the identity it certifies.
        if self.signer.is_keyless() && (run_sign || run_attest) {
            if let Err(message) = self.rt.block_on(self.signer.start_session()) {
                let step = if run_sign {
                    sign
                } else {
                    attest.map(|a| a.step).unwrap_or(sign)
                };
                return Err(Error::Step {
                    version: self.plan.version.clone(),
                    id: step.id,
                    description: step.description,
                    command: step.command.join(" "),
                    message,
                });
            }
            sign.description = format!("sign {what} {} {}", subject.digest, self.signer_text());
            if let Some(a) = &mut attest {
                a.step.description = format!(
                    "attest {what} {} with its SLSA provenance ({}) {}",
                    subject.digest,
                    s(&a.file),
                    self.signer_text()
                );
            }
        }
        let r = &*self;
        let (signed, attested) = r.rt.block_on(async {
            let signed = async {
                if let (true, Some(done)) = (run_sign, ahead_signed) {
                    done
                } else if run_sign {
                    r.signer
                        .sign(r.client.as_deref(), &subject, &r.plan.version)
                        .await
                        .map(|_| ())
                } else {
                    Ok(())
                }
            };
            let attested = async {
                match &attest {
                    Some(a) if run_attest => r.attest(&subject, a).await,
                    _ => Ok(()),
                }
            };
            // Keyless signatures and attestations in cosign 3's format are both referrers of
            // the image: without the referrers API they share one fallback tag, which two
            // writers at once would overwrite in turn. One after the other, then.
            if r.signer.is_keyless() {
                let signed = signed.await;
                (signed, attested.await)
            } else {
                tokio::join!(signed, attested)
            }
        });
        self.execute(sign, |_| signed)?;
        if let Some(a) = attest {
            self.execute(a.step, |_| attested)?;
        }
        Ok(())
    }

    /// The attestation step of `subject` with its provenance, built from `artifact` and the
    /// release's inputs (`extra` too); not checked yet.
    fn attestation(
        &self,
        id: String,
        what: &str,
        subject: &Subject,
        artifact: String,
        extra: Vec<Resource>,
    ) -> Result<Attestation> {
        let (source, inputs) = self.provenance.as_ref().ok_or_else(|| Error::Check {
            id: id.clone(),
            message: "no registry".into(),
        })?;
        let mut inputs = inputs.clone();
        inputs.extend(extra);
        let provenance = crate::provenance::of(
            &self.plan,
            source.as_ref(),
            inputs,
            artifact,
            &subject.digest,
            self.source_date_epoch,
        )
        .map_err(Self::check_err(&id))?;
        let file = self.plan.provenance_dir().join(format!(
            "{}.slsa.json",
            subject
                .attestation_reference()
                .rsplit(':')
                .next()
                .unwrap_or_default()
        ));
        let step = Step {
            id,
            kind: Kind::Attest {
                subject: subject.clone(),
            },
            description: format!(
                "attest {what} {} with its SLSA provenance ({}) {}",
                subject.digest,
                s(&file),
                self.signer_text()
            ),
            command: self.plan.attest_command(&file, &subject.reference()),
            reads: vec![subject.reference(), self.plan.signer_read()],
            writes: vec![s(&file), subject.attestation_reference()],
            digest: Some(Digest::of(&provenance.to_bytes()).as_str().to_owned()),
            state: State::Planned,
        };
        Ok(Attestation {
            step,
            provenance,
            file,
        })
    }

    /// Writes the provenance file and attests `subject` with it.
    async fn attest(&self, subject: &Subject, a: &Attestation) -> StepResult {
        let mut bytes =
            serde_json::to_vec_pretty(&a.provenance.to_value()).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        std::fs::create_dir_all(self.plan.provenance_dir())
            .map_err(|e| format!("{}: {e}", s(&self.plan.provenance_dir())))?;
        opship_core::fsutil::write_atomic_with_mode(&a.file, &bytes, 0o644)
            .map_err(|e| e.to_string())?;
        let client = self.client.as_ref().ok_or("no registry")?;
        self.signer
            .attest(client, subject, &a.provenance)
            .await
            .map(|_| ())
    }

    /// Checks and runs a push of the layout tag `tag` to `remote`, whose content is `digest`.
    fn push_step(
        &mut self,
        id: String,
        what: &str,
        tag: &str,
        remote: &str,
        digest: Option<&str>,
    ) -> Result<()> {
        let mut step = Step {
            id: id.clone(),
            kind: Kind::Push {
                tag: tag.to_owned(),
                target: remote.to_owned(),
            },
            description: format!("push {what} to {remote}"),
            command: self.plan.push_command(tag, remote),
            reads: vec![format!("{}:{tag}", s(&self.plan.layout))],
            writes: vec![remote.to_owned()],
            digest: digest.map(str::to_owned),
            state: if digest.is_none() {
                State::AfterEarlier
            } else {
                State::Planned
            },
        };
        if let Some(d) = digest {
            match self.remote_digest(&id, remote)? {
                Some(have) if have == d => {
                    step.state = State::Done("the registry serves this digest for the tag".into());
                }
                Some(have) => {
                    return Err(Error::Conflict(format!(
                        "{remote} already holds {have}, not the {d} this release builds: a \
                         released version is never overwritten (release a new version, or \
                         delete the tag if that release was a mistake)"
                    )));
                }
                None => {}
            }
        }
        let layout = self.plan.layout.clone();
        let tag = tag.to_owned();
        let target = parse_reference(remote).map_err(|e| Error::Config(e.to_string()))?;
        // Signatures a layout holds are not carried along: the registry's image is signed
        // for its own identity by the sign step, one signature in its `.sig`.
        self.execute(step, |r| {
            let client = r.client.as_ref().ok_or("no registry")?;
            r.rt.block_on(client.push_from_layout(&layout, &tag, &target, None))
                .map(|_| ())
                .map_err(|e| e.to_string())
        })?;
        self.note_pushed();
        Ok(())
    }

    /// Records the digest of the last step when it pushed (ran).
    fn note_pushed(&mut self) {
        if let Some(st) = self.plan.steps.last()
            && st.state == State::Ran
            && let Some(d) = &st.digest
        {
            self.pushed.push(d.clone());
        }
    }

    fn steps(
        &mut self,
        staged: &Staged,
        options: &Options<'_>,
    ) -> Result<std::result::Result<Summary, Outcome>> {
        let plan = &self.plan;
        let version = plan.version.clone();
        let bundle_dir = plan.bundle_dir.clone();
        let layout = plan.layout.clone();
        let bundle_tag = plan.bundle_tag.clone();
        let bundle_repo = plan.bundle_repo.clone();
        let bundle_digest = staged.image.digest().as_str().to_owned();

        // 1. The bundle directory.
        let mut step = Step {
            id: "bundle".into(),
            kind: Kind::GenerateBundle,
            description: format!("generate bundle {version} into {}", s(&bundle_dir)),
            command: plan.command(&["generate", "bundle", "--version", &version]),
            reads: vec![s(&plan.project.path)],
            writes: vec![s(&bundle_dir)],
            digest: None,
            state: State::Planned,
        };
        if holds_exactly(&bundle_dir, &staged.bundle_tree) {
            step.state = State::Done("the directory holds exactly the generated files".into());
        }
        self.execute(step, |_| {
            let refuse = opship_core::output::Overwrite::Refuse;
            opship_core::output::check(
                &bundle_dir,
                &staged.bundle_files,
                opship_core::bundle::TARGET,
                refuse,
            )
            .and_then(|()| {
                opship_core::bundle::write_dir(&staged.bundle_files, &bundle_dir, refuse)
            })
            .map_err(|e| e.to_string())
        })?;

        let step = Step {
            id: "validate".into(),
            kind: Kind::ValidateBundle,
            description: format!("validate bundle {version}"),
            command: self.plan.command(&["validate", "bundle", &s(&bundle_dir)]),
            reads: vec![s(&bundle_dir)],
            writes: vec![],
            digest: None,
            state: State::Done("checked on the staged bundle: no errors".into()),
        };
        self.execute(step, |_| Ok(()))?;

        // 2. The bundle image in the layout.
        let mut step = Step {
            id: "build".into(),
            kind: Kind::BuildBundle,
            description: format!("build the bundle image {}:{bundle_tag}", s(&layout)),
            command: self.plan.command(&[
                "build",
                "--layout",
                &s(&layout),
                "--tag",
                &bundle_tag,
                &s(&bundle_dir),
            ]),
            reads: vec![s(&bundle_dir)],
            writes: vec![format!("{}:{bundle_tag}", s(&layout))],
            digest: Some(bundle_digest.clone()),
            state: State::Planned,
        };
        if layout_digest(&layout, &bundle_tag).as_deref() == Some(bundle_digest.as_str()) {
            step.state = State::Done("the layout tag has this digest".into());
        }
        // The staged image is the image of the bundle directory: the bundle step made the
        // directory hold exactly the staged files.
        self.execute(step, |_| write_image(&layout, &bundle_tag, &staged.image))?;

        // 3. Push.
        let bundle_remote = self
            .plan
            .registry
            .as_ref()
            .map(|_| format!("{bundle_repo}:{}", self.plan.remote_tag));
        if let Some(remote) = &bundle_remote {
            self.push_step(
                "push-bundle".into(),
                "the bundle image",
                &bundle_tag,
                remote,
                Some(&bundle_digest),
            )?;
        }

        // 4. Sign (the default key made first when missing).
        let key = self.plan.key.clone();
        if self.plan.keyless.is_none() && key.generated && !key.key.exists() {
            let pw = key.password_file.as_deref().map(s).unwrap_or_default();
            let step = Step {
                id: "key".into(),
                kind: Kind::GenerateKey,
                description: format!(
                    "generate the signing key {} (public key {}, password in {pw})",
                    s(&key.key),
                    s(&key.public),
                ),
                command: vec![],
                reads: vec![],
                writes: vec![s(&key.key), s(&key.public), pw.clone()],
                digest: None,
                state: State::Planned,
            };
            self.execute(step, |r| r.signer.generate())?;
            if !self.plan.dry_run {
                (self.on_event)(&Event::Important(&format!(
                    "generated the signing key {} (password in {pw}); publish {} for \
                     verification and keep the key: later releases sign with it",
                    s(&key.key),
                    s(&key.public)
                )));
            }
        }
        let location = |repo: &str, tag: &str| match &self.plan.registry {
            Some(_) => Location::Registry {
                repository: repo.to_owned(),
            },
            None => Location::Layout {
                dir: layout.clone(),
                tag: tag.to_owned(),
            },
        };
        let bundle_subject = Subject {
            digest: bundle_digest.clone(),
            identity: bundle_repo.clone(),
            location: location(&bundle_repo, &bundle_tag),
        };
        let attest = self.plan.registry.as_ref().map(|_| {
            (
                "attest".to_owned(),
                image_name(&bundle_repo, &self.plan.remote_tag),
                vec![],
            )
        });
        self.sign_and_attest(
            "sign".into(),
            "the bundle image",
            bundle_subject.clone(),
            attest,
        )?;

        // 5. Catalogs: only now, with the image in place and signed.
        let entry_image = format!("{bundle_repo}@{bundle_digest}");
        let mut catalogs = Vec::new();
        for i in 0..self.plan.catalogs.len() {
            match self.catalog_steps(i, &entry_image, &bundle_digest, staged, options)? {
                Ok(c) => catalogs.push(c),
                Err(invalid) => return Ok(Err(invalid)),
            }
        }

        // 6. The Helm chart.
        let chart = self.chart_steps(staged, options)?;

        // The `.sig` manifest as it is now (the signatures of this digest, ours among them).
        // A keyless signature in cosign 3's format is a referrer: its place is said, and
        // there is no `.sig` manifest to name.
        let keyless_location = self.signer.keyless_location(&bundle_digest);
        let signature_ref = keyless_location
            .clone()
            .unwrap_or_else(|| bundle_subject.signature_reference());
        let signature_digest = match &bundle_remote {
            Some(_) if keyless_location.is_some_and(|l| !l.ends_with(".sig")) => None,
            Some(_) => self.remote_digest("sign", &signature_ref)?,
            None => layout_digest(
                &layout,
                &format!("sha256-{}.sig", bundle_digest.trim_start_matches("sha256:")),
            ),
        };
        Ok(Ok(Summary {
            package: self.plan.project.config.package.clone(),
            version,
            dry_run: self.plan.dry_run,
            registry: self.plan.registry.clone(),
            bundle: BundleSummary {
                dir: s(&bundle_dir),
                layout: format!("{}:{bundle_tag}", s(&layout)),
                reference: bundle_remote,
                repository: bundle_repo,
                digest: bundle_digest,
            },
            signature: SignatureSummary {
                reference: signature_ref,
                digest: signature_digest,
                key: self.plan.keyless.is_none().then(|| s(&key.key)),
                public_key: self.plan.keyless.is_none().then(|| s(&key.public)),
                generated_key: self.plan.keyless.is_none() && key.generated,
                keyless: self.plan.keyless.as_ref().map(|k| KeylessSummary {
                    token_source: k.token_source.clone(),
                    identity: self.signer.keyless_identity().map(|(i, _)| i.to_owned()),
                    issuer: self.signer.keyless_identity().map(|(_, i)| i.to_owned()),
                }),
            },
            catalogs,
            chart,
            steps: Vec::new(),
            files_changed: Vec::new(),
            verified: Vec::new(),
        }))
    }

    /// The steps of catalog `i`: add, validate, build the image, push it, sign it.
    fn catalog_steps(
        &mut self,
        i: usize,
        entry_image: &str,
        bundle_digest: &str,
        staged: &Staged,
        options: &Options<'_>,
    ) -> Result<std::result::Result<CatalogSummary, Outcome>> {
        let target = self.plan.catalogs[i].clone();
        let label = target.label();
        let layout = self.plan.layout.clone();
        let bundle_tag = self.plan.bundle_tag.clone();
        let (add_options, format) = add_options(&self.plan, i)?;
        let mut add_cmd: Vec<String> = vec![
            "catalog".into(),
            "add".into(),
            "--bundle".into(),
            format!("{}:{bundle_tag}", s(&layout)),
            "--image".into(),
            entry_image.to_owned(),
        ];
        match &target.name {
            Some(n) => add_cmd.extend(["--target".into(), n.clone()]),
            None => {
                add_cmd.extend([
                    "--index".into(),
                    s(&target.dir),
                    "--channel".into(),
                    add_options.channels.join(","),
                ]);
                if let Some(d) = &add_options.default_channel {
                    add_cmd.extend(["--default-channel".into(), d.clone()]);
                }
                if let SkipRangePolicy::Custom(r) = &add_options.skip_range {
                    add_cmd.extend(["--skip-range-value".into(), r.clone()]);
                }
            }
        }
        let mut step = Step {
            id: format!("catalog-add:{label}"),
            kind: Kind::CatalogAdd { target: i },
            description: format!("add {entry_image} to the catalog {}", s(&target.dir)),
            command: self.plan.command(&add_cmd),
            reads: vec![format!("{}:{bundle_tag}", s(&layout))],
            writes: vec![s(&target.dir.join(&self.plan.project.config.package))],
            digest: Some(bundle_digest.to_owned()),
            state: State::Planned,
        };
        if let Some(why) = catalog_has(
            &target.dir,
            &self.plan.project.config.package,
            &self.plan.version,
            entry_image,
        )? {
            step.state = State::Done(why);
        }
        let add_pending = step.state.pending();
        self.execute(step, |_| {
            let shown = format!("{}:{bundle_tag}", s(&layout));
            let cat = opship_catalog::render::render_image(
                &layout,
                &bundle_tag,
                Path::new(&shown),
                Some(entry_image),
                format,
            )
            .map_err(|e| e.to_string())?;
            let [bundle] = <[_; 1]>::try_from(cat.bundles)
                .map_err(|_| format!("{shown}: does not render to exactly one bundle"))?;
            add::add(&target.dir, bundle, &add_options)
                .map(|_| ())
                .map_err(|e| e.to_string())
        })?;

        let mut step = Step {
            id: format!("catalog-validate:{label}"),
            kind: Kind::CatalogValidate { target: i },
            description: format!("validate the catalog {}", s(&target.dir)),
            command: self.plan.command(&["catalog", "validate", &s(&target.dir)]),
            reads: vec![s(&target.dir)],
            writes: vec![],
            digest: None,
            state: if self.plan.dry_run && add_pending {
                State::AfterEarlier
            } else {
                State::Planned
            },
        };
        if !self.plan.dry_run {
            (self.on_event)(&Event::Started(&step));
            let report =
                opship_catalog::validate::validate_dir(&target.dir).map_err(|e| Error::Step {
                    version: self.plan.version.clone(),
                    id: step.id.clone(),
                    description: step.description.clone(),
                    command: step.command_line(),
                    message: e.to_string(),
                })?;
            if !report.passed() {
                return Ok(Err(Outcome::CatalogInvalid {
                    dir: target.dir.clone(),
                    report,
                }));
            }
            step.state = State::Ran;
            (self.on_event)(&Event::Finished(&step));
        } else {
            (self.on_event)(&Event::Skipped(&step));
        }
        self.plan.steps.push(step);
        if i + 1 == self.plan.catalogs.len() {
            self.start_chart_push(staged, options)?;
        }

        // The catalog image: built in memory first for its digest.
        let build_opts = opship_catalog::build::BuildOptions {
            epoch: options.source_date_epoch.unwrap_or(0),
            labels: Default::default(),
            format: opship_core::image::oci::Format::Oci,
            architecture: String::new(),
        };
        let mut image: Option<Image> = None;
        if !(self.plan.dry_run && add_pending) && target.dir.exists() {
            image = Some(
                opship_catalog::build::build_scratch(&target.dir, &build_opts).map_err(|e| {
                    Error::Check {
                        id: format!("catalog-build:{label}"),
                        message: e.to_string(),
                    }
                })?,
            );
        }
        let digest = image.as_ref().map(|i| i.digest().as_str().to_owned());
        let mut step = Step {
            id: format!("catalog-build:{label}"),
            kind: Kind::CatalogBuild { target: i },
            description: format!(
                "build the catalog image {}:{}",
                s(&layout),
                target.layout_tag
            ),
            command: self.plan.command(&[
                "catalog",
                "build",
                &s(&target.dir),
                "--layout",
                &s(&layout),
                "--tag",
                &target.layout_tag,
            ]),
            reads: vec![s(&target.dir)],
            writes: vec![format!("{}:{}", s(&layout), target.layout_tag)],
            digest: digest.clone(),
            state: if digest.is_none() {
                State::AfterEarlier
            } else {
                State::Planned
            },
        };
        if digest.is_some() && layout_digest(&layout, &target.layout_tag) == digest {
            step.state = State::Done("the layout tag has this digest".into());
        }
        self.execute(step, |_| match &image {
            Some(image) => write_image(&layout, &target.layout_tag, image),
            None => Err("the catalog image was not built".into()),
        })?;
        if let Some(remote) = &target.remote {
            self.push_step(
                format!("push-catalog:{label}"),
                "the catalog image",
                &target.layout_tag,
                remote,
                digest.as_deref(),
            )?;
        }
        let catalog_repo = self.plan.catalog_repo.clone();
        let mut signature = None;
        match &digest {
            Some(d) => {
                let subject = Subject {
                    digest: d.clone(),
                    identity: catalog_repo.clone(),
                    location: match &target.remote {
                        Some(_) => Location::Registry {
                            repository: catalog_repo.clone(),
                        },
                        None => Location::Layout {
                            dir: layout.clone(),
                            tag: target.layout_tag.clone(),
                        },
                    },
                };
                signature = Some(subject.signature_reference());
                let attest = match &target.remote {
                    Some(remote) => {
                        let bundle = Resource {
                            name: image_name(&self.plan.bundle_repo, &self.plan.remote_tag),
                            digest: Digest::parse(bundle_digest)
                                .map_err(|e| Self::check_err("attest-catalog")(e.to_string()))?,
                        };
                        let artifact = remote
                            .rsplit('/')
                            .next()
                            .unwrap_or(remote.as_str())
                            .to_owned();
                        Some((format!("attest-catalog:{label}"), artifact, vec![bundle]))
                    }
                    None => None,
                };
                self.sign_and_attest(
                    format!("sign-catalog:{label}"),
                    "the catalog image",
                    subject,
                    attest,
                )?;
                if let Some(l) = self.signer.keyless_location(d) {
                    signature = Some(l);
                }
            }
            None => {
                // Dry run before the catalog add: the digest, and so the signature, comes later.
                let step = Step {
                    id: format!("sign-catalog:{label}"),
                    kind: Kind::Sign {
                        subject: Subject {
                            digest: String::new(),
                            identity: catalog_repo.clone(),
                            location: Location::Layout {
                                dir: layout.clone(),
                                tag: target.layout_tag.clone(),
                            },
                        },
                    },
                    description: format!("sign the catalog image {}", self.plan.signer_text()),
                    command: self.plan.sign_command(
                        &catalog_repo,
                        &target
                            .remote
                            .clone()
                            .unwrap_or_else(|| format!("{}:{}", s(&layout), target.layout_tag)),
                    ),
                    reads: vec![],
                    writes: vec![],
                    digest: None,
                    state: State::AfterEarlier,
                };
                self.execute(step, |_| Ok(()))?;
                if let Some(remote) = &target.remote {
                    let predicate = self.plan.provenance_dir().join("sha256-….att.slsa.json");
                    let step = Step {
                        id: format!("attest-catalog:{label}"),
                        kind: Kind::Attest {
                            subject: Subject {
                                digest: String::new(),
                                identity: catalog_repo.clone(),
                                location: Location::Registry {
                                    repository: catalog_repo.clone(),
                                },
                            },
                        },
                        description: "attest the catalog image with its SLSA provenance".into(),
                        command: self.plan.attest_command(&predicate, remote),
                        reads: vec![],
                        writes: vec![],
                        digest: None,
                        state: State::AfterEarlier,
                    };
                    self.execute(step, |_| Ok(()))?;
                }
            }
        }
        Ok(Ok(CatalogSummary {
            name: target.name.clone(),
            dir: s(&target.dir),
            entry_image: entry_image.to_owned(),
            repository: catalog_repo,
            image: CatalogImage {
                layout: format!("{}:{}", s(&layout), target.layout_tag),
                reference: target.remote.clone(),
                digest,
                signature,
            },
        }))
    }

    /// Starts the chart push (with its lookup of the tag) as a task of the runtime, which runs
    /// it while the catalog image is pushed, signed and attested; [`Runner::chart_steps`]
    /// takes its outcome, so the steps and their events stay in plan order. Started only once
    /// the catalogs validate (a release stopped by an invalid catalog pushes no chart), never
    /// in a dry run.
    fn start_chart_push(&mut self, staged: &Staged, options: &Options<'_>) -> Result<()> {
        let (Some(ns), Some(client)) = (self.plan.registry.clone(), self.client.clone()) else {
            return Ok(());
        };
        if self.plan.dry_run {
            return Ok(());
        }
        let package = &staged.package;
        let archive = self.plan.chart_out.join(package.file_name());
        let artifact = chart_artifact(package, &archive, options)?;
        let remote = format!(
            "{ns}/{}:{}",
            staged.chart_name,
            package.version.replace('+', "_")
        );
        let reference = parse_reference(&remote).map_err(|e| Error::Config(e.to_string()))?;
        let (name, version, digest) = (
            staged.chart_name.clone(),
            package.version.clone(),
            package.digest(),
        );
        // The signature too when the key is decrypted already (a first release has signed the
        // bundle image by now); else `sign-chart` checks and signs in its turn.
        let keys = match (self.signer.public(), self.signer.decrypted()) {
            (Ok(Some(public)), Some(private)) => Some((public.clone(), private)),
            _ => None,
        };
        let release = self.plan.version.clone();
        self.chart_push = Some(self.rt.spawn(async move {
            let held = client
                .manifest_if_any(&reference)
                .await
                .map_err(|e| format!("looking up {remote}: {e}"))?;
            let pushed = match held.filter(|m| holds_chart(m, &digest)) {
                Some(m) => ChartPushed::Held(m),
                None => ChartPushed::Pushed(
                    client
                        .push_chart(&ns, &name, &version, &artifact, false)
                        .await
                        .map(|p| p.digest)
                        .map_err(|e| e.to_string()),
                ),
            };
            let manifest = match &pushed {
                ChartPushed::Held(m) => Some((m.digest.as_str().to_owned(), false)),
                ChartPushed::Pushed(Ok(d)) => Some((d.clone(), true)),
                ChartPushed::Pushed(Err(_)) => None,
            };
            let sign = match (manifest, keys) {
                (Some((digest, just_pushed)), Some((public, private))) => {
                    let repository = format!("{ns}/{name}");
                    let subject = Subject {
                        digest,
                        identity: repository.clone(),
                        location: Location::Registry { repository },
                    };
                    let verified =
                        crate::sign::verified(Some(&client), Some(&public), &subject, just_pushed)
                            .await;
                    let signed = match verified {
                        Ok(Some(true)) | Err(_) => None,
                        Ok(_) => Some(
                            crate::sign::sign(&private, Some(&client), &subject, &release)
                                .await
                                .map(|_| ()),
                        ),
                    };
                    Some(SignAhead {
                        subject,
                        verified,
                        signed,
                    })
                }
                _ => None,
            };
            Ok(ChartAhead { pushed, sign })
        }));
        Ok(())
    }

    /// The chart steps: render, package, and with a registry push and sign.
    fn chart_steps(&mut self, staged: &Staged, options: &Options<'_>) -> Result<ChartSummary> {
        let chart_out = self.plan.chart_out.clone();
        let chart_dir = chart_out.join(&staged.chart_name);
        let bundle_dir = self.plan.bundle_dir.clone();
        let mut step = Step {
            id: "chart-render".into(),
            kind: Kind::ChartRender,
            description: format!("render the Helm chart into {}", s(&chart_dir)),
            command: self.plan.command(&[
                "chart",
                "render",
                "--bundle",
                &s(&bundle_dir),
                "--output",
                &s(&chart_out),
            ]),
            reads: vec![s(&bundle_dir)],
            writes: vec![s(&chart_dir)],
            digest: None,
            state: State::Planned,
        };
        if holds_exactly(&chart_dir, &staged.chart_tree) {
            step.state = State::Done("the directory holds exactly the rendered files".into());
        }
        self.execute(step, |_| {
            let refuse = opship_chart::Overwrite::Refuse;
            opship_chart::check_dir(
                &staged.chart_files,
                &chart_dir,
                opship_chart::CHART_DIR,
                refuse,
            )
            .and_then(|()| {
                opship_chart::write_dir(
                    &staged.chart_files,
                    &chart_dir,
                    opship_chart::CHART_DIR,
                    refuse,
                )
            })
            .map_err(|e| e.to_string())
        })?;

        let package = &staged.package;
        let chart_digest = package.digest();
        let archive = chart_out.join(package.file_name());
        let mut step = Step {
            id: "chart-package".into(),
            kind: Kind::ChartPackage,
            description: format!("package the chart into {}", s(&archive)),
            command: self.plan.command(&[
                "chart",
                "package",
                &s(&chart_dir),
                "--destination",
                &s(&chart_out),
            ]),
            reads: vec![s(&chart_dir)],
            writes: vec![s(&archive)],
            digest: Some(chart_digest.clone()),
            state: State::Planned,
        };
        if opship_core::input::read(&archive, opship_core::input::Kind::Blob)
            .is_ok_and(|b| Digest::of(&b).as_str() == chart_digest)
        {
            step.state = State::Done("the archive has this digest".into());
        }
        self.execute(step, |_| {
            std::fs::create_dir_all(&chart_out).map_err(|e| format!("{}: {e}", s(&chart_out)))?;
            // Readable by everyone, like `helm package` writes them (they get served).
            opship_core::fsutil::write_atomic_with_mode(&archive, &package.bytes, 0o644)
                .map_err(|e| e.to_string())
        })?;

        let mut summary = ChartSummary {
            dir: s(&chart_dir),
            archive: s(&archive),
            digest: chart_digest.clone(),
            reference: None,
            manifest_digest: None,
            signature: None,
        };
        let Some(ns) = self.plan.registry.clone() else {
            return Ok(summary);
        };
        let artifact = chart_artifact(package, &archive, options)?;
        let manifest_digest = Digest::of(&opship_oci::artifact::chart_manifest(&artifact))
            .as_str()
            .to_owned();
        let version_tag = package.version.replace('+', "_");
        let remote = format!("{ns}/{}:{version_tag}", staged.chart_name);
        let mut push: Vec<String> = vec![
            "chart".into(),
            "push".into(),
            s(&archive),
            format!("oci://{ns}"),
        ];
        if self.plan.insecure {
            push.push("--insecure".into());
        }
        let mut step = Step {
            id: "push-chart".into(),
            kind: Kind::ChartPush {
                target: remote.clone(),
            },
            description: format!("push the chart to oci://{remote}"),
            command: self.plan.command(&push),
            reads: vec![s(&archive)],
            writes: vec![format!("oci://{remote}")],
            digest: Some(manifest_digest.clone()),
            state: State::Planned,
        };
        // A different chart under the tag is refused by the push itself.
        let ahead = match self.chart_push.take() {
            Some(job) => Some(
                self.rt
                    .block_on(job)
                    .map_err(|e| Self::check_err("push-chart")(e.to_string()))?
                    .map_err(Self::check_err("push-chart"))?,
            ),
            None => None,
        };
        let (ahead, sign_ahead) = match ahead {
            Some(a) => (Some(a.pushed), a.sign),
            None => (None, None),
        };
        let held = match &ahead {
            Some(ChartPushed::Held(m)) => Some(m.clone()),
            Some(ChartPushed::Pushed(_)) => None,
            None => self
                .remote_manifest("push-chart", &remote)?
                .filter(|m| holds_chart(m, &chart_digest)),
        };
        if let Some(m) = held {
            step.state = State::Done("the registry holds this chart archive".into());
            step.digest = Some(m.digest.as_str().to_owned());
        }
        let name = staged.chart_name.clone();
        let version = package.version.clone();
        let pushed_digest = std::cell::RefCell::new(None);
        self.execute(step, |r| {
            let digest = match ahead {
                Some(ChartPushed::Pushed(pushed)) => pushed?,
                _ => {
                    let client = r.client.as_ref().ok_or("no registry")?;
                    r.rt.block_on(client.push_chart(&ns, &name, &version, &artifact, false))
                        .map_err(|e| e.to_string())?
                        .digest
                }
            };
            *pushed_digest.borrow_mut() = Some(digest);
            Ok(())
        })?;
        let manifest_digest = pushed_digest
            .into_inner()
            .or_else(|| self.plan.steps.last().and_then(|s| s.digest.clone()))
            .unwrap_or(manifest_digest);
        if let Some(last) = self.plan.steps.last_mut() {
            last.digest = Some(manifest_digest.clone());
        }
        self.note_pushed();
        let repository = format!("{ns}/{}", staged.chart_name);
        let subject = Subject {
            digest: manifest_digest.clone(),
            identity: repository.clone(),
            location: Location::Registry { repository },
        };
        summary.signature = Some(subject.signature_reference());
        let digest = subject.digest.clone();
        self.sign_step("sign-chart".into(), "the chart", subject, sign_ahead)?;
        if let Some(l) = self.signer.keyless_location(&digest) {
            summary.signature = Some(l);
        }
        summary.reference = Some(format!("oci://{remote}"));
        summary.manifest_digest = Some(manifest_digest);
        Ok(summary)
    }
}

/// `NAME:TAG` of an image in `repository`: its last path segment, which names it the same in
/// every registry (the provenance does not depend on where the release went).
fn image_name(repository: &str, tag: &str) -> String {
    format!(
        "{}:{tag}",
        repository.rsplit('/').next().unwrap_or(repository)
    )
}

/// Writes `image` under `tag` into the layout `dir` (blobs first, `index.json` last).
fn write_image(dir: &Path, tag: &str, image: &Image) -> StepResult {
    Layout::new(dir)
        .write_images([(tag, image)])
        .map_err(|e| e.to_string())
}

/// The chart as an OCI artifact, as `opship chart push` makes it.
fn chart_artifact(
    package: &opship_chart::package::Package,
    archive: &Path,
    options: &Options<'_>,
) -> Result<opship_oci::artifact::ChartArtifact> {
    let err = |e: &dyn std::fmt::Display| Error::Staging {
        what: "chart push".into(),
        message: e.to_string(),
    };
    let files = opship_chart::package::unpack(&package.bytes, archive).map_err(|e| err(&e))?;
    let text =
        std::str::from_utf8(&files["Chart.yaml"]).map_err(|_| err(&"Chart.yaml is not UTF-8"))?;
    let meta = opship_chart::package::chart_metadata(text, &archive.join("Chart.yaml"))
        .map_err(|e| err(&e))?;
    let created = options
        .source_date_epoch
        .map(opship_core::image::oci::rfc3339);
    Ok(opship_oci::artifact::ChartArtifact {
        config: opship_chart::oci::config(&meta),
        annotations: opship_chart::oci::annotations(&meta, created.as_deref()),
        archive: package.bytes.clone(),
    })
}

/// The catalog add options of catalog `i`: a `catalogs:` target's channels, CSV format and
/// skipRange policy (as `catalog add --target`), else the release's channels, default
/// channel and skipRange (as `catalog add --index index`).
fn add_options(plan: &Plan, i: usize) -> Result<(AddOptions, CsvFormat)> {
    let c = &plan.project.config;
    let target = plan.catalogs[i]
        .name
        .as_ref()
        .and_then(|n| c.catalogs.iter().find(|t| &t.name == n));
    let Some(t) = target else {
        let skip_range = plan
            .project
            .release(&plan.version)
            .and_then(|r| r.skip_range.clone())
            .map_or(SkipRangePolicy::None, SkipRangePolicy::Custom);
        return Ok((
            AddOptions {
                channels: plan.channels(),
                default_channel: c.default_channel.clone(),
                skip_range,
                skips: SkipsPolicy::None,
                replace: false,
            },
            CsvFormat::BundleObject,
        ));
    };
    let settings = TargetSettings::of(t).map_err(|e| Error::Config(e.to_string()))?;
    let options = settings
        .add_options(&t.name, &c.channels)
        .map_err(|e| Error::Config(e.to_string()))?;
    Ok((options, settings.format))
}

//! The release's signing, the one place that calls `opship_oci::cosign`: the key (generated
//! once when the default is used, decrypted at most once per release, only when something is
//! signed), the check that a signature by this key for the subject's identity verifies, and
//! the signing itself, in the layout or in the registry; the same for SLSA provenance
//! attestations (registry only: the attestation library writes to registries). Without a
//! configured key and with an identity token, the same steps sign keylessly: one Fulcio
//! certificate for the release, a log entry and timestamp per signature; their checks then
//! look for a keyless signature by the session's identity and issuer that verifies against
//! the trusted root.

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use opship_oci::Registry;
use opship_oci::cosign::attestation::{self, Format};
use opship_oci::cosign::keyless::Session;
use opship_oci::cosign::provenance::{PREDICATE_TYPE, Provenance};
use opship_oci::cosign::signing::{self, SignReport};
use opship_oci::cosign::sigstore::{IdentityPolicy, Matcher, TrustedRoot};
use opship_oci::cosign::verification::{self, Identity, Policy, Verifier};
use opship_oci::cosign::{EncryptedKey, PrivateKey, PublicKey};
use opship_oci::registry::parse_reference;
use zeroize::Zeroizing;

use crate::plan::{KeyPlan, KeylessPlan, s};
use crate::step::{Location, Subject};

/// `.opship/.gitignore`: the key, its password, and the temporaries a run killed while writing
/// them leaves (`.opship-…`, mode 0600 for the password's).
pub(crate) const GITIGNORE: &str = "# The release signing key: never commit the private key or its password,\n\
# nor the temporaries of an interrupted run.\ncosign.key\ncosign.password\n.opship-*\n";

/// What opship wrote there before temporaries were listed.
const OLD_GITIGNORE: &str = "# The release signing key: never commit the private key or its password.\ncosign.key\ncosign.password\n";

/// The release key.
pub(crate) struct Signer {
    plan: KeyPlan,
    password: Option<Zeroizing<String>>,
    private: OnceCell<Arc<PrivateKey>>,
    /// The key being decrypted on another thread, started before staging on a first release
    /// so that scrypt (cosign's N = 32768) overlaps with the steps before the first signature.
    decrypting: RefCell<Option<JoinHandle<Result<PrivateKey, String>>>>,
    public: OnceCell<PublicKey>,
    /// Keyless instead of the key.
    keyless: Option<KeylessPlan>,
    /// The keyless session (its certificate), started by the first step that signs.
    session: OnceCell<Session>,
    /// A dry run's identity and issuer from the token's claims.
    preview: OnceCell<(String, String)>,
    /// Where each keyless signature went, by the digest signed.
    keyless_signed: RefCell<BTreeMap<String, String>>,
    /// The keyless checks' trusted root, read once.
    root: OnceCell<TrustedRoot>,
}

impl Signer {
    pub(crate) fn new(
        plan: KeyPlan,
        password: Option<Zeroizing<String>>,
        keyless: Option<KeylessPlan>,
    ) -> Self {
        Signer {
            plan,
            password,
            private: OnceCell::new(),
            decrypting: RefCell::new(None),
            public: OnceCell::new(),
            keyless,
            session: OnceCell::new(),
            preview: OnceCell::new(),
            keyless_signed: RefCell::new(BTreeMap::new()),
            root: OnceCell::new(),
        }
    }

    /// Whether the release signs keylessly.
    pub(crate) fn is_keyless(&self) -> bool {
        self.keyless.is_some()
    }

    /// Starts the keyless session (token, key, Fulcio certificate) once; a no-op with a key.
    pub(crate) async fn start_session(&self) -> Result<(), String> {
        let Some(k) = &self.keyless else {
            return Ok(());
        };
        if self.session.get().is_none() {
            let session = Session::start(&k.options)
                .await
                .map_err(|e| e.to_string())?;
            let _ = self.session.set(session);
        }
        Ok(())
    }

    /// The keyless session's certificate identity and issuer, once started; in a dry run,
    /// what the token's claims say Fulcio will certify (see [`Signer::preview`]).
    pub(crate) fn keyless_identity(&self) -> Option<(&str, &str)> {
        match self.session.get() {
            Some(s) => Some((s.identity(), s.issuer())),
            None => self.preview.get().map(|(i, s)| (i.as_str(), s.as_str())),
        }
    }

    /// For a dry run: reads the identity token (checking its expiry and audience) and keeps the
    /// identity its claims name, without asking Fulcio for a certificate.
    pub(crate) async fn preview(&self) -> Result<(), String> {
        let Some(k) = &self.keyless else {
            return Ok(());
        };
        let timeout = if k.options.timeout.is_zero() {
            std::time::Duration::from_secs(60)
        } else {
            k.options.timeout
        };
        let token = opship_oci::cosign::keyless::token::obtain(
            k.options.identity_token.as_deref(),
            &k.options.env,
            timeout,
        )
        .await
        .map_err(|e| e.to_string())?;
        let identity = token
            .claims
            .expected_identity()
            .unwrap_or_else(|| token.claims.subject.clone());
        let _ = self.preview.set((identity, token.claims.issuer.clone()));
        Ok(())
    }

    /// Who the checks want a signature by: `this key`, or the keyless identity and issuer.
    pub(crate) fn by(&self) -> String {
        match self.keyless_identity() {
            Some((identity, issuer)) => format!("{identity} (issuer {issuer})"),
            None => "this key".to_owned(),
        }
    }

    /// The keyless checks' verifier: a certificate for the session's identity from its
    /// issuer (before the session, the token's), chained to the trusted root, with the log
    /// and timestamp checks on. `None` with a key.
    async fn keyless_verifier(&self) -> Result<Option<Verifier>, String> {
        let Some(k) = &self.keyless else {
            return Ok(None);
        };
        if self.keyless_identity().is_none() {
            self.preview().await?;
        }
        let (identity, issuer) = self
            .keyless_identity()
            .ok_or("the identity token names no identity")?;
        let root = match self.root.get() {
            Some(r) => r,
            None => {
                let r = match &k.trusted_root {
                    Some(p) => TrustedRoot::read(p).map_err(|e| e.to_string())?,
                    None => TrustedRoot::public_good(),
                };
                self.root.get_or_init(|| r)
            }
        };
        Ok(Some(Verifier::Keyless(Box::new(verification::Keyless {
            policy: IdentityPolicy {
                subject: Some(Matcher::Exact(identity.to_owned())),
                issuer: Some(Matcher::Exact(issuer.to_owned())),
                claims: Vec::new(),
            },
            root: root.clone(),
            options: opship_oci::cosign::sigstore::Options::default(),
        }))))
    }

    /// Where the keyless signature of `digest` went, when this release made one.
    pub(crate) fn keyless_location(&self, digest: &str) -> Option<String> {
        self.keyless_signed.borrow().get(digest).cloned()
    }

    fn session(&self) -> Result<&Session, String> {
        self.session
            .get()
            .ok_or_else(|| "the keyless session was not started".to_owned())
    }

    /// The public key, when its file exists (it does not before the default key is made).
    pub(crate) fn public(&self) -> Result<Option<&PublicKey>, String> {
        if self.keyless.is_some() {
            return Ok(None);
        }
        if let Some(k) = self.public.get() {
            return Ok(Some(k));
        }
        if !self.plan.public.exists() {
            return Ok(None);
        }
        let k = PublicKey::read(&self.plan.public).map_err(|e| e.to_string())?;
        Ok(Some(self.public.get_or_init(|| k)))
    }

    /// Starts decrypting the key on another thread, when there is a key file: [`Signer::sign`]
    /// and [`Signer::attest`] take the result (or its error) instead of decrypting.
    pub(crate) fn start_decrypting(&self) {
        if self.keyless.is_some() || self.private.get().is_some() || !self.plan.key.is_file() {
            return;
        }
        // The first use of the crypto library's random generator seeds it from CPU jitter
        // (aws-lc: tens of milliseconds, once per process). Drawn on a thread of its own, a
        // throwaway key makes that happen beside scrypt instead of after it, at the first
        // signature.
        let _ = std::thread::Builder::new()
            .name("seed-rng".into())
            .spawn(|| drop(PrivateKey::generate()));
        let plan = self.plan.clone();
        let password = self.password.clone();
        // Without a thread (the system refuses one) the key is decrypted when first needed.
        if let Ok(h) = std::thread::Builder::new()
            .name("decrypt-key".into())
            .spawn(move || decrypt(&plan, password.as_ref()))
        {
            *self.decrypting.borrow_mut() = Some(h);
        }
    }

    /// The private key when it is decrypted already (for work that runs beside the steps).
    pub(crate) fn decrypted(&self) -> Option<Arc<PrivateKey>> {
        self.private.get().cloned()
    }

    /// The decrypted private key (scrypt runs once per release).
    fn private(&self) -> Result<&PrivateKey, String> {
        if let Some(k) = self.private.get() {
            return Ok(k);
        }
        let started = self.decrypting.borrow_mut().take();
        let key = match started {
            Some(h) => h
                .join()
                .map_err(|_| "decrypting the signing key failed".to_owned())??,
            None => decrypt(&self.plan, self.password.as_ref())?,
        };
        Ok(self.private.get_or_init(|| Arc::new(key)))
    }

    /// Writes the default key: a random password (mode 0600) next to the key it opens, a
    /// `.gitignore` for both; never overwrites.
    pub(crate) fn generate(&self) -> Result<(), String> {
        let io = |e: &dyn std::fmt::Display| e.to_string();
        let pw_file = self
            .plan
            .password_file
            .as_ref()
            .ok_or("no password file for the generated key")?;
        if let Some(dir) = pw_file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(&e))?;
            let ignore = dir.join(".gitignore");
            // The one an older opship wrote lacks the temporaries: it is brought up to date;
            // a user's own is left alone.
            if !ignore.exists()
                || std::fs::read(&ignore).is_ok_and(|b| b == OLD_GITIGNORE.as_bytes())
            {
                opship_core::fsutil::write_atomic_with_mode(&ignore, GITIGNORE.as_bytes(), 0o644)
                    .map_err(|e| io(&e))?;
            }
        }
        if !pw_file.exists() {
            let mut bytes = [0u8; 24];
            std::io::Read::read_exact(
                &mut std::fs::File::open("/dev/urandom").map_err(|e| io(&e))?,
                &mut bytes,
            )
            .map_err(|e| io(&e))?;
            let pw: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            opship_core::fsutil::write_atomic_with_mode(
                pw_file,
                format!("{pw}\n").as_bytes(),
                0o600,
            )
            .map_err(|e| io(&e))?;
        }
        for f in [&self.plan.key, &self.plan.public] {
            if f.exists() {
                return Err(format!("{} exists; not overwriting it", s(f)));
            }
        }
        let password = Zeroizing::new(
            opship_core::input::read_string(pw_file, opship_core::input::Kind::Secret)
                .map_err(|e| format!("password file {e}"))?
                .lines()
                .next()
                .unwrap_or("")
                .to_owned(),
        );
        let key = PrivateKey::generate().map_err(|e| io(&e))?;
        let files = key.to_files(password.as_bytes()).map_err(|e| io(&e))?;
        opship_core::fsutil::write_atomic_with_mode(
            &self.plan.key,
            files.private_pem.as_bytes(),
            0o600,
        )
        .map_err(|e| io(&e))?;
        opship_core::fsutil::write_atomic_with_mode(
            &self.plan.public,
            files.public_pem.as_bytes(),
            0o644,
        )
        .map_err(|e| io(&e))?;
        let _ = self.private.set(Arc::new(key));
        Ok(())
    }

    /// Whether a signature by the release key (keyless: by the session's identity and
    /// issuer) for the subject's identity verifies: `None` when that cannot be known yet (no
    /// public key, or the image is not there). `pushed`: the release has just pushed the
    /// image, so it is not looked up first.
    pub(crate) async fn verified(
        &self,
        client: Option<&Registry>,
        subject: &Subject,
        pushed: bool,
    ) -> Result<Option<bool>, String> {
        match self.keyless_verifier().await? {
            Some(v) => verified_with(client, &v, subject, pushed).await,
            None => verified(client, self.public()?, subject, pushed).await,
        }
    }

    /// Signs the subject with `release=<version>`; the signature goes next to the image (the
    /// layout's or the registry's `.sig`).
    pub(crate) async fn sign(
        &self,
        client: Option<&Registry>,
        subject: &Subject,
        version: &str,
    ) -> Result<SignReport, String> {
        if self.keyless.is_some() {
            return self.sign_keyless(client, subject, version).await;
        }
        sign(self.private()?, client, subject, version).await
    }

    /// [`Signer::sign`] keylessly: in the format asked for, else the image's, else cosign 3's
    /// bundle. Everything (log entry, timestamp) is obtained before the registry is written.
    async fn sign_keyless(
        &self,
        client: Option<&Registry>,
        subject: &Subject,
        version: &str,
    ) -> Result<SignReport, String> {
        let session = self.session()?;
        let client = client.ok_or("keyless signing needs the registry")?;
        let reference = registry_reference(subject)?;
        let digest =
            opship_core::image::Digest::parse(&subject.digest).map_err(|e| e.to_string())?;
        let notes = BTreeMap::from([("release".to_owned(), version.to_owned())]);
        let format = self.format(client, &reference, &digest).await?;
        let report = signing::sign_keyless(
            client,
            &reference,
            &digest,
            session,
            &subject.identity,
            &notes,
            format,
        )
        .await
        .map_err(|e| e.to_string())?;
        self.keyless_signed
            .borrow_mut()
            .insert(subject.digest.clone(), report.location.clone());
        Ok(report)
    }

    /// The keyless format for an image: the one asked for, else its signatures', else cosign 3.
    async fn format(
        &self,
        client: &Registry,
        reference: &opship_oci::registry::Reference,
        digest: &opship_core::image::Digest,
    ) -> Result<signing::Format, String> {
        if let Some(f) = self.keyless.as_ref().and_then(|k| k.format) {
            return Ok(f);
        }
        Ok(signing::existing_format(client, reference, digest)
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or(signing::Format::Cosign3))
    }

    /// Whether an attestation by the release key (keyless: by the session's identity and
    /// issuer) of exactly this provenance (the same statement) for the subject verifies:
    /// `None` when that cannot be known yet (`pushed` as for [`Signer::verified`]).
    pub(crate) async fn attested(
        &self,
        client: &Registry,
        subject: &Subject,
        provenance: &Provenance,
        pushed: bool,
    ) -> Result<Option<bool>, String> {
        let verifier = match self.keyless_verifier().await? {
            Some(v) => v,
            None => match self.public()? {
                Some(key) => Verifier::Key(key.clone()),
                None => return Ok(None),
            },
        };
        let reference = registry_reference(subject)?;
        if !pushed
            && client
                .manifest_if_any(&reference)
                .await
                .map_err(|e| e.to_string())?
                .is_none()
        {
            return Ok(None);
        }
        let digest =
            opship_core::image::Digest::parse(&subject.digest).map_err(|e| e.to_string())?;
        let wanted: serde_json::Value = serde_json::from_slice(&attestation::statement(
            &signing::identity_of(&reference),
            &digest,
            &provenance.predicate(),
        ))
        .map_err(|e| e.to_string())?;
        let report = attestation::verify_with(client, &reference, &verifier, Some(PREDICATE_TYPE))
            .await
            .map_err(|e| e.to_string())?;
        Ok(Some(report.checked.iter().any(|c| {
            c.outcome.as_ref().is_ok_and(|st| st.json == wanted)
        })))
    }

    /// Attests the subject (in its registry) with the provenance, as a `.att` layer.
    pub(crate) async fn attest(
        &self,
        client: &Registry,
        subject: &Subject,
        provenance: &Provenance,
    ) -> Result<attestation::AttestReport, String> {
        let reference = registry_reference(subject)?;
        let digest =
            opship_core::image::Digest::parse(&subject.digest).map_err(|e| e.to_string())?;
        if self.keyless.is_some() {
            let format = match self.format(client, &reference, &digest).await? {
                signing::Format::Cosign2 => Format::Att,
                signing::Format::Cosign3 => Format::Bundle,
            };
            return attestation::attest_keyless(
                client,
                &reference,
                &digest,
                self.session()?,
                &provenance.predicate(),
                format,
            )
            .await
            .map_err(|e| e.to_string());
        }
        let key = self.private()?;
        attestation::attest(
            client,
            &reference,
            &digest,
            key,
            &provenance.predicate(),
            Format::Att,
        )
        .await
        .map_err(|e| e.to_string())
    }
}

/// `REPO@DIGEST` of a subject in a registry.
fn registry_reference(subject: &Subject) -> Result<opship_oci::registry::Reference, String> {
    match &subject.location {
        Location::Registry { repository } => {
            parse_reference(&format!("{repository}@{}", subject.digest)).map_err(|e| e.to_string())
        }
        Location::Layout { .. } => Err("attestations are written to registries only".into()),
    }
}

/// The release key decrypted with the password file's first line, else the given password.
fn decrypt(plan: &KeyPlan, password: Option<&Zeroizing<String>>) -> Result<PrivateKey, String> {
    let encrypted = EncryptedKey::read(&plan.key).map_err(|e| e.to_string())?;
    let password = match &plan.password_file {
        Some(f) => {
            let text = Zeroizing::new(
                opship_core::input::read_string(f, opship_core::input::Kind::Secret)
                    .map_err(|e| format!("password file {e}"))?,
            );
            Zeroizing::new(text.lines().next().unwrap_or("").to_owned())
        }
        None => password.cloned().ok_or(
            "no key password: set COSIGN_PASSWORD (empty for none) or `signing.passwordFile`",
        )?,
    };
    encrypted
        .decrypt(password.as_bytes())
        .map_err(|e| e.to_string())
}

/// Whether a signature by `key` for the subject's identity verifies (see
/// [`Signer::verified`]); free of the signer, for work that runs beside the steps.
pub(crate) async fn verified(
    client: Option<&Registry>,
    key: Option<&PublicKey>,
    subject: &Subject,
    pushed: bool,
) -> Result<Option<bool>, String> {
    match key {
        Some(key) => verified_with(client, &Verifier::Key(key.clone()), subject, pushed).await,
        None => Ok(None),
    }
}

/// [`verified`] with a key or keylessly.
async fn verified_with(
    client: Option<&Registry>,
    verifier: &Verifier,
    subject: &Subject,
    pushed: bool,
) -> Result<Option<bool>, String> {
    let policy = Policy {
        identity: Identity::Repository(subject.identity.clone()),
        annotations: BTreeMap::new(),
    };
    let report = match (&subject.location, client) {
        (Location::Layout { dir, tag }, _) => {
            if crate::check::layout_digest(dir, tag).as_deref() != Some(subject.digest.as_str()) {
                return Ok(None);
            }
            verification::verify_layout_with(dir, tag, verifier, &policy)
                .map_err(|e| e.to_string())?
        }
        (Location::Registry { repository }, Some(client)) => {
            let reference = parse_reference(&format!("{repository}@{}", subject.digest))
                .map_err(|e| e.to_string())?;
            if !pushed
                && client
                    .manifest_if_any(&reference)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_none()
            {
                return Ok(None);
            }
            verification::verify_remote_with(client, &reference, verifier, &policy)
                .await
                .map_err(|e| e.to_string())?
        }
        (Location::Registry { .. }, None) => return Err("no registry client".into()),
    };
    Ok(Some(!report.verified().is_empty()))
}

/// Signs the subject with `key` (see [`Signer::sign`]).
pub(crate) async fn sign(
    key: &PrivateKey,
    client: Option<&Registry>,
    subject: &Subject,
    version: &str,
) -> Result<SignReport, String> {
    let notes = BTreeMap::from([("release".to_owned(), version.to_owned())]);
    match (&subject.location, client) {
        (Location::Layout { dir, tag }, _) => {
            signing::sign_layout(dir, tag, key, &subject.identity, &notes)
                .map_err(|e| e.to_string())
        }
        (Location::Registry { repository }, Some(client)) => {
            let reference = parse_reference(&format!("{repository}@{}", subject.digest))
                .map_err(|e| e.to_string())?;
            let digest =
                opship_core::image::Digest::parse(&subject.digest).map_err(|e| e.to_string())?;
            let signature = signing::new_signature(key, &subject.identity, &digest, &notes)
                .map_err(|e| e.to_string())?;
            signing::push_signatures(client, &reference, &digest, vec![signature])
                .await
                .map_err(|e| e.to_string())
        }
        (Location::Registry { .. }, None) => Err("no registry client".into()),
    }
}

//! Where a release's artefacts go, from the config and the options: directories, layout tags,
//! repositories, catalog targets and the signing key; and the `opship` command line of each
//! step.

use std::path::{Path, PathBuf};

use opship_core::config::Project;

use crate::error::{Error, Result};
use crate::step::Step;

/// The plan of one release: its places and, as it is checked and run, its steps.
#[derive(Debug)]
pub struct Plan {
    /// The project.
    pub project: Project,
    /// The version released.
    pub version: String,
    /// Check only.
    pub dry_run: bool,
    /// Plain HTTP allowed.
    pub insecure: bool,
    /// `REGISTRY[/NAMESPACE]`, when images are pushed.
    pub registry: Option<String>,
    /// The bundle directory.
    pub bundle_dir: PathBuf,
    /// The OCI layout (`dist/oci`).
    pub layout: PathBuf,
    /// Tag of the bundle image in the layout (the version, `+` as `_`).
    pub bundle_tag: String,
    /// Repository of the bundle image (its identity for signatures and the catalog).
    pub bundle_repo: String,
    /// Repository of the catalog images.
    pub catalog_repo: String,
    /// Tag of images in registries: `v<version>`.
    pub remote_tag: String,
    /// The catalogs.
    pub catalogs: Vec<CatalogTarget>,
    /// Where charts go (`dist/charts`).
    pub chart_out: PathBuf,
    /// The signing key.
    pub key: KeyPlan,
    /// Keyless signing instead of the key (see [`crate::Options::keyless`]).
    pub keyless: Option<KeylessPlan>,
    /// The steps, in order, as checked and run.
    pub steps: Vec<Step>,
}

/// One catalog the release adds the bundle to.
#[derive(Debug, Clone)]
pub struct CatalogTarget {
    /// The `catalogs:` entry's name, none for the default `index/`.
    pub name: Option<String>,
    /// The catalog directory.
    pub dir: PathBuf,
    /// Tag of its image in the layout.
    pub layout_tag: String,
    /// Registry reference of its image, with a registry.
    pub remote: Option<String>,
}

impl CatalogTarget {
    /// The label in step ids: the target's name, else its directory.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| s(&self.dir))
    }
}

/// The signing key's files.
#[derive(Debug, Clone)]
pub struct KeyPlan {
    /// Encrypted private key.
    pub key: PathBuf,
    /// Public key (recognises signatures already made).
    pub public: PathBuf,
    /// File whose first line is the password.
    pub password_file: Option<PathBuf>,
    /// The default key, generated when missing.
    pub generated: bool,
}

/// Keyless signing: where the identity token comes from and which services sign.
#[derive(Debug, Clone)]
pub struct KeylessPlan {
    /// Where the token comes from, for the plan (never the token itself).
    pub token_source: String,
    /// `--identity-token` when it names a file (shown in the step commands).
    pub token_file: Option<PathBuf>,
    /// `--signing-config`.
    pub signing_config: Option<PathBuf>,
    /// The session's settings.
    pub options: opship_oci::cosign::keyless::Options,
    /// The signature format asked for.
    pub format: Option<opship_oci::cosign::signing::Format>,
    /// The trusted root the checks verify keyless signatures against: `--trusted-root`, else
    /// `trusted_root.json` beside the signing config; `None`: the public-good root.
    pub trusted_root: Option<PathBuf>,
}

impl KeylessPlan {
    /// Keyless signing when no key is configured, a registry is the target (keyless
    /// signatures are registry referrers or `.sig` manifests with certificates; a layout keeps
    /// the key) and a token source is there.
    fn of(options: &crate::Options<'_>, configured: bool, registry: bool) -> Result<Option<Self>> {
        // A token in the environment is ambient (every CI job with `id-token: write` has
        // one); `--identity-token` is asked for, so a release that cannot use it says why.
        let asked = if options.keyless.options.identity_token.is_some() {
            Some("--identity-token")
        } else if options.keyless.trusted_root.is_some() {
            Some("--trusted-root")
        } else {
            None
        };
        if let Some(flag) = asked
            && (configured || !registry)
        {
            return Err(Error::Config(if configured {
                format!(
                    "{flag} is for keyless signing, but a signing key is configured (--key or \
                     `signing:`): use one or the other"
                )
            } else {
                format!(
                    "{flag} is for keyless signing, which needs a registry (--registry or \
                     `registry:`): a release into the OCI layout only signs with a key"
                )
            }));
        }
        let k = &options.keyless.options;
        let flag = k.identity_token.as_deref();
        if configured || !registry || !k.env.available(flag) {
            return Ok(None);
        }
        let token_file = flag.map(PathBuf::from).filter(|p| p.is_file());
        let token_source = match (flag, &token_file) {
            (Some(_), Some(f)) => format!("--identity-token {}", s(f)),
            (Some(_), None) => "--identity-token".to_owned(),
            (None, _) if k.env.sigstore_id_token.is_some() => "SIGSTORE_ID_TOKEN".to_owned(),
            (None, _) => "GitHub Actions (ACTIONS_ID_TOKEN_REQUEST_URL)".to_owned(),
        };
        Ok(Some(KeylessPlan {
            token_source,
            token_file,
            signing_config: k.overrides.signing_config.clone(),
            options: k.clone(),
            format: options.keyless.format,
            // A signing config for other services than the public-good instance comes with
            // their root: cosign 3's TUF targets and the Sigstore stacks keep the two side by
            // side, as `trusted_root.json`.
            trusted_root: options.keyless.trusted_root.clone().or_else(|| {
                k.overrides
                    .signing_config
                    .as_ref()
                    .and_then(|c| c.parent())
                    .map(|d| d.join("trusted_root.json"))
                    .filter(|p| p.is_file())
            }),
        }))
    }
}

impl Plan {
    /// The places of a release of `options.version` of `project`.
    pub fn new(project: Project, options: &crate::Options<'_>) -> Result<Plan> {
        opship_core::bundle::parse_version(&options.version)
            .map_err(|e| Error::Config(e.to_string()))?;
        let c = &project.config;
        let registry = options
            .registry
            .clone()
            .or_else(|| c.registry.clone())
            .map(|r| r.trim_end_matches('/').to_owned())
            .filter(|r| !r.is_empty());
        if let Some(r) = &registry {
            opship_oci::batch::check_namespace(r).map_err(|e| Error::Config(e.to_string()))?;
        }
        let last = |repo: &Option<String>, fallback: String| {
            repo.as_deref()
                .and_then(|r| r.rsplit('/').next())
                .map(str::to_owned)
                .unwrap_or(fallback)
        };
        let bundle_name = last(&c.images.bundle, format!("{}-bundle", c.package));
        let catalog_name = last(&c.images.catalog, format!("{}-catalog", c.package));
        let (bundle_repo, catalog_repo) = match &registry {
            Some(ns) => (
                format!("{ns}/{bundle_name}"),
                format!("{ns}/{catalog_name}"),
            ),
            None => (
                c.images.bundle.clone().unwrap_or(bundle_name),
                c.images.catalog.clone().unwrap_or(catalog_name),
            ),
        };
        let tag = options.version.replace('+', "_");
        let remote_tag = format!("v{tag}");
        let targets: Vec<(Option<String>, PathBuf)> = if c.catalogs.is_empty() {
            vec![(None, project.resolve(Path::new("index")))]
        } else {
            c.catalogs
                .iter()
                .map(|t| (Some(t.name.clone()), project.resolve(&t.dir)))
                .collect()
        };
        let several = targets.len() > 1;
        let catalogs = targets
            .into_iter()
            .map(|(name, dir)| {
                let suffix = match (&name, several) {
                    (Some(n), true) => format!("{}-{tag}", n.replace(['/', ':', '+'], "_")),
                    _ => tag.clone(),
                };
                let remote_suffix = match (&name, several) {
                    (Some(n), true) => format!("{}-v{tag}", n.replace(['/', ':', '+'], "_")),
                    _ => remote_tag.clone(),
                };
                CatalogTarget {
                    layout_tag: format!("catalog-{suffix}"),
                    remote: registry
                        .as_ref()
                        .map(|_| format!("{catalog_repo}:{remote_suffix}")),
                    name,
                    dir,
                }
            })
            .collect();
        let chart_out = c
            .chart
            .as_ref()
            .and_then(|ch| ch.output.as_ref())
            .map(|o| project.resolve(o))
            .unwrap_or_else(|| project.resolve(Path::new("dist/charts")));
        let key = match (&options.key, &c.signing) {
            (Some(k), signing) => KeyPlan {
                public: k.with_extension("pub"),
                key: k.clone(),
                password_file: signing
                    .as_ref()
                    .and_then(|s| s.password_file.as_ref())
                    .map(|f| project.resolve(f)),
                generated: false,
            },
            (None, Some(sg)) => KeyPlan {
                key: project.resolve(&sg.key),
                public: sg
                    .public_key
                    .as_ref()
                    .map(|p| project.resolve(p))
                    .unwrap_or_else(|| project.resolve(&sg.key).with_extension("pub")),
                password_file: sg.password_file.as_ref().map(|f| project.resolve(f)),
                generated: false,
            },
            (None, None) => {
                let dir = project.resolve(Path::new(".opship"));
                KeyPlan {
                    key: dir.join("cosign.key"),
                    public: dir.join("cosign.pub"),
                    password_file: Some(dir.join("cosign.password")),
                    generated: true,
                }
            }
        };
        let keyless = KeylessPlan::of(options, !key.generated, registry.is_some())?;
        if !key.generated && !key.key.exists() {
            return Err(Error::Config(format!(
                "the signing key {} does not exist (`opship key generate` makes one; without \
                 --key and `signing:` a key is generated under .opship/)",
                s(&key.key)
            )));
        }
        if !key.generated && !key.public.exists() {
            return Err(Error::Config(format!(
                "the public key {} of {} is missing: it is needed to recognise signatures \
                 already made (set `signing.publicKey`)",
                s(&key.public),
                s(&key.key)
            )));
        }
        Ok(Plan {
            version: options.version.clone(),
            dry_run: options.dry_run,
            insecure: options.insecure,
            bundle_dir: project.bundle_dir(&options.version),
            layout: project.resolve(Path::new("dist/oci")),
            bundle_tag: tag,
            bundle_repo,
            catalog_repo,
            remote_tag,
            catalogs,
            chart_out,
            key,
            keyless,
            registry,
            project,
            steps: Vec::new(),
        })
    }

    /// How many steps the release has (checked and run or skipped): the bundle directory,
    /// its validation and image, with a registry its push; the key when the default one is
    /// made; the signature (and provenance attestation with a registry); per catalog its add,
    /// validation, image, push, signature and attestation; the chart's render and package,
    /// with a registry its push and signature.
    pub fn step_count(&self) -> usize {
        let registry = usize::from(self.registry.is_some());
        let key =
            usize::from(self.keyless.is_none() && self.key.generated && !self.key.key.exists());
        let catalog = |t: &CatalogTarget| 4 + 2 * usize::from(t.remote.is_some());
        3 + registry
            + key
            + 1
            + registry
            + self.catalogs.iter().map(catalog).sum::<usize>()
            + 2
            + 2 * registry
    }

    /// Files and directories the release may write, for the list of changed files.
    pub fn written_roots(&self) -> Vec<PathBuf> {
        let mut v = vec![
            self.bundle_dir.clone(),
            self.layout.clone(),
            self.chart_out.clone(),
            self.provenance_dir(),
            self.project.resolve(Path::new(".opship")),
        ];
        v.extend(self.catalogs.iter().map(|c| c.dir.clone()));
        v
    }

    /// `opship -c CONFIG ARGS…`: the command line of a step, as shown in the plan.
    pub fn command<S: AsRef<str>>(&self, args: &[S]) -> Vec<String> {
        let mut v = vec!["opship".to_owned(), "-c".to_owned(), s(&self.project.path)];
        v.extend(args.iter().map(|a| a.as_ref().to_owned()));
        v
    }

    /// `push LAYOUT:TAG REF [--insecure]`.
    pub fn push_command(&self, tag: &str, target: &str) -> Vec<String> {
        let mut v = vec![
            "push".to_owned(),
            format!("{}:{tag}", s(&self.layout)),
            target.to_owned(),
        ];
        if self.insecure {
            v.push("--insecure".to_owned());
        }
        self.command(&v)
    }

    /// `sign --key K [--password-file F] -a release=V --identity ID [--insecure] REF`.
    /// Keyless: `sign [--identity-token FILE] [--signing-config F] -a release=V …` (a token
    /// given as a value or by the environment is not shown).
    pub fn sign_command(&self, identity: &str, reference: &str) -> Vec<String> {
        let mut v: Vec<String> = vec!["sign".into()];
        self.signer_args(&mut v);
        v.extend([
            "-a".into(),
            format!("release={}", self.version),
            "--identity".into(),
            identity.to_owned(),
        ]);
        if self.insecure {
            v.push("--insecure".into());
        }
        v.push(reference.to_owned());
        self.command(&v)
    }

    /// `attest --key K [--password-file F] --type slsaprovenance1 --predicate FILE [--insecure]
    /// REF`.
    pub fn attest_command(&self, predicate: &Path, reference: &str) -> Vec<String> {
        let mut v: Vec<String> = vec!["attest".into()];
        self.signer_args(&mut v);
        v.extend([
            "--type".into(),
            "slsaprovenance1".into(),
            "--predicate".into(),
            s(predicate),
        ]);
        if self.insecure {
            v.push("--insecure".into());
        }
        v.push(reference.to_owned());
        self.command(&v)
    }

    /// The key's flags, or the keyless ones.
    fn signer_args(&self, v: &mut Vec<String>) {
        match &self.keyless {
            Some(k) => {
                if let Some(f) = &k.token_file {
                    v.extend(["--identity-token".into(), s(f)]);
                }
                if let Some(f) = &k.signing_config {
                    v.extend(["--signing-config".into(), s(f)]);
                }
                let o = &k.options.overrides;
                for (flag, url) in [
                    ("--fulcio-url", &o.fulcio),
                    ("--rekor-url", &o.rekor),
                    ("--timestamp-server-url", &o.tsa),
                ] {
                    if let Some(u) = url {
                        v.extend([flag.into(), u.clone()]);
                    }
                }
                match k.format {
                    Some(opship_oci::cosign::signing::Format::Cosign2) => {
                        v.extend(["--format".into(), "cosign2".into()])
                    }
                    Some(opship_oci::cosign::signing::Format::Cosign3) => {
                        v.extend(["--format".into(), "cosign3".into()])
                    }
                    None => {}
                }
            }
            None => {
                v.extend(["--key".into(), s(&self.key.key)]);
                if let Some(f) = &self.key.password_file {
                    v.extend(["--password-file".into(), s(f)]);
                }
            }
        }
    }

    /// What signs, for step descriptions: the key's file, or `keylessly (token from …)`.
    pub fn signer_text(&self) -> String {
        match &self.keyless {
            Some(k) => format!("keylessly (identity token from {})", k.token_source),
            None => format!("with {}", s(&self.key.key)),
        }
    }

    /// What a signing step reads to sign: the key file, or the identity token.
    pub fn signer_read(&self) -> String {
        match &self.keyless {
            Some(k) => format!("identity token ({})", k.token_source),
            None => s(&self.key.key),
        }
    }

    /// Where the provenance predicates are written (`dist/provenance`).
    pub fn provenance_dir(&self) -> PathBuf {
        self.project.resolve(Path::new("dist/provenance"))
    }

    /// Channels of the release: its own, else the project's, else `alpha`, as the bundle's.
    pub fn channels(&self) -> Vec<String> {
        self.project
            .release(&self.version)
            .and_then(|r| r.channels.clone())
            .filter(|c| !c.is_empty())
            .or_else(|| Some(self.project.config.channels.clone()).filter(|c| !c.is_empty()))
            .unwrap_or_else(|| vec!["alpha".to_owned()])
    }
}

/// A path as shown in the plan.
pub(crate) fn s(p: &Path) -> String {
    opship_core::paths::show(p).to_string()
}

//! Adopting an operator-sdk or kubebuilder project: what `make bundle` would run, read from the
//! project's `PROJECT`, Makefile, `config/manifests` and `config/manager`, as an `opship.yaml`
//! with which `opship generate bundle` writes the bundle operator-sdk would have written.
//! Every value says where it was found; what cannot be known is listed for the user to decide.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{Config, OperatorImage, Release};
use crate::error::{Error, Result};
use crate::yaml::{self, Origin};

/// What `init --from-operator-sdk` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The project directory (holds `PROJECT`).
    pub dir: PathBuf,
    /// The kustomization to build, relative to `dir` (default: what the Makefile's `bundle`
    /// recipe builds, else `config/manifests`).
    pub manifests: Option<PathBuf>,
    /// Variables as given on make's command line (`make bundle IMG=…`).
    pub make_vars: Vec<(String, String)>,
    /// The Makefile target that makes the bundle (default `bundle`).
    pub target: Option<String>,
    /// Let make run what its dry run forces (recipe lines marked `+` or holding `$(MAKE)`,
    /// rules that remake included makefiles), warning first; refused by default.
    pub run_make: bool,
}

/// One setting and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The `opship.yaml` key.
    pub key: String,
    /// Its value, as written.
    pub value: String,
    /// Where it was read (`Makefile:12 (VERSION)`, `PROJECT (projectName)`, a default).
    pub from: String,
}

/// The adopted config and what was learnt on the way.
#[derive(Debug, Clone)]
pub struct Adoption {
    /// The config.
    pub config: Config,
    /// Every setting with its source, in config order.
    pub found: Vec<Found>,
    /// What the user still has to decide or check.
    pub to_decide: Vec<String>,
}

/// kubebuilder's default `IMG`: the placeholder itself, i.e. no image chosen yet.
const DEFAULT_IMG: &str = "controller:latest";

/// The make variables the bundle recipe may not show, read from make's database.
const MAKE_VARIABLES: &[&str] = &[
    "BUNDLE_GEN_FLAGS",
    "VERSION",
    "IMG",
    "BUNDLE_IMG",
    "CATALOG_IMG",
    "IMAGE_TAG_BASE",
    "USE_IMAGE_DIGESTS",
];

/// A make variable's value (one shell word has its quotes removed, as the shell would:
/// `CHANNELS = "a,b"`) and where it was set (`Makefile:12 (VERSION)`, `--set VERSION`).
/// Without a Makefile, only the values given as on make's command line count.
fn variable(
    db: Option<&crate::make::Database>,
    make_vars: &[(String, String)],
    name: &str,
) -> Option<(String, String)> {
    match db {
        Some(db) => db.variables.get(name).map(|v| {
            let from = match &v.origin {
                crate::make::Origin::CommandLine => format!("--set {name}"),
                _ => format!("{} ({name})", v.location()),
            };
            (unquote(&v.value), from)
        }),
        None => make_vars
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| (unquote(v), format!("--set {name}"))),
    }
}

/// An image variable (`BUNDLE_IMG`, `IMAGE_TAG_BASE`) when it is a usable reference; one built
/// from variables make expands to nothing, or that is no reference, is left out and said so.
fn image_variable(
    db: Option<&crate::make::Database>,
    make_vars: &[(String, String)],
    name: &str,
    to_decide: &mut Vec<String>,
) -> Option<(String, String)> {
    let (value, from) = variable(db, make_vars, name)?;
    let undefined = db
        .and_then(|d| d.variables.get(name))
        .map(|v| v.undefined.clone())
        .unwrap_or_default();
    let probe = if name == "IMAGE_TAG_BASE" {
        format!("{value}:tag")
    } else {
        value.clone()
    };
    if value.is_empty() {
        return None;
    }
    if !undefined.is_empty() || check_reference(&probe, &from, &[]).is_err() {
        let why = if undefined.is_empty() {
            "is not an image reference".to_owned()
        } else {
            format!(
                "is built from {}, which make expands to nothing",
                unset_list(&undefined)
            )
        };
        to_decide.push(format!(
            "{from}: {name} `{value}` {why}; not used (give it as on make's command line: --set {name}=…)"
        ));
        return None;
    }
    Some((value, from))
}

/// A value as the shell reads one word: `"a,b"` is `a,b`. Several words stay as written.
fn unquote(value: &str) -> String {
    let t = value.trim();
    match crate::shell::split(t) {
        Ok(cmds) => match cmds.as_slice() {
            [c] if c.assignments.is_empty() && c.words.len() == 1 => c.words[0].clone(),
            [] => String::new(),
            _ => t.to_owned(),
        },
        Err(_) => t.to_owned(),
    }
}

/// `` `USER` (Makefile:24), `ORG` (Makefile:3) ``.
fn unset_list(undefined: &[(String, String)]) -> String {
    undefined
        .iter()
        .map(|(n, at)| format!("`{n}` ({at})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads the project in `req.dir`.
pub fn adopt(req: &Request) -> Result<Adoption> {
    let dir = &req.dir;
    let project_file = dir.join("PROJECT");
    let project = yaml::parse_one(
        &yaml::read_text_of(&project_file, crate::input::Kind::Config)?,
        &project_file,
    )?;
    if !project.value.is_object() {
        return Err(Error::invalid(
            Origin::file(&project_file),
            "PROJECT is not a mapping (kubebuilder writes `layout`, `projectName`, `resources`)",
        ));
    }
    let mut found = Vec::new();
    let mut to_decide = Vec::new();
    let makefile_path = dir.join("Makefile");
    if makefile_path.is_file() {
        // A Makefile past a configuration file's budget (a 10 MB line) is refused before make
        // runs on it.
        crate::input::read(&makefile_path, crate::input::Kind::Config)?;
    }
    let has_makefile = makefile_path.is_file();
    if !has_makefile {
        to_decide.push(format!(
            "{} not found: operator-sdk's defaults are used (channel alpha, the base CSV's version)",
            crate::paths::show(&makefile_path)
        ));
    }

    // Every make run goes through one guard: what it refused or ran is reported.
    let guard = crate::make::Guard::new(if req.run_make {
        crate::make::Recipes::Run
    } else {
        crate::make::Recipes::Refused
    })?;
    // What the bundle recipe runs, as the project's own make prints it.
    let recipe = if has_makefile {
        Some(Recipe::read(
            &guard,
            dir,
            req.target.as_deref().unwrap_or("bundle"),
            &req.make_vars,
        )?)
    } else {
        None
    };
    // A `bundle` that makes none while other targets do: the choice is the user's.
    if req.target.is_none()
        && let Some(r) = &recipe
        && r.flags.is_none()
    {
        let others: Vec<String> = bundle_targets(&guard, dir, &req.make_vars)
            .generating
            .into_iter()
            .filter(|t| t != "bundle")
            .collect();
        if !others.is_empty() {
            return Err(Error::Input(format!(
                "make's dry run of `bundle` runs no `operator-sdk generate bundle`, but these targets do: {}; choose one with --target",
                others.join(", ")
            )));
        }
    }
    // The variables the recipe does not show, as make holds them once the Makefile is read.
    let db = if has_makefile {
        let target = req.target.as_deref().unwrap_or("bundle");
        let db = crate::make::inspect(&guard, dir, MAKE_VARIABLES, &req.make_vars, Some(target))?;
        // Repeats of the recipe's notes are dropped with the others' at the end.
        to_decide.extend(db.missing.iter().map(|m| m.to_string()));
        Some(db)
    } else {
        None
    };
    let var = |name: &str| variable(db.as_ref(), &req.make_vars, name);
    // operator-sdk's flags: those of the recipe's `generate bundle` line, else BUNDLE_GEN_FLAGS.
    let flags = match recipe.as_ref().and_then(|r| r.flags.clone()) {
        Some(f) => f,
        None => match var("BUNDLE_GEN_FLAGS") {
            Some((text, from)) => GenFlags::parse(&text, &from),
            None => GenFlags::default(),
        },
    };
    for f in &flags.ignored {
        to_decide.push(match f.as_str() {
            "--manifests" => format!(
                "operator-sdk flag `{f}` writes only the manifests and keeps metadata/ as committed; opship writes both, with the package, channels and labels of the committed metadata/annotations.yaml"
            ),
            "--metadata" => format!(
                "operator-sdk flag `{f}` writes only metadata/ and keeps the manifests as committed; opship writes both"
            ),
            "--overwrite=false" => format!(
                "operator-sdk flag `{f}` keeps an existing metadata/annotations.yaml and bundle.Dockerfile; opship writes them, with the package, channels and labels of the committed metadata/annotations.yaml"
            ),
            "--input-dir" => format!(
                "operator-sdk flag `{f}` reads an existing bundle to update; opship generates the bundle whole from the manifests and is not given it"
            ),
            _ => format!("operator-sdk flag `{f}` has no opship equivalent and is not used"),
        });
    }
    // With a build piped in, operator-sdk reads no directory of manifests.
    let piped = recipe.as_ref().is_some_and(|r| r.build_dir.is_some());
    if piped {
        for (flag, v) in [
            ("--deploy-dir", &flags.deploy_dir),
            ("--crds-dir", &flags.crds_dir),
        ] {
            if let Some((d, at)) = v {
                to_decide.push(format!(
                    "{at}: operator-sdk reads no `{flag} {d}` when the manifests are piped in; neither does opship"
                ));
            }
        }
    }
    if let Some(r) = &recipe {
        to_decide.extend(r.notes.iter().cloned());
    }

    // Package: --package, else PROJECT's projectName (operator-sdk's default).
    let package = match &flags.package {
        Some((p, from)) => (p.clone(), from.clone()),
        None => match project.value["projectName"].as_str() {
            Some(n) => (n.to_owned(), "PROJECT (projectName)".to_owned()),
            None => {
                return Err(Error::invalid(
                    project.origin(""),
                    "PROJECT has no projectName, which operator-sdk uses as the package name",
                ));
            }
        },
    };
    if !crate::config::is_dns1123_label(&package.0) {
        return Err(Error::Input(format!(
            "{}: `{}` is not a valid OLM package name (DNS-1123 label)",
            package.1, package.0
        )));
    }
    found.push(Found {
        key: "package".into(),
        value: package.0.clone(),
        from: package.1.clone(),
    });

    // The kustomization and the image edit the bundle recipe runs.
    let project_root = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    // (the manifests and where they were found, whether they are a plain directory)
    let (manifests, plain_dir) = match (
        &req.manifests,
        recipe.as_ref().and_then(|r| r.build_dir.clone()),
    ) {
        (Some(m), _) => ((m.clone(), "--manifests".to_owned()), false),
        (None, Some((d, at))) => match in_project(dir, &project_root, &d) {
            Some(p) => ((p, format!("{at} (bundle recipe)")), false),
            None => {
                return Err(Error::Input(format!(
                    "{at}: the recipe builds {d}, outside the project; choose the kustomization with --manifests"
                )));
            }
        },
        // Nothing piped: operator-sdk reads `--deploy-dir` (and `--crds-dir`), plain
        // directories of manifests.
        (None, None) if let Some((d, at)) = flags.deploy_dir.clone() => {
            let Some(p) = in_project(dir, &project_root, &d) else {
                return Err(Error::Input(format!(
                    "{at}: the manifests directory {d} is outside the project; choose it with --manifests"
                )));
            };
            if let Some((c, c_at)) = &flags.crds_dir
                && !in_project(dir, &project_root, c).is_some_and(|c| c.starts_with(&p))
            {
                to_decide.push(format!(
                    "{c_at}: operator-sdk also reads the CRDs in {c}, outside {d}; opship reads one manifests directory: put them under it, or build both with a kustomization and set manifests"
                ));
            }
            ((p, at), true)
        }
        (None, None) => (
            (
                PathBuf::from("config/manifests"),
                "operator-sdk's layout".to_owned(),
            ),
            false,
        ),
    };
    let manifests_dir = dir.join(&manifests.0);
    if plain_dir && !manifests_dir.is_dir() {
        return Err(Error::Input(format!(
            "{}: the recipe's --deploy-dir is not a directory",
            crate::paths::show(&manifests_dir)
        )));
    }
    if !plain_dir && crate::kustomize::kustomization_file(&manifests_dir).is_none() {
        let subs = sub_kustomizations(&manifests_dir);
        let hint = if subs.is_empty() {
            String::new()
        } else {
            format!(
                "; these subdirectories are: {} (choose one with --manifests)",
                subs.join(", ")
            )
        };
        return Err(Error::Input(format!(
            "{} is not a kustomization (no kustomization.yaml){hint}",
            crate::paths::show(&manifests_dir)
        )));
    }
    found.push(Found {
        key: "manifests".into(),
        value: crate::paths::show(&manifests.0).to_string(),
        from: manifests.1,
    });

    // The base CSV: `<kustomize-dir>/bases/` (operator-sdk's `--kustomize-dir`), else next to
    // the manifests (kubebuilder keeps it in <manifests>/bases/).
    let base_dir = match &flags.kustomize_dir {
        Some((k, at)) => match in_project(dir, &project_root, k) {
            Some(p) => dir.join(p),
            None => {
                return Err(Error::Input(format!(
                    "{at}: --kustomize-dir {k} is outside the project"
                )));
            }
        },
        None => manifests_dir.clone(),
    };
    let base = find_base_csv(&base_dir, &package.0)?;
    let base_version = base
        .as_ref()
        .and_then(|(_, v)| v["spec"]["version"].as_str().map(str::to_owned))
        .filter(|v| v != "0.0.0");
    if let Some((path, _)) = &base {
        found.push(Found {
            key: "(base CSV)".into(),
            value: rel(dir, path),
            from: match &flags.kustomize_dir {
                Some((_, at)) => at.clone(),
                None => format!("next to {}", rel(dir, &manifests_dir)),
            },
        });
    }

    // Version: --version, else VERSION, else the base CSV's (operator-sdk's default).
    let version = match (&flags.version, var("VERSION"), base_version) {
        (Some(v), _, _) => Some(v.clone()),
        (None, Some(v), _) => Some(v),
        (None, None, Some(v)) => Some((v, "the base CSV's spec.version".into())),
        _ => None,
    };
    let version = match version {
        Some((v, from)) => match crate::bundle::parse_version(&v) {
            Ok(_) => {
                found.push(Found {
                    key: "releases[0].version".into(),
                    value: v.clone(),
                    from,
                });
                Some(v)
            }
            // A per-release value (`VERSION ?= main`, `""`): the release passes it.
            Err(e) => {
                to_decide.push(format!(
                    "{from}: the default version `{v}` is not a release version ({e}); pass --version to generate and release, as with operator-sdk"
                ));
                None
            }
        },
        None => {
            to_decide.push("no version found (no VERSION, no --version in the bundle recipe, base CSV at 0.0.0): add a release".into());
            None
        }
    };

    // Channels: operator-sdk's default is alpha; CHANNELS/DEFAULT_CHANNEL reach it through
    // BUNDLE_GEN_FLAGS.
    let channels = match &flags.channels {
        Some((c, from)) => (c.clone(), from.clone()),
        None => (
            vec!["alpha".to_owned()],
            "operator-sdk's default".to_owned(),
        ),
    };
    found.push(Found {
        key: "channels".into(),
        value: channels.0.join(","),
        from: channels.1,
    });
    let default_channel = flags.default_channel.clone().map(|(c, from)| {
        found.push(Found {
            key: "defaultChannel".into(),
            value: c.clone(),
            from,
        });
        c
    });

    // Operator image: IMG, unless it is kubebuilder's placeholder default; then the image
    // config/manager already maps the placeholder to.
    let placeholder = recipe
        .as_ref()
        .and_then(|r| r.set_image.as_ref())
        .map(|s| s.name.clone())
        .unwrap_or_else(|| "controller".to_owned());
    let set_image = recipe.as_ref().and_then(|r| r.set_image.clone());
    let img = match set_image.as_ref().map(|s| (s.image.clone(), s.at.clone())) {
        // The edit's image is IMG's value: said where IMG is set, and through which edit.
        Some((i, at)) => Some(match var("IMG") {
            Some((v, from)) if v == i => (
                i,
                format!("{from}, through the kustomize edit set image at {at}"),
            ),
            _ => (i, format!("{at} (kustomize edit set image)")),
        }),
        None => var("IMG"),
    }
    .filter(|(i, _)| i != DEFAULT_IMG && !i.is_empty());
    let manager_dir = set_image
        .as_ref()
        .map(|s| s.dir.clone())
        .unwrap_or_else(|| "config/manager".to_owned());
    let image = match img {
        Some(i) => Some(i),
        None => manager_image(&dir.join(&manager_dir), &placeholder)?,
    };
    // An upper-case placeholder (`IMG ?= REPLACE_IMAGE`) is no image chosen: the recipe's
    // edit writes it into the manifests as it is, and so does opship.
    let (image, placeholder_image) = match image {
        Some((i, from)) if crate::naming::is_image_placeholder(&i) => (None, Some((i, from))),
        other => (other, None),
    };
    let operator = match image {
        Some((reference, from)) => {
            let undefined = db
                .as_ref()
                .and_then(|d| d.variables.get("IMG"))
                .filter(|v| unquote(&v.value) == reference)
                .map(|v| v.undefined.clone())
                .unwrap_or_default();
            check_reference(&reference, &from, &undefined)?;
            if !undefined.is_empty() {
                to_decide.push(format!(
                    "{from}: the operator image `{reference}` is built from {}, which make expands to nothing: check it, or give IMG as on make's command line (--set IMG=<image>)",
                    unset_list(&undefined)
                ));
            }
            let (repo, tag) = crate::config::split_tag(&reference);
            let tag = tag.map(|t| match &version {
                Some(v) if t.contains(v.as_str()) => t.replace(v.as_str(), "{version}"),
                _ => t.to_owned(),
            });
            if tag.as_deref().is_some_and(|t| !t.contains("{version}")) {
                to_decide.push(format!(
                    "the operator image tag `{}` does not contain the version: every release gets the same image unless operator.tag is changed",
                    tag.as_deref().unwrap_or_default()
                ));
            }
            found.push(Found {
                key: "operator".into(),
                value: format!("{repo}:{}", tag.as_deref().unwrap_or("latest")),
                from,
            });
            Some(OperatorImage {
                image: repo.to_owned(),
                tag: Some(tag.unwrap_or_else(|| "latest".into())),
                placeholder: (placeholder != "controller").then_some(placeholder.clone()),
            })
        }
        None => {
            to_decide.push(match &placeholder_image {
                Some((i, from)) => format!(
                    "{from}: the operator image `{i}` is a placeholder, which the recipe writes into the manifests as it is for a later step to replace; so does opship (the bundle carries `{i}`, which validate reports as no image reference until it is replaced). To have opship write the release's image there, set operator.image, with operator.placeholder: {}",
                    crate::config::split_tag(i).0
                ),
                None => format!(
                    "no operator image: IMG is {DEFAULT_IMG} and {manager_dir} maps `{placeholder}` to nothing; set operator.image (or pass --operator-image)"
                ),
            });
            None
        }
    };

    // Image repositories of the release, as the Makefile names them.
    let mut images = crate::config::Images::default();
    for (key, var_name, suffix) in [
        ("bundle", "BUNDLE_IMG", "-bundle"),
        ("catalog", "CATALOG_IMG", "-catalog"),
    ] {
        let value = match image_variable(db.as_ref(), &req.make_vars, var_name, &mut to_decide) {
            Some((i, from)) => Some((crate::config::split_tag(&i).0.to_owned(), from)),
            None => image_variable(
                db.as_ref(),
                &req.make_vars,
                "IMAGE_TAG_BASE",
                &mut to_decide,
            )
            .map(|(b, from)| (format!("{b}{suffix}"), from)),
        };
        if let Some((repo, from)) = value {
            found.push(Found {
                key: format!("images.{key}"),
                value: repo.clone(),
                from,
            });
            if key == "bundle" {
                images.bundle = Some(repo);
            } else {
                images.catalog = Some(repo);
            }
        }
    }

    // The accounts whose RBAC operator-sdk folds into the CSV beside the deployments' own.
    let extra_service_accounts = match &flags.extra_service_accounts {
        Some((names, from)) if !names.is_empty() => {
            found.push(Found {
                key: "extraServiceAccounts".into(),
                value: names.join(","),
                from: from.clone(),
            });
            names.clone()
        }
        _ => Vec::new(),
    };
    let use_digests = flags.use_image_digests.is_some()
        || var("USE_IMAGE_DIGESTS").is_some_and(|(v, _)| v == "true");
    let bundle_dir = flags
        .output_dir
        .clone()
        .map(|(d, _)| d)
        .unwrap_or_else(|| "bundle".to_owned());
    found.push(Found {
        key: "bundleDir".into(),
        value: bundle_dir.clone(),
        from: if flags.output_dir.is_some() {
            flags.output_dir.clone().map(|(_, f)| f).unwrap_or_default()
        } else {
            "operator-sdk's default".into()
        },
    });
    to_decide.push(format!(
        "bundleDir is `{bundle_dir}` (operator-sdk's single bundle, replaced on every release); `bundle/{{version}}` keeps one per version"
    ));

    // The recipe's `kustomize edit`s, run on a copy before every build.
    let mut kustomize_edits = Vec::new();
    let reached = crate::kustomize::reached(&manifests_dir)?;
    for e in recipe.iter().flat_map(|r| &r.edits) {
        // An edit of a kustomization the build does not read (one the recipe builds after
        // generation) changes nothing opship generates.
        let edited = std::fs::canonicalize(dir.join(&e.dir));
        if !edited.as_ref().is_ok_and(|d| reached.contains(d)) {
            to_decide.push(format!(
                "{}: the recipe runs `kustomize edit {}` in {}, which the build of {} does not read; opship does not run it",
                e.at,
                e.args.join(" "),
                e.dir,
                crate::paths::show(&manifests.0)
            ));
            continue;
        }
        let Some(d) = in_project(dir, &project_root, &e.dir) else {
            return Err(Error::Input(format!(
                "{}: the recipe runs `kustomize edit {}` in {}, outside the project",
                e.at,
                e.args.join(" "),
                e.dir
            )));
        };
        found.push(Found {
            key: "kustomizeEdits".into(),
            value: format!(
                "{}: kustomize edit {}",
                crate::paths::show(&d),
                e.args.join(" ")
            ),
            from: e.at.clone(),
        });
        // An image tag holding the version follows the release, as the recipe's `$(VERSION)`.
        let args = e
            .args
            .iter()
            .map(|a| match (&version, a.split_once('=')) {
                (Some(v), Some((name, image))) if e.args.get(1).is_some_and(|x| x == "image") => {
                    let (repo, tag) = crate::config::split_tag(image);
                    match tag {
                        Some(t) if t.contains(v.as_str()) => {
                            format!("{name}={repo}:{}", t.replace(v.as_str(), "{version}"))
                        }
                        _ => a.clone(),
                    }
                }
                _ => a.clone(),
            })
            .collect();
        kustomize_edits.push(crate::config::KustomizeEdit { dir: d, args });
    }
    let resolved_edits: Vec<_> = kustomize_edits
        .iter()
        .map(|e| crate::config::KustomizeEdit {
            dir: dir.join(&e.dir),
            args: e
                .args
                .iter()
                .map(|a| a.replace("{version}", version.as_deref().unwrap_or_default()))
                .collect(),
        })
        .collect();

    // Kinds operator-sdk drops without a word and opship refuses: excluded, and said so.
    let mut exclude_kinds = vec!["Namespace".to_owned()];
    let mut csv_base = None;
    let mut envsubst = None;
    {
        // A build that fails here fails `generate` too: said now, with kustomize's message.
        // As `generate` builds it: the placeholder is kept only for an operator image to
        // replace.
        let objects = crate::manifest::load_with(
            &crate::manifest::Source::Path(manifests_dir.clone()),
            operator.as_ref().map(|_| placeholder.as_str()),
            &resolved_edits,
            None,
        )?;
        // A base CSV the kustomization does not include is given as csvBase.
        if !objects.iter().any(|o| o.kind() == "ClusterServiceVersion")
            && let Some((path, _)) = &base
        {
            let r = rel(dir, path);
            found.push(Found {
                key: "csvBase".into(),
                value: r.clone(),
                from: format!("{} does not include it", rel(dir, &manifests_dir)),
            });
            csv_base = Some(PathBuf::from(r));
        }
        // `| envsubst |`: the variables the build refers to, with the release's values where
        // the release has them (its operator image and version), else make's.
        if let Some(at) = recipe.as_ref().and_then(|r| r.envsubst.clone()) {
            let mut vars = std::collections::BTreeMap::new();
            let names = envsubst_references(&objects);
            // The values make gives the variables the build refers to.
            let asked: Vec<&str> = names
                .iter()
                .map(String::as_str)
                .filter(|n| !["IMG", "VERSION"].contains(n))
                .collect();
            let values = if has_makefile && !asked.is_empty() {
                Some(crate::make::inspect(
                    &guard,
                    dir,
                    &asked,
                    &req.make_vars,
                    Some(req.target.as_deref().unwrap_or("bundle")),
                )?)
            } else {
                None
            };
            for name in names {
                let value = match name.as_str() {
                    "IMG" if operator.is_some() => Some("{operatorImage}".to_owned()),
                    "VERSION" => Some("{version}".to_owned()),
                    _ => variable(values.as_ref(), &req.make_vars, &name).map(|(v, _)| v),
                };
                match value {
                    Some(v) => {
                        found.push(Found {
                            key: format!("envsubst.{name}"),
                            value: v.clone(),
                            from: at.clone(),
                        });
                        vars.insert(name, v);
                    }
                    None => to_decide.push(format!(
                        "{at}: the build refers to `${{{name}}}`, which opship could not read from the Makefile; envsubst makes it empty unless envsubst.{name} is set"
                    )),
                }
            }
            envsubst = Some(vars);
        }
        for k in crate::bundle::refused_kinds(&objects, &exclude_kinds) {
            to_decide.push(format!(
                "{} objects in the build cannot be in a bundle (operator-sdk drops them silently); listed under excludeKinds",
                k
            ));
            exclude_kinds.push(k);
        }
    }

    let releases = version
        .map(|v| {
            let base_csv = base.as_ref().map(|(_, b)| b);
            vec![Release {
                version: v,
                replaces: base_csv
                    .and_then(|b| b["spec"]["replaces"].as_str())
                    .map(str::to_owned),
                skips: base_csv
                    .and_then(|b| b["spec"]["skips"].as_array())
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| s.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                ..Release::default()
            }]
        })
        .unwrap_or_default();

    // `generate bundle --manifests` alone keeps metadata/ as committed: its package, channels
    // and extra labels are what the bundle ships with.
    let package = package.0;
    let mut channels = channels.0;
    let mut default_channel = default_channel;
    let mut labels = std::collections::BTreeMap::new();
    if (flags.names("--manifests") && !flags.names("--metadata"))
        || flags.names("--overwrite=false")
    {
        let path = dir.join(&bundle_dir).join("metadata/annotations.yaml");
        if let Some(kept) = committed_metadata(&path)? {
            let by = if flags.names("--overwrite=false") {
                "--overwrite=false"
            } else {
                "--manifests"
            };
            let from = format!("{} (kept by {by})", rel(dir, &path));
            let mut set = |key: &str, value: String| {
                found.retain(|f| f.key != key);
                found.push(Found {
                    key: key.into(),
                    value,
                    from: from.clone(),
                });
            };
            // The CSV is named after the package (operator-sdk's `--package`): a different
            // package in the kept metadata is a mismatch opship does not copy.
            if let Some(p) = kept.package.filter(|p| *p != package) {
                to_decide.push(format!(
                    "{from} names the package `{p}`, but the CSV is generated as package `{package}` (operator-sdk's --package): opship writes `{package}` in both; set package (and the base CSV's name) to choose"
                ));
            }
            if let Some(c) = kept.channels {
                set("channels", c.join(","));
                channels = c;
            }
            if let Some(d) = kept.default_channel {
                set("defaultChannel", d.clone());
                default_channel = Some(d);
            }
            for (k, v) in kept.labels {
                set(&format!("labels.{k}"), v.clone());
                labels.insert(k, v);
            }
        }
    }

    // Said once the committed metadata kept by `--manifests` had its say: it may name one.
    if default_channel.is_none() {
        to_decide.push(
            "no default channel (operator-sdk sets one only with --default-channel): set defaultChannel if the package needs one".into(),
        );
    }

    // The recipe's sed/yq edits that opship has a setting for.
    let mut releases = releases;
    let mut display_name = None;
    let mut csv_annotations = std::collections::BTreeMap::new();
    let mut extra_manifests: Vec<PathBuf> = Vec::new();
    for (key, value, at) in recipe.iter().flat_map(|r| &r.settings) {
        let from = format!("{at} (the recipe's edit)");
        let release = releases.first_mut();
        match (key.as_str(), release) {
            ("displayName", _) => display_name = Some(value.clone()),
            ("extraManifests", _) => {
                let file = in_project(dir, &project_root, value)
                    .filter(|p| dir.join(p).is_file() && !p.starts_with(&bundle_dir));
                match file {
                    Some(p) if !extra_manifests.contains(&p) => {
                        found.push(Found {
                            key: "extraManifests".into(),
                            value: crate::paths::show(&p).to_string(),
                            from,
                        });
                        extra_manifests.push(p);
                    }
                    Some(_) => {}
                    None => to_decide.push(format!(
                        "{at}: the recipe copies `{value}` into the bundle's manifests/; it is not a file of the project (made by an earlier command?), so it is not in extraManifests"
                    )),
                }
                continue;
            }
            (k, _) if k.starts_with("csvAnnotations.") => {
                csv_annotations.insert(k["csvAnnotations.".len()..].to_owned(), value.clone());
            }
            ("replaces", Some(r)) => r.replaces = Some(value.clone()),
            ("skipRange", Some(r)) => r.skip_range = Some(value.clone()),
            (k, _) if k.starts_with("labels.") => {
                labels.insert(k["labels.".len()..].to_owned(), value.clone());
            }
            _ => {
                to_decide.push(format!(
                    "{at}: the recipe sets {key} to `{value}`; no release version was found to put it on"
                ));
                continue;
            }
        }
        let shown = match key.as_str() {
            "replaces" | "skipRange" => format!("releases[0].{key}"),
            k => k.to_owned(),
        };
        found.retain(|f| f.key != shown);
        found.push(Found {
            key: shown,
            value: value.clone(),
            from,
        });
    }

    // The recipe's literal replacements in the CSV; the version in a replacement follows the
    // release.
    let mut csv_substitutions = Vec::new();
    for (from_text, to, at) in recipe.iter().flat_map(|r| &r.substitutions) {
        let to = match releases.first() {
            Some(r) if !r.version.is_empty() => to.replace(r.version.as_str(), "{version}"),
            _ => to.clone(),
        };
        found.push(Found {
            key: "csvSubstitutions".into(),
            value: format!("`{from_text}` → `{to}`"),
            from: format!("{at} (the recipe's edit)"),
        });
        csv_substitutions.push(crate::config::Substitution {
            from: from_text.clone(),
            to,
        });
    }
    if has_makefile {
        to_decide.extend(guard.evaluated(dir));
        let ran = guard.seen();
        if req.run_make && !ran.is_empty() {
            to_decide.push(format!(
                "make ran, with --run-make: {}",
                ran.iter()
                    .map(|c| format!("`{}`", first_line(c)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    // The same note can come from the recipe's dry run and from make's database.
    let mut seen = std::collections::HashSet::new();
    to_decide.retain(|n| seen.insert(n.clone()));
    let config = Config {
        package,
        channels,
        default_channel,
        labels,
        operator,
        manifests: Some(manifests.0),
        kustomize_edits,
        envsubst,
        csv_base,
        display_name,
        csv_annotations,
        extra_manifests,
        csv_substitutions,
        bundle_dir: Some(bundle_dir),
        images,
        exclude_kinds: Some(exclude_kinds),
        releases,
        use_image_digests: use_digests,
        extra_service_accounts,
        ..Config::default()
    };
    Ok(Adoption {
        config,
        found,
        to_decide,
    })
}

/// The operator-sdk flags of the recipe's `generate bundle` line opship has an equivalent for.
#[derive(Debug, Default, Clone)]
struct GenFlags {
    version: Option<(String, String)>,
    channels: Option<(Vec<String>, String)>,
    default_channel: Option<(String, String)>,
    package: Option<(String, String)>,
    output_dir: Option<(String, String)>,
    use_image_digests: Option<String>,
    extra_service_accounts: Option<(Vec<String>, String)>,
    /// `--kustomize-dir`: where operator-sdk looks for `bases/<package>.clusterserviceversion.yaml`.
    kustomize_dir: Option<(String, String)>,
    /// `--deploy-dir`, `--crds-dir`: the manifests when none are piped in.
    deploy_dir: Option<(String, String)>,
    crds_dir: Option<(String, String)>,
    ignored: Vec<String>,
}

impl GenFlags {
    /// Whether the line has `flag`, one of those opship names rather than follows.
    fn names(&self, flag: &str) -> bool {
        self.ignored.iter().any(|f| f == flag)
    }

    /// Flags in a make variable's value: split as the shell splits the command line.
    fn parse(text: &str, from: &str) -> GenFlags {
        let words: Vec<String> = match crate::shell::split(text) {
            Ok(c) => c.into_iter().flat_map(|c| c.words).collect(),
            Err(_) => text.split_whitespace().map(str::to_owned).collect(),
        };
        GenFlags::from_words(&words, from)
    }

    /// Flags as the shell gives them to operator-sdk.
    fn from_words(words: &[String], from: &str) -> GenFlags {
        let mut g = GenFlags::default();
        let mut i = 0;
        while i < words.len() {
            let w = words[i].as_str();
            let (name, inline) = match w.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (w, None),
            };
            let takes_value = matches!(
                name,
                "--version"
                    | "-v"
                    | "--channels"
                    | "--default-channel"
                    | "--package"
                    | "--output-dir"
                    | "--manifests-dir"
                    | "--input-dir"
                    | "--kustomize-dir"
                    | "--deploy-dir"
                    | "--crds-dir"
                    | "--extra-service-accounts"
            );
            let value = if takes_value && inline.is_none() {
                i += 1;
                words.get(i).cloned()
            } else {
                inline
            };
            let src = format!("{from}: {name}");
            match (name, value) {
                ("--version" | "-v", Some(v)) => g.version = Some((v, src)),
                ("--channels", Some(v)) => {
                    g.channels = Some((v.split(',').map(str::to_owned).collect(), src));
                }
                ("--default-channel", Some(v)) => g.default_channel = Some((v, src)),
                ("--package", Some(v)) => g.package = Some((v, src)),
                ("--output-dir", Some(v)) => g.output_dir = Some((v, src)),
                ("--kustomize-dir", Some(v)) => g.kustomize_dir = Some((v, src)),
                ("--deploy-dir", Some(v)) => g.deploy_dir = Some((v, src)),
                ("--crds-dir", Some(v)) => g.crds_dir = Some((v, src)),
                ("--use-image-digests", _) => g.use_image_digests = Some(src),
                ("--extra-service-accounts", Some(v)) => {
                    let names = v
                        .split(',')
                        .map(str::trim)
                        .filter(|n| !n.is_empty())
                        .map(str::to_owned)
                        .collect();
                    g.extra_service_accounts = Some((names, src));
                }
                // `--overwrite=false` keeps an existing metadata/ and bundle.Dockerfile.
                ("--overwrite", Some(v)) if v == "false" => {
                    g.ignored.push("--overwrite=false".to_owned());
                }
                ("-q" | "--quiet" | "--overwrite", _) => {}
                (n @ ("--manifests" | "--metadata"), _) => g.ignored.push(n.to_owned()),
                (n, _) => g.ignored.push(n.to_owned()),
            }
            i += 1;
        }
        g
    }
}

/// One `kustomize edit set image NAME=IMAGE` of the recipe.
#[derive(Debug, Clone)]
struct SetImage {
    name: String,
    image: String,
    /// The directory it runs in (`cd DIR && …`).
    dir: String,
    /// `Makefile:LINE`.
    at: String,
}

/// What a `sed -i` or `yq -i` command of the recipe sets, when opship has a setting for it:
/// `sed -i 's|olm.skipRange: .*|olm.skipRange: V|' CSV`, `sed -i '/version: X/ a\  replaces:
/// V' CSV`, `sed -i 's/K: .*/K: V/' …/annotations.yaml` (a bundle label), `yq -i
/// '.spec.replaces = "V"' CSV`, `sed -i 's|displayName: A|displayName: B|' CSV` and `yq -i
/// '.spec.displayName = "B"' CSV` (the display name), `yq -i '.metadata.annotations."K" = "V"'
/// CSV` and `sed -i 's|P/K: .*|P/K: V|' CSV` (an annotation of the CSV). Anything else is `None`
/// (the command stays listed).
fn setting_edit(words: &[String]) -> Option<(String, String)> {
    let program = words.first()?.rsplit('/').next()?;
    let file = words.last()?;
    let csv = file.ends_with(".clusterserviceversion.yaml");
    let annotations = file.ends_with("metadata/annotations.yaml");
    // sed's forms, and yq's `--inplace`.
    if !(csv || annotations) || !words.iter().any(|w| sed_in_place(w) || w == "--inplace") {
        return None;
    }
    let unquote = |v: &str| v.trim().trim_matches(|c| c == '\'' || c == '"').to_owned();
    let expr = words[1..words.len() - 1]
        .iter()
        .find(|w| !w.is_empty() && !w.starts_with('-'))?
        .trim();
    match program {
        "sed" | "gsed" => {
            // `/PATTERN/ a\  replaces: V`: a line appended to the CSV.
            if let Some((_, line)) = expr.split_once(" a\\") {
                let (k, v) = line.trim().split_once(':')?;
                return (csv && k.trim() == "replaces").then(|| ("replaces".into(), unquote(v)));
            }
            // `sDPATDREPD[flags]` whose replacement is a whole `KEY: VALUE`.
            let mut chars = expr.chars();
            if chars.next()? != 's' {
                return None;
            }
            let d = chars.next()?;
            let parts: Vec<&str> = expr[1 + d.len_utf8()..].split(d).collect();
            if parts.len() != 3
                || !parts[2]
                    .trim_end_matches(';')
                    .chars()
                    .all(|c| "gI".contains(c))
            {
                return None;
            }
            let (k, v) = parts[1].split_once(": ")?;
            let key = k.trim();
            if !parts[0].trim_start().starts_with(key) || v.contains('\\') || v.contains('&') {
                return None;
            }
            match (key, csv) {
                ("olm.skipRange", true) => Some(("skipRange".into(), unquote(v))),
                ("displayName", true) => Some(("displayName".into(), unquote(v))),
                ("replaces", true) => Some(("replaces".into(), unquote(v))),
                // A prefixed key (`operators.openshift.io/valid-subscription`) is an annotation.
                (k, true)
                    if k.contains('/') && crate::naming::qualified_name_problem(k).is_none() =>
                {
                    Some((format!("csvAnnotations.{k}"), unquote(v)))
                }
                (k, false)
                    if k.contains('.') && !k.starts_with("operators.operatorframework.io.") =>
                {
                    Some((format!("labels.{k}"), unquote(v)))
                }
                _ => None,
            }
        }
        "yq" => {
            let (path, v) = expr.split_once('=')?;
            // `|=` and `+=` compute from the old value: not a setting.
            if path.ends_with(['|', '+', '-', '*', '/']) {
                return None;
            }
            // yq's string literal: JSON's escapes (`"[\"A\", \"B\"]"`).
            let v = v.trim();
            let v = if v.starts_with('"') {
                serde_json::from_str::<String>(v).ok()?
            } else {
                unquote(v)
            };
            match (path.trim(), csv) {
                (".spec.replaces", true) => Some(("replaces".into(), v)),
                (".spec.displayName", true) => Some(("displayName".into(), v)),
                (".metadata.annotations.\"olm.skipRange\"", true) => Some(("skipRange".into(), v)),
                (p, true) => {
                    let key = p.strip_prefix(".metadata.annotations")?;
                    let key = match key.strip_prefix('.') {
                        Some(k) if k.starts_with('"') => serde_json::from_str::<String>(k).ok()?,
                        Some(k) => k.to_owned(),
                        None => {
                            let k = key.strip_prefix('[')?.strip_suffix(']')?;
                            serde_json::from_str::<String>(k).ok()?
                        }
                    };
                    crate::naming::qualified_name_problem(&key)
                        .is_none()
                        .then(|| (format!("csvAnnotations.{key}"), v))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The replacements of `sed -i [-E] [-e] 's/LITERAL/TEXT/g' …CSV` when every expression is
/// a global substitution of literal text by literal text (what `csvSubstitutions` does);
/// anything that uses a pattern, the match (`&`, `\1`) or other flags is `None`.
fn substitution_edit(words: &[String]) -> Option<Vec<(String, String)>> {
    let (program, rest) = words.split_first()?;
    if !matches!(program.rsplit('/').next(), Some("sed" | "gsed")) {
        return None;
    }
    let (file, rest) = rest.split_last()?;
    if !file.ends_with(".clusterserviceversion.yaml") {
        return None;
    }
    let mut in_place = false;
    let mut extended = false;
    let mut scripts = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let w = rest[i].as_str();
        match w {
            "-e" | "--expression" => {
                i += 1;
                scripts.push(rest.get(i)?.clone());
            }
            "-E" | "-r" | "--regexp-extended" => extended = true,
            w if sed_in_place(w) => in_place = true,
            w if w.starts_with('-') => return None,
            w if scripts.is_empty() => scripts.push(w.to_owned()),
            // A second file.
            _ => return None,
        }
        i += 1;
    }
    if !in_place || scripts.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for script in scripts {
        let script = script.trim().trim_end_matches(';');
        let mut chars = script.chars();
        if chars.next()? != 's' {
            return None;
        }
        let delim = chars.next()?;
        if delim == '\\' || delim == '\n' {
            return None;
        }
        // The three parts, a `\`-escaped delimiter kept escaped for the part's own reading.
        let mut parts = vec![String::new()];
        let mut escaped = false;
        for c in chars {
            if escaped {
                parts.last_mut()?.push('\\');
                parts.last_mut()?.push(c);
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == delim {
                parts.push(String::new());
            } else {
                parts.last_mut()?.push(c);
            }
        }
        let [pattern, replacement, flags] = parts.as_slice() else {
            return None;
        };
        if escaped || flags != "g" {
            return None;
        }
        out.push((
            sed_literal(pattern, extended, delim)?,
            sed_replacement(replacement, delim)?,
        ));
    }
    Some(out)
}

/// sed's in-place flag: `-i`, `-iSUFFIX`, `--in-place`, `--in-place=SUFFIX`.
fn sed_in_place(w: &str) -> bool {
    w.starts_with("-i") || w == "--in-place" || w.starts_with("--in-place=")
}

/// A sed pattern that matches only itself, as that text; `None` when it is a pattern.
fn sed_literal(pattern: &str, extended: bool, delim: char) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            let n = *chars.get(i + 1)?;
            if ".*[]^$\\/".contains(n) || n == delim || (extended && "()|+?{}".contains(n)) {
                out.push(n);
                i += 2;
                continue;
            }
            return None;
        }
        let special = match c {
            '.' | '*' | '[' | ']' => true,
            '^' => i == 0,
            '$' => i + 1 == chars.len(),
            '(' | ')' | '|' | '+' | '?' | '{' | '}' => extended,
            _ => false,
        };
        if special {
            return None;
        }
        out.push(c);
        i += 1;
    }
    (!out.is_empty()).then_some(out)
}

/// A sed replacement that is only text (no `&`, no `\1`, no `\n`).
fn sed_replacement(text: &str, delim: char) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '&' => return None,
            '\\' => {
                let n = chars.next()?;
                if n == '&' || n == '\\' || n == '/' || n == delim {
                    out.push(n);
                } else {
                    return None;
                }
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// The files of `cp [-f|-p|-v…] FILE… DEST` whose DEST is a bundle's `manifests/` directory
/// (`bundle/manifests`, `bundle/manifests/`), or `manifests/NAME` with NAME the one file's own
/// name. Globs, directories (`-r`) and renames are not read.
fn copied_into_manifests(words: &[String]) -> Option<Vec<String>> {
    let (program, rest) = words.split_first()?;
    if program.rsplit('/').next() != Some("cp") {
        return None;
    }
    let mut files = Vec::new();
    for w in rest {
        if let Some(flags) = w.strip_prefix('-') {
            // Flags that still copy one file to one file as it is.
            if flags.is_empty() || !flags.chars().all(|c| "fpvn".contains(c)) {
                return None;
            }
        } else {
            files.push(w.clone());
        }
    }
    let dest = files.pop()?;
    if files.is_empty() || files.iter().any(|f| f.contains(['*', '?', '[', '$', '`'])) {
        return None;
    }
    let dest = dest.trim_end_matches('/');
    let is_dir = |d: &str| d == "manifests" || d.ends_with("/manifests");
    if is_dir(dest) && !dest.starts_with("config/") && !dest.contains("/config/") {
        return Some(files);
    }
    // `cp F bundle/manifests/F`: the same name.
    let (parent, name) = dest.rsplit_once('/')?;
    let [only] = files.as_slice() else {
        return None;
    };
    (is_dir(parent) && only.rsplit('/').next() == Some(name)).then_some(files)
}

/// The names of the variables `envsubst` would replace in the objects: `$NAME` and `${NAME}`.
fn envsubst_references(objects: &[crate::manifest::Object]) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for o in objects {
        let text = o.value().to_string();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'$' {
                let braced = b.get(i + 1) == Some(&b'{');
                let start = i + 1 + usize::from(braced);
                let mut end = start;
                while end < b.len()
                    && (b[end].is_ascii_alphanumeric() || b[end] == b'_')
                    && !(end == start && b[end].is_ascii_digit())
                {
                    end += 1;
                }
                if end > start && (!braced || b.get(end) == Some(&b'}')) {
                    names.insert(text[start..end].to_owned());
                }
                i = end.max(i + 1);
            } else {
                i += 1;
            }
        }
    }
    names
}

/// Whether a program is kustomize: `kustomize`, `bin/kustomize`, or a versioned install such
/// as `bin/kustomize-v5.8.0` (what kubebuilder's newer Makefiles download).
fn is_kustomize(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    name == "kustomize" || name.starts_with("kustomize-") || name.starts_with("kustomize_")
}

/// One `[cd DIR &&] kustomize edit ARGS...` of the recipe.
#[derive(Debug, Clone)]
struct RecipeEdit {
    dir: String,
    args: Vec<String>,
    /// `Makefile:LINE`.
    at: String,
}

/// What the bundle target runs, from make's dry run.
#[derive(Debug, Default)]
struct Recipe {
    /// `kustomize build DIR` piped into `generate bundle`: (DIR, `Makefile:LINE`).
    build_dir: Option<(String, String)>,
    /// The flags of the `generate bundle` command (or of the BUNDLE_GEN_FLAGS it is given).
    flags: Option<GenFlags>,
    /// The image edit that sets the operator image (`controller=…`, else the first).
    set_image: Option<SetImage>,
    /// Every `kustomize edit` of the recipe, in order (the operator's image kept as the
    /// placeholder).
    edits: Vec<RecipeEdit>,
    /// `Makefile:LINE` of a plain `| envsubst |` between the build and operator-sdk.
    envsubst: Option<String>,
    /// Edits of the bundle that set what opship has a setting for: (setting, value,
    /// `Makefile:LINE`), e.g. (`labels.com.redhat.openshift.versions`, `v4.12`).
    settings: Vec<(String, String, String)>,
    /// Literal replacements in the CSV after generation: (from, to, `Makefile:LINE`).
    substitutions: Vec<(String, String, String)>,
    /// What the user has to know: commands opship does not run, with Makefile:LINE.
    notes: Vec<String>,
}

impl Recipe {
    fn read(
        guard: &crate::make::Guard,
        dir: &Path,
        target: &str,
        vars: &[(String, String)],
    ) -> Result<Recipe> {
        let steps = crate::make::dry_run(guard, dir, target, vars).map_err(|e| match e {
            Error::Input(m) if m.contains(&format!("No rule to make target '{target}'")) => {
                let c = bundle_targets(guard, dir, vars).candidates();
                Error::Input(if c.is_empty() {
                    format!("{m}\nthe Makefile has no `{target}` target; name the one that makes the bundle with --target")
                } else {
                    format!("{m}\nthe Makefile has no `{target}` target; choose one with --target: {}", c.join(", "))
                })
            }
            e => e,
        })?;
        let mut r = Recipe::default();
        r.notes.extend(steps.missing.iter().map(|m| m.to_string()));
        r.notes
            .extend(steps.remade.iter().map(|s| remade_note(guard, s)));
        let steps = expand_sub_makes(
            guard,
            dir,
            steps.steps,
            vars,
            &mut vec![target.to_owned()],
            &mut r.notes,
        );
        // What opship itself does not run: also what make did not run, unless --run-make let
        // make run it (a line marked `+` or holding `$(MAKE)`).
        let ran = match guard.recipes() {
            crate::make::Recipes::Run => guard.seen(),
            crate::make::Recipes::Refused => Vec::new(),
        };
        let not_run = |text: &str| {
            if ran.iter().any(|r| r == text) {
                "opship does not run it, but make ran it in its dry run (--run-make)"
            } else {
                "opship does not run it"
            }
        };
        // Prerequisites that install a tool (`kustomize`, `operator-sdk`: their commands name
        // `…/bin/kustomize`) are not part of what the recipe does to the bundle.
        let installers: std::collections::BTreeSet<String> = steps
            .iter()
            .filter(|(s, _)| s.target != target && names_itself(&s.target, &s.text))
            .map(|(s, _)| s.target.clone())
            .collect();
        let mut images: Vec<SetImage> = Vec::new();
        let mut generated = false;
        // Each `generate bundle` line: (the target whose recipe runs it, `Makefile:LINE`, the
        // directory it writes).
        let mut generations: Vec<(String, String, String)> = Vec::new();
        for (step, at) in &steps {
            let at = at.clone();
            // A recipe's `# comment` line is printed by make and does nothing in the shell.
            if step.text.trim_start().starts_with('#') {
                continue;
            }
            let cmds = match crate::shell::split(&step.text) {
                Ok(c) => c,
                Err(e) => {
                    return Err(Error::Input(format!(
                        "{at}: make would run `{}`, which a shell cannot read: {e}",
                        step.text
                    )));
                }
            };
            let mut cd: Option<String> = None;
            // Which commands of the line opship reads (a `cd` only says where the next run).
            let mut handled = vec![false; cmds.len()];
            for (i, c) in cmds.iter().enumerate() {
                let w = &c.words;
                if c.joint == crate::shell::Joint::Start {
                    cd = None;
                }
                if w.first().map(String::as_str) == Some("cd") {
                    cd = w.get(1).cloned();
                    handled[i] = true;
                    continue;
                }
                if let Some(g) = w.iter().position(|x| x == "generate")
                    && let Some(b) = w[g + 1..].iter().position(|x| !x.starts_with('-'))
                    && w[g + 1 + b] == "bundle"
                {
                    handled[i] = true;
                    generated = true;
                    // Global flags between `generate` and `bundle` (`--verbose`) change nothing.
                    let flags = GenFlags::from_words(&w[g + 2 + b..], &at);
                    let out = flags
                        .output_dir
                        .as_ref()
                        .map(|(d, _)| d.trim_end_matches('/').to_owned())
                        .unwrap_or_else(|| "bundle".into());
                    let out = match &cd {
                        Some(d) if !out.starts_with('/') => format!("{d}/{out}"),
                        _ => out,
                    };
                    generations.push((step.target.clone(), at.clone(), out));
                    r.flags = Some(flags);
                    // The pipeline in front of it: `kustomize build DIR [| filter …] |`.
                    let mut j = i;
                    while j > 0 && cmds[j].joint == crate::shell::Joint::Pipe {
                        j -= 1;
                        handled[j] = true;
                        let p = &cmds[j].words;
                        if let Some(k) = p.iter().position(|x| x == "build")
                            && k > 0
                            && is_kustomize(&p[k - 1])
                            && let Some(d) = p[k + 1..].iter().find(|x| !x.starts_with('-'))
                        {
                            r.build_dir = Some((d.trim_end_matches('/').to_owned(), at.clone()));
                        } else if p.len() == 1
                            && (p[0] == "envsubst" || p[0].ends_with("/envsubst"))
                        {
                            r.envsubst = Some(at.clone());
                        } else if !p.is_empty() {
                            r.notes.push(format!(
                                "{at}: the recipe pipes the build through `{}` before operator-sdk; {}",
                                p.join(" "),
                                not_run(&step.text)
                            ));
                        }
                    }
                    continue;
                }
                // `generate kustomize manifests` refreshes the base CSV from the Go markers;
                // opship reads the base as committed.
                if let Some(g) = w.iter().position(|x| x == "generate")
                    && w[g + 1..]
                        .iter()
                        .find(|x| !x.starts_with('-'))
                        .is_some_and(|x| x == "kustomize")
                {
                    handled[i] = true;
                    continue;
                }
                if w.len() >= 2 && is_kustomize(&w[0]) && w[1] == "edit" {
                    handled[i] = true;
                    let dir = cd.clone().unwrap_or_else(|| ".".into());
                    if w.len() >= 4 && w[2] == "set" && w[3] == "image" {
                        for arg in &w[4..] {
                            if let Some((name, image)) = arg.split_once('=') {
                                images.push(SetImage {
                                    name: name.to_owned(),
                                    image: image.to_owned(),
                                    dir: dir.clone(),
                                    at: at.clone(),
                                });
                            }
                        }
                    }
                    r.edits.push(RecipeEdit {
                        dir,
                        args: w[2..].to_vec(),
                        at: at.clone(),
                    });
                    continue;
                }
                // A one-command edit of the bundle that sets what opship has a setting for.
                if cmds.len() == 1
                    && let Some((key, value)) = setting_edit(w)
                {
                    handled[i] = true;
                    r.settings.push((key, value, at.clone()));
                    continue;
                }
                // `sed -i 's/LITERAL/TEXT/g' CSV` after generation.
                if generated
                    && cmds.len() == 1
                    && let Some(subs) = substitution_edit(w)
                {
                    handled[i] = true;
                    for (from, to) in subs {
                        r.substitutions.push((from, to, at.clone()));
                    }
                    continue;
                }
                // Files copied into the generated bundle's manifests/ (`[cd D &&] cp F… B/manifests/`).
                if generated
                    && cmds
                        .iter()
                        .filter(|c| c.words.first().is_some_and(|p| p != "cd"))
                        .count()
                        == 1
                    && let Some(sources) = copied_into_manifests(w)
                {
                    handled[i] = true;
                    for s in sources {
                        let path = match &cd {
                            Some(d) if !s.starts_with('/') => {
                                format!("{}/{s}", d.trim_end_matches('/'))
                            }
                            _ => s,
                        };
                        r.settings.push(("extraManifests".into(), path, at.clone()));
                    }
                    continue;
                }
                // A script given the generation flags runs the generation itself.
                if !generated
                    && let Some((_, f)) =
                        c.assignments.iter().find(|(k, _)| k == "BUNDLE_GEN_FLAGS")
                {
                    handled[i] = true;
                    r.flags = Some(GenFlags::parse(f, &format!("{at}: BUNDLE_GEN_FLAGS")));
                    r.notes.push(format!(
                        "{at}: the bundle is generated by `{}`, which opship does not read; its BUNDLE_GEN_FLAGS are used",
                        w.join(" ")
                    ));
                }
            }
            // What the line runs that opship neither reads nor runs.
            let left: Vec<String> = cmds
                .iter()
                .zip(&handled)
                .filter(|(c, h)| !**h && !c.words.is_empty())
                .map(|(c, _)| c.words.join(" "))
                .collect();
            if left.is_empty() || step.text.contains("bundle validate") {
                continue;
            }
            // A line opship reads in part (`cd D && kustomize edit … && rm -rf F && kustomize
            // create …`) names the rest; a `cd` alone is no part read.
            let partly = cmds
                .iter()
                .zip(&handled)
                .any(|(c, h)| *h && c.words.first().is_some_and(|w| w != "cd"));
            if partly {
                let dir = cmds
                    .iter()
                    .find(|c| c.words.first().is_some_and(|w| w == "cd"))
                    .and_then(|c| c.words.get(1))
                    .map(|d| format!(" (in {d})"))
                    .unwrap_or_default();
                r.notes.push(format!(
                    "{at}: the recipe also runs `{}`{dir} {}; {}",
                    left.iter()
                        .map(|c| first_line(c))
                        .collect::<Vec<_>>()
                        .join("`, `"),
                    if generated {
                        "after generation"
                    } else {
                        "before generation"
                    },
                    not_run(&step.text)
                ));
                continue;
            }
            if let Some(sub) = step.sub_make() {
                r.notes.push(format!(
                    "{at}: the recipe runs `make {sub}` {}; {}",
                    if generated {
                        "after generation"
                    } else {
                        "before generation"
                    },
                    not_run(&step.text)
                ));
            } else if step.target == target || generated {
                r.notes.push(format!(
                    "{at}: the recipe runs `{}` {}; {}",
                    first_line(&step.text),
                    if generated {
                        "after generation"
                    } else {
                        "before generation"
                    },
                    not_run(&step.text)
                ));
            } else if !step.target.contains('/')
                && !step.target.starts_with('.')
                && !installers.contains(&step.target)
            {
                // A named prerequisite's commands (`manifests`' controller-gen, a template
                // rendered into a kustomization) are part of what `make bundle` does; a file
                // target (`bin/kustomize`, a tool download) is not.
                r.notes.push(format!(
                    "{at}: the prerequisite `{}` runs `{}` before generation; {}",
                    step.target,
                    first_line(&step.text),
                    not_run(&step.text)
                ));
            }
        }
        // The operator's image is the placeholder `controller` (kubebuilder's name), else the
        // first one set; the others (webhook, worker images) stay as the recipe sets them.
        r.set_image = images
            .iter()
            .find(|i| i.name == "controller")
            .or(images.first())
            .cloned();
        // The operator's image keeps the placeholder, which generation replaces with the
        // release's image; every other edit runs as the recipe wrote it, and so does the
        // operator's when its image is itself a placeholder (`REPLACE_IMAGE`) for a later step.
        if let Some(op) = r
            .set_image
            .as_ref()
            .filter(|op| !crate::naming::is_image_placeholder(&op.image))
        {
            for e in r.edits.iter_mut().filter(|e| e.dir == op.dir) {
                if e.args.len() >= 2 && e.args[0] == "set" && e.args[1] == "image" {
                    for a in &mut e.args[2..] {
                        if a.split_once('=').is_some_and(|(n, _)| n == op.name) {
                            *a = format!("{0}={0}", op.name);
                        }
                    }
                }
            }
        }
        // Generations into one directory leave the last one's bundle (nhc's `bundle-k8s`
        // regenerates over its prerequisite `bundle-base`); into several (`bundle: bundle-k8s
        // bundle-ocp` with their own --output-dir), which one is meant is the user's choice.
        let mut outs: Vec<&str> = generations.iter().map(|(_, _, o)| o.as_str()).collect();
        outs.sort_unstable();
        outs.dedup();
        if outs.len() > 1 {
            let mut targets: Vec<&str> = generations.iter().map(|(t, _, _)| t.as_str()).collect();
            targets.dedup();
            return Err(Error::Input(format!(
                "make's dry run of `{target}` runs `operator-sdk generate bundle` {} times into {} directories ({}); opship makes one bundle per config: choose one with --target {}",
                generations.len(),
                outs.len(),
                generations
                    .iter()
                    .map(|(t, at, o)| format!("{at} in `{t}` into {o}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                targets.join(" or --target ")
            )));
        }
        if let Some((_, last, _)) = generations.last() {
            for (t, at, _) in &generations[..generations.len() - 1] {
                r.notes.push(format!(
                    "{at}: `{t}` runs an earlier `operator-sdk generate bundle`, whose bundle the one at {last} replaces; opship generates only that one"
                ));
            }
        }
        if r.flags.is_none() {
            r.notes.push(format!(
                "make's dry run of `{target}` runs no `operator-sdk generate bundle`: operator-sdk's defaults are used"
            ));
        }
        Ok(r)
    }
}

/// What a rule that remakes an included makefile did: refused (the makefile read as it is, or
/// not at all when missing), or run with --run-make.
fn remade_note(guard: &crate::make::Guard, s: &crate::make::Step) -> String {
    match guard.recipes() {
        crate::make::Recipes::Refused => format!(
            "{}: make would remake the included makefile `{}` with `{}`; opship's dry run refused it, so make read `{}` as it is (not at all when missing): pass --run-make to let make run it",
            s.location(),
            s.target,
            first_line(&s.text),
            s.target
        ),
        crate::make::Recipes::Run => format!(
            "{}: make remade the included makefile `{}` with `{}` (--run-make)",
            s.location(),
            s.target,
            first_line(&s.text)
        ),
    }
}

/// How deep sub-makes of sub-makes are followed.
const MAX_SUB_MAKE_DEPTH: usize = 4;

/// The steps with each sub-make (`$(MAKE) T [VAR=V…]`, printed as `: opship-sub-make T`)
/// replaced by the commands of T's own recipe from a dry run of T (the same bounded runner),
/// each with its `Makefile:LINE` and the sub-make line that runs it, as commands of the
/// calling recipe. T's prerequisites
/// (tool downloads) are left out, as the bundle target's own are; a sub-make whose dry run
/// fails, that recurses, or that is nested too deep stays as it is (then listed as not run).
fn expand_sub_makes(
    guard: &crate::make::Guard,
    dir: &Path,
    steps: Vec<crate::make::Step>,
    vars: &[(String, String)],
    chain: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Vec<(crate::make::Step, String)> {
    let mut out = Vec::new();
    for step in steps {
        let at = step.location();
        let sub = sub_make_call(&step.text).filter(|(targets, _)| {
            !targets.is_empty()
                && chain.len() < MAX_SUB_MAKE_DEPTH
                && targets.iter().all(|t| !chain.contains(t))
        });
        let Some((targets, extra)) = sub else {
            out.push((step, at));
            continue;
        };
        let mut sub_vars = vars.to_vec();
        for (k, v) in extra {
            sub_vars.retain(|(x, _)| *x != k);
            sub_vars.push((k, v));
        }
        let mut expanded = Vec::new();
        let mut ok = true;
        for t in &targets {
            match crate::make::dry_run(guard, dir, t, &sub_vars) {
                Ok(s) => {
                    chain.push(t.clone());
                    for m in &s.missing {
                        let note = m.to_string();
                        if !notes.contains(&note) {
                            notes.push(note);
                        }
                    }
                    for r in &s.remade {
                        let note = remade_note(guard, r);
                        if !notes.contains(&note) {
                            notes.push(note);
                        }
                    }
                    let own: Vec<_> = s.steps.into_iter().filter(|x| x.target == *t).collect();
                    for (mut x, inner) in expand_sub_makes(guard, dir, own, &sub_vars, chain, notes)
                    {
                        // The commands are the calling recipe's own.
                        x.target = step.target.clone();
                        expanded.push((x, format!("{inner} (`make {t}` at {at})")));
                    }
                    chain.pop();
                }
                // The sub-make stays listed, with why its commands are not known.
                Err(e) => {
                    notes.push(format!(
                        "{at}: the recipe's sub-make `make {t}` could not be dry-run, so what it runs is not known: {e}"
                    ));
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            out.extend(expanded);
        } else {
            out.push((step, at));
        }
    }
    out
}

/// Make variables given on a command line: (name, value).
type MakeVars = Vec<(String, String)>;

/// The targets and variables of a sub-make line (`[VAR=V …] : opship-sub-make T… [VAR=V…]`).
fn sub_make_call(text: &str) -> Option<(Vec<String>, MakeVars)> {
    let cmds = crate::shell::split(text).ok()?;
    let [c] = cmds.as_slice() else {
        return None;
    };
    let marker: Vec<&str> = crate::make::SUB_MAKE.split(' ').collect();
    if c.words.len() < marker.len() || c.words[..marker.len()] != marker[..] {
        return None;
    }
    let mut vars = c.assignments.clone();
    let mut targets = Vec::new();
    for w in &c.words[marker.len()..] {
        if let Some((k, v)) = w.split_once('=') {
            vars.push((k.to_owned(), v.to_owned()));
        } else if w.starts_with('-') {
            // make's own flags (`-C`, `-f`) change what the sub-make reads: not followed.
            return None;
        } else {
            targets.push(w.clone());
        }
    }
    Some((targets, vars))
}

/// What a committed `metadata/annotations.yaml` says.
#[derive(Debug, Default)]
struct KeptMetadata {
    package: Option<String>,
    channels: Option<Vec<String>>,
    default_channel: Option<String>,
    /// Annotations that are not operator-sdk's own (`com.redhat.openshift.versions`).
    labels: Vec<(String, String)>,
}

/// Reads the committed bundle's `metadata/annotations.yaml`, when there is one.
fn committed_metadata(path: &Path) -> Result<Option<KeptMetadata>> {
    if !path.is_file() {
        return Ok(None);
    }
    let doc = yaml::parse_one(&yaml::read_text_of(path, crate::input::Kind::Config)?, path)?;
    let Some(map) = doc.value["annotations"].as_object() else {
        return Err(Error::invalid(
            doc.origin(""),
            "metadata/annotations.yaml has no `annotations` mapping",
        ));
    };
    let mut kept = KeptMetadata::default();
    for (k, v) in map {
        let Some(v) = v.as_str() else { continue };
        match k.as_str() {
            "operators.operatorframework.io.bundle.package.v1" => {
                kept.package = Some(v.to_owned());
            }
            "operators.operatorframework.io.bundle.channels.v1" => {
                kept.channels = Some(v.split(',').map(|c| c.trim().to_owned()).collect());
            }
            "operators.operatorframework.io.bundle.channel.default.v1" => {
                kept.default_channel = Some(v.to_owned());
            }
            k if k.starts_with("operators.operatorframework.io.") => {}
            k => kept.labels.push((k.to_owned(), v.to_owned())),
        }
    }
    Ok(Some(kept))
}

/// Refuses what cannot be an image reference: a value built from an empty environment
/// variable or a command that printed nothing (`quay.io//op`, `op:`), or a broken line.
fn check_reference(r: &str, from: &str, undefined: &[(String, String)]) -> Result<()> {
    // The parser `generate` refuses references with (rule BND007).
    let Some(problem) = crate::naming::image_reference_problem(r) else {
        return Ok(());
    };
    // Only a reference with an empty part suggests a value that expanded to nothing.
    let empty_part = r.is_empty()
        || r.starts_with(['/', ':', '@'])
        || r.ends_with(['/', ':', '@'])
        || r.contains("//")
        || r.contains("/:");
    let why = if !undefined.is_empty() {
        format!(
            " (it is built from {}, which make expands to nothing)",
            unset_list(undefined)
        )
    } else if empty_part {
        " (is it built from an environment variable or a command that gave nothing?)".to_owned()
    } else {
        String::new()
    };
    Err(Error::Input(format!(
        "{from}: the operator image `{r}` is not an image reference: {problem}{why}; give it as on make's command line: --set IMG=<image>"
    )))
}

/// The first line of a command, at most 300 characters: a recipe may carry megabytes on a line
/// (nhc's base64 icon), and a note names the command, not its data.
fn first_line(s: &str) -> String {
    const MAX: usize = 300;
    let l = s.lines().next().unwrap_or_default();
    let cut: String = l.chars().take(MAX).collect();
    if cut.len() < s.len() {
        format!("{cut} …")
    } else {
        cut
    }
}

/// The Makefile's targets that make the bundle, for `--target`: of the targets make knows
/// whose name holds `bundle`, those whose dry run runs `operator-sdk generate bundle` (all of
/// them when none does).
fn bundle_targets(
    guard: &crate::make::Guard,
    dir: &Path,
    vars: &[(String, String)],
) -> BundleTargets {
    /// Candidates dry-run at most (each one is a run of make).
    const MAX_CANDIDATES: usize = 24;
    let Ok(db) = crate::make::inspect(guard, dir, &[], vars, None) else {
        return BundleTargets::default();
    };
    let named: Vec<String> = db
        .targets
        .into_iter()
        .filter(|t| t.contains("bundle") && !t.contains('/') && !t.starts_with('.'))
        .collect();
    let generating: Vec<String> = named
        .iter()
        .take(MAX_CANDIDATES)
        .filter(|t| generates(guard, dir, t, vars))
        .cloned()
        .collect();
    BundleTargets { named, generating }
}

/// The Makefile's targets whose name holds `bundle`, and those of them that generate one.
#[derive(Debug, Default)]
struct BundleTargets {
    named: Vec<String>,
    generating: Vec<String>,
}

impl BundleTargets {
    /// What to offer for `--target`: the generating ones, else every `bundle…` one.
    fn candidates(self) -> Vec<String> {
        if self.generating.is_empty() {
            self.named
        } else {
            self.generating
        }
    }
}

/// Whether `text` names a file called `name` (`/…/bin/kustomize`, not `kustomization.yaml`):
/// what a target that installs the tool of its name does.
fn names_itself(name: &str, text: &str) -> bool {
    let needle = format!("/{name}");
    text.match_indices(&needle).any(|(i, _)| {
        text[i + needle.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || "._-".contains(c)))
    })
}

/// Whether make's dry run of `target` runs `operator-sdk generate bundle`.
fn generates(
    guard: &crate::make::Guard,
    dir: &Path,
    target: &str,
    vars: &[(String, String)],
) -> bool {
    crate::make::dry_run(guard, dir, target, vars)
        .is_ok_and(|r| r.steps.iter().any(|s| runs_generate_bundle(&s.text)))
}

/// Whether a command line runs `… generate [flags] bundle`.
fn runs_generate_bundle(text: &str) -> bool {
    crate::shell::split(text).is_ok_and(|cmds| {
        cmds.iter().any(|c| {
            let w = &c.words;
            w.iter().position(|x| x == "generate").is_some_and(|g| {
                w[g + 1..]
                    .iter()
                    .find(|x| !x.starts_with('-'))
                    .is_some_and(|x| x == "bundle")
            })
        })
    })
}

/// `<manifests>/bases/*.clusterserviceversion.yaml` of the package (or the only one).
fn find_base_csv(manifests: &Path, package: &str) -> Result<Option<(PathBuf, Value)>> {
    let bases = manifests.join("bases");
    let Ok(entries) = std::fs::read_dir(&bases) else {
        return Ok(None);
    };
    let mut csvs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(".clusterserviceversion.yaml"))
        })
        .collect();
    csvs.sort();
    let pick = csvs
        .iter()
        .find(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy() == format!("{package}.clusterserviceversion.yaml")
            })
        })
        .or(csvs.first())
        .cloned();
    match pick {
        None => Ok(None),
        Some(p) => {
            let doc = yaml::parse_one(&yaml::read_text(&p)?, &p)?;
            Ok(Some((p, doc.value)))
        }
    }
}

/// The image `dir`'s kustomization maps `placeholder` to (`newName[:newTag]`).
fn manager_image(dir: &Path, placeholder: &str) -> Result<Option<(String, String)>> {
    let Some(file) = crate::kustomize::kustomization_file(dir) else {
        return Ok(None);
    };
    let doc = yaml::parse_one(&yaml::read_text(&file)?, &file)?;
    for (i, e) in doc.value["images"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if e["name"].as_str() == Some(placeholder)
            && let Some(name) = e["newName"].as_str()
        {
            let tag = e["newTag"].as_str().unwrap_or("latest");
            return Ok(Some((
                format!("{name}:{tag}"),
                format!("{} (images[{i}])", doc.origin(&format!("/images/{i}"))),
            )));
        }
    }
    Ok(None)
}

fn sub_kustomizations(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && crate::kustomize::kustomization_file(p).is_some())
        .map(|p| crate::paths::show(&p).to_string())
        .collect();
    out.sort();
    out
}

/// A path of the recipe (`$(CURDIR)/config/manifests` is absolute) relative to the project
/// `dir` (canonical: `root`); `None` when it is outside.
fn in_project(dir: &Path, root: &Path, p: &str) -> Option<PathBuf> {
    let p = Path::new(p);
    if !p.is_absolute() {
        return Some(p.to_path_buf());
    }
    match p.strip_prefix(root).or_else(|_| p.strip_prefix(dir)) {
        Ok(r) if r.as_os_str().is_empty() => Some(PathBuf::from(".")),
        Ok(r) => Some(r.to_path_buf()),
        Err(_) => None,
    }
}

fn rel(base: &Path, p: &Path) -> String {
    p.strip_prefix(base).unwrap_or(p).display().to_string()
}

/// `text` as YAML comment lines, the first after `lead`, the rest indented under it; control
/// characters (a recipe's `printf "\033[…"`) escaped, as YAML allows none in a comment.
fn comment(lead: &str, text: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        out.push_str(if i == 0 { lead } else { "#       " });
        for c in line.chars() {
            if c.is_control() && c != '\t' {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str(lead.trim_end());
        out.push('\n');
    }
    out
}

/// The adopted config as `opship.yaml` text: a header saying where each value came from, then
/// the keys (empty ones left out). Parsed back before it is returned, so it always loads.
pub fn config_text(a: &Adoption) -> Result<String> {
    let mut v = serde_json::to_value(&a.config).map_err(|e| Error::Internal(e.to_string()))?;
    prune(&mut v);
    let mut out = String::from(
        "# opship project config, written by `opship init --from-operator-sdk`.\n\
         # Paths are relative to this file. Docs: docs/config.md\n#\n# Found:\n",
    );
    for f in &a.found {
        out.push_str(&comment(
            "#   ",
            &format!("{}: {}  <- {}", f.key, f.value, f.from),
        ));
    }
    if !a.to_decide.is_empty() {
        out.push_str("#\n# Still to decide:\n");
        for d in &a.to_decide {
            out.push_str(&comment("#   - ", d));
        }
    }
    out.push('\n');
    out.push_str(&yaml::to_string(&v)?);
    let back: Config = yaml::parse_typed(&out, Path::new("opship.yaml"))?;
    if back != a.config {
        return Err(Error::Internal(
            "the written config does not read back as the adopted one".into(),
        ));
    }
    Ok(out)
}

fn prune(v: &mut Value) {
    if let Value::Array(a) = v {
        a.iter_mut().for_each(prune);
    }
    if let Value::Object(m) = v {
        for x in m.values_mut() {
            prune(x);
        }
        m.retain(|_, x| match x {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::String(s) => !s.is_empty(),
            Value::Number(_) => true,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command's words and the setting it makes, if any.
    type Case<'a> = (&'a [&'a str], Option<(&'a str, &'a str)>);

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn setting_edits() {
        const CSV: &str = "bundle/manifests/op.clusterserviceversion.yaml";
        let cases: [Case; 14] = [
            (
                &["bin/yq", "-i", ".spec.replaces = \"op.v1.0.0\"", CSV],
                Some(("replaces", "op.v1.0.0")),
            ),
            // `$(SED_INLINE)` is `sed -i ''` on macOS-minded Makefiles.
            (
                &[
                    "sed",
                    "-i",
                    "",
                    "s/olm.skipRange: .*/olm.skipRange: '<1.2.0'/",
                    CSV,
                ],
                Some(("skipRange", "<1.2.0")),
            ),
            (
                &[
                    "sed",
                    "-i",
                    "s/com.redhat.openshift.versions: .*/com.redhat.openshift.versions: v4.14/",
                    "bundle/metadata/annotations.yaml",
                ],
                Some(("labels.com.redhat.openshift.versions", "v4.14")),
            ),
            // nhc's `add-community-edition-to-display-name`.
            (
                &[
                    "sed",
                    "-r",
                    "-i",
                    "s|displayName: Op|displayName: Op - Community Edition|;",
                    CSV,
                ],
                Some(("displayName", "Op - Community Edition")),
            ),
            (
                &["yq", "-i", ".spec.displayName = \"Op CE\"", CSV],
                Some(("displayName", "Op CE")),
            ),
            // Not in place, not a setting, or a replacement that uses the match.
            (&["sed", "s/replaces: .*/replaces: x/", CSV], None),
            (
                &["sed", "-i", "s/description: A/description: B/", CSV],
                None,
            ),
            (&["sed", "-i", "s/replaces: .*/replaces: &-x/", CSV], None),
            // CSV annotations.
            (
                &[
                    "yq",
                    "-i",
                    ".metadata.annotations.\"operators.openshift.io/valid-subscription\" = \"[\\\"OpenShift Kubernetes Engine\\\", \\\"OpenShift Container Platform\\\"]\"",
                    CSV,
                ],
                Some((
                    "csvAnnotations.operators.openshift.io/valid-subscription",
                    "[\"OpenShift Kubernetes Engine\", \"OpenShift Container Platform\"]",
                )),
            ),
            (
                &[
                    "yq",
                    "--inplace",
                    ".metadata.annotations.containerImage = \"q.io/o:1\"",
                    CSV,
                ],
                Some(("csvAnnotations.containerImage", "q.io/o:1")),
            ),
            (
                &[
                    "yq",
                    "-i",
                    ".metadata.annotations[\"features.operators.openshift.io/fips-compliant\"] = \"true\"",
                    CSV,
                ],
                Some((
                    "csvAnnotations.features.operators.openshift.io/fips-compliant",
                    "true",
                )),
            ),
            (
                &[
                    "sed",
                    "-i",
                    "s|features.operators.openshift.io/disconnected: .*|features.operators.openshift.io/disconnected: \"true\"|",
                    CSV,
                ],
                Some((
                    "csvAnnotations.features.operators.openshift.io/disconnected",
                    "true",
                )),
            ),
            // Computed from the old value, or not a valid key.
            (&["yq", "-i", ".metadata.annotations.x |= \"y\"", CSV], None),
            (
                &["yq", "-i", ".metadata.annotations.\"a b\" = \"y\"", CSV],
                None,
            ),
        ];
        for (cmd, want) in cases {
            assert_eq!(
                setting_edit(&words(cmd)),
                want.map(|(k, v)| (k.to_owned(), v.to_owned())),
                "{cmd:?}"
            );
        }
    }

    #[test]
    fn tool_installers_name_themselves() {
        assert!(names_itself(
            "kustomize",
            "if [ ! -f /p/bin/kustomize ]; then curl … ; fi"
        ));
        assert!(names_itself("operator-sdk", "chmod +x /p/bin/operator-sdk"));
        assert!(!names_itself(
            "kustomization",
            "sed -e 's/x/y/' config/bundle/kustomization.template.yaml > config/bundle/kustomization.yaml"
        ));
        assert!(!names_itself(
            "manifests",
            "controller-gen crd output:crd:artifacts:config=config/crd/bases"
        ));
    }

    /// `sed -i 's/LITERAL/TEXT/g' CSV`: literal global substitutions only.
    #[test]
    fn substitution_edits() {
        const CSV: &str = "bundle/manifests/op.clusterserviceversion.yaml";
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let pair = |a: &str, b: &str| Some(vec![(a.to_owned(), b.to_owned())]);
        for (cmd, want) in [
            (
                &["sed", "-i", "-e", "s/$(VERSION)/0.15.0/g", CSV][..],
                pair("$(VERSION)", "0.15.0"),
            ),
            (&["sed", "-i", "s|a\\.b|c\\&d|g;", CSV], pair("a.b", "c&d")),
            (&["sed", "-E", "-i", "s/\\(x\\)/y/g", CSV], pair("(x)", "y")),
            (
                &["sed", "-i", "-e", "s/a/b/g", "-e", "s/c/d/g", CSV],
                Some(vec![("a".into(), "b".into()), ("c".into(), "d".into())]),
            ),
            // A pattern, the match, no `g`, not in place, another file, extended groups.
            (&["sed", "-i", "s/a.*/b/g", CSV], None),
            (&["sed", "-i", "s/a/&b/g", CSV], None),
            (&["sed", "-i", "s/a/b/", CSV], None),
            (&["sed", "s/a/b/g", CSV], None),
            (
                &["sed", "-i", "s/a/b/g", "bundle/metadata/annotations.yaml"],
                None,
            ),
            (&["sed", "-E", "-i", "s/(x)/y/g", CSV], None),
            (&["sed", "-i", "s/^a/b/g", CSV], None),
        ] {
            assert_eq!(substitution_edit(&words(cmd)), want, "{cmd:?}");
        }
    }

    /// Issue 33, item 13: a `cd` is no command opship read: a line that only changes
    /// directory before commands opship does not run is listed, and the commands a line runs
    /// beside those opship reads are named.
    #[test]
    fn commands_after_cd_are_listed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Makefile"),
            "K = bin/kustomize\nbundle:\n\tcd config/hub && rm -rf kustomization.yaml && $(K) create --resources ../base\n\tcd config/manager && $(K) edit set image controller=quay.io/a/b:1 && rm -f stale.yaml\n\t$(K) build config/manifests | operator-sdk generate bundle -q\n\tcd bundle && ls\n",
        )
        .unwrap();
        let r = Recipe::read(
            &crate::make::Guard::new(crate::make::Recipes::Refused).unwrap(),
            d.path(),
            "bundle",
            &[],
        )
        .unwrap();
        assert_eq!(
            r.notes,
            vec![
                "Makefile:3: the recipe runs `cd config/hub && rm -rf kustomization.yaml && bin/kustomize create --resources ../base` before generation; opship does not run it",
                "Makefile:4: the recipe also runs `rm -f stale.yaml` (in config/manager) before generation; opship does not run it",
                "Makefile:6: the recipe runs `cd bundle && ls` after generation; opship does not run it",
            ],
        );
        assert_eq!(r.edits.len(), 1);
    }

    /// Notes name a command by its first line, cut to 300 characters; comment lines are not
    /// commands.
    #[test]
    fn notes_are_short_and_skip_comments() {
        let d = tempfile::tempdir().unwrap();
        let long = "x".repeat(10_000);
        std::fs::write(
            d.path().join("Makefile"),
            format!("bundle:\n\toperator-sdk generate bundle -q\n\t# a comment\n\t$(MAKE) post\npost:\n\techo {long} > f\n"),
        )
        .unwrap();
        let r = Recipe::read(
            &crate::make::Guard::new(crate::make::Recipes::Refused).unwrap(),
            d.path(),
            "bundle",
            &[],
        )
        .unwrap();
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(
            r.notes[0]
                .starts_with("Makefile:6 (`make post` at Makefile:4): the recipe runs `echo xxx")
                && r.notes[0].contains("x …` after generation")
                && r.notes[0].len() < 450,
            "{:?}",
            r.notes
        );
    }

    /// Issue 25, fault 6: a sub-make's own commands are read as the recipe's, with their
    /// Makefile:LINE and the line that calls them; its prerequisites and a recursive call
    /// are not followed.
    #[test]
    fn sub_makes_are_dry_run_too() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Makefile"),
            "CSV = bundle/manifests/op.clusterserviceversion.yaml\nbundle: tool\n\toperator-sdk generate bundle -q\n\t$(MAKE) post V=2\ntool:\n\techo download\npost: tool\n\tsed -i 's/a: .*/a: $(V)/' $(CSV)\n\t$(MAKE) post\n",
        )
        .unwrap();
        let guard = crate::make::Guard::new(crate::make::Recipes::Refused).unwrap();
        let steps = crate::make::dry_run(&guard, d.path(), "bundle", &[])
            .unwrap()
            .steps;
        let mut notes = Vec::new();
        let got: Vec<(String, String, String)> = expand_sub_makes(
            &guard,
            d.path(),
            steps,
            &[],
            &mut vec!["bundle".into()],
            &mut notes,
        )
        .into_iter()
        .map(|(s, at)| (s.target, at, s.text))
        .collect();
        let s = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
        assert_eq!(
            got,
            vec![
                s("tool", "Makefile:6", "echo download"),
                s("bundle", "Makefile:3", "operator-sdk generate bundle -q"),
                s(
                    "bundle",
                    "Makefile:8 (`make post` at Makefile:4)",
                    "sed -i 's/a: .*/a: 2/' bundle/manifests/op.clusterserviceversion.yaml"
                ),
                s(
                    "bundle",
                    "Makefile:9 (`make post` at Makefile:4)",
                    ": opship-sub-make post"
                ),
            ]
        );
        assert!(notes.is_empty(), "{notes:?}");

        // A sub-make make cannot dry-run stays listed, with make's own message.
        std::fs::write(
            d.path().join("Makefile"),
            "bundle:\n\toperator-sdk generate bundle -q\n\t$(MAKE) post\npost: nothing-makes-this\n\techo post\n",
        )
        .unwrap();
        let r = Recipe::read(
            &crate::make::Guard::new(crate::make::Recipes::Refused).unwrap(),
            d.path(),
            "bundle",
            &[],
        )
        .unwrap();
        assert!(
            r.notes.iter().any(|n| n
                .starts_with("Makefile:3: the recipe's sub-make `make post` could not be dry-run")
                && n.contains("No rule to make target 'nothing-makes-this'")),
            "{:?}",
            r.notes
        );
        assert!(
            r.notes
                .iter()
                .any(|n| n.starts_with("Makefile:3: the recipe runs `make post` after generation")),
            "{:?}",
            r.notes
        );
    }
}

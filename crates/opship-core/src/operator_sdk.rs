//! Adopting an operator-sdk or kubebuilder project: what `make bundle` would run, read from the
//! project's `PROJECT`, Makefile, `config/manifests` and `config/manager`, as an `opship.yaml`
//! with which `opship generate bundle` writes the bundle operator-sdk would have written.
//! Every value says where it was found; what cannot be known is listed for the user to decide.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{Config, OperatorImage, Release};
use crate::error::{Error, Result};
use crate::makefile::Makefile;
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
    let mf = if makefile_path.is_file() {
        Some(Makefile::read(&makefile_path, &req.make_vars)?)
    } else {
        to_decide.push(format!(
            "{} not found: operator-sdk's defaults are used (channel alpha, the base CSV's version)",
            makefile_path.display()
        ));
        // Values given as on make's command line still count.
        Some(Makefile::parse("", &makefile_path, &req.make_vars)?)
    };
    let var = |name: &str| -> Result<Option<(String, String)>> {
        let Some(mf) = &mf else { return Ok(None) };
        Ok(mf.get(name)?.map(|v| {
            let from = match v.line {
                Some(l) => format!("Makefile:{l} ({name})"),
                None => format!("--set {name}"),
            };
            (v.text.trim().to_owned(), from)
        }))
    };
    if let Some(mf) = &mf {
        for (line, what) in &mf.includes {
            to_decide.push(format!(
                "Makefile:{line} includes {what}, which opship does not read: check the values below"
            ));
        }
    }

    // operator-sdk's flags, as the bundle recipe passes them.
    let flags = match var("BUNDLE_GEN_FLAGS")? {
        Some((text, from)) => GenFlags::parse(&text, &from),
        None => GenFlags::default(),
    };
    for f in &flags.ignored {
        to_decide.push(format!(
            "operator-sdk flag `{f}` has no opship equivalent and is not used"
        ));
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
    let recipe = mf.as_ref().and_then(Recipe::read);
    let manifests = match (
        &req.manifests,
        recipe.as_ref().and_then(|r| r.build_dir.clone()),
    ) {
        (Some(m), _) => (m.clone(), "--manifests".to_owned()),
        (None, Some((d, line))) => (PathBuf::from(d), format!("Makefile:{line} (bundle recipe)")),
        (None, None) => (
            PathBuf::from("config/manifests"),
            "operator-sdk's layout".to_owned(),
        ),
    };
    let manifests_dir = dir.join(&manifests.0);
    if crate::kustomize::kustomization_file(&manifests_dir).is_none() {
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
            manifests_dir.display()
        )));
    }
    found.push(Found {
        key: "manifests".into(),
        value: manifests.0.display().to_string(),
        from: manifests.1,
    });
    if let Some(r) = &recipe {
        for (line, text) in &r.edits {
            to_decide.push(format!(
                "Makefile:{line}: the bundle recipe edits the bundle after generation (`{text}`); opship does not run it"
            ));
        }
    }

    // The base CSV: kubebuilder keeps it in <manifests>/bases/.
    let base = find_base_csv(&manifests_dir, &package.0)?;
    let base_version = base
        .as_ref()
        .and_then(|(_, v)| v["spec"]["version"].as_str().map(str::to_owned))
        .filter(|v| v != "0.0.0");
    if let Some((path, _)) = &base {
        found.push(Found {
            key: "(base CSV)".into(),
            value: rel(dir, path),
            from: format!("next to {}", rel(dir, &manifests_dir)),
        });
    }

    // Version: --version, else VERSION, else the base CSV's (operator-sdk's default).
    let version = match (&flags.version, var("VERSION")?, base_version) {
        (Some(v), _, _) => Some(v.clone()),
        (None, Some(v), _) => Some(v),
        (None, None, Some(v)) => Some((v, "the base CSV's spec.version".into())),
        _ => None,
    };
    let version = match version {
        Some((v, from)) => {
            crate::bundle::parse_version(&v).map_err(|e| {
                Error::Input(format!("{from}: the version `{v}` is not usable: {e}"))
            })?;
            found.push(Found {
                key: "releases[0].version".into(),
                value: v.clone(),
                from,
            });
            Some(v)
        }
        None => {
            to_decide.push("no version found (no VERSION, no --version in BUNDLE_GEN_FLAGS, base CSV at 0.0.0): add a release".into());
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
    if default_channel.is_none() {
        to_decide.push(
            "no default channel (operator-sdk sets one only with --default-channel): set defaultChannel if the package needs one".into(),
        );
    }

    // Operator image: IMG, unless it is kubebuilder's placeholder default; then the image
    // config/manager already maps the placeholder to.
    let placeholder = recipe
        .as_ref()
        .and_then(|r| r.set_image.clone())
        .map(|(name, _)| name)
        .unwrap_or_else(|| "controller".to_owned());
    let img = var("IMG")?.filter(|(i, _)| i != DEFAULT_IMG && !i.is_empty());
    let manager_dir = recipe
        .as_ref()
        .and_then(|r| r.set_image.as_ref().map(|(_, d)| d.clone()))
        .unwrap_or_else(|| "config/manager".to_owned());
    let image = match img {
        Some(i) => Some(i),
        None => manager_image(&dir.join(&manager_dir), &placeholder)?,
    };
    let operator = match image {
        Some((reference, from)) => {
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
            to_decide.push(format!(
                "no operator image: IMG is {DEFAULT_IMG} and {manager_dir} maps `{placeholder}` to nothing; set operator.image (or pass --operator-image)"
            ));
            None
        }
    };

    // Image repositories of the release, as the Makefile names them.
    let mut images = crate::config::Images::default();
    for (key, var_name, suffix) in [
        ("bundle", "BUNDLE_IMG", "-bundle"),
        ("catalog", "CATALOG_IMG", "-catalog"),
    ] {
        let value = match var(var_name)? {
            Some((i, from)) => Some((crate::config::split_tag(&i).0.to_owned(), from)),
            None => var("IMAGE_TAG_BASE")?.map(|(b, from)| (format!("{b}{suffix}"), from)),
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

    let use_digests = flags.use_image_digests.is_some()
        || var("USE_IMAGE_DIGESTS")?.is_some_and(|(v, _)| v == "true");
    let bundle_dir = flags
        .output_dir
        .clone()
        .map(|(d, _)| d)
        .unwrap_or_else(|| "bundle".to_owned());
    found.push(Found {
        key: "bundleDir".into(),
        value: bundle_dir.clone(),
        from: if flags.output_dir.is_some() {
            "BUNDLE_GEN_FLAGS (--output-dir)".into()
        } else {
            "operator-sdk's default".into()
        },
    });
    to_decide.push(format!(
        "bundleDir is `{bundle_dir}` (operator-sdk's single bundle, replaced on every release); `bundle/{{version}}` keeps one per version"
    ));

    // Kinds operator-sdk drops without a word and opship refuses: excluded, and said so.
    let mut exclude_kinds = vec!["Namespace".to_owned()];
    let mut csv_base = None;
    if let Ok(objects) = crate::kustomize::build(&manifests_dir, Some(&placeholder)) {
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

    let config = Config {
        package: package.0,
        channels: channels.0,
        default_channel,
        operator,
        manifests: Some(manifests.0),
        csv_base,
        bundle_dir: Some(bundle_dir),
        images,
        exclude_kinds: Some(exclude_kinds),
        releases,
        use_image_digests: use_digests,
        ..Config::default()
    };
    Ok(Adoption {
        config,
        found,
        to_decide,
    })
}

/// The operator-sdk flags of `BUNDLE_GEN_FLAGS` opship has an equivalent for.
#[derive(Debug, Default)]
struct GenFlags {
    version: Option<(String, String)>,
    channels: Option<(Vec<String>, String)>,
    default_channel: Option<(String, String)>,
    package: Option<(String, String)>,
    output_dir: Option<(String, String)>,
    use_image_digests: Option<String>,
    ignored: Vec<String>,
}

impl GenFlags {
    fn parse(text: &str, from: &str) -> GenFlags {
        let mut g = GenFlags::default();
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
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
                words.get(i).map(|v| (*v).to_owned())
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
                ("--use-image-digests", _) => g.use_image_digests = Some(src),
                ("-q" | "--quiet" | "--overwrite" | "--manifests" | "--metadata", _) => {}
                (n, _) => g.ignored.push(n.to_owned()),
            }
            i += 1;
        }
        g
    }
}

/// What the Makefile's `bundle` recipe runs.
#[derive(Debug, Default)]
struct Recipe {
    /// `kustomize build DIR` piped into `generate bundle`, with its line.
    build_dir: Option<(String, u32)>,
    /// `cd DIR && kustomize edit set image NAME=…`: (NAME, DIR).
    set_image: Option<(String, String)>,
    /// Lines after the generation that change the bundle (sed, yq, mv, cp, rm …).
    edits: Vec<(u32, String)>,
}

impl Recipe {
    fn read(mf: &Makefile) -> Option<Recipe> {
        let rule = mf.rule("bundle")?;
        let mut r = Recipe::default();
        let mut generated = false;
        for (line, text) in &rule.recipe {
            let words: Vec<&str> = text.split_whitespace().collect();
            if text.contains("generate bundle") {
                generated = true;
                if let Some(i) = words.iter().position(|w| *w == "build")
                    && let Some(d) = words.get(i + 1)
                    && let Some(d) = mf.expand_text(d)
                {
                    r.build_dir = Some((d, *line));
                }
                continue;
            }
            if let Some(i) = words.iter().position(|w| *w == "image")
                && i >= 2
                && words[i - 1] == "set"
                && words[i - 2] == "edit"
                && let Some(arg) = words.get(i + 1)
                && let Some((name, _)) = arg.split_once('=')
            {
                let dir = words
                    .iter()
                    .position(|w| *w == "cd")
                    .and_then(|c| words.get(c + 1))
                    .map(|d| (*d).to_owned())
                    .unwrap_or_else(|| "config/manager".into());
                r.set_image = Some((name.to_owned(), dir));
                continue;
            }
            let edits = ["sed ", "yq ", "mv ", "cp ", "rm ", "cat ", ">"];
            if generated
                && !text.contains("bundle validate")
                && edits.iter().any(|e| text.contains(e))
            {
                r.edits.push((*line, text.trim().to_owned()));
            }
        }
        Some(r)
    }
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
        .map(|p| p.display().to_string())
        .collect();
    out.sort();
    out
}

fn rel(base: &Path, p: &Path) -> String {
    p.strip_prefix(base).unwrap_or(p).display().to_string()
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
        out.push_str(&format!("#   {}: {}  <- {}\n", f.key, f.value, f.from));
    }
    if !a.to_decide.is_empty() {
        out.push_str("#\n# Still to decide:\n");
        for d in &a.to_decide {
            out.push_str(&format!("#   - {d}\n"));
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

//! `opship release`: one version from `opship.yaml` to published artefacts, as a plan of steps
//! each of which is an `opship` command and is recognised as done by a digest.
//!
//! Everything is first staged in a temporary directory (bundle generated, validated, built;
//! chart rendered and packaged), which gives the digests the release will produce before
//! anything in the project or a registry changes. Each step is then checked against the
//! project and the registry (read-only) and either recorded as done or run as the same
//! `opship` subcommand a user would type, so every step can be reproduced by hand from the
//! plan. Order matters for failure: the catalog is written only after the bundle image is in
//! place (pushed) and signed, so a release that fails earlier leaves the catalog untouched.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use opship_core::config::Project;
use opship_core::image::Digest;
use opship_oci::registry::{self, Registry};

use super::{CmdError, ExitStatus};
use crate::cli::{RegistryOutput, ReleaseArgs};
use plan::{State, Step, catalog_has, layout_digest, same_tree, snapshot};

mod plan;

/// Where the release's artefacts go, from the config and the flags.
struct Context {
    exe: PathBuf,
    project: Project,
    version: String,
    dry_run: bool,
    /// `-q`: no progress lines.
    quiet: bool,
    insecure: bool,
    /// `REGISTRY[/NAMESPACE]`, when images are pushed.
    registry: Option<String>,
    bundle_dir: PathBuf,
    layout: PathBuf,
    /// Tag of the bundle image in the layout (the version, `+` as `_`).
    bundle_tag: String,
    /// Repository of the bundle image (its identity for signatures and the catalog).
    bundle_repo: String,
    catalog_repo: String,
    /// Tag of images in registries: `v<version>`.
    remote_tag: String,
    catalogs: Vec<CatalogTarget>,
    chart_out: PathBuf,
    key: KeyPlan,
}

struct CatalogTarget {
    /// The `catalogs:` entry's name (passed as `--target`), none for the default `index/`.
    name: Option<String>,
    dir: PathBuf,
    layout_tag: String,
    remote: Option<String>,
}

struct KeyPlan {
    key: PathBuf,
    public: PathBuf,
    password_file: Option<PathBuf>,
    /// The default key, generated when missing.
    generated: bool,
}

/// Runs `opship release`.
pub fn run(args: &ReleaseArgs, config: Option<&Path>, quiet: bool) -> Result<ExitStatus, CmdError> {
    let project = super::load_project(config)?.ok_or(
        "opship release needs the project config: ./opship.yaml or --config FILE (opship init \
         writes one)",
    )?;
    opship_core::bundle::parse_version(&args.version)?;
    let cx = Context::new(project, args, quiet)?;
    let staging = tempfile::tempdir()?;
    let mut steps: Vec<Step> = Vec::new();
    let before = snapshot(&cx.written_roots());

    let Staged {
        bundle: staged_bundle,
        layout: staged_layout,
        bundle_digest,
        chart_dir: staged_chart_dir,
        chart_name,
        chart_digest,
        chart_archive_name,
    } = match stage(&cx, staging.path())? {
        Ok(staged) => staged,
        Err(status) => return Ok(status),
    };

    let rt = super::registry::runtime()?;

    // 1. The bundle directory.
    let bundle_same = same_tree(&staged_bundle, &cx.bundle_dir);
    let mut step = Step {
        id: "bundle".into(),
        what: format!("generate bundle {} into {}", cx.version, s(&cx.bundle_dir)),
        command: cx.command(&["generate", "bundle", "--version", &cx.version]),
        writes: vec![s(&cx.bundle_dir)],
        digest: None,
        state: State::Planned,
    };
    if bundle_same {
        step.state = State::Done("the directory holds exactly the generated files".into());
    }
    cx.execute(&mut step, &mut steps)?;

    steps.push(Step {
        id: "validate".into(),
        what: format!("validate bundle {}", cx.version),
        command: cx.command(&["validate", "bundle", &s(&cx.bundle_dir)]),
        writes: vec![],
        digest: None,
        state: State::Done("checked on the staged bundle: no errors".into()),
    });

    // 2. The bundle image in the layout.
    let mut step = Step {
        id: "build".into(),
        what: format!("build the bundle image {}:{}", s(&cx.layout), cx.bundle_tag),
        command: cx.command(&[
            "build",
            "--layout",
            &s(&cx.layout),
            "--tag",
            &cx.bundle_tag,
            &s(&cx.bundle_dir),
        ]),
        writes: vec![format!("{}:{}", s(&cx.layout), cx.bundle_tag)],
        digest: Some(bundle_digest.clone()),
        state: State::Planned,
    };
    if layout_digest(&cx.layout, &cx.bundle_tag).as_deref() == Some(bundle_digest.as_str()) {
        step.state = State::Done("the layout tag has this digest".into());
    }
    let out = cx.execute(&mut step, &mut steps)?;
    if let Some(out) = out
        && second_word(&out).as_deref() != Some(bundle_digest.as_str())
    {
        return Err(format!(
            "the bundle image built from {} has digest {}, the staged one {bundle_digest}: is \
             something else writing the bundle directory?",
            s(&cx.bundle_dir),
            second_word(&out).unwrap_or_default()
        )
        .into());
    }

    // 3. Push.
    let bundle_remote = cx
        .registry
        .as_ref()
        .map(|_| format!("{}:{}", cx.bundle_repo, cx.remote_tag));
    if let Some(remote) = &bundle_remote {
        let mut step = Step {
            id: "push-bundle".into(),
            what: format!("push the bundle image to {remote}"),
            command: cx.command_owned(
                &cx.push_args(&format!("{}:{}", s(&cx.layout), cx.bundle_tag), remote),
            ),
            writes: vec![remote.clone()],
            digest: Some(bundle_digest.clone()),
            state: State::Planned,
        };
        match rt.block_on(cx.remote_digest(remote))? {
            Some(d) if d == bundle_digest => {
                step.state = State::Done("the registry serves this digest for the tag".into());
            }
            Some(d) => {
                return Err(format!(
                    "{remote} already holds {d}, not the {bundle_digest} this release builds: \
                     a released version is never overwritten (release a new version, or delete \
                     the tag if that release was a mistake)"
                )
                .into());
            }
            None => {}
        }
        cx.execute(&mut step, &mut steps)?;
    }

    // 4. Sign.
    if cx.key.generated && !cx.key.key.exists() {
        let mut step = Step {
            id: "key".into(),
            what: format!(
                "generate the signing key {} (public key {}, password in {})",
                s(&cx.key.key),
                s(&cx.key.public),
                s(cx.key.password_file.as_deref().unwrap_or(Path::new("")))
            ),
            command: vec![],
            writes: vec![
                s(&cx.key.key),
                s(&cx.key.public),
                s(cx.key.password_file.as_deref().unwrap_or(Path::new(""))),
            ],
            digest: None,
            state: State::Planned,
        };
        if !cx.dry_run {
            cx.generate_key()?;
            step.state = State::Ran;
            // Said even with -q: the user has to know where the key is.
            eprintln!(
                "generated the signing key {} (password in {}); publish {} for verification \
                 and keep the key: later releases sign with it",
                s(&cx.key.key),
                s(cx.key.password_file.as_deref().unwrap_or(Path::new(""))),
                s(&cx.key.public)
            );
        }
        steps.push(step);
    }
    let (sign_target, verify_target) = match &bundle_remote {
        Some(_) => {
            let r = format!("{}@{bundle_digest}", cx.bundle_repo);
            (r.clone(), r)
        }
        None => {
            let r = format!("{}:{}", s(&cx.layout), cx.bundle_tag);
            (r.clone(), r)
        }
    };
    let sig_tag = format!("sha256-{}.sig", bundle_digest.trim_start_matches("sha256:"));
    let signature_ref = match &bundle_remote {
        Some(_) => format!("{}:{sig_tag}", cx.bundle_repo),
        None => format!("{}:{sig_tag}", s(&cx.layout)),
    };
    let mut sign_args: Vec<String> = vec!["sign".into(), "--key".into(), s(&cx.key.key)];
    if let Some(f) = &cx.key.password_file {
        sign_args.extend(["--password-file".into(), s(f)]);
    }
    sign_args.extend([
        "-a".into(),
        format!("release={}", cx.version),
        "--identity".into(),
        cx.bundle_repo.clone(),
    ]);
    if cx.insecure {
        sign_args.push("--insecure".into());
    }
    sign_args.push(sign_target);
    let mut step = Step {
        id: "sign".into(),
        what: format!("sign {} with {}", bundle_digest, s(&cx.key.key)),
        command: cx.command_owned(&sign_args),
        writes: vec![signature_ref.clone()],
        digest: Some(bundle_digest.clone()),
        state: State::Planned,
    };
    if cx.key.public.exists() {
        let mut verify: Vec<String> = vec![
            "verify".into(),
            "--key".into(),
            s(&cx.key.public),
            "--identity".into(),
            cx.bundle_repo.clone(),
        ];
        if cx.insecure {
            verify.push("--insecure".into());
        }
        verify.push(verify_target);
        let refs: Vec<&str> = verify.iter().map(String::as_str).collect();
        let r = cx.opship_status(&refs)?;
        match r.code {
            0 => step.state = State::Done("a signature by this key verifies".into()),
            1 => {}
            _ => {
                // An image the layout or registry does not have yet (dry run) also lands here.
                if !cx.dry_run {
                    return Err(format!(
                        "checking the signatures of {bundle_digest} failed: {}",
                        r.stderr.trim()
                    )
                    .into());
                }
            }
        }
    }
    cx.execute(&mut step, &mut steps)?;

    // 5. Catalogs: only now, with the image in place and signed.
    let entry_image = format!("{}@{bundle_digest}", cx.bundle_repo);
    let catalog_results = match catalog_steps(
        &cx,
        &rt,
        &staged_layout,
        &entry_image,
        &bundle_digest,
        &mut steps,
    )? {
        Ok(results) => results,
        Err(status) => return Ok(status),
    };

    // 6. The Helm chart.
    let (chart_dir, archive, chart_ref) = chart_steps(
        &cx,
        &rt,
        &staged_chart_dir,
        &chart_name,
        &chart_archive_name,
        &chart_digest,
        &mut steps,
    )?;

    let after = snapshot(&cx.written_roots());
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

    // The `.sig` manifest as it is now (the signatures of this digest, ours among them).
    let signature_digest = match &bundle_remote {
        Some(_) => rt.block_on(cx.remote_digest(&signature_ref))?,
        None => layout_digest(&cx.layout, &sig_tag),
    };
    let summary = serde_json::json!({
        "package": cx.project.config.package,
        "version": cx.version,
        "dryRun": cx.dry_run,
        "registry": cx.registry,
        "bundle": {
            "dir": s(&cx.bundle_dir),
            "layout": format!("{}:{}", s(&cx.layout), cx.bundle_tag),
            "reference": bundle_remote,
            "repository": cx.bundle_repo,
            "digest": bundle_digest,
        },
        "signature": {
            "reference": signature_ref,
            "digest": signature_digest,
            "key": s(&cx.key.key),
            "publicKey": s(&cx.key.public),
            "generatedKey": cx.key.generated,
        },
        "catalogs": catalog_results,
        "chart": {
            "dir": s(&chart_dir),
            "archive": s(&archive),
            "digest": chart_digest,
            "reference": chart_ref,
        },
        "steps": steps.iter().map(|st| serde_json::json!({
            "id": st.id,
            "description": st.what,
            "status": st.state.word(),
            "reason": match &st.state { State::Done(why) => Some(why.as_str()), _ => None },
            "command": st.command,
            "writes": st.writes,
            "digest": st.digest,
        })).collect::<Vec<_>>(),
        "filesChanged": changed,
    });
    let mut out = std::io::stdout().lock();
    match args.output {
        RegistryOutput::Json => {
            serde_json::to_writer_pretty(&mut out, &summary)?;
            writeln!(out)?;
        }
        RegistryOutput::Text => write_text(&mut out, &summary, &steps)?,
    }
    Ok(ExitStatus::Success)
}

/// The catalog steps of each target: add, validate, build the image, push it. Returns the
/// summary of each catalog, or `Err(Failure)` when a catalog does not validate.
fn catalog_steps(
    cx: &Context,
    rt: &tokio::runtime::Runtime,
    staged_layout: &Path,
    entry_image: &str,
    bundle_digest: &str,
    steps: &mut Vec<Step>,
) -> Result<Result<Vec<serde_json::Value>, ExitStatus>, CmdError> {
    let channels = cx.channels();
    let mut catalog_results = Vec::new();
    for target in &cx.catalogs {
        let label = target.name.clone().unwrap_or_else(|| s(&target.dir));
        let mut add: Vec<String> = vec![
            "catalog".into(),
            "add".into(),
            "--bundle".into(),
            format!("{}:{}", s(&cx.layout), cx.bundle_tag),
            "--image".into(),
            entry_image.to_owned(),
        ];
        match &target.name {
            Some(n) => add.extend(["--target".into(), n.clone()]),
            None => {
                add.extend([
                    "--index".into(),
                    s(&target.dir),
                    "--channel".into(),
                    channels.join(","),
                ]);
                if let Some(d) = &cx.project.config.default_channel {
                    add.extend(["--default-channel".into(), d.clone()]);
                }
                // The release's own skipRange (also in the CSV) becomes the channel entry's.
                if let Some(r) = cx
                    .project
                    .release(&cx.version)
                    .and_then(|r| r.skip_range.clone())
                {
                    add.extend(["--skip-range-value".into(), r]);
                }
            }
        }
        let mut step = Step {
            id: format!("catalog-add:{label}"),
            what: format!("add {entry_image} to the catalog {}", s(&target.dir)),
            command: cx.command_owned(&add),
            writes: vec![s(&target.dir.join(&cx.project.config.package))],
            digest: Some(bundle_digest.to_owned()),
            state: State::Planned,
        };
        if let Some(why) = catalog_has(
            &target.dir,
            &cx.project.config.package,
            &cx.version,
            entry_image,
        )? {
            step.state = State::Done(why);
        }
        let add_pending = step.state == State::Planned;
        cx.execute(&mut step, steps)?;

        let mut step = Step {
            id: format!("catalog-validate:{label}"),
            what: format!("validate the catalog {}", s(&target.dir)),
            command: cx.command(&["catalog", "validate", &s(&target.dir)]),
            writes: vec![],
            digest: None,
            state: if cx.dry_run && add_pending {
                State::AfterEarlier
            } else {
                State::Planned
            },
        };
        if cx.dry_run {
            steps.push(step);
        } else {
            let r = cx.opship_status(&["catalog", "validate", &s(&target.dir)])?;
            eprint!("{}", r.stdout);
            let problem = format!(
                "the catalog {} does not validate after adding {}: fix it and run the \
                 release again (the bundle image and its signature are done and will be \
                 skipped)",
                s(&target.dir),
                cx.version
            );
            match r.code {
                0 => {}
                // Findings: exit 1, as `catalog validate` itself.
                1 => {
                    eprint!("{}", r.stderr);
                    eprintln!("error: {problem}");
                    return Ok(Err(ExitStatus::Failure));
                }
                _ => {
                    eprint!("{}", r.stderr);
                    return Err(problem.into());
                }
            }
            step.state = State::Ran;
            steps.push(step);
        }

        // The catalog image: built in the stage first for its digest.
        let mut catalog_digest: Option<String> = None;
        if !(cx.dry_run && add_pending) && target.dir.exists() {
            let out = cx
                .opship(&[
                    "catalog",
                    "build",
                    &s(&target.dir),
                    "--layout",
                    &s(staged_layout),
                    "--tag",
                    &target.layout_tag,
                ])
                .map_err(|e| e.into_error("catalog build"))?;
            catalog_digest = second_word(&out);
        }
        let mut step = Step {
            id: format!("catalog-build:{label}"),
            what: format!(
                "build the catalog image {}:{}",
                s(&cx.layout),
                target.layout_tag
            ),
            command: cx.command(&[
                "catalog",
                "build",
                &s(&target.dir),
                "--layout",
                &s(&cx.layout),
                "--tag",
                &target.layout_tag,
            ]),
            writes: vec![format!("{}:{}", s(&cx.layout), target.layout_tag)],
            digest: catalog_digest.clone(),
            state: if catalog_digest.is_none() {
                State::AfterEarlier
            } else {
                State::Planned
            },
        };
        if catalog_digest.is_some()
            && layout_digest(&cx.layout, &target.layout_tag) == catalog_digest
        {
            step.state = State::Done("the layout tag has this digest".into());
        }
        if let Some(out) = cx.execute(&mut step, steps)? {
            catalog_digest = second_word(&out);
            if let Some(last) = steps.last_mut() {
                last.digest = catalog_digest.clone();
            }
        }
        if let Some(remote) = &target.remote {
            let mut step = Step {
                id: format!("push-catalog:{label}"),
                what: format!("push the catalog image to {remote}"),
                command: cx.command_owned(
                    &cx.push_args(&format!("{}:{}", s(&cx.layout), target.layout_tag), remote),
                ),
                writes: vec![remote.clone()],
                digest: catalog_digest.clone(),
                state: if catalog_digest.is_none() {
                    State::AfterEarlier
                } else {
                    State::Planned
                },
            };
            if let Some(d) = &catalog_digest
                && rt.block_on(cx.remote_digest(remote))?.as_ref() == Some(d)
            {
                step.state = State::Done("the registry serves this digest for the tag".into());
            }
            cx.execute(&mut step, steps)?;
        }
        catalog_results.push(serde_json::json!({
            "name": target.name,
            "dir": s(&target.dir),
            "entryImage": entry_image,
            "repository": cx.catalog_repo,
            "image": {
                "layout": format!("{}:{}", s(&cx.layout), target.layout_tag),
                "reference": target.remote,
                "digest": catalog_digest,
            },
        }));
    }

    Ok(Ok(catalog_results))
}

/// The chart steps: render, package, push (with a registry). Returns the chart directory, the
/// archive and the chart's `oci://` reference.
fn chart_steps(
    cx: &Context,
    rt: &tokio::runtime::Runtime,
    staged_chart_dir: &Path,
    chart_name: &str,
    chart_archive_name: &str,
    chart_digest: &str,
    steps: &mut Vec<Step>,
) -> Result<(PathBuf, PathBuf, Option<String>), CmdError> {
    let chart_dir = cx.chart_out.join(chart_name);
    let mut step = Step {
        id: "chart-render".into(),
        what: format!("render the Helm chart into {}", s(&chart_dir)),
        command: cx.command(&[
            "chart",
            "render",
            "--bundle",
            &s(&cx.bundle_dir),
            "--output",
            &s(&cx.chart_out),
        ]),
        writes: vec![s(&chart_dir)],
        digest: None,
        state: State::Planned,
    };
    if same_tree(staged_chart_dir, &chart_dir) {
        step.state = State::Done("the directory holds exactly the rendered files".into());
    }
    cx.execute(&mut step, steps)?;
    let archive = cx.chart_out.join(chart_archive_name);
    let mut step = Step {
        id: "chart-package".into(),
        what: format!("package the chart into {}", s(&archive)),
        command: cx.command(&[
            "chart",
            "package",
            &s(&chart_dir),
            "--destination",
            &s(&cx.chart_out),
        ]),
        writes: vec![s(&archive)],
        digest: Some(chart_digest.to_owned()),
        state: State::Planned,
    };
    if std::fs::read(&archive).is_ok_and(|b| Digest::of(&b).as_str() == chart_digest) {
        step.state = State::Done("the archive has this digest".into());
    }
    cx.execute(&mut step, steps)?;
    let mut chart_ref = None;
    if let Some(ns) = &cx.registry {
        let version_tag = cx.version.replace('+', "_");
        let remote = format!("{ns}/{chart_name}:{version_tag}");
        let mut push: Vec<String> = vec![
            "chart".into(),
            "push".into(),
            s(&archive),
            format!("oci://{ns}"),
        ];
        if cx.insecure {
            push.push("--insecure".into());
        }
        let mut step = Step {
            id: "push-chart".into(),
            what: format!("push the chart to oci://{remote}"),
            command: cx.command_owned(&push),
            writes: vec![format!("oci://{remote}")],
            digest: None,
            state: State::Planned,
        };
        // The chart manifest's one layer is the archive: same digest, same chart. (A
        // different chart under the tag is refused by `chart push` itself.)
        if let Some(m) = rt.block_on(cx.remote_manifest(&remote))?
            && serde_json::from_slice::<serde_json::Value>(&m.bytes)
                .is_ok_and(|v| v["layers"][0]["digest"].as_str() == Some(chart_digest))
        {
            step.state = State::Done("the registry holds this chart archive".into());
            step.digest = Some(m.digest.as_str().to_owned());
        }
        if let Some(out) = cx.execute(&mut step, steps)? {
            let line = out.lines().next().unwrap_or_default().to_owned();
            let digest = line
                .split_once('@')
                .map(|(_, d)| d.split_whitespace().next().unwrap_or_default().to_owned());
            if let Some(last) = steps.last_mut() {
                last.digest = digest;
                if line.contains("(unchanged)") {
                    last.state = State::Done("the registry holds this chart already".into());
                }
            }
        }
        chart_ref = Some(format!("oci://{remote}"));
    }

    Ok((chart_dir, archive, chart_ref))
}

/// What staging produced: the artefacts of the release, built in a temporary directory, and
/// their digests.
struct Staged {
    bundle: PathBuf,
    layout: PathBuf,
    bundle_digest: String,
    chart_dir: PathBuf,
    chart_name: String,
    chart_digest: String,
    chart_archive_name: String,
}

/// Generates, validates and builds the bundle and renders and packages the chart under
/// `dir`: every digest of the release before anything is written. `Err(status)` when the
/// bundle has validation errors (the report is printed).
fn stage(cx: &Context, dir: &Path) -> Result<Result<Staged, ExitStatus>, CmdError> {
    let staged_bundle = dir.join("bundle");
    let staged_layout = dir.join("oci");
    let staged_charts = dir.join("charts");
    cx.opship(&[
        "generate",
        "bundle",
        "--version",
        &cx.version,
        "--output-dir",
        &s(&staged_bundle),
    ])
    .map_err(|e| e.into_error("generate"))?;
    let validation = cx.opship_status(&["validate", "bundle", &s(&staged_bundle)])?;
    // The report names the staged copy; the user knows the files by the bundle directory.
    let report = validation
        .stdout
        .replace(&s(&staged_bundle), &s(&cx.bundle_dir));
    if validation.code == 1 {
        eprint!("{report}");
        eprintln!(
            "error: the bundle of {} has errors; nothing was released",
            cx.version
        );
        return Ok(Err(ExitStatus::Failure));
    }
    if validation.code != 0 {
        eprint!("{report}{}", validation.stderr);
        return Err(format!(
            "validating the bundle of {} failed (exit {})",
            cx.version, validation.code
        )
        .into());
    }
    if !cx.quiet && report.contains("warning[") {
        eprint!("{report}");
    }
    let built = cx
        .opship(&[
            "build",
            "--layout",
            &s(&staged_layout),
            "--tag",
            &cx.bundle_tag,
            &s(&staged_bundle),
        ])
        .map_err(|e| e.into_error("build"))?;
    let bundle_digest = second_word(&built).ok_or("build printed no digest")?;
    let rendered = cx
        .opship(&[
            "chart",
            "render",
            "--bundle",
            &s(&staged_bundle),
            "--output",
            &s(&staged_charts),
        ])
        .map_err(|e| e.into_error("chart render"))?;
    let staged_chart_dir = PathBuf::from(rendered.lines().next().unwrap_or_default().trim());
    let chart_name = staged_chart_dir
        .file_name()
        .ok_or("chart render printed no directory")?
        .to_string_lossy()
        .into_owned();
    let packaged = cx
        .opship(&[
            "chart",
            "package",
            &s(&staged_chart_dir),
            "--destination",
            &s(&staged_charts),
        ])
        .map_err(|e| e.into_error("chart package"))?;
    let chart_digest = second_word(&packaged).ok_or("chart package printed no digest")?;
    let chart_archive_name = PathBuf::from(first_word(&packaged).unwrap_or_default())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or("chart package printed no archive")?;

    Ok(Ok(Staged {
        bundle: staged_bundle,
        layout: staged_layout,
        bundle_digest,
        chart_dir: staged_chart_dir,
        chart_name,
        chart_digest,
        chart_archive_name,
    }))
}

/// The text summary: every step with its state, command, writes and digest, then the
/// artefacts.
fn write_text(
    out: &mut impl Write,
    summary: &serde_json::Value,
    steps: &[Step],
) -> std::io::Result<()> {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let dry_run = summary["dryRun"] == true;
    let verb = if dry_run { "plan for" } else { "released" };
    writeln!(
        out,
        "{verb} {} {}",
        text(&summary["package"]),
        text(&summary["version"])
    )?;
    for st in steps {
        let mark = match &st.state {
            State::Done(why) => format!("done ({why})"),
            State::Ran => "ran".into(),
            State::Planned => "would run".into(),
            State::AfterEarlier => "would run (checked after the steps before it)".into(),
        };
        writeln!(out, "  {:<28} {mark}", st.id)?;
        writeln!(out, "      {}", st.what)?;
        if !st.command.is_empty() {
            writeln!(out, "      $ {}", st.command.join(" "))?;
        }
        for w in &st.writes {
            writeln!(out, "      writes {w}")?;
        }
        if let Some(d) = &st.digest {
            writeln!(out, "      digest {d}")?;
        }
    }
    writeln!(out, "bundle image  {}", text(&summary["bundle"]["digest"]))?;
    if let Some(r) = summary["bundle"]["reference"].as_str() {
        writeln!(out, "  {r}")?;
    }
    writeln!(
        out,
        "signature     {}",
        text(&summary["signature"]["reference"])
    )?;
    writeln!(
        out,
        "public key    {}",
        text(&summary["signature"]["publicKey"])
    )?;
    for c in summary["catalogs"].as_array().into_iter().flatten() {
        writeln!(
            out,
            "catalog       {} image {} {}",
            text(&c["dir"]),
            c["image"]["reference"]
                .as_str()
                .or(c["image"]["layout"].as_str())
                .unwrap_or_default(),
            c["image"]["digest"]
                .as_str()
                .unwrap_or("(after the catalog add)")
        )?;
    }
    writeln!(
        out,
        "chart         {} {}",
        text(&summary["chart"]["archive"]),
        text(&summary["chart"]["digest"])
    )?;
    if let Some(r) = summary["chart"]["reference"].as_str() {
        writeln!(out, "  {r}")?;
    }
    if !dry_run {
        let changed = summary["filesChanged"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        writeln!(out, "files changed: {}", changed.len())?;
        for f in &changed {
            writeln!(out, "  {}", text(f))?;
        }
    }
    Ok(())
}

impl Context {
    fn new(project: Project, args: &ReleaseArgs, quiet: bool) -> Result<Context, CmdError> {
        let c = &project.config;
        let registry = args
            .registry
            .clone()
            .or_else(|| c.registry.clone())
            .map(|r| r.trim_end_matches('/').to_owned())
            .filter(|r| !r.is_empty());
        if let Some(r) = &registry {
            opship_oci::batch::check_namespace(r)?;
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
        let tag = args.version.replace('+', "_");
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
        let key = match (&args.key, &c.signing) {
            (Some(k), signing) => KeyPlan {
                public: public_of(k),
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
                    .unwrap_or_else(|| public_of(&project.resolve(&sg.key))),
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
        if !key.generated && !key.key.exists() {
            return Err(format!(
                "the signing key {} does not exist (`opship key generate` makes one; without \
                 --key and `signing:` a key is generated under .opship/)",
                s(&key.key)
            )
            .into());
        }
        if !key.generated && !key.public.exists() {
            return Err(format!(
                "the public key {} of {} is missing: it is needed to recognise signatures \
                 already made (set `signing.publicKey`)",
                s(&key.public),
                s(&key.key)
            )
            .into());
        }
        Ok(Context {
            exe: std::env::current_exe()?,
            version: args.version.clone(),
            dry_run: args.dry_run,
            quiet,
            insecure: args.insecure,
            bundle_dir: project.bundle_dir(&args.version),
            layout: project.resolve(Path::new("dist/oci")),
            bundle_tag: tag,
            bundle_repo,
            catalog_repo,
            remote_tag,
            catalogs,
            chart_out,
            key,
            registry,
            project,
        })
    }

    /// Files and directories the release may write, for the list of changed files.
    fn written_roots(&self) -> Vec<PathBuf> {
        let mut v = vec![
            self.bundle_dir.clone(),
            self.layout.clone(),
            self.chart_out.clone(),
            self.project.resolve(Path::new(".opship")),
        ];
        v.extend(self.catalogs.iter().map(|c| c.dir.clone()));
        v
    }

    /// `push LAYOUT:TAG REF [--insecure]`.
    fn push_args(&self, source: &str, target: &str) -> Vec<String> {
        let mut v = vec!["push".to_owned(), source.to_owned(), target.to_owned()];
        if self.insecure {
            v.push("--insecure".to_owned());
        }
        v
    }

    /// The command line of an `opship` step, as shown in the plan.
    fn command(&self, args: &[&str]) -> Vec<String> {
        let owned: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        self.command_owned(&owned)
    }

    fn command_owned(&self, args: &[String]) -> Vec<String> {
        let mut v = vec!["opship".to_owned(), "-c".to_owned(), s(&self.project.path)];
        v.extend(args.iter().cloned());
        v
    }

    /// Runs `opship ARGS` (with this project's config); its standard output, or the failure.
    fn opship(&self, args: &[&str]) -> Result<String, StepFailure> {
        let r = self
            .opship_status(args)
            .map_err(|e| StepFailure::Spawn(e.to_string()))?;
        if r.code == 0 {
            Ok(r.stdout)
        } else {
            Err(StepFailure::Exit {
                code: r.code,
                command: self.command(args).join(" "),
                stderr: r.stderr,
            })
        }
    }

    fn opship_status(&self, args: &[&str]) -> Result<Finished, CmdError> {
        let mut argv: Vec<OsString> = vec!["-c".into(), self.project.path.clone().into()];
        argv.extend(args.iter().map(OsString::from));
        let out = Command::new(&self.exe)
            .args(&argv)
            .env_remove("OPSHIP_CONFIG")
            .stdin(Stdio::null())
            .output()?;
        Ok(Finished {
            code: out.status.code().unwrap_or(2),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Runs a planned step (unless done or a dry run) and records it; its standard output
    /// when it ran.
    fn execute(&self, step: &mut Step, steps: &mut Vec<Step>) -> Result<Option<String>, CmdError> {
        let mut output = None;
        if matches!(step.state, State::Planned | State::AfterEarlier) && !self.dry_run {
            let args: Vec<&str> = step.command[3..].iter().map(String::as_str).collect();
            if !self.quiet {
                eprintln!("release: {}", step.what);
            }
            let r = self.opship_status(&args)?;
            if r.code != 0 {
                eprint!("{}", r.stderr);
                return Err(format!(
                    "release {} stopped at step `{}` ({}): `{}` failed (exit {}){}. Run the \
                     same release again once the cause is fixed: finished steps are recognised \
                     and skipped.",
                    self.version,
                    step.id,
                    step.what,
                    step.command.join(" "),
                    r.code,
                    last_error_line(&r.stderr)
                        .map(|l| format!(": {l}"))
                        .unwrap_or_default()
                )
                .into());
            }
            // With -v, what each step said (pushed blobs, signature locations, warnings).
            if tracing::enabled!(tracing::Level::INFO) {
                eprint!("{}{}", r.stdout, r.stderr);
            }
            step.state = State::Ran;
            output = Some(r.stdout);
        }
        steps.push(step.clone());
        Ok(output)
    }

    /// The digest a registry serves for `reference`, `None` when it does not have it.
    async fn remote_digest(&self, reference: &str) -> Result<Option<String>, CmdError> {
        Ok(self
            .remote_manifest(reference)
            .await?
            .map(|m| m.digest.as_str().to_owned()))
    }

    /// The manifest a registry serves for `reference`, `None` when it does not have it.
    async fn remote_manifest(
        &self,
        reference: &str,
    ) -> Result<Option<opship_oci::registry::RawManifest>, CmdError> {
        let r = registry::parse_reference(reference)?;
        // The same credentials, timeout and retries as the steps' own commands get.
        let env_number = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .map(|v| {
                    v.trim()
                        .parse::<f64>()
                        .map_err(|_| format!("{name} `{v}` is not a number"))
                })
                .transpose()
        };
        let args = crate::cli::RegistryArgs {
            username: None,
            password_stdin: false,
            insecure: self.insecure,
            timeout: env_number("OPSHIP_REGISTRY_TIMEOUT")?.unwrap_or(60.0),
            retries: env_number("OPSHIP_REGISTRY_RETRIES")?.map_or(3, |n| n.max(0.0) as u32),
        };
        let client: Registry = super::registry::client(&r, &args, false)?;
        client
            .manifest_if_any(&r)
            .await
            .map_err(|e| format!("looking up {reference}: {e}").into())
    }

    /// Channels of the release: its own, else the project's, else `alpha`, as the bundle's
    /// (`generate bundle` gives the same default).
    fn channels(&self) -> Vec<String> {
        self.project
            .release(&self.version)
            .and_then(|r| r.channels.clone())
            .filter(|c| !c.is_empty())
            .or_else(|| Some(self.project.config.channels.clone()).filter(|c| !c.is_empty()))
            .unwrap_or_else(|| vec!["alpha".to_owned()])
    }

    /// Writes `.opship/cosign.{key,pub,password}`: a random password, mode 0600, next to
    /// the key it opens; never overwrites.
    fn generate_key(&self) -> Result<(), CmdError> {
        let pw_file = self
            .key
            .password_file
            .as_ref()
            .ok_or("no password file for the generated key")?;
        if let Some(dir) = pw_file.parent() {
            std::fs::create_dir_all(dir)?;
            let ignore = dir.join(".gitignore");
            if !ignore.exists() {
                opship_core::fsutil::write_atomic_with_mode(
                    &ignore,
                    b"# The release signing key: never commit the private key or its password.\ncosign.key\ncosign.password\n",
                    0o644,
                )?;
            }
        }
        if !pw_file.exists() {
            let mut bytes = [0u8; 24];
            std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
            let pw: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            opship_core::fsutil::write_atomic_with_mode(
                pw_file,
                format!("{pw}\n").as_bytes(),
                0o600,
            )?;
        }
        let prefix = self.key.key.with_extension("");
        self.opship(&[
            "key",
            "generate",
            "--output-key-prefix",
            &s(&prefix),
            "--password-file",
            &s(pw_file),
        ])
        .map_err(|e| e.into_error("key generate"))?;
        Ok(())
    }
}

struct Finished {
    code: i32,
    stdout: String,
    stderr: String,
}

enum StepFailure {
    Spawn(String),
    Exit {
        code: i32,
        command: String,
        stderr: String,
    },
}

impl StepFailure {
    fn into_error(self, what: &str) -> CmdError {
        match self {
            StepFailure::Spawn(e) => format!("{what}: could not run opship: {e}").into(),
            StepFailure::Exit {
                code,
                command,
                stderr,
            } => {
                eprint!("{stderr}");
                format!(
                    "staging the release failed at {what}: `{command}` exited {code}{}; nothing \
                     was released",
                    last_error_line(&stderr)
                        .map(|l| format!(": {l}"))
                        .unwrap_or_default()
                )
                .into()
            }
        }
    }
}

fn last_error_line(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("error:"))
        .map(|l| l.trim_start_matches("error:").trim().to_owned())
}

/// `KEY.key` → `KEY.pub`.
fn public_of(key: &Path) -> PathBuf {
    key.with_extension("pub")
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn first_word(text: &str) -> Option<String> {
    text.split_whitespace().next().map(str::to_owned)
}

fn second_word(text: &str) -> Option<String> {
    text.split_whitespace().nth(1).map(str::to_owned)
}

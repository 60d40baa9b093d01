//! `opship release`: flags and environment into the release library's options, its events
//! drawn as a progress bar on a terminal, else as progress lines (or JSON lines with
//! `--events jsonl`), its summary printed as text or JSON. The release itself is `opship_release`.

use std::io::Write;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use opship_release::{Event, Options, Outcome, State, Summary};
use zeroize::Zeroizing;

use super::{CmdError, ExitStatus};
use crate::cli::{EventFormat, RegistryArgs, RegistryOutput, ReleaseArgs};

/// Runs `opship release`.
pub fn run(args: &ReleaseArgs, config: Option<&Path>, quiet: bool) -> Result<ExitStatus, CmdError> {
    let project = super::load_project(config)?.ok_or(
        "opship release needs the project config: ./opship.yaml or --config FILE (opship init \
         writes one)",
    )?;
    let insecure = args.insecure;
    let pin = |b: &mut opship_core::bundle::Bundle| -> Result<(), String> {
        let mut one = vec![(args.version.clone(), PathBuf::new(), b.clone())];
        super::digests::pin_bundles(&mut one, insecure).map_err(|e| e.to_string())?;
        if let Some((_, _, pinned)) = one.pop() {
            *b = pinned;
        }
        Ok(())
    };
    let options = Options {
        version: args.version.clone(),
        registry: args.registry.clone(),
        key: args.key.clone(),
        password: if args.password_stdin {
            Some(super::sign::password(true, None, false)?)
        } else {
            std::env::var_os("COSIGN_PASSWORD")
                .map(|p| {
                    p.into_string()
                        .map(Zeroizing::new)
                        .map_err(|_| "COSIGN_PASSWORD is not valid UTF-8")
                })
                .transpose()?
        },
        insecure,
        dry_run: args.dry_run,
        registry_options: registry_options(insecure)?,
        source_date_epoch: super::source_date_epoch()?,
        pin_images: Some(&pin),
        keyless: opship_release::Keyless {
            options: super::keyless::options(&args.keyless, None),
            format: args.keyless.format.map(|f| match f {
                crate::cli::SignFormat::Cosign2 => opship_oci::cosign::signing::Format::Cosign2,
                crate::cli::SignFormat::Cosign3 => opship_oci::cosign::signing::Format::Cosign3,
            }),
            trusted_root: args.trusted_root.clone(),
        },
    };
    let jsonl = args.events == Some(EventFormat::Jsonl);
    // The bar only for people at a terminal: not with -q, JSON on either stream, or a log.
    let bar = (!quiet
        && !jsonl
        && args.output != RegistryOutput::Json
        && std::io::IsTerminal::is_terminal(&std::io::stderr()))
    .then(Bar::new);
    let mut on_event = |e: &Event<'_>| {
        if let Some(bar) = &bar {
            bar.show(e);
            return;
        }
        if jsonl {
            // The stream stays one object per step event and note (consumers rely on it); the
            // step count is for the bar.
            if matches!(e, Event::Planned { .. }) {
                return;
            }
            if !matches!(e, Event::Findings(_)) || !quiet {
                // One write per line: stderr is unbuffered, and a JSON value printed straight
                // to it is one write per token.
                let mut line = e.to_json().to_string();
                line.push('\n');
                let _ = std::io::stderr().lock().write_all(line.as_bytes());
            }
            if let Event::Important(n) = e {
                eprintln!("{n}");
            }
            return;
        }
        match e {
            Event::Started(step) if !quiet => eprintln!("release: {}", step.description),
            Event::Note(n) => super::progress::note(n),
            // Said even with -q: the user has to know where the key is.
            Event::Important(n) => eprintln!("{n}"),
            Event::Findings(r) if !quiet => eprint!("{}", render_findings(r)),
            _ => {}
        }
    };
    let outcome = opship_release::release(project, options, &mut on_event);
    drop(bar);
    let outcome = outcome?;
    match outcome {
        Outcome::BundleInvalid { report } => {
            eprint!("{}", render_findings(&report));
            eprintln!(
                "error: the bundle of {} has errors; nothing was released",
                args.version
            );
            Ok(ExitStatus::Failure)
        }
        Outcome::CatalogUnverified { dir, verification } => {
            for image in verification.failures() {
                eprintln!("{image}");
            }
            eprintln!(
                "error: the catalog {} references {} image(s) that do not pass the `verify:` \
                 policy; nothing was written or pushed",
                opship_core::paths::show(&dir),
                verification.failures().len()
            );
            Ok(ExitStatus::Failure)
        }
        Outcome::CatalogInvalid { dir, report } => {
            eprint!("{}", report.warnings_text());
            eprintln!("{}", report.error_tree());
            eprintln!(
                "error: the catalog {} does not validate after adding {}: fix it and run the \
                 release again (the bundle image and its signature are done and will be \
                 skipped)",
                opship_core::paths::show(&dir),
                args.version
            );
            Ok(ExitStatus::Failure)
        }
        Outcome::Released(summary) => {
            let mut out = std::io::stdout().lock();
            match args.output {
                RegistryOutput::Json => {
                    serde_json::to_writer_pretty(&mut out, &summary.to_json())?;
                    writeln!(out)?;
                }
                RegistryOutput::Text => write_text(&mut out, &summary)?,
            }
            Ok(ExitStatus::Success)
        }
    }
}

/// The progress view of a release on a terminal: a spinner while it stages and checks,
/// then a bar over its steps (the count comes with [`Event::Planned`]) naming the step that
/// runs; notes and findings print above it. Cleared when the release ends.
struct Bar(ProgressBar);

impl Bar {
    fn new() -> Self {
        // No colours in the templates, so NO_COLOR has nothing to turn off.
        let spinner = ProgressStyle::with_template("{spinner} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_style(spinner)
            .with_message("release: staging (generate, validate, build, chart)");
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
        Bar(bar)
    }

    fn show(&self, e: &Event<'_>) {
        let bar = &self.0;
        match e {
            Event::Planned { steps } => {
                let style = ProgressStyle::with_template(
                    "{spinner} release [{bar:30}] {pos}/{len} {wide_msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
                bar.set_length(*steps as u64);
                bar.set_style(style);
                bar.set_message("checking");
            }
            Event::Started(step) => bar.set_message(step.description.clone()),
            Event::Finished(_) | Event::Skipped(_) => bar.inc(1),
            Event::Note(n) | Event::Important(n) => bar.println(*n),
            Event::Findings(r) => bar.suspend(|| eprint!("{}", render_findings(r))),
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

fn render_findings(report: &opship_validate::BundleReport) -> String {
    opship_validate::report::render(
        &[Ok(report.clone())],
        opship_validate::report::Format::Human,
        &opship_validate::report::RenderOptions { color: false },
    )
}

/// The registry client settings of every step: `OPSHIP_REGISTRY_TIMEOUT`,
/// `OPSHIP_REGISTRY_RETRIES` and `OPSHIP_REGISTRY_DEADLINE`, as the registry commands read them.
fn registry_options(insecure: bool) -> Result<opship_oci::Options, CmdError> {
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
    let args = RegistryArgs {
        username: None,
        password_stdin: false,
        insecure,
        timeout: env_number("OPSHIP_REGISTRY_TIMEOUT")?.unwrap_or(60.0),
        retries: env_number("OPSHIP_REGISTRY_RETRIES")?.map_or(3, |n| n.max(0.0) as u32),
    };
    let mut options = super::registry::options(&args, false)?;
    options.deadline = super::registry::env_deadline()?;
    Ok(options)
}

/// The text summary: every step with its state, command, writes and digest, then the
/// artefacts.
fn write_text(out: &mut impl Write, summary: &Summary) -> std::io::Result<()> {
    let verb = if summary.dry_run {
        "plan for"
    } else {
        "released"
    };
    writeln!(out, "{verb} {} {}", summary.package, summary.version)?;
    for st in &summary.steps {
        let mark = match &st.state {
            State::Done(why) => format!("done ({why})"),
            State::Ran => "ran".into(),
            State::Planned => "would run".into(),
            State::AfterEarlier => "would run (checked after the steps before it)".into(),
        };
        writeln!(out, "  {:<28} {mark}", st.id)?;
        writeln!(out, "      {}", st.description)?;
        if !st.command.is_empty() {
            writeln!(out, "      $ {}", st.command_line())?;
        }
        for w in &st.writes {
            writeln!(out, "      writes {w}")?;
        }
        if let Some(d) = &st.digest {
            writeln!(out, "      digest {d}")?;
        }
    }
    writeln!(out, "bundle image  {}", summary.bundle.digest)?;
    if let Some(r) = &summary.bundle.reference {
        writeln!(out, "  {r}")?;
    }
    writeln!(out, "signature     {}", summary.signature.reference)?;
    if let Some(k) = &summary.signature.public_key {
        writeln!(out, "public key    {k}")?;
    }
    if let Some(k) = &summary.signature.keyless {
        match (&k.identity, &k.issuer) {
            (Some(id), Some(issuer)) => writeln!(out, "keyless       {id} (issuer {issuer})")?,
            _ => writeln!(out, "keyless       identity token from {}", k.token_source)?,
        }
    }
    for v in &summary.verified {
        writeln!(out, "verify:       {}", v.dir)?;
        for image in &v.images {
            writeln!(out, "  {image}")?;
        }
    }
    for c in &summary.catalogs {
        writeln!(
            out,
            "catalog       {} image {} {}",
            c.dir,
            c.image.reference.as_deref().unwrap_or(&c.image.layout),
            c.image
                .digest
                .as_deref()
                .unwrap_or("(after the catalog add)")
        )?;
        if let Some(sig) = &c.image.signature {
            writeln!(out, "  signature {sig}")?;
        }
    }
    writeln!(
        out,
        "chart         {} {}",
        summary.chart.archive, summary.chart.digest
    )?;
    if let Some(r) = &summary.chart.reference {
        writeln!(out, "  {r}")?;
    }
    if let Some(sig) = &summary.chart.signature {
        writeln!(out, "  signature {sig}")?;
    }
    if !summary.dry_run {
        writeln!(out, "files changed: {}", summary.files_changed.len())?;
        for f in &summary.files_changed {
            writeln!(out, "  {f}")?;
        }
    }
    Ok(())
}

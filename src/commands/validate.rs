//! `opship validate`: option parsing into the validation library's terms, rendering, exit status.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use opship_validate::report::{self, Format, RenderOptions};
use opship_validate::{Options, Suite, rule};

use super::{CmdError, ExitStatus};
use crate::cli::{
    OutputFormat, RulesFormat, ValidateArgs, ValidateBundleArgs, ValidateCommand,
    ValidateOperatorArgs, ValidateSuiteArgs, ValidateUpgradeArgs,
};

/// Runs `opship validate ...`.
pub fn run(args: &ValidateArgs) -> Result<ExitStatus, CmdError> {
    if args.list_rules {
        let text = match args.rules_format {
            RulesFormat::Text => rule::list_text(),
            RulesFormat::Markdown => rule::markdown(),
        };
        write_stdout(&text)?;
        return Ok(ExitStatus::Success);
    }
    if let Some(id) = &args.explain {
        let r = rule::find(id)
            .ok_or_else(|| format!("no rule `{id}`; `opship validate --list-rules` lists them"))?;
        write_stdout(&rule::explain(r))?;
        return Ok(ExitStatus::Success);
    }
    match &args.command {
        Some(ValidateCommand::Bundle(b)) => bundle(b),
        Some(ValidateCommand::Operator(o)) => operator(o),
        Some(ValidateCommand::Upgrade(u)) => upgrade(u),
        None => Err(
            "say what to validate: `opship validate bundle PATH...` (or --list-rules, \
                     --explain ID)"
                .into(),
        ),
    }
}

fn bundle(args: &ValidateBundleArgs) -> Result<ExitStatus, CmdError> {
    let opts = options(&args.suites)?;
    // Registry references are pulled (verified) into a temporary layout first; everything else
    // is a directory or a layout image, validated in parallel.
    // Registered: a signal removes it with what was pulled into it.
    let tmp = opship_core::fsutil::temp_dir(".opship-pull-")?;
    let mut pulled: Vec<Option<(PathBuf, String)>> = Vec::new();
    for (i, p) in args.paths.iter().enumerate() {
        pulled.push(match registry_reference(p) {
            Some(r) => {
                let layout = tmp.path().join(format!("image-{i}"));
                Some((layout.clone(), pull(&r, &layout)?))
            }
            None => None,
        });
    }
    let local: Vec<PathBuf> = args
        .paths
        .iter()
        .zip(&pulled)
        .filter(|(_, p)| p.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    let progress = super::progress::Progress::new("validated", args.paths.len());
    let mut local_results = opship_validate::validate_dirs_with(&local, &opts, &|p| {
        progress.item_done(&opship_core::paths::show(p).to_string());
    })
    .into_iter();
    let results: Vec<_> = args
        .paths
        .iter()
        .zip(pulled)
        .map(|(arg, p)| match p {
            Some((layout, tag)) => opship_validate::load::load_layout_as(&layout, &tag, arg)
                .map(|b| opship_validate::validate_report(&b, &opts, arg))
                .inspect(|_| progress.item_done(&opship_core::paths::show(arg).to_string())),
            None => local_results.next().expect("one result per local bundle"),
        })
        .collect();
    drop(progress);
    print_results(&results, args.output)
}

fn operator(args: &ValidateOperatorArgs) -> Result<ExitStatus, CmdError> {
    let mut opts = options(&args.suites)?;
    opts.optional.insert(Suite::Community);
    let results = opship_validate::community::validate_operator(&args.dir, &opts)?;
    print_results(&results, args.output)
}

fn upgrade(args: &ValidateUpgradeArgs) -> Result<ExitStatus, CmdError> {
    // A registry reference is pulled (verified) into a temporary layout first; registered, so
    // a signal removes it with what was pulled into it.
    let tmp = opship_core::fsutil::temp_dir(".opship-pull-")?;
    let load = |arg: &Path, i: usize| -> Result<_, CmdError> {
        Ok(match registry_reference(arg) {
            Some(r) => {
                let layout = tmp.path().join(format!("image-{i}"));
                let tag = pull(&r, &layout)?;
                opship_validate::load::load_layout_as(&layout, &tag, arg)
            }
            None => opship_validate::upgrade::load_source(arg),
        })
    };
    let old = load(&args.from, 0)?;
    let new = load(&args.to, 1)?;
    let result =
        old.and_then(|old| new.map(|new| opship_validate::upgrade::report(&old, &new, &args.to)));
    print_results(&[result], args.output)
}

fn print_results(
    results: &[opship_validate::Result<opship_validate::BundleReport>],
    output: OutputFormat,
) -> Result<ExitStatus, CmdError> {
    let format = match output {
        OutputFormat::Human => Format::Human,
        OutputFormat::Json => Format::Json,
        OutputFormat::Sarif => Format::Sarif,
        OutputFormat::Github => Format::Github,
    };
    let color = output == OutputFormat::Human
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text = report::render(results, format, &RenderOptions { color });
    write_stdout(&text)?;
    Ok(if results.iter().any(Result::is_err) {
        ExitStatus::Incomplete
    } else if results
        .iter()
        .flatten()
        .any(opship_validate::BundleReport::has_errors)
    {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn options(args: &ValidateSuiteArgs) -> Result<Options, CmdError> {
    let mut opts = Options::default();
    for name in &args.select_optional {
        if name.trim() == "all" {
            opts.optional
                .extend(Suite::ALL.into_iter().filter(|s| s.in_all()));
            continue;
        }
        let suites = Suite::select(name)
            .filter(|s| s.iter().all(|s| s.selectable()))
            .ok_or_else(|| {
                let names: Vec<&str> = Suite::ALL
                    .into_iter()
                    .filter(|s| s.selectable())
                    .map(Suite::name)
                    .collect();
                format!(
                    "unknown optional suite `{name}`; choose from {} or all",
                    names.join(", ")
                )
            })?;
        opts.optional.extend(suites);
    }
    opts.ocp_indices = args.ocp_indices.clone();
    if let Some(v) = &args.k8s_version {
        opts.k8s_version = Some(parse_k8s_version(v)?);
    }
    if let Some(path) = &args.categories {
        let text = opship_core::input::read_string(path, opship_core::input::Kind::Config)?;
        let doc: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not JSON: {e}", opship_core::paths::show(path)))?;
        let list = doc["categories"]
            .as_array()
            .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_owned)).collect())
            .ok_or_else(|| {
                format!(
                    "{}: expected {{\"categories\": [\"...\"]}} with string entries",
                    opship_core::paths::show(path)
                )
            })?;
        opts.categories = Some(list);
    }
    Ok(opts)
}

/// An argument that names an image in a registry rather than a local bundle: not an existing
/// path or layout, and its first component is a registry host (has a `.` or `:`, or is
/// `localhost`), as Docker decides.
pub(super) fn registry_reference(arg: &Path) -> Option<opship_oci::registry::Reference> {
    if arg.exists()
        || !matches!(
            opship_validate::Source::parse(arg),
            opship_validate::Source::Dir(_)
        )
    {
        return None;
    }
    let text = arg.to_str()?;
    let text = text.strip_prefix("docker://").unwrap_or(text);
    let (host, _) = text.split_once('/')?;
    if !(host.contains('.') || host.contains(':') || host == "localhost") {
        return None;
    }
    opship_oci::registry::parse_reference(text).ok()
}

/// Pulls an image into a fresh layout; returns the tag it is stored under.
pub(super) fn pull(
    reference: &opship_oci::registry::Reference,
    layout: &Path,
) -> Result<String, CmdError> {
    let found = opship_oci::auth::lookup(
        reference.resolve_registry(),
        &opship_oci::auth::Env::from_process(),
    )?;
    let client = opship_oci::registry::Registry::new(
        reference,
        found.auth,
        opship_oci::registry::Options::default(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(client.pull_to_layout(reference, layout, "image"))?;
    Ok("image".to_owned())
}

/// `1.30`, `v1.30`, `1.30.2` → a version (the patch defaults to 0).
fn parse_k8s_version(text: &str) -> Result<semver::Version, CmdError> {
    let t = text.trim().trim_start_matches('v');
    let full = match t.matches('.').count() {
        0 => format!("{t}.0.0"),
        1 => format!("{t}.0"),
        _ => t.to_owned(),
    };
    semver::Version::parse(&full)
        .map_err(|e| format!("--k8s-version `{text}` is not a version like 1.30: {e}").into())
}

fn write_stdout(text: &str) -> Result<(), CmdError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k8s_versions() {
        assert_eq!(
            parse_k8s_version("1.30").unwrap(),
            semver::Version::new(1, 30, 0)
        );
        assert_eq!(
            parse_k8s_version("v1.22").unwrap(),
            semver::Version::new(1, 22, 0)
        );
        assert_eq!(
            parse_k8s_version("1.29.3").unwrap(),
            semver::Version::new(1, 29, 3)
        );
        assert!(parse_k8s_version("one").is_err());
    }
}

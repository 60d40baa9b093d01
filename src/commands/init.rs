//! `opship init`: the starter config, or a config adopted from an operator-sdk project.

use std::path::{Path, PathBuf};

use opship_core::{config, operator_sdk};

use super::{CmdError, ExitStatus};
use crate::cli::InitArgs;

pub fn run(args: &InitArgs) -> Result<ExitStatus, CmdError> {
    let from = args.from_operator_sdk.clone().or_else(|| {
        (args.package.is_none() && Path::new("PROJECT").is_file()).then(|| PathBuf::from("."))
    });
    if let Some(dir) = from {
        return adopt(args, &dir);
    }
    let path = args.path.clone().unwrap_or_else(|| "opship.yaml".into());
    refuse_existing(&path, args.force)?;
    let package = match &args.package {
        Some(p) => p.clone(),
        None => std::env::current_dir()?
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default(),
    };
    if !config::is_dns1123_label(&package) {
        return Err(format!(
            "`{package}` is not a valid OLM package name (DNS-1123 label); pass --package"
        )
        .into());
    }
    opship_core::fsutil::write_atomic(&path, config::starter(&package).as_bytes())?;
    tracing::info!("wrote {}", opship_core::paths::show(&path));
    println!(
        "wrote {} for package {package}",
        opship_core::paths::show(&path)
    );
    Ok(ExitStatus::Success)
}

fn refuse_existing(path: &Path, force: bool) -> Result<(), CmdError> {
    if path.exists() && !force {
        return Err(format!(
            "{} already exists; pass --force to overwrite it",
            opship_core::paths::show(path)
        )
        .into());
    }
    Ok(())
}

fn adopt(args: &InitArgs, dir: &Path) -> Result<ExitStatus, CmdError> {
    let path = args.path.clone().unwrap_or_else(|| dir.join("opship.yaml"));
    refuse_existing(&path, args.force)?;
    let mut make_vars = Vec::new();
    for v in &args.make_vars {
        let (k, val) = v
            .split_once('=')
            .ok_or_else(|| format!("--set `{v}` is not VAR=VALUE"))?;
        make_vars.push((k.trim().to_owned(), val.to_owned()));
    }
    let adoption = operator_sdk::adopt(&operator_sdk::Request {
        dir: dir.to_path_buf(),
        manifests: args.manifests.clone(),
        make_vars,
        target: args.target.clone(),
        run_make: args.run_make,
    })?;
    let text = operator_sdk::config_text(&adoption)?;
    opship_core::fsutil::write_atomic(&path, text.as_bytes())?;
    println!(
        "wrote {} from the operator-sdk project {}",
        opship_core::paths::show(&path),
        opship_core::paths::show(dir)
    );
    for f in &adoption.found {
        println!("  {}: {}  ({})", f.key, f.value, f.from);
    }
    if !adoption.to_decide.is_empty() {
        println!("still to decide:");
        for d in &adoption.to_decide {
            println!("  - {d}");
        }
    }
    Ok(ExitStatus::Success)
}

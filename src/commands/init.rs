//! `opship init`: the starter config.

use opship_core::config;

use super::{CmdError, ExitStatus};
use crate::cli::InitArgs;

pub fn run(args: &InitArgs) -> Result<ExitStatus, CmdError> {
    if args.path.exists() && !args.force {
        return Err(format!(
            "{} already exists; pass --force to overwrite it",
            args.path.display()
        )
        .into());
    }
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
    opship_core::fsutil::write_atomic(&args.path, config::starter(&package).as_bytes())?;
    tracing::info!("wrote {}", args.path.display());
    println!("wrote {} for package {package}", args.path.display());
    Ok(ExitStatus::Success)
}

//! Documentation generated from the clap definitions: shell completion scripts (`opship
//! completions`) and man pages (`opship man`), so neither can drift from the real flags.

use std::io::Write as _;
use std::path::Path;

use clap::CommandFactory as _;
use opship_core::fsutil::write_atomic;

use super::{CmdError, ExitStatus};
use crate::cli::{Cli, CompletionsArgs, ManArgs, Shell};

/// Runs `opship completions SHELL`: the script on standard output.
pub fn completions(args: &CompletionsArgs) -> Result<ExitStatus, CmdError> {
    use clap_complete::Shell as S;
    let shell = match args.shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
        Shell::Powershell => S::PowerShell,
        Shell::Elvish => S::Elvish,
    };
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "opship", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// Runs `opship man [--output DIR]`.
pub fn man(args: &ManArgs) -> Result<ExitStatus, CmdError> {
    let pages = pages()?;
    match &args.output {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&pages[0].1)?;
            out.flush()?;
        }
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("{}: cannot create: {e}", opship_core::paths::show(dir)))?;
            for (name, page) in &pages {
                write_page(dir, name, page)?;
            }
            super::progress::note(&format!(
                "wrote {} man pages to {}",
                pages.len(),
                opship_core::paths::show(dir)
            ));
        }
    }
    Ok(ExitStatus::Success)
}

fn write_page(dir: &Path, name: &str, page: &[u8]) -> Result<(), CmdError> {
    Ok(write_atomic(&dir.join(name), page)?)
}

/// Every man page, the main one first: `(file name, roff)`. One page per command at every
/// level (`opship-catalog.1`, `opship-catalog-render.1`), except `help`.
pub fn pages() -> Result<Vec<(String, Vec<u8>)>, CmdError> {
    let mut root = Cli::command().disable_help_subcommand(true);
    // Building gives every subcommand its display name `opship-<cmd>[-<sub>]`.
    root.build();
    let mut pages = Vec::new();
    collect(&root, &mut pages)?;
    Ok(pages)
}

fn collect(cmd: &clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> Result<(), CmdError> {
    let man = clap_mangen::Man::new(cmd.clone())
        .source(format!("opship {}", env!("CARGO_PKG_VERSION")))
        .manual("opship manual");
    let mut page = Vec::new();
    man.render(&mut page)?;
    pages.push((man.get_filename(), page));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(sub, pages)?;
    }
    Ok(())
}

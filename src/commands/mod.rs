//! Dispatch from parsed command lines to the libraries, and the exit status each outcome maps to.

mod attest;
mod build;
mod catalog;
mod chart;
mod digests;
mod docs;
mod generate;
mod init;
mod keyless;
mod manifests;
mod progress;
mod registry;
mod release;
mod sign;
mod validate;
mod verify_blob;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use opship_core::config::{self, Project};

use crate::cli::{Cli, Command, GenerateCommand, KeyCommand};

/// Error of a command: anything the libraries report, shown as one message.
pub type CmdError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// How a command ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Everything fine.
    Success,
    /// The command ran and found something wrong (findings at error level, drift).
    Failure,
    /// The command printed its report but part of the work could not be done (a bundle that
    /// could not be read).
    Incomplete,
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        match s {
            ExitStatus::Success => ExitCode::SUCCESS,
            ExitStatus::Failure => ExitCode::from(1),
            ExitStatus::Incomplete => ExitCode::from(2),
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<ExitStatus, CmdError> {
    progress::set_quiet(cli.global.quiet);
    match cli.command {
        Command::Init(args) => init::run(&args),
        Command::Generate(GenerateCommand::Bundle(args)) => {
            let project = load_project(cli.global.config.as_deref())?;
            generate::bundle(&args, project.as_ref())
        }
        Command::Validate(args) => validate::run(&args),
        Command::Build(args) => build::run(&args),
        Command::Push(args) => registry::push(&args),
        Command::Pull(args) => registry::pull(&args),
        Command::Inspect(args) => registry::inspect(&args),
        Command::Tags(args) => registry::tags(&args),
        Command::Login(args) => registry::login(&args),
        Command::Manifests(args) => manifests::run(&args, cli.global.config.as_deref()),
        Command::Chart(cmd) => chart::run(cmd, cli.global.config.as_deref()),
        Command::Catalog(cmd) => catalog::run(&cmd, cli.global.config.as_deref()),
        Command::Key(KeyCommand::Generate(args)) => sign::generate(&args),
        Command::Sign(args) => sign::sign(&args),
        Command::Verify(args) => sign::verify(&args),
        Command::Attest(args) => attest::attest(&args),
        Command::VerifyAttestation(args) => attest::verify_attestation(&args),
        Command::VerifyBlob(args) => verify_blob::verify_blob(&args),
        Command::Completions(args) => docs::completions(&args),
        Command::Man(args) => docs::man(&args),
        Command::Release(args) => {
            release::run(&args, cli.global.config.as_deref(), cli.global.quiet)
        }
    }
}

/// The project config: the one named on the command line (which must exist), else
/// `./opship.yaml` when present.
fn load_project(explicit: Option<&Path>) -> Result<Option<Project>, CmdError> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => {
            let p = PathBuf::from(config::DEFAULT_FILE);
            if !p.exists() {
                return Ok(None);
            }
            p
        }
    };
    Ok(Some(Project::load(&path)?))
}

/// `SOURCE_DATE_EPOCH` in whole seconds (unset or empty: none), for every command whose
/// output carries a time.
fn source_date_epoch() -> Result<Option<u64>, CmdError> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(s) if !s.trim().is_empty() => s
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| format!("SOURCE_DATE_EPOCH `{s}` is not a number of seconds").into()),
        _ => Ok(None),
    }
}

//! The `opship` binary: parse the command line, set up logging, run the command, map the
//! outcome to an exit code (0 ok, 1 findings or drift, 2 usage or runtime error).

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

// Validation builds and drops millions of small strings and maps (the YAML trees); mimalloc
// does that with far fewer instructions than glibc's malloc (BENCHMARKS.md, issue 18).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // First of all: SIGINT/SIGTERM/SIGHUP end the run like an error (temporaries removed,
    // children stopped, exit 128 + the signal).
    if let Err(e) = opship_core::cleanup::install() {
        eprintln!("warning: signals will not clean up: {e}");
    }
    let cli = cli::Cli::parse();
    init_logging(cli.global.verbose, cli.global.quiet);
    let outcome = commands::run(cli);
    // A signal handled meanwhile decides the exit code, once its temporaries are removed.
    opship_core::cleanup::finish();
    match outcome {
        Ok(status) => status.into(),
        Err(err) => {
            // A closed pipe (`opship ... | head`) is not a failure of opship.
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            let message = err.to_string();
            eprintln!("error: {message}");
            // Library errors already quote their cause; print only causes that add something.
            let mut source = err.source();
            while let Some(s) = source {
                let text = s.to_string();
                if !message.contains(&text) {
                    eprintln!("  caused by: {text}");
                }
                source = s.source();
            }
            ExitCode::from(2)
        }
    }
}

fn init_logging(verbose: u8, quiet: bool) {
    use tracing_subscriber::EnvFilter;
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let filter = EnvFilter::try_from_env("OPSHIP_LOG").unwrap_or_else(|_| EnvFilter::new(level));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .without_time()
        .with_target(false)
        .init();
}

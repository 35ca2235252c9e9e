//! The `codemode` command line: argument parsing and wiring only; the work happens in the
//! library crates.

mod run;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code of a script that failed (threw, hit a limit, did not parse).
pub const EXIT_SCRIPT_FAILED: u8 = 1;
/// Exit code of a usage or configuration error.
pub const EXIT_USAGE: u8 = 2;

/// Run LLM-written JavaScript in a WebAssembly sandbox, with per-call tool policies.
#[derive(Debug, Parser)]
#[command(name = "codemode", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a script (a file, or `-` for standard input) in a fresh sandbox.
    Run(run::RunArgs),
}

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("codemode: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run::run(args).await,
        }
    })
}

/// Logs go to stderr (stdout carries results, or the MCP protocol); `RUST_LOG` filters them.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

//! `codemode check` (static call-site preview) and `codemode config check`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use codemode_policies::{Config, extract_tool_calls};

use super::{EXIT_SCRIPT_FAILED, EXIT_USAGE, read_script};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The script: a file, or `-` for standard input.
    file: PathBuf,
    /// Print `{"calls": [...], "parse_error": null|{...}}`.
    #[arg(long)]
    json: bool,
}

/// Lists the tool calls a script makes, found statically (no code runs). Exit 1 when the script
/// does not parse.
pub fn check(args: CheckArgs) -> ExitCode {
    let (name, code) = match read_script(&args.file) {
        Ok(v) => v,
        Err(message) => {
            eprintln!("codemode: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let preview = extract_tool_calls(&code);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string(&preview).unwrap_or_default()
        );
    } else {
        for call in &preview.calls {
            let tool = call.tool.as_deref().unwrap_or("<computed at run time>");
            let _ = writeln!(
                out,
                "{name}:{}:{}: {tool}{}",
                call.line,
                call.column,
                if call.dynamic { " (dynamic)" } else { "" }
            );
        }
        if let Some(e) = &preview.parse_error {
            eprintln!("{name}:{}:{}: syntax: {}", e.line, e.column, e.message);
        }
    }
    if preview.parse_error.is_some() {
        ExitCode::from(EXIT_SCRIPT_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate a config file; print every error with its JSON path. Exit 2 on error.
    Check {
        /// The config file (JSON).
        file: PathBuf,
    },
    /// Print the embedded default config.
    Default,
}

pub fn config(command: ConfigCommand) -> ExitCode {
    match command {
        ConfigCommand::Check { file } => match Config::load(&file) {
            Ok(config) => {
                super::print_config_warnings(&file.display().to_string(), &config);
                let stdout = std::io::stdout();
                let _ = writeln!(
                    stdout.lock(),
                    "{}: ok ({} servers, {} profiles{})",
                    file.display(),
                    config.servers.len(),
                    config.evaluation.profiles.len(),
                    config
                        .evaluation
                        .default_profile
                        .as_deref()
                        .map(|p| format!(", default profile `{p}`"))
                        .unwrap_or_default()
                );
                ExitCode::SUCCESS
            }
            Err(errors) => {
                for error in errors.iter() {
                    eprintln!("{}: {error}", file.display());
                }
                ExitCode::from(EXIT_USAGE)
            }
        },
        ConfigCommand::Default => {
            let stdout = std::io::stdout();
            let _ = write!(stdout.lock(), "{}", super::DEFAULT_CONFIG);
            ExitCode::SUCCESS
        }
    }
}

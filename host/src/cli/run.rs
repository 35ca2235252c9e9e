//! `codemode run`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use codemode_runtime::{EvalOptions, EvalOutcome, NoTools, Runtime, RuntimeConfig};

use super::{EXIT_SCRIPT_FAILED, EXIT_USAGE};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The script: a file, or `-` for standard input.
    file: PathBuf,

    /// Print the whole outcome (result, error, logs, tool calls, stats) as JSON on stdout.
    #[arg(long)]
    json: bool,

    /// Fuel: WebAssembly instructions the script may execute; 0 = unlimited.
    #[arg(long, value_name = "N", default_value_t = codemode_runtime::DEFAULT_FUEL)]
    fuel: u64,

    /// Linear-memory limit, e.g. `64MiB`, `512KiB`, `1GiB`.
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_size)]
    memory: u64,

    /// Wall-clock timeout, tool calls included, e.g. `5s`, `500ms`, `2m`; 0 = none.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,

    /// Cap on console output plus the result, e.g. `1MiB`.
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = parse_size)]
    max_output: u64,

    /// Cap on the number of tool calls; 0 = unlimited.
    #[arg(long, value_name = "N", default_value_t = codemode_runtime::DEFAULT_MAX_TOOL_CALLS)]
    max_tool_calls: u64,
}

fn parse_size(s: &str) -> Result<u64, String> {
    codemode_policies::parse_size(s).map_err(|e| e.to_string())
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    codemode_policies::parse_duration(s).map_err(|e| e.to_string())
}

pub async fn run(args: RunArgs) -> ExitCode {
    let (display_name, code) = match read_code(&args.file) {
        Ok(v) => v,
        Err(message) => {
            eprintln!("codemode: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let options = EvalOptions::default()
        .fuel((args.fuel > 0).then_some(args.fuel))
        .memory(args.memory)
        .timeout((!args.timeout.is_zero()).then_some(args.timeout))
        .max_output(args.max_output)
        .max_tool_calls((args.max_tool_calls > 0).then_some(args.max_tool_calls));

    let mut config = RuntimeConfig::default();
    // One eval per process: a small pool, sized to the memory asked for.
    config
        .max_concurrent_evals(2)
        .max_memory(args.memory.max(64 << 20));
    let runtime = match Runtime::new(&config) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("codemode: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let outcome = runtime.eval(&code, &options, &NoTools).await;
    report(&display_name, &outcome, args.json)
}

fn read_code(file: &PathBuf) -> Result<(String, String), String> {
    if file.as_os_str() == "-" {
        let mut code = String::new();
        std::io::stdin()
            .read_to_string(&mut code)
            .map_err(|e| format!("cannot read the script from standard input: {e}"))?;
        return Ok(("<stdin>".into(), code));
    }
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let code =
        String::from_utf8(bytes).map_err(|e| format!("{} is not UTF-8: {e}", file.display()))?;
    Ok((file.display().to_string(), code))
}

/// Prints the outcome: JSON on stdout with `--json`; otherwise logs on stderr, the result as
/// pretty JSON on stdout, and an error as `file:line:col: kind: message` on stderr.
pub fn report(file: &str, outcome: &EvalOutcome, json: bool) -> ExitCode {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json {
        let text = serde_json::to_string(outcome)
            .unwrap_or_else(|e| format!("{{\"ok\":false,\"error\":\"{e}\"}}"));
        let _ = writeln!(out, "{text}");
    } else {
        for log in &outcome.logs {
            eprintln!("[{}] {}", log.level.as_str(), log.message);
        }
        if outcome.ok {
            let text =
                serde_json::to_string_pretty(&outcome.result).unwrap_or_else(|_| "null".into());
            let _ = writeln!(out, "{text}");
        } else if let Some(error) = &outcome.error {
            let position = match (error.line, error.column) {
                (Some(line), Some(column)) => format!("{file}:{line}:{column}"),
                (Some(line), None) => format!("{file}:{line}"),
                _ => file.to_string(),
            };
            eprintln!("{position}: {}: {}", error.kind, error.message);
        }
    }
    let _ = out.flush();
    if outcome.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_SCRIPT_FAILED)
    }
}

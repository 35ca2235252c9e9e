//! `codemode agent-eval`: flags to [`codemode_agent_eval::Options`], one JSON line per case on
//! stdout, then `N passed, M failed`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use codemode_agent_eval::{
    Api, Case, Options, Verdict, check_model_url, check_profiles, load_cases, run_case,
};
use codemode_runtime::{Runtime, RuntimeConfig};

use super::common::{EXIT_SCRIPT_FAILED, EXIT_USAGE, load_config};

#[derive(Debug, Args)]
pub struct AgentEvalArgs {
    /// Case files (YAML), or directories of them (their `*.yaml`, by name).
    #[arg(required = true, value_name = "CASES")]
    cases: Vec<PathBuf>,
    /// The model endpoint's API.
    #[arg(long, value_enum)]
    api: ApiFlag,
    /// The endpoint's base URL: `{URL}/chat/completions` (openai), `{URL}/v1/messages` (anthropic).
    #[arg(long, value_name = "URL")]
    model_url: String,
    /// The model's name.
    #[arg(long, value_name = "NAME")]
    model: String,
    /// The environment variable holding the API key (it is never printed).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// The config codemode runs the cases with. Default: `$CODEMODE_CONFIG`, else the embedded one.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The model's turns (requests) per case.
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u16).range(1..))]
    max_turns: u16,
    /// One case's time limit, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    case_timeout: u64,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ApiFlag {
    /// OpenAI-compatible chat completions.
    Openai,
    /// Anthropic messages.
    Anthropic,
}

/// The cases, the options and the sandbox from the flags; on bad usage, the message printed
/// and the exit code.
fn prepare(args: AgentEvalArgs) -> Result<(Vec<Case>, Options, Runtime), ExitCode> {
    let cases = load_cases(&args.cases).map_err(|e| {
        eprintln!("codemode: {e}");
        ExitCode::from(EXIT_USAGE)
    })?;
    let usage = |message: String| {
        eprintln!("codemode: {message}");
        ExitCode::from(EXIT_USAGE)
    };
    check_model_url(&args.model_url).map_err(|e| usage(format!("--model-url: {e}")))?;
    let api_key = match &args.api_key_env {
        Some(var) => match std::env::var(var) {
            // A header value is visible ASCII; anything else would fail every request.
            Ok(key) if !key.is_empty() && key.bytes().all(|b| b.is_ascii_graphic()) => Some(key),
            Ok(key) if !key.is_empty() => {
                return Err(usage(format!(
                    "the API key in `{var}` (--api-key-env) has a character that cannot be sent in a header (a space, a control character or non-ASCII)"
                )));
            }
            _ => {
                return Err(usage(format!(
                    "the environment variable `{var}` (--api-key-env) is not set"
                )));
            }
        },
        None => None,
    };
    let config_path = super::common::config_path(args.config.as_deref());
    let config = load_config(config_path.as_deref())?;
    check_profiles(&cases, &config).map_err(|e| usage(e.to_string()))?;
    let mut runtime_config = RuntimeConfig::default();
    runtime_config.max_memory(config.limits.memory.max(64 << 20));
    let runtime = match Runtime::new(&runtime_config) {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("codemode: cannot build the sandbox: {e}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
    };
    let audit_root =
        std::env::temp_dir().join(format!("codemode-agent-eval-{}", std::process::id()));
    // A leftover of an earlier process of this id would lend its records to these cases.
    let _ = std::fs::remove_dir_all(&audit_root);
    let api = match args.api {
        ApiFlag::Openai => Api::OpenAi,
        ApiFlag::Anthropic => Api::Anthropic,
    };
    let mut options = Options::new(api, args.model_url, args.model, config, audit_root);
    options.api_key = api_key;
    options.max_turns = usize::from(args.max_turns);
    options.case_timeout = Duration::from_secs(args.case_timeout);
    Ok((cases, options, runtime))
}

/// Runs the cases; exit 0 when all pass, 1 when any fails, 2 on bad usage.
pub async fn agent_eval(args: AgentEvalArgs) -> ExitCode {
    let (cases, options, runtime) = match prepare(args) {
        Ok(prepared) => prepared,
        Err(code) => return code,
    };
    let (mut passed, mut failed) = (0, 0);
    let mut stdout = std::io::stdout().lock();
    for (index, case) in cases.iter().enumerate() {
        let report = run_case(&options, &runtime, index, case).await;
        match report.verdict {
            Verdict::Pass => passed += 1,
            Verdict::Fail => failed += 1,
        }
        let line = serde_json::to_string(&report).unwrap_or_default();
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    }
    let _ = writeln!(stdout, "{passed} passed, {failed} failed");
    // The evidence is in the report; the case's logs were only the means.
    let _ = std::fs::remove_dir_all(&options.audit_root);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_SCRIPT_FAILED)
    }
}

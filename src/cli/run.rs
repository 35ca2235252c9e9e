//! `codemode run`.

use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use codemode_policies::{AuditWriter, Config, RememberedRules, neutralize};
use codemode_runtime::{CancellationToken, EvalOptions, EvalOutcome, Runtime, RuntimeConfig};

use super::common::{EXIT_SCRIPT_FAILED, EXIT_USAGE, load_config, read_script, saved_logins};
use codemode_host::TerminalAsker;
use codemode_host::{AuditTarget, GovernedEval, GovernedEvalBuilder, StoredRules};
use codemode_policies::Caller;
use codemode_policies::{Asker, NoAsker};
use codemode_upstream::oauth::{Browser, Logins};
use codemode_upstream::{UpstreamPool, UpstreamSpec};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The script: a file, or `-` for standard input.
    file: PathBuf,

    /// Print the whole outcome (result, error, logs, tool calls, stats) as JSON on stdout.
    #[arg(long)]
    json: bool,

    /// Fuel: WebAssembly instructions the script may execute; 0 = unlimited.
    /// [default: the config's `limits.fuel`, else 20000000000]
    #[arg(long, value_name = "N")]
    fuel: Option<u64>,

    /// Linear-memory limit, e.g. `64MiB`, `512KiB`, `1GiB`. [default: the config's, else 64MiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    memory: Option<u64>,

    /// Wall-clock timeout, tool calls included (not time waiting for your approval), e.g. `5s`,
    /// `500ms`, `2m`; 0 = none. [default: the config's, else 30s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    timeout: Option<Duration>,

    /// Cap on console output plus the result, e.g. `1MiB`. [default: the config's, else 1MiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_output: Option<u64>,

    /// Cap on the number of tool calls; 0 = unlimited. [default: the config's, else 1000]
    #[arg(long, value_name = "N")]
    max_tool_calls: Option<u64>,

    /// A config file: its `mcpServers` become the script's tools (`codemode.<server>__<tool>`),
    /// its profiles apply, its limits are the defaults. Default: `$CODEMODE_CONFIG` when set;
    /// without either, no tools exist. The script runs once every server has started or
    /// failed to (each within its `startTimeoutSeconds`).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Run under this profile of the config (default: its `defaultProfile`, else unrestricted).
    /// Calls the profile asks about are put to you on the terminal when stdin is one; otherwise
    /// the profile's `elicitationFallback` decides.
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,

    /// When an HTTP upstream asks for an OAuth login (or for more scopes), log in at once by
    /// opening the authorization URL with this command (split into words as a shell would, no
    /// shell run; the URL appended as its last argument). Without it the URL is printed when
    /// stderr is a terminal; otherwise calls to that upstream fail with the
    /// `codemode auth login` hint.
    #[arg(long, value_name = "CMD")]
    browser: Option<String>,
}

fn parse_size(s: &str) -> Result<u64, String> {
    codemode_config::parse_size(s).map_err(|e| e.to_string())
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    codemode_config::parse_duration(s).map_err(|e| e.to_string())
}

/// The config's limits (or the defaults), overridden by the flags given.
fn options(args: &RunArgs, config: Option<&Config>) -> EvalOptions {
    let mut options = config.map(|c| c.limits.eval_options()).unwrap_or_default();
    if let Some(fuel) = args.fuel {
        options.fuel((fuel > 0).then_some(fuel));
    }
    if let Some(memory) = args.memory {
        options.memory(memory);
    }
    if let Some(timeout) = args.timeout {
        options.timeout((!timeout.is_zero()).then_some(timeout));
    }
    if let Some(bytes) = args.max_output {
        options.max_output(bytes);
    }
    if let Some(calls) = args.max_tool_calls {
        options.max_tool_calls((calls > 0).then_some(calls));
    }
    options
}

pub async fn run(args: RunArgs) -> ExitCode {
    let (display_name, code) = match read_script(&args.file) {
        Ok(v) => v,
        Err(message) => {
            eprintln!("codemode: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let config = match run_config(&args) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let options = options(&args, config.as_ref());
    let runtime = match start_runtime(&options) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let eval = GovernedEval::builder(runtime)
        .caller(Caller::local())
        .options(options)
        .lifetime(Some(
            config
                .as_ref()
                .map_or(codemode_config::DEFAULT_MAX_EVAL_LIFETIME, |c| {
                    c.limits.max_eval_lifetime
                }),
        ));
    let (eval, upstreams) = match &config {
        Some(config) => match governed(eval, config, &args).await {
            Ok((eval, pool)) => (eval, Some(pool)),
            Err(code) => return code,
        },
        None => (eval, None),
    };
    let outcome = eval.build().run(&code, &CancellationToken::new()).await;
    if let Some(pool) = upstreams {
        pool.shutdown().await;
    }
    report(&display_name, &outcome, args.json)
}

/// The config `--config` or the environment names, if any (`--profile` needs one).
fn run_config(args: &RunArgs) -> Result<Option<Config>, ExitCode> {
    match super::common::config_path(args.config.as_deref()) {
        Some(path) => load_config(Some(&path)).map(Some),
        None if args.profile.is_some() => {
            eprintln!(
                "codemode: --profile needs a config: give --config FILE or set {}",
                super::common::CONFIG_ENV
            );
            Err(ExitCode::from(EXIT_USAGE))
        }
        None => Ok(None),
    }
}

/// The sandbox for one eval: a small pool, sized to the memory `options` ask for.
fn start_runtime(options: &EvalOptions) -> Result<Runtime, ExitCode> {
    let mut runtime_config = RuntimeConfig::default();
    runtime_config
        .max_concurrent_evals(2)
        .max_memory(options.memory.max(64 << 20));
    let progress = CompileProgress::on_terminal(&mut runtime_config);
    let runtime = Runtime::new(&runtime_config);
    progress.done();
    runtime.map_err(|e| {
        // `{:#}`: the error and its causes (wasmtime's, say), on one line.
        eprintln!("codemode: {:#}", anyhow::Error::new(e));
        ExitCode::from(EXIT_USAGE)
    })
}

/// `eval` governed by `config`: its profile, audit, asker, upstreams and commands, outputs and
/// classification; with the upstream pool, to shut down once the eval is over.
async fn governed(
    eval: GovernedEvalBuilder,
    config: &Config,
    args: &RunArgs,
) -> Result<(GovernedEvalBuilder, UpstreamPool), ExitCode> {
    let profile = config
        .resolve_profile(args.profile.as_deref())
        .map_err(|e| {
            eprintln!("codemode: {e}");
            ExitCode::from(EXIT_USAGE)
        })?;
    let audit = open_audit(config)?;
    // Prompts need the terminal: not available when the script itself comes on stdin.
    let interactive = args.file.as_os_str() != "-" && TerminalAsker::available();
    let asker: Arc<dyn Asker> = if interactive {
        Arc::new(TerminalAsker::default())
    } else {
        Arc::new(NoAsker)
    };
    let pool = UpstreamPool::new();
    pool.set_logins(logins(config, args.browser.as_deref()).await?);
    if let Err(e) = pool.set_upstreams(UpstreamSpec::of_config(config)).await {
        eprintln!("codemode: {e}");
        return Err(ExitCode::from(EXIT_USAGE));
    }
    pool.set_commands(codemode_upstream::CommandTools::from_config(config));
    let eval = remembering(eval, config, audit.as_ref())
        .await
        .tools(pool.clone())
        .profile(profile)
        .asker(asker)
        .audit(audit)
        .outputs(config.outputs.clone())
        .classification(config.evaluation.classification.clone())
        // Media values and budget notes as `codemode serve` gives them; the result's JSON
        // printed here shows media as their references, never their bytes.
        .max_media_bytes(config.limits.max_media_bytes);
    Ok((eval, pool))
}

/// The upstreams' OAuth logins: those `codemode auth login` saved in the durable store (this
/// process's memory when the store does not open), made here when an upstream asks for one and
/// someone can answer: through `--browser`, or the URL printed on a terminal.
async fn logins(config: &Config, browser: Option<&str>) -> Result<Logins, ExitCode> {
    let logins = saved_logins(config).await;
    let browser = match browser.map(Browser::command) {
        Some(Ok(browser)) => Some(browser),
        Some(Err(e)) => {
            eprintln!("codemode: {e}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
        None => std::io::stderr()
            .is_terminal()
            .then_some(super::common::print_login_url()),
    };
    Ok(match browser {
        Some(browser) => logins.interactive(browser),
        None => logins,
    })
}

/// `eval` keeping approvals "from now on" ([`remembered_rules`]), each rule naming the upstream
/// of its tool as `config` has it.
async fn remembering(
    eval: GovernedEvalBuilder,
    config: &Config,
    audit: Option<&AuditTarget>,
) -> GovernedEvalBuilder {
    let servers = config.clone();
    eval.remembered(Some(remembered_rules(config, audit).await))
        .upstream_identity(Some(Arc::new(move |tool: &str| {
            servers.upstream_identity(tool)
        })))
}

/// Where approvals "from now on" given at the terminal are kept: the config's durable store,
/// as for `codemode serve` (so later runs, the servers sharing it and `codemode rules` see
/// them), else — when it does not open — this process's memory, with a warning. Their creation
/// is audited to the run's audit log.
async fn remembered_rules(config: &Config, audit: Option<&AuditTarget>) -> Arc<RememberedRules> {
    let rules = match codemode_store::Store::open(&config.durable).await {
        Ok(store) => StoredRules::remembered(store),
        Err(e) => {
            tracing::warn!(error = %e, "the durable store did not open; approvals from now on last for this process only");
            RememberedRules::in_memory()
        }
    };
    Arc::new(match audit {
        Some(audit) => {
            let sink = audit.sink.clone();
            rules.with_audit(Arc::new(move || Some(sink.clone())))
        }
        None => rules,
    })
}

/// The audit log `config` names, opened for appending (`None`: no audit log).
fn open_audit(config: &Config) -> Result<Option<AuditTarget>, ExitCode> {
    let Some(dir) = &config.audit.dir else {
        return Ok(None);
    };
    match AuditWriter::open_keyed(dir.clone(), config.audit.key.clone()) {
        Ok(writer) => Ok(Some(AuditTarget {
            sink: Arc::new(writer),
            include_args: config.audit.include_args,
        })),
        Err(e) => {
            eprintln!(
                "codemode: cannot open the audit log in {}: {e}",
                dir.display()
            );
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
}

/// The one-line "compiling" message of a cold module cache: shown on stderr while the guest
/// compiles, only when stderr is a terminal (a log file or a client gets nothing), and erased
/// when the compile is done.
struct CompileProgress(Option<Arc<std::sync::atomic::AtomicBool>>);

impl CompileProgress {
    fn on_terminal(config: &mut RuntimeConfig) -> Self {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return CompileProgress(None);
        }
        let shown = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = shown.clone();
        config.on_compile(move || {
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
            let where_ = codemode_runtime::RuntimeConfig::default_cache_dir()
                .map(|d| format!(", cached in {}", d.display()))
                .unwrap_or_default();
            eprint!("codemode: compiling the sandbox (first run only{where_})…");
        });
        CompileProgress(Some(shown))
    }

    /// Erases the line if it was shown (carriage return, then clear to the end of the line).
    fn done(self) {
        if let Some(shown) = self.0
            && shown.load(std::sync::atomic::Ordering::Relaxed)
        {
            eprint!("\r\x1b[2K");
        }
    }
}

/// Prints the outcome: JSON on stdout with `--json`; otherwise [`human`].
pub fn report(file: &str, outcome: &EvalOutcome, json: bool) -> ExitCode {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json {
        let text = serde_json::to_string(outcome)
            .unwrap_or_else(|e| format!("{{\"ok\":false,\"error\":\"{e}\"}}"));
        let _ = writeln!(out, "{text}");
    } else {
        let (stdout_text, stderr_text) = human(file, outcome);
        eprint!("{stderr_text}");
        let _ = write!(out, "{stdout_text}");
    }
    let _ = out.flush();
    if outcome.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_SCRIPT_FAILED)
    }
}

/// The human rendering of an outcome, as (stdout, stderr): logs on stderr, one line each; then
/// warnings as `file:line:col: warning: message`; the result as pretty JSON on stdout, or the
/// error as `file:line:col: kind: message` on stderr. Every script- or tool-chosen text is
/// [`neutralize`]d, so a message can neither start a line that looks like one of these nor
/// carry a terminal escape.
pub fn human(file: &str, outcome: &EvalOutcome) -> (String, String) {
    let mut out = String::new();
    let mut err = String::new();
    let at = |line: Option<u32>, column: Option<u32>| match (line, column) {
        (Some(line), Some(column)) => format!("{file}:{line}:{column}"),
        (Some(line), None) => format!("{file}:{line}"),
        _ => file.to_string(),
    };
    for log in &outcome.logs {
        let _ = writeln!(err, "[{}] {}", log.level.as_str(), neutralize(&log.message));
    }
    for w in &outcome.warnings {
        let _ = writeln!(
            err,
            "{}: warning: {}",
            at(w.line, w.column),
            neutralize(&w.message)
        );
    }
    if outcome.ok {
        let text = serde_json::to_string_pretty(&outcome.result).unwrap_or_else(|_| "null".into());
        // JSON escapes control characters already; this also shows bidi and zero-width ones.
        let lines: Vec<String> = text.split('\n').map(neutralize).collect();
        let _ = writeln!(out, "{}", lines.join("\n"));
    } else if let Some(error) = &outcome.error {
        let _ = writeln!(
            err,
            "{}: {}: {}",
            at(error.line, error.column),
            error.kind,
            neutralize(&error.message)
        );
    }
    (out, err)
}

#[cfg(test)]
mod tests {
    use codemode_runtime::{
        ErrorKind, EvalError, EvalOutcome, EvalStats, LogEntry, LogLevel, Warning,
    };
    use serde_json::json;

    use super::human;

    #[test]
    fn hostile_logs_warnings_and_errors_stay_on_their_lines() {
        let hostile = "x\n[error] FAKE\u{1b}]0;t\u{7}";
        let mut outcome = EvalOutcome {
            ok: true,
            result: json!({"k\u{202e}": hostile}),
            error: None,
            warnings: vec![Warning {
                message: format!("w {hostile}"),
                line: Some(2),
                column: Some(3),
            }],
            logs: vec![LogEntry {
                level: LogLevel::Log,
                message: hostile.into(),
            }],
            tool_calls: Vec::new(),
            stats: EvalStats::default(),
        };
        assert_eq!(
            human("s.js", &outcome),
            (
                "{\n  \"k\\u202e\": \"x\\n[error] FAKE\\u001b]0;t\\u0007\"\n}\n".to_string(),
                "[log] x\\n[error] FAKE\\u001b]0;t\\u0007\n\
                 s.js:2:3: warning: w x\\n[error] FAKE\\u001b]0;t\\u0007\n"
                    .to_string()
            )
        );
        outcome.ok = false;
        outcome.result = json!(null);
        outcome.logs.clear();
        outcome.warnings[0].line = None;
        outcome.error = Some(EvalError {
            kind: ErrorKind::Exception,
            message: "Error: bad\ns.js:9:9: internal: fake".into(),
            line: Some(1),
            column: None,
            stack: None,
        });
        assert_eq!(
            human("s.js", &outcome),
            (
                String::new(),
                "s.js: warning: w x\\n[error] FAKE\\u001b]0;t\\u0007\n\
                 s.js:1: exception: Error: bad\\ns.js:9:9: internal: fake\n"
                    .to_string()
            )
        );
    }
}

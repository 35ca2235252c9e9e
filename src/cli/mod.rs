//! The `codemode` command line: each command converts its flags to the library's types and
//! calls it (the server is [`codemode_host::Server`]); exit codes and messages live here.
#![expect(
    clippy::print_stderr,
    reason = "the command line reports to its user on stderr (stdout carries results and the MCP protocol)"
)]

mod agent_eval;
mod approve;
mod audit;
mod auth;
mod bench;
mod check;
mod common;
mod logs;
mod rules;
mod run;
mod serve;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Runs the JavaScript an AI agent writes in a WebAssembly sandbox; its tool calls go to MCP
/// servers under per-call policies (allow, ask a human, deny) and into an audit log.
#[derive(Debug, Parser)]
#[command(
    name = "codemode",
    version,
    about = "Run the JavaScript an AI agent writes in a WebAssembly sandbox, with per-call tool policies",
    long_about = "Run the JavaScript an AI agent writes in a WebAssembly sandbox.\n\n\
        Each `codemode.<tool>(args)` a script makes goes to a tool of an MCP server, decided per call \
        by the caller's profile (deny > ask a human > allow) and recorded in an audit log. \
        `codemode serve` is an MCP server offering this to an agent; `codemode run` runs one script."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a script (a file, or `-` for standard input) in a fresh sandbox.
    Run(run::RunArgs),
    /// Serve MCP (stdio, or streamable HTTP with --http): eval tools, search_tools, get_tools.
    Serve(serve::ServeArgs),
    /// List the tool calls a script makes, found statically (nothing runs); with --config, report
    /// unknown tools and calls the profile denies or asks about.
    Check(check::CheckArgs),
    /// Config files.
    #[command(subcommand)]
    Config(check::ConfigCommand),
    /// Measure the sandbox against its performance targets (see docs/PERFORMANCE.md).
    Bench(bench::BenchArgs),
    /// Answer approval requests of a running `codemode serve` from this terminal (its HTTP
    /// approval API: `"approvals": {"http": true}` or `serve --approvals-http ADDR`).
    Approve(approve::ApproveArgs),
    /// The audit log: verify its hash chains, query its records.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// Approvals remembered "from now on": `list`, `revoke ID` (read from the durable store
    /// `codemode serve` keeps them in).
    #[command(subcommand)]
    Rules(rules::RulesCommand),
    /// OAuth logins to the config's HTTP upstreams: `login <server>`, `status`, `logout <server>`.
    #[command(subcommand)]
    Auth(auth::AuthCommand),
    /// Run a tool-using model (OpenAI chat completions or Anthropic messages) against
    /// codemode over YAML cases; judge each by its answer and audit records (docs/AGENT-EVAL.md).
    AgentEval(agent_eval::AgentEvalArgs),
}

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(common::EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // `serve` starts logging once it has read its config (`logging.format`).
    if !matches!(cli.command, Command::Serve(_)) {
        logs::init(codemode_config::LogFormat::Text);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("codemode: cannot start the async runtime: {e}");
            return ExitCode::from(common::EXIT_USAGE);
        }
    };
    let code = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run::run(args).await,
            Command::Serve(args) => serve::serve(args).await,
            Command::Check(args) => check::check(args).await,
            Command::Config(command) => check::config(command),
            Command::Bench(args) => bench::bench(args),
            Command::Approve(args) => approve::approve(args).await,
            Command::Audit(command) => audit::audit(command),
            Command::Auth(command) => auth::auth(command).await,
            Command::Rules(command) => rules::rules(command).await,
            Command::AgentEval(args) => agent_eval::agent_eval(args).await,
        }
    });
    // Every command has finished its work (serve flushed its audit). What may remain is a
    // blocking read of stdin (serve over stdio stopped by a signal, while its client keeps
    // stdin open), which would otherwise hold the exit until the client closes it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    code
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_embedded_default_config_is_valid() {
        codemode_policies::Config::from_json_str(super::common::DEFAULT_CONFIG).unwrap();
    }
}

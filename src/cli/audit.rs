//! `codemode audit verify` and `codemode audit query`: wiring of
//! [`verify_audit_dir`] and [`query_audit_dir`].

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::{Args, Subcommand, ValueEnum};
use codemode_config::AuditKey;
use codemode_policies::{AuditEvent, AuditFormat, AuditQuery, Verified};

use super::common::{EXIT_SCRIPT_FAILED, EXIT_USAGE};

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check every file's hash chain: `ok: N records` and each file's head hash, or
    /// `broken: FILE:LINE` (exit 1).
    Verify(VerifyArgs),
    /// Print the records that match every filter given, in time order.
    Query(QueryArgs),
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The audit directory (`audit.dir`).
    dir: PathBuf,
    /// The environment variable holding the HMAC key the log was written with
    /// (`audit.keyEnv`); without it, the chains must be plain SHA-256.
    #[arg(long, value_name = "VAR")]
    key_env: Option<String>,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The audit directory (`audit.dir`).
    dir: PathBuf,
    /// Records at or after T: RFC 3339 (`2024-05-01T12:00:00Z`) or a duration back from now
    /// (`90m`, `1h`, `7d`).
    #[arg(long, value_name = "T")]
    since: Option<String>,
    /// Records at or before T (as --since).
    #[arg(long, value_name = "T")]
    until: Option<String>,
    /// Only this kind of record.
    #[arg(long, value_enum)]
    event: Option<EventArg>,
    /// Only tool_call records whose tool matches this glob.
    #[arg(long, value_name = "GLOB")]
    tool: Option<String>,
    /// Only records with this decision (allowed, denied, approved, declined, timeout,
    /// unsupported).
    #[arg(long, value_name = "D")]
    decision: Option<String>,
    /// Only records of this caller.
    #[arg(long, value_name = "C")]
    caller: Option<String>,
    /// Only records of this eval.
    #[arg(long = "eval", value_name = "ID")]
    eval_id: Option<String>,
    /// Only records of this risk level (low, medium, high, critical).
    #[arg(long, value_name = "LEVEL")]
    risk: Option<String>,
    /// Only records whose top-level FIELD's value is exactly VALUE: a string by its content,
    /// anything else as compact JSON (`stage=registry`, `call_id=2`, `reason=null`).
    /// Repeatable; every one must hold.
    #[arg(long = "where", value_name = "FIELD=VALUE")]
    where_fields: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "jsonl")]
    format: FormatArg,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum EventArg {
    #[value(name = "tool_call")]
    ToolCall,
    Eval,
    Access,
    Sampling,
    Rule,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    Jsonl,
    Json,
    Csv,
}

/// Runs an `audit` subcommand.
pub fn audit(command: AuditCommand) -> ExitCode {
    match command {
        AuditCommand::Verify(args) => verify(args),
        AuditCommand::Query(args) => query(args),
    }
}

fn verify(args: VerifyArgs) -> ExitCode {
    let key = match &args.key_env {
        None => None,
        Some(var) => match std::env::var(var) {
            Ok(key) if !key.is_empty() => Some(AuditKey::new(key)),
            // The key's value is never printed; its variable's name is.
            _ => {
                eprintln!("codemode: the environment variable `{var}` (the audit key) is not set");
                return ExitCode::from(EXIT_USAGE);
            }
        },
    };
    let verified = match Verified::of_dir(&args.dir, key.as_ref()) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("codemode: cannot read {}: {e}", args.dir.display());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match verified {
        Verified::Ok(heads) => {
            let total: u64 = heads.iter().map(|h| h.records).sum();
            let _ = writeln!(out, "ok: {total} records");
            for head in heads {
                let _ = writeln!(
                    out,
                    "{}: {} records, head {}",
                    display_file(&head.file),
                    head.records,
                    head.head
                );
            }
            ExitCode::SUCCESS
        }
        Verified::Broken(b) => {
            let _ = writeln!(out, "broken: {}:{}", display_file(&b.file), b.line);
            eprintln!("codemode: {}:{}: {}", display_file(&b.file), b.line, b.why);
            ExitCode::from(EXIT_SCRIPT_FAILED)
        }
    }
}

/// A file's path for display, [`neutralize`](codemode_policies::neutralize)d (a file name is
/// chosen by whoever can write the directory).
fn display_file(path: &std::path::Path) -> String {
    codemode_policies::neutralize(&path.display().to_string())
}

fn query(args: QueryArgs) -> ExitCode {
    let query = match build_query(&args) {
        Ok(q) => q,
        Err(problems) => {
            for p in problems {
                eprintln!("codemode: {p}");
            }
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = match query.run(&args.dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("codemode: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    for (file, line) in &result.skipped {
        eprintln!(
            "codemode: {}:{line}: not a JSON record, skipped",
            display_file(file)
        );
    }
    let format = match args.format {
        FormatArg::Jsonl => AuditFormat::Jsonl,
        FormatArg::Json => AuditFormat::Json,
        FormatArg::Csv => AuditFormat::Csv,
    };
    let _ = std::io::stdout().write_all(format.render(&result.records).as_bytes());
    ExitCode::SUCCESS
}

/// The filters of `args`, or every problem with them, each prefixed with its flag.
fn build_query(args: &QueryArgs) -> Result<AuditQuery, Vec<String>> {
    let now = SystemTime::now();
    let mut query = AuditQuery::default();
    let mut problems = Vec::new();
    for (flag, value, slot) in [
        ("--since", &args.since, &mut query.since),
        ("--until", &args.until, &mut query.until),
    ] {
        if let Some(value) = value {
            match AuditQuery::parse_time_bound(value, now) {
                Ok(t) => *slot = Some(t),
                Err(e) => problems.push(format!("{flag}: {e}")),
            }
        }
    }
    if let Some(glob) = &args.tool
        && let Err(e) = query.tool_glob(glob)
    {
        problems.push(format!("--tool: {e}"));
    }
    if let Some(level) = &args.risk
        && let Err(e) = query.risk_level(level)
    {
        problems.push(format!("--risk: {e}"));
    }
    for spec in &args.where_fields {
        if let Err(e) = query.where_field(spec) {
            problems.push(format!("--where: {e}"));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    query.event = args.event.map(|e| match e {
        EventArg::ToolCall => AuditEvent::ToolCall,
        EventArg::Eval => AuditEvent::Eval,
        EventArg::Access => AuditEvent::Access,
        EventArg::Sampling => AuditEvent::Sampling,
        EventArg::Rule => AuditEvent::Rule,
    });
    query.decision.clone_from(&args.decision);
    query.caller.clone_from(&args.caller);
    query.eval_id.clone_from(&args.eval_id);
    Ok(query)
}

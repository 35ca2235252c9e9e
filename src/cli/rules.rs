//! `codemode rules list|revoke ID`: the approvals remembered "from now on", read from the same
//! durable store as `codemode serve` (`durable`: the local state directory by default, Redis in
//! a cluster). A revocation is written to the config's audit log.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use codemode_host::StoredRules;
use codemode_policies::{AuditSink, AuditWriter, RememberedRule, RememberedRules, neutralize};
use codemode_store::Store;

use super::common::{EXIT_USAGE, config_path, load_config};

/// Exit code of a command the store failed, or of a revocation of no rule.
const EXIT_FAILED: u8 = 1;

#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// One line per live rule: id, caller, profile, tool, arguments' SHA-256 (first 16 hex
    /// digits), risk, expiry, who approved via which channel.
    List(ConfigArg),
    /// Revoke a rule: the calls it allowed are asked about again.
    Revoke(RevokeArgs),
}

#[derive(Debug, Args)]
pub struct ConfigArg {
    /// The config file. Default: `$CODEMODE_CONFIG`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// The rule's id (as `codemode rules list` shows it).
    id: String,
    #[command(flatten)]
    config: ConfigArg,
}

pub(crate) async fn rules(command: RulesCommand) -> ExitCode {
    match command {
        RulesCommand::List(args) => list(args).await,
        RulesCommand::Revoke(args) => revoke(args).await,
    }
}

/// The rules of the config's durable store, audited to its audit log (if any).
async fn open(
    flag: Option<&Path>,
) -> Result<(RememberedRules, Option<Arc<AuditWriter>>), ExitCode> {
    let config = load_config(config_path(flag).as_deref())?;
    let store = Store::open(&config.durable).await.map_err(|e| {
        eprintln!(
            "codemode: the durable store, where remembered approvals are kept, did not open: {e}"
        );
        ExitCode::from(EXIT_FAILED)
    })?;
    let writer = match &config.audit.dir {
        Some(dir) => match AuditWriter::open_keyed(dir.clone(), config.audit.key.clone()) {
            Ok(writer) => Some(Arc::new(writer)),
            Err(e) => {
                eprintln!(
                    "codemode: cannot open the audit log in {}: {e}",
                    dir.display()
                );
                return Err(ExitCode::from(EXIT_USAGE));
            }
        },
        None => None,
    };
    let mut rules = StoredRules::remembered(store);
    if let Some(writer) = &writer {
        let sink: Arc<dyn AuditSink> = writer.clone();
        rules = rules.with_audit(Arc::new(move || Some(sink.clone())));
    }
    Ok((rules, writer))
}

/// One rule on one line, every field neutralised.
fn line(rule: &RememberedRule) -> String {
    format!(
        "{}  caller={} profile={} tool={} args_sha256={} risk={} expires={} approved_by={} via {}",
        rule.id,
        neutralize(&rule.caller),
        neutralize(&rule.profile),
        neutralize(&rule.tool),
        &rule.args_sha256[..rule.args_sha256.len().min(16)],
        rule.risk,
        rule.expires_at(),
        neutralize(rule.approved_by.as_deref().unwrap_or("-")),
        rule.channel.as_str()
    )
}

async fn list(args: ConfigArg) -> ExitCode {
    let (rules, _) = match open(args.config.as_deref()).await {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    match rules.list().await {
        Ok(rules) => {
            let mut out = std::io::stdout().lock();
            for rule in &rules {
                let _ = writeln!(out, "{}", line(rule));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("codemode: {}", neutralize(&e.to_string()));
            ExitCode::from(EXIT_FAILED)
        }
    }
}

async fn revoke(args: RevokeArgs) -> ExitCode {
    let (rules, writer) = match open(args.config.config.as_deref()).await {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let by = std::env::var("USER").ok().filter(|u| !u.is_empty());
    let revoked = rules.revoke(&args.id, by, "cli").await;
    if let Some(writer) = writer {
        let _ = tokio::task::spawn_blocking(move || writer.flush()).await;
    }
    match revoked {
        Ok(Some(rule)) => {
            let _ = writeln!(std::io::stdout(), "revoked {}", line(&rule));
            ExitCode::SUCCESS
        }
        Ok(None) => {
            eprintln!(
                "codemode: no remembered approval `{}`",
                neutralize(&args.id)
            );
            ExitCode::from(EXIT_FAILED)
        }
        Err(e) => {
            eprintln!("codemode: {}", neutralize(&e.to_string()));
            ExitCode::from(EXIT_FAILED)
        }
    }
}

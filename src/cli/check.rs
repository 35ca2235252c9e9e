//! `codemode check` (static call-site preview, and with `--config` the calls checked against the
//! tools that exist and the profile) and `codemode config check`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use codemode_policies::{Config, DispositionKind, Profile, neutralize};
use codemode_script::{Preview, extract_tool_calls};
use serde::Serialize;

use super::common::{EXIT_SCRIPT_FAILED, EXIT_USAGE, load_config, read_script};
use codemode_upstream::{UpstreamPool, UpstreamSpec};

/// `codemode check`: what a script would call, found without running it.
///
/// Exit status: 0 when the script parses and (with `--config`) every call names an existing
/// tool the profile does not deny (calls it asks about are reported, not failures); 1 when the
/// script does not parse, or calls an unknown tool or one the profile denies; 2 on a usage
/// error (unreadable script or config, unknown profile, an upstream that fails to start).
#[derive(Debug, Args)]
#[command(
    after_help = "The script may be JavaScript or TypeScript, in a markdown fence or not, \
    or `export default async () => {…}` (see \"Code forms\" in the README).\n\n\
    Exit status: 0 = parses, and with --config no call is unknown or denied; 1 = a syntax error, \
    an unknown tool or a denied call; 2 = usage error (unreadable file, bad config, unknown \
    profile, an upstream that fails to start)."
)]
pub struct CheckArgs {
    /// The script: a file, or `-` for standard input.
    file: PathBuf,
    /// Print JSON: `{"calls": [...], "parse_error": null|{...}}`, and with `--config` also
    /// `"profile"` and `"findings": [{"tool", "line", "column", "kind", "message", "suggestions"}]`.
    #[arg(long)]
    json: bool,
    /// A config file: also check each call against the tools that exist (its upstreams are
    /// started to list them, as `run --config` does; no script code runs) and against the
    /// profile. Prints one line per finding: an unknown tool (with the nearest names), a call
    /// the profile denies or will ask about, a name computed at run time.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Check against this profile of the config (default: its `defaultProfile`, else
    /// unrestricted).
    #[arg(long, value_name = "NAME", requires = "config")]
    profile: Option<String>,
}

/// What `check --config` found about one call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The tool's name; `None` when computed at run time.
    pub tool: Option<String>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    /// What was found.
    pub kind: FindingKind,
    /// One line for a person, e.g. "unknown tool `x`; did you mean `y`?".
    pub message: String,
    /// The nearest existing names (`unknown_tool` only; otherwise empty).
    pub suggestions: Vec<String>,
}

/// The kinds of [`Finding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// No tool of that name exists (fails the check).
    UnknownTool,
    /// The profile denies every call of the tool (fails the check).
    Denied,
    /// The profile asks a person about every call of the tool.
    Asks,
    /// A rule with `when` conditions may deny or ask, depending on the call's arguments.
    DependsOnArguments,
    /// The name is computed at run time: not checked.
    Dynamic,
}

impl FindingKind {
    fn fails(self) -> bool {
        matches!(self, FindingKind::UnknownTool | FindingKind::Denied)
    }
}

/// Checks each call site of `preview` against the names that exist and the profile, in the
/// order a call is decided: unknown tool, then the profile.
pub fn findings(preview: &Preview, names: &[String], profile: Option<&Profile>) -> Vec<Finding> {
    let mut out = Vec::new();
    for call in &preview.calls {
        let finding = |kind, message: String, suggestions| Finding {
            tool: call.tool.clone(),
            line: call.line,
            column: call.column,
            kind,
            message,
            suggestions,
        };
        let Some(tool) = call.tool.as_deref() else {
            out.push(finding(
                FindingKind::Dynamic,
                "the tool's name is computed at run time: not checked".into(),
                Vec::new(),
            ));
            continue;
        };
        if !names.iter().any(|n| n == tool) {
            let near = codemode_runtime::closest(tool, names, 3);
            let hint = if near.is_empty() {
                String::new()
            } else {
                let list: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
                format!("; did you mean {}?", list.join(", "))
            };
            out.push(finding(
                FindingKind::UnknownTool,
                format!("unknown tool `{tool}`{hint}"),
                near,
            ));
            continue;
        }
        let Some(profile) = profile else { continue };
        out.extend(
            policy_finding(tool, profile).map(|(kind, message)| finding(kind, message, Vec::new())),
        );
    }
    out
}

/// What `profile` decides for calls of `tool` (arguments unknown): a denial, an ask, or a rule
/// whose `when` conditions may deny or ask.
fn policy_finding(tool: &str, profile: &Profile) -> Option<(FindingKind, String)> {
    let d = profile.disposition(tool, &serde_json::json!({}));
    let name = profile.name();
    let reason = d
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    match d.kind {
        DispositionKind::Deny => {
            return Some((
                FindingKind::Denied,
                format!(
                    "`{tool}` is denied by profile `{name}` ({}){reason}",
                    d.matched
                ),
            ));
        }
        DispositionKind::Ask => {
            return Some((
                FindingKind::Asks,
                format!(
                    "`{tool}` will ask for approval under profile `{name}` ({}){reason}",
                    d.matched
                ),
            ));
        }
        DispositionKind::Allow => {}
    }
    let (i, rule) = profile.rules().iter().enumerate().find(|(_, r)| {
        !r.when().is_empty() && r.matches_tool(tool) && r.disposition() != DispositionKind::Allow
    })?;
    let verb = match rule.disposition() {
        DispositionKind::Deny => "be denied",
        _ => "ask for approval",
    };
    Some((
        FindingKind::DependsOnArguments,
        format!(
            "`{tool}` may {verb} under profile `{name}`, depending on its arguments (rules[{i}])"
        ),
    ))
}

/// `--json` with `--config`.
#[derive(Serialize)]
struct CheckedJson<'a> {
    #[serde(flatten)]
    preview: &'a Preview,
    profile: Option<&'a str>,
    findings: &'a [Finding],
}

/// Lists the tool calls a script makes, found statically (no code runs); with `--config`,
/// checks them against the tools that exist and the profile.
pub async fn check(args: CheckArgs) -> ExitCode {
    let (name, code) = match read_script(&args.file) {
        Ok(v) => v,
        Err(message) => {
            eprintln!("codemode: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let preview = extract_tool_calls(&code);
    let Some(config_path) = &args.config else {
        return report_calls(&name, &preview, args.json);
    };
    let config = match load_config(Some(config_path)) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let profile = match config.resolve_profile(args.profile.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("codemode: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if preview.parse_error.is_some() {
        return report_calls(&name, &preview, args.json);
    }
    let names = match tool_names(&config).await {
        Ok(names) => names,
        Err(message) => {
            eprintln!("codemode: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let found = findings(&preview, &names, profile.as_deref());
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let json = CheckedJson {
            preview: &preview,
            profile: profile.as_deref().map(Profile::name),
            findings: &found,
        };
        let _ = writeln!(out, "{}", serde_json::to_string(&json).unwrap_or_default());
    } else {
        for f in &found {
            let line = format!("{name}:{}:{}: {}", f.line, f.column, f.message);
            let _ = writeln!(out, "{}", neutralize(&line));
        }
    }
    if found.iter().any(|f| f.kind.fails()) {
        ExitCode::from(EXIT_SCRIPT_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

/// The names a script can call under `config`: the built-ins and every upstream tool. The
/// upstreams are started to list their tools, then stopped.
async fn tool_names(config: &Config) -> Result<Vec<String>, String> {
    let pool = UpstreamPool::new();
    pool.set_logins(super::common::saved_logins(config).await);
    pool.set_upstreams(UpstreamSpec::of_config(config))
        .await
        .map_err(|e| e.to_string())?;
    let names = codemode_host::catalog(&pool)
        .into_iter()
        .map(|t| t.name)
        .collect();
    pool.shutdown().await;
    Ok(names)
}

/// The call sites (one line each) or the preview as JSON; exit 1 on a syntax error.
fn report_calls(name: &str, preview: &Preview, json: bool) -> ExitCode {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string(preview).unwrap_or_default()
        );
    } else {
        for call in &preview.calls {
            let tool = call.tool.as_deref().unwrap_or("<computed at run time>");
            let line = format!(
                "{name}:{}:{}: {tool}{}",
                call.line,
                call.column,
                if call.dynamic { " (dynamic)" } else { "" }
            );
            let _ = writeln!(out, "{}", neutralize(&line));
        }
        if let Some(e) = &preview.parse_error {
            let line = format!("{name}:{}:{}: syntax: {}", e.line, e.column, e.message);
            eprintln!("{}", neutralize(&line));
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
    /// Print the config file's JSON Schema (draft 2020-12), for editors and validators; a
    /// config may name it with `"$schema"`.
    Schema,
}

pub fn config(command: ConfigCommand) -> ExitCode {
    match command {
        ConfigCommand::Check { file } => match Config::load(&file) {
            Ok(config) => {
                super::common::print_config_warnings(&file.display().to_string(), &config);
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
            let _ = write!(stdout.lock(), "{}", super::common::DEFAULT_CONFIG);
            ExitCode::SUCCESS
        }
        ConfigCommand::Schema => {
            let stdout = std::io::stdout();
            let _ = write!(stdout.lock(), "{}", codemode_config::json_schema_text());
            ExitCode::SUCCESS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each call is decided in the order the runtime decides it: an unknown name first (the
    /// profile is not consulted), then the profile's lists and rules; allowed calls are no
    /// finding.
    #[test]
    fn findings_follow_the_order_calls_are_decided_in() {
        let names: Vec<String> = [
            "search_tools",
            "fs__read",
            "fs__write",
            "fs__delete",
            "gh__issue",
        ]
        .map(String::from)
        .to_vec();
        let profile = Profile::from_json(
            "ro",
            &json!({
                "allowlist": ["fs__*", "search_tools"],
                "denylist": ["fs__delete"],
                "asklist": ["fs__write"],
                "rules": [
                    {"tools": ["fs__read"], "when": {"/path": "^/etc"}, "disposition": "ask"},
                    {"tools": ["fs__wri*"], "disposition": "deny", "reason": "read-only"}
                ]
            }),
        )
        .unwrap();
        let code = "await codemode.fs__read({});\nawait codemode.fs__write({});\n\
                    await codemode.fs__delete({});\nawait codemode.gh__issue({});\n\
                    await codemode.fs__raed({});\nawait codemode.search_tools({query: 'x'});";
        let preview = extract_tool_calls(code);
        let got: Vec<(u32, FindingKind, String)> = findings(&preview, &names, Some(&profile))
            .into_iter()
            .map(|f| (f.line, f.kind, f.message))
            .collect();
        let want = [
            (1, FindingKind::DependsOnArguments, "`fs__read` may ask for approval under profile `ro`, depending on its arguments (rules[0])"),
            (2, FindingKind::Denied, "`fs__write` is denied by profile `ro` (rules[1]): read-only"),
            (3, FindingKind::Denied, "`fs__delete` is denied by profile `ro` (denylist glob `fs__delete`)"),
            (4, FindingKind::Denied, "`gh__issue` is denied by profile `ro` (not in the allowlist)"),
            (5, FindingKind::UnknownTool, "unknown tool `fs__raed`; did you mean `fs__read`?"),
        ]
        .map(|(l, k, m)| (l, k, m.to_string()));
        assert_eq!(got, want);
        // Without a profile, only the unknown name is a finding.
        let kinds: Vec<FindingKind> = findings(&preview, &names, None)
            .into_iter()
            .map(|f| f.kind)
            .collect();
        assert_eq!(kinds, [FindingKind::UnknownTool]);
        assert!(FindingKind::UnknownTool.fails() && FindingKind::Denied.fails());
        assert!(!FindingKind::Asks.fails() && !FindingKind::DependsOnArguments.fails());
    }
}

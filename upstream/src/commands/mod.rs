//! Command tools: the local programs of the config's `commands` section, each a script tool
//! `codemode.<name>(args)` (see docs/CONFIGURATION.md, "Command tools").
//!
//! A call is, in order: the arguments checked against the tool's `inputSchema`; the argv built
//! from the template ([`argv`]: one element per placeholder, no shell, `-` refused unless
//! allowed); the program run below a reaper of its own, which kills every process it started
//! when it ends, with only the configured environment ([`process`], [`reaper`]); ANSI escapes stripped from its output, which becomes the result as the
//! tool's `output` says. A non-zero exit is a [`ToolError::Failed`] whose data is
//! `{"exitCode", "stderr"}`.
//!
//! Names cannot clash with upstream tools (those are always `server__tool`, and a command name
//! cannot contain `__`) nor with the built-ins (a config error): see `policies` `commands`.

mod argv;
mod process;
mod reaper;

use std::collections::BTreeMap;
use std::sync::Arc;

use codemode_config::{CommandConfig, CommandOutput, resolve_command};
use codemode_policies::Config;
use codemode_runtime::{BoxFuture, ToolError};
use serde_json::{Value, json};

use crate::catalog::ToolInfo;
use process::RunError;

/// The command tools of one config. Cheap to clone.
#[derive(Clone, Default)]
pub struct CommandTools {
    tools: Arc<BTreeMap<String, CommandConfig>>,
}

impl std::fmt::Debug for CommandTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl CommandTools {
    /// The tools of `config.commands`.
    pub fn from_config(config: &Config) -> Self {
        CommandTools {
            tools: Arc::new(config.commands.clone()),
        }
    }

    /// Whether `name` is one of them.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Their names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// Their catalog entries (name, description, `inputSchema`), for `search_tools`,
    /// `get_tools` and listings.
    pub fn infos(&self) -> Vec<ToolInfo> {
        self.tools
            .iter()
            .map(|(name, c)| ToolInfo {
                name: name.clone(),
                description: c.description.clone(),
                input_schema: c.input_schema.clone(),
                output_schema: None,
            })
            .collect()
    }

    /// Runs the tool `name` with `args`.
    ///
    /// # Errors
    /// [`ToolError::NotFound`] for an unknown name; [`ToolError::Failed`] for arguments the
    /// schema or the template refuses (the program is not started), a program that cannot be
    /// started, a timeout, too much output, a non-zero exit (data `{"exitCode", "stderr"}`; a
    /// program killed by a signal has `exitCode: null` and `signal`), or output that the
    /// `json`/`jsonl` modes cannot parse.
    pub fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let command = self.tools.get(name).ok_or_else(|| ToolError::NotFound {
                tool: name.to_string(),
            })?;
            let args = if args.is_null() { json!({}) } else { args };
            if let Err(invalid) = command.validate_args(&args) {
                return Err(ToolError::Failed {
                    message: format!("invalid arguments for `{name}`: {invalid}"),
                    data: Some(json!({ "errors": invalid.problems })),
                });
            }
            let argv = argv::argv(command, &args)
                .map_err(|e| ToolError::failed(format!("invalid arguments for `{name}`: {e}")))?;
            let program = resolve_command(&command.command)
                .map_err(|e| ToolError::failed(format!("cannot run `{name}`: {e}")))?;
            let done = process::run(&program, &argv, command)
                .await
                .map_err(|e| run_error(name, command, e))?;
            let stderr = clean(&done.stderr_tail);
            if !done.status.success() {
                use std::os::unix::process::ExitStatusExt;
                let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
                let how = match (done.status.code(), done.status.signal()) {
                    (Some(code), _) => format!("exited with code {code}"),
                    (None, Some(sig)) => format!("was killed by signal {sig}"),
                    (None, None) => "failed".to_string(),
                };
                let mut data = json!({"exitCode": done.status.code(), "stderr": stderr});
                if let Some(sig) = done.status.signal() {
                    data["signal"] = json!(sig);
                }
                return Err(ToolError::Failed {
                    message: match last {
                        Some(line) => format!("`{name}` {how}: {}", line.trim()),
                        None => format!("`{name}` {how}"),
                    },
                    data: Some(data),
                });
            }
            decode(name, command.output, &clean(&done.stdout))
        })
    }
}

/// Output as text: ANSI escape sequences removed (a well-kept parser, `strip-ansi-escapes`,
/// rather than a regex that misses some), invalid UTF-8 replaced. The parser drops every control
/// character but `\n`: tabs are kept by cleaning what lies between them (`git diff
/// --name-status`, a tab-indented file).
fn clean(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    for (i, part) in bytes.split(|&b| b == b'\t').enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        out.extend_from_slice(&strip_ansi_escapes::strip(part));
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn decode(name: &str, mode: CommandOutput, text: &str) -> Result<Value, ToolError> {
    let lines = || {
        text.strip_suffix('\n')
            .unwrap_or(text)
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
    };
    match mode {
        CommandOutput::Text => Ok(Value::String(text.to_string())),
        CommandOutput::Lines if text.is_empty() => Ok(json!([])),
        CommandOutput::Lines => Ok(Value::Array(
            lines().map(|l| Value::String(l.to_string())).collect(),
        )),
        CommandOutput::Json => serde_json::from_str(text).map_err(|e| {
            ToolError::failed(format!(
                "`{name}`'s output is not JSON (output \"json\"): {e}"
            ))
        }),
        CommandOutput::Jsonl => lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| {
                    ToolError::failed(format!(
                        "`{name}`'s output line {} is not JSON (output \"jsonl\"): {e}",
                        i + 1
                    ))
                })
            })
            .collect::<Result<Vec<Value>, _>>()
            .map(Value::Array),
    }
}

fn run_error(name: &str, command: &CommandConfig, e: RunError) -> ToolError {
    ToolError::failed(match e {
        RunError::Spawn(e) => format!("`{name}`: could not start `{}`: {e}", command.command),
        RunError::TimedOut(t) => format!(
            "`{name}` timed out after {}s (timeoutSeconds); it and every process it started were killed",
            t.as_secs_f64()
        ),
        RunError::TooMuchOutput(max) => format!(
            "`{name}` wrote more than {max} bytes of output (maxOutput); it was stopped and \
             its output dropped"
        ),
        RunError::Io(e) => format!("`{name}`: reading its output failed: {e}"),
    })
}

#[cfg(test)]
mod tests;

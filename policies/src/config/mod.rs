//! The configuration file: MCP servers, evaluation profiles, limits and the audit log.
//!
//! Parsed by [`Config::from_json_str`] / [`Config::load`], which check everything at once and
//! report every problem with its JSON path ([`ConfigErrors`]). See the crate docs for the format.

mod approvals;
mod commands;
mod document;
mod durable;
mod error;
mod evaluation;
mod fairness;
mod gateway_keys;
mod outputs;
mod reader;
mod sections;
mod server;
mod substitute;
mod upstream;
mod values;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::profile::Profile;

pub use approvals::ApprovalsConfig;
pub use commands::{
    BUILTIN_TOOL_NAMES, COMMAND_PATH, CommandArg, CommandConfig, CommandOutput,
    DEFAULT_COMMAND_MAX_OUTPUT, DEFAULT_COMMAND_TIMEOUT, resolve_command,
};
pub use durable::{
    DEFAULT_REDIS_PORT, DEFAULT_STATE_KEY_ENV, DEFAULT_SUSPEND_TO_STORE_AFTER, DurableConfig,
    RedisUrl, StoreLocation, default_state_dir,
};
pub use error::{ConfigError, ConfigErrorKind, ConfigErrors, ConfigWarning};
pub use fairness::{DEFAULT_MAX_EVAL_LIFETIME, ListenerLimits, PerClientLimits, RetentionLimits};
pub use server::{
    AuthSettings, HttpSettings, JwtKeySource, JwtSettings, ServerSettings, TokenSecret,
    TokenSettings,
};

/// A whole configuration. [`Config::default`] is the built-in one: no servers, no profiles,
/// default [`Limits`], no audit log.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Config {
    /// The upstream MCP servers, by name (`mcpServers`, alias `servers`). Default: none.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Profiles and the default profile (`evaluation`). Default: none.
    pub evaluation: EvaluationConfig,
    /// Resource limits of each eval (`limits`). Default: [`Limits::default`].
    pub limits: Limits,
    /// The audit log (`audit`). Default: off.
    pub audit: AuditConfig,
    /// Where approvals can be answered besides the client (`approvals`). Default: the client's
    /// channel only.
    pub approvals: ApprovalsConfig,
    /// How `serve --http` accepts requests (`server`): hosts, origins, auth. Default: loopback
    /// only, no auth.
    pub server: ServerSettings,
    /// Local programs offered to scripts as tools (`commands`), by tool name. Default: none.
    pub commands: BTreeMap<String, CommandConfig>,
    /// What is masked or removed from tool results before scripts see them (`outputs`).
    /// Default: nothing.
    pub outputs: Arc<crate::OutputPolicy>,
    /// Where evals waiting for a human, pending approvals and legacy MCP sessions are kept
    /// (`durable`). Default: [`DurableConfig::default`], a local store in the user's state
    /// directory.
    pub durable: DurableConfig,
    /// What the file says that codemode accepts but ignores (a client-only key such as
    /// `autoApprove`, VS Code `inputs`), for the caller to show. Default: none.
    pub warnings: Vec<ConfigWarning>,
}

/// The configuration [`Config::default`] stands for, as JSON: a starting point for a file.
pub const DEFAULT_CONFIG_JSON: &str = r#"{
  "mcpServers": {},
  "evaluation": { "profiles": {} },
  "limits": {
    "fuel": 20000000000,
    "memory": "64MiB",
    "timeout": "30s",
    "maxOutput": "1MiB",
    "maxResultText": "24KiB",
    "maxToolCalls": 1000,
    "maxConcurrentToolCalls": 16,
    "maxEvalLifetime": "15m",
    "perClient": { "maxConcurrentEvals": 32, "maxSuspendedEvals": 16, "maxParkedEvals": 256 },
    "unfetchedResults": { "maxCount": 64, "maxBytes": "32MiB" }
  },
  "audit": { "includeArgs": false },
  "durable": { "store": "local", "keyEnv": "CODEMODE_STATE_KEY", "suspendToStoreAfterSeconds": 5, "fsync": true }
}
"#;

impl Config {
    /// The profile called `name`.
    pub fn profile(&self, name: &str) -> Option<&Arc<Profile>> {
        self.evaluation.profiles.get(name)
    }

    /// The profile an eval runs under: the one `requested` by name, else `defaultProfile`, else
    /// none (unrestricted).
    ///
    /// # Errors
    ///
    /// [`UnknownProfile`] when `requested` names no profile.
    pub fn resolve_profile(
        &self,
        requested: Option<&str>,
    ) -> Result<Option<Arc<Profile>>, UnknownProfile> {
        let Some(name) = requested.or(self.evaluation.default_profile.as_deref()) else {
            return Ok(None);
        };
        self.profile(name)
            .cloned()
            .map(Some)
            .ok_or_else(|| UnknownProfile {
                name: name.to_string(),
                available: self.evaluation.profiles.keys().cloned().collect(),
            })
    }
}

/// A profile name that the configuration does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile `{name}`; available: {}", if available.is_empty() { "none".to_string() } else { available.join(", ") })]
pub struct UnknownProfile {
    /// The name asked for.
    pub name: String,
    /// The profiles that exist.
    pub available: Vec<String>,
}

/// One upstream MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// How to reach it: `command` (stdio) or `url` (streamable HTTP).
    pub transport: ServerTransport,
    /// How long one call to it may take (`timeoutSeconds`). Default: [`DEFAULT_SERVER_TIMEOUT`].
    pub timeout: Duration,
    /// How long starting it (spawn or dial, `initialize`, the first `tools/list`) may take
    /// before the attempt counts as failed (`startTimeoutSeconds`); a call to one of its tools
    /// made while it is still starting waits that long at most. Default:
    /// [`DEFAULT_SERVER_START_TIMEOUT`].
    pub startup_timeout: Duration,
}

/// The default of a server's `timeoutSeconds`: 60 seconds.
pub const DEFAULT_SERVER_TIMEOUT: Duration = Duration::from_secs(60);
/// The default of a server's `startTimeoutSeconds`: 30 seconds.
pub const DEFAULT_SERVER_START_TIMEOUT: Duration = Duration::from_secs(30);

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTransport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program (`command`, required).
        command: String,
        /// Its arguments (`args`). Default: none.
        args: Vec<String>,
        /// Extra environment variables (`env`). Default: none.
        env: BTreeMap<String, String>,
        /// Its working directory (`cwd`). Default: the current one.
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The endpoint (`url`, required, `http://` or `https://`).
        url: String,
        /// Extra request headers (`headers`), e.g. `Authorization`. Default: none.
        headers: BTreeMap<String, String>,
    },
}

/// The `evaluation` section.
#[derive(Debug, Clone, Default)]
pub struct EvaluationConfig {
    /// The profile evals run under when none is requested (`defaultProfile`). Default: none,
    /// i.e. unrestricted.
    pub default_profile: Option<String>,
    /// The profiles, by name (`profiles`). Default: none.
    pub profiles: BTreeMap<String, Arc<Profile>>,
    /// The permissions a caller needs to use the base `eval` tool
    /// (`evalRequiresPermissions`, free strings). Default: none. See
    /// [`EvaluationConfig::eval_missing_permissions`].
    pub eval_requires_permissions: Vec<String>,
}

impl EvaluationConfig {
    /// The permissions of `evalRequiresPermissions` that `caller` lacks, in written order:
    /// empty when the caller may use the base `eval` tool.
    pub fn eval_missing_permissions<'a>(&'a self, caller: &crate::Caller) -> Vec<&'a str> {
        caller.missing(&self.eval_requires_permissions)
    }
}

/// The default of `limits.maxResultText`: 24 KiB.
pub const DEFAULT_RESULT_TEXT: u64 = 24 * 1024;
/// The smallest `limits.maxResultText`: room for any value elided to its markers.
pub const MIN_RESULT_TEXT: u64 = 256;

/// Resource limits of each eval (`limits`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// WebAssembly fuel budget (`fuel`; `0` in the file means unlimited). Default: the
    /// runtime's [`codemode_runtime::DEFAULT_FUEL`] (20 billion).
    pub fuel: Option<u64>,
    /// Maximum guest memory in bytes (`memory`, a size like `64MiB`). Default: 64 MiB.
    pub memory: u64,
    /// Wall-clock timeout (`timeout`, a duration like `30s`), not counting time spent waiting
    /// for a human's approval. Default: 30 s.
    pub timeout: Duration,
    /// Maximum size of logs plus result, in bytes (`maxOutput`). Default: 1 MiB.
    pub max_output: u64,
    /// Most bytes the result takes in the text block of an MCP eval result (`maxResultText`, a
    /// size); a larger result is elided there keeping valid JSON of the same shape, while the
    /// structured content keeps all of it. At least [`MIN_RESULT_TEXT`]. Default:
    /// [`DEFAULT_RESULT_TEXT`] (24 KiB).
    pub max_result_text: u64,
    /// Maximum tool calls per eval (`maxToolCalls`; `0` in the file means unlimited). Default:
    /// the runtime's [`codemode_runtime::DEFAULT_MAX_TOOL_CALLS`] (1000).
    pub max_tool_calls: Option<u64>,
    /// Maximum tool calls in flight at once (`maxConcurrentToolCalls`). Default: 16.
    pub max_concurrent_tool_calls: usize,
    /// The longest an eval may live, including time spent waiting for a human
    /// (`maxEvalLifetime`, a duration). Past it the eval ends with error kind `timeout`.
    /// Default: [`DEFAULT_MAX_EVAL_LIFETIME`] (15 minutes).
    pub max_eval_lifetime: Duration,
    /// What one client may hold at once (`perClient`). Default: [`PerClientLimits::default`].
    pub per_client: PerClientLimits,
    /// Finished results nobody fetched yet (`unfetchedResults`). Default:
    /// [`RetentionLimits::default`].
    pub unfetched_results: RetentionLimits,
}

impl Default for Limits {
    /// The runtime's own defaults ([`codemode_runtime::EvalOptions::default`]): one source of
    /// truth for `codemode run`, `codemode serve` and embedders.
    fn default() -> Self {
        let d = codemode_runtime::EvalOptions::default();
        Limits {
            fuel: d.fuel,
            memory: d.memory,
            timeout: d.timeout.unwrap_or_default(),
            max_output: d.max_output,
            max_result_text: DEFAULT_RESULT_TEXT,
            max_tool_calls: d.max_tool_calls,
            max_concurrent_tool_calls: d.max_concurrent_tool_calls,
            max_eval_lifetime: DEFAULT_MAX_EVAL_LIFETIME,
            per_client: PerClientLimits::default(),
            unfetched_results: RetentionLimits::default(),
        }
    }
}

impl Limits {
    /// These limits as the runtime's [`codemode_runtime::EvalOptions`] (a zero timeout means
    /// none).
    pub fn eval_options(&self) -> codemode_runtime::EvalOptions {
        let mut options = codemode_runtime::EvalOptions::default();
        options
            .fuel(self.fuel)
            .memory(self.memory)
            .timeout(Some(self.timeout).filter(|t| !t.is_zero()))
            .max_output(self.max_output)
            .max_tool_calls(self.max_tool_calls)
            .max_concurrent_tool_calls(self.max_concurrent_tool_calls);
        options
    }
}

/// The `audit` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditConfig {
    /// Where the JSON Lines files go (`dir`). Default: `None`, no audit log.
    pub dir: Option<PathBuf>,
    /// Whether tool-call records include the arguments themselves (`includeArgs`), not just
    /// their SHA-256. Default: `false`.
    pub include_args: bool,
    /// The environment variable holding the key of HMAC-SHA-256 chains (`keyEnv`). Default:
    /// `None`, plain SHA-256 chains.
    pub key_env: Option<String>,
    /// The key itself, read from `key_env` when the file is loaded.
    pub key: Option<crate::AuditKey>,
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_policy_keys;

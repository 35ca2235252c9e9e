//! codemode's configuration file: its text, its sections and the reading machinery.
//!
//! The file is one JSON document (comments and trailing commas allowed). This crate reads every
//! section that is plain settings — `mcpServers`/`servers`, `limits`, `audit`, `approvals`,
//! `server`, `commands`, `durable`, VS Code's `inputs`, `$schema` — into [`Settings`], and hands
//! the sections that are policies (`evaluation`: profiles; `outputs`: masks) to a
//! [`PolicySections`] reader, which `codemode_policies` implements to build its decision types
//! (its `Config` is these settings plus those policies) from what [`read_evaluation`] and
//! [`read_output_rule`] read here, every value typed and checked. Both read with the same [`Reader`], so
//! that one pass reports every problem of the file, each with its JSON path
//! ([`ConfigErrors`]).
//!
//! What reading guarantees, for every section:
//!
//! - a key given twice in one object is an error (JSON readers silently keep the last: in a
//!   policy file that is a rule lost), and each object's keys are known in written order
//!   ([`Reader::in_written_order`]: a profile's `risk` globs, first match wins);
//! - unknown keys are errors, listing the allowed ones and suggesting the closest;
//! - sizes (`64MiB`, [`parse_size`]) and durations (`30s`, [`parse_duration`]) are typed;
//! - `${VAR}` references in servers' `args`, `env`, `headers`, `url` are read from the
//!   environment, and a missing variable is an error, never an empty string.
//!
//! # Example
//!
//! ```
//! use codemode_config::{Document, JsonPath, PolicySections, Reader, Settings};
//! use serde_json::Value;
//!
//! /// A reader of the policy sections that only checks `evaluation` is an object.
//! struct Policies;
//! impl PolicySections for Policies {
//!     fn evaluation(&mut self, r: &mut Reader, v: &Value, path: &JsonPath) {
//!         r.any_object(v, path);
//!     }
//!     fn outputs(&mut self, _: &mut Reader, _: &Value, _: &JsonPath) {}
//! }
//!
//! let doc = Document::parse(r#"{
//!   // comments are fine
//!   "mcpServers": { "time": { "command": "uvx", "args": ["mcp-server-time"] } },
//!   "limits": { "timeout": "10s", "memory": "128MiB" },
//! }"#)?;
//! let settings = Settings::read(&doc, &mut Policies)?;
//! assert_eq!(settings.limits.timeout, std::time::Duration::from_secs(10));
//! assert_eq!(settings.limits.memory, 128 << 20);
//!
//! // Every problem at once, each with its path.
//! let doc = Document::parse(r#"{"limits": {"timeout": 5, "memroy": "1MiB"}, "evaluation": []}"#)?;
//! let errors = Settings::read(&doc, &mut Policies).unwrap_err();
//! let paths: Vec<&str> = errors.iter().map(|e| e.path()).collect();
//! assert_eq!(paths, ["evaluation", "limits.memroy", "limits.timeout"]);
//! # Ok::<(), codemode_config::ConfigErrors>(())
//! ```

#![doc(test(attr(deny(warnings))))]

mod approvals;
mod audit;
mod commands;
mod de;
mod document;
mod durable;
mod error;
mod fairness;
mod limits;
mod log_format;
mod logging;
mod origin;
mod policies;
mod program;
mod reader;
mod schema;
mod server;
mod server_oauth;
mod settings;
mod substitute;
mod telemetry;
mod units;
mod upstream;

pub use approvals::ApprovalsConfig;
pub use audit::{AuditConfig, AuditKey};
pub use commands::{
    BUILTIN_TOOL_NAMES, COMMAND_PATH, CommandArg, CommandConfig, CommandOutput,
    DEFAULT_COMMAND_MAX_OUTPUT, DEFAULT_COMMAND_TIMEOUT, InvalidCommandArgs, UnresolvedCommand,
    resolve_command,
};
pub use durable::{
    DEFAULT_MAX_PARKED_BYTES, DurableConfig, InvalidRedisUrl, RedisUrl, StoreLocation,
    default_state_dir,
};
pub use error::{ConfigError, ConfigErrorKind, ConfigErrors, ConfigWarning};
pub use fairness::{
    DEFAULT_MAX_EVAL_LIFETIME, DEFAULT_MAX_PARKED_BYTES_PER_CLIENT, ListenerLimits,
    PerClientLimits, RetentionLimits,
};
pub use limits::{DEFAULT_MAX_MEDIA_BYTES, DEFAULT_RESULT_TEXT, Limits, MIN_RESULT_TEXT};
pub use log_format::LogFormat;
pub use logging::LoggingConfig;
pub use origin::{explicit_default_ports, origin_allowed, valid_allowed_origin};
pub use policies::{
    AccessRead, ApprovalDiffRead, ClassificationRead, EvaluationRead, OutputRuleRead, ProfileRead,
    RiskPolicyRead, RuleRead, read_evaluation, read_output_rule, read_profile,
};
pub use reader::{JsonPath, Reader, describe};
pub use schema::conditions::path_glob;
pub use schema::leaves::tool_glob;
pub use schema::policies::Fallback;
pub use schema::values::{Disposition, Risk};
pub use schema::{SCHEMA_DRAFT, json_schema, json_schema_text, schema_problems};
pub use server::{
    AdminSettings, AuthSettings, HttpSettings, JwtKeySource, JwtSettings, LOCAL_CALLER,
    ServerSettings, TokenSecret, TokenSettings,
};
pub use server_oauth::OAuthResourceSettings;
pub use settings::{Document, PolicySections, Settings};
pub use telemetry::TelemetryConfig;
pub use units::{ParseUnitError, parse_duration, parse_size};
pub use upstream::{
    DEFAULT_SERVER_START_TIMEOUT, DEFAULT_SERVER_TIMEOUT, OAuthGrant, ServerConfig,
    ServerTransport, SigningAlgorithm, UpstreamOAuth, loopback_port,
};

/// The tests' name for the settings (`Config` in `codemode_policies`), so that the section
/// tests moved here read as they did.
#[cfg(test)]
pub(crate) use settings::Settings as Config;

/// The built-in configuration (`codemode_policies::Config::default`), as JSON: a starting
/// point for a file.
pub const DEFAULT_CONFIG_JSON: &str = r#"{
  "mcpServers": {},
  "evaluation": { "profiles": {} },
  "limits": {
    "fuel": 20000000000,
    "memory": "64MiB",
    "timeout": "30s",
    "maxOutput": "1MiB",
    "maxResultText": "24KiB",
    "maxMediaBytes": "4MiB",
    "maxToolCalls": 1000,
    "maxConcurrentToolCalls": 16,
    "maxEvalLifetime": "15m",
    "perClient": { "maxConcurrentEvals": 32, "maxSuspendedEvals": 16, "maxParkedEvals": 256,
                   "maxParkedBytes": "256MiB" },
    "unfetchedResults": { "maxCount": 64, "maxBytes": "32MiB" }
  },
  "audit": { "includeArgs": false },
  "durable": { "store": "local", "keyEnv": "CODEMODE_STATE_KEY", "suspendToStoreAfterSeconds": 5, "fsync": true,
               "maxParkedBytes": "4GiB" }
}
"#;

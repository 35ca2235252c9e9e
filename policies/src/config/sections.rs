//! Builds a [`Config`] from a JSON value: the document root, `mcpServers`, `limits`, `audit`.
//! (`evaluation` is in `evaluation.rs`.) The entry points: [`Config::from_json_str`],
//! [`Config::from_json_str_with_env`] and [`Config::load`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::evaluation::read_evaluation;
use super::reader::{JsonPath, Reader, describe};
use super::values::{duration, size};
use super::{
    AuditConfig, Config, ConfigError, ConfigErrorKind, ConfigErrors, Limits, MIN_RESULT_TEXT,
};
use crate::units::parse_duration;

const ROOT_KEYS: &[&str] = &[
    "$schema",
    "mcpServers",
    "servers",
    "evaluation",
    "limits",
    "audit",
    "approvals",
    "server",
    "commands",
    "outputs",
    "durable",
    "inputs",
];
const LIMIT_KEYS: &[&str] = &[
    "fuel",
    "memory",
    "timeout",
    "maxOutput",
    "maxResultText",
    "maxToolCalls",
    "maxConcurrentToolCalls",
    "maxEvalLifetime",
    "perClient",
    "unfetchedResults",
];
const AUDIT_KEYS: &[&str] = &["dir", "includeArgs", "keyEnv"];

impl Config {
    /// Parses and validates a configuration.
    ///
    /// The text is JSON, with comments (`//`, `/* */`) and trailing commas allowed.
    /// Top-level keys: `mcpServers` (or its alias `servers`, not both), `evaluation`, `limits`,
    /// `audit`, `approvals`, `server` (how `serve --http` accepts requests), `commands` (local
    /// command tools), `outputs` (masks and removals in tool results), `durable` (where waiting
    /// evals and sessions are kept), `$schema` (ignored, for
    /// editors) and `inputs` (VS Code's prompts: accepted, with a [warning](Config::warnings)
    /// when non-empty). Every key is optional; unknown keys are errors. `${VAR}` references in
    /// servers' `args`, `env`, `headers` and `url` are read from the process environment.
    ///
    /// # Errors
    ///
    /// [`ConfigErrors`] with every problem found, each with its JSON path: invalid JSON (with
    /// line and column), a key given twice in one object (JSON would silently keep the last),
    /// unknown keys (listing the allowed ones), wrong types, bad globs and
    /// regexes, invalid names, a `defaultProfile` naming no profile, …
    pub fn from_json_str(json: &str) -> Result<Config, ConfigErrors> {
        let (value, key_order) = super::document::parse_ordered(json)?;
        config_from_value(&value, key_order, super::substitute::EnvLookup::default())
    }

    /// [`Config::from_json_str`], reading the `${VAR}` references of servers through `env`
    /// instead of the process environment (`None`: unset).
    ///
    /// ```
    /// use codemode_policies::{Config, ConfigErrorKind, ServerTransport};
    /// let json = r#"{"mcpServers": {"api": {"type": "http", "url": "${BASE:-http://localhost:3000}/mcp",
    ///     "headers": {"Authorization": "Bearer ${env:API_TOKEN}"}}}}"#;
    /// let config = Config::from_json_str_with_env(json, |name| {
    ///     (name == "API_TOKEN").then(|| "t0ken".to_string())
    /// })
    /// .unwrap();
    /// let ServerTransport::Http { url, headers } = &config.servers["api"].transport else { panic!() };
    /// assert_eq!(url, "http://localhost:3000/mcp");
    /// assert_eq!(headers["Authorization"], "Bearer t0ken");
    ///
    /// let errors = Config::from_json_str_with_env(json, |_| None).unwrap_err();
    /// assert_eq!(errors.errors[0].kind(), ConfigErrorKind::MissingEnv);
    /// assert_eq!(errors.errors[0].path(), "mcpServers.api.headers.Authorization");
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Config::from_json_str`].
    pub fn from_json_str_with_env(
        json: &str,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Result<Config, ConfigErrors> {
        let (value, key_order) = super::document::parse_ordered(json)?;
        config_from_value(&value, key_order, super::substitute::EnvLookup::new(env))
    }

    /// Reads and parses the configuration file at `path`. Relative paths inside it (`audit.dir`,
    /// a server's `cwd`) are kept as written: they are relative to the process's working
    /// directory, not to the file.
    ///
    /// # Errors
    ///
    /// An I/O error (one [`ConfigError`] of kind [`ConfigErrorKind::Io`] whose path is the
    /// file name), or what
    /// [`Config::from_json_str`] reports.
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigErrors> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigErrors::single(ConfigError::io(path.display().to_string(), e)))?;
        Config::from_json_str(&text)
    }
}

pub(crate) fn config_from_value(
    value: &Value,
    key_order: super::reader::KeyOrder,
    env: super::substitute::EnvLookup,
) -> Result<Config, ConfigErrors> {
    let mut r = Reader {
        key_order,
        env,
        ..Reader::default()
    };
    let root = JsonPath::root();
    let mut config = Config::default();
    if let Some(map) = r.object(value, &root, ROOT_KEYS) {
        let servers = match (map.get("mcpServers"), map.get("servers")) {
            (Some(_), Some(_)) => {
                r.error(
                    &root.key("servers"),
                    ConfigErrorKind::ConflictingKeys,
                    "`servers` is an alias of `mcpServers`; give only one of them",
                );
                None
            }
            (Some(v), None) => Some((v, root.key("mcpServers"))),
            (None, Some(v)) => Some((v, root.key("servers"))),
            (None, None) => None,
        };
        if let Some((v, path)) = servers {
            config.servers = super::upstream::read_servers(&mut r, v, &path);
        }
        if let Some(v) = map.get("inputs") {
            read_inputs(&mut r, v, &root.key("inputs"));
        }
        if let Some(v) = map.get("evaluation") {
            config.evaluation = read_evaluation(&mut r, v, &root.key("evaluation"));
        }
        if let Some(v) = map.get("limits") {
            config.limits = read_limits(&mut r, v, &root.key("limits"));
        }
        if let Some(v) = map.get("audit") {
            config.audit = read_audit(&mut r, v, &root.key("audit"));
        }
        if let Some(v) = map.get("approvals") {
            config.approvals = super::approvals::read_approvals(&mut r, v, &root.key("approvals"));
        }
        if let Some(v) = map.get("commands") {
            config.commands = super::commands::read_commands(&mut r, v, &root.key("commands"));
        }
        if let Some(v) = map.get("server") {
            config.server = super::server::read_server_settings(&mut r, v, &root.key("server"));
        }
        if let Some(v) = map.get("durable") {
            config.durable = super::durable::read_durable(&mut r, v, &root.key("durable"));
        }
        if let Some(v) = map.get("outputs") {
            config.outputs = Arc::new(super::outputs::read_outputs(
                &mut r,
                v,
                &root.key("outputs"),
            ));
        }
    }
    if r.errors.is_empty() {
        config.warnings = r.warnings;
        Ok(config)
    } else {
        Err(ConfigErrors { errors: r.errors })
    }
}

/// VS Code's top-level `inputs` (values it prompts the user for): accepted so that its
/// `mcp.json` reads, with a warning when there are some, since codemode prompts nobody.
fn read_inputs(r: &mut Reader, v: &Value, path: &JsonPath) {
    match v {
        Value::Array(items) if items.is_empty() => {}
        Value::Array(_) => r.warn(
            path,
            "codemode does not prompt for VS Code inputs, and a `${input:…}` reference is an \
             error; put each value in an environment variable and write `${env:NAME}`",
        ),
        _ => r.expected(path, "an array", v),
    }
}

fn read_limits(r: &mut Reader, v: &Value, path: &JsonPath) -> Limits {
    let mut limits = Limits::default();
    let Some(map) = r.object(v, path, LIMIT_KEYS) else {
        return limits;
    };
    if let Some(v) = map.get("fuel")
        && let Some(n) = r.u64(v, &path.key("fuel"))
    {
        limits.fuel = (n > 0).then_some(n);
    }
    if let Some(v) = map.get("memory")
        && let Some(n) = size(r, v, &path.key("memory"))
    {
        limits.memory = n;
    }
    if let Some(v) = map.get("timeout") {
        let p = path.key("timeout");
        let parsed = match v {
            Value::String(s) => {
                parse_duration(s).map_err(|e| (ConfigErrorKind::InvalidValue, e.to_string()))
            }
            _ => Err((
                ConfigErrorKind::WrongType,
                format!("expected a duration such as \"30s\", found {}", describe(v)),
            )),
        };
        match parsed {
            Ok(d) if d.is_zero() => r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                "the timeout must be greater than zero",
            ),
            Ok(d) => limits.timeout = d,
            Err((kind, msg)) => r.error(&p, kind, msg),
        }
    }
    if let Some(v) = map.get("maxOutput")
        && let Some(n) = size(r, v, &path.key("maxOutput"))
    {
        limits.max_output = n;
    }
    if let Some(v) = map.get("maxResultText") {
        let p = path.key("maxResultText");
        match size(r, v, &p) {
            Some(n) if n < MIN_RESULT_TEXT => r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                format!("must be at least {MIN_RESULT_TEXT} bytes, found {n}"),
            ),
            Some(n) => limits.max_result_text = n,
            None => {}
        }
    }
    if let Some(v) = map.get("maxToolCalls")
        && let Some(n) = r.u64(v, &path.key("maxToolCalls"))
    {
        limits.max_tool_calls = (n > 0).then_some(n);
    }
    if let Some(v) = map.get("maxConcurrentToolCalls") {
        let p = path.key("maxConcurrentToolCalls");
        match r.u64(v, &p).map(usize::try_from) {
            Some(Ok(0)) => r.error(&p, ConfigErrorKind::InvalidValue, "must be at least 1"),
            Some(Ok(n)) => limits.max_concurrent_tool_calls = n,
            Some(Err(_)) => r.error(&p, ConfigErrorKind::InvalidValue, "too large"),
            None => {}
        }
    }
    if let Some(v) = map.get("maxEvalLifetime")
        && let Some(d) = duration(r, v, &path.key("maxEvalLifetime"))
    {
        limits.max_eval_lifetime = d;
    }
    if let Some(v) = map.get("perClient") {
        limits.per_client = super::fairness::read_per_client(r, v, &path.key("perClient"));
    }
    if let Some(v) = map.get("unfetchedResults") {
        limits.unfetched_results =
            super::fairness::read_retention(r, v, &path.key("unfetchedResults"));
    }
    limits
}

fn read_audit(r: &mut Reader, v: &Value, path: &JsonPath) -> AuditConfig {
    let mut audit = AuditConfig::default();
    let Some(map) = r.object(v, path, AUDIT_KEYS) else {
        return audit;
    };
    if let Some(v) = map.get("dir") {
        let p = path.key("dir");
        match r.string(v, &p) {
            Some("") => r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                "the directory is empty; leave `dir` out to disable the audit log",
            ),
            Some(s) => audit.dir = Some(PathBuf::from(s)),
            None => {}
        }
    }
    if let Some(v) = map.get("includeArgs")
        && let Some(b) = r.bool(v, &path.key("includeArgs"))
    {
        audit.include_args = b;
    }
    if let Some(v) = map.get("keyEnv") {
        let p = path.key("keyEnv");
        match r.string(v, &p) {
            Some("") => r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                "the variable name is empty; leave `keyEnv` out for plain SHA-256 chains",
            ),
            // The key is read now, so that a missing one is a load error, not a surprise at
            // the first record; its value is never part of a message.
            Some(name) => match std::env::var(name) {
                Ok(key) if !key.is_empty() => {
                    audit.key_env = Some(name.to_string());
                    audit.key = Some(crate::AuditKey::new(key));
                }
                Ok(_) => r.error(
                    &p,
                    ConfigErrorKind::MissingEnv,
                    format!("the environment variable `{name}` (the audit key) is empty"),
                ),
                Err(std::env::VarError::NotPresent) => r.error(
                    &p,
                    ConfigErrorKind::MissingEnv,
                    format!("the environment variable `{name}` (the audit key) is not set"),
                ),
                Err(std::env::VarError::NotUnicode(_)) => r.error(
                    &p,
                    ConfigErrorKind::MissingEnv,
                    format!("the environment variable `{name}` (the audit key) is not UTF-8"),
                ),
            },
            None => {}
        }
    }
    audit
}

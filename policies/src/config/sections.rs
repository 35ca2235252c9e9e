//! Builds a [`Config`] from a JSON value: the document root, `mcpServers`, `limits`, `audit`.
//! (`evaluation` is in `evaluation.rs`.)

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::evaluation::read_evaluation;
use super::reader::{JsonPath, Reader, describe};
use super::{
    AuditConfig, Config, ConfigErrorKind, ConfigErrors, DEFAULT_SERVER_TIMEOUT, Limits,
    ServerConfig, ServerTransport,
};
use crate::units::{parse_duration, parse_size};

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
];
const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "timeoutSeconds",
];
const LIMIT_KEYS: &[&str] = &[
    "fuel",
    "memory",
    "timeout",
    "maxOutput",
    "maxToolCalls",
    "maxConcurrentToolCalls",
];
const AUDIT_KEYS: &[&str] = &["dir", "includeArgs", "keyEnv"];

pub(crate) fn config_from_value(
    value: &Value,
    key_order: super::document::KeyOrder,
) -> Result<Config, ConfigErrors> {
    let mut r = Reader {
        key_order,
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
            config.servers = read_servers(&mut r, v, &path);
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
    }
    if r.errors.is_empty() {
        Ok(config)
    } else {
        Err(ConfigErrors { errors: r.errors })
    }
}

/// `^[A-Za-z0-9_-]{1,64}$`, without `__` (which separates server and tool in `server__tool`).
fn check_server_name(name: &str) -> Result<(), String> {
    let chars_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if name.is_empty() || name.len() > 64 || !chars_ok {
        return Err(format!(
            "invalid server name `{name}`: use 1 to 64 ASCII letters, digits, `_` or `-`"
        ));
    }
    if name.contains("__") {
        return Err(format!(
            "invalid server name `{name}`: `__` is reserved (it separates server and tool names)"
        ));
    }
    Ok(())
}

fn read_servers(r: &mut Reader, v: &Value, path: &JsonPath) -> BTreeMap<String, ServerConfig> {
    let mut out = BTreeMap::new();
    let Some(map) = r.any_object(v, path) else {
        return out;
    };
    for (name, entry) in map {
        let p = path.key(name);
        if let Err(msg) = check_server_name(name) {
            r.error(&p, ConfigErrorKind::InvalidName, msg);
        }
        if let Some(server) = read_server(r, entry, &p) {
            out.insert(name.clone(), server);
        }
    }
    out
}

fn read_server(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<ServerConfig> {
    let map = r.object(v, path, SERVER_KEYS)?;
    let timeout = match map.get("timeoutSeconds") {
        Some(t) => positive_seconds(r, t, &path.key("timeoutSeconds")),
        None => Some(DEFAULT_SERVER_TIMEOUT),
    };
    let transport = match (map.get("command"), map.get("url")) {
        (Some(_), Some(_)) => {
            r.error(
                path,
                ConfigErrorKind::ConflictingKeys,
                "give either `command` (stdio server) or `url` (HTTP server), not both",
            );
            None
        }
        (None, None) => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing `command` (stdio server) or `url` (HTTP server)",
            );
            None
        }
        (Some(command), None) => read_stdio(r, map, command, path),
        (None, Some(url)) => read_http(r, map, url, path),
    };
    Some(ServerConfig {
        transport: transport?,
        timeout: timeout?,
    })
}

/// Errors for each of `keys` present in `map`, which do not apply to this kind of server.
fn reject_keys(
    r: &mut Reader,
    map: &Map<String, Value>,
    keys: &[&str],
    path: &JsonPath,
    why: &str,
) {
    for key in keys {
        if map.contains_key(*key) {
            r.error(
                &path.key(key),
                ConfigErrorKind::ConflictingKeys,
                format!("`{key}` {why}"),
            );
        }
    }
}

fn read_stdio(
    r: &mut Reader,
    map: &Map<String, Value>,
    command: &Value,
    path: &JsonPath,
) -> Option<ServerTransport> {
    reject_keys(
        r,
        map,
        &["headers"],
        path,
        "applies to HTTP servers (with `url`) only",
    );
    let cpath = path.key("command");
    let command = r.string(command, &cpath).map(str::to_string);
    if command.as_deref() == Some("") {
        r.error(
            &cpath,
            ConfigErrorKind::InvalidValue,
            "the command is empty",
        );
    }
    let args = match map.get("args") {
        Some(v) => r
            .strings(v, &path.key("args"))
            .map(|a| a.into_iter().map(|(_, s)| s).collect()),
        None => Some(Vec::new()),
    };
    let env = match map.get("env") {
        Some(v) => r.string_map(v, &path.key("env")),
        None => Some(BTreeMap::new()),
    };
    let cwd = match map.get("cwd") {
        Some(v) => r
            .string(v, &path.key("cwd"))
            .map(|s| Some(PathBuf::from(s))),
        None => Some(None),
    };
    Some(ServerTransport::Stdio {
        command: command?,
        args: args?,
        env: env?,
        cwd: cwd?,
    })
}

fn read_http(
    r: &mut Reader,
    map: &Map<String, Value>,
    url: &Value,
    path: &JsonPath,
) -> Option<ServerTransport> {
    reject_keys(
        r,
        map,
        &["args", "env", "cwd"],
        path,
        "applies to stdio servers (with `command`) only",
    );
    let upath = path.key("url");
    let url = r.string(url, &upath).map(str::to_string);
    if let Some(u) = &url
        && !(u.starts_with("http://") || u.starts_with("https://"))
    {
        r.error(
            &upath,
            ConfigErrorKind::InvalidValue,
            format!("`{u}` is not an http:// or https:// URL"),
        );
    }
    let headers = match map.get("headers") {
        Some(v) => r.string_map(v, &path.key("headers")),
        None => Some(BTreeMap::new()),
    };
    Some(ServerTransport::Http {
        url: url?,
        headers: headers?,
    })
}

/// A positive number of seconds (fractions allowed), e.g. `timeoutSeconds`.
pub(crate) fn positive_seconds(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<Duration> {
    let secs = v.as_f64().filter(|s| *s > 0.0);
    match secs.and_then(|s| Duration::try_from_secs_f64(s).ok()) {
        Some(d) => Some(d),
        None => {
            r.error(
                path,
                ConfigErrorKind::InvalidValue,
                format!(
                    "expected a positive number of seconds, found {}",
                    describe(v)
                ),
            );
            None
        }
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
    limits
}

/// A size: a string like `"64MiB"` or a whole number of bytes; must not be zero.
pub(crate) fn size(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<u64> {
    let parsed = match v {
        Value::String(s) => {
            parse_size(s).map_err(|e| (ConfigErrorKind::InvalidValue, e.to_string()))
        }
        Value::Number(n) => n.as_u64().ok_or_else(|| {
            (
                ConfigErrorKind::InvalidValue,
                format!("expected a whole number of bytes, found {n}"),
            )
        }),
        _ => Err((
            ConfigErrorKind::WrongType,
            format!(
                "expected a size such as \"64MiB\" or a number of bytes, found {}",
                describe(v)
            ),
        )),
    };
    match parsed {
        Ok(0) => {
            r.error(
                path,
                ConfigErrorKind::InvalidValue,
                "must be greater than zero",
            );
            None
        }
        Ok(n) => Some(n),
        Err((kind, msg)) => {
            r.error(path, kind, msg);
            None
        }
    }
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

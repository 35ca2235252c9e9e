//! `mcpServers` (alias `servers`): the upstream MCP servers, read as MCP clients write them, so
//! that an entry copied from Claude Desktop, Claude Code's `.mcp.json`, VS Code's `mcp.json` or
//! Cursor's `mcp.json` works as it is:
//!
//! * `command`/`args`/`env`/`cwd` (stdio) or `url`/`headers` (streamable HTTP), with codemode's
//!   own `oauth` for servers that use the MCP authorization spec ([`UpstreamOAuth`]);
//! * `type`: `stdio`, `http` or `streamable-http` (checked against the keys given); `sse`, the
//!   old HTTP+SSE transport, is an error: codemode's MCP client (rmcp) has none for it;
//! * `disabled: true`: the entry is skipped without being checked further;
//! * `autoApprove` / `alwaysAllow` (client-only): accepted with a warning, since what runs
//!   without asking is a profile's business here;
//! * `${VAR}`, `${env:VAR}`, `${VAR:-default}` in `args`, `env`, `headers` and `url`;
//! * codemode's own `timeoutSeconds` (one call), `startTimeoutSeconds` (start-up) and
//!   `isolateSessions` (a connection per eval).
//!
//! Any other key stays an error, as everywhere in the file.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader};
use crate::schema::servers;
use crate::values::positive_seconds;

mod oauth;

use oauth::read_oauth;
pub use oauth::{OAuthGrant, SigningAlgorithm, UpstreamOAuth, loopback_port};

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
    /// Whether each eval calls it over a connection of its own — a child process of its own for
    /// a stdio server, an MCP session of its own over HTTP — opened at its first call and closed
    /// when it ends (`isolateSessions`): a stdio server's requests to the human then always
    /// reach the eval whose call they came during. Default: false (one connection shared).
    pub isolate_sessions: bool,
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
        /// How to log in to it with OAuth (`oauth`). Default: none given, yet a `401` with a
        /// `resource_metadata` challenge still turns discovery and registration on.
        oauth: Option<UpstreamOAuth>,
    },
}

/// Keys of other MCP clients that codemode accepts and ignores, with a warning.
const CLIENT_ONLY_KEYS: &[&str] = &["autoApprove", "alwaysAllow"];

/// The kind of server `type` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Http,
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

pub(crate) fn read_servers(
    r: &mut Reader,
    v: &Value,
    path: &JsonPath,
) -> BTreeMap<String, ServerConfig> {
    let mut out = BTreeMap::new();
    let Some(map) = r.any_object(v, path) else {
        return out;
    };
    for (name, entry) in map {
        let p = path.key(name);
        if let Some(disabled) = entry.get("disabled")
            && r.bool(disabled, &p.key("disabled")) == Some(true)
        {
            continue;
        }
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
    let map = r.object(v, path, crate::schema::keys::of::<servers::Server>())?;
    for key in CLIENT_ONLY_KEYS {
        if map.contains_key(*key) {
            r.warn(
                &path.key(key),
                format!(
                    "`{key}` is a setting of the MCP client this entry comes from; codemode \
                     ignores it: which calls run without asking is decided by a profile \
                     (`evaluation.profiles.<name>.allowlist`, see the README's Profiles)"
                ),
            );
        }
    }
    let kind = match map.get("type") {
        Some(t) => read_type(r, t, &path.key("type")),
        None => Some(None),
    };
    let timeout = match map.get("timeoutSeconds") {
        Some(t) => positive_seconds(r, t, &path.key("timeoutSeconds")),
        None => Some(DEFAULT_SERVER_TIMEOUT),
    };
    let startup_timeout = match map.get("startTimeoutSeconds") {
        Some(t) => positive_seconds(r, t, &path.key("startTimeoutSeconds")),
        None => Some(DEFAULT_SERVER_START_TIMEOUT),
    };
    let isolate_sessions = match map.get("isolateSessions") {
        Some(v) => r.bool(v, &path.key("isolateSessions")),
        None => Some(false),
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
        (Some(command), None) => {
            check_type(r, kind.flatten(), Kind::Stdio, path);
            read_stdio(r, map, command, path)
        }
        (None, Some(url)) => {
            check_type(r, kind.flatten(), Kind::Http, path);
            read_http(r, map, url, path)
        }
    };
    kind?;
    Some(ServerConfig {
        transport: transport?,
        timeout: timeout?,
        startup_timeout: startup_timeout?,
        isolate_sessions: isolate_sessions?,
    })
}

/// `type`: the kind it names; `None` when it is invalid (the error is recorded).
fn read_type(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<Option<Kind>> {
    match r.string(v, path)? {
        "stdio" => Some(Some(Kind::Stdio)),
        "http" | "streamable-http" | "streamableHttp" => Some(Some(Kind::Http)),
        "sse" => {
            r.error(
                path,
                ConfigErrorKind::InvalidValue,
                "`sse` (the old HTTP+SSE transport) is not supported: codemode's MCP client \
                 (rmcp) has no client for it; use the server's streamable HTTP endpoint instead \
                 (`\"type\": \"http\"` with its URL, often ending in `/mcp`)",
            );
            None
        }
        other => {
            r.error(
                path,
                ConfigErrorKind::InvalidValue,
                format!(
                    "unknown server type `{other}`; allowed: `stdio`, `http`, `streamable-http`"
                ),
            );
            None
        }
    }
}

/// An error when `type` names another kind of server than the keys given.
fn check_type(r: &mut Reader, declared: Option<Kind>, found: Kind, path: &JsonPath) {
    match (declared, found) {
        (Some(Kind::Http), Kind::Stdio) => r.error(
            &path.key("type"),
            ConfigErrorKind::ConflictingKeys,
            "`type` says an HTTP server, but the entry has `command` (a stdio server); give `url`",
        ),
        (Some(Kind::Stdio), Kind::Http) => r.error(
            &path.key("type"),
            ConfigErrorKind::ConflictingKeys,
            "`type` says a stdio server, but the entry has `url` (an HTTP server); give `command`",
        ),
        _ => {}
    }
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

/// A string map (`env`, `headers`) with its values substituted.
fn substituted_map(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<BTreeMap<String, String>> {
    let map = r.string_map(v, path)?;
    let mut out = BTreeMap::new();
    let mut ok = true;
    for (k, text) in map {
        match r.substituted(&text, &path.key(&k)) {
            Some(value) => {
                out.insert(k, value);
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
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
        &["headers", "oauth"],
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
        Some(v) => r.strings(v, &path.key("args")).and_then(|args| {
            let substituted: Vec<Option<String>> = args
                .into_iter()
                .map(|(p, text)| r.substituted(&text, &p))
                .collect();
            substituted.into_iter().collect::<Option<Vec<String>>>()
        }),
        None => Some(Vec::new()),
    };
    let env = match map.get("env") {
        Some(v) => substituted_map(r, v, &path.key("env")),
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
    let written = r.string(url, &upath);
    let url = written.and_then(|text| r.substituted(text, &upath));
    if let (Some(written), Some(u)) = (written, &url)
        && !(u.starts_with("http://") || u.starts_with("https://"))
    {
        // The written text, not the value: a variable in it may hold a secret.
        r.error(
            &upath,
            ConfigErrorKind::InvalidValue,
            format!("`{written}` is not an http:// or https:// URL"),
        );
    }
    let headers = match map.get("headers") {
        Some(v) => substituted_map(r, v, &path.key("headers")),
        None => Some(BTreeMap::new()),
    };
    let oauth = match map.get("oauth") {
        Some(v) => read_oauth(r, v, &path.key("oauth")).map(Some),
        None => Some(None),
    };
    if let (Some(headers), Some(Some(_))) = (&headers, &oauth)
        && headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        r.error(
            &path.key("oauth"),
            ConfigErrorKind::ConflictingKeys,
            "`oauth` gets the access token itself: remove the `Authorization` header",
        );
    }
    Some(ServerTransport::Http {
        url: url?,
        headers: headers?,
        oauth: oauth?,
    })
}

#[cfg(test)]
mod tests;

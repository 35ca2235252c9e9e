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

use serde_json::Value;

use crate::de;
use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader};
use crate::schema::servers::{self, ServerType};
use crate::schema::values::{Indexed, StringMap};

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

/// Reads `mcpServers` (or `servers`) at `path`: by name, each entry read once through its serde
/// type after its name is checked; a disabled one is skipped unread.
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
        // A `disabled` that is no boolean is the entry's read's error.
        if entry.get("disabled") == Some(&Value::Bool(true)) {
            continue;
        }
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

/// One entry: its values through its serde type (each value's own checks), then the transport
/// its keys name, with `${VAR}` references replaced and the keys of the other transport
/// refused.
fn read_server(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<ServerConfig> {
    let read = de::read::<servers::Server>(r, v, path)?;
    warn_client_only(r, &read, path);
    let kind = read.kind.map(|kind| match kind {
        ServerType::Stdio => Kind::Stdio,
        _ => Kind::Http,
    });
    // A key given with a wrong value counts as given: its error is reported already.
    let given = |r: &Reader, value: bool, key: &str| value || r.reported(&path.key(key));
    let transport = match (
        given(r, read.command.is_some(), "command"),
        given(r, read.url.is_some(), "url"),
    ) {
        (true, true) => {
            r.error(
                path,
                ConfigErrorKind::ConflictingKeys,
                "give either `command` (stdio server) or `url` (HTTP server), not both",
            );
            None
        }
        (false, false) => {
            r.error(
                path,
                ConfigErrorKind::MissingField,
                "missing `command` (stdio server) or `url` (HTTP server)",
            );
            None
        }
        (true, false) => {
            check_type(r, kind, Kind::Stdio, path);
            read_stdio(r, &read, path)
        }
        (false, true) => {
            check_type(r, kind, Kind::Http, path);
            read_http(r, &read, path)
        }
    };
    Some(ServerConfig {
        transport: transport?,
        timeout: read.timeout_seconds.map_or(DEFAULT_SERVER_TIMEOUT, |t| t.0),
        startup_timeout: read
            .start_timeout_seconds
            .map_or(DEFAULT_SERVER_START_TIMEOUT, |t| t.0),
        isolate_sessions: read.isolate_sessions.unwrap_or(false),
    })
}

/// A warning for each key of another MCP client's that the entry holds.
fn warn_client_only(r: &mut Reader, read: &servers::Server, path: &JsonPath) {
    let given = [read.auto_approve.is_some(), read.always_allow.is_some()];
    for (key, given) in CLIENT_ONLY_KEYS.iter().zip(given) {
        if given {
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

/// Errors for each of `keys` that is given (`true`), which do not apply to this kind of
/// server.
fn reject_keys(r: &mut Reader, keys: &[(&str, bool)], path: &JsonPath, why: &str) {
    for (key, given) in keys {
        if *given || r.reported(&path.key(key)) {
            r.error(
                &path.key(key),
                ConfigErrorKind::ConflictingKeys,
                format!("`{key}` {why}"),
            );
        }
    }
}

/// The values of `map` (`env`, `headers`, at `path`) with their references replaced; `None`
/// when one could not be.
fn substituted_map(
    r: &mut Reader,
    map: Option<&StringMap>,
    path: &JsonPath,
) -> Option<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut ok = true;
    for (k, text) in map.map(|m| &m.0).into_iter().flatten() {
        match r.substituted(text, &path.key(k)) {
            Some(value) => {
                out.insert(k.clone(), value);
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// The strings of `list` (at `path`) with their references replaced, each named by its index;
/// `None` when one could not be read.
fn substituted_list(
    r: &mut Reader,
    list: Option<&Indexed<String>>,
    path: &JsonPath,
) -> Option<Vec<String>> {
    let items = list.map(|l| l.0.as_slice()).unwrap_or_default();
    let substituted: Vec<Option<String>> = items
        .iter()
        .enumerate()
        .map(|(i, text)| r.substituted(text.as_ref()?, &path.index(i)))
        .collect();
    substituted.into_iter().collect()
}

fn read_stdio(r: &mut Reader, read: &servers::Server, path: &JsonPath) -> Option<ServerTransport> {
    reject_keys(
        r,
        &[
            ("headers", read.headers.is_some()),
            ("oauth", read.oauth.is_some()),
        ],
        path,
        "applies to HTTP servers (with `url`) only",
    );
    let args = substituted_list(r, read.args.as_ref(), &path.key("args"));
    let env = substituted_map(r, read.env.as_ref(), &path.key("env"));
    Some(ServerTransport::Stdio {
        command: read.command.as_ref()?.0.clone(),
        args: args?,
        env: env?,
        cwd: read.cwd.as_ref().map(PathBuf::from),
    })
}

fn read_http(r: &mut Reader, read: &servers::Server, path: &JsonPath) -> Option<ServerTransport> {
    reject_keys(
        r,
        &[
            ("args", read.args.is_some()),
            ("env", read.env.is_some()),
            ("cwd", read.cwd.is_some()),
        ],
        path,
        "applies to stdio servers (with `command`) only",
    );
    let upath = path.key("url");
    let written = read.url.as_deref();
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
    let headers = substituted_map(r, read.headers.as_ref(), &path.key("headers"));
    let oauth = match &read.oauth {
        Some(oauth) => read_oauth(r, oauth, &path.key("oauth")).map(Some),
        None => (!r.reported(&path.key("oauth"))).then_some(None),
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

//! How to reach one upstream MCP server: [`UpstreamSpec`], and the validation of specs and
//! server names, in one place.

use std::collections::BTreeMap;
use std::time::Duration;

/// How to reach one upstream MCP server, and how long to wait for it.
///
/// Plain data: the config crate builds it. Two specs that compare equal describe the same
/// connection, which is how [`UpstreamPool::set_upstreams`](super::UpstreamPool::set_upstreams)
/// decides whether a server must be reconnected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamSpec {
    /// Where the server is.
    pub transport: UpstreamTransport,
    /// How long one `tools/call` may take before it fails. By default 60 s.
    ///
    /// Time spent while the server waits on an elicitation (a human answering) does not count.
    pub call_timeout: Duration,
    /// How long starting the server (spawn, `initialize`, the first `tools/list`) may take
    /// before the attempt counts as failed and is retried. By default 30 s.
    pub startup_timeout: Duration,
    /// Whether each eval calls it over a connection of its own (`isolateSessions`; see
    /// [`CallScope`](crate::CallScope)). By default false.
    pub isolate_sessions: bool,
}

/// The transport of an [`UpstreamSpec`]: the config's own type (one definition of a server's
/// address for the config file and the pool).
///
/// A stdio child's environment is *not* ours: it gets only `HOME`, `LOGNAME`, `PATH`, `SHELL`,
/// `TERM` and `USER` from our environment (as the MCP TypeScript SDK does), plus `env`; its
/// stderr is copied to ours, each line prefixed with `[<server>] `. An HTTP endpoint's `headers`
/// may not set `Accept`, `Mcp-Session-Id`, `Mcp-Protocol-Version` or `Last-Event-Id` (the
/// transport's own).
pub use codemode_config::ServerTransport as UpstreamTransport;

/// Environment variables a stdio child inherits from us (the MCP TypeScript SDK's list).
pub(crate) const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Headers the streamable-HTTP transport sets itself.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

impl UpstreamSpec {
    /// The default [`UpstreamSpec::call_timeout`].
    pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
    /// The default [`UpstreamSpec::startup_timeout`].
    pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

    /// The config's `mcpServers`, by name, as upstream specs.
    pub fn of_config(
        config: &codemode_policies::Config,
    ) -> std::collections::HashMap<String, UpstreamSpec> {
        config
            .servers
            .iter()
            .map(|(name, server)| {
                let spec = UpstreamSpec::with_transport(server.transport.clone())
                    .call_timeout(server.timeout)
                    .startup_timeout(server.startup_timeout)
                    .isolate_sessions(server.isolate_sessions);
                (name.clone(), spec)
            })
            .collect()
    }

    /// A stdio server: `command args…`, default timeouts, no extra environment.
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::with_transport(UpstreamTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
        })
    }

    /// A streamable-HTTP server at `url`, default timeouts, no extra headers.
    pub fn http(url: impl Into<String>) -> Self {
        Self::with_transport(UpstreamTransport::Http {
            url: url.into(),
            headers: BTreeMap::new(),
            oauth: None,
        })
    }

    /// A spec with default timeouts.
    pub fn with_transport(transport: UpstreamTransport) -> Self {
        UpstreamSpec {
            transport,
            call_timeout: Self::DEFAULT_CALL_TIMEOUT,
            startup_timeout: Self::DEFAULT_STARTUP_TIMEOUT,
            isolate_sessions: false,
        }
    }

    /// Sets [`isolate_sessions`](Self::isolate_sessions).
    pub fn isolate_sessions(mut self, isolate: bool) -> Self {
        self.isolate_sessions = isolate;
        self
    }

    /// Sets [`call_timeout`](Self::call_timeout).
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets [`startup_timeout`](Self::startup_timeout).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Checks the spec without connecting; `server` names it in the error.
    pub(crate) fn validate(&self, server: &str) -> Result<(), UpstreamError> {
        let bad = |reason: String| UpstreamError::InvalidSpec {
            server: server.into(),
            reason,
        };
        if self.call_timeout.is_zero() {
            return Err(bad("call_timeout must be more than zero".into()));
        }
        if self.startup_timeout.is_zero() {
            return Err(bad("startup_timeout must be more than zero".into()));
        }
        match &self.transport {
            UpstreamTransport::Stdio { command, env, .. } => {
                if command.is_empty() {
                    return Err(bad("the command is empty".into()));
                }
                if let Some(k) = env.keys().find(|k| k.is_empty() || k.contains(['=', '\0'])) {
                    return Err(bad(format!("invalid environment variable name {k:?}")));
                }
            }
            UpstreamTransport::Http { url, headers, .. } => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(bad(format!(
                        "the url {url:?} must start with http:// or https://"
                    )));
                }
                http_headers(headers).map_err(bad)?;
            }
        }
        Ok(())
    }
}

/// Parses header names and values, refusing the transport's own.
pub(crate) fn http_headers(
    headers: &BTreeMap<String, String>,
) -> Result<std::collections::HashMap<http::HeaderName, http::HeaderValue>, String> {
    let mut out = std::collections::HashMap::new();
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid HTTP header name {name:?}"))?;
        if RESERVED_HEADERS.contains(&name.as_str()) {
            return Err(format!(
                "the header `{name}` is set by the MCP transport itself"
            ));
        }
        let value = http::HeaderValue::from_str(value)
            .map_err(|_| format!("invalid value for HTTP header `{name}`"))?;
        out.insert(name, value);
    }
    Ok(out)
}

/// Checks an upstream server name.
///
/// Scripts call `codemode.<server>__<tool>`, and the first `__` of such a name must end the
/// server part, so a server name is non-empty ASCII letters, digits, `_` and `-`, without `__`
/// and not ending in `_`.
pub(crate) fn validate_server_name(name: &str) -> Result<(), UpstreamError> {
    let bad = |reason| {
        Err(UpstreamError::InvalidName {
            name: name.into(),
            reason,
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return bad("only ASCII letters, digits, `_` and `-` are allowed");
    }
    if name.contains("__") {
        return bad("`__` separates server and tool names (use a single `_`)");
    }
    if name.ends_with('_') {
        return bad("it must not end with `_` (the `__` separator would be ambiguous)");
    }
    Ok(())
}

/// Splits `server__tool` at the first `__`.
pub(crate) fn split_qualified(name: &str) -> Option<(&str, &str)> {
    let (server, tool) = name.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// A configuration the pool refuses. Connection failures are not errors here: the pool keeps
/// retrying and reports them through [`UpstreamPool::status`](super::UpstreamPool::status) and
/// failed calls.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// A server name scripts could not address unambiguously.
    #[error("invalid upstream server name `{name}`: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A spec that cannot work.
    #[error("upstream server `{server}`: {reason}")]
    InvalidSpec {
        /// The server it belongs to.
        server: String,
        /// What is wrong.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names() {
        for ok in ["fs", "my-server", "a_b", "x1", "GitHub"] {
            assert_eq!(validate_server_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", "a__b", "a_", "a.b", "a b", "ü", "__"] {
            assert!(validate_server_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn splitting() {
        assert_eq!(split_qualified("fs__read_file"), Some(("fs", "read_file")));
        assert_eq!(split_qualified("a_b__c__d"), Some(("a_b", "c__d")));
        assert_eq!(split_qualified("fs___x"), Some(("fs", "_x")));
        assert_eq!(split_qualified("fs__"), None);
        assert_eq!(split_qualified("__x"), None);
        assert_eq!(split_qualified("plain"), None);
    }

    #[test]
    fn spec_validation() {
        assert!(UpstreamSpec::stdio("node", ["x"]).validate("s").is_ok());
        assert!(
            UpstreamSpec::stdio("", Vec::<String>::new())
                .validate("s")
                .is_err()
        );
        assert!(UpstreamSpec::http("ftp://x").validate("s").is_err());
        assert!(
            UpstreamSpec::http("http://x")
                .call_timeout(Duration::ZERO)
                .validate("s")
                .is_err()
        );
        let mut headers = BTreeMap::new();
        headers.insert("Authorization".to_string(), "Bearer t".to_string());
        let ok = UpstreamSpec::with_transport(UpstreamTransport::Http {
            url: "https://x/mcp".into(),
            headers: headers.clone(),
            oauth: None,
        });
        assert!(ok.validate("s").is_ok());
        headers.insert("Mcp-Session-Id".to_string(), "1".to_string());
        let reserved = UpstreamSpec::with_transport(UpstreamTransport::Http {
            url: "https://x".into(),
            headers,
            oauth: None,
        });
        let err = reserved.validate("s").unwrap_err().to_string();
        assert!(err.contains("mcp-session-id"), "{err}");
    }
}

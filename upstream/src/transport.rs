//! Opening one connection to an upstream: spawning a stdio child (its own process group,
//! killed on drop, stderr copied to ours with a prefix) or dialling a streamable-HTTP endpoint,
//! then the `initialize` handshake.

use std::process::Stdio;

use codemode_policies::neutralize;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::bounded_http::BoundedHttp;
use super::child::ChildTransport;
use super::client::UpstreamClient;
use super::oauth::{Authorizing, Challenges, Logins};
use super::sequence::Sequenced;
use super::spec::{INHERITED_ENV, UpstreamTransport, http_headers};
use super::url_secrets::without_url_secrets;

/// A live session with one upstream.
pub(crate) type Session = RunningService<RoleClient, UpstreamClient>;

/// Longest stderr line copied whole; longer lines are split (bounds our buffer).
const MAX_STDERR_LINE: usize = 8 * 1024;
/// Longest stderr line kept for a start-up error message.
const MAX_REPORTED_LINE: usize = 300;
/// How long a failed start waits for the child's stderr to end (a grandchild may hold it).
const STDERR_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Why a connection was not made.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The server wants a login (it answered `401`, and nobody could log in now).
    NeedsLogin,
    /// Anything else, said for people.
    Failed(String),
}

/// Starts the server (or dials it) and runs the `initialize` handshake, with the login in
/// `logins` for an HTTP server that uses OAuth. Returns the session and, for a child process,
/// its pid.
pub(crate) async fn connect(
    transport: &UpstreamTransport,
    client: UpstreamClient,
    logins: &Logins,
) -> Result<(Session, Option<u32>), Refused> {
    match transport {
        UpstreamTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => spawn(client, command, args, env, cwd.as_deref()).await,
        UpstreamTransport::Http {
            url,
            headers,
            oauth,
        } => {
            let session = reach(client, url, headers, oauth.as_ref(), logins).await?;
            Ok((session, None))
        }
    }
}

/// Starts `command` and shakes hands with it over its stdin and stdout.
async fn spawn(
    client: UpstreamClient,
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
) -> Result<(Session, Option<u32>), Refused> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).env_clear();
    for key in INHERITED_ENV {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.envs(env);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut wrapped = CommandWrap::from(cmd);
    // Its own process group, so that killing it also kills what it spawned (`npx`,
    // shell wrappers); and killed when the transport is dropped.
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    // Its stdout read within a bound per message, a larger answer failing its call.
    let (child, pid, stderr) = ChildTransport::spawn(wrapped, &client.server, Stdio::piped())
        .map_err(|e| Refused::Failed(format!("could not start `{command}`: {e}")))?;
    let copier =
        stderr.map(|stderr| tokio::spawn(copy_stderr(format!("[{}] ", client.server), stderr)));
    let child = Sequenced::new(child, client.sequence.clone());
    match client.serve(child).await {
        Ok(session) => Ok((session, pid)),
        Err(e) => {
            // The child is gone (killed with the transport), so its stderr ends: its
            // last line usually says why it did not start.
            let last = match copier {
                Some(copier) => tokio::time::timeout(STDERR_GRACE, copier)
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .flatten(),
                None => None,
            };
            let said = last
                .map(|line| format!("; its last stderr line: {line}"))
                .unwrap_or_default();
            Err(Refused::Failed(format!(
                "`{command}` started but the MCP handshake failed: {e}{said}"
            )))
        }
    }
}

/// Shakes hands with the streamable-HTTP server at `url`, logging in with OAuth when it asks
/// and no `authorization` header of the operator's is given.
async fn reach(
    client: UpstreamClient,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    oauth: Option<&codemode_config::UpstreamOAuth>,
    logins: &Logins,
) -> Result<Session, Refused> {
    let config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(http_headers(headers).map_err(Refused::Failed)?);
    // The reqwest client is built here: it needs rustls's provider.
    crate::crypto::install();
    // rmcp's client, an answer too large to read failing its call, not the session.
    let http = BoundedHttp::new().map_err(Refused::Failed)?;
    let handshake_failed = |e: &dyn std::fmt::Display| {
        without_url_secrets(&format!("the MCP handshake with {url} failed: {e}"), url)
    };
    // A token of the operator's own is sent as it is; else OAuth, if the server asks.
    if headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        let transport = StreamableHttpClientTransport::with_client(http, config);
        let transport = Sequenced::new(transport, client.sequence.clone());
        let session = client
            .serve(transport)
            .await
            .map_err(|e| Refused::Failed(handshake_failed(&e)))?;
        return Ok(session);
    }
    let server = client.server.clone();
    let challenges = Challenges::default();
    let headless = oauth
        .as_ref()
        .is_some_and(|o| o.grant == codemode_config::OAuthGrant::ClientCredentials);
    let http = Authorizing::new(logins, (&server, url), oauth, http, challenges.clone())
        .await
        .map_err(|e| Refused::Failed(e.message))?;
    let transport = StreamableHttpClientTransport::with_client(http, config);
    let transport = Sequenced::new(transport, client.sequence.clone());
    match client.serve(transport).await {
        Ok(session) => Ok(session),
        // Nobody logs in for the client-credentials grant: its refused token is an
        // error like any other, retried with backoff.
        Err(_) if challenges.pending() && headless => Err(Refused::Failed(without_url_secrets(
            &format!("{url} refused the token of the client-credentials grant"),
            url,
        ))),
        Err(_) if challenges.pending() => Err(Refused::NeedsLogin),
        Err(e) => Err(Refused::Failed(handshake_failed(&e))),
    }
}

/// Copies a child's stderr to ours, line by line, each line prefixed. Never to stdout: in
/// `codemode serve` stdout carries the MCP protocol. Returns the last non-blank line (at most
/// [`MAX_REPORTED_LINE`] characters) once the stream ends.
async fn copy_stderr(prefix: String, mut from: impl AsyncRead + Unpin) -> Option<String> {
    let mut last: Option<String> = None;
    let mut keep = |line: &[u8]| {
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if !text.is_empty() {
            last = Some(text.chars().take(MAX_REPORTED_LINE).collect());
        }
    };
    let mut out = tokio::io::stderr();
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        let mut start = 0;
        while let Some(pos) = pending[start..].iter().position(|&b| b == b'\n') {
            keep(&pending[start..start + pos]);
            emit(&mut out, &prefix, &pending[start..start + pos]).await;
            start += pos + 1;
        }
        pending.drain(..start);
        while pending.len() >= MAX_STDERR_LINE {
            let rest = pending.split_off(MAX_STDERR_LINE);
            emit(&mut out, &prefix, &pending).await;
            pending = rest;
        }
    }
    if !pending.is_empty() {
        keep(&pending);
        emit(&mut out, &prefix, &pending).await;
    }
    last
}

async fn emit(out: &mut tokio::io::Stderr, prefix: &str, line: &[u8]) {
    // Nowhere to report a failing stderr.
    let _ = out.write_all(stderr_line(prefix, line).as_bytes()).await;
}

/// One line of an upstream's stderr as the operator's terminal shows it: prefixed, invalid UTF-8
/// replaced, and [`neutralize`]d, so an upstream cannot send escape sequences to the terminal or
/// start a line that looks like codemode's own.
fn stderr_line(prefix: &str, line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    format!("{prefix}{}\n", neutralize(text))
}

#[cfg(test)]
mod stderr_tests {
    use super::stderr_line;

    #[test]
    fn an_upstream_cannot_send_escapes_or_fake_lines_to_the_terminal() {
        for (raw, shown) in [
            (&b"plain"[..], "[up] plain\n"),
            (b"crlf\r", "[up] crlf\n"),
            (b"\x1b[31mFAKE\x1b[0m", "[up] \\u001b[31mFAKE\\u001b[0m\n"),
            (b"a\rcodemode: fake", "[up] a\\rcodemode: fake\n"),
            (b"bad \xff utf8", "[up] bad \u{fffd} utf8\n"),
            (b"bidi \xe2\x80\xae", "[up] bidi \\u202e\n"),
        ] {
            assert_eq!(stderr_line("[up] ", raw), shown, "{raw:?}");
        }
    }
}

#[cfg(test)]
mod tls_tests {
    use std::sync::Arc;

    use super::{Logins, Refused, UpstreamClient, UpstreamTransport, connect};

    /// An https:// upstream whose certificate no trusted root signed: the handshake is refused
    /// with an error (no panic for want of a TLS crypto provider).
    #[tokio::test]
    async fn an_https_upstream_with_an_unknown_certificate_is_refused_with_why() {
        let port = codemode_test_support::tls::serve();
        let url = format!("https://127.0.0.1:{port}/mcp");
        let client = UpstreamClient {
            server: "tls".into(),
            tools_changed: Default::default(),
            declares_sampling: Default::default(),
            relays: Default::default(),
            listings_changed: Arc::new(tokio::sync::watch::channel(0).0),
            updates: tokio::sync::broadcast::channel(1).0,
            sequence: Default::default(),
        };
        let transport = UpstreamTransport::Http {
            url: url.clone(),
            headers: Default::default(),
            oauth: None,
        };
        let Err(Refused::Failed(e)) = connect(&transport, client, &Logins::memory()).await else {
            panic!("connected to an untrusted server")
        };
        // rmcp keeps the error's text only, not its causes: the certificate is not named.
        assert_eq!(
            e,
            format!(
                "the MCP handshake with {url} failed: Send message error Transport \
                 [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::\
                 StreamableHttpClientWorker<codemode_upstream::oauth::authorizing::Authorizing>>] error: Client \
                 error: error sending request for url ({url}), when send initialize request"
            )
        );
    }
}

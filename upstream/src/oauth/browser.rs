//! The person's side of an authorization-code login: the authorization URL handed to a browser
//! (a command, or printed), and the loopback listener the authorization server sends the
//! browser back to.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::error::{OAuthError, safe_code};

/// The longest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;
/// How long one browser connection may take to send its request.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a `--browser CMD` is not a command ([`Browser::command`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrowserCommandError {
    /// `CMD` has no words.
    #[error("--browser: the command is empty")]
    Empty,
    /// A quote in `CMD` (given, neutralised) does not close.
    #[error("--browser: `{0}` has a quote that does not close")]
    UnclosedQuote(String),
}

/// Shows a person the authorization URL of a login to an upstream: `(server, url)`.
pub type ShowUrl = std::sync::Arc<dyn Fn(&str, &str) + Send + Sync>;

/// How the authorization URL reaches a person.
#[derive(Clone)]
pub enum Browser {
    /// Shown by the embedder (`codemode` prints it on stderr); the person opens it.
    Show(ShowUrl),
    /// Run as this program and arguments with the URL appended as the last argument (no shell).
    Command(Vec<String>),
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Browser::Show(_) => f.write_str("Show"),
            Browser::Command(words) => f.debug_tuple("Command").field(words).finish(),
        }
    }
}

impl Browser {
    /// How long a login waits for the browser to come back.
    pub const LOGIN_WAIT: Duration = Duration::from_secs(5 * 60);

    /// `--browser CMD`: `CMD` split into words as a shell would (quotes, backslashes), no shell
    /// run.
    ///
    /// # Errors
    /// [`BrowserCommandError`] when `CMD` is empty or its quotes do not close.
    pub fn command(line: &str) -> Result<Browser, BrowserCommandError> {
        match shlex::split(line) {
            Some(words) if !words.is_empty() => Ok(Browser::Command(words)),
            Some(_) => Err(BrowserCommandError::Empty),
            None => Err(BrowserCommandError::UnclosedQuote(
                codemode_policies::neutralize(line),
            )),
        }
    }

    /// Shows `url` to the person (runs the command in the background, or prints it).
    pub(crate) fn open(&self, server: &str, url: &str) -> Result<(), OAuthError> {
        match self {
            Browser::Show(show) => {
                show(server, url);
                Ok(())
            }
            Browser::Command(words) => {
                let mut command = tokio::process::Command::new(&words[0]);
                command
                    .args(&words[1..])
                    .arg(url)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .kill_on_drop(false);
                let mut child = command.spawn().map_err(|e| {
                    OAuthError::new(
                        server,
                        format!("could not run the browser `{}`: {e}", words[0]),
                    )
                })?;
                // Reaped in the background; the login waits for the redirect, not for it.
                tokio::spawn(async move { child.wait().await });
                Ok(())
            }
        }
    }
}

/// The loopback listener of one login.
pub(crate) struct Redirect {
    listener: TcpListener,
    /// The redirect URI registered and sent (`http://127.0.0.1:<port>/callback` by default).
    pub(crate) uri: String,
    path: String,
}

impl Redirect {
    /// Listens where `configured` says, or on a free port of 127.0.0.1.
    pub(crate) async fn listen(server: &str, configured: Option<&str>) -> Result<Self, OAuthError> {
        let fail = |e: std::io::Error, at: &str| {
            OAuthError::new(
                server,
                format!("cannot listen for the login's redirect on {at}: {e}"),
            )
        };
        let (bind, path, fixed) = match configured {
            Some(uri) => {
                let url = url::Url::parse(uri)
                    .map_err(|e| OAuthError::new(server, format!("redirectUri: {e}")))?;
                let host = url
                    .host_str()
                    .unwrap_or("127.0.0.1")
                    .trim_matches(['[', ']']);
                let host = if host == "localhost" {
                    "127.0.0.1"
                } else {
                    host
                };
                let port = url.port().unwrap_or(80);
                (
                    format!("{host}:{port}"),
                    url.path().to_string(),
                    Some(uri.to_string()),
                )
            }
            None => ("127.0.0.1:0".to_string(), "/callback".to_string(), None),
        };
        let listener = TcpListener::bind(&bind).await.map_err(|e| fail(e, &bind))?;
        let port = listener.local_addr().map_err(|e| fail(e, &bind))?.port();
        let uri = fixed.unwrap_or_else(|| format!("http://127.0.0.1:{port}{path}"));
        Ok(Redirect {
            listener,
            uri,
            path,
        })
    }

    /// Waits for the browser to come back to the redirect path with `state` (the one the
    /// login sent) and answers it; returns the full redirect URL, query included. Other
    /// requests (other paths, another `state`: a forged or stale redirect) are answered and
    /// ignored, each connection read on its own (a slow one holds up nothing); a redirect with
    /// this `state` and an `error` ends the login with it.
    pub(crate) async fn wait(self, server: &str, state: &str) -> Result<String, OAuthError> {
        let (heads, mut arrived) = tokio::sync::mpsc::channel::<(TcpStream, Option<String>)>(16);
        let listener = self.listener;
        let reader = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let heads = heads.clone();
                tokio::spawn(async move {
                    let head = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream))
                        .await
                        .ok()
                        .flatten();
                    let _ = heads
                        .send((stream, head.and_then(|h| get_target(&h))))
                        .await;
                });
            }
        });
        let waited = tokio::time::timeout(Browser::LOGIN_WAIT, async {
            while let Some((stream, target)) = arrived.recv().await {
                let verdict = target.as_deref().map(|t| judge(t, &self.path, state));
                match verdict {
                    Some(Verdict::Back) => {
                        reply(stream, "200 OK", "codemode: the login is complete; you can close this page.").await;
                        return Ok(target.unwrap_or_default());
                    }
                    Some(Verdict::Refused(why)) => {
                        reply(stream, "200 OK", "codemode: the login was refused; see the terminal.").await;
                        return Err(OAuthError::new(server, why));
                    }
                    Some(Verdict::OtherState) => {
                        tracing::warn!(server, "a request came to the login's redirect with another `state` (forged or stale); ignored");
                        reply(stream, "400 Bad Request", "codemode: this is not the redirect of the login in progress.").await;
                    }
                    None | Some(Verdict::Elsewhere) => reply(stream, "404 Not Found", "not found").await,
                }
            }
            Err(OAuthError::new(server, "the login's redirect listener stopped"))
        })
        .await;
        reader.abort();
        let target = waited.map_err(|_| {
            OAuthError::new(
                server,
                format!(
                    "nobody completed the login within {} minutes",
                    Browser::LOGIN_WAIT.as_secs() / 60
                ),
            )
        })??;
        let base = self.uri.split(['?', '#']).next().unwrap_or(&self.uri);
        let query = target.split_once('?').map_or("", |(_, q)| q);
        Ok(format!("{base}?{query}"))
    }
}

/// What a request to the listener is.
enum Verdict {
    /// The browser, back with this login's `state` and a code.
    Back,
    /// Back with this login's `state` and an `error`: why, in words.
    Refused(String),
    /// The redirect path with another (or no) `state`.
    OtherState,
    /// Another path.
    Elsewhere,
}

fn judge(target: &str, path: &str, state: &str) -> Verdict {
    let (at, query) = target.split_once('?').unwrap_or((target, ""));
    if at != path {
        return Verdict::Elsewhere;
    }
    let param = |name: &str| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if state.is_empty() || param("state").as_deref() != Some(state) {
        return Verdict::OtherState;
    }
    match param("error") {
        Some(error) => {
            let code = safe_code(&error);
            Verdict::Refused(format!(
                "the authorization server refused the login (`{code}`)"
            ))
        }
        None => Verdict::Back,
    }
}

/// The target of a `GET` request head.
fn get_target(head: &str) -> Option<String> {
    head.lines()
        .next()
        .and_then(|line| line.strip_prefix("GET "))
        .and_then(|rest| rest.split(' ').next())
        .map(str::to_string)
}

/// Answers with a small text page and closes (the browser may be gone already: the login does
/// not depend on its page).
async fn reply(mut stream: TcpStream, status: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}\n",
        body.len() + 1
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The request head (up to the blank line), at most [`MAX_HEAD`] bytes.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(head).ok()
}

#[cfg(test)]
mod tests {
    use super::{Verdict, judge};

    #[test]
    fn only_this_logins_state_ends_the_wait() {
        let verdict = |target: &str| match judge(target, "/callback", "s1") {
            Verdict::Back => "back".to_string(),
            Verdict::Refused(why) => why,
            Verdict::OtherState => "other state".to_string(),
            Verdict::Elsewhere => "elsewhere".to_string(),
        };
        assert_eq!(verdict("/callback?code=c&state=s1"), "back");
        assert_eq!(verdict("/callback?code=c&state=forged"), "other state");
        assert_eq!(verdict("/callback?code=c"), "other state");
        assert_eq!(verdict("/favicon.ico"), "elsewhere");
        assert_eq!(
            verdict("/callback?error=access_denied&state=s1"),
            "the authorization server refused the login (`access_denied`)"
        );
        // The server's words are not repeated, only a plain code.
        assert_eq!(
            verdict("/callback?error=x%0Ay%20secret&state=s1"),
            "the authorization server refused the login (`unknown`)"
        );
    }
}

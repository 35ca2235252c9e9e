//! One upstream server kept alive: a supervisor task connects, lists the tools, re-lists them on
//! `notifications/tools/list_changed`, and restarts the server with exponential backoff when
//! the connection dies. Calls go through [`Upstream::call`].

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::Peer;
use rmcp::model::Tool;
use rmcp::service::{QuitReason, RoleClient};
use tokio::sync::{Notify, broadcast, watch};
use tokio_util::sync::CancellationToken;

use codemode_runtime::ToolError;

mod call;

use super::client::ResourceUpdate;
use super::client::UpstreamClient;
use super::oauth::{Logins, login_hint};
use super::relay::CallRelays;
use super::sequence::Sequence;
use super::spec::UpstreamSpec;
use super::subscribed::{Subscribed, renew};
use super::transport::{self, Refused, Session};

/// First wait before a restart; doubles per failure up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// Longest wait between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long stopping waits for an HTTP session to close (its `DELETE`).
const HTTP_CLOSE_GRACE: Duration = Duration::from_secs(2);
/// A connection that lived this long resets the backoff.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);
/// How often an upstream that needs a login looks for one made elsewhere (another process, or
/// another node of the cluster).
const LOGIN_POLL: Duration = Duration::from_secs(2);

/// What an upstream tells the pool: its tool list changed, its resources or prompts changed,
/// one of its resources changed.
pub(crate) type Notifiers = (
    Arc<watch::Sender<u64>>,
    Arc<watch::Sender<u64>>,
    broadcast::Sender<ResourceUpdate>,
);

/// Renews `uris` on a new session of `server` (see [`renew`]).
async fn renew_subscriptions(server: Arc<str>, peer: Peer<RoleClient>, uris: Vec<String>) {
    renew(&server, peer, uris).await;
}

/// One named upstream: its spec, its live state, and the token that stops its supervisor.
pub(crate) struct Upstream {
    pub(crate) name: Arc<str>,
    pub(crate) spec: UpstreamSpec,
    state: RwLock<State>,
    /// The calls in flight, and where the server's notifications about them go.
    relays: Arc<CallRelays>,
    /// The order the server sent its progress and log messages in.
    sequence: Arc<Sequence>,
    /// The pool's "combined tool list changed" counter.
    pool_changed: Arc<watch::Sender<u64>>,
    /// The pool's "some server's resources or prompts changed" counter.
    listings_changed: Arc<watch::Sender<u64>>,
    /// Where the server's `notifications/resources/updated` go (the pool's).
    updates: broadcast::Sender<ResourceUpdate>,
    /// The resources codemode holds subscribed here (shared with the upstream this one
    /// replaced, when a reload changed the server's spec: see [`Upstream::start`]).
    subscribed: Arc<Subscribed>,
    shutdown: CancellationToken,
    /// Becomes true when the first connection attempt has finished, either way.
    attempted: watch::Sender<bool>,
    /// Where its OAuth login is kept.
    logins: Logins,
    /// Whether connections declare `sampling` (the pool's setting).
    declares_sampling: Arc<AtomicBool>,
    /// Becomes true when the supervisor has finished (the session closed, or given up on).
    finished: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    /// `Some` while connected.
    peer: Option<Peer<RoleClient>>,
    /// The last tool list seen; kept while restarting so the listing doesn't flap.
    tools: Arc<Vec<Tool>>,
    last_error: Option<String>,
    pid: Option<u32>,
    /// Sessions established so far; also identifies the current one.
    connects: u64,
    /// Whether it refused us for want of a login, which nobody has made yet.
    needs_login: bool,
}

/// A snapshot of one upstream, from [`UpstreamPool::status`](super::UpstreamPool::status).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamStatus {
    /// The server's name.
    pub name: String,
    /// Whether a session is up now.
    pub connected: bool,
    /// Number of tools in its (last known) list.
    pub tools: usize,
    /// Why the last connection attempt failed or the last session ended, if one did.
    pub last_error: Option<String>,
    /// The pid of the current child process (stdio servers, while connected).
    pub pid: Option<u32>,
    /// Whether its first connection attempt is still under way (then `connected` is false and
    /// `last_error` none: it is neither up nor down yet).
    pub starting: bool,
    /// How many sessions have been established so far (2 after one restart).
    pub connects: u64,
    /// Whether it waits for someone to log in (`codemode auth login <name>`): it answered
    /// `401` and there is no login to send.
    pub needs_login: bool,
}

/// Longest error shown in [`UpstreamStatus::summary`].
const MAX_SUMMARY_ERROR: usize = 400;

impl UpstreamStatus {
    /// One line for listings (the eval tools' descriptions, `search_tools`): `time (2 tools)`,
    /// `slow (starting)`, `broken (down: <why>)`, `flaky (3 tools, down: <why>)`. The error is
    /// neutralised (control characters shown, not acted on) and cut at 400 characters.
    pub fn summary(&self) -> String {
        let tools = format!(
            "{} tool{}",
            self.tools,
            if self.tools == 1 { "" } else { "s" }
        );
        let state = if self.connected {
            tools
        } else if self.needs_login {
            login_hint(&self.name)
        } else if self.starting {
            "starting".to_string()
        } else {
            let why = self.down_reason();
            if self.tools > 0 {
                format!("{tools}, down: {why}")
            } else {
                format!("down: {why}")
            }
        };
        format!("{} ({state})", self.name)
    }

    /// Why it is down, neutralised and cut, for people and models to read.
    pub fn down_reason(&self) -> String {
        let why = self.last_error.as_deref().unwrap_or("not connected");
        let mut text: String = why.chars().take(MAX_SUMMARY_ERROR).collect();
        if why.chars().count() > MAX_SUMMARY_ERROR {
            text.push('…');
        }
        codemode_policies::neutralize(&text)
    }
}

impl Upstream {
    /// Creates the upstream and starts its supervisor under `shutdown`. `subscribed` is what
    /// it holds subscribed: new, or the set of the upstream of the same name it replaces (a
    /// reload changed the spec), which its first session then subscribes to, as after a
    /// restart: the clients watching them keep hearing their updates.
    pub(crate) fn start(
        name: &str,
        spec: UpstreamSpec,
        (declares_sampling, logins): (Arc<AtomicBool>, Logins),
        (pool_changed, listings_changed, updates): Notifiers,
        (shutdown, subscribed): (CancellationToken, Arc<Subscribed>),
    ) -> Arc<Self> {
        let up = Arc::new(Upstream {
            name: name.into(),
            spec,
            state: RwLock::default(),
            relays: Arc::default(),
            sequence: Arc::default(),
            pool_changed,
            listings_changed,
            updates,
            subscribed,
            shutdown,
            attempted: watch::Sender::new(false),
            logins,
            declares_sampling,
            finished: watch::Sender::new(false),
        });
        tokio::spawn(up.clone().supervise());
        up
    }

    /// Stops the supervisor; the session (and child) goes away in the background.
    pub(crate) fn stop(&self) {
        self.shutdown.cancel();
    }

    /// Waits until the first connection attempt has finished (or the upstream stopped).
    pub(crate) async fn first_attempt(&self) {
        let mut rx = self.attempted.subscribe();
        tokio::select! {
            _ = rx.wait_for(|done| *done) => {}
            _ = self.shutdown.cancelled() => {}
        }
    }

    /// Whether the first connection attempt is still under way.
    pub(crate) fn is_starting(&self) -> bool {
        !*self.attempted.borrow() && !self.shutdown.is_cancelled()
    }

    /// Marks the first attempt done; the first time, tells the pool (listings show the
    /// server's state, which changed from starting to up or down).
    fn attempt_done(&self) {
        if !self.attempted.send_replace(true) {
            self.pool_changed.send_modify(|g| *g += 1);
        }
    }

    fn state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.write().unwrap_or_else(|e| e.into_inner()))
    }

    /// The calls in flight here, and where the server's notifications about them go.
    pub(crate) fn relays(&self) -> &Arc<CallRelays> {
        &self.relays
    }

    /// The resources codemode holds subscribed here.
    pub(crate) fn subscribed(&self) -> &Arc<Subscribed> {
        &self.subscribed
    }

    /// The current session's peer, while connected.
    pub(crate) fn peer(&self) -> Option<Peer<RoleClient>> {
        self.state()
            .peer
            .clone()
            .filter(|p| !p.is_transport_closed())
    }

    /// The last known tools.
    pub(crate) fn tools(&self) -> Arc<Vec<Tool>> {
        self.state().tools.clone()
    }

    pub(crate) fn status(&self) -> UpstreamStatus {
        let s = self.state();
        UpstreamStatus {
            name: self.name.to_string(),
            connected: s.peer.is_some(),
            tools: s.tools.len(),
            last_error: s.last_error.clone(),
            pid: s.pid,
            connects: s.connects,
            starting: self.is_starting(),
            needs_login: s.needs_login,
        }
    }

    /// Replaces the tool list; bumps the pool's counter when it changed.
    fn set_tools(&self, tools: Vec<Tool>) {
        let changed = self.update(|s| {
            let changed = *s.tools != tools;
            if changed {
                s.tools = Arc::new(tools);
            }
            changed
        });
        if changed {
            self.pool_changed.send_modify(|g| *g += 1);
        }
    }

    async fn supervise(self: Arc<Self>) {
        let mut backoff = MIN_BACKOFF;
        while !self.shutdown.is_cancelled() {
            let tools_changed = Arc::new(Notify::new());
            let client = UpstreamClient {
                server: self.name.clone(),
                tools_changed: tools_changed.clone(),
                declares_sampling: self.declares_sampling.clone(),
                relays: self.relays.clone(),
                listings_changed: self.listings_changed.clone(),
                updates: self.updates.clone(),
                sequence: self.sequence.clone(),
            };
            let started = tokio::select! {
                r = tokio::time::timeout(self.spec.startup_timeout, self.open(client)) => r,
                _ = self.shutdown.cancelled() => break,
            };
            let error = match started {
                Ok(Ok((session, tools, pid))) => {
                    let since = Instant::now();
                    self.update(|s| {
                        s.peer = Some(session.peer().clone());
                        s.pid = pid;
                        s.last_error = None;
                        s.needs_login = false;
                        s.connects += 1;
                    });
                    self.set_tools(tools);
                    // A new session knows none of the subscriptions the last one held.
                    let held = self.subscribed.all();
                    if !held.is_empty() {
                        tokio::spawn(renew_subscriptions(
                            self.name.clone(),
                            session.peer().clone(),
                            held,
                        ));
                    }
                    self.attempt_done();
                    let ended = self.run(session, &tools_changed).await;
                    self.update(|s| {
                        s.peer = None;
                        s.pid = None;
                    });
                    if since.elapsed() >= HEALTHY_AFTER {
                        backoff = MIN_BACKOFF;
                    }
                    ended
                }
                Ok(Err(Refused::NeedsLogin)) => {
                    // The login the server refused (none, or one it no longer takes): only
                    // another one is worth a new connection, else a server refusing every
                    // token would be dialled (and a rotating refresh token spent) forever.
                    let refused = self.refused_login().await;
                    tracing::warn!(server = %self.name, "upstream MCP server {}", login_hint(&self.name));
                    self.update(|s| {
                        s.needs_login = true;
                        s.last_error = Some(login_hint(&self.name));
                    });
                    self.attempt_done();
                    self.pool_changed.send_modify(|g| *g += 1);
                    if !self.wait_for_login(refused).await {
                        break;
                    }
                    backoff = MIN_BACKOFF;
                    continue;
                }
                Ok(Err(Refused::Failed(e))) => e,
                Err(_) => format!("it did not start within {:?}", self.spec.startup_timeout),
            };
            if self.shutdown.is_cancelled() {
                break;
            }
            tracing::warn!(server = %self.name, error = %error, retry_in = ?backoff,
                "upstream MCP server is down; restarting");
            self.update(|s| s.last_error = Some(error));
            self.attempt_done();
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.shutdown.cancelled() => break,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        self.update(|s| {
            s.peer = None;
            s.pid = None;
        });
        self.attempted.send_replace(true);
        self.finished.send_replace(true);
    }

    /// Waits until the supervisor has finished, after [`stop`](Self::stop).
    pub(crate) async fn finished(&self) {
        let _ = self.finished.subscribe().wait_for(|done| *done).await;
    }

    /// Connects and lists the tools.
    async fn open(
        &self,
        client: UpstreamClient,
    ) -> Result<(Session, Vec<Tool>, Option<u32>), Refused> {
        let (session, pid) = transport::connect(&self.spec.transport, client, &self.logins).await?;
        let tools = session
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| Refused::Failed(format!("listing its tools failed: {e}")))?;
        Ok((session, tools, pid))
    }

    /// The login this upstream has now (see [`Logins::login_stamp`]).
    async fn refused_login(&self) -> Option<String> {
        match &self.spec.transport {
            codemode_config::ServerTransport::Http { url, .. } => {
                self.logins.login_stamp(&self.name, url).await
            }
            codemode_config::ServerTransport::Stdio { .. } => None,
        }
    }

    /// Waits until this upstream has a login other than `refused` (made here, or found in the
    /// store: another process or node made it); false when the upstream was stopped first.
    async fn wait_for_login(&self, refused: Option<String>) -> bool {
        let codemode_config::ServerTransport::Http { url, .. } = &self.spec.transport else {
            return true;
        };
        let mut changes = self.logins.changes();
        loop {
            tokio::select! {
                _ = self.shutdown.cancelled() => return false,
                _ = changes.changed() => {}
                _ = tokio::time::sleep(LOGIN_POLL) => {}
            }
            let now = self.logins.login_stamp(&self.name, url).await;
            if now.is_some() && now != refused {
                return true;
            }
        }
    }

    /// Serves one session until it ends (returns why) or the upstream is stopped. Dropping
    /// the session on stop closes it in the background (stdin closed, then the child killed).
    async fn run(&self, session: Session, tools_changed: &Notify) -> String {
        let peer = session.peer().clone();
        let closer = session.cancellation_token();
        let ended = session.waiting();
        tokio::pin!(ended);
        // An HTTP session is closed before the upstream counts as stopped: its `DELETE` needs
        // the login, which a process on its way out can no longer read.
        let http = matches!(
            self.spec.transport,
            codemode_config::ServerTransport::Http { .. }
        );
        let stopped = async move |ended| {
            if http {
                closer.cancel();
                let _ = tokio::time::timeout(HTTP_CLOSE_GRACE, ended).await;
            }
            "stopped".to_string()
        };
        loop {
            tokio::select! {
                quit = &mut ended => return ended_because(quit),
                _ = self.shutdown.cancelled() => return stopped(ended).await,
                _ = tools_changed.notified() => {
                    let listed = tokio::select! {
                        r = tokio::time::timeout(self.spec.call_timeout, peer.list_all_tools()) => r,
                        _ = self.shutdown.cancelled() => return "stopped".into(),
                    };
                    match listed {
                        Ok(Ok(tools)) => self.set_tools(tools),
                        Ok(Err(e)) => tracing::warn!(server = %self.name, error = %e,
                            "re-listing tools after list_changed failed"),
                        Err(_) => tracing::warn!(server = %self.name,
                            "re-listing tools after list_changed timed out"),
                    }
                }
            }
        }
    }

    /// Opens a connection of one eval's own ([`crate::isolated`]), its calls recorded in
    /// `relays`, its notifications ordered by `sequence`.
    pub(crate) async fn open_private(
        &self,
        relays: Arc<CallRelays>,
        sequence: Arc<Sequence>,
    ) -> Result<Session, ToolError> {
        let client = UpstreamClient {
            server: self.name.clone(),
            // Its tool list is the shared connection's; what it says of its own goes nowhere.
            tools_changed: Arc::new(Notify::new()),
            declares_sampling: self.declares_sampling.clone(),
            relays,
            listings_changed: Arc::new(watch::Sender::new(0)),
            updates: broadcast::Sender::new(1),
            sequence,
        };
        let server = &self.name;
        let opened = tokio::time::timeout(
            self.spec.startup_timeout,
            transport::connect(&self.spec.transport, client, &self.logins),
        )
        .await;
        match opened {
            Ok(Ok((session, _pid))) => Ok(session),
            Ok(Err(Refused::NeedsLogin)) => Err(ToolError::failed(format!(
                "upstream server `{server}` {}",
                login_hint(server)
            ))),
            Ok(Err(Refused::Failed(e))) => Err(ToolError::failed(format!(
                "upstream server `{server}`: opening this script's own session failed: {e}"
            ))),
            Err(_) => Err(ToolError::failed(format!(
                "upstream server `{server}`: opening this script's own session took more than {:?}",
                self.spec.startup_timeout
            ))),
        }
    }

    /// The current session's peer and number, if connected and `tool` is one of its tools.
    fn connected_peer(
        &self,
        qualified: &str,
        tool: &str,
    ) -> Result<(Peer<RoleClient>, u64), ToolError> {
        let session = {
            let s = self.state();
            if let Some(peer) = &s.peer
                && !peer.is_transport_closed()
            {
                if !s.tools.iter().any(|t| t.name == tool) {
                    return Err(ToolError::NotFound {
                        tool: qualified.to_string(),
                    });
                }
                return Ok((peer.clone(), s.connects));
            }
            s.connects
        };
        self.mark_closed(session);
        let s = self.state();
        if s.needs_login {
            return Err(ToolError::failed(format!(
                "upstream server `{}` {}",
                self.name,
                login_hint(&self.name)
            )));
        }
        let why = s.last_error.as_deref().unwrap_or("still starting");
        let what = if self.shutdown.is_cancelled() {
            "stopped"
        } else {
            "restarting"
        };
        Err(ToolError::failed(format!(
            "upstream server `{}` is not connected ({what}; last error: {why})",
            self.name
        )))
    }

    /// Marks session number `session` as gone, if it is still the current one.
    fn mark_closed(&self, session: u64) {
        self.update(|s| {
            if s.connects == session && s.peer.is_some() {
                s.peer = None;
                s.pid = None;
                s.last_error = Some("the server closed the connection".into());
            }
        });
    }
}

/// Why a session ended, for [`UpstreamStatus::last_error`] and error messages.
fn ended_because(quit: Result<QuitReason, tokio::task::JoinError>) -> String {
    match quit {
        Ok(QuitReason::Closed) => "the server closed the connection".into(),
        Ok(QuitReason::JoinError(e)) | Err(e) => format!("the session task failed: {e}"),
        Ok(other) => format!("the session ended ({other:?})"),
    }
}

#[cfg(test)]
mod tests {
    use super::UpstreamStatus;

    fn status(
        connected: bool,
        starting: bool,
        tools: usize,
        error: Option<&str>,
    ) -> UpstreamStatus {
        UpstreamStatus {
            name: "s".into(),
            connected,
            tools,
            last_error: error.map(str::to_string),
            pid: None,
            connects: 0,
            starting,
            needs_login: false,
        }
    }

    #[test]
    fn summaries_say_up_starting_or_down_with_a_neutralised_reason() {
        let long = "x".repeat(500);
        let cases = [
            (status(true, false, 2, None), "s (2 tools)".to_string()),
            (status(true, false, 1, None), "s (1 tool)".to_string()),
            (status(true, false, 0, None), "s (0 tools)".to_string()),
            (status(false, true, 0, None), "s (starting)".to_string()),
            (
                status(false, false, 0, Some("bad\n\u{1b}[2Kthing")),
                "s (down: bad\\n\\u001b[2Kthing)".to_string(),
            ),
            (
                status(false, false, 3, Some("closed")),
                "s (3 tools, down: closed)".to_string(),
            ),
            (
                status(false, false, 0, None),
                "s (down: not connected)".to_string(),
            ),
            (
                status(false, false, 0, Some(&long)),
                format!("s (down: {}…)", "x".repeat(400)),
            ),
        ];
        for (status, want) in cases {
            assert_eq!(status.summary(), want);
        }
    }
}

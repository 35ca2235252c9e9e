//! The transports: one client on stdio (or any rmcp transport), many over streamable HTTP with
//! the approval API beside `/mcp`; each drains its evals before it closes.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::ops::{self, Listener};
use super::{CodemodeServer, ServeError, ServerState, drain, failover, guard, listener};
use crate::auth::{Authenticate, NoAuth, require_auth};

/// Serves one client on any rmcp transport (stdio, a pipe) until it disconnects or `shutdown`
/// is cancelled; then the evals in flight get [`drain::SHUTDOWN_GRACE`] to finish (and answer)
/// before they are cancelled, and the transport closes after the last one ended.
pub(crate) async fn serve_io<T, E, A>(
    state: Arc<ServerState>,
    transport: T,
    shutdown: CancellationToken,
) -> Result<(), ServeError>
where
    T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let service = CodemodeServer::new(state.clone())
        .serve(transport)
        .await
        .map_err(|e| ServeError::Transport(e.to_string()))?;
    let closer = service.cancellation_token();
    let drained = tokio::spawn(async move {
        shutdown.cancelled().await;
        state.drain.drain(drain::SHUTDOWN_GRACE).await;
        closer.cancel();
    });
    let ended = service.waiting().await;
    drained.abort();
    ended
        .map(drop)
        .map_err(|e| ServeError::Transport(e.to_string()))
}

/// How [`serve_http`] accepts requests. [`HttpOptions::default`]: loopback `Host`s only, no
/// `Origin` check, no authentication (every request is the `local` caller), nothing else served.
#[derive(Clone)]
pub struct HttpOptions {
    /// `Host` values accepted besides `localhost`, `127.0.0.1` and `::1` (`name` or `name:port`).
    pub allowed_hosts: Vec<String>,
    /// When non-empty, a request carrying `Origin` must match one of these
    /// (`scheme://host[:port]`, `:*` for any port; no port: the scheme's default), matched by
    /// [`codemode_config::origin_allowed`].
    pub allowed_origins: Vec<String>,
    /// Who may call `/mcp` ([`crate::auth::NoAuth`]: everyone, as `local`).
    pub auth: Arc<dyn Authenticate>,
    /// More routes on the same listener (the approval API), merged as they are: they do their
    /// own authentication.
    pub extra: Option<axum::Router>,
    /// Where legacy MCP sessions are kept (the cluster's Redis): another node restores a
    /// session whose node died, and ends the request that was in flight there with an error
    /// when the client comes back for its stream ([`failover`]). `None`: sessions live in this
    /// process only.
    pub session_store: Option<crate::server::sessions::SealedSessionStore>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            auth: Arc::new(NoAuth),
            extra: None,
            session_store: None,
        }
    }
}

/// The loopback `Host` names always accepted (rmcp's default list).
pub(crate) const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The router of `/mcp`: rmcp's streamable HTTP service behind the authentication layer; the
/// HTTP approval API and its page when the config turns them on (`"approvals": {"http": true}`,
/// with the same authenticator, hosts and origins); plus `options.extra`.
pub(crate) fn http_router(
    state: Arc<ServerState>,
    options: HttpOptions,
    shutdown: &CancellationToken,
) -> axum::Router {
    let factory_state = state.clone();
    let limits = state.config().server.http.limits;
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(usize::try_from(limits.max_request_body).unwrap_or(usize::MAX))
        .with_cancellation_token(shutdown.child_token())
        .with_allowed_hosts(
            LOOPBACK_HOSTS
                .iter()
                .map(|h| h.to_string())
                .chain(options.allowed_hosts.iter().cloned()),
        );
    if !options.allowed_origins.is_empty() {
        // rmcp matches a port-less origin against any port; ours means the default port only.
        config = config.with_allowed_origins(codemode_config::explicit_default_ports(
            &options.allowed_origins,
        ));
    }
    config.session_store = options
        .session_store
        .clone()
        .map(crate::server::sessions::SealedSessionStore::into_rmcp);
    let sessions = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(
        move || Ok(CodemodeServer::new(factory_state.clone())),
        sessions.clone(),
        config,
    );
    let guard = guard::Guard::new(
        state.clone(),
        sessions,
        (options.session_store.clone(), options.auth.clone()),
    );
    let approvals = state.config().approvals.http.then(|| {
        crate::approvals::http::router_with(
            state.approvals.clone(),
            options.auth.clone(),
            crate::approvals::http::Origins {
                allowed_hosts: options.allowed_hosts.clone(),
                allowed_origins: options.allowed_origins.clone(),
            },
            live_limits(&state),
        )
    });
    // Authentication first (a refused request's body is never read), then the guard.
    let mut mcp = axum::Router::new().nest_service("/mcp", service);
    if let Some(sessions) = options.session_store {
        mcp = failover::Failover::new(sessions, state.clone()).layer(mcp);
    }
    let public = options.auth.public_routes();
    let mut mcp = require_auth(guard.layer(mcp), options.auth);
    // The protected-resource metadata: what a client reads to log in, before it can.
    if let Some(public) = public {
        mcp = mcp.merge(public);
    }
    if let Some(approvals) = approvals {
        mcp = mcp.merge(approvals);
    }
    // Health and metrics: without authentication and outside `/mcp`'s Host and Origin checks.
    mcp = mcp.merge(ops::router(state.clone()));
    let router = match options.extra {
        Some(extra) => mcp.merge(extra),
        None => mcp,
    };
    ops::count_responses(router, state)
}

/// The listener limits of the config in force at each call.
pub(crate) fn live_limits(state: &Arc<ServerState>) -> crate::approvals::http::Limits {
    let state = state.clone();
    Arc::new(move || state.config().server.http.limits)
}

/// Serves streamable HTTP at `http://ADDR/mcp`, many sessions at once, until `shutdown`; prints
/// `listening on http://ADDR/mcp` on stderr once bound. Returns the bound address through
/// `bound` (useful with port 0).
///
/// When `shutdown` is cancelled, the listener closes at once (new connections are refused),
/// idle keep-alive connections close, the evals in flight get [`drain::SHUTDOWN_GRACE`] to
/// finish and answer, those still running are cancelled (they answer with a `cancelled` error
/// and write their audit records), and only then are MCP sessions and streams closed.
#[expect(
    clippy::print_stderr,
    reason = "the documented `listening on` line, printed whatever the log filter: supervisors and tests wait for it"
)]
pub async fn serve_http(
    state: Arc<ServerState>,
    addr: SocketAddr,
    options: HttpOptions,
    shutdown: CancellationToken,
    bound: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
) -> Result<(), ServeError> {
    let limits = state.config().server.http.limits;
    // MCP's sessions and streams end after the evals, not with the signal.
    let sessions = CancellationToken::new();
    let router = http_router(state.clone(), options, &sessions);
    state.health.set_listener(Listener::Binding);
    let listener = listener::bind(addr).map_err(|error| ServeError::Listen { addr, error })?;
    let local = listener
        .local_addr()
        .map_err(|error| ServeError::Listen { addr, error })?;
    eprintln!("listening on http://{local}/mcp");
    if let Some(tx) = bound {
        let _ = tx.send(local);
    }
    state.health.set_listener(Listener::Accepting);
    let drained = {
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            state.health.set_listener(Listener::Draining);
            state.drain.drain(drain::SHUTDOWN_GRACE).await;
            sessions.cancel();
        })
    };
    listener::serve(listener, router, limits, shutdown.clone()).await;
    if shutdown.is_cancelled() {
        // Every connection has closed, but evals may outlive their requests (a 2026-07-28 eval
        // waiting for input, one being parked to the store): the drain lets them end, save or
        // be cancelled and audited, within its bounds.
        let _ = drained.await;
    } else {
        drained.abort();
    }
    Ok(())
}

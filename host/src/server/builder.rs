//! [`Server`]: codemode's MCP server as a value. A [`ServerBuilder`] takes a config and the
//! listener's options, then serves stdio or streamable HTTP until shut down; `codemode serve`
//! is this builder fed from its flags.
//!
//! Assembling a server is more than starting a transport, and the order matters: the approval
//! API's own listener is bound and the durable store opened before any upstream server starts
//! (a bad address or an unreachable store stops the start cleanly), the store learns how to
//! resume parked evals before the first request, and on the way out the evals drain before the
//! upstreams stop and the audit log is flushed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use codemode_config::{AdminSettings, StoreLocation, TokenSecret};
use codemode_policies::Config;
use codemode_runtime::{BoxFuture, Runtime, RuntimeConfig};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::sessions::SealedSessionStore;
use super::{HttpOptions, ServeError, ServerState, drain, durable, ops, reload};
use crate::approvals;
use crate::auth;
use codemode_store::Store;
use codemode_upstream::oauth::Logins;

/// The embedded default config: what `codemode serve` and `codemode run` use without a config
/// file (`codemode config default` prints it).
pub const DEFAULT_CONFIG: &str = include_str!("../default-config.json");

/// What [`ServerBuilder::start`] gives the transport: the state, and the config file's watcher.
type Started = (Arc<ServerState>, Option<notify::RecommendedWatcher>);

/// Applies configs to a running [`Server`] (see [`ServerBuilder::reloader`]).
#[derive(Clone)]
pub struct Reloader(mpsc::UnboundedSender<Config>);

impl Reloader {
    /// Swaps in `config` as a config file change would: evals already running keep the profile
    /// they started with. Queued until the server starts; dropped once it has stopped.
    pub fn reload(&self, config: Config) {
        let _ = self.0.send(config);
    }
}

/// codemode's MCP server. Start one with [`Server::builder`].
#[derive(Debug)]
pub struct Server(());

impl Server {
    /// A server for `config`, on stdio or HTTP (see [`ServerBuilder`] for the defaults).
    pub fn builder(config: Config) -> ServerBuilder {
        ServerBuilder {
            config,
            config_path: None,
            runtime: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            allow_unauthenticated: false,
            approvals_http: None,
            admin_http: None,
            shutdown: CancellationToken::new(),
            signals: false,
            reloads: None,
            bound: None,
        }
    }
}

/// How a [`Server`] starts. Defaults: no config file watched, a [`Runtime`] with the config's
/// memory limit, loopback `Host` names only, no extra origins, no approval listener of its own,
/// no signal handling (shutdown only through [`ServerBuilder::shutdown_token`]).
pub struct ServerBuilder {
    config: Config,
    config_path: Option<PathBuf>,
    runtime: Option<Runtime>,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    allow_unauthenticated: bool,
    approvals_http: Option<SocketAddr>,
    admin_http: Option<SocketAddr>,
    shutdown: CancellationToken,
    signals: bool,
    reloads: Option<mpsc::UnboundedReceiver<Config>>,
    bound: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
}

impl ServerBuilder {
    /// The file `config` was read from: watched while serving, its valid changes applied at
    /// once and invalid ones reported and ignored.
    pub fn watch_config(mut self, path: PathBuf) -> Self {
        self.config_path = Some(path);
        self
    }

    /// Runs evals on `runtime` instead of a new one (share one engine and its module cache).
    pub fn runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Also accepts HTTP requests whose `Host` is `host`, besides the loopback names and
    /// `server.http.allowedHosts`.
    pub fn allowed_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Accepts browser requests from `origin` (`scheme://host[:port|:*]`), besides
    /// `server.http.allowedOrigins`; any origin turns Origin validation on.
    pub fn allowed_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Serves HTTP on a non-loopback address without `server.auth` (refused otherwise);
    /// anyone who reaches the port runs scripts with every upstream tool.
    pub fn allow_unauthenticated(mut self, allow: bool) -> Self {
        self.allow_unauthenticated = allow;
        self
    }

    /// Serves the approval API and its page on a listener of their own at `addr` (for stdio
    /// servers); without authentication only a loopback address is accepted.
    pub fn approvals_http(mut self, addr: SocketAddr) -> Self {
        self.approvals_http = Some(addr);
        self
    }

    /// Serves `/healthz`, `/readyz` and `/metrics` (only those) on a listener of their own at
    /// `addr`, instead of `server.admin.listen`.
    pub fn admin_http(mut self, addr: SocketAddr) -> Self {
        self.admin_http = Some(addr);
        self
    }

    /// The token that shuts the server down gracefully when cancelled (evals in flight get a grace period to finish, then are cancelled).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Shuts down on SIGTERM or Ctrl-C, gracefully; a second signal cancels every eval at once.
    pub fn shutdown_on_signals(mut self) -> Self {
        self.signals = true;
        self
    }

    /// A handle that applies new configs to the server once it runs.
    pub fn reloader(&mut self) -> Reloader {
        let (tx, rx) = mpsc::unbounded_channel();
        self.reloads = Some(rx);
        Reloader(tx)
    }

    /// Tells `bound` the HTTP listener's address once it is bound (useful with port 0).
    pub fn on_bound(mut self, bound: tokio::sync::oneshot::Sender<SocketAddr>) -> Self {
        self.bound = Some(bound);
        self
    }

    /// Serves one client on stdin/stdout until it disconnects or the server shuts down.
    ///
    /// # Errors
    /// See [`ServeError`].
    pub fn serve_stdio(self) -> BoxFuture<'static, Result<(), ServeError>> {
        Box::pin(async move { self.serve_io(rmcp::transport::stdio()).await })
    }

    /// Serves one client on `transport` (any rmcp transport: an in-memory pipe such as
    /// `tokio::io::duplex`, a child's pipes, stdio) until it disconnects or the server shuts
    /// down.
    ///
    /// # Errors
    /// See [`ServeError`].
    pub async fn serve_io<T, E, A>(mut self, transport: T) -> Result<(), ServeError>
    where
        T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let (state, _watcher) = self.start(None).await?;
        let served = super::serve_io(state.clone(), transport, self.shutdown.clone()).await;
        finish(&state, served).await
    }

    /// Serves streamable HTTP at `http://addr/mcp` until the server shuts down; prints
    /// `listening on http://ADDR/mcp` on stderr once bound.
    ///
    /// # Errors
    /// See [`ServeError`].
    pub fn serve_http(mut self, addr: SocketAddr) -> BoxFuture<'static, Result<(), ServeError>> {
        Box::pin(async move {
            let mut options = self.http_options(addr)?;
            let (state, _watcher) = self.start(Some(&mut options)).await?;
            let bound = self.bound.take();
            let served =
                super::serve_http(state.clone(), addr, options, self.shutdown.clone(), bound).await;
            finish(&state, served).await
        })
    }

    /// Everything but the transport, in the order the module docs give; `http` is the HTTP
    /// listener's options (the durable store is for HTTP servers only). The config file is
    /// watched until the returned watcher is dropped.
    ///
    /// Boxed: [`serve_io`](Self::serve_io) is generic, so it is compiled in each crate that calls
    /// it, and without the box the whole start-up would be too.
    fn start<'a>(
        &'a mut self,
        http: Option<&'a mut HttpOptions>,
    ) -> BoxFuture<'a, Result<Started, ServeError>> {
        Box::pin(self.start_here(http))
    }

    async fn start_here(&mut self, http: Option<&mut HttpOptions>) -> Result<Started, ServeError> {
        // The approval API's own listener authenticates as the MCP endpoint does.
        let approvals_auth = auth::from_settings(self.config.server.auth.as_ref())?;
        let runtime = match self.runtime.take() {
            Some(runtime) => runtime,
            None => {
                let mut runtime_config = RuntimeConfig::default();
                runtime_config.max_memory(self.config.limits.memory.max(64 << 20));
                Runtime::new(&runtime_config)?
            }
        };
        // Bound first: a bad address stops here, before any upstream server starts.
        let approvals_listener = match self.approvals_http {
            Some(addr) => Some(approvals::http::bind(addr, approvals_auth.as_ref()).await?),
            None => None,
        };
        let metrics_token = metrics_token(&self.config.server.admin)?;
        let admin_listener = match self.admin_http.or(self.config.server.admin.listen) {
            Some(addr) => Some(bind_admin(addr)?),
            None => None,
        };
        // Over HTTP, evals waiting for a human are saved to the durable store: they survive a
        // restart and, with a shared store, resume on any node.
        let durable = match http {
            Some(options) => Some(self.open_durable(options).await?),
            None => None,
        };
        // The upstreams' OAuth logins: in the durable store (where `codemode auth login` saves
        // them), shared by a cluster's nodes; over stdio, in the local one.
        // Approvals remembered "from now on" live there too, read by `codemode rules`.
        let store = match &durable {
            Some(durable) => Some(durable.store().clone()),
            None => local_store(&self.config).await,
        };
        let logins = store.clone().map_or_else(Logins::memory, Logins::sealed);
        let config = std::mem::take(&mut self.config);
        let state = ServerState::with_logins(runtime, config, logins).await;
        state.approvals.set_rules(remembered_rules(store, &state));
        state.health.set_metrics_token(metrics_token);
        if let Some(listener) = admin_listener {
            let router = ops::count_responses(ops::router(state.clone()), state.clone());
            let limits = state.config().server.http.limits;
            tokio::spawn(super::listener::serve(
                listener,
                router,
                limits,
                CancellationToken::new(),
            ));
        }
        if let Some(durable) = durable {
            durable.keep_guest(&state.runtime).await?;
            super::enable_durable(&state, durable);
        }
        let watcher = self.follow_reloads(&state);
        if let Some(listener) = approvals_listener {
            tokio::spawn(approvals::http::serve(
                listener,
                state.approvals.clone(),
                approvals_auth,
                super::live_limits(&state),
                CancellationToken::new(),
            ));
        }
        if self.signals {
            on_signals(&state, self.shutdown.clone());
        }
        Ok((state, watcher))
    }

    /// Applies config changes to `state` from then on: the watched file's (the watcher is
    /// returned, to be kept alive) and the [`Reloader`]'s.
    fn follow_reloads(&mut self, state: &Arc<ServerState>) -> Option<notify::RecommendedWatcher> {
        if let Some(mut reloads) = self.reloads.take() {
            let state = Arc::downgrade(state);
            tokio::spawn(async move {
                while let Some(config) = reloads.recv().await {
                    let Some(state) = state.upgrade() else { return };
                    state.apply_config(config).await;
                }
            });
        }
        let path = self.config_path.clone()?;
        reload::watch(state.clone(), path.clone())
            .inspect_err(|e| tracing::warn!("not watching {} for changes: {e}", path.display()))
            .ok()
    }

    /// The HTTP options of a server at `addr`: the config's `server` section plus the
    /// builder's. Refuses a non-loopback address without auth unless allowed.
    #[expect(
        clippy::print_stderr,
        reason = "the warning before an unauthenticated listener starts must reach the operator whatever the log filter"
    )]
    fn http_options(&self, addr: SocketAddr) -> Result<HttpOptions, ServeError> {
        let settings = &self.config.server;
        let auth = auth::from_settings(settings.auth.as_ref())
            .map_err(|e| ServeError::Refused(e.to_string()))?;
        if !auth.enabled() && !addr.ip().is_loopback() {
            if !self.allow_unauthenticated {
                return Err(ServeError::Refused(format!(
                    "refusing to serve HTTP on {addr} without authentication: anyone who can reach it could run \
                     scripts with every upstream tool. Configure `server.auth` (tokens or jwt), listen on a \
                     loopback address (127.0.0.1), or pass --allow-unauthenticated"
                )));
            }
            eprintln!(
                "codemode: warning: serving HTTP on {addr} WITHOUT authentication (--allow-unauthenticated): \
                 anyone who can reach it runs scripts with every upstream tool"
            );
        }
        if let Some(origin) = self
            .allowed_origins
            .iter()
            .find(|o| !codemode_config::valid_allowed_origin(o))
        {
            return Err(ServeError::Refused(format!(
                "--allowed-origin: an origin is `null` or `scheme://host[:port|:*]` with no path (e.g. https://app.example.com), got `{origin}`"
            )));
        }
        let chain =
            |config: &[String], more: &[String]| config.iter().chain(more).cloned().collect();
        Ok(HttpOptions {
            allowed_hosts: chain(&settings.http.allowed_hosts, &self.allowed_hosts),
            allowed_origins: chain(&settings.http.allowed_origins, &self.allowed_origins),
            auth,
            extra: None,
            session_store: None,
        })
    }

    /// Opens the durable store; a shared (Redis) one keeps legacy MCP sessions too.
    async fn open_durable(
        &self,
        options: &mut HttpOptions,
    ) -> Result<Arc<durable::Durable>, ServeError> {
        let durable = &self.config.durable;
        let store = Store::open(durable).await?;
        if matches!(durable.store, StoreLocation::Redis(_)) {
            options.session_store = Some(SealedSessionStore::new(store.clone()));
        }
        Ok(Arc::new(durable::Durable::new(
            store,
            durable.suspend_to_store_after,
        )))
    }
}

/// The store of a server without durable parking (stdio): upstream OAuth logins and remembered
/// approvals are kept there; without it they last for this process only, which is worth a
/// warning and not a refusal to start.
async fn local_store(config: &Config) -> Option<Store> {
    Store::open(&config.durable)
        .await
        .inspect_err(|e| tracing::warn!(error = %e, "the durable store did not open; OAuth logins to upstreams and remembered approvals last for this process only"))
        .ok()
}

/// The remembered approvals: in `store` when there is one, else in memory; their creation and
/// revocation audited to the server's sink of the moment.
fn remembered_rules(
    store: Option<Store>,
    state: &Arc<ServerState>,
) -> Arc<codemode_policies::RememberedRules> {
    let rules = match store {
        Some(store) => crate::approvals::rules::StoredRules::remembered(store),
        None => codemode_policies::RememberedRules::in_memory(),
    };
    let state = Arc::downgrade(state);
    Arc::new(rules.with_audit(Arc::new(move || state.upgrade()?.audit())))
}

/// The SHA-256 of the token `/metrics` demands, read from the environment when it is there.
fn metrics_token(admin: &AdminSettings) -> Result<Option<[u8; 32]>, ServeError> {
    use sha2::{Digest, Sha256};
    Ok(match &admin.metrics_auth {
        None => None,
        Some(TokenSecret::Sha256(hash)) => Some(*hash),
        Some(TokenSecret::Env(name)) => match std::env::var(name) {
            Ok(token) if !token.trim().is_empty() => {
                Some(Sha256::digest(token.trim().as_bytes()).into())
            }
            _ => {
                return Err(ServeError::Refused(format!(
                    "server.admin.metricsAuth.env: the environment variable `{name}` is not set or empty"
                )));
            }
        },
    })
}

/// The admin listener at `addr`; prints `admin listening on http://ADDR` once bound.
#[expect(
    clippy::print_stderr,
    reason = "the documented `admin listening on` line, printed whatever the log filter, as `listening on` is"
)]
fn bind_admin(addr: SocketAddr) -> Result<tokio::net::TcpListener, ServeError> {
    let listener =
        super::listener::bind(addr).map_err(|error| ServeError::Listen { addr, error })?;
    let local = listener
        .local_addr()
        .map_err(|error| ServeError::Listen { addr, error })?;
    eprintln!("admin listening on http://{local}");
    Ok(listener)
}

/// The way out, after the transport closed: the upstreams stop and the audit log is flushed.
fn finish(
    state: &Arc<ServerState>,
    served: Result<(), ServeError>,
) -> BoxFuture<'_, Result<(), ServeError>> {
    Box::pin(async move {
        state.shutdown_upstreams().await;
        // The audit writer writes on a thread of its own: wait for the records still queued.
        if let Some(audit) = state.audit() {
            let _ = tokio::task::spawn_blocking(move || audit.flush()).await;
        }
        served
    })
}

/// SIGTERM or Ctrl-C: every eval waiting for a human is saved, then `shutdown` starts the
/// graceful shutdown; a second signal cancels every eval at once.
fn on_signals(state: &Arc<ServerState>, shutdown: CancellationToken) {
    let drain = state.drain.clone();
    let durable = state.durable().cloned();
    tokio::spawn(async move {
        drain::shutdown_signal(drain).await;
        tracing::info!("shutting down");
        if let Some(durable) = durable {
            durable.park_all();
        }
        shutdown.cancel();
    });
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("config_path", &self.config_path)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("allow_unauthenticated", &self.allow_unauthenticated)
            .field("approvals_http", &self.approvals_http)
            .field("admin_http", &self.admin_http)
            .field("signals", &self.signals)
            .finish_non_exhaustive()
    }
}

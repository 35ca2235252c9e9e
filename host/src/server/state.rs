//! What every session and request of one `codemode serve` shares: the runtime, the live config,
//! the upstream pool, the audit writer, suspended evals, and who to tell when tools change.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use codemode_policies::{AuditSink, AuditWriter, Config};
use codemode_runtime::{Runtime, ThreadPool};
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};

use super::suspend::Suspensions;
use codemode_upstream::oauth::Logins;
use codemode_upstream::{UpstreamPool, UpstreamSpec};

/// Shared server state. See the module docs.
pub struct ServerState {
    pub(crate) runtime: Runtime,
    config: RwLock<Arc<Config>>,
    pub(crate) upstreams: UpstreamPool,
    audit: RwLock<Option<Arc<dyn AuditSink>>>,
    pub(crate) suspensions: Suspensions,
    /// Every client's running and waiting evals (`limits.perClient`).
    pub clients: Arc<super::fair::ClientLoad>,
    /// Pending approval requests of every session, for the HTTP approval API.
    pub approvals: Arc<crate::approvals::ApprovalBroker>,
    /// The asks of every eval waiting for a human now, which an identical call of the same eval
    /// (same caller, profile, tool and arguments) joins instead of prompting again.
    pub(crate) pending_asks: codemode_policies::PendingAsks,
    legacy_peers: Mutex<Vec<Peer<RoleServer>>>,
    subscribers: Mutex<Vec<SubscriptionSink>>,
    /// Who listens to which upstream resource (`resources/subscribe`).
    pub(crate) resource_watchers: Arc<super::watchers::ResourceWatchers>,
    next_session: AtomicU64,
    /// The evals in flight, for graceful shutdown.
    pub drain: Arc<super::drain::Drain>,
    /// The threads evals run on, off the async workers (see `Runtime::eval`, "Blocking"): one
    /// per running eval, the one idle last first; each ends once idle for 10 s.
    pub(crate) eval_threads: ThreadPool,
    /// The legacy requests open here that wait on a parked eval.
    pub(crate) legacy: Arc<super::legacy::LegacyRequests>,
    /// Where evals waiting for a human are saved ([`super::durable`]); set once by `serve`.
    durable: std::sync::OnceLock<Arc<super::durable::Durable>>,
    /// The Prometheus metrics (`/metrics`).
    pub metrics: Arc<super::ops::metrics::Metrics>,
    /// Where evals' spans go (`telemetry.otlpEndpoint`).
    pub(crate) traces: crate::traces::Traces,
    /// What `/readyz` reads besides the server's parts.
    pub(crate) health: super::ops::health::Health,
}

impl ServerState {
    /// Builds the state and starts the configured upstreams in the background: it returns at
    /// once, so that the server answers `initialize` without waiting for them. Their tools
    /// appear when they come up (clients are sent `notifications/tools/list_changed`); a call
    /// to a tool of a server still starting waits for it; a server that fails to start is
    /// retried in the background and listed as down with its error.
    #[cfg(test)]
    pub async fn new(runtime: Runtime, config: Config) -> Arc<Self> {
        Self::with_logins(runtime, config, Logins::memory()).await
    }

    /// [`new`](Self::new), the upstreams' OAuth logins kept in `logins`.
    pub(crate) async fn with_logins(runtime: Runtime, config: Config, logins: Logins) -> Arc<Self> {
        let state = Arc::new(ServerState {
            runtime,
            config: RwLock::new(Arc::new(Config::default())),
            upstreams: UpstreamPool::new(),
            audit: RwLock::new(None),
            suspensions: Suspensions::default(),
            clients: Arc::default(),
            approvals: Arc::default(),
            pending_asks: codemode_policies::PendingAsks::default(),
            legacy_peers: Mutex::new(Vec::new()),
            subscribers: Mutex::new(Vec::new()),
            resource_watchers: Default::default(),
            next_session: AtomicU64::new(1),
            drain: Arc::default(),
            legacy: Arc::default(),
            eval_threads: ThreadPool::builder()
                .name("codemode-eval")
                .keep_alive(ThreadPool::DEFAULT_KEEP_ALIVE)
                .build(),
            durable: std::sync::OnceLock::new(),
            metrics: Arc::default(),
            traces: Default::default(),
            health: super::ops::health::Health::default(),
        });
        state.upstreams.set_logins(logins);
        // An eval's client may have a model: upstreams may ask for it (each eval's gate decides).
        state.upstreams.declare_sampling(true);
        state.apply(config, false).await;
        let watcher = state.clone();
        let mut changes = state.upstreams.subscribe();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                watcher.notify_tools_changed().await;
            }
        });
        tokio::spawn(super::watchers::forward_updates(
            state.resource_watchers.clone(),
            state.upstreams.clone(),
            state.clone(),
        ));
        let watcher = state.clone();
        let mut listings = state.upstreams.subscribe_listings();
        tokio::spawn(async move {
            while listings.changed().await.is_ok() {
                watcher.notify_listings_changed().await;
            }
        });
        state
    }

    /// Parks evals in `durable` (set once; see [`super::enable_durable`], which also installs
    /// what resumes them).
    pub(crate) fn set_durable(&self, durable: Arc<super::durable::Durable>) {
        let _ = self.durable.set(durable);
    }

    /// Stops the upstream servers (their child processes exit): the last step of a shutdown,
    /// after the evals that use them have ended.
    pub(crate) async fn shutdown_upstreams(&self) {
        self.upstreams.shutdown().await;
    }

    /// The durable store's parking, when enabled.
    pub fn durable(&self) -> Option<&Arc<super::durable::Durable>> {
        self.durable.get()
    }

    /// The config in force now.
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The audit sink, if the config enables one.
    pub fn audit(&self) -> Option<Arc<dyn AuditSink>> {
        self.audit.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Swaps in a (validated) config: audit, upstreams, then tells clients the tools changed.
    /// New or changed upstreams get their first connection attempt before the config is
    /// swapped, so a profile or namespace never shows up before its server's tools. Evals
    /// already running keep the profile they started with.
    pub(crate) async fn apply_config(&self, config: Config) {
        self.apply(config, true).await;
    }

    /// [`apply_config`](Self::apply_config); `wait`: whether new upstreams' first connection
    /// attempts are waited for.
    async fn apply(&self, config: Config, wait: bool) {
        let audit: Option<Arc<dyn AuditSink>> = match &config.audit.dir {
            Some(dir) => match AuditWriter::open_keyed(dir.clone(), config.audit.key.clone()) {
                Ok(w) => Some(Arc::new(w)),
                Err(e) => {
                    tracing::error!("audit log disabled: cannot open {}: {e}", dir.display());
                    None
                }
            },
            None => None,
        };
        let specs = UpstreamSpec::of_config(&config);
        let applied = if wait {
            self.upstreams.set_upstreams(specs).await
        } else {
            self.upstreams.start_upstreams(specs).await
        };
        if let Err(e) = applied {
            tracing::error!("upstream servers not updated: {e}");
        }
        self.upstreams
            .set_commands(codemode_upstream::CommandTools::from_config(&config));
        self.metrics.set_enabled(config.server.admin.metrics);
        self.traces
            .configure(config.telemetry.otlp_endpoint.as_deref());
        let config = Arc::new(config);
        let audit = super::ops::metrics::MeteredSink::wrap(
            &self.metrics,
            config.clone(),
            self.upstreams.clone(),
            audit,
        );
        *self.audit.write().unwrap_or_else(|e| e.into_inner()) = audit;
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config;
        let dropped = self.resource_watchers.drop_removed(&self.upstreams).await;
        if dropped > 0 {
            tracing::info!("{dropped} watched resources of removed upstream servers let go");
        }
        self.notify_tools_changed().await;
    }

    /// What the metrics report of the server now (read at each scrape).
    pub(crate) fn metrics_snapshot(&self) -> super::ops::metrics::Snapshot {
        super::ops::metrics::Snapshot {
            approvals_pending: self.approvals.pending().len(),
            approvals_joined: self.pending_asks.joined(),
            parked_evals: self.durable().map_or(0, |d| d.parked_count()),
            pool_slots_in_use: self.runtime.slots_in_use(),
            upstreams: self
                .upstreams
                .status()
                .into_iter()
                .map(|s| (s.name, s.connected, s.connects))
                .collect(),
        }
    }

    /// A new session id (`s1`, `s2`, …).
    pub(crate) fn new_session_id(&self) -> String {
        format!("s{}", self.next_session.fetch_add(1, Ordering::Relaxed))
    }

    /// Remembers a legacy session's peer for `notifications/tools/list_changed`.
    pub(crate) fn add_legacy_peer(&self, peer: Peer<RoleServer>) {
        self.legacy_peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(peer);
    }

    /// Remembers a 2026-07-28 subscription stream.
    pub(crate) fn add_subscriber(&self, sink: SubscriptionSink) {
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(sink);
    }

    /// Tells every client that the upstreams' resources and prompts may have changed (a
    /// subscriber hears only what it opted in to).
    async fn notify_listings_changed(&self) {
        let peers: Vec<Peer<RoleServer>> = self
            .legacy_peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for peer in peers.iter().filter(|p| !p.is_transport_closed()) {
            let _ = peer.notify_resource_list_changed().await;
            let _ = peer.notify_prompt_list_changed().await;
        }
        let sinks: Vec<SubscriptionSink> = self
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for sink in sinks {
            // Not accepted (the subscriber did not opt in) or gone: the tool notifier forgets
            // the gone ones.
            let _ = sink.notify_resource_list_changed().await;
            let _ = sink.notify_prompt_list_changed().await;
        }
    }

    /// Tells every client that the tool list changed; forgets the ones that are gone.
    pub(crate) async fn notify_tools_changed(&self) {
        let peers: Vec<Peer<RoleServer>> = self
            .legacy_peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut gone = Vec::new();
        for (i, peer) in peers.iter().enumerate() {
            if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                gone.push(i);
            }
        }
        if !gone.is_empty() {
            let mut list = self.legacy_peers.lock().unwrap_or_else(|e| e.into_inner());
            list.retain(|p| !p.is_transport_closed());
        }
        let sinks: Vec<SubscriptionSink> = self
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut alive = Vec::new();
        for sink in sinks {
            if sink.notify_tool_list_changed().await.is_ok() {
                alive.push(sink);
            }
        }
        *self.subscribers.lock().unwrap_or_else(|e| e.into_inner()) = alive;
    }
}

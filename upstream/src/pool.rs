//! [`UpstreamPool`]: the set of named upstreams, their combined tool list, and the
//! [`ToolHost`] that routes `server__tool` calls.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use codemode_policies::ToolSchemas;
use rmcp::model::Tool;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use codemode_runtime::{BoxFuture, CallContext, ToolError, ToolHost};

use super::connection::{Upstream, UpstreamStatus};
use super::oauth::Logins;
use super::scope::CallScope;
use crate::CommandTools;
use crate::catalog::{ObservedResults, ObservedType};

use super::spec::{UpstreamError, UpstreamSpec, split_qualified, validate_server_name};

/// How long [`UpstreamPool::shutdown`] waits for the upstreams' sessions to close.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Connections to a set of named upstream MCP servers, seen by scripts as one [`ToolHost`]
/// whose tools are named `<server>__<tool>`.
///
/// Cheap to clone (all clones share the connections); the servers are disconnected (children
/// killed) when the last clone is dropped, or by [`shutdown`](Self::shutdown). Needs a tokio
/// runtime.
///
/// Each upstream is supervised on its own: a server that dies is restarted with exponential
/// backoff (100 ms doubling to 30 s, reset after a healthy minute); while it is down, calls to
/// it fail at once and its last known tools stay listed.
#[derive(Clone)]
pub struct UpstreamPool {
    inner: Arc<Inner>,
}

struct Inner {
    servers: RwLock<BTreeMap<String, Arc<Upstream>>>,
    /// The config's command tools: kept here because this is the one shared, reloaded handle
    /// of "what scripts can call" that every entry point already holds.
    commands: RwLock<CommandTools>,
    /// Where the upstreams' OAuth logins are kept.
    logins: RwLock<Logins>,
    /// Whether connections declare `sampling` ([`UpstreamPool::declare_sampling`]).
    declares_sampling: Arc<AtomicBool>,
    changed: Arc<watch::Sender<u64>>,
    /// Bumped when an upstream says its resources or prompts changed.
    listings: Arc<watch::Sender<u64>>,
    /// The upstreams' `notifications/resources/updated`.
    updates: tokio::sync::broadcast::Sender<crate::ResourceUpdate>,
    /// Parent of every upstream's shutdown token.
    shutdown: CancellationToken,
    /// Serialises [`UpstreamPool::set_upstreams`].
    reconfigure: tokio::sync::Mutex<()>,
    /// The tools' compiled schemas, for the current [`UpstreamPool::version`].
    schemas: crate::schemas::SchemaCache,
    /// The result types seen of tools that declare none.
    observed: ObservedResults,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Default for UpstreamPool {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for UpstreamPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamPool")
            .field("servers", &self.status())
            .finish()
    }
}

impl UpstreamPool {
    /// A pool without upstreams.
    pub fn new() -> Self {
        UpstreamPool {
            inner: Arc::new(Inner {
                servers: RwLock::default(),
                commands: RwLock::default(),
                logins: RwLock::new(Logins::memory()),
                declares_sampling: Arc::default(),
                changed: Arc::new(watch::Sender::new(0)),
                listings: Arc::new(watch::Sender::new(0)),
                updates: tokio::sync::broadcast::Sender::new(crate::subscribed::UPDATES_KEPT),
                shutdown: CancellationToken::new(),
                reconfigure: tokio::sync::Mutex::new(()),
                schemas: Default::default(),
                observed: ObservedResults::default(),
            }),
        }
    }

    /// A pool connected to `upstreams`: [`new`](Self::new) then
    /// [`set_upstreams`](Self::set_upstreams).
    ///
    /// # Errors
    /// As [`set_upstreams`](Self::set_upstreams).
    pub fn connect(
        upstreams: HashMap<String, UpstreamSpec>,
    ) -> BoxFuture<'static, Result<Self, UpstreamError>> {
        Box::pin(async move {
            let pool = Self::new();
            pool.set_upstreams(upstreams).await?;
            Ok(pool)
        })
    }

    /// Keeps the upstreams' OAuth logins in `logins` (default: this process's memory). Applies
    /// to upstreams started from now on: call it before [`set_upstreams`](Self::set_upstreams).
    pub fn set_logins(&self, logins: Logins) {
        *self.inner.logins.write().unwrap_or_else(|e| e.into_inner()) = logins;
    }

    /// Where the upstreams' OAuth logins are kept.
    pub fn logins(&self) -> Logins {
        self.inner
            .logins
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether to declare the `sampling` capability to upstream servers: do so only when their
    /// requests can reach a model — when the evals calling through this pool pass a
    /// [`CallSampler`](crate::CallSampler) in their [`CallScope`] — since a server that sees it
    /// may offer tools that need it. Default: not declared. Applies to connections made from
    /// now on: call it before adding upstreams.
    pub fn declare_sampling(&self, declare: bool) {
        self.inner
            .declares_sampling
            .store(declare, Ordering::Relaxed);
    }

    /// Makes the pool's upstreams exactly `upstreams`: connects the new ones, disconnects the
    /// removed ones, reconnects those whose spec changed, leaves the others alone.
    ///
    /// Returns once every new or changed server has finished its first connection attempt
    /// (bounded by its [`startup_timeout`](UpstreamSpec::startup_timeout)). A server that fails
    /// to start is not an error: it keeps being retried in the background, calls to it fail
    /// with the reason, and [`status`](Self::status) shows it.
    ///
    /// # Errors
    /// [`UpstreamError`] for an invalid server name or spec; the pool is then left unchanged.
    pub fn set_upstreams<'a>(
        &'a self,
        upstreams: HashMap<String, UpstreamSpec>,
    ) -> BoxFuture<'a, Result<(), UpstreamError>> {
        Box::pin(async move {
            let started = self.reconcile(upstreams).await?;
            futures::future::join_all(started.iter().map(|up| up.first_attempt())).await;
            Ok(())
        })
    }

    /// [`set_upstreams`](Self::set_upstreams) without waiting: the new servers start in the
    /// background, their tools appear when they are up (subscribers see the change), and a call
    /// to a tool of a server still starting waits for it ([`wait_started`](Self::wait_started)).
    ///
    /// # Errors
    /// As [`set_upstreams`](Self::set_upstreams).
    pub fn start_upstreams<'a>(
        &'a self,
        upstreams: HashMap<String, UpstreamSpec>,
    ) -> BoxFuture<'a, Result<(), UpstreamError>> {
        Box::pin(async move { self.reconcile(upstreams).await.map(drop) })
    }

    /// Waits until `server` has finished its first connection attempt, either way (at once for
    /// an unknown server or one already past it). The attempt itself is bounded by the
    /// server's [`startup_timeout`](UpstreamSpec::startup_timeout).
    pub fn wait_started<'a>(&'a self, server: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(up) = self.upstream(server) {
                up.first_attempt().await;
            }
        })
    }

    /// Whether `server` is configured now.
    pub fn has_server(&self, server: &str) -> bool {
        self.upstream(server).is_some()
    }

    /// Whether `server` is configured and still in its first connection attempt.
    pub fn is_starting(&self, server: &str) -> bool {
        self.upstream(server).is_some_and(|up| up.is_starting())
    }

    /// Applies `upstreams`; returns the servers it started.
    async fn reconcile(
        &self,
        upstreams: HashMap<String, UpstreamSpec>,
    ) -> Result<Vec<Arc<Upstream>>, UpstreamError> {
        for (name, spec) in &upstreams {
            validate_server_name(name)?;
            spec.validate(name)?;
        }
        let _one_at_a_time = self.inner.reconfigure.lock().await;
        let mut started = Vec::new();
        let mut changed = false;
        {
            let mut servers = self
                .inner
                .servers
                .write()
                .unwrap_or_else(|e| e.into_inner());
            // A server whose spec changed keeps its subscriptions: its clients still watch them.
            let mut subscribed = HashMap::new();
            servers.retain(|name, up| {
                let keep = upstreams.get(name) == Some(&up.spec);
                if !keep {
                    up.stop();
                    changed = true;
                    subscribed.insert(name.clone(), up.subscribed().clone());
                }
                keep
            });
            for (name, spec) in upstreams {
                if servers.contains_key(&name) {
                    continue;
                }
                let up = Upstream::start(
                    &name,
                    spec,
                    (self.inner.declares_sampling.clone(), self.logins()),
                    (
                        self.inner.changed.clone(),
                        self.inner.listings.clone(),
                        self.inner.updates.clone(),
                    ),
                    (
                        self.inner.shutdown.child_token(),
                        subscribed.remove(&name).unwrap_or_default(),
                    ),
                );
                started.push(up.clone());
                servers.insert(name, up);
                changed = true;
            }
        }
        // The set of servers (and so their states in listings) changed.
        if changed {
            self.inner.changed.send_modify(|g| *g += 1);
            self.inner.listings.send_modify(|g| *g += 1);
        }
        Ok(started)
    }

    /// Makes the local command tools (the config's `commands`) exactly `commands`. Calls
    /// already running finish with the old definitions. Does not notify [`subscribe`]rs: a
    /// config reload tells clients itself.
    ///
    /// [`subscribe`]: Self::subscribe
    pub fn set_commands(&self, commands: CommandTools) {
        *self
            .inner
            .commands
            .write()
            .unwrap_or_else(|e| e.into_inner()) = commands;
    }

    /// The local command tools now (see [`set_commands`](Self::set_commands)).
    pub fn commands(&self) -> CommandTools {
        self.inner
            .commands
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Disconnects every upstream (`set_upstreams` with an empty map), and waits (up to 3 s)
    /// for their sessions to close.
    pub fn shutdown<'a>(&'a self) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let running: Vec<Arc<Upstream>> = self
                .inner
                .servers
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .cloned()
                .collect();
            // An empty map is always valid.
            let _ = self.set_upstreams(HashMap::new()).await;
            // HTTP sessions close within their grace; a stdio child is killed in the background.
            let finished = futures::future::join_all(running.iter().map(|up| up.finished()));
            let _ = tokio::time::timeout(SHUTDOWN_WAIT, finished).await;
        })
    }

    /// Every tool of every upstream as `(qualified name, tool)`, ordered by server name then
    /// by the server's own order. The qualified name is `<server>__<tool name>`.
    pub fn tools(&self) -> Vec<(String, Tool)> {
        let servers = self.inner.servers.read().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (name, up) in servers.iter() {
            for tool in up.tools().iter() {
                out.push((format!("{name}__{}", tool.name), tool.clone()));
            }
        }
        out
    }

    /// The names (`<server>__<tool>`) of [`tools`](Self::tools), without copying the tools.
    pub fn tool_names(&self) -> Vec<String> {
        let servers = self.inner.servers.read().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (name, up) in servers.iter() {
            out.extend(
                up.tools()
                    .iter()
                    .map(|tool| format!("{name}__{}", tool.name)),
            );
        }
        out
    }

    /// Whether `name` is a tool of the pool now: `<server>__<tool>` of an upstream's list, or
    /// a command tool.
    pub fn has_tool(&self, name: &str) -> bool {
        if let Some((server, tool)) = split_qualified(name)
            && let Some(up) = self.upstream(server)
            && up.tools().iter().any(|t| t.name == tool)
        {
            return true;
        }
        self.commands().contains(name)
    }

    /// A receiver that sees a new value whenever the combined tool list ([`tools`](Self::tools))
    /// or a server's state may have changed: a server connected with new tools, finished its
    /// first connection attempt, sent `tools/list_changed`, was added or removed. The value is a counter; read `tools()` after `changed().await`.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// A receiver that sees a new value whenever an upstream said its resources or prompts
    /// changed (`notifications/resources/list_changed`, `notifications/prompts/list_changed`),
    /// or the set of servers changed.
    pub fn subscribe_listings(&self) -> watch::Receiver<u64> {
        self.inner.listings.subscribe()
    }

    /// The version of the combined tool list: the counter [`subscribe`](Self::subscribe)
    /// watches, bumped whenever the list may have changed.
    pub fn version(&self) -> u64 {
        *self.inner.changed.borrow()
    }

    /// The compiled schemas of this pool's tools for the current tool-list
    /// [`version`](Self::version), shared by every eval on the pool: compiled with `compile`
    /// (which also returns the schema problems found, each logged once) when the ones kept are
    /// for another version. The version is read before `compile` reads the tools: if the list
    /// changes in between, the next call sees a newer version and compiles again.
    pub fn compiled_schemas(
        &self,
        compile: impl FnOnce() -> (ToolSchemas, Vec<String>),
    ) -> Arc<ToolSchemas> {
        let version = self.version();
        self.inner.schemas.get_or_compile(version, compile)
    }

    /// Notes the shape of `value`, a result of the upstream tool `name` (`server__tool`) as a
    /// script under `profile` received it, when the tool declares no `outputSchema`: what
    /// [`observed_type`](Self::observed_type) gives (kept per profile and tool, and dropped when
    /// the tool's definition changes). Command tools and names that are not an upstream's tool
    /// now are ignored.
    pub fn observe(&self, profile: &str, name: &str, value: &Value) {
        if let Some(tool) = self.tool(name)
            && tool.output_schema.is_none()
        {
            self.inner
                .observed
                .record(profile, name, &tool.input_schema, value);
        }
    }

    /// The result type observed for the upstream tool `name` under `profile`, while the
    /// upstream's tool list is the one it was observed with and the tool declares no
    /// `outputSchema`.
    pub fn observed_type(&self, profile: &str, name: &str) -> Option<ObservedType> {
        let tool = self.tool(name)?;
        if tool.output_schema.is_some() {
            return None;
        }
        self.inner.observed.get(profile, name, &tool.input_schema)
    }

    /// The type of the upstream tool `name`'s results on one line (`{ content: string }`), for
    /// messages naming a value's shape: the `outputSchema` it declares, else the type observed
    /// under `profile` ([`observed_type`](Self::observed_type)); `None` when it has neither.
    /// Upstream-chosen names are [`neutralize`](codemode_policies::neutralize)d.
    pub fn result_shape(&self, profile: &str, name: &str) -> Option<String> {
        let schema = match self.output_schema(name) {
            Some(declared) => declared,
            None => self.observed_type(profile, name)?.schema,
        };
        Some(crate::catalog::compact_type(&schema))
    }

    /// The `outputSchema` the upstream tool `name` declares, if any.
    pub fn output_schema(&self, name: &str) -> Option<Value> {
        let schema = self.tool(name)?.output_schema?;
        Some(Value::Object((*schema).clone()))
    }

    /// The upstream tool `name` (`server__tool`) as listed now.
    fn tool(&self, name: &str) -> Option<Tool> {
        let (server, tool) = split_qualified(name)?;
        let up = self.upstream(server)?;
        up.tools().iter().find(|t| t.name == tool).cloned()
    }

    /// The state of each upstream, by server name.
    pub fn status(&self) -> Vec<UpstreamStatus> {
        let servers = self.inner.servers.read().unwrap_or_else(|e| e.into_inner());
        servers.values().map(|up| up.status()).collect()
    }

    /// Every upstream, by name.
    pub(crate) fn updates(&self) -> &tokio::sync::broadcast::Sender<crate::ResourceUpdate> {
        &self.inner.updates
    }

    pub(crate) fn upstreams(&self) -> Vec<Arc<Upstream>> {
        let servers = self.inner.servers.read().unwrap_or_else(|e| e.into_inner());
        servers.values().cloned().collect()
    }

    pub(crate) fn upstream(&self, server: &str) -> Option<Arc<Upstream>> {
        self.inner
            .servers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(server)
            .cloned()
    }
}

impl UpstreamPool {
    /// Calls `<server>__<tool>` for an eval: the server's progress and log messages about the
    /// call go to the scope's relay, the media blocks of its result to its store (see
    /// [`CallScope`]).
    ///
    /// A call to a server still in its first connection attempt waits for that attempt.
    ///
    /// # Errors
    /// [`ToolError::NotFound`] for an unknown server or tool; [`ToolError::Failed`] when `args`
    /// is not an object, the server is down, the call times out, the connection closes during
    /// the call, or the tool reports an error (`isError`; its text is the message and its
    /// `structuredContent` the data).
    pub fn call_in<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        cx: &'a CallContext,
        scope: &'a CallScope,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let not_found = || ToolError::NotFound {
                tool: name.to_string(),
            };
            let (server, tool) = split_qualified(name).ok_or_else(not_found)?;
            let up = self.upstream(server).ok_or_else(not_found)?;
            // A server still starting is waited for (at most its startup timeout).
            up.first_attempt().await;
            up.call((name, tool), args, cx, scope).await
        })
    }
}

impl ToolHost for UpstreamPool {
    /// [`call_in`](Self::call_in) a scope of its own: no relay, and a media store dropped with
    /// the call (media values name nothing anyone can attach). A governed eval passes its own.
    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { self.call_in(name, args, cx, &CallScope::default()).await })
    }

    fn tool_names(&self) -> Vec<String> {
        UpstreamPool::tool_names(self)
    }
}

//! codemode's Prometheus metrics (`GET /metrics`), kept with the Prometheus organisation's
//! `prometheus-client`.
//!
//! Counts of evals, tool calls and approvals come from the audit records, which every eval
//! writes through one sink ([`MeteredSink`]) whether or not an audit log is configured: one
//! place sees every eval and every call attempt, on every path (fresh, resumed, cancelled).
//! Gauges (approvals pending, parked evals, upstreams up, pool slots) are read from the server
//! when scraped. Label values are bounded: a tool is named only when it is in the tool list
//! (else `other`), a profile only when the config has it (else `other`); every other label is
//! a fixed word. No argument, result or secret reaches a metric.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use codemode_policies::{AuditRecord, AuditSink, Config};
use codemode_upstream::UpstreamPool;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The label value of a tool, profile or server this server does not know.
const OTHER: &str = "other";
/// The `profile` of an eval run without one.
const NO_PROFILE: &str = "none";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EvalLabels {
    profile: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolCallLabels {
    tool: String,
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApprovalLabels {
    channel: &'static str,
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabel {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CapLabel {
    cap: &'static str,
}

/// What the server reports at a scrape, read from it then.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    pub(crate) approvals_pending: usize,
    /// Calls that joined an identical pending ask so far.
    pub(crate) approvals_joined: u64,
    pub(crate) parked_evals: usize,
    pub(crate) pool_slots_in_use: usize,
    /// `(server, up, sessions established so far)`.
    pub(crate) upstreams: Vec<(String, bool, u64)>,
}

/// Every metric of one server (see the module docs). Off (`server.admin.metrics: false`):
/// nothing is counted and `/metrics` is not served.
pub struct Metrics {
    enabled: AtomicBool,
    registry: Registry,
    evals: Family<EvalLabels, Counter>,
    eval_duration: Histogram,
    tool_calls: Family<ToolCallLabels, Counter>,
    approvals: Family<ApprovalLabels, Counter>,
    approvals_pending: Gauge,
    approvals_joined: Counter,
    parked_evals: Gauge,
    upstream_up: Family<ServerLabel, Gauge>,
    upstream_restarts: Family<ServerLabel, Counter>,
    /// Restarts of each upstream already counted, from its sessions established so far.
    restarts_seen: Mutex<HashMap<String, u64>>,
    http_responses: Family<StatusLabel, Counter>,
    refusals: Family<CapLabel, Counter>,
    pool_slots_in_use: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("enabled", &self.enabled())
            .finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Every metric at zero, on.
    pub fn new() -> Self {
        let mut metrics = Metrics {
            enabled: AtomicBool::new(true),
            registry: Registry::with_prefix("codemode"),
            evals: Family::default(),
            eval_duration: Histogram::new(exponential_buckets(0.001, 4.0, 10)),
            tool_calls: Family::default(),
            approvals: Family::default(),
            approvals_pending: Gauge::default(),
            approvals_joined: Counter::default(),
            parked_evals: Gauge::default(),
            upstream_up: Family::default(),
            upstream_restarts: Family::default(),
            restarts_seen: Mutex::default(),
            http_responses: Family::default(),
            refusals: Family::default(),
            pool_slots_in_use: Gauge::default(),
        };
        metrics.register_eval_metrics();
        metrics.register_server_metrics();
        metrics
    }

    /// Registers what evals and their calls and asks count. A metric and its registered
    /// handle share their value: the registry gets a clone.
    fn register_eval_metrics(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "evals",
            "Evals finished, by profile and outcome (ok, or the error kind)",
            self.evals.clone(),
        );
        registry.register(
            "eval_duration_seconds",
            "Wall-clock time of finished evals, time waiting for a human included",
            self.eval_duration.clone(),
        );
        registry.register(
            "tool_calls",
            "Tool-call attempts, by tool and decision",
            self.tool_calls.clone(),
        );
        registry.register(
            "approvals",
            "Asks decided, by where the decision came from and what it was",
            self.approvals.clone(),
        );
        registry.register(
            "approvals_pending",
            "Asks waiting for a human now",
            self.approvals_pending.clone(),
        );
        registry.register(
            "approvals_joined",
            "Calls that joined an identical pending ask instead of prompting again",
            self.approvals_joined.clone(),
        );
        registry.register(
            "parked_evals",
            "Evals this node parked in the durable store, waiting for a human",
            self.parked_evals.clone(),
        );
    }

    /// Registers what the server itself counts: upstreams, responses, refusals, slots.
    fn register_server_metrics(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "upstream_up",
            "Whether an upstream server's session is up (1) or not (0)",
            self.upstream_up.clone(),
        );
        registry.register(
            "upstream_restarts",
            "Sessions re-established with an upstream server after its first",
            self.upstream_restarts.clone(),
        );
        registry.register(
            "http_responses",
            "HTTP responses, by status code",
            self.http_responses.clone(),
        );
        registry.register(
            "refusals",
            "Requests refused by a cap, by the cap's config key",
            self.refusals.clone(),
        );
        registry.register(
            "pool_slots_in_use",
            "Sandbox instance slots held by running evals",
            self.pool_slots_in_use.clone(),
        );
    }

    /// Whether metrics are kept (`server.admin.metrics`).
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub(crate) fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Relaxed);
    }

    /// Counts an HTTP response.
    pub(crate) fn http_response(&self, status: u16) {
        if self.enabled() {
            self.http_responses
                .get_or_create(&StatusLabel { status })
                .inc();
        }
    }

    /// Counts a request refused by `cap` (the cap's config key, in snake case).
    pub(crate) fn refused(&self, cap: &'static str) {
        if self.enabled() {
            self.refusals.get_or_create(&CapLabel { cap }).inc();
        }
    }

    /// The exposition text (OpenMetrics) with the gauges set from `snapshot`.
    pub(crate) fn encode(&self, snapshot: &Snapshot) -> String {
        self.approvals_pending
            .set(i64::try_from(snapshot.approvals_pending).unwrap_or(i64::MAX));
        let joined = snapshot.approvals_joined;
        if joined > self.approvals_joined.get() {
            self.approvals_joined
                .inc_by(joined - self.approvals_joined.get());
        }
        self.parked_evals
            .set(i64::try_from(snapshot.parked_evals).unwrap_or(i64::MAX));
        self.pool_slots_in_use
            .set(i64::try_from(snapshot.pool_slots_in_use).unwrap_or(i64::MAX));
        // Servers removed from the config leave the gauge; their restarts stay counted.
        self.upstream_up.clear();
        let mut seen = self.restarts_seen.lock().unwrap_or_else(|e| e.into_inner());
        for (server, up, connects) in &snapshot.upstreams {
            let label = ServerLabel {
                server: server.clone(),
            };
            self.upstream_up.get_or_create(&label).set(i64::from(*up));
            let restarts = connects.saturating_sub(1);
            let counted = seen.entry(server.clone()).or_insert(0);
            let counter = self.upstream_restarts.get_or_create(&label);
            if restarts > *counted {
                counter.inc_by(restarts - *counted);
            }
            // A server restarted by a config change starts counting again.
            *counted = restarts;
        }
        drop(seen);
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    fn record(&self, record: &AuditRecord, names: &Names) {
        match record {
            AuditRecord::ToolCall(call) => {
                let decision = call.decision.as_str();
                self.tool_calls
                    .get_or_create(&ToolCallLabels {
                        tool: names.tool(&call.tool),
                        decision,
                    })
                    .inc();
                if let Some(channel) = call.channel {
                    self.approvals
                        .get_or_create(&ApprovalLabels {
                            channel: channel.as_str(),
                            decision,
                        })
                        .inc();
                }
            }
            AuditRecord::Eval(eval) => {
                let outcome = match (eval.ok, eval.error_kind) {
                    (true, _) => "ok",
                    (false, Some(kind)) => kind.as_str(),
                    (false, None) => "error",
                };
                self.evals
                    .get_or_create(&EvalLabels {
                        profile: names.profile(eval.profile.as_deref()),
                        outcome,
                    })
                    .inc();
                self.eval_duration.observe(eval.wall_ms / 1000.0);
            }
            // A client's resource reads and prompt gets are in the audit log, not counted.
            AuditRecord::Access(_) => {}
            // An upstream's sampling requests are in the audit log, not counted.
            AuditRecord::Sampling(_) => {}
            // Remembered rules' creation and revocation are in the audit log, not counted.
            AuditRecord::Rule(_) => {}
        }
    }
}

/// Which names a label may carry: the config's profiles and the tool list.
struct Names {
    config: Arc<Config>,
    tools: UpstreamPool,
}

impl Names {
    fn profile(&self, profile: Option<&str>) -> String {
        match profile {
            None => NO_PROFILE.to_string(),
            Some(name) if self.config.profile(name).is_some() => name.to_string(),
            Some(_) => OTHER.to_string(),
        }
    }

    fn tool(&self, tool: &str) -> String {
        if codemode_config::BUILTIN_TOOL_NAMES.contains(&tool) || self.tools.has_tool(tool) {
            tool.to_string()
        } else {
            OTHER.to_string()
        }
    }
}

/// The audit sink every eval writes to: counts each record, then hands it to the audit log
/// when one is configured.
pub(crate) struct MeteredSink {
    metrics: Arc<Metrics>,
    names: Names,
    log: Option<Arc<dyn AuditSink>>,
}

impl MeteredSink {
    /// `log` metered under `config`'s names and `tools`' list; `None` when there is neither a
    /// log nor metrics to keep.
    pub(crate) fn wrap(
        metrics: &Arc<Metrics>,
        config: Arc<Config>,
        tools: UpstreamPool,
        log: Option<Arc<dyn AuditSink>>,
    ) -> Option<Arc<dyn AuditSink>> {
        if !metrics.enabled() {
            return log;
        }
        Some(Arc::new(MeteredSink {
            metrics: metrics.clone(),
            names: Names { config, tools },
            log,
        }))
    }
}

impl AuditSink for MeteredSink {
    fn record(&self, record: AuditRecord) {
        if self.metrics.enabled() {
            self.metrics.record(&record, &self.names);
        }
        if let Some(log) = &self.log {
            log.record(record);
        }
    }

    fn flush(&self) {
        if let Some(log) = &self.log {
            log.flush();
        }
    }
}

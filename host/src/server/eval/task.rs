//! The one eval task, fresh or resumed: it runs the governed eval on an eval thread, lets the
//! durable store park it while it waits for a human, saves it when it parks (or goes on in
//! memory when the store refuses), and delivers the outcome — to the request that started it,
//! or to the store when it was resumed from there.
//!
//! Glossary (the words of the server's modules):
//! - *park*: an eval waiting for a human leaves memory at a safe point ([`GovernedStep::Parked`]);
//! - *save*: its state goes to the durable store under its token ([`Durable::save`]);
//! - *resume*: any node takes it from the store and runs it on ([`super::resume_from_store`]);
//! - *retry*: a 2026-07-28 client comes back with `requestState` for its answer or result;
//! - *spill*: a parked eval whose save failed goes on in memory instead.

use std::sync::Arc;

use codemode_runtime::{CancellationToken, EvalOutcome, ParkRequest};
use serde_json::Value;

use crate::approvals::{Asker, NoAsker, OpenAsks};
use crate::server::durable::parked::ParkGate;
use crate::server::durable::{Durable, ParkedMeta};
use crate::server::fair::EvalSlot;
use crate::server::finished::Finished;
use crate::server::legacy::LegacyAsker;
use crate::server::state::ServerState;
use crate::server::suspend::Suspended;
use crate::session::{AuditTarget, Caller, GovernedEval, GovernedEvalBuilder, GovernedStep};

/// How the task begins.
pub(super) enum Start {
    /// A new eval of its code.
    Fresh(GovernedEval),
    /// A parked eval taken from the store.
    Resumed(GovernedEval, codemode_runtime::Suspended),
    /// A parked eval that may not go on (its profile is gone): it ends at once, in words.
    Refused(String),
}

/// Who waits for an eval's result, which decides how it parks.
#[derive(Clone)]
pub(super) enum Waiter {
    /// A 2026-07-28 client, through the eval's entry (its `requestState` is the token).
    Modern(Arc<Suspended>),
    /// A legacy request open on this node, and the eval tool it called.
    Legacy(Arc<LegacyAsker>, String),
    /// A legacy request on a server without a store: the eval never parks.
    Memory,
}

impl Waiter {
    /// The token the eval parks under, when it can park.
    pub(super) fn token(&self) -> Option<&str> {
        match self {
            Waiter::Modern(entry) => Some(entry.token()),
            Waiter::Legacy(asker, _) => Some(asker.token()),
            Waiter::Memory => None,
        }
    }

    /// The eval tool called.
    pub(super) fn tool(&self) -> &str {
        match self {
            Waiter::Modern(entry) => entry.tool(),
            Waiter::Legacy(_, tool) => tool,
            Waiter::Memory => "",
        }
    }

    /// Who the eval asks when it goes on in memory after its save failed.
    pub(super) fn asker(&self) -> Arc<dyn Asker> {
        match self {
            Waiter::Modern(entry) => Arc::new(entry.asker()),
            Waiter::Legacy(asker, _) => asker.clone(),
            Waiter::Memory => Arc::new(NoAsker),
        }
    }

    /// The eval was saved: its waiting requests learn it.
    pub(super) fn saved(&self, meta: &ParkedMeta) {
        match self {
            Waiter::Modern(entry) => entry.park(meta.asks.iter().map(|a| a.question()).collect()),
            Waiter::Legacy(asker, _) => asker.saved(),
            Waiter::Memory => {}
        }
    }
}

/// How a legacy eval's task ended.
pub(super) enum LegacyEnd {
    Finished(Box<Finished>),
    /// Saved to the store: the request waits for its result there.
    Parked,
}

/// Where the outcome goes.
pub(super) enum Delivery {
    /// A fresh eval: to its waiter — the 2026-07-28 entry, or the legacy request (told too
    /// when the eval was saved instead, to wait for its result in the store).
    Request(tokio::sync::oneshot::Sender<LegacyEnd>),
    /// A resumed eval: to the store (a retry may reach any node) and its entry here.
    Store(Arc<Suspended>),
}

/// What lets an eval park: the store, the token it parks under, the client it counts for, the
/// asks it keeps open and the request that parks it.
pub(super) struct Parking {
    pub(super) durable: Arc<Durable>,
    pub(super) token: String,
    pub(super) client: String,
    pub(super) open_asks: Arc<OpenAsks>,
    pub(super) park: ParkRequest,
}

impl Parking {
    /// Parking for an eval of `client` under `token` in `durable`.
    pub(super) fn new(durable: Arc<Durable>, token: String, client: String) -> Self {
        Parking {
            open_asks: Arc::new(OpenAsks::new(Some(
                durable.clone() as Arc<dyn crate::approvals::Decisions>
            ))),
            park: durable.park_request(),
            durable,
            token,
            client,
        }
    }
}

/// One eval's run. See the module docs.
pub(super) struct EvalTask {
    pub(super) state: Arc<ServerState>,
    pub(super) code: String,
    pub(super) start: Start,
    pub(super) waiter: Waiter,
    pub(super) parking: Option<Parking>,
    pub(super) cancel: CancellationToken,
    pub(super) delivery: Delivery,
    /// A fresh eval's place among its client's running evals, given up before the outcome is
    /// delivered (so that a client at its cap may send the next eval as soon as it has this
    /// one's result).
    pub(super) slot: Option<Arc<EvalSlot>>,
}

/// The governed eval's settings every task shares — the server's tools, broker, audit, limits
/// and the config's output policy — asking through `asker`, parked through `parking`.
pub(super) fn governed(
    state: &Arc<ServerState>,
    asker: Arc<dyn Asker>,
    parking: Option<&Parking>,
) -> GovernedEvalBuilder {
    let config = state.config();
    let audit = state.audit().map(|sink| AuditTarget {
        sink,
        include_args: config.audit.include_args,
    });
    GovernedEval::builder(state.runtime.clone())
        .tools(state.upstreams.clone())
        .asker(asker)
        .broker(Some(state.approvals.clone()))
        .upstream_identity(Some(upstream_identity(state)))
        .pending_asks(state.pending_asks.clone())
        .audit(audit)
        .outputs(config.outputs.clone())
        .classification(config.evaluation.classification.clone())
        .options(config.limits.eval_options())
        .max_media_bytes(config.limits.max_media_bytes)
        .lifetime(Some(config.limits.max_eval_lifetime))
        .park(parking.map(|p| p.park.clone()))
        .open_asks(parking.map(|p| p.open_asks.clone()))
}

/// What identifies a tool's upstream in the config in force at the call (a reload is seen).
fn upstream_identity(state: &Arc<ServerState>) -> codemode_policies::UpstreamIdentity {
    let state = Arc::downgrade(state);
    Arc::new(move |tool: &str| state.upgrade()?.config().upstream_identity(tool))
}

/// The governed eval that continues a parked one: its caller, profile (by name, from the
/// config in force now), the server's channels, asking through `asker`.
pub(super) fn resumed_eval(
    state: &Arc<ServerState>,
    meta: &ParkedMeta,
    asker: Arc<dyn Asker>,
    parking: Option<&Parking>,
) -> GovernedEvalBuilder {
    let config = state.config();
    let caller = Caller::new(meta.caller.clone(), meta.permissions.clone());
    let alternatives =
        super::super::eval_tools::alternatives(&config, meta.profile.as_deref(), &caller);
    let mut builder = governed(state, asker, parking)
        .id(codemode_runtime::EvalId(meta.eval_id))
        .audit_id(Some(meta.audit_id.clone()))
        .caller(caller)
        .alternatives(alternatives)
        .profile(
            meta.profile
                .as_deref()
                .and_then(|p| config.profile(p).cloned()),
        )
        .lived(std::time::Duration::from_millis(meta.lived_ms))
        .eval_approvals(meta.eval_approvals.clone())
        .media(meta.media.clone())
        .trace(
            state
                .traces
                .resumed(meta.trace.as_ref(), meta.profile.as_deref()),
        );
    if let Some(session) = &meta.session_id {
        builder = builder.session(session.clone(), meta.session_approvals.clone());
    }
    builder
}

impl EvalTask {
    /// Runs the task on an eval thread (`ServerState::eval_threads`), not on the async workers:
    /// guest code runs without yielding until it waits on a tool, so busy scripts on every
    /// worker would stall every other session, the approval API and new connections. The OS
    /// shares the cores between eval threads instead; a running eval stops through its cancel
    /// token. `running` (a shutdown waits for it) is held until the task ends.
    ///
    /// # Errors
    /// When no thread can be started.
    pub(super) fn spawn(self, running: impl Send + 'static) -> std::io::Result<()> {
        let handle = tokio::runtime::Handle::current();
        let threads = self.state.eval_threads.clone();
        let span = self.span();
        threads.spawn(move || {
            handle.block_on(async move {
                tracing::Instrument::instrument(self.run(), span).await;
                drop(running);
            })
        })
    }

    /// The span every log line of the eval is in: its audit id and caller (the JSON log lines'
    /// `eval_id` and `caller`). At the error level so that it is there under any filter that
    /// lets a line through.
    fn span(&self) -> tracing::Span {
        match &self.start {
            Start::Fresh(eval) | Start::Resumed(eval, _) => tracing::error_span!(
                "eval",
                eval_id = %eval.audit_id(),
                caller = %codemode_policies::neutralize(&eval.caller().name)
            ),
            Start::Refused(_) => tracing::Span::none(),
        }
    }

    async fn run(self) {
        let EvalTask {
            state,
            code,
            start,
            waiter,
            parking,
            cancel,
            delivery,
            slot,
        } = self;
        let runs = !matches!(start, Start::Refused(_));
        let watcher = parking.as_ref().filter(|_| runs).map(|p| {
            p.durable.watch(
                p.open_asks.clone(),
                p.park.clone(),
                ParkGate {
                    client: p.client.clone(),
                    token: p.token.clone(),
                    cap: state.config().limits.per_client.max_parked_evals,
                },
            )
        });
        let (eval, step) = match start {
            Start::Fresh(eval) => {
                let step = eval.run_step(&code, &cancel).await;
                (Some(eval), Ok(step))
            }
            Start::Resumed(eval, suspended) => {
                let step = eval.resume(&code, &suspended, &cancel).await;
                (Some(eval), step.map_err(|e| e.to_string()))
            }
            Start::Refused(why) => (None, Err(why)),
        };
        if let Some(watcher) = watcher {
            watcher.abort();
        }
        drop(slot);
        let parked = matches!(step, Ok(GovernedStep::Parked(_)));
        if let (Some(p), false, true) = (&parking, parked, runs) {
            p.durable.not_parked(&p.token);
        }
        let outcome = match step {
            // Its media resolved now, while its store is here: the result may wait for its
            // client after the eval is gone.
            Ok(GovernedStep::Finished(outcome)) => Some(match &eval {
                Some(eval) => Finished::new(outcome, eval.media()),
                None => outcome.into(),
            }),
            Err(why) => Some(resume_failed(&why).into()),
            Ok(GovernedStep::Parked(parked)) => match (&parking, &eval) {
                (Some(p), Some(eval)) => {
                    let meta = Durable::meta(
                        (&p.token, &p.client),
                        waiter.tool(),
                        &code,
                        eval,
                        &p.open_asks.snapshot(),
                    );
                    park_or_spill(&state, &p.durable, &waiter, meta, parked, &cancel).await
                }
                // Parked without a store: cannot happen (nothing asks it to park).
                _ => None,
            },
        };
        // The eval holds its client's count (`waits`) until here: a parked one while it is
        // saved or, when that fails, runs on in memory.
        drop(eval);
        deliver(&state, parking.as_ref(), waiter, delivery, outcome).await;
    }
}

/// Delivers `outcome` (`None`: the eval was saved to the store).
async fn deliver(
    state: &ServerState,
    parking: Option<&Parking>,
    waiter: Waiter,
    delivery: Delivery,
    outcome: Option<Finished>,
) {
    let limits = state.config().limits.unfetched_results;
    if let Some(outcome) = &outcome {
        let result = match (&outcome.error, outcome.ok) {
            (_, true) => "ok",
            (Some(error), false) => error.kind.as_str(),
            (None, false) => "error",
        };
        tracing::info!(
            outcome = result,
            tool_calls = outcome.tool_calls.len(),
            "eval finished"
        );
    }
    match (delivery, outcome) {
        (Delivery::Request(done), Some(outcome)) => match waiter {
            Waiter::Modern(entry) => state.suspensions.complete(&entry, outcome, limits),
            Waiter::Legacy(..) | Waiter::Memory => {
                let _ = done.send(LegacyEnd::Finished(Box::new(outcome)));
            }
        },
        (Delivery::Request(done), None) => {
            let _ = done.send(LegacyEnd::Parked);
        }
        // Kept in the store even when a request here waits for it: the answer may have come
        // through the approval API, or the same retry may have reached another node too, which
        // waits for this result rather than call the eval gone.
        (Delivery::Store(entry), Some(outcome)) => {
            if let Some(p) = parking {
                p.durable
                    .put_result(entry.token(), entry.owner(), &outcome)
                    .await;
                p.durable.unmark_running(entry.token()).await;
            }
            state.suspensions.complete(&entry, outcome, limits);
        }
        // Parked again: its `eval:` record stands for it now.
        (Delivery::Store(entry), None) => {
            if let Some(p) = parking {
                p.durable.unmark_running(entry.token()).await;
            }
        }
    }
}

/// Saves a parked eval to the store and tells the requests waiting on it (`None`); when the
/// store refuses, the eval spills: it goes on here, in memory, and its outcome is returned.
async fn park_or_spill(
    state: &Arc<ServerState>,
    durable: &Arc<Durable>,
    waiter: &Waiter,
    meta: ParkedMeta,
    parked: codemode_runtime::Suspended,
    cancel: &CancellationToken,
) -> Option<Finished> {
    let config = state.config();
    durable.cap_parked_bytes(
        config.limits.per_client.max_parked_bytes,
        config.durable.max_parked_bytes,
    );
    match durable.save(&meta, &parked).await {
        Ok(()) => {
            waiter.saved(&meta);
            None
        }
        Err(e) => {
            tracing::error!(
                "eval {} could not be saved, it stays in memory: {e}",
                meta.eval_id
            );
            let eval = resumed_eval(state, &meta, waiter.asker(), None).build();
            match eval.resume(&meta.code, &parked, cancel).await {
                Ok(GovernedStep::Finished(outcome)) => Some(Finished::new(outcome, eval.media())),
                Ok(GovernedStep::Parked(_)) => None,
                Err(e) => Some(resume_failed(&e.to_string()).into()),
            }
        }
    }
}

/// The outcome of an eval that could not be resumed.
fn resume_failed(why: &str) -> EvalOutcome {
    EvalOutcome {
        ok: false,
        result: Value::Null,
        error: Some(codemode_runtime::EvalError::new(
            codemode_runtime::ErrorKind::Cancelled,
            format!("the saved eval could not be resumed: {why}"),
        )),
        warnings: Vec::new(),
        logs: Vec::new(),
        tool_calls: Vec::new(),
        stats: Default::default(),
    }
}

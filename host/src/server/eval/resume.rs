//! Parking and resuming: an eval saved to the store (or kept in memory when the store refuses)
//! and taken from it again, on whichever node is given the answer.

use std::sync::Arc;

use codemode_runtime::{CancellationToken, EvalOutcome};
use serde_json::Value;

use crate::approvals::{Asker, NoAsker, OpenAsks};
use crate::server::durable::{Claimed, Durable, ParkGate, ParkedMeta};
use crate::server::legacy::LegacyAsker;
use crate::server::state::ServerState;
use crate::server::suspend::Suspended;
use crate::session::{AuditTarget, Caller, GovernedEval, GovernedStep};

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

/// Saves a parked eval to the store and tells the requests waiting on it; when the store
/// refuses, the eval goes on here, in memory, and its outcome is returned.
pub(super) async fn park_or_resume(
    state: &Arc<ServerState>,
    durable: &Arc<Durable>,
    waiter: &Waiter,
    meta: ParkedMeta,
    parked: codemode_runtime::Suspended,
    cancel: &CancellationToken,
) -> Option<EvalOutcome> {
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
            let eval = resumed_eval(state, &meta, waiter.asker(), None, None);
            match eval.resume(&meta.code, &parked, cancel).await {
                Ok(GovernedStep::Finished(outcome)) => Some(outcome),
                Ok(GovernedStep::Parked(_)) => None,
                Err(e) => Some(resume_failed(&e.to_string())),
            }
        }
    }
}

/// The governed eval that continues a parked one: its caller, profile (by name, from the
/// config in force now), the server's channels, asking through `asker`.
fn resumed_eval(
    state: &Arc<ServerState>,
    meta: &ParkedMeta,
    asker: Arc<dyn Asker>,
    park: Option<codemode_runtime::ParkRequest>,
    open_asks: Option<Arc<OpenAsks>>,
) -> GovernedEval {
    let config = state.config();
    let audit = state.audit().map(|sink| AuditTarget {
        sink,
        include_args: config.audit.include_args,
    });
    let mut builder = GovernedEval::builder(state.runtime.clone())
        .id(codemode_runtime::EvalId(meta.eval_id))
        .audit_id(Some(meta.audit_id.clone()))
        .tools(state.upstreams.clone())
        .caller(Caller::new(meta.caller.clone(), meta.permissions.clone()))
        .profile(
            meta.profile
                .as_deref()
                .and_then(|p| config.profile(p).cloned()),
        )
        .asker(asker)
        .broker(Some(state.approvals.clone()))
        .audit(audit)
        .outputs(config.outputs.clone())
        .options(config.limits.eval_options())
        .lifetime(Some(config.limits.max_eval_lifetime))
        .lived(std::time::Duration::from_millis(meta.lived_ms))
        .eval_approvals(meta.eval_approvals.clone())
        .park(park)
        .open_asks(open_asks);
    if let Some(session) = &meta.session_id {
        builder = builder.session(session.clone(), meta.session_approvals.clone());
    }
    builder.build()
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

/// Takes the parked eval of `token` from the store and resumes it on this node, under a new
/// local entry with the same token. `Ok(None)` when the store does not have it (never parked,
/// already taken by another node, or expired).
///
/// # Errors
/// When the store fails or the record cannot be read, in words.
pub(in crate::server) async fn resume_from_store(
    state: &Arc<ServerState>,
    token: &str,
) -> Result<Option<(Arc<Suspended>, crate::server::suspend::CreatorClaim)>, String> {
    let Some(durable) = state.durable().cloned() else {
        return Ok(None);
    };
    let running_for = state.config().limits.max_eval_lifetime;
    let Some(claimed) = durable.claim(&state.runtime, token, running_for).await? else {
        return Ok(None);
    };
    let (entry, claim) = state.suspensions.register_as(
        claimed.meta.token.clone(),
        &claimed.meta.tool,
        &claimed.meta.caller,
    );
    let open_asks = Arc::new(OpenAsks::new(Some(
        durable.clone() as Arc<dyn crate::approvals::Decisions>
    )));
    let park = durable.park_request();
    // A legacy request open here on this eval: its client is asked, and learns of a new park.
    let waiter = match durable.legacy_asker(token) {
        Some(legacy) => {
            legacy.resumed();
            Waiter::Legacy(legacy, claimed.meta.tool.clone())
        }
        None => Waiter::Modern(entry.clone()),
    };
    let cancel = state.drain.eval_token();
    let running = state.drain.enter();
    let task_state = state.clone();
    let task_entry = entry.clone();
    let task_cancel = cancel.clone();
    let handle = tokio::runtime::Handle::current();
    // As a fresh eval: on an eval thread (see `call_eval`).
    let task_token = entry.token().to_string();
    let started = state.eval_threads.spawn(move || {
        handle.block_on(async move {
            let Claimed { meta, suspended } = claimed;
            // A profile that no longer exists fails closed: the eval does not go on unchecked.
            if let Some(name) = &meta.profile
                && task_state.config().profile(name).is_none()
            {
                let outcome = resume_failed(&format!(
                    "its profile `{name}` is not in the config any more"
                ));
                end_resumed(&task_state, &durable, &task_entry, outcome).await;
                drop(running);
                return;
            }
            let eval = resumed_eval(
                &task_state,
                &meta,
                waiter.asker(),
                Some(park.clone()),
                Some(open_asks.clone()),
            );
            let watcher = durable.watch(
                open_asks.clone(),
                park,
                ParkGate {
                    client: meta.client.clone(),
                    token: meta.token.clone(),
                    cap: task_state.config().limits.per_client.max_parked_evals,
                },
            );
            let step = eval.resume(&meta.code, &suspended, &task_cancel).await;
            watcher.abort();
            if !matches!(step, Ok(GovernedStep::Parked(_))) {
                durable.not_parked(&meta.token);
            }
            let outcome = match step {
                Ok(GovernedStep::Finished(outcome)) => Some(outcome),
                Ok(GovernedStep::Parked(parked)) => {
                    let meta = Durable::meta(
                        (&meta.token, &meta.client),
                        &meta.tool,
                        &meta.code,
                        &eval,
                        &open_asks.snapshot(),
                    );
                    park_or_resume(&task_state, &durable, &waiter, meta, parked, &task_cancel).await
                }
                Err(e) => Some(resume_failed(&e.to_string())),
            };
            if let Some(outcome) = outcome {
                end_resumed(&task_state, &durable, &task_entry, outcome).await;
            } else {
                // Parked again: its `eval:` record stands for it now.
                durable.unmark_running(task_entry.token()).await;
            }
            drop(running);
        })
    });
    if let Err(e) = started {
        state.suspensions.remove(&task_token);
        return Err(format!("cannot start a thread to resume it: {e}"));
    }
    entry.set_cancel(cancel);
    Ok(Some((entry, claim)))
}

/// The end of a resumed eval: its outcome kept in the store — even when a request here waits
/// for it: the answer may have come through the approval API, or the same retry may have
/// reached another node too, which waits for this result rather than call the eval gone — its
/// lease given up, and the requests here told.
async fn end_resumed(
    state: &Arc<ServerState>,
    durable: &Durable,
    entry: &Arc<Suspended>,
    outcome: EvalOutcome,
) {
    durable
        .put_result(entry.token(), entry.owner(), &outcome)
        .await;
    durable.unmark_running(entry.token()).await;
    state
        .suspensions
        .complete(entry, outcome, state.config().limits.unfetched_results);
}

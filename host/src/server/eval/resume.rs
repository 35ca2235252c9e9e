//! Resuming: a parked eval taken from the store again, on whichever node is given the answer,
//! and run on by the same [`EvalTask`] as a fresh one.

use std::sync::Arc;

use super::task::{Delivery, EvalTask, Parking, Start, Waiter, resumed_eval};
use crate::server::durable::{Claimed, Durable};
use crate::server::state::ServerState;
use crate::server::suspend::Suspended;

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
    let Some(Claimed { meta, suspended }) =
        durable.claim(&state.runtime, token, running_for).await?
    else {
        return Ok(None);
    };
    let (entry, claim) =
        state
            .suspensions
            .register_as(meta.token.clone(), &meta.tool, &meta.caller);
    // A legacy request open here on this eval: its client is asked, and learns of a new park.
    let waiter = match state.legacy.asker(token) {
        Some(legacy) => {
            legacy.resumed();
            Waiter::Legacy(legacy, meta.tool.clone())
        }
        None => Waiter::Modern(entry.clone()),
    };
    let parking = Parking::new(durable, meta.token.clone(), meta.client.clone());
    let start = match &meta.profile {
        // A profile that no longer exists fails closed: the eval does not go on unchecked.
        Some(name) if state.config().profile(name).is_none() => Start::Refused(format!(
            "its profile `{name}` is not in the config any more"
        )),
        _ => Start::Resumed(
            resumed_eval(state, &meta, waiter.asker(), Some(&parking)).build(),
            suspended,
        ),
    };
    let cancel = state.drain.eval_token();
    let task = EvalTask {
        state: state.clone(),
        code: meta.code.clone(),
        start,
        waiter,
        parking: Some(parking),
        cancel: cancel.clone(),
        delivery: Delivery::Store(entry.clone()),
        slot: None,
    };
    if let Err(e) = task.spawn(state.drain.enter()) {
        state.suspensions.remove(entry.token());
        return Err(format!("cannot start a thread to resume it: {e}"));
    }
    entry.set_cancel(cancel);
    Ok(Some((entry, claim)))
}

/// Parks evals waiting for a human in `durable`'s store and resumes them from it, on this node
/// whenever an answer for one arrives here (through the approval API, or the legacy client
/// whose request is open here), and at its approval deadline (the sweep, to time its calls
/// out). Called once, where the server is assembled, before serving.
pub fn enable_durable(state: &Arc<ServerState>, durable: Arc<Durable>) {
    let weak = Arc::downgrade(state);
    durable.set_resumer(Arc::new(move |token| {
        if let Some(state) = weak.upgrade() {
            tokio::spawn(async move {
                // Nobody waits here (the answer came through the approval API): the result
                // goes to the store for the client's retry, on any node.
                let _ = resume_from_store(&state, &token).await;
            });
        }
    }));
    state.approvals.set_parked(durable.clone());
    let sweeper = Arc::downgrade(&durable);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(crate::server::durable::SWEEP_EVERY).await;
            let Some(durable) = sweeper.upgrade() else {
                return;
            };
            durable.sweep_expired().await;
        }
    });
    state.set_durable(durable);
}

//! Waiting for the result of an eval in the durable store, resumed on some node.

use codemode_runtime::EvalOutcome;

use crate::server::durable::{Durable, Running};

/// How a wait for the result of an eval in the store ended.
pub(super) enum Stored {
    Result(Box<EvalOutcome>),
    /// Still running on some node when the patience ran out.
    Running,
    /// The node that resumed it stopped before it finished.
    Abandoned,
    /// Neither parked, running nor finished.
    Gone,
}

/// What a client is told when the node that resumed its eval stopped before the end.
pub(super) const ABANDONED: &str = "the node that resumed this eval stopped before the eval finished: the tool calls it made until then were made once (its audit log has them), the rest of the script did not run, and the result is lost; starting the script over would repeat those calls";

/// Waits for the result of `token`'s eval in the store: for `steps` of
/// [`STORE_PATIENCE_STEP`] at most, or, with `None`, for as long as the eval is parked or
/// running (a legacy request open on its eval, looking every [`PARKED_POLL`]). The node that takes a parked eval marks it
/// running just after; a wait racing it may look in between, so "neither parked, running nor
/// finished" must hold for a while to mean gone.
pub(super) async fn wait_for_stored(durable: &Durable, token: &str, steps: Option<u32>) -> Stored {
    let mut neither = 0;
    let mut step = 0u32;
    let mut running = Running::No;
    while steps.is_none_or(|max| step < max) {
        step = step.saturating_add(1);
        if let Some(outcome) = durable.take_result(token).await {
            return Stored::Result(Box::new(outcome));
        }
        running = durable.running(token).await;
        match running {
            Running::Yes => neither = 0,
            Running::Abandoned => return Stored::Abandoned,
            // A store that cannot be read does not mean gone.
            Running::No
                if steps.is_none() && !matches!(durable.is_parked(token).await, Ok(false)) =>
            {
                neither = 0;
            }
            Running::No => {
                neither += 1;
                if neither > STORE_PATIENCE_STEPS {
                    break;
                }
            }
        }
        tokio::time::sleep(match steps {
            Some(_) => STORE_PATIENCE_STEP,
            None => PARKED_POLL,
        })
        .await;
    }
    match (running, durable.take_result(token).await) {
        (_, Some(outcome)) => Stored::Result(Box::new(outcome)),
        (Running::Yes, None) => Stored::Running,
        (_, None) => Stored::Gone,
    }
}

/// How long a retry naming a token the store does not know waits for it to appear there, in
/// steps: 2 s in all, longer than a node takes to save an eval that was just parked.
pub(super) const STORE_PATIENCE_STEPS: u32 = 20;
pub(super) const STORE_PATIENCE_STEP: std::time::Duration = std::time::Duration::from_millis(100);
/// How often a legacy request open on a parked eval looks for its result in the store (up to
/// three reads each time: a human's answer takes seconds, and the store serves every node).
const PARKED_POLL: std::time::Duration = std::time::Duration::from_millis(250);
/// How long a retry waits for the result of an eval resumed on another node, in steps: 25 s.
pub(super) const RESULT_PATIENCE_STEPS: u32 = 250;

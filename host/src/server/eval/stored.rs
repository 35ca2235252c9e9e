//! Waiting for the result of an eval in the durable store, resumed on some node.

use crate::server::finished::Finished;

use crate::server::durable::Durable;
use crate::server::durable::lease::Running;

/// How a wait for the result of an eval in the store ended.
pub(super) enum Stored {
    Result(Box<Finished>),
    /// Still running on some node when the patience ran out.
    Running,
    /// The node that resumed it stopped renewing its lease before it finished: it died, or
    /// stalls.
    Abandoned,
    /// The store cannot be read: nobody here can tell.
    Unreachable,
    /// Neither parked, running nor finished.
    Gone,
}

/// What a client is told when the node that resumed its eval stopped before the end.
pub(super) const ABANDONED: &str = "the node that resumed this eval has not renewed its hold on it for over 6 s: either it stopped, and then the tool calls it made until then were made once (its audit log has them) and the rest of the script will not run, or it stalls, and then it may still finish: retry with the same requestState later to get its result if it does; starting the script over would repeat the calls already made";

/// What a client is told when the store cannot be read while it waits for a result.
pub(super) const UNREACHABLE: &str = "the durable store cannot be reached, so this node cannot tell how this eval, resumed on another node, is doing: retry with the same requestState once the store is back (starting the script over would repeat its calls)";

/// Waits for the result of `token`'s eval in the store, for a request through `tool` by
/// `caller` (only the eval's owner gets it, see [`Durable::result`]): for `steps` of
/// [`STORE_PATIENCE_STEP`] at most, or, with `None`, for as long as the eval is parked or
/// running (a legacy request open on its eval, looking every [`PARKED_POLL`]). The node that takes a parked eval marks it
/// running just after; a wait racing it may look in between, so "neither parked, running nor
/// finished" must hold for a while to mean gone.
pub(super) async fn wait_for_stored(
    durable: &Durable,
    token: &str,
    asking: (&str, &str),
    steps: Option<u32>,
) -> Stored {
    let mut neither = 0;
    let mut step = 0u32;
    let mut running = Running::No;
    while steps.is_none_or(|max| step < max) {
        step = step.saturating_add(1);
        running = match durable.result(token, asking).await {
            Ok(Some(outcome)) => return Stored::Result(Box::new(outcome)),
            Ok(None) => durable.running(token).await,
            Err(_) => Running::Unknown,
        };
        match running {
            Running::Yes => neither = 0,
            Running::Abandoned => return Stored::Abandoned,
            // A legacy request open on its eval outlasts a store outage; a retry says so.
            Running::Unknown if steps.is_none() => neither = 0,
            Running::Unknown => return Stored::Unreachable,
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
    match (running, durable.result(token, asking).await) {
        (_, Ok(Some(outcome))) => Stored::Result(Box::new(outcome)),
        (_, Err(_)) => Stored::Unreachable,
        (Running::Yes, Ok(None)) => Stored::Running,
        (_, Ok(None)) => Stored::Gone,
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

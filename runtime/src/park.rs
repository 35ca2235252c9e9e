//! Asking a running eval to leave memory: [`ParkRequest`], [`EvalControl`], and the
//! [`HumanWait`] guard by which a tool call says it only waits for a human.
//!
//! An eval can be parked only between two turns of its guest (`cm_run`/`cm_resume` returned
//! PENDING, so the wasm stack is empty) and only when nothing would be lost by dropping the
//! calls in flight: every one of them holds a [`HumanWait`] (its embedder finds the wait again
//! through the wait's note) and no finished call waits to be delivered. A park request made at
//! another moment waits for such a moment; an eval that finishes first simply finishes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::clock::TimeoutPause;

/// Asks one eval — or, through [`ParkRequest::child`], many — to park as soon as it can.
///
/// Cheap to clone; clones share the request. A child is requested when its parent is (a
/// process that shuts down requests its root; a per-eval child can also be requested alone,
/// e.g. after the eval has waited for a while).
#[derive(Debug, Clone, Default)]
pub struct ParkRequest(CancellationToken);

impl ParkRequest {
    /// A request not yet made.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes the request: the evals watching it park at their next chance.
    pub fn request(&self) {
        self.0.cancel();
    }

    /// Whether the request was made (on this one or on a parent).
    pub fn is_requested(&self) -> bool {
        self.0.is_cancelled()
    }

    /// A request that is made when this one is, or on its own.
    pub fn child(&self) -> ParkRequest {
        ParkRequest(self.0.child_token())
    }

    pub(crate) async fn requested(&self) {
        self.0.cancelled().await;
    }
}

/// How an embedder steers an eval from outside: cancel it, or ask it to park.
/// The default does neither.
#[derive(Debug, Clone, Default)]
pub struct EvalControl {
    /// Ends the eval at once with [`crate::ErrorKind::Cancelled`] (see
    /// [`crate::Runtime::eval_cancellable`]).
    pub cancel: Option<CancellationToken>,
    /// Parks the eval as soon as every call in flight waits for a human
    /// ([`crate::CallContext::awaiting_human`]): it then ends as
    /// [`crate::EvalStep::Suspended`] and its sandbox slot is freed.
    pub park: Option<ParkRequest>,
}

impl EvalControl {
    /// No cancellation, no parking.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`EvalControl::cancel`].
    pub fn cancel(&mut self, token: CancellationToken) -> &mut Self {
        self.cancel = Some(token);
        self
    }

    /// Sets [`EvalControl::park`].
    pub fn park(&mut self, request: ParkRequest) -> &mut Self {
        self.park = Some(request);
        self
    }
}

/// The calls of one eval that wait for a human, with their notes.
#[derive(Debug, Default)]
pub(crate) struct HumanWaits {
    /// call id → (guards alive, the newest guard's note).
    calls: Mutex<HashMap<u64, (usize, Value)>>,
    /// Woken whenever a wait starts or ends, so that a parking eval re-checks.
    pub(crate) changed: Notify,
    /// Set just before the eval parks and drops its calls in flight, so that code running as
    /// they are dropped can tell a parked call from one whose eval ended.
    parked: std::sync::atomic::AtomicBool,
}

impl HumanWaits {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (usize, Value)>> {
        // Plain map updates: a panic elsewhere cannot leave it inconsistent.
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn start(&self, call_id: u64, note: Value) {
        {
            let mut calls = self.lock();
            let entry = calls.entry(call_id).or_insert((0, Value::Null));
            entry.0 += 1;
            entry.1 = note;
        }
        self.changed.notify_waiters();
    }

    fn end(&self, call_id: u64) {
        {
            let mut calls = self.lock();
            if let Some(entry) = calls.get_mut(&call_id) {
                entry.0 -= 1;
                if entry.0 == 0 {
                    calls.remove(&call_id);
                }
            }
        }
        self.changed.notify_waiters();
    }

    /// Marks the eval as parking (see [`crate::CallContext::is_parked`]).
    pub(crate) fn mark_parked(&self) {
        self.parked
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether the eval parked.
    pub(crate) fn is_parked(&self) -> bool {
        self.parked.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The notes of `call_ids` when every one of them waits for a human; `None` otherwise.
    pub(crate) fn notes_if_all(&self, call_ids: &[u64]) -> Option<Vec<Value>> {
        let calls = self.lock();
        call_ids
            .iter()
            .map(|id| calls.get(id).map(|(_, note)| note.clone()))
            .collect()
    }
}

/// Says that a tool call, while this guard lives, only waits for a human (an approval, an
/// answer): dropping the call would lose nothing that its note cannot find again.
///
/// Made by [`crate::CallContext::awaiting_human`]. While it lives the eval's wall-clock timeout
/// is paused (as with [`crate::CallContext::pause_timeout`]: a human's time is not the
/// script's), and the eval may be parked ([`EvalControl::park`]); parking drops the call's
/// future, and with it this guard.
#[derive(Debug)]
#[must_use = "the call stops counting as a human wait as soon as the guard is dropped"]
pub struct HumanWait {
    waits: Arc<HumanWaits>,
    call_id: u64,
    _pause: TimeoutPause,
}

impl HumanWait {
    pub(crate) fn new(
        waits: Arc<HumanWaits>,
        call_id: u64,
        note: Value,
        pause: TimeoutPause,
    ) -> Self {
        waits.start(call_id, note);
        HumanWait {
            waits,
            call_id,
            _pause: pause,
        }
    }
}

impl Drop for HumanWait {
    fn drop(&mut self) {
        self.waits.end(self.call_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::EvalClock;
    use serde_json::json;

    #[test]
    fn every_call_must_wait_for_a_human_and_the_newest_note_counts() {
        let waits = Arc::new(HumanWaits::default());
        let clock = Arc::new(EvalClock::new(None));
        let first = HumanWait::new(waits.clone(), 1, json!("a"), clock.pause());
        assert_eq!(waits.notes_if_all(&[1]), Some(vec![json!("a")]));
        assert_eq!(waits.notes_if_all(&[1, 2]), None);
        let second = HumanWait::new(waits.clone(), 2, json!("b"), clock.pause());
        let again = HumanWait::new(waits.clone(), 1, json!("c"), clock.pause());
        assert_eq!(
            waits.notes_if_all(&[1, 2]),
            Some(vec![json!("c"), json!("b")])
        );
        drop(again);
        assert_eq!(
            waits.notes_if_all(&[1, 2]),
            Some(vec![json!("c"), json!("b")])
        );
        drop(first);
        assert_eq!(waits.notes_if_all(&[1, 2]), None);
        assert!(clock.is_paused());
        drop(second);
        assert!(!clock.is_paused());
        assert_eq!(waits.notes_if_all(&[]), Some(vec![]));
    }

    #[test]
    fn a_child_request_follows_its_parent() {
        let root = ParkRequest::new();
        let child = root.child();
        let alone = root.child();
        alone.request();
        assert!(alone.is_requested() && !root.is_requested() && !child.is_requested());
        root.request();
        assert!(child.is_requested());
    }
}

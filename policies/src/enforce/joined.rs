//! Identical asks joined: while an ask is pending, a further call with the same caller,
//! profile, tool and arguments (their canonical JSON's hash) joins it instead of prompting
//! again, and the one answer applies to each call that waits on it.
//!
//! Only live asks are joined: a call made again after its eval was parked asks (or finds its
//! parked answer) on its own, so a decision kept for a parked eval is never taken by another.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared, WeakShared};
use serde_json::Value;
use tokio::sync::watch;

use crate::audit::args_sha256;
use crate::{ApprovalAnswer, Caller};

/// The prompt every joined call waits on: the answer, or `None` when the channel gave none
/// (the approval timeout around it decides).
pub(super) type SharedPrompt = Shared<BoxFuture<'static, Option<ApprovalAnswer>>>;

/// What identifies identical asks: the policy host and eval, the caller (name and
/// permissions), the profile, the tool and the hash of the arguments' canonical JSON.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct JoinKey {
    /// Calls of one eval only: an eval waiting on another eval's prompt could not tell its own
    /// client (no input-required result, no elicitation of its own), so it would wait unseen
    /// on a question its client never sees — and that may be abandoned. The runtime's eval id
    /// alone does not say which eval: one resumed from another process keeps the id it was
    /// given there, which an eval of this process may hold too. So the key also names the
    /// policy host ([`JoinScope`]), of which each eval has its own.
    host: u64,
    eval: u64,
    caller: String,
    permissions: Vec<String>,
    profile: String,
    tool: String,
    args_sha256: String,
}

/// Which policy host's calls may join each other's asks: unique in the process.
#[derive(Debug, Clone, Copy)]
pub(super) struct JoinScope(u64);

impl JoinScope {
    /// A scope no other host of this process has.
    pub(super) fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        JoinScope(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl JoinKey {
    pub(super) fn new(
        scope: JoinScope,
        eval: codemode_runtime::EvalId,
        caller: &Caller,
        profile: &str,
        tool: &str,
        args: &Value,
    ) -> Self {
        JoinKey {
            host: scope.0,
            eval: eval.0,
            caller: caller.name.clone(),
            permissions: caller.permissions.iter().cloned().collect(),
            profile: profile.to_string(),
            tool: tool.to_string(),
            args_sha256: args_sha256(args),
        }
    }
}

/// A published prompt: the id of its approval request, and a handle that does not keep it
/// alive (the prompt is withdrawn when the last call waiting on it leaves).
type Published = Option<(
    String,
    WeakShared<BoxFuture<'static, Option<ApprovalAnswer>>>,
)>;

/// The asks pending now, by [`JoinKey`]. Share one across the evals whose identical asks
/// should be joined (a server shares one across all its evals; the keys hold the caller).
/// Default for a [`super::PolicyToolHost`]: one of its own (the calls of its eval).
#[derive(Clone, Default)]
pub struct PendingAsks {
    asks: Arc<Mutex<HashMap<JoinKey, watch::Receiver<Published>>>>,
    joined: Arc<AtomicU64>,
}

impl std::fmt::Debug for PendingAsks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingAsks")
            .field("keys", &lock(&self.asks).len())
            .finish()
    }
}

/// What a call does about its ask.
pub(super) enum Role {
    /// Nobody asks about the same call: this one asks, and publishes its prompt for others
    /// ([`Leading::publish`]). Dropped unpublished, the calls waiting on it ask on their own.
    Lead(Leading),
    /// Wait on the pending prompt of another call (the id of its request).
    Join { id: String, prompt: SharedPrompt },
}

/// The right, and the duty, to publish the prompt of an ask that others may join.
pub(super) struct Leading(watch::Sender<Published>);

impl Leading {
    /// Makes `prompt` (of request `id`) the one identical calls join, for as long as some
    /// call waits on it.
    pub(super) fn publish(self, id: &str, prompt: &SharedPrompt) {
        let Some(weak) = prompt.downgrade() else {
            return; // Already answered: nothing left to join.
        };
        // Joiners hold receivers until they see it; none left is no error.
        let _ = self.0.send(Some((id.to_string(), weak)));
    }
}

impl PendingAsks {
    /// How many calls have joined an identical pending ask so far.
    pub fn joined(&self) -> u64 {
        self.joined.load(Ordering::Acquire)
    }

    fn join(&self, id: String, prompt: SharedPrompt) -> Role {
        self.joined.fetch_add(1, Ordering::AcqRel);
        Role::Join { id, prompt }
    }

    /// Joins the pending prompt of an identical call, waiting for one being formed; or, when
    /// there is none, leads (the caller asks).
    pub(super) async fn join_or_lead(&self, key: JoinKey) -> Role {
        loop {
            let mut forming = {
                let mut asks = lock(&self.asks);
                match asks.get(&key).map(entry_state) {
                    Some(State::Live(id, prompt)) => return self.join(id, prompt),
                    Some(State::Forming(rx)) => rx,
                    Some(State::Gone) | None => {
                        asks.retain(|_, rx| !matches!(entry_state(rx), State::Gone));
                        let (tx, rx) = watch::channel(None);
                        asks.insert(key, rx);
                        return Role::Lead(Leading(tx));
                    }
                }
            };
            // Published: join it (or, answered already, look again); the leader left without
            // a prompt (decided otherwise, or ended): look again, and maybe lead.
            let published = forming
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|p| p.clone());
            if let Some((id, weak)) = published
                && let Some(prompt) = weak.upgrade()
            {
                return self.join(id, prompt);
            }
        }
    }
}

enum State {
    Live(String, SharedPrompt),
    Forming(watch::Receiver<Published>),
    Gone,
}

fn entry_state(rx: &watch::Receiver<Published>) -> State {
    let published = rx.borrow().clone();
    match published {
        Some((id, weak)) => match weak.upgrade() {
            Some(prompt) => State::Live(id, prompt),
            None => State::Gone,
        },
        None if rx.has_changed().is_ok() => State::Forming(rx.clone()),
        None => State::Gone,
    }
}

/// The prompt of `ask` through `asker`, shareable by the calls that join it.
pub(super) fn shared_prompt(asker: Arc<dyn crate::Asker>, ask: crate::Ask) -> SharedPrompt {
    async move { crate::approval_of(&asker.ask(ask).await) }
        .boxed()
        .shared()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A map of plain keys and channel ends: a panic cannot leave it inconsistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

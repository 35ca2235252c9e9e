//! Identical asks joined: while an ask is pending, a further call with the same caller,
//! profile, tool and arguments (their canonical JSON's hash) joins it instead of prompting
//! again, and the one answer applies to each call that waits on it.
//!
//! Only live asks are joined: a call made again after its eval was parked asks (or finds its
//! parked answer) on its own, so a decision kept for a parked eval is never taken by another.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

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

/// A prompt's answer once it came, kept for the calls that waited for the prompt to go up:
/// one woken by its publication may first run after the answer came and the last handle was
/// dropped (an answer given within one scheduling step of the prompt going up).
type Answered = Arc<OnceLock<Option<ApprovalAnswer>>>;

/// The prompt an asking call makes: shared by the calls that join it, its answer kept in
/// `answered` as it comes.
pub(super) struct Prompt {
    pub(super) shared: SharedPrompt,
    answered: Answered,
}

/// A published prompt: the id of its approval request, a handle that does not keep it alive
/// (the prompt is withdrawn when the last call waiting on it leaves), and its answer once
/// given.
type Published = Option<(
    String,
    WeakShared<BoxFuture<'static, Option<ApprovalAnswer>>>,
    Answered,
)>;

/// The asks pending now, by `JoinKey`. Share one across the evals whose identical asks
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
    pub(super) fn publish(self, id: &str, prompt: &Prompt) {
        let Some(weak) = prompt.shared.downgrade() else {
            return; // Already answered: nothing left to join.
        };
        // Joiners hold receivers until they see it; none left is no error.
        let _ = self
            .0
            .send(Some((id.to_string(), weak, prompt.answered.clone())));
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
            // Published: join it — or, answered and dropped before this call ran again, take
            // its answer (this call waited while it was pending). The leader left without a
            // prompt (decided otherwise, or ended), or its prompt was withdrawn unanswered:
            // look again, and maybe lead.
            let published = forming
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|p| p.clone());
            if let Some((id, weak, answered)) = published {
                if let Some(prompt) = weak.upgrade() {
                    return self.join(id, prompt);
                }
                if let Some(answer) = answered.get() {
                    let prompt = futures::future::ready(answer.clone()).boxed().shared();
                    return self.join(id, prompt);
                }
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
        Some((id, weak, _)) => match weak.upgrade() {
            Some(prompt) => State::Live(id, prompt),
            None => State::Gone,
        },
        None if rx.has_changed().is_ok() => State::Forming(rx.clone()),
        None => State::Gone,
    }
}

/// The prompt of `ask` through `asker`, shareable by the calls that join it.
pub(super) fn shared_prompt(asker: Arc<dyn crate::Asker>, ask: crate::Ask) -> Prompt {
    prompt_of(async move { ApprovalAnswer::from_reply(&asker.ask(ask).await) }.boxed())
}

/// `answer` as a [`Prompt`], its outcome kept as it comes.
fn prompt_of(answer: BoxFuture<'static, Option<ApprovalAnswer>>) -> Prompt {
    let answered = Answered::default();
    let keep = answered.clone();
    let shared = async move {
        let answer = answer.await;
        // Set once: the shared future runs once.
        let _ = keep.set(answer.clone());
        answer
    }
    .boxed()
    .shared();
    Prompt { shared, answered }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A map of plain keys and channel ends: a panic cannot leave it inconsistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ApprovalDecision, Channel};

    fn key() -> JoinKey {
        JoinKey {
            host: 1,
            eval: 1,
            caller: "local".into(),
            permissions: Vec::new(),
            profile: "gate".into(),
            tool: "fs__write".into(),
            args_sha256: args_sha256(&serde_json::json!({"path": "/x"})),
        }
    }

    fn declined() -> Option<ApprovalAnswer> {
        Some(ApprovalAnswer::new(
            ApprovalDecision::Decline,
            Channel::Terminal,
        ))
    }

    async fn lead(asks: &PendingAsks) -> Leading {
        match asks.join_or_lead(key()).await {
            Role::Lead(leading) => leading,
            Role::Join { id, .. } => panic!("joined {id} with nobody asking"),
        }
    }

    #[tokio::test]
    async fn a_call_waiting_for_the_prompt_takes_an_answer_given_before_it_ran_again() {
        let asks = PendingAsks::default();
        let leading = lead(&asks).await;
        let waiting = asks.join_or_lead(key());
        tokio::pin!(waiting);
        assert!(futures::poll!(waiting.as_mut()).is_pending(), "waits");
        // The prompt goes up, is answered at once, and its last handle is dropped, all before
        // the waiting call runs again.
        let prompt = prompt_of(futures::future::ready(declined()).boxed());
        leading.publish("r1", &prompt);
        assert_eq!(prompt.shared.await, declined());
        match waiting.await {
            Role::Join { id, prompt } => {
                assert_eq!((id.as_str(), prompt.await), ("r1", declined()));
            }
            Role::Lead(_) => panic!("asked again about a call its human answered"),
        }
        assert_eq!(asks.joined(), 1);
        // A call made after the answer was not waiting on it: it asks.
        lead(&asks).await;
    }

    #[tokio::test]
    async fn a_call_waiting_for_a_prompt_withdrawn_unanswered_asks_on_its_own() {
        let asks = PendingAsks::default();
        let leading = lead(&asks).await;
        let waiting = asks.join_or_lead(key());
        tokio::pin!(waiting);
        assert!(futures::poll!(waiting.as_mut()).is_pending(), "waits");
        let prompt = prompt_of(futures::future::pending().boxed());
        leading.publish("r1", &prompt);
        drop(prompt); // The leading call left (its eval ended) before anyone answered.
        assert!(matches!(waiting.await, Role::Lead(_)), "asks on its own");
        assert_eq!(asks.joined(), 0);
    }
}

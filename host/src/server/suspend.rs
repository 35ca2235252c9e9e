//! Evals suspended for clients on protocol 2026-07-28, which forbids server→client requests:
//! a question becomes an *input-required* result of the eval's `tools/call`, the client answers
//! by retrying the call with `inputResponses` and the `requestState` it was given, and the eval —
//! still alive in its sandbox, suspended inside its tool call — resumes with the answer.
//!
//! The `requestState` is a random 128-bit token naming a server-side entry: nothing in it can be
//! forged or replayed into another eval, and every HTTP retry (a separate stateless POST) finds
//! the eval through it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode_config::RetentionLimits;
use codemode_policies::Channel;
use codemode_runtime::BoxFuture;
use rmcp::model::{ElicitRequest, InputRequest, InputRequests, InputResponses};
use serde_json::Value;
use tokio::sync::{Notify, oneshot};

use crate::approvals::elicitation::from_elicit_result;
use crate::approvals::terminal::choices;
use crate::approvals::{Answer, Ask, AskKind, Asker, Question, Reply, chosen_option};
use crate::server::finished::Finished;
use crate::server::owner::Owner;

mod model;

/// A finished eval whose outcome nobody fetched is forgotten after this long.
const UNCLAIMED_TTL: Duration = Duration::from_secs(600);

/// How many tokens of dropped results are remembered, to tell a late fetch what happened.
const DROPPED_REMEMBERED: usize = 1024;

/// All suspended evals of a server (shared by every session and request).
#[derive(Default)]
pub(crate) struct Suspensions {
    map: Mutex<HashMap<String, Arc<Suspended>>>,
    retained: Mutex<Retained>,
}

/// Finished results not fetched yet, oldest first, with their size as JSON; and the tokens of
/// the last results dropped unfetched.
#[derive(Default)]
struct Retained {
    finished: VecDeque<(String, u64)>,
    bytes: u64,
    dropped: VecDeque<String>,
}

impl Suspensions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Suspended>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a new eval for `tool` and returns its entry, with the registering request's
    /// claim on the outcome: hold it until the request waits in [`Suspended::next_event`] (a
    /// request dropped before it ever waited lets go of its claim by dropping it).
    pub fn register(&self, tool: &str, caller: &str) -> (Arc<Suspended>, CreatorClaim) {
        self.register_as(random_token(), tool, caller)
    }

    /// [`register`](Self::register) under an existing `requestState` (an eval resumed from
    /// the durable store keeps its client's token).
    pub(crate) fn register_as(
        &self,
        token: String,
        tool: &str,
        caller: &str,
    ) -> (Arc<Suspended>, CreatorClaim) {
        let entry = Arc::new(Suspended {
            token: token.clone(),
            owner: Owner::new(tool, caller),
            state: Mutex::new(State {
                waiters: 1,
                creator_pending: true,
                ..State::default()
            }),
            changed: Notify::new(),
            cancel: Mutex::new(None),
        });
        let expired: Vec<String> = {
            let mut map = self.lock();
            let expired = map
                .iter()
                .filter(|(_, e)| e.expired())
                .map(|(t, _)| t.clone())
                .collect();
            map.insert(token, entry.clone());
            expired
        };
        for token in expired {
            self.remove(&token);
        }
        let claim = CreatorClaim(entry.clone());
        (entry, claim)
    }

    /// The entry named by a client's `requestState`.
    pub fn get(&self, token: &str) -> Option<Arc<Suspended>> {
        self.lock().get(token).cloned()
    }

    /// Forgets an entry (its outcome was delivered, or the request was cancelled).
    pub fn remove(&self, token: &str) {
        self.lock().remove(token);
        let mut retained = self.retained();
        if let Some(i) = retained.finished.iter().position(|(t, _)| t == token)
            && let Some((_, size)) = retained.finished.remove(i)
        {
            retained.bytes -= size;
        }
    }

    /// Forgets a parked entry, unless its token names another entry by now (a resume of the
    /// eval on this node registers one under the same token).
    pub(crate) fn remove_entry(&self, entry: &Arc<Suspended>) {
        let mut map = self.lock();
        if map
            .get(entry.token())
            .is_some_and(|e| Arc::ptr_eq(e, entry))
        {
            map.remove(entry.token());
        }
    }

    fn retained(&self) -> std::sync::MutexGuard<'_, Retained> {
        self.retained.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by an eval's task when it ends: keeps its outcome for the client's next retry,
    /// within `limits`: past either bound the oldest unfetched results are dropped (a later
    /// fetch of one is told so, see [`Suspensions::was_dropped`]).
    pub fn complete(
        &self,
        entry: &Suspended,
        outcome: impl Into<Finished>,
        limits: RetentionLimits,
    ) {
        let outcome: Finished = outcome.into();
        let size = serde_json::to_vec(&outcome).map_or(0, |v| v.len() as u64);
        let mut evicted = Vec::new();
        {
            let mut retained = self.retained();
            retained.finished.push_back((entry.token.clone(), size));
            retained.bytes += size;
            // Only results nobody is waiting for can be dropped: a request waiting on its
            // eval takes the outcome as soon as it runs, and under load many evals finish
            // before their requests get a turn (200 clients: 130 requests were never answered
            // when those outcomes counted). The result just finished is always kept.
            let map = self.lock();
            while retained.finished.len() > limits.max_count || retained.bytes > limits.max_bytes {
                let droppable = retained
                    .finished
                    .iter()
                    .take(retained.finished.len() - 1)
                    .position(|(token, _)| !map.get(token).is_some_and(|entry| entry.is_awaited()));
                let Some((token, size)) = droppable.and_then(|i| retained.finished.remove(i))
                else {
                    break;
                };
                retained.bytes -= size;
                if retained.dropped.len() == DROPPED_REMEMBERED {
                    retained.dropped.pop_front();
                }
                retained.dropped.push_back(token.clone());
                evicted.push(token);
            }
            drop(map);
        }
        entry.complete(outcome);
        let mut map = self.lock();
        for token in evicted {
            if let Some(dropped) = map.remove(&token) {
                dropped.forget_outcome();
            }
        }
    }

    /// Whether `token` named a result dropped unfetched (among the last 1024 dropped).
    pub(crate) fn was_dropped(&self, token: &str) -> bool {
        self.retained().dropped.iter().any(|t| t == token)
    }

    /// `(results, bytes)` finished and not fetched yet.
    #[cfg(test)]
    pub fn unfetched(&self) -> (usize, u64) {
        let retained = self.retained();
        (retained.finished.len(), retained.bytes)
    }
}

/// Whether `text` has the form of a `requestState` this server makes (32 lowercase hex
/// digits): anything else is not looked up anywhere, the store included.
pub(crate) fn is_token(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A new, unguessable `requestState`.
pub(super) fn random_token() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: fall back to time and address entropy hashed (still unguessable in
        // practice, and tokens are only valid while their eval lives).
        use sha2::Digest;
        let seed = format!("{:?}{:p}", Instant::now(), &bytes);
        bytes.copy_from_slice(&sha2::Sha256::digest(seed.as_bytes())[..16]);
    }
    codemode_store::hex(&bytes)
}

#[derive(Default)]
struct State {
    pending: BTreeMap<String, Pending>,
    /// Upstreams' sampling requests for the client's model ([`model`]): each input request, and
    /// where the client's response goes.
    messages: BTreeMap<String, (InputRequest, oneshot::Sender<Value>)>,
    outcome: Option<Finished>,
    finished_at: Option<Instant>,
    /// Requests waiting for this eval now: the request that registered it counts from the
    /// start (its eval may finish before it first waits), retries while in
    /// [`Suspended::next_event`].
    waiters: usize,
    /// Whether the registering request has not started waiting yet.
    creator_pending: bool,
    /// Set when the eval was parked in the durable store: the questions it waits on, asked
    /// again of every request that waits here (the retry that answers goes through the store).
    parked: Option<Vec<(String, Question)>>,
}

struct Pending {
    question: Question,
    reply: oneshot::Sender<Answer>,
    /// A question step's form field and options: an answer must name one of them.
    options: Option<(String, Vec<String>)>,
}

/// One eval of a 2026-07-28 client.
pub struct Suspended {
    token: String,
    /// The eval tool called and who started the eval: only they may answer it or fetch its
    /// result.
    owner: Owner,
    state: Mutex<State>,
    changed: Notify,
    cancel: Mutex<Option<codemode_runtime::CancellationToken>>,
}

/// The registering request's claim on an eval's outcome (see [`Suspensions::register`]).
pub(crate) struct CreatorClaim(Arc<Suspended>);

impl Drop for CreatorClaim {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        if std::mem::take(&mut state.creator_pending) {
            state.waiters -= 1;
        }
    }
}

/// What a waiting request handler should return.
pub enum Event {
    /// The eval finished.
    Complete(Box<Finished>),
    /// The eval waits on these questions: return them as an input-required result.
    Input(InputRequests),
    /// The eval was saved to the durable store, waiting on these questions: a retry answering
    /// one of them goes through the store.
    Parked(InputRequests),
}

impl Suspended {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn expired(&self) -> bool {
        self.lock()
            .finished_at
            .is_some_and(|t| t.elapsed() > UNCLAIMED_TTL)
    }

    /// The token given to the client as `requestState`.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The eval tool the client called (a retry must name the same one).
    pub fn tool(&self) -> &str {
        &self.owner.tool
    }

    /// Whose the eval is: only they may answer it or fetch its result.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// Keeps the eval's cancellation, so that the client's cancellation can stop it.
    pub(crate) fn set_cancel(&self, cancel: codemode_runtime::CancellationToken) {
        *self.cancel.lock().unwrap_or_else(|e| e.into_inner()) = Some(cancel);
    }

    /// Stops the eval (the client cancelled): its sandbox is dropped at once.
    pub fn abort(&self) {
        if let Some(cancel) = self.cancel.lock().unwrap_or_else(|e| e.into_inner()).take() {
            cancel.cancel();
        }
    }

    /// Drops a finished outcome nobody fetched (see [`Suspensions::complete`]).
    fn forget_outcome(&self) {
        self.lock().outcome = None;
    }

    /// Records the eval's outcome and wakes a waiting request.
    fn complete(&self, outcome: Finished) {
        {
            let mut state = self.lock();
            state.outcome = Some(outcome);
            state.finished_at = Some(Instant::now());
        }
        self.changed.notify_waiters();
    }

    /// The eval was saved to the durable store, waiting on `questions`: requests waiting here
    /// are answered with them, and a retry goes through the store.
    pub fn park(&self, questions: Vec<(String, Question)>) {
        {
            let mut state = self.lock();
            state.parked = Some(questions);
            // Forgotten here like an unfetched result: the eval lives on in the store.
            state.finished_at = Some(Instant::now());
        }
        self.changed.notify_waiters();
    }

    /// Whether the eval was saved to the durable store ([`Suspended::park`]).
    pub fn is_parked(&self) -> bool {
        self.lock().parked.is_some()
    }

    /// Whether a request is waiting for this eval's next event now.
    pub(crate) fn is_awaited(&self) -> bool {
        self.lock().waiters > 0
    }

    /// Waits until the eval finishes or has questions nobody answered yet.
    pub async fn next_event(&self) -> Event {
        struct Waiting<'a>(&'a Suspended);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.lock().waiters -= 1;
            }
        }
        {
            let mut state = self.lock();
            if std::mem::take(&mut state.creator_pending) {
                // The registering request's count, held since `register`.
            } else {
                state.waiters += 1;
            }
        }
        let _waiting = Waiting(self);
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                // Every request waiting gets it (two retries can wait at once): cloned while others
                // wait, taken by the last one. The request given it removes the entry.
                let outcome = match state.waiters {
                    0 | 1 => state.outcome.take(),
                    _ => state.outcome.clone(),
                };
                if let Some(outcome) = outcome {
                    return Event::Complete(Box::new(outcome));
                }
                if let Some(parked) = &state.parked {
                    return Event::Parked(input_requests(parked.iter().map(|(k, q)| (k, q))));
                }
                if !state.pending.is_empty() || !state.messages.is_empty() {
                    let mut requests =
                        input_requests(state.pending.iter().map(|(k, p)| (k, &p.question)));
                    for (key, (request, _)) in &state.messages {
                        requests.insert(key.clone(), request.clone());
                    }
                    return Event::Input(requests);
                }
            }
            notified.await;
        }
    }

    /// Delivers a retry's answers to the questions they name. An answer naming no pending
    /// question (not asked yet, already answered or withdrawn) is refused: it is not kept for
    /// later, and its key is returned.
    pub fn answer(&self, responses: &InputResponses) -> Vec<String> {
        let mut delivered = Vec::new();
        let mut messages = Vec::new();
        let mut refused = Vec::new();
        {
            let mut state = self.lock();
            for (key, response) in responses {
                if let Some(pending) = state.pending.remove(key) {
                    delivered.push((pending.reply, parse_response(response)));
                } else if let Some((_, reply)) = state.messages.remove(key) {
                    messages.push((reply, response.clone()));
                } else {
                    refused.push(key.clone());
                }
            }
        }
        for (reply, answer) in delivered {
            let _ = reply.send(answer);
        }
        for (reply, response) in messages {
            let _ = reply.send(response);
        }
        refused
    }

    /// Checks a retry's answers to the question steps they name (`hitl_request`: one of the
    /// options), before any is delivered.
    ///
    /// # Errors
    /// [`RefusedAnswer`] for the first answer that does not fit its step; the steps stay open.
    pub fn check(&self, responses: &InputResponses) -> Result<(), RefusedAnswer> {
        let state = self.lock();
        for (key, response) in responses {
            let Some((field, options)) = state.pending.get(key).and_then(|p| p.options.as_ref())
            else {
                continue;
            };
            let options: Vec<&str> = options.iter().map(String::as_str).collect();
            chosen_option(field, &options, &parse_response(response))
                .map_err(|why| RefusedAnswer::new(key, why))?;
        }
        Ok(())
    }

    /// An [`Asker`] whose questions become input-required results of this eval's request.
    pub fn asker(self: &Arc<Self>) -> SuspendedAsker {
        SuspendedAsker {
            suspended: self.clone(),
        }
    }
}

/// The input requests of an input-required result, one per question.
fn input_requests<'a>(
    questions: impl Iterator<Item = (&'a String, &'a Question)>,
) -> InputRequests {
    let mut requests = InputRequests::new();
    for (key, question) in questions {
        if let Ok(params) = crate::approvals::elicitation::form_params(question) {
            requests.insert(
                key.clone(),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            );
        }
    }
    requests
}

/// A client's answer that does not fit the question it answers (not one of its options): what
/// the client is told, naming the question's key; the question stays open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the answer to `{key}` was refused: {why}; the question is still open: retry with the same requestState and one of the options"
)]
pub struct RefusedAnswer {
    /// The question's key in the input-required result.
    pub key: String,
    /// Why the answer does not fit.
    pub why: String,
}

impl RefusedAnswer {
    /// The answer to `key` refused for `why`.
    pub fn new(key: &str, why: impl Into<String>) -> Self {
        RefusedAnswer {
            key: key.to_string(),
            why: why.into(),
        }
    }
}

/// `{"action": "accept", "content": {…}}` (an `ElicitResult`) → [`Answer`].
pub(crate) fn parse_response(response: &Value) -> Answer {
    match serde_json::from_value::<rmcp::model::ElicitResult>(response.clone()) {
        Ok(result) => from_elicit_result(result.action, result.content),
        Err(e) => Answer::Failed(format!(
            "the client's answer is not an elicitation result: {e}"
        )),
    }
}

/// See [`Suspended::asker`].
pub(crate) struct SuspendedAsker {
    suspended: Arc<Suspended>,
}

impl Asker for SuspendedAsker {
    fn supports(&self) -> bool {
        true
    }

    fn channel(&self) -> Channel {
        Channel::Elicitation
    }

    fn ask(&self, ask: Ask) -> BoxFuture<'_, Reply> {
        let (key, options) = match &ask.kind {
            // A random key per question: a client cannot answer a question before it is asked
            // (an answer naming any other key is refused).
            AskKind::Form => (format!("codemode-{}", random_token()), None),
            // An approval's key carries its random 128-bit id: as unguessable, and the same
            // when the question is asked again after the eval was parked and resumed.
            AskKind::Approval(_) => (ask.key(), None),
            // As an approval's key; its answers are checked against the step's options.
            AskKind::Choice => (ask.key(), string_choices(&ask.question)),
        };
        Box::pin(async move {
            let answer = self
                .ask_checked(key, ask.question, ask.timeout, options)
                .await;
            Reply::new(answer, Channel::Elicitation)
        })
    }
}

/// The form field of `question` with a fixed set of choices, and the choices, when all are
/// strings.
fn string_choices(question: &Question) -> Option<(String, Vec<String>)> {
    let (field, options) = choices(question)?;
    let options = options
        .into_iter()
        .map(|(v, _)| v.as_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()?;
    Some((field, options))
}

impl SuspendedAsker {
    async fn ask_checked(
        &self,
        key: String,
        question: Question,
        timeout: Duration,
        options: Option<(String, Vec<String>)>,
    ) -> Answer {
        {
            let (reply, answer) = oneshot::channel();
            let key = {
                let mut state = self.suspended.lock();
                state.pending.insert(
                    key.clone(),
                    Pending {
                        question,
                        reply,
                        options,
                    },
                );
                key
            };
            self.suspended.changed.notify_waiters();
            // Withdraw the question however this ends (answered, timed out, or dropped).
            let _withdraw = Withdraw {
                suspended: &self.suspended,
                key: &key,
                from: |state, key| drop(state.pending.remove(key)),
            };
            match tokio::time::timeout(timeout, answer).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => Answer::Failed("the question was withdrawn".into()),
                Err(_) => Answer::Timeout,
            }
        }
    }
}

/// Takes back what an eval asked under `key` however its asking ends (answered, timed out, or
/// dropped), so that no later input-required result carries it: a question from `pending`, a
/// sampling request from `messages`.
struct Withdraw<'a> {
    suspended: &'a Suspended,
    key: &'a str,
    from: fn(&mut State, &str),
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        (self.from)(&mut self.suspended.lock(), self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Suspended {
        /// How many requests wait for this eval's next event now (the tests' synchronisation).
        pub(crate) fn waiting(&self) -> usize {
            self.lock().waiters
        }
    }
    use serde_json::json;

    fn responses(pairs: &[(&str, Value)]) -> InputResponses {
        serde_json::from_value(Value::Object(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        ))
        .expect("input responses")
    }

    fn pending_keys(s: &Suspended) -> Vec<String> {
        s.lock().pending.keys().cloned().collect()
    }

    fn is_random_key(key: &str) -> bool {
        key.strip_prefix("codemode-")
            .is_some_and(|hex| hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()))
    }

    fn outcome(result: Value) -> codemode_runtime::EvalOutcome {
        codemode_runtime::EvalOutcome {
            ok: true,
            result,
            error: None,
            warnings: Vec::new(),
            logs: Vec::new(),
            tool_calls: Vec::new(),
            stats: Default::default(),
        }
    }

    /// Red team (issue 17): finished results nobody fetched were kept 600 s whatever their
    /// number and size (300 results of 0.9 MB took RSS from 140 to 466 MB). Now at most
    /// `maxCount` results and `maxBytes` bytes are kept, the oldest dropped first, and a fetch
    /// of a dropped result is told so.
    #[tokio::test]
    async fn unfetched_results_are_bounded_and_the_oldest_dropped_first() {
        let suspensions = Suspensions::default();
        let limits = RetentionLimits {
            max_count: 3,
            max_bytes: 1 << 20,
        };
        let entries: Vec<Arc<Suspended>> = (0..5)
            .map(|_| suspensions.register("eval", "local").0)
            .collect();
        for (i, e) in entries.iter().enumerate() {
            suspensions.complete(e, outcome(json!(i)), limits);
        }
        let kept: Vec<bool> = entries
            .iter()
            .map(|e| suspensions.get(e.token()).is_some())
            .collect();
        assert_eq!(kept, [false, false, true, true, true]);
        let dropped: Vec<bool> = entries
            .iter()
            .map(|e| suspensions.was_dropped(e.token()))
            .collect();
        assert_eq!(dropped, [true, true, false, false, false]);
        assert_eq!(suspensions.unfetched().0, 3);
        // A fetched result no longer counts.
        let Event::Complete(o) = entries[2].next_event().await else {
            panic!("expected the outcome")
        };
        assert_eq!(o.result, json!(2));
        suspensions.remove(entries[2].token());
        assert_eq!(suspensions.unfetched().0, 2);

        // The byte bound: two results of ~600 KB do not fit in 1 MiB together.
        let big = |n: usize| outcome(json!("x".repeat(n)));
        let a = suspensions.register("eval", "local").0;
        let b = suspensions.register("eval", "local").0;
        suspensions.complete(&a, big(600_000), limits);
        suspensions.complete(&b, big(600_000), limits);
        assert!(suspensions.was_dropped(a.token()));
        assert!(suspensions.get(b.token()).is_some());
        let (count, bytes) = suspensions.unfetched();
        assert_eq!(count, 1, "only the newest big result is kept");
        assert!(bytes <= limits.max_bytes, "{bytes}");
    }

    /// Load test (200 clients): evals finishing faster than their requests got a turn counted as
    /// unfetched, the oldest were dropped, and 130 requests waited forever. A result whose
    /// request has not let go of it — registered and not yet waiting, or waiting now — is never
    /// dropped; the bound applies to the others.
    #[tokio::test]
    async fn a_result_its_request_waits_for_is_never_dropped() {
        let suspensions = Suspensions::default();
        let limits = RetentionLimits {
            max_count: 2,
            max_bytes: 1 << 20,
        };
        // Four requests still hold their claims (their handlers have not waited yet).
        let claimed: Vec<_> = (0..4)
            .map(|_| suspensions.register("eval", "local"))
            .collect();
        for (i, (entry, _)) in claimed.iter().enumerate() {
            suspensions.complete(entry, outcome(json!(i)), limits);
        }
        assert_eq!(
            suspensions.unfetched().0,
            4,
            "over the bound, but every one is awaited"
        );
        // A retry waiting in `next_event` holds it too: an entry whose creator let go, awaited
        // by a request that waits before the eval finishes.
        let (retried, claim) = suspensions.register("eval", "local");
        drop(claim);
        let waiter = tokio::spawn({
            let retried = retried.clone();
            async move { retried.next_event().await }
        });
        while !retried.is_awaited() {
            tokio::task::yield_now().await;
        }
        suspensions.complete(&retried, outcome(json!("retried")), limits);
        let Event::Complete(o) = waiter.await.unwrap() else {
            panic!("expected the outcome")
        };
        assert_eq!(o.result, json!("retried"));
        for (i, (entry, claim)) in claimed.into_iter().enumerate() {
            let Event::Complete(o) = entry.next_event().await else {
                panic!("expected the outcome")
            };
            assert_eq!(o.result, json!(i));
            drop(claim);
            suspensions.remove(entry.token());
        }
        // Unclaimed results are bounded again: of three nobody waits for, the oldest goes.
        suspensions.remove(retried.token());
        let free: Vec<_> = (0..3)
            .map(|_| suspensions.register("eval", "local").0)
            .collect();
        for e in &free {
            suspensions.complete(e, outcome(json!(null)), limits);
        }
        let dropped: Vec<bool> = free
            .iter()
            .map(|e| suspensions.was_dropped(e.token()))
            .collect();
        assert_eq!(dropped, [true, false, false]);
    }

    #[tokio::test]
    async fn question_keys_are_random_and_an_early_answer_is_refused() {
        let suspensions = Suspensions::default();
        let (s, _claim) = suspensions.register("eval", "local");
        let question = || Question {
            message: "Approve?".into(),
            schema: json!({"type": "object", "properties": {}})
                .as_object()
                .cloned()
                .unwrap(),
        };
        let accept = json!({"action": "accept", "content": {}});
        let first = tokio::spawn({
            let asker = s.asker();
            async move {
                let ask = Ask::form(question(), Duration::from_secs(60));
                asker.ask(ask).await.answer
            }
        });
        let Event::Input(_) = s.next_event().await else {
            panic!("expected a question")
        };
        let keys = pending_keys(&s);
        assert_eq!(keys.len(), 1);
        assert!(is_random_key(&keys[0]), "{keys:?}");
        // Answers for questions not asked yet (the old sequential names, a guess) are refused
        // and not kept: the next question does not find them.
        let early = [
            "codemode-00000000000000000000000000000002",
            "codemode-1",
            "codemode-2",
        ];
        let refused = s.answer(&responses(
            &early
                .iter()
                .map(|k| (*k, accept.clone()))
                .collect::<Vec<_>>(),
        ));
        assert_eq!(refused, early);
        assert_eq!(
            pending_keys(&s),
            keys,
            "the asked question is still pending"
        );
        assert!(
            s.answer(&responses(&[(&keys[0], accept.clone())]))
                .is_empty()
        );
        assert!(matches!(first.await.unwrap(), Answer::Accept(_)));

        let second = tokio::spawn({
            let asker = s.asker();
            async move {
                let ask = Ask::form(question(), Duration::from_secs(60));
                asker.ask(ask).await.answer
            }
        });
        let Event::Input(_) = s.next_event().await else {
            panic!("expected a question")
        };
        let again = pending_keys(&s);
        assert_eq!(again.len(), 1);
        assert!(is_random_key(&again[0]) && again[0] != keys[0], "{again:?}");
        // Answering the first key again is refused too.
        assert_eq!(
            s.answer(&responses(&[(&keys[0], accept.clone())])),
            [keys[0].clone()]
        );
        assert_eq!(pending_keys(&s), again);
        s.answer(&responses(&[(&again[0], json!({"action": "decline"}))]));
        assert!(matches!(second.await.unwrap(), Answer::Decline));
    }

    /// A `hitl_request` step's answers are checked against its options before any is delivered:
    /// one that is not an option is refused in words and the step stays open; a decline or a
    /// valid option goes through. Approval forms are not checked here (the policy decides).
    #[tokio::test]
    async fn answers_to_question_steps_must_name_an_option() {
        let s = Suspensions::default().register("eval", "local").0;
        let question = Question {
            message: "q".into(),
            schema: json!({"type": "object", "properties": {"answer": {"type": "string",
                "enum": ["ship", "hold"]}}, "required": ["answer"]})
            .as_object()
            .cloned()
            .unwrap(),
        };
        let asking = tokio::spawn({
            let asker = s.asker();
            let call = codemode_runtime::CallContext::detached(codemode_runtime::EvalId(1), 1);
            async move {
                let ask = Ask::choice(
                    "0123".into(),
                    question,
                    Duration::from_secs(60),
                    call,
                    false,
                );
                asker.ask(ask).await.answer
            }
        });
        let Event::Input(_) = s.next_event().await else {
            panic!("expected a question")
        };
        assert_eq!(pending_keys(&s), ["codemode-0123"]);
        let answer = |option: &str| {
            responses(&[(
                "codemode-0123",
                json!({"action": "accept", "content": {"answer": option}}),
            )])
        };
        assert_eq!(
            s.check(&answer("maybe")),
            Err(RefusedAnswer::new(
                "codemode-0123",
                "`maybe` is not one of the options (ship, hold)"
            ))
        );
        assert_eq!(pending_keys(&s), ["codemode-0123"], "still open");
        // Answers to keys not pending are left to `answer` (which refuses them).
        let elsewhere = responses(&[(
            "codemode-9",
            json!({"action": "accept", "content": {"answer": "maybe"}}),
        )]);
        assert_eq!(s.check(&elsewhere), Ok(()));
        assert_eq!(s.check(&answer("hold")), Ok(()));
        assert!(s.answer(&answer("hold")).is_empty());
        assert_eq!(
            asking.await.unwrap(),
            Answer::Accept(json!({"answer": "hold"}))
        );
    }
}

//! The server-wide approval broker: the pending approval requests (and `hitl_request`
//! questions) of every eval, as the HTTP approval API shows them, and the last decisions.
//!
//! An eval's [`super::ChannelApprover`] (and [`super::ChannelAsker`]) offers each request to
//! every channel it has — the MCP client (elicitation or input-required), the terminal, and this
//! broker when the HTTP API is served.
//! The first answer wins: the others are withdrawn (their futures dropped; the broker's
//! subscribers see a `decided` event naming the channel that answered, or `expired` when the
//! policy's timeout passed or the eval ended). Every channel shows the same request id.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use codemode_policies::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Caller, Channel, DecisionRefused,
    RiskPolicy, neutralize, new_request_id, rfc3339_utc,
};
use tokio::sync::{broadcast, oneshot};

pub use super::view::{
    ApprovalView, BrokerEvent, CallSiteView, Choice, Outcome, QuestionAnswer, QuestionSpec,
    decision_name, parse_decision,
};

/// How many decisions the broker remembers by default (`GET /approvals?state=decided`).
pub const DEFAULT_DECISION_HISTORY: usize = 100;

/// The permission a decider needs.
pub const APPROVE_PERMISSION: &str = "approve";
/// The permission a decider needs, besides [`APPROVE_PERMISSION`], to decide its own asks.
pub const APPROVE_SELF_PERMISSION: &str = "approve_self";

/// Why a decision through the broker was refused (the HTTP status in brackets).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecideError {
    /// No request has this id (`404`).
    #[error("no approval request `{0}`")]
    NotFound(String),
    /// The request was already answered or withdrawn (`409`).
    #[error("approval request `{0}` was already {1}")]
    Closed(String, &'static str),
    /// The decider may not decide this request (`403`).
    #[error("{0}")]
    Forbidden(String),
    /// The request's risk policy refuses the decision (`422`).
    #[error("{0}")]
    Refused(#[from] DecisionRefused),
    /// The choice does not fit the request: an answer for an approval, a decision other than
    /// `decline` for a question, an answer that is not an option (`422`).
    #[error("{0}")]
    Invalid(String),
    /// Where the request is kept (the durable store) cannot be reached now (`503`).
    #[error("{0}")]
    Unavailable(String),
}

enum Reply {
    Approval(RiskPolicy, oneshot::Sender<ApprovalAnswer>),
    Question(Vec<String>, oneshot::Sender<QuestionAnswer>),
}

struct Pending {
    /// Who the asking eval runs for.
    caller: String,
    view: Arc<ApprovalView>,
    reply: Reply,
}

#[derive(Default)]
struct Inner {
    pending: HashMap<String, Pending>,
    /// Pending ids in the order they were requested.
    order: Vec<String>,
    /// The last decisions (and expiries), oldest first.
    decided: VecDeque<Arc<ApprovalView>>,
}

/// The server-wide broker. See the module docs.
pub struct ApprovalBroker {
    inner: Mutex<Inner>,
    events: broadcast::Sender<BrokerEvent>,
    served: AtomicBool,
    history: usize,
    parked: std::sync::OnceLock<Arc<dyn ParkedAsks>>,
}

/// The asks of evals parked in the durable store (any node's): listed and decided through the
/// approval API beside this process's own pending requests.
pub trait ParkedAsks: Send + Sync {
    /// Their views, as the API shows them; `Err` (in words) when they cannot be read now.
    fn list(&self) -> codemode_runtime::BoxFuture<'_, Result<Vec<serde_json::Value>, String>>;
    /// The decisions given to them, as the API shows decisions, newest first; `Err` (in
    /// words) when they cannot be read now.
    fn decided(&self) -> codemode_runtime::BoxFuture<'_, Result<Vec<serde_json::Value>, String>>;
    /// Decides ask `id` — an approval with a decision, a question with one of its options or
    /// `decline` — (the same checks as [`ApprovalBroker::decide`]) and resumes its eval.
    fn decide<'a>(
        &'a self,
        id: &'a str,
        decider: &'a Caller,
        choice: Choice,
        reason: Option<String>,
    ) -> codemode_runtime::BoxFuture<'a, Result<(), DecideError>>;
}

impl Default for ApprovalBroker {
    fn default() -> Self {
        Self::new(DEFAULT_DECISION_HISTORY)
    }
}

impl ApprovalBroker {
    /// A broker remembering the last `history` decisions. Not served until
    /// [`set_served`](Self::set_served).
    pub fn new(history: usize) -> Self {
        ApprovalBroker {
            inner: Mutex::new(Inner::default()),
            events: broadcast::channel(256).0,
            served: AtomicBool::new(false),
            history,
            parked: std::sync::OnceLock::new(),
        }
    }

    /// Lists and decides the asks of parked evals too (set once).
    pub fn set_parked(&self, parked: Arc<dyn ParkedAsks>) {
        let _ = self.parked.set(parked);
    }

    /// Whether `id` is neither pending here nor among the decisions remembered here.
    pub fn is_unknown(&self, id: &str) -> bool {
        let inner = self.lock();
        !inner.pending.contains_key(id) && !inner.decided.iter().any(|v| v.id == id)
    }

    /// The parked evals' asks, when a durable store is used.
    pub fn parked(&self) -> Option<&Arc<dyn ParkedAsks>> {
        self.parked.get()
    }

    /// Whether the HTTP approval API is served (only then do evals offer requests here).
    pub fn served(&self) -> bool {
        self.served.load(Ordering::SeqCst)
    }

    /// Marks the API as served (or not).
    pub fn set_served(&self, served: bool) {
        self.served.store(served, Ordering::SeqCst);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Maps of plain data: a panic elsewhere cannot leave them inconsistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// New events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<BrokerEvent> {
        self.events.subscribe()
    }

    /// The pending requests, oldest first.
    pub fn pending(&self) -> Vec<Arc<ApprovalView>> {
        let inner = self.lock();
        inner
            .order
            .iter()
            .filter_map(|id| inner.pending.get(id).map(|p| p.view.clone()))
            .collect()
    }

    /// The last `limit` decisions, newest first.
    pub fn decided(&self, limit: usize) -> Vec<Arc<ApprovalView>> {
        self.lock()
            .decided
            .iter()
            .rev()
            .take(limit)
            .cloned()
            .collect()
    }

    /// Registers `req` as pending; the returned handle answers when someone decides through
    /// [`decide`](Self::decide), and withdraws the request when dropped.
    pub fn open(self: &Arc<Self>, req: &ApprovalRequest) -> PendingAsk {
        let (tx, rx) = oneshot::channel();
        let view = Arc::new(ApprovalView::of(req, SystemTime::now()));
        {
            let mut inner = self.lock();
            inner.order.push(req.id.clone());
            inner.pending.insert(
                req.id.clone(),
                Pending {
                    caller: req.caller.name.clone(),
                    view: view.clone(),
                    reply: Reply::Approval(req.risk_policy.clone(), tx),
                },
            );
        }
        let _ = self.events.send(BrokerEvent::Requested(view));
        PendingAsk {
            broker: self.clone(),
            id: req.id.clone(),
            rx,
            call: req.call.clone(),
        }
    }

    /// Registers a question as pending; the returned handle answers when someone answers through
    /// [`decide`](Self::decide), and withdraws the question when dropped.
    pub fn open_question(self: &Arc<Self>, q: &QuestionSpec) -> PendingQuestion {
        self.open_question_as(&new_request_id(), q, None)
    }

    /// [`open_question`](Self::open_question) under `id` (a question step's, the same when it
    /// is asked again after a resume), asked by `call`: a question whose eval parked leaves this
    /// broker without being recorded as expired (it is listed from the durable store).
    pub fn open_question_as(
        self: &Arc<Self>,
        id: &str,
        q: &QuestionSpec,
        call: Option<codemode_runtime::CallContext>,
    ) -> PendingQuestion {
        let id = id.to_string();
        let (tx, rx) = oneshot::channel();
        let view = Arc::new(ApprovalView::of_question(q, &id, SystemTime::now()));
        {
            let mut inner = self.lock();
            inner.order.push(id.clone());
            inner.pending.insert(
                id.clone(),
                Pending {
                    caller: q.caller.clone(),
                    view: view.clone(),
                    reply: Reply::Question(q.options.clone(), tx),
                },
            );
        }
        let _ = self.events.send(BrokerEvent::Requested(view));
        PendingQuestion {
            broker: self.clone(),
            id,
            rx,
            call,
        }
    }

    /// `decider` answers request `id`. Needs permission `approve`, and `approve_self` for an ask
    /// raised under the decider's own name; a decision must pass the request's risk policy, an
    /// answer must be one of the question's options.
    ///
    /// # Errors
    /// [`DecideError`] (see its variants for the HTTP status each maps to).
    pub fn decide(
        &self,
        id: &str,
        decider: &Caller,
        choice: Choice,
        reason: Option<String>,
    ) -> Result<(), DecideError> {
        let reason = reason.filter(|r| !r.trim().is_empty());
        let choice_answer = match &choice {
            Choice::Answer(a) => Some(a.clone()),
            Choice::Decision(_) => None,
        };
        let mut inner = self.lock();
        let Some(pending) = inner.pending.get(id) else {
            return Err(match inner.decided.iter().find(|v| v.id == id) {
                Some(v) if v.decision == Some("expired") => {
                    DecideError::Closed(id.into(), "expired")
                }
                Some(_) => DecideError::Closed(id.into(), "decided"),
                None => DecideError::NotFound(id.into()),
            });
        };
        may_decide(decider, &pending.caller)?;
        let outcome = match (&pending.reply, choice) {
            (Reply::Approval(policy, _), Choice::Decision(d)) => {
                policy.check(d, reason.as_deref())?;
                decision_name(d)
            }
            (Reply::Approval(..), Choice::Answer(_)) => {
                return Err(DecideError::Invalid(
                    "an approval request takes a decision, not an answer".into(),
                ));
            }
            (
                Reply::Question(..),
                Choice::Decision(ApprovalDecision::Decline | ApprovalDecision::Cancel),
            ) => "decline",
            (Reply::Question(..), Choice::Decision(_)) => {
                return Err(DecideError::Invalid(
                    "a question takes `answer` with one of its options, or `decline`".into(),
                ));
            }
            (Reply::Question(options, _), Choice::Answer(a)) if !options.contains(&a) => {
                return Err(DecideError::Invalid(format!(
                    "`{}` is not one of the options",
                    neutralize(&a)
                )));
            }
            (Reply::Question(..), Choice::Answer(_)) => "answer",
        };
        let pending = self.take(&mut inner, id).expect("checked above");
        let answer = match &choice_answer {
            Some(a) if outcome == "answer" => Some(a.clone()),
            _ => None,
        };
        let recorded = Outcome {
            decision: outcome,
            decided_by: Some(decider.name.clone()),
            reason: reason.clone(),
            answer: answer.clone(),
            channel: Channel::Http,
        };
        let view = self.record(&mut inner, &pending.view, Some(&recorded));
        drop(inner);
        match pending.reply {
            Reply::Approval(_, tx) => {
                let decision = parse_decision(outcome).unwrap_or(ApprovalDecision::Decline);
                let _ = tx.send(
                    ApprovalAnswer::new(decision, Channel::Http)
                        .with_reason(reason)
                        .decided_by(decider.name.clone()),
                );
            }
            Reply::Question(_, tx) => {
                let _ = tx.send(QuestionAnswer {
                    answer,
                    decided_by: decider.name.clone(),
                });
            }
        }
        let _ = self.events.send(BrokerEvent::Decided(view));
        Ok(())
    }

    fn take(&self, inner: &mut Inner, id: &str) -> Option<Pending> {
        let pending = inner.pending.remove(id)?;
        inner.order.retain(|o| o != id);
        Some(pending)
    }

    /// Remembers the outcome of a request (`None`: expired) among the last decisions.
    fn record(
        &self,
        inner: &mut Inner,
        view: &ApprovalView,
        outcome: Option<&Outcome>,
    ) -> Arc<ApprovalView> {
        let mut done = view.clone();
        match outcome {
            Some(o) => {
                done.decision = Some(o.decision);
                done.decided_by = o.decided_by.clone();
                done.reason = o.reason.clone();
                done.answer = o.answer.clone();
                done.channel = Some(o.channel.as_str());
            }
            None => {
                done.decision = Some("expired");
                done.channel = Some(Channel::Policy.as_str());
            }
        }
        done.decided_at = Some(rfc3339_utc(SystemTime::now()));
        let done = Arc::new(done);
        inner.decided.push_back(done.clone());
        while inner.decided.len() > self.history.max(1) {
            inner.decided.pop_front();
        }
        done
    }

    /// Closes request `id` with an outcome from another channel (`None`: withdrawn unanswered).
    fn close(&self, id: &str, outcome: Option<&Outcome>) {
        let mut inner = self.lock();
        let Some(pending) = self.take(&mut inner, id) else {
            return;
        };
        let view = self.record(&mut inner, &pending.view, outcome);
        drop(inner);
        let event = match outcome {
            Some(_) => BrokerEvent::Decided(view),
            None => BrokerEvent::Expired(view),
        };
        let _ = self.events.send(event);
    }
}

/// A request pending in the broker; dropping it withdraws the request (`expired`).
pub struct PendingAsk {
    broker: Arc<ApprovalBroker>,
    id: String,
    rx: oneshot::Receiver<ApprovalAnswer>,
    /// The call asked about: a request whose eval parked leaves this broker without being
    /// recorded as expired (it is listed from the durable store until its eval resumes).
    call: codemode_runtime::CallContext,
}

impl PendingAsk {
    /// Waits for a decision through the broker.
    pub async fn answer(&mut self) -> ApprovalAnswer {
        match (&mut self.rx).await {
            Ok(answer) => answer,
            // The broker never drops a pending reply without sending: wait for the timeout.
            Err(_) => std::future::pending().await,
        }
    }

    /// Another channel answered first: the broker's subscribers see who.
    pub fn answered_elsewhere(self, answer: &ApprovalAnswer) {
        self.broker
            .close(&self.id, Some(&Outcome::of_approval(answer)));
    }
}

/// A question pending in the broker; dropping it withdraws the question (`expired`).
pub struct PendingQuestion {
    broker: Arc<ApprovalBroker>,
    id: String,
    rx: oneshot::Receiver<QuestionAnswer>,
    /// The call asking, when known: see [`ApprovalBroker::open_question_as`].
    call: Option<codemode_runtime::CallContext>,
}

impl PendingQuestion {
    /// Waits for an answer through the broker.
    pub async fn answer(&mut self) -> QuestionAnswer {
        match (&mut self.rx).await {
            Ok(answer) => answer,
            Err(_) => std::future::pending().await,
        }
    }

    /// Another channel answered first (`outcome`).
    pub fn answered_elsewhere(self, outcome: &Outcome) {
        self.broker.close(&self.id, Some(outcome));
    }
}

impl Drop for PendingQuestion {
    fn drop(&mut self) {
        // A no-op when the question was answered already.
        if self.call.as_ref().is_some_and(|c| c.is_parked()) {
            let mut inner = self.broker.lock();
            self.broker.take(&mut inner, &self.id);
        } else {
            self.broker.close(&self.id, None);
        }
    }
}

impl Drop for PendingAsk {
    fn drop(&mut self) {
        // A no-op when the request was decided already.
        if self.call.is_parked() {
            let mut inner = self.broker.lock();
            self.broker.take(&mut inner, &self.id);
        } else {
            self.broker.close(&self.id, None);
        }
    }
}

/// Whether `decider` may decide an ask raised by `asker`: permission `approve`, and
/// `approve_self` for an ask raised under the decider's own name.
///
/// # Errors
/// [`DecideError::Forbidden`], naming the missing permission.
pub(crate) fn may_decide(decider: &Caller, asker: &str) -> Result<(), DecideError> {
    if !decider.has_permission(APPROVE_PERMISSION) {
        return Err(DecideError::Forbidden(format!(
            "`{}` lacks the permission `{APPROVE_PERMISSION}`",
            decider.name
        )));
    }
    if asker == decider.name && !decider.has_permission(APPROVE_SELF_PERMISSION) {
        return Err(DecideError::Forbidden(format!(
            "`{}` cannot decide its own ask without the permission `{APPROVE_SELF_PERMISSION}`",
            decider.name
        )));
    }
    Ok(())
}

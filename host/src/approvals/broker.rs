//! The server-wide approval broker: the pending approval requests (and `hitl_request`
//! questions) of every eval, as the HTTP approval API shows them, and the last decisions.
//!
//! An eval's [`super::Channels`] offers each ask to every channel it has — the MCP client
//! (elicitation or input-required), the terminal, and this broker when the HTTP API is served.
//! The first answer wins: the others are withdrawn (their futures dropped; the broker's
//! subscribers see a `decided` event naming the channel that answered, or `expired` when the
//! policy's timeout passed or the eval ended). Every channel shows the same request id.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use codemode_policies::AuditRecord;
use codemode_policies::{
    ApprovalAnswer, ApprovalDecision, Caller, Channel, Risk, RiskPolicy, is_blank, neutralize,
};
use tokio::sync::{broadcast, oneshot};

pub use super::parked_feed::ParkedAsks;
use super::parked_feed::ParkedFeed;
use super::{Answer, Ask, AskKind, Reply};

pub use super::view::{
    ApprovalView, BrokerEvent, Choice, DecideError, Outcome, QuestionSpec, decision_name,
    parse_decision,
};

/// How many decisions the broker remembers by default (`GET /approvals?state=decided`).
pub(crate) const DEFAULT_DECISION_HISTORY: usize = 100;

/// The permission a decider needs.
pub(crate) const APPROVE_PERMISSION: &str = "approve";
/// The permission a decider needs, besides [`APPROVE_PERMISSION`], to decide its own asks.
pub(crate) const APPROVE_SELF_PERMISSION: &str = "approve_self";

/// What a pending ask accepts.
enum Accepts {
    /// A decision its risk policy allows, for an ask of this risk.
    Approval(RiskPolicy, Risk),
    /// One of `options` (filling in form field `field`), or `decline`.
    Question { field: String, options: Vec<String> },
}

impl Accepts {
    /// The outcome `choice` (with `reason`) records, when it fits what the ask accepts: a
    /// decision its risk policy allows, one of a question's options, or `decline`.
    fn check(&self, choice: Choice, reason: Option<&str>) -> Result<&'static str, DecideError> {
        Ok(match (self, choice) {
            (Accepts::Approval(policy, _), Choice::Decision(d)) => {
                policy.check(d, reason)?;
                decision_name(d)
            }
            (Accepts::Approval(..), Choice::Answer(_)) => {
                return Err(DecideError::Invalid(
                    "an approval request takes a decision, not an answer".into(),
                ));
            }
            (
                Accepts::Question { .. },
                Choice::Decision(ApprovalDecision::Decline | ApprovalDecision::Cancel),
            ) => "decline",
            (Accepts::Question { .. }, Choice::Decision(_)) => {
                return Err(DecideError::Invalid(
                    "a question takes `answer` with one of its options, or `decline`".into(),
                ));
            }
            (Accepts::Question { options, .. }, Choice::Answer(a)) if !options.contains(&a) => {
                return Err(DecideError::Invalid(format!(
                    "`{}` is not one of the options",
                    neutralize(&a)
                )));
            }
            (Accepts::Question { .. }, Choice::Answer(_)) => "answer",
        })
    }
}

struct Pending {
    /// Who the asking eval runs for.
    caller: String,
    view: Arc<ApprovalView>,
    accepts: Accepts,
    tx: oneshot::Sender<Reply>,
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
    parked_feed: Arc<ParkedFeed>,
    rules: std::sync::OnceLock<Arc<codemode_policies::RememberedRules>>,
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
            parked_feed: Arc::default(),
            rules: std::sync::OnceLock::new(),
        }
    }

    /// Lists and decides the asks of parked evals too (set once).
    pub(crate) fn set_parked(&self, parked: Arc<dyn ParkedAsks>) {
        let _ = self.parked.set(parked);
    }

    /// Where approvals "from now on" are remembered, for the evals and the API (set once).
    pub(crate) fn set_rules(&self, rules: Arc<codemode_policies::RememberedRules>) {
        let _ = self.rules.set(rules);
    }

    /// The remembered approvals, when the server keeps them.
    pub fn rules(&self) -> Option<Arc<codemode_policies::RememberedRules>> {
        self.rules.get().cloned()
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

    /// The approval stream's events for the parked evals' asks.
    pub fn parked_feed(&self) -> &Arc<ParkedFeed> {
        &self.parked_feed
    }

    /// Whether the HTTP approval API is served (only then do evals offer requests here).
    pub fn served(&self) -> bool {
        self.served.load(Ordering::SeqCst)
    }

    /// Marks the API as served (or not).
    pub(crate) fn set_served(&self, served: bool) {
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

    /// Registers `ask` as pending, shown as `view` (a question's answer fills in form field
    /// `field`); the returned handle answers when someone decides through
    /// [`decide`](Self::decide), and withdraws the ask when dropped — unless its eval parked:
    /// then it leaves this broker without being recorded as expired (it is listed from the
    /// durable store until its eval resumes).
    pub fn open(
        self: &Arc<Self>,
        ask: &Ask,
        view: ApprovalView,
        field: Option<String>,
    ) -> PendingAsk {
        let (tx, rx) = oneshot::channel();
        let view = Arc::new(view);
        let accepts = match &ask.kind {
            AskKind::Approval(req) => Accepts::Approval(req.risk_policy.clone(), req.risk),
            _ => Accepts::Question {
                field: field.unwrap_or_default(),
                options: view.options.clone().unwrap_or_default(),
            },
        };
        {
            let mut inner = self.lock();
            inner.order.push(ask.id.clone());
            inner.pending.insert(
                ask.id.clone(),
                Pending {
                    caller: view.caller.clone(),
                    view: view.clone(),
                    accepts,
                    tx,
                },
            );
        }
        let _ = self.events.send(BrokerEvent::Requested(view));
        PendingAsk {
            broker: self.clone(),
            id: ask.id.clone(),
            rx,
            call: ask.call.clone(),
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
        let reason = reason.filter(|r| !is_blank(r));
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
        let decided_with = match &pending.accepts {
            Accepts::Approval(policy, risk) => approver(policy, *risk, decider)?,
            Accepts::Question { .. } => None,
        };
        let outcome = pending.accepts.check(choice, reason.as_deref())?;
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
            decided_with: decided_with.clone(),
        };
        let view = self.record(&mut inner, &pending.view, Some(&recorded));
        drop(inner);
        let mut reply = match &pending.accepts {
            Accepts::Approval(..) => {
                let decision = parse_decision(outcome).unwrap_or(ApprovalDecision::Decline);
                ApprovalAnswer::new(decision, Channel::Http)
                    .with_reason(reason)
                    .to_reply()
            }
            Accepts::Question { field, .. } => Reply::new(
                match answer {
                    Some(option) => Answer::Accept(serde_json::json!({ field: option })),
                    None => Answer::Decline,
                },
                Channel::Http,
            ),
        };
        reply.decided_by = Some(decider.name.clone());
        reply.decided_with = decided_with;
        let _ = pending.tx.send(reply);
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
                done.decided_with = o.decided_with.clone();
            }
            None => {
                done.decision = Some("expired");
                done.channel = Some(Channel::Policy.as_str());
            }
        }
        done.decided_at = Some(AuditRecord::rfc3339_utc(SystemTime::now()));
        let done = Arc::new(done);
        inner.decided.push_back(done.clone());
        while inner.decided.len() > self.history.max(1) {
            inner.decided.pop_front();
        }
        done
    }

    /// Closes request `id` with an outcome from another channel (`None`: withdrawn unanswered).
    /// `false` when the ask was no longer pending (decided through [`decide`](Self::decide)
    /// first, or closed already).
    fn close(&self, id: &str, outcome: Option<&Outcome>) -> bool {
        let mut inner = self.lock();
        let Some(pending) = self.take(&mut inner, id) else {
            return false;
        };
        let view = self.record(&mut inner, &pending.view, outcome);
        drop(inner);
        let event = match outcome {
            Some(_) => BrokerEvent::Decided(view),
            None => BrokerEvent::Expired(view),
        };
        let _ = self.events.send(event);
        true
    }
}

/// An ask pending in the broker; dropping it withdraws the ask (`expired`).
pub struct PendingAsk {
    broker: Arc<ApprovalBroker>,
    id: String,
    rx: oneshot::Receiver<Reply>,
    /// The call asking, when known: see [`ApprovalBroker::open`].
    call: Option<codemode_runtime::CallContext>,
}

impl PendingAsk {
    /// Waits for an answer through the broker.
    pub async fn answer(&mut self) -> Reply {
        match (&mut self.rx).await {
            Ok(reply) => reply,
            // The broker never drops a pending reply without sending: wait for the timeout.
            Err(_) => std::future::pending().await,
        }
    }

    /// Another channel answered first (`outcome`): the broker's subscribers see who.
    /// Exactly one answer wins: when the broker had already taken a decision through
    /// [`ApprovalBroker::decide`] (which answered its caller `200`), that decision is returned
    /// and must be used instead of the other channel's.
    pub(crate) async fn answered_elsewhere(mut self, outcome: &Outcome) -> Option<Reply> {
        if self.broker.close(&self.id, Some(outcome)) {
            return None;
        }
        // `decide` took the ask under the lock and sends its reply right after releasing it.
        (&mut self.rx).await.ok()
    }
}

impl Drop for PendingAsk {
    fn drop(&mut self) {
        // A no-op when the ask was answered already.
        if self.call.as_ref().is_some_and(|c| c.is_parked()) {
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

/// The permission of `policy`'s `approvers` by which `decider` may decide an ask of `risk`
/// (`None`: the level names none). An approver without it sees the ask but decides nothing,
/// not even a decline.
///
/// # Errors
/// [`DecideError::Forbidden`], naming the permissions of which one is needed.
pub(crate) fn approver(
    policy: &RiskPolicy,
    risk: Risk,
    decider: &Caller,
) -> Result<Option<String>, DecideError> {
    policy
        .approver_right(decider, risk)
        .map_err(|lacking| DecideError::Forbidden(lacking.to_string()))
}

/// [`approver`] for an ask as the API shows it (`view`: its `approvers` and `risk`; a question
/// names none).
///
/// # Errors
/// [`DecideError::Forbidden`], naming the permissions of which one is needed.
pub(crate) fn approver_of_view(
    view: &serde_json::Value,
    decider: &Caller,
) -> Result<Option<String>, DecideError> {
    let approvers = view
        .get("approvers")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let risk = view
        .get("risk")
        .and_then(serde_json::Value::as_str)
        .and_then(Risk::parse)
        .unwrap_or_default();
    let policy = RiskPolicy {
        approvers,
        ..RiskPolicy::default()
    };
    approver(&policy, risk, decider)
}

/// Marks an ask as the API shows it (`view`) with whether `reader` may decide it
/// (`"decidable"`), and when not, why (`"cannot_decide"`: what a decision would be refused
/// with). A reader without the right still sees the ask.
pub(crate) fn mark_decidable(view: &mut serde_json::Value, reader: &Caller) {
    let asker = view
        .get("caller")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let verdict = may_decide(reader, &asker).and_then(|()| approver_of_view(view, reader));
    let Some(object) = view.as_object_mut() else {
        return;
    };
    object.insert("decidable".into(), verdict.is_ok().into());
    if let Err(refused) = verdict {
        object.insert("cannot_decide".into(), refused.to_string().into());
    }
}

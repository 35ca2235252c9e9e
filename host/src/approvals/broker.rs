//! The server-wide approval broker: the pending approval requests of every eval, as the HTTP
//! approval API shows them, and the last decisions.
//!
//! An eval's [`ChannelApprover`] offers each request to every channel it has — the MCP client
//! (elicitation or input-required), the terminal, and this broker when the HTTP API is served.
//! The first answer wins: the others are withdrawn (their futures dropped; the broker's
//! subscribers see a `decided` event naming the channel that answered, or `expired` when the
//! policy's timeout passed or the eval ended). Every channel shows the same request id.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use codemode_policies::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, Caller, Channel, DecisionRefused,
    rfc3339_utc,
};
use codemode_runtime::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use super::form::{ask_for_approval, call_sites_of};
use super::{Asker, NoAsker};

/// How many decisions the broker remembers by default (`GET /approvals?state=decided`).
pub const DEFAULT_DECISION_HISTORY: usize = 100;

/// The permission a decider needs.
pub const APPROVE_PERMISSION: &str = "approve";
/// The permission a decider needs, besides [`APPROVE_PERMISSION`], to decide its own asks.
pub const APPROVE_SELF_PERMISSION: &str = "approve_self";

/// One call site of the script, as the API shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CallSiteView {
    /// The tool named there; `null` when it is computed at run time.
    pub tool: Option<String>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// Whether the name is computed at run time.
    pub dynamic: bool,
}

/// A request as the HTTP API shows it (`GET /approvals`, the `requested` event). Decided ones
/// also carry the decision fields.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalView {
    /// The request id (random, 128 bits).
    pub id: String,
    /// The eval making the call.
    pub eval_id: String,
    /// Who the eval runs for.
    pub caller: String,
    /// The profile that asked.
    pub profile: Option<String>,
    /// The tool called.
    pub tool: String,
    /// The call's risk level.
    pub risk: &'static str,
    /// The decisions the risk policy allows (`approve_once`, `approve_eval`, `approve_session`,
    /// `decline`).
    pub allowed_decisions: Vec<&'static str>,
    /// Whether a decision needs a reason.
    pub reason_required: bool,
    /// The rule's reason, if a rule with a reason asked.
    pub rule_reason: Option<String>,
    /// The arguments in full.
    pub args: Value,
    /// Every top-level key with a bounded preview.
    pub args_summary: String,
    /// The script's call sites.
    pub call_sites: Vec<CallSiteView>,
    /// When the request was made (RFC 3339 UTC).
    pub requested_at: String,
    /// When it is denied automatically (RFC 3339 UTC).
    pub expires_at: String,
    /// How long the human has, in milliseconds from `requested_at` (for countdowns that do not
    /// trust the two clocks to agree).
    pub timeout_ms: u64,
    /// Decided ones: `approve_once`, `approve_eval`, `approve_session`, `decline`, `expired`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<&'static str>,
    /// Decided ones: who decided (a token's name, `local`), when the channel knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Decided ones: the decider's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Decided ones: the channel that answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<&'static str>,
    /// Decided ones: when (RFC 3339 UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
}

/// A decision's name in the API.
pub fn decision_name(d: ApprovalDecision) -> &'static str {
    match d {
        ApprovalDecision::ApproveOnce => "approve_once",
        ApprovalDecision::ApproveToolForEval => "approve_eval",
        ApprovalDecision::ApproveToolForSession => "approve_session",
        ApprovalDecision::Decline | ApprovalDecision::Cancel => "decline",
    }
}

/// A decision by its API name.
pub fn parse_decision(name: &str) -> Option<ApprovalDecision> {
    Some(match name {
        "approve_once" => ApprovalDecision::ApproveOnce,
        "approve_eval" => ApprovalDecision::ApproveToolForEval,
        "approve_session" => ApprovalDecision::ApproveToolForSession,
        "decline" => ApprovalDecision::Decline,
        _ => return None,
    })
}

impl ApprovalView {
    fn of(req: &ApprovalRequest, now: SystemTime) -> Self {
        let allowed: Vec<&'static str> = req
            .risk_policy
            .allowed_decisions()
            .into_iter()
            .filter(|d| *d != ApprovalDecision::Cancel)
            .map(decision_name)
            .collect();
        ApprovalView {
            id: req.id.clone(),
            eval_id: req.eval_id.to_string(),
            caller: req.caller.name.clone(),
            profile: req.profile.clone(),
            tool: req.tool.clone(),
            risk: req.risk.as_str(),
            allowed_decisions: allowed,
            reason_required: req.risk_policy.require_reason,
            rule_reason: req.reason.clone(),
            args: req.args.clone(),
            args_summary: req.args_summary.clone(),
            call_sites: call_sites_of(req)
                .into_iter()
                .map(|(tool, line, column)| CallSiteView {
                    dynamic: tool.is_none(),
                    tool,
                    line,
                    column,
                })
                .collect(),
            requested_at: rfc3339_utc(now),
            expires_at: rfc3339_utc(now + req.timeout),
            timeout_ms: u64::try_from(req.timeout.as_millis()).unwrap_or(u64::MAX),
            decision: None,
            decided_by: None,
            reason: None,
            channel: None,
            decided_at: None,
        }
    }
}

/// What subscribers of the broker (`GET /approvals/stream`) see.
#[derive(Debug, Clone)]
pub enum BrokerEvent {
    /// A new pending request.
    Requested(Arc<ApprovalView>),
    /// A request was answered (on any channel).
    Decided(Arc<ApprovalView>),
    /// A request was withdrawn unanswered (timeout, or the eval ended).
    Expired(Arc<ApprovalView>),
}

impl BrokerEvent {
    /// The SSE event name: `requested`, `decided` or `expired`.
    pub fn name(&self) -> &'static str {
        match self {
            BrokerEvent::Requested(_) => "requested",
            BrokerEvent::Decided(_) => "decided",
            BrokerEvent::Expired(_) => "expired",
        }
    }

    /// The request it is about.
    pub fn view(&self) -> &ApprovalView {
        match self {
            BrokerEvent::Requested(v) | BrokerEvent::Decided(v) | BrokerEvent::Expired(v) => v,
        }
    }
}

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
}

struct Pending {
    request: ApprovalRequest,
    view: Arc<ApprovalView>,
    reply: oneshot::Sender<ApprovalAnswer>,
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
        }
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
                    request: req.clone(),
                    view: view.clone(),
                    reply: tx,
                },
            );
        }
        let _ = self.events.send(BrokerEvent::Requested(view));
        PendingAsk {
            broker: self.clone(),
            id: req.id.clone(),
            rx,
        }
    }

    /// `decider` answers request `id`. Needs permission `approve`, and `approve_self` for an ask
    /// raised under the decider's own name; the decision must pass the request's risk policy.
    ///
    /// # Errors
    /// [`DecideError`] (see its variants for the HTTP status each maps to).
    pub fn decide(
        &self,
        id: &str,
        decider: &Caller,
        decision: ApprovalDecision,
        reason: Option<String>,
    ) -> Result<(), DecideError> {
        let reason = reason.filter(|r| !r.trim().is_empty());
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
        if !decider.has_permission(APPROVE_PERMISSION) {
            return Err(DecideError::Forbidden(format!(
                "`{}` lacks the permission `{APPROVE_PERMISSION}`",
                decider.name
            )));
        }
        if pending.request.caller.name == decider.name
            && !decider.has_permission(APPROVE_SELF_PERMISSION)
        {
            return Err(DecideError::Forbidden(format!(
                "`{}` cannot decide its own ask without the permission `{APPROVE_SELF_PERMISSION}`",
                decider.name
            )));
        }
        pending
            .request
            .risk_policy
            .check(decision, reason.as_deref())?;
        let pending = self.take(&mut inner, id).expect("checked above");
        let answer = ApprovalAnswer::new(decision, Channel::Http)
            .with_reason(reason)
            .decided_by(decider.name.clone());
        let view = self.record(&mut inner, &pending.view, Some(&answer));
        drop(inner);
        let _ = pending.reply.send(answer);
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
        answer: Option<&ApprovalAnswer>,
    ) -> Arc<ApprovalView> {
        let mut done = view.clone();
        match answer {
            Some(a) => {
                done.decision = Some(decision_name(a.decision));
                done.decided_by = a.decided_by.clone();
                done.reason = a.reason.clone();
                done.channel = Some(a.channel.as_str());
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

    /// Closes request `id` with an answer from another channel (`None`: withdrawn unanswered).
    fn close(&self, id: &str, answer: Option<&ApprovalAnswer>) {
        let mut inner = self.lock();
        let Some(pending) = self.take(&mut inner, id) else {
            return;
        };
        let view = self.record(&mut inner, &pending.view, answer);
        drop(inner);
        let event = match answer {
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
        self.broker.close(&self.id, Some(answer));
    }
}

impl Drop for PendingAsk {
    fn drop(&mut self) {
        // A no-op when the request was decided already.
        self.broker.close(&self.id, None);
    }
}

/// An eval's [`Approver`]: offers each request to its own channel (the MCP client or the
/// terminal) and, when the HTTP API is served, to the broker; the first answer wins.
///
/// Supported when either can ask; when neither can, the profile's `elicitationFallback` decides.
pub struct ChannelApprover {
    asker: Arc<dyn Asker>,
    broker: Option<Arc<ApprovalBroker>>,
}

impl ChannelApprover {
    /// Asks through `asker` and, if given and served, `broker`.
    pub fn new(asker: Arc<dyn Asker>, broker: Option<Arc<ApprovalBroker>>) -> Self {
        ChannelApprover { asker, broker }
    }

    /// Only the broker (no asker of the eval's own).
    pub fn broker_only(broker: Arc<ApprovalBroker>) -> Self {
        Self::new(Arc::new(NoAsker), Some(broker))
    }

    fn broker(&self) -> Option<&Arc<ApprovalBroker>> {
        self.broker.as_ref().filter(|b| b.served())
    }
}

impl Approver for ChannelApprover {
    fn supports(&self) -> bool {
        self.asker.supports() || self.broker().is_some()
    }

    fn approve(&self, req: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(async move {
            let mut http = self.broker().map(|b| b.open(&req));
            let has_http = http.is_some();
            let own = async {
                if !self.asker.supports() {
                    return std::future::pending().await;
                }
                match ask_for_approval(self.asker.as_ref(), &req).await {
                    Some(answer) => answer,
                    // This channel cannot answer (failed or timed out): wait for the others,
                    // or for the policy's timeout.
                    None if has_http => std::future::pending().await,
                    None => ApprovalAnswer::new(ApprovalDecision::Decline, self.asker.channel()),
                }
            };
            let Some(pending) = http.as_mut() else {
                return own.await;
            };
            tokio::select! {
                answer = pending.answer() => answer,
                answer = own => {
                    if let Some(pending) = http.take() {
                        pending.answered_elsewhere(&answer);
                    }
                    answer
                }
            }
        })
    }
}

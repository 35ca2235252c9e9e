//! What the HTTP approval API shows: a request ([`ApprovalView`]: an approval or a
//! `hitl_request` question, pending or decided), the decisions' names, the broker's events, and
//! its refusals (`{"error": …}`).

use std::sync::Arc;
use std::time::SystemTime;

use codemode_policies::AuditRecord;
use codemode_policies::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Channel, DecisionRefused, neutralize,
};
use serde::Serialize;
use serde_json::{Value, json};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

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
    /// `approval` (a tool call to approve) or `question` (a `hitl_request`: answer with one of
    /// `options`).
    pub kind: &'static str,
    /// The call's risk level (approvals only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk: Option<&'static str>,
    /// The tool's class, `read`, `write` or `destructive` (approvals only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classification: Option<&'static str>,
    /// The options of a question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// The decisions the risk policy allows (`approve_once`, `approve_eval`, `approve_session`,
    /// `approve_remember`, `decline`).
    pub allowed_decisions: Vec<&'static str>,
    /// How long `approve_remember` lasts, in words (`7 days`); absent where it is not offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remember_for: Option<String>,
    /// Whether a decision needs a reason.
    pub reason_required: bool,
    /// The permissions of which a decider must hold one to decide this ask (its risk level's
    /// `approvers`); absent: any approver.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
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
    /// Decided ones: `approve_once`, `approve_eval`, `approve_session`, `decline`, `answer` (a
    /// question's), `expired`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<&'static str>,
    /// Decided ones: who decided (a token's name, `local`), when the channel knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Decided ones: the decider's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Answered questions: the option chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Decided ones: the permission of `approvers` the decider held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_with: Option<String>,
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
        ApprovalDecision::ApproveRemember => "approve_remember",
        ApprovalDecision::Decline | ApprovalDecision::Cancel => "decline",
    }
}

/// A decision by its API name.
pub fn parse_decision(name: &str) -> Option<ApprovalDecision> {
    Some(match name {
        "approve_once" => ApprovalDecision::ApproveOnce,
        "approve_eval" => ApprovalDecision::ApproveToolForEval,
        "approve_session" => ApprovalDecision::ApproveToolForSession,
        "approve_remember" => ApprovalDecision::ApproveRemember,
        "decline" => ApprovalDecision::Decline,
        _ => return None,
    })
}

impl ApprovalView {
    pub(super) fn of(req: &ApprovalRequest, now: SystemTime) -> Self {
        let allowed: Vec<&'static str> = req
            .risk_policy
            .allowed_decisions()
            .into_iter()
            .filter(|d| *d != ApprovalDecision::Cancel)
            .map(decision_name)
            .collect();
        ApprovalView {
            id: req.id.clone(),
            eval_id: codemode_policies::AuditRecord::eval_id(req.eval_id),
            caller: req.caller.name.clone(),
            profile: req.profile.clone(),
            tool: req.tool.clone(),
            kind: "approval",
            risk: Some(req.risk.as_str()),
            classification: Some(req.classification.as_str()),
            options: None,
            allowed_decisions: allowed,
            remember_for: req.risk_policy.remember_for_spelled(),
            reason_required: req.risk_policy.require_reason,
            approvers: req.risk_policy.approvers.clone(),
            rule_reason: req.reason.clone(),
            args: req.args.clone(),
            args_summary: req.args_summary.clone(),
            call_sites: req
                .call_site_list()
                .into_iter()
                .map(|(tool, line, column)| CallSiteView {
                    dynamic: tool.is_none(),
                    tool,
                    line,
                    column,
                })
                .collect(),
            requested_at: AuditRecord::rfc3339_utc(now),
            expires_at: AuditRecord::rfc3339_utc(now + req.timeout),
            timeout_ms: u64::try_from(req.timeout.as_millis()).unwrap_or(u64::MAX),
            decision: None,
            decided_by: None,
            reason: None,
            answer: None,
            decided_with: None,
            channel: None,
            decided_at: None,
        }
    }

    pub(super) fn of_question(q: &QuestionSpec, id: &str, now: SystemTime) -> Self {
        ApprovalView {
            id: id.to_string(),
            eval_id: q.eval_id.clone(),
            caller: q.caller.clone(),
            profile: None,
            tool: "hitl_request".into(),
            kind: "question",
            risk: None,
            classification: None,
            options: Some(q.options.clone()),
            allowed_decisions: vec!["answer", "decline"],
            remember_for: None,
            reason_required: false,
            approvers: Vec::new(),
            rule_reason: None,
            args: json!({"question": q.message, "options": q.options}),
            args_summary: q
                .message
                .split('\n')
                .map(neutralize)
                .collect::<Vec<_>>()
                .join("\n"),
            call_sites: Vec::new(),
            requested_at: AuditRecord::rfc3339_utc(now),
            expires_at: AuditRecord::rfc3339_utc(now + q.timeout),
            timeout_ms: u64::try_from(q.timeout.as_millis()).unwrap_or(u64::MAX),
            decision: None,
            decided_by: None,
            reason: None,
            answer: None,
            decided_with: None,
            channel: None,
            decided_at: None,
        }
    }
}

/// A `hitl_request` question offered through the broker.
#[derive(Debug, Clone)]
pub struct QuestionSpec {
    /// The eval asking.
    pub eval_id: String,
    /// Who the eval runs for.
    pub caller: String,
    /// The question (shown neutralised).
    pub message: String,
    /// The options.
    pub options: Vec<String>,
    /// How long the human has.
    pub timeout: std::time::Duration,
}

/// What a decider chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// A decision about an approval request (`decline` also answers a question).
    Decision(ApprovalDecision),
    /// One of a question's options.
    Answer(String),
}

/// How a request ended, as the broker records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `approve_once` … `decline`, `answer`, `expired`.
    pub decision: &'static str,
    /// Who decided, when known.
    pub decided_by: Option<String>,
    /// Why, in the decider's words.
    pub reason: Option<String>,
    /// A question's chosen option.
    pub answer: Option<String>,
    /// Where the answer came from.
    pub channel: Channel,
    /// The permission of the ask's `approvers` the decider held.
    pub decided_with: Option<String>,
}

impl Outcome {
    /// The outcome of an approval answered on any channel.
    pub(crate) fn of_approval(a: &ApprovalAnswer) -> Self {
        Outcome {
            decision: decision_name(a.decision),
            decided_by: a.decided_by.clone(),
            reason: a.reason.clone(),
            answer: None,
            channel: a.channel,
            decided_with: a.decided_with.clone(),
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
    /// The choice does not fit the request: an answer for an approval, a decision other than
    /// `decline` for a question, an answer that is not an option (`422`).
    #[error("{0}")]
    Invalid(String),
    /// Where the request is kept (the durable store) cannot be reached now (`503`).
    #[error("{0}")]
    Unavailable(String),
}

/// A refusal: its status and `{"error": message}`.
pub(super) struct ApiError(pub(super) StatusCode, pub(super) String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        error(self.0, self.1)
    }
}

pub(super) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

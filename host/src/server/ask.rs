//! Asking the human behind a client: one [`Asker`] per eval, chosen by the client's protocol
//! generation and capabilities; [`AskApprover`] turns tool approvals into questions.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use codemode_policies::{ApprovalDecision, ApprovalRequest, Approver};
use codemode_runtime::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, JsonObject};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};

/// A form question: a message and the JSON Schema (flat object of primitives) of the answer.
#[derive(Debug, Clone)]
pub struct Question {
    /// What the human reads.
    pub message: String,
    /// `{"type": "object", "properties": {…}, "required": […]}`.
    pub schema: JsonObject,
}

impl Question {
    /// The MCP form elicitation for this question.
    pub fn to_params(&self) -> Result<ElicitRequestParams, String> {
        let schema =
            ElicitationSchema::from_json_schema(self.schema.clone()).map_err(|e| e.to_string())?;
        Ok(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: self.message.clone(),
            requested_schema: schema,
        })
    }
}

/// How a question ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The human submitted the form.
    Accept(Value),
    /// The human refused.
    Decline,
    /// The human dismissed the prompt.
    Cancel,
    /// Nobody answered in time.
    Timeout,
    /// Asking failed (the client errored or went away).
    Failed(String),
}

/// Someone who can be asked. Object-safe.
pub trait Asker: Send + Sync {
    /// Whether a human can be asked at all.
    fn supports(&self) -> bool;
    /// Asks, giving up after `timeout` (a timeout never approves anything).
    fn ask(&self, question: Question, timeout: Duration) -> BoxFuture<'_, Answer>;
}

/// Nobody to ask: clients without elicitation.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAsker;

impl Asker for NoAsker {
    fn supports(&self) -> bool {
        false
    }
    fn ask(&self, _question: Question, _timeout: Duration) -> BoxFuture<'_, Answer> {
        Box::pin(async { Answer::Failed("the client does not support elicitation".into()) })
    }
}

/// Clients on protocol 2025-11-25 and older: a server→client `elicitation/create` request.
#[derive(Clone)]
pub struct PeerAsker {
    peer: Peer<RoleServer>,
}

impl PeerAsker {
    /// Asks through this session's peer.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        PeerAsker { peer }
    }
}

impl Asker for PeerAsker {
    fn supports(&self) -> bool {
        true
    }
    fn ask(&self, question: Question, timeout: Duration) -> BoxFuture<'_, Answer> {
        Box::pin(async move {
            let params = match question.to_params() {
                Ok(p) => p,
                Err(e) => return Answer::Failed(format!("invalid question schema: {e}")),
            };
            match tokio::time::timeout(timeout, self.peer.create_elicitation(params)).await {
                Err(_) => Answer::Timeout,
                Ok(Err(e)) => Answer::Failed(e.to_string()),
                Ok(Ok(result)) => from_elicit_result(result.action, result.content),
            }
        })
    }
}

/// Maps an elicitation result to an [`Answer`].
pub fn from_elicit_result(action: ElicitationAction, content: Option<Value>) -> Answer {
    match action {
        ElicitationAction::Accept => Answer::Accept(content.unwrap_or(Value::Null)),
        ElicitationAction::Decline => Answer::Decline,
        _ => Answer::Cancel,
    }
}

/// The decisions a human can give, as they appear in the form.
const DECISIONS: [(&str, &str, ApprovalDecision); 5] = [
    (
        "approve_once",
        "Approve this call",
        ApprovalDecision::ApproveOnce,
    ),
    (
        "approve_tool_for_eval",
        "Approve this tool for the rest of this script",
        ApprovalDecision::ApproveToolForEval,
    ),
    (
        "approve_tool_for_session",
        "Approve this tool for the rest of the session",
        ApprovalDecision::ApproveToolForSession,
    ),
    ("decline", "Decline", ApprovalDecision::Decline),
    ("cancel", "Cancel", ApprovalDecision::Cancel),
];

/// The approval form: one required `decision` field with the five choices.
pub fn approval_question(req: &ApprovalRequest) -> Question {
    let mut message = format!("A script wants to call `{}`", req.tool);
    if let Some(profile) = &req.profile {
        let _ = write!(message, " (profile `{profile}`, {})", req.matched);
    }
    message.push('.');
    if let Some(reason) = &req.reason {
        let _ = write!(message, "\nReason: {reason}");
    }
    let _ = write!(message, "\n\nArguments:\n{}", req.args_summary);
    let others: Vec<String> = req
        .preview
        .calls
        .iter()
        .map(|c| match &c.tool {
            Some(tool) => format!("  line {}: {tool}", c.line),
            None => format!("  line {}: (computed at run time)", c.line),
        })
        .collect();
    if !others.is_empty() {
        let _ = write!(
            message,
            "\n\nThe script's tool calls:\n{}",
            others.join("\n")
        );
    }
    let _ = write!(
        message,
        "\n\nNo answer within {} s denies the call.",
        req.timeout.as_secs()
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "oneOf": DECISIONS.iter().map(|(value, title, _)| json!({"const": value, "title": title})).collect::<Vec<_>>(),
            }
        },
        "required": ["decision"]
    });
    Question {
        message,
        schema: schema.as_object().cloned().unwrap_or_default(),
    }
}

/// Reads the decision out of an accepted approval form; anything unexpected declines.
pub fn decision_from(answer: &Answer) -> ApprovalDecision {
    match answer {
        Answer::Accept(content) => {
            let chosen = content
                .get("decision")
                .and_then(Value::as_str)
                .unwrap_or("decline");
            DECISIONS
                .iter()
                .find(|(value, _, _)| *value == chosen)
                .map_or(ApprovalDecision::Decline, |(_, _, d)| *d)
        }
        Answer::Cancel => ApprovalDecision::Cancel,
        _ => ApprovalDecision::Decline,
    }
}

/// A policies [`Approver`] that asks through an [`Asker`].
#[derive(Clone)]
pub struct AskApprover {
    asker: Arc<dyn Asker>,
}

impl AskApprover {
    /// Approvals go to `asker`.
    pub fn new(asker: Arc<dyn Asker>) -> Self {
        AskApprover { asker }
    }
}

impl Approver for AskApprover {
    fn supports(&self) -> bool {
        self.asker.supports()
    }
    fn approve(&self, req: ApprovalRequest) -> BoxFuture<'_, ApprovalDecision> {
        Box::pin(async move {
            // The policy layer owns the approval timeout (and reports it as
            // `elicitation_timeout`): ask a little longer, and never turn our own timeout into
            // a decision.
            let timeout = req.timeout + std::time::Duration::from_secs(1);
            match self.asker.ask(approval_question(&req), timeout).await {
                Answer::Timeout => std::future::pending().await,
                answer => decision_from(&answer),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_from_answers() {
        let cases = [
            (
                Answer::Accept(json!({"decision": "approve_once"})),
                ApprovalDecision::ApproveOnce,
            ),
            (
                Answer::Accept(json!({"decision": "approve_tool_for_eval"})),
                ApprovalDecision::ApproveToolForEval,
            ),
            (
                Answer::Accept(json!({"decision": "approve_tool_for_session"})),
                ApprovalDecision::ApproveToolForSession,
            ),
            (
                Answer::Accept(json!({"decision": "decline"})),
                ApprovalDecision::Decline,
            ),
            (
                Answer::Accept(json!({"decision": "bogus"})),
                ApprovalDecision::Decline,
            ),
            (Answer::Accept(json!({})), ApprovalDecision::Decline),
            (Answer::Decline, ApprovalDecision::Decline),
            (Answer::Cancel, ApprovalDecision::Cancel),
            (Answer::Timeout, ApprovalDecision::Decline),
            (Answer::Failed("x".into()), ApprovalDecision::Decline),
        ];
        for (answer, want) in cases {
            assert_eq!(decision_from(&answer), want, "{answer:?}");
        }
    }
}

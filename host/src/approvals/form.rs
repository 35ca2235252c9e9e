//! The approval form: a policy layer's [`ApprovalRequest`] as a [`Question`] with one
//! `decision` field, and the answer back as an [`ApprovalDecision`].

use std::fmt::Write as _;
use std::sync::Arc;

use codemode_policies::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, Channel, neutralize,
};
use codemode_runtime::BoxFuture;
use serde_json::{Value, json};

use super::{Answer, Asker, Question};

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

/// The approval form: one required `decision` field with the choices the request's risk policy
/// allows (plus dismissing). Every script-chosen text in the message (tool name, rule reason,
/// arguments, call sites) is neutralised, and the risk is stated.
pub fn approval_question(req: &ApprovalRequest) -> Question {
    let mut message = format!("A script wants to call `{}`", neutralize(&req.tool));
    if let Some(profile) = &req.profile {
        let _ = write!(
            message,
            " (profile `{}`, {})",
            neutralize(profile),
            neutralize(&req.matched.to_string())
        );
    }
    let _ = write!(message, ".\nRisk: {}", req.risk.as_str());
    if let Some(reason) = &req.reason {
        let _ = write!(message, "\nReason: {}", neutralize(reason));
    }
    let _ = write!(message, "\n\nArguments:\n{}", req.args_summary);
    let others = call_sites(req);
    if !others.is_empty() {
        let _ = write!(message, "\n\nThe script's tool calls:\n{others}");
    }
    if req.risk_policy.require_reason {
        message.push_str("\n\nA reason is required at this risk level.");
    }
    let _ = write!(
        message,
        "\n\nNo answer within {} s denies the call.",
        req.timeout.as_secs()
    );
    let allowed = req.risk_policy.allowed_decisions();
    let mut schema = json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "oneOf": DECISIONS
                    .iter()
                    .filter(|(_, _, d)| allowed.contains(d))
                    .map(|(value, title, _)| json!({"const": value, "title": title}))
                    .collect::<Vec<_>>(),
            }
        },
        "required": ["decision"]
    });
    // A reason field only where the risk policy requires one (the form stays one click
    // otherwise; the HTTP API takes an optional reason with any decision).
    if req.risk_policy.require_reason {
        schema["properties"]["reason"] = json!({"type": "string", "title": "Reason"});
        schema["required"] = json!(["decision", "reason"]);
    }
    Question {
        message,
        schema: schema.as_object().cloned().unwrap_or_default(),
    }
}

/// The script's call sites, one neutralised line each (`  line 3: fs__write`).
pub fn call_sites(req: &ApprovalRequest) -> String {
    req.preview
        .calls
        .iter()
        .map(|c| match &c.tool {
            Some(tool) => format!("  line {}: {}", c.line, neutralize(tool)),
            None => format!("  line {}: (computed at run time)", c.line),
        })
        .collect::<Vec<_>>()
        .join("\n")
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

/// A form answer as an approval answer through `channel` (its decision and reason).
pub fn approval_answer(answer: &Answer, channel: Channel) -> ApprovalAnswer {
    ApprovalAnswer::new(decision_from(answer), channel).with_reason(reason_from(answer))
}

/// The `reason` of an accepted approval form, if one was given (not blank).
pub fn reason_from(answer: &Answer) -> Option<String> {
    match answer {
        Answer::Accept(content) => content
            .get("reason")
            .and_then(Value::as_str)
            .filter(|r| !r.trim().is_empty())
            .map(str::to_string),
        _ => None,
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
    fn approve(&self, req: ApprovalRequest) -> BoxFuture<'_, ApprovalAnswer> {
        Box::pin(async move {
            match ask_for_approval(self.asker.as_ref(), &req).await {
                Some(answer) => answer,
                None => ApprovalAnswer::new(ApprovalDecision::Decline, self.asker.channel()),
            }
        })
    }
}

/// Asks `asker` about `req`: the answer, or `None` when the channel could not answer (asking
/// failed). Never returns on a timeout: the policy layer owns the approval timeout (and reports
/// it as `elicitation_timeout`), so this asks a little longer and never turns its own timeout
/// into a decision.
pub async fn ask_for_approval(asker: &dyn Asker, req: &ApprovalRequest) -> Option<ApprovalAnswer> {
    let timeout = req.timeout + std::time::Duration::from_secs(1);
    let key = format!("codemode-{}", req.id);
    match asker.ask_keyed(&key, approval_question(req), timeout).await {
        Answer::Timeout => std::future::pending().await,
        Answer::Failed(_) => None,
        answer => {
            let reason = reason_from(&answer);
            let mut decision = decision_from(&answer);
            // A client may submit a choice the form did not offer: the risk policy still
            // decides what counts.
            if req.risk_policy.check(decision, reason.as_deref()).is_err() {
                decision = ApprovalDecision::Decline;
            }
            Some(ApprovalAnswer::new(decision, asker.channel()).with_reason(reason))
        }
    }
}

/// The script's call sites: `(tool or None when computed at run time, line, column)`.
pub fn call_sites_of(req: &ApprovalRequest) -> Vec<(Option<String>, u32, u32)> {
    req.preview
        .calls
        .iter()
        .map(|c| (c.tool.clone(), c.line, c.column))
        .collect()
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

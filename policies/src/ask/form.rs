//! The approval form: an [`ApprovalRequest`] as a [`Question`] with one `decision` field, and
//! the answer back as an [`ApprovalAnswer`].

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use super::asker::{Answer, Ask, AskKind, Question, Reply};
use crate::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, Channel, neutralize, quoted};

/// The decisions a human can give, as they appear in the form.
const DECISIONS: [(&str, &str, ApprovalDecision); 6] = [
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
    (
        "approve_remember",
        "Approve this call from now on",
        ApprovalDecision::ApproveRemember,
    ),
    ("decline", "Decline", ApprovalDecision::Decline),
    ("cancel", "Cancel", ApprovalDecision::Cancel),
];

impl ApprovalRequest {
    /// The approval form: one required `decision` field with the choices the request's risk policy
    /// allows (plus dismissing). The message names the caller the script runs for; every
    /// script-chosen text in it (tool name, rule reason, arguments, call sites) is neutralised, and
    /// the risk is stated.
    pub fn question(&self) -> Question {
        let req = self;
        // Who asks: a human approving for one caller must not be led to approve for another.
        let mut message = format!(
            "A script of caller `{}` wants to call `{}`",
            quoted(&req.caller.name),
            quoted(&req.tool)
        );
        if let Some(profile) = &req.profile {
            let _ = write!(
                message,
                " (profile `{}`, {})",
                neutralize(profile),
                neutralize(&req.matched.to_string())
            );
        }
        let _ = write!(
            message,
            ".\nRisk: {}\nClass: {}",
            req.risk.as_str(),
            req.classification.as_str()
        );
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
        // A caller without the right to decide sees the ask but may only withdraw it.
        let allowed = match req.risk_policy.approver_right(&req.caller, req.risk) {
            Ok(_) => req.risk_policy.allowed_decisions(),
            Err(lacking) => {
                let _ = write!(
                    message,
                    "\n\nYou cannot approve it here: {lacking}. It waits for such an approver on the HTTP approval API (request {}). Decline withdraws the call; Cancel only closes this prompt.",
                    req.id
                );
                vec![ApprovalDecision::Decline, ApprovalDecision::Cancel]
            }
        };
        let mut schema = json!({
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "oneOf": DECISIONS
                        .iter()
                        .filter(|(_, _, d)| allowed.contains(d))
                        .map(|(value, title, d)| json!({"const": value, "title": decision_title(req, *d, title)}))
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
}

/// A decision's title in the form: "from now on" says for how long (`rememberFor`).
fn decision_title(req: &ApprovalRequest, decision: ApprovalDecision, title: &str) -> String {
    match (decision, req.risk_policy.remember_for) {
        (ApprovalDecision::ApproveRemember, Some(period)) => {
            format!("{title} (for {})", crate::spell_period(period))
        }
        _ => title.to_string(),
    }
}

impl Ask {
    /// The ask of the policy layer's approval request `req`.
    pub fn approval(req: &ApprovalRequest) -> Self {
        Ask {
            id: req.id.clone(),
            question: req.question(),
            // A little longer than the request's own time: the policy layer owns the approval
            // timeout (and reports it as `elicitation_timeout`), so no channel's timeout may
            // decide first.
            timeout: req.timeout + Duration::from_secs(1),
            call: Some(req.call.clone()),
            resumed: req.resumed,
            kind: AskKind::Approval(Box::new(req.clone())),
        }
    }
}

/// The script's call sites, one neutralised line each (`  line 3: fs__write`).
pub(crate) fn call_sites(req: &ApprovalRequest) -> String {
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

impl ApprovalAnswer {
    /// A form answer as an approval answer through `channel` (its decision and reason). An
    /// accepted form whose `decision` is none the form offers is [`ApprovalAnswer::not_offered`].
    pub fn from_form(answer: &Answer, channel: Channel) -> ApprovalAnswer {
        if let Some(choice) = unoffered_choice(answer) {
            return ApprovalAnswer::not_offered(choice, channel).with_reason(reason_from(answer));
        }
        ApprovalAnswer::new(decision_from(answer), channel).with_reason(reason_from(answer))
    }
}

/// The `decision` of an accepted form when it names none of the form's decisions: as sent
/// (JSON text when it is not a string, empty when missing).
fn unoffered_choice(answer: &Answer) -> Option<String> {
    let Answer::Accept(content) = answer else {
        return None;
    };
    let choice = match content.get("decision") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    (!DECISIONS.iter().any(|(value, _, _)| *value == choice)).then_some(choice)
}

/// The `reason` of an accepted approval form, if one was given (not blank: whitespace and
/// invisible characters alone are no reason).
pub fn reason_from(answer: &Answer) -> Option<String> {
    match answer {
        Answer::Accept(content) => content
            .get("reason")
            .and_then(Value::as_str)
            .filter(|r| !crate::display::is_blank(r))
            .map(str::to_string),
        _ => None,
    }
}

impl ApprovalAnswer {
    /// The approval `reply` gives, `None` on a timeout (which never decides anything). A channel
    /// that failed declines, with the refusal's words as the reason when a cap refused the wait
    /// ([`Channel::Policy`]). Whether the request's risk policy allows the decision (a client may
    /// submit a choice the form did not offer) is the caller's to check.
    pub fn from_reply(reply: &Reply) -> Option<ApprovalAnswer> {
        let mut answer = match &reply.answer {
            Answer::Timeout => return None,
            Answer::Failed(why) => {
                let reason = (reply.channel == Channel::Policy).then(|| why.clone());
                ApprovalAnswer::new(ApprovalDecision::Decline, reply.channel).with_reason(reason)
            }
            answer => ApprovalAnswer::from_form(answer, reply.channel),
        };
        answer.decided_by.clone_from(&reply.decided_by);
        answer.decided_with.clone_from(&reply.decided_with);
        Some(answer)
    }
}

impl ApprovalAnswer {
    /// `answer` as the approval form filled in (its decision and reason), through its channel.
    pub fn to_reply(&self) -> Reply {
        let answer = self;
        let value = match &answer.not_offered {
            // As it was sent, so that it reads back as not offered.
            Some(choice) => choice.as_str(),
            None => DECISIONS
                .iter()
                .find(|(_, _, d)| *d == answer.decision)
                .map_or("decline", |(value, _, _)| *value),
        };
        let mut content = json!({ "decision": value });
        if let Some(reason) = &answer.reason {
            content["reason"] = json!(reason);
        }
        Reply {
            answer: Answer::Accept(content),
            channel: answer.channel,
            decided_by: answer.decided_by.clone(),
            decided_with: answer.decided_with.clone(),
        }
    }
}

impl ApprovalRequest {
    /// The script's call sites: `(tool or None when computed at run time, line, column)`.
    pub fn call_site_list(&self) -> Vec<(Option<String>, u32, u32)> {
        let req = self;
        req.preview
            .calls
            .iter()
            .map(|c| (c.tool.clone(), c.line, c.column))
            .collect()
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
                Answer::Accept(json!({"decision": "approve_remember"})),
                ApprovalDecision::ApproveRemember,
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

    #[test]
    fn a_choice_the_form_did_not_offer_is_told_apart_from_a_decline() {
        let cases = [
            (
                json!({"decision": "approve_forever"}),
                Some("approve_forever"),
            ),
            (json!({"decision": 1}), Some("1")),
            (json!({}), Some("")),
            (json!({"decision": "decline"}), None),
            (json!({"decision": "approve_once"}), None),
        ];
        for (content, want) in cases {
            let answer =
                ApprovalAnswer::from_form(&Answer::Accept(content.clone()), Channel::Elicitation);
            assert_eq!(answer.not_offered.as_deref(), want, "{content}");
            if want.is_some() {
                assert_eq!(answer.decision, ApprovalDecision::Decline);
            }
            // Through a channel and back, it stays what it was.
            assert_eq!(
                ApprovalAnswer::from_reply(&answer.to_reply()),
                Some(answer),
                "{content}"
            );
        }
        assert_eq!(
            ApprovalAnswer::from_form(&Answer::Decline, Channel::Http).not_offered,
            None
        );
    }
}

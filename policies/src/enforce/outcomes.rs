//! What a call the profile asks about gets when the answer does not approve it, or none
//! comes: declined (a refused or not-offered answer, an approval without the right), timed out
//! (no answer, no slot), or the profile's fallback when no one can be asked.

use std::time::Duration;

use codemode_runtime::ToolError;

use super::audit_guard::AuditGuard;
use super::denied;
use crate::audit::Decision;
use crate::{
    ApprovalAnswer, ApprovalDecision, Channel, DecisionRefused, Fallback, NotAnApprover, Profile,
    Risk, RiskPolicy, needed_permissions, neutralize,
};

/// An answer the risk policy refuses (`refused` says why): the call is declined.
pub(super) fn refused_answer(
    answer: &ApprovalAnswer,
    refused: &DecisionRefused,
    risk: Risk,
    tool: &str,
    what: &str,
    audit: &mut AuditGuard<'_>,
) -> (Decision, Result<(), ToolError>) {
    audit.decision_reason = Some(match &answer.reason {
        Some(r) => format!("refused answer ({refused}): {r}"),
        None => format!("refused answer ({refused})"),
    });
    (
        Decision::Declined,
        Err(denied(
            tool,
            "elicitation_declined",
            format!(
                "{what} was not approved: the answer \"{}\" was refused ({refused}; risk {risk}), so it counts as a decline",
                decision_name(answer.decision)
            ),
        )),
    )
}

/// An answer naming a choice the form did not offer (`choice`): the call is declined, and the
/// script and the audit say so rather than that a human declined.
pub(super) fn not_offered(
    choice: &str,
    tool: &str,
    what: &str,
    audit: &mut AuditGuard<'_>,
) -> (Decision, Result<(), ToolError>) {
    let choice = neutralize(choice);
    audit.decision_reason = Some(match audit.decision_reason.take() {
        Some(r) => format!("answer not offered (\"{choice}\"): {r}"),
        None => format!("answer not offered (\"{choice}\")"),
    });
    (
        Decision::Declined,
        Err(denied(
            tool,
            "elicitation_declined",
            format!(
                "{what} was not approved: the answer \"{choice}\" is not one the form offered, so it counts as a decline"
            ),
        )),
    )
}

/// The right by which `answer`'s decider may give it, when it approves and the risk level
/// names `approvers`: the one the approval API checked (`decided_with`), or, for the eval's own
/// client or terminal, the caller's (`own`). A decline needs none: the eval's own caller may
/// always withdraw its call (the API refuses a decline by a non-approver itself).
pub(super) fn approver_right(
    answer: &ApprovalAnswer,
    policy: &RiskPolicy,
    risk: Risk,
    own: Result<Option<String>, NotAnApprover>,
) -> Result<Option<String>, NotAnApprover> {
    let approves = !matches!(
        answer.decision,
        ApprovalDecision::Decline | ApprovalDecision::Cancel
    );
    if !approves || policy.approvers.is_empty() {
        return Ok(None);
    }
    match answer.channel {
        Channel::Http => answer.decided_with.clone().map(Some).ok_or(NotAnApprover {
            decider: neutralize(answer.decided_by.as_deref().unwrap_or("the approver")),
            risk,
            needed: needed_permissions(&policy.approvers),
        }),
        _ => own,
    }
}

/// No slot among the `max` of the eval freed within the time the call `had`: it is denied.
pub(super) fn queue_timeout(
    tool: &str,
    what: &str,
    max: usize,
    had: Duration,
) -> (Decision, Result<(), ToolError>) {
    (
        Decision::Timeout,
        Err(denied(
            tool,
            "queue_timeout",
            format!(
                "{what} needs approval, and waited {had:?} for a slot without getting one: this eval's other asks held all maxPendingApprovals = {max} slots; await them before asking for more"
            ),
        )),
    )
}

/// No answer came within the time the human `had`: the call is denied.
pub(super) fn timed_out(
    tool: &str,
    what: &str,
    had: std::time::Duration,
) -> (Decision, Result<(), ToolError>) {
    (
        Decision::Timeout,
        Err(denied(
            tool,
            "elicitation_timeout",
            format!("{what} needs approval, and none came within {had:?}"),
        )),
    )
}

/// The eval's caller lacks the right to decide (`lacking`) and no other approver can be asked:
/// the call is denied, whatever `elicitationFallback` says.
pub(super) fn no_approver(lacking: &NotAnApprover, tool: &str, what: &str) -> ToolError {
    denied(
        tool,
        "permission",
        format!(
            "{what} needs approval by an approver: {lacking}, and no other approver can be asked here (the HTTP approval API is not served); ask an approver to run it"
        ),
    )
}

/// An approval from a decider without the right (`lacking`): it counts as a decline.
pub(super) fn not_an_approver(
    lacking: &NotAnApprover,
    tool: &str,
    what: &str,
    audit: &mut AuditGuard<'_>,
) -> (Decision, Result<(), ToolError>) {
    audit.decision_reason = Some(format!("refused answer ({lacking})"));
    (
        Decision::Declined,
        Err(denied(
            tool,
            "elicitation_declined",
            format!("{what} was not approved: {lacking}, so the answer counts as a decline"),
        )),
    )
}

/// What a call the profile asks about gets when no one can be asked (`elicitationFallback`).
/// A risk level that requires approval or names approvers is never let through unasked.
pub(super) fn fallback(
    profile: &Profile,
    policy: &RiskPolicy,
    tool: &str,
    what: &str,
) -> (Decision, Result<(), ToolError>) {
    let supervised = policy.require_approval || !policy.approvers.is_empty();
    match profile.elicitation_fallback() {
        Fallback::Allow if !supervised => (Decision::Unsupported, Ok(())),
        _ => (
            Decision::Unsupported,
            Err(denied(
                tool,
                "elicitation_unsupported",
                format!(
                    "{what} needs approval and this client cannot be asked: ask the user to run it, or use a client with elicitation"
                ),
            )),
        ),
    }
}

/// How an answer is named in messages.
pub(super) fn decision_name(decision: ApprovalDecision) -> &'static str {
    match decision {
        ApprovalDecision::ApproveOnce => "approve once",
        ApprovalDecision::ApproveToolForEval => "approve for this script",
        ApprovalDecision::ApproveToolForSession => "approve for this session",
        ApprovalDecision::ApproveRemember => "approve from now on",
        ApprovalDecision::Decline => "decline",
        ApprovalDecision::Cancel => "dismiss",
    }
}

//! Asking a human about a call the profile asks about: approvals already given, the
//! profile's fallback when no one can be asked, the pending-approval cap, one ask at a time per
//! approval key, the approval timeout, and the answers the risk policy refuses.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use codemode_runtime::{CallContext, EvalId, ToolError};
use serde_json::Value;

use super::audit_guard::AuditGuard;
use super::remembered::AskedCall;
use super::{PolicyToolHost, denied, describe_match, lock};
use crate::approval::ApprovalKey;
use crate::audit::Decision;
use crate::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Ask, Channel, DecisionRefused, Disposition,
    Fallback, NotAnApprover, ParkedAsk, Profile, Risk, RiskPolicy, approval_of, bounded,
    needed_permissions, neutralize, new_request_id, summarize_args,
};

impl PolicyToolHost {
    /// Whether an approval remembered for the session or the eval covers `key`, counting
    /// only the scopes the call's risk policy allows (an approval given for a lower-risk call
    /// of the same tool does not carry over to a call whose risk forbids that scope).
    fn is_approved(&self, eval: EvalId, key: &ApprovalKey, policy: &RiskPolicy) -> bool {
        (policy.allow_session_approval && self.session.contains(key))
            || (policy.allow_eval_approval
                && match &self.eval_scope {
                    Some(scope) => scope.contains(key),
                    None => lock(&self.eval_approvals).contains(&(eval, key.clone())),
                })
    }

    fn queue(&self, key: &ApprovalKey) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.queues).entry(key.clone()).or_default().clone()
    }

    /// Decides an `ask`: whether the call may go ahead, and how that was decided (the
    /// channel, decider and reason of the answer go into `audit`).
    pub(super) async fn ask(
        &self,
        profile: &Profile,
        tool: &str,
        args: &Value,
        d: &Disposition,
        cx: &CallContext,
        audit: &mut AuditGuard<'_>,
    ) -> (Decision, Result<(), ToolError>) {
        let key = ApprovalKey::for_profile(&self.caller, profile, tool, &d.matched);
        let risk_policy = self.offered_policy(profile.risk_policy(d.risk));
        if self.is_approved(cx.eval_id, &key, &risk_policy) {
            audit.channel = Some(Channel::Policy);
            cx.note(REMEMBERED_NOTE);
            return (Decision::Approved, Ok(()));
        }
        let call = AskedCall {
            profile,
            tool,
            args,
            risk: d.risk,
        };
        if let Some(decided) = self
            .remembered_approval(&call, &risk_policy, cx, audit)
            .await
        {
            return decided;
        }
        // Made again after a park in the tool's own wait for a human (a `hitl_request`
        // question): that wait began only once this call had passed its ask.
        if ParkedAsk::question_of(cx).is_some() {
            audit.channel = Some(Channel::Policy);
            audit.decision_reason = Some("approved before its eval was parked".into());
            return (Decision::Approved, Ok(()));
        }
        let what = describe_match(tool, d.reason.as_deref());
        if !self.asker.supports() {
            audit.channel = Some(Channel::Fallback);
            return fallback(profile, &risk_policy, tool, &what);
        }
        // The eval's own client or terminal answers for its caller: without the right, the ask
        // waits for an approver on another channel, or is denied when there is none.
        let own_right = risk_policy.approver_right(&self.caller, d.risk);
        if let Err(lacking) = &own_right
            && !self.asker.approvers_elsewhere()
        {
            audit.channel = Some(Channel::Fallback);
            return (Decision::Denied, Err(no_approver(lacking, tool, &what)));
        }
        let max = profile.max_pending_approvals();
        let Some(_slot) = PendingSlot::take(&self.pending, max) else {
            return (Decision::Denied, Err(queue_full(tool, &what, max)));
        };
        // From here on the call waits for a human: if the eval ends first, the attempt is
        // recorded as not answered in time. The wait is one the eval may be parked in: its
        // note finds the question again when the eval resumes, with what is left of its time.
        audit.decision = Decision::Timeout;
        let (mut request, note) = self.approval_request(profile, tool, args, d, cx, &risk_policy);
        if let Some(change) = self.change_of(profile, tool, args, cx).await {
            request.args_summary = format!("{}\n\n{}", request.args_summary, change.trim_end());
        }
        let timeout = request.timeout;
        let ask = Ask::approval(&request);
        let answered = match self.taken_while_parked(&ask).await {
            Some(answer) => Ok(answer),
            None => {
                let _human = cx.awaiting_human(note.to_note());
                let queue = self.queue(&key);
                let _turn = queue.lock().await;
                if self.is_approved(cx.eval_id, &key, &risk_policy) {
                    audit.channel = Some(Channel::Policy);
                    cx.note(REMEMBERED_NOTE);
                    return (Decision::Approved, Ok(()));
                }
                // An answer "from now on" to the ask this one queued behind covers it too.
                if let Some(decided) = self
                    .remembered_approval(&call, &risk_policy, cx, audit)
                    .await
                {
                    return decided;
                }
                tokio::time::timeout(timeout, self.answer_to(ask)).await
            }
        };
        // A human was asked (now, or before the eval was parked): the time they had.
        let had = profile.approval_timeout_for(d.risk);
        audit.timeout_seconds = Some(had.as_secs_f64());
        let Ok(answer) = answered else {
            audit.channel = Some(Channel::Policy);
            return timed_out(tool, &what, had);
        };
        self.record_answerer(&answer, audit);
        // An answer the risk policy forbids never takes effect, whichever channel let it
        // through: it counts as a decline.
        if let Some(choice) = &answer.not_offered {
            return not_offered(choice, tool, &what, audit);
        }
        if let Err(refused) = risk_policy.check(answer.decision, answer.reason.as_deref()) {
            return refused_answer(&answer, &refused, d.risk, tool, &what, audit);
        }
        match approver_right(&answer, &risk_policy, d.risk, own_right) {
            Ok(right) => audit.approver_right = right,
            Err(lacking) => return not_an_approver(&lacking, tool, &what, audit),
        }
        if let (ApprovalDecision::ApproveRemember, Some(period)) =
            (answer.decision, risk_policy.remember_for)
        {
            self.remember(&answer, &call, period, cx, audit).await;
        }
        let taken = self.take_decision(&answer, key, cx.eval_id, tool, &what);
        if taken.0 == Decision::Approved {
            cx.note(approved_note(&answer));
        }
        taken
    }

    /// The channel, decider and reason of `answer`, in the audit record.
    fn record_answerer(&self, answer: &ApprovalAnswer, audit: &mut AuditGuard<'_>) {
        audit.channel = Some(answer.channel);
        audit.decided_by = answer
            .decided_by
            .clone()
            .or_else(|| self.answerer(answer.channel));
        audit.decision_reason.clone_from(&answer.reason);
    }

    /// Who answered through `channel` when the answer does not name them: the eval's own
    /// client is the one an elicitation reaches, and the terminal of `codemode run` is the
    /// local caller's. The HTTP API names its authenticated decider itself.
    fn answerer(&self, channel: Channel) -> Option<String> {
        matches!(channel, Channel::Elicitation | Channel::Terminal)
            .then(|| self.caller.name.clone())
    }

    /// The answer given to `ask` while its eval was parked, if any: taken before the call waits
    /// for a human (see [`crate::Asker::taken_while_parked`]).
    async fn taken_while_parked(&self, ask: &Ask) -> Option<ApprovalAnswer> {
        if !ask.resumed {
            return None;
        }
        approval_of(&self.asker.taken_while_parked(ask).await?)
    }

    /// The answer to `ask`. Never returns on a channel's timeout: the profile's approval timeout,
    /// around this, decides (and is audited as such).
    async fn answer_to(&self, ask: Ask) -> ApprovalAnswer {
        match approval_of(&self.asker.ask(ask).await) {
            Some(answer) => answer,
            None => std::future::pending().await,
        }
    }

    /// The request a human is shown about this call, and the note its wait leaves should the
    /// eval park. A call made again after its eval was parked asks as it did (same id, same
    /// deadline).
    fn approval_request(
        &self,
        profile: &Profile,
        tool: &str,
        args: &Value,
        d: &Disposition,
        cx: &CallContext,
        risk_policy: &RiskPolicy,
    ) -> (ApprovalRequest, ParkedAsk) {
        let resumed = ParkedAsk::of(cx);
        let (id, timeout) = match &resumed {
            Some(parked) => (parked.approval.clone(), parked.remaining()),
            None => (new_request_id(), profile.approval_timeout_for(d.risk)),
        };
        let mut note = ParkedAsk::approval(id.clone(), timeout);
        if let Some(parked) = &resumed {
            // The deadline as it was, not one recomputed from what is left.
            note.deadline_ms = parked.deadline_ms;
        }
        let request = ApprovalRequest {
            id,
            tool: tool.to_string(),
            args: args.clone(),
            args_summary: summarize_args(args),
            profile: Some(profile.name().to_string()),
            eval_id: cx.eval_id,
            call_id: cx.call_id,
            session_id: self.session_id.clone(),
            caller: self.caller.clone(),
            risk: d.risk,
            classification: self.class_of(tool),
            risk_policy: risk_policy.clone(),
            matched: d.matched.clone(),
            reason: d.reason.clone(),
            preview: self.preview.clone(),
            timeout,
            call: cx.clone(),
            resumed: resumed.is_some(),
        };
        (request, note)
    }

    /// Takes an answer the risk policy allows: remembers an approval for its scope, or
    /// refuses the call when it was declined.
    fn take_decision(
        &self,
        answer: &ApprovalAnswer,
        key: ApprovalKey,
        eval_id: EvalId,
        tool: &str,
        what: &str,
    ) -> (Decision, Result<(), ToolError>) {
        match answer.decision {
            // A rule "from now on" is recorded by the caller (`remember`), which may wait on a
            // store.
            ApprovalDecision::ApproveOnce | ApprovalDecision::ApproveRemember => {
                (Decision::Approved, Ok(()))
            }
            ApprovalDecision::ApproveToolForEval => {
                match &self.eval_scope {
                    Some(scope) => scope.insert(key),
                    None => {
                        lock(&self.eval_approvals).insert((eval_id, key));
                    }
                }
                (Decision::Approved, Ok(()))
            }
            ApprovalDecision::ApproveToolForSession => {
                self.session.insert(key);
                (Decision::Approved, Ok(()))
            }
            ApprovalDecision::Decline | ApprovalDecision::Cancel => {
                let by = answer
                    .decided_by
                    .as_deref()
                    .map_or_else(|| "the user".to_string(), |who| format!("`{who}`"));
                let because = answer
                    .reason
                    .as_deref()
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                (
                    Decision::Declined,
                    Err(denied(
                        tool,
                        "elicitation_declined",
                        format!("{what} was declined by {by}{because}"),
                    )),
                )
            }
        }
    }
}

/// An answer the risk policy refuses (`refused` says why): the call is declined.
fn refused_answer(
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
fn not_offered(
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
fn approver_right(
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

/// `max` approvals of the eval are pending already: the call is denied.
fn queue_full(tool: &str, what: &str, max: usize) -> ToolError {
    denied(
        tool,
        "denied",
        format!(
            "{what} needs approval, but {max} approvals are already pending in this eval: await them before asking for more"
        ),
    )
}

/// No answer came within the time the human `had`: the call is denied.
fn timed_out(
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
fn no_approver(lacking: &NotAnApprover, tool: &str, what: &str) -> ToolError {
    denied(
        tool,
        "permission",
        format!(
            "{what} needs approval by an approver: {lacking}, and no other approver can be asked here (the HTTP approval API is not served); ask an approver to run it"
        ),
    )
}

/// An approval from a decider without the right (`lacking`): it counts as a decline.
fn not_an_approver(
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
fn fallback(
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
fn decision_name(decision: ApprovalDecision) -> &'static str {
    match decision {
        ApprovalDecision::ApproveOnce => "approve once",
        ApprovalDecision::ApproveToolForEval => "approve for this script",
        ApprovalDecision::ApproveToolForSession => "approve for this session",
        ApprovalDecision::ApproveRemember => "approve from now on",
        ApprovalDecision::Decline => "decline",
        ApprovalDecision::Cancel => "dismiss",
    }
}

/// One of at most `max` questions of an eval waiting for a human at once
/// (`maxPendingApprovals`); freed on drop.
pub struct PendingSlot<'a>(&'a AtomicUsize);

impl<'a> PendingSlot<'a> {
    /// A slot of `count`, when fewer than `max` are taken.
    pub fn take(count: &'a AtomicUsize, max: usize) -> Option<Self> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| PendingSlot(count))
    }
}

impl Drop for PendingSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The ledger's note of a call a human's earlier answer covers ("approve for this eval" or
/// "for this session").
const REMEMBERED_NOTE: &str = "approved by an earlier answer for this eval or session";

/// The ledger's note of a call a human approved: who, through which channel, and for how long
/// when more than once (`approved by alice via http, for this session`). The decider's name is
/// neutralised and bounded here: the structured ledger carries the note as it is.
fn approved_note(answer: &ApprovalAnswer) -> String {
    let who = bounded(answer.decided_by.as_deref().unwrap_or("the user"), 80);
    let scope = match answer.decision {
        ApprovalDecision::ApproveToolForEval => ", for this eval",
        ApprovalDecision::ApproveToolForSession => ", for this session",
        ApprovalDecision::ApproveRemember => ", from now on",
        _ => "",
    };
    format!("approved by {who} via {}{scope}", answer.channel.as_str())
}

#[cfg(test)]
mod slot_tests {
    use super::*;

    #[test]
    fn at_most_max_slots_are_taken_and_a_freed_one_is_taken_again() {
        let count = AtomicUsize::new(0);
        let first = PendingSlot::take(&count, 2);
        let second = PendingSlot::take(&count, 2);
        assert!(first.is_some() && second.is_some());
        assert!(PendingSlot::take(&count, 2).is_none(), "none is left");
        drop(first);
        assert!(PendingSlot::take(&count, 2).is_some(), "a freed slot");
        drop(second);
        assert_eq!(count.load(Ordering::Acquire), 0);
    }
}

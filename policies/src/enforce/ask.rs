//! Asking a human about a call the profile asks about: approvals already given, the
//! profile's fallback when no one can be asked, the pending-approval cap, one ask at a time per
//! approval key, the approval timeout, and the answers the risk policy refuses.

use std::sync::Arc;

use codemode_runtime::{CallContext, EvalId, ToolError};
use serde_json::Value;

use super::audit_guard::AuditGuard;
use super::joined::{JoinKey, Leading, Role, SharedPrompt, shared_prompt};
use super::outcomes::{
    approver_right, fallback, no_approver, not_an_approver, not_offered, queue_timeout,
    refused_answer, timed_out,
};
use super::remembered::AskedCall;
use super::{PolicyToolHost, denied, describe_match, lock};
use crate::approval::ApprovalKey;
use crate::audit::Decision;
use crate::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Ask, Channel, Disposition, NotAnApprover,
    ParkedAsk, Profile, RiskPolicy, bounded, new_request_id, summarize_args,
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
        let asking = Asking {
            profile,
            tool,
            args,
            d,
            cx,
            key,
            risk_policy,
            what,
            own_right,
        };
        // An identical call already waiting for a human is joined, not asked about again
        // (never a call made again after a park: it finds its own question).
        let leading = if ParkedAsk::of(cx).is_some() {
            None
        } else {
            let join_key = JoinKey::new(
                self.join_scope,
                cx.eval_id,
                &self.caller,
                profile.name(),
                tool,
                args,
            );
            let _paused = cx.pause_timeout();
            match self.joins.join_or_lead(join_key).await {
                Role::Lead(leading) => Some(leading),
                Role::Join { id, prompt } => return self.join(&asking, &id, prompt, audit).await,
            }
        };
        self.lead(&asking, leading, audit).await
    }

    /// Asks a human about the call (after a slot and its turn), publishing the prompt for
    /// identical calls to join when `leading`.
    async fn lead(
        &self,
        a: &Asking<'_>,
        leading: Option<Leading>,
        audit: &mut AuditGuard<'_>,
    ) -> (Decision, Result<(), ToolError>) {
        let (profile, tool, cx) = (a.profile, a.tool, a.cx);
        let had = profile.approval_timeout_for(a.d.risk);
        let max = profile.max_pending_approvals();
        let slot = {
            let _paused = cx.pause_timeout();
            self.pending.wait(max, had).await
        };
        let Some(_slot) = slot else {
            audit.channel = Some(Channel::Policy);
            audit.timeout_seconds = Some(had.as_secs_f64());
            return queue_timeout(tool, &a.what, max, had);
        };
        // From here on the call waits for a human: if the eval ends first, the attempt is
        // recorded as not answered in time. The wait is one the eval may be parked in: its
        // note finds the question again when the eval resumes, with what is left of its time.
        audit.decision = Decision::Timeout;
        let (mut request, note) =
            self.approval_request(profile, tool, a.args, a.d, cx, &a.risk_policy);
        if let Some(change) = self.change_of(profile, tool, a.args, cx).await {
            request.args_summary = format!("{}\n\n{}", request.args_summary, change.trim_end());
        }
        let timeout = request.timeout;
        let id = request.id.clone();
        let ask = Ask::approval(&request);
        let answered = match self.taken_while_parked(&ask).await {
            Some(answer) => Ok(answer),
            None => {
                let _human = cx.awaiting_human(note.to_note());
                let queue = self.queue(&a.key);
                let _turn = queue.lock().await;
                if self.is_approved(cx.eval_id, &a.key, &a.risk_policy) {
                    audit.channel = Some(Channel::Policy);
                    cx.note(REMEMBERED_NOTE);
                    return (Decision::Approved, Ok(()));
                }
                // An answer "from now on" to the ask this one queued behind covers it too.
                if let Some(decided) = self
                    .remembered_approval(&a.call(), &a.risk_policy, cx, audit)
                    .await
                {
                    return decided;
                }
                let prompt = shared_prompt(self.asker.clone(), ask);
                if let Some(leading) = leading {
                    leading.publish(&id, &prompt);
                }
                tokio::time::timeout(timeout, answer_of(prompt.shared)).await
            }
        };
        // A human was asked (now, or before the eval was parked): the time they had.
        audit.timeout_seconds = Some(had.as_secs_f64());
        let Ok(answer) = answered else {
            audit.channel = Some(Channel::Policy);
            return timed_out(tool, &a.what, had);
        };
        self.settle(a, &answer, false, audit).await
    }

    /// Waits on the prompt of an identical call (request `id`), up to this call's own approval
    /// timeout, and takes its answer as a call of its own: audited with the ask it joined.
    async fn join(
        &self,
        a: &Asking<'_>,
        id: &str,
        prompt: SharedPrompt,
        audit: &mut AuditGuard<'_>,
    ) -> (Decision, Result<(), ToolError>) {
        audit.decision = Decision::Timeout;
        audit.joined_ask = Some(id.to_string());
        let had = a.profile.approval_timeout_for(a.d.risk);
        audit.timeout_seconds = Some(had.as_secs_f64());
        let answered = {
            let _paused = a.cx.pause_timeout();
            // A wait for a human like the leading call's, so the eval may park: the join ends
            // there, and made again on resume this call asks on its own, under an id reserved
            // for it now (an answer to the joined ask is taken by the call that led it).
            let own = ParkedAsk::approval(new_request_id(), had);
            let _human = a.cx.awaiting_human(own.to_note());
            tokio::time::timeout(had, answer_of(prompt)).await
        };
        let Ok(answer) = answered else {
            audit.channel = Some(Channel::Policy);
            return timed_out(a.tool, &a.what, had);
        };
        self.settle(a, &answer, true, audit).await
    }

    /// Takes a human's answer to the call's ask: what the risk policy refuses counts as a
    /// decline. A `joined` call is approved once at most: what an answer remembers (for the
    /// eval, the session) is remembered by the call that asked, for its own eval and session.
    async fn settle(
        &self,
        a: &Asking<'_>,
        answer: &ApprovalAnswer,
        joined: bool,
        audit: &mut AuditGuard<'_>,
    ) -> (Decision, Result<(), ToolError>) {
        let (tool, what) = (a.tool, a.what.as_str());
        self.record_answerer(answer, audit);
        // An answer the risk policy forbids never takes effect, whichever channel let it
        // through: it counts as a decline.
        if let Some(choice) = &answer.not_offered {
            return not_offered(choice, tool, what, audit);
        }
        if let Err(refused) = a
            .risk_policy
            .check(answer.decision, answer.reason.as_deref())
        {
            return refused_answer(answer, &refused, a.d.risk, tool, what, audit);
        }
        match approver_right(answer, &a.risk_policy, a.d.risk, a.own_right.clone()) {
            Ok(right) => audit.approver_right = right,
            Err(lacking) => return not_an_approver(&lacking, tool, what, audit),
        }
        let answer = if joined { once(answer) } else { answer.clone() };
        if let (ApprovalDecision::ApproveRemember, Some(period)) =
            (answer.decision, a.risk_policy.remember_for)
        {
            self.remember(&answer, &a.call(), period, a.cx, audit).await;
        }
        let taken = self.take_decision(&answer, a.key.clone(), a.cx.eval_id, tool, what);
        if taken.0 == Decision::Approved {
            a.cx.note(approved_note(&answer));
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
        ApprovalAnswer::from_reply(&self.asker.taken_while_parked(ask).await?)
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

/// What one call's ask is about, as [`PolicyToolHost::ask`] found it.
struct Asking<'c> {
    profile: &'c Profile,
    tool: &'c str,
    args: &'c Value,
    d: &'c Disposition,
    cx: &'c CallContext,
    key: ApprovalKey,
    risk_policy: RiskPolicy,
    /// The call as messages name it.
    what: String,
    /// The caller's own right to decide (see [`RiskPolicy::approver_right`]).
    own_right: Result<Option<String>, NotAnApprover>,
}

impl Asking<'_> {
    /// The call as a remembered rule matches it.
    fn call(&self) -> AskedCall<'_> {
        AskedCall {
            profile: self.profile,
            tool: self.tool,
            args: self.args,
            risk: self.d.risk,
        }
    }
}

/// The answer of a shared prompt. Never returns on a channel's timeout: the approval timeout
/// around this decides (and is audited as such).
async fn answer_of(prompt: SharedPrompt) -> ApprovalAnswer {
    match prompt.await {
        Some(answer) => answer,
        None => std::future::pending().await,
    }
}

/// `answer` as it applies to a call that joined the ask: an approval for this call only.
fn once(answer: &ApprovalAnswer) -> ApprovalAnswer {
    let mut once = answer.clone();
    if matches!(
        answer.decision,
        ApprovalDecision::ApproveToolForEval
            | ApprovalDecision::ApproveToolForSession
            | ApprovalDecision::ApproveRemember
    ) {
        once.decision = ApprovalDecision::ApproveOnce;
    }
    once
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

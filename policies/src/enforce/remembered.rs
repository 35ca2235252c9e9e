//! The policy layer's side of remembered approvals ([`crate::RememberedRules`]): a rule that
//! covers a call approves it without asking; an answer "from now on" records one.

use std::time::Duration;

use codemode_runtime::{CallContext, ToolError};
use serde_json::Value;

use super::PolicyToolHost;
use super::audit_guard::AuditGuard;
use crate::audit::Decision;
use crate::{ApprovalAnswer, Approved, Channel, Profile, Risk, RiskPolicy, bounded, neutralize};

/// The call an ask is about, as a remembered rule names it.
pub(super) struct AskedCall<'a> {
    pub(super) profile: &'a Profile,
    pub(super) tool: &'a str,
    pub(super) args: &'a Value,
    pub(super) risk: Risk,
}

impl PolicyToolHost {
    /// `policy` as this host offers it: "from now on" only where rules can be kept.
    pub(super) fn offered_policy(&self, mut policy: RiskPolicy) -> RiskPolicy {
        if self.remembered.is_none() {
            policy.remember_for = None;
        }
        policy
    }

    /// What identifies the upstream of `tool` now.
    fn upstream_of(&self, tool: &str) -> Option<String> {
        self.upstream_identity
            .as_ref()
            .and_then(|identity| identity(tool))
    }

    /// The approval a remembered rule gives `call`, if one covers it: the call goes ahead
    /// without asking, audited with channel `policy`, the approver of the rule, and a reason
    /// naming the rule. Only while the call's risk level still allows remembering (`policy`)
    /// and within its current `rememberFor` of the rule's creation, while the tool's upstream
    /// is the one approved, and, when the level names `approvers`, for a rule given by one of
    /// them; a store that cannot be read covers nothing (the human is asked as before).
    pub(super) async fn remembered_approval(
        &self,
        call: &AskedCall<'_>,
        policy: &RiskPolicy,
        cx: &CallContext,
        audit: &mut AuditGuard<'_>,
    ) -> Option<(Decision, Result<(), ToolError>)> {
        let rules = self.remembered.as_ref()?;
        let period = policy.remember_for?;
        let found = rules
            .matching(
                &self.caller.name,
                call.profile.name(),
                call.tool,
                call.args,
                call.risk,
            )
            .await;
        let rule = match found {
            Ok(rule) => rule?,
            Err(e) => {
                tracing::warn!(error = %e, "remembered approvals could not be read; asking");
                return None;
            }
        };
        if !rule.covers(
            rules.now_ms(),
            period,
            self.upstream_of(call.tool).as_deref(),
        ) {
            return None;
        }
        // A level that names approvers now is covered only by a rule one of them gave.
        let given_by_approver = rule
            .approved_with
            .as_ref()
            .is_some_and(|right| policy.approvers.contains(right));
        if !policy.approvers.is_empty() && !given_by_approver {
            return None;
        }
        audit.channel = Some(Channel::Policy);
        audit.decided_by.clone_from(&rule.approved_by);
        audit.decision_reason = Some(format!(
            "remembered rule {} (approved via {}, until {})",
            rule.id,
            rule.channel.as_str(),
            rule.expires_at()
        ));
        let who = bounded(rule.approved_by.as_deref().unwrap_or("the user"), 80);
        cx.note(format!(
            "approved by {who} from now on (rule {}, until {})",
            rule.id,
            rule.expires_at()
        ));
        Some((Decision::Approved, Ok(())))
    }

    /// Records `answer`, an approval "from now on" of `call`, as a rule lasting `period`; the
    /// audit reason names it. A store that cannot be written still approves this call (the
    /// human did): the script is warned that nothing was remembered.
    pub(super) async fn remember(
        &self,
        answer: &ApprovalAnswer,
        call: &AskedCall<'_>,
        period: Duration,
        cx: &CallContext,
        audit: &mut AuditGuard<'_>,
    ) {
        let Some(rules) = &self.remembered else {
            return;
        };
        let approved = Approved {
            caller: &self.caller.name,
            profile: call.profile.name(),
            tool: call.tool,
            args: call.args,
            risk: call.risk,
            upstream: self.upstream_of(call.tool),
            approved_by: audit.decided_by.clone(),
            approved_with: audit.approver_right.clone(),
            channel: answer.channel,
        };
        let note = match rules.remember(approved, period).await {
            Ok(rule) => format!("remembered as rule {} until {}", rule.id, rule.expires_at()),
            Err(e) => {
                let e = neutralize(&e.to_string());
                cx.warn(format!(
                    "the approval of `{}` from now on was not remembered: {e}",
                    call.tool
                ));
                format!("not remembered: {e}")
            }
        };
        audit.decision_reason = Some(match audit.decision_reason.take() {
            Some(reason) => format!("{reason}; {note}"),
            None => note,
        });
    }
}

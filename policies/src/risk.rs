//! Risk levels of tool calls, and what a human may answer to an ask of each level.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{ApprovalDecision, Caller};

/// How much harm a call could do, as the profile classifies it. Shown in every prompt and
/// written to the audit log; the profile's `riskPolicies` bound what a human may answer.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Reads that cannot hurt.
    Low,
    /// The default.
    #[default]
    Medium,
    /// Writes, or anything nobody classified that a profile asks about by default.
    High,
    /// Irreversible or costly.
    Critical,
}

impl Risk {
    /// Every level, lowest first.
    pub const ALL: [Risk; 4] = [Risk::Low, Risk::Medium, Risk::High, Risk::Critical];

    /// `low`, `medium`, `high` or `critical`.
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }

    /// The level named `name` (as [`Risk::as_str`] writes it).
    pub fn parse(name: &str) -> Option<Risk> {
        Risk::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// The level `codemode_config` read from the file.
impl From<codemode_config::Risk> for Risk {
    fn from(risk: codemode_config::Risk) -> Risk {
        match risk {
            codemode_config::Risk::Low => Risk::Low,
            codemode_config::Risk::Medium => Risk::Medium,
            codemode_config::Risk::High => Risk::High,
            codemode_config::Risk::Critical => Risk::Critical,
        }
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a human may answer to an ask of one risk level (a profile's `riskPolicies` entry).
///
/// The default allows every decision, with no reason required and the profile's own approval
/// timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RiskPolicy {
    /// How long the human has; `None`: the profile's `approvalTimeoutSeconds`.
    pub approval_timeout: Option<Duration>,
    /// Whether "approve this tool for the rest of the script" may be answered.
    pub allow_eval_approval: bool,
    /// Whether "approve this tool for the rest of the session" may be answered.
    pub allow_session_approval: bool,
    /// Whether approving or declining needs a reason in words.
    pub require_reason: bool,
    /// The permissions of which a decider must hold one to decide an ask of this level
    /// (`approvers`); empty: anyone who may approve at all (permission `approve` on the API,
    /// the eval's own caller on its client or terminal).
    pub approvers: Vec<String>,
    /// Whether every call of this level is asked about, even one the profile allows
    /// (`requireApproval`).
    pub require_approval: bool,
    /// How long "approve this call from now on" lasts (`rememberFor`); `None`: not offered.
    pub remember_for: Option<Duration>,
}

impl Default for RiskPolicy {
    fn default() -> Self {
        RiskPolicy {
            approval_timeout: None,
            allow_eval_approval: true,
            allow_session_approval: true,
            require_reason: false,
            approvers: Vec::new(),
            require_approval: false,
            remember_for: None,
        }
    }
}

/// Why a decider may not decide an ask: it holds none of the risk policy's `approvers`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{decider}` cannot decide a {risk}-risk ask: it needs one of the permissions {needed} (riskPolicies.{risk}.approvers)"
)]
pub struct NotAnApprover {
    /// The decider's name, neutralised.
    pub decider: String,
    /// The risk level of the ask.
    pub risk: Risk,
    /// The permissions of which one is needed, each in backquotes, comma-separated.
    pub needed: String,
}

/// Why a decision was refused by a [`RiskPolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecisionRefused {
    /// "For the rest of the script" is not allowed at this risk.
    #[error("approving for the rest of the script is not allowed at this risk level")]
    EvalApprovalNotAllowed,
    /// "For the rest of the session" is not allowed at this risk.
    #[error("approving for the rest of the session is not allowed at this risk level")]
    SessionApprovalNotAllowed,
    /// "From now on" is not allowed at this risk (no `rememberFor`).
    #[error("approving from now on is not allowed at this risk level (no rememberFor)")]
    RememberNotAllowed,
    /// A reason in words is required at this risk.
    #[error("a reason is required at this risk level")]
    ReasonRequired,
}

impl RiskPolicy {
    /// The decisions a human may give, in the order prompts offer them.
    pub fn allowed_decisions(&self) -> Vec<ApprovalDecision> {
        ApprovalDecision::ALL
            .into_iter()
            .filter(|d| self.check(*d, Some("-")).is_ok())
            .collect()
    }

    /// Whether `decision`, with `reason`, may be given under this policy. Dismissing the prompt
    /// ([`ApprovalDecision::Cancel`]) is always possible and needs no reason.
    ///
    /// # Errors
    /// [`DecisionRefused`] naming what the policy forbids.
    pub fn check(
        &self,
        decision: ApprovalDecision,
        reason: Option<&str>,
    ) -> Result<(), DecisionRefused> {
        match decision {
            ApprovalDecision::ApproveToolForEval if !self.allow_eval_approval => {
                return Err(DecisionRefused::EvalApprovalNotAllowed);
            }
            ApprovalDecision::ApproveToolForSession if !self.allow_session_approval => {
                return Err(DecisionRefused::SessionApprovalNotAllowed);
            }
            ApprovalDecision::ApproveRemember if self.remember_for.is_none() => {
                return Err(DecisionRefused::RememberNotAllowed);
            }
            ApprovalDecision::Cancel => return Ok(()),
            _ => {}
        }
        if self.require_reason && reason.is_none_or(crate::display::is_blank) {
            return Err(DecisionRefused::ReasonRequired);
        }
        Ok(())
    }
}

impl RiskPolicy {
    /// The permission of [`approvers`](Self::approvers) by which `decider` may decide an ask
    /// of `risk`: `Ok(None)` when the policy names no approvers (today's rule applies),
    /// `Ok(Some(permission))` the first one it holds.
    ///
    /// # Errors
    /// [`NotAnApprover`], naming the permissions of which one is needed.
    pub fn approver_right(
        &self,
        decider: &Caller,
        risk: Risk,
    ) -> Result<Option<String>, NotAnApprover> {
        if self.approvers.is_empty() {
            return Ok(None);
        }
        match self.approvers.iter().find(|p| decider.has_permission(p)) {
            Some(right) => Ok(Some(right.clone())),
            None => Err(NotAnApprover {
                decider: crate::neutralize(&decider.name),
                risk,
                needed: needed_permissions(&self.approvers),
            }),
        }
    }
}

/// `` `a`, `b` ``: permission names as messages list them (neutralised).
pub fn needed_permissions(permissions: &[String]) -> String {
    permissions
        .iter()
        .map(|p| format!("`{}`", crate::neutralize(p)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApprovalDecision::*;

    #[test]
    fn levels_parse_and_order() {
        for risk in Risk::ALL {
            assert_eq!(Risk::parse(risk.as_str()), Some(risk));
            assert_eq!(
                serde_json::to_value(risk).unwrap(),
                serde_json::json!(risk.as_str())
            );
        }
        assert_eq!(Risk::parse("severe"), None);
        assert!(Risk::Low < Risk::Medium && Risk::High < Risk::Critical);
        assert_eq!(Risk::default(), Risk::Medium);
    }

    #[test]
    fn policies_refuse_what_they_forbid() {
        let open = RiskPolicy::default();
        assert_eq!(
            open.allowed_decisions(),
            [
                ApproveOnce,
                ApproveToolForEval,
                ApproveToolForSession,
                Decline,
                Cancel
            ]
        );
        assert_eq!(open.check(Decline, None), Ok(()));
        assert_eq!(
            open.check(ApproveRemember, None),
            Err(DecisionRefused::RememberNotAllowed)
        );
        let remembering = RiskPolicy {
            remember_for: Some(Duration::from_secs(3600)),
            ..RiskPolicy::default()
        };
        assert_eq!(
            remembering.allowed_decisions(),
            [
                ApproveOnce,
                ApproveToolForEval,
                ApproveToolForSession,
                ApproveRemember,
                Decline,
                Cancel
            ]
        );

        let critical = RiskPolicy {
            approval_timeout: Some(Duration::from_secs(300)),
            allow_eval_approval: false,
            allow_session_approval: false,
            require_reason: true,
            ..RiskPolicy::default()
        };
        assert_eq!(critical.allowed_decisions(), [ApproveOnce, Decline, Cancel]);
        assert_eq!(
            critical.check(ApproveToolForEval, Some("ok")),
            Err(DecisionRefused::EvalApprovalNotAllowed)
        );
        assert_eq!(
            critical.check(ApproveToolForSession, Some("ok")),
            Err(DecisionRefused::SessionApprovalNotAllowed)
        );
        assert_eq!(
            critical.check(ApproveOnce, None),
            Err(DecisionRefused::ReasonRequired)
        );
        assert_eq!(
            critical.check(Decline, Some("  ")),
            Err(DecisionRefused::ReasonRequired)
        );
        // Only invisible characters: nothing a human can read, so no reason.
        assert_eq!(
            critical.check(ApproveOnce, Some("\u{200b}\u{3164}\u{e0020}\u{2060} ")),
            Err(DecisionRefused::ReasonRequired)
        );
        assert_eq!(
            critical.check(ApproveOnce, Some("checked the diff")),
            Ok(())
        );
        assert_eq!(critical.check(Cancel, None), Ok(()));
    }

    #[test]
    fn only_a_holder_of_one_of_the_approvers_permissions_may_decide() {
        let open = RiskPolicy::default();
        let bob = Caller::new("bob", ["approve"]);
        assert_eq!(open.approver_right(&bob, Risk::Critical), Ok(None));
        let guarded = RiskPolicy {
            approvers: vec!["approve:critical".into(), "oncall".into()],
            ..RiskPolicy::default()
        };
        let refused = guarded.approver_right(&bob, Risk::Critical).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "`bob` cannot decide a critical-risk ask: it needs one of the permissions `approve:critical`, `oncall` (riskPolicies.critical.approvers)"
        );
        let lead = Caller::new("lead\u{202e}", ["approve", "oncall"]);
        assert_eq!(
            guarded.approver_right(&lead, Risk::Critical),
            Ok(Some("oncall".to_string()))
        );
        // The local user holds no approver right: a right it held implicitly would be held by
        // anything reaching an unauthenticated listener.
        assert!(
            guarded
                .approver_right(&Caller::local(), Risk::High)
                .is_err()
        );
        let nobody = Caller::new("x\u{202e}y", Vec::<String>::new());
        assert!(
            guarded
                .approver_right(&nobody, Risk::High)
                .unwrap_err()
                .to_string()
                .starts_with("`x\\u202ey` cannot decide a high-risk ask")
        );
    }
}

//! Risk levels of tool calls, and what a human may answer to an ask of each level.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ApprovalDecision;

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
}

impl Default for RiskPolicy {
    fn default() -> Self {
        RiskPolicy {
            approval_timeout: None,
            allow_eval_approval: true,
            allow_session_approval: true,
            require_reason: false,
        }
    }
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
            ApprovalDecision::Cancel => return Ok(()),
            _ => {}
        }
        if self.require_reason && reason.is_none_or(crate::display::is_blank) {
            return Err(DecisionRefused::ReasonRequired);
        }
        Ok(())
    }
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

        let critical = RiskPolicy {
            approval_timeout: Some(Duration::from_secs(300)),
            allow_eval_approval: false,
            allow_session_approval: false,
            require_reason: true,
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
}

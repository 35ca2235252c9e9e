//! What a human answers to an ask ([`ApprovalDecision`]): what an [`Asker`](crate::Asker)
//! returns, and what a [`RiskPolicy`](crate::RiskPolicy) bounds.

/// A human's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApprovalDecision {
    /// Allow this call only.
    ApproveOnce,
    /// Allow this call and, for the rest of the eval, the calls of this tool that the same
    /// source asks about (see [`SessionApprovals`](crate::SessionApprovals)).
    ApproveToolForEval,
    /// Like [`ApproveToolForEval`](Self::ApproveToolForEval), for the rest of the session.
    ApproveToolForSession,
    /// Allow this call and remember it as a rule: later calls by the same caller, under the
    /// same profile, of the same tool with the same arguments, are allowed without asking until
    /// the rule expires (`riskPolicies.<level>.rememberFor`; see
    /// [`RememberedRules`](crate::RememberedRules)).
    ApproveRemember,
    /// Refuse this call (reason `elicitation_declined`).
    Decline,
    /// The human dismissed the prompt: treated as [`Decline`](Self::Decline).
    Cancel,
}

impl ApprovalDecision {
    /// Every decision, in the order prompts offer them.
    pub const ALL: [ApprovalDecision; 6] = [
        ApprovalDecision::ApproveOnce,
        ApprovalDecision::ApproveToolForEval,
        ApprovalDecision::ApproveToolForSession,
        ApprovalDecision::ApproveRemember,
        ApprovalDecision::Decline,
        ApprovalDecision::Cancel,
    ];

    /// Whether the call may go ahead.
    pub fn approves(self) -> bool {
        matches!(
            self,
            ApprovalDecision::ApproveOnce
                | ApprovalDecision::ApproveToolForEval
                | ApprovalDecision::ApproveToolForSession
                | ApprovalDecision::ApproveRemember
        )
    }
}

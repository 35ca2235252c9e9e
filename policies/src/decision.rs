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
    /// Refuse this call (reason `elicitation_declined`).
    Decline,
    /// The human dismissed the prompt: treated as [`Decline`](Self::Decline).
    Cancel,
}

impl ApprovalDecision {
    /// Every decision, in the order prompts offer them.
    pub const ALL: [ApprovalDecision; 5] = [
        ApprovalDecision::ApproveOnce,
        ApprovalDecision::ApproveToolForEval,
        ApprovalDecision::ApproveToolForSession,
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
        )
    }
}

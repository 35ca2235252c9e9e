//! `event: "rule"`: a remembered approval ([`crate::RememberedRule`]) created or revoked.

use serde::{Deserialize, Serialize};

use crate::Risk;

/// What happened to a remembered rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleAction {
    /// A human answered "approve this call from now on".
    Created,
    /// Someone revoked it (`codemode rules revoke`, `DELETE /approvals/rules/{id}`).
    Revoked,
}

/// `event: "rule"`: one remembered rule created or revoked. Its use is in the `tool_call`
/// record of each call it allowed (channel `policy`, the reason naming the rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleAuditRecord {
    /// When, RFC 3339 UTC.
    pub ts: String,
    /// `created` or `revoked`.
    pub action: RuleAction,
    /// The rule's id.
    pub rule_id: String,
    /// The caller the rule is for.
    pub caller: String,
    /// The profile it applies in.
    pub profile: String,
    /// The tool it allows.
    pub tool: String,
    /// Hex SHA-256 of the canonical JSON of the only arguments it allows.
    pub args_sha256: String,
    /// The highest risk level it covers (the risk of the call the human approved).
    pub risk: Risk,
    /// When it expires (RFC 3339 UTC).
    pub expires_at: String,
    /// Who created or revoked it, when known.
    pub by: Option<String>,
    /// Through which channel (`elicitation`, `http`, `terminal`, `cli`).
    pub channel: String,
}

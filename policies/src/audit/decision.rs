//! The `decision` field of the audit log's records: how a call (or an upstream's request) was
//! treated.

use serde::{Deserialize, Serialize};

/// How the policy layer treated a call: the `decision` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Allowed without asking.
    Allowed,
    /// Denied without asking (a deny list or rule, not in the allowlist, a tool that does not
    /// exist).
    Denied,
    /// A human approved it (now, or earlier for the eval or the session).
    Approved,
    /// A human declined or dismissed the prompt.
    Declined,
    /// Nobody answered in time, or no approval slot came free in time: denied.
    Timeout,
    /// Nobody could be asked; the profile's `elicitationFallback` decided (the `status` says
    /// which way).
    Unsupported,
    /// The arguments do not match the tool's `inputSchema`: refused before anyone was asked
    /// and before the tool was reached (`reason` starts with `invalid_arguments:`).
    Invalid,
}

impl Decision {
    /// The decision's name as the audit log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::Denied => "denied",
            Decision::Approved => "approved",
            Decision::Declined => "declined",
            Decision::Timeout => "timeout",
            Decision::Unsupported => "unsupported",
            Decision::Invalid => "invalid",
        }
    }
}

/// Where in the gateway a call's fate was decided: the `stage` field of a `tool_call` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The tool does not exist (`decision: "denied"`, `reason: "unknown_tool"`).
    Registry,
    /// The caller lacks a permission the call needs: the deciding rule's
    /// `requirePermissions`, or `allow_destructive` for a destructive tool (`reason:
    /// "permission"`); nobody was asked.
    Auth,
    /// The profile refused it without asking: a deny list or rule, a tool outside its
    /// allowlist (`reason: "denied"`).
    Permission,
    /// Its arguments fail the tool's `inputSchema`.
    Validation,
    /// A human (or the ask's fallback or timeout) decided it, and it was not run if refused.
    Approval,
    /// It was run: the tool's own answer (success or error) ended it.
    Execution,
    /// It was run, and its result was refused (`strictSchema`).
    Output,
}

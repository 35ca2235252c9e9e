//! The policy sections read into plain typed values, for `codemode_policies` to convert into
//! its decision types (globs, JSON Pointers and what concerns several keys are checked there).
//! Each value is read through [`de::read`] into the schema's type, so the walk reports every
//! wrong value at its path, and the schema types stay this crate's.

use std::time::Duration;

use serde_json::Value;

use crate::de;
use crate::reader::{JsonPath, Reader};
use crate::schema::leaves::{Globs, Permissions, RiskMap};
use crate::schema::policies;
use crate::schema::values::{Indexed, Risk};

/// One `outputs` rule as the file writes it, its values typed. A list holds `None` where an
/// element was wrong (its error recorded), so that each other element keeps its index; a value
/// that was wrong is `None` and [`Reader::reported`] at its path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputRuleRead {
    /// Where the rule is (`outputs[i]`).
    pub path: JsonPath,
    /// `tools`: the tool-name globs, unchecked.
    pub tools: Option<Vec<Option<String>>>,
    /// `mask`: JSON Pointers, unparsed.
    pub mask: Option<Vec<Option<String>>>,
    /// `redact`: JSON Pointers, unparsed.
    pub redact: Option<Vec<Option<String>>>,
    /// `allow`: JSON Pointers, unparsed.
    pub allow: Option<Vec<Option<String>>>,
    /// `strictSchema`.
    pub strict_schema: Option<bool>,
}

/// Reads one `outputs` rule, `v` at `path` (`outputs[i]`): `None` when it is no object (its
/// error recorded, as every wrong value's).
pub fn read_output_rule(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<OutputRuleRead> {
    let rule: policies::OutputRule = de::read(r, v, path)?;
    let list = |l: Option<Indexed<String>>| l.map(|l| l.0);
    Some(OutputRuleRead {
        path: path.clone(),
        tools: list(rule.tools),
        mask: list(rule.mask),
        redact: list(rule.redact),
        allow: list(rule.allow),
        strict_schema: rule.strict_schema,
    })
}

/// Reads permission names (`requirePermissions`, `evalRequiresPermissions`), `v` at `path`:
/// free strings but not blank ones, each kept once in written order; what is wrong is left
/// out (its error recorded).
pub fn read_permissions(r: &mut Reader, v: &Value, path: &JsonPath) -> Vec<String> {
    de::read::<Permissions>(r, v, path)
        .map(|p| p.0)
        .unwrap_or_default()
}

/// Reads a risk level (`defaultRisk`, a rule's `risk`), `v` at `path`.
pub fn read_risk(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<Risk> {
    de::read(r, v, path)
}

/// Reads a profile's `risk` map, `v` at `path`: its (glob, level) entries in written order,
/// each glob a valid [`tool_glob`](crate::tool_glob); an entry that is wrong is left out (its
/// error recorded).
pub fn read_risk_map(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<Vec<(String, Risk)>> {
    de::read::<RiskMap>(r, v, path).map(|m| m.0)
}

/// What a human may answer to a call of one risk level (`riskPolicies.<level>`), as the file
/// writes it: each value `None` when not given (or wrong, its error recorded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RiskPolicyRead {
    /// `approvalTimeoutSeconds`.
    pub approval_timeout: Option<Duration>,
    /// `allowSessionApproval`.
    pub allow_session_approval: Option<bool>,
    /// `allowEvalApproval`.
    pub allow_eval_approval: Option<bool>,
    /// `requireReason`.
    pub require_reason: Option<bool>,
    /// `approvers`: permission names, at least one, each once.
    pub approvers: Option<Vec<String>>,
    /// `requireApproval`.
    pub require_approval: Option<bool>,
    /// `rememberFor`.
    pub remember_for: Option<Duration>,
}

/// Reads a profile's `riskPolicies`, `v` at `path`: each level's policy, lowest level first; a
/// key that is no level, or a policy that is no object, is left out (its error recorded).
pub fn read_risk_policies(
    r: &mut Reader,
    v: &Value,
    path: &JsonPath,
) -> Vec<(Risk, RiskPolicyRead)> {
    let Some(policies) = de::read::<policies::RiskPolicies>(r, v, path) else {
        return Vec::new();
    };
    let levels = [
        (Risk::Low, policies.low),
        (Risk::Medium, policies.medium),
        (Risk::High, policies.high),
        (Risk::Critical, policies.critical),
    ];
    levels
        .into_iter()
        .filter_map(|(level, policy)| Some((level, risk_policy(policy?))))
        .collect()
}

fn risk_policy(p: policies::RiskPolicy) -> RiskPolicyRead {
    RiskPolicyRead {
        approval_timeout: p.approval_timeout_seconds.map(|s| s.0),
        allow_session_approval: p.allow_session_approval,
        allow_eval_approval: p.allow_eval_approval,
        require_reason: p.require_reason,
        approvers: p.approvers.map(|a| a.0),
        require_approval: p.require_approval,
        remember_for: p.remember_for.map(|d| d.0),
    }
}

/// `evaluation.classification` and `evaluation.localAllowDestructive` as the file writes them:
/// each class's tool-name globs (each a valid [`tool_glob`](crate::tool_glob)), `None` when not
/// given (or wrong, its error recorded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClassificationRead {
    /// `read`.
    pub read: Option<Vec<String>>,
    /// `write`.
    pub write: Option<Vec<String>>,
    /// `destructive`.
    pub destructive: Option<Vec<String>>,
    /// `localAllowDestructive`.
    pub local_allow_destructive: Option<bool>,
}

/// Reads `classification` and `localAllowDestructive`, the values (if given) of the
/// `evaluation` object at `path`: `localAllowDestructive` first, as it always was.
pub fn read_classification(
    r: &mut Reader,
    classes: Option<&Value>,
    local: Option<&Value>,
    path: &JsonPath,
) -> ClassificationRead {
    let local_allow_destructive =
        local.and_then(|v| de::read(r, v, &path.key("localAllowDestructive")));
    let classes = classes
        .and_then(|v| de::read::<policies::Classification>(r, v, &path.key("classification")));
    let list = |globs: Option<Globs>| globs.map(|g| g.0);
    match classes {
        Some(c) => ClassificationRead {
            read: list(c.read),
            write: list(c.write),
            destructive: list(c.destructive),
            local_allow_destructive,
        },
        None => ClassificationRead {
            local_allow_destructive,
            ..ClassificationRead::default()
        },
    }
}

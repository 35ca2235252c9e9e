//! The `evaluation` section read into plain typed values: its profiles, their lists, risk
//! keys and rules, and the tools' classes.

use std::time::Duration;

use serde_json::Value;

use crate::de;
use crate::reader::{JsonPath, Reader};
use crate::schema::leaves::{Globs, Permissions};
use crate::schema::policies::{self, Fallback};
use crate::schema::values::{Disposition, Risk};

/// A profile (`evaluation.profiles.<name>`) as the file writes it, its values typed: each
/// `None` when not given (or wrong, its error recorded; a list keeps its right elements).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ProfileRead {
    /// `description`, at most 500 characters.
    pub description: Option<String>,
    /// `allowlist`: tool-name globs, each valid.
    pub allowlist: Option<Vec<String>>,
    /// `denylist`: tool-name globs, each valid.
    pub denylist: Option<Vec<String>>,
    /// `asklist`: tool-name globs, each valid.
    pub asklist: Option<Vec<String>>,
    /// `rules`, less those that are no object.
    pub rules: Option<Vec<RuleRead>>,
    /// `elicitationFallback`.
    pub elicitation_fallback: Option<Fallback>,
    /// `approvalTimeoutSeconds`.
    pub approval_timeout: Option<Duration>,
    /// `maxPendingApprovals`, at least 1.
    pub max_pending_approvals: Option<usize>,
    /// `defaultDisposition`.
    pub default_disposition: Option<Disposition>,
    /// `requirePermissions`: each once, in written order.
    pub require_permissions: Option<Vec<String>>,
    /// `risk`: (tool-name glob, level) in written order, each glob valid.
    pub risk: Option<Vec<(String, Risk)>>,
    /// `defaultRisk`.
    pub default_risk: Option<Risk>,
    /// `riskPolicies`, lowest level first.
    pub risk_policies: Option<Vec<(Risk, RiskPolicyRead)>>,
    /// `resources`.
    pub resources: Option<AccessRead>,
    /// `prompts`.
    pub prompts: Option<AccessRead>,
    /// `sampling`.
    pub sampling: Option<Disposition>,
    /// `approvalDiffs`: tool → how to read it first, in written order.
    pub approval_diffs: Option<Vec<(String, ApprovalDiffRead)>>,
}

/// A profile's `resources` or `prompts`: glob lists, each glob valid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AccessRead {
    /// `allow`.
    pub allow: Option<Vec<String>>,
    /// `deny`.
    pub deny: Option<Vec<String>>,
}

/// A profile's rule (`rules[i]`) as the file writes it, its values typed: each `None` when not
/// given (or wrong, its error recorded; [`Reader::reported`] at its path).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RuleRead {
    /// Where the rule is (`…rules[i]`).
    pub path: JsonPath,
    /// `tools`: the tool-name globs, unchecked, a wrong element `None` where it stood.
    pub tools: Option<Vec<Option<String>>>,
    /// `when`: (JSON Pointer, regex) in written order.
    pub when: Vec<(String, regex::Regex)>,
    /// `whenPath`: (JSON Pointer, absolute path globs, at least one) in written order.
    pub when_path: Option<Vec<(String, Vec<String>)>>,
    /// `base`, unchecked.
    pub base: Option<String>,
    /// `disposition`.
    pub disposition: Option<Disposition>,
    /// `reason`.
    pub reason: Option<String>,
    /// `requirePermissions`: each once, in written order.
    pub require_permissions: Option<Vec<String>>,
    /// `risk`.
    pub risk: Option<Risk>,
}

/// An `approvalDiffs` entry: how to read a written file first (each a non-empty string).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApprovalDiffRead {
    /// `read`: the tool that reads the current content.
    pub read: String,
    /// `path`: the argument naming the file.
    pub path: String,
    /// `content`: the write's argument holding the new content.
    pub content: String,
}

/// The rules read, each with its path (`rules` at `path`); a wrong one is left out.
fn rules_read(rules: policies::Rules, path: &JsonPath) -> Vec<RuleRead> {
    let rules = rules.0.into_iter().enumerate();
    rules
        .filter_map(|(i, rule)| {
            let rule = rule?;
            Some(RuleRead {
                path: path.index(i),
                tools: rule.tools.map(|t| t.0),
                when: rule.when.map_or_else(Vec::new, |w| {
                    w.0.into_iter().map(|(p, pattern)| (p, pattern.0)).collect()
                }),
                when_path: rule
                    .when_path
                    .map(|w| w.0.into_iter().map(|(p, globs)| (p, globs.0)).collect()),
                base: rule.base,
                disposition: rule.disposition,
                reason: rule.reason,
                require_permissions: rule.require_permissions.map(|p| p.0),
                risk: rule.risk,
            })
        })
        .collect()
}

/// Reads one profile, `v` at `path`: `None` when it is no object (its error recorded, as every
/// wrong value's).
pub fn read_profile(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<ProfileRead> {
    let p: policies::Profile = de::read(r, v, path)?;
    let globs = |g: Option<Globs>| g.map(|g| g.0);
    let access = |a: Option<policies::Access>| {
        a.map(|a| AccessRead {
            allow: globs(a.allow),
            deny: globs(a.deny),
        })
    };
    Some(ProfileRead {
        description: p.description.map(|d| d.0),
        allowlist: globs(p.allowlist),
        denylist: globs(p.denylist),
        asklist: globs(p.asklist),
        rules: p.rules.map(|rules| rules_read(rules, &path.key("rules"))),
        elicitation_fallback: p.elicitation_fallback,
        approval_timeout: p.approval_timeout_seconds.map(|s| s.0),
        max_pending_approvals: p.max_pending_approvals.map(|n| n.0),
        default_disposition: p.default_disposition,
        require_permissions: p.require_permissions.map(|p| p.0),
        risk: p.risk.map(|m| m.0),
        default_risk: p.default_risk,
        risk_policies: p.risk_policies.map(risk_policies),
        resources: access(p.resources),
        prompts: access(p.prompts),
        sampling: p.sampling,
        approval_diffs: p.approval_diffs.map(|diffs| {
            let diff = |d: policies::ApprovalDiff| ApprovalDiffRead {
                read: d.read,
                path: d.path,
                content: d.content,
            };
            diffs.into_iter().map(|(tool, d)| (tool, diff(d))).collect()
        }),
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

/// A profile's `riskPolicies`, lowest level first.
fn risk_policies(policies: policies::RiskPolicies) -> Vec<(Risk, RiskPolicyRead)> {
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

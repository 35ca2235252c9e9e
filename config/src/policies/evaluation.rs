//! The `evaluation` section read into plain typed values: its profiles, their lists, risk
//! keys and rules, and the tools' classes.

use std::time::Duration;

use serde_json::Value;

use crate::de;
use crate::error::ConfigErrorKind;
use crate::reader::{JsonPath, Reader};
use crate::schema::leaves::Globs;
use crate::schema::policies::{self, Fallback};
use crate::schema::values::{Disposition, Risk};

/// The `evaluation` section as the file writes it, its values typed: each `None` when not given
/// (or wrong, its error recorded).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct EvaluationRead {
    /// `evalRequiresPermissions`: each once, in written order.
    pub eval_requires_permissions: Option<Vec<String>>,
    /// `profiles`: those that could be read (a wrong value in one is left out of it, its
    /// error recorded at its path), in written order.
    pub profiles: Vec<(String, ProfileRead)>,
    /// `defaultProfile`, naming one of the profiles.
    pub default_profile: Option<String>,
    /// `classification` and `localAllowDestructive`.
    pub classification: ClassificationRead,
}

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
    /// `tools`: the tool-name globs, each valid, a wrong element `None` where it stood (an
    /// empty list is the caller's to refuse).
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
                tools: rule
                    .tools
                    .map(|t| t.0.into_iter().map(|g| g.map(|g| g.0)).collect()),
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

/// Reads the `evaluation` section, `v` at `path`: every problem recorded in `r`, each at its
/// path, in the order of the file.
pub fn read_evaluation(r: &mut Reader, v: &Value, path: &JsonPath) -> EvaluationRead {
    // Every profile given, read or not, for `defaultProfile` to name.
    let names: Vec<String> = match v.get("profiles") {
        Some(Value::Object(profiles)) => profiles.keys().cloned().collect(),
        _ => Vec::new(),
    };
    let seed = policies::EvaluationSeed { profiles: &names };
    let Some(e) = de::read_with(r, v, path, seed) else {
        return EvaluationRead::default();
    };
    let profiles_at = path.key("profiles");
    let profiles = e.profiles.map_or_else(Vec::new, |p| p.0);
    let profiles = profiles
        .into_iter()
        .filter_map(|(name, p)| {
            let read = profile_read(p?, &profiles_at.key(&name));
            Some((name, read))
        })
        .collect();
    let classes = e.classification;
    let list = |globs: Option<Globs>| globs.map(|g| g.0);
    let classification = ClassificationRead {
        read: classes.as_ref().and_then(|c| list(c.read.clone())),
        write: classes.as_ref().and_then(|c| list(c.write.clone())),
        destructive: classes.and_then(|c| list(c.destructive)),
        local_allow_destructive: e.local_allow_destructive,
    };
    EvaluationRead {
        eval_requires_permissions: e.eval_requires_permissions.map(|p| p.0),
        profiles,
        default_profile: e.default_profile,
        classification,
    }
}

/// Reads one profile called `name`, `v` at `path` (for a profile given on its own): `None` when
/// it is no object (its error recorded, as every wrong value's).
pub fn read_profile(r: &mut Reader, name: &str, v: &Value, path: &JsonPath) -> Option<ProfileRead> {
    if let Some(problem) = policies::profile_name_problem(name) {
        r.error(path, ConfigErrorKind::InvalidName, problem);
    }
    let p: policies::Profile = de::read(r, v, path)?;
    Some(profile_read(p, path))
}

/// A profile read, its values made plain.
fn profile_read(p: policies::Profile, path: &JsonPath) -> ProfileRead {
    let globs = |g: Option<Globs>| g.map(|g| g.0);
    let access = |a: Option<policies::Access>| {
        a.map(|a| AccessRead {
            allow: globs(a.allow),
            deny: globs(a.deny),
        })
    };
    ProfileRead {
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
    }
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

#[cfg(test)]
mod tests {
    use crate::schema::policies::profile_name_problem;

    fn valid_profile_name(name: &str) -> bool {
        profile_name_problem(name).is_none()
    }

    #[test]
    fn profile_names() {
        for (name, ok) in [
            ("safe", true),
            ("a_B_9", true),
            ("", false),
            ("a-b", false),
            ("é", false),
        ] {
            assert_eq!(valid_profile_name(name), ok, "{name}");
        }
        assert!(valid_profile_name(&"x".repeat(32)));
        assert!(!valid_profile_name(&"x".repeat(33)));
    }
}

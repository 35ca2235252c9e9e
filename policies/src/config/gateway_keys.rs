//! The gateway's profile keys: permission lists (`requirePermissions`,
//! `evalRequiresPermissions`), risk levels (`risk`, `defaultRisk`, a rule's `risk`) and
//! `riskPolicies`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::profile::GlobList;
use crate::{ConfigErrorKind, Risk, RiskPolicy};
use codemode_config::values::{duration, positive_seconds};
use codemode_config::{JsonPath, Reader, describe};

/// An array of permission names: free strings, but not empty ones; duplicates are kept once.
pub(super) fn read_permissions(r: &mut Reader, v: &Value, path: &JsonPath) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (p, name) in r.strings(v, path).unwrap_or_default() {
        if name.trim().is_empty() {
            r.error(
                &p,
                ConfigErrorKind::InvalidValue,
                "a permission name cannot be empty",
            );
        } else if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// `"low"`, `"medium"`, `"high"` or `"critical"`.
pub(super) fn read_risk(r: &mut Reader, v: &Value, path: &JsonPath) -> Option<Risk> {
    let risk = v.as_str().and_then(Risk::parse);
    if risk.is_none() {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            format!(
                "expected \"low\", \"medium\", \"high\" or \"critical\", found {}",
                describe(v)
            ),
        );
    }
    risk
}

/// The `risk` map, `{"<glob>": "<level>"}`, its globs compiled in written order.
pub(super) fn read_risk_map(
    r: &mut Reader,
    v: &Value,
    path: &JsonPath,
) -> Option<(GlobList, Vec<Risk>)> {
    let before = r.error_count();
    let map = r.any_object(v, path)?;
    let mut globs = Vec::new();
    let mut levels = Vec::new();
    let mut paths = Vec::new();
    for (glob, level) in r.in_written_order(map, path) {
        let gpath = path.key(glob);
        if let Some(level) = read_risk(r, level, &gpath) {
            globs.push(glob.clone());
            levels.push(level);
            paths.push(gpath);
        }
    }
    let list = match GlobList::new(globs) {
        Ok(list) => list,
        Err(errors) => {
            for (i, msg) in errors {
                r.error(&paths[i], ConfigErrorKind::InvalidGlob, msg);
            }
            return None;
        }
    };
    (r.error_count() == before).then_some((list, levels))
}

/// `riskPolicies`: `{"<level>": {approvalTimeoutSeconds, allowSessionApproval,
/// allowEvalApproval, requireReason, approvers, requireApproval, rememberFor}}`.
pub(super) fn read_risk_policies(
    r: &mut Reader,
    v: &Value,
    path: &JsonPath,
) -> BTreeMap<Risk, RiskPolicy> {
    let mut out = BTreeMap::new();
    let Some(map) = r.any_object(v, path) else {
        return out;
    };
    for (level, pv) in map {
        let ppath = path.key(level);
        let Some(risk) = Risk::parse(level) else {
            r.error(
                &ppath,
                ConfigErrorKind::InvalidValue,
                format!(
                    "unknown risk level `{level}`; expected `low`, `medium`, `high` or `critical`"
                ),
            );
            continue;
        };
        let Some(fields) = r.object(pv, &ppath, codemode_config::policy_keys::risk_policy()) else {
            continue;
        };
        let mut policy = RiskPolicy::default();
        if let Some(v) = fields.get("approvalTimeoutSeconds") {
            policy.approval_timeout = positive_seconds(r, v, &ppath.key("approvalTimeoutSeconds"));
        }
        let flag = |r: &mut Reader, key: &str, slot: &mut bool| {
            if let Some(b) = fields.get(key).and_then(|v| r.bool(v, &ppath.key(key))) {
                *slot = b;
            }
        };
        flag(
            r,
            "allowSessionApproval",
            &mut policy.allow_session_approval,
        );
        flag(r, "allowEvalApproval", &mut policy.allow_eval_approval);
        flag(r, "requireReason", &mut policy.require_reason);
        flag(r, "requireApproval", &mut policy.require_approval);
        if let Some(v) = fields.get("approvers") {
            policy.approvers = read_approvers(r, v, &ppath.key("approvers"));
        }
        if let Some(v) = fields.get("rememberFor") {
            policy.remember_for = duration(r, v, &ppath.key("rememberFor"));
        }
        out.insert(risk, policy);
    }
    out
}

/// `approvers`: permission names, at least one (an empty list would let nobody decide, which
/// `requireApproval` or an ask then turns into a denial nobody can lift).
fn read_approvers(r: &mut Reader, v: &Value, path: &JsonPath) -> Vec<String> {
    let before = r.error_count();
    let approvers = read_permissions(r, v, path);
    if approvers.is_empty() && r.error_count() == before {
        r.error(
            path,
            ConfigErrorKind::InvalidValue,
            "an empty list lets nobody decide: name at least one permission (such as \"approve:critical\"), or remove the key for the default (any approver)",
        );
    }
    approvers
}

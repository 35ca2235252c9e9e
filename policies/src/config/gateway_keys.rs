//! The gateway's profile keys: permission lists (`requirePermissions`,
//! `evalRequiresPermissions`), risk levels (`risk`, `defaultRisk`, a rule's `risk`) and
//! `riskPolicies`. `codemode_config` reads them (every value checked at its path); here they
//! become this crate's types.

use std::collections::BTreeMap;

use super::globs::glob_list;
use crate::profile::GlobList;
use crate::{Risk, RiskPolicy};
use codemode_config::{JsonPath, Reader, RiskPolicyRead};

/// The `risk` map as `codemode_config` read it, `(glob, level)` in written order: its globs
/// compiled in that order.
pub(super) fn risk_map(
    r: &mut Reader,
    entries: Vec<(String, codemode_config::Risk)>,
    path: &JsonPath,
) -> Option<(GlobList, Vec<Risk>)> {
    let (globs, levels): (Vec<String>, Vec<_>) = entries.into_iter().unzip();
    let list = glob_list(r, globs, path)?;
    Some((list, levels.into_iter().map(Risk::from).collect()))
}

/// `riskPolicies` as `codemode_config` read them, what is not given the default.
pub(super) fn risk_policies(
    policies: Vec<(codemode_config::Risk, RiskPolicyRead)>,
) -> BTreeMap<Risk, RiskPolicy> {
    let mut out = BTreeMap::new();
    for (level, read) in policies {
        let default = RiskPolicy::default();
        let policy = RiskPolicy {
            approval_timeout: read.approval_timeout,
            allow_eval_approval: read
                .allow_eval_approval
                .unwrap_or(default.allow_eval_approval),
            allow_session_approval: read
                .allow_session_approval
                .unwrap_or(default.allow_session_approval),
            require_reason: read.require_reason.unwrap_or(default.require_reason),
            approvers: read.approvers.unwrap_or_default(),
            require_approval: read.require_approval.unwrap_or(default.require_approval),
            remember_for: read.remember_for,
        };
        out.insert(Risk::from(level), policy);
    }
    out
}

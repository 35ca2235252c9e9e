//! The pure decision for one call: [`Profile::disposition`].

use serde_json::Value;

use super::{Disposition, DispositionKind, MatchedBy, Profile};
use crate::Risk;

impl Profile {
    /// Decides a call of `tool` with `args`, checking in this order (deny > ask > allow, with
    /// the denylist absolute):
    ///
    /// 1. a `denylist` match denies, whatever the rules say;
    /// 2. `rules`, in order: the first rule whose `tools` globs match the name and whose `when`
    ///    conditions all hold decides ([`MatchedBy::Rule`], with the rule's reason) — a rule can
    ///    deny or ask what the lists would allow, and allow what the `asklist` would ask or the
    ///    `allowlist` leaves out;
    /// 3. an `asklist` match asks;
    /// 4. with an `allowlist`, a name matching none of it is denied, and one matching it is
    ///    allowed;
    /// 5. anything else gets `defaultDisposition` (default `allow`).
    ///
    /// A call allowed so whose risk level's policy requires approval
    /// (`riskPolicies.<level>.requireApproval`) is asked about instead
    /// ([`MatchedBy::RequireApproval`]).
    ///
    /// The risk ([`Disposition::risk`]) is the first matching rule's that sets `risk` (whichever
    /// rule decided), else the level of the first glob of the `risk` map matching the name (in
    /// written order), else `high` for a call asked about only through
    /// `defaultDisposition: "ask"`, else `defaultRisk`.
    ///
    /// Pure: the same inputs always give the same answer; the caller's permissions and
    /// approvals already granted are the enforcement layer's business
    /// ([`crate::PolicyToolHost`]).
    ///
    /// A tool with two names (the built-in `hitl_request` is also `human_intervention_request`,
    /// `TOOL_ALIASES`) is decided as one tool: a list entry or rule matches a call when it
    /// matches either name, so a deny, ask or allow written for one covers both.
    pub fn disposition(&self, tool: &str, args: &Value) -> Disposition {
        let names = names_of(tool);
        let names = names.as_slice();
        let rule = self
            .rules
            .iter()
            .enumerate()
            .find(|(_, r)| names.iter().any(|n| r.matches(n, args)));
        let first = |globs: &super::globs::GlobList| -> Option<String> {
            names
                .iter()
                .find_map(|n| globs.first_match(n).map(str::to_string))
        };
        let (kind, matched) = if let Some(g) = first(&self.denylist) {
            (DispositionKind::Deny, MatchedBy::Denylist(g))
        } else if let Some((i, rule)) = rule {
            (rule.disposition, MatchedBy::Rule(i))
        } else if let Some(g) = first(&self.asklist) {
            (DispositionKind::Ask, MatchedBy::Asklist(g))
        } else if let Some(allowlist) = &self.allowlist {
            if first(allowlist).is_some() {
                (DispositionKind::Allow, MatchedBy::Default)
            } else {
                (DispositionKind::Deny, MatchedBy::NotInAllowlist)
            }
        } else {
            (self.default_disposition, MatchedBy::Default)
        };
        let (reason, required_permissions) = match (&matched, rule) {
            (MatchedBy::Rule(_), Some((_, rule))) => {
                (rule.reason.clone(), rule.require_permissions.clone())
            }
            _ => (None, Vec::new()),
        };
        let risk = self.risk_of(names, args, kind, &matched);
        // A level that requires approval asks even about a call the profile allows.
        let (kind, matched) = match kind {
            DispositionKind::Allow if self.risk_policy(risk).require_approval => {
                (DispositionKind::Ask, MatchedBy::RequireApproval(risk))
            }
            _ => (kind, matched),
        };
        Disposition {
            kind,
            matched,
            reason,
            risk,
            required_permissions,
        }
    }

    fn risk_of(
        &self,
        names: &[&str],
        args: &Value,
        kind: DispositionKind,
        matched: &MatchedBy,
    ) -> Risk {
        if let Some(risk) = self
            .rules
            .iter()
            .filter(|r| r.risk.is_some())
            .find(|r| names.iter().any(|n| r.matches(n, args)))
            .and_then(|r| r.risk)
        {
            return risk;
        }
        if let Some(i) = names.iter().find_map(|n| self.risk_globs.first_index(n)) {
            return self.risk_levels[i];
        }
        let asked_by_default = kind == DispositionKind::Ask
            && *matched == MatchedBy::Default
            && self.allowlist.is_none();
        if asked_by_default {
            Risk::High
        } else {
            self.default_risk
        }
    }
}

#[cfg(test)]
#[path = "disposition_tests.rs"]
mod tests;

/// Tools with two names, each pair `(alias, name)`: one tool, decided as such.
pub(crate) const TOOL_ALIASES: &[(&str, &str)] = &[("human_intervention_request", "hitl_request")];

/// The names `tool` is decided under: its own, then its other name if it has two.
fn names_of(tool: &str) -> Vec<&str> {
    let other = TOOL_ALIASES.iter().find_map(|&(alias, name)| match tool {
        t if t == alias => Some(name),
        t if t == name => Some(alias),
        _ => None,
    });
    std::iter::once(tool).chain(other).collect()
}

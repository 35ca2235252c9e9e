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
    /// The risk ([`Disposition::risk`]) is the first matching rule's that sets `risk` (whichever
    /// rule decided), else the level of the first glob of the `risk` map matching the name (in
    /// written order), else `high` for a call asked about only through
    /// `defaultDisposition: "ask"`, else `defaultRisk`.
    ///
    /// Pure: the same inputs always give the same answer; the caller's permissions and
    /// approvals already granted are the enforcement layer's business
    /// ([`crate::PolicyToolHost`]).
    pub fn disposition(&self, tool: &str, args: &Value) -> Disposition {
        let rule = self
            .rules
            .iter()
            .enumerate()
            .find(|(_, r)| r.matches(tool, args));
        let (kind, matched) = if let Some(g) = self.denylist.first_match(tool) {
            (DispositionKind::Deny, MatchedBy::Denylist(g.to_string()))
        } else if let Some((i, rule)) = rule {
            (rule.disposition, MatchedBy::Rule(i))
        } else if let Some(g) = self.asklist.first_match(tool) {
            (DispositionKind::Ask, MatchedBy::Asklist(g.to_string()))
        } else if let Some(allowlist) = &self.allowlist {
            if allowlist.first_match(tool).is_some() {
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
        let risk = self.risk_of(tool, args, kind, &matched);
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
        tool: &str,
        args: &Value,
        kind: DispositionKind,
        matched: &MatchedBy,
    ) -> Risk {
        if let Some(risk) = self
            .rules
            .iter()
            .filter(|r| r.risk.is_some())
            .find(|r| r.matches(tool, args))
            .and_then(|r| r.risk)
        {
            return risk;
        }
        if let Some(i) = self.risk_globs.first_index(tool) {
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

//! The pure decision for one call: [`Profile::disposition`].

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Profile;

/// What to do with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DispositionKind {
    /// Call the tool.
    Allow,
    /// Refuse the call; the tool is never reached.
    Deny,
    /// Ask a human first.
    Ask,
}

impl DispositionKind {
    /// The lowercase name, as in the configuration and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            DispositionKind::Allow => "allow",
            DispositionKind::Deny => "deny",
            DispositionKind::Ask => "ask",
        }
    }
}

impl fmt::Display for DispositionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which part of the profile decided, so that prompts and denial messages can say why.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// The rule at this 0-based index of `rules`.
    Rule(usize),
    /// This `denylist` glob.
    Denylist(String),
    /// This `asklist` glob.
    Asklist(String),
    /// The profile has an `allowlist` and no glob of it matches.
    NotInAllowlist,
    /// Nothing matched (or there is no profile): allowed.
    Default,
}

impl fmt::Display for MatchedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchedBy::Rule(i) => write!(f, "rules[{i}]"),
            MatchedBy::Denylist(g) => write!(f, "denylist glob `{g}`"),
            MatchedBy::Asklist(g) => write!(f, "asklist glob `{g}`"),
            MatchedBy::NotInAllowlist => f.write_str("not in the allowlist"),
            MatchedBy::Default => f.write_str("no list or rule matched"),
        }
    }
}

/// The decision for one call, with what decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disposition {
    /// Allow, deny or ask.
    pub kind: DispositionKind,
    /// What decided.
    pub matched: MatchedBy,
    /// The deciding rule's `reason`, if a rule decided and it has one.
    pub reason: Option<String>,
}

impl Disposition {
    /// The disposition of every call when no profile is bound: allowed.
    pub fn unrestricted() -> Self {
        Disposition {
            kind: DispositionKind::Allow,
            matched: MatchedBy::Default,
            reason: None,
        }
    }
}

impl Profile {
    /// Decides a call of `tool` with `args`, checking in this order:
    ///
    /// 1. `rules`, in order: the first rule whose `tools` globs match the name and whose `when`
    ///    conditions all hold decides ([`MatchedBy::Rule`], with the rule's reason);
    /// 2. a `denylist` match denies;
    /// 3. an `asklist` match asks;
    /// 4. with an `allowlist`, a name matching none of it is denied;
    /// 5. anything else is allowed.
    ///
    /// Pure: the same inputs always give the same answer; approvals already granted are the
    /// enforcement layer's business ([`crate::PolicyToolHost`]).
    pub fn disposition(&self, tool: &str, args: &Value) -> Disposition {
        if let Some((i, rule)) = self
            .rules
            .iter()
            .enumerate()
            .find(|(_, r)| r.matches(tool, args))
        {
            return Disposition {
                kind: rule.disposition,
                matched: MatchedBy::Rule(i),
                reason: rule.reason.clone(),
            };
        }
        let (kind, matched) = if let Some(g) = self.denylist.first_match(tool) {
            (DispositionKind::Deny, MatchedBy::Denylist(g.to_string()))
        } else if let Some(g) = self.asklist.first_match(tool) {
            (DispositionKind::Ask, MatchedBy::Asklist(g.to_string()))
        } else if self
            .allowlist
            .as_ref()
            .is_some_and(|l| l.first_match(tool).is_none())
        {
            (DispositionKind::Deny, MatchedBy::NotInAllowlist)
        } else {
            (DispositionKind::Allow, MatchedBy::Default)
        };
        Disposition {
            kind,
            matched,
            reason: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DispositionKind::{Allow, Ask, Deny};
    use serde_json::json;

    fn profile(v: Value) -> Profile {
        Profile::from_json("p", &v).unwrap_or_else(|e| panic!("{e}"))
    }

    fn m_deny(g: &str) -> MatchedBy {
        MatchedBy::Denylist(g.into())
    }
    fn m_ask(g: &str) -> MatchedBy {
        MatchedBy::Asklist(g.into())
    }

    /// Every pair of lists overlapping on the same name.
    #[test]
    fn list_precedence() {
        let cases: Vec<(Value, &str, DispositionKind, MatchedBy)> = vec![
            // deny vs ask: deny wins
            (
                json!({"denylist": ["a__*"], "asklist": ["a__*"]}),
                "a__x",
                Deny,
                m_deny("a__*"),
            ),
            // deny vs allow: deny wins
            (
                json!({"denylist": ["a__x"], "allowlist": ["a__*"]}),
                "a__x",
                Deny,
                m_deny("a__x"),
            ),
            // ask vs allow: ask wins
            (
                json!({"asklist": ["a__x"], "allowlist": ["a__*"]}),
                "a__x",
                Ask,
                m_ask("a__x"),
            ),
            // all three
            (
                json!({"denylist": ["a__x"], "asklist": ["a__*"], "allowlist": ["*"]}),
                "a__x",
                Deny,
                m_deny("a__x"),
            ),
            (
                json!({"denylist": ["a__x"], "asklist": ["a__*"], "allowlist": ["*"]}),
                "a__y",
                Ask,
                m_ask("a__*"),
            ),
            (
                json!({"denylist": ["a__x"], "asklist": ["a__*"], "allowlist": ["*"]}),
                "b__y",
                Allow,
                MatchedBy::Default,
            ),
            // allowlist present, not matching
            (
                json!({"allowlist": ["time__*"]}),
                "fs__read",
                Deny,
                MatchedBy::NotInAllowlist,
            ),
            (
                json!({"allowlist": ["time__*"]}),
                "time__now",
                Allow,
                MatchedBy::Default,
            ),
            (
                json!({"allowlist": []}),
                "anything",
                Deny,
                MatchedBy::NotInAllowlist,
            ),
            // an asklist match needs no allowlist entry
            (
                json!({"allowlist": ["x"], "asklist": ["y"]}),
                "y",
                Ask,
                m_ask("y"),
            ),
            // no lists
            (json!({}), "anything", Allow, MatchedBy::Default),
            // first glob of a list is reported
            (
                json!({"denylist": ["a__*", "*"]}),
                "a__b",
                Deny,
                m_deny("a__*"),
            ),
            (
                json!({"denylist": ["z", "*", "a__*"]}),
                "a__b",
                Deny,
                m_deny("*"),
            ),
        ];
        for (cfg, tool, kind, matched) in cases {
            let d = profile(cfg.clone()).disposition(tool, &json!({}));
            assert_eq!((d.kind, &d.matched), (kind, &matched), "{cfg} {tool}");
            assert_eq!(d.reason, None);
        }
    }

    #[test]
    fn rules() {
        let p = profile(json!({
            "denylist": ["fs__delete_*"],
            "asklist": ["fs__*"],
            "allowlist": ["fs__*", "time__*"],
            "rules": [
                {"tools": ["fs__write_file"], "when": {"/path": "^/etc/"}, "disposition": "deny", "reason": "system files"},
                {"tools": ["fs__write_file"], "when": {"/path": "^/tmp/", "/mode": "^6[0-4]4$"}, "disposition": "allow"},
                {"tools": ["fs__delete_*"], "when": {"/force": "^false$"}, "disposition": "ask", "reason": "soft delete"},
                {"tools": ["calc__*"], "when": {"/n": "^4[0-9]$"}, "disposition": "allow"},
                {"tools": ["time__*"], "when": {"": "secret"}, "disposition": "deny"},
                {"tools": ["fs__write_file", "other"], "disposition": "ask", "reason": "second match"},
                {"tools": ["fs__write_file"], "disposition": "deny", "reason": "never reached"}
            ]
        }));
        let reason = |s: &str| Some(s.to_string());
        let cases: Vec<(&str, Value, DispositionKind, MatchedBy, Option<String>)> = vec![
            // `when` matches: the rule beats the lists
            (
                "fs__write_file",
                json!({"path": "/etc/passwd"}),
                Deny,
                MatchedBy::Rule(0),
                reason("system files"),
            ),
            // several conditions, all must hold; a number is matched as its JSON text
            (
                "fs__write_file",
                json!({"path": "/tmp/x", "mode": 644}),
                Allow,
                MatchedBy::Rule(1),
                None,
            ),
            (
                "fs__write_file",
                json!({"path": "/tmp/x", "mode": 777}),
                Ask,
                MatchedBy::Rule(5),
                reason("second match"),
            ),
            // missing pointer: no match, falls through to the next rule (first match wins)
            (
                "fs__write_file",
                json!({"path": "/tmp/x"}),
                Ask,
                MatchedBy::Rule(5),
                reason("second match"),
            ),
            (
                "fs__write_file",
                json!({}),
                Ask,
                MatchedBy::Rule(5),
                reason("second match"),
            ),
            // mismatch
            (
                "fs__write_file",
                json!({"path": "/home/me"}),
                Ask,
                MatchedBy::Rule(5),
                reason("second match"),
            ),
            // a rule beats the denylist; a boolean is matched as its JSON text
            (
                "fs__delete_file",
                json!({"force": false}),
                Ask,
                MatchedBy::Rule(2),
                reason("soft delete"),
            ),
            (
                "fs__delete_file",
                json!({"force": true}),
                Deny,
                m_deny("fs__delete_*"),
                None,
            ),
            (
                "fs__delete_file",
                json!({"force": "false"}),
                Ask,
                MatchedBy::Rule(2),
                reason("soft delete"),
            ),
            // a rule beats the allowlist
            (
                "calc__add",
                json!({"n": 42}),
                Allow,
                MatchedBy::Rule(3),
                None,
            ),
            (
                "calc__add",
                json!({"n": 4.5}),
                Deny,
                MatchedBy::NotInAllowlist,
                None,
            ),
            (
                "calc__add",
                json!({"n": "42"}),
                Allow,
                MatchedBy::Rule(3),
                None,
            ),
            // the empty pointer is the whole arguments value (compact JSON for an object)
            (
                "time__now",
                json!({"tz": "secret"}),
                Deny,
                MatchedBy::Rule(4),
                None,
            ),
            (
                "time__now",
                json!("a secret"),
                Deny,
                MatchedBy::Rule(4),
                None,
            ),
            (
                "time__now",
                json!({"tz": "UTC"}),
                Allow,
                MatchedBy::Default,
                None,
            ),
            // the lists, when no rule matches
            ("fs__read_file", json!({}), Ask, m_ask("fs__*"), None),
            (
                "other",
                json!({}),
                Ask,
                MatchedBy::Rule(5),
                reason("second match"),
            ),
            ("web__get", json!({}), Deny, MatchedBy::NotInAllowlist, None),
        ];
        for (tool, args, kind, matched, why) in cases {
            let d = p.disposition(tool, &args);
            assert_eq!(
                d,
                Disposition {
                    kind,
                    matched,
                    reason: why
                },
                "{tool} {args}"
            );
        }
    }

    #[test]
    fn pointers_into_arrays_and_escapes() {
        let p = profile(json!({"rules": [
            {"tools": ["*"], "when": {"/files/1": "\\.env$"}, "disposition": "deny"},
            {"tools": ["*"], "when": {"/a~1b/c~0d": "^yes$"}, "disposition": "ask"},
            {"tools": ["*"], "when": {"/v": "^null$"}, "disposition": "ask"}
        ]}));
        let cases: Vec<(Value, DispositionKind)> = vec![
            (json!({"files": ["a", "b/.env"]}), Deny),
            (json!({"files": ["a/.env"]}), Allow),
            (json!({"a/b": {"c~d": "yes"}}), Ask),
            (json!({"v": null}), Ask),
        ];
        for (args, kind) in cases {
            assert_eq!(p.disposition("t", &args).kind, kind, "{args}");
        }
    }

    #[test]
    fn display_of_matched() {
        assert_eq!(MatchedBy::Rule(2).to_string(), "rules[2]");
        assert_eq!(m_deny("a*").to_string(), "denylist glob `a*`");
        assert_eq!(
            serde_json::to_value(MatchedBy::Rule(2)).unwrap(),
            json!({"rule": 2})
        );
        assert_eq!(
            serde_json::to_value(MatchedBy::NotInAllowlist).unwrap(),
            json!("not_in_allowlist")
        );
    }
}

//! Table-driven tests of [`Profile::disposition`]: list precedence, rules, the seeds'
//! semantics, risks and rule permissions.
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
        // the denylist is absolute: no rule allows or asks what it denies
        (
            "fs__delete_file",
            json!({"force": false}),
            Deny,
            m_deny("fs__delete_*"),
            None,
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
            Deny,
            m_deny("fs__delete_*"),
            None,
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
            (d.kind, d.matched, d.reason),
            (kind, matched, why),
            "{tool} {args}"
        );
    }
}

/// §5 of the gateway semantics: deny > ask > allow, the denylist absolute, rules over the
/// other lists, `defaultDisposition` only without an allowlist.
#[test]
fn seed_semantics() {
    let base = json!({
        "denylist": ["pay__refund_all"],
        "asklist": ["pay__*"],
        "rules": [
            {"tools": ["pay__refund_all"], "disposition": "allow"},
            {"tools": ["pay__refund_all"], "disposition": "ask"},
            {"tools": ["pay__balance"], "disposition": "allow"},
            {"tools": ["fs__read"], "when": {"/path": "^/secret"}, "disposition": "deny"},
            {"tools": ["fs__read"], "when": {"/path": "^/home"}, "disposition": "ask"}
        ]
    });
    let with = |extra: Value| {
        let mut v = base.clone();
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let cases: Vec<(Value, &str, Value, DispositionKind, MatchedBy)> = vec![
        // the denylist beats an allowing rule and an asking rule
        (
            base.clone(),
            "pay__refund_all",
            json!({}),
            Deny,
            m_deny("pay__refund_all"),
        ),
        // a rule allows what the asklist would ask
        (
            base.clone(),
            "pay__balance",
            json!({}),
            Allow,
            MatchedBy::Rule(2),
        ),
        (base.clone(), "pay__charge", json!({}), Ask, m_ask("pay__*")),
        // rules deny or ask what would be allowed
        (
            base.clone(),
            "fs__read",
            json!({"path": "/secret/k"}),
            Deny,
            MatchedBy::Rule(3),
        ),
        (
            base.clone(),
            "fs__read",
            json!({"path": "/home/me"}),
            Ask,
            MatchedBy::Rule(4),
        ),
        (
            base.clone(),
            "fs__read",
            json!({"path": "/tmp"}),
            Allow,
            MatchedBy::Default,
        ),
        // defaultDisposition, for what nothing matched
        (
            with(json!({"defaultDisposition": "ask"})),
            "fs__read",
            json!({}),
            Ask,
            MatchedBy::Default,
        ),
        (
            with(json!({"defaultDisposition": "deny"})),
            "web__get",
            json!({}),
            Deny,
            MatchedBy::Default,
        ),
        (
            with(json!({"defaultDisposition": "allow"})),
            "web__get",
            json!({}),
            Allow,
            MatchedBy::Default,
        ),
        // ... and not for what a list or rule matched
        (
            with(json!({"defaultDisposition": "deny"})),
            "pay__balance",
            json!({}),
            Allow,
            MatchedBy::Rule(2),
        ),
        (
            with(json!({"defaultDisposition": "allow"})),
            "pay__charge",
            json!({}),
            Ask,
            m_ask("pay__*"),
        ),
        // with an allowlist, defaultDisposition does not apply
        (
            with(json!({"defaultDisposition": "ask", "allowlist": ["fs__*"]})),
            "fs__read",
            json!({}),
            Allow,
            MatchedBy::Default,
        ),
        (
            with(json!({"defaultDisposition": "allow", "allowlist": ["fs__*"]})),
            "web__get",
            json!({}),
            Deny,
            MatchedBy::NotInAllowlist,
        ),
        (
            with(json!({"defaultDisposition": "ask", "allowlist": ["fs__*"]})),
            "web__get",
            json!({}),
            Deny,
            MatchedBy::NotInAllowlist,
        ),
    ];
    for (cfg, tool, args, kind, matched) in cases {
        let d = profile(cfg.clone()).disposition(tool, &args);
        assert_eq!(
            (d.kind, &d.matched),
            (kind, &matched),
            "{cfg} {tool} {args}"
        );
    }
}

/// The risk of each call: first matching rule with a `risk`, else the first `risk` glob,
/// else `high` for a default ask, else `defaultRisk`.
#[test]
fn risks() {
    let p = |extra: Value| {
        let mut v = json!({
            "asklist": ["fs__write"],
            "risk": {"fs__*": "low", "fs__write": "critical", "pay__*": "high"},
            "rules": [
                {"tools": ["fs__write"], "when": {"/path": "^/etc"}, "disposition": "deny"},
                {"tools": ["fs__write"], "when": {"/path": "^/etc/passwd"}, "disposition": "ask", "risk": "critical"},
                {"tools": ["fs__*"], "when": {"/path": "^/tmp"}, "disposition": "allow", "risk": "medium"}
            ]
        });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        profile(v)
    };
    use Risk::*;
    let cases: Vec<(Value, &str, Value, Risk)> = vec![
        // the first matching rule that sets a risk, even when an earlier rule decided
        (
            json!({}),
            "fs__write",
            json!({"path": "/etc/passwd"}),
            Critical,
        ),
        (json!({}), "fs__read", json!({"path": "/tmp/a"}), Medium),
        // else the first glob of the map (Profile::from_json on a Value: the map's own
        // order, sorted; written order through Config is tested in config::tests)
        (json!({}), "fs__write", json!({"path": "/etc/x"}), Low),
        (json!({}), "pay__charge", json!({}), High),
        // else defaultRisk
        (json!({}), "web__get", json!({}), Medium),
        (json!({"defaultRisk": "low"}), "web__get", json!({}), Low),
        // a call asked only by defaultDisposition: high, whatever defaultRisk says
        (
            json!({"defaultDisposition": "ask", "defaultRisk": "low"}),
            "web__get",
            json!({}),
            High,
        ),
        (
            json!({"defaultDisposition": "ask"}),
            "pay__x",
            json!({}),
            High,
        ),
        (
            json!({"defaultDisposition": "deny", "defaultRisk": "low"}),
            "web__get",
            json!({}),
            Low,
        ),
        // the risk map and rules still apply under defaultDisposition: ask
        (
            json!({"defaultDisposition": "ask"}),
            "fs__read",
            json!({}),
            Low,
        ),
    ];
    for (extra, tool, args, risk) in cases {
        let d = p(extra.clone()).disposition(tool, &args);
        assert_eq!(d.risk, risk, "{extra} {tool} {args}");
    }
    assert_eq!(Disposition::unrestricted().risk, Medium);
}

#[test]
fn rule_permissions_are_reported() {
    let p = profile(json!({
        "denylist": ["x"],
        "rules": [{"tools": ["fs__delete", "x"], "disposition": "ask", "requirePermissions": ["destructive", "fs"]}]
    }));
    assert_eq!(
        p.disposition("fs__delete", &json!({})).required_permissions,
        ["destructive", "fs"]
    );
    // a denylist match: no rule decided, nothing required
    assert!(
        p.disposition("x", &json!({}))
            .required_permissions
            .is_empty()
    );
    assert!(
        p.disposition("y", &json!({}))
            .required_permissions
            .is_empty()
    );
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

/// Issue 28 A.8: `human_intervention_request` is `hitl_request` under another name. A deny,
/// ask, rule or allowlist entry written for either name covers a call by either.
#[test]
fn an_alias_is_decided_as_the_tool_it_names() {
    let deny_hitl = profile(json!({"denylist": ["hitl_request"]}));
    assert_eq!(
        deny_hitl
            .disposition("human_intervention_request", &json!({}))
            .kind,
        Deny
    );
    let ask_alias = profile(json!({"asklist": ["human_intervention_request"]}));
    assert_eq!(ask_alias.disposition("hitl_request", &json!({})).kind, Ask);
    let rule = profile(
        json!({"rules": [{"tools": ["hitl_request"], "disposition": "deny",
        "reason": "no questions"}]}),
    );
    let d = rule.disposition("human_intervention_request", &json!({}));
    assert_eq!((d.kind, d.reason.as_deref()), (Deny, Some("no questions")));
    // An allowlist naming one name lets the other through: the same tool.
    let allow = profile(json!({"allowlist": ["hitl_request"]}));
    assert_eq!(
        allow
            .disposition("human_intervention_request", &json!({}))
            .kind,
        Allow
    );
    assert_eq!(allow.disposition("other", &json!({})).kind, Deny);
    // Other tools are decided under their own name only.
    assert_eq!(
        deny_hitl.disposition("search_tools", &json!({})).kind,
        Allow
    );
}

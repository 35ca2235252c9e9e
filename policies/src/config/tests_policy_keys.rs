//! The profile keys of the gateway: `defaultDisposition`, `requirePermissions`, `risk`,
//! `defaultRisk`, `riskPolicies`, rules' `requirePermissions` and `risk`, and
//! `evaluation.evalRequiresPermissions`.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::{Caller, ConfigErrorKind, DispositionKind, Risk, RiskPolicy};

const GATEWAY: &str = r#"{
  "evaluation": {
    "defaultProfile": "gateway",
    "evalRequiresPermissions": ["eval", "eval", "audit"],
    "profiles": {
      "gateway": {
        "defaultDisposition": "ask",
        "requirePermissions": ["payments"],
        "risk": {"pay__refund*": "critical", "pay__*": "high", "fs__read*": "low"},
        "defaultRisk": "low",
        "riskPolicies": {
          "critical": {"approvalTimeoutSeconds": 300, "allowSessionApproval": false,
                       "allowEvalApproval": false, "requireReason": true,
                       "approvers": ["approve:critical", "approve:critical", "oncall"],
                       "requireApproval": true, "rememberFor": "7d"},
          "high": {"allowSessionApproval": false}
        },
        "rules": [{"tools": ["fs__delete*"], "disposition": "ask",
                   "requirePermissions": ["destructive"], "risk": "critical"}]
      },
      "plain": {}
    }
  }
}"#;

#[test]
fn gateway_keys_parse() {
    let c = Config::from_json_str(GATEWAY).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.evaluation.eval_requires_permissions, ["eval", "audit"]);
    assert_eq!(
        c.evaluation
            .eval_missing_permissions(&Caller::new("ci", ["audit"])),
        ["eval"]
    );
    assert!(
        c.evaluation
            .eval_missing_permissions(&Caller::new("ci", ["eval", "audit", "x"]))
            .is_empty()
    );
    let p = c.profile("gateway").unwrap();
    assert_eq!(p.default_disposition(), DispositionKind::Ask);
    assert_eq!(p.required_permissions(), ["payments"]);
    assert_eq!(p.missing_permissions(&Caller::local()), ["payments"]);
    // Written order, not sorted: `pay__refund*` before `pay__*` before `fs__read*`.
    let globs: Vec<(&str, Risk)> = p.risk_globs().collect();
    assert_eq!(
        globs,
        [
            ("pay__refund*", Risk::Critical),
            ("pay__*", Risk::High),
            ("fs__read*", Risk::Low)
        ]
    );
    assert_eq!(
        p.disposition("pay__refund", &json!({})).risk,
        Risk::Critical
    );
    assert_eq!(p.disposition("pay__charge", &json!({})).risk, Risk::High);
    assert_eq!(p.default_risk(), Risk::Low);
    let critical = RiskPolicy {
        approval_timeout: Some(Duration::from_secs(300)),
        allow_eval_approval: false,
        allow_session_approval: false,
        require_reason: true,
        approvers: vec!["approve:critical".into(), "oncall".into()],
        require_approval: true,
        remember_for: Some(Duration::from_secs(7 * 86_400)),
    };
    assert_eq!(p.risk_policy(Risk::Critical), critical);
    assert_eq!(
        p.risk_policy(Risk::High),
        RiskPolicy {
            allow_session_approval: false,
            ..RiskPolicy::default()
        }
    );
    assert_eq!(p.risk_policy(Risk::Low), RiskPolicy::default());
    assert_eq!(
        p.approval_timeout_for(Risk::Critical),
        Duration::from_secs(300)
    );
    assert_eq!(p.approval_timeout_for(Risk::High), p.approval_timeout());
    let rule = &p.rules()[0];
    assert_eq!(rule.required_permissions(), ["destructive"]);
    assert_eq!(rule.risk(), Some(Risk::Critical));

    // Defaults.
    let plain = c.profile("plain").unwrap();
    assert_eq!(plain.default_disposition(), DispositionKind::Allow);
    assert!(plain.required_permissions().is_empty());
    assert_eq!(plain.risk_globs().count(), 0);
    assert_eq!(plain.default_risk(), Risk::Medium);
    assert_eq!(plain.risk_policy(Risk::Critical), RiskPolicy::default());
    assert!(
        Config::default()
            .evaluation
            .eval_requires_permissions
            .is_empty()
    );
}

#[test]
fn gateway_keys_report_every_error_with_its_path() {
    use ConfigErrorKind::*;
    let cases: &[(&str, &[(&str, ConfigErrorKind)])] = &[
        (
            r#"{"evaluation": {"evalRequiresPermissions": ["ok", "", 3]}}"#,
            &[
                (
                    "evaluation.evalRequiresPermissions[1]: a permission name cannot be empty",
                    InvalidValue,
                ),
                (
                    "evaluation.evalRequiresPermissions[2]: expected a string, found a number (3)",
                    WrongType,
                ),
            ],
        ),
        (
            r#"{"evaluation": {"evalRequiresPermissions": "eval"}}"#,
            &[(
                "evaluation.evalRequiresPermissions: expected an array of strings, found a string (\"eval\")",
                WrongType,
            )],
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"defaultDisposition": "maybe", "requirePermissions": [" "]}}}}"#,
            &[
                (
                    "evaluation.profiles.p.defaultDisposition: expected \"allow\", \"deny\" or \"ask\", found a string (\"maybe\")",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.requirePermissions[0]: a permission name cannot be empty",
                    InvalidValue,
                ),
            ],
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"risk": {"a*": "severe", "[": "low", "b": 1}, "defaultRisk": "HIGH"}}}}"#,
            &[
                (
                    "evaluation.profiles.p.risk[\"a*\"]: expected \"low\", \"medium\", \"high\" or \"critical\", found a string (\"severe\")",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.risk.b: expected \"low\", \"medium\", \"high\" or \"critical\", found a number (1)",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.risk[\"[\"]: invalid glob `[`: unclosed character class",
                    InvalidGlob,
                ),
                (
                    "evaluation.profiles.p.defaultRisk: expected \"low\", \"medium\", \"high\" or \"critical\", found a string (\"HIGH\")",
                    InvalidValue,
                ),
            ],
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"risk": []}}}}"#,
            &[(
                "evaluation.profiles.p.risk: expected an object, found an array",
                WrongType,
            )],
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"riskPolicies": {
                "extreme": {},
                "high": {"approvalTimeoutSeconds": 0, "allowSessionApproval": "no", "requireReasons": true},
                "low": []}}}}}"#,
            &[
                (
                    "evaluation.profiles.p.riskPolicies.extreme: unknown risk level `extreme`; expected `low`, `medium`, `high` or `critical`",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.riskPolicies.high.approvalTimeoutSeconds: expected a positive number of seconds, found a number (0)",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.riskPolicies.high.allowSessionApproval: expected a boolean, found a string (\"no\")",
                    WrongType,
                ),
                (
                    "evaluation.profiles.p.riskPolicies.high.requireReasons: unknown key `requireReasons` (did you mean `requireReason`?)",
                    UnknownKey,
                ),
                (
                    "evaluation.profiles.p.riskPolicies.low: expected an object, found an array",
                    WrongType,
                ),
            ],
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"riskPolicies": {
                "critical": {"approvers": []},
                "high": {"approvers": ["ok", " "], "requireApproval": "yes"},
                "medium": {"approvers": "approve:medium"}}}}}}"#,
            &[
                (
                    "evaluation.profiles.p.riskPolicies.critical.approvers: an empty list lets nobody decide: name at least one permission (such as \"approve:critical\"), or remove the key for the default (any approver)",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.riskPolicies.high.requireApproval: expected a boolean, found a string (\"yes\")",
                    WrongType,
                ),
                (
                    "evaluation.profiles.p.riskPolicies.high.approvers[1]: a permission name cannot be empty",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.riskPolicies.medium.approvers: expected an array of strings",
                    WrongType,
                ),
            ],
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"riskPolicies": {
                "critical": {"rememberFor": "7"},
                "high": {"rememberFor": "0s"},
                "medium": {"rememberFor": 3600}}}}}}"#,
            &[
                (
                    "evaluation.profiles.p.riskPolicies.critical.rememberFor: `7` has no unit; write e.g. `7s` or `7ms` (only `0` may omit the unit)",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.riskPolicies.high.rememberFor: must be greater than zero",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.riskPolicies.medium.rememberFor: expected a duration such as \"30s\", found a number (3600)",
                    WrongType,
                ),
            ],
        ),
        (
            r#"{"evaluation": {"profiles": {"p": {"rules": [
                {"tools": ["x"], "disposition": "ask", "risk": "huge", "requirePermissions": "destructive"}]}}}}"#,
            &[
                (
                    "evaluation.profiles.p.rules[0].risk: expected \"low\", \"medium\", \"high\" or \"critical\", found a string (\"huge\")",
                    InvalidValue,
                ),
                (
                    "evaluation.profiles.p.rules[0].requirePermissions: expected an array of strings",
                    WrongType,
                ),
            ],
        ),
    ];
    for (json, wanted) in cases {
        let errs = match Config::from_json_str(json) {
            Ok(_) => panic!("accepted: {json}"),
            Err(e) => e,
        };
        for (want, kind) in *wanted {
            let Some(error) = errs.iter().find(|e| e.to_string().starts_with(want)) else {
                panic!("missing `{want}` in:\n{errs}");
            };
            assert_eq!(error.kind(), *kind, "the kind of `{error}`");
        }
        assert_eq!(
            errs.errors.len(),
            wanted.len(),
            "unexpected errors for {json}:\n{errs}"
        );
    }
}

/// The configuration reference in the README parses, gateway keys included.
#[test]
fn the_readme_example_parses() {
    let readme = include_str!("../../../README.md");
    let from = readme
        .find("## Configuration")
        .expect("a Configuration section");
    let block = &readme[from..];
    let start = block.find("```json\n").expect("a JSON block") + "```json\n".len();
    let end = start + block[start..].find("```").expect("the block's end");
    let c = Config::from_json_str(&block[start..end]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.limits.max_result_text, 24 * 1024);
    assert_eq!(
        c.profile("safe").and_then(|p| p.description()),
        Some("reads the clock and discovers tools")
    );
    let p = c.profile("payments").expect("the payments profile");
    assert_eq!(p.required_permissions(), ["payments"]);
    assert_eq!(p.default_disposition(), DispositionKind::Ask);
    let d = p.disposition("stripe__create_refund", &json!({}));
    assert_eq!((d.kind, d.risk), (DispositionKind::Ask, Risk::Critical));
    assert_eq!(d.required_permissions, ["refunds"]);
    assert_eq!(
        p.disposition("stripe__list_charges", &json!({})).risk,
        Risk::Low
    );
    assert_eq!(
        p.disposition("stripe__update_customer", &json!({})).risk,
        Risk::High
    );
    let other = p.disposition("slack__post", &json!({}));
    assert_eq!((other.kind, other.risk), (DispositionKind::Ask, Risk::High));
    assert_eq!(
        p.disposition("stripe__delete_customer", &json!({})).kind,
        DispositionKind::Deny
    );
    assert!(!p.risk_policy(Risk::Critical).allow_session_approval);
}

#[test]
fn a_profile_lets_through_the_resources_and_prompts_it_allows_and_does_not_deny() {
    let c = Config::from_json_str(
        r#"{"evaluation": {"profiles": {
            "docs": {"resources": {"allow": ["everything__demo://resource/static/*"],
                                   "deny": ["*secret*"]},
                     "prompts": {"deny": ["everything__args-*"]}},
            "open": {}
        }}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let docs = c.profile("docs").expect("docs");
    let open = c.profile("open").expect("open");
    for (name, lets_docs) in [
        (
            "everything__demo://resource/static/document/architecture.md",
            true,
        ),
        ("everything__demo://resource/static/secret.md", false),
        ("everything__demo://resource/dynamic/text/1", false),
        ("fs__file:///etc/passwd", false),
    ] {
        assert_eq!(docs.lets_resource(name), lets_docs, "{name}");
        assert!(open.lets_resource(name), "{name}");
    }
    assert!(docs.lets_prompt("everything__simple-prompt"));
    assert!(!docs.lets_prompt("everything__args-prompt"));
    assert!(open.lets_prompt("everything__args-prompt"));

    let err = Config::from_json_str(
        r#"{"evaluation": {"profiles": {"p": {"resources": {"allow": ["["], "read": []}, "prompts": []}}}}"#,
    )
    .expect_err("bad access keys");
    let lines: Vec<String> = err.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "evaluation.profiles.p.resources.read: unknown key `read`; allowed keys: `allow`, `deny`",
            "evaluation.profiles.p.resources.allow[0]: invalid glob `[`: unclosed character class; missing ']'",
            "evaluation.profiles.p.prompts: expected an object, found an array",
        ]
    );
}

#[test]
fn a_profile_says_what_an_upstream_sampling_request_gets() {
    let c = Config::from_json_str(
        r#"{"evaluation": {"profiles": {
            "open": {"sampling": "allow"}, "closed": {"sampling": "deny"},
            "asking": {"sampling": "ask"}, "plain": {}
        }}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let sampling = |name: &str| c.profile(name).map(|p| p.sampling());
    assert_eq!(sampling("open"), Some(DispositionKind::Allow));
    assert_eq!(sampling("closed"), Some(DispositionKind::Deny));
    assert_eq!(sampling("asking"), Some(DispositionKind::Ask));
    assert_eq!(sampling("plain"), Some(DispositionKind::Ask), "the default");

    let err = Config::from_json_str(r#"{"evaluation": {"profiles": {"p": {"sampling": true}}}}"#)
        .expect_err("a bad sampling value");
    let lines: Vec<String> = err.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "evaluation.profiles.p.sampling: expected \"allow\", \"deny\" or \"ask\", found a boolean (true)"
        ]
    );
}

#[test]
fn a_profile_names_the_writes_shown_as_diffs() {
    let c = Config::from_json_str(
        r#"{"evaluation": {"profiles": {"p": {"approvalDiffs": {"fs__write_file":
            {"read": "fs__read_text_file", "path": "path", "content": "content"}}}}}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = c.profile("p").unwrap();
    assert_eq!(
        p.approval_diff("fs__write_file"),
        Some(&crate::ApprovalDiff {
            read: "fs__read_text_file".into(),
            path: "path".into(),
            content: "content".into(),
        })
    );
    assert_eq!(p.approval_diff("fs__edit_file"), None);

    let err = Config::from_json_str(
        r#"{"evaluation": {"profiles": {"p": {"approvalDiffs": {
            "a": {"read": "r", "path": ""}, "b": {"read": "r", "path": "p", "content": 1, "mode": "x"},
            "c": []}}}}}"#,
    )
    .expect_err("bad approvalDiffs");
    let lines: Vec<String> = err.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "evaluation.profiles.p.approvalDiffs.a.path: must not be empty",
            "evaluation.profiles.p.approvalDiffs.a: `content` is required (the read tool, the path argument and the content argument)",
            "evaluation.profiles.p.approvalDiffs.b.mode: unknown key `mode`; allowed keys: `read`, `path`, `content`",
            "evaluation.profiles.p.approvalDiffs.b.content: expected a string, found a number (1)",
            "evaluation.profiles.p.approvalDiffs.c: expected an object, found an array",
        ]
    );
}

/// `evaluation.classification` and `localAllowDestructive`: read as written; a misspelt class, a
/// bad glob, a wrong type and a non-boolean each say what and where.
#[test]
fn classification_is_read_and_its_errors_say_what_and_where() {
    use crate::Class;
    use ConfigErrorKind::{InvalidGlob, UnknownKey, WrongType};
    let c = Config::from_json_str(
        r#"{"evaluation": {"classification": {"read": ["fs__read*"], "write": ["fs__*"],
            "destructive": ["fs__delete", "git__push"]}, "localAllowDestructive": false}}"#,
    )
    .unwrap();
    let classes = &c.evaluation.classification;
    assert_eq!(
        classes.globs(Class::Destructive),
        ["fs__delete", "git__push"]
    );
    assert_eq!(classes.class_of("fs__read_text_file", None), Class::Write);
    assert_eq!(
        classes.class_of("fs__delete", Some(Class::Read)),
        Class::Destructive
    );
    assert!(!classes.local_allows_destructive());
    assert!(
        Config::from_json_str("{}")
            .unwrap()
            .evaluation
            .classification
            .local_allows_destructive()
    );
    let errs = Config::from_json_str(
        r#"{"evaluation": {"classification": {"readonly": ["x"], "write": ["fs__["], "destructive": "rm"},
            "localAllowDestructive": "yes"}}"#,
    )
    .unwrap_err();
    let got: Vec<(String, ConfigErrorKind)> =
        errs.iter().map(|e| (e.to_string(), e.kind())).collect();
    assert_eq!(
        got,
        [
            (
                "evaluation.localAllowDestructive: expected a boolean, found a string (\"yes\")".to_string(),
                WrongType
            ),
            (
                "evaluation.classification.readonly: unknown key `readonly`; allowed keys: `read`, `write`, `destructive`".to_string(),
                UnknownKey
            ),
            (
                "evaluation.classification.write[0]: invalid glob `fs__[`: unclosed character class; missing ']'".to_string(),
                InvalidGlob
            ),
            (
                "evaluation.classification.destructive: expected an array of strings, found a string (\"rm\")".to_string(),
                WrongType
            ),
        ]
    );
}
